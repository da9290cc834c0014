#!/usr/bin/env bash
test_description='coordinator: branch switches across every type transition (git t2080 matrix)

file, symlink, submodule (gitlink) and directory at each path on either side,
changed and unchanged entries, with unpopulated and populated submodules;
each switch is compared with git checkout in a twin.'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-coordinator.sh"

# The branches B1 and B2 have the following paths (as in git's t2080):
#
#      B1                 B2
#  a/a (file)         a   (file)
#  b   (file)         b/b (file)
#  c/c (file)         c   (symlink)
#  d   (symlink)      d/d (file)
#  e/e (file)         e   (submodule)
#  f   (submodule)    f/f (file)
#  g   (submodule)    g   (symlink)
#  h   (symlink)      h   (submodule)
#  i   (file)         i   (file, changed)
#  j   (symlink)      j   (symlink, changed)
#  k   (submodule)    k   (submodule, changed)
#  l/l (file)         -
#  -                  m/m (file)
# and on both, unchanged: n (file), o/o (file), p (symlink), q (submodule),
# x (executable), r (file) -> r (executable) and back.
test_expect_success 'setup: submodule repository and the two branches' '
	git init -q sub &&
	(
		cd sub &&
		git checkout -q -b B2 &&
		echo B2 >file && git add file && git commit -qm file &&
		git checkout -q -b B1 &&
		echo B1 >file && git add file && git commit -qm file
	) &&
	git init -q various &&
	(
		cd various &&
		git checkout -q -b B1 &&
		mkdir a c e o &&
		echo a/a >a/a && echo b >b && echo c/c >c/c && ln -s c d &&
		echo e/e >e/e &&
		git submodule add -q ../sub f &&
		git submodule add -q ../sub g &&
		ln -s c h &&
		echo "B1 i" >i && ln -s c j &&
		git submodule add -q -b B1 ../sub k &&
		mkdir l && echo l/l >l/l &&
		echo n >n && echo o/o >o/o && ln -s n p &&
		git submodule add -q ../sub q &&
		printf "#!/bin/sh\n" >x && chmod +x x && echo r >r &&
		git add . && git commit -qm B1 &&

		git checkout -q -b B2 &&
		git rm -rqf :^.gitmodules :^k :^n :^o :^p :^q :^x :^r &&
		mkdir b d f &&
		echo a >a && echo b/b >b/b && ln -s b c && echo d/d >d/d &&
		git submodule add -q ../sub e &&
		echo f/f >f/f && ln -s b g &&
		git submodule add -q ../sub h &&
		echo "B2 i" >i && ln -s b j &&
		git -C k checkout -q B2 &&
		mkdir m && echo m/m >m/m &&
		chmod +x r &&
		git add . && git commit -qm B2 &&
		git checkout -q --recurse-submodules B1
	) &&
	git -C various ls-tree -r B1 >b1 && git -C various ls-tree -r B2 >b2 &&
	test_grep "^160000 commit .*	f$" b1 && test_grep "^160000 commit .*	e$" b2 &&
	test_grep "^120000 blob .*	c$" b2 && test_grep "^100755 blob .*	r$" b2
'

