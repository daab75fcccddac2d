#!/bin/bash
# first-touch.sh - what writing into a page the guest has not used lately
# costs on this machine, against a page freed a moment ago.  On a fresh
# tmpfs: 6 GiB filler (so the next pages are new ones), then 2,048 files of
# 512 KiB written in 64 KiB pwrites (a rebuild's shards) three times:
# into new pages, after deleting them (reused pages), and after writing
# and deleting 2 GiB more (the warm step of
# ../2026-12-01-readd/rebuild-cpu.sh).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cc -O2 -o /tmp/raidfs-first-touch "$here/first-touch.c"
W=$(mktemp -d /tmp/raidfs-ftouch.XXXXXX)
mount -t tmpfs -o size=12g tmpfs "$W"
trap 'umount -l "$W"; rmdir "$W"; rm -f /tmp/raidfs-first-touch' EXIT
dd if=/dev/zero of="$W/fill" bs=1M count=6144 status=none
for what in "new pages" "reused pages"; do
	mkdir "$W/d"; echo -n "$what: "; /tmp/raidfs-first-touch "$W/d" 2048 524288; rm -rf "$W/d"
done
dd if=/dev/zero of="$W/fill2" bs=1M count=2048 status=none
dd if=/dev/zero of="$W/warm" bs=1M count=2048 status=none; rm "$W/warm"
mkdir "$W/d"; echo -n "new pages after the warm step: "; /tmp/raidfs-first-touch "$W/d" 2048 524288
