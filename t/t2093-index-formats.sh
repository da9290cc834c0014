#!/usr/bin/env bash
test_description='index formats: a split index, index v4 and a cone sparse checkout switched
with 2 helpers as git switches them (entries, skip-worktree bits, version, split part)'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-coordinator.sh"

# index_header <dir>: version, entry count and extension signatures of its index file.
index_header() {
	"$PYTHON" -c '
import sys
from git_checkout_helper.index_file import parse_index
i = parse_index(open(sys.argv[1], "rb").read())
print(i.version, len(i.entries), " ".join(s.decode() for s, _ in i.extensions))
' "$1/.git/index"
}

test_expect_success 'setup: source repository' '
	make_coordinator_repo src
'

for MODE in split v4 sparse
do
	test_expect_success "$MODE: switch with 2 helpers (items streamed) as git" '
		rm -rf $MODE.ours $MODE.git &&
		twins src $MODE &&
		past=$(($(date +%s) - 10)) &&
		for d in $MODE.ours $MODE.git
		do
			# no entry racily clean: which ones are depends on when each
			# twin wrote its index, and racy ones go to a split index
			find $d -path $d/.git -prune -o -type f -exec touch -d @$past {} + &&
			# but racily clean symlinks, in the second the index is
			# stamped with: the refresh of the checkout finds them
			# unchanged (CE_UPTODATE), so they stay out of a split part
			now=$(date +%s) &&
			find $d -path $d/.git -prune -o -type l -exec touch -h -d @$now {} + &&
			git -C $d update-index -q --refresh &&
			case $MODE in
			split)
				git -C $d update-index --split-index &&
				touch -d @$now $d/.git/index ;;
			v4) git -C $d update-index --index-version 4 ;;
			sparse) git -C $d sparse-checkout set --cone "$(git -C src ls-tree -d --name-only main | sed -n 2p)" ;;
			esac || return 1
		done &&
		git -C $MODE.git checkout -q other &&
		(cd $MODE.ours && GIT_TEST_CHECKOUT_WORKERS=2 git parallel-checkout -q -v other) >report &&
		grep -q "\"streamed\":true" report &&
		test_cmp_worktrees $MODE.ours $MODE.git &&
		git -C $MODE.ours ls-files -s -t >ours.ls &&
		git -C $MODE.git ls-files -s -t >git.ls &&
		test_cmp git.ls ours.ls &&
		index_header $MODE.ours >ours.hdr &&
		index_header $MODE.git >git.hdr &&
		test_cmp git.hdr ours.hdr &&
		verify_clean $MODE.ours
	'
done

test_done
