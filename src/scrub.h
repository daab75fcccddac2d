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

/* The event at the end of every scrub, finished or stopped, with its
 * counts (event_post_detail()): ScrubFinished result=finished|stopped
 * files=N bytes=N mismatches=N repaired=N errors=N missing=N restored=N
 * bad_files=N. */

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
	uint64_t bad_files;		/* files with a problem above (all, also
					 * those past the list) */
	int64_t ended;			/* when the last one ended (Unix time; 0:
					 * none known) */
	double elapsed, rate;		/* s, bytes/s */
	char current[256];		/* file being compared */
	char last_result[512];		/* how the last scrub ended */
};

/*
 * The files the last (or the running) scrub found a problem in, kept
 * until the next scrub starts: the first SCRUB_LIST_FILES of them, each
 * with up to SCRUB_LIST_STRIPES of its stripes (`count` says how many
 * there were).  kind: "mismatch" (stripes whose redundancy or checksum did
 * not match; `fixed` of them repaired), "missing" (shards missing on
 * online members; `fixed` put back), "unreadable" (stripes that could not
 * be read whole, or a file that could not be compared).
 */
#define SCRUB_LIST_FILES 100
#define SCRUB_LIST_STRIPES 8
struct scrub_bad_file {
	char path[256];
	const char *kind;
	uint64_t count, fixed;
	unsigned nstripes;
	uint64_t stripe[SCRUB_LIST_STRIPES];
};

/* Up to `max` entries of the list into out; returns how many. */
unsigned scrub_bad_list(struct scrub_bad_file *out, unsigned max);
/* Did the last scrub, finished or stopped, leave a problem it did not
 * repair (a mismatch, an unreadable file, a shard not put back)? */
bool scrub_unresolved(const struct scrub_info *si);

/*
 * The result lasts: when a scrub ends, its counts, its result and its file
 * list are written to SCRUB_FILE on every member in service (JSON,
 * replaced atomically; docs/format.md), and scrub_load() at mount takes
 * the newest of them, so that an unmount does not forget what the last
 * scrub found.  A read-only mount writes nothing.
 */
#define SCRUB_FILE ".raidfs/scrub"
#define SCRUB_TMP ".raidfs/scrub.tmp"
void scrub_load(struct array *a);

/* Start a scrub of a (0), or -errno with a message in err. */
int scrub_start(struct array *a, bool repair, char *err, size_t errlen);
/* Ask a running scrub to stop (it ends within a window of stripes). */
void scrub_request_stop(void);
/* Stop a running scrub and wait for its thread (at unmount). */
void scrub_stop(void);
void scrub_get(struct scrub_info *out);

#endif
