#!/usr/bin/env bash
test_description='coordinator basics: clone, switch, --all and path restores with 1, 2 and 4
workers give what git gives, and start as many helpers as asked'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-coordinator.sh"

test_expect_success 'setup: source repository and git clone of it' '
	make_coordinator_repo src &&
	git clone -q src ref.git &&
	git -C src rev-parse --short v0 >v0.abbrev &&
	test $(git -C src ls-files | wc -l) -gt 120
'

for W in 1 2 4
do
	# git: one worker means sequential, no helper process at all.
	if test $W = 1; then H=0; else H=$W; fi

	test_expect_success "clone -j $W: work tree, index and refs as git clone" '
		test_checkout_helpers $H git parallel-clone -q -j $W --threshold 0 src clone$W &&
		test_cmp_worktrees clone$W ref.git &&
		test_cmp_index clone$W ref.git &&
		verify_clean clone$W &&
		git -C clone$W for-each-ref >refs.ours &&
		git -C ref.git for-each-ref >refs.git &&
		test_cmp refs.git refs.ours &&
		git -C clone$W config branch.main.merge >merge &&
		echo refs/heads/main >expect &&
		test_cmp expect merge
	'

	test_expect_success "switch -j $W to a branch (file<->dir, links, modes)" '
		twins src sw$W &&
		test_checkout_helpers $H git -C sw$W.ours -c checkout.thresholdForParallelism=0 \
			parallel-checkout -j $W other >out.ours 2>err.ours &&
		git -C sw$W.git checkout other >out.git 2>err.git &&
		test_cmp_worktrees sw$W.ours sw$W.git &&
		test_cmp_index sw$W.ours sw$W.git &&
		verify_clean sw$W.ours &&
		echo refs/heads/other >expect &&
		git -C sw$W.ours symbolic-ref HEAD >actual &&
		test_cmp expect actual &&
		test_cmp err.git err.ours &&
		test_cmp out.git out.ours &&
		test_grep "^Switched to a new branch .other.$" err.ours &&
		test_grep "^branch .other. set up to track .origin/other.\.$" out.ours &&
		git -C sw$W.ours config branch.other.merge >merge &&
		echo refs/heads/other >expect &&
		test_cmp expect merge
	'

	test_expect_success "switch -j $W to a tag detaches; one changed file needs no helper" '
		test_checkout_helpers 0 git -C sw$W.ours -c checkout.thresholdForParallelism=0 \
			parallel-checkout -j $W v1 >out.ours 2>err &&
		git -C sw$W.git checkout v1 >out.git 2>err.git &&
		test_cmp err.git err &&
		test_cmp out.git out.ours &&
		test_must_fail git -C sw$W.ours symbolic-ref -q HEAD &&
		test_cmp_worktrees sw$W.ours sw$W.git &&
		test_cmp_index sw$W.ours sw$W.git &&
		verify_clean sw$W.ours &&
		test_grep "^HEAD is now at $(git -C src rev-parse --short v1) three$" err
	'

	test_expect_success "switch -j $W to an abbreviated commit id, then back to main" '
		test_checkout_helpers $H git -C sw$W.ours parallel-checkout -j $W --threshold 0 \
			$(cat v0.abbrev) >out.ours 2>err.ours &&
		git -C sw$W.git checkout $(cat v0.abbrev) >out.git 2>err.git &&
		test_cmp err.git err.ours &&
		test_cmp out.git out.ours &&
		test_grep "^Previous HEAD position was $(git -C src rev-parse --short v1) three$" err.ours &&
		test_cmp_worktrees sw$W.ours sw$W.git &&
		test_cmp_index sw$W.ours sw$W.git &&
		verify_clean sw$W.ours &&
		git -C sw$W.ours parallel-checkout -j $W --threshold 0 main >out.ours 2>err.ours &&
		git -C sw$W.git checkout main >out.git 2>err.git &&
		test_cmp err.git err.ours &&
		test_cmp out.git out.ours &&
		test_grep "^Your branch is up to date with .origin/main.\.$" out.ours &&
		test_cmp_worktrees sw$W.ours sw$W.git &&
		test_cmp_index sw$W.ours sw$W.git &&
		verify_clean sw$W.ours &&
		git -C sw$W.ours log -g --format=%gs >reflog.ours &&
		git -C sw$W.git log -g --format=%gs >reflog.git &&
		test_cmp reflog.git reflog.ours
	'

	test_expect_success "--all -j $W into an emptied work tree, as checkout-index -a; -u as -u" '
		for d in sw$W.ours sw$W.git
		do
			(cd $d && ls -A | grep -v "^\.git\$" | xargs rm -rf) || return 1
		done &&
		cp sw$W.ours/.git/index index.before &&
		test_checkout_helpers $H git -C sw$W.ours parallel-checkout -j $W --threshold 0 --all &&
		git -C sw$W.git checkout-index -a &&
		test_cmp_worktrees sw$W.ours sw$W.git &&
		cmp index.before sw$W.ours/.git/index &&
		test_path_is_missing sw$W.ours/.git/index.lock &&
		for d in sw$W.ours sw$W.git
		do
			(cd $d && ls -A | grep -v "^\.git\$" | xargs rm -rf) || return 1
		done &&
		test_checkout_helpers $H git -C sw$W.ours parallel-checkout -j $W --threshold 0 --all -u &&
		git -C sw$W.git checkout-index -a -u &&
		test_cmp_worktrees sw$W.ours sw$W.git &&
		test_cmp_index sw$W.ours sw$W.git &&
		verify_clean sw$W.ours
	'

	test_expect_success "--all -j $W --prefix=out/ leaves the index alone" '
		cp sw$W.ours/.git/index index.before &&
		test_checkout_helpers $H git -C sw$W.ours parallel-checkout -j $W --threshold 0 \
			--all --prefix=out/ &&
		git -C sw$W.git checkout-index -a --prefix=out/ &&
		test_cmp_worktrees sw$W.ours/out sw$W.git/out &&
		cmp index.before sw$W.ours/.git/index &&
		test_path_is_missing sw$W.ours/out/.git &&
		rm -rf sw$W.ours/out sw$W.git/out &&
		verify_clean sw$W.ours
	'

	test_expect_success "restore -j $W from the index: -- <pathspec>" '
		for d in sw$W.ours sw$W.git
		do
			(
				cd $d &&
				echo junk >d1/s1/f1 &&
				rm -r d2 &&
				chmod +x d4/s1/f4 &&
				echo keep-this-change >d3/s0/f3 &&
				rm link-to-dir && ln -s d3 link-to-dir
			) || return 1
		done &&
		test_checkout_helpers $H git -C sw$W.ours parallel-checkout -j $W --threshold 0 \
			-- d1 d2 d4/s1/f4 "link-*" >out.ours 2>err.ours &&
		git -C sw$W.git checkout -- d1 d2 d4/s1/f4 "link-*" >out.git 2>err.git &&
		test_cmp_worktrees sw$W.ours sw$W.git &&
		test_cmp_index sw$W.ours sw$W.git &&
		test_cmp out.git out.ours &&
		test_cmp err.git err.ours &&
		git -C sw$W.ours diff-files --name-only >changed &&
		echo d3/s0/f3 >expect &&
		test_cmp expect changed &&
		git -C sw$W.ours parallel-checkout -j $W -- d3/s0/f3 &&
		git -C sw$W.git checkout -- d3/s0/f3 &&
		verify_clean sw$W.ours
	'

	test_expect_success "restore -j $W from a tree-ish: <tree-ish> -- <pathspec>" '
		test_checkout_helpers $H git -C sw$W.ours parallel-checkout -j $W --threshold 0 \
			other -- d0 new becomes-dir >out.ours 2>err.ours &&
		git -C sw$W.git checkout other -- d0 new becomes-dir >out.git 2>err.git &&
		test_cmp_worktrees sw$W.ours sw$W.git &&
		test_cmp_index sw$W.ours sw$W.git &&
		test_cmp out.git out.ours &&
		test_cmp err.git err.ours &&
		git -C sw$W.ours diff-files --quiet &&
		git -C sw$W.ours diff-index --cached --name-only HEAD >staged.ours &&
		git -C sw$W.git diff-index --cached --name-only HEAD >staged.git &&
		test_cmp staged.git staged.ours &&
		test -s staged.ours
	'
