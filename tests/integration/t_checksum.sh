#!/bin/bash
# t_checksum.sh - verified reads of checksummed files (docs/checksums.md).
#
# For each configuration: an array whose new files get checksums, one
# file written (a whole-file write, then overwrites of every size across
# chunk and block boundaries), compared with a reference copy.  Then, for
# every member in turn, 32 bytes are flipped in place in the middle of
# its shard on the member's filesystem (same length), and the file is
# read back through a new mount: it must read exactly as the reference
# (never the flipped bytes, at worst EIO on a level without redundancy),
# and when the daemon says it found a checksum error on that member, its
# CKSUM counter (status --json) has counted it and the shard on the
# member holds the right bytes again after the read.
# Every data chunk of the row is read, so at least k of the rounds (the
# members holding data there; mirrors: the copy read) find and heal it.
# `raidfs check` is clean at the end.  raid0 has nothing to heal from:
# the read fails with EIO rather than return the flipped bytes.
#
# Before the flips, the file is read through a new mount: nothing raidfs
# wrote itself (write-through, or through the write-back cache) may be
# found wrong.
#
# Tiers: quick - raid5 over 4, raid6 over 5 (write-back), raid1 over 3,
# raid0 over 3; long - also raid10 over 4, raid50 over 6, raid60 over 8,
# and each level both ways.
#
# The arrays are created with `--checksum crc32c`.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

# level width data-slots-per-row (0: raid0, no redundancy) mount-options
WT=write_policy=writethrough WB=write_policy=writeback,bbu=shm
CONFIGS=("raid5 4 3 $WT" "raid6 5 3 $WB" "raid1 3 1 $WT" "raid0 3 0 $WT")
long_tier && CONFIGS+=("raid5 4 3 $WB" "raid6 5 3 $WT" "raid1 3 1 $WB" "raid10 4 1 $WT" "raid50 6 2 $WB" "raid60 8 2 $WT")

n=0
for cfg in "${CONFIGS[@]}"; do
	n=$((n + 1))
	read -r level width k opts <<<"$cfg"
	C=$T/c$n
	mkdir -p "$C"
	mem=$(make_members "$width" "c$n/d")
	members=$(join_members $mem)
	read -r -a M <<<"$mem"
	expect_rc 0 "$RAIDFS" create --level "$level" --chunk 4K --checksum crc32c --name cs $mem
	rfs_mount "$members" "$C/mnt" -o "$opts" || fail "$level: mount"
	"$PY" - "$C/mnt/f" "$C/ref" <<'PY' || fail "$level: writing the file"
import random, sys
r = random.Random(28)
data = bytearray(r.randbytes(100000))
open(sys.argv[1], "wb").write(data)
with open(sys.argv[1], "r+b") as f:
    for _ in range(40):
        off, n = r.randrange(0, 110000), r.randrange(1, 9000)
        b = r.randbytes(n)
        f.seek(off)
        f.write(b)
        if off > len(data):
            data.extend(bytes(off - len(data)))
        data[off:off + n] = b
open(sys.argv[2], "wb").write(data)
PY
	cmp "$C/ref" "$C/mnt/f" || fail "$level: the file does not read back as written"
	rfs_unmount_wait "$C/mnt" || fail "$level: unmount"
	# what was written (through the cache too) verifies: no error said
	log0=$(stat -c %s "$T/daemon.log")
	rfs_mount "$members" "$C/mnt" -o "$opts" || fail "$level: mount"
	cmp "$C/ref" "$C/mnt/f" || fail "$level: the file does not read back after a remount"
	rfs_unmount_wait "$C/mnt" || fail "$level: unmount"
	! tail -c +$((log0 + 1)) "$T/daemon.log" | grep "checksum error" ||
		fail "$level ($opts): checksum errors on what raidfs wrote itself"
	healed=0
	for j in $(seq 0 $((width - 1))); do
		shard=${M[$j]}/f
		cp "$shard" "$C/before"
		"$PY" - "$shard" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
o = len(b) // 2
for i in range(32):
    b[o + i] ^= 0xff
