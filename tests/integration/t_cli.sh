#!/bin/bash
# t_cli.sh - the command line as a user meets it (issue 29, items 9 and 10):
#   - every subcommand, as the binary lists them ('raidfs help --list', so
#     a new one is covered by itself), answers --help, -h and 'raidfs help
#     CMD' with its own usage on stdout, exit 0, nothing on stderr; the
#     full 'raidfs --help' names every one;
#   - --version and -V print configure's version;
#   - unmount of a directory that is no raidfs mount says one thing of its
#     own (not fusermount3's), exit 1; unmount of a mount works, and a
#     second one says it is not mounted;
#   - create refuses --groups for a level without groups and array names
#     with '/', a control character, ',', empty or too long, naming the
#     culprit, and leaves every member directory as it was (listing and
#     checksums compared; --force, so that only the refusal keeps them);
#   - each man page renders with man --warnings and no warning;
#   - bash completion: 'complete -p raidfs' after sourcing, a partial
#     subcommand, options, the mount points of raidfs mounts and the
#     member indexes of one.
. "$(dirname "$0")/lib.sh"

need_fuse
R=$RAIDFS
FAILS=0
bad() { log "FAIL: $*"; FAILS=$((FAILS + 1)); }
ok() { log "ok: $*"; }

# ---------------------------------------------------------------------------
log "--- --help of every subcommand"
# ---------------------------------------------------------------------------
mapfile -t CMDS < <("$R" help --list)
[ "${#CMDS[@]}" -ge 15 ] || bad "'raidfs help --list' lists ${#CMDS[@]} commands: ${CMDS[*]}"
for c in create mount scan status list unmount check fail replace scrub cache bbu inject; do
	printf '%s\n' "${CMDS[@]}" | grep -qx -- "$c" || bad "'raidfs help --list' does not list '$c'"
done
"$R" --help >"$T/full.txt" 2>"$T/err.txt" || bad "raidfs --help: exit $?"
for c in "${CMDS[@]}"; do
	grep -q "^  $c " "$T/full.txt" || bad "'raidfs --help' does not describe '$c'"
	for form in "$c --help" "$c -h" "help $c" "$c /nonexistent --help"; do
		# shellcheck disable=SC2086
		"$R" $form >"$T/out.txt" 2>"$T/err.txt"
		rc=$?
		if [ "$rc" -ne 0 ]; then
			bad "raidfs $form: exit $rc (stderr: $(head -c 300 "$T/err.txt"))"
		elif ! head -n 1 "$T/out.txt" | grep -q "^usage: raidfs $c "; then
			bad "raidfs $form: the first line is not its usage: '$(head -n 1 "$T/out.txt")'"
		elif [ -s "$T/err.txt" ]; then
			bad "raidfs $form: something on stderr: $(head -c 300 "$T/err.txt")"
		elif [ "$(wc -l <"$T/out.txt")" -lt 3 ]; then
			bad "raidfs $form: no description after the usage line"
		fi
	done
done
ok "--help, -h, 'help CMD' of ${#CMDS[@]} subcommands"
# the alias, and mount.raidfs (mount(8)'s helper)
"$R" umount --help 2>/dev/null | grep -q '^usage: raidfs unmount ' || bad "raidfs umount --help: not unmount's usage"
ln -s "$R" "$T/mount.raidfs"
"$T/mount.raidfs" --help 2>/dev/null | grep -q '^usage: raidfs mount ' || bad "mount.raidfs --help: not mount's usage"
expect_rc 1 "$R" help no-such-command
grep -q "no-such-command" "$ERR" || bad "raidfs help no-such-command: the message does not name it"

# ---------------------------------------------------------------------------
log "--- --version"
# ---------------------------------------------------------------------------
want=$(sed -n 's/^AC_INIT(\[raidfs\], *\[\([^]]*\)\].*/\1/p' "$SRCDIR/configure.ac")
[ -n "$want" ] || bad "no version in configure.ac's AC_INIT"
for v in --version -V; do
	expect_rc 0 "$R" "$v"
	[ "$(cat "$OUT")" = "raidfs $want" ] || bad "raidfs $v: '$(cat "$OUT")', expected 'raidfs $want'"
done
ok "--version: raidfs $want"

