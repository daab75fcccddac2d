#!/bin/bash
# t_badinput.sh - every refusal of issue 2 point 5, and corrupt on-disk data.
#
# Each refusal must exit non-zero (and not by a signal) with a message on
# stderr that names the culprit: the member path or the option value.
# Messages are also checked against CONVENTIONS.md (lowercase, problem
# first).  Corrupt superblocks and per-file metadata must be reported by
# 'raidfs check' and must never crash the daemon or return wrong data.
# The fstab form of mount (what mount.fuse3 runs) must accept and ignore
# the generic options fstab passes.
#
# All problems are collected; the script fails at the end if any was found.
. "$(dirname "$0")/lib.sh"

need_fuse
command -v getfattr >/dev/null && command -v setfattr >/dev/null ||
	skip "getfattr/setfattr are missing (apt-get install attr)"

FAILS=0
bad() { log "FAIL: $*"; FAILS=$((FAILS + 1)); }
ok() { log "ok: $*"; }

# style of the first line of a message: lowercase after an optional
# "raidfs:" / "raidfs SUBCOMMAND:" / "error:" prefix
style_ok() {
	local l
	l=$(grep -m1 -v '^[[:space:]]*$' "$1" | sed -E 's/^(raidfs( [a-z]+)?|error|fuse): *//')
	case $l in
	[A-Z]*) return 1 ;;
	esac
	return 0
}

# refuses DESCRIPTION CULPRIT... -- CMD...
# CMD must exit non-zero (not by a signal, within 60 s) and its stderr
# must contain every CULPRIT string.
refuses() {
	local desc=$1 c rc missing=""
	shift
	local culprits=()
	while [ "$1" != -- ]; do culprits+=("$1"); shift; done
	shift
	timeout 60 "$@" >"$T/out.txt" 2>"$T/err.txt"
	rc=$?
	if [ "$rc" -eq 0 ]; then
		bad "$desc: accepted (exit 0), expected a refusal; command: $*"
		return 1
	elif [ "$rc" -eq 124 ]; then
		bad "$desc: timed out after 60 s; command: $*"
		return 1
	elif [ "$rc" -ge 128 ]; then
		bad "$desc: killed by signal $((rc - 128)) (crash); command: $*"
		return 1
	fi
	for c in "${culprits[@]}"; do
		grep -qF -- "$c" "$T/err.txt" || missing="$missing '$c'"
	done
	if [ ! -s "$T/err.txt" ]; then
		bad "$desc: exit $rc but nothing on stderr (the message must name$missing)"
		return 1
	elif [ -n "$missing" ]; then
		bad "$desc: exit $rc, but stderr does not name$missing: $(head -c 400 "$T/err.txt")"
		return 1
	fi
	style_ok "$T/err.txt" || bad "$desc: message does not start lowercase: $(head -n1 "$T/err.txt")"
	ok "$desc (exit $rc): $(head -n1 "$T/err.txt" | cut -c1-200)"
	return 0
}

# accepts DESCRIPTION -- CMD...: must exit 0
accepts() {
	local desc=$1 rc
	shift 2
	timeout 60 "$@" >"$T/out.txt" 2>"$T/err.txt"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		bad "$desc: exit $rc, expected 0; command: $*; stderr: $(head -c 400 "$T/err.txt")"
		return 1
	fi
	ok "$desc"
}

not_mounted() {
	if mountpoint -q "$1"; then
		bad "$2: a refused mount left $1 mounted"
		fusermount3 -u "$1" 2>/dev/null
	fi
}

mkd() { local d; for d in "$@"; do mkdir -p "$T/$d"; done; }
p() { local d out=""; for d in "$@"; do out="$out $T/$d"; done; echo $out; }
colon() { p "$@" | tr ' ' ':'; }

R=$RAIDFS

# status_of MNT: 'raidfs status' into $T/out.txt, exit status in $SRC.
# Called right after a mount on purpose: 'raidfs mount' must not return
# before the daemon answers on its control socket.
status_of() {
	"$R" status "$1" >"$T/out.txt" 2>&1
	SRC=$?
	[ "$SRC" -eq 2 ] && [ ! -s "$T/out.txt" ] &&
		bad "'raidfs status $1' right after 'raidfs mount': exit 2 and no output (mount returned before the control socket answers)"
}

# ---------------------------------------------------------------------------
log "--- create"
# ---------------------------------------------------------------------------
mkd ne1 ne2 ne3
echo "foreign data" >"$T/ne2/foreign.txt"
refuses "create with a non-empty member, no --force" "$T/ne2" -- \
	"$R" create --level raid5 $(p ne1 ne2 ne3)
