#!/bin/bash
# t_rebuild_resume - kill -9 the daemon during a rebuild; the next mount
# resumes from the persisted position (files already rebuilt are not
# rebuilt again) and the result is correct: after the rebuild, losing
# another member leaves every byte intact.
. "$(dirname "$0")/lib.sh"
need_fuse

mem=$(make_members 4)
mkdir -p "$T/new" "$T/ref"
mnt=$T/mnt
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name rr $mem
rfs_mount "$(join_members $mem)" "$mnt" || fail "mount"
# 120 files of 256 KiB in 6 directories
write_fileset "$mnt" "$T/ref" 7 6 20 262144 262144 || fail "writing the file set"
"$RAIDFS" fail "$mnt" 1 >/dev/null || fail "fail 1"
"$RAIDFS" rebuild "$mnt" --max-rate 1 --min-rate 1 >/dev/null || fail "rebuild rates"
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$T/new"
# the limit holds with both file threads at work: bytes done between two
# status reads (the interval taken wide: from before the first read to
# after the second) stay within 1 MiB/s, plus one window per thread (1
# MiB each) in flight.  A slow machine only makes it fewer.
done_bytes() { "$RAIDFS" status --json "$mnt" | grep -o '"done": [0-9]*' | grep -o '[0-9]*$'; }
t0=$(date +%s.%N); d0=$(done_bytes)
sleep 3.5
d1=$(done_bytes); t1=$(date +%s.%N)
"$PY" -c 'import sys; d0, d1, t0, t1 = map(float, sys.argv[1:]); lim = (t1 - t0) * 1048576 + 2 * 1048576
sys.exit(0 if d1 - d0 <= lim else "rebuild went %.0f bytes in %.2f s at --max-rate 1 (at most %.0f allowed)" % (d1 - d0, t1 - t0, lim))' \
	"$d0" "$d1" "$t0" "$t1" || fail "the rebuild ran over its rate limit"
log "ok: $((d1 - d0)) bytes rebuilt in about 3.5 s at --max-rate 1"
"$RAIDFS" status --json "$mnt" | grep -q '"active": true' || fail "rebuild not running at the kill: $("$RAIDFS" status "$mnt")"
[ -f "$T/new/.raidfs/rebuild" ] || fail "no rebuild position saved on the new member after 3 s"
rfs_kill "$mnt" || fail "kill -9 during the rebuild"
newmem=$(echo "$mem" | sed "s|$T/d2|$T/new|")
rfs_mount "$(join_members $newmem)" "$mnt" || fail "mount after kill -9 during the rebuild"
for i in $(seq 1 600); do
	"$RAIDFS" status "$mnt" >/dev/null && break
	sleep 0.1
done
expect_rc 0 "$RAIDFS" status "$mnt"
skipped=$(grep -o "resumed after '[^']*': [0-9]* files already rebuilt were skipped" "$T/daemon.log" | grep -o ": [0-9]* files" | grep -o "[0-9]*")
[ -n "$skipped" ] || fail "the rebuild did not resume from a saved position: $(grep -i rebuild "$T/daemon.log" | tail -5)"
[ "$skipped" -gt 0 ] || fail "resume skipped no file: the work done before the kill was redone"
log "ok: resumed, $skipped files not rebuilt again"
"$RAIDFS" fail "$mnt" 3 >/dev/null
workload compare "$mnt" "$T/ref" >"$T/cmp.out" 2>&1 || { cat "$T/cmp.out" >&2; fail "data differs after the resumed rebuild"; }
rfs_unmount_wait "$mnt" || fail "unmount"
log "ok: data intact with member 3 failed after the resumed rebuild"
exit 0