for W in 1 2 4
do
	if test $W = 1; then H=0; else H=$W; fi

	test_expect_success "-j $W, unpopulated submodules: B1 -> B2 -> B1 as git" '
		twins various up$W &&
		for b in B2 B1
		do
			test_checkout_helpers $H git -C up$W.ours parallel-checkout -j $W --threshold 0 \
				$b >out.ours 2>err.ours &&
			git -C up$W.git checkout $b >out.git 2>err.git &&
			test_cmp err.git err.ours &&
			test_cmp out.git out.ours &&
			test_cmp_worktrees up$W.ours up$W.git &&
			test_cmp_index up$W.ours up$W.git &&
			verify_clean up$W.ours || return 1
		done
	'

	test_expect_success "-j $W, populated submodules: B1 -> B2 -> B1 as git" '
		for d in pop$W.ours pop$W.git
		do
			rm -rf $d && cp -R -P various $d &&
			git -C $d submodule foreach -q "git update-index --refresh" || return 1
		done &&
		for b in B2 B1
		do
			test_checkout_helpers $H git -C pop$W.ours parallel-checkout -j $W --threshold 0 \
				$b >out.ours 2>err.ours &&
			git -C pop$W.git checkout $b >out.git 2>err.git &&
			test_cmp err.git err.ours &&
			test_cmp out.git out.ours &&
			test_cmp_worktrees pop$W.ours pop$W.git &&
			test_cmp_index pop$W.ours pop$W.git &&
			git -C pop$W.ours diff-index --cached --quiet HEAD &&
			git -C pop$W.ours status --porcelain >st.ours &&
			git -C pop$W.git status --porcelain >st.git &&
			test_cmp st.git st.ours || return 1
		done
	'

	test_expect_success "-j $W: clone of B2 as git clone --branch B2" '
		rm -rf cl$W.ours cl$W.git &&
		test_checkout_helpers $H git parallel-clone -q -j $W --threshold 0 -b B2 various cl$W.ours &&
		git clone -q -b B2 various cl$W.git &&
		test_cmp_worktrees cl$W.ours cl$W.git &&
		test_cmp_index cl$W.ours cl$W.git &&
		verify_clean cl$W.ours
	'
done

test_expect_success 'local type changes: no-force keeps them, --force restores (git t2080)' '
	git init -q dirty &&
	(
		cd dirty &&
		mkdir D && echo D/F >D/F.t && echo F >F.t &&
		git add . && git commit -qm one &&
		rm -rf D && echo changed >D && echo changed >F.t
	) &&
	cp -R -P dirty dirty.git &&
	test_checkout_helpers 0 git -C dirty parallel-checkout -j 2 --threshold 0 HEAD >out.ours 2>err.ours &&
	git -C dirty.git checkout HEAD >out.git 2>err.git &&
	test_cmp out.git out.ours &&
	test_cmp err.git err.ours &&
	test_grep "^D	D/F.t$" out.ours &&
	test_grep "^M	F.t$" out.ours &&
	test_cmp_worktrees dirty dirty.git &&
	test_path_is_file dirty/D &&
	test_checkout_helpers 2 git -C dirty parallel-checkout -j 2 --threshold 0 -f HEAD &&
	git -C dirty.git checkout -f HEAD &&
	test_cmp_worktrees dirty dirty.git &&
	test_path_is_dir dirty/D &&
	verify_clean dirty
'

test_expect_success SYMLINKS 'a symlinked leading directory is replaced, not followed (git t2080)' '
	git init -q symlinks &&
	(
		cd symlinks &&
		mkdir D untracked &&
		echo A >D/A.t && echo B >D/B.t &&
		git add D && git commit -qm two &&
		rm -rf D && ln -s untracked D
	) &&
	test_checkout_helpers 2 git -C symlinks parallel-checkout -j 2 --threshold 0 -f HEAD &&
	! test -h symlinks/D &&
	echo A >expect && test_cmp expect symlinks/D/A.t &&
	ls symlinks/untracked >untracked &&
	test_must_be_empty untracked &&
	verify_clean symlinks
'

test_expect_success SYMLINKS 'a leaving file is not removed through a symlinked directory' '
	git init -q leave &&
	(
		cd leave &&
		mkdir D outside &&
		echo A >D/A && echo keep >outside/A &&
		git add D && git commit -qm A &&
		git checkout -q -b gone && git rm -q D/A && git commit -qm gone &&
		git checkout -q main &&
		rm -rf D && ln -s outside D
	) &&
	cp -R -P leave leave.git &&
	git -C leave parallel-checkout -j 2 --threshold 0 -f gone &&
	git -C leave.git checkout -f gone &&
	echo keep >expect &&
	test_cmp expect leave/outside/A &&
	test_cmp_worktrees leave leave.git
'

test_done
