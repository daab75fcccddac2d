#!/bin/bash
# t_cache_crash.sh - the cache keeps every acknowledged write across a crash.
#
# kill -9 of the daemon during write-back writes, with
#   bbu=shm          the cache survives in /dev/shm and is replayed;
#   bbu=file:PATH    the shared memory is also wiped (a power loss): the
#                    log on "disk" alone must bring every write back.
# Two writers (workload.py crashwrite --ack) record every write that
# returned; after the next mount every acknowledged byte must be there
# (crashverify), and after unmount `raidfs check` must be clean.  A long
# cache_age keeps lines dirty, so the kill finds the cache full of data.
#
# Write hole: existing files overwritten through bbu=file, kill -9 during
# their destage: the replay of the log alone makes them consistent (no
# parity resync, the daemon says so), `raidfs check` is clean.
#
# Log order: two writers of the same bytes through two hard links at the
# same moment; after kill -9 the replay must give what the file read
# before (the records in the order the cache took the writes).
#
# Preserved cache: kill -9 with dirty lines, then two raid5 members go
# away: the mount comes up offline and says the cache is preserved (status
# action line, nothing served); when the members return the cache is
# written and the files are served again, every acknowledged byte there.
#
# Durable before forgotten: the destage writes the members without syncing
# them (member_sync=flush), so the file log may forget a line's records
# only after the members were synced: traced with strace, a syncfs of the
# members must come between the destage's writes and the header write
# that moves the log's tail past them (a power loss in between would
# otherwise lose acknowledged writes that the log no longer holds); so
# must come the removal of the file's dirty-log mark.
#
# The log fails (bbu=file, its fdatasync made to fail): write-back ends
# as when a battery fails; no write or truncate sees an error; the log is
# retired once the members hold what it had, and after kill -9 the next
# mount drops its records - replayed, they would put older bytes over the
# writes made since (also when a member away at the retirement is back).
# A line written out before its write's record is durable marks its file
# for a resync.  A log that fills its own disk ends write-back too, also
# when only a guard slot's write meets the full disk.
#
# Quick tier: the kill -9 rounds on raid6 with bbu=file only (the power
# loss: the log alone); long tier: also raid5 with bbu=shm.
#
# Environment: SEED, ITERS (crash iterations per configuration, 3).
. "$(dirname "$0")/lib.sh"
need_fuse
need_python
RANDOM=$SEED
ITERS=${ITERS:-3}

json_cache_val() {	# FILE KEY
	"$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["cache"][sys.argv[2]])' "$1" "$2"
}
json_cache() {
	"$RAIDFS" status --json "$1" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["cache"][sys.argv[1]])' "$2"
}

# crash_round CFGDIR MEMBERS MNT OPTS IT: write, kill, (wipe), mount, verify
crash_round() {
	local C=$1 members=$2 mnt=$3 opts=$4 it=$5 wipe=$6 w k st
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: iteration $it: mount failed"
	for k in $(seq 1 $((it - 1))); do
		for st in "$C"/state."$k".*; do
			workload crashverify --mnt "$mnt/i$k-${st##*.}" --state "$st" >"$C/verify.out" 2>&1 ||
				{ cat "$C/verify.out" >&2; fail "$what: iteration $k: acknowledged data lost after the replay"; }
		done
	done
	local pids=()
	for w in 1 2; do
		workload crashwrite --ack --mnt "$mnt/i$it-$w" --state "$C/state.$it.$w" \
			--seed $((SEED + 100 * it + w)) --chunk 16384 --max-size 400000 \
			>"$C/cw.$it.$w.out" 2>&1 &
		pids+=($!)
	done
	# (both writers at work on the mount before the kill: on a loaded
	# machine a writer that starts late would write into the directory
	# under the lazily unmounted mount point for good)
	for w in 1 2; do
		for _ in $(seq 1 300); do
			grep -q '"t": *"s"' "$C/state.$it.$w" 2>/dev/null && break
			sleep 0.1
		done
	done
	sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.5 + (r % 100) / 100 }')"
	local dirty
	dirty=$(json_cache "$mnt" dirty_bytes)
	rfs_kill "$mnt" || fail "$what: kill failed"
	for p in "${pids[@]}"; do wait "$p"; done
	[ "$wipe" = 1 ] && rm -f /dev/shm/raidfs-"$uuid"*
	log "$what: iteration $it: killed with $dirty dirty bytes in the cache"
	TOTAL_DIRTY=$((TOTAL_DIRTY + dirty))
}

