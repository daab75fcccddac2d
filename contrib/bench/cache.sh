#!/usr/bin/env bash
# contrib/bench/cache.sh - what the write cache buys (issue 4, "Measure and
# record"): 4 KiB random write IOPS and 1 MiB sequential write MB/s of
# raidfs in write-back and in write-through, against passthrough_ll in the
# same run, over 4 and 8 tmpfs members, raid5 and raid6; and the member
# reads per MiB written (0 means every stripe went out whole).
#
#   contrib/bench/cache.sh [--raidfs PATH] [--out FILE] [--secs N]
#                          [--levels "raid5 raid6"] [--members "4 8"]
#                          [--latency MS] [--bbu shm|file] [--degraded]
#                          [--region SIZE] [--psync] [--rand-only]
#                          [--baseline PATH]
#
# --latency MS makes the members disk-like: every member operation of the
# raidfs arrays waits MS milliseconds (fault injection), which is where a
# write-back cache shows what it hides; passthrough_ll stays on plain tmpfs
# (it is the software ceiling, not a disk).
#
# --region SIZE: the random writes go into a file of SIZE (128M: the
# default 256 MiB cache holds it; 1G: a working set four times the cache,
# where the writer goes as fast as the destage drains).  --psync: the
# random writes come from one thread, one at a time (fio psync, iodepth
# 1), so each waits for its acknowledgement.  --rand-only: no sequential
# pattern.  The destage rate (the cache's destage_mbps at the end of the
# random writes) is reported for write-back.  --baseline PATH: also every
# raidfs configuration with this other binary (configurations "...@base"),
# one after the other in the same run.
#
# --degraded fails member 1 of every raidfs array after its mount: writes
# into stripes whose member is missing keep that member's chunk aside in a
# guard slot first (what that costs).  --bbu file puts the write-back
# cache's battery in a log file on the same tmpfs instead of /dev/shm.
#
# Everything lives on one fresh tmpfs; write-back runs with bbu=shm (the
# battery that survives kill -9) and the default cache size (256M); the
# random-write file (128 MiB) fits in it, as a controller's working set
# would.  fio: direct=1, libaio, iodepth 16 for random writes (one job),
# iodepth 8 for sequential writes of a new 512 MiB file.  Each pattern
# runs once per configuration, configurations one after the other; the
# machine's noise shows in the passthrough number measured in between.
# Every mount, daemon and the tmpfs are removed on exit, failure or Ctrl-C.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
RAIDFS=""
OUT=""
SECS=10
LEVELS="raid5 raid6"
MEMBERS="4 8"
CHUNK=64K
LATENCY=0
BBU=shm
DEGRADED=0
REGION=128M
RANDENG="--ioengine=libaio --iodepth=16"
RANDONLY=0
BASELINE=""
while [ $# -gt 0 ]; do
	case "$1" in
	--raidfs) RAIDFS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--secs) SECS=$2; shift 2 ;;
	--levels) LEVELS=$2; shift 2 ;;
	--members) MEMBERS=$2; shift 2 ;;
	--latency) LATENCY=$2; shift 2 ;;
	--bbu) BBU=$2; shift 2 ;;
	--degraded) DEGRADED=1; shift ;;
	--region) REGION=$2; shift 2 ;;
	--psync) RANDENG="--ioengine=psync --iodepth=1"; shift ;;
	--rand-only) RANDONLY=1; shift ;;
	--baseline) BASELINE=$2; shift 2 ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "cache.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
done
[ -n "$RAIDFS" ] || RAIDFS=$(cd "$here/../.." && pwd)/raidfs
[ -x "$RAIDFS" ] || { echo "cache.sh: no raidfs binary at $RAIDFS (build first, or --raidfs PATH)" >&2; exit 2; }
for t in fio python3 gcc fusermount3; do
	command -v $t >/dev/null || { echo "cache.sh: '$t' is missing (apt-get install fio python3 gcc fuse3)" >&2; exit 2; }
done

scratch_tmpfs cachebench 12G
log() { echo "cache.sh: $*" >&2; }

