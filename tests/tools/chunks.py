#!/usr/bin/env python3
"""chunks.py - where a raidfs file's chunks live on the member shards, and
damage to them on purpose (for tests of checksums, scrub and check).

Python 3.9+, standard library only.  Works on the member directories of
an array that is not mounted (or whose writes are done: the tool reads
and writes the shard files directly).  MEMBERS are the member
directories in member order (index 0 first), as separate words or as one
DIR:DIR:... word; PATH is a file's path inside the array (relative to
its root).  The layout comes from the file's metadata record
(`user.raidfs.meta`, docs/format.md "Per-file metadata": the valid copy
with the highest version among the shards) and is computed as
src/layout.h does.

Slot names, per stripe and redundancy group:
  dN      data chunk N of the stripe, in file order (N = 0..D-1, D data
          chunks per stripe; its logical offset is (stripe * D + N) * chunk);
          mirrors: the group's first copy (position 0)
  P, Q    the parity of the group (Q: raid6, raid60)
  copyN   mirror copy N (N = 1..m) of the group's data chunk (raid1, raid10)

Subcommands:

  map MEMBERS... -- PATH [--json]
      One line per stripe and slot: stripe, group, slot, member index,
      shard offset, length (the bytes the layout puts there: a data slot
      of the last stripe holds only the file bytes it has, a redundancy
      slot is as long as its group's longest data slot), and the logical
      offset of the bytes (data and mirror copies; "-" for parity).
      --json: a JSON object {path, level, chunk, width, groups, rotation,
      id, size, data_chunks, chunks: [{stripe, group, slot, member,
      shard_offset, length, logical}]} (logical null for parity).

  flip MEMBERS... -- PATH --stripe S (--slot SLOT [--group G] | --member J)
       [--offset O] [--count N] [--seed X] [--json]
      XORs N bytes (default 1) of that chunk in place on its member's
      shard, each with a nonzero value; the shard keeps its length.  O is
      the offset inside the chunk (default: random from the seed, so that
      the N bytes fit).  The range must lie within the shard (never past
      its end).  --group names the group of a P, Q or copyN slot (default
      0); --member names the chunk by the member instead (with --slot
      too, the two must agree).  Prints what it did: member, shard path,
      shard offset, count (--json: an object).

  random-flips MEMBERS... --count N --seed X [--bytes B] -- PATH...
      N flips (B bytes each, default 1) at chunks chosen at random from
      the chunks of the files that hold bytes in their shards, at most one
      per (file, stripe, group) row, so a row never has two damaged
      chunks.  Prints a JSON list of {path, member, stripe, group, slot,
      shard_offset, count}.  Fails when the files have fewer than N rows.

Exit status: 0 done, 1 the tool could not do it (message on stderr),
2 bad usage.
"""

import json
import os
import random
import struct
import sys
import zlib

META_XATTR = "user.raidfs.meta"
META_MAGIC = 0x314D4652
LEVELS = ["single", "raid0", "raid1", "raid5", "raid6", "raid10", "raid50", "raid60"]


class Fail(Exception):
    pass


# ------------------------------------------------------------------ layout

