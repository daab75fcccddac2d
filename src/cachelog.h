/*
 * cachelog.h - the persistent log behind -o bbu=file:PATH (a flash-backed
 * cache module, emulated).  Format in docs/format.md ("Cache log").
 *
 * Every write-back write is appended as a record (file id, offset, bytes)
 * and fdatasynced before the write is acknowledged; a truncate of a file
 * with cached data is appended too.  The log is a ring: the tail is the
 * oldest record a dirty cache line may still need (the cache says which,
 * through the callbacks it registers: struct cachelog_ops), and
 * the header, rewritten before the head may overwrite it, says where the
 * tail is.  At mount the records from the tail on are replayed, in order,
 * into each file (the dirty-log resync calls cachelog_replay_file).
 *
 * Locking: the ring's lock (L.lock) and the sync lock (L.sync_lock) come
 * after the cache's lock, the tail's lock (tail_lock) before it; their
 * order with every other lock is in locks.h.  Appends are serialised,
 * fdatasync is shared by concurrent appenders (group commit).
 */
#ifndef RAIDFS_CACHELOG_H
#define RAIDFS_CACHELOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct array;
struct rfile;

/*
 * What the log needs to know from the cache above it, which it does not
 * call: the cache registers these at cachelog_open() (a lower layer tells
 * a higher one through callbacks).  Each is called with no log lock held.
 */
struct cachelog_ops {
	/* The oldest position (virtual offset, sequence) a dirty line or a
	 * truncate in flight may still need, or the head when none does:
	 * the tail may move up to it. */
	void (*tail)(void *arg, uint64_t *v, uint64_t *seq);
	/* The log is full: have old lines written out, and wait a while. */
	void (*wait)(void *arg);
	/* Does a dirty line still need a record of the log? */
	bool (*needed)(void *arg);
	/* The log failed (once, on its first error): write-back ends. */
	void (*failed)(void *arg);
	void *arg;
};

/* Open or create the log (ring of ring_bytes); reads the records a
 * previous daemon left for replay.  Refuses a log of another array.
 * ops (copied; NULL: none - the tail is the head, nothing waits). */
int cachelog_open(struct array *a, const char *path, uint64_t ring_bytes, const struct cachelog_ops *ops,
		  char *err, size_t errlen);
bool cachelog_replay_pending(void);
/* The log of the last run had guard slots (guard.h): its writes into
 * degraded stripes were guarded. */
bool cachelog_had_guards(void);
/* The log of the last run was found (not made new at this mount). */
bool cachelog_was_there(void);
/* Which log this is (made with it, kept in its header). */
uint64_t cachelog_id(void);
size_t cachelog_replay_records(void);
uint64_t cachelog_replay_bytes(void);
/* Replay the records of file rf into it, in order (stripe_write_locked,
 * stripe_truncate_replayed).  0 or -errno. */
int cachelog_replay_file(struct rfile *rf);
/* A record waiting to be replayed, as cachelog_replay_each() gives it. */
struct cachelog_record {
	bool truncate;			/* a truncate to off; else a write */
	uint64_t fid, off;
	uint32_t len;			/* bytes written at off */
};
/* Call fn for each record of file fid waiting to be replayed, in the
 * log's order, with its bytes (NULL for a truncate); stops at the first
 * non-zero return and returns it.  -EIO when a record's bytes cannot be
 * read. */
int cachelog_replay_each(uint64_t fid, int (*fn)(void *arg, const struct cachelog_record *r, const void *data),
			 void *arg);
/* Records of file fid waiting to be replayed? */
bool cachelog_holds(uint64_t fid);
/* Everything replayed: the log starts empty. */
void cachelog_replay_done(void);
/* The records are not replayed (the log was retired): the log starts
 * empty.  0 or -errno. */
int cachelog_drop(void);

/* Where the next record goes (virtual offset, sequence number). */
void cachelog_position(uint64_t *v, uint64_t *seq);
/* A record of a write or a truncate, in the log's order (replayed in
 * it: callers put the records of one file in the order the cache took
 * the changes), not yet durable; *end: where it ends.  0 or -errno. */
int cachelog_put_write(uint64_t fid, uint64_t off, const void *buf, size_t len, uint64_t *end);
/* (-EAGAIN when the log is full: room comes from destaging lines) */
int cachelog_try_put_truncate(uint64_t fid, uint64_t size, uint64_t *end);
/* A write record whose bytes are parts[0..n) one after the other (at
 * most CACHELOG_PIECES), from off. */
#define CACHELOG_PIECES 3
int cachelog_put_writev(uint64_t fid, uint64_t off, const struct iovec *parts, int n, uint64_t *end);
/* Durable: every record up to end (one fdatasync for the records of
 * several callers).  0 or -errno. */
int cachelog_commit(uint64_t end);
/* Records that may still be replayed exist. */
bool cachelog_live(void);
/* The cache is clean: no record is needed any more.  The members are
 * synced first (array_sync_members()); 0, or -EIO when they cannot be
 * and the records stay. */
int cachelog_reset(void);
/* Move the durable tail up to what the cache still needs. */
void cachelog_advance(void);
/* Clean unmount: empty, closed. */
void cachelog_close_clean(void);

/*
 * The log fails: the first error of a record's write, an fdatasync or
 * the header's write ends write-back (ops->failed); no record is
 * written or committed after it (they fail with that error).  Once no
 * dirty line needs a record, the log is retired: the members synced, they
 * note that no log holds anything for them, and a later mount drops its
 * records (array_cache_log_check()).  Until then cachelog_live() is true,
 * so that nothing is written around it; cachelog_reset() retires it.
 */
bool cachelog_failed(void);
bool cachelog_retired(void);
int cachelog_error(void);	/* the first error (negative), or 0 */
/* Fault injection (raidfs inject MNT log ...): write-error or
 * fsync-error with a member's rules (member.h), latency MS (before each
 * record write and fdatasync), or clear. */
int cachelog_inject(int argc, char **argv, char *err, size_t errlen);
void cachelog_inject_describe(char *buf, size_t len);

#endif
