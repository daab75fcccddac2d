#!/bin/bash
# format-compat.sh - format compatibility between an older and a newer
# raidfs binary: an array the old one writes, the new one mounts, reads
# byte for byte as written, and checks clean; mounting and reading with
# the new one leaves the old one's shards untouched.  When the new binary
# writes a newer superblock format (FORMAT_CHANGE=1, the default: format
# 3, member uuids - docs/format.md), the old one must refuse the array
# cleanly (an error naming the format, exit status not 0, nothing on the
# members changed) and never misread it; with FORMAT_CHANGE=0 (two
# binaries of one format) the old one mounts what the new one wrote and
# reads it byte for byte.  For every change that could touch the format
# (run as root; needs FUSE):
#
#   contrib/format-compat.sh OLD_RAIDFS [NEW_RAIDFS]
#
# (build the old one in a worktree: git worktree add /tmp/old REV &&
#  (cd /tmp/old && sh contrib/build.sh))
set -u
OLD=${1:?usage: contrib/format-compat.sh OLD_RAIDFS [NEW_RAIDFS]}
NEW=${2:-$(cd "$(dirname "$0")/.." && pwd)/raidfs}
FORMAT_CHANGE=${FORMAT_CHANGE:-1}
# members_md5 FILE: md5 of every file on the members, superblocks included
members_md5() { (cd $T && find d1 d2 d3 d4 -type f -exec md5sum {} + | sort > "$1"); }
# old_refuses WHAT: the old binary refuses to mount and to check the
# members the new one wrote, naming the format, and changes nothing
old_refuses() {
  members_md5 $T/refuse-before.md5
  if $OLD mount $M $T/mnt > $T/old.log 2>&1; then
    echo "$lvl: $1: the OLD binary MOUNTED an array of the new format"; fusermount3 -u $T/mnt; exit 1
  fi
  grep -q "format version not supported" $T/old.log &&
    echo "$lvl: $1: old mount refused: $(grep -o 'format version not supported[^;]*' $T/old.log | head -1)" ||
    { echo "$lvl: $1: old mount failed without naming the format: $(cat $T/old.log)"; exit 1; }
  $OLD check $M > $T/old.log 2>&1 && { echo "$lvl: $1: the OLD binary checked the new format"; exit 1; }
  grep -q "format version not supported" $T/old.log || { echo "$lvl: $1: old check: $(cat $T/old.log)"; exit 1; }
  members_md5 $T/refuse-after.md5
  cmp -s $T/refuse-before.md5 $T/refuse-after.md5 && echo "$lvl: $1: members unchanged by the refusals" ||
    { echo "$lvl: $1: the old binary CHANGED the members"; exit 1; }
}
T=$(mktemp -d /tmp/raidfs-compat.XXXXXX); trap 'fusermount3 -uz $T/mnt 2>/dev/null; rm -rf $T' EXIT
mkdir -p $T/d1 $T/d2 $T/d3 $T/d4 $T/d5 $T/mnt $T/ref
for lvl in raid5 raid6 raid1 raid10; do
  rm -rf $T/d? $T/ref; mkdir -p $T/d1 $T/d2 $T/d3 $T/d4 $T/ref
  M=$T/d1:$T/d2:$T/d3:$T/d4
  $OLD create --level $lvl $T/d1 $T/d2 $T/d3 $T/d4 > $T/create.log 2>&1 || { echo "create $lvl failed"; cat $T/create.log; exit 1; }
  $OLD mount $M $T/mnt || exit 1
  python3 - "$T/mnt" "$T/ref" <<'PY'
import os, random, sys
mnt, ref = sys.argv[1], sys.argv[2]
r = random.Random(7)
for d in range(3):
    os.makedirs(f"{mnt}/d{d}"); os.makedirs(f"{ref}/d{d}")
    for f in range(20):
        data = r.randbytes(r.choice([0, 1, 4095, 65536, 200000, 1 << 20]) + r.randrange(100))
        for root in (mnt, ref):
            with open(f"{root}/d{d}/f{f}", "wb") as fh: fh.write(data)
os.symlink("d0/f1", f"{mnt}/link"); os.symlink("d0/f1", f"{ref}/link")
PY
  sync; fusermount3 -u $T/mnt; sleep 0.5
  # members as the old binary left them
  (cd $T && find d1 d2 d3 d4 -type f ! -path '*/.raidfs/*' -exec md5sum {} + | sort > before.md5)
  $NEW mount $M $T/mnt || { echo "new mount failed ($lvl)"; exit 1; }
  diff -r $T/ref $T/mnt > /dev/null && echo "$lvl: reads identical" || { echo "$lvl: DIFFERENT"; exit 1; }
  fusermount3 -u $T/mnt; sleep 0.5
  $NEW check $M > $T/check.log 2>&1; echo "$lvl: new check exit $?: $(tail -1 $T/check.log)"
  (cd $T && find d1 d2 d3 d4 -type f ! -path '*/.raidfs/*' -exec md5sum {} + | sort > after.md5)
  cmp -s $T/before.md5 $T/after.md5 && echo "$lvl: shards unchanged by the new binary's mount and read" || echo "$lvl: shards changed"
  # the other way: the new binary writes; the old one reads and checks,
  # or (a new format) refuses
  [ "$FORMAT_CHANGE" = 1 ] && old_refuses "after the new binary's mount"
  $NEW mount $M $T/mnt || exit 1
  python3 -c "
import os,random
r=random.Random(9)
for f in range(20):
    d=r.randbytes(r.choice([1,5000,70000,300000]))
    for root in ('$T/mnt','$T/ref'):
        open(f'{root}/n{f}','wb').write(d)
"
  fusermount3 -u $T/mnt; sleep 0.5
  if [ "$FORMAT_CHANGE" = 1 ]; then
    old_refuses "written by the new binary"
    $NEW mount $M $T/mnt || exit 1
    diff -r $T/ref $T/mnt > /dev/null && echo "$lvl: written by the new binary, read identical by the new" || { echo "$lvl: DIFFERENT"; exit 1; }
    fusermount3 -u $T/mnt; sleep 0.5
    $NEW check $M > $T/check.log 2>&1; echo "$lvl: new check exit $?: $(tail -1 $T/check.log)"
    # an array the new binary creates: refused by the old one as well
    rm -rf $T/d?; mkdir -p $T/d1 $T/d2 $T/d3 $T/d4
    $NEW create --level $lvl $T/d1 $T/d2 $T/d3 $T/d4 > $T/create.log 2>&1 || { echo "new create $lvl failed"; cat $T/create.log; exit 1; }
    old_refuses "created by the new binary"
    continue
  fi
  $OLD mount $M $T/mnt || { echo "old mount failed ($lvl)"; exit 1; }
  diff -r $T/ref $T/mnt > /dev/null && echo "$lvl: written by the new binary, read identical by the old" || { echo "$lvl: DIFFERENT under the old binary"; exit 1; }
  fusermount3 -u $T/mnt; sleep 0.5
  $OLD check $M > $T/check.log 2>&1; echo "$lvl: old check exit $?: $(tail -1 $T/check.log)"
done
