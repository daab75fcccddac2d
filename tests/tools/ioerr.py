#!/usr/bin/env python3
"""ioerr.py - the fixed workload of the I/O-error loop (t_ioerr_loop.sh).

Python 3.9+, standard library only.  Subcommands:

  run --mnt DIR --ref DIR --state FILE --chunk B --stripe B [--stop-after K]
      One fixed sequence of operations (no randomness between runs: the
      bytes come from a fixed seed) on the mount, mirrored on the plain
      reference directory REF: creates, writes of several sizes (a few
      bytes, part of a chunk, whole stripes, stripes plus a tail, a sparse
      write far past the end), overwrites across chunk boundaries, appends,
      truncates down and up, renames (also over an existing file), fsync,
      fdatasync, unlinks, a directory.  Every operation runs on the mount
      first; when it succeeds (it is acknowledged) the reference does the
      same.  When it fails, the file it touched is read back: each byte the
      operation meant to change must be either the old or the new byte,
      every other byte the old one, the size between the old and the new
      (the reference takes what was read); a failed create, rename or
      unlink leaves either the old or the new name.  A file that cannot be
      read back is left alone from then on and judged by `verify` against
      what the failed operation allowed.  Last, after dropping the page
      cache (when allowed), every file is read back and compared: an
      acknowledged read must return the acknowledged bytes.
      STATE (JSON) records each operation's result, the files judged
      later and the count of failed operations.  Exit 0 when the mount
      behaved (some operations may have failed), 1 on wrong data.
      --stop-after K ends the run after its Kth operation (to cut a
      reproducer short).

  verify --mnt DIR --ref DIR --state FILE
      After the remount: the tree under DIR must hold exactly REF's files
      with REF's bytes, except the files STATE lists as unknown, which
      must hold bytes the failed operation allowed.  Exit 0 same, 1 not.
"""

import argparse
import errno
import json
import os
import random
import sys

SEED = 27


def errname(e):
    return errno.errorcode.get(e, str(e))


class Bad(Exception):
    """The mount returned wrong data: the test fails."""


class Stop(Exception):
    """--stop-after was reached (to cut a reproducer short)."""


def read_all(path):
    with open(path, "rb") as fh:
        return fh.read()