done

# switch_twins <name> <rev>: ours and git switch <name>.ours and <name>.git
# to <rev>, saying the same on both streams.
switch_twins() {
	git -C "$1.ours" parallel-checkout -j 2 --threshold 0 "$2" >out.ours 2>err.ours &&
	git -C "$1.git" checkout "$2" >out.git 2>err.git &&
	test_cmp err.git err.ours &&
	test_cmp out.git out.ours
}

test_expect_success 'leaving commits behind on a detached HEAD: git'"'"'s warning' '
	twins src orphan &&
	for d in orphan.ours orphan.git
	do
		(
			cd $d && git checkout -q v1 &&
			for i in 1 2 3 4 5 6; do echo $i >lost$i && git add lost$i && git commit -qm "lost $i" || return 1; done &&
			git commit -q --allow-empty -m "subject line" -m "body"
		) || return 1
	done &&
	switch_twins orphan main &&
	test_grep "^Warning: you are leaving 7 commits behind" err.ours &&
	test_cmp_worktrees orphan.ours orphan.git &&
	verify_clean orphan.ours
'

test_expect_success 'leaving merged history behind, some of it tagged (packed, annotated): the commits git lists, in its order' '
	twins src orphan2 &&
	for d in orphan2.ours orphan2.git
	do
		(
			cd $d && git checkout -q v1 &&
			echo a >a1 && git add a1 && git commit -qm a1 &&
			git tag -a -m keep kept && git pack-refs --all &&
			git checkout -q -b side && echo b >b1 && git add b1 && git commit -qm b1 &&
			echo b >b2 && git add b2 && git commit -qm b2 &&
			git checkout -q --detach HEAD~2 && echo c >c1 && git add c1 && git commit -qm c1 &&
			git merge -q --no-edit side && git branch -D -q side &&
			GIT_COMMITTER_DATE="1000000000 +0000" git commit -q --allow-empty -m "older, on top"
		) || return 1
	done &&
	switch_twins orphan2 main &&
	test_grep "^Warning: you are leaving 5 commits behind" err.ours &&
	test_grep "^  $(git -C orphan2.ours rev-parse --short HEAD@{1}) older, on top$" err.ours
