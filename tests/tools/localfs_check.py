#!/usr/bin/env python3
"""localfs_check.py - calls a local filesystem takes, checked on a mount.

Usage: localfs_check.py fallocate FILE MODEL   ops on FILE, compared with a
                                               model after each; the model's
                                               bytes saved to MODEL
       localfs_check.py seek DIR               SEEK_DATA/SEEK_HOLE of a
                                               sparse file
       localfs_check.py copy DIR               copy_file_range
       localfs_check.py ioctl DIR              FS_IOC_GETFLAGS and others

Each prints what it checked; exit 1 with the first difference.
"""
import ctypes
import errno
import fcntl
import os
import random
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from posix_check import pread_all  # noqa: E402

KEEP, PUNCH, COLLAPSE, ZERO, INSERT = 0x01, 0x02, 0x08, 0x10, 0x20
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]


def fallocate(fd, mode, off, n):
    if libc.fallocate(fd, mode, off, n) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def read_all(fd):
    return pread_all(fd, os.fstat(fd).st_size, 0)


def compare(fd, model, what):
    got = read_all(fd)
    if os.fstat(fd).st_size != len(model):
        fail("%s: size %d, expected %d" % (what, os.fstat(fd).st_size, len(model)))
    if got != bytes(model):
        i = next(i for i in range(min(len(got), len(model))) if got[i] != model[i]) \
            if len(got) == len(model) else min(len(got), len(model))
        fail("%s: first difference at byte %d (got %r, expected %r)" % (what, i, got[i:i + 8], bytes(model[i:i + 8])))
    print("  ok: %s (size %d)" % (what, len(model)))


def do_fallocate(path, model_out):
    rnd = random.Random(int(os.environ.get("SEED", "1")))
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    model = bytearray()

    def write(off, n):
        data = bytes(rnd.getrandbits(8) for _ in range(n)) if n < 4096 else os.urandom(n)
        os.pwrite(fd, data, off)
        if off > len(model):
            model.extend(bytes(off - len(model)))
        model[off:off + n] = data

    def zero(off, n, keep):
        end = off + n if not keep else min(off + n, len(model))
        if end > len(model):
            model.extend(bytes(end - len(model)))
        if end > off:
            model[off:end] = bytes(end - off)

    def op(mode, off, n, what):
        fallocate(fd, mode, off, n)
        if mode & (PUNCH | ZERO):
            zero(off, n, mode & KEEP)
        elif not mode & KEEP and off + n > len(model):
            model.extend(bytes(off + n - len(model)))
        compare(fd, model, what)

    write(0, (1 << 20) + 777)
    compare(fd, model, "written")
    op(0, 0, 2 << 20, "allocate to 2 MiB (size raised)")
    op(KEEP, 2 << 20, 1 << 20, "allocate past the end, KEEP_SIZE (size kept)")
    op(0, 4096, 8192, "allocate inside the file (nothing changes)")
    op(PUNCH | KEEP, 5000, 300000, "punch an unaligned range")
    op(PUNCH | KEEP, 48 << 10, 480 << 10, "punch whole stripes")
    write(400000, 100000)
    op(ZERO, 450000, 20000, "zero range over bytes just written (cached)")
    op(ZERO, len(model) - 1000, 50000, "zero range across the end (size raised)")
    op(ZERO | KEEP, len(model) - 100, 10000, "zero range across the end, KEEP_SIZE")
    op(PUNCH | KEEP, len(model) - 5000, 100000, "punch across the end")
    write(len(model) + 70000, 3000)
    op(PUNCH | KEEP, 0, len(model), "punch the whole file")
    write(123456, 200000)
    compare(fd, model, "written again into the punched file")
    for mode, name in ((COLLAPSE, "COLLAPSE_RANGE"), (INSERT, "INSERT_RANGE")):
        try:
            fallocate(fd, mode, 0, 48 << 10)
            fail("fallocate %s succeeded" % name)
        except OSError as e:
            if e.errno != errno.EOPNOTSUPP:
                fail("fallocate %s: %s, expected EOPNOTSUPP" % (name, e))
        print("  ok: %s refused with EOPNOTSUPP" % name)
    compare(fd, model, "after the refused modes")
    os.fsync(fd)
    os.close(fd)
    with open(model_out, "wb") as f:
        f.write(model)


