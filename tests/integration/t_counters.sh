#!/bin/bash
# t_counters - per-member error counters, as zpool status shows them:
#   - read errors injected on one member show in its READ column (text)
#     and "read_errors" (JSON), with the bytes repaired on it, and on no
#     other member;
#   - a write error shows in WRITE / "write_errors" of the member it
#     failed, and its fail_reason says so;
#   - the counters are kept on the members (.raidfs/counters) and are the
#     same after an unmount and a mount (also for the failed member, now
#     stale);
#   - 'raidfs clear MNT MEMBER' resets that member only (by index and by
#     path), 'raidfs clear MNT' every member, and that too lasts across a
#     mount; a member that is not in the array is refused with a message;
#   - -o cksum_error_threshold: a bad value is refused at mount, naming
#     the option; a good one mounts (the threshold itself is tested in
#     tests/unit/test_counters.c, where checksum errors can be made).
. "$(dirname "$0")/lib.sh"
need_fuse

mem=$(make_members 4)
set -- $mem
d1=$1 d2=$2 d3=$3
mnt=$T/mnt
expect_rc 0 "$RAIDFS" create --level raid6 --chunk 4K --name ct $mem
opts=read_error_threshold=10,read_policy=nora,cksum_error_threshold=7

# json_member J FIELD...: the fields of member J from status --json, one line
json_member() {
	"$RAIDFS" status --json "$mnt" > "$T/st.json"
	"$PY" - "$T/st.json" "$@" <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1]))["members"][int(sys.argv[2])]
print(" ".join(str(m[f]) for f in sys.argv[3:]))
PYEOF
}

# ---- bad thresholds are refused, naming the option
for bad in abc -1 5x "" 4294967296 " 3"; do
	expect_rc 1 "$RAIDFS" mount -o "log=$T/daemon.log,cksum_error_threshold=$bad" "$(join_members $mem)" "$mnt"
	grep -q "bad cksum_error_threshold '$bad': give a whole number of checksum errors" "$ERR" ||
		fail "cksum_error_threshold=$bad: no clear message: $(cat "$ERR")"
	! is_mounted "$mnt" || fail "cksum_error_threshold=$bad: mounted anyway"
done
expect_rc 1 "$RAIDFS" mount -o "log=$T/daemon.log,read_error_threshold=ten" "$(join_members $mem)" "$mnt"
grep -q "bad read_error_threshold 'ten': give a whole number of read errors" "$ERR" ||
	fail "read_error_threshold=ten: no clear message: $(cat "$ERR")"
log "ok: bad cksum_error_threshold (and read_error_threshold) values refused"

rfs_mount "$(join_members $mem)" "$mnt" -o "$opts" || fail "mount"
for j in 0 1 2 3; do
	[ "$(json_member $j read_errors write_errors cksum_errors repaired_bytes)" = "0 0 0 0" ] ||
		fail "member $j of a new array has counters: $(cat "$T/st.json")"
done
grep -q '^members: *READ WRITE CKSUM REPAIRED  DIRECTORY$' < <("$RAIDFS" status "$mnt") ||
	fail "no READ WRITE CKSUM REPAIRED header: $("$RAIDFS" status "$mnt")"

# ---- read errors: READ on member 1 only, bytes repaired there
head -c 2000000 /dev/urandom > "$T/ref"
cp "$T/ref" "$mnt/f"
sync
expect_rc 0 "$RAIDFS" inject "$mnt" 1 read-error count 3
echo 3 > /proc/sys/vm/drop_caches
cmp -s "$T/ref" "$mnt/f" || fail "wrong data read while member 1 returned read errors"
read -r r w c rep st < <(json_member 1 read_errors write_errors cksum_errors repaired_bytes state)
[ "$r $w $c $st" = "3 0 0 online" ] || fail "member 1 after 3 read errors: read $r write $w cksum $c $st: $(cat "$T/st.json")"
[ "$rep" -gt 0 ] || fail "member 1: nothing repaired after its read errors were corrected: $(cat "$T/st.json")"
for j in 0 2 3; do
	[ "$(json_member $j read_errors write_errors)" = "0 0" ] || fail "member $j counted member 1's errors: $(cat "$T/st.json")"
done
"$RAIDFS" status "$mnt" > "$T/st.txt"
grep -qE "^   1  online +3 +0 +0 +[0-9.]+[BKM]  $d2  \(" "$T/st.txt" ||
	fail "member 1's READ column: $(cat "$T/st.txt")"
grep -qE "^   0  online +0 +0 +0 +0B  $d1  \(" "$T/st.txt" || fail "member 0's columns: $(cat "$T/st.txt")"
log "ok: injected read errors are member 1's READ, $rep bytes repaired"

