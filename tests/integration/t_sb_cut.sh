#!/bin/bash
# t_sb_cut - state changes whose superblock writes a crash cut short.
# A state change writes the new table to each member's superblock in
# turn, member 0 first; a crash after k of those writes leaves the first k
# members with the new table and the rest with the old one.  For each
# change below the test saves the superblocks before and after a real one
# (the change writes nothing else on the members), makes every cut, and
# mounts it:
#  - the commit of 'raidfs replace' (the new directory becomes member 1;
#    the old directory's superblock is removed after the writes).  With
#    the new directory in the member list the array is optimal and the
#    copy serves as member 1 (it was complete: the commit only starts
#    then), tree byte-identical (and at the end, with member 2 failed:
#    the copy holds member 1's bytes).  With the old directory instead
#    (the list from before the replacement) the tree is byte-identical
#    and, once the new table is on a member, the old directory is not
#    used (it may have missed writes since; the array runs degraded or
#    finds the new directory at the path the table records).  k = 0 (the
#    daemon died before the commit) resumes the copy;
#  - the end of a rebuild (member 1 rebuilt onto new2, recorded online):
#    optimal with new2 as member 1 (k > 0: the rebuild was complete and
#    verified) or the rebuild resumed (k = 0);
#  - the start of a rebuild onto a new directory (it has no superblock
#    before): the rebuild goes onto it (k = 0: nothing records it, and
#    'raidfs replace' takes it again);
#  - a promotion (member 1 failed during its replacement: the copy
#    becomes its rebuild target): the rebuild goes on onto the copy;
#  - a hot spare taking a failed member's place: the rebuild goes on
#    onto the spare.
# Each ends with the new directory as member 1 and the tree
# byte-identical, also with member 2 failed.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

C=$T/c
mkdir -p "$C/ref" "$C/new1" "$C/sbB" "$C/sbA"
mem=$(make_members 4 c/d)
mnt=$C/mnt
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name rc $mem
rfs_mount "$(join_members $mem)" "$mnt" || fail "mount"
write_fileset "$mnt" "$C/ref" 7 4 25 1000 200000 || fail "file set"
head -c 3000000 /dev/urandom >"$C/ref/big"
cp "$C/ref/big" "$mnt/big"

# the superblocks during the copy (the old table) and after the commit
"$RAIDFS" rebuild "$mnt" --min-rate 1 --max-rate 1 >/dev/null
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new1"
for d in d1 d2 d3 d4 new1; do cp "$C/$d/.raidfs/superblock" "$C/sbB/$d"; done
"$RAIDFS" rebuild "$mnt" --max-rate 0 >/dev/null
wait_member "$mnt" 1 online "$C/new1" || fail "the replacement did not finish: $("$RAIDFS" status "$mnt")"
rfs_unmount_wait "$mnt" || fail "unmount after the replacement"
for d in d1 new1 d3 d4; do cp "$C/$d/.raidfs/superblock" "$C/sbA/$d"; done
[ -e "$C/d2/.raidfs/superblock" ] && fail "the replaced directory kept its superblock"
newlist=$(join_members "$C/d1 $C/new1 $C/d3 $C/d4")
oldlist=$(join_members $mem)

