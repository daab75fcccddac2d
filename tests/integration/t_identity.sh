#!/bin/bash
# t_identity - members are who they say they are (docs/failures.md,
# "How members are identified").
#  1. A copy of an array (cp -a A B) with one member's superblock zeroed,
#     mounted from B's directories: the mount uses only them.  Nothing
#     under A is opened for writing or changed (every file's sha1 and
#     mtime, and A's directories made read-only), the missing member is
#     named with the path to give, and A still mounts optimal and reads
#     byte-identical - also after writes through B.
#  2. Two copies of one member in one member list: with the same event
#     counter the mount is refused naming both; an older copy (lower
#     event counter) is not used, and the log names both and why.
#  3. A directory the slot had before it was rebuilt onto another one
#     (another member uuid) is not used.
#  4. An array of the older format 1 (no member uuids, made from a new
#     one by rewriting each superblock as format 1): it mounts, reads
#     byte-identical, and its superblocks are rewritten as format 3 with a
#     distinct member uuid per member, equal in every table.
#  5. A replacement in place whose directory is not in the member list is
#     not resumed (its recorded path is not opened), with a message; a
#     member directory of the list missing at mount comes back by itself
#     when it shows up at that path.
#  6. create --checksum: crc32c and none are taken and shown by status
#     (text and JSON), anything else is refused.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

# sb_field DIR FIELD: a field of DIR's superblock (format 3 or 1):
# version, events, index, csum, self (member uuid, hex), table (the
# member uuids of the table, hex, comma separated)
sb_field() {
	"$PY" - "$1" "$2" <<'PYEOF'
import struct, sys, zlib
b = open(sys.argv[1] + "/.raidfs/superblock", "rb").read()
ver, ln = struct.unpack_from("<II", b, 8)
assert b[:8] == b"RAIDFSSB" and zlib.crc32(b[:ln - 4]) == struct.unpack_from("<I", b, ln - 4)[0], "bad superblock"
width, groups, index, nspares = struct.unpack_from("<IIII", b, 104)
events = struct.unpack_from("<Q", b, 120)[0]
f = sys.argv[2]
if f == "version": print(ver)
elif f == "events": print(events)
elif f == "index": print(index)
elif f == "csum": print(b[160] if ver >= 3 else 0)
elif f == "self": print(b[144:160].hex() if ver >= 3 else "")
elif f == "table":
    print(",".join(b[192 + 280 * i + 8:192 + 280 * i + 24].hex() for i in range(width + nspares)) if ver >= 3 else "")
PYEOF
}

# to_format1 DIR...: rewrite each superblock as format 1 wrote it (bytes
# 0..143 as they are, entries of 264 bytes: state, 3 reserved,
# generation, path; no member uuids, no checksum algorithm)
to_format1() {
	"$PY" - "$@" <<'PYEOF'
import struct, sys, zlib
for d in sys.argv[1:]:
    p = d + "/.raidfs/superblock"
    b = open(p, "rb").read()
    ver, ln = struct.unpack_from("<II", b, 8)
    assert ver == 3 and b[161] == 0, (p, ver)
    width, groups, index, nspares = struct.unpack_from("<IIII", b, 104)
    n = width + nspares
    out = bytearray(b[:144])
    for i in range(n):
        e = b[192 + 280 * i:192 + 280 * (i + 1)]
        out += e[0:8] + e[24:280]
    struct.pack_into("<II", out, 8, 1, 144 + 264 * n + 4)
    out += struct.pack("<I", zlib.crc32(bytes(out)))
    open(p, "wb").write(out)
PYEOF
}

# tree_state DIR: sha1 and mtime of every file and directory under DIR
tree_state() {
	(cd "$1" && find . -printf '%p %y %T@\n' | sort && find . -type f -exec sha1sum {} + | sort)
}

# ---- 1. the clone scenario
mkdir -p "$T/A" "$T/ref"
for i in 0 1 2 3; do mkdir -p "$T/A/d$i"; done
A="$T/A/d0 $T/A/d1 $T/A/d2 $T/A/d3"
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name ida $A
mnt=$T/mnt
rfs_mount "$(join_members $A)" "$mnt" || fail "mount A"
write_fileset "$mnt" "$T/ref" 3 3 12 1 60000 || fail "file set on A"
rfs_unmount_wait "$mnt" || fail "unmount A"
cp -a "$T/A" "$T/B"
: >"$T/B/d1/.raidfs/superblock"
tree_state "$T/A" >"$T/A.before"
# A read-only as well: a write there would fail loudly (root ignores the
# modes, so the sha1 and mtime comparison below is what catches it)
chmod -R a-w "$T/A"
B="$T/B/d0 $T/B/d1 $T/B/d2 $T/B/d3"
: >"$T/daemon.log"
rfs_mount "$(join_members $B)" "$mnt" || fail "mount B: $(tail -3 "$T/daemon.log")"
sleep 2.5	# the monitor looks for members coming back once a second
grep -q "is back" "$T/daemon.log" && fail "B took a member back: $(grep "is back" "$T/daemon.log")"
grep -q "member 1 is not among the directories given.*('$T/A/d1') is not opened; give member 1's directory in the member list" "$T/daemon.log" ||
	fail "no message naming the member not given: $(tail -5 "$T/daemon.log")"
