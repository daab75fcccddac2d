#!/bin/bash
# t_hidden - names libfuse hides open files under (".fuse_hidden" and 16
# hex digits) do not outlive their file.  libfuse 3.14 can leave one behind
# when a file's last release runs while an unlink is hiding it (its issue
# #746); raidfs notes a rename to such a name of a file open or closed a
# moment ago, and removes the name once nobody has the file open.  The
# race itself cannot be forced from outside, so the test makes the state
# it leaves: a libfuse-form name on a file closed a moment before.  A name
# of any other form, or given to a file closed long before, stays.
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
rfs_unmount_wait "$mnt" || fail "unmount"
expect_rc 0 "$RAIDFS" check "$(join_members $mem)"
log "ok"
