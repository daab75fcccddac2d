#!/bin/bash
# t_cache.sh - the write cache: every policy keeps the data right, full
# stripes are written without reads, the battery switches the policy.
#
# 1. The random workload (workload.py run) against a reference directory,
#    byte-identical, under writeback (bbu=shm), always-writeback (bbu=none)
#    and writethrough, with a tiny cache (a few stripes: constant destage
#    and eviction) and a large one; after unmount the offline check is
#    clean and a fresh mount still matches the reference.
# 2. Full-stripe coalescing: a sequential write in write-back causes no
#    member read at all (member read counters of `status --json`).
# 3. Battery: fail -> current policy writethrough and the dirty bytes go
#    to zero (a long cache_age keeps them dirty until then); restore ->
#    writeback; learn -> writethrough for the learn time, then writeback.
#    always-writeback needs --force.
# Also: read-ahead serves a sequential reader from the cache (ra) or not
# at all (nora).
#
# Environment: SEED, OPS (workload operations per configuration, 600).
#
# Tiers: quick - part 1 with write-back and a tiny cache only (shared
# memory, file log); long - every policy and size.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

OPS=${OPS:-600}

json_field() {	# json_field MNT KEY: a scalar of the "cache" object
	"$RAIDFS" status --json "$1" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["cache"][sys.argv[1]])' "$2"
}
member_reads() {
	"$RAIDFS" status --json "$1" | "$PY" -c 'import json,sys; print(sum(m["reads"] for m in json.load(sys.stdin)["members"]))'
}
wait_field() {	# wait_field MNT KEY VALUE [TENTHS]
	for _ in $(seq 1 "${4:-100}"); do
		[ "$(json_field "$1" "$2")" = "$3" ] && return 0
		sleep 0.1
	done
	return 1
}

# raid5_mount NAME OPTIONS: a new 4-member raid5 (16K chunk) under $T/NAME,
# mounted on $mnt; sets mem, members, mnt
raid5_mount() {
	mem=$(make_members 4 "$1/d")
	members=$(join_members $mem)
	mnt=$T/$1/mnt
	expect_rc 0 "$RAIDFS" create --level raid5 --chunk 16K $mem
	rfs_mount "$members" "$mnt" -o "$2" || fail "$1: mount failed"
}

