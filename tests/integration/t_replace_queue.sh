#!/bin/bash
# t_replace_queue - 'raidfs replace' while a rebuild runs is queued, not
# refused.  raid6 with members 1 and 2 failed: 'replace 1' starts, 'replace
# 2' is queued (its directory checked and claimed at once, as a replace
# checks it); status (text and JSON) shows the queue while the first
# rebuild runs; a second replacement for a member already queued, one for
# the member being rebuilt, and bad directories are refused; 'raidfs
# remove MNT DIR' cancels a queued replacement (its directory left
# empty); a queued directory deleted meanwhile is dropped with a message;
# 'replace --wait' of a queued replacement returns only once its member
# is online.  Both end online, the tree is byte-identical to the
# reference, and 'raidfs check' is clean after the unmount.  Then the
# queue lasts: kill -9 during the first rebuild, a mount of the members
# with the two new directories resumes the first rebuild and keeps the
# second queued (also across a clean unmount), and both end online.
#
# The first rebuild is kept slow with the rebuild rate options (1 MB/s
# over about 5 MB per member) so it still runs while the queue is
# looked at; then the rate is lifted.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

slow="--min-rate 1 --max-rate 1"
# queue_json WHAT PYTHON-ASSERTIONS: status --json in j, the assertions hold
queue_json() {
	"$RAIDFS" status --json "$mnt" >"$T/status.json"
	"$PY" - "$T/status.json" "$T" <<PYEOF || fail "$1: JSON: $(cat "$T/status.json")"
import json, sys
j = json.load(open(sys.argv[1]))
T = sys.argv[2]
$2
PYEOF
}
same_tree() {
	workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 || { cat "$C/cmp.out" >&2; fail "$1"; }
}
# wait_log ERE: the daemon log has a line matching ERE within 10 s
wait_log() {
	for _ in $(seq 1 100); do grep -Eq "$1" "$T/daemon.log" && return 0; sleep 0.1; done
	return 1
}

# ---- 1. two replaces in a row ------------------------------------------
C=$T/a
mkdir -p "$C/ref"
mem=$(make_members 6 a/d)
mnt=$C/mnt
expect_rc 0 "$RAIDFS" create --level raid6 --chunk 4K --name rq $mem
rfs_mount "$(join_members $mem)" "$mnt" || fail "mount"
# about 19 MB: 5 MB per member, 5 s of copy at 1 MB/s
write_fileset "$mnt" "$C/ref" "$SEED" 4 16 200000 400000 || fail "writing the reference tree"
expect_rc 0 "$RAIDFS" rebuild "$mnt" $slow
expect_rc 0 "$RAIDFS" fail "$mnt" 1
expect_rc 0 "$RAIDFS" fail "$mnt" 2
mkdir -p "$C/newA" "$C/newB" "$C/newC" "$C/newD" "$C/full"
echo x >"$C/full/x"
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/newA"
grep -q "rebuilding member 1 onto" "$OUT" || fail "the first replace did not start: $(cat "$OUT")"
expect_rc 0 "$RAIDFS" replace "$mnt" 2 "$C/newB"
grep -q "^queued: member 2 will be rebuilt onto '$C/newB'.*position 1 in the queue" "$OUT" ||
	fail "the second replace is not queued: $(cat "$OUT")"
[ -f "$C/newB/.raidfs/superblock" ] || fail "the queued directory is not claimed (no superblock on it)"
# refused: a second one for member 2, one for the member being rebuilt,
# a directory that is not empty, one inside the mount
expect_rc 1 "$RAIDFS" replace "$mnt" 2 "$C/newC"
grep -q "member 2 already has a replacement queued, '$C/newB'" "$ERR" || fail "second queued for 2: $(cat "$ERR")"
expect_rc 1 "$RAIDFS" replace "$mnt" 1 "$C/newC"
grep -q "member 1 is being rebuilt onto" "$ERR" || fail "a queue for the member being rebuilt: $(cat "$ERR")"
expect_rc 1 "$RAIDFS" replace "$mnt" 3 "$C/full"
grep -q "is not empty" "$ERR" || fail "a non-empty directory queued: $(cat "$ERR")"
mkdir -p "$mnt/inside" "$C/ref/inside"
expect_rc 1 "$RAIDFS" replace "$mnt" 3 "$mnt/inside"
[ -e "$C/newC/.raidfs" ] && fail "a refused directory was claimed"

