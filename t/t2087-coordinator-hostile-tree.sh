#!/usr/bin/env bash
test_description='coordinator and hostile trees: paths git'"'"'s verify_path refuses (../x, .git/x
in any spelling, a symlinked .gitmodules) are refused whole, before anything is touched,
as git does; a name that is both a file and a directory is refused; symlinks in one
commit never let a later commit write outside the work tree or into .git. Trees are
made with git mktree, which (unlike git fsck) accepts them.'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-coordinator.sh"

# state <dir>...: every file below each <dir> (.git included): type, size,
# content hash or link target, and mtime in ns, so "untouched" means untouched
# (a .git directory's own mtime aside: taking index.lock changes it).
state() {
	"$PYTHON" - "$@" <<-\PY
	import hashlib, os, stat, sys
	for top in sys.argv[1:]:
	    for root, dirs, files in os.walk(top):
	        dirs.sort()
	        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
	            p = os.path.join(root, name)
	            st = os.lstat(p)
	            if stat.S_ISLNK(st.st_mode):
	                what = "-> " + os.readlink(p)
	            else:
	                with open(p, "rb") as f:
	                    what = "%d %s" % (st.st_size, hashlib.sha1(f.read()).hexdigest())
	            print(p, "%o" % st.st_mode, what, st.st_mtime_ns)
	        for d in dirs:
	            p = os.path.join(root, d)
	            if not os.path.islink(p):
	                print(p + "/", os.lstat(p).st_mtime_ns if d != ".git" else "")
	PY
}

# mk <tree lines>: printf its arguments into git mktree (in h).
mk() {
	printf "$@" | git -C h mktree
}

test_expect_success SYMLINKS 'setup: a repository, hostile commits, files outside' '
	mkdir outside && echo precious >outside/file && echo precious >escape &&
	mkdir -p outside2/sub &&
	git init -q h &&
	(cd h && echo ok >ok && echo keep >keep && git add . && git commit -qm main) &&
	B=$(echo evil | git -C h hash-object -w --stdin) &&
	L=$(printf "%s" "$TRASH_DIRECTORY/outside" | git -C h hash-object -w --stdin) &&
	G=$(printf .git/hooks | git -C h hash-object -w --stdin) &&
	D=$(printf .git | git -C h hash-object -w --stdin) &&
	F=$(printf ../outside/file | git -C h hash-object -w --stdin) &&
	E=$(mk "100644 blob $B\tescape\n") &&
	C=$(mk "100644 blob $B\tconfig\n") &&
	H=$(mk "100755 blob $B\tpost-checkout\n") &&
	HK=$(mk "040000 tree $H\thooks\n") &&
	OK="100644 blob $(git -C h rev-parse HEAD:ok)\tok\n" &&
	branch() {
		git -C h branch -f "$1" $(git -C h commit-tree "$2" -p main -m "$1")
	} &&
	branch dotdot $(mk "040000 tree $E\t..\n$OK") &&
	branch dotgit $(mk "040000 tree $HK\t.git\n$OK") &&
	branch DOTGIT $(mk "040000 tree $C\t.GIT\n$OK") &&
	branch dotGit $(mk "040000 tree $C\t.Git\n$OK") &&
	branch ntfs-short $(mk "040000 tree $C\tgit~1\n$OK") &&
	branch ntfs-dot $(mk "040000 tree $C\t.git.\n$OK") &&
	branch ntfs-space $(mk "040000 tree $C\t.git \n$OK") &&
	branch gitmodules-link $(mk "120000 blob $L\t.gitmodules\n$OK") &&
	branch both $(mk "120000 blob $L\td\n040000 tree $(mk "100644 blob $B\tfile\n")\td\n$OK") &&
	branch link-out $(mk "120000 blob $L\td\n120000 blob $F\tf\n$OK") &&
	branch through $(mk "040000 tree $(mk "100644 blob $B\tfile\n")\td\n100644 blob $B\tf\n$OK") &&
	branch link-git $(mk "120000 blob $D\tx\n120000 blob $G\ta\n$OK") &&
	branch into-git $(mk "040000 tree $HK\tx\n040000 tree $H\tA\n$OK") &&
	git -C h ls-tree -r both >both.ls &&
	test_line_count = 3 both.ls
'

# refused_like_git <name> <command...>: ours and git, each in its clone of h
# (the same two every time: a refusal changes nothing, as checked), run
# `checkout <command...>`: the same exit code and stderr, and ours changed
# nothing in its clone (.git included) or outside.
refused_like_git() {
	local name=$1
	shift
	if ! test -d r.ours
	then
		git clone -q h r.ours && git clone -q h r.git
	fi &&
	state r.ours outside outside2 >$name.before &&
	{ cat escape 2>/dev/null || echo absent; } >escape.before &&
	{ git -C r.ours parallel-checkout -j 2 --threshold 0 "$@" >out.ours 2>err.ours; echo $? >rc.ours; } &&
	{ git -C r.git checkout "$@" >out.git 2>err.git; echo $? >rc.git; } &&
	test_cmp rc.git rc.ours &&
	test_cmp err.git err.ours &&
	state r.ours outside outside2 >$name.after &&
	test_cmp $name.before $name.after &&
	{ cat escape 2>/dev/null || echo absent; } >escape.after &&
	test_cmp escape.before escape.after
}

