/*
 * cache.c - the stripe cache (see cache.h for the model and the battery).
 *
 * Lines live in one arena: a header, then per line a persistent header
 * (file id, stripe, size hint, valid and dirty bitmaps), then the line
 * data, 4 KiB aligned.  With bbu=shm the arena is a file in /dev/shm, so
 * a daemon killed with -9 leaves its dirty lines to the next mount; the
 * in-memory index (hash, lists, counters) is rebuilt by nobody: the next
 * mount only replays dirty lines and starts a fresh cache.
 *
 * A line's persistent header is changed in an order that is safe to stop
 * at any point: a line is given to a new stripe with its dirty bitmap
 * empty and its file id cleared first; new bytes are copied before their
 * dirty bits are set.
 *
 * Threads: FUSE threads (cache_write / cache_read), destage threads
 * (destage_main, DESTAGE_PER_MEMBER a member: each has one member I/O in
 * flight at a time, so that many are in flight on every member; two work
 * while the members are fast, destage_pace_locked()), the
 * read-ahead thread, and cache_close.  Lock order: rf->rw, then c->lock,
 * then the log lock (cachelog.c).  A destage thread holds rf->rw shared
 * and marks the lines it writes busy; it writes a copy of each (cow, see
 * destage_copy()), so writers of those lines go on; readers that would go
 * to the members for their stripes wait on c->idle until they are done,
 * as do writers of lines written in place (made whole in order) and
 * writers that must read a partial sector first.
 *
 * The state is one struct cache (cache_one, below), grouped by concern;
 * the exported functions work on cache_one, the static ones on the
 * struct cache they are given.  The decisions - policy in force, room on
 * the members, water marks - are pure functions in cachepolicy.c.
 *
 * ------------------------------------------------------------- write paths
 *
 * fuse.c fs_write_buf / fs_write
 *  -> cache_write                        offline: -EIO; len 0: 0
 *     -> admit                           write-back or not: policy_locked ->
 *        |                               cache_policy_effective, then
 *        |                               cache_room (members_min_free)
 *        |
 *        +- write-back (admitted):
 *        |  write_back                   file marked (stripe_mark_cached with
 *        |  |                            a battery that keeps it, else
 *        |  |                            stripe_mark_dirty); wait_room
 *        |  |                            (back-pressure); rf->rw shared
 *        |  -> wb_fill
 *        |  |  -> put_range, per stripe  bytes into a line (get_line_locked);
 *        |  |                            partial sectors read first
 *        |  |                            (read_sector -> stripe_read_locked);
 *        |  |                            no line free: wb_record, then
 *        |  |                            wait_destage with no lock held
 *        |  -> record_part               bbu=file: cachelog_put_writev
 *        |  -> cachelog_commit           fdatasync of the log, then the
 *        |                               write is acknowledged (rfile_note_acked)
 *        |
 *        +- write-through (not admitted, cache up):
 *        |  write_through                bbu=file with live records: flush_all,
 *        |  |                            cachelog_reset first; rf->rw exclusive
 *        |  -> drop_range_locked         cached lines of the range written out
 *        |  |                            (flush_range_locked) and dropped
 *        |  -> stripe_write_locked       (stripe.c, below)
 *        |  -> record_and_unlock         bbu=file: a record after older ones
 *        |
 *        +- no cache (not started): stripe_write -> stripe_write_locked
 *
 * stripe_write_locked (stripe.c)
 *  -> write_full_stripes -> put_member           whole stripes, parity
 *  |                                             computed, no reads
 *  -> write_group -> shard_write -> put_member   a part of a stripe
 *     put_member -> member_pwritev (member.c) -> io_pwritev_some -> pwritev
 *
 * ----------------------------------------------------------------- destage
 *
 * destage_main (destage_threads() threads; flush_file, drop_range_locked
 * and flush_all without threads go the same way from destage_file_locked
 * on, through flush_range_locked, writing in place: they hold rf->rw
 * exclusively)
 *  -> learn_check_locked                 LEARNING ends on time
 *  -> pick_locked                        a complete line, else the oldest
 *  |                                     ready one (ready_locked)
 *  -> destage_file_locked                up to DESTAGE_BATCH lines of that
 *     |                                  file, marked busy, c->lock dropped
 *     -> destage_lines                   destage threads: cow lines from a
 *     |  |                               copy (destage_copy), the same calls
 *     |  -> stripe_write_stripes_locked  wholly dirty lines inside the file:
 *     |  |                               write_full_stripes -> put_member
 *     |  -> stripe_destage_line          the others: destage_group ->
 *     |                                  destage_range -> shard_write ->
 *     |                                  put_member (stripe.c; reads what
 *     |                                  the parity needs)
 *     -> record_size                     degraded, with a battery
 *     -> note_clean_locked               lines clean, the file's hold let go
 *        (clean_copied_locked)           copied lines: but what was written
 *                                        since the copy
 *  -> cachelog_advance                   bbu=file: the log's tail moves up
 *                                        (log_tail, registered at open)
 *
 * ----------------------------------------------------------------- battery
 *
 *   cache_open: bbu=none -> MISSING (for good); shm, file -> OPTIMAL
 *
 *                    learn                    learn time over
 *        OPTIMAL ------------------> LEARNING ---------------> OPTIMAL
 *         |   ^   <------------------    |
 *         |   |       restore            |
 *    fail |   | restore             fail |
 *         v   |                          |
 *        FAILED <------------------------+
 *
 *   from       to         function                   when
 *   OPTIMAL    LEARNING   cache_bbu_ctl("learn")     bbu learn (refused from
 *                                                    FAILED, or once the log
 *                                                    failed)
 *   LEARNING   OPTIMAL    learn_check_locked         destage thread, learn
 *                                                    time over
 *   LEARNING   OPTIMAL    cache_bbu_ctl("restore")   bbu restore
 *   any        FAILED     cache_bbu_ctl("fail")      bbu fail
 *   any        FAILED     log_failed                 the file log failed
 *                                                    (cachelog_ops.failed)
 *   OPTIMAL    FAILED     cache_start                bbu=shm: no arena in
 *                                                    /dev/shm
 *   FAILED     OPTIMAL    cache_bbu_ctl("restore")   bbu restore (refused once
 *                                                    the log failed)
 *   Each but cache_start's goes through bbu_set_locked (logged, the
 *   destage kicked when write-back ends) and is an event (BbuLearnStart,
 *   BbuLearnDone, BbuRestored, BbuFailed).  A learn during LEARNING starts
 *   the time again.  MISSING never changes: bbu=none refuses every action.
 *   What the states mean for the write policy: cache_policy_effective().
 */
#include <errno.h>
#include <fcntl.h>
#include <fuse_opt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "cache.h"
#include "cachelog.h"
#include "cachepolicy.h"
#include "file.h"
#include "stripe.h"
#include "guard.h"
#include "parity.h"
#include "rebuild.h"
#include "util.h"

#define SECTOR 512u
#define DESTAGE_THREADS 32			/* at most (destage_threads()) */
#define DESTAGE_PER_MEMBER 4
#define DESTAGE_BATCH 16			/* lines per destage round */
#define STUCK_RETRY_NS (1000 * 1000000ull)

struct cache_opts cache_opts = {
	.size = CACHE_DEFAULT_SIZE,
	.wpolicy = WP_WRITEBACK,
	.rpolicy = RP_ADAPTIVE,
	.bbu = BBU_NONE,
	.learn_secs = 30,
	.age_ms = 100,
};

/* ------------------------------------------------------------ the arena */

#define ARENA_MAGIC "RAIDFSC1"
#define ARENA_VERSION 1

struct arena_hdr {
	char magic[8];
	uint32_t version;
	uint32_t sector;
	uint8_t uuid[16];
	uint64_t line_bytes;
	uint32_t nlines;
	uint32_t bm_words;
	uint64_t lhdr_off, lhdr_stride, data_off, total;
	uint32_t nguards;		/* guard slots after the line data (0: none) */
	uint32_t crc;			/* of the bytes before it */
};

struct lhdr {
	uint64_t fid;			/* 0: the line holds nothing */
	uint64_t stripe;
	uint64_t size_hint;		/* file size when the line last changed */
	uint64_t bm[];			/* valid[bm_words], then dirty[bm_words] */
};

enum { L_FREE, L_CLEAN, L_DIRTY };

/* A truncate's record in the file log, kept (the log's tail does not pass
 * it) while the truncate runs: a tail moved past it later syncs the
 * members first (cachelog.c), so until its changes are durable the
 * record is there to do it again. */
struct log_pin {
	uint64_t v, seq;
	SLIST_ENTRY(log_pin) next;
};
SLIST_HEAD(log_pins, log_pin);

struct line {
	struct lhdr *h;
	uint8_t *data;
	struct rfile *rf;		/* while dirty (the file is held) */
	struct line *hnext;
	TAILQ_ENTRY(line) lru;		/* on the list named by `list` */
	uint64_t since;			/* became dirty (ns); retry time when stuck */
	uint64_t log_v, log_seq;	/* file log: oldest record it may need */
	uint32_t ndirty, nvalid;	/* sectors */
	uint8_t list;
	bool busy;			/* being destaged */
	bool cow;			/* busy, but copied before it is written
					 * (destage_copy()): writers go on */
	bool copied;			/* copied: writers set `rewritten` */
	bool scattered;			/* dirty by writes out of order */
	bool ra_reading;		/* the read-ahead is reading it in: a
					 * reader waits for it (ra.filled) */
	uint32_t wend;			/* where the last write ended (bytes) */
	int pins;			/* a writer fills it without the lock */
	uint64_t *was_dirty;		/* the dirty bits the copy took */
	uint64_t *rewritten;		/* sectors written since the copy */
};

/* A destage thread's copy of the line it writes out (destage_copy()). */
struct dcopy {
	uint8_t *data;			/* `lines` lines */
	int lines;
	uint64_t *valid, *dirty;	/* of a partly dirty line */
};
#define DCOPY_BYTES (4u << 20)		/* at most, unless one line is more */

/* A list of lines, least recently used (or oldest dirty) first. */
TAILQ_HEAD(line_list, line);
struct lru {
	struct line_list q;
	uint32_t n;
};

/* A read-ahead request: stripes [s0, s0 + n) of rf (ra_main()). */
struct ra_req {
	struct rfile *rf;
	uint64_t s0;
	uint32_t n;
};
#define RA_QUEUE 32

/*
 * The cache of one mount.  `lock` protects everything in it but what says
 * otherwise; the lock order is rf->rw, then lock, then the log's lock.
 */
struct cache {
	pthread_mutex_t lock;
	pthread_cond_t work;		/* a destage thread has something to do */
	pthread_cond_t space;		/* lines became clean (back-pressure, log room) */
	pthread_cond_t idle;		/* busy lines were written out */
	struct array *a;
	bool up;			/* lines set up (cache_start()) until a clean close */

	/* configuration and policy (the options are cache_opts) */
	struct {
		enum cache_wpolicy configured;	/* as mounted, or `raidfs cache` */
		/* the members' free space (admit()): measured at t, of
		 * which write-back admitted `used` since; low: write-through */
		uint64_t space_free, space_used, space_t;
		bool space_low;
	} pol;

	/* the battery */
	struct {
		enum bbu_state state;
		uint64_t learn_end;		/* ns, while LEARNING */
		bool shm_up;			/* this run's arena is in /dev/shm */
	} bbu;

	/* memory: the arena, its lines, their hash and lists */
	struct {
		uint8_t *arena;
		size_t arena_len;
		char shm_path[PATH_MAX];
		uint64_t line_bytes;
		uint32_t nsec, bmw, nlines;	/* sectors, bitmap words a line; lines */
		struct line *lines;
		uint64_t *copy_bits;		/* the lines' was_dirty, rewritten */
		struct line **hash;
		uint32_t hmask;
		struct lru free, clean, dirty;
		uint64_t dirty_sectors;
		uint32_t high, low;		/* dirty-line water marks */
	} mem;

	/* the destage threads (destage_main()) */
	struct {
		bool stop;
		pthread_t thr[DESTAGE_THREADS];
		int nthr;
		int started;			/* threads that took their index */
		int active;			/* threads with an index below it
						 * destage (destage_pace_locked()) */
		int draining;			/* flush everything (count of requesters) */
	} dst;

	/* the thread that faults the arena in at mount (prefault_main()) */
	struct {
		pthread_t thr;
		bool started;
	} pf;

	/* the read-ahead thread (ra_main()): a ring of requests */
	struct {
		pthread_cond_t cond;
		pthread_cond_t filled;		/* a line's ra_reading ended */
		struct ra_req q[RA_QUEUE];
		uint32_t head, tail;
		pthread_t thr;
		bool started;
	} ra;

	/* the file log (bbu=file) */
	struct {
		struct log_pins pins;		/* truncates in flight */
		pthread_mutex_t noted_lock;	/* log_noted() */
		bool noted;
	} log;

	/* what the last run left, until it is written (replay) or discarded */
	struct {
		pthread_mutex_t lock;		/* replay and discard one at a time;
						 * taken before `lock` */
		struct arena_hdr *old;		/* its mapped shm arena, or NULL */
		size_t old_len;
		uint64_t dirty_bytes;
		bool has_log;			/* its file log holds records */
		bool guarded;			/* its cache kept guard slots */
		bool found;			/* its arena or log was found */
		bool retired;			/* its log was retired (it failed) */
	} last;

	/* the mount waits offline for members (preserved cache) */
	struct {
		bool on;			/* atomic */
		bool told;
		char why[1024];			/* under lock */
		bool closing;			/* unmount began (under last.lock) */
	} off;

	/* statistics */
	struct {
		uint64_t hits, misses, destaged_bytes;
		uint64_t rate_t0, rate_b0;	/* destage rate window */
		double rate;			/* MB/s */
	} stats;
};

/* The one cache (the exported API works on it). */
static struct cache cache_one = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
	.space = PTHREAD_COND_INITIALIZER,
	.idle = PTHREAD_COND_INITIALIZER,
	.ra.cond = PTHREAD_COND_INITIALIZER,
	.ra.filled = PTHREAD_COND_INITIALIZER,
	.log.noted_lock = PTHREAD_MUTEX_INITIALIZER,
	.last.lock = PTHREAD_MUTEX_INITIALIZER,
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* An absolute CLOCK_REALTIME deadline ms from now (condition waits). */
static struct timespec deadline_ms(unsigned ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/* ---------------------------------------------------------- names, opts */

/* Names, indexed by the enums (the same spelling is parsed back). */
static const char *const wpolicy_names[] = {
	[WP_WRITEBACK] = "writeback",
	[WP_ALWAYS_WRITEBACK] = "always-writeback",
	[WP_WRITETHROUGH] = "writethrough",
};
static const char *const rpolicy_names[] = { [RP_ADAPTIVE] = "adaptive", [RP_RA] = "ra", [RP_NORA] = "nora" };
static const char *const bbu_state_names[] = {
	[BBU_OPTIMAL] = "optimal", [BBU_LEARNING] = "learning", [BBU_FAILED] = "failed", [BBU_MISSING] = "missing",
};
static const char *const bbu_kind_names[] = { [BBU_NONE] = "none", [BBU_SHM] = "shm", [BBU_FILE] = "file" };

#define NAME_OF(table, v) ((unsigned)(v) < sizeof(table) / sizeof(table[0]) ? table[v] : "?")

const char *cache_wpolicy_name(enum cache_wpolicy p) { return NAME_OF(wpolicy_names, p); }
const char *cache_rpolicy_name(enum cache_rpolicy p) { return NAME_OF(rpolicy_names, p); }
const char *bbu_state_name(enum bbu_state s) { return NAME_OF(bbu_state_names, s); }
const char *bbu_kind_name(enum bbu_kind k) { return NAME_OF(bbu_kind_names, k); }

/* Index of `s` in a name table, or -1. */
static int name_index(const char *const *table, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(table[i], s))
			return (int)i;
	return -1;
}
#define parse_wpolicy(s) name_index(wpolicy_names, sizeof(wpolicy_names) / sizeof(wpolicy_names[0]), (s))
#define parse_rpolicy(s) name_index(rpolicy_names, sizeof(rpolicy_names) / sizeof(rpolicy_names[0]), (s))

