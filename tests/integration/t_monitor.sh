#!/bin/bash
# t_monitor - 'raidfs monitor' (alert.c), the monitor of every mounted
# array, with an event program that appends its arguments to a file:
#   - --test tells one TestMessage per array (to the program and as a
#     line), and exits 1 when no array is mounted;
#   - --oneshot on healthy arrays tells nothing and exits 0;
#   - the foreground monitor (short --interval), for a fail -> replace ->
#     rebuild on raid5: Fail, DegradedArray, NoRedundancy (raid5 with one
#     member gone), RebuildStarted, RebuildFinished, each once, in the
#     daemon's order; read errors injected on a member: ErrorsRising for
#     that member; a raid6 with two members failed: NoRedundancy; its
#     battery failed: BbuFailed once, BbuRestored when restored; an array
#     mounted while it runs is picked up, one unmounted is dropped (said
#     once), mounted again is watched again (a raid1 with a member failed
#     then: Fail, DegradedArray, NoRedundancy); SIGTERM stops it (exit 0);
#   - a new monitor (--oneshot) tells no old event again, only the
#     problems present (DegradedArray, NoRedundancy of the raid6), exit 1;
#   - members of a raid1 on 8 MiB tmpfs filled past 90%: NearlyFull for
#     each (--oneshot, exit 1; skipped where a tmpfs cannot be mounted);
#   - a daemon that does not answer (SIGSTOP) is said so after --timeout
#     and is a problem to --oneshot (exit 1), not a hung monitor.
# The monitor is given the mount points, so arrays of other tests on the
# machine are not looked at.  Tiers: one configuration (quick and long).
. "$(dirname "$0")/lib.sh"
need_fuse

MONPID= STOPPED=
# stop the monitor (and let a stopped daemon go on) also when the test
# fails; lib.sh's cleanup unmounts
trap 'rc=$?; [ -n "$MONPID" ] && kill -9 "$MONPID" 2>/dev/null; [ -n "$STOPPED" ] && kill -CONT "$STOPPED"
	(exit $rc); cleanup' EXIT

EV=$T/events.log
cat > "$T/ev.sh" <<EOF
#!/bin/sh
echo "\$1|\$2|\$3|\$RAIDFS_ARRAY|\$RAIDFS_EVENT_DETAIL" >> "$EV"
EOF
chmod +x "$T/ev.sh"

# events MNT: the events told for MNT, one name a line, in order
events() { awk -F'|' -v m="$1" '$2 == m { print $1 }' "$EV" 2>/dev/null; }
# count EVENT MNT
count() { events "$2" | grep -cx "$1"; }
# wait_event EVENT MNT [N]: until EVENT was told for MNT N times (20 s)
wait_event() {
	for _ in $(seq 1 200); do
		[ "$(count "$1" "$2")" -ge "${3:-1}" ] && return 0
		sleep 0.1
	done
	return 1
}
# before A B MNT: the first A told for MNT comes before the first B
before() {
	local a b
	a=$(events "$3" | grep -nx "$1" | head -n 1 | cut -d: -f1)
	b=$(events "$3" | grep -nx "$2" | head -n 1 | cut -d: -f1)
	[ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ]
}

# ---- three arrays: A raid5 (4), B raid6 (5), C raid1 (2, mounted later)
memA=$(make_members 4 a)
memB=$(make_members 5 b)
memC=$(make_members 2 c)
A=$T/mntA B=$T/mntB C=$T/mntC
mkdir -p "$T/newA"
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name monA $memA
expect_rc 0 "$RAIDFS" create --level raid6 --chunk 4K --name monB $memB
expect_rc 0 "$RAIDFS" create --level raid1 --name monC $memC
rfs_mount "$(join_members $memA)" "$A" -o read_policy=nora || fail "mount A"
rfs_mount "$(join_members $memB)" "$B" -o bbu=shm || fail "mount B"
head -c 3000000 /dev/urandom > "$T/ref"
cp "$T/ref" "$A/f" && cp "$T/ref" "$B/f" || fail "writing the arrays"
for i in $(seq 1 20); do head -c 50000 /dev/urandom > "$A/s$i"; done
sync

