/*
 * rebuild.c - online rebuild onto a replacement member (see rebuild.h).
 */
#include "rebuild.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "csum.h"
#include "file.h"
#include "stripe.h"
#include "meta.h"
#include "pair.h"
#include "parity.h"
#include "recon.h"
#include "util.h"

static pthread_mutex_t rb_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rb_cond = PTHREAD_COND_INITIALIZER;
static struct rebuild_info info = { .member = -1, .last_member = -1, .starting = -1, .min_rate = 100, .max_rate = 0 };
static pthread_t rb_thread;
static bool rb_thread_live, rb_stop, rb_abandon;
/* the member whose rebuild stopped because the array lost more members
 * than it tolerates (-1: none): it goes on once they are back
 * (rebuild_resume_due()) */
static int rb_waiting = -1;
/* starts that found another rebuild running (launch()): these members
 * (bits) wait their turn */
static uint64_t rb_queued;
static bool rb_promote;	/* the member being replaced in place failed */
/* the running rebuild is past its work (its member in service or given
 * up) and only tidies up: a start waits for it (wait_ending()) */
static bool rb_ending;
/* What the running rebuild is: onto a directory that holds nothing of
 * the member (or a replacement in place), a re-add of the member's own
 * directory that was away (the missed-write log says what changed), or
 * a re-add of a directory the member had before another one took its
 * slot (its log is the other one's: every file's version is compared) */
static enum rb_mode { RB_FULL, RB_READD, RB_READD_ALL } rb_mode;
void rebuild_get(struct rebuild_info *out)
{
	pthread_mutex_lock(&rb_lock);
	*out = info;
	pthread_mutex_unlock(&rb_lock);
}

void rebuild_abandon_replace(void)
{
	pthread_mutex_lock(&rb_lock);
	__atomic_store_n(&rb_abandon, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&rb_cond);	/* (a paused rebuild stops too) */
	pthread_mutex_unlock(&rb_lock);
}

void rebuild_target_failed(uint32_t j)
{
	pthread_mutex_lock(&rb_lock);
	bool ours = info.active && !info.replace && info.member == (int)j;
	pthread_mutex_unlock(&rb_lock);
	if (ours)
		rebuild_abandon_replace();
}

void rebuild_fail_replacement(struct array *a, const char *why)
{
	int sj = shadow_of(a);
	if (sj >= 0)
		log_err("array '%s': the replacement '%s' of member %d failed: %s; member %d stays in service",
			a->sb.name, a->m[SHADOW].path, sj, why, sj);
	pthread_mutex_lock(&rb_lock);
	bool running = info.active && info.replace;
	pthread_mutex_unlock(&rb_lock);
	if (running) {
		rebuild_abandon_replace();
		return;
	}
	/* stopped (waiting for members, say): dropped here */
	nslock_excl(&a->ns_lock);
	if (shadow_of(a) >= 0)
		array_shadow_drop(a);
	nslock_unlock(&a->ns_lock);
}

void rebuild_replaced_member_failed(void)
{
	__atomic_store_n(&rb_promote, true, __ATOMIC_RELEASE);
}

void rebuild_pause(bool pause)
{
	pthread_mutex_lock(&rb_lock);
	info.paused = pause;
	pthread_cond_broadcast(&rb_cond);
	pthread_mutex_unlock(&rb_lock);
}

void rebuild_set_rates(uint32_t min_mb, uint32_t max_mb)
{
	pthread_mutex_lock(&rb_lock);
	info.min_rate = min_mb;
	info.max_rate = max_mb;
	pthread_mutex_unlock(&rb_lock);
}

/* ------------------------------------------------------------- throttle */

static uint64_t t_start_ms, window_start_ms, window_bytes;

/* Account bytes; sleep to keep under the current limit; wait while
 * paused.  Returns false when the rebuild must stop. */
static bool throttle(struct array *a, uint64_t bytes)
{
	pthread_mutex_lock(&rb_lock);
	info.done += bytes;
	int last_pct = info.total ? (int)((info.done - bytes) * 100 / info.total) : 0;
	int pct = info.total ? (int)(info.done * 100 / info.total) : 0;
	uint64_t t = util_now_ms();
	info.elapsed = (t - t_start_ms) / 1000.0;
	if (info.elapsed > 0.2)
		info.rate = info.done / info.elapsed;
	while (info.paused && !rb_stop && !__atomic_load_n(&rb_abandon, __ATOMIC_ACQUIRE))
		pthread_cond_wait(&rb_cond, &rb_lock);
	bool busy = t - array_last_user_io_ms(a) < 100;
	uint32_t limit = busy ? info.min_rate : info.max_rate;
	if (busy && info.max_rate && info.max_rate < limit)
		limit = info.max_rate;
	bool stop = rb_stop || __atomic_load_n(&rb_abandon, __ATOMIC_ACQUIRE);
	/* sleep until the bytes of this second fit the limit (both file
	 * threads count here, and sleep) */
	double sleep_ms = 0, spent = (double)((int64_t)t - (int64_t)window_start_ms);
	if (spent > 1000) {
		window_start_ms = t;
		window_bytes = 0;
		spent = 0;
	}
	window_bytes += bytes;
	if (limit) {
		double need_ms = window_bytes / (limit * 1048576.0) * 1000.0;
		if (need_ms > spent)
			sleep_ms = need_ms - spent;
	}
	uint32_t member = info.member;
	pthread_mutex_unlock(&rb_lock);
	for (int mark = 20; mark <= 80; mark += 20) {
		if (last_pct < mark && pct >= mark && pct < 100) {
			char ev[16];
			snprintf(ev, sizeof(ev), "Rebuild%d", mark);
			event_post(a, ev, member);
		}
	}
	if (sleep_ms > 0)
		usleep((useconds_t)(sleep_ms * 1000));
	return !stop;
}

/* ------------------------------------------------------------- windows
 *
 * A file is rebuilt window by window: up to WINDOW_BYTES of the shard of
 * member lj (window_stripes()) under the file's write lock.
 *
 *   1. what is needed: per stripe, what the planner says (recon.h): for
 *      a data chunk the other data chunks and P, for a parity chunk the
 *      data chunks, with another member of the group absent too
 *      everything that is there; a replace in place copies lj's own
 *      chunk, a mirror one other copy;
 *   2. the window is cut in pieces of PIECE_BYTES per member, which this
 *      thread and one helper thread take in turn (both cores copy: the
 *      copies from and to the members are the cost of a rebuild, not the
 *      parity) -- unless another file is being rebuilt on the other
 *      core at the same time (see "two files at once").  A piece reads
 *      each member's chunks with one call, computes its stripes' chunks
 *      in place, reads the new member only
 *      where that decides something (an all-zero chunk: a hole stays a
 *      hole unless the new shard holds something else there; the verify
 *      pass: compare) and writes with one pwritev per run of chunks;
 *   3. a checksummed file (docs/checksums.md) is verified on the way:
 *      before the pieces, the believed record of lj's row in each stripe
 *      of the window is loaded with one read of each member's records
 *      (stripe_rows_believed(): the newest valid one, a damaged one
 *      left out, none for a row never written - all zeros); each piece
 *      checks every chunk it read against its slot's checksums (bytes
 *      past a shard's end are zeros, their blocks need no CRC) and the
 *      chunk it made against lj's (one an XOR made follows from the
 *      checksums of its sources, csum_xor_matches(); Q is checked over
 *      its bytes).  A stripe where anything does not match is not
 *      written: it goes stripe by stripe after the window (below), where
 *      the bad chunk is found, counted on its member and rebuilt.  The
 *      window's records then go to the new member's checksum file in
 *      one write (stripe_rows_rebuilt(): zeros for a row without one;
 *      the verify pass rewrites them only where they differ);
 *   4. the first pass notes how far it wrote the new shard this way, so
 *      the verify pass knows which files it needs to look at again
 *      (unchanged_since_rebuilt()); a window with a stripe that did not
 *      verify makes the file one it looks at again.
 * Anything out of the ordinary (a read error, more members absent than
 * the code can do without, a chunk that does not match its checksums)
 * leaves the window, or that stripe, to stripe_rebuild_chunk(), stripe
 * by stripe, which verifies and repairs chunks, counts checksum errors
 * and fails members the way every read does.
 */
#define WINDOW_BYTES (1u << 20)
#define PIECE_BYTES (64u << 10)
_Static_assert(LAYOUT_MAX_CHUNK <= WINDOW_BYTES, "a window holds at least one chunk");

/* A thread's memory for a piece, kept for the whole rebuild: a buffer
 * per member (its chunks of the piece), lj's rebuilt chunks, the new
 * member's chunks, and scratch for parity nobody wants.  A piece is small
 * (PIECE_BYTES, or one chunk), so what it copies stays in the core's
 * cache. */
#define PIECE_MAX (PIECE_BYTES > LAYOUT_MAX_CHUNK ? PIECE_BYTES : LAYOUT_MAX_CHUNK)
struct piece_bufs {
	uint8_t *src[LAYOUT_MAX_WIDTH], *out, *have, *junk;
};

static uint8_t *piece_buf(uint8_t **b, size_t len)
{
	if (!*b && posix_memalign((void **)b, 64, len))
		*b = NULL;
	return *b;
}

/* The buffers of the last rebuild (fctx.bufs of both file threads), kept
 * for the next one: the first touch of a fresh page costs a fault, and on
 * a VM that hands freed memory back to its host much more - a re-add of
 * one file spent about 10 ms faulting in the buffers of its first file
 * (what they hold is only what a piece last read).  Not when they are
 * large (wide arrays with big chunks): then memory matters more. */
#define KEEP_BUFS_MAX (8u << 20)	/* bytes a thread's buffers may touch */
static struct piece_bufs kept_bufs[2][2];

static void piece_bufs_free(struct piece_bufs *pb)
{
	for (int i = 0; i < LAYOUT_MAX_WIDTH; i++)
		free(pb->src[i]);
	free(pb->out);
	free(pb->have);
	free(pb->junk);
	memset(pb, 0, sizeof(*pb));
}

/* ---------------------------------------------------------------- walk */

/* What rebuilding one file needs of its own. */
struct fctx {
	struct piece_bufs bufs[2];	/* this thread's, pair_run()'s helper's */
	/* how far the first pass wrote the new shard, window after window
	 * the fast way (clean: no window went stripe by stripe, which a read
	 * error or a missing source makes it do), for the verify pass */
	uint64_t len;
	bool clean;
};

struct walk {
	struct array *a;
	uint32_t j;		/* slot written: the member, or SHADOW */
	uint32_t lj;		/* the member whose chunks these are */
	int dst;		/* the new member's dirfd (the source is SRC(w)) */
	/* hard-linked files met so far: their rfile stays open (pinned) for
	 * the whole rebuild, so every name of the file, whenever it is
	 * reached and whatever was renamed meanwhile, is linked to the one
	 * shard rf->fd[j] that all writes go to; pass: the pass that last
	 * rebuilt its data */
	struct { struct rfile *rf; int pass; } *links;
	size_t nlinks, caplinks;
	/* hard-linked files past what can stay pinned (MAX_PINNED): the
	 * name (on the new member) that holds each one's shard there, by
	 * file id, so the other names are linked to it all the same (an
	 * open-addressing table; adopt_far_shard()) */
	struct far_link { uint64_t id; char *path; } *far;
	size_t nfar, capfar;
	int pass;		/* 1 walk, 2 verify, 0 redo (always rebuild) */
	/* re-add of a member that was away: files it holds at the current
	 * version and not in the missed-write log are left as they are */
	bool readd;
	uint64_t *missed;	/* sorted ids from .raidfs/missed/<j> */
	size_t nmissed;
	uint64_t unchanged;	/* files a re-add left alone */
	bool targeted;		/* a re-add going straight to the logged files
				 * (readd_targets()), no walk */
	uint64_t resynced;	/* files the first pass rebuilt */
	/* a re-add's verify pass looks at the files its first pass resynced
	 * (their paths then), not at the whole tree again (see readd_verify()) */
	char **resynced_paths;
	size_t nresynced_paths, capresynced_paths;
	bool resynced_paths_lost;	/* out of memory: walk it all */
	bool log_unread;		/* a re-add whose missed-write log could
					 * not be read, or is not this
					 * directory's (RB_READD_ALL): metadata
					 * changes (which keep the version) are
					 * not known */
	int errors;
	char first_failed[PATH_MAX + 64];	/* "'path' (why)" of the first file
						 * that failed (under lock) */
	int target_err;		/* the first error of the new member that fails it
				 * (target_error()), judged between files */
	bool count_only;
	const char *resume_after;	/* skip files up to this path (walk order) */
	uint64_t skipped;
	uint64_t last_save_ms;
	int promoted;		/* pass during which the replacement in place
				 * became a rebuild of lj (-1: it did not) */
	bool verify;		/* second pass: compare and repair */
	bool redo;		/* working off the redo queue (pass 0): a file
				 * rebuilt in full and unchanged since is only
				 * looked at, as in the verify pass */
	uint64_t fixed;		/* chunks the verify pass had to rewrite */
	uint64_t total;
	uint64_t need;		/* bytes the source's shards take on its disk */
	/* the file worker's and the walk's own (files are rebuilt two at a
	 * time: see "two files at once" below) */
	struct fctx fc[2];
	/* each new shard the first pass wrote in full, the fast way, at
	 * which metadata version, so the verify pass knows the files nobody
	 * changed since (unchanged_since_rebuilt()); with the paths of a
	 * re-add, under lock */
	pthread_mutex_t lock;
	struct rebuilt { uint64_t id, version, len; } *rebuilt;
	size_t nrebuilt, caprebuilt;
	bool rebuilt_sorted;		/* by id, from the verify pass on */
	uint64_t unchanged_since;	/* files the verify pass found so */
};

static bool file_worker_busy(void);

/* The source is the current primary: it may change during the walk
 * when a member fails (raid6 rebuilding with a second failure). */
#define SRC(w) ((w)->a->m[__atomic_load_n(&(w)->a->primary, __ATOMIC_ACQUIRE)].dirfd)

/*
 * The new member failed: md fails a disk that errors during its recovery,
 * and so does this (a replacement in place is abandoned, its member stays
 * in service).  Called between files, with no lock held.
 */
static void target_failed(struct walk *w, const char *why)
{
	if (w->j == SHADOW) {
		rebuild_fail_replacement(w->a, why);
	} else {
		array_fail_member(w->a, w->j, why);
	}
}

/* An operation on the new member failed with err: an error of its disk,
 * or no room left on it, fails it at the end of the file (other errors
 * are the file's).  Any rebuild thread, locks held or not. */
