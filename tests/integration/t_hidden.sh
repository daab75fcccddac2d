#!/bin/bash
# t_hidden - a file unlinked (or renamed over) while open leaves nothing
# visible: its name is gone from `ls` at once, `rmdir` of its directory
# succeeds, the open descriptor still reads and writes the right bytes
# (also with a member failed), and its shards wait under each member's
# .raidfs/orphans/ until the last close - then nothing is left on the
# members.  A daemon killed while such a file is open leaves its orphan;
# the next mount removes it.  No ".fuse_hidden*" name ever appears.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

new_array hid raid5
orphans() { local m n=0; for m in $mem; do n=$((n + $(ls -A "$m/.raidfs/orphans" 2>/dev/null | wc -l))); done; echo $n; }
no_hidden() { ! ls -A "$mnt" "$@" $mem 2>/dev/null | grep -q fuse_hidden; }
# same bytes through the descriptor (fd 7) as in the reference file
fd_matches() { "$PY" -c '
import os, sys
ref = open(sys.argv[2], "rb").read()
sys.exit(0 if os.pread(int(sys.argv[1]), len(ref) + 1, 0) == ref else 1)' 7 "$1"; }
# write bytes $2 at offset $1 through fd 7, and into the reference $3
fd_write() { "$PY" -c '
import os, sys
os.pwrite(7, sys.argv[2].encode(), int(sys.argv[1]))
with open(sys.argv[3], "r+b") as f:
    f.seek(int(sys.argv[1])); f.write(sys.argv[2].encode())' "$1" "$2" "$3"; }

# unlink while open: gone at once, its directory removable, the bytes
# still there through the descriptor
mkdir "$mnt/d"
head -c 300000 /dev/urandom >"$C/ref/a"
cp "$C/ref/a" "$mnt/d/a"
exec 7<>"$mnt/d/a"
rm "$mnt/d/a"
[ -z "$(ls -A "$mnt/d")" ] || fail "the unlinked open file is still listed: $(ls -A "$mnt/d")"
for m in $mem; do [ -z "$(ls -A "$m/d")" ] || fail "member $m still lists a name in d: $(ls -A "$m/d")"; done
rmdir "$mnt/d" || fail "rmdir of the directory of an unlinked open file"
[ "$(orphans)" = 4 ] || fail "the unlinked open file is not kept aside on every member ($(orphans) orphans)"
fd_matches "$C/ref/a" || fail "the unlinked open file reads wrong bytes"
fd_write 100000 "written after the unlink" "$C/ref/a"
fd_matches "$C/ref/a" || fail "a write to the unlinked open file reads back wrong"
stat -L /proc/self/fd/7 >/dev/null 2>&1 || true
exec 7>&-
for i in $(seq 1 50); do [ "$(orphans)" = 0 ] && break; sleep 0.1; done
[ "$(orphans)" = 0 ] || fail "orphans left after the last close: $(orphans)"

# renamed over while open: the same
echo old >"$mnt/t"
echo new >"$mnt/n"
exec 7<"$mnt/t"
mv "$mnt/n" "$mnt/t"
[ "$(cat "$mnt/t")" = new ] || fail "rename over an open file: the new file is not at the name"
[ "$(head -c 3 <&7)" = old ] || fail "the open file renamed over reads wrong"
[ "$(ls -A "$mnt")" = t ] || fail "rename over an open file left names: $(ls -A "$mnt")"
exec 7<&-
for i in $(seq 1 50); do [ "$(orphans)" = 0 ] && break; sleep 0.1; done
[ "$(orphans)" = 0 ] || fail "orphans left after the renamed-over file's close: $(orphans)"
rm "$mnt/t"

# a hard link keeps the file: no orphan
echo linked >"$mnt/l1"
ln "$mnt/l1" "$mnt/l2"
exec 7<"$mnt/l1"
rm "$mnt/l1"
[ "$(orphans)" = 0 ] || fail "a file with another name was kept as an orphan"
[ "$(cat "$mnt/l2")" = linked ] || fail "the other link lost its bytes"
exec 7<&-
rm "$mnt/l2"

# with a member failed: the descriptor still serves the right bytes
head -c 500000 /dev/urandom >"$C/ref/b"
cp "$C/ref/b" "$mnt/b"
exec 7<>"$mnt/b"
rm "$mnt/b"
expect_rc 0 "$RAIDFS" fail "$mnt" 2
fd_matches "$C/ref/b" || fail "the unlinked open file reads wrong with a member failed"
fd_write 4096 "degraded write" "$C/ref/b"
fd_matches "$C/ref/b" || fail "a degraded write to the unlinked open file reads back wrong"
exec 7>&-
for i in $(seq 1 50); do [ "$(orphans)" -le 1 ] && break; sleep 0.1; done
m2=$(echo $mem | cut -d' ' -f3)
for m in $mem; do
	[ "$m" = "$m2" ] && continue
	[ -z "$(ls -A "$m/.raidfs/orphans" 2>/dev/null)" ] || fail "orphan left on $m after the close (degraded)"
done
expect_rc 0 "$RAIDFS" add "$mnt" "$m2"
wait_member "$mnt" 2 online || fail "member 2 did not come back: $("$RAIDFS" status "$mnt")"

# killed while open: the next mount removes the orphan
head -c 300000 /dev/urandom >"$mnt/big"
exec 7<"$mnt/big"
rm "$mnt/big"
[ "$(orphans)" -ge 3 ] || fail "no orphan for the unlinked open file before the kill ($(orphans))"
rfs_kill "$mnt" || fail "kill"
exec 7<&-
rfs_mount "$(join_members $mem)" "$mnt" || fail "mount after the kill"
[ "$(orphans)" = 0 ] || fail "orphans left after the mount that followed a kill: $(orphans)"
grep -q "unlinked while open when raidfs stopped" "$T/daemon.log" ||
	fail "no log line for the orphans removed at the mount"
[ -z "$(ls -A "$mnt")" ] || fail "names left after the remount: $(ls -A "$mnt")"
no_hidden || fail "a .fuse_hidden name appeared"
rfs_unmount_wait "$mnt" || fail "unmount"
expect_rc 0 "$RAIDFS" check "$(join_members $mem)"
log "ok"