# ---------------------------------------------------------------------------
log "--- create refuses --groups without groups and bad names, touching nothing"
# ---------------------------------------------------------------------------
M=()
for i in 1 2 3 4 5 6; do
	mkdir -p "$T/m$i/sub"
	head -c $((i * 1000)) /dev/urandom >"$T/m$i/sub/file"
	M+=("$T/m$i")
done
snapshot() {
	local d
	for d in "${M[@]}"; do
		find "$d" -printf '%p %s %m %T@\n'
		find "$d" -type f -exec md5sum {} +
		getfattr -d -m - -R "$d" 2>/dev/null
	done | sort
}
snapshot >"$T/before.txt"
# refused DESC CULPRIT -- CREATE ARGS...: exit 1, stderr names CULPRIT,
# members unchanged
refused() {
	local desc=$1 culprit=$2
	shift 3
	"$R" create --force "$@" >"$T/out.txt" 2>"$T/err.txt"
	local rc=$?
	if [ "$rc" -eq 0 ]; then
		bad "$desc: accepted"
		rm -rf "${M[@]/%//.raidfs}"
	elif [ "$rc" -ge 128 ]; then
		bad "$desc: killed by signal $((rc - 128))"
	elif ! grep -qF -- "$culprit" "$T/err.txt"; then
		bad "$desc: the message does not name '$culprit': $(cat "$T/err.txt")"
	else
		ok "$desc: $(head -n 1 "$T/err.txt")"
	fi
	snapshot >"$T/after.txt"
	cmp -s "$T/before.txt" "$T/after.txt" ||
		bad "$desc: a member directory changed: $(diff "$T/before.txt" "$T/after.txt" | head -n 5)"
}
refused "--groups on raid5" "--groups" -- --level raid5 --groups 2 "${M[@]:0:4}"
refused "--groups on raid6" "--groups" -- --level raid6 --groups 2 "${M[@]:0:4}"
refused "--groups on raid10" "--groups" -- --level raid10 --groups 2 "${M[@]:0:4}"
refused "--groups on raid1" "--groups" -- --level raid1 --groups 1 "${M[@]:0:2}"
refused "a name with '/'" "a/b" -- --level raid5 --name a/b "${M[@]:0:3}"
refused "a name with a control character" 'bad\x01name' -- --level raid5 --name "$(printf 'bad\001name')" "${M[@]:0:3}"
refused "a name with a newline" 'two\x0alines' -- --level raid5 --name "$(printf 'two\nlines')" "${M[@]:0:3}"
refused "a name with a tab" 'tab\x09bed' -- --level raid5 --name "$(printf 'tab\tbed')" "${M[@]:0:3}"
refused "a name with ','" "a,b" -- --level raid5 --name a,b "${M[@]:0:3}"
refused "a name with ':'" "a:b" -- --level raid5 --name a:b "${M[@]:0:3}"
refused "an empty name" "empty" -- --level raid5 --name "" "${M[@]:0:3}"
long=$(printf 'n%.0s' $(seq 64))
refused "a name of 64 characters" "$long" -- --level raid5 --name "$long" "${M[@]:0:3}"
# what is allowed still is (so the refusals above are the checks', not a
# create that fails for everything): raid50 with groups, a plain name
rm -rf "$T"/m?/sub
expect_rc 0 "$R" create --level raid50 --groups 2 --name ok.name_63-$(printf 'x%.0s' $(seq 52)) "${M[@]}"
grep -q "created raid50" "$OUT" || bad "create raid50 --groups 2: $(cat "$OUT")"
ok "raid50 --groups 2 with a name of 63 characters is created"

# ---------------------------------------------------------------------------
log "--- unmount"
# ---------------------------------------------------------------------------
mkdir -p "$T/plain"
for d in "$T/plain" "$T/does-not-exist"; do
	expect_rc 1 "$R" unmount "$d"
	[ "$(wc -l <"$ERR")" -eq 1 ] || bad "unmount $d: not one line: $(cat "$ERR")"
	grep -qF "$d" "$ERR" || bad "unmount $d: the message does not name it: $(cat "$ERR")"
	! grep -qi fusermount "$ERR" || bad "unmount $d: fusermount3's text: $(cat "$ERR")"
	grep -q "not mounted\|no raidfs array is mounted" "$ERR" || bad "unmount $d: does not say it is not mounted: $(cat "$ERR")"
