#!/bin/bash
# t_shardloss - a shard that lost data while the array was down (cut
# short by hand, or by a member filesystem that came back from a power
# loss without its tail) is found when its file is opened: the reader gets
# the right bytes from the other members, never the zeros the short shard
# would give, the shard is rebuilt (counted as corrected), and the
# offline check names it before and is clean after.  Files whose shards
# are short because they were written sparsely are not mistaken for it.
# More shards short than the level tolerates (a power cut before written
# data reached the disks) read as zeros, as on one disk, and the file is
# resynced.
#
# Tiers: quick - the first part on raid6 only; long - raid5, raid6, raid1,
# raid10.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

# sparse FILE...: bytes written far apart, leaving some shards of the last
# stripe short (a hole) until the file's metadata is written at close
sparse() {
	"$PY" - "$@" <<'PYEOF'
import os, sys
for i, p in enumerate(sys.argv[1:]):
    fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
    os.pwrite(fd, b"x" * 100, 20000 + i)
    os.pwrite(fd, b"y" * 7, 300000 + 4096 * i + 5)
    os.close(fd)
PYEOF
}

# shard_of MEMBER_DIR MIN: a file whose shard there is at least MIN bytes
shard_of() {
	(cd "$1" && find dir0 dir1 -type f -size +"$2"c -printf '%s %p\n' | sort -rn | awk '{print $2}')
}

for level in $(tier_pick raid6 "raid5 raid6 raid1 raid10"); do
	new_array "$level" "$level"
	write_fileset "$mnt" "$C/ref" "$SEED" 2 12 1 300000
	sparse "$mnt/sp1" "$mnt/sp2"
	sparse "$C/ref/sp1" "$C/ref/sp2"
	rfs_unmount_wait "$mnt" || fail "$level: unmount"
	# no false alarm: the sparse files' shards have their full length
	expect_rc 0 "$RAIDFS" check "$(join_members $mem)"

	set -- $mem
	d=("$@")
	cut=()
	# member 2: one file cut to 1000 bytes; member 0 (the primary): one
	# cut to nothing; member 3: a sparse file's shard cut in half
	f1=$(shard_of "${d[2]}" 8192 | sed -n 1p)
	f2=$(shard_of "${d[0]}" 8192 | grep -vxF "$f1" | sed -n 1p)
	[ -n "$f1" ] && [ -n "$f2" ] || fail "$level: no file large enough to cut"
	truncate -s 1000 "${d[2]}/$f1"
	truncate -s 0 "${d[0]}/$f2"
	half=$(( $(stat -c %s "${d[3]}/sp2") / 2 ))
	truncate -s "$half" "${d[3]}/sp2"
	cut=("$f1" "$f2" sp2)
	if [ "$level" = raid6 ]; then
		# two shards of the same file: what raid6 tolerates
		truncate -s 4096 "${d[3]}/$f1"
		cut+=("$f1")
	fi
	expect_rc 1 "$RAIDFS" check "$(join_members $mem)"
	n=$(grep -c "shorter than the" "$OUT")
	[ "$n" -eq "${#cut[@]}" ] || fail "$level: check named $n short shards, not ${#cut[@]}: $(cat "$OUT")"
	grep -q "redundancy does not match" "$OUT" && fail "$level: check compared the cut shard: $(cat "$OUT")"

	rfs_mount "$(join_members $mem)" "$mnt" || fail "$level: mount again"
	diff -r "$C/ref" "$mnt" >/dev/null || fail "$level: the files read back differ from the reference"
	# (one log for every array of the test: count this one's members)
	n=$(grep -F "$C/d" "$T/daemon.log" | grep -c "was rebuilt from the other members")
	[ "$n" -eq "${#cut[@]}" ] || fail "$level: $n shards rebuilt, not ${#cut[@]}"
	n=$(grep -F "$C/d" "$T/daemon.log" | grep -c "shorter than the")
	[ "$n" -eq "${#cut[@]}" ] || fail "$level: $n short shards logged, not ${#cut[@]} (a sparse file mistaken?)"
	"$RAIDFS" status --json "$mnt" > "$C/st.json"
	for j in 0 2 3; do
		grep -q "\"index\": $j, [^}]*\"state\": \"online\", [^}]*\"errors\": 0, \"corrected\": [1-9]" "$C/st.json" ||
			fail "$level: member $j should be online with a correction counted (a short shard is no disk error): $(cat "$C/st.json")"
	done
	[ "$(stat -c %s "${d[2]}/$f1")" -gt 1000 ] || fail "$level: the cut shard was not rebuilt to its length"
	rfs_unmount_wait "$mnt" || fail "$level: unmount after the repair"
	expect_rc 0 "$RAIDFS" check "$(join_members $mem)"

	# the rebuilt shards hold the right bytes: read them with member 1
	# (raid10: 1's mirror is 0, whose cut shard must now serve) failed
	rfs_mount "$(join_members $mem)" "$mnt" || fail "$level: third mount"
	expect_rc 0 "$RAIDFS" fail "$mnt" 1
	echo 3 > /proc/sys/vm/drop_caches
	diff -r "$C/ref" "$mnt" >/dev/null || fail "$level: the files differ with member 1 failed"
	rfs_unmount_wait "$mnt" || fail "$level: last unmount"
	log "ok: $level (${#cut[@]} short shards found and rebuilt)"
