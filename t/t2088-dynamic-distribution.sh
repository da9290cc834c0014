#!/usr/bin/env bash
test_description='dynamic distribution (checkout.distribution) and I/O threads in helpers
(checkout.helperThreads, checkout--helper --threads)

Dynamic mode hands our helpers many batches; every item must be written
exactly once, with what git writes. Static mode, and --helper-cmd (which
may be git'\''s worker: one batch, then end of input), keep git'\''s split. A
helper with --threads answers a batch exactly as git'\''s worker does.'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-coordinator.sh"
. "$TEST_DIRECTORY/lib-git-helper.sh"

# report_field <file> <name>: a number from the -v JSON report
report_field() {
	sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" "$1"
}

test_expect_success 'setup: a skewed tree (one big directory, large files) and git checkout of it' '
	git init -q -b main src &&
	(
		cd src &&
		mkdir -p big data docs/a docs/b tools &&
		for i in $(seq 1 400); do echo "big $i" >big/f$i || return 1; done &&
		seq 1 200000 >data/large1 && seq 3 300000 >data/large2 &&
		for i in $(seq 1 30); do echo "doc $i" >docs/a/d$i && echo "doc b $i" >docs/b/d$i || return 1; done &&
		printf "#!/bin/sh\necho hi\n" >tools/run && chmod +x tools/run &&
		ln -s big/f1 link && : >empty &&
		git add . && git commit -qm one
	) &&
	test $(git -C src ls-files | wc -l) = 465 &&
	git clone -q src ref &&
	git clone -q -n src empty-clone
'

# fresh <name>: a no-checkout clone, ready for a forced checkout of HEAD.
fresh() {
	rm -rf "$1" && cp -R empty-clone "$1"
}

same_as_git() {
	test_cmp_worktrees "$1" ref &&
	test_cmp_index "$1" ref &&
	git -C "$1" diff-files --quiet &&
	git -C "$1" status --porcelain >"$1.status" &&
	test_must_be_empty "$1.status"
}

test_expect_success 'dynamic (the default) -j 2: every item written once, as git writes it, in many batches' '
	fresh dyn &&
	test_checkout_helpers 2 git -C dyn parallel-checkout -f -q -v -j 2 --threshold 0 HEAD >dyn.report &&
	same_as_git dyn &&
	test $(report_field dyn.report parallel_items) = 464 &&
	test $(report_field dyn.report written) = 465 &&
	test $(report_field dyn.report batches) -gt 4
'

test_expect_success 'dynamic -j 3 with checkout.distribution=dynamic spelled out' '
	fresh dyn3 &&
	test_checkout_helpers 3 git -C dyn3 -c checkout.distribution=Dynamic parallel-checkout -f -q -v -j 3 \
		--threshold 0 HEAD >dyn3.report &&
	same_as_git dyn3 &&
	test $(report_field dyn3.report batches) -gt 6
'

test_expect_success 'checkout.distribution=static: one batch per helper, as git' '
	fresh static &&
	test_checkout_helpers 2 git -C static -c checkout.distribution=static parallel-checkout -f -q -v -j 2 \
		--threshold 0 HEAD >static.report &&
	same_as_git static &&
	test $(report_field static.report batches) = 2
'

test_expect_success '--helper-cmd "git checkout--worker" gets the static split, whatever the setting' '
	fresh worker &&
	test_checkout_helpers 2 git -C worker -c checkout.distribution=dynamic -c checkout.helperThreads=4 \
		parallel-checkout -f -q -v -j 2 --threshold 0 --helper-cmd "git checkout--worker" HEAD >worker.report &&
	same_as_git worker &&
	test $(report_field worker.report batches) = 2 &&
	test $(report_field worker.report helper_threads) = 1
'

test_expect_success 'a switch in dynamic mode: removals, new files and changed ones' '
	(
		cd src &&
		git checkout -q -b other &&
		for i in $(seq 1 400 | sed -n "p;n;n"); do echo "other $i" >big/f$i || return 1; done &&
		git rm -q -r docs/b && mkdir new && for i in 1 2 3; do echo n$i >new/n$i || return 1; done &&
		git add . && git commit -qm other && git checkout -q main
	) &&
	twins src sw &&
	test_checkout_helpers 2 git -C sw.ours parallel-checkout -q -j 2 --threshold 0 other &&
	git -C sw.git checkout -q other &&
	test_cmp_worktrees sw.ours sw.git &&
	test_cmp_index sw.ours sw.git &&
	verify_clean sw.ours
'

