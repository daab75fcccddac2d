#!/usr/bin/env python3
"""workload.py - random workloads and tree comparison for raidfs tests.

Python 3.11, standard library only.  Subcommands:

  run --mnt DIR --ref DIR --seed N --ops N [--max-size B] [--chunk B]
      [--stripe B] [--big] [--no-extra] [--log FILE]
      Apply one random sequence of file operations to the mount and to a
      plain reference directory, identically.  The sequence is a pure
      function of the seed (and of the options), so a failure reproduces
      with the same command line.  Every operation runs on the reference
      first, then on the mount; the two must succeed or fail alike (same
      errno).  After each data operation the file sizes are compared, and
      now and then the whole file or a random range is read back from both
      sides.  The first divergence stops the run: it prints the operation
      number, the operation, the path and the errno or offset, exit 1.

  compare [--no-mode] A B
      Compare two trees: names, types, sizes, every byte of regular files
      (reports the first differing offset), symlink targets and permission
      bits (the roots' own modes are not compared).  Exit 0 identical,
      1 different (at most 20 differences listed), 2 could not run.

  crashwrite --mnt DIR --state FILE --seed N [--files N] [--max-size B]
      [--chunk B] [--max-ops N] [--ack]
      Write, overwrite, extend and truncate a few files in DIR with
      periodic fsync/fdatasync until an error (the daemon was killed) or
      --max-ops.  STATE is a journal outside the mount: an intent record is
      appended *before* every modification (so the writer may die at any
      point), and a sync record (with the sha256 of the expected content)
      after every successful fsync; sync records are fsynced.  Written data
      is regenerated from per-write seeds, so the journal stays small.
      With --ack every completed write or truncate is recorded like an
      fsync (a write-back cache must keep what it acknowledged), and
      fsyncs are rarer.
      Exit 0 when --max-ops was reached, 3 when stopped by an error.

  crashverify --mnt DIR --state FILE
      Replay the journal and check, for every file that was fsynced, that
      every byte of its last fsynced content that was not modified
      afterwards is intact, and that its size is plausible.  Bytes written
      (or truncated away / grown) after the last fsync are excluded: they
      may or may not have survived.  Exit 0 ok, 1 lost or wrong data,
      2 could not run.
"""

import argparse
import errno
import hashlib
import json
import os
import random
import stat
import sys
import time

from release import rmdir_after_release, while_hidden

MIB = 1 << 20
GIB = 1 << 30
BLK = MIB  # read block for comparisons


def errname(e):
    return errno.errorcode.get(e, str(e)) if e is not None else "ok"


# --------------------------------------------------------------------------
# helpers


def read_full(fd, off, n):
    """pread until n bytes or EOF."""
    out = []
    while n > 0:
        b = os.pread(fd, min(n, BLK), off)
        if not b:
            break
        out.append(b)
        off += len(b)
        n -= len(b)
    return b"".join(out)


def write_full(fd, data, off=None):
    """pwrite (or write when off is None) the whole buffer."""
    mv = memoryview(data)
    done = 0
    while done < len(mv):
        if off is None:
            n = os.write(fd, mv[done:])
        else:
            n = os.pwrite(fd, mv[done:], off + done)
        if n <= 0:
            raise OSError(errno.EIO, "short write returned %d" % n)
        done += n


def first_diff(a, b):
    """Index of the first differing byte of two equal-length buffers."""
    lo, hi = 0, len(a)
    # bisect on prefix equality: memcmp-speed, no per-byte Python loop
    while hi - lo > 64:
        mid = (lo + hi) // 2
        if a[lo:mid] != b[lo:mid]:
            hi = mid
        else:
            lo = mid
    for i in range(lo, hi):
        if a[i] != b[i]:
            return i
    return None


def compare_files(pa, pb):
    """Return None when equal, else a description of the first difference."""
    with open(pa, "rb", buffering=0) as fa, open(pb, "rb", buffering=0) as fb:
        sa = os.fstat(fa.fileno()).st_size
        sb = os.fstat(fb.fileno()).st_size
        off = 0
        while True:
            ba = read_full(fa.fileno(), off, BLK)
            bb = read_full(fb.fileno(), off, BLK)
            if ba != bb:
                n = min(len(ba), len(bb))
                i = first_diff(ba[:n], bb[:n])
                if i is None:
                    return ("content: one side ends at offset %d (sizes %d vs %d)"
                            % (off + n, sa, sb))
                return ("content differs at offset %d (0x%x): %02x vs %02x%s"
                        % (off + i, off + i, ba[i], bb[i],
                           "" if sa == sb else " (sizes %d vs %d)" % (sa, sb)))
            if not ba:
                return None
            off += len(ba)


# --------------------------------------------------------------------------
# compare


def scan_tree(root):
    """rel path -> lstat result, for everything below root (root excluded)."""
    out = {}
    stack = [""]
    while stack:
        rel = stack.pop()
        full = os.path.join(root, rel) if rel else root
        with os.scandir(full) as it:
            for ent in it:
                r = os.path.join(rel, ent.name) if rel else ent.name
                st = os.lstat(os.path.join(root, r))
                out[r] = st
                if stat.S_ISDIR(st.st_mode):
                    stack.append(r)
    return out