/* The cache's mount options (-o NAME=VALUE), and cache_opt_parse(). */
enum { COPT_SIZE, COPT_WPOLICY, COPT_RPOLICY, COPT_BBU, COPT_LEARN, COPT_AGE, COPT_MSYNC, COPT_DESTAGE };
static const struct fuse_opt cache_opt_table[] = {
	FUSE_OPT_KEY("cache_size=", COPT_SIZE),
	FUSE_OPT_KEY("write_policy=", COPT_WPOLICY),
	FUSE_OPT_KEY("read_policy=", COPT_RPOLICY),
	FUSE_OPT_KEY("bbu=", COPT_BBU),
	FUSE_OPT_KEY("bbu_learn_time=", COPT_LEARN),
	FUSE_OPT_KEY("cache_age=", COPT_AGE),
	FUSE_OPT_KEY("member_sync=", COPT_MSYNC),
	FUSE_OPT_KEY("destage_threads=", COPT_DESTAGE),
	FUSE_OPT_END
};

/* v is a number from 0 to max (digits, not empty): into *out */
static bool parse_ulong_max(const char *v, unsigned long max, unsigned long *out)
{
	char *end;
	*out = strtoul(v, &end, 10);
	return *v && !*end && *out <= max;
}

/* fuse_opt_parse() callback: one option of cache_opt_table (arg is
 * "NAME=VALUE"); everything else stays for the next table (1). */
static int cache_opt(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	static const char *const msync_names[] = { [MSYNC_ALWAYS] = "always", [MSYNC_FLUSH] = "flush",
						   [MSYNC_NEVER] = "never" };
	if (key < 0)
		return 1;
	const char *v = strchr(arg, '=') + 1;
	uint64_t sz;
	unsigned long n;
	int p;
	switch (key) {
	case COPT_SIZE:
		if (parse_size(v, &sz) < 0 || sz < (1u << 20))
			break;
		cache_opts.size = sz;
		return 0;
	case COPT_WPOLICY:
		if ((p = parse_wpolicy(v)) < 0)
			break;
		cache_opts.wpolicy = p;
		return 0;
	case COPT_RPOLICY:
		if ((p = parse_rpolicy(v)) < 0)
			break;
		cache_opts.rpolicy = p;
		return 0;
	case COPT_BBU:
		if (!strcmp(v, "none"))
			cache_opts.bbu = BBU_NONE;
		else if (!strcmp(v, "shm"))
			cache_opts.bbu = BBU_SHM;
		else if (!strncmp(v, "file:", 5) && v[5] == '/' && strlen(v + 5) < sizeof(cache_opts.bbu_path)) {
			cache_opts.bbu = BBU_FILE;
			snprintf(cache_opts.bbu_path, sizeof(cache_opts.bbu_path), "%s", v + 5);
		} else
			break;
		return 0;
	case COPT_LEARN:
		if (!parse_ulong_max(v, 86400, &n))
			break;
		cache_opts.learn_secs = n;
		return 0;
	case COPT_AGE:
		if (!parse_ulong_max(v, 3600000, &n))
			break;
		cache_opts.age_ms = n;
		return 0;
	case COPT_MSYNC:
		if ((p = name_index(msync_names, 3, v)) < 0)
			break;
		member_sync_mode = p;
		return 0;
	case COPT_DESTAGE:
		if (!parse_ulong_max(v, DESTAGE_THREADS, &n) || n == 0)
			break;
		cache_opts.destage_threads = n;
		return 0;
	}
	static const struct { const char *what, *hint; } bad[] = {
		[COPT_SIZE] = { "bad cache size", "give a size of at least 1M (for example cache_size=256M)" },
		[COPT_WPOLICY] = { "unknown write policy", "use writeback, writethrough or always-writeback" },
		[COPT_RPOLICY] = { "unknown read policy", "use ra, nora or adaptive" },
		[COPT_BBU] = { "bad battery", "use bbu=none, bbu=shm or bbu=file:/ABSOLUTE/PATH" },
		[COPT_LEARN] = { "bad learn time", "give seconds (0 to 86400)" },
		[COPT_AGE] = { "bad cache age", "give milliseconds (0 to 3600000)" },
		[COPT_MSYNC] = { "bad member_sync", "use always, flush or never" },
		[COPT_DESTAGE] = { "bad destage_threads", "give 1 to 32" },
	};
	fprintf(stderr, "raidfs: %s '%s' (-o %.*s): %s\n", bad[key].what, v, (int)(v - 1 - arg), arg, bad[key].hint);
	return -1;
}

int cache_opt_parse(struct fuse_args *args)
{
	return fuse_opt_parse(args, NULL, cache_opt_table, cache_opt);
}

/* ------------------------------------------------------ policy, battery */

/* The policy as configured and as the battery and the log allow, and
 * (space: the members' free space counts) while the members have room. */
static enum cache_wpolicy policy_locked(struct cache *c, bool space, const char **why)
{
	struct cache_policy_in in = {
		.configured = c->pol.configured,
		.bbu = cache_opts.bbu,
		.state = c->bbu.state,
		.log_failed = cachelog_failed(),
		.space_low = space && c->pol.space_low,
	};
	return cache_policy_effective(&in, why);
}

/* The policy in force: also write-through while the members are nearly
 * full (admit()). */
static enum cache_wpolicy effective_locked(struct cache *c, const char **why)
{
	return policy_locked(c, true, why);
}

static bool writeback_now(struct cache *c)
{
	pthread_mutex_lock(&c->lock);
	bool wb = c->up && effective_locked(c, NULL) == WP_WRITEBACK;
	pthread_mutex_unlock(&c->lock);
	return wb;
}

/* Free bytes of the fullest member that takes writes. */
static uint64_t members_min_free(const struct array *a)
{
	uint64_t min = UINT64_MAX;
	for (uint32_t j = 0; j < a->width; j++) {
		struct statvfs sv;
		if (member_writable(a, j) && fstatvfs(a->m[j].dirfd, &sv) == 0 &&
		    (uint64_t)sv.f_bavail * sv.f_frsize < min)
			min = (uint64_t)sv.f_bavail * sv.f_frsize;
	}
	return min;
}

/*
 * Does this write go to the cache?  Write-back by policy and battery
 * (policy_locked() without the space), and room for it on the members
 * (cache_room()): a controller's disks never fill up; the members'
 * filesystems do.  Write-back acknowledges a write before the members
 * hold it, so it is used only while every member has room for all that
 * the cache may still have to write there.  Closer to full, writes go
 * through, and a write the members cannot take gets their ENOSPC: no
 * acknowledged byte is left without a place.  The free space is measured
 * (members_min_free(), without the lock) at most every
 * CACHE_SPACE_PERIOD_NS and counted down in between by what was admitted.
 */
static bool admit(struct cache *c, size_t len)
{
	uint64_t t = now_ns();
	pthread_mutex_lock(&c->lock);
	if (!c->up || policy_locked(c, false, NULL) != WP_WRITEBACK) {
		pthread_mutex_unlock(&c->lock);
		return false;	/* not write-back anyway */
	}
	uint64_t dirty = c->mem.dirty_sectors * SECTOR;
	if (cache_room(dirty, len, c->pol.space_free, c->pol.space_used, t - c->pol.space_t, false) == CACHE_ROOM_ADMIT) {
		c->pol.space_used += len;
		pthread_mutex_unlock(&c->lock);
		return true;
	}
	pthread_mutex_unlock(&c->lock);
	uint64_t free_now = members_min_free(c->a);
	pthread_mutex_lock(&c->lock);
	c->pol.space_free = free_now;
	c->pol.space_t = t;
	c->pol.space_used = 0;
	/* (the dirty bytes as they were when the count fell short) */
	bool ok = cache_room(dirty, len, free_now, 0, 0, true) == CACHE_ROOM_ADMIT;
	if (ok)
		c->pol.space_used = len;
	if (ok == c->pol.space_low) {
		c->pol.space_low = !ok;
		if (ok)
			log_info("array '%s': the members have room again: write-back resumes", c->a->sb.name);
		else
			log_warn("array '%s': a member has %llu MiB free, less than the cache may have to write: writes go through until there is room",
				 c->a->sb.name, (unsigned long long)(free_now >> 20));
	}
	pthread_mutex_unlock(&c->lock);
	return ok;
}

/* ------------------------------------------------------------ the lines */

#define VALID(ln) ((ln)->h->bm)
#define DIRTY(c, ln) ((ln)->h->bm + (c)->mem.bmw)

static inline bool bit(const uint64_t *bm, uint32_t i)
{
	return bm[i / 64] >> (i % 64) & 1;
}

static inline void set_bit(uint64_t *bm, uint32_t i)
{
	bm[i / 64] |= 1ull << (i % 64);
}

static inline void clear_bit(uint64_t *bm, uint32_t i)
{
	bm[i / 64] &= ~(1ull << (i % 64));
}

static void lru_del(struct lru *l, struct line *ln)
{
	TAILQ_REMOVE(&l->q, ln, lru);
	l->n--;
}

static void lru_add(struct lru *l, struct line *ln)
{
	TAILQ_INSERT_TAIL(&l->q, ln, lru);
	l->n++;
}

static struct lru *list_of(struct cache *c, struct line *ln)
{
	return ln->list == L_FREE ? &c->mem.free : ln->list == L_CLEAN ? &c->mem.clean : &c->mem.dirty;
}

static void move_to(struct cache *c, struct line *ln, int list)
{
	lru_del(list_of(c, ln), ln);
	ln->list = list;
	lru_add(list_of(c, ln), ln);
}