"$RAIDFS" status "$mnt" >"$T/st.txt"
grep -q "state:   degraded" "$T/st.txt" || fail "B is not degraded without member 1: $(cat "$T/st.txt")"
grep -q "^   1  .*$T/A/d1" "$T/st.txt" && grep -q "^   1  online" "$T/st.txt" && fail "B serves A's member: $(cat "$T/st.txt")"
grep -q "not given to this mount" "$T/st.txt" && grep -q "^action:  member 1 is missing: its directory is not among those this mount was given" "$T/st.txt" ||
	fail "status does not say member 1 was not given: $(cat "$T/st.txt")"
"$RAIDFS" status --json "$mnt" | "$PY" -c '
import json, sys
m = json.load(sys.stdin)["members"]
assert [x["given"] for x in m] == [True, False, True, True], m' || fail "status JSON: given"
workload compare "$mnt" "$T/ref" >"$T/cmp.out" 2>&1 || fail "B reads differ: $(cat "$T/cmp.out")"
# writes through B
head -c 300000 /dev/urandom >"$T/new.bin"
cp "$T/new.bin" "$mnt/dir0/f00" || fail "write through B"
cp "$T/new.bin" "$mnt/newfile" || fail "create through B"
sync
rfs_unmount_wait "$mnt" || fail "unmount B"
chmod -R u+w "$T/A"
tree_state "$T/A" >"$T/A.after"
diff "$T/A.before" "$T/A.after" >"$T/A.diff" || fail "mounting B changed A: $(head -5 "$T/A.diff")"
: >"$T/daemon.log"
rfs_mount "$(join_members $A)" "$mnt" || fail "mount A again"
expect_rc 0 "$RAIDFS" status "$mnt"
grep -q "state:   optimal" "$OUT" || fail "A is not optimal: $(cat "$OUT")"
workload compare "$mnt" "$T/ref" >"$T/cmp.out" 2>&1 || fail "A reads differ after B was used: $(cat "$T/cmp.out")"
[ -e "$mnt/newfile" ] && fail "a file written through B shows in A"
rfs_unmount_wait "$mnt" || fail "unmount A again"
log "ok: a copy of the array mounts without touching the original"

rm -rf "$T/B"

# ---- 2. two copies of one member in one list
cp -a "$T/A/d2" "$T/d2copy"
: >"$T/daemon.log"
expect_rc 1 "$RAIDFS" mount -o "log=$T/daemon.log" "$(join_members $A):$T/d2copy" "$mnt"
grep -q "'$T/A/d2' and '$T/d2copy' both claim to be member 2 .*same member uuid and event counter" "$ERR" ||
	fail "two identical copies: not refused naming both: $(cat "$ERR")"
is_mounted "$mnt" && fail "mounted with two copies of member 2"
# an older copy: A moves on (a change of state bumps the event counter)
rfs_mount "$(join_members $A)" "$mnt" || fail "mount A for a state change"
expect_rc 0 "$RAIDFS" fail "$mnt" 3
expect_rc 0 "$RAIDFS" add "$mnt" "$T/A/d3"
wait_member "$mnt" 3 online || fail "member 3 did not come back"
rfs_unmount_wait "$mnt" || fail "unmount A"
tree_state "$T/d2copy" >"$T/copy.before"
: >"$T/daemon.log"
rfs_mount "$T/d2copy:$(join_members $A)" "$mnt" || fail "mount with an older copy of member 2: $(tail -3 "$T/daemon.log")"
grep -q "'$T/d2copy' and '$T/A/d2' both claim to be member 2: '$T/A/d2' is used; '$T/d2copy' is not: its event counter is behind" "$T/daemon.log" ||
	fail "the older copy: no message naming both and why: $(grep -i claim "$T/daemon.log")"
expect_rc 0 "$RAIDFS" status "$mnt"
grep -q "state:   optimal" "$OUT" && grep -q "^   2  online .*  $T/A/d2 " "$OUT" ||
	fail "member 2 is not A's own directory: $(cat "$OUT")"
