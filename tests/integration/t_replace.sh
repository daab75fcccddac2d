#!/bin/bash
# t_replace - replacing a healthy member in place (like mdadm --replace):
# while a workload runs, 'raidfs replace' copies member 1 onto an empty
# directory; member 1 keeps serving, so the array keeps its full
# redundancy: another member is failed during the copy and nothing is
# lost.  When the copy is done the new directory is member 1, the old one
# no longer carries a superblock, and with yet another member failed the
# tree is still byte-identical (the copy holds the right bytes).  A member
# that fails during its own replacement makes the copy its rebuild target:
# what was copied is kept (and verified), the rest reconstructed, also
# across a kill -9 after the promotion.  A daemon stopped between the
# commit and the removal of the old directory's superblock: the old
# directory, given to a later mount, is not taken back (it missed the
# writes since); nor is the old directory of a failed member that was
# rebuilt onto another one, at mount; 'raidfs add' takes such a directory
# back comparing every file's version (the missed-write log is the other
# directory's), and it then holds the right bytes.  A directory too small
# for the member is turned down before anything is copied onto it.
#
# Tiers: quick - the copy under load on raid6 only; long - raid6, raid1,
# raid10, raid5.
. "$(dirname "$0")/lib.sh"
need_fuse

# new_raid5 NAME: new_array NAME (lib.sh) with an empty new1/
new_raid5() {
	new_array "$1"
	mkdir -p "$C/new1"
}
# the copy onto new1 has completed a file (its position is saved on the
# new directory after each one)
wait_copy_saved() {
	for _ in $(seq 1 300); do [ -s "$C/new1/.raidfs/rebuild" ] && return 0; sleep 0.05; done
	return 1
}
# same_tree WHAT: the mount holds the reference tree, byte for byte
same_tree() {
	workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 || { cat "$C/cmp.out" >&2; fail "$1"; }
}
# member 1 failed during its replacement: the copy is its rebuild target
wait_promoted() {
	for _ in $(seq 1 100); do grep -q "rebuild of member 1 continues onto" "$T/daemon.log" && return 0; sleep 0.1; done
	return 1
}


# level width replaced "failed during" "failed after" (- none)
CONFIGS=(
	"raid6 5 1 3 0"
	"raid1 3 1 2 0"
	"raid10 4 1 3 0"
	"raid5 4 0 2 -"
)
long_tier || CONFIGS=("raid6 5 1 3 0")	# quick tier: raid6
n=0
for cfg in "${CONFIGS[@]}"; do
	read -r level width r during after <<<"$cfg"
	n=$((n + 1))
	C=$T/c$n
	mkdir -p "$C/ref"
	mem=$(make_members "$width" "c$n/d")
	mnt=$C/mnt
	expect_rc 0 "$RAIDFS" create --level "$level" --chunk 4K --name "rp$n" $mem
	rfs_mount "$(join_members $mem)" "$mnt" || fail "$level: mount"
	workload run --mnt "$mnt" --ref "$C/ref" --seed $((SEED + n)) --ops 150 --chunk 4096 \
		--max-size 300000 >"$C/w0.out" 2>&1 || { cat "$C/w0.out" >&2; fail "$level: first workload"; }
	head -c 4000000 /dev/urandom > "$C/ref/big"
	cp "$C/ref/big" "$mnt/big"
	"$RAIDFS" rebuild "$mnt" --min-rate 1 --max-rate 1 >/dev/null
	workload run --mnt "$mnt" --ref "$C/ref" --seed $((SEED + 100 + n)) --ops 1500 --chunk 4096 \
		--max-size 300000 --name-prefix w >"$C/w1.out" 2>&1 &
	wpid=$!
	mkdir -p "$C/new1"
	expect_rc 0 "$RAIDFS" replace "$mnt" "$r" "$C/new1"
	grep -q "keeps serving" "$OUT" || fail "$level: replace of a healthy member: $(cat "$OUT")"
	"$RAIDFS" status "$mnt" > "$C/status-during.txt"
	[ $? = 0 ] || fail "$level: the array is not optimal while a healthy member is copied: $(cat "$C/status-during.txt")"
	grep -q "being replaced by $C/new1" "$C/status-during.txt" || fail "$level: status during: $(cat "$C/status-during.txt")"
	# full redundancy during the copy: lose another member
	"$RAIDFS" fail "$mnt" "$during" >/dev/null || fail "$level: fail $during"
	"$RAIDFS" rebuild "$mnt" --max-rate 0 >/dev/null
	wait_member "$mnt" "$r" online "$C/new1" || fail "$level: member $r is not the new directory: $("$RAIDFS" status "$mnt")"
	wait $wpid || { cat "$C/w1.out" >&2; fail "$level: the workload saw an error during the replacement"; }
	[ -e "$C/d$((r + 1))/.raidfs/superblock" ] && fail "$level: the replaced directory still has a superblock"
	[ "$after" = - ] || "$RAIDFS" fail "$mnt" "$after" >/dev/null || fail "$level: fail $after"
	same_tree "$level: tree differs with members $during and $after failed after replacing member $r"
	rfs_unmount_wait "$mnt" || fail "$level: unmount"
	newmem=$(echo " $mem " | sed "s| $C/d$((r + 1)) | $C/new1 |")
	expect_rc 1 "$RAIDFS" check "$(join_members $newmem)"
	grep -q "redundancy does not match\|no valid metadata\|shard missing" "$OUT" &&
		fail "$level: check found damage: $(cat "$OUT")"
	log "ok: $level: member $r replaced in place under load, lost $during during and $after after"
	rm -rf "$C"