class Run:
    def __init__(self, args):
        self.mnt, self.ref = args.mnt, args.ref
        self.chunk, self.stripe = args.chunk, args.stripe
        self.rnd = random.Random(SEED)
        self.ops = []           # [op number, text, "ok" or errno name]
        self.unknown = {}       # rel -> {"old": hex-less list, ...} see note()
        self.failed = 0
        self.stop = args.stop_after
        self.stopping = False

    def data(self, n):
        return self.rnd.randbytes(n)

    def m(self, rel):
        return os.path.join(self.mnt, rel)

    def r(self, rel):
        return os.path.join(self.ref, rel)

    def ref_bytes(self, rel):
        try:
            return read_all(self.r(rel))
        except FileNotFoundError:
            return None

    def record(self, text, err):
        self.ops.append([len(self.ops) + 1, text, "ok" if err is None else errname(err)])
        if err is not None:
            self.failed += 1
        if self.stop and len(self.ops) >= self.stop:
            self.stopping = True

    # -- judging a failed data operation -----------------------------------
    def allowed(self, old, new, got):
        """Whether got is a state a failed change from old to new may
        leave: size between the two (or either), each byte the old or the
        new one (past an end: zero, a hole)."""
        old = old or b""
        lo, hi = min(len(old), len(new)), max(len(old), len(new))
        if not lo <= len(got) <= hi:
            return False
        for i in range(len(got)):
            o = old[i] if i < len(old) else 0
            n = new[i] if i < len(new) else 0
            if got[i] != o and got[i] != n:
                return False
        return True

    def failed_data(self, rel, old, new, text):
        """The operation changing rel from old to new failed: read back."""
        try:
            got = read_all(self.m(rel))
        except FileNotFoundError:
            if old is None:
                return          # a create that did not happen
            raise Bad("%s failed and %s is gone" % (text, rel))
        except OSError as e:
            self.unknown[rel] = {"old": (old or b"").hex(), "new": new.hex(), "op": text,
                                 "read": errname(e.errno)}
            return
        if not self.allowed(old, new, got):
            raise Bad("%s failed and left %s with bytes neither old nor new" % (text, rel))
        with open(self.r(rel), "wb") as fh:
            fh.write(got)

    def live(self, *rels):
        return not any(rel in self.unknown for rel in rels)

    def begin(self, *rels):
        """Whether the next operation, on rels, is to run."""
        if self.stopping:
            raise Stop()
        return self.live(*rels)

    def settle(self, rel, text, err, old, new):
        """The data operation text changed rel from old to new (err None)
        or failed with err."""
        self.record(text, err)
        if err is None:
            with open(self.r(rel), "wb") as fh:
                fh.write(new)
        else:
            self.failed_data(rel, old, new, text)

    # -- the operations ------------------------------------------------------
    def write(self, rel, off, data, create=False, trunc=False, sync=None):
        """pwrite data at off (O_CREAT / O_TRUNC as asked), then fsync or
        fdatasync when sync says so: one acknowledged step or a failure."""
        if not self.begin(rel):
            return
        text = "write %s %d+%d%s%s" % (rel, off, len(data), " creat" if create else "",
                                       " " + sync if sync else "")
        old = self.ref_bytes(rel)
        base = b"" if trunc or old is None else old

        def applied(part):
            out = bytearray(base)
            if len(out) < off:
                out.extend(bytes(off - len(out)))
            out[off:off + len(part)] = part
            return bytes(out)
        new = applied(data)
        flags = os.O_WRONLY | (os.O_CREAT if create else 0) | (os.O_TRUNC if trunc else 0)
        err = None
        done = 0       # bytes the mount took: a short write is retried, as writers do
        opened = False
        try:
            fd = os.open(self.m(rel), flags, 0o644)
            opened = True
            try:
                while done < len(data):
                    n = os.pwrite(fd, data[done:], off + done)
                    if n <= 0:
                        raise Bad("%s: pwrite returned %d after %d bytes" % (text, n, done))
                    done += n
                if sync == "fsync":
                    os.fsync(fd)
                elif sync == "fdatasync":
                    os.fdatasync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            err = e.errno
        if err is not None and (done or (trunc and opened)):
            old = applied(data[:done])  # what was acknowledged before the error
            text += " (%d bytes taken)" % done
        self.settle(rel, text, err, old, new)

    def truncate(self, rel, size):
        if not self.begin(rel):
            return
        text = "truncate %s %d" % (rel, size)
        old = self.ref_bytes(rel)
        new = old[:size] + bytes(max(0, size - len(old)))
        err = None
        try:
            os.truncate(self.m(rel), size)
        except OSError as e:
            err = e.errno
        self.settle(rel, text, err, old, new)

    def fsync(self, rel, data_only=False):
        if not self.begin(rel):
            return
        text = "%s %s" % ("fdatasync" if data_only else "fsync", rel)
        err = None
        try:
            fd = os.open(self.m(rel), os.O_RDONLY)
            try:
                (os.fdatasync if data_only else os.fsync)(fd)
            finally:
                os.close(fd)
        except OSError as e:
            err = e.errno
        self.record(text, err)
        # a failed fsync changes no byte: the acknowledged writes stay

    def rename(self, a, b):
        if not self.begin(a, b):
            return
        text = "rename %s %s" % (a, b)
        err = None
        try:
            os.rename(self.m(a), self.m(b))
        except OSError as e:
            err = e.errno
        self.record(text, err)
        if err is None or (not os.path.exists(self.m(a)) and os.path.exists(self.m(b))):
            os.rename(self.r(a), self.r(b))     # done (also when it said it failed)
        elif not os.path.exists(self.m(a)):
            raise Bad("%s failed and %s is gone" % (text, a))

    def unlink(self, rel):
        if not self.begin(rel):
            return
        text = "unlink %s" % rel
        err = None
        try:
            os.unlink(self.m(rel))
        except OSError as e:
            err = e.errno
        self.record(text, err)
        if err is None or not os.path.exists(self.m(rel)):
            os.unlink(self.r(rel))

    def mkdir(self, rel):
        self.begin()
        text = "mkdir %s" % rel
        err = None
        try:
            os.mkdir(self.m(rel))
        except OSError as e:
            err = e.errno
        self.record(text, err)
        if err is None or os.path.isdir(self.m(rel)):
            os.mkdir(self.r(rel))

    def readback(self):
        """Every file the reference holds: a read that succeeds returns
        the acknowledged bytes."""
        self.begin()
        try:
            with open("/proc/sys/vm/drop_caches", "w") as fh:
                fh.write("3\n")
        except OSError:
            pass
        for top, dirs, files in os.walk(self.ref):
            dirs.sort()
            for f in sorted(files):
                rel = os.path.relpath(os.path.join(top, f), self.ref)
                if not self.live(rel):
                    continue
                try:
                    got = read_all(self.m(rel))
                except OSError as e:
                    self.record("read %s" % rel, e.errno)
                    continue
                self.record("read %s" % rel, None)
                if got != read_all(self.r(rel)):
                    raise Bad("read %s: %d bytes, not the acknowledged ones" % (rel, len(got)))

    def workload(self):
        c, s = self.chunk, self.stripe
        self.mkdir("d")
        self.write("a", 0, self.data(100), create=True, sync="fsync")           # a few bytes
        self.write("b", 0, self.data(3 * s + 5000), create=True)                # stripes + tail
        for k in range(4):                                                      # chunk by chunk
            self.write("c", k * c, self.data(c), create=k == 0)
        self.fsync("c")
        self.write("b", c // 2 + 100, self.data(c + 300))                       # across chunks
        self.write("a", 0, self.data(300), sync="fdatasync")                    # overwrite, grow
        self.write("c", 4 * c, self.data(c // 2 + 77))                          # append, partial
        self.write("d/e", 0, self.data(s), create=True, sync="fsync")            # one full stripe
        self.truncate("b", s + 1000)                                            # down, mid-stripe
        self.truncate("c", 3 * s + 123)                                         # up: a hole
        self.write("d/e", s - 10, self.data(20))                                # across the stripe end
        self.rename("a", "d/a2")
        self.write("f", 2 * s + 17, self.data(1000), create=True)               # sparse
        self.fsync("b", data_only=True)
        self.write("g", 0, self.data(s // 2), create=True, sync="fsync")
        self.rename("c", "b")                                                   # over an existing file
        self.unlink("g")
        self.write("d/e", 0, self.data(2 * s + c), trunc=True, sync="fsync")    # rewrite whole
        self.fsync("b")
        self.readback()


def cmd_run(args):
    os.makedirs(args.ref, exist_ok=True)
    run = Run(args)
    rc = 0
    try:
        run.workload()
    except Bad as e:
        print("ioerr: WRONG: %s" % e, file=sys.stderr)
        rc = 1
    except Stop:
        pass
    with open(args.state, "w") as fh:
        json.dump({"ops": run.ops, "failed": run.failed, "unknown": run.unknown}, fh, indent=0)
    for op in run.ops:
        if op[2] != "ok":
            print("ioerr: op %d %s: %s" % tuple(op), file=sys.stderr)
    print("ioerr: %d operations, %d failed" % (len(run.ops), run.failed))
    return rc


def tree(root):
    out = {}
    for top, dirs, files in os.walk(root):
        for d in dirs:
            out[os.path.relpath(os.path.join(top, d), root)] = "dir"
        for f in files:
            out[os.path.relpath(os.path.join(top, f), root)] = "file"
    return out


def cmd_verify(args):
    with open(args.state) as fh:
        state = json.load(fh)
    unknown = state["unknown"]
    probs = []
    tm, tr = tree(args.mnt), tree(args.ref)
    for rel in sorted(set(tm) | set(tr)):
        if rel in unknown:
            continue
        if rel not in tm:
            probs.append("%s is missing" % rel)
        elif rel not in tr:
            probs.append("%s should not exist" % rel)
        elif tm[rel] != tr[rel]:
            probs.append("%s is a %s, not a %s" % (rel, tm[rel], tr[rel]))
        elif tm[rel] == "file":
            a, b = read_all(os.path.join(args.mnt, rel)), read_all(os.path.join(args.ref, rel))
            if a != b:
                off = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
                probs.append("%s differs (size %d, want %d; first difference at %d)" % (rel, len(a), len(b), off))
    for rel, u in sorted(unknown.items()):
        old, new = bytes.fromhex(u["old"]), bytes.fromhex(u["new"])
        try:
            got = read_all(os.path.join(args.mnt, rel))
        except OSError as e:
            probs.append("%s (after the failed %s) cannot be read: %s" % (rel, u["op"], errname(e.errno)))
            continue
        if not Run.allowed(None, old, new, got):
            probs.append("%s: bytes neither old nor new after the failed %s" % (rel, u["op"]))
    for p in probs:
        print("ioerr: %s" % p, file=sys.stderr)
    return 1 if probs else 0


def main():
    ap = argparse.ArgumentParser(prog="ioerr.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run")
    p.add_argument("--mnt", required=True)
    p.add_argument("--ref", required=True)
    p.add_argument("--state", required=True)
    p.add_argument("--chunk", type=int, default=4096)
    p.add_argument("--stripe", type=int, default=12288)
    p.add_argument("--stop-after", type=int, default=0,
                   help="stop after this many operations (a shorter reproducer)")
    p = sub.add_parser("verify")
    p.add_argument("--mnt", required=True)
    p.add_argument("--ref", required=True)
    p.add_argument("--state", required=True)
    args = ap.parse_args()
    return cmd_run(args) if args.cmd == "run" else cmd_verify(args)


if __name__ == "__main__":
    sys.exit(main())
