#!/usr/bin/env bash
# contrib/bench/run.sh - the benchmark harness of issue 5: the patterns of
# the RAID-controller reviews, run on raidfs and, in the same run and on the
# same member storage, on the alternatives a user would pick instead.
#
#   contrib/bench/run.sh [--quick | --full] [--out DIR] [--members-dir DIR[:DIR...]]
#                        [--raidfs PATH] [--configs LIST] [--patterns LIST]
#                        [--rounds N] [--size SIZE] [--runtime S] [--nfiles N]
#                        [--no-install] [--keep]
#
#   --quick        (default) a few points of every pattern on a few
#                  configurations: under 5 minutes on 2 cores
#   --full         every point, every configuration, 3 rounds of the target
#                  patterns: well under an hour on 2 cores
#   --out DIR      where report.md, the graphs (*.png), results.tsv and
#                  commands.txt go (default: bench-results/DATE-MODE)
#   --members-dir DIR[:DIR...]
#                  put the member storage (member directories, loop-device
#                  backing files, the raw and passthrough directories) in
#                  these directories, member i in the (i mod n)-th: one per
#                  disk measures real disks.  Default: a fresh tmpfs, which
#                  measures the software path.
#   --raidfs PATH  the raidfs binary (default: ./raidfs of this tree)
#   --configs LIST run only these configurations (comma-separated), in every
#                  pattern family that applies to them
#   --patterns LIST  families to run: targets,db,seq,rand,mt,mix,fc,states
#   --rounds N, --size SIZE, --runtime S, --nfiles N
#                  override the mode's rounds of the target patterns, the
#                  test file size, the seconds per time-based point and the
#                  number of files of the create/unlink pattern
#   --no-install   do not apt-get install what is missing
#   --keep         keep the scratch directory (and the member storage)
#
# Configurations (names as in the report):
#   raw            the member storage itself, one directory (no FUSE)
#   passthrough    the libfuse example passthrough_ll over one directory,
#                  built here from the libfuse3-dev examples: the ceiling
#                  of any FUSE file system
#   mergerfs       mergerfs pooling 4 directories (no redundancy)
#   btrfs-raidN    btrfs -d raidN over 4 loop devices whose backing files
#                  live in the member storage (raid0, raid1, raid5, raid6)
#   md             Linux md RAID: reported as not available when the
#                  kernel has no md driver
#   LEVEL-N[-cCHUNK][-wb|-wt|-awb]
#                  raidfs LEVEL over N member directories (chunk 64K
#                  unless -cCHUNK), with the write policy writeback (bbu=shm),
#                  writethrough or always-writeback when raidfs offers it
# Families (the fio job files in jobs/ say what each models):
#   targets  seq write/read 1 MiB, 4K random read 4 jobs, create+unlink
#            files, CPU cost; ROUNDS rounds in a rotating order, medians
#   db       database 8 KiB random, write share x queue depth
#   seq      sequential read/write by block size
#   rand     random read/write by block size
#   mt       multithreaded: workers x queue depth on separate regions
#   mix      IOMeter file server, web server, workstation
#   fc       FC-Test file copy: create, read, copy near, copy far
#   states   healthy vs 1 failed vs 2 failed vs rebuilding
# Every configuration is mounted side by side; each point of a family runs
# on every configuration before the next point, in a rotating order, so
# that a drift in the machine's load hits them alike.  A configuration or
# measurement that cannot run is reported as such, never dropped.
#
# Every mount, loop device, daemon and scratch file is removed on exit,
# failure, Ctrl-C and TERM.  Needs root for the tmpfs, loop devices and
# drop_caches; without root give --members-dir (btrfs is then reported as
# not available).
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
T_START=$(date +%s)
MODE=quick
OUT=""
MEMBERS_DIR=""
RAIDFS=""
CONFIGS_OPT=""
PATTERNS="targets db seq rand mt mix fc states"
ROUNDS_OPT="" SIZE_OPT="" RUNTIME_OPT="" NFILES_OPT=""
INSTALL=1
KEEP=0
ARGS=("$@")
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) MODE=quick; shift ;;
	--full) MODE=full; shift ;;
	--out) OUT=${2:?--out needs a directory}; shift 2 ;;
	--members-dir) MEMBERS_DIR=${2:?--members-dir needs a directory}; shift 2 ;;
	--raidfs) RAIDFS=${2:?--raidfs needs a path}; shift 2 ;;
	--configs) CONFIGS_OPT=$(echo "${2:?--configs needs a list}" | tr , ' '); shift 2 ;;
	--patterns) PATTERNS=$(echo "${2:?--patterns needs a list}" | tr , ' '); shift 2 ;;
	--rounds) ROUNDS_OPT=${2:?}; shift 2 ;;
	--size) SIZE_OPT=${2:?}; shift 2 ;;
	--runtime) RUNTIME_OPT=${2:?}; shift 2 ;;
	--nfiles) NFILES_OPT=${2:?}; shift 2 ;;
	--no-install) INSTALL=0; shift ;;
	--keep) KEEP=1; shift ;;
	-h|--help) usage; exit 0 ;;
	*) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
for p in $PATTERNS; do
	case $p in targets|db|seq|rand|mt|mix|fc|states) ;;
	*) echo "run.sh: --patterns: '$p' is not one of targets db seq rand mt mix fc states" >&2; exit 2 ;;
	esac
done
has_pattern() { [[ " $PATTERNS " == *" $1 "* ]]; }
ROOT=0
[ "$(id -u)" = 0 ] && ROOT=1
if [ $ROOT = 0 ] && [ -z "$MEMBERS_DIR" ]; then
	echo "run.sh: without root, give --members-dir DIR (the default tmpfs needs root)" >&2
	exit 2
fi

# shellcheck source=contrib/bench/lib.sh
. "$here/lib.sh"

