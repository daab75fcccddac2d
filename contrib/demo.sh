#!/bin/sh
# Install what is needed, build, create a 4-member RAID5 demo array on
# scratch directories, mount it, write some data and show its status.
# DEMO_DIR (default /tmp/raidfs-demo) holds the members and the mount.
set -e
cd "$(dirname "$0")/.."
sh contrib/install-deps.sh
sh contrib/build.sh
D=${DEMO_DIR:-/tmp/raidfs-demo}
R=$(pwd)/raidfs
if mountpoint -q "$D/pool" 2>/dev/null; then
	"$R" unmount "$D/pool"
fi
rm -rf "$D"
mkdir -p "$D/disk1" "$D/disk2" "$D/disk3" "$D/disk4" "$D/pool"
echo "+ raidfs create --level raid5 --name demo $D/disk1 $D/disk2 $D/disk3 $D/disk4"
"$R" create --level raid5 --name demo "$D/disk1" "$D/disk2" "$D/disk3" "$D/disk4"
echo "+ raidfs mount $D/disk1:$D/disk2:$D/disk3:$D/disk4 $D/pool"
"$R" mount "$D/disk1:$D/disk2:$D/disk3:$D/disk4" "$D/pool"
echo "+ writing 64 MiB of random data and a copy of /usr/share/doc/fuse3 ..."
head -c 64M /dev/urandom > "$D/reference.bin"
cp "$D/reference.bin" "$D/pool/random.bin"
cp -r /usr/share/doc/fuse3 "$D/pool/" 2>/dev/null || true
sync
cmp "$D/reference.bin" "$D/pool/random.bin" && echo "+ read back: identical"
ls -l "$D/pool"
echo "+ raidfs status $D/pool"
"$R" status "$D/pool" || true
cat <<MSG

The array stays mounted on $D/pool.  Try:
  $R status --json $D/pool
  $R unmount $D/pool && $R check $D/disk1:$D/disk2:$D/disk3:$D/disk4
  mv $D/disk3 $D/disk3.away && $R mount $D/disk1:$D/disk2:$D/disk3:$D/disk4 $D/pool   # degraded
MSG
