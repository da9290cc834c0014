#!/usr/bin/env bash
test_description='real git drives our helper as its checkout--worker

git starts its workers as `git checkout--worker` with its exec-path first on
PATH; lib-git-helper.sh makes an exec-path whose `git` runs our helper for
that (and logs each run). Clones, branch switches and checkout-index --prefix
with 2 and 4 workers must leave what git alone leaves: the same files, an
index whose stat data is the files'"'"' (diff-files --quiet and ls-files --debug
against stat(1)), and an empty status.'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-git-helper.sh"

# make_repo <dir> [git init args]: a bare repository made with fast-import.
# main: 300 files in nested dirs, 20 executables, a symlink, an empty and a
# large file. other: a third of the files changed, some deleted, new dirs,
# exec bits flipped both ways, a file turned into a directory and a
# directory into a file, the large file changed.
make_repo () {
	local dir=$1
	shift
	git init -q --bare "$@" "$dir" &&
	awk '
	function blob(mode, path, content) {
		printf "M %s inline %s\ndata %d\n%s\n", mode, path, length(content), content
	}
	function large(from,   s, i) {
		s = ""
		for (i = from; i < from + 30000; i++) s = s i "\n"
		return s
	}
	BEGIN {
		print "commit refs/heads/main"
		print "committer C O Mitter <c@example.com> 1112354055 +0200"
		print "data 4\none"
		for (i = 1; i <= 300; i++) blob("100644", "d" (i % 9) "/s" (i % 4) "/f" i, "file " i "\n")
		for (i = 1; i <= 20; i++) blob("100755", "d" (i % 9) "/run" i ".sh", "#!/bin/sh\necho " i "\n")
		blob("100644", "empty", "")
		blob("100644", "large", large(1))
		blob("100644", "becomes-dir", "into\n")
		blob("100644", "becomes-file/x", "x\n")
		blob("120000", "link-to-d1", "d1")
		print ""
		print "commit refs/heads/other"
		print "committer C O Mitter <c@example.com> 1112354055 +0200"
		print "data 4\ntwo"
		print "from refs/heads/main"
		for (i = 1; i <= 100; i++) blob("100644", "d" (i % 9) "/s" (i % 4) "/f" i, "changed " i "\n")
		blob("100755", "d1/s1/f1", "changed 1\n")
		blob("100755", "d2/s2/f2", "changed 2\n")
		blob("100644", "d1/run1.sh", "#!/bin/sh\necho 1\n")
		print "D d3/s3/f3"
		print "D d5/s1/f5"
		print "D d7/s3/f7"
		for (i = 1; i <= 40; i++) blob("100644", "new/a/b/n" i, "new " i "\n")
		print "D becomes-dir"
		blob("100644", "becomes-dir/in", "in\n")
		print "D becomes-file/x"
		blob("100644", "becomes-file", "now-a-file\n")
		blob("100644", "large", large(2))
		print ""
	}' | git -C "$dir" fast-import --quiet
}

# with_helper <workers> <git args>: real git with our helper as its worker.
with_helper () {
	local w=$1
	shift
	git_with_helper -c checkout.workers=$w -c checkout.thresholdForParallelism=0 "$@"
}

test_expect_success 'setup: exec-path wrapper, source repository, reference clones by git alone' '
	setup_git_helper_exec_path &&
	make_repo src &&
	test $(git -C src ls-tree -r main | wc -l) -gt 300 &&
	git clone -q src ref &&
	git clone -q -b other src ref-other
'

for W in 2 4
do
	test_expect_success "clone with $W workers uses our helper, leaves what git leaves" '
		: >"$HELPER_EXEC_PATH.log" &&
		with_helper $W clone -q src dst$W &&
		test "$(helper_runs)" = $W &&
		clean_checkout dst$W &&
		same_worktree ref dst$W &&
		test -x dst$W/d1/run1.sh && test_path_is_symlink dst$W/link-to-d1
	'

	test_expect_success "branch switch with $W workers: main -> other" '
		: >"$HELPER_EXEC_PATH.log" &&
		with_helper $W -C dst$W checkout -q other &&
		test "$(helper_runs)" = $W &&
		clean_checkout dst$W &&
		same_worktree ref-other dst$W &&
		test_path_is_missing dst$W/d3/s3/f3 &&
		echo in >expect && test_cmp expect dst$W/becomes-dir/in &&
		test -x dst$W/d1/s1/f1 && ! test -x dst$W/d1/run1.sh
	'

	test_expect_success "branch switch with $W workers: other -> main" '
		: >"$HELPER_EXEC_PATH.log" &&
		with_helper $W -C dst$W checkout -q main &&
		test "$(helper_runs)" = $W &&
		clean_checkout dst$W &&
		same_worktree ref dst$W
	'
done

test_expect_success 'checkout-index --prefix=out/ -a with 2 workers: helpers get --prefix, files as git writes them' '
	: >"$HELPER_EXEC_PATH.log" &&
	with_helper 2 -C dst2 checkout-index --prefix=out/ -a &&
	test "$(helper_runs)" = 2 &&
	printf "helper --prefix=out/\nhelper --prefix=out/\n" >expect &&
	test_cmp expect "$HELPER_EXEC_PATH.log" &&
	git -C ref checkout-index --prefix=../ref-out/ -a &&
	same_worktree ref-out dst2/out &&
	test -x dst2/out/d1/run1.sh &&
	git -C dst2 status --porcelain >status &&
	echo "?? out/" >expect && test_cmp expect status
'

test_expect_success 'checkout-index -f -a with 4 workers restores changed and deleted files' '
	: >"$HELPER_EXEC_PATH.log" &&
	for f in dst4/d1/*/*; do echo garbage >$f || return 1; done &&
	rm -r dst4/d2 &&
	with_helper 4 -C dst4 checkout-index -f -a &&
	test "$(helper_runs)" = 4 &&
	echo "file 1" >expect && test_cmp expect dst4/d1/s1/f1 &&
	same_worktree ref dst4 &&
	git -C dst4 update-index --refresh &&
	git -C dst4 status --porcelain >status &&
	test_must_be_empty status
'

test_expect_success 'SHA-256: clone and switch with 2 workers' '
	make_repo src256 --object-format=sha256 &&
	test "$(git -C src256 rev-parse --show-object-format)" = sha256 &&
	git clone -q src256 ref256 &&
	git clone -q -b other src256 ref256-other &&
	: >"$HELPER_EXEC_PATH.log" &&
	with_helper 2 clone -q src256 dst256 &&
	test "$(helper_runs)" = 2 &&
	test "$(git -C dst256 rev-parse --show-object-format)" = sha256 &&
	clean_checkout dst256 &&
	same_worktree ref256 dst256 &&
	: >"$HELPER_EXEC_PATH.log" &&
	with_helper 2 -C dst256 checkout -q other &&
	test "$(helper_runs)" = 2 &&
	clean_checkout dst256 &&
	same_worktree ref256-other dst256
'

test_done