static unsigned hash_of(struct cache *c, uint64_t fid, uint64_t s)
{
	uint64_t h = (fid ^ (s * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
	return (unsigned)(h >> 32) & c->mem.hmask;
}

static struct line *lookup_locked(struct cache *c, uint64_t fid, uint64_t s)
{
	for (struct line *ln = c->mem.hash[hash_of(c, fid, s)]; ln; ln = ln->hnext)
		if (ln->h->fid == fid && ln->h->stripe == s)
			return ln;
	return NULL;
}

static void unhash_locked(struct cache *c, struct line *ln)
{
	struct line **pp = &c->mem.hash[hash_of(c, ln->h->fid, ln->h->stripe)];
	while (*pp && *pp != ln)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = ln->hnext;
	ln->hnext = NULL;
}

/* Forget a clean line's contents (it goes to the free list). */
static void drop_clean_locked(struct cache *c, struct line *ln)
{
	unhash_locked(c, ln);
	__atomic_store_n(&ln->h->fid, 0, __ATOMIC_RELEASE);
	memset(ln->h->bm, 0, 2 * c->mem.bmw * sizeof(uint64_t));
	ln->nvalid = 0;
	move_to(c, ln, L_FREE);
}

/* A line for (rf, s): the one there, a free one, or the least recently
 * used clean one.  NULL when every line is dirty, busy or pinned. */
static struct line *get_line_locked(struct cache *c, struct rfile *rf, uint64_t s)
{
	struct line *ln = lookup_locked(c, rf->id, s);
	if (ln)
		return ln;
	ln = TAILQ_FIRST(&c->mem.free.q);
	if (!ln) {
		for (ln = TAILQ_FIRST(&c->mem.clean.q); ln && ln->pins; ln = TAILQ_NEXT(ln, lru))
			;
		if (!ln)
			return NULL;
		drop_clean_locked(c, ln);
	}
	struct lhdr *h = ln->h;
	h->stripe = s;
	h->size_hint = 0;
	__atomic_store_n(&h->fid, rf->id, __ATOMIC_RELEASE);
	ln->hnext = c->mem.hash[hash_of(c, rf->id, s)];
	c->mem.hash[hash_of(c, rf->id, s)] = ln;
	move_to(c, ln, L_CLEAN);
	return ln;
}

/* Does a dirty line's content outlive a kill -9 of the daemon (the file
 * log, or the arena in /dev/shm)?  Then a file changed only through the
 * cache gets the cache's dirty mark: the replay alone makes it whole. */
static bool battery_kept(struct cache *c)
{
	return cache_opts.bbu == BBU_FILE || (cache_opts.bbu == BBU_SHM && c->bbu.shm_up);
}

/* (and from now on: not once the file log failed - what it held before
 * still counts, battery_kept()) */
static bool kept(struct cache *c)
{
	return battery_kept(c) && !cachelog_failed();
}

/* Does the file's cache mark cover lines destaged now (stripe_log_covered()):
 * the cache is kept, and the lines are guarded or every write to the file
 * is in the log? */
static bool log_covers(struct cache *c, const struct rfile *rf, bool guarded)
{
	return kept(c) && (guarded || !__atomic_load_n(&rf->unlogged, __ATOMIC_ACQUIRE));
}

/* bbu=file: before this run's first cache mark, the members note which log
 * the marks rely on (array_note_cache_log()); false when they could not. */
static bool log_noted(struct cache *c)
{
	if (cache_opts.bbu != BBU_FILE || __atomic_load_n(&c->log.noted, __ATOMIC_ACQUIRE))
		return true;
	pthread_mutex_lock(&c->log.noted_lock);
	if (!c->log.noted && array_note_cache_log(c->a, cachelog_id(), false) == 0)
		__atomic_store_n(&c->log.noted, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->log.noted_lock);
	return c->log.noted;
}

/* The line became dirty: the file is held until it is clean again. */
static void note_dirty_locked(struct cache *c, struct line *ln, struct rfile *rf)
{
	move_to(c, ln, L_DIRTY);
	ln->since = now_ns();
	ln->rf = rf;
	if (cache_opts.bbu == BBU_FILE)
		cachelog_position(&ln->log_v, &ln->log_seq);
	if (rf->cache_dirty++ == 0)
		rfile_hold(rf);
}

/* The line's dirty sectors are on the members now.  Returns true when its
 * file has no dirty line left (the caller releases the file's hold). */
static bool note_clean_locked(struct cache *c, struct line *ln)
{
	struct rfile *rf = ln->rf;
	memset(DIRTY(c, ln), 0, c->mem.bmw * sizeof(uint64_t));
	c->mem.dirty_sectors -= ln->ndirty;
	ln->ndirty = 0;
	ln->rf = NULL;
	ln->scattered = false;
	move_to(c, ln, L_CLEAN);
	return --rf->cache_dirty == 0;
}

/* Is every sector of [x, y) (bytes in the line) set in bm? */
static bool range_set(const uint64_t *bm, uint64_t x, uint64_t y)
{
	for (uint32_t i = x / SECTOR; i < (y + SECTOR - 1) / SECTOR; i++)
		if (!bit(bm, i))
			return false;
	return true;
}

/* --------------------------------------------------------------- destage */

/* Is line ln wholly dirty and inside the file?  (Of a busy line, asked
 * only when it is not cow: then its bits do not change.) */
static bool whole_line(struct cache *c, const struct line *ln, uint64_t size)
{
	return ln->ndirty == c->mem.nsec && (ln->h->stripe + 1) * c->mem.line_bytes <= size;
}

/*
 * Write out cow lines from a copy: v[0], or the run of consecutive wholly
 * dirty lines it starts (at most cp->lines; *taken says how many).  Their
 * bytes and bits are copied under c->lock, and from then on writers go on
 * with the lines (put_range() notes what they write in `rewritten`); the
 * destage writes the copy, and clean_copied_locked() clears only the
 * dirty bits nobody set again.  Whether the file's cache mark covers the
 * lines (stripe_log_covered(), bbu=file) is decided at the copy: a writer
 * may have put bytes into them since the batch began, whose record is not
 * durable yet.
 */
static int destage_copy(struct cache *c, struct rfile *rf, struct line **v, int n, struct dcopy *cp, bool guarded,
			int *taken)
{
	size_t bw = c->mem.bmw * sizeof(uint64_t);
	uint64_t lb = c->mem.line_bytes, s = v[0]->h->stripe;
	const uint8_t *sd[DESTAGE_BATCH];
	int k = 0;
	pthread_mutex_lock(&c->lock);
	uint64_t size = __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE);
	bool whole = whole_line(c, v[0], size);
	do {
		struct line *ln = v[k];
		memcpy(cp->data + k * lb, ln->data, lb);
		memcpy(ln->was_dirty, DIRTY(c, ln), bw);
		memset(ln->rewritten, 0, bw);
		ln->copied = true;
		sd[k] = cp->data + k * lb;
		k++;
	} while (whole && k < n && k < cp->lines && v[k]->cow && v[k]->h->stripe == s + k && whole_line(c, v[k], size));
	if (!whole) {
		memcpy(cp->valid, VALID(v[0]), bw);
		memcpy(cp->dirty, DIRTY(c, v[0]), bw);
	}
	bool covered = log_covers(c, rf, guarded);
	pthread_mutex_unlock(&c->lock);
	*taken = k;
	stripe_log_covered(covered);
	if (whole)
		return stripe_write_stripes_locked(rf, s, k, sd);
	return stripe_destage_line(rf, s, cp->data, cp->valid, cp->dirty, SECTOR);
}

/*
 * Write lines v[0..n) of rf (sorted by stripe, dirty) to the members.
 * rf->rw is held (shared by the destage threads: the lines are busy).  Wholly dirty lines that lie inside the
 * file go out as whole stripes, consecutive ones in one batch (no reads);
 * the others by stripe_destage_line (which reads what parity needs, the
 * cheaper of reconstruct-write and read-modify-write), from a copy when
 * they are cow (destage_copy()).  Bytes past the file's end are never
 * written, so the shards keep the lengths the size implies.  covered:
 * the batch's stripe_log_covered() (guarded: that of the cow lines).
 */
static int destage_lines(struct cache *c, struct rfile *rf, struct line **v, int n, struct dcopy *cp, bool covered,
			 bool guarded)
{
	uint64_t size = rf->size;
	int ret = 0;
	for (int i = 0; i < n && ret == 0;) {
		struct line *ln = v[i];
		uint64_t s = ln->h->stripe;
		if (ln->cow) {
			int k;
			ret = destage_copy(c, rf, v + i, n - i, cp, guarded, &k);
			i += k;
			continue;
		}
		stripe_log_covered(covered);
		if (whole_line(c, ln, size)) {
			const uint8_t *sd[16];
			int k = 0;
			while (i + k < n && k < 16 && v[i + k]->h->stripe == s + k && !v[i + k]->cow &&
			       whole_line(c, v[i + k], size)) {
				sd[k] = v[i + k]->data;
				k++;
			}
			ret = stripe_write_stripes_locked(rf, s, k, sd);
			i += k;
			continue;
		}
		ret = stripe_destage_line(rf, s, ln->data, VALID(ln), DIRTY(c, ln), SECTOR);
		i++;
	}
	stripe_log_covered(false);
	return ret;
}

/* A cow line was written out from its copy: the dirty bits the copy took
 * are cleared, but for sectors written again since.  The bytes written
 * out; *release as note_clean_locked() when no dirty sector is left. */
static uint64_t clean_copied_locked(struct cache *c, struct line *ln, bool *release)
{
	uint32_t n = 0;
	for (uint32_t w = 0; w < c->mem.bmw; w++) {
		uint64_t done = ln->was_dirty[w] & ~ln->rewritten[w];
		DIRTY(c, ln)[w] &= ~done;
		n += (uint32_t)__builtin_popcountll(done);
	}
	ln->ndirty -= n;
	c->mem.dirty_sectors -= n;
	if (ln->ndirty == 0 && note_clean_locked(c, ln))
		*release = true;
	return (uint64_t)n * SECTOR;
}

static int cmp_stripe(const void *x, const void *y)
{
	const struct line *a = *(struct line *const *)x, *b = *(struct line *const *)y;
	return a->h->stripe < b->h->stripe ? -1 : a->h->stripe > b->h->stripe;
}

static void rate_note_locked(struct cache *c, uint64_t bytes)
{
	c->stats.destaged_bytes += bytes;
	uint64_t t = now_ns();
	if (t - c->stats.rate_t0 >= 2000000000ull) {
		c->stats.rate = (double)(c->stats.destaged_bytes - c->stats.rate_b0) / ((t - c->stats.rate_t0) / 1e9) / 1e6;
		c->stats.rate_t0 = t;
		c->stats.rate_b0 = c->stats.destaged_bytes;
	}
}

/*
 * Destage rf's dirty lines whose stripes lie in [s0, s1) (all: 0, ~0),
 * at most `max` of them.  The caller holds rf->rw (shared: destage threads;
 * exclusively: flush, write-through) and c->lock;
 * the lock is dropped during the I/O.  Returns 0, or -errno when the
 * members could not take the data (the lines stay dirty and are retried
 * later).  *release: the file has no dirty line left; the caller drops
 * the cache's hold after unlocking everything.
 */
static bool ready_locked(struct cache *c, const struct line *ln, uint64_t t, bool pressure);

/*
 * The file grew, and a member is missing: the mount after a crash finds
 * its size in the shards' lengths and, for what the missing member may
 * hold, in the recorded size - a tail that only the missing member's
 * chunk holds (its bytes in the parity) is in neither.  So the size is
 * recorded before the lines that grew it go clean (their log records
 * with them).  The size recorded is what acknowledged writes reach,
 * whose bytes not on the members yet the battery keeps; without one (always-writeback, no
 * battery) nothing is recorded: a crash loses what the cache held
 * anyway, and a size past the bytes there would read as zeros.
 */
static int record_size(struct cache *c, struct rfile *rf)
{
	/* (how far acknowledged writes reach: the size grows before a
	 * write is taken, and one not acknowledged yet must not leave the
	 * file longer after a crash) */
	return array_absent_count(rf->a) == 0 || !battery_kept(c) ? 0 : stripe_record_acked(rf);
}

static int destage_file_locked(struct cache *c, struct rfile *rf, uint64_t s0, uint64_t s1, int max, bool *release,
			       struct dcopy *cp)
{
	struct line *v[DESTAGE_BATCH];
	int n = 0, ret = 0;
	uint64_t t = now_ns();
	bool pressure = max > 0;	/* max < 0: only lines ready to go */
	*release = false;
	if (max < 0)
		max = -max;
	if (max > DESTAGE_BATCH)
		max = DESTAGE_BATCH;
	for (struct line *ln = TAILQ_FIRST(&c->mem.dirty.q); ln && n < max; ln = TAILQ_NEXT(ln, lru))
		if (ln->rf == rf && !ln->busy && !ln->pins && ln->h->stripe >= s0 && ln->h->stripe < s1 &&
		    ready_locked(c, ln, t, pressure))
			v[n++] = ln;
	if (n == 0)
		return 0;
	for (int i = 0; i < n; i++) {
		v[i]->busy = true;
		/* copied, unless made wholly dirty by writes in order (a
		 * sequential writer, who does not come back): those go out
		 * in place */
		v[i]->cow = cp && (v[i]->scattered || !whole_line(c, v[i], rf->size));
	}
	qsort(v, n, sizeof(v[0]), cmp_stripe);
	pthread_mutex_unlock(&c->lock);
	/* with a file log every dirty line's bytes are in the log until the
	 * line is clean: a crash in the middle is repaired by the replay -
	 * not while a write's bytes are in a line and its record is not
	 * durable yet (a full line goes at once): a crash could then leave a
	 * stripe half written that no record covers, so the file gets its
	 * plain mark (a resync) first; unless every stripe of a raid5 has
	 * its absent member's data chunk in a guard slot, or no parity to
	 * cut (the mount puts the chunk back and remakes the parity: a
	 * resync could not, without that member; raid6 has stripes where the
	 * absent member held P or Q, which take no slot) */
	bool guarded = rf->lay.level == LEVEL_RAID5 && array_absent_count(rf->a) > 0 && guard_on();
	bool covered = log_covers(c, rf, guarded);
	ret = destage_lines(c, rf, v, n, cp, covered, guarded);
	if (ret == 0)
		ret = record_size(c, rf);
	pthread_mutex_lock(&c->lock);
	uint64_t bytes = 0;
	for (int i = 0; i < n; i++) {
		v[i]->busy = false;
		if (ret == 0 && v[i]->copied) {
			bytes += clean_copied_locked(c, v[i], release);
		} else if (ret == 0) {
			bytes += (uint64_t)v[i]->ndirty * SECTOR;
			if (note_clean_locked(c, v[i]))
				*release = true;
		} else {
			v[i]->since = now_ns() + STUCK_RETRY_NS;	/* not before */
		}
		v[i]->cow = v[i]->copied = false;
	}
	rate_note_locked(c, bytes);
	pthread_cond_broadcast(&c->space);
	pthread_cond_broadcast(&c->idle);
	return ret;
}

/* Someone waits for rf's lines in [s0, s1): try them now, also those
 * waiting to retry a failed write.  Returns how many are dirty. */
static int want_now_locked(struct cache *c, struct rfile *rf, uint64_t s0, uint64_t s1)
{
	int n = 0;
	struct line *ln;
	TAILQ_FOREACH(ln, &c->mem.dirty.q, lru)
		if (ln->rf == rf && ln->h->stripe >= s0 && ln->h->stripe < s1) {
			ln->since = 0;
			n++;
		}
	return n;
}

/* Destage all of rf's dirty lines in [s0, s1).  rf->rw held exclusively,
 * c->lock held.  -EIO when some cannot be written (they stay dirty). */
static int flush_range_locked(struct cache *c, struct rfile *rf, uint64_t s0, uint64_t s1, bool *release)
{
	bool rel;
	*release = false;
	while (want_now_locked(c, rf, s0, s1) > 0) {
		int r = destage_file_locked(c, rf, s0, s1, DESTAGE_BATCH, &rel, NULL);
		*release |= rel;
		if (r < 0)
			return r;
	}
	return 0;
}

/* Destage all of rf's dirty lines in [s0, s1).  Takes rf->rw. */
static int flush_file(struct cache *c, struct rfile *rf, uint64_t s0, uint64_t s1)
{
	int ret;
	bool release;
	pthread_rwlock_wrlock(&rf->rw);
	pthread_mutex_lock(&c->lock);
	ret = flush_range_locked(c, rf, s0, s1, &release);
	pthread_mutex_unlock(&c->lock);
	pthread_rwlock_unlock(&rf->rw);
	if (release)
		rfile_release(rf);
	return ret;
}

static bool pressure_locked(struct cache *c)
{
	return c->dst.draining || c->dst.stop || c->mem.dirty.n >= c->mem.low || effective_locked(c, NULL) != WP_WRITEBACK;
}

/* May line ln be written out now?  A complete line may; a partial one
 * once it waited cache_age for more bytes, or under pressure; a line
 * whose last destage failed only after its retry time. */
static bool ready_locked(struct cache *c, const struct line *ln, uint64_t t, bool pressure)
{
	if (ln->since > t)
		return false;
	if (ln->nvalid == c->mem.nsec && ln->ndirty == c->mem.nsec)
		return true;
	return pressure || t - ln->since >= (uint64_t)cache_opts.age_ms * 1000000ull;
}

/* Which line should a destage thread write next?  Complete lines first,
 * then the oldest that is ready. */
static struct line *pick_locked(struct cache *c)
{
	uint64_t t = now_ns();
	bool pressure = pressure_locked(c);
	struct line *oldest = NULL;
	int scanned = 0;
	for (struct line *ln = TAILQ_FIRST(&c->mem.dirty.q); ln && scanned < 256; ln = TAILQ_NEXT(ln, lru), scanned++) {
		if (ln->busy || ln->pins || !ready_locked(c, ln, t, pressure))
			continue;
		if (ln->nvalid == c->mem.nsec && ln->ndirty == c->mem.nsec)
			return ln;
		if (!oldest)
			oldest = ln;
	}
	return oldest;
}

static void learn_check_locked(struct cache *c);

/* A destage thread's copy buffer (struct dcopy), or NULL when there is
 * no memory for one: its lines are then written in place (writers wait). */
static struct dcopy *dcopy_new(struct cache *c)
{
	size_t bw = c->mem.bmw * sizeof(uint64_t);
	struct dcopy *cp = malloc(sizeof(*cp) + 2 * bw);
	int lines = DCOPY_BYTES / c->mem.line_bytes;
	if (lines < 1)
		lines = 1;
	if (lines > DESTAGE_BATCH)
		lines = DESTAGE_BATCH;
	if (cp && posix_memalign((void **)&cp->data, 4096, (size_t)lines * c->mem.line_bytes) != 0) {
		free(cp);
		cp = NULL;
	}
	if (cp) {
		cp->lines = lines;
		cp->valid = (uint64_t *)(cp + 1);
		cp->dirty = cp->valid + c->mem.bmw;
	}
	return cp;
}

/* How many destage threads: each writes one line (or run of whole
 * lines) at a time and waits for each member I/O of it, so the threads
 * are what keeps several I/Os in flight on every member (a disk's queue,
 * a controller's several destages); on fast members the two cores do the
 * work and the extra threads sleep on c->work. */
static uint32_t destage_threads(const struct array *a)
{
	if (cache_opts.destage_threads)
		return cache_opts.destage_threads;
	uint32_t n = a->width * DESTAGE_PER_MEMBER;
	return n < 2 ? 2 : n > DESTAGE_THREADS ? DESTAGE_THREADS : n;
}

/*
 * How many destage threads work: two (the cores), and one more after
 * each batch that waited for the members (DESTAGE_WAITS voluntary context
 * switches or more: a disk's latency, injected or real), one fewer after
 * each that did not.  On members as fast as memory the extra threads
 * would only take the CPU from the writers; on slow ones they are what
 * keeps I/Os in flight.  Preemption does not count: it is involuntary.
 */
#define DESTAGE_WAITS 4
static void destage_pace_locked(struct cache *c, long waits)
{
	if (waits >= DESTAGE_WAITS && c->dst.active < c->dst.nthr) {
		c->dst.active++;
		pthread_cond_broadcast(&c->work);
	} else if (waits < DESTAGE_WAITS && c->dst.active > 2) {
		c->dst.active--;
	}
}

static long voluntary_switches(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nvcsw : 0;
}

static void *destage_main(void *arg)
{
	struct cache *c = arg;
	struct dcopy *cp = dcopy_new(c);
	pthread_mutex_lock(&c->lock);
	int idx = c->dst.started++;
	while (!c->dst.stop) {
		learn_check_locked(c);
		struct line *ln = idx < c->dst.active ? pick_locked(c) : NULL;
		if (!ln) {
			struct timespec ts = deadline_ms(20);
			pthread_cond_timedwait(&c->work, &c->lock, &ts);
			continue;
		}
		struct rfile *rf = ln->rf;
		rfile_hold(rf);		/* it may get clean (and released) meanwhile */
		pthread_mutex_unlock(&c->lock);
		/* shared: writers and readers of the file's other stripes go
		 * on; those of the lines being written wait for them (busy) */
		pthread_rwlock_rdlock(&rf->rw);
		pthread_mutex_lock(&c->lock);
		bool release = false;
		/* the picked line and what follows it in the file first */
		uint64_t s = ln->rf == rf ? ln->h->stripe : 0;
		long sw = voluntary_switches();
		destage_file_locked(c, rf, s, ~0ull, pressure_locked(c) ? DESTAGE_BATCH : -DESTAGE_BATCH, &release, cp);
		destage_pace_locked(c, voluntary_switches() - sw);
		pthread_mutex_unlock(&c->lock);
		pthread_rwlock_unlock(&rf->rw);
		if (release)
			rfile_release(rf);
		rfile_release(rf);
		if (cache_opts.bbu == BBU_FILE)
			cachelog_advance();
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	if (cp)
		free(cp->data);
	free(cp);
	return NULL;
}

static void kick_locked(struct cache *c)
{
	pthread_cond_broadcast(&c->work);
}

/*
 * Write every dirty line out.  0, or -EIO when some cannot be written
 * (too many members lost): they stay in the cache.
 */
static int flush_all(struct cache *c)
{
	int ret = 0;
	pthread_mutex_lock(&c->lock);
	c->dst.draining++;
	kick_locked(c);
	while (c->mem.dirty.n > 0) {
		bool stuck = false;
		for (struct line *ln = TAILQ_FIRST(&c->mem.dirty.q); ln && !stuck; ln = TAILQ_NEXT(ln, lru))
			stuck = !ln->busy && ln->since > now_ns();
		if (stuck && !array_writable(c->a)) {
			ret = -EIO;
			break;
		}
		if (c->dst.nthr == 0) {
			/* no destage threads (unmount): do it here, once */
			struct line *ln = TAILQ_FIRST(&c->mem.dirty.q);
			struct rfile *rf = ln->rf;
			bool release;
			rfile_hold(rf);
			pthread_mutex_unlock(&c->lock);
			pthread_rwlock_wrlock(&rf->rw);
			pthread_mutex_lock(&c->lock);
			int r = flush_range_locked(c, rf, 0, ~0ull, &release);
			pthread_mutex_unlock(&c->lock);
			pthread_rwlock_unlock(&rf->rw);
			if (release)
				rfile_release(rf);
			rfile_release(rf);
			pthread_mutex_lock(&c->lock);
			if (r < 0) {
				ret = r;
				break;
			}
			continue;
		}
		struct timespec ts = deadline_ms(1000);
		pthread_cond_timedwait(&c->idle, &c->lock, &ts);
	}
	c->dst.draining--;
	pthread_mutex_unlock(&c->lock);
	if (ret == 0 && cache_opts.bbu == BBU_FILE)
		cachelog_advance();
	return ret;
}

/* The oldest file-log position a dirty line may still need (the log's
 * tail), or the head when nothing is dirty (cachelog_ops.tail). */
static void log_tail(void *arg, uint64_t *v, uint64_t *seq)
{
	struct cache *c = arg;
	pthread_mutex_lock(&c->lock);
	cachelog_position(v, seq);
	struct line *ln;
	TAILQ_FOREACH(ln, &c->mem.dirty.q, lru)
		if (ln->log_v < *v) {
			*v = ln->log_v;
			*seq = ln->log_seq;
		}
	struct log_pin *p;
	SLIST_FOREACH(p, &c->log.pins, next)
		if (p->v < *v) {
			*v = p->v;
			*seq = p->seq;
		}
	pthread_mutex_unlock(&c->lock);
}

/* The log is full: write the oldest lines out (called without locks). */
static void wait_destage(struct cache *c, bool for_line);

/* Does a dirty line need a record of the log (cachelog_ops.needed)? */
static bool log_needed(void *arg)
{
	struct cache *c = arg;
	uint64_t head, seq;
	pthread_mutex_lock(&c->lock);
	cachelog_position(&head, &seq);
	bool need = false;
	for (struct line *ln = TAILQ_FIRST(&c->mem.dirty.q); ln && !need; ln = TAILQ_NEXT(ln, lru))
		need = ln->log_v < head;
	pthread_mutex_unlock(&c->lock);
	return need;
}

/*
 * A write or a truncate whose record the failed log could not take or
 * make durable: its bytes are in the cache and nowhere else.  Made safe
 * without the log: the file marked for a resync at the next mount (a
 * crash before the log is retired would find it valid but without this
 * record, and trust it for the file), the cache written out, the members
 * synced and the log retired (cachelog_reset()).  Then the caller is
 * told it succeeded, as a controller whose battery fails tells the host
 * nothing.  No lock held.
 */
static int without_log(struct cache *c, struct rfile *rf)
{
	int r = stripe_mark_dirty(rf);
	if (r == 0)
		r = flush_all(c);
	/* (the log may be retired already: its retirement does not wait for
	 * lines it holds no record of) */
	if (r == 0)
		r = array_sync_members(c->a);
	if (r == 0)
		r = cachelog_reset();
	return r;
}

/* The log is full (cachelog_ops.wait). */
static void log_wait(void *arg)
{
	struct cache *c = arg;
	wait_destage(c, false);
}

/* ----------------------------------------------------------- write path */

/* Wait while too many lines are dirty (back-pressure).  No lock held. */
static void wait_room(struct cache *c)
{
	pthread_mutex_lock(&c->lock);
	while (cache_backpressure(c->mem.dirty.n, c->mem.high) && !c->dst.stop) {
		kick_locked(c);
		pthread_cond_wait(&c->space, &c->lock);
	}
	pthread_mutex_unlock(&c->lock);
}

/* Make the destage threads write everything out and wait up to 50 ms
 * for a batch (for_line: unless a line is free already).  No lock held. */
static void wait_destage(struct cache *c, bool for_line)
{
	pthread_mutex_lock(&c->lock);
	c->dst.draining++;
	kick_locked(c);
	struct timespec ts = deadline_ms(50);
	if (!for_line || (TAILQ_EMPTY(&c->mem.free.q) && TAILQ_EMPTY(&c->mem.clean.q)))
		pthread_cond_timedwait(&c->space, &c->lock, &ts);
	c->dst.draining--;
	pthread_mutex_unlock(&c->lock);
}

/* The bytes of sector `sec` of stripe s as the file holds them now
 * (members; zeros past the end).  rf->rw held shared. */
static int read_sector(struct cache *c, struct rfile *rf, uint64_t s, uint32_t sec, uint8_t *out)
{
	memset(out, 0, SECTOR);
	ssize_t r = stripe_read_locked(rf, out, SECTOR, s * c->mem.line_bytes + (uint64_t)sec * SECTOR);
	return r < 0 ? (int)r : 0;
}

/*
 * Copy [a, b) of stripe s (bytes in the line) from src into the cache.
 * rf->rw held shared.  A sector the write covers only in part, and which
 * the line does not hold yet, is first filled from the members.  head,
 * tail (when not NULL): the whole first and last sector as the line holds
 * them then.  Returns 0, 1 when no line was free (nothing copied: wait
 * and retry), or -errno.
 */
static int put_range(struct cache *c, struct rfile *rf, uint64_t s, uint64_t a, uint64_t b, const uint8_t *src,
		     uint64_t new_size, uint8_t *head, uint8_t *tail)
{
	uint32_t sa = a / SECTOR, sb = (b - 1) / SECTOR;
	bool part_a = a % SECTOR != 0, part_b = b % SECTOR != 0;
	uint8_t fill[2][SECTOR];
	bool have[2] = { false, false };

	pthread_mutex_lock(&c->lock);
	struct line *ln;
	bool need_a, need_b;
	for (;;) {
		ln = get_line_locked(c, rf, s);
		if (!ln) {
			pthread_mutex_unlock(&c->lock);
			return 1;
		}
		need_a = part_a && !bit(VALID(ln), sa);
		need_b = part_b && !bit(VALID(ln), sb) && !(sb == sa && need_a);
		/* a line being written out from a copy takes new bytes
		 * (not from the members: its stripe is being written) */
		if (!ln->busy || (ln->cow && !need_a && !need_b))
			break;
		pthread_cond_wait(&c->idle, &c->lock);	/* being written out */
	}
	if (need_a || need_b) {
		ln->pins++;
		pthread_mutex_unlock(&c->lock);
		int r = 0;
		if (need_a) {
			r = read_sector(c, rf, s, sa, fill[0]);
			have[0] = r == 0;
		}
		if (need_b && r == 0) {
			r = read_sector(c, rf, s, sb, fill[1]);
			have[1] = r == 0;
		}
		pthread_mutex_lock(&c->lock);
		ln->pins--;
		if (r < 0) {
			pthread_mutex_unlock(&c->lock);
			return r;
		}
		/* another writer may have made the sector valid meanwhile:
		 * its bytes win over what the members held */
		if (have[0] && !bit(VALID(ln), sa)) {
			memcpy(ln->data + (uint64_t)sa * SECTOR, fill[0], SECTOR);
			set_bit(VALID(ln), sa);
			ln->nvalid++;
		}
		if (have[1] && !bit(VALID(ln), sb)) {
			memcpy(ln->data + (uint64_t)sb * SECTOR, fill[1], SECTOR);
			set_bit(VALID(ln), sb);
			ln->nvalid++;
		}
	}
	memcpy(ln->data + a, src, b - a);
	if (head)
		memcpy(head, ln->data + (uint64_t)sa * SECTOR, SECTOR);
	if (tail)
		memcpy(tail, ln->data + (uint64_t)sb * SECTOR, SECTOR);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	bool was_dirty = ln->ndirty > 0;
	if (was_dirty && a != ln->wend)
		ln->scattered = true;
	ln->wend = (uint32_t)b;
	for (uint32_t i = sa; i <= sb; i++) {
		if (!bit(VALID(ln), i)) {
			set_bit(VALID(ln), i);
			ln->nvalid++;
		}
		if (!bit(DIRTY(c, ln), i)) {
			set_bit(DIRTY(c, ln), i);
			ln->ndirty++;
			c->mem.dirty_sectors++;
		}
		if (ln->copied)
			set_bit(ln->rewritten, i);
	}
	if (ln->h->size_hint < new_size)
		ln->h->size_hint = new_size;
	if (!was_dirty)
		note_dirty_locked(c, ln, rf);
	if (ln->nvalid == c->mem.nsec && ln->ndirty == c->mem.nsec)
		kick_locked(c);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/*
 * The sectors a write-back write covers only in part, for its log record
 * (bbu=file).  The cache completes such a sector with bytes it read from
 * the members, and from then on the destage treats the whole sector as
 * the line's: in a degraded stripe it takes no guard for an absent chunk
 * whose sectors are all dirty.  Cut there, the chunk's bytes around the
 * write are gone from the members too (they were only the parity), so
 * the record carries the whole sectors - the line's bytes before the
 * write in its first sector, and after it in its last, up to the file's
 * end (a replay must not make the file longer).
 */
struct edges {
	uint8_t head[SECTOR], tail[SECTOR];	/* the first and last sector */
	uint32_t hlen, tlen;			/* bytes before off; after the end */
};

/* The record of buf's bytes [from, to) of a write of [off, end): with
 * the head sector's bytes when it starts the write, the tail's when it
 * ends it. */
static int record_part(struct rfile *rf, const uint8_t *buf, uint64_t off, uint64_t end, uint64_t from,
		       uint64_t to, const struct edges *e, uint64_t *rec_end)
{
	struct iovec v[CACHELOG_PIECES];
	int n = 0;
	uint64_t start = from;
	if (from == off && e->hlen) {
		v[n++] = (struct iovec){ (void *)e->head, e->hlen };
		start -= e->hlen;
	}
	v[n++] = (struct iovec){ (void *)(buf + (from - off)), to - from };
	if (to == end && e->tlen)
		v[n++] = (struct iovec){ (void *)(e->tail + end % SECTOR), e->tlen };
	return cachelog_put_writev(rf->id, start, v, n, rec_end);
}

/* The size grows first: a destage running meanwhile (it holds rf->rw
 * shared too) must not cut the new bytes off at the old end.  Only
 * truncate, which holds rf->rw exclusively, makes it smaller.  Returns the
 * size now. */
static uint64_t grow_to(struct rfile *rf, uint64_t end)
{
	uint64_t cur = __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE);
	while (cur < end && !__atomic_compare_exchange_n(&rf->size, &cur, end, false,
							 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
	if (cur < end)
		rf->meta_stale = true;
	return end > cur ? end : cur;
}

/* One write-back write in progress (write_back()). */
struct wb {
	struct rfile *rf;
	const uint8_t *buf;
	uint64_t off, end;
	bool logged;			/* bbu=file: it gets records */
	uint64_t rec_from, rec_end;	/* what has no record yet; where the last ends */
	int lr;				/* the failed log's error: no more records (without_log()) */
	struct edges e;
};

/* The file's lock for a write-back write: rf->rw shared, then (bbu=file)
 * its turn in the log (rf->log_order); and let go in reverse. */
static void wb_lock(struct wb *w)
{
	pthread_rwlock_rdlock(&w->rf->rw);
	if (w->logged)
		pthread_mutex_lock(&w->rf->log_order);
}

static void wb_unlock(struct wb *w)
{
	if (w->logged)
		pthread_mutex_unlock(&w->rf->log_order);
	pthread_rwlock_unlock(&w->rf->rw);
}

/* The bytes of the write in the cache up to `to` get their record (not
 * durable yet), unless the log failed (w->lr then says so: no more
 * records).  0, or the -errno of a log that has not failed. */
static int wb_record(struct wb *w, uint64_t to)
{
	if (!w->logged || to <= w->rec_from || w->lr != 0)
		return 0;
	int e = record_part(w->rf, w->buf, w->off, w->end, w->rec_from, to, &w->e, &w->rec_end);
	if (e < 0 && !cachelog_failed())
		return e;
	w->lr = e;
	w->rec_from = to;
	return 0;
}

/*
 * Copy the write into lines, stripe by stripe (put_range()), with the
 * whole first and last sectors kept for the record.  When no line is
 * free, the part already in the cache gets its record now (another writer
 * may take these bytes meanwhile) and the destage is waited for with no
 * lock held.  The file's lock (wb_lock()) held.  0 or -errno.
 */
static int wb_fill(struct cache *c, struct wb *w)
{
	struct rfile *rf = w->rf;
	uint64_t lb = c->mem.line_bytes, off = w->off, end = w->end;
	uint64_t new_size = grow_to(rf, end);
	for (uint64_t pos = off; pos < end;) {
		uint64_t s = pos / lb, sbeg = s * lb;
		uint64_t y = end < sbeg + lb ? end : sbeg + lb;
		bool want_h = w->logged && pos == off && w->e.hlen, want_t = w->logged && y == end && end % SECTOR;
		int r = put_range(c, rf, s, pos - sbeg, y - sbeg, w->buf + (pos - off), new_size,
				  want_h ? w->e.head : NULL, want_t ? w->e.tail : NULL);
		if (r < 0)
			return r;
		if (r == 0 && want_t) {
			/* up to the sector's end or the file's (writers of
			 * this file wait for log_order; truncate for rf->rw) */
			uint64_t lim = (end / SECTOR + 1) * SECTOR;
			uint64_t size = __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE);
			w->e.tlen = size > end ? (uint32_t)((size < lim ? size : lim) - end) : 0;
		}
		if (r == 1) {
			r = wb_record(w, pos);
			if (r < 0)
				return r;
			wb_unlock(w);
			wait_destage(c, true);
			wb_lock(w);
			/* (a truncate meanwhile may have cut the file short of
			 * the part written so far: the rest must show) */
			new_size = grow_to(rf, end);
			continue;
		}
		pos = y;
	}
	return 0;
}

/*
 * A write-back write: the file marked (with the cache's mark when the
 * battery keeps what the cache holds), back-pressure, the bytes into
 * lines (wb_fill()), and with bbu=file their records, made durable
 * before the write is acknowledged.  A log that fails on the way ends
 * write-back without losing the write (without_log()).
 */
static ssize_t write_back(struct cache *c, struct rfile *rf, const uint8_t *buf, size_t len, uint64_t off)
{
	int r = kept(c) && log_noted(c) ? stripe_mark_cached(rf) : stripe_mark_dirty(rf);
	if (r < 0)
		return r;
	wait_room(c);
	/* The file log's records of one file go in the order the cache takes
	 * the writes (two writers of the same bytes through two hard links
	 * are not ordered by the kernel): a replay must end where the cache
	 * did. */
	struct wb w = {
		.rf = rf, .buf = buf, .off = off, .end = off + len,
		.logged = cache_opts.bbu == BBU_FILE, .rec_from = off,
		.e = { .hlen = off % SECTOR },
	};
	pthread_rwlock_rdlock(&rf->rw);
	if (w.logged) {
		__atomic_add_fetch(&rf->unlogged, 1, __ATOMIC_ACQ_REL);	/* (before any byte is in a line) */
		pthread_mutex_lock(&rf->log_order);
	}
	r = wb_fill(c, &w);
	if (r >= 0) {
		/* getattr reports the primary shard's mtime */
		static const struct timespec now[2] = { { 0, UTIME_OMIT }, { 0, UTIME_NOW } };
		futimens(rf->fd[rf->a->primary], now);
	}
	if (r >= 0 && w.logged && w.end > w.rec_from && w.lr == 0)
		w.lr = record_part(rf, buf, off, w.end, w.rec_from, w.end, &w.e, &w.rec_end);
	wb_unlock(&w);
	if (r >= 0 && w.logged && w.lr == 0)
		w.lr = cachelog_commit(w.rec_end);
	if (w.logged)
		__atomic_sub_fetch(&rf->unlogged, 1, __ATOMIC_ACQ_REL);
	if (r >= 0 && w.lr < 0)
		r = cachelog_failed() ? without_log(c, rf) : w.lr;
	return r < 0 ? r : (ssize_t)len;
}

/* Lines of rf over [off, end) are written out and forgotten, so that
 * bytes going straight to the members are not shadowed by older cached
 * ones.  rf->rw held exclusively. */
static int drop_range_locked(struct cache *c, struct rfile *rf, uint64_t off, uint64_t end, bool *release)
{
	uint64_t lb = c->mem.line_bytes;
	int ret = 0;
	*release = false;
	if (!c->up || end <= off)
		return 0;
	pthread_mutex_lock(&c->lock);
	for (uint64_t s = off / lb; s <= (end - 1) / lb && ret == 0; s++) {
		struct line *ln = lookup_locked(c, rf->id, s);
		if (!ln)
			continue;
		if (ln->ndirty) {
			bool rel;
			/* if it cannot be written, neither may the new bytes be:
			 * the old line would later overwrite them */
			ret = flush_range_locked(c, rf, s, s + 1, &rel);
			*release |= rel;
			ln = lookup_locked(c, rf->id, s);
			if (ret < 0 || !ln)
				continue;
		}
		if (!ln->pins && !ln->ndirty)
			drop_clean_locked(c, ln);
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/*
 * A write made straight to the members under rf->rw (held exclusively):
 * when `done` and the file log holds records that a replay would put over
 * it, it gets its own record after them, of buf[0..len) at off, in order
 * with the file's write-back writes (write_back()): its turn taken before
 * rf->rw goes, so no later write records first; written after, since a
 * full log waits for lines of this file to be written out, which needs
 * rf->rw.  Unlocks rf->rw.
 */
static int record_and_unlock(struct cache *c, struct rfile *rf, bool done, uint64_t off, const void *buf, size_t len)
{
	bool logged = done && cache_opts.bbu == BBU_FILE && cachelog_live();
	if (logged)
		pthread_mutex_lock(&rf->log_order);
	pthread_rwlock_unlock(&rf->rw);
	if (!logged)
		return 0;
	uint64_t end = 0;
	int r = cachelog_put_write(rf->id, off, buf, len, &end);
	pthread_mutex_unlock(&rf->log_order);
	if (r == 0)
		r = cachelog_commit(end);
	return r < 0 && cachelog_failed() ? without_log(c, rf) : r;
}

/* Before bytes go straight to the members: the file log emptied (a
 * record still in it must never be replayed over them; only after a
 * switch from write-back), the array writable, the user's I/O noted.
 * 0 or -errno. */
static int straight_begin(struct cache *c, struct rfile *rf)
{
	if (cache_opts.bbu == BBU_FILE && cachelog_live()) {
		int r = flush_all(c);
		if (r == 0)
			r = cachelog_reset();
		if (r < 0)
			return r;
	}
	if (!array_writable(rf->a))
		return rf->a->readonly ? -EROFS : -EIO;
	array_note_user_io(rf->a);
	return 0;
}

static ssize_t write_through(struct cache *c, struct rfile *rf, const uint8_t *buf, size_t len, uint64_t off)
{
	int b = straight_begin(c, rf);
	if (b < 0)
		return b;
	bool release;
	pthread_rwlock_wrlock(&rf->rw);
	ssize_t r = drop_range_locked(c, rf, off, off + len, &release);
	if (r == 0)
		r = stripe_write_locked(rf, buf, len, off);
	/* A write-back write that came between the emptying above and here
	 * (a small one that still had room while this one had not) left its
	 * record in the log, and a replay would put those older bytes over
	 * these: this write gets a record after it. */
	int e = record_and_unlock(c, rf, r >= 0, off, buf, len);
	if (e < 0)
		r = e;
	if (release)
		rfile_release(rf);
	return r;
}

ssize_t cache_write(struct rfile *rf, const void *buf, size_t len, uint64_t off)
{
	struct cache *c = &cache_one;
	if (len == 0)
		return 0;
	if (cache_offline())
		return -EIO;
	ssize_t r;
	if (!admit(c, len)) {
		r = c->up ? write_through(c, rf, buf, len, off) : stripe_write(rf, buf, len, off);
	} else if (!array_writable(rf->a)) {
		return rf->a->readonly ? -EROFS : -EIO;
	} else {
		array_note_user_io(rf->a);
		r = write_back(c, rf, buf, len, off);
	}
	if (r > 0)
		rfile_note_acked(rf, off + (uint64_t)r);	/* (returned to the caller next) */
	return r;
}

/* ------------------------------------------------------------ read path */

/* Put dirty sectors of line ln over [x, y) (bytes in the line) into dst
 * (which holds [x, y)). */
static void overlay_dirty(struct cache *c, struct line *ln, uint64_t x, uint64_t y, uint8_t *dst)
{
	if (!ln || !ln->ndirty)
		return;
	for (uint32_t i = x / SECTOR; i <= (y - 1) / SECTOR; i++) {
		if (!bit(DIRTY(c, ln), i))
			continue;
		uint64_t a = (uint64_t)i * SECTOR, b = a + SECTOR;
		if (a < x)
			a = x;
		if (b > y)
			b = y;
		memcpy(dst + (a - x), ln->data + a, b - a);
	}
}

/* Keep what was just read from the members in the line for [x, y) where
 * it holds whole sectors the line does not have yet. */
static void keep_clean(struct line *ln, uint64_t x, uint64_t y, const uint8_t *src)
{
	for (uint32_t i = (x + SECTOR - 1) / SECTOR; (uint64_t)(i + 1) * SECTOR <= y; i++) {
		if (bit(VALID(ln), i))
			continue;
		memcpy(ln->data + (uint64_t)i * SECTOR, src + ((uint64_t)i * SECTOR - x), SECTOR);
		set_bit(VALID(ln), i);
		ln->nvalid++;
	}
}

static void read_ahead(struct cache *c, struct rfile *rf, uint64_t off, size_t len);

/* A read of [off, end) asked for: the furthest end of one is the file's
 * ra_claimed; a read far behind it starts a new pass over the file, and
 * the claim goes back with it (readers in flight at once are close). */
#define RA_CLAIM_BACK (16u << 20)
static void claim_read(struct rfile *rf, uint64_t off, uint64_t end)
{
	uint64_t cur = __atomic_load_n(&rf->ra_claimed, __ATOMIC_ACQUIRE);
	for (;;) {
		uint64_t to = end > cur || off + RA_CLAIM_BACK < cur ? end : cur;
		if (to == cur || __atomic_compare_exchange_n(&rf->ra_claimed, &cur, to, false, __ATOMIC_ACQ_REL,
							     __ATOMIC_ACQUIRE))
			return;
	}
}

ssize_t cache_read(struct rfile *rf, void *buf, size_t len, uint64_t off)
{
	struct cache *c = &cache_one;
	if (cache_offline())
		return -EIO;
	if (!c->up)
		return stripe_read(rf, buf, len, off);
	uint64_t lb = c->mem.line_bytes;
	uint8_t *dst = buf;
	ssize_t ret = 0;
	array_note_user_io(rf->a);
	pthread_rwlock_rdlock(&rf->rw);
	uint64_t size = __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE);
	if (off >= size) {
		pthread_rwlock_unlock(&rf->rw);
		return 0;
	}
	if (len > size - off)
		len = size - off;
	uint64_t end = off + len;
	if (cache_opts.rpolicy != RP_NORA)
		claim_read(rf, off, end);	/* (only the read-ahead looks at it) */
	for (uint64_t pos = off; pos < end && ret >= 0;) {
		uint64_t s = pos / lb, sbeg = s * lb;
		uint64_t y = end < sbeg + lb ? end : sbeg + lb;
		uint64_t a = pos - sbeg, b = y - sbeg;
		pthread_mutex_lock(&c->lock);
		struct line *ln = lookup_locked(c, rf->id, s);
		if (ln && range_set(VALID(ln), a, b)) {
			memcpy(dst + (pos - off), ln->data + a, b - a);
			c->stats.hits++;
			if (ln->list == L_CLEAN && !ln->pins)
				move_to(c, ln, L_CLEAN);	/* most recently used */
			pthread_mutex_unlock(&c->lock);
			pos = y;
			continue;
		}
		if (ln && ln->busy) {
			/* its stripe is being written: the members are not
			 * consistent until that is done */
			pthread_cond_wait(&c->idle, &c->lock);
			pthread_mutex_unlock(&c->lock);
			continue;
		}
		if (ln && ln->ra_reading) {
			/* the read-ahead is reading it in now: waited for,
			 * rather than the same stripes read twice */
			pthread_cond_wait(&c->ra.filled, &c->lock);
			pthread_mutex_unlock(&c->lock);
			continue;
		}
		c->stats.misses++;
		/* pinned, the line is neither written out nor evicted while we
		 * read the members: its dirty sectors then still hold what the
		 * members lack */
		if (ln)
			ln->pins++;
		pthread_mutex_unlock(&c->lock);
		ssize_t r = stripe_read_locked(rf, dst + (pos - off), y - pos, pos);
		pthread_mutex_lock(&c->lock);
		if (ln)
			ln->pins--;
		if (r < 0) {
			pthread_mutex_unlock(&c->lock);
			ret = r;
			break;
		}
		if ((uint64_t)r < y - pos)
			memset(dst + (pos - off) + r, 0, y - pos - r);	/* past the shards: cached */
		if (ln) {
			overlay_dirty(c, ln, a, b, dst + (pos - off));
			keep_clean(ln, a, b, dst + (pos - off));
		}
		pthread_mutex_unlock(&c->lock);
		pos = y;
	}
	pthread_rwlock_unlock(&rf->rw);
	if (ret >= 0)
		read_ahead(c, rf, off, len);
	return ret < 0 ? ret : (ssize_t)len;
}

/* ------------------------------------------------------------ read-ahead
 *
 * A reader that goes on where its last read ended is sequential; with
 * read_policy=ra every read, with adaptive a reader sequential twice in a
 * row, gets the next stripes (at least 2 MiB) read into clean lines by the
 * read-ahead thread, ahead of it.  nora: never.
 */
#define RA_BYTES (2u << 20)

static void read_ahead(struct cache *c, struct rfile *rf, uint64_t off, size_t len)
{
	enum cache_rpolicy p = cache_opts.rpolicy;
	bool seq = off == rf->ra_next;
	rf->ra_seq = seq ? rf->ra_seq + 1 : 0;
	rf->ra_next = off + len;
	if (p == RP_NORA || (p == RP_ADAPTIVE && rf->ra_seq < 2) || !c->ra.started)
		return;
	uint64_t lb = c->mem.line_bytes;
	uint32_t w = RA_BYTES / lb < 2 ? 2 : RA_BYTES / lb;
	uint64_t s0 = (off + len) / lb, s1 = s0 + w;
	uint64_t size = __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE);
	if (s1 > (size + lb - 1) / lb)
		s1 = (size + lb - 1) / lb;
	if (rf->ra_done > s0 && rf->ra_done <= s1)
		s0 = rf->ra_done;	/* queued already up to there */
	if (s0 >= s1)
		return;
	pthread_mutex_lock(&c->lock);
	if (c->ra.head - c->ra.tail < RA_QUEUE) {
		rfile_hold(rf);
		c->ra.q[c->ra.head % RA_QUEUE] = (struct ra_req){ rf, s0, (uint32_t)(s1 - s0) };
		c->ra.head++;
		rf->ra_done = s1;
		pthread_cond_signal(&c->ra.cond);
	}
	pthread_mutex_unlock(&c->lock);
}

static void *ra_main(void *arg)
{
	struct cache *c = arg;
	uint8_t *tmp = NULL;
	if (posix_memalign((void **)&tmp, 4096, c->mem.line_bytes))
		return NULL;
	pthread_mutex_lock(&c->lock);
	while (!c->dst.stop) {
		if (c->ra.head == c->ra.tail) {
			pthread_cond_wait(&c->ra.cond, &c->lock);
			continue;
		}
		struct ra_req q = c->ra.q[c->ra.tail % RA_QUEUE];
		c->ra.tail++;
		pthread_mutex_unlock(&c->lock);
		struct rfile *rf = q.rf;
		pthread_rwlock_rdlock(&rf->rw);
		uint64_t size = __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE);
		for (uint64_t s = q.s0; s < q.s0 + q.n && !c->dst.stop; s++) {
			uint64_t sbeg = s * c->mem.line_bytes;
			if (sbeg >= size)
				break;
			uint64_t want = size - sbeg < c->mem.line_bytes ? size - sbeg : c->mem.line_bytes;
			pthread_mutex_lock(&c->lock);
			struct line *ln = lookup_locked(c, rf->id, s);
			/* (pinned: a reader or writer is at it already) */
			if (ln && (ln->busy || ln->pins || range_set(VALID(ln), 0, want / SECTOR * SECTOR))) {
				pthread_mutex_unlock(&c->lock);
				continue;
			}
			if (!ln && (c->mem.dirty.n >= c->mem.low || !(ln = get_line_locked(c, rf, s)))) {
				pthread_mutex_unlock(&c->lock);
				break;	/* the cache is busy with writes: no read-ahead */
			}
			/* from its first sector not there yet (the start of a
			 * line a reader's last request ended in is there), and
			 * not what a reader has asked for already: it reads
			 * that itself */
			uint64_t from = 0, claimed = __atomic_load_n(&rf->ra_claimed, __ATOMIC_ACQUIRE);
			while (from + SECTOR <= want && bit(VALID(ln), from / SECTOR))
				from += SECTOR;
			if (claimed > sbeg + from)
				from = (claimed - sbeg) / SECTOR * SECTOR;
			if (from >= want) {
				pthread_mutex_unlock(&c->lock);
				continue;
			}
			ln->pins++;
			ln->ra_reading = true;
			pthread_mutex_unlock(&c->lock);
			ssize_t r = stripe_read_locked(rf, tmp, want - from, sbeg + from);
			pthread_mutex_lock(&c->lock);
			ln->pins--;
			if (r > 0) {
				keep_clean(ln, from, from + r, tmp);
			}
			ln->ra_reading = false;
			pthread_cond_broadcast(&c->ra.filled);
			pthread_mutex_unlock(&c->lock);
			if (r <= 0)
				break;
		}
		pthread_rwlock_unlock(&rf->rw);
		rfile_release(rf);
		pthread_mutex_lock(&c->lock);
	}
	/* requests left at stop: drop their holds */
	while (c->ra.head != c->ra.tail) {
		struct rfile *rf = c->ra.q[c->ra.tail % RA_QUEUE].rf;
		c->ra.tail++;
		pthread_mutex_unlock(&c->lock);
		rfile_release(rf);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	free(tmp);
	return NULL;
}

/* ------------------------------------------------------ truncate, fsync */

/* The truncate's record is not needed any more (if it was pinned). */
static void pin_drop(struct cache *c, struct log_pin *pin)
{
	pthread_mutex_lock(&c->lock);
	struct log_pin *p;
	SLIST_FOREACH(p, &c->log.pins, next)
		if (p == pin)
			break;
	if (p)
		SLIST_REMOVE(&c->log.pins, pin, log_pin, next);
	pthread_mutex_unlock(&c->lock);
}

/*
 * Take rf->rw exclusively for a truncate to `size`, with the truncate in
 * the file log first (bbu=file) - always when its file has the cache's
 * mark (`covered`: the replay is what makes it consistent again), else
 * when the log holds records (a replay puts the writes before it back,
 * which may reach past the new end: the truncate's record after them cuts
 * them off again).  Written ahead, durably, and pinned (struct log_pin)
 * until the caller drops the pin after the truncate.  A full log is
 * waited for with no lock held: its room comes from destaging lines,
 * which takes rf->rw; so is log_order when busy (a write-through write of
 * this file holds it without rf->rw while it waits for room).
 */
static int lock_for_truncate(struct cache *c, struct rfile *rf, uint64_t size, bool covered, struct log_pin *pin)
{
	for (;;) {
		pthread_rwlock_wrlock(&rf->rw);
		if (cache_opts.bbu != BBU_FILE || cachelog_retired() || (!covered && !cachelog_live()))
			return 0;
		int r = -EAGAIN;
		uint64_t end = 0;
		if (pthread_mutex_trylock(&rf->log_order) == 0) {
			pthread_mutex_lock(&c->lock);
			cachelog_position(&pin->v, &pin->seq);	/* (at or before the record) */
			SLIST_INSERT_HEAD(&c->log.pins, pin, next);
			pthread_mutex_unlock(&c->lock);
			r = cachelog_try_put_truncate(rf->id, size, &end);
			pthread_mutex_unlock(&rf->log_order);
			if (r == 0)
				r = cachelog_commit(end);
			if (r < 0)
				pin_drop(c, pin);
		}
		if (r < 0 && r != -EAGAIN && cachelog_failed()) {
			/* (then the truncate goes on without its record) */
			pthread_rwlock_unlock(&rf->rw);
			r = without_log(c, rf);
			if (r < 0)
				return r;
			continue;
		}
		if (r != -EAGAIN) {
			if (r < 0)
				pthread_rwlock_unlock(&rf->rw);
			return r;
		}
		pthread_rwlock_unlock(&rf->rw);
		wait_destage(c, false);
	}
}

/* Line ln loses its sectors from byte `cut` on, and the bytes past cut
 * in the sector across it.  True when its file has no dirty line left
 * (note_clean_locked()).  c->lock held. */
static bool cut_line_locked(struct cache *c, struct line *ln, uint64_t cut)
{
	uint32_t first = (cut + SECTOR - 1) / SECTOR;
	if (cut % SECTOR)
		memset(ln->data + cut, 0, SECTOR - cut % SECTOR);
	for (uint32_t k = first; k < c->mem.nsec; k++) {
		if (bit(DIRTY(c, ln), k)) {
			clear_bit(DIRTY(c, ln), k);
			ln->ndirty--;
			c->mem.dirty_sectors--;
		}
		if (bit(VALID(ln), k)) {
			clear_bit(VALID(ln), k);
			ln->nvalid--;
		}
	}
	return ln->list == L_DIRTY && ln->ndirty == 0 && note_clean_locked(c, ln);
}

/* The lines of rf cut at `size` (a truncate): those wholly past it go,
 * dirty or not; the one across it is cut (cut_line_locked()).  True when
 * rf has no dirty line left (the caller releases the cache's hold).
 * c->lock held. */
static bool cut_lines_locked(struct cache *c, struct rfile *rf, uint64_t size)
{
	uint64_t lb = c->mem.line_bytes;
	bool release = false;
	for (uint32_t i = 0; i < c->mem.nlines; i++) {
		struct line *ln = &c->mem.lines[i];
		if (ln->list == L_FREE || ln->h->fid != rf->id)
			continue;
		uint64_t sbeg = ln->h->stripe * lb;
		if (sbeg >= size) {
			if (ln->ndirty)
				release |= note_clean_locked(c, ln);	/* cut off: dropped */
			if (!ln->pins)
				drop_clean_locked(c, ln);
			continue;
		}
		if (sbeg + lb > size)
			release |= cut_line_locked(c, ln, size - sbeg);
		ln->h->size_hint = size;
	}
	return release;
}

int cache_truncate(struct rfile *rf, uint64_t size)
{
	struct cache *c = &cache_one;
	if (cache_offline())
		return -EIO;
	if (!c->up)
		return stripe_truncate(rf, size);
	if (!array_writable(rf->a))
		return rf->a->readonly ? -EROFS : -EIO;
	/* A file changed only through the cache keeps the cache's mark: the
	 * truncate is in the log before it begins (bbu=file), and a shrink
	 * records that it began (META_F_TRUNC), so the mount finishes one
	 * cut short; its guard keeps what a cut could change in a degraded
	 * stripe. */
	bool covered = kept(c) && log_noted(c);
	struct log_pin pin = { 0 };
	int r = covered ? stripe_mark_cached(rf) : stripe_mark_dirty(rf);
	if (r == 0)
		r = lock_for_truncate(c, rf, size, covered, &pin);
	if (r < 0)
		return r;
	/* a shrink says it began before dirty lines past the new end go:
	 * failing from then on, it is finished (stripe_truncate_locked()) */
	bool said = size < rf->size;
	if (said)
		r = stripe_record_truncate(rf, size);
	if (r < 0) {
		pthread_rwlock_unlock(&rf->rw);
		pin_drop(c, &pin);
		return r;
	}
	pthread_mutex_lock(&c->lock);
	bool release = cut_lines_locked(c, rf, size);
	pthread_mutex_unlock(&c->lock);
	stripe_log_covered(covered);
	r = stripe_truncate_locked(rf, size, said);
	stripe_log_covered(false);
	pthread_rwlock_unlock(&rf->rw);
	pin_drop(c, &pin);
	if (release)
		rfile_release(rf);
	return r;
}

/* ------------------------------------- fallocate, holes, copy_file_range */

/*
 * Zeros over [off, end) (with `keep`, not past the file's end as it is
 * under the lock), as write-through writes of at most a zero buffer each
 * (whole stripes, about 1 MiB): the cached lines of the range written out
 * and dropped first, as write_through() does, the zeros and their parity
 * through stripe_zero_locked() (with `punch`, the whole stripes given
 * back on the members) and, with a live file log, their record.
 */
static int zero_through(struct cache *c, struct rfile *rf, uint64_t off, uint64_t end, bool keep, bool punch)
{
	uint64_t sbytes = layout_stripe_data_bytes(&rf->lay);
	uint64_t zc = sbytes * (sbytes < (1u << 20) ? (1u << 20) / sbytes : 1);
	uint8_t *zeros = calloc(1, zc);
	int r = zeros ? straight_begin(c, rf) : -ENOMEM;
	for (uint64_t pos = off; r == 0 && pos < end;) {
		bool release;
		pthread_rwlock_wrlock(&rf->rw);
		uint64_t lim = keep && rf->size < end ? rf->size : end;
		uint64_t n = pos < lim ? (lim < (pos / zc + 1) * zc ? lim : (pos / zc + 1) * zc) - pos : 0;
		r = n ? drop_range_locked(c, rf, pos, pos + n, &release) : 0;
		if (n && r == 0)
			r = stripe_zero_locked(rf, zeros, pos, pos + n, punch);
		int e = record_and_unlock(c, rf, n && r == 0, pos, zeros, n);
		if (n && release)
			rfile_release(rf);
		r = r < 0 ? r : e;
		pos = n ? pos + n : end;
	}
	free(zeros);
	return r;
}

int cache_fallocate(struct rfile *rf, int mode, uint64_t off, uint64_t len)
{
	struct cache *c = &cache_one;
	const int known = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE;
	bool keep = mode & FALLOC_FL_KEEP_SIZE, punch = mode & FALLOC_FL_PUNCH_HOLE;
	if (mode & ~known)
		return -EOPNOTSUPP;	/* (collapse, insert, unshare) */
	if ((punch && (!keep || (mode & FALLOC_FL_ZERO_RANGE))) || len == 0)
		return -EINVAL;
	if (off + len < off || off + len > (uint64_t)INT64_MAX)
		return -EFBIG;
	if (cache_offline())
		return -EIO;
	if (!array_writable(rf->a))
		return rf->a->readonly ? -EROFS : -EIO;
	int r = punch ? 0 : stripe_allocate(rf, off, off + len);	/* (room first: nothing half done) */
	if (r == 0 && (punch || (mode & FALLOC_FL_ZERO_RANGE)))
		r = zero_through(c, rf, off, off + len, keep, punch);
	else if (r == 0 && !keep && off + len > __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE))
		r = cache_truncate(rf, off + len);	/* (the size as a truncate sets it) */
	return r;
}

int64_t cache_seek(struct rfile *rf, uint64_t off, int whence)
{
	struct cache *c = &cache_one;
	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (cache_offline())
		return -EIO;
	if (c->up) {
		/* lines not written out yet hold data the shards lack */
		int r = flush_file(c, rf, 0, ~0ull);
		if (r < 0)
			return r;
	}
	return stripe_seek(rf, off, whence);
}

ssize_t cache_copy_range(struct rfile *in, uint64_t off_in, struct rfile *out, uint64_t off_out, size_t len)
{
	if (len > (64u << 20))
		len = 64u << 20;	/* (a short copy: the caller asks again, a worker is not held for long) */
	size_t bl = len < (1u << 20) ? len : (1u << 20), done = 0;
	uint8_t *buf = malloc(bl ? bl : 1);
	if (!buf)
		return -ENOMEM;
	while (done < len) {
		size_t want = len - done < bl ? len - done : bl;
		ssize_t n = cache_read(in, buf, want, off_in + done);
		if (n <= 0) {
			if (n < 0 && done == 0)
				done = (size_t)n;
			break;
		}
		ssize_t w = cache_write(out, buf, (size_t)n, off_out + done);
		if (w < 0 && done == 0)
			done = (size_t)w;
		if (w <= 0)
			break;
		done += (size_t)w;
		if ((size_t)n < want || w < n)
			break;	/* (the end of the input) */
	}
	free(buf);
	return (ssize_t)done;
}

void cache_forget_clean(struct rfile *rf, uint64_t off, uint64_t end)
{
	struct cache *c = &cache_one;
	if (!c->up)
		return;
	uint64_t lb = c->mem.line_bytes;
	uint64_t size = __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE);
	if (end > size)
		end = size;	/* (no line lies past the end: cache_truncate()) */
	if (off >= end)
		return;
	/* the range's lines looked up, or every line looked at: fewer */
	bool scan = (end - off) / lb > c->mem.nlines;
	pthread_mutex_lock(&c->lock);
	for (uint64_t i = scan ? 0 : off / lb; scan ? i < c->mem.nlines : i * lb < end; i++) {
		struct line *ln = scan ? &c->mem.lines[i] : lookup_locked(c, rf->id, i);
		if (!ln || ln->list == L_FREE || ln->h->fid != rf->id)
			continue;
		uint64_t sbeg = ln->h->stripe * lb;
		if (sbeg >= end || sbeg + lb <= off)
			continue;
		uint32_t first = off > sbeg ? (uint32_t)((off - sbeg) / SECTOR) : 0;
		uint32_t last = end - sbeg < lb ? (uint32_t)((end - sbeg + SECTOR - 1) / SECTOR) : c->mem.nsec;
		for (uint32_t k = first; k < last && k < c->mem.nsec; k++)
			if (bit(VALID(ln), k) && !bit(DIRTY(c, ln), k)) {
				clear_bit(VALID(ln), k);
				ln->nvalid--;
			}
		if (ln->list == L_CLEAN && ln->nvalid == 0 && !ln->pins)
			drop_clean_locked(c, ln);
	}
	pthread_mutex_unlock(&c->lock);
}

int cache_fsync(struct rfile *rf, bool datasync)
{
	struct cache *c = &cache_one;
	if (c->up) {
		if (cache_opts.bbu == BBU_FILE && writeback_now(c)) {
			/* durable in the log already (every write-back write is
			 * fdatasynced there before it is acknowledged) */
			return 0;
		}
		int r = flush_file(c, rf, 0, ~0ull);
		if (r < 0)
			return r;
	}
	return stripe_fsync(rf, datasync);
}

/* ---------------------------------------------------- battery, learning */

static void bbu_set_locked(struct cache *c, enum bbu_state s, const char *why);

/* The file log failed (cachelog_ops.failed): the battery with it. */
static void log_failed(void *arg)
{
	struct cache *c = arg;
	/* its guard slots too: writes into degraded stripes go on unguarded
	 * rather than fail (the slots are in the same file) */
	guard_off();
	if (array_absent_count(c->a))
		log_warn("array '%s' is degraded: from now on a crash during a write can damage the chunks of its absent "
			 "members (the write hole), as without a battery", c->a->sb.name);
	pthread_mutex_lock(&c->lock);
	enum bbu_state old = c->bbu.state;
	bbu_set_locked(c, BBU_FAILED, "the cache log failed");
	pthread_mutex_unlock(&c->lock);
	if (old != BBU_FAILED)
		event_post(c->a, "BbuFailed", -1);
}

static void bbu_set_locked(struct cache *c, enum bbu_state s, const char *why)
{
	if (c->bbu.state == s)
		return;
	enum bbu_state old = c->bbu.state;
	c->bbu.state = s;
	log_warn("battery: %s -> %s (%s); write policy now %s", bbu_state_name(old), bbu_state_name(s), why,
		 cache_wpolicy_name(effective_locked(c, NULL)));
	if (effective_locked(c, NULL) != WP_WRITEBACK)
		kick_locked(c);
}

static void learn_check_locked(struct cache *c)
{
	if (c->bbu.state == BBU_LEARNING && now_ns() >= c->bbu.learn_end) {
		bbu_set_locked(c, BBU_OPTIMAL, "learn cycle complete");
		pthread_mutex_unlock(&c->lock);
		event_post(c->a, "BbuLearnDone", -1);
		pthread_mutex_lock(&c->lock);
	}
}

/* ------------------------------------------------------------- lifecycle */

static void shm_name(const struct array *a, char *buf, size_t len)
{
	char u[37];
	sb_uuid_str(a->sb.uuid, u);
	snprintf(buf, len, "/dev/shm/raidfs-%s.cache", u);
}

static size_t arena_layout(uint64_t size, uint64_t lb, uint64_t gstride, struct arena_hdr *h)
{
	uint32_t nsec = lb / SECTOR;
	uint32_t bmw = (nsec + 63) / 64;
	uint64_t stride = sizeof(struct lhdr) + 2ull * bmw * sizeof(uint64_t);
	stride = (stride + 63) & ~63ull;
	uint64_t n = cache_lines_for(size, lb);
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, ARENA_MAGIC, 8);
	h->version = ARENA_VERSION;
	h->sector = SECTOR;
	h->line_bytes = lb;
	h->nlines = n;
	h->bm_words = bmw;
	h->lhdr_off = 4096;
	h->lhdr_stride = stride;
	h->data_off = (4096 + n * stride + 4095) & ~4095ull;
	h->nguards = GUARD_SLOTS;
	h->total = ((h->data_off + n * lb + 4095) & ~4095ull) + GUARD_SLOTS * gstride;
	return h->total;
}