'

test_expect_success 'leaving a detached HEAD in a shallow clone: the walk stops at the shallow commits, as git'"'"'s' '
	git init -q -b main deep && (cd deep && for i in 1 2 3; do git commit -q --allow-empty -m c$i || return 1; done) &&
	git clone -q --depth 1 --no-tags --no-local "file://$(pwd)/deep" shallow.ours &&
	(
		cd shallow.ours && test -s .git/shallow &&
		git checkout -q --orphan other && git commit -q --allow-empty -m elsewhere && git branch -q -f main &&
		git checkout -q --detach "$(cat .git/shallow)" && git commit -q --allow-empty -m "on the shallow commit" &&
		git update-ref -d --no-deref refs/remotes/origin/HEAD && git update-ref -d refs/remotes/origin/main
	) &&
	cp -a shallow.ours shallow.git &&
	switch_twins shallow main &&
	test_grep "^Warning: you are leaving 2 commits behind" err.ours
'

test_expect_success 'a commit the walk cannot read: git'"'"'s death after the work tree (leaving a detached HEAD; the upstream report)' '
	git init -q -b main walkmiss && (
		cd walkmiss && echo a >a && git add a && git commit -qm one && git commit -q --allow-empty -m two &&
		t=$(git rev-parse HEAD^{tree}) &&
		bad=$(printf "tree $t\nparent 1111111111111111111111111111111111111111\nauthor A <a@x> 1 +0000\ncommitter C <c@x> 1 +0000\n\nbroken\n" |
		      git hash-object -t commit -w --stdin) &&
		git checkout -q --detach $bad
	) &&
	rm -rf walkmiss.ours walkmiss.git && cp -a walkmiss walkmiss.ours && cp -a walkmiss walkmiss.git &&
	test_expect_code 128 git -C walkmiss.git checkout main 2>err.git &&
	test_expect_code 128 git -C walkmiss.ours parallel-checkout -j 2 --threshold 0 main 2>err.ours &&
	test_cmp err.git err.ours &&
	git -C walkmiss.git rev-parse HEAD >expect && git -C walkmiss.ours rev-parse HEAD >actual && test_cmp expect actual &&
	for d in walkmiss.ours walkmiss.git
	do
		git -C $d branch topic HEAD && git -C $d checkout -q main &&
		git -C $d config branch.topic.remote . && git -C $d config branch.topic.merge refs/heads/main || return 1
	done &&
	test_expect_code 128 git -C walkmiss.git checkout topic 2>err.git &&
	test_expect_code 128 git -C walkmiss.ours parallel-checkout -j 2 --threshold 0 topic 2>err.ours &&
	head -2 err.git >expect && head -2 err.ours >actual && test_cmp expect actual &&
	tail -1 err.ours | grep "^fatal: " &&
	git -C walkmiss.ours symbolic-ref HEAD >actual && echo refs/heads/topic >expect && test_cmp expect actual
