#!/usr/bin/env bash
test_description='coordinator safety: a switch that would lose local changes or untracked
files is refused before anything is touched, with git'"'"'s messages; local changes
to paths that do not change are carried over; -f throws them away'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-coordinator.sh"

# main -> other: chg changes, gone leaves, new and newdir/x arrive,
# dir2file/a becomes the file dir2file, file2dir becomes file2dir/a;
# same, same2, same3 and keep/* do not change.
test_expect_success 'setup' '
	git init -q src &&
	(
		cd src &&
		echo chg >chg && echo gone >gone &&
		echo same >same && echo same2 >same2 && echo same3 >same3 &&
		mkdir dir2file keep && echo a >dir2file/a && echo f >file2dir &&
		for i in 1 2 3 4 5 6; do echo $i >keep/k$i || return 1; done &&
		echo "*.ign" >.gitignore &&
		git add . && git commit -qm one &&
		git checkout -q -b other &&
		echo chg2 >chg && git rm -q gone &&
		echo new >new && mkdir newdir && echo x >newdir/x && echo ign >new.ign &&
		git rm -rq dir2file && echo nowfile >dir2file &&
		git rm -q file2dir && mkdir file2dir && echo a >file2dir/a &&
		git add . && git commit -qm two &&
		git checkout -q main
	)
'

# both_refuse <name> <script> [<args>...]: in two fresh clones, run <script>,
# then our switch to other (with <args>) and git's; same exit code and
# stderr, and ours left work tree, index and HEAD exactly as they were.
both_refuse() {
	local name=$1 script=$2
	shift 2
	twins src $name &&
	for d in $name.ours $name.git
	do
		(cd $d && eval "$script") || return 1
	done &&
	worktree_manifest $name.ours >before.manifest &&
	cp $name.ours/.git/index index.before &&
	git -C $name.ours rev-parse HEAD >head.before &&
	git -C $name.ours symbolic-ref HEAD >>head.before &&
	rm -f trace.refused &&
	{ GIT_TRACE2="$PWD/trace.refused" git -C $name.ours parallel-checkout "$@" other >out.ours 2>err.ours
	  echo $? >rc.ours; } &&
	{ git -C $name.git checkout other >out.git 2>err.git; echo $? >rc.git; } &&
	test_cmp rc.git rc.ours &&
	test_cmp err.git err.ours &&
	test_cmp out.git out.ours &&
	echo 1 >rc.expect && test_cmp rc.expect rc.ours &&
	worktree_manifest $name.ours >after.manifest &&
	test_cmp before.manifest after.manifest &&
	cmp index.before $name.ours/.git/index &&
	git -C $name.ours rev-parse HEAD >head.after &&
	git -C $name.ours symbolic-ref HEAD >>head.after &&
	test_cmp head.before head.after &&
	test_path_is_missing $name.ours/.git/index.lock &&
	test "$(helpers_in_trace trace.refused)" = 0
}

test_expect_success 'a modified file that changes: refused' '
	both_refuse mod "echo local >chg" &&
	test_grep "^error: Your local changes to the following files would be overwritten by checkout:$" err.ours &&
	test_grep "^	chg$" err.ours
'

test_expect_success 'a staged change to a file that changes: refused' '
	both_refuse staged "echo staged >chg && git add chg"
'

test_expect_success 'staged and modified: two groups under the same words, as git' '
	both_refuse two "echo staged >chg && git add chg && echo mod >gone && echo carried >same" &&
	test $(grep -c "^error: Your local changes" err.ours) = 2
'

test_expect_success 'a modified file that leaves: refused' '
	both_refuse leaves "echo local >gone"
'

test_expect_success 'an untracked file where a new file goes: refused' '
	both_refuse untracked "echo mine >new" &&
	test_grep "^error: The following untracked working tree files would be overwritten by checkout:$" err.ours &&
	test_grep "^Please move or remove them before you switch branches.$" err.ours
'

test_expect_success 'an untracked file where a new directory goes: refused' '
	both_refuse untracked-dir "echo mine >newdir"
'

test_expect_success 'untracked files in a directory that becomes a file: refused' '
	both_refuse lose-dir "echo mine >dir2file/untracked" &&
	test_grep "^error: Updating the following directories would lose untracked files in them:$" err.ours
'

test_expect_success 'a tracked file replaced by a directory with untracked files: refused' '
	both_refuse file-to-dir "rm file2dir && mkdir file2dir && echo mine >file2dir/a"
'