workload compare "$mnt" "$T/ref" >"$T/cmp.out" 2>&1 || fail "reads differ: $(cat "$T/cmp.out")"
rfs_unmount_wait "$mnt" || fail "unmount"
tree_state "$T/d2copy" >"$T/copy.after"
diff -q "$T/copy.before" "$T/copy.after" >/dev/null || fail "the older copy was changed"
rm -rf "$T/d2copy"
log "ok: two copies of one member: refused, or the older one not used"

# ---- 3. a directory the slot had before it was rebuilt elsewhere
cp -a "$T/A/d1" "$T/d1old"
mkdir -p "$T/n1"
rfs_mount "$(join_members $A)" "$mnt" || fail "mount A"
expect_rc 0 "$RAIDFS" fail "$mnt" 1
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$T/n1"
wait_member "$mnt" 1 online "$T/n1" || fail "the rebuild onto n1 did not finish"
rfs_unmount_wait "$mnt" || fail "unmount"
[ "$(sb_field "$T/n1" self)" != "$(sb_field "$T/d1old" self)" ] || fail "the rebuilt member kept the old member uuid"
# the old directory, with its event counter raised to the array's: only
# the member uuid tells it is no longer member 1
"$PY" - "$T/d1old" "$(sb_field "$T/A/d0" events)" <<'PYEOF'
import struct, sys, zlib
p = sys.argv[1] + "/.raidfs/superblock"
b = bytearray(open(p, "rb").read())
ln = struct.unpack_from("<I", b, 12)[0]
struct.pack_into("<Q", b, 120, int(sys.argv[2]))
for i in range(4):	# and the generation of its slot
    struct.pack_into("<I", b, 192 + 280 * i + 4, struct.unpack_from("<I", open(sys.argv[1] + "/../n1/.raidfs/superblock", "rb").read(), 192 + 280 * i + 4)[0])
struct.pack_into("<I", b, ln - 4, zlib.crc32(bytes(b[:ln - 4])))
open(p, "wb").write(b)
PYEOF
: >"$T/daemon.log"
rfs_mount "$T/A/d0:$T/d1old:$T/A/d2:$T/A/d3" "$mnt" || fail "mount with the old directory of member 1"
grep -q "'$T/d1old' claims to be member 1, but its member uuid .* is not the one the array records" "$T/daemon.log" ||
	fail "the old directory: no message: $(tail -5 "$T/daemon.log")"
"$RAIDFS" status "$mnt" >"$T/st.txt"
grep -q "^   1  online" "$T/st.txt" && fail "the old directory serves as member 1: $(cat "$T/st.txt")"
workload compare "$mnt" "$T/ref" >"$T/cmp.out" 2>&1 || fail "reads differ: $(cat "$T/cmp.out")"
rfs_unmount_wait "$mnt" || fail "unmount"
A="$T/A/d0 $T/n1 $T/A/d2 $T/A/d3"
log "ok: a directory the slot had before is not used"

# ---- 4. an array of format 1
to_format1 $A
[ "$(sb_field "$T/A/d0" version)" = 1 ] || fail "the superblock was not made format 1"
: >"$T/daemon.log"
rfs_mount "$(join_members $A)" "$mnt" || fail "mount of a format 1 array: $(tail -3 "$T/daemon.log")"
grep -q "superblocks are of format 1, without member uuids: each member now gets a uuid of its own" "$T/daemon.log" ||
	fail "no message about the format upgrade: $(tail -5 "$T/daemon.log")"
expect_rc 0 "$RAIDFS" status "$mnt"
grep -q "state:   optimal" "$OUT" || fail "the format 1 array is not optimal: $(cat "$OUT")"
grep -q "checksums none" "$OUT" || fail "a format 1 array does not read as checksums none: $(cat "$OUT")"
workload compare "$mnt" "$T/ref" >"$T/cmp.out" 2>&1 || fail "format 1 reads differ: $(cat "$T/cmp.out")"
rfs_unmount_wait "$mnt" || fail "unmount"
table=$(sb_field "$T/A/d0" table)
selves=""
for d in $A; do
	[ "$(sb_field "$d" version)" = 3 ] || fail "$d: not rewritten as format 3"
	[ "$(sb_field "$d" table)" = "$table" ] || fail "$d: another table of member uuids"
	selves="$selves,$(sb_field "$d" self)"
done
[ "$selves" = ",$table" ] || fail "each member's own uuid is not its table entry: $selves vs $table"
[ "$(echo "$table" | tr ',' '\n' | grep -v '^0*$' | sort -u | wc -l)" = 4 ] || fail "member uuids not distinct and set: $table"
rfs_mount "$(join_members $A)" "$mnt" || fail "mount after the upgrade"
workload compare "$mnt" "$T/ref" >"$T/cmp.out" 2>&1 || fail "reads differ after the upgrade: $(cat "$T/cmp.out")"
rfs_unmount_wait "$mnt" || fail "unmount"
log "ok: a format 1 array mounts and gets member uuids"

