#!/usr/bin/env bash
# contrib/bench/quick.sh - raidfs against the libfuse example passthrough_ll,
# measured in one run and reported as ratios (issue 2, "Measure and record").
#
#   contrib/bench/quick.sh [--raidfs PATH] [--out FILE] [--quick]
#                          [--levels raid0,raid5,raid6] [--perf DIR]
#                          [--plain-passthrough] [--rounds N]
#                          [--create-opts OPTS] [--variant NAME=OPTS]
#
#   --raidfs PATH  the raidfs binary (default: ./raidfs of this tree, else PATH)
#   --out FILE     also write the markdown report to FILE
#   --quick        256 MiB files, 3 s random reads, one round instead of
#                  three: the whole run takes well under 3 minutes
#   --levels LIST  raidfs levels to measure (comma-separated; "" for
#                  passthrough_ll alone)
#   --perf DIR     profile every daemon (perf record -g -p PID) during each
#                  fio pattern of the first round; the top functions go into
#                  the report.  perf costs throughput: do not publish the
#                  numbers of such a run.
#   --plain-passthrough  run passthrough_ll without the malloc tunables below
#   --baseline PATH  also measure every level with this other raidfs binary
#                  (configurations "LEVEL@base"), side by side in the same
#                  run: a change's effect as a ratio of ratios
#   --create-opts OPTS  extra options of every 'raidfs create' of this run
#                  (default: $RAIDFS_CREATE_OPTS, else none), e.g.
#                  --create-opts "--checksum none"
#   --variant NAME=OPTS  also measure every level created with OPTS instead
#                  of --create-opts (configurations "LEVEL+NAME"; NAME of
#                  letters, digits, _ and -), side by side in the same run,
#                  reported as LEVEL+NAME against LEVEL.  Checksums on
#                  against off:
#                    --create-opts "--checksum none" --variant sums="--checksum crc32c"
#   --rounds N     rounds (default 3, 1 with --quick; give it after --quick)
#
# What runs, all on one fresh tmpfs (so it measures the software path):
#   passthrough  passthrough_ll, built here from the libfuse3-dev examples,
#                over one tmpfs directory, with its defaults (multithreaded,
#                cache=auto = 1 s entry/attr timeouts, no writeback cache):
#                the ceiling of any FUSE filesystem.  It runs with
#                GLIBC_TUNABLES raising malloc's mmap and trim thresholds:
#                libfuse allocates a 1 MiB buffer for every read reply, and
#                with glibc's defaults each one is a fresh mmap that is
#                page-faulted and zeroed, which halves passthrough_ll's
#                sequential read on this kind of VM.  raidfs keeps its
#                buffers, so this is the stronger and fairer ceiling.
#   raid0/5/6    raidfs over 4 member directories on the same tmpfs, 64K chunk
#   degraded     raid5 with one member missing, raid6 with two missing
#                (unmount, rename the member dirs away, mount again):
#                sequential read, and the file must read back identical.
# Patterns (fio, direct=1, JSON output parsed with python3):
#   seqwrite  1 MiB sequential write of a new SEQ_SIZE file, libaio iodepth 8
#   seqread   1 MiB sequential read of that file, libaio iodepth 8
#   randread  4 KiB random read of that file, 4 jobs (psync), time based
#   randwrite 4 KiB random write into that file, 4 jobs (psync), time based
#   files     NFILES files created (open, write 4 KiB, close), then unlinked;
#             seconds for each phase
# All configurations stay mounted side by side and each pattern runs on them
# one after the other, in a rotating order, for ROUNDS rounds (3; 1 with
# --quick); the median counts.  Interleaving keeps the ratios fair when the
# machine's background load drifts during the run.  The tmpfs is filled
# once and emptied first, because this kind of VM hands out never-touched
# pages slowly (that would otherwise penalise whatever runs first).
#
# The report (stdout, and --out FILE) gives each raidfs number as a ratio of
# passthrough_ll in the same run and whether the issue-2 target (sequential
# write and read >= 0.7x passthrough_ll) is met.
#
# Growing it (issue 5): a configuration is a name in CONFIGS with a branch
# in cfg_mount/cfg_unmount; a pattern is a p_NAME function that records
# "config<TAB>metric<TAB>value" lines with record(); every value recorded
# more than once is reported as its median; the report reads only $RES.
#
# Every mount, daemon, perf recorder and the tmpfs are removed on exit,
# on failure, on Ctrl-C and on TERM.  A configuration that fails is reported
# as failed and the run goes on with the others.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

