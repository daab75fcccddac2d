#!/bin/bash
# t_readd - incremental re-add and 'raidfs remove': a member is failed,
# the array keeps changing (writes, creates, renames, deletes, chmods),
# then 'raidfs add MOUNTPOINT OLDDIR' puts the same directory back while
# another workload runs.  Only the files changed while it was away may be
# resynced (the files nobody touched are counted as left alone), and
# afterwards the array survives losing a *different* member with every
# byte intact.  'raidfs remove' refuses an online member, takes out a
# faulty one and drops a spare.  Last, a link made during a re-add must
# end up on the file's new shard on the returning member.
#
# Tiers: quick - the re-add under a workload and remove on raid6 only;
# long - raid5 and raid6.
. "$(dirname "$0")/lib.sh"
need_fuse


# wait_log PATTERN: until the daemon's log has a line matching PATTERN
# (the line saying how a re-add ended comes just after the member is
# online), at most 10 s
wait_log() {
	for _ in $(seq 1 100); do
		grep -q "$1" "$T/daemon.log" && return 0
		sleep 0.1
	done
	return 1
}
# readd WHAT DIR J: 'raidfs add' DIR back, wait until member J is online
# and the daemon has logged how (re-added, or back as it was)
readd() {
	expect_rc 0 "$RAIDFS" add "$mnt" "$2"
	wait_member "$mnt" "$3" online || fail "$1: member $3 not online: $("$RAIDFS" status "$mnt")"
	wait_log "member $3 '$2' \(re-added\|is back\)" || fail "$1: no line on how member $3 came back in the log"
}
# lose_and_compare WHAT J...: fail members J..., the tree must still be
# the reference's; unmount
lose_and_compare() {
	local what=$1 j
	shift
	for j in "$@"; do "$RAIDFS" fail "$mnt" "$j" >/dev/null || fail "$what: fail $j"; done
	workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 || { cat "$C/cmp.out" >&2; fail "$what: tree differs"; }
	rfs_unmount_wait "$mnt" || fail "$what: unmount"
}
# put_file NAME BYTES: new random content, in the reference and the mount
put_file() {
	head -c "$2" /dev/urandom > "$C/ref/$1"
	cp "$C/ref/$1" "$mnt/$1"
}

# Exact count, and the log survives kill -9: 200 files, member 2 fails,
# 2 files (1%) change, the daemon is killed and mounted again (member 2 is
# stale and stays out), then member 2 is added back: exactly those 2 files
# are resynced, found through the log without looking at the 198 others.
new_array exact
for i in $(seq 1 200); do put_file "f$i" $((3000 + i * 131)); done
"$RAIDFS" fail "$mnt" 2 >/dev/null || fail "exact: fail 2"
for i in 17 141; do
	head -c 5000 /dev/urandom | dd of="$C/ref/f$i" bs=1000 seek=1 conv=notrunc status=none
	dd if="$C/ref/f$i" of="$mnt/f$i" bs=1000 skip=1 seek=1 count=5 conv=notrunc status=none
done
rfs_kill "$mnt" || fail "exact: kill -9"
rfs_mount "$(join_members $mem)" "$mnt" || fail "exact: mount after kill -9"
expect_rc 1 "$RAIDFS" status "$mnt"
expect_rc 0 "$RAIDFS" add "$mnt" "$T/exact/d3"
for i in $(seq 1 300); do "$RAIDFS" status "$mnt" >/dev/null && break; sleep 0.1; done
expect_rc 0 "$RAIDFS" status "$mnt"
# only contents changed: the log's paths lead to the 2 files, no walk
wait_log "re-added: 2 changed files resynced, found through the missed-write log without a walk" ||
	fail "exact: expected 2 resynced without a walk: $(grep -o 're-added: .*' "$T/daemon.log" | tail -n 1)"
"$RAIDFS" fail "$mnt" 0 >/dev/null
workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 || { cat "$C/cmp.out" >&2; fail "exact: tree differs"; }
log "ok: 1% changed, kill -9 while away: exactly 2 of 200 files resynced, without a walk"

