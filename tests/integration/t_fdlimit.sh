#!/bin/bash
# t_fdlimit - the daemon's open-file limit.  Each open file takes a
# descriptor per member, so over 8 members the usual soft limit of 1,024
# allows about 120 open files.  The daemon raises its soft limit to the
# hard one at mount.  When even that runs out, the opens past it fail with
# EMFILE - the daemon's shortage is never taken for a member's fault: no
# member is failed (that used to cascade into a failed array), no file is
# opened without one of its shards, and the log says what to do.
. "$(dirname "$0")/lib.sh"
need_fuse

# open_many MNT REF N: hold N new files open at once, each written, then
# close them; prints "held H failed F errnos E" (E: the distinct errors)
open_many() {
	"$PY" - "$@" <<'PYEOF'
import errno, os, sys
mnt, ref, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
fds, failed, errs = [], 0, set()
for i in range(n):
    data = os.urandom(20000 + i)
    fd = None
    try:
        fd = os.open(os.path.join(mnt, "f%d" % i), os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, data)
    except OSError as e:
        failed += 1
        errs.add(errno.errorcode.get(e.errno, str(e.errno)))
        if fd is not None:
            # created, its first write refused (a new file's checksum
            # files are made by it): the file stays, empty
            os.close(fd)
            open(os.path.join(ref, "f%d" % i), "wb").close()
        continue
    with open(os.path.join(ref, "f%d" % i), "wb") as f:
        f.write(data)
    fds.append(fd)
for fd in fds:
    os.close(fd)
print("held %d failed %d errnos %s" % (len(fds), failed, ",".join(sorted(errs)) or "-"))
PYEOF
}

# 1. soft limit 256, hard limit as it is: the daemon takes the hard one,
# and 60 files open at once over 8 members (480 descriptors) all work
mem=$(make_members 8 a/d)
mnt=$T/a/mnt
mkdir -p "$T/a/ref"
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name fda $mem
hard=$(ulimit -H -n)
[ "$hard" = unlimited ] || [ "$hard" -ge 1024 ] || skip "the hard open-file limit here is $hard"
(ulimit -S -n 256 && rfs_mount "$(join_members $mem)" "$mnt") || fail "soft: mount"
MOUNTS+=("$mnt")
pid=$(daemon_pid "$mnt")
got=$(awk '/Max open files/ { print $4 }' "/proc/$pid/limits")
[ "$got" = "$hard" ] || fail "soft: the daemon's open-file limit is $got, the hard limit $hard"
res=$(open_many "$mnt" "$T/a/ref" 60)
[ "$res" = "held 60 failed 0 errnos -" ] || fail "soft: 60 files open at once: $res"
workload compare "$mnt" "$T/a/ref" >/dev/null || fail "soft: the files read back differ"
rfs_unmount_wait "$mnt" || fail "soft: unmount"
log "ok: soft limit 256, hard $hard: the daemon took $got, 60 files open at once over 8 members"

# 2. hard limit 256: the opens past it fail with EMFILE, every member
# stays online, the closed files are whole on every member (any one
# failed, they read back the same)
mem=$(make_members 8 b/d)
mnt=$T/b/mnt
mkdir -p "$T/b/ref"
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name fdb $mem
(ulimit -n 256 && rfs_mount "$(join_members $mem)" "$mnt") || fail "hard: mount"
MOUNTS+=("$mnt")
res=$(open_many "$mnt" "$T/b/ref" 60)
[[ $res =~ ^held\ ([0-9]+)\ failed\ ([0-9]+)\ errnos\ EMFILE$ ]] && [ "${BASH_REMATCH[2]}" -gt 0 ] ||
	fail "hard: 60 files open at once under a limit of 256: want some to fail with EMFILE only, got: $res"
expect_rc 0 "$RAIDFS" status "$mnt"
grep -q "faulty" "$OUT" && fail "hard: a member was failed for the daemon's own shortage: $(cat "$OUT")"
grep -q "raidfs is short of file descriptors (Too many open files; open-file limit 256).*raise the limit" "$T/daemon.log" ||
	fail "hard: the log does not say what ran out: $(grep -a "error" "$T/daemon.log" | head -3)"
for j in 0 4 7; do
	expect_rc 0 "$RAIDFS" fail "$mnt" $j
	workload compare "$mnt" "$T/b/ref" >"$T/cmp.out" 2>&1 ||
		{ cat "$T/cmp.out" >&2; fail "hard: the files differ with member $j failed"; }
	expect_rc 0 "$RAIDFS" add "$mnt" "$T/b/d$((j + 1))"
	wait_member "$mnt" $j online || fail "hard: member $j not back: $("$RAIDFS" status "$mnt")"
done
rfs_unmount_wait "$mnt" || fail "hard: unmount"
log "ok: hard limit 256: $res, no member failed, the files whole with members 0, 4, 7 failed in turn"
exit 0
