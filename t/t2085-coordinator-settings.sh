#!/usr/bin/env bash
test_description='coordinator settings as git reads them: checkout.workers,
checkout.thresholdForParallelism, GIT_TEST_CHECKOUT_WORKERS, -j; progress and -q'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-coordinator.sh"

# git's online_cpus(): processors online, whatever the affinity mask says.
ONLINE=$("$PYTHON" -c 'import os; print(os.sysconf("SC_NPROCESSORS_ONLN"))')
command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null && test_set_prereq TASKSET
# Helpers for a switch of 33 items with one worker per CPU: min(CPUs, 33),
# none when that is 1.
CPU_HELPERS=$(( ONLINE < 33 ? ONLINE : 33 ))
test $CPU_HELPERS -le 1 && CPU_HELPERS=0

test_expect_success 'setup: 120 files; other rewrites 30, adds 3, removes 5' '
	git init -q src &&
	(
		cd src &&
		for i in $(seq 1 120)
		do
			mkdir -p d$((i % 8)) && echo "file $i" >d$((i % 8))/f$i || return 1
		done &&
		git add . && git commit -qm one &&
		git checkout -q -b other &&
		for i in $(seq 1 30); do echo "changed $i" >d$((i % 8))/f$i || return 1; done &&
		for i in 1 2 3; do echo "new $i" >d0/new$i || return 1; done &&
		git rm -q d1/f41 d2/f42 d3/f43 d4/f44 d5/f45 &&
		git add . && git commit -qm two &&
		git checkout -q main
	) &&
	git -C src diff --name-only --diff-filter=AMT main other >writes &&
	test_line_count = 33 writes &&
	test "$ONLINE" -ge 1
'

# same_helpers <n> <name> [<git option>...]: switch twins to other with
# `git <options> parallel-checkout other` and `git <options> checkout other`
# (same environment): both start <n> helpers, with the same result.
same_helpers() {
	local want=$1 name=$2
	shift 2
	twins src $name &&
	test_checkout_helpers $want git "$@" -C $name.ours parallel-checkout -q other &&
	rm -f trace.git &&
	GIT_TRACE2="$PWD/trace.git" git "$@" -C $name.git checkout -q other &&
	touch trace.git &&
	test "$(helpers_in_trace trace.git)" = $want &&
	test_cmp_worktrees $name.ours $name.git &&
	test_cmp_index $name.ours $name.git &&
	verify_clean $name.ours
}

test_expect_success 'checkout.workers unset: 1, sequential, even with threshold 0' '
	same_helpers 0 unset -c checkout.thresholdForParallelism=0
'

test_expect_success 'checkout.workers=3 with threshold 0: three helpers' '
	same_helpers 3 three -c checkout.workers=3 -c checkout.thresholdForParallelism=0
'

test_expect_success 'checkout.workers=0 and -1: one per online CPU' '
	same_helpers $CPU_HELPERS cpus0 -c checkout.workers=0 -c checkout.thresholdForParallelism=0 &&
	same_helpers $CPU_HELPERS cpus-1 -c checkout.workers=-1 -c checkout.thresholdForParallelism=0
'

test_expect_success TASKSET 'online CPUs, not the affinity mask (taskset -c 0), as git' '
	twins src aff &&
	test_checkout_helpers $CPU_HELPERS \
		taskset -c 0 git -c checkout.workers=0 -c checkout.thresholdForParallelism=0 \
		-C aff.ours parallel-checkout -q other &&
	rm -f trace.git &&
	GIT_TRACE2="$PWD/trace.git" taskset -c 0 git -c checkout.workers=0 \
		-c checkout.thresholdForParallelism=0 -C aff.git checkout -q other &&
	test "$(helpers_in_trace trace.git)" = "$(helpers_in_trace trace.helpers)"
'

test_expect_success 'default threshold 100: 33 items stay sequential, a 120-file clone does not' '
	same_helpers 0 thr-default -c checkout.workers=2 &&
	test_checkout_helpers 2 git -c checkout.workers=2 parallel-clone -q src big.ours &&
	rm -f trace.git &&
	GIT_TRACE2="$PWD/trace.git" git -c checkout.workers=2 clone -q src big.git &&
	test "$(helpers_in_trace trace.git)" = 2 &&
	test_cmp_worktrees big.ours big.git &&
	verify_clean big.ours
'

test_expect_success 'threshold boundary: items == threshold is parallel, one more is not' '
	same_helpers 2 thr33 -c checkout.workers=2 -c checkout.thresholdForParallelism=33 &&
	same_helpers 0 thr34 -c checkout.workers=2 -c checkout.thresholdForParallelism=34
'

test_expect_success 'settings from the global config file; -c wins over it' '
	test_when_finished "git config --global --unset checkout.workers;
		git config --global --unset checkout.thresholdForParallelism" &&
	git config --global checkout.workers 2 &&
	git config --global checkout.thresholdForParallelism 0 &&
	same_helpers 2 global &&
	same_helpers 3 global-c -c checkout.workers=3
'

test_expect_success 'GIT_TEST_CHECKOUT_WORKERS overrides config and threshold' '
	(
		export GIT_TEST_CHECKOUT_WORKERS=2 &&
		same_helpers 2 env2 -c checkout.workers=4 -c checkout.thresholdForParallelism=1000
	) &&
	(
		export GIT_TEST_CHECKOUT_WORKERS=0 &&
		same_helpers $CPU_HELPERS env0
	) &&
	(
		export GIT_TEST_CHECKOUT_WORKERS=" +2" &&
		same_helpers 2 env-sign
	) &&
	(
		export GIT_TEST_CHECKOUT_WORKERS= &&
		same_helpers 0 env-empty -c checkout.thresholdForParallelism=0
	)
