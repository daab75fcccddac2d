#!/bin/bash
# buffered 4 KiB writes (dd, 128 MiB, conv=fsync) and a 4 KiB create+write+close loop, raid5 with and without -o writeback_cache, and passthrough_ll
W=$(mktemp -d /tmp/raidfs-wb.XXXXXX); BIN=$1
mkdir -p $W/t; mount -t tmpfs -o size=2g tmpfs $W/t
pids=()
for c in wb nowb; do mkdir -p $W/t/$c/m{0,1,2,3} $W/mnt-$c; $BIN create --level raid5 --name wb$c $W/t/$c/m0 $W/t/$c/m1 $W/t/$c/m2 $W/t/$c/m3 >/dev/null; done
$BIN mount -o log=$W/wb.log,writeback_cache $W/t/wb/m0:$W/t/wb/m1:$W/t/wb/m2:$W/t/wb/m3 $W/mnt-wb
$BIN mount -o log=$W/nowb.log $W/t/nowb/m0:$W/t/nowb/m1:$W/t/nowb/m2:$W/t/nowb/m3 $W/mnt-nowb
mkdir -p $W/t/pt $W/mnt-pt; GLIBC_TUNABLES=glibc.malloc.mmap_threshold=8388608:glibc.malloc.trim_threshold=1073741824 /tmp/passthrough_ll -o source=$W/t/pt $W/mnt-pt
for r in 1 2 3; do for c in pt wb nowb; do
  t0=$EPOCHREALTIME; dd if=/dev/zero of=$W/mnt-$c/f bs=4k count=32768 conv=fsync status=none; t1=$EPOCHREALTIME
  python3 -c "
import os,sys
d=sys.argv[1]; os.makedirs(d, exist_ok=True)
for i in range(2000):
    fd=os.open(d+'/f%d'%i, os.O_CREAT|os.O_WRONLY, 0o644); os.write(fd, b'x'*4096); os.close(fd)" $W/mnt-$c/small; t2=$EPOCHREALTIME
  rm -rf $W/mnt-$c/small $W/mnt-$c/f
  echo "$r $c dd4k_MiBps=$(echo "128 / ($t1 - $t0)" | bc -l | cut -c1-6) create2000_s=$(echo "$t2 - $t1" | bc | cut -c1-5)"
done; done
for c in pt wb nowb; do fusermount3 -u $W/mnt-$c; done; sleep 1; umount -l $W/t; rm -rf $W
