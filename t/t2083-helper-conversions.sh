#!/usr/bin/env bash
test_description='git checkout with our helper as its worker converts like git

The conversion corpus (t/helper/convert_corpus.py) is committed unconverted,
with a .gitattributes that puts every text under every way of asking for an
end-of-line conversion (text, eol, crlf, binary, with and without ident) and
the UTF-8 texts under working-tree-encodings. For each core.autocrlf x
core.eol setting, two twins borrow the objects and check the commit out: one
with git alone (workers=1), one with real git driving our helper (two
workers, threshold 0). Their work trees must be identical byte for byte, and
so must the errors git reports; the index must hold the stat data of the
converted files. The
setting goes into the twins'"'"' config or onto the command line (-c, which git
hands to its workers in GIT_CONFIG_PARAMETERS).'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-git-helper.sh"

# Thousands of small files per checkout: on tmpfs when there is one.
if test -d /dev/shm && test -w /dev/shm
then
	S=$(mktemp -d /dev/shm/t2083.XXXXXX) || exit 1
else
	S="$TRASH_DIRECTORY/scratch" && mkdir "$S" || exit 1
fi

test_expect_success 'setup: the corpus committed unconverted, attributes on top' '
	setup_git_helper_exec_path &&
	git init -q "$S/src" &&
	"$PYTHON" "$TEST_DIRECTORY/helper/convert_corpus.py" tree "$S/src" attributes &&
	git -C "$S/src" -c core.autocrlf=false add -A &&
	cp attributes "$S/src/.gitattributes" &&
	git -C "$S/src" add .gitattributes &&
	git -C "$S/src" commit -qm corpus &&
	git -C "$S/src" rev-parse HEAD >commit &&
	git -C "$S/src" ls-files >files &&
	test $(wc -l <files) -gt 1000
'

# twin <name> <autocrlf> <eol> <how>: an empty repository borrowing src's
# objects, with the setting in its config (how=config) or not (how=cmdline).
twin () {
	rm -rf "$1" &&
	git init -q "$1" &&
	echo "$S/src/.git/objects" >"$1/.git/objects/info/alternates" &&
	if test "$4" = config
	then
		git -C "$1" config core.autocrlf "$2" &&
		git -C "$1" config core.eol "$3"
	fi
}

# check_setting <autocrlf> <eol> <how>
check_setting () {
	local a=$1 e=$2 how=$3 c
	c=$(cat commit) &&
	if test "$how" = cmdline
	then
		set -- -c core.autocrlf="$a" -c core.eol="$e"
	else
		set --
	fi &&
	twin "$S/plain" "$a" "$e" "$how" &&
	twin "$S/helper" "$a" "$e" "$how" &&
	git -C "$S/plain" "$@" -c checkout.workers=1 checkout -q "$c" 2>plain.err &&
	: >"$HELPER_EXEC_PATH.log" &&
	git_with_helper -C "$S/helper" "$@" -c checkout.workers=2 -c checkout.thresholdForParallelism=0 \
		checkout -q "$c" 2>helper.err &&
	test "$(helper_runs)" = 2 &&
	same_worktree "$S/plain" "$S/helper" &&
	sort plain.err >plain.err.sorted &&
	sort helper.err >helper.err.sorted &&
	test_cmp plain.err.sorted helper.err.sorted &&
	test_grep "failed to encode" plain.err &&
	# Each WRITTEN result carried the converted file'"'"'s stat data.
	(cd "$S" && index_stat_matches_disk helper) &&
	# The attributes took effect: many files differ in size from their blobs.
	git -C "$S/src" ls-tree -r -l HEAD | awk "{ print \$5, \$4 }" | LC_ALL=C sort >blob-sizes &&
	(cd "$S/helper" && git ls-files | xargs stat -c "%n %s") | LC_ALL=C sort >file-sizes &&
	test $(comm -13 blob-sizes file-sizes | wc -l) -gt 300
}

n=0
for a in true false input
do
	for e in lf crlf native
	do
		case $((n % 2)) in 0) how=config ;; 1) how=cmdline ;; esac
		n=$((n + 1))
		test_expect_success "core.autocrlf=$a core.eol=$e ($how): helper twin = git twin" "
			check_setting $a $e $how
		"
	done
done

rm -rf "$S"
test_done