def typename(mode):
    for test, name in ((stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"),
                       (stat.S_ISLNK, "symlink"), (stat.S_ISFIFO, "fifo"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "chardev"),
                       (stat.S_ISBLK, "blockdev")):
        if test(mode):
            return name
    return "unknown"


def compare_trees(a, b, check_mode=True, limit=20):
    """List of difference strings (empty when identical)."""
    diffs = []
    try:
        ta = scan_tree(a)
    except OSError as e:
        return ["cannot scan %s: %s" % (a, e)]
    try:
        tb = scan_tree(b)
    except OSError as e:
        return ["cannot scan %s: %s" % (b, e)]
    for r in sorted(set(ta) | set(tb)):
        if r not in tb:
            diffs.append("%s: only in %s (%s)" % (r, a, typename(ta[r].st_mode)))
            continue
        if r not in ta:
            diffs.append("%s: only in %s (%s)" % (r, b, typename(tb[r].st_mode)))
            continue
        sa, sb = ta[r], tb[r]
        if stat.S_IFMT(sa.st_mode) != stat.S_IFMT(sb.st_mode):
            diffs.append("%s: type %s vs %s" % (r, typename(sa.st_mode),
                                                typename(sb.st_mode)))
            continue
        if check_mode and stat.S_IMODE(sa.st_mode) != stat.S_IMODE(sb.st_mode):
            diffs.append("%s: mode %04o vs %04o" % (r, stat.S_IMODE(sa.st_mode),
                                                    stat.S_IMODE(sb.st_mode)))
        if stat.S_ISLNK(sa.st_mode):
            la, lb = os.readlink(os.path.join(a, r)), os.readlink(os.path.join(b, r))
            if la != lb:
                diffs.append("%s: symlink target %r vs %r" % (r, la, lb))
        elif stat.S_ISREG(sa.st_mode):
            if sa.st_size != sb.st_size:
                d = "%s: size %d vs %d" % (r, sa.st_size, sb.st_size)
                try:
                    c = compare_files(os.path.join(a, r), os.path.join(b, r))
                except OSError as e:
                    c = "read error: %s" % e
                diffs.append(d + ("; " + c if c else ""))
                continue
            try:
                c = compare_files(os.path.join(a, r), os.path.join(b, r))
            except OSError as e:
                c = "read error: %s (%s)" % (e, errname(e.errno))
            if c:
                diffs.append("%s: %s" % (r, c))
    return diffs


def cmd_compare(args):
    for d in (args.a, args.b):
        if not os.path.isdir(d):
            print("compare: %s is not a directory" % d, file=sys.stderr)
            return 2
    # a file unlinked before the release of its last close reached the
    # daemon is still there under a hidden name for a moment (release.py)
    diffs = while_hidden(lambda: compare_trees(args.a, args.b, check_mode=not args.no_mode))
    if not diffs:
        if not args.quiet:
            n = len(scan_tree(args.a))
            print("compare: identical (%d entries)" % n)
        return 0
    print("compare: %s and %s differ (%d difference%s):"
          % (args.a, args.b, len(diffs), "" if len(diffs) == 1 else "s"))
    for d in diffs[:20]:
        print("  " + d)
    if len(diffs) > 20:
        print("  ... and %d more" % (len(diffs) - 20))
    return 1


# --------------------------------------------------------------------------
# run: the random workload


class Diverged(Exception):
    pass


class Workload:
    # operation weights (the "extra" ones only without --no-extra)
    WEIGHTS = [
        ("create", 11), ("pwrite", 24), ("overwrite", 12), ("append", 8),
        ("truncate", 8), ("rename", 7), ("unlink", 3), ("mkdir", 3),
        ("rmdir", 1), ("renamedir", 1), ("fsync", 4), ("readcheck", 6),
    ]
    EXTRA = [("chmod", 2), ("symlink", 2), ("link", 1)]

    def __init__(self, args):
        self.a = args
        self.mnt = args.mnt
        self.ref = args.ref
        self.rng = random.Random(args.seed)
        # decisions that do not change the sequence (extra verification)
        self.crng = random.Random(args.seed ^ 0x5EED)
        self.chunk = args.chunk
        self.stripe = args.stripe or args.chunk
        self.max_size = args.max_size
        self.ops = list(self.WEIGHTS) + ([] if args.no_extra else list(self.EXTRA))
        self.names = 0
        self.opno = 0
        self.bytes = 0
        self.logf = open(args.log, "w") if args.log else None
        self._tree = None

    # ---- model: the reference tree is the model
    def tree(self):
        if self._tree is None:
            t = scan_tree(self.ref)
            self._tree = {
                "dirs": sorted(r for r, s in t.items() if stat.S_ISDIR(s.st_mode)),
                "files": sorted(r for r, s in t.items() if stat.S_ISREG(s.st_mode)),
                "links": sorted(r for r, s in t.items() if stat.S_ISLNK(s.st_mode)),
            }
        return self._tree

    def changed(self):
        self._tree = None

    def size(self, rel):
        return os.stat(os.path.join(self.ref, rel)).st_size

    def newname(self, prefix="f"):
        self.names += 1
        return "%s%s%d" % (self.a.name_prefix, prefix, self.names)

    def pick_dir(self):
        return self.rng.choice([""] + self.tree()["dirs"])

    def normal_files(self):
        # files written beyond 4 GiB are kept out of truncate/readcheck
        return [f for f in self.tree()["files"] if not os.path.basename(f).startswith("big")]

    # ---- random offsets and sizes, biased toward chunk/stripe boundaries
    def jitter(self):
        return self.rng.choice([0, 0, 0, 0, -1, 1, -512, 512, -4096, 4096, 17])

    def pick_off(self, cur):
        r = self.rng.random()
        m = self.max_size
        if r < 0.30:
            off = self.rng.randrange(0, m // self.chunk + 1) * self.chunk + self.jitter()
        elif r < 0.45:
            off = self.rng.randrange(0, m // self.stripe + 1) * self.stripe + self.jitter()
        elif r < 0.55:
            off = cur + self.rng.choice([0, 0, 1, self.chunk])   # at/after EOF
        elif r < 0.75 and cur > 0:
            off = self.rng.randrange(0, cur)
        else:
            off = self.rng.randrange(0, m)
        return max(0, min(off, m - 1))

    def pick_len(self, off=0):
        r = self.rng.random()
        c = self.chunk
        if r < 0.25:
            n = self.rng.randint(1, 4) * c + self.jitter()
        elif r < 0.35:
            n = self.rng.randint(1, 64)
        elif r < 0.45:
            n = self.rng.randint(1, 2) * self.stripe + self.jitter()
        elif r < 0.55:
            # end exactly on the next chunk or stripe boundary
            unit = self.rng.choice([c, self.stripe])
            n = unit - off % unit + self.rng.choice([0, 0, unit])
        else:
            n = self.rng.randint(1, 4 * c)
        n = max(1, n)
        return max(1, min(n, self.max_size - off))

    def data(self, n):
        if self.rng.random() < 0.05:
            return bytes(n)   # zeros: must not be confused with holes
        return self.rng.randbytes(n)

    # ---- running one operation on both sides
    def both(self, name, rel, fn, detail=""):
        """Run fn(root) on ref then mnt; they must agree.  Returns fn's
        result on the reference side (None on a shared error)."""
        res = {}
        for side, root in (("ref", self.ref), ("mnt", self.mnt)):
            try:
                res[side] = (fn(root), None)
            except OSError as e:
                res[side] = (None, e.errno)
        (rr, er), (rm, em) = res["ref"], res["mnt"]
        if er != em:
            if er is None:
                msg = "mount failed with %s (errno %d), reference succeeded" % (errname(em), em)
            elif em is None:
                msg = "mount succeeded, reference failed with %s" % errname(er)
            else:
                msg = "mount failed with %s, reference with %s" % (errname(em), errname(er))
            raise Diverged("op %d: %s %s%s: %s" % (self.opno, name, rel,
                                                   " " + detail if detail else "", msg))
        return rr

    def check_size(self, name, rel):
        try:
            sm = os.stat(os.path.join(self.mnt, rel)).st_size
        except OSError as e:
            raise Diverged("op %d: %s %s: stat on mount failed: %s"
                           % (self.opno, name, rel, errname(e.errno)))
        sr = self.size(rel)
        if sm != sr:
            raise Diverged("op %d: %s %s: size on mount %d, reference %d"
                           % (self.opno, name, rel, sm, sr))

    def check_file(self, name, rel):
        try:
            c = compare_files(os.path.join(self.ref, rel), os.path.join(self.mnt, rel))
        except OSError as e:
            c = "read error %s" % errname(e.errno)
        if c:
            raise Diverged("op %d: after %s %s: reference vs mount: %s"
                           % (self.opno, name, rel, c))

    def after_data(self, name, rel):
        self.check_size(name, rel)
        if self.crng.random() < 0.12 and self.size(rel) <= 16 * MIB:
            self.check_file(name, rel)

    def log(self, text):
        if self.logf:
            self.logf.write("%d %s\n" % (self.opno, text))
            self.logf.flush()

    # ---- the operations
    def op_create(self):
        rel = os.path.join(self.pick_dir(), self.newname())
        n = self.rng.choice([0, self.rng.randint(1, 100), self.pick_len(0)])
        data = self.data(n) if n else b""
        self.log("create %s len=%d" % (rel, n))

        def fn(root):
            fd = os.open(os.path.join(root, rel), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                if data:
                    write_full(fd, data)
            finally:
                os.close(fd)
        self.both("create", rel, fn, "len=%d" % n)
        self.bytes += n
        self.changed()
        self.after_data("create", rel)

    def pwrite_at(self, name, rel, off, data, sync=False):
        self.log("%s %s off=%d len=%d%s" % (name, rel, off, len(data), " fsync" if sync else ""))

        def fn(root):
            fd = os.open(os.path.join(root, rel), os.O_WRONLY)
            try:
                write_full(fd, data, off)
                if sync:
                    os.fsync(fd)
            finally:
                os.close(fd)
        self.both(name, rel, fn, "off=%d len=%d" % (off, len(data)))
        self.bytes += len(data)
        self.after_data(name, rel)

    def op_pwrite(self):
        files = self.tree()["files"]
        if not files:
            return self.op_create()
        rel = self.rng.choice(files)
        cur = self.size(rel)
        off = self.pick_off(cur)
        n = self.pick_len(off)
        self.pwrite_at("pwrite", rel, off, self.data(n), self.rng.random() < 0.1)

    def op_overwrite(self):
        files = [f for f in self.normal_files() if self.size(f) > 0]
        if not files:
            return self.op_pwrite()
        rel = self.rng.choice(files)
        cur = self.size(rel)
        off = self.rng.randrange(0, cur) if self.rng.random() < 0.5 else \
            min(cur - 1, self.rng.randrange(0, cur // self.chunk + 1) * self.chunk)
        n = max(1, min(self.pick_len(off), cur - off))
        self.pwrite_at("overwrite", rel, off, self.data(n), self.rng.random() < 0.1)

    def op_append(self):
        files = self.normal_files()
        if not files:
            return self.op_create()
        rel = self.rng.choice(files)
        cur = self.size(rel)
        if cur >= self.max_size:
            return self.op_truncate()
        n = max(1, min(self.pick_len(cur), self.max_size - cur))
        data = self.data(n)
        self.log("append %s len=%d (at %d)" % (rel, n, cur))

        def fn(root):
            fd = os.open(os.path.join(root, rel), os.O_WRONLY | os.O_APPEND)
            try:
                # split in two writes now and then: both must land at EOF
                if n > 1 and self.crng.random() < 0.3:
                    write_full(fd, data[:n // 2])
                    write_full(fd, data[n // 2:])
                else:
                    write_full(fd, data)
            finally:
                os.close(fd)
        self.both("append", rel, fn, "len=%d" % n)
        self.bytes += n
        self.after_data("append", rel)

    def op_truncate(self):
        files = self.normal_files()
        if not files:
            return self.op_create()
        rel = self.rng.choice(files)
        cur = self.size(rel)
        r = self.rng.random()
        if r < 0.45 and cur > 0:        # shrink
            if self.rng.random() < 0.4:
                n = (self.rng.randrange(0, cur) // self.chunk) * self.chunk + self.jitter()
            else:
                n = self.rng.randrange(0, cur)
        elif r < 0.9:                    # grow: creates a hole
            n = cur + self.pick_len(cur)
        else:
            n = self.rng.choice([0, cur])
        n = max(0, min(n, self.max_size))
        use_fd = self.rng.random() < 0.5
        self.log("truncate %s %d -> %d%s" % (rel, cur, n, " (ftruncate)" if use_fd else ""))

        def fn(root):
            p = os.path.join(root, rel)
            if use_fd:
                fd = os.open(p, os.O_WRONLY)
                try:
                    os.ftruncate(fd, n)
                finally:
                    os.close(fd)
            else:
                os.truncate(p, n)
        self.both("truncate", rel, fn, "%d -> %d" % (cur, n))
        self.after_data("truncate", rel)
        # reading across the old and the new end must give zeros/data alike
        if n > cur and self.crng.random() < 0.5:
            self.check_file("truncate", rel)

    def op_rename(self):
        t = self.tree()
        cands = self.normal_files() + t["links"]   # sparse >4 GiB files stay
        if not cands:
            return self.op_create()
        src = self.rng.choice(cands)
        r = self.rng.random()
        if r < 0.35 and len(self.normal_files()) > 1:
            dst = self.rng.choice([f for f in self.normal_files() if f != src])  # over existing
        elif r < 0.65:
            dst = os.path.join(os.path.dirname(src), self.newname("r"))  # same dir
        else:
            dst = os.path.join(self.pick_dir(), self.newname("r"))       # across dirs
        self.log("rename %s -> %s" % (src, dst))
        self.both("rename", src, lambda root: os.rename(os.path.join(root, src),
                                                         os.path.join(root, dst)),
                  "-> " + dst)
        self.changed()
        if os.path.isfile(os.path.join(self.ref, dst)) and not os.path.islink(os.path.join(self.ref, dst)):
            self.after_data("rename", dst)
        if os.path.lexists(os.path.join(self.mnt, src)) != os.path.lexists(os.path.join(self.ref, src)):
            raise Diverged("op %d: rename %s -> %s: source existence differs afterwards"
                           % (self.opno, src, dst))

    def op_unlink(self):
        t = self.tree()
        cands = self.normal_files() + t["links"]
        if not cands:
            return self.op_create()
        rel = self.rng.choice(cands)
        self.log("unlink %s" % rel)
        self.both("unlink", rel, lambda root: os.unlink(os.path.join(root, rel)))
        self.changed()

    def op_mkdir(self):
        parent = self.pick_dir()
        if parent.count("/") >= 3:
            parent = ""
        rel = os.path.join(parent, self.newname("d"))
        self.log("mkdir %s" % rel)
        self.both("mkdir", rel, lambda root: os.mkdir(os.path.join(root, rel), 0o755))
        self.changed()

    def op_rmdir(self):
        t = self.tree()
        empty = [d for d in t["dirs"] if not os.listdir(os.path.join(self.ref, d))]
        if not empty:
            return self.op_mkdir()
        rel = self.rng.choice(empty)
        self.log("rmdir %s" % rel)
        self.both("rmdir", rel, lambda root: rmdir_after_release(os.path.join(root, rel)))
        self.changed()

    def op_renamedir(self):
        dirs = self.tree()["dirs"]
        if not dirs:
            return self.op_mkdir()
        src = self.rng.choice(dirs)
        parents = [d for d in [""] + dirs if d != src and not d.startswith(src + "/")]
        dst = os.path.join(self.rng.choice(parents), self.newname("d"))
        self.log("renamedir %s -> %s" % (src, dst))
        self.both("renamedir", src, lambda root: os.rename(os.path.join(root, src),
                                                            os.path.join(root, dst)),
                  "-> " + dst)
        self.changed()

    def op_fsync(self):
        files = self.tree()["files"]
        if not files:
            return self.op_create()
        rel = self.rng.choice(files)
        data_only = self.rng.random() < 0.3
        self.log("%s %s" % ("fdatasync" if data_only else "fsync", rel))

        def fn(root):
            fd = os.open(os.path.join(root, rel), os.O_RDWR)
            try:
                (os.fdatasync if data_only else os.fsync)(fd)
            finally:
                os.close(fd)
        self.both("fsync", rel, fn)

    def op_readcheck(self):
        files = [f for f in self.normal_files() if self.size(f) > 0]
        if not files:
            return self.op_create()
        rel = self.rng.choice(files)
        cur = self.size(rel)
        off = self.pick_off(cur) % (cur + self.chunk)   # sometimes past EOF
        n = self.pick_len(0)
        self.log("readcheck %s off=%d len=%d" % (rel, off, n))
        self.read_range("readcheck", rel, off, n)

    def read_range(self, name, rel, off, n):
        """pread [off, off+n) on both sides; the bytes must be the same."""
        got = {}
        for side, root in (("ref", self.ref), ("mnt", self.mnt)):
            try:
                fd = os.open(os.path.join(root, rel), os.O_RDONLY)
                try:
                    got[side] = read_full(fd, off, n)
                finally:
                    os.close(fd)
            except OSError as e:
                got[side] = e
        if isinstance(got["mnt"], OSError):
            raise Diverged("op %d: %s %s: read off=%d len=%d: mount read failed: %s"
                           % (self.opno, name, rel, off, n, errname(got["mnt"].errno)))
        if isinstance(got["ref"], OSError):
            raise got["ref"]
        a, b = got["ref"], got["mnt"]
        if a != b:
            if len(a) != len(b):
                raise Diverged("op %d: %s %s: read off=%d len=%d: mount returned %d bytes, reference %d"
                               % (self.opno, name, rel, off, n, len(b), len(a)))
            i = first_diff(a, b)
            raise Diverged("op %d: %s %s: read off=%d len=%d: differs at file offset %d: ref %02x mount %02x"
                           % (self.opno, name, rel, off, n, off + i, a[i], b[i]))

    def op_chmod(self):
        files = self.tree()["files"] + self.tree()["dirs"]
        if not files:
            return self.op_create()
        rel = self.rng.choice(files)
        isdir = os.path.isdir(os.path.join(self.ref, rel))
        mode = self.rng.choice([0o755, 0o750, 0o700] if isdir else [0o600, 0o644, 0o640, 0o755, 0o444])
        self.log("chmod %s %o" % (rel, mode))
        self.both("chmod", rel, lambda root: os.chmod(os.path.join(root, rel), mode), "%o" % mode)

    def op_symlink(self):
        t = self.tree()
        target = self.rng.choice(t["files"] + ["no/such/target", "../x" * self.rng.randint(1, 3)])
        rel = os.path.join(self.pick_dir(), self.newname("l"))
        self.log("symlink %s -> %s" % (rel, target))
        self.both("symlink", rel, lambda root: os.symlink(target, os.path.join(root, rel)),
                  "-> " + target)
        self.changed()

    def op_link(self):
        files = self.normal_files()
        if not files:
            return self.op_create()
        src = self.rng.choice(files)
        dst = os.path.join(self.pick_dir(), self.newname("h"))
        self.log("link %s -> %s" % (src, dst))
        self.both("link", src, lambda root: os.link(os.path.join(root, src),
                                                     os.path.join(root, dst)), "-> " + dst)
        self.changed()

    def op_big(self):
        bigs = [f for f in self.tree()["files"] if os.path.basename(f).startswith("big")]
        if bigs and self.rng.random() < 0.5:
            rel = self.rng.choice(bigs)
        else:
            rel = os.path.join(self.pick_dir(), self.newname("big"))
            self.log("create %s (sparse)" % rel)

            def mk(root):
                os.close(os.open(os.path.join(root, rel), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            self.both("create", rel, mk)
            self.changed()
        off = 4 * GIB + self.rng.choice([0, -1, 1, self.chunk, self.rng.randrange(0, 64 * MIB)])
        n = self.pick_len(0)
        self.pwrite_at("bigwrite", rel, off, self.data(n), self.rng.random() < 0.3)
        # read back around the write now: the file may be gone by the end
        self.read_range("bigwrite", rel, max(0, off - self.chunk), n + 2 * self.chunk)

    def run(self):
        names = [n for n, _ in self.ops]
        weights = [w for _, w in self.ops]
        t0 = time.time()
        big_at = self.a.ops // 3 if self.a.big else -1
        for i in range(self.a.ops):
            self.opno = i
            if i == big_at or (self.a.big and self.rng.random() < 0.002):
                self.op_big()
                continue
            op = self.rng.choices(names, weights)[0]
            getattr(self, "op_" + op)()
        t = self.tree()
        print("workload: seed %d: %d ops, %d files, %d dirs, %.1f MiB written, %.1fs"
              % (self.a.seed, self.a.ops, len(t["files"]), len(t["dirs"]),
                 self.bytes / MIB, time.time() - t0))


def cmd_run(args):
    for d in (args.mnt, args.ref):
        if not os.path.isdir(d):
            print("run: %s is not a directory" % d, file=sys.stderr)
            return 2
    if args.chunk <= 0 or args.max_size <= 0:
        print("run: --chunk and --max-size must be positive", file=sys.stderr)
        return 2
    w = Workload(args)
    try:
        w.run()
    except Diverged as e:
        print("workload: FAIL (seed %d): %s" % (args.seed, e), file=sys.stderr)
        return 1
    return 0


# --------------------------------------------------------------------------
# crashwrite / crashverify


class Journal:
    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def put(self, rec, sync=False):
        os.write(self.fd, (json.dumps(rec, separators=(",", ":")) + "\n").encode())
        if sync:
            os.fsync(self.fd)


def gen_data(dseed, n):
    return random.Random(dseed).randbytes(n)


def cmd_crashwrite(args):
    rng = random.Random(args.seed)
    try:
        j = Journal(args.state)
        j.put({"t": "init", "seed": args.seed, "chunk": args.chunk,
               "max_size": args.max_size}, sync=True)
    except OSError as e:
        print("crashwrite: cannot write the journal %s: %s" % (args.state, e), file=sys.stderr)
        return 2
    chunk, maxs = args.chunk, args.max_size
    files = {}      # name -> {"fd", "model": bytearray, "unsynced": int}
    opno = 0

    def new_file():
        name = "c%d" % len(files)
        j.put({"t": "c", "f": name})
        fd = os.open(os.path.join(args.mnt, name), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        files[name] = {"fd": fd, "model": bytearray(), "unsynced": 0,
                       "every": rng.randint(1, 8)}
        return name

    def note_ack(name):
        # --ack: the write returned, so it was acknowledged: record the
        # content as a sync point (the journal outlives the daemon only,
        # which is all a kill -9 test needs)
        m = files[name]["model"]
        j.put({"t": "s", "f": name, "size": len(m), "sha": hashlib.sha256(m).hexdigest()})

    def do_sync(name):
        f = files[name]
        use_data = rng.random() < 0.3
        (os.fdatasync if use_data else os.fsync)(f["fd"])
        j.put({"t": "s", "f": name, "size": len(f["model"]),
               "sha": hashlib.sha256(f["model"]).hexdigest()}, sync=True)
        f["unsynced"] = 0

    try:
        os.makedirs(args.mnt, exist_ok=True)
        for _ in range(args.files):
            name = new_file()
            do_sync(name)
        dfd = os.open(args.mnt, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        except OSError as e:
            if e.errno not in (errno.EINVAL, errno.ENOSYS, errno.EROFS):
                raise
        finally:
            os.close(dfd)
        while args.max_ops == 0 or opno < args.max_ops:
            opno += 1
            if rng.random() < 0.03 and len(files) < args.files * 6:
                new_file()
                continue
            name = rng.choice(sorted(files))
            f = files[name]
            m = f["model"]
            r = rng.random()
            if r < 0.08:
                # truncate: shrink or grow
                if rng.random() < 0.5 and m:
                    n = rng.randrange(0, len(m))
                    if rng.random() < 0.5:
                        n -= n % chunk
                else:
                    n = min(maxs, len(m) + rng.randint(1, 3 * chunk))
                j.put({"t": "tr", "f": name, "old": len(m), "size": n})
                os.ftruncate(f["fd"], n)
                if n < len(m):
                    del m[n:]
                else:
                    m.extend(bytes(n - len(m)))
            else:
                rr = rng.random()
                if rr < 0.3:
                    off = rng.randrange(0, maxs // chunk) * chunk
                elif rr < 0.5:
                    off = len(m)                     # extend
                elif rr < 0.8 and m:
                    off = rng.randrange(0, len(m))   # overwrite
                else:
                    off = rng.randrange(0, maxs)
                n = rng.choice([rng.randint(1, 512), rng.randint(1, 3 * chunk),
                                chunk, 2 * chunk - off % chunk])
                n = max(1, min(n, maxs - off))
                if n <= 0 or off >= maxs:
                    continue
                dseed = rng.getrandbits(63)
                j.put({"t": "w", "f": name, "off": off, "len": n, "ds": dseed})
                data = gen_data(dseed, n)
                write_full(f["fd"], data, off)
                if off > len(m):
                    m.extend(bytes(off - len(m)))
                m[off:off + n] = data
            if args.ack:
                note_ack(name)
            f["unsynced"] += 1
            if f["unsynced"] >= f["every"] * (10 if args.ack else 1):
                do_sync(name)
                f["every"] = rng.randint(1, 8)
    except OSError as e:
        print("crashwrite: stopped after %d ops: %s (%s)" % (opno, e, errname(e.errno)),
              file=sys.stderr)
        return 3
    for f in files.values():
        os.close(f["fd"])
    print("crashwrite: %d ops done" % opno)
    return 0


def subtract(base, ranges):
    """Intervals of [0, base) not covered by any (start, end) in ranges."""
    out = []
    pos = 0
    for s, e in sorted(ranges):
        if e <= pos:
            continue
        if s > pos:
            out.append((pos, min(s, base)))
        pos = max(pos, e)
        if pos >= base:
            break
    if pos < base:
        out.append((pos, base))
    return [(s, e) for s, e in out if s < e]


def cmd_crashverify(args):
    try:
        with open(args.state) as fh:
            lines = fh.read().splitlines()
    except OSError as e:
        print("crashverify: cannot read %s: %s" % (args.state, e), file=sys.stderr)
        return 2
    model = {}      # name -> bytearray (as the writer believed)
    synced = {}     # name -> bytes of the last fsynced content
    unstable = {}   # name -> [(start, end)] modified since the last fsync
    upper = {}      # name -> largest size reached since the last fsync
    for ln, line in enumerate(lines, 1):
        try:
            rec = json.loads(line)
        except ValueError:
            if ln == len(lines):
                break       # torn last line: the writer died mid-append
            print("crashverify: %s:%d: bad record" % (args.state, ln), file=sys.stderr)
            return 2
        t = rec["t"]
        if t == "init":
            continue
        name = rec["f"]
        if t == "c":
            model[name] = bytearray()
            unstable[name] = []
            upper[name] = 0
        elif t == "w":
            m = model[name]
            off, n = rec["off"], rec["len"]
            if off > len(m):
                m.extend(bytes(off - len(m)))
            m[off:off + n] = gen_data(rec["ds"], n)
            unstable[name].append((off, off + n))
            upper[name] = max(upper[name], off + n)
        elif t == "tr":
            m = model[name]
            n, old = rec["size"], len(m)
            if n < old:
                del m[n:]
            else:
                m.extend(bytes(n - old))
            unstable[name].append((min(n, old), max(n, old)))
            upper[name] = max(upper[name], n)
        elif t == "s":
            m = model[name]
            if len(m) != rec["size"] or hashlib.sha256(m).hexdigest() != rec["sha"]:
                print("crashverify: %s:%d: journal replay of %s disagrees with the writer"
                      % (args.state, ln, name), file=sys.stderr)
                return 2
            synced[name] = bytes(m)
            unstable[name] = []
            upper[name] = len(m)
    bad = []
    checked = excluded = 0
    for name in sorted(synced):
        want = synced[name]
        keep = subtract(len(want), unstable[name])
        need = keep[-1][1] if keep else 0
        hi = max(len(want), upper[name])
        p = os.path.join(args.mnt, name)
        try:
            with open(p, "rb", buffering=0) as fh:
                size = os.fstat(fh.fileno()).st_size
                got = read_full(fh.fileno(), 0, max(size, need))
        except OSError as e:
            bad.append("%s: cannot read: %s (%s)" % (name, e, errname(e.errno)))
            continue
        if size < need or size > hi:
            bad.append("%s: size %d outside the possible range [%d, %d] (fsynced size %d)"
                       % (name, size, need, hi, len(want)))
        for s, e in keep:
            a, b = want[s:e], got[s:e]
            if a != b:
                i = first_diff(a[:len(b)], b)
                if i is not None:
                    bad.append("%s: fsynced byte at offset %d differs: expected %02x, got %02x"
                               " (stable range [%d, %d))" % (name, s + i, a[i], b[i], s, e))
                else:
                    bad.append("%s: fsynced bytes [%d, %d) missing: file ends at %d"
                               % (name, s + len(b), e, len(got)))
                break
            checked += e - s
        excluded += len(want) - sum(e - s for s, e in keep)
    if bad:
        print("crashverify: %s: %d problem(s):" % (args.mnt, len(bad)))
        for b in bad[:20]:
            print("  " + b)
        return 1
    print("crashverify: %d files ok, %d fsynced bytes verified, %d excluded (modified after fsync)"
          % (len(synced), checked, excluded))
    return 0


# --------------------------------------------------------------------------
# patterns: which member sets a level tolerates losing


def tolerated(level, width, groups, missing):
    """True when the array survives losing the member indices in `missing`
    (the tolerance rules of the CLI documentation)."""
    n = len(missing)
    if level in ("single", "raid0"):
        return n == 0
    if level == "raid1":
        return n <= width - 1
    if level == "raid5":
        return n <= 1
    if level == "raid6":
        return n <= 2
    if level == "raid10":
        return all(sum(1 for m in missing if m // 2 == p) <= 1 for p in range(width // 2))
    if level in ("raid50", "raid60"):
        gw = width // groups
        t = 1 if level == "raid50" else 2
        return all(sum(1 for m in missing if m // gw == g) <= t for g in range(groups))
    raise ValueError("unknown level " + level)


def cmd_patterns(args):
    import itertools
    L, W, G = args.level, args.width, args.groups
    rng = random.Random(args.seed)
    maxlost = {"raid1": W - 1, "raid5": 1, "raid6": 2, "raid10": W // 2,
               "raid50": G, "raid60": 2 * G}.get(L, 0)
    if args.intolerable:
        out = []
        for k in range(1, min(W, maxlost + 1) + 1):
            for c in itertools.combinations(range(W), k):
                if not tolerated(L, W, G, c) and \
                        all(tolerated(L, W, G, c[:i] + c[i + 1:]) for i in range(k)):
                    out.append(c)
        pats = sorted(rng.sample(out, min(args.max or 3, len(out))))
    else:
        out = [c for k in range(1, maxlost + 1)
               for c in itertools.combinations(range(W), k) if tolerated(L, W, G, c)]
        if W > 8 and args.max and len(out) > args.max:
            # sample, but always keep some of the worst cases
            worst = [c for c in out if len(c) == len(out[-1])]
            rest = [c for c in out if len(c) != len(out[-1])]
            nw = min(len(worst), max(1, args.max // 2))
            pats = rng.sample(worst, nw) + rng.sample(rest, min(len(rest), args.max - nw))
            pats.sort(key=lambda c: (len(c), c))
        else:
            pats = out
    for c in pats:
        print(" ".join(str(i) for i in c))
    return 0


# --------------------------------------------------------------------------
# selftest: the tool must see the differences it exists to find


def cmd_selftest(args):
    import contextlib
    import io
    import shutil
    import tempfile
    bad = []

    def expect(what, got, want):
        if got != want:
            bad.append("%s: exit %s, want %s" % (what, got, want))

    def flip(path, off):
        fd = os.open(path, os.O_RDWR)
        try:
            b = os.pread(fd, 1, off)
            os.pwrite(fd, bytes([b[0] ^ 0x01]), off)
        finally:
            os.close(fd)

    def quiet(argv):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return main(argv)

    tmp = tempfile.mkdtemp(prefix="workload-selftest.")
    try:
        a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
        os.mkdir(a)
        os.mkdir(b)
        expect("run on two plain dirs", quiet(["run", "--mnt", a, "--ref", b, "--seed", "1",
                                              "--ops", "400", "--chunk", "4K", "--max-size", "256K"]), 0)
        expect("compare identical trees", quiet(["compare", a, b]), 0)
        # one flipped byte in the largest file
        files = [os.path.join(r, f) for r, _, fs in os.walk(a) for f in fs
                 if not os.path.islink(os.path.join(r, f))]
        big = max(files, key=os.path.getsize)
        at = os.path.getsize(big) * 2 // 3
        flip(big, at)
        expect("compare after one flipped byte", quiet(["compare", a, b]), 1)
        flip(big, at)
        expect("compare after flipping it back", quiet(["compare", a, b]), 0)
        mode = stat.S_IMODE(os.stat(big).st_mode)
        os.chmod(big, mode ^ 0o004)
        expect("compare after chmod", quiet(["compare", a, b]), 1)
        expect("compare --no-mode after chmod", quiet(["compare", "--no-mode", a, b]), 0)
        os.chmod(big, mode)
        # a divergence during run is reported (the reference is the model)
        flip(big, 0)
        expect("run after corrupting the mount side",
               quiet(["run", "--mnt", a, "--ref", b, "--seed", "2", "--ops", "3000",
                      "--chunk", "4K", "--max-size", "256K", "--name-prefix", "x"]), 1)
        # crash journal: intact passes, a flipped or cut file fails
        m, st = os.path.join(tmp, "m"), os.path.join(tmp, "state")
        expect("crashwrite", quiet(["crashwrite", "--mnt", m, "--state", st, "--seed", "3",
                                    "--chunk", "4K", "--max-size", "128K", "--max-ops", "300"]), 0)
        expect("crashverify intact", quiet(["crashverify", "--mnt", m, "--state", st]), 0)
        victim = max((os.path.join(m, f) for f in os.listdir(m)), key=os.path.getsize)
        with open(victim, "rb") as fh:
            saved = fh.read()
        flip(victim, 0)
        r1 = quiet(["crashverify", "--mnt", m, "--state", st])
        flip(victim, 0)
        os.truncate(victim, len(saved) // 4)
        r2 = quiet(["crashverify", "--mnt", m, "--state", st])
        with open(victim, "wb") as fh:
            fh.write(saved)
        expect("crashverify after truncating %s to a quarter" % os.path.basename(victim), r2, 1)
        if r1 == 0:
            # byte 0 may have been rewritten after the last fsync: then it
            # is excluded; flip every byte instead
            with open(victim, "wb") as fh:
                fh.write(bytes(x ^ 0xff for x in saved))
            r1 = quiet(["crashverify", "--mnt", m, "--state", st])
            with open(victim, "wb") as fh:
                fh.write(saved)
        expect("crashverify after flipping fsynced bytes", r1, 1)
        expect("crashverify after restoring", quiet(["crashverify", "--mnt", m, "--state", st]), 0)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if bad:
        print("selftest: FAILED:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    print("selftest: ok")
    return 0


def size_arg(s):
    s = s.strip()
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(s[-1:].lower())
    return int(s[:-1]) * mult if mult else int(s)


def main(argv=None):
    p = argparse.ArgumentParser(prog="workload.py", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="random workload on mount and reference")
    r.add_argument("--mnt", required=True)
    r.add_argument("--ref", required=True)
    r.add_argument("--seed", type=int, required=True)
    r.add_argument("--ops", type=int, required=True)
    r.add_argument("--max-size", type=size_arg, default=MIB)
    r.add_argument("--chunk", type=size_arg, default=64 * 1024)
    r.add_argument("--stripe", type=size_arg, default=0,
                   help="data bytes per stripe (boundary bias); default: chunk")
    r.add_argument("--big", action="store_true", help="also write beyond 4 GiB (sparse)")
    r.add_argument("--no-extra", action="store_true", help="no chmod/symlink/link")
    r.add_argument("--log", help="write every operation to this file")
    r.add_argument("--name-prefix", default="",
                   help="prefix for new names (to run again on an existing tree)")

    c = sub.add_parser("compare", help="compare two trees")
    c.add_argument("--no-mode", action="store_true")
    c.add_argument("-q", "--quiet", action="store_true")
    c.add_argument("a")
    c.add_argument("b")

    w = sub.add_parser("crashwrite", help="write with fsyncs until killed")
    w.add_argument("--mnt", required=True)
    w.add_argument("--state", required=True)
    w.add_argument("--seed", type=int, required=True)
    w.add_argument("--files", type=int, default=4)
    w.add_argument("--max-size", type=size_arg, default=MIB)
    w.add_argument("--chunk", type=size_arg, default=64 * 1024)
    w.add_argument("--max-ops", type=int, default=0)
    w.add_argument("--ack", action="store_true",
                   help="every completed write is a point to verify (not only fsyncs)")

    v = sub.add_parser("crashverify", help="verify after a crash")
    v.add_argument("--mnt", required=True)
    v.add_argument("--state", required=True)

    t = sub.add_parser("patterns", help="member sets a level tolerates losing (0-based)")
    t.add_argument("--level", required=True)
    t.add_argument("--width", type=int, required=True)
    t.add_argument("--groups", type=int, default=1)
    t.add_argument("--max", type=int, default=0,
                   help="sample at most this many (only for width > 8, or --intolerable)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--intolerable", action="store_true",
                   help="print minimal sets the level does NOT tolerate")

    sub.add_parser("selftest", help="check that run/compare/crashverify detect what they must")

    args = p.parse_args(argv)
    return {"run": cmd_run, "patterns": cmd_patterns, "selftest": cmd_selftest, "compare": cmd_compare, "crashwrite": cmd_crashwrite,
            "crashverify": cmd_crashverify}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
