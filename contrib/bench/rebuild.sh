#!/usr/bin/env bash
# contrib/bench/rebuild.sh - how long a rebuild and a re-add take.
#
#   contrib/bench/rebuild.sh [--raidfs PATH] [--size GIB] [--level raid6]
#                            [--members 5] [--file-mib 1] [--dir DIR]
#                            [--out FILE] [--create-opts OPTS]
#
# --create-opts OPTS: extra options of 'raidfs create' (default:
# $RAIDFS_CREATE_OPTS, else none), e.g. --create-opts "--checksum none".
# On a fresh tmpfs (or under DIR, to measure real disks): create an array,
# write SIZE GiB as files of FILE_MIB MiB (1 to 64; SIZE x 1024 / FILE_MIB
# files), then
#   foreground  reading 256 MiB of files healthy, and while the last member is rebuilt
#            at the default rates (each the median of three reads, after
#            one read to warm up; the rebuild must still run after the
#            three, or the line says it ended);
#   rebuild  fail member 1, 'raidfs replace' it onto an empty directory,
#            time until the member is online (verify pass included) and
#            report member bytes written per second;
#   baseline the same bytes copied with cp from one member directory to an
#            empty one (what the storage can do, same run);
#   ceiling  the rebuild's data movement alone on the same member files:
#            contrib/bench/rebuild-ceiling.c reads the shards a raid5 or
#            raid6 rebuild reads (n - 1 or n - 2 members), XORs them and
#            writes one shard per file, on two threads (built with cc at
#            run time; not measured for other levels);
#   re-add   fail member 2, rewrite 1% of the files (at least one), 'raidfs
#            add' the old directory back, time until online, and report
#            how many files were resynced (from the log) and the time as a
#            share of the full rebuild's.
# Rates are bytes per second of wall time; the rebuild runs with no rate
# limit (--max-rate 0) and no user I/O.  On its own tmpfs, the idle
# rebuild and the cp baseline each start right after SIZE GiB were written
# to the tmpfs and deleted, so both write into memory the guest used a
# moment ago: in a VM that hands free memory back to its host, the first
# write to a page costs up to twice as much, and how much of that a run
# met varied (docs/benchmarks.md, "the page-cache copy explained").  Everything is unmounted and
# removed on exit, also on failure or Ctrl-C.
set -euo pipefail

RAIDFS=""
SIZE=2
LEVEL=raid6
N=5
FMIB=1
BASE=""
OUT=""
CREATE_OPTS=${RAIDFS_CREATE_OPTS:-}
while [ $# -gt 0 ]; do
	case $1 in
	--raidfs) RAIDFS=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--level) LEVEL=$2; shift 2 ;;
	--members) N=$2; shift 2 ;;
	--file-mib) FMIB=$2; shift 2 ;;
	--dir) BASE=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--create-opts) CREATE_OPTS=$2; shift 2 ;;
	-h|--help) sed -n '2,23p' "$0"; exit 0 ;;
	*) echo "rebuild.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