here=$(cd "$(dirname "$0")" && pwd)
RAIDFS=""
OUT=""
QUICK=0
PERF_DIR=""
LEVELS="raid0 raid5 raid6"
BASE_RAIDFS=""
CREATE_OPTS=${RAIDFS_CREATE_OPTS:-}
VARIANT=""	# NAME
VARIANT_OPTS=""
ROUNDS_OPT=""
PT_TUNABLES=glibc.malloc.mmap_threshold=8388608:glibc.malloc.trim_threshold=1073741824
while [ $# -gt 0 ]; do
	case "$1" in
	--raidfs) RAIDFS=${2:?--raidfs needs a path}; shift 2 ;;
	--raidfs=*) RAIDFS=${1#*=}; shift ;;
	--out) OUT=${2:?--out needs a file}; shift 2 ;;
	--out=*) OUT=${1#*=}; shift ;;
	--quick) QUICK=1; shift ;;
	--baseline) BASE_RAIDFS=${2:?--baseline needs a path}; shift 2 ;;
	--baseline=*) BASE_RAIDFS=${1#*=}; shift ;;
	--levels) LEVELS=$(echo "${2?--levels needs a list}" | tr , ' '); shift 2 ;;
	--levels=*) LEVELS=$(echo "${1#*=}" | tr , ' '); shift ;;
	--perf) PERF_DIR=${2:?--perf needs a directory}; shift 2 ;;
	--perf=*) PERF_DIR=${1#*=}; shift ;;
	--plain-passthrough) PT_TUNABLES=""; shift ;;
	--create-opts) CREATE_OPTS=${2?--create-opts needs options}; shift 2 ;;
	--create-opts=*) CREATE_OPTS=${1#*=}; shift ;;
	--variant) VARIANT=${2:?--variant needs NAME=OPTS}; shift 2 ;;
	--variant=*) VARIANT=${1#*=}; shift ;;
	--rounds) ROUNDS_OPT=${2:?--rounds needs a number}; shift 2 ;;
	--rounds=*) ROUNDS_OPT=${1#*=}; shift ;;
	-h|--help) usage; exit 0 ;;
	*) echo "quick.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
for l in $LEVELS; do
	case $l in raid0|raid5|raid6) ;; *) echo "quick.sh: --levels: '$l' is not one of raid0 raid5 raid6" >&2; exit 2 ;; esac