done

# More shards short than the level can rebuild from: what a power cut
# leaves when the metadata reached the disks and the data written without
# fsync did not.  The bytes never reached any disk: they read as zeros,
# as on one disk, and the file's redundancy is recomputed (check clean).
new_array crash raid5
head -c 100000 /dev/urandom > "$C/ref/f"
cp "$C/ref/f" "$mnt/f"
rfs_unmount_wait "$mnt" || fail "crash: unmount"
for m in $mem; do truncate -s 8192 "$m/f"; done	# 2 stripes of 4K chunks left
expect_rc 1 "$RAIDFS" check "$(join_members $mem)"
grep -q "than raid5 can rebuild from" "$OUT" || fail "crash: check does not say so: $(cat "$OUT")"
rfs_mount "$(join_members $mem)" "$mnt" || fail "crash: mount again"
cat "$mnt/f" > "$C/out" || fail "crash: the file cannot be read"
[ "$(stat -c %s "$C/out")" = 100000 ] || fail "crash: size changed"
cmp -s <(head -c 24576 "$C/ref/f") <(head -c 24576 "$C/out") || fail "crash: the part on every disk changed"
[ "$(tail -c +24577 "$C/out" | tr -d '\0' | wc -c)" = 0 ] || fail "crash: the part on no disk is not zeros"
grep -q "than raid5 can rebuild from" "$T/daemon.log" || fail "crash: no warning in the log"
grep -q "redundancy recomputed from the data the disks hold" "$T/daemon.log" || fail "crash: no resync"
"$RAIDFS" status --json "$mnt" | grep -q '"errors": [1-9]' && fail "crash: errors counted for a crash"
rfs_unmount_wait "$mnt" || fail "crash: unmount at the end"
expect_rc 0 "$RAIDFS" check "$(join_members $mem)"
log "ok: raid5, every shard short (zeros, resynced)"

# A short shard that cannot be rebuilt (its array lost another member)
# stays damaged: the lost part reads as an I/O error, and neither a write
# nor a truncate lengthens the shard, so a later mount still finds it.
new_array deg raid5
head -c 100000 /dev/urandom > "$C/ref/f"
cp "$C/ref/f" "$mnt/f"
cp "$C/ref/f" "$mnt/p"
rfs_unmount_wait "$mnt" || fail "deg: unmount"
set -- $mem
truncate -s 4096 "$3/f"
truncate -s 4096 "$1/p"	# the primary's shard: its record lags behind from now on
rfs_mount "$(join_members $mem)" "$mnt" || fail "deg: mount again"
expect_rc 0 "$RAIDFS" fail "$mnt" 3
for x in f p; do
	cat "$mnt/$x" > /dev/null 2> "$C/err" && fail "deg: $x, which lost data on two members, read without an error"
	grep -q "Input/output error" "$C/err" || fail "deg: $x: expected EIO: $(cat "$C/err")"
done
# the stripe below the cut is whole on members 0-2: it reads back (one
# request per chunk: a buffered read asks for more, and a request that
# meets a lost chunk fails whole)
for x in f p; do
	dd if="$mnt/$x" of="$C/head" bs=4096 count=3 iflag=direct status=none 2>"$C/err" ||
		fail "deg: $x: the first stripe, intact on the members left, does not read: $(cat "$C/err")"
	cmp -s "$C/head" <(head -c 12288 "$C/ref/f") || fail "deg: $x: the first stripe reads wrong"
