#!/bin/bash
# t_crash.sh - kill -9 the daemon during writes; the next mount must repair.
#
# raid5 (4 members), raid6 (5 members) and raid1 (3 members), 22 crash
# points in all.  Each iteration: mount, verify the files of every earlier
# iteration, start two `workload.py crashwrite` processes (each writes,
# overwrites, extends and truncates a few files with periodic
# fsync/fdatasync, journalling outside the mount), sleep a random
# 0.2-1.5 s, kill -9 the daemon; the writers get errors and stop; detach
# the dead mount (fusermount3 -uz); mount again (this is where the repair
# happens), unmount, and the offline `raidfs check` must be clean (with
# checksums, the default: and no member has a checksum error).  At the end every iteration's journal is
# verified: each fsynced byte not modified after its fsync must be intact.
#
# Environment: ITERS ("raid5 raid6 raid1" iteration counts, default
# "9 9 4"; quick tier "0 4 0"), WRITERS (concurrent writers, default 2), ONLY (regex on the
# configuration line), SEED.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

# quick tier: 4 crashes of raid6 only
read -r I5 I6 I1 <<<"${ITERS:-$(tier_pick "0 4 0" "9 9 4")}"
WRITERS=${WRITERS:-2}
ONLY=${ONLY:-}
RANDOM=$SEED	# kill delays reproduce with the seed

# level width chunk iterations
CONFIGS=(
	"raid5 4 4K $I5"
	"raid6 5 64K $I6"
	"raid1 3 4K $I1"
)

# verify_all N WHY: crashverify every journal of iterations 1..N
verify_all() {
	local k st w
	for k in $(seq 1 "$1"); do
		for st in "$C"/state."$k".*; do
			[ -f "$st" ] || continue
			w=${st##*.}
			if ! workload crashverify --mnt "$mnt/i$k-$w" --state "$st" >"$C/verify.out" 2>&1; then
				cat "$C/verify.out" >&2
				log "writer output: $(tail -n 2 "$C/cw.$k.$w.out" | tr '\n' ' ')"
				log "reproduce: $repro"
				fail "$what: iteration $k, writer $w: fsynced data lost or wrong ($2)"
			fi
		done
	done
}

n=0
total=0
for cfg in "${CONFIGS[@]}"; do
	n=$((n + 1))
	[ -z "$ONLY" ] || [[ $cfg =~ $ONLY ]] || continue
	read -r level width chunk iters <<<"$cfg"
	[ "$iters" -gt 0 ] || continue
	t0=$SECONDS
	C=$T/c$n
	mkdir -p "$C"
	mem=$(make_members "$width" "c$n/d")
	members=$(join_members $mem)
	mnt=$C/mnt
	cb=$(size_bytes "$chunk")
	wmax=$((8 * cb)); [ "$wmax" -ge 262144 ] || wmax=262144
	wmax=$((wmax + 12345))	# files end mid-chunk too
	what="$level width $width chunk $chunk"
	repro="SEED=$SEED ONLY='^$level ' KEEP=1 $0"
	expect_rc 0 "$RAIDFS" create --level "$level" --chunk "$chunk" --name "k$n" $mem

	for it in $(seq 1 "$iters"); do
		rfs_mount "$members" "$mnt" || fail "$what: iteration $it: mount failed"
		verify_all $((it - 1)) "after the repair of crash $((it - 1))"

		wpids=()
		for w in $(seq 1 "$WRITERS"); do
			workload crashwrite --mnt "$mnt/i$it-$w" --state "$C/state.$it.$w" \
				--seed $((SEED + 1000 * n + 10 * it + w)) --chunk "$cb" --max-size "$wmax" \
				>"$C/cw.$it.$w.out" 2>&1 &
			wpids+=($!)
		done
		# start the clock once the writers are under way (their files
		# exist and were fsynced once), so that the kill lands mid-workload
		for _ in $(seq 200); do
			grep -qs '"t":"w"' "$C/state.$it.$WRITERS" && break
			kill -0 "${wpids[-1]}" 2>/dev/null || break
			sleep 0.05
		done
		ms=$((200 + RANDOM % 1300))
		sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
		pid=$(daemon_pid "$mnt")
		[ -n "$pid" ] || fail "$what: iteration $it: cannot find the daemon of $mnt"
		kill -9 "$pid"
		wait_pid_gone "$pid" 10 || fail "$what: daemon $pid survived kill -9"
		# the writers must notice (ENOTCONN) and stop by themselves
		w=0
		for wpid in "${wpids[@]}"; do
			w=$((w + 1))
			if ! wait_pid_gone "$wpid" 20; then
				kill -9 "$wpid" 2>/dev/null
				fail "$what: iteration $it: writer $w still running 20 s after the daemon died"
			fi
			wait "$wpid"
			wrc=$?
			[ "$wrc" -eq 3 ] || {
				cat "$C/cw.$it.$w.out" >&2
				fail "$what: iteration $it: writer $w exit $wrc (want 3: stopped by an I/O error)"
			}
			grep -q '"t":"s"' "$C/state.$it.$w" ||
				log "$what: iteration $it: note: killed before writer $w's first fsync"
		done
		fusermount3 -uz "$mnt" 2>/dev/null
		is_mounted "$mnt" && fail "$what: dead mount $mnt still attached"

		# informational: what the offline check says before any repair
		"$RAIDFS" check "$members" >"$C/check-before.$it.out" 2>&1
		before=$?

		rfs_mount "$members" "$mnt" || fail "$what: iteration $it: mount after the crash failed"
		rfs_unmount_wait "$mnt" || fail "$what: iteration $it: unmount after the repair"
		"$RAIDFS" check "$members" >"$C/check.out" 2>&1
		rc=$?
		if [ "$rc" -ne 0 ]; then
			head -n 30 "$C/check.out" >&2
			log "reproduce: $repro"
			fail "$what: iteration $it (killed after ${ms} ms): raidfs check exit $rc after the repair mount (want 0)"
		fi
		log "$what: crash $it after ${ms} ms: writer 1 $(tail -n 1 "$C/cw.$it.1.out" | sed 's/^crashwrite: //;s/ (E[A-Z]*)$//'); check before repair $before, after 0"
		total=$((total + 1))
	done
	rfs_mount "$members" "$mnt" || fail "$what: final mount failed"
	verify_all "$iters" "final verification"
	# a write cut by the crash is no member's checksum error (with
	# checksums: what the recovery rolled back is not counted)
	"$RAIDFS" status --json "$mnt" >"$C/st.json"
	cks=$("$PY" -c 'import json,sys; print(sum(m.get("cksum_errors", 0) for m in json.load(open(sys.argv[1]))["members"]))' "$C/st.json")
	[ "$cks" = 0 ] || fail "$what: $cks checksum errors counted on the members after the crashes"
	! grep -a "checksum error on member" "$T/daemon.log" || fail "$what: checksum errors said after the crashes"
	rfs_unmount_wait "$mnt" || fail "$what: final unmount"
	log "ok: $what: $iters crashes ($((SECONDS - t0))s)"
	rm -rf "$C"
done
log "all configurations passed: $total crashes in ${SECONDS}s (SEED=$SEED)"
exit 0