done
ok "unmount of what is not mounted: $(cat "$ERR")"
rfs_mount "$(join_members "${M[@]}")" "$T/mnt" || fail "mount of the raid50 failed"

# ---------------------------------------------------------------------------
log "--- bash completion"
# ---------------------------------------------------------------------------
COMPL=$SRCDIR/contrib/completion/raidfs
# complete CMD-WORDS...: COMPREPLY of the completion function, one a line
complete_words() {
	bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_raidfs raidfs "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		printf "%s\n" "${COMPREPLY[@]}"' _ "$COMPL" "$@"
}
bash -c 'source "$1"; complete -p raidfs' _ "$COMPL" >"$T/out.txt" 2>&1 || bad "sourcing $COMPL: $(cat "$T/out.txt")"
grep -q -- '-F _raidfs raidfs' "$T/out.txt" || bad "complete -p raidfs: '$(cat "$T/out.txt")'"
[ "$(complete_words "$R" st)" = status ] || bad "completion of 'st': '$(complete_words "$R" st)', expected status"
[ "$(complete_words "$R" sc | sort | tr '\n' ' ')" = "scan scrub " ] ||
	bad "completion of 'sc': '$(complete_words "$R" sc | tr '\n' ' ')', expected scan scrub"
[ "$(complete_words "$R" "" | wc -l)" -ge "${#CMDS[@]}" ] || bad "completion of '': fewer words than subcommands"
complete_words "$R" status --j | grep -qx -- --json || bad "completion of 'status --j': no --json"
complete_words "$R" create --level raid6 | grep -qx raid60 || bad "completion of 'create --level raid6': no raid60"
complete_words "$R" scrub "$T/mnt" "" | grep -qx stop || bad "completion of 'scrub MNT ': no stop"
complete_words "$R" status "$T/m" | grep -qx "$T/mnt" ||
	bad "completion of 'status $T/m': not the mount point: '$(complete_words "$R" status "$T/m" | tr '\n' ' ')'"
[ "$(complete_words "$R" fail "$T/mnt" "" | sort -n | tr '\n' ' ')" = "0 1 2 3 4 5 " ] ||
	bad "completion of 'fail MNT ': '$(complete_words "$R" fail "$T/mnt" "" | tr '\n' ' ')', expected 0 1 2 3 4 5"
ok "completion: subcommands, options, mount points, member indexes"

expect_rc 0 "$R" unmount "$T/mnt"
[ ! -s "$ERR" ] || bad "unmount of a mount: something on stderr: $(cat "$ERR")"
expect_rc 1 "$R" unmount "$T/mnt"
grep -qF "$T/mnt" "$ERR" || bad "second unmount: the message does not name the mount point"
ok "unmount, then unmount again: $(cat "$ERR")"

# ---------------------------------------------------------------------------
log "--- man pages"
# ---------------------------------------------------------------------------
PAGES=("$SRCDIR"/docs/*.[0-9])
[ "${#PAGES[@]}" -ge 3 ] || bad "fewer than 3 man pages in docs/: ${PAGES[*]}"
if command -v man >/dev/null && command -v groff >/dev/null; then
	for p in "${PAGES[@]}"; do
		LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$p" >"$T/man.txt" 2>"$T/manerr.txt"
		rc=$?
		if [ "$rc" -ne 0 ] || [ -s "$T/manerr.txt" ]; then
			bad "man --warnings -l $p: exit $rc: $(head -n 5 "$T/manerr.txt")"
		elif [ "$(wc -l <"$T/man.txt")" -lt 20 ]; then
			bad "man -l $p: renders $(wc -l <"$T/man.txt") lines"
		else
			ok "man --warnings -l $(basename "$p"): no warning"
		fi
	done
	# raidfs(8) describes every subcommand the binary has
	LC_ALL=C.UTF-8 MANWIDTH=200 man -l "$SRCDIR/docs/raidfs.8" 2>/dev/null >"$T/man.txt"
	for c in "${CMDS[@]}"; do
		grep -qE "^ {7}$c( |$)" "$T/man.txt" || bad "raidfs(8) has no entry for '$c' under COMMANDS"
	done
else
	log "man pages not checked: man or groff is missing (apt-get install man-db groff-base; contrib/install-deps.sh does)"
fi

[ "$FAILS" -eq 0 ] || fail "$FAILS problem(s)"
log "all passed"