/* The guard slots of arena h (mapped at p, len bytes). */
static void arena_guards(void *p, struct guard_store *st)
{
	const struct arena_hdr *h = p;
	uint64_t off = (h->data_off + (uint64_t)h->nlines * h->line_bytes + 4095) & ~4095ull;
	memset(st, 0, sizeof(*st));
	st->fd = -1;
	if (!h->nguards || h->total <= off)
		return;
	st->mem = (uint8_t *)p + off;
	st->nslots = h->nguards;
	st->stride = (h->total - off) / h->nguards;
}

static bool arena_hdr_ok(const struct arena_hdr *h, size_t len, const struct array *a)
{
	struct arena_hdr t;
	if (len < sizeof(*h))
		return false;
	memcpy(&t, h, sizeof(t));
	if (memcmp(t.magic, ARENA_MAGIC, 8) || t.version != ARENA_VERSION || t.sector != SECTOR ||
	    t.crc != parity_crc32(0, &t, offsetof(struct arena_hdr, crc)) ||
	    memcmp(t.uuid, a->sb.uuid, 16) || t.total > len || t.line_bytes % SECTOR ||
	    t.bm_words != (t.line_bytes / SECTOR + 63) / 64)
		return false;
	return true;
}

#define OLD_LHDR(c, i) ((struct lhdr *)((uint8_t *)(c)->last.old + (c)->last.old->lhdr_off + (uint64_t)(i) * (c)->last.old->lhdr_stride))
#define OLD_DATA(c, i) ((uint8_t *)(c)->last.old + (c)->last.old->data_off + (uint64_t)(i) * (c)->last.old->line_bytes)

