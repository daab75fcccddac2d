#!/bin/bash
# t_posix.sh - POSIX behaviour of a raidfs mount (issue 2, point 6).
#
# For raid5 (4 members), raid1 (2 members) and raid0 (2 members): create,
# mount with -o allow_other, run tests/tools/posix_check.py --uid-tests
# (every filesystem operation compared with local-filesystem behaviour,
# ownership and permission checks as an unprivileged uid), unmount, and
# 'raidfs check' must be clean.
#
# Then the long-path scenario: members whose own path is ~1 KB deep and a
# path inside the mount of ~3500 bytes, so member prefix + inner path is
# longer than PATH_MAX (4096): a daemon that builds absolute member paths
# fails here, one that resolves relative to a member directory descriptor
# does not.
#
# Last, fsync of a directory must sync it on every member (a member that
# cannot is failed).
#
# Needs root (uid checks, allow_other) and /dev/fuse; otherwise skips.
#
# Tiers: quick - posix_check on raid5 only; long - raid5, raid1, raid0.
. "$(dirname "$0")/lib.sh"

need_fuse
[ "$(id -u)" = 0 ] || skip "needs root (uid checks switch users; allow_other)"
# the unprivileged uid of the uid checks must be able to reach the mounts
chmod 755 "$T"

FAILS=0
bad() { log "FAIL: $*"; FAILS=$((FAILS + 1)); }

run_level() {
	local level=$1 n=$2 data=$3 members mnt rc t0 left
	t0=$SECONDS
	members=$(make_members "$n" "$level-m")
	mnt=$T/mnt-$level
	log "$level x$n: create"
	if ! "$RAIDFS" create --level "$level" --name "posix-$level" $members >"$T/create-$level.out" 2>&1; then
		cat "$T/create-$level.out" >&2
		bad "$level: 'raidfs create --level $level $members' failed"
		return
	fi
	if ! rfs_mount "$(join_members $members)" "$mnt" -o allow_other; then
		bad "$level: mount -o allow_other failed"
		return
	fi
	chmod 755 "$mnt" 2>/dev/null
	log "$level x$n: posix_check.py --uid-tests"
	timeout 150 "$PY" "$TOOLS/posix_check.py" --uid-tests "$mnt" >"$T/posix-$level.log" 2>&1
	rc=$?
	sed "s/^/    [$level] /" "$T/posix-$level.log" >&2
	if [ "$rc" -ne 0 ]; then
		[ "$rc" = 124 ] && bad "$level: posix_check.py timed out"
		bad "$level: posix_check.py exit $rc (failing checks listed above)"
	fi
	mountpoint -q "$mnt" || { bad "$level: the mount vanished during posix_check (daemon crash?)"; return; }
	# nothing of raidfs's own (.raidfs/) shows in the mount, and the
	# scratch tree posix_check removed is gone
	left=$(ls -A "$mnt")
	[ -z "$left" ] || bad "$level: the mount root is not empty after posix_check: $left"
	# statfs reports what the level really allows: the members here share
	# one filesystem, so capacity = its size x data members per stripe
	"$PY" - "$mnt" "${members%% *}" "$data" <<'EOF' || bad "$level: statfs capacity does not match the level"
import os, sys
m, member, data = os.statvfs(sys.argv[1]), os.statvfs(sys.argv[2]), int(sys.argv[3])
got, want = m.f_blocks * m.f_frsize, member.f_blocks * member.f_frsize * data
avail, wavail = m.f_bavail * m.f_frsize, member.f_bavail * member.f_frsize * data
print("    statfs: %.1f GiB total (expected %.1f), %.1f GiB available (expected %.1f)" % (
    got / 2**30, want / 2**30, avail / 2**30, wavail / 2**30))
ok = abs(got - want) <= want * 0.02 and abs(avail - wavail) <= wavail * 0.05 + 2**30
sys.exit(0 if ok else 1)
EOF
	rfs_unmount "$mnt" || bad "$level: unmount failed"
	mountpoint -q "$mnt" && bad "$level: still mounted after 'raidfs unmount'"
	"$RAIDFS" check "$(join_members $members)" >"$T/check-$level.out" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ]; then
		sed "s/^/    [check $level] /" "$T/check-$level.out" | head -n 30 >&2
		bad "$level: 'raidfs check' after posix_check exit $rc, expected 0 (clean)"
	fi
	log "$level x$n: done in $((SECONDS - t0))s"
}