# ---- 5. recorded paths of a replacement; a given member shows up late
mkdir -p "$T/r1"
rfs_mount "$(join_members $A)" "$mnt" -o rebuild_min_rate=1,rebuild_max_rate=1 || fail "mount for a replacement"
head -c 4000000 /dev/urandom >"$T/ref/big"	# (the copy takes seconds at 1 MB/s)
cp "$T/ref/big" "$mnt/big"
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$T/r1"
"$RAIDFS" rebuild "$mnt" pause >/dev/null
grep -q "being replaced by $T/r1" <("$RAIDFS" status "$mnt") || fail "the replacement did not start or ended at once"
rfs_unmount_wait "$mnt" || fail "unmount during the replacement"
tree_state "$T/r1" >"$T/r1.before"
: >"$T/daemon.log"
rfs_mount "$(join_members $A)" "$mnt" || fail "mount without the replacement"
grep -q "the replacement of member 1 by '$T/r1' is not resumed: that directory is not in the member list" "$T/daemon.log" ||
	fail "no message about the replacement not given: $(tail -5 "$T/daemon.log")"
expect_rc 0 "$RAIDFS" status "$mnt"
grep -q "being replaced" "$OUT" && fail "the replacement was resumed from its recorded path: $(cat "$OUT")"
rfs_unmount_wait "$mnt" || fail "unmount"
tree_state "$T/r1" >"$T/r1.after"
diff -q "$T/r1.before" "$T/r1.after" >/dev/null || fail "the replacement's directory was changed"
rm -rf "$T/r1"
hide_member "$T/A/d2"
: >"$T/daemon.log"
rfs_mount "$(join_members $A)" "$mnt" || fail "mount with member 2 missing"
unhide_member "$T/A/d2"
wait_member "$mnt" 2 online "$T/A/d2" || fail "member 2 did not come back at its given path: $(tail -3 "$T/daemon.log")"
grep -q "member 2 came back at '$T/A/d2'" "$T/daemon.log" || fail "no message for member 2: $(tail -3 "$T/daemon.log")"
workload compare "$mnt" "$T/ref" >"$T/cmp.out" 2>&1 || fail "reads differ: $(cat "$T/cmp.out")"
rfs_unmount_wait "$mnt" || fail "unmount"
log "ok: a replacement not given is not resumed; a given member shows up late"

# ---- 6. create --checksum
C=$(make_members 3 c)
expect_rc 1 "$RAIDFS" create --level raid5 --checksum crc32 $C
grep -q "unknown checksum algorithm 'crc32': use crc32c or none" "$ERR" || fail "bad algorithm: $(cat "$ERR")"
[ -e "$T/c1/.raidfs/superblock" ] && fail "a refused create wrote a superblock"
expect_rc 0 "$RAIDFS" create --level raid5 --checksum crc32c $C
grep -q "checksums crc32c" "$OUT" || fail "create does not say the checksum: $(cat "$OUT")"
for d in $C; do [ "$(sb_field "$d" csum)" = 1 ] || fail "$d: checksum algorithm not recorded"; done
rfs_mount "$(join_members $C)" "$mnt" || fail "mount of the crc32c array"
expect_rc 0 "$RAIDFS" status "$mnt"
grep -q "^level:   raid5, 3 members, chunk 64.0 KiB, checksums crc32c$" "$OUT" || fail "status text: $(cat "$OUT")"
"$RAIDFS" status --json "$mnt" | grep -q '"checksum": "crc32c"' || fail "status JSON: $("$RAIDFS" status --json "$mnt")"
rfs_unmount_wait "$mnt" || fail "unmount"
rm -rf $C; C=$(make_members 3 c)
expect_rc 0 "$RAIDFS" create --level raid5 --checksum none $C
for d in $C; do [ "$(sb_field "$d" csum)" = 0 ] || fail "$d: --checksum none not recorded as none"; done
rm -rf $C; C=$(make_members 3 c)
expect_rc 0 "$RAIDFS" create --level raid5 $C
for d in $C; do [ "$(sb_field "$d" csum)" = 1 ] || fail "$d: the default is not crc32c"; done
rfs_mount "$(join_members $C)" "$mnt" || fail "mount of the default array"
"$RAIDFS" status --json "$mnt" | grep -q '"checksum": "crc32c"' || fail "status JSON: $("$RAIDFS" status --json "$mnt")"
rfs_unmount_wait "$mnt" || fail "unmount"
log "ok: create --checksum"