build_passthrough "$WORK"

RES=$WORK/results.tsv
: > "$RES"
record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$RES"; }

member_reads() {	# (status exits 1 for a degraded array)
	{ "$RAIDFS" status --json "$1" || true; } | python3 -c 'import json,sys; print(sum(m["reads"] for m in json.load(sys.stdin)["members"]))'
}

fio_run() {	# NAME DIR RW BS ENGINE SIZE -> prints "iops bw_bytes"
	local d=$2
	fio --name="$1" --directory="$d" --filename=bench --rw="$3" --bs="$4" $5 \
		--direct=1 --size="$6" --time_based --runtime="$SECS" --ramp_time=1 \
		--output-format=json --output="$WORK/fio.json" >/dev/null 2>"$WORK/fio.err" || {
		cat "$WORK/fio.err" >&2; echo "0 0"; return 0; }
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]["write"]; print(j["iops"], j["bw_bytes"])' "$WORK/fio.json"
}

# set_latency MOUNTPOINT: --latency on every member of the array ($n)
set_latency() {
	[ "$LATENCY" != 0 ] || return 0
	local j
	for j in $(seq 0 $((n - 1))); do
		"$RAIDFS" inject "$1" "$j" latency "$LATENCY" >/dev/null
	done
}

# measure CONFIG MOUNTPOINT [raidfs]: the two patterns (the members slowed
# after the random-write file is laid out)
measure() {
	local c=$1 m=$2 r0 r1 w0 w1 out
	# the random-write file is laid out first (fio does it), outside the timing
	fio --name=layout --directory="$m" --filename=bench --rw=write --bs=1M --size=$REGION \
		--ioengine=psync >/dev/null 2>&1
	[ -n "${3:-}" ] && "$RAIDFS" cache "$m" flush >/dev/null
	[ -n "${3:-}" ] && set_latency "$m"
	out=$(fio_run rand "$m" randwrite 4k "$RANDENG" $REGION)
	record "$c" randwrite_iops "${out%% *}"
	[ -n "${3:-}" ] && record "$c" destage_mbps "$("$RAIDFS" status --json "$m" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cache"]["destage_mbps"])')"
	rm -f "$m/bench"
	[ "$RANDONLY" = 1 ] && return 0
	[ -n "${3:-}" ] && { "$RAIDFS" cache "$m" flush >/dev/null; r0=$(member_reads "$m"); }
	out=$(fio_run seq "$m" write 1M "--ioengine=libaio --iodepth=8" 512M)
	record "$c" seqwrite_mbs "$(python3 -c "print(${out##* } / 1e6)")"
	if [ -n "${3:-}" ]; then
		"$RAIDFS" cache "$m" flush >/dev/null
		r1=$(member_reads "$m")
		local mib
		mib=$(stat -c %s "$m/bench")
		record "$c" reads_per_mib "$(python3 -c "print(round(($r1 - $r0) / ($mib / 1048576), 2))")"
	fi
	rm -f "$m/bench"
}

pt_measure() {
	local m=$WORK/mnt/pt
	mkdir -p "$m" "$TMPFS/pt"
	GLIBC_TUNABLES=$PT_TUNABLES "$WORK/passthrough_ll" -f -o source="$TMPFS/pt" "$m" 2>/dev/null &
	PIDS+=($!)
	MNTS+=("$m")
	for _ in $(seq 50); do mountpoint -q "$m" && break; sleep 0.1; done
	measure "passthrough$1" "$m"
	fusermount3 -u "$m"
}

BINS=("$RAIDFS")
[ -n "$BASELINE" ] && BINS+=("$BASELINE")
THIS=$RAIDFS
log "passthrough_ll"
pt_measure ""
for n in $MEMBERS; do
	for level in $LEVELS; do
		for cfg in "${BINS[@]/%/ writethrough}" "${BINS[@]/%/ writeback}"; do
			RAIDFS=${cfg% *} pol=${cfg##* }
			c="$level/$n/$pol"
			[ "$RAIDFS" = "$THIS" ] || c="$c@base"
			log "$c"
			d=$TMPFS/$level-$n-$pol
			mem=""
			for i in $(seq 1 "$n"); do mkdir -p "$d/m$i"; mem="$mem $d/m$i"; done
			"$RAIDFS" create --level "$level" --chunk "$CHUNK" $mem >/dev/null
			m=$WORK/mnt/$level-$n-$pol
			mkdir -p "$m"
			MNTS+=("$m")
			opts="write_policy=$pol"
			if [ $pol = writeback ] && [ "$BBU" = file ]; then
				opts="$opts,bbu=file:$d.log"
			elif [ $pol = writeback ]; then
				opts="$opts,bbu=shm"
			fi
			"$RAIDFS" mount -o "$opts" "$(echo $mem | tr ' ' ':')" "$m"
			[ "$DEGRADED" = 1 ] && "$RAIDFS" fail "$m" 1 >/dev/null
			measure "$c" "$m" raidfs
			"$RAIDFS" unmount "$m"
			rm -rf "$d" "$d.log"
		done
	done
	RAIDFS=$THIS
	log "passthrough_ll again"
	pt_measure " ($n)"
done

LATENCY=$LATENCY DEGRADED=$DEGRADED BBU=$BBU python3 - "$RES" <<'EOF' | tee "${OUT:-/dev/null}"
import sys, collections
v = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    c, k, x = line.rstrip("\n").split("\t")
    v[c][k] = float(x)
pts = [c for c in v if c.startswith("passthrough")]
pt = {k: sorted(v[c].get(k, float("nan")) for c in pts)[len(pts) // 2] for k in ("randwrite_iops", "seqwrite_mbs")}
import os
if os.environ.get("DEGRADED", "0") == "1":
    print("Every raidfs array degraded (member 1 failed); write-back battery: bbu=%s.\n" % os.environ.get("BBU"))
if os.environ.get("LATENCY", "0") != "0":
    print("raidfs members with %s ms injected per operation (disk-like); passthrough_ll on plain tmpfs.\n" % os.environ["LATENCY"])
g = lambda d, k: d.get(k, float("nan"))
print("| configuration | 4 KiB random write IOPS | x passthrough | destage MB/s | 1 MiB seq write MB/s | x passthrough | member reads / MiB written (seq) |")
print("|---|---|---|---|---|---|---|")
for c in pts:
    print("| %s | %.0f | | | %.0f | | |" % (c, v[c]["randwrite_iops"], g(v[c], "seqwrite_mbs")))
for c in [c for c in v if not c.startswith("passthrough")]:
    d = v[c]
    print("| raidfs %s | %.0f | %.2f | %s | %.0f | %.2f | %s |" % (c, d["randwrite_iops"], d["randwrite_iops"] / pt["randwrite_iops"],
          d.get("destage_mbps", "") if c.split("@")[0].endswith("writeback") else "",
          g(d, "seqwrite_mbs"), g(d, "seqwrite_mbs") / g(pt, "seqwrite_mbs"), d.get("reads_per_mib", "")))
print()
print("Goals (issue 4): 4 KiB random write with writeback >= 10x writethrough and >= 0.5x passthrough; sequential raid5/raid6 write >= 0.9x passthrough.")
for c in sorted({c.rsplit("/", 1)[0] for c in v if not c.startswith("passthrough")}):
    wb, wt = v.get(c + "/writeback"), v.get(c + "/writethrough")
    if not wb or not wt:
        continue
    r = wb["randwrite_iops"] / max(wt["randwrite_iops"], 1)
    p = wb["randwrite_iops"] / pt["randwrite_iops"]
    s = g(wb, "seqwrite_mbs") / pt["seqwrite_mbs"]
    print("- %s: random write writeback/writethrough %.1fx (%s), writeback/passthrough %.2fx (%s), seq write writeback/passthrough %.2fx (%s)"
          % (c, r, "met" if r >= 10 else "not met", p, "met" if p >= 0.5 else "not met", s, "met" if s >= 0.9 else "not met"))
EOF
