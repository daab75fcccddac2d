#!/bin/bash
# t_scrub - the online scrub ('raidfs scrub MOUNTPOINT [--repair|stop]'):
# it names the file and stripe whose parity (raid5, raid6) or mirror copy
# (raid1) differs from its data, changes nothing without --repair, and
# with it recomputes the redundancy, after which the offline check is
# clean; a shard cut short under a closed file is rebuilt (the open's
# check), one deleted by hand is named and put back with --repair; it
# runs alongside a workload without changing its bytes, stops on request
# and at unmount, and refuses a degraded array; a read-only mount
# compares only; a kill -9 during a put-back leaves nothing partial; one
# that cannot be put back is named with the reason.
#
# Tiers: quick - the first part on raid6 only; long - raid5, raid6, raid1.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

# the scrub of redundancy against data (arrays without checksums; the
# scrub by checksum: t_cksum_flips.sh, t_cksum_cases.sh); the put-backs
# alongside a workload and across a kill -9 run with checksums (the
# default) too: a shard put back gets its file's records, and no read
# finds a checksum error
CREATE_ARGS=(--checksum none)
# cksum_total MNT: the members' checksum errors added up
cksum_total() { json "$1" '["members"]' | "$PY" -c 'import ast, sys; print(sum(m["cksum_errors"] for m in ast.literal_eval(sys.stdin.read())))'; }

json() { "$RAIDFS" status --json "$1" | "$PY" -c "import json, sys; print(json.load(sys.stdin)$2)"; }
# newlog: the daemon log lines since the last mark (mark: remember where it ends)
mark() { LOGAT=$(wc -l < "$T/daemon.log"); }
newlog() { tail -n +$((LOGAT + 1)) "$T/daemon.log"; }

