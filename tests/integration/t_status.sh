#!/bin/bash
# t_status - 'raidfs status' and 'raidfs status --json' against expected
# output in each state: optimal with a spare, degraded (with the action
# line), rebuilding (progress bar, paused), failed; exit statuses 0/1/2.
# Paths, the uuid, the size and the I/O counters vary and are normalised;
# everything else must match to the character.
. "$(dirname "$0")/lib.sh"
need_fuse

norm() {
	sed -e "s|$T|@T@|g" -e 's|uuid [0-9a-f-]*|uuid @UUID@|' \
	    -e 's|^size:    .* usable, .* free$|size:    @SIZE@ usable, @FREE@ free|' \
	    -e 's#^\(space:   \|         \)member \([0-9]\): .* free of .* (.*% used)$#\1member \2: @SPACE@#' \
	    -e 's|reads [0-9]*, writes [0-9]*|reads N, writes N|' \
	    -e 's|^         dirty .*, read hits .*, destage .*$|         dirty @D@, read hits @H@, destage @R@|' \
	    -e 's|verified (\([0-9]*\) files\{0,1\}, [0-9.]* s)|verified (\1 files, @S@ s)|'
}
check_text() {	# NAME RC (expected text on stdin)
	cat > "$T/want.$1"
	"$RAIDFS" status "$mnt" > "$T/got.raw.$1"
	local rc=$?
	[ "$rc" = "$2" ] || fail "$1: status exit $rc, expected $2"
	norm < "$T/got.raw.$1" > "$T/got.$1"
	diff -u "$T/want.$1" "$T/got.$1" >&2 || fail "$1: status text differs (above: - expected, + got)"
}
check_json() {	# NAME RC PYTHON-ASSERTIONS (j is the parsed document)
	"$RAIDFS" status --json "$mnt" > "$T/got.json.$1"
	local rc=$?
	[ "$rc" = "$2" ] || fail "$1: status --json exit $rc, expected $2"
	"$PY" - "$T/got.json.$1" "$T" <<EOF || fail "$1: JSON check failed: $(cat "$T/got.json.$1")"
import json, sys
j = json.load(open(sys.argv[1]))
T = sys.argv[2]
$3
EOF
}

mem=$(make_members 4)
mkdir -p "$T/s1" "$T/n3"
mnt=$T/mnt
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 16K --name st --spare "$T/s1" $mem
rfs_mount "$(join_members $mem):$T/s1" "$mnt" || fail "mount"

check_text optimal 0 <<'EOF'
array:   st (uuid @UUID@)
mounted: @T@/mnt
level:   raid5, 4 members, chunk 16.0 KiB, checksums crc32c
size:    @SIZE@ usable, @FREE@ free
state:   optimal
members:          READ WRITE CKSUM REPAIRED  DIRECTORY
   0  online         0     0     0       0B  @T@/d1  (reads N, writes N, errors 0, corrected 0)
   1  online         0     0     0       0B  @T@/d2  (reads N, writes N, errors 0, corrected 0)
   2  online         0     0     0       0B  @T@/d3  (reads N, writes N, errors 0, corrected 0)
   3  online         0     0     0       0B  @T@/d4  (reads N, writes N, errors 0, corrected 0)
  S0  spare          -     -     -        -  @T@/s1
space:   member 0: @SPACE@
         member 1: @SPACE@
         member 2: @SPACE@
         member 3: @SPACE@
         members 0, 1, 2, 3 share one filesystem: the usable size counts a 1/4 part of it for each
cache:   256.0 MiB, write policy writeback (current: writethrough, no battery), read policy adaptive
         dirty @D@, read hits @H@, destage @R@
battery: missing (bbu=none)
EOF
check_json optimal 0 '
assert j["name"] == "st" and j["level"] == "raid5" and j["width"] == 4 and j["chunk"] == 16384
assert j["checksum"] == "crc32c"
assert j["state"] == "optimal" and j["readonly"] is False
assert [m["state"] for m in j["members"]] == ["online"] * 4
assert [m["path"] for m in j["members"]] == [T + "/d%d" % i for i in range(1, 5)]
assert j["spares"] == [T + "/s1"]
assert j["rebuild"]["active"] is False
c = j["cache"]
assert c["write_policy"] == "writeback" and c["current_write_policy"] == "writethrough"
assert c["bbu"] == "none" and c["bbu_state"] == "missing" and c["read_policy"] == "adaptive"
assert c["size"] == 256 << 20 and c["dirty_bytes"] == 0 and c["preserved_bytes"] == 0
'

