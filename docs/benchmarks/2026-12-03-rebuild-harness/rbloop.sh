#!/bin/bash
# rbloop.sh LEVEL N ROUNDS BIN... - one array of 2,048 files of 1 MiB on tmpfs, then
# rebuilds of member 1 alternating the binaries, each onto a fresh directory
# (after 2 GiB written to and deleted from the tmpfs: fresh pages cost more
# on this VM); prints the daemon's own time and the verify pass's share.
# FLAT=1 puts the files in the root directory instead of data/0..7.
set -eu
L=$1 N=$2 ROUNDS=$3; shift 3
W=$(mktemp -d /tmp/rbloop.XXXXXX)
mkdir -p "$W/t" "$W/mnt"
mount -t tmpfs -o size=12g tmpfs "$W/t"
R=$1
cleanup() { mountpoint -q "$W/mnt" && "$R" unmount "$W/mnt"; umount -l "$W/t"; rm -rf "$W"; }
trap cleanup EXIT
m=(); for i in $(seq 1 "$N"); do mkdir "$W/t/d$i"; m+=("$W/t/d$i"); done
"$R" create --level "$L" --name loop "${m[@]}" >/dev/null
members() { local IFS=:; echo "${m[*]}"; }
"$R" mount -o "log=$W/log0" "$(members)" "$W/mnt"
mkdir "$W/mnt/data"; for d in 0 1 2 3 4 5 6 7; do mkdir "$W/mnt/data/$d"; done
head -c 64M /dev/urandom > "$W/rand"
for i in $(seq 1 2048); do if [ -n "${FLAT:-}" ]; then o="$W/mnt/f$i"; else o="$W/mnt/data/$(( (i - 1) / 256 ))/f$i"; fi; dd if="$W/rand" of="$o" bs=1M count=1 skip=$((i % 64)) status=none; done
sync; cat "$W"/t/d*/data/*/* "$W"/t/d*/f* > /dev/null 2>&1 || true
"$R" unmount "$W/mnt"
mkfifo "$W/tick"; exec {tick}<>"$W/tick"
k=0
for r in $(seq 1 "$ROUNDS"); do
	for b in "$@"; do
		k=$((k + 1)); R=$b
		"$R" mount -o "log=$W/log$k" "$(members)" "$W/mnt"
		"$R" rebuild "$W/mnt" --min-rate 0 --max-rate 0 >/dev/null
		"$R" fail "$W/mnt" 1 >/dev/null
		new="$W/t/n$k"; mkdir "$new"
		head -c 2048M /dev/zero > "$W/t/warm"; rm "$W/t/warm"
		"$R" replace "$W/mnt" 1 "$new" >/dev/null
		exec {fd}<"$W/log$k"; part=""
		while :; do
			found=0
			while IFS= read -r -u $fd line; do line=$part$line; part=""; [[ $line == *"and verified ("* ]] && { found=1; break; }; done
			[ $found = 1 ] && break
			part=$part$line; read -r -t 0.05 -u $tick x || true
		done
		exec {fd}<&-
		echo "$(basename $b) ${line##*verified } $(grep -o "comparing ([0-9.]* s; the first pass took [0-9.]* s" $W/log$k | tr -d "(;" | cut -d" " -f2,7)"
		"$R" unmount "$W/mnt"
		rm -rf "${m[1]}"; m[1]=$new
	done
done
