#!/bin/bash
# reqcount.sh BIN [mount opts]: FUSE requests (libfuse -o debug) for create+write 4K+close, and a 4K write to an open file
BIN=$1; shift
D=/tmp/rq.$$
mkdir -p $D/{a,b,c,d,mnt}
$BIN create --level raid5 --name rq $D/a $D/b $D/c $D/d >/dev/null
$BIN mount -f -o debug,log=$D/log "$@" $D/a:$D/b:$D/c:$D/d $D/mnt 2>$D/debug &
for i in $(seq 50); do mountpoint -q $D/mnt && break; sleep 0.1; done
mkdir $D/mnt/d; stat $D/mnt/d >/dev/null
count() { tail -c +$(( $1 + 1 )) $D/debug | tr -d '\0' | grep -ao "opcode: [A-Z_]*" | sort | uniq -c | awk '{printf "%s:%s ", $3, $1; t+=$1} END {print "total=" t}'; }
sleep 1.2; s=$(stat -c %s $D/debug)
python3 -c "
import os
fd=os.open('$D/mnt/d/f', os.O_CREAT|os.O_WRONLY, 0o644); os.write(fd, b'x'*4096); os.close(fd)"
sleep 0.2; echo "create+write 4K+close: $(count $s)"
python3 -c "
import os,time,sys
fd=os.open('$D/mnt/d/f', os.O_WRONLY); time.sleep(0.3)
s=os.stat('$D/debug').st_size
for i in range(10): os.pwrite(fd, b'y'*4096, 4096*i)
time.sleep(0.3); open('$D/s','w').write(str(s)); os.close(fd)"
echo "10 x 4K writes to an open file: $(count $(cat $D/s) | sed 's/RELEASE:1 //; s/FLUSH:1 //')"
[ -n "$KEEPDBG" ] && cp $D/debug /tmp/rq-debug; fusermount3 -u $D/mnt; sleep 0.3; rm -rf $D