# ---- --test: one TestMessage per array
expect_rc 0 "$RAIDFS" monitor --test --program "$T/ev.sh" "$A" "$B"
[ "$(wc -l < "$EV")" = 2 ] || fail "--test: not 2 events: $(cat "$EV")"
grep -qx "TestMessage|$A||monA|" "$EV" || fail "--test: no TestMessage for A: $(cat "$EV")"
grep -qx "TestMessage|$B||monB|" "$EV" || fail "--test: no TestMessage for B: $(cat "$EV")"
grep -qE "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}[+-][0-9]{4} TestMessage $A array=monA\$" "$OUT" ||
	fail "--test: no timestamped line for A: $(cat "$OUT")"
# --syslog (as the systemd unit runs it): no stdout line, the program still runs
expect_rc 0 "$RAIDFS" monitor --test --syslog --program "$T/ev.sh" "$A"
[ ! -s "$OUT" ] || fail "--test --syslog wrote to stdout: $(cat "$OUT")"
[ "$(wc -l < "$EV")" = 3 ] || fail "--test --syslog: the program did not run: $(cat "$EV")"
expect_rc 1 "$RAIDFS" monitor --test --program "$T/ev.sh" "$C"
grep -q "no raidfs array is mounted" "$ERR" || fail "--test without arrays: $(cat "$ERR")"
expect_rc 2 "$RAIDFS" monitor --program "$T/nosuch" --oneshot
grep -q "cannot run the program '$T/nosuch'" "$ERR" || fail "a missing program: $(cat "$ERR")"
expect_rc 2 "$RAIDFS" monitor --interval 0 --oneshot
log "ok: --test delivers one TestMessage per array"

# ---- --oneshot on healthy arrays: nothing told, exit 0
: > "$EV"
expect_rc 0 "$RAIDFS" monitor --oneshot --program "$T/ev.sh" "$A" "$B"
[ ! -s "$EV" ] && [ ! -s "$OUT" ] || fail "--oneshot on healthy arrays told: $(cat "$EV" "$OUT")"
log "ok: --oneshot exits 0 on healthy arrays"

# ---- the foreground monitor
# (the mount points first: lib.sh's daemon_pid looks for a command line
# that ends with the mount point)
"$RAIDFS" monitor "$A" "$B" "$C" --interval 0.2 --program "$T/ev.sh" > "$T/mon.out" 2> "$T/mon.err" &
MONPID=$!
for _ in $(seq 1 100); do [ "$(grep -c "watching array" "$T/mon.out")" = 2 ] && break; sleep 0.1; done
[ "$(grep -c "watching array" "$T/mon.out")" = 2 ] || fail "the monitor does not watch A and B: $(cat "$T/mon.out" "$T/mon.err")"
[ ! -s "$EV" ] || fail "the monitor's first look at healthy arrays told: $(cat "$EV")"

# fail -> replace -> rebuild
expect_rc 0 "$RAIDFS" fail "$A" 1
expect_rc 0 "$RAIDFS" replace "$A" 1 "$T/newA"
wait_member "$A" 1 online "$T/newA" || fail "member 1 of A never came back online"
wait_event RebuildFinished "$A" || fail "no RebuildFinished for A: $(cat "$EV")"
for e in Fail DegradedArray NoRedundancy RebuildStarted RebuildFinished; do
	[ "$(count $e "$A")" = 1 ] || fail "A: $e told $(count $e "$A") times, not once: $(cat "$EV")"
done
before Fail DegradedArray "$A" && before DegradedArray RebuildStarted "$A" &&
	before RebuildStarted RebuildFinished "$A" || fail "A: events out of order: $(cat "$EV")"
grep -qx "Fail|$A|1|monA|" "$EV" || fail "A: Fail does not name member 1: $(cat "$EV")"
grep -q "^NoRedundancy|$A||monA|" "$EV" || fail "A: NoRedundancy: $(cat "$EV")"
grep -qE " Fail $A member=1 array=monA\$" "$T/mon.out" || fail "A: no Fail line: $(cat "$T/mon.out")"
log "ok: fail -> replace -> rebuild: $(events "$A" | tr '\n' ' ')"

