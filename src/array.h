/*
 * array.h - an assembled array: its members, their states, and the
 * array-wide bookkeeping (superblocks, dirty-file log).
 *
 * Member states (as recorded in the superblocks; see superblock.h):
 *
 *            create / add                       raidfs add, create --spare
 *               |                                         |
 *               v         I/O error, vanished root,       v
 *   +------> ONLINE ----- foreign superblock, -------> FAULTY      SPARE
 *   |                     raidfs fail; absent at          |          |
 *   |                     the first write after mount     |          |
 *   |                                                     | raidfs replace DIR,
 *   | rebuild walked, verified,                           | or a spare taken
 *   | redo queue empty (rebuild.c)                        v by the monitor
 *   +------------------------------------------------ REBUILDING <---+
 *                                                         |
 *                              unmount / kill -9: resumes at the next mount
 *                              the new member's write error, vanished root,
 *                              raidfs fail: FAULTY, the rebuild stops (its
 *                              partial copy, if it comes back, is compared
 *                              file by file: the slot's generation is bumped)
 *
 *   ONLINE      read and written; serves the namespace if it is the primary
 *   REBUILDING  written (every change follows it) but never read
 *   FAULTY      neither; its slot waits for a replacement
 *   SPARE       an empty directory waiting to replace a faulty member
 *
 * Array states, derived (array_state()):
 *   OPTIMAL   every member online
 *   DEGRADED  members faulty, absent or rebuilding, but every group within
 *             its tolerance ("rebuilding" in status while a rebuild runs)
 *   FAILED    a group lost more members than it tolerates: writes are
 *             refused, reads that need a lost member return EIO
 *
 * Every transition bumps the event counter and rewrites the superblocks of
 * the members still in service, so a member that was away is recognised
 * as stale by its lower counter when it comes back.
 *
 * A member absent at mount is only recorded as FAULTY (events bumped on the
 * survivors) when the first modifying operation happens: a member that was
 * away while nothing changed is still in sync when it comes back, as with
 * md's event counter.
 *
 * Dirty-file log (crash consistency, decision 8): before the first change
 * to a regular file, array_mark_dirty() hard-links its shard on every
 * present member as `.raidfs/dirty/<file id>`.  After a crash the mount
 * resyncs exactly those files (resync_dirty() (resync.h)) and removes the links.
 * Hard links follow renames and keep unlinked-but-open files reachable.
 *
 * Locking: a->lock protects member states and superblock writes (its
 * place in the one lock order: locks.h).  A slot's dirfd changes only
 * when another directory takes the slot (a replacement, a re-add, the
 * commit of a replacement in place); open files and lookups by inode
 * follow through the slot-change hooks (struct array_hooks), and a member
 * directory replaced in place stays open until the unmount (struct
 * array, retired).
 */
#ifndef RAIDFS_ARRAY_H
#define RAIDFS_ARRAY_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "layout.h"
#include "nslock.h"
#include "member.h"
#include "superblock.h"
#include "event.h"

