#!/usr/bin/env bash
test_description='the same batches to our helper and to git checkout--worker

Each test packs a batch, runs both workers on it in fresh work trees prepared
the same way, and asserts (pc_differential in lib-git-helper.sh): exit 0, the
same statuses in the same order, the same framing, the same pcheckout trace2
records, the same files/modes/bytes, and WRITTEN stat records that describe
the files as stat(1) sees them. Expected statuses are also written out, so a
bug shared by both sides cannot pass.'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-git-helper.sh"

test_expect_success 'setup: a repository with a few blobs' '
	git init -q repo &&
	PC_GIT_DIR="$TRASH_DIRECTORY/repo/.git" &&
	export PC_GIT_DIR &&
	hello=$(echo hello | git -C repo hash-object -w --stdin) &&
	script=$(printf "#!/bin/sh\necho hi\n" | git -C repo hash-object -w --stdin) &&
	empty=$(git -C repo hash-object -w --stdin </dev/null) &&
	seq 1 100000 >big.txt &&
	big=$(git -C repo hash-object -w --stdin <big.txt) &&
	mkdir shared-real &&
	missing=$(echo never stored | git -C repo hash-object --stdin)
'

test_expect_success 'plain files and executables, at the top and in existing dirs' '
	cat >plain.spec <<-EOF &&
	id=0 oid=$hello mode=100644 path=hello
	id=1 oid=$script mode=100755 path=run.sh
	id=2 oid=$empty mode=100644 path=empty
	id=3 oid=$big mode=100644 path=d/e/big
	id=4 oid=$script mode=100755 path=d/e/run
	id=5 oid=$hello mode=100644 path=name with spaces
	id=6 oid=$hello mode=100644 algo=0 path=d/algo-zero
	EOF
	PC_PREPARE="mkdir -p d/e" pc_differential plain &&
	cat >expect <<-\EOF &&
	0 WRITTEN
	1 WRITTEN
	2 WRITTEN
	3 WRITTEN
	4 WRITTEN
	5 WRITTEN
	6 WRITTEN
	flush
	eof
	EOF
	test_cmp expect plain.ours.st &&
	test_cmp big.txt plain.ours/d/e/big &&
	echo hello >expect && test_cmp expect "plain.ours/name with spaces" &&
	test_cmp expect plain.ours/d/algo-zero &&
	test -x plain.ours/run.sh && test -x plain.ours/d/e/run &&
	! test -x plain.ours/hello &&
	test_must_be_empty plain.ours/empty
'

test_expect_success 'collisions (EEXIST): an existing file, directory or dangling symlink, a duplicate path' '
	cat >coll.spec <<-EOF &&
	id=0 oid=$hello mode=100644 path=exists
	id=1 oid=$hello mode=100644 path=isdir
	id=2 oid=$script mode=100755 path=dangling
	id=3 oid=$hello mode=100644 path=d/ok
	id=4 oid=$script mode=100755 path=d/ok
	EOF
	PC_PREPARE="echo old >exists && mkdir -p isdir/sub d && ln -s nowhere dangling" \
		pc_differential coll &&
	cat >expect <<-\EOF &&
	0 COLLIDED
	1 COLLIDED
	2 COLLIDED
	3 WRITTEN
	4 COLLIDED
	flush
	eof
	EOF
	test_cmp expect coll.ours.st &&
	for who in git ours
	do
		test_grep -F "\"category\":\"pcheckout\",\"key\":\"collision/basename\",\"value\":\"exists\"}" coll.$who-out.trace &&
		test_grep -F "\"category\":\"pcheckout\",\"key\":\"collision/basename\",\"value\":\"isdir\"}" coll.$who-out.trace &&
		test_grep -F "\"category\":\"pcheckout\",\"key\":\"collision/basename\",\"value\":\"d/ok\"}" coll.$who-out.trace || return 1
	done &&
	echo old >expect && test_cmp expect coll.ours/exists &&
	test_path_is_dir coll.ours/isdir/sub &&
	test_path_is_symlink coll.ours/dangling && test_path_is_missing coll.ours/nowhere &&
	echo hello >expect && test_cmp expect coll.ours/d/ok && ! test -x coll.ours/d/ok
'

