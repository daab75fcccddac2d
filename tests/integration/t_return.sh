#!/bin/bash
# t_return - members that go away and come back, while mounted and across
# a remount:
#   1. two raid5 members vanish while idle: the array fails (writes are
#      refused, reads that need them fail, nothing wrong is returned); when
#      the disks come back the monitor takes them back by itself (nothing
#      changed while they were away) and the array is optimal and writable;
#   2. the same, but the array is unmounted while failed: the next mount
#      takes the returning members back (their missed-write logs are empty);
#   3. one member vanishes during writes: when it comes back the monitor
#      re-adds it and resyncs only what changed; then a different member
#      fails and every byte is still right;
#   (also: a member missing at mount that shows up, and a member directory
#   moved away while mounted and moved back)
#   4. 'raidfs fail' then 'raidfs add' of the same directory with nothing
#      written meanwhile: back at once, no resync.
. "$(dirname "$0")/lib.sh"
need_fuse

wait_status() {	# MOUNTPOINT RC
	for i in $(seq 1 300); do
		"$RAIDFS" status "$1" >/dev/null 2>&1
		[ $? = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

mem=$(make_members 4)
mkdir -p "$T/ref"
mnt=$T/mnt
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name ret $mem
rfs_mount "$(join_members $mem)" "$mnt" || fail "mount"
workload run --mnt "$mnt" --ref "$T/ref" --seed "$SEED" --ops 200 --chunk 4096 \
	--max-size 200000 >"$T/w0.out" 2>&1 || { cat "$T/w0.out" >&2; fail "first workload"; }

# 1: two members vanish while idle, come back while mounted
"$RAIDFS" inject "$mnt" 1 vanish >/dev/null
"$RAIDFS" inject "$mnt" 2 vanish >/dev/null
wait_status "$mnt" 2 || fail "array not failed with members 1 and 2 gone: $("$RAIDFS" status "$mnt")"
(echo x > "$mnt/refused") 2>/dev/null && fail "a write succeeded on a failed array"
# reads: an error or the right bytes, never wrong ones
nerr=0
while read -r f; do
	if cat "$mnt/$f" > "$T/read.tmp" 2>/dev/null; then
		cmp -s "$T/read.tmp" "$T/ref/$f" || fail "wrong data read from the failed array: $f"
	else
		nerr=$((nerr + 1))
	fi
done < <(cd "$T/ref" && find . -type f -size +20k | head -n 20)
[ "$nerr" -gt 0 ] || fail "every read of a failed raid5 missing two members succeeded"
"$RAIDFS" inject "$mnt" 1 clear >/dev/null
"$RAIDFS" inject "$mnt" 2 clear >/dev/null
wait_status "$mnt" 0 || fail "the array did not recover when members 1 and 2 came back: $("$RAIDFS" status "$mnt")"
grep -q "member 1 .*is back, with nothing missed" "$T/daemon.log" || fail "no log line for member 1 coming back"
workload compare "$mnt" "$T/ref" >"$T/cmp.out" 2>&1 || { cat "$T/cmp.out" >&2; fail "tree differs after members 1 and 2 came back"; }
echo back > "$mnt/back" && echo back > "$T/ref/back" || fail "write after recovery"
log "ok: a failed array recovered by itself when its members came back"

# 1b: member 1 goes, a file changes, member 2 goes (failed).  Member 1
# comes back first: it missed a change and nothing can resync it, so it
# waits (the log says why); member 2, which missed nothing, comes back at
# once, and then member 1 is resynced by itself.
"$RAIDFS" inject "$mnt" 1 vanish >/dev/null
wait_status "$mnt" 1 || fail "1b: member 1 not failed"
echo while-away > "$mnt/away" && echo while-away > "$T/ref/away" || fail "1b: write while member 1 is away"
# (the kernel sends the file's release after close() returns, and the
# release writes its metadata record: member 2 vanishing under that write
# misses it, and then both members missed changes - a different scenario)
sleep 0.5
"$RAIDFS" inject "$mnt" 2 vanish >/dev/null
wait_status "$mnt" 2 || fail "1b: array not failed without members 1 and 2"
"$RAIDFS" inject "$mnt" 1 clear >/dev/null
for i in $(seq 1 50); do grep -q "member 1 is back at .* cannot be re-added yet: member 1 missed changes" "$T/daemon.log" && break; sleep 0.1; done
grep -q "member 1 is back at .* cannot be re-added yet: member 1 missed changes" "$T/daemon.log" ||
	fail "1b: no log line saying why member 1 waits"
expect_rc 2 "$RAIDFS" status "$mnt"
"$RAIDFS" inject "$mnt" 2 clear >/dev/null
wait_status "$mnt" 0 || fail "1b: not optimal after members 2 and then 1 came back: $("$RAIDFS" status "$mnt")"
"$RAIDFS" fail "$mnt" 3 >/dev/null
workload compare "$mnt" "$T/ref" >"$T/cmp.out" 2>&1 || { cat "$T/cmp.out" >&2; fail "1b: tree differs without member 3"; }
"$RAIDFS" add "$mnt" "$T/d4" >/dev/null || fail "1b: add member 3 back"
wait_status "$mnt" 0 || fail "1b: member 3 not back"
log "ok: a member that missed changes waits until the array can resync it"

# 2: failed, unmounted, mounted again with everything
"$RAIDFS" inject "$mnt" 0 vanish >/dev/null
"$RAIDFS" inject "$mnt" 3 vanish >/dev/null
wait_status "$mnt" 2 || fail "array not failed with members 0 and 3 gone"
rfs_unmount_wait "$mnt" || fail "unmount of the failed array"
rfs_mount "$(join_members $mem)" "$mnt" || fail "remount with the members that came back: $(cat "$T/err.txt" 2>/dev/null)"
grep -q "taken back" "$T/daemon.log" || fail "no log line for members taken back at mount"
expect_rc 0 "$RAIDFS" status "$mnt"
workload compare "$mnt" "$T/ref" >"$T/cmp.out" 2>&1 || { cat "$T/cmp.out" >&2; fail "tree differs after the remount"; }
log "ok: a remount took back members that missed nothing"

# 2b: a member missing at mount shows up later: re-added by the monitor
rfs_unmount_wait "$mnt" || fail "unmount before hiding member 1"
hide_member "$T/d2"
rfs_mount "$(join_members $mem)" "$mnt" || fail "degraded mount without member 1"
echo late > "$mnt/late" && echo late > "$T/ref/late" || fail "write while member 1 is missing"
unhide_member "$T/d2"
wait_status "$mnt" 0 || fail "member 1 not re-added when its directory showed up: $("$RAIDFS" status "$mnt")"
log "ok: a member missing at mount was re-added when it showed up"

# 2c: a member directory moved away while mounted (as a disk unmounted
# under the array): failed within a second; moved back: re-added
mv "$T/d3" "$T/d3.moved"
wait_status "$mnt" 1 || fail "moving member 2's directory away did not fail it: $("$RAIDFS" status "$mnt")"
grep -q "no longer at its path" "$T/daemon.log" || fail "no log line for the moved member"
echo moved > "$mnt/moved" && echo moved > "$T/ref/moved" || fail "write while member 2 is away"
mv "$T/d3.moved" "$T/d3"
wait_status "$mnt" 0 || fail "member 2 not re-added when its directory came back: $("$RAIDFS" status "$mnt")"
log "ok: a member moved away is failed, and re-added when it is back"

# 3: a member vanishes during writes and comes back: incremental re-add
workload run --mnt "$mnt" --ref "$T/ref" --seed $((SEED + 1)) --ops 300 --chunk 4096 \
	--max-size 200000 --name-prefix v --log "$T/w1.log" >"$T/w1.out" 2>&1 &
wpid=$!
sleep 0.3
"$RAIDFS" inject "$mnt" 3 vanish >/dev/null
sleep 0.5
"$RAIDFS" inject "$mnt" 3 clear >/dev/null
wait $wpid || { cat "$T/w1.out" >&2; fail "workload error while member 3 was away"; }
wait_status "$mnt" 0 || fail "member 3 not back after it returned: $("$RAIDFS" status "$mnt")"
"$RAIDFS" fail "$mnt" 0 >/dev/null || fail "fail 0"
workload compare "$mnt" "$T/ref" >"$T/cmp.out" 2>&1 || { cat "$T/cmp.out" >&2; fail "tree differs without member 0 after member 3 was re-added"; }
log "ok: a member that vanished during writes was re-added by itself"

# 4: fail and add back with nothing written: no resync
"$RAIDFS" add "$mnt" "$T/d1" >"$OUT" 2>&1
grep -q "member 0 .*re-added\|member 0 is back" "$OUT" || fail "add of member 0: $(cat "$OUT")"
wait_status "$mnt" 0 || fail "member 0 not back"
"$RAIDFS" fail "$mnt" 2 >/dev/null
expect_rc 0 "$RAIDFS" add "$mnt" "$T/d3"
grep -q "member 2 is back in service .*nothing changed" "$OUT" || fail "fail+add with nothing written resynced: $(cat "$OUT")"
expect_rc 0 "$RAIDFS" status "$mnt"
workload compare "$mnt" "$T/ref" >"$T/cmp.out" 2>&1 || { cat "$T/cmp.out" >&2; fail "tree differs at the end"; }
rfs_unmount_wait "$mnt" || fail "unmount"
expect_rc 0 "$RAIDFS" check "$(join_members $mem)"
log "ok: fail + add with nothing written is instant"
exit 0
