# A small sharness-style test library, after git's t/test-lib.sh.
#
# A test script sets test_description, sources this file, runs
# test_expect_success blocks and ends with test_done. Each script runs in its
# own trash directory (t/trash.<script>), with HOME and git config isolated.
#   test_expect_success [PREREQ,...] 'title' 'commands'
#   test_expect_failure [PREREQ,...] 'title' 'commands'   (known breakage)
#   test_must_fail cmd...   test_expect_code N cmd...   test_cmp expect actual   test_must_be_empty file
#   test_path_is_file/test_path_is_dir/test_path_is_missing/test_path_is_symlink
#   test_set_prereq NAME    test_have_prereq NAME
#   test_line_count = N file    test_when_finished 'cmds'
# Variables: TEST_DIRECTORY (t/), PROJECT_ROOT, TRASH_DIRECTORY, PC_ITEMS (the
# pc-items packer), PYTHON (the project's interpreter), REAL_GIT.

TEST_DIRECTORY=$(cd "$(dirname "$0")" && pwd)
PROJECT_ROOT=$(cd "$TEST_DIRECTORY/.." && pwd)
TEST_NAME=$(basename "$0" .sh)
TRASH_DIRECTORY="$TEST_DIRECTORY/trash.$TEST_NAME"

if test -x "$PROJECT_ROOT/.venv/bin/python"
then
	PYTHON="$PROJECT_ROOT/.venv/bin/python"
	PATH="$PROJECT_ROOT/.venv/bin:$PATH"
else
	PYTHON=$(command -v python3)
fi
REAL_GIT=$(command -v git)
PC_ITEMS="$PYTHON $TEST_DIRECTORY/helper/pc-items"
export PATH PYTHON REAL_GIT PC_ITEMS PROJECT_ROOT TEST_DIRECTORY

# Isolate from the user's and the machine's git configuration.
HOME="$TRASH_DIRECTORY"
GIT_CONFIG_NOSYSTEM=1
XDG_CONFIG_HOME="$TRASH_DIRECTORY/.config"
GIT_AUTHOR_NAME='A U Thor'
GIT_AUTHOR_EMAIL='author@example.com'
GIT_COMMITTER_NAME='C O Mitter'
GIT_COMMITTER_EMAIL='committer@example.com'
GIT_AUTHOR_DATE='1112354055 +0200'
GIT_COMMITTER_DATE='1112354055 +0200'
GIT_MERGE_VERBOSITY=5
export HOME GIT_CONFIG_NOSYSTEM XDG_CONFIG_HOME GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL \
	GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL GIT_AUTHOR_DATE GIT_COMMITTER_DATE
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_CONFIG_PARAMETERS \
	GIT_CONFIG_COUNT GIT_TRACE2 GIT_TRACE2_EVENT GIT_TRACE2_PERF GIT_TEST_CHECKOUT_WORKERS \
	GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_CEILING_DIRECTORIES
GIT_CEILING_DIRECTORIES="$TEST_DIRECTORY"
export GIT_CEILING_DIRECTORIES

test_count=0
test_success=0
test_failure=0
test_fixed=0
test_broken=0
test_skipped=0
satisfied_prereq=" "
test_cleanup=:

rm -rf "$TRASH_DIRECTORY" || { echo "FATAL: cannot remove $TRASH_DIRECTORY"; exit 1; }
mkdir -p "$TRASH_DIRECTORY" && cd "$TRASH_DIRECTORY" || exit 1
git config --global init.defaultBranch main
git config --global user.name 'A U Thor'
git config --global user.email 'author@example.com'
git config --global protocol.file.allow always

say() { printf '%s\n' "$*"; }

test_set_prereq() { satisfied_prereq="$satisfied_prereq$1 "; }
test_have_prereq() {
	local p
	for p in $(printf '%s' "$1" | tr ',' ' ')
	do
		case "$satisfied_prereq" in *" $p "*) ;; *) return 1 ;; esac
	done
	return 0
}

command -v cc >/dev/null 2>&1 && test_set_prereq CC
test -e /dev/fuse && test_set_prereq FUSE_DEVICE
test "$(id -u)" != 0 && test_set_prereq SANITY
ln -s x "$TRASH_DIRECTORY/.symlink-probe" 2>/dev/null && test_set_prereq SYMLINKS
rm -f "$TRASH_DIRECTORY/.symlink-probe"

