#!/bin/bash
# t_degraded.sh - mounting with members missing, for every redundant level.
#
# For each configuration a healthy array gets a random workload mirrored on
# a reference directory and is unmounted; the member directories are then
# snapshotted (cp -a, with xattrs: like imaging the disks) so that every
# pattern starts from the same healthy state.  Then:
#   - for every set of members the level tolerates losing (all of them up to
#     8 members, a sample beyond), the member paths are renamed away (they
#     do not exist: missing disks), the array must mount, `status` must say
#     degraded (exit 1) and every file must be byte-identical to the
#     reference;
#   - for a few of those sets, more random workload runs while degraded
#     (against a copy of the reference), compare, unmount, mount again with
#     the same members missing, compare again; the array is thrown away
#     afterwards (the returning members are stale, and resyncing them is not
#     this test's business);
#   - minimal sets the level does NOT tolerate: mount must fail, nothing
#     may be mounted, and the output must name every missing member;
#   - `-o nodegraded`: refused with one member missing, accepted healthy.
#
# Quick tier: raid6 over 6 members only; long tier: every configuration.
#
# Environment: OPS (healthy workload ops, default 150), WOPS (degraded
# workload ops, default 80), ONLY (regex on the configuration line), SEED.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

OPS=${OPS:-150}
WOPS=${WOPS:-80}
ONLY=${ONLY:-}

# level width chunk groups sample(0 = all)
CONFIGS=(
	"raid1 3 4K 1 0"
	"raid5 4 4K 1 0"
	"raid5 8 64K 1 0"
	"raid6 6 4K 1 0"
	"raid10 6 64K 1 0"
	"raid50 6 4K 2 0"
	"raid60 8 4K 2 0"
	"raid6 10 64K 1 12"
)
long_tier || CONFIGS=("raid6 6 4K 1 0")	# quick tier: every pattern of raid6

# restore_members: put the healthy snapshot back in place of the members
restore_members() {
	local d
	for d in $mem; do rm -rf "$d" "$d.away"; done
	cp -a "$C/snap/." "$C/" || fail "cannot restore the members from the snapshot"
}

# pattern_paths "0 2" -> member paths of those indices
pattern_paths() {
	local i out=""
	for i in $1; do out="$out ${M[$i]}"; done
	echo $out
}

hide_pattern() { local p; for p in $(pattern_paths "$1"); do hide_member "$p"; done; }
unhide_pattern() { local p; for p in $(pattern_paths "$1"); do unhide_member "$p"; done; }

# mount_refused WHY [mount options...]: the mount must fail and leave nothing
# mounted; its output is in $C/refused.out
mount_refused() {
	local why=$1; shift
	mkdir -p "$mnt"
	MOUNTS+=("$mnt")
	"$RAIDFS" mount -o "log=$T/daemon.log" "$@" "$members" "$mnt" >"$C/refused.out" 2>&1
	local rc=$?
	if [ "$rc" -eq 0 ] || is_mounted "$mnt"; then
		is_mounted "$mnt" && { fusermount3 -u "$mnt" || fusermount3 -uz "$mnt"; }
		cat "$C/refused.out" >&2
		fail "$what: $why: mount succeeded (exit $rc), must be refused"
	fi
}

# problem MSG: a failure that does not stop the scenario; exit 1 at the end
PROBLEMS=0
problem() { log "FAIL: $*"; PROBLEMS=$((PROBLEMS + 1)); }

