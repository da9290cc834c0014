#!/usr/bin/env bash
test_description='--recurse-submodules and submodule.recurse: submodules moved as git moves
them (twins against git checkout), nested ones too, and the two places we keep a
file or a change that git loses'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-coordinator.sh"

# inner: i1, i2.  subsrc: s1 (f, k), s2 (f changed, g added), s3 (s2 + inner
# at i1), s4 (inner at i2).  super: A (sub at s1), B (s2), C (no sub),
# D (s3), E (s4); checked out at A with the submodule populated.
test_expect_success 'setup' '
	git config --global protocol.file.allow always &&
	git init -q inner &&
	echo i1 >inner/i && git -C inner add i && git -C inner commit -qm i1 && git -C inner tag i1 &&
	echo i2 >inner/i && git -C inner commit -qam i2 && git -C inner tag i2 &&
	git init -q subsrc &&
	(
		cd subsrc &&
		echo one >f && echo keep >k && git add . && git commit -qm s1 && git tag s1 &&
		echo two >f && echo new >g && git add . && git commit -qm s2 && git tag s2 &&
		git submodule add -q ../inner inner && git -C inner checkout -q i1 &&
		git add inner && git commit -qm s3 && git tag s3 &&
		git -C inner checkout -q i2 && git add inner && git commit -qm s4 && git tag s4
	) &&
	git init -q super &&
	(
		cd super &&
		echo top >t && git add t && git commit -qm base &&
		git submodule add -q ../subsrc sub &&
		for c in s1:A s2:B s3:D s4:E
		do
			git -C sub checkout -q ${c%:*} && git add sub && git commit -qm ${c#*:} &&
			git branch ${c#*:} || return 1
		done &&
		git checkout -q -b C A && git rm -qf sub && git commit -qm C &&
		git checkout -q A && git submodule update -q --init --recursive &&
		git -C sub status >/dev/null &&
		# F: sub is a file; G: sub is a directory of files (.gitmodules kept)
		blob=$(echo file | git hash-object -w --stdin) &&
		for c in F:sub G:sub/x
		do
			GIT_INDEX_FILE=.git/tmp-index git read-tree A &&
			GIT_INDEX_FILE=.git/tmp-index git rm -q --cached sub &&
			GIT_INDEX_FILE=.git/tmp-index git update-index --add --cacheinfo 100644,$blob,${c#*:} &&
			git branch ${c%:*} $(git commit-tree -p A -m ${c%:*} $(GIT_INDEX_FILE=.git/tmp-index git write-tree)) &&
			rm .git/tmp-index || return 1
		done
	)
'

# sub_twins <name> [<branch>]: two copies of super (at <branch>, moved there
# by git with its submodules), stat data refreshed (a copy changes ctimes).
sub_twins() {
	rm -rf "$1.ours" "$1.git" &&
	if test -n "$2"
	then
		git -C super checkout -q --recurse-submodules "$2" &&
		git -C super submodule update -q --init --recursive
	fi &&
	cp -a super "$1.ours" && cp -a super "$1.git" &&
	git -C super checkout -q --recurse-submodules A &&
	for d in "$1.ours" "$1.git"
	do
		git -C $d update-index -q --refresh
		if test -e $d/sub/.git
		then
			git -C $d/sub update-index -q --refresh
			if test -e $d/sub/inner/.git
			then
				git -C $d/sub/inner update-index -q --refresh
			fi
		fi
	done
}

# sub_state <dir>: what a user sees of the superproject and its submodules.
sub_state() {
	worktree_manifest "$1" &&
	git -C "$1" ls-files -s && git -C "$1" status --porcelain && git -C "$1" diff-files &&
	for s in sub sub/inner
	do
		if test -e "$1/$s/.git"
		then
			# (a twin'"'"'s own name in the path of a linked worktree'"'"'s git dir)
			echo "== $s" && sed -e "s/\(lwm\{0,1\}\)\.\(ours\|git\)\//\1.T\//g" "$1/$s/.git" &&
			{ git -C "$1/$s" symbolic-ref -q HEAD || echo detached; } &&
			git -C "$1/$s" rev-parse HEAD && git -C "$1/$s" ls-files -s &&
			git -C "$1/$s" status --porcelain && git -C "$1/$s" diff-files &&
			git -C "$1/$s" reflog -3 --format="%H %gs"
		fi || return 1
	done &&
	for m in .git/modules/sub .git/modules/sub/modules/inner
	do
		if test -d "$1/$m"
		then
			echo "== $m" && git config -f "$1/$m/config" --get core.worktree || echo "(no core.worktree)"
		fi
	done
}

# same_sub_outcome <name> <args...>: `git parallel-checkout <args>` in
# <name>.ours, `git checkout <args>` in <name>.git: same exit code, stdout,
# stderr and state, submodules included.
same_sub_outcome() {
	local name=$1
	shift
	(cd $name.ours && git parallel-checkout "$@" >../$name.out.ours 2>../$name.err.ours; echo $? >../$name.rc.ours) &&
	(cd $name.git && git checkout "$@" >../$name.out.git 2>../$name.err.git; echo $? >../$name.rc.git) &&
	test_cmp $name.err.git $name.err.ours &&
	test_cmp $name.out.git $name.out.ours &&
	test_cmp $name.rc.git $name.rc.ours &&
	sub_state $name.git >$name.state.git &&
	sub_state $name.ours >$name.state.ours &&
	test_cmp $name.state.git $name.state.ours
}

# refused_unchanged <dir> <pattern> <args...>: `git parallel-checkout <args>` in
# <dir> fails with a line matching <pattern>, and nothing of <dir> changed.
refused_unchanged() {
	local dir=$1 pattern=$2
	shift 2
	sub_state $dir >$dir.before &&
	(cd $dir && test_must_fail git parallel-checkout "$@" 2>../$dir.err) &&
	grep "$pattern" $dir.err &&
	sub_state $dir >$dir.after &&
	test_cmp $dir.before $dir.after
}

test_expect_success 'a clean submodule moves with the switch (HEAD detached, empty reflog message)' '
	sub_twins mv &&
	same_sub_outcome mv --recurse-submodules B &&
	echo "detached" >expect && git -C mv.ours/sub rev-parse s2 >>expect &&
	{ git -C mv.ours/sub symbolic-ref -q HEAD || echo detached; } >actual &&
	git -C mv.ours/sub rev-parse HEAD >>actual &&
	test_cmp expect actual &&
	tail -n 1 mv.ours/.git/modules/sub/logs/HEAD >reflog &&
	! grep "	" reflog &&
	same_sub_outcome mv --recurse-submodules A
'

test_expect_success 'submodule.recurse=true does the same; --no-recurse-submodules does not' '
	sub_twins cfg &&
	git -C cfg.ours config submodule.recurse true &&
	git -C cfg.git config submodule.recurse true &&
	same_sub_outcome cfg B &&
	same_sub_outcome cfg --no-recurse-submodules A &&
	git -C cfg.ours/sub rev-parse HEAD >actual &&
	git -C cfg.ours/sub rev-parse s2 >expect &&
	test_cmp expect actual
'

test_expect_success 'the submodule helpers run with the checkout settings of the command line' '
	sub_twins par &&
	(
		cd par.ours &&
		test_checkout_helpers 2 git -c checkout.workers=2 -c checkout.thresholdForParallelism=0 \
			parallel-checkout --recurse-submodules B
	) &&
	git -C par.git checkout -q --recurse-submodules B &&
	sub_state par.git >par.state.git && sub_state par.ours >par.state.ours &&
	test_cmp par.state.git par.state.ours
'

test_expect_success 'a local change to a file the move rewrites: refused as git, nothing touched' '
	sub_twins lc &&
	echo local >lc.ours/sub/f && echo local >lc.git/sub/f &&
	sub_state lc.ours >before &&
	same_sub_outcome lc --recurse-submodules B &&
	grep "not uptodate. Cannot merge" lc.err.ours &&
	sub_state lc.ours >after &&
	test_cmp before after
'

test_expect_success 'a staged change in the submodule (dirty index): refused as git' '
	sub_twins di &&
	for d in di.ours di.git
	do
		echo staged >$d/sub/k && git -C $d/sub add k || return 1
	done &&
	same_sub_outcome di --recurse-submodules B &&
	grep "has dirty index" di.err.ours
'

test_expect_success 'a superproject conflict and a submodule one are reported together, as git groups them' '
	sub_twins both &&
	for d in both.ours both.git
	do
		echo local >$d/sub/f && echo "# mine" >>$d/.gitmodules && git -C $d add .gitmodules || return 1
	done &&
	same_sub_outcome both --recurse-submodules C &&
	grep "^error: Your local changes" both.err.ours &&
	grep "^error: Cannot update submodule:" both.err.ours
'

test_expect_success 'a submodule that leaves is emptied and removed; it comes back from its git dir' '
	sub_twins rm &&
	same_sub_outcome rm --recurse-submodules C &&
	! test -e rm.ours/sub &&
	same_sub_outcome rm --recurse-submodules A &&
	test -f rm.ours/sub/f
'

test_expect_success 'untracked files keep a leaving submodule directory, with git warning' '
	sub_twins ru &&
	echo u >ru.ours/sub/untracked && echo u >ru.git/sub/untracked &&
	same_sub_outcome ru --recurse-submodules C &&
	test -f ru.ours/sub/untracked
'

test_expect_success 'a submodule moved away from its gitlink: the switch takes it to the new one' '
	sub_twins away &&
	git -C away.ours/sub checkout -q s2 && git -C away.git/sub checkout -q s2 &&
	same_sub_outcome away --recurse-submodules B &&
	sub_twins away2 &&
	git -C away2.ours/sub checkout -q s2 && git -C away2.git/sub checkout -q s2 &&
	same_sub_outcome away2 --recurse-submodules C
'

test_expect_success '-f resets a submodule: local changes and its position' '
	sub_twins frc &&
	for d in frc.ours frc.git
	do
		echo local >$d/sub/f && echo x >$d/sub/g && git -C $d/sub checkout -q s2 2>/dev/null
		echo local >$d/sub/k || return 1
	done &&
	same_sub_outcome frc -f --recurse-submodules A &&
	same_sub_outcome frc -f --recurse-submodules B
'

test_expect_success 'an inactive submodule is left alone' '
	sub_twins ina &&
	git -C ina.ours config submodule.sub.active false &&
	git -C ina.git config submodule.sub.active false &&
	same_sub_outcome ina --recurse-submodules B &&
	git -C ina.ours config --unset submodule.sub.active &&
	git -C ina.git config --unset submodule.sub.active &&
	git -C ina.ours config submodule.active "other/*" &&
	git -C ina.git config submodule.active "other/*" &&
	same_sub_outcome ina --recurse-submodules A
'

test_expect_success 'nested submodules move recursively' '
	sub_twins nest D &&
	same_sub_outcome nest --recurse-submodules E &&
	git -C nest.ours/sub/inner rev-parse HEAD >actual &&
	git -C inner rev-parse i2 >expect &&
	test_cmp expect actual &&
	same_sub_outcome nest --recurse-submodules D &&
	same_sub_outcome nest --recurse-submodules B &&
	! test -e nest.ours/sub/inner/i
'

test_expect_success 'a local change in a nested submodule stops the whole switch' '
	sub_twins nlc D &&
	echo local >nlc.ours/sub/inner/i &&
	refused_unchanged nlc.ours "^error: Cannot update submodule:" --recurse-submodules E &&
	grep "sub/inner" nlc.ours.err
'

test_expect_success 'in a linked worktree: the submodule git dir is that worktree'"'"'s own' '
	for t in ours git
	do
		rm -rf lwm.$t lw.$t &&
		git clone -q super lwm.$t && git -C lwm.$t worktree add -q --detach ../lw.$t A 2>/dev/null &&
		git -C lw.$t submodule update -q --init &&
		git -C lw.$t/sub update-index -q --refresh || return 1
	done &&
	test -d lwm.ours/.git/worktrees/lw.ours/modules/sub &&
	same_sub_outcome lw --recurse-submodules B &&
	same_sub_outcome lw --recurse-submodules C &&
	same_sub_outcome lw --recurse-submodules --detach A &&
	git -C lwm.ours status --porcelain >actual &&
	test_must_be_empty actual
'

test_expect_success 'sparse checkout: a submodule inside the patterns moves as git moves it' '
	sub_twins sp &&
	for d in sp.ours sp.git
	do
		git -C $d sparse-checkout set --no-cone /t /sub /.gitmodules || return 1
	done &&
	same_sub_outcome sp --recurse-submodules B
'

test_expect_success 'sparse checkout: a submodule outside the patterns is removed, as git removes it' '
	sub_twins spo &&
	for d in spo.ours spo.git
	do
		git -C $d sparse-checkout set --no-cone /t 2>/dev/null
		git -C $d/sub update-index -q --refresh || return 1
	done &&
	same_sub_outcome spo --recurse-submodules B &&
	! test -e spo.ours/sub
'

test_expect_success 'sparse checkout: ... unless it holds a local change (git loses it; refused here)' '
	sub_twins spl &&
	git -C spl.ours sparse-checkout set --no-cone /t 2>/dev/null
	git -C spl.ours/sub update-index -q --refresh &&
	echo mine >spl.ours/sub/k &&
	refused_unchanged spl.ours "^error: Entry '"'"'sub/k'"'"' not uptodate. Cannot merge." --recurse-submodules B
'

test_expect_success 'a submodule keeping its .git inside: absorbed into the superproject first, as git' '
	git init -q emb &&
	(
		cd emb && echo t >t && git add t && git commit -qm base &&
		git clone -q ../subsrc sub && git -C sub checkout -q s1 &&
		git submodule add -q ../subsrc sub && git commit -qm A && git tag A &&
		git -C sub checkout -q s2 && git add sub && git commit -qm B && git tag B &&
		git checkout -q A && git -C sub checkout -q s1
	) &&
	test -d emb/sub/.git &&
	cp -a emb embt.ours && cp -a emb embt.git &&
	for d in embt.ours embt.git
	do
		git -C $d/sub update-index -q --refresh || return 1
	done &&
	(cd embt.ours && git parallel-checkout --recurse-submodules B >../embt.out.ours 2>../embt.err.ours) &&
	(cd embt.git && git checkout --recurse-submodules B >../embt.out.git 2>../embt.err.git) &&
	sed "s/embt\.ours/embt.T/" embt.err.ours >ours.err &&
	sed "s/embt\.git/embt.T/" embt.err.git >git.err &&
	test_cmp git.err ours.err &&
	test_cmp embt.out.git embt.out.ours &&
	head -n 1 ours.err >actual &&
	echo "Migrating git directory of '"'"'sub'"'"' from" >expect &&
	test_cmp expect actual &&
	sub_state embt.git >state.git && sub_state embt.ours >state.ours &&
	test_cmp state.git state.ours &&
	test -f embt.ours/sub/.git
'

test_expect_success 'a submodule replaced by a file and back, as git (ignored files go with it)' '
	sub_twins sf &&
	echo "*.o" >sf.ours/.git/modules/sub/info/exclude && echo "*.o" >sf.git/.git/modules/sub/info/exclude &&
	echo obj >sf.ours/sub/x.o && echo obj >sf.git/sub/x.o &&
	same_sub_outcome sf --recurse-submodules F &&
	test -f sf.ours/sub &&
	same_sub_outcome sf --recurse-submodules A &&
	test -f sf.ours/sub/.git
'

test_expect_success 'a directory of files where .gitmodules names a submodule: refused as git refuses it' '
	sub_twins sd &&
	for d in sd.ours sd.git
	do
		git -C $d checkout -q --recurse-submodules C && git -C $d checkout -q G || return 1
	done &&
	same_sub_outcome sd --recurse-submodules A &&
	grep "^fatal: not a git repository: '"'"'.git'"'"'" sd.err.ours
'

test_expect_success 'a submodule replaced by a file keeps an untracked file: refused, nothing touched' '
	sub_twins su &&
	echo mine >su.ours/sub/untracked &&
	refused_unchanged su.ours "^error: Untracked working tree file '"'"'sub/untracked'"'"' would be removed by merge." \
		--recurse-submodules F
'

test_expect_success 'checkout.submoduleJobs=2: two submodules move at the same time' '
	git init -q multi &&
	(
		cd multi &&
		git submodule add -q ../subsrc a && git submodule add -q ../subsrc b &&
		git -C a checkout -q s1 && git -C b checkout -q s1 && git add . && git commit -qm M1 && git tag M1 &&
		git -C a checkout -q s2 && git -C b checkout -q s2 && git add . && git commit -qm M2 && git tag M2 &&
		git checkout -q --recurse-submodules M1
	) &&
	cp -a multi multi.git &&
	for d in multi multi.git
	do
		git -C $d/a update-index -q --refresh && git -C $d/b update-index -q --refresh || return 1
	done &&
	# A rendezvous: a'"'"'s smudge filter cannot finish before b'"'"'s has started,
	# so moving them one after the other never ends (timeout: exit 124).
	mkfifo rdv &&
	for m in a b
	do
		echo "f filter=rdv" >multi/.git/modules/$m/info/attributes || return 1
	done &&
	printf "#!/bin/sh\necho go >%s\nexec cat\n" "$PWD/rdv" >rdv-a &&
	printf "#!/bin/sh\nread x <%s\nexec cat\n" "$PWD/rdv" >rdv-b &&
	chmod +x rdv-a rdv-b &&
	git config -f multi/.git/modules/a/config filter.rdv.smudge "$PWD/rdv-a" &&
	git config -f multi/.git/modules/b/config filter.rdv.smudge "$PWD/rdv-b" &&
	(cd multi && timeout 60 git -c checkout.submoduleJobs=2 parallel-checkout -q --recurse-submodules M2) &&
	git -C multi.git checkout -q --recurse-submodules M2 &&
	for m in a b
	do
		git -C multi/$m rev-parse HEAD >actual && git -C subsrc rev-parse s2 >expect &&
		test_cmp expect actual &&
		git -C multi/$m status --porcelain >actual && test_must_be_empty actual || return 1
	done &&
	test_cmp_worktrees multi multi.git &&
	test_cmp_index multi multi.git &&
	sub_state multi >before &&
	(cd multi && test_must_fail git -c checkout.submoduleJobs=-1 parallel-checkout --recurse-submodules M1 2>../jobs.err) &&
	echo "fatal: bad checkout.submoduleJobs value '"'"'-1'"'"' (0 or more)" >expect &&
	test_cmp expect jobs.err &&
	sub_state multi >after &&
	test_cmp before after
'

# Deliberate differences (see submodule.py): git overwrites or discards these.
test_expect_success 'an untracked file the new commit brings: refused before anything is touched' '
	sub_twins unt &&
	echo mine >unt.ours/sub/g && echo mine >unt.git/sub/g &&
	sub_state unt.ours >before &&
	(cd unt.ours && test_must_fail git parallel-checkout --recurse-submodules B 2>../unt.err) &&
	printf "%s\n" "error: Untracked working tree file '"'"'sub/g'"'"' would be overwritten by merge." \
		"error: Submodule '"'"'sub'"'"' could not be updated." "error: Cannot update submodule:" \
		"	sub" "" "Aborting" >expect &&
	test_cmp expect unt.err &&
	sub_state unt.ours >after &&
	test_cmp before after &&
	git -C unt.git checkout -q --recurse-submodules B &&
	echo new >expect && test_cmp expect unt.git/sub/g
'

test_expect_success 'a local change to a file both commits share is kept' '
	sub_twins keep &&
	echo mine >keep.ours/sub/k && echo mine >keep.git/sub/k &&
	git -C keep.ours parallel-checkout -q --recurse-submodules B &&
	echo mine >expect && test_cmp expect keep.ours/sub/k &&
	git -C keep.ours/sub rev-parse HEAD >actual && git -C subsrc rev-parse s2 >expect &&
	test_cmp expect actual &&
	git -C keep.git checkout -q --recurse-submodules B &&
	echo keep >expect && test_cmp expect keep.git/sub/k
'

test_expect_success 'a path restore resets the submodule to the gitlink, forced, as git' '
	sub_twins rs &&
	same_sub_outcome rs --recurse-submodules B -- sub &&
	git -C rs.ours/sub rev-parse HEAD >actual && git -C subsrc rev-parse s2 >expect &&
	test_cmp expect actual &&
	for d in rs.ours rs.git
	do
		git -C $d/sub checkout -q s1 && echo x >$d/sub/k && echo u >$d/sub/untracked || return 1
	done &&
	same_sub_outcome rs --recurse-submodules -- sub &&
	same_sub_outcome rs --recurse-submodules A -- . &&
	git -C rs.ours/sub checkout -q s2 && git -C rs.git/sub checkout -q s2 &&
	same_sub_outcome rs -- sub
'

test_done
