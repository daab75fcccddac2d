#!/bin/bash
# t_conform_ll - what a local filesystem does and the path-based FUSE
# layer could not:
#   - fstat, a listing and fsync of an open directory that another
#     directory was renamed over (or that was removed) answer from the
#     directory itself, not ESTALE;
#   - a file unlinked while open shows no name at all (no .fuse_hidden*),
#     so its directory is empty and can be removed at once;
#   - all names of a hard-linked file are one inode: a write through one
#     name shows at once in the size and mtime seen through another, and
#     rename() between two links of one file does nothing.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

new_array conf raid5
"$PY" - "$mnt" <<'PYEOF' || fail "conformance checks failed (listed above)"
import os, sys, time
m = sys.argv[1]
bad = []

# an open directory renamed over, and one removed
os.mkdir(m + "/x"); os.mkdir(m + "/y"); os.mkdir(m + "/z")
open(m + "/x/f", "w").write("1")
fy = os.open(m + "/y", os.O_RDONLY | os.O_DIRECTORY)
fz = os.open(m + "/z", os.O_RDONLY | os.O_DIRECTORY)
os.rename(m + "/x", m + "/y")
os.rmdir(m + "/z")
time.sleep(1.5)  # (past the kernel's attribute and entry timeouts)
for name, fd in (("renamed over", fy), ("removed", fz)):
    try:
        st = os.fstat(fd)
        if st.st_nlink != 0:
            bad.append("fstat of an open directory %s: nlink %d, expected 0" % (name, st.st_nlink))
    except OSError as e:
        bad.append("fstat of an open directory %s: %s" % (name, e))
    try:
        if os.listdir("/proc/self/fd/%d" % fd):
            bad.append("an open directory %s lists entries" % name)
        os.fsync(fd)
    except OSError as e:
        bad.append("listing or fsync of an open directory %s: %s" % (name, e))
    os.close(fd)
if os.listdir(m + "/y") != ["f"]:
    bad.append("the directory renamed over the other lists %s" % os.listdir(m + "/y"))

# unlinked while open: nothing left in the directory
os.mkdir(m + "/u")
fd = os.open(m + "/u/open", os.O_CREAT | os.O_RDWR, 0o644)
os.write(fd, b"still here")
os.unlink(m + "/u/open")
if os.listdir(m + "/u"):
    bad.append("names left by a file unlinked while open: %s" % os.listdir(m + "/u"))
try:
    os.rmdir(m + "/u")
except OSError as e:
    bad.append("rmdir of the directory of a file unlinked while open: %s" % e)
if os.pread(fd, 100, 0) != b"still here":
    bad.append("the unlinked open file reads wrong")
os.close(fd)

# hard links: one inode
open(m + "/a", "w").write("x")
os.link(m + "/a", m + "/b")
sb = os.stat(m + "/b")
time.sleep(0.02)
with open(m + "/a", "a") as f:
    f.write("more bytes")
sa, sb = os.stat(m + "/a"), os.stat(m + "/b")
if (sa.st_ino, sa.st_size, sa.st_mtime_ns) != (sb.st_ino, sb.st_size, sb.st_mtime_ns) or sb.st_size != 11:
    bad.append("two links of one file differ: %s against %s" % ((sa.st_ino, sa.st_size, sa.st_mtime_ns),
                                                             (sb.st_ino, sb.st_size, sb.st_mtime_ns)))
fd = os.open(m + "/b", os.O_RDONLY)
os.rename(m + "/a", m + "/b")
if not (os.path.exists(m + "/a") and os.path.exists(m + "/b")) or os.stat(m + "/b").st_nlink != 2:
    bad.append("rename between two links of one file was not a no-op")
os.close(fd)

for b in bad:
    print("t_conform_ll: %s" % b, file=sys.stderr)
sys.exit(1 if bad else 0)
PYEOF
rm -rf "$mnt/y" "$mnt/a" "$mnt/b"
[ -z "$(ls -A "$mnt")" ] || fail "names left: $(ls -A "$mnt")"
rfs_unmount_wait "$mnt" || fail "unmount"
expect_rc 0 "$RAIDFS" check "$(join_members $mem)"
log "ok"