struct member {
	int dirfd;			/* -1 when absent */
	char path[PATH_MAX];		/* as given (absolute); for a member not
					 * given, where the table last saw it
					 * (messages only: see `given`) */
	bool given;			/* path came to this mount: its member
					 * list, raidfs add or replace, a spare.
					 * Only such a path is ever opened again
					 * (the monitor's re-add): a recorded one
					 * may be another array's directory (a
					 * copy of this one's) */
	enum member_state state;	/* atomic reads; changed under a->lock */
	bool stale;			/* present but its superblock is behind */
	uint64_t reads, writes, errors;	/* counters (atomic) */
	uint64_t read_bytes, written_bytes;	/* bytes those moved (atomic) */
	uint64_t corrected;		/* read errors repaired from redundancy */
	/* error counters as `zpool status` shows them (READ, WRITE, CKSUM,
	 * repaired bytes; counters.h), atomic; kept on the member's own
	 * directory (.raidfs/counters) until `raidfs clear` */
	uint64_t read_errors, write_errors, cksum_errors, repaired_bytes;
	bool counters_due;		/* changed since last written (atomic) */
	bool cksum_failing;		/* failed for its checksum errors: the
					 * event is posted once (atomic) */
	dev_t stale_dev;		/* a stale member's directory (not kept */
	ino_t stale_ino;		/* open): its counters go there by path */
	bool missed_noted;		/* "changed" marker made for this absence */
	bool names_noted;		/* "namespace" marker made for it */
	bool dirty_scan_due;		/* left service, the dirty log not yet
					 * taken into its missed-write log */
	bool missed_incomplete;		/* a marker could not be made: its
					 * re-add walks everything */
	bool went_away;			/* failed because its disk vanished (or was
					 * absent at mount): re-added by itself
					 * when it comes back */
	bool readd_told;		/* the monitor said why it cannot */
	bool space_low_told;		/* the monitor posted NearlyFull (until
					 * it has room again) */
	bool partial;			/* failed during its rebuild: its directory
					 * holds a partial copy */
	char fail_reason[128];		/* why it was failed (under a->lock) */
	pthread_mutex_t fault_lock;
	struct member_faults fault;	/* injection (member.h) */
};

enum array_state { ARRAY_OPTIMAL, ARRAY_DEGRADED, ARRAY_FAILED };

/*
 * The shadow slot: while a healthy member j is replaced in place
 * (`raidfs replace` of an online member, like mdadm --replace), the new
 * directory sits in slot SHADOW, state REBUILDING, and a->shadow_of is j.
 * Member j keeps serving; every write to j, every namespace change and
 * every metadata update also reaches the shadow (rf->fd[SHADOW]); when the
 * copy is complete the shadow takes j's place.  Loops over the members
 * (j < width, j < width + spares) never reach it.  The replacement is
 * recorded in the superblocks (sb.replacing; the shadow gets its own
 * superblock) so that a mount puts it back and the copy resumes.  When
 * j fails during the copy the shadow becomes j, REBUILDING
 * (array_shadow_promote()):
 *
 *   ONLINE j + SHADOW --copy complete--> ONLINE j (the shadow's directory)
 *          |                              array_shadow_commit()
 *          +--j fails--> REBUILDING j (the shadow's directory, what was
 *          |             copied kept)       array_shadow_promote()
 *          +--the shadow cannot follow--> ONLINE j, no shadow
 *                                           array_shadow_drop()
 */
#define SHADOW (LAYOUT_MAX_WIDTH + SB_MAX_SPARES)

/*
 * Hooks: calls go one way (docs/architecture.md), so array.c and the
 * layers between it and the file table tell the layers above them about
 * a change through functions those layers register.  mount.c registers
 * the file table's (file.c), the rebuild's (rebuild.c) and the cache's
 * (cache.c) right after the array is assembled; an array nobody
 * registered hooks on (raidfs check) runs without them.  A NULL function
 * is skipped.  slot_change_begin/end are called with a->lock held (the
 * primary or a slot changes under it: a->lock comes before the open-file
 * table's lock, locks.h); the others without it.
 */
struct rfile;