done
[ "$FMIB" -ge 1 ] && [ "$FMIB" -le 64 ] && [ $(( (SIZE * 1024) % FMIB )) = 0 ] ||
	{ echo "rebuild.sh: --file-mib takes 1 to 64, a divisor of SIZE x 1024" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
[ -n "$RAIDFS" ] || RAIDFS=$here/raidfs
[ -x "$RAIDFS" ] || { echo "rebuild.sh: no raidfs binary at $RAIDFS (build first, or --raidfs)" >&2; exit 2; }

W=$(mktemp -d /tmp/raidfs-rbench.XXXXXX)
TMPFS=0
cleanup() {
	set +e
	mountpoint -q "$W/mnt" 2>/dev/null && { "$RAIDFS" unmount "$W/mnt" || fusermount3 -uz "$W/mnt"; }
	[ $TMPFS = 1 ] && umount -l "$W/t"
	rm -rf "$W"
}
trap cleanup EXIT INT TERM
if [ -z "$BASE" ]; then
	mkdir "$W/t"
	mount -t tmpfs -o size=$(( SIZE * 3 + 4 ))g tmpfs "$W/t"
	TMPFS=1
	BASE=$W/t
else
	BASE=$(mktemp -d "$BASE/raidfs-rbench.XXXXXX")
fi
mem=""
for i in $(seq 1 "$N"); do mkdir -p "$BASE/d$i"; mem="$mem $BASE/d$i"; done
mem=${mem# }
mkdir -p "$W/mnt"
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }
log=$W/daemon.log
warm() {
	[ $TMPFS = 1 ] || return 0
	head -c $(( SIZE << 30 )) /dev/zero > "$BASE/warm"
	rm "$BASE/warm"
}

# shellcheck disable=SC2086 # (options, split)
"$RAIDFS" create --level "$LEVEL" --name rbench $CREATE_OPTS $mem >/dev/null
"$RAIDFS" mount -o "log=$log" "${mem// /:}" "$W/mnt"
nfiles=$(( SIZE * 1024 / FMIB ))
mkdir "$W/mnt/data"
for d in $(seq 0 $(( (nfiles - 1) / 256 ))); do mkdir "$W/mnt/data/$d"; done
head -c $(( 64 << 20 )) /dev/urandom > "$W/rand"
for i in $(seq 1 $nfiles); do
	dd if="$W/rand" of="$W/mnt/data/$(( (i - 1) / 256 ))/f$i" bs=1M count=$FMIB skip=$(( i % (65 - FMIB) )) status=none
done
sync

# wait_log TEXT MEMBER: until a line of the daemon's log holds TEXT (the
# line the daemon writes once the member is online; without the path,
# which the daemon cuts at 120 characters), looked at every 20 ms; then
# 'raidfs status' must show MEMBER online.  No process is started per
# look: a status command, grep and sleep every 50 ms took about a third
# of the two cores from a rebuild of 0.3-0.4 s (docs/benchmarks.md, "The
# harness's own load").  A line saying the rebuild stopped or failed ends
# the run.
mkfifo "$W/tick"
exec {tick}<>"$W/tick"		# (read -t on it is a sleep without a process)
wait_log() {
	local fd line part="" looks=0
	exec {fd}<"$log"
	for (( ;; looks++ )); do
		while IFS= read -r -u "$fd" line; do
			line=$part$line part=""
			[[ $line == *"$1"* ]] && break 2
			if [[ $line == *"rebuild of member "*" stopped"* || $line == *"rebuild of member "*" failed"* ||
			      $line == *"was abandoned"* ]]; then
				echo "rebuild.sh: $line" >&2
				exit 1
			fi
		done
		part=$part$line		# (a line the daemon is still writing)
		[ $looks -lt 30000 ] || { echo "rebuild.sh: no '$1' in the daemon's log after 10 minutes" >&2; exit 1; }
		read -r -t 0.02 -u "$tick" line || true
	done
	exec {fd}<&-
	{ "$RAIDFS" status --json "$W/mnt" || true; } | grep -q "\"index\": $2, [^}]*\"state\": \"online\"" ||
		{ echo "rebuild.sh: the log says '$1' but member $2 is not online" >&2; exit 1; }
}
member_bytes=$(du -sb --exclude=.raidfs "$BASE/d2" | cut -f1)

# foreground read of 256 MiB (the first files): healthy, then during a
# rebuild at the default rates (min 100 MB/s while users do I/O, no max)
readfiles=()
for i in $(seq 1 $(( 256 / FMIB ))); do readfiles+=("$W/mnt/data/0/f$i"); done
readset() { cat "${readfiles[@]}" > /dev/null; }	# (one process: its start is not timed per file)
# the median of three reads of the set
readset3() {
	local k t0 t1
	for k in 1 2 3; do t0=$(now); readset; t1=$(now); sub "$t1" "$t0"; echo; done | sort -n | sed -n 2p
}
readset		# the first read after the writes is not typical
fg_healthy=$(readset3)
last=$(( N - 1 ))
"$RAIDFS" fail "$W/mnt" $last >/dev/null
mkdir "$BASE/newl"
"$RAIDFS" rebuild "$W/mnt" --min-rate 100 --max-rate 0 >/dev/null
"$RAIDFS" replace "$W/mnt" $last "$BASE/newl" >/dev/null
fg_rebuild=$(readset3)
fg_note="while member $last is rebuilt at the default rates"
# (status exits 1 while the array is degraded: pipefail must not see it)
{ "$RAIDFS" status --json "$W/mnt" || true; } | grep -q "\"index\": $last, [^}]*\"state\": \"rebuilding\"" ||
	fg_note="$fg_note (the rebuild ended before the third read: not all of it overlapped)"
wait_log "member $last rebuilt onto '" $last

# rebuild, idle, no limit
"$RAIDFS" rebuild "$W/mnt" --min-rate 0 --max-rate 0 >/dev/null
"$RAIDFS" fail "$W/mnt" 1 >/dev/null
mkdir "$BASE/new1"
warm
t0=$(now)
"$RAIDFS" replace "$W/mnt" 1 "$BASE/new1" >/dev/null
wait_log "member 1 rebuilt onto '" 1
t1=$(now)
rb=$(sub "$t1" "$t0")

# ceiling: the same rebuild's data movement alone, on the same member
# files, timed against the same member's bytes.  Both read pages read
# before (the rebuild of the last member during the foreground reads
# read them all; the ceiling also reads what the rebuild just read): a
# page's first read after its write costs more (docs/benchmarks.md,
# "Rebuild against its ceiling")
case $LEVEL in
raid5) K=$(( N - 1 )) ;;
raid6) K=$(( N - 2 )) ;;
*) K=0 ;;
esac
ct="" cbytes=""
if [ $K -gt 0 ] && cc -O2 -o "$W/ceiling" "$here/contrib/bench/rebuild-ceiling.c" -lisal -lpthread; then
	# members 0, 2 .. N-2 and the replacement of N-1: every one but 1
	srcs="$BASE/d1"
	for i in $(seq 3 $(( N - 1 ))); do srcs="$srcs $BASE/d$i"; done
	srcs="$srcs $BASE/newl"
	(cd "$BASE/d1" && find . -path './.raidfs*' -prune -o -type f -print0) > "$W/shards"
	mkdir "$BASE/ceil"
	warm
	read -r ct cbytes < <("$W/ceiling" "$BASE/ceil" "$W/shards" $(echo $srcs | cut -d' ' -f1-$K))
	rm -rf "$BASE/ceil"