# status while the first rebuild runs: the queue, in order
"$RAIDFS" status "$mnt" >"$T/status.txt"
grep -q "^queued:  1. member 2 -> '$C/newB' (starts when the rebuild of member 1 ends)" "$T/status.txt" ||
	fail "status does not show the queue: $(cat "$T/status.txt")"
grep -q "^action:  member 2 .*its replacement onto '$C/newB' is queued" "$T/status.txt" ||
	fail "status's action for member 2 does not name the queued replacement: $(cat "$T/status.txt")"
grep -q "^ *S[0-9]" "$T/status.txt" && fail "a queued replacement is listed as a hot spare: $(cat "$T/status.txt")"
queue_json "while the first rebuild runs" "
assert j['rebuild']['active'] and j['rebuild']['member'] == 1, j['rebuild']
assert j['queue'] == [{'member': 2, 'path': T + '/a/newB', 'given': True}], j['queue']
assert j['spares'] == [], j['spares']"
log "ok: second replace queued, shown in status"

# an in-place replacement of a healthy member queues too; its directory,
# deleted, is dropped from the queue with a message
expect_rc 0 "$RAIDFS" replace "$mnt" 3 "$C/newD"
grep -q "queued: member 3 will be copied onto '$C/newD'.*position 2" "$OUT" || fail "queued in place: $(cat "$OUT")"
queue_json "two queued" "assert [q['member'] for q in j['queue']] == [2, 3], j['queue']"
rm -rf "$C/newD"
wait_log "queued replacement of member 3 by '$C/newD' is dropped: its directory" ||
	fail "the deleted queued directory was not dropped: $(tail -5 "$T/daemon.log")"
queue_json "after the queued directory vanished" "assert [q['member'] for q in j['queue']] == [2], j['queue']"

# cancel: the directory leaves the queue and is empty again; queued anew
# with --wait, which returns once member 2 is online
expect_rc 0 "$RAIDFS" remove "$mnt" "$C/newB"
grep -q "queued replacement of member 2 by '$C/newB' is cancelled" "$OUT" || fail "cancel: $(cat "$OUT")"
[ -z "$(ls -A "$C/newB")" ] || fail "a cancelled queued directory is not left empty: $(ls -A "$C/newB")"
queue_json "after the cancel" "assert j['queue'] == [], j['queue']"
"$RAIDFS" replace "$mnt" 2 "$C/newB" --wait >"$C/wait.out" 2>&1 &
wpid=$!
for _ in $(seq 1 50); do grep -q "^queued:" "$C/wait.out" && break; sleep 0.1; done
grep -q "^queued: member 2" "$C/wait.out" || fail "the queued replace --wait: $(cat "$C/wait.out")"
queue_json "queued again" "
assert j['rebuild']['active'] and j['rebuild']['member'] == 1, 'the first rebuild ended too soon: raise the tree size: %r' % j['rebuild']
assert [q['member'] for q in j['queue']] == [2], j['queue']"
kill -0 "$wpid" 2>/dev/null || fail "replace --wait returned while its replacement was queued: $(cat "$C/wait.out")"
expect_rc 0 "$RAIDFS" rebuild "$mnt" --min-rate 100 --max-rate 0
wait "$wpid" || fail "replace --wait of the queued replacement exit $?: $(cat "$C/wait.out")"
queue_json "when replace --wait returned" "
m = j['members']
assert m[2]['state'] == 'online' and m[2]['path'] == T + '/a/newB', m[2]
assert j['queue'] == [], j['queue']"
wait_member "$mnt" 1 online "$C/newA" || fail "member 1 not online: $("$RAIDFS" status "$mnt")"
expect_rc 0 "$RAIDFS" status "$mnt"
grep -q "^queued:" "$OUT" && fail "a queue is left: $(cat "$OUT")"
grep -q "the queued replacement of member 2 by '$C/newB' starts" "$T/daemon.log" ||
	fail "the log does not say the queued replacement started"
