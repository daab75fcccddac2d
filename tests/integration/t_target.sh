#!/bin/bash
# t_target - the new member fails during its own rebuild, as a new disk
# can: its directory deleted (the disk pulled), its writes failing, or
# 'raidfs fail' on it.  The rebuild stops at once (it must not spin on a
# directory that is gone), the member is faulty with the reason in status,
# data stays right, a hot spare takes over by itself, and 'raidfs replace'
# onto another directory then rebuilds it.  A replacement in place whose
# new directory goes is abandoned; its member stays in service.  The
# directory of a member that failed during its rebuild holds a partial
# copy: given back with 'raidfs add', every file is compared (never taken
# back as it is), and the result holds the right bytes.  'raidfs fail' of
# a replacement in place abandons it.  A rebuild that loses its sources
# (a second failure in raid5) stops and goes on when they are back.
. "$(dirname "$0")/lib.sh"
need_fuse

# setup NAME [SPARE]: raid5 over 4 members in $T/NAME with 40 files of
# 500 KB (a reference in ref/), mounted, rebuild limited to 1 MB/s
setup() {
	new_array "$1" raid5 "${2:-}"
	for i in $(seq 1 40); do head -c 500000 /dev/urandom >"$C/ref/f$i"; done
	cp "$C"/ref/* "$mnt/"
	"$RAIDFS" rebuild "$mnt" --min-rate 1 --max-rate 1 >/dev/null
}
# same_tree WHAT: the mount holds the reference tree, byte for byte
same_tree() {
	workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 || { cat "$C/cmp.out" >&2; fail "$1"; }
}
# rebuilt_right WHAT J DIR OTHER: the rebuild of member J onto DIR,
# unlimited, ends with J online; with member OTHER failed afterwards the
# tree is still right (J holds the right bytes); unmounted
rebuilt_right() {
	"$RAIDFS" rebuild "$mnt" resume >/dev/null
	"$RAIDFS" rebuild "$mnt" --max-rate 0 >/dev/null
	wait_member "$mnt" "$2" online "$3" || fail "$1: member $2 not rebuilt onto $3: $("$RAIDFS" status "$mnt")"
	expect_rc 0 "$RAIDFS" fail "$mnt" "$4"
	same_tree "$1: tree differs after member $2 was rebuilt onto $3, with member $4 failed"
	rfs_unmount_wait "$mnt" || fail "$1: unmount"
}
# started WHAT: the rebuild has written something and is still running
started() {
	for _ in $(seq 1 200); do
		"$RAIDFS" status --json "$mnt" | grep -q '"active": true, [^}]*"done": [1-9]' && return 0
		sleep 0.05
	done
	fail "$1: the rebuild did not start"
}
# stopped WHAT: within 10 s no rebuild runs and the daemon is idle (a
# rebuild spinning on a vanished directory burns a core)
stopped() {
	local pid t0 t1
	for _ in $(seq 1 100); do
		"$RAIDFS" status --json "$mnt" | grep -q '"active": true' || break
		sleep 0.1
	done
	"$RAIDFS" status --json "$mnt" | grep -q '"active": true' && fail "$1: the rebuild still runs: $("$RAIDFS" status "$mnt")"
	pid=$(daemon_pid "$mnt")
	t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	sleep 1
	t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	[ $((t1 - t0)) -lt 50 ] || fail "$1: the daemon is busy after the rebuild stopped ($((t1 - t0)) ticks in 1 s)"
}

# 1. the rebuild target's directory is deleted: member faulty, rebuild
# stopped, data right; 'raidfs replace' onto another directory rebuilds
# it, and the rebuilt member holds the right bytes
setup gone
expect_rc 0 "$RAIDFS" fail "$mnt" 1
mkdir "$C/new1"
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new1"
started gone
rm -rf "$C/new1"
stopped gone
wait_member "$mnt" 1 faulty "$C/new1" || fail "gone: member 1 is not faulty at new1: $("$RAIDFS" status "$mnt")"
grep -q "member 1 '$C/new1' failed during its rebuild: its directory was deleted" "$T/daemon.log" ||
	fail "gone: no log line for the failure: $(grep -a "member 1" "$T/daemon.log" | tail -3)"
expect_rc 1 "$RAIDFS" status "$mnt"
grep -q "failed: its directory was deleted" "$OUT" || fail "gone: status does not say why: $(cat "$OUT")"
grep -q "stopped: the new member failed" "$OUT" || fail "gone: status does not say the rebuild stopped: $(cat "$OUT")"
grep -q "action:  member 1 ('$C/new1') failed during its rebuild: replace it with 'raidfs replace $mnt 1 NEWDIR'" "$OUT" ||
	fail "gone: status does not say what to do: $(cat "$OUT")"
same_tree "gone: tree differs after the new member vanished"
mkdir "$C/new2"
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new2"
rebuilt_right gone 1 "$C/new2" 2
log "ok: the new member's directory deleted during its rebuild: rebuild stopped, member faulty, replaced again"

# 2. the same with a hot spare: it takes over by itself
setup hot s1
expect_rc 0 "$RAIDFS" fail "$mnt" 3
wait_member "$mnt" 3 rebuilding "$C/s1" || fail "hot: the spare did not take over: $("$RAIDFS" status "$mnt")"
started hot
rm -rf "$C/s1"
stopped hot
mkdir "$C/s2"
expect_rc 0 "$RAIDFS" add "$mnt" "$C/s2"
rebuilt_right hot 3 "$C/s2" 0
log "ok: a spare whose directory went during its rebuild: the next spare rebuilt the member"

# 3. writes to the new member fail (injected): it is failed like a disk
# that errors during its recovery
setup werr
expect_rc 0 "$RAIDFS" fail "$mnt" 2
mkdir "$C/new3"
expect_rc 0 "$RAIDFS" replace "$mnt" 2 "$C/new3"
started werr
expect_rc 0 "$RAIDFS" inject "$mnt" 2 write-error
stopped werr
wait_member "$mnt" 2 faulty "$C/new3" || fail "werr: member 2 is not faulty: $("$RAIDFS" status "$mnt")"
grep -q "member 2 '$C/new3' failed during its rebuild: error writing '[^']*' (Input/output error)" "$T/daemon.log" ||
	fail "werr: no log line for the failure: $(grep -a "member 2" "$T/daemon.log" | tail -3)"
same_tree "werr: tree differs after the new member's writes failed"
rfs_unmount_wait "$mnt" || fail "werr: unmount"
log "ok: write errors on the new member during its rebuild: rebuild stopped, member faulty"

# 4. 'raidfs fail' on the member being rebuilt; its directory, given back
# with 'raidfs add', holds a partial copy: every file is compared, and the
# member then holds the right bytes (member 0 failed afterwards)
setup part
expect_rc 0 "$RAIDFS" fail "$mnt" 1
mkdir "$C/new1"
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new1"
pause_rebuild_at "$mnt" 'f2[0-9]' >/dev/null || fail "part: the rebuild did not reach f20"
expect_rc 0 "$RAIDFS" fail "$mnt" 1
stopped part
wait_member "$mnt" 1 faulty "$C/new1" || fail "part: member 1 is not faulty: $("$RAIDFS" status "$mnt")"
expect_rc 0 "$RAIDFS" add "$mnt" "$C/new1"
grep -q "re-add of member 1 from a directory it had before another" "$T/daemon.log" ||
	fail "part: the partial copy is not compared file by file: $(grep -a "re-add\|member 1" "$T/daemon.log" | tail -3)"
rebuilt_right part 1 "$C/new1" 0
log "ok: a member failed during its rebuild, given back: compared file by file, right bytes"

# 5. a replacement in place loses its new directory: abandoned, the
# member stays in service, the array stays optimal
setup inpl
mkdir "$C/new1"
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new1"
started inpl
rm -rf "$C/new1"
stopped inpl
# (rm -rf takes the superblock before the directory: either is seen first)
grep -q "the replacement '$C/new1' of member 1 failed: its \(directory was deleted\|superblock disappeared\); member 1 stays in service" "$T/daemon.log" ||
	fail "inpl: no log line for the failed replacement: $(grep -a "replace" "$T/daemon.log" | tail -3)"
expect_rc 0 "$RAIDFS" status "$mnt"
grep -q "abandoned (the replacement failed" "$OUT" || fail "inpl: status does not say the replacement was abandoned: $(cat "$OUT")"
wait_member "$mnt" 1 online "$C/d2" || fail "inpl: member 1 is not in service: $(cat "$OUT")"
expect_rc 0 "$RAIDFS" fail "$mnt" 3
same_tree "inpl: tree differs after the replacement was abandoned, with member 3 failed"
rfs_unmount_wait "$mnt" || fail "inpl: unmount"
log "ok: a replacement in place whose new directory went: abandoned, the member kept serving"

# 5b. 'raidfs fail' of a replacement in place (its directory): abandoned
# the same way; the member stays in service, and the same directory,
# emptied as the log says, takes a new replacement
setup inpf
mkdir "$C/new1"
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new1"
started inpf
expect_rc 0 "$RAIDFS" fail "$mnt" "$C/new1"
grep -q "the replacement of member 1 by '$C/new1' is abandoned; member 1 stays in service" "$OUT" ||
	fail "inpf: 'raidfs fail' of the replacement said: $(cat "$OUT")"
stopped inpf
wait_member "$mnt" 1 online "$C/d2" || fail "inpf: member 1 is not in service: $("$RAIDFS" status "$mnt")"
grep -q "'$C/new1' holds a partial copy (empty it before trying again)" "$T/daemon.log" ||
	fail "inpf: the log does not say what to do with the partial copy"
rm -rf "$C/new1"/* "$C/new1/.raidfs"
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new1"
rebuilt_right inpf 1 "$C/new1" 0
log "ok: 'raidfs fail' of a replacement in place: abandoned, the member kept serving, replaced again"

# 6. a second member fails during a raid5 rebuild: nothing is left to
# rebuild from; the rebuild stops and says why (it does not run through
# every file with errors), reads fail rather than return wrong data, and
# when the member is back the rebuild goes on by itself from where it was
setup lost
expect_rc 0 "$RAIDFS" fail "$mnt" 1
mkdir "$C/new1"
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new1"
pause_rebuild_at "$mnt" 'f2[0-9]' >/dev/null || fail "lost: the rebuild did not reach f20"
expect_rc 0 "$RAIDFS" fail "$mnt" 2
"$RAIDFS" rebuild "$mnt" resume >/dev/null
stopped lost
expect_rc 2 "$RAIDFS" status "$mnt"
grep -q "rebuild of member 1 stopped at f[0-9]*: the array lost more members than it tolerates; it goes on by itself once they are back" "$OUT" ||
	fail "lost: status does not say why the rebuild stopped: $(cat "$OUT")"
# nothing to resume from yet: 'resume' says why
expect_rc 1 "$RAIDFS" rebuild "$mnt" resume
grep -q "no rebuild is running; the last one: rebuild of member 1 stopped at f[0-9]*: the array lost more members" "$ERR" ||
	fail "lost: 'raidfs rebuild resume' of a failed array said: $(cat "$ERR")"
cat "$mnt/f30" >/dev/null 2>&1 && fail "lost: a read that needs two lost members succeeded"
expect_rc 0 "$RAIDFS" add "$mnt" "$C/d3"
wait_member "$mnt" 2 online "$C/d3" || fail "lost: member 2 not back: $("$RAIDFS" status "$mnt")"
for _ in $(seq 1 50); do grep -q "enough members are back: the stopped rebuild goes on" "$T/daemon.log" && break; sleep 0.1; done
grep -q "enough members are back: the stopped rebuild goes on" "$T/daemon.log" ||
	fail "lost: the rebuild did not go on: $(grep -a "rebuild" "$T/daemon.log" | tail -3)"
grep -q "resuming the rebuild of member 1 onto '$C/new1' after 'f" "$T/daemon.log" ||
	fail "lost: the rebuild started over instead of going on from its position"
rebuilt_right lost 1 "$C/new1" 3
log "ok: a second failure during a raid5 rebuild: stopped, said why, went on when the member was back"
exit 0