struct array_hooks {
	/* a slot's directory or the primary is about to change / has
	 * changed: open files must not use their descriptors in between */
	void (*slot_change_begin)(void);
	void (*slot_change_end)(struct array *a);
	/* open files drop their shard on member j (or SHADOW) */
	void (*forget_member)(uint32_t j);
	/* the replacement in place of j is committed: open files move their
	 * SHADOW shard into slot j (called between begin and end above) */
	void (*shadow_commit)(uint32_t j);
	/* the path of the open file with this id: false if it is not open */
	bool (*open_path_of)(uint64_t id, char *buf, size_t len);
	/* member j failed while it was being rebuilt */
	void (*target_failed)(uint32_t j);
	/* the member being replaced in place failed: its copy becomes its
	 * rebuild */
	void (*replaced_member_failed)(void);
	/* the replacement in place cannot go on (an I/O error on it) */
	void (*abandon_replace)(void);
	/* an operation on path (relative to the mount) did not reach the
	 * member being rebuilt: the rebuild must bring it in line */
	void (*redo)(struct array *a, const char *path);
	/* bytes [off, end) of an open file were rewritten on the members
	 * from another copy (a mirror's regeneration): what a cache holds of
	 * them clean may differ now */
	void (*data_rewritten)(struct rfile *rf, uint64_t off, uint64_t end);
};
#define ARRAY_MAX_HOOKS 4
#define ARRAY_RETIRED 8
#define MEMBER_SLOTS (SHADOW + 1)

struct array {
	struct superblock sb;		/* authoritative (highest events) */
	struct layout lay;		/* array geometry, rotation 0 */
	uint32_t width;
	struct member m[MEMBER_SLOTS];	/* spares after width; SHADOW last */
	int shadow_of;			/* member being replaced in place, or -1 */
	int primary;			/* lowest present member index */
	uint64_t out_before;		/* bit j: the newest superblock had member j
					 * out of service (its chunks were guarded) */
	bool absent_recorded;		/* absent members written down as faulty */
	bool sizes_due;			/* a member failed: open files' sizes to
					 * record (the monitor; rfile_record_acked_all()) */
	bool readonly;
	bool csum;			/* new files get checksums (docs/checksums.md) */
	bool force;		/* mounted with -o force (the offline mount's retries too) */
	bool marks_wait_sync;	/* the last release of a file syncs the members
				 * before its dirty-log marks go (set by
				 * cache_open(): bbu=file, member_sync not never) */
	bool keep_failed;		/* array_assemble returns 1, not an error,
					 * for a failed array (mount.c) */
	pthread_mutex_t lock;
	/* Namespace lock (nslock.h; its holders in locks.h): operations that
	 * change the namespace on the members hold it shared (fuse.c), the
	 * rebuild's file threads as a group, the rebuild's walk, the scrub
	 * and the shard put-back exclusively, so none of them sees a rename
	 * applied to some members only. */
	struct nslock ns_lock;
	char mountpoint[PATH_MAX];
	/* directories of members replaced in place, kept open until the
	 * unmount: a thread that read a member's descriptor just before the
	 * replacement took its slot must not meet the number reused */
	int retired[ARRAY_RETIRED];
	unsigned nretired;
	/* run by the monitor once a second while mounted (fuse.c) */
	void (*tick)(struct array *a);
	/* the user-I/O clock (array_note_user_io()): watchers, last note */
	int user_io_watchers;
	uint64_t last_user_io_ms;
	/* the layers above, told of changes (array_add_hooks()) */
	const struct array_hooks *hooks[ARRAY_MAX_HOOKS];
	int nhooks;
	/* given paths that could not be used, and why (set by assembly;
	 * the strings are the caller's argv and static messages) */
	int nunusable;
	const char *unusable_path[LAYOUT_MAX_WIDTH + 1];
	const char *unusable_why[LAYOUT_MAX_WIDTH + 1];
	/* of those, the ones the monitor looks at again (missing, or without
	 * a superblock: a disk not mounted yet), bit u */
	uint64_t unusable_retry;
	/* files whose resync at mount failed (array_left_dirty()), sorted;
	 * under left_lock */
	uint64_t *left_dirty;
	size_t nleft_dirty, left_cap;
	pthread_mutex_t left_lock;
};

struct create_opts {
	enum raid_level level;
	enum sb_csum csum;		/* the array's checksum algorithm */
	uint32_t chunk;
	uint32_t groups;
	const char *name;
	bool force;
	int nspares;			/* hot spares (--spare DIR) */
	char *spares[SB_MAX_SPARES];
};

/* Create a new array on the member directories.  Errors are printed (to
 * stderr) with the culprit named; returns 0 or a negative errno. */
