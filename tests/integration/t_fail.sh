#!/bin/bash
# t_fail - members fail while a workload runs: for every redundant level,
# fail members up to the tolerance in each of three ways ('raidfs fail',
# deleting the member directory, injected write EIO); the workload must
# finish without an error and the tree must be byte-identical to the
# reference; status must say degraded and name the failed members.  Last,
# the primary's .raidfs deleted alone (the start of an rm -rf of the member
# directory): the next create must not fail.
#
# Tiers: quick - raid6 only (in all three ways); long - every level.
. "$(dirname "$0")/lib.sh"
need_fuse

OPS=${OPS:-500}
# level width groups "members to fail"
CONFIGS=(
	"raid1 3 1 0 2"
	"raid5 4 1 2"
	"raid6 5 1 0 3"
	"raid10 4 2 1 2"
	"raid50 6 2 0 4"
	"raid60 8 2 1 2 4 7"
)
long_tier || CONFIGS=("raid6 5 1 0 3")	# quick tier: raid6, all three ways
METHODS=(fail rmdir eio)

n=0
for cfg in "${CONFIGS[@]}"; do
	read -r level width groups victims <<<"$cfg"
	for method in "${METHODS[@]}"; do
		n=$((n + 1))
		t0=$SECONDS
		C=$T/c$n
		mkdir -p "$C/ref"
		mem=$(make_members "$width" "c$n/d")
		members=$(join_members $mem)
		mnt=$C/mnt
		gopt=()
		case $level in raid50|raid60) gopt=(--groups "$groups") ;; esac
		what="$level width $width, fail {$victims} by $method"
		expect_rc 0 "$RAIDFS" create --level "$level" --chunk 4K "${gopt[@]}" --name "f$n" $mem
		rfs_mount "$members" "$mnt" || fail "$what: mount"
		workload run --mnt "$mnt" --ref "$C/ref" --seed $((SEED + n)) --ops "$OPS" \
			--chunk 4096 --max-size 200000 --log "$C/ops.log" >"$C/workload.out" 2>&1 &
		wpid=$!
		sleep 0.3
		for v in $victims; do
			dir=$T/c$n/d$((v + 1))
			case $method in
			fail) "$RAIDFS" fail "$mnt" "$v" >/dev/null || fail "$what: raidfs fail $v" ;;
			rmdir) rm -rf "$dir" 2>/dev/null ;;  # races with the daemon until it notices
			eio) "$RAIDFS" inject "$mnt" "$dir" write-error EIO >/dev/null || fail "$what: inject" ;;
			esac
			# wait until the array has noticed (the monitor runs every second;
			# an injected write error needs a write to reach the member)
			for i in $(seq 1 100); do
				"$RAIDFS" status --json "$mnt" | grep -q "\"index\": $v, [^}]*\"state\": \"faulty\"" && break
				kill -0 $wpid 2>/dev/null || { [ "$method" = eio ] && head -c 100000 /dev/zero > "$mnt/poke-$v-$i" && rm -f "$mnt/poke-$v-$i"; }  # data, so a write reaches every member
				sleep 0.1
			done
			"$RAIDFS" status --json "$mnt" | grep -q "\"index\": $v, [^}]*\"state\": \"faulty\"" ||
				fail "$what: member $v not faulty after $method ($("$RAIDFS" status "$mnt"))"
		done
		if ! wait $wpid; then
			cat "$C/workload.out" >&2
			fail "$what: the workload saw an error (reproduce: SEED=$SEED KEEP=1 $0)"
		fi
		workload compare "$mnt" "$C/ref" >"$C/compare.out" 2>&1 ||
			{ cat "$C/compare.out" >&2; fail "$what: tree differs from the reference"; }
		expect_rc 1 "$RAIDFS" status "$mnt"
		grep -q "state:   degraded" "$OUT" || fail "$what: status does not say degraded: $(cat "$OUT")"
		grep -q "^action:" "$OUT" || fail "$what: status has no action line"
		rfs_unmount_wait "$mnt" || fail "$what: unmount"
		# the failure is recorded: a remount (with every path given) is
		# degraded, the failed members are not used, the data is intact
		[ "$method" = rmdir ] || {
			rfs_mount "$members" "$mnt" || fail "$what: remount"
			expect_rc 1 "$RAIDFS" status "$mnt"
			workload compare "$mnt" "$C/ref" >"$C/compare.out" 2>&1 ||
				{ cat "$C/compare.out" >&2; fail "$what: tree differs after remount"; }
			rfs_unmount_wait "$mnt" || fail "$what: unmount"
		}
		log "ok: $what ($((SECONDS - t0))s)"
		rm -rf "$C"
	done