done

# the member fails during its own replacement, under a workload: the copy
# becomes its rebuild target (as md does) and keeps what was copied
new_raid5 ab
workload run --mnt "$mnt" --ref "$C/ref" --seed "$SEED" --ops 200 --chunk 4096 \
	--max-size 300000 >"$C/w0.out" 2>&1 || fail "promote: workload"
head -c 24000000 /dev/urandom > "$C/ref/big"
cp "$C/ref/big" "$mnt/big"
"$RAIDFS" rebuild "$mnt" --min-rate 1 --max-rate 1 >/dev/null
workload run --mnt "$mnt" --ref "$C/ref" --seed $((SEED + 7)) --ops 800 --chunk 4096 \
	--max-size 300000 --name-prefix w >"$C/w1.out" 2>&1 &
wpid=$!
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new1"
# fail the member once the copy has completed a file and is still running
wait_copy_saved
"$RAIDFS" status --json "$mnt" | grep -q '"replace": true' || fail "promote: the copy is not running at the failure"
"$RAIDFS" fail "$mnt" 1 >/dev/null
wait_promoted
grep -q "member 1 failed during its replacement: '$C/new1' becomes its rebuild target" "$T/daemon.log" ||
	fail "promote: the replacement did not become the rebuild target: $(grep -i "replace\|rebuild" "$T/daemon.log" | tail -5)"
kept=$(grep -o "rebuild of member 1 continues onto '[^']*' from the copy's position ([0-9]* files" "$T/daemon.log" |
	grep -o "([0-9]*" | tr -d '(')
[ -n "$kept" ] && [ "$kept" -gt 0 ] || fail "promote: nothing copied was kept: the rebuild started from zero"
"$RAIDFS" status --json "$mnt" >"$C/status.json"
"$PY" - "$C/status.json" "$C/new1" <<'PYEOF' || fail "promote: status after the failure: $(cat "$C/status.json")"
import json, sys
j = json.load(open(sys.argv[1]))
m = j["members"][1]
assert m["path"] == sys.argv[2] and m["replacement"] is None, m
if j["rebuild"]["active"]:
    assert m["state"] == "rebuilding" and j["state"] == "rebuilding", j
    assert not j["rebuild"]["replace"] and j["rebuild"]["member"] == 1, j["rebuild"]
    assert j["rebuild"]["done"] > 0, j["rebuild"]
PYEOF
"$RAIDFS" rebuild "$mnt" --max-rate 0 >/dev/null
wait_member "$mnt" 1 online "$C/new1" || fail "promote: the rebuild onto the replacement did not finish: $("$RAIDFS" status "$mnt")"
wait $wpid || { cat "$C/w1.out" >&2; fail "promote: the workload saw an error"; }
grep -q "member 1 rebuilt onto '$C/new1' and verified" "$T/daemon.log" || fail "promote: no rebuild result"
same_tree "promote: tree differs"
rfs_unmount_wait "$mnt" || fail "promote: unmount"
newmem=$(echo " $mem " | sed "s| $C/d2 | $C/new1 |")
expect_rc 0 "$RAIDFS" check "$(join_members $newmem)"
# the rebuilt member holds the right bytes: without member 2 it is read
mv "$C/d3" "$C/d3.away"
rfs_mount "$(join_members $newmem)" "$mnt" || fail "promote: degraded mount without member 2"
same_tree "promote: tree differs without member 2: the rebuilt member is wrong"
rfs_unmount_wait "$mnt" || fail "promote: unmount"
log "ok: a member failing during its replacement: the copy became its rebuild target and kept $kept files"
rm -rf "$C"

