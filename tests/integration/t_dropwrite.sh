#!/bin/bash
# t_dropwrite - the silent write faults do what they say: drop-write makes
# a member acknowledge a shard data write and write nothing (a lost
# write), misdirect-write puts the bytes one chunk before the intended
# place (one chunk after it in stripe 0) and leaves that place old.
#
# raidfs cannot detect either today: this scenario checks the injection
# itself, by reading the shard files of a raid1 (shard offset = logical
# offset) directly, on the member that was hit and on the one that was
# not.  It also checks the status text, clear, the refusal of an errno,
# and that the file's metadata record still goes out (only data writes
# are dropped).
#
# Tiers: quick and long are the same (a few seconds).
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

C=$T/r1
mem=$(make_members 2 "r1/d")
set -- $mem
d0=$1 d1=$2
mnt=$C/mnt
CH=4096
expect_rc 0 "$RAIDFS" create --level raid1 --chunk 4K --name dropwrite $mem
rfs_mount "$(join_members $mem)" "$mnt" -o write_policy=writethrough,read_policy=nora || fail "mount"

# bytes COUNT SEED: COUNT reproducible bytes, different for each SEED
bytes() { "$PY" -c 'import random,sys; sys.stdout.buffer.write(random.Random(int(sys.argv[2])).randbytes(int(sys.argv[1])))' "$1" "$2"; }
# at FILE OFF LEN: LEN bytes of FILE at OFF, as hex
at() { dd if="$1" bs=1 skip="$2" count="$3" 2>/dev/null | od -An -v -tx1 | tr -d ' \n'; }
# put SRC OFF: SRC's bytes at OFF of the array's file f, one write
put() { dd if="$1" of="$mnt/f" bs="$(stat -c %s "$1")" seek="$2" oflag=seek_bytes conv=notrunc 2>/dev/null || fail "write at $2"; }
# faults J: member J's injected faults, as status says them
faults() { "$RAIDFS" status "$mnt" | awk -v j="$1" '$1 == j { on = 1; next } /^  +[0-9]+ / { on = 0 } on && /injected faults:/ { sub(/.*injected faults: /, ""); print }'; }
# same WHAT FILE1 OFF1 FILE2 OFF2: the chunks are equal
same() { [ "$(at "$2" "$3" $CH)" = "$(at "$4" "$5" $CH)" ] || fail "$1"; }
differ() { [ "$(at "$2" "$3" $CH)" != "$(at "$4" "$5" $CH)" ] || fail "$1"; }

bytes $((16 * CH)) 1 > "$C/old"
cp "$C/old" "$mnt/f" || fail "first write"
sync
cmp -s "$C/old" "$d0/f" && cmp -s "$C/old" "$d1/f" || fail "the shards do not hold the file after the first write"

# ---- bad arguments
expect_rc 1 "$RAIDFS" inject "$mnt" 1 drop-write EIO
grep -q "takes no errno" "$ERR" || fail "drop-write EIO: $(cat "$ERR")"
expect_rc 1 "$RAIDFS" inject "$mnt" 1 misdirect-write count
expect_rc 1 "$RAIDFS" inject "$mnt" 1 drop-write prob 2
[ -z "$(faults 1)" ] || fail "a refused injection left faults: $(faults 1)"

# ---- drop-write count 1: the next data write of member 1 is lost
bytes $CH 2 > "$C/new1"
expect_rc 0 "$RAIDFS" inject "$mnt" 1 drop-write count 1
[ "$(faults 1)" = "drop-write count 1" ] || fail "status after drop-write count 1: '$(faults 1)'"
put "$C/new1" $((5 * CH))
[ -z "$(faults 1)" ] || fail "the rule should have cleared after one write: '$(faults 1)'"
same "member 0 should hold the new bytes" "$d0/f" $((5 * CH)) "$C/new1" 0
same "member 1 should keep the old bytes (the write was dropped)" "$d1/f" $((5 * CH)) "$C/old" $((5 * CH))
differ "the new bytes should differ from the old" "$C/new1" 0 "$C/old" $((5 * CH))
[ "$(stat -c %s "$d1/f")" = $((16 * CH)) ] || fail "member 1's shard changed length"
"$RAIDFS" status --json "$mnt" | grep -q '"index": 1, [^}]*"state": "online"' ||
	fail "member 1 should stay online (the write succeeded): $("$RAIDFS" status "$mnt")"

