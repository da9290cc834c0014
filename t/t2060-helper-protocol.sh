#!/usr/bin/env bash
test_description='our checkout helper on the wire: batches, framing, dialects

The protocol of builtin/checkout--worker.c (read items up to a flush, answer
each in order, flush), our extension (several batches per run, end of input
at a batch boundary is a clean exit), and the Aug-2020 RFC dialect (--wire=rfc),
which has no git peer: its bytes and statuses are asserted directly. Where
git has the same operation its worker is run on the same input.'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-git-helper.sh"

test_expect_success 'setup: a repository with two blobs' '
	git init -q repo &&
	PC_GIT_DIR="$TRASH_DIRECTORY/repo/.git" &&
	export PC_GIT_DIR &&
	hello=$(echo hello | git -C repo hash-object -w --stdin) &&
	script=$(printf "#!/bin/sh\necho hi\n" | git -C repo hash-object -w --stdin)
'

test_expect_success 'an empty batch is answered with exactly a flush, exit 0' '
	printf 0000 >flush.batch &&
	mkdir wt-flush &&
	pc_run ours wt-flush flush.batch flush &&
	echo 0 >expect.rc && test_cmp expect.rc flush.rc &&
	printf 0000 >expect && cmp expect flush.raw &&
	test_must_be_empty flush.err &&
	ls -A wt-flush >actual && test_must_be_empty actual
'

test_expect_success 'no input at all: a batch boundary, so exit 0 and no output' '
	: >nothing.batch &&
	mkdir wt-nothing &&
	pc_run ours wt-nothing nothing.batch nothing &&
	test_cmp expect.rc nothing.rc &&
	test_must_be_empty nothing.raw &&
	test_must_be_empty nothing.err
'

test_expect_success 'git worker, by contrast, dies when its input ends before a flush' '
	mkdir wt-nothing-git &&
	pc_exec git wt-nothing-git nothing.batch nothing-git &&
	! test_cmp expect.rc nothing-git.rc &&
	test_must_be_empty nothing-git.raw
'

test_expect_success 'results come in arrival order, with the ids as sent' '
	cat >order.spec <<-EOF &&
	id=9 oid=$hello mode=100644 path=nine
	id=3 oid=$hello mode=100644 path=nodir/three
	id=1000000 oid=$script mode=100755 path=million
	id=1099511627776 oid=$hello mode=100644 path=two-to-the-40
	id=0 oid=$hello mode=100644 path=nine
	EOF
	$PC_ITEMS pack <order.spec >order.batch &&
	mkdir wt-order wt-order-git &&
	pc_run ours wt-order order.batch order &&
	pc_run git wt-order-git order.batch order-git &&
	cat >expect <<-\EOF &&
	9 WRITTEN
	3 COLLIDED
	1000000 WRITTEN
	1099511627776 WRITTEN
	0 COLLIDED
	flush
	eof
	EOF
	pc_statuses order.res >actual &&
	test_cmp expect actual &&
	pc_statuses order-git.res >actual &&
	test_cmp expect actual &&
	pc_check_stats order.res order.spec wt-order
'

test_expect_success 'several batches in one run (our extension), then a clean end' '
	cat >b1.spec <<-EOF &&
	id=0 oid=$hello mode=100644 path=a
	id=1 oid=$script mode=100755 path=b
	EOF
	cat >b2.spec <<-EOF &&
	id=2 oid=$hello mode=100644 path=c
	id=3 oid=$script mode=100755 path=a
	EOF
	$PC_ITEMS pack <b1.spec >b1.batch &&
	$PC_ITEMS pack <b2.spec >b2.batch &&
	cat b1.batch b2.batch flush.batch b1.batch >multi.batch &&
	mkdir wt-multi &&
	pc_run ours wt-multi multi.batch multi &&
	test_cmp expect.rc multi.rc &&
	test_must_be_empty multi.err &&
	cat >expect <<-\EOF &&
	0 WRITTEN
	1 WRITTEN
	flush
	2 WRITTEN
	3 COLLIDED
	flush
	flush
	0 COLLIDED
	1 COLLIDED
	flush
	eof
	EOF
	pc_statuses multi.res >actual &&
	test_cmp expect actual &&
	cat b1.spec b2.spec >multi.spec &&
	pc_check_stats multi.res multi.spec wt-multi &&
	test_grep -F "\"key\":\"collision/basename\",\"value\":\"a\"}" multi.trace &&
	echo hello >expect && test_cmp expect wt-multi/a && test_cmp expect wt-multi/c &&
	test -x wt-multi/b && ! test -x wt-multi/a