static uint32_t popcount_bm(const uint64_t *bm, uint32_t w)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < w; i++)
		n += __builtin_popcountll(bm[i]);
	return n;
}

/* A surviving shm arena of this array (kill -9 of the last daemon): its
 * dirty lines are replayed at mount, its guard slots put back first. */
static void open_last_arena(struct cache *c, struct array *a)
{
	int fd = open(c->mem.shm_path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	void *p = MAP_FAILED;
	if (fstat(fd, &st) == 0 && st.st_size > 0)
		p = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return;
	if (!arena_hdr_ok(p, st.st_size, a)) {
		log_warn("cache file '%s' is not a valid raidfs cache of array '%s': ignored", c->mem.shm_path, a->sb.name);
		munmap(p, st.st_size);
		return;
	}
	c->last.old = p;
	c->last.old_len = st.st_size;
	for (uint32_t i = 0; i < c->last.old->nlines; i++) {
		struct lhdr *h = OLD_LHDR(c, i);
		if (h->fid)
			c->last.dirty_bytes += (uint64_t)popcount_bm(h->bm + c->last.old->bm_words, c->last.old->bm_words) * SECTOR;
	}
	if (c->last.dirty_bytes)
		log_warn("array '%s': the cache of the last run (%s) holds %" PRIu64 " bytes not yet written to the members",
			 a->sb.name, c->mem.shm_path, c->last.dirty_bytes);
	/* its guard slots: what they hold is put back first, and the
	 * replay's own writes use them (bbu=file: the log's) */
	struct guard_store gst;
	arena_guards(p, &gst);
	if (cache_opts.bbu != BBU_FILE)
		guard_use(&gst);
	guard_recover(&gst, cache_opts.bbu != BBU_FILE);
	c->last.guarded = gst.nslots > 0;
	c->last.found = true;
}

/* bbu=file: open the log (its callbacks registered), and judge the
 * records it holds against the members' note of the log they rely on. */
static int open_file_log(struct cache *c, struct array *a, char *err, size_t errlen)
{
	const struct cachelog_ops ops = {
		.tail = log_tail, .wait = log_wait, .needed = log_needed, .failed = log_failed, .arg = c,
	};
	int r = cachelog_open(a, cache_opts.bbu_path, cache_opts.size * 2, &ops, err, errlen);
	if (r < 0)
		return r;
	c->last.has_log = cachelog_replay_pending();
	/* the log the members' cache marks were made for, or another
	 * (a new one, one given by mistake): then the marks promise
	 * nothing */
	int who = cachelog_was_there() ? array_cache_log_check(a, cachelog_id()) : 0;
	c->last.retired = who == -2;
	if (who == -2)
		guard_replay_done();	/* (its slots: stopped before it was retired) */
	if (who == -2 && cachelog_replay_pending()) {
		/* retired when it failed: the members hold all it had */
		log_warn("array '%s': the cache log '%s' failed in an earlier run and was retired once the members held "
			 "everything it had: its %" PRIu64 " bytes of old records are dropped", a->sb.name,
			 cache_opts.bbu_path, cachelog_replay_bytes());
		r = cachelog_drop();
		if (r < 0) {
			snprintf(err, errlen, "cannot write the cache log '%s': %s (check its disk, or give another log)",
				 cache_opts.bbu_path, strerror(-r));
			return r;
		}
		c->last.has_log = false;
	}
	if (who == -1 && cachelog_replay_pending()) {
		/* its records may be older than what the members hold */
		snprintf(err, errlen, "the cache log '%s' holds writes, but it is not the log this array last wrote through: "
			 "mount with that log (-o bbu=file:PATH), or, to drop these writes, move this log away",
			 cache_opts.bbu_path);
		return -EINVAL;
	}
	size_t nr = cachelog_replay_records();
	if (nr)
		log_warn("array '%s': the cache log '%s' holds %zu record%s (%" PRIu64 " bytes) not known to be on the members: replaying them",
			 a->sb.name, cache_opts.bbu_path, nr, nr == 1 ? "" : "s", cachelog_replay_bytes());
	c->last.guarded |= who > 0 && cachelog_had_guards();
	c->last.found |= who > 0;
	return 0;
}

int cache_open(struct array *a, char *err, size_t errlen)
{
	struct cache *c = &cache_one;
	c->a = a;
	/* the log forgets a file's records after a member sync: the last
	 * release of a marked file syncs before its marks go (file.c) */
	a->marks_wait_sync = cache_opts.bbu == BBU_FILE && member_sync_mode != MSYNC_NEVER;
	c->pol.configured = cache_opts.wpolicy;
	c->bbu.state = cache_opts.bbu == BBU_NONE ? BBU_MISSING : BBU_OPTIMAL;
	shm_name(a, c->mem.shm_path, sizeof(c->mem.shm_path));
	open_last_arena(c, a);
	return cache_opts.bbu == BBU_FILE ? open_file_log(c, a, err, errlen) : 0;
}

int cache_replay_file(struct rfile *rf)
{
	struct cache *c = &cache_one;
	/* the chunks a cut write into a degraded stripe could have changed,
	 * as they were, before anything is written over them */
	int ret = stripe_put_back_guarded(rf);
	if (ret == 0 && c->last.old) {
		uint64_t lb = c->last.old->line_bytes;
		uint32_t w = c->last.old->bm_words;
		for (uint32_t i = 0; i < c->last.old->nlines && ret == 0; i++) {
			struct lhdr *h = OLD_LHDR(c, i);
			if (h->fid != rf->id)
				continue;
			const uint64_t *d = h->bm + w;
			uint64_t sbeg = h->stripe * lb;
			for (uint32_t x = 0; x < lb / SECTOR && ret == 0;) {
				if (!(d[x / 64] >> (x % 64) & 1)) {
					x++;
					continue;
				}
				uint32_t y = x;
				while (y < lb / SECTOR && (d[y / 64] >> (y % 64) & 1))
					y++;
				uint64_t a = sbeg + (uint64_t)x * SECTOR, b = sbeg + (uint64_t)y * SECTOR;
				if (b > h->size_hint)
					b = h->size_hint;
				if (a < b) {
					ssize_t r = stripe_write_locked(rf, OLD_DATA(c, i) + (a - sbeg), b - a, a);
					ret = r < 0 ? (int)r : 0;
				}
				x = y;
			}
		}
	}
	if (ret == 0 && c->last.has_log)
		ret = cachelog_replay_file(rf);
	return ret;
}

bool cache_battery(void)
{
	struct cache *c = &cache_one;
	return battery_kept(c);
}

bool cache_guarded_last_run(void)
{
	struct cache *c = &cache_one;
	return c->last.guarded;
}

bool cache_retired_last_run(void)
{
	struct cache *c = &cache_one;
	return c->last.retired;
}

bool cache_found_last_run(void)
{
	struct cache *c = &cache_one;
	return c->last.found;
}

bool cache_preserved_for(uint64_t fid)
{
	struct cache *c = &cache_one;
	if (guard_holds(fid))
		return true;
	for (uint32_t i = 0; c->last.old && i < c->last.old->nlines; i++)
		if (OLD_LHDR(c, i)->fid == fid)
			return true;
	return c->last.has_log && cachelog_holds(fid);
}

uint64_t cache_preserved_bytes(void)
{
	struct cache *c = &cache_one;
	return c->last.dirty_bytes + (c->last.has_log ? cachelog_replay_bytes() : 0);
}

void cache_set_offline(bool offline)
{
	struct cache *c = &cache_one;
	__atomic_store_n(&c->off.on, offline, __ATOMIC_RELEASE);
}

void cache_set_offline_reason(const char *why)
{
	struct cache *c = &cache_one;
	pthread_mutex_lock(&c->lock);
	snprintf(c->off.why, sizeof(c->off.why), "%s", why);
	pthread_mutex_unlock(&c->lock);
}

bool cache_offline(void)
{
	struct cache *c = &cache_one;
	return __atomic_load_n(&c->off.on, __ATOMIC_ACQUIRE);
}

/* The preserved cache: its replay (cache_monitor()) and its discard
 * (discard_old(), from the control socket) one at a time. */

/* Drop what a previous run left (raidfs cache discard --force). */
static uint64_t discard_old(struct cache *c)
{
	uint64_t b = cache_preserved_bytes();
	guard_replay_done();
	if (c->last.old) {
		if (cache_opts.bbu != BBU_FILE)
			guard_use(NULL);
		munmap(c->last.old, c->last.old_len);
		c->last.old = NULL;
		unlink(c->mem.shm_path);
	}
	c->last.dirty_bytes = 0;
	if (c->last.has_log) {
		cachelog_replay_done();
		c->last.has_log = false;
	}
	/* what the files' cache marks promised is gone with it */
	c->last.found = c->last.guarded = c->last.retired = false;
	return b;
}

void cache_monitor(struct array *a, cache_finish_fn *finish)
{
	struct cache *c = &cache_one;
	if (!cache_offline() || array_state(a) == ARRAY_FAILED)
		return;
	/* finish the mount as at mount time, if the members can take it now
	 * (not once the unmount began: cache_close()) */
	char err[1024];
	int count = 0;
	pthread_mutex_lock(&c->last.lock);
	if (c->off.closing) {
		pthread_mutex_unlock(&c->last.lock);
		return;
	}
	uint64_t b = cache_preserved_bytes();
	int r = finish(a, a->force, &count, err, sizeof(err));
	if (r == 0)
		r = cache_replay_finish(a, err, sizeof(err));
	if (r < 0) {
		pthread_mutex_unlock(&c->last.lock);
		if (!c->off.told)
			log_err("array '%s': the mount cannot finish yet: %s", a->sb.name, err);
		c->off.told = true;
		cache_set_offline_reason(err);
		return;
	}
	if (cache_start() < 0)
		log_warn("array '%s' runs without a cache", a->sb.name);
	cache_set_offline(false);
	pthread_mutex_unlock(&c->last.lock);
	log_warn("array '%s': %" PRIu64 " bytes of preserved cache written, %d dirty file%s resynced: the mount is online",
		 a->sb.name, b, count, count == 1 ? "" : "s");
	event_post(a, "PreservedCacheWritten", -1);
}

int cache_replay_finish(struct array *a, char *err, size_t errlen)
{
	struct cache *c = &cache_one;
	(void)err;
	(void)errlen;
	guard_replay_done();
	if (c->last.old) {
		if (cache_opts.bbu != BBU_FILE)
			guard_use(NULL);
		munmap(c->last.old, c->last.old_len);
		c->last.old = NULL;
		if (c->last.dirty_bytes)
			log_info("array '%s': %" PRIu64 " bytes from the cache of the last run written to the members",
				 a->sb.name, c->last.dirty_bytes);
		c->last.dirty_bytes = 0;
		unlink(c->mem.shm_path);
	}
	if (c->last.has_log) {
		cachelog_replay_done();
		c->last.has_log = false;
	}
	return 0;
}

/* Set up the arena and start the destage threads. */
/*
 * Fault the arena's pages in, in the background, 8 MiB at a time: this
 * kind of VM hands out fresh pages slowly, and the first reads and writes
 * after a mount would otherwise pay for every page they put a line in
 * (a first sequential read at a fraction of the second's speed).  Done
 * with MADV_POPULATE_WRITE, which allocates without changing a byte, so
 * lines already in use meanwhile keep what they hold; a kernel without it
 * (before 5.14) leaves the pages to their first use.  Stops at unmount.
 */
static void *prefault_main(void *arg)
{
	struct cache *c = arg;
	const size_t step = 8u << 20;
	for (size_t off = 0; off < c->mem.arena_len; off += step) {
		if (__atomic_load_n(&c->dst.stop, __ATOMIC_ACQUIRE))
			break;
		size_t n = c->mem.arena_len - off < step ? c->mem.arena_len - off : step;
		if (madvise(c->mem.arena + off, n, MADV_POPULATE_WRITE) < 0 && errno != EINTR)
			break;
	}
	return NULL;
}

int cache_start(void)
{
	struct cache *c = &cache_one;
	struct array *a = c->a;
	struct arena_hdr h;
	uint64_t lb = layout_stripe_data_bytes(&a->lay);
	size_t total = arena_layout(cache_opts.size, lb, guard_stride(&a->lay), &h);
	memcpy(h.uuid, a->sb.uuid, 16);
	h.crc = parity_crc32(0, &h, offsetof(struct arena_hdr, crc));
	void *p = MAP_FAILED;
	if (cache_opts.bbu == BBU_SHM) {
		int fd = open(c->mem.shm_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0 && ftruncate(fd, total) == 0)
			p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (fd >= 0)
			close(fd);
		c->bbu.shm_up = p != MAP_FAILED;
		if (p == MAP_FAILED) {
			log_err("cannot set up the cache in '%s': %s; battery marked failed (write-through)",
				c->mem.shm_path, strerror(errno));
			unlink(c->mem.shm_path);
			c->bbu.state = BBU_FAILED;
		}
	}
	if (p == MAP_FAILED)
		p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		log_err("cannot allocate a cache of %zu bytes: %s; running without one", total, strerror(errno));
		return -ENOMEM;
	}
	c->mem.arena = p;
	c->mem.arena_len = total;
	c->mem.line_bytes = lb;
	c->mem.nsec = lb / SECTOR;
	c->mem.bmw = h.bm_words;
	c->mem.nlines = h.nlines;
	c->mem.lines = calloc(c->mem.nlines, sizeof(*c->mem.lines));
	c->mem.copy_bits = calloc((size_t)c->mem.nlines * 2 * c->mem.bmw, sizeof(uint64_t));
	uint32_t hs = 1;
	while (hs < 2 * c->mem.nlines)
		hs <<= 1;
	c->mem.hash = calloc(hs, sizeof(*c->mem.hash));
	c->mem.hmask = hs - 1;
	if (!c->mem.lines || !c->mem.hash || !c->mem.copy_bits)
		return -ENOMEM;
	TAILQ_INIT(&c->mem.free.q);
	TAILQ_INIT(&c->mem.clean.q);
	TAILQ_INIT(&c->mem.dirty.q);
	for (uint32_t i = 0; i < c->mem.nlines; i++) {
		struct line *ln = &c->mem.lines[i];
		ln->h = (struct lhdr *)(c->mem.arena + h.lhdr_off + (uint64_t)i * h.lhdr_stride);
		ln->data = c->mem.arena + h.data_off + (uint64_t)i * lb;
		ln->was_dirty = c->mem.copy_bits + (size_t)i * 2 * c->mem.bmw;
		ln->rewritten = ln->was_dirty + c->mem.bmw;
		ln->list = L_FREE;
		lru_add(&c->mem.free, ln);
	}
	cache_watermarks(c->mem.nlines, &c->mem.high, &c->mem.low);
	c->stats.rate_t0 = now_ns();
	/* the header last: a valid header means valid line headers */
	memcpy(c->mem.arena, &h, sizeof(h));
	if (c->bbu.shm_up) {
		struct guard_store gst;
		arena_guards(c->mem.arena, &gst);
		guard_use(&gst);
	}
	c->up = true;
	c->dst.stop = false;
	c->dst.started = 0;
	c->dst.active = 2;
	for (uint32_t i = 0; i < destage_threads(a); i++)
		if (pthread_create(&c->dst.thr[c->dst.nthr], NULL, destage_main, c) == 0)
			c->dst.nthr++;
	c->ra.started = pthread_create(&c->ra.thr, NULL, ra_main, c) == 0;
	c->pf.started = pthread_create(&c->pf.thr, NULL, prefault_main, c) == 0;
	return 0;
}