# read errors rising on member 2 of A
expect_rc 0 "$RAIDFS" inject "$A" 2 read-error count 3
echo 3 > /proc/sys/vm/drop_caches
cmp -s "$T/ref" "$A/f" || fail "A: wrong data read while member 2 returned read errors"
wait_event ErrorsRising "$A" || fail "A: no ErrorsRising after read errors: $(cat "$EV")"
grep -qE "^ErrorsRising\|$A\|2\|monA\|read=[1-9][0-9]* write=0 cksum=0\$" "$EV" ||
	fail "A: ErrorsRising not for member 2's reads: $(cat "$EV")"
log "ok: read errors on member 2: ErrorsRising"

# raid6 with two members gone: NoRedundancy
expect_rc 0 "$RAIDFS" fail "$B" 0
expect_rc 0 "$RAIDFS" fail "$B" 3
wait_event NoRedundancy "$B" || fail "B: no NoRedundancy with two raid6 members failed: $(cat "$EV")"
wait_event Fail "$B" 2 || fail "B: not two Fail events: $(cat "$EV")"
[ "$(count NoRedundancy "$B")" = 1 ] || fail "B: NoRedundancy told more than once: $(cat "$EV")"
grep -q "^NoRedundancy|$B||monB|" "$EV" || fail "B: NoRedundancy: $(cat "$EV")"
log "ok: raid6 with two members failed: NoRedundancy"

# a failed battery: BbuFailed once (the daemon's event and the status
# both show it), then BbuRestored
expect_rc 0 "$RAIDFS" bbu "$B" fail
wait_event BbuFailed "$B" || fail "B: no BbuFailed: $(cat "$EV")"
sleep 1	# (five looks that see the battery failed)
[ "$(count BbuFailed "$B")" = 1 ] || fail "B: BbuFailed told $(count BbuFailed "$B") times: $(cat "$EV")"
expect_rc 0 "$RAIDFS" bbu "$B" restore
wait_event BbuRestored "$B" || fail "B: no BbuRestored: $(cat "$EV")"
log "ok: a failed battery: BbuFailed once, then BbuRestored"

# an array mounted later is picked up; one unmounted is dropped, said once
rfs_mount "$(join_members $memC)" "$C" || fail "mount C"
for _ in $(seq 1 100); do grep -q "watching array 'monC' at $C " "$T/mon.out" && break; sleep 0.1; done
grep -q "watching array 'monC' at $C " "$T/mon.out" || fail "C mounted later is not watched: $(cat "$T/mon.out")"
rfs_unmount_wait "$C" || fail "unmount C"
for _ in $(seq 1 100); do grep -q "$C: array 'monC' is no longer mounted" "$T/mon.out" && break; sleep 0.1; done
sleep 0.5
[ "$(grep -c "$C: array 'monC' is no longer mounted" "$T/mon.out")" = 1 ] ||
	fail "C unmounted: not said once: $(cat "$T/mon.out")"
[ -z "$(events "$C")" ] || fail "healthy C told events: $(cat "$EV")"
# mounted again (a new daemon, its events numbered from 1 again): watched
# again, and its events are told (raid1 with one copy left: NoRedundancy)
rfs_mount "$(join_members $memC)" "$C" || fail "mount C again"
for _ in $(seq 1 100); do [ "$(grep -c "watching array 'monC' at $C " "$T/mon.out")" = 2 ] && break; sleep 0.1; done
[ "$(grep -c "watching array 'monC' at $C " "$T/mon.out")" = 2 ] || fail "C mounted again is not watched: $(cat "$T/mon.out")"
expect_rc 0 "$RAIDFS" fail "$C" 1
wait_event NoRedundancy "$C" || fail "C: raid1 with one copy left: no NoRedundancy: $(cat "$EV")"
[ "$(events "$C" | tr '\n' ' ')" = "Fail DegradedArray NoRedundancy " ] || fail "C: events: $(cat "$EV")"
kill -TERM "$MONPID"
wait "$MONPID"
rc=$?
MONPID=
[ "$rc" = 0 ] || fail "the monitor exited $rc on SIGTERM: $(cat "$T/mon.err")"
grep -q "raidfs monitor stopped" "$T/mon.out" || fail "no 'stopped' line: $(cat "$T/mon.out")"
log "ok: C picked up when mounted (also again), dropped when unmounted; SIGTERM stops the monitor"