'

test_expect_success 'the upstream report after a switch: ahead, behind, diverged, gone' '
	twins src trk &&
	for d in trk.ours trk.git
	do
		(
			cd $d &&
			git checkout -q other && git checkout -q v0 &&
			tip=$(git rev-parse other) &&
			git update-ref refs/heads/ahead $(git commit-tree -p $tip -m ahead $tip^{tree}) &&
			git update-ref refs/heads/diverged $(git commit-tree -p $tip~1 -m div $tip~1^{tree}) &&
			git update-ref refs/heads/behind $tip~2 &&
			git update-ref refs/heads/gone $tip &&
			for b in ahead diverged behind gone
			do
				git config branch.$b.remote origin &&
				git config branch.$b.merge refs/heads/other || return 1
			done &&
			git config branch.gone.merge refs/heads/nowhere
		) || return 1
	done &&
	for b in ahead behind diverged gone
	do
		switch_twins trk $b &&
		test_cmp_worktrees trk.ours trk.git || return 1
	done &&
	test_grep "^Your branch is based on .origin/nowhere., but the upstream is gone\.$" out.ours
'

test_expect_success 'clone errors: no such repository, not a repository, destination not empty' '
	mkdir not-a-repo full && : >full/file &&
	for args in "no-such-repo" "not-a-repo" "src full"
	do
		{ git parallel-clone $args >out.ours 2>err.ours; echo $? >rc.ours; } &&
		{ git clone $args >out.git 2>err.git; echo $? >rc.git; } &&
		test_cmp rc.git rc.ours &&
		test_cmp err.git err.ours &&
		test_cmp out.git out.ours || return 1
	done &&
	test_path_is_missing no-such-repo &&
	ls full >list && echo file >expect && test_cmp expect list
'

test_expect_success 'the event trace counts the same helpers' '
	rm -f ev &&
	GIT_TRACE2_EVENT="$PWD/ev" git parallel-clone -q -j 3 --threshold 0 src ev-clone &&
	test "$(helpers_in_event_trace ev)" = 3 &&
	test_cmp_worktrees ev-clone ref.git
'