void cache_close(void)
{
	struct cache *c = &cache_one;
	pthread_mutex_lock(&c->last.lock);	/* (an offline mount stays so) */
	c->off.closing = true;
	pthread_mutex_unlock(&c->last.lock);
	if (!c->up)
		return;
	/* stop the threads, then write everything out here */
	pthread_mutex_lock(&c->lock);
	c->dst.stop = true;
	pthread_cond_broadcast(&c->work);
	pthread_cond_broadcast(&c->space);
	pthread_cond_broadcast(&c->ra.cond);
	pthread_mutex_unlock(&c->lock);
	for (int i = 0; i < c->dst.nthr; i++)
		pthread_join(c->dst.thr[i], NULL);
	c->dst.nthr = 0;
	if (c->ra.started)
		pthread_join(c->ra.thr, NULL);
	c->ra.started = false;
	if (c->pf.started)
		pthread_join(c->pf.thr, NULL);
	c->pf.started = false;
	int r = flush_all(c);
	if (r < 0) {
		uint64_t b = c->mem.dirty_sectors * SECTOR;
		log_err("array '%s': %" PRIu64 " bytes in the cache could not be written to the members (%s); they are kept%s%s for the next mount",
			c->a->sb.name, b, strerror(-r), cache_opts.bbu == BBU_NONE ? " nowhere: LOST (no battery)" : " in ",
			cache_opts.bbu == BBU_SHM ? c->mem.shm_path : cache_opts.bbu == BBU_FILE ? cache_opts.bbu_path : "");
		return;
	}
	if (cache_opts.bbu == BBU_SHM)
		unlink(c->mem.shm_path);
	if (cache_opts.bbu == BBU_FILE)
		cachelog_close_clean();
	c->up = false;
}