for level in $(tier_pick raid6 "raid5 raid6 raid1"); do
	new_array "$level" "$level"
	mkdir -p "$C/ref/a" "$C/ref/b"
	for i in $(seq 1 12); do head -c $((i * 9000)) /dev/urandom > "$C/ref/a/f$i"; done
	head -c 1 /dev/urandom > "$C/ref/b/tiny"
	: > "$C/ref/b/empty"
	truncate -s 200000 "$C/ref/b/sparse"
	cp -a "$C/ref/." "$mnt/"
	cp "$C/ref/a/f9" "$C/orig"
	set -- $mem
	mark
	# a clean array scrubs clean
	expect_rc 0 "$RAIDFS" scrub "$mnt"
	scrub_wait "$mnt" || fail "$level: the scrub did not end"
	[ "$(json "$mnt" '["scrub"]["mismatches"]')" = 0 ] || fail "$level: mismatches on a clean array"
	[ "$(json "$mnt" '["scrub"]["files_done"]')" = 15 ] || fail "$level: not every file was scrubbed: $(json "$mnt" '["scrub"]')"
	# one chunk changed behind the array's back: member 1's shard of a/f9
	printf 'scrubme!' | dd of="$2/a/f9" bs=1 seek=5000 conv=notrunc status=none
	expect_rc 0 "$RAIDFS" scrub "$mnt"
	scrub_wait "$mnt" || fail "$level: the second scrub did not end"
	[ "$(json "$mnt" '["scrub"]["mismatches"]')" = 1 ] || fail "$level: the changed chunk was not found: $(json "$mnt" '["scrub"]')"
	newlog | grep -q "scrub: file 'a/f9': the .* of stripe 1 (offset .*) does not match its data" ||
		fail "$level: the log does not name the file and stripe: $(newlog | grep scrub)"
	"$RAIDFS" status "$mnt" > "$C/status"
	grep -q "^scrub:   finished: 15 of 15 files, .* 1 stripe did not match" "$C/status" ||
		fail "$level: status: $(grep scrub "$C/status")"
	grep -q "action:  the last scrub found 1 stripe .*'raidfs scrub $mnt --repair'" "$C/status" ||
		fail "$level: no action line: $(cat "$C/status")"
	cmp -s <(dd if="$2/a/f9" bs=1 skip=5000 count=8 status=none) <(printf 'scrubme!') ||
		fail "$level: a scrub without --repair changed the member"
	cat "$mnt/a/f9" > "$C/before"
	expect_rc 0 "$RAIDFS" scrub "$mnt" --repair
	scrub_wait "$mnt" || fail "$level: the repair did not end"
	cat "$mnt/a/f9" > "$C/ref/a/f9"
	# parity is recomputed from the data as read; a mirror takes its first
	# copy, which may be the changed one: at most those 8 bytes change
	[ "$level" = raid1 ] || cmp -s "$C/before" "$C/ref/a/f9" || fail "$level: the repair changed the data as read"
	# four copies: the three that agree win
	[ "$level" != raid1 ] || cmp -s "$C/orig" "$C/ref/a/f9" || fail "$level: the repair did not take the copies that agree"
	[ "$(cmp -l "$C/before" "$C/ref/a/f9" | wc -l)" -le 8 ] || fail "$level: the repair changed more than the chunk"
	[ "$(json "$mnt" '["scrub"]["repaired"]')" = 1 ] || fail "$level: not repaired: $(json "$mnt" '["scrub"]')"
	expect_rc 0 "$RAIDFS" scrub "$mnt"
	scrub_wait "$mnt" || fail "$level: the third scrub did not end"
	[ "$(json "$mnt" '["scrub"]["mismatches"]')" = 0 ] || fail "$level: still mismatched after the repair"
	if [ "$level" = raid1 ]; then
		# the copy a reader is served from changed, and read ahead into
		# the cache: the repair's vote takes the others, and the cache
		# must not go on serving the changed bytes
		printf 'scrubme!' | dd of="$2/a/f9" bs=1 seek=$((5 * 4096 + 100)) conv=notrunc status=none
		dd if="$mnt/a/f9" of=/dev/null bs=4096 iflag=direct status=none
		dd if="$mnt/a/f9" of="$C/served" bs=4096 iflag=direct status=none
		cmp -s <(dd if="$C/served" bs=1 skip=$((5 * 4096 + 100)) count=8 status=none) <(printf 'scrubme!') ||
			fail "$level: the changed copy was not the one served (the case below tests nothing)"
		expect_rc 0 "$RAIDFS" scrub "$mnt" --repair
		scrub_wait "$mnt" || fail "$level: the repair of the read copy did not end"
		[ "$(json "$mnt" '["scrub"]["repaired"]')" = 1 ] || fail "$level: read copy not repaired: $(json "$mnt" '["scrub"]')"
		cmp -s "$C/orig" "$mnt/a/f9" || fail "$level: after the repair, the cache still serves the changed copy"
	fi
	# a shard cut short under a closed file: rebuilt by the scrub's open
	truncate -s 4096 "$3/a/f12"
	expect_rc 0 "$RAIDFS" scrub "$mnt"
	scrub_wait "$mnt" || fail "$level: the fourth scrub did not end"
	newlog | grep -q "file 'a/f12': its shard on member 2 .* was rebuilt from the other members" ||
		fail "$level: the short shard was not rebuilt"
	# a shard deleted by hand on member 1: named, then put back with the
	# file's mode and xattrs and its bytes (for parity levels the last
	# part below fails member 2: f10's chunks there are then rebuilt
	# from the shard put back)
	for f in "$mnt/a/f10" "$C/ref/a/f10"; do
		chmod 640 "$f"
		"$PY" -c 'import os, sys; os.setxattr(sys.argv[1], "user.scrubtest", b"kept")' "$f"
	done
	cp "$2/a/f10" "$C/shard"
	rm "$2/a/f10"
	expect_rc 0 "$RAIDFS" scrub "$mnt"
	scrub_wait "$mnt" || fail "$level: the scrub with a missing shard did not end"
	[ "$(json "$mnt" '["scrub"]["missing"]')" = 1 ] || fail "$level: the missing shard was not counted: $(json "$mnt" '["scrub"]')"
	[ -e "$2/a/f10" ] && fail "$level: a scrub without --repair put the shard back"
	"$RAIDFS" status "$mnt" > "$C/status"
	grep -q "^scrub:   finished: 15 of 15 files, .*; 1 shard missing (see the log)" "$C/status" ||
		fail "$level: status: $(grep scrub "$C/status")"
	grep -q "action:  the last scrub found 1 shard missing on its member .*'raidfs scrub $mnt --repair' puts it back" "$C/status" ||
		fail "$level: no action line for the missing shard: $(cat "$C/status")"
	newlog | grep -q "scrub: file 'a/f10': its shard on member 1 .* is missing" ||
		fail "$level: the log does not name the missing shard: $(newlog | grep f10)"
	expect_rc 0 "$RAIDFS" scrub "$mnt" --repair
	scrub_wait "$mnt" || fail "$level: the repair of the missing shard did not end"
	[ "$(json "$mnt" '["scrub"]["restored"]')" = 1 ] || fail "$level: the missing shard was not put back: $(json "$mnt" '["scrub"]')"
	cmp -s "$C/shard" "$2/a/f10" || fail "$level: the shard put back differs from the one deleted"
	[ "$(stat -c %a "$2/a/f10")" = 640 ] || fail "$level: the shard put back has mode $(stat -c %a "$2/a/f10")"
	[ "$("$PY" -c 'import os, sys; print(os.getxattr(sys.argv[1], "user.scrubtest").decode())' "$2/a/f10")" = kept ] ||
		fail "$level: the shard put back lacks the file's xattr"
	"$RAIDFS" status "$mnt" | grep -q "action:.*missing" && fail "$level: an action line for a shard put back"
	mark
	# reads that fail: the stripes are read again through the read path
	# (which rebuilds what it cannot read) and compared; the errors count
	# on the member, which stays online (below the error threshold)
	expect_rc 0 "$RAIDFS" inject "$mnt" 1 read-error count 2
	expect_rc 0 "$RAIDFS" scrub "$mnt"
	scrub_wait "$mnt" || fail "$level: the fifth scrub did not end"
	[ "$(json "$mnt" '["scrub"]["errors"]')" = 0 ] || fail "$level: read errors left: $(json "$mnt" '["scrub"]')"
	[ "$(json "$mnt" '["scrub"]["files_done"]')" = 15 ] || fail "$level: files skipped after a read error"
	[ "$(json "$mnt" '["members"][1]["state"]')" = online ] || fail "$level: member 1 failed on two read errors"
	[ "$(json "$mnt" '["members"][1]["errors"]')" -ge 1 ] || fail "$level: the read errors were not counted on member 1"
	expect_rc 0 "$RAIDFS" inject "$mnt" 1 clear
	rfs_unmount_wait "$mnt" || fail "$level: unmount"
	expect_rc 0 "$RAIDFS" check "$(join_members $mem)"
	rfs_mount "$(join_members $mem)" "$mnt" || fail "$level: mount again"
	# the tree reads back whole, also without a member: the recomputed
	# redundancy is right
	expect_rc 0 "$RAIDFS" fail "$mnt" 2
	workload compare "$mnt" "$C/ref" > "$C/cmp" 2>&1 || { cat "$C/cmp" >&2; fail "$level: the tree differs"; }
	rfs_unmount_wait "$mnt" || fail "$level: last unmount"
	log "ok: $level: a changed chunk found, left alone, then repaired; a short shard rebuilt; a missing one put back"
