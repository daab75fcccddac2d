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
 * Threads: FUSE threads (cache_write / cache_read), two destage threads
 * (destage_main), the read-ahead thread, and cache_close.  Lock order:
 * rf->rw, then C.lock, then the log lock (cachelog.c).  A destage thread
 * holds rf->rw shared and marks the lines it writes busy: writers of those
 * lines, and readers that would go to the members for their stripes, wait
 * on C.idle until they are done; everything else of the file goes on.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "cache.h"
#include "cachelog.h"
#include "cachepolicy.h"
#include "file.h"
#include "guard.h"
#include "parity.h"
#include "rebuild.h"
#include "util.h"

#define SECTOR 512u
#define DESTAGE_THREADS 2
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
	struct log_pin *next;
};

struct line {
	struct lhdr *h;
	uint8_t *data;
	struct rfile *rf;		/* while dirty (the file is held) */
	struct line *hnext;
	struct line *prev, *next;	/* on the list named by `list` */
	uint64_t since;			/* became dirty (ns); retry time when stuck */
	uint64_t log_v, log_seq;	/* file log: oldest record it may need */
	uint32_t ndirty, nvalid;	/* sectors */
	uint8_t list;
	bool busy;			/* being destaged */
	int pins;			/* a writer fills it without the lock */
};

struct lru {
	struct line *head, *tail;	/* head: oldest */
	uint32_t n;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t work, space, idle;
	struct array *a;
	bool up;
	/* arena */
	uint8_t *arena;
	size_t arena_len;
	char shm_path[PATH_MAX];
	uint64_t line_bytes;
	uint32_t nsec, bmw, nlines;
	struct line *lines;
	struct line **hash;
	uint32_t hmask;
	struct lru free, clean, dirty;
	uint64_t dirty_sectors;
	struct log_pin *pins;		/* truncates in flight (file log) */
	uint32_t high, low;		/* dirty-line water marks */
	/* policy and battery */
	enum cache_wpolicy configured;
	enum bbu_state bbu;
	uint64_t learn_end;		/* ns, while LEARNING */
	int draining;			/* flush everything (count of requesters) */
	/* members' free space (admit()) */
	uint64_t space_free, space_used, space_t;
	bool space_low;
	bool stop;
	pthread_t thr[DESTAGE_THREADS];
	int nthr;
	/* statistics */
	uint64_t hits, misses, destaged_bytes;
	uint64_t rate_t0, rate_b0;	/* destage rate window */
	double rate;
	/* replay of what a previous daemon left */
	struct arena_hdr *old;		/* mapped old shm arena, or NULL */
	size_t old_len;
	uint64_t old_dirty_bytes;
	bool old_has_log;
	bool last_guarded;		/* the last run's cache kept guard slots */
	bool last_found;		/* the last run's arena or log was found */
	bool last_retired;		/* its log was retired (it failed) */
	bool shm_up;			/* this run's arena is in /dev/shm */
	/* read-ahead requests (ra_main) */
	pthread_cond_t ra_cond;
	struct ra_req { struct rfile *rf; uint64_t s0; uint32_t n; } raq[32];
	uint32_t ra_head, ra_tail;
	pthread_t ra_thr;
	bool ra_started;
	bool offline;			/* preserved cache: mount not finished */
	bool offline_told;
	char offline_why[1024];		/* why (under lock) */
	bool closing;			/* unmount: an offline mount stays so */
} C = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
	.space = PTHREAD_COND_INITIALIZER,
	.idle = PTHREAD_COND_INITIALIZER,
	.ra_cond = PTHREAD_COND_INITIALIZER,
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

