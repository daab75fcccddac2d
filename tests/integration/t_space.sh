#!/bin/bash
# t_space.sh - members that fill up: no acknowledged write without a place.
#
# A controller's disks never fill up; raidfs's members do.  Four raid5
# members, each on its own 24 MiB tmpfs, a write-back cache (bbu=shm) ten
# times larger than the array:
# 1. One sequential write of 160 MiB from a reference file.  It must fail
#    with ENOSPC (not be acknowledged into the cache beyond what the members
#    can take), the cache must hold nothing dirty afterwards, status must
#    say why write-back stopped (text and JSON), and every byte the writer
#    was told is written must read back identical, also after a remount.
# 2. After the file is removed, write-back resumes (status), a smaller file
#    written then reads back identical, and the offline check is clean.
# 3. Random writes and appends to six files until the members are full
#    (raid5 and raid6, write-through and write-back): every stripe keeps
#    its parity in step with its data (offline check clean), because a
#    write that does not fit is refused before any member is written.
# 4. A member full in the middle of a stripe (ENOSPC injected on the P
#    member of a degraded raid5 and raid6, after the data member took its
#    part): the stripe must not keep new data beside old parity - the
#    failed member's chunk would then be read from it as other bytes.
#    The full member is failed as on a write error: raid6 completes the
#    write and reads every byte as written; raid5, out of members, fails
#    the write and reads no wrong byte.
#
# Tiers: quick - part 3 on raid6 only; long - raid5 and raid6.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

json_cache() {	# json_cache MNT KEY
	"$RAIDFS" status --json "$1" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["cache"][sys.argv[1]])' "$2"
}

members=$(make_members 4)
for d in $members; do
	mount -t tmpfs -o size=24m tmpfs "$d" || skip "cannot mount a tmpfs (needs root)"
	MOUNTS+=("$d")
done
mcolon=$(join_members $members)
"$RAIDFS" create --level raid5 --chunk 16K $members >/dev/null || fail "create"
mnt=$T/mnt
# the FUSE mount goes first in the cleanup, before the tmpfs under it
MOUNTS=("$mnt" "${MOUNTS[@]}")
rfs_mount "$mcolon" "$mnt" -o bbu=shm,cache_size=256M || fail "mount"
[ "$(json_cache "$mnt" current_write_policy)" = writeback ] || fail "not in write-back at the start"

head -c $((160 << 20)) /dev/urandom >"$T/ref"
dd if="$T/ref" of="$mnt/big" bs=1M 2>"$T/dd.err" &&
	fail "a 160 MiB write to a 72 MiB array was acknowledged in full (write-back beyond the members' space)"
grep -q "No space left on device" "$T/dd.err" || fail "the write failed, but not with ENOSPC: $(cat "$T/dd.err")"
size=$(stat -c %s "$mnt/big")
[ "$size" -gt $((40 << 20)) ] || fail "only $size bytes written before ENOSPC"
log "write stopped with ENOSPC after $((size >> 20)) MiB"
[ "$(json_cache "$mnt" dirty_bytes)" = 0 ] || fail "the cache holds $(json_cache "$mnt" dirty_bytes) dirty bytes the members cannot take"
[ "$(json_cache "$mnt" current_write_policy)" = writethrough ] || fail "write policy still write-back with full members"
[ "$(json_cache "$mnt" current_reason)" = "members nearly full" ] ||
	fail "status JSON gives no reason: '$(json_cache "$mnt" current_reason)'"
"$RAIDFS" status "$mnt" | grep -q "current: writethrough, members nearly full" || fail "status text gives no reason"
cmp -n "$size" "$T/ref" "$mnt/big" || fail "the bytes written before ENOSPC do not read back"

rfs_unmount "$mnt" || fail "unmount"
rfs_mount "$mcolon" "$mnt" -o bbu=shm,cache_size=256M || fail "remount"
[ "$(stat -c %s "$mnt/big")" = "$size" ] || fail "size after remount $(stat -c %s "$mnt/big"), was $size"
cmp -n "$size" "$T/ref" "$mnt/big" || fail "the bytes written before ENOSPC differ after a remount"

rm "$mnt/big"
dd if="$T/ref" of="$mnt/small" bs=1M count=16 2>/dev/null || fail "16 MiB write after freeing the space"
[ "$(json_cache "$mnt" current_write_policy)" = writeback ] ||
	fail "write-back did not resume with room on the members ($(json_cache "$mnt" current_reason))"
cmp -n $((16 << 20)) "$T/ref" "$mnt/small" || fail "the file written after freeing space differs"
rfs_unmount "$mnt" || fail "unmount"
expect_rc 0 "$RAIDFS" check "$mcolon"