done

# A scrub with --repair alongside a workload changes none of its bytes; a
# degraded array is refused; stop and unmount end a running scrub.
CREATE_ARGS=()
new_array load raid6
mkdir -p "$C/ref"
workload run --mnt "$mnt" --ref "$C/ref" --seed "$SEED" --ops 300 --chunk 4096 > /dev/null 2>&1 || fail "load: first workload"
# (the second workload in a directory of its own: the shards deleted
# below are of files it does not rename over, which would leave the
# member's namespace different, as any operation a member refuses)
mkdir "$mnt/w" "$C/ref/w"
workload run --mnt "$mnt/w" --ref "$C/ref/w" --seed $((SEED + 1)) --ops 600 --chunk 4096 > "$C/w.out" 2>&1 &
wpid=$!
set -- $mem
restored=0
for round in 1 2 3 4 5; do
	# and shards of files with one name deleted by hand on member 2
	# meanwhile, put back by the scrub
	(cd "$3" && find . \( -path ./.raidfs -o -path ./w \) -prune -o -type f -links 1 -print) |
		shuf -n 2 --random-source=<(yes "$SEED$round") | while read -r f; do rm -f "$3/$f"; done
	"$RAIDFS" scrub "$mnt" --repair > /dev/null 2>&1
	scrub_wait "$mnt" || fail "load: a scrub did not end"
	[ "$(json "$mnt" '["scrub"]["mismatches"]')" = 0 ] || fail "load: mismatches found alongside a workload: $(json "$mnt" '["scrub"]')"
	restored=$((restored + $(json "$mnt" '["scrub"]["restored"]')))
