#!/bin/bash
# syscalls.sh BIN LEVEL OUTPREFIX [MOUNT_OPTS]: strace -f the daemon (raidfs mount -f, 4 members on /dev/shm) while one process creates, writes 4 KiB and closes 100 files (OUTPREFIX.c: strace -c), then 10 more (OUTPREFIX.t: every call, strace -tt -e trace=%file,%desc,...), then unlinks 100 (OUTPREFIX.u). count.py prints calls per file; merge.py joins the unfinished/resumed lines of OUTPREFIX.t.
set -u
BIN=$1; LEVEL=$2; OUT=$3; OPTS=${4:-}
W=$(mktemp -d /dev/shm/small-st.XXXXXX)
mkdir -p $W/d1 $W/d2 $W/d3 $W/d4 $W/mnt
$BIN create --level $LEVEL --chunk 64K $W/d1 $W/d2 $W/d3 $W/d4 >/dev/null 2>&1 || { echo create failed; exit 1; }
$BIN mount -f -o log=$W/daemon.log${OPTS:+,$OPTS} $W/d1:$W/d2:$W/d3:$W/d4 $W/mnt & PID=$!
for i in $(seq 50); do mountpoint -q $W/mnt && break; sleep 0.1; done
mkdir $W/mnt/small
python3 -c "
import os
for i in range(3):
    fd=os.open('$W/mnt/small/w%d'%i, os.O_CREAT|os.O_WRONLY,0o644); os.write(fd,b'x'*4096); os.close(fd)
"
sleep 1.2
strace -f -c -o $OUT.c -p $PID & S1=$!
sleep 1
python3 -c "
import os
for i in range(100):
    fd=os.open('$W/mnt/small/f%d'%i, os.O_CREAT|os.O_WRONLY,0o644); os.write(fd,os.urandom(4096)); os.close(fd)
"
sleep 1.5
kill -INT $S1; wait $S1
strace -f -tt -e trace=%file,%desc,fsetxattr,fgetxattr,fremovexattr,fchown -o $OUT.t -p $PID & S2=$!
sleep 1
python3 -c "
import os
for i in range(100,110):
    fd=os.open('$W/mnt/small/f%d'%i, os.O_CREAT|os.O_WRONLY,0o644); os.write(fd,os.urandom(4096)); os.close(fd)
"
sleep 1.5
kill -INT $S2; wait $S2
# unlink counts
strace -f -c -o $OUT.u -p $PID & S3=$!
sleep 1
python3 -c "
import os
for i in range(100):
    os.unlink('$W/mnt/small/f%d'%i)
"
sleep 1.5
kill -INT $S3; wait $S3
$BIN unmount $W/mnt || fusermount3 -uz $W/mnt
wait $PID
rm -rf $W
