#!/bin/bash
# unlink_crash.sh - kill -9 the daemon during an unlink (a slow member disk
# emulated with strace: each unlinkat of the daemon returns 100 ms late),
# remount, then create a new file under the same name and write it.  The
# unlink was in flight, so the old file may or may not be gone; but the
# new file must be written and read back correctly and the array must stay
# optimal (no member failed), and `raidfs check` must be clean.
# Prints PASS or FAIL.  Env: LEVEL (raid5), WIDTH (4), ATTEMPTS (4).
set -u
RAIDFS=${RAIDFS:-$(cd "$(dirname "$0")/../.." && pwd)/raidfs}
LEVEL=${LEVEL:-raid5}
WIDTH=${WIDTH:-4}
ATTEMPTS=${ATTEMPTS:-4}
B=${TMPDIR:-/tmp}/raidfs-repro-unl.$$
mkdir -p "$B"
mount -t tmpfs -o size=256m tmpfs "$B" || { echo "FAIL: cannot mount tmpfs"; exit 2; }
MNT=$B/mnt
mkdir -p "$MNT"
dpid() { pgrep -f -- "raidfs.* $MNT\$" | head -n 1; }
SP=""
cleanup() {
	[ -n "$SP" ] && kill "$SP" 2>/dev/null
	if awk -v p="$MNT" '$2==p{f=1}END{exit !f}' /proc/mounts; then
		"$RAIDFS" unmount "$MNT" >/dev/null 2>&1 || fusermount3 -uz "$MNT" 2>/dev/null
	fi
	local p; p=$(dpid); [ -n "$p" ] && kill -9 "$p" 2>/dev/null
	sleep 0.3
	umount "$B" 2>/dev/null || umount -l "$B"
	rmdir "$B"
}
trap cleanup EXIT
mem=""; for i in $(seq 1 "$WIDTH"); do mkdir -p "$B/d$i"; mem="$mem $B/d$i"; done
members=$(echo $mem | tr ' ' ':')
OPTS="write_policy=writeback,bbu=shm,log=$B/daemon.log"
"$RAIDFS" create --level "$LEVEL" --chunk 16K $mem >/dev/null || exit 2
for at in $(seq 1 "$ATTEMPTS"); do
	"$RAIDFS" mount -o "$OPTS" "$members" "$MNT" >"$B/mount.out" 2>&1 || { cat "$B/mount.out"; echo "FAIL: mount"; exit 1; }
	head -c 200000 /dev/urandom >"$MNT/victim" && sync -f "$MNT/victim"
	rm -f "$B/strace.out"
	strace -f -qq -o "$B/strace.out" -e trace=unlinkat -e inject=unlinkat:delay_exit=100000 \
		$(for t in /proc/"$(dpid)"/task/*; do echo "-p ${t##*/}"; done) 2>/dev/null &
	SP=$!
	sleep 0.5
	rm -f "$MNT/victim" 2>/dev/null &
	for _ in $(seq 1 200); do grep -q 'unlinkat(.*"victim"' "$B/strace.out" 2>/dev/null && break; sleep 0.02; done
	sleep 0.$((RANDOM % 2))$((RANDOM % 10))
	p=$(dpid); kill -9 "$p"; while kill -0 "$p" 2>/dev/null; do sleep 0.02; done
	kill "$SP" 2>/dev/null; wait "$SP" 2>/dev/null; SP=""
	wait
	fusermount3 -uz "$MNT" 2>/dev/null
	echo "attempt $at: killed; 'victim' on the members:$(for d in $mem; do [ -e "$d/victim" ] && echo -n " ${d##*/}"; done)"
	"$RAIDFS" mount -o "$OPTS" "$members" "$MNT" >"$B/mount.out" 2>&1 || { cat "$B/mount.out"; echo "FAIL: remount"; exit 1; }
	rm -f "$MNT/victim" 2>/dev/null
	head -c 150000 /dev/urandom >"$B/ref"
	cp "$B/ref" "$MNT/victim" 2>"$B/cp.err" || echo "  cp: $(cat "$B/cp.err")"
	bad=""
	cmp -s "$B/ref" "$MNT/victim" || bad="$bad new file reads back wrong ($(cmp "$B/ref" "$MNT/victim" 2>&1 | head -c 200));"
	st=$("$RAIDFS" status "$MNT")
	echo "$st" | grep -q "^state: *optimal" || bad="$bad array not optimal after re-creating the name: $(echo "$st" | grep -A1 "faulty" | tr '\n' ' ' | head -c 400);"
	"$RAIDFS" unmount "$MNT" >/dev/null
	sleep 0.3
	"$RAIDFS" check "$members" >"$B/check.out" 2>&1 || bad="$bad check: $(head -c 400 "$B/check.out" | tr '\n' ' ');"
	if [ -n "$bad" ]; then
		echo "attempt $at:$bad"
		echo FAIL
		exit 1
	fi
	echo "attempt $at: ok"
done
echo PASS
