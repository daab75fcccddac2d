# lib.sh - common helpers for raidfs integration scenarios.
#
# Source it first thing in a scenario script:
#     . "$(dirname "$0")/lib.sh"
# It creates a scratch directory ($T), installs an EXIT trap that unmounts
# every raidfs mount the scenario made and kills leftover daemons (also when
# the scenario fails), and provides small helpers.  On failure the scratch
# directory is kept and its path printed together with the command line to
# reproduce.  Exit status 77 means "skipped" (automake convention).
#
# Environment:
#   RAIDFS      path of the raidfs binary (default: the build tree's)
#   KEEP=1      keep the scratch directory even on success
#   SEED        random seed for workloads (default: derived from $RANDOM)
#   RAIDFS_TEST_TIER  quick (the default: `make check`, one configuration
#               of each scenario) or long (`make check-long`: the whole
#               matrix); a scenario asks with long_tier

set -u
TESTNAME=$(basename "$0" .sh)
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
: "${top_builddir:=$SRCDIR}"
RAIDFS=${RAIDFS:-$(cd "$top_builddir" && pwd)/raidfs}
PY=${PYTHON:-python3}
# resolve wrappers (pyenv shims cost ~0.1 s per start) to the interpreter
PY=$("$PY" -c 'import sys; print(sys.executable or "")' 2>/dev/null | grep . || echo "$PY")
TOOLS=$SRCDIR/tests/tools
SEED=${SEED:-$(( (RANDOM << 15) | RANDOM ))}
RAIDFS_TEST_TIER=${RAIDFS_TEST_TIER:-quick}
case $RAIDFS_TEST_TIER in quick|long) ;; *) echo "RAIDFS_TEST_TIER must be quick or long, not '$RAIDFS_TEST_TIER'" >&2; exit 99 ;; esac

# long_tier: true in the long tier (make check-long)
long_tier() { [ "$RAIDFS_TEST_TIER" = long ]; }
# tier_pick QUICK LONG: prints QUICK in the quick tier, LONG in the long one
tier_pick() { if long_tier; then echo "$2"; else echo "$1"; fi; }
T=$(mktemp -d "${TMPDIR:-/tmp}/raidfs-$TESTNAME.XXXXXX")
MOUNTS=()
FAILED=0

log() { printf '%s: %s\n' "$TESTNAME" "$*" >&2; }