# ---------------------------------------------------------------- 1. policies
# level width chunk options
CONFIGS=(
	"raid5 4 16K write_policy=writeback,bbu=shm,cache_size=1M"
	"raid5 4 16K write_policy=writeback,bbu=shm,cache_size=64M"
	"raid6 5 16K write_policy=always-writeback,bbu=none,cache_size=1M"
	"raid6 5 64K write_policy=always-writeback,cache_size=64M,cache_age=1000"
	"raid1 2 16K write_policy=writeback,bbu=file:@LOG@,cache_size=1M"
	"raid10 4 16K write_policy=writethrough,cache_size=1M"
	"raid0 3 4K write_policy=always-writeback,cache_size=1M"
)
# quick tier: write-back with a tiny cache (constant destage and
# eviction), in shared memory (1) and with the file log (5: the log the
# next part gives another array)
n=0
for cfg in "${CONFIGS[@]}"; do
	n=$((n + 1))
	long_tier || [ "$n" = 1 ] || [ "$n" = 5 ] || continue
	read -r level width chunk opts <<<"$cfg"
	opts=${opts//@LOG@/$T/p$n.log}
	mem=$(make_members "$width" "p$n/d")
	members=$(join_members $mem)
	mnt=$T/p$n/mnt ref=$T/p$n/ref
	mkdir -p "$ref"
	what="$level $chunk $opts"
	expect_rc 0 "$RAIDFS" create --level "$level" --chunk "$chunk" $mem
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
	want=${opts#write_policy=}; want=${want%%,*}
	[ "$(json_field "$mnt" write_policy)" = "$want" ] || fail "$what: status shows write policy $(json_field "$mnt" write_policy)"
	cb=$(size_bytes "$chunk")
	if ! workload run --mnt "$mnt" --ref "$ref" --seed $((SEED + n)) --ops "$OPS" \
		--chunk "$cb" --max-size $((40 * cb + 777)) --log "$T/p$n/ops.log" >"$T/p$n/wl.out" 2>&1; then
		cat "$T/p$n/wl.out" >&2
		fail "$what: the mount diverged from the reference (seed $((SEED + n)))"
	fi
	workload compare "$ref" "$mnt" >"$T/cmp.out" 2>&1 || { cat "$T/cmp.out" >&2; fail "$what: trees differ while mounted"; }
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	expect_rc 0 "$RAIDFS" check "$members"
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: second mount failed"
	workload compare "$ref" "$mnt" >"$T/cmp.out" 2>&1 || { cat "$T/cmp.out" >&2; fail "$what: trees differ after a remount"; }
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	log "ok: $what"
done

# a cache log is never taken over by another array
mem=$(make_members 3 "other/d")
expect_rc 0 "$RAIDFS" create --level raid5 $mem
mkdir -p "$T/other/mnt"
MOUNTS+=("$T/other/mnt")	# unmounted at exit should it mount
expect_rc 1 "$RAIDFS" mount -o "bbu=file:$T/p5.log" "$(join_members $mem)" "$T/other/mnt"
grep -q "belongs to another array; give each array its own log" "$ERR" || fail "foreign cache log: $(cat "$ERR")"
is_mounted "$T/other/mnt" && fail "foreign cache log: mounted anyway"
log "ok: another array's cache log is refused"

# ---------------------------------------------------- 2. full-stripe coalescing
raid5_mount s write_policy=writeback,bbu=shm,cache_size=64M
# 640 stripes of 48 KiB in 1 MiB writes that do not line up with stripes
head -c $((640 * 49152)) /dev/urandom >"$T/s/ref"
r0=$(member_reads "$mnt")
dd if="$T/s/ref" of="$mnt/seq" bs=1M 2>/dev/null || fail "coalescing: write failed"
"$RAIDFS" cache "$mnt" flush >/dev/null || fail "coalescing: flush failed"
r1=$(member_reads "$mnt")
[ "$r1" -eq "$r0" ] || fail "coalescing: a sequential write-back write caused $((r1 - r0)) member reads (want 0)"
cmp "$T/s/ref" "$mnt/seq" || fail "coalescing: data differs"
rfs_unmount "$mnt" || fail "coalescing: unmount failed"
expect_rc 0 "$RAIDFS" check "$members"
log "ok: sequential write-back write: 0 member reads for $((640 * 48)) KiB"

# ---------------------------------------------------------- 2b. read-ahead
# A sequential reader is served from the cache with read_policy=ra (the
# read-ahead thread fills lines ahead of it), never with nora; the data is
# right either way.  member_sync=always is accepted and keeps data right.
for rp in ra nora; do
	raid5_mount "ra-$rp" "write_policy=writethrough,read_policy=$rp,member_sync=always"
	head -c 8000000 /dev/urandom >"$T/ra-$rp/ref"
	cp "$T/ra-$rp/ref" "$mnt/f" || fail "read-ahead: write failed"
	# (64 KiB direct reads with a breath between them, as an application
	# that works on what it reads: on a busy machine a reader that never
	# pauses can keep ahead of the read-ahead thread, and the test would
	# prove nothing either way)
	"$PY" - "$mnt/f" "$T/ra-$rp/back" <<'PYEOF' || fail "read-ahead: read failed"
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 65536)
with open(sys.argv[2], "wb") as out:
    while True:
        n = os.readv(fd, [buf])
        if n <= 0:
            break
        out.write(buf[:n])
        time.sleep(0.002)
PYEOF
	cmp "$T/ra-$rp/ref" "$T/ra-$rp/back" || fail "read-ahead ($rp): data differs"
	hits=$(json_field "$mnt" hits)
	if [ $rp = ra ]; then
		[ "$hits" -gt 0 ] || fail "read-ahead: a sequential reader got no cache hit with read_policy=ra"
	else
		[ "$hits" -eq 0 ] || fail "read-ahead: $hits cache hits with read_policy=nora"
	fi
	rfs_unmount "$mnt" || fail "read-ahead: unmount failed"
	log "ok: read_policy=$rp: $hits read hits for a sequential reader"
done

# ------------------------------------------------------------------ 3. battery
raid5_mount b write_policy=writeback,bbu=shm,bbu_learn_time=3,cache_age=600000
[ "$(json_field "$mnt" current_write_policy)" = writeback ] || fail "battery: current policy is not writeback with a good battery"
head -c 100000 /dev/urandom >"$T/b/ref"
cp "$T/b/ref" "$mnt/f" || fail "battery: write failed"
d=$(json_field "$mnt" dirty_bytes)
[ "$d" -gt 0 ] || fail "battery: nothing dirty after a partial-stripe write with a 10-minute cache age"
expect_rc 0 "$RAIDFS" bbu "$mnt" fail
[ "$(json_field "$mnt" bbu_state)" = failed ] || fail "battery: state is not failed"
[ "$(json_field "$mnt" current_write_policy)" = writethrough ] || fail "battery: failed battery but policy $(json_field "$mnt" current_write_policy)"
wait_field "$mnt" dirty_bytes 0 || fail "battery: dirty bytes stay at $(json_field "$mnt" dirty_bytes) after the battery failed"
"$RAIDFS" status "$mnt" | grep -q "action:  the battery has failed" || fail "battery: no action line for a failed battery"
expect_rc 0 "$RAIDFS" bbu "$mnt" restore
[ "$(json_field "$mnt" current_write_policy)" = writeback ] || fail "battery: restored but policy $(json_field "$mnt" current_write_policy)"
expect_rc 0 "$RAIDFS" bbu "$mnt" learn
[ "$(json_field "$mnt" current_write_policy)" = writethrough ] || fail "battery: learning but policy $(json_field "$mnt" current_write_policy)"
[ "$(json_field "$mnt" bbu_state)" = learning ] || fail "battery: state is not learning"
wait_field "$mnt" bbu_state optimal 80 || fail "battery: the 3 s learn cycle did not end"
[ "$(json_field "$mnt" current_write_policy)" = writeback ] || fail "battery: after learning the policy is $(json_field "$mnt" current_write_policy)"
expect_rc 1 "$RAIDFS" cache "$mnt" write_policy=always-writeback
grep -q -- "--force" "$ERR" || fail "battery: always-writeback without --force does not say to add --force"
expect_rc 0 "$RAIDFS" cache "$mnt" write_policy=always-writeback --force
expect_rc 0 "$RAIDFS" bbu "$mnt" fail
[ "$(json_field "$mnt" current_write_policy)" = writeback ] || fail "battery: always-writeback must stay write-back with a failed battery"
cmp "$T/b/ref" "$mnt/f" || fail "battery: data differs"
grep -q "battery: optimal -> failed" "$T/daemon.log" || fail "battery: the transition is not logged"
rfs_unmount "$mnt" || fail "battery: unmount failed"
expect_rc 0 "$RAIDFS" check "$members"
log "ok: battery fail/restore/learn switch the policy; always-writeback needs --force"

# ------------------------------------------- 4. a write during the last release
# With bbu=file a file's last release syncs the members before it clears
# the file's dirty-log entry.  A write through another open during that
# sync (its own release, not the last, leaves the marks to the first)
# used to keep the entry: the file, deleted then, stayed in the dirty
# log after a clean unmount (`raidfs check`: "1 file in the dirty log").
# The sync is made slow (latency on member 0's syncs) and the second
# write lands inside it.
mem=$(make_members 3 "rel/d")
members=$(join_members $mem)
mnt=$T/rel/mnt
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 16K $mem
rfs_mount "$members" "$mnt" -o "write_policy=writeback,bbu=file:$T/rel.log" || fail "release: mount failed"
head -c 100000 /dev/urandom >"$mnt/f" || fail "release: write failed"
expect_rc 0 "$RAIDFS" inject "$mnt" 0 latency 2000 fsync
"$RAIDFS" cache "$mnt" flush >/dev/null 2>&1 &	# (its destage ends with f's last release)
fpid=$!
sleep 0.5
dd if=/dev/urandom of="$mnt/f" bs=4096 count=1 conv=notrunc status=none || fail "release: overwrite failed"
"$RAIDFS" cache "$mnt" flush >/dev/null 2>&1 || fail "release: second flush failed"
wait $fpid
rm -f "$mnt/f"
expect_rc 0 "$RAIDFS" inject "$mnt" 0 clear
rfs_unmount "$mnt" || fail "release: unmount failed"
expect_rc 0 "$RAIDFS" check "$members"
log "ok: a file written during its last release's sync leaves no dirty-log entry behind"

# ----------------------------------------------- 5. writes during a destage
# A write into a line being written out is acknowledged at once: the
# destage writes a copy of the line, and the sectors written meanwhile stay
# dirty for the next one.  Member 2 is made slow (1 s an operation), so the
# destage of eight partly dirty lines takes seconds; writes into each of
# them meanwhile must take well under one member operation, read back at
# once, survive a kill -9 in the middle of the next destage (bbu=shm: the
# arena's dirty sectors are replayed), and the offline check is clean.
raid5_mount cow write_policy=writeback,bbu=shm,cache_age=600000
ref=$T/cow/ref
head -c $((8 * 49152)) /dev/urandom >"$ref"
cp "$ref" "$mnt/f" || fail "cow: write failed"
expect_rc 0 "$RAIDFS" cache "$mnt" flush
# cow_writes WHAT: a 4 KiB write into each of the eight lines (same offsets
# in $ref), each timed: fails when one took 500 ms or more
cow_writes() {
	"$PY" - "$mnt/f" "$ref" "$SEED$1" <<'PYEOF' || fail "cow: $1"
import os, random, sys, time
r = random.Random(sys.argv[3])
fds = [os.open(sys.argv[1], os.O_WRONLY), os.open(sys.argv[2], os.O_WRONLY)]
worst = 0
for line in range(8):
    off = line * 49152 + r.randrange(0, 49152 - 4096, 512)
    d = r.randbytes(4096)
    t = time.monotonic()
    os.pwrite(fds[0], d, off)
    worst = max(worst, time.monotonic() - t)
    os.pwrite(fds[1], d, off)
for fd in fds:
    os.close(fd)
if worst >= 0.5:
    sys.exit("a write took %.2f s: it waited for the destage" % worst)
PYEOF
}
cow_writes "dirty lines"
expect_rc 0 "$RAIDFS" inject "$mnt" 2 latency 1000
"$RAIDFS" cache "$mnt" flush >/dev/null 2>&1 &
fpid=$!
sleep 1.5	# (the destage holds the lines now: it waits on member 2)
cow_writes "writes into lines being written out"
kill -0 $fpid 2>/dev/null || fail "cow: the destage was over before the writes: the test proves nothing"
cmp "$ref" "$mnt/f" || fail "cow: f differs while the destage runs"
wait $fpid || fail "cow: flush failed"
expect_rc 0 "$RAIDFS" inject "$mnt" 2 clear
# (a sector written during the destage but taken as written out would be
# clean in the cache and old on the members)
rfs_unmount "$mnt" || fail "cow: unmount failed"
rfs_mount "$members" "$mnt" -o write_policy=writeback,bbu=shm,cache_age=600000 || fail "cow: mount failed"
cmp "$ref" "$mnt/f" || fail "cow: f differs after a remount"
cow_writes "more dirty lines"
expect_rc 0 "$RAIDFS" inject "$mnt" 2 latency 1000
"$RAIDFS" cache "$mnt" flush >/dev/null 2>&1 &
fpid=$!
sleep 1.5
cow_writes "writes into lines being written out, before a kill"
rfs_kill "$mnt" || fail "cow: kill failed"
wait $fpid
rfs_mount "$members" "$mnt" -o write_policy=writeback,bbu=shm || fail "cow: mount after the kill failed"
cmp "$ref" "$mnt/f" || fail "cow: f differs after a kill -9 in the middle of a destage"
rfs_unmount "$mnt" || fail "cow: unmount failed"
expect_rc 0 "$RAIDFS" check "$members"
log "ok: writes into lines being written out are not held by it; what they wrote stays dirty, survives kill -9"
exit 0
