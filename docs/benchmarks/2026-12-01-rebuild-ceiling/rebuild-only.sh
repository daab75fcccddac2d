#!/bin/bash
# rebuild-only.sh RAIDFS LEVEL MEMBERS - one rebuild, nothing else: on a
# fresh tmpfs, create the array, write 2,048 files of 1 MiB, fail member
# 1, 'raidfs replace' it onto an empty directory with no rate limit, and
# print the daemon's own line ("... verified (2048 files, S s)") and the
# member's bytes.  Alternate two binaries in a loop to compare them:
#   for r in 1 2 3; do for b in old new; do ./rebuild-only.sh ./raidfs.$b raid6 4; done; done
# ../2026-12-01-readd/rebuild-cpu.sh does the same and also prints the
# daemon's CPU time; this is it (its default, "cold", mode).
exec "$(dirname "$0")/../2026-12-01-readd/rebuild-cpu.sh" "$1" "$2" "$3" cold
