/*
 * cache.h - the stripe cache: a RAID controller's write cache, emulated.
 *
 * Every read and write of file data goes through here (fuse.c calls
 * cache_read/cache_write, never stripe.c directly).  The cache holds lines:
 * one line is one stripe of one file (the stripe's data bytes, k * chunk *
 * groups), with a bitmap of valid and of dirty 512-byte sectors.
 *
 *   write-back     cache_write copies the bytes into lines and returns;
 *                  destage threads write dirty lines to the members later,
 *                  whole stripes without reads when a line is complete
 *                  (stripe.c), oldest and fullest first, with back-pressure
 *                  when too many lines are dirty.
 *   write-through  the bytes go to the members before cache_write returns
 *                  (stripe_write); cached lines for the range are written
 *                  first and dropped.
 *   reads          cached sectors come from the lines, the rest from the
 *                  members; dirty sectors always win.
 *
 * Where the lines live is the battery (-o bbu=):
 *   none       anonymous memory: a crash loses the cache, so write-back is
 *              only used when forced (always-writeback);
 *   shm        a file in /dev/shm: survives kill -9 of the daemon, not a
 *              reboot; the next mount writes its dirty lines out (replay);
 *   file:PATH  anonymous lines plus a checksummed log at PATH on persistent
 *              storage: every write-back write is in the log, fdatasynced,
 *              before it is acknowledged; survives power loss.
 *
 * Battery states (shm and file; "none" is always MISSING): OPTIMAL,
 * LEARNING (bbu learn, until bbu_learn_time is over), FAILED (bbu fail,
 * or the file log failed; bbu restore makes it OPTIMAL again).  The
 * diagram and the transition table with the function of each step are
 * at the top of cache.c.  Every transition is logged and is an event.
 *
 * Effective write policy (MegaRAID's "no write cache if bad BBU";
 * cache_policy_effective() in cachepolicy.h decides it):
 *   writethrough       always write-through
 *   writeback          write-back while the battery is OPTIMAL and the
 *                      file log has not failed, else write-through (the
 *                      dirty lines are flushed first)
 *   always-writeback   write-back whatever the battery
 *   Write-back also goes through while a member is nearly full (cache_room()).
 *
 * Crash consistency: a file is in the dirty log (array.c) before its first
 * byte enters the cache and leaves it only when its last dirty line is on
 * the members.  At mount, the dirty-log resync writes the surviving cache's
 * data for each file (cache_replay_file) before it resyncs the parity.
 *
 * Locking: one cache mutex (struct cache's lock) for the line table,
 * taken after rf->rw, never held across member I/O.  Writers in write-back and the
 * destage threads hold rf->rw shared; a line being written out is busy,
 * and only its own writers (and readers that need its stripe from the
 * members) wait for it, so writers of one file's other stripes, and
 * everything of other files, go on during a destage.  Truncate and
 * write-through writes hold rf->rw exclusively.
 */
#ifndef RAIDFS_CACHE_H
#define RAIDFS_CACHE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct array;
struct rfile;

enum cache_wpolicy { WP_WRITEBACK, WP_ALWAYS_WRITEBACK, WP_WRITETHROUGH };
enum cache_rpolicy { RP_ADAPTIVE, RP_RA, RP_NORA };
enum bbu_kind { BBU_NONE, BBU_SHM, BBU_FILE };
enum bbu_state { BBU_OPTIMAL, BBU_LEARNING, BBU_FAILED, BBU_MISSING };

struct cache_opts {
	uint64_t size;			/* -o cache_size= (bytes) */
	enum cache_wpolicy wpolicy;	/* -o write_policy= */
	enum cache_rpolicy rpolicy;	/* -o read_policy= */
	enum bbu_kind bbu;		/* -o bbu= */
	char bbu_path[PATH_MAX];	/* bbu=file:PATH */
	unsigned learn_secs;		/* -o bbu_learn_time= */
	unsigned age_ms;		/* -o cache_age=: a partly written line
					 * waits this long for more bytes */
	unsigned destage_threads;	/* -o destage_threads= (0: 4 a member) */
};
extern struct cache_opts cache_opts;
#define CACHE_DEFAULT_SIZE (256ull << 20)

/* Take the cache's mount options out of a command line (libfuse's
 * fuse_opt_parse(): "-o cache_size=SIZE,write_policy=,read_policy=,bbu=,
 * bbu_learn_time=,cache_age=,member_sync=,destage_threads=") into cache_opts; everything
 * else stays in args, the -o options joined into one "-o" after argv[0].
 * 0, or -1 with a message on stderr that names the option and its value. */
struct fuse_args;
int cache_opt_parse(struct fuse_args *args);

const char *cache_wpolicy_name(enum cache_wpolicy p);
const char *cache_rpolicy_name(enum cache_rpolicy p);
const char *bbu_state_name(enum bbu_state s);
const char *bbu_kind_name(enum bbu_kind k);

/*
 * Mount: cache_open() reads what a previous daemon left (shm lines or the
 * file log) so that the dirty-log resync can write it out through
 * cache_replay_file(); cache_replay_finish() then checks that everything
 * was placed, drops the old cache and sets up the new one; cache_start()
 * starts the destage threads.  cache_close() (unmount) writes every dirty
 * line out; what cannot be written is kept for the next mount.
 */