test_expect_success "--helper-cmd 'git checkout--worker': git's own worker, same result" '
	test_checkout_helpers 2 git parallel-clone -q -j 2 --threshold 0 \
		--helper-cmd "git checkout--worker" src gw &&
	grep "child_start\[[0-9]*\] git checkout--worker" trace.helpers &&
	test_cmp_worktrees gw ref.git &&
	test_cmp_index gw ref.git &&
	verify_clean gw &&
	git clone -q src gw.git &&
	test_checkout_helpers 2 git -C gw parallel-checkout -q -j 2 --threshold 0 \
		--helper-cmd "git checkout--worker" other &&
	git -C gw.git checkout -q other &&
	test_cmp_worktrees gw gw.git &&
	test_cmp_index gw gw.git &&
	verify_clean gw &&
	(cd gw && ls -A | grep -v "^\.git\$" | xargs rm -rf) &&
	test_checkout_helpers 2 git -C gw parallel-checkout -j 2 --threshold 0 \
		--helper-cmd "git checkout--worker" --all -u &&
	test_cmp_worktrees gw gw.git &&
	verify_clean gw &&
	test_checkout_helpers 2 git -C gw parallel-checkout -j 2 --threshold 0 \
		--helper-cmd "git checkout--worker" --all --prefix=pfx/ &&
	git -C gw.git checkout-index -a --prefix=pfx/ &&
	test_cmp_worktrees gw/pfx gw.git/pfx
'

# A helper wrapper that, like a racing process, creates one of its files
# before the real helper (ours or git's) runs: the helper answers COLLIDED for
# it, and the coordinator rewrites it afterwards, as git does.
test_expect_success 'COLLIDED from a helper: the file is rewritten sequentially' '
	cat >racer <<-\EOF &&
	#!/bin/sh
	# The coordinator sends the batch (and closes the pipe) once every
	# directory exists; the helper that got RACE_PATH finds it taken.
	batch=$(mktemp) &&
	cat >"$batch" &&
	if grep -aqF "$RACE_PATH" "$batch"
	then
		echo "racing junk" >"$RACE_PATH"
	fi &&
	exec 3<"$batch" && rm -f "$batch" &&
	exec "$@" <&3 3<&-
	EOF
	chmod +x racer &&
	for worker in "git-checkout--helper" "git checkout--worker"
	do
		rm -rf race race.git &&
		git clone -q src race.git &&
		git clone -q -n src race &&
		rm -f ev &&
		RACE_PATH=d5/s2/f119 GIT_TRACE2_EVENT="$PWD/ev" git -C race parallel-checkout -v -j 2 \
			--threshold 0 --helper-cmd "$PWD/racer $worker" main >report &&
		test_grep "\"collided\":\[\"d5/s2/f119\"\]" report &&
		test "$(helpers_in_event_trace ev)" = 2 &&
		test_cmp_worktrees race race.git &&
		verify_clean race || return 1
	done &&
	test_grep "\"category\":\"pcheckout\",\"key\":\"collision/basename\",\"value\":\"d5/s2/f119\"" ev
'