done
grep -q "cannot rebuild its shard on member 2" "$T/daemon.log" || fail "deg: no log of the failed rebuild (f)"
grep -q "cannot rebuild its shard on member 0" "$T/daemon.log" || fail "deg: no log of the failed rebuild (p)"
# a write below the cut is on enough members: its fsync succeeds and it
# reads back; one past the cut is not: the write or its fsync fails
for x in f p; do
	head -c 4096 /dev/urandom > "$C/new"
	dd if="$C/new" of="$mnt/$x" bs=4096 count=1 conv=notrunc,fsync status=none 2>"$C/err" ||
		fail "deg: $x: a write to the first stripe, on enough members, failed: $(cat "$C/err")"
	dd if="$mnt/$x" of="$C/head" bs=4096 count=1 iflag=direct status=none 2>"$C/err" ||
		fail "deg: $x: the first stripe does not read after the write: $(cat "$C/err")"
	cmp -s "$C/head" "$C/new" || fail "deg: $x: the first stripe reads wrong after the write"
	dd if=/dev/urandom of="$mnt/$x" bs=4096 count=2 seek=20 conv=notrunc,fsync status=none 2>"$C/err" &&
		fail "deg: $x: a write past the cut, where two members lost the data, and its fsync succeeded"
	grep -q "Input/output error" "$C/err" || fail "deg: $x: a write past the cut: expected EIO: $(cat "$C/err")"
done
# writes and truncates do not lengthen a damaged shard past what it lost
for x in f p; do
	dd if=/dev/urandom of="$mnt/$x" bs=4096 count=1 conv=notrunc status=none 2>/dev/null
	dd if=/dev/urandom of="$mnt/$x" bs=4096 count=2 seek=20 conv=notrunc status=none 2>/dev/null
	truncate -s 200000 "$mnt/$x" || fail "deg: truncate of $x"
done
[ "$(stat -c %s "$3/f")" = 4096 ] || fail "deg: the damaged shard of f was lengthened to $(stat -c %s "$3/f")"
[ "$(stat -c %s "$1/p")" = 4096 ] || fail "deg: the damaged shard of p was lengthened to $(stat -c %s "$1/p")"
rfs_unmount_wait "$mnt" || fail "deg: unmount after the writes"
rfs_mount "$(join_members $mem)" "$mnt" || fail "deg: third mount"
# (a closed file's size comes from the primary's record: written even
# though its shard is damaged)
[ "$(stat -c %s "$mnt/p")" = 200000 ] || fail "deg: p's size after a remount is $(stat -c %s "$mnt/p"), not 200000"
for x in f p; do
	cat "$mnt/$x" > /dev/null 2> "$C/err" && fail "deg: $x: the lost part reads without an error after a remount"
	grep -q "Input/output error" "$C/err" || fail "deg: $x: expected EIO after a remount: $(cat "$C/err")"
done
rfs_unmount_wait "$mnt" || fail "deg: last unmount"
log "ok: raid5, a short shard that cannot be rebuilt (EIO, stays short)"

# A rebuild that meets such files rebuilds everything else, names them and
# stays unfinished (never zeros in their place); once they are restored or
# deleted, 'raidfs rebuild MNT resume' finishes it, and the rebuilt member
# holds the right bytes.
new_array rb raid5
mkdir -p "$C/ref/a" "$C/ref/z"
for i in 1 2 3; do
	head -c 300000 /dev/urandom > "$C/ref/a/g$i"
	head -c 300000 /dev/urandom > "$C/ref/z/g$i"
done
head -c 200000 /dev/urandom > "$C/ref/f"
head -c 200000 /dev/urandom > "$C/ref/h"
cp -a "$C/ref/." "$mnt/"
rfs_unmount_wait "$mnt" || fail "rb: unmount"
set -- $mem
truncate -s 40000 "$2/f"
truncate -s 8192 "$3/h"
rfs_mount "$(join_members $mem)" "$mnt" || fail "rb: mount again"
expect_rc 0 "$RAIDFS" fail "$mnt" 3
mkdir -p "$C/new"
expect_rc 0 "$RAIDFS" replace "$mnt" 3 "$C/new"
for _ in $(seq 1 300); do
	"$RAIDFS" status --json "$mnt" | grep -q '"failed_files": 2' && break
	sleep 0.1
