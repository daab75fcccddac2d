#!/bin/bash
# ceiling.sh K FILES SIZE - set up K source directories of FILES random
# files of SIZE bytes on a fresh tmpfs and run ceiling with 1 and 2
# threads.  raid6/4, 1 MiB files: 2 2048 524288; raid5/4: 3 2048 360448;
# raid5/8: 7 2048 155648 (the shards of one member, and what rebuilds it).
set -eu
K=$1 NF=$2 S=$3
here=$(cd "$(dirname "$0")" && pwd)
cc -O2 -o "$here/ceiling" "$here/ceiling.c" -lpthread -lisal
W=$(mktemp -d /tmp/raidfs-ceiling.XXXXXX)
mount -t tmpfs -o size=8g tmpfs "$W"
trap 'umount -l "$W"; rmdir "$W"' EXIT
for i in $(seq 0 $((K - 1))); do
	mkdir "$W/s$i"
	for f in $(seq 0 $((NF - 1))); do head -c "$S" /dev/urandom > "$W/s$i/f$f"; done
done
mkdir "$W/n"
for t in 1 2; do rm -f "$W"/n/*; "$here/ceiling" "$W" "$K" "$NF" "$S" "$t"; done
