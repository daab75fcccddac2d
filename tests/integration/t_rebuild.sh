#!/bin/bash
# t_rebuild - replace failed members while a workload runs: for every
# redundant level, fail members up to the tolerance, 'raidfs replace' each
# onto an empty directory during the workload; afterwards fail a
# *different* set of members up to the tolerance: the tree must still be
# byte-identical (the rebuilt members hold the right bytes); after
# unmount 'raidfs check' is clean.  raid5 also checks the event program's
# sequence and the status progress output.  Last, files the walk has
# listed are replaced by symlinks, directories and FIFOs before they are
# rebuilt: the rebuild must go on; and the verify pass must look again at
# exactly the files changed behind the first pass; and a directory renamed
# again and again during the rebuild must not keep it from ending.
#
# Tiers: quick - raid5 only; long - every level.
. "$(dirname "$0")/lib.sh"
need_fuse

OPS=${OPS:-2500}
# level width groups "victims" "second victims"
CONFIGS=(
	"raid1 3 1 0,2 1"
	"raid5 4 1 1 3"
	"raid6 5 1 0,3 1,2"
	"raid10 4 2 1,2 0,3"
	"raid50 6 2 0,4 1,5"
	"raid60 8 2 1,2,4,7 0,3,5,6"
)
long_tier || CONFIGS=("raid5 4 1 1 3")	# quick tier: raid5 (it also checks the events and the status during the rebuild)
cat > "$T/event.sh" <<'EV'
#!/bin/sh
echo "$1 $3" >> "$(dirname "$0")/events.txt"
EV
chmod +x "$T/event.sh"


n=0
for cfg in "${CONFIGS[@]}"; do
	read -r level width groups victims second <<<"$cfg"
	[ -z "${ONLY:-}" ] || [[ $cfg =~ $ONLY ]] || continue
	n=$((n + 1))
	t0=$SECONDS
	C=$T/c$n
	mkdir -p "$C/ref"
	mem=$(make_members "$width" "c$n/d")
	mnt=$C/mnt
	gopt=()
	case $level in raid50|raid60) gopt=(--groups "$groups") ;; esac
	what="$level width $width"
	evopt=()
	[ "$level" = raid5 ] && evopt=(-o "event_program=$T/event.sh")
	expect_rc 0 "$RAIDFS" create --level "$level" --chunk 4K "${gopt[@]}" --name "r$n" $mem
	rfs_mount "$(join_members $mem)" "$mnt" "${evopt[@]}" || fail "$what: mount"
	workload run --mnt "$mnt" --ref "$C/ref" --seed $((SEED + n)) --ops 150 --chunk 4096 \
		--max-size 300000 >"$C/w0.out" 2>&1 || { cat "$C/w0.out" >&2; fail "$what: first workload"; }
	# slow enough that the workload's renames, links and writes land
	# before, inside and behind the rebuild's position
	"$RAIDFS" rebuild "$mnt" --min-rate 2 --max-rate 4 >/dev/null || fail "$what: rebuild rates"
	workload run --mnt "$mnt" --ref "$C/ref" --seed $((SEED + 100 + n)) --ops "$OPS" --chunk 4096 \
		--max-size 300000 --name-prefix w --log "$C/w1.log" >"$C/w1.out" 2>&1 &
	wpid=$!
	newmem=$mem
	for v in ${victims//,/ }; do
		"$RAIDFS" fail "$mnt" "$v" >/dev/null || fail "$what: fail $v"
		mkdir -p "$C/new$v"
		expect_rc 0 "$RAIDFS" replace "$mnt" "$v" "$C/new$v"
		[ "$level" = raid5 ] && { "$RAIDFS" status "$mnt" > "$C/status-during.txt"; }
		wait_member "$mnt" "$v" online || fail "$what: member $v not online after its rebuild ($("$RAIDFS" status "$mnt"))"
		newmem=$(echo " $newmem " | sed "s| $T/c$n/d$((v + 1)) | $C/new$v |")
	done
	wait $wpid || { cat "$C/w1.out" >&2; fail "$what: the workload saw an error during the rebuilds"; }
	expect_rc 0 "$RAIDFS" status "$mnt"
	for v in ${second//,/ }; do
		"$RAIDFS" fail "$mnt" "$v" >/dev/null || fail "$what: second fail $v"
	done
	workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 ||
		{ cat "$C/cmp.out" >&2; fail "$what: tree differs with members {$second} failed after rebuilding {$victims}"; }
	rfs_unmount_wait "$mnt" || fail "$what: unmount"
	# the failed second set is recorded; check reports only that
	expect_rc 1 "$RAIDFS" check "$(join_members $newmem)"
	grep -q "redundancy does not match\|no valid metadata\|shard missing" "$OUT" &&
		fail "$what: check found damage: $(cat "$OUT")"
	if [ "$level" = raid5 ]; then
		grep -q "^rebuild: member $victims \[" "$C/status-during.txt" ||
			grep -q "^rebuild: member $victims rebuilt" "$C/status-during.txt" ||
			fail "$what: status during the rebuild shows no progress line: $(cat "$C/status-during.txt")"
		# (raid5 with a member gone has no redundancy left)
		want="Fail $victims
DegradedArray $victims
NoRedundancy 
RebuildStarted $victims
RebuildFinished $victims"
		got=$(grep -v "^Rebuild[0-9]" "$T/events.txt" | head -n 5)
		[ "$got" = "$want" ] || fail "$what: events were
$got
expected
$want"
	fi
	log "ok: $what: rebuilt {$victims} under load, then survived losing {$second} ($((SECONDS - t0))s)"
	rm -rf "$C"
done

# files the walk has listed (and queued for the file worker) replaced by
# symlinks, directories and FIFOs before they are rebuilt: the rebuild
# goes on (it failed with ELOOP before), and the new member matches
# sixty NAME SIZE: in $C=$T/NAME a raid5 of 4 members mounted on $mnt,
# files f10 .. f69 of SIZE bytes (and their copies in $C/ref), member 2
# failed and being replaced onto $C/new2 at 1 MB/s; $l0: the daemon log's
# lines before (the scenarios share it)
sixty() {
	C=$T/$1
	mkdir -p "$C/ref"
	local mem
	mem=$(make_members 4 "$1/d")
	mnt=$C/mnt
	expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name "$1" $mem
	l0=$(cat "$T/daemon.log" 2>/dev/null | wc -l)
	rfs_mount "$(join_members $mem)" "$mnt" || fail "$1: mount"
	for i in $(seq 10 69); do head -c "$2" /dev/urandom >"$C/ref/f$i"; cp "$C/ref/f$i" "$mnt/f$i"; done
	expect_rc 0 "$RAIDFS" fail "$mnt" 2
	mkdir "$C/new2"
	"$RAIDFS" rebuild "$mnt" --min-rate 1 --max-rate 1 >/dev/null
	expect_rc 0 "$RAIDFS" replace "$mnt" 2 "$C/new2"
}

sixty kinds 120000
sleep 0.3
for i in $(seq 20 69); do
	case $((i % 3)) in
	0) ln -s "target$i" "$mnt/tmp$i" && mv -T "$mnt/tmp$i" "$mnt/f$i"
	   rm "$C/ref/f$i"; ln -s "target$i" "$C/ref/f$i" ;;
	1) # (rename cannot put a directory over a file)
	   rm "$mnt/f$i" && mkdir "$mnt/f$i"
	   rm "$C/ref/f$i"; mkdir "$C/ref/f$i" ;;
	2) mkfifo "$mnt/tmp$i" && mv -T "$mnt/tmp$i" "$mnt/f$i"
	   rm "$C/ref/f$i"; mkfifo "$C/ref/f$i" ;;
	esac
