#!/bin/bash
# t_bench_smoke.sh - the benchmark harness (contrib/bench/run.sh) still runs
# end to end: the target patterns, tiny, on one raidfs raid5 of 4 members
# kept in the scratch directory, then its report.
#
# It fails when run.sh fails, when the report is missing, when the report's
# table has no number for the sequential write of raid5-4, when results.tsv
# has no positive value for it, when a measurement failed, or when a mount
# of the run is left behind.  Timings are not checked: a benchmark never
# gates.
. "$(dirname "$0")/lib.sh"
need_fuse
command -v fio >/dev/null || skip "fio is missing (apt-get install fio)"
need_python

out=$T/out
mkdir -p "$T/tmp"
TMPDIR=$T/tmp "$SRCDIR/contrib/bench/run.sh" --no-install --raidfs "$RAIDFS" --members-dir "$T" \
	--out "$out" --configs raid5-4 --patterns targets \
	--size 8M --runtime 1 --nfiles 50 >"$T/run.log" 2>&1 ||
	{ tail -n 30 "$T/run.log" >&2; fail "contrib/bench/run.sh failed (log above)"; }

[ -s "$out/report.md" ] || fail "no report.md in $out"
grep -Eq '^\| raid5-4 \| [0-9]+ \| [0-9]+ \| [0-9]+ \|' "$out/report.md" ||
	{ cat "$out/report.md" >&2; fail "the report has no seq write/read/random read numbers for raid5-4"; }
awk -F'\t' '$1 == "raid5-4" && $2 == "seqwrite.mibs" && $3 > 0 { ok = 1 } END { exit !ok }' "$out/results.tsv" ||
	fail "results.tsv has no positive seqwrite.mibs for raid5-4"
if grep -q $'\terr\.' "$out/results.tsv"; then
	grep $'\terr\.' "$out/results.tsv" >&2
	fail "a measurement failed"
fi
grep -q " $T/" /proc/mounts && fail "run.sh left a mount behind: $(grep " $T/" /proc/mounts)"
ls -d "$T"/raidfs-bench.* "$T"/tmp/raidfs-bench.* >/dev/null 2>&1 && fail "run.sh left scratch files behind in $T"
log "ok: $(grep -E '^\| raid5-4 \| [0-9]' "$out/report.md" | head -n 1)"
exit 0
