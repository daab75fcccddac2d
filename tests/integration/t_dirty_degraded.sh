#!/bin/bash
# t_dirty_degraded - an array that is both dirty (the daemon was killed
# during writes) and degraded refuses to mount without -o force, and says
# why; with the member back it mounts, resyncs and checks clean.
. "$(dirname "$0")/lib.sh"
need_fuse

mem=$(make_members 4)
members=$(join_members $mem)
mnt=$T/mnt
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name dd $mem
rfs_mount "$members" "$mnt" || fail "mount"
pid=$(daemon_pid "$mnt")
[ -n "$pid" ] || fail "no daemon found for $mnt"

# keep a file open for writing: 300000 bytes fsynced, more written after
# the fsync; then kill the daemon
head -c 300000 /dev/urandom > "$T/ref"
head -c 1000 /dev/urandom > "$T/ref-closed"
cp "$T/ref-closed" "$mnt/closed-file"
exec 3>"$mnt/open-file"
cat "$T/ref" >&3
"$PY" -c 'import os; os.fsync(3)' || fail "fsync through the mount"
head -c 70000 /dev/urandom >&3
kill -9 "$pid"
exec 3>&-
wait_pid_gone "$pid" 10 || fail "daemon did not die"
fusermount3 -uz "$mnt" 2>/dev/null

[ -n "$(ls "$T/d1/.raidfs/dirty")" ] || fail "no file in the dirty log after kill -9 during writes"
expect_rc 1 "$RAIDFS" check "$members"
grep -q "dirty log" "$OUT" || fail "check does not mention the dirty log: $(cat "$OUT")"

hide_member "$T/d3"
expect_rc 1 "$RAIDFS" mount -o "log=$T/daemon.log" "$members" "$mnt"
grep -q "dirty" "$ERR" && grep -q "degraded" "$ERR" && grep -q -- "-o force" "$ERR" ||
	fail "refusal does not explain dirty+degraded and -o force: $(cat "$ERR")"
is_mounted "$mnt" && fail "mounted although dirty and degraded"
log "ok: dirty and degraded mount refused"

# -o force mounts (degraded); nothing written, so the member is not stale
rfs_mount "$members" "$mnt" -o force || fail "mount -o force"
expect_rc 1 "$RAIDFS" status "$mnt"
cmp -s "$T/ref-closed" "$mnt/closed-file" || fail "closed-file differs (degraded read)"
cmp -s "$T/ref" <(head -c 300000 "$mnt/open-file") || fail "fsynced bytes of open-file differ"
rfs_unmount_wait "$mnt" || fail "unmount"
log "ok: -o force mounts degraded, fsynced data intact"

# The forced resync changed files without member 3: when it comes back it
# is stale (its superblock's event counter is behind) and is not used.
unhide_member "$T/d3"
rfs_mount "$members" "$mnt" || fail "mount with the stale member back"
expect_rc 1 "$RAIDFS" status "$mnt"
grep -q "stale" "$OUT" || fail "status does not call member 2 stale: $(cat "$OUT")"
cmp -s "$T/ref-closed" "$mnt/closed-file" || fail "closed-file differs"
cmp -s "$T/ref" <(head -c 300000 "$mnt/open-file") || fail "fsynced bytes of open-file differ"
rfs_unmount_wait "$mnt" || fail "unmount"
expect_rc 1 "$RAIDFS" check "$members"
grep -q "member 2 .* stale" "$OUT" || fail "check does not report the stale member: $(cat "$OUT")"
grep -q "redundancy does not match" "$OUT" && fail "parity inconsistent after forced resync: $(cat "$OUT")"
[ -z "$(ls "$T/d1/.raidfs/dirty")" ] || fail "dirty log not empty after resync"
log "ok: the absent member is stale after a forced resync; data and parity consistent"
exit 0