[ -z "$(ls -A "$T/ne1")" ] ||
	bad "refused create left files behind in the first member '$T/ne1': $(ls -A "$T/ne1" | tr '\n' ' ')"
accepts "create with a non-empty member and --force" -- "$R" create --level raid5 --force $(p ne1 ne2 ne3)
[ "$(cat "$T/ne2/foreign.txt" 2>/dev/null)" = "foreign data" ] ||
	bad "create --force touched the foreign file '$T/ne2/foreign.txt'"
refuses "create over members of an existing array, no --force" "$T/ne1" -- \
	"$R" create --level raid5 $(p ne1 ne2 ne3)

mkd dup1 dup2
refuses "create with the same member twice" "$T/dup1" -- "$R" create --level raid1 $(p dup1 dup1)
refuses "create with the same member twice (trailing slash)" "$T/dup1" -- \
	"$R" create --level raid1 "$T/dup1" "$T/dup1/"
ln -s dup1 "$T/dupalias"
refuses "create with the same member twice (through a symlink)" "$T/dup" -- \
	"$R" create --level raid1 $(p dup1 dupalias)

mkd few1 few2 few3 few4 few5 few6 few7 few8 few9
refuses "create single with no member" "member" -- "$R" create --level single
refuses "create raid0 with 1 member" "raid0" -- "$R" create --level raid0 $(p few1)
refuses "create raid1 with 1 member" "raid1" -- "$R" create --level raid1 $(p few1)
refuses "create raid5 with 2 members" "raid5" -- "$R" create --level raid5 $(p few1 few2)
refuses "create raid6 with 3 members" "raid6" -- "$R" create --level raid6 $(p few1 few2 few3)
refuses "create raid10 with 2 members" "raid10" -- "$R" create --level raid10 $(p few1 few2)
refuses "create raid50 with 2 groups of 2" "raid50" -- \
	"$R" create --level raid50 --groups 2 $(p few1 few2 few3 few4)
refuses "create raid60 with 2 groups of 3" "raid60" -- \
	"$R" create --level raid60 --groups 2 $(p few1 few2 few3 few4 few5 few6)
refuses "create raid10 with an odd width (5)" "raid10" -- \
	"$R" create --level raid10 $(p few1 few2 few3 few4 few5)
refuses "create raid50 with 7 members in 2 groups" "raid50" -- \
	"$R" create --level raid50 --groups 2 $(p few1 few2 few3 few4 few5 few6 few7)
refuses "create raid60 with 9 members in 2 groups" "raid60" -- \
	"$R" create --level raid60 --groups 2 $(p few1 few2 few3 few4 few5 few6 few7 few8 few9)
refuses "create raid50 with --groups abc" "abc" -- \
	"$R" create --level raid50 --groups abc $(p few1 few2 few3 few4 few5 few6)
for c in 3000 2M 5000 abc 2K 1536K 64Q; do
	refuses "create with --chunk $c" "$c" -- "$R" create --level raid5 --chunk "$c" $(p few1 few2 few3)
done
refuses "create with an unknown level" "raid7" -- "$R" create --level raid7 $(p few1 few2 few3)
refuses "create without --level" "level" -- "$R" create $(p few1 few2 few3)
refuses "create with an unknown option" "--bogus" -- "$R" create --bogus --level raid1 $(p few1 few2)
refuses "create with a member that does not exist" "$T/nonexistent" -- \
	"$R" create --level raid5 $(p few1 nonexistent few3)
echo data >"$T/plainfile"
refuses "create with a member that is a regular file" "$T/plainfile" -- \
	"$R" create --level raid5 $(p few1 plainfile few3)
# the refusals above must not have written anything into the members
left=$(cd "$T" && ls -A few1 few2 few3 dup1 dup2 | grep -v ':$' | grep -v '^$' | head -n 3)
[ -z "$left" ] || bad "refused creates left files behind in their members: $left"

# a member filesystem without user xattrs: ramfs has none
mkd noxattr noxa2 noxa3
if mount -t ramfs raidfs-noxattr "$T/noxattr" 2>/dev/null; then
	MOUNTS+=("$T/noxattr")
	if setfattr -n user.probe -v 1 "$T/noxattr" 2>/dev/null; then
		log "SKIP xattr refusal: ramfs accepts user xattrs on this kernel"
	else
		refuses "create with a member without user xattr support (ramfs)" "$T/noxattr" -- \
			"$R" create --level raid5 $(p noxa2 noxattr noxa3)
	fi
	umount "$T/noxattr" 2>/dev/null