# ---- a new monitor tells only the problems present, never old events
: > "$EV"
expect_rc 1 "$RAIDFS" monitor --oneshot --program "$T/ev.sh" "$A" "$B"
events "$B" | sort > "$T/b.ev"
printf 'DegradedArray\nNoRedundancy\n' | diff -u - "$T/b.ev" >&2 || fail "--oneshot on degraded B: $(cat "$EV")"
# A: healthy, but member 2 counted read errors (a problem present)
[ "$(events "$A")" = ErrorsRising ] || fail "--oneshot on A: $(cat "$EV")"
grep -q " DegradedArray $B array=monB state=degraded\$" "$OUT" || fail "--oneshot lines: $(cat "$OUT")"
expect_rc 0 "$RAIDFS" clear "$A"
: > "$EV"
expect_rc 0 "$RAIDFS" monitor --oneshot --program "$T/ev.sh" "$A"
[ ! -s "$EV" ] || fail "--oneshot on A after clear: $(cat "$EV")"
log "ok: --oneshot tells the problems present (exit 1), no old event"

# ---- NearlyFull: a raid1 of two 8 MiB tmpfs members filled past 90%
memD=$(make_members 2 e)
set -- $memD
if mount -t tmpfs -o size=8m tmpfs "$1" && MOUNTS+=("$1") && mount -t tmpfs -o size=8m tmpfs "$2" && MOUNTS+=("$2"); then
	D=$T/mntD
	expect_rc 0 "$RAIDFS" create --level raid1 --name monD $memD
	MOUNTS=("$D" "${MOUNTS[@]}")	# (the FUSE mount goes first in the cleanup)
	rfs_mount "$(join_members $memD)" "$D" || fail "mount D"
	: > "$EV"
	expect_rc 0 "$RAIDFS" monitor --oneshot --program "$T/ev.sh" "$D"
	dd if=/dev/urandom of="$D/big" bs=256K count=30 conv=fsync status=none 2>/dev/null	# (ENOSPC is fine)
	expect_rc 1 "$RAIDFS" monitor --oneshot --program "$T/ev.sh" "$D"
	grep -qx "NearlyFull|$D|0|monD|path=$1" "$EV" && grep -qx "NearlyFull|$D|1|monD|path=$2" "$EV" ||
		fail "D: no NearlyFull for both members: $(df "$1" "$2"; cat "$EV")"
	[ "$(wc -l < "$EV")" = 2 ] || fail "D: more than NearlyFull told: $(cat "$EV")"
	log "ok: members past 90% used: NearlyFull for each"
else
	log "NearlyFull not tested: cannot mount a tmpfs (needs root)"
fi

# ---- a daemon that does not answer: said after --timeout, exit 1
STOPPED=$(daemon_pid "$A")
[ -n "$STOPPED" ] || fail "no daemon for A"
kill -STOP "$STOPPED"
t0=$SECONDS
expect_rc 1 timeout 20 "$RAIDFS" monitor --oneshot --timeout 1 "$A"
kill -CONT "$STOPPED"
STOPPED=
[ $((SECONDS - t0)) -le 5 ] || fail "--timeout 1: a stopped daemon was waited for $((SECONDS - t0)) s"
grep -q "$A: its daemon does not answer" "$OUT" || fail "a stopped daemon: $(cat "$OUT" "$ERR")"
expect_rc 0 "$RAIDFS" monitor --oneshot --timeout 1 "$A"
log "ok: a daemon that does not answer is said so after --timeout"