# no spare for the next steps
expect_rc 0 "$RAIDFS" remove "$mnt" "$T/s1"
head -c 16000000 /dev/urandom > "$mnt/f"
"$RAIDFS" fail "$mnt" 2 >/dev/null
check_text degraded 1 <<'EOF'
array:   st (uuid @UUID@)
mounted: @T@/mnt
level:   raid5, 4 members, chunk 16.0 KiB, checksums crc32c
size:    @SIZE@ usable, @FREE@ free
state:   degraded, no redundancy left
members:          READ WRITE CKSUM REPAIRED  DIRECTORY
   0  online         0     0     0       0B  @T@/d1  (reads N, writes N, errors 0, corrected 0)
   1  online         0     0     0       0B  @T@/d2  (reads N, writes N, errors 0, corrected 0)
   2  faulty         0     0     0       0B  @T@/d3  (reads N, writes N, errors 0, corrected 0)
      failed: failed by the administrator ('raidfs fail')
   3  online         0     0     0       0B  @T@/d4  (reads N, writes N, errors 0, corrected 0)
space:   member 0: @SPACE@
         member 1: @SPACE@
         member 2: @SPACE@
         member 3: @SPACE@
         members 0, 1, 2, 3 share one filesystem: the usable size counts a 1/4 part of it for each
cache:   256.0 MiB, write policy writeback (current: writethrough, no battery), read policy adaptive
         dirty @D@, read hits @H@, destage @R@
battery: missing (bbu=none)
action:  member 2 ('@T@/d3') is faulty: replace it with 'raidfs replace @T@/mnt 2 NEWDIR' (an empty directory on a new disk), or if the disk is sound (pulled by mistake) put it back with 'raidfs add @T@/mnt @T@/d3' (resyncs only what changed)
EOF
check_json degraded 1 '
assert j["state"] == "degraded"
m = j["members"][2]
assert m["state"] == "faulty" and m["fail_reason"] == "failed by the administrator ('"'"'raidfs fail'"'"')"
assert j["spares"] == []
'

# rebuilding, slowly, then paused: the progress line has its shape
"$RAIDFS" rebuild "$mnt" --min-rate 1 --max-rate 1 >/dev/null
expect_rc 0 "$RAIDFS" replace "$mnt" 2 "$T/n3"
sleep 2.5
expect_rc 0 "$RAIDFS" rebuild "$mnt" pause
"$RAIDFS" status "$mnt" > "$T/got.raw.rebuilding"
[ $? = 1 ] || fail "rebuilding: status exit is not 1"
norm < "$T/got.raw.rebuilding" > "$T/got.rebuilding"
grep -qx "state:   rebuilding, no redundancy left" "$T/got.rebuilding" || fail "rebuilding: no state line: $(cat "$T/got.rebuilding")"
grep -qx "   2  rebuilding     0     0     0       0B  @T@/n3  (reads N, writes N, errors 0, corrected 0)" "$T/got.rebuilding" ||
	fail "rebuilding: member line: $(cat "$T/got.rebuilding")"
grep -qE '^rebuild: member 2 \[=*>? *\] +[0-9]+\.[0-9]%  [0-9.]+ [KMG]?i?B / [0-9.]+ [KMG]i?B  [0-9.]+ [KMG]?i?B/s  ETA [0-9]+m[0-9]{2}s  PAUSED$' "$T/got.rebuilding" ||
	fail "rebuilding: progress line: $(grep '^rebuild' "$T/got.rebuilding")"
grep -qx "action:  member 2 is being rebuilt onto '@T@/n3'; the array has less redundancy until it finishes" "$T/got.rebuilding" ||
	fail "rebuilding: action line: $(grep '^action' "$T/got.rebuilding")"