test_expect_success 'checkout.helperThreads=4: our helpers get --threads=4, same result (dynamic and static)' '
	for mode in dynamic static
	do
		fresh thr-$mode &&
		GIT_TRACE2_EVENT="$TRASH_DIRECTORY/thr-$mode.trace" git -C thr-$mode -c checkout.helperThreads=4 \
			-c checkout.distribution=$mode parallel-checkout -f -q -v -j 2 --threshold 0 HEAD >thr-$mode.report &&
		same_as_git thr-$mode &&
		test $(report_field thr-$mode.report helper_threads) = 4 &&
		test $(grep -c "\"argv\":\[\"git\",\"checkout--helper\",\"--threads=4\"\]" thr-$mode.trace) = 2 ||
		return 1
	done
'

test_expect_success 'bad settings are fatal before anything is written' '
	fresh bad &&
	test_must_fail git -C bad -c checkout.distribution=stealing parallel-checkout -f -j 2 HEAD 2>err &&
	test_grep "^fatal: bad checkout.distribution value .stealing. (dynamic or static)$" err &&
	test_must_fail git -C bad -c checkout.helperThreads=0 parallel-checkout -f -j 2 HEAD 2>err &&
	test_grep "^fatal: bad checkout.helperThreads value .0." err &&
	test_path_is_missing bad/big
'

test_expect_success 'setup: batches for the helper itself' '
	PC_GIT_DIR="$TRASH_DIRECTORY/src/.git" &&
	export PC_GIT_DIR &&
	n=0 && : >many.spec &&
	git -C src ls-tree -r main big data tools >tree &&
	while read mode type oid path
	do
		echo "id=$n oid=$oid mode=$mode path=$path" >>many.spec &&
		n=$((n + 1)) || return 1
	done <tree &&
	test_line_count = 403 many.spec &&
	head -n 150 many.spec >one.spec &&
	tail -n +151 many.spec >two.spec &&
	$PC_ITEMS pack <one.spec >one.batch &&
	$PC_ITEMS pack <two.spec >two.batch &&
	cat one.batch two.batch >both.batch &&
	printf "#!/bin/sh\necho run >>\"%s\"\nexec \"%s\" --threads=4 \"\$@\"\n" \
		"$TRASH_DIRECTORY/threaded.log" "$OUR_HELPER" >threaded-helper &&
	chmod +x threaded-helper
'

test_expect_success 'our helper answers two batches in order, flush after each, then ends at end of input' '
	for threads in 1 3
	do
		rm -rf two-$threads && mkdir -p two-$threads/big two-$threads/data two-$threads/tools &&
		pc_run ours two-$threads both.batch two-$threads.out --threads=$threads &&
		echo 0 >expect && test_cmp expect two-$threads.out.rc &&
		test_must_be_empty two-$threads.out.err &&
		pc_statuses two-$threads.out.res >two-$threads.st &&
		{
			seq 0 149 | sed "s/$/ WRITTEN/" && echo flush &&
			seq 150 402 | sed "s/$/ WRITTEN/" && echo flush && echo eof
		} >expect &&
		test_cmp expect two-$threads.st &&
		pc_check_stats two-$threads.out.res many.spec two-$threads "" || return 1
	done &&
	pc_compare_trees two-1 two-3
'

test_expect_success 'a helper with --threads=4 answers a batch exactly as git checkout--worker' '
	OUR_HELPER="$TRASH_DIRECTORY/threaded-helper" &&
	cp many.spec threads.spec &&
	PC_PREPARE="mkdir -p big data tools" pc_differential threads &&
	test_line_count = 1 threaded.log
'

test_expect_success 'with --threads=4: collisions and failures as git checkout--worker reports them' '
	OUR_HELPER="$TRASH_DIRECTORY/threaded-helper" &&
	hello=$(echo hello | git -C src hash-object -w --stdin) &&
	missing=$(echo never stored | git -C src hash-object --stdin) &&
	{
		head -n 40 many.spec &&
		echo "id=40 oid=$hello mode=100644 path=exists" &&
		echo "id=41 oid=$hello mode=100644 path=isdir" &&
		echo "id=42 oid=$missing mode=100644 path=missing" &&
		echo "id=43 oid=$hello mode=100644 path=through-link/x"
	} >mixed.spec &&
	PC_EXPECT_STDERR=1 PC_PREPARE="mkdir -p big data tools isdir && echo old >exists && ln -s big through-link" \
		pc_differential mixed &&
	grep -c WRITTEN mixed.ours.st >written && echo 40 >expect && test_cmp expect written
'

test_done
