#!/usr/bin/env bash
test_description='coordinator faults: helpers that die, exit early or answer garbage, a held
index.lock, a full disk, a read-only directory, an index that cannot be written, local
changes at every kind of transition, and absurd helper counts. Whatever fails, the
failed paths are named, the exit code is non-zero, the old index (byte for byte) and
HEAD stay, no index.lock is left, no byte of user data is lost, and a re-run finishes.

Misbehaving helpers are made deterministic by t/helper/misbehaving-helper: the real
helper, answering one result per write, misbehaving exactly after N results.'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-coordinator.sh"

MISBEHAVE="$PYTHON $TEST_DIRECTORY/helper/misbehaving-helper"

# A tmpfs and bind mounts need root and a kernel that lets us mount.
mkdir -p mount-probe &&
mount -t tmpfs -o size=64k tmpfs mount-probe 2>/dev/null &&
umount mount-probe && test_set_prereq MOUNT
rmdir mount-probe

# user_data <dir>: checksums of the user's own bytes in <dir>: an untracked
# file and a local change to a path that does not change between branches.
add_user_data() {
	echo "mine, untracked" >"$1/mine.txt" &&
	echo "a local change" >>"$1/keep"
}
user_data() {
	(cd "$1" && sha1sum mine.txt keep)
}

# snapshot <dir> / unchanged <dir>: index bytes, HEAD and user data as they
# were, no index.lock.
snapshot() {
	cp "$1/.git/index" "$1.index.before" &&
	{ git -C "$1" symbolic-ref -q HEAD; git -C "$1" rev-parse HEAD; } >"$1.head.before" &&
	user_data "$1" >"$1.user.before"
}
unchanged() {
	cmp "$1.index.before" "$1/.git/index" &&
	test_path_is_missing "$1/.git/index.lock" &&
	{ git -C "$1" symbolic-ref -q HEAD; git -C "$1" rev-parse HEAD; } >"$1.head.after" &&
	test_cmp "$1.head.before" "$1.head.after" &&
	user_data "$1" >"$1.user.after" &&
	test_cmp "$1.user.before" "$1.user.after"
}

# finish_like_git <dir>: a plain re-run completes the switch; the result is
# git's (ref: a twin switched by git checkout), user data included.
finish_like_git() {
	git -C "$1" parallel-checkout -q -j 2 --threshold 0 other &&
	test_cmp_worktrees "$1" ref &&
	test_cmp_index "$1" ref &&
	user_data "$1" >"$1.user.final" &&
	test_cmp "$1.user.before" "$1.user.final"
}

# main -> other: f01..f40 rewritten, new/n1..n4 added, gone removed, keep
# unchanged: 44 regular files to write, 22 per helper with -j 2.
test_expect_success 'setup' '
	git init -q src &&
	(
		cd src &&
		for i in $(seq -w 1 40); do echo "main $i" >f$i || return 1; done &&
		echo keep >keep && echo gone >gone &&
		git add . && git commit -qm main &&
		git checkout -q -b other &&
		for i in $(seq -w 1 40); do echo "other $i" >f$i || return 1; done &&
		git rm -q gone && mkdir new &&
		for i in 1 2 3 4; do echo "new $i" >new/n$i || return 1; done &&
		git add . && git commit -qm other &&
		git checkout -q main
	) &&
	git -C src ls-tree -r --name-only other >other.paths &&
	test_line_count = 45 other.paths &&
	git clone -q src ref && add_user_data ref && git -C ref checkout -q other
'

# helper_fault <name> <action> <unwritten: count or "some"> <stderr pattern>
helper_fault() {
	local name=$1 action=$2 want=$3 pattern=$4
	rm -rf $name && git clone -q src $name && add_user_data $name && snapshot $name &&
	{ git -C $name parallel-checkout -j 2 --threshold 0 \
		--helper-cmd "$MISBEHAVE $action results=3" other 2>$name.err; echo $? >$name.rc; } &&
	echo 1 >expect && test_cmp expect $name.rc &&
	test_grep "$pattern" $name.err &&
	! grep "died of signal 15" $name.err &&
	unchanged $name &&
	sed -n "s/^error: .\(.*\). was not written (its checkout helper failed)$/\1/p" $name.err >$name.unwritten &&
	if test "$want" = some
	then
		test -s $name.unwritten
	else
		test_line_count = "$want" $name.unwritten
	fi &&
	# Not written means not there: no half-written file, no unreported one.
	while read p
	do
		test_path_is_missing "$name/$p" || return 1
	done <$name.unwritten &&
	# Every other path of the target holds the target content.
	grep -vxF -f $name.unwritten other.paths | { grep -vx keep || :; } >$name.written &&
	(cd $name && git hash-object --stdin-paths) <$name.written >$name.have &&
	sed "s/^/other:/" $name.written | git -C src cat-file --batch-check="%(objectname)" >$name.want &&
	test_cmp $name.want $name.have &&
	test_path_is_missing $name/gone &&
	finish_like_git $name
}

