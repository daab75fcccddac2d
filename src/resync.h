/*
 * resync.h - the dirty-file log's resync at mount (layer 6).
 *
 * array.c keeps the dirty-file log: before the first change to a regular
 * file its shard is hard-linked as .raidfs/dirty/<id> on every member in
 * service (array_mark_dirty()).  After an unclean stop, mount.c calls
 * resync_dirty() before anything is served: namespace operations half
 * done are completed first (nsintent_recover()), then each marked file
 * gets the cache's preserved writes replayed (cache_replay_file()) and its
 * redundancy recomputed from its data (stripe_resync()), or only the
 * replay when the cache of the last run closes the write hole itself.
 * The marks go once what it wrote is durable on the members.
 */
#ifndef RAIDFS_RESYNC_H
#define RAIDFS_RESYNC_H

#include <stdbool.h>
#include <stddef.h>

struct array;

/*
 * Resync every file in the dirty log: recompute redundancy from data and
 * the logical size from shard lengths, then clear the marks.  With absent
 * members this is refused (-EUCLEAN) unless force is set, because parity
 * that was being written cannot be trusted to rebuild (md refuses a dirty
 * degraded array the same way).  *count receives the number of files.
 * -EAGAIN when the members could not take what the cache of the last run
 * holds for some file (no room, say): the others are done, those stay in
 * the dirty log, and the caller keeps the preserved cache (offline) and
 * tries again later.
 */
int resync_dirty(struct array *a, bool force, int *count, char *err,
		       size_t errlen);

#endif
