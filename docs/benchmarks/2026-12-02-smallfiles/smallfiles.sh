#!/bin/bash
# smallfiles.sh RAIDFS [LEVEL] - the cost of writing each file's metadata
# with its shards at their full length (the "exact" flag): on a fresh tmpfs, a
# LEVEL (raid5) array over 4 members, then timed:
#   create   5,000 files of 1-12 KiB written and closed (a metadata write
#            at create and at close: the shards' length is looked at, and
#            extended where short, each time)
#   sparse   500 files written at two offsets 1 MiB apart (their shards
#            short at close: extended there)
#   open     the 5,000 files opened and read again (each shard's length
#            checked against the size at the first open)
# Alternate two binaries to compare them:
#   for r in 1 2 3; do for b in OLD NEW; do ./smallfiles.sh $b; done; done
set -eu
R=$1 L=${2:-raid5}
W=$(mktemp -d /tmp/raidfs-small.XXXXXX)
mkdir -p "$W/t" "$W/mnt"
mount -t tmpfs -o size=4g tmpfs "$W/t"
cleanup() { mountpoint -q "$W/mnt" && "$R" unmount "$W/mnt"; umount -l "$W/t"; rm -rf "$W"; }
trap cleanup EXIT
mem=""
for i in 1 2 3 4; do mkdir "$W/t/d$i"; mem="$mem $W/t/d$i"; done
"$R" create --level "$L" --name small $mem >/dev/null
mem=${mem# }
"$R" mount "${mem// /:}" "$W/mnt"
python3 - "$W/mnt" "$R" <<'PY'
import os, sys, time, random, subprocess
mnt, R = sys.argv[1], sys.argv[2]
r = random.Random(1)
data = os.urandom(12288)
os.mkdir(mnt + "/s")
t = time.monotonic()
for i in range(5000):
    fd = os.open("%s/s/f%d" % (mnt, i), os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, data[:r.randrange(1024, 12289)])
    os.close(fd)
create = time.monotonic() - t
t = time.monotonic()
for i in range(500):
    fd = os.open("%s/s/p%d" % (mnt, i), os.O_CREAT | os.O_WRONLY, 0o644)
    os.pwrite(fd, data[:100], 5000)
    os.pwrite(fd, data[:7], 1 << 20)
    os.close(fd)
sparse = time.monotonic() - t
print("create %.3f s, sparse %.3f s" % (create, sparse), end=", ")
sys.stdout.flush()
# the next opens build their open-file state from the members again
subprocess.run([R, "unmount", mnt], check=True)
PY
"$R" mount "${mem// /:}" "$W/mnt"
python3 - "$W/mnt" <<'PY'
import os, sys, time
mnt = sys.argv[1]
t = time.monotonic()
for i in range(5000):
    with open("%s/s/f%d" % (mnt, i), "rb") as f:
        f.read()
print("open+read %.3f s" % (time.monotonic() - t))
PY
