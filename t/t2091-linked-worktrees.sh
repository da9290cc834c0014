#!/usr/bin/env bash
test_description='repository discovery as git: linked worktrees, core.worktree, GIT_DIR and
GIT_WORK_TREE, GIT_INDEX_FILE, gitfiles, extensions.worktreeConfig, subdirectories and -C.
Each set-up twice: git checkout in one copy, ours in the other, then the same work tree,
index, HEAD, reflog and config; in linked worktrees the main worktree is left alone.'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-coordinator.sh"
. "$TEST_DIRECTORY/lib-git-helper.sh"

# same_result <ours> <git>: work tree, index, HEAD and reflog as git's, stat-clean.
same_result() {
	test_cmp_worktrees "$1" "$2" &&
	test_cmp_index "$1" "$2" &&
	git -C "$1" log -g --format="%H %gs" HEAD >"$(_aside "$1").reflog" &&
	git -C "$2" log -g --format="%H %gs" HEAD >"$(_aside "$2").reflog" &&
	test_cmp "$(_aside "$2").reflog" "$(_aside "$1").reflog" &&
	verify_clean "$1"
}

# snapshot <main worktree> <file>: what must not change there.
snapshot() {
	{ git -C "$1" symbolic-ref -q HEAD || echo detached; } >"$2" &&
	git -C "$1" rev-parse HEAD >>"$2" &&
	git -C "$1" ls-files -s >>"$2" &&
	git -C "$1" ls-files --debug | grep -v "^  flags:" >>"$2" &&
	worktree_manifest "$1" >>"$2"
}

test_expect_success 'setup' '
	make_coordinator_repo src &&
	setup_git_helper_exec_path
'

test_expect_success 'leaving a detached HEAD in a linked worktree: its own refs/bisect/ count, the main worktree'"'"'s refs/worktree/ do not' '
	twins src lwref &&
	for who in ours git
	do
		git -C lwref.$who worktree add -q --detach ../lwref.$who-linked main &&
		(
			cd lwref.$who-linked &&
			git commit -q --allow-empty -m "kept by this worktree" && git update-ref refs/bisect/bad HEAD &&
			git checkout -q --detach main && git commit -q --allow-empty -m "kept by the main worktree only" &&
			git -C ../lwref.$who update-ref refs/worktree/main-only "$(git rev-parse HEAD)"
		) || return 1
	done &&
	git -C lwref.ours-linked parallel-checkout -j 2 --threshold 0 other >out.ours 2>err.ours &&
	git -C lwref.git-linked checkout other >out.git 2>err.git &&
	test_cmp err.git err.ours && test_grep "^Warning: you are leaving 1 commit behind" err.ours &&
	git -C lwref.ours-linked checkout -q --detach "refs/bisect/bad" &&
	git -C lwref.git-linked checkout -q --detach "refs/bisect/bad" &&
	git -C lwref.ours-linked parallel-checkout -j 2 --threshold 0 other >out.ours 2>err.ours &&
	git -C lwref.git-linked checkout other >out.git 2>err.git &&
	test_cmp err.git err.ours && test_grep "^Previous HEAD position was .* kept by this worktree$" err.ours
'

test_expect_success 'switch in a linked worktree (helper and coordinator find the common dir; items streamed to the helpers)' '
	twins src lw &&
	for who in ours git
	do
		git -C lw.$who worktree add -q --detach ../lw.$who-linked main &&
		snapshot lw.$who lw.$who.before || return 1
	done &&
	git -C lw.ours-linked -c checkout.workers=2 -c checkout.thresholdForParallelism=1 \
		parallel-checkout -q -v other >report &&
	grep -q "\"streamed\":true" report &&
	git -C lw.git-linked checkout -q other &&
	same_result lw.ours-linked lw.git-linked &&
	git -C lw.ours config branch.other.merge >merge.ours &&
	git -C lw.git config branch.other.merge >merge.git &&
	test_cmp merge.git merge.ours &&
	snapshot lw.ours lw.ours.after &&
	test_cmp lw.ours.before lw.ours.after &&
	test_path_is_missing lw.ours/.git/worktrees/lw.ours-linked/refs
'

test_expect_success 'refs packed in the common dir (packed-refs): a branch made from a packed remote one, then a tag, from a linked worktree' '
	twins src pr &&
	for who in ours git
	do
		git -C pr.$who tag -a -m t vtag origin/other &&
		git -C pr.$who worktree add -q --detach ../pr.$who-linked main &&
		git -C pr.$who pack-refs --all &&
		test_path_is_missing pr.$who/.git/refs/remotes/origin/other &&
		test_path_is_missing pr.$who/.git/refs/tags/vtag &&
		grep -q "^^" pr.$who/.git/packed-refs || return 1
	done &&
	git -C pr.ours-linked parallel-checkout -q other &&
	git -C pr.git-linked checkout -q other &&
	same_result pr.ours-linked pr.git-linked &&
	git -C pr.ours-linked parallel-checkout -q vtag &&
	git -C pr.git-linked checkout -q vtag &&
	same_result pr.ours-linked pr.git-linked