int cache_open(struct array *a, char *err, size_t errlen);
int cache_replay_file(struct rfile *rf);

/* Does a battery keep the cache (bbu=file, or bbu=shm with its arena)? */
bool cache_battery(void);
int cache_replay_finish(struct array *a, char *err, size_t errlen);
int cache_start(void);
void cache_close(void);

/*
 * Preserved cache: the last run left acknowledged writes that the array
 * cannot take now (too many members missing).  The mount comes up
 * offline (cache_offline(): no file data and no namespace change is
 * served) and cache_monitor(), called every second by the member monitor,
 * finishes the mount (dirty-log resync with the replay, then the cache)
 * as soon as the array can run.  `raidfs cache MNT discard --force` drops
 * the preserved data; the mount still waits for the members.
 */
uint64_t cache_preserved_bytes(void);
void cache_set_offline(bool offline);
/* Does the cache of the last run (not written yet) hold data of file fid? */
bool cache_preserved_for(uint64_t fid);
/* The last run's cache survived with its guard slots (guard.h): a file
 * it alone changed is consistent after its replay, also degraded. */
bool cache_guarded_last_run(void);
/* The last run's arena or log was there at mount (else what it held is
 * lost, and a file it alone changed needs a parity resync). */
bool cache_found_last_run(void);
/* Its file log failed and was retired (the members hold all it had). */
bool cache_retired_last_run(void);
/* what keeps the mount offline (status) */
void cache_set_offline_reason(const char *why);
bool cache_offline(void);
/* Called every second by the member monitor: an offline mount is finished
 * when the members can take the preserved cache, by finish (resync.h's
 * resync_dirty(), handed down so the cache does not call up) and then
 * cache_replay_finish(). */
typedef int cache_finish_fn(struct array *a, bool force, int *count, char *err, size_t errlen);
void cache_monitor(struct array *a, cache_finish_fn *finish);

/* The cache's hooks for the array (array.h), registered by mount.c. */
extern const struct array_hooks cache_hooks;

/* The data path (rf->rw is taken inside). */
ssize_t cache_write(struct rfile *rf, const void *buf, size_t len, uint64_t off);
ssize_t cache_read(struct rfile *rf, void *buf, size_t len, uint64_t off);
int cache_truncate(struct rfile *rf, uint64_t size);
int cache_fsync(struct rfile *rf, bool datasync);
/* fallocate(2) on an open file: mode 0 and FALLOC_FL_KEEP_SIZE allocate
 * the range on every member (stripe_allocate(): -ENOSPC with nothing
 * done when one lacks room), mode 0 then raises the size as a truncate
 * does (cache_truncate()); FALLOC_FL_ZERO_RANGE (room first, then zeros)
 * and FALLOC_FL_PUNCH_HOLE|KEEP_SIZE (zeros, then the whole stripes
 * given back on the members) write zeros as write-through writes do:
 * the cached lines of the range written out and dropped, parity and
 * checksums with the zeros; with KEEP_SIZE never past the end.  Other
 * modes: -EOPNOTSUPP.  0 or -errno. */
int cache_fallocate(struct rfile *rf, int mode, uint64_t off, uint64_t len);
/* lseek(2) SEEK_DATA or SEEK_HOLE: the file's cached lines written out,
 * then stripe_seek().  The offset or -errno (-ENXIO past the end). */
int64_t cache_seek(struct rfile *rf, uint64_t off, int whence);
/* copy_file_range(2): len bytes of `in` at off_in written to `out` at
 * off_out through the cache (cache_read(), cache_write()), 1 MiB at a
 * time, up to the end of `in` and at most 64 MiB per call (the caller
 * asks again for the rest).  Bytes copied, or -errno when none. */
ssize_t cache_copy_range(struct rfile *in, uint64_t off_in, struct rfile *out, uint64_t off_out, size_t len);
/* Forget the clean cached bytes of rf in [off, end): the members' bytes
 * there changed under the cache (mirror copies made alike again:
 * stripe_regen(), stripe_resync(), and read repairs in a scrub).  Dirty bytes, newer than the members', stay.  Caller
 * holds rf->rw exclusively. */
void cache_forget_clean(struct rfile *rf, uint64_t off, uint64_t end);

/* Control (ctl.c).  Each writes a reply for the CLI into buf and returns
 * the exit status: 0 ok, 1 refused. */
int cache_ctl(int argc, char **argv, char *buf, size_t len);
int cache_bbu_ctl(int argc, char **argv, char *buf, size_t len);

struct cache_stats {
	uint64_t size, line_bytes;
	uint32_t lines, dirty_lines;
	uint64_t dirty_bytes;
	uint64_t hits, misses;
	double destage_mbps;		/* over the last few seconds */
	uint64_t destaged_bytes;
	enum cache_wpolicy configured, effective;
	enum cache_rpolicy rpolicy;
	enum bbu_kind bbu;
	enum bbu_state bbu_state;
	unsigned learn_left;		/* seconds */
	uint64_t preserved_bytes;	/* kept from a previous daemon */
	bool offline;			/* the mount waits for members */
	char offline_why[1024];		/* and why */
	const char *bbu_path;
	int log_error;			/* bbu=file: the error its log failed with (errno) */
	bool log_retired;		/* and everything it held is on the members */
	const char *why_wt;		/* why the effective policy is not the configured one */
};
void cache_get_stats(struct cache_stats *st);

#endif
