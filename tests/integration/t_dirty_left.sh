#!/bin/bash
# t_dirty_left - a file whose resync at mount fails (a member out of space
# here) stays in the dirty log: closing it after a write does not clear
# its entry, the next open tries the resync again, and once that succeeds
# the entry is gone and the offline check is clean.  Its short shard is
# read as it is (as the resync reads it), never rebuilt from redundancy
# that may lag behind the data.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

mem=$(make_members 4)
set -- $mem
small=$4
mount -t tmpfs -o size=4m tmpfs "$small" || skip "cannot mount a tmpfs (needs root)"
mnt=$T/mnt
# the FUSE mount goes first in the cleanup, before the tmpfs under it
MOUNTS=("$mnt" "$small")
members=$(join_members $mem)
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name left $mem
rfs_mount "$members" "$mnt" || fail "mount"

# a file being written when the daemon dies: in the dirty log
head -c $((3 << 20)) /dev/urandom > "$T/ref"
exec 3>"$mnt/f"
cat "$T/ref" >&3
"$PY" -c 'import os; os.fsync(3)' || fail "fsync through the mount"
rfs_kill "$mnt" || fail "kill -9"
exec 3>&-
[ -n "$(ls "$1/.raidfs/dirty")" ] || fail "f is not in the dirty log after kill -9 during its writes"

# member 3's shard lost its data (its filesystem came back without it),
# and that filesystem is full: the resync, which writes member 3's parity
# chunks, cannot
truncate -s 0 "$small/f"
dd if=/dev/zero of="$small/filler" bs=64k status=none 2>/dev/null
rfs_mount "$members" "$mnt" || fail "mount after the crash"
grep -q "resync of dirty file .* failed: .*; left in the dirty log" "$T/daemon.log" ||
	fail "the resync did not fail as set up: $(grep -i dirty "$T/daemon.log")"
entry=$(ls "$1/.raidfs/dirty")
[ -n "$entry" ] || fail "the dirty log is empty although the resync failed"

# an open, still out of space: the resync fails again; a write and the
# close leave the entry where it is
dd if=/dev/urandom of="$mnt/f" bs=4096 count=1 conv=notrunc status=none 2>/dev/null
grep -q "file 'f': the mount could not resync it, nor can this open" "$T/daemon.log" ||
	fail "the open did not try the resync: $(tail -n 5 "$T/daemon.log")"
sleep 1	# (the release follows the close)
[ -e "$1/.raidfs/dirty/$entry" ] || fail "a close cleared the dirty log entry of a file whose resync failed"

# room again: the next open resyncs it and its close clears the entry
rm -f "$small/filler"
cat "$mnt/f" > "$T/got1"
grep -q "file 'f': resynced now" "$T/daemon.log" || fail "the open did not resync f: $(tail -n 5 "$T/daemon.log")"
grep -q "file 'f': its shard on member 3 .* rebuilt from the other" "$T/daemon.log" &&
	fail "f's short shard was rebuilt from redundancy that may lag"
sleep 1
cat "$mnt/f" > "$T/got2"
cmp -s "$T/got1" "$T/got2" || fail "f reads differently once resynced"
rfs_unmount_wait "$mnt" || fail "unmount"
[ -z "$(ls "$1/.raidfs/dirty")" ] || fail "the dirty log still holds $(ls "$1/.raidfs/dirty") after the resync"
expect_rc 0 "$RAIDFS" check "$members"
log "ok: a failed resync keeps the file in the dirty log until an open resyncs it"
exit 0