class Layout:
    """struct layout of src/layout.h: the geometry of one file."""

    def __init__(self, level, chunk, width, groups, rotation):
        if not 0 <= level < len(LEVELS):
            raise Fail("unknown level %d in the metadata record" % level)
        self.level, self.chunk, self.width = level, chunk, width
        name = LEVELS[level]
        if name == "single":
            g, gw, k, m, red = 1, 1, 1, 0, "none"
        elif name == "raid0":
            g, gw, k, m, red = 1, width, width, 0, "none"
        elif name == "raid1":
            g, gw, k, m, red = 1, width, 1, width - 1, "mirror"
        elif name in ("raid5", "raid6"):
            m = 1 if name == "raid5" else 2
            g, gw, k, red = 1, width, width - m, "parity"
        elif name == "raid10":
            g, gw, k, m, red = width // 2, 2, 1, 1, "mirror"
        else:  # raid50, raid60
            m = 1 if name == "raid50" else 2
            g = groups or 2
            gw = width // g
            k, red = gw - m, "parity"
        self.groups, self.gw, self.k, self.m, self.red = g, gw, k, m, red
        if chunk <= 0 or chunk & (chunk - 1) or width <= 0 or g * gw != width or k < 1:
            raise Fail("invalid layout in the metadata record (%s, chunk %d, width %d, groups %d)"
                       % (name, chunk, width, groups))
        period = g if name == "raid10" else gw
        self.rotation = rotation % period

    @property
    def name(self):
        return LEVELS[self.level]

    def data_chunks(self):
        return self.groups * self.k

    def stripe_bytes(self):
        return self.data_chunks() * self.chunk

    def parity_pos(self, s):
        return self.gw - 1 - (s + self.rotation) % self.gw

    def slot_member(self, s, g, slot):
        """layout_slot_member()"""
        assert 0 <= g < self.groups and 0 <= slot < self.k + self.m
        if self.red == "parity":
            p = self.parity_pos(s)
            pos = (p + self.m + slot) % self.gw if slot < self.k else (p + slot - self.k) % self.gw
        elif self.red == "mirror":
            if self.name == "raid10":
                g = (g + self.rotation) % self.groups
            pos = slot
        else:
            pos = (slot + self.rotation) % self.gw
        return g * self.gw + pos

    def data_index(self, g, slot):
        """layout_data_index(): data chunk of group g's data slot"""
        return slot * self.groups + g

    def data_slot(self, d):
        """layout_data_slot(): (group, slot) of data chunk d"""
        return d % self.groups, d // self.groups

    def data_len(self, size, s, d):
        """file bytes that data chunk d of stripe s holds"""
        start = (s * self.data_chunks() + d) * self.chunk
        return max(0, min(self.chunk, size - start))

    def slot_len(self, size, s, g, slot):
        """bytes of the slot in the shard (layout_shard_size's rule)"""
        if slot < self.k:
            return self.data_len(size, s, self.data_index(g, slot))
        # redundancy: as long as the longest data slot of the group (slot 0)
        return self.data_len(size, s, self.data_index(g, 0))

    def slot_name(self, g, slot):
        if slot < self.k:
            return "d%d" % self.data_index(g, slot)
        if self.red == "mirror":
            return "copy%d" % (slot - self.k + 1)
        return "PQ"[slot - self.k]

    def slot_parse(self, name, g):
        """(group, slot) for a slot name; g is the group of P, Q, copyN"""
        if name.startswith("d") and name[1:].isdigit():
            d = int(name[1:])
            if d >= self.data_chunks():
                raise Fail("no data chunk %s: a stripe of this %s file has d0..d%d"
                           % (name, self.name, self.data_chunks() - 1))
            return self.data_slot(d)
        if not 0 <= g < self.groups:
            raise Fail("no group %d: this %s file has %d" % (g, self.name, self.groups))
        if name in ("P", "Q") and self.red == "parity" and "PQ".index(name) < self.m:
            return g, self.k + "PQ".index(name)
        if name.startswith("copy") and name[4:].isdigit() and self.red == "mirror" \
                and 1 <= int(name[4:]) <= self.m:
            return g, self.k + int(name[4:]) - 1
        raise Fail("no slot '%s' in a %s file (slots: d0..d%d%s)" % (
            name, self.name, self.data_chunks() - 1,
            {"parity": ", P" + (", Q" if self.m == 2 else ""),
             "mirror": ", copy1..copy%d" % self.m, "none": ""}[self.red]))

    def member_slot(self, s, member):
        """(group, slot) that member holds in stripe s (by search: the
        inverse of slot_member, so it cannot disagree with it)"""
        for g in range(self.groups):
            for slot in range(self.k + self.m):
                if self.slot_member(s, g, slot) == member:
                    return g, slot
        raise Fail("member %d holds nothing in stripe %d" % (member, s))

    def stripes(self, size):
        return (size + self.stripe_bytes() - 1) // self.stripe_bytes()


# --------------------------------------------------------------- metadata

def read_meta(members, path):
    """The file's metadata: the valid record with the highest version."""
    best = None
    why = []
    for j, d in enumerate(members):
        shard = os.path.join(d, path)
        try:
            rec = os.getxattr(shard, META_XATTR)
        except OSError as e:
            why.append("member %d: %s" % (j, e.strerror))
            continue
        if len(rec) != 64:
            why.append("member %d: record of %d bytes" % (j, len(rec)))
            continue
        magic, ver, flags, level = struct.unpack_from("<IHHB", rec, 0)
        chunk, width, groups, rotation, index = struct.unpack_from("<5I", rec, 12)
        fid, size, version = struct.unpack_from("<3Q", rec, 32)
        crc = struct.unpack_from("<I", rec, 60)[0]
        if magic != META_MAGIC or ver != 1 or crc != zlib.crc32(rec[:60]):
            why.append("member %d: invalid record" % j)
            continue
        m = dict(level=level, chunk=chunk, width=width, groups=groups, rotation=rotation,
                 id=fid, size=size, version=version, flags=flags)
        if best is None or version > best["version"]:
            best = m
    if best is None:
        raise Fail("no valid metadata record for '%s' on any member (%s)" % (path, "; ".join(why)))
    if best["width"] != len(members):
        raise Fail("'%s' is a file of a %d-member array, %d member directories given"
                   % (path, best["width"], len(members)))
    return best


