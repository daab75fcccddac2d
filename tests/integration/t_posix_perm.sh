#!/bin/bash
# t_posix_perm.sh - permissions as a local filesystem has them, for root and
# for an unprivileged caller (issue 30, acceptance: the POSIX run).
#
# raid5 of 4 members mounted -o allow_other.  The same scenario runs in a
# directory of the local filesystem under $T and in the mount, as root and
# as nobody (setpriv --reuid=65534 --regid=65534 --clear-groups); every
# line it prints (modes, owners, errors) must be the same in both, and a
# few lines are also checked against what POSIX says outright:
#   - the caller's umask (002 and 022) for files, directories and FIFOs;
#   - set-uid/set-gid bits given at create (root) kept;
#   - set-id bits after chown (cleared on an executable, set-gid kept
#     without group execute) and after a write by another user, buffered
#     and O_DIRECT (cleared);
#   - a sticky directory: another user cannot unlink or rename root's
#     file, but can their own;
#   - the owner of new files and directories (the caller's uid and gid; the
#     group of a set-gid parent, and the bit on a new directory);
#   - names of 255 bytes work, 256 fail with ENAMETOOLONG.
#   - paths up to PATH_MAX: a chain of 255-byte directory names made with
#     relative paths (cd), a file at the bottom written and read, its whole
#     path given to stat and read by nobody (POSIX_LONG_PATHS=0 leaves it
#     out).
#
# Needs root (switches users; allow_other); otherwise skips.
. "$(dirname "$0")/lib.sh"
need_fuse
[ "$(id -u)" = 0 ] || skip "needs root (switches users; allow_other)"
command -v setpriv >/dev/null || skip "setpriv is missing (util-linux)"
chmod 755 "$T"

FAILS=0
bad() { log "FAIL: $*"; FAILS=$((FAILS + 1)); }
AS_NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups --"

# scenario DIR: prints one line per fact; run as root
scenario() {
	local d=$1 n255 n256
	cd "$d" || return 1
	mkdir -m 1777 tmp && mkdir -m 0777 open && mkdir -m 2777 sg && chgrp 100 sg
	# the caller's umask (root, then nobody)
	(umask 002; echo > r002; mkdir r002d; mkfifo r002p)
	(umask 022; echo > r022; mkdir r022d)
	$AS_NOBODY sh -c 'umask 002; echo > open/n002; mkdir open/n002d; mkfifo open/n002p;
		umask 022; echo > open/n022; mkdir open/n022d'
	stat -c 'umask %n %a' r002 r002d r002p r022 r022d open/n002 open/n002d open/n002p open/n022 open/n022d
	# set-id bits given at create, as root
	"$PY" -c 'import os, stat; os.umask(0); os.close(os.open("sid", os.O_CREAT | os.O_WRONLY, 0o6755));
os.close(os.open("sgo", os.O_CREAT | os.O_WRONLY, 0o2644)); os.mkdir("sgd", 0o2755)'
	stat -c 'create %n %a %u:%g' sid sgo sgd
	# chown clears set-id bits of an executable; set-gid without group
	# execute stays (the kernel's rules)
	chown 65534:65534 sid sgo
	stat -c 'chown %n %a %u:%g' sid sgo
	# a write by another user clears them, buffered and O_DIRECT
	for f in wbuf wdir; do echo > $f; chmod 6777 $f; done
	$AS_NOBODY sh -c 'echo more >> wbuf; dd if=/dev/zero of=wdir bs=4096 count=1 oflag=direct conv=notrunc status=none'
	stat -c 'write-by-other %n %a' wbuf wdir
	# sticky directory
	echo > tmp/roots
	$AS_NOBODY sh -c 'echo > tmp/mine; rm tmp/roots 2>&1 | sed "s/.*: //"; mv tmp/roots tmp/moved 2>&1 | sed "s/.*: //";
		mv tmp/mine tmp/mine2 && rm tmp/mine2 && echo own-file-removed'
	ls tmp | sed 's/^/sticky left /'
	# owners of new entries, and a set-gid parent's group
	$AS_NOBODY sh -c 'echo > open/f; mkdir open/d; echo > sg/f; mkdir sg/d'
	stat -c 'owner %n %u:%g %A' open/f open/d sg/f sg/d
	# names of 255 and 256 bytes
	n255=$(printf 'n%.0s' $(seq 255)); n256=${n255}n
	$AS_NOBODY sh -c "echo > open/$n255 && echo name255 ok; echo > open/$n256" 2>&1 | sed 's/.*: //'
	cd - >/dev/null
}