cleanup() {
	local rc=$?
	local m
	for m in "${MOUNTS[@]}"; do
		# is_mounted also sees a mount whose daemon died (ENOTCONN)
		if mountpoint -q "$m" 2>/dev/null || is_mounted "$m"; then
			fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		fi
	done
	# daemons started by this scenario carry $T in their command line
	pkill -9 -f -- "$T" 2>/dev/null
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		log "FAILED (exit $rc); scratch kept in $T"
		log "reproduce: SEED=$SEED KEEP=1 RAIDFS_TEST_TIER=$RAIDFS_TEST_TIER $0"
		[ -f "$T/daemon.log" ] && { log "last daemon log lines:"; tail -n 20 "$T/daemon.log" >&2; }
	elif [ "${KEEP:-0}" = 1 ]; then
		log "scratch kept in $T"
	else
		rm -rf "$T"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { log "FAIL: $*"; exit 1; }
skip() { log "SKIP: $*"; exit 77; }

need_fuse() {
	[ -e /dev/fuse ] || skip "/dev/fuse is missing"
	command -v fusermount3 >/dev/null || skip "fusermount3 is missing (apt-get install fuse3)"
	[ -x "$RAIDFS" ] || fail "raidfs binary not found at $RAIDFS"
}

# make_members N [prefix] -> creates $T/<prefix>1..N, prints them space separated
make_members() {
	local n=$1 p=${2:-d} i out=""
	for i in $(seq 1 "$n"); do
		mkdir -p "$T/$p$i"
		out="$out $T/$p$i"
	done
	echo $out
}

# join_members "a b c" -> a:b:c
join_members() { echo "$*" | tr ' ' ':'; }

# write_fileset MNT REF SEED DIRS FILES MIN MAX: DIRS directories dirN
# of FILES files fNN each, random sizes MIN..MAX, the same bytes under
# MNT and under the reference REF
write_fileset() {
	"$PY" - "$@" <<'PYEOF'
import os, sys, random
mnt, ref = sys.argv[1:3]
seed, dirs, files, lo, hi = map(int, sys.argv[3:8])
r = random.Random(seed)
for d in range(dirs):
    for root in (mnt, ref):
        os.makedirs(os.path.join(root, "dir%d" % d), exist_ok=True)
    for f in range(files):
        data = r.randbytes(r.randrange(lo, hi + 1))
        for root in (mnt, ref):
            with open(os.path.join(root, "dir%d" % d, "f%02d" % f), "wb") as fh:
                fh.write(data)
PYEOF
}

# rfs_mount MEMBERS_COLON MOUNTPOINT [mount args...]: mounts in the
# background, registers the mount for cleanup, daemon log in $T/daemon.log
rfs_mount() {
	local members=$1 mnt=$2; shift 2
	mkdir -p "$mnt"
	MOUNTS+=("$mnt")
	"$RAIDFS" mount -o "log=$T/daemon.log" "$@" "$members" "$mnt" || return $?
	mountpoint -q "$mnt" || { log "mount of $mnt did not appear"; return 1; }
}

rfs_unmount() {
	local mnt=$1
	"$RAIDFS" unmount "$mnt" || { fusermount3 -u "$mnt"; return 1; }
}

# daemon_pid MOUNTPOINT -> pid of the daemon serving it
daemon_pid() {
	pgrep -f -- "raidfs.* $1\$" | head -n 1
}

# expect_rc RC CMD... : run CMD, fail unless it exits with RC; output in $OUT/$ERR
expect_rc() {
	local want=$1; shift
	OUT=$T/out.txt ERR=$T/err.txt
	"$@" >"$OUT" 2>"$ERR"
	local rc=$?
	if [ "$rc" -ne "$want" ]; then
		log "command: $*"; log "stdout: $(cat "$OUT")"; log "stderr: $(cat "$ERR")"
		fail "expected exit $want, got $rc"
	fi
}

# ---- helpers added for the level/degraded/crash scenarios ----------------

# need_python: skip unless $PY is a Python >= 3.9 (workload.py needs it)
need_python() {
	"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null ||
		skip "python3 >= 3.9 is missing (apt-get install python3)"
}

# is_mounted PATH: true when PATH is a mount point in /proc/mounts (also
# when its FUSE daemon died and stat() on it fails with ENOTCONN)
is_mounted() {
	local p
	p=$(realpath -m "$1")
	awk -v p="$p" '$2 == p { found = 1 } END { exit !found }' /proc/mounts
}

# workload ARGS...: run tests/tools/workload.py
# (-S: it needs only the standard library, and site setup costs ~50 ms)
# WL_TIMEOUT (default 600 s) stops a workload stuck on a hung mount.
workload() { timeout -k 5 "${WL_TIMEOUT:-600}" "$PY" -S "$TOOLS/workload.py" "$@"; }

# wait_pid_gone PID SECONDS: wait until PID has exited (a zombie counts as
# exited: reap children with `wait` afterwards - but not while another of
# its threads is still on its way out: the last one frees the memory, then
# closes the descriptors, and with them the members' locks); false on
# timeout
wait_pid_gone() {
	local pid=$1 n=$(( $2 * 20 ))
	[ -n "$pid" ] || return 0
	while kill -0 "$pid" 2>/dev/null; do
		case $(ps -o stat= -p "$pid" 2>/dev/null) in
		"") return 0 ;;
		Z*) [ "$(ls "/proc/$pid/task" 2>/dev/null | wc -l)" -le 1 ] && return 0 ;;
		esac
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 0.05
	done
}

# rfs_unmount_wait MOUNTPOINT: unmount and wait (20 s at most) until the
# daemon has exited, so the members can be used again right away
rfs_unmount_wait() {
	local mnt=$1 pid
	pid=$(daemon_pid "$mnt")
	rfs_unmount "$mnt" || { log "unmount of $mnt failed"; return 1; }
	wait_pid_gone "$pid" 20 || { log "daemon $pid of $mnt still running 20 s after unmount"; return 1; }
	! is_mounted "$mnt" || { log "$mnt still mounted after unmount"; return 1; }
}

