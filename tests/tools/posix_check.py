#!/usr/bin/env python3
"""posix_check.py - does a directory behave like a local POSIX filesystem?

Usage: posix_check.py [--uid-tests] [--only NAME[,NAME...]] [--list] [--keep] DIR

Exercises every filesystem operation listed in point 6 of issue 2 (lookup,
large readdir, mkdir/rmdir, create/read/write, fsync, truncate, unlink of an
open file, rename with RENAME_NOREPLACE/RENAME_EXCHANGE, hard links,
symlinks, chmod/chown/utimens, FIFOs, user xattrs, statfs, O_APPEND, sparse
files over 4 GiB, concurrent readers and writers, error codes) inside a fresh
scratch directory under DIR, and compares each result with what a local
filesystem (ext4, tmpfs) does.

Prints one line per check ("ok NAME" or "FAIL NAME: what differed") and
exits 0 when every check passed, 1 when any failed, 2 on usage errors.
The scratch directory is removed at the end (its removal is checked too)
unless --keep is given.

--uid-tests (needs root, and DIR on a mount made with allow_other when DIR is
a FUSE mount) adds checks run in forked children that switch to an
unprivileged uid/gid: files they create must be owned by them, and
permission checks must apply to them.

Validate a change to this script on a plain directory first: every check
must pass there (`python3 posix_check.py --uid-tests /tmp/x`).

Python 3 standard library only.
"""

import ctypes
import errno
import json
import mmap
import os
import random
import shutil
import stat
import sys
import threading
import time
import traceback

from release import after_release, rmdir_after_release

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

# An unprivileged identity for --uid-tests; nobody on a test box owns these.
TEST_UID = 12345
TEST_GID = 23456
OTHER_GID = 777

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2
SYS_renameat2 = {"x86_64": 316, "aarch64": 276, "riscv64": 276}.get(os.uname().machine)


class CheckFailed(Exception):
    pass


class Ctx:
    """Collects failed expectations of one check (a check goes on after a
    failed expectation so one run reports everything that is wrong)."""

    def __init__(self, name):
        self.name = name
        self.problems = []

    def expect(self, cond, what):
        if not cond:
            self.problems.append(what)
        return cond

    def eq(self, got, want, what):
        if got != want:
            self.problems.append("%s: got %s, expected %s" % (what, short(got), short(want)))
            return False
        return True

    def errno_of(self, want, what, fn, *args, **kw):
        """fn(*args) must fail with errno `want` (an int or a tuple of ints)."""
        wants = want if isinstance(want, tuple) else (want,)
        try:
            r = fn(*args, **kw)
        except OSError as e:
            if e.errno not in wants:
                self.problems.append("%s: got %s, expected %s" % (
                    what, ename(e.errno), "/".join(ename(w) for w in wants)))
                return False
            return True
        self.problems.append("%s: succeeded (returned %s), expected %s" % (
            what, short(r), "/".join(ename(w) for w in wants)))
        if isinstance(r, int) and fn is os.open:
            os.close(r)
        return False

    def fatal(self, what):
        self.problems.append(what)
        raise CheckFailed()


def ename(e):
    return errno.errorcode.get(e, str(e))


def short(v):
    if isinstance(v, (bytes, bytearray)):
        if len(v) > 32:
            return "<%d bytes %r...>" % (len(v), bytes(v[:16]))
        return repr(bytes(v))
    s = repr(v)
    return s if len(s) <= 200 else s[:200] + "..."


def first_diff(a, b):
    n = min(len(a), len(b))
    for i in range(0, n, 4096):
        if a[i:i + 4096] != b[i:i + 4096]:
            for j in range(i, min(i + 4096, n)):
                if a[j] != b[j]:
                    return j
    return n if len(a) != len(b) else -1


def same_bytes(c, got, want, what):
    if got == want:
        return True
    d = first_diff(got, want)
    c.problems.append("%s: content differs at byte %d (got %d bytes, expected %d)" % (
        what, d, len(got), len(want)))
    return False


def where():
    """' (line N: code)' of the innermost frame of this script in the
    exception being handled."""
    frames = [f for f in traceback.extract_tb(sys.exc_info()[2]) if f.filename == __file__]
    if not frames:
        return ""
    f = frames[-1]
    return " (line %d: %s)" % (f.lineno, (f.line or "").strip())


def rbytes(seed, n):
    return random.Random(seed).randbytes(n)


def write_file(path, data, mode=0o644):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)


def read_file(path):
    with open(path, "rb", buffering=0) as f:
        out = bytearray()
        while True:
            b = f.read(1 << 20)
            if not b:
                return bytes(out)
            out += b


def pread_all(fd, n, off):
    out = bytearray()
    while len(out) < n:
        b = os.pread(fd, n - len(out), off + len(out))
        if not b:
            break
        out += b
    return bytes(out)


def pwrite_all(fd, data, off):
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, off)
        view = view[n:]
        off += n


def renameat2(old, new, flags):
    """renameat2(2) via glibc, or the raw syscall on old glibc."""
    fn = getattr(libc, "renameat2", None)
    o, n = os.fsencode(old), os.fsencode(new)
    if fn is not None:
        r = fn(AT_FDCWD, o, AT_FDCWD, n, ctypes.c_uint(flags))
    elif SYS_renameat2 is not None:
        r = libc.syscall(SYS_renameat2, AT_FDCWD, o, AT_FDCWD, n, ctypes.c_uint(flags))
    else:
        raise OSError(errno.ENOSYS, "renameat2 unavailable on this machine")
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), old)


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def utimensat(path, atime, mtime, nofollow=False):
    """atime/mtime: (sec, nsec) or UTIME_NOW / UTIME_OMIT."""
    def ts(v):
        if v in (UTIME_NOW, UTIME_OMIT):
            return Timespec(0, v)
        return Timespec(v[0], v[1])
    arr = (Timespec * 2)(ts(atime), ts(mtime))
    r = libc.utimensat(AT_FDCWD, os.fsencode(path), arr, 0x100 if nofollow else 0)
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), path)


CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


# --------------------------------------------------------------------------
# The checks. Each gets a Ctx and its own empty directory.
# --------------------------------------------------------------------------

@check
def lookup_stat(c, d):
    data = rbytes(1, 12345)
    f = os.path.join(d, "file")
    write_file(f, data)
    st = os.stat(f)
    c.expect(stat.S_ISREG(st.st_mode), "stat of a regular file: mode %o is not S_IFREG" % st.st_mode)
    c.eq(st.st_size, len(data), "st_size of a 12345-byte file")
    c.eq(st.st_nlink, 1, "st_nlink of a new file")
    c.eq(os.stat(f).st_ino, st.st_ino, "st_ino of the same file in two stat calls")
    fd = os.open(f, os.O_RDONLY)
    fst = os.fstat(fd)
    os.close(fd)
    c.eq((fst.st_ino, fst.st_size, fst.st_mode), (st.st_ino, st.st_size, st.st_mode),
         "fstat vs stat (ino, size, mode)")
    g = os.path.join(d, "other")
    write_file(g, b"x")
    c.expect(os.stat(g).st_ino != st.st_ino, "two different files report the same st_ino %d" % st.st_ino)
    sub = os.path.join(d, "sub")
    os.mkdir(sub)
    sst = os.stat(sub)
    c.expect(stat.S_ISDIR(sst.st_mode), "stat of a directory: mode %o is not S_IFDIR" % sst.st_mode)
    c.expect(sst.st_nlink >= 1, "st_nlink of a directory is %d" % sst.st_nlink)
    c.errno_of(errno.ENOENT, "stat of a missing name", os.stat, os.path.join(d, "missing"))
    c.errno_of(errno.ENOENT, "lstat of a missing name", os.lstat, os.path.join(d, "missing"))
    c.errno_of(errno.ENOTDIR, "stat of a path through a regular file", os.stat, os.path.join(f, "x"))
    c.errno_of(errno.ENOENT, "stat of a path through a missing directory", os.stat,
               os.path.join(d, "nodir", "x"))
    # unusual but legal names
    for name in ["with space", "new\nline", "ünïcödé-名前", "-dash", ".hidden", "a" * 255,
                 "x" * 100 + ".raidfs", ".raidfs"]:
        p = os.path.join(d, name)
        try:
            write_file(p, name.encode())
        except OSError as e:
            c.problems.append("create %r: %s" % (name[:40], e))
            continue
        try:
            c.eq(read_file(p), name.encode(), "content of file named %r" % name[:40])
            c.expect(name in os.listdir(d), "name %r missing from readdir" % name[:40])
        except OSError as e:
            c.problems.append("reading back %r: %s" % (name[:40], e))
    c.errno_of(errno.ENAMETOOLONG, "create of a 256-byte name", os.open,
               os.path.join(d, "b" * 256), os.O_CREAT | os.O_WRONLY, 0o644)


@check
def readdir_large(c, d):
    n = 3000
    names = set("entry-%05d-%s" % (i, "q" * (i % 50)) for i in range(n))
    for name in names:
        os.close(os.open(os.path.join(d, name), os.O_CREAT | os.O_WRONLY, 0o644))
    os.mkdir(os.path.join(d, "zz-dir"))
    os.symlink("entry-00001", os.path.join(d, "zz-link"))
    listed = os.listdir(d)
    want = names | {"zz-dir", "zz-link"}
    dup = len(listed) - len(set(listed))
    c.eq(dup, 0, "duplicate names in readdir of %d entries" % len(want))
    missing = want - set(listed)
    extra = set(listed) - want
    c.expect(not missing, "%d names missing from readdir, e.g. %s" % (len(missing), sorted(missing)[:3]))
    c.expect(not extra, "unexpected names in readdir: %s" % sorted(extra)[:5])
    types = {}
    with os.scandir(d) as it:
        for e in it:
            types[e.name] = (e.is_file(follow_symlinks=False), e.is_dir(follow_symlinks=False),
                             e.is_symlink())
    c.eq(types.get("zz-dir"), (False, True, False), "scandir type of a directory (file, dir, link)")
    c.eq(types.get("zz-link"), (False, False, True), "scandir type of a symlink (file, dir, link)")
    c.eq(types.get("entry-00002-qq"), (True, False, False), "scandir type of a file (file, dir, link)")
    # remove every other entry, list again
    gone = set(sorted(names)[::2])
    for name in gone:
        os.unlink(os.path.join(d, name))
    listed = os.listdir(d)
    c.eq(len(listed), len(set(listed)), "readdir after unlinking half: entries unique")
    c.eq(set(listed), want - gone, "readdir after unlinking half the entries")