# level, members, data members per stripe (quick tier: raid5 only)
run_level raid5 4 3
if long_tier; then
	run_level raid1 2 1
	run_level raid0 2 2
fi

# ---------------------------------------------------------------------------
# long paths: member prefix + path inside the mount > PATH_MAX
# ---------------------------------------------------------------------------
t0=$SECONDS
deep=$T/$(printf 'p%.0s' $(seq 1 240))/$(printf 'q%.0s' $(seq 1 240))/$(printf 'r%.0s' $(seq 1 240))/$(printf 's%.0s' $(seq 1 240))
mkdir -p "$deep"
members="$deep/m1 $deep/m2 $deep/m3"
mkdir -p $members
mnt=$T/mnt-long
log "long paths: member prefix ${#deep} bytes, raid5 x3"
if ! "$RAIDFS" create --level raid5 --name longpath $members >"$T/create-long.out" 2>&1; then
	cat "$T/create-long.out" >&2
	bad "long paths: create with ${#deep}-byte member paths failed"
elif ! rfs_mount "$(join_members $members)" "$mnt"; then
	bad "long paths: mount with ${#deep}-byte member paths failed"
else
	# 14 components of 250 bytes: ~3500 bytes below the mount root.  Work
	# relative to a directory descriptor so the test itself never needs a
	# path longer than one component.
	"$PY" - "$mnt" <<'EOF' >"$T/long.log" 2>&1
import os, sys, random
mnt = sys.argv[1]
comps = ["%02d" % i + "L" * 248 for i in range(14)]
inner = "/".join(comps) + "/file"
print("inner path %d bytes, member prefix + inner path > 4096" % len(inner))
data = random.Random(7).randbytes(300000)
fd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
for c in comps:
    os.mkdir(c, 0o755, dir_fd=fd)
    nfd = os.open(c, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    os.close(fd)
    fd = nfd
problems = []
f = os.open("file", os.O_CREAT | os.O_RDWR, 0o644, dir_fd=fd)
view = memoryview(data)
off = 0
while off < len(data):
    off += os.pwrite(f, view[off:off + 65536 + 7], off)
os.fsync(f)
os.close(f)
f = os.open("file", os.O_RDONLY, dir_fd=fd)
got = b""
while True:
    b = os.read(f, 1 << 20)
    if not b:
        break
    got += b
os.close(f)
if got != data:
    problems.append("content read back differs (%d bytes, expected %d)" % (len(got), len(data)))
st = os.stat("file", dir_fd=fd)
if st.st_size != len(data):
    problems.append("st_size %d, expected %d" % (st.st_size, len(data)))
os.rename("file", "renamed", src_dir_fd=fd, dst_dir_fd=fd)
os.symlink("renamed", "link", dir_fd=fd)
os.link("renamed", "hard", src_dir_fd=fd, dst_dir_fd=fd)
os.setxattr("/proc/self/fd/%d/renamed" % fd, "user.long", b"x")
if sorted(os.listdir(fd)) != ["hard", "link", "renamed"]:
    problems.append("readdir of the deepest directory: %s" % sorted(os.listdir(fd)))
# the full path, as a program would use it (shorter than PATH_MAX from /)
full = os.path.join(mnt, "/".join(comps), "renamed")
if len(full) < 4096:
    with open(full, "rb") as fh:
        if fh.read() != data:
            problems.append("read through the full %d-byte path differs" % len(full))
os.close(fd)
for p in problems:
    print("FAIL", p)
sys.exit(1 if problems else 0)
EOF
	rc=$?
	sed 's/^/    [long] /' "$T/long.log" >&2
	[ "$rc" -eq 0 ] || bad "long paths: working ~3500 bytes deep in the mount failed (exit $rc)"
	rfs_unmount "$mnt" || bad "long paths: unmount failed"
	"$RAIDFS" check "$(join_members $members)" >"$T/check-long.out" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ]; then
		head -n 20 "$T/check-long.out" >&2
		bad "long paths: 'raidfs check' exit $rc, expected 0 (clean)"
	fi
	# the shard exists on every member, at member prefix + inner path
	n=$(cd "$deep" && find m1 m2 m3 -name renamed -type f | wc -l)
	[ "$n" = 3 ] || bad "long paths: expected a shard of the deep file on each of 3 members, found $n"
	if rfs_mount "$(join_members $members)" "$mnt"; then
		"$PY" - "$mnt" <<'EOF' || bad "long paths: deep file wrong after remount"