'

test_expect_success 'the helper started by git in a linked worktree (GIT_DIR=.git/worktrees/<id>)' '
	git -C lw.ours-linked checkout -q --detach main &&
	git -C lw.git-linked checkout -q --detach main &&
	: >"$HELPER_EXEC_PATH.log" &&
	(cd lw.ours-linked && GIT_TEST_CHECKOUT_WORKERS=2 git_with_helper checkout -q other) &&
	test "$(helper_runs)" -gt 0 &&
	git -C lw.git-linked checkout -q other &&
	same_result lw.ours-linked lw.git-linked
'

test_expect_success 'git worktree add with our helper as its worker' '
	: >"$HELPER_EXEC_PATH.log" &&
	GIT_TEST_CHECKOUT_WORKERS=2 git_with_helper -C lw.ours worktree add -q ../add.ours v1 2>err.ours &&
	test "$(helper_runs)" -gt 0 &&
	git -C lw.git worktree add -q ../add.git v1 2>err.git &&
	test_cmp err.git err.ours &&
	same_result add.ours add.git &&
	snapshot lw.ours lw.ours.after &&
	test_cmp lw.ours.before lw.ours.after
'

test_expect_success 'restore paths in a linked worktree, also from a subdirectory' '
	for who in ours git
	do
		echo dirty >add.$who/d0/s0/f6 && echo dirty >add.$who/d1/s1/f1 &&
		rm add.$who/d2/s2/f2 || return 1
	done &&
	git -C add.ours parallel-checkout -- d0 d2 &&
	git -C add.git checkout -- d0 d2 &&
	(cd add.ours/d1 && git parallel-checkout -- s1) &&
	(cd add.git/d1 && git checkout -- s1) &&
	same_result add.ours add.git &&
	snapshot lw.ours lw.ours.after &&
	test_cmp lw.ours.before lw.ours.after
'

test_expect_success 'a branch checked out in another worktree is refused as git refuses it' '
	git -C lw.ours checkout -q main && git -C lw.git checkout -q main &&
	snapshot lw.ours-linked linked.before &&
	test_expect_code 128 git -C lw.ours-linked parallel-checkout main 2>err.ours &&
	test_expect_code 128 git -C lw.git-linked checkout main 2>err.git &&
	sed "s/lw\.git/lw.ours/" err.git >err.expect &&
	test_cmp err.expect err.ours &&
	test_grep "^fatal: .main. is already checked out at .*/lw.ours.$" err.ours &&
	snapshot lw.ours-linked linked.after &&
	test_cmp linked.before linked.after &&
	test_path_is_missing lw.ours/.git/worktrees/lw.ours-linked/index.lock &&
	test_expect_code 128 git -C lw.ours parallel-checkout other 2>err.main.ours &&
	test_expect_code 128 git -C lw.git checkout other 2>err.main.git &&
	sed "s/lw\.git/lw.ours/" err.main.git >err.expect &&
	test_cmp err.expect err.main.ours
'

test_expect_success '--ignore-other-worktrees overrides as in git' '
	git -C lw.ours-linked parallel-checkout -q --ignore-other-worktrees main &&
	git -C lw.git-linked checkout -q --ignore-other-worktrees main &&
	same_result lw.ours-linked lw.git-linked &&
	git -C lw.ours-linked parallel-checkout -q other &&
	git -C lw.git-linked checkout -q other &&
	same_result lw.ours-linked lw.git-linked
'

test_expect_success 'core.worktree relative to the git dir, GIT_DIR set, run from elsewhere' '
	for who in ours git
	do
		rm -rf cw.$who && mkdir -p cw.$who/work cw.$who/elsewhere &&
		git clone -q --bare src cw.$who/repo.git &&
		git -C cw.$who/repo.git config core.bare false &&
		git -C cw.$who/repo.git config core.worktree ../work &&
		git -C cw.$who/repo.git config core.logAllRefUpdates true &&
		(cd cw.$who/elsewhere && GIT_DIR=../repo.git git read-tree HEAD) || return 1
	done &&
	(cd cw.ours/elsewhere && GIT_DIR=../repo.git git parallel-checkout -q -f main) &&
	(cd cw.git/elsewhere && GIT_DIR=../repo.git git checkout -q -f main) &&
	(cd cw.ours/elsewhere && GIT_DIR=../repo.git git parallel-checkout -q other) &&
	(cd cw.git/elsewhere && GIT_DIR=../repo.git git checkout -q other) &&
	test_must_be_empty "$(cd cw.ours/elsewhere && ls -A)" &&
	test_cmp_worktrees cw.ours/work cw.git/work &&
	GIT_DIR=cw.ours/repo.git git ls-files -s >ls.ours &&
	GIT_DIR=cw.git/repo.git git ls-files -s >ls.git &&
	test_cmp ls.git ls.ours &&
	GIT_DIR=cw.ours/repo.git git symbolic-ref HEAD >head.ours &&
	GIT_DIR=cw.git/repo.git git symbolic-ref HEAD >head.git &&
	test_cmp head.git head.ours &&
	(cd cw.ours/elsewhere && GIT_DIR=../repo.git git status --porcelain >../status) &&
	test_must_be_empty cw.ours/status
