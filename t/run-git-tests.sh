#!/usr/bin/env bash
# Run git's own test scripts from a built git tree with OUR helper as git's
# checkout--worker, under GIT_TEST_CHECKOUT_WORKERS=2 (the mode git's CI runs
# its whole suite in), and print passed/failed counts per script.
#
#   t/run-git-tests.sh <git build dir> <worker: ours|git> <script>...
#   (make git-tests GIT_BUILD=/path/to/git T="t2400-worktree-add.sh ..." [WORKER=git])
#   A <script> with a slash is one of ours (t/git/): run from git's t/ as its own
#   are, with git-parallel-checkout and git-parallel-clone on the exec-path.
#
# How: git's test-lib.sh runs the git named by GIT_TEST_INSTALLED with
# GIT_TEST_EXEC_PATH as its exec-path. Both point at a wrapper directory made
# here (nothing is written into the build tree): links to every program of
# the build's exec-path, and a `git` that runs our helper for
# `checkout--worker` and the build's git otherwise (git starts its workers as
# `git checkout--worker`, found through the exec-path it puts first on PATH,
# as in t/lib-git-helper.sh). WORKER=git keeps git's own worker through the
# same wrapper, for comparison. Each helper run is logged, so the counts say
# whether our helper ran at all. Trash directories and results go below
# build/git-tests/ (TEST_OUTPUT_DIRECTORY).
set -u
build=${1:?usage: run-git-tests.sh <git build dir> <ours|git> <script>...}
worker=${2:?usage: run-git-tests.sh <git build dir> <ours|git> <script>...}
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$build" && pwd) || exit 1
helper="$here/.venv/bin/git-checkout--helper"
test -x "$build/git" || { echo "run-git-tests: no built git at $build" >&2; exit 1; }
test -d "$build/t" || { echo "run-git-tests: no t/ in $build" >&2; exit 1; }
case $worker in ours|git) ;; *) echo "run-git-tests: worker is ours or git, not $worker" >&2; exit 1 ;; esac
test "$worker" = git || test -x "$helper" || { echo "run-git-tests: no helper at $helper (make venv)" >&2; exit 1; }

out="$here/build/git-tests/$worker"
exec_dir="$out/exec-path"
rm -rf "$exec_dir" && mkdir -p "$exec_dir" "$out/results" || exit 1
for f in "$build"/git-* "$build"/mergetools
do
	test -e "$f" && ln -s "$f" "$exec_dir/${f##*/}"
done
# Our commands, for the scripts of ours that run git's test libraries on them.
for f in "$here"/.venv/bin/git-parallel-checkout "$here"/.venv/bin/git-parallel-clone
do
	test -x "$f" && ln -s "$f" "$exec_dir/${f##*/}"
done
log="$out/helper-runs.log"
: >"$log"
if test "$worker" = ours
then
	worker_cmd="exec \"$helper\" \"\$@\""
else
	worker_cmd="exec \"$build/git\" checkout--worker \"\$@\""
fi
cat >"$exec_dir/git" <<EOF
#!/bin/sh
if test "\$1" = checkout--worker
then
	shift
	echo "\$PWD" >>"$log"
	$worker_cmd
fi
exec "$build/git" "\$@"
EOF
chmod +x "$exec_dir/git"

total_pass=0 total_fail=0 rc=0
printf '%-40s %7s %7s %7s %9s\n' script passed failed total helpers
for t in "$@"
do
	# A path to a script of ours (t/git/): run from git's t/ like its own.
	case $t in
	*/*) script=$(cd "$(dirname "$t")" && pwd)/${t##*/} ;;
	*) script=./$t ;;
	esac
	t=${t##*/}
	test -f "$build/t/$t" || test "$script" != "./$t" ||
		{ echo "run-git-tests: no $build/t/$t" >&2; rc=1; continue; }
	before=$(wc -l <"$log")
	(
		cd "$build/t" &&
		GIT_TEST_INSTALLED="$exec_dir" GIT_TEST_EXEC_PATH="$exec_dir" \
		GIT_TEST_CHECKOUT_WORKERS=2 TEST_OUTPUT_DIRECTORY="$out/results" \
			"${SHELL_PATH:-/bin/sh}" "$script" >"$out/results/${t%.sh}.out" 2>&1
	)
	runs=$(( $(wc -l <"$log") - before ))
	o="$out/results/${t%.sh}.out"
	total=$(grep -c '^\(ok\|not ok\) ' "$o")
	failed=$(grep '^not ok ' "$o" | grep -vc '# TODO')
	known=$(grep '^not ok ' "$o" | grep -c '# TODO')
	passed=$(grep -c '^ok ' "$o")
	printf '%-40s %7s %7s %7s %9s%s\n' "${t%.sh}" "$passed" "$failed" "$total" "$runs" \
		"$(test "$known" = 0 || echo " ($known known breakages)")"
	total_pass=$((total_pass + passed)) total_fail=$((total_fail + failed))
	test "$failed" = 0 || rc=1
done
printf '%-40s %7s %7s\n' "all ($worker worker)" "$total_pass" "$total_fail"
echo "output: $out/results/<script>.out"
exit $rc