same_tree "tree differs after both replacements"
rfs_unmount_wait "$mnt" || fail "unmount"
newmem=$(echo " $mem " | sed "s| $C/d2 | $C/newA |; s| $C/d3 | $C/newB |")
expect_rc 0 "$RAIDFS" check "$(join_members $newmem)"
log "ok: both replacements done one after the other, tree byte-identical, check clean"

# ---- 2. the queue lasts across kill -9 and an unmount --------------------
C=$T/b
mkdir -p "$C/ref"
mem=$(make_members 6 b/d)
mnt=$C/mnt
opts="-o rebuild_min_rate=1,rebuild_max_rate=1"
expect_rc 0 "$RAIDFS" create --level raid6 --chunk 4K --name rqb $mem
rfs_mount "$(join_members $mem)" "$mnt" $opts || fail "mount (2)"
write_fileset "$mnt" "$C/ref" "$((SEED + 1))" 4 16 200000 400000 || fail "writing the reference tree (2)"
expect_rc 0 "$RAIDFS" fail "$mnt" 1
expect_rc 0 "$RAIDFS" fail "$mnt" 2
mkdir -p "$C/newA" "$C/newB"
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/newA"
expect_rc 0 "$RAIDFS" replace "$mnt" 2 "$C/newB"
grep -q "^queued: member 2" "$OUT" || fail "(2) not queued: $(cat "$OUT")"
sleep 1
# the members in service and the two new directories (not the failed ones)
list=$(echo " $mem " | sed "s| $C/d2 | |; s| $C/d3 | |")
list="$(join_members $list):$C/newA:$C/newB"
check_queue_kept() {	# WHAT
	local i
	for i in $(seq 1 100); do
		"$RAIDFS" status --json "$mnt" 2>/dev/null | grep -q '"active": true' && break
		sleep 0.1
	done
	queue_json "$1" "
assert j['rebuild']['active'] and j['rebuild']['member'] == 1, j['rebuild']
assert j['queue'] == [{'member': 2, 'path': T + '/b/newB', 'given': True}], j['queue']
assert j['members'][2]['state'] in ('faulty', 'missing', 'removed'), j['members'][2]"
	"$RAIDFS" status "$mnt" | grep -q "^queued:  1. member 2 -> '$C/newB'" ||
		fail "$1: status text does not show the queue: $("$RAIDFS" status "$mnt")"
}
rfs_kill "$mnt" || fail "kill -9 during the first rebuild"
rfs_mount "$list" "$mnt" $opts || fail "mount after kill -9"
check_queue_kept "after kill -9"
log "ok: the queue survived kill -9"
rfs_unmount_wait "$mnt" || fail "unmount with a queued replacement"
rfs_mount "$list" "$mnt" $opts || fail "mount after the unmount"
check_queue_kept "after an unmount"
log "ok: the queue survived an unmount"
expect_rc 0 "$RAIDFS" rebuild "$mnt" --min-rate 100 --max-rate 0
wait_member "$mnt" 1 online "$C/newA" || fail "(2) member 1 not online: $("$RAIDFS" status "$mnt")"
wait_member "$mnt" 2 online "$C/newB" || fail "(2) member 2 not online: $("$RAIDFS" status "$mnt")"
expect_rc 0 "$RAIDFS" status "$mnt"
same_tree "tree differs after the remounts"
rfs_unmount_wait "$mnt" || fail "unmount (2)"
newmem=$(echo " $mem " | sed "s| $C/d2 | $C/newA |; s| $C/d3 | $C/newB |")
expect_rc 0 "$RAIDFS" check "$(join_members $newmem)"
log "ok: a queued replacement kept across kill -9 and an unmount, both members online, check clean"
exit 0
