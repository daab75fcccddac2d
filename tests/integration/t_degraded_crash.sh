#!/bin/bash
# t_degraded_crash.sh - the write hole of a degraded array, with the cache.
#
# In a stripe whose member is absent, that member's chunk exists only as
# the parity xor the other chunks.  A destage writes a data chunk and the
# parity one after the other; a kill -9 between the two used to change the
# absent chunk - bytes nobody was writing - and the replay of the cache
# then made the damage permanent.  Now the absent chunk is kept in a guard
# slot (bbu=file: in the log file; bbu=shm: in the arena) until the write
# is done, and the next mount puts it back first.
#
# Per configuration: existing files, members failed, 60 overwrites through
# the write-back cache (a reference copy beside), a slow member so the
# destage takes seconds, kill -9 in the middle of it, mount again - without
# -o force: the cache survived with its guards, so the files it alone
# changed are consistent.  Every byte must be what was acknowledged, and
# the daemon must say it put chunks back (else the kill missed every
# guarded write: the round is tried again, up to 3 times, and fails when
# no round ever hits one - the test would prove nothing).  Then the failed
# members are replaced and rebuilt, another member is moved away, and
# every byte must still be right (the parity matches the data).  First,
# rounds that cut at a chosen point: a destage between the data and the
# parity of a stripe whose absent chunk lies past the file's end
# (eof_round) or of sectors the cache completed with a read (sector_
# round), a truncate between its P and Q or after its cut (cut_round;
# regrow_round: with a write past the new end in the log), and writes
# whose tail only the absent member holds (tail_round).
#
# Tiers: quick - each round once, on raid6 where it can be, with the file
# log; long - also raid5 and the shared memory.
#
# Environment: SEED.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python
RANDOM=$SEED

json_cache() {
	"$RAIDFS" status --json "$1" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["cache"][sys.argv[1]])' "$2"
}

# new_array NAME LEVEL WIDTH BBU: a new array (chunk 16K) under $T/NAME,
# mounted with the write-back cache; sets the caller's C, mem, members,
# mnt and opts
new_array() {
	C=$T/$1
	rm -rf "$C"
	mkdir -p "$C/ref"
	mem=$(make_members "$3" "$1/d")
	members=$(join_members $mem)
	mnt=$C/mnt
	case $4 in
	file) opts="bbu=file:$C/cache.log" ;;
	*) opts="bbu=shm" ;;
	esac
	opts="write_policy=writeback,$opts,cache_size=64M,cache_age=600000"
	expect_rc 0 "$RAIDFS" create --level "$2" --chunk 16K $mem
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
}

# crash_mount FLUSHPID ERE: kill -9 the daemon of $mnt (FLUSHPID: the
# `cache flush` waiting on it, or "") and mount again - without -o force: the
# cache kept what the parity of its files cannot tell; sets the caller's
# put to the number of daemon log lines matching ERE that the mount wrote
crash_mount() {
	local before
	rfs_kill "$mnt" || fail "$what: kill failed"
	[ -z "$1" ] || wait "$1"
	before=$(grep -c "$2" "$T/daemon.log")
	rfs_mount "$members" "$mnt" -o "$opts" ||
		{ tail -n 5 "$T/daemon.log" >&2; fail "$what: the mount after the kill failed (refused without -o force?)"; }
	put=$(($(grep -c "$2" "$T/daemon.log") - before))
}

