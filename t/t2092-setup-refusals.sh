#!/usr/bin/env bash
test_description='what git refuses before it reads the repository config or touches anything:
dubious ownership (safe.directory from system, global and command-line config only), an
unknown repository format or extension, safe.bareRepository, a bare repository, no
repository. Same message and exit code as git, nothing run, nothing written.'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-coordinator.sh"

if test "$(id -u)" = 0 && id nobody >/dev/null 2>&1
then
	test_set_prereq ROOT
fi

# state <dir>: index, HEAD and work tree, all that a refusal must leave alone.
state() {
	cat "$1/.git/HEAD" &&
	od -c "$1/.git/index" | head -40 &&
	worktree_manifest "$1"
}

# without_early_warning <file>: git's own "warning: ignoring git dir" (with its
# continuation lines), printed by the git wrapper before it runs our command.
without_early_warning() {
	awk '/^warning: ignoring git dir/ { skip = 1; next }
	     skip && /^\t/ { next }
	     { skip = 0; print }' "$1"
}

# both_refuse <dir> <code> <git args>...: `git checkout <args>` and ours from <dir>
# fail with <code> and the same stderr (paths of the ours/git twins aside),
# and ours left <dir> as it was.
both_refuse() {
	local dir=$1 code=$2
	shift 2
	state "$dir" >"$dir.before" 2>/dev/null
	test_expect_code "$code" git -C "$dir" parallel-checkout "$@" 2>err.ours &&
	test_expect_code "$code" git -C "$dir" checkout "$@" 2>err.git &&
	without_early_warning err.ours >err.ours.fatal &&
	test_cmp err.git err.ours.fatal &&
	state "$dir" >"$dir.after" 2>/dev/null &&
	test_cmp "$dir.before" "$dir.after"
}

test_expect_success 'setup' '
	git init -q src &&
	(
		cd src &&
		mkdir -p d/sub && echo one >d/f && echo one >d/sub/g && echo top >top &&
		git add . && git commit -qm one &&
		git checkout -q -b other &&
		echo two >d/f && echo two >d/sub/g && echo new >new &&
		git add . && git commit -qm two &&
		git checkout -q main
	) &&
	git clone -q src own &&
	git -C own config filter.mark.smudge "touch \"$PWD/SMUDGED\"; cat" &&
	echo "* filter=mark" >own/.git/info/attributes
'

test_expect_success ROOT 'a repository owned by someone else is refused, its filter not run' '
	chown -R nobody own &&
	both_refuse own 128 other &&
	test_grep "^fatal: detected dubious ownership in repository at .$PWD/own.$" err.ours &&
	test_grep "safe.directory $PWD/own$" err.ours &&
	test_path_is_missing SMUDGED
'

test_expect_success ROOT 'from a subdirectory the message names the top' '
	state own >before &&
	test_expect_code 128 git -C own/d/sub parallel-checkout other 2>err.ours &&
	test_expect_code 128 git -C own/d/sub checkout other 2>err.git &&
	test_cmp err.git err.ours &&
	state own >after && test_cmp before after &&
	test_path_is_missing SMUDGED
'

test_expect_success ROOT 'safe.directory in the repository config does not count' '
	git config -f own/.git/config safe.directory "*" &&
	both_refuse own 128 other &&
	test_path_is_missing SMUDGED &&
	git config -f own/.git/config --unset safe.directory
'

test_expect_success ROOT 'an empty safe.directory cancels the ones before it' '
	state own >before &&
	test_expect_code 128 git -c safe.directory="*" -c safe.directory= -C own parallel-checkout other 2>err &&
	test_grep "detected dubious ownership" err &&
	state own >after && test_cmp before after &&
	test_path_is_missing SMUDGED
'

test_expect_success ROOT 'SUDO_UID of the owner makes it ours (root only)' '
	rm -rf sudo && cp -a own sudo && chown -R nobody sudo &&
	state sudo >before &&
	SUDO_UID=$(id -u nobody) git -C sudo parallel-checkout -q other 2>err &&
	test_must_be_empty err &&
	test_path_is_file SMUDGED && rm SMUDGED &&
	SUDO_UID=12345 git -C sudo checkout -q other 2>err.git;
	test_grep "detected dubious ownership" err.git
'