# A file opened while the member was away (and not written then) has no
# shard of the member open; the re-add must give it one, or writes made
# through that handle after the re-add miss the member: f9 is opened
# while member 2 is away and f10 written (so the re-add has work), the
# member comes back, then f9 is written through the handle opened before.
readd exact "$T/exact/d1" 0
"$RAIDFS" fail "$mnt" 2 >/dev/null
exec 7<>"$mnt/f9"
put_file f10 7777
readd "open while away" "$T/exact/d3" 2
head -c 20000 /dev/urandom > "$C/w9"
dd if="$C/w9" of="$C/ref/f9" bs=1000 seek=1 conv=notrunc status=none
dd if="$C/w9" bs=1000 seek=1 conv=notrunc status=none >&7
exec 7>&-
"$RAIDFS" fail "$mnt" 0 >/dev/null
workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 || { cat "$C/cmp.out" >&2; fail "open while away: tree differs"; }
readd "open while away" "$T/exact/d1" 0
log "ok: a file opened while the member was away is written on it after the re-add"

# A path in the log that leads elsewhere: f7 is opened, renamed to g7
# and a new f7 made while the array is optimal; member 2 fails and f7's
# old content is written through the open descriptor (the log records
# the path it was opened by, f7, which is now another file).  The re-add
# must notice and walk; every byte right after losing another member.
"$PY" - "$mnt" "$C/ref" "$RAIDFS" <<'PYEOF' || fail "stale path: the writer failed"
import os, subprocess, sys
mnt, ref, raidfs = sys.argv[1:4]
fd = os.open(os.path.join(mnt, "f7"), os.O_RDWR)
for d in (mnt, ref):
    os.rename(os.path.join(d, "f7"), os.path.join(d, "g7"))
    with open(os.path.join(d, "f7"), "wb") as f:
        f.write(b"a new file under the old name\n" * 100)
subprocess.run([raidfs, "fail", mnt, "2"], check=True, stdout=subprocess.DEVNULL)
data = os.urandom(9000)
os.pwrite(fd, data, 1500)
os.close(fd)
with open(os.path.join(ref, "g7"), "r+b") as f:
    f.seek(1500)
    f.write(data)
PYEOF
readd "stale path" "$T/exact/d3" 2
grep -o "member 2 '.*' re-added: .*" "$T/daemon.log" | tail -n 1 | grep -q "unchanged" ||
	fail "stale path: the re-add did not walk: $(grep -o 're-added: .*' "$T/daemon.log" | tail -n 1)"
lose_and_compare "stale path" 1
log "ok: a logged path that now leads to another file: the re-add walked, data right"
rm -rf "$C"

# Metadata of files changed while away (xattr set and removed, mode,
# times): those files are logged like written ones and their resync
# brings it all; no walk.  raid6, so that with members 0 and 1 failed
# the re-added member 2 serves the metadata.
# meta_away WHAT: files f1..f8 (f1 and f2 with user.a "old"), member 2
# failed, then xattrs set (f1), removed (f2) and added (f5), mode (f3)
# and times (f4) changed
meta_away() {
	for i in $(seq 1 8); do put_file "f$i" $((10000 + i * 3000)); done
	"$PY" -c 'import os, sys; [os.setxattr(os.path.join(sys.argv[1], f), "user.a", b"old") for f in ("f1", "f2")]' "$mnt"
	"$RAIDFS" fail "$mnt" 2 >/dev/null
	"$PY" - "$mnt" "$C/ref" <<'PYEOF' || fail "$1: changing metadata"
import os, sys
mnt, ref = sys.argv[1:3]
os.setxattr(os.path.join(mnt, "f1"), "user.a", b"new")
os.removexattr(os.path.join(mnt, "f2"), "user.a")
os.setxattr(os.path.join(mnt, "f5"), "user.b", b"added while away")
for d in (mnt, ref):
    os.chmod(os.path.join(d, "f3"), 0o600)
os.utime(os.path.join(mnt, "f4"), ns=(1000000000123456789, 1000000000123456789))
PYEOF
}
# meta_served WHAT: with members 0 and 1 failed, member 2 serves what
# meta_away changed, and the tree is the reference's; unmount
meta_served() {
	"$RAIDFS" fail "$mnt" 0 >/dev/null
	"$RAIDFS" fail "$mnt" 1 >/dev/null
	"$PY" - "$mnt" "$1" <<'PYEOF' || fail "$1: the re-added member does not hold the metadata changed while it was away"
import os, sys
m, what = sys.argv[1:3]
p = lambda f: os.path.join(m, f)
bad = []
if os.getxattr(p("f1"), "user.a") != b"new": bad.append("f1 user.a")
if "user.a" in os.listxattr(p("f2")): bad.append("f2 user.a still there")
if os.getxattr(p("f5"), "user.b") != b"added while away": bad.append("f5 user.b")
if os.stat(p("f4")).st_mtime_ns != 1000000000123456789: bad.append("f4 mtime %d" % os.stat(p("f4")).st_mtime_ns)
if bad:
    print(what + ":", ", ".join(bad))
    sys.exit(1)
PYEOF
	lose_and_compare "$1"
}
new_array meta raid6
meta_away meta
readd meta "$T/meta/d3" 2
grep -q "member 2 '$T/meta/d3' re-added: 5 changed files resynced, found through the missed-write log without a walk" "$T/daemon.log" ||
	fail "meta: expected 5 files resynced without a walk: $(grep -o 're-added: .*' "$T/daemon.log" | tail -n 1)"
