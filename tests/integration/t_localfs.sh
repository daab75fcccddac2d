#!/bin/bash
# t_localfs.sh - what a local filesystem accepts (issue 30, point 6).
#
# raid5 of 4 members, chunk 16K, write-back cache with a battery (bbu=shm,
# so the calls meet dirty cached lines), mounted -o allow_other, as root:
# 1. The caller's umask alone (002: 0664 files, 0775 directories; the
#    daemon's own 022 must not apply again).
# 2. Set-id bits given at create kept (a 06755 file, a 04644 FIFO), and a
#    directory made under a set-gid parent inherits its group and the bit.
# 3. Character and block device nodes: made on every member, as the same
#    node.
# 4. fallocate in every mode (tests/tools/localfs_check.py: allocate,
#    KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE with and without KEEP_SIZE; the
#    bytes compared with a model after each; COLLAPSE and INSERT refused
#    with EOPNOTSUPP); a punched range gives its space back on the
#    members; after the unmount 'raidfs check' is clean, and a degraded
#    mount (one member away) reads the model's bytes.  Then members on
#    small filesystems, one nearly full: an allocation that does not fit
#    fails with ENOSPC and allocates nothing on the others; a punch over
#    the holes of a sparse file needs no room; a write into a punched
#    range is refused with ENOSPC (its room taken again first), no member
#    failed.
# 5. SEEK_DATA/SEEK_HOLE find the hole of a sparse file; cp --sparse=always
#    into the mount keeps the hole.
# 6. copy_file_range from a file still in the write-back cache, with
#    offsets, up to the end of the source.  (The kernel falls back to
#    reads and writes when the daemon does not take it, so this part
#    passes without it too: it guards the daemon's copy.)
# 7. FS_IOC_GETFLAGS answered (lsattr works), other ioctls ENOTTY.
#
# Needs root (set-id bits, device nodes, tmpfs mounts); otherwise skips.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python
[ "$(id -u)" = 0 ] || skip "needs root (set-id bits, device nodes, tmpfs members)"

FAILS=0
bad() { log "FAIL: $*"; FAILS=$((FAILS + 1)); }
mode_of() { stat -c %a "$1"; }
LC=$TOOLS/localfs_check.py

members=$(make_members 4)
mcolon=$(join_members $members)
"$RAIDFS" create --level raid5 --chunk 16K --name localfs $members >/dev/null || fail "create"
mnt=$T/mnt
rfs_mount "$mcolon" "$mnt" -o allow_other,bbu=shm || fail "mount"

log "1. umask"
(umask 002 && echo x >"$mnt/u-file" && mkdir "$mnt/u-dir" && mkfifo "$mnt/u-fifo")
[ "$(mode_of "$mnt/u-file")" = 664 ] || bad "file created with umask 002 has mode $(mode_of "$mnt/u-file"), expected 664"
[ "$(mode_of "$mnt/u-dir")" = 775 ] || bad "directory made with umask 002 has mode $(mode_of "$mnt/u-dir"), expected 775"
[ "$(mode_of "$mnt/u-fifo")" = 664 ] || bad "FIFO made with umask 002 has mode $(mode_of "$mnt/u-fifo"), expected 664"
for d in $members; do
	[ "$(mode_of "$d/u-file")" = 664 ] || bad "shard on $d has mode $(mode_of "$d/u-file"), expected 664"
done

log "2. set-id bits at create"
"$PY" - "$mnt" <<'EOF' || bad "set-id bits given at create were not kept"
import os, stat, sys
m = sys.argv[1]
os.umask(0)
os.close(os.open(m + "/setid", os.O_CREAT | os.O_WRONLY, 0o6755))
os.mknod(m + "/setid-fifo", stat.S_IFIFO | 0o4644)
ok = True
for p, want in (("/setid", 0o6755), ("/setid-fifo", 0o4644)):
    got = stat.S_IMODE(os.stat(m + p).st_mode)
    if got != want:
        print("  %s: mode %o, expected %o" % (p, got, want))
        ok = False
sys.exit(0 if ok else 1)
EOF
for d in $members; do
	[ "$(mode_of "$d/setid")" = 6755 ] || bad "shard on $d has mode $(mode_of "$d/setid"), expected 6755"
