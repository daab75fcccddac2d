#!/bin/bash
# cp (coreutils 9: copy_file_range) of a 512 MiB file inside the mount, then
# fallocate --punch-hole over all of the copy: raidfs raid5 of 4 members
# (this binary: NEW, the one before: BASE) against passthrough_ll built with
# HAVE_COPY_FILE_RANGE, every mount over one 4 GiB tmpfs, ROUNDS rounds.
#   sudo NEW=./raidfs BASE=/tmp/raidfs-base ROUNDS=3 docs/benchmarks/2026-12-07-localfs/run.sh
set -u
W=$(mktemp -d /tmp/raidfs-localfs-bench.XXXXXX); T=$W/fs; ROUNDS=${ROUNDS:-3}
gcc -O2 -DHAVE_COPY_FILE_RANGE -o "$W/passthrough_ll" /usr/share/doc/libfuse3-dev/examples/passthrough_ll.c \
	$(pkg-config --cflags --libs fuse3) -lpthread || exit 1
mkdir -p "$T" && mount -t tmpfs -o size=4g tmpfs "$T" || exit 1
trap 'for m in "$W"/mnt-*; do fusermount3 -uz "$m" 2>/dev/null; done; umount -l "$T"; rm -rf "$W"' EXIT
secs() { local s e; s=$(date +%s.%N); "$@"; e=$(date +%s.%N); echo "$e - $s" | bc; }
one() {
	local name=$1 m=$W/mnt-$1 bin c p
	rm -rf "${T:?}"/*; mkdir -p "$m"
	if [ "$name" = passthrough_ll ]; then
		mkdir "$T/pt"; "$W/passthrough_ll" -o source="$T/pt" "$m" & sleep 1
	else
		bin=$NEW; [ "$name" = base ] && bin=$BASE
		mkdir "$T/d1" "$T/d2" "$T/d3" "$T/d4"
		"$bin" create --level raid5 --name bench "$T"/d[1-4] >/dev/null && "$bin" mount "$T/d1:$T/d2:$T/d3:$T/d4" "$m" || exit 1
	fi
	head -c $((512 << 20)) /dev/urandom >"$m/src"; sync
	c=$(secs cp "$m/src" "$m/dst"); sync
	cmp -s "$m/src" "$m/dst" || echo "$name: the copy differs" >&2
	p=$(secs fallocate -p -o 0 -l $((512 << 20)) "$m/dst" 2>/dev/null)
	echo "$name cp_s=$c punch_s=$p"
	fusermount3 -u "$m"; sleep 0.5
}
for r in $(seq "$ROUNDS"); do for n in passthrough_ll new base; do one $n; done; done
