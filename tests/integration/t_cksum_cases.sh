#!/bin/bash
# t_cksum_cases.sh - single checksum cases, each on the chunk it is
# meant to hit (tests/tools/chunks.py says where a chunk lives), on
# arrays created with `--checksum crc32c`, chunk 4K (docs/checksums.md).
#
# (a) every redundant level: a file of several stripes; bytes of one
#     DATA chunk of stripe 1 flipped on its member (d0; mirrors: the copy
#     a read of stripe s reads, slot s mod copies - copy1): a read
#     through a new mount returns the right bytes, that member's CKSUM
#     counter (status --json "cksum_errors") goes up, and its shard is
#     again what it was before the flip.  Then bytes of one REDUNDANCY
#     chunk of stripe 2 flipped (P; mirrors: a copy that a read of stripe
#     2 does not read - copy1 of a 3-way raid1 and of raid10): a plain
#     read returns the right bytes and leaves it alone (no read of it:
#     CKSUM unchanged, the shard still flipped); `raidfs scrub --repair`
#     puts the chunk back (the shard is what it was) and that member's
#     CKSUM counter goes up.
# (b) degraded: raid6 over 5 with the member holding d1 of stripe 1
#     absent (hidden: a missing disk), a data chunk flipped in each of
#     stripes 0..3 on other members (d0 of stripe 1 among them, so d1
#     there must be decoded without it): the file reads right.  The same
#     on a 3-way raid1 with member 0 absent and copy1 flipped in stripes
#     0..5: the reads go to the copy that verifies.
# (c) raid6 over 5: d0 and d1 of one stripe (two members) flipped: a
#     scrub --repair restores both (shards as before the flips, check
#     clean); the same on another stripe, found by a plain read instead:
#     right bytes, both chunks healed.
# (d) a lost write: raid5 over 4 and raid1 over 2, write_policy=
#     writethrough: `raidfs inject MNT J drop-write count 1` on the
#     member holding d0 of stripe 2 (on raid1 over 2 also the copy a
#     read of stripe 2 reads), that chunk's range overwritten through
#     the mount, the injection cleared: the member's shard still holds
#     the OLD bytes (the injection dropped the write).  A new mount reads
#     the NEW bytes, counts a checksum error on J and its shard then
#     holds the new bytes.
#
# A mirror copy rebuilt by scrub --repair must count on its member like
# a parity chunk does: (a) on raid1 and raid10 checks it (copy1).
#
# Tiers: quick - (a) on raid5 over 4, raid6 over 5, raid1 over 3; long -
# also raid10 over 4, raid50 over 6, raid60 over 8.  (b)-(d) the same in
# both.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

CH=4096
SIZE=$((CH * 40 + 1234))	# (several stripes at every width)

# new LEVEL WIDTH NAME [mount options]: array in $T/NAME (sets C, mem,
# members, M[], mnt), a file f of SIZE random bytes ($C/ref), unmounted
new() {
	C=$T/$3
	mkdir -p "$C"
	mem=$(make_members "$2" "$3/d")
	members=$(join_members $mem)
	read -r -a M <<<"$mem"
	mnt=$C/mnt
	OPTS=${4:-write_policy=writethrough}
	expect_rc 0 "$RAIDFS" create --level "$1" --chunk 4K --checksum crc32c --name "$3" $mem
	head -c "$SIZE" /dev/urandom >"$C/ref"
	rfs_mount "$members" "$mnt" -o "$OPTS" || fail "$3: mount"
	cp "$C/ref" "$mnt/f" || fail "$3: writing the file"
	rfs_unmount_wait "$mnt" || fail "$3: unmount"
	expect_rc 0 "$RAIDFS" check "$members"
}
mnt_up() { rfs_mount "$members" "$mnt" -o "$OPTS" || fail "$1: mount"; }
mnt_down() { rfs_unmount_wait "$mnt" || fail "$1: unmount"; }
# save: copy every member's shard of f to $C/before.J
save() { local j; for j in "${!M[@]}"; do cp "${M[$j]}/f" "$C/before.$j"; done; }
# flip STRIPE SLOT: 16 bytes of that chunk of f flipped; prints the member
flip() { chunk_flip "$members" f "$1" "$2" || fail "$what: chunks.py flip $1 $2"; }
# member_of STRIPE SLOT: the member that holds that chunk of f
member_of() { chunk_member "$members" f "$1" "$2" || fail "$what: chunks.py map"; }
# cksum J: member J's cksum_errors (mounted)
cksum() { member_cksum "$mnt" "$1"; }
# chunk_at FILE STRIPE: the 4K chunk at shard offset STRIPE * 4K, as hex
chunk_at() { dd if="$1" bs=$CH skip="$2" count=1 2>/dev/null | od -An -v -tx1 | tr -d ' \n' | sha1sum; }

