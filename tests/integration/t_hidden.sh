#!/bin/bash
# t_hidden - names libfuse hides open files under (".fuse_hidden" and 16
# hex digits) do not outlive their file.  libfuse 3.14 can leave one behind
# when a file's last release runs while an unlink is hiding it (its issue
# #746); raidfs notes a rename to such a name of a file open or closed a
# moment ago, and removes the name once nobody has the file open.  The
# race itself cannot be forced from outside, so the test makes the state
# it leaves: a libfuse-form name on a file closed a moment before.  A name
# of any other form, or given to a file closed long before, stays.  A
# hidden name whose file was open when the daemon was killed is removed
# by the next mount.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

# rename(2) as libfuse does it (mv asks for RENAME_NOREPLACE)
ren() { "$PY" -c 'import os, sys; os.rename(sys.argv[1], sys.argv[2])' "$1" "$2"; }

new_array hid raid5
mkdir -p "$mnt/d"
echo old > "$mnt/d/x"
sleep 3
ren "$mnt/d/x" "$mnt/d/.fuse_hidden0000abcd00000003"	# closed long before: the user's
echo orphan > "$mnt/d/a"
echo mine > "$mnt/d/b"
ren "$mnt/d/a" "$mnt/d/.fuse_hidden0000abcd00000001"
ren "$mnt/d/b" "$mnt/d/.fuse_hidden_mine"
# an open file under such a name is kept until its last close
exec 7<>"$mnt/d/c"
echo open >&7
ren "$mnt/d/c" "$mnt/d/.fuse_hidden0000abcd00000002"

gone() { [ ! -e "$mnt/d/$1" ] && for m in $mem; do [ ! -e "$m/d/$1" ] || return 1; done; }
for i in $(seq 1 100); do
	gone .fuse_hidden0000abcd00000001 && break
	sleep 0.1
done
gone .fuse_hidden0000abcd00000001 || fail "the left-behind hidden name is still there after 10 s"
grep -q "removed '/d/.fuse_hidden0000abcd00000001', a hidden name libfuse left behind" "$T/daemon.log" ||
	fail "no log line for the removal: $(grep hidden "$T/daemon.log")"
sleep 2
[ "$(cat "$mnt/d/.fuse_hidden_mine")" = mine ] || fail "a user's name starting with .fuse_hidden was touched"
[ "$(cat "$mnt/d/.fuse_hidden0000abcd00000003")" = old ] || fail "a file renamed long after its close was removed"
[ "$(cat "$mnt/d/.fuse_hidden0000abcd00000002")" = open ] || fail "the hidden name of an open file was removed"
exec 7>&-
for i in $(seq 1 100); do
	gone .fuse_hidden0000abcd00000002 && break
	sleep 0.1
done
gone .fuse_hidden0000abcd00000002 || fail "the hidden name stayed after its file's last close"
rm "$mnt/d/.fuse_hidden_mine" "$mnt/d/.fuse_hidden0000abcd00000003"
rmdir "$mnt/d" || fail "rmdir of the emptied directory"

# An open file unlinked: libfuse keeps it under a hidden name until its
# last close, which a daemon killed before never gets.  raidfs notes the
# name on the members (.raidfs/hidden) before the rename and drops the
# note with the name; the next mount removes a name still noted - and
# not a user's own file of that form.
notes() { local m n=0; for m in $mem; do n=$((n + $(ls -A "$m/.raidfs/hidden" 2>/dev/null | wc -l))); done; echo $n; }
mkdir "$mnt/e"
echo closed >"$mnt/e/c"
exec 7<"$mnt/e/c"
rm "$mnt/e/c"
[ "$(notes)" = 4 ] || fail "the hidden name of an unlinked open file is not noted on every member ($(notes) notes)"
exec 7<&-
for i in $(seq 1 100); do
	[ -z "$(ls -A "$mnt/e")" ] && [ "$(notes)" = 0 ] && break
	sleep 0.1
