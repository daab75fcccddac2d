/*
 * guard.c - guard slots for writes into degraded stripes (see guard.h).
 *
 * Slot (docs/format.md "Guard slots"), little-endian:
 *   0   u32 magic "RGD1" (0: free)     4   u32 number of pieces
 *   8   u64 file size either way      16   u64 file id
 *   24  pieces: u64 file offset, u32 length (GUARD_PIECES of them)
 *   124 u32 crc32 of bytes 0..123 and of the pieces' bytes
 *   128 the pieces' bytes, one after the other
 *
 * A slot is cleared as soon as its write is done, durably (bbu=file: the
 * clear is fdatasynced), so a slot found at mount is a write that was cut
 * short.  A run takes at most half the slots at once, so the slots a
 * crashed run left (reserved until their file is put back) never leave
 * the replay without a free one.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "file.h"
#include "stripe.h"
#include "guard.h"
#include "layout.h"
#include "util.h"

#define GUARD_MAGIC 0x31444752u	/* "RGD1" */
#define PIECE_AT(i) (24 + 12 * (i))


/* Putting a guarded chunk back takes no new guard (guard_suspend()) */
static __thread bool suspended;

static struct {
	pthread_mutex_t lock;
	pthread_cond_t freed;
	struct guard_store st;
	bool on;
	bool stopped;			/* guard_off() in this run */
	uint32_t used;			/* bit i: slot i holds a write in progress */
	uint32_t reserved;		/* bit i: slot i holds the last run's guard */
	int busy;			/* slots in use by this run */
	struct guard_cut *old;		/* the last run's guards (guard_recover) */
	int nold;
	size_t capold;
} G = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.freed = PTHREAD_COND_INITIALIZER,
};

uint64_t guard_stride(const struct layout *l)
{
	uint64_t pieces = (uint64_t)l->groups * (l->m ? l->m : 1);
	if (pieces > GUARD_PIECES)
		pieces = GUARD_PIECES;
	uint64_t b = GUARD_HDR + pieces * l->chunk;
	return (b + 4095) & ~4095ull;
}

void guard_use(const struct guard_store *st)
{
	/* (a store is changed only between runs of writes: a slot held now
	 * would be released into the new store as a no-op) */
	pthread_mutex_lock(&G.lock);
	G.on = st && st->nslots > 0;
	if (G.on) {
		G.st = *st;
		if (G.st.nslots > GUARD_SLOTS)
			G.st.nslots = GUARD_SLOTS;
	}
	G.used = G.reserved = 0;
	G.busy = 0;
	for (int i = 0; i < G.nold; i++)
		G.old[i].slot = -1;
	pthread_mutex_unlock(&G.lock);
}

bool guard_on(void)
{
	return !suspended && __atomic_load_n(&G.on, __ATOMIC_ACQUIRE);
}

bool guard_durable(void)
{
	return guard_on() && G.st.durable;
}

/* ----------------------------------------------------------- slot I/O */

static int slot_write(int i, const uint8_t *b, size_t len)
{
	if (G.st.fd < 0) {
		/* shared memory: the header's magic last, so a slot read after a
		 * kill is whole or free */
		uint8_t *s = G.st.mem + (uint64_t)i * G.st.stride;
		__atomic_store_n((uint32_t *)s, 0, __ATOMIC_RELEASE);
		memcpy(s + 4, b + 4, len - 4);
		__atomic_store_n((uint32_t *)s, get_le32(b), __ATOMIC_RELEASE);
		return 0;
	}
	/* a file: the crc tells a torn slot */
	int r = io_pwrite(G.st.fd, b, len, G.st.base + (uint64_t)i * G.st.stride);
	if (r == 0 && G.st.durable && fdatasync(G.st.fd) < 0)
		r = -errno;
	return r;
}

/* Free slot i for good: a later mount must not put an old chunk back
 * over bytes written since (a power loss too: the clear is synced). */