# 3 answered per helper: f04..f22 and f26..f40, new/n1..n4 are not written.
test_expect_success 'a helper killed by SIGKILL mid-batch' '
	helper_fault kill sigkill 38 "^error: checkout helper [01] died of signal 9$"
'

test_expect_success 'a helper killed half-way through writing a file: no half file is left' '
	helper_fault half sigkill-mid-write 38 "^error: checkout helper [01] died of signal 9$"
'

test_expect_success 'a helper that exits 0 early, without a flush' '
	helper_fault exit exit 38 "^error: checkout helper [01] ended its output before answering 19 items$"
'

test_expect_success 'a helper that exits 0 before reading anything' '
	helper_fault start exit-at-start 44 "^error: checkout helper [01] "
'

test_expect_success 'a helper that flushes early: items unanswered' '
	helper_fault flush early-flush 38 "^error: checkout helper [01] finished with 19 items unanswered$"
'

test_expect_success 'a helper that answers garbage: no pkt-line' '
	helper_fault noise noise some "^error: checkout helper [01]: protocol error: bad line length"
'

test_expect_success 'a helper that answers garbage: a result for the wrong item' '
	helper_fault wrong wrong-id 38 "^error: unexpected item id from checkout helper [01] (got 4, exp 3)$"
'

test_expect_success 'a helper that answers garbage: a short result' '
	helper_fault short short 38 "^error: checkout helper [01]: too short result"
'

test_expect_success 'index.lock held: git'"'"'s message and 128 for a switch, --all and a restore' '
	rm -rf locked locked.git && git clone -q src locked && git clone -q src locked.git &&
	echo "somebody else" >locked/.git/index.lock &&
	echo "somebody else" >locked.git/.git/index.lock &&
	add_user_data locked && worktree_manifest locked >locked.before &&
	cp locked/.git/index index.before &&
	for cmd in "other" "--all -f -u" "-- f01" "origin/other -- f01"
	do
		{ git -C locked parallel-checkout -j 2 --threshold 0 $cmd 2>err.ours; echo $? >rc.ours; } &&
		case "$cmd" in
		--all*) gitcmd="checkout-index -a -f -u" ;;
		*) gitcmd="checkout $cmd" ;;
		esac &&
		{ git -C locked.git $gitcmd 2>err.git; echo $? >rc.git; } &&
		echo 128 >expect && test_cmp expect rc.ours && test_cmp rc.git rc.ours &&
		sed "s/locked\.git/locked/" err.git >expect &&
		test_cmp expect err.ours || return 1
	done &&
	test_grep "^fatal: Unable to create .*/locked/.git/index.lock.: File exists.$" err.ours &&
	echo "somebody else" >expect && test_cmp expect locked/.git/index.lock &&
	worktree_manifest locked >locked.after && test_cmp locked.before locked.after &&
	cmp index.before locked/.git/index
'

test_expect_success 'the index cannot be written (file size limit): old index, no lock, re-run' '
	rm -rf fsz && git clone -q src fsz && add_user_data fsz && snapshot fsz &&
	test $(wc -c <fsz/.git/index) -gt 2048 &&
	{ (ulimit -f 2 && git -C fsz parallel-checkout -j 2 --threshold 0 other 2>fsz.err); echo $? >fsz.rc; } &&
	echo 128 >expect && test_cmp expect fsz.rc &&
	echo "fatal: unable to write new index file" >expect && test_cmp expect fsz.err &&
	unchanged fsz &&
	finish_like_git fsz
'

# main -> other in src2: 30 small files rewritten, sub/changed rewritten,
# sub/gone removed, sub/new added, big (3 MB, by a helper) and big-filtered
# (3 MB, through a smudge filter: written by the coordinator) added.
test_expect_success MOUNT 'setup: a repository with big files' '
	git init -q src2 &&
	(
		cd src2 &&
		for i in $(seq 1 30); do echo "a $i" >a$i || return 1; done &&
		mkdir sub && echo c >sub/changed && echo g >sub/gone && echo k >sub/keep &&
		echo keep >keep &&
		git add . && git commit -qm main &&
		git checkout -q -b other &&
		for i in $(seq 1 30); do echo "b $i" >a$i || return 1; done &&
		echo c2 >sub/changed && git rm -q sub/gone && echo n >sub/new &&
		head -c 3000000 /dev/zero >big &&
		head -c 3000000 /dev/zero | tr "\0" y >big-filtered &&
		echo "big-filtered filter=cat" >.gitattributes &&
		git add . && git commit -qm other &&
		git checkout -q main &&
		git repack -qad
	)
'