test_when_finished() { test_cleanup="{ $*; } && ($test_cleanup)"; }

test_run_() {
	test_cleanup=:
	# Like git's test-lib: the body runs in this shell, so variables it sets
	# and exports are seen by later tests (cwd is reset after each test).
	eval "$1" >"$TRASH_DIRECTORY/.test-out" 2>&1 </dev/null
	local rc=$?
	(eval "$test_cleanup") >/dev/null 2>&1
	return $rc
}

test_expect_() {
	local expect=$1; shift
	local prereq=
	if test $# = 3; then prereq=$1; shift; fi
	test_count=$((test_count + 1))
	if test -n "$prereq" && ! test_have_prereq "$prereq"
	then
		test_skipped=$((test_skipped + 1))
		say "ok $test_count # skip $1 (missing $prereq)"
		return 0
	fi
	cd "$TRASH_DIRECTORY"
	if test_run_ "$2"
	then
		if test "$expect" = success
		then
			test_success=$((test_success + 1)); say "ok $test_count - $1"
		else
			test_fixed=$((test_fixed + 1)); say "ok $test_count - $1 # TODO known breakage vanished"
		fi
	else
		if test "$expect" = success
		then
			test_failure=$((test_failure + 1)); say "not ok $test_count - $1"
			sed 's/^/#	/' "$TRASH_DIRECTORY/.test-out"
			printf '%s\n' "$2" | sed 's/^/#	> /'
		else
			test_broken=$((test_broken + 1)); say "not ok $test_count - $1 # TODO known breakage"
		fi
	fi
	cd "$TRASH_DIRECTORY"
}

test_expect_success() { test_expect_ success "$@"; }
test_expect_failure() { test_expect_ failure "$@"; }

test_must_fail() {
	"$@"
	local rc=$?
	if test $rc = 0; then echo "test_must_fail: command succeeded: $*" >&2; return 1; fi
	if test $rc -gt 129 && test $rc -le 192; then echo "test_must_fail: died of signal $((rc - 128)): $*" >&2; return 1; fi
	if test $rc = 127; then echo "test_must_fail: command not found: $*" >&2; return 1; fi
	return 0
}
# test_expect_code <code> <cmd>...: cmd exits with exactly <code>
test_expect_code() {
	local want=$1 rc
	shift
	"$@"
	rc=$?
	test "$rc" = "$want" || { echo "exit code $rc, expected $want: $*" >&2; return 1; }
}
test_cmp() { diff -u "$1" "$2"; }
test_must_be_empty() {
	if test -s "$1"; then echo "'$1' is not empty:" >&2; cat "$1" >&2; return 1; fi
}
test_path_is_file() { test -f "$1" || { echo "File $1 doesn't exist" >&2; return 1; }; }
test_path_is_dir() { test -d "$1" || { echo "Directory $1 doesn't exist" >&2; return 1; }; }
test_path_is_missing() { ! test -e "$1" && ! test -L "$1" || { echo "Path $1 exists" >&2; return 1; }; }
test_path_is_symlink() { test -L "$1" || { echo "Symlink $1 doesn't exist" >&2; return 1; }; }
test_line_count() {
	local n; n=$(wc -l <"$3")
	test "$n" "$1" "$2" || { echo "test_line_count: $3 has $n lines, expected $1 $2" >&2; return 1; }
}
test_grep() {
	grep "$@" || { echo "test_grep: no match for: $*" >&2; return 1; }
}

test_done() {
	say "# passed $test_success of $test_count (failed $test_failure, skipped $test_skipped, broken $test_broken)"
	mkdir -p "$TEST_DIRECTORY/test-results"
	printf 'total %d\nsuccess %d\nfailed %d\nskipped %d\nbroken %d\nfixed %d\n' \
		"$test_count" "$test_success" "$test_failure" "$test_skipped" "$test_broken" "$test_fixed" \
		>"$TEST_DIRECTORY/test-results/$TEST_NAME.counts"
	if test $test_failure = 0
	then
		cd "$TEST_DIRECTORY" && rm -rf "$TRASH_DIRECTORY"
		say "1..$test_count"
		exit 0
	fi
	say "1..$test_count"
	exit 1
}