@check
def mkdir_rmdir(c, d):
    a = os.path.join(d, "a")
    old = os.umask(0)
    try:
        os.mkdir(a, 0o750)
    finally:
        os.umask(old)
    c.eq(stat.S_IMODE(os.stat(a).st_mode), 0o750, "mode of mkdir(0750) with umask 0")
    c.errno_of(errno.EEXIST, "mkdir of an existing directory", os.mkdir, a)
    os.makedirs(os.path.join(a, "b", "c", "d"))
    c.expect(os.path.isdir(os.path.join(a, "b", "c", "d")), "nested mkdir a/b/c/d not a directory")
    c.errno_of(errno.ENOTEMPTY, "rmdir of a non-empty directory", os.rmdir, a)
    f = os.path.join(d, "f")
    write_file(f, b"x")
    c.errno_of(errno.ENOTDIR, "rmdir of a regular file", os.rmdir, f)
    c.errno_of(errno.EISDIR, "unlink of a directory", os.unlink, a)
    c.errno_of(errno.ENOTDIR, "mkdir below a regular file", os.mkdir, os.path.join(f, "x"))
    c.errno_of(errno.EEXIST, "mkdir over an existing file", os.mkdir, f)
    c.errno_of(errno.ENOENT, "mkdir below a missing directory", os.mkdir, os.path.join(d, "no", "x"))
    e = os.path.join(a, "b", "c", "d")
    os.rmdir(e)
    c.expect(not os.path.exists(e), "directory still exists after rmdir")
    c.errno_of(errno.ENOENT, "rmdir of a missing directory", os.rmdir, e)
    # a directory that held a file and was emptied can be removed
    g = os.path.join(a, "b", "c", "g")
    write_file(g, b"data")
    os.unlink(g)
    rmdir_after_release(os.path.join(a, "b", "c"))
    os.rmdir(os.path.join(a, "b"))
    os.rmdir(a)
    c.eq(sorted(os.listdir(d)), ["f"], "directory listing after removing the tree")
    # re-create a removed directory with the same name
    os.mkdir(a)
    write_file(os.path.join(a, "new"), b"new")
    c.eq(read_file(os.path.join(a, "new")), b"new", "file in a re-created directory")


@check
def create_read_write(c, d):
    f = os.path.join(d, "f")
    old = os.umask(0o022)
    try:
        fd = os.open(f, os.O_CREAT | os.O_RDWR, 0o666)
    finally:
        os.umask(old)
    c.eq(stat.S_IMODE(os.fstat(fd).st_mode), 0o644, "mode of create(0666) with umask 022")
    ref = bytearray()
    rng = random.Random(42)
    # sizes around typical chunk and page boundaries
    for size in [1, 4095, 4097, 65535, 65537, 131072 + 17, 1 * MiB + 3, 300000]:
        data = rng.randbytes(size)
        os.write(fd, data)
        ref += data
    c.eq(os.fstat(fd).st_size, len(ref), "st_size after sequential writes")
    c.eq(os.lseek(fd, 0, os.SEEK_END), len(ref), "lseek(SEEK_END)")
    same_bytes(c, pread_all(fd, len(ref), 0), bytes(ref), "read back sequential writes")
    # overwrites at unaligned offsets spanning chunk boundaries
    for _ in range(40):
        off = rng.randrange(0, len(ref))
        data = rng.randbytes(rng.choice([1, 7, 513, 4096, 65536, 100000, 200000]))
        pwrite_all(fd, data, off)
        end = off + len(data)
        if end > len(ref):
            ref += bytes(end - len(ref))
        ref[off:end] = data
    same_bytes(c, pread_all(fd, len(ref), 0), bytes(ref), "read back after random overwrites")
    # small reads at random places
    for _ in range(50):
        off = rng.randrange(0, len(ref))
        n = rng.randrange(1, 70000)
        got = os.pread(fd, n, off)
        if not same_bytes(c, got, bytes(ref[off:off + n]), "pread(%d, %d)" % (n, off)):
            break
    c.eq(os.pread(fd, 100, len(ref)), b"", "pread at EOF")
    c.eq(os.pread(fd, 100, len(ref) + 12345), b"", "pread beyond EOF")
    c.eq(os.pread(fd, 100, len(ref) - 10), bytes(ref[-10:]), "pread straddling EOF")
    # dup: closing one descriptor leaves the other working
    fd2 = os.dup(fd)
    os.close(fd)
    pwrite_all(fd2, b"after-dup-close", 0)
    ref[0:15] = b"after-dup-close"
    os.close(fd2)
    same_bytes(c, read_file(f), bytes(ref), "content after close and reopen")
    # O_TRUNC open
    fd = os.open(f, os.O_WRONLY | os.O_TRUNC)
    c.eq(os.fstat(fd).st_size, 0, "st_size after open(O_TRUNC)")
    os.write(fd, b"short")
    os.close(fd)
    c.eq(read_file(f), b"short", "content after O_TRUNC and a short write")
    # a write at a far offset creates a hole that reads as zeros
    fd = os.open(f, os.O_RDWR)
    pwrite_all(fd, b"tail", 3 * MiB + 5)
    got = pread_all(fd, 3 * MiB + 9, 0)
    os.close(fd)
    same_bytes(c, got, b"short" + bytes(3 * MiB) + b"tail", "file with a hole after pwrite beyond EOF")
    # empty file
    e = os.path.join(d, "empty")
    os.close(os.open(e, os.O_CREAT | os.O_WRONLY, 0o644))
    c.eq(os.stat(e).st_size, 0, "size of an empty file")
    c.eq(read_file(e), b"", "content of an empty file")
    # many small files of different sizes, read back after all were written
    refs = {}
    for i in range(60):
        p = os.path.join(d, "small%02d" % i)
        refs[p] = rng.randbytes(rng.choice([0, 1, 100, 4096, 5000, 65536, 70000]))
        write_file(p, refs[p])
    for p, data in refs.items():
        if not same_bytes(c, read_file(p), data, "small file %s" % os.path.basename(p)):
            break