int array_create(const struct create_opts *o, char **paths, int n);

/*
 * What the newest table (cur, the superblock with the highest event
 * counter among an array's directories) makes of a directory whose own
 * superblock is sb, of the same array: the decision of assembly
 * (place_given()), pure, so that 'raidfs scan' tells what a mount would
 * do without opening anything for writing.  *slot gets the member (or
 * spare) index the directory goes to; *taken the state of the slot when
 * the directory takes it because a state change was cut short (a spare
 * or a replacement recorded as that member), else -1.
 */
enum array_claim {
	CLAIM_ONLINE,		/* member *slot, in service */
	CLAIM_REBUILDING,	/* member *slot, its rebuild resumed */
	CLAIM_SPARE,		/* hot spare *slot */
	CLAIM_REPLACEMENT,	/* the replacement in place (attach_shadow() decides) */
	CLAIM_STALE,		/* member *slot, missed writes: not used (may be taken back) */
	CLAIM_OUT,		/* member *slot, recorded faulty or removed: not used */
	CLAIM_REPLACED,		/* was member *slot until its replacement finished */
	CLAIM_REBUILT_SINCE,	/* was member *slot; the slot got another directory since */
	CLAIM_OTHER_UUID,	/* claims *slot but carries another member uuid */
	CLAIM_CORRUPT,		/* an index beyond the table */
};
enum array_claim array_claim(const struct superblock *cur, const struct superblock *sb, uint32_t *slot,
			     int *taken);
const char *array_claim_name(enum array_claim c);

/*
 * Assemble from member paths (any order).  Only these directories are
 * opened: a member that is not among them is absent, whatever path the
 * superblocks record for it (those are for messages).  A directory is
 * the member its superblock names when the array uuid, the index, the
 * member uuid the newest table records for that slot and the event
 * counter agree; of two directories that claim one slot, the older copy
 * is not used, and two that nothing tells apart refuse the mount.
 * Superblocks of formats 1 and 2 are rewritten in format 3, each member
 * given a uuid (unless a->readonly, which assembly keeps).  Absent or
 * stale members are left with dirfd -1.  On refusal (foreign members, too many absent,
 * degraded with nodegraded) writes a message to err and returns <0; a
 * failed array with a->keep_failed set is kept assembled: message in err,
 * returns 1.
 */
int array_assemble(struct array *a, char **paths, int n, bool allow_degraded,
		   char *err, size_t errlen);
void array_close(struct array *a);

enum array_state array_state(const struct array *a);
const char *array_state_name(enum array_state s);
int array_absent_count(const struct array *a);

/* Present at assembly (its directory is open). */
static inline bool member_present(const struct array *a, uint32_t i)
{
	return a->m[i].dirfd >= 0;
}

/* Serving I/O: present and online (a failed member stays present until
 * it is removed, but is never read or written again). */
static inline bool member_online(const struct array *a, uint32_t i)
{
	return a->m[i].dirfd >= 0 &&
	       __atomic_load_n(&a->m[i].state, __ATOMIC_ACQUIRE) == MS_ONLINE;
}

/* Receives writes: online, or being rebuilt (its new contents must follow
 * every change; it is read only once the rebuild has finished). */
static inline bool member_writable(const struct array *a, uint32_t i)
{
	if (a->m[i].dirfd < 0)
		return false;
	int st = __atomic_load_n(&a->m[i].state, __ATOMIC_ACQUIRE);
	return st == MS_ONLINE || st == MS_REBUILDING;
}

/* The member being replaced in place, or -1. */
static inline int shadow_of(const struct array *a)
{
	return __atomic_load_n(&a->shadow_of, __ATOMIC_ACQUIRE);
}

static inline bool member_rebuilding(const struct array *a, uint32_t i)
{
	return a->m[i].dirfd >= 0 &&
	       __atomic_load_n(&a->m[i].state, __ATOMIC_ACQUIRE) == MS_REBUILDING;
}

