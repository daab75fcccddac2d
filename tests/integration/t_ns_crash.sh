#!/bin/bash
# t_ns_crash - a namespace operation cut short by a crash is completed by
# the next mount on the members that did not get it.
#
# raid5 over 4 members.  For each of: rename of a file, rename of a
# directory, unlink, link, an exchange of two files, mkdir - the daemon is traced with strace, which
# holds the return of the operation's first system call (on the primary)
# for seconds, as a slow disk would; the daemon is killed meanwhile, so
# the primary has the change and the other three members do not.  After
# the next mount: the tree is as if the operation had completed (the
# daemon says it completed it), every file reads back intact, a new file
# can take a removed name without failing a member (the array stays
# optimal), and the offline `raidfs check` is clean.
. "$(dirname "$0")/lib.sh"
need_fuse
command -v strace >/dev/null || fail "strace is not installed (contrib/install-deps.sh installs it)"

mem=$(make_members 4)
members=$(join_members $mem)
mnt=$T/mnt
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 16K --name ns $mem
mkdir -p "$T/ref"
rfs_mount "$members" "$mnt" || fail "mount"
for f in a b c; do
	head -c $((150000 + RANDOM)) /dev/urandom >"$T/ref/$f"
	cp "$T/ref/$f" "$mnt/$f"
done
mkdir -p "$mnt/dir/sub" "$T/ref/dir/sub"
head -c 70000 /dev/urandom >"$T/ref/dir/sub/inner"
cp "$T/ref/dir/sub/inner" "$mnt/dir/sub/inner"
rfs_unmount "$mnt" || fail "unmount"

# cut SYSCALL WHAT CMD...: mount, run CMD in the background with SYSCALL's
# first return held for 5 s, kill -9 the daemon once the call was made,
# mount again
cut() {
	local sc=$1 what=$2 pid tp n
	shift 2
	rfs_mount "$members" "$mnt" || fail "$what: mount"
	pid=$(daemon_pid "$mnt")
	: >"$T/strace.out"
	strace -f -qq -o "$T/strace.out" -e trace="$sc" -e inject="$sc":delay_exit=5000000 \
		$(for t in /proc/"$pid"/task/*; do echo "-p ${t##*/}"; done) 2>/dev/null &
	tp=$!
	sleep 0.5	# (attached)
	"$@" 2>/dev/null &
	for n in $(seq 1 100); do
		grep -q "$sc(" "$T/strace.out" && break
		sleep 0.05
	done
	grep -q "$sc(" "$T/strace.out" || { kill $tp; fail "$what: the operation never reached the members"; }
	sleep 0.3
	# the daemon, then strace (the held thread dies only once strace lets
	# go of it; it never returns to the daemon's code)
	kill -9 "$pid"
	kill -9 $tp 2>/dev/null
	wait_pid_gone "$pid" 20 || fail "$what: the daemon survived kill -9"
	fusermount3 -uz "$mnt" 2>/dev/null
	wait
	rfs_mount "$members" "$mnt" || fail "$what: mount after the kill"
	grep -q "was interrupted by a crash: completed on 3 more members" "$T/daemon.log" ||
		fail "$what: the mount did not complete the operation on the other three members: $(grep -i "crash\|interrupt" "$T/daemon.log" | tail -3)"
	: >"$T/daemon.log"
}

# settle WHAT [DONE]: the tree under the mount equals the reference, the array is
# optimal, the offline check is clean
settle() {
	diff -r "$T/ref" "$mnt" >"$T/diff" 2>&1 || fail "$1: the tree differs from the reference: $(head -5 "$T/diff")"
	"$RAIDFS" status "$mnt" >"$T/status" 2>&1
	grep -q "optimal" "$T/status" || fail "$1: array not optimal: $(cat "$T/status")"
	rfs_unmount "$mnt" || fail "$1: unmount"
	expect_rc 0 "$RAIDFS" check "$members"
	log "ok: $1: ${2:-completed by the next mount on every member}, files intact, check clean"
}

cut renameat2 "rename of a file" mv "$mnt/a" "$mnt/a2"
mv "$T/ref/a" "$T/ref/a2"
settle "rename of a file"

cut renameat2 "rename of a directory" mv "$mnt/dir" "$mnt/dir2"
mv "$T/ref/dir" "$T/ref/dir2"
settle "rename of a directory"

cut unlinkat "unlink" rm "$mnt/b"
rm "$T/ref/b"
head -c 5000 /dev/urandom >"$T/ref/b"
cp "$T/ref/b" "$mnt/b" || fail "unlink: the name cannot be created again"
settle "unlink, then the name created again"

cut linkat "link" ln "$mnt/c" "$mnt/c-link"
cp "$T/ref/c" "$T/ref/c-link"
settle "link"

# an exchange (renameat2 RENAME_EXCHANGE) of two regular files: both
# names stay, so recovery tells done from not done by the files' ids
xchg() { "$PY" -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2):
    sys.exit(os.strerror(ctypes.get_errno()))' "$@"; }
cut renameat2 "exchange" xchg "$mnt/c" "$mnt/a2"
mv "$T/ref/c" "$T/ref/x"; mv "$T/ref/a2" "$T/ref/c"; mv "$T/ref/x" "$T/ref/a2"
settle "exchange"

cut mkdirat "mkdir" mkdir "$mnt/newdir"
mkdir "$T/ref/newdir"
touch "$mnt/newdir/x" "$T/ref/newdir/x" || fail "mkdir: cannot create a file in the new directory"
settle "mkdir"

# no member can take an intent record (each member's intent file is a
# directory, as a damaged .raidfs could have it): the operations still
# work, and the daemon says once what that means
for d in $mem; do
	rm -f "$d/.raidfs/ns-intent"
	mkdir "$d/.raidfs/ns-intent"
done
rfs_mount "$members" "$mnt" || fail "no intent file: mount"
mv "$mnt/a2" "$mnt/a3" || fail "no intent file: rename failed"
mv "$mnt/a3" "$mnt/a4" || fail "no intent file: second rename failed"
mv "$T/ref/a2" "$T/ref/a4"
n=$(grep -c "cannot write the namespace intent file '.raidfs/ns-intent' on any member" "$T/daemon.log")
[ "$n" = 1 ] || fail "no intent file: the warning was given $n times, not once: $(tail -n 3 "$T/daemon.log")"
for d in $mem; do rmdir "$d/.raidfs/ns-intent"; done
settle "no intent file" "done without intent records, said once"
exit 0
