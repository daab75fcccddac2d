#!/bin/bash
# t_cksum_flips.sh - many single-byte flips across many files, found by
# the offline check and repaired by a scrub (docs/checksums.md, item 4).
#
# For each configuration: an array created with `--checksum crc32c`,
# chunk 4K; twelve files of random sizes (128K..300K: at least 11 rows
# each, so more rows than flips) written through the mount and their
# sha1s recorded; unmounted.  Then `chunks.py
# random-flips` flips one byte in N chunks chosen at random over the
# files (at most one chunk per row, so every row can be rebuilt), data,
# parity and mirror copies alike.
#   - `raidfs check` exits 1 and reports exactly the flipped chunks: the
#     set of (file, member, stripe, group, chunk's shard offset) it names
#     equals the set of flips - every flip found, on the right member and
#     at the right place, and nothing else reported (no other line);
#   - mounted, `raidfs scrub --repair` ends, its log lines name the same
#     set of chunks, and the members' CKSUM counters (status --json
#     "cksum_errors") add up to at least N;
#   - unmounted, every shard of the files is byte for byte what it was
#     before the flips, and `raidfs check` is clean;
#   - mounted again, the files' sha1s are the ones recorded.
# (-o cksum_error_threshold=1000: the flips are spread over few members,
# and the threshold failing a member is not what is tested here.)
#
# Tiers: quick - raid6 over 5, 40 flips; long - raid5 over 4, raid6 over
# 5, raid1 over 3, raid10 over 4, raid50 over 6, raid60 over 8, 100 flips.
. "$(dirname "$0")/lib.sh"
need_fuse
need_python

NFLIPS=$(tier_pick 40 100)
CONFIGS=("raid6 5")
long_tier && CONFIGS=("raid5 4" "raid6 5" "raid1 3" "raid10 4" "raid50 6" "raid60 8")
OPTS=cksum_error_threshold=1000

# cksum_sum MNT: the members' cksum_errors added up
cksum_sum() {
	"$RAIDFS" status --json "$1" >"$C/st.json" || true	# (exit 1: degraded)
	"$PY" -c 'import json,sys; print(sum(m["cksum_errors"] for m in json.load(open(sys.argv[1]))["members"]))' "$C/st.json"
}

n=0
for cfg in "${CONFIGS[@]}"; do
	n=$((n + 1))
	read -r level width <<<"$cfg"
	C=$T/c$n
	mkdir -p "$C/ref"
	mem=$(make_members "$width" "c$n/d")
	members=$(join_members $mem)
	expect_rc 0 "$RAIDFS" create --level "$level" --chunk 4K --checksum crc32c --name flips $mem
	rfs_mount "$members" "$C/mnt" -o "$OPTS" || fail "$level: mount"
	write_fileset "$C/mnt" "$C/ref" "$((SEED + n))" 2 6 131072 307200 || fail "$level: writing the files"
	(cd "$C/mnt" && find . -type f | sort | xargs sha1sum) >"$C/sha1" || fail "$level: sha1 of the files"
	(cd "$C/ref" && sha1sum -c --quiet "$C/sha1") || fail "$level: the files do not read back as written"
	rfs_unmount_wait "$C/mnt" || fail "$level: unmount"
	expect_rc 0 "$RAIDFS" check "$members"
	files=$(cd "$C/ref" && find . -type f | sed 's|^\./||' | sort)
	# the shards before the flips
	for d in $mem; do
		mkdir -p "$C/before/$(basename "$d")"
		(cd "$d" && cp -a --parents $files "$C/before/$(basename "$d")/")
	done

	"$PY" -S "$TOOLS/chunks.py" random-flips "$members" --count "$NFLIPS" --seed "$((SEED + n))" -- $files \
		>"$C/flips.json" || fail "$level: random-flips"
	# what check must say: one line per flip
	"$PY" - "$C/flips.json" >"$C/want" <<'PY' || fail "$level: reading the flips"