done
if [ -n "$VARIANT" ]; then
	VARIANT_OPTS=${VARIANT#*=}
	VARIANT=${VARIANT%%=*}
	[[ $VARIANT =~ ^[A-Za-z0-9_-]+$ ]] || { echo "quick.sh: --variant NAME=OPTS: NAME of letters, digits, _ and -" >&2; exit 2; }
fi
[ -z "$ROUNDS_OPT" ] || [[ $ROUNDS_OPT =~ ^[1-9][0-9]*$ ]] || { echo "quick.sh: --rounds takes a number from 1" >&2; exit 2; }
CMDLINE="contrib/bench/quick.sh${RAIDFS:+ --raidfs $RAIDFS}${OUT:+ --out $OUT}"
[ $QUICK = 1 ] && CMDLINE+=" --quick"
[ "$LEVELS" = "raid0 raid5 raid6" ] || CMDLINE+=" --levels '${LEVELS// /,}'"
[ -z "$BASE_RAIDFS" ] || CMDLINE+=" --baseline $BASE_RAIDFS"
[ -n "$PERF_DIR" ] && CMDLINE+=" --perf $PERF_DIR"
[ -n "$PT_TUNABLES" ] || CMDLINE+=" --plain-passthrough"
[ -z "$CREATE_OPTS" ] || CMDLINE+=" --create-opts '$CREATE_OPTS'"
[ -z "$VARIANT" ] || CMDLINE+=" --variant $VARIANT='$VARIANT_OPTS'"
[ -z "$ROUNDS_OPT" ] || CMDLINE+=" --rounds $ROUNDS_OPT"

if [ -n "$LEVELS" ]; then
	if [ -z "$RAIDFS" ]; then
		if [ -x "$here/../../raidfs" ]; then RAIDFS="$here/../../raidfs"
		else RAIDFS=$(command -v raidfs || true); fi
	fi
	if [ -z "$RAIDFS" ] || [ ! -x "$RAIDFS" ]; then
		echo "quick.sh: no raidfs binary: build it (./configure && make) or give --raidfs PATH" >&2
		exit 2
	fi
	RAIDFS=$(cd "$(dirname "$RAIDFS")" && pwd)/$(basename "$RAIDFS")
fi
[ "$(id -u)" = 0 ] || { echo "quick.sh: run it as root (it mounts a tmpfs and FUSE filesystems)" >&2; exit 2; }

# ------------------------------------------------------------------ sizes
MEMBERS=4
CHUNK=64K
if [ $QUICK = 1 ]; then
	SEQ_SIZE=256M; RAND_TIME=3; NFILES=10000; ROUNDS=1; TMPFS_SIZE=3g; WARM_MIB=2500
else
	SEQ_SIZE=1G; RAND_TIME=10; NFILES=10000; ROUNDS=3; TMPFS_SIZE=8g; WARM_MIB=7500
fi
[ -z "$ROUNDS_OPT" ] || ROUNDS=$ROUNDS_OPT
TARGET=0.7	# issue 2: sequential write and read >= 0.7x passthrough_ll at 1 MiB
BASE_LEVELS=""
if [ -n "$BASE_RAIDFS" ]; then
	[ -x "$BASE_RAIDFS" ] || { echo "quick.sh: --baseline '$BASE_RAIDFS' is not an executable raidfs" >&2; exit 2; }
	BASE_RAIDFS=$(cd "$(dirname "$BASE_RAIDFS")" && pwd)/$(basename "$BASE_RAIDFS")
	for l in $LEVELS; do BASE_LEVELS+=" $l@base"; done
fi
VARIANT_LEVELS=""
if [ -n "$VARIANT" ]; then
	for l in $LEVELS; do VARIANT_LEVELS+=" $l+$VARIANT"; done
fi
ALL_LEVELS="$LEVELS$BASE_LEVELS$VARIANT_LEVELS"
CONFIGS="passthrough $ALL_LEVELS"
# (room for every configuration's files side by side: a baseline and a
# variant double and triple the levels, and a full tmpfs failed a step
# with ENOSPC)
NCFG=$(echo $CONFIGS | wc -w)
PER_CFG=$([ $QUICK = 1 ] && echo 1 || echo 2)
[ $((NCFG * PER_CFG)) -le "${TMPFS_SIZE%g}" ] || TMPFS_SIZE=$((NCFG * PER_CFG))g

# shellcheck source=contrib/bench/lib.sh
. "$here/lib.sh"

# ------------------------------------------------------------ dependencies
need_pkgs=()
command -v fio >/dev/null || need_pkgs+=(fio)
command -v gcc >/dev/null || need_pkgs+=(gcc)
command -v pkg-config >/dev/null || need_pkgs+=(pkg-config)
command -v fusermount3 >/dev/null || need_pkgs+=(fuse3)
command -v python3 >/dev/null || need_pkgs+=(python3)
PT_SRC=/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c
{ [ -f "$PT_SRC" ] && pkg-config --exists fuse3 2>/dev/null; } || need_pkgs+=(libfuse3-dev)
if [ ${#need_pkgs[@]} -gt 0 ]; then
	log "installing ${need_pkgs[*]}"
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >&2
fi
if [ -n "$PERF_DIR" ] && ! command -v perf >/dev/null; then
	echo "quick.sh: --perf needs perf (apt-get install linux-perf)" >&2
	exit 2
fi

# --------------------------------------------------------- work and cleanup
WORK=$(mktemp -d /tmp/raidfs-bench.XXXXXX)
TMPFS=$WORK/tmpfs
RES=$WORK/results.tsv		# config<TAB>metric<TAB>value, one a line
PIDFILE=$WORK/pids		# daemons and recorders this script started
STATE=$WORK/state		# CFG.pid (its daemon), CFG.failed (why)
mkdir -p "$TMPFS" "$WORK/mnt" "$WORK/json" "$STATE"
: > "$RES"
: > "$PIDFILE"
# shellcheck disable=SC2034 # used by lib.sh
CHILD=""			# the subshell running the current step

ours_mounted() {	# our mount points, deepest first
	awk -v w="$WORK" 'index($2, w "/") == 1 { print $2 }' /proc/mounts | sort -r
}
release_all() {	# unmount every FUSE mount of ours, end every process we started
	local m p
	for p in $(cat "$PIDFILE" 2>/dev/null); do	# perf recorders first
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = perf ] && kill -INT "$p" 2>/dev/null
	done
	for m in $(ours_mounted); do
		[ "$m" = "$TMPFS" ] && continue
		fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	for p in $(cat "$PIDFILE" 2>/dev/null); do end_process "$p"; done
	: > "$PIDFILE"
}
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	set +e
	stop_child
	release_all
	local m
	for m in $(ours_mounted); do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
	if [ -z "$(ours_mounted)" ]; then
		rm -rf "$WORK"
	else
		echo "quick.sh: could not unmount everything under $WORK; left it in place" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM

LOAD0=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$LOAD0" 'BEGIN { exit !(l > 0.5) }'; then
	log "warning: load average is $LOAD0: other work on this machine skews the numbers"
fi
mount -t tmpfs -o size=$TMPFS_SIZE,mode=0755 raidfs-bench "$TMPFS"
log "warming the tmpfs ($WARM_MIB MiB)"
dd if=/dev/zero of="$TMPFS/warm" bs=1M count=$WARM_MIB status=none
rm -f "$TMPFS/warm"

PT_BIN=$WORK/passthrough_ll
log "building passthrough_ll from $PT_SRC"
# shellcheck disable=SC2046
gcc -O2 -Wall -o "$PT_BIN" "$PT_SRC" $(pkg-config --cflags --libs fuse3) -lpthread

# ----------------------------------------------------------- configurations
mnt() { echo "$WORK/mnt/$1"; }
failed() { [ -e "$STATE/$1.failed" ]; }
daemon_pid() { cat "$STATE/$1.pid" 2>/dev/null; }
members() { local i; for i in $(seq 0 $((MEMBERS - 1))); do echo "$TMPFS/$1/m$i"; done; }
level_of() {	# CFG: its raidfs level (raid5@base, raid5+NAME: raid5)
	local l=${1%@base}
	echo "${l%%+*}"
}
create_opts() {	# CFG: the extra 'raidfs create' options of its array
	case $1 in *+*) echo "$VARIANT_OPTS" ;; *) echo "$CREATE_OPTS" ;; esac
}
missing_members() {	# CFG: the members taken away for the degraded reads
	case $(level_of "$1") in raid5) echo m1 ;; raid6) echo m1 m2 ;; esac
}
bin() {	# CFG: the raidfs binary that serves it
	case $1 in *@base) echo "$BASE_RAIDFS" ;; *) echo "$RAIDFS" ;; esac
}