open(p, "r+b").write(b)
PY
		log0=$(stat -c %s "$T/daemon.log")
		rfs_mount "$members" "$C/mnt" -o "$opts" || fail "$level: mount after the flip on member $j"
		if [ "$k" = 0 ]; then
			if cat "$C/mnt/f" >/dev/null 2>"$C/err"; then
				fail "raid0: the flipped bytes on member $j were read without an error"
			fi
			grep -q "Input/output error" "$C/err" || fail "raid0: not EIO: $(cat "$C/err")"
		else
			cmp "$C/ref" "$C/mnt/f" || fail "$level: the file reads wrong after 32 bytes flipped on member $j"
		fi
		"$RAIDFS" status --json "$C/mnt" >"$C/st.json" || true	# (exit 1: degraded)
		rfs_unmount_wait "$C/mnt" || fail "$level: unmount"
		cks=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["members"][int(sys.argv[2])]["cksum_errors"])' "$C/st.json" "$j")
		if tail -c +$((log0 + 1)) "$T/daemon.log" | grep -q "checksum error on member $j "; then
			[ "$cks" -ge 1 ] || fail "$level: a checksum error on member $j, and its CKSUM counter is $cks"
			if [ "$k" != 0 ]; then
				cmp -s "$shard" "$C/before" || fail "$level: member $j's shard was not healed"
				healed=$((healed + 1))
			fi
		elif [ "$k" = 0 ]; then
			fail "raid0: no checksum error said for member $j"
		else
			cp "$C/before" "$shard"	# parity or an unread copy: put back
		fi
		[ "$k" = 0 ] && cp "$C/before" "$shard"
	done
	[ "$healed" -ge "$k" ] || fail "$level: $healed of the row's $k data chunks found and healed"
	"$RAIDFS" check "$members" >"$C/check.out" 2>&1 || { cat "$C/check.out" >&2; fail "$level: check not clean"; }
	log "ok: $level over $width ($opts): every flip read right; $healed chunks found and healed"
done
# read-time corruption (the `corrupt` fault: bytes flipped as they are
# read, the disk's bytes intact): every read right, the member's CKSUM
# counts it, and past -o cksum_error_threshold the member is failed, with
# the ChecksumErrors event
C=$T/inj
mkdir -p "$C"
mem=$(make_members 4 "inj/d")
members=$(join_members $mem)
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --checksum crc32c --name inj $mem
rfs_mount "$members" "$C/mnt" -o write_policy=writethrough,cksum_error_threshold=5 || fail "corrupt: mount"
head -c 300000 /dev/urandom >"$C/ref"
cp "$C/ref" "$C/mnt/f"
rfs_unmount_wait "$C/mnt" || fail "corrupt: unmount"
rfs_mount "$members" "$C/mnt" -o write_policy=writethrough,cksum_error_threshold=5 || fail "corrupt: mount"
expect_rc 0 "$RAIDFS" inject "$C/mnt" 1 corrupt 1
cmp "$C/ref" "$C/mnt/f" || fail "corrupt: the file reads wrong while member 1 corrupts every read"
"$RAIDFS" status --json "$C/mnt" >"$C/st.json" || true	# (exit 1: degraded)
read -r state cks why < <("$PY" -c 'import json,sys
m = json.load(open(sys.argv[1]))["members"][1]
print(m["state"], m["cksum_errors"], m["fail_reason"].replace(" ", "_"))' "$C/st.json")
[ "$cks" -ge 5 ] || fail "corrupt: member 1 counted $cks checksum errors"
[ "$state" = faulty ] || fail "corrupt: member 1 is $state past the threshold of 5"
[[ $why == *checksum_errors* ]] || fail "corrupt: member 1's fail reason: $why"
grep -q "event ChecksumErrors member 1" "$T/daemon.log" || fail "corrupt: no ChecksumErrors event"
rfs_unmount_wait "$C/mnt" || fail "corrupt: unmount"
log "ok: read-time corruption on a member: reads right, $cks checksum errors counted, the member failed past the threshold"
log "all configurations passed"