done
"$RAIDFS" rebuild "$mnt" --max-rate 0 >/dev/null
wait_member "$mnt" 2 online "$C/new2" ||
	fail "kinds: the rebuild did not finish: $("$RAIDFS" status "$mnt"; grep -a "onto member 2 failed" "$T/daemon.log" | tail -n 3)"
grep -q "onto member 2 failed" "$T/daemon.log" && fail "kinds: a file failed: $(grep -a "onto member 2 failed" "$T/daemon.log" | tail -n 3)"
expect_rc 0 "$RAIDFS" fail "$mnt" 0
workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 || { cat "$C/cmp.out" >&2; fail "kinds: tree differs"; }
rfs_unmount_wait "$mnt" || fail "kinds: unmount"
log "ok: files replaced by other kinds of entries under the walk: rebuilt, tree identical"
# the verify pass looks again at exactly the files changed after the
# first pass rebuilt them: 10 of 60 files rewritten through the mount
# once the walk is past them (a rate-limited rebuild); the daemon must
# report the other 50 as unchanged (60: changes missed; fewer: files
# rebuilt twice for nothing), and the new member must hold the new bytes
sixty verify 300000
# (paused, so that the first pass is still on when the writes are done)
past=$(pause_rebuild_at "$mnt" '^f[3-5][0-9]$') ||
	fail "verify: the first pass was never seen between f30 and f59: $("$RAIDFS" status "$mnt")"
for i in $(seq 10 19); do
	head -c 5000 /dev/urandom >"$C/part"
	dd if="$C/part" of="$mnt/f$i" bs=5000 oflag=seek_bytes seek=$((i * 1000)) conv=notrunc status=none
	dd if="$C/part" of="$C/ref/f$i" bs=5000 oflag=seek_bytes seek=$((i * 1000)) conv=notrunc status=none
done
tail -n +$((l0 + 1)) "$T/daemon.log" | grep -aq "rebuild of member 2: the verify pass found" &&
	fail "verify: the verify pass began while the rebuild was paused"
"$RAIDFS" rebuild "$mnt" --max-rate 0 >/dev/null
expect_rc 0 "$RAIDFS" rebuild "$mnt" resume
wait_member "$mnt" 2 online "$C/new2" || fail "verify: the rebuild did not finish: $("$RAIDFS" status "$mnt")"
line=$(tail -n +$((l0 + 1)) "$T/daemon.log" | grep -a "rebuild of member 2: the verify pass found")
[[ $line == *"found 50 files unchanged"* ]] ||
	fail "verify: 10 of 60 files changed after the first pass (which was at $past), but the daemon said: $line"
