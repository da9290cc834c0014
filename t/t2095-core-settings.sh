#!/usr/bin/env bash
test_description='core.symlinks, core.fileMode, core.checkStat and core.trustctime
as git reads them: twins against git checkout and git clone'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-coordinator.sh"

test_expect_success 'setup' '
	make_coordinator_repo src
'

# same_outcome <name> <args...>: `git parallel-checkout <args>` in <name>.ours
# and `git checkout <args>` in <name>.git: same exit code, stdout, stderr.
same_outcome() {
	local name=$1
	shift
	(cd $name.ours && git parallel-checkout "$@" >../$name.out.ours 2>../$name.err.ours; echo $? >../$name.rc.ours) &&
	(cd $name.git && git checkout "$@" >../$name.out.git 2>../$name.err.git; echo $? >../$name.rc.git) &&
	test_cmp $name.rc.git $name.rc.ours &&
	test_cmp $name.out.git $name.out.ours &&
	test_cmp $name.err.git $name.err.ours
}

test_expect_success 'clone with core.symlinks=false: link targets as regular files, clean' '
	git -c core.symlinks=false parallel-clone -q src sl.ours &&
	git -c core.symlinks=false clone -q src sl.git &&
	test -f sl.ours/link-to-file && ! test -L sl.ours/link-to-file &&
	printf "d1/s1/f1" >expect && test_cmp expect sl.ours/link-to-file &&
	test_cmp_worktrees sl.ours sl.git &&
	test_cmp_index sl.ours sl.git &&
	git -C sl.ours config core.symlinks false &&
	git -C sl.git config core.symlinks false &&
	verify_clean sl.ours
'

test_expect_success 'core.symlinks=false: switching over link files as git does' '
	same_outcome sl other &&
	! test -L sl.ours/becomes-link &&
	test_cmp_worktrees sl.ours sl.git &&
	test_cmp_index sl.ours sl.git &&
	verify_clean sl.ours &&
	same_outcome sl main &&
	test_cmp_worktrees sl.ours sl.git &&
	test_cmp_index sl.ours sl.git &&
	verify_clean sl.ours
'

test_expect_success 'core.symlinks=false: a link file changed locally is refused as git refuses it' '
	printf elsewhere >sl.ours/link-to-file &&
	printf elsewhere >sl.git/link-to-file &&
	same_outcome sl other &&
	test_cmp_worktrees sl.ours sl.git &&
	test_cmp_index sl.ours sl.git
'

test_expect_success 'core.symlinks=false: restoring a link path writes the file' '
	same_outcome sl -- link-to-file &&
	test_cmp_worktrees sl.ours sl.git &&
	test_cmp_index sl.ours sl.git &&
	verify_clean sl.ours
'

test_expect_success 'core.symlinks=true (default) with link files checked out: refused as git' '
	twins src sl2 &&
	for d in sl2.ours sl2.git
	do
		rm $d/link-to-file && printf d1/s1/f1 >$d/link-to-file || return 1
	done &&
	same_outcome sl2 other &&
	test_cmp_worktrees sl2.ours sl2.git
'

test_expect_success 'core.fileMode=false: chmod +x of a changing file does not stop a switch' '
	twins src fm &&
	for d in fm.ours fm.git
	do
		git -C $d config core.fileMode false &&
		chmod +x $d/d0/s0/f6 $d/unchanged || return 1
	done &&
	same_outcome fm other &&
	test_cmp_worktrees fm.ours fm.git &&
	test_cmp_index fm.ours fm.git &&
	git -C fm.ours diff-files --quiet
'

test_expect_success 'core.fileMode=true: the same chmod is a local change, as in git' '
	twins src fm2 &&
	chmod +x fm2.ours/d0/s0/f6 fm2.git/d0/s0/f6 &&
	same_outcome fm2 other &&
	test_cmp_worktrees fm2.ours fm2.git &&
	test_cmp_index fm2.ours fm2.git
'

test_expect_success 'core.fileMode=false given with -c: the local-change listing ignores the x bit' '
	twins src fm3 &&
	chmod +x fm3.ours/unchanged fm3.git/unchanged &&
	(cd fm3.ours && git -c core.fileMode=false parallel-checkout other >../fm3.out.ours 2>../fm3.err.ours) &&
	(cd fm3.git && git -c core.fileMode=false checkout other >../fm3.out.git 2>../fm3.err.git) &&
	test_cmp fm3.out.git fm3.out.ours &&
	test_cmp fm3.err.git fm3.err.ours &&
	test_cmp_index fm3.ours fm3.git
'

test_expect_success 'a bad core.symlinks or core.fileMode is fatal, nothing touched' '
	twins src bad &&
	for v in symlinks fileMode trustctime
	do
		(cd bad.ours && git -c core.$v=maybe parallel-checkout other 2>../bad.err.ours; echo $? >../bad.rc.ours) &&
		(cd bad.git && git -c core.$v=maybe checkout other 2>../bad.err.git; echo $? >../bad.rc.git) &&
		echo 128 >expect && test_cmp expect bad.rc.git && test_cmp expect bad.rc.ours &&
		test_cmp bad.err.git bad.err.ours || return 1
	done &&
	test_cmp_worktrees bad.ours bad.git &&
	test_cmp_index bad.ours bad.git
'

test_expect_success 'core.checkStat=minimal and core.trustctime=false: a ctime-only change' '
	twins src cs &&
	for d in cs.ours cs.git
	do
		git -C $d config core.checkStat minimal &&
		git -C $d config core.trustctime false &&
		chmod 644 $d/d0/s0/f6 || return 1
	done &&
	same_outcome cs other &&
	test_cmp_worktrees cs.ours cs.git &&
	test_cmp_index cs.ours cs.git &&
	verify_clean cs.ours
'

test_expect_success 'an unknown core.checkStat is ignored, as git 2.39 does' '
	twins src cs2 &&
	git -C cs2.ours config core.checkStat bogus &&
	git -C cs2.git config core.checkStat bogus &&
	same_outcome cs2 other &&
	test_cmp_index cs2.ours cs2.git
'

test_done
