#!/bin/sh
# Sums the per-script counts written by test_done; prints git's style summary
# and the plain closing line "shell: N passed, N failed".
dir=${1:-test-results}
total=0 success=0 failed=0 skipped=0 broken=0
for f in "$dir"/*.counts
do
	test -f "$f" || continue
	while read key value
	do
		case $key in
		total) total=$((total + value)) ;;
		success) success=$((success + value)) ;;
		failed) failed=$((failed + value)) ;;
		skipped) skipped=$((skipped + value)) ;;
		broken) broken=$((broken + value)) ;;
		esac
	done <"$f"
done
echo "shell tests: $total, skipped $skipped, known breakage $broken"
echo "shell: $success passed, $failed failed"
test $failed = 0
