# contrib/bench/lib.sh - shell helpers shared by the benchmark scripts
# shellcheck shell=bash
# (run.sh, quick.sh).  Source it; it defines functions only.
#
# The caller sets:
#   PIDFILE  a file listing the daemons it started (one pid a line):
#            stop_child leaves those alone, the caller's cleanup ends them
#   CHILD    the pid of the background subshell running the current step
#            ("" when none)
#   RES      the results file that record() appends to

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

# record CONFIG METRIC VALUE: one result line
record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$RES"; }

# started PID: a daemon the caller must end at cleanup
started() { echo "$1" >> "$PIDFILE"; }

# descendants PID: its children, grandchildren, ... (by parent pid)
descendants() {
	local c
	for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
		echo "$c"
		descendants "$c"
	done
}

# stop_child: end the running step ($CHILD) and what it started (fio,
# python, ...), TERM first, then KILL; the daemons in $PIDFILE are not
# touched.
stop_child() {
	[ -n "$CHILD" ] || return 0
	local p procs sig
	procs="$CHILD $(descendants "$CHILD")"
	for sig in TERM KILL; do
		for p in $procs; do
			grep -qx "$p" "$PIDFILE" 2>/dev/null && continue
			kill -"$sig" "$p" 2>/dev/null
		done
		[ $sig = KILL ] || sleep 0.5
	done
	CHILD=""
}

# end_process PID: give it 10 s to exit, then TERM, then KILL
end_process() {
	local p=$1 i
	for i in $(seq 40); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.25; done
	kill "$p" 2>/dev/null
	sleep 0.5
	kill -9 "$p" 2>/dev/null
	return 0
}

# wait_mounted MOUNTPOINT PID: until MOUNTPOINT is a mount (0), PID exits
# or 15 s pass (1)
wait_mounted() {
	local i
	for i in $(seq 150); do
		mountpoint -q "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# rotated N WORDS...: the words, starting at the N-th (mod their count)
rotated() {
	local n=$1 i
	shift
	local a=("$@")
	for i in $(seq 0 $((${#a[@]} - 1))); do echo "${a[$(((i + n) % ${#a[@]}))]}"; done
}

# in_child ERRFILE COMMAND...: run COMMAND in a background subshell with
# set -e and wait for it, its pid in $CHILD meanwhile; its exit status is
# left in $CHILD_RC.  In the background, Ctrl-C and TERM reach the
# caller's traps at once (bash runs traps only between foreground
# commands).  Its stderr goes to ERRFILE (/dev/stderr keeps it).
# Never call it in a condition (if, while, ||, &&): bash would then ignore
# set -e in the child as well, and a failing step would carry on.
# shellcheck disable=SC2034 # CHILD_RC is for the caller
in_child() {
	local err=$1
	shift
	# (2>/dev/stderr would open the file stderr goes to again, from its
	# start: a log the run's output was sent to lost what came before)
	if [ "$err" = /dev/stderr ]; then
		( set -e; "$@" ) </dev/null &
	else
		( set -e; "$@" ) </dev/null 2>"$err" &
	fi
	CHILD=$!
	CHILD_RC=0
	wait "$CHILD" || CHILD_RC=$?
	CHILD=""
}

# build_passthrough DIR: libfuse's example passthrough_ll (libfuse3-dev's
# examples, gzipped or not) built as DIR/passthrough_ll; PT_TUNABLES is
# the malloc tuning it runs with (quick.sh says why)
PT_TUNABLES=glibc.malloc.mmap_threshold=8388608:glibc.malloc.trim_threshold=1073741824
build_passthrough() {
	local src=/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c
	[ -f "$src" ] || src=$(find /usr/share/doc/libfuse3-dev -name 'passthrough_ll.c*' | head -1)
	case "$src" in *.gz) gunzip -c "$src" > "$1/pt.c"; src=$1/pt.c ;; esac
	# shellcheck disable=SC2046
	gcc -O2 -o "$1/passthrough_ll" "$src" $(pkg-config --cflags --libs fuse3) -lpthread
}

# scratch_tmpfs NAME SIZE: WORK, a new directory /tmp/raidfs-NAME.*, with
# a fresh tmpfs of SIZE on TMPFS ($WORK/fs); at exit, failure or Ctrl-C
# (scratch_cleanup) every mount point in MNTS is unmounted, every pid in
# PIDS ended, the tmpfs unmounted and WORK removed
scratch_tmpfs() {
	WORK=$(mktemp -d "/tmp/raidfs-$1.XXXXXX")
	TMPFS=$WORK/fs
	MNTS=()
	PIDS=()
	trap scratch_cleanup EXIT
	trap 'exit 130' INT TERM
	mkdir -p "$TMPFS"
	mount -t tmpfs -o size="$2" tmpfs "$TMPFS"
}
scratch_cleanup() {
	local m p
	for m in "${MNTS[@]}"; do mountpoint -q "$m" 2>/dev/null && { fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m"; }; done
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	sleep 0.5
	mountpoint -q "$TMPFS" 2>/dev/null && umount -l "$TMPFS"
	rm -rf "$WORK"
}
