#!/bin/bash
# contrib/bench/small.sh ROUNDS BIN_A BIN_B [OUT] - small operations, two
# raidfs binaries against each other: unaligned 1000-byte random writes
# (fio, direct, libaio, iodepth 16, 6 s) and a loop of 2000 x (pwrite 8 KiB
# at 0, ftruncate to 100 bytes), raid5 over 4 members on one tmpfs, with
# bbu=file, bbu=shm and write-through; A then B in each round, and
# passthrough_ll over the same tmpfs first.  Results, one per line
# (round, binary, mode, metric, value), in OUT (default ./small.tsv).
# Needs root (tmpfs), fio, python3, gcc, libfuse3-dev (passthrough_ll).
# CREATE_OPTS_A and CREATE_OPTS_B (environment): extra 'raidfs create'
# options of A's and of B's arrays; one binary twice with two options
# measures them side by side, e.g. checksums on (A) against off (B):
#   CREATE_OPTS_A="--checksum crc32c" CREATE_OPTS_B="--checksum none" \
#     contrib/bench/small.sh 2 ./raidfs ./raidfs
set -u
[ $# -ge 3 ] || { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
ROUNDS=$1; A=$2; B=$3; RES=$(realpath -m "${4:-small.tsv}")
W=$(mktemp -d /tmp/raidfs-small.XXXXXX)
FS=$W/fs; mkdir -p $FS
mount -t tmpfs -o size=6G tmpfs $FS
PT=$W/passthrough_ll
if [ ! -x $PT ]; then
  src=$(find /usr/share/doc/libfuse3-dev -name 'passthrough_ll.c*' | head -1)
  case $src in *.gz) gunzip -c $src > $W/pt.c; src=$W/pt.c;; esac
  gcc -O2 -o $PT $src $(pkg-config --cflags --libs fuse3) -lpthread
fi
PT_PID=""
cleanup() {
  for m in $W/mnt $W/pt; do mountpoint -q $m && fusermount3 -uz $m; done
  [ -z "$PT_PID" ] || kill $PT_PID 2>/dev/null; sleep 0.3; umount -l $FS 2>/dev/null; rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fio_unal() {
  fio --name=u --directory=$1 --filename=bench --rw=randwrite --bs=1000 --ioengine=libaio --iodepth=16 --direct=1 \
    --size=64M --time_based --runtime=6 --ramp_time=1 --output-format=json --output=$W/fio.json >/dev/null 2>$W/fio.err || { echo 0; return; }
  python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["jobs"][0]["write"]["iops"]))' $W/fio.json
}
trunc_loop() {
  python3 - $1 <<'PY'
import os, sys, time
p = os.path.join(sys.argv[1], "t")
fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
buf = os.urandom(8192)
n = 2000
t = time.time()
for i in range(n):
    os.pwrite(fd, buf, 0)
    os.ftruncate(fd, 100)
print(round(n / (time.time() - t)))
os.close(fd)
PY
}
for r in $(seq 1 $ROUNDS); do
  mkdir -p $W/pt $FS/pt
  $PT -f -o source=$FS/pt $W/pt 2>/dev/null & PT_PID=$!; sleep 0.5
  fio --name=layout --directory=$W/pt --filename=bench --rw=write --bs=1M --size=64M --ioengine=psync >/dev/null 2>&1
  printf "%s\tpassthrough\t-\tunaligned_iops\t%s\n" $r $(fio_unal $W/pt) >> $RES
  printf "%s\tpassthrough\t-\ttrunc_ops\t%s\n" $r $(trunc_loop $W/pt) >> $RES
  fusermount3 -u $W/pt; wait $PT_PID 2>/dev/null; PT_PID=""; rm -rf $FS/pt
  for bin in A B; do
    [ $bin = A ] && R=$A || R=$B
    [ $bin = A ] && CO=${CREATE_OPTS_A:-} || CO=${CREATE_OPTS_B:-}
    for mode in file shm wt; do
      rm -rf $FS/d* $FS/log; mkdir -p $FS/d1 $FS/d2 $FS/d3 $FS/d4 $W/mnt
      # shellcheck disable=SC2086 # (options, split)
      $R create --level raid5 --chunk 64K $CO $FS/d1 $FS/d2 $FS/d3 $FS/d4 >/dev/null 2>&1
      case $mode in
        file) o="write_policy=writeback,bbu=file:$FS/log" ;;
        shm) o="write_policy=writeback,bbu=shm" ;;
        wt) o="write_policy=writethrough" ;;
      esac
      $R mount -o "log=$W/daemon.log,$o" $FS/d1:$FS/d2:$FS/d3:$FS/d4 $W/mnt
      for _ in $(seq 50); do mountpoint -q $W/mnt && break; sleep 0.1; done
      fio --name=layout --directory=$W/mnt --filename=bench --rw=write --bs=1M --size=64M --ioengine=psync >/dev/null 2>&1
      $R cache $W/mnt flush >/dev/null 2>&1
      printf "%s\t%s\t%s\tunaligned_iops\t%s\n" $r $bin $mode $(fio_unal $W/mnt) >> $RES
      printf "%s\t%s\t%s\ttrunc_ops\t%s\n" $r $bin $mode $(trunc_loop $W/mnt) >> $RES
      $R unmount $W/mnt || fusermount3 -uz $W/mnt
      sleep 0.3
    done
  done
done
