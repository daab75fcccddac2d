/*
 * file.h - open regular files (struct rfile) and their metadata.  The
 * chunk I/O on them is stripe.h's (stripe.c).
 *
 * An rfile is one regular file of the array while it is open: one shard
 * descriptor per member (-1 where the member is absent), its layout, and
 * its logical size.  Every open of the same file (also through another hard
 * link) shares one rfile, found by the inode number of its shard on the
 * primary member, so the daemon holds descriptors only for open files
 * (DESIGN "POSIX" lesson: the per-process fd limit is 20,000).
 *
 * The path of a write from the FUSE callback to the member pwrite()s is
 * drawn at the top of stripe.h.
 *
 * Locking: rf->rw is a per-file reader/writer lock: reads share it;
 * write-through writes and truncates hold it exclusively; write-back
 * writes and the destage of lines hold it shared (each line is its own,
 * and with bbu=file rf->log_order keeps the log's records in order), so
 * different files never contend and there is no array-wide lock on the
 * data path.  rf->size is read without the lock (atomic) by getattr.
 * The open-file table has its own mutex.  The order of all of them:
 * locks.h.
 *
 * Metadata: the size is updated in memory by writes and written to every
 * shard's metadata at fsync, truncate and last close.  Until then the file
 * sits in the dirty log, so a crash resyncs it from the shard lengths.
 */
#ifndef RAIDFS_FILE_H
#define RAIDFS_FILE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "array.h"
#include "layout.h"
#include "meta.h"

#define RF_DENSE_UNKNOWN UINT64_MAX
struct rfile {
	struct array *a;
	uint64_t key;			/* inode of the primary shard */
	char *path;			/* as first opened (a rename may have
					 * moved it since); NULL if unknown */
	uint64_t id;
	struct layout lay;
	bool sums;			/* checksummed (META_F_SUMS) */
	struct rowc *rowc;		/* the believed row records, cached
					 * (stripe.c; NULL until first needed) */
	bool recovering;		/* resynced after a crash: a row no record
					 * verifies is taken as found (stripe.c) */
	int sfd[MEMBER_SLOTS];		/* the checksum file of each shard (csum.h;
					 * -1: none, the other members' serve) */
	int fd[MEMBER_SLOTS];		/* -1: member absent, or the shard missing
					 * on it (scrub.c puts it back);
					 * [SHADOW]: see array.h */
	uint64_t size;			/* logical size (atomic access) */
	uint64_t acked;			/* how far acknowledged writes and truncates
					 * reach: below it every byte is on the
					 * members or kept by the cache's battery
					 * (size grows before a write is taken;
					 * atomic; rfile_note_acked()) */
	uint64_t size_recorded;		/* the size in the last metadata written */
	uint64_t reserved;		/* the shards are allocated on the members
					 * for this logical size (stripe.c
					 * reserve(); atomic) */
	uint64_t dense;			/* and below this one no shard has a hole
					 * (RF_DENSE_UNKNOWN until reserve() first
					 * asks the members; atomic) */
	uint64_t meta_version;
	bool meta_stale;		/* size changed since metadata written */
	bool meta_agree;		/* every shard holds the record of
					 * meta_version (as opened or last written) */
	uint32_t meta_flags;		/* of the record of meta_version (META_F_EXACT) */
	uint64_t damaged;		/* bit j: member j's shard lost data (shorter
					 * than the size needs): its chunks from stripe
					 * damaged_from[j] on are not read until rebuilt
					 * (stripe_repair_shard()), nor written */
	uint64_t damaged_from[LAYOUT_MAX_WIDTH];
	uint64_t wgen;			/* counts writes and truncates (atomic) */
	uint64_t sync_end;		/* one past the last stripe written since the
					 * last fsync that succeeded (0: none):
					 * stripe_fsync() judges damaged shards there
					 * (raised atomically under rf->rw shared,
					 * lowered under it exclusive) */
	bool marked;			/* in the dirty log */
	bool cmarked;			/* in it as changed through the cache log only */
	bool created;			/* made by rfile_create() in this run: the
					 * file's only dirty-log names are those
					 * marked and cmarked say */
	int refs;			/* protected by the table lock */
	uint32_t cache_dirty;		/* dirty cache lines (under the cache lock);
					 * while > 0 the cache holds a reference */
	uint64_t ra_next;		/* read-ahead: where a sequential reader
					 * goes next (cache.c) */
	uint32_t ra_seq;		/* sequential reads in a row */
	uint64_t ra_done;		/* read-ahead queued up to this stripe */
	uint64_t ra_claimed;		/* the furthest end of a read asked for:
					 * the read-ahead leaves what is below
					 * it to the readers */
	pthread_rwlock_t rw;
	pthread_mutex_t log_order;	/* a write-back write's cache update and its
					 * file-log record, together (cache.c) */
	int unlogged;			/* write-back writes in the cache whose log
					 * records are not durable yet (atomic) */
	struct rfile *next;		/* hash chain */
};

