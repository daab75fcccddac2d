#!/bin/bash
# 4 KiB random reads, 4 jobs, buffered and O_DIRECT: passthrough_ll, raid5 (new binary), raid5 (base binary)
NEW=$1 BASE=$2
W=$(mktemp -d /tmp/raidfs-rr.XXXXXX)
mkdir -p $W/t; mount -t tmpfs -o size=2g tmpfs $W/t
for c in new base; do b=$NEW; [ $c = base ] && b=$BASE; mkdir -p $W/t/$c/m{0,1,2,3} $W/mnt-$c; $b create --level raid5 --name rr$c $W/t/$c/m0 $W/t/$c/m1 $W/t/$c/m2 $W/t/$c/m3 >/dev/null; $b mount -o log=$W/$c.log $W/t/$c/m0:$W/t/$c/m1:$W/t/$c/m2:$W/t/$c/m3 $W/mnt-$c; done
mkdir -p $W/t/pt $W/mnt-pt; GLIBC_TUNABLES=glibc.malloc.mmap_threshold=8388608:glibc.malloc.trim_threshold=1073741824 /tmp/passthrough_ll -o source=$W/t/pt $W/mnt-pt
for c in pt new base; do dd if=/dev/urandom of=$W/mnt-$c/f bs=1M count=256 status=none; done
for r in 1 2 3; do for d in 0 1; do for c in pt new base; do
  iops=$(fio --name=rr --filename=$W/mnt-$c/f --rw=randread --bs=4k --numjobs=4 --direct=$d --ioengine=psync --time_based --runtime=4 --group_reporting --output-format=json 2>/dev/null | python3 -c "import json,sys; print(int(json.load(sys.stdin)['jobs'][0]['read']['iops']))")
  echo "$r direct=$d $c $iops"
done; done; done
for c in pt new base; do fusermount3 -u $W/mnt-$c; done; sleep 1; umount -l $W/t; rm -rf $W