fi

# baseline: copy one member's bytes
warm
t0=$(now)
cp -a "$BASE/d3" "$BASE/copy"
sync
t1=$(now)
cpt=$(sub "$t1" "$t0")
rm -rf "$BASE/copy"

# re-add after a few changes
"$RAIDFS" fail "$W/mnt" 2 >/dev/null
changed=0
nchange=$(( nfiles >= 200 ? nfiles / 100 : 1 ))	# about 1% of the files, at least one
for i in $(seq $(( nfiles / nchange )) $(( nfiles / nchange )) $nfiles); do
	dd if=/dev/urandom of="$W/mnt/data/$(( (i - 1) / 256 ))/f$i" bs=64K count=2 seek=3 conv=notrunc status=none
	changed=$((changed + 1))
done
t0=$(now)
"$RAIDFS" add "$W/mnt" "$BASE/d3" >/dev/null
wait_log "' re-added: " 2	# (the only re-add)
t1=$(now)
ra=$(sub "$t1" "$t0")
summary=$(grep -o "re-added: .*" "$log" | tail -n 1)
# the daemon's own durations (the script looks at the log every 20 ms)
rb_d=$(grep -o "member 1 rebuilt onto '.*' and verified ([0-9]* files, [0-9.]* s)" "$log" | grep -o "[0-9.]* s)" | tr -d ' s)')
ra_d=$(echo "$summary" | grep -o "([0-9.]* s)" | tr -d '( s)')

mb() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", a / 1048576 / b }'; }
report=$(cat <<EOF
### Rebuild and re-add, $(date -u +%Y-%m-%d), $LEVEL over $N members on $( [ $TMPFS = 1 ] && echo tmpfs || echo "$BASE" )

Data: $SIZE GiB in $nfiles files of $FMIB MiB; one member holds
$(mb "$member_bytes" 1) MiB.  Command: \`contrib/bench/rebuild.sh --size $SIZE --level $LEVEL --members $N --file-mib $FMIB${CREATE_OPTS:+ --create-opts '$CREATE_OPTS'}\`.

| what | time | rate |
|---|---|---|
| rebuild of member 1 (replace, verify pass included, no rate limit) | ${rb_d} s (${rb} s until its log line was seen) | $(mb "$member_bytes" "$rb_d") MiB/s of member data |
| baseline: cp -a of one member directory, same storage | ${cpt} s | $(mb "$member_bytes" "$cpt") MiB/s |
| ceiling: the rebuild's reads, XOR and writes alone (contrib/bench/rebuild-ceiling.c, $K sources) | ${ct:-not measured} s | $([ -n "$ct" ] && echo "$(mb "$member_bytes" "$ct") MiB/s of member data (it wrote $(mb "$cbytes" 1) MiB: every shard as long as the longest)" || echo "$LEVEL: only raid5 and raid6") |
| foreground: reading 256 MiB ($(( 256 / FMIB )) files), healthy (median of 3) | ${fg_healthy} s | $(mb 268435456 "$fg_healthy") MiB/s |
| foreground: the same $fg_note | ${fg_rebuild} s | $(mb 268435456 "$fg_rebuild") MiB/s |
| re-add of member 2 after rewriting 128 KiB in $changed files ($(awk -v c=$changed -v n=$nfiles 'BEGIN { printf "%.1f%%", 100 * c / n }') of the files) | ${ra_d} s (${ra} s until its log line was seen) | $summary |

Rebuild as a ratio of the copy baseline: $(awk -v a="$cpt" -v b="$rb_d" 'BEGIN { printf "%.2f", a / b }')x$([ -n "$ct" ] && awk -v r="$rb_d" -v t="$ct" 'BEGIN { printf ", of the ceiling: %.2fx", t / r }').
Re-add time as a share of the full rebuild: $(awk -v a="$ra_d" -v b="$rb_d" 'BEGIN { printf "%.1f", 100 * a / b }')%.
EOF
)
echo "$report"
[ -z "$OUT" ] || echo "$report" >> "$OUT"
