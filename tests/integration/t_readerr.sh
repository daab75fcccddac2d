#!/bin/bash
# t_readerr - read errors are repaired from redundancy: the reader gets
# correct data, the member stays online below the threshold, the bad
# chunks are rewritten (counted as corrected); past the threshold the
# member is failed and reads still return correct data.
#
# Tiers: quick - raid6 only; long - raid5, raid6, raid1.
. "$(dirname "$0")/lib.sh"
need_fuse

for level in $(tier_pick raid6 "raid5 raid6 raid1"); do
	C=$T/$level
	mkdir -p "$C"
	mem=$(make_members 4 "$level/d")
	mnt=$C/mnt
	expect_rc 0 "$RAIDFS" create --level "$level" --chunk 4K --name "$level" $mem
	# nora: every read must reach the members (read-ahead would serve
	# the second pass from the cache)
	rfs_mount "$(join_members $mem)" "$mnt" -o read_error_threshold=10,read_policy=nora || fail "$level: mount"
	head -c 2000000 /dev/urandom > "$C/ref"
	cp "$C/ref" "$mnt/f"
	sync
	"$RAIDFS" inject "$mnt" 1 read-error count 3 >/dev/null || fail "$level: inject"
	echo 3 > /proc/sys/vm/drop_caches
	cmp -s "$C/ref" "$mnt/f" || fail "$level: wrong data read while member 1 returned read errors"
	"$RAIDFS" status --json "$mnt" > "$C/st.json"
	grep -q '"index": 1, [^}]*"state": "online"' "$C/st.json" || fail "$level: member 1 not online below the threshold: $(cat "$C/st.json")"
	grep -q '"index": 1, [^}]*"errors": 3, "corrected": [1-9]' "$C/st.json" ||
		fail "$level: member 1 should show 3 errors and corrected chunks: $(cat "$C/st.json")"
	# past the threshold (10): the member is failed, data stays correct
	"$RAIDFS" inject "$mnt" 1 read-error every >/dev/null
	echo 3 > /proc/sys/vm/drop_caches
	cmp -s "$C/ref" "$mnt/f" || fail "$level: wrong data read after member 1 kept failing"
	"$RAIDFS" status --json "$mnt" | grep -q '"index": 1, [^}]*"state": "faulty"' ||
		fail "$level: member 1 not failed past the threshold"
	rfs_unmount_wait "$mnt" || fail "$level: unmount"
	log "ok: $level"
done
# A write that must read old bytes of another chunk of its stripe (to
# compute parity) and gets a read error there: the old bytes are
# reconstructed, and the write's own bytes must still be what lands (the
# reconstruction reads every other chunk of the stripe, and once read
# them into the new data: the old data went to the members in place of
# an acknowledged write).
C=$T/rmw
mkdir -p "$C"
mem=$(make_members 4 "rmw/d")
mnt=$C/mnt
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name rmw $mem
rfs_mount "$(join_members $mem)" "$mnt" -o read_error_threshold=10,read_policy=nora || fail "rmw: mount"
head -c 12288 /dev/urandom > "$C/ref"
cp "$C/ref" "$mnt/f"
sync
# the member holding bytes 4096..8191 (the stripe's second data chunk)
holder=$("$PY" - "$C/ref" $mem <<'PYEOF'
import sys
ref = open(sys.argv[1], "rb").read()
for i, d in enumerate(sys.argv[2:]):
    if open(d + "/f", "rb").read(4096) == ref[4096:8192]:
        print(i)
PYEOF
)
[ -n "$holder" ] || fail "rmw: no member holds the second chunk as it was written"
"$RAIDFS" inject "$mnt" "$holder" read-error count 1 >/dev/null || fail "rmw: inject"
head -c 4096 /dev/urandom > "$C/new"
dd if="$C/new" of="$C/ref" bs=4096 count=1 conv=notrunc status=none
dd if="$C/new" of="$mnt/f" bs=4096 count=1 conv=notrunc status=none || fail "rmw: the write failed"
echo 3 > /proc/sys/vm/drop_caches
cmp "$C/ref" "$mnt/f" >&2 || fail "rmw: the write's bytes are not what the file holds (a read error during its parity update)"
"$RAIDFS" status --json "$mnt" | grep -q '"index": '"$holder"', [^}]*"errors": 1' ||
	fail "rmw: the injected read error was not met: $("$RAIDFS" status --json "$mnt")"
"$RAIDFS" fail "$mnt" "$holder" >/dev/null
echo 3 > /proc/sys/vm/drop_caches
cmp "$C/ref" "$mnt/f" >&2 || fail "rmw: parity does not match the written bytes"
rfs_unmount_wait "$mnt" || fail "rmw: unmount"
log "ok: a read error while a write updates parity: the write's bytes land"
exit 0