# away C GONE REPLACED...: member GONE's directory (C/dN) moved away, so
# that the next mount goes on without it; `members` set to the members'
# directories then (C/newJ for the replaced members J)
away() {
	local C=$1 gone=$2 j list=""
	shift 2
	mv "$C/d$((gone + 1))" "$C/away$gone"
	for j in $(seq 0 $(($(echo "$members" | tr ':' '\n' | wc -l) - 1))); do
		if [[ " $* " == *" $j "* ]]; then
			list="$list:$C/new$j"
		else
			list="$list:$C/d$((j + 1))"
		fi
	done
	members=${list#:}
}

# replace_and_lose GONE FAILED...: the FAILED members rebuilt onto new
# directories (C/newJ), then the array mounted again without member GONE:
# reads come from the members, not from the cache or the page cache (and
# a member failed with `raidfs fail` would come back at the mount)
replace_and_lose() {
	local gone=$1 j
	shift
	for j in "$@"; do
		mkdir -p "$C/new$j"
		expect_rc 0 "$RAIDFS" replace "$mnt" "$j" "$C/new$j"
		wait_member "$mnt" "$j" online "$C/new$j" ||
			{ "$RAIDFS" status "$mnt" >&2; fail "$what: the rebuild onto $C/new$j did not end"; }
	done
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	away "$C" "$gone" "$@"
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
}

# hole_round NAME LEVEL WIDTH BBU SLOW FAILED...: one try; 0 when chunks
# were put back and every byte is right, 2 when the kill hit no guarded
# write (data right), fails the test on wrong data
hole_round() {
	local name=$1 level=$2 width=$3 bbu=$4 slow=$5
	shift 5
	local C mem members mnt opts i f
	what="$level, members $* failed, bbu=$bbu"
	new_array "$name" "$level" "$width" "$bbu"
	twelve_files "$C/ref" "$mnt" || fail "$what: write failed"
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
	for f in "$@"; do
		expect_rc 0 "$RAIDFS" fail "$mnt" "$f"
	done
	"$RAIDFS" status "$mnt" | grep -q degraded || fail "$what: the array is not degraded"
	overwrite_files "$C/ref" "$mnt" 60
	for i in $(seq 1 12); do
		cmp -s "$C/ref/f$i" "$mnt/f$i" || fail "$what: f$i differs before the crash"
	done
	[ "$(json_cache "$mnt" dirty_bytes)" -gt 0 ] || fail "$what: nothing dirty before the kill"
	# a slow member: the destage takes seconds; kill in the middle of it
	expect_rc 0 "$RAIDFS" inject "$mnt" "$slow" latency 200 write
	"$RAIDFS" cache "$mnt" flush >/dev/null 2>&1 &
	local fpid=$!
	for _ in $(seq 1 100); do
		[ "$(json_cache "$mnt" destaged_bytes)" -gt 0 ] && break
		sleep 0.1
	done
	sleep "0.$((RANDOM % 5 + 1))"
	local dirty
	dirty=$(json_cache "$mnt" dirty_bytes)
	local put
	crash_mount "$fpid" "chunks\? of absent members put back"
	local bad=0
	for i in $(seq 1 12); do
		if ! cmp -s "$C/ref/f$i" "$mnt/f$i"; then
			log "$what: f$i: $(cmp -l "$C/ref/f$i" "$mnt/f$i" 2>/dev/null | wc -l) bytes differ"
			bad=$((bad + 1))
		fi
	done
	[ "$bad" = 0 ] || fail "$what: $bad of 12 files differ from what was acknowledged after kill -9 during the destage"
	# the failed members are replaced and rebuilt from these stripes: with
	# another member failed, every file must still read as acknowledged
	# (the parity the crash and the replay left matches the data)
	replace_and_lose 0 "$@"
	for i in $(seq 1 12); do
		cmp -s "$C/ref/f$i" "$mnt/f$i" || fail "$what: f$i differs after the rebuild, with member 0 failed"
	done
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	log "$what: killed with $dirty dirty bytes; chunks put back in $put file(s); every byte as acknowledged, also rebuilt"
	[ "$put" -gt 0 ] && return 0
	return 2
}

# cut_destage N ERE: a destage cut between slot 0 and the parity: the
# parity members ($parity) slow, `cache flush` started, and kill -9 once
# slot 0's member ($d0) holds the first N bytes of $C/new; mounted again
# (crash_mount ERE: sets the caller's put)
cut_destage() {
	local j fpid ok=0
	for j in $parity; do
		expect_rc 0 "$RAIDFS" inject "$mnt" "$j" latency 5000 write
	done
	"$RAIDFS" cache "$mnt" flush >/dev/null 2>&1 &
	fpid=$!
	for _ in $(seq 1 100); do
		cmp -s -n "$1" "$C/new" "$C/d$((d0 + 1))/g" && { ok=1; break; }
		sleep 0.1
	done
	[ "$ok" = 1 ] || fail "$what: the destage never wrote slot 0's member"
	sleep 0.3
	crash_mount "$fpid" "$2"
}

# g_slots SIZE NDATA: SIZE random bytes written as g (reference and
# mount), the array unmounted, and the members holding stripe 0's slots
# found from the shards (chunk 16K, NDATA data slots): sets the caller's
# d0, d1, d2 (slots 0 to 2) and parity
g_slots() {
	local slots k
	head -c "$1" /dev/urandom >"$C/ref/g"
	# the first byte of every slot not 0: a slot of one byte 0 would make
	# the parity a copy of slot 0, and slot 1 look empty (1 seed in 256)
	for ((k = 16384; k < $1; k += 16384)); do
		printf 'Z' | dd of="$C/ref/g" bs=1 seek=$k conv=notrunc status=none
	done
	cp "$C/ref/g" "$mnt/g" || fail "$what: write failed"
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	read -ra slots < <(stripe0_slots "$C/ref/g" 16384 "$2" $mem)
	d0=$(slot_member 0 "${slots[@]}")
	d1=$(slot_member 1 "${slots[@]}")
	d2=$(slot_member 2 "${slots[@]}")
	parity=$(slot_member "p q" "${slots[@]}")
	[ -n "$d0" ] && [ -n "$d1" ] && [ -n "$parity" ] || fail "$what: slots not found: '$d0' '$d1' '$parity'"
}

# short_stripe_file: g, one short stripe over three data slots: slot 0
# full, slot 1 holding 5000 bytes, slot 2 wholly past the end (its
# member: e); g_slots
short_stripe_file() {
	g_slots 21384 3
	e=$d2
	[ -n "$e" ] || fail "$what: slot 2's member not found"
}

# eof_round NAME LEVEL WIDTH BBU: the absent chunks past the file's end.
# A file of one short stripe (chunk 16K, three data slots): slot 0 full,
# slot 1 holding 5000 bytes, slot 2 wholly past the end.  Slot 2's member
# is failed (raid6: slot 1's too).  An overwrite of slot 0 is destaged
# with the parity members slow, and the daemon is killed once slot 0
# holds the new bytes, before any parity write - every time.  The cut
# write changed the absent chunk past the end (in the parity only), which
# must read as zeros: a rebuild writes nothing there.  So after the
# mount, the rebuild onto new members and slot 0's member failed, the
# file must still read as acknowledged.  (Before the put-back made the
# parity again, it read the cut write's change there.)
eof_round() {
	local name=$1 level=$2 width=$3 bbu=$4
	local C mem members mnt opts j d0="" d1="" d2="" e="" parity="" failed
	what="$level past the end, bbu=$bbu"
	new_array "$name" "$level" "$width" "$bbu"
	short_stripe_file
	failed=$e
	[ "$level" = raid6 ] && failed="$d1 $e"
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
	for j in $failed; do
		expect_rc 0 "$RAIDFS" fail "$mnt" "$j"
	done
	head -c 8000 /dev/urandom >"$C/new"
	dd if="$C/new" of="$C/ref/g" conv=notrunc 2>/dev/null
	dd if="$C/new" of="$mnt/g" conv=notrunc 2>/dev/null || fail "$what: overwrite failed"
	cmp -s "$C/ref/g" "$mnt/g" || fail "$what: g differs before the crash"
	[ "$(json_cache "$mnt" dirty_bytes)" -gt 0 ] || fail "$what: nothing dirty before the kill"
	local put
	cut_destage 8000 "put back as\|parity made again over zeros"
	[ "$put" -gt 0 ] || fail "$what: the mount did not say it put the guarded write back"
	cmp -s "$C/ref/g" "$mnt/g" || fail "$what: g differs after kill -9 during the destage"
	replace_and_lose "$d0" $failed
	cmp -s "$C/ref/g" "$mnt/g" ||
		fail "$what: g differs after the rebuild, with slot 0's member failed: $(cmp -l "$C/ref/g" "$mnt/g" 2>/dev/null | wc -l) bytes (the absent chunk past the end is not zeros)"
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	log "ok: $what: the absent chunk past the end reads as zeros after a destage cut by kill -9"
}

# cut_round NAME BBU WHERE [optimal]: a truncate cut short in a degraded
# raid6 stripe (optimal: no member failed, no guard; the mount's resync
# must finish it).  The same file as eof_round, slots 1 and 2 on failed
# members; a
# truncate to 3000 bytes makes the stripe's parity again (P, then Q),
# cuts the shards, syncs them and records the size.  WHERE "pq": both
# parity members slow, the daemon is killed once P holds the new parity -
# Q still the old: slot 1 (bytes 16384-21383, which the file still has
# at the next mount, as its shards were not cut yet) then reads as other
# bytes, unless the guard kept it up to the old end.  WHERE "cut": slot
# 0's member slow to sync, killed once its shard is cut - before the new
# size used to be recorded: the mount took the old size, slot 0's bytes
# past 3000 read as zeros, slot 1's as before.  The truncate records that
# it began before it cuts anything, and the mount finishes it: the file
# must read as after it, zeros past 3000 when it grows again, and still
# so after the rebuild with slot 0's member gone.
cut_round() {
	local name=$1 bbu=$2 where=$3 state=${4:-degraded} level=raid6 width=5
	local C mem members mnt opts j d0="" d1="" d2="" e="" parity="" failed=""
	what="$level truncate cut short ($where), bbu=$bbu, $state"
	new_array "$name" "$level" "$width" "$bbu"
	short_stripe_file
	head -c 3000 "$C/ref/g" >"$C/cut"
	[ "$state" = degraded ] && failed="$d1 $e"
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
	for j in $failed; do
		expect_rc 0 "$RAIDFS" fail "$mnt" "$j"
	done
	if [ "$where" = pq ]; then
		for j in $parity; do
			expect_rc 0 "$RAIDFS" inject "$mnt" "$j" latency 3000 write
		done
	else
		expect_rc 0 "$RAIDFS" inject "$mnt" "$d0" latency 3000 fsync
	fi
	truncate -s 3000 "$mnt/g" 2>/dev/null &
	local tpid=$! ok=0 p
	for _ in $(seq 1 100); do
		if [ "$where" = pq ]; then
			for p in $parity; do
				cmp -s -n 13384 -i 3000:0 "$C/d$((p + 1))/g" /dev/zero && ok=1
			done
		else
			[ "$(stat -c %s "$C/d$((d0 + 1))/g")" = 3000 ] && ok=1
		fi
		[ "$ok" = 1 ] && break
		sleep 0.1
	done
	[ "$ok" = 1 ] || fail "$what: the truncate never got that far"
	sleep 0.2
	# (without -o force: the file keeps the cache's mark, its truncate
	# guarded - the members were failed before it began)
	local put
	crash_mount "$tpid" "put back as\|parity made again over zeros"
	[ "$put" -gt 0 ] || [ "$state" = optimal ] || fail "$what: the mount did not say it put the guarded chunks back"
	tail -n 30 "$T/daemon.log" | grep -q "truncate to 3000 bytes was cut short by the crash: finished" ||
		fail "$what: the mount did not say it finished the truncate"
	cmp -s "$C/cut" "$mnt/g" ||
		fail "$what: g is not as after the truncate: $(stat -c %s "$mnt/g") bytes, $(cmp -l "$C/cut" "$mnt/g" 2>/dev/null | wc -l) of them differ"
	# grown again, g reads zeros past 3000: the shards were cut there
	# (a shard left long would show its old bytes)
	truncate -s 21384 "$mnt/g" || fail "$what: truncate failed"
	truncate -s 21384 "$C/cut"
	cmp -s "$C/cut" "$mnt/g" ||
		fail "$what: g grown again after the mount: $(cmp -l "$C/cut" "$mnt/g" 2>/dev/null | wc -l) bytes past the truncate are not zeros"
	replace_and_lose "$d0" $failed
	cmp -s "$C/cut" "$mnt/g" || fail "$what: g differs after the rebuild, with slot 0's member gone"
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	log "ok: $what: the mount finished the truncate, also rebuilt"
}

# stripe0_file NAME LEVEL WIDTH: a new raid5 array (bbu=file) with g (64K)
# on the members, unmounted; sets the caller's d0 and p: the members of
# stripe 0's first data slot and of its parity
stripe0_file() {
	new_array "$1" "$2" "$3" file
	g_slots 65536 $(($3 - 1))
	p=$parity
}

# lostparity_round: a truncate through the cache (bbu=file) whose parity
# write a power loss undid.  raid5 over 3 members (chunk 16K), g 64K on
# the members; g held open and truncated to 3000 (its file keeps the
# cache's mark), kill -9, then stripe 0's parity shard given back its old
# first 3000 bytes - what a power loss leaves that kept the shards' new
# lengths but not the overwrite.  The mount must make the parity again
# (it replays the truncate's record; the file gets no resync): with slot
# 0's member gone, g must still read as truncated.
lostparity_round() {
	local C mem members mnt opts p="" d0="" d1="" d2="" parity=""
	what="raid5 truncate, its parity write lost"
	stripe0_file r5p raid5 3
	head -c 3000 "$C/d$((p + 1))/g" >"$C/oldp"
	head -c 3000 "$C/ref/g" >"$C/cut"
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
	exec 8<>"$mnt/g"
	"$PY" -c 'import os; os.ftruncate(8, 3000)' || fail "$what: truncate failed"
	rfs_kill "$mnt" || fail "$what: kill failed"
	exec 8<&-
	dd if="$C/oldp" of="$C/d$((p + 1))/g" conv=notrunc 2>/dev/null
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: the mount after the kill failed"
	cmp -s "$C/cut" "$mnt/g" || fail "$what: g is not as truncated after the mount"
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	away "$C" "$d0"
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount without slot 0's member failed"
	cmp -s "$C/cut" "$mnt/g" ||
		fail "$what: with slot 0's member gone, $(cmp -l "$C/cut" "$mnt/g" 2>/dev/null | wc -l) bytes of g read wrong (the parity was not made again)"
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	log "ok: $what: the replay of its record made the parity again"
}

# regrow_round: a truncate cut short in an optimal raid5 (bbu=file), with
# a write past the new end in the cache's log.  g (64K) is on the
# members; 8000 bytes at 40000 are written back (a dirty line, a log
# record); a truncate to 3000 drops the line and remakes stripe 0's
# parity - stripe 0's parity member slow - and the daemon is killed in
# the middle.  The mount replays the log - the write at 40000 makes g
# longer again, then the truncate's record (written before it began)
# cuts it off - and finishes the truncate: g as after it, 3000 bytes.
regrow_round() {
	local C mem members mnt opts p="" d0="" d1="" d2="" parity=""
	what="raid5 truncate cut short, a write past its end in the log"
	stripe0_file r5t raid5 4
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
	head -c 8000 /dev/urandom >"$C/new"
	dd if="$C/new" of="$mnt/g" bs=8000 seek=40000 oflag=seek_bytes conv=notrunc 2>/dev/null ||
		fail "$what: overwrite failed"
	[ "$(json_cache "$mnt" dirty_bytes)" -gt 0 ] || fail "$what: nothing dirty before the truncate"
	head -c 3000 "$C/ref/g" >"$C/cut"
	expect_rc 0 "$RAIDFS" inject "$mnt" "$p" latency 5000 write
	truncate -s 3000 "$mnt/g" 2>/dev/null &
	local tpid=$! put
	sleep 1.5
	crash_mount "$tpid" "truncate to 3000 bytes was cut short by the crash: finished"
	[ "$put" -gt 0 ] || fail "$what: the mount did not say it finished the truncate (did the kill miss it?)"
	cmp -s "$C/cut" "$mnt/g" ||
		fail "$what: g is not as after the truncate: $(stat -c %s "$mnt/g") bytes, $(cmp -l "$C/cut" "$mnt/g" 2>/dev/null | wc -l) of them differ"
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
	cmp -s "$C/cut" "$mnt/g" || fail "$what: g is not as after the truncate at the next mount"
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	log "ok: $what: the mount finished the truncate after the replay"
}

# tail_file NAME BBU: a new raid5 array over 4 members (chunk 16K) with
# g of 16385 bytes (slot 0 full, 1 byte in slot 1), held open (fd 8: the
# size is recorded at the last close); sets the caller's d0, d1 and e
# (the members of slots 0, 1 and 2)
tail_file() {
	new_array "$1" raid5 4 "$2"
	g_slots 16385 3
	e=$d2
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
	exec 8<"$mnt/g"
}

# append_tail: 5119 bytes appended to g (into slot 1 only), destaged
append_tail() {
	head -c 5119 /dev/urandom >"$C/tail"
	dd if="$C/tail" of="$C/ref/g" bs=1 seek=16385 conv=notrunc 2>/dev/null
	dd if="$C/tail" of="$mnt/g" bs=5119 seek=16385 oflag=seek_bytes conv=notrunc 2>/dev/null ||
		fail "$what: append failed"
	expect_rc 0 "$RAIDFS" cache "$mnt" flush
}

# tail_round NAME BBU: a tail only the absent member holds.  raid5 over
# 4 members: g has 16385 bytes (slot 0 full, 1 byte in slot 1); slot 1's
# member is failed; with g held open (the size is recorded at the last
# close), 5119 bytes are appended - into slot 1, so only into the parity
# - and destaged; kill -9.  No shard's length shows that tail: g must
# come back whole all the same (the destage records the size before the
# cache lets the bytes go).  Then, g open again, 15360 bytes more (slot 1
# and slot 2) destaged with slot 2's member slow, and kill -9 in the
# middle: the put-back must keep the tail too.
tail_round() {
	local name=$1 bbu=$2 level=raid5
	local C mem members mnt opts d0="" d1="" d2="" e="" parity="" what="$level tail on the absent member, bbu=$bbu"
	tail_file "$name" "$bbu"
	expect_rc 0 "$RAIDFS" fail "$mnt" "$d1"
	append_tail
	local put
	crash_mount "" "put back as"
	exec 8<&-
	cmp -s "$C/ref/g" "$mnt/g" ||
		fail "$what: g is $(stat -c %s "$mnt/g") bytes after kill -9, $(stat -c %s "$C/ref/g") were written and destaged"
	exec 8<"$mnt/g"
	head -c 15360 /dev/urandom >"$C/more"
	dd if="$C/more" of="$C/ref/g" bs=1 seek=21504 conv=notrunc 2>/dev/null
	dd if="$C/more" of="$mnt/g" bs=15360 seek=21504 oflag=seek_bytes conv=notrunc 2>/dev/null ||
		fail "$what: append failed"
	expect_rc 0 "$RAIDFS" inject "$mnt" "$e" latency 3000 write
	"$RAIDFS" cache "$mnt" flush >/dev/null 2>&1 &
	local fpid=$!
	sleep 1
	crash_mount "$fpid" "put back as"
	exec 8<&-
	[ "$put" -gt 0 ] || fail "$what: the mount did not say it put the guarded write back"
	cmp -s "$C/ref/g" "$mnt/g" ||
		fail "$what: g differs after kill -9 during a destage: $(cmp -l "$C/ref/g" "$mnt/g" 2>/dev/null | wc -l) bytes, $(stat -c %s "$mnt/g") long"
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	log "ok: $what: the tail survived kill -9, also with a guarded write cut short after it"
}

# busy_round: the record of a tail only a member that fails holds, while
# the file is busy.  raid5 over 4 members, all there, bbu=shm: g has
# 16385 bytes (slot 0 full, 1 byte in slot 1); g held open, 5119 bytes
# appended (into slot 1: no other shard's length shows them) and
# destaged.  A read of slot 0, held up 3 s on its member, holds g while
# slot 1's member is failed: the monitor cannot record g's size then and
# must try again until it can.  kill -9 after the read: g must come back
# whole (without the record, the mount takes the 16385 bytes of the last
# close: the shards left show no more).
busy_round() {
	local level=raid5
	local C mem members mnt opts d0="" d1="" d2="" e="" parity="" rpid what="$level tail of a failed member, file busy"
	tail_file busy shm
	append_tail
	expect_rc 0 "$RAIDFS" inject "$mnt" "$d0" latency 3000 read
	local t0 t1
	t0=$(date +%s%N)
	dd if="$mnt/g" of=/dev/null bs=4096 count=1 iflag=direct 2>/dev/null &
	rpid=$!
	sleep 1
	expect_rc 0 "$RAIDFS" fail "$mnt" "$d1"
	wait "$rpid" || fail "$what: the read failed"
	t1=$(date +%s%N)
	[ $(((t1 - t0) / 1000000)) -ge 2800 ] || fail "$what: the read was not held up: the test proves nothing"
	sleep 1	# (the monitor's ticks: 100 ms)
	local put
	crash_mount "" "put back as"
	exec 8<&-
	cmp -s "$C/ref/g" "$mnt/g" ||
		fail "$what: g is $(stat -c %s "$mnt/g") bytes after kill -9, $(stat -c %s "$C/ref/g") were written and destaged"
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	log "ok: $what: the size was recorded once the file was free, and g survived kill -9"
}

# sector_round NAME LEVEL WIDTH BBU: a sector a write covers only in part,
# on a failed member.  g is one full stripe (chunk 16K, three data slots);
# slot 1's member is failed (raid6: slot 2's too).  512 bytes are written
# over slot 0's first sector and 300 bytes into the middle of the failed
# slots' first sectors: the cache completes those sectors with bytes
# reconstructed from the members, and the destage, every byte of the
# absent slots' columns dirty in the line, takes no guard.  With the
# parity members slow, the daemon is killed once slot 0 holds its new
# sector.  The replay must put back the whole sectors: the bytes around
# the 300 are not in the members any more (the parity is the old one,
# slot 0 the new).
sector_round() {
	local name=$1 level=$2 width=$3 bbu=$4
	local C mem members mnt opts j d0="" d1="" d2="" parity="" failed
	what="$level sector filled by a read, bbu=$bbu"
	new_array "$name" "$level" "$width" "$bbu"
	g_slots 49152 3
	failed=$d1
	[ "$level" = raid6 ] && failed="$d1 $d2"
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
	for j in $failed; do
		expect_rc 0 "$RAIDFS" fail "$mnt" "$j"
	done
	head -c 512 /dev/urandom >"$C/new"
	dd if="$C/new" of="$C/ref/g" conv=notrunc 2>/dev/null
	dd if="$C/new" of="$mnt/g" conv=notrunc 2>/dev/null || fail "$what: overwrite failed"
	for j in 1 2; do
		[ "$j" = 2 ] && [ "$level" != raid6 ] && continue
		head -c 300 /dev/urandom >"$C/part"
		dd if="$C/part" of="$C/ref/g" bs=1 seek=$((j * 16384 + 100)) conv=notrunc 2>/dev/null
		dd if="$C/part" of="$mnt/g" bs=300 seek=$((j * 16384 + 100)) oflag=seek_bytes conv=notrunc 2>/dev/null ||
			fail "$what: overwrite failed"
	done
	cmp -s "$C/ref/g" "$mnt/g" || fail "$what: g differs before the crash"
	local put
	cut_destage 512 "put back as"
	cmp -s "$C/ref/g" "$mnt/g" ||
		fail "$what: g differs after kill -9 during the destage: $(cmp -l "$C/ref/g" "$mnt/g" 2>/dev/null | wc -l) bytes"
	replace_and_lose "$d0" $failed
	cmp -s "$C/ref/g" "$mnt/g" || fail "$what: g differs after the rebuild, with slot 0's member gone"
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	log "ok: $what: the sector came back whole after a destage cut by kill -9"
}

# the quick tier: each round once, on raid6 where it can be, with the
# file log (the shared memory is the long tier's too)
cfgs=("s6f raid6 5 file")
long_tier && cfgs=("s5f raid5 4 file" "s5s raid5 4 shm" "s6f raid6 5 file")
for cfg in "${cfgs[@]}"; do
	read -r name level width bbu <<<"$cfg"
	sector_round "$name" "$level" "$width" "$bbu"
done
cfgs=("e6f raid6 5 file")
long_tier && cfgs=("e5f raid5 4 file" "e5s raid5 4 shm" "e6f raid6 5 file")
for cfg in "${cfgs[@]}"; do
	read -r name level width bbu <<<"$cfg"
	eof_round "$name" "$level" "$width" "$bbu"
done
cut_round c6f file pq
if long_tier; then
	cut_round c6s shm pq
	cut_round c6o shm pq optimal
fi
cut_round c7f file cut
regrow_round
lostparity_round
tail_round t5f file
long_tier && tail_round t5s shm
busy_round

cfgs=("h6f raid6 6 file 3 1 2")
long_tier && cfgs=("h5f raid5 4 file 2 1" "h5s raid5 4 shm 2 1" "h6f raid6 6 file 3 1 2")
for cfg in "${cfgs[@]}"; do
	read -r name level width bbu slow failed <<<"$cfg"
	ok=0
	# (the kill lands at a random moment of a slow destage; on a loaded
	# machine three tries once all fell between guarded writes)
	for try in 1 2 3 4 5 6; do
		hole_round "$name" "$level" "$width" "$bbu" "$slow" $failed
		[ $? = 0 ] && { ok=1; break; }
	done
	[ "$ok" = 1 ] || fail "$level bbu=$bbu: in 6 tries the kill never cut a guarded write: the test proves nothing"
	log "ok: $level with members $failed failed, bbu=$bbu: a destage cut by kill -9 left every byte as acknowledged"
done
exit 0
