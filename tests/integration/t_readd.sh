#!/bin/bash
# t_readd - incremental re-add and 'raidfs remove': a member is failed,
# the array keeps changing (writes, creates, renames, deletes, chmods),
# then 'raidfs add MOUNTPOINT OLDDIR' puts the same directory back while
# another workload runs.  Only the files changed while it was away may be
# resynced (the files nobody touched are counted as left alone), and
# afterwards the array survives losing a *different* member with every
# byte intact.  'raidfs remove' refuses an online member, takes out a
# faulty one and drops a spare.
. "$(dirname "$0")/lib.sh"
need_fuse


# new_array NAME: raid5 over 4 members in $T/NAME (sets C, mem, mnt), mounted
new_array() {
	C=$T/$1
	mkdir -p "$C/ref"
	mem=$(make_members 4 "$1/d")
	mnt=$C/mnt
	expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name "$1" $mem
	rfs_mount "$(join_members $mem)" "$mnt" || fail "$1: mount"
}
# put_file NAME BYTES: new random content, in the reference and the mount
put_file() {
	head -c "$2" /dev/urandom > "$C/ref/$1"
	cp "$C/ref/$1" "$mnt/$1"
}

# Exact count, and the log survives kill -9: 200 files, member 2 fails,
# 2 files (1%) change, the daemon is killed and mounted again (member 2 is
# stale and stays out), then member 2 is added back: exactly those 2 files
# are resynced, the 198 others are left alone.
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
grep -q "re-added: 2 changed files resynced, 198 unchanged" "$T/daemon.log" ||
	fail "exact: expected 2 resynced and 198 unchanged: $(grep -o 're-added: .*' "$T/daemon.log" | tail -n 1)"
"$RAIDFS" fail "$mnt" 0 >/dev/null
workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 || { cat "$C/cmp.out" >&2; fail "exact: tree differs"; }
rfs_unmount_wait "$mnt" || fail "exact: unmount"
log "ok: 1% changed, kill -9 while away: exactly 2 of 200 files resynced"
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
grep -q "member 1 '.*' re-added: " "$T/daemon.log" || fail "resume: it did not finish as a re-add"
"$RAIDFS" fail "$mnt" 3 >/dev/null
workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 || { cat "$C/cmp.out" >&2; fail "resume: tree differs"; }
rfs_unmount_wait "$mnt" || fail "resume: unmount"
log "ok: kill -9 during a re-add: resumed as a re-add, data right"
rm -rf "$C"

for level in raid5 raid6; do
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
	grep -q "fail it first" "$OUT" || fail "$level: remove of an online member: $(cat "$OUT")"
	expect_rc 0 "$RAIDFS" remove "$mnt" 3
	"$RAIDFS" status "$mnt" | grep -q "^ *3  removed " || fail "$level: member 3 not shown removed: $("$RAIDFS" status "$mnt")"
	mkdir -p "$C/new3"
	expect_rc 0 "$RAIDFS" replace "$mnt" 3 "$C/new3"
	wait_member "$mnt" 3 online || fail "$level: no rebuild into the removed slot: $("$RAIDFS" status "$mnt")"
	rfs_unmount_wait "$mnt" || fail "$level: unmount"
	log "ok: $level: re-add, then remove"
	rm -rf "$C"
done
exit 0