# ----------------------------------------------------------------- the modes
# sizes: SEQ_SIZE the target patterns' file; SWEEP_SIZE the file of db, seq,
# rand, mt and mix; RUNTIME seconds per sweep point, T_RUNTIME per target
# read pattern and state measurement
pick() { if [ $MODE = quick ]; then echo "$1"; else echo "$2"; fi; }	# QUICK FULL
#                   quick                  full
ROUNDS=$(pick       1                      3)
SEQ_SIZE=$(pick     256M                   1G)
SWEEP_SIZE=256M
RUNTIME=$(pick      500ms                  1)
T_RUNTIME=$(pick    1                      3)
NFILES=10000
TMPFS_SIZE=$(pick   6g                     16g)
WARM_MIB=$(pick     3000                   6000)
# btrfs does not discard in raid5/raid6 block groups, so their loop files
# keep every block btrfs ever wrote: the images bound what they take
BTRFS_IMG=1536m
DB_WMIX=$(pick      "0 50 100"             "0 10 20 30 40 50 60 70 80 90 100")
DB_QD="1 16 64"
SEQ_BS=$(pick       "4k 64k 1m"            "4k 8k 16k 32k 64k 128k 256k 512k 1m 2m")
SEQ_QD=8
RAND_BS=$(pick      "512 4k 1m"            "512 1k 2k 4k 8k 16k 32k 64k 128k 256k 512k 1m")
RAND_QD=8
MT_POINTS=$(pick    "4x8"                  "1x1 1x8 2x1 2x8 4x1 4x8")
MIX_QD=$(pick       "16"                   "1 16 64")
FC_ISO=$(pick       "1 128m"               "2 256m")
FC_MP3=$(pick       10                     80)
FC_PROG=$(pick      200                    1500)
ALTS="raw passthrough mergerfs btrfs-raid0 btrfs-raid1 btrfs-raid5 btrfs-raid6 md"
SET_TARGETS="$ALTS raid0-4 raid10-4 raid5-4 raid6-4"
[ $MODE = quick ] || SET_TARGETS+=" raid0-8 raid10-8 raid5-8 raid6-8 raid50-8 raid60-8 raid5-4-c16K raid5-4-c256K"
SET_TARGETS+=" raid5-4-wb$(pick '' ' raid5-4-wt raid5-4-awb')"
SET_SWEEP=$(pick "passthrough raid5-4 btrfs-raid5" "raw passthrough mergerfs btrfs-raid5 btrfs-raid6 raid0-4 raid5-4 raid6-4 raid5-4-wb")
SET_STATES="raid5-4 raid6-4 btrfs-raid5 btrfs-raid6"
[ $MODE = quick ] || SET_STATES+=" raid10-4 raid5-8 raid6-8 raid50-8 raid60-8 btrfs-raid1"
STATE_SIZE=$SWEEP_SIZE	# every states configuration holds one at once
[ -z "$ROUNDS_OPT" ] || ROUNDS=$ROUNDS_OPT
[ -z "$SIZE_OPT" ] || { SEQ_SIZE=$SIZE_OPT; SWEEP_SIZE=$SIZE_OPT; STATE_SIZE=$SIZE_OPT; }
[ -z "$RUNTIME_OPT" ] || { RUNTIME=$RUNTIME_OPT; T_RUNTIME=$RUNTIME_OPT; }
[ -z "$NFILES_OPT" ] || NFILES=$NFILES_OPT
if [ -n "$CONFIGS_OPT" ]; then
	SET_TARGETS=$CONFIGS_OPT SET_SWEEP=$CONFIGS_OPT SET_STATES=$CONFIGS_OPT
fi
SET_FC=$SET_SWEEP

# ---------------------------------------------------------- dependencies
if [ -z "$RAIDFS" ]; then
	if [ -x "$top/raidfs" ]; then RAIDFS=$top/raidfs; else RAIDFS=$(command -v raidfs || true); fi
fi
if [ -z "$RAIDFS" ] || [ ! -x "$RAIDFS" ]; then
	echo "run.sh: no raidfs binary: build it (sh contrib/build.sh) or give --raidfs PATH" >&2
	exit 2
fi
RAIDFS=$(cd "$(dirname "$RAIDFS")" && pwd)/$(basename "$RAIDFS")
PT_SRC=/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c
missing_pkgs() {
	local c
	for c in fio:fio gnuplot:gnuplot-nox mergerfs:mergerfs mkfs.btrfs:btrfs-progs gcc:gcc \
		pkg-config:pkg-config fusermount3:fuse3 python3:python3 losetup:mount; do
		command -v "${c%%:*}" >/dev/null 2>&1 || PATH=$PATH:/sbin:/usr/sbin command -v "${c%%:*}" >/dev/null 2>&1 ||
			echo "${c#*:}"
	done
	{ [ -f "$PT_SRC" ] && pkg-config --exists fuse3 2>/dev/null; } || echo libfuse3-dev
}
export PATH=$PATH:/sbin:/usr/sbin
need=$(missing_pkgs | sort -u | paste -sd' ')
if [ -n "$need" ] && [ $INSTALL = 1 ]; then
	SUDO=""
	[ $ROOT = 1 ] || SUDO=sudo
	log "installing $need"
	# shellcheck disable=SC2086
	{ $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need; } >&2 ||
		log "warning: apt-get could not install everything; what is missing is reported as not available"
