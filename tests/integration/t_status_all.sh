#!/bin/bash
# t_status_all - the status of every mounted array and what it says is
# left (docs/operations.md, part 2; docs/status-json.md):
#   - `raidfs status` with no mount point: one line per array (two here);
#     `status -x` quiet while both are healthy; `raidfs list`; status
#     from a path inside the mount (a subdirectory, `.` in the root);
#   - JSON: output_version, pid, byte counters, free space (members on one
#     filesystem said, the usable size not overclaimed);
#   - a scrub that finds a mismatch (an array without checksums, a data
#     chunk flipped on a member): the errors line, `status -v` names the
#     file and stripe, exit 1 of status and of `scrub --wait`, the
#     ScrubFinished event with its counts, all of it still there after a
#     remount; `scrub --repair --wait` clears it;
#   - raid6 with two members failed: "degraded, no redundancy left" (text
#     and JSON), the action line names both in the order to replace them,
#     `-x` names that array and not the other; `replace --wait` returns
#     with the member online and the last rebuild's bytes and duration;
#   - raid1 with one copy left: no redundancy left either;
#   - -o space_warn: a member nearly full is a state, an action and the
#     monitor's NearlyFull event.
# Other arrays may be mounted on this machine (other tests, benchmarks):
# only the lines of this scenario's mount points are looked at.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

json() { "$RAIDFS" status --json "$1" | "$PY" -c "import json, sys; print(json.load(sys.stdin)$2)"; }
check_json() {	# MNT WHAT PYTHON-ASSERTIONS (j is the parsed document)
	"$RAIDFS" status --json "$1" > "$T/got.json"
	"$PY" - "$T/got.json" "$T" <<EOF || fail "$2: JSON check failed: $(cat "$T/got.json")"
import json, sys
j = json.load(open(sys.argv[1]))
T = sys.argv[2]
$3
EOF
}
# mine FILE: the lines of FILE about this scenario's arrays
mine() { grep -F -- "$T/" "$1"; }
# every_rc CMD...: run `raidfs status` or `list` of every array (output in
# $OUT); its exit status must be the worst the lines say - other tests'
# arrays, failed, degraded or being rebuilt, may be mounted beside ours:
# 2 if one failed or does not answer, 1 if one is not optimal or has
# scrub errors, else 0
every_rc() {
	local rc=0 want
	"$RAIDFS" "$@" > "$OUT" 2> "$ERR" || rc=$?
	want=$("$PY" - "$OUT" <<'PYEOF'
import re, sys
worst = 0
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    f = line.split("\t")
    if len(f) == 6:                       # list: NAME LEVEL STATE UP/TOTAL HEALTH MOUNTPOINT
        state, health = f[2], f[4]
    else:                                 # status: NAME : LEVEL STATE [UP/TOTAL] ...
        m = re.match(r"\S+ : \S+ (.*?) \[\d+/\d+\]", line)
        if not m:
            if " : " in line:             # not answering, an older daemon
                worst = 2
            continue
        state, health = m.group(1), line
    if state.startswith("failed") or state in ("not-answering", "unknown"):
        worst = 2
    elif not state.startswith("optimal") or "scrub-errors" in health:
        worst = max(worst, 1)
print(worst)
PYEOF
)
	[ "$rc" = "$want" ] || fail "raidfs $*: exit $rc where its lines say $want: $(cat "$OUT" "$ERR")"
}

cat > "$T/ev.sh" <<'EOF'
#!/bin/sh
echo "$1 $3 ${RAIDFS_RESULT:-} ${RAIDFS_MISMATCHES:-} ${RAIDFS_BAD_FILES:-} ${RAIDFS_FILES:-}" >> "${0%/*}/events"
EOF
chmod +x "$T/ev.sh"

mema=$(make_members 4 a)
memb=$(make_members 2 b)
ma=$T/mnt_a mb=$T/mnt_b
expect_rc 0 "$RAIDFS" create --level raid6 --chunk 16K --name sa --checksum none $mema
expect_rc 0 "$RAIDFS" create --level raid1 --name sb $memb
rfs_mount "$(join_members $mema)" "$ma" -o "event_program=$T/ev.sh,space_warn=100%" || fail "mount a"
rfs_mount "$(join_members $memb)" "$mb" -o space_warn=100% || fail "mount b"