/*
 * Mark member j faulty at runtime: record it in the superblocks of the
 * other online members (events bumped), log it, emit the events (Fail,
 * DegradedArray or ArrayFailed), pick a new primary if needed.  Safe to
 * call from any thread, more than once.  Returns 1 if this call failed
 * it, 0 if it was not online.
 */
int array_fail_member(struct array *a, uint32_t j, const char *why);
/* Failing a member takes the open-file table's lock (paths for the
 * missed-write log, a new primary re-keys open files): a thread that holds
 * it (rfile_release()) defers the failures it meets until it has let it
 * go - array_defer_failures(a, true) before, array_defer_failures(a,
 * false) after, which fails the members.  True when failures are waiting
 * on this thread. */
void array_defer_failures(struct array *a, bool on);
bool array_failures_deferred(void);

/* A member I/O error: fatal classes on writes fail the member at once;
 * read errors are counted and fail it past the threshold.  Returns true
 * when the member is (now) failed. */
bool array_member_io_error(struct array *a, uint32_t j, int err, bool write);
/* Member j (in service or being rebuilt: its rebuild stops) refused
 * `what` with err while the others took it: failed ("refused WHAT
 * (error)"), as on a write error
 * (a disk gone - ENXIO, ENODEV, ENOTCONN - is taken back when it
 * returns). */
void array_member_refused(struct array *a, uint32_t j, int err, const char *what);
/* Members `refused` (err[j] their errors) did not take what the others
 * did (`held`: a member in service took it): each is failed
 * (array_member_refused()), unless the error is the daemon's own
 * shortage.  When no member took it nothing changed: the first error is
 * the caller's.  `what` for the log: "the metadata record of file X".
 * 0, or -errno for the caller (-EIO when the array failed). */
int array_judge_refusals(struct array *a, uint64_t refused, const int *err, bool held, const char *what);
/* Everything written to the members in service so far made durable (one
 * syncfs per member filesystem; a member whose sync fails is failed, as
 * for a failed fsync).  For the cache log, which may forget a record only
 * once what it holds is durable on the members.  0, or -EIO when the
 * array is failed.  Nothing with member_sync=never. */
int array_sync_members(struct array *a);

/* Corrected read error (repaired from redundancy): counted.  The bytes
 * rewritten go to array_note_repaired(). */
void array_member_corrected(struct array *a, uint32_t j);

/*
 * Error counters (struct member; counters.h), as `zpool status` shows
 * them.  READ and WRITE are fed by array_member_io_error() (and WRITE by
 * array_member_refused()); CKSUM and the repaired bytes by the calls
 * below.  Any thread, no lock held; none blocks on I/O (the monitor
 * writes the changed ones to their members once a second:
 * array_counters_flush()).
 *
 * array_note_cksum_error(): one chunk of member j did not match its
 * checksum (with the bytes rewritten on j from redundancy, or 0).  When
 * j's count reaches array_cksum_error_threshold (counters_over_threshold())
 * and j is in service or being rebuilt, the event ChecksumErrors is
 * posted and j is failed ("N checksum errors (threshold T)"), which
 * posts Fail and DegradedArray or ArrayFailed after it.
 * array_note_repaired(): bytes rewritten on member j from redundancy.
 */
void array_note_cksum_error(struct array *a, uint32_t j, uint64_t bytes_repaired_or_0);
void array_note_repaired(struct array *a, uint32_t j, uint64_t bytes);
/* `raidfs clear`: member j's error counters (the ones above, and errors
 * and corrected) back to zero, written to it within a second. */
void array_counters_clear(struct array *a, uint32_t j);
/* Write the counters that changed to their members' `.raidfs/counters`
 * (not on a read-only mount).  The monitor, once a second, and
 * array_close(); one caller at a time.  A member that cannot take them
 * is not failed for it: a warning is logged. */
void array_counters_flush(struct array *a);

