#!/bin/bash
# rebuild-cpu.sh RAIDFS LEVEL MEMBERS - ../2026-12-01-rebuild-ceiling/
# rebuild-only.sh, also printing the daemon's CPU time during the rebuild (user +
# system, in 1/100 s, from /proc/PID/stat).  One rebuild, nothing else: on a
# fresh tmpfs, create the array, write 2,048 files of 1 MiB, fail member
# 1, 'raidfs replace' it onto an empty directory with no rate limit, and
# print the daemon's own line ("... verified (2048 files, S s)") and the
# member's bytes.  Alternate two binaries in a loop to compare them:
#   for r in 1 2 3; do for b in old new; do ./rebuild-cpu.sh ./raidfs.$b raid6 4; done; done
# A fourth argument "warm" waits for the daemon's
# log line instead of running 'raidfs status' every 20 ms, and writes 2 GiB
# to a file on the same tmpfs and deletes it right before the rebuild, so the new
# member's pages are pages freed a moment ago: on this machine (a guest
# with free page reporting) the first write to a page handed back to the
# host costs about three times as much (../2026-12-01-first-touch/
# first-touch.sh), and how many of those a rebuild met varied by run.
# It also prints the time the host took from the guest's CPUs meanwhile
# (steal, /proc/stat): runs with much of it measure the host.
# WHAT=ceiling runs, instead of the rebuild and on the
# same kind of member files, its data movement alone
# (contrib/bench/rebuild-ceiling.c: the n - 1 (raid5) or n - 2 (raid6)
# other members' shards of every file read, XORed, one shard written, two
# threads), and prints its seconds: both start from member files written
# once through the mount and never read.  Alternate the two:
#   for m in ceiling rebuild; do WHAT=$m ./rebuild-cpu.sh RAIDFS raid5 8 warm; done
set -eu
R=$1 L=$2 N=$3 MODE=${4:-cold}
W=$(mktemp -d /tmp/raidfs-rbonly.XXXXXX)
mkdir -p "$W/t" "$W/mnt"
mount -t tmpfs -o size=10g tmpfs "$W/t"
cleanup() { mountpoint -q "$W/mnt" && "$R" unmount "$W/mnt"; umount -l "$W/t"; rm -rf "$W"; }
trap cleanup EXIT
mem=""
for i in $(seq 1 "$N"); do mkdir "$W/t/d$i"; mem="$mem $W/t/d$i"; done
"$R" create --level "$L" --name rbonly $mem >/dev/null
mem=${mem# }
"$R" mount -o "log=$W/log" "${mem// /:}" "$W/mnt"
mkdir "$W/mnt/data"
for d in 0 1 2 3 4 5 6 7; do mkdir "$W/mnt/data/$d"; done
head -c 64M /dev/urandom > "$W/rand"
for i in $(seq 1 2048); do
	dd if="$W/rand" of="$W/mnt/data/$(( (i - 1) / 256 ))/f$i" bs=1M count=1 skip=$((i % 64)) status=none
done
sync
"$R" rebuild "$W/mnt" --min-rate 0 --max-rate 0 >/dev/null
"$R" fail "$W/mnt" 1 >/dev/null
mkdir "$W/t/new1"
if [ "$MODE" = warm ]; then
	head -c 2048M /dev/zero > "$W/t/warm"
	rm "$W/t/warm"
fi
if [ "${WHAT:-rebuild}" = ceiling ]; then
	here=$(cd "$(dirname "$0")/../../.." && pwd)
	cc -O2 -o "$W/ceiling" "$here/contrib/bench/rebuild-ceiling.c" -lisal -lpthread
	(cd "$W/t/d1" && find . -path './.raidfs*' -prune -o -type f -print0) > "$W/list"
	src=""
	for i in $(seq 1 "$N"); do [ "$i" = 2 ] || src="$src $W/t/d$i"; done
	[ "$L" = raid6 ] && src=${src% *}
	s0=$(awk '/^cpu / {print $9}' /proc/stat)
	read -r t b < <("$W/ceiling" "$W/t/new1" "$W/list" $src)
	echo "ceiling $L/$N: $t s, $b bytes written, member bytes $(du -sb --exclude=.raidfs "$W/t/d2" | cut -f1), host steal $(( $(awk '/^cpu / {print $9}' /proc/stat) - s0 )) ticks"
	exit 0
fi
pid=$(pgrep -f "mount -o log=$W/log")
c0=$(awk '{print $14 + $15}' /proc/$pid/stat)
s0=$(awk '/^cpu / {print $9}' /proc/stat)
"$R" replace "$W/mnt" 1 "$W/t/new1" >/dev/null
if [ "$MODE" = cold ]; then
	while ! "$R" status --json "$W/mnt" | grep -q '"index": 1, [^}]*"state": "online"'; do sleep 0.02; done
else
	# (the status command 50 times a second cost the two cores about 5%)
	while ! grep -q "and verified (" "$W/log"; do sleep 0.02; done
fi
c1=$(awk '{print $14 + $15}' /proc/$pid/stat)
s1=$(awk '/^cpu / {print $9}' /proc/stat)
echo "cpu $((c1 - c0)) ticks; $MODE $L/$N $(grep -o "verified.*" "$W/log" | tail -n 1), member bytes $(du -sb --exclude=.raidfs "$W/t/d2" | cut -f1)$([ "$MODE" = cold ] || echo ", host steal $((s1 - s0)) ticks")"