mkdir -p "$ma/dir" "$ma/sub/deeper" "$T/ref"
for i in 1 2 3 4; do head -c $((i * 50000)) /dev/urandom > "$T/ref/f$i"; cp "$T/ref/f$i" "$ma/dir/f$i"; done
head -c 300000 /dev/urandom > "$mb/g"

# ---- every array (text and JSON), -x, list, a path inside
every_rc status
mine "$OUT" > "$T/lines" || fail "status: no line of ours: $(cat "$OUT")"
[ "$(wc -l < "$T/lines")" = 2 ] || fail "status: not one line per array: $(cat "$T/lines")"
grep -qx "sa : raid6 optimal \[4/4\] \[UUUU\] .* usable on $ma" "$T/lines" || fail "status: line of sa: $(cat "$T/lines")"
grep -qx "sb : raid1 optimal \[2/2\] \[UU\] .* usable on $mb" "$T/lines" || fail "status: line of sb: $(cat "$T/lines")"
"$RAIDFS" status -x > "$T/x" || true
! mine "$T/x" || fail "status -x names a healthy array: $(cat "$T/x")"
grep -q . "$T/x" || fail "status -x printed nothing"
grep -vq "^all arrays are healthy$" "$T/x" || grep -qx "all arrays are healthy" "$T/x" || fail "status -x: $(cat "$T/x")"
"$RAIDFS" status --json > "$T/all.json" || true
"$PY" - "$T/all.json" "$ma" "$mb" <<'EOF' || fail "status --json of every array: $(cat "$T/all.json")"
import json, sys
d = {a['mountpoint']: a for a in json.load(open(sys.argv[1]))}
assert d[sys.argv[2]]['name'] == 'sa' and d[sys.argv[3]]['name'] == 'sb'
assert d[sys.argv[2]]['output_version'] == 2
EOF
expect_rc 0 "$RAIDFS" status -x "$ma"
grep -qx "array 'sa' is healthy" "$OUT" || fail "status -x MNT: $(cat "$OUT")"
every_rc list
printf 'sa\traid6\toptimal\t4/4\tok\t%s\n' "$ma" > "$T/want"
mine "$OUT" | grep -F "$ma" | cmp -s - "$T/want" || fail "list: $(cat "$OUT")"
expect_rc 0 "$RAIDFS" status "$ma/sub/deeper"
grep -qx "array:   sa (uuid .*)" "$OUT" || fail "status from a subdirectory: $(cat "$OUT" "$ERR")"
( cd "$ma" && "$RAIDFS" status . ) > "$T/dot" || fail "status . in the mount root: exit $?"
grep -qx "array:   sa (uuid .*)" "$T/dot" || fail "status .: $(cat "$T/dot")"
( cd "$mb" && "$RAIDFS" status --json . ) | grep -q '"name": "sb"' || fail "status --json . in sb"

