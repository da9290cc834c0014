#!/usr/bin/env bash
test_description='real git drives our helper as its checkout--worker'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-git-helper.sh"

test_expect_success 'setup: exec-path wrapper and a source repository' '
	setup_git_helper_exec_path &&
	git init -q src &&
	(
		cd src &&
		for i in $(seq 1 120); do mkdir -p d$((i % 7)); echo "file $i" >d$((i % 7))/f$i; done &&
		printf "#!/bin/sh\necho hi\n" >run.sh && chmod +x run.sh &&
		git add . && git commit -qm one &&
		git checkout -q -b other &&
		for i in $(seq 1 40); do echo "changed $i" >d$((i % 7))/f$i; done &&
		git rm -qf d3/f3 && mkdir -p new && echo new >new/file &&
		git add . && git commit -qm two &&
		git checkout -q main
	)
'

test_expect_success 'clone with 2 workers uses our helper and leaves a clean index' '
	git_with_helper -c checkout.workers=2 -c checkout.thresholdForParallelism=0 \
		clone -q src dst &&
	test "$(helper_runs)" = 2 &&
	git -C dst diff-files --quiet &&
	git -C dst status --porcelain >status &&
	test_must_be_empty status &&
	test -x dst/run.sh
'

test_expect_success 'branch switch with 2 workers, stat data right' '
	: >"$HELPER_EXEC_PATH.log" &&
	git -C dst checkout -q -b other-base && git -C dst fetch -q origin other:other &&
	git_with_helper -C dst -c checkout.workers=2 -c checkout.thresholdForParallelism=0 \
		checkout -q other &&
	test "$(helper_runs)" = 2 &&
	git -C dst diff-files --quiet &&
	git -C dst diff-index --cached --quiet HEAD &&
	git -C dst status --porcelain >status &&
	test_must_be_empty status &&
	echo "changed 1" >expect && test_cmp expect dst/d1/f1 &&
	test_path_is_missing dst/d3/f3
'
test_done