cfg_create() {	# CFG: fresh storage (and a new array)
	case $1 in
	passthrough) mkdir -p "$TMPFS/pt" ;;
	*)
		local d
		for d in $(members "$1"); do mkdir -p "$d"; done
		# shellcheck disable=SC2046
		"$(bin "$1")" create --level "$(level_of "$1")" --chunk "$CHUNK" --name "bench-$(level_of "$1")" \
			$(create_opts "$1") $(members "$1") >&2 || return 1
		;;
	esac
}
cfg_mount() {	# CFG: mount it, daemon in the foreground of a background job
	local m pid
	m=$(mnt "$1")
	mkdir -p "$m"
	case $1 in
	passthrough)
		GLIBC_TUNABLES=$PT_TUNABLES "$PT_BIN" -f -o source="$TMPFS/pt" "$m" \
			2>>"$WORK/passthrough.log" &
		;;
	*)
		# all member paths; a renamed-away one counts as missing
		"$(bin "$1")" mount -f -o log="$WORK/raidfs-$1.log" "$(members "$1" | paste -sd:)" "$m" \
			2>>"$WORK/raidfs-$1.log" &
		;;
	esac
	pid=$!
	started "$pid"
	echo "$pid" > "$STATE/$1.pid"
	if ! wait_mounted "$m" "$pid"; then
		log "$1 did not mount; its log:"
		tail -20 "$WORK"/*"$1".log >&2 2>/dev/null || true
		return 1
	fi
}
cfg_unmount() {	# CFG
	local m pid
	m=$(mnt "$1")
	pid=$(daemon_pid "$1")
	if mountpoint -q "$m"; then
		case $1 in
		passthrough) fusermount3 -u "$m" ;;
		*) "$(bin "$1")" unmount "$m" >&2 || fusermount3 -u "$m" || fusermount3 -uz "$m" ;;
		esac
	fi
	if [ -n "$pid" ]; then
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$pid" 2>/dev/null; then
			log "$1: daemon $pid still running 10 s after unmount; ending it"
			end_process "$pid"
		fi
		wait "$pid" 2>/dev/null || true
	fi
	rm -f "$STATE/$1.pid"
}
mark_failed() {	# CFG WHY: report it and take it out of the run
	log "$1 FAILED: $2"
	echo "$2" > "$STATE/$1.failed"
	printf '%s\tfailed\t%s\n' "$1" "$2" >> "$RES"
	local m pid
	m=$(mnt "$1")
	pid=$(daemon_pid "$1")
	fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true
	[ -z "$pid" ] || end_process "$pid"
	if [ "$1" = passthrough ]; then rm -rf "$TMPFS/pt"; else rm -rf "${TMPFS:?}/$1"; fi
}

# --------------------------------------------------------------- profiling
PERF_PID=""
perf_start() {	# CFG TAG
	[ -n "$PERF_DIR" ] && [ "$ROUND" = 1 ] || return 0
	mkdir -p "$PERF_DIR"
	perf record -g -q -o "$PERF_DIR/$1-$2.data" -p "$(daemon_pid "$1")" 2>/dev/null &
	PERF_PID=$!
	started "$PERF_PID"
	sleep 0.3
}
perf_stop() {	# CFG TAG
	[ -n "$PERF_PID" ] || return 0
	kill -INT "$PERF_PID" 2>/dev/null
	wait "$PERF_PID" 2>/dev/null || true
	PERF_PID=""
	local data="$PERF_DIR/$1-$2.data" top="$PERF_DIR/$1-$2.top.txt"
	{
		perf report -i "$data" --stdio --no-children --sort dso -g none 2>/dev/null |
			grep -E '^ +[0-9.]+%' | head -5 |
			awk '{ printf "%s%s %s", (NR > 1 ? ", " : "by object: "), $2, $1 } END { print "" }'
		perf report -i "$data" --stdio --no-children --sort sym -g none 2>/dev/null |
			grep -E '^ +[0-9.]+%' | head -15
	} > "$top" || true
	record "$1" "perf:$2" "$top"
}

# ---------------------------------------------------------------- patterns
run_fio() {	# CFG NAME FIELD(read|write) fio-args...: records NAME.mibs, NAME.iops
	local cfg=$1 name=$2 field=$3
	shift 3
	local j="$WORK/json/$cfg-$name-$ROUND.json" out bw iops
	if ! timeout -k 10 900 fio --output-format=json --output="$j" \
		--direct=1 --fallocate=none --group_reporting "$@" >/dev/null 2>"$j.err"; then
		cat "$j.err" >&2
		return 1
	fi
	out=$(python3 - "$j" "$field" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
job = d["jobs"][0]
r = job[sys.argv[2]]
if job.get("error", 0) or r.get("io_bytes", 0) == 0:
    sys.exit("%s: fio reports an error or moved no data" % sys.argv[1])
print("%.1f %.0f" % (r["bw_bytes"] / 1048576.0, r["iops"]))
EOF
	)
	read -r bw iops <<<"$out"
	record "$cfg" "$name.mibs" "$bw"
	record "$cfg" "$name.iops" "$iops"
	log "$cfg $name round $ROUND: $bw MiB/s, $iops IOPS"
}
p_seqwrite() {	# CFG: a new file each round (the copy-a-big-file case)
	rm -f "$(mnt "$1")/seq.dat"
	perf_start "$1" seqwrite
	run_fio "$1" seqwrite write --name=seqwrite --filename="$(mnt "$1")/seq.dat" \
		--rw=write --bs=1M --size=$SEQ_SIZE --ioengine=libaio --iodepth=8
	perf_stop "$1" seqwrite
}
p_seqread() {	# CFG [NAME]
	local name=${2:-seqread}
	perf_start "$1" "$name"
	run_fio "$1" "$name" read --name=seqread --filename="$(mnt "$1")/seq.dat" \
		--rw=read --bs=1M --size=$SEQ_SIZE --ioengine=libaio --iodepth=8
	perf_stop "$1" "$name"
}
p_seqread_degraded() { p_seqread "$1" seqread_degraded; }
p_randread() {	# CFG
	perf_start "$1" randread
	run_fio "$1" randread read --name=randread --filename="$(mnt "$1")/seq.dat" \
		--rw=randread --bs=4k --size=$SEQ_SIZE --ioengine=psync --numjobs=4 \
		--time_based --runtime=$RAND_TIME --randrepeat=0
	perf_stop "$1" randread
}
p_randwrite() {	# CFG
	perf_start "$1" randwrite
	run_fio "$1" randwrite write --name=randwrite --filename="$(mnt "$1")/seq.dat" \
		--rw=randwrite --bs=4k --size=$SEQ_SIZE --ioengine=psync --numjobs=4 \
		--time_based --runtime=$RAND_TIME --randrepeat=0
	perf_stop "$1" randwrite
}
p_files() {	# CFG: create (open, write 4 KiB, close) then unlink NFILES files
	local out c u
	out=$(timeout 900 python3 "$here/bench.py" files "$(mnt "$1")/small" "$NFILES")
	read -r c u <<<"$out"
	record "$1" create.s "$c"
	record "$1" unlink.s "$u"
	log "$1 files round $ROUND: create $NFILES ${c}s, unlink ${u}s"
}
save_checksum() {	# CFG WHEN: md5 of seq.dat into $STATE/CFG.WHEN.md5
	md5sum < "$(mnt "$1")/seq.dat" | cut -d' ' -f1 > "$STATE/$1.$2.md5"
}

step() {	# CFG FUNCTION ARGS...: one step; if it fails, CFG leaves the run
	local cfg=$1 rc
	shift
	failed "$cfg" && return 0
	in_child /dev/stderr "$@"
	rc=$CHILD_RC
	[ $rc -eq 0 ] || mark_failed "$cfg" "$* (exit $rc)"
}

# ---------------------------------------------------------------- the run
for c in $CONFIGS; do
	log "setting up $c"
	step "$c" cfg_create "$c"
	failed "$c" || cfg_mount "$c" || mark_failed "$c" "mount"
done

for ROUND in $(seq "$ROUNDS"); do
	# shellcheck disable=SC2086
	order=$(rotated $((ROUND - 1)) $CONFIGS)
	for p in seqwrite seqread randread randwrite files; do
		for c in $order; do step "$c" "p_$p" "$c"; done
	done
done

DEGRADED=""
for c in $ALL_LEVELS; do
	if [ -n "$(missing_members "$c")" ] && ! failed "$c"; then DEGRADED+=" $c"; fi
done
for c in $DEGRADED; do
	step "$c" save_checksum "$c" healthy
	failed "$c" && continue
	cfg_unmount "$c"
	for m in $(missing_members "$c"); do mv "$TMPFS/$c/$m" "$TMPFS/$c/$m.away"; done
	log "$c: members $(missing_members "$c") taken away; mounting degraded"
	cfg_mount "$c" || { mark_failed "$c" "degraded mount"; continue; }
	"$(bin "$c")" status "$(mnt "$c")" >&2 || true
done
for ROUND in $(seq "$ROUNDS"); do
	# shellcheck disable=SC2086
	for c in $(rotated $((ROUND - 1)) $DEGRADED); do step "$c" p_seqread_degraded "$c"; done
done
for c in $DEGRADED; do
	step "$c" save_checksum "$c" degraded
	failed "$c" && continue
	if [ "$(cat "$STATE/$c.degraded.md5")" = "$(cat "$STATE/$c.healthy.md5")" ]; then
		record "$c" degraded_data same
	else
		record "$c" degraded_data DIFFERENT
		log "$c: the file reads back DIFFERENT with members missing"
	fi
done

for c in $CONFIGS; do
	if ! failed "$c"; then cfg_unmount "$c"; fi
done

# ------------------------------------------------------------------ report
report() {
	python3 - "$RES" "$ALL_LEVELS" "$TARGET" "$NFILES" "$MEMBERS" "$VARIANT" <<'EOF'
import collections, statistics, sys
res = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    c, k, v = line.rstrip("\n").split("\t", 2)
    res[c][k].append(v)
levels = sys.argv[2].split()
target = float(sys.argv[3])
nfiles, members = sys.argv[4], sys.argv[5]
variant = sys.argv[6]
pt = "passthrough"

def vals(c, k):
    try:
        return [float(v) for v in res[c][k]]
    except ValueError:
        return []
def num(c, k):
    v = vals(c, k)
    return statistics.median(v) if v else None
def cell(c, k, fmt):
    v = num(c, k)
    if v is None:
        return "n/a"
    s = fmt % v
    b = num(pt, k)
    if c != pt and b:
        s += " (%.2fx)" % (v / b)
    return s

print("| configuration | seq write 1M, MiB/s | seq read 1M, MiB/s | 4K random read, IOPS | 4K random write, IOPS | create %s files, s | unlink %s files, s | seq read degraded, MiB/s (vs healthy) |" % (nfiles, nfiles))
print("|---|---|---|---|---|---|---|---|")
for c in [pt] + levels:
    name = "passthrough_ll, 1 dir" if c == pt else "raidfs %s, %s members" % (c.replace("@base", " (baseline binary)").replace("+" + variant, " +" + variant) if variant else c.replace("@base", " (baseline binary)"), members)
    if res[c].get("failed"):
        name += " (FAILED: %s)" % "; ".join(res[c]["failed"])
    dg = "-"
    d, h = num(c, "seqread_degraded.mibs"), num(c, "seqread.mibs")
    if d is not None:
        dg = "%.0f (%.2fx, %d missing)" % (d, d / h if h else 0, {"raid5": 1, "raid6": 2}.get(c.split("@")[0].split("+")[0], 0))
        if res[c].get("degraded_data") != ["same"]:
            dg += " **data differs**"
    print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (name,
        cell(c, "seqwrite.mibs", "%.0f"), cell(c, "seqread.mibs", "%.0f"),
        cell(c, "randread.iops", "%.0f"), cell(c, "randwrite.iops", "%.0f"), cell(c, "create.s", "%.2f"),
        cell(c, "unlink.s", "%.2f"), dg))
print()
print("Medians over the rounds; in parentheses raidfs / passthrough_ll from this run "
      "(for the two times, above 1 means slower).")
print()
print("Every round (MiB/s, IOPS for random reads and writes, seconds for files):")
print()
for c in [pt] + levels:
    parts = []
    for k, label, fmt in (("seqwrite.mibs", "write", "%.0f"), ("seqread.mibs", "read", "%.0f"),
                          ("randread.iops", "4K read", "%.0f"), ("randwrite.iops", "4K write", "%.0f"),
                          ("create.s", "create", "%.2f"),
                          ("unlink.s", "unlink", "%.2f"),
                          ("seqread_degraded.mibs", "degraded read", "%.0f")):
        v = vals(c, k)
        if v:
            parts.append("%s %s" % (label, "/".join(fmt % x for x in v)))
    if parts:
        print("- %s: %s" % (c, "; ".join(parts)))
base = [c for c in levels if c.endswith("@base")]
if base:
    print()
    print("This binary against the baseline binary, each as a ratio of passthrough_ll in this run (above 1: this one is faster; for the two times, above 1 means slower):")
    print()
    print("| level | seq write | seq read | 4K random read | 4K random write | create | unlink |")
    print("|---|---|---|---|---|---|---|")
    for b in base:
        c = b[:-5]
        row = []
        for k in ("seqwrite.mibs", "seqread.mibs", "randread.iops", "randwrite.iops", "create.s", "unlink.s"):
            v, w = num(c, k), num(b, k)
            row.append("%.2f" % (v / w) if v and w else "n/a")
        print("| %s | %s |" % (c, " | ".join(row)))
var = [c for c in levels if variant and c.endswith("+" + variant)]
if var:
    print()
    print("LEVEL+%s against LEVEL in this run: the median of the variant divided by the median of the level (above 1: the variant is faster; for the two times, above 1 means the variant is slower), then each round's own ratio:" % variant)
    print()
    print("| level | seq write | seq read | 4K random read | 4K random write | create | unlink | degraded seq read |")
    print("|---|---|---|---|---|---|---|---|")
    for v in var:
        c = v[:-len(variant) - 1]
        row = []
        for k in ("seqwrite.mibs", "seqread.mibs", "randread.iops", "randwrite.iops", "create.s", "unlink.s", "seqread_degraded.mibs"):
            a, b = num(v, k), num(c, k)
            rounds = "/".join("%.2f" % (x / y) for x, y in zip(vals(v, k), vals(c, k)) if y)
            row.append("%.2f (%s)" % (a / b, rounds) if a and b else "n/a")
        print("| %s | %s |" % (c, " | ".join(row)))
print()
print("Issue-2 target, sequential write and read at 1 MiB >= %.1fx passthrough_ll:" % target)
print()
for c in levels:
    for k, what in (("seqwrite.mibs", "seq write"), ("seqread.mibs", "seq read")):
        v, b = num(c, k), num(pt, k)
        if v is None or not b:
            print("- %s %s: not measured" % (c, what))
        else:
            print("- %s %s: %.2fx, %s" % (c, what, v / b, "met" if v / b >= target else "**not met**"))
perf = sorted((c, k[5:], v[0]) for c in res for k, v in res[c].items() if k.startswith("perf:"))
if perf:
    print()
    print("Profiles of the daemons (perf record -g -p PID, first round; self time; [k] kernel, [.] user space):")
    for c, tag, path in perf:
        print()
        print("%s %s:" % (c, tag))
        print()
        print("```")
        try:
            lines = open(path).read().splitlines()[:6]
        except OSError:
            lines = ["(no profile)"]
        print("\n".join(l.rstrip() for l in lines))
        print("```")
EOF
}

{
	echo "## raidfs against passthrough_ll$([ $QUICK = 1 ] && echo ' (quick mode)' || true), $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "- command: \`$CMDLINE\`"
	echo "- raidfs: $RAIDFS (this script's tree at $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'))"
	[ -z "$BASE_RAIDFS" ] || echo "- baseline raidfs (configurations LEVEL@base): $BASE_RAIDFS"
	echo "- raidfs create: \`raidfs create --level LEVEL --chunk $CHUNK${CREATE_OPTS:+ $CREATE_OPTS}\`$([ -z "$VARIANT" ] || echo "; configurations LEVEL+$VARIANT: \`raidfs create --level LEVEL --chunk $CHUNK${VARIANT_OPTS:+ $VARIANT_OPTS}\`")"
	echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/^Mem:/{print $2}') GiB RAM, kernel $(uname -r), $(fio --version), libfuse $(pkg-config --modversion fuse3)"
	echo "- load average (1 min) at start: $LOAD0, at end: $(cut -d' ' -f1 /proc/loadavg)"
	echo "- storage: one tmpfs ($TMPFS_SIZE); each raidfs array on $MEMBERS member dirs of it (chunk $CHUNK), passthrough_ll on one dir of it; all mounted side by side, patterns interleaved, $ROUNDS round(s)"
	echo "- passthrough_ll: its defaults (multithreaded, cache=auto: 1 s entry/attr timeouts, no writeback cache)${PT_TUNABLES:+, with GLIBC_TUNABLES=$PT_TUNABLES so that the 1 MiB buffer libfuse allocates per read is reused rather than mmapped afresh}"
	echo "- raidfs: \`raidfs mount -f -o log=FILE\`, otherwise its defaults"
	echo "- fio: direct=1; sequential: bs=1M, libaio, iodepth=8, size=$SEQ_SIZE, a new file for each write; random: bs=4k, psync, numjobs=4, ${RAND_TIME} s; files: $NFILES x 4 KiB, python os.open/os.write/os.close, then os.unlink"
	echo
	report
} > "$WORK/report.md"
cat "$WORK/report.md"
if [ -n "$OUT" ]; then
	cp "$WORK/report.md" "$OUT"
	log "report written to $OUT"
fi
