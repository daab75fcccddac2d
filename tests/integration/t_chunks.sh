#!/bin/bash
# t_chunks - tests/tools/chunks.py finds every chunk where raidfs put it.
#
# For raid5 (4), raid6 (5), raid1 (3), raid10 (4), raid50 (6, 2 groups)
# and raid60 (8, 2 groups), chunk 4K: files of several sizes (smaller than
# a chunk, one chunk, several stripes and a partial one), every 8-byte word
# holding its own logical offset and the file's number, written through
# the mount.  After the unmount, `chunks.py map --json` must say, for
# every stripe:
#   - each member holds exactly one slot; the data chunks cover the file
#     once, in order;
#   - a data chunk (and a mirror copy) holds, at its shard offset, the
#     file bytes of its logical offset; P is the XOR of its row's data; Q
#     is sum 2^i D_i over GF(2^8) (polynomial 0x11d);
#   - each shard is exactly as long as its last slot says.
# Then `chunks.py flip` and `random-flips` damage chunks, and the offline
# `raidfs check` must name exactly the rows they damaged (and the bytes
# changed must be exactly the ones they reported).
#
# Tiers: quick and long are the same (about 20 s).
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

CHUNKS=$TOOLS/chunks.py
CH=4096

# writefiles MNT D: files f0..f7, sizes around D (data chunks per stripe)
writefiles() {
	"$PY" - "$@" <<'PYEOF'
import os, struct, sys
mnt, D = sys.argv[1], int(sys.argv[2])
CH = 4096
sizes = [100, CH, CH + 1, D * CH, 3 * D * CH + 5000, 5 * D * CH + 2 * CH, 7 * D * CH - 1, 2 * D * CH + D * CH // 2 + 17]
for n, size in enumerate(sizes):
    words = (size + 7) // 8
    data = b"".join(struct.pack("<Q", (8 * w) | (n + 1) << 56) for w in range(words))[:size]
    with open(os.path.join(mnt, "f%d" % n), "wb") as f:
        f.write(data)
PYEOF
}

# verify CHUNKS MEMBERS...: check the map of f0..f7 against the shards
verify() {
	"$PY" - "$@" <<'PYEOF'
import json, os, struct, subprocess, sys
tool, members = sys.argv[1], sys.argv[2:]
CH = 4096
bad = []

def expect(n, logical, length):
    """the file bytes at logical offset `logical`"""
    first = logical // 8
    raw = b"".join(struct.pack("<Q", (8 * w) | (n + 1) << 56) for w in range(first, first + (length + 7) // 8 + 1))
    return raw[logical - 8 * first:][:length]

def xor(a, b):
    return bytes(x ^ y for x, y in zip(a, b))

def mul2(b):
    n = len(b)
    x = int.from_bytes(b, "big")
    hi = x & int.from_bytes(b"\x80" * n, "big")
    lo = x & int.from_bytes(b"\x7f" * n, "big")
    return ((lo << 1) ^ ((hi >> 7) * 0x1d)).to_bytes(n, "big")

for n in range(8):
    path = "f%d" % n
    m = json.loads(subprocess.run([sys.executable, tool, "map", *members, "--", path, "--json"],
                                  check=True, stdout=subprocess.PIPE).stdout)
    size, D, chunk = m["size"], m["data_chunks"], m["chunk"]
    if chunk != CH or m["width"] != len(members):
        bad.append("%s: map says chunk %d, width %d" % (path, chunk, m["width"]))
    shards = [open(os.path.join(d, path), "rb").read() for d in members]
    rows = {}
    covered = []
    last = {}
    for c in m["chunks"]:
        s, j = c["stripe"], c["member"]
        rows.setdefault(s, {})
        if j in rows[s] or not 0 <= j < len(members):
            bad.append("%s stripe %d: member %d twice or out of range" % (path, s, j))
        rows[s][j] = c
        if c["shard_offset"] != s * chunk:
            bad.append("%s stripe %d: shard offset %d" % (path, s, c["shard_offset"]))
        last[j] = c
        got = shards[j][c["shard_offset"]:c["shard_offset"] + c["length"]]
        c["bytes"] = got
        if c["slot"].startswith("d"):
            d = int(c["slot"][1:])
            want_logical = (s * D + d) * chunk
            if c["logical"] != want_logical:
                bad.append("%s stripe %d %s: logical %s, not %d" % (path, s, c["slot"], c["logical"], want_logical))
            if c["length"]:
                covered.append((c["logical"], c["length"]))
        if c["logical"] is not None and got != expect(n, c["logical"], c["length"]):
            bad.append("%s stripe %d group %d %s: member %d at %d does not hold logical %d"
                       % (path, s, c["group"], c["slot"], j, c["shard_offset"], c["logical"]))
    for s, row in rows.items():
        if sorted(row) != list(range(len(members))):
            bad.append("%s stripe %d: members %s" % (path, s, sorted(row)))
        for g in {c["group"] for c in row.values()}:
            cs = [c for c in row.values() if c["group"] == g]
            data = sorted((c for c in cs if c["slot"].startswith("d")), key=lambda c: int(c["slot"][1:]))
            for c in cs:
                if c["slot"] not in ("P", "Q"):
                    continue
                L = c["length"]
                ds = [x["bytes"].ljust(L, b"\0") for x in data]
                want = bytes(L)
                if c["slot"] == "P":
                    for x in ds:
                        want = xor(want, x)
                else:
                    for x in reversed(ds):
                        want = xor(mul2(want), x)
                if c["bytes"] != want:
                    bad.append("%s stripe %d group %d: %s on member %d is not the %s of the row's data"
                               % (path, s, g, c["slot"], c["member"], "XOR" if c["slot"] == "P" else "GF sum"))
    covered.sort()
    pos = 0
    for off, ln in covered:
        if off != pos:
            bad.append("%s: data chunks cover %d.. next, expected %d" % (path, off, pos))
        pos = off + ln
    if pos != size:
        bad.append("%s: data chunks end at %d, size %d" % (path, pos, size))
    for j, c in last.items():
        if len(shards[j]) != c["shard_offset"] + c["length"]:
            bad.append("%s: shard of member %d is %d bytes, map ends it at %d"
                       % (path, j, len(shards[j]), c["shard_offset"] + c["length"]))
for b in bad[:20]:
    print(b)
sys.exit(1 if bad else 0)
PYEOF
}

# flips_checked MEMBERS... : random-flips + one explicit flip, then
# raidfs check must name exactly those rows
flips_checked() {
	local members=("$@") colon
	colon=$(join_members "${members[@]}")
	"$PY" - "$CHUNKS" "$RAIDFS" "$colon" <<'PYEOF'
import json, os, re, subprocess, sys
tool, raidfs, colon = sys.argv[1:4]
members = colon.split(":")
paths = ["f%d" % n for n in range(8)]
def snap():
    return {(j, p): open(os.path.join(d, p), "rb").read() for j, d in enumerate(members) for p in paths}
before = snap()
out = subprocess.run([sys.executable, tool, "random-flips", colon, "--count", "4", "--seed", "7", "--bytes", "2", "--", *paths],
                     check=True, stdout=subprocess.PIPE).stdout
flips = json.loads(out)
# one explicit flip: the last stripe's last redundancy slot of f5, group 0
m = json.loads(subprocess.run([sys.executable, tool, "map", colon, "--", "f5", "--json"],
                              check=True, stdout=subprocess.PIPE).stdout)
taken = {(f["path"], f["stripe"], f["group"]) for f in flips}
pick = [c for c in m["chunks"] if c["length"] >= 3 and ("f5", c["stripe"], c["group"]) not in taken][-1]
one = json.loads(subprocess.run([sys.executable, tool, "flip", *members, "--", "f5", "--stripe", str(pick["stripe"]),
                                 "--slot", pick["slot"], "--group", str(pick["group"]), "--count", "3", "--offset", "0", "--json"],
                                check=True, stdout=subprocess.PIPE).stdout)
if (one["member"], one["shard_offset"]) != (pick["member"], pick["shard_offset"]):
    sys.exit("flip of %s: went to member %d at %d, map says %d at %d"
             % (pick, one["member"], one["shard_offset"], pick["member"], pick["shard_offset"]))
flips.append(one)
after = snap()
# the bytes that changed are exactly the reported ones
changed = set()
for key in before:
    a, b = before[key], after[key]
    if len(a) != len(b):
        sys.exit("shard %s changed length" % (key,))
    changed |= {(key[0], key[1], i) for i in range(len(a)) if a[i] != b[i]}
want = {(f["member"], f["path"], f["shard_offset"] + i) for f in flips for i in range(f["count"])}
if changed != want:
    sys.exit("flips changed %s, reported %s" % (sorted(changed)[:8], sorted(want)[:8]))
r = subprocess.run([raidfs, "check", colon], stdout=subprocess.PIPE, universal_newlines=True)
rows = set(re.findall(r"file '([^']+)': stripe (\d+) group (\d+): redundancy does not match", r.stdout))
rows = {(p, int(s), int(g)) for p, s, g in rows}
flipped = {(f["path"], f["stripe"], f["group"]) for f in flips}
if rows != flipped:
    sys.exit("raidfs check names rows %s, the flips were in %s\n%s" % (sorted(rows), sorted(flipped), r.stdout))
PYEOF
}

for cfg in raid5:4 raid6:5 raid1:3 raid10:4 raid50:6:2 raid60:8:2; do
	IFS=: read -r level width groups <<<"$cfg"
	C=$T/$level
	mkdir -p "$C"
	mem=$(make_members "$width" "$level/d")
	mnt=$C/mnt
	gopt=()
	[ -n "$groups" ] && gopt=(--groups "$groups")
	# (no checksums: check's rows of redundancy against data are what the
	# flips are compared with; by checksum: t_cksum_flips.sh)
	expect_rc 0 "$RAIDFS" create --level "$level" --chunk 4K --checksum none "${gopt[@]}" --name "$level" $mem
	rfs_mount "$(join_members $mem)" "$mnt" || fail "$level: mount"
	writefiles "$mnt" "$(stripe_data_chunks "$level" "$width" "${groups:-2}")" || fail "$level: writing the files"
	rfs_unmount_wait "$mnt" || fail "$level: unmount"
	verify "$CHUNKS" $mem || fail "$level: chunks.py map does not match the shards"
	expect_rc 0 "$RAIDFS" check "$(join_members $mem)"
	flips_checked $mem || fail "$level: flips do not match what raidfs check finds"
	log "ok: $level x$width"
done

# the tool refuses what it cannot do
set -- $mem
expect_rc 2 "$PY" "$CHUNKS" map "$@" -- f0 --bogus
expect_rc 1 "$PY" "$CHUNKS" map "$@" -- nofile
expect_rc 1 "$PY" "$CHUNKS" flip "$@" -- f0 --stripe 0 --slot d9
expect_rc 1 "$PY" "$CHUNKS" flip "$@" -- f0 --stripe 0 --slot d0 --offset 4090 --count 8
expect_rc 1 "$PY" "$CHUNKS" random-flips "$@" --count 1000 --seed 1 -- f0
log "ok"