# the rule is spent: the next write reaches both members
bytes $CH 3 > "$C/new2"
put "$C/new2" $((7 * CH))
same "member 0 should hold the second write" "$d0/f" $((7 * CH)) "$C/new2" 0
same "member 1 should hold the second write (count 1 is spent)" "$d1/f" $((7 * CH)) "$C/new2" 0
cp "$C/old" "$C/exp0"
dd if="$C/new1" of="$C/exp0" bs=$CH seek=5 conv=notrunc 2>/dev/null
dd if="$C/new2" of="$C/exp0" bs=$CH seek=7 conv=notrunc 2>/dev/null
cp "$C/old" "$C/exp1"
dd if="$C/new2" of="$C/exp1" bs=$CH seek=7 conv=notrunc 2>/dev/null
cmp -s "$C/exp0" "$d0/f" || fail "member 0's shard has other changes than the two writes"
cmp -s "$C/exp1" "$d1/f" || fail "member 1's shard has other changes than the second write"

# ---- drop-write every, until clear
expect_rc 0 "$RAIDFS" inject "$mnt" 1 drop-write every
[ "$(faults 1)" = "drop-write every" ] || fail "status after drop-write every: '$(faults 1)'"
bytes $CH 4 > "$C/new3"
bytes $CH 5 > "$C/new4"
put "$C/new3" $((2 * CH))
put "$C/new4" $((9 * CH))
same "every: member 1 kept chunk 2" "$d1/f" $((2 * CH)) "$C/old" $((2 * CH))
same "every: member 1 kept chunk 9" "$d1/f" $((9 * CH)) "$C/old" $((9 * CH))
same "every: member 0 got chunk 9" "$d0/f" $((9 * CH)) "$C/new4" 0
expect_rc 0 "$RAIDFS" inject "$mnt" 1 clear
[ -z "$(faults 1)" ] || fail "clear left: '$(faults 1)'"
put "$C/new3" $((3 * CH))
same "after clear: member 1 got chunk 3" "$d1/f" $((3 * CH)) "$C/new3" 0

# ---- misdirect-write count 1: stripe 6 lands on stripe 5 of member 1
bytes $CH 6 > "$C/new5"
cp "$d1/f" "$C/before1"
expect_rc 0 "$RAIDFS" inject "$mnt" 1 misdirect-write count 1
[ "$(faults 1)" = "misdirect-write count 1" ] || fail "status after misdirect-write count 1: '$(faults 1)'"
put "$C/new5" $((6 * CH))
[ -z "$(faults 1)" ] || fail "misdirect count 1 should be spent: '$(faults 1)'"
same "misdirect: member 0 got chunk 6" "$d0/f" $((6 * CH)) "$C/new5" 0
same "misdirect: member 1 kept chunk 6" "$d1/f" $((6 * CH)) "$C/before1" $((6 * CH))
same "misdirect: member 1 got the bytes one chunk before (chunk 5)" "$d1/f" $((5 * CH)) "$C/new5" 0
cp "$C/before1" "$C/exp1"
dd if="$C/new5" of="$C/exp1" bs=$CH seek=5 conv=notrunc 2>/dev/null
cmp -s "$C/exp1" "$d1/f" || fail "misdirect: member 1's shard has other changes"

# in stripe 0 the bytes go one chunk after
bytes $CH 7 > "$C/new6"
cp "$d1/f" "$C/before1"
expect_rc 0 "$RAIDFS" inject "$mnt" 1 misdirect-write count 1
put "$C/new6" 0
same "misdirect in stripe 0: member 1 kept chunk 0" "$d1/f" 0 "$C/before1" 0
same "misdirect in stripe 0: member 1 got the bytes at chunk 1" "$d1/f" $CH "$C/new6" 0
same "misdirect in stripe 0: member 0 got chunk 0" "$d0/f" 0 "$C/new6" 0

# ---- only data writes: with drop-write every, a file grown and closed
# still gets its metadata record (size) on member 1
expect_rc 0 "$RAIDFS" inject "$mnt" 1 drop-write every
head -c $CH /dev/zero | tr '\0' 'z' >> "$mnt/f" || fail "append"
expect_rc 0 "$RAIDFS" inject "$mnt" 1 clear
rfs_unmount_wait "$mnt" || fail "unmount"
"$PY" - "$d1/f" $((17 * CH)) <<'PYEOF' || fail "member 1's metadata record does not have the new size"
import os, struct, sys
m = os.getxattr(sys.argv[1], "user.raidfs.meta")
size = struct.unpack_from("<Q", m, 40)[0]
sys.exit(0 if size == int(sys.argv[2]) else 1)
PYEOF
[ "$(stat -c %s "$d0/f")" = $((17 * CH)) ] || fail "member 0's shard should have the appended chunk"
log "ok"
