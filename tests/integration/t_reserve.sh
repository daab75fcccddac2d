#!/bin/bash
# t_reserve.sh - the space a writer reserves ahead on the members is given
# back: a file written in order reserves a step past its end on every
# member (one fallocate for many writes), and what it did not grow into
# goes back at its last close or with a truncate, so that the members
# hold what the files hold.
#
# 1. A file written in 1 MiB appends, still open: some member's shard has
#    room allocated past its end (the step ahead is there); after the
#    close, no shard has more than its length allocated (a page and a few
#    blocks of slack), and the file reads back identical.
# 2. The same with a truncate in the middle (down, then appends again),
#    and a second open that appends to the closed file.
# 3. The offline check is clean.
# (ENOSPC with the step: t_space, whose members fill up.)
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

# (the step is taken only while every member keeps 64 MiB free after it)
[ "$(df -Pk "$T" | awk 'NR == 2 { print $4 }')" -gt $((512 * 1024)) ] || skip "less than 512 MiB free under $T"
SLACK=$((64 * 1024))	# (a filesystem's own blocks for a file's extents)
mem=$(make_members 4)
members=$(join_members $mem)
mnt=$T/mnt
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 64K $mem
rfs_mount "$members" "$mnt" || fail "mount failed"

# shards_over NAME: the most any member's shard of NAME has allocated past
# its length (bytes), the length rounded up to a page; waits up to 10 s
# for it to come down to SLACK (FUSE sends the release of a closed file
# after close() returned)
shards_over() {
	"$PY" - "$1" "$SLACK" $mem <<'PYEOF'
import os, sys, time
for _ in range(100):
    worst = 0
    for d in sys.argv[3:]:
        st = os.stat(os.path.join(d, sys.argv[1]))
        worst = max(worst, st.st_blocks * 512 - (st.st_size + 4095) // 4096 * 4096)
    if worst <= int(sys.argv[2]):
        break
    time.sleep(0.1)
print(worst)
PYEOF
}

# appends NAME MIB [TRUNC_AT_MIB]: MIB appends of 1 MiB to NAME in the
# mount and in $T/ref-NAME (O_APPEND), a truncate to TRUNC_AT_MIB after
# half of them; prints the most a shard had allocated past its end while
# the file was open
appends() {
	"$PY" - "$mnt/$1" "$T/ref-$1" "$2" "${3:--1}" "$SEED" "$1" $mem <<'PYEOF'
import os, random, sys
mf, rf, n, cut, seed, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
r = random.Random(seed + name)
fds = [os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) for p in (mf, rf)]
worst = 0
for i in range(n):
    d = r.randbytes(1 << 20)
    for fd in fds:
        os.write(fd, d)
    if i == n // 2 and cut >= 0:
        for fd in fds:
            os.ftruncate(fd, cut << 20)
    for m in sys.argv[7:]:
        st = os.stat(os.path.join(m, name))
        worst = max(worst, st.st_blocks * 512 - (st.st_size + 4095) // 4096 * 4096)
for fd in fds:
    os.close(fd)
print(worst)
PYEOF
}


# ------------------------------------------------ 1. appends, then the close
open_over=$(appends f 24) || fail "appends to f failed"
[ "$open_over" -gt $((1024 * 1024)) ] ||
	fail "while f was written no shard had room reserved past its end ($open_over bytes): no step ahead"
over=$(shards_over f)
[ "$over" -le $SLACK ] || fail "after the close a shard of f has $over bytes allocated past its end: the reservation was not given back"
cmp "$T/ref-f" "$mnt/f" || fail "f differs"
log "ok: appends reserve ahead ($open_over bytes past a shard's end while open), given back at the close"

# ---------------------------------- 2. a truncate in the middle, a second open
appends g 20 3 >/dev/null || fail "appends to g failed"
over=$(shards_over g)
[ "$over" -le $SLACK ] || fail "after a truncate and the close a shard of g has $over bytes allocated past its end"
cmp "$T/ref-g" "$mnt/g" || fail "g differs after a truncate in the middle of its appends"
appends g 5 >/dev/null || fail "appends to g (second open) failed"
over=$(shards_over g)
[ "$over" -le $SLACK ] || fail "after a second open's appends a shard of g has $over bytes allocated past its end"
cmp "$T/ref-g" "$mnt/g" || fail "g differs after the second open's appends"
log "ok: a truncate and a second open keep the members' allocation to what the file holds"

# ------------------------------------------------------------ 3. offline check
rfs_unmount "$mnt" || fail "unmount failed"
expect_rc 0 "$RAIDFS" check "$members"
log "ok: check clean"
exit 0
