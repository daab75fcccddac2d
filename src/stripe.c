/*
 * stripe.c - reading and writing file data across the member shards.
 *
 * The unit of work is one redundancy group of one stripe ("a row"): k data
 * slots and m redundancy slots at the same shard offset s * chunk.
 *
 *   stripe_write()  walks the stripes the request touches; for each group
 *                   it hands the new bytes to write_group(), which
 *     - for no redundancy, writes the data slots;
 *     - for mirrors, writes the same bytes to every present copy;
 *     - for parity, makes all k data slots of the touched byte range
 *       available (user buffer where the write covers the range, otherwise
 *       read from the members, reconstructing absent ones), encodes the
 *       parity and writes the new data and the parity
 *       ("reconstruct-write"; full-stripe writes read nothing).
 *   stripe_read()   reads data slots straight into the caller's buffer and
 *                   reconstructs only slots whose member is absent or whose
 *                   read fails (the planner, recon.h, says from which).
 *
 * Crash consistency: every change starts with mark_dirty(), which puts the
 * file in the array's dirty log before any shard is touched; a crash in the
 * middle of write_group() therefore leaves a file the next mount resyncs.
 *
 * A member write that fails fails the member (write_failed(), md's way)
 * and the write goes on with the others while its group keeps its data.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "file.h"
#include "stripe.h"
#include "csum.h"
#include "guard.h"
#include "pair.h"
#include "parity.h"
#include "rebuild.h"
#include "recon.h"
#include "util.h"

/* ------------------------------------------------------- thread scratch */

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
/* a thread's buffers, one for each use that may be live while another is:
 * the I/O of a stripe, the rebuild's compare, a checksummed write's window */
enum { SCR_IO, SCR_EXTRA, SCR_SUMS, SCR_N };
struct scratch {
	uint8_t *buf[SCR_N];
	size_t len[SCR_N];
};

static void scratch_free(void *p)
{
	struct scratch *s = p;
	for (int i = 0; i < SCR_N; i++)
		free(s->buf[i]);
	free(s);
}

static void scratch_init(void)
{
	pthread_key_create(&scratch_key, scratch_free);
}

/* A per-thread, 64-byte aligned buffer of at least len bytes for use
 * `which`; valid until the thread's next call for that use, freed when
 * the thread ends.  NULL when memory is short. */
static uint8_t *scratch_of(int which, size_t len)
{
	pthread_once(&scratch_once, scratch_init);
	struct scratch *s = pthread_getspecific(scratch_key);
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		pthread_setspecific(scratch_key, s);
	}
	if (s->len[which] < len) {
		void *p;
		if (posix_memalign(&p, 64, len))
			return NULL;
		free(s->buf[which]);
		s->buf[which] = p;
		s->len[which] = len;
	}
	return s->buf[which];
}

static uint8_t *scratch(size_t len)
{
	return scratch_of(SCR_IO, len);
}

static uint8_t *scratch_extra(size_t len)
{
	return scratch_of(SCR_EXTRA, len);
}

/* ------------------------------------------------------ the metadata record */

/* The metadata record of rf at `version` with `size` (index: the
 * caller's). */
struct file_meta stripe_meta_record(struct rfile *rf, uint64_t version, uint32_t flags, uint64_t size)
{
	return (struct file_meta){
		.id = rf->id,
		.size = size,
		.version = version,
		.flags = flags | (rf->sums ? META_F_SUMS : 0),
		.level = rf->lay.level,
		.chunk = rf->lay.chunk,
		.width = rf->lay.width,
		.groups = rf->lay.groups,
		.rotation = rf->lay.rotation,
	};
}

/*
 * Give every shard (and the replacement's) the full length the size needs:
 * a write past the end leaves the shards it did not reach short, a hole
 * that reads as zeros.  Extended like this (as a hole again), a shard
 * found shorter later has lost data (rfile_open()).  A damaged shard is
 * left short, so the next open finds it again.  True if all are long
 * enough.
 */
static bool extend_to(int fd, uint64_t want)
{
	struct stat st;
	/* (every shard is long enough for nothing: no fstat - a new file's
	 * record, a small file's shards beyond its one stripe's data) */
	return want == 0 || (fstat(fd, &st) == 0 && ((uint64_t)st.st_size >= want || ftruncate(fd, (off_t)want) == 0));
}

static bool extend_shards(struct rfile *rf, uint64_t size)
{
	bool all = true;
	for (uint32_t j = 0; j < rf->a->width; j++)
		if (rf->fd[j] >= 0 && member_writable(rf->a, j) && !(rf->damaged >> j & 1))
			all &= extend_to(rf->fd[j], layout_shard_size(&rf->lay, j, size));
	int sj = shadow_of(rf->a);
	if (sj >= 0 && rf->fd[SHADOW] >= 0)
		all &= extend_to(rf->fd[SHADOW], layout_shard_size(&rf->lay, (uint32_t)sj, size));
	return all;
}

/* extend: give the shards their lengths first (the caller holds rf->rw
 * exclusively: a write beside it could be cut short by the extension) */
static int write_meta(struct rfile *rf, uint32_t flags, uint64_t size, bool extend)
{
	if (extend && extend_shards(rf, size))
		flags |= META_F_EXACT;
	struct file_meta fm = stripe_meta_record(rf, ++rf->meta_version, flags, size);
	int ret = 0;
	int sj = shadow_of(rf->a);
	if (sj >= 0 && rf->fd[SHADOW] >= 0) {
		fm.index = sj;	/* the shadow becomes member sj */
		int r = member_meta_set(rf->a, SHADOW, rf->fd[SHADOW], &fm);
		if (r < 0) {
			log_err("cannot write metadata of file %016" PRIx64 " on the replacement '%s': %s; the "
				"replacement is given up (the member it was copying keeps serving; start it again "
				"with 'raidfs replace')", rf->id, rf->a->m[SHADOW].path, strerror(-r));
			array_abandon_replace(rf->a);
		}
	}
	uint64_t refused = 0;
	int err[MEMBER_SLOTS] = { 0 };
	bool took = false;
	for (uint32_t j = 0; j < rf->a->width; j++) {
		/* (a damaged shard's too: its damage shows in its length, and a
		 * stat of the closed file reads the primary's record) */
		if (rf->fd[j] < 0 || !member_writable(rf->a, j))
			continue;
		fm.index = j;
		err[j] = member_meta_set(rf->a, j, rf->fd[j], &fm);
		if (err[j] < 0)
			refused |= 1ull << j;
		else
			took |= member_online(rf->a, j);	/* (one being rebuilt is no copy yet) */
	}
	/* A member that did not take the record while others did would keep
	 * an older size and layout beside theirs, which wins once they are
	 * lost: it is failed, as on a data write (write_failed()); the file,
	 * in the dirty log now, is noted as missed by it for its re-add. */
	if (refused) {
		char what[64];
		snprintf(what, sizeof(what), "the metadata record of file %016" PRIx64, rf->id);
		ret = array_judge_refusals(rf->a, refused, err, took, what);
	}
	if (ret == 0) {
		rf->size_recorded = size;
		/* (cleared, then the size looked at again: a write that grew
		 * the file meanwhile sets it after its size, or is seen here) */
		__atomic_store_n(&rf->meta_stale, false, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&rf->size, __ATOMIC_SEQ_CST) != size)
			__atomic_store_n(&rf->meta_stale, true, __ATOMIC_SEQ_CST);
	}
	rf->meta_agree = ret == 0 && !refused && !(flags & META_F_DIRTY);
	rf->meta_flags = flags;
	return ret;
}

int stripe_write_meta(struct rfile *rf, uint32_t flags)
{
	return write_meta(rf, flags, __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE), true);
}

int stripe_record_truncate(struct rfile *rf, uint64_t size)
{
	return write_meta(rf, META_F_TRUNC, size, false);
}

int stripe_record_acked(struct rfile *rf)
{
	/* (one at a time: destage threads hold rf->rw shared) */
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	int ret = 0;
	pthread_mutex_lock(&lock);
	uint64_t acked = rfile_acked(rf);
	if (acked > rf->size_recorded)
		ret = write_meta(rf, 0, acked, false);
	pthread_mutex_unlock(&lock);
	return ret;
}


/* ------------------------------------------------------------ member I/O */

/* A read of slot data from member j.  On error the member's error is
 * accounted (it may fail the member) and -EIO returned: the caller then
 * reconstructs from redundancy. */
static int shard_read(struct rfile *rf, uint32_t j, void *buf, size_t len, uint64_t off)
{
	ssize_t n = member_pread(rf->a, j, rf->fd[j], buf, len, off);
	if (n < 0) {
		log_err("read error on member %u '%s' (file %016" PRIx64 ", offset %" PRIu64 "): %s",
			j, rf->a->m[j].path, rf->id, off, strerror(-n));
		array_member_io_error(rf->a, j, n, false);
		return -EIO;
	}
	return 0;
}

/* A write to a damaged shard (rf->damaged: it lost its chunks from
 * stripe damaged_from[j] on, and their rebuild failed) lands only below
 * that stripe: what lies there stays current and is read, and nothing
 * lengthens the shard past what it lost, so the next open still finds it
 * short and rebuilds it from there. */
static int put_damaged(struct rfile *rf, uint32_t j, const struct iovec *iov, int n, uint64_t off, bool *some)
{
	uint64_t len = rf->damaged_from[j] * rf->lay.chunk, at = off;
	struct iovec v[n];
	int m = 0;
	for (int i = 0; i < n && at < len; i++) {
		v[m] = iov[i];
		if (v[m].iov_len > len - at)
			v[m].iov_len = len - at;
		at += iov[i].iov_len;
		m++;
	}
	return m ? member_pwritev(rf->a, j, rf->fd[j], v, m, off, some) : 0;
}

/* Write to member j, and to j's replacement while j is being replaced in
 * place (if the replacement cannot take it, the replacement is abandoned;
 * j itself is fine).  The caller judges j's errors (write_failed()).
 * *some: whether any byte reached j (also when it then failed). */
static int put_member(struct rfile *rf, uint32_t j, const struct iovec *iov, int n, uint64_t off, bool *some)
{
	int r = 0;
	*some = false;
	if (rf->damaged >> j & 1)
		r = put_damaged(rf, j, iov, n, off, some);
	else
		r = member_pwritev(rf->a, j, rf->fd[j], iov, n, off, some);
	if (r == 0 && (int)j == shadow_of(rf->a) && rf->fd[SHADOW] >= 0) {
		int e = member_pwritev(rf->a, SHADOW, rf->fd[SHADOW], iov, n, off, NULL);
		if (e < 0) {
			log_err("write error on the replacement of member %u '%s': %s", j,
				rf->a->m[SHADOW].path, strerror(-e));
			array_abandon_replace(rf->a);
		}
	}
	return r;
}

/* A write to member j failed.  md's way: the member is failed and the
 * caller carries on with the survivors (checking afterwards whether the
 * group still has its data).  A full member is not broken, and its
 * -ENOSPC is the caller's error - unless the stripe took part of the
 * write already (`partial`: other members, or this one before it filled
 * up): the stripe would then keep new bytes beside old ones, and a
 * reconstruction would mix the two (a chunk of an absent member, read
 * from the parity, would be other bytes), so the member is failed as for
 * any write error. */
static int write_failed(struct rfile *rf, uint32_t j, uint64_t off, int r, bool partial)
{
	if (r == -ENOSPC && partial) {
		log_err("member %u '%s' is full in the middle of a stripe the other members took (file %016" PRIx64
			", offset %" PRIu64 "): it is failed, as on a write error; free space on its filesystem, "
			"then put it back with 'raidfs add %s %s' (resyncs only what changed)",
			j, rf->a->m[j].path, rf->id, off, rf->a->mountpoint, rf->a->m[j].path);
		array_member_io_error(rf->a, j, r, true);
		return 0;
	}
	if (r == -ENOSPC) {
		/* said once every 10 s, not for every chunk refused */
		static struct log_every full;
		unsigned long held;
		if (log_every(&full, 10, &held))
			log_err("member %u '%s' is full: writes to it fail with ENOSPC (file %016" PRIx64
				", offset %" PRIu64 ")%s", j, rf->a->m[j].path, rf->id, off,
				held ? "; more since the last message" : "");
		return r;
	}
	log_err("write error on member %u '%s' (file %016" PRIx64 ", offset %" PRIu64 "): %s",
		j, rf->a->m[j].path, rf->id, off, strerror(-r));
	array_member_io_error(rf->a, j, r, true);
	return 0;
}

/* A write to member j; 0 also when it failed the member (see above).
 * *wrote: whether a member of the same stripe took bytes of it already
 * (set here when j does; NULL: no redundancy, a full member is never
 * failed). */
static int shard_write(struct rfile *rf, uint32_t j, const void *buf, size_t len, uint64_t off, bool *wrote)
{
	struct iovec v = { (void *)buf, len };
	bool some;
	int r = put_member(rf, j, &v, 1, off, &some);
	if (r < 0)
		return write_failed(rf, j, off, r, wrote && (*wrote || some));
	if (wrote && some)
		*wrote = true;
	return 0;
}

/* rfile_usable_at() (file.h): may be read; writable: must receive writes
 * (also a member being rebuilt, and a damaged shard: put_damaged()) */
static inline bool writable(const struct rfile *rf, uint32_t j)
{
	return rf->fd[j] >= 0 && member_writable(rf->a, j);
}

/* A change to the file's data (rf->wgen: the scrub's put-back sees it),
 * writing stripes up to s_end - 1 (for stripe_fsync()); the destage
 * threads write one file's lines at once under rf->rw held shared,
 * hence the atomics. */
