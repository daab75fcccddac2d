#!/bin/bash
# t_dirty_left - a file whose resync at mount fails (a member out of space
# here) stays in the dirty log: closing it after a write does not clear
# its entry, the next open tries the resync again, and once that succeeds
# the entry is gone and the offline check is clean.  Its short shard is
# read as it is (as the resync reads it), never rebuilt from redundancy
# that may lag behind the data.  A file whose shard was deleted by hand
# on a member is still resynced, and its cache log replayed, after a
# crash.  A cache log whose replay the members cannot take (a member out
# of space) is kept: the mount comes up offline and says why, and once
# there is room it writes the log and comes online with every
# acknowledged byte.  The arrays have no checksums: what is tested is the
# dirty log's own path (with checksums, the lost shard's chunks would also
# be found by their checksums, and the full member failed by them).
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
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --checksum none --name left $mem
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
# close leave the entry where it is.  (The write goes to a chunk whose
# stripe has its parity and that chunk on members 0-2: member 3, full,
# has no part in it - a member full in the middle of a stripe the others
# took is failed, and the array would be degraded.  Found from the
# shards: each file has its own rotation.  The write itself may fail
# with ENOSPC: room for it is reserved on every member first.)
c=$("$PY" - "$T/ref" "$1/f" "$2/f" "$3/f" <<'PYEOF'
import sys
ref = open(sys.argv[1], "rb").read()
chunks = {ref[i:i + 4096]: i // 4096 for i in range(0, len(ref), 4096)}
shards = [open(p, "rb").read() for p in sys.argv[2:]]
for s in range(len(shards[0]) // 4096):
    got = [chunks.get(b[s * 4096:(s + 1) * 4096]) for b in shards]
    if sum(g is None for g in got) == 1:	# the parity here, member 3 data
        print(next(g for g in got if g is not None))
        break
PYEOF
)
[ -n "$c" ] || fail "no stripe with its parity on members 0-2 found"
dd if=/dev/urandom of="$mnt/f" bs=4096 seek="$c" count=1 conv=notrunc status=none 2>/dev/null
grep -q "is full in the middle of a stripe" "$T/daemon.log" && fail "the write failed member 3 for its ENOSPC"

grep -q "file 'f': the mount could not resync it, nor can this open" "$T/daemon.log" ||
	fail "the open did not try the resync: $(tail -n 5 "$T/daemon.log")"
rfs_unmount_wait "$mnt" || fail "unmount after the write"	# (every release is in)
[ -e "$1/.raidfs/dirty/$entry" ] || fail "a close cleared the dirty log entry of a file whose resync failed"

# room again (after the mount, whose resync fails once more): the next
# open resyncs it and its close clears the entry
rfs_mount "$members" "$mnt" || fail "mount, still out of space"
[ "$(grep -c "resync of dirty file .* failed: .*; left in the dirty log" "$T/daemon.log")" = 2 ] ||
	fail "the second mount's resync did not fail as set up"
rm -f "$small/filler"
cat "$mnt/f" > "$T/got1"
grep -q "file 'f': resynced now" "$T/daemon.log" || fail "the open did not resync f: $(tail -n 5 "$T/daemon.log")"
grep -q "file 'f': its shard on member 3 .* rebuilt from the other" "$T/daemon.log" &&
	fail "f's short shard was rebuilt from redundancy that may lag"
cat "$mnt/f" > "$T/got2"
cmp -s "$T/got1" "$T/got2" || fail "f reads differently once resynced"
rfs_unmount_wait "$mnt" || fail "unmount"
[ -z "$(ls "$1/.raidfs/dirty")" ] || fail "the dirty log still holds $(ls "$1/.raidfs/dirty") after the resync"
expect_rc 0 "$RAIDFS" check "$members"
log "ok: a failed resync keeps the file in the dirty log until an open resyncs it"

# A file whose shard on a member was deleted by hand has no dirty-log mark
# there: a crash with its writes in the cache log (bbu=file, a power loss:
# the shared memory gone too) is still replayed at the next mount - the
# primary, marked last, says the marking was complete - and the missing
# shard is put back by the scrub afterwards.
C=$T/gone
mkdir -p "$C"
mem=$(make_members 4 "gone/d")
set -- $mem
members=$(join_members $mem)
mnt=$C/mnt
opts="write_policy=writeback,bbu=file:$C/cache.log,cache_size=64M,cache_age=600000"
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --checksum none --name gone $mem
rfs_mount "$members" "$mnt" -o "$opts" || fail "gone: mount"
head -c 100000 /dev/urandom > "$C/ref"
cp "$C/ref" "$mnt/f"
rfs_unmount_wait "$mnt" || fail "gone: unmount"
rm "$3/f"
rfs_mount "$members" "$mnt" -o "$opts" || fail "gone: mount again"
uuid=$("$RAIDFS" status --json "$mnt" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["uuid"])')
head -c 30000 /dev/urandom > "$C/new"
dd if="$C/new" of="$C/ref" bs=1 seek=20000 conv=notrunc status=none
dd if="$C/new" of="$mnt/f" bs=30000 seek=20000 oflag=seek_bytes conv=notrunc status=none || fail "gone: write"
[ "$("$RAIDFS" status --json "$mnt" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["cache"]["dirty_bytes"])')" -gt 0 ] ||
	fail "gone: nothing dirty in the cache before the kill"
rfs_kill "$mnt" || fail "gone: kill -9"
rm -f /dev/shm/raidfs-"$uuid"*
[ -z "$(ls "$3/.raidfs/dirty" 2>/dev/null)" ] || fail "gone: a dirty-log mark on the member without the shard"
[ -n "$(ls "$1/.raidfs/dirty")" ] || fail "gone: f is not in the dirty log"
rfs_mount "$members" "$mnt" -o "$opts" || fail "gone: mount after the kill"
grep -q "its shard is missing on 1 member in service: resynced without it" "$T/daemon.log" ||
	fail "gone: the mount did not say it resynced without the missing shard: $(grep -i dirty "$T/daemon.log" | tail -3)"
cmp -s "$C/ref" "$mnt/f" || fail "gone: the write acknowledged through the cache log is lost"
expect_rc 0 "$RAIDFS" scrub "$mnt" --repair
scrub_wait "$mnt" || fail "gone: the scrub did not end"
[ -e "$3/f" ] || fail "gone: the scrub did not put the shard back"
rfs_unmount_wait "$mnt" || fail "gone: last unmount"
expect_rc 0 "$RAIDFS" check "$members"
log "ok: a shard deleted by hand: its file's cache log is still replayed after a crash"

# The replay of the cache log hits a full member: the acknowledged writes
# must not be dropped with the log at the end of the mount's replay.
C=$T/norm
mkdir -p "$C"
mem=$(make_members 4 "norm/d")
set -- $mem
small=$4
mount -t tmpfs -o size=24m tmpfs "$small" || fail "norm: cannot mount a tmpfs"	# (write-back needs the cache and 8 MiB free)
mnt=$C/mnt
MOUNTS=("$mnt" "$small" "${MOUNTS[@]}")
members=$(join_members $mem)
# (long kernel cache timeouts: what a lookup said while the mount was
# offline must not outlive its coming online)
opts="write_policy=writeback,bbu=file:$C/cache.log,cache_size=2M,cache_age=600000,attr_timeout=30,entry_timeout=30"
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --checksum none --name norm $mem
rfs_mount "$members" "$mnt" -o "$opts" || fail "norm: mount"
head -c 300000 /dev/urandom > "$C/ref"
cp "$C/ref" "$mnt/f"
rfs_unmount_wait "$mnt" || fail "norm: unmount"
json_cache() { "$RAIDFS" status --json "$mnt" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["cache"][sys.argv[1]])' "$1"; }

# append BYTES through the log, then a power loss: member 3 loses what it
# had of the append (never synced: the log holds it) and the room the
# cache reserved for it, and the member fills up; the next mount must
# come up offline, saying why, and serve nothing
lost_append() {
	local sz uuid
	sz=$(stat -c %s "$small/f")
	rfs_mount "$members" "$mnt" -o "$opts" || fail "norm: mount"
	uuid=$("$RAIDFS" status --json "$mnt" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["uuid"])')
	head -c "$1" /dev/urandom > "$C/more"
	cat "$C/more" >> "$mnt/f" || fail "norm: append"
	[ "$(json_cache dirty_bytes)" -gt 0 ] || fail "norm: the append did not stay in the cache (write-back)"
	rfs_kill "$mnt" || fail "norm: kill -9"
	rm -f /dev/shm/raidfs-"$uuid"*
	truncate -s "$sz" "$small/f"
	dd if=/dev/zero of="$small/filler" bs=64k status=none 2>/dev/null
	rfs_mount "$members" "$mnt" -o "$opts" || fail "norm: the mount with a log the members cannot take failed"
	"$RAIDFS" status "$mnt" > "$C/status.out"
	grep -q "^action:  OFFLINE: the cache of the last run holds writes to 1 file that the members cannot take now.*discard --force" "$C/status.out" ||
		{ cat "$C/status.out" >&2; fail "norm: status does not say why the mount is offline and what to do"; }
	[ "$("$RAIDFS" status --json "$mnt" | "$PY" -c 'import json,sys; c=json.load(sys.stdin)["cache"]; print(c["offline"], "No space" in c["offline_reason"])')" = "True True" ] ||
		fail "norm: the JSON status does not carry the offline reason"
	cat "$mnt/f" > /dev/null 2>&1 && fail "norm: f was served without the writes the log holds for it"
}
wait_online() {
	for _ in $(seq 1 50); do
		[ "$(json_cache offline)" = False ] && return 0
		sleep 0.2
	done
	fail "norm: the mount did not come online: $(grep "cannot finish" "$T/daemon.log" | tail -n 1)"
}

# room again: the log is written, every appended byte is there
lost_append 600000
cat "$C/more" >> "$C/ref"
rm -f "$small/filler"
wait_online
cmp -s "$C/ref" "$mnt/f" || fail "norm: the appended bytes acknowledged through the cache log are lost"
rfs_unmount_wait "$mnt" || fail "norm: unmount"
expect_rc 0 "$RAIDFS" check "$members"
log "ok: a log the members cannot take yet keeps the mount offline, then is written in full"

# no room, and the administrator gives the writes up: discard (with
# --force only) brings the mount online without them (what the append
# reached is lost, what was there before is intact), consistent once
# there is room for its resync
lost_append 200000
expect_rc 1 "$RAIDFS" cache "$mnt" discard
[ "$(json_cache offline)" = True ] || fail "norm: a discard without --force changed something"
expect_rc 0 "$RAIDFS" cache "$mnt" discard --force
wait_online
rm -f "$small/filler"
cmp -s -n "$(stat -c %s "$C/ref")" "$C/ref" "$mnt/f" || fail "norm: after the discard, f's bytes before the discarded append differ"
rfs_unmount_wait "$mnt" || fail "norm: last unmount"
expect_rc 0 "$RAIDFS" check "$members"
log "ok: a discarded log that the members could not take: online without it, check clean"
exit 0