# ---- (a) a data chunk and a redundancy chunk, every redundant level
# level width data-slot-read-in-stripe-1 redundancy-slot-not-read-in-stripe-2
CONFIGS=("raid5 4 d0 P" "raid6 5 d0 P" "raid1 3 copy1 copy1")
long_tier && CONFIGS+=("raid10 4 copy1 copy1" "raid50 6 d0 P" "raid60 8 d0 P")
for cfg in "${CONFIGS[@]}"; do
	read -r level width dat red <<<"$cfg"
	what="(a) $level"
	new "$level" "$width" "a-$level"
	save
	j=$(flip 1 "$dat")
	cmp -s "${M[$j]}/f" "$C/before.$j" && fail "$what: the flip changed nothing"
	mnt_up "$what"
	c0=$(cksum "$j")
	cmp "$C/ref" "$mnt/f" || fail "$what: the file reads wrong with $dat of stripe 1 flipped on member $j"
	c1=$(cksum "$j")
	mnt_down "$what"
	[ "$c1" -gt "$c0" ] || fail "$what: CKSUM of member $j stayed $c0 after reading its flipped data chunk"
	cmp -s "${M[$j]}/f" "$C/before.$j" || fail "$what: the data chunk on member $j was not healed by the read"
	log "ok: $what: $dat flipped on member $j: read right, CKSUM $c0 -> $c1, healed"

	j=$(flip 2 "$red")
	mnt_up "$what"
	c0=$(cksum "$j")
	cmp "$C/ref" "$mnt/f" || fail "$what: the file reads wrong with $red of stripe 2 flipped on member $j"
	[ "$(cksum "$j")" = "$c0" ] || fail "$what: a plain read counted a checksum error on member $j ($red of stripe 2 is not read)"
	cmp -s "${M[$j]}/f" "$C/before.$j" && fail "$what: a plain read rewrote $red of stripe 2 (it should not read it)"
	expect_rc 0 "$RAIDFS" scrub "$mnt" --repair
	scrub_wait "$mnt" || fail "$what: the scrub did not end"
	c1=$(cksum "$j")
	mnt_down "$what"
	cmp -s "${M[$j]}/f" "$C/before.$j" || fail "$what: scrub --repair did not restore $red of stripe 2 on member $j"
	[ "$c1" -gt "$c0" ] || fail "$what: CKSUM of member $j stayed $c0 after scrub --repair rebuilt its flipped $red chunk"
	expect_rc 0 "$RAIDFS" check "$members"
	log "ok: $what: $red flipped on member $j: read right, scrub --repair restored it, CKSUM $c0 -> $c1"
done

# ---- (b) degraded: a flipped data chunk on another member than the absent one
what="(b) raid6"
new raid6 5 b-raid6
x=$(member_of 1 d1)
for s in 0 1 2 3; do
	for slot in d0 d1 d2; do
		[ "$(member_of "$s" "$slot")" != "$x" ] && break
	done
	flip "$s" "$slot" >/dev/null
done
hide_member "${M[$x]}"
mnt_up "$what"
cmp "$C/ref" "$mnt/f" || fail "$what: with member $x absent, the file reads wrong (data flipped in stripes 0..3)"
mnt_down "$what"
unhide_member "${M[$x]}"
log "ok: $what: member $x absent, data flipped on others in stripes 0..3: read right"

