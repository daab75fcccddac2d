#!/usr/bin/env bash
# contrib/bench/srctree.sh - a source tree's life on raidfs against
# passthrough_ll (issue 30): untar /usr/include, lstat every entry with
# cold caches, read every file, rm -rf.  Seconds per phase and the total,
# the median of the rounds, and each configuration's total as a ratio to
# passthrough_ll's of the same run.
#
#   contrib/bench/srctree.sh [--raidfs PATH] [--baseline PATH]
#                            [--levels raid5,raid6] [--rounds N]
#                            [--mount-opts OPTS] [--out FILE]
#
#   --raidfs PATH    the raidfs binary (default ./raidfs)
#   --baseline PATH  also measure a second raidfs binary (LEVEL@base)
#   --levels LIST    raidfs levels, 4 members each (default raid5,raid6)
#   --rounds N       rounds, configurations in rotating order (default 3)
#   --mount-opts O   extra -o options of every raidfs mount
#   --out FILE       also write the report to FILE
#
# Everything lives on one fresh tmpfs: passthrough_ll over a directory of
# it, each raidfs over 4 member directories of it.  "Cold" is a fresh
# mount: every configuration is unmounted and mounted again before the
# lstat pass and before the read pass (the kernel forgets what it cached
# of that mount and nothing else).  Needs root, gcc and libfuse3-dev (for
# passthrough_ll, built from the libfuse examples).
set -u
RAIDFS=./raidfs BASE="" LEVELS=raid5,raid6 ROUNDS=3 MOPTS="" OUT=""
while [ $# -gt 0 ]; do
	case $1 in
	--raidfs) RAIDFS=$2; shift 2;;
	--baseline) BASE=$2; shift 2;;
	--levels) LEVELS=$2; shift 2;;
	--rounds) ROUNDS=$2; shift 2;;
	--mount-opts) MOPTS=$2; shift 2;;
	--out) OUT=$2; shift 2;;
	-h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
	*) echo "srctree.sh: unknown argument '$1' (see --help)" >&2; exit 2;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "srctree.sh: needs root (tmpfs, FUSE mounts)" >&2; exit 2; }
RAIDFS=$(readlink -f "$RAIDFS")
[ -z "$BASE" ] || BASE=$(readlink -f "$BASE")
W=$(mktemp -d /tmp/raidfs-srctree.XXXXXX)
PIDS=()
cleanup() {
	local m
	for m in "$W"/mnt/*; do mountpoint -q "$m" 2>/dev/null && fusermount3 -uz "$m"; done
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	sleep 0.5
	umount -l "$W/tmpfs" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

mkdir -p "$W/tmpfs" "$W/mnt"
mount -t tmpfs -o size=3g tmpfs "$W/tmpfs" || exit 1
PT_SRC=/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c
[ -f "$PT_SRC" ] || PT_SRC=$(find /usr/share/doc/libfuse3-dev -name 'passthrough_ll.c*' | head -1)
case $PT_SRC in *.gz) zcat "$PT_SRC" >"$W/pt.c"; PT_SRC=$W/pt.c;; esac
gcc -O2 -o "$W/passthrough_ll" "$PT_SRC" $(pkg-config --cflags --libs fuse3) -lpthread || exit 1
tar -C /usr -cf "$W/tmpfs/src.tar" include || exit 1
log "the tree: $(tar -tf "$W/tmpfs/src.tar" | grep -vc '/$') files, $(du -m "$W/tmpfs/src.tar" | cut -f1) MiB"

configs=(passthrough)
for l in ${LEVELS//,/ }; do
	configs+=("$l")
	[ -z "$BASE" ] || configs+=("$l@base")
done
for c in "${configs[@]}"; do
	mkdir -p "$W/mnt/$c"
	[ "$c" = passthrough ] && { mkdir -p "$W/tmpfs/pt"; continue; }
	bin=$RAIDFS; [[ $c == *@base ]] && bin=$BASE
	mem=""
	for i in 0 1 2 3; do mkdir -p "$W/tmpfs/$c/m$i"; mem="$mem $W/tmpfs/$c/m$i"; done
	"$bin" create --level "${c%@base}" --name "st${c%@base}" $mem >/dev/null || exit 1
done

mount_one() {
	local c=$1 bin=$RAIDFS
	if [ "$c" = passthrough ]; then
		GLIBC_TUNABLES=glibc.malloc.mmap_threshold=8388608:glibc.malloc.trim_threshold=1073741824 \
			"$W/passthrough_ll" -f -o source="$W/tmpfs/pt" "$W/mnt/$c" &
	else
		[[ $c == *@base ]] && bin=$BASE
		"$bin" mount -f -o "log=$W/$c.log${MOPTS:+,$MOPTS}" "$W"/tmpfs/"$c"/m0:"$W"/tmpfs/"$c"/m1:"$W"/tmpfs/"$c"/m2:"$W"/tmpfs/"$c"/m3 "$W/mnt/$c" &
	fi
	PIDS+=($!)
	for _ in $(seq 1 100); do mountpoint -q "$W/mnt/$c" && return 0; sleep 0.05; done
	log "$c did not mount"; exit 1
}
unmount_one() {
	local pid=${PIDS[-1]}
	fusermount3 -u "$W/mnt/$1" || fusermount3 -uz "$W/mnt/$1"
	# (the raidfs daemon ends by itself, after its cache is out)
	for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
}
secs() { local t0=$EPOCHREALTIME; "$@" >/dev/null 2>&1; echo "$EPOCHREALTIME - $t0" | bc; }
phase_untar() { tar -C "$1" -xf "$W/tmpfs/src.tar"; }
phase_stat() { find "$1/include" -print0 | xargs -0 stat >/dev/null; }
phase_read() { find "$1/include" -type f -print0 | xargs -0 cat >/dev/null; }
phase_rm() { rm -rf "$1/include"; }

RES=$W/results
: >"$RES"
for r in $(seq 1 "$ROUNDS"); do
	n=${#configs[@]}
	for k in $(seq 0 $((n - 1))); do
		c=${configs[$(( (k + r) % n ))]}
		m=$W/mnt/$c
		mount_one "$c"; u=$(secs phase_untar "$m"); unmount_one "$c"
		mount_one "$c"; s=$(secs phase_stat "$m"); unmount_one "$c"
		mount_one "$c"; rd=$(secs phase_read "$m"); x=$(secs phase_rm "$m"); unmount_one "$c"
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$u" "$s" "$rd" "$x" "$(echo "$u + $s + $rd + $x" | bc)" >>"$RES"
		log "round $r $c: untar $u s, lstat $s s, read $rd s, rm $x s"
	done
done

report() {
	echo "| configuration | untar s | lstat s | read s | rm -rf s | total s | total / passthrough |"
	echo "|---|---|---|---|---|---|---|"
	python3 - "$RES" "${configs[@]}" <<'PYEOF'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
med = {}
for c in sys.argv[2:]:
    rs = [list(map(float, r[1:])) for r in rows if r[0] == c]
    med[c] = [statistics.median(x) for x in zip(*rs)]
for c in sys.argv[2:]:
    m = med[c]
    print("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" % (c, *m, m[4] / med["passthrough"][4]))
PYEOF
}
report | tee ${OUT:+"$OUT"}