test_expect_success 'everything at once, with -j 2: all groups in git'"'"'s order, no helper' '
	both_refuse all "echo l >chg && echo l >gone && echo u >new && echo u >newdir && echo u >dir2file/u" \
		-j 2 --threshold 0 &&
	test $(grep -c "^error: " err.ours) = 3
'

test_expect_success 'an unmerged index: refused as git does' '
	both_refuse unmerged "
		o1=\$(echo one | git hash-object -w --stdin) &&
		o2=\$(echo two | git hash-object -w --stdin) &&
		printf \"0 %s 0\\tchg\\n100644 %s 1\\tchg\\n100644 %s 2\\tchg\\n\" \
			0000000000000000000000000000000000000000 \$o1 \$o2 |
		git update-index --index-info
	" &&
	test_grep "^chg: needs merge$" out.ours
'

test_expect_success 'a held index.lock: refused, nothing touched' '
	twins src locked &&
	: >locked.ours/.git/index.lock && : >locked.git/.git/index.lock &&
	worktree_manifest locked.ours >before.manifest &&
	{ git -C locked.ours parallel-checkout other 2>err.ours; echo $? >rc.ours; } &&
	{ git -C locked.git checkout other 2>err.git; echo $? >rc.git; } &&
	test_cmp rc.git rc.ours &&
	sed "s/locked\.git/locked.ours/" err.git >expect &&
	test_cmp expect err.ours &&
	worktree_manifest locked.ours >after.manifest &&
	test_cmp before.manifest after.manifest &&
	test_path_is_file locked.ours/.git/index.lock
'

test_expect_success 'an ignored file in the way is overwritten, as git does' '
	twins src ign &&
	echo mine >ign.ours/new.ign && echo mine >ign.git/new.ign &&
	git -C ign.ours parallel-checkout -j 2 --threshold 0 other 2>err.ours &&
	git -C ign.git checkout other 2>err.git &&
	test_cmp err.git err.ours &&
	test_cmp_worktrees ign.ours ign.git &&
	verify_clean ign.ours
'

for W in 1 2
do
	test_expect_success "-j $W: local changes to paths that do not change are carried over" '
		twins src carry$W &&
		for d in carry$W.ours carry$W.git
		do
			(
				cd $d &&
				echo local >same && rm same2 &&
				echo staged >same3 && git add same3 && echo "then modified" >same3 &&
				echo added >added && git add added &&
				echo untracked >untracked &&
				echo u >keep/untracked
			) || return 1
		done &&
		{ git -C carry$W.ours parallel-checkout -j $W --threshold 0 other >out.ours 2>err.ours
		  echo $? >rc.ours; } &&
		{ git -C carry$W.git checkout other >out.git 2>err.git; echo $? >rc.git; } &&
		test_cmp rc.git rc.ours &&
		test_cmp err.git err.ours &&
		test_cmp out.git out.ours &&
		test_grep "^M	same3$" out.ours &&
		test_cmp_worktrees carry$W.ours carry$W.git &&
		test_cmp_index carry$W.ours carry$W.git &&
		git -C carry$W.ours status --porcelain >st.ours &&
		git -C carry$W.git status --porcelain >st.git &&
		test_cmp st.git st.ours &&
		git -C carry$W.ours diff-files --name-only >df.ours &&
		git -C carry$W.git diff-files --name-only >df.git &&
		test_cmp df.git df.ours &&
		echo local >expect && test_cmp expect carry$W.ours/same
	'

	test_expect_success "-j $W: -f throws local changes away and overwrites untracked files" '
		twins src force$W &&
		for d in force$W.ours force$W.git
		do
			(
				cd $d &&
				echo local >chg && echo staged >same && git add same &&
				echo mine >new && echo mine >newdir && echo mine >dir2file/u &&
				rm keep/k1 && chmod +x keep/k2
			) || return 1
		done &&
		{ git -C force$W.ours parallel-checkout -j $W --threshold 0 -f other >out.ours 2>err.ours
		  echo $? >rc.ours; } &&
		{ git -C force$W.git checkout -f other >out.git 2>err.git; echo $? >rc.git; } &&
		test_cmp rc.git rc.ours &&
		test_cmp err.git err.ours &&
		test_cmp_worktrees force$W.ours force$W.git &&
		test_cmp_index force$W.ours force$W.git &&
		verify_clean force$W.ours
	'
done

test_expect_success 'a refused switch then succeeds once the change is committed' '
	git -C mod.ours commit -qam "keep local" &&
	git -C mod.ours parallel-checkout -q -j 2 --threshold 0 -f other &&
	verify_clean mod.ours
'

test_done