/* Open-file table. */
void rfile_table_init(void);
/* The path the open file `id` was opened by (see struct rfile). */
bool rfile_path_of(uint64_t id, char *buf, size_t len);
/*
 * The primary changes, or a replacement takes a member's slot: between
 * rfile_change_begin() and rfile_change_end() (which keys every open file
 * by its inode on the primary again), opens wait; a lookup or open that
 * began before is done again (rfile_epoch(), file.c).  The array lock may
 * be held.
 */
void rfile_change_begin(void);
void rfile_change_end(struct array *a);
/* The current epoch of keys and member directories: note it before
 * looking a file up by its inode on the primary (rfile_lookup_size()). */
uint64_t rfile_epoch(void);

/*
 * Open the file at relpath (relative to the member roots).  Shares an
 * existing rfile when the file is already open.  0 or -errno.
 */
int rfile_open(struct array *a, const char *relpath, struct rfile **out);

/* Create a new empty file (fails with -EEXIST if the primary shard
 * exists), owned by uid/gid when the daemon runs as root. */
int rfile_create(struct array *a, const char *relpath, mode_t mode,
		 uid_t uid, gid_t gid, struct rfile **out);

/* Is a file open without a shard descriptor for member j? */
bool rfile_any_without(uint32_t j);

/* Replace in place is complete: in every open file, the shadow's shard
 * becomes member j's (the old one is closed).  Namespace lock held. */
void rfile_shadow_commit(uint32_t j);

/* Drop a reference; the last one writes metadata, clears the dirty mark
 * and closes the shards.  Returns the first error seen (it is also
 * logged). */
int rfile_release(struct rfile *rf);
/* One more reference to an open file (the cache holds one while it has
 * dirty data for it). */
void rfile_hold(struct rfile *rf);

/* Logical size of an open file with the primary shard inode `key`, if the
 * file is open: 1 and *size set (and *marks: its dirty-log links, which
 * its shards carry besides the user's); 0 otherwise; -EAGAIN when the
 * primary changed since `epoch` (rfile_epoch(), taken before the stat
 * that gave the key): stat again. */
int rfile_lookup_size(uint64_t epoch, uint64_t key, uint64_t *size, int *marks);

/* Build a private rfile over given shard fds (for resync and check; the
 * fds are owned by the caller; rfile_private_end() lets go of the rest:
 * its checksum files, its locks, its cached records). */
void rfile_private_end(struct rfile *rf);
int rfile_private(struct array *a, const int *fds, const struct file_meta *m,
		  struct rfile *rf);

/* Read the best metadata record over the shards (highest version among
 * valid records with a consistent layout).  *nvalid counts valid records. */
int rfile_best_meta(const struct array *a, const int *fds,
		    struct file_meta *best, int *nvalid);

/* Metadata of a new, empty file with this id in array a's layout. */
void rfile_new_meta(const struct array *a, uint64_t id, struct file_meta *fm);
/* Are all the given shards empty (an interrupted create)? */
bool rfile_shards_empty(const struct array *a, const int *fds);

/* May j's chunk of stripe s be read (it holds valid data)?  Not when its
 * member is not online, nor from the stripe a damaged shard's loss starts
 * at (rf->damaged): it holds valid data below. */