fi
command -v fio >/dev/null || { echo "run.sh: fio is missing (apt-get install fio)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "run.sh: python3 is missing" >&2; exit 2; }
# the interpreter itself, not a wrapper (a pyenv shim costs 0.15 s a call)
PY=$(python3 -c 'import sys; print(sys.executable or "")' 2>/dev/null | grep . || echo python3)

# ------------------------------------------------------ scratch and cleanup
# $WORK: mount points, state, fio output.  $STORE[i]: member storage.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/raidfs-bench.XXXXXX")
[ -n "$OUT" ] || OUT=bench-results/$(date +%F)-$MODE
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
RES=$OUT/results.tsv		# config<TAB>metric<TAB>value
META=$OUT/meta.tsv		# key<TAB>value, for the report
CMDS=$OUT/commands.txt		# every command that set up or measured something
STATE=$WORK/state		# CFG.pid, CFG.loops, CFG.down
PIDFILE=$WORK/pids		# daemons started here
LOOPS=$WORK/loops		# loop devices attached here
: > "$RES"; : > "$META"; : > "$CMDS"
mkdir -p "$WORK/mnt" "$WORK/json" "$STATE"
: > "$PIDFILE"; : > "$LOOPS"
# shellcheck disable=SC2034 # used by lib.sh
CHILD=""
TMPFS=""
STORE=()

ours_mounted() {	# mount points under $WORK and the member storage, deepest first
	local s
	{
		awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/mounts
		for s in "${STORE[@]}"; do
			[ "$s" = "$TMPFS" ] || awk -v w="$s/" 'index($2, w) == 1 { print $2 }' /proc/mounts
		done
	} | sort -ru
}
unmount_path() {	# MOUNTPOINT: FUSE or kernel, lazily if it must
	local m=$1
	if grep -q " $m fuse" /proc/mounts; then
		fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	else
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	fi
}
detach_loop() {	# DEVICE: detach it and make btrfs forget it
	losetup -d "$1" 2>/dev/null
	command -v btrfs >/dev/null && btrfs device scan --forget "$1" >/dev/null 2>&1
	sed -i "\\#^$1\$#d" "$LOOPS"
	return 0
}
cleanup() {
	local rc=$? m p l
	trap - EXIT INT TERM
	set +e
	stop_child
	for m in $(ours_mounted); do [ "$m" = "$TMPFS" ] || unmount_path "$m"; done
	for p in $(cat "$PIDFILE" 2>/dev/null); do end_process "$p"; done
	for l in $(cat "$LOOPS" 2>/dev/null); do detach_loop "$l"; done
	[ -z "$TMPFS" ] || umount "$TMPFS" 2>/dev/null || umount -l "$TMPFS" 2>/dev/null
	if [ -n "$(ours_mounted)" ]; then
		echo "run.sh: could not unmount everything; left $WORK in place" >&2
	elif [ $KEEP = 1 ]; then
		log "kept $WORK${STORE:+ and ${STORE[*]}}"
	else
		for m in "${STORE[@]}"; do [ "$m" = "$TMPFS" ] || rm -rf "$m"; done
		rm -rf "$WORK"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM

meta() { printf '%s\t%s\n' "$1" "$2" >> "$META"; }
cmdlog() { local kind=$1; shift; printf '%s %s\n' "$kind" "$*" >> "$CMDS"; }
run_logged() {	# KIND CMD...: log it, run it
	local kind=$1; shift
	cmdlog "$kind" "$*"
	"$@"
}

# ---------------------------------------------------------------- storage
LOAD0=$(cut -d' ' -f1 /proc/loadavg)
if [ -z "$MEMBERS_DIR" ]; then
	TMPFS=$WORK/tmpfs
	mkdir -p "$TMPFS"
	run_logged "#setup-storage" mount -t tmpfs -o size=$TMPFS_SIZE,mode=0755 raidfs-bench "$TMPFS"
	# this kind of VM hands out never-touched pages slowly: fill the tmpfs
	# once so that whatever runs first is not penalised
	log "warming the tmpfs ($WARM_MIB MiB)"
	dd if=/dev/zero of="$TMPFS/warm" bs=1M count=$WARM_MIB status=none 2>/dev/null || true
	rm -f "$TMPFS/warm"
	STORE=("$TMPFS")
	STORAGE_DESC="one tmpfs (size=$TMPFS_SIZE), i.e. the software path; every configuration in its own directories of it"
else
	IFS=: read -r -a dirs <<<"$MEMBERS_DIR"
	for d in "${dirs[@]}"; do
		[ -d "$d" ] || { echo "run.sh: --members-dir: '$d' is not a directory" >&2; exit 2; }
		STORE+=("$(mktemp -d "$(cd "$d" && pwd)/raidfs-bench.XXXXXX")")
	done
	STORAGE_DESC="--members-dir $MEMBERS_DIR ($(for d in "${dirs[@]}"; do df -PT "$d" | awk 'NR==2 { printf "%s on %s; ", $2, $1 }'; done)member i in directory i mod ${#dirs[@]})"
fi
storage_full_note() {	# " (the member storage is N% full)" when it nearly is
	local s pct
	for s in "${STORE[@]}"; do
		pct=$(df --output=pcent "$s" 2>/dev/null | tail -1 | tr -dc 0-9)
		[ "${pct:-0}" -lt 95 ] || { echo " (the member storage $s is $pct% full)"; return 0; }
	done
}
store() { echo "${STORE[$(($1 % ${#STORE[@]}))]}"; }	# I: storage of member I
STORE0=${STORE[0]}
CAN_DROP=$ROOT
drop_caches() {
	sync
	[ $CAN_DROP = 0 ] || echo 3 > /proc/sys/vm/drop_caches
}

build_passthrough() {	# into $WORK/passthrough_ll, from the libfuse3-dev examples
	[ -f "$PT_SRC" ] && command -v gcc >/dev/null || return 1
	log "building passthrough_ll from $PT_SRC"
	cmdlog "#setup-passthrough" gcc -O2 -Wall -o passthrough_ll "$PT_SRC" '$(pkg-config --cflags --libs fuse3)' -lpthread
	# shellcheck disable=SC2046
	gcc -O2 -Wall -o "$WORK/passthrough_ll" "$PT_SRC" $(pkg-config --cflags --libs fuse3) -lpthread 2>"$WORK/pt-build.log"
}
# libfuse allocates a 1 MiB buffer per read reply; with glibc's default
# thresholds each is a fresh mmap, which halves passthrough_ll's sequential
# read on this kind of VM.  raidfs keeps its buffers, so this is the fairer
# (stronger) ceiling.
PT_TUNABLES=glibc.malloc.mmap_threshold=8388608:glibc.malloc.trim_threshold=1073741824

# ---------------------------------------------------------- configurations
# kind of a configuration name, and for raidfs its parts
kind() {
	case $1 in
	raw|passthrough|mergerfs|md) echo "$1" ;;
	btrfs-raid0|btrfs-raid1|btrfs-raid5|btrfs-raid6) echo btrfs ;;
	*)
		if [[ $1 =~ ^(single|raid0|raid1|raid5|raid6|raid10|raid50|raid60)-([0-9]+)(-c([0-9]+[KM]))?(-(wb|wt|awb))?$ ]]; then
			echo raidfs
		else
			echo unknown
		fi
		;;
	esac
}
rlevel() { [[ $1 =~ ^([a-z0-9]+)-([0-9]+) ]] && echo "${BASH_REMATCH[1]}"; }
rwidth() { [[ $1 =~ ^([a-z0-9]+)-([0-9]+) ]] && echo "${BASH_REMATCH[2]}"; }
rchunk() { if [[ $1 =~ -c([0-9]+[KM]) ]]; then echo "${BASH_REMATCH[1]}"; else echo 64K; fi; }
rpolicy() { if [[ $1 =~ -(wb|wt|awb)$ ]]; then echo "${BASH_REMATCH[1]}"; fi; }
rgroups() { case $(rlevel "$1") in raid50|raid60) echo 2 ;; *) echo 1 ;; esac; }
data_members() {	# CFG: members' worth of data per stripe
	local n l
	n=$(rwidth "$1") l=$(rlevel "$1")
	case $l in
	raid0) echo "$n" ;; raid1) echo 1 ;; raid10) echo $((n / 2)) ;; raid5) echo $((n - 1)) ;;
	raid6) echo $((n - 2)) ;; raid50) echo $((n - 2)) ;; raid60) echo $((n - 4)) ;; *) echo 1 ;;
	esac
}
policy_opts() {
	case $1 in
	wb) echo write_policy=writeback,bbu=shm ;; wt) echo write_policy=writethrough ;;
	awb) echo write_policy=always-writeback,bbu=shm ;;
	esac
}
describe() {
	local c=$1
	case $(kind "$c") in
	raw) echo "the member storage itself, one directory, no FUSE" ;;
	passthrough) echo "libfuse example passthrough_ll over one directory (defaults: multithreaded, cache=auto; GLIBC_TUNABLES=$PT_TUNABLES)" ;;
	mergerfs) echo "mergerfs $(mergerfs --version 2>/dev/null | head -1 | awk '{print $3}') pooling 4 directories (cache.files=off, category.create=mfs)" ;;
	btrfs) echo "btrfs -d ${c#btrfs-} -m $(btrfs_meta "${c#btrfs-}") over 4 loop devices (backing files of $BTRFS_IMG in the member storage)" ;;
	md) echo "Linux md RAID" ;;
	raidfs)
		local p
		p=$(rpolicy "$c")
		echo "raidfs $(rlevel "$c"), $(rwidth "$c") members$([ "$(rgroups "$c")" = 1 ] || echo " in $(rgroups "$c") groups"), chunk $(rchunk "$c")${p:+, -o $(policy_opts "$p")}"
		;;
	*) echo "unknown" ;;
	esac
}
btrfs_meta() { case $1 in raid6) echo raid1c3 ;; raid0|raid1|raid5) echo raid1 ;; esac; }
mnt() { if [ "$1" = raw ]; then echo "$STORE0/raw"; else echo "$WORK/mnt/$1"; fi; }
down() { [ -e "$STATE/$1.down" ]; }
daemon_pid() { cat "$STATE/$1.pid" 2>/dev/null || true; }
members() {	# CFG: its member directories, one a line
	local i n
	n=$(rwidth "$1")
	for i in $(seq 0 $((n - 1))); do echo "$(store "$i")/$1/m$i"; done
}
fuse_daemon() {	# CFG CMD...: start a FUSE daemon in the foreground of a background job
	local c=$1 pid
	shift
	cmdlog "#setup-$c" "$@"
	"$@" </dev/null >>"$WORK/$c.log" 2>&1 &
	pid=$!
	started "$pid"
	echo "$pid" > "$STATE/$c.pid"
	wait_mounted "$(mnt "$c")" "$pid" || { tail -5 "$WORK/$c.log" >&2; return 1; }
}
attach_loops() {	# CFG N SIZE: backing files and loop devices, printed
	local c=$1 n=$2 size=$3 i f dev
	for i in $(seq 0 $((n - 1))); do
		f=$(store "$i")/$c/img$i
		mkdir -p "$(dirname "$f")"
		truncate -s "$size" "$f"
		dev=$(losetup -f --show "$f") || return 1
		echo "$dev" >> "$LOOPS"
		echo "$dev"
	done
}
mount_cfg() {	# CFG: create and mount it (0), or explain why not (1, on stdout)
	local c=$1 m
	m=$(mnt "$c")
	mkdir -p "$m"
	case $(kind "$c") in
	raw) cmdlog "#setup-$c" mkdir -p "$m" ;;
	passthrough)
		build_passthrough || { echo "not available (passthrough_ll could not be built from $PT_SRC: apt-get install libfuse3-dev gcc)"; return 1; }
		mkdir -p "$STORE0/pt"
		fuse_daemon "$c" env GLIBC_TUNABLES=$PT_TUNABLES "$WORK/passthrough_ll" -f -o source="$STORE0/pt" "$m" ||
			{ echo "failed: passthrough_ll did not mount"; return 1; }
		;;
	mergerfs)
		command -v mergerfs >/dev/null || { echo "not available (mergerfs is not installed: apt-get install mergerfs)"; return 1; }
		local b="" i
		for i in 0 1 2 3; do mkdir -p "$(store $i)/mergerfs/b$i"; b+="${b:+:}$(store $i)/mergerfs/b$i"; done
		fuse_daemon "$c" mergerfs -f -o cache.files=off,category.create=mfs,minfreespace=1M,fsname=bench-mergerfs "$b" "$m" ||
			{ echo "failed: mergerfs did not mount"; return 1; }
		;;
	btrfs)
		[ $ROOT = 1 ] || { echo "not available (needs root for loop devices)"; return 1; }
		command -v mkfs.btrfs >/dev/null || { echo "not available (mkfs.btrfs missing: apt-get install btrfs-progs)"; return 1; }
		grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null || { echo "not available (the kernel has no btrfs)"; return 1; }
		local devs lvl=${c#btrfs-}
		devs=$(attach_loops "$c" 4 "$BTRFS_IMG" | paste -sd' ') || { echo "failed: no loop devices"; return 1; }
		echo "$devs" > "$STATE/$c.loops"
		# shellcheck disable=SC2086
		run_logged "#setup-$c" mkfs.btrfs -q -f -d "$lvl" -m "$(btrfs_meta "$lvl")" $devs >/dev/null 2>"$WORK/$c.log" ||
			{ echo "failed: mkfs.btrfs: $(tail -1 "$WORK/$c.log")"; return 1; }
		run_logged "#setup-$c" mount -t btrfs "${devs%% *}" "$m" 2>>"$WORK/$c.log" ||
			{ echo "failed: mount: $(tail -1 "$WORK/$c.log")"; return 1; }
		;;
	md)
		if [ ! -e /proc/mdstat ] && ! modprobe md_mod 2>/dev/null; then
			echo "not available (kernel has no md driver)"
		else
			echo "not measured (the kernel has md, but this harness does not drive mdadm yet)"
		fi
		return 1
		;;
	raidfs)
		local p opts="log=$WORK/$c.log" mem
		p=$(rpolicy "$c")
		if [ -n "$p" ]; then
			[ -n "$POLICY_OK" ] || { echo "not available ($POLICY_WHY)"; return 1; }
			opts+=",$(policy_opts "$p")"
		fi
		mem=$(members "$c")
		# shellcheck disable=SC2086
		mkdir -p $mem
		# shellcheck disable=SC2046,SC2086
		run_logged "#setup-$c" "$RAIDFS" create --level "$(rlevel "$c")" --chunk "$(rchunk "$c")" \
			$([ "$(rgroups "$c")" = 1 ] || echo "--groups $(rgroups "$c")") --name "bench-$c" $mem >/dev/null 2>>"$WORK/$c.log" ||
			{ echo "failed: raidfs create: $(tail -1 "$WORK/$c.log")"; return 1; }
		fuse_daemon "$c" "$RAIDFS" mount -f -o "$opts" "$(echo "$mem" | paste -sd:)" "$m" ||
			{ echo "failed: raidfs did not mount: $(tail -1 "$WORK/$c.log")"; return 1; }
		;;
	*) echo "unknown configuration (see --help)"; return 1 ;;
	esac
}
set_down() {	# CFG WHY: report it and take it out of the run
	log "$1: $2"
	echo "$2" > "$STATE/$1.down"
	record "$1" status "$2"
	local m pid
	m=$(mnt "$1")
	pid=$(daemon_pid "$1")
	[ "$1" = raw ] || ! mountpoint -q "$m" || unmount_path "$m"
	[ -z "$pid" ] || end_process "$pid"
}