# (../escape is moved aside for the comparison: where it exists, git looks
# at it and calls it an untracked file in the way; we never look outside.)
for b in dotdot dotgit DOTGIT dotGit ntfs-short ntfs-dot ntfs-space gitmodules-link
do
	test_expect_success SYMLINKS "$b: refused whole, as git, nothing touched" '
		mv escape escape.saved &&
		test_when_finished "mv escape.saved escape" &&
		refused_like_git $b origin/$b &&
		echo 1 >expect && test_cmp expect rc.ours &&
		test_grep "^error: invalid path " err.ours
	'
done

test_expect_success SYMLINKS 'with -f: refused too, with git'"'"'s 128' '
	mv escape escape.saved &&
	test_when_finished "mv escape.saved escape" &&
	refused_like_git force -f origin/dotgit &&
	refused_like_git force2 -f origin/dotdot &&
	echo 128 >expect && test_cmp expect rc.ours
'

# With core.protectNTFS=false git checks out git~1 and .git. (only .git in
# any case stays refused); the items are verified once, with that setting,
# whether written by helpers or sequentially by the coordinator itself.
for j in 1 2
do
	for b in ntfs-short ntfs-dot
	do
		test_expect_success "core.protectNTFS=false: $b checked out as git does it, -j $j" '
			twins h ntfs$j$b &&
			git -C ntfs$j$b.ours config core.protectNTFS false &&
			git -C ntfs$j$b.git config core.protectNTFS false &&
			git -C ntfs$j$b.ours parallel-checkout -j $j --threshold 0 origin/$b >out.ours 2>err.ours &&
			git -C ntfs$j$b.git -c checkout.workers=$j -c checkout.thresholdForParallelism=0 \
				checkout origin/$b >out.git 2>err.git &&
			test_cmp err.git err.ours &&
			test_cmp_worktrees ntfs$j$b.ours ntfs$j$b.git &&
			test_cmp_index ntfs$j$b.ours ntfs$j$b.git &&
			git -C ntfs$j$b.ours ls-files >files &&
			test_grep "/config$" files &&
			verify_clean ntfs$j$b.ours
		'
	done
done

test_expect_success SYMLINKS '../escape exists: refused as an invalid path, never looked at' '
	rm -rf esc && git clone -q h esc &&
	state esc outside >before && cat escape >escape.before &&
	for f in "" -f
	do
		{ git -C esc parallel-checkout $f -j 2 --threshold 0 origin/dotdot 2>err; echo $? >rc; } &&
		test_must_fail test "$(cat rc)" = 0 &&
		echo "error: invalid path '"'"'../escape'"'"'" >expect &&
		test_cmp expect err || return 1
	done &&
	state esc outside >after && test_cmp before after && test_cmp escape.before escape
'

# git restores the valid paths and exits 0 after its error; we refuse all.
test_expect_success SYMLINKS 'a restore from a hostile tree: refused whole, nothing touched' '
	rm -rf rst && git clone -q h rst &&
	echo local >rst/ok &&
	state rst outside outside2 >before && cat escape >escape.before &&
	for b in dotgit dotdot ntfs-short gitmodules-link
	do
		{ git -C rst parallel-checkout origin/$b -- . 2>err; echo $? >rc; } &&
		echo 1 >expect && test_cmp expect rc &&
		test_grep "^error: invalid path " err || return 1
	done &&
	state rst outside outside2 >after && test_cmp before after &&
	test_cmp escape.before escape
'

test_expect_success SYMLINKS 'clone of a hostile branch: refused, nothing written' '
	state outside outside2 >before &&
	test_must_fail git parallel-clone -q -j 2 --threshold 0 -b dotgit h hc 2>err &&
	test_grep "^error: invalid path .\.git/hooks/post-checkout.$" err &&
	ls -A hc >listing && echo .git >expect && test_cmp expect listing &&
	test_path_is_missing hc/.git/hooks/post-checkout &&
	test_must_fail git parallel-clone -q -b dotdot h hc2 &&
	state outside outside2 >after && test_cmp before after &&
	echo precious >expect && test_cmp expect escape
'