static void slot_clear(int i)
{
	static const uint8_t zero[4];
	if (G.st.fd < 0) {
		__atomic_store_n((uint32_t *)(G.st.mem + (uint64_t)i * G.st.stride), 0, __ATOMIC_RELEASE);
		return;
	}
	if (pwrite(G.st.fd, zero, sizeof(zero), G.st.base + (uint64_t)i * G.st.stride) != sizeof(zero) ||
	    (G.st.durable && fdatasync(G.st.fd) < 0))
		log_err("guard: cannot clear guard slot %d: %s (a later mount may put its old chunk back)", i,
			strerror(errno));
}

/* Read slot i of st into b (st->stride bytes). */
static bool slot_read(const struct guard_store *st, int i, uint8_t *b)
{
	if (st->fd < 0) {
		memcpy(b, st->mem + (uint64_t)i * st->stride, st->stride);
		return true;
	}
	memset(b, 0, st->stride);	/* (past the end of the file: never written) */
	return io_pread(st->fd, b, st->stride, st->base + (uint64_t)i * st->stride) >= 0;
}

/* ----------------------------------------------------------------- hold */

int guard_hold(const struct rfile *rf, const struct guard_piece *p, int n, uint64_t size)
{
	uint64_t total = 0;
	for (int i = 0; i < n; i++)
		total += p[i].len;
	pthread_mutex_lock(&G.lock);
	if (!G.on) {
		pthread_mutex_unlock(&G.lock);
		return GUARD_NONE;
	}
	if (n > GUARD_PIECES || GUARD_HDR + total > G.st.stride) {
		pthread_mutex_unlock(&G.lock);
		log_err("guard: %" PRIu64 " bytes of file %016" PRIx64 " do not fit a guard slot (%" PRIu64 " bytes): "
			"the write into its degraded stripe is refused", total, rf->id, G.st.stride - GUARD_HDR);
		return -EIO;
	}
	int slot = -1;
	for (;;) {
		if (!G.on) {
			pthread_mutex_unlock(&G.lock);
			return GUARD_NONE;
		}
		uint32_t taken = G.used | G.reserved;
		if (G.busy < (int)(G.st.nslots + 1) / 2) {
			for (uint32_t i = 0; i < G.st.nslots && slot < 0; i++)
				if (!(taken >> i & 1))
					slot = (int)i;
		}
		if (slot >= 0)
			break;
		pthread_cond_wait(&G.freed, &G.lock);
	}
	G.used |= 1u << slot;
	G.busy++;
	pthread_mutex_unlock(&G.lock);

	size_t len = GUARD_HDR + total;
	uint8_t *b = calloc(1, len);
	if (!b) {
		guard_release(slot);
		return -ENOMEM;
	}
	put_le32(b, GUARD_MAGIC);
	put_le32(b + 4, (uint32_t)n);
	put_le64(b + 8, size);
	put_le64(b + 16, rf->id);
	uint8_t *at = b + GUARD_HDR;
	for (int i = 0; i < n; i++) {
		put_le64(b + PIECE_AT(i), p[i].off);
		put_le32(b + PIECE_AT(i) + 8, p[i].len);
		memcpy(at, p[i].data, p[i].len);
		at += p[i].len;
	}
	uint32_t crc = parity_crc32(0, b, 124);
	put_le32(b + 124, parity_crc32(crc, b + GUARD_HDR, total));
	int r = slot_write(slot, b, len);
	free(b);
	if (r < 0) {
		log_err("guard: cannot write a guard slot for file %016" PRIx64 ": %s", rf->id, strerror(-r));
		guard_release(slot);
		if (G.st.failed) {
			G.st.failed(r);	/* (the slots stop: the write goes on without one) */
			return GUARD_NONE;
		}
		return r;
	}
	return slot;
}

bool guard_stopped(void)
{
	return __atomic_load_n(&G.stopped, __ATOMIC_ACQUIRE);
}

void guard_off(void)
{
	pthread_mutex_lock(&G.lock);
	__atomic_store_n(&G.stopped, G.on || G.stopped, __ATOMIC_RELEASE);
	__atomic_store_n(&G.on, false, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&G.freed);	/* (those waiting for a slot) */
	pthread_mutex_unlock(&G.lock);
}

void guard_stop(void)
{
	guard_off();
	pthread_mutex_lock(&G.lock);
	while (G.busy > 0)
		pthread_cond_wait(&G.freed, &G.lock);
	pthread_mutex_unlock(&G.lock);
}

