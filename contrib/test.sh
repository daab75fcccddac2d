#!/bin/sh
# Install what is needed, build, and run the tests: the quick tier (`make
# check`: the unit tests and one configuration of every scenario, about 8
# minutes on two cores), or with RAIDFS_TEST_TIER=long the whole matrix
# (`make check-long`).  Each test's result is printed as it ends, numbered
# and with the time since the start ("[12/51 3m05s] PASS: tests/..."; the
# whole output is also kept in test-output.txt); the last 40 lines of each
# failed test's log follow, and last the line "N passed, N failed, N
# skipped" (.ci/run reads it).  contrib/install-deps.sh waits for the
# package manager when it is busy.
set -e
cd "$(dirname "$0")/.."
sh contrib/install-deps.sh
sh contrib/build.sh
target=check
[ "${RAIDFS_TEST_TIER:-quick}" != long ] || target=check-long
set +e
# results of an earlier run (of a test no longer in the list) do not count
find tests -name '*.trs' -exec rm -f {} +
# two scenarios at a time: they mostly wait (mounts, sleeps, kills), so
# this halves the time on two cores; each works in its own scratch tree
rcfile=$(mktemp)
ntests=$(make -s print-tests | wc -w)
echo "running the ${RAIDFS_TEST_TIER:-quick} tier: $ntests tests, two at a time; each result as it ends"
start=$(date +%s)
# each result line of the harness ("PASS: tests/..."), numbered, with the
# time since the start
{ make -s -j2 "$target" 2>&1; echo $? >"$rcfile"; } | {
	k=0
	while IFS= read -r line; do
		case $line in
		PASS:* | FAIL:* | SKIP:* | XFAIL:* | XPASS:* | ERROR:*)
			k=$((k + 1))
			t=$(($(date +%s) - start))
			printf '[%d/%d %dm%02ds] %s\n' "$k" "$ntests" $((t / 60)) $((t % 60)) "$line"
			;;
		*) printf '%s\n' "$line" ;;
		esac
	done
} | tee test-output.txt
rc=$(cat "$rcfile")
rm -f "$rcfile"
set -e
# per-test results from the automake harness (.trs files)
pass=$(grep -h '^:test-result: PASS' $(find tests -name '*.trs') 2>/dev/null | wc -l)
fail=$(grep -hE '^:test-result: (FAIL|ERROR|XPASS)' $(find tests -name '*.trs') 2>/dev/null | wc -l)
skip=$(grep -h '^:test-result: SKIP' $(find tests -name '*.trs') 2>/dev/null | wc -l)
if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
	fail=1	# the harness itself failed (build error, ...)
fi
for f in $(grep -lE '^:test-result: (FAIL|ERROR)' $(find tests -name '*.trs') 2>/dev/null); do
	echo "---- ${f%.trs}.log (last 40 lines)"
	tail -n 40 "${f%.trs}.log"
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