def file_layout(members, path):
    m = read_meta(members, path)
    return m, Layout(m["level"], m["chunk"], m["width"], m["groups"], m["rotation"])


def chunk_map(members, path):
    """Every (stripe, group, slot) of the file, in stripe, group, slot order."""
    meta, lay = file_layout(members, path)
    size = meta["size"]
    out = []
    for s in range(lay.stripes(size)):
        for g in range(lay.groups):
            for slot in range(lay.k + lay.m):
                logical = None
                if slot < lay.k or lay.red == "mirror":
                    d = lay.data_index(g, slot if slot < lay.k else 0)
                    logical = (s * lay.data_chunks() + d) * lay.chunk
                out.append(dict(stripe=s, group=g, slot=lay.slot_name(g, slot),
                                member=lay.slot_member(s, g, slot), shard_offset=s * lay.chunk,
                                length=lay.slot_len(size, s, g, slot), logical=logical))
    return meta, lay, out


# ------------------------------------------------------------------- flips

def shard_len(members, member, path):
    try:
        return os.stat(os.path.join(members[member], path)).st_size
    except OSError as e:
        raise Fail("cannot stat the shard of '%s' on member %d: %s" % (path, member, e.strerror))


def flip_bytes(members, member, path, at, values):
    """XOR values into the shard at `at` (in place, same length)."""
    shard = os.path.join(members[member], path)
    if at + len(values) > shard_len(members, member, path):
        raise Fail("bytes %d..%d are past the end of the shard '%s'"
                   % (at, at + len(values) - 1, shard))
    fd = os.open(shard, os.O_RDWR)
    try:
        old = os.pread(fd, len(values), at)
        os.pwrite(fd, bytes(a ^ b for a, b in zip(old, values)), at)
        os.fsync(fd)
    finally:
        os.close(fd)
    return shard


def nonzero(rnd, n):
    return bytes(rnd.randrange(1, 256) for _ in range(n))


# --------------------------------------------------------------- commands

def split_args(argv, opts):
    """MEMBERS... -- PATHS... with options (name -> takes a value) anywhere;
    returns (members, paths, {option: value or True})."""
    members, paths, got = [], [], {}
    after = False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--" and not after:
            after = True
        elif a.startswith("--") and a[2:] in opts:
            if opts[a[2:]]:
                if i + 1 >= len(argv):
                    raise Usage("%s needs a value" % a)
                got[a[2:]] = argv[i + 1]
                i += 1
            else:
                got[a[2:]] = True
        elif a.startswith("--"):
            raise Usage("unknown option %s" % a)
        else:
            (paths if after else members).append(a)
        i += 1
    if len(members) == 1 and ":" in members[0]:
        members = members[0].split(":")
    if not members:
        raise Usage("give the member directories, in member order, before --")
    for d in members:
        if not os.path.isdir(d):
            raise Fail("member directory '%s' does not exist" % d)
    paths = [p.lstrip("/") for p in paths]
    return members, paths, got


class Usage(Exception):
    pass


def num(got, name, default=None):
    v = got.get(name, default)
    if v is None:
        raise Usage("--%s is needed" % name)
    try:
        return int(v, 0) if isinstance(v, str) else v
    except ValueError:
        raise Usage("--%s wants a number, not '%s'" % (name, v))


def cmd_map(argv):
    members, paths, got = split_args(argv, {"json": False})
    if len(paths) != 1:
        raise Usage("map: give one PATH after --")
    meta, lay, chunks = chunk_map(members, paths[0])
    if got.get("json"):
        print(json.dumps(dict(path=paths[0], level=lay.name, chunk=lay.chunk, width=lay.width,
                              groups=lay.groups, rotation=lay.rotation, id="%016x" % meta["id"],
                              size=meta["size"], data_chunks=lay.data_chunks(), chunks=chunks)))
        return
    print("# %s: %s, chunk %d, width %d, groups %d, rotation %d, id %016x, size %d"
          % (paths[0], lay.name, lay.chunk, lay.width, lay.groups, lay.rotation,
             meta["id"], meta["size"]))
    print("%-7s %-5s %-6s %-6s %-12s %-8s %s" % ("stripe", "group", "slot", "member",
                                                  "shard_off", "length", "logical"))
    for c in chunks:
        print("%-7d %-5d %-6s %-6d %-12d %-8d %s" % (
            c["stripe"], c["group"], c["slot"], c["member"], c["shard_offset"], c["length"],
            "-" if c["logical"] is None else c["logical"]))