# On Linux open(O_CREAT|O_EXCL) on an existing directory fails with EEXIST
# (above); EISDIR needs a name ending in "/". git's coordinator never sends
# one (verify_path refuses it); git's worker opens it and reports COLLIDED,
# ours refuses the name (it validates every path): a deliberate difference.
test_expect_success 'EISDIR: a name with a trailing slash over a directory (git COLLIDED, ours FAILED)' '
	echo "id=0 oid=$hello mode=100644 path=isdir/" >eisdir.spec &&
	$PC_ITEMS pack <eisdir.spec >eisdir.batch &&
	mkdir -p eisdir.git/isdir eisdir.ours/isdir &&
	pc_run git eisdir.git eisdir.batch eisdir.git-out &&
	pc_run ours eisdir.ours eisdir.batch eisdir.ours-out &&
	echo 0 >expect && test_cmp expect eisdir.git-out.rc && test_cmp expect eisdir.ours-out.rc &&
	printf "0 COLLIDED\nflush\neof\n" >expect && pc_statuses eisdir.git-out.res >actual && test_cmp expect actual &&
	printf "0 FAILED\nflush\neof\n" >expect && pc_statuses eisdir.ours-out.res >actual && test_cmp expect actual &&
	test_grep -F "\"key\":\"collision/basename\",\"value\":\"isdir/\"}" eisdir.git-out.trace &&
	test_grep "invalid path .isdir/." eisdir.ours-out.err &&
	find eisdir.git eisdir.ours -type f >actual && test_must_be_empty actual
'

test_expect_success 'missing leading directories: COLLIDED, nothing created' '
	cat >nodir.spec <<-EOF &&
	id=0 oid=$hello mode=100644 path=nodir/f
	id=1 oid=$hello mode=100644 path=a/b/c/f
	id=2 oid=$hello mode=100644 path=a/f
	id=3 oid=$hello mode=100644 path=file/f
	EOF
	PC_PREPARE="mkdir a && echo x >file" pc_differential nodir &&
	cat >expect <<-\EOF &&
	0 COLLIDED
	1 COLLIDED
	2 WRITTEN
	3 COLLIDED
	flush
	eof
	EOF
	test_cmp expect nodir.ours.st &&
	for who in git ours
	do
		for p in nodir/f a/b/c/f file/f
		do
			test_grep -F "\"category\":\"pcheckout\",\"key\":\"collision/dirname\",\"value\":\"$p\"}" \
				nodir.$who-out.trace || return 1
		done
	done &&
	test_path_is_missing nodir.ours/nodir && test_path_is_missing nodir.ours/a/b
'

test_expect_success SYMLINKS 'symlinked leading directories: COLLIDED with collision/dirname, nothing written through' '
	cat >symdir.spec <<-EOF &&
	id=0 oid=$hello mode=100644 path=real/f
	id=1 oid=$hello mode=100644 path=link/g
	id=2 oid=$script mode=100755 path=a/b/c/h
	id=3 oid=$hello mode=100644 path=a/ok
	id=4 oid=$hello mode=100644 path=abs/i
	EOF
	PC_PREPARE="mkdir -p real a/target/c && ln -s real link && ln -s target a/b && ln -s \"\$TRASH_DIRECTORY/shared-real\" abs" \
		pc_differential symdir &&
	cat >expect <<-\EOF &&
	0 WRITTEN
	1 COLLIDED
	2 COLLIDED
	3 WRITTEN
	4 COLLIDED
	flush
	eof
	EOF
	test_cmp expect symdir.ours.st &&
	for who in git ours
	do
		for p in link/g a/b/c/h abs/i
		do
			test_grep -F "\"category\":\"pcheckout\",\"key\":\"collision/dirname\",\"value\":\"$p\"}" \
				symdir.$who-out.trace || return 1
		done
	done &&
	ls symdir.ours/real >actual && echo f >expect && test_cmp expect actual &&
	find symdir.ours/a/target/c shared-real -mindepth 1 >actual && test_must_be_empty actual
'