meta_served meta
log "ok: xattrs, mode and times changed while away: 5 files resynced without a walk, all on the member"
rm -rf "$C"

# A log that cannot be read at the re-add (here: every member's log
# directory for member 2 replaced by a file, after the changes were
# logged) must not pass for an empty one: every file is compared, the
# changes (metadata as in "meta", contents, a rename, a new file) reach
# the member, and with members 0 and 1 failed member 2 serves them.
new_array unread raid6
meta_away unread
put_file f6 12000
put_file f7 90000
for d in "$mnt" "$C/ref"; do mv "$d/f8" "$d/f8.moved"; done
put_file f9 5000
for d in d1 d2 d4; do
	[ -d "$C/$d/.raidfs/missed/2" ] || fail "unread: no log for member 2 on $d"
	rm -rf "$C/$d/.raidfs/missed/2"
	echo "not a directory" >"$C/$d/.raidfs/missed/2"
done
readd unread "$C/d3" 2
grep -q "re-add of member 2: cannot read its missed-write log" "$T/daemon.log" ||
	fail "unread: the unreadable log was not reported: $(grep -i "missed" "$T/daemon.log" | tail -n 2)"
meta_served unread
log "ok: a missed-write log that cannot be read: every file compared, changes on the member"
rm -rf "$C"

# The log is read from every member in service: raid6, member 2 fails,
# files change, member 0 fails and is rebuilt onto a new directory (which
# holds none of member 2's log).  After a remount member 0 (the rebuilt
# one) serves the namespace; member 2 must still be seen as having missed
# the changes, and after its re-add the array survives losing 1 and 3.
new_array union raid6
for i in $(seq 1 20); do put_file "f$i" $((20000 + i * 977)); done
"$RAIDFS" fail "$mnt" 2 >/dev/null
for i in 3 11; do put_file "f$i" 30000; done
"$RAIDFS" fail "$mnt" 0 >/dev/null
mkdir -p "$C/new0"
expect_rc 0 "$RAIDFS" replace "$mnt" 0 "$C/new0"
wait_member "$mnt" 0 online || fail "union: member 0 not rebuilt: $("$RAIDFS" status "$mnt")"
rfs_unmount_wait "$mnt" || fail "union: unmount"
set -- $mem
rfs_mount "$C/new0:$2:$3:$4" "$mnt" || fail "union: mount with the rebuilt member 0"
readd union "$3" 2
grep -q "member 2 '$3' re-added: 2 changed files resynced" "$T/daemon.log" ||
	fail "union: member 2 was not resynced: $(grep -E "member 2 .*(re-added|back|taken back)" "$T/daemon.log" | tail -n 2)"
lose_and_compare union 1 3
log "ok: a member rebuilt while another was away: the returning one is still resynced"
rm -rf "$C"