test_expect_success 'attributes (eol=crlf, ident, text=auto, UTF-16) and a smudge filter, as git' '
	git init -q attr &&
	(
		cd attr &&
		cat >.gitattributes <<-\EOF &&
		*.crlf eol=crlf
		*.id ident
		*.auto text=auto
		*.u16 text working-tree-encoding=UTF-16
		*.up filter=upper
		EOF
		printf "a\nb\nc\n" >x.crlf &&
		printf "\$Id\$\nline\n" >x.id &&
		printf "one\ntwo\n" >x.auto &&
		printf "bin\000ary\n" >bin.auto &&
		printf "lone\rcr\n" >cr.auto &&
		"$PYTHON" -c "import sys; sys.stdout.buffer.write(\"caf\u00e9\n\".encode(\"utf-16\"))" >x.u16 &&
		echo "make me loud" >x.up &&
		echo "me too" >y.up &&
		for i in $(seq 1 12); do printf "p$i\n" >p$i.crlf || return 1; done &&
		git -c filter.upper.clean="tr A-Z a-z" add . &&
		git commit -qm attrs
	) &&
	git config --global filter.upper.smudge "tr a-z A-Z" &&
	git config --global filter.upper.clean "tr A-Z a-z" &&
	test_when_finished "git config --global --remove-section filter.upper" &&
	git clone -q attr attr.git &&
	printf "MAKE ME LOUD\n" >expect && test_cmp expect attr.git/x.up &&
	printf "a\r\nb\r\nc\r\n" >expect && test_cmp expect attr.git/x.crlf &&
	test_grep "^.Id: [0-9a-f]\{40\} .\$" attr.git/x.id &&
	test "$(head -c 2 attr.git/x.u16 | od -An -tx1 | tr -d " ")" = fffe &&
	cat >batchlog <<-\EOF &&
	#!/bin/sh
	# Keep a copy of what the helper is asked to write.
	batch=$(mktemp) && cat >"$batch" && cat "$batch" >>"$BATCH_LOG" &&
	exec 3<"$batch" && rm -f "$batch" && exec "$@" <&3 3<&-
	EOF
	chmod +x batchlog &&
	for W in 1 2 4
	do
		if test $W = 1; then H=0; else H=$W; fi &&
		: >batches &&
		BATCH_LOG="$PWD/batches" test_checkout_helpers $H git parallel-clone -q -j $W --threshold 0 \
			--helper-cmd "$PWD/batchlog git-checkout--helper" attr attr$W &&
		test_cmp_worktrees attr$W attr.git &&
		test_cmp_index attr$W attr.git &&
		verify_clean attr$W &&
		! grep -aF ".up" batches || return 1
	done &&
	grep -aF "x.u16" batches &&
	grep -aF "x.crlf" batches
'

test_expect_success 'files with a filter are not helper items: as many helpers as git starts' '
	git config --global filter.upper.smudge "tr a-z A-Z" &&
	git config --global filter.upper.clean "tr A-Z a-z" &&
	test_when_finished "git config --global --remove-section filter.upper" &&
	git init -q filtered &&
	echo "*.up filter=upper" >filtered/.gitattributes &&
	for f in a b c; do echo $f >filtered/$f.up || return 1; done &&
	git -C filtered add . && git -C filtered commit -qm up &&
	rm -f trace.git &&
	GIT_TRACE2="$PWD/trace.git" git -c checkout.workers=2 -c checkout.thresholdForParallelism=0 \
		clone -q filtered filtered.git &&
	test "$(helpers_in_trace trace.git)" = 0 &&
	test_checkout_helpers 0 git parallel-clone -q -j 2 --threshold 0 filtered filtered.ours &&
	test_cmp_worktrees filtered.ours filtered.git &&
	verify_clean filtered.ours &&
	echo C >expect && test_cmp expect filtered.ours/c.up
'

# reflogs_of <repo>: every reflog file, each line as old, new and message
reflogs_of() {
	(cd "$1/.git" && find logs -type f | sort | while read f
	do
		echo "$f" && sed "s/^\([0-9a-f]* [0-9a-f]*\) .*	/\1 /" "$f" || return 1
	done)
}

test_expect_success 'clone: HEAD, the branch and origin/HEAD get reflogs from nothing, as git clone writes them' '
	git -C src tag -a -m t vt &&
	for args in "src" "file://$TRASH_DIRECTORY/src" "-n src" "-b vt src" "-o up src"
	do
		rm -rf rl.ours rl.git &&
		git parallel-clone -q $args rl.ours && git clone -q $args rl.git &&
		reflogs_of rl.ours >rl.ours.log && reflogs_of rl.git >rl.git.log &&
		sed "s/rl\.git/rl.ours/" rl.git.log >expect &&
		test_cmp expect rl.ours.log || return 1
	done &&
	test_grep "^logs/refs/remotes/up/HEAD" rl.ours.log
'

test_done
