#!/bin/bash
# t_kcache - the kernel's caches stay true to the members.  The mount
# lets the kernel keep attributes and names (-o attr_timeout=,
# entry_timeout=; long ones here, so nothing expires during the test) and
# pages; raidfs must tell the kernel itself when something that is not a
# kernel request changes what it would answer.  With the caches warm
# (every file stat'ed and read through the mount), the primary is failed
# (another member's inode numbers and times serve), a file is written
# degraded, the member is re-added (resync, the primary back), and the
# daemon is killed and mounted again (crash replay): after each event
# stat and read through the mount must match the reference copy and the
# serving member (inode number, mtime, mode, size, bytes).
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

C=$T/kc
mkdir -p "$C/ref"
mem=$(make_members 4 kc/d)
mnt=$C/mnt
opts=(-o attr_timeout=30,entry_timeout=30)
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name kc $mem
rfs_mount "$(join_members $mem)" "$mnt" "${opts[@]}" || fail "mount"
write_fileset "$mnt" "$C/ref" 7 2 5 1000 300000 || fail "the file set"

# the member serving the namespace: member 0 at the mount, then the last
# one the daemon says took over (a member coming back does not take it)
primary() {
	local i
	i=$(sed -n 's/.*member \([0-9]*\) .* now serves the namespace.*/\1/p' "$T/daemon.log" | tail -n 1)
	echo $mem | cut -d' ' -f$((${i:-0} + 1))
}

# every file through the mount against the reference and the primary
check_all() {
	"$PY" - "$mnt" "$C/ref" "$(primary)" "$1" <<'PYEOF' || fail "$1: the mount does not match the members"
import os, sys
mnt, ref, prim, what = sys.argv[1:5]
bad, n = [], 0
for d, _, files in os.walk(ref):
    for f in files:
        rel = os.path.relpath(os.path.join(d, f), ref)
        n += 1
        m, r, p = os.stat(os.path.join(mnt, rel)), os.stat(os.path.join(ref, rel)), os.stat(os.path.join(prim, rel))
        if m.st_size != r.st_size:
            bad.append("%s: size %d, expected %d" % (rel, m.st_size, r.st_size))
        if (m.st_ino, m.st_mtime_ns, m.st_mode) != (p.st_ino, p.st_mtime_ns, p.st_mode):
            bad.append("%s: ino/mtime/mode %s, the primary's %s" % (rel, (m.st_ino, m.st_mtime_ns, oct(m.st_mode)),
                                                                    (p.st_ino, p.st_mtime_ns, oct(p.st_mode))))
        # (a read makes the kernel ask for attributes again: dir1 is read
        # only at the end, so its names and attributes stay cached)
        if (what.startswith("after the crash") or rel.startswith("dir0")) and \
           open(os.path.join(mnt, rel), "rb").read() != open(os.path.join(ref, rel), "rb").read():
            bad.append("%s: bytes differ" % rel)
for b in bad[:10]:
    print("t_kcache: %s: %s" % (what, b), file=sys.stderr)
sys.exit(1 if bad or n < 10 else 0)
PYEOF
}

# the caches warmed again just before an event
warm() { find "$mnt" -type f -exec stat -c %i {} + >/dev/null || fail "stat"; }

check_all "warm"
warm
m0=${mem%% *}
expect_rc 0 "$RAIDFS" fail "$mnt" 0
check_all "after the primary failed"
# written degraded: the re-add resyncs it
head -c 123457 /dev/urandom >"$C/ref/dir0/f01"
cp "$C/ref/dir0/f01" "$mnt/dir0/f01" || fail "degraded write"
check_all "after a degraded write"
warm
expect_rc 0 "$RAIDFS" add "$mnt" "$m0"
wait_member "$mnt" 0 online || fail "member 0 did not come back: $("$RAIDFS" status "$mnt")"
check_all "after the re-add"
warm
# a rebuild onto a fresh directory in member 1's place
m1=$(echo $mem | cut -d' ' -f2)
expect_rc 0 "$RAIDFS" fail "$mnt" 1
mkdir -p "$C/new1"
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new1"
wait_member "$mnt" 1 online || fail "member 1 was not rebuilt: $("$RAIDFS" status "$mnt")"
mem=$(echo $mem | sed "s#$m1#$C/new1#")
check_all "after the rebuild"
# a crash in the middle of writes, then the mount's replay and resync
cp "$C/ref/dir0/f00" "$mnt/dir0/f00.new" || fail "write before the kill"
cp "$C/ref/dir0/f00" "$C/ref/dir0/f00.new"
check_all "before the kill"
warm
rfs_kill "$mnt" || fail "kill"
mv "$T/daemon.log" "$T/daemon.log.1"
rfs_mount "$(join_members $mem)" "$mnt" "${opts[@]}" || fail "mount after the kill"
check_all "after the crash replay"
rfs_unmount_wait "$mnt" || fail "unmount"
expect_rc 0 "$RAIDFS" check "$(join_members $mem)"
log "ok"