test_expect_success ROOT 'safe.directory from the command line, the global config, or *' '
	rm -rf cl.ours cl.git && cp -a own cl.ours && cp -a own cl.git &&
	git -c safe.directory="$PWD/cl.ours" -C cl.ours parallel-checkout -q other &&
	git -c safe.directory="$PWD/cl.git" -C cl.git checkout -q other &&
	test_path_is_file SMUDGED && rm SMUDGED &&
	test_cmp_worktrees cl.ours cl.git &&
	test_cmp cl.git/.git/config cl.ours/.git/config &&
	git config --global --add safe.directory "*" &&
	git -C cl.ours ls-files -s >ls.ours &&
	git -C cl.git ls-files -s >ls.git &&
	test_cmp ls.git ls.ours &&
	git -C cl.ours parallel-checkout -q main &&
	git -C cl.git checkout -q main &&
	test_cmp_worktrees cl.ours cl.git &&
	git config --global --unset-all safe.directory &&
	git config --global --add safe.directory "~/cl.ours" &&
	git -C cl.ours parallel-checkout -q other &&
	git config --global --unset-all safe.directory &&
	rm -f SMUDGED
'

test_expect_success 'GIT_TEST_ASSUME_DIFFERENT_OWNER: refused as git refuses' '
	git clone -q src diff &&
	GIT_TEST_ASSUME_DIFFERENT_OWNER=1 both_refuse diff 128 other &&
	test_grep "detected dubious ownership" err.ours
'

test_expect_success 'an unknown extension in a version 1 repository' '
	git clone -q src ext &&
	git config -f ext/.git/config core.repositoryformatversion 1 &&
	git config -f ext/.git/config extensions.frobnicate true &&
	git config -f ext/.git/config extensions.alsoUnknown 1 &&
	both_refuse ext 128 other &&
	printf "fatal: unknown repository extensions found:\n\tfrobnicate\n\talsounknown\n" >expect &&
	test_cmp expect err.ours.fatal &&
	git -C src rev-parse HEAD >/dev/null
'

test_expect_success 'the helper refuses it too, as git'"'"'s worker does' '
	(cd ext && GIT_DIR=.git git-checkout--helper </dev/null 2>../err.ours; echo $? >../rc.ours) &&
	(cd ext && GIT_DIR=.git git checkout--worker </dev/null 2>../err.git; echo $? >../rc.git) &&
	test_cmp rc.git rc.ours &&
	test_cmp err.git err.ours
'

test_expect_success 'unknown extensions in a version 0 repository are ignored, as by git' '
	twins src v0 &&
	git -C v0.ours config extensions.frobnicate true &&
	git -C v0.git config extensions.frobnicate true &&
	git -C v0.ours parallel-checkout -q other &&
	git -C v0.git checkout -q other &&
	test_cmp_worktrees v0.ours v0.git &&
	test_cmp_index v0.ours v0.git
'

test_expect_success 'a version 0 repository with a v1-only extension, a version 2 repository' '
	git clone -q src v1only &&
	git config -f v1only/.git/config extensions.objectFormat sha1 &&
	both_refuse v1only 128 other &&
	test_grep "^fatal: repo version is 0, but v1-only extension found:" err.ours &&
	git clone -q src v2 &&
	git config -f v2/.git/config core.repositoryformatversion 2 &&
	both_refuse v2 128 other &&
	echo "fatal: Expected git repo version <= 1, found 2" >expect &&
	test_cmp expect err.ours.fatal
'

test_expect_success 'a bare repository: git'"'"'s fatal message and 128' '
	git clone -q --bare src bare.git &&
	test_expect_code 128 git -C bare.git parallel-checkout other 2>err.ours &&
	test_expect_code 128 git -C bare.git checkout other 2>err.git &&
	test_cmp err.git err.ours &&
	echo "fatal: this operation must be run in a work tree" >expect &&
	test_cmp expect err.ours &&
	test_expect_code 128 git -C bare.git parallel-checkout --all 2>err.all &&
	test_cmp expect err.all &&
	test_expect_code 128 git -C bare.git parallel-checkout other -- d 2>err.paths &&
	test_cmp expect err.paths
'

test_expect_success 'safe.bareRepository=explicit' '
	test_expect_code 128 git -c safe.bareRepository=explicit -C bare.git parallel-checkout other 2>err.ours &&
	test_expect_code 128 git -c safe.bareRepository=explicit -C bare.git checkout other 2>err.git &&
	test_cmp err.git err.ours &&
	test_grep "^fatal: cannot use bare repository .*bare.git. (safe.bareRepository is .explicit.)" err.ours
'

test_expect_success 'no repository at all' '
	mkdir nowhere &&
	test_expect_code 128 git -C nowhere parallel-checkout other 2>err.ours &&
	test_expect_code 128 git -C nowhere checkout other 2>err.git &&
	test_cmp err.git err.ours &&
	test_expect_code 128 env GIT_DIR=nothing git -C nowhere parallel-checkout other 2>err.ours &&
	test_expect_code 128 env GIT_DIR=nothing git -C nowhere checkout other 2>err.git &&
	test_cmp err.git err.ours
'

test_done
