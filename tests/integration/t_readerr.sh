#!/bin/bash
# t_readerr - read errors are repaired from redundancy: the reader gets
# correct data, the member stays online below the threshold, the bad
# chunks are rewritten (counted as corrected); past the threshold the
# member is failed and reads still return correct data.
. "$(dirname "$0")/lib.sh"
need_fuse

for level in raid5 raid6 raid1; do
	C=$T/$level
	mkdir -p "$C"
	mem=$(make_members 4 "$level/d")
	mnt=$C/mnt
	expect_rc 0 "$RAIDFS" create --level "$level" --chunk 4K --name "$level" $mem
	# nora: every read must reach the members (read-ahead would serve
	# the second pass from the cache)
	rfs_mount "$(join_members $mem)" "$mnt" -o read_error_threshold=10,read_policy=nora || fail "$level: mount"
	head -c 2000000 /dev/urandom > "$C/ref"
	cp "$C/ref" "$mnt/f"
	sync
	"$RAIDFS" inject "$mnt" 1 read-error count 3 >/dev/null || fail "$level: inject"
	echo 3 > /proc/sys/vm/drop_caches
	cmp -s "$C/ref" "$mnt/f" || fail "$level: wrong data read while member 1 returned read errors"
	"$RAIDFS" status --json "$mnt" > "$C/st.json"
	grep -q '"index": 1, [^}]*"state": "online"' "$C/st.json" || fail "$level: member 1 not online below the threshold: $(cat "$C/st.json")"
	grep -q '"index": 1, [^}]*"errors": 3, "corrected": [1-9]' "$C/st.json" ||
		fail "$level: member 1 should show 3 errors and corrected chunks: $(cat "$C/st.json")"
	# past the threshold (10): the member is failed, data stays correct
	"$RAIDFS" inject "$mnt" 1 read-error every >/dev/null
	echo 3 > /proc/sys/vm/drop_caches
	cmp -s "$C/ref" "$mnt/f" || fail "$level: wrong data read after member 1 kept failing"
	"$RAIDFS" status --json "$mnt" | grep -q '"index": 1, [^}]*"state": "faulty"' ||
		fail "$level: member 1 not failed past the threshold"
	rfs_unmount_wait "$mnt" || fail "$level: unmount"
	log "ok: $level"
done
exit 0
