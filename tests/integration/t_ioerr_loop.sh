#!/bin/bash
# t_ioerr_loop.sh - an I/O error at each member operation in turn (the
# I/O-error loop of SQLite's do_ioerr_test).
#
# For N = 1, 2, 3, ... a fresh array is created and mounted, member 1 is
# told to fail its Nth operation of one kind (`raidfs inject MNT 1
# write-error after N-1`: the Nth and every later one fail - a disk that
# goes bad at N; a write error fails the member at once, read errors are
# corrected until the read error threshold fails it), and a fixed workload
# (tests/tools/ioerr.py: creates, writes of several sizes with partial
# stripes, overwrites, appends, truncates, renames, fsync, fdatasync,
# unlinks, then every file read back) runs mirrored on a reference
# directory.  Each operation must succeed with the right bytes or fail
# leaving old-or-new bytes, never others.  Then:
#   - the member that met the error is faulty, or its errors were
#     corrected (status --json, before the unmount);
#   - unmount, mount again: the tree is the reference, byte for byte (every
#     acknowledged write, everything fsynced);
#   - a member that was failed is given back ('raidfs add') and resynced;
#     the tree is still the reference; unmount;
#   - `raidfs check` is clean.
# The loop of a kind ends with the first N whose run never met the fault
# (the member's error counter stayed 0 and the log names no error on it),
# or at a hard cap (then the test fails: the workload never ended).
#
# Tiers (RAIDFS_TEST_TIER): quick - raid5 over 4 members (write-through),
# N stepping by STRIDE (default 2) for writes and reads; long - every N,
# also raid1, raid6 and raid10, and raid5 and raid6 with the write-back
# cache, and on the first raid5 also ENOSPC on writes (a member that fills
# up: the member is failed or the caller gets the error), the metadata
# records, fsyncs and truncates.
#
# A read error on a member's chunk that lies past the end of the file (a
# partial-stripe write reads it for the parity) is repaired only up to
# the shard's length: `raidfs check` finds no shard longer than its file
# allows (the loop caught this once).
#
# Environment: STRIDE, FIRST (the first N, default 1), CAP (largest N,
# default 400), ONLY (regex on the configuration line), KINDS (default
# "write read"; KIND:ERRNO injects that errno; given, it replaces the long
# tier's extra kinds too), SEED (unused: the workload is fixed).
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

ONLY=${ONLY:-}
KINDS_SET=${KINDS:-}
KINDS=${KINDS:-write read}
CAP=${CAP:-400}
FIRST=${FIRST:-1}
J=1	# the member that takes the error

# level width chunk mount-options more-kinds (- none; KINDS: the others)
CONFIGS=("raid5 4 4K write_policy=writethrough -")
if long_tier; then
	STRIDE=${STRIDE:-1}
	CONFIGS=(
		"raid5 4 4K write_policy=writethrough write:ENOSPC,meta,fsync,truncate"
		"raid1 3 4K write_policy=writethrough -"
		"raid6 5 4K write_policy=writethrough -"
		"raid10 4 4K write_policy=writethrough -"
		"raid5 4 4K write_policy=writeback,bbu=shm -"
		"raid6 5 16K write_policy=writeback,bbu=shm -"
	)
else
	STRIDE=${STRIDE:-2}
fi

# member_field MNT J KEY: a member's field of status --json
member_field() {
	"$RAIDFS" status --json "$1" |
		"$PY" -c 'import json,sys; print(json.load(sys.stdin)["members"][int(sys.argv[1])][sys.argv[2]])' "$2" "$3"
}