import json, sys
for f in json.load(open(sys.argv[1])):
    print("%s %d %d %d %d" % (f["path"], f["member"], f["stripe"], f["group"], f["shard_offset"] // 4096 * 4096))
PY
	sort -u -o "$C/want" "$C/want"
	[ "$(wc -l <"$C/want")" = "$NFLIPS" ] || fail "$level: $(wc -l <"$C/want") distinct flips of $NFLIPS"

	expect_rc 1 "$RAIDFS" check "$members"
	cp "$OUT" "$C/check1.out"
	# every line of check's output must be a checksum finding
	"$PY" - "$C/check1.out" >"$C/got" <<'PY' || fail "$level: check reported something else than the flips"
import re, sys
pat = re.compile(r"^raidfs check: file '([^']*)': stripe (\d+) group (\d+): the chunk on member (\d+) '[^']*' "
                 r"\(shard offset (\d+)\) does not match its checksum")
bad = 0
for line in open(sys.argv[1]):
    m = pat.match(line)
    if not m:
        if not re.match(r"^raidfs check: \d+ files?, .*: \d+ problems? found$", line):
            sys.stderr.write("not a flip: " + line)
            bad += 1
        continue
    print("%s %s %s %s %s" % (m.group(1), m.group(4), m.group(2), m.group(3), m.group(5)))
sys.exit(1 if bad else 0)
PY
	sort -o "$C/got" "$C/got"
	if ! cmp -s "$C/want" "$C/got"; then
		log "flips not found (<) or reported without a flip (>):"
		diff "$C/want" "$C/got" | grep '^[<>]' | head -n 20 >&2
		fail "$level: check's findings differ from the $NFLIPS flips (check output in $C/check1.out)"
	fi
	dup=$(uniq -d "$C/got" | wc -l)
	[ "$dup" = 0 ] || fail "$level: check named $dup flipped chunks more than once"
	log "$level: check named the $NFLIPS flipped chunks, on the right members and offsets, and nothing else"

	rfs_mount "$members" "$C/mnt" -o "$OPTS" || fail "$level: mount after the flips"
	log0=$(stat -c %s "$T/daemon.log")
	expect_rc 0 "$RAIDFS" scrub "$C/mnt" --repair
	scrub_wait "$C/mnt" || fail "$level: the scrub did not end"
	# the scrub's findings name the same chunks
	tail -c +$((log0 + 1)) "$T/daemon.log" | sed -n "s/.* scrub: file '\([^']*\)': stripe \([0-9]*\) (offset [0-9]*, group \([0-9]*\)): the chunk on member \([0-9]*\) '[^']*' (shard offset \([0-9]*\)) does not match its checksum.*/\1 \4 \2 \3 \5/p" |
		sort >"$C/scrubbed"
	if ! cmp -s "$C/want" "$C/scrubbed"; then
		log "flips the scrub did not name (<) or named without a flip (>):"
		diff "$C/want" "$C/scrubbed" | grep '^[<>]' | head -n 20 >&2
		fail "$level: the scrub's findings differ from the $NFLIPS flips"
	fi
	"$RAIDFS" status --json "$C/mnt" >"$C/st.json" || true
	sum=$(cksum_sum "$C/mnt")
	[ "$sum" -ge "$NFLIPS" ] || fail "$level: CKSUM counters add up to $sum after repairing $NFLIPS flips: $(cat "$C/st.json")"
	rfs_unmount_wait "$C/mnt" || fail "$level: unmount after the scrub"
	for d in $mem; do
		for f in $files; do
			cmp -s "$d/$f" "$C/before/$(basename "$d")/$f" ||
				fail "$level: the shard of '$f' on $d differs from before the flips after scrub --repair"
		done
	done
	"$RAIDFS" check "$members" >"$C/check2.out" 2>&1 ||
		{ head -n 20 "$C/check2.out" >&2; fail "$level: check not clean after scrub --repair"; }
	rfs_mount "$members" "$C/mnt" -o "$OPTS" || fail "$level: mount after the repair"
	(cd "$C/mnt" && sha1sum -c --quiet "$C/sha1") || fail "$level: sha1s changed"
	rfs_unmount_wait "$C/mnt" || fail "$level: last unmount"
	log "ok: $level over $width: $NFLIPS flips found by check, repaired by scrub (CKSUM sum $sum), shards and sha1s as before"
done
log "all configurations passed"
