#!/bin/bash
# ceiling-modes.sh K FILES SIZE [ROUNDS] - set up K source directories of
# FILES files of SIZE bytes on a fresh tmpfs, then run the ceiling program
# (../2026-12-01-rebuild-ceiling/ceiling.c) with
# two threads in each mode ($MODES, commas for spaces; default: plain,
# no read-back, mapped sources, mapped sources and read-back, mapped
# sources without read-back), each right after 2 GiB were written to the
# tmpfs and deleted (warm memory), printing the host's steal ticks.
# raid5/4, 1 MiB files: 3 2048 360448; raid5/8: 7 2048 155648.
set -eu
K=$1 NF=$2 S=$3 R=${4:-2}
c=$(cd "$(dirname "$0")/../2026-12-01-rebuild-ceiling" && pwd)
cc -O2 -o "$c/ceiling" "$c/ceiling.c" -lpthread -lisal
W=$(mktemp -d /tmp/raidfs-ceiling.XXXXXX)
mount -t tmpfs -o size=10g tmpfs "$W"
trap 'umount -l "$W"; rmdir "$W"' EXIT
head -c 64M /dev/urandom > "$W/rand"
for i in $(seq 0 $((K - 1))); do
	mkdir "$W/s$i"
	for f in $(seq 0 $((NF - 1))); do
		dd if="$W/rand" of="$W/s$i/f$f" bs="$S" count=1 skip=$(( (f * 7 + i) % 100 )) status=none
	done
done
rm "$W/rand"
mkdir "$W/n"
for r in $(seq 1 "$R"); do
	for m in ${MODES:-MM=0 MM=0,NOV=1 MM=1 MM=2 MM=1,NOV=1}; do
		rm -f "$W"/n/*
		head -c 2048M /dev/zero > "$W/warm"
		rm "$W/warm"
		s0=$(awk '/^cpu / {print $9}' /proc/stat)
		out=$(env ${m//,/ } "$c/ceiling" "$W" "$K" "$NF" "$S" 2)
		echo "$m: $out, host steal $(( $(awk '/^cpu / {print $9}' /proc/stat) - s0 )) ticks"
	done
done