/* Write the authoritative superblock to every online or rebuilding
 * member.  Caller holds a->lock and has bumped the event counter. */
int array_write_superblocks_locked(struct array *a);

/* Hot spares: add one (validated, recorded in the superblocks), and take
 * one for member j (removes it from the spare list; the caller starts
 * rebuilding j onto it: rebuild.c): the replacement queued for j, else
 * (unless only_queued) the first hot spare; *queued says which.  -ENOENT
 * when there is none.  array_spare_count() is atomic. */
int array_add_spare(struct array *a, int fd, const char *path, char *err, size_t errlen);
int array_take_spare(struct array *a, uint32_t j, bool only_queued, int *fd, char *path, size_t pathlen,
		     bool *queued);
uint32_t array_spare_count(struct array *a);

/*
 * Queued replacements: `raidfs replace` of a member while a rebuild runs.
 * The directory (fd, path: validated, locked) is recorded as a spare
 * entry bound to member j (sb_member.queued_for, docs/format.md), so the
 * queue lasts across unmounts and crashes; array_take_spare() gives it
 * to j only, and rebuild_take_spare() (rebuild.h) starts the queue in
 * table order when no rebuild runs.  array_queue_replacement(): -EBUSY
 * when j has one queued already, -ENOSPC when the table is full (spares
 * and queued entries share SB_MAX_SPARES), fd then still the caller's;
 * otherwise fd is the array's (other errors: a superblock not written).
 * array_queued(): the members waiting, in queue order (present
 * directories only), at most max; their count.  array_queued_check()
 * (the monitor, once a second): a queued directory that vanished (deleted,
 * moved, its disk unmounted, its superblock gone or another array's) is
 * dropped from the queue, logged, and nothing is removed from it.
 */
int array_queue_replacement(struct array *a, uint32_t j, int fd, const char *path, char *err, size_t errlen);
int array_queued(struct array *a, int *members, int max);
void array_queued_check(struct array *a);

/* raidfs remove: a faulty member (recorded as removed, its directory
 * closed) or a spare (dropped from the list, its directory left empty);
 * *queued_for (may be NULL): the member whose queued replacement this
 * was, or -1 for a hot spare. */
int array_remove_member(struct array *a, uint32_t j, char *err, size_t errlen);
int array_remove_spare(struct array *a, const char *path, int *queued_for, char *err, size_t errlen);

/* New member checks (used by create and replace). */
int array_probe_xattr(int dirfd);
bool array_dir_is_empty(int dirfd);
/* Member directories are locked (flock) for as long as a raidfs has them
 * open: a second mount of the same members is refused.  -EBUSY when
 * another process holds fd's directory. */
int array_lock_dir(int fd);
/* A directory given to replace a member or to be a spare (fd, `dir` as
 * given) is not a member or spare already, not inside one, not inside
 * the array's own mount, and not in use by another raidfs (it is locked
 * for this one): 0, or -EINVAL / -EBUSY with the reason in err. */
int array_check_new_dir(struct array *a, int fd, const char *dir, char *err, size_t errlen);

/* Put newfd (directory `path`) in member j's slot as REBUILDING (j must
 * be faulty or missing): -EBUSY otherwise, and newfd is closed; it is the
 * array's in every case.  array_member_rebuilt() makes it ONLINE.  Both
 * bump the event counter and write the superblocks.  Unless same_dir
 * (the directory the slot had last, back), the slot's generation is
 * bumped too: the directory it had is no longer the member. */
int array_replace_begin(struct array *a, uint32_t j, int newfd, const char *path, bool same_dir);
int array_member_rebuilt(struct array *a, uint32_t j);

/* Runtime options */
extern uint32_t array_read_error_threshold;
/* -o cksum_error_threshold=N (0: count only, never fail); docs/failures.md
 * says why 50 */
