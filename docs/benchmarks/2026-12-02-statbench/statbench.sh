#!/bin/bash
# statbench.sh RAIDFS: stat of 5,000 files x3 and 200,000 fstat of one open
# file, on raid5/4 over tmpfs; prints seconds
set -eu
R=$1
W=$(mktemp -d /tmp/raidfs-statbench.XXXXXX)
mount -t tmpfs -o size=2g tmpfs $W
cleanup() { mountpoint -q $W/mnt && $R unmount $W/mnt; umount -l $W; rmdir $W; }
trap cleanup EXIT
mkdir $W/d1 $W/d2 $W/d3 $W/d4 $W/mnt
$R create --level raid5 --name sb $W/d1 $W/d2 $W/d3 $W/d4 >/dev/null
$R mount $W/d1:$W/d2:$W/d3:$W/d4 $W/mnt
python3 - $W/mnt <<'PY'
import os, sys, time
m = sys.argv[1]
for i in range(5000):
    open(os.path.join(m, "f%d" % i), "wb").close()
t = time.perf_counter()
for r in range(3):
    for i in range(5000):
        os.stat(os.path.join(m, "f%d" % i))
t1 = time.perf_counter() - t
fd = os.open(os.path.join(m, "f1"), os.O_RDWR)
t = time.perf_counter()
for i in range(200000):
    os.fstat(fd)
t2 = time.perf_counter() - t
os.close(fd)
print("stat 15000: %.3f s  fstat 200000: %.3f s" % (t1, t2))
PY
