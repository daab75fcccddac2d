#!/bin/bash
# t_spare - hot spares: a spare given at create takes over a failed member
# by itself while a workload runs; 'raidfs add' on a degraded array starts
# a rebuild at once; afterwards the array survives losing other members up
# to the tolerance with every byte intact; spares persist across remounts.
. "$(dirname "$0")/lib.sh"
need_fuse

mem=$(make_members 5)
mkdir -p "$T/s1" "$T/s2" "$T/ref"
mnt=$T/mnt
expect_rc 0 "$RAIDFS" create --level raid6 --chunk 4K --spare "$T/s1" --name sp $mem
grep -q "1 hot spare" "$OUT" || fail "create does not mention the spare: $(cat "$OUT")"
rfs_mount "$(join_members $mem):$T/s1" "$mnt" || fail "mount"
expect_rc 0 "$RAIDFS" status "$mnt"
grep -q "spare .*$T/s1" "$OUT" || fail "status does not list the spare: $(cat "$OUT")"
rfs_unmount_wait "$mnt" || fail "unmount"
# the spare is recorded in the superblocks: it is still there after a remount
rfs_mount "$(join_members $mem):$T/s1" "$mnt" || fail "remount"
"$RAIDFS" status "$mnt" | grep -q "spare .*$T/s1" || fail "spare lost across a remount"

workload run --mnt "$mnt" --ref "$T/ref" --seed "$SEED" --ops 150 --chunk 4096 >/dev/null 2>&1 || fail "workload"
workload run --mnt "$mnt" --ref "$T/ref" --seed $((SEED + 1)) --ops 400 --chunk 4096 --name-prefix w \
	>"$T/w.out" 2>&1 &
wpid=$!
"$RAIDFS" fail "$mnt" 2 >/dev/null || fail "fail 2"
for i in $(seq 1 300); do
	"$RAIDFS" status --json "$mnt" | grep -q "\"index\": 2, \"path\": \"$T/s1\", \"state\": \"online\"" && break
	sleep 0.1
done
"$RAIDFS" status --json "$mnt" | grep -q "\"index\": 2, \"path\": \"$T/s1\", \"state\": \"online\"" ||
	fail "the spare did not take over member 2: $("$RAIDFS" status "$mnt")"
wait $wpid || { cat "$T/w.out" >&2; fail "workload error during the spare rebuild"; }
log "ok: the spare took over member 2 by itself"

# no spare left: fail member 0, then 'raidfs add' rebuilds onto the new
# spare; both named relative to the caller's directory (the daemon's is /)
cd "$T" || fail "cd $T"
expect_rc 0 "$RAIDFS" fail mnt d1
grep -q "member 0 .* marked faulty" "$OUT" || fail "fail by a relative directory: $(cat "$OUT")"
expect_rc 0 "$RAIDFS" add mnt s2
grep -q "being rebuilt" "$OUT" || fail "add on a degraded array did not start a rebuild: $(cat "$OUT")"
grep -q "'$T/s2' added" "$OUT" || fail "add does not name the spare by its full path: $(cat "$OUT")"
cd / || fail "cd /"
for i in $(seq 1 300); do
	"$RAIDFS" status "$mnt" >/dev/null && break
	sleep 0.1
done
expect_rc 0 "$RAIDFS" status "$mnt"
"$RAIDFS" fail "$mnt" 1 >/dev/null
"$RAIDFS" fail "$mnt" 3 >/dev/null
workload compare "$mnt" "$T/ref" >"$T/cmp.out" 2>&1 ||
	{ cat "$T/cmp.out" >&2; fail "tree differs after losing members 1 and 3 with both spares rebuilt"; }
rfs_unmount_wait "$mnt" || fail "unmount"
log "ok: add rebuilt member 0; data intact without members 1 and 3"
exit 0