#define ARRAY_CKSUM_ERROR_THRESHOLD 50
extern uint32_t array_cksum_error_threshold;
/* -o space_warn: a member is nearly full when its filesystem is at least
 * array_space_warn_pct percent used (0: never) or has less than
 * array_space_warn_free bytes free (0: never).  Status warns, -x lists
 * the array, the monitor posts NearlyFull. */
extern uint32_t array_space_warn_pct;
extern uint64_t array_space_warn_free;
/* Is a filesystem with `used` bytes used and `avail` left for users past
 * -o space_warn?  (Use as df counts it: used / (used + avail).)  Pure. */
bool array_space_low(uint64_t used, uint64_t avail);

/* The user-I/O clock: the data path notes every user request; the
 * rebuild and the scrub, while they watch, slow down to their busy rates
 * when users did I/O in the last 100 ms.  Nothing is noted while nobody
 * watches (an idle array pays nothing).  Any thread, no lock. */
void array_note_user_io(struct array *a);
void array_watch_user_io(struct array *a, bool on);
/* when user I/O was last noted (CLOCK_MONOTONIC_COARSE, ms) */
uint64_t array_last_user_io_ms(const struct array *a);

/* Register hooks (struct array_hooks); at most ARRAY_MAX_HOOKS sets. */
void array_add_hooks(struct array *a, const struct array_hooks *h);
/* Tell the layers above through the hooks (any thread, no lock held). */
void array_abandon_replace(struct array *a);
void array_redo(struct array *a, const char *path);
void array_data_rewritten(struct array *a, struct rfile *rf, uint64_t off, uint64_t end);

/* The array refuses changes (too many members lost, or mounted ro). */
bool array_writable(struct array *a);

/* Record absent members as faulty before the first change (see above),
 * and that the change happened in their missed-write logs: any change
 * (array_note_write), or one to a regular file's contents only, which
 * its caller puts in the log by its id (array_note_data_write). */
int array_note_write(struct array *a);
int array_note_data_write(struct array *a);

/* Dirty-file log. fds[] are the shard descriptors (-1 for absent); path
 * is the file's as opened (for the missed-write log; NULL: not known). */
int array_mark_dirty(struct array *a, uint64_t id, const int *fds, const char *path);
/* The same for a new file whose shard on member `marked` was entered in
 * the log by its create already (that link is not made again). */
int array_mark_created(struct array *a, uint64_t id, const int *fds, const char *path, uint32_t marked);
/* The same for a file changed through the file-backed cache log only:
 * after a crash the log's replay suffices (no parity resync).  Cleared
 * by array_clear_dirty too. */
#define CACHED_SUFFIX ".c"
int array_mark_cached(struct array *a, uint64_t id, const int *fds, const char *path);
/* The cache marks rely on the cache log with this id (cachelog_id()):
 * noted on every member in service before the run's first cache mark
 * (an error: the caller marks plainly).  `retired`: that log failed and
 * was retired, the members hold all it had - a member that does not take
 * this note while another does is failed; an error when none took it.
 * At mount: -1 when a member notes another log (this one is not the log
 * the array last wrote through), else 1 when a member notes it in use
 * (the marks were made for it), -2 when they note it retired (its
 * records are older than the members' bytes), 0 when none has a note. */
int array_note_cache_log(struct array *a, uint64_t log_id, bool retired);
int array_cache_log_check(struct array *a, uint64_t log_id);
/* The dirty-log mark (cached: the cache log's) of shard fd on member j
 * alone.  0 or -errno. */
int array_mark_member(struct array *a, uint64_t id, uint32_t j, int fd, bool cached);
/* (not for a file array_left_dirty() names: its entry stays).  path:
 * the file's as opened, for the missed-write log of a member that failed
 * a moment ago and has not taken the dirty log into it yet (NULL: not
 * known, the re-add walks). */
void array_clear_dirty(struct array *a, uint64_t id, const char *path);
/* The same, for the kinds of names asked for only (plain: "<id>",
 * cached: "<id>.c"): a caller that knows which the file has (one it
 * created and marked in this run) does not remove the others. */