# src2_like_git <dir>: a re-run of the switch to other completes, with
# git's result (a twin switched by git checkout) and the user's data intact.
src2_like_git() {
	git -C "$1" parallel-checkout -q -j 2 --threshold 0 other &&
	rm -rf "$1.git" && git clone -q src2 "$1.git" && add_user_data "$1.git" &&
	if test -f "$1/sub/mine"; then cp "$1/sub/mine" "$1.git/sub/mine"; fi &&
	git -C "$1.git" -c filter.cat.smudge=cat checkout -q other &&
	test_cmp_worktrees "$1" "$1.git" &&
	test_cmp_index "$1" "$1.git" &&
	user_data "$1" >"$1.user.final" &&
	test_cmp "$1.user.before" "$1.user.final"
}

# Mounts live outside the trash directory (mktemp -d), so that one left
# behind by a killed run can never stop the trash directory's removal.
for W in 1 2
do
	test_expect_success MOUNT "disk full (ENOSPC) with -j $W: both big files named and absent" '
		m=$(mktemp -d "${TMPDIR:-/tmp}/t2086-full.XXXXXX") &&
		mount -t tmpfs -o size=1m tmpfs "$m" &&
		test_when_finished "umount \"$m\" 2>/dev/null; rmdir \"$m\"" &&
		git clone -q --template= src2 "$m/wt" &&
		git -C "$m/wt" config filter.cat.smudge cat &&
		add_user_data "$m/wt" && snapshot "$m/wt" &&
		{ git -C "$m/wt" parallel-checkout -j $W --threshold 0 other 2>err.full$W; echo $? >rc; } &&
		echo 1 >expect && test_cmp expect rc &&
		test_grep "^error: unable to create file .big-filtered.: No space left on device$" err.full$W &&
		test_grep "^error: unable to write file .*big.: No space left on device$" err.full$W &&
		test_path_is_missing "$m/wt/big" &&
		test_path_is_missing "$m/wt/big-filtered" &&
		unchanged "$m/wt" &&
		mount -o remount,size=16m "$m" &&
		git -C "$m/wt" parallel-checkout -q -j $W --threshold 0 other &&
		git -C "$m/wt" status --porcelain >status &&
		printf " M keep\n?? mine.txt\n" >expect && test_cmp expect status &&
		user_data "$m/wt" >after && test_cmp "$m/wt.user.before" after
	'
done

test_expect_success MOUNT 'a read-only directory: its three paths named, nothing else lost' '
	m=$(mktemp -d "${TMPDIR:-/tmp}/t2086-ro.XXXXXX") &&
	test_when_finished "umount \"$m/ro/sub\" 2>/dev/null; rm -rf \"$m\"" &&
	git clone -q src2 "$m/ro" && git -C "$m/ro" config filter.cat.smudge cat &&
	add_user_data "$m/ro" && echo "mine too" >"$m/ro/sub/mine" && snapshot "$m/ro" &&
	(cd "$m/ro/sub" && sha1sum *) >sub.before &&
	mount --bind "$m/ro/sub" "$m/ro/sub" &&
	mount -o remount,bind,ro "$m/ro/sub" &&
	{ git -C "$m/ro" parallel-checkout -j 2 --threshold 0 other 2>err; echo $? >rc; } &&
	echo 1 >expect && test_cmp expect rc &&
	cat >expect <<-\EOF &&
	error: unable to unlink '"'"'sub/gone'"'"': Read-only file system
	error: unable to prepare '"'"'sub/changed'"'"': Read-only file system
	error: failed to open file '"'"'sub/new'"'"': Read-only file system
	EOF
	grep -F -f expect err >named && test_cmp expect named &&
	(cd "$m/ro/sub" && sha1sum *) >sub.after && test_cmp sub.before sub.after &&
	unchanged "$m/ro" &&
	umount "$m/ro/sub" &&
	src2_like_git "$m/ro" &&
	echo "mine too" >expect && test_cmp expect "$m/ro/sub/mine"
'

# Every kind of transition, each with a local change or an untracked file
# in its way: refused like git (same stderr, same exit code), nothing
# touched; with -f the same result as git -f.
test_expect_success SYMLINKS 'setup: transitions' '
	git init -q tr &&
	(
		cd tr &&
		echo f2d >f2d && mkdir d2f && echo a >d2f/a && echo b >d2f/b &&
		echo f2l >f2l && ln -s f2d l2f && echo upper >A && echo same >same &&
		git add . && git commit -qm main &&
		git checkout -q -b other &&
		git rm -q f2d && mkdir f2d && echo x >f2d/x &&
		git rm -rq d2f && echo nowfile >d2f &&
		git rm -q f2l && ln -s same f2l &&
		git rm -q l2f && echo "was a link" >l2f &&
		git mv A a && echo added >added &&
		git add . && git commit -qm other &&
		git checkout -q main
	)
'