'

test_expect_success 'GIT_DIR and GIT_WORK_TREE from outside the work tree' '
	for who in ours git
	do
		rm -rf ex.$who && git clone -q src ex.$who && mkdir ex.$who.out || return 1
	done &&
	(cd ex.ours.out && GIT_DIR=../ex.ours/.git GIT_WORK_TREE=../ex.ours git parallel-checkout -q other) &&
	(cd ex.git.out && GIT_DIR=../ex.git/.git GIT_WORK_TREE=../ex.git git checkout -q other) &&
	test_must_be_empty "$(ls -A ex.ours.out)" &&
	same_result ex.ours ex.git
'

test_expect_success 'GIT_INDEX_FILE is the index read and written' '
	twins src ix &&
	for who in ours git
	do
		cp ix.$who/.git/index ix.$who.alt &&
		git -C ix.$who ls-files -s >ix.$who.default || return 1
	done &&
	GIT_INDEX_FILE="$PWD/ix.ours.alt" git -C ix.ours parallel-checkout -q other &&
	GIT_INDEX_FILE="$PWD/ix.git.alt" git -C ix.git checkout -q other &&
	test_cmp_worktrees ix.ours ix.git &&
	GIT_INDEX_FILE="$PWD/ix.ours.alt" git -C ix.ours ls-files -s >alt.ours &&
	GIT_INDEX_FILE="$PWD/ix.git.alt" git -C ix.git ls-files -s >alt.git &&
	test_cmp alt.git alt.ours &&
	git -C ix.ours ls-files -s >default.after &&
	test_cmp ix.ours.default default.after &&
	GIT_INDEX_FILE="$PWD/ix.ours.alt" git -C ix.ours status --porcelain >st &&
	test_must_be_empty st
'

test_expect_success 'a subdirectory and -C find the top' '
	twins src sub &&
	(cd sub.ours/d1/s1 && git parallel-checkout -q other) &&
	(cd sub.git/d1/s1 && git checkout -q other) &&
	same_result sub.ours sub.git &&
	git-parallel-checkout -C sub.ours -C d2 -q main &&
	git -C sub.git -C d2 checkout -q main &&
	same_result sub.ours sub.git &&
	test_expect_code 128 git-parallel-checkout -C nowhere main 2>err &&
	test_grep "^fatal: cannot change to .nowhere.: No such file or directory" err
'

test_expect_success 'a .git file (gitdir:) names the repository' '
	for who in ours git
	do
		rm -rf gf.$who gf.$who.dir &&
		git clone -q --separate-git-dir "$PWD/gf.$who.dir" src gf.$who &&
		test_path_is_file gf.$who/.git || return 1
	done &&
	git -C gf.ours parallel-checkout -q other &&
	git -C gf.git checkout -q other &&
	same_result gf.ours gf.git
'

test_expect_success 'extensions.worktreeConfig: config.worktree settings of a linked worktree' '
	twins src wc &&
	for who in ours git
	do
		git -C wc.$who config core.repositoryformatversion 1 &&
		git -C wc.$who config extensions.worktreeConfig true &&
		git -C wc.$who worktree add -q --detach ../wc.$who-linked main &&
		git -C wc.$who-linked config --worktree core.autocrlf true &&
		test_path_is_file wc.$who/.git/worktrees/wc.$who-linked/config.worktree || return 1
	done &&
	git -C wc.ours-linked parallel-checkout -q other &&
	git -C wc.git-linked checkout -q other &&
	same_result wc.ours-linked wc.git-linked &&
	grep -q "$(printf "\r")" wc.ours-linked/d1/s1/f1 &&
	! grep -q "$(printf "\r")" wc.ours/d1/s1/f1
'


test_expect_success '-B of a branch another worktree has checked out: reset, as git 2.39 does' '
	for who in ours git
	do
		rm -rf fb.$who fb.$who-b &&
		git init -q fb.$who &&
		git -C fb.$who commit -q --allow-empty -m one &&
		git -C fb.$who branch b &&
		git -C fb.$who worktree add -q ../fb.$who-b b || return 1
	done &&
	git -C fb.ours parallel-checkout -B b 2>err.ours; echo $? >rc.ours &&
	git -C fb.git checkout -B b 2>err.git; echo $? >rc.git &&
	test_cmp rc.git rc.ours &&
	test_cmp err.git err.ours &&
	git -C fb.git symbolic-ref HEAD >head.git &&
	git -C fb.ours symbolic-ref HEAD >head.ours &&
	test_cmp head.git head.ours
'

test_done
