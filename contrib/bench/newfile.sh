#!/usr/bin/env bash
# contrib/bench/newfile.sh - new files as fast as old ones (issue 30,
# point 5): a new 512 MiB file written with 1 MiB O_DIRECT writes, the
# same file overwritten, and its first and second sequential read after a
# fresh mount, on raidfs raid5 over 4 members against passthrough_ll, all
# on one fresh tmpfs, in the same run.
#
#   contrib/bench/newfile.sh [--raidfs PATH] [--baseline PATH] [--rounds N]
#                            [--out FILE] [--size SIZE]
#
# fio: direct=1, libaio, iodepth 8, 1 MiB blocks.  Each round: every
# configuration writes its new file (the old one removed first), then
# overwrites it; then every mount is unmounted and mounted again (the
# daemon started afresh: its cache arena new) and each reads its file
# twice.  Configurations: passthrough (passthrough_ll, built from the
# libfuse3-dev examples, started with the same malloc tunables as
# quick.sh), raidfs (raid5/4, 64K chunk, default mount options), and
# with --baseline the same with another binary (raidfs@base).  The
# report gives the median of the rounds and its ratio to passthrough_ll.
# Every mount, daemon and the tmpfs are removed on exit, failure or Ctrl-C.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
RAIDFS=$(cd "$here/../.." && pwd)/raidfs
BASE=""
ROUNDS=3
OUT=""
SIZE=512M
while [ $# -gt 0 ]; do
	case "$1" in
	--raidfs) RAIDFS=$2; shift 2 ;;
	--baseline) BASE=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "newfile.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
done
for t in fio python3 gcc fusermount3; do
	command -v $t >/dev/null || { echo "newfile.sh: '$t' is missing" >&2; exit 2; }
done

scratch_tmpfs newfile 8G
FS=$TMPFS
log() { echo "newfile.sh: $*" >&2; }

build_passthrough "$WORK"

CFGS=(passthrough raidfs)
[ -n "$BASE" ] && CFGS+=(raidfs@base)
bin() { [ "$1" = raidfs@base ] && echo "$BASE" || echo "$RAIDFS"; }
members() { local i; for i in 1 2 3 4; do echo -n "$FS/$1/m$i "; done; }
mnt() { echo "$WORK/mnt-$1"; }
mount_cfg() {
	local m
	m=$(mnt "$1")
	mkdir -p "$m"
	MNTS+=("$m")
	if [ "$1" = passthrough ]; then
		mkdir -p "$FS/pt"
		GLIBC_TUNABLES=$PT_TUNABLES "$WORK/passthrough_ll" -f -o source="$FS/pt" "$m" 2>/dev/null &
		PIDS+=($!)
		for _ in $(seq 50); do mountpoint -q "$m" && break; sleep 0.1; done
	else
		"$(bin "$1")" mount "$(members "$1" | tr ' ' ':' | sed 's/:$//')" "$m"
	fi
}
for c in "${CFGS[@]:1}"; do
	for i in 1 2 3 4; do mkdir -p "$FS/$c/m$i"; done
	"$(bin "$c")" create --level raid5 --chunk 64K $(members "$c") >/dev/null
done
for c in "${CFGS[@]}"; do mount_cfg "$c"; done

RES=$WORK/results.tsv
: > "$RES"
fio_mibs() {	# CFG PATTERN RW
	local f=$WORK/fio.json
	fio --name="$2" --filename="$(mnt "$1")/seq.dat" --rw="$3" --bs=1M --size=$SIZE --ioengine=libaio \
		--iodepth=8 --direct=1 --output-format=json --output="$f" >/dev/null 2>"$WORK/fio.err" || {
		cat "$WORK/fio.err" >&2; return 1; }
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; print("%.0f" % ((j["write"]["bw_bytes"] + j["read"]["bw_bytes"]) / 1048576))' "$f"
}
step() {	# CFG PATTERN RW
	local v
	v=$(fio_mibs "$1" "$2" "$3")
	printf '%s\t%s\t%s\n' "$1" "$2" "$v" >> "$RES"
	log "round $r: $1 $2 $v MiB/s"
}
for r in $(seq 1 "$ROUNDS"); do
	for c in "${CFGS[@]}"; do rm -f "$(mnt "$c")/seq.dat"; step "$c" newfile write; done
	for c in "${CFGS[@]}"; do step "$c" overwrite write; done
	for c in "${CFGS[@]}"; do fusermount3 -u "$(mnt "$c")"; done
	sleep 1
	for c in "${CFGS[@]}"; do mount_cfg "$c"; done
	for c in "${CFGS[@]}"; do step "$c" firstread read; done
	for c in "${CFGS[@]}"; do step "$c" secondread read; done
done

python3 - "$RES" "$ROUNDS" <<'PYEOF' | tee "${OUT:-/dev/null}"
import sys, collections
v = collections.defaultdict(list)
for line in open(sys.argv[1]):
    c, p, x = line.rstrip("\n").split("\t")
    v[(c, p)].append(float(x))
med = lambda xs: sorted(xs)[len(xs) // 2]
pats = ["newfile", "overwrite", "firstread", "secondread"]
cfgs = sorted({c for c, _ in v}, key=lambda c: (c != "passthrough", c))
print("raid5 over 4 tmpfs members (64K chunk, default options) against passthrough_ll, one tmpfs; "
      "1 MiB O_DIRECT, libaio iodepth 8; median of %s rounds, MiB/s (x passthrough_ll); every round in brackets.\n" % sys.argv[2])
print("| configuration | " + " | ".join(pats) + " |")
print("|---|" + "---|" * len(pats))
for c in cfgs:
    cells = []
    for p in pats:
        m = med(v[(c, p)])
        r = "" if c == "passthrough" else " (%.2fx)" % (m / med(v[("passthrough", p)]))
        cells.append("%.0f%s [%s]" % (m, r, ", ".join("%.0f" % x for x in v[(c, p)])))
    print("| %s | %s |" % (c, " | ".join(cells)))
PYEOF
