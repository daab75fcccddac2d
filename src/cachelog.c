/*
 * cachelog.c - the persistent cache log of bbu=file:PATH (see cachelog.h).
 *
 * Layout (little-endian, docs/format.md "Cache log"):
 *   [0, 4096)          header: magic "RAIDFSL1", version, array uuid, ring
 *                      size, tail (virtual offset, sequence), crc32
 *   [4096, 4096+ring)  records; a record at virtual offset v sits at
 *                      4096 + v % ring and never wraps: when it does not
 *                      fit before the end of the ring it starts the next lap
 *   then               guard slots (guard.h; count and size in the header,
 *                      0 in a log of an older raidfs)
 * Record: 64-byte header (magic, kind, seq, v, file id, offset or size,
 * length, data crc32, header crc32), then the data, padded to 512 bytes.
 * Replay follows the chain from the tail: each record must carry the next
 * sequence number and its own virtual offset; the first one that does not
 * (torn, never written, or an older lap) ends the log.
 *
 * The log sits below the cache: it never calls cache.c.  What it needs to
 * know from it (the tail the dirty lines need, whether any still needs a
 * record) and what it asks of it (write old lines out, end write-back when
 * the log fails) go through the struct cachelog_ops registered at
 * cachelog_open().
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "array.h"
#include "cachelog.h"
#include "file.h"
#include "stripe.h"
#include "guard.h"
#include "member.h"
#include "parity.h"
#include "util.h"

#define LOG_MAGIC "RAIDFSL1"
#define LOG_VERSION 1
#define HDR_BYTES 4096u
#define REC_MAGIC 0x31474c52u	/* "RLG1" */
#define REC_HDR 64u
#define REC_ALIGN 512u
enum { REC_WRITE = 1, REC_TRUNCATE = 2 };

struct rec {
	uint32_t kind;
	uint64_t seq, fid, off;
	uint32_t len;
	uint64_t pos;			/* file offset of the data */
};

static struct {
	pthread_mutex_t lock, sync_lock;
	struct array *a;
	int fd, gfd;			/* the log; the same file for the guard slots */
	char path[4096];
	uint8_t uuid[16];
	uint64_t ring;
	uint32_t nguards;		/* guard slots after the ring */
	bool had_guards;		/* the log of the last run had them */
	bool was_there;			/* the log of the last run was found */
	uint64_t id;			/* made with the log: which log this is */
	uint64_t gstride;		/* their size (a multiple of 4096) */
	uint64_t head_v, seq;		/* next record */
	uint64_t tail_v, tail_seq;	/* durable in the header */
	uint64_t synced_v;		/* everything before it is fdatasynced */
	/* the log failed (its first error, negative; cachelog_failed()), and
	 * then retired (retire()) */
	int failed;
	bool retired;
	/* fault injection on its record writes and fdatasyncs */
	pthread_mutex_t fault_lock;
	struct fault_rule rule[2];
	uint32_t latency_ms;		/* before each record write and fdatasync */
	bool faults;
	/* the cache above (cachelog_open()) */
	struct cachelog_ops ops;
	/* replay */
	struct rec *recs;
	size_t nrecs;
	uint64_t replay_bytes;
} L = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.sync_lock = PTHREAD_MUTEX_INITIALIZER,
	.fault_lock = PTHREAD_MUTEX_INITIALIZER,
	.fd = -1,
	.gfd = -1,
};

/* ------------------------------------------------------- I/O, injection */

enum { LOG_WRITE, LOG_FSYNC };
static const char *const log_op[2] = { "write", "fsync" };

