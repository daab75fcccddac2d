#!/bin/bash
# scrub.sh RAIDFS [LEVEL] [MEMBERS] - how fast the online scrub compares an
# idle array, against reading the same files through the mount and the
# offline 'raidfs check' of the same members, in the same run.  On a fresh
# tmpfs: create the array, write 1 GiB as 1,024 files of 1 MiB, then
#   read   cat every file to /dev/null through the mount (after dropping
#          the kernel's page cache of the mount)
#   scrub  'raidfs scrub MNT', until status says it finished (its own
#          elapsed seconds from the log line)
#   check  unmount, 'raidfs check' of the member directories
# Each printed as seconds and MiB/s of file data, and the scrub as a ratio
# of the read.  Everything is unmounted and removed on exit.
set -eu
R=$1 L=${2:-raid5} N=${3:-4}
W=$(mktemp -d /tmp/raidfs-scrubbench.XXXXXX)
mkdir -p "$W/t" "$W/mnt"
mount -t tmpfs -o size=6g tmpfs "$W/t"
cleanup() { mountpoint -q "$W/mnt" && "$R" unmount "$W/mnt"; umount -l "$W/t"; rm -rf "$W"; }
trap cleanup EXIT
mem=""
for i in $(seq 1 "$N"); do mkdir "$W/t/d$i"; mem="$mem $W/t/d$i"; done
"$R" create --level "$L" --name sbench $mem >/dev/null
mem=${mem# }
"$R" mount -o "log=$W/log" "${mem// /:}" "$W/mnt"
head -c 64M /dev/urandom > "$W/rand"
for d in 0 1 2 3; do mkdir "$W/mnt/$d"; done
for i in $(seq 1 1024); do
	dd if="$W/rand" of="$W/mnt/$(( i % 4 ))/f$i" bs=1M count=1 skip=$((i % 64)) status=none
done
sync
now() { date +%s.%N; }
echo 3 > /proc/sys/vm/drop_caches
t0=$(now); cat "$W/mnt"/*/* > /dev/null; t1=$(now)
read_s=$(echo "$t1 - $t0" | bc)
"$R" scrub "$W/mnt" > /dev/null
while ! grep -q "scrub finished" "$W/log"; do sleep 0.05; done
scrub_s=$(grep -o "scrub finished: .* compared in [0-9.]* s" "$W/log" | tail -n 1 | grep -o "in [0-9.]* s" | grep -o "[0-9.]*")
"$R" unmount "$W/mnt"
t0=$(now); "$R" check "${mem// /:}" > /dev/null; t1=$(now)
check_s=$(echo "$t1 - $t0" | bc)
mib() { echo "scale=0; 1024 / $1" | bc; }
echo "$L/$N, 1 GiB in 1,024 files: read through the mount $read_s s ($(mib "$read_s") MiB/s), scrub $scrub_s s ($(mib "$scrub_s") MiB/s, $(echo "scale=2; $read_s / $scrub_s" | bc)x the read's speed), offline check $check_s s ($(mib "$check_s") MiB/s)"