done
[ "$restored" = 10 ] || fail "load: $restored of 10 shards deleted were put back alongside the workload"
wait $wpid || { cat "$C/w.out" >&2; fail "load: the workload failed alongside the scrub"; }
workload compare "$mnt" "$C/ref" > "$C/cmp" 2>&1 || { cat "$C/cmp" >&2; fail "load: the tree differs"; }
expect_rc 0 "$RAIDFS" scrub "$mnt" --repair
scrub_wait "$mnt" || fail "load: the last repair did not end"
expect_rc 0 "$RAIDFS" scrub "$mnt"
scrub_wait "$mnt" || fail "load: the last scrub did not end"
[ "$(json "$mnt" '["scrub"]["missing"]')" = 0 ] || fail "load: shards still missing after the workload: $(json "$mnt" '["scrub"]')"
# every shard put back holds the right bytes: the offline check compares
# each stripe with its parity
rfs_unmount_wait "$mnt" || fail "load: unmount after the shards were put back"
expect_rc 0 "$RAIDFS" check "$(join_members $mem)"
rfs_mount "$(join_members $mem)" "$mnt" || fail "load: mount after the check"
workload compare "$mnt" "$C/ref" > "$C/cmp" 2>&1 || { cat "$C/cmp" >&2; fail "load: the tree differs after the check"; }
[ "$(cksum_total "$mnt")" = 0 ] || fail "load: checksum errors after the put-backs: $(json "$mnt" '["members"]')"
mkdir -p "$mnt/many"
for i in $(seq 1 300); do echo "$i" > "$mnt/many/$i"; done
expect_rc 0 "$RAIDFS" inject "$mnt" 1 latency 5
expect_rc 0 "$RAIDFS" scrub "$mnt"
sleep 0.5
expect_rc 0 "$RAIDFS" scrub "$mnt" stop
scrub_wait "$mnt" || fail "load: stop did not stop the scrub"
json "$mnt" '["scrub"]["last_result"]' | grep -q "^stopped: " || fail "load: $(json "$mnt" '["scrub"]["last_result"]')"
expect_rc 0 "$RAIDFS" scrub "$mnt"
sleep 0.5
expect_rc 0 "$RAIDFS" fail "$mnt" 3
scrub_wait "$mnt" || fail "load: the scrub did not stop when the array became degraded"
json "$mnt" '["scrub"]["last_result"]' | grep -q "no longer optimal" || fail "load: $(json "$mnt" '["scrub"]["last_result"]')"
expect_rc 0 "$RAIDFS" inject "$mnt" 1 clear
expect_rc 1 "$RAIDFS" scrub "$mnt"
grep -q "the array is degraded: a scrub compares complete stripes" "$ERR" || fail "load: degraded: $(cat "$ERR")"
mkdir -p "$C/new"
expect_rc 0 "$RAIDFS" replace "$mnt" 3 "$C/new"
wait_member "$mnt" 3 online || fail "load: rebuild"
for _ in $(seq 1 100); do
	"$RAIDFS" status --json "$mnt" | grep -q '"rebuild": {"active": false' && break
	sleep 0.1
done
expect_rc 0 "$RAIDFS" inject "$mnt" 1 latency 5
expect_rc 0 "$RAIDFS" scrub "$mnt"
sleep 0.3
mark
rfs_unmount_wait "$mnt" || fail "load: unmount during a scrub"
newlog | grep -q "scrub stopped: " || fail "load: the unmount did not stop the scrub: $(newlog | grep scrub)"
log "ok: scrub --repair alongside a workload; stop, degraded and unmount end it"

