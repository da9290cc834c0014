#!/usr/bin/env bash
test_description='our helper and git checkout--worker at scale, and in a SHA-256 repository

A 5,000-item batch (what one worker gets in a large checkout: git sends a
worker its whole share before reading any answer) and a SHA-256 repository
(32-byte ids, algo 2 in struct object_id), both differential as in t2061.'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-git-helper.sh"

test_expect_success 'setup: 5,000 files in 50 directories, made with fast-import' '
	git init -q big &&
	PC_GIT_DIR="$TRASH_DIRECTORY/big/.git" &&
	export PC_GIT_DIR &&
	awk "BEGIN {
		print \"commit refs/heads/main\"
		print \"committer C O Mitter <c@example.com> 1112354055 +0200\"
		print \"data 0\"
		for (i = 0; i < 5000; i++) {
			c = \"content \" i
			printf \"M %s inline d%d/f%d\ndata %d\n%s\n\n\", (i % 10 == 0) ? \"100755\" : \"100644\", i % 50, i, length(c) + 1, c
		}
	}" >stream &&
	git -C big fast-import --quiet <stream &&
	git -C big ls-tree -r -z main >tree &&
	$PC_ITEMS from-ls-tree <tree >big.spec &&
	test_line_count = 5000 big.spec &&
	grep -c " mode=100755 " big.spec >actual &&
	echo 500 >expect && test_cmp expect actual
'

test_expect_success 'a batch of 5,000 items: all WRITTEN, same bytes, modes and stat records as git' '
	PC_PREPARE="mkdir \$(seq -f d%g 0 49)" pc_differential big &&
	{ seq -f "%g WRITTEN" 0 4999 && echo flush && echo eof; } >expect &&
	test_cmp expect big.ours.st &&
	echo "content 4999" >expect && test_cmp expect big.ours/d49/f4999 &&
	test -x big.ours/d0/f0 && ! test -x big.ours/d1/f1 &&
	find big.ours -type f | wc -l >actual && echo 5000 >expect && test_cmp expect actual &&
	rm -rf big.ours big.git
'

test_expect_success 'setup: a SHA-256 repository' '
	git init -q --object-format=sha256 r256 &&
	test "$(git -C r256 rev-parse --show-object-format)" = sha256 &&
	PC_GIT_DIR="$TRASH_DIRECTORY/r256/.git" &&
	hello=$(echo hello | git -C r256 hash-object -w --stdin) &&
	script=$(printf "#!/bin/sh\necho hi\n" | git -C r256 hash-object -w --stdin) &&
	missing=$(echo never stored | git -C r256 hash-object --stdin) &&
	test ${#hello} = 64
'

test_expect_success 'SHA-256: files, executables, collisions, algo 0, a missing object' '
	cat >s256.spec <<-EOF &&
	id=0 oid=$hello mode=100644 path=hello
	id=1 oid=$script mode=100755 path=d/run
	id=2 oid=$hello mode=100644 path=nodir/f
	id=3 oid=$hello mode=100644 path=exists
	id=4 oid=$hello mode=100644 algo=0 path=d/algo-zero
	id=5 oid=$hello mode=100644 path=link/f
	id=6 oid=$missing mode=100644 path=gone
	EOF
	PC_EXPECT_STDERR=1 PC_PREPARE="mkdir d real && ln -s real link && echo old >exists" \
		pc_differential s256 &&
	cat >expect <<-\EOF &&
	0 WRITTEN
	1 WRITTEN
	2 COLLIDED
	3 COLLIDED
	4 WRITTEN
	5 COLLIDED
	6 FAILED
	flush
	eof
	EOF
	test_cmp expect s256.ours.st &&
	echo hello >expect && test_cmp expect s256.ours/hello && test_cmp expect s256.ours/d/algo-zero &&
	test -x s256.ours/d/run &&
	test_path_is_missing s256.ours/gone &&
	for who in git ours
	do
		test_grep -F "\"key\":\"collision/dirname\",\"value\":\"link/f\"}" s256.$who-out.trace || return 1
	done
'

test_expect_success 'SHA-256 under --prefix' '
	cat >s256p.spec <<-EOF &&
	id=0 oid=$hello mode=100644 path=hello
	id=1 oid=$script mode=100755 path=d/run
	EOF
	PC_PREPARE="mkdir -p out/d" pc_differential s256p --prefix=out/ &&
	printf "0 WRITTEN\n1 WRITTEN\nflush\neof\n" >expect &&
	test_cmp expect s256p.ours.st
'

test_done