# Does this raidfs have write policies (another change adds them)?  Try
# them on a scratch array.
POLICY_OK="" POLICY_WHY=""
probe_policies() {
	local d=$WORK/probe pid
	mkdir -p "$d/a" "$d/b" "$d/c" "$d/mnt"
	if ! "$RAIDFS" create --level raid5 --name probe "$d/a" "$d/b" "$d/c" >/dev/null 2>"$d/err"; then
		POLICY_WHY="could not create a probe array: $(tail -1 "$d/err")"
		return
	fi
	"$RAIDFS" mount -f -o write_policy=writeback,bbu=shm,log="$d/log" "$d/a:$d/b:$d/c" "$d/mnt" </dev/null >"$d/err" 2>&1 &
	pid=$!
	started "$pid"
	if wait_mounted "$d/mnt" "$pid"; then
		POLICY_OK=yes
		"$RAIDFS" unmount "$d/mnt" >/dev/null 2>&1 || unmount_path "$d/mnt"
	else
		POLICY_WHY="raidfs mount refuses -o write_policy=writeback,bbu=shm: $(grep -v '^$' "$d/err" | tail -1)"
	fi
	end_process "$pid"
	rm -rf "$d"
}

# ---------------------------------------------------------------- running
# step CFG WHAT FUNCTION ARGS...: one measurement in a background subshell
# (so Ctrl-C reaches the trap at once, and set -e holds inside).  When it
# fails, err.WHAT records why; when the configuration's mount is gone too,
# the configuration leaves the run.
step() {
	local c=$1 what=$2 rc
	shift 2
	down "$c" && return 0
	in_child "$WORK/step.err" "$@"
	rc=$CHILD_RC
	grep -v '^$' "$WORK/step.err" >&2 || true
	[ $rc -eq 0 ] && return 0
	local why
	why=$(grep -v '^$' "$WORK/step.err" | tail -1 | cut -c1-200 || true)
	why+=$(storage_full_note)
	log "$c $what failed (exit $rc): $why"
	record "$c" "err.$what" "exit $rc: ${why:-no message}"
	if [ "$c" != raw ] && ! mountpoint -q "$(mnt "$c")"; then
		set_down "$c" "failed: its mount went away during $what"
	fi
	return 0
}
up() {	# CONFIGS...: those of them that are mounted and running
	local c
	for c in "$@"; do [ -e "$STATE/$c.up" ] && ! down "$c" && echo "$c"; done
	return 0
}