@check
def fsync(c, d):
    f = os.path.join(d, "f")
    data = rbytes(3, 200000)
    fd = os.open(f, os.O_CREAT | os.O_RDWR, 0o644)
    pwrite_all(fd, data, 0)
    os.fsync(fd)
    pwrite_all(fd, b"more", len(data))
    os.fdatasync(fd)
    os.close(fd)
    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    except OSError as e:
        c.problems.append("fsync of a directory descriptor: %s" % e)
    os.close(dfd)
    same_bytes(c, read_file(f), data + b"more", "content after fsync/fdatasync")
    # fsync on a read-only descriptor is allowed too
    fd = os.open(f, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as e:
        c.problems.append("fsync of a read-only descriptor: %s" % e)
    os.close(fd)
    os.sync()


@check
def truncate(c, d):
    f = os.path.join(d, "f")
    data = rbytes(4, 300000)
    write_file(f, data)
    os.truncate(f, 500000)
    c.eq(os.stat(f).st_size, 500000, "st_size after truncate grow")
    same_bytes(c, read_file(f), data + bytes(200000), "grown file reads zeros past the old end")
    os.truncate(f, 70001)
    c.eq(os.stat(f).st_size, 70001, "st_size after truncate shrink")
    same_bytes(c, read_file(f), data[:70001], "content after truncate shrink")
    # growing again must not bring the old bytes back
    os.truncate(f, 300000)
    same_bytes(c, read_file(f), data[:70001] + bytes(300000 - 70001),
               "shrink then grow: region past the shrink point reads zeros")
    # a write past the end after a shrink
    os.truncate(f, 1000)
    fd = os.open(f, os.O_RDWR)
    pwrite_all(fd, b"Z", 250000)
    got = pread_all(fd, 250001, 0)
    os.close(fd)
    same_bytes(c, got, data[:1000] + bytes(249000) + b"Z", "shrink then write past end: hole reads zeros")
    os.truncate(f, 0)
    c.eq(os.stat(f).st_size, 0, "st_size after truncate to 0")
    c.eq(read_file(f), b"", "content after truncate to 0")
    # ftruncate on an open descriptor
    fd = os.open(f, os.O_RDWR)
    pwrite_all(fd, data, 0)
    os.ftruncate(fd, 131073)
    c.eq(os.fstat(fd).st_size, 131073, "fstat size after ftruncate shrink")
    same_bytes(c, pread_all(fd, 200000, 0), data[:131073], "read through fd after ftruncate shrink")
    os.ftruncate(fd, 262144)
    same_bytes(c, pread_all(fd, 300000, 0), data[:131073] + bytes(262144 - 131073),
               "read through fd after ftruncate grow")
    # a write at the old offset after ftruncate does not resurrect data
    pwrite_all(fd, b"W", 262144 + 4096)
    same_bytes(c, pread_all(fd, 300000, 0), data[:131073] + bytes(262144 - 131073 + 4096) + b"W",
               "ftruncate grow then write further")
    os.close(fd)
    c.errno_of(errno.EINVAL, "truncate to a negative size", os.truncate, f, -1)
    c.errno_of(errno.EISDIR, "truncate of a directory", os.truncate, d, 0)
    c.errno_of(errno.ENOENT, "truncate of a missing file", os.truncate, os.path.join(d, "no"), 0)
    fd = os.open(f, os.O_RDONLY)
    c.errno_of((errno.EINVAL, errno.EBADF), "ftruncate of a read-only descriptor", os.ftruncate, fd, 0)
    os.close(fd)


@check
def unlink_open(c, d):
    f = os.path.join(d, "f")
    data = rbytes(5, 150000)
    write_file(f, data)
    fd = os.open(f, os.O_RDWR)
    rfd = os.open(f, os.O_RDONLY)
    os.unlink(f)
    c.errno_of(errno.ENOENT, "stat of an unlinked name", os.stat, f)
    c.expect("f" not in os.listdir(d), "unlinked name still listed by readdir")
    same_bytes(c, pread_all(fd, len(data), 0), data, "read through an fd of an unlinked file")
    pwrite_all(fd, b"more data", len(data))
    pwrite_all(fd, b"head", 0)
    want = b"head" + data[4:] + b"more data"
    c.eq(os.fstat(fd).st_size, len(want), "fstat size of an unlinked file after writes")
    same_bytes(c, pread_all(fd, len(want) + 10, 0), want, "read back writes to an unlinked file")
    same_bytes(c, pread_all(rfd, len(want) + 10, 0), want, "second fd of an unlinked file sees the writes")
    os.ftruncate(fd, 1000)
    c.eq(os.fstat(fd).st_size, 1000, "ftruncate of an unlinked file")
    # a new file with the same name is independent
    write_file(f, b"new file")
    c.eq(read_file(f), b"new file", "new file created under the unlinked name")
    same_bytes(c, pread_all(fd, 2000, 0), want[:1000], "unlinked file unaffected by the new file")
    os.close(fd)
    same_bytes(c, pread_all(rfd, 2000, 0), want[:1000], "unlinked file still readable via its last fd")
    os.close(rfd)
    c.eq(read_file(f), b"new file", "new file after the unlinked one was closed")
    c.eq(after_release(lambda: sorted(os.listdir(d)), ["f"]), ["f"], "readdir after all descriptors closed")
    # unlink of a missing name
    c.errno_of(errno.ENOENT, "unlink of a missing name", os.unlink, os.path.join(d, "nope"))


@check
def rename(c, d):
    a, b = os.path.join(d, "a"), os.path.join(d, "b")
    da = rbytes(6, 100000)
    db = rbytes(7, 70000)
    write_file(a, da)
    ino = os.stat(a).st_ino
    os.rename(a, b)
    c.expect(not os.path.lexists(a), "old name still exists after rename")
    same_bytes(c, read_file(b), da, "content after plain rename")
    c.eq(os.stat(b).st_ino, ino, "st_ino preserved by rename")
    # across directories
    os.mkdir(os.path.join(d, "x"))
    os.mkdir(os.path.join(d, "y"))
    xa = os.path.join(d, "x", "f")
    write_file(xa, db)
    os.rename(xa, os.path.join(d, "y", "g"))
    same_bytes(c, read_file(os.path.join(d, "y", "g")), db, "content after rename across directories")
    c.eq(os.listdir(os.path.join(d, "x")), [], "source directory after rename across directories")
    # over an existing file; an open fd of the replaced file keeps its data
    t = os.path.join(d, "target")
    dt = rbytes(8, 50000)
    write_file(t, dt)
    tfd = os.open(t, os.O_RDONLY)
    os.rename(b, t)
    same_bytes(c, read_file(t), da, "content of the target after rename over an existing file")
    c.expect(not os.path.lexists(b), "source still exists after rename over an existing file")
    same_bytes(c, pread_all(tfd, 60000, 0), dt, "open fd of a file replaced by rename")
    os.close(tfd)
    # a file renamed while open: writes through the fd land in the new name
    o = os.path.join(d, "open-src")
    write_file(o, b"0123456789")
    fd = os.open(o, os.O_RDWR)
    os.rename(o, os.path.join(d, "x", "open-dst"))
    pwrite_all(fd, b"ABC", 8)
    os.fsync(fd)
    c.eq(read_file(os.path.join(d, "x", "open-dst")), b"01234567ABC",
         "write through an fd after its file was renamed")
    same_bytes(c, pread_all(fd, 100, 0), b"01234567ABC", "read through an fd after rename")
    os.close(fd)
    # directory rename with contents
    tree = os.path.join(d, "tree")
    os.makedirs(os.path.join(tree, "sub"))
    write_file(os.path.join(tree, "sub", "leaf"), db)
    os.rename(tree, os.path.join(d, "y", "tree2"))
    same_bytes(c, read_file(os.path.join(d, "y", "tree2", "sub", "leaf")), db,
               "file inside a renamed directory")
    c.expect(not os.path.lexists(tree), "old directory name exists after directory rename")
    # directory over an empty directory is allowed, over a non-empty one is not
    os.mkdir(os.path.join(d, "empty"))
    os.rename(os.path.join(d, "y", "tree2"), os.path.join(d, "empty"))
    c.expect(os.path.exists(os.path.join(d, "empty", "sub", "leaf")), "directory renamed over an empty directory")
    os.mkdir(os.path.join(d, "full"))
    write_file(os.path.join(d, "full", "x"), b"x")
    c.errno_of((errno.ENOTEMPTY, errno.EEXIST), "rename of a directory over a non-empty one",
               os.rename, os.path.join(d, "empty"), os.path.join(d, "full"))
    c.errno_of(errno.EISDIR, "rename of a file over a directory", os.rename, t, os.path.join(d, "full"))
    c.errno_of(errno.ENOTDIR, "rename of a directory over a file", os.rename, os.path.join(d, "full"), t)
    c.errno_of(errno.EINVAL, "rename of a directory into itself", os.rename,
               os.path.join(d, "empty"), os.path.join(d, "empty", "sub", "in"))
    c.errno_of(errno.ENOENT, "rename of a missing name", os.rename, os.path.join(d, "nope"),
               os.path.join(d, "nope2"))
    os.rename(t, t)
    same_bytes(c, read_file(t), da, "rename of a file onto itself is a no-op")
    # RENAME_NOREPLACE
    n1, n2 = os.path.join(d, "n1"), os.path.join(d, "n2")
    write_file(n1, b"one")
    write_file(n2, b"two")
    c.errno_of(errno.EEXIST, "renameat2(RENAME_NOREPLACE) over an existing file", renameat2,
               n1, n2, RENAME_NOREPLACE)
    c.eq((read_file(n1), read_file(n2)), (b"one", b"two"), "both files after a refused RENAME_NOREPLACE")
    n3 = os.path.join(d, "n3")
    try:
        renameat2(n1, n3, RENAME_NOREPLACE)
        c.eq(read_file(n3), b"one", "content after renameat2(RENAME_NOREPLACE) to a new name")
        c.expect(not os.path.lexists(n1), "source exists after renameat2(RENAME_NOREPLACE)")
    except OSError as e:
        c.problems.append("renameat2(RENAME_NOREPLACE) to a free name: %s" % e)
    # RENAME_EXCHANGE: two files, a file and a directory
    e1, e2 = os.path.join(d, "e1"), os.path.join(d, "e2")
    d1 = rbytes(9, 80000)
    d2 = rbytes(10, 3000)
    write_file(e1, d1)
    write_file(e2, d2)
    i1, i2 = os.stat(e1).st_ino, os.stat(e2).st_ino
    try:
        renameat2(e1, e2, RENAME_EXCHANGE)
        same_bytes(c, read_file(e1), d2, "e1 after RENAME_EXCHANGE")
        same_bytes(c, read_file(e2), d1, "e2 after RENAME_EXCHANGE")
        c.eq((os.stat(e1).st_ino, os.stat(e2).st_ino), (i2, i1), "inode numbers after RENAME_EXCHANGE")
    except OSError as e:
        c.problems.append("renameat2(RENAME_EXCHANGE) of two files: %s" % e)
    ed = os.path.join(d, "x")  # directory holding open-dst
    try:
        renameat2(e1, ed, RENAME_EXCHANGE)
        c.expect(os.path.isdir(e1) and os.path.exists(os.path.join(e1, "open-dst")),
                 "RENAME_EXCHANGE of a file and a directory: the directory is not at the file's name")
        same_bytes(c, read_file(ed), d2, "RENAME_EXCHANGE of a file and a directory: file content")
    except OSError as e:
        c.problems.append("renameat2(RENAME_EXCHANGE) of a file and a directory: %s" % e)
    c.errno_of(errno.ENOENT, "renameat2(RENAME_EXCHANGE) with a missing target", renameat2,
               e2, os.path.join(d, "missing"), RENAME_EXCHANGE)
    c.errno_of(errno.EINVAL, "renameat2 with RENAME_NOREPLACE|RENAME_EXCHANGE", renameat2,
               e2, n2, RENAME_NOREPLACE | RENAME_EXCHANGE)
    # rename of a symlink renames the link, not its target
    os.symlink("n2", os.path.join(d, "lnk"))
    os.rename(os.path.join(d, "lnk"), os.path.join(d, "lnk2"))
    c.eq(os.readlink(os.path.join(d, "lnk2")), "n2", "readlink after renaming a symlink")
    c.eq(read_file(n2), b"two", "symlink target after renaming the symlink")


@check
def hard_links(c, d):
    a, b = os.path.join(d, "a"), os.path.join(d, "sub", "b")
    os.mkdir(os.path.join(d, "sub"))
    data = rbytes(11, 100000)
    write_file(a, data)
    os.link(a, b)
    sa, sb = os.stat(a), os.stat(b)
    c.eq((sa.st_nlink, sb.st_nlink), (2, 2), "st_nlink of both names after link")
    c.eq(sa.st_ino, sb.st_ino, "st_ino of two hard links")
    same_bytes(c, read_file(b), data, "content through the new link")
    # writes through one name are seen through the other, also through an fd opened earlier
    afd = os.open(a, os.O_RDONLY)
    fd = os.open(b, os.O_RDWR)
    pwrite_all(fd, b"LINKED", 65530)
    pwrite_all(fd, b"END", len(data))
    os.close(fd)
    want = data[:65530] + b"LINKED" + data[65536:] + b"END"
    same_bytes(c, read_file(a), want, "write through one link read through the other")
    same_bytes(c, pread_all(afd, len(want) + 10, 0), want, "fd opened through the other link sees the write")
    os.close(afd)
    os.truncate(a, 5000)
    c.eq(os.stat(b).st_size, 5000, "truncate through one link: size seen through the other")
    os.link(a, os.path.join(d, "c"))
    c.eq(os.stat(b).st_nlink, 3, "st_nlink after a third link")
    c.errno_of(errno.EEXIST, "link onto an existing name", os.link, a, b)
    c.errno_of(errno.EPERM, "link of a directory", os.link, os.path.join(d, "sub"), os.path.join(d, "dl"))
    c.errno_of(errno.ENOENT, "link of a missing file", os.link, os.path.join(d, "no"), os.path.join(d, "no2"))
    os.unlink(a)
    c.eq(os.stat(b).st_nlink, 2, "st_nlink after unlinking one of three links")
    same_bytes(c, read_file(b), want[:5000], "content of the remaining link after unlink")
    os.unlink(os.path.join(d, "c"))
    c.eq(os.stat(b).st_nlink, 1, "st_nlink of the last link")
    same_bytes(c, read_file(b), want[:5000], "content of the last link")
    # rename one link over the other: both names refer to the same file, nothing happens
    os.link(b, a)
    os.rename(a, b)
    c.expect(os.path.exists(a) and os.path.exists(b),
             "rename of a hard link onto another link of the same file must leave both names")
    c.eq(os.stat(b).st_nlink, 2, "st_nlink after rename between links of the same file")
    # the same while the target is open: still nothing happens, and the open file is untouched
    fd = os.open(b, os.O_RDWR)
    os.rename(a, b)
    c.expect(os.path.exists(a) and os.path.exists(b),
             "rename of a hard link onto an open link of the same file must leave both names")
    c.eq(os.fstat(fd).st_ino, os.stat(a).st_ino, "fstat of the open link after rename between links")
    pwrite_all(fd, b"OPEN", 0)
    c.eq(read_file(a)[:4], b"OPEN", "write through the open link seen through the other name")
    os.close(fd)
    c.eq(after_release(lambda: os.stat(a).st_nlink, 2), 2, "st_nlink after the open link was closed")
    c.eq(after_release(lambda: sorted(os.listdir(d)), ["a", "sub"]), ["a", "sub"],
         "readdir after the open link was closed")
    c.eq(after_release(lambda: sorted(os.listdir(os.path.join(d, "sub"))), ["b"]), ["b"],
         "readdir after the open link was closed")
    # but after the open target was unlinked, a rename of the other link is a real one
    fd = os.open(b, os.O_RDONLY)
    os.unlink(b)
    os.rename(a, b)
    c.expect(not os.path.exists(a) and os.path.exists(b),
             "rename of the last link onto the name of an unlinked open link must move it")
    c.eq(os.fstat(fd).st_ino, os.stat(b).st_ino, "fstat of the unlinked open link after the rename")
    os.close(fd)
    c.eq(after_release(lambda: os.stat(b).st_nlink, 1), 1, "st_nlink of the moved link")
    same_bytes(c, read_file(b)[4:], want[4:5000], "content of the moved link")
    c.eq(sorted(os.listdir(d)), ["sub"], "readdir after the moved link's rename")


@check
def symlinks(c, d):
    t = os.path.join(d, "target")
    write_file(t, b"target data")
    l = os.path.join(d, "link")
    os.symlink("target", l)
    c.eq(os.readlink(l), "target", "readlink")
    lst = os.lstat(l)
    c.expect(stat.S_ISLNK(lst.st_mode), "lstat of a symlink: mode %o is not S_IFLNK" % lst.st_mode)
    c.eq(lst.st_size, len("target"), "st_size of a symlink (length of its target)")
    c.eq(os.stat(l).st_ino, os.stat(t).st_ino, "stat through a symlink reports the target")
    c.eq(read_file(l), b"target data", "read through a symlink")
    # absolute, long and dangling targets
    longt = "/" + "/".join(["component%03d" % i for i in range(300)])  # ~3600 bytes
    os.symlink(longt, os.path.join(d, "long"))
    c.eq(os.readlink(os.path.join(d, "long")), longt, "readlink of a %d-byte target" % len(longt))
    dl = os.path.join(d, "dangling")
    os.symlink("does/not/exist", dl)
    c.eq(os.readlink(dl), "does/not/exist", "readlink of a dangling symlink")
    c.expect(os.path.lexists(dl), "dangling symlink not found by lstat")
    c.errno_of(errno.ENOENT, "stat through a dangling symlink", os.stat, dl)
    c.errno_of(errno.ENOENT, "open through a dangling symlink", os.open, dl, os.O_RDONLY)
    c.errno_of(errno.EINVAL, "readlink of a regular file", os.readlink, t)
    c.errno_of(errno.EEXIST, "symlink onto an existing name", os.symlink, "x", t)
    # a symlink to a directory is traversed
    os.mkdir(os.path.join(d, "dir"))
    write_file(os.path.join(d, "dir", "in"), b"inside")
    os.symlink("dir", os.path.join(d, "dirlink"))
    c.eq(read_file(os.path.join(d, "dirlink", "in")), b"inside", "read through a symlink to a directory")
    # O_CREAT through a dangling symlink creates its target (Linux follows it)
    os.symlink("created-through-link", os.path.join(d, "mk"))
    write_file(os.path.join(d, "mk"), b"via link")
    c.eq(read_file(os.path.join(d, "created-through-link")), b"via link",
         "O_CREAT through a dangling symlink creates the target")
    # O_NOFOLLOW refuses a symlink
    c.errno_of(errno.ELOOP, "open(O_NOFOLLOW) of a symlink", os.open, l, os.O_RDONLY | os.O_NOFOLLOW)
    # a loop
    os.symlink("loop2", os.path.join(d, "loop1"))
    os.symlink("loop1", os.path.join(d, "loop2"))
    c.errno_of(errno.ELOOP, "stat of a symlink loop", os.stat, os.path.join(d, "loop1"))
    os.unlink(l)
    c.eq(read_file(t), b"target data", "target after unlinking the symlink")


@check
def chmod_chown_utimens(c, d):
    f = os.path.join(d, "f")
    write_file(f, b"x" * 1000)
    for mode in (0o640, 0o000, 0o777, 0o4755, 0o2711, 0o1644):
        os.chmod(f, mode)
        c.eq(stat.S_IMODE(os.stat(f).st_mode), mode, "mode after chmod %o" % mode)
    fd = os.open(f, os.O_RDONLY)
    os.fchmod(fd, 0o600)
    c.eq(stat.S_IMODE(os.fstat(fd).st_mode), 0o600, "mode after fchmod 600")
    os.close(fd)
    os.mkdir(os.path.join(d, "dir"))
    os.chmod(os.path.join(d, "dir"), 0o3751)
    c.eq(stat.S_IMODE(os.stat(os.path.join(d, "dir")).st_mode), 0o3751, "mode of a directory after chmod 3751")
    if os.geteuid() == 0:
        os.chown(f, TEST_UID, TEST_GID)
        st = os.stat(f)
        c.eq((st.st_uid, st.st_gid), (TEST_UID, TEST_GID), "owner after chown")
        os.chown(f, -1, OTHER_GID)
        st = os.stat(f)
        c.eq((st.st_uid, st.st_gid), (TEST_UID, OTHER_GID), "owner after chown(-1, gid)")
        os.chown(f, 0, -1)
        st = os.stat(f)
        c.eq((st.st_uid, st.st_gid), (0, OTHER_GID), "owner after chown(uid, -1)")
        os.chmod(f, 0o6755)
        os.chown(f, TEST_UID, -1)
        c.eq(stat.S_IMODE(os.stat(f).st_mode) & 0o6000, 0,
             "chown of a setuid/setgid executable must clear the set-id bits")
        lk = os.path.join(d, "lnk")
        os.symlink("f", lk)
        os.chown(lk, TEST_UID, TEST_GID, follow_symlinks=False)
        lst = os.lstat(lk)
        c.eq((lst.st_uid, lst.st_gid), (TEST_UID, TEST_GID), "owner of a symlink after lchown")
        c.eq(os.stat(f).st_gid, OTHER_GID, "lchown of a symlink must not change its target")
        dd = os.path.join(d, "dir")
        os.chown(dd, TEST_UID, TEST_GID)
        st = os.stat(dd)
        c.eq((st.st_uid, st.st_gid), (TEST_UID, TEST_GID), "owner of a directory after chown")
    # explicit nanosecond timestamps
    at, mt = 1_234_567_890_123_456_789, 1_500_000_000_987_654_321
    os.utime(f, ns=(at, mt))
    st = os.stat(f)
    c.eq((st.st_atime_ns, st.st_mtime_ns), (at, mt), "atime/mtime ns after utimensat")
    # the fs keeps them across a fresh open
    fd = os.open(f, os.O_RDONLY)
    fst = os.fstat(fd)
    os.close(fd)
    c.eq(fst.st_mtime_ns, mt, "mtime ns via fstat")
    # futimens
    fd = os.open(f, os.O_RDWR)
    os.utime(fd, ns=(at + 1, mt + 1))
    c.eq(os.fstat(fd).st_mtime_ns, mt + 1, "mtime ns after futimens")
    os.close(fd)
    # UTIME_OMIT leaves atime alone; UTIME_NOW sets mtime to about now
    utimensat(f, UTIME_OMIT, (1_000_000_000, 5))
    st = os.stat(f)
    c.eq((st.st_atime_ns, st.st_mtime_ns), (at + 1, 1_000_000_000_000_000_005),
         "atime/mtime after utimensat(UTIME_OMIT, t)")
    now = time.time()
    utimensat(f, UTIME_OMIT, UTIME_NOW)
    st = os.stat(f)
    c.expect(abs(st.st_mtime - now) < 10, "mtime after UTIME_NOW is %.0f, now is %.0f" % (st.st_mtime, now))
    c.eq(st.st_atime_ns, at + 1, "atime after utimensat(UTIME_OMIT, UTIME_NOW)")
    os.utime(f, ns=(at, mt))
    os.utime(f)  # both to now
    st = os.stat(f)
    c.expect(abs(st.st_atime - time.time()) < 10 and abs(st.st_mtime - time.time()) < 10,
             "utime(NULL) did not set atime/mtime to now (%.0f, %.0f)" % (st.st_atime, st.st_mtime))
    # timestamps of a symlink itself
    lk2 = os.path.join(d, "lnk2")
    os.symlink("f", lk2)
    os.utime(f, ns=(at, mt))
    os.utime(lk2, ns=(at + 7, mt + 7), follow_symlinks=False)
    c.eq(os.lstat(lk2).st_mtime_ns, mt + 7, "mtime of a symlink after lutimes")
    c.eq(os.stat(f).st_mtime_ns, mt, "lutimes of a symlink must not change its target")
    # a directory
    os.utime(os.path.join(d, "dir"), ns=(at, mt))
    c.eq(os.stat(os.path.join(d, "dir")).st_mtime_ns, mt, "mtime ns of a directory after utimensat")
    # writes and truncates update mtime and ctime; chmod updates ctime
    os.utime(f, ns=(at, mt))
    ct0 = os.stat(f).st_ctime_ns
    time.sleep(0.02)
    fd = os.open(f, os.O_WRONLY)
    os.write(fd, b"y")
    os.close(fd)
    st = os.stat(f)
    c.expect(st.st_mtime_ns > mt, "mtime not updated by a write (still %d)" % st.st_mtime_ns)
    os.utime(f, ns=(at, mt))
    os.truncate(f, 10)
    c.expect(os.stat(f).st_mtime_ns > mt, "mtime not updated by truncate")
    ct1 = os.stat(f).st_ctime_ns
    time.sleep(0.02)
    os.chmod(f, 0o644)
    c.expect(os.stat(f).st_ctime_ns > ct1, "ctime not updated by chmod")
    c.expect(ct1 > ct0, "ctime not updated by write/truncate/utime")
    # creating an entry updates the directory's mtime
    dd = os.path.join(d, "dir")
    os.utime(dd, ns=(at, mt))
    write_file(os.path.join(dd, "new"), b"")
    c.expect(os.stat(dd).st_mtime_ns > mt, "directory mtime not updated by creating an entry in it")
    os.utime(dd, ns=(at, mt))
    os.unlink(os.path.join(dd, "new"))
    c.expect(os.stat(dd).st_mtime_ns > mt, "directory mtime not updated by unlinking an entry in it")


@check
def mknod_fifo(c, d):
    p = os.path.join(d, "fifo")
    os.mkfifo(p, 0o600)
    st = os.lstat(p)
    c.expect(stat.S_ISFIFO(st.st_mode), "mkfifo: mode %o is not S_IFIFO" % st.st_mode)
    c.eq(stat.S_IMODE(st.st_mode) & 0o777, 0o600 & ~current_umask(), "mode of a FIFO")
    try:
        r = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        w = os.open(p, os.O_WRONLY | os.O_NONBLOCK)
        os.write(w, b"through the fifo")
        c.eq(os.read(r, 100), b"through the fifo", "data through the FIFO")
        os.close(w)
        os.close(r)
    except OSError as e:
        c.problems.append("open/read/write of a FIFO: %s" % e)
    q = os.path.join(d, "fifo2")
    os.mknod(q, stat.S_IFIFO | 0o640)
    c.expect(stat.S_ISFIFO(os.lstat(q).st_mode), "mknod(S_IFIFO): not a FIFO")
    c.expect("fifo2" in os.listdir(d), "FIFO missing from readdir")
    os.rename(q, os.path.join(d, "fifo3"))
    c.expect(stat.S_ISFIFO(os.lstat(os.path.join(d, "fifo3")).st_mode), "renamed FIFO is not a FIFO")
    os.unlink(os.path.join(d, "fifo3"))
    c.expect(not os.path.lexists(q), "FIFO still exists after unlink")
    c.errno_of(errno.EEXIST, "mkfifo onto an existing name", os.mkfifo, p)
    # mknod(S_IFREG) makes an ordinary, usable regular file
    r = os.path.join(d, "regular")
    try:
        os.mknod(r, stat.S_IFREG | 0o644)
        c.expect(stat.S_ISREG(os.lstat(r).st_mode), "mknod(S_IFREG) did not make a regular file")
        c.eq(os.stat(r).st_size, 0, "size of a file made by mknod(S_IFREG)")
        data = rbytes(12, 150000)
        write_file(r, data)
        same_bytes(c, read_file(r), data, "content of a file made by mknod(S_IFREG)")
    except OSError as e:
        c.problems.append("mknod(S_IFREG) and use: %s" % e)


def current_umask():
    m = os.umask(0)
    os.umask(m)
    return m


@check
def xattrs(c, d):
    f = os.path.join(d, "f")
    data = rbytes(13, 100000)
    write_file(f, data)
    sub = os.path.join(d, "sub")
    os.mkdir(sub)

    def user_names(p):
        return sorted(n for n in os.listxattr(p, follow_symlinks=False) if n.startswith("user."))

    for p in (f, sub):
        internal = [n for n in os.listxattr(p) if "raidfs" in n.lower()]
        c.eq(internal, [], "listxattr of a fresh %s shows internal attributes" % os.path.basename(p))
        c.eq(user_names(p), [], "user xattrs of a fresh %s" % os.path.basename(p))
        os.setxattr(p, "user.test", b"value")
        c.eq(os.getxattr(p, "user.test"), b"value", "getxattr after setxattr")
        big = bytes(range(256)) * 12  # 3072 bytes, NULs included
        os.setxattr(p, "user.binary", big)
        c.eq(os.getxattr(p, "user.binary"), big, "getxattr of a 3072-byte binary value")
        os.setxattr(p, "user.empty", b"")
        c.eq(os.getxattr(p, "user.empty"), b"", "getxattr of an empty value")
        c.eq(user_names(p), ["user.binary", "user.empty", "user.test"], "listxattr")
        internal = [n for n in os.listxattr(p) if "raidfs" in n.lower()]
        c.eq(internal, [], "listxattr shows internal attributes")
        os.setxattr(p, "user.test", b"replaced", os.XATTR_REPLACE)
        c.eq(os.getxattr(p, "user.test"), b"replaced", "getxattr after XATTR_REPLACE")
        c.errno_of(errno.EEXIST, "setxattr(XATTR_CREATE) of an existing name", os.setxattr,
                   p, "user.test", b"x", os.XATTR_CREATE)
        c.errno_of(errno.ENODATA, "setxattr(XATTR_REPLACE) of a missing name", os.setxattr,
                   p, "user.missing", b"x", os.XATTR_REPLACE)
        c.errno_of(errno.ENODATA, "getxattr of a missing name", os.getxattr, p, "user.missing")
        os.removexattr(p, "user.test")
        c.errno_of(errno.ENODATA, "getxattr after removexattr", os.getxattr, p, "user.test")
        c.errno_of(errno.ENODATA, "removexattr of a missing name", os.removexattr, p, "user.test")
        c.eq(user_names(p), ["user.binary", "user.empty"], "listxattr after removexattr")
        # the size-probe form of getxattr/listxattr (buffer size 0) as C programs use it
        n = libc.getxattr(os.fsencode(p), b"user.binary", None, ctypes.c_size_t(0))
        c.eq(n, len(big), "getxattr(size 0) returns the value size")
        n = libc.listxattr(os.fsencode(p), None, ctypes.c_size_t(0))
        want = sum(len(x) + 1 for x in os.listxattr(p))
        c.eq(n, want, "listxattr(size 0) returns the list size")
        buf = ctypes.create_string_buffer(4)
        n = libc.getxattr(os.fsencode(p), b"user.binary", buf, ctypes.c_size_t(4))
        c.eq((n, ctypes.get_errno() if n < 0 else 0), (-1, errno.ERANGE), "getxattr into a too small buffer")
    # the file data is untouched by xattr traffic
    same_bytes(c, read_file(f), data, "file content after xattr operations")
    # xattrs follow renames and are kept across hard links
    os.rename(f, os.path.join(d, "g"))
    c.eq(os.getxattr(os.path.join(d, "g"), "user.empty"), b"", "xattr after rename")
    # an xattr whose name looks like raidfs's own must not damage the file
    g = os.path.join(d, "g")
    for name in ("user.raidfs.meta", "user.raidfs", "user.raidfs.x"):
        try:
            os.setxattr(g, name, b"\x00garbage\xff" * 8)
            stored = True
        except OSError:
            stored = False
        if stored:
            try:
                c.eq(os.getxattr(g, name), b"\x00garbage\xff" * 8, "getxattr of user-set %s" % name)
            except OSError as e:
                c.problems.append("getxattr of user-set %s: %s" % (name, e))
        c.eq(os.stat(g).st_size, len(data), "size after setxattr %s" % name)
        same_bytes(c, read_file(g), data, "content after setxattr %s" % name)
        if stored:
            os.removexattr(g, name)
        same_bytes(c, read_file(g), data, "content after removexattr %s" % name)
    c.eq(os.stat(g).st_size, len(data), "size after the raidfs-lookalike xattrs")
    # xattrs on a symlink: user.* is not allowed there on Linux
    os.symlink("g", os.path.join(d, "lnk"))
    c.errno_of(errno.EPERM, "setxattr user.* on a symlink", os.setxattr, os.path.join(d, "lnk"),
               "user.x", b"1", 0, follow_symlinks=False)
    c.errno_of(errno.ENOENT, "getxattr of a missing file", os.getxattr, os.path.join(d, "nope"), "user.x")


@check
def statfs(c, d):
    s = os.statvfs(d)
    c.expect(s.f_bsize > 0 and s.f_frsize > 0, "f_bsize %d / f_frsize %d not positive" % (s.f_bsize, s.f_frsize))
    c.expect(s.f_blocks > 0, "f_blocks is %d" % s.f_blocks)
    c.expect(s.f_bavail > 0, "f_bavail is %d" % s.f_bavail)
    c.expect(s.f_bfree >= s.f_bavail, "f_bfree %d < f_bavail %d" % (s.f_bfree, s.f_bavail))
    c.expect(s.f_blocks >= s.f_bfree, "f_blocks %d < f_bfree %d" % (s.f_blocks, s.f_bfree))
    total = s.f_blocks * s.f_frsize
    c.expect(1 * MiB <= total < (1 << 62), "total size %d bytes is not sane" % total)
    c.expect(s.f_namemax >= 255, "f_namemax is %d (names of 255 bytes must work)" % s.f_namemax)
    c.expect(s.f_files == 0 or s.f_files >= s.f_ffree, "f_files %d < f_ffree %d" % (s.f_files, s.f_ffree))
    # statfs through a file descriptor agrees
    fd = os.open(d, os.O_RDONLY)
    s2 = os.fstatvfs(fd)
    os.close(fd)
    c.eq((s2.f_blocks, s2.f_frsize), (s.f_blocks, s.f_frsize), "fstatvfs vs statvfs (f_blocks, f_frsize)")


@check
def o_append(c, d):
    f = os.path.join(d, "f")
    write_file(f, b"start")
    a = os.open(f, os.O_WRONLY | os.O_APPEND)
    o = os.open(f, os.O_RDWR)
    os.write(a, b"-one")
    c.eq(read_file(f), b"start-one", "O_APPEND write at the end")
    pwrite_all(o, b"X" * 100, 0)  # another descriptor grows the file to 100
    os.write(a, b"-two")
    c.eq(read_file(f), b"X" * 100 + b"-two", "O_APPEND write after another fd grew the file")
    os.ftruncate(o, 10)
    os.write(a, b"-three")
    c.eq(read_file(f), b"X" * 10 + b"-three", "O_APPEND write after another fd truncated the file")
    big = rbytes(14, 200000)
    os.write(a, big)
    c.eq(os.fstat(a).st_size, 16 + len(big), "size after a large O_APPEND write")
    same_bytes(c, read_file(f), b"X" * 10 + b"-three" + big, "content after a large O_APPEND write")
    os.close(a)
    os.close(o)
    # concurrent appenders: every record lands whole, none lost
    g = os.path.join(d, "g")
    write_file(g, b"")
    rec, nrec, nthr = 1000, 150, 4

    def appender(t):
        fd = os.open(g, os.O_WRONLY | os.O_APPEND)
        for i in range(nrec):
            body = ("T%d R%05d " % (t, i)).encode()
            os.write(fd, body + bytes([65 + t]) * (rec - len(body) - 1) + b"\n")
        os.close(fd)

    ths = [threading.Thread(target=appender, args=(t,)) for t in range(nthr)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    got = read_file(g)
    c.eq(len(got), rec * nrec * nthr, "size after %d threads appended %d records each" % (nthr, nrec))
    seen = [[] for _ in range(nthr)]
    bad = 0
    for k in range(len(got) // rec):
        r = got[k * rec:(k + 1) * rec]
        try:
            t = int(r[1:2])
            i = int(r[4:9])
            body = ("T%d R%05d " % (t, i)).encode()
            ok = r == body + bytes([65 + t]) * (rec - len(body) - 1) + b"\n"
        except ValueError:
            ok = False
        if not ok:
            bad += 1
        else:
            seen[t].append(i)
    c.eq(bad, 0, "torn or interleaved records after concurrent O_APPEND writes")
    for t in range(nthr):
        if not c.eq(seen[t], list(range(nrec)), "records of appender %d in order" % t):
            break


@check
def sparse_large(c, d):
    f = os.path.join(d, "sparse")
    fd = os.open(f, os.O_CREAT | os.O_RDWR, 0o644)
    off = 5 * GiB
    pwrite_all(fd, b"Q", off)
    c.eq(os.fstat(fd).st_size, off + 1, "size after writing 1 byte at 5 GiB")
    c.eq(os.pread(fd, 10, off), b"Q", "the byte at 5 GiB")
    same_bytes(c, pread_all(fd, 256 * KiB, 0), bytes(256 * KiB), "zeros at the start of the hole")
    same_bytes(c, pread_all(fd, 1 * MiB, 4 * GiB - 512 * KiB), bytes(1 * MiB), "zeros around 4 GiB")
    same_bytes(c, pread_all(fd, 300001, off - 300000), bytes(300000) + b"Q", "zeros just before 5 GiB")
    # a write straddling the 4 GiB boundary
    pwrite_all(fd, b"ABCDEFGH", 4 * GiB - 4)
    c.eq(pread_all(fd, 16, 4 * GiB - 8), bytes(4) + b"ABCDEFGH" + bytes(4), "write straddling 4 GiB")
    data = rbytes(15, 300000)
    pwrite_all(fd, data, 4 * GiB + 12345)
    same_bytes(c, pread_all(fd, len(data), 4 * GiB + 12345), data, "300 KB written just above 4 GiB")
    st = os.fstat(fd)
    c.expect(st.st_blocks * 512 < 256 * MiB,
             "a 5 GiB file holding 300 KB uses %d MiB (not sparse)" % (st.st_blocks * 512 // MiB))
    c.eq(os.lseek(fd, 0, os.SEEK_END), off + 1, "lseek(SEEK_END) of a 5 GiB file")
    os.close(fd)
    c.eq(os.stat(f).st_size, off + 1, "stat size of a 5 GiB file")
    # truncate-grow beyond 4 GiB, then shrink below it
    g = os.path.join(d, "grown")
    write_file(g, b"head")
    os.truncate(g, 6 * GiB)
    c.eq(os.stat(g).st_size, 6 * GiB, "size after truncate to 6 GiB")
    fd = os.open(g, os.O_RDONLY)
    c.eq(pread_all(fd, 8, 0), b"head" + bytes(4), "start of a file grown to 6 GiB")
    same_bytes(c, pread_all(fd, 64 * KiB, int(5.5 * GiB)), bytes(64 * KiB), "zeros at 5.5 GiB")
    os.close(fd)
    os.truncate(f, 4 * GiB - 2)
    c.eq(os.stat(f).st_size, 4 * GiB - 2, "size after shrinking a 5 GiB file below 4 GiB")
    c.eq(read_range(f, 4 * GiB - 6, 10), bytes(2) + b"AB", "tail after shrinking below 4 GiB")
    os.truncate(f, 5 * GiB)
    c.eq(read_range(f, 4 * GiB - 6, 10), bytes(2) + b"AB" + bytes(6), "regrown tail reads zeros")
    os.unlink(f)
    os.unlink(g)


def read_range(p, off, n):
    fd = os.open(p, os.O_RDONLY)
    try:
        return pread_all(fd, n, off)
    finally:
        os.close(fd)


@check
def concurrency(c, d):
    shared = os.path.join(d, "shared")
    nthr, bs, nblk = 4, 12 * KiB + 512, 256  # blocks straddle chunk boundaries
    os.close(os.open(shared, os.O_CREAT | os.O_WRONLY, 0o644))
    stable = os.path.join(d, "stable")
    stable_data = rbytes(16, 2 * MiB + 333)
    write_file(stable, stable_data)
    errors = []
    stop = threading.Event()

    def block(k):
        return random.Random(1000 + k).randbytes(bs)

    def writer(t):
        try:
            fd = os.open(shared, os.O_WRONLY)
            ks = [k for k in range(nblk) if k % nthr == t]
            random.Random(t).shuffle(ks)
            for k in ks:
                pwrite_all(fd, block(k), k * bs)
            os.close(fd)
            # and a file of its own, in random-size pieces
            own = os.path.join(d, "own%d" % t)
            data = rbytes(2000 + t, 1 * MiB + t * 777)
            fd = os.open(own, os.O_CREAT | os.O_WRONLY, 0o644)
            rng = random.Random(t)
            pos = 0
            while pos < len(data):
                n = rng.randrange(1, 90000)
                pwrite_all(fd, data[pos:pos + n], pos)
                pos += n
            os.close(fd)
        except Exception as e:  # reported below
            errors.append("writer %d: %r" % (t, e))

    def reader(t):
        try:
            rng = random.Random(100 + t)
            fd = os.open(stable, os.O_RDONLY)
            n = 0
            while not stop.is_set() or n < 20:
                off = rng.randrange(0, len(stable_data))
                ln = rng.randrange(1, 200000)
                got = pread_all(fd, ln, off)
                if got != stable_data[off:off + ln]:
                    errors.append("reader %d: wrong data at %d+%d while writers ran" % (t, off, ln))
                    break
                n += 1
            os.close(fd)
        except Exception as e:
            errors.append("reader %d: %r" % (t, e))

    rs = [threading.Thread(target=reader, args=(t,)) for t in range(2)]
    ws = [threading.Thread(target=writer, args=(t,)) for t in range(nthr)]
    for t in rs + ws:
        t.start()
    for t in ws:
        t.join()
    stop.set()
    for t in rs:
        t.join()
    for e in errors:
        c.problems.append(e)
    want = b"".join(block(k) for k in range(nblk))
    same_bytes(c, read_file(shared), want, "file written by %d threads in interleaved blocks" % nthr)
    for t in range(nthr):
        same_bytes(c, read_file(os.path.join(d, "own%d" % t)), rbytes(2000 + t, 1 * MiB + t * 777),
                   "file written by thread %d" % t)
    # readers and writers on the same file at once: each reader sees either old or new
    # content for a block written in one pwrite (no torn stripes mixed with garbage)
    mixed = os.path.join(d, "mixed")
    old = bytes([0x11]) * (64 * KiB) * 16
    write_file(mixed, old)
    errors.clear()
    stop.clear()

    def rw_writer():
        try:
            fd = os.open(mixed, os.O_WRONLY)
            for k in range(16):
                pwrite_all(fd, bytes([0x22]) * (64 * KiB), k * 64 * KiB)
            os.close(fd)
        except Exception as e:
            errors.append("same-file writer: %r" % e)

    def rw_reader():
        try:
            fd = os.open(mixed, os.O_RDONLY)
            while not stop.is_set():
                got = pread_all(fd, 64 * KiB * 16, 0)
                if len(got) != len(old) or set(got) - {0x11, 0x22}:
                    errors.append("same-file reader: bytes other than old/new seen while a writer ran")
                    break
            os.close(fd)
        except Exception as e:
            errors.append("same-file reader: %r" % e)

    rt = [threading.Thread(target=rw_reader) for _ in range(2)]
    wt = threading.Thread(target=rw_writer)
    for t in rt:
        t.start()
    wt.start()
    wt.join()
    stop.set()
    for t in rt:
        t.join()
    for e in errors:
        c.problems.append(e)
    c.eq(read_file(mixed), bytes([0x22]) * (64 * KiB) * 16, "file after concurrent reader and writer")


@check
def mmap_io(c, d):
    f = os.path.join(d, "f")
    data = rbytes(17, 200000)
    write_file(f, data)
    fd = os.open(f, os.O_RDWR)
    try:
        m = mmap.mmap(fd, len(data), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    except OSError as e:
        os.close(fd)
        c.fatal("mmap(MAP_SHARED, read/write): %s" % e)
    same_bytes(c, m[:], data, "content read through mmap")
    m[70000:70005] = b"MMAPW"
    m.flush()
    m.close()
    os.close(fd)
    same_bytes(c, read_file(f), data[:70000] + b"MMAPW" + data[70005:], "write through a shared mapping")


@check
def direct_and_buffered(c, d):
    """O_DIRECT and buffered descriptors of one file see each other's
    writes at once, in both directions (raidfs gives O_DIRECT opens a
    direct-I/O handle, which bypasses the kernel page cache)."""
    f = os.path.join(d, "f")
    size = 256 * 4096
    ref = bytearray(rbytes(23, size))
    write_file(f, bytes(ref))
    dfd = os.open(f, os.O_RDWR | os.O_DIRECT)
    bfd = os.open(f, os.O_RDWR)
    buf = mmap.mmap(-1, 4096)       # O_DIRECT needs an aligned buffer
    rnd = random.Random(5)
    stale = 0
    try:
        for i in range(1500):
            off = rnd.randrange(256) * 4096
            pread_all(bfd, 4096, off)   # get the page into the page cache
            pat = bytes([rnd.randrange(256)]) * 4096
            if i % 2:
                buf.seek(0)
                buf.write(pat)
                c.eq(os.pwritev(dfd, [buf], off), 4096, "O_DIRECT write")
                got = pread_all(bfd, 4096, off)
            else:
                pwrite_all(bfd, pat, off)
                got = os.preadv(dfd, [buf], off) and bytes(buf[:4096])
            ref[off:off + 4096] = pat
            if got != pat:
                stale += 1
    finally:
        os.close(dfd)
        os.close(bfd)
        buf.close()
    c.eq(stale, 0, "reads that missed the other descriptor's write (of 1500)")
    same_bytes(c, read_file(f), bytes(ref), "file after mixed O_DIRECT and buffered writes")


@check
def errors(c, d):
    f = os.path.join(d, "f")
    write_file(f, b"exists")
    c.errno_of(errno.EEXIST, "open(O_CREAT|O_EXCL) of an existing file", os.open,
               f, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    c.errno_of(errno.EEXIST, "open(O_CREAT|O_EXCL) of an existing directory", os.open,
               d, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    c.eq(read_file(f), b"exists", "content after a refused O_EXCL create")
    fd = os.open(os.path.join(d, "excl"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    os.close(fd)
    c.errno_of(errno.ENOENT, "open of a missing file", os.open, os.path.join(d, "missing"), os.O_RDONLY)
    c.errno_of(errno.ENOENT, "open(O_CREAT) in a missing directory", os.open,
               os.path.join(d, "nodir", "f"), os.O_CREAT | os.O_WRONLY, 0o644)
    fd = os.open(f, os.O_RDONLY)
    c.errno_of(errno.EBADF, "write to a read-only descriptor", os.write, fd, b"no")
    os.close(fd)
    fd = os.open(f, os.O_WRONLY)
    c.errno_of(errno.EBADF, "read from a write-only descriptor", os.read, fd, 10)
    os.close(fd)
    c.eq(read_file(f), b"exists", "content after refused writes")
    c.errno_of(errno.EISDIR, "open of a directory for writing", os.open, d, os.O_WRONLY)
    c.errno_of(errno.ENOTDIR, "open(O_DIRECTORY) of a file", os.open, f, os.O_RDONLY | os.O_DIRECTORY)
    c.errno_of(errno.ENOTDIR, "listdir of a file", os.listdir, f)
    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    c.errno_of(errno.EISDIR, "read of a directory descriptor", os.read, dfd, 10)
    os.close(dfd)
    c.errno_of(errno.ENAMETOOLONG, "open of a 300-byte name", os.open, os.path.join(d, "n" * 300), os.O_RDONLY)


# --------------------------------------------------------------------------
# --uid-tests: ownership and permission checks as an unprivileged user
# --------------------------------------------------------------------------

def as_user(fn, uid=TEST_UID, gid=TEST_GID, groups=()):
    """Run fn() in a forked child with the given identity; fn returns a list
    of problems. Returns that list (or the child's crash)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setgroups(list(groups))
            os.setgid(gid)
            os.setuid(uid)
            os.umask(0o022)
            out = fn()
        except BaseException as e:
            out = ["child (uid %d) stopped by an unexpected error: %s%s" % (uid, e, where())]
        os.write(w, json.dumps(out).encode())
        os.close(w)
        os._exit(0)
    os.close(w)
    buf = b""
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        buf += b
    os.close(r)
    os.waitpid(pid, 0)
    try:
        return json.loads(buf.decode())
    except ValueError:
        return ["child returned no result"]


@check
def uid_ownership(c, d):
    if not UID_TESTS:
        return "skipped (needs --uid-tests)"
    os.chmod(d, 0o1777)
    # a setgid directory owned by group OTHER_GID
    sg = os.path.join(d, "setgid")
    os.mkdir(sg)
    os.chown(sg, 0, OTHER_GID)
    os.chmod(sg, 0o2777)

    def child():
        cc = Ctx("child")
        f = os.path.join(d, "ufile")
        write_file(f, b"user data")
        st = os.stat(f)
        cc.eq((st.st_uid, st.st_gid), (TEST_UID, TEST_GID), "owner of a file created by uid %d" % TEST_UID)
        cc.eq(stat.S_IMODE(st.st_mode), 0o644, "mode of a file created by the user (umask 022)")
        cc.eq(read_file(f), b"user data", "user reads back own file")
        os.mkdir(os.path.join(d, "udir"))
        st = os.stat(os.path.join(d, "udir"))
        cc.eq((st.st_uid, st.st_gid), (TEST_UID, TEST_GID), "owner of a directory created by the user")
        os.symlink("ufile", os.path.join(d, "ulink"))
        st = os.lstat(os.path.join(d, "ulink"))
        cc.eq((st.st_uid, st.st_gid), (TEST_UID, TEST_GID), "owner of a symlink created by the user")
        os.mkfifo(os.path.join(d, "ufifo"), 0o644)
        st = os.lstat(os.path.join(d, "ufifo"))
        cc.eq((st.st_uid, st.st_gid), (TEST_UID, TEST_GID), "owner of a FIFO created by the user")
        os.mknod(os.path.join(d, "unod"), stat.S_IFREG | 0o644)
        st = os.lstat(os.path.join(d, "unod"))
        cc.eq((st.st_uid, st.st_gid), (TEST_UID, TEST_GID), "owner of a file made by mknod by the user")
        sf = os.path.join(sg, "insetgid")
        write_file(sf, b"x")
        cc.eq(os.stat(sf).st_gid, OTHER_GID, "group of a file created in a setgid directory")
        os.mkdir(os.path.join(sg, "subdir"))
        st = os.stat(os.path.join(sg, "subdir"))
        cc.eq(st.st_gid, OTHER_GID, "group of a directory created in a setgid directory")
        cc.expect(st.st_mode & stat.S_ISGID, "a directory created in a setgid directory lacks the setgid bit")
        # the user may chmod and utime their own file, and chgrp it to a group they are in
        os.chmod(f, 0o600)
        cc.eq(stat.S_IMODE(os.stat(f).st_mode), 0o600, "user chmod of own file")
        os.utime(f, ns=(1_000_000_000_000_000_001, 1_000_000_000_000_000_002))
        cc.eq(os.stat(f).st_mtime_ns, 1_000_000_000_000_000_002, "user sets times on own file")
        # renaming and linking keep ownership
        os.rename(f, os.path.join(d, "ufile2"))
        cc.eq(os.stat(os.path.join(d, "ufile2")).st_uid, TEST_UID, "owner after rename")
        os.link(os.path.join(d, "ufile2"), os.path.join(d, "ufile3"))
        cc.eq(os.stat(os.path.join(d, "ufile3")).st_uid, TEST_UID, "owner through a hard link")
        return cc.problems

    c.problems += as_user(child)
    st = os.stat(os.path.join(d, "ufile2"))
    c.eq((st.st_uid, st.st_gid), (TEST_UID, TEST_GID), "owner of the user's file seen by root")


@check
def uid_permissions(c, d):
    if not UID_TESTS:
        return "skipped (needs --uid-tests)"
    os.chmod(d, 0o1777)
    secret = os.path.join(d, "secret")
    write_file(secret, b"root only")
    os.chmod(secret, 0o600)
    grp = os.path.join(d, "grp")
    write_file(grp, b"group readable")
    os.chown(grp, 0, OTHER_GID)
    os.chmod(grp, 0o640)
    priv = os.path.join(d, "private")
    os.mkdir(priv)
    os.chmod(priv, 0o700)
    write_file(os.path.join(priv, "inside"), b"x")
    ro = os.path.join(d, "rodir")
    os.mkdir(ro)
    os.chmod(ro, 0o755)
    rootfile = os.path.join(d, "rootfile")  # root's file in the sticky directory
    write_file(rootfile, b"mine")
    os.chmod(rootfile, 0o666)
    noexec = os.path.join(d, "noexec")
    os.mkdir(noexec)
    write_file(os.path.join(noexec, "f"), b"x")
    os.chmod(noexec, 0o766)

    def child():
        cc = Ctx("child")
        cc.errno_of(errno.EACCES, "user opens root's 0600 file for reading", os.open, secret, os.O_RDONLY)
        cc.errno_of(errno.EACCES, "user opens root's 0600 file for writing", os.open, secret, os.O_WRONLY)
        cc.errno_of(errno.EACCES, "user truncates root's 0600 file", os.truncate, secret, 0)
        cc.errno_of(errno.EPERM, "user chmods root's file", os.chmod, secret, 0o666)
        cc.errno_of(errno.EPERM, "user chowns root's file to self", os.chown, secret, TEST_UID, TEST_GID)
        cc.errno_of(errno.EPERM, "user sets explicit times on root's file", os.utime, secret,
                    ns=(1, 2))
        cc.errno_of((errno.EACCES, errno.EPERM), "user sets times to now on root's 0600 file", os.utime, secret)
        cc.errno_of((errno.EACCES, errno.EPERM), "user sets a user xattr on root's 0600 file",
                    os.setxattr, secret, "user.x", b"1")
        cc.errno_of(errno.EACCES, "user lists root's 0700 directory", os.listdir, priv)
        cc.errno_of(errno.EACCES, "user stats a file inside root's 0700 directory", os.stat,
                    os.path.join(priv, "inside"))
        cc.errno_of(errno.EACCES, "user creates a file in root's 0755 directory", os.open,
                    os.path.join(ro, "new"), os.O_CREAT | os.O_WRONLY, 0o644)
        cc.errno_of(errno.EACCES, "user makes a directory in root's 0755 directory", os.mkdir,
                    os.path.join(ro, "new"))
        cc.errno_of(errno.EACCES, "user opens a file under a directory without x permission", os.open,
                    os.path.join(noexec, "f"), os.O_RDONLY)
        cc.errno_of((errno.EPERM, errno.EACCES), "user unlinks root's file in a sticky directory",
                    os.unlink, rootfile)
        cc.errno_of((errno.EPERM, errno.EACCES), "user renames root's file in a sticky directory",
                    os.rename, rootfile, os.path.join(d, "stolen"))
        # 0666 root file: the user may write it
        try:
            fd = os.open(rootfile, os.O_WRONLY)
            os.write(fd, b"MINE")
            os.close(fd)
        except OSError as e:
            cc.problems.append("user writes root's 0666 file: %s" % e)
        # group permission without membership
        cc.errno_of(errno.EACCES, "user outside the group reads a 0640 file", os.open, grp, os.O_RDONLY)
        return cc.problems

    c.problems += as_user(child)
    c.eq(read_file(secret), b"root only", "root's 0600 file after the user's attempts")
    c.eq(stat.S_IMODE(os.stat(secret).st_mode), 0o600, "mode of root's file after the user's chmod attempt")
    c.eq(read_file(rootfile), b"MINE", "root's 0666 file written by the user")

    def member():
        cc = Ctx("member")
        try:
            cc.eq(read_file(grp), b"group readable", "group member reads a 0640 file")
        except OSError as e:
            cc.problems.append("supplementary group member reads a 0640 file: %s" % e)
        cc.errno_of(errno.EACCES, "group member opens a 0640 file for writing", os.open, grp, os.O_WRONLY)
        return cc.problems

    c.problems += as_user(member, groups=(OTHER_GID,))


@check
def uid_setid_cleared_by_write(c, d):
    """A write by a user without CAP_FSETID clears set-user-ID (and
    set-group-ID with group execute), through the page cache and through
    O_DIRECT alike."""
    if not UID_TESTS:
        return "skipped (needs --uid-tests)"
    files = {}
    for name, flags in (("buffered", 0), ("direct", os.O_DIRECT)):
        f = os.path.join(d, name)
        write_file(f, b"\0" * 8192)
        os.chmod(f, 0o6777)
        files[name] = (f, flags)

    def child():
        cc = Ctx("child")
        buf = mmap.mmap(-1, 4096)
        buf.write(b"u" * 4096)
        for name, (f, flags) in files.items():
            fd = os.open(f, os.O_WRONLY | flags)
            os.pwritev(fd, [buf], 4096)
            os.close(fd)
        return cc.problems

    c.problems += as_user(child)
    for name, (f, flags) in files.items():
        c.eq(stat.S_IMODE(os.stat(f).st_mode), 0o777, "mode after a %s write by uid %d" % (name, TEST_UID))
        c.eq(read_file(f)[4096:], b"u" * 4096, "data of the %s write by uid %d" % (name, TEST_UID))


# --------------------------------------------------------------------------

UID_TESTS = False


def main(argv):
    global UID_TESTS
    args = argv[1:]
    only = None
    keep = False
    target = None
    while args:
        a = args.pop(0)
        if a == "--uid-tests":
            UID_TESTS = True
        elif a == "--keep":
            keep = True
        elif a == "--list":
            for fn in CHECKS:
                print(fn.__name__)
            return 0
        elif a == "--only" and args:
            only = args.pop(0).split(",")
        elif a.startswith("-"):
            sys.stderr.write("posix_check: unknown option '%s' (see the usage at the top of %s)\n" % (a, argv[0]))
            return 2
        elif target is None:
            target = a
        else:
            sys.stderr.write("posix_check: more than one directory given ('%s'); give one\n" % a)
            return 2
    if target is None:
        sys.stderr.write("usage: posix_check.py [--uid-tests] [--only NAME,...] [--list] [--keep] DIR\n")
        return 2
    if not os.path.isdir(target):
        sys.stderr.write("posix_check: '%s' is not a directory; give the directory to test\n" % target)
        return 2
    if UID_TESTS and os.geteuid() != 0:
        sys.stderr.write("posix_check: --uid-tests needs root (it switches to uid %d); run as root\n" % TEST_UID)
        return 2
    known = {fn.__name__ for fn in CHECKS}
    if only:
        bad = [n for n in only if n not in known]
        if bad:
            sys.stderr.write("posix_check: unknown check '%s' (see --list)\n" % bad[0])
            return 2
    os.umask(0o022)
    base = os.path.join(os.path.abspath(target), "posix_check.%d" % os.getpid())
    os.mkdir(base)
    os.chmod(base, 0o755)
    failed = []
    for fn in CHECKS:
        name = fn.__name__
        if only and name not in only:
            continue
        d = os.path.join(base, name)
        c = Ctx(name)
        t0 = time.monotonic()
        note = None
        try:
            os.mkdir(d)
            note = fn(c, d)
        except CheckFailed:
            pass
        except OSError as e:
            c.problems.append("stopped by an unexpected error: %s%s" % (e, where()))
        except Exception:
            c.problems.append("exception: " + traceback.format_exc().strip().replace("\n", "\n    "))
        dt = time.monotonic() - t0
        if c.problems:
            failed.append(name)
            print("FAIL %s (%.1fs):" % (name, dt))
            for p in c.problems:
                print("    " + p)
        else:
            print("ok   %s (%.1fs)%s" % (name, dt, " " + note if note else ""))
        sys.stdout.flush()
    if not keep:
        try:
            shutil.rmtree(base)
            if os.path.lexists(base):
                raise OSError(errno.ENOTEMPTY, "still exists", base)
            print("ok   cleanup (rm -rf of the scratch tree)")
        except OSError as e:
            failed.append("cleanup")
            print("FAIL cleanup: removing %s: %s" % (base, e))
    if failed:
        print("posix_check: %d check(s) failed in %s: %s" % (len(failed), target, " ".join(failed)))
        return 1
    print("posix_check: all checks passed in %s" % target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
