#!/bin/bash
# t_levels.sh - every RAID level at two widths, mixed chunk sizes.
#
# For each configuration: create the array, mount it, run a random workload
# (writes at random offsets and sizes biased to chunk/stripe boundaries,
# overwrites, appends, truncates, renames, unlinks, ...) mirrored on a plain
# reference directory, compare every byte, check `status` says optimal,
# unmount, mount again, compare again, unmount, and `raidfs check` must be
# clean; then, on redundant levels, one flipped shard byte must make
# `raidfs check` report an inconsistency (so that "clean" means something).
# One configuration also writes a sparse file beyond 4 GiB.
#
# Tiers: quick - raid6 over 8 members; long - every configuration.
#
# Environment: OPS (workload operations per configuration, default 500),
# ONLY (run only configurations whose line matches this regex), SEED.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

# the comparison tools must catch what they exist to catch
workload selftest >"$T/selftest.out" 2>&1 ||
	{ cat "$T/selftest.out" >&2; fail "tests/tools/workload.py selftest failed"; }

OPS=${OPS:-500}
ONLY=${ONLY:-}

# level width chunk groups flags
CONFIGS=(
	"single 1 4K 1 -"
	"single 1 64K 1 -"
	"raid0 4 4K 1 -"
	"raid0 8 64K 1 -"
	"raid1 4 64K 1 -"
	"raid1 8 4K 1 -"
	"raid5 4 4K 1 -"
	"raid5 8 64K 1 big"
	"raid6 4 64K 1 -"
	"raid6 8 4K 1 -"
	"raid10 4 4K 1 -"
	"raid10 8 64K 1 -"
	"raid50 6 64K 2 -"
	"raid50 8 4K 2 -"
	"raid60 8 4K 2 -"
	"raid60 10 64K 2 -"
)
# quick tier: raid6 over 8 members (the file beyond 4 GiB, a minute
# of checking its holes, is left to the long tier)
long_tier || CONFIGS=("raid6 8 4K 1 -")

n=0
for cfg in "${CONFIGS[@]}"; do
	n=$((n + 1))
	[ -z "$ONLY" ] || [[ $cfg =~ $ONLY ]] || continue
	read -r level width chunk groups flags <<<"$cfg"
	t0=$SECONDS
	C=$T/c$n
	mkdir -p "$C/ref"
	mem=$(make_members "$width" "c$n/d")
	members=$(join_members $mem)
	mnt=$C/mnt
	seed=$((SEED + n))
	cb=$(size_bytes "$chunk")
	stripe=$((cb * $(stripe_data_chunks "$level" "$width" "$groups")))
	maxsize=$((4 * stripe))
	[ "$maxsize" -le $((2 * 1048576)) ] || maxsize=$((2 * 1048576))
	[ "$maxsize" -ge $((8 * cb)) ] || maxsize=$((8 * cb))
	[ "$maxsize" -ge 262144 ] || maxsize=262144
	gopt=()
	case $level in raid50|raid60) gopt=(--groups "$groups") ;; esac
	big=()
	[ "$flags" = big ] && big=(--big)
	what="$level width $width chunk $chunk${gopt:+ groups $groups}"
	repro="SEED=$SEED ONLY='^$level $width $chunk ' KEEP=1 $0"

	expect_rc 0 "$RAIDFS" create --level "$level" --chunk "$chunk" "${gopt[@]}" \
		--name "t$n" $mem
	rfs_mount "$members" "$mnt" || fail "$what: mount failed"
	if ! workload run --mnt "$mnt" --ref "$C/ref" --seed "$seed" --ops "$OPS" \
		--chunk "$cb" --stripe "$stripe" --max-size "$maxsize" "${big[@]}" \
		--log "$C/ops.log" >"$C/workload.out" 2>&1; then
		cat "$C/workload.out" >&2
		log "operations log: $C/ops.log (last: $(tail -n 1 "$C/ops.log"))"
		log "reproduce: $repro"
		fail "$what: workload diverged"
	fi
	workload compare "$mnt" "$C/ref" >"$C/compare.out" 2>&1 ||
		{ cat "$C/compare.out" >&2; log "reproduce: $repro"; fail "$what: trees differ after the workload"; }
	expect_rc 0 "$RAIDFS" status "$mnt"
	rfs_unmount_wait "$mnt" || fail "$what: unmount"

	rfs_mount "$members" "$mnt" || fail "$what: second mount failed"
	workload compare "$mnt" "$C/ref" >"$C/compare.out" 2>&1 ||
		{ cat "$C/compare.out" >&2; log "reproduce: $repro"; fail "$what: trees differ after remount"; }
	rfs_unmount_wait "$mnt" || fail "$what: unmount"

	"$RAIDFS" check "$members" >"$C/check.out" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ]; then
		head -n 30 "$C/check.out" >&2
		log "reproduce: $repro"
		fail "$what: raidfs check exit $rc (want 0)"
	fi
	# negative control: one flipped shard byte must make check fail
	# (only where redundancy lets check see it)
	case $level in
	single|raid0) ;;
	*)
		shard=$(find "${mem%% *}" -path '*/.raidfs' -prune -o -type f -size +0 -printf '%s %p\n' |
			sort -n | tail -n 1 | cut -d' ' -f2-)
		if [ -n "$shard" ]; then
			"$PY" -c 'import os,sys; fd=os.open(sys.argv[1],os.O_RDWR); o=os.fstat(fd).st_size//2; b=os.pread(fd,1,o); os.pwrite(fd,bytes([b[0]^0x40]),o)' "$shard"
			"$RAIDFS" check "$members" >"$C/check.out" 2>&1
			rc=$?
			[ "$rc" -eq 1 ] || { cat "$C/check.out" >&2; fail "$what: raidfs check exit $rc after a shard byte of '$shard' was flipped (want 1)"; }
		fi
		;;
	esac
	log "ok: $what ($(head -n 1 "$C/workload.out" | sed 's/^workload: //'); $((SECONDS - t0))s)"
	rm -rf "$C"
done
log "all configurations passed in ${SECONDS}s (SEED=$SEED)"
exit 0