else
	log "SKIP xattr refusal: cannot mount ramfs here (not root?)"
fi

# ---------------------------------------------------------------------------
log "--- mount"
# ---------------------------------------------------------------------------
mkd a1 a2 a3 b1 b2 b3 mnt
"$R" create --level raid5 --name alpha $(p a1 a2 a3) >/dev/null 2>&1 || bad "create alpha failed"
"$R" create --level raid5 --name beta $(p b1 b2 b3) >/dev/null 2>&1 || bad "create beta failed"
MOUNTS+=("$T/mnt")
refuses "mount of members of two different arrays" "$T/b3" -- \
	"$R" mount -o "log=$T/daemon.log" "$(colon a1 a2 b3)" "$T/mnt"
not_mounted "$T/mnt" "mixed arrays"
refuses "mount of members of two different arrays (foreign first)" "$T/b1" -- \
	"$R" mount -o "log=$T/daemon.log" "$(colon b1 a2 a3)" "$T/mnt"
not_mounted "$T/mnt" "mixed arrays"

mkd c1 c2 c3 c4
"$R" create --level raid5 --name gamma $(p c1 c2 c3 c4) >/dev/null 2>&1 || bad "create gamma failed"
mv "$T/c3" "$T/c3.away"
mv "$T/c4" "$T/c4.away"
refuses "mount of raid5 x4 with 2 members missing" "$T/c3" "$T/c4" -- \
	"$R" mount -o "log=$T/daemon.log" "$(colon c1 c2 c3 c4)" "$T/mnt"
not_mounted "$T/mnt" "too many missing"
refuses "mount of raid5 x4 given only 2 of its members" "$T/c3" "$T/c4" -- \
	"$R" mount -o "log=$T/daemon.log" "$(colon c1 c2)" "$T/mnt"
not_mounted "$T/mnt" "too many missing"
mv "$T/c3.away" "$T/c3"
mv "$T/c4.away" "$T/c4"
# the refused mounts must not have damaged anything
if rfs_mount "$(colon c1 c2 c3 c4)" "$T/mnt"; then
	status_of "$T/mnt"
	rc=$SRC
	[ "$rc" -eq 0 ] || bad "after refused mounts, the complete array is not optimal (status exit $rc): $(head -n 20 "$T/out.txt")"
	# the same members a second time while mounted: two daemons would
	# write them at once
	mkdir -p "$T/mnt2"
	refuses "a second mount of members in use" "$T/c1" "in use by another running raidfs" -- \
		"$R" mount -o "log=$T/daemon.log" "$(colon c1 c2 c3 c4)" "$T/mnt2"
	not_mounted "$T/mnt2" "second mount"
	refuses "an offline check of members in use" "$T/c1" "in use by another running raidfs" -- \
		"$R" check "$(colon c1 c2 c3 c4)"
	rfs_unmount "$T/mnt" || bad "unmount gamma failed"
	refuses "a mount with a member given twice" "$T/c2" "given twice" -- \
		"$R" mount -o "log=$T/daemon.log" "$(colon c1 c2 c2 c3 c4)" "$T/mnt2"
	not_mounted "$T/mnt2" "member given twice"
else
	bad "after refused mounts, the complete array gamma does not mount"
fi
# one member missing: degraded, but mounts; status says so and names it
rm -rf "$T/c2"
if rfs_mount "$(colon c1 c2 c3 c4)" "$T/mnt"; then
	status_of "$T/mnt"
	rc=$SRC
	[ "$rc" -eq 1 ] || bad "raid5 x4 with member c2 missing: status exit $rc, expected 1 (degraded)"
	grep -qF "$T/c2" "$T/out.txt" || bad "status of a degraded array does not name the missing member '$T/c2'"
	# a replacement or spare inside the array's own mount, or inside
	# another member (which would take it along when its disk dies)
	mkdir -p "$T/mnt/inside" "$T/c3/sub"
	refuses "replace onto a directory inside the array's own mount" "$T/mnt/inside" "own mount point" -- \
		"$R" replace "$T/mnt" 1 "$T/mnt/inside"
	refuses "replace onto a directory inside another member" "$T/c3/sub" "inside member" "$T/c3'" -- \
		"$R" replace "$T/mnt" 1 "$T/c3/sub"
	refuses "a spare inside another member" "$T/c3/sub" "inside member" -- "$R" add "$T/mnt" "$T/c3/sub"
	rmdir "$T/c3/sub" "$T/mnt/inside"
	rfs_unmount "$T/mnt" || bad "unmount of degraded gamma failed"
	ok "degraded mount with one missing member"