# A member that fails in the middle of a namespace operation missed that
# operation: member 2 lives on its own tmpfs, remounted read-only, so the
# rename of f2 succeeds on the others and fails on it (EROFS fails it).
# Nothing else changes; when it is writable again and added back it must
# be resynced (not taken back as it is), and with member 0 failed g2
# reads right.
C=$T/inflight
mkdir -p "$C/ref" "$C/t3"
mount -t tmpfs -o size=64m tmpfs "$C/t3" || fail "inflight: tmpfs"
mkdir "$C/t3/d3" "$C/d1" "$C/d2"
mnt=$C/mnt
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name inflight "$C/d1" "$C/d2" "$C/t3/d3"
rfs_mount "$C/d1:$C/d2:$C/t3/d3" "$mnt" || fail "inflight: mount"
MOUNTS+=("$C/t3")	# unmounted after the array by the cleanup
for i in $(seq 1 5); do put_file "f$i" $((40000 + i * 1000)); done
# (the daemon lets go of the files written last when their releases come
# in, after the close: a remount read-only meanwhile finds them busy)
for _ in $(seq 1 50); do mount -o remount,ro "$C/t3" 2>/dev/null && break; sleep 0.1; done
findmnt -no OPTIONS "$C/t3" | grep -q '^ro' || fail "inflight: remount ro"
mv "$mnt/f2" "$mnt/g2" || fail "inflight: rename"
mv "$C/ref/f2" "$C/ref/g2"
wait_member "$mnt" 2 faulty || fail "inflight: member 2 not failed by the rename: $("$RAIDFS" status "$mnt")"
mount -o remount,rw "$C/t3" || fail "inflight: remount rw"
readd inflight "$C/t3/d3" 2
grep -q "member 2 '$C/t3/d3' re-added" "$T/daemon.log" ||
	fail "inflight: member 2 was taken back without a resync: $(grep "member 2" "$T/daemon.log" | tail -n 2)"
lose_and_compare inflight 0
umount "$C/t3" || fail "inflight: umount of the tmpfs"
log "ok: a member failed by a namespace operation is resynced when it comes back"
rm -rf "$C"

# A change that cannot be recorded for the absent member is refused:
# three members on tmpfs mounts without free inodes (filled with files),
# member 2 failed; a rename or a write would need a marker file (an
# inode) and gets ENOSPC instead of passing the member by unrecorded.
# Nothing changed, so member 2 comes back as it was, and with member 0
# failed the tree is the reference's.
C=$T/full
mkdir -p "$C/ref"
for i in 1 2 3; do
	mkdir -p "$C/t$i"
	mount -t tmpfs -o size=64m,nr_inodes=48 tmpfs "$C/t$i" || fail "full: tmpfs"
	MOUNTS+=("$C/t$i")	# after the array's mount: the cleanup unmounts in order
	mkdir "$C/t$i/d"
done
mnt=$C/mnt
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name full "$C/t1/d" "$C/t2/d" "$C/t3/d"
rfs_mount "$C/t1/d:$C/t2/d:$C/t3/d" "$mnt" || fail "full: mount"
# the array's mount point goes first, before the tmpfs under it
rest=()
for m in "${MOUNTS[@]}"; do [ "$m" = "$mnt" ] || rest+=("$m"); done
MOUNTS=("$mnt" "${rest[@]}")
n=0
while [ $n -lt 100 ] && head -c 3000 /dev/urandom > "$C/ref/f$n" && cp "$C/ref/f$n" "$mnt/f$n" 2>/dev/null; do
	n=$((n + 1))
done
# the create or the first write ran out of inodes: either no file, or
# an empty one (a new file's checksum files are made by its first
# write), never a file with bytes no record covers
if [ -e "$mnt/f$n" ]; then
	[ -s "$mnt/f$n" ] && fail "full: the file whose write failed has bytes"
	: >"$C/ref/f$n"
else
	rm -f "$C/ref/f$n"
fi
[ $n -gt 5 ] && [ $n -lt 100 ] || fail "full: $n files before the members ran out of inodes"
# the members' last inodes taken too, beside the member directories: a
# new file gets a checksum file only on the members its stripe reaches,
# so the one that ran out first may leave others a few
for i in 1 2 3; do
	k=0
	while touch "$C/t$i/fill$k" 2>/dev/null; do k=$((k + 1)); done
