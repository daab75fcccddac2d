#!/bin/bash
# t_rebuild_sums.sh - the rebuild of checksummed files goes the fast way
# (rebuild.c's windows) and is verified (docs/checksums.md, "Rebuild,
# re-add, replacement"): every chunk it reads and every chunk it makes
# matches the rows' believed records, or that stripe goes stripe by
# stripe (stripe_rebuild_chunk(): the bad chunk rebuilt from the others,
# counted, healed).  Arrays with chunk 4K (a window is 64 stripes, so the
# 1 MiB file spans two), `--checksum crc32c`.
#
# (a) raid6 over 5: 16 bytes of a data chunk of stripe 70 flipped on a
#     member other than 1 (a source of member 1's chunk there), then
#     member 1 failed and replaced by an empty directory (raid6: with
#     member 1 gone the flipped chunk is rebuilt from the rest; raid5
#     could not, and the file's rebuild would fail): the files read
#     right (sha1), the flipped member's CKSUM counter went up and its
#     shard is again what it was, the new member's shard is the old
#     member 1's, and `raidfs check` is clean.  Without the verification
#     the rebuild would have written XOR-garbage to the new member and
#     counted nothing.
# (b) raid5 over 4, replaced in place (a copy of member 2's own chunks):
#     member 2's own data chunk of stripe 5 flipped: the copy holds the
#     right bytes (not the flipped ones), a checksum error on member 2 is
#     said in the log, check clean.
# (c) raid6 over 5, nothing corrupt: member 1 failed and replaced: no
#     checksum error counted on any member or said, check clean, the
#     files read right, and the new member's checksum file holds, row by
#     row, the record with the highest generation among the other
#     members' (none where they have none).
#
# Tiers: the same in both (about 15 s).
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

# new LEVEL WIDTH NAME: array in $T/NAME (sets C, mem, members, M[],
# mnt), files f1 (1 MiB + 5 KiB: two windows) and f2, f3 (small), in
# $C/ref too; unmounted, check clean
new() {
	C=$T/$3
	mkdir -p "$C/ref"
	mem=$(make_members "$2" "$3/d")
	members=$(join_members $mem)
	read -r -a M <<<"$mem"
	mnt=$C/mnt
	expect_rc 0 "$RAIDFS" create --level "$1" --chunk 4K --checksum crc32c --name "$3" $mem
	head -c $((1048576 + 5000)) /dev/urandom >"$C/ref/f1"
	head -c 70000 /dev/urandom >"$C/ref/f2"
	head -c 3000 /dev/urandom >"$C/ref/f3"
	rfs_mount "$members" "$mnt" -o write_policy=writethrough || fail "$3: mount"
	cp "$C/ref/f1" "$C/ref/f2" "$C/ref/f3" "$mnt/" || fail "$3: writing the files"
	rfs_unmount_wait "$mnt" || fail "$3: unmount"
	expect_rc 0 "$RAIDFS" check "$members"
}
mnt_up() { rfs_mount "$1" "$mnt" -o write_policy=writethrough || fail "$what: mount"; }
mnt_down() { rfs_unmount_wait "$mnt" || fail "$what: unmount"; }
# member_of STRIPE SLOT: the member that holds that chunk of f1
member_of() { chunk_member "$members" f1 "$1" "$2" || fail "$what: chunks.py map"; }
# flip STRIPE SLOT: 16 bytes of that chunk of f1 flipped; prints the member
flip() { chunk_flip "$members" f1 "$1" "$2" || fail "$what: chunks.py flip $1 $2"; }
# cksum J: member J's cksum_errors (mounted)
cksum() { member_cksum "$mnt" "$1"; }
# same_files: every file reads as its reference
same_files() {
	local f
	for f in f1 f2 f3; do
		[ "$(sha1sum <"$mnt/$f")" = "$(sha1sum <"$C/ref/$f")" ] || fail "$what: $f reads wrong after the rebuild"
	done
}
# now_at J DIR: member J's directory is DIR now; check clean there
now_at() {
	M[$1]=$2
	members=$(join_members "${M[@]}")
	expect_rc 0 "$RAIDFS" check "$members"
}
# replace_wait J DIR: member J replaced by DIR, until it is online there
replace_wait() {
	mkdir -p "$2"
	expect_rc 0 "$RAIDFS" replace "$mnt" "$1" "$2"
	wait_member "$mnt" "$1" online "$2" || fail "$what: the rebuild onto $2 did not end: $("$RAIDFS" status "$mnt")"
}