# rfs_unmount_quick MOUNTPOINT: fusermount3 -u (not the CLI) and wait until
# the daemon has exited (a zombie counts: init may reap it late)
rfs_unmount_quick() {
	local mnt=$1 pid
	pid=$(daemon_pid "$mnt")
	fusermount3 -u "$mnt" || { log "fusermount3 -u $mnt failed"; return 1; }
	wait_pid_gone "$pid" 20 || { log "daemon $pid of $mnt still running 20 s after unmount"; return 1; }
	! is_mounted "$mnt" || { log "$mnt still mounted after unmount"; return 1; }
}

# hide_member DIR / unhide_member DIR: make a member path not exist (a
# missing disk) by renaming it to DIR.away, and put it back
hide_member() { mv "$1" "$1.away"; }
unhide_member() { mv "$1.away" "$1"; }

# stripe_data_chunks LEVEL WIDTH [GROUPS]: data chunks per stripe
stripe_data_chunks() {
	local l=$1 w=$2 g=${3:-2}
	case $l in
	single|raid1) echo 1 ;;
	raid0) echo "$w" ;;
	raid5) echo $((w - 1)) ;;
	raid6) echo $((w - 2)) ;;
	raid10) echo $((w / 2)) ;;
	raid50) echo $((g * (w / g - 1))) ;;
	raid60) echo $((g * (w / g - 2))) ;;
	esac
}

# size_bytes 64K -> 65536
size_bytes() {
	local s=$1
	case $s in
	*[kK]) echo $(( ${s%?} * 1024 )) ;;
	*[mM]) echo $(( ${s%?} * 1048576 )) ;;
	*) echo "$s" ;;
	esac
}

# wait_member MOUNTPOINT INDEX STATE [PATH]: wait up to 90 s until member
# INDEX is in STATE (and at PATH); 1 if it never gets there
wait_member() {
	local pat="\"index\": $2, [^}]*\"state\": \"$3\""
	[ -z "${4:-}" ] || pat="\"index\": $2, \"path\": \"$4\", \"state\": \"$3\""
	for _ in $(seq 1 900); do
		"$RAIDFS" status --json "$1" | grep -q "$pat" && return 0
		sleep 0.1
	done
	return 1
}

# pause_rebuild_at MNT ERE: wait (at most 30 s) until the file the
# rebuild is at ('now:' in status) matches ERE, then pause the rebuild
# ('raidfs rebuild MNT resume' goes on); prints that file, or returns 1
# when it was never seen
pause_rebuild_at() {
	local now
	for _ in $(seq 1 600); do
		now=$("$RAIDFS" status "$1" | sed -n 's/^ *now: //p')
		if [ -n "$now" ] && [[ $now =~ $2 ]]; then
			"$RAIDFS" rebuild "$1" pause >/dev/null || return 1
			echo "$now"
			return 0
		fi
		sleep 0.05
	done
	return 1
}

# new_array NAME [LEVEL [SPARE]]: LEVEL (raid5) over 4 members in
# $T/NAME, chunk 4K, with an empty $C/ref (sets C, mem, mnt), mounted;
# with SPARE, $C/SPARE is a hot spare
new_array() {
	C=$T/$1
	mkdir -p "$C/ref"
	mem=$(make_members 4 "$1/d")
	mnt=$C/mnt
	local spare=() list
	list=$(join_members $mem)
	if [ -n "${3:-}" ]; then
		mkdir -p "$C/$3"
		spare=(--spare "$C/$3")
		list=$list:$C/$3
	fi
	expect_rc 0 "$RAIDFS" create --level "${2:-raid5}" --chunk 4K "${spare[@]}" "${CREATE_ARGS[@]}" --name "$1" $mem
	rfs_mount "$list" "$mnt" || fail "$1: mount"
}

# scrub_wait MNT: until the scrub has ended (at most 60 s)
scrub_wait() {
	for _ in $(seq 1 600); do
		"$RAIDFS" status --json "$1" | grep -q '"scrub": {"active": false' && return 0
		sleep 0.1
	done
	return 1
}

# rfs_kill MOUNTPOINT: kill -9 the daemon (a crash), wait until it is
# gone and detach the dead mount
rfs_kill() {
	local pid
	pid=$(daemon_pid "$1")
	kill -9 "$pid"
	wait_pid_gone "$pid" 20 || { log "daemon $pid of $1 survived kill -9"; return 1; }
	fusermount3 -uz "$1" 2>/dev/null
	return 0
}