'

test_expect_success 'git worker answers the first batch only and exits 0' '
	mkdir wt-multi-git &&
	pc_run git wt-multi-git multi.batch multi-git &&
	test_cmp expect.rc multi-git.rc &&
	printf "0 WRITTEN\n1 WRITTEN\nflush\neof\n" >expect &&
	pc_statuses multi-git.res >actual &&
	test_cmp expect actual &&
	test_path_is_missing wt-multi-git/c
'

test_expect_success 'end of input inside the second batch: first answered, second not written, exit 128' '
	$PC_ITEMS pack --no-flush <b2.spec >b2-cut.batch &&
	cat b1.batch b2-cut.batch >cut.batch &&
	mkdir wt-cut &&
	pc_run ours wt-cut cut.batch cut &&
	echo 128 >expect && test_cmp expect cut.rc &&
	test_grep "^fatal: end of input before flush" cut.err &&
	test_line_count = 1 cut.err &&
	printf "0 WRITTEN\n1 WRITTEN\nflush\neof\n" >expect &&
	pc_statuses cut.res >actual &&
	test_cmp expect actual &&
	test_path_is_file wt-cut/a && test_path_is_missing wt-cut/c
'

test_expect_success 'a batch is read whole before anything is written' '
	{ cat b2-cut.batch && printf "zzzz"; } >garbage.batch &&
	mkdir wt-garbage &&
	pc_run ours wt-garbage garbage.batch garbage &&
	echo 128 >expect && test_cmp expect garbage.rc &&
	test_must_be_empty garbage.raw &&
	ls -A wt-garbage >actual && test_must_be_empty actual
'

# One item, packed by hand: id 7, mode 0100755, no encoding, name "x".
# git dialect: id@0 hash@8 algo@40 ce_mode@44 crlf@48 ident@52 enc_len@56 name_len@64.
# rfc dialect: id@0 hash@8 ce_mode@40 attr_action@44 crlf@48 ident@52 enc_len@56 name_len@64.
hex_le () { # <value> <bytes>: little-endian hex bytes, space separated
	local v=$1 n=$2 out=
	while test $n -gt 0
	do
		out="$out $(printf %02x $((v & 255)))"
		v=$((v >> 8)) n=$((n - 1))
	done
	echo "$out"
}
squeeze () { tr -s " \n" "  " | sed "s/^ //;s/ $//"; }
hex_bytes () { od -An -v -tx1 | squeeze; }

test_expect_success 'item bytes: the git and the rfc layouts, exactly' '
	echo "id=7 oid=$hello mode=100755 path=x" >one.spec &&
	hash="$(printf %s "$hello" | sed "s/../& /g") $(hex_le 0 12)" &&
	tail="$(hex_le 1 4) $(hex_le 0 4) $(hex_le 0 8) $(hex_le 1 8) 78" &&
	echo "30 30 34 64 $(hex_le 7 8) $hash $(hex_le 1 4) $(hex_le 0100755 4) $tail 30 30 30 30" | squeeze >expect.git &&
	echo "30 30 34 64 $(hex_le 7 8) $hash $(hex_le 0100755 4) $(hex_le 0 4) $tail 30 30 30 30" | squeeze >expect.rfc &&
	$PC_ITEMS pack <one.spec | hex_bytes >actual.git &&
	$PC_ITEMS pack --wire=rfc <one.spec | hex_bytes >actual.rfc &&
	test_cmp expect.git actual.git &&
	test_cmp expect.rfc actual.rfc
'

test_expect_success 'git accepts the hand-packed git-dialect item' '
	$PC_ITEMS pack <one.spec >one.batch &&
	mkdir wt-one-git && pc_run git wt-one-git one.batch one-git &&
	printf "7 WRITTEN\nflush\neof\n" >expect &&
	pc_statuses one-git.res >actual && test_cmp expect actual &&
	test -x wt-one-git/x