import os, sys, random
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
for i in range(14):
    n = os.open("%02d" % i + "L" * 248, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    os.close(fd)
    fd = n
f = os.open("renamed", os.O_RDONLY, dir_fd=fd)
got = b""
while True:
    b = os.read(f, 1 << 20)
    if not b:
        break
    got += b
sys.exit(0 if got == random.Random(7).randbytes(300000) else 1)
EOF
		rfs_unmount "$mnt" || bad "long paths: second unmount failed"
	else
		bad "long paths: remount failed"
	fi
fi
log "long paths: done in $((SECONDS - t0))s"

# fsync of a directory (write, fsync, rename, fsync the directory: how
# programs make a rename durable) must reach every member: with member 1
# refusing to sync, the fsync succeeds on the others and member 1 is
# failed, as for a file's fsync; the same for member 2 with the directory
# renamed while it was open (raid6).  (Before raidfs had fsyncdir, the kernel
# took it for a success and no member synced anything.)
members=$(make_members 4 sync-m)
mnt=$T/mnt-sync
"$RAIDFS" create --level raid6 --name sync $members >/dev/null 2>&1 || bad "fsyncdir: create failed"
if rfs_mount "$(join_members $members)" "$mnt"; then
	mkdir "$mnt/d" && echo data >"$mnt/d/tmp" && mv "$mnt/d/tmp" "$mnt/d/f" || bad "fsyncdir: setup failed"
	"$PY" -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY|os.O_DIRECTORY); os.fsync(fd)' "$mnt/d" ||
		bad "fsyncdir: fsync of a directory failed on a healthy array"
	"$RAIDFS" status --json "$mnt" | grep -q '"index": 1, [^}]*"state": "online"' ||
		bad "fsyncdir: member 1 not online before the injection"
	"$RAIDFS" inject "$mnt" 1 fsync-error EIO >/dev/null || bad "fsyncdir: inject failed"
	"$PY" -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY|os.O_DIRECTORY); os.fsync(fd)' "$mnt/d" ||
		bad "fsyncdir: fsync of a directory failed with one member refusing to sync"
	"$RAIDFS" status --json "$mnt" | grep -q '"index": 1, [^}]*"state": "faulty"' ||
		bad "fsyncdir: member 1 could not sync the directory and was not failed (was it asked at all?)"
	# a directory renamed while open: its old name is no use, the members'
	# filesystems are synced whole (member 2 refuses: failed too)
	"$RAIDFS" inject "$mnt" 2 fsync-error EIO >/dev/null || bad "fsyncdir: inject failed"
	"$PY" -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY|os.O_DIRECTORY); os.rename(sys.argv[1], sys.argv[2]); os.fsync(fd)' "$mnt/d" "$mnt/e" ||
		bad "fsyncdir: fsync of a directory renamed while open failed"
	"$RAIDFS" status --json "$mnt" | grep -q '"index": 2, [^}]*"state": "faulty"' ||
		bad "fsyncdir: member 2 could not sync and was not failed (directory renamed while open)"
	mv "$mnt/e" "$mnt/d" || bad "fsyncdir: rename back failed"
	[ "$(cat "$mnt/d/f")" = data ] || bad "fsyncdir: the renamed file reads wrong"
	rfs_unmount "$mnt" || bad "fsyncdir: unmount failed"
else
	bad "fsyncdir: mount failed"
fi
log "fsyncdir: done"

if [ "$FAILS" -ne 0 ]; then
	fail "$FAILS problem(s), see above"
fi
log "all passed"
exit 0