done
OUT=$C/status.txt
"$RAIDFS" status "$mnt" > "$OUT"	# (exit 1: degraded)
grep -q "rebuild of member 3 failed: 2 files could not be rebuilt, the first 'f' (Input/output error)" "$OUT" ||
	fail "rb: status does not name the files the rebuild could not do: $(cat "$OUT")"
grep -q "action:  the rebuild of member 3 onto '$C/new' could not rebuild 2 files .*restore the file from a copy or delete it, then 'raidfs rebuild $mnt resume'" "$OUT" ||
	fail "rb: no action line for them: $(cat "$OUT")"
grep "^ *3 " "$OUT" | grep -q rebuilding || fail "rb: member 3 is not left rebuilding: $(cat "$OUT")"
for i in 1 2 3; do
	cmp -s "$mnt/a/g$i" "$C/ref/a/g$i" && cmp -s "$mnt/z/g$i" "$C/ref/z/g$i" || fail "rb: g$i differs"
done
head -c 200000 /dev/urandom > "$C/ref/f"
cp "$C/ref/f" "$mnt/f" || fail "rb: f cannot be written over"
rm "$mnt/h" "$C/ref/h" || fail "rb: h cannot be deleted"
expect_rc 0 "$RAIDFS" rebuild "$mnt" resume
wait_member "$mnt" 3 online || fail "rb: the resumed rebuild did not finish: $("$RAIDFS" status "$mnt")"
rfs_unmount_wait "$mnt" || fail "rb: unmount after the rebuild"
set -- $mem
expect_rc 0 "$RAIDFS" check "$1:$2:$3:$C/new"
rfs_mount "$1:$2:$3:$C/new" "$mnt" || fail "rb: mount with the new member"
expect_rc 0 "$RAIDFS" fail "$mnt" 1
diff -r "$mnt" "$C/ref" > "$C/diff" 2>&1 || fail "rb: the tree differs without member 1: $(head -5 "$C/diff")"
rfs_unmount_wait "$mnt" || fail "rb: last unmount"
log "ok: raid5, a rebuild past files it cannot rebuild (named; resumed after they were restored)"

# A read-only mount reads around a short shard and changes nothing.
new_array ro raid5
head -c 100000 /dev/urandom > "$C/ref/f"
cp "$C/ref/f" "$mnt/f"
cp "$C/ref/f" "$mnt/g"
rfs_unmount_wait "$mnt" || fail "ro: unmount"
set -- $mem
truncate -s 4096 "$2/f"
setfattr -x user.raidfs.meta "$4/g" || fail "ro: setfattr"	# a record lost: repaired at a close
rfs_mount "$(join_members $mem)" "$mnt" -o ro || fail "ro: mount -o ro"
cmp -s "$C/ref/f" "$mnt/f" || fail "ro: wrong data read around the short shard"
cmp -s "$C/ref/f" "$mnt/g" || fail "ro: wrong data read of the file missing a record"
[ "$(stat -c %s "$2/f")" = 4096 ] || fail "ro: a read-only mount rebuilt the shard"
rfs_unmount_wait "$mnt" || fail "ro: unmount at the end"
getfattr -n user.raidfs.meta "$4/g" > /dev/null 2>&1 && fail "ro: a read-only mount wrote a record"
log "ok: raid5 mounted read-only (read around, nothing written)"

# raid0 holds one copy: a short shard is as a single disk would have it
new_array raid0 raid0
head -c 200000 /dev/urandom > "$C/ref/f"
cp "$C/ref/f" "$mnt/f"
echo small > "$mnt/g"
rfs_unmount_wait "$mnt" || fail "raid0: unmount"
set -- $mem
truncate -s 1000 "$2/f"
rfs_mount "$(join_members $mem)" "$mnt" || fail "raid0: mount again"
cat "$mnt/f" > "$C/out" || fail "raid0: the cut file cannot be read"
cmp -s "$C/ref/f" "$C/out" && fail "raid0: the cut file reads as before"
[ "$(cat "$mnt/g")" = small ] || fail "raid0: the other file is unreadable"
grep -q "than raid0 can rebuild from" "$T/daemon.log" || fail "raid0: no warning in the log"
rfs_unmount_wait "$mnt" || fail "raid0: unmount at the end"
expect_rc 0 "$RAIDFS" check "$(join_members $mem)"
log "ok: raid0 (zeros, as one disk)"