check_json rebuilding 1 '
r = j["rebuild"]
assert j["state"] == "rebuilding" and r["active"] is True and r["paused"] is True and r["member"] == 2
assert 0 < r["done"] <= r["total"] and r["min_rate"] == 1 and r["max_rate"] == 1 and r["readd"] is False
assert j["members"][2]["state"] == "rebuilding"
'
expect_rc 1 "$RAIDFS" rebuild "$mnt" --bogus
# the verify pass (the file changed during the copy, so it is compared
# again; slow reads of a source make that take seconds): its line counts
# files, with no ETA
head -c 4096 /dev/urandom | dd of="$mnt/f" bs=4096 seek=7 conv=notrunc 2>/dev/null
expect_rc 0 "$RAIDFS" inject "$mnt" 0 latency 30 read
expect_rc 0 "$RAIDFS" rebuild "$mnt" resume
for _ in $(seq 1 300); do
	"$RAIDFS" status --json "$mnt" | "$PY" -c 'import json,sys; sys.exit(json.load(sys.stdin)["rebuild"]["phase"] != "verify")' && break
	sleep 0.1
done
expect_rc 0 "$RAIDFS" rebuild "$mnt" pause
"$RAIDFS" status "$mnt" > "$T/got.raw.verifying"
norm < "$T/got.raw.verifying" > "$T/got.verifying"
grep -qE '^rebuild: member 2 \[=*>? *\] +[0-9]+\.[0-9]%  verifying: 0 of 1 files \([0-9.]+ [KMG]i?B copied\)  PAUSED$' "$T/got.verifying" ||
	fail "verifying: progress line: $(grep '^rebuild' "$T/got.verifying")"
check_json verifying 1 '
r = j["rebuild"]
assert r["phase"] == "verify" and 0 < r["copied"] <= r["done"] and r["paused"] is True
'
expect_rc 0 "$RAIDFS" inject "$mnt" 0 clear
"$RAIDFS" rebuild "$mnt" --max-rate 0 >/dev/null
expect_rc 0 "$RAIDFS" rebuild "$mnt" resume
for i in $(seq 1 300); do "$RAIDFS" status "$mnt" >/dev/null && break; sleep 0.1; done
expect_rc 1 "$RAIDFS" rebuild "$mnt" pause
grep -q "no rebuild is running" "$ERR" "$OUT" || fail "pause without a rebuild: $(cat "$OUT" "$ERR")"

"$RAIDFS" fail "$mnt" 0 >/dev/null
"$RAIDFS" fail "$mnt" 1 >/dev/null
check_text failed 2 <<'EOF'
array:   st (uuid @UUID@)
mounted: @T@/mnt
level:   raid5, 4 members, chunk 16.0 KiB, checksums crc32c
size:    @SIZE@ usable, @FREE@ free
state:   failed
members:          READ WRITE CKSUM REPAIRED  DIRECTORY
   0  faulty         0     0     0       0B  @T@/d1  (reads N, writes N, errors 0, corrected 0)
      failed: failed by the administrator ('raidfs fail')
   1  faulty         0     0     0       0B  @T@/d2  (reads N, writes N, errors 0, corrected 0)
      failed: failed by the administrator ('raidfs fail')
   2  online         0     0     0       0B  @T@/n3  (reads N, writes N, errors 0, corrected 0)
   3  online         0     0     0       0B  @T@/d4  (reads N, writes N, errors 0, corrected 0)
space:   member 0: @SPACE@
         member 1: @SPACE@
         member 2: @SPACE@
         member 3: @SPACE@
         members 0, 1, 2, 3 share one filesystem: the usable size counts a 1/4 part of it for each
rebuild: member 2 rebuilt onto '@T@/n3' and verified (1 files, @S@ s)
cache:   256.0 MiB, write policy writeback (current: writethrough, no battery), read policy adaptive
         dirty @D@, read hits @H@, destage @R@
battery: missing (bbu=none)
action:  too many members are lost for raid5: the array refuses writes; bring the members back: a disk that returns to its path is taken back by itself, or use 'raidfs add @T@/mnt DIR', or remount with all members
EOF
check_json failed 2 '
assert j["state"] == "failed"
assert [m["state"] for m in j["members"]] == ["faulty", "faulty", "online", "online"]
assert j["rebuild"]["last_result"].startswith("member 2 rebuilt onto")
'
rfs_unmount_wait "$mnt" || fail "unmount"
# not a raidfs mount: exit 2
expect_rc 2 "$RAIDFS" status "$T"
log "ok: status text and JSON in every state"
exit 0