def do_seek(d):
    p = os.path.join(d, "sparse")
    fd = os.open(p, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    a, b = os.urandom(64 << 10), os.urandom(64 << 10)
    os.pwrite(fd, a, 0)
    os.pwrite(fd, b, 8 << 20)
    size = (8 << 20) + (64 << 10)
    hole = os.lseek(fd, 0, os.SEEK_HOLE)
    if not (64 << 10) <= hole < (8 << 20):
        fail("SEEK_HOLE from 0 gives %d: expected the hole after the first 64 KiB (below 8 MiB)" % hole)
    data = os.lseek(fd, hole, os.SEEK_DATA)
    if not hole < data <= (8 << 20):
        fail("SEEK_DATA from the hole (%d) gives %d: expected the data at 8 MiB or the stripe before" % (hole, data))
    if os.pread(fd, data - hole, hole) != bytes(data - hole):
        fail("bytes [%d, %d) said to be a hole are not zeros" % (hole, data))
    print("  ok: data [0, %d), hole [%d, %d), data from %d" % (hole, hole, data, data))
    if os.lseek(fd, 8 << 20, os.SEEK_HOLE) != size:
        fail("SEEK_HOLE in the last data: %d, expected the end %d" % (os.lseek(fd, 8 << 20, os.SEEK_HOLE), size))
    if os.lseek(fd, 100, os.SEEK_DATA) != 100:
        fail("SEEK_DATA inside data does not stay where it is")
    try:
        os.lseek(fd, size, os.SEEK_DATA)
        fail("SEEK_DATA at the end succeeded")
    except OSError as e:
        if e.errno != errno.ENXIO:
            fail("SEEK_DATA at the end: %s, expected ENXIO" % e)
    print("  ok: SEEK_HOLE at the end, SEEK_DATA in data, ENXIO past the end")
    os.close(fd)


def do_copy(d):
    src, dst = os.path.join(d, "copy-src"), os.path.join(d, "copy-dst")
    data = os.urandom((3 << 20) + 4321)
    a = os.open(src, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    os.write(a, data)	# (in the write-back cache still)
    b = os.open(dst, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    os.pwrite(b, b"x" * 100, 0)
    n = os.copy_file_range(a, b, len(data) + 5000, 0, 50)
    if n != len(data):
        fail("copy_file_range copied %d bytes, expected %d (up to the end of the source)" % (n, len(data)))
    want = b"x" * 50 + data
    if read_all(b) != want:
        fail("copy_file_range: the destination differs")
    n = os.copy_file_range(a, b, 1 << 20, 1000, len(want))
    if n != 1 << 20 or read_all(b) != want + data[1000:1000 + (1 << 20)]:
        fail("copy_file_range with offsets, appending: wrong (%d bytes)" % n)
    if os.copy_file_range(a, b, 100, len(data), 0) != 0:
        fail("copy_file_range from the end of the source must copy 0 bytes")
    print("  ok: copy_file_range of %d bytes, with offsets, at the end" % len(data))
    os.close(a)
    os.close(b)


def do_ioctl(d):
    p = os.path.join(d, "flags")
    open(p, "w").close()
    for target, flags in ((p, os.O_RDONLY), (d, os.O_RDONLY | os.O_DIRECTORY)):
        fd = os.open(target, flags)
        got = fcntl.ioctl(fd, 0x80086601, struct.pack("l", -1))	# FS_IOC_GETFLAGS
        if struct.unpack("l", got)[0] & 0xffffffff != 0:
            fail("FS_IOC_GETFLAGS on %s: %#x, expected 0 (no flags)" % (target, struct.unpack("l", got)[0]))
        try:
            fcntl.ioctl(fd, 0x80087601, struct.pack("l", 0))	# FS_IOC_GETVERSION
            fail("FS_IOC_GETVERSION answered: expected ENOTTY")
        except OSError as e:
            if e.errno != errno.ENOTTY:
                fail("FS_IOC_GETVERSION: %s, expected ENOTTY" % e)
        os.close(fd)
    print("  ok: FS_IOC_GETFLAGS gives 0 (file, directory), other ioctls ENOTTY")


if __name__ == "__main__":
    what = sys.argv[1]
    {"fallocate": lambda: do_fallocate(sys.argv[2], sys.argv[3]), "seek": lambda: do_seek(sys.argv[2]),
     "copy": lambda: do_copy(sys.argv[2]), "ioctl": lambda: do_ioctl(sys.argv[2])}[what]()