/* ------------------------------------------------------------- control */

void cache_get_stats(struct cache_stats *st)
{
	struct cache *c = &cache_one;
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&c->lock);
	st->size = cache_opts.size;
	st->line_bytes = c->mem.line_bytes;
	st->lines = c->mem.nlines;
	st->dirty_lines = c->mem.dirty.n;
	st->dirty_bytes = c->mem.dirty_sectors * SECTOR;
	st->hits = c->stats.hits;
	st->misses = c->stats.misses;
	uint64_t t = now_ns();
	st->destage_mbps = t - c->stats.rate_t0 > 4000000000ull ? 0 : c->stats.rate;
	st->destaged_bytes = c->stats.destaged_bytes;
	st->configured = c->pol.configured;
	st->effective = effective_locked(c, &st->why_wt);
	st->rpolicy = cache_opts.rpolicy;
	st->bbu = cache_opts.bbu;
	st->bbu_state = c->bbu.state;
	st->log_error = -cachelog_error();
	st->log_retired = cachelog_retired();
	st->learn_left = c->bbu.state == BBU_LEARNING && c->bbu.learn_end > t ? (c->bbu.learn_end - t + 999999999) / 1000000000 : 0;
	st->preserved_bytes = cache_preserved_bytes();
	st->offline = cache_offline();
	if (st->offline)
		snprintf(st->offline_why, sizeof(st->offline_why), "%.*s", (int)sizeof(c->off.why) - 1, c->off.why);
	st->bbu_path = cache_opts.bbu == BBU_SHM ? c->mem.shm_path : cache_opts.bbu == BBU_FILE ? cache_opts.bbu_path : "";
	pthread_mutex_unlock(&c->lock);
}