done
# make_array NAME LEVEL N [CHUNK [MOUNT ARGS...]]: LEVEL over N members
# in $T/NAME (CHUNK "" for the default), with an empty $C/ref (sets C,
# mem, members, mnt), mounted with MOUNT ARGS
make_array() {
	local name=$1 level=$2 n=$3 chunk=${4:-} copt=()
	shift $(( $# > 3 ? 4 : 3 ))
	[ -z "$chunk" ] || copt=(--chunk "$chunk")
	C=$T/$name
	mkdir -p "$C/ref"
	mem=$(make_members "$n" "$name/d")
	members=$(join_members $mem)
	mnt=$C/mnt
	expect_rc 0 "$RAIDFS" create --level "$level" "${copt[@]}" --name "$name" $mem
	rfs_mount "$members" "$mnt" "$@" || fail "$name: mount"
}

# an rm -rf of the primary's directory that takes its .raidfs first: the
# user's directories are still there, but a create (which links the new
# file into .raidfs/dirty) found nothing to link into and returned ENOENT
# for the second or so until the monitor noticed (a workload above saw it
# once in CI); the member must be failed at once and the operation done
# on the next primary
make_array meta raid1 3
mkdir "$C/ref/d"
mkdir "$mnt/d"
echo old >"$mnt/d/f0"; echo old >"$C/ref/d/f0"
rm -rf "$C/d1/.raidfs"
echo new >"$mnt/d/f1" || fail "meta: a create right after the primary's .raidfs was deleted failed"
echo new >"$C/ref/d/f1"
mkdir "$mnt/d/sub" || fail "meta: mkdir after the primary's .raidfs was deleted"
mkdir "$C/ref/d/sub"
expect_rc 1 "$RAIDFS" status "$mnt"
grep -q "failed: its superblock disappeared" "$OUT" || fail "meta: member 0 not failed for its lost .raidfs: $(cat "$OUT")"
workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 || { cat "$C/cmp.out" >&2; fail "meta: tree differs"; }
rfs_unmount_wait "$mnt" || fail "meta: unmount"
log "ok: raid1 width 3, the primary's .raidfs deleted under the mount: failed at the next create, which succeeded"
# a shard that cannot be cut (injected truncate error on member 1): the
# member is failed (its shard would keep bytes past the new end, read
# again if the file grew), the truncate succeeds, and the file reads as
# truncated - also grown again, and once member 1 is rebuilt with
# another member gone
make_array cut raid5 4 4K
head -c 100000 /dev/urandom >"$C/ref/g"
cp "$C/ref/g" "$mnt/g" || fail "cut: write failed"
expect_rc 0 "$RAIDFS" inject "$mnt" 1 truncate-error
truncate -s 3000 "$mnt/g" || fail "cut: the truncate failed although one member's error is within the tolerance"
truncate -s 3000 "$C/ref/g"
expect_rc 1 "$RAIDFS" status "$mnt"
grep -A1 "^   1  faulty" "$OUT" | grep -q "failed: .*Input/output error" ||
	fail "cut: member 1 is not failed for its shard that could not be cut: $(cat "$OUT")"
grep -q "cannot truncate shard on member 1" "$T/daemon.log" || fail "cut: no message about the shard"
cmp -s "$C/ref/g" "$mnt/g" || fail "cut: g is not as truncated"
truncate -s 100000 "$mnt/g" "$C/ref/g"
cmp -s "$C/ref/g" "$mnt/g" || fail "cut: g grown again does not read zeros past 3000"
expect_rc 0 "$RAIDFS" inject "$mnt" 1 clear
mkdir -p "$C/new1"
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new1"
wait_member "$mnt" 1 online "$C/new1" || fail "cut: the rebuild of member 1 did not end: $("$RAIDFS" status "$mnt")"
expect_rc 0 "$RAIDFS" fail "$mnt" 2
cmp -s "$C/ref/g" "$mnt/g" || fail "cut: g differs after the rebuild of member 1, with member 2 failed"
rfs_unmount_wait "$mnt" || fail "cut: unmount"
log "ok: raid5, a shard that could not be cut failed its member; the file reads as truncated, also rebuilt"

# a metadata record that one member does not take (injected meta error
# on member 1, raid1 over two): the member is failed (its older record
# would win once member 0 is gone: the file would read as its old size),
# the shrink succeeds, the file is noted as missed, and when member 1 is
# put back its re-add resyncs that file, so it alone holds it right
make_array rec raid1 2
head -c 100000 /dev/urandom >"$C/ref/g"
head -c 30000 /dev/urandom >"$C/ref/h"
cp "$C/ref/g" "$C/ref/h" "$mnt/" || fail "rec: write failed"
sync "$mnt/g" "$mnt/h"
# (g held open and written: in the dirty log, so the record is the
# first metadata the shrink writes)
exec 9<"$mnt/g"
dd if="$C/ref/h" of="$C/ref/g" bs=1000 count=1 conv=notrunc 2>/dev/null
dd if="$C/ref/h" of="$mnt/g" bs=1000 count=1 conv=notrunc 2>/dev/null || fail "rec: write failed"
expect_rc 0 "$RAIDFS" inject "$mnt" 1 meta-error count 1
truncate -s 3000 "$mnt/g" || fail "rec: the truncate failed although one member's error is within the tolerance"
truncate -s 3000 "$C/ref/g"
exec 9<&-
expect_rc 1 "$RAIDFS" status "$mnt"
grep -A1 "^   1  faulty" "$OUT" | grep -q "failed: refused the metadata record of file [0-9a-f]* (Input/output error)" ||
	fail "rec: member 1 is not failed for the record it did not take: $(cat "$OUT")"
grep -q "member 1 .* refused the metadata record of file .*the member is failed" "$T/daemon.log" ||
	fail "rec: no message about the record"
cmp -s "$C/ref/g" "$mnt/g" || fail "rec: g is not as truncated"
expect_rc 0 "$RAIDFS" add "$mnt" "$C/d2"
wait_member "$mnt" 1 online || fail "rec: member 1 did not come back: $("$RAIDFS" status "$mnt")"
grep -q "re-add of member 1: 1 file recorded as changed while it was away" "$T/daemon.log" ||
	fail "rec: the re-add did not resync exactly g: $(grep "re-add" "$T/daemon.log")"
expect_rc 0 "$RAIDFS" fail "$mnt" 0
cmp -s "$C/ref/g" "$mnt/g" || fail "rec: g differs on member 1 alone ($(stat -c %s "$mnt/g") bytes)"
cmp -s "$C/ref/h" "$mnt/h" || fail "rec: h differs on member 1 alone"
rfs_unmount_wait "$mnt" || fail "rec: unmount"
log "ok: raid1, a metadata record one member did not take failed it; re-added, it alone holds the file right"

# a record refused with ENXIO (the disk gone, not broken: a cable): the
# member is failed as gone, and taken back by itself once it answers
# again (a member failed as broken waits for 'raidfs add'); its re-add
# resyncs the file, which then reads right without member 0
make_array gone raid5 4 16K
head -c 100000 /dev/urandom >"$C/ref/g"
cp "$C/ref/g" "$mnt/g" || fail "gone: write failed"
sync "$mnt/g"
exec 9<"$mnt/g"
dd if=/dev/urandom of="$C/ref/g" bs=1000 count=1 conv=notrunc 2>/dev/null
dd if="$C/ref/g" of="$mnt/g" bs=1000 count=1 conv=notrunc 2>/dev/null || fail "gone: write failed"
expect_rc 0 "$RAIDFS" inject "$mnt" 1 meta-error count 1 ENXIO
truncate -s 3000 "$mnt/g" || fail "gone: the truncate failed"
truncate -s 3000 "$C/ref/g"
exec 9<&-
grep -q "member 1 .* refused the metadata record of file .*: No such device or address while the others took it" "$T/daemon.log" ||
	fail "gone: member 1 was not failed for the record: $(tail -n 3 "$T/daemon.log")"
wait_member "$mnt" 1 online || fail "gone: member 1 was not taken back by itself: $("$RAIDFS" status "$mnt")"
expect_rc 0 "$RAIDFS" fail "$mnt" 0
cmp -s "$C/ref/g" "$mnt/g" || fail "gone: g differs without member 0 ($(stat -c %s "$mnt/g") bytes)"
rfs_unmount_wait "$mnt" || fail "gone: unmount"
log "ok: raid5, a record refused with ENXIO failed member 1 as gone; it was taken back by itself and holds the file right"

# a shard that cannot be opened for writing (an injected EROFS on member
# 1's next open; a member filesystem remounted read-only after an error
# gives the same): the member is failed - opened without that shard, the
# file's writes would skip member 1, and once it worked again its old
# bytes would read as the file's.  Put back, its re-add resyncs the file,
# and with member 0 failed the file still reads right.  Then a member
# filesystem remounted read-only with no I/O at all: the monitor fails
# the member within a few seconds.
C=$T/ro
mkdir -p "$C/d3"
mount -t tmpfs -o size=64M tmpfs "$C/d3" || fail "ro: tmpfs for member 2"
MOUNTS+=("$C/d3")	# (unmounted lazily by the cleanup, also when busy)
make_array ro raid5 4 16K
head -c 300000 /dev/urandom >"$C/ref/g"
cp "$C/ref/g" "$mnt/g" || fail "ro: write failed"
expect_rc 0 "$RAIDFS" inject "$mnt" 1 open-error count 1 EROFS
head -c 100000 /dev/urandom >"$C/new"
dd if="$C/new" of="$C/ref/g" bs=100000 seek=1 conv=notrunc 2>/dev/null
dd if="$C/new" of="$mnt/g" bs=100000 seek=1 conv=notrunc 2>/dev/null || fail "ro: the overwrite failed"
expect_rc 1 "$RAIDFS" status "$mnt"
grep -A1 "^   1  faulty" "$OUT" | grep -q "failed: refused to open a shard for writing ('g') (Read-only file system)" ||
	fail "ro: member 1 is not failed for the shard it could not open: $(cat "$OUT")"
cmp -s "$C/ref/g" "$mnt/g" || fail "ro: g differs"
expect_rc 0 "$RAIDFS" add "$mnt" "$C/d2"
wait_member "$mnt" 1 online || fail "ro: member 1 did not come back: $("$RAIDFS" status "$mnt")"
expect_rc 0 "$RAIDFS" fail "$mnt" 0
cmp -s "$C/ref/g" "$mnt/g" || fail "ro: g differs with member 0 failed after member 1's re-add"
expect_rc 0 "$RAIDFS" add "$mnt" "$C/d1"
wait_member "$mnt" 0 online || fail "ro: member 0 did not come back: $("$RAIDFS" status "$mnt")"
mount -o remount,ro "$C/d3" || fail "ro: remount of member 2's filesystem"
for i in $(seq 1 50); do
	"$RAIDFS" status --json "$mnt" | grep -q '"index": 2, [^}]*"state": "faulty"' && break
	sleep 0.1
done
expect_rc 1 "$RAIDFS" status "$mnt"
grep -A1 "^   2  faulty" "$OUT" | grep -q "failed: its filesystem is mounted read-only" ||
	fail "ro: member 2 is not failed for its read-only filesystem: $(cat "$OUT")"
cmp -s "$C/ref/g" "$mnt/g" || fail "ro: g differs with member 2's filesystem read-only"
mount -o remount,rw "$C/d3"
rfs_unmount_wait "$mnt" || fail "ro: unmount"
umount "$C/d3" || fail "ro: unmount of member 2's tmpfs"
log "ok: raid5, a shard that could not be opened for writing failed its member (re-added, it holds the file right); a member filesystem gone read-only was failed by the monitor"

# the dirty-log mark of a file's first write (injected on member 2):
# refused with ENOSPC (a full member), the write fails with ENOSPC and
# the marks made on the other members go again (the binary before left
# them: after a clean unmount, 'raidfs check' found the file in the dirty
# log); refused with EIO, member 2 is failed and the write goes on: its
# re-add resyncs the file, and with member 0 failed it still reads right
make_array mark raid5 4 16K
head -c 200000 /dev/urandom >"$C/ref/g"
cp "$C/ref/g" "$mnt/g" || fail "mark: write failed"
rfs_unmount_wait "$mnt" || fail "mark: unmount"
rfs_mount "$members" "$mnt" || fail "mark: mount"
expect_rc 0 "$RAIDFS" inject "$mnt" 2 meta-error count 1 ENOSPC
dd if=/dev/urandom of="$mnt/g" bs=4096 count=1 conv=notrunc 2>"$C/dd.err" && fail "mark: the write went on without its mark"
grep -q "No space left" "$C/dd.err" || fail "mark: the write failed with another error: $(cat "$C/dd.err")"
cmp -s "$C/ref/g" "$mnt/g" || fail "mark: g changed although its write failed"
rfs_unmount_wait "$mnt" || fail "mark: unmount"
expect_rc 0 "$RAIDFS" check "$members"
rfs_mount "$members" "$mnt" || fail "mark: mount"
expect_rc 0 "$RAIDFS" inject "$mnt" 2 meta-error count 1
head -c 4096 /dev/urandom >"$C/new"
dd if="$C/new" of="$C/ref/g" conv=notrunc 2>/dev/null
dd if="$C/new" of="$mnt/g" conv=notrunc 2>/dev/null || fail "mark: the write failed although member 2's error is within the tolerance"
expect_rc 1 "$RAIDFS" status "$mnt"
grep -A1 "^   2  faulty" "$OUT" | grep -q "failed: refused the dirty-log mark of file [0-9a-f]* (Input/output error)" ||
	fail "mark: member 2 is not failed for the mark it refused: $(cat "$OUT")"
expect_rc 0 "$RAIDFS" add "$mnt" "$C/d3"
wait_member "$mnt" 2 online || fail "mark: member 2 did not come back: $("$RAIDFS" status "$mnt")"
expect_rc 0 "$RAIDFS" fail "$mnt" 0
cmp -s "$C/ref/g" "$mnt/g" || fail "mark: g differs with member 0 failed after member 2's re-add"
rfs_unmount_wait "$mnt" || fail "mark: unmount"
log "ok: raid5, a dirty-log mark refused: ENOSPC left no mark behind; EIO failed the member, which re-added holds the file right"

# a record refused at a file's last close (written there under the
# open-file table's lock, which failing a member takes too: the daemon
# hung), and by a member being re-added (it must be failed - its re-add
# stops - or it would finish with the old record): each fails its member,
# and every byte reads right from the member left
make_array close raid1 2 "" -o rebuild_max_rate=1,rebuild_min_rate=1
head -c 100000 /dev/urandom >"$C/ref/g"
cp "$C/ref/g" "$mnt/g" || fail "close: write failed"
exec 9<"$mnt/g"	# (the append's mark stays until the last close)
head -c 5000 /dev/urandom >>"$C/ref/g"
tail -c 5000 "$C/ref/g" >>"$mnt/g" || fail "close: append failed"
expect_rc 0 "$RAIDFS" inject "$mnt" 1 meta-error count 1
exec 9<&-
timeout -s KILL 10 stat "$mnt/g" >/dev/null || fail "close: the daemon hangs after a record refused at a close"
expect_rc 1 "$RAIDFS" status "$mnt"
grep -A1 "^   1  faulty" "$OUT" | grep -q "failed: refused the metadata record of file" ||
	fail "close: member 1 is not failed for the record it refused at the close: $(cat "$OUT")"
cmp -s "$C/ref/g" "$mnt/g" || fail "close: g differs"
# (the file's dirty-log marks go once the failure noted it: a clean
# unmount leaves nothing to resync, and the degraded array mounts)
rfs_unmount_wait "$mnt" || fail "close: unmount"
rfs_mount "$members" "$mnt" -o rebuild_max_rate=1,rebuild_min_rate=1 ||
	fail "close: the degraded array does not mount after a clean unmount: $(tail -n 3 "$T/daemon.log")"
cmp -s "$C/ref/g" "$mnt/g" || fail "close: g differs after the remount"
for i in 1 2 3 4 5 6; do head -c 2000000 /dev/urandom >"$mnt/x$i"; done
expect_rc 0 "$RAIDFS" add "$mnt" "$C/d2"
expect_rc 0 "$RAIDFS" rebuild "$mnt" pause
exec 9<"$mnt/g"	# (marked by a write first: the record is what member 1 refuses)
head -c 1000 /dev/urandom >>"$C/ref/g"
tail -c 1000 "$C/ref/g" >>"$mnt/g" || fail "close: append failed"
expect_rc 0 "$RAIDFS" inject "$mnt" 1 meta-error every
head -c 50000 /dev/urandom >>"$C/ref/g"
tail -c 50000 "$C/ref/g" >>"$mnt/g" || fail "close: the append failed with member 1 being re-added"
sync "$mnt/g" || fail "close: fsync failed"
exec 9<&-
expect_rc 0 "$RAIDFS" inject "$mnt" 1 clear
expect_rc 1 "$RAIDFS" status "$mnt"
grep -A1 "^   1  faulty" "$OUT" | grep -q "failed: refused the metadata record of file" ||
	fail "close: member 1 being re-added is not failed for the record it refused: $(cat "$OUT")"
cmp -s "$C/ref/g" "$mnt/g" || fail "close: g differs after the append"
rfs_unmount_wait "$mnt" || fail "close: unmount"
log "ok: raid1, a record refused at a close and by a member being re-added failed the member; no hang, every byte right"

log "all passed in ${SECONDS}s"
exit 0
