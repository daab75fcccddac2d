#!/bin/bash
# t_replace_resume - a replacement of a healthy member in place ('raidfs
# replace' of an online member) survives an unmount and kill -9: the
# replacement is recorded in the superblocks, the next mount (given the
# new directory among the members: a mount opens only the directories it
# is given) puts the new directory back beside the member (status shows the replacement in
# progress, the array stays optimal) and the copy goes on from its saved
# position (files copied before are not copied again).  Between the stops
# a workload with a reference copy changes the tree.  At the end the new
# directory is the member, the old one has no superblock, the tree is
# byte-identical (also with another member failed) and 'raidfs check' of
# the new member set is clean.
#
# Environment: KILLS (kill -9 points, default 3), SEED.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python
RANDOM=$SEED	# kill delays reproduce with the seed
KILLS=${KILLS:-3}

mem=$(make_members 4)
mkdir -p "$T/new" "$T/ref"
mnt=$T/mnt
members=$(join_members $mem)
members_r=$members:$T/new	# with the replacement in progress
# slow from the start: a resumed copy must still be running when it is checked
opts="-o write_policy=writethrough,rebuild_min_rate=1,rebuild_max_rate=1"
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name rpr $mem
rfs_mount "$members" "$mnt" $opts || fail "mount"
# 240 files of 256 KiB in 6 directories: 20 MB per member, 20 s of copy
# at 1 MB/s, so the copy is still running at the last kill
write_fileset "$mnt" "$T/ref" 11 6 40 262144 262144 || fail "writing the file set"
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$T/new"
grep -q "keeps serving" "$OUT" || fail "not a replacement in place: $(cat "$OUT")"
sleep 3.5
[ -f "$T/new/.raidfs/rebuild" ] || fail "no position saved on the replacement after 3 s"

# status after a remount: the replacement is in progress, the array optimal
check_resumed() {	# WHAT
	local i
	for i in $(seq 1 100); do
		"$RAIDFS" status --json "$mnt" | grep -q '"replace": true' && break
		sleep 0.1
	done
	"$RAIDFS" status "$mnt" >"$T/status.txt"
	[ $? = 0 ] || fail "$1: the array is not optimal after the remount: $(cat "$T/status.txt")"
	grep -q "being replaced by $T/new" "$T/status.txt" ||
		fail "$1: status does not show the replacement after the remount: $(cat "$T/status.txt")"
	grep -q "^replace: member 1 -> '$T/new'" "$T/status.txt" ||
		fail "$1: no replacement progress after the remount: $(cat "$T/status.txt")"
	"$RAIDFS" status --json "$mnt" >"$T/status.json"
	"$PY" - "$T/status.json" "$T/new" <<'PYEOF' || fail "$1: JSON: $(cat "$T/status.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["state"] == "optimal", j["state"]
assert j["members"][1]["state"] == "online", j["members"][1]
assert j["members"][1]["replacement"] == sys.argv[2], j["members"][1]
assert j["rebuild"]["active"] and j["rebuild"]["replace"] and j["rebuild"]["member"] == 1, j["rebuild"]
assert j["rebuild"]["target"] == sys.argv[2], j["rebuild"]
assert j["rebuild"]["done"] > 0, "progress restarted from zero: %r" % j["rebuild"]
PYEOF
	grep -q "resuming the replacement of member 1 onto '$T/new' after '[^']\+'" "$T/daemon.log" ||
		fail "$1: the copy did not resume from a saved position: $(grep -i "replace\|rebuild" "$T/daemon.log" | tail -5)"
}

# 1. a clean unmount in the middle of the copy
rfs_unmount_wait "$mnt" || fail "unmount during the replacement"
[ -e "$T/d2/.raidfs/superblock" ] || fail "the member lost its superblock at the unmount"
rfs_mount "$members_r" "$mnt" $opts || fail "mount after the unmount"
check_resumed "unmount"
log "ok: resumed after an unmount"

# 2. kill -9 at random points, a workload between them
for k in $(seq 1 "$KILLS"); do
	workload run --mnt "$mnt" --ref "$T/ref" --seed $((SEED + k)) --ops 60 --chunk 4096 \
		--max-size 200000 --name-prefix "k$k" >"$T/w$k.out" 2>&1 ||
		{ cat "$T/w$k.out" >&2; fail "workload before kill $k"; }
	sleep "$((RANDOM % 3)).$((RANDOM % 10))"
	: >"$T/daemon.log"
	rfs_kill "$mnt" || fail "kill -9 number $k"
	rfs_mount "$members_r" "$mnt" $opts || fail "mount after kill -9 number $k"
	check_resumed "kill -9 number $k"
	log "ok: resumed after kill -9 number $k"
done

# 3. finish: the new directory is member 1, the old one is let go
"$RAIDFS" rebuild "$mnt" --max-rate 0 >/dev/null
wait_member "$mnt" 1 online "$T/new" || fail "member 1 is not the new directory: $("$RAIDFS" status "$mnt")"
skipped=$(grep -o "resumed after '[^']*': [0-9]* files already rebuilt were skipped" "$T/daemon.log" |
	tail -n 1 | grep -o ": [0-9]* files" | grep -o "[0-9]*")
[ -n "$skipped" ] && [ "$skipped" -gt 0 ] ||
	fail "the last resume skipped no file: the work done before the kill was redone: $(grep -i "replace\|resum" "$T/daemon.log" | tail -5)"
log "ok: the last resume did not copy $skipped files again"
[ -e "$T/d2/.raidfs/superblock" ] && fail "the replaced directory still has a superblock"
[ -e "$T/new/.raidfs/rebuild" ] && fail "the saved position is left on the new member"
"$RAIDFS" status "$mnt" >"$T/status.txt" || fail "not optimal after the replacement: $(cat "$T/status.txt")"
grep -q "being replaced" "$T/status.txt" && fail "status still shows a replacement: $(cat "$T/status.txt")"
workload compare "$mnt" "$T/ref" >"$T/cmp.out" 2>&1 || { cat "$T/cmp.out" >&2; fail "tree differs after the replacement"; }
rfs_unmount_wait "$mnt" || fail "unmount"
newmem=$(echo " $mem " | sed "s| $T/d2 | $T/new |")
expect_rc 0 "$RAIDFS" check "$(join_members $newmem)"
# the copy holds the right bytes: without member 3, member 1 is read
hide_member "$T/d4"
rfs_mount "$(join_members $newmem)" "$mnt" || fail "degraded mount without member 3"
workload compare "$mnt" "$T/ref" >"$T/cmp.out" 2>&1 ||
	{ cat "$T/cmp.out" >&2; fail "tree differs without member 3: the copy on the new member is wrong"; }
rfs_unmount_wait "$mnt" || fail "unmount"
unhide_member "$T/d4"
log "ok: replacement done after an unmount and $KILLS kill -9, tree byte-identical"
exit 0
