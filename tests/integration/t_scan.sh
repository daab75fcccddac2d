#!/bin/bash
# t_scan.sh - arrays found by identity, not by path (issue 29, items 1
# and 11).
#
#  - 'raidfs mount UUID=...' and 'raidfs mount NAME' after the members'
#    paths changed (every directory renamed, a member replaced onto a new
#    directory): the tree byte-identical to the reference;
#  - 'raidfs scan' (text and --json) lists a mounted, an unmounted and a
#    half-present array, with each member's state (present, stale, old,
#    missing) and the command that mounts it;
#  - the fstab form: mount(8) with an fstab line (through mount.fuse3)
#    and the helper called the way mount(8) calls mount.raidfs, UUID=;
#  - no array, two arrays of one name, an array already mounted: refused;
#  - bad input (a mount point inside a member, a member inside the mount
#    point, nested members at create --force, one directory given twice
#    through a symlink or a bind mount): refused with a message naming the
#    culprit, and every member untouched (listing and checksums).
. "$(dirname "$0")/lib.sh"

need_fuse
command -v md5sum >/dev/null || skip "md5sum is missing (coreutils)"

D=$T/disks
mkdir -p "$D" "$T/ref"
export RAIDFS_CONF=$T/raidfs.conf	# (never /etc/raidfs.conf)
: >"$RAIDFS_CONF"

# snapshot: every path under the disks (and $T/outer) with its type,
# size and mode, and every file's checksum: the members of every array
snapshot() {
	local d
	for d in "$D" "$T/outer"; do
		(cd "$d" && find . -printf '%p %y %s %m\n' | LC_ALL=C sort &&
			find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r md5sum)
	done
}

# scan_json: 'raidfs scan --json ARGS' into $T/scan.json
scan_json() { "$RAIDFS" scan --json "$@" >"$T/scan.json" || fail "raidfs scan --json $* failed"; }
# jq_py EXPR: a Python expression over the scan document j, printed
jq_py() { "$PY" -c "import json,sys; j=json.load(open(sys.argv[1])); print($1)" "$T/scan.json"; }
# arr NAME FIELD: one field of the array named NAME in $T/scan.json
arr() { jq_py "[a for a in j['arrays'] if a['name'] == '$1'][0]['$2']"; }
# states NAME: its member rows as 'slot:state' words
states() { jq_py "' '.join('%s:%s' % (m['slot'], m['state']) for m in [a for a in j['arrays'] if a['name'] == '$1'][0]['members'])"; }

# ---------------------------------------------------------------- arrays
log "--- three arrays: alpha (raid5, data), beta (raid1), gamma (raid5, half present)"
mkdir -p "$D/a1" "$D/a2" "$D/a3" "$D/b1" "$D/b2" "$D/c1" "$D/c2" "$D/c3" "$D/c4"
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name alpha "$D/a1" "$D/a2" "$D/a3"
expect_rc 0 "$RAIDFS" create --level raid1 --name beta "$D/b1" "$D/b2"
expect_rc 0 "$RAIDFS" create --level raid5 --name gamma "$D/c1" "$D/c2" "$D/c3" "$D/c4"
mv "$D/c3" "$T/c3.away"
mv "$D/c4" "$T/c4.away"

MNT=$T/mnt
rfs_mount "$D/a1:$D/a2:$D/a3" "$MNT" || fail "explicit mount of alpha"
twelve_files "$T/ref" "$MNT" || fail "writing the files"
mkdir -p "$MNT/sub/deeper" "$T/ref/sub/deeper"
echo "by identity" | tee "$MNT/sub/deeper/note" >"$T/ref/sub/deeper/note"
UA=$(scan_json "$D/*"; arr alpha uuid)
[ "$(arr alpha mounted)" = "$MNT" ] || fail "scan: alpha is mounted on $MNT, scan says '$(arr alpha mounted)'"

# a member replaced onto a new directory (online, then the old one kept)
log "--- member 1 of alpha replaced onto a new directory"
mkdir -p "$D/new2"
expect_rc 0 "$RAIDFS" fail "$MNT" 1
expect_rc 0 "$RAIDFS" replace "$MNT" 1 "$D/new2"
wait_member "$MNT" 1 online "$D/new2" || fail "member 1 not rebuilt onto $D/new2"
rfs_unmount_wait "$MNT" || fail "unmount of alpha"

# every path changes: the disks are re-cabled
mv "$D/a1" "$D/disk7"
mv "$D/a3" "$D/disk9"
mv "$D/new2" "$D/disk8"
mv "$D/a2" "$D/olddisk"	# the directory member 1 had before its replacement