# refused <name> <script> [-f]: the same refusal as git, and every byte as
# it was; with -f, then the same forced switch as git -f.
refused() {
	local name=$1 script=$2 force=$3
	rm -rf $name.ours $name.git &&
	git clone -q tr $name.ours && git clone -q tr $name.git &&
	for d in $name.ours $name.git
	do
		(cd $d && eval "$script") || return 1
	done &&
	worktree_manifest $name.ours >$name.before &&
	cp $name.ours/.git/index $name.index &&
	{ git -C $name.ours parallel-checkout -j 2 --threshold 0 other 2>err.ours; echo $? >rc.ours; } &&
	{ git -C $name.git checkout other 2>err.git; echo $? >rc.git; } &&
	test_cmp rc.git rc.ours && echo 1 >expect && test_cmp expect rc.ours &&
	test_cmp err.git err.ours &&
	worktree_manifest $name.ours >$name.after &&
	test_cmp $name.before $name.after &&
	cmp $name.index $name.ours/.git/index &&
	test_path_is_missing $name.ours/.git/index.lock &&
	if test -z "$force"; then return 0; fi &&
	git -C $name.ours parallel-checkout -q -f other &&
	git -C $name.git checkout -q -f other &&
	test_cmp_worktrees $name.ours $name.git &&
	test_cmp_index $name.ours $name.git
}

test_expect_success SYMLINKS 'file -> directory: a modified file' '
	refused t1 "echo mine >>f2d"
'

test_expect_success SYMLINKS 'directory -> file: a modified file and an untracked one in it' '
	refused t2 "echo mine >>d2f/a && echo mine >d2f/untracked"
'

test_expect_success SYMLINKS 'file -> symlink: a modified file' '
	refused t3 "echo mine >>f2l"
'

test_expect_success SYMLINKS 'file -> symlink: the file replaced by a directory of untracked files' '
	refused t4 "rm f2l && mkdir f2l && echo mine >f2l/data"
'

test_expect_success SYMLINKS 'symlink -> file: the link pointed elsewhere' '
	refused t5 "rm l2f && ln -s mine l2f"
'

test_expect_success SYMLINKS 'symlink -> file: the link replaced by a file' '
	refused t6 "rm l2f && echo mine >l2f"
'

test_expect_success SYMLINKS 'case-only rename A -> a: A modified, an untracked a' '
	refused t7 "echo mine >>A" &&
	refused t8 "echo mine >a"
'

test_expect_success SYMLINKS 'everything at once; then -f as git -f' '
	refused t9 "echo m >>f2d && echo m >d2f/u && echo m >>f2l && rm l2f && ln -s m l2f &&
		echo m >>A && echo m >a && echo m >added" -f
'

# Limits: more helpers than make sense are clamped to 64 (with a warning),
# and the coordinator's descriptors stay bounded (two pipes per helper).
test_expect_success 'setup: 100 files' '
	git init -q many &&
	(
		cd many &&
		for i in $(seq 1 100); do echo "$i" >f$i || return 1; done &&
		git add . && git commit -qm one &&
		git checkout -q -b other &&
		for i in $(seq 1 100); do echo "other $i" >f$i || return 1; done &&
		git commit -qam two &&
		git checkout -q main
	) &&
	git clone -q many many.git && git -C many.git checkout -q other
'

for how in "-c checkout.workers=200:" ":-j 500"
do
	test_expect_success "${how%:*}${how#*:}: clamped to 64 helpers, descriptors bounded" '
		rm -rf lim fd.log && git clone -q many lim &&
		{ FD_PROBE_LOG="$PWD/fd.log" git ${how%:*} -C lim parallel-checkout ${how#*:} --threshold 0 \
			--helper-cmd "$TEST_DIRECTORY/helper/fd-probe-helper" other 2>err; echo $? >rc; } &&
		echo 0 >expect && test_cmp expect rc &&
		n=${how#*:}; n=${n#-j }; n=${n:-200} &&
		echo "warning: checkout.workers=$n is more than 64; using 64" >expect &&
		grep "^warning" err >actual && test_cmp expect actual &&
		test_line_count = 64 fd.log &&
		max=$(cut -d" " -f2 fd.log | sort -n | tail -1) &&
		echo "max coordinator descriptors: $max" &&
		test $max -le $((2 * 64 + 24)) &&
		test_cmp_worktrees lim many.git &&
		test_cmp_index lim many.git
	'
done

test_expect_success '-j 500 with our own (forked) helpers: no crash, the same result' '
	rm -rf lim2 && git clone -q many lim2 &&
	git -C lim2 parallel-checkout -j 500 --threshold 0 other 2>err &&
	test_grep "^warning: checkout.workers=500 is more than 64; using 64$" err &&
	test_cmp_worktrees lim2 many.git &&
	test_cmp_index lim2 many.git
'

test_done