/* raidfs cache MNT write_policy=NAME [--force] (cache_ctl()). */
static int set_write_policy(struct cache *c, const char *name, bool force, char *buf, size_t len)
{
	int p = parse_wpolicy(name);
	if (p < 0) {
		snprintf(buf, len, "raidfs: cache: unknown write policy '%s': use writeback, writethrough or always-writeback\n", name);
		return 1;
	}
	if (p == WP_ALWAYS_WRITEBACK && !force) {
		snprintf(buf, len, "raidfs: cache: always-writeback keeps acknowledged writes in the cache even when the battery cannot protect them (a crash or power loss loses them); add --force to set it\n");
		return 1;
	}
	if (!c->up) {
		snprintf(buf, len, "raidfs: cache: the cache is not running yet: the mount is offline (see 'raidfs status %s'); set the policy once it is online\n",
			 c->a ? c->a->mountpoint : "MOUNTPOINT");
		return 1;
	}
	pthread_mutex_lock(&c->lock);
	enum cache_wpolicy old = c->pol.configured;
	c->pol.configured = p;
	enum cache_wpolicy e = effective_locked(c, NULL);
	kick_locked(c);
	pthread_mutex_unlock(&c->lock);
	log_info("cache: write policy %s -> %s (current %s)", cache_wpolicy_name(old), cache_wpolicy_name(p),
		 cache_wpolicy_name(e));
	event_post(c->a, "CachePolicyChange", -1);
	snprintf(buf, len, "write policy %s (current %s)\n", cache_wpolicy_name(p), cache_wpolicy_name(e));
	return 0;
}

/* raidfs cache MNT discard --force (cache_ctl()). */
static int discard(struct cache *c, bool force, char *buf, size_t len)
{
	if (!cache_preserved_bytes()) {
		snprintf(buf, len, "raidfs: cache: there is no preserved cache to discard\n");
		return 1;
	}
	if (!force) {
		snprintf(buf, len, "raidfs: cache: the preserved cache holds %" PRIu64 " bytes of acknowledged writes that are on no member; discarding loses them for good: add --force to discard\n",
			 cache_preserved_bytes());
		return 1;
	}
	pthread_mutex_lock(&c->last.lock);
	uint64_t b = discard_old(c);
	pthread_mutex_unlock(&c->last.lock);
	log_err("array '%s': preserved cache discarded by the administrator: %" PRIu64 " bytes of acknowledged writes LOST",
		c->a->sb.name, b);
	event_post(c->a, "PreservedCacheDiscarded", -1);
	snprintf(buf, len, "preserved cache discarded (%" PRIu64 " bytes lost); the mount comes online as soon as the array is there (see 'raidfs status')\n", b);
	return 0;
}

int cache_ctl(int argc, char **argv, char *buf, size_t len)
{
	struct cache *c = &cache_one;
	bool force = false;
	const char *set = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--force"))
			force = true;
		else if (!set)
			set = argv[i];
		else {
			snprintf(buf, len, "raidfs: cache: unexpected '%s' (see 'raidfs --help')\n", argv[i]);
			return 1;
		}
	}
	if (!set) {
		struct cache_stats st;
		cache_get_stats(&st);
		snprintf(buf, len, "write policy %s (current %s)\nread policy %s\ndirty %" PRIu64 " bytes\n",
			 cache_wpolicy_name(st.configured), cache_wpolicy_name(st.effective),
			 cache_rpolicy_name(st.rpolicy), st.dirty_bytes);
		return 0;
	}
	if (!strncmp(set, "write_policy=", 13))
		return set_write_policy(c, set + 13, force, buf, len);
	if (!strncmp(set, "read_policy=", 12)) {
		int p = parse_rpolicy(set + 12);
		if (p < 0) {
			snprintf(buf, len, "raidfs: cache: unknown read policy '%s': use ra, nora or adaptive\n", set + 12);
			return 1;
		}
		cache_opts.rpolicy = p;
		snprintf(buf, len, "read policy %s\n", cache_rpolicy_name(p));
		return 0;
	}
	if (!strcmp(set, "discard"))
		return discard(c, force, buf, len);
	if (!strcmp(set, "flush")) {
		int r = c->up ? flush_all(c) : 0;
		if (r < 0) {
			snprintf(buf, len, "raidfs: cache: cannot write the cache to the members: %s\n", strerror(-r));
			return 1;
		}
		snprintf(buf, len, "cache flushed\n");
		return 0;
	}
	snprintf(buf, len, "raidfs: cache: unknown setting '%s': use write_policy=..., read_policy=..., flush or discard --force\n", set);
	return 1;
}

int cache_bbu_ctl(int argc, char **argv, char *buf, size_t len)
{
	struct cache *c = &cache_one;
	const char *what = argc > 1 ? argv[1] : "show";
	if (!strcmp(what, "show")) {
		struct cache_stats st;
		cache_get_stats(&st);
		int n = snprintf(buf, len, "battery %s (%s%s%s)\n", bbu_state_name(st.bbu_state), bbu_kind_name(st.bbu),
				 st.bbu_path[0] ? ": " : "", st.bbu_path);
		if (st.bbu_state == BBU_LEARNING && n > 0 && (size_t)n < len)
			snprintf(buf + n, len - n, "learn cycle: %u s left\n", st.learn_left);
		return 0;
	}
	if (cache_opts.bbu == BBU_NONE) {
		snprintf(buf, len, "raidfs: bbu: this mount has no battery (bbu=none); mount with -o bbu=shm or -o bbu=file:PATH\n");
		return 1;
	}
	pthread_mutex_lock(&c->lock);
	enum bbu_state old = c->bbu.state;
	const char *ev = NULL;
	if ((!strcmp(what, "learn") || !strcmp(what, "restore")) && cachelog_failed()) {
		pthread_mutex_unlock(&c->lock);
		snprintf(buf, len, "raidfs: bbu: the cache log '%s' failed in this run: write-back stays off until the next mount "
			 "(check the disk that holds it)\n", cache_opts.bbu_path);
		return 1;
	}
	if (!strcmp(what, "learn")) {
		if (c->bbu.state == BBU_FAILED) {
			pthread_mutex_unlock(&c->lock);
			snprintf(buf, len, "raidfs: bbu: the battery has failed; 'raidfs bbu MOUNTPOINT restore' first\n");
			return 1;
		}
		c->bbu.learn_end = now_ns() + (uint64_t)cache_opts.learn_secs * 1000000000ull;
		bbu_set_locked(c, BBU_LEARNING, "learn cycle started");
		ev = "BbuLearnStart";
	} else if (!strcmp(what, "fail")) {
		bbu_set_locked(c, BBU_FAILED, "failed by the administrator");
		ev = "BbuFailed";
	} else if (!strcmp(what, "restore")) {
		bbu_set_locked(c, BBU_OPTIMAL, "restored by the administrator");
		ev = "BbuRestored";
	} else {
		pthread_mutex_unlock(&c->lock);
		snprintf(buf, len, "raidfs: bbu: unknown action '%s': use show, learn, fail or restore\n", what);
		return 1;
	}
	enum cache_wpolicy e = effective_locked(c, NULL);
	pthread_mutex_unlock(&c->lock);
	if (old != c->bbu.state && ev)
		event_post(c->a, ev, -1);
	snprintf(buf, len, "battery %s (was %s); write policy now %s\n", bbu_state_name(c->bbu.state), bbu_state_name(old),
		 cache_wpolicy_name(e));
	return 0;
}

/* What the layers below tell the cache (array.h, struct array_hooks;
 * registered by mount.c). */
const struct array_hooks cache_hooks = {
	.data_rewritten = cache_forget_clean,
};
