#!/bin/bash
# degraded_writehole.sh - raid5 degraded (member 1 failed), write-back cache
# with bbu=file (or BBU=shm): small overwrites are acknowledged, the destage
# is slowed down by latency on one member, kill -9 in the middle of the
# destage, remount with -o force.  Every byte of every file must be what
# was acknowledged (the log/battery holds every acknowledged write).
# Prints PASS or FAIL (tries up to ATTEMPTS=6 times: the kill must land mid-destage).  Env: BBU=file|shm (file), LEVEL (raid5), WIDTH (4),
# LAT (member to slow, 2), KEEP=1 keeps the scratch dir.
set -u
if [ -z "${INNER:-}" ]; then
	# up to ATTEMPTS (6) tries with different kill delays: FAIL at the first
	for a in $(seq 1 "${ATTEMPTS:-6}"); do
		out=$(INNER=1 KILLDELAY=${KILLDELAY:-$(( (a - 1) % 5 + 1 ))} SEED=${SEED:-$((100 + a))} "$0" 2>&1)
		echo "--- attempt $a:"; echo "$out" | grep -v '^20[0-9][0-9]-'
		echo "$out" | grep -q '^FAIL' && { echo "FAIL (attempt $a)"; exit 1; }
	done
	echo PASS; exit 0
fi
RAIDFS=${RAIDFS:-$(cd "$(dirname "$0")/../.." && pwd)/raidfs}
BBU=${BBU:-file}
LEVEL=${LEVEL:-raid5}
WIDTH=${WIDTH:-4}
LAT=${LAT:-2}
FAILM=${FAILM:-1}
B=${TMPDIR:-/tmp}/raidfs-repro-dwh.$$
mkdir -p "$B"
mount -t tmpfs -o size=512m tmpfs "$B" || { echo "FAIL: cannot mount tmpfs"; exit 2; }
MNT=$B/mnt
mkdir -p "$MNT" "$B/ref"
dpid() { pgrep -f -- "raidfs.* $MNT\$" | head -n 1; }
cleanup() {
	if awk -v p="$MNT" '$2==p{f=1}END{exit !f}' /proc/mounts; then
		"$RAIDFS" unmount "$MNT" >/dev/null 2>&1 || fusermount3 -uz "$MNT" 2>/dev/null
	fi
	local p; p=$(dpid); [ -n "$p" ] && kill -9 "$p" 2>/dev/null
	sleep 0.3
	[ "${KEEP:-0}" = 1 ] && { cp -a "$B" ${TMPDIR:-/tmp}/raidfs-repro-kept-dwh.$$ 2>/dev/null; echo "kept in ${TMPDIR:-/tmp}/raidfs-repro-kept-dwh.$$"; }
	umount "$B" 2>/dev/null || umount -l "$B"
	rmdir "$B"
}
trap cleanup EXIT
mem=""; for i in $(seq 1 "$WIDTH"); do mkdir -p "$B/d$i"; mem="$mem $B/d$i"; done
members=$(echo $mem | tr ' ' ':')
case $BBU in
file) bbu="bbu=file:$B/cache.log" ;;
*) bbu="bbu=shm" ;;
esac
OPTS="write_policy=writeback,$bbu,cache_size=64M,cache_age=600000,log=$B/daemon.log"
"$RAIDFS" create --level "$LEVEL" --chunk 16K $mem >/dev/null || exit 2
"$RAIDFS" mount -o "$OPTS" "$members" "$MNT" || exit 2
for i in $(seq 1 12); do
	head -c $((100000 + i * 7919)) /dev/urandom >"$B/ref/f$i"
	cp "$B/ref/f$i" "$MNT/f$i"