'

test_expect_success 'GIT_TEST_CHECKOUT_WORKERS garbage: git'"'"'s message and exit code' '
	twins src garbage &&
	for v in abc "2 " 2_0 0x2 99999999999
	do
		{ GIT_TEST_CHECKOUT_WORKERS="$v" git -C garbage.ours parallel-checkout other 2>err.ours
		  echo $? >rc.ours; } &&
		{ GIT_TEST_CHECKOUT_WORKERS="$v" git -C garbage.git checkout other 2>err.git
		  echo $? >rc.git; } &&
		test_cmp rc.git rc.ours &&
		test_cmp err.git err.ours &&
		echo 128 >expect && test_cmp expect rc.ours &&
		git -C garbage.git checkout -q -f main 2>/dev/null &&
		git -C garbage.git clean -qfd || return 1
	done &&
	test_grep "^fatal: invalid value for .GIT_TEST_CHECKOUT_WORKERS.: .99999999999.$" err.ours &&
	test_path_is_missing garbage.ours/.git/index.lock &&
	verify_clean garbage.ours &&
	git -C garbage.ours symbolic-ref HEAD >head &&
	echo refs/heads/main >expect && test_cmp expect head
'

test_expect_success '-j wins over GIT_TEST_CHECKOUT_WORKERS and checkout.workers' '
	(
		export GIT_TEST_CHECKOUT_WORKERS=3 &&
		twins src j2 &&
		test_checkout_helpers 2 git -c checkout.workers=4 -C j2.ours parallel-checkout -q -j 2 other &&
		twins src j1 &&
		test_checkout_helpers 0 git -c checkout.workers=4 -C j1.ours parallel-checkout -q -j 1 other
	) &&
	twins src j3 &&
	test_checkout_helpers 0 git -c checkout.workers=1 -C j3.ours parallel-checkout -q -j 3 other &&
	twins src j3t &&
	test_checkout_helpers 3 git -c checkout.workers=1 -C j3t.ours parallel-checkout -q -j 3 \
		--threshold 0 other &&
	twins src j0 &&
	test_checkout_helpers $CPU_HELPERS \
		git -C j0.ours parallel-checkout -q -j 0 --threshold 0 other &&
	test_cmp_worktrees j3t.ours j0.ours &&
	verify_clean j0.ours
'

# progress_lines <file>: the progress meter's updates, one per line.
progress_lines() {
	tr "\r" "\n" <"$1" | grep "^Updating files:"
}

for W in 1 2
do
	test_expect_success "-j $W --progress: git's meter and total (writes and removals)" '
		twins src prog$W &&
		GIT_PROGRESS_DELAY=0 git -C prog$W.ours parallel-checkout -j $W --threshold 0 --progress other 2>err.ours &&
		GIT_PROGRESS_DELAY=0 git -C prog$W.git checkout --progress other 2>err.git &&
		progress_lines err.ours >lines.ours &&
		progress_lines err.git >lines.git &&
		tail -n 1 lines.git >last.git &&
		tail -n 1 lines.ours >last.ours &&
		test_cmp last.git last.ours &&
		echo "Updating files: 100% (38/38), done." >expect &&
		test_cmp expect last.ours &&
		! grep -v "^Updating files: [ 1][ 0-9][0-9]% ([0-9]*/38)" lines.ours &&
		sort -c -n -t "(" -k 2 lines.ours &&
		tr "\r" "\n" <err.ours | grep -v "^Updating files:" >rest.ours &&
		tr "\r" "\n" <err.git | grep -v "^Updating files:" >rest.git &&
		test_cmp rest.git rest.ours
	'
done

test_expect_success '-q: nothing on stderr, as git' '
	twins src quiet &&
	git -C quiet.ours parallel-checkout -j 2 --threshold 0 -q other 2>err.ours &&
	git -C quiet.git checkout -q other 2>err.git &&
	test_must_be_empty err.ours &&
	test_must_be_empty err.git
'

test_expect_success '--progress -q: the meter only (an explicit --progress wins, as in git)' '
	twins src pq &&
	GIT_PROGRESS_DELAY=0 git -C pq.ours parallel-checkout -j 2 --threshold 0 --progress -q other 2>err.ours &&
	GIT_PROGRESS_DELAY=0 git -C pq.git checkout --progress -q other 2>err.git &&
	progress_lines err.ours | tail -n 1 >last.ours &&
	progress_lines err.git | tail -n 1 >last.git &&
	test_cmp last.git last.ours &&
	{ tr "\r" "\n" <err.ours | grep -v "^Updating files:" >rest.ours || :; } &&
	test_must_be_empty rest.ours &&
	test -s last.ours
'

test_expect_success 'no terminal, or --no-progress: no meter; the same stderr as git' '
	twins src np &&
	git -C np.ours parallel-checkout -j 2 --threshold 0 other 2>err.ours &&
	GIT_PROGRESS_DELAY=0 git -C np.git checkout other 2>err.git &&
	test_cmp err.git err.ours &&
	! grep Updating err.ours &&
	git -C np.ours parallel-checkout -j 2 --threshold 0 --no-progress main >out.ours 2>err.ours &&
	GIT_PROGRESS_DELAY=0 git -C np.git checkout --no-progress main >out.git 2>err.git &&
	test_cmp err.git err.ours &&
	test_cmp out.git out.ours &&
	test_grep "^Your branch is up to date with .origin/main.\.$" out.ours
'

test_done
