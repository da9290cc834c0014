# Make real git drive our helper: git starts its workers as
# `git checkout--worker`, looking `git` up on PATH with its exec-path first.
# setup_git_helper_exec_path makes "$HELPER_EXEC_PATH": a `git` wrapper that runs
# our helper for checkout--worker and the real git otherwise, plus links to
# every other entry of the real exec-path. Then
#   GIT_EXEC_PATH="$HELPER_EXEC_PATH" git -c checkout.workers=2 ... clone/checkout
# uses our helper. The wrapper logs each helper run to "$HELPER_EXEC_PATH.log",
# so tests can prove our helper (not git's worker) did the writing.
#
# Also here (see each function's comment):
#   pc_exec / pc_run       one worker (ours or git's) on a packed batch
#   pc_differential        the same batch to both, everything compared (t2061)
#   pc_statuses, pc_collisions, pc_check_stats, pc_tree, pc_compare_trees
#   worktree_listing, same_worktree, index_stat_matches_disk, clean_checkout
#                          what real git left behind (t2070)

# The helper under test; TEST_HELPER may name another build (an executable
# taking the helper's arguments), e.g. to check that these tests catch a bug.
OUR_HELPER="${TEST_HELPER:-$PROJECT_ROOT/.venv/bin/git-checkout--helper}"

setup_git_helper_exec_path() {
	HELPER_EXEC_PATH="$TRASH_DIRECTORY/helper-exec-path"
	local real_exec real_git helper
	real_exec=$("$REAL_GIT" --exec-path) &&
	real_git="$REAL_GIT" &&
	helper="$OUR_HELPER" &&
	test -x "$helper" &&
	rm -rf "$HELPER_EXEC_PATH" && mkdir "$HELPER_EXEC_PATH" &&
	for f in "$real_exec"/* "$real_exec"/.[!.]*
	do
		test -e "$f" || continue
		case "${f##*/}" in git) continue ;; esac
		ln -s "$f" "$HELPER_EXEC_PATH/${f##*/}" || return 1
	done &&
	cat >"$HELPER_EXEC_PATH/git" <<-WRAPPER &&
	#!/bin/sh
	if test "\$1" = checkout--worker
	then
		shift
		echo "helper \$*" >>"$HELPER_EXEC_PATH.log"
		exec "$helper" "\$@"
	fi
	exec "$real_git" "\$@"
	WRAPPER
	chmod +x "$HELPER_EXEC_PATH/git" &&
	: >"$HELPER_EXEC_PATH.log" &&
	export HELPER_EXEC_PATH
}

# git_with_helper <git args>: real git, with our helper as its checkout worker.
git_with_helper() {
	GIT_EXEC_PATH="$HELPER_EXEC_PATH" "$REAL_GIT" "$@"
}

# helper_runs: how many times git started our helper since setup.
helper_runs() {
	wc -l <"$HELPER_EXEC_PATH.log" | tr -d ' '
}

# ---------------------------------------------------------------------------
# Feeding batches to a checkout worker: ours and git's `checkout--worker`.
# The repository is "$PC_GIT_DIR" (absolute); a worker runs in a work tree
# directory with GIT_DIR set, so that directory is the top of the work tree.

# stat(1) in the shape of `pc-items unpack` (the mode comes out in hex).
PC_STAT_FMT='size=%s mode=%f ino=%i dev=%d mtime=%.9Y ctime=%.9Z uid=%u gid=%g nlink=%h'