expect_rc 0 "$RAIDFS" fail "$mnt" 0
workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 ||
	{ cat "$C/cmp.out" >&2; fail "verify: tree differs with member 0 failed after the rebuild"; }
rfs_unmount_wait "$mnt" || fail "verify: unmount"
log "ok: the verify pass looked again at the 10 files changed behind the first pass, and only at them"
# A directory renamed back and forth every 0.3 s during a rate-limited
# rebuild (20 MB/s): every rename queues the whole directory to be looked
# at again; files rebuilt in full and unchanged since must only be looked
# at, or the queue never empties and the rebuild never ends (it did not,
# for as long as the renames went on).  It must end within 90 s while the
# renames go on, and the tree must be right without another member.
C=$T/renames
mkdir -p "$C/ref/a"
mem=$(make_members 4 "renames/d")
mnt=$C/mnt
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 64K --name renames $mem
rfs_mount "$(join_members $mem)" "$mnt" || fail "renames: mount"
mkdir "$mnt/a"
for i in $(seq 1 24); do head -c 1048576 /dev/urandom >"$C/ref/a/f$i"; cp "$C/ref/a/f$i" "$mnt/a/f$i"; done
expect_rc 0 "$RAIDFS" fail "$mnt" 1
mkdir "$C/new1"
"$RAIDFS" rebuild "$mnt" --min-rate 20 --max-rate 20 >/dev/null
( while :; do mv "$mnt/a" "$mnt/b"; sleep 0.15; mv "$mnt/b" "$mnt/a"; sleep 0.15; done ) &
renamer=$!
expect_rc 0 "$RAIDFS" replace "$mnt" 1 "$C/new1"
done_in=""
for k in $(seq 1 900); do
	"$RAIDFS" status --json "$mnt" | grep -q '"index": 1, [^}]*"state": "online"' && { done_in=$k; break; }
	sleep 0.1
done
kill $renamer; wait $renamer 2>/dev/null
[ -n "$done_in" ] || fail "renames: the rebuild did not end in 90 s of directory renames: $("$RAIDFS" status "$mnt" | grep -A1 '^rebuild')"
[ -d "$mnt/a" ] || mv "$mnt/b" "$mnt/a"
expect_rc 0 "$RAIDFS" fail "$mnt" 2
workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 ||
	{ cat "$C/cmp.out" >&2; fail "renames: tree differs with member 2 failed after the rebuild"; }
rfs_unmount_wait "$mnt" || fail "renames: unmount"
log "ok: a directory renamed every 0.3 s during the rebuild: it still ended (in $((done_in / 10)).$((done_in % 10)) s), tree right"
# More hard-linked files than a rebuild keeps open (1,024): every name of
# each must still be one file on the new member, and a write through the
# second name after the rebuild must survive losing another member (past
# the open ones, the second names got shards of their own before)
C=$T/links
mkdir -p "$C/ref/a" "$C/ref/b"
mem=$(make_members 4 "links/d")
mnt=$C/mnt
expect_rc 0 "$RAIDFS" create --level raid5 --chunk 4K --name links $mem
rfs_mount "$(join_members $mem)" "$mnt" || fail "links: mount"
mkdir "$mnt/a" "$mnt/b"
"$PY" - "$mnt" "$C/ref" <<'PYEOF' || fail "links: making 1100 hard-linked files"
import os, sys
for top in sys.argv[1:]:
    for i in range(1100):
        p = "%s/a/f%d" % (top, i)
        with open(p, "w") as f:
            f.write("file %d\n" % i)
        os.link(p, "%s/b/f%d" % (top, i))
PYEOF
expect_rc 0 "$RAIDFS" fail "$mnt" 3
mkdir "$C/new3"
expect_rc 0 "$RAIDFS" replace "$mnt" 3 "$C/new3"
wait_member "$mnt" 3 online || fail "links: member 3 not rebuilt: $("$RAIDFS" status "$mnt")"
n=$("$PY" - "$C/new3" <<'PYEOF'
import os, sys
print(sum(os.stat("%s/a/f%d" % (sys.argv[1], i)).st_ino != os.stat("%s/b/f%d" % (sys.argv[1], i)).st_ino
          for i in range(1100)))
PYEOF
)
[ "$n" = 0 ] || fail "links: $n of 1100 files have two files for their two names on the rebuilt member"
for i in 7 1099; do
	head -c 30000 /dev/urandom | tee -a "$C/ref/b/f$i" >>"$mnt/b/f$i"
done
expect_rc 0 "$RAIDFS" fail "$mnt" 0
workload compare "$mnt" "$C/ref" >"$C/cmp.out" 2>&1 ||
	{ cat "$C/cmp.out" >&2; fail "links: tree differs with member 0 failed after the rebuild"; }
rfs_unmount_wait "$mnt" || fail "links: unmount"
log "ok: 1100 hard-linked files: one file each on the rebuilt member, writes after it right"
log "all passed in ${SECONDS}s"
exit 0