static inline bool rfile_usable_at(const struct rfile *rf, uint32_t j, uint64_t s)
{
	return rf->fd[j] >= 0 && member_online(rf->a, j) && (!(rf->damaged >> j & 1) || s < rf->damaged_from[j]);
}

/* The online members' shards (fds) shorter than a file of `size` needs
 * (layout_shard_size()): those the other members of their redundancy set
 * can rebuild, returned, and those in sets with more short than the level
 * tolerates, in *beyond.  Meaningful under a record with META_F_EXACT. */
uint64_t rfile_short_shards(const struct array *a, const struct layout *l, const int *fds, uint64_t size,
			    uint64_t *beyond);

/* Does anybody have the file whose primary shard is inode ino open, or
 * did its last handle close within closed_ms?  True also when the keys
 * changed since rfile_epoch() gave `epoch` (nothing can be told then). */
bool rfile_in_use(uint64_t ino, uint64_t epoch, uint64_t closed_ms);

/* The user's xattrs of `to` made those of `from` (raidfs's own stay):
 * copied, and the ones `from` no longer has removed (none when `to` was
 * just created). */
void rfile_copy_xattrs(int from, int to, bool created);

/*
 * Put back shard j of rf, missing on its member (deleted there by hand):
 * made unnamed (O_TMPFILE) in its directory there under the namespace
 * lock; filled from the other members a window at a time under the
 * file's lock, through a private copy of the rfile (nothing marks or
 * reads it half filled), and synced; then, under the namespace lock
 * again, given the primary's owner, mode, xattrs and times, marked and
 * linked at its name, put in service and given the record - unless the
 * file was written, truncated, renamed or removed, or the member changed,
 * meanwhile.  A crash at any point leaves no partial shard.  go_on(a, bytes)
 * is called between windows (false: stop).  The caller holds a reference
 * and no lock.  0 or -errno: -EAGAIN the file changed meanwhile (the next
 * scrub tries again), -EINTR stopped, -EBUSY its redundancy may lag (in
 * the dirty log since the mount), -EEXIST the name is taken there,
 * -EMLINK the file has more names (a new shard would not be shared by
 * them), -ENOENT its directory is missing there, -EOPNOTSUPP the member's
 * filesystem has no O_TMPFILE, -EIO too few other members to fill it
 * from, -EINVAL nothing to put back (raid0, the primary, the member not
 * in service).
 */
int rfile_restore_shard(struct rfile *rf, const char *relpath, uint32_t j, bool (*go_on)(struct array *a, uint64_t bytes));

/* stripe_record_acked() for every open file (a member failed: the shards' lengths may
 * not show a tail only it held).  False when some file was busy (or its
 * record failed): call again later. */
bool rfile_record_acked_all(void);

/* A write or truncate reaching `end` was acknowledged. */
static inline void rfile_note_acked(struct rfile *rf, uint64_t end)
{
	uint64_t cur = __atomic_load_n(&rf->acked, __ATOMIC_ACQUIRE);
	while (cur < end && !__atomic_compare_exchange_n(&rf->acked, &cur, end, false, __ATOMIC_ACQ_REL,
							 __ATOMIC_ACQUIRE))
		;
}

/* How far acknowledged writes reach, within the size (a truncate since). */
static inline uint64_t rfile_acked(const struct rfile *rf)
{
	uint64_t acked = __atomic_load_n(&rf->acked, __ATOMIC_ACQUIRE);
	uint64_t size = __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE);
	return acked < size ? acked : size;
}
/* After a rebuild wrote shard j (SHADOW: the replacement) of a file nobody
 * else has open and whose other shards all hold the current record: that
 * same record onto shard j alone (the others need no write, and no new
 * version is needed); otherwise stripe_write_meta(rf, 0).  Caller holds
 * rf->rw exclusively. */
int rfile_write_meta_rebuilt(struct rfile *rf, uint32_t j);

/* Every open file drops its shard descriptor on member j (it is being
 * replaced). */
void rfile_forget_member(uint32_t j);

/* The table's hooks for the array (array.h), registered by mount.c. */
extern const struct array_hooks rfile_hooks;

#endif
