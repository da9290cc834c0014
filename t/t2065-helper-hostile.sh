#!/usr/bin/env bash
test_description='the helper trusts nothing on its stdin

Hostile paths are refused (FAILED) or collide (COLLIDED) and nothing outside
the work tree is created, opened or truncated; malformed input gives one
"fatal:" line and exit 128 and writes nothing; closed pipes behave like git.
git'"'"'s own checkout--worker is the peer: it trusts its coordinator and
writes "../escaped" outside the work tree, which is why we check.
'
. "$(dirname "$0")/test-lib.sh"

HELPER="$PROJECT_ROOT/.venv/bin/git-checkout--helper"

# fresh_wt: a work tree whose traps a naive helper would walk into: a
# symlink out of the tree, a dangling symlink pointing out, and the
# directories that hostile names would need.
fresh_wt () {
	rm -rf wt &&
	mkdir -p wt/real wt/.git/hooks wt/.GIT wt/git~1 wt/sub/.git wt/.git. &&
	ln -s ../outside wt/d &&
	ln -s ../outside/by-link wt/link &&
	printf "a file\n" >wt/f
}

# run_worker <batch> <cmd...>: run a worker in wt on <batch>; leaves out
# (results, unpacked), err and rc in the trash directory.
run_worker () {
	local batch=$1
	shift
	(
		cd wt &&
		GIT_DIR="$TRASH_DIRECTORY/repo/.git" "$@" <"$TRASH_DIRECTORY/$batch" >../out.raw 2>../err
		echo $? >../rc
	) &&
	$PC_ITEMS unpack <out.raw >out
}