# ---- JSON: version, pid, byte counters, space
pid=$(daemon_pid "$ma")
check_json "$ma" "fields" "
assert j['output_version'] == 2 and j['pid'] == $pid, (j['output_version'], j['pid'])
assert j['state'] == 'optimal' and j['state_text'] == 'optimal' and j['redundancy_left'] == 2
assert j['needs_attention'] is False and j['conditions'] == [] and j['actions'] == [] and j['replace_order'] == []
ms = j['members']
assert all(m['written_bytes'] >= 4 * 50000 // 2 for m in ms), [m['written_bytes'] for m in ms]
assert all(m['read_bytes'] >= 0 and m['writes'] > 0 for m in ms)
for i, m in enumerate(ms):
    assert 0 < m['fs_free'] <= m['fs_size'], m
    assert m['shares_filesystem_with'] == [k for k in range(4) if k != i], m
    assert m['nearly_full'] is False
assert j['shared_filesystem'] is True and j['nearly_full'] is False
# four members on one filesystem: each counted with a quarter, two of them data
fs = ms[0]['fs_size']
assert j['size'] == fs // 4 * 2, (j['size'], fs)
assert 0 < j['free'] <= j['size'] and j['free'] == ms[0]['fs_free'] // 4 * 2
assert j['space_warn'] == {'used_pct': 100, 'min_free': 0}
assert j['rebuild']['last'] is None
assert j['scrub']['unresolved'] is False and j['scrub']['files'] == [] and j['scrub']['bad_files'] == 0
"
expect_rc 0 "$RAIDFS" status "$ma"
grep -q "^space:   member 0: .* free of .* (.*% used)$" "$OUT" || fail "no space lines: $(cat "$OUT")"
grep -qx "         members 0, 1, 2, 3 share one filesystem: the usable size counts a 1/4 part of it for each" "$OUT" ||
	fail "no shared filesystem line: $(cat "$OUT")"

# ---- scrub with a mismatch
rm -f "$T/events"
"$PY" -S "$TOOLS/chunks.py" flip $mema --stripe 1 --slot d0 --count 8 --seed "$SEED" -- dir/f3 > /dev/null ||
	fail "chunks.py flip"
expect_rc 1 "$RAIDFS" scrub "$ma" --wait
grep -q "^scrub finished: .* 1 stripe did not match" "$OUT" || fail "scrub --wait said: $(cat "$OUT")"
expect_rc 1 "$RAIDFS" status "$ma"
grep -qx "errors:  the last scrub left problems in 1 file: 1 stripe not matching their redundancy, 0 files not compared, 0 missing shards ('raidfs status -v' lists them)" "$OUT" ||
	fail "no errors line: $(cat "$OUT")"
expect_rc 1 "$RAIDFS" status -v "$ma"
grep -qx "         dir/f3: mismatch, 1 stripe (1)" "$OUT" || fail "status -v does not list the file: $(cat "$OUT")"
check_json "$ma" "scrub state" "
s = j['scrub']
assert s['unresolved'] is True and s['bad_files'] == 1 and s['mismatches'] == 1
assert s['files'] == [{'path': 'dir/f3', 'kind': 'mismatch', 'count': 1, 'fixed': 0, 'stripes': [1]}], s['files']
assert j['needs_attention'] is True and j['conditions'] == ['scrub-errors'], j['conditions']
assert any('--repair' in a for a in j['actions']), j['actions']
"
"$RAIDFS" status -x > "$T/x"
mine "$T/x" | grep -q "^sa : raid6 optimal \[4/4\] \[UUUU\] .* usable on $ma  (scrub-errors)$" ||
	fail "status -x does not name sa: $(cat "$T/x")"
! mine "$T/x" | grep -q "^sb " || fail "status -x names sb: $(cat "$T/x")"
for _ in $(seq 1 50); do grep -q "^ScrubFinished" "$T/events" 2>/dev/null && break; sleep 0.1; done
grep -qx "ScrubFinished  finished 1 1 4" "$T/events" || fail "ScrubFinished event: $(cat "$T/events" 2>&1)"
# the result lasts across an unmount
rfs_unmount_wait "$ma" || fail "unmount a"
rfs_mount "$(join_members $mema)" "$ma" -o "event_program=$T/ev.sh,space_warn=100%" || fail "mount a again"
expect_rc 1 "$RAIDFS" status -v "$ma"
grep -qx "         dir/f3: mismatch, 1 stripe (1)" "$OUT" || fail "the scrub's result did not last a remount: $(cat "$OUT")"
grep -q "^scrub:   finished: 4 of 4 files, .* 1 stripe did not match" "$OUT" || fail "remount: scrub line: $(cat "$OUT")"
[ "$(json "$ma" '["scrub"]["ended"]')" -gt 0 ] || fail "no scrub.ended"
expect_rc 0 "$RAIDFS" scrub "$ma" --repair --wait
expect_rc 0 "$RAIDFS" status "$ma"
! grep -q "^errors:" "$OUT" || fail "errors line after the repair: $(cat "$OUT")"
expect_rc 0 "$RAIDFS" status -v "$ma"
grep -qx "         dir/f3: mismatch, 1 stripe (1), 1 repaired" "$OUT" || fail "status -v after the repair: $(cat "$OUT")"
# (without checksums the repair takes the data's side: the flipped bytes
# stay, and at most those)
[ "$(cmp -l "$T/ref/f3" "$ma/dir/f3" | wc -l)" -le 8 ] || fail "the repair changed more than the flipped bytes"
cp "$ma/dir/f3" "$T/ref/f3"

# ---- raid6 with two members failed
expect_rc 0 "$RAIDFS" fail "$ma" 3
expect_rc 0 "$RAIDFS" fail "$ma" 1
expect_rc 1 "$RAIDFS" status "$ma"
grep -qx "state:   degraded, no redundancy left" "$OUT" || fail "two lost: state: $(cat "$OUT")"
set -- $mema
grep -qx "action:  2 members are out of service (no redundancy is left: one more loss loses data): replace them one at a time, in this order: 1 ('$2'), 3 ('$4')" "$OUT" ||
	fail "two lost: order line: $(grep action "$OUT")"
grep -q "^action:  member 1 ('$2') is faulty: replace it" "$OUT" && grep -q "^action:  member 3 ('$4') is faulty: replace it" "$OUT" ||
	fail "two lost: an action line per member: $(grep action "$OUT")"
check_json "$ma" "two lost" "
assert j['state'] == 'degraded' and j['state_text'] == 'degraded, no redundancy left'
assert j['redundancy_left'] == 0 and j['replace_order'] == [1, 3]
assert j['conditions'] == ['degraded', 'no-redundancy'] and len(j['actions']) == 3
"
"$RAIDFS" status -x > "$T/x"
mine "$T/x" | grep -qx "sa : raid6 degraded, no redundancy left \[2/4\] \[U_U_\] .* usable on $ma" ||
	fail "status -x: $(cat "$T/x")"
! mine "$T/x" | grep -q "^sb " || fail "status -x names the healthy sb: $(cat "$T/x")"
"$RAIDFS" list > "$T/list"
printf 'sa\traid6\tdegraded\t2/4\tdegraded,no-redundancy\t%s\n' "$ma" > "$T/want"
grep -F "$ma" "$T/list" | cmp -s - "$T/want" || fail "list: $(cat "$T/list")"

# ---- replace --wait
mkdir -p "$T/n1"
expect_rc 0 "$RAIDFS" replace "$ma" 1 "$T/n1" --wait
grep -q "^member 1 rebuilt onto '$T/n1'" "$OUT" || fail "replace --wait said: $(cat "$OUT")"
check_json "$ma" "replaced" "
assert j['members'][1]['state'] == 'online' and j['members'][1]['path'] == T + '/n1'
assert j['state_text'] == 'degraded' and j['redundancy_left'] == 1 and j['replace_order'] == [3]
l = j['rebuild']['last']
assert l['member'] == 1 and l['ok'] is True and l['kind'] == 'rebuild', l
assert l['bytes'] > 0 and l['elapsed'] > 0 and l['ended'] > 0, l
"
for i in 1 2 3 4; do cmp "$T/ref/f$i" "$ma/dir/f$i" || fail "f$i differs after the replace"; done

rfs_unmount_wait "$mb" || fail "unmount b"
# ---- a member nearly full (-o space_warn)
rm -f "$T/events"
rfs_mount "$(join_members $memb)" "$mb" -o "space_warn=1%,event_program=$T/ev.sh" || fail "mount b again"
expect_rc 0 "$RAIDFS" status "$mb"
grep -q "^space:   member 0: .*  NEARLY FULL$" "$OUT" || fail "nearly full: $(cat "$OUT")"
grep -q "^action:  member 0 ('.*') is nearly full: .* (the warning is at 1% used, -o space_warn)" "$OUT" ||
	fail "nearly full: no action: $(cat "$OUT")"
check_json "$mb" "nearly full" "
assert j['nearly_full'] is True and j['members'][0]['nearly_full'] is True and 'nearly-full' in j['conditions']
"
"$RAIDFS" status -x > "$T/x"
mine "$T/x" | grep -q "^sb : raid1 .* usable on $mb  (nearly-full)$" || fail "status -x: nearly full: $(cat "$T/x")"
for _ in $(seq 1 50); do [ "$(grep -c "^NearlyFull [01] " "$T/events" 2>/dev/null)" = 2 ] && break; sleep 0.1; done
[ "$(grep -c "^NearlyFull [01] " "$T/events")" = 2 ] || fail "no NearlyFull event for each member: $(cat "$T/events" 2>&1)"
# ---- raid1 with one copy left
expect_rc 0 "$RAIDFS" fail "$mb" 0
expect_rc 1 "$RAIDFS" status "$mb"
grep -qx "state:   degraded, no redundancy left" "$OUT" || fail "raid1: $(cat "$OUT")"

rfs_unmount_wait "$mb" || fail "unmount b"
rfs_unmount_wait "$ma" || fail "unmount a"
log "ok: status of every array, no redundancy left, scrub errors, --wait, space"
exit 0