'

test_expect_success 'rfc dialect: same files, statuses and result records as the git dialect' '
	cat >rfc.spec <<-EOF &&
	id=0 oid=$hello mode=100644 path=hello
	id=1 oid=$script mode=100755 path=d/run
	id=2 oid=$hello mode=100644 path=nodir/f
	id=3 oid=$hello mode=100644 path=hello
	EOF
	$PC_ITEMS pack --wire=rfc <rfc.spec >rfc.batch &&
	$PC_ITEMS pack <rfc.spec >rfc-git.batch &&
	! cmp -s rfc.batch rfc-git.batch &&
	mkdir -p wt-rfc/d wt-rfc-git/d &&
	pc_run ours wt-rfc rfc.batch rfc --wire=rfc &&
	pc_run git wt-rfc-git rfc-git.batch rfc-git &&
	test_cmp expect.rc rfc.rc &&
	test_must_be_empty rfc.err &&
	printf "0 WRITTEN\n1 WRITTEN\n2 COLLIDED\n3 COLLIDED\nflush\neof\n" >expect &&
	pc_statuses rfc.res >actual && test_cmp expect actual &&
	test_cmp rfc-git.frames rfc.frames &&
	pc_check_stats rfc.res rfc.spec wt-rfc &&
	pc_compare_trees wt-rfc-git wt-rfc &&
	test_grep -F "\"key\":\"collision/dirname\",\"value\":\"nodir/f\"}" rfc.trace
'

test_expect_success 'rfc dialect with --prefix' '
	mkdir -p wt-rfc-pre/out/d &&
	pc_run ours wt-rfc-pre rfc.batch rfc-pre --wire=rfc --prefix=out/ &&
	printf "0 WRITTEN\n1 WRITTEN\n2 COLLIDED\n3 COLLIDED\nflush\neof\n" >expect &&
	pc_statuses rfc-pre.res >actual && test_cmp expect actual &&
	pc_check_stats rfc-pre.res rfc.spec wt-rfc-pre out/ &&
	test -x wt-rfc-pre/out/d/run
'

test_expect_success 'a git-dialect batch read as rfc: algo lands in ce_mode, so every item FAILS' '
	mkdir -p wt-mixed/d &&
	pc_run ours wt-mixed rfc-git.batch mixed --wire=rfc &&
	test_cmp expect.rc mixed.rc &&
	printf "0 FAILED\n1 FAILED\n2 FAILED\n3 FAILED\nflush\neof\n" >expect &&
	pc_statuses mixed.res >actual && test_cmp expect actual &&
	find wt-mixed -type f >actual && test_must_be_empty actual
'

test_expect_success 'an rfc batch read as git: ce_mode lands in algo, a fatal error, nothing written' '
	mkdir -p wt-mixed2/d &&
	pc_run ours wt-mixed2 rfc.batch mixed2 &&
	echo 128 >expect && test_cmp expect mixed2.rc &&
	test_grep "unknown hash algorithm 33188" mixed2.err &&
	test_must_be_empty mixed2.raw &&
	find wt-mixed2 -type f >actual && test_must_be_empty actual
'

test_expect_success CC 'result records: 16 bytes unless WRITTEN, 16 + sizeof(struct stat) when WRITTEN' '
	cat >sizeof.c <<-\EOF &&
	#include <stdio.h>
	#include <sys/stat.h>
	int main(void) { printf("%04zx\n", 4 + 16 + sizeof(struct stat)); return 0; }
	EOF
	cc -o sizeof sizeof.c &&
	./sizeof >written-len &&
	sed -n "s/^len=\([0-9a-f]*\) head=.*/\1/p" rfc.frames >actual &&
	{ cat written-len written-len && echo 0014 && echo 0014; } >expect &&
	test_cmp expect actual &&
	grep "head=0300000000000000" rfc.frames >actual &&
	echo "len=0014 head=03000000000000000200000000000000" >expect &&
	test_cmp expect actual
'

test_done