# one_run N: one iteration; sets HIT (1: the fault was met)
one_run() {
	local n=$1 it log0 errors state corrected failed errno=
	case $kind in *:*) errno=${kind#*:} ;; esac
	it="$what, $kind error at op $n"
	rm -rf "$C"
	mkdir -p "$C"
	mem=$(make_members "$width" "c/d")
	members=$(join_members $mem)
	read -r -a M <<<"$mem"
	mnt=$C/mnt
	log0=$(stat -c %s "$T/daemon.log" 2>/dev/null || echo 0)
	expect_rc 0 "$RAIDFS" create --level "$level" --chunk "$chunk" --name io $mem
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$it: mount"
	expect_rc 0 "$RAIDFS" inject "$mnt" "$J" "${kind%%:*}-error" after $((n - 1)) $errno
	if ! "$PY" -S "$TOOLS/ioerr.py" run --mnt "$mnt" --ref "$C/ref" --state "$C/state.json" \
		--chunk "$cb" --stripe "$stripe" >"$C/run.out" 2>&1; then
		cat "$C/run.out" >&2
		fail "$it: wrong data during the workload"
	fi
	"$RAIDFS" status --json "$mnt" >"$C/st.json"	# exit 1: degraded
	read -r errors state corrected < <("$PY" -c 'import json,sys
m = json.load(open(sys.argv[1]))["members"][int(sys.argv[2])]
print(m["errors"], m["state"], m["corrected"])' "$C/st.json" "$J")
	failed=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["failed"])' "$C/state.json")
	# a full member is not broken: it stays in, and the caller gets ENOSPC
	if [ "$errno" = ENOSPC ] && [ "$state" = online ] && [ "$failed" -gt 0 ]; then
		:
	elif [ "$errors" -gt 0 ] && [ "$state" != faulty ] && [ "$corrected" -eq 0 ]; then
		fail "$it: member $J met $errors error(s) but is $state and nothing was corrected: $(cat "$C/st.json")"
	fi
	rfs_unmount_wait "$mnt" || fail "$it: unmount"
	HIT=0
	[ "$errors" -gt 0 ] && HIT=1
	# an error met during the unmount (a destage, the last metadata)
	tail -c +$((log0 + 1)) "$T/daemon.log" | grep -qE "error on member $J |member $J '[^']*' failed" && HIT=1

	rfs_mount "$members" "$mnt" -o "$opts" || fail "$it: mount after the run"
	"$PY" -S "$TOOLS/ioerr.py" verify --mnt "$mnt" --ref "$C/ref" --state "$C/state.json" >"$C/verify.out" 2>&1 ||
		{ cat "$C/verify.out" >&2; fail "$it: the tree after the remount is not what was acknowledged"; }
	state=$(member_field "$mnt" "$J" state)
	if [ "$state" != online ]; then
		[ "$HIT" = 1 ] || fail "$it: member $J is $state after a run that met no error"
		expect_rc 0 "$RAIDFS" add "$mnt" "${M[$J]}"
		wait_member "$mnt" "$J" online || fail "$it: member $J not back online: $("$RAIDFS" status "$mnt")"
		"$PY" -S "$TOOLS/ioerr.py" verify --mnt "$mnt" --ref "$C/ref" --state "$C/state.json" >"$C/verify.out" 2>&1 ||
			{ cat "$C/verify.out" >&2; fail "$it: the tree after member $J came back is not what was acknowledged"; }
	fi
	rfs_unmount_wait "$mnt" || fail "$it: unmount after the verification"
	if ! "$RAIDFS" check "$members" >"$C/check.out" 2>&1; then
		head -n 30 "$C/check.out" >&2
		fail "$it: raidfs check is not clean"
	fi
	FAILEDOPS=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["failed"])' "$C/state.json")
}

for cfg in "${CONFIGS[@]}"; do
	[ -z "$ONLY" ] || [[ $cfg =~ $ONLY ]] || continue
	read -r level width chunk opts more <<<"$cfg"
	C=$T/c
	cb=$(size_bytes "$chunk")
	stripe=$((cb * $(stripe_data_chunks "$level" "$width")))
	what="$level width $width chunk $chunk $opts"
	kinds=$KINDS
	[ "$more" = - ] || [ -n "$KINDS_SET" ] || kinds="$kinds ${more//,/ }"
	for kind in $kinds; do
		t0=$SECONDS
		runs=0 hits=0 errs=0 n=$FIRST
		while :; do
			[ "$n" -le "$CAP" ] || fail "$what: $kind errors: still met at op $n (cap $CAP): the loop does not end"
			one_run "$n"
			runs=$((runs + 1))
			[ "$FAILEDOPS" -eq 0 ] || errs=$((errs + 1))
			[ "$HIT" = 1 ] || break
			hits=$((hits + 1))
			n=$((n + STRIDE))
		done
		[ "$hits" -gt 0 ] || fail "$what: $kind errors: not even op $FIRST was met (the workload reads/writes nothing?)"
		log "ok: $what: $kind error at ops $FIRST..$((n - STRIDE)) step $STRIDE: $hits runs met it ($errs with an operation failing), op $n never came ($((SECONDS - t0))s)"
	done
done
log "all configurations passed in ${SECONDS}s"
exit 0