log "--- raidfs scan: alpha unmounted (an old directory), beta optimal, gamma half present"
scan_json "$D/*"
[ "$(arr alpha mounted)" = None ] || fail "scan: alpha is not mounted, scan says '$(arr alpha mounted)'"
[ "$(arr alpha state)" = optimal ] || fail "scan: alpha should be optimal: $(arr alpha state)"
[ "$(states alpha)" = "0:present 1:present 1:old 2:present" ] ||
	fail "scan: alpha's members: $(states alpha) (want 0:present 1:present 1:old 2:present)"
[ "$(jq_py "[m['path'] for m in [a for a in j['arrays'] if a['name'] == 'alpha'][0]['members']]")" = \
	"['$D/disk7', '$D/disk8', '$D/olddisk', '$D/disk9']" ] || fail "scan: alpha's directories: $(cat "$T/scan.json")"
[ "$(arr beta state)" = optimal ] && [ "$(states beta)" = "0:present 1:present" ] ||
	fail "scan: beta: $(arr beta state) $(states beta)"
[ "$(arr gamma state)" = failed ] && [ "$(arr gamma can_mount)" = False ] && [ "$(arr gamma missing)" = 2 ] &&
	[ "$(states gamma)" = "0:present 1:present 2:missing 3:missing" ] ||
	fail "scan: gamma (2 of 4 raid5 members): $(arr gamma state) $(arr gamma can_mount) $(states gamma)"
[ "$(arr alpha mount_command)" = "raidfs mount -o 'scan=$D/*' alpha MOUNTPOINT" ] ||
	fail "scan: alpha's mount command: $(arr alpha mount_command)"
expect_rc 0 "$RAIDFS" scan "$D/*"
grep -q "^   state: cannot be mounted: 2 members missing" "$OUT" || fail "scan text: gamma's state: $(cat "$OUT")"
grep -Eq "^ +2  missing +-  \(not found; last seen at $D/c3\)" "$OUT" || fail "scan text: gamma's member 2: $(cat "$OUT")"
grep -Eq "^ +1  old +[0-9]+  $D/olddisk" "$OUT" || fail "scan text: alpha's old member 1: $(cat "$OUT")"
expect_rc 1 "$RAIDFS" scan "$T/nothing-here/*"

log "--- mount by UUID= after the paths changed"
rfs_mount "UUID=$UA" "$MNT" -o "scan=$D/*" || fail "mount UUID=$UA -o scan=$D/*: $(tail -3 "$T/daemon.log")"
diff -r "$T/ref" "$MNT" || fail "alpha mounted by UUID=: the tree differs from the reference"
"$RAIDFS" status --json "$MNT" | grep -q '"state": "optimal"' || fail "alpha by UUID= is not optimal"
"$RAIDFS" status --json "$MNT" | grep -q "\"path\": \"$D/disk8\"" || fail "alpha by UUID= does not use $D/disk8"
scan_json "$D/*"
[ "$(arr alpha mounted)" = "$MNT" ] && [ "$(arr beta mounted)" = None ] ||
	fail "scan with alpha mounted: alpha '$(arr alpha mounted)', beta '$(arr beta mounted)'"
expect_rc 1 "$RAIDFS" mount -o "scan=$D/*" alpha "$T/mnt2"
grep -q "already mounted on '$MNT'" "$ERR" || fail "a second mount of alpha: $(cat "$ERR")"
rfs_unmount_wait "$MNT" || fail "unmount"

log "--- mount by name through the config file"
printf '# raidfs.conf of t_scan\nscan %s/disk* %s/olddisk\n\nscan %s/b*\n' "$D" "$D" "$D" >"$RAIDFS_CONF"
rfs_mount alpha "$MNT" || fail "mount alpha (config file): $(tail -3 "$T/daemon.log")"
diff -r "$T/ref" "$MNT" || fail "alpha mounted by name: the tree differs from the reference"
rfs_unmount_wait "$MNT" || fail "unmount"

log "--- refused: no such array, none to scan, two arrays of one name"
expect_rc 1 "$RAIDFS" mount nosuch "$MNT"
grep -q "no array with name 'nosuch' found" "$ERR" || fail "mount nosuch: $(cat "$ERR")"
RAIDFS_CONF=$T/none.conf expect_rc 1 "$RAIDFS" mount UUID=$UA "$MNT"
grep -q "scan=GLOB" "$ERR" || fail "mount with nothing to scan: $(cat "$ERR")"
mkdir -p "$D/e1" "$D/e2"
expect_rc 0 "$RAIDFS" create --level raid1 --name beta "$D/e1" "$D/e2"
expect_rc 1 "$RAIDFS" mount -o "scan=$D/e*" beta "$MNT"
UB=$(scan_json "$D/b*"; arr beta uuid)
grep -q "2 arrays are named 'beta'" "$ERR" && grep -q "$UB" "$ERR" || fail "two arrays named beta: $(cat "$ERR")"
! mountpoint -q "$MNT" || fail "a refused mount left $MNT mounted"