n=0
for cfg in "${CONFIGS[@]}"; do
	n=$((n + 1))
	[ -z "$ONLY" ] || [[ $cfg =~ $ONLY ]] || continue
	read -r level width chunk groups sample <<<"$cfg"
	t0=$SECONDS
	p0=$PROBLEMS
	C=$T/c$n
	mkdir -p "$C/ref"
	mem=$(make_members "$width" "c$n/d")
	read -r -a M <<<"$mem"
	members=$(join_members $mem)
	mnt=$C/mnt
	seed=$((SEED + n))
	cb=$(size_bytes "$chunk")
	stripe=$((cb * $(stripe_data_chunks "$level" "$width" "$groups")))
	maxsize=$((3 * stripe))
	[ "$maxsize" -le 1048576 ] || maxsize=1048576
	[ "$maxsize" -ge 262144 ] || maxsize=262144
	gopt=()
	case $level in raid50|raid60) gopt=(--groups "$groups") ;; esac
	what="$level width $width chunk $chunk"
	repro="SEED=$SEED ONLY='^$level $width $chunk ' KEEP=1 $0"
	wl=(--chunk "$cb" --stripe "$stripe" --max-size "$maxsize")

	# healthy array with a reference workload
	expect_rc 0 "$RAIDFS" create --level "$level" --chunk "$chunk" "${gopt[@]}" --name "g$n" $mem
	rfs_mount "$members" "$mnt" || fail "$what: healthy mount failed"
	workload run --mnt "$mnt" --ref "$C/ref" --seed "$seed" --ops "$OPS" "${wl[@]}" \
		--log "$C/ops.log" >"$C/workload.out" 2>&1 ||
		{ cat "$C/workload.out" >&2; log "reproduce: $repro"; fail "$what: healthy workload diverged"; }
	workload compare "$mnt" "$C/ref" >"$C/compare.out" 2>&1 ||
		{ cat "$C/compare.out" >&2; fail "$what: healthy array differs from the reference"; }
	rfs_unmount_wait "$mnt" || fail "$what: unmount"
	mkdir -p "$C/snap"
	for d in $mem; do cp -a "$d" "$C/snap/" || fail "cannot snapshot $d"; done

	# every tolerated pattern: mount degraded, compare every byte
	mapfile -t PATS < <(workload patterns --level "$level" --width "$width" --groups "$groups" \
		--max "$sample" --seed "$seed")
	[ "${#PATS[@]}" -gt 0 ] || fail "$what: no tolerated patterns?"
	for pat in "${PATS[@]}"; do
		pw="$what, members {$pat} missing"
		hide_pattern "$pat"
		rfs_mount "$members" "$mnt" ||
			{ log "reproduce: $repro"; fail "$pw: degraded mount failed"; }
		"$RAIDFS" status "$mnt" >"$C/status.out" 2>&1
		rc=$?
		[ "$rc" -eq 1 ] || { cat "$C/status.out" >&2; fail "$pw: status exit $rc, want 1 (degraded)"; }
		if ! workload compare "$mnt" "$C/ref" >"$C/compare.out" 2>&1; then
			cat "$C/compare.out" >&2
			log "reproduce: $repro"
			fail "$pw: degraded read differs from the reference"
		fi
		rfs_unmount_wait "$mnt" || fail "$pw: unmount"
		unhide_pattern "$pat"
		restore_members
	done

	# degraded writes on a few patterns: first, last (worst), one in between
	np=${#PATS[@]}
	WPATS=("${PATS[0]}")
	[ "$np" -gt 1 ] && WPATS+=("${PATS[$((np - 1))]}")
	[ "$np" -gt 2 ] && WPATS+=("${PATS[$(( (seed % (np - 2)) + 1 ))]}")
	k=0
	for pat in "${WPATS[@]}"; do
		k=$((k + 1))
		pw="$what, members {$pat} missing, degraded writes"
		rm -rf "$C/refw"
		cp -a "$C/ref" "$C/refw"
		hide_pattern "$pat"
		rfs_mount "$members" "$mnt" || fail "$pw: degraded mount failed"
		if ! workload run --mnt "$mnt" --ref "$C/refw" --seed "$((seed * 7 + k))" --ops "$WOPS" \
			"${wl[@]}" --name-prefix "w$k" --log "$C/wops.log" >"$C/workload.out" 2>&1; then
			cat "$C/workload.out" >&2
			log "reproduce: $repro"
			fail "$pw: workload diverged"
		fi
		workload compare "$mnt" "$C/refw" >"$C/compare.out" 2>&1 ||
			{ cat "$C/compare.out" >&2; log "reproduce: $repro"; fail "$pw: differs after degraded writes"; }
		rfs_unmount_wait "$mnt" || fail "$pw: unmount"
		rfs_mount "$members" "$mnt" || fail "$pw: degraded remount failed"
		workload compare "$mnt" "$C/refw" >"$C/compare.out" 2>&1 ||
			{ cat "$C/compare.out" >&2; log "reproduce: $repro"; fail "$pw: differs after degraded remount"; }
		rfs_unmount_wait "$mnt" || fail "$pw: unmount"
		unhide_pattern "$pat"
		restore_members     # the array with stale members is thrown away
	done

	# too many members missing: refused, and the message names them
	mapfile -t BAD < <(workload patterns --level "$level" --width "$width" --groups "$groups" \
		--intolerable --max 2 --seed "$seed")
	for pat in "${BAD[@]}"; do
		pw="$what, members {$pat} missing (not tolerated)"
		hide_pattern "$pat"
		mount_refused "too many members missing"
		for p in $(pattern_paths "$pat"); do
			grep -qF -- "$p" "$C/refused.out" || {
				sed 's/^/    /' "$C/refused.out" >&2
				# keep going: the other checks still tell something
				problem "$pw: the refusal does not name the missing member '$p'"
				break
			}
		done
		unhide_pattern "$pat"
		restore_members
	done

	# -o nodegraded: refused with one member missing, fine when healthy
	pat=${PATS[0]}
	hide_pattern "$pat"
	mount_refused "-o nodegraded with members {$pat} missing" -o nodegraded
	unhide_pattern "$pat"
	restore_members
	rfs_mount "$members" "$mnt" -o nodegraded || fail "$what: healthy mount with -o nodegraded failed"
	expect_rc 0 "$RAIDFS" status "$mnt"
	workload compare "$mnt" "$C/ref" >"$C/compare.out" 2>&1 ||
		{ cat "$C/compare.out" >&2; fail "$what: healthy array differs after the degraded tests"; }
	rfs_unmount_wait "$mnt" || fail "$what: unmount"

	verdict=ok
	[ "$PROBLEMS" -eq "$p0" ] || verdict="FAILED ($((PROBLEMS - p0)) problem(s))"
	log "$verdict: $what: ${#PATS[@]} degraded patterns read, ${#WPATS[@]} written, ${#BAD[@]} refused ($((SECONDS - t0))s)"
	rm -rf "$C"
done
[ "$PROBLEMS" -eq 0 ] || fail "$PROBLEMS problem(s) above (${SECONDS}s, SEED=$SEED)"
log "all configurations passed in ${SECONDS}s (SEED=$SEED)"
exit 0