# A read-only mount compares and writes nothing: --repair is refused with
# what to do, a plain scrub runs; 'stop' with no scrub running says so.
set -- $mem
rfs_mount "$1:$2:$3:$C/new" "$mnt" -o ro || fail "ro: mount -o ro"
expect_rc 1 "$RAIDFS" scrub "$mnt" --repair
grep -q "mounted read-only: 'raidfs scrub' without --repair only compares" "$ERR" || fail "ro: --repair: $(cat "$ERR")"
expect_rc 0 "$RAIDFS" scrub "$mnt"
scrub_wait "$mnt" || fail "ro: the scrub did not end"
json "$mnt" '["scrub"]["last_result"]' | grep -q "^finished: .* 0 stripes did not match" ||
	fail "ro: $(json "$mnt" '["scrub"]["last_result"]')"
expect_rc 1 "$RAIDFS" scrub "$mnt" stop
grep -q "no scrub is running" "$ERR" || fail "ro: stop: $(cat "$ERR")"
rfs_unmount_wait "$mnt" || fail "ro: unmount"
log "ok: a read-only mount: --repair refused, a scrub compares"

# kill -9 while a shard is being put back: nothing partial is left on the
# member (the shard has no name until it is whole); the next mount reads
# around it, the check names it, and the next repair puts it back whole.
new_array crash raid5
head -c $((24 << 20)) /dev/urandom > "$C/ref/big"
cp "$C/ref/big" "$mnt/big"
set -- $mem
cp "$3/big" "$C/shard"
rfs_unmount_wait "$mnt" || fail "crash: unmount"
rm "$3/big"
find "$3/.raidfs/sums" -type f -delete	# (its checksum file too: big is the only file)
rfs_mount "$(join_members $mem)" "$mnt" || fail "crash: mount"
expect_rc 0 "$RAIDFS" inject "$mnt" 1 latency 2	# (a slow fill)
mark
expect_rc 0 "$RAIDFS" scrub "$mnt" --repair
sleep 1
[ "$(json "$mnt" '["scrub"]["active"]')" = True ] || fail "crash: the put-back ended before the kill: $(newlog | grep scrub)"
# (the shard being filled: an unnamed file open in the member's directory)
for fd in /proc/$(daemon_pid "$mnt")/fd/*; do readlink "$fd"; done | grep -qF "$(realpath "$3")/#" ||
	fail "crash: no shard being filled at the kill"
rfs_kill "$mnt" || fail "crash: kill -9"
[ -e "$3/big" ] && fail "crash: a partial shard has a name after kill -9 ($(stat -c %s "$3/big") bytes)"
expect_rc 1 "$RAIDFS" check "$(join_members $mem)"
grep -q "big.*missing" "$OUT" || fail "crash: check does not name the missing shard: $(cat "$OUT")"
rfs_mount "$(join_members $mem)" "$mnt" || fail "crash: mount after kill -9"
cmp -s "$C/ref/big" "$mnt/big" || fail "crash: big reads wrong after the kill"
expect_rc 0 "$RAIDFS" scrub "$mnt" --repair
scrub_wait "$mnt" || fail "crash: the second repair did not end"
[ "$(json "$mnt" '["scrub"]["restored"]')" = 1 ] || fail "crash: not put back: $(json "$mnt" '["scrub"]')"
cmp -s "$C/shard" "$3/big" || fail "crash: the shard put back differs from the one deleted"
# (its checksum file holds, for every row, the record the row's members
# believe: the one with the highest generation; raid5 over 4 members,
# chunk 4K: records of 8 + 4 x 4 + 4 bytes, 32 with the padding)
sums=$(cd "$1" && find .raidfs/sums -type f)
[ -n "$sums" ] && "$PY" - "$sums" "$@" <<'PY' || fail "crash: the shard put back lacks its file's records"
import struct, sys
recs = [open("%s/%s" % (d, sys.argv[1]), "rb").read() for d in sys.argv[2:]]
R = 32
rows = len(recs[0]) // R
assert rows == 24 * 256 // 3 and all(len(r) == len(recs[0]) for r in recs), [len(r) for r in recs]
for x in range(rows):
    row = [r[x * R:(x + 1) * R] for r in recs]
    gens = [struct.unpack("<Q", r[:8])[0] for r in row]
    assert row[2] == row[gens.index(max(gens))], "row %d" % x
PY
rfs_unmount_wait "$mnt" || fail "crash: unmount after the put-back"
expect_rc 0 "$RAIDFS" check "$(join_members $mem)"
# (without member 1, every read of big needs the shard put back on 2 and
# its records)
rfs_mount "$(join_members $mem)" "$mnt" || fail "crash: mount after the check"
expect_rc 0 "$RAIDFS" fail "$mnt" 1
cmp -s "$C/ref/big" "$mnt/big" || fail "crash: big reads wrong without member 1"
[ "$(cksum_total "$mnt")" = 0 ] || fail "crash: checksum errors after the put-back: $(json "$mnt" '["members"]')"
rfs_unmount_wait "$mnt" || fail "crash: last unmount"
log "ok: kill -9 during a put-back leaves nothing partial; the next repair puts it back"

# raid6 with one redundancy chunk of a stripe that cannot be read: the
# other one is still compared with the data, and a data chunk changed
# behind the array's back is found (before, the group was only counted as
# unreadable).
CREATE_ARGS=(--checksum none)
new_array part raid6
rfs_unmount_wait "$mnt" || fail "part: unmount"
rfs_mount "$(join_members $mem)" "$mnt" -o read_error_threshold=1000 || fail "part: mount"
head -c 8192 /dev/urandom > "$C/ref/f"	# one stripe: two data chunks, P and Q
cp "$C/ref/f" "$mnt/f"
set -- $mem
data="" red=""
i=0
for d in "$@"; do
	if cmp -s <(head -c 4096 "$d/f") <(head -c 4096 "$C/ref/f") ||
	   cmp -s <(head -c 4096 "$d/f") <(tail -c 4096 "$C/ref/f"); then
		data="$data $i:$d"
	else
		red="$red $i"
	fi
	i=$((i + 1))
done
dd=$(echo $data | cut -d' ' -f1)
r1=$(echo $red | cut -d' ' -f1)
[ -n "$dd" ] && [ -n "$r1" ] || fail "part: cannot tell data from redundancy: data '$data', redundancy '$red'"
printf 'scrubme!' | dd of="${dd#*:}/f" bs=1 seek=100 conv=notrunc status=none
expect_rc 0 "$RAIDFS" inject "$mnt" "$r1" read-error every
mark
expect_rc 0 "$RAIDFS" scrub "$mnt"
scrub_wait "$mnt" || fail "part: the scrub did not end"
expect_rc 0 "$RAIDFS" inject "$mnt" "$r1" clear
[ "$(json "$mnt" '["scrub"]["mismatches"]')" = 1 ] ||
	fail "part: the changed data chunk was not found against the redundancy that reads: $(json "$mnt" '["scrub"]')"
newlog | grep -q "scrub: file 'f': the parity of stripe 0 .* does not match its data" ||
	fail "part: the log does not name the stripe: $(newlog | grep scrub)"
rfs_unmount_wait "$mnt" || fail "part: unmount at the end"
log "ok: raid6 with a redundancy chunk unreadable: the other is compared"

# A shard that cannot be put back (one name of a hard-linked file deleted
# on a member: a new shard would not be shared by the other name) is
# named with the reason, and the status says what to do.
new_array links raid5
head -c 50000 /dev/urandom > "$C/ref/h1"
cp "$C/ref/h1" "$mnt/h1"
ln "$mnt/h1" "$mnt/h2"
set -- $mem
rm "$2/h1"
mark
expect_rc 0 "$RAIDFS" scrub "$mnt" --repair
scrub_wait "$mnt" || fail "links: the scrub did not end"
[ "$(json "$mnt" '["scrub"]["missing"]')" = 1 ] && [ "$(json "$mnt" '["scrub"]["restored"]')" = 0 ] ||
	fail "links: $(json "$mnt" '["scrub"]')"
[ -e "$2/h1" ] && fail "links: a shard was put back for one name of a hard-linked file"
newlog | grep -q "scrub: file 'h1': its shard on member 1 .* was not put back: the file has more than one name" ||
	fail "links: the log does not say why: $(newlog | grep scrub)"
"$RAIDFS" status "$mnt" | grep -q "action:  the last scrub could not put back 1 missing shard: the log says why" ||
	fail "links: no action line: $("$RAIDFS" status "$mnt")"
cmp -s "$C/ref/h1" "$mnt/h1" || fail "links: h1 reads wrong"
rfs_unmount_wait "$mnt" || fail "links: unmount"
log "ok: a shard that cannot be put back is named, with the reason and what to do"