TOTAL_DIRTY=0
n=0
CONFIGS=("raid5 4 bbu=shm 0" "raid6 5 bbu=file:@LOG@ 1")
long_tier || CONFIGS=("raid6 5 bbu=file:@LOG@ 1")
for cfg in "${CONFIGS[@]}"; do
	n=$((n + 1))
	read -r level width bbu wipe <<<"$cfg"
	C=$T/c$n
	mkdir -p "$C"
	bbu=${bbu//@LOG@/$C/cache.log}
	opts="write_policy=writeback,$bbu,cache_size=8M,cache_age=5000"
	what="$level $bbu"
	mem=$(make_members "$width" "c$n/d")
	members=$(join_members $mem)
	mnt=$C/mnt
	expect_rc 0 "$RAIDFS" create --level "$level" --chunk 16K $mem
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
	uuid=$("$RAIDFS" status --json "$mnt" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["uuid"])')
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	for it in $(seq 1 "$ITERS"); do
		crash_round "$C" "$members" "$mnt" "$opts" "$it" "$wipe"
	done
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: final mount failed"
	for k in $(seq 1 "$ITERS"); do
		for st in "$C"/state."$k".*; do
			workload crashverify --mnt "$mnt/i$k-${st##*.}" --state "$st" >"$C/verify.out" 2>&1 ||
				{ cat "$C/verify.out" >&2; fail "$what: iteration $k: acknowledged data lost after the replay"; }
		done
	done
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	expect_rc 0 "$RAIDFS" check "$members"
	[ -e /dev/shm/raidfs-"$uuid".cache ] && fail "$what: the shm cache is left behind after a clean unmount"
	log "ok: $what: $ITERS kill -9 rounds, every acknowledged write present, check clean"
done
[ "$TOTAL_DIRTY" -gt 0 ] || fail "the kills never found dirty data in the cache: the test proves nothing"

# log_array NAME WHAT CACHEOPTS [LOGFS_SIZE]: a raid5 over 4 members in
# $T/NAME (C, mem, members, mnt, what, opts set), write-back through the
# file log $C/cache.log with CACHEOPTS, mounted; with LOGFS_SIZE the log
# is on a tmpfs of that size of its own, $C/logfs
log_array() {
	C=$T/$1
	local log=$C/cache.log
	mkdir -p "$C"
	if [ -n "${4:-}" ]; then
		mkdir -p "$C/logfs"
		MOUNTS+=("$C/logfs")
		mount -t tmpfs -o size="$4" tmpfs "$C/logfs" || fail "$2: cannot mount a tmpfs"
		log=$C/logfs/cache.log
	fi
	mem=$(make_members 4 "$1/d")
	members=$(join_members $mem)
	mnt=$C/mnt
	what=$2
	opts="write_policy=writeback,bbu=file:$log,$3"
	expect_rc 0 "$RAIDFS" create --level raid5 --chunk 16K $mem
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
}

# wait_retired: the failed log of the array in $C was retired (at most 10 s)
wait_retired() {
	for _ in $(seq 1 100); do grep -q "cache log '$C/cache.log': retired" "$T/daemon.log" && return 0; sleep 0.1; done
	fail "$what: the log was not retired"
}

# kill_remount: kill -9 of the daemon of $mnt (a file held open on fd 9
# is let go after it), and the array mounted again with $opts
kill_remount() {
	rfs_kill "$mnt" || fail "$what: kill failed"
	exec 9<&-
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount after the kill failed"
}

# unmount_clean MSG: $mnt unmounted, the offline check of $members clean,
# and "ok: $what: MSG" said
unmount_clean() {
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	expect_rc 0 "$RAIDFS" check "$members"
	log "ok: $what: $1"
}

# overwritten_files NAME WHAT N: log_array NAME WHAT with a 64 MiB cache
# that keeps lines dirty, twelve files written and the array mounted again,
# then N overwrites of them (reference in $C/ref), dirty in the cache;
# OPTS: more mount options
overwritten_files() {
	log_array "$1" "$2" cache_size=64M,cache_age=600000${4:+,$4}
	mkdir "$C/ref"
	twelve_files "$C/ref" "$mnt" || fail "$what: write failed"
	rfs_unmount "$mnt" || fail "$what: unmount failed"
	rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
	overwrite_files "$C/ref" "$mnt" "$3"
	[ "$(json_cache "$mnt" dirty_bytes)" -gt 0 ] || fail "$what: nothing dirty before the kill"
}

# ------------------------------------------------- write hole, bbu=file
# Files that exist and are overwritten in place through the file log: a
# kill -9 in the middle of their destage leaves stripes whose parity does
# not match; replaying the log must make them consistent without a parity
# resync (the daemon says how many it so repaired), the data must be the
# acknowledged one and the offline check clean.  Two destage threads: with
# one a member, every file can be out by the time the first is.
overwritten_files wh "write hole" 60 destage_threads=2
"$RAIDFS" status --json "$mnt" >"$C/before.json"
# a slow member makes the destage take seconds: kill in the middle of it,
# so some stripes have new data on some members and old on others
"$RAIDFS" inject "$mnt" 2 latency 200 >/dev/null || fail "$what: inject failed"
"$RAIDFS" cache "$mnt" flush >/dev/null 2>&1 &
# kill as soon as the first file is out (the others are on their way;
# each of its lines waits for the slow member several times: its data,
# its parity and its checksum records, so on a busy machine the first
# can take long)
for _ in $(seq 1 600); do
	[ "$(json_cache "$mnt" destaged_bytes)" -gt 0 ] && break
	sleep 0.1
done
d2=$(json_cache "$mnt" dirty_bytes)
rfs_kill "$mnt" || fail "$what: kill failed"
wait
[ "$d2" -gt 0 ] || fail "$what: the destage was over before the kill: the test proves nothing"
d1=$(json_cache_val "$C/before.json" dirty_bytes)
[ "$d2" -lt "$d1" ] || fail "$what: the destage had not started at the kill ($d1 -> $d2 dirty bytes)"
rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount after the kill failed"
for i in $(seq 1 12); do
	cmp "$C/ref/f$i" "$mnt/f$i" || fail "$what: f$i differs after the replay"
done
grep -q "changed only through the cache: its replay made them consistent, no parity resync" "$T/daemon.log" ||
	fail "$what: the overwritten files were resynced (or not reported): the log should have sufficed"
unmount_clean "overwrites replayed from the file log, consistent without a parity resync, check clean"

# ------------------------------------------------- no log, or the wrong one
# kill -9 with writes in the log, then a mount with another (new) log: the
# files only the lost cache changed get their parity resync, and the
# daemon says the cache was not found.  Once this run wrote through the
# new log, the old one - still holding records, older than the members
# now - is refused, saying what to do.
overwritten_files wl "wrong log" 30
rfs_kill "$mnt" || fail "$what: kill failed"
other="write_policy=writeback,bbu=file:$C/other.log,cache_size=64M,cache_age=600000"
rfs_mount "$members" "$mnt" -o "$other" || fail "$what: mount with another log failed"
grep -q "the cache of the last run was not found (its log is new): [0-9]* files\? it alone changed got a parity resync" "$T/daemon.log" ||
	fail "$what: the files of the lost log were not resynced (or not said): $(grep -i "resync" "$T/daemon.log" | tail -2)"
echo "after" >"$mnt/after" || fail "$what: write failed"
rfs_unmount "$mnt" || fail "$what: unmount failed"
expect_rc 0 "$RAIDFS" check "$members"
expect_rc 1 "$RAIDFS" mount -o "log=$T/daemon.log" -o "$opts" "$members" "$mnt"
grep -q "holds writes, but it is not the log this array last wrote through: mount with that log" "$ERR" ||
	fail "$what: the old log was not refused: $(cat "$ERR")"
is_mounted "$mnt" && fail "$what: mounted with the old log"
log "ok: $what: a lost log's files resynced and said so; an older log with records refused"

# ----------------------------------------------- order of the file log
# Two threads write the same 4 KiB at the same moment through two hard
# links (two kernel inodes: the kernel does not order them), 1,000 times
# at 1,000 offsets.  What the file reads after every write returned is
# what the application was told; after kill -9 the log's replay must give
# exactly that again (its records in the order the cache took the writes).
log_array order "log order" cache_size=64M,cache_age=600000
"$PY" - "$mnt" "$C/before" <<'PYEOF' || fail "$what: the writers failed"
import os, sys, threading
mnt, out = sys.argv[1], sys.argv[2]
f, g = os.path.join(mnt, "F"), os.path.join(mnt, "G")
open(f, "wb").close()
os.link(f, g)
fds = [os.open(f, os.O_WRONLY), os.open(g, os.O_WRONLY)]
bar = threading.Barrier(2)
def writer(k):
    data = bytes([0xAA + k * 0x11]) * 4096
    for i in range(1000):
        bar.wait()
        assert os.pwrite(fds[k], data, i * 4096) == 4096
ts = [threading.Thread(target=writer, args=(k,)) for k in (0, 1)]
for t in ts: t.start()
for t in ts: t.join()
for fd in fds: os.close(fd)
with open(f, "rb") as r, open(out, "wb") as w:
    w.write(r.read())
PYEOF
[ "$(json_cache "$mnt" dirty_bytes)" -gt 0 ] || fail "$what: nothing dirty before the kill"
rfs_kill "$mnt" || fail "$what: kill failed"
rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount after the kill failed"
cmp "$C/before" "$mnt/F" >/dev/null ||
	fail "$what: after the replay, $("$PY" -c 'import sys
a, b = (open(x, "rb").read() for x in sys.argv[1:3])
print(sum(a[i:i+4096] != b[i:i+4096] for i in range(0, max(len(a), len(b)), 4096)))' "$C/before" "$mnt/F") of 1000 ranges read otherwise than before the crash"
unmount_clean "same bytes written through two links at once: after kill -9 the file reads as before"

# ------------------------------------- durable on the members, then forgotten
log_array ds "log tail" cache_size=8M,cache_age=100
command -v strace >/dev/null || fail "$what: strace is not installed (contrib/install-deps.sh installs it)"
pid=$(daemon_pid "$mnt")
strace -f -y -qq -e trace=syncfs,pwrite64,pwritev,unlinkat -o "$C/trace" -p "$pid" 2>"$C/strace.err" &
spid=$!
for _ in $(seq 1 50); do
	grep -q "^TracerPid:[[:space:]]*[1-9]" /proc/"$pid"/status && break
	sleep 0.1
done
head -c 300000 /dev/urandom >"$C/ref"
cp "$C/ref" "$mnt/f" || fail "$what: write failed"
# the lines go out after cache_age; the log forgets them when all is clean
for _ in $(seq 1 100); do
	[ "$(json_cache "$mnt" dirty_bytes)" = 0 ] &&
		grep -Eq 'cache\.log>, (\[\{iov_base=)?"RAIDFSL1' "$C/trace" 2>/dev/null && break
	sleep 0.1
done
sleep 0.3
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
# the first member write of the destage, the header write after it, and a
# syncfs between the two
first=$(grep -n "^[0-9]* *pwritev([0-9]*<$C/d" "$C/trace" | head -n 1 | cut -d: -f1)
[ -n "$first" ] || { cat "$C/strace.err" >&2; fail "$what: the trace shows no destage to the members"; }
hdr=$(awk -v f="$first" 'NR > f && /cache\.log>, (\[\{iov_base=)?"RAIDFSL1/ { print NR; exit }' "$C/trace")
[ -n "$hdr" ] || { tail -n 20 "$C/trace" >&2; fail "$what: the log's tail never moved after the destage"; }
awk -v f="$first" -v h="$hdr" 'NR > f && NR < h && /syncfs\(/ { found = 1 } END { exit !found }' "$C/trace" ||
	{ sed -n "${first},${hdr}p" "$C/trace" | tail -n 20 >&2; fail "$what: the log forgot destaged lines before the members were synced"; }
# the file's dirty-log mark: removed only after a sync too (the mount
# replays the log only into marked files)
mark=$(awk -v f="$first" 'NR > f && /unlinkat\(.*\.raidfs\/dirty\/[0-9a-f]+/ { print NR; exit }' "$C/trace")
[ -n "$mark" ] || { tail -n 20 "$C/trace" >&2; fail "$what: the file's dirty-log mark was never removed"; }
awk -v f="$first" -v h="$mark" 'NR > f && NR < h && /syncfs\(/ { found = 1 } END { exit !found }' "$C/trace" ||
	fail "$what: the file's dirty-log mark was removed before the members were synced"
cmp "$C/ref" "$mnt/f" || fail "$what: the file differs"
rfs_unmount "$mnt" || fail "$what: unmount failed"
log "ok: $what: the members are synced before the log forgets what was written to them, or the file's mark goes"

# ------------------------------------------------------------ preserved cache
C=$T/pc
mkdir -p "$C"
mem=$(make_members 4 "pc/d")
members=$(join_members $mem)
set -- $mem
mnt=$C/mnt
what="preserved cache"
opts="write_policy=writeback,bbu=shm,cache_size=8M,cache_age=600000"
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 16K $mem
rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
uuid=$("$RAIDFS" status --json "$mnt" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["uuid"])')
workload crashwrite --ack --mnt "$mnt/p" --state "$C/state" --seed "$SEED" --chunk 16384 \
	--max-size 400000 --max-ops 150 >"$C/cw.out" 2>&1 || { cat "$C/cw.out" >&2; fail "$what: writer failed"; }
dirty=$(json_cache "$mnt" dirty_bytes)
[ "$dirty" -gt 0 ] || fail "$what: nothing dirty before the kill"
rfs_kill "$mnt" || fail "$what: kill failed"
hide_member "$2"
hide_member "$3"
rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: the mount with a preserved cache and two members gone failed"
"$RAIDFS" status "$mnt" >"$C/status.out"
grep -q "preserved" "$C/status.out" || { cat "$C/status.out" >&2; fail "$what: status does not report the preserved cache"; }
grep -q "^action:.*preserved" "$C/status.out" || { cat "$C/status.out" >&2; fail "$what: no action line for the preserved cache"; }
pb=$(json_cache "$mnt" preserved_bytes)
[ "$pb" -gt 0 ] || fail "$what: preserved_bytes is $pb"
cat "$mnt/p/c0" >/dev/null 2>&1 && fail "$what: a file was served while its newest data sits in a preserved cache"
expect_rc 1 "$RAIDFS" cache "$mnt" discard
[ -e /dev/shm/raidfs-"$uuid".cache ] || fail "$what: the preserved cache is gone"
unhide_member "$2"
unhide_member "$3"
for _ in $(seq 1 100); do
	[ "$(json_cache "$mnt" preserved_bytes)" = 0 ] && break
	sleep 0.2
done
[ "$(json_cache "$mnt" preserved_bytes)" = 0 ] || { "$RAIDFS" status "$mnt" >&2; fail "$what: the members returned but the cache was not replayed"; }
workload crashverify --mnt "$mnt/p" --state "$C/state" >"$C/verify.out" 2>&1 ||
	{ cat "$C/verify.out" >&2; fail "$what: acknowledged data lost after the preserved cache was replayed"; }
unmount_clean "kept and reported while two members were gone ($pb bytes), replayed when they returned"

# ------------------------------------------------------------ the log fails
# Dirty overwrites with their records in the log (f1's first 20,000 bytes
# among them), f1 held open (its marks stay), then the log's next
# fdatasync fails: a truncate of f2, more overwrites and a full overwrite
# of f1's first 100,000 bytes all succeed; the battery shows failed, the
# log is retired; kill -9, and the next mount with the same log drops its
# records and reads every file as written.
overwritten_files lf "the log fails" 20
head -c 20000 /dev/urandom >"$C/chunk"
dd if="$C/chunk" of="$C/ref/f1" conv=notrunc 2>/dev/null
dd if="$C/chunk" of="$mnt/f1" conv=notrunc 2>/dev/null || fail "$what: write failed"
exec 9<"$mnt/f1"
expect_rc 0 "$RAIDFS" inject "$mnt" log fsync-error count 1
grep -q "the cache log '$C/cache.log': fsync-error count 1" "$OUT" || fail "$what: inject said: $(cat "$OUT")"
truncate -s 50000 "$mnt/f2" || fail "$what: the truncate failed when the log did"
truncate -s 50000 "$C/ref/f2"
overwrite_files "$C/ref" "$mnt" 20
head -c 100000 /dev/urandom >"$C/chunk"
dd if="$C/chunk" of="$C/ref/f1" conv=notrunc 2>/dev/null
dd if="$C/chunk" of="$mnt/f1" bs=4096 conv=notrunc 2>/dev/null || fail "$what: the overwrite of f1 failed"
grep -q "fdatasync failed: Input/output error; write-back ends" "$T/daemon.log" || fail "$what: the failure was not said"
wait_retired
"$RAIDFS" status "$mnt" >"$C/st.out"
grep -q "^battery: failed (bbu=file:$C/cache.log), the cache log failed: Input/output error (retired" "$C/st.out" &&
	grep -q "^action:  the cache log '$C/cache.log' failed" "$C/st.out" &&
	grep -q "write policy writeback (current: writethrough, the cache log failed)" "$C/st.out" ||
	fail "$what: status: $(cat "$C/st.out")"
[ "$(json_cache "$mnt" log_error)" = "Input/output error" ] || fail "$what: status --json has no log_error"
grep -q "event BbuFailed" "$T/daemon.log" || fail "$what: no BbuFailed event"
expect_rc 1 "$RAIDFS" bbu "$mnt" restore
grep -q "write-back stays off until the next mount" "$ERR" || fail "$what: bbu restore said: $(cat "$ERR")"
kill_remount
for i in $(seq 1 12); do
	cmp "$C/ref/f$i" "$mnt/f$i" || fail "$what: f$i differs after the kill"
done
grep -q "the cache log '$C/cache.log' failed in an earlier run and was retired .*: its [0-9]* bytes of old records are dropped" \
	"$T/daemon.log" || fail "$what: the retired log's records were not dropped (or not said)"
unmount_clean "write-back ended with no error to any writer, the log retired, its records dropped after kill -9"

# ------------------------------------ a member away during the retirement
# Member 3 is away (vanished) when the log fails and is retired; it comes
# back and is re-added, a write goes over bytes whose record the log still
# holds, kill -9: the next mount must not go by member 3's note from
# before (the log in use), which would replay the older record.
log_array ra "away at the retirement" cache_size=64M,cache_age=600000
head -c 1048576 /dev/urandom >"$C/f1"
cp "$C/f1" "$mnt/f1" || fail "$what: write failed"
head -c 4096 /dev/urandom >"$C/A"
dd if="$C/A" of="$mnt/f1" bs=4096 seek=3 conv=notrunc 2>/dev/null || fail "$what: write failed"
expect_rc 0 "$RAIDFS" inject "$mnt" 3 vanish
head -c 1048576 /dev/urandom >"$mnt/f0" || fail "$what: write failed"
"$PY" -c 'import os,sys; fd = os.open(sys.argv[1], os.O_RDWR); os.fsync(fd)' "$mnt/f0" || fail "$what: fsync failed"
wait_member "$mnt" 3 faulty || fail "$what: member 3 was not failed"
expect_rc 0 "$RAIDFS" inject "$mnt" log fsync-error count 1
head -c 8192 /dev/urandom >"$mnt/f2" || fail "$what: the write failed when the log did"
wait_retired
expect_rc 0 "$RAIDFS" inject "$mnt" 3 clear
wait_member "$mnt" 3 online || fail "$what: member 3 was not taken back: $("$RAIDFS" status "$mnt")"
head -c 4096 /dev/urandom >"$C/B"
exec 9<"$mnt/f1"	# (its marks stay: the next mount resyncs it, with the log's records if it goes by them)
dd if="$C/B" of="$mnt/f1" bs=4096 seek=3 conv=notrunc,fsync 2>/dev/null || fail "$what: write failed"
dd if="$C/B" of="$C/f1" bs=4096 seek=3 conv=notrunc 2>/dev/null
kill_remount
cmp "$C/f1" "$mnt/f1" || fail "$what: f1 differs after the kill (the older record replayed?)"
unmount_clean "the member away at the retirement did not have the retired log replayed"

# A member that cannot take the retirement note (its note made a
# directory) while the others take it is failed, as on a write error;
# before, the retirement never finished and every write failed.
log_array rn "retirement note refused" cache_size=64M,cache_age=600000
head -c 300000 /dev/urandom >"$C/f"
cp "$C/f" "$mnt/f" || fail "$what: write failed"
d3=$(echo $mem | cut -d' ' -f3)
rm -f "$d3/.raidfs/dirty/.cachelog"
mkdir "$d3/.raidfs/dirty/.cachelog"
expect_rc 0 "$RAIDFS" inject "$mnt" log fsync-error count 1
head -c 8192 /dev/urandom >"$C/g"
cp "$C/g" "$mnt/g" || fail "$what: the write failed when the log did"
wait_retired
wait_member "$mnt" 2 faulty || fail "$what: member 2 was not failed: $("$RAIDFS" status "$mnt")"
"$RAIDFS" status "$mnt" | grep -q "failed: refused the cache log's retirement note (Is a directory)" ||
	fail "$what: status does not say why: $("$RAIDFS" status "$mnt")"
head -c 8192 /dev/urandom >"$C/h"
cp "$C/h" "$mnt/h" || fail "$what: a write after the retirement failed"
for x in f g h; do cmp "$C/$x" "$mnt/$x" || fail "$what: $x differs"; done
rfs_unmount "$mnt" || fail "$what: unmount failed"
log "ok: $what: the member that refused the retirement note was failed; writes went on"

# ---------------------------------------- written out before its record
# A full line goes to the members at once, maybe before its write's
# record is durable (the log made slow: 1.5 s per record write and
# fdatasync); cut in the middle, that stripe is covered by no record: the
# file must get its plain mark (a resync at the next mount), not only the
# cache's mark, which the mount would trust.
log_array ul "before its record" cache_size=64M,cache_age=600000
head -c 100000 /dev/urandom >"$C/f"
cp "$C/f" "$mnt/f" || fail "$what: write failed"
rfs_unmount "$mnt" || fail "$what: unmount failed"
rfs_mount "$members" "$mnt" -o "$opts" || fail "$what: mount failed"
d1=${mem%% *}
expect_rc 0 "$RAIDFS" inject "$mnt" log latency 1500
head -c 49152 /dev/urandom >"$C/chunk"
dd if="$C/chunk" of="$C/f" conv=notrunc 2>/dev/null
dd if="$C/chunk" of="$mnt/f" bs=49152 conv=notrunc 2>/dev/null &
ddp=$!
marks=""
for _ in $(seq 1 20); do
	sleep 0.1
	marks=$(ls "$d1/.raidfs/dirty/")
	grep -qx "[0-9a-f]\{16\}" <<<"$marks" && break
done
wait $ddp || fail "$what: the write failed"
grep -qx "[0-9a-f]\{16\}" <<<"$marks" || fail "$what: the line went out with only the cache's mark: $marks"
expect_rc 0 "$RAIDFS" inject "$mnt" log clear
cmp "$C/f" "$mnt/f" || fail "$what: f differs"
unmount_clean "a line written out before its record was durable marked its file for a resync"

# ------------------------------------------------------------ the log fills up
# A real failure, not an injected one: the log on a 2 MiB tmpfs fills up
# (its guard slots too) while a degraded array takes 1 MiB files and
# random 4 KiB overwrites: no write fails (the guard slots stop with the
# log: before, the destage retried them forever and the writer hung), the
# battery says why, and every file reads as written after a remount.
log_array lfull "the log fills up" cache_size=64M,cache_age=600000 2m
mkdir -p "$C/ref"
expect_rc 0 "$RAIDFS" fail "$mnt" 3
timeout -k 5 120 "$PY" - "$mnt" "$C/ref" "$SEED" <<'PYEOF' || fail "$what: the writer failed (or hung)"
import os, sys, random
mnt, ref, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
r = random.Random(seed)
for i in range(8):
    d = r.randbytes(1 << 20)
    for root in (mnt, ref):
        with open(os.path.join(root, "f%d" % i), "wb") as f:
            f.write(d)
fds = {i: os.open(os.path.join(mnt, "f%d" % i), os.O_WRONLY) for i in range(8)}
for k in range(3000):
    i, off, b = r.randrange(8), r.randrange(0, 1 << 20, 4096), r.randbytes(4096)
    os.pwrite(fds[i], b, off)
    with open(os.path.join(ref, "f%d" % i), "r+b") as f:
        f.seek(off)
        f.write(b)
PYEOF
"$RAIDFS" status "$mnt" >"$C/st.out"
grep -q "^battery: failed .*the cache log failed: No space left on device" "$C/st.out" || fail "$what: status: $(cat "$C/st.out")"
grep -q "is degraded: from now on a crash during a write can damage" "$T/daemon.log" || fail "$what: the write hole was not said"
rfs_unmount "$mnt" || fail "$what: unmount failed"
umount "$C/logfs"
rfs_mount "$members" "$mnt" || fail "$what: mount failed"
for i in $(seq 0 7); do
	cmp "$C/ref/f$i" "$mnt/f$i" || fail "$what: f$i differs"
done
rfs_unmount "$mnt" || fail "$what: unmount failed"
log "ok: $what: a log full on its own disk ended write-back on a degraded array, no write failed, data right"

# The ring's pages all written before (a later lap needs no new blocks),
# then the log's disk full: records still go in, only a guard slot's write
# meets ENOSPC.  That fails the log as well (before: the battery stayed
# optimal and the destage of degraded stripes failed again and again, the
# writer hung).
log_array lslot "a guard slot cannot be written" cache_size=4M,cache_age=200 12m
for i in 0 1 2; do head -c 4194304 /dev/urandom >"$mnt/big$i" || fail "$what: write failed"; done
dd if=/dev/zero of="$C/logfs/filler" bs=64k 2>/dev/null
expect_rc 0 "$RAIDFS" fail "$mnt" 3
head -c 1048576 /dev/urandom >"$C/f"
cp "$C/f" "$mnt/f" || fail "$what: write failed"
timeout -k 5 60 "$PY" - "$mnt/f" "$C/f" "$SEED" <<'PYEOF' || fail "$what: the writer failed (or hung)"
import os, sys, random
r = random.Random(int(sys.argv[3]))
fd, ref = os.open(sys.argv[1], os.O_RDWR), os.open(sys.argv[2], os.O_RDWR)
for k in range(4000):
    off, b = r.randrange(0, 1 << 20, 4096), r.randbytes(4096)
    os.pwrite(fd, b, off)
    os.pwrite(ref, b, off)
PYEOF
grep -q "the write of a guard slot failed: No space left on device; write-back ends" "$T/daemon.log" ||
	fail "$what: the log was not failed: $(grep -c "cannot write a guard slot" "$T/daemon.log") slot errors"
cmp "$C/f" "$mnt/f" || fail "$what: f differs"
rfs_unmount "$mnt" || fail "$what: unmount failed"
umount "$C/logfs"
log "ok: $what: the log was failed with it, write-back ended, no write failed or hung"
exit 0