# kill -9 after a promotion: the copy became member 1's rebuild target;
# the next mount (given the new directory) resumes it as a rebuild, and
# the rebuilt member holds the right bytes
new_raid5 pk
write_fileset "$mnt" "$C/ref" 5 4 30 100000 200000 || fail "promote kill: file set"
"$RAIDFS" rebuild "$mnt" --min-rate 1 --max-rate 1 >/dev/null
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new1"
wait_copy_saved || fail "promote kill: the copy saved no position"
"$RAIDFS" fail "$mnt" 1 >/dev/null
wait_promoted || fail "promote kill: no promotion"
"$RAIDFS" status --json "$mnt" | grep -q '"active": true' || fail "promote kill: the rebuild is not running at the kill"
rfs_kill "$mnt" || fail "promote kill: kill -9"
newmem=$(echo " $mem " | sed "s| $C/d2 | $C/new1 |")
: >"$T/daemon.log"
rfs_mount "$(join_members $newmem)" "$mnt" || fail "promote kill: mount after kill -9"
grep -q "resuming the rebuild of member 1 onto '$C/new1'" "$T/daemon.log" ||
	fail "promote kill: the rebuild did not resume: $(grep -i "rebuild\|replace" "$T/daemon.log" | tail -3)"
"$RAIDFS" rebuild "$mnt" --max-rate 0 >/dev/null
wait_member "$mnt" 1 online "$C/new1" || fail "promote kill: not rebuilt: $("$RAIDFS" status "$mnt")"
same_tree "promote kill: tree differs"
"$RAIDFS" fail "$mnt" 2 >/dev/null
same_tree "promote kill: tree differs without member 2: the rebuilt member is wrong"
rfs_unmount_wait "$mnt" || fail "promote kill: unmount"
log "ok: kill -9 after a promotion: resumed as a rebuild of the copy, data right"
rm -rf "$C"

# stopped between the commit's superblock writes and the removal of the
# old directory's superblock: put back the superblock the old directory
# had during the copy, change data after the commit, and give the old
# directory to the next mount instead of the new one
new_raid5 st
head -c 6000000 /dev/urandom > "$C/ref/big"
cp "$C/ref/big" "$mnt/big"
"$RAIDFS" rebuild "$mnt" --min-rate 1 --max-rate 1 >/dev/null
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new1"
cp "$C/d2/.raidfs/superblock" "$C/sb-during"
"$RAIDFS" rebuild "$mnt" --max-rate 0 >/dev/null
wait_member "$mnt" 1 online "$C/new1" || fail "stale: replacement did not finish: $("$RAIDFS" status "$mnt")"
[ -e "$C/d2/.raidfs/superblock" ] && fail "stale: the replaced directory still has a superblock"
cp "$C/sb-during" "$C/d2/.raidfs/superblock"
head -c 6000000 /dev/urandom > "$C/ref/big"
cp "$C/ref/big" "$mnt/big"
rfs_kill "$mnt" || fail "stale: kill -9"
# the new directory's disk is not there (or not mounted yet)
mv "$C/new1" "$C/new1.away"
rfs_mount "$(join_members $mem)" "$mnt" || fail "stale: mount with the old directory"
grep -q "'$C/d2' was member 1 until its replacement by '$C/new1' finished" "$T/daemon.log" ||
	fail "stale: the old directory was not refused: $("$RAIDFS" status "$mnt")"
expect_rc 1 "$RAIDFS" status "$mnt"
grep -q "degraded" "$OUT" || fail "stale: the array is not degraded without the new directory: $(cat "$OUT")"
same_tree "stale: tree differs with the old directory given: it was used"
rfs_unmount_wait "$mnt" || fail "stale: unmount"
mv "$C/new1.away" "$C/new1"
newmem=$(echo " $mem " | sed "s| $C/d2 | $C/new1 |")
expect_rc 0 "$RAIDFS" check "$(join_members $newmem)"
log "ok: the old directory of a finished replacement, with its superblock left behind, is not taken back"