# long_paths DIR: a chain of 255-byte names as deep as PATH_MAX allows
long_paths() {
	local d=$1 n255 depth i p
	n255=$(printf 'p%.0s' $(seq 255))
	depth=$(( (4096 - ${#d} - 64) / 256 ))
	( cd "$d" && for i in $(seq "$depth"); do mkdir "$n255" && cd "$n255" || exit 1; done &&
		echo deep >file && [ "$(cat file)" = deep ] ) || { echo "long paths: chain of $depth failed"; return; }
	p=$d; for i in $(seq "$depth"); do p=$p/$n255; done
	[ "$(stat -c %s "$p/file" 2>&1)" = 5 ] && echo "long paths: ${#p}-byte path ok" ||
		echo "long paths: stat of the ${#p}-byte path: $(stat -c %s "$p/file" 2>&1 | sed 's/.*: //')"
	$AS_NOBODY cat "$p/file" >/dev/null 2>&1 && echo "long paths: read by nobody ok"
	rm -rf "${d:?}/$n255"
}

members=$(make_members 4)
mcolon=$(join_members $members)
"$RAIDFS" create --level raid5 --name posix-perm $members >/dev/null || fail "create"
mnt=$T/mnt
rfs_mount "$mcolon" "$mnt" -o allow_other || fail "mount -o allow_other"
chmod 755 "$mnt"
mkdir -m 755 "$T/local" "$mnt/run"
scenario "$T/local" >"$T/local.out" 2>&1
scenario "$mnt/run" >"$T/mount.out" 2>&1
if ! diff -u "$T/local.out" "$T/mount.out" >"$T/diff.out"; then
	sed 's/^/    /' "$T/diff.out" >&2
	bad "the mount differs from the local filesystem (- local, + raidfs)"
fi
# what POSIX says, whatever the local filesystem
expect() { grep -qxF "$1" "$T/mount.out" || bad "expected '$1' in the mount's results"; }
for l in "umask r002 664" "umask r002d 775" "umask open/n002 664" "umask open/n002d 775" \
	"umask r022 644" "umask open/n022d 755" "create sid 6755 0:0" "create sgo 2644 0:0" \
	"chown sid 755 65534:65534" "write-by-other wbuf 777" "write-by-other wdir 777" \
	"sticky left roots" "own-file-removed" "owner open/f 65534:65534 -rw-r--r--" \
	"owner sg/f 65534:100 -rw-r--r--" "owner sg/d 65534:100 drwxr-sr-x" "name255 ok" "File name too long"; do
	expect "$l"
done
log "$(wc -l <"$T/mount.out") facts compared with the local filesystem"
if [ "${POSIX_LONG_PATHS:-1}" = 1 ]; then
	long_paths "$T/local" >"$T/long-local.out" 2>&1
	long_paths "$mnt/run" >"$T/long-mount.out" 2>&1
	sed 's/^/    local: /' "$T/long-local.out" >&2
	sed 's/^/    raidfs: /' "$T/long-mount.out" >&2
	grep -q "path ok" "$T/long-mount.out" || bad "paths up to PATH_MAX"
fi
rfs_unmount "$mnt" || bad "unmount"
"$RAIDFS" check "$mcolon" >"$T/check.out" 2>&1 || { cat "$T/check.out" >&2; bad "'raidfs check' is not clean"; }
[ "$FAILS" = 0 ] || fail "$FAILS check(s) failed"
log "ok"
