#!/bin/bash
# t_cache_crash.sh - the cache keeps every acknowledged write across a crash.
#
# kill -9 of the daemon during write-back writes, with
#   bbu=shm          the cache survives in /dev/shm and is replayed;
#   bbu=file:PATH    the shared memory is also wiped (a power loss): the
#                    log on "disk" alone must bring every write back.
# Two writers (workload.py crashwrite --ack) record every write that
# returned; after the next mount every acknowledged byte must be there
# (crashverify), and after unmount `raidfs check` must be clean.  A long
# cache_age keeps lines dirty, so the kill finds the cache full of data.
#
# Preserved cache: kill -9 with dirty lines, then two raid5 members go
# away: the mount comes up offline and says the cache is preserved (status
# action line, nothing served); when the members return the cache is
# written and the files are served again, every acknowledged byte there.
#
# Environment: SEED, ITERS (crash iterations per configuration, 3).
. "$(dirname "$0")/lib.sh"
need_fuse
need_python
RANDOM=$SEED
ITERS=${ITERS:-3}

json_cache() {
	"$RAIDFS" status --json "$1" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["cache"][sys.argv[1]])' "$2"
}

# crash_round CFGDIR MEMBERS MNT OPTS IT: write, kill, (wipe), mount, verify
crash_round() {
	local C=$1 members=$2 mnt=$3 opts=$4 it=$5 wipe=$6 w k st
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: iteration $it: mount failed"
	for k in $(seq 1 $((it - 1))); do
		for st in "$C"/state."$k".*; do
			workload crashverify --mnt "$mnt/i$k-${st##*.}" --state "$st" >"$C/verify.out" 2>&1 ||
				{ cat "$C/verify.out" >&2; fail "$what: iteration $k: acknowledged data lost after the replay"; }
		done
	done
	local pids=()
	for w in 1 2; do
		workload crashwrite --ack --mnt "$mnt/i$it-$w" --state "$C/state.$it.$w" \
			--seed $((SEED + 100 * it + w)) --chunk 16384 --max-size 400000 \
			>"$C/cw.$it.$w.out" 2>&1 &
		pids+=($!)
	done
	sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.5 + (r % 100) / 100 }')"
	local dirty
	dirty=$(json_cache "$mnt" dirty_bytes)
	rfs_kill "$mnt" || fail "$what: kill failed"
	for p in "${pids[@]}"; do wait "$p"; done
	[ "$wipe" = 1 ] && rm -f /dev/shm/raidfs-"$uuid"*
	log "$what: iteration $it: killed with $dirty dirty bytes in the cache"
	TOTAL_DIRTY=$((TOTAL_DIRTY + dirty))
}

TOTAL_DIRTY=0
n=0
for cfg in "raid5 4 bbu=shm 0" "raid6 5 bbu=file:@LOG@ 1"; do
	n=$((n + 1))
	read -r level width bbu wipe <<<"$cfg"
	C=$T/c$n
	mkdir -p "$C"
	bbu=${bbu//@LOG@/$C/cache.log}
	opts="write_policy=writeback,$bbu,cache_size=8M,cache_age=5000"
	what="$level $bbu"
	mem=$(make_members "$width" "c$n/d")
	members=$(join_members $mem)
	mnt=$C/mnt
	expect_rc 0 "$RAIDFS" create --level "$level" --chunk 16K $mem
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
	uuid=$("$RAIDFS" status --json "$mnt" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["uuid"])')
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	for it in $(seq 1 "$ITERS"); do
		crash_round "$C" "$members" "$mnt" "$opts" "$it" "$wipe"
	done
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: final mount failed"
	for k in $(seq 1 "$ITERS"); do
		for st in "$C"/state."$k".*; do
			workload crashverify --mnt "$mnt/i$k-${st##*.}" --state "$st" >"$C/verify.out" 2>&1 ||
				{ cat "$C/verify.out" >&2; fail "$what: iteration $k: acknowledged data lost after the replay"; }
		done
	done
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	expect_rc 0 "$RAIDFS" check "$members"
	[ -e /dev/shm/raidfs-"$uuid".cache ] && fail "$what: the shm cache is left behind after a clean unmount"
	log "ok: $what: $ITERS kill -9 rounds, every acknowledged write present, check clean"
done
[ "$TOTAL_DIRTY" -gt 0 ] || fail "the kills never found dirty data in the cache: the test proves nothing"

# ------------------------------------------------------------ preserved cache
C=$T/pc
mkdir -p "$C"
mem=$(make_members 4 "pc/d")
members=$(join_members $mem)
set -- $mem
mnt=$C/mnt
what="preserved cache"
opts="write_policy=writeback,bbu=shm,cache_size=8M,cache_age=600000"
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 16K $mem
rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
uuid=$("$RAIDFS" status --json "$mnt" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["uuid"])')
workload crashwrite --ack --mnt "$mnt/p" --state "$C/state" --seed "$SEED" --chunk 16384 \
	--max-size 400000 --max-ops 150 >"$C/cw.out" 2>&1 || { cat "$C/cw.out" >&2; fail "$what: writer failed"; }
dirty=$(json_cache "$mnt" dirty_bytes)
[ "$dirty" -gt 0 ] || fail "$what: nothing dirty before the kill"
rfs_kill "$mnt" || fail "$what: kill failed"
hide_member "$2"
hide_member "$3"
rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: the mount with a preserved cache and two members gone failed"
"$RAIDFS" status "$mnt" >"$C/status.out"
grep -q "preserved" "$C/status.out" || { cat "$C/status.out" >&2; fail "$what: status does not report the preserved cache"; }
grep -q "^action:.*preserved" "$C/status.out" || { cat "$C/status.out" >&2; fail "$what: no action line for the preserved cache"; }
pb=$(json_cache "$mnt" preserved_bytes)
[ "$pb" -gt 0 ] || fail "$what: preserved_bytes is $pb"
cat "$mnt/p/c0" >/dev/null 2>&1 && fail "$what: a file was served while its newest data sits in a preserved cache"
expect_rc 1 "$RAIDFS" cache "$mnt" discard
[ -e /dev/shm/raidfs-"$uuid".cache ] || fail "$what: the preserved cache is gone"
unhide_member "$2"
unhide_member "$3"
for _ in $(seq 1 100); do
	[ "$(json_cache "$mnt" preserved_bytes)" = 0 ] && break
	sleep 0.2
done
[ "$(json_cache "$mnt" preserved_bytes)" = 0 ] || { "$RAIDFS" status "$mnt" >&2; fail "$what: the members returned but the cache was not replayed"; }
workload crashverify --mnt "$mnt/p" --state "$C/state" >"$C/verify.out" 2>&1 ||
	{ cat "$C/verify.out" >&2; fail "$what: acknowledged data lost after the preserved cache was replayed"; }
rfs_unmount "$mnt" || fail "$what: unmount failed"
expect_rc 0 "$RAIDFS" check "$members"
log "ok: $what: kept and reported while two members were gone ($pb bytes), replayed when they returned"
exit 0