done
[ -z "$(ls -A "$mnt/e")" ] && [ "$(notes)" = 0 ] || fail "the hidden name or its note stayed after the last close: $(ls -A "$mnt/e"), $(notes) notes"
head -c 300000 /dev/urandom >"$mnt/e/big"
echo mine >"$mnt/e/.fuse_hidden00000000000000ff"	# the user's own
exec 7<"$mnt/e/big"
rm "$mnt/e/big"
hid=$(cd "$mnt/e" && ls -A | grep -v 00000000000000ff)
[[ $hid == .fuse_hidden* ]] || fail "no hidden name for the unlinked open file: '$hid'"
rfs_kill "$mnt" || fail "kill"
exec 7<&-
rfs_mount "$(join_members $mem)" "$mnt" || fail "mount after the kill"
gone2() { for m in $mem; do [ ! -e "$m/e/$hid" ] || return 1; done; }
# (the sweep removes the name from each member, then the notes: both
# within the 10 s)
for i in $(seq 1 100); do
	gone2 && [ "$(notes)" = 0 ] && break
	sleep 0.1
done
gone2 || fail "the hidden name $hid of the file open at the kill is still there 10 s after the mount"
grep -q "'/e/$hid' is the hidden name of a file open when raidfs stopped" "$T/daemon.log" ||
	fail "no log line for the removal after the restart"
[ "$(notes)" = 0 ] || fail "notes left after the sweep: $(notes)"
[ "$(cat "$mnt/e/.fuse_hidden00000000000000ff")" = mine ] || fail "the user's own file of the hidden form was touched"
rm "$mnt/e/.fuse_hidden00000000000000ff"
rmdir "$mnt/e" || fail "rmdir of the emptied directory after the restart"

# A name left behind, and the primary failed before the sweep's next
# look: another member serves the namespace (its inodes differ), and the
# name must still go.
echo orphan >"$mnt/o"
ren "$mnt/o" "$mnt/.fuse_hidden0000abcd00000009"
expect_rc 0 "$RAIDFS" fail "$mnt" 0
gone3() { [ ! -e "$mnt/.fuse_hidden0000abcd00000009" ] && for m in ${mem#* }; do [ ! -e "$m/.fuse_hidden0000abcd00000009" ] || return 1; done; }
for i in $(seq 1 100); do
	gone3 && break
	sleep 0.1
done
gone3 || fail "a hidden name left behind stayed after the primary failed"
expect_rc 0 "$RAIDFS" add "$mnt" "${mem%% *}"
wait_member "$mnt" 0 online || fail "member 0 did not come back: $("$RAIDFS" status "$mnt")"
# A note left stale must not remove another file: an open, unlinked
# file's directory copied (the copy of the hidden name is the user's own
# file), renamed away and replaced by the copy; the last close removes
# the name under its new path, so the note of the old path stays.  After
# a remount the user's file under the noted path survives (it is another
# file: another id).
mkdir "$mnt/s"
echo "precious user data" >"$mnt/s/f"
exec 7<"$mnt/s/f"
rm "$mnt/s/f"
hid=$(ls -A "$mnt/s")
cp -a "$mnt/s" "$mnt/s.copy"
mv "$mnt/s" "$mnt/s.old"
mv "$mnt/s.copy" "$mnt/s"
exec 7<&-
rfs_unmount_wait "$mnt" || fail "unmount"
rfs_mount "$(join_members $mem)" "$mnt" || fail "mount after the stale note"
sleep 3
[ "$(cat "$mnt/s/$hid" 2>/dev/null)" = "precious user data" ] ||
	fail "a stale hidden-name note removed the user's own file s/$hid"
[ "$(notes)" = 0 ] || fail "the stale note stayed: $(notes)"
rm -r "$mnt/s" "$mnt/s.old"
rfs_unmount_wait "$mnt" || fail "unmount"
expect_rc 0 "$RAIDFS" check "$(join_members $mem)"
log "ok"