# pc_exec <ours|git> <worktree> <batch> <out> [worker args...]
# Runs one worker on <batch> in <worktree>; leaves <out>.raw (its stdout),
# <out>.err, <out>.rc and <out>.trace (GIT_TRACE2_EVENT). $PC_UMASK, when
# set, is the worker's umask.
pc_exec () {
	local who=$1 wt=$2 batch=$3 out=$4
	shift 4
	case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
	case "$batch" in /*) ;; *) batch="$PWD/$batch" ;; esac
	rm -f "$out.trace" &&
	(
		cd "$wt" &&
		if test -n "$PC_UMASK"; then umask "$PC_UMASK"; fi &&
		case $who in
		ours) set -- "$OUR_HELPER" "$@" ;;
		git) set -- "$REAL_GIT" checkout--worker "$@" ;;
		*) echo "pc_exec: who is $who?" >&2; exit 1 ;;
		esac &&
		GIT_DIR="$PC_GIT_DIR" GIT_TRACE2_EVENT="$out.trace" "$@" <"$batch" >"$out.raw" 2>"$out.err"
		echo $? >"$out.rc"
	)
}

# pc_run: pc_exec, then <out>.res (`pc-items unpack` lines) and <out>.frames.
pc_run () {
	pc_exec "$@" &&
	$PC_ITEMS unpack "$4.raw"
}

# pc_statuses <res: "<id> <STATUS>" lines (and flush/eof), without stat data.
pc_statuses () {
	sed 's/^\([0-9][0-9]*\) \([A-Z]*\).*$/\1 \2/' "$1"
}

# pc_collisions <trace>: the pcheckout records of a trace2 event file, sorted.
pc_collisions () {
	touch "$1" &&
	grep -o '"category":"pcheckout","key":"[^"]*","value":"[^"]*"}' "$1" | sort
}

# pc_check_stats <res> <spec> <worktree> [<prefix>]: every WRITTEN record
# describes the file on disk: size, mode, ino, dev, mtime, ctime (to the
# nanosecond), uid, gid and nlink as stat(1) reports them now.
pc_check_stats () {
	local res=$1 spec=$2 dir=$3 prefix=$4 n
	case "$res" in /*) ;; *) res="$PWD/$res" ;; esac
	sed -n 's/^\([0-9][0-9]*\) WRITTEN \(.*\)$/\1 \2/p' "$res" >"$res.w" &&
	sed -n 's/^id=\([0-9][0-9]*\) .*path=\(.*\)$/\1 \2/p' "$spec" >"$res.ids" &&
	awk 'NR == FNR { p[$1] = substr($0, length($1) + 2); next }
	     { if (!($1 in p)) { print "no path for id " $1 > "/dev/stderr"; exit 1 } print p[$1] }' \
		"$res.ids" "$res.w" >"$res.paths" &&
	cut -d" " -f2- "$res.w" >"$res.expect" &&
	n=$(wc -l <"$res.w") &&
	if test "$n" = 0
	then
		: >"$res.actual"
	else
		(cd "$dir" && sed "s|^|$prefix|" "$res.paths" | xargs -d "\n" stat -c "$PC_STAT_FMT") >"$res.stat" &&
		while read -r size mode rest
		do
			printf "%s mode=%o %s\n" "$size" "0x${mode#mode=}" "$rest"
		done <"$res.stat" >"$res.actual"
	fi &&
	test_cmp "$res.expect" "$res.actual"
}

# pc_tree <dir>: type, permission bits, path and link target of everything
# under <dir>, sorted (contents are compared with diff -r).
pc_tree () {
	(cd "$1" && find . -mindepth 1 -printf '%y %m %p %l\n' | LC_ALL=C sort)
}

# pc_compare_trees <a> <b>: the same entries, modes, link targets and bytes.
pc_compare_trees () {
	pc_tree "$1" >"$1.tree" &&
	pc_tree "$2" >"$2.tree" &&
	test_cmp "$1.tree" "$2.tree" &&
	diff -r --no-dereference "$1" "$2"
}

# pc_differential <name> [worker args...]
# Packs <name>.spec, runs our helper and git's worker on the same batch, each
# in a fresh work tree <name>.ours / <name>.git prepared by evaluating
# $PC_PREPARE inside it, and asserts: both exit 0, the same statuses in the
# same order, the same pkt-line framing and record heads (id, status,
# padding), the same collision trace records, the same tree on disk, and
# stat records that describe the written files. With $PC_EXPECT_STDERR unset,
# both stay silent on stderr.
pc_differential () {
	local name=$1 prefix= a who
	shift
	for a in "$@"
	do
		case $a in --prefix=*) prefix=${a#--prefix=} ;; esac
	done
	$PC_ITEMS pack ${PC_WIRE:+--wire=$PC_WIRE} <"$name.spec" >"$name.batch" &&
	for who in ours git
	do
		rm -rf "$name.$who" && mkdir "$name.$who" &&
		(cd "$name.$who" && eval "${PC_PREPARE:-:}") &&
		pc_exec $who "$name.$who" "$name.batch" "$name.$who-out" "$@" || return 1
	done &&
	$PC_ITEMS unpack "$name.git-out.raw" "$name.ours-out.raw" &&
	echo 0 >"$name.rc-expect" &&
	test_cmp "$name.rc-expect" "$name.git-out.rc" &&
	test_cmp "$name.rc-expect" "$name.ours-out.rc" &&
	if test -z "$PC_EXPECT_STDERR"
	then
		test_must_be_empty "$name.git-out.err" &&
		test_must_be_empty "$name.ours-out.err"
	fi &&
	pc_statuses "$name.git-out.res" >"$name.git.st" &&
	pc_statuses "$name.ours-out.res" >"$name.ours.st" &&
	test_cmp "$name.git.st" "$name.ours.st" &&
	test_cmp "$name.git-out.frames" "$name.ours-out.frames" &&
	pc_collisions "$name.git-out.trace" >"$name.git.coll" &&
	pc_collisions "$name.ours-out.trace" >"$name.ours.coll" &&
	test_cmp "$name.git.coll" "$name.ours.coll" &&
	pc_compare_trees "$name.git" "$name.ours" &&
	pc_check_stats "$name.git-out.res" "$name.spec" "$name.git" "$prefix" &&
	pc_check_stats "$name.ours-out.res" "$name.spec" "$name.ours" "$prefix"
}

# ---------------------------------------------------------------------------
# Checking what real git did with our helper.

# worktree_listing <dir>: type, permission bits, path and link target of
# every entry below <dir> but .git, sorted.
worktree_listing () {
	(cd "$1" && find . -mindepth 1 -name .git -prune -o -printf '%y %m %p %l\n' | LC_ALL=C sort)
}

# same_worktree <a> <b>: same entries, modes, link targets and bytes (.git aside).
same_worktree () {
	local a b
	a="$TRASH_DIRECTORY/$(printf %s "$1" | tr / _).listing" &&
	b="$TRASH_DIRECTORY/$(printf %s "$2" | tr / _).listing" &&
	worktree_listing "$1" >"$a" &&
	worktree_listing "$2" >"$b" &&
	test_cmp "$a" "$b" &&
	diff -r --no-dereference -x .git "$1" "$2"
}

# index_stat_matches_disk <repo>: the stat data in the index of <repo>
# (ctime, mtime to the nanosecond, dev, ino, uid, gid, size) is what stat(1)
# says of each file now. Run it before anything refreshes the index
# (git status does): right after a checkout, every regular file's entry holds
# the stat record its worker sent. Paths must not contain spaces.
index_stat_matches_disk () {
	git -C "$1" ls-files --debug | awk '
		/^  ctime: / { split($2, t, ":"); c = t[1] ":" (t[2] + 0); next }
		/^  mtime: / { split($2, t, ":"); m = t[1] ":" (t[2] + 0); next }
		/^  dev: / { d = $2; i = $4; next }
		/^  uid: / { u = $2; g = $4; next }
		/^  size: / { print p, c, m, d, i, u, g, $2; next }
		{ p = $0 }' >"$TRASH_DIRECTORY/$1.index-stat" &&
	(cd "$1" && git ls-files -z | xargs -0 stat -c "%n %.9Z %.9Y %d %i %u %g %s") | awk '{
		split($2, t, "."); $2 = t[1] ":" (t[2] + 0)
		split($3, t, "."); $3 = t[1] ":" (t[2] + 0)
		print }' >"$TRASH_DIRECTORY/$1.disk-stat" &&
	test -s "$TRASH_DIRECTORY/$1.disk-stat" &&
	test_cmp "$TRASH_DIRECTORY/$1.disk-stat" "$TRASH_DIRECTORY/$1.index-stat"
}

# clean_checkout <repo>: git sees nothing changed: diff-files --quiet (stat
# data as in the index), the index stat data equal to stat(1), and an empty
# status --porcelain (which refreshes, so it comes last).
clean_checkout () {
	git -C "$1" diff-files --quiet &&
	index_stat_matches_disk "$1" &&
	git -C "$1" diff-index --cached --quiet HEAD &&
	git -C "$1" status --porcelain >"$TRASH_DIRECTORY/$1.status" &&
	test_must_be_empty "$TRASH_DIRECTORY/$1.status"
}
