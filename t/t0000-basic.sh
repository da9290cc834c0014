#!/usr/bin/env bash
test_description='the test library itself, and the helper on PATH'
. "$(dirname "$0")/test-lib.sh"

test_expect_success 'success is reported' 'true'
test_expect_failure 'known breakage is reported' 'false'
test_expect_success 'test_must_fail rejects success' '
	! test_must_fail true &&
	test_must_fail false
'
test_expect_success 'git checkout--helper resolves to our helper' '
	git init -q repo &&
	(cd repo && printf "0000" | git checkout--helper >../out) &&
	printf "0000" >expect &&
	test_cmp expect out
'
test_expect_success 'the helper rejects an unknown option with usage' '
	test_must_fail git -C repo checkout--helper --bogus 2>err &&
	test_grep "usage: git checkout--helper" err
'
test_done
