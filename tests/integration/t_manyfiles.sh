#!/bin/bash
# t_manyfiles.sh - a tree of 100,000 files under a 20,000 open-file limit.
#
# Issue 2, point 6: the daemon's open descriptors grow with the files that
# are open, not with the files it has seen.  On a raid5 x4 mount: create
# 100,000 small files in 100 directories, then look every one of them up
# (stat), count them through readdir, read a sample back, and watch the
# daemon's descriptor count in /proc/PID/fd: it must stay below 1000 while
# no file is open (a daemon keeping a descriptor per inode it has seen, as
# the libfuse passthrough_ll example does, has 100,000 and fails with
# EMFILE long before).  Then 2,000 files are held open at once and must all
# read correctly, and the count must drop back once they are closed.
# Finally unmount, remount, and count and sample again.
#
# Tiers: quick - 5,000 files in 5 directories; long - 100,000.
# Environment: NDIRS, PERDIR (files per directory, 1000).
#
# The scratch tree goes to /dev/shm when TMPDIR is not set and it has room:
# the scenario is about descriptors, not disks, and half a million member
# files are created and removed several times faster on tmpfs (~1 GB).
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] &&
	[ "$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')" -gt 4000000 ] 2>/dev/null; then
	export TMPDIR=/dev/shm
fi
. "$(dirname "$0")/lib.sh"

need_fuse

# quick tier: 5,000 files (still five times the descriptors allowed idle)
NDIRS=${NDIRS:-$(tier_pick 5 100)}
PERDIR=${PERDIR:-1000}
members=$(make_members 4)
mnt=$T/mnt
log "create raid5 x4"
"$RAIDFS" create --level raid5 --name manyfiles $members || fail "raidfs create failed"
rfs_mount "$(join_members $members)" "$mnt" || fail "mount failed"

pids=$(pgrep -f -- "raidfs.* $mnt\$" | tr '\n' ' ')
[ -n "$pids" ] || fail "cannot find the daemon serving $mnt (pgrep -f 'raidfs.* $mnt\$')"
log "daemon pid(s): $pids; the fd limit here is $(ulimit -n)"

# phase: create | verify
manyfiles() {
	"$PY" - "$1" "$mnt" "$NDIRS" "$PERDIR" $pids <<'EOF'
import os, sys, time, random
phase, mnt, ndirs, perdir = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
pids = sys.argv[5:]
problems = []
FD_LIMIT_IDLE = 1000

def daemon_fds():
    n = 0
    for p in pids:
        try:
            n = max(n, len(os.listdir("/proc/%s/fd" % p)))
        except OSError:
            pass
    return n

def content(d, f):
    line = ("%03d/%04d " % (d, f)).encode()
    return line * ((d * 7 + f * 13) % 50 + 1)

def name(d, f=None):
    p = os.path.join(mnt, "dir%03d" % d)
    return p if f is None else os.path.join(p, "file%04d" % f)

def check_idle(when):
    n = daemon_fds()
    print("  daemon holds %d descriptors %s" % (n, when), flush=True)
    if n >= FD_LIMIT_IDLE:
        problems.append("daemon holds %d descriptors %s, expected < %d "
                        "(descriptors must follow open files, not files seen)" % (n, when, FD_LIMIT_IDLE))

t0 = time.monotonic()
total = ndirs * perdir
if phase == "create":
    maxfds = 0
    for d in range(ndirs):
        os.mkdir(name(d))
        for f in range(perdir):
            try:
                fd = os.open(name(d, f), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
                os.write(fd, content(d, f))
                os.close(fd)
            except OSError as e:
                print("FAIL creating file %d (%s): %s; daemon holds %d descriptors" % (
                    d * perdir + f, name(d, f), e, daemon_fds()))
                sys.exit(1)
        if d % 10 == 9:
            n = daemon_fds()
            maxfds = max(maxfds, n)
            print("  %d files created (%.0f/s), daemon descriptors %d" % (
                (d + 1) * perdir, (d + 1) * perdir / (time.monotonic() - t0), n), flush=True)
            if n >= FD_LIMIT_IDLE:
                problems.append("daemon holds %d descriptors after creating %d files (all closed)" % (
                    n, (d + 1) * perdir))
                break
    if problems:
        for p in problems:
            print("FAIL", p)
        sys.exit(1)
    print("  created %d files in %.1fs" % (total, time.monotonic() - t0), flush=True)

# every directory lists exactly its files
t1 = time.monotonic()
seen = 0
for d in range(ndirs):
    names = os.listdir(name(d))
    want = set("file%04d" % f for f in range(perdir))
    if len(names) != len(want) or set(names) != want:
        problems.append("dir%03d lists %d entries (%d unique), expected %d" % (d, len(names), len(set(names)), perdir))
    seen += len(names)
if sorted(os.listdir(mnt)) != ["dir%03d" % d for d in range(ndirs)]:
    problems.append("the mount root does not list exactly the %d directories" % ndirs)
print("  readdir: %d entries in %.1fs" % (seen, time.monotonic() - t1), flush=True)

# look up every file: the kernel now knows 100,000 inodes (after the
# remount, a sample is enough: the descriptor count was proven above)
t1 = time.monotonic()
for d in (range(ndirs) if phase == "create" else range(0, ndirs, 10)):
    for f in range(perdir):
        st = os.stat(name(d, f))
        if st.st_size != len(content(d, f)):
            problems.append("%s: size %d, expected %d" % (name(d, f), st.st_size, len(content(d, f))))
            break
print("  stat of %s files in %.1fs" % ("all" if phase == "create" else "a tenth of the", time.monotonic() - t1), flush=True)
check_idle("after stat of the files")

rng = random.Random(1)
sample = [(rng.randrange(ndirs), rng.randrange(perdir)) for _ in range(2000)]
bad = 0
for d, f in sample:
    with open(name(d, f), "rb") as fh:
        if fh.read() != content(d, f):
            bad += 1
            if bad <= 3:
                problems.append("%s: wrong content" % name(d, f))
if bad:
    problems.append("%d of %d sampled files have wrong content" % (bad, len(sample)))

# 2,000 files open at once
fds = [os.open(name(d, f), os.O_RDONLY) for d, f in sample]
n_open = daemon_fds()
print("  daemon holds %d descriptors with %d files open" % (n_open, len(fds)), flush=True)
bad = sum(1 for fd, (d, f) in zip(fds, sample) if os.pread(fd, 100000, 0) != content(d, f))
if bad:
    problems.append("%d of %d files held open at once read wrong content" % (bad, len(fds)))
for fd in fds:
    os.close(fd)
time.sleep(0.5)  # releases are asynchronous
check_idle("after closing them again")

for p in problems[:20]:
    print("FAIL", p, flush=True)
print("  phase %s took %.1fs" % (phase, time.monotonic() - t0))
sys.exit(1 if problems else 0)
EOF
}

log "creating $((NDIRS * PERDIR)) files in $NDIRS directories"
manyfiles create || fail "create phase failed"
mountpoint -q "$mnt" || fail "the mount vanished (daemon crash?)"
rfs_unmount "$mnt" || fail "unmount failed"
log "remount and verify"
rfs_mount "$(join_members $members)" "$mnt" || fail "remount failed"
pids=$(pgrep -f -- "raidfs.* $mnt\$" | tr '\n' ' ')
[ -n "$pids" ] || fail "cannot find the daemon serving $mnt after remount"
manyfiles verify || fail "verify phase after remount failed"
rfs_unmount "$mnt" || fail "second unmount failed"
log "all passed in ${SECONDS}s"
exit 0