def cmd_flip(argv):
    members, paths, got = split_args(argv, {"stripe": True, "slot": True, "group": True,
                                            "member": True, "offset": True, "count": True,
                                            "seed": True, "json": False})
    if len(paths) != 1:
        raise Usage("flip: give one PATH after --")
    path = paths[0]
    meta, lay = file_layout(members, path)
    s = num(got, "stripe")
    if not 0 <= s < lay.stripes(meta["size"]):
        raise Fail("'%s' has stripes 0..%d, not %d" % (path, lay.stripes(meta["size"]) - 1, s))
    if "slot" not in got and "member" not in got:
        raise Usage("flip: give --slot or --member")
    if "slot" in got:
        g, slot = lay.slot_parse(got["slot"], num(got, "group", 0))
        j = lay.slot_member(s, g, slot)
        if "member" in got and num(got, "member") != j:
            raise Fail("slot %s of stripe %d is on member %d, not %d"
                       % (got["slot"], s, j, num(got, "member")))
    else:
        j = num(got, "member")
        if not 0 <= j < lay.width:
            raise Fail("no member %d (the array has %d)" % (j, lay.width))
        g, slot = lay.member_slot(s, j)
    count = num(got, "count", 1)
    if count < 1:
        raise Usage("--count wants at least 1")
    # what the shard holds of this chunk (never past its end)
    have = max(0, min(lay.chunk, shard_len(members, j, path) - s * lay.chunk))
    if count > have:
        raise Fail("slot %s of stripe %d (member %d) has %d bytes in its shard, fewer than %d"
                   % (lay.slot_name(g, slot), s, j, have, count))
    rnd = random.Random(num(got, "seed", 1))
    off = num(got, "offset") if "offset" in got else rnd.randrange(0, have - count + 1)
    if off < 0 or off + count > have:
        raise Fail("bytes %d..%d of the chunk: the shard holds %d bytes of it"
                   % (off, off + count - 1, have))
    at = s * lay.chunk + off
    shard = flip_bytes(members, j, path, at, nonzero(rnd, count))
    res = dict(path=path, member=j, shard=shard, stripe=s, group=g, slot=lay.slot_name(g, slot),
               shard_offset=at, count=count)
    if got.get("json"):
        print(json.dumps(res))
    else:
        print("flipped %d byte%s of %s file '%s' stripe %d group %d slot %s: member %d, shard '%s', shard offset %d"
              % (count, "" if count == 1 else "s", lay.name, path, s, g, res["slot"], j, shard, at))


def cmd_random_flips(argv):
    members, paths, got = split_args(argv, {"count": True, "seed": True, "bytes": True})
    if not paths:
        raise Usage("random-flips: give one or more PATHs after --")
    n, nbytes = num(got, "count"), num(got, "bytes", 1)
    rnd = random.Random(num(got, "seed"))
    if nbytes < 1 or n < 0:
        raise Usage("--count and --bytes want positive numbers")
    # rows: (path, stripe, group) -> chunks of the row with >= nbytes in the shard
    rows = []
    for path in paths:
        _, lay, chunks = chunk_map(members, path)
        lens = {}
        by_row = {}
        for c in chunks:
            j = c["member"]
            if j not in lens:
                lens[j] = shard_len(members, j, path)
            have = max(0, min(lay.chunk, lens[j] - c["shard_offset"]))
            if have >= nbytes:
                by_row.setdefault((c["stripe"], c["group"]), []).append((c, have))
        rows += [(path, key, by_row[key]) for key in sorted(by_row)]
    if n > len(rows):
        raise Fail("%d flips asked, the files have %d rows with %d bytes in a chunk" % (n, len(rows), nbytes))
    out = []
    for path, _, cands in rnd.sample(rows, n):
        c, have = rnd.choice(cands)
        at = c["shard_offset"] + rnd.randrange(0, have - nbytes + 1)
        flip_bytes(members, c["member"], path, at, nonzero(rnd, nbytes))
        out.append(dict(path=path, member=c["member"], stripe=c["stripe"], group=c["group"],
                        slot=c["slot"], shard_offset=at, count=nbytes))
    print(json.dumps(out, indent=1))


def main(argv):
    cmds = {"map": cmd_map, "flip": cmd_flip, "random-flips": cmd_random_flips}
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0
    if len(argv) < 2 or argv[1] not in cmds:
        sys.stderr.write(__doc__)
        return 2
    try:
        cmds[argv[1]](argv[2:])
    except Usage as e:
        sys.stderr.write("chunks.py %s: %s (see chunks.py --help)\n" % (argv[1], e))
        return 2
    except Fail as e:
        sys.stderr.write("chunks.py %s: %s\n" % (argv[1], e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