# cut K BASE DIR...: the superblocks of BASE/DIR... (given in the order
# the daemon writes them: member 0 first) as a crash after K of the
# writes leaves them: the first K from BASE/sbA (after), the rest from
# BASE/sbB (before; none there: the directory had no superblock, and
# held nothing but an empty .raidfs)
cut() {
	local k=$1 base=$2 i=0 d src
	shift 2
	for d in "$@"; do
		if [ "$i" -lt "$k" ]; then src=$base/sbA; else src=$base/sbB; fi
		if [ -e "$src/$d" ]; then
			cp "$src/$d" "$base/$d/.raidfs/superblock"
		else
			find "$base/$d" -mindepth 1 -maxdepth 1 ! -name .raidfs -exec rm -rf {} +
			rm -rf "$base/$d/.raidfs" && mkdir -p "$base/$d/.raidfs/dirty"
		fi
		i=$((i + 1))
	done
}
# crash_state K: cut K of the commit's writes (the old directory's
# superblock is removed only after them)
crash_state() {
	cut "$1" "$C" d1 new1 d3 d4
	cp "$C/sbB/d2" "$C/d2/.raidfs/superblock"
	rm -f "$C/new1/.raidfs/rebuild" "$C/new1/.raidfs/rebuild.tmp"
}
same_tree() {
	workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 || { cat "$C/cmp.out" >&2; fail "$1"; }
}
# cuts WHAT LIST NEW DIR...: for every cut of the writes to $C/DIR...
# (from $C/sbA and $C/sbB; FROM=K: from K writes on), mount LIST (with
# OPTIMAL=1: the array must be
# optimal at once), let any rebuild run at full speed: member 1 ends
# online at $C/NEW, tree byte-identical; at the end the tree again with
# member 2 failed
cuts() {
	local what=$1 list=$2 new=$3 k
	shift 3
	for k in $(seq "${FROM:-0}" $(($# - 1))); do
		cut "$k" "$C" "$@"
		rfs_mount "$list" "$mnt" || fail "$what k=$k: mount: $(tail -3 "$T/daemon.log")"
		if [ "${OPTIMAL:-0}" = 1 ] && [ "$k" -gt 0 ]; then
			expect_rc 0 "$RAIDFS" status "$mnt"
			grep -q "optimal" "$OUT" || fail "$what k=$k: not optimal: $(cat "$OUT")"
		fi
		"$RAIDFS" rebuild "$mnt" --max-rate 0 >/dev/null
		wait_member "$mnt" 1 online "$C/$new" ||
			fail "$what k=$k: $new is not member 1: $("$RAIDFS" status "$mnt"; grep -i "partial\|replace\|promot\|spare\|stale" "$T/daemon.log" | tail -3)"
		same_tree "$what k=$k: tree differs"
		rfs_unmount_wait "$mnt" || fail "$what k=$k: unmount"
		log "ok: $what: crash after $k of the superblock writes"
	done
	rfs_mount "$list" "$mnt" || fail "$what: mount at the end"
	expect_rc 0 "$RAIDFS" fail "$mnt" 2
	same_tree "$what: tree differs with member 2 failed: member 1 is wrong"
	rfs_unmount_wait "$mnt" || fail "$what: unmount at the end"
}

for k in 0 1 2 3 4; do
	crash_state "$k"
	rfs_mount "$newlist" "$mnt" || fail "k=$k: mount with the new directory: $(tail -3 "$T/daemon.log")"
	wait_member "$mnt" 1 online "$C/new1" ||
		fail "k=$k: the new directory is not member 1: $("$RAIDFS" status "$mnt"; grep -i "replace\|partial\|stale" "$T/daemon.log" | tail -3)"
	expect_rc 0 "$RAIDFS" status "$mnt"
	grep -q "optimal" "$OUT" || fail "k=$k: not optimal with the new directory: $(cat "$OUT")"
	same_tree "k=$k: tree differs with the new directory"
	rfs_unmount_wait "$mnt" || fail "k=$k: unmount"

	crash_state "$k"
	rfs_mount "$oldlist" "$mnt" || fail "k=$k: mount with the old directory: $(tail -3 "$T/daemon.log")"
	same_tree "k=$k: tree differs with the old directory given"
	if [ "$k" -gt 0 ]; then
		"$RAIDFS" status "$mnt" >"$C/st.out"
		grep -q " $C/d2 " "$C/st.out" && fail "k=$k: the old directory was taken back: $(cat "$C/st.out")"
	fi
	rfs_unmount_wait "$mnt" || fail "k=$k: unmount (old directory)"
	log "ok: crash after $k of the commit's superblock writes"
done

# the commit done: clean, and the copy holds member 1's bytes
crash_state 4
rm -f "$C/d2/.raidfs/superblock"
expect_rc 0 "$RAIDFS" check "$newlist"
rfs_mount "$newlist" "$mnt" || fail "mount after the commit"
expect_rc 0 "$RAIDFS" fail "$mnt" 2
same_tree "tree differs with member 2 failed: the copy is wrong"
rfs_unmount_wait "$mnt" || fail "unmount after the commit"
log "ok: the copy holds member 1's bytes (member 2 failed), check clean"

# the end of a rebuild: member 1 (new1 now) failed, rebuilt onto new2
crash_state 4
rm -f "$C/d2/.raidfs/superblock"
rm -rf "$C/sbA" "$C/sbB"
mkdir -p "$C/new2" "$C/sbA" "$C/sbB"
rfs_mount "$newlist" "$mnt" || fail "rebuild: mount"
expect_rc 0 "$RAIDFS" fail "$mnt" 1
"$RAIDFS" rebuild "$mnt" --min-rate 1 --max-rate 1 >/dev/null
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new2"
wait_member "$mnt" 1 rebuilding "$C/new2" || fail "rebuild: not rebuilding: $("$RAIDFS" status "$mnt")"
for d in d1 new2 d3 d4; do cp "$C/$d/.raidfs/superblock" "$C/sbB/$d"; done
"$RAIDFS" rebuild "$mnt" --max-rate 0 >/dev/null
wait_member "$mnt" 1 online "$C/new2" || fail "rebuild: did not finish: $("$RAIDFS" status "$mnt")"
rfs_unmount_wait "$mnt" || fail "rebuild: unmount"
for d in d1 new2 d3 d4; do cp "$C/$d/.raidfs/superblock" "$C/sbA/$d"; done
list2=$(join_members "$C/d1 $C/new2 $C/d3 $C/d4")
OPTIMAL=1 cuts "end of a rebuild" "$list2" new2 d1 new2 d3 d4

# the start of that rebuild ('raidfs replace' of the failed member 1 onto
# new3, an empty directory): before, new3 has no superblock; the cut
# mounts with new3 in the list, the rebuild goes onto it.  (The
# superblocks first as the rebuild left them: cuts failed member 2.)
cut 4 "$C" d1 new2 d3 d4
rm -rf "$C/sbA" "$C/sbB"
mkdir -p "$C/new3" "$C/sbA" "$C/sbB"
rfs_mount "$list2" "$mnt" || fail "start: mount"
expect_rc 0 "$RAIDFS" fail "$mnt" 1
for d in d1 d3 d4; do cp "$C/$d/.raidfs/superblock" "$C/sbB/$d"; done
"$RAIDFS" rebuild "$mnt" --min-rate 1 --max-rate 1 >/dev/null
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new3"
for d in d1 new3 d3 d4; do cp "$C/$d/.raidfs/superblock" "$C/sbA/$d"; done
rfs_kill "$mnt" || fail "start: kill -9"
list3=$(join_members "$C/d1 $C/new3 $C/d3 $C/d4")
FROM=1 cuts "start of a rebuild" "$list3" new3 d1 new3 d3 d4
# no write made (k = 0): nothing records new3, which holds only the empty
# .raidfs the daemon made; 'raidfs replace' takes it again
cut 0 "$C" d1 new3 d3 d4
rfs_mount "$list3" "$mnt" || fail "start k=0: mount"
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new3"
wait_member "$mnt" 1 online "$C/new3" || fail "start k=0: not rebuilt: $("$RAIDFS" status "$mnt")"
same_tree "start k=0: tree differs"
rfs_unmount_wait "$mnt" || fail "start k=0: unmount"
log "ok: start of a rebuild: crash after 0 of the superblock writes, replaced again"

# a promotion cut short: a fresh array, member 1 replaced onto new1 and
# failed while the copy is inside a big file (the promotion waits for the
# file's end): the superblocks then (failure recorded, replacement still
# recorded) and after the promotion (new1 is member 1, rebuilding)
P=$T/p
mkdir -p "$P/ref" "$P/new1" "$P/sbA" "$P/sbB"
pmem=$(make_members 4 p/d)
mnt=$P/mnt
C=$P	# (same_tree compares with $C/ref)
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name rp $pmem
rfs_mount "$(join_members $pmem)" "$mnt" || fail "promotion: mount"
head -c 3000000 /dev/urandom >"$P/ref/big"
cp "$P/ref/big" "$mnt/big"
write_fileset "$mnt" "$P/ref" 8 3 5 1000 100000 || fail "promotion: file set"
"$RAIDFS" rebuild "$mnt" --min-rate 1 --max-rate 1 >/dev/null
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$P/new1"
sleep 0.5
expect_rc 0 "$RAIDFS" fail "$mnt" 1
for d in d1 d3 d4 new1; do cp "$P/$d/.raidfs/superblock" "$P/sbB/$d"; done
grep -q "rebuild of member 1 continues onto" "$T/daemon.log" &&
	fail "promotion: promoted before the superblocks were saved (the big file was copied already)"
for _ in $(seq 1 200); do grep -q "rebuild of member 1 continues onto" "$T/daemon.log" && break; sleep 0.05; done
grep -q "rebuild of member 1 continues onto" "$T/daemon.log" || fail "promotion: no promotion"
for d in d1 new1 d3 d4; do cp "$P/$d/.raidfs/superblock" "$P/sbA/$d"; done
rfs_kill "$mnt" || fail "promotion: kill -9"
plist=$(join_members "$P/d1 $P/new1 $P/d3 $P/d4")
cuts promotion "$plist" new1 d1 new1 d3 d4

# a hot spare taking a failed member's place: the superblocks before the
# failure and once the spare s1 is member 1 (rebuilding, slowly); every
# cut mounts with the spare in the list (not the failed directory) and
# ends with s1 as member 1, tree byte-identical
S=$T/s
mkdir -p "$S/ref" "$S/s1" "$S/sbA" "$S/sbB"
smem=$(make_members 4 s/d)
mnt=$S/mnt
C=$S
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --spare "$S/s1" --name rs $smem
rfs_mount "$(join_members $smem):$S/s1" "$mnt" || fail "spare: mount"
head -c 3000000 /dev/urandom >"$S/ref/big"
cp "$S/ref/big" "$mnt/big"
write_fileset "$mnt" "$S/ref" 9 3 5 1000 100000 || fail "spare: file set"
"$RAIDFS" rebuild "$mnt" --min-rate 1 --max-rate 1 >/dev/null
for d in d1 d3 d4 s1; do cp "$S/$d/.raidfs/superblock" "$S/sbB/$d"; done
expect_rc 0 "$RAIDFS" fail "$mnt" 1
wait_member "$mnt" 1 rebuilding "$S/s1" || fail "spare: the spare did not take over: $("$RAIDFS" status "$mnt")"
for d in d1 s1 d3 d4; do cp "$S/$d/.raidfs/superblock" "$S/sbA/$d"; done
rfs_kill "$mnt" || fail "spare: kill -9"
slist=$(join_members "$S/d1 $S/d3 $S/d4 $S/s1")
cuts "spare takeover" "$slist" s1 d1 s1 d3 d4
exit 0