# ---- (a) a flipped source chunk
what="(a) raid6, a source flipped"
new raid6 5 a
for slot in d0 d1 d2; do
	j=$(member_of 70 "$slot")
	[ "$j" != 1 ] && break
done
cp "${M[$j]}/f1" "$C/before.$j"
cp "${M[1]}/f1" "$C/before.1"
[ "$(flip 70 "$slot")" = "$j" ] || fail "$what: chunks.py flipped another member than the map says"
cmp -s "${M[$j]}/f1" "$C/before.$j" && fail "$what: the flip changed nothing"
mnt_up "$members"
c0=$(cksum "$j")
expect_rc 0 "$RAIDFS" fail "$mnt" 1
replace_wait 1 "$C/new1"
c1=$(cksum "$j")
same_files
mnt_down
[ "$c1" -gt "$c0" ] || fail "$what: CKSUM of member $j stayed $c0: the rebuild did not see its flipped $slot of stripe 70"
cmp -s "${M[$j]}/f1" "$C/before.$j" || fail "$what: the flipped $slot on member $j was not healed"
cmp -s "$C/new1/f1" "$C/before.1" || fail "$what: the new member's shard of f1 is not the old member 1's"
now_at 1 "$C/new1"
log "ok: $what: $slot of stripe 70 flipped on member $j: rebuilt right, CKSUM $c0 -> $c1, healed, check clean"

# ---- (b) a replacement in place copies a flipped chunk of its own member
what="(b) raid5, replace in place"
new raid5 4 b
cp "${M[2]}/f1" "$C/before.2"
for s in 5 6 7; do
	slot=""
	for sl in d0 d1 d2; do [ "$(member_of "$s" "$sl")" = 2 ] && { slot=$sl; break; }; done
	[ -n "$slot" ] && break
done
[ -n "$slot" ] || fail "$what: member 2 holds no data chunk of stripes 5-7"
flip "$s" "$slot" >/dev/null
mnt_up "$members"
replace_wait 2 "$C/new2"
same_files
mnt_down
cmp -s "$C/new2/f1" "$C/before.2" || fail "$what: the copy of member 2's shard holds the flipped bytes"
grep -q "checksum error on member 2 " "$T/daemon.log" || fail "$what: no checksum error on member 2 said"
now_at 2 "$C/new2"
log "ok: $what: member 2's own $slot of stripe $s flipped: the copy holds the right bytes, the error said"

# ---- (c) nothing corrupt
what="(c) raid6, clean"
: >"$T/daemon.log"
new raid6 5 c
mnt_up "$members"
expect_rc 0 "$RAIDFS" fail "$mnt" 1
replace_wait 1 "$C/new1"
for j in 0 2 3 4; do
	[ "$(cksum "$j")" = 0 ] || fail "$what: a checksum error counted on member $j"
done
same_files
mnt_down
grep -qi "checksum error\|checksum record" "$T/daemon.log" && fail "$what: $(grep -i "checksum" "$T/daemon.log" | head -3)"
now_at 1 "$C/new1"
# the new member's records: row by row, the newest of the others'
"$PY" - "${M[@]}" <<'PYEOF' || fail "$what: the new member's checksum records are not the believed ones"
import glob, os, sys
members = sys.argv[1:]
new, others = members[1], members[:1] + members[2:]
sums = sorted(glob.glob(os.path.join(new, ".raidfs/sums/*/*")))
assert len(sums) == 3, "checksum files on the new member: %r" % sums
R = (8 + 4 * 5 * 1 + 4 + 15) // 16 * 16     # raid6 over 5, chunk 4K: one block per slot
for path in sums:
    rel = os.path.relpath(path, new)
    mine = open(path, "rb").read()
    theirs = [open(os.path.join(o, rel), "rb").read() for o in others]
    rows = max(len(t) for t in theirs) // R
    for s in range(rows):
        recs = [t[s * R:(s + 1) * R] for t in theirs if len(t) >= (s + 1) * R]
        best = max(recs, key=lambda r: int.from_bytes(r[:8], "little"))
        got = mine[s * R:(s + 1) * R].ljust(R, b"\0")
        assert got == best, "%s row %d: %s, the others' newest %s" % (rel, s, got[:8].hex(), best[:8].hex())
    assert len(mine) <= rows * R, "%s: records past the file's rows" % rel
PYEOF
log "ok: $what: no checksum error, check clean, the new member's records are the believed ones"

log "all passed"