static void target_error(struct walk *w, int err)
{
	if (member_error_is_fatal(err) || err == -ENOSPC || err == -EDQUOT) {
		int none = 0;
		__atomic_compare_exchange_n(&w->target_err, &none, err, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
}

/* The new member answered ENOENT or ENOTDIR where the walk made the
 * parent: true (and it is failed) if its directory is gone. */
static bool target_gone(struct walk *w)
{
	const char *why;
	if (!member_vanished(w->a, w->j, &why))
		return false;
	target_failed(w, why);
	return true;
}

static void copy_owner_times(struct walk *w, const char *rel, const struct stat *st)
{
	struct timespec tv[2] = { st->st_atim, st->st_mtim };
	fchownat(w->dst, rel, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW);
	utimensat(w->dst, rel, tv, AT_SYMLINK_NOFOLLOW);
}

/* Are the two descriptors open on the same file or directory? */
static bool same_file(int fd1, int fd2)
{
	struct stat x, y;
	return fd1 >= 0 && fd2 >= 0 && fstat(fd1, &x) == 0 && fstat(fd2, &y) == 0 &&
	       x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* Is path on the new member the inode fd is open on? */
static bool same_inode(int dirfd, const char *path, int fd)
{
	struct stat a, b;
	return fstatat(dirfd, path, &a, AT_SYMLINK_NOFOLLOW) == 0 && fstat(fd, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}


static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i += 8)
		if (*(const uint64_t *)(p + i))
			return false;
	return true;
}

/* lj's chunk of stripe s as plan p says (recon.h: from the chunks p reads
 * in src[member], chunk at `at` of each), into out; the other slots the
 * parity call writes go to junk.  0, -EIO when the call fails. */
static int compute_chunk(const struct layout *l, const struct recon_plan *p, uint32_t slot,
			 uint8_t *const *src, size_t at, uint8_t *out, uint8_t *junk)
{
	uint8_t *blk[LAYOUT_MAX_WIDTH];
	uint32_t nj = 0;
	for (uint32_t i = 0; i < l->k + l->m; i++) {
		if (i == slot)
			blk[i] = out;
		else if (p->read >> i & 1)
			blk[i] = src[p->member[i]] + at;
		else if (nj == PARITY_MAX_M)
			return -EIO;
		else
			blk[i] = junk + (size_t)nj++ * l->chunk;
	}
	return recon_compute(p, l->chunk, blk) < 0 ? -EIO : 0;
}

/* How many stripes a window of this layout holds (at most 64: bit masks). */
static uint32_t window_stripes(const struct layout *l)
{
	uint32_t ws = WINDOW_BYTES / l->chunk;
	return ws < 1 ? 1 : ws > 64 ? 64 : ws;
}

#define NO_COPY UINT32_MAX

/* A window being rebuilt: the plan, and what the pieces found. */
struct window {
	struct walk *w;
	struct fctx *fc;
	struct rfile *rf;
	uint64_t s0;
	uint32_t ns, per;		/* stripes; stripes per piece */
	uint64_t tsize;			/* the new shard's size */
	uint64_t ssize;			/* its size when it is done */
	uint64_t need[LAYOUT_MAX_WIDTH];	/* per member: bit x when its chunk of stripe s0 + x is read */
	uint64_t slen[LAYOUT_MAX_WIDTH];	/* per member: its shard's length for the size
						 * (layout_shard_size()): past it only zeros */
	struct recon_plan plan[64];	/* per stripe: how lj's chunk is had (recon.h) */
	uint32_t from[64];		/* per stripe: member whose chunk is lj's as it is, or NO_COPY */
	/* a checksummed file: the believed record of lj's row in each
	 * stripe (stripe_rows_believed()), against which every chunk read
	 * and every chunk made is verified */
	uint64_t gens[64];
	uint32_t *crcs;			/* csum_per_row() per stripe; NULL: no checksums */
	uint64_t slow;			/* bit x: stripe s0 + x did not verify (stripe by stripe) */
	int next;			/* the next piece to take */
	int ret;			/* the first piece's that was not 0 */
	long written;
	uint64_t fixed;
};

/* len bytes at off of member j's shard fd, which is flen long: what lies
 * past flen is zeros and is not read (a small file's last stripe is mostly
 * past its shards' ends).  member_pread()'s result. */
static ssize_t read_upto(struct array *a, uint32_t j, int fd, uint8_t *buf, size_t len, uint64_t off, uint64_t flen)
{
	size_t have = off >= flen ? 0 : flen - off < len ? (size_t)(flen - off) : len;
	memset(buf + have, 0, len - have);
	return have ? member_pread(a, j, fd, buf, have, off) : 0;
}

/* Does the chunk at buf, slot `slot` of a row whose checksums are row[],
 * match them?  Only its first `have` bytes may be other than zeros (past
 * its shard's end: read_upto()); the blocks past them need no CRC. */
static bool chunk_matches(const struct layout *l, const uint32_t *row, uint32_t slot, const uint8_t *buf,
			  uint64_t have)
{
	uint32_t B = l->chunk / CSUM_BLOCK;
	uint32_t nb = have >= l->chunk ? B : (uint32_t)((have + CSUM_BLOCK - 1) / CSUM_BLOCK);
	for (uint32_t b = nb; b < B; b++)
		if (row[(size_t)slot * B + b] != csum_zero_block())
			return false;
	return csum_slot_matches(l, row, slot, 0, nb, buf);
}

/* The bytes of member j's chunk of stripe s that lie inside its shard. */
static uint64_t chunk_have(const struct window *v, uint32_t j, uint64_t s)
{
	uint64_t off = s * v->rf->lay.chunk;
	return off >= v->slen[j] ? 0 : v->slen[j] - off;
}

/* Stripes [s0 + x0, s0 + x1) of the window, with thread t's buffers:
 * read, verify (a checksummed file), compute, verify, compare or check
 * for holes, write.  A stripe that does not verify is not written and
 * goes to v->slow.  0, 1 (the whole window stripe by stripe), or
 * -errno. */
/* do_piece(), step 1: every member's chunks the piece's stripes need,
 * one read per run of them.  0, 1 (a read error: the window goes stripe
 * by stripe) or -ENOMEM. */
static int piece_read(struct window *v, uint32_t x0, uint32_t x1, struct piece_bufs *pb)
{
	struct walk *w = v->w;
	struct rfile *rf = v->rf;
	const struct layout *l = &rf->lay;
	uint32_t chunk = l->chunk;
	uint64_t mask = x1 - x0 == 64 ? ~0ull : ((1ull << (x1 - x0)) - 1) << x0;
	for (uint32_t mj = 0; mj < l->width; mj++) {
		uint64_t bits = v->need[mj] & mask;
		if (bits && !piece_buf(&pb->src[mj], PIECE_MAX))
			return -ENOMEM;
		/* one read per run of stripes that need this member's chunk: a
		 * raid6 rebuild needs two of the other three chunks of each
		 * stripe over 4 members, and reading across the gaps would
		 * read half as much again */
		while (bits) {
			uint32_t a = __builtin_ctzll(bits);
			uint64_t from_a = bits >> a;
			uint32_t len = ~from_a ? (uint32_t)__builtin_ctzll(~from_a) : 64 - a;
			bits &= ~(len == 64 ? ~0ull : ((1ull << len) - 1) << a);
			ssize_t r = read_upto(w->a, mj, rf->fd[mj], pb->src[mj] + (size_t)(a - x0) * chunk,
					      (size_t)len * chunk, (v->s0 + a) * chunk, v->slen[mj]);
			if (r < 0) {
				log_err("read error on member %u '%s' (file %016" PRIx64 ", offset %" PRIu64 "): %s",
					mj, w->a->m[mj].path, rf->id, (v->s0 + a) * chunk, strerror((int)-r));
				array_member_io_error(w->a, mj, (int)r, false);
				return 1;
			}
		}
	}
	return 0;
}

/* do_piece(), step 2: stripe x's chunk of lj into res[x] (a source's
 * buffer, or pb->out), verified against the row's record when the file
 * has checksums.  *ok: it verified; 0, 1 (the stripe cannot be made: the
 * window goes stripe by stripe) or -errno. */
static int piece_make(struct window *v, uint32_t x0, uint32_t x, struct piece_bufs *pb, uint8_t **res, bool *ok)
{
	const struct layout *l = &v->rf->lay;
	uint32_t chunk = l->chunk, g, slot;
	uint64_t s = v->s0 + x;
	size_t at = (size_t)(x - x0) * chunk;
	const struct recon_plan *p = &v->plan[x];
	const uint32_t *row = v->crcs ? v->crcs + (size_t)x * csum_per_row(l) : NULL;
	layout_member_slot(l, s, v->w->lj, &g, &slot);
	*ok = true;
	if (v->from[x] != NO_COPY) {
		/* lj's own chunk or a mirror's copy: it must match its own
		 * slot's checksums and lj's */
		uint32_t fs = p->op == RECON_READ ? slot : p->src;
		res[x] = pb->src[v->from[x]] + at;
		*ok = !row || (chunk_matches(l, row, fs, res[x], chunk_have(v, v->from[x], s)) &&
			       (fs == slot || chunk_matches(l, row, slot, res[x], chunk_have(v, v->from[x], s))));
		return 0;
	}
	res[x] = pb->out + at;
	for (uint32_t i = 0; row && *ok && i < l->k + l->m; i++)
		*ok = !(p->read >> i & 1) ||
		      chunk_matches(l, row, i, pb->src[p->member[i]] + at, chunk_have(v, p->member[i], s));
	int r = *ok ? compute_chunk(l, p, slot, pb->src, at, res[x], pb->junk) : 0;
	if (r < 0)
		return r == -EIO ? 1 : r;
	/* what an XOR made follows from the checksums of what it was made of
	 * (csum_xor_matches()); Q from its bytes */
	bool xor = p->op == RECON_XOR || (p->op == RECON_ENCODE && slot == l->k);
	*ok = *ok && (!row || (xor ? csum_xor_matches(l, row, p->read, slot) : chunk_matches(l, row, slot, res[x], chunk)));
	return 0;
}

/* do_piece(), step 3: the rebuilt chunks res[x0..x1) to the new member,
 * one pwritev per run, but the stripes in `bad` and, first pass, the
 * all-zero chunks where the new shard holds zeros already (zero[]); the
 * verify pass writes only what differs.  0 or -errno. */
static int piece_write(struct window *v, uint32_t x0, uint32_t x1, struct piece_bufs *pb, uint8_t **res,
		       const bool *zero, bool look, uint64_t bad)
{
	struct walk *w = v->w;
	uint32_t chunk = v->rf->lay.chunk;
	int tfd = v->rf->fd[w->j];
	/* past the new shard's end it holds zeros: no need to look */
	bool empty = !w->verify && (v->s0 + x0) * chunk >= v->tsize;
	bool have = look && !empty && read_upto(w->a, w->j, tfd, pb->have, (size_t)(x1 - x0) * chunk,
						(v->s0 + x0) * chunk, v->tsize) >= 0;
	struct iovec iov[64];
	int niov = 0;
	for (uint32_t x = x0; x <= x1; x++) {
		const uint8_t *h = x < x1 && have ? pb->have + (size_t)(x - x0) * chunk : NULL;
		bool put = x < x1 && !(bad >> x & 1) &&
			   (w->verify ? !h || memcmp(h, res[x], chunk) != 0
				      : !zero[x] || (!empty && (!h || !all_zero(h, chunk))));
		if (put && w->verify)
			__atomic_add_fetch(&v->fixed, 1, __ATOMIC_RELAXED);
		if (put) {
			iov[niov++] = (struct iovec){ res[x], chunk };
			continue;
		}
		if (niov) {
			int r = member_pwritev(w->a, w->j, tfd, iov, niov, (v->s0 + x - niov) * chunk, NULL);
			if (r < 0) {
				target_error(w, r);
				return r;
			}
			__atomic_add_fetch(&v->written, (long)niov * chunk, __ATOMIC_RELAXED);
			niov = 0;
		}
	}
	return 0;
}

static int do_piece(struct window *v, uint32_t x0, uint32_t x1, int t)
{
	struct piece_bufs *pb = &v->fc->bufs[t];
	uint8_t *res[64];		/* per stripe: lj's chunk, rebuilt */
	if (!piece_buf(&pb->out, PIECE_MAX) || !piece_buf(&pb->have, PIECE_MAX) ||
	    !piece_buf(&pb->junk, (size_t)PARITY_MAX_M * LAYOUT_MAX_CHUNK))
		return -ENOMEM;
	int r = piece_read(v, x0, x1, pb);
	if (r)
		return r;
	bool zero[64], look = v->w->verify;
	uint64_t bad = 0;	/* stripes that do not verify */
	for (uint32_t x = x0; x < x1; x++) {
		bool ok;
		if ((r = piece_make(v, x0, x, pb, res, &ok)))
			return r;
		if (!ok) {
			bad |= 1ull << x;
			zero[x] = false;
			continue;
		}
		zero[x] = !v->w->verify && all_zero(res[x], v->rf->lay.chunk);
		look |= zero[x];
	}
	if (bad)
		__atomic_or_fetch(&v->slow, bad, __ATOMIC_RELAXED);
	return piece_write(v, x0, x1, pb, res, zero, look, bad);
}

static void window_worker(void *arg, int t)
{
	struct window *v = arg;
	for (;;) {
		uint32_t x0 = (uint32_t)__atomic_fetch_add(&v->next, 1, __ATOMIC_RELAXED) * v->per;
		if (x0 >= v->ns || __atomic_load_n(&v->ret, __ATOMIC_RELAXED))
			return;
		int r = do_piece(v, x0, x0 + v->per < v->ns ? x0 + v->per : v->ns, t);
		int none = 0;
		if (r)
			__atomic_compare_exchange_n(&v->ret, &none, r, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
}

/*
 * Stripes [s0, s0 + ns) of member lj's shard onto the new member (slot
 * w->j), as above; with w->verify, compared with what the new member holds
 * and rewritten where they differ (w->fixed counts those).  A checksummed
 * file's chunks are verified against the rows' believed records, which
 * go to the new member's checksum file in one write; *slow gets the
 * stripes that did not verify, left unwritten.  The first pass also notes
 * how far the new shard is written (fc->len).  Returns 0 with *bytes
 * written, 1 when the window must go stripe by stripe, or -errno.
 * Caller holds rf->rw exclusively.
 */
static int window_fast(struct walk *w, struct fctx *fc, struct rfile *rf, uint64_t s0, uint32_t ns, long *bytes,
		       uint64_t *slow)
{
	const struct layout *l = &rf->lay;
	uint32_t chunk = l->chunk, n = l->k + l->m, lj = w->lj, g, slot;
	struct window v = { .w = w, .fc = fc, .rf = rf, .s0 = s0, .ns = ns };
	struct stat ts;

	v.per = PIECE_BYTES / chunk ? PIECE_BYTES / chunk : 1;
	v.tsize = fstat(rf->fd[w->j], &ts) == 0 ? (uint64_t)ts.st_size : UINT64_MAX;
	v.ssize = layout_shard_size(l, lj, rf->size);
	uint64_t readable = 0;
	for (uint32_t i = 0; i < l->width; i++) {
		/* (a shard's loss is a tail) */
		readable |= (uint64_t)rfile_usable_at(rf, i, s0 + ns - 1) << i;
		v.slen[i] = layout_shard_size(l, i, rf->size);
	}
	if (w->j == lj)
		readable &= ~(1ull << lj);	/* (rebuilt, not read) */
	for (uint32_t x = 0; x < ns; x++) {
		uint64_t s = s0 + x;
		struct recon_plan *p = &v.plan[x];
		layout_member_slot(l, s, lj, &g, &slot);
		/* READ: a replacement in place copies lj's chunk; COPY: a
		 * mirror copies another one */
		switch (recon_plan(p, l, s, g, readable, 1ull << slot, 0)) {
		case RECON_IMPOSSIBLE:
			return 1;	/* (stripe by stripe: the error is told there) */
		case RECON_READ:
		case RECON_COPY:
			v.from[x] = p->member[p->op == RECON_READ ? slot : p->src];
			v.need[v.from[x]] |= 1ull << x;
			continue;
		default:
			v.from[x] = NO_COPY;
			for (uint32_t i = 0; i < n; i++)
				if (p->read >> i & 1)
					v.need[p->member[i]] |= 1ull << x;
		}
	}
	if (rf->sums) {
		/* the rows' records, one read per member of the window */
		v.crcs = malloc((size_t)ns * csum_per_row(l) * 4);
		int r = v.crcs ? stripe_rows_believed(rf, lj, s0, ns, v.gens, v.crcs) : -ENOMEM;
		if (r < 0) {
			free(v.crcs);
			return r;
		}
	}
	if (ns > v.per && !file_worker_busy())
		pair_run(window_worker, &v);
	else
		window_worker(&v, 0);
	/* the records go with the chunks, in one write (those of the slow
	 * stripes again with theirs) */
	if (v.crcs && !v.ret)
		stripe_rows_rebuilt(rf, w->j, s0, ns, v.gens, v.crcs, w->verify);
	free(v.crcs);
	if (v.ret)
		return v.ret;
	__atomic_add_fetch(&w->fixed, v.fixed, __ATOMIC_RELAXED);
	if (!w->verify && s0 * chunk < v.ssize) {
		uint64_t end = (s0 + ns) * chunk;
		fc->clean &= s0 * chunk == fc->len;
		fc->len = end < v.ssize ? end : v.ssize;
	}
	if (v.slow)
		fc->clean = false;	/* (the verify pass looks at the file again) */
	*bytes = v.written;
	*slow = v.slow;
	return 0;
}

/* One window: the fast way, with the stripes it could not verify (or
 * all of them, when it cannot do the window) stripe by stripe (see
 * above).  Bytes written or -errno. */
static long rebuild_window(struct walk *w, struct fctx *fc, struct rfile *rf, uint64_t s0, uint32_t ns)
{
	long bytes = 0;
	uint64_t slow = 0;
	int r = window_fast(w, fc, rf, s0, ns, &bytes, &slow);
	if (r < 0)
		return r;
	if (r == 1) {
		slow = ns == 64 ? ~0ull : (1ull << ns) - 1;
		fc->clean = false;
	} else if (slow) {
		log_info("rebuild of member %u: %d stripe%s of file %016" PRIx64 " from stripe %" PRIu64 " did not match "
			 "the checksums, rebuilt stripe by stripe", w->lj, __builtin_popcountll(slow),
			 __builtin_popcountll(slow) == 1 ? "" : "s", rf->id, s0 + __builtin_ctzll(slow));
	}
	for (uint32_t x = 0; x < ns; x++) {
		bool fixed = false;
		int terr = 0;
		if (!(slow >> x & 1))
			continue;
		long b = stripe_rebuild_chunk(rf, s0 + x, w->lj, w->j, w->verify, &fixed, &terr);
		if (terr)
			target_error(w, terr);
		if (b < 0)
			return b;
		bytes += b;
		__atomic_add_fetch(&w->fixed, fixed, __ATOMIC_RELAXED);
	}
	return bytes;
}

#define MAX_PINNED 1024

/* Room for one more pinned file in w->links; false when memory ran out
 * (the file is not pinned then, as past MAX_PINNED). */
static bool links_room(struct walk *w)
{
	if (w->nlinks < w->caplinks)
		return true;
	size_t c = w->caplinks ? w->caplinks * 2 : 64;
	void *g = realloc(w->links, c * sizeof(*w->links));
	if (!g)
		return false;
	w->links = g;
	w->caplinks = c;
	return true;
}

/*
 * The new member's shard at rel holds the primary's file (same file id)
 * at the primary's metadata version, and nobody has the file open (an
 * rfile open since before a re-add has no shard on the member and writes
 * past it; every change bumps the version when its handle closes): then
 * its owner and mode are brought up to date, *pm is the metadata and
 * *jsize the shard's length.  Two opens instead of one per member.  A
 * rename racing with this only makes the ids differ, and the file takes
 * the full path.
 */
static bool shard_current(struct walk *w, const char *rel, struct file_meta *pm, uint64_t *jsize)
{
	struct file_meta jm;
	struct stat ps, js;
	bool same = false;
	uint64_t epoch = rfile_epoch();
	int pf = openat(SRC(w), rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	int jf = pf >= 0 ? openat(w->dst, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
	if (jf >= 0 && meta_get(pf, pm) == 0 && meta_get(jf, &jm) == 0 && pm->id == jm.id &&
	    pm->version == jm.version && fstat(pf, &ps) == 0 && fstat(jf, &js) == 0) {
		uint64_t size;
		int marks;
		same = rfile_lookup_size(epoch, ps.st_ino, &size, &marks) == 0;	/* (-EAGAIN: the primary changed) */
		if (same && (ps.st_uid != js.st_uid || ps.st_gid != js.st_gid))
			fchownat(w->dst, rel, ps.st_uid, ps.st_gid, AT_SYMLINK_NOFOLLOW);
		if (same && (ps.st_mode & 07777) != (js.st_mode & 07777))
			fchmodat(w->dst, rel, ps.st_mode & 07777, 0);
	}
	if (pf >= 0)
		close(pf);
	if (jf >= 0)
		close(jf);
	*jsize = same ? (uint64_t)js.st_size : 0;
	return same;
}

/* Re-add, cheaply: the shard is current and the file is not in the
 * missed-write log: nothing to do but owner and mode. */
static bool readd_unchanged(struct walk *w, const char *rel)
{
	struct file_meta pm;
	uint64_t jsize;
	if (!shard_current(w, rel, &pm, &jsize))
		return false;
	return !bsearch(&pm.id, w->missed, w->nmissed, sizeof(uint64_t), cmp_u64);
}

static void note_resynced(struct walk *w, const char *rel)
{
	pthread_mutex_lock(&w->lock);
	if (!util_names_add(&w->resynced_paths, &w->nresynced_paths, &w->capresynced_paths, rel))
		w->resynced_paths_lost = true;
	pthread_mutex_unlock(&w->lock);
}

static int cmp_rebuilt(const void *x, const void *y)
{
	const struct rebuilt *a = x, *b = y;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* The first pass (or the redo queue's) wrote a file's new shard in full:
 * remember its version (up to a million files, 24 MB; the others take the
 * full verify).  Sorted in place once the verify pass sorted them. */
static void note_rebuilt(struct walk *w, const struct fctx *fc, const struct rfile *rf)
{
	if (!fc->clean || fc->len != layout_shard_size(&rf->lay, w->lj, rf->size))
		return;
	struct rebuilt e = { rf->id, rf->meta_version, fc->len };
	pthread_mutex_lock(&w->lock);
	size_t at = w->nrebuilt;
	if (w->rebuilt_sorted) {
		size_t hi = w->nrebuilt;
		for (at = 0; at < hi;) {
			size_t mid = (at + hi) / 2;
			if (w->rebuilt[mid].id < e.id)
				at = mid + 1;
			else
				hi = mid;
		}
		if (at < w->nrebuilt && w->rebuilt[at].id == e.id) {
			w->rebuilt[at] = e;	/* (rebuilt again by the redo queue) */
			pthread_mutex_unlock(&w->lock);
			return;
		}
	}
	if (w->nrebuilt == w->caprebuilt) {
		size_t c = w->caprebuilt ? w->caprebuilt * 2 : 1024;
		struct rebuilt *n = c <= (1u << 20) ? realloc(w->rebuilt, c * sizeof(*n)) : NULL;
		if (n) {
			w->rebuilt = n;
			w->caprebuilt = c;
		}
	}
	if (w->nrebuilt < w->caprebuilt) {
		memmove(w->rebuilt + at + 1, w->rebuilt + at, (w->nrebuilt - at) * sizeof(*w->rebuilt));
		w->rebuilt[at] = e;
		w->nrebuilt++;
	}
	pthread_mutex_unlock(&w->lock);
}

/*
 * The verify pass, for a file nobody changed since the first pass wrote
 * its new shard: shard_current() at the version the first pass left,
 * the shard as long as it was written.  Every change made through the
 * mount since (a write, a truncate, an fallocate, also one that raced
 * with the file's rebuild) bumps the version when its handle closes, and
 * an open file is not current: such a file, and any doubt (a hard link,
 * a file the first pass did not write in full the fast way, one it
 * rebuilt before an interruption), takes the full verify, which rebuilds
 * every chunk again and compares.  The data of an unchanged file is not
 * read again: it would come from the page cache the first pass just
 * filled (no check of the disk), or, on a member larger than the
 * memory, from the new disk, doubling the time the array stays
 * degraded (docs/failures.md, "Rebuild").
 */
static bool unchanged_since_rebuilt(struct walk *w, const char *rel)
{
	struct file_meta pm;
	uint64_t jsize;
	if (!w->nrebuilt || !shard_current(w, rel, &pm, &jsize))
		return false;
	pthread_mutex_lock(&w->lock);	/* (the redo queue's files join it) */
	struct rebuilt key = { .id = pm.id }, *e = bsearch(&key, w->rebuilt, w->nrebuilt, sizeof(key), cmp_rebuilt);
	bool ok = e && e->version == pm.version && jsize == e->len;
	pthread_mutex_unlock(&w->lock);
	__atomic_add_fetch(&w->unchanged_since, ok, __ATOMIC_RELAXED);
	return ok;
}

static void count_file_done(void)
{
	pthread_mutex_lock(&rb_lock);
	info.files_done++;
	pthread_mutex_unlock(&rb_lock);
}

/*
 * Open rel for its rebuild, under the namespace lock held as a group
 * (the other file thread's too): 0 with the lock held and *rf open, 1
 * when the file is gone (nothing to do), or -errno; the lock is released
 * unless 0.
 */
static int open_grouped(struct walk *w, const char *rel, struct rfile **rf)
{
	struct array *a = w->a;
	nslock_group(&a->ns_lock);
	int r = rfile_open(a, rel, rf);
	if (r < 0) {
		/* deleted meanwhile, or another kind of entry renamed over it
		 * (a symlink: ELOOP, a directory: EISDIR, a FIFO: EINVAL): the
		 * operation that did it reached this member too, or queued a
		 * redo */
		struct stat now;
		bool gone = r == -ENOENT ||
			    (fstatat(SRC(w), rel, &now, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(now.st_mode));
		nslock_unlock(&a->ns_lock);
		return gone ? 1 : r;
	}
	pthread_mutex_lock(&rb_lock);
	snprintf(info.current, sizeof(info.current), "%s", rel);
	pthread_mutex_unlock(&rb_lock);
	return 0;
}

/* A new, empty shard at rel on the new member, in place of whatever is
 * there: the fd, or -errno. */
static int create_shard(struct walk *w, const char *rel, mode_t mode)
{
	int fd = openat(w->dst, rel, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 07777);
	if (fd < 0 && errno == EEXIST) {
		unlinkat(w->dst, rel, 0);
		fd = openat(w->dst, rel, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 07777);
	}
	return fd < 0 ? -errno : fd;
}

/* The slot of file id in w->far: its entry, or the empty one to fill. */
static struct far_link *far_slot(struct far_link *t, size_t cap, uint64_t id)
{
	size_t i = (size_t)(id * 0x9e3779b97f4a7c15ull) & (cap - 1);
	while (t[i].path && t[i].id != id)
		i = (i + 1) & (cap - 1);
	return &t[i];
}

/* Note that the shard of file id on the new member is at rel (a
 * hard-linked file that could not be pinned).  Memory running out only
 * loses the note: the file's other names then get shards of their own. */
static void far_note(struct walk *w, uint64_t id, const char *rel)
{
	if (2 * (w->nfar + 1) > w->capfar) {
		size_t cap = w->capfar ? w->capfar * 2 : 1024;
		struct far_link *t = calloc(cap, sizeof(*t));
		if (!t)
			return;
		for (size_t i = 0; i < w->capfar; i++)
			if (w->far[i].path)
				*far_slot(t, cap, w->far[i].id) = w->far[i];
		free(w->far);
		w->far = t;
		w->capfar = cap;
	}
	struct far_link *e = far_slot(w->far, w->capfar, id);
	char *p = strdup(rel);
	if (!p)
		return;
	if (e->path)
		free(e->path);
	else
		w->nfar++;
	e->id = id;
	e->path = p;
}

/*
 * A hard-linked file the walk could not pin, met again under another
 * name: make its shard on the new member (at the name noted by
 * far_note(), if that still holds this file) rf->fd[j], so settle_shard()
 * links this name to it.  Locks as for settle_shard().
 */
static void adopt_far_shard(struct walk *w, struct rfile *rf, const char *rel)
{
	struct far_link *e = w->capfar ? far_slot(w->far, w->capfar, rf->id) : NULL;
	int j = w->j;
	if (!e || !e->path || strcmp(e->path, rel) == 0 ||
	    (rf->fd[j] >= 0 && same_inode(w->dst, e->path, rf->fd[j])))
		return;
	struct file_meta fm;
	int fd = openat(w->dst, e->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && meta_get(fd, &fm) == 0 && fm.id == rf->id) {
		if (rf->fd[j] >= 0)
			close(rf->fd[j]);
		rf->fd[j] = fd;
	} else if (fd >= 0) {
		close(fd);	/* (renamed over since: a shard of its own) */
	}
}

/*
 * Make rf->fd[w->j] the new member's shard at rel: the shard rf has there
 * already (linked to rel when another name holds it), else a new one with
 * the primary's owner, mode and xattrs (cur: the primary's stat, when
 * `know`).  *had: the shard was there before.  0, or create_shard()'s
 * error.  Namespace lock (group) and rf->rw held.
 */
static int settle_shard(struct walk *w, struct rfile *rf, const char *rel, const struct stat *cur, bool know,
			bool *had)
{
	struct array *a = w->a;
	int j = w->j;
	struct stat mine;
	if (cur->st_nlink > 1 && w->nfar)
		adopt_far_shard(w, rf, rel);
	*had = rf->fd[j] >= 0;	/* the member's own shard, same file id */
	if (rf->fd[j] >= 0 && !same_inode(w->dst, rel, rf->fd[j])) {
		unlinkat(w->dst, rel, 0);
		if (link_fd(rf->fd[j], w->dst, rel) < 0) {
			close(rf->fd[j]);	/* unlinked everywhere: start over */
			rf->fd[j] = -1;
		}
	}
	if (rf->fd[j] < 0) {
		int fd = create_shard(w, rel, cur->st_mode);
		if (fd < 0)
			return fd;
		fchown(fd, cur->st_uid, cur->st_gid);
		fchmod(fd, cur->st_mode & 07777);	/* after the chown, which drops set-id bits */
		if (rf->fd[a->primary] >= 0)
			rfile_copy_xattrs(rf->fd[a->primary], fd, true);
		rf->fd[j] = fd;
		*had = false;
	} else if (know && fstat(rf->fd[j], &mine) == 0) {
		bool owner = mine.st_uid != cur->st_uid || mine.st_gid != cur->st_gid;
		if (owner)
			fchown(rf->fd[j], cur->st_uid, cur->st_gid);
		if (owner || (mine.st_mode & 07777) != (cur->st_mode & 07777))
			fchmod(rf->fd[j], cur->st_mode & 07777);
	}
	return 0;
}

/*
 * No shard could be created at rel (err): with no parent directory there,
 * an operation that failed on the new member queued it and it comes back
 * as a redo (unless the new member's directory itself is gone).  Releases
 * rf->rw, the namespace lock and rf; returns what rebuild_file() returns.
 */
static int create_failed(struct walk *w, struct rfile *rf, const char *rel, int err)
{
	int r = err == -ENOENT || err == -ENOTDIR ? 0 : err;
	target_error(w, r);
	pthread_rwlock_unlock(&rf->rw);
	nslock_unlock(&w->a->ns_lock);
	rfile_release(rf);
	if (r == 0 && target_gone(w))
		return -EINTR;	/* (the rebuild stops) */
	if (r == 0)
		rebuild_redo(w->a, rel);
	return r;
}

/*
 * A re-add: was the file not changed while the member was away (then it
 * is left alone, only its owner and mode brought up to date)?  Both locks
 * held, as for settle_shard().
 */
static bool readd_left_alone(struct walk *w, struct rfile *rf, const struct stat *cur, bool know)
{
	struct file_meta fm;
	int j = w->j;
	bool logged = bsearch(&rf->id, w->missed, w->nmissed, sizeof(uint64_t), cmp_u64) != NULL;
	bool skip = w->pass == 2 ? !logged
				 : !logged && meta_get(rf->fd[j], &fm) == 0 && fm.id == rf->id &&
				   fm.version == rf->meta_version && !rf->meta_stale;
	if (skip)
		__atomic_add_fetch(&w->unchanged, w->pass == 1, __ATOMIC_RELAXED);
	if (skip && w->log_unread && w->pass == 1 && know) {
		/* xattrs and times, changed while away without a new version
		 * (setxattr and utimens hold the namespace lock shared:
		 * nothing changes them meanwhile) */
		struct timespec tv[2] = { cur->st_atim, cur->st_mtim };
		rfile_copy_xattrs(rf->fd[w->a->primary], rf->fd[j], false);
		futimens(rf->fd[j], tv);
	}
	return skip;
}

/* The file's data, window after window, each under its write lock, with
 * the throttle between them.  0 or -errno (-EINTR: stop). */
static int copy_windows(struct walk *w, struct fctx *fc, struct rfile *rf)
{
	uint64_t sbytes = layout_stripe_data_bytes(&rf->lay);
	uint32_t ws = window_stripes(&rf->lay);
	int r = 0;
	fc->len = 0;
	fc->clean = true;
	for (uint64_t s = 0;; s += ws) {
		long bytes = 0;
		pthread_rwlock_wrlock(&rf->rw);
		uint64_t nstripes = (rf->size + sbytes - 1) / sbytes;
		if (s < nstripes)
			bytes = rebuild_window(w, fc, rf, s, nstripes - s < ws ? nstripes - s : ws);
		pthread_rwlock_unlock(&rf->rw);
		if (bytes < 0)
			r = bytes;
		if (r < 0 || s + ws >= nstripes) {
			if (r == 0 && !w->verify)
				throttle(w->a, bytes);
			return r;
		}
		if (!throttle(w->a, w->verify ? 0 : bytes))
			return -EINTR;
	}
}

/* The new shard is written: its length, metadata, xattrs (had: it was
 * there before, and may have missed changes) and times.  0 or -errno. */
static int finish_shard(struct walk *w, struct fctx *fc, struct rfile *rf, bool had)
{
	struct array *a = w->a;
	int r = 0;
	pthread_rwlock_wrlock(&rf->rw);
	if (ftruncate(rf->fd[w->j], layout_shard_size(&rf->lay, w->lj, rf->size)) < 0)
		r = -errno;
	if (r == 0)
		r = stripe_sums_trim(rf, w->j);
	if (r == 0 && w->j < a->width)
		rf->damaged &= ~(1ull << w->j);	/* (rebuilt whole: a re-add keeps open files' shards) */
	if (r == 0)
		r = rfile_write_meta_rebuilt(rf, w->j);
	if (r < 0)
		target_error(w, r);
	if (r == 0 && (w->pass == 1 || w->redo))
		note_rebuilt(w, fc, rf);
	struct stat now;
	if (rf->fd[a->primary] >= 0 && had)
		rfile_copy_xattrs(rf->fd[a->primary], rf->fd[w->j], false);	/* may have missed changes */
	if (rf->fd[a->primary] >= 0 && fstat(rf->fd[a->primary], &now) == 0) {
		struct timespec tv[2] = { now.st_atim, now.st_mtim };
		futimens(rf->fd[w->j], tv);
	}
	pthread_rwlock_unlock(&rf->rw);
	return r;
}

/* Index of rf in w->links (a pinned hard-linked file), or w->nlinks. */
static size_t pinned_at(const struct walk *w, const struct rfile *rf)
{
	size_t li = w->nlinks;
	for (size_t i = 0; i < w->nlinks; i++)
		if (w->links[i].rf == rf)
			li = i;
	return li;
}

/* After a file's rebuild (r) at rel: a hard-linked file stays open
 * (pinned), so its other names link to this shard, and the pass is noted
 * (li: where it is pinned already, then this reference goes); past
 * MAX_PINNED its shard's name is noted instead (far_note()); rf is
 * released unless pinned. */
static void pin_or_release(struct walk *w, struct rfile *rf, size_t li, const char *rel, const struct stat *st,
			   int r)
{
	if (r == 0 && li < w->nlinks) {
		w->links[li].pass = w->pass;
	} else if (r == 0 && st->st_nlink > 1 && w->nlinks < MAX_PINNED && links_room(w)) {
		w->links[w->nlinks].rf = rf;	/* keeps our reference */
		w->links[w->nlinks++].pass = w->pass;
		return;
	} else if (r == 0 && st->st_nlink > 1) {
		far_note(w, rf->id, rel);
	}
	rfile_release(rf);
}

/*
 * Rebuild one regular file onto the new member.  Opening it and settling
 * its new shard happen under the namespace lock (held as a group: the
 * walk's thread and the file worker do this side by side), so the path
 * names the same file on every member.  Every name of a hard-linked file
 * shares one rfile (keyed by the primary's inode): when that rfile
 * already has a shard on the new member, this name is linked to it, so
 * the new member keeps one inode per file.  Whatever else sits at the
 * path on the new member (a leftover of a rename that failed there) is
 * replaced.  Steps: open, settle the shard, (re-add) skip an unchanged
 * file, copy the windows, finish the shard, pin a hard-linked file.
 */
static int rebuild_file(struct walk *w, struct fctx *fc, const char *rel, const struct stat *st)
{
	struct array *a = w->a;
	struct rfile *rf;
	/* (a re-add's unchanged files do not get here: walk_entry()); a
	 * hard-linked file takes the full path: it settles each name */
	if ((w->pass == 2 || w->redo) && st->st_nlink == 1 && unchanged_since_rebuilt(w, rel)) {
		count_file_done();
		return 0;
	}
	int r = open_grouped(w, rel, &rf);
	if (r)
		return r > 0 ? 0 : r;
	pthread_rwlock_wrlock(&rf->rw);
	/* owner and mode as the primary has them now (the walk's stat may be
	 * stale, and a chmod through an open handle skipped this member while
	 * it had no shard here) */
	struct stat cur = *st;
	bool know = rf->fd[a->primary] >= 0 && fstat(rf->fd[a->primary], &cur) == 0, had;
	r = settle_shard(w, rf, rel, &cur, know, &had);
	if (r < 0)
		return create_failed(w, rf, rel, r);
	bool skip = w->readd && had && w->pass && readd_left_alone(w, rf, &cur, know);
	pthread_rwlock_unlock(&rf->rw);
	nslock_unlock(&a->ns_lock);
	if (skip) {
		/* (a hard-linked file stays pinned all the same: its names
		 * linked while the member was away link to this shard) */
		pin_or_release(w, rf, pinned_at(w, rf), rel, st, 0);
		return 0;
	}
	__atomic_add_fetch(&w->resynced, w->pass == 1, __ATOMIC_RELAXED);
	if (w->readd && w->pass == 1)
		note_resynced(w, rel);

	/* another name of a pinned file whose data this pass did already */
	size_t li = pinned_at(w, rf);
	if (li < w->nlinks && w->pass && w->links[li].pass == w->pass) {
		rfile_release(rf);
		return 0;
	}
	r = copy_windows(w, fc, rf);
	if (r == 0)
		r = finish_shard(w, fc, rf, had);
	pin_or_release(w, rf, li, rel, st, r);
	count_file_done();
	return r;
}

static int cmp_names(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Order of the walk: component by component, each compared with strcmp. */
static int path_cmp(const char *a, const char *b)
{
	for (;;) {
		size_t la = strcspn(a, "/"), lb = strcspn(b, "/");
		size_t l = la < lb ? la : lb;
		int c = memcmp(a, b, l);
		if (c)
			return c;
		if (la != lb)
			return la < lb ? -1 : 1;
		if (!a[la] || !b[lb])
			return (a[la] ? 1 : 0) - (b[lb] ? 1 : 0);
		a += la + 1;
		b += lb + 1;
	}
}

#define POS_FILE ".raidfs/rebuild"

static void redo_sync(void);

static bool position_due(const struct walk *w)
{
	/* a targeted re-add is not in walk order: a resume walks it all */
	return !w->targeted && (!w->last_save_ms || util_now_ms() - w->last_save_ms >= 1000);
}

/* Persist the position on the new member at most once a second, so a
 * rebuild interrupted by unmount or kill -9 resumes after this file. */
static void save_position(struct walk *w, const char *path)
{
	if (!position_due(w))
		return;
	w->last_save_ms = util_now_ms();
	char buf[PATH_MAX + 128];
	int n = snprintf(buf, sizeof(buf), "raidfs-rebuild 1\nmember %u\ndone %" PRIu64 "\nmode %s\nafter %s\n",
			 w->lj, info.done,
			 w->readd ? (rb_mode == RB_READD_ALL ? "readd-all" : "readd") : w->j == SHADOW ? "replace" : "rebuild",
			 path);
	if (n < 0 || (size_t)n >= sizeof(buf) - 16)
		return;
	n += snprintf(buf + n, sizeof(buf) - n, "crc %08x\n", parity_crc32(0, buf, n));
	redo_sync();
	int fd = openat(w->dst, POS_FILE ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	bool ok = io_pwrite(fd, buf, n, 0) == 0 && fdatasync(fd) == 0;
	close(fd);
	if (ok)
		renameat(w->dst, POS_FILE ".tmp", w->dst, POS_FILE);
}

/* The saved position of a rebuild onto member j (dirfd): the last path
 * rebuilt, the bytes done and the kind; false when there is none or it
 * is corrupt. */
static bool load_position(int dirfd, uint32_t j, char *path, size_t len, uint64_t *done, enum rb_mode *mode)
{
	char buf[PATH_MAX + 128];
	int fd = openat(dirfd, POS_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	char *crc = strstr(buf, "crc ");
	unsigned member, want;
	unsigned long long d;
	if (!crc || sscanf(crc, "crc %x", &want) != 1 || parity_crc32(0, buf, crc - buf) != want)
		return false;
	char *after = strstr(buf, "\nafter ");
	if (sscanf(buf, "raidfs-rebuild 1\nmember %u\ndone %llu", &member, &d) != 2 || member != j || !after)
		return false;
	*mode = strstr(buf, "\nmode readd-all\n") ? RB_READD_ALL : strstr(buf, "\nmode readd\n") ? RB_READD : RB_FULL;
	after += 7;
	size_t l = strcspn(after, "\n");
	if (l >= len)
		return false;
	memcpy(path, after, l);
	path[l] = '\0';
	*done = d;
	return true;
}

static int walk_dir(struct walk *w, const char *rel);

static void remove_tree(int dirfd, const char *path);

/* -------------------------------------------------- two files at once
 *
 * Small files cost more in per-file steps (opens, the namespace lock,
 * metadata, owner, times) than in data, and those steps run on one
 * thread: measured on tmpfs, the helper of pair_run() idled a third of
 * a rebuild of 1 MiB files, and both threads writing one file's shard
 * spun on its inode lock.  So in passes 1 and 2 the walk queues regular
 * files for the file worker, and when the queue is full rebuilds the
 * next file itself: two files are rebuilt at a time, each on one core
 * (their windows stay on their own thread while the worker has files:
 * pair_run()'s helper would make three threads on two cores).
 *
 * The walk rebuilds a file alone, after the worker finished, with both
 * cores on its windows: a big file (BIG_FILE or more: a lone big file
 * must not go at half speed), a hard-linked one (its names settle in
 * w->links, which only the walk touches), and everything in the redo
 * pass.  It also waits for the worker's queue to empty before it saves a
 * position (every file before the position must be done), before a
 * promotion changes w->j, and at the end of each pass.  The worker
 * reports errors itself (file_result()); the walk collects a stop
 * (-EINTR) from it.  Shared walk state the two touch: counters (atomic),
 * the files the first pass wrote and a re-add's paths (w->lock), the redo
 * queue (its own lock); per file state is in struct fctx.
 */
#define BIG_FILE (64ull << 20)
#define QUEUE 4

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	pthread_t thread;
	bool started, quit;
	struct walk *w;
	struct { char *path; struct stat st; } q[QUEUE];
	unsigned head, n;	/* queued files */
	unsigned pending;	/* queued and being rebuilt */
	int ret;		/* the first error since the last worker_collect() */
} fw = { .lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static bool file_worker_busy(void)
{
	return __atomic_load_n(&fw.pending, __ATOMIC_ACQUIRE) != 0;
}

/* After rebuilding rel (r): a stop requested meanwhile makes it -EINTR
 * (a small file is one window, whose throttle cannot stop it halfway);
 * another error is logged and counted. */
static int file_result(struct walk *w, const char *rel, int r)
{
	int te = __atomic_exchange_n(&w->target_err, 0, __ATOMIC_RELAXED);
	if (te) {
		char why[PATH_MAX + 64];
		snprintf(why, sizeof(why), "error writing '%s' (%s)", rel, strerror(-te));
		target_failed(w, why);
	}
	if (r < 0 && r != -EINTR && array_state(w->a) == ARRAY_FAILED) {
		/* nothing left to rebuild from: stop, go on when the members
		 * are back */
		pthread_mutex_lock(&rb_lock);
		rb_stop = true;
		rb_waiting = info.member;
		pthread_cond_broadcast(&rb_cond);
		pthread_mutex_unlock(&rb_lock);
		r = -EINTR;
	}
	/* (after an abandonment the file's error is only its consequence) */
	if ((r == 0 && __atomic_load_n(&rb_stop, __ATOMIC_ACQUIRE)) || __atomic_load_n(&rb_abandon, __ATOMIC_ACQUIRE))
		r = -EINTR;
	if (r < 0 && r != -EINTR) {
		log_err("rebuild of '%s' onto member %u failed: %s", rel, w->lj, strerror(-r));
		if (__atomic_add_fetch(&w->errors, 1, __ATOMIC_RELAXED) == 1) {
			pthread_mutex_lock(&w->lock);
			snprintf(w->first_failed, sizeof(w->first_failed), "'%s' (%s)", rel, strerror(-r));
			pthread_mutex_unlock(&w->lock);
		}
	}
	return r;
}

static void *file_worker(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&fw.lock);
	for (;;) {
		while (!fw.n && !fw.quit)
			pthread_cond_wait(&fw.cv, &fw.lock);
		if (fw.quit)
			break;
		struct walk *w = fw.w;
		char *path = fw.q[fw.head].path;
		struct stat st = fw.q[fw.head].st;
		fw.head = (fw.head + 1) % QUEUE;
		fw.n--;
		pthread_mutex_unlock(&fw.lock);
		/* after a stop, what is still queued is left for the resume */
		bool stop = __atomic_load_n(&rb_stop, __ATOMIC_ACQUIRE) || __atomic_load_n(&rb_abandon, __ATOMIC_ACQUIRE);
		int r = stop ? -EINTR : file_result(w, path, rebuild_file(w, &w->fc[1], path, &st));
		free(path);
		pthread_mutex_lock(&fw.lock);
		if (!fw.ret)
			fw.ret = r;
		__atomic_sub_fetch(&fw.pending, 1, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&fw.cv);
	}
	pthread_mutex_unlock(&fw.lock);
	return NULL;
}

/* Queue rel for the worker; false when the queue is full (or the worker
 * cannot be had). */
static bool worker_give(struct walk *w, const char *rel, const struct stat *st)
{
	if (__atomic_load_n(&fw.n, __ATOMIC_ACQUIRE) == QUEUE)
		return false;
	if (!fw.started) {
		fw.quit = false;
		fw.started = pthread_create(&fw.thread, NULL, file_worker, NULL) == 0;
		if (!fw.started)
			return false;
	}
	char *p = strdup(rel);
	if (!p)
		return false;
	pthread_mutex_lock(&fw.lock);
	bool room = fw.n < QUEUE;
	if (room) {
		unsigned i = (fw.head + fw.n) % QUEUE;
		fw.w = w;
		fw.q[i].path = p;
		fw.q[i].st = *st;
		fw.n++;
		__atomic_add_fetch(&fw.pending, 1, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&fw.cv);
	}
	pthread_mutex_unlock(&fw.lock);
	if (!room)
		free(p);
	return room;
}

/* Wait until the worker is idle. */
static void worker_wait(void)
{
	pthread_mutex_lock(&fw.lock);
	while (fw.pending)
		pthread_cond_wait(&fw.cv, &fw.lock);
	pthread_mutex_unlock(&fw.lock);
}

/* Wait until the worker is idle: 0, or the first error of its files
 * since the last call (-EINTR: stopped). */
static int worker_collect(void)
{
	worker_wait();
	pthread_mutex_lock(&fw.lock);
	int r = fw.ret;
	fw.ret = 0;
	pthread_mutex_unlock(&fw.lock);
	return r;
}

/* At the end of a rebuild. */
static void worker_stop(void)
{
	if (!fw.started)
		return;
	worker_wait();
	pthread_mutex_lock(&fw.lock);
	fw.quit = true;
	fw.ret = 0;
	pthread_cond_broadcast(&fw.cv);
	pthread_mutex_unlock(&fw.lock);
	pthread_join(fw.thread, NULL);
	fw.started = false;
}

/*
 * The member being replaced in place failed (rebuild_replaced_member_failed()):
 * between two files, the shadow becomes the member's rebuild target
 * (array_shadow_promote()) and the walk goes on as an ordinary rebuild
 * of it, keeping what was copied.  Writes to the member between its
 * failure and this point did not reach the copy: the verify pass, run
 * (again) after the promotion, compares every chunk.  When the array
 * cannot rebuild the member (no redundancy left), the copy is dropped.
 */
static void maybe_promote(struct walk *w, bool locked)
{
	if (w->j != SHADOW || !__atomic_load_n(&rb_promote, __ATOMIC_ACQUIRE) || member_online(w->a, w->lj))
		return;
	worker_wait();		/* its file is rebuilt onto w->j */
	/* under the namespace lock: a create meanwhile would open a shard
	 * in the shadow slot after the slot moved */
	if (!locked)
		nslock_excl(&w->a->ns_lock);
	int r = array_shadow_promote(w->a);
	if (!locked)
		nslock_unlock(&w->a->ns_lock);
	if (r < 0) {
		rebuild_abandon_replace();
		return;
	}
	w->j = w->lj;
	w->promoted = w->pass;
	pthread_mutex_lock(&rb_lock);
	info.replace = false;
	pthread_mutex_unlock(&rb_lock);
	log_warn("rebuild of member %u continues onto '%s' from the copy's position (%" PRIu64 " files copied before the member failed are kept and verified)",
		 w->lj, w->a->m[w->lj].path, w->resynced + w->skipped);
}

/* The new member holds something else at child (another kind of object,
 * or a symlink to another target: a re-added member that missed changes,
 * or a leftover of a race): remove it, deciding under the namespace lock. */
static void replace_mismatch(struct walk *w, const char *child, const struct stat *st)
{
	struct stat dt;
	if (fstatat(w->dst, child, &dt, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	bool same = (dt.st_mode & S_IFMT) == (st->st_mode & S_IFMT);
	if (same && !S_ISLNK(st->st_mode))
		return;
	nslock_excl(&w->a->ns_lock);
	struct stat cur;
	if (fstatat(SRC(w), child, &cur, AT_SYMLINK_NOFOLLOW) == 0 &&
	    fstatat(w->dst, child, &dt, AT_SYMLINK_NOFOLLOW) == 0) {
		same = (dt.st_mode & S_IFMT) == (cur.st_mode & S_IFMT);
		if (same && S_ISLNK(cur.st_mode)) {
			char t1[PATH_MAX], t2[PATH_MAX];
			ssize_t n1 = readlinkat(SRC(w), child, t1, sizeof(t1));
			ssize_t n2 = readlinkat(w->dst, child, t2, sizeof(t2));
			same = n1 >= 0 && n1 == n2 && memcmp(t1, t2, n1) == 0;
		}
		if (!same)
			remove_tree(w->dst, child);
	}
	nslock_unlock(&w->a->ns_lock);
}

/* Bring one entry of the source (child, with its stat) onto the new
 * member: directories recursively, files rebuilt (see rebuild_file() for
 * hard links). */
static int walk_entry(struct walk *w, const char *child, const struct stat *st)
{
	int ret = 0;
	replace_mismatch(w, child, st);
	if (S_ISDIR(st->st_mode)) {
		if (mkdirat(w->dst, child, st->st_mode & 07777) < 0 && errno != EEXIST)
			/* its parent moved away meanwhile: the rename queued
			 * the new name for a redo */
			return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
		int dfd = openat(SRC(w), child, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int nfd = openat(w->dst, child, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0 && nfd >= 0)
			rfile_copy_xattrs(dfd, nfd, false);
		if (dfd >= 0) close(dfd);
		if (nfd >= 0) close(nfd);
		ret = walk_dir(w, child);
		/* mode, owner and times as the primary has them now (a chmod
		 * during the walk below reached the new member too; the stat
		 * taken before the walk is stale), decided under the lock;
		 * after the worker created its files in it (they would change
		 * its times, and a mode without write permission would stop
		 * a daemon that is not root) */
		worker_wait();
		struct stat cur;
		nslock_excl(&w->a->ns_lock);
		if (fstatat(SRC(w), child, &cur, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(cur.st_mode)) {
			fchmodat(w->dst, child, cur.st_mode & 07777, 0);
			copy_owner_times(w, child, &cur);
		}
		nslock_unlock(&w->a->ns_lock);
	} else if (S_ISLNK(st->st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(SRC(w), child, target, sizeof(target) - 1);
		if (n >= 0) {
			target[n] = '\0';
			if (symlinkat(target, w->dst, child) == 0 || errno == EEXIST)
				copy_owner_times(w, child, st);
		}
	} else if (S_ISFIFO(st->st_mode) || S_ISSOCK(st->st_mode) || S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
		if (mknodat(w->dst, child, st->st_mode, st->st_rdev) == 0 || errno == EEXIST)
			copy_owner_times(w, child, st);
	} else if (S_ISREG(st->st_mode)) {
		maybe_promote(w, false);
		if (w->pass == 1 && w->resume_after && path_cmp(child, w->resume_after) <= 0) {
			w->skipped++;	/* rebuilt before the interruption */
			return 0;
		}
		bool alone = w->pass == 0 || st->st_nlink > 1 || (uint64_t)st->st_size >= BIG_FILE;
		int r;
		if (w->readd && w->pass && !w->targeted && !w->log_unread && st->st_nlink == 1 &&
		    readd_unchanged(w, child)) {
			/* most files of a re-add: a look, too little to hand over
			 * (a targeted re-add's files are all logged: no look; with
			 * the log unread, rebuild_file() brings metadata over; a
			 * hard-linked file is opened and pinned, so a name linked
			 * while the member was away links to its shard there) */
			__atomic_add_fetch(&w->unchanged, w->pass == 1, __ATOMIC_RELAXED);
			r = file_result(w, child, 0);
		} else if (!alone && worker_give(w, child, st)) {
			r = file_result(w, child, 0);	/* the worker reports its own */
		} else {
			if (alone)
				worker_wait();
			r = file_result(w, child, rebuild_file(w, &w->fc[0], child, st));
		}
		if (r == 0 && w->pass == 1 && position_due(w)) {
			/* every file up to this one is done once the worker is */
			r = worker_collect();
			if (r == 0)
				save_position(w, child);
		}
		if (r == -EINTR)
			ret = r;	/* stopped: not an error of the file */
	}
	return ret;
}


/* After the first pass: names in this directory on the new member that
 * the primary does not have (left there by operations that raced with
 * the walk) are removed; decided under the namespace lock, when every
 * operation has reached every member. */
static void drop_strays(struct walk *w, const char *rel, char **names, size_t nn)
{
	bool root = !strcmp(rel, ".");
	DIR *d = opendir_at(w->dst, rel);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *n = e->d_name;
		if (!strcmp(n, ".") || !strcmp(n, "..") ||
		    (root && (!strcmp(n, ".raidfs") || !strncmp(n, ".raidfs-", 8))))
			continue;
		if (bsearch(&n, names, nn, sizeof(*names), cmp_names))
			continue;
		char *child;
		if (asprintf(&child, root ? "%s%s" : "%s/%s", root ? "" : rel, n) < 0)
			break;
		struct stat st;
		nslock_excl(&w->a->ns_lock);
		if (fstatat(SRC(w), child, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
			remove_tree(w->dst, child);
		nslock_unlock(&w->a->ns_lock);
		free(child);
	}
	closedir(d);
}

static int walk_dir(struct walk *w, const char *rel)
{
	DIR *d = opendir_at(SRC(w), rel);
	if (!d)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	bool root = !strcmp(rel, ".");
	struct dirent *e;
	int ret = 0;
	/* sorted, so the walk order is stable and a position can be resumed */
	char **names = NULL;
	size_t nn = 0, cap = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (root && (!strcmp(e->d_name, ".raidfs") || !strncmp(e->d_name, ".raidfs-", 8)))
			continue;
		if (!util_names_add(&names, &nn, &cap, e->d_name)) {
			ret = -ENOMEM;	/* (the pass fails; a resume walks it again) */
			break;
		}
	}
	closedir(d);
	if (nn)
		qsort(names, nn, sizeof(*names), cmp_names);
	/* a re-add does it in its first pass: its verify pass does not walk
	 * (readd_verify()) */
	if (ret == 0 && !w->count_only && (w->pass != 1 || w->readd))
		drop_strays(w, rel, names, nn);
	for (size_t ni = 0; ni < nn && ret == 0; ni++) {
		char *child;
		if (asprintf(&child, root ? "%s%s" : "%s/%s", root ? "" : rel, names[ni]) < 0) {
			ret = -ENOMEM;
			break;
		}
		struct stat st;
		if (fstatat(SRC(w), child, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			free(child);
			continue;	/* removed meanwhile */
		}
		if (w->count_only) {
			if (S_ISDIR(st.st_mode))
				ret = walk_dir(w, child);
			else if (S_ISREG(st.st_mode)) {
				w->total += st.st_size;
				w->need += (uint64_t)st.st_blocks * 512;
			}
		} else {
			ret = walk_entry(w, child, &st);
		}
		free(child);
	}
	for (size_t ni = 0; ni < nn; ni++)
		free(names[ni]);
	free(names);
	return ret;
}

/* ------------------------------------------------------------------ redo
 *
 * A namespace operation that fails on the member being rebuilt (its
 * source is not rebuilt yet, or its parent directory is not there yet)
 * can leave the new member different from the others behind the walk's
 * position: a rename from the part not yet walked into the part already
 * walked, for example.  Such paths are queued here (and appended to
 * .raidfs/rebuild-redo on the new member, so a resumed rebuild knows them
 * too); after the walk each is made to match the primary again, and the
 * member only becomes online once the queue is empty under the namespace
 * lock.
 */
#define REDO_FILE ".raidfs/rebuild-redo"

static pthread_mutex_t redo_lock = PTHREAD_MUTEX_INITIALIZER;
static char **redo;
static size_t nredo, capredo;
static int redo_fd = -1;

/* a path could not be queued (out of memory): the rebuild stops at the
 * end of its walk, before the member would go online; started again, its
 * verify pass walks everything */
static bool redo_lost;

static void redo_push_locked(struct array *a, const char *path)
{
	if (nredo && !strcmp(redo[nredo - 1], path))
		return;
	if (!util_names_add(&redo, &nredo, &capredo, path) && !redo_lost) {
		log_err("rebuild: out of memory queueing '%s' to be made like the primary: the rebuild stops at the end "
			"of its walk; 'raidfs rebuild %s resume' starts it again", path, a->mountpoint);
		redo_lost = true;
	}
}

void rebuild_redo(struct array *a, const char *path)
{
	while (*path == '/')
		path++;
	if (!*path)
		path = ".";
	pthread_mutex_lock(&redo_lock);
	redo_push_locked(a, path);
	if (redo_fd >= 0 && write(redo_fd, path, strlen(path) + 1) < 0)
		log_warn("cannot record '%s' in %s: %s", path, REDO_FILE, strerror(errno));
	pthread_mutex_unlock(&redo_lock);
}

/* Open the redo file on the new member: keep it when resuming (and load
 * its paths), start it empty otherwise. */
static void redo_open(struct array *a, int dst, bool resuming)
{
	pthread_mutex_lock(&redo_lock);
	/* paths queued since the member became rebuilding are kept */
	size_t pre = nredo;
	if (redo_fd >= 0)
		close(redo_fd);
	redo_fd = -1;
	if (resuming) {
		int fd = openat(dst, REDO_FILE, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			char buf[65536], part[PATH_MAX];
			size_t plen = 0;
			ssize_t n;
			while ((n = read(fd, buf, sizeof(buf))) > 0) {
				for (ssize_t i = 0; i < n; i++) {
					if (buf[i] == '\0') {
						part[plen] = '\0';
						if (plen)
							redo_push_locked(a, part);
						plen = 0;
					} else if (plen < sizeof(part) - 1) {
						part[plen++] = buf[i];
					}
				}
			}
			close(fd);
		}
	}
	redo_fd = openat(dst, REDO_FILE, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (resuming ? 0 : O_TRUNC), 0600);
	for (size_t i = 0; i < pre && redo_fd >= 0; i++)
		if (write(redo_fd, redo[i], strlen(redo[i]) + 1) < 0)
			break;
	pthread_mutex_unlock(&redo_lock);
}

static void redo_close(int dst, bool done)
{
	pthread_mutex_lock(&redo_lock);
	if (redo_fd >= 0)
		close(redo_fd);
	redo_fd = -1;
	for (size_t i = 0; i < nredo; i++)
		free(redo[i]);
	nredo = 0;
	if (done)
		unlinkat(dst, REDO_FILE, 0);
	pthread_mutex_unlock(&redo_lock);
}

/* the queued paths become durable before the saved position moves on */
static void redo_sync(void)
{
	pthread_mutex_lock(&redo_lock);
	if (redo_fd >= 0)
		fdatasync(redo_fd);
	pthread_mutex_unlock(&redo_lock);
}

/* rm -rf of path on the new member */
static void remove_tree(int at, const char *path)
{
	if (unlinkat(at, path, 0) == 0 || errno == ENOENT)
		return;
	DIR *d = opendir_at(at, path);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		remove_tree(dirfd(d), e->d_name);
	}
	if (d)
		closedir(d);
	unlinkat(at, path, AT_REMOVEDIR);
}

/* Make path on the new member match the primary. */
static int redo_one(struct walk *w, const char *path)
{
	struct array *a = w->a;
	struct stat st, dt;
	if (!strcmp(path, "."))
		return 0;
	nslock_excl(&a->ns_lock);
	if (fstatat(SRC(w), path, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			remove_tree(w->dst, path);	/* gone: so is the stale copy */
		nslock_unlock(&a->ns_lock);
		return 0;
	}
	/* parents first, as the walk would have made them */
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", path);
	for (char *sl = strchr(parent, '/'); sl; sl = strchr(sl + 1, '/')) {
		*sl = '\0';
		struct stat ps;
		if (fstatat(w->dst, parent, &dt, AT_SYMLINK_NOFOLLOW) < 0 &&
		    fstatat(SRC(w), parent, &ps, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(ps.st_mode)) {
			mkdirat(w->dst, parent, ps.st_mode & 07777);
			copy_owner_times(w, parent, &ps);
		}
		*sl = '/';
	}
	nslock_unlock(&a->ns_lock);
	/* like the walk: something else at path is replaced, a regular file
	 * is rebuilt whole, a directory is walked again */
	return walk_entry(w, path, &st);
}

/* Work off the queue until it is empty; returns 0 with the namespace
 * lock held (the caller makes the member online and unlocks). */
static int redo_drain(struct walk *w)
{
	for (;;) {
		nslock_excl(&w->a->ns_lock);
		pthread_mutex_lock(&redo_lock);
		char **list = redo;
		size_t n = nredo;
		bool lost = redo_lost;
		redo = NULL;
		nredo = capredo = 0;
		redo_lost = false;
		pthread_mutex_unlock(&redo_lock);
		if (lost) {
			nslock_unlock(&w->a->ns_lock);
			for (size_t i = 0; i < n; i++)
				free(list[i]);
			free(list);
			return -ENOMEM;
		}
		if (n == 0)
			return 0;
		nslock_unlock(&w->a->ns_lock);
		int r = 0;
		for (size_t i = 0; i < n; i++) {
			if (r == 0 && !w->count_only) {
				pthread_mutex_lock(&rb_lock);
				bool stop = rb_stop || __atomic_load_n(&rb_abandon, __ATOMIC_ACQUIRE);
				pthread_mutex_unlock(&rb_lock);
				if (stop)
					r = -EINTR;
				else
					r = redo_one(w, list[i]);
			}
			free(list[i]);
		}
		free(list);
		if (r < 0)
			return r;
		if (w->errors)
			return -EIO;
	}
}

/*
 * The verify pass of a re-add: the files its first pass resynced, by the
 * paths they had then.  The others need no second look: a file the first
 * pass found unchanged (current shard, same metadata version, not open,
 * not in the missed-write log) has its shard opened by every later open,
 * so every later change reaches the member as it reaches the others; a
 * file renamed since (maybe onto a resynced one's path) is in the redo
 * queue; names the member has and the primary lost were dropped in the
 * first pass.  A resumed re-add walks it all (the paths resynced before
 * the interruption are not known).
 */
static int readd_verify(struct walk *w)
{
	int ret = 0;
	for (size_t i = 0; i < w->nresynced_paths && ret == 0; i++) {
		struct stat st;
		const char *p = w->resynced_paths[i];
		if (fstatat(SRC(w), p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			ret = walk_entry(w, p, &st);
	}
	return ret;
}

/*
 * A re-add after changes to files' contents only (no NAMES_MARK, see
 * array.c): the missed-write log holds every changed file with the path
 * it was opened by, and nothing else changed, so the first pass goes to
 * those paths instead of walking the namespace.  Only if each path leads,
 * on the primary and on the returning member, to the file of that id (a
 * rename before the member left can have made an open file's path
 * stale), and if no file is open without a shard on the member; else
 * the walk.  The paths (sorted, malloc'd) go to *out, their sizes to
 * w->total.
 */
static bool readd_targets(struct walk *w, char ***out, size_t *nout)
{
	if (array_missed_names(w->a, w->lj))
		return false;
	/* A file opened while the member was away has no shard of it open:
	 * every write through that handle would miss the member, also after
	 * the re-add.  The walk gives it one (shard_current() does not pass
	 * an open file); only files written while it was away are logged.
	 * Under the namespace lock: no open is halfway. */
	nslock_excl(&w->a->ns_lock);
	bool open_without = rfile_any_without(w->j);
	nslock_unlock(&w->a->ns_lock);
	if (open_without)
		return false;
	char **paths = calloc(w->nmissed + 1, sizeof(*paths));
	size_t n = 0;
	bool ok = paths != NULL;
	for (size_t i = 0; ok && i < w->nmissed; i++) {
		char path[PATH_MAX];
		struct file_meta pm = { 0 }, jm = { 0 };
		ok = array_missed_path(w->a, w->lj, w->missed[i], path, sizeof(path)) > 0 &&
		     strncmp(path, ".raidfs", 7) != 0;
		int pf = ok ? openat(SRC(w), path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
		int jf = pf >= 0 ? openat(w->dst, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
		struct stat st;
		ok = jf >= 0 && meta_get(pf, &pm) == 0 && meta_get(jf, &jm) == 0 &&
		     pm.id == w->missed[i] && jm.id == w->missed[i] && fstat(pf, &st) == 0;
		if (ok)
			w->total += st.st_size;	/* what the progress counts */
		if (pf >= 0)
			close(pf);
		if (jf >= 0)
			close(jf);
		if (ok && (paths[n] = strdup(path)) != NULL)
			n++;
		else
			ok = false;
	}
	if (!ok) {
		for (size_t i = 0; i < n; i++)
			free(paths[i]);
		free(paths);
		w->total = 0;
		return false;
	}
	qsort(paths, n, sizeof(*paths), cmp_names);
	*out = paths;
	*nout = n;
	return true;
}

static int readd_targeted(struct walk *w, char **paths, size_t n)
{
	int ret = 0;
	for (size_t i = 0; i < n && ret == 0; i++) {
		struct stat st;
		if (fstatat(SRC(w), paths[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			ret = walk_entry(w, paths[i], &st);
	}
	return ret;
}

static char resume_path[PATH_MAX];
static bool resume_set;

/*
 * A full rebuild onto a directory with less room than the member needs
 * would fill it up somewhere in the middle, after hours perhaps: it is
 * failed before the copy begins.  The need is judged by the room the
 * source's shards take on their disk (a shard of the new member is about
 * as large, holes stay holes); since that is an estimate, only a target
 * short by more than an eighth of it is failed, and a closer one is
 * warned about.  False when it was failed.
 */
static bool room_for_rebuild(struct walk *w)
{
	struct statvfs sv;
	if (fstatvfs(w->dst, &sv) < 0)
		return true;
	uint64_t avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (w->need <= avail)
		return true;
	char a[32], n[32], why[PATH_MAX + 256];
	snprintf(why, sizeof(why), "'%s' has %s free, and member %u's files take about %s", w->a->m[w->j].path,
		 fmt_size(avail, a, sizeof(a)), w->lj, fmt_size(w->need, n, sizeof(n)));
	if (w->need - avail <= w->need / 8) {
		log_warn("rebuild of member %u: %s: it may fill up before the rebuild ends", w->lj, why);
		return true;
	}
	snprintf(why + strlen(why), sizeof(why) - strlen(why), ": too small to rebuild onto");
	target_failed(w, why);
	return false;
}

/* The rebuild is complete (namespace lock held): the member goes online,
 * unless it failed just now (false). */
static bool rebuilt_online(struct walk *w)
{
	unlinkat(w->dst, POS_FILE, 0);
	redo_close(w->dst, true);
	return array_member_rebuilt(w->a, w->j) != -EINVAL;
}

#define WAIT_MEMBERS ": the array lost more members than it tolerates; it goes on by itself once they are back"

/*
 * The walk of a rebuild onto slot j (a member, or SHADOW for a
 * replacement in place): the buffers kept from the last one, where to
 * resume, and for a re-add its missed-write log.  *logged: the log was
 * read in full.
 */
static void walk_init(struct walk *w, struct array *a, uint32_t j, bool *logged)
{
	*w = (struct walk){ .a = a, .j = j, .lj = j == SHADOW ? (uint32_t)shadow_of(a) : j, .dst = a->m[j].dirfd,
			    .promoted = -1 };
	for (int i = 0; i < 2; i++)
		memcpy(w->fc[i].bufs, kept_bufs[i], sizeof(w->fc[i].bufs));
	if (resume_set)
		w->resume_after = resume_path;
	w->readd = rb_mode != RB_FULL;
	redo_open(w->a, w->dst, resume_set);
	*logged = false;
	if (rb_mode == RB_READD_ALL) {
		/* the slot's log holds what its last directory missed */
		w->log_unread = true;
		log_info("re-add of member %u from a directory it had before another: every file's version is compared",
			 j);
	} else if (w->readd) {
		int ml = array_missed_load(a, j, &w->missed, &w->nmissed);
		if (ml < 0)
			log_warn("re-add of member %u: cannot read its missed-write log (%s): every file's version is compared",
				 j, strerror(-ml));
		*logged = ml == 0;
		w->log_unread = ml < 0;
	}
	if (w->readd) {
		if (!resume_set)
			save_position(w, "");	/* a crash now resumes as a re-add */
		if (rb_mode == RB_READD)
			log_info("re-add of member %u: %zu file%s recorded as changed while it was away",
				 j, w->nmissed, w->nmissed == 1 ? "" : "s");
	}
	pthread_mutex_init(&w->lock, NULL);
}

/* The first pass: count what there is (or take a re-add's logged files),
 * check the room, copy.  0 or -errno. */
static int first_pass(struct walk *w, bool logged)
{
	char **targets = NULL;
	size_t ntargets = 0;
	w->targeted = logged && !resume_set && readd_targets(w, &targets, &ntargets);
	w->count_only = true;
	if (!w->targeted)
		walk_dir(w, ".");
	pthread_mutex_lock(&rb_lock);
	info.total = w->total ? w->total : 1;
	pthread_mutex_unlock(&rb_lock);
	w->count_only = false;
	w->pass = 1;
	t_start_ms = window_start_ms = util_now_ms();
	window_bytes = 0;
	/* (a re-add or a resumed rebuild finds much of it there already) */
	bool room = w->readd || resume_set || room_for_rebuild(w);
	int r = !room ? -ENOSPC : w->targeted ? readd_targeted(w, targets, ntargets) : walk_dir(w, ".");
	for (size_t i = 0; i < ntargets; i++)
		free(targets[i]);
	free(targets);
	int wr = worker_collect();
	if (r == 0 && wr == -EINTR)
		r = wr;
	if (w->resume_after)
		log_info("rebuild of member %u resumed after '%s': %" PRIu64 " files already rebuilt were skipped",
			 w->lj, w->resume_after, w->skipped);
	return r;
}

/* The verify pass: every chunk again, compared with the new member; also
 * catches files renamed into an already rebuilt directory.  first_ms:
 * how long the first pass took (for the log).  0 or -errno. */
static int verify_pass(struct walk *w, uint64_t first_ms)
{
	uint64_t verify_start = util_now_ms();
	pthread_mutex_lock(&rb_lock);
	snprintf(info.current, sizeof(info.current), "(verifying)");
	if (info.phase == REBUILD_COPY) {
		info.phase = REBUILD_VERIFY;
		info.copied = info.done;
		info.files_copied = info.files_done;
	}
	pthread_mutex_unlock(&rb_lock);
	w->verify = true;
	w->pass = 2;
	w->promoted = -1;
	qsort(w->rebuilt, w->nrebuilt, sizeof(*w->rebuilt), cmp_rebuilt);
	w->rebuilt_sorted = true;
	int r = w->readd && !w->resume_after && !w->resynced_paths_lost ? readd_verify(w) : walk_dir(w, ".");
	int wr = worker_collect();
	if (r == 0 && wr == -EINTR)
		r = wr;
	log_info("rebuild of member %u: the verify pass found %" PRIu64 " file%s unchanged since the first pass rebuilt them and rebuilt the others again, comparing (%.3f s; the first pass took %.3f s)",
		 w->lj, w->unchanged_since, w->unchanged_since == 1 ? "" : "s", (util_now_ms() - verify_start) / 1000.0,
		 first_ms / 1000.0);
	if (w->fixed)
		log_warn("rebuild of member %u: the verify pass rewrote %" PRIu64 " chunk%s changed during the rebuild",
			 w->lj, w->fixed, w->fixed == 1 ? "" : "s");
	return r;
}

/* Paths the namespace changed under the walk: returns 0 with the
 * namespace lock held, so nothing changes before the member is online,
 * or -errno without it. */
static int catch_up(struct walk *w)
{
	w->verify = false;
	w->pass = 0;
	/* (a file rebuilt in full and not changed since is only looked at: a
	 * directory renamed again and again is walked again each time, and
	 * rebuilding all of it each time never caught up) */
	w->redo = true;
	pthread_mutex_lock(&rb_lock);
	info.phase = REBUILD_CATCH_UP;
	pthread_mutex_unlock(&rb_lock);
	int r = redo_drain(w);
	w->redo = false;
	return r;
}

/*
 * The passes after the first: verify, catch up, and for a replacement in
 * place the commit (*committed).  A promotion (the member being replaced
 * failed, its replacement became its rebuild) verifies again.  Returns
 * the result; *locked: the namespace lock is held (caught up).
 */
static int later_passes(struct walk *w, int r, bool *locked, bool *committed)
{
	uint64_t first_ms = util_now_ms() - t_start_ms;
	*locked = *committed = false;
	for (;;) {
		if (r == 0 && w->errors == 0) {
			r = verify_pass(w, first_ms);
			if (r == 0 && w->errors == 0 && w->promoted >= 0)
				continue;	/* promoted under this pass: verify it all again */
		}
		if (r == 0 && w->errors == 0) {
			r = catch_up(w);
			*locked = r == 0;
		}
		if (*locked && w->j == SHADOW) {
			/* the copy is complete; its member failed meanwhile? */
			maybe_promote(w, true);
			if (w->j == SHADOW && !__atomic_load_n(&rb_abandon, __ATOMIC_ACQUIRE)) {
				if (array_shadow_commit(w->a) == 0) {
					w->j = w->lj;	/* it failed just now: promoted */
					w->promoted = 0;
				} else {
					*committed = true;
				}
			}
		}
		if (*locked && w->promoted == 0) {
			/* promoted while the queue was worked off */
			nslock_unlock(&w->a->ns_lock);
			*locked = false;
			continue;
		}
		return r;
	}
}

/* How a replacement in place ended (r, committed: see later_passes(); the
 * namespace lock held when committed): into msg. */
static void end_replace(struct walk *w, int r, bool committed, bool abandoned, char *msg, size_t len)
{
	struct array *a = w->a;
	uint32_t lj = w->lj;
	if (committed) {
		/* committed: the shadow is member lj now */
		unlinkat(w->dst, POS_FILE, 0);
		redo_close(w->dst, true);
		nslock_unlock(&a->ns_lock);
		snprintf(msg, len, "member %u replaced by '%.120s' and verified (%.2f s)", lj, a->m[lj].path,
			 (util_now_ms() - t_start_ms) / 1000.0);
		log_info("%s", msg);
	} else if (r == -EINTR && !abandoned) {
		/* unmount: the replacement stays recorded and resumes */
		redo_close(w->dst, false);
		snprintf(msg, len, "replacement of member %u stopped at %.120s%s", lj, info.current,
			 rb_waiting >= 0 ? WAIT_MEMBERS : "");
		log_warn("%s", msg);
	} else {
		redo_close(w->dst, false);
		nslock_excl(&a->ns_lock);	/* no create opens a shard there meanwhile */
		array_shadow_drop(a);
		nslock_unlock(&a->ns_lock);
		snprintf(msg, len, "the replacement of member %u was abandoned (%s); it stays in service", lj,
			 abandoned ? "the replacement failed, see the log"
			 : w->errors ? "file errors, see the log" : "the member or the copy failed");
		log_warn("%s", msg);
	}
}

/* How the rebuild of member j ended (r; locked: caught up, namespace lock
 * held): the member online, or why not, into msg.  Returns the files
 * left not rebuilt. */
static int end_rebuild(struct walk *w, uint32_t j, int r, bool locked, bool abandoned, char *msg, size_t len)
{
	struct array *a = w->a;
	double secs = (util_now_ms() - t_start_ms) / 1000.0;
	if (locked && !abandoned && rebuilt_online(w)) {
		array_missed_clear(a, j);
		nslock_unlock(&a->ns_lock);
		if (w->targeted)
			snprintf(msg, len, "member %u '%.120s' re-added: %" PRIu64 " changed file%s resynced, found through the missed-write log without a walk (%.3f s)",
				 j, a->m[j].path, w->resynced, w->resynced == 1 ? "" : "s", secs);
		else if (w->readd)
			snprintf(msg, len, "member %u '%.120s' re-added: %" PRIu64 " changed file%s resynced, %" PRIu64 " unchanged (%.3f s)",
				 j, a->m[j].path, w->resynced, w->resynced == 1 ? "" : "s", w->unchanged, secs);
		else
			snprintf(msg, len, "member %u rebuilt onto '%.120s' and verified (%" PRIu64 " file%s, %.3f s)",
				 j, a->m[j].path, info.files_done / 2, info.files_done / 2 == 1 ? "" : "s", secs);
		log_info("%s", msg);
		event_post(a, "RebuildFinished", j);
		return 0;
	}
	if (locked)
		nslock_unlock(&a->ns_lock);
	redo_close(w->dst, false);
	if (locked || abandoned) {
		snprintf(msg, len, "rebuild of member %u onto '%.120s' stopped: the new member failed (see the log)",
			 j, a->m[j].path);
		log_err("%s", msg);
	} else if (r == -EINTR) {
		snprintf(msg, len, "rebuild of member %u stopped at %.120s%s", j, info.current,
			 rb_waiting >= 0 ? WAIT_MEMBERS : "");
		log_warn("%s", msg);
	} else {
		if (w->errors)
			snprintf(msg, len, "rebuild of member %u failed: %d file%s could not be rebuilt, the first %.300s; "
				 "the member stays rebuilding (see the log)",
				 j, w->errors, w->errors == 1 ? "" : "s", w->first_failed);
		else
			snprintf(msg, len, "rebuild of member %u failed: the member stays rebuilding; see the log", j);
		log_err("%s", msg);
		return w->errors;
	}
	return 0;
}

/* What the walk holds, let go; its buffers kept for the next rebuild
 * unless they are large. */
static void walk_free(struct walk *w)
{
	struct array *a = w->a;
	for (size_t i = 0; i < w->nlinks; i++)
		rfile_release(w->links[i].rf);
	free(w->links);
	for (size_t i = 0; i < w->capfar; i++)
		free(w->far[i].path);
	free(w->far);
	free(w->missed);
	free(w->rebuilt);
	for (size_t i = 0; i < w->nresynced_paths; i++)
		free(w->resynced_paths[i]);
	free(w->resynced_paths);
	uint64_t piece = a->lay.chunk > PIECE_BYTES ? a->lay.chunk : PIECE_BYTES;
	bool keep = (a->lay.width + 2 + PARITY_MAX_M) * piece <= KEEP_BUFS_MAX;
	for (int i = 0; i < 2; i++) {
		for (int k = 0; k < 2 && !keep; k++)
			piece_bufs_free(&w->fc[i].bufs[k]);
		memcpy(kept_bufs[i], w->fc[i].bufs, sizeof(kept_bufs[i]));
	}
	pthread_mutex_destroy(&w->lock);
}

/*
 * The rebuild thread: first pass, verify and catch-up passes (with the
 * commit of a replacement in place), then the end: the member in service
 * or why not, in info.last_result.
 */
/* What launch() hands its thread. */
struct rb_start {
	struct array *a;
	uint32_t slot;
};

static void *rebuild_thread(void *arg)
{
	struct rb_start *start = arg;
	struct array *a = start->a;
	uint32_t j = start->slot;
	free(start);
	bool shadow = j == SHADOW, logged, locked, committed;
	struct walk w;
	array_watch_user_io(a, true);	/* (its rate falls to min_rate while users do I/O) */
	walk_init(&w, a, j, &logged);
	int r = first_pass(&w, logged);
	r = later_passes(&w, r, &locked, &committed);

	pthread_mutex_lock(&rb_lock);
	rb_ending = true;
	pthread_mutex_unlock(&rb_lock);
	char msg[512];
	int failed = 0;	/* files left not rebuilt */
	bool abandoned = __atomic_load_n(&rb_abandon, __ATOMIC_ACQUIRE);
	if (w.j == SHADOW && locked && !committed) {
		nslock_unlock(&a->ns_lock);
		locked = false;
		r = -EIO;	/* the copy could not follow the member, or the
				 * member failed with nothing to rebuild it from */
	}
	if (w.j != SHADOW)
		j = w.j;	/* the member's own slot, also after a promotion */
	if (shadow && w.j == SHADOW)
		end_replace(&w, r, committed, abandoned, msg, sizeof(msg));
	else
		failed = end_rebuild(&w, j, r, locked, abandoned, msg, sizeof(msg));
	worker_stop();
	walk_free(&w);
	array_watch_user_io(a, false);
	/* (a replacement ends in service when committed, any other when its
	 * member is online) */
	bool ok = shadow && w.j == SHADOW ? committed : member_online(a, j);
	double secs = (util_now_ms() - t_start_ms) / 1000.0;
	pthread_mutex_lock(&rb_lock);
	info.active = false;
	rb_ending = false;
	info.failed_files = failed;
	snprintf(info.last_result, sizeof(info.last_result), "%s", msg);
	info.last_member = (int)(shadow && w.j == SHADOW ? w.lj : j);
	info.last_ok = ok;
	info.last_replace = info.replace;
	info.last_readd = info.readd;
	info.last_elapsed = secs;
	info.last_bytes = info.done;
	info.last_end = (int64_t)time(NULL);
	pthread_cond_broadcast(&rb_cond);
	pthread_mutex_unlock(&rb_lock);
	return NULL;
}

/* (rb_lock held) A rebuild whose member is already back in service may
 * still be running its last lines (the event program, the log): a start
 * right after `status` showed the member online waits for it, rather
 * than refusing with "already running". */
static void wait_ending(void)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	while (info.active && rb_ending && pthread_cond_timedwait(&rb_cond, &rb_lock, &until) == 0)
		;
}

static int start_on(struct array *a, int member, int fd, const char *path, enum rb_mode mode, char *err, size_t errlen);
static int start_replace(struct array *a, int member, int fd, const char *path, char *err, size_t errlen);

/* Common checks: can member be rebuilt now? */
static int can_rebuild(struct array *a, int member, char *err, size_t errlen)
{
	if (member < 0 || (uint32_t)member >= a->width) {
		snprintf(err, errlen, "no member %d (the array has %u)", member, a->width);
		return -EINVAL;
	}
	bool in_place = member_online(a, member);	/* copied, not rebuilt */
	if (a->lay.red == RED_NONE && !in_place) {
		snprintf(err, errlen, "%s has no redundancy: nothing to rebuild from", layout_level_name(a->lay.level));
		return -EINVAL;
	}
	if (array_state(a) == ARRAY_FAILED && !in_place) {
		snprintf(err, errlen, "the array has lost more members than it tolerates: there is no complete data to rebuild from");
		return -EIO;
	}
	/* (last: a replace that finds a rebuild running is queued) */
	pthread_mutex_lock(&rb_lock);
	wait_ending();
	bool busy = info.active;
	int running = info.member;
	pthread_mutex_unlock(&rb_lock);
	if (busy) {
		snprintf(err, errlen, "a rebuild is already running (member %d)", running);
		return -EBUSY;
	}
	return 0;
}

int rebuild_start(struct array *a, int member, const char *dir, char *err, size_t errlen)
{
	int r = can_rebuild(a, member, err, errlen);
	bool queue = r == -EBUSY;	/* another rebuild runs: queued, below */
	if (queue) {
		struct rebuild_info ri;
		rebuild_get(&ri);
		if (ri.active && ri.member == member) {
			snprintf(err, errlen, "member %d is being %s onto '%s' now: to use another directory, stop that one first with 'raidfs fail %s %s'",
				 member, ri.replace ? "copied" : "rebuilt", ri.target, a->mountpoint, ri.target);
			return -EBUSY;
		}
	} else if (r < 0) {
		return r;
	}
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open '%s': %s (create the directory, or mount the new disk there)", dir, strerror(errno));
		return -errno;
	}
	if ((r = array_check_new_dir(a, fd, dir, err, errlen)) < 0) {
		close(fd);
		return r;
	}
	if (!array_dir_is_empty(fd)) {
		snprintf(err, errlen, "'%s' is not empty: a replacement must be an empty directory", dir);
		close(fd);
		return -ENOTEMPTY;
	}
	r = array_probe_xattr(fd);
	if (r < 0) {
		snprintf(err, errlen, "'%s' cannot hold user extended attributes (%s): use a filesystem with user xattrs",
			 dir, strerror(-r));
		close(fd);
		return r;
	}
	char *rp = realpath(dir, NULL);
	if (queue) {
		r = array_queue_replacement(a, member, fd, rp ? rp : dir, err, errlen);
		free(rp);
		if (r == -EBUSY || r == -ENOSPC) {
			close(fd);
			return r;
		}
		return 1;	/* (queued; a superblock it could not write is logged) */
	}
	if (member_online(a, member))
		r = start_replace(a, member, fd, rp ? rp : dir, err, errlen);
	else
		r = start_on(a, member, fd, rp ? rp : dir, RB_FULL, err, errlen);
	free(rp);
	return r;
}

/* Start the thread that fills `slot` (the member's own, or SHADOW) with
 * member's contents.  resume: at mount, from the position saved on the
 * slot's directory (if any; its mode decides re-add or not). */
static int launch(struct array *a, int member, uint32_t slot, enum rb_mode mode, bool resume,
		  const char *target, char *err, size_t errlen)
{
	uint64_t done = 0;
	bool have_pos = false;
	/* (the saved position is read into a buffer of this call's own: the
	 * shared one belongs to a rebuild that may be running) */
	char pos[PATH_MAX];
	if (resume)
		have_pos = load_position(a->m[slot].dirfd, member, pos, sizeof(pos), &done, &mode);
	else
		rfile_forget_member(slot);
	pthread_mutex_lock(&rb_lock);
	wait_ending();
	if (info.active) {
		/* another start got here first (the monitor and a command);
		 * the caller may have recorded its member as rebuilding:
		 * rebuild_resume_due() starts it once that one ends */
		if (info.member != member && member >= 0 && member < 64)
			rb_queued |= 1ull << member;
		pthread_mutex_unlock(&rb_lock);
		snprintf(err, errlen, "a rebuild is already running (member %d)", info.member);
		return -EBUSY;
	}
	snprintf(resume_path, sizeof(resume_path), "%s", have_pos ? pos : "");
	info.active = true;
	if (rb_thread_live) {
		pthread_mutex_unlock(&rb_lock);
		pthread_join(rb_thread, NULL);
		pthread_mutex_lock(&rb_lock);
	}
	resume_set = resume && have_pos;
	rb_mode = mode;
	info.readd = mode != RB_FULL;
	info.replace = slot == SHADOW;
	snprintf(info.target, sizeof(info.target), "%s", target);
	info.active = true;
	info.paused = false;
	info.member = member;
	info.done = done;
	info.phase = REBUILD_COPY;
	info.copied = 0;
	info.files_copied = 0;
	info.files_done = 0;
	info.total = 0;
	info.rate = info.elapsed = 0;
	info.current[0] = '\0';
	/* (a rebuild that stopped for lack of members, of another member,
	 * waits its turn) */
	if (rb_waiting >= 0 && rb_waiting < 64 && rb_waiting != member)
		rb_queued |= 1ull << rb_waiting;
	rb_stop = false;
	rb_waiting = -1;
	__atomic_store_n(&rb_abandon, false, __ATOMIC_RELEASE);
	__atomic_store_n(&rb_promote, false, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&rb_lock);
	if (resume && resume_set)
		log_warn("array '%s': resuming the %s of member %d onto '%s' after '%s'", a->sb.name,
			 slot == SHADOW ? "replacement" : "rebuild", member, target, resume_path);
	else if (resume)
		log_warn("array '%s': restarting the %s of member %d onto '%s' (no saved position)", a->sb.name,
			 slot == SHADOW ? "replacement" : "rebuild", member, target);
	if (mode != RB_FULL && !resume)
		event_post(a, "MemberReturned", member);
	event_post(a, "RebuildStarted", member);
	struct rb_start *start = malloc(sizeof(*start));
	if (start)
		*start = (struct rb_start){ .a = a, .slot = slot };
	if (!start || pthread_create(&rb_thread, NULL, rebuild_thread, start) != 0) {
		free(start);
		info.active = false;
		snprintf(err, errlen, "cannot start the rebuild thread");
		return -EAGAIN;
	}
	rb_thread_live = true;
	return 0;
}

/* Put fd (an empty, checked directory, or the member's old one for a
 * re-add) in member's slot and start.  Only a re-add of the directory the
 * slot had last keeps the slot's generation. */
static int start_on(struct array *a, int member, int fd, const char *path, enum rb_mode mode, char *err, size_t errlen)
{
	int r = array_replace_begin(a, member, fd, path, mode == RB_READD);
	if (r == -EBUSY) {
		snprintf(err, errlen, "member %d is not faulty or missing", member);
		return r;
	}
	return launch(a, member, member, mode, false, path, err, errlen);
}

/* Replace a healthy member in place: fd (path) fills up in the shadow
 * slot while the member serves. */
static int start_replace(struct array *a, int member, int fd, const char *path, char *err, size_t errlen)
{
	if (array_shadow_begin(a, member, fd, path) < 0) {
		snprintf(err, errlen, "member %d is not online, or another replacement runs", member);
		close(fd);
		return -EBUSY;
	}
	return launch(a, member, SHADOW, RB_FULL, false, path, err, errlen);
}

void rebuild_stop(void)
{
	pthread_mutex_lock(&rb_lock);
	rb_stop = true;
	pthread_cond_broadcast(&rb_cond);
	bool live = rb_thread_live;
	pthread_mutex_unlock(&rb_lock);
	if (live)
		pthread_join(rb_thread, NULL);
	rb_thread_live = false;
}

/* Start member j's rebuild (or its copy in place, when it is online)
 * onto the replacement queued for it, else onto a hot spare.  The member
 * is noted as starting (info.starting) from before its directory leaves
 * the queue until its rebuild is active, so `replace --wait` never sees
 * it neither queued nor rebuilding.  1 started, 0 nothing to take, -1 the
 * start failed (logged). */
static int take_for(struct array *a, uint32_t j)
{
	char err[256], path[PATH_MAX];
	int fd;
	bool queued = false;
	if (can_rebuild(a, j, err, sizeof(err)) < 0)
		return 0;
	pthread_mutex_lock(&rb_lock);
	info.starting = (int)j;
	pthread_mutex_unlock(&rb_lock);
	int r = 0;
	bool in_place = member_online(a, j);
	/* (only a queued replacement is taken for an online member) */
	if (array_take_spare(a, j, in_place, &fd, path, sizeof(path), &queued) < 0) {
		r = 0;
	} else if (in_place) {
		log_warn("array '%s': the queued replacement of member %u by '%s' starts", a->sb.name, j, path);
		r = start_replace(a, j, fd, path, err, sizeof(err)) < 0 ? -1 : 1;
	} else {
		if (queued) {
			log_warn("array '%s': the queued replacement of member %u by '%s' starts", a->sb.name, j, path);
		} else {
			log_warn("array '%s': hot spare '%s' takes the place of member %u", a->sb.name, path, j);
			event_post(a, "SpareActive", j);
		}
		r = start_on(a, j, fd, path, RB_FULL, err, sizeof(err)) < 0 ? -1 : 1;
	}
	if (r < 0)
		log_err("cannot %s member %u onto '%s': %s", in_place ? "replace" : "rebuild", j, path, err);
	pthread_mutex_lock(&rb_lock);
	info.starting = -1;
	pthread_mutex_unlock(&rb_lock);
	return r;
}

/* The monitor and 'raidfs add' both hand spares out: one at a time, so
 * the second sees the rebuild the first started. */
static pthread_mutex_t take_lock = PTHREAD_MUTEX_INITIALIZER;

static int take_spare_locked(struct array *a)
{
	if (array_spare_count(a) == 0)
		return 0;
	/* the queued replacements first, in the order they were queued (one
	 * whose member is being rebuilt - a rebuild that stopped - waits) */
	int q[SB_MAX_SPARES];
	int nq = array_queued(a, q, SB_MAX_SPARES);
	for (int k = 0; k < nq; k++) {
		if (member_rebuilding(a, (uint32_t)q[k]) || (member_online(a, (uint32_t)q[k]) && shadow_of(a) >= 0))
			continue;
		return take_for(a, (uint32_t)q[k]);
	}
	/* then hot spares, for the members out of service */
	for (uint32_t j = 0; j < a->width; j++) {
		if (member_online(a, j) || member_rebuilding(a, j))
			continue;
		int r = take_for(a, j);
		if (r != 0)
			return r;
	}
	return 0;
}

int rebuild_take_spare(struct array *a)
{
	pthread_mutex_lock(&take_lock);
	int r = take_spare_locked(a);
	pthread_mutex_unlock(&take_lock);
	return r;
}

int rebuild_readd(struct array *a, const char *dir, char *err, size_t errlen)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open '%s': %s", dir, strerror(errno));
		return -errno;
	}
	struct superblock sb;
	const char *why;
	if (sb_read(fd, &sb, &why) < 0 || memcmp(sb.uuid, a->sb.uuid, sizeof(sb.uuid)) != 0 ||
	    sb.index >= a->width) {
		close(fd);
		return -ENOENT;	/* not one of ours: maybe a spare */
	}
	int j = sb.index;
	if (member_online(a, j) || member_rebuilding(a, j)) {
		if (same_file(a->m[j].dirfd, fd))
			snprintf(err, errlen, "'%s' is member %d of this array, in service", dir, j);
		else
			snprintf(err, errlen, "'%s' was member %d, which is in service from '%s': to use this directory, empty it and give it to 'raidfs replace %s %d'",
				 dir, j, a->m[j].path, a->mountpoint, j);
		close(fd);
		return -EBUSY;
	}
	/* the slot went to another directory since (which failed too): the
	 * missed-write log is that one's, not this directory's */
	bool before = sb.members[j].gen != a->sb.members[j].gen ||
		      (!sb_uuid_nil(sb.member_uuid) && !sb_uuid_nil(a->sb.members[j].uuid) &&
		       memcmp(sb.member_uuid, a->sb.members[j].uuid, 16) != 0);
	if (sb.events > a->sb.events) {
		snprintf(err, errlen, "'%s' (member %d) is newer than the running array (events %llu > %llu): unmount and mount with it instead",
			 dir, j, (unsigned long long)sb.events, (unsigned long long)a->sb.events);
		close(fd);
		return -EINVAL;
	}
	/* Open files keep their descriptors of the member's shards while it
	 * is away; they are still right if this is the same directory (the
	 * same inodes), useless otherwise.  Files opened while it was away
	 * have none. */
	if (!same_file(a->m[j].dirfd, fd))
		rfile_forget_member(j);
	int p = __atomic_load_n(&a->primary, __ATOMIC_ACQUIRE);
	bool quiet = p >= 0 && !before && array_missed_empty(a, j);
	bool fds_ok = !rfile_any_without(j);
	char *rp = realpath(dir, NULL);
	const char *path = rp ? rp : dir;
	int r;
	if (quiet && fds_ok) {
		/* nothing changed while it was away: back as it is (this is also
		 * how a failed array recovers when its members return) */
		array_dirty_prune(a, fd);
		r = array_member_back(a, j, fd, path);
		fd = -1;	/* array_member_back's now */
		if (r == -EBUSY)
			snprintf(err, errlen, "member %d came back meanwhile", j);
		else if (r < 0)
			snprintf(err, errlen, "member %d is back in service, but the superblocks could not record it (%s; see the log): after a restart it is out again",
				 j, strerror(-r));
		if (r != -EBUSY && !array_missed_empty(a, j)) {
			/* A change began between the look at the log and the
			 * member's return: it logged itself before it touched
			 * anything (a write logs its file before it looks at
			 * which members to write), so its marker is there now,
			 * and it may have passed the member by.  Out again, and
			 * back through a resync. */
			array_fail_member(a, j, "a change began while it was coming back");
			free(rp);
			return rebuild_readd(a, dir, err, errlen);
		}
	} else if (quiet && array_state(a) == ARRAY_FAILED) {
		snprintf(err, errlen, "member %d can come back once the files opened while it was away are closed (nothing else changed)",
			 j);
		r = -EBUSY;
	} else if ((r = can_rebuild(a, j, err, errlen)) < 0) {
		if (array_state(a) == ARRAY_FAILED)
			snprintf(err, errlen, "member %d missed changes while it was away, and the array has no redundancy left to resync them: bring back the other members first",
				 j);
	} else {
		char was[PATH_MAX + 32] = "";
		if (before)
			snprintf(was, sizeof(was), ", its directory before '%s'", a->sb.members[j].path);
		log_warn("array '%s': re-adding member %d from '%s'%s (events %llu, array at %llu)", a->sb.name, j,
			 path, was, (unsigned long long)sb.events, (unsigned long long)a->sb.events);
		array_dirty_prune(a, fd);
		r = start_on(a, j, fd, path, before ? RB_READD_ALL : RB_READD, err, errlen);
		fd = -1;	/* start_on owns it */
	}
	if (fd >= 0)
		close(fd);
	free(rp);
	return r < 0 ? r : j;
}

int rebuild_add_spare(struct array *a, const char *dir, char *err, size_t errlen)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open '%s': %s (create the directory, or mount the new disk there)", dir, strerror(errno));
		return -errno;
	}
	int r = array_check_new_dir(a, fd, dir, err, errlen);
	if (r < 0) {
		close(fd);
		return r;
	}
	if (!array_dir_is_empty(fd)) {
		snprintf(err, errlen, "'%s' is not empty: a spare must be an empty directory", dir);
		close(fd);
		return -ENOTEMPTY;
	}
	r = array_probe_xattr(fd);
	if (r < 0) {
		snprintf(err, errlen, "'%s' cannot hold user extended attributes (%s)", dir, strerror(-r));
		close(fd);
		return r;
	}
	char *rp = realpath(dir, NULL);
	r = array_add_spare(a, fd, rp ? rp : dir, err, errlen);
	free(rp);
	if (r < 0)
		close(fd);
	return r;
}

int rebuild_resume_due(struct array *a, int *member)
{
	pthread_mutex_lock(&rb_lock);
	int due = info.active || array_state(a) == ARRAY_FAILED ? 0 : rb_waiting >= 0 ? 1 : rb_queued ? 2 : 0;
	*member = -1;
	if (due == 1) {
		*member = rb_waiting;
		rb_waiting = -1;	/* one try (a failed target stays failed) */
	} else if (due == 2) {
		*member = __builtin_ctzll(rb_queued);	/* one at a time, in turn */
		rb_queued &= rb_queued - 1;
	}
	pthread_mutex_unlock(&rb_lock);
	return due;
}

int rebuild_resume(struct array *a)
{
	return rebuild_resume_member(a, -1);
}

int rebuild_resume_member(struct array *a, int only)
{
	char err[256];
	/* (under the namespace lock, as the rebuild thread does both: a
	 * create meanwhile would open a shard in the slot as it moves) */
	nslock_excl(&a->ns_lock);
	int sj = shadow_of(a);
	if (sj >= 0 && !member_online(a, sj) && array_shadow_promote(a) < 0)
		array_shadow_drop(a);	/* nothing to rebuild it from */
	nslock_unlock(&a->ns_lock);
	sj = shadow_of(a);
	if (sj >= 0 && (only < 0 || only == sj)) {
		/* a replacement in place: the member serves, the copy goes on */
		int r = launch(a, sj, SHADOW, RB_FULL, true, a->m[SHADOW].path, err, sizeof(err));
		return r < 0 ? r : 1;
	}
	for (uint32_t j = 0; j < a->width; j++) {
		if (!member_rebuilding(a, j) || (only >= 0 && (int)j != only))
			continue;
		/* also a replacement whose member failed (its mode "replace") */
		int r = launch(a, j, j, RB_FULL, true, a->m[j].path, err, sizeof(err));
		return r < 0 ? r : 1;
	}
	return 0;
}

/* What the array and the file table tell the rebuild (array.h, struct
 * array_hooks; registered by mount.c). */
const struct array_hooks rebuild_hooks = {
	.target_failed = rebuild_target_failed,
	.replaced_member_failed = rebuild_replaced_member_failed,
	.abandon_replace = rebuild_abandon_replace,
	.redo = rebuild_redo,
};