log "--- the fstab form: mount(8) and the mount.raidfs helper, UUID="
if [ "$(id -u)" = 0 ] && { [ -x /sbin/mount.fuse3 ] || [ -x /usr/sbin/mount.fuse3 ]; }; then
	# type fuse with PROGRAM#SOURCE: mount.fuse3 runs the program with
	# the source, as it runs raidfs for type fuse.raidfs (whose binary
	# is not installed here).  mount(8) looks up UUID= among block
	# devices itself, except in a source it cannot read as a tag.
	MOUNTS+=("$MNT")
	printf '%s#UUID=%s %s fuse defaults,nofail,scan=%s/disk*,log=%s 0 0\n' "$RAIDFS" "$UA" "$MNT" "$D" "$T/daemon.log" >"$T/fstab"
	mount -T "$T/fstab" "$MNT" || fail "mount -T fstab (UUID=): $(tail -3 "$T/daemon.log")"
	diff -r "$T/ref" "$MNT" || fail "alpha mounted through mount(8): the tree differs"
	rfs_unmount_wait "$MNT" || fail "unmount"
else
	log "(mount(8) with an fstab line skipped: needs root and mount.fuse3)"
fi
ln -s "$RAIDFS" "$T/mount.raidfs"
MOUNTS+=("$MNT")
: >"$RAIDFS_CONF"
"$T/mount.raidfs" "UUID=$UA" "$MNT" -n -o "rw,nofail,scan=$D/disk*,log=$T/daemon.log,dev,suid" ||
	fail "mount.raidfs UUID=: $(tail -3 "$T/daemon.log")"
diff -r "$T/ref" "$MNT" || fail "alpha mounted through mount.raidfs: the tree differs"

# ------------------------------------------------------------ bad input
log "--- bad input refused, every member untouched"
FAILS=0
refused() {	# DESCRIPTION CULPRIT -- CMD...
	local desc=$1 culprit=$2
	shift 3
	"$@" >"$T/out.txt" 2>"$T/err.txt"
	local rc=$?
	if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then
		log "FAIL: $desc: exit $rc (want a refusal)"; FAILS=$((FAILS + 1))
	elif ! grep -qF -- "$culprit" "$T/err.txt"; then
		log "FAIL: $desc: the message does not name '$culprit': $(cat "$T/err.txt")"; FAILS=$((FAILS + 1))
	else
		log "ok: $desc: $(grep -m1 . "$T/err.txt" | cut -c1-160)"
	fi
}
mkdir -p "$D/b1/inner" "$T/outer" "$D/n1/n2" "$D/n3" "$T/mnt3"
mv "$D/e1" "$D/e2" "$T/outer/"
ln -s "$D/b1" "$T/b1link"
MOUNTS+=("$D/b1/inner" "$D/b1" "$T/outer" "$T/mnt3")
before=$(snapshot)
refused "mount point inside a member" "$D/b1/inner" -- "$RAIDFS" mount "$D/b1:$D/b2" "$D/b1/inner"
refused "mount point inside a member (by uuid)" "$D/b1/inner" -- "$RAIDFS" mount -o "scan=$D/b*" UUID=$UB "$D/b1/inner"
refused "mount point is a member" "$D/b1" -- "$RAIDFS" mount "$D/b1:$D/b2" "$D/b1"
refused "member inside the mount point" "$T/outer/e1" -- "$RAIDFS" mount "$T/outer/e1:$T/outer/e2" "$T/outer"
refused "create --force, a member inside another" "$D/n1/n2" -- "$RAIDFS" create --force --level raid5 "$D/n1" "$D/n3" "$D/n1/n2"
refused "create, a member inside another" "$D/n1" -- "$RAIDFS" create --level raid1 "$D/n1/n2" "$D/n1"
refused "a member twice through a symlink" "$T/b1link" -- "$RAIDFS" mount "$D/b1:$D/b2:$T/b1link" "$T/mnt3"
if [ "$(id -u)" = 0 ]; then
	mkdir -p "$T/b1bind"
	MOUNTS+=("$T/b1bind")
	mount --bind "$D/b1" "$T/b1bind" || fail "mount --bind"
	refused "a member twice through a bind mount" "$T/b1bind" -- "$RAIDFS" mount "$D/b1:$T/b1bind" "$T/mnt3"
	refused "create --force, a member twice through a bind mount" "$T/b1bind" -- "$RAIDFS" create --force --level raid1 "$D/n3" "$D/b1" "$T/b1bind"
	umount "$T/b1bind" || fail "umount of the bind mount"
else
	log "(bind mounts skipped: not root)"
fi
after=$(snapshot)
[ "$before" = "$after" ] || { diff <(echo "$before") <(echo "$after") >&2; fail "a refused command changed the members"; }
[ "$FAILS" -eq 0 ] || fail "$FAILS bad input(s) not refused as they should be"
diff -r "$T/ref" "$MNT" || fail "alpha changed while bad input was refused"
rfs_unmount_wait "$MNT" || fail "unmount"
log "ok"
