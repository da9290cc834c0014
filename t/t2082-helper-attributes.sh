#!/usr/bin/env bash
test_description='parallel checkout with attributes, our helper as the worker

git'"'"'s t2082-parallel-checkout-attributes.sh, with real git driving our helper
(two workers, threshold 0): each scenario runs twice, once with git'"'"'s own
checkout--worker and once with ours, git'"'"'s checks are made on ours, and the
two work trees must be identical. Every batch our helper receives is kept,
so the filter scenario can show that a file with a smudge filter never
reaches a helper (git writes it itself).'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-git-helper.sh"

# decode_batches: the paths of the items in every batch our helper was sent.
decode_batches () {
	"$PYTHON" - "$HELPER_EXEC_PATH".in.* <<-\EOF
	import os, sys
	sys.path.insert(0, os.environ["PROJECT_ROOT"])
	from git_checkout_helper.pktline import FLUSH, PktReader
	from git_checkout_helper.wire import REQUEST_LAYOUTS, decode_item
	for path in sys.argv[1:]:
	    fd = os.open(path, os.O_RDONLY)
	    reader = PktReader(fd)
	    while True:
	        pkt = reader.read_pkt()
	        if pkt is None:
	            break
	        if pkt != FLUSH:
	            print(decode_item(pkt, REQUEST_LAYOUTS["git"], 1).name.decode())
	EOF
}

test_expect_success 'setup: our helper, keeping what it is sent' '
	setup_git_helper_exec_path &&
	cat >"$HELPER_EXEC_PATH/git" <<-WRAPPER &&
	#!/bin/sh
	if test "\$1" = checkout--worker
	then
		shift
		echo "helper \$*" >>"$HELPER_EXEC_PATH.log"
		tee "$HELPER_EXEC_PATH.in.\$\$" | "$OUR_HELPER" "\$@"
		exit
	fi
	exec "$REAL_GIT" "\$@"
	WRAPPER
	chmod +x "$HELPER_EXEC_PATH/git"
'

# both <name> <git command...>: run the command in <name>.git with git's own
# workers and in <name>.ours with ours, two workers and threshold 0 each.
both () {
	local name=$1
	shift
	rm -f "$HELPER_EXEC_PATH".in.* &&
	: >"$HELPER_EXEC_PATH.log" &&
	(cd "$name.git" && GIT_TRACE2="$TRASH_DIRECTORY/$name.trace" \
		git -c checkout.workers=2 -c checkout.thresholdForParallelism=0 "$@") &&
	test "$(grep -c "child_start.*checkout--worker" "$name.trace")" = 2 &&
	(cd "$name.ours" && git_with_helper -c checkout.workers=2 -c checkout.thresholdForParallelism=0 "$@") &&
	test "$(helper_runs)" = 2
}

test_expect_success 'parallel-checkout with ident' '
	for who in git ours
	do
		git init -q ident.$who &&
		(
			cd ident.$who &&
			echo "A ident" >.gitattributes &&
			echo "\$Id\$" >A &&
			echo "\$Id\$" >B &&
			git add -A &&
			git commit -qm id &&
			rm A B
		) || return 1
	done &&
	both ident reset -q --hard &&
	grep -E "\\\$Id: [0-9a-f]{40} \\\$" ident.ours/A &&
	grep "\\\$Id\\\$" ident.ours/B &&
	same_worktree ident.git ident.ours &&
	git -C ident.ours diff-files --quiet
'

test_expect_success 'parallel-checkout with re-encoding' '
	echo text >utf8-text &&
	iconv -f UTF-8 -t UTF-16 <utf8-text >utf16-text &&
	for who in git ours
	do
		git init -q encoding.$who &&
		(
			cd encoding.$who &&
			echo "A working-tree-encoding=UTF-16" >.gitattributes &&
			cp ../utf16-text A &&
			cp ../utf8-text B &&
			git add A B .gitattributes &&
			git commit -qm encoding &&
			git cat-file -p :A >A.internal &&
			test_cmp ../utf8-text A.internal &&
			rm A B
		) || return 1
	done &&
	both encoding checkout A B &&
	cmp utf16-text encoding.ours/A &&
	cmp utf8-text encoding.ours/B &&
	same_worktree encoding.git encoding.ours
'

test_expect_success 'parallel-checkout with eol conversions' '
	printf "multi\r\nline\r\ntext" >crlf-text &&
	printf "multi\nline\ntext" >lf-text &&
	for who in git ours
	do
		git init -q eol.$who &&
		(
			cd eol.$who &&
			git config core.autocrlf false &&
			echo "A eol=crlf" >.gitattributes &&
			cp ../crlf-text A &&
			cp ../lf-text B &&
			git add A B .gitattributes &&
			git commit -qm eol &&
			git cat-file -p :A >A.internal &&
			cmp ../lf-text A.internal &&
			rm A B
		) || return 1
	done &&
	both eol checkout A B &&
	cmp crlf-text eol.ours/A &&
	cmp lf-text eol.ours/B &&
	same_worktree eol.git eol.ours
'

# Entries that need an external filter are not eligible for parallel
# checkout: git writes them itself, and our helper is never sent them.
test_expect_success 'parallel-checkout and external filter' '
	write_script() { { echo "#!/bin/sh" && cat; } >"$1" && chmod +x "$1"; } &&
	write_script rot13.sh <<-\EOF &&
	tr \
	  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" \
	  "nopqrstuvwxyzabcdefghijklmNOPQRSTUVWXYZABCDEFGHIJKLM"
	EOF
	echo abcd >original &&
	echo nopq >rot13 &&
	for who in git ours
	do
		git init -q filter.$who &&
		(
			cd filter.$who &&
			git config filter.rot13.clean "\"$TRASH_DIRECTORY/rot13.sh\"" &&
			git config filter.rot13.smudge "\"$TRASH_DIRECTORY/rot13.sh\"" &&
			git config filter.rot13.required true &&
			echo "A filter=rot13" >.gitattributes &&
			cp ../original A &&
			cp ../original B &&
			cp ../original C &&
			git add A B C .gitattributes &&
			git commit -qm filter &&
			git cat-file -p :A >A.internal &&
			test_cmp ../rot13 A.internal &&
			git cat-file -p :B >B.internal &&
			test_cmp ../original B.internal &&
			rm A B C *.internal
		) || return 1
	done &&
	both filter checkout A B C &&
	test_cmp original filter.ours/A &&
	test_cmp original filter.ours/B &&
	test_cmp original filter.ours/C &&
	same_worktree filter.git filter.ours &&
	decode_batches | sort >sent &&
	printf "B\nC\n" >expect &&
	test_cmp expect sent
'

test_done