int cache_parse_option(const char *opt)
{
	const char *v;
	if (!strncmp(opt, "cache_size=", 11)) {
		uint64_t sz;
		if (parse_size(opt + 11, &sz) < 0 || sz < (1u << 20)) {
			fprintf(stderr, "raidfs: bad cache size '%s': give a size of at least 1M (for example 256M)\n", opt + 11);
			return -1;
		}
		cache_opts.size = sz;
		return 1;
	}
	if (!strncmp(opt, "write_policy=", 13)) {
		int p = parse_wpolicy(opt + 13);
		if (p < 0) {
			fprintf(stderr, "raidfs: unknown write policy '%s': use writeback, writethrough or always-writeback\n", opt + 13);
			return -1;
		}
		cache_opts.wpolicy = p;
		return 1;
	}
	if (!strncmp(opt, "read_policy=", 12)) {
		int p = parse_rpolicy(opt + 12);
		if (p < 0) {
			fprintf(stderr, "raidfs: unknown read policy '%s': use ra, nora or adaptive\n", opt + 12);
			return -1;
		}
		cache_opts.rpolicy = p;
		return 1;
	}
	if (!strncmp(opt, "bbu=", 4)) {
		v = opt + 4;
		if (!strcmp(v, "none"))
			cache_opts.bbu = BBU_NONE;
		else if (!strcmp(v, "shm"))
			cache_opts.bbu = BBU_SHM;
		else if (!strncmp(v, "file:", 5) && v[5] == '/' && strlen(v + 5) < sizeof(cache_opts.bbu_path)) {
			cache_opts.bbu = BBU_FILE;
			snprintf(cache_opts.bbu_path, sizeof(cache_opts.bbu_path), "%s", v + 5);
		} else {
			fprintf(stderr, "raidfs: bad battery '%s': use bbu=none, bbu=shm or bbu=file:/ABSOLUTE/PATH\n", v);
			return -1;
		}
		return 1;
	}
	if (!strncmp(opt, "bbu_learn_time=", 15)) {
		char *end;
		unsigned long s = strtoul(opt + 15, &end, 10);
		if (*end || !opt[15] || s > 86400) {
			fprintf(stderr, "raidfs: bad learn time '%s': give seconds (0 to 86400)\n", opt + 15);
			return -1;
		}
		cache_opts.learn_secs = s;
		return 1;
	}
	if (!strncmp(opt, "cache_age=", 10)) {
		char *end;
		unsigned long ms = strtoul(opt + 10, &end, 10);
		if (*end || !opt[10] || ms > 3600000) {
			fprintf(stderr, "raidfs: bad cache age '%s': give milliseconds (0 to 3600000)\n", opt + 10);
			return -1;
		}
		cache_opts.age_ms = ms;
		return 1;
	}
	if (!strncmp(opt, "member_sync=", 12)) {
		v = opt + 12;
		if (!strcmp(v, "always"))
			stripe_member_sync = MSYNC_ALWAYS;
		else if (!strcmp(v, "flush"))
			stripe_member_sync = MSYNC_FLUSH;
		else if (!strcmp(v, "never"))
			stripe_member_sync = MSYNC_NEVER;
		else {
			fprintf(stderr, "raidfs: bad member_sync '%s': use always, flush or never\n", v);
			return -1;
		}
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------ policy, battery */

/* The policy as configured and as the battery and the log allow, and
 * (space: the members' free space counts) while the members have room. */
static enum cache_wpolicy policy_locked(bool space, const char **why)
{
	struct cache_policy_in in = {
		.configured = C.configured,
		.bbu = cache_opts.bbu,
		.state = C.bbu,
		.log_failed = cachelog_failed(),
		.space_low = space && C.space_low,
	};
	return cache_policy_effective(&in, why);
}

/* The policy in force: also write-through while the members are nearly
 * full (admit()). */
static enum cache_wpolicy effective_locked(const char **why)
{
	return policy_locked(true, why);
}

static bool writeback_now(void)
{
	pthread_mutex_lock(&C.lock);
	bool wb = C.up && effective_locked(NULL) == WP_WRITEBACK;
	pthread_mutex_unlock(&C.lock);
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
static bool admit(size_t len)
{
	uint64_t t = now_ns();
	pthread_mutex_lock(&C.lock);
	if (!C.up || policy_locked(false, NULL) != WP_WRITEBACK) {
		pthread_mutex_unlock(&C.lock);
		return false;	/* not write-back anyway */
	}
	uint64_t dirty = C.dirty_sectors * SECTOR;
	if (cache_room(dirty, len, C.space_free, C.space_used, t - C.space_t, false) == CACHE_ROOM_ADMIT) {
		C.space_used += len;
		pthread_mutex_unlock(&C.lock);
		return true;
	}
	pthread_mutex_unlock(&C.lock);
	uint64_t free_now = members_min_free(C.a);
	pthread_mutex_lock(&C.lock);
	C.space_free = free_now;
	C.space_t = t;
	C.space_used = 0;
	/* (the dirty bytes as they were when the count fell short) */
	bool ok = cache_room(dirty, len, free_now, 0, 0, true) == CACHE_ROOM_ADMIT;
	if (ok)
		C.space_used = len;
	if (ok == C.space_low) {
		C.space_low = !ok;
		if (ok)
			log_info("array '%s': the members have room again: write-back resumes", C.a->sb.name);
		else
			log_warn("array '%s': a member has %llu MiB free, less than the cache may have to write: writes go through until there is room",
				 C.a->sb.name, (unsigned long long)(free_now >> 20));
	}
	pthread_mutex_unlock(&C.lock);
	return ok;
}

/* ------------------------------------------------------------ the lines */

#define VALID(ln) ((ln)->h->bm)
#define DIRTY(ln) ((ln)->h->bm + C.bmw)

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
	if (ln->prev)
		ln->prev->next = ln->next;
	else
		l->head = ln->next;
	if (ln->next)
		ln->next->prev = ln->prev;
	else
		l->tail = ln->prev;
	ln->prev = ln->next = NULL;
	l->n--;
}

static void lru_add(struct lru *l, struct line *ln)
{
	ln->next = NULL;
	ln->prev = l->tail;
	if (l->tail)
		l->tail->next = ln;
	else
		l->head = ln;
	l->tail = ln;
	l->n++;
}

static struct lru *list_of(struct line *ln)
{
	return ln->list == L_FREE ? &C.free : ln->list == L_CLEAN ? &C.clean : &C.dirty;
}

static void move_to(struct line *ln, int list)
{
	lru_del(list_of(ln), ln);
	ln->list = list;
	lru_add(list_of(ln), ln);
}

static unsigned hash_of(uint64_t fid, uint64_t s)
{
	uint64_t h = (fid ^ (s * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
	return (unsigned)(h >> 32) & C.hmask;
}

static struct line *lookup_locked(uint64_t fid, uint64_t s)
{
	for (struct line *ln = C.hash[hash_of(fid, s)]; ln; ln = ln->hnext)
		if (ln->h->fid == fid && ln->h->stripe == s)
			return ln;
	return NULL;
}

static void unhash_locked(struct line *ln)
{
	struct line **pp = &C.hash[hash_of(ln->h->fid, ln->h->stripe)];
	while (*pp && *pp != ln)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = ln->hnext;
	ln->hnext = NULL;
}

/* Forget a clean line's contents (it goes to the free list). */
static void drop_clean_locked(struct line *ln)
{
	unhash_locked(ln);
	__atomic_store_n(&ln->h->fid, 0, __ATOMIC_RELEASE);
	memset(ln->h->bm, 0, 2 * C.bmw * sizeof(uint64_t));
	ln->nvalid = 0;
	move_to(ln, L_FREE);
}

/* A line for (rf, s): the one there, a free one, or the least recently
 * used clean one.  NULL when every line is dirty, busy or pinned. */
static struct line *get_line_locked(struct rfile *rf, uint64_t s)
{
	struct line *ln = lookup_locked(rf->id, s);
	if (ln)
		return ln;
	ln = C.free.head;
	if (!ln) {
		for (ln = C.clean.head; ln && ln->pins; ln = ln->next)
			;
		if (!ln)
			return NULL;
		drop_clean_locked(ln);
	}
	struct lhdr *h = ln->h;
	h->stripe = s;
	h->size_hint = 0;
	__atomic_store_n(&h->fid, rf->id, __ATOMIC_RELEASE);
	ln->hnext = C.hash[hash_of(rf->id, s)];
	C.hash[hash_of(rf->id, s)] = ln;
	move_to(ln, L_CLEAN);
	return ln;
}

/* Does a dirty line's content outlive a kill -9 of the daemon (the file
 * log, or the arena in /dev/shm)?  Then a file changed only through the
 * cache gets the cache's dirty mark: the replay alone makes it whole. */
static bool battery_kept(void)
{
	return cache_opts.bbu == BBU_FILE || (cache_opts.bbu == BBU_SHM && C.shm_up);
}

/* (and from now on: not once the file log failed - what it held before
 * still counts, battery_kept()) */
static bool kept(void)
{
	return battery_kept() && !cachelog_failed();
}

/* bbu=file: before this run's first cache mark, the members note which log
 * the marks rely on (array_note_cache_log()); false when they could not. */
static bool log_noted(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static bool noted;
	if (cache_opts.bbu != BBU_FILE || __atomic_load_n(&noted, __ATOMIC_ACQUIRE))
		return true;
	pthread_mutex_lock(&lock);
	if (!noted && array_note_cache_log(C.a, cachelog_id(), false) == 0)
		__atomic_store_n(&noted, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lock);
	return noted;
}

/* The line became dirty: the file is held until it is clean again. */
static void note_dirty_locked(struct line *ln, struct rfile *rf)
{
	move_to(ln, L_DIRTY);
	ln->since = now_ns();
	ln->rf = rf;
	if (cache_opts.bbu == BBU_FILE)
		cachelog_position(&ln->log_v, &ln->log_seq);
	if (rf->cache_dirty++ == 0)
		rfile_hold(rf);
}

/* The line's dirty sectors are on the members now.  Returns true when its
 * file has no dirty line left (the caller releases the file's hold). */
static bool note_clean_locked(struct line *ln)
{
	struct rfile *rf = ln->rf;
	memset(DIRTY(ln), 0, C.bmw * sizeof(uint64_t));
	C.dirty_sectors -= ln->ndirty;
	ln->ndirty = 0;
	ln->rf = NULL;
	move_to(ln, L_CLEAN);
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

/*
 * Write lines v[0..n) of rf (sorted by stripe, dirty) to the members.
 * rf->rw is held (shared by the destage threads: the lines are busy).  Wholly dirty lines that lie inside the
 * file go out as whole stripes, consecutive ones in one batch (no reads);
 * the others by stripe_destage_line (which reads what parity needs, the
 * cheaper of reconstruct-write and read-modify-write).  Bytes past the file's end are never written, so the shards keep
 * the lengths the size implies.
 */
static int destage_lines(struct rfile *rf, struct line **v, int n)
{
	uint64_t lb = C.line_bytes, size = rf->size;
	int ret = 0;
	for (int i = 0; i < n && ret == 0;) {
		struct line *ln = v[i];
		uint64_t s = ln->h->stripe;
		if (ln->ndirty == C.nsec && (s + 1) * lb <= size) {
			const uint8_t *sd[16];
			int c = 0;
			while (i + c < n && c < 16 && v[i + c]->h->stripe == s + c &&
			       v[i + c]->ndirty == C.nsec && (s + c + 1) * lb <= size) {
				sd[c] = v[i + c]->data;
				c++;
			}
			ret = stripe_write_stripes_locked(rf, s, c, sd);
			i += c;
			continue;
		}
		ret = stripe_destage_line(rf, s, ln->data, VALID(ln), DIRTY(ln), SECTOR);
		i++;
	}
	return ret;
}

static int cmp_stripe(const void *x, const void *y)
{
	const struct line *a = *(struct line *const *)x, *b = *(struct line *const *)y;
	return a->h->stripe < b->h->stripe ? -1 : a->h->stripe > b->h->stripe;
}

static void rate_note_locked(uint64_t bytes)
{
	C.destaged_bytes += bytes;
	uint64_t t = now_ns();
	if (t - C.rate_t0 >= 2000000000ull) {
		C.rate = (double)(C.destaged_bytes - C.rate_b0) / ((t - C.rate_t0) / 1e9) / 1e6;
		C.rate_t0 = t;
		C.rate_b0 = C.destaged_bytes;
	}
}

/*
 * Destage rf's dirty lines whose stripes lie in [s0, s1) (all: 0, ~0),
 * at most `max` of them.  The caller holds rf->rw (shared: destage threads;
 * exclusively: flush, write-through) and C.lock;
 * the lock is dropped during the I/O.  Returns 0, or -errno when the
 * members could not take the data (the lines stay dirty and are retried
 * later).  *release: the file has no dirty line left; the caller drops
 * the cache's hold after unlocking everything.
 */
static bool ready_locked(const struct line *ln, uint64_t t, bool pressure);

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
static int record_size(struct rfile *rf)
{
	/* (how far acknowledged writes reach: the size grows before a
	 * write is taken, and one not acknowledged yet must not leave the
	 * file longer after a crash) */
	return array_absent_count(rf->a) == 0 || !battery_kept() ? 0 : rfile_record_acked(rf);
}

static int destage_file_locked(struct rfile *rf, uint64_t s0, uint64_t s1, int max, bool *release)
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
	for (struct line *ln = C.dirty.head; ln && n < max; ln = ln->next)
		if (ln->rf == rf && !ln->busy && !ln->pins && ln->h->stripe >= s0 && ln->h->stripe < s1 &&
		    ready_locked(ln, t, pressure))
			v[n++] = ln;
	if (n == 0)
		return 0;
	for (int i = 0; i < n; i++)
		v[i]->busy = true;
	qsort(v, n, sizeof(v[0]), cmp_stripe);
	pthread_mutex_unlock(&C.lock);
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
	stripe_log_covered(kept() && (guarded || !__atomic_load_n(&rf->unlogged, __ATOMIC_ACQUIRE)));
	ret = destage_lines(rf, v, n);
	stripe_log_covered(false);
	if (ret == 0)
		ret = record_size(rf);
	pthread_mutex_lock(&C.lock);
	uint64_t bytes = 0;
	for (int i = 0; i < n; i++) {
		v[i]->busy = false;
		if (ret == 0) {
			bytes += (uint64_t)v[i]->ndirty * SECTOR;
			if (note_clean_locked(v[i]))
				*release = true;
		} else {
			v[i]->since = now_ns() + STUCK_RETRY_NS;	/* not before */
		}
	}
	rate_note_locked(bytes);
	pthread_cond_broadcast(&C.space);
	pthread_cond_broadcast(&C.idle);
	return ret;
}

/* Someone waits for rf's lines in [s0, s1): try them now, also those
 * waiting to retry a failed write.  Returns how many are dirty. */
static int want_now_locked(struct rfile *rf, uint64_t s0, uint64_t s1)
{
	int n = 0;
	for (struct line *ln = C.dirty.head; ln; ln = ln->next)
		if (ln->rf == rf && ln->h->stripe >= s0 && ln->h->stripe < s1) {
			ln->since = 0;
			n++;
		}
	return n;
}

/* Destage all of rf's dirty lines in [s0, s1).  rf->rw held exclusively,
 * C.lock held.  -EIO when some cannot be written (they stay dirty). */
static int flush_range_locked(struct rfile *rf, uint64_t s0, uint64_t s1, bool *release)
{
	bool rel;
	*release = false;
	while (want_now_locked(rf, s0, s1) > 0) {
		int r = destage_file_locked(rf, s0, s1, DESTAGE_BATCH, &rel);
		*release |= rel;
		if (r < 0)
			return r;
	}
	return 0;
}

/* Destage all of rf's dirty lines in [s0, s1).  Takes rf->rw. */
static int flush_file(struct rfile *rf, uint64_t s0, uint64_t s1)
{
	int ret;
	bool release;
	pthread_rwlock_wrlock(&rf->rw);
	pthread_mutex_lock(&C.lock);
	ret = flush_range_locked(rf, s0, s1, &release);
	pthread_mutex_unlock(&C.lock);
	pthread_rwlock_unlock(&rf->rw);
	if (release)
		rfile_release(rf);
	return ret;
}

static bool pressure_locked(void)
{
	return C.draining || C.stop || C.dirty.n >= C.low || effective_locked(NULL) != WP_WRITEBACK;
}

/* May line ln be written out now?  A complete line may; a partial one
 * once it waited cache_age for more bytes, or under pressure; a line
 * whose last destage failed only after its retry time. */
static bool ready_locked(const struct line *ln, uint64_t t, bool pressure)
{
	if (ln->since > t)
		return false;
	if (ln->nvalid == C.nsec && ln->ndirty == C.nsec)
		return true;
	return pressure || t - ln->since >= (uint64_t)cache_opts.age_ms * 1000000ull;
}

/* Which line should a destage thread write next?  Complete lines first,
 * then the oldest that is ready. */
static struct line *pick_locked(void)
{
	uint64_t t = now_ns();
	bool pressure = pressure_locked();
	struct line *oldest = NULL;
	int scanned = 0;
	for (struct line *ln = C.dirty.head; ln && scanned < 256; ln = ln->next, scanned++) {
		if (ln->busy || ln->pins || !ready_locked(ln, t, pressure))
			continue;
		if (ln->nvalid == C.nsec && ln->ndirty == C.nsec)
			return ln;
		if (!oldest)
			oldest = ln;
	}
	return oldest;
}

static void learn_check_locked(void);

static void *destage_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&C.lock);
	while (!C.stop) {
		learn_check_locked();
		struct line *ln = pick_locked();
		if (!ln) {
			struct timespec ts = deadline_ms(20);
			pthread_cond_timedwait(&C.work, &C.lock, &ts);
			continue;
		}
		struct rfile *rf = ln->rf;
		rfile_hold(rf);		/* it may get clean (and released) meanwhile */
		pthread_mutex_unlock(&C.lock);
		/* shared: writers and readers of the file's other stripes go
		 * on; those of the lines being written wait for them (busy) */
		pthread_rwlock_rdlock(&rf->rw);
		pthread_mutex_lock(&C.lock);
		bool release = false;
		/* the picked line and what follows it in the file first */
		uint64_t s = ln->rf == rf ? ln->h->stripe : 0;
		destage_file_locked(rf, s, ~0ull, pressure_locked() ? DESTAGE_BATCH : -DESTAGE_BATCH, &release);
		pthread_mutex_unlock(&C.lock);
		pthread_rwlock_unlock(&rf->rw);
		if (release)
			rfile_release(rf);
		rfile_release(rf);
		if (cache_opts.bbu == BBU_FILE)
			cachelog_advance();
		pthread_mutex_lock(&C.lock);
	}
	pthread_mutex_unlock(&C.lock);
	return NULL;
}

static void kick_locked(void)
{
	pthread_cond_broadcast(&C.work);
}

/*
 * Write every dirty line out.  0, or -EIO when some cannot be written
 * (too many members lost): they stay in the cache.
 */
static int flush_all(void)
{
	int ret = 0;
	pthread_mutex_lock(&C.lock);
	C.draining++;
	kick_locked();
	while (C.dirty.n > 0) {
		bool stuck = false;
		for (struct line *ln = C.dirty.head; ln && !stuck; ln = ln->next)
			stuck = !ln->busy && ln->since > now_ns();
		if (stuck && !array_writable(C.a)) {
			ret = -EIO;
			break;
		}
		if (C.nthr == 0) {
			/* no destage threads (unmount): do it here, once */
			struct line *ln = C.dirty.head;
			struct rfile *rf = ln->rf;
			bool release;
			rfile_hold(rf);
			pthread_mutex_unlock(&C.lock);
			pthread_rwlock_wrlock(&rf->rw);
			pthread_mutex_lock(&C.lock);
			int r = flush_range_locked(rf, 0, ~0ull, &release);
			pthread_mutex_unlock(&C.lock);
			pthread_rwlock_unlock(&rf->rw);
			if (release)
				rfile_release(rf);
			rfile_release(rf);
			pthread_mutex_lock(&C.lock);
			if (r < 0) {
				ret = r;
				break;
			}
			continue;
		}
		struct timespec ts = deadline_ms(1000);
		pthread_cond_timedwait(&C.idle, &C.lock, &ts);
	}
	C.draining--;
	pthread_mutex_unlock(&C.lock);
	if (ret == 0 && cache_opts.bbu == BBU_FILE)
		cachelog_advance();
	return ret;
}

/* The oldest file-log position a dirty line may still need (the log's
 * tail), or the head when nothing is dirty (cachelog_ops.tail). */
static void log_tail(void *arg, uint64_t *v, uint64_t *seq)
{
	(void)arg;
	pthread_mutex_lock(&C.lock);
	cachelog_position(v, seq);
	for (struct line *ln = C.dirty.head; ln; ln = ln->next)
		if (ln->log_v < *v) {
			*v = ln->log_v;
			*seq = ln->log_seq;
		}
	for (struct log_pin *p = C.pins; p; p = p->next)
		if (p->v < *v) {
			*v = p->v;
			*seq = p->seq;
		}
	pthread_mutex_unlock(&C.lock);
}

/* The log is full: write the oldest lines out (called without locks). */
static void wait_destage(bool for_line);

/* Does a dirty line need a record of the log (cachelog_ops.needed)? */
static bool log_needed(void *arg)
{
	(void)arg;
	uint64_t head, seq;
	pthread_mutex_lock(&C.lock);
	cachelog_position(&head, &seq);
	bool need = false;
	for (struct line *ln = C.dirty.head; ln && !need; ln = ln->next)
		need = ln->log_v < head;
	pthread_mutex_unlock(&C.lock);
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
static int without_log(struct rfile *rf)
{
	int r = stripe_mark_dirty(rf);
	if (r == 0)
		r = flush_all();
	/* (the log may be retired already: its retirement does not wait for
	 * lines it holds no record of) */
	if (r == 0)
		r = array_sync_members(C.a);
	if (r == 0)
		r = cachelog_reset();
	return r;
}

/* The log is full (cachelog_ops.wait). */
static void log_wait(void *arg)
{
	(void)arg;
	wait_destage(false);
}

/* ----------------------------------------------------------- write path */

/* Wait while too many lines are dirty (back-pressure).  No lock held. */
static void wait_room(void)
{
	pthread_mutex_lock(&C.lock);
	while (cache_backpressure(C.dirty.n, C.high) && !C.stop) {
		kick_locked();
		pthread_cond_wait(&C.space, &C.lock);
	}
	pthread_mutex_unlock(&C.lock);
}

/* Make the destage threads write everything out and wait up to 50 ms
 * for a batch (for_line: unless a line is free already).  No lock held. */
static void wait_destage(bool for_line)
{
	pthread_mutex_lock(&C.lock);
	C.draining++;
	kick_locked();
	struct timespec ts = deadline_ms(50);
	if (!for_line || (!C.free.head && !C.clean.head))
		pthread_cond_timedwait(&C.space, &C.lock, &ts);
	C.draining--;
	pthread_mutex_unlock(&C.lock);
}

/* The bytes of sector `sec` of stripe s as the file holds them now
 * (members; zeros past the end).  rf->rw held shared. */
static int read_sector(struct rfile *rf, uint64_t s, uint32_t sec, uint8_t *out)
{
	memset(out, 0, SECTOR);
	ssize_t r = stripe_read_locked(rf, out, SECTOR, s * C.line_bytes + (uint64_t)sec * SECTOR);
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
static int put_range(struct rfile *rf, uint64_t s, uint64_t a, uint64_t b, const uint8_t *src,
		     uint64_t new_size, uint8_t *head, uint8_t *tail)
{
	uint32_t sa = a / SECTOR, sb = (b - 1) / SECTOR;
	bool part_a = a % SECTOR != 0, part_b = b % SECTOR != 0;
	uint8_t fill[2][SECTOR];
	bool have[2] = { false, false };

	pthread_mutex_lock(&C.lock);
	struct line *ln;
	while ((ln = get_line_locked(rf, s)) && ln->busy)
		pthread_cond_wait(&C.idle, &C.lock);	/* being written out */
	if (!ln) {
		pthread_mutex_unlock(&C.lock);
		return 1;
	}
	bool need_a = part_a && !bit(VALID(ln), sa);
	bool need_b = part_b && !bit(VALID(ln), sb) && !(sb == sa && need_a);
	if (need_a || need_b) {
		ln->pins++;
		pthread_mutex_unlock(&C.lock);
		int r = 0;
		if (need_a) {
			r = read_sector(rf, s, sa, fill[0]);
			have[0] = r == 0;
		}
		if (need_b && r == 0) {
			r = read_sector(rf, s, sb, fill[1]);
			have[1] = r == 0;
		}
		pthread_mutex_lock(&C.lock);
		ln->pins--;
		if (r < 0) {
			pthread_mutex_unlock(&C.lock);
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
	for (uint32_t i = sa; i <= sb; i++) {
		if (!bit(VALID(ln), i)) {
			set_bit(VALID(ln), i);
			ln->nvalid++;
		}
		if (!bit(DIRTY(ln), i)) {
			set_bit(DIRTY(ln), i);
			ln->ndirty++;
			C.dirty_sectors++;
		}
	}
	if (ln->h->size_hint < new_size)
		ln->h->size_hint = new_size;
	if (!was_dirty)
		note_dirty_locked(ln, rf);
	if (ln->nvalid == C.nsec && ln->ndirty == C.nsec)
		kick_locked();
	pthread_mutex_unlock(&C.lock);
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

static ssize_t write_back(struct rfile *rf, const uint8_t *buf, size_t len, uint64_t off)
{
	uint64_t lb = C.line_bytes, end = off + len;
	int r = kept() && log_noted() ? stripe_mark_cached(rf) : stripe_mark_dirty(rf);
	if (r < 0)
		return r;
	wait_room();
	pthread_rwlock_rdlock(&rf->rw);
	/* The file log's records of one file go in the order the cache takes
	 * the writes (two writers of the same bytes through two hard links
	 * are not ordered by the kernel): a replay must end where the cache
	 * did. */
	bool logged = cache_opts.bbu == BBU_FILE;
	uint64_t rec_from = off, rec_end = 0;	/* what has no record yet; where the last ends */
	int lr = 0;	/* the failed log's error: no more records (without_log()) */
	if (logged) {
		__atomic_add_fetch(&rf->unlogged, 1, __ATOMIC_ACQ_REL);	/* (before any byte is in a line) */
		pthread_mutex_lock(&rf->log_order);
	}
	uint64_t new_size = grow_to(rf, end);
	struct edges e = { .hlen = off % SECTOR };
	for (uint64_t pos = off; pos < end;) {
		uint64_t s = pos / lb, sbeg = s * lb;
		uint64_t y = end < sbeg + lb ? end : sbeg + lb;
		bool want_h = logged && pos == off && e.hlen, want_t = logged && y == end && end % SECTOR;
		r = put_range(rf, s, pos - sbeg, y - sbeg, buf + (pos - off), new_size, want_h ? e.head : NULL,
			      want_t ? e.tail : NULL);
		if (r < 0)
			break;
		if (r == 0 && want_t) {
			/* up to the sector's end or the file's (writers of
			 * this file wait for log_order; truncate for rf->rw) */
			uint64_t lim = (end / SECTOR + 1) * SECTOR;
			uint64_t size = __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE);
			e.tlen = size > end ? (uint32_t)((size < lim ? size : lim) - end) : 0;
		}
		if (r == 1) {
			/* (the part already in the cache gets its record now:
			 * another writer may take these bytes meanwhile) */
			if (logged && pos > rec_from && lr == 0) {
				int e2 = record_part(rf, buf, off, end, rec_from, pos, &e, &rec_end);
				if (e2 < 0 && !cachelog_failed()) {
					r = e2;
					break;
				}
				lr = e2;
				rec_from = pos;
			}
			if (logged)
				pthread_mutex_unlock(&rf->log_order);
			pthread_rwlock_unlock(&rf->rw);
			wait_destage(true);
			pthread_rwlock_rdlock(&rf->rw);
			if (logged)
				pthread_mutex_lock(&rf->log_order);
			/* (a truncate meanwhile may have cut the file short of
			 * the part written so far: the rest must show) */
			new_size = grow_to(rf, end);
			continue;
		}
		pos = y;
	}
	if (r >= 0) {
		/* getattr reports the primary shard's mtime */
		static const struct timespec now[2] = { { 0, UTIME_OMIT }, { 0, UTIME_NOW } };
		futimens(rf->fd[rf->a->primary], now);
	}
	if (r >= 0 && logged && end > rec_from && lr == 0)
		lr = record_part(rf, buf, off, end, rec_from, end, &e, &rec_end);
	if (logged)
		pthread_mutex_unlock(&rf->log_order);
	pthread_rwlock_unlock(&rf->rw);
	if (r >= 0 && logged && lr == 0)
		lr = cachelog_commit(rec_end);
	if (logged)
		__atomic_sub_fetch(&rf->unlogged, 1, __ATOMIC_ACQ_REL);
	if (r >= 0 && lr < 0)
		r = cachelog_failed() ? without_log(rf) : lr;
	return r < 0 ? r : (ssize_t)len;
}

/* Lines of rf over [off, end) are written out and forgotten, so that
 * bytes going straight to the members are not shadowed by older cached
 * ones.  rf->rw held exclusively. */
static int drop_range_locked(struct rfile *rf, uint64_t off, uint64_t end, bool *release)
{
	uint64_t lb = C.line_bytes;
	int ret = 0;
	*release = false;
	if (!C.up || end <= off)
		return 0;
	pthread_mutex_lock(&C.lock);
	for (uint64_t s = off / lb; s <= (end - 1) / lb && ret == 0; s++) {
		struct line *ln = lookup_locked(rf->id, s);
		if (!ln)
			continue;
		if (ln->ndirty) {
			bool rel;
			/* if it cannot be written, neither may the new bytes be:
			 * the old line would later overwrite them */
			ret = flush_range_locked(rf, s, s + 1, &rel);
			*release |= rel;
			ln = lookup_locked(rf->id, s);
			if (ret < 0 || !ln)
				continue;
		}
		if (!ln->pins && !ln->ndirty)
			drop_clean_locked(ln);
	}
	pthread_mutex_unlock(&C.lock);
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
static int record_and_unlock(struct rfile *rf, bool done, uint64_t off, const void *buf, size_t len)
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
	return r < 0 && cachelog_failed() ? without_log(rf) : r;
}

static ssize_t write_through(struct rfile *rf, const uint8_t *buf, size_t len, uint64_t off)
{
	if (cache_opts.bbu == BBU_FILE && cachelog_live()) {
		/* a record still in the log must never be replayed over these
		 * bytes: empty it first (only after a switch from write-back) */
		int r = flush_all();
		if (r == 0)
			r = cachelog_reset();
		if (r < 0)
			return r;
	}
	if (!array_writable(rf->a))
		return rf->a->readonly ? -EROFS : -EIO;
	rebuild_note_user_io();
	bool release;
	pthread_rwlock_wrlock(&rf->rw);
	ssize_t r = drop_range_locked(rf, off, off + len, &release);
	if (r == 0)
		r = stripe_write_locked(rf, buf, len, off);
	/* A write-back write that came between the emptying above and here
	 * (a small one that still had room while this one had not) left its
	 * record in the log, and a replay would put those older bytes over
	 * these: this write gets a record after it. */
	int e = record_and_unlock(rf, r >= 0, off, buf, len);
	if (e < 0)
		r = e;
	if (release)
		rfile_release(rf);
	return r;
}

ssize_t cache_write(struct rfile *rf, const void *buf, size_t len, uint64_t off)
{
	if (len == 0)
		return 0;
	if (cache_offline())
		return -EIO;
	ssize_t r;
	if (!admit(len)) {
		r = C.up ? write_through(rf, buf, len, off) : stripe_write(rf, buf, len, off);
	} else if (!array_writable(rf->a)) {
		return rf->a->readonly ? -EROFS : -EIO;
	} else {
		rebuild_note_user_io();
		r = write_back(rf, buf, len, off);
	}
	if (r > 0)
		rfile_note_acked(rf, off + (uint64_t)r);	/* (returned to the caller next) */
	return r;
}

/* ------------------------------------------------------------ read path */

/* Put dirty sectors of line ln over [x, y) (bytes in the line) into dst
 * (which holds [x, y)). */
static void overlay_dirty(struct line *ln, uint64_t x, uint64_t y, uint8_t *dst)
{
	if (!ln || !ln->ndirty)
		return;
	for (uint32_t i = x / SECTOR; i <= (y - 1) / SECTOR; i++) {
		if (!bit(DIRTY(ln), i))
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

static void read_ahead(struct rfile *rf, uint64_t off, size_t len);

ssize_t cache_read(struct rfile *rf, void *buf, size_t len, uint64_t off)
{
	if (cache_offline())
		return -EIO;
	if (!C.up)
		return stripe_read(rf, buf, len, off);
	uint64_t lb = C.line_bytes;
	uint8_t *dst = buf;
	ssize_t ret = 0;
	rebuild_note_user_io();
	pthread_rwlock_rdlock(&rf->rw);
	uint64_t size = __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE);
	if (off >= size) {
		pthread_rwlock_unlock(&rf->rw);
		return 0;
	}
	if (len > size - off)
		len = size - off;
	uint64_t end = off + len;
	for (uint64_t pos = off; pos < end && ret >= 0;) {
		uint64_t s = pos / lb, sbeg = s * lb;
		uint64_t y = end < sbeg + lb ? end : sbeg + lb;
		uint64_t a = pos - sbeg, b = y - sbeg;
		pthread_mutex_lock(&C.lock);
		struct line *ln = lookup_locked(rf->id, s);
		if (ln && range_set(VALID(ln), a, b)) {
			memcpy(dst + (pos - off), ln->data + a, b - a);
			C.hits++;
			if (ln->list == L_CLEAN && !ln->pins)
				move_to(ln, L_CLEAN);	/* most recently used */
			pthread_mutex_unlock(&C.lock);
			pos = y;
			continue;
		}
		if (ln && ln->busy) {
			/* its stripe is being written: the members are not
			 * consistent until that is done */
			pthread_cond_wait(&C.idle, &C.lock);
			pthread_mutex_unlock(&C.lock);
			continue;
		}
		C.misses++;
		/* pinned, the line is neither written out nor evicted while we
		 * read the members: its dirty sectors then still hold what the
		 * members lack */
		if (ln)
			ln->pins++;
		pthread_mutex_unlock(&C.lock);
		ssize_t r = stripe_read_locked(rf, dst + (pos - off), y - pos, pos);
		pthread_mutex_lock(&C.lock);
		if (ln)
			ln->pins--;
		if (r < 0) {
			pthread_mutex_unlock(&C.lock);
			ret = r;
			break;
		}
		if ((uint64_t)r < y - pos)
			memset(dst + (pos - off) + r, 0, y - pos - r);	/* past the shards: cached */
		if (ln) {
			overlay_dirty(ln, a, b, dst + (pos - off));
			keep_clean(ln, a, b, dst + (pos - off));
		}
		pthread_mutex_unlock(&C.lock);
		pos = y;
	}
	pthread_rwlock_unlock(&rf->rw);
	if (ret >= 0)
		read_ahead(rf, off, len);
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

static void read_ahead(struct rfile *rf, uint64_t off, size_t len)
{
	enum cache_rpolicy p = cache_opts.rpolicy;
	bool seq = off == rf->ra_next;
	rf->ra_seq = seq ? rf->ra_seq + 1 : 0;
	rf->ra_next = off + len;
	if (p == RP_NORA || (p == RP_ADAPTIVE && rf->ra_seq < 2) || !C.ra_started)
		return;
	uint64_t lb = C.line_bytes;
	uint32_t w = RA_BYTES / lb < 2 ? 2 : RA_BYTES / lb;
	uint64_t s0 = (off + len) / lb, s1 = s0 + w;
	uint64_t size = __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE);
	if (s1 > (size + lb - 1) / lb)
		s1 = (size + lb - 1) / lb;
	if (rf->ra_done > s0 && rf->ra_done <= s1)
		s0 = rf->ra_done;	/* queued already up to there */
	if (s0 >= s1)
		return;
	pthread_mutex_lock(&C.lock);
	if (C.ra_head - C.ra_tail < 32) {
		rfile_hold(rf);
		C.raq[C.ra_head % 32] = (struct ra_req){ rf, s0, (uint32_t)(s1 - s0) };
		C.ra_head++;
		rf->ra_done = s1;
		pthread_cond_signal(&C.ra_cond);
	}
	pthread_mutex_unlock(&C.lock);
}

static void *ra_main(void *arg)
{
	(void)arg;
	uint8_t *tmp = NULL;
	if (posix_memalign((void **)&tmp, 4096, C.line_bytes))
		return NULL;
	pthread_mutex_lock(&C.lock);
	while (!C.stop) {
		if (C.ra_head == C.ra_tail) {
			pthread_cond_wait(&C.ra_cond, &C.lock);
			continue;
		}
		struct ra_req q = C.raq[C.ra_tail % 32];
		C.ra_tail++;
		pthread_mutex_unlock(&C.lock);
		struct rfile *rf = q.rf;
		pthread_rwlock_rdlock(&rf->rw);
		uint64_t size = __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE);
		for (uint64_t s = q.s0; s < q.s0 + q.n && !C.stop; s++) {
			uint64_t sbeg = s * C.line_bytes;
			if (sbeg >= size)
				break;
			uint64_t want = size - sbeg < C.line_bytes ? size - sbeg : C.line_bytes;
			pthread_mutex_lock(&C.lock);
			struct line *ln = lookup_locked(rf->id, s);
			if (ln && (ln->busy || range_set(VALID(ln), 0, want / SECTOR * SECTOR))) {
				pthread_mutex_unlock(&C.lock);
				continue;
			}
			if (!ln && (C.dirty.n >= C.low || !(ln = get_line_locked(rf, s)))) {
				pthread_mutex_unlock(&C.lock);
				break;	/* the cache is busy with writes: no read-ahead */
			}
			ln->pins++;
			pthread_mutex_unlock(&C.lock);
			ssize_t r = stripe_read_locked(rf, tmp, want, sbeg);
			pthread_mutex_lock(&C.lock);
			ln->pins--;
			if (r > 0) {
				keep_clean(ln, 0, r, tmp);
			}
			pthread_mutex_unlock(&C.lock);
			if (r <= 0)
				break;
		}
		pthread_rwlock_unlock(&rf->rw);
		rfile_release(rf);
		pthread_mutex_lock(&C.lock);
	}
	/* requests left at stop: drop their holds */
	while (C.ra_head != C.ra_tail) {
		struct rfile *rf = C.raq[C.ra_tail % 32].rf;
		C.ra_tail++;
		pthread_mutex_unlock(&C.lock);
		rfile_release(rf);
		pthread_mutex_lock(&C.lock);
	}
	pthread_mutex_unlock(&C.lock);
	free(tmp);
	return NULL;
}

/* ------------------------------------------------------ truncate, fsync */

static void pin_drop(struct log_pin *pin)
{
	pthread_mutex_lock(&C.lock);
	struct log_pin **pp = &C.pins;
	while (*pp && *pp != pin)
		pp = &(*pp)->next;
	if (*pp)
		*pp = pin->next;
	pthread_mutex_unlock(&C.lock);
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
static int lock_for_truncate(struct rfile *rf, uint64_t size, bool covered, struct log_pin *pin)
{
	for (;;) {
		pthread_rwlock_wrlock(&rf->rw);
		if (cache_opts.bbu != BBU_FILE || cachelog_retired() || (!covered && !cachelog_live()))
			return 0;
		int r = -EAGAIN;
		uint64_t end = 0;
		if (pthread_mutex_trylock(&rf->log_order) == 0) {
			pthread_mutex_lock(&C.lock);
			cachelog_position(&pin->v, &pin->seq);	/* (at or before the record) */
			pin->next = C.pins;
			C.pins = pin;
			pthread_mutex_unlock(&C.lock);
			r = cachelog_try_put_truncate(rf->id, size, &end);
			pthread_mutex_unlock(&rf->log_order);
			if (r == 0)
				r = cachelog_commit(end);
			if (r < 0)
				pin_drop(pin);
		}
		if (r < 0 && r != -EAGAIN && cachelog_failed()) {
			/* (then the truncate goes on without its record) */
			pthread_rwlock_unlock(&rf->rw);
			r = without_log(rf);
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
		wait_destage(false);
	}
}

int cache_truncate(struct rfile *rf, uint64_t size)
{
	if (cache_offline())
		return -EIO;
	if (!C.up)
		return stripe_truncate(rf, size);
	if (!array_writable(rf->a))
		return rf->a->readonly ? -EROFS : -EIO;
	/* A file changed only through the cache keeps the cache's mark: the
	 * truncate is in the log before it begins (bbu=file), and a shrink
	 * records that it began (META_F_TRUNC), so the mount finishes one
	 * cut short; its guard keeps what a cut could change in a degraded
	 * stripe. */
	bool covered = kept() && log_noted();
	struct log_pin pin = { 0, 0, NULL };
	int r = covered ? stripe_mark_cached(rf) : stripe_mark_dirty(rf);
	if (r == 0)
		r = lock_for_truncate(rf, size, covered, &pin);
	if (r < 0)
		return r;
	/* a shrink says it began before dirty lines past the new end go:
	 * failing from then on, it is finished (stripe_truncate_locked()) */
	bool said = size < rf->size;
	if (said)
		r = rfile_record_truncate(rf, size);
	if (r < 0) {
		pthread_rwlock_unlock(&rf->rw);
		pin_drop(&pin);
		return r;
	}
	uint64_t lb = C.line_bytes;
	bool release = false;
	pthread_mutex_lock(&C.lock);
	/* lines wholly past the new end go; the one across it loses the
	 * sectors past the end and the bytes past it in its last sector */
	for (uint32_t i = 0; i < C.nlines; i++) {
		struct line *ln = &C.lines[i];
		if (ln->list == L_FREE || ln->h->fid != rf->id)
			continue;
		uint64_t s = ln->h->stripe, sbeg = s * lb;
		if (sbeg >= size) {
			if (ln->ndirty)
				release |= note_clean_locked(ln);	/* cut off: dropped */
			if (!ln->pins)
				drop_clean_locked(ln);
			continue;
		}
		if (sbeg + lb > size) {
			uint64_t cut = size - sbeg;
			uint32_t first = (cut + SECTOR - 1) / SECTOR;
			if (cut % SECTOR)
				memset(ln->data + cut, 0, SECTOR - cut % SECTOR);
			for (uint32_t k = first; k < C.nsec; k++) {
				if (bit(DIRTY(ln), k)) {
					clear_bit(DIRTY(ln), k);
					ln->ndirty--;
					C.dirty_sectors--;
				}
				if (bit(VALID(ln), k)) {
					clear_bit(VALID(ln), k);
					ln->nvalid--;
				}
			}
			if (ln->list == L_DIRTY && ln->ndirty == 0)
				release |= note_clean_locked(ln);
		}
		ln->h->size_hint = size;
	}
	pthread_mutex_unlock(&C.lock);
	stripe_log_covered(covered);
	r = stripe_truncate_locked(rf, size, said);
	stripe_log_covered(false);
	pthread_rwlock_unlock(&rf->rw);
	pin_drop(&pin);
	if (release)
		rfile_release(rf);
	return r;
}

void cache_forget_clean(struct rfile *rf, uint64_t off, uint64_t end)
{
	if (!C.up)
		return;
	uint64_t lb = C.line_bytes;
	uint64_t size = __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE);
	if (end > size)
		end = size;	/* (no line lies past the end: cache_truncate()) */
	if (off >= end)
		return;
	/* the range's lines looked up, or every line looked at: fewer */
	bool scan = (end - off) / lb > C.nlines;
	pthread_mutex_lock(&C.lock);
	for (uint64_t i = scan ? 0 : off / lb; scan ? i < C.nlines : i * lb < end; i++) {
		struct line *ln = scan ? &C.lines[i] : lookup_locked(rf->id, i);
		if (!ln || ln->list == L_FREE || ln->h->fid != rf->id)
			continue;
		uint64_t sbeg = ln->h->stripe * lb;
		if (sbeg >= end || sbeg + lb <= off)
			continue;
		uint32_t first = off > sbeg ? (uint32_t)((off - sbeg) / SECTOR) : 0;
		uint32_t last = end - sbeg < lb ? (uint32_t)((end - sbeg + SECTOR - 1) / SECTOR) : C.nsec;
		for (uint32_t k = first; k < last && k < C.nsec; k++)
			if (bit(VALID(ln), k) && !bit(DIRTY(ln), k)) {
				clear_bit(VALID(ln), k);
				ln->nvalid--;
			}
		if (ln->list == L_CLEAN && ln->nvalid == 0 && !ln->pins)
			drop_clean_locked(ln);
	}
	pthread_mutex_unlock(&C.lock);
}

int cache_fsync(struct rfile *rf, bool datasync)
{
	if (C.up) {
		if (cache_opts.bbu == BBU_FILE && writeback_now()) {
			/* durable in the log already (every write-back write is
			 * fdatasynced there before it is acknowledged) */
			return 0;
		}
		int r = flush_file(rf, 0, ~0ull);
		if (r < 0)
			return r;
	}
	return stripe_fsync(rf, datasync);
}

/* ---------------------------------------------------- battery, learning */

static void bbu_set_locked(enum bbu_state s, const char *why);

/* The file log failed (cachelog_ops.failed): the battery with it. */
static void log_failed(void *arg)
{
	(void)arg;
	/* its guard slots too: writes into degraded stripes go on unguarded
	 * rather than fail (the slots are in the same file) */
	guard_off();
	if (array_absent_count(C.a))
		log_warn("array '%s' is degraded: from now on a crash during a write can damage the chunks of its absent "
			 "members (the write hole), as without a battery", C.a->sb.name);
	pthread_mutex_lock(&C.lock);
	enum bbu_state old = C.bbu;
	bbu_set_locked(BBU_FAILED, "the cache log failed");
	pthread_mutex_unlock(&C.lock);
	if (old != BBU_FAILED)
		array_event(C.a, "BbuFailed", -1);
}

static void bbu_set_locked(enum bbu_state s, const char *why)
{
	if (C.bbu == s)
		return;
	enum bbu_state old = C.bbu;
	C.bbu = s;
	log_warn("battery: %s -> %s (%s); write policy now %s", bbu_state_name(old), bbu_state_name(s), why,
		 cache_wpolicy_name(effective_locked(NULL)));
	if (effective_locked(NULL) != WP_WRITEBACK)
		kick_locked();
}

static void learn_check_locked(void)
{
	if (C.bbu == BBU_LEARNING && now_ns() >= C.learn_end) {
		bbu_set_locked(BBU_OPTIMAL, "learn cycle complete");
		pthread_mutex_unlock(&C.lock);
		array_event(C.a, "BbuLearnDone", -1);
		pthread_mutex_lock(&C.lock);
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

#define OLD_LHDR(i) ((struct lhdr *)((uint8_t *)C.old + C.old->lhdr_off + (uint64_t)(i) * C.old->lhdr_stride))
#define OLD_DATA(i) ((uint8_t *)C.old + C.old->data_off + (uint64_t)(i) * C.old->line_bytes)

static uint32_t popcount_bm(const uint64_t *bm, uint32_t w)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < w; i++)
		n += __builtin_popcountll(bm[i]);
	return n;
}

int cache_open(struct array *a, char *err, size_t errlen)
{
	C.a = a;
	C.configured = cache_opts.wpolicy;
	C.bbu = cache_opts.bbu == BBU_NONE ? BBU_MISSING : BBU_OPTIMAL;
	/* a surviving shm arena of this array (kill -9 of the last daemon) */
	shm_name(a, C.shm_path, sizeof(C.shm_path));
	int fd = open(C.shm_path, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		struct stat st;
		void *p = MAP_FAILED;
		if (fstat(fd, &st) == 0 && st.st_size > 0)
			p = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (p != MAP_FAILED && arena_hdr_ok(p, st.st_size, a)) {
			C.old = p;
			C.old_len = st.st_size;
			for (uint32_t i = 0; i < C.old->nlines; i++) {
				struct lhdr *h = OLD_LHDR(i);
				if (h->fid)
					C.old_dirty_bytes += (uint64_t)popcount_bm(h->bm + C.old->bm_words, C.old->bm_words) * SECTOR;
			}
			if (C.old_dirty_bytes)
				log_warn("array '%s': the cache of the last run (%s) holds %" PRIu64 " bytes not yet written to the members",
					 a->sb.name, C.shm_path, C.old_dirty_bytes);
			/* its guard slots: what they hold is put back first, and the
			 * replay's own writes use them (bbu=file: the log's) */
			struct guard_store gst;
			arena_guards(p, &gst);
			if (cache_opts.bbu != BBU_FILE)
				guard_use(&gst);
			guard_recover(&gst, cache_opts.bbu != BBU_FILE);
			C.last_guarded = gst.nslots > 0;
			C.last_found = true;
		} else if (p != MAP_FAILED) {
			log_warn("cache file '%s' is not a valid raidfs cache of array '%s': ignored", C.shm_path, a->sb.name);
			munmap(p, st.st_size);
		}
	}
	if (cache_opts.bbu == BBU_FILE) {
		static const struct cachelog_ops ops = {
			.tail = log_tail, .wait = log_wait, .needed = log_needed, .failed = log_failed,
		};
		int r = cachelog_open(a, cache_opts.bbu_path, cache_opts.size * 2, &ops, err, errlen);
		if (r < 0)
			return r;
		C.old_has_log = cachelog_replay_pending();
		/* the log the members' cache marks were made for, or another
		 * (a new one, one given by mistake): then the marks promise
		 * nothing */
		int who = cachelog_was_there() ? array_cache_log_check(a, cachelog_id()) : 0;
		C.last_retired = who == -2;
		if (who == -2)
			guard_replay_done();	/* (its slots: stopped before it was retired) */
		if (who == -2 && cachelog_replay_pending()) {
			/* retired when it failed: the members hold all it had */
			log_warn("array '%s': the cache log '%s' failed in an earlier run and was retired once the members held "
				 "everything it had: its %" PRIu64 " bytes of old records are dropped", a->sb.name,
				 cache_opts.bbu_path, cachelog_replay_bytes());
			int r = cachelog_drop();
			if (r < 0) {
				snprintf(err, errlen, "cannot write the cache log '%s': %s (check its disk, or give another log)",
					 cache_opts.bbu_path, strerror(-r));
				return r;
			}
			C.old_has_log = false;
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
		C.last_guarded |= who > 0 && cachelog_had_guards();
		C.last_found |= who > 0;
	}
	return 0;
}

int cache_replay_file(struct rfile *rf)
{
	/* the chunks a cut write into a degraded stripe could have changed,
	 * as they were, before anything is written over them */
	int ret = guard_replay_file(rf);
	if (ret == 0 && C.old) {
		uint64_t lb = C.old->line_bytes;
		uint32_t w = C.old->bm_words;
		for (uint32_t i = 0; i < C.old->nlines && ret == 0; i++) {
			struct lhdr *h = OLD_LHDR(i);
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
					ssize_t r = stripe_write_locked(rf, OLD_DATA(i) + (a - sbeg), b - a, a);
					ret = r < 0 ? (int)r : 0;
				}
				x = y;
			}
		}
	}
	if (ret == 0 && C.old_has_log)
		ret = cachelog_replay_file(rf);
	return ret;
}

bool cache_battery(void)
{
	return battery_kept();
}

bool cache_guarded_last_run(void)
{
	return C.last_guarded;
}

bool cache_retired_last_run(void)
{
	return C.last_retired;
}

bool cache_found_last_run(void)
{
	return C.last_found;
}

bool cache_preserved_for(uint64_t fid)
{
	if (guard_holds(fid))
		return true;
	for (uint32_t i = 0; C.old && i < C.old->nlines; i++)
		if (OLD_LHDR(i)->fid == fid)
			return true;
	return C.old_has_log && cachelog_holds(fid);
}

uint64_t cache_preserved_bytes(void)
{
	return C.old_dirty_bytes + (C.old_has_log ? cachelog_replay_bytes() : 0);
}

void cache_set_offline(bool offline)
{
	__atomic_store_n(&C.offline, offline, __ATOMIC_RELEASE);
}

bool cache_log_marks_wait(void)
{
	return cache_opts.bbu == BBU_FILE && stripe_member_sync != MSYNC_NEVER;
}

void cache_set_offline_reason(const char *why)
{
	pthread_mutex_lock(&C.lock);
	snprintf(C.offline_why, sizeof(C.offline_why), "%s", why);
	pthread_mutex_unlock(&C.lock);
}

bool cache_offline(void)
{
	return __atomic_load_n(&C.offline, __ATOMIC_ACQUIRE);
}

/* The preserved cache: its replay (cache_monitor()) and its discard
 * (discard_old(), from the control socket) one at a time. */
static pthread_mutex_t preserved_lock = PTHREAD_MUTEX_INITIALIZER;

/* Drop what a previous run left (raidfs cache discard --force). */
static uint64_t discard_old(void)
{
	uint64_t b = cache_preserved_bytes();
	guard_replay_done();
	if (C.old) {
		if (cache_opts.bbu != BBU_FILE)
			guard_use(NULL);
		munmap(C.old, C.old_len);
		C.old = NULL;
		unlink(C.shm_path);
	}
	C.old_dirty_bytes = 0;
	if (C.old_has_log) {
		cachelog_replay_done();
		C.old_has_log = false;
	}
	/* what the files' cache marks promised is gone with it */
	C.last_found = C.last_guarded = C.last_retired = false;
	return b;
}

void cache_monitor(struct array *a)
{
	if (!cache_offline() || array_state(a) == ARRAY_FAILED)
		return;
	/* finish the mount as at mount time, if the members can take it now
	 * (not once the unmount began: cache_close()) */
	char err[1024];
	int count = 0;
	pthread_mutex_lock(&preserved_lock);
	if (C.closing) {
		pthread_mutex_unlock(&preserved_lock);
		return;
	}
	uint64_t b = cache_preserved_bytes();
	int r = array_resync_dirty(a, a->force, &count, err, sizeof(err));
	if (r == 0)
		r = cache_replay_finish(a, err, sizeof(err));
	if (r < 0) {
		pthread_mutex_unlock(&preserved_lock);
		if (!C.offline_told)
			log_err("array '%s': the mount cannot finish yet: %s", a->sb.name, err);
		C.offline_told = true;
		cache_set_offline_reason(err);
		return;
	}
	if (cache_start() < 0)
		log_warn("array '%s' runs without a cache", a->sb.name);
	cache_set_offline(false);
	pthread_mutex_unlock(&preserved_lock);
	log_warn("array '%s': %" PRIu64 " bytes of preserved cache written, %d dirty file%s resynced: the mount is online",
		 a->sb.name, b, count, count == 1 ? "" : "s");
	array_event(a, "PreservedCacheWritten", -1);
}

int cache_replay_finish(struct array *a, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	guard_replay_done();
	if (C.old) {
		if (cache_opts.bbu != BBU_FILE)
			guard_use(NULL);
		munmap(C.old, C.old_len);
		C.old = NULL;
		if (C.old_dirty_bytes)
			log_info("array '%s': %" PRIu64 " bytes from the cache of the last run written to the members",
				 a->sb.name, C.old_dirty_bytes);
		C.old_dirty_bytes = 0;
		unlink(C.shm_path);
	}
	if (C.old_has_log) {
		cachelog_replay_done();
		C.old_has_log = false;
	}
	return 0;
}

/* Set up the arena and start the destage threads. */
int cache_start(void)
{
	struct array *a = C.a;
	struct arena_hdr h;
	uint64_t lb = layout_stripe_data_bytes(&a->lay);
	size_t total = arena_layout(cache_opts.size, lb, guard_stride(&a->lay), &h);
	memcpy(h.uuid, a->sb.uuid, 16);
	h.crc = parity_crc32(0, &h, offsetof(struct arena_hdr, crc));
	void *p = MAP_FAILED;
	if (cache_opts.bbu == BBU_SHM) {
		int fd = open(C.shm_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0 && ftruncate(fd, total) == 0)
			p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (fd >= 0)
			close(fd);
		C.shm_up = p != MAP_FAILED;
		if (p == MAP_FAILED) {
			log_err("cannot set up the cache in '%s': %s; battery marked failed (write-through)",
				C.shm_path, strerror(errno));
			unlink(C.shm_path);
			C.bbu = BBU_FAILED;
		}
	}
	if (p == MAP_FAILED)
		p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		log_err("cannot allocate a cache of %zu bytes: %s; running without one", total, strerror(errno));
		return -ENOMEM;
	}
	C.arena = p;
	C.arena_len = total;
	C.line_bytes = lb;
	C.nsec = lb / SECTOR;
	C.bmw = h.bm_words;
	C.nlines = h.nlines;
	C.lines = calloc(C.nlines, sizeof(*C.lines));
	uint32_t hs = 1;
	while (hs < 2 * C.nlines)
		hs <<= 1;
	C.hash = calloc(hs, sizeof(*C.hash));
	C.hmask = hs - 1;
	if (!C.lines || !C.hash)
		return -ENOMEM;
	for (uint32_t i = 0; i < C.nlines; i++) {
		struct line *ln = &C.lines[i];
		ln->h = (struct lhdr *)(C.arena + h.lhdr_off + (uint64_t)i * h.lhdr_stride);
		ln->data = C.arena + h.data_off + (uint64_t)i * lb;
		ln->list = L_FREE;
		lru_add(&C.free, ln);
	}
	cache_watermarks(C.nlines, &C.high, &C.low);
	C.rate_t0 = now_ns();
	/* the header last: a valid header means valid line headers */
	memcpy(C.arena, &h, sizeof(h));
	if (C.shm_up) {
		struct guard_store gst;
		arena_guards(C.arena, &gst);
		guard_use(&gst);
	}
	C.up = true;
	C.stop = false;
	for (int i = 0; i < DESTAGE_THREADS; i++)
		if (pthread_create(&C.thr[C.nthr], NULL, destage_main, NULL) == 0)
			C.nthr++;
	C.ra_started = pthread_create(&C.ra_thr, NULL, ra_main, NULL) == 0;
	return 0;
}

void cache_close(void)
{
	pthread_mutex_lock(&preserved_lock);	/* (an offline mount stays so) */
	C.closing = true;
	pthread_mutex_unlock(&preserved_lock);
	if (!C.up)
		return;
	/* stop the threads, then write everything out here */
	pthread_mutex_lock(&C.lock);
	C.stop = true;
	pthread_cond_broadcast(&C.work);
	pthread_cond_broadcast(&C.space);
	pthread_cond_broadcast(&C.ra_cond);
	pthread_mutex_unlock(&C.lock);
	for (int i = 0; i < C.nthr; i++)
		pthread_join(C.thr[i], NULL);
	C.nthr = 0;
	if (C.ra_started)
		pthread_join(C.ra_thr, NULL);
	C.ra_started = false;
	int r = flush_all();
	if (r < 0) {
		uint64_t b = C.dirty_sectors * SECTOR;
		log_err("array '%s': %" PRIu64 " bytes in the cache could not be written to the members (%s); they are kept%s%s for the next mount",
			C.a->sb.name, b, strerror(-r), cache_opts.bbu == BBU_NONE ? " nowhere: LOST (no battery)" : " in ",
			cache_opts.bbu == BBU_SHM ? C.shm_path : cache_opts.bbu == BBU_FILE ? cache_opts.bbu_path : "");
		return;
	}
	if (cache_opts.bbu == BBU_SHM)
		unlink(C.shm_path);
	if (cache_opts.bbu == BBU_FILE)
		cachelog_close_clean();
	C.up = false;
}

/* ------------------------------------------------------------- control */

void cache_get_stats(struct cache_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&C.lock);
	st->size = cache_opts.size;
	st->line_bytes = C.line_bytes;
	st->lines = C.nlines;
	st->dirty_lines = C.dirty.n;
	st->dirty_bytes = C.dirty_sectors * SECTOR;
	st->hits = C.hits;
	st->misses = C.misses;
	uint64_t t = now_ns();
	st->destage_mbps = t - C.rate_t0 > 4000000000ull ? 0 : C.rate;
	st->destaged_bytes = C.destaged_bytes;
	st->configured = C.configured;
	st->effective = effective_locked(&st->why_wt);
	st->rpolicy = cache_opts.rpolicy;
	st->bbu = cache_opts.bbu;
	st->bbu_state = C.bbu;
	st->log_error = -cachelog_error();
	st->log_retired = cachelog_retired();
	st->learn_left = C.bbu == BBU_LEARNING && C.learn_end > t ? (C.learn_end - t + 999999999) / 1000000000 : 0;
	st->preserved_bytes = cache_preserved_bytes();
	st->offline = cache_offline();
	if (st->offline)
		snprintf(st->offline_why, sizeof(st->offline_why), "%s", C.offline_why);
	st->bbu_path = cache_opts.bbu == BBU_SHM ? C.shm_path : cache_opts.bbu == BBU_FILE ? cache_opts.bbu_path : "";
	pthread_mutex_unlock(&C.lock);
}

int cache_ctl(int argc, char **argv, char *buf, size_t len)
{
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
	if (!strncmp(set, "write_policy=", 13)) {
		int p = parse_wpolicy(set + 13);
		if (p < 0) {
			snprintf(buf, len, "raidfs: cache: unknown write policy '%s': use writeback, writethrough or always-writeback\n", set + 13);
			return 1;
		}
		if (p == WP_ALWAYS_WRITEBACK && !force) {
			snprintf(buf, len, "raidfs: cache: always-writeback keeps acknowledged writes in the cache even when the battery cannot protect them (a crash or power loss loses them); add --force to set it\n");
			return 1;
		}
		if (!C.up) {
			snprintf(buf, len, "raidfs: cache: the cache is not running yet: the mount is offline (see 'raidfs status %s'); set the policy once it is online\n",
				 C.a ? C.a->mountpoint : "MOUNTPOINT");
			return 1;
		}
		pthread_mutex_lock(&C.lock);
		enum cache_wpolicy old = C.configured;
		C.configured = p;
		enum cache_wpolicy e = effective_locked(NULL);
		kick_locked();
		pthread_mutex_unlock(&C.lock);
		log_info("cache: write policy %s -> %s (current %s)", cache_wpolicy_name(old), cache_wpolicy_name(p),
			 cache_wpolicy_name(e));
		array_event(C.a, "CachePolicyChange", -1);
		snprintf(buf, len, "write policy %s (current %s)\n", cache_wpolicy_name(p), cache_wpolicy_name(e));
		return 0;
	}
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
	if (!strcmp(set, "discard")) {
		if (!cache_preserved_bytes()) {
			snprintf(buf, len, "raidfs: cache: there is no preserved cache to discard\n");
			return 1;
		}
		if (!force) {
			snprintf(buf, len, "raidfs: cache: the preserved cache holds %" PRIu64 " bytes of acknowledged writes that are on no member; discarding loses them for good: add --force to discard\n",
				 cache_preserved_bytes());
			return 1;
		}
		pthread_mutex_lock(&preserved_lock);
		uint64_t b = discard_old();
		pthread_mutex_unlock(&preserved_lock);
		log_err("array '%s': preserved cache discarded by the administrator: %" PRIu64 " bytes of acknowledged writes LOST",
			C.a->sb.name, b);
		array_event(C.a, "PreservedCacheDiscarded", -1);
		snprintf(buf, len, "preserved cache discarded (%" PRIu64 " bytes lost); the mount comes online as soon as the array is there (see 'raidfs status')\n", b);
		return 0;
	}
	if (!strcmp(set, "flush")) {
		int r = C.up ? flush_all() : 0;
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
	pthread_mutex_lock(&C.lock);
	enum bbu_state old = C.bbu;
	const char *ev = NULL;
	if ((!strcmp(what, "learn") || !strcmp(what, "restore")) && cachelog_failed()) {
		pthread_mutex_unlock(&C.lock);
		snprintf(buf, len, "raidfs: bbu: the cache log '%s' failed in this run: write-back stays off until the next mount "
			 "(check the disk that holds it)\n", cache_opts.bbu_path);
		return 1;
	}
	if (!strcmp(what, "learn")) {
		if (C.bbu == BBU_FAILED) {
			pthread_mutex_unlock(&C.lock);
			snprintf(buf, len, "raidfs: bbu: the battery has failed; 'raidfs bbu MOUNTPOINT restore' first\n");
			return 1;
		}
		C.learn_end = now_ns() + (uint64_t)cache_opts.learn_secs * 1000000000ull;
		bbu_set_locked(BBU_LEARNING, "learn cycle started");
		ev = "BbuLearnStart";
	} else if (!strcmp(what, "fail")) {
		bbu_set_locked(BBU_FAILED, "failed by the administrator");
		ev = "BbuFailed";
	} else if (!strcmp(what, "restore")) {
		bbu_set_locked(BBU_OPTIMAL, "restored by the administrator");
		ev = "BbuRestored";
	} else {
		pthread_mutex_unlock(&C.lock);
		snprintf(buf, len, "raidfs: bbu: unknown action '%s': use show, learn, fail or restore\n", what);
		return 1;
	}
	enum cache_wpolicy e = effective_locked(NULL);
	pthread_mutex_unlock(&C.lock);
	if (old != C.bbu && ev)
		array_event(C.a, ev, -1);
	snprintf(buf, len, "battery %s (was %s); write policy now %s\n", bbu_state_name(C.bbu), bbu_state_name(old),
		 cache_wpolicy_name(e));
	return 0;
}