else
	bad "raid5 x4 with one member missing does not mount (it must mount degraded)"
fi
refuses "mount -o nodegraded with a member missing" "$T/c2" -- \
	"$R" mount -o "log=$T/daemon.log,nodegraded" "$(colon c1 c2 c3 c4)" "$T/mnt"
not_mounted "$T/mnt" "nodegraded"

mkd e1 e2
refuses "mount of directories that are no raidfs members" "$T/e1" -- \
	"$R" mount -o "log=$T/daemon.log" "$(colon e1 e2)" "$T/mnt"
not_mounted "$T/mnt" "no members"
refuses "mount on a mount point that does not exist" "$T/nomnt" -- \
	"$R" mount -o "log=$T/daemon.log" "$(colon a1 a2 a3)" "$T/nomnt"
refuses "mount with an unknown option" "bogus_opt" -- \
	"$R" mount -o "log=$T/daemon.log,bogus_opt" "$(colon a1 a2 a3)" "$T/mnt"
not_mounted "$T/mnt" "unknown option"

# ---------------------------------------------------------------------------
log "--- status and check of things that are not raidfs"
# ---------------------------------------------------------------------------
mkd plain
for args in "$T/plain" "--json $T/plain" "$T/does-not-exist"; do
	"$R" status $args >"$T/out.txt" 2>"$T/err.txt"
	rc=$?
	dir=${args#--json }
	if [ "$rc" -ne 2 ]; then
		bad "status $args: exit $rc, expected 2 (not a raidfs mount)"
	elif ! grep -qF "$dir" "$T/err.txt" "$T/out.txt"; then
		bad "status $args: exit 2 but the message does not name '$dir'"
	else
		ok "status $args: exit 2: $(cat "$T/err.txt" "$T/out.txt" | head -n1 | cut -c1-200)"
	fi
done
for args in "$T/plain" "$T/does-not-exist" "$(colon plain e1)"; do
	"$R" check "$args" >"$T/out.txt" 2>"$T/err.txt"
	rc=$?
	first=${args%%:*}
	if [ "$rc" -ne 2 ]; then
		bad "check $args: exit $rc, expected 2 (could not run)"
	elif ! grep -qF "$first" "$T/err.txt" "$T/out.txt"; then
		bad "check $args: exit 2 but the message does not name '$first'"
	else
		ok "check $args: exit 2: $(cat "$T/err.txt" "$T/out.txt" | head -n1 | cut -c1-200)"
	fi
done

# ---------------------------------------------------------------------------
log "--- corrupt superblock"
# ---------------------------------------------------------------------------
mkd s1 s2 s3 ref
"$R" create --level raid5 --name sigma $(p s1 s2 s3) >/dev/null 2>&1 || bad "create sigma failed"
head -c 300000 /dev/urandom >"$T/ref/data"
if rfs_mount "$(colon s1 s2 s3)" "$T/mnt"; then
	cp "$T/ref/data" "$T/mnt/data" || bad "writing to sigma failed"
	rfs_unmount "$T/mnt" || bad "unmount sigma failed"
else
	bad "mount sigma failed"
fi
sb=$T/s1/.raidfs/superblock
if [ ! -f "$sb" ]; then
	bad "no superblock at '$sb' (what does create write? $(ls -la "$T/s1/.raidfs" 2>&1 | tr '\n' ' '))"
else
	size=$(stat -c %s "$sb")
	printf 'CORRUPTCORRUPT' | dd of="$sb" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
	"$R" check "$(colon s1 s2 s3)" >"$T/out.txt" 2>"$T/err.txt"
	rc=$?
	if [ "$rc" -ge 128 ]; then
		bad "check with a corrupt superblock on s1: killed by signal $((rc - 128))"
	elif [ "$rc" -eq 0 ]; then
		bad "check with a corrupt superblock on '$T/s1' reported clean (exit 0)"
	elif ! grep -qF "$T/s1" "$T/out.txt" "$T/err.txt"; then
		bad "check with a corrupt superblock: exit $rc but the output does not name '$T/s1'"
	else
		ok "check reports the corrupt superblock (exit $rc): $(grep -hF "$T/s1" "$T/out.txt" "$T/err.txt" | head -n1 | cut -c1-200)"
	fi
	timeout 60 "$R" mount -o "log=$T/daemon.log" "$(colon s1 s2 s3)" "$T/mnt" >"$T/out.txt" 2>"$T/err.txt"
	rc=$?
	if [ "$rc" -ge 124 ]; then
		bad "mount with a corrupt superblock on s1: exit $rc (crash or hang)"
	elif [ "$rc" -ne 0 ]; then
		# refusing is acceptable if it says which member
		grep -qF "$T/s1" "$T/err.txt" && ok "mount refuses the corrupt superblock: $(head -n1 "$T/err.txt")" ||
			bad "mount with a corrupt superblock on s1 refused without naming '$T/s1': $(head -c 300 "$T/err.txt")"
		not_mounted "$T/mnt" "corrupt superblock"
	else
		# mounted: s1 must count as missing (degraded), the data intact
		status_of "$T/mnt"
		rc=$SRC
		[ "$rc" -eq 1 ] || bad "mounted with a corrupt superblock on s1: status exit $rc, expected 1 (degraded)"
		grep -qF "$T/s1" "$T/out.txt" || bad "status with a corrupt superblock does not name '$T/s1'"
		cmp -s "$T/ref/data" "$T/mnt/data" || bad "data read wrong with a corrupt superblock on s1"
		grep -qiF "superblock" "$T/daemon.log" 2>/dev/null ||
			bad "daemon log says nothing about the corrupt superblock of '$T/s1'"
		rfs_unmount "$T/mnt" || bad "unmount with a corrupt superblock failed"
		ok "mount with a corrupt superblock: degraded, data intact"
	fi
	# every superblock destroyed: refused, names a member, no crash
	for m in s1 s2 s3; do printf 'garbage' >"$T/$m/.raidfs/superblock"; done
	refuses "mount with every superblock corrupt" "$T/s" -- \
		"$R" mount -o "log=$T/daemon.log" "$(colon s1 s2 s3)" "$T/mnt"
	not_mounted "$T/mnt" "all superblocks corrupt"
	"$R" check "$(colon s1 s2 s3)" >"$T/out.txt" 2>"$T/err.txt"
	rc=$?
	[ "$rc" -eq 2 ] || bad "check with every superblock corrupt: exit $rc, expected 2 (could not run)"
	: >"$T/s2/.raidfs/superblock"
	refuses "mount with empty and corrupt superblocks" "$T/s" -- \
		"$R" mount -o "log=$T/daemon.log" "$(colon s1 s2 s3)" "$T/mnt"
	not_mounted "$T/mnt" "empty superblock"
fi

# ---------------------------------------------------------------------------
log "--- corrupt per-file metadata (user.raidfs.meta)"
# ---------------------------------------------------------------------------
mkd f1 f2 f3
"$R" create --level raid5 --name phi $(p f1 f2 f3) >/dev/null 2>&1 || bad "create phi failed"
head -c 300000 /dev/urandom >"$T/ref/victim"
head -c 100000 /dev/urandom >"$T/ref/victim2"
head -c 70000 /dev/urandom >"$T/ref/victim3"
head -c 200000 /dev/urandom >"$T/ref/fine"
if rfs_mount "$(colon f1 f2 f3)" "$T/mnt"; then
	for f in victim victim2 victim3 fine; do cp "$T/ref/$f" "$T/mnt/$f" || bad "writing $f failed"; done
	rfs_unmount "$T/mnt" || bad "unmount phi failed"
	# flip a byte in the middle of one shard's record
	flip() {
		"$PY" - "$1" <<'EOF' || bad "no user.raidfs.meta on shard '$1' (is the metadata stored elsewhere?)"
import os, sys
v = bytearray(os.getxattr(sys.argv[1], "user.raidfs.meta"))
v[len(v) // 2] ^= 0x5a
os.setxattr(sys.argv[1], "user.raidfs.meta", bytes(v))
EOF
	}
	flip "$T/f2/victim"
	for m in f1 f2 f3; do flip "$T/$m/victim2"; done
	setfattr -n user.raidfs.meta -v 0x616263 "$T/f3/victim3"   # 3 bytes: wrong length
	"$R" check "$(colon f1 f2 f3)" >"$T/out.txt" 2>"$T/err.txt"
	rc=$?
	if [ "$rc" -ge 128 ]; then
		bad "check with corrupt metadata: killed by signal $((rc - 128))"
	elif [ "$rc" -ne 1 ]; then
		bad "check with corrupt metadata on 3 files: exit $rc, expected 1 (inconsistent); output: $(head -c 400 "$T/out.txt" "$T/err.txt")"
	fi
	for f in victim victim2 victim3; do
		grep -q "$f\b" "$T/out.txt" "$T/err.txt" || bad "check does not name the file '$f' whose metadata is corrupt"
	done
	[ "$rc" -eq 1 ] && ok "check reports corrupt metadata: $(head -n 3 "$T/out.txt" | tr '\n' '|' | cut -c1-300)"
	if rfs_mount "$(colon f1 f2 f3)" "$T/mnt"; then
		for f in victim victim3 fine; do
			if cmp -s "$T/ref/$f" "$T/mnt/$f"; then
				ok "$f reads correctly with one shard's metadata corrupt"
			else
				bad "$f: content wrong or unreadable through the mount with one shard's metadata corrupt (raid5 can still serve it): $(cmp "$T/ref/$f" "$T/mnt/$f" 2>&1 | head -n1)"
			fi
		done
		# every copy of victim2's metadata is bad: an error, never wrong data
		if cat "$T/mnt/victim2" >"$T/victim2.read" 2>"$T/err.txt"; then
			cmp -s "$T/ref/victim2" "$T/victim2.read" ||
				bad "victim2 (all metadata corrupt) read returned WRONG data instead of an error"
		else
			ok "victim2 (all metadata corrupt) read fails: $(head -n1 "$T/err.txt")"
		fi
		mountpoint -q "$T/mnt" && cmp -s "$T/ref/fine" "$T/mnt/fine" ||
			bad "daemon not serving after reading files with corrupt metadata (crash?)"
		rfs_unmount "$T/mnt" || bad "unmount phi after corrupt reads failed"
	else
		bad "mount of phi with corrupt per-file metadata failed: $(tail -n 3 "$T/daemon.log" 2>/dev/null)"
	fi
else
	bad "mount phi failed"
fi

# ---------------------------------------------------------------------------
log "--- fstab form"
# ---------------------------------------------------------------------------
mkd g1 g2 gm
"$R" create --level raid1 --name fstab $(p g1 g2) >/dev/null 2>&1 || bad "create raid1 for fstab failed"
MOUNTS+=("$T/gm")
fsopts="nofail,noauto,_netdev,x-systemd.device-timeout=10,defaults,rw,nosuid,nodev,noexec"
timeout 60 "$R" "$(colon g1 g2)" "$T/gm" -o "$fsopts,log=$T/daemon.log" >"$T/out.txt" 2>"$T/err.txt"
rc=$?
if [ "$rc" -ne 0 ] || ! mountpoint -q "$T/gm"; then
	bad "fstab form 'raidfs DIR:DIR MNT -o $fsopts' failed (exit $rc): $(head -c 300 "$T/err.txt")"
else
	echo hello >"$T/gm/f" && [ "$(cat "$T/gm/f")" = hello ] || bad "fstab-form mount does not serve files"
	rfs_unmount "$T/gm" || bad "unmount of the fstab-form mount failed"
	ok "fstab form with $fsopts"
fi
# through mount(8) and mount.fuse3, as an fstab line would: mount(8) runs
# helpers with a fixed PATH, so use the 'fuse' type with PROGRAM#SOURCE,
# which mount.fuse3 turns into 'PROGRAM SOURCE MNT -o OPTIONS'
if command -v mount.fuse3 >/dev/null 2>&1 || [ -x /sbin/mount.fuse3 ]; then
	timeout 60 mount -t fuse -o "$fsopts,log=$T/daemon.log" "$RAIDFS#$(colon g1 g2)" "$T/gm" \
		>"$T/out.txt" 2>"$T/err.txt"
	rc=$?
	if [ "$rc" -ne 0 ] || ! mountpoint -q "$T/gm"; then
		bad "mount -t fuse -o $fsopts 'raidfs#DIR:DIR' failed (exit $rc): $(head -c 300 "$T/err.txt")"
	else
		[ "$(cat "$T/gm/f" 2>/dev/null)" = hello ] || bad "mount(8) mount: the file written before is not there"
		rfs_unmount "$T/gm" || bad "unmount of the mount(8) mount failed"
		ok "mount(8) -t fuse (mount.fuse3) with $fsopts"
	fi
else
	log "SKIP mount(8) form: mount.fuse3 is missing"
fi

if [ "$FAILS" -ne 0 ]; then
	fail "$FAILS problem(s), see above"
fi
log "all passed"
exit 0