static int log_inject(int op)
{
	if (!__atomic_load_n(&L.faults, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&L.fault_lock);
	int r = fault_rule_hit(&L.rule[op]);
	uint32_t lat = L.latency_ms;
	pthread_mutex_unlock(&L.fault_lock);
	if (lat)
		util_sleep_ms(lat);
	return r;
}

static int log_pwritev(const struct iovec *iov, int n, uint64_t off)
{
	int r = log_inject(LOG_WRITE);
	return r < 0 ? r : io_pwritev(L.fd, iov, n, off);
}

static int log_fdatasync(void)
{
	int r = log_inject(LOG_FSYNC);
	return r < 0 ? r : fdatasync(L.fd) < 0 ? -errno : 0;
}

int cachelog_inject(int argc, char **argv, char *err, size_t errlen)
{
	struct fault_rule rule[2];
	pthread_mutex_lock(&L.fault_lock);
	memcpy(rule, L.rule, sizeof(rule));
	uint32_t lat = L.latency_ms;
	pthread_mutex_unlock(&L.fault_lock);
	if (argc == 1 && !strcmp(argv[0], "clear")) {
		memset(rule, 0, sizeof(rule));
		lat = 0;
	} else if (argc >= 1 && !strcmp(argv[0], "latency")) {
		char *end;
		long ms = argc == 2 ? strtol(argv[1], &end, 10) : -1;
		if (argc != 2 || *end || ms < 0 || ms > 60000) {
			snprintf(err, errlen, "inject: latency needs milliseconds (0..60000), for example 'latency 20'");
			return -EINVAL;
		}
		lat = (uint32_t)ms;
	} else {
		int op = argc < 1 ? -1 : !strcmp(argv[0], "write-error") ? LOG_WRITE : !strcmp(argv[0], "fsync-error") ? LOG_FSYNC : -1;
		if (op < 0) {
			snprintf(err, errlen, "inject: the cache log takes write-error, fsync-error, latency MS or clear");
			return -EINVAL;
		}
		if (fault_rule_parse(argc - 1, argv + 1, &rule[op], err, errlen) < 0)
			return -EINVAL;
	}
	pthread_mutex_lock(&L.fault_lock);
	memcpy(L.rule, rule, sizeof(rule));
	L.latency_ms = lat;
	__atomic_store_n(&L.faults, rule[0].mode != FM_OFF || rule[1].mode != FM_OFF || lat, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&L.fault_lock);
	char args[128];
	util_join_words(args, sizeof(args), argc, argv);
	log_warn("cache log '%s': fault injection: %s", L.path, args);
	return 0;
}

void cachelog_inject_describe(char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = '\0';
	pthread_mutex_lock(&L.fault_lock);
	for (int i = 0; i < 2; i++)
		off += fault_rule_describe(&L.rule[i], log_op[i], off ? ", " : "", buf + off, off < len ? len - off : 0);
	if (L.latency_ms)
		snprintf(buf + off, off < len ? len - off : 0, "%slatency %u ms", off ? ", " : "", L.latency_ms);
	pthread_mutex_unlock(&L.fault_lock);
}

bool cachelog_failed(void)
{
	return __atomic_load_n(&L.failed, __ATOMIC_ACQUIRE) != 0;
}

bool cachelog_retired(void)
{
	return __atomic_load_n(&L.retired, __ATOMIC_ACQUIRE);
}

int cachelog_error(void)
{
	return __atomic_load_n(&L.failed, __ATOMIC_ACQUIRE);
}

/*
 * The log failed (err, negative, doing `what`).  After a failed fdatasync
 * the kernel may have dropped records written before it while later
 * fdatasyncs succeed - it reports the error once per open file: so the
 * failure is set (set_failed()) before anyone else may sync, under the
 * sync lock, and from then on no record is written or committed.  The
 * first time, write-back ends as with a failed battery
 * (announce_failed(): ops.failed), with no log lock held.
 */
static bool set_failed(int err)
{
	int none = 0;
	return __atomic_compare_exchange_n(&L.failed, &none, err, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static void announce_failed(int err, const char *what)
{
	log_err("cache log '%s': %s failed: %s; write-back ends, as when a controller's battery fails: "
		"the cache is written out to the members, and the log is not used again until the next mount",
		L.path, what, strerror(-err));
	if (L.ops.failed)
		L.ops.failed(L.ops.arg);
}

static void log_failed(int err, const char *what)
{
	if (set_failed(err))
		announce_failed(err, what);
}

static uint64_t rec_size(uint32_t len)
{
	return (REC_HDR + len + REC_ALIGN - 1) / REC_ALIGN * REC_ALIGN;
}

static uint64_t phys(uint64_t v)
{
	return HDR_BYTES + v % L.ring;
}

/* ---------------------------------------------------------------- header */

static void hdr_encode(uint8_t b[64], uint64_t ring, uint64_t tv, uint64_t ts)
{
	memset(b, 0, 64);
	memcpy(b, LOG_MAGIC, 8);
	put_le32(b + 8, LOG_VERSION);
	put_le32(b + 12, L.nguards);
	memcpy(b + 16, L.uuid, 16);
	put_le64(b + 32, ring);
	put_le64(b + 40, tv);
	put_le64(b + 48, ts);
	put_le32(b + 56, (uint32_t)(L.gstride / 4096));
	put_le32(b + 60, parity_crc32(0, b, 60));
}

/* Write the header with the tail (tv, ts), durably.  Log lock held. */
static int write_hdr_locked(uint64_t tv, uint64_t ts)
{
	uint8_t b[64];
	hdr_encode(b, L.ring, tv, ts);
	struct iovec v = { b, sizeof(b) };
	int r = log_pwritev(&v, 1, 0);
	if (r == 0)
		r = log_fdatasync();
	if (r < 0) {
		log_err("cache log '%s': cannot write its header: %s", L.path, strerror(-r));
		return r;
	}
	L.tail_v = tv;
	L.tail_seq = ts;
	return 0;
}

/* ----------------------------------------------------------------- open */

static bool rec_decode(const uint8_t *b, uint64_t v, uint64_t seq, struct rec *r)
{
	if (get_le32(b) != REC_MAGIC || get_le32(b + 60) != parity_crc32(0, b, 60))
		return false;
	r->kind = get_le32(b + 4);
	r->seq = get_le64(b + 8);
	uint64_t rv = get_le64(b + 16);
	r->fid = get_le64(b + 24);
	r->off = get_le64(b + 32);
	r->len = get_le32(b + 40);
	if (r->seq != seq || rv != v || (r->kind != REC_WRITE && r->kind != REC_TRUNCATE) ||
	    (r->kind == REC_TRUNCATE && r->len) || rec_size(r->len) > L.ring)
		return false;
	return true;
}

/* Read the chain from the tail into L.recs. */
static int scan(void)
{
	uint64_t v = L.tail_v, seq = L.tail_seq;
	bool lapped = false;
	uint8_t hb[REC_HDR];
	uint8_t *data = NULL;
	size_t cap = 0, dcap = 0;
	while (v - L.tail_v < L.ring) {
		struct rec r;
		ssize_t n = io_pread(L.fd, hb, REC_HDR, phys(v));
		bool ok = n == REC_HDR && rec_decode(hb, v, seq, &r);
		if (ok && r.len) {
			if (dcap < r.len) {
				free(data);
				dcap = r.len;
				data = malloc(dcap);
				if (!data)
					return -ENOMEM;
			}
			n = io_pread(L.fd, data, r.len, phys(v) + REC_HDR);
			ok = n == (ssize_t)r.len && parity_crc32(0, data, r.len) == get_le32(hb + 44);
		}
		if (!ok) {
			/* the record may have started the next lap */
			if (lapped || v % L.ring == 0)
				break;
			v += L.ring - v % L.ring;
			lapped = true;
			continue;
		}
		lapped = false;
		if (L.nrecs == cap) {
			cap = cap ? cap * 2 : 256;
			struct rec *nr = realloc(L.recs, cap * sizeof(*nr));
			if (!nr) {
				free(data);
				return -ENOMEM;
			}
			L.recs = nr;
		}
		r.pos = phys(v) + REC_HDR;
		L.recs[L.nrecs++] = r;
		L.replay_bytes += r.len;
		v += rec_size(r.len);
		seq++;
	}
	free(data);
	L.head_v = v;
	L.seq = seq;
	return 0;
}

/* The log's identity, at [64, 76) of the header block: u64, crc32.  Made
 * once, when a log without one is opened; the members keep the id of the
 * log whose records their files' cache marks rely on (array.h). */
#define ID_AT 64
static int read_or_make_id(void)
{
	uint8_t b[12];
	if (io_pread(L.fd, b, sizeof(b), ID_AT) == sizeof(b) && get_le64(b) &&
	    get_le32(b + 8) == parity_crc32(0, b, 8)) {
		L.id = get_le64(b);
		return 0;
	}
	L.id = random_u64() | 1;
	put_le64(b, L.id);
	put_le32(b + 8, parity_crc32(0, b, 8));
	int r = io_pwrite(L.fd, b, sizeof(b), ID_AT);
	if (r == 0 && fdatasync(L.fd) < 0)
		r = -errno;
	return r;
}

uint64_t cachelog_id(void)
{
	return L.id;
}

/* A guard slot could not be written: the log's disk is failing (its
 * slots are in the same file). */
static void guard_slot_failed(int err)
{
	log_failed(err, "the write of a guard slot");
}

/* The guard slots after the ring. */
static void guards(struct guard_store *st)
{
	memset(st, 0, sizeof(*st));
	/* (an open file of their own: the kernel reports a write-back error
	 * once per open file, and a guard's fdatasync must not take the
	 * one a record's commit has to see) */
	st->fd = L.gfd >= 0 ? L.gfd : L.fd;
	st->base = HDR_BYTES + L.ring;
	st->nslots = L.nguards;
	st->stride = L.gstride;
	st->durable = true;
	st->failed = guard_slot_failed;
}

/* A new log: an empty ring, its guard slots in use, its id made. */
static int open_new(uint64_t stride)
{
	struct guard_store gst;
	L.head_v = L.tail_v = 0;
	L.seq = L.tail_seq = 1;
	L.nguards = GUARD_SLOTS;
	L.gstride = stride;
	guards(&gst);
	guard_use(&gst);
	int r = write_hdr_locked(0, 1);
	return r < 0 ? r : read_or_make_id();
}

/* The header of a log that is there: a raidfs log of this array, with a
 * sane ring; its tail and slots taken.  0, or -EINVAL with err set. */
static int read_header(const struct array *a, const char *path, char *err, size_t errlen)
{
	uint8_t b[64];
	if (io_pread(L.fd, b, sizeof(b), 0) != sizeof(b) || memcmp(b, LOG_MAGIC, 8) ||
	    get_le32(b + 60) != parity_crc32(0, b, 60) || get_le32(b + 8) != LOG_VERSION) {
		snprintf(err, errlen, "'%s' is not a raidfs cache log (or its header is damaged); give another path, or remove it if it holds nothing you need",
			 path);
		goto refuse;
	}
	if (memcmp(b + 16, a->sb.uuid, 16)) {
		snprintf(err, errlen, "the cache log '%s' belongs to another array; give each array its own log",
			 path);
		goto refuse;
	}
	L.ring = get_le64(b + 32);
	L.tail_v = get_le64(b + 40);
	L.tail_seq = get_le64(b + 48);
	L.nguards = get_le32(b + 12);
	L.gstride = (uint64_t)get_le32(b + 56) * 4096;
	L.had_guards = L.nguards > 0 && L.gstride > 0;
	L.was_there = true;
	if (L.ring < REC_ALIGN || L.ring % REC_ALIGN) {
		snprintf(err, errlen, "the cache log '%s' has a bad ring size", path);
		return -EINVAL;
	}
	return 0;
refuse:
	close(L.fd);
	close(L.gfd);
	L.fd = L.gfd = -1;
	return -EINVAL;
}

/* The guard slots of the last run put back (writes into degraded stripes
 * cut short; a finished one's slot was cleared), and a new ring or slot
 * size taken once nothing is needed from the old: no record, no slot
 * (the slots move with the ring). */
static int recover_slots(const struct array *a, const char *path, uint64_t want_ring, uint64_t want_stride,
			 char *err, size_t errlen)
{
	struct guard_store gst;
	guards(&gst);
	bool slots_ok = L.nguards == GUARD_SLOTS && L.gstride == want_stride;
	if (slots_ok)
		guard_use(&gst);
	int ng = guard_recover(&gst, slots_ok);
	if (ng > 0)
		log_warn("array '%s': the cache log '%s' holds %d guarded chunk%s of writes into degraded stripes that were cut short: "
			 "they are put back first", a->sb.name, path, ng, ng == 1 ? "" : "s");
	bool resize = !L.nrecs && ng == 0 && want_ring != L.ring;
	if (!slots_ok && ng > 0) {
		snprintf(err, errlen, "the cache log '%s' holds guard slots of another size than this array needs (%" PRIu64
			 " bytes, not %" PRIu64 ")", path, L.gstride, want_stride);
		return -EINVAL;
	}
	if (!slots_ok || resize) {
		if (resize) {
			L.ring = want_ring;
			L.tail_v = L.head_v;
			L.tail_seq = L.seq;
		}
		L.nguards = GUARD_SLOTS;
		L.gstride = want_stride;
		int r = write_hdr_locked(L.tail_v, L.tail_seq);
		if (r < 0)
			return r;
		guards(&gst);
		guard_use(&gst);
	}
	return 0;
}

int cachelog_open(struct array *a, const char *path, uint64_t ring_bytes, const struct cachelog_ops *ops,
		  char *err, size_t errlen)
{
	if (ops)
		L.ops = *ops;
	snprintf(L.path, sizeof(L.path), "%s", path);
	L.a = a;
	memcpy(L.uuid, a->sb.uuid, 16);
	L.ring = (ring_bytes + REC_ALIGN - 1) / REC_ALIGN * REC_ALIGN;
	L.fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (L.fd < 0) {
		snprintf(err, errlen, "cannot open the cache log '%s': %s (is its directory there and writable?)",
			 path, strerror(errno));
		return -errno;
	}
	L.gfd = open(path, O_RDWR | O_CLOEXEC);
	struct stat st;
	uint64_t want_stride = guard_stride(&a->lay);
	if (fstat(L.fd, &st) < 0 || st.st_size == 0)
		return open_new(want_stride);
	uint64_t want_ring = L.ring;
	int r = read_header(a, path, err, errlen);
	if (r < 0)
		return r;
	r = scan();
	if (r == 0)
		r = read_or_make_id();
	if (r < 0) {
		snprintf(err, errlen, "cannot read the cache log '%s': %s", path, strerror(-r));
		return r;
	}
	r = recover_slots(a, path, want_ring, want_stride, err, errlen);
	if (r < 0)
		return r;
	L.synced_v = L.head_v;
	return 0;
}

bool cachelog_had_guards(void)
{
	return L.had_guards;
}

bool cachelog_was_there(void)
{
	return L.was_there;
}

bool cachelog_replay_pending(void)
{
	return L.nrecs > 0;
}

size_t cachelog_replay_records(void)
{
	return L.nrecs;
}

uint64_t cachelog_replay_bytes(void)
{
	return L.replay_bytes;
}

bool cachelog_holds(uint64_t fid)
{
	for (size_t i = 0; i < L.nrecs; i++)
		if (L.recs[i].fid == fid)
			return true;
	return false;
}

int cachelog_replay_each(uint64_t fid, int (*fn)(void *arg, const struct cachelog_record *r, const void *data),
			 void *arg)
{
	uint8_t *data = NULL;
	size_t dcap = 0;
	int ret = 0;
	for (size_t i = 0; i < L.nrecs && ret == 0; i++) {
		const struct rec *r = &L.recs[i];
		if (r->fid != fid)
			continue;
		struct cachelog_record cr = { r->kind == REC_TRUNCATE, r->fid, r->off, r->len };
		if (r->kind == REC_TRUNCATE) {
			ret = fn(arg, &cr, NULL);
			continue;
		}
		if (dcap < r->len) {
			free(data);
			dcap = r->len;
			data = malloc(dcap);
			if (!data)
				return -ENOMEM;
		}
		if (io_pread(L.fd, data, r->len, r->pos) != (ssize_t)r->len) {
			ret = -EIO;
			break;
		}
		ret = fn(arg, &cr, data);
	}
	free(data);
	return ret;
}

/* One record into the file (cachelog_replay_file()). */
static int replay_one(void *arg, const struct cachelog_record *r, const void *data)
{
	struct rfile *rf = arg;
	if (r->truncate)
		return stripe_truncate_replayed(rf, r->off);
	ssize_t n = stripe_write_locked(rf, data, r->len, r->off);
	return n < 0 ? (int)n : 0;
}

int cachelog_replay_file(struct rfile *rf)
{
	int ret = cachelog_replay_each(rf->id, replay_one, rf);
	if (ret < 0)
		log_err("cache log: replay into file %016" PRIx64 " failed: %s", rf->id, strerror(-ret));
	return ret;
}

/* The records read at open are let go.  Log lock held. */
static void forget_records_locked(void)
{
	free(L.recs);
	L.recs = NULL;
	L.nrecs = 0;
	L.replay_bytes = 0;
	L.synced_v = L.head_v;
}

int cachelog_drop(void)
{
	pthread_mutex_lock(&L.lock);
	forget_records_locked();
	int r = write_hdr_locked(L.head_v, L.seq);
	pthread_mutex_unlock(&L.lock);
	return r;
}

void cachelog_replay_done(void)
{
	pthread_mutex_lock(&L.lock);
	forget_records_locked();
	pthread_mutex_unlock(&L.lock);
	cachelog_reset();	/* (the replayed writes made durable first) */
}

/* --------------------------------------------------------------- append */

void cachelog_position(uint64_t *v, uint64_t *seq)
{
	pthread_mutex_lock(&L.lock);
	*v = L.head_v;
	*seq = L.seq;
	pthread_mutex_unlock(&L.lock);
}

bool cachelog_live(void)
{
	pthread_mutex_lock(&L.lock);
	/* (a failed log, until retired: a record whose write returned an
	 * error may still be in it, whole) */
	bool live = L.fd >= 0 && !cachelog_retired() && (cachelog_failed() || L.tail_v != L.head_v);
	pthread_mutex_unlock(&L.lock);
	return live;
}

/* The oldest position the cache still needs (ops.tail), or the head. */
static void need_tail(uint64_t *v, uint64_t *seq)
{
	if (L.ops.tail)
		L.ops.tail(L.ops.arg, v, seq);
	else
		cachelog_position(v, seq);
}

/*
 * A failed log is retired once nothing in it is needed: no dirty line
 * may need one of its records (ops.needed), and the members are
 * synced.  The members then note that this log is retired
 * (array_note_cache_log()): a later mount drops its records,
 * which would put older bytes over what is written through from now on.
 * Until then nothing is written around the log (cachelog_live()).  False
 * while it cannot be retired yet.  tail_lock held.
 */
static bool retire(void)
{
	static bool said;
	if (cachelog_retired())
		return true;
	if (L.ops.needed && L.ops.needed(L.ops.arg))
		return false;
	/* (its guard slots too: a slot whose clear did not reach it would be
	 * put back over newer bytes; writes into degraded stripes go on
	 * unguarded, as without a battery) */
	guard_stop();
	if (!L.a || array_sync_members(L.a) < 0 || array_note_cache_log(L.a, L.id, true) < 0) {
		if (!said)
			log_err("cache log '%s': cannot be retired: the members cannot be synced, or none took the note "
				"(see the errors above); writes fail until they can: return or replace the failing "
				"members ('raidfs status' says which)", L.path);
		said = true;
		return false;
	}
	__atomic_store_n(&L.retired, true, __ATOMIC_RELEASE);
	log_warn("cache log '%s': retired: what it held is on the members; writes go through until the next mount",
		 L.path);
	return true;
}

/*
 * The log forgets the records before tv: the lines they were for are
 * written out, but the destage does not sync the members (member_sync=
 * flush), so they are made durable there first - a power loss must find
 * every acknowledged write on the members or in the log.  When that
 * fails (the array failed meanwhile) the records stay, to be replayed by
 * the next mount (a replay writes them again in order: harmless).
 * A failed log is retired instead (retire()), when `may_retire`: the
 * caller holds no file's lock (retire() may fail a member, and waits for
 * the writes that hold guard slots).  False when the tail could not be
 * moved.
 */
static bool set_tail(uint64_t tv, uint64_t ts, bool may_retire)
{
	/* one at a time: a sync error is reported to one syncfs only, and
	 * the member it fails must be failed before anybody moves the tail */
	static pthread_mutex_t tail_lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&tail_lock);
	if (cachelog_failed()) {
		bool ok = may_retire && retire();
		pthread_mutex_unlock(&tail_lock);
		return ok;
	}
	pthread_mutex_lock(&L.lock);
	bool forget = tv > L.tail_v;
	pthread_mutex_unlock(&L.lock);
	bool ok = true;
	int r = 0;
	if (forget && L.a && array_sync_members(L.a) < 0) {
		log_err("cache log '%s': the members cannot make written lines durable; their records are kept",
			L.path);
		ok = false;
	} else if (forget) {
		/* (its fdatasync under the sync lock: see log_failed()) */
		pthread_mutex_lock(&L.sync_lock);
		pthread_mutex_lock(&L.lock);
		if (cachelog_failed())
			r = cachelog_error();
		else if (tv > L.tail_v)
			r = write_hdr_locked(tv, ts);
		pthread_mutex_unlock(&L.lock);
		bool first = r < 0 && set_failed(r);
		pthread_mutex_unlock(&L.sync_lock);
		if (first)
			announce_failed(r, "the write of its header");
		ok = r == 0;
	}
	pthread_mutex_unlock(&tail_lock);
	return ok;
}

void cachelog_advance(void)
{
	uint64_t tv, ts;
	if (L.fd < 0)
		return;
	if (cachelog_failed()) {
		if (!cachelog_retired())
			set_tail(0, 0, true);	/* (retire() once the cache is written out) */
		return;
	}
	need_tail(&tv, &ts);
	pthread_mutex_lock(&L.lock);
	/* lazily: a header write costs an fdatasync */
	bool worth = tv == L.head_v ? tv != L.tail_v : tv - L.tail_v >= L.ring / 4;
	pthread_mutex_unlock(&L.lock);
	if (worth)
		set_tail(tv, ts, true);
}

int cachelog_reset(void)
{
	/* up to the oldest line still dirty (a write-back write can come
	 * between a flush and this), else everything */
	uint64_t tv, ts;
	need_tail(&tv, &ts);
	pthread_mutex_lock(&L.lock);
	bool any = L.fd >= 0 && (L.tail_v < tv || (cachelog_failed() && !cachelog_retired()));
	pthread_mutex_unlock(&L.lock);
	return !any || set_tail(tv, ts, true) ? 0 : -EIO;
}

/*
 * Where a record of `need` bytes goes (*v): at the head, or at the next
 * lap's start when it would cross the end of the ring.  While the ring is
 * full the tail moves up to what the cache still needs, or (`wait`) the
 * cache is asked to write old lines out.  Called with the log lock held;
 * returns 0 with it held, or -errno without it (-EAGAIN: full, and
 * not to wait).
 */
static int place_locked(uint64_t need, bool wait, uint64_t *v)
{
	for (;;) {
		*v = L.head_v;
		if (*v % L.ring + need > L.ring)
			*v += L.ring - *v % L.ring;
		if (*v + need - L.tail_v <= L.ring)
			return 0;
		pthread_mutex_unlock(&L.lock);
		uint64_t tv, ts;
		need_tail(&tv, &ts);
		pthread_mutex_lock(&L.lock);
		if (tv > L.tail_v) {
			pthread_mutex_unlock(&L.lock);
			if (!set_tail(tv, ts, false))
				return cachelog_failed() ? cachelog_error() : -EIO;
			pthread_mutex_lock(&L.lock);
			continue;
		}
		pthread_mutex_unlock(&L.lock);
		if (L.a && !array_writable(L.a))
			return -EIO;	/* nothing can be written out */
		if (!wait)
			return -EAGAIN;
		if (L.ops.wait)
			L.ops.wait(L.ops.arg);
		pthread_mutex_lock(&L.lock);
	}
}

/* A record's header (docs/format.md): sequence seq, at v, of data[0..n). */
static void rec_encode(uint8_t h[REC_HDR], uint32_t kind, uint64_t seq, uint64_t v, uint64_t fid, uint64_t off,
		       uint32_t len, const struct iovec *data, int ndata)
{
	memset(h, 0, REC_HDR);
	put_le32(h, REC_MAGIC);
	put_le32(h + 4, kind);
	put_le64(h + 8, seq);
	put_le64(h + 16, v);
	put_le64(h + 24, fid);
	put_le64(h + 32, off);
	put_le32(h + 40, len);
	uint32_t crc = 0;
	for (int i = 0; i < ndata; i++)
		if (data[i].iov_len)
			crc = parity_crc32(crc, data[i].iov_base, data[i].iov_len);
	put_le32(h + 44, crc);
	put_le32(h + 60, parity_crc32(0, h, 60));
}

/* Write a record (not yet durable: cachelog_commit()); *end is where it
 * ends in the log. */
static int put(uint32_t kind, uint64_t fid, uint64_t off, const struct iovec *data, int ndata, bool wait,
	       uint64_t *end)
{
	uint64_t total = 0;
	for (int i = 0; i < ndata; i++)
		total += data[i].iov_len;
	if (total > UINT32_MAX)
		return -EFBIG;
	uint32_t len = (uint32_t)total;
	uint64_t need = rec_size(len);
	uint64_t v;
	if (need > L.ring)
		return -EFBIG;	/* cannot happen: the ring is twice the cache */
	if (cachelog_failed())
		return cachelog_error();
	pthread_mutex_lock(&L.lock);
	int r = place_locked(need, wait, &v);
	if (r < 0)
		return r;
	uint8_t h[REC_HDR];
	rec_encode(h, kind, L.seq, v, fid, off, len, data, ndata);
	static const uint8_t zero[REC_ALIGN];
	struct iovec iov[2 + CACHELOG_PIECES];
	int n = 0;
	iov[n++] = (struct iovec){ h, REC_HDR };
	for (int i = 0; i < ndata; i++)
		iov[n++] = data[i];
	iov[n++] = (struct iovec){ (void *)zero, need - REC_HDR - len };
	r = cachelog_failed() ? cachelog_error() : log_pwritev(iov, n, phys(v));
	if (r < 0) {
		pthread_mutex_unlock(&L.lock);
		log_failed(r, "the write of a record");
		return r;
	}
	L.head_v = v + need;
	L.seq++;
	*end = L.head_v;
	pthread_mutex_unlock(&L.lock);
	return 0;
}

int cachelog_commit(uint64_t mine)
{
	int r = 0;
	/* group commit: one fdatasync covers every record written before it */
	pthread_mutex_lock(&L.sync_lock);
	if (L.synced_v < mine) {
		/* (once failed, nothing after the failure is durable for sure) */
		pthread_mutex_lock(&L.lock);
		uint64_t target = L.head_v;
		pthread_mutex_unlock(&L.lock);
		r = cachelog_failed() ? cachelog_error() : log_fdatasync();
		if (r == 0)
			L.synced_v = target;
	}
	bool first = r < 0 && set_failed(r);
	pthread_mutex_unlock(&L.sync_lock);
	if (first)
		announce_failed(r, "fdatasync");
	return r;
}

int cachelog_put_write(uint64_t fid, uint64_t off, const void *buf, size_t len, uint64_t *end)
{
	struct iovec v = { (void *)buf, len };
	return put(REC_WRITE, fid, off, &v, 1, true, end);
}

int cachelog_put_writev(uint64_t fid, uint64_t off, const struct iovec *parts, int n, uint64_t *end)
{
	if (n > CACHELOG_PIECES)
		return -EINVAL;
	return put(REC_WRITE, fid, off, parts, n, true, end);
}

int cachelog_try_put_truncate(uint64_t fid, uint64_t size, uint64_t *end)
{
	return put(REC_TRUNCATE, fid, size, NULL, 0, false, end);
}

void cachelog_close_clean(void)
{
	cachelog_reset();
	guard_use(NULL);
	if (L.fd >= 0)
		close(L.fd);
	if (L.gfd >= 0)
		close(L.gfd);
	L.fd = L.gfd = -1;
}
