#!/bin/bash
# rename_crash.sh - kill -9 the daemon while an application renames files
# in a loop (no data is being written: the files were written, fsynced and
# closed before).  After the remount every file must be readable under
# exactly one of its two names with its content intact, and the offline
# `raidfs check` must be clean.  Tries up to ATTEMPTS (10) kills; FAIL at
# the first bad one.  Env: LEVEL (raid5), WIDTH (4), RENAMERS (4 processes),
# SLOW=1 (default; SLOW=0: plain random kills, which rarely hit the window):
# emulate a slow member disk (strace delays each rename syscall of the
# daemon by 100 ms) so that the kill lands inside a rename nearly always.
set -u
RAIDFS=${RAIDFS:-$(cd "$(dirname "$0")/../.." && pwd)/raidfs}
LEVEL=${LEVEL:-raid5}
WIDTH=${WIDTH:-4}
ATTEMPTS=${ATTEMPTS:-6}
OPTS0=${OPTS0:-write_policy=writeback,bbu=shm}
B=${TMPDIR:-/tmp}/raidfs-repro-ren.$$
mkdir -p "$B"
mount -t tmpfs -o size=256m tmpfs "$B" || { echo "FAIL: cannot mount tmpfs"; exit 2; }
MNT=$B/mnt
mkdir -p "$MNT" "$B/ref"
dpid() { pgrep -f -- "raidfs.* $MNT\$" | head -n 1; }
LP=""
cleanup() {
	[ -n "$LP" ] && kill -9 $LP 2>/dev/null
	[ -n "${SP:-}" ] && kill "$SP" 2>/dev/null
	if awk -v p="$MNT" '$2==p{f=1}END{exit !f}' /proc/mounts; then
		"$RAIDFS" unmount "$MNT" >/dev/null 2>&1 || fusermount3 -uz "$MNT" 2>/dev/null
	fi
	local p; p=$(dpid); [ -n "$p" ] && kill -9 "$p" 2>/dev/null
	sleep 0.3
	[ "${KEEP:-0}" = 1 ] && { cp -a "$B" ${TMPDIR:-/tmp}/raidfs-repro-kept-ren.$$; echo "kept in ${TMPDIR:-/tmp}/raidfs-repro-kept-ren.$$"; }
	umount "$B" 2>/dev/null || umount -l "$B"
	rmdir "$B"
}
trap cleanup EXIT
mem=""; for i in $(seq 1 "$WIDTH"); do mkdir -p "$B/d$i"; mem="$mem $B/d$i"; done
members=$(echo $mem | tr ' ' ':')
OPTS="$OPTS0,log=$B/daemon.log"
"$RAIDFS" create --level "$LEVEL" --chunk 16K $mem >/dev/null || exit 2
"$RAIDFS" mount -o "$OPTS" "$members" "$MNT" || exit 2
for i in $(seq 1 8); do
	head -c $((200000 + i * 7919)) /dev/urandom >"$B/ref/a$i"
	cp "$B/ref/a$i" "$MNT/a$i"
done
sync -f "$MNT/a1" 2>/dev/null
"$RAIDFS" unmount "$MNT" >/dev/null || exit 2
sleep 0.3
"$RAIDFS" check "$members" >/dev/null || { echo "FAIL: check before the test"; exit 2; }
for at in $(seq 1 "$ATTEMPTS"); do
	"$RAIDFS" mount -o "$OPTS" "$members" "$MNT" >"$B/mount.out" 2>&1 || { cat "$B/mount.out"; echo "FAIL: mount (attempt $at)"; exit 1; }
	# rename every file back and forth between aN and bN, as fast as possible
	# (RENAMERS processes, each with its own files)
	SP=""
	if [ "${SLOW:-1}" = 1 ]; then
		# a slow member disk, emulated: every renameat2 of the daemon takes
		# 100 ms more (strace delays the syscall's return; semantics unchanged)
		rm -f "$B/strace.out"
		strace -f -qq -o "$B/strace.out" -e trace=renameat,renameat2 -e inject=renameat,renameat2:delay_exit=100000 $(for t in /proc/"$(dpid)"/task/*; do echo "-p ${t##*/}"; done) 2>/dev/null &
		SP=$!
		sleep 0.5
	fi
	LP=""
	for k in $(seq 0 $(( ${RENAMERS:-4} - 1 ))); do
	python3 - "$MNT" "$k" "${RENAMERS:-4}" <<'EOF' >/dev/null 2>&1 &
import os, sys
m = sys.argv[1]
k, n = int(sys.argv[2]), int(sys.argv[3])
while True:
    for i in range(1 + k, 9, n):
        a, b = os.path.join(m, "a%d" % i), os.path.join(m, "b%d" % i)
        if os.path.exists(a):
            os.rename(a, b)
        else:
            os.rename(b, a)
EOF
	LP="$LP $!"
	done
	if [ "${SLOW:-1}" = 1 ]; then
		# the kill comes during a rename: after the first renameat2 was seen
		for _ in $(seq 1 200); do grep -q "renameat" "$B/strace.out" 2>/dev/null && break; sleep 0.02; done
		sleep 0.$((RANDOM % 3))$((RANDOM % 10))
	else
		sleep 0.$((RANDOM % 9 + 1))
	fi
	p=$(dpid); kill -9 "$p"; while kill -0 "$p" 2>/dev/null; do sleep 0.02; done
	[ -n "$SP" ] && { kill "$SP" 2>/dev/null; wait "$SP" 2>/dev/null; }
	wait $LP 2>/dev/null; LP=""
	fusermount3 -uz "$MNT" 2>/dev/null
	"$RAIDFS" mount -o "$OPTS" "$members" "$MNT" >"$B/mount.out" 2>&1 || { cat "$B/mount.out"; echo "FAIL: remount after the kill (attempt $at)"; exit 1; }
	bad=""
	for i in $(seq 1 8); do
		n=0; for x in a b; do [ -e "$MNT/$x$i" ] && n=$((n + 1)) && f="$MNT/$x$i"; done
		if [ "$n" != 1 ]; then bad="$bad a$i/b$i: $n names;"; continue; fi
		cmp -s "$B/ref/a$i" "$f" || bad="$bad ${f##*/}: content differs ($(cmp "$B/ref/a$i" "$f" 2>&1 | head -c 200));"
	done
	"$RAIDFS" unmount "$MNT" >/dev/null
	sleep 0.3
	"$RAIDFS" check "$members" >"$B/check.out" 2>&1 || bad="$bad check: $(head -c 600 "$B/check.out" | tr '\n' ' ');"
	if [ -n "$bad" ]; then
		echo "attempt $at: $bad"
		echo "members:"; for d in $mem; do echo "  ${d##*/}: $(ls "$d" | tr '\n' ' ')"; done
		echo "FAIL"
		exit 1
	fi
	echo "attempt $at: ok"; [ -n "${DEBUG:-}" ] && { cat "$B/strace.out"; for d in $mem; do echo "  ${d##*/}: $(ls "$d" | tr "\n" " ")"; done; }
done
echo PASS