# fio CFG NAME JOB SECTION VAR=VALUE...: run one fio job with the job
# file's variables set; FIO is "rbytes riops rMiB/s wbytes wiops wMiB/s"
FIO=""
FIO_S=0
fio_run() {
	local c=$1 name=$2 jobfile=$3 section=$4 j t0 t1
	local job=$here/jobs/$jobfile
	shift 4
	j=$WORK/json/$c-$name.json
	cmdlog "fio-$jobfile-$section" env "$@" fio --section="$section" "contrib/bench/jobs/$jobfile"
	t0=$(date +%s%N)
	env "$@" timeout -k 10 $((T_RUNTIME * 4 + 600)) fio --output-format=json --output="$j" \
		--section="$section" "$job" >/dev/null 2>"$j.err" || { tail -3 "$j.err" >&2; return 1; }
	t1=$(date +%s%N)
	FIO_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
	FIO=$("$PY" "$here/bench.py" fio-sum "$j")
}
cpu_jiffies() {	# "busy total" of the whole machine, in clock ticks
	awk '/^cpu / { b = $2 + $3 + $4 + $7 + $8 + $9; print b, b + $5 + $6 }' /proc/stat
}
HZ=$(getconf CLK_TCK)
NCPU=$(nproc)
record_cpu() {	# CFG DIR(write|read) BUSY0 TOTAL0 BUSY1 TOTAL1 BYTES SECONDS
	local c=$1 d=$2
	awk -v b="$(($5 - $3))" -v t="$(($6 - $4))" -v hz="$HZ" -v by="$7" -v s="$8" \
		-v c="$c" -v d="$d" 'BEGIN {
		if (by <= 0 || t <= 0 || s <= 0) exit
		printf "%s\tcpu.%s.s_per_gib\t%.4f\n", c, d, (b / hz) / (by / 1073741824)
		printf "%s\tcpu.%s.pct_per_100mbs\t%.4f\n", c, d, (100 * b / t) / ((by / s / 1e6) / 100)
	}' >> "$RES"
}
fstrim_cfg() {	# CFG: give a btrfs' freed space back to the tmpfs
	[ "$(kind "$1")" != btrfs ] || fstrim "$(mnt "$1")" 2>/dev/null || true
}

# ---------------------------------------------------- family: targets
t_seqwrite() {	# CFG: the target (a new file)
	local c=$1 f
	f=$(mnt "$c")/target.dat
	rm -f "$f"
	fio_run "$c" seqwrite targets.fio seqwrite FILE="$f" SIZE=$SEQ_SIZE RUNTIME=$T_RUNTIME
	set -- $FIO
	record "$c" seqwrite.mibs "$6"
	log "$c seqwrite: $6 MiB/s"
}
t_cpuwrite() {	# CFG: the CPU cost of writing (over the file t_seqwrite left)
	local c=$1 b0 t0 b1 t1
	read -r b0 t0 < <(cpu_jiffies)
	fio_run "$c" cpuwrite cpu.fio write FILE="$(mnt "$c")/target.dat" SIZE=$SEQ_SIZE RUNTIME=$T_RUNTIME
	read -r b1 t1 < <(cpu_jiffies)
	set -- $FIO
	record "$c" cpu.write.mibs "$6"
	record_cpu "$c" write "$b0" "$t0" "$b1" "$t1" "$4" "$FIO_S"
}
t_seqread() {
	local c=$1 f b0 t0 b1 t1
	f=$(mnt "$c")/target.dat
	read -r b0 t0 < <(cpu_jiffies)
	fio_run "$c" seqread targets.fio seqread FILE="$f" SIZE=$SEQ_SIZE RUNTIME=$T_RUNTIME
	read -r b1 t1 < <(cpu_jiffies)
	set -- $FIO
	record "$c" seqread.mibs "$3"
	record_cpu "$c" read "$b0" "$t0" "$b1" "$t1" "$1" "$FIO_S"
	log "$c seqread: $3 MiB/s"
}
t_randread() {
	local c=$1
	fio_run "$c" randread targets.fio randread FILE="$(mnt "$c")/target.dat" SIZE=$SEQ_SIZE RUNTIME=$T_RUNTIME
	set -- $FIO
	record "$c" randread.iops "$2"
	log "$c randread: $2 IOPS"
}
t_files() {
	local c=$1 out cr un
	rm -f "$(mnt "$c")/target.dat"
	fstrim_cfg "$c"
	cmdlog "files" python3 contrib/bench/bench.py files "DIR" "$NFILES"
	out=$(timeout 900 "$PY" "$here/bench.py" files "$(mnt "$c")/files" "$NFILES")
	read -r cr un <<<"$out"
	record "$c" files.create.s "$cr"
	record "$c" files.unlink.s "$un"
	log "$c files: create ${cr}s, unlink ${un}s"
}
family_targets() {
	local r c
	for r in $(seq "$ROUNDS"); do
		# shellcheck disable=SC2046
		for c in $(rotated $((r - 1)) $(up $SET_TARGETS)); do
			step "$c" seqwrite t_seqwrite "$c"
			step "$c" seqread t_seqread "$c"
			if [ "$r" = 1 ]; then step "$c" cpuwrite t_cpuwrite "$c"; fi
			step "$c" randread t_randread "$c"
			step "$c" files t_files "$c"
		done
	done
}

