#!/bin/bash
# t_rebuild_second - raid6 loses a second member while the first is being
# rebuilt: the rebuild carries on reconstructing from the three that are
# left (two erasures per stripe), finishes, and what it wrote is right:
# with the second member still failed and a third one failed too, only
# the rebuilt member holds the redundancy that is left, and every byte
# must read back as written.  Holes (a sparse file) must stay readable
# as zeros.
. "$(dirname "$0")/lib.sh"
need_fuse

mem=$(make_members 5)
mkdir -p "$T/new" "$T/ref"
mnt=$T/mnt
expect_rc 0 "$RAIDFS" create --level raid6 --chunk 4K --name r2 $mem
rfs_mount "$(join_members $mem)" "$mnt" || fail "mount"
# 60 files of 64..300 KiB in 3 directories, and a sparse file
write_fileset "$mnt" "$T/ref" 11 3 20 65536 300000 || fail "writing the file set"
"$PY" - "$mnt" "$T/ref" <<'PYEOF' || fail "writing the sparse file"
import os, sys
for root in sys.argv[1:]:
    with open(os.path.join(root, "sparse"), "wb") as fh:
        fh.write(b"head")
        fh.seek(1 << 20)
        fh.write(b"tail")
PYEOF
"$RAIDFS" fail "$mnt" 1 >/dev/null || fail "fail 1"
"$RAIDFS" rebuild "$mnt" --max-rate 2 --min-rate 2 >/dev/null || fail "rebuild rates"
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$T/new"
sleep 1
"$RAIDFS" status --json "$mnt" | grep -q '"active": true' || fail "rebuild not running at the second failure: $("$RAIDFS" status "$mnt")"
"$RAIDFS" fail "$mnt" 3 >/dev/null || fail "fail 3 during the rebuild"
"$RAIDFS" rebuild "$mnt" --max-rate 0 --min-rate 0 >/dev/null || fail "rebuild rates"
wait_member "$mnt" 1 online || fail "member 1 not online after its rebuild: $("$RAIDFS" status "$mnt")"
# the sparse file's shard on the new member: 1 MiB of hole between two
# chunks of data, so far less than its length is allocated
alloc=$(( $(stat -c %b "$T/new/sparse") * 512 ))
size=$(stat -c %s "$T/new/sparse")
[ "$size" -gt 200000 ] && [ "$alloc" -lt 65536 ] ||
	fail "the hole was filled on the new member: shard of $size bytes has $alloc allocated"
"$RAIDFS" fail "$mnt" 0 >/dev/null || fail "fail 0"
workload compare "$mnt" "$T/ref" >"$T/cmp.out" 2>&1 ||
	{ cat "$T/cmp.out" >&2; fail "data differs with members 0 and 3 failed after member 1 was rebuilt while 3 failed"; }
rfs_unmount_wait "$mnt" || fail "unmount"
log "ok: rebuilt with a second member failed during the rebuild; data intact without two others"
exit 0