# a failed member rebuilt onto another directory: its old directory, given
# again in a member list from before the rebuild, is not taken back - it
# missed the writes since, and the table's "online" and the missed-write
# log are the new one's.  'raidfs add' of it (after the new one failed
# too) resyncs it comparing every file's version, and brings over what
# changed without a new version (xattrs)
new_raid5 ol
head -c 300000 /dev/urandom >"$C/ref/f"
for i in 1 2 3 4 5 6; do head -c $((i * 20000)) /dev/urandom >"$C/ref/g$i"; done
cp "$C"/ref/* "$mnt/"
"$PY" -c 'import os, sys; os.setxattr(os.path.join(sys.argv[1], "g1"), "user.a", b"old")' "$mnt"
expect_rc 0 "$RAIDFS" fail "$mnt" 1
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new1"
wait_member "$mnt" 1 online "$C/new1" || fail "old list: not rebuilt: $("$RAIDFS" status "$mnt")"
# while new1 holds the slot: a file rewritten, one deleted, one renamed,
# an xattr changed
head -c 300000 /dev/urandom >"$C/ref/f"
cp "$C/ref/f" "$mnt/f"
rm "$C/ref/g5" "$mnt/g5"
mv "$C/ref/g6" "$C/ref/h6"
mv "$mnt/g6" "$mnt/h6"
"$PY" -c 'import os, sys; os.setxattr(os.path.join(sys.argv[1], "g1"), "user.a", b"new")' "$mnt"
rfs_unmount_wait "$mnt" || fail "old list: unmount"
mv "$C/new1" "$C/new1.away"	# and the new disk not there yet
rfs_mount "$(join_members $mem)" "$mnt" || fail "old list: mount with the old directory"
grep -q "'$C/d2' was member 1, which has been rebuilt onto '$C/new1' since: .* or resync this directory with 'raidfs add $mnt $C/d2' once mounted" "$T/daemon.log" ||
	fail "old list: the old directory was not refused, or the message does not say how to resync it: $(grep -a "'$C/d2' was member 1" "$T/daemon.log")"
"$RAIDFS" status "$mnt" | grep -q " $C/d2 " && fail "old list: the old directory serves: $("$RAIDFS" status "$mnt")"
same_tree "old list: tree differs with the old directory given"
# 'raidfs add': a re-add that compares every file's version
expect_rc 0 "$RAIDFS" add "$mnt" "$C/d2"
wait_member "$mnt" 1 online "$C/d2" || fail "old list: add: not back: $("$RAIDFS" status "$mnt")"
# f rewritten, h6 new by its name there; g1 to g4 kept (g1's xattr
# brought over)
grep -q "member 1 '$C/d2' re-added: 2 changed files resynced, 4 unchanged" "$T/daemon.log" ||
	fail "old list: add: not a re-add of the changed files: $(grep -a "re-add" "$T/daemon.log" | tail -n 3)"
same_tree "old list: tree differs after 'raidfs add' of the old directory"
[ "$("$PY" -c 'import os, sys; print(os.getxattr(sys.argv[1], "user.a").decode())' "$C/d2/g1")" = new ] ||
	fail "old list: add: the xattr changed meanwhile did not reach the old directory"
[ -e "$C/d2/g5" ] && fail "old list: add: a file deleted meanwhile is still on the old directory"
# the bytes it holds are right: another member failed, member 1's chunks
# are read from it
expect_rc 0 "$RAIDFS" fail "$mnt" 0
same_tree "old list: tree differs after the re-add with member 0 failed"
rfs_unmount_wait "$mnt" || fail "old list: unmount (old directory)"
# new1, back late, is not taken: the slot went on to d2
mv "$C/new1.away" "$C/new1"
rfs_mount "$(join_members $mem):$C/new1" "$mnt" || fail "old list: mount with new1 listed"
grep -q "'$C/new1' was member 1, which has been rebuilt onto '$C/d2' since" "$T/daemon.log" ||
	fail "old list: new1 was not refused after the slot went back to d2: $("$RAIDFS" status "$mnt")"
same_tree "old list: tree differs with new1 listed"
expect_rc 0 "$RAIDFS" add "$mnt" "$C/d1"
wait_member "$mnt" 0 online "$C/d1" || fail "old list: member 0 not back: $("$RAIDFS" status "$mnt")"
rfs_unmount_wait "$mnt" || fail "old list: unmount (new1 listed)"
expect_rc 0 "$RAIDFS" check "$(join_members $mem)"
log "ok: the old directory of a failed member rebuilt elsewhere is not taken back at mount, and 'raidfs add' resyncs it"

# kill -9 in the middle of such a re-add: the next mount goes on with it
# comparing every file's version (mode readd-all in the saved position),
# and the result is right
new_raid5 olk
for i in $(seq 1 40); do head -c 300000 /dev/urandom >"$C/ref/f$i"; cp "$C/ref/f$i" "$mnt/f$i"; done
expect_rc 0 "$RAIDFS" fail "$mnt" 1
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new1"
wait_member "$mnt" 1 online "$C/new1" || fail "old list kill: not rebuilt: $("$RAIDFS" status "$mnt")"
for i in $(seq 1 40); do head -c 300000 /dev/urandom >"$C/ref/f$i"; cp "$C/ref/f$i" "$mnt/f$i"; done
rfs_unmount_wait "$mnt" || fail "old list kill: unmount"
mv "$C/new1" "$C/new1.away"
rfs_mount "$(join_members $mem)" "$mnt" || fail "old list kill: mount with the old directory"
"$RAIDFS" rebuild "$mnt" --min-rate 1 --max-rate 1 >/dev/null
all_msg="re-add of member 1 from a directory it had before another"
n0=$(grep -c "$all_msg" "$T/daemon.log")
expect_rc 0 "$RAIDFS" add "$mnt" "$C/d2"
for _ in $(seq 1 100); do grep -qa "^after f" "$C/d2/.raidfs/rebuild" 2>/dev/null && break; sleep 0.1; done
grep -qa "^mode readd-all$" "$C/d2/.raidfs/rebuild" ||
	fail "old list kill: no readd-all position saved: $(cat "$C/d2/.raidfs/rebuild" 2>&1)"
rfs_kill "$mnt" || fail "old list kill: kill -9"
rfs_mount "$(join_members $mem)" "$mnt" || fail "old list kill: mount after kill -9 during the re-add"
"$RAIDFS" rebuild "$mnt" --max-rate 0 >/dev/null
wait_member "$mnt" 1 online "$C/d2" || fail "old list kill: member 1 not online: $("$RAIDFS" status "$mnt")"
grep -q "resuming the rebuild of member 1 onto '$C/d2' after 'f" "$T/daemon.log" ||
	fail "old list kill: the re-add was not resumed"
[ "$(grep -c "$all_msg" "$T/daemon.log")" = $((n0 + 2)) ] ||
	fail "old list kill: not resumed comparing every file's version"
same_tree "old list kill: tree differs after the resumed re-add"
expect_rc 0 "$RAIDFS" fail "$mnt" 2
same_tree "old list kill: tree differs after the resumed re-add with member 2 failed"
rfs_unmount_wait "$mnt" || fail "old list kill: unmount"
log "ok: kill -9 during the re-add of an old directory: resumed comparing every file's version, data right"
# the primary replaced again and again while a writer extends files and
# stats each one right after closing it, and reads some back: a stat or
# an open during a commit must find the open file's size and shards (the
# table of open files is keyed by inodes of the primary's directory, which
# the commit changes; before the fix a stat right after a close read the
# size on the members, not yet written: 5 runs in 8 failed)
new_raid5 pc
"$PY" - "$mnt" "$C/stop" >"$C/writer.out" 2>&1 <<'PYEOF' &
import os, random, sys
mnt, stop = sys.argv[1], sys.argv[2]
rng, ref, n = random.Random(7), {}, 0
try:
    while not os.path.exists(stop):
        n += 1
        name = "f%d" % rng.randrange(60)
        p = os.path.join(mnt, name)
        cur = ref.setdefault(name, b"")
        if len(cur) > 400000:
            os.truncate(p, 0)
            cur = ref[name] = b""
        data = os.urandom(rng.randrange(1, 20000))
        fd = os.open(p, os.O_WRONLY | os.O_CREAT)
        os.pwrite(fd, data, len(cur))
        os.close(fd)
        ref[name] = cur + data
        size = os.stat(p).st_size
        assert size == len(ref[name]), "op %d: %s: size %d after the close, written %d" % (n, name, size, len(ref[name]))
        if n % 7 == 0:
            name = rng.choice(sorted(ref))
            with open(os.path.join(mnt, name), "rb") as f:
                assert f.read() == ref[name], "op %d: %s: other bytes read back" % (n, name)
    for name in ref:
        with open(os.path.join(mnt, name), "rb") as f:
            assert f.read() == ref[name], "%s: other bytes read back at the end" % name
except (OSError, AssertionError) as e:
    print("writer: op %d: %r" % (n, e))
    sys.exit(1)
print("writer: %d operations" % n)
PYEOF
wpid=$!
"$RAIDFS" rebuild "$mnt" --max-rate 0 >/dev/null
prev=$C/d1
for i in $(seq 1 40); do
	kill -0 $wpid 2>/dev/null || break
	mkdir "$C/n$i"
	# (the previous replacement's thread may still be finishing)
	for _ in $(seq 1 50); do "$RAIDFS" replace "$mnt" 0 "$C/n$i" >"$C/rep.out" 2>&1 && break; sleep 0.1; done
	grep -q "keeps serving" "$C/rep.out" || fail "primary: replace $i: $(cat "$C/rep.out")"
	wait_member "$mnt" 0 online "$C/n$i" || fail "primary: replace $i did not finish: $("$RAIDFS" status "$mnt")"
	rm -rf "$prev"
	prev=$C/n$i
done
touch "$C/stop"
wait $wpid || fail "primary: $(cat "$C/writer.out") (during replacement $i of member 0)"
rfs_unmount_wait "$mnt" || fail "primary: unmount"
newmem=$(echo " $mem " | sed "s| $C/d1 | $prev |")
expect_rc 0 "$RAIDFS" check "$(join_members $newmem)"
log "ok: member 0 (the primary) replaced $i times under a writer that stats and reads back: $(cat "$C/writer.out")"
rm -rf "$C"

# the replacement cannot sync a shard, or cut one (faults injected on the
# new directory, named by its path): the replacement is given up with a
# message saying so, member 1 keeps serving, the fsync and the truncate
# succeed, nothing is lost, and a replacement started again completes
new_raid5 rf
head -c 24000000 /dev/urandom >"$C/ref/big"
head -c 100000 /dev/urandom >"$C/ref/small"
cp "$C/ref/big" "$C/ref/small" "$mnt/" || fail "replacement errors: write failed"
gone=$(grep -c "the replacement of member 1 was abandoned;" "$T/daemon.log")
for fault in fsync truncate; do
	"$RAIDFS" rebuild "$mnt" --min-rate 1 --max-rate 1 >/dev/null
	rm -rf "$C/new1" && mkdir -p "$C/new1"
	for _ in $(seq 1 50); do "$RAIDFS" replace "$mnt" 1 "$C/new1" >"$C/rep.out" 2>&1 && break; sleep 0.1; done
	grep -q "keeps serving" "$C/rep.out" || fail "replacement $fault error: replace: $(cat "$C/rep.out")"
	expect_rc 0 "$RAIDFS" inject "$mnt" "$C/new1" "$fault-error"
	grep -q "the replacement of member 1 '$C/new1': $fault-error" "$OUT" || fail "replacement $fault error: inject said: $(cat "$OUT")"
	"$RAIDFS" status "$mnt" | grep -q "injected faults on the replacement: $fault-error" ||
		fail "replacement $fault error: status does not show the fault: $("$RAIDFS" status "$mnt")"
	"$RAIDFS" status --json "$mnt" | "$PY" -c 'import json,sys; m=json.load(sys.stdin)["members"][1]; assert m["replacement_faults"].startswith(sys.argv[1] + "-error"), m' "$fault" ||
		fail "replacement $fault error: status --json does not show the fault"
	# (a file made now: its shard on the replacement is made with it)
	cp "$C/ref/small" "$C/ref/n-$fault"
	if [ "$fault" = fsync ]; then
		"$PY" -c 'import os,sys
fd = os.open(sys.argv[2], os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, open(sys.argv[1], "rb").read())
os.fsync(fd)' "$C/ref/n-$fault" "$mnt/n-$fault" || fail "replacement fsync error: the fsync failed (member 1 keeps serving)"
	else
		cp "$C/ref/n-$fault" "$mnt/n-$fault" || fail "replacement truncate error: write failed"
		truncate -s 5000 "$mnt/n-$fault" || fail "replacement truncate error: the truncate failed (member 1 keeps serving)"
		truncate -s 5000 "$C/ref/n-$fault"
	fi
	for _ in $(seq 1 100); do
		[ "$(grep -c "the replacement of member 1 was abandoned;" "$T/daemon.log")" -gt "$gone" ] && break
		sleep 0.1
	done
	grep -q "$fault failed on the replacement '$C/new1': .*the replacement is given up" "$T/daemon.log" ||
		fail "replacement $fault error: no message: $(tail -n 5 "$T/daemon.log")"
	gone=$((gone + 1))
	[ "$(grep -c "the replacement of member 1 was abandoned;" "$T/daemon.log")" = "$gone" ] ||
		fail "replacement $fault error: not abandoned"
	"$RAIDFS" status "$mnt" >"$C/st.txt"
	grep -q "being replaced" "$C/st.txt" && fail "replacement $fault error: still replacing: $(cat "$C/st.txt")"
	grep -q "^   1  online .*$C/d2 " "$C/st.txt" || fail "replacement $fault error: member 1 does not serve: $(cat "$C/st.txt")"
	same_tree "replacement $fault error: tree differs"
done
"$RAIDFS" rebuild "$mnt" --max-rate 0 >/dev/null
rm -rf "$C/new1" && mkdir -p "$C/new1"
for _ in $(seq 1 50); do "$RAIDFS" replace "$mnt" 1 "$C/new1" >"$C/rep.out" 2>&1 && break; sleep 0.1; done
wait_member "$mnt" 1 online "$C/new1" || fail "replacement errors: the replacement started again did not finish"
expect_rc 0 "$RAIDFS" fail "$mnt" 2
same_tree "replacement errors: tree differs after the replacement, with member 2 failed"
rfs_unmount_wait "$mnt" || fail "replacement errors: unmount"
log "ok: a replacement that cannot sync or cut a shard is given up; member 1 kept serving, nothing lost"
rm -rf "$C"
# a directory with less room than the member's files take (a 4 MiB
# tmpfs; member 1 holds about 10 MiB): turned down before the copy begins,
# in place (member 1 keeps serving) and for a failed member (it stays
# faulty), with the sizes in the status; the data is untouched
new_raid5 tiny
write_fileset "$mnt" "$C/ref" "$SEED" 2 15 1048576 1048576
mkdir -p "$C/small"
MOUNTS+=("$C/small")
mount -t tmpfs -o size=4m tmpfs "$C/small" || fail "too small: cannot mount a tmpfs"
small_refused() {	# WHAT: member 1's rebuild onto small/ was turned down
	local st
	for _ in $(seq 1 100); do
		st=$("$RAIDFS" status "$mnt")
		grep -q "being replaced\|rebuilding" <<<"$st" || break
		sleep 0.1
	done
	grep -q "'$C/small' has 4.0 MiB free, and member 1's files take about [0-9.]* MiB: too small to rebuild onto" \
		"$T/daemon.log" || fail "too small, $1: no message: $(tail -n 5 "$T/daemon.log")"
	grep -q "being replaced\|rebuilding" <<<"$st" && fail "too small, $1: still copying: $st"
	[ -z "$(find "$C/small" -name 'f*' -print -quit)" ] || fail "too small, $1: files were copied: $(find "$C/small" | head)"
	same_tree "too small, $1: tree differs"
}
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/small"
small_refused "in place"
"$RAIDFS" status "$mnt" | grep -q "^   1  online .*$C/d2 " || fail "too small: member 1 does not serve: $("$RAIDFS" status "$mnt")"
rm -rf "${C:?}/small/"* "$C/small/.raidfs"
expect_rc 0 "$RAIDFS" fail "$mnt" 1
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/small"
small_refused "failed member"
"$RAIDFS" status "$mnt" >"$C/st.txt"
grep -q "^   1  faulty .*$C/small " "$C/st.txt" || fail "too small: member 1 is not faulty: $(cat "$C/st.txt")"
grep -q "failed: '$C/small' has 4.0 MiB free" "$C/st.txt" || fail "too small: status does not say why: $(cat "$C/st.txt")"
rfs_unmount_wait "$mnt" || fail "too small: unmount"
umount "$C/small"
log "ok: a directory too small for the member is turned down before the copy begins"
rm -rf "$C"
exit 0