done
"$RAIDFS" unmount "$MNT" >/dev/null || exit 2
sleep 0.3
cp -a "$B/ref" "$B/orig"
"$RAIDFS" mount -o "$OPTS" "$members" "$MNT" || exit 2
"$RAIDFS" fail "$MNT" "$FAILM" >/dev/null || { echo "FAIL: raidfs fail"; exit 2; }
"$RAIDFS" status "$MNT" | grep -q degraded || { echo "FAIL: not degraded"; exit 2; }
RANDOM=${SEED:-42}
for k in $(seq 1 60); do
	i=$((RANDOM % 12 + 1))
	off=$((RANDOM * 3 % 100000))
	n=$((RANDOM % 20000 + 1))
	head -c "$n" /dev/urandom >"$B/chunk"
	echo "f$i $off $n" >>"$B/writes.txt"
	dd if="$B/chunk" of="$B/ref/f$i" bs=1 seek="$off" conv=notrunc 2>/dev/null
	dd if="$B/chunk" of="$MNT/f$i" bs=64K seek="$off" oflag=seek_bytes conv=notrunc 2>/dev/null || { echo "FAIL: write failed"; exit 1; }
done
# every write above was acknowledged; the mount serves them
for i in $(seq 1 12); do cmp -s "$B/ref/f$i" "$MNT/f$i" || { echo "FAIL: f$i differs before the crash"; exit 1; }; done
jc() { "$RAIDFS" status --json "$MNT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cache"][sys.argv[1]])' "$1"; }
d1=$(jc dirty_bytes)
"$RAIDFS" inject "$MNT" "$LAT" latency 200 >/dev/null || { echo "FAIL: inject"; exit 2; }
"$RAIDFS" cache "$MNT" flush >/dev/null 2>&1 &
for _ in $(seq 1 100); do
	[ "$(jc destaged_bytes)" -gt 0 ] && break
	sleep 0.1
done
sleep 0.${KILLDELAY:-3}
d2=$(jc dirty_bytes)
p=$(dpid); kill -9 "$p"; while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
fusermount3 -uz "$MNT" 2>/dev/null
wait
echo "dirty before flush: $d1, at kill: $d2"
"$RAIDFS" mount -o "$OPTS,force" "$members" "$MNT" >"$B/mount.out" 2>&1 || { cat "$B/mount.out"; echo "FAIL: remount"; exit 1; }
cat "$B/mount.out"
bad=0
for i in $(seq 1 12); do
	if ! cmp "$B/ref/f$i" "$MNT/f$i" >"$B/cmp.out" 2>&1; then
		bad=$((bad + 1))
		nd=$(cmp -l "$B/ref/f$i" "$MNT/f$i" 2>/dev/null | wc -l)
		first=$(cmp -l "$B/ref/f$i" "$MNT/f$i" 2>/dev/null | head -n1 | awk '{print $1-1}')
		last=$(cmp -l "$B/ref/f$i" "$MNT/f$i" 2>/dev/null | tail -n1 | awk '{print $1-1}')
		echo "f$i: $nd bytes differ, offsets $first..$last"
		python3 - "$B/orig/f$i" "$B/ref/f$i" "$MNT/f$i" "$B/writes.txt" f$i <<'PYEOF'
import sys
o, r, g = (open(x, "rb").read() for x in sys.argv[1:4])
d = [k for k in range(min(len(r), len(g))) if r[k] != g[k]]
eqold = sum(1 for k in d if k < len(o) and g[k] == o[k])
zero = sum(1 for k in d if g[k] == 0)
ws = [tuple(map(int, l.split()[1:])) for l in open(sys.argv[4]) if l.split()[0] == sys.argv[5]]
inw = sum(1 for k in d if any(a <= k < a + n for a, n in ws))
print("   of the %d wrong bytes: %d equal the file's content before the overwrites, %d are zero, %d lie in a range overwritten before the crash" % (len(d), eqold, zero, inw))
print("   overwrites of this file (offset length):", ws)
PYEOF
	fi
done
grep -i "resync\|replay\|force\|cache log" "$B/daemon.log" | tail -n 5
if [ "$bad" -gt 0 ]; then
	echo "FAIL: $bad of 12 files differ from what was acknowledged after kill -9 + remount (-o force) of a degraded $LEVEL with bbu=$BBU"
	exit 1
fi
echo "PASS"