what="(b) raid1"
new raid1 3 b-raid1
for s in 0 1 2 3 4 5; do flip "$s" copy1 >/dev/null; done
hide_member "${M[0]}"
mnt_up "$what"
cmp "$C/ref" "$mnt/f" || fail "$what: with member 0 absent, the file reads wrong (copy1 flipped in stripes 0..5)"
mnt_down "$what"
unhide_member "${M[0]}"
log "ok: $what: member 0 absent, copy1 flipped in stripes 0..5: read right"

# ---- (c) raid6: two chunks of one stripe on two members
what="(c) raid6"
new raid6 5 c-raid6
save
j0=$(flip 2 d0)
j1=$(flip 2 d1)
[ "$j0" != "$j1" ] || fail "$what: d0 and d1 on one member"
mnt_up "$what"
expect_rc 0 "$RAIDFS" scrub "$mnt" --repair
scrub_wait "$mnt" || fail "$what: the scrub did not end"
mnt_down "$what"
cmp -s "${M[$j0]}/f" "$C/before.$j0" || fail "$what: scrub --repair did not restore d0 of stripe 2 on member $j0"
cmp -s "${M[$j1]}/f" "$C/before.$j1" || fail "$what: scrub --repair did not restore d1 of stripe 2 on member $j1"
expect_rc 0 "$RAIDFS" check "$members"
j0=$(flip 3 d0)
j1=$(flip 3 d1)
mnt_up "$what"
cmp "$C/ref" "$mnt/f" || fail "$what: the file reads wrong with d0 and d1 of stripe 3 flipped"
mnt_down "$what"
cmp -s "${M[$j0]}/f" "$C/before.$j0" || fail "$what: the read did not heal d0 of stripe 3 on member $j0"
cmp -s "${M[$j1]}/f" "$C/before.$j1" || fail "$what: the read did not heal d1 of stripe 3 on member $j1"
expect_rc 0 "$RAIDFS" check "$members"
log "ok: $what: d0+d1 of one stripe flipped: scrub --repair restored both; a read too"

# ---- (d) a lost write, found by the newer record
for cfg in "raid5 4" "raid1 2"; do
	read -r level width <<<"$cfg"
	what="(d) $level"
	new "$level" "$width" "d-$level"
	j=$(member_of 2 d0)
	k=$(( 2 * $(stripe_data_chunks "$level" "$width") ))	# (d0 of stripe 2: logical chunk)
	old=$(chunk_at "${M[$j]}/f" 2)
	[ "$old" = "$(chunk_at "$C/ref" "$k")" ] || fail "$what: member $j's shard does not hold d0 of stripe 2 where the map says"
	head -c $CH /dev/urandom >"$C/new"
	dd if="$C/new" of="$C/ref" bs=$CH seek="$k" conv=notrunc 2>/dev/null
	new_sum=$(chunk_at "$C/new" 0)
	mnt_up "$what"
	c0=$(cksum "$j")
	expect_rc 0 "$RAIDFS" inject "$mnt" "$j" drop-write count 1
	dd if="$C/new" of="$mnt/f" bs=$CH seek="$k" conv=notrunc 2>/dev/null || fail "$what: the overwrite failed"
	expect_rc 0 "$RAIDFS" inject "$mnt" "$j" clear
	mnt_down "$what"
	[ "$(chunk_at "${M[$j]}/f" 2)" = "$old" ] ||
		fail "$what: member $j's shard does not hold the old bytes: the injection did not drop the write"
	mnt_up "$what"
	cmp "$C/ref" "$mnt/f" || fail "$what: the file reads wrong after the write lost on member $j"
	c1=$(cksum "$j")
	mnt_down "$what"
	[ "$c1" -gt "$c0" ] || fail "$what: CKSUM of member $j stayed $c0 after reading past its lost write"
	[ "$(chunk_at "${M[$j]}/f" 2)" = "$new_sum" ] || fail "$what: member $j's shard was not healed with the new bytes"
	expect_rc 0 "$RAIDFS" check "$members"
	log "ok: $what: a write lost on member $j: the new bytes read, CKSUM $c0 -> $c1, the shard healed"
done
log "all cases passed"
