/*
 * monitor.h - the member monitor (layer 6: it calls the rebuild and the
 * cache; nothing below calls it).
 *
 * One thread, started by mount.c once the daemon is in the background and
 * stopped before the rebuild and the control socket go.  Each second it:
 *   - fails a member (online or being rebuilt, or the replacement of a
 *     member replaced in place) whose root vanished, whose superblock is
 *     gone or foreign, or whose filesystem went read-only;
 *   - takes a spare for a faulty member when no rebuild runs;
 *   - resumes a rebuild that stopped because too many members were gone,
 *     or starts the one queued behind it;
 *   - lets an offline mount (preserved cache) come up when it can
 *     (cache_monitor());
 *   - re-adds a member whose disk went away and is back at its path;
 *   - posts NearlyFull for a member in service whose filesystem passed
 *     -o space_warn (once, again after it had room);
 *   - every 100 ms, records the sizes of open files after a member failed
 *     (rfile_record_acked_all()), when a battery keeps the cache.
 * A look at a dying disk may hang: each member is looked at without the
 * array's lock first, then again under it.
 */
#ifndef RAIDFS_MONITOR_H
#define RAIDFS_MONITOR_H

struct array;

/* 0, or -EAGAIN when the thread cannot be created. */
int monitor_start(struct array *a);
/* Stop and join the thread (no-op when it does not run). */
void monitor_stop(void);

#endif
