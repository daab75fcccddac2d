#!/bin/bash
# t_new_crash - new files written and never closed when the daemon is
# killed (kill -9): a new file's first metadata record is on its primary
# shard only until its last close, so the mount's resync must take it from
# there, or, with the primary's member missing too, make it from the
# dirty-log entry's id. Every acknowledged byte reads back (healthy), or
# every byte up to what the members in service hold (member 0 missing,
# forced: what was being written to it is lost, docs/crash-consistency.md).
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

CHUNK=65536
# new_files LEVEL DIR: an array with files "small" (4 KiB) and "big"
# (300,000 bytes) created and written through the mount and left open;
# the daemon killed; their references in DIR/ref-*
new_files() {
	local level=$1 C=$2 mnt=$2/mnt
	mkdir -p "$C"
	mem=$(make_members 4 "$(basename "$C")/d")
	members=$(join_members $mem)
	expect_rc 0 "$RAIDFS" create --level "$level" --chunk 64K --name nc $mem
	rfs_mount "$members" "$mnt" || fail "$level: mount"
	local pid
	pid=$(daemon_pid "$mnt")
	[ -n "$pid" ] || fail "$level: no daemon found for $mnt"
	head -c 4096 /dev/urandom > "$C/ref-small"
	head -c 300000 /dev/urandom > "$C/ref-big"
	exec 3>"$mnt/small" 4>"$mnt/big"
	cat "$C/ref-small" >&3
	cat "$C/ref-big" >&4
	kill -9 "$pid"
	exec 3>&- 4>&-
	wait_pid_gone "$pid" 10 || fail "$level: daemon did not die"
	fusermount3 -uz "$mnt" 2>/dev/null
	local d1=${mem%% *}
	[ "$(ls "$d1/.raidfs/dirty" | wc -l)" -ge 2 ] || fail "$level: the new files are not in the dirty log after kill -9"
}

# healthy: the mount resyncs both from the primary's record; every byte
for level in raid5 raid6; do
	C=$T/$level
	new_files "$level" "$C"
	rfs_mount "$members" "$C/mnt" || fail "$level: mount after the crash"
	for f in small big; do
		cmp -s "$C/ref-$f" "$C/mnt/$f" || fail "$level: new file '$f' differs after the crash's resync"
	done
	rfs_unmount_wait "$C/mnt" || fail "$level: unmount"
	expect_rc 0 "$RAIDFS" check "$members"
	log "ok: $level: new files left open at kill -9 read back whole, check clean"
done

# member 0 (the primary, the only one with the new files' records) gone:
# forced, the resync makes their records from their ids; the bytes the
# members in service hold read back (a tail only member 0 held is lost)
C=$T/gone
new_files raid6 "$C"
d1=${mem%% *}
hide_member "$d1"
mkdir "$d1"
rfs_mount "$members" "$C/mnt" -o force || fail "primary gone: mount -o force"
for f in small big; do
	size=$(stat -c %s "$C/mnt/$f") || fail "primary gone: no '$f'"
	want=$(stat -c %s "$C/ref-$f")
	[ "$size" -le "$want" ] && [ "$size" -ge $((want > CHUNK ? want - CHUNK : 0)) ] ||
		fail "primary gone: '$f' is $size bytes, not within a chunk below $want"
	cmp -s <(head -c "$size" "$C/ref-$f") "$C/mnt/$f" ||
		fail "primary gone: the $size bytes of '$f' differ from what was written"
	log "primary gone: '$f' $size of $want bytes, all right"
done
rfs_unmount_wait "$C/mnt" || fail "primary gone: unmount"
log "ok: new files left open at kill -9, their primary's member missing: records made from their ids, data right"
