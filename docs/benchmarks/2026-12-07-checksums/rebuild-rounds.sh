#!/bin/bash
# The rebuild runs of this directory, as they ran (from the top of the
# tree, as root): checksums off and on, raid5 and raid6 over 4 members,
# four rounds, the order mirrored from one round to the next (rounds 1-2
# ran before quick-2, rounds 3-4 after it).  Each run
# appends its report to rebuild-LEVEL-ALG.md.
D=docs/benchmarks/2026-12-07-checksums
run() {	# ROUND LEVEL ALG
	echo "[$(date +%T)] round $1 $2 --checksum $3"
	contrib/bench/rebuild.sh --raidfs /tmp/raidfs.bench --size 2 --level $2 --members 4 \
		--create-opts "--checksum $3" --out $D/rebuild-$2-$3.md || echo "FAILED rc=$?"
}
run 1 raid5 none; run 1 raid5 crc32c; run 1 raid6 none; run 1 raid6 crc32c
run 2 raid6 crc32c; run 2 raid6 none; run 2 raid5 crc32c; run 2 raid5 none
run 3 raid5 crc32c; run 3 raid5 none; run 3 raid6 crc32c; run 3 raid6 none
run 4 raid6 none; run 4 raid6 crc32c; run 4 raid5 none; run 4 raid5 crc32c