done
"$RAIDFS" fail "$mnt" 2 >/dev/null
mv "$mnt/f1" "$mnt/g1" 2>"$C/mv.err" && fail "full: a rename went ahead though nothing could record it for member 2"
grep -q "No space left" "$C/mv.err" || fail "full: the refused rename said: $(cat "$C/mv.err")"
head -c 100 /dev/urandom | dd of="$mnt/f2" conv=notrunc status=none 2>"$C/dd.err" &&
	fail "full: a write went ahead though nothing could record it for member 2"
grep -q "cannot record" "$T/daemon.log" || fail "full: nothing in the log about the unrecorded change"
# room again (the superblocks need it to record the member's return)
for i in 1 2 3; do mount -o remount,nr_inodes=4096 "$C/t$i" || fail "full: remount"; done
readd full "$C/t3/d" 2
lose_and_compare full 0
for i in 1 2 3; do umount "$C/t$i" || fail "full: umount of a tmpfs"; done
log "ok: with no room to record a change for the absent member, the change is refused ($n files filled the inodes)"
rm -rf "$C"

# kill -9 in the middle of a re-add: the next mount goes on with it as a
# re-add (the mode is in the saved position), and the result is right
new_array resume
for i in $(seq 1 40); do put_file "f$i" 300000; done
"$RAIDFS" fail "$mnt" 1 >/dev/null
for i in $(seq 1 40); do put_file "f$i" 300000; done
"$RAIDFS" rebuild "$mnt" --min-rate 1 --max-rate 1 >/dev/null
expect_rc 0 "$RAIDFS" add "$mnt" "$T/resume/d2"
sleep 1.5
"$RAIDFS" status "$mnt" | grep -q "^re-add: " || fail "resume: no re-add running: $("$RAIDFS" status "$mnt")"
rfs_kill "$mnt" || fail "resume: kill -9"
rfs_mount "$(join_members $mem)" "$mnt" || fail "resume: mount after kill -9 during the re-add"
"$RAIDFS" rebuild "$mnt" --max-rate 0 >/dev/null
wait_member "$mnt" 1 online || fail "resume: member 1 not online: $("$RAIDFS" status "$mnt")"
grep -q "resuming the rebuild of member 1" "$T/daemon.log" || fail "resume: the re-add was not resumed"
wait_log "member 1 '.*' re-added: " || fail "resume: it did not finish as a re-add"
"$RAIDFS" fail "$mnt" 3 >/dev/null
workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 || { cat "$C/cmp.out" >&2; fail "resume: tree differs"; }
rfs_unmount_wait "$mnt" || fail "resume: unmount"
log "ok: kill -9 during a re-add: resumed as a re-add, data right"
rm -rf "$C"