done
mkdir "$mnt/sgid" && chgrp 100 "$mnt/sgid" && chmod 2775 "$mnt/sgid"
mkdir "$mnt/sgid/sub" && touch "$mnt/sgid/f"
[ "$(stat -c %g "$mnt/sgid/sub"):$(stat -c %g "$mnt/sgid/f")" = 100:100 ] ||
	bad "entries made under a set-gid directory of group 100 have groups $(stat -c %g "$mnt/sgid/sub") and $(stat -c %g "$mnt/sgid/f")"
[ -g "$mnt/sgid/sub" ] || bad "a directory made under a set-gid directory lacks the set-gid bit"

log "3. device nodes"
mknod "$mnt/null" c 1 3 || bad "mknod of a character device failed"
mknod "$mnt/blk" b 7 200 || bad "mknod of a block device failed"
for p in "$mnt" $members; do
	[ "$(stat -c '%F %t:%T' "$p/null" 2>/dev/null)" = "character special file 1:3" ] ||
		bad "$p/null: '$(stat -c '%F %t:%T' "$p/null" 2>&1)', expected character special file 1:3"
	[ "$(stat -c '%F %t:%T' "$p/blk" 2>/dev/null)" = "block special file 7:c8" ] ||
		bad "$p/blk: '$(stat -c '%F %t:%T' "$p/blk" 2>&1)', expected block special file 7:c8"
done

log "4. fallocate"
"$PY" "$LC" fallocate "$mnt/fa" "$T/fa.model" >&2 || bad "fallocate (above)"
# a punched range gives its space back on the members
head -c $((4 << 20)) /dev/urandom >"$mnt/punch" && sync "$mnt/punch"
used() { local d n=0; for d in $members; do n=$((n + $(stat -c %b "$d/punch"))); done; echo $n; }
before=$(used)
fallocate -p -o $((256 << 10)) -l $((3 << 20)) "$mnt/punch" || bad "fallocate --punch-hole failed"
after=$(used)
log "  shards of a 4 MiB file: $before blocks, $after after 3 MiB were punched"
[ "$after" -lt $((before * 2 / 5)) ] || bad "punching 3 MiB of 4 gave back too little: $before -> $after blocks"
cmp -s <(head -c $((256 << 10)) /dev/zero) <(tail -c +$(((256 << 10) + 1)) "$mnt/punch" | head -c $((256 << 10))) ||
	bad "the punched range does not read as zeros"
rfs_unmount "$mnt" || bad "unmount"
"$RAIDFS" check "$mcolon" >"$T/check.out" 2>&1 || { cat "$T/check.out" >&2; bad "'raidfs check' after fallocate is not clean"; }
set -- $members
hide_member "$2"
rfs_mount "$mcolon" "$mnt" -o allow_other || fail "degraded mount"
cmp "$T/fa.model" "$mnt/fa" || bad "a degraded read of the fallocated file differs from the model"
rfs_unmount "$mnt"
unhide_member "$2"

log "4b. fallocate on members without room"
small=""
for i in 1 2 3 4; do
	mkdir -p "$T/fs$i"
	mount -t tmpfs -o size=16m tmpfs "$T/fs$i" || skip "cannot mount a tmpfs (needs root)"
	MOUNTS+=("$T/fs$i")
	mkdir "$T/fs$i/m"
	small="$small $T/fs$i/m"
done
"$RAIDFS" create --level raid5 --chunk 16K --name localfs-small $small >/dev/null || fail "create (small)"
smnt=$T/smnt
MOUNTS=("$smnt" "${MOUNTS[@]}")	# (the FUSE mount goes before the tmpfs under it)
rfs_mount "$(join_members $small)" "$smnt" || fail "mount (small)"
head -c $((1 << 20)) /dev/urandom >"$smnt/f" && sync "$smnt/f"
truncate -s 48M "$smnt/sparse" && head -c 4096 /dev/urandom >>"$smnt/sparse" && sync "$smnt/sparse"
head -c $((16 << 20)) /dev/zero >"$T/fs3/filler" 2>/dev/null	# (member 3 full)
fallocate -p -o 4096 -l $((48 << 20)) "$smnt/sparse" ||
	bad "a punch over the holes of a sparse file fails on members without room (it needs none)"