# ------------------------------------------- families: db seq rand mt mix
SWEEP_ROT=0
sweep_point() {	# WHAT FUNCTION ARGS...: run FUNCTION CFG ARGS... on every sweep configuration
	local what=$1 c
	shift
	# shellcheck disable=SC2046
	for c in $(rotated $SWEEP_ROT $(up $SET_SWEEP)); do step "$c" "$what" "$@" "$c"; done
	SWEEP_ROT=$((SWEEP_ROT + 1))
	# btrfs copies on write: give the extents freed by this point back to
	# the tmpfs at once, or its loop files grow until the storage is full
	# shellcheck disable=SC2046
	for c in $(up $SET_SWEEP); do fstrim_cfg "$c"; done
}
s_prep() {	# CFG: the sweep file, written once
	local c=$1
	fio_run "$c" prep targets.fio seqwrite FILE="$(mnt "$c")/sweep.dat" SIZE=$SWEEP_SIZE RUNTIME=0
}
s_db() {	# QD WMIX CFG
	local q=$1 w=$2 c=$3
	fio_run "$c" "db-$q-$w" database.fio database FILE="$(mnt "$c")/sweep.dat" SIZE=$SWEEP_SIZE \
		WMIX="$w" QD="$q" RUNTIME=$RUNTIME
	set -- $FIO
	record "$c" "db.q$q.w$w.iops" "$(awk -v a="$2" -v b="$5" 'BEGIN { print a + b }')"
}
s_seq() {	# RW BS CFG
	local rw=$1 bs=$2 c=$3
	fio_run "$c" "seq-$rw-$bs" seq.fio seq FILE="$(mnt "$c")/sweep.dat" SIZE=$SWEEP_SIZE \
		RW="$rw" BS="$bs" QD=$SEQ_QD RUNTIME=$RUNTIME
	set -- $FIO
	record "$c" "seq.$rw.$bs.mibs" "$([ "$rw" = read ] && echo "$3" || echo "$6")"
}
s_rand() {	# RW BS CFG
	local rw=$1 bs=$2 c=$3
	fio_run "$c" "rand-$rw-$bs" rand.fio rand FILE="$(mnt "$c")/sweep.dat" SIZE=$SWEEP_SIZE \
		RW="$rw" BS="$bs" QD=$RAND_QD RUNTIME=$RUNTIME
	set -- $FIO
	if [ "$rw" = read ]; then
		record "$c" "rand.$rw.$bs.iops" "$2"; record "$c" "rand.$rw.$bs.mibs" "$3"
	else
		record "$c" "rand.$rw.$bs.iops" "$5"; record "$c" "rand.$rw.$bs.mibs" "$6"
	fi
}
s_mt() {	# RW JOBSxQD CFG
	local rw=$1 p=$2 c=$3 region
	region=$(( $(numfmt --from=iec "${SWEEP_SIZE^^}") / 4 ))
	fio_run "$c" "mt-$rw-$p" multithread.fio mt FILE="$(mnt "$c")/sweep.dat" REGION=$region \
		RW="$rw" JOBS="${p%x*}" QD="${p#*x}" RUNTIME=$RUNTIME
	set -- $FIO
	record "$c" "mt.$rw.$p.mibs" "$([ "$rw" = read ] && echo "$3" || echo "$6")"
}
s_mix() {	# NAME QD CFG
	local n=$1 q=$2 c=$3
	fio_run "$c" "mix-$n-$q" "$n.fio" "$n" FILE="$(mnt "$c")/sweep.dat" SIZE=$SWEEP_SIZE QD="$q" RUNTIME=$RUNTIME
	set -- $FIO
	record "$c" "mix.$n.q$q.iops" "$(awk -v a="$2" -v b="$5" 'BEGIN { print a + b }')"
}
s_clean() { rm -f "$(mnt "$1")/sweep.dat"; fstrim_cfg "$1"; }
family_sweeps() {
	local q w rw bs p n c
	log "sweeps on: $(up $SET_SWEEP | paste -sd' ')"
	# shellcheck disable=SC2046
	for c in $(up $SET_SWEEP); do step "$c" prep s_prep "$c"; done
	if has_pattern db; then
		log "database: write share $DB_WMIX at QD $DB_QD"
		for q in $DB_QD; do for w in $DB_WMIX; do sweep_point "db.q$q.w$w" s_db "$q" "$w"; done; done
	fi
	if has_pattern seq; then
		log "sequential by block size: $SEQ_BS"
		for rw in read write; do for bs in $SEQ_BS; do sweep_point "seq.$rw.$bs" s_seq $rw "$bs"; done; done
	fi
	if has_pattern rand; then
		log "random by block size: $RAND_BS"
		for rw in read write; do for bs in $RAND_BS; do sweep_point "rand.$rw.$bs" s_rand $rw "$bs"; done; done
	fi
	if has_pattern mt; then
		log "multithreaded: $MT_POINTS"
		for rw in read write; do for p in $MT_POINTS; do sweep_point "mt.$rw.$p" s_mt $rw "$p"; done; done
	fi
	if has_pattern mix; then
		log "IOMeter mixes at QD $MIX_QD"
		for n in fileserver webserver workstation; do for q in $MIX_QD; do sweep_point "mix.$n.q$q" s_mix "$n" "$q"; done; done
	fi
	# shellcheck disable=SC2046
	for c in $(up $SET_SWEEP); do step "$c" clean s_clean "$c"; done
}