for level in $(tier_pick raid6 "raid5 raid6"); do
	C=$T/$level
	mkdir -p "$C/ref/work"
	mem=$(make_members 5 "$level/d")
	mnt=$C/mnt
	expect_rc 0 "$RAIDFS" create --level $level --chunk 4K --name ra $mem
	rfs_mount "$(join_members $mem)" "$mnt" || fail "$level: mount"
	# the workloads run in work/; quiet/ holds files nobody touches while
	# the member is away
	mkdir "$mnt/work" "$mnt/quiet" "$C/ref/quiet"
	for i in $(seq 1 12); do
		head -c $((100000 + i * 7919)) /dev/urandom > "$C/ref/quiet/q$i"
		cp "$C/ref/quiet/q$i" "$mnt/quiet/q$i"
	done
	workload run --mnt "$mnt/work" --ref "$C/ref/work" --seed "$SEED" --ops 200 --chunk 4096 \
		--max-size 200000 >"$C/w0.out" 2>&1 || { cat "$C/w0.out" >&2; fail "$level: first workload"; }
	nfiles=$(find "$C/ref" -type f | wc -l)
	# a spare on an optimal array waits; remove drops it and leaves its
	# directory empty
	mkdir -p "$C/spare"
	expect_rc 0 "$RAIDFS" add "$mnt" "$C/spare"
	"$RAIDFS" status "$mnt" | grep -q "spare .*$C/spare" || fail "$level: spare not listed"
	expect_rc 0 "$RAIDFS" remove "$mnt" "$C/spare"
	"$RAIDFS" status "$mnt" | grep -q "spare .*$C/spare" && fail "$level: spare still listed after remove"
	[ -z "$(ls -A "$C/spare")" ] || fail "$level: removed spare's directory is not empty: $(ls -A "$C/spare")"

	ls -i "$T/$level/d2/quiet" > "$C/ino-before"
	"$RAIDFS" fail "$mnt" 1 >/dev/null || fail "$level: fail 1"
	workload run --mnt "$mnt/work" --ref "$C/ref/work" --seed $((SEED + 1)) --ops 150 --chunk 4096 \
		--max-size 200000 --name-prefix a >"$C/w1.out" 2>&1 || { cat "$C/w1.out" >&2; fail "$level: workload while away"; }
	expect_rc 1 "$RAIDFS" status "$mnt"
	grep -q "raidfs add $mnt $T/$level/d2" "$OUT" ||
		fail "$level: status does not say how to re-add: $(cat "$OUT")"

	# back, while users keep working
	workload run --mnt "$mnt/work" --ref "$C/ref/work" --seed $((SEED + 2)) --ops 300 --chunk 4096 \
		--max-size 200000 --name-prefix b >"$C/w2.out" 2>&1 &
	wpid=$!
	expect_rc 0 "$RAIDFS" add "$mnt" "$T/$level/d2"
	grep -q "member 1 re-added" "$OUT" || fail "$level: add of the old member did not re-add it: $(cat "$OUT")"
	wait_member "$mnt" 1 online || fail "$level: member 1 not online after the re-add: $("$RAIDFS" status "$mnt")"
	wait $wpid || { cat "$C/w2.out" >&2; fail "$level: workload error during the re-add"; }
	expect_rc 0 "$RAIDFS" status "$mnt"
	line=$(grep -o "re-added: [0-9]* changed files\? resynced, [0-9]* unchanged" "$T/daemon.log" | tail -n 1)
	[ -n "$line" ] || fail "$level: no re-add summary in the log"
	read -r _ resynced _ _ _ unchanged _ <<<"$line"
	[ "$unchanged" -ge 12 ] || fail "$level: the re-add resynced files nobody touched ($line)"
	# the quiet files were not rewritten: same inodes on the old member
	ls -i "$T/$level/d2/quiet" > "$C/ino-after"
	cmp -s "$C/ino-before" "$C/ino-after" || fail "$level: the re-add recreated quiet files"
	log "$level: $line ($nfiles files before the failure)"

	# the re-added member holds the right bytes: lose others instead
	"$RAIDFS" fail "$mnt" 3 >/dev/null || fail "$level: fail 3"
	[ $level = raid6 ] && { "$RAIDFS" fail "$mnt" 0 >/dev/null || fail "$level: fail 0"; }
	workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 ||
		{ cat "$C/cmp.out" >&2; fail "$level: tree differs without members 3 (and 0) after re-adding 1"; }

	# remove: not an online member; a faulty one, whose slot then takes
	# a replacement
	expect_rc 1 "$RAIDFS" remove "$mnt" 2
	grep -q "fail it first" "$ERR" || fail "$level: remove of an online member (stderr): $(cat "$ERR")"
	expect_rc 0 "$RAIDFS" remove "$mnt" 3
	"$RAIDFS" status "$mnt" | grep -q "^ *3  removed " || fail "$level: member 3 not shown removed: $("$RAIDFS" status "$mnt")"
	mkdir -p "$C/new3"
	expect_rc 0 "$RAIDFS" replace "$mnt" 3 "$C/new3"
	wait_member "$mnt" 3 online || fail "$level: no rebuild into the removed slot: $("$RAIDFS" status "$mnt")"
	rfs_unmount_wait "$mnt" || fail "$level: unmount"
	log "ok: $level: re-add, then remove"
	rm -rf "$C"