# twelve_files REF MNT: files f1..f12 of about 100-200 KB, random, in MNT
# and in the reference directory REF
twelve_files() {
	local i
	for i in $(seq 1 12); do
		head -c $((100000 + i * 7919)) /dev/urandom >"$1/f$i"
		cp "$1/f$i" "$2/f$i" || return 1
	done
}

# overwrite_files REF MNT N: N overwrites (1..20000 bytes at an offset
# below 100000) of random files f1..f12 in MNT, the same in REF; fails the
# test when a write fails
overwrite_files() {
	local k i off n
	for k in $(seq 1 "$3"); do
		i=$((RANDOM % 12 + 1))
		off=$((RANDOM * 3 % 100000))
		n=$((RANDOM % 20000 + 1))
		head -c "$n" /dev/urandom >"$T/chunk"
		dd if="$T/chunk" of="$1/f$i" bs=1 seek="$off" conv=notrunc 2>/dev/null
		dd if="$T/chunk" of="$2/f$i" bs=64K seek="$off" oflag=seek_bytes conv=notrunc 2>/dev/null ||
			fail "${what:-overwrite}: write failed"
	done
}

# stripe0_slots REF CHUNK NDATA DIR...: what each member's shard of the
# file g (REF's bytes, in each DIR) holds of stripe 0, found from its first
# CHUNK bytes: one word per DIR, in order - the data slot (0..NDATA-1;
# a slot wholly past the file's end: an empty shard), p (the xor parity)
# or q (another parity)
stripe0_slots() {
	"$PY" - "$@" <<'PYEOF'
import sys
ref = open(sys.argv[1], "rb").read()
chunk, ndata = int(sys.argv[2]), int(sys.argv[3])
slots = [ref[i * chunk:(i + 1) * chunk] for i in range(ndata)]
p = bytearray(chunk)
for s in slots:
    for k, b in enumerate(s):
        p[k] ^= b
words = []
for d in sys.argv[4:]:
    first = open(d + "/g", "rb").read()[:chunk]
    w = "q"
    for i, s in enumerate(slots):
        if first == s:
            w = str(i)
            break
    else:
        if first and first == bytes(p[:len(first)]):
            w = "p"
    words.append(w)
print(" ".join(words))
PYEOF
}

# slot_member "WORD..." WORDS...: the members (indexes into WORDS, as
# printed by stripe0_slots) holding one of the WORDs, space-separated
slot_member() {
	local want=" $1 " i=0 w out=""
	shift
	for w in "$@"; do
		[ "${want/ $w /}" != "$want" ] && out="$out${out:+ }$i"
		i=$((i + 1))
	done
	echo "$out"
}

# chunk_member MEMBERS PATH STRIPE SLOT: the member that holds that chunk
# (group 0; slot names of tests/tools/chunks.py) of PATH in the array
# whose member directories are MEMBERS (a:b:..., unmounted)
chunk_member() {
	"$PY" -S "$TOOLS/chunks.py" map "$1" --json -- "$2" >"$T/map.json" || return 1
	"$PY" -c '
import json, sys
for c in json.load(open(sys.argv[1]))["chunks"]:
    if c["stripe"] == int(sys.argv[2]) and c["slot"] == sys.argv[3] and c["group"] == 0:
        print(c["member"]); break' "$T/map.json" "$3" "$4"
}

# chunk_flip MEMBERS PATH STRIPE SLOT: 16 bytes of that chunk flipped on
# its member (seed $SEED); prints the member
chunk_flip() {
	"$PY" -S "$TOOLS/chunks.py" flip "$1" --stripe "$3" --slot "$4" --count 16 --seed "$SEED" --json -- "$2" \
		>"$T/flip.json" || return 1
	"$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["member"])' "$T/flip.json"
}

# member_cksum MNT J: member J's checksum errors (status --json
# "cksum_errors")
member_cksum() {
	"$RAIDFS" status --json "$1" >"$T/st.json" || true	# (exit 1: degraded)
	"$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["members"][int(sys.argv[2])]["cksum_errors"])' \
		"$T/st.json" "$2"
}
