/*
 * scrub.h - the online scrub: 'raidfs scrub MOUNTPOINT [--repair|stop]'.
 *
 * Every file of a mounted array is opened as a user's open would be (which
 * finds and rebuilds shards that lost their tail: file.c) and its stripes
 * are compared with their redundancy (parity, or the mirror copies), a
 * window at a time under the file's lock, so users go on reading and
 * writing meanwhile.  A mismatch is counted and logged with the file and
 * its offset; with --repair the redundancy is recomputed from the data,
 * as md's "repair" does (without checksums nothing tells which chunk of a
 * mismatched stripe is wrong; the data chunks are what users read).  Runs
 * on its own thread while the array is optimal and no rebuild runs; yields
 * to user I/O (at most SCRUB_BUSY_MB MB/s while users do I/O).
 */
#ifndef RAIDFS_SCRUB_H
#define RAIDFS_SCRUB_H

#include <stdbool.h>
#include <stdint.h>

#include "array.h"

#define SCRUB_BUSY_MB 50

struct scrub_info {
	bool active, repair;
	uint64_t files_done, files_total;
	uint64_t bytes;			/* file data compared */
	uint64_t mismatches;		/* stripe groups whose redundancy differed */
	uint64_t repaired;		/* of those, recomputed (--repair) */
	uint64_t errors;		/* files that could not be scrubbed */
	uint64_t missing;		/* shards missing on online members */
	uint64_t restored;		/* of those, put back (--repair) */
	double elapsed, rate;		/* s, bytes/s */
	char current[256];		/* file being compared */
	char last_result[512];		/* how the last scrub ended */
};

/* Start a scrub of a (0), or -errno with a message in err. */
int scrub_start(struct array *a, bool repair, char *err, size_t errlen);
/* Ask a running scrub to stop (it ends within a window of stripes). */
void scrub_request_stop(void);
/* Stop a running scrub and wait for its thread (at unmount). */
void scrub_stop(void);
void scrub_get(struct scrub_info *out);

#endif