# ------------------------------------------------------------- family: fc
timed() {	# CMD...: run it, print its wall time in seconds
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null || return 1
	t1=$(date +%s%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'
}
fc_record() {	# CFG SET PHASE BYTES SECONDS
	local v
	v=$(awk -v b="$4" -v s="$5" 'BEGIN { if (s > 0) printf "%.1f", b / 1048576 / s }')
	record "$1" "fc.$2.$3.mibs" "$v"
	log "$1 fc $2 $3: $v MiB/s"
}
fc_env() {	# SET DIR RW
	echo DIR="$2" RW="$3" ISO_N="${FC_ISO% *}" ISO_SIZE="${FC_ISO#* }" MP3_N=$FC_MP3 PROG_N=$FC_PROG
}
fc_one() {	# SET CFG: create, read, copy near, copy far
	local set=$1 c=$2 d far s bytes
	d=$(mnt "$c")/fc
	far=$STORE0/far/$c
	rm -rf "$d" "$far"
	mkdir -p "$d/$set" "$(dirname "$far")"
	# shellcheck disable=SC2046
	s=$(timed fio_run "$c" "fc-$set-create" filecopy.fio "$set" $(fc_env "$set" "$d/$set" write))
	bytes=$(find "$d/$set" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
	fc_record "$c" "$set" create "$bytes" "$s"
	drop_caches
	# shellcheck disable=SC2046
	s=$(timed fio_run "$c" "fc-$set-read" filecopy.fio "$set" $(fc_env "$set" "$d/$set" read))
	fc_record "$c" "$set" read "$bytes" "$s"
	drop_caches
	cmdlog "fc-copy" python3 contrib/bench/bench.py copy SRC DST
	s=$(timed "$PY" "$here/bench.py" copy "$d/$set" "$d/$set.near")
	fc_record "$c" "$set" copynear "$bytes" "$s"
	drop_caches
	s=$(timed "$PY" "$here/bench.py" copy "$d/$set" "$far")
	fc_record "$c" "$set" copyfar "$bytes" "$s"
	rm -rf "$d" "$far"
	fstrim_cfg "$c"
}
family_fc() {
	local set c r=0
	for set in iso mp3 prog; do
		# shellcheck disable=SC2046
		for c in $(rotated $r $(up $SET_FC)); do step "$c" "fc.$set" fc_one "$set" "$c"; done
		r=$((r + 1))
	done
}

# --------------------------------------------------------- family: states
# raidfs: 'raidfs fail' one member (two for raid6/raid60), then 'raidfs
# replace' them with empty directories, rebuild rate capped so that it
# lasts through the measurement.  btrfs: unmount, detach the loop devices,
# mount -o degraded.  The test file's md5 must not change.
STATES_NOTE="raidfs: members failed online with 'raidfs fail MNT 1' (then 2); rebuilding: 'raidfs replace' of each failed member onto an empty directory, with the rebuild rate capped (--min-rate = --max-rate) so that it lasts through the measurement, then uncapped to finish. btrfs: unmounted, loop devices of devid 2 (and 3) detached, mounted -o degraded; btrfs rebuild (btrfs replace) is not driven by this harness."
failures() {	# CFG: how many members its level survives (in the worst group)
	case $(kind "$1") in
	raidfs) case $(rlevel "$1") in raid1|raid10|raid5|raid50) echo 1 ;; raid6|raid60) echo 2 ;; *) echo 0 ;; esac ;;
	btrfs) case ${1#btrfs-} in raid1|raid5) echo 1 ;; raid6) echo 2 ;; *) echo 0 ;; esac ;;
	*) echo 0 ;;
	esac
}
st_measure() {	# CFG STATE
	local c=$1 s=$2 f
	f=$(mnt "$c")/state.dat
	fio_run "$c" "state-$s-seqread" targets.fio seqread FILE="$f" SIZE=$STATE_SIZE RUNTIME=$T_RUNTIME
	set -- $FIO
	record "$c" "state.$s.seqread.mibs" "$3"
	fio_run "$c" "state-$s-randread" targets.fio randread FILE="$f" SIZE=$STATE_SIZE RUNTIME=$T_RUNTIME
	record "$c" "state.$s.randread.iops" "$(echo "$FIO" | cut -d' ' -f2)"
	log "$c $s: seq read $3 MiB/s, 4K random read $(echo "$FIO" | cut -d' ' -f2) IOPS"
}
st_md5() {	# CFG STATE: compare the test file with its healthy md5
	local c=$1 s=$2 sum
	sum=$(md5sum < "$(mnt "$c")/state.dat" | cut -d' ' -f1)
	if [ "$s" = healthy ]; then
		echo "$sum" > "$STATE/$c.md5"
	elif [ "$sum" = "$(cat "$STATE/$c.md5")" ]; then
		record "$c" "state.$s.data" same
	else
		record "$c" "state.$s.data" DIFFERENT
		log "$c $s: the test file reads back DIFFERENT"
	fi
}
st_healthy() {
	local c=$1
	fio_run "$c" state-write targets.fio seqwrite FILE="$(mnt "$c")/state.dat" SIZE=$STATE_SIZE RUNTIME=0
	st_md5 "$c" healthy
	st_measure "$c" healthy
}
btrfs_degrade() {	# CFG K: unmount, detach loop device K (devid K+1), mount degraded
	local c=$1 k=$2 m devs dev
	m=$(mnt "$c")
	read -r -a devs < "$STATE/$c.loops"
	run_logged "#setup-$c" umount "$m"
	dev=${devs[$k]}
	run_logged "#setup-$c" losetup -d "$dev"
	btrfs device scan --forget "$dev" >/dev/null 2>&1 || true
	sed -i "\\#^$dev\$#d" "$LOOPS"
	devs[$k]=""
	echo "${devs[*]}" > "$STATE/$c.loops"
	run_logged "#setup-$c" mount -t btrfs -o degraded "${devs[0]}" "$m"
}
st_fail() {	# CFG N: the N-th member fails
	local c=$1 n=$2
	if [ "$(kind "$c")" = btrfs ]; then
		btrfs_degrade "$c" "$n"
	else
		run_logged "#setup-$c" "$RAIDFS" fail "$(mnt "$c")" "$n" >/dev/null
	fi
	st_measure "$c" "failed$n"
	st_md5 "$c" "failed$n"
}
rebuild_active() {	# MOUNTPOINT (status exits 1 when degraded: read its JSON anyway)
	local j
	j=$("$RAIDFS" status --json "$1" || true)
	"$PY" -c 'import json, sys; sys.exit(0 if json.loads(sys.argv[1]).get("rebuild", {}).get("active") else 1)' "$j"
}
wait_rebuilt() {	# MOUNTPOINT: until no rebuild runs (at most 300 s)
	local i
	for i in $(seq 600); do
		rebuild_active "$1" || return 0
		sleep 0.5
	done
	echo "a rebuild still runs 300 s after it began" >&2
	return 1
}
replace_member() {	# CFG I: rebuild member I onto an empty directory
	local c=$1 i=$2
	mkdir -p "$(store "$i")/$c/new$i"
	run_logged "#setup-$c" "$RAIDFS" replace "$(mnt "$c")" "$i" "$(store "$i")/$c/new$i" >/dev/null
}
st_rebuild() {	# CFG: replace the failed members, measure while the first rebuilds
	local c=$1 m n i rate shard
	m=$(mnt "$c")
	n=$(failures "$c")
	shard=$(( $(numfmt --from=iec "${STATE_SIZE^^}") / $(data_members "$c") / 1000000 ))
	rate=$(( shard / (2 * T_RUNTIME + 6) ))
	[ "$rate" -ge 1 ] || rate=1
	run_logged "#setup-$c" "$RAIDFS" rebuild "$m" --max-rate "$rate" >/dev/null
	run_logged "#setup-$c" "$RAIDFS" rebuild "$m" --min-rate "$rate" >/dev/null
	# one rebuild runs at a time: with two members failed, the
	# measurement sees the first rebuilt while the second is still missing
	replace_member "$c" 1
	st_measure "$c" rebuilding
	if rebuild_active "$m"; then
		record "$c" state.rebuilding.note "rebuild capped at $rate MB/s$([ "$n" -lt 2 ] || echo ', 2nd member still failed')"
	else
		record "$c" state.rebuilding.note "rebuild at $rate MB/s ended during the measurement"
	fi
	run_logged "#setup-$c" "$RAIDFS" rebuild "$m" --max-rate 0 >/dev/null
	run_logged "#setup-$c" "$RAIDFS" rebuild "$m" --min-rate 100 >/dev/null
	wait_rebuilt "$m"
	for i in $(seq 2 "$n"); do
		replace_member "$c" "$i"
		wait_rebuilt "$m"
	done
	"$RAIDFS" status "$m" >/dev/null 2>&1 || { echo "the array is not optimal after the rebuilds" >&2; return 1; }
	st_md5 "$c" rebuilding
}
family_states() {
	local c list=""
	# shellcheck disable=SC2046
	for c in $(up $SET_STATES); do [ "$(failures "$c")" -gt 0 ] && list+=" $c"; done
	[ -n "$list" ] || return 0
	log "healthy vs degraded vs rebuilding on:$list"
	for c in $list; do step "$c" state.healthy st_healthy "$c"; done
	for c in $list; do step "$c" state.failed1 st_fail "$c" 1; done
	for c in $list; do
		if [ "$(failures "$c")" -ge 2 ]; then step "$c" state.failed2 st_fail "$c" 2; fi
	done
	for c in $list; do
		if [ "$(kind "$c")" = raidfs ]; then
			step "$c" state.rebuilding st_rebuild "$c"
		else
			record "$c" state.rebuilding.note "not measured"
		fi
	done
}

