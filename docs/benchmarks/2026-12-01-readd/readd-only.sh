#!/bin/bash
# readd-only.sh RAIDFS LEVEL MEMBERS ROUNDS - re-add after a 1% change, ROUNDS
# times on one array: on a fresh tmpfs, create, write 2,048 files of 1 MiB,
# then each round fail member 2, rewrite 128 KiB in every 100th file,
# 'raidfs add' the old directory and wait until it is online; print the
# daemon's own "re-added: ..." lines.  Alternate two binaries to compare:
#   for b in old new; do ./readd-only.sh ./raidfs.$b raid5 4 5; done
set -u
R=$1 L=$2 N=$3 ROUNDS=$4
W=$(mktemp -d /tmp/raidfs-readdonly.XXXXXX)
cleanup() { mountpoint -q "$W/mnt" && "$R" unmount "$W/mnt"; umount -l "$W/t"; rm -rf "$W"; }
trap cleanup EXIT
mkdir "$W/t" "$W/mnt"
mount -t tmpfs -o size=8g tmpfs "$W/t"
mem=""
for i in $(seq 1 "$N"); do mkdir "$W/t/d$i"; mem="$mem $W/t/d$i"; done
mem=${mem# }
"$R" create --level "$L" --name readd $mem >/dev/null
"$R" mount -o "log=$W/log" "${mem// /:}" "$W/mnt"
mkdir "$W/mnt/data"
for d in 0 1 2 3 4 5 6 7; do mkdir "$W/mnt/data/$d"; done
head -c $((64 << 20)) /dev/urandom > "$W/rand"
for i in $(seq 1 2048); do
	dd if="$W/rand" of="$W/mnt/data/$(( (i - 1) / 256 ))/f$i" bs=1M count=1 skip=$((i % 64)) status=none
done
online() { "$R" status --json "$W/mnt" | grep -q "\"index\": $1, [^}]*\"state\": \"online\""; }
for r in $(seq 1 "$ROUNDS"); do
	"$R" fail "$W/mnt" 2 >/dev/null
	for i in $(seq 100 100 2048); do
		dd if=/dev/urandom of="$W/mnt/data/$(( (i - 1) / 256 ))/f$i" bs=64K count=2 seek=3 conv=notrunc status=none
	done
	"$R" add "$W/mnt" "$W/t/d3" >/dev/null
	while ! online 2; do sleep 0.02; done
done
sleep 0.2
grep -o "re-added: .*" "$W/log"