for level in $(tier_pick raid6 "raid5 raid6"); do
	for opts in write_policy=writethrough bbu=shm; do
		for d in $members; do rm -rf "$d"/* "$d"/.raidfs; done
		"$RAIDFS" create --level $level --chunk 16K $members >/dev/null || fail "create $level"
		rfs_mount "$mcolon" "$mnt" -o "$opts" || fail "mount $level $opts"
		"$PY" - "$mnt" "$SEED" <<'PYEOF' || fail "random writes on $level ($opts) stopped by something else than ENOSPC"
import errno, os, random, sys
d, rnd = sys.argv[1], random.Random(int(sys.argv[2]))
fds = [os.open(os.path.join(d, "f%d" % i), os.O_CREAT | os.O_RDWR, 0o644) for i in range(6)]
n = full = 0
while full < 100 and n < 50000:
    fd = rnd.choice(fds)
    size = os.fstat(fd).st_size
    off = rnd.randrange(size + 1) if rnd.random() < 0.5 else size
    try:
        os.pwrite(fd, os.urandom(rnd.choice([1, 100, 4096, 5000, 65536, 200000])), off)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        full += 1
    n += 1
assert full == 100, "the members never filled up"
PYEOF
		rfs_unmount "$mnt" || fail "unmount $level $opts"
		"$RAIDFS" check "$mcolon" >"$T/check.out" 2>&1 ||
			fail "$level ($opts): parity out of step after writes refused with ENOSPC: $(head -5 "$T/check.out")"
	done
done

# one_stripe NAME LEVEL WIDTH: a new array (chunk 16K) under $T/NAME with
# g, one full stripe of three data slots, on the members; unmounted.
# Sets C, mem, and d0 d1 p: the members of slot 0, slot 1 and P (the xor
# of the three slots)
one_stripe() {
	C=$T/$1
	mkdir -p "$C"
	mem=$(make_members "$3" "$1/d")
	"$RAIDFS" create --level "$2" --chunk 16K $mem >/dev/null || fail "create $2"
	rfs_mount "$(join_members $mem)" "$C/mnt" -o write_policy=writethrough || fail "mount $2"
	head -c 49152 /dev/urandom >"$C/ref"
	cp "$C/ref" "$C/mnt/g" || fail "$2: write failed"
	rfs_unmount "$C/mnt" || fail "$2: unmount"
	read -ra slots < <(stripe0_slots "$C/ref" 16384 3 $mem)
	d0=$(slot_member 0 "${slots[@]}")
	d1=$(slot_member 1 "${slots[@]}")
	p=$(slot_member p "${slots[@]}")
	[ -n "$p" ] || fail "$2: slots not found"
}

# 4.
for cfg in "raid5 4" "raid6 5"; do
	read -r level width <<<"$cfg"
	one_stripe "mid-$level" "$level" "$width"
	rfs_mount "$(join_members $mem)" "$C/mnt" -o write_policy=writethrough || fail "mount $level"
	expect_rc 0 "$RAIDFS" fail "$C/mnt" "$d1"
	expect_rc 0 "$RAIDFS" inject "$C/mnt" "$p" write-error every ENOSPC
	head -c 4096 /dev/urandom >"$C/new"
	cp "$C/ref" "$C/ref2"
	dd if="$C/new" of="$C/ref2" bs=4096 conv=notrunc 2>/dev/null
	if dd if="$C/new" of="$C/mnt/g" bs=4096 conv=notrunc 2>"$C/dd.err"; then
		cp "$C/ref2" "$C/ref"
		[ "$level" = raid6 ] || fail "$level: the write succeeded with two members out"
	elif [ "$level" = raid6 ]; then
		fail "$level: the write failed although the full member could be failed: $(cat "$C/dd.err")"
	fi
	"$RAIDFS" status "$C/mnt" >"$C/status.txt"
	grep -q "^ *$p  faulty" "$C/status.txt" || fail "$level: the full member $p was not failed: $(cat "$C/status.txt")"
	grep -q "member $p .* is full in the middle of a stripe.*put it back with .raidfs add" "$T/daemon.log" || fail "$level: no message about the full member (with what to do)"
	# (raid5: the failed write may have reached slot 0, or not; reading
	# may fail - the array is out of members - but never return a slot 1
	# made from the stale parity)
	if cat "$C/mnt/g" >"$C/read" 2>/dev/null; then
		cmp -s "$C/ref" "$C/read" || cmp -s "$C/ref2" "$C/read" ||
			fail "$level: g reads $(cmp -l "$C/ref" "$C/read" | wc -l) bytes other than written (slot 1 read from stale parity?)"
	else
		[ "$level" = raid5 ] || fail "$level: g cannot be read"
	fi
	rfs_unmount "$C/mnt" || fail "$level: unmount"
	log "ok: $level: a member full in the middle of a degraded stripe write was failed; no wrong byte read"
done

# 5. A truncate whose parity member is full (ENOSPC injected on P of
#    raid6): the stripe across the new end changes whatever happens - its
#    data is cut - so P's member is failed and the truncate succeeds with
#    Q; with slot 0's member failed too, g reads as truncated, and grown
#    again, zeros.  (Before: the truncate failed with ENOSPC half done.)
one_stripe cut raid6 5
rfs_mount "$(join_members $mem)" "$C/mnt" -o write_policy=writethrough || fail "cut: mount"
expect_rc 0 "$RAIDFS" inject "$C/mnt" "$p" write-error every ENOSPC
truncate -s 3000 "$C/mnt/g" || fail "cut: the truncate failed with P's member full (Q could take the change)"
"$RAIDFS" status "$C/mnt" >"$C/status.txt"
grep -q "^ *$p  faulty" "$C/status.txt" || fail "cut: P's full member $p was not failed: $(cat "$C/status.txt")"
expect_rc 0 "$RAIDFS" fail "$C/mnt" "$d0"
head -c 3000 "$C/ref" >"$C/cut"
cmp -s "$C/cut" "$C/mnt/g" || fail "cut: g does not read as truncated with slot 0's member failed"
truncate -s 49152 "$C/mnt/g" "$C/cut"
cmp -s "$C/cut" "$C/mnt/g" || fail "cut: g grown again does not read zeros past 3000"
rfs_unmount "$C/mnt" || fail "cut: unmount"
log "ok: raid6: a truncate with P's member full failed that member and read right with Q"

# 6. Members sharing one filesystem that fills up (one disk holding all
#    four directories, as a first try of raidfs often has): random writes
#    from four threads into the holes of sparse files, once it is full.
#    Every member fills at the same moment, so a write that one refused
#    in the middle of a stripe would fail members one after another (a
#    raid6 lost two, down to no redundancy, before the holes below the
#    reserved size were allocated ahead too); now each write that does not
#    fit is refused before any member is written: no member is failed,
#    every write acknowledged reads back, the offline check is clean.
C=$T/shared
mkdir -p "$C/disk"
mount -t tmpfs -o size=32m tmpfs "$C/disk" || skip "cannot mount a tmpfs (needs root)"
MOUNTS+=("$C/disk")
mem=$(for i in 0 1 2 3; do mkdir -p "$C/disk/d$i" && echo "$C/disk/d$i"; done)
expect_rc 0 "$RAIDFS" create --level raid6 --chunk 64K --name shared $mem
rfs_mount "$(join_members $mem)" "$C/mnt" -o write_policy=writethrough || fail "shared: mount"
head -c $((40 << 20)) /dev/urandom >"$C/mnt/fill" 2>/dev/null && fail "shared: 40 MiB fitted on a 32 MiB disk"
# (some room again: the writes below fill it, some fit and some do not)
truncate -s $(($(stat -c %s "$C/mnt/fill") - (4 << 20))) "$C/mnt/fill" || fail "shared: truncate"
timeout -k 5 120 "$PY" - "$C/mnt" "$SEED" <<'PYEOF' || fail "shared: the writes into holes failed other than with ENOSPC"
import errno, os, sys, random, threading
mnt, seed = sys.argv[1], int(sys.argv[2])
files = {}
for name in ("s1", "s2"):
    fd = os.open(os.path.join(mnt, name), os.O_RDWR | os.O_CREAT, 0o644)
    os.ftruncate(fd, 24 << 20)
    files[name] = fd
done, refused, lock = {}, [0], threading.Lock()
def writer(t):
    r = random.Random(seed + t)
    for _ in range(400):
        name = r.choice(sorted(files))
        off, data = r.randrange(0, 24 << 20, 4096), r.randbytes(4096)
        try:
            os.pwrite(files[name], data, off)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
            with lock:
                refused[0] += 1
            continue
        with lock:
            done[(name, off)] = data
ts = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
for t in ts: t.start()
for t in ts: t.join()
assert refused[0] > 0, "the disk never filled up"
assert len(done) > 50, "only %d writes fitted" % len(done)
for (name, off), data in done.items():
    assert os.pread(files[name], 4096, off) == data, "%s at %d does not read back" % (name, off)
print("%d writes acknowledged and read back, %d refused with ENOSPC" % (len(done), refused[0]))
PYEOF
"$RAIDFS" status --json "$C/mnt" >"$C/st.json"
"$PY" -c 'import json, sys; m = json.load(open(sys.argv[1]))["members"]; bad = [x["index"] if "index" in x else i for i, x in enumerate(m) if x["state"] != "online"]; sys.exit("members failed: %s" % bad if bad else 0)' "$C/st.json" ||
	fail "shared: a full disk failed members: $("$RAIDFS" status "$C/mnt")"
rfs_unmount "$C/mnt" || fail "shared: unmount"
expect_rc 0 "$RAIDFS" check "$(join_members $mem)"
log "ok: raid6 on one full disk: writes into holes refused whole with ENOSPC, no member failed, check clean"
log "ok"
