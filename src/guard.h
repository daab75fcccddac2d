/*
 * guard.h - the chunks a write into a degraded stripe could destroy, kept
 * aside until the write is done (the write hole of a degraded array).
 *
 * In a stripe whose member is absent, that member's chunk exists only as
 * the parity xor the other chunks.  A write changes a data chunk and the
 * parity on two members one after the other; cut between the two (kill
 * -9, power loss), the absent chunk reads as other bytes from then on -
 * bytes nobody was writing.  A controller's battery keeps the stripe write
 * itself; md has its journal device.  raidfs, when the cache has a battery
 * (bbu=file or bbu=shm), first copies the absent chunk's bytes over the
 * columns the write changes into a guard slot, writes the members, then
 * frees the slot.  The next mount puts every guarded chunk back before it
 * replays the cache (stripe_put_back_guarded()).
 *
 * Where the slots are: struct guard_store, given by the cache log
 * (bbu=file: after its ring, durable) or by the cache arena (bbu=shm).
 * Slot format: docs/format.md "Guard slots".
 */
#ifndef RAIDFS_GUARD_H
#define RAIDFS_GUARD_H

#include <stdbool.h>
#include <stdint.h>

#include "parity.h"

struct layout;
struct rfile;

#define GUARD_SLOTS 8			/* a run uses at most half at once */
#define GUARD_HDR 128u			/* slot header; the bytes follow */
#define GUARD_PIECES 8			/* absent chunks of one stripe */

struct guard_store {
	int fd;				/* >= 0: slots in this file ... */
	uint64_t base;			/* ... from this offset */
	uint8_t *mem;			/* else: slots in this mapping */
	uint32_t nslots;
	uint64_t stride;		/* bytes per slot */
	bool durable;			/* fdatasync slots; sync shards before a slot is freed */
	void (*failed)(int err);	/* a slot's write failed: the store's
					 * owner stops the slots (guard_off()) */
};

/* Bytes per slot for the array's layout: the absent chunks of a stripe,
 * as many as its groups tolerate, at most GUARD_PIECES. */
uint64_t guard_stride(const struct layout *l);

/* Slots to use from now on (NULL: none; writes are not guarded). */
void guard_use(const struct guard_store *st);
bool guard_on(void);
bool guard_durable(void);

/* One absent chunk's bytes: file offset, length, data. */
struct guard_piece {
	uint64_t off;
	uint32_t len;
	const uint8_t *data;
};

/* Put pieces p[0..n) of file rf in a free slot (waiting for one), durably
 * when the store is, with `size`: the file's size whether the write is
 * done or not (a write: the size before it; a truncate: the new size).
 * Returns the slot, -errno (logged), or GUARD_NONE when the slots were
 * stopped meanwhile (guard_stop(): the write goes on unguarded). */
#define GUARD_NONE (-1000000)
int guard_hold(const struct rfile *rf, const struct guard_piece *p, int n, uint64_t size);

/* No slot is taken from now on (the cache log holding them failed):
 * guard_off() at once, guard_stop() returns once every write holding
 * one is done. */
void guard_off(void);
void guard_stop(void);
/* They were stopped in this run: a write into a degraded stripe goes on
 * without one, and its file must get the plain mark (a resync: nothing
 * else covers it). */
bool guard_stopped(void);

/* The write the slot guarded is done (and, durable store, its shards
 * synced): free it. */
void guard_release(int slot);

/*
 * At mount: take the slots a previous run left in st (each a write cut
 * short: a finished one's slot was cleared).  `current`: st is the store
 * in use (guard_use() before), whose slots stay reserved until their
 * file's chunks are put back.  Returns the number taken.
 */
int guard_recover(const struct guard_store *st, bool current);

/* Does the previous run's guard hold chunks of file fid? */
bool guard_holds(uint64_t fid);

/* A write into a degraded stripe cut short, found in a slot at mount
 * (guard_recover()): the absent members' chunks as they were before it.
 * The stripe I/O puts them back (stripe_put_back_guarded()). */
struct guard_cut {
	uint64_t fid;
	uint64_t size;			/* the file's size whether the write was done or not */
	int slot;			/* reserved in the store in use, or -1 */
	int n;				/* pieces; 0 once put back */
	struct guard_piece p[GUARD_PIECES];
	uint8_t *bytes;
};

/* The previous run's cut writes of file fid not put back yet, one at a
 * time: the next from *i on (start at 0), or NULL. */
struct guard_cut *guard_next_cut(uint64_t fid, int *i);
/* While on, this thread's writes take no guard slot (a cut write being
 * put back: its own slot stays until the bytes are durable). */
void guard_suspend(bool on);
/* The cuts of these slots are put back and durable: the slots are free. */
void guard_free_slots(uint32_t slots);

/* The replay is over (or discarded): forget what guard_recover() took. */
void guard_replay_done(void);

#endif
