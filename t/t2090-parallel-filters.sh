#!/usr/bin/env bash
test_description='smudge filters in the helpers, opt-in (filter.<driver>.parallel)

Files behind a filter driver marked filter.<driver>.parallel=true are written
by our helpers (wire extension --filters): a one-shot smudge per file in the
helper, a long-running process filter once per helper. Every scenario is
differential: the same filter under git checkout in a twin repository, and the
bytes, modes, index and status must agree. Concurrency is proven, not timed:
$FILTER_BARRIER makes the first smudge of each filter wait until a second
filter has started one (two filters at once, or the test fails).'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-coordinator.sh"

FILTER_PROCESS="$TEST_DIRECTORY/helper/test-filter-process"

git lfs version >/dev/null 2>&1 && test_set_prereq GIT_LFS

# filtered <name> <config>...: two clones of src without a checkout,
# <name>.git and <name>.ours, each with the given config.
filtered() {
	local name=$1
	shift
	rm -rf "$name.git" "$name.ours" &&
	git clone -q -n src "$name.git" &&
	git clone -q -n src "$name.ours" &&
	for kv in "$@"
	do
		git -C "$name.git" config "${kv%%=*}" "${kv#*=}" &&
		git -C "$name.ours" config "${kv%%=*}" "${kv#*=}" || return 1
	done
}

# content_status <dir>: the paths whose content, cleaned, is not what the
# index records (git status by content: a file left unfiltered by a failing
# optional filter differs, whether or not its index entry is racily clean).
content_status() {
	git -C "$1" ls-files -s | while read -r mode oid stage path
	do
		h=$(git -C "$1" hash-object --path="$path" "$path") || return 1
		test "$h" = "$oid" || echo "$path"
	done
}

# same <name>: identical bytes, modes, index entries and HEAD, and the same
# files differ from the index by content.
same() {
	test_cmp_worktrees "$1.ours" "$1.git" &&
	test_cmp_index "$1.ours" "$1.git" &&
	content_status "$1.git" >status.git &&
	content_status "$1.ours" >status.ours &&
	test_cmp status.git status.ours
}

# expect_code <code> <command>...: the command exits with exactly <code>.
expect_code() {
	local want=$1 rc=0
	shift
	"$@" || rc=$?
	test "$rc" = "$want" || { echo "exit code $rc, expected $want: $*" >&2; return 1; }
}