# ---------------------------------------------------------------- the run
ALL=""
for c in $SET_TARGETS $SET_SWEEP $SET_STATES; do [[ " $ALL " == *" $c "* ]] || ALL+=" $c"; done
for c in $ALL; do
	if [ "$(kind "$c")" = raidfs ] && [ -n "$(rpolicy "$c")" ] && [ -z "$POLICY_OK$POLICY_WHY" ]; then
		probe_policies
	fi
done
log "mounting:$ALL"
for c in $ALL; do
	record "$c" desc "$(describe "$c")"
	if why=$(mount_cfg "$c"); then
		touch "$STATE/$c.up"
	else
		set_down "$c" "$why"
	fi
done

if has_pattern targets; then family_targets; fi
if has_pattern db || has_pattern seq || has_pattern rand || has_pattern mt || has_pattern mix; then family_sweeps; fi
if has_pattern fc; then family_fc; fi
if has_pattern states; then family_states; fi

log "unmounting"
for c in $ALL; do
	[ -e "$STATE/$c.up" ] && ! down "$c" || continue
	m=$(mnt "$c")
	case $(kind "$c") in
	raidfs) "$RAIDFS" unmount "$m" >/dev/null 2>&1 || unmount_path "$m" ;;
	raw) ;;
	*) unmount_path "$m" ;;
	esac
	pid=$(daemon_pid "$c")
	[ -z "$pid" ] || end_process "$pid"
done

# ------------------------------------------------------------------ report
T_END=$(date +%s)
meta mode "$MODE"
meta date "$(date '+%F %H:%M %Z')"
meta machine "$NCPU CPUs, $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM"
meta cpu "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
meta kernel "$(uname -sr)"
meta ncpu "$NCPU"
meta versions "$(fio --version), libfuse $(pkg-config --modversion fuse3 2>/dev/null || echo ?), $(mergerfs --version 2>/dev/null | head -1 || echo 'mergerfs ?'), btrfs-progs $(mkfs.btrfs --version 2>/dev/null | awk '{ print $NF }' || echo ?), $(gnuplot --version 2>/dev/null || echo 'no gnuplot')"
meta raidfs "$RAIDFS (git $(git -C "$top" describe --always --dirty 2>/dev/null || echo ?))"
meta storage "$STORAGE_DESC"
meta load "$LOAD0 at the start, $(cut -d' ' -f1 /proc/loadavg) at the end"
meta wall "$(( (T_END - T_START) / 60 )) min $(( (T_END - T_START) % 60 )) s"
meta shared "the machine was shared with other work during the run (see the load average), so absolute numbers are noisy: compare ratios within this run"
meta cmdline "contrib/bench/run.sh ${ARGS[*]}"
meta commands_file "$CMDS"
meta workdir "$WORK"
meta size "$SEQ_SIZE"
meta sweep_size "$SWEEP_SIZE"
meta runtime "$RUNTIME"
meta nfiles "$NFILES"
meta db_qd "$DB_QD"
meta db_wmix "$DB_WMIX"
meta seq_bs "$SEQ_BS"
meta seq_qd "$SEQ_QD"
meta rand_bs "$RAND_BS"
meta rand_qd "$RAND_QD"
meta mt_points "$MT_POINTS"
meta mix_qd "$MIX_QD"
meta fc_sets "iso ${FC_ISO% *} x ${FC_ISO#* }, mp3 $FC_MP3 x 3-6 MiB, prog $FC_PROG x 4-256 KiB$([ $CAN_DROP = 1 ] || echo '; page cache NOT dropped (not root)')"
meta states_note "$STATES_NOTE"
[ $MODE = full ] || meta mode_note "Quick mode: fewer points, one round, and no 8-member, raid50/raid60 or other-chunk arrays; run with --full for all of them."
meta set.targets "$(has_pattern targets && echo $SET_TARGETS)"
meta set.db "$SET_SWEEP"; meta set.seq "$SET_SWEEP"; meta set.rand "$SET_SWEEP"
meta set.mt "$SET_SWEEP"; meta set.mix "$SET_SWEEP"; meta set.fc "$SET_FC"
meta set.states "$SET_STATES"
command -v gnuplot >/dev/null || meta gnuplot no
"$PY" "$here/bench.py" report "$RES" "$META" "$OUT"
command -v gnuplot >/dev/null || log "graphs: not available (gnuplot is not installed)"
# the target table and the comparison with btrfs, on stdout
awk '/^## / { show = ($0 ~ /^## (Issue-5 speed targets|raidfs against btrfs)/) } show' "$OUT/report.md"
log "report: $OUT/report.md ($(( (T_END - T_START) / 60 )) min $(( (T_END - T_START) % 60 )) s)"