void array_clear_marks(struct array *a, uint64_t id, const char *path, bool plain, bool cached);
/* The file's dirty-log names on member j alone removed (a stale one that
 * held an old shard there, or a mark made for a shard not put in
 * service). */
void array_unmark_member(struct array *a, uint64_t id, uint32_t j);
/* How many dirty-log names of the file member j has (0 to 2) that are
 * links of the shard `of` (fstat()). */
nlink_t array_dirty_links(struct array *a, uint64_t id, uint32_t j, const struct stat *of);
/* Was file id left in the dirty log by the mount, whose resync of it
 * failed?  Its redundancy may lag behind its data: rfile_open() resyncs
 * it, and array_left_dirty_done() lets its entry be cleared. */
bool array_left_dirty(struct array *a, uint64_t id);
void array_left_dirty_done(struct array *a, uint64_t id);
/* The size a file being written at a crash reached on its shards (fds;
 * `recorded`: its record's, the least taken when a member has no shard
 * there, whose tail is not known): what the resync keeps, a lower bound
 * then.  `flags`: the record's; with META_F_TRUNC, a truncate to
 * `recorded` was cut short: that size (the resync finishes the cut). */
uint64_t array_size_reached(const struct array *a, const struct layout *l, const int *fds, uint64_t recorded,
			    uint32_t flags);
/* A member directory (fd) comes back: drop its dirty-log entries that the
 * members in service cleared while it was away, and its note of the
 * cache log (array_note_cache_log(): a mount goes by the others'). */
void array_dirty_prune(struct array *a, int fd);

/* Missed-write log (see array.c), over the members in service: the ids
 * of files changed while member `away` was out of service (malloc'd,
 * sorted, each once), and clearing it once the member is back in sync. */
int array_missed_load(struct array *a, uint32_t away, uint64_t **ids, size_t *n);
/* Nothing at all (no file, no namespace change) was logged for `away`. */
bool array_missed_empty(struct array *a, uint32_t away);
/* Something other than files' contents changed while `away` was out (or
 * the log may be incomplete): its re-add must walk the namespace. */
bool array_missed_names(struct array *a, uint32_t away);
/* File `id` (opened by `path`, NULL if not known) is about to change
 * while members are out of service: into their logs; -errno when no
 * member can hold the record (the change must then be refused). */
int array_missed_file(struct array *a, uint64_t id, const char *path);
/* The path the file `id` had when it was logged: its length, or 0 when
 * not known. */
int array_missed_path(struct array *a, uint32_t away, uint64_t id, char *buf, size_t len);
/* Put member j (its old directory fd/path, nothing missed) straight back
 * online: how a failed array recovers when its members return. */
int array_member_back(struct array *a, uint32_t j, int fd, const char *path);

/* Replace in place: put fd (path) in the shadow slot for member j (the
 * replacement is recorded in the superblocks), or take it out again
 * (abandoned), or make it member j (complete: the old directory loses
 * its superblock; returns 1, or 0 when j failed meanwhile and the shadow
 * became its rebuild target as with array_shadow_promote()).  Callers
 * hold a->ns_lock exclusively for the last two. */
int array_shadow_begin(struct array *a, uint32_t j, int fd, const char *path);
void array_shadow_drop(struct array *a);
int array_shadow_commit(struct array *a);
/* The member being replaced failed: the shadow becomes its rebuild target
 * (see array.c); -EBUSY when that cannot be (the copy is then dropped). */
int array_shadow_promote(struct array *a);
void array_missed_clear(struct array *a, uint32_t away);

/* Add id to the files whose resync at mount failed (array_left_dirty()). */
void array_left_dirty_add(struct array *a, uint64_t id);

/* Usable capacity accounting for statfs: data members per stripe width. */
void array_capacity_ratio(const struct array *a, uint32_t *num, uint32_t *den);

#endif