# ---- a write error: WRITE on member 2, which is failed for it
expect_rc 0 "$RAIDFS" inject "$mnt" 2 write-error count 3
head -c 300000 /dev/urandom > "$T/ref2"
dd if="$T/ref2" of="$mnt/g" bs=64K conv=fsync status=none || fail "a write failed with one member refusing writes (raid6)"
read -r w2 st2 < <(json_member 2 write_errors state)
[ "$st2" = faulty ] && [ "$w2" -ge 1 ] && [ "$w2" -le 3 ] ||
	fail "member 2 after a write error: write_errors $w2, $st2: $(cat "$T/st.json")"
"$PY" -c 'import json,sys; m = json.load(open(sys.argv[1]))["members"][2]; sys.exit(not m["fail_reason"].startswith("write error"))' "$T/st.json" ||
	fail "member 2's fail_reason: $(cat "$T/st.json")"
"$RAIDFS" status "$mnt" > "$T/st.txt"
grep -qE "^   2  faulty +0 +$w2 +0 +0B  $d3  \(" "$T/st.txt" || fail "member 2's WRITE column: $(cat "$T/st.txt")"
log "ok: a write error is member 2's WRITE ($w2), and failed it"

# ---- kept across an unmount and a mount
before=$(for j in 0 1 2 3; do json_member $j read_errors write_errors cksum_errors repaired_bytes; done)
rfs_unmount_wait "$mnt" || fail "unmount"
# (a member whose counters never changed has no file: all zero)
for d in "$d2" "$d3"; do
	[ -f "$d/.raidfs/counters" ] || fail "no .raidfs/counters on $d after the unmount"
done
grep -qx "read_errors 3" "$d2/.raidfs/counters" || fail "member 1's file: $(cat "$d2/.raidfs/counters")"
rfs_mount "$(join_members $mem)" "$mnt" -o "$opts" || fail "mount again"
after=$(for j in 0 1 2 3; do json_member $j read_errors write_errors cksum_errors repaired_bytes; done)
[ "$before" = "$after" ] || fail "counters changed across a mount: before: $before; after: $after"
cmp -s "$T/ref" "$mnt/f" && cmp -s "$T/ref2" "$mnt/g" || fail "data wrong after the mount"
log "ok: counters kept across unmount and mount"

# ---- raidfs clear: one member (index, then path), then all
expect_rc 1 "$RAIDFS" clear "$mnt" 9
grep -q "no member '9' in array 'ct' (give its index or path" "$ERR" || fail "clear 9: $(cat "$ERR")"
expect_rc 0 "$RAIDFS" clear "$mnt" 1
grep -q "error counters of member 1 '$d2' cleared" "$OUT" || fail "clear 1 said: $(cat "$OUT")"
[ "$(json_member 1 read_errors write_errors cksum_errors repaired_bytes errors corrected)" = "0 0 0 0 0 0" ] ||
	fail "member 1 not cleared: $(cat "$T/st.json")"
[ "$(json_member 2 write_errors)" = "$w2" ] || fail "clear of member 1 cleared member 2: $(cat "$T/st.json")"
expect_rc 0 "$RAIDFS" inject "$mnt" 0 read-error count 1
echo 3 > /proc/sys/vm/drop_caches
cmp -s "$T/ref" "$mnt/f" || fail "wrong data read with a read error on member 0"
[ "$(json_member 0 read_errors)" = 1 ] || fail "member 0's read error not counted: $(cat "$T/st.json")"
(cd "$T" && "$RAIDFS" clear "$mnt" d1 > "$T/out.txt") || fail "clear by a relative path"
[ "$(json_member 0 read_errors)" = 0 ] || fail "clear d1 (a path) did not clear member 0: $(cat "$T/st.json")"
expect_rc 0 "$RAIDFS" clear "$mnt"
grep -q "error counters of the 4 members of array 'ct' cleared" "$OUT" || fail "clear said: $(cat "$OUT")"
for j in 0 1 2 3; do
	[ "$(json_member $j read_errors write_errors cksum_errors repaired_bytes)" = "0 0 0 0" ] ||
		fail "member $j not cleared: $(cat "$T/st.json")"
done
rfs_unmount_wait "$mnt" || fail "unmount after clear"
rfs_mount "$(join_members $mem)" "$mnt" -o "$opts" || fail "mount after clear"
for j in 0 1 2 3; do
	[ "$(json_member $j read_errors write_errors cksum_errors repaired_bytes)" = "0 0 0 0" ] ||
		fail "member $j's counters came back after clear and a mount: $(cat "$T/st.json")"
done
rfs_unmount_wait "$mnt" || fail "last unmount"
log "ok: raidfs clear of one member and of all, kept across a mount"
exit 0