blocks() { local d n=""; for d in $small; do n="$n $(stat -c %b "$d/f")"; done; echo $n; }
b0=$(blocks)
out=$(fallocate -l $((20 << 20)) "$smnt/f" 2>&1) && bad "an allocation beyond one member's room succeeded"
case $out in *"No space left"*) ;; *) bad "allocation beyond a member's room: '$out', expected ENOSPC" ;; esac
[ "$(stat -c %s "$smnt/f")" = $((1 << 20)) ] || bad "the refused allocation changed the size to $(stat -c %s "$smnt/f")"
[ "$(blocks)" = "$b0" ] || bad "the refused allocation left blocks on the members: $b0 -> $(blocks)"
fallocate -z -o $((1 << 20)) -l $((20 << 20)) "$smnt/f" 2>/dev/null && bad "a zero range beyond one member's room succeeded"
[ "$(stat -c %s "$smnt/f")" = $((1 << 20)) ] || bad "the refused zero range changed the size to $(stat -c %s "$smnt/f")"
# a write into a range punched through the same descriptor allocates
# again: refused with ENOSPC before any member is written, rather than
# failing the full member in the middle of a stripe
rm -f "$T/fs3/filler"
"$PY" - "$smnt/dense" "$T/fs3/filler" <<'EOF2' || bad "a write into a punched range on a full member (above)"
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR, 0o644)
data = os.urandom(3 << 20)
os.pwrite(fd, data, 0)
os.fsync(fd)
if libc.fallocate(fd, 3, ctypes.c_longlong(0), ctypes.c_longlong(3 << 20)) != 0:
    sys.exit("punch failed: %s" % os.strerror(ctypes.get_errno()))
try:
    with open(sys.argv[2], "wb") as f:	# the member's filesystem full
        f.write(bytes(16 << 20))
except OSError:
    pass
try:
    os.pwrite(fd, data, 0)
    os.fsync(fd)
    sys.exit("the write into the punched range fit on a full member")
except OSError as e:
    if e.errno != errno.ENOSPC:
        sys.exit("the write into the punched range: %s, expected ENOSPC" % e)
EOF2
"$RAIDFS" status "$smnt" >"$T/status.out" 2>&1
grep -q "^state: *optimal" "$T/status.out" || { cat "$T/status.out" >&2; bad "a write into a punched range on a full member failed a member"; }
rm -f "$T/fs3/filler"
fallocate -l $((8 << 20)) "$smnt/f" || bad "an allocation that fits failed"
[ "$(stat -c %s "$smnt/f")" = $((8 << 20)) ] || bad "the size after the allocation is $(stat -c %s "$smnt/f")"
rfs_unmount "$smnt" || bad "unmount (small)"
"$RAIDFS" check "$(join_members $small)" >"$T/check2.out" 2>&1 || { cat "$T/check2.out" >&2; bad "'raidfs check' after ENOSPC is not clean"; }

rfs_mount "$mcolon" "$mnt" -o allow_other,bbu=shm || fail "mount again"
log "5. SEEK_DATA, SEEK_HOLE"
"$PY" "$LC" seek "$mnt" >&2 || bad "SEEK_DATA/SEEK_HOLE (above)"
truncate -s 16M "$T/sparse" && head -c 65536 /dev/urandom | dd of="$T/sparse" bs=64k seek=100 conv=notrunc 2>/dev/null
cp --sparse=always "$T/sparse" "$mnt/sparse-copy" || bad "cp --sparse=always into the mount failed"
cmp "$T/sparse" "$mnt/sparse-copy" || bad "cp --sparse=always: the copy differs"
"$PY" -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); sys.exit(0 if os.lseek(fd, 0, os.SEEK_HOLE) == 0 and os.lseek(fd, 0, os.SEEK_DATA) > (4 << 20) else 1)' \
	"$mnt/sparse-copy" || bad "the sparse copy has no hole at its start"

log "6. copy_file_range"
"$PY" "$LC" copy "$mnt" >&2 || bad "copy_file_range (above)"
cp --reflink=auto "$mnt/copy-src" "$mnt/copy-cp" && cmp "$mnt/copy-src" "$mnt/copy-cp" || bad "cp --reflink=auto"

log "7. ioctl"
"$PY" "$LC" ioctl "$mnt" >&2 || bad "ioctl (above)"
lsattr "$mnt/u-file" >/dev/null || bad "lsattr fails"

rfs_unmount "$mnt" || bad "unmount"
"$RAIDFS" check "$mcolon" >"$T/check3.out" 2>&1 || { cat "$T/check3.out" >&2; bad "'raidfs check' at the end is not clean"; }
[ "$FAILS" = 0 ] || fail "$FAILS check(s) failed"
log "ok"