void guard_release(int slot)
{
	slot_clear(slot);	/* (ours until the bit goes: no lock over the sync) */
	pthread_mutex_lock(&G.lock);
	if (G.used >> slot & 1) {
		G.used &= ~(1u << slot);
		G.busy--;
		pthread_cond_broadcast(&G.freed);
	}
	pthread_mutex_unlock(&G.lock);
}

/* -------------------------------------------------------------- recovery */

int guard_recover(const struct guard_store *st, bool current)
{
	if (!st || !st->nslots || st->stride < GUARD_HDR)
		return 0;
	uint8_t *b = malloc(st->stride);
	if (!b)
		return -ENOMEM;
	int taken = 0;
	uint32_t nslots = st->nslots > GUARD_SLOTS ? GUARD_SLOTS : st->nslots;
	for (uint32_t i = 0; i < nslots; i++) {
		if (!slot_read(st, (int)i, b) || get_le32(b) != GUARD_MAGIC)
			continue;
		uint32_t n = get_le32(b + 4);
		uint64_t total = 0;
		if (n == 0 || n > GUARD_PIECES)
			continue;
		for (uint32_t k = 0; k < n; k++)
			total += get_le32(b + PIECE_AT(k) + 8);
		if (GUARD_HDR + total > st->stride)
			continue;
		uint32_t crc = parity_crc32(0, b, 124);
		if (parity_crc32(crc, b + GUARD_HDR, total) != get_le32(b + 124))
			continue;	/* torn while written: its write never began */
		struct guard_cut *o = NULL;
		if (UTIL_GROW(G.old, G.capold, (size_t)G.nold + 1) == 0) {
			o = &G.old[G.nold];
			memset(o, 0, sizeof(*o));
			o->bytes = malloc(total ? total : 1);
		}
		if (!o || !o->bytes) {
			log_err("guard: out of memory reading the guard of a write cut short: %d of them taken, the rest not put back",
				taken);
			break;
		}
		memcpy(o->bytes, b + GUARD_HDR, total);
		o->fid = get_le64(b + 16);
		o->size = get_le64(b + 8);
		o->n = (int)n;
		o->slot = -1;
		const uint8_t *at = o->bytes;
		for (uint32_t k = 0; k < n; k++) {
			o->p[k].off = get_le64(b + PIECE_AT(k));
			o->p[k].len = get_le32(b + PIECE_AT(k) + 8);
			o->p[k].data = at;
			at += o->p[k].len;
		}
		if (current) {
			pthread_mutex_lock(&G.lock);
			o->slot = (int)i;
			G.reserved |= 1u << i;
			pthread_mutex_unlock(&G.lock);
		}
		G.nold++;
		taken++;
	}
	free(b);
	return taken;
}

bool guard_holds(uint64_t fid)
{
	for (int i = 0; i < G.nold; i++)
		if (G.old[i].fid == fid && G.old[i].n)
			return true;
	return false;
}

struct guard_cut *guard_next_cut(uint64_t fid, int *i)
{
	for (; *i < G.nold; (*i)++)
		if (G.old[*i].fid == fid && G.old[*i].n)
			return &G.old[(*i)++];
	return NULL;
}

void guard_suspend(bool on)
{
	suspended = on;
}

void guard_free_slots(uint32_t slots)
{
	pthread_mutex_lock(&G.lock);
	for (uint32_t i = 0; i < GUARD_SLOTS; i++)
		if (slots >> i & 1)
			slot_clear((int)i);
	G.reserved &= ~slots;
	pthread_cond_broadcast(&G.freed);
	pthread_mutex_unlock(&G.lock);
}

void guard_replay_done(void)
{
	pthread_mutex_lock(&G.lock);
	/* the slots of files not put back (removed since, or discarded) */
	for (uint32_t i = 0; G.on && i < G.st.nslots; i++)
		if (G.reserved >> i & 1)
			slot_clear((int)i);
	for (int i = 0; i < G.nold; i++)
		free(G.old[i].bytes);
	free(G.old);
	G.old = NULL;
	G.nold = 0;
	G.capold = 0;
	G.reserved = 0;
	pthread_cond_broadcast(&G.freed);
	pthread_mutex_unlock(&G.lock);
}