# patch_u64 <offset> <value>: stdin to stdout with a 64-bit little-endian
# field at <offset> of the stream replaced.
patch_u64 () {
	"$PYTHON" -c "import sys; o, v = int(sys.argv[1]), int(sys.argv[2]); d = sys.stdin.buffer.read()
sys.stdout.buffer.write(d[:o] + v.to_bytes(8, \"little\") + d[o + 8:])" "$1" "$2"
}

# outside_state: the outside directory, every byte and time of it.
outside_state () {
	find outside -printf '%p %y %s %T@ %l\n' | sort &&
	md5sum outside/victim
}

test_expect_success 'setup: a blob, an outside directory with a victim file' '
	git init -q repo &&
	blob=$(echo hello | git -C repo hash-object -w --stdin) &&
	mkdir outside &&
	echo precious >outside/victim &&
	touch -d @1000000000 outside/victim outside &&
	fresh_wt &&
	outside_state >before.state
'

test_expect_success SYMLINKS 'hostile names are refused, symlinked dirs collide, nothing outside changes' '
	cat >spec <<-EOF &&
	id=0 oid=$blob mode=100644 path=../escaped
	id=1 oid=$blob mode=100644 path=$TRASH_DIRECTORY/abs
	id=2 oid=$blob mode=100644 path=.git/hooks/post-checkout
	id=3 oid=$blob mode=100644 path=.GIT/config
	id=4 oid=$blob mode=100644 path=git~1/config
	id=5 oid=$blob mode=100644 path=sub/.git/x
	id=6 oid=$blob mode=100644 path=.git./x
	id=7 oid=$blob mode=100644 path=real/../../escaped
	id=8 oid=$blob mode=100644 path=real//x
	id=9 oid=$blob mode=100644 path=real/
	id=10 oid=$blob mode=100644 path=d/new
	id=11 oid=$blob mode=100644 path=d/victim
	id=12 oid=$blob mode=100644 path=link
	id=13 oid=$blob mode=100644 path=f/x
	id=14 oid=$blob mode=100644 path=real/good
	EOF
	$PC_ITEMS pack <spec >batch &&
	run_worker batch "$HELPER" &&
	cat >expect <<-\EOF &&
	0 FAILED
	1 FAILED
	2 FAILED
	3 FAILED
	4 FAILED
	5 FAILED
	6 FAILED
	7 FAILED
	8 FAILED
	9 FAILED
	10 COLLIDED
	11 COLLIDED
	12 COLLIDED
	13 COLLIDED
	14 WRITTEN
	flush
	eof
	EOF
	sed "s/ size=.*//" out >actual &&
	test_cmp expect actual &&
	test "$(cat rc)" = 0 &&
	test_line_count = 10 err &&
	test_grep "^error: invalid path '"'"'\.\./escaped'"'"'$" err &&
	test_grep "^error: invalid path '"'"'\.GIT/config'"'"'$" err &&
	! grep -v "^error: invalid path" err &&
	outside_state >after.state &&
	test_cmp before.state after.state &&
	test_path_is_missing escaped &&
	test_path_is_missing abs &&
	test_path_is_missing outside/new &&
	test_path_is_missing outside/by-link &&
	echo precious >expect && test_cmp expect outside/victim &&
	echo hello >expect && test_cmp expect wt/real/good
'

test_expect_success 'git'"'"'s own worker trusts its input: "../escaped" lands outside' '
	fresh_wt &&
	echo "id=0 oid=$blob mode=100644 path=../escaped" | $PC_ITEMS pack >batch &&
	test_when_finished "rm -f escaped" &&
	run_worker batch "$REAL_GIT" checkout--worker &&
	printf "0 WRITTEN\nflush\neof\n" >expect &&
	sed "s/ size=.*//" out >actual &&
	test_cmp expect actual &&
	test_path_is_file escaped &&
	rm escaped &&
	run_worker batch "$HELPER" &&
	printf "0 FAILED\nflush\neof\n" >expect &&
	test_cmp expect out &&
	test_path_is_missing escaped
'

test_expect_success SYMLINKS 'a symlinked leading directory collides, for git and for us' '
	fresh_wt &&
	printf "id=0 oid=$blob mode=100644 path=d/new\nid=1 oid=$blob mode=100644 path=link\n" |
		$PC_ITEMS pack >batch &&
	printf "0 COLLIDED\n1 COLLIDED\nflush\neof\n" >expect &&
	run_worker batch "$REAL_GIT" checkout--worker &&
	test_cmp expect out &&
	run_worker batch "$HELPER" &&
	test_cmp expect out &&
	test_must_be_empty err &&
	outside_state >after.state &&
	test_cmp before.state after.state
'

# malformed <name> <command producing the input> <expected message>
malformed () {
	test_expect_success "malformed input: $1" '
		fresh_wt &&
		(cd wt && ls -A) >wt.before &&
		{ '"$2"'; } >bad &&
		run_worker bad "$HELPER" &&
		test "$(cat rc)" = 128 &&
		test_line_count = 1 err &&
		test_grep "^fatal: .*'"$3"'" err &&
		! grep Traceback err &&
		printf "eof\n" >expect && test_cmp expect out &&
		(cd wt && ls -A) >wt.after &&
		test_cmp wt.before wt.after
	'
}

malformed 'truncated pkt-line' \
	'echo "id=0 oid=$blob mode=100644 path=real/a" | $PC_ITEMS pack | head -c 50' \
	'end of input inside a pkt-line'
malformed 'no flush' \
	'echo "id=0 oid=$blob mode=100644 path=real/a" | $PC_ITEMS pack --no-flush' \
	'end of input before flush (after 1 items)'
malformed 'lengths that lie' \
	'echo "id=0 oid=$blob mode=100644 path=real/a" | $PC_ITEMS pack | patch_u64 68 7' \
	'corrupted item 0 (lengths 0+7 do not match 6 bytes)'
malformed 'bad hex in a length' \
	'printf "00zz0000"' \
	"bad line length character: .00zz.$"
malformed 'length beyond 65520' \
	'printf "fff1"; head -c 65517 /dev/zero' \
	'bad line length 65521'
malformed 'a delim inside a batch' \
	'echo "id=0 oid=$blob mode=100644 path=real/a" | $PC_ITEMS pack --no-flush; printf 00010000' \
	'unexpected special packet 0001'
malformed 'unknown crlf_action' \
	'echo "id=0 oid=$blob mode=100644 crlf=9 path=real/a" | $PC_ITEMS pack' \
	'unknown crlf_action 9'

test_expect_success 'garbage after a flush: the first batch is answered, then exit 128' '
	fresh_wt &&
	{ echo "id=0 oid=$blob mode=100644 path=real/a" | $PC_ITEMS pack && printf "garbage"; } >bad &&
	run_worker bad "$HELPER" &&
	test "$(cat rc)" = 128 &&
	printf "0 WRITTEN\nflush\neof\n" >expect &&
	sed "s/ size=.*//" out >actual &&
	test_cmp expect actual &&
	echo "fatal: protocol error: bad line length character: '"'"'garb'"'"'" >expect &&
	test_cmp expect err
'

test_expect_success 'a closed stdout is /dev/null, as for git (sanitize_stdfds)' '
	fresh_wt &&
	echo "id=0 oid=$blob mode=100644 path=real/a" | $PC_ITEMS pack >batch &&
	(cd wt && GIT_DIR="$TRASH_DIRECTORY/repo/.git" "$REAL_GIT" checkout--worker <../batch >&-) &&
	rm wt/real/a &&
	(
		cd wt &&
		GIT_DIR="$TRASH_DIRECTORY/repo/.git" GIT_TRACE2_EVENT="$TRASH_DIRECTORY/trace" \
			"$HELPER" <../batch >&- 2>../err
	) &&
	test_must_be_empty err &&
	echo hello >expect && test_cmp expect wt/real/a &&
	# Had fd 1 stayed closed, the trace file would have got fd 1, and the results.
	test_path_is_file trace &&
	! grep -v "^{" trace
'
test_done
