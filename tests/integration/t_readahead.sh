#!/bin/bash
# t_readahead - a sequential reader makes the members read each byte once.
# With read-ahead on (read_policy=adaptive, the default), the cache's
# read-ahead thread reads the next stripes into clean lines while the
# reader goes on; a reader that reaches a line the read-ahead is reading
# in waits for it, and the read-ahead leaves alone a line a reader is
# filling.  Before, both read the same stripes from the members whenever
# they met (a dd of 1 MiB O_DIRECT blocks made the members read 1.2-1.6
# times the file).  The daemon's own count of bytes read (/proc/PID/io
# rchar) over a 512 MiB sequential read must stay under 1.1 times the
# file, with checksums and without; and the bytes read must be the file's.
. "$(dirname "$0")/lib.sh"
need_fuse

for sums in crc32c none; do
	C=$T/$sums
	mkdir -p "$C"
	mem=$(make_members 4 "$sums/d")
	mnt=$C/mnt
	expect_rc 0 "$RAIDFS" create --level raid5 --checksum "$sums" --name "ra-$sums" $mem
	rfs_mount "$(join_members $mem)" "$mnt" || fail "$sums: mount"
	head -c $((512 << 20)) /dev/urandom >"$C/ref"
	dd if="$C/ref" of="$mnt/f" bs=1M oflag=direct status=none || fail "$sums: write"
	pid=$(daemon_pid "$mnt")
	r0=$(awk '/^rchar/ { print $2 }' "/proc/$pid/io")
	dd if="$mnt/f" of=/dev/null bs=1M iflag=direct status=none || fail "$sums: read"
	r1=$(awk '/^rchar/ { print $2 }' "/proc/$pid/io")
	cmp -s "$C/ref" "$mnt/f" || fail "$sums: the file read back differs"
	ratio=$(awk -v a="$r0" -v b="$r1" 'BEGIN { printf "%.2f", (b - a) / (512 * 1048576) }')
	awk -v r="$ratio" 'BEGIN { exit !(r < 1.1) }' ||
		fail "$sums: the members read ${ratio}x the file for one sequential read (read-ahead and reader read the same stripes)"
	rfs_unmount_wait "$mnt" || fail "$sums: unmount"
	rm -f "$C/ref"
	log "ok: $sums: one sequential read of 512 MiB read ${ratio}x the file from the members"
done
exit 0
