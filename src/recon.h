/*
 * recon.h - the reconstruction planner: which chunks of a row to read and
 * which parity call makes the rest (pure functions, no I/O).
 *
 * What it is for
 *   Every path that needs chunks of one redundancy group of one stripe
 *   (a "row": k data slots and m redundancy slots, layout.h) asks here
 *   what to read and what to compute: reads and degraded reads, the
 *   reconstruct-write of a write or a destage, resync, the rebuild of a
 *   member, scrub and check.  One planner, so one answer: there is no
 *   second place that decides which members a reconstruction reads.
 *
 * Input
 *   a layout, a stripe s and a group g (the rotation, so the placement,
 *   follows); the members that may be read (bit j for member j: present,
 *   trusted, not yet failed for this row); the slots wanted (bit i for
 *   slot i, data 0..k-1 and redundancy k..k+m-1); a preferred slot for
 *   mirrors (when the wanted copy cannot be read, the copy tried first,
 *   then the next ones in turn).  A caller that spreads reads over the
 *   copies, or takes the least busy one, wants that copy and prefers it.
 *
 * Output (struct recon_plan)
 *   read   the slots to read, each from member[slot]: only readable slots;
 *   calc   the slots the computation writes (wanted or not: every slot of
 *          calc needs a buffer, and its old contents are ignored);
 *   op     what computes calc from the slots read:
 *            RECON_READ        nothing: every wanted slot is read;
 *            RECON_COPY        mirror: slot `src` is read and copied into
 *                              the wanted slots that are not readable
 *                              (`copies` lists every readable copy);
 *            RECON_XOR         one data slot (erased[0]) from the other
 *                              data and P: parity_reconstruct(k, 1, ...);
 *            RECON_ENCODE      redundancy from all data slots:
 *                              parity_encode(k, pm, ...), calc = k..k+pm-1;
 *            RECON_DECODE      parity_reconstruct(k, m, ..., erased,
 *                              nerased) from every readable slot;
 *            RECON_IMPOSSIBLE  a wanted slot is not readable and the group
 *                              lacks more slots than it tolerates (more
 *                              than m): the caller returns -EIO.
 *   Every wanted slot is in read or in calc (calc may also hold a wanted
 *   readable slot that the same computation makes anyway); no slot that is
 *   not readable is read.  The plan reads as little as the parity code
 *   needs: a wanted data slot from the other data and P (parity.h's
 *   single-erasure path uses nothing else), redundancy from the data
 *   only, and otherwise every readable slot (exactly k for m <= 2).
 *
 * Read errors and checksums
 *   A read that fails, or a chunk whose checksum does not match, is
 *   treated the same: recon_exclude() drops that slot from the readable
 *   ones and plans again.  Chunks already read stay good and need not be
 *   read again: the new plan's read set may include them.  Unless the
 *   last plan is impossible, every slot excluded this way (one that an
 *   earlier plan read) is in calc for a parity group, so its buffer holds
 *   the bytes to repair it with; for mirrors the good bytes are in the
 *   buffer of `src` (RECON_COPY).
 *
 * Verifying
 *   Redundancy is checked against what the planner computes from the data
 *   alone: the data slots as the only readable ones, the redundancy read
 *   as wanted; RECON_ENCODE then says which parity call recomputes it, any
 *   other answer that there is nothing to compare it with.
 *
 * Executing
 *   recon_compute() makes calc from the slots read, given one buffer of
 *   `len` bytes per slot (blk[0..k+m-1]); it does no I/O.  The reads are
 *   the caller's (stripe.c and rebuild.c).
 *
 * Contract
 *   Pure and thread safe; the plan lives in caller memory.  The layout is
 *   one layout_init() accepted, s/g/slots in range (asserted).
 */
#ifndef RAIDFS_RECON_H
#define RAIDFS_RECON_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "parity.h"

enum recon_op {
	RECON_READ,
	RECON_COPY,
	RECON_XOR,
	RECON_ENCODE,
	RECON_DECODE,
	RECON_IMPOSSIBLE,
};

struct recon_plan {
	/* the question (kept for recon_exclude()) */
	const struct layout *l;
	uint64_t s;
	uint32_t g, prefer;
	uint64_t want;			/* slots */
	uint64_t avail;			/* readable slots */
	uint32_t member[LAYOUT_MAX_WIDTH];	/* slot -> member */
	/* the answer */
	enum recon_op op;
	uint64_t read, calc;		/* slots */
	uint32_t src;			/* RECON_COPY: the copy read */
	uint64_t copies;		/* RECON_COPY: every readable copy */
	int pm;				/* m of the parity call */
	int erased[PARITY_MAX_M];	/* RECON_XOR / RECON_DECODE */
	int nerased;
};

/* The slots of a group: k + m.  (l->k + l->m, as a mask: recon_all().) */
uint64_t recon_all(const struct layout *l);

/*
 * Plan group g of stripe s: `readable` is a mask of members, `want` a
 * mask of slots (not 0), `prefer` the mirror copy tried first (any value:
 * taken modulo k + m).  Fills *p; returns p->op.
 */
enum recon_op recon_plan(struct recon_plan *p, const struct layout *l, uint64_t s, uint32_t g,
			 uint64_t readable, uint64_t want, uint32_t prefer);

/* Slot `slot` could not be read (or its checksum did not match): plan
 * again without it.  Returns the new p->op. */
enum recon_op recon_exclude(struct recon_plan *p, uint32_t slot);

/* Compute p->calc in blk[] (len bytes each) from the slots of p->read.
 * 0, -EIO for RECON_IMPOSSIBLE, or parity.h's error. */
int recon_compute(const struct recon_plan *p, size_t len, uint8_t *const *blk);

/* Name of an op for messages and tests ("read", "copy", ...). */
const char *recon_op_name(enum recon_op op);

#endif