static void note_written(struct rfile *rf, uint64_t s_end)
{
	__atomic_add_fetch(&rf->wgen, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);	/* (before the member writes that follow) */
	uint64_t cur = __atomic_load_n(&rf->sync_end, __ATOMIC_RELAXED);
	while (cur < s_end &&
	       !__atomic_compare_exchange_n(&rf->sync_end, &cur, s_end, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		;
}

/*
 * Room on the members before the first byte goes to any of them.  A stripe
 * written on some members and refused by a full one (ENOSPC) would be left
 * with its parity behind its data, which a later reconstruction would turn
 * into wrong bytes, so such a member is failed (write_failed()): on members
 * that share one filesystem, a full filesystem would fail them one after
 * another.  So the shard ranges a write will write are allocated on every
 * member first (fallocate, size kept), and a write that does not fit fails
 * with ENOSPC having changed nothing:
 *   - past rf->reserved (its size when it was opened, or the end of what
 *     was reserved since): from the stripe of `off` on, so a write far
 *     past the end leaves the hole a hole;
 *   - below it, at or past rf->dense: a hole of a sparse file (a write
 *     past the end left one, or the file was opened with some: the
 *     members' first holes, lseek(SEEK_HOLE), the first time it matters).
 * Below rf->dense nothing is allocated again: a file written in order
 * pays nothing.  A member filesystem that cannot allocate ahead
 * (EOPNOTSUPP) is written as before.
 *
 * A write that goes on from the dense part past what is reserved (a file
 * being written in order, once 4 MiB long) reserves a step more
 * (reserve_step(): 4 MiB of the file, up to 64 MiB as it grows), as
 * filesystems preallocate ahead of a writer, so that the next writes
 * find their range reserved: one
 * fallocate a member for many writes instead of one each, the members
 * split between two threads.  What the file did not grow into is given
 * back at its last close (stripe_give_back()) or cut by a truncate.  A
 * step the members cannot take is given back at once and the write
 * reserves what it needs alone, as before.
 */

/* rf->dense, asked of the members the first time: the file offset of the
 * first stripe some member's shard has a hole in (the whole reserved size
 * when none has one; 0 when one cannot tell) */
static uint64_t dense_of(struct rfile *rf)
{
	uint64_t d = __atomic_load_n(&rf->dense, __ATOMIC_ACQUIRE);
	if (d != RF_DENSE_UNKNOWN)
		return d;
	const struct layout *l = &rf->lay;
	uint64_t sbytes = layout_stripe_data_bytes(l);
	d = __atomic_load_n(&rf->reserved, __ATOMIC_ACQUIRE);
	for (uint32_t j = 0; j < rf->a->width; j++) {
		struct stat st;
		if (rf->fd[j] < 0 || fstat(rf->fd[j], &st) < 0)
			continue;
		off_t h = lseek(rf->fd[j], 0, SEEK_HOLE);
		if (h < 0)
			h = 0;	/* (cannot tell: taken as a hole) */
		if ((uint64_t)h < (uint64_t)st.st_size && (uint64_t)h / l->chunk * sbytes < d)
			d = (uint64_t)h / l->chunk * sbytes;
	}
	uint64_t unknown = RF_DENSE_UNKNOWN;
	__atomic_compare_exchange_n(&rf->dense, &unknown, d, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return __atomic_load_n(&rf->dense, __ATOMIC_ACQUIRE);
}

/* One allocation on every member (allocate_ahead()), the members split
 * between the two threads of pair_run(). */
struct alloc {
	struct rfile *rf;
	uint64_t from, to_all, end;
	uint64_t past;			/* punch: from the page after the shard's
					 * end for this file size instead of `from` */
	int mode;			/* of fallocate */
	bool full[MEMBER_SLOTS];	/* ENOSPC */
};

static void alloc_share(void *arg, int t)
{
	struct alloc *al = arg;
	struct rfile *rf = al->rf;
	for (uint32_t j = (uint32_t)t; j < rf->a->width; j += 2) {
		uint64_t to = al->to_all ? al->to_all : layout_shard_size(&rf->lay, j, al->end), from = al->from;
		if (al->past)
			from = (layout_shard_size(&rf->lay, j, al->past) + 4095) / 4096 * 4096;
		al->full[j] = false;
		if (to <= from || !writable(rf, j) ||
		    fallocate(rf->fd[j], al->mode, (off_t)from, (off_t)(to - from)) == 0)
			continue;
		/* cannot allocate ahead (EOPNOTSUPP...): the writes will tell */
		al->full[j] = errno == ENOSPC;
	}
}

/* Shard bytes [from, to) allocated on every member j, `to` 0: to
 * layout_shard_size(j, end).  0, or -ENOSPC with *full the first member
 * that had no room (nothing written yet).  past (not 0): punched out
 * instead, on every member from the page after its shard's end for a
 * file of that size (bytes past the shards' ends, which hold nothing;
 * ext4 ignores a hole punched past a file's end: there the blocks stay
 * until stripe_give_back()). */
static int allocate_ahead(struct rfile *rf, uint64_t from, uint64_t to_all, uint64_t end, uint64_t past, uint32_t *full)
{
	struct alloc al = { .rf = rf, .from = from, .to_all = to_all, .end = end, .past = past,
			    .mode = FALLOC_FL_KEEP_SIZE | (past ? FALLOC_FL_PUNCH_HOLE : 0) };
	pair_run(alloc_share, &al);
	for (uint32_t j = 0; j < rf->a->width; j++)
		if (al.full[j]) {
			*full = j;
			return -ENOSPC;
		}
	return 0;
}

static int sums_fd(struct rfile *rf, uint32_t j);

/* The checksum records of stripes [s0, stripe of `end`) allocated in
 * every member's checksum file: a record written after its chunks, into
 * a page its file does not have yet, must not fail for room either (the
 * chunks would then be on the member with the old record).  0, or
 * -ENOSPC with *full the member without room. */
static int reserve_rows(struct rfile *rf, uint64_t s0, uint64_t end, uint32_t *full)
{
	uint64_t sbytes = layout_stripe_data_bytes(&rf->lay), s1 = (end + sbytes - 1) / sbytes;
	size_t R = csum_record_size(&rf->lay);
	for (uint32_t j = 0; rf->sums && j < rf->a->width; j++) {
		int fd = writable(rf, j) ? sums_fd(rf, j) : -1;
		/* A new file's checksum file is made here, by its first
		 * reservation: a checksum file that cannot be made refuses the
		 * write before any chunk is on the member, never leaves chunks
		 * without their records.  The daemon's own shortage (EMFILE)
		 * is the caller's error; anything else the member's. */
		if (fd < -1 && member_error_is_own(fd))
			return fd;
		if (fd < -1 && fd != -ENOSPC && fd != -EDQUOT) {
			*full = j;
			return fd;
		}
		if (fd < -1 || (fd >= 0 && s1 > s0 &&
		    fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)(s0 * R), (off_t)((s1 - s0) * R)) < 0 && errno == ENOSPC)) {
			*full = j;
			return -ENOSPC;
		}
	}
	return 0;
}

/* How far past `end` a write that goes on from the dense part reserves:
 * 4 MiB of the file, or an eighth of it up to 64 MiB, in whole stripes,
 * once the file reaches RESERVE_FROM (a small file reserves what it
 * writes: a step would cost it more than it saves);
 * `end` (no step) unless every member keeps RESERVE_ROOM free after it:
 * closer to full, each write reserves what it needs, as before (the
 * checksum rows, written after the data, need their pages too). */
#define RESERVE_ROOM (64ull << 20)
#define RESERVE_FROM (4ull << 20)
static uint64_t reserve_step(struct rfile *rf, uint64_t end)
{
	const struct layout *l = &rf->lay;
	if (end < RESERVE_FROM)
		return end;
	uint64_t sbytes = layout_stripe_data_bytes(l), step = end / 8;
	if (step < (4ull << 20))
		step = 4ull << 20;
	if (step > (64ull << 20))
		step = 64ull << 20;
	uint64_t upto = (end + step + sbytes - 1) / sbytes * sbytes;
	for (uint32_t j = 0; j < rf->a->width; j++) {
		struct statvfs sv;
		if (writable(rf, j) && (fstatvfs(rf->fd[j], &sv) < 0 ||
					(uint64_t)sv.f_bavail * sv.f_frsize < layout_shard_size(l, j, upto - end) + RESERVE_ROOM))
			return end;
	}
	return upto;
}

static void raise_to(uint64_t *v, uint64_t to)
{
	uint64_t cur = __atomic_load_n(v, __ATOMIC_ACQUIRE);
	while (cur < to && !__atomic_compare_exchange_n(v, &cur, to, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
}

/* The file was cut to `size`: what reserve() allocated past it is gone
 * (and what grows again is a hole). */
static void reserve_cut(struct rfile *rf, uint64_t size)
{
	if (__atomic_load_n(&rf->reserved, __ATOMIC_ACQUIRE) > size)
		__atomic_store_n(&rf->reserved, size, __ATOMIC_RELEASE);
	uint64_t d = __atomic_load_n(&rf->dense, __ATOMIC_ACQUIRE);
	if (d != RF_DENSE_UNKNOWN && d > size)
		__atomic_store_n(&rf->dense, size, __ATOMIC_RELEASE);
}

/* What reserve() does past the dense part, one file at a time (a lock
 * of RESV_LOCKS by the file's id): a step that did not fit is punched
 * out again, which must not meet bytes another thread reserved and wrote
 * meanwhile - the destage threads write one file's lines at once.
 * Bytes are written only below rf->reserved, raised under this lock. */
#define RESV_LOCKS 16
static pthread_mutex_t resv_locks[RESV_LOCKS] = { [0 ... RESV_LOCKS - 1] = PTHREAD_MUTEX_INITIALIZER };

static int reserve_locked(struct rfile *rf, uint64_t off, uint64_t end);

static int reserve(struct rfile *rf, uint64_t off, uint64_t end)
{
	uint64_t have = __atomic_load_n(&rf->reserved, __ATOMIC_ACQUIRE), dense = dense_of(rf);
	if (end <= (dense < have ? dense : have))
		return 0;
	pthread_mutex_t *m = &resv_locks[rf->id % RESV_LOCKS];
	pthread_mutex_lock(m);
	int r = reserve_locked(rf, off, end);
	pthread_mutex_unlock(m);
	return r;
}

static int reserve_locked(struct rfile *rf, uint64_t off, uint64_t end)
{
	const struct layout *l = &rf->lay;
	uint64_t sbytes = layout_stripe_data_bytes(l);
	uint64_t have = __atomic_load_n(&rf->reserved, __ATOMIC_ACQUIRE), dense = dense_of(rf);
	if (dense > have)
		dense = have;	/* (a truncate cut what was reserved) */
	if (end <= dense)
		return 0;
	/* from the write's first stripe, or where the dense part ends; a
	 * write into a hole of one stripe: its columns (whole pages) on
	 * every member, not whole chunks, so that a sparse file stays as
	 * sparse as its writes */
	uint64_t s0 = off / sbytes, sd = dense / sbytes, from = (s0 > sd ? s0 : sd) * l->chunk, to = 0;
	if (end <= have && s0 > sd && s0 == (end - 1) / sbytes) {
		uint64_t a = off % sbytes, b = (end - 1) % sbytes;
		uint64_t lo = a / l->chunk == b / l->chunk ? a % l->chunk / 4096 * 4096 : 0;
		uint64_t hi = a / l->chunk == b / l->chunk ? (b % l->chunk / 4096 + 1) * 4096 : l->chunk;
		to = from + (hi < l->chunk ? hi : l->chunk);
		from += lo;
	}
	uint64_t upto = to == 0 && off <= dense && end > have ? reserve_step(rf, end) : end;
	uint32_t j;
	int r = allocate_ahead(rf, from, to, upto, 0, &j);
	if (r == 0)
		r = reserve_rows(rf, s0, upto, &j);
	if (r < 0 && upto > end) {
		/* no room for the step: given back, the write alone */
		allocate_ahead(rf, 0, 0, upto, end, &j);
		upto = end;
		r = allocate_ahead(rf, from, to, upto, 0, &j);
		if (r == 0)
			r = reserve_rows(rf, s0, upto, &j);
	}
	if (r < 0)
		return member_error_is_own(r) ? r : write_failed(rf, j, from, r, false);
	raise_to(&rf->reserved, upto);
	if (off <= dense)	/* (no hole left between: the dense part grows) */
		raise_to(&rf->dense, upto);
	return 0;
}

void stripe_give_back(struct rfile *rf)
{
	uint64_t size = __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE);
	uint64_t have = __atomic_load_n(&rf->reserved, __ATOMIC_ACQUIRE);
	if (have <= size || rf->a->readonly)
		return;
	/* a truncate to the length the shard has: filesystems drop the
	 * blocks allocated past the end then (ext4 ignores a hole punched
	 * there); the shard's mtime, which getattr reports, kept */
	for (uint32_t j = 0; j < rf->a->width; j++) {
		struct stat st;
		if (!writable(rf, j) || fstat(rf->fd[j], &st) < 0 ||
		    (uint64_t)st.st_blocks * 512 <= ((uint64_t)st.st_size + 4095) / 4096 * 4096)
			continue;
		if (ftruncate(rf->fd[j], st.st_size) == 0) {
			const struct timespec t[2] = { { 0, UTIME_OMIT }, st.st_mtim };
			futimens(rf->fd[j], t);
		}
	}
	reserve_cut(rf, size);
}

/* After writing a group: is the data still held by enough members? */
static int group_alive(const struct rfile *rf, uint64_t s, uint32_t g)
{
	const struct layout *l = &rf->lay;
	uint32_t lost = 0;
	for (uint32_t i = 0; i < l->k + l->m; i++)
		lost += !rfile_usable_at(rf, layout_slot_member(l, s, g, i), s);
	return lost > l->m ? -EIO : 0;
}

/* ------------------------------------------------------ degraded stripes
 *
 * A data slot whose member cannot be read in stripe s holds its bytes only
 * as the parity xor the other slots; a write that changes the parity and
 * another slot, cut between the two, would change them.  With the cache's
 * battery those bytes are kept aside first (guard.h).
 */

/* A write into a degraded stripe that has no guard slot: only a resync
 * covers a cut there, so the file gets its plain mark (the cache's mark
 * alone would be trusted).  rf->rw held. */
static int mark_unguarded(struct rfile *rf);

/* Keep aside the absent data slots `absent` of group g in stripe s over
 * in-chunk columns [lo, lo+len), as blk[j] holds them - also bytes past
 * the file's end: a cut write changes them too, and the put-back makes
 * them zeros again (stripe_regen_at()).  *slot: the guard slot, or -1
 * when nothing needed one. */
static int guard_absent(struct rfile *rf, uint64_t s, uint32_t g, uint32_t lo, uint32_t len,
			uint8_t *const *blk, uint64_t absent, int *slot)
{
	const struct layout *l = &rf->lay;
	struct guard_piece p[GUARD_PIECES];
	int n = 0;
	*slot = -1;
	if (!absent)
		return 0;
	if (!guard_on())	/* (the slots stopped with their cache log: see guard.h) */
		return guard_stopped() ? mark_unguarded(rf) : 0;
	for (uint32_t j = 0; j < l->k && n < GUARD_PIECES; j++) {
		if (!(absent >> j & 1))
			continue;
		p[n].off = layout_unmap(l, s, layout_data_index(l, g, j), lo);
		p[n].len = len;
		p[n].data = blk[j];
		n++;
	}
	if (n == 0)
		return 0;
	/* (how far acknowledged writes reach: every byte below is on the
	 * members or in the cache's log or arena; rf->size, grown before a
	 * write is taken, may be past it) */
	*slot = guard_hold(rf, p, n, rfile_acked(rf));
	if (*slot == GUARD_NONE) {
		*slot = -1;
		return mark_unguarded(rf);
	}
	return *slot < 0 ? *slot : 0;
}

/* The write guarded by `slot` is on the members: durable first when the
 * guard is, so that a power loss finds one or the other. */
static void guard_done(struct rfile *rf, int slot)
{
	if (slot < 0)
		return;
	if (guard_durable())
		stripe_sync_shards(rf);
	guard_release(slot);
}

/* --------------------------------------------------------------- groups */

/* The members whose chunk of stripe s may be read (recon.h's input). */
static uint64_t readable_at(const struct rfile *rf, uint64_t s)
{
	uint64_t r = 0;
	for (uint32_t j = 0; j < rf->lay.width; j++)
		r |= (uint64_t)rfile_usable_at(rf, j, s) << j;
	return r;
}

/*
 * md's way after a read error: the caller has good data, so rewrite what
 * the members could not read (slots `bad` of plan p, over [off, off+len)),
 * and the disk remaps a bad sector.  The bytes are in blk[]: a parity
 * group computed every slot it could not read (recon.h), a mirror has
 * the copy it read.
 */
static void repair_unread(struct rfile *rf, const struct recon_plan *p, uint64_t off, uint32_t len,
			  uint8_t *const *blk, uint64_t bad, uint64_t mism)
{
	const struct layout *l = &rf->lay;
	for (uint32_t j = 0; j < l->k + l->m; j++) {
		if (!(bad >> j & 1))
			continue;
		uint32_t mj = p->member[j];
		if (!rfile_usable_at(rf, mj, p->s) || rf->a->readonly)
			continue;	/* (a read-only mount writes nothing) */
		const uint8_t *src = l->red != RED_MIRROR ? blk[j]
				     : blk[p->op == RECON_COPY ? p->src : (uint32_t)__builtin_ctzll(p->want)];
		/* not past the length the file's size gives that shard: a
		 * chunk beyond the file's end there was read as zeros and
		 * stays unwritten (the shard as short as the size allows) */
		uint64_t end = layout_shard_size(l, mj, __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE));
		if (off >= end)
			continue;
		struct iovec v = { (void *)src, off + len > end ? end - off : len };
		bool some;
		int r = put_member(rf, mj, &v, 1, off, &some);
		if (r == -ENOSPC) {
			/* a full member is not broken: the bytes stay wrong
			 * there (found and rebuilt again on the next read) */
			log_err("member %u '%s': cannot repair offset %" PRIu64 " of file %016" PRIx64 ": it is full",
				mj, rf->a->m[mj].path, off, rf->id);
		} else if (r == 0) {
			array_member_corrected(rf->a, mj);
			array_note_repaired(rf->a, mj, v.iov_len);
			if (mism >> j & 1)
				log_warn("member %u '%s': %u bytes at offset %" PRIu64 " of file %016" PRIx64 " that did not "
					 "match their checksum rewritten from redundancy", mj, rf->a->m[mj].path,
					 (unsigned)v.iov_len, off, rf->id);
			else
				log_warn("member %u '%s': read error at offset %" PRIu64 " of file %016" PRIx64
					 " repaired from redundancy", mj, rf->a->m[mj].path, off, rf->id);
		} else {
			array_member_io_error(rf->a, mj, -EIO, true);
		}
	}
}

/* ------------------------------------------------------------ checksums
 *
 * A file with META_F_SUMS keeps a checksum file per shard (csum.h,
 * docs/checksums.md): a row record per stripe, holding the checksums of
 * every 4 KiB block of every slot of the row and the row's generation.
 * Every read of such a file is verified (recon_run_verified()), every
 * write writes the row's new record to the members it writes (row_put()).
 */

/* The believed records of a file's rows, per open file: every write of a
 * row goes through its file's one rfile, which keeps the record it wrote,
 * so reads and partial writes of a row seen before read none.
 * Direct-mapped on the row's number (s * groups + g), the table grows
 * (powers of two) with the rows used, up to ROWC_FILE_BYTES a file and
 * ROWC_ALL_BYTES all files together, so that a file of up to some GiB has
 * a slot for every row (a 64 KiB chunk over 4 members: a row is 192 KiB
 * of data, its slot 273 bytes).  Rows of more than 256 checksums are not
 * kept. */
#define ROWC_MIN_SLOTS 32u
#define ROWC_FILE_BYTES (2u << 20)
#define ROWC_ALL_BYTES (64ull << 20)
struct rowc {
	pthread_mutex_t lock;
	uint32_t per, nslots;		/* nslots: a power of two */
	/* rows of stripes from here on have no record on any member in
	 * use: past the file's end when the table was made, and written by
	 * nobody since (a truncate cut the records past the end; a record
	 * left behind by a crash, or on a member that was away, is older
	 * than any written now, next_gen()) */
	uint64_t horizon;
	uint64_t *key;			/* row + 1; 0: empty */
	uint64_t *gen;
	bool *full;			/* the whole row's newest (row_load()),
					 * else one member's (row_quick()) */
	uint32_t *crc;			/* nslots x per */
};
static uint64_t rowc_all_bytes;		/* all files' tables together */

static size_t rowc_bytes(uint32_t per, uint32_t nslots)
{
	return (size_t)nslots * (2 * sizeof(uint64_t) + sizeof(bool) + (size_t)per * 4);
}

static void rowc_free_slots(struct rowc *c)
{
	free(c->key);
	free(c->gen);
	free(c->full);
	free(c->crc);
}

/* c's slots (c->per set) for nslots; false when memory or the budget
 * is short */
static bool rowc_alloc_slots(struct rowc *c, uint32_t nslots)
{
	size_t bytes = rowc_bytes(c->per, nslots);
	if (__atomic_add_fetch(&rowc_all_bytes, bytes, __ATOMIC_RELAXED) > ROWC_ALL_BYTES && nslots > ROWC_MIN_SLOTS) {
		__atomic_sub_fetch(&rowc_all_bytes, bytes, __ATOMIC_RELAXED);
		return false;
	}
	c->key = calloc(nslots, sizeof(*c->key));
	c->gen = calloc(nslots, sizeof(*c->gen));
	c->full = calloc(nslots, sizeof(*c->full));
	c->crc = calloc((size_t)nslots * c->per, 4);
	if (!c->key || !c->gen || !c->full || !c->crc) {
		rowc_free_slots(c);
		__atomic_sub_fetch(&rowc_all_bytes, bytes, __ATOMIC_RELAXED);
		return false;
	}
	c->nslots = nslots;
	return true;
}

static void rowc_free(struct rowc *c)
{
	pthread_mutex_destroy(&c->lock);
	rowc_free_slots(c);
	__atomic_sub_fetch(&rowc_all_bytes, rowc_bytes(c->per, c->nslots), __ATOMIC_RELAXED);
	free(c);
}

static struct rowc *rowc_of(struct rfile *rf)
{
	struct rowc *c = __atomic_load_n(&rf->rowc, __ATOMIC_ACQUIRE);
	uint32_t per = csum_per_row(&rf->lay);
	if (c || per > 256)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->per = per;
	if (!rowc_alloc_slots(c, ROWC_MIN_SLOTS)) {
		free(c);
		return NULL;
	}
	uint64_t sbytes = layout_stripe_data_bytes(&rf->lay);
	c->horizon = (__atomic_load_n(&rf->size, __ATOMIC_ACQUIRE) + sbytes - 1) / sbytes;
	pthread_mutex_init(&c->lock, NULL);
	struct rowc *none = NULL;
	if (!__atomic_compare_exchange_n(&rf->rowc, &none, c, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		rowc_free(c);
		return none;
	}
	return c;
}

/* Room for row `row` in a slot of its own, when the limits allow: the
 * table doubled until it is, its entries moved over.  c->lock held. */
static void rowc_grow_locked(struct rowc *c, uint64_t row)
{
	uint32_t want = c->nslots;
	while (want <= row && rowc_bytes(c->per, want * 2) <= ROWC_FILE_BYTES)
		want *= 2;
	if (want == c->nslots)
		return;
	struct rowc old = *c;
	if (!rowc_alloc_slots(c, want))
		return;
	for (uint32_t x = 0; x < old.nslots; x++) {
		if (!old.key[x])
			continue;
		uint32_t y = (uint32_t)((old.key[x] - 1) & (want - 1));
		c->key[y] = old.key[x];
		c->gen[y] = old.gen[x];
		c->full[y] = old.full[x];
		memcpy(c->crc + (size_t)y * c->per, old.crc + (size_t)x * c->per, (size_t)c->per * 4);
	}
	rowc_free_slots(&old);
	__atomic_sub_fetch(&rowc_all_bytes, rowc_bytes(c->per, old.nslots), __ATOMIC_RELAXED);
}

/* A row's record kept: true when there is one (*full: it is the whole
 * row's newest; NULL: only such a one is wanted). */
static bool rowc_get(struct rfile *rf, uint64_t s, uint32_t g, uint64_t *gen, uint32_t *crc, bool *full)
{
	struct rowc *c = rowc_of(rf);
	if (!c)
		return false;
	uint64_t key = s * rf->lay.groups + g + 1;
	pthread_mutex_lock(&c->lock);
	uint32_t x = (uint32_t)((key - 1) & (c->nslots - 1));
	bool hit = c->key[x] == key && (full || c->full[x]);
	if (hit && full)
		*full = c->full[x];
	if (hit) {
		*gen = c->gen[x];
		memcpy(crc, c->crc + (size_t)x * c->per, (size_t)c->per * 4);
	}
	pthread_mutex_unlock(&c->lock);
	return hit;
}

static void rowc_put(struct rfile *rf, uint64_t s, uint32_t g, uint64_t gen, const uint32_t *crc, bool full)
{
	struct rowc *c = rowc_of(rf);
	if (!c)
		return;
	uint64_t key = s * rf->lay.groups + g + 1;
	pthread_mutex_lock(&c->lock);
	if (gen && s >= c->horizon)
		c->horizon = s + 1;
	if (key > c->nslots)
		rowc_grow_locked(c, key - 1);
	uint32_t x = (uint32_t)((key - 1) & (c->nslots - 1));
	if (c->key[x] != key || (full && (!c->full[x] || c->gen[x] <= gen))) {
		c->key[x] = key;
		c->gen[x] = gen;
		c->full[x] = full;
		memcpy(c->crc + (size_t)x * c->per, crc, (size_t)c->per * 4);
	}
	pthread_mutex_unlock(&c->lock);
}

/* Have the rows of stripes [s0, ...) no record on any member (see
 * horizon above)?  false when that is not known. */
static bool rows_never_written(struct rfile *rf, uint64_t s0)
{
	struct rowc *c = rowc_of(rf);
	if (!c)
		return false;
	pthread_mutex_lock(&c->lock);
	bool none = s0 >= c->horizon;
	pthread_mutex_unlock(&c->lock);
	return none;
}

/* rows from stripe `from` on are gone (a truncate): forgotten */
static void rowc_drop_from(struct rfile *rf, uint64_t from)
{
	struct rowc *c = __atomic_load_n(&rf->rowc, __ATOMIC_ACQUIRE);
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	for (uint32_t x = 0; x < c->nslots; x++)
		if (c->key[x] && (c->key[x] - 1) / rf->lay.groups >= from)
			c->key[x] = 0;
	pthread_mutex_unlock(&c->lock);
}

void stripe_rows_forget(struct rfile *rf)
{
	struct rowc *c = rf->rowc;
	rf->rowc = NULL;
	if (c)
		rowc_free(c);
}

/* A row's checksums on the reader's stack when they are few (the read
 * path runs this on every chunk), else on the heap; crc_done() lets go. */
#define CRC_ON_STACK 256
static uint32_t *crc_buf(const struct layout *l, uint32_t *stack)
{
	uint32_t n = csum_per_row(l);
	return n <= CRC_ON_STACK ? stack : malloc((size_t)n * 4);
}

static void crc_done(uint32_t *crc, const uint32_t *stack)
{
	if (crc != stack)
		free(crc);
}

/*
 * The believed records of stripes [s0, s0 + ns): of each row, the valid
 * record with the highest generation among its members usable at that
 * stripe, from one read of each member's records of the range
 * (csum_read_rows()).  of < width: only the rows of the group member `of`
 * is in, gens[x] and crcs + x * per; of == ROWS_ALL: every row, gens[x *
 * groups + g] and crcs + (x * groups + g) * per.  A generation 0: no
 * member has a record (the row was never written: every block is zeros),
 * and crcs (if not NULL) get the checksums of zero blocks.  A damaged
 * record is said in the log and the other members' are used.  The
 * records this rfile keeps (rowc) are the callers' to consult.  0, or
 * -ENOMEM (then every row as if none had a record).
 */
#define ROWS_ALL UINT32_MAX
static int rows_load(struct rfile *rf, uint64_t s0, uint32_t ns, uint32_t of, uint64_t *gens, uint32_t *crcs)
{
	const struct layout *l = &rf->lay;
	size_t R = csum_record_size(l);
	uint32_t per = csum_per_row(l), nr = of == ROWS_ALL ? ns * l->groups : ns;
	uint8_t recs[1024], *buf = (size_t)ns * R <= sizeof(recs) ? recs : malloc((size_t)ns * R);
	uint32_t stack[CRC_ON_STACK], *tmp = crc_buf(l, stack);
	int ret = buf && tmp ? 0 : -ENOMEM;
	bool none = rows_never_written(rf, s0);	/* (a file growing: nothing to read) */
	memset(gens, 0, (size_t)nr * sizeof(*gens));
	for (uint32_t j = 0; ret == 0 && !none && j < rf->a->width; j++) {
		uint32_t g, og, slot;
		bool mine = of == ROWS_ALL || l->groups == 1;	/* (j in a row of `of`'s in the range) */
		for (uint32_t x = 0; !mine && x < ns; x++) {
			layout_member_slot(l, s0 + x, j, &g, &slot);
			layout_member_slot(l, s0 + x, of, &og, &slot);
			mine = g == og;
		}
		if (!mine || rf->sfd[j] < 0 || !rfile_usable_at(rf, j, s0) ||
		    csum_read_rows(rf->sfd[j], l, s0, ns, buf) < 0)
			continue;
		for (uint32_t x = 0; x < ns; x++) {
			uint64_t s = s0 + x, gen;
			layout_member_slot(l, s, j, &g, &slot);
			if (of != ROWS_ALL)
				layout_member_slot(l, s, of, &og, &slot);
			if ((of != ROWS_ALL && og != g) || !rfile_usable_at(rf, j, s))
				continue;
			size_t r = of == ROWS_ALL ? (size_t)x * l->groups + g : x;
			int e = csum_decode(buf + (size_t)x * R, R, per, &gen, tmp);
			if (e == -EBADMSG)
				log_err("member %u '%s': the checksum record of stripe %" PRIu64 " of file %016" PRIx64
					" is damaged; the other members' records are used", j, rf->a->m[j].path, s, rf->id);
			if (e == 0 && gen > gens[r]) {
				gens[r] = gen;
				if (crcs)
					memcpy(crcs + r * per, tmp, (size_t)per * 4);
			}
		}
	}
	if (crcs) {
		uint32_t z = csum_zero_block();
		for (size_t r = 0; r < nr; r++)
			for (uint32_t i = 0; gens[r] == 0 && i < per; i++)
				crcs[r * per + i] = z;
	}
	if (buf != recs)
		free(buf);
	crc_done(tmp, stack);
	return ret;
}

/* The believed record of group g in stripe s (rows_load()): crc[] gets
 * csum_per_row() values.  Returns the generation; 0 when no member has
 * one (every block is zeros). */
static uint64_t row_load(struct rfile *rf, uint64_t s, uint32_t g, uint32_t *crc)
{
	uint64_t gen;
	if (rowc_get(rf, s, g, &gen, crc, NULL))
		return gen;
	if (rows_load(rf, s, 1, layout_slot_member(&rf->lay, s, g, 0), &gen, crc) == 0)
		rowc_put(rf, s, g, gen, crc, true);
	return gen;
}

/* The checksum file of shard j, opened when first needed (a shard the
 * rebuild or a replacement in place made after the file was opened).
 * -1 when there is none; a negative errno when it cannot be made (EPERM,
 * which would read as -1, as EACCES). */
static int sums_fd(struct rfile *rf, uint32_t j)
{
	int fd = __atomic_load_n(&rf->sfd[j], __ATOMIC_ACQUIRE);
	if (fd >= 0 || rf->fd[j] < 0 || rf->a->readonly)
		return fd;
	fd = csum_open(rf->a->m[j].dirfd, rf->id, O_RDWR | O_CREAT);
	if (fd == -EPERM)
		return -EACCES;	/* (-1 is "no checksum file here" to the callers) */
	if (fd < 0)
		return fd;
	int none = -1;
	if (!__atomic_compare_exchange_n(&rf->sfd[j], &none, fd, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		close(fd);	/* (another thread's is in place) */
		return none;
	}
	return fd;
}

static void put_row_on(struct rfile *rf, uint32_t j, uint64_t s, uint64_t gen, const uint32_t *crc)
{
	int fd = sums_fd(rf, j);
	int r = fd == -1 ? 0 : fd < 0 ? fd : csum_write_row(fd, &rf->lay, s, gen, crc);
	if (r < 0)
		log_err("member %u '%s': cannot write the checksum record of stripe %" PRIu64 " of file %016" PRIx64
			": %s", j, rf->a->m[j].path, s, rf->id, strerror(-r));
}

/* The generation of a row's new record: past the one believed, and at
 * least the time now (ns since the epoch).  A record left behind on a
 * member that was away, or on a replacement, from before a truncate cut
 * the row and the file grew over it again, is older than any written
 * since: it never outvotes them (unless the clock went back meanwhile). */
static uint64_t next_gen(uint64_t best)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	uint64_t now = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
	return best + 1 > now ? best + 1 : now;
}

/*
 * A read's first guess at the row's record, from one member: the one every
 * write of the row writes besides the chunk read - P (or Q) with parity,
 * another copy of a mirror - so that a write the member read lost (its
 * chunk and its record old) is still seen.  The record is newer than the
 * chunk's own or as new; a chunk it does not vouch for sends the reader to
 * the whole row (row_load()).  0: none to go by (raid0, a hole, P and Q
 * absent): the whole row.
 */
static uint64_t row_quick(struct rfile *rf, const struct recon_plan *p, uint32_t *crc)
{
	const struct layout *l = &rf->lay;
	uint32_t n = l->k + l->m, reading = p->read ? (uint32_t)__builtin_ctzll(p->read) : 0, cand[2];
	if (l->red == RED_PARITY) {
		cand[0] = l->k;
		cand[1] = l->m > 1 ? l->k + 1 : l->k;
	} else if (l->red == RED_MIRROR && n > 1) {
		cand[0] = (reading + 1) % n;
		cand[1] = (reading + n - 1) % n;
	} else {
		return 0;
	}
	for (int c = 0; c < 2; c++) {
		uint32_t mj = layout_slot_member(l, p->s, p->g, cand[c]);
		uint64_t gen;
		if (cand[c] == reading || rf->sfd[mj] < 0 || !rfile_usable_at(rf, mj, p->s))
			continue;
		if (csum_read_row(rf->sfd[mj], l, p->s, &gen, crc) == 0 && gen)
			return gen;
	}
	return 0;
}

/* The record `gen`/crc of stripe s to member mj (and to its replacement
 * while it is replaced in place).  A member that cannot take it keeps an
 * older record, which the others' newer ones outvote; said, not fatal. */
static void row_put(struct rfile *rf, uint32_t mj, uint64_t s, uint64_t gen, const uint32_t *crc)
{
	uint32_t g, slot;
	layout_member_slot(&rf->lay, s, mj, &g, &slot);
	rowc_put(rf, s, g, gen, crc, true);
	if (!member_writable(rf->a, mj))
		return;
	put_row_on(rf, mj, s, gen, crc);
	if ((int)mj == shadow_of(rf->a) && rf->fd[SHADOW] >= 0)
		put_row_on(rf, SHADOW, s, gen, crc);
}

/* The record of a row whose every slot is in blk[] (whole chunks, bytes
 * past the shards' ends zero), to every member of the row. */
static int row_put_all(struct rfile *rf, uint64_t s, uint32_t g, uint8_t *const *blk)
{
	const struct layout *l = &rf->lay;
	uint32_t B = l->chunk / CSUM_BLOCK;
	uint32_t *crc = malloc((size_t)csum_per_row(l) * 4);
	if (!crc)
		return -ENOMEM;
	uint64_t gen = next_gen(row_load(rf, s, g, crc));
	for (uint32_t i = 0; i < l->k + l->m; i++)
		csum_blocks(blk[i], l->chunk, B, crc + (size_t)i * B);
	for (uint32_t i = 0; i < l->k + l->m; i++)
		row_put(rf, layout_slot_member(l, s, g, i), s, gen, crc);
	free(crc);
	return 0;
}

/*
 * recon_run() of a file with checksums: over whole blocks (the window
 * [lo, lo+len) widened, in buffers of its own when it is not aligned),
 * each slot read is verified against the row's record; one that does not
 * match is excluded like a slot that could not be read, and rewritten
 * once the right bytes are known (with the row's record, which its
 * member may lack: a lost write loses both).  A slot the plan computes is
 * verified too: when it does not match, nothing tells which bytes are
 * right, and the reader gets EIO rather than them.
 */
static int recon_run_verified(struct rfile *rf, struct recon_plan *p, uint32_t lo, uint32_t len,
			      uint8_t **blk, uint64_t bad)
{
	const struct layout *l = &rf->lay;
	uint32_t n = l->k + l->m;
	uint32_t blo = lo / CSUM_BLOCK * CSUM_BLOCK;
	uint32_t bhi = (lo + len + CSUM_BLOCK - 1) / CSUM_BLOCK * CSUM_BLOCK;
	uint32_t alen = bhi - blo, b0 = blo / CSUM_BLOCK, nb = alen / CSUM_BLOCK;
	bool direct = blo == lo && alen == len;
	uint8_t *ab[LAYOUT_MAX_WIDTH], *abuf = NULL;
	uint32_t stack[CRC_ON_STACK], *crc = crc_buf(l, stack);
	if (!direct)
		abuf = malloc((size_t)n * alen);
	if (!crc || (!direct && !abuf)) {
		crc_done(crc, stack);
		free(abuf);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		ab[i] = direct ? blk[i] : abuf + (size_t)i * alen;
	/* one record first (row_quick()); at the first chunk it does not
	 * vouch for, the believed one of the whole row, against which the
	 * chunks kept so far are verified again */
	uint64_t gen = 0;
	bool full = false;
	if (!rowc_get(rf, p->s, p->g, &gen, crc, &full)) {	/* (kept: the row's, or one member's) */
		gen = row_quick(rf, p, crc);
		if (gen)
			rowc_put(rf, p->s, p->g, gen, crc, false);
	}
	if (!full && gen == 0) {
		full = true;
		gen = row_load(rf, p->s, p->g, crc);
	}
	uint64_t off = p->s * l->chunk + blo, have = 0, mism = 0, todo;
	int ret = -EIO;
	while (p->op != RECON_IMPOSSIBLE && (todo = p->read & ~have)) {
		uint32_t i = (uint32_t)__builtin_ctzll(todo);
		bool ok = shard_read(rf, p->member[i], ab[i], alen, off) == 0;
		if (ok && !full && !csum_slot_matches(l, crc, i, b0, nb, ab[i])) {
			full = true;
			gen = row_load(rf, p->s, p->g, crc);
			for (uint64_t h = have; h; h &= h - 1)
				if (!csum_slot_matches(l, crc, (uint32_t)__builtin_ctzll(h), b0, nb, ab[__builtin_ctzll(h)]))
					have &= ~(h & -h);	/* (read again, judged below) */
		}
		if (!ok) {
			bad |= 1ull << i;
			recon_exclude(p, i);
		} else if (!csum_slot_matches(l, crc, i, b0, nb, ab[i])) {
			uint32_t mj = p->member[i];
			if (rf->recovering)	/* (a write the crash cut short: not the member's fault) */
				log_info("member %u '%s': file %016" PRIx64 ", offset %" PRIu64 ": bytes of a write the crash "
					 "cut short, rolled back to what the checksums say", mj, rf->a->m[mj].path, rf->id, off);
			else
				log_err("checksum error on member %u '%s' (file %016" PRIx64 ", offset %" PRIu64 ", %u bytes)",
					mj, rf->a->m[mj].path, rf->id, off, alen);
			mism |= 1ull << i;
			bad |= 1ull << i;
			recon_exclude(p, i);
			if (!rf->recovering)
				array_note_cksum_error(rf->a, mj, 0);
		} else {
			have |= 1ull << i;
		}
	}
	if (p->op != RECON_IMPOSSIBLE && recon_compute(p, alen, ab) == 0) {
		ret = 0;
		/* (a mirror's copy was read, so verified) */
		uint64_t made = l->red == RED_MIRROR ? 0 : p->calc & (p->want | bad);
		for (uint32_t i = 0; i < n && ret == 0; i++)
			if ((made >> i & 1) && !csum_slot_matches(l, crc, i, b0, nb, ab[i])) {
				log_err("file %016" PRIx64 ", stripe %" PRIu64 ": no combination of the members' chunks "
					"matches the checksums; the read fails rather than return bytes that may be wrong",
					rf->id, p->s);
				ret = -EIO;
			}
	}
	if (ret == 0) {
		repair_unread(rf, p, off, alen, ab, bad, mism);
		for (uint32_t i = 0; i < n; i++)
			if ((mism >> i & 1) && gen)
				row_put(rf, p->member[i], p->s, gen, crc);
		if (!direct)
			for (uint32_t i = 0; i < n; i++)
				memcpy(blk[i], ab[i] + (lo - blo), len);
	}
	crc_done(crc, stack);
	free(abuf);
	return ret;
}

/*
 * Carry out plan p (recon.h) over in-chunk columns [lo, lo+len) of its
 * stripe: read its slots into blk[] (those in `have` hold their bytes
 * already), planning again without each slot whose read fails, compute
 * the rest, then repair the slots that could not be read (with `bad`,
 * those that failed before the call).  blk[0..k+m-1] must all point to
 * len-byte buffers; slots the plan does not read may be clobbered.
 * 0 or -EIO (more lost than the group tolerates).
 */
static int recon_run_plain(struct rfile *rf, struct recon_plan *p, uint32_t lo, uint32_t len, uint8_t **blk,
			   uint64_t have, uint64_t bad)
{
	uint64_t off = p->s * rf->lay.chunk + lo, todo;
	while (p->op != RECON_IMPOSSIBLE && (todo = p->read & ~have)) {
		uint32_t i = (uint32_t)__builtin_ctzll(todo);
		if (shard_read(rf, p->member[i], blk[i], len, off) == 0) {
			have |= 1ull << i;
		} else {
			bad |= 1ull << i;
			recon_exclude(p, i);
		}
	}
	if (p->op == RECON_IMPOSSIBLE || recon_compute(p, len, blk) < 0)
		return -EIO;
	repair_unread(rf, p, off, len, blk, bad, 0);
	return 0;
}

static int recon_run(struct rfile *rf, struct recon_plan *p, uint32_t lo, uint32_t len, uint8_t **blk,
		     uint64_t have, uint64_t bad)
{
	if (!rf->sums)
		return recon_run_plain(rf, p, lo, len, blk, have, bad);
	struct recon_plan orig = *p;
	int ret = recon_run_verified(rf, p, lo, len, blk, bad);
	if (ret != -EIO || !rf->recovering)
		return ret;
	/* Recovering from a crash (the dirty-log resync, the cache's
	 * replay): a row a write was cut in the middle of, with no
	 * redundancy left to tell which side is right, is taken as the
	 * members hold it (and gets a new record when it is written) */
	log_err("file %016" PRIx64 ", stripe %" PRIu64 ": after the crash, no combination of its chunks matches "
		"the checksums and nothing is left to tell which side is right: taken as found", rf->id, p->s);
	*p = orig;
	return recon_run_plain(rf, p, lo, len, blk, have, bad);
}

/*
 * Make blk[j] hold slot j of group g in stripe s over [lo, lo+len) for
 * every slot in `want` (bit j), reading present members and
 * reconstructing absent ones from the group's redundancy (recon_run()).
 * 0 or -EIO.
 */
static int load_group(struct rfile *rf, uint64_t s, uint32_t g, uint32_t lo,
		      uint32_t len, uint8_t **blk, uint64_t want)
{
	struct recon_plan p;
	recon_plan(&p, &rf->lay, s, g, readable_at(rf, s), want, 0);
	return recon_run(rf, &p, lo, len, blk, 0, 0);
}

/* New bytes for one group of one stripe: src[j] (NULL if slot j is not
 * written) holds the bytes for in-chunk range [a[j], b[j]). */
struct group_write {
	const uint8_t *src[LAYOUT_MAX_WIDTH];
	uint32_t a[LAYOUT_MAX_WIDTH], b[LAYOUT_MAX_WIDTH];
	uint32_t lo, hi;
	bool any;
};

/* The whole-block window of a checksummed write to one row: [lo, hi)
 * widened to blocks, a buffer per slot, the row's checksums and the
 * members written (for their records). */
struct sum_window {
	uint32_t lo, hi, len;
	uint8_t *buf, *blk[LAYOUT_MAX_WIDTH];
	uint32_t *crc;
	uint64_t gen, wrote_to;
};

/*
 * The checksums of the slots in `changed` over blocks [b0, b0 + len /
 * CSUM_BLOCK) of a row, from their bytes blk[i] (len each), into the row's
 * crc[].  P's are made from the data slots' (csum_xor()), which crc[]
 * must then hold for every data slot over those blocks (those not changed:
 * the record their loaded bytes verified against); a mirror's copies take
 * the first one's.  The bytes must be what the parity call made of them.
 */
static void sum_slots(const struct layout *l, uint8_t *const *blk, uint32_t len, uint32_t *crc, uint32_t b0,
		      uint64_t changed)
{
	uint32_t B = l->chunk / CSUM_BLOCK, nb = len / CSUM_BLOCK, first = UINT32_MAX;
	for (uint32_t i = 0; i < l->k + l->m; i++) {
		if (!(changed >> i & 1))
			continue;
		if (l->red == RED_PARITY && i == l->k)
			csum_xor(crc, B, b0, nb, l->k);	/* (the data slots come first) */
		else if (l->red == RED_MIRROR && first != UINT32_MAX)
			memcpy(crc + (size_t)i * B + b0, crc + (size_t)first * B + b0, (size_t)nb * 4);
		else
			csum_blocks(blk[i], len, nb, crc + (size_t)i * B + b0);
		if (first == UINT32_MAX)
			first = i;
	}
}

static int sw_open(struct sum_window *sw, const struct layout *l, uint32_t lo, uint32_t hi)
{
	uint32_t n = l->k + l->m;
	sw->lo = lo / CSUM_BLOCK * CSUM_BLOCK;
	sw->hi = (hi + CSUM_BLOCK - 1) / CSUM_BLOCK * CSUM_BLOCK;
	sw->len = sw->hi - sw->lo;
	/* (the thread's, kept: a window of a few hundred KiB allocated for
	 * every partial write would be mapped and faulted in each time; a
	 * thread never has two open) */
	sw->buf = scratch_of(SCR_SUMS, (size_t)n * sw->len + (size_t)csum_per_row(l) * 4);
	if (!sw->buf)
		return -ENOMEM;
	sw->crc = (uint32_t *)(sw->buf + (size_t)n * sw->len);	/* (4-aligned: len is whole blocks) */
	sw->gen = sw->wrote_to = 0;
	for (uint32_t i = 0; i < n; i++)
		sw->blk[i] = sw->buf + (size_t)i * sw->len;
	return 0;
}

/* The row's record as it is, then the new checksums of the slots in
 * `changed` over the window. */
static void sw_sum(struct rfile *rf, struct sum_window *sw, uint64_t s, uint32_t g, uint64_t changed)
{
	const struct layout *l = &rf->lay;
	sw->gen = next_gen(row_load(rf, s, g, sw->crc));
	sum_slots(l, sw->blk, sw->len, sw->crc, sw->lo / CSUM_BLOCK, changed);
}

/* Bytes [a, b) of the chunk of slot i, from its window buffer, to member
 * mj (counted for the record when it is in use there). */
static int sw_write(struct rfile *rf, struct sum_window *sw, uint64_t s, uint32_t i, uint32_t mj,
		    uint32_t a, uint32_t b, bool *wrote)
{
	int ret = shard_write(rf, mj, sw->blk[i] + (a - sw->lo), b - a, s * rf->lay.chunk + a, wrote);
	if (ret == 0)
		sw->wrote_to |= 1ull << mj;	/* (a member being rebuilt too) */
	return ret;
}

/* The new record to every member written. */
static void sw_close(struct rfile *rf, struct sum_window *sw, uint64_t s, bool put)
{
	for (uint32_t mj = 0; mj < rf->a->width && put; mj++)
		if (sw->wrote_to >> mj & 1)
			row_put(rf, mj, s, sw->gen, sw->crc);
}

/*
 * write_group() of a file with checksums, any level: the window [lo, hi)
 * widened to whole blocks, whose old bytes are loaded (verified) where
 * the write does not cover them, so that the new checksums are of whole
 * blocks; the members get the same bytes as without checksums (the data
 * ranges, the redundancy over the data's extent), then the row's new
 * record (generation + 1) goes to every member written.
 */
static int write_group_summed(struct rfile *rf, uint64_t s, uint32_t g, const struct group_write *w)
{
	const struct layout *l = &rf->lay;
	uint32_t n = l->k + l->m;
	uint32_t nd = l->red == RED_MIRROR ? 1 : l->k;	/* data slots */
	uint64_t want = 0, absent = 0, changed = 0;
	struct sum_window sw;
	int ret = sw_open(&sw, l, w->lo, w->hi), gs = -1;
	if (ret < 0)
		return ret;
	for (uint32_t j = 0; j < nd; j++) {
		if (w->src[j] && w->a[j] == sw.lo && w->b[j] == sw.hi)
			continue;
		want |= 1ull << j;
		if (!rfile_usable_at(rf, layout_slot_member(l, s, g, j), s))
			absent |= 1ull << j;
	}
	if (want) {
		/* (the whole row's record first: the load verifies against it,
		 * the new one is made from it - one reading of it for both) */
		row_load(rf, s, g, sw.crc);
		ret = load_group(rf, s, g, sw.lo, sw.len, sw.blk, want);
	}
	for (uint32_t j = 0; j < nd && ret == 0; j++)
		if (w->src[j])
			memcpy(sw.blk[j] + (w->a[j] - sw.lo), w->src[j], w->b[j] - w->a[j]);
	if (ret == 0 && l->red == RED_PARITY)
		ret = parity_encode(l->k, l->m, sw.len, sw.blk);
	if (ret == 0 && l->red == RED_PARITY)
		ret = guard_absent(rf, s, g, sw.lo, sw.len, sw.blk, absent, &gs);
	for (uint32_t c = 1; c < n && l->red == RED_MIRROR; c++)
		memcpy(sw.blk[c], sw.blk[0], sw.len);
	for (uint32_t i = 0; i < n; i++)
		if (i >= nd || w->src[i] || l->red == RED_MIRROR)
			changed |= 1ull << i;
	if (ret == 0)
		sw_sum(rf, &sw, s, g, changed);
	bool wrote = false;	/* (shard_write()) */
	for (uint32_t i = 0; i < n && ret == 0; i++) {
		uint32_t mj = layout_slot_member(l, s, g, i), d = i < nd ? i : 0;
		bool data = i < nd || l->red == RED_MIRROR;
		if (!(changed >> i & 1) || !writable(rf, mj))
			continue;
		if (l->red == RED_NONE && !rfile_usable_at(rf, mj, s)) {
			ret = -EIO;	/* raid0: nothing else holds it */
			break;
		}
		ret = sw_write(rf, &sw, s, i, mj, data ? w->a[d] : sw.lo, data ? w->b[d] : w->hi,
			       l->red == RED_NONE ? NULL : &wrote);
	}
	sw_close(rf, &sw, s, ret == 0);
	guard_done(rf, gs);
	if (ret == 0 && l->red == RED_NONE)
		return 0;
	return ret ? ret : group_alive(rf, s, g);
}


static int write_group(struct rfile *rf, uint64_t s, uint32_t g, const struct group_write *w)
{
	if (rf->sums)
		return write_group_summed(rf, s, g, w);
	const struct layout *l = &rf->lay;
	uint64_t base = s * l->chunk;
	int ret = 0;

	if (l->red == RED_NONE) {
		for (uint32_t j = 0; j < l->k && !ret; j++) {
			if (!w->src[j])
				continue;
			uint32_t mj = layout_slot_member(l, s, g, j);
			ret = rfile_usable_at(rf, mj, s) ? shard_write(rf, mj, w->src[j], w->b[j] - w->a[j], base + w->a[j], NULL)
					     : -EIO;
			if (ret == 0 && !rfile_usable_at(rf, mj, s))
				ret = -EIO;	/* raid0: nothing else holds it */
		}
		return ret;
	}
	bool wrote = false;	/* (shard_write()) */
	if (l->red == RED_MIRROR) {
		for (uint32_t c = 0; c < l->k + l->m && !ret; c++) {
			uint32_t mj = layout_slot_member(l, s, g, c);
			if (writable(rf, mj))
				ret = shard_write(rf, mj, w->src[0], w->b[0] - w->a[0], base + w->a[0], &wrote);
		}
		return ret ? ret : group_alive(rf, s, g);
	}

	/* Parity: gather all k data slots over [lo, hi). */
	uint32_t len = w->hi - w->lo, n = l->k + l->m;
	uint8_t *blk[LAYOUT_MAX_WIDTH];
	uint8_t *scr = scratch((size_t)n * len);
	if (!scr)
		return -ENOMEM;
	uint64_t want = 0, absent = 0;
	/* The old bytes are loaded into scratch only, never into the
	 * caller's buffer: a read that fails during the load makes
	 * load_group() read the old contents of other slots too (the
	 * reconstruction needs them), and read into the new data, it put the
	 * old data on the members in place of an acknowledged write. */
	for (uint32_t j = 0; j < n; j++)
		blk[j] = scr + (size_t)j * len;
	for (uint32_t j = 0; j < l->k; j++) {
		if (w->src[j] && w->a[j] == w->lo && w->b[j] == w->hi)
			continue;	/* all new: its old bytes are not needed */
		want |= 1ull << j;
		if (!rfile_usable_at(rf, layout_slot_member(l, s, g, j), s))
			absent |= 1ull << j;	/* old bytes only in the parity */
	}
	if (want) {
		ret = load_group(rf, s, g, w->lo, len, blk, want);
		if (ret < 0)
			return ret;
	}
	/* then the new bytes over the old */
	for (uint32_t j = 0; j < l->k; j++) {
		if (!w->src[j])
			continue;
		if (w->a[j] == w->lo && w->b[j] == w->hi)
			blk[j] = (uint8_t *)w->src[j];	/* read only below */
		else
			memcpy(blk[j] + (w->a[j] - w->lo), w->src[j], w->b[j] - w->a[j]);
	}
	ret = parity_encode(l->k, l->m, len, blk);
	int gs = -1;
	if (ret == 0)
		ret = guard_absent(rf, s, g, w->lo, len, blk, absent, &gs);
	if (ret < 0)
		return ret;
	for (uint32_t j = 0; j < l->k && !ret; j++) {
		uint32_t mj = layout_slot_member(l, s, g, j);
		if (w->src[j] && writable(rf, mj))
			ret = shard_write(rf, mj, w->src[j], w->b[j] - w->a[j], base + w->a[j], &wrote);
	}
	for (uint32_t p = l->k; p < n && !ret; p++) {
		uint32_t mj = layout_slot_member(l, s, g, p);
		if (writable(rf, mj))
			ret = shard_write(rf, mj, blk[p], len, base + w->lo, &wrote);
	}
	guard_done(rf, gs);
	return ret ? ret : group_alive(rf, s, g);
}

/* ------------------------------------------------- full-stripe batches
 *
 * A write that covers whole stripes of a parity level needs no reads:
 * the parity of every stripe is computed straight from the request, then
 * each member gets one pwritev() of its chunks (data from the request,
 * parity from scratch), consecutive in its shard.  The stripes of a batch
 * are split between the calling thread and one helper thread, each doing
 * the parity and the member writes of its half, so both cores work on
 * one request (the kernel hands us the writes to one file one at a time,
 * so a request's own latency is what sequential throughput is made of).
 */
#define BATCH_STRIPES 16

/* One thread's share of a batch: stripes [s0, s0+ns), whole, sd[i]
 * holding the data of stripe s0+i.  Members are visited from `first` on,
 * so two shares running at once rarely write the same shard together (the
 * member filesystem serializes the writers of one file). */
struct full_share {
	struct rfile *rf;
	uint64_t s0;
	uint32_t ns, first;
	const uint8_t *const *sd;
	int ret;				/* 0 or a parity error */
	int mret[LAYOUT_MAX_WIDTH];		/* each member's write: 0 or -errno */
	bool msome[LAYOUT_MAX_WIDTH];		/* and whether any byte went out */
};

/* The highest generation of each row of stripes [s0, s0 + ns) (gens[(s -
 * s0) * groups + g]) among the members in use: one read of each member's
 * records of the batch. */
static void rows_newest(struct rfile *rf, uint64_t s0, uint32_t ns, uint64_t *gens)
{
	const struct layout *l = &rf->lay;
	uint32_t stack[CRC_ON_STACK], *tmp = crc_buf(l, stack);
	rows_load(rf, s0, ns, ROWS_ALL, gens, NULL);
	for (uint32_t x = 0; tmp && x < ns; x++)
		for (uint32_t g = 0; g < l->groups; g++) {
			uint64_t gen;
			size_t r = (size_t)x * l->groups + g;
			if (rowc_get(rf, s0 + x, g, &gen, tmp, NULL) && gen > gens[r])
				gens[r] = gen;
		}
	crc_done(tmp, stack);
}

/* The new records of stripes [s0, s0 + ns) (as rows_newest() indexes
 * them) to member j, in one write (and to the cache). */
static void rows_put(struct rfile *rf, uint32_t j, uint64_t s0, uint32_t ns, const uint64_t *gens,
		     const uint32_t *crcs)
{
	const struct layout *l = &rf->lay;
	size_t R = csum_record_size(l);
	uint32_t per = csum_per_row(l);
	uint8_t *buf = malloc((size_t)ns * R);
	for (uint32_t x = 0; x < ns; x++) {
		uint32_t g, slot;
		layout_member_slot(l, s0 + x, j, &g, &slot);
		size_t r = (size_t)x * l->groups + g;
		rowc_put(rf, s0 + x, g, gens[r], crcs + r * per, true);
		if (buf)
			csum_encode(buf + (size_t)x * R, R, gens[r], crcs + r * per, per);
	}
	int fd = member_writable(rf->a, j) ? sums_fd(rf, j) : -1;
	int e = !buf ? -ENOMEM : fd < 0 ? 0 : csum_write_rows(fd, l, s0, ns, buf);
	if (e < 0)
		log_err("member %u '%s': cannot write the checksum records of stripes %" PRIu64 "-%" PRIu64
			" of file %016" PRIx64 ": %s", j, rf->a->m[j].path, s0, s0 + ns - 1, rf->id, strerror(-e));
	if (fd >= 0 && (int)j == shadow_of(rf->a) && rf->fd[SHADOW] >= 0 && buf) {
		int sfd = sums_fd(rf, SHADOW);
		if (sfd >= 0)
			csum_write_rows(sfd, l, s0, ns, buf);
	}
	free(buf);
}

/* share t of the two in arg (pair_run()) */
static void write_share(void *arg, int t)
{
	struct full_share *sh = (struct full_share *)arg + t;
	if (sh->ns == 0)
		return;
	struct rfile *rf = sh->rf;
	const struct layout *l = &rf->lay;
	uint32_t chunk = l->chunk, k = l->k, m = l->m, ns = sh->ns;
	uint64_t s0 = sh->s0;
	uint8_t *par = scratch((size_t)ns * l->groups * m * chunk);
	sh->ret = par ? 0 : -ENOMEM;
	memset(sh->mret, 0, sizeof(sh->mret));
	memset(sh->msome, 0, sizeof(sh->msome));
	if (!par)
		return;
#define DATA(s, g, i) (sh->sd[(s) - s0] + (uint64_t)layout_data_index(l, (g), (i)) * chunk)
#define PAR(s, g, i) (par + ((((size_t)((s) - s0) * l->groups + (g)) * m + (i)) * chunk))
	/* checksums: each row's record, all of it new; only the generations
	 * they replace are needed, read for all of the batch at once */
	uint32_t per = csum_per_row(l);
	uint64_t *gens = NULL;
	uint32_t *crcs = NULL;
	if (rf->sums) {
		gens = malloc((size_t)ns * l->groups * sizeof(*gens));
		crcs = malloc((size_t)ns * l->groups * per * 4);
		if (!gens || !crcs) {
			free(gens);
			free(crcs);
			sh->ret = -ENOMEM;
			return;
		}
		rows_newest(rf, s0, ns, gens);
	}
	for (uint64_t s = s0; s < s0 + ns; s++) {
		for (uint32_t g = 0; g < l->groups; g++) {
			uint8_t *blk[LAYOUT_MAX_WIDTH];
			for (uint32_t i = 0; i < k; i++)
				blk[i] = (uint8_t *)DATA(s, g, i);
			for (uint32_t i = 0; i < m; i++)
				blk[k + i] = PAR(s, g, i);
			int r = parity_encode(k, m, chunk, blk);
			if (r < 0) {
				sh->ret = r;
				free(gens);
				free(crcs);
				return;
			}
			if (!rf->sums)
				continue;
			/* (summed while the row is in the core's cache) */
			size_t row = (size_t)(s - s0) * l->groups + g;
			gens[row] = next_gen(gens[row]);
			sum_slots(l, blk, chunk, crcs + row * per, 0, recon_all(l));
		}
	}
	uint32_t width = rf->a->width;
	for (uint32_t x = 0; x < width; x++) {
		uint32_t j = (sh->first + x) % width;
		if (!writable(rf, j))
			continue;
		struct iovec iov[BATCH_STRIPES];
		for (uint64_t s = s0; s < s0 + ns; s++) {
			uint32_t g, slot;
			layout_member_slot(l, s, j, &g, &slot);
			iov[s - s0].iov_base = (void *)(slot < k ? DATA(s, g, slot) : PAR(s, g, slot - k));
			iov[s - s0].iov_len = chunk;
		}
		sh->mret[j] = put_member(rf, j, iov, ns, s0 * chunk, &sh->msome[j]);
		if (rf->sums && sh->mret[j] == 0)
			rows_put(rf, j, s0, ns, gens, crcs);
	}
	free(gens);
	free(crcs);
#undef DATA
#undef PAR
}

/* Stripes [s0, s0+ns), whole: sd[i] holds the data bytes of stripe s0+i
 * (from a request, or from cache lines). */
static int write_full_stripes(struct rfile *rf, uint64_t s0, uint32_t ns, const uint8_t *const *sd)
{
	const struct layout *l = &rf->lay;
	uint32_t width = rf->a->width, half = ns / 2;
	struct full_share sh[2] = {
		{ .rf = rf, .s0 = s0, .ns = half, .first = 0, .sd = sd },
		{ .rf = rf, .s0 = s0 + half, .ns = ns - half, .first = width / 2, .sd = sd + half },
	};
	if (half == 0)
		write_share(sh, 1);
	else
		pair_run(write_share, sh);
	/* every refusal judged, in both halves, before an error returns */
	int ret = 0;
	for (int i = 0; i < 2; i++) {
		if (sh[i].ns == 0)
			continue;
		if (sh[i].ret < 0 && ret == 0)
			ret = sh[i].ret;
		/* (a member refused while the half took bytes: partial) */
		bool took = false;
		for (uint32_t j = 0; j < width; j++)
			took |= writable(rf, j) && sh[i].msome[j];
		for (uint32_t j = 0; j < width; j++) {
			int r = sh[i].mret[j] < 0 ? write_failed(rf, j, sh[i].s0 * l->chunk, sh[i].mret[j],
								   took && l->red != RED_NONE) : 0;
			if (r < 0 && ret == 0)
				ret = r;
		}
	}
	if (ret < 0)
		return ret;
	/* (the last stripe: a damaged shard's loss is a tail, so the first
	 * may still have it where the last does not) */
	for (uint32_t g = 0; g < l->groups; g++)
		if (group_alive(rf, s0 + ns - 1, g) < 0)
			return -EIO;
	return 0;
}

/* Put the file in the dirty log before its first change.  Caller holds
 * rf->rw (a destage shared) and mark_lock. */
static int mark_dirty(struct rfile *rf)
{
	if (rf->marked)
		return 0;
	int r = array_note_data_write(rf->a);
	if (r < 0)
		return r;
	/* set first: getattr hides the dirty-log link from st_nlink */
	__atomic_store_n(&rf->marked, true, __ATOMIC_RELEASE);
	r = array_mark_dirty(rf->a, rf->id, rf->fd, rf->path);
	if (r < 0) {
		__atomic_store_n(&rf->marked, false, __ATOMIC_RELEASE);
		return r;
	}
	return 0;
}

/* Did a write of [off, off+len) put bytes (data, parity or a copy) on the
 * primary member?  Small writes often do not. */
static bool wrote_primary(const struct rfile *rf, uint64_t off, size_t len)
{
	const struct layout *l = &rf->lay;
	uint32_t p = rf->a->primary, g, slot;
	uint64_t sbytes = layout_stripe_data_bytes(l);
	uint64_t s0 = off / sbytes, s1 = (off + len - 1) / sbytes;
	if (s1 > s0 + 1 || l->red == RED_MIRROR)
		return true;	/* every member gets bytes, or is a full copy */
	for (uint64_t s = s0; s <= s1; s++) {
		layout_member_slot(l, s, p, &g, &slot);
		for (uint32_t j = 0; j < l->k; j++) {
			if (slot < l->k && j != slot)
				continue;	/* a data slot only sees its own chunk */
			uint64_t cbeg = layout_unmap(l, s, layout_data_index(l, g, j), 0);
			if (cbeg < off + len && cbeg + l->chunk > off)
				return true;	/* its chunk, or its group's parity */
		}
	}
	return false;
}

/* ----------------------------------------------------------------- API */

static pthread_mutex_t mark_lock = PTHREAD_MUTEX_INITIALIZER;

static int mark_unguarded(struct rfile *rf)
{
	pthread_mutex_lock(&mark_lock);
	int r = mark_dirty(rf);
	pthread_mutex_unlock(&mark_lock);
	return r;
}

static __thread bool log_covered;

void stripe_log_covered(bool on)
{
	log_covered = on;
}

int stripe_mark_dirty(struct rfile *rf)
{
	if (__atomic_load_n(&rf->marked, __ATOMIC_ACQUIRE) ||
	    (log_covered && __atomic_load_n(&rf->cmarked, __ATOMIC_ACQUIRE)))
		return 0;
	pthread_mutex_lock(&mark_lock);
	int r = mark_dirty(rf);
	pthread_mutex_unlock(&mark_lock);
	return r;
}

int stripe_names(struct rfile *rf, struct stat *st)
{
	int p = __atomic_load_n(&rf->a->primary, __ATOMIC_ACQUIRE), r = 0;
	pthread_mutex_lock(&mark_lock);	/* (no mark made meanwhile) */
	if (p < 0 || rf->fd[p] < 0) {
		errno = ENOENT;
		r = -1;
	} else if (fstat(rf->fd[p], st) < 0) {
		r = -1;
	} else {
		nlink_t marks = array_dirty_links(rf->a, rf->id, (uint32_t)p, st);
		st->st_nlink = st->st_nlink > marks ? st->st_nlink - marks : 0;
	}
	pthread_mutex_unlock(&mark_lock);
	return r;
}

int stripe_publish_shard(struct rfile *rf, uint32_t j, int fd, const char *relpath)
{
	int r = 0;
	pthread_mutex_lock(&mark_lock);
	/* (a mark there now holds a shard out of service: stale) */
	array_unmark_member(rf->a, rf->id, j);
	if (rf->marked)
		r = array_mark_member(rf->a, rf->id, j, fd, false);
	if (r == 0 && rf->cmarked)
		r = array_mark_member(rf->a, rf->id, j, fd, true);
	if (r == 0 && link_fd(fd, rf->a->m[j].dirfd, relpath) < 0)
		r = -errno;
	if (r == 0) {
		rf->fd[j] = fd;
		rf->damaged &= ~(1ull << j);
		rf->damaged_from[j] = 0;
	} else {
		array_unmark_member(rf->a, rf->id, j);	/* (a crash must not find it as j's shard) */
	}
	pthread_mutex_unlock(&mark_lock);
	return r;
}

int stripe_mark_cached(struct rfile *rf)
{
	if (__atomic_load_n(&rf->marked, __ATOMIC_ACQUIRE) || __atomic_load_n(&rf->cmarked, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&mark_lock);
	int r = 0;
	if (!rf->marked && !rf->cmarked) {
		r = array_note_data_write(rf->a);
		if (r == 0) {
			/* set first: getattr hides the dirty-log link */
			__atomic_store_n(&rf->cmarked, true, __ATOMIC_RELEASE);
			r = array_mark_cached(rf->a, rf->id, rf->fd, rf->path);
			if (r < 0)
				__atomic_store_n(&rf->cmarked, false, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&mark_lock);
	return r;
}

/* An operation on the in-place replacement's shard failed: the
 * replacement is given up, as on a write error there. */
static void shadow_failed(struct rfile *rf, const char *op, int err)
{
	log_err("%s failed on the replacement '%s': %s; the replacement is given up (the member it was copying "
		"keeps serving; start it again with 'raidfs replace')", op, rf->a->m[SHADOW].path, strerror(-err));
	array_abandon_replace(rf->a);
}

/* The in-place replacement's shard too (it takes every write the member
 * does). */
static void sync_shadow(struct rfile *rf, bool datasync)
{
	if (shadow_of(rf->a) < 0 || rf->fd[SHADOW] < 0)
		return;
	int r = member_fsync(rf->a, SHADOW, rf->fd[SHADOW], datasync);
	if (r < 0)
		shadow_failed(rf, "fsync", r);
}

int stripe_sync_shards(struct rfile *rf)
{
	if (member_sync_mode == MSYNC_NEVER)
		return 0;
	for (uint32_t j = 0; j < rf->a->width; j++) {
		if (!writable(rf, j))
			continue;
		int r = member_fsync(rf->a, j, rf->fd[j], true);
		if (r < 0)
			array_member_io_error(rf->a, j, r, true);
	}
	/* (a guard slot freed before the replacement's copy is durable
	 * would leave it behind) */
	sync_shadow(rf, true);
	return 0;
}

ssize_t stripe_write(struct rfile *rf, const void *buf, size_t len, uint64_t off)
{
	if (len == 0)
		return 0;
	if (!array_writable(rf->a))
		return rf->a->readonly ? -EROFS : -EIO;
	array_note_user_io(rf->a);
	pthread_rwlock_wrlock(&rf->rw);
	ssize_t r = stripe_write_locked(rf, buf, len, off);
	pthread_rwlock_unlock(&rf->rw);
	return r;
}

static void cut_failed_tail(struct rfile *rf, uint64_t off);

ssize_t stripe_write_locked(struct rfile *rf, const void *buf, size_t len, uint64_t off)
{
	const struct layout *l = &rf->lay;
	const uint64_t chunk = l->chunk;
	const uint64_t sbytes = layout_stripe_data_bytes(l);
	const uint8_t *src = buf;
	uint64_t end = off + len;
	int ret;

	if (len == 0)
		return 0;
	ret = stripe_mark_dirty(rf);
	if (ret == 0)
		ret = reserve(rf, off, end);
	if (ret == 0)
		note_written(rf, (end + sbytes - 1) / sbytes);
	bool reached = ret == 0;	/* (the members: a failure may leave bytes there) */
	for (uint64_t pos = off; pos < end && ret == 0;) {
		uint64_t s = pos / sbytes;
		if (l->red == RED_PARITY && pos == s * sbytes && end - pos >= 2 * sbytes) {
			uint64_t ns = (end - pos) / sbytes;
			if (ns > BATCH_STRIPES)
				ns = BATCH_STRIPES;
			const uint8_t *sd[BATCH_STRIPES];
			for (uint64_t i = 0; i < ns; i++)
				sd[i] = src + (pos - off) + i * sbytes;
			ret = write_full_stripes(rf, s, (uint32_t)ns, sd);
			pos += ns * sbytes;
			continue;
		}
		uint64_t sbeg = s * sbytes, send = sbeg + sbytes;
		uint64_t seg_end = end < send ? end : send;
		for (uint32_t g = 0; g < l->groups && ret == 0; g++) {
			struct group_write w;
			w.any = false;
			w.lo = l->chunk;
			w.hi = 0;
			for (uint32_t j = 0; j < l->k; j++) {
				uint32_t d = layout_data_index(l, g, j);
				uint64_t cbeg = sbeg + d * chunk, cend = cbeg + chunk;
				uint64_t x = pos > cbeg ? pos : cbeg;
				uint64_t y = seg_end < cend ? seg_end : cend;
				w.src[j] = NULL;
				if (x >= y)
					continue;
				w.src[j] = src + (x - off);
				w.a[j] = x - cbeg;
				w.b[j] = y - cbeg;
				if (w.a[j] < w.lo)
					w.lo = w.a[j];
				if (w.b[j] > w.hi)
					w.hi = w.b[j];
				w.any = true;
			}
			if (w.any)
				ret = write_group(rf, s, g, &w);
		}
		pos = seg_end;
	}
	if (ret == 0 && !wrote_primary(rf, off, len)) {
		/* getattr reports the primary shard's times: keep its mtime
		 * moving even when this write landed on other members only */
		static const struct timespec now[2] = { { 0, UTIME_OMIT }, { 0, UTIME_NOW } };
		futimens(rf->fd[rf->a->primary], now);
	}
	if (ret == 0 && end > rf->size) {
		__atomic_store_n(&rf->size, end, __ATOMIC_RELEASE);
		rf->meta_stale = true;
	}
	if (ret < 0 && reached && end > rf->size)
		cut_failed_tail(rf, off);
	if (ret == 0 && member_sync_mode == MSYNC_ALWAYS)
		ret = stripe_sync_shards(rf);
	return ret < 0 ? ret : (ssize_t)len;
}

/* ------------------------------------------------- destage of a cache line
 *
 * A cache line is one stripe's data bytes with a valid and a dirty bit per
 * sector.  Per group, the dirty sectors are written with the parity over
 * their range [lo, hi) of the chunk, choosing like md between
 *   reconstruct-write: read the data slots the line does not hold over
 *                      [lo, hi), encode parity from all k slots;
 *   read-modify-write: read the old bytes of the dirty slots and the old
 *                      parity, add the change (old ^ new) into the parity;
 * whichever reads fewer members.  A line that holds the whole range reads
 * nothing.  Read-modify-write needs every member it reads to be present;
 * otherwise reconstruct-write reconstructs what it needs.
 */

struct cline {
	const uint8_t *data;
	const uint64_t *valid, *dirty;
	uint32_t sector;
	uint64_t end;		/* bytes of the file inside this stripe */
};

/* Sector i (of the line) holds bytes the file has now: written or read
 * into the line, or past the end (zeros). */
static inline bool cl_known(const struct cline *c, uint64_t i)
{
	return (c->valid[i / 64] >> (i % 64) & 1) || i * c->sector >= c->end;
}

static inline bool cl_dirty(const struct cline *c, uint64_t i)
{
	return (c->dirty[i / 64] >> (i % 64) & 1) && i * c->sector < c->end;
}

/* Copy line bytes [x, y) into dst where the line knows them: its valid
 * sectors, zeros past the end; other sectors of dst are left as they are. */
static void cl_copy(const struct cline *c, uint64_t x, uint64_t y, uint8_t *dst)
{
	for (uint64_t i = x / c->sector; i * c->sector < y; i++) {
		uint64_t a = i * c->sector, b = a + c->sector;
		if (a < x)
			a = x;
		if (b > y)
			b = y;
		if (c->valid[i / 64] >> (i % 64) & 1) {
			memcpy(dst + (a - x), c->data + a, b - a);
			if (b > c->end && a < b)	/* the tail of the last sector */
				memset(dst + ((a > c->end ? a : c->end) - x), 0, b - (a > c->end ? a : c->end));
		} else if (a >= c->end) {
			memset(dst + (a - x), 0, b - a);
		}
	}
}

static void xor_into(uint8_t *dst, const uint8_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] ^= src[i];
}

/* One destage of columns [lo, hi) of group g of stripe s: per data slot
 * j its offset in the stripe (cj) and its dirty span [a, b) in the chunk,
 * sector-aligned and inside the file; the buffers (blk: the new data and
 * parity, old: what read-modify-write reads). */
struct dstage {
	struct rfile *rf;
	const struct cline *c;
	uint64_t s, base;
	uint32_t g, lo, hi, len;
	uint32_t a[LAYOUT_MAX_WIDTH], b[LAYOUT_MAX_WIDTH];
	uint64_t cj[LAYOUT_MAX_WIDTH];
	uint64_t dirty_slots;		/* data slots with dirty bytes */
	uint64_t unknown;		/* data slots the line does not know whole */
	uint64_t absent;		/* absent data slots the line does not replace */
	uint8_t *blk[LAYOUT_MAX_WIDTH], *old[LAYOUT_MAX_WIDTH], *zero;
};

/* The dirty span of each data slot within columns [rlo, rhi), and the
 * columns [lo, hi) that cover them all: false when nothing is dirty. */
static bool dirty_spans(struct dstage *d, uint32_t rlo, uint32_t rhi)
{
	const struct layout *l = &d->rf->lay;
	const uint32_t chunk = l->chunk, sec = d->c->sector;
	d->lo = chunk;
	d->hi = 0;
	for (uint32_t j = 0; j < l->k; j++) {
		d->cj[j] = (uint64_t)layout_data_index(l, d->g, j) * chunk;
		d->a[j] = chunk;
		d->b[j] = 0;
		for (uint32_t x = rlo; x < rhi; x += sec)
			if (cl_dirty(d->c, (d->cj[j] + x) / sec)) {
				if (d->a[j] == chunk)
					d->a[j] = x;
				d->b[j] = x + sec;
			}
		if (d->a[j] == chunk)
			continue;
		if (d->cj[j] + d->b[j] > d->c->end)
			d->b[j] = d->c->end - d->cj[j];
		if (d->a[j] < d->lo)
			d->lo = d->a[j];
		if (d->b[j] > d->hi)
			d->hi = d->b[j];
	}
	return d->lo < d->hi;
}

/* Does every sector of data slot j over [lo, hi) pass test? */
static bool slot_all(const struct dstage *d, uint32_t j, bool (*test)(const struct cline *, uint64_t))
{
	const uint32_t sec = d->c->sector;
	bool all = true;
	for (uint64_t i = (d->cj[j] + d->lo) / sec; i * sec < d->cj[j] + d->hi && all; i++)
		all = test(d->c, i);
	return all;
}

/* Read-modify-write or reconstruct-write, by the reads each needs (md's
 * choice): true for read-modify-write, which also needs every slot it
 * reads usable, and no absent slot to guard (reconstruct-write has its
 * bytes). */
static bool choose_rmw(struct dstage *d)
{
	const struct layout *l = &d->rf->lay;
	uint32_t rcw = 0, rmw = l->m;
	bool rmw_ok = true;
	for (uint32_t j = 0; j < l->k; j++) {
		bool usable = rfile_usable_at(d->rf, layout_slot_member(l, d->s, d->g, j), d->s);
		if (!slot_all(d, j, cl_known)) {
			d->unknown |= 1ull << j;
			rcw++;
		}
		if (d->a[j] < d->b[j]) {
			d->dirty_slots |= 1ull << j;
			rmw++;
			rmw_ok &= usable;
		}
		if (!usable && !slot_all(d, j, cl_dirty))
			d->absent |= 1ull << j;
	}
	for (uint32_t p = l->k; p < l->k + l->m; p++)
		rmw_ok &= rfile_usable_at(d->rf, layout_slot_member(l, d->s, d->g, p), d->s);
	if (d->absent && guard_on())
		rmw_ok = false;
	return rmw_ok && rmw < rcw;
}

/* Read-modify-write: parity += encode(old ^ new of the dirty slots).
 * 0, 1 when a read failed (the caller reconstructs instead), or -errno. */
static int read_modify_write(struct dstage *d)
{
	const struct layout *l = &d->rf->lay;
	const uint32_t k = l->k, n = l->k + l->m, len = d->len;
	for (uint32_t j = 0; j < k; j++) {
		if (!(d->dirty_slots >> j & 1))
			continue;
		uint32_t mj = layout_slot_member(l, d->s, d->g, j);
		if (shard_read(d->rf, mj, d->old[j], len, d->base + d->lo) < 0)
			return 1;	/* a read error: the other way reconstructs */
		memcpy(d->blk[j], d->old[j], len);
		cl_copy(d->c, d->cj[j] + d->lo, d->cj[j] + d->hi, d->blk[j]);
	}
	for (uint32_t p = k; p < n; p++)
		if (shard_read(d->rf, layout_slot_member(l, d->s, d->g, p), d->old[p], len, d->base + d->lo) < 0)
			return 1;
	uint8_t *delta[LAYOUT_MAX_WIDTH];
	memset(d->zero, 0, len);
	for (uint32_t j = 0; j < k; j++) {
		if (d->dirty_slots >> j & 1) {
			xor_into(d->old[j], d->blk[j], len);	/* old[j] = delta */
			delta[j] = d->old[j];
		} else {
			delta[j] = d->zero;
		}
	}
	for (uint32_t p = k; p < n; p++)
		delta[p] = d->blk[p];
	int ret = parity_encode(k, l->m, len, delta);
	if (ret < 0)
		return ret;
	for (uint32_t p = k; p < n; p++)
		xor_into(d->blk[p], d->old[p], len);	/* new parity */
	return 0;
}

/* Reconstruct-write: every data slot over [lo, hi), the ones the line
 * does not know read (or reconstructed by the planner), the line's bytes
 * over them, the parity encoded.  0 or -errno. */
static int reconstruct_write(struct dstage *d)
{
	const struct layout *l = &d->rf->lay;
	if (d->unknown) {
		int ret = load_group(d->rf, d->s, d->g, d->lo, d->len, d->blk, d->unknown);
		if (ret < 0)
			return ret;
	}
	for (uint32_t j = 0; j < l->k; j++)
		cl_copy(d->c, d->cj[j] + d->lo, d->cj[j] + d->hi, d->blk[j]);	/* the line's bytes win */
	return parity_encode(l->k, l->m, d->len, d->blk);
}

/* The dirty spans of the data slots and the parity over [lo, hi) to the
 * members, absent chunks guarded first. */
static int write_spans(struct dstage *d)
{
	const struct layout *l = &d->rf->lay;
	int gs = -1, ret;
	bool wrote = false;	/* (shard_write()) */
	ret = guard_absent(d->rf, d->s, d->g, d->lo, d->len, d->blk, d->absent, &gs);
	for (uint32_t j = 0; j < l->k && ret == 0; j++) {
		uint32_t mj = layout_slot_member(l, d->s, d->g, j);
		if ((d->dirty_slots >> j & 1) && writable(d->rf, mj))
			ret = shard_write(d->rf, mj, d->blk[j] + (d->a[j] - d->lo), d->b[j] - d->a[j],
					  d->base + d->a[j], &wrote);
	}
	for (uint32_t p = l->k; p < l->k + l->m && ret == 0; p++) {
		uint32_t mj = layout_slot_member(l, d->s, d->g, p);
		if (writable(d->rf, mj))
			ret = shard_write(d->rf, mj, d->blk[p], d->len, d->base + d->lo, &wrote);
	}
	guard_done(d->rf, gs);
	return ret ? ret : group_alive(d->rf, d->s, d->g);
}

/*
 * The destage of a range of a file with checksums: over whole blocks,
 * every data slot of the window loaded (verified) with the line's bytes
 * over it, so that the new checksums are of whole blocks; the members get
 * what write_spans() writes (the dirty spans, the parity over their
 * extent), then the row's new record.  (Always the reconstruct-write: a
 * read-modify-write would not know the bytes around the dirty spans.)
 */
static int destage_summed(struct dstage *d)
{
	struct rfile *rf = d->rf;
	const struct layout *l = &rf->lay;
	uint32_t n = l->k + l->m;
	struct sum_window sw;
	int ret = sw_open(&sw, l, d->lo, d->hi), gs = -1;
	if (ret < 0)
		return ret;
	ret = load_group(rf, d->s, d->g, sw.lo, sw.len, sw.blk, recon_all(l) & ((1ull << l->k) - 1));
	for (uint32_t j = 0; j < l->k && ret == 0; j++)
		cl_copy(d->c, d->cj[j] + sw.lo, d->cj[j] + sw.hi, sw.blk[j]);	/* the line's bytes win */
	if (ret == 0)
		ret = parity_encode(l->k, l->m, sw.len, sw.blk);
	if (ret == 0)
		ret = guard_absent(rf, d->s, d->g, sw.lo, sw.len, sw.blk, d->absent, &gs);
	uint64_t changed = d->dirty_slots | (recon_all(l) & ~((1ull << l->k) - 1));
	if (ret == 0)
		sw_sum(rf, &sw, d->s, d->g, changed);
	bool wrote = false;	/* (shard_write()) */
	for (uint32_t i = 0; i < n && ret == 0; i++) {
		uint32_t mj = layout_slot_member(l, d->s, d->g, i);
		if ((changed >> i & 1) && writable(rf, mj))
			ret = sw_write(rf, &sw, d->s, i, mj, i < l->k ? d->a[i] : sw.lo, i < l->k ? d->b[i] : d->hi, &wrote);
	}
	sw_close(rf, &sw, d->s, ret == 0);
	guard_done(rf, gs);
	return ret ? ret : group_alive(rf, d->s, d->g);
}

/* Columns [rlo, rhi) of the chunk (in-chunk byte offsets) of group g:
 * the line's dirty bytes there written with their parity, by the way
 * that reads less. */
static int destage_range(struct rfile *rf, uint64_t s, uint32_t g, const struct cline *c,
			 uint32_t rlo, uint32_t rhi)
{
	struct dstage d = { .rf = rf, .c = c, .s = s, .g = g, .base = s * rf->lay.chunk };
	const uint32_t n = rf->lay.k + rf->lay.m;
	if (!dirty_spans(&d, rlo, rhi))
		return 0;
	d.len = d.hi - d.lo;
	uint8_t *scr = scratch((size_t)(2 * n + 1) * d.len);
	if (!scr)
		return -ENOMEM;
	d.zero = scr + (size_t)2 * n * d.len;
	for (uint32_t j = 0; j < n; j++) {
		d.blk[j] = scr + (size_t)j * d.len;
		d.old[j] = scr + (size_t)(n + j) * d.len;
	}
	bool rmw = choose_rmw(&d);	/* (also: the dirty, unknown, absent slots) */
	if (rf->sums)
		return destage_summed(&d);
	int ret = rmw ? read_modify_write(&d) : 1;
	if (ret == 1)
		ret = reconstruct_write(&d);
	return ret < 0 ? ret : write_spans(&d);
}

/*
 * Group g of stripe s: the columns (in-chunk sector offsets) where some
 * data slot is dirty, in runs (gaps of up to 4 KiB bridged), each written
 * with its own parity range, so scattered small writes do not turn into
 * whole-chunk reads and writes.
 */
static int destage_group(struct rfile *rf, uint64_t s, uint32_t g, const struct cline *c)
{
	const struct layout *l = &rf->lay;
	const uint32_t chunk = l->chunk, sec = c->sector, gap = 4096;
	uint64_t cj[LAYOUT_MAX_WIDTH];
	for (uint32_t j = 0; j < l->k; j++)
		cj[j] = (uint64_t)layout_data_index(l, g, j) * chunk;
	int ret = 0;
	uint32_t run_lo = chunk, run_hi = 0;
	for (uint32_t x = 0; x < chunk && ret == 0; x += sec) {
		bool d = false;
		for (uint32_t j = 0; j < l->k && !d; j++)
			d = cl_dirty(c, (cj[j] + x) / sec);
		if (!d)
			continue;
		if (run_lo < run_hi && x > run_hi + gap) {
			ret = destage_range(rf, s, g, c, run_lo, run_hi);
			run_lo = chunk;
		}
		if (run_lo == chunk)
			run_lo = x;
		run_hi = x + sec;
	}
	if (ret == 0 && run_lo < run_hi)
		ret = destage_range(rf, s, g, c, run_lo, run_hi);
	return ret;
}

int stripe_destage_line(struct rfile *rf, uint64_t s, const uint8_t *data, const uint64_t *valid,
			const uint64_t *dirty, uint32_t sector)
{
	const struct layout *l = &rf->lay;
	uint64_t sbytes = layout_stripe_data_bytes(l);
	uint64_t size = rf->size;
	if (s * sbytes >= size)
		return 0;
	struct cline c = { data, valid, dirty, sector, size - s * sbytes < sbytes ? size - s * sbytes : sbytes };
	int ret = stripe_mark_dirty(rf);
	if (ret == 0)
		ret = reserve(rf, s * sbytes, (s + 1) * sbytes < size ? (s + 1) * sbytes : size);
	if (ret < 0)
		return ret;
	note_written(rf, s + 1);
	if (l->red != RED_PARITY) {
		/* no parity to compute: each run of dirty sectors as it is */
		uint64_t nsec = (c.end + sector - 1) / sector;
		for (uint64_t x = 0; x < nsec && ret == 0;) {
			if (!cl_dirty(&c, x)) {
				x++;
				continue;
			}
			uint64_t y = x;
			while (y < nsec && cl_dirty(&c, y))
				y++;
			uint64_t from = x * sector, to = y * sector < c.end ? y * sector : c.end;
			ssize_t r = stripe_write_locked(rf, data + from, to - from, s * sbytes + from);
			ret = r < 0 ? (int)r : 0;
			x = y;
		}
		return ret;
	}
	for (uint32_t g = 0; g < l->groups && ret == 0; g++)
		ret = destage_group(rf, s, g, &c);
	if (ret == 0 && member_sync_mode == MSYNC_ALWAYS)
		ret = stripe_sync_shards(rf);
	return ret;
}

int stripe_write_stripes_locked(struct rfile *rf, uint64_t s0, uint32_t ns, const uint8_t *const *sd)
{
	const struct layout *l = &rf->lay;
	uint64_t sbytes = layout_stripe_data_bytes(l);
	int ret = stripe_mark_dirty(rf);
	if (ret == 0) {
		uint64_t size = __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE);
		ret = reserve(rf, s0 * sbytes, (s0 + ns) * sbytes < size ? (s0 + ns) * sbytes : size);
	}
	if (ret == 0)
		note_written(rf, s0 + ns);
	if (ret == 0 && l->red == RED_PARITY && ns > 0 && ns <= BATCH_STRIPES) {
		ret = write_full_stripes(rf, s0, ns, sd);
		if (ret == 0 && member_sync_mode == MSYNC_ALWAYS)
			ret = stripe_sync_shards(rf);
		return ret;
	}
	for (uint32_t i = 0; i < ns && ret == 0; i++) {
		ssize_t r = stripe_write_locked(rf, sd[i], sbytes, (s0 + i) * sbytes);
		ret = r < 0 ? (int)r : 0;
	}
	return ret;
}

ssize_t stripe_read(struct rfile *rf, void *buf, size_t len, uint64_t off)
{
	array_note_user_io(rf->a);
	pthread_rwlock_rdlock(&rf->rw);
	ssize_t r = stripe_read_locked(rf, buf, len, off);
	pthread_rwlock_unlock(&rf->rw);
	return r;
}

ssize_t stripe_read_locked(struct rfile *rf, void *buf, size_t len, uint64_t off)
{
	const struct layout *l = &rf->lay;
	const uint64_t chunk = l->chunk;
	uint8_t *dst = buf;
	int ret = 0;

	uint64_t size = rf->size;
	if (off >= size)
		return 0;
	if (len > size - off)
		len = size - off;
	uint64_t end = off + len;
	for (uint64_t pos = off; pos < end && ret == 0;) {
		uint64_t s, cbeg;
		uint32_t d, o, g, j;
		layout_map(l, pos, &s, &d, &o);
		cbeg = pos - o;
		uint64_t y = end < cbeg + chunk ? end : cbeg + chunk;
		uint32_t n = y - pos;
		layout_data_slot(l, d, &g, &j);
		/* mirrors: spread reads over the copies (the copy wanted,
		 * then the next ones when it cannot be read) */
		uint32_t cnt = l->k + l->m, want = l->red == RED_MIRROR ? s % cnt : j;
		struct recon_plan p;
		uint64_t bad = 0;
		recon_plan(&p, l, s, g, readable_at(rf, s), 1ull << want, want);
		if ((p.op == RECON_READ || p.op == RECON_COPY) && !rf->sums) {
			uint32_t i = p.op == RECON_READ ? want : p.src;
			if (shard_read(rf, p.member[i], dst + (pos - off), n, s * chunk + o) == 0) {
				pos = y;
				continue;
			}
			bad = 1ull << i;	/* reconstructed, then repaired */
			recon_exclude(&p, i);
		}
		uint8_t *scr = scratch((size_t)cnt * n);
		uint8_t *blk[LAYOUT_MAX_WIDTH];
		if (!scr) {
			ret = -ENOMEM;
			break;
		}
		for (uint32_t i = 0; i < cnt; i++)
			blk[i] = scr + (size_t)i * n;
		blk[want] = dst + (pos - off);	/* (read or made in place) */
		ret = recon_run(rf, &p, o, n, blk, 0, bad);
		pos = y;
	}
	return ret < 0 ? ret : (ssize_t)len;
}

/*
 * Recompute the redundancy of group g in stripe s over the whole chunk,
 * treating data at or beyond logical offset `limit` as zero.  Used by
 * truncate (limit = new size) and resync (limit = size).  `changing`: the
 * stripe's data changes whatever this does (a truncate cuts it next, a
 * put-back wrote it), so a member that cannot take its part even of the
 * first write is failed (write_failed(), partial) - its old parity would
 * not match.  Otherwise (a resync) a full member is the caller's error,
 * also after part of the stripe went out: the data did not change, and
 * its file stays in the dirty log for the next resync.
 */
/*
 * The resync of a checksummed row after a crash: the row may have been
 * written whole while its record lagged, or in part.  Every slot is read
 * as the members hold it (not verified) into raw[]; 1 when every slot
 * could be read and the redundancy agrees with the data (mirrors: the
 * copies agree; raid0: nothing to compare): the bytes were written whole
 * and are taken, with a new record.  Otherwise the verified load decides
 * (an unacknowledged write is rolled back to what the record says), and
 * when nothing verifies either, the bytes are taken as found, said loudly:
 * nothing tells which side is right.  0 or -errno.
 */
static int resync_row_load(struct rfile *rf, uint64_t s, uint32_t g, uint8_t **blk)
{
	const struct layout *l = &rf->lay;
	uint32_t n = l->k + l->m, chunk = l->chunk;
	uint64_t base = s * chunk, data = recon_all(l) & ((l->k == 64) ? ~0ull : ((1ull << l->k) - 1));
	uint8_t *buf = malloc((size_t)(n + l->m) * chunk), *raw[LAYOUT_MAX_WIDTH];
	if (!buf)
		return -ENOMEM;
	bool whole = true;
	for (uint32_t i = 0; i < n; i++) {
		raw[i] = buf + (size_t)i * chunk;
		uint32_t mj = layout_slot_member(l, s, g, i);
		whole = whole && rfile_usable_at(rf, mj, s) && shard_read(rf, mj, raw[i], chunk, base) == 0;
	}
	bool agrees = whole;
	if (agrees && l->red == RED_MIRROR) {
		for (uint32_t c = 1; c < n && agrees; c++)
			agrees = !memcmp(raw[c], raw[0], chunk);
	} else if (agrees && l->red == RED_PARITY) {
		uint8_t *p[LAYOUT_MAX_WIDTH];
		for (uint32_t i = 0; i < n; i++)
			p[i] = i < l->k ? raw[i] : buf + (size_t)(n + i - l->k) * chunk;
		agrees = parity_encode(l->k, l->m, chunk, p) == 0;
		for (uint32_t i = l->k; i < n && agrees; i++)
			agrees = !memcmp(p[i], raw[i], chunk);
	}
	int ret = 0;
	if (!agrees) {
		/* the data verified (and healed) by the load; a redundancy
		 * chunk (a parity chunk, a mirror copy past the first) that
		 * does not match its checksum is made again below: counted on
		 * its member here */
		uint32_t *crc = whole && l->red != RED_NONE && !rf->recovering ? malloc((size_t)csum_per_row(l) * 4)
											: NULL;
		if (crc) {
			row_load(rf, s, g, crc);
			for (uint32_t i = l->k; i < n; i++)
				if (!csum_slot_matches(l, crc, i, 0, chunk / CSUM_BLOCK, raw[i])) {
					uint32_t mj = layout_slot_member(l, s, g, i);
					log_err("checksum error on member %u '%s' (file %016" PRIx64 ", offset %" PRIu64
						", %u bytes of redundancy): made again from the data", mj, rf->a->m[mj].path,
						rf->id, base, chunk);
					array_note_cksum_error(rf->a, mj, chunk);
				}
			free(crc);
		}
		ret = load_group(rf, s, g, 0, chunk, blk, data);
		if (ret == -EIO && whole) {
			log_err("file %016" PRIx64 ", stripe %" PRIu64 ": after the crash, no record of the row matches "
				"its chunks and its redundancy does not agree with its data: taken as found", rf->id, s);
			agrees = true;
			ret = 0;
		}
	}
	for (uint32_t j = 0; j < l->k && agrees && ret == 0; j++)
		memcpy(blk[j], raw[j], chunk);
	free(buf);
	return ret;
}

static int regen_group(struct rfile *rf, uint64_t s, uint32_t g, uint64_t limit, bool changing)
{
	const struct layout *l = &rf->lay;
	uint32_t chunk = l->chunk, n = l->k + l->m;
	uint64_t base = s * chunk;
	int ret;

	if (l->red == RED_NONE && !rf->sums)
		return 0;	/* (with checksums: the record of the cut row) */
	uint8_t *scr = scratch((size_t)n * chunk);
	uint8_t *blk[LAYOUT_MAX_WIDTH];
	if (!scr)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		blk[i] = scr + (size_t)i * chunk;
	uint64_t all = (l->k == 64) ? ~0ull : ((1ull << l->k) - 1);
	ret = rf->sums && !changing ? resync_row_load(rf, s, g, blk) : load_group(rf, s, g, 0, chunk, blk, all);
	if (ret < 0)
		return ret;
	for (uint32_t j = 0; j < l->k; j++) {
		uint64_t cbeg = layout_unmap(l, s, layout_data_index(l, g, j), 0);
		if (cbeg >= limit)
			memset(blk[j], 0, chunk);
		else if (cbeg + chunk > limit)
			memset(blk[j] + (limit - cbeg), 0, cbeg + chunk - limit);
	}
	bool wrote = true, *part = changing ? &wrote : NULL;	/* (shard_write()) */
	if (l->red == RED_MIRROR) {
		for (uint32_t c = 0; c < n && !ret; c++) {
			uint32_t mj = layout_slot_member(l, s, g, c);
			if (writable(rf, mj))
				ret = shard_write(rf, mj, blk[0], chunk, base, part);
		}
		for (uint32_t c = 1; c < n; c++)
			blk[c] = blk[0];
	} else if (l->red == RED_PARITY) {
		ret = parity_encode(l->k, l->m, chunk, blk);
		for (uint32_t p = l->k; p < n && !ret; p++) {
			uint32_t mj = layout_slot_member(l, s, g, p);
			if (writable(rf, mj))
				ret = shard_write(rf, mj, blk[p], chunk, base, part);
		}
	}
	if (ret == 0 && rf->sums)
		ret = row_put_all(rf, s, g, blk);
	return ret ? ret : l->red == RED_NONE ? 0 : group_alive(rf, s, g);
}

/* Every group of stripe s, which a truncate to `size` cuts (bytes past
 * it zero). */
static int regen_stripe(struct rfile *rf, uint64_t s, uint64_t size, bool changing)
{
	int ret = 0;
	for (uint32_t g = 0; g < rf->lay.groups && ret == 0; g++)
		ret = regen_group(rf, s, g, size, changing);
	return ret;
}

/* A truncate to `size` rewrites the parity of stripe s, then cuts the
 * data shards: between the two, an absent slot's bytes in s would read
 * otherwise - up to the old end: the truncate was not done, and the next
 * mount may find the old size.  Keep them aside (read, reconstructed)
 * until both are done; a slot wholly past the old end gets an empty
 * piece, which has the put-back make its group's parity again too.
 * *kept holds the bytes for the guard (freed by the caller). */
static int guard_cut(struct rfile *rf, uint64_t s, uint64_t size, int *slot, uint8_t **kept)
{
	const struct layout *l = &rf->lay;
	struct guard_piece p[GUARD_PIECES];
	int n = 0;
	*slot = -1;
	*kept = NULL;
	if (!guard_on())
		return guard_stopped() ? mark_unguarded(rf) : 0;
	for (uint32_t g = 0; g < l->groups; g++) {
		for (uint32_t j = 0; j < l->k; j++) {
			uint64_t off = layout_unmap(l, s, layout_data_index(l, g, j), 0);
			if (rfile_usable_at(rf, layout_slot_member(l, s, g, j), s))
				continue;
			if (n == GUARD_PIECES) {
				log_warn("file %016" PRIx64 ": more absent members in stripe %" PRIu64 " than a guard slot "
					 "holds: truncated without keeping their chunks aside", rf->id, s);
				return mark_unguarded(rf);
			}
			p[n].off = off;
			p[n].len = off >= rf->size ? 0 : rf->size - off < l->chunk ? rf->size - off : l->chunk;
			n++;
		}
	}
	if (n == 0)
		return 0;
	*kept = malloc((size_t)n * l->chunk);
	if (!*kept)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		p[i].data = *kept + (size_t)i * l->chunk;
		ssize_t r = p[i].len ? stripe_read_locked(rf, (uint8_t *)p[i].data, p[i].len, p[i].off) : 0;
		if (r < 0)
			return (int)r;
	}
	*slot = guard_hold(rf, p, n, size);
	if (*slot == GUARD_NONE) {
		free(*kept);
		*kept = NULL;
		*slot = -1;
		return mark_unguarded(rf);
	}
	return *slot < 0 ? *slot : 0;
}

/* Cut or extend every present shard to its length for `size`. */
static int trim_shards(struct rfile *rf, uint64_t size)
{
	int sj = shadow_of(rf->a);
	if (sj >= 0 && rf->fd[SHADOW] >= 0) {
		int r = member_ftruncate(rf->a, SHADOW, rf->fd[SHADOW], layout_shard_size(&rf->lay, sj, size));
		if (r < 0)
			shadow_failed(rf, "truncate", r);
	}
	for (uint32_t j = 0; j < rf->a->width; j++) {
		struct stat st;
		uint64_t want = layout_shard_size(&rf->lay, j, size);
		/* (a damaged shard is only cut, put_damaged(), unless the cut
		 * takes all it lost: then drop_cut_damage() follows) */
		bool keep = (rf->damaged >> j & 1) && want > rf->damaged_from[j] * rf->lay.chunk;
		if (!writable(rf, j) || (keep && fstat(rf->fd[j], &st) == 0 && (uint64_t)st.st_size <= want))
			continue;
		int e = member_ftruncate(rf->a, j, rf->fd[j], want);
		if (e < 0) {
			/* a shard left with bytes past the new end (read again
			 * if the file grows): a write error, the member goes */
			log_err("cannot truncate shard on member %u '%s': %s", j,
				rf->a->m[j].path, strerror(-e));
			array_member_io_error(rf->a, j, e, true);
			if (!array_writable(rf->a))
				return -EIO;
		}
	}
	/* the records of rows past the end go too: a row the file grows
	 * over again is a hole, with no record */
	uint64_t sbytes = layout_stripe_data_bytes(&rf->lay), rows = (size + sbytes - 1) / sbytes;
	rowc_drop_from(rf, rows);
	for (uint32_t j = 0; j < MEMBER_SLOTS && rf->sums; j++) {
		if (j == rf->a->width)
			j = SHADOW;	/* (a replacement in place: its records too) */
		/* (sums_fd(): a member back since the file was opened has its
		 * checksum file opened here, else its old records would stay) */
		int fd = j == SHADOW || writable(rf, j) ? sums_fd(rf, j) : -1;
		int e = fd >= 0 ? csum_truncate(fd, &rf->lay, rows) : 0;
		if (e < 0)
			log_err("member %u '%s': cannot cut the checksum file of file %016" PRIx64 ": %s", j,
				rf->a->m[j].path, rf->id, strerror(-e));
	}
	return 0;
}

/* A write reaching past the end failed: some members may hold part of it
 * past rf->size, bytes nobody acknowledged that would read back in place
 * of zeros were the file to grow over them later (a write further on, a
 * truncate up).  Cut them off as a truncate to the same size would: the
 * parity of the last stripe made again without them (when the write
 * touched it), then the shards cut to the size.  Failing that, the file
 * stays in the dirty log and the next mount's resync finishes it. */
static void cut_failed_tail(struct rfile *rf, uint64_t off)
{
	const struct layout *l = &rf->lay;
	uint64_t size = rf->size, sbytes = layout_stripe_data_bytes(l);
	uint64_t s = size ? (size - 1) / sbytes : 0;
	bool regen = size > 0 && (l->red == RED_PARITY || rf->sums) && off < (s + 1) * sbytes;
	int gs = -1;
	uint8_t *kept = NULL;
	int ret = regen ? guard_cut(rf, s, size, &gs, &kept) : 0;
	/* (not changing: a member too full to take the parity of the
	 * cut stripe is not failed for it - the file stays in the dirty
	 * log, below) */
	if (ret == 0 && regen)
		ret = regen_stripe(rf, s, size, false);
	if (ret == 0)
		ret = trim_shards(rf, size);
	guard_done(rf, gs);
	free(kept);
	/* cut shards lost what reserve() allocated past the end */
	reserve_cut(rf, size);
	if (ret < 0 && array_writable(rf->a)) {
		log_err("file %016" PRIx64 ": a write past its end failed and the bytes it left on the members "
			"could not be cut off (%s): its redundancy is made again at the next mount",
			rf->id, strerror(-ret));
		rf->meta_stale = true;
		pthread_mutex_lock(&mark_lock);
		mark_dirty(rf);
		pthread_mutex_unlock(&mark_lock);
		trim_shards(rf, size);
	}
}

int stripe_regen_at(struct rfile *rf, const uint64_t *off, int n)
{
	const struct layout *l = &rf->lay;
	uint64_t done[LAYOUT_MAX_WIDTH];	/* stripe * groups + group */
	int ndone = 0, ret = 0;
	if (l->red != RED_PARITY)
		return 0;
	for (int i = 0; i < n && ret == 0; i++) {
		uint64_t s;
		uint32_t d, o;
		layout_map(l, off[i], &s, &d, &o);
		uint64_t key = s * l->groups + d % l->groups;	/* (layout_data_index()) */
		bool seen = false;
		for (int k = 0; k < ndone && !seen; k++)
			seen = done[k] == key;
		if (seen || ndone == LAYOUT_MAX_WIDTH)
			continue;
		done[ndone++] = key;
		ret = regen_group(rf, s, d % l->groups, rf->size, true);
	}
	/* (the parity slots as long as the file's size makes them) */
	if (ret == 0 && ndone)
		ret = trim_shards(rf, rf->size);
	return ret < 0 ? ret : ndone;
}

int stripe_put_back_guarded(struct rfile *rf)
{
	int ret = 0, put = 0, regen = 0;
	uint32_t slots = 0;
	struct guard_cut *o;
	for (int i = 0; ret == 0 && (o = guard_next_cut(rf->id, &i)); ) {
		/* The file reaches at least as far as it did when the write
		 * began (the size found from the shards and the recorded one
		 * can be short of it: a tail only the absent member and the
		 * parity hold is in neither), and below that every byte is
		 * the file's. */
		if (o->size > rf->size) {
			__atomic_store_n(&rf->size, o->size, __ATOMIC_RELEASE);
			rf->meta_stale = true;
		}
		/* (no new guard: this slot stays until the bytes are durable;
		 * a second absent chunk of the group read from the cut parity
		 * now is put back next) */
		guard_suspend(true);
		for (int k = 0; k < o->n && ret == 0; k++) {
			/* a write of the bytes as they were: the parity is made
			 * again from the surviving chunks and these */
			uint64_t off = o->p[k].off, len = o->p[k].len;
			if (off >= rf->size || len == 0)
				continue;
			if (len > rf->size - off)
				len = rf->size - off;
			ssize_t r = stripe_write_locked(rf, o->p[k].data, len, off);
			ret = r < 0 ? (int)r : 0;
			put++;
		}
		/* The cut write changed the absent chunks past the file's end
		 * too, which must stay zeros (a rebuild writes nothing there,
		 * and the file may grow over them): the parity of each group
		 * the pieces lie in is made again, zeros past the end. */
		if (ret == 0) {
			uint64_t off[GUARD_PIECES];
			for (int k = 0; k < o->n; k++)
				off[k] = o->p[k].off;
			int r = stripe_regen_at(rf, off, o->n);
			ret = r < 0 ? r : 0;
			regen += r > 0 ? r : 0;
		}
		guard_suspend(false);
		if (ret == 0 && o->slot >= 0)
			slots |= 1u << o->slot;
		if (ret == 0)
			o->n = 0;	/* done */
	}
	if (put) {
		log_warn("file %016" PRIx64 ": %d chunk%s of absent members put back as %s before a write into "
			 "its degraded stripes was cut short%s",
			 rf->id, put, put == 1 ? "" : "s", put == 1 ? "it was" : "they were", ret < 0 ? " (failed)" : "");
	} else if (regen) {
		log_warn("file %016" PRIx64 ": a write into its degraded stripes was cut short where the chunks of "
			 "absent members lie past the file's end: parity made again over zeros there%s",
			 rf->id, ret < 0 ? " (failed)" : "");
	}
	if (slots) {
		/* the slots may be taken again once what they restored is
		 * durable (a power loss must find one or the other) */
		if (guard_durable())
			stripe_sync_shards(rf);
		guard_free_slots(slots);
	}
	return ret;
}

int stripe_truncate(struct rfile *rf, uint64_t size)
{
	int ret;

	if (!array_writable(rf->a))
		return rf->a->readonly ? -EROFS : -EIO;
	pthread_rwlock_wrlock(&rf->rw);
	ret = stripe_truncate_locked(rf, size, false);
	pthread_rwlock_unlock(&rf->rw);
	return ret;
}

/* Once the file's size no longer reaches what a damaged shard lost (a
 * truncate), the shard is whole again: trim_shards() gave it its length. */
static void drop_cut_damage(struct rfile *rf)
{
	for (uint32_t j = 0; j < rf->a->width; j++)
		if ((rf->damaged >> j & 1) && writable(rf, j) &&
		    layout_shard_size(&rf->lay, j, rf->size) <= rf->damaged_from[j] * rf->lay.chunk)
			rf->damaged &= ~(1ull << j);
}

int stripe_truncate_locked(struct rfile *rf, uint64_t size, bool said)
{
	const struct layout *l = &rf->lay;
	uint64_t sbytes = layout_stripe_data_bytes(l);
	bool regen = size < rf->size && size > 0 && (l->red == RED_PARITY || rf->sums);
	uint64_t s = size ? (size - 1) / sbytes : 0;
	note_written(rf, regen ? s + 1 : 0);	/* (a change, if nothing written) */
	int ret = stripe_mark_dirty(rf);
	/* a shrink says so first: cut short, it is finished at the next
	 * mount (a size found from shards cut in part would keep some old
	 * bytes and zeros in place of others) */
	if (ret == 0 && !said && size < rf->size) {
		ret = stripe_record_truncate(rf, size);
		said = ret == 0;
	}
	int gs = -1;
	uint8_t *kept = NULL;
	if (ret == 0 && regen)
		ret = guard_cut(rf, s, size, &gs, &kept);
	/* bytes past the new end in the last stripe become zero: parity
	 * must stop covering them */
	if (ret == 0 && regen)
		ret = regen_stripe(rf, s, size, true);
	if (ret == 0)
		ret = trim_shards(rf, size);
	guard_done(rf, gs);
	free(kept);
	if (ret == 0) {
		uint64_t left = (size + sbytes - 1) / sbytes;
		__atomic_store_n(&rf->size, size, __ATOMIC_RELEASE);
		__atomic_store_n(&rf->acked, size, __ATOMIC_RELEASE);
		if (rf->sync_end > left)
			rf->sync_end = left;	/* (what was cut off needs no fsync) */
		drop_cut_damage(rf);
		/* cut shards lost their allocation; grown ones are holes */
		reserve_cut(rf, size);
		ret = stripe_write_meta(rf, 0);
	} else if (said) {
		/* failed after it said it began: the next mount finishes it
		 * (and the log may hold its record), so the file is as short
		 * from now on too - plainly marked: the resync remakes what the
		 * failure left undone */
		log_err("file %016" PRIx64 ": truncate to %" PRIu64 " bytes failed in the middle (%s): the file is that "
			"long now; its redundancy is made again at the next mount", rf->id, size, strerror(-ret));
		__atomic_store_n(&rf->size, size, __ATOMIC_RELEASE);
		__atomic_store_n(&rf->acked, size, __ATOMIC_RELEASE);
		rf->meta_stale = true;
		pthread_mutex_lock(&mark_lock);
		mark_dirty(rf);
		pthread_mutex_unlock(&mark_lock);
		/* the shards cut all the same (ftruncate needs no room): the
		 * bytes past the end must not come back if the file grows */
		trim_shards(rf, size);
	}
	return ret;
}

int stripe_truncate_replayed(struct rfile *rf, uint64_t size)
{
	bool same = size == rf->size;
	int ret = stripe_truncate_locked(rf, size, false);
	const struct layout *l = &rf->lay;
	if (ret < 0 || !same || size == 0 || (l->red != RED_PARITY && !rf->sums))
		return ret;
	ret = regen_stripe(rf, (size - 1) / layout_stripe_data_bytes(l), size, true);
	return ret == 0 ? trim_shards(rf, size) : ret;
}

int stripe_fsync(struct rfile *rf, bool datasync)
{
	int ret = 0;
	pthread_rwlock_wrlock(&rf->rw);
	if (rf->meta_stale)
		ret = stripe_write_meta(rf, 0);
	for (uint32_t j = 0; j < rf->a->width && ret == 0; j++) {
		if (!writable(rf, j) || member_sync_mode == MSYNC_NEVER)
			continue;
		int r = member_fsync(rf->a, j, rf->fd[j], datasync);
		if (r < 0) {
			log_err("fsync failed on member %u '%s': %s", j, rf->a->m[j].path,
				strerror(-r));
			/* data not durable there: the member cannot be trusted */
			array_member_io_error(rf->a, j, r, true);
		}
	}
	sync_shadow(rf, datasync);
	for (uint32_t g = 0; g < rf->lay.groups && ret == 0; g++) {
		/* fsync succeeds while every group keeps what was written
		 * durable: on enough members that are still there, counting
		 * a damaged shard (which takes no writes from the stripe its
		 * loss starts at) where the writes since the last fsync
		 * reached that far */
		uint32_t lost = 0;
		for (uint32_t p = 0; p < rf->lay.gw; p++) {
			uint32_t j = g * rf->lay.gw + p;
			lost += rf->fd[j] < 0 || !member_online(rf->a, j) ||
				(rf->sync_end && !rfile_usable_at(rf, j, rf->sync_end - 1));
		}
		if (lost > rf->lay.m)
			ret = -EIO;
	}
	if (ret == 0)
		rf->sync_end = 0;
	pthread_rwlock_unlock(&rf->rw);
	return ret;
}

int stripe_resync(struct rfile *rf)
{
	const struct layout *l = &rf->lay;
	uint64_t sbytes = layout_stripe_data_bytes(l);
	uint64_t nstripes = (rf->size + sbytes - 1) / sbytes;
	int ret = 0;

	for (uint64_t s = 0; s < nstripes && ret == 0; s++)
		for (uint32_t g = 0; g < l->groups && ret == 0; g++)
			ret = regen_group(rf, s, g, rf->size, false);
	if (l->red == RED_MIRROR)	/* (the copies now hold the first one's bytes) */
		array_data_rewritten(rf->a, rf, 0, UINT64_MAX);
	if (ret == 0)
		ret = trim_shards(rf, rf->size);
	return ret;
}

/*
 * Rebuild member j's shard of rf from the other members, in place, from
 * stripe `from` on: j's shard lost data (rf->damaged bit j; rfile_open()
 * found it short), so it is not read meanwhile.  Holes stay holes; the
 * shard gets its full length.  On success the bit is cleared; returns the
 * bytes written or -errno (-EIO: too few other members to rebuild from).
 * Caller holds rf->rw exclusively.
 */
long stripe_repair_shard(struct rfile *rf, uint32_t j, uint64_t from)
{
	const struct layout *l = &rf->lay;
	uint64_t sbytes = layout_stripe_data_bytes(l);
	uint64_t nstripes = (rf->size + sbytes - 1) / sbytes;
	long written = 0;
	if (!(rf->damaged >> j & 1) || rf->fd[j] < 0 || !member_online(rf->a, j))
		return -EINVAL;
	for (uint64_t s = from; s < nstripes; s++) {
		bool fixed = false;
		long b = stripe_rebuild_chunk(rf, s, j, j, false, &fixed, NULL);
		if (b < 0) {
			/* the stripes before it are rebuilt: kept, on the disk
			 * before anything relies on them */
			if (fdatasync(rf->fd[j]) == 0)
				rf->damaged_from[j] = s;
			return b;
		}
		written += b;
	}
	/* the data on the disk before the length: else a crash could keep
	 * the length without it, a hole no open would find */
	if (fdatasync(rf->fd[j]) < 0 || ftruncate(rf->fd[j], (off_t)layout_shard_size(l, j, rf->size)) < 0)
		return -errno;
	rf->damaged &= ~(1ull << j);
	return written;
}

long stripe_verify(struct rfile *rf,
		   void (*report)(void *ctx, uint64_t stripe, uint32_t group, uint64_t members),
		   void *ctx)
{
	return stripe_verify_range(rf, 0, UINT64_MAX, report, ctx, NULL);
}

/* Mirror copies of group g in stripe s that differ: the bytes most of
 * the readable copies agree on (more than half) go to every copy; with no
 * such majority (two copies) the first copy's.  0 or -errno. */
static int regen_mirror(struct rfile *rf, uint64_t s, uint32_t g)
{
	const struct layout *l = &rf->lay;
	uint32_t chunk = l->chunk, n = l->k + l->m, nread = 0;
	uint8_t *scr = scratch((size_t)n * chunk);
	uint8_t *copy[LAYOUT_MAX_WIDTH];
	if (!scr)
		return -ENOMEM;
	for (uint32_t c = 0; c < n; c++) {
		uint32_t mj = layout_slot_member(l, s, g, c);
		copy[c] = NULL;
		if (rfile_usable_at(rf, mj, s) && shard_read(rf, mj, scr + (size_t)nread * chunk, chunk, s * chunk) == 0)
			copy[c] = scr + (size_t)nread++ * chunk;
	}
	const uint8_t *best = NULL;
	for (uint32_t c = 0; c < n && !best; c++) {
		uint32_t agree = 0;
		for (uint32_t d = 0; copy[c] && d < n; d++)
			agree += copy[d] && !memcmp(copy[c], copy[d], chunk);
		if (2 * agree > nread)
			best = copy[c];
	}
	if (!best)
		return regen_group(rf, s, g, rf->size, false);
	int ret = 0;
	bool wrote = false;	/* (shard_write()) */
	for (uint32_t c = 0; c < n && !ret; c++) {
		uint32_t mj = layout_slot_member(l, s, g, c);
		if (copy[c] != best && (!copy[c] || memcmp(copy[c], best, chunk)) && writable(rf, mj))
			ret = shard_write(rf, mj, best, chunk, s * chunk, &wrote);
	}
	return ret ? ret : group_alive(rf, s, g);
}

int stripe_regen(struct rfile *rf, uint64_t s, uint32_t g)
{
	uint64_t sbytes = layout_stripe_data_bytes(&rf->lay);
	/* (with checksums the records, not a vote, say which copy is right) */
	int r = rf->lay.red == RED_MIRROR && !rf->sums ? regen_mirror(rf, s, g) : regen_group(rf, s, g, rf->size, false);
	if (rf->lay.red == RED_MIRROR)	/* (the vote may have taken another copy than the one cached) */
		array_data_rewritten(rf->a, rf, s * sbytes, (s + 1) * sbytes);
	if (r == 0 && (s + 1) * sbytes >= rf->size)
		r = trim_shards(rf, rf->size);	/* (the last stripe was written whole) */
	return r;
}

/*
 * Compare group g of stripe s: mirror copies with each other, redundancy
 * read with the redundancy its data gives - what the planner computes
 * from the data slots alone (recon_plan(): an encode of the redundancy
 * read, impossible when a data slot could not be read).  blk[0..n+m-1]:
 * chunk-sized buffers (the last m for the redundancy computed).  Returns
 * true when they differ; false when they agree or there is nothing to
 * compare against (a member not there, too little read).  *unread: the
 * slots that could not be read.
 */
static bool group_differs(struct rfile *rf, uint64_t s, uint32_t g, uint8_t **blk, uint64_t *unread,
			  uint64_t *cbad)
{
	const struct layout *l = &rf->lay;
	uint32_t chunk = l->chunk, n = l->k + l->m;
	bool incomplete = false;
	*unread = *cbad = 0;
	for (uint32_t i = 0; i < n && !incomplete; i++) {
		uint32_t mj = layout_slot_member(l, s, g, i);
		if (!rfile_usable_at(rf, mj, s))
			incomplete = true;
		else if (member_pread(rf->a, mj, rf->fd[mj], blk[i], chunk, s * chunk) < 0)
			*unread |= 1ull << i;
	}
	if (rf->sums) {
		/* each chunk read against the row's record: the wrong side named */
		uint32_t *crc = malloc((size_t)csum_per_row(l) * 4);
		if (crc) {
			row_load(rf, s, g, crc);
			for (uint32_t i = 0; i < n; i++) {
				uint32_t mj = layout_slot_member(l, s, g, i);
				if (rfile_usable_at(rf, mj, s) && !(*unread >> i & 1) &&
				    !csum_slot_matches(l, crc, i, 0, chunk / CSUM_BLOCK, blk[i]))
					*cbad |= 1ull << mj;
			}
			free(crc);
		}
		if (*cbad)
			return true;
	}
	if (incomplete)
		return false;
	if (l->red == RED_MIRROR) {
		if (n - (uint32_t)__builtin_popcountll(*unread) < 2)
			return false;
		uint32_t first = (uint32_t)__builtin_ctzll(~*unread);
		for (uint32_t c = first + 1; c < n; c++)
			if (!(*unread >> c & 1) && memcmp(blk[first], blk[c], chunk) != 0)
				return true;
		return false;
	}
	/* the redundancy read, from the data read */
	struct recon_plan p;
	uint64_t data = 0, want = recon_all(l) & ~((1ull << l->k) - 1) & ~*unread;
	for (uint32_t i = 0; i < l->k; i++)
		if (!(*unread >> i & 1))
			data |= 1ull << layout_slot_member(l, s, g, i);
	if (!want || recon_plan(&p, l, s, g, data, want, 0) != RECON_ENCODE)
		return false;
	/* bytes past the logical end must read as zero */
	for (uint32_t j = 0; j < l->k; j++) {
		uint64_t cbeg = layout_unmap(l, s, layout_data_index(l, g, j), 0);
		if (cbeg + chunk > rf->size) {
			for (uint64_t x = cbeg >= rf->size ? 0 : rf->size - cbeg; x < chunk; x++)
				if (blk[j][x] != 0)
					return true;
		}
	}
	if (p.pm == (int)l->m && want == p.calc)	/* all of it read */
		return parity_verify(l->k, l->m, chunk, blk) != 0;
	uint8_t *enc[LAYOUT_MAX_WIDTH];
	for (uint32_t i = 0; i < n; i++)
		enc[i] = i < l->k ? blk[i] : blk[n + i - l->k];
	if (recon_compute(&p, chunk, enc) < 0)
		return false;
	for (uint32_t i = l->k; i < n; i++)
		if ((want >> i & 1) && memcmp(blk[i], enc[i], chunk) != 0)
			return true;
	return false;
}

long stripe_verify_range(struct rfile *rf, uint64_t s0, uint64_t s1,
			 void (*report)(void *ctx, uint64_t stripe, uint32_t group, uint64_t members), void *ctx,
			 uint64_t *unreadable)
{
	const struct layout *l = &rf->lay;
	uint64_t sbytes = layout_stripe_data_bytes(l);
	uint64_t nstripes = (rf->size + sbytes - 1) / sbytes;
	uint32_t chunk = l->chunk, n = l->k + l->m;
	if (s1 < nstripes)
		nstripes = s1;
	long bad = 0;

	if (l->red == RED_NONE)
		return 0;
	/* n chunks read, then m computed (a group with redundancy that
	 * cannot be read is compared with the redundancy that can) */
	uint8_t *scr = scratch((size_t)(n + l->m) * chunk);
	if (!scr)
		return -ENOMEM;
	uint8_t *blk[2 * LAYOUT_MAX_WIDTH];
	for (uint32_t i = 0; i < n + l->m; i++)
		blk[i] = scr + (size_t)i * chunk;
	for (uint64_t s = s0; s < nstripes; s++) {
		for (uint32_t g = 0; g < l->groups; g++) {
			uint64_t unread, cbad;	/* slots that could not be read; members wrong */
			bool differs = group_differs(rf, s, g, blk, &unread, &cbad);
			if (unread && unreadable)
				(*unreadable)++;
			if (differs) {
				bad++;
				if (report)
					report(ctx, s, g, cbad);
			}
		}
	}
	return bad;
}

/*
 * Reconstruct member j's chunk of stripe s from the online members and
 * write it to rf->fd[j].  An all-zero chunk is not written (holes stay
 * holes; the final ftruncate gives the shard its length).  Returns the
 * bytes written (0 or chunk) or -errno.  Caller holds rf->rw exclusively.
 */
int stripe_rows_believed(struct rfile *rf, uint32_t lj, uint64_t s0, uint32_t ns, uint64_t *gens, uint32_t *crcs)
{
	const struct layout *l = &rf->lay;
	uint32_t per = csum_per_row(l), g, slot;
	int r = rows_load(rf, s0, ns, lj, gens, crcs);
	for (uint32_t x = 0; r == 0 && x < ns; x++) {
		/* (what row_load() would answer: the record kept first) */
		layout_member_slot(l, s0 + x, lj, &g, &slot);
		rowc_get(rf, s0 + x, g, &gens[x], crcs + (size_t)x * per, NULL);
	}
	return r;
}

int stripe_rows_rebuilt(struct rfile *rf, uint32_t target, uint64_t s0, uint32_t ns, const uint64_t *gens,
			const uint32_t *crcs, bool verify)
{
	const struct layout *l = &rf->lay;
	size_t R = csum_record_size(l), len = (size_t)ns * R;
	uint32_t per = csum_per_row(l);
	int fd = sums_fd(rf, target), r = 0;
	if (fd < 0)
		return 0;
	uint8_t *buf = malloc(verify ? 2 * len : len);
	if (!buf)
		return -ENOMEM;
	for (uint32_t x = 0; x < ns; x++) {
		if (gens[x])
			csum_encode(buf + (size_t)x * R, R, gens[x], crcs + (size_t)x * per, per);
		else
			memset(buf + (size_t)x * R, 0, R);	/* (a hole: no record, not an old one) */
	}
	if (verify) {
		/* second pass: rewritten only where the target's differ (as
		 * they do after a partial write of a row since the first pass
		 * that did not write lj's chunk: lj keeps its older record) */
		r = csum_read_rows(fd, l, s0, ns, buf + len);
		if (r == 0 && memcmp(buf, buf + len, len) == 0)
			goto out;
	}
	r = csum_write_rows(fd, l, s0, ns, buf);
	if (r < 0)
		log_err("member %u '%s': cannot write the checksum records of stripes %" PRIu64 "-%" PRIu64
			" of file %016" PRIx64 ": %s", target, rf->a->m[target].path, s0, s0 + ns - 1, rf->id,
			strerror(-r));
out:
	free(buf);
	return r;
}

int stripe_sums_trim(struct rfile *rf, uint32_t target)
{
	uint64_t sbytes = layout_stripe_data_bytes(&rf->lay);
	int fd = rf->sums ? sums_fd(rf, target) : -1;
	return fd < 0 ? 0 : csum_truncate(fd, &rf->lay, (rf->size + sbytes - 1) / sbytes);
}

long stripe_rebuild_chunk(struct rfile *rf, uint64_t s, uint32_t j, uint32_t target, bool verify, bool *fixed,
			  int *target_err)
{
	const struct layout *l = &rf->lay;
	uint32_t chunk = l->chunk, n = l->k + l->m, g, slot;
	uint8_t *blk[LAYOUT_MAX_WIDTH];
	int ret;

	if ((l->red == RED_NONE && target == j) || rf->fd[target] < 0)
		return -EINVAL;
	uint8_t *scr = scratch((size_t)n * chunk);
	if (!scr)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		blk[i] = scr + (size_t)i * chunk;
	layout_member_slot(l, s, j, &g, &slot);
	/* j's chunk as it is when j can be read and is not the target (a
	 * replacement in place), else from the other members */
	uint64_t readable = readable_at(rf, s) & ~(target == j ? 1ull << j : 0);
	struct recon_plan p;
	recon_plan(&p, l, s, g, readable, 1ull << slot, 0);
	ret = recon_run(rf, &p, 0, chunk, blk, 0, 0);
	uint8_t *out = blk[slot];
	if (ret < 0)
		return ret;
	if (rf->sums) {
		/* the row's record goes with the chunk (verified against it) */
		uint32_t *crc = malloc((size_t)csum_per_row(l) * 4);
		if (!crc)
			return -ENOMEM;
		uint64_t gen = row_load(rf, s, g, crc);
		int fd = sums_fd(rf, target);
		if (gen)
			put_row_on(rf, target, s, gen, crc);
		else if (fd >= 0)
			csum_clear_row(fd, l, s);	/* (a hole: no record, not an old one) */
		free(crc);	/* (the rows past the end: stripe_sums_trim() at the end) */
	}
	if (verify) {
		/* second pass: compare with what the new member holds */
		uint8_t *have = scratch_extra(chunk);
		if (!have)
			return -ENOMEM;
		ssize_t r = member_pread(rf->a, target, rf->fd[target], have, chunk, s * chunk);
		if (r >= 0 && memcmp(have, out, chunk) == 0)
			return 0;
		*fixed = true;
	} else {
		bool zero = true;
		for (uint32_t i = 0; i < chunk && zero; i += 8)
			zero = *(uint64_t *)(out + i) == 0;
		if (zero) {
			/* a hole stays a hole, unless the new shard holds
			 * something else there (a leftover of an older file) */
			uint8_t *have = scratch_extra(chunk);
			if (!have)
				return -ENOMEM;
			ssize_t r = member_pread(rf->a, target, rf->fd[target], have, chunk, s * chunk);
			bool same = r >= 0;
			for (ssize_t i = 0; i < r && same; i++)
				same = have[i] == 0;
			if (same)
				return 0;
		}
	}
	ret = member_pwrite(rf->a, target, rf->fd[target], out, chunk, s * chunk);
	if (ret < 0 && target_err)
		*target_err = ret;
	return ret < 0 ? ret : (long)chunk;
}

/* ------------------------------------------------ allocation and holes */

/*
 * fallocate(2) and lseek(SEEK_DATA/SEEK_HOLE) on the shards.  A chunk
 * sits at stripe * chunk in every member's shard (dense shards), so the
 * shard range of stripes [s0, s1) is the same on every member, and a
 * stripe whose chunk is a hole on every member that holds valid data for
 * it reads as zeros: those members are at least the group's data count,
 * and k chunks of zeros make every other chunk of the group zero (parity
 * of zeros is zeros, for XOR, P+Q and Reed-Solomon alike).
 */

/* The shards have a hole from file offset `at` on: a write there
 * allocates again (reserve()) */
static void dense_below(struct rfile *rf, uint64_t at)
{
	uint64_t d = __atomic_load_n(&rf->dense, __ATOMIC_ACQUIRE);
	if (d != RF_DENSE_UNKNOWN && d > at)
		__atomic_store_n(&rf->dense, at, __ATOMIC_RELEASE);
}

/* A member refused the allocation: the part past each shard's length
 * len[j] that the members before `upto` allocated is given back, so
 * that nothing stays half done (below it the bytes are the file's). */
static void allocate_undo(struct rfile *rf, uint32_t upto, const uint64_t *len, uint64_t to)
{
	uint64_t low = to;
	for (uint32_t j = 0; j < upto; j++)
		if (len[j] < to && writable(rf, j)) {
			fallocate(rf->fd[j], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)len[j],
				  (off_t)(to - len[j]));
			low = len[j] < low ? len[j] : low;
		}
	dense_below(rf, low / rf->lay.chunk * layout_stripe_data_bytes(&rf->lay));
}

int stripe_allocate(struct rfile *rf, uint64_t off, uint64_t end)
{
	const struct layout *l = &rf->lay;
	uint64_t sbytes = layout_stripe_data_bytes(l), len[LAYOUT_MAX_WIDTH];
	uint64_t from = off / sbytes * l->chunk, to = (end + sbytes - 1) / sbytes * l->chunk;
	int ret = 0;
	if (end <= off)
		return 0;
	pthread_rwlock_wrlock(&rf->rw);	/* (the undo must not cut a write) */
	for (uint32_t j = 0; j < rf->a->width && ret == 0; j++) {
		struct stat st;
		len[j] = to;
		if (!writable(rf, j))
			continue;
		if (fstat(rf->fd[j], &st) == 0)
			len[j] = (uint64_t)st.st_size;
		if (fallocate(rf->fd[j], FALLOC_FL_KEEP_SIZE, (off_t)from, (off_t)(to - from)) == 0 ||
		    (errno != ENOSPC && errno != EDQUOT && errno != EFBIG))
			continue;	/* (a member that cannot allocate: its writes will tell) */
		ret = -errno;
		allocate_undo(rf, j, len, to);
	}
	pthread_rwlock_unlock(&rf->rw);
	return ret;
}

/* The shard ranges of the whole stripes inside file bytes [off, end)
 * given back on every member (their chunks hold zeros already); the
 * stripe across the file's end counts as whole (past the end is zeros). */
static void punch_stripes(struct rfile *rf, uint64_t off, uint64_t end)
{
	const struct layout *l = &rf->lay;
	uint64_t sbytes = layout_stripe_data_bytes(l), size = rf->size;
	uint64_t s0 = (off + sbytes - 1) / sbytes, s1 = end >= size ? (size + sbytes - 1) / sbytes : end / sbytes;
	if (s1 <= s0)
		return;
	for (uint32_t j = 0; j <= SHADOW; j++) {
		if (j == rf->a->width)
			j = SHADOW;
		if ((j == SHADOW ? rf->fd[j] >= 0 : writable(rf, j)))
			fallocate(rf->fd[j], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(s0 * l->chunk),
				  (off_t)((s1 - s0) * l->chunk));
	}
	dense_below(rf, s0 * sbytes);
}

/* The first stripe u >= s (below ns) whose chunk has no data in shard
 * fd; ns when there is none or the member cannot tell. */
static uint64_t next_hole_stripe(int fd, uint64_t s, uint64_t chunk, uint64_t ns)
{
	while (s < ns) {
		off_t d = lseek(fd, (off_t)(s * chunk), SEEK_DATA);
		if (d < 0)
			return errno == ENXIO ? s : ns;
		if ((uint64_t)d >= (s + 1) * chunk)
			return s;
		off_t h = lseek(fd, d, SEEK_HOLE);
		if (h < 0)
			return ns;
		s = ((uint64_t)h + chunk - 1) / chunk;
	}
	return ns;
}

/* The first stripe u >= s (below ns) some shard holds data in */
static uint64_t next_data_stripe(const struct rfile *rf, uint64_t s, uint64_t ns)
{
	uint64_t best = ns, chunk = rf->lay.chunk;
	for (uint32_t j = 0; j < rf->a->width && best > s; j++) {
		if (!rfile_usable_at(rf, j, s))
			continue;
		off_t d = lseek(rf->fd[j], (off_t)(s * chunk), SEEK_DATA);
		if (d < 0 && errno != ENXIO)
			return s;	/* (cannot tell: data) */
		if (d >= 0 && (uint64_t)d / chunk < best)
			best = (uint64_t)d / chunk;
	}
	return best;
}

/* The first stripe t >= s (below ns) that is a hole on every member
 * with valid data for it; ns when there is none */
static uint64_t hole_stripe_from(const struct rfile *rf, uint64_t s, uint64_t ns)
{
	uint64_t t = s;
	for (bool moved = true; moved && t < ns;) {
		moved = false;
		for (uint32_t j = 0; j < rf->a->width && t < ns; j++) {
			if (!rfile_usable_at(rf, j, t))
				continue;
			uint64_t u = next_hole_stripe(rf->fd[j], t, rf->lay.chunk, ns);
			moved |= u > t;
			t = u;
		}
	}
	return t;
}

int64_t stripe_seek(struct rfile *rf, uint64_t off, int whence)
{
	uint64_t sbytes = layout_stripe_data_bytes(&rf->lay);
	pthread_rwlock_rdlock(&rf->rw);
	uint64_t size = rf->size, ns = (size + sbytes - 1) / sbytes, s = off / sbytes, t;
	int64_t ret = -ENXIO;
	if (off < size && whence == SEEK_DATA) {
		t = next_data_stripe(rf, s, ns);
		if (t < ns)
			ret = (int64_t)(t > s ? t * sbytes : off);
	} else if (off < size) {
		t = hole_stripe_from(rf, s, ns);
		ret = t >= ns ? (int64_t)size : (int64_t)(t > s ? t * sbytes : off);
	}
	pthread_rwlock_unlock(&rf->rw);
	return ret;
}

/* The checksum records of stripes [s0, s1) made those of zero chunks,
 * with new generations, on every member (as a write of zeros makes
 * them); zeros: at least a chunk of zero bytes.  0 or -ENOMEM. */
static int rows_zeroed(struct rfile *rf, uint64_t s0, uint64_t s1, const uint8_t *zeros)
{
	const struct layout *l = &rf->lay;
	uint32_t per = csum_per_row(l), ns = (uint32_t)(s1 - s0);
	size_t rows = (size_t)ns * l->groups;
	uint64_t *gens = malloc(rows * sizeof(*gens));
	uint32_t *crcs = malloc((rows + 1) * per * 4);
	if (!gens || !crcs) {
		free(gens);
		free(crcs);
		return -ENOMEM;
	}
	uint8_t *blk[LAYOUT_MAX_WIDTH];
	for (uint32_t i = 0; i < l->k + l->m; i++)
		blk[i] = (uint8_t *)zeros;
	sum_slots(l, blk, l->chunk, crcs + rows * per, 0, recon_all(l));	/* (one row's, copied) */
	rows_newest(rf, s0, ns, gens);
	for (size_t r = 0; r < rows; r++) {
		gens[r] = next_gen(gens[r]);
		memcpy(crcs + r * per, crcs + rows * per, (size_t)per * 4);
	}
	for (uint32_t j = 0; j < rf->a->width; j++)
		rows_put(rf, j, s0, ns, gens, crcs);
	free(gens);
	free(crcs);
	return 0;
}

/* Whole stripes [s0, s1) made holes on every member without writing
 * zeros first: only while every member holds its shard and takes
 * writes (no guard, no missed write, no replacement to follow), the
 * file marked dirty first (a crash in the middle is resynced), the
 * checksum records after the punches.  False, with nothing but holes
 * in chunks of zeros-to-be made, when a member cannot punch: the caller
 * writes zeros. */
static bool punch_fast(struct rfile *rf, uint64_t s0, uint64_t s1, const uint8_t *zeros)
{
	uint64_t chunk = rf->lay.chunk;
	if (s1 <= s0 || array_state(rf->a) != ARRAY_OPTIMAL || rf->fd[SHADOW] >= 0 || rf->damaged ||
	    stripe_mark_dirty(rf) < 0)
		return false;
	for (uint32_t j = 0; j < rf->a->width; j++)
		if (!writable(rf, j) || !rfile_usable_at(rf, j, s0))
			return false;
	note_written(rf, s1);
	dense_below(rf, s0 * layout_stripe_data_bytes(&rf->lay));
	for (uint32_t j = 0; j < rf->a->width; j++)
		if (fallocate(rf->fd[j], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(s0 * chunk),
			      (off_t)((s1 - s0) * chunk)) < 0)
			return false;
	return !rf->sums || rows_zeroed(rf, s0, s1, zeros) == 0;
}

/* Zeros over [off, end), rf->rw held exclusively.  Stripes that are
 * holes on the members (inside the file) read as zeros already: only
 * the others are written, so that zeroing or punching a sparse range
 * takes no room. */
static int zero_runs(struct rfile *rf, const void *zeros, uint64_t off, uint64_t end)
{
	uint64_t sbytes = layout_stripe_data_bytes(&rf->lay), ns = (rf->size + sbytes - 1) / sbytes;
	uint64_t lim = end < rf->size ? end : rf->size;	/* (past the end: written, the size grows) */
	for (uint64_t pos = off; pos < end;) {
		uint64_t h = pos < lim ? hole_stripe_from(rf, pos / sbytes, ns) : ns;
		uint64_t wend = h < ns && h * sbytes < lim ? h * sbytes : end;
		if (wend > pos) {
			ssize_t r = stripe_write_locked(rf, zeros, wend - pos, pos);
			if (r < 0)
				return (int)r;
		}
		if (wend == end)
			break;
		uint64_t d = next_data_stripe(rf, h, ns);
		pos = d * sbytes > pos ? (d * sbytes < lim ? d * sbytes : lim) : pos;
		if (pos == lim && lim == end)
			break;
	}
	return 0;
}

/* A punch's whole stripes (punch_stripes()'s) go straight to holes when
 * punch_fast() can; the rest is written with zeros, and a punch then
 * gives back the whole stripes of what was written. */
int stripe_zero_locked(struct rfile *rf, const void *zeros, uint64_t off, uint64_t end, bool punch)
{
	uint64_t sbytes = layout_stripe_data_bytes(&rf->lay), size = rf->size;
	uint64_t s0 = (off + sbytes - 1) / sbytes, s1 = end >= size ? (size + sbytes - 1) / sbytes : end / sbytes;
	int r;
	if (punch && s1 > s0 && punch_fast(rf, s0, s1, zeros)) {
		r = off < s0 * sbytes ? zero_runs(rf, zeros, off, s0 * sbytes) : 0;
		if (r == 0 && end > s1 * sbytes)
			r = zero_runs(rf, zeros, s1 * sbytes, end);
		return r;
	}
	r = zero_runs(rf, zeros, off, end);
	if (r == 0 && punch)
		punch_stripes(rf, off, end);
	return r;
}