test_expect_success 'setup: 24 files through a rot13 filter, some with ident and eol=crlf first' '
	cat >rot13.sh <<-\EOF &&
	#!/bin/sh
	# rot13 one-shot smudge/clean. With $FILTER_BARRIER, the first call
	# takes slot 1 and waits (30 s at most, then fails) until another call
	# has taken slot 2: only a call running at the same time can.
	test -n "$FILTER_LOG" && echo "$1" >>"$FILTER_LOG"
	if test -n "$FILTER_BARRIER"
	then
		mkdir -p "$FILTER_BARRIER" &&
		if mkdir "$FILTER_BARRIER/1" 2>/dev/null
		then
			n=0 &&
			while ! test -d "$FILTER_BARRIER/2"
			do
				n=$((n + 1)) && test $n -lt 3000 || exit 1
				sleep 0.01
			done
		else
			mkdir "$FILTER_BARRIER/2" 2>/dev/null || :
		fi
	fi
	tr abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ \
	   nopqrstuvwxyzabcdefghijklmNOPQRSTUVWXYZABCDEFGHIJKLM
	EOF
	chmod +x rot13.sh &&
	git init -q src &&
	(
		cd src &&
		cat >.gitattributes <<-\EOF &&
		*.r filter=r
		crlf/*.r eol=crlf
		id/*.r ident
		EOF
		mkdir -p a b crlf id &&
		for i in $(seq 1 6)
		do
			printf "hello %s\nworld\n" $i >a/f$i.r &&
			printf "bad or good %s\n" $i >b/bad$i.r &&
			printf "line one %s\nline two\n" $i >crlf/c$i.r &&
			printf "\$Vq\$ file %s\n" $i >id/i$i.r || return 1
		done &&
		echo plain >zz-plain &&
		git -c filter.r.clean="$TRASH_DIRECTORY/rot13.sh" add . &&
		git commit -qm filtered
	) &&
	git -C src cat-file -p HEAD:a/f1.r >stored &&
	printf "uryyb 1\njbeyq\n" >expect && test_cmp expect stored
'

test_expect_success 'one-shot smudge in two helpers at once: bytes and index as git' '
	filtered one filter.r.smudge="$TRASH_DIRECTORY/rot13.sh %f" filter.r.clean="$TRASH_DIRECTORY/rot13.sh" \
		filter.r.required=true filter.r.parallel=true &&
	git -C one.git checkout -q main &&
	rm -rf barrier &&
	(cd one.ours && FILTER_BARRIER="$TRASH_DIRECTORY/barrier" FILTER_LOG="$TRASH_DIRECTORY/one.log" \
		git parallel-checkout -q -v -j 2 --threshold 0 main >../report) &&
	test_path_is_dir barrier/2 &&
	test_grep "\"parallel_items\":26,\"sequential_items\":0,\"workers\":2" report &&
	sort one.log >got && git -C src ls-files "*.r" >want && test_cmp want got &&
	printf "line one 1\r\nline two\r\n" >expect &&
	test_cmp expect one.ours/crlf/c1.r &&
	test_grep "^.Vq: [0-9n-s]\{40\} . file 1\$" one.ours/id/i1.r &&
	same one && verify_clean one.ours
'

test_expect_success 'process filter: one instance per helper, concurrent, bytes as git' '
	filtered proc filter.r.process="$FILTER_PROCESS" filter.r.required=true filter.r.parallel=true &&
	(cd proc.git && FILTER_LOG="$TRASH_DIRECTORY/proc.git.log" git checkout -q main) &&
	rm -rf barrier &&
	(cd proc.ours && FILTER_BARRIER="$TRASH_DIRECTORY/barrier" FILTER_LOG="$TRASH_DIRECTORY/proc.ours.log" \
		git parallel-checkout -q -v -j 2 --threshold 0 main >../report) &&
	test "$(ls barrier | wc -l)" = 2 &&
	test_grep "\"parallel_items\":26,\"sequential_items\":0,\"workers\":2" report &&
	same proc && verify_clean proc.ours &&
	# Two filter processes, each with one parent (its helper), the parents
	# distinct; every file smudged once, with the blob git names.
	cut -d" " -f1,2 proc.ours.log | sort -u >pids &&
	test_line_count = 2 pids &&
	cut -d" " -f2 pids | sort -u >parents && test_line_count = 2 parents &&
	grep " smudge " proc.git.log | cut -d" " -f4- | sort >want &&
	grep " smudge " proc.ours.log | cut -d" " -f4- | sort >got &&
	test_cmp want got &&
	test_line_count = 24 got
'

test_expect_success 'without the opt-in, or with another helper program, filtered files stay in the coordinator' '
	filtered plain filter.r.process="$FILTER_PROCESS" filter.r.required=true &&
	git -C plain.git checkout -q main &&
	(cd plain.ours && FILTER_LOG="$TRASH_DIRECTORY/plain.log" \
		git parallel-checkout -q -v -j 2 --threshold 0 main >../report) &&
	test_grep "\"parallel_items\":2,\"sequential_items\":24,\"workers\":2" report &&
	cut -d" " -f1 plain.log | sort -u >pids && test_line_count = 1 pids &&
	same plain &&
	filtered worker filter.r.process="$FILTER_PROCESS" filter.r.required=true filter.r.parallel=true &&
	git -C worker.git checkout -q main &&
	(cd worker.ours && git parallel-checkout -q -v -j 2 --threshold 0 \
		--helper-cmd "git checkout--worker" main >../report) &&
	test_grep "\"parallel_items\":2,\"sequential_items\":24,\"workers\":2" report &&
	same worker
'

test_expect_success 'a parallel driver with -j 1: written in process through the same code, bytes as git' '
	filtered seq filter.r.process="$FILTER_PROCESS" filter.r.required=true filter.r.parallel=true &&
	git -C seq.git checkout -q main &&
	(cd seq.ours && FILTER_LOG="$TRASH_DIRECTORY/seq.log" git parallel-checkout -q -v -j 1 main >../report) &&
	test_grep "\"parallel_items\":0,\"sequential_items\":26,\"workers\":1" report &&
	cut -d" " -f1 seq.log | sort -u >pids && test_line_count = 1 pids &&
	same seq && verify_clean seq.ours
'

test_expect_success 'delay: offered by git, refused by our helpers, same bytes' '
	filtered delay filter.r.process="$FILTER_PROCESS --delay" filter.r.required=true filter.r.parallel=true &&
	(cd delay.git && FILTER_LOG="$TRASH_DIRECTORY/delay.git.log" git checkout -q main) &&
	test_grep "can-delay=1" delay.git.log &&
	test_grep "list_available_blobs" delay.git.log &&
	(cd delay.ours && FILTER_LOG="$TRASH_DIRECTORY/delay.ours.log" \
		git parallel-checkout -q -j 2 --threshold 0 main) &&
	! grep "can-delay" delay.ours.log &&
	! grep "list_available_blobs" delay.ours.log &&
	test "$(grep -c " smudge " delay.ours.log)" = 24 &&
	same delay && verify_clean delay.ours
'

test_expect_success 'optional filter failing (error, crash, unasked delayed): unfiltered content and git'"'"'s messages' '
	filtered fail filter.r.process="$FILTER_PROCESS --fail=bad2 --crash=bad4 --rogue-delay=bad6" \
		filter.r.parallel=true &&
	(cd fail.git && git checkout -q main 2>../err.git) &&
	(cd fail.ours && git parallel-checkout -q -j 2 --threshold 0 main 2>../err.ours) &&
	same fail &&
	echo "onq be tbbq 2" >expect && test_cmp expect fail.ours/b/bad2.r &&
	echo "bad or good 3" >expect && test_cmp expect fail.ours/b/bad3.r &&
	sort err.git >want && sort err.ours >got && test_cmp want got &&
	test_line_count = 3 got &&
	test_grep "^error: external filter .*test-filter-process --fail=bad2 --crash=bad4 --rogue-delay=bad6. failed\$" got
'

test_expect_success 'optional one-shot failing: its output dropped, unfiltered content, git'"'"'s messages' '
	cat >half.sh <<-\EOF &&
	#!/bin/sh
	# rot13, but for b/bad* only half of it, then a failure.
	case "$1" in
	b/bad*) head -c 5 | "$TRASH_DIRECTORY/rot13.sh"; echo "half.sh: cannot smudge $1" >&2; exit 3 ;;
	esac
	exec "$TRASH_DIRECTORY/rot13.sh"
	EOF
	chmod +x half.sh &&
	filtered half filter.r.smudge="TRASH_DIRECTORY=$TRASH_DIRECTORY $TRASH_DIRECTORY/half.sh %f" \
		filter.r.parallel=true &&
	(cd half.git && git checkout -q main 2>../err.git) &&
	(cd half.ours && git parallel-checkout -q -j 2 --threshold 0 main 2>../err.ours) &&
	same half &&
	echo "onq be tbbq 1" >expect && test_cmp expect half.ours/b/bad1.r &&
	sort err.git >want && sort err.ours >got && test_cmp want got &&
	test_line_count = 18 got &&
	test_grep "^half.sh: cannot smudge b/bad3.r\$" got &&
	test_grep "^error: external filter .* failed 3\$" got
'

test_expect_success 'required filter failing: no file at all for it, exit 128, index and HEAD kept' '
	filtered req filter.r.smudge="TRASH_DIRECTORY=$TRASH_DIRECTORY $TRASH_DIRECTORY/half.sh %f" \
		filter.r.required=true filter.r.parallel=true &&
	(cd req.git && expect_code 128 git checkout -q main 2>../err.git) &&
	test_grep "^fatal: b/bad1.r: smudge filter r failed\$" err.git &&
	git -C req.ours rev-parse HEAD >head.before &&
	(cd req.ours && expect_code 128 git parallel-checkout -q -j 2 --threshold 0 main 2>../err.ours) &&
	for i in 1 2 3 4 5 6
	do
		test_path_is_missing req.ours/b/bad$i.r &&
		test_grep "^error: b/bad$i.r: smudge filter r failed\$" err.ours || return 1
	done &&
	test_path_is_missing req.ours/.git/index &&
	test_path_is_missing req.ours/.git/index.lock &&
	git -C req.ours rev-parse HEAD >head.after && test_cmp head.before head.after &&
	printf "hello 1\nworld\n" >expect && test_cmp expect req.ours/a/f1.r
'

test_expect_success 'without the opt-in, a required filter failing: git'"'"'s die, word for word, same files left' '
	filtered reqc filter.r.smudge="TRASH_DIRECTORY=$TRASH_DIRECTORY $TRASH_DIRECTORY/half.sh %f" \
		filter.r.required=true &&
	(cd reqc.git && expect_code 128 git -c checkout.workers=2 -c checkout.thresholdForParallelism=0 \
		checkout -q main 2>../err.git) &&
	(cd reqc.ours && expect_code 128 git parallel-checkout -q -j 2 --threshold 0 main 2>../err.ours) &&
	test_cmp err.git err.ours &&
	test_line_count = 4 err.ours &&
	test_cmp_worktrees reqc.ours reqc.git &&
	test_path_is_missing reqc.ours/.git/index
'

test_expect_success 'the same with the coordinator'"'"'s unlinks in flight (checkout.coordinatorThreads): none sent ahead of the die' '
	filtered reqd filter.r.smudge="TRASH_DIRECTORY=$TRASH_DIRECTORY $TRASH_DIRECTORY/half.sh %f" \
		filter.r.required=true checkout.coordinatorThreads=4 &&
	(cd reqd.git && expect_code 128 git -c checkout.workers=2 -c checkout.thresholdForParallelism=0 \
		checkout -q main 2>../err.git) &&
	(cd reqd.ours && expect_code 128 git parallel-checkout -q -j 2 --threshold 0 main 2>../err.ours) &&
	test_cmp err.git err.ours &&
	test_cmp_worktrees reqd.ours reqd.git &&
	test_path_is_missing reqd.ours/.git/index
'

test_expect_success 'required process filter answering error: that file fails, the others are written' '
	filtered reqp filter.r.process="$FILTER_PROCESS --fail=bad5" filter.r.required=true filter.r.parallel=true &&
	(cd reqp.ours && expect_code 128 git parallel-checkout -q -j 2 --threshold 0 main 2>../err.ours) &&
	echo "error: b/bad5.r: smudge filter r failed" >expect && test_cmp expect err.ours &&
	test_path_is_missing reqp.ours/b/bad5.r &&
	echo "bad or good 4" >expect && test_cmp expect reqp.ours/b/bad4.r
'

test_expect_success 'a bad filter.<driver>.parallel value is one fatal line' '
	filtered bad filter.r.process="$FILTER_PROCESS" filter.r.parallel=maybe &&
	(cd bad.ours && expect_code 128 git parallel-checkout -q main 2>../err) &&
	echo "fatal: bad boolean config value '"'"'maybe'"'"' for '"'"'filter.r.parallel'"'"'" >expect &&
	test_cmp expect err
'

test_expect_success GIT_LFS 'git-lfs (process filter, -c filter.lfs.parallel=true): bytes as git' '
	git init -q lfs &&
	(
		cd lfs &&
		git lfs install --local >/dev/null &&
		git lfs track "*.bin" >/dev/null &&
		for i in $(seq 1 12)
		do
			"$PYTHON" -c "import sys; sys.stdout.buffer.write(bytes(range(256)) * $i)" >blob$i.bin || return 1
		done &&
		echo plain >plain.txt &&
		git add . && git commit -qm lfs
	) &&
	git -C lfs cat-file -p HEAD:blob1.bin >pointer &&
	test_grep "^version https://git-lfs.github.com/spec/v1" pointer &&
	for who in git ours
	do
		rm -rf lfs.$who &&
		git clone -q -n lfs lfs.$who &&
		git -C lfs.$who lfs install --local >/dev/null &&
		mkdir -p lfs.$who/.git/lfs &&
		cp -R lfs/.git/lfs/objects lfs.$who/.git/lfs/ || return 1
	done &&
	git -C lfs.git checkout -q main &&
	(cd lfs.ours && git -c filter.lfs.parallel=true parallel-checkout -q -v -j 2 --threshold 0 main >../report) &&
	test_grep "\"parallel_items\":14,\"sequential_items\":0" report &&
	cmp lfs/blob7.bin lfs.ours/blob7.bin &&
	same lfs && verify_clean lfs.ours
'

test_done