done
# a link made during a re-add, from a name the walk has not reached yet
# to a name behind it: on the returning member the old name still leads
# to the file's old shard (its other name was renamed while the member
# was away, so the walk gave the file a new shard), so the new name must
# be looked at again, as a rename's is; without that it kept the old
# shard, and with another member failed read the old bytes (a soak of
# t_return found it: "content differs")
new_array linkre
mkdir "$mnt/b" "$mnt/a" "$mnt/d" "$C/ref/b" "$C/ref/a" "$C/ref/d"
head -c 65536 /dev/urandom >"$C/ref/b/f"; cp "$C/ref/b/f" "$mnt/b/f"
ln "$mnt/b/f" "$mnt/y"
for i in $(seq 10 39); do head -c 200000 /dev/urandom >"$C/ref/d/f$i"; cp "$C/ref/d/f$i" "$mnt/d/f$i"; done
expect_rc 0 "$RAIDFS" fail "$mnt" 3
mkdir "$mnt/c" "$C/ref/c"
mv "$mnt/b/f" "$mnt/c/f"; rm "$C/ref/b/f"
head -c 65536 /dev/urandom >"$C/ref/c/f"; cp "$C/ref/c/f" "$mnt/c/f"; ln -f "$C/ref/c/f" "$C/ref/y"
for i in $(seq 10 39); do	# changed too: the re-add takes its time over them
	echo "changed $i" | dd of="$mnt/d/f$i" conv=notrunc status=none
	echo "changed $i" | dd of="$C/ref/d/f$i" conv=notrunc status=none
done
"$RAIDFS" rebuild "$mnt" --min-rate 1 --max-rate 1 >/dev/null
expect_rc 0 "$RAIDFS" add "$mnt" "$C/d4"
# (paused in d/: past a/, before y)
pause_rebuild_at "$mnt" '^d/f[1-3][0-9]$' >/dev/null ||
	fail "linkre: the re-add was never seen in d/: $("$RAIDFS" status "$mnt")"
ln "$mnt/y" "$mnt/a/new" || fail "linkre: link during the re-add"
ln "$C/ref/y" "$C/ref/a/new"
"$RAIDFS" rebuild "$mnt" --max-rate 0 >/dev/null
expect_rc 0 "$RAIDFS" rebuild "$mnt" resume
wait_member "$mnt" 3 online || fail "linkre: member 3 not back: $("$RAIDFS" status "$mnt")"
[ "$(stat -c %i "$C/d4/a/new")" = "$(stat -c %i "$C/d4/y")" ] ||
	fail "linkre: on the re-added member a/new and y are different files ($(stat -c '%n %i %h %s' "$C/d4/a/new" "$C/d4/y" | tr '\n' ' '))"
expect_rc 0 "$RAIDFS" fail "$mnt" 0
workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 ||
	{ cat "$C/cmp.out" >&2; fail "linkre: tree differs with member 0 failed after the re-add"; }
rfs_unmount_wait "$mnt" || fail "linkre: unmount"
log "ok: a link made during a re-add from a name the walk had not reached: on the new shard"

# A link made while the member was away, to a file not otherwise changed:
# the re-add leaves the file's shard alone but must link the new name to
# it, not give that name a shard of its own (then writes through one name
# missed the other's shard on the member, and with another member failed
# the file read as an I/O error: a t_return run found it)
new_array linkaway
mkdir "$mnt/a" "$mnt/z" "$C/ref/a" "$C/ref/z"
head -c 9000 /dev/urandom >"$C/ref/a/f"; cp "$C/ref/a/f" "$mnt/a/f"
expect_rc 0 "$RAIDFS" fail "$mnt" 3
ln "$mnt/a/f" "$mnt/z/new" && ln "$C/ref/a/f" "$C/ref/z/new" || fail "linkaway: link while away"
readd linkaway "$C/d4" 3
[ "$(stat -c %i "$C/d4/a/f")" = "$(stat -c %i "$C/d4/z/new")" ] ||
	fail "linkaway: on the re-added member a/f and z/new are different files ($(stat -c '%n %i %h %s' "$C/d4/a/f" "$C/d4/z/new" | tr '\n' ' '))"
head -c 20000 /dev/urandom | tee -a "$C/ref/z/new" >>"$mnt/z/new"
lose_and_compare linkaway 0
log "ok: a link made while the member was away: linked to the file's shard on it by the re-add"
exit 0