test_expect_success SYMLINKS 'a symlink d and a file d/file in one tree: refused, nothing written' '
	rm -rf both && git clone -q h both &&
	state both outside >before &&
	{ git -C both parallel-checkout -j 2 --threshold 0 origin/both 2>err; echo $? >rc; } &&
	echo 1 >expect && test_cmp expect rc &&
	echo "error: invalid tree: '"'"'d'"'"' is both a file and a directory" >expect &&
	test_cmp expect err &&
	{ git -C both parallel-checkout -f origin/both 2>err; echo $? >rc; } &&
	echo 128 >expect && test_cmp expect rc &&
	test_must_fail git parallel-clone -q -b both h both-clone &&
	state both outside >after && test_cmp before after &&
	test_path_is_missing both-clone/d
'

# A hostile index (written with our own index writer: git refuses to make
# one): ../escape and .git/x entries must be neither removed nor written.
test_expect_success SYMLINKS 'a hostile index: nothing removed or written outside or in .git' '
	rm -rf hi && git clone -q h hi &&
	"$PYTHON" - hi <<-\PY &&
	import os, sys
	sys.path.insert(0, os.environ["PROJECT_ROOT"])
	from git_checkout_helper.index import Entry
	from git_checkout_helper.index_file import serialize_index_file
	from git_checkout_helper.index_state import read_index_state
	from dulwich.object_format import DEFAULT_OBJECT_FORMAT
	path = sys.argv[1] + "/.git/index"
	idx = read_index_state(path, DEFAULT_OBJECT_FORMAT)
	oid = idx.entries[b"ok"].oid
	extra = [Entry(b"../escape", 0o100644, oid), Entry(b".git/config", 0o100644, oid)]
	entries = sorted([*idx.entries.values(), *extra], key=lambda e: e.name)
	open(path, "wb").write(serialize_index_file(2, entries, []))
	PY
	git -C hi ls-files >ls && test_grep "^\.\./escape$" ls &&
	state hi outside >before && cat escape >escape.before &&
	{ git -C hi parallel-checkout -f main 2>err; echo $? >rc; } &&
	echo 1 >expect && test_cmp expect rc &&
	test_grep "^error: invalid path .\.\./escape.$" err &&
	{ git -C hi parallel-checkout -j 2 --threshold 0 --all -f 2>err; echo $? >rc; } &&
	echo 1 >expect && test_cmp expect rc &&
	test_grep "^error: invalid path .\.git/config.$" err &&
	{ git -C hi parallel-checkout -- . 2>err; echo $? >rc; } &&
	echo 1 >expect && test_cmp expect rc &&
	state hi outside >after && test_cmp before after &&
	test_cmp escape.before escape
'

# switch_like_git <name> <branch>...: ours and git switch a fresh clone
# through the branches in turn: same results each time, nothing outside or
# in .git/hooks and .git/config touched.
switch_like_git() {
	local name=$1
	shift
	rm -rf $name.ours $name.git &&
	git clone -q h $name.ours && git clone -q h $name.git &&
	state outside outside2 $name.ours/.git/hooks >$name.before &&
	cp $name.ours/.git/config $name.config &&
	for b in "$@"
	do
		git -C $name.ours parallel-checkout -q -j 2 --threshold 0 $b &&
		git -C $name.git checkout -q $b &&
		test_cmp_worktrees $name.ours $name.git &&
		test_cmp_index $name.ours $name.git || return 1
	done &&
	state outside outside2 $name.ours/.git/hooks >$name.after &&
	test_cmp $name.before $name.after &&
	test_cmp $name.config $name.ours/.git/config &&
	echo precious >expect && test_cmp expect escape
}

test_expect_success SYMLINKS 'symlinks d -> outside, f -> ../outside/file, then d/file and f: replaced, not followed' '
	switch_like_git later origin/link-out origin/through origin/link-out main &&
	test_path_is_missing outside/f
'

test_expect_success SYMLINKS 'symlinks x -> .git, a -> .git/hooks, then x/hooks/post-checkout and A/: not into .git' '
	switch_like_git git-later origin/link-git origin/into-git origin/link-git origin/into-git &&
	test_path_is_missing git-later.ours/.git/hooks/post-checkout &&
	test_path_is_file git-later.ours/x/hooks/post-checkout
'

test_expect_success SYMLINKS 'a leaving file under a directory the user made a symlink: no rmdir outside' '
	git init -q rm-link &&
	(
		cd rm-link &&
		mkdir -p d/sub && echo x >d/sub/file && echo k >k &&
		git add . && git commit -qm one &&
		git checkout -q -b gone && git rm -q d/sub/file && git commit -qm gone &&
		git checkout -q main &&
		rm -rf d && ln -s "$TRASH_DIRECTORY/outside2" d
	) &&
	cp -R -P rm-link rm-link.git &&
	state outside2 >before &&
	git -C rm-link parallel-checkout -q -j 2 --threshold 0 -f gone &&
	git -C rm-link.git checkout -q -f gone &&
	state outside2 >after && test_cmp before after &&
	test_path_is_dir outside2/sub &&
	test_cmp_worktrees rm-link rm-link.git
'

test_done
