#!/bin/sh
# Install what is needed, build, and run the whole test suite (make check).
# Ends with the line "N passed, N failed, N skipped".
set -e
cd "$(dirname "$0")/.."
sh contrib/install-deps.sh
sh contrib/build.sh
set +e
make -s check > test-output.txt 2>&1
rc=$?
set -e
cat test-output.txt
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