test_expect_success '--prefix: paths below the prefix, collisions reported with it' '
	cat >prefix.spec <<-EOF &&
	id=0 oid=$hello mode=100644 path=hello
	id=1 oid=$script mode=100755 path=d/run
	id=2 oid=$hello mode=100644 path=nodir/f
	id=3 oid=$hello mode=100644 path=exists
	EOF
	PC_PREPARE="mkdir -p out/d && echo old >out/exists" pc_differential prefix --prefix=out/ &&
	cat >expect <<-\EOF &&
	0 WRITTEN
	1 WRITTEN
	2 COLLIDED
	3 COLLIDED
	flush
	eof
	EOF
	test_cmp expect prefix.ours.st &&
	for who in git ours
	do
		test_grep -F "\"key\":\"collision/dirname\",\"value\":\"out/nodir/f\"}" prefix.$who-out.trace &&
		test_grep -F "\"key\":\"collision/basename\",\"value\":\"out/exists\"}" prefix.$who-out.trace || return 1
	done &&
	echo hello >expect && test_cmp expect prefix.ours/out/hello &&
	test -x prefix.ours/out/d/run && test_path_is_missing prefix.ours/hello
'

test_expect_success SYMLINKS '--prefix: the prefix itself is trusted (a symlink there is followed), a bare-string prefix too' '
	cat >prefix2.spec <<-EOF &&
	id=0 oid=$hello mode=100644 path=hello
	id=1 oid=$hello mode=100644 path=d/x
	EOF
	PC_PREPARE="mkdir -p real/d && ln -s real out" pc_differential prefix2 --prefix=out/ &&
	printf "0 WRITTEN\n1 WRITTEN\nflush\neof\n" >expect &&
	test_cmp expect prefix2.ours.st &&
	test_path_is_file prefix2.ours/real/d/x &&
	cp prefix2.spec prefix3.spec &&
	PC_PREPARE="mkdir -p pre-d" pc_differential prefix3 --prefix=pre- &&
	printf "0 WRITTEN\n1 WRITTEN\nflush\neof\n" >expect &&
	test_cmp expect prefix3.ours.st &&
	test_path_is_file prefix3.ours/pre-hello && test_path_is_file prefix3.ours/pre-d/x
'

test_expect_success '--prefix naming a missing directory or a file: COLLIDED, as git stat()s the prefix too' '
	cat >prefix4.spec <<-EOF &&
	id=0 oid=$hello mode=100644 path=hello
	id=1 oid=$hello mode=100644 path=d/x
	EOF
	pc_differential prefix4 --prefix=missing/ &&
	printf "0 COLLIDED\n1 COLLIDED\nflush\neof\n" >expect &&
	test_cmp expect prefix4.ours.st &&
	cp prefix4.spec prefix5.spec &&
	PC_PREPARE="echo >file" pc_differential prefix5 --prefix=file/ &&
	test_cmp expect prefix5.ours.st &&
	for who in git ours
	do
		test_grep -F "\"key\":\"collision/dirname\",\"value\":\"missing/hello\"}" prefix4.$who-out.trace &&
		test_grep -F "\"key\":\"collision/dirname\",\"value\":\"file/d/x\"}" prefix5.$who-out.trace || return 1
	done &&
	ls -A prefix4.ours >actual && test_must_be_empty actual
'

test_expect_success 'umask is respected for 0666 and 0777' '
	cat >umask.spec <<-EOF &&
	id=0 oid=$hello mode=100644 path=file
	id=1 oid=$script mode=100755 path=exec
	EOF
	for mask in 077 002
	do
		cp umask.spec umask$mask.spec &&
		PC_UMASK=$mask pc_differential umask$mask &&
		printf "%o %o\n" $((0666 & ~0$mask)) $((0777 & ~0$mask)) >expect &&
		echo $(stat -c %a umask$mask.ours/file umask$mask.ours/exec) >actual &&
		test_cmp expect actual || return 1
	done
'

test_expect_success 'an empty batch (just a flush): a flush back, nothing written' '
	: >empty.spec &&
	pc_differential empty &&
	printf 0000 >expect &&
	cmp expect empty.ours-out.raw &&
	cmp expect empty.git-out.raw &&
	ls -A empty.ours >actual &&
	test_must_be_empty actual
'

test_expect_success 'a missing object: FAILED, no file left behind, an error on stderr' '
	cat >missing.spec <<-EOF &&
	id=0 oid=$missing mode=100644 path=gone
	id=1 oid=$hello mode=100644 path=here
	EOF
	PC_EXPECT_STDERR=1 pc_differential missing &&
	printf "0 FAILED\n1 WRITTEN\nflush\neof\n" >expect &&
	test_cmp expect missing.ours.st &&
	test_path_is_missing missing.ours/gone &&
	test_grep gone missing.ours-out.err &&
	test_grep gone missing.git-out.err
'

test_done
