/*
 * recon.c - the reconstruction planner (contract in recon.h).
 *
 * All the decisions are in decide(), on slot masks only: the member
 * placement is looked up once in recon_plan(), so recon_exclude() is a
 * bit cleared and decide() run again.  The choices follow what the parity
 * code reads (isal-glue/parity.c): a single erased data slot is rebuilt
 * from the other data and P whatever m is; redundancy is encoded from the
 * data; anything else is a decode that may use every survivor.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "recon.h"

static inline uint64_t bits(uint32_t n)
{
	return n >= 64 ? ~0ull : (1ull << n) - 1;
}

uint64_t recon_all(const struct layout *l)
{
	return bits(l->k + l->m);
}

const char *recon_op_name(enum recon_op op)
{
	static const char *const names[] = {
		[RECON_READ] = "read", [RECON_COPY] = "copy", [RECON_XOR] = "xor",
		[RECON_ENCODE] = "encode", [RECON_DECODE] = "decode", [RECON_IMPOSSIBLE] = "impossible",
	};
	return (unsigned)op <= RECON_IMPOSSIBLE ? names[op] : "unknown";
}

/* The mirror copy to read: the first readable one from `prefer` on,
 * among `among` when it holds any. */
static uint32_t pick_copy(uint32_t n, uint32_t prefer, uint64_t among)
{
	for (uint32_t c = 0; c < n; c++) {
		uint32_t i = (prefer + c) % n;
		if (among >> i & 1)
			return i;
	}
	return n;
}

static enum recon_op decide(struct recon_plan *p)
{
	const struct layout *l = p->l;
	const uint32_t k = l->k, m = l->m, n = k + m;
	const uint64_t all = bits(n), data = bits(k), P = 1ull << k;
	const uint64_t avail = p->avail & all, want = p->want;
	const uint64_t miss = want & ~avail, unread = all & ~avail;

	p->read = p->calc = p->copies = 0;
	p->pm = p->nerased = 0;
	p->src = 0;
	if (!miss) {
		p->read = want;
		return p->op = RECON_READ;
	}
	if ((uint32_t)__builtin_popcountll(unread) > m)
		return p->op = RECON_IMPOSSIBLE;	/* (m == 0: any loss) */
	if (l->red == RED_MIRROR) {
		p->copies = avail;
		p->src = pick_copy(n, p->prefer % n, want & avail ? want & avail : avail);
		p->read = (want & avail) | 1ull << p->src;
		p->calc = miss;
		return p->op = RECON_COPY;
	}
	const uint64_t md = miss & data, mp = miss & ~data;
	if (!md && !(data & ~avail)) {
		/* redundancy only, the data all there: encode up to the
		 * highest slot wanted (the lower ones come with it) */
		uint32_t top = 63 - (uint32_t)__builtin_clzll(mp);
		p->pm = (int)(top - k + 1);
		p->calc = bits(top + 1) & ~data;
		p->read = data | (want & avail & ~p->calc);
		return p->op = RECON_ENCODE;
	}
	if (!mp && __builtin_popcountll(md) == 1 && !(data & ~avail & ~md) && (avail & P)) {
		/* one data slot: the other data and P */
		p->pm = 1;
		p->erased[p->nerased++] = __builtin_ctzll(md);
		p->calc = md;
		p->read = (data & ~md) | P | (want & avail);
		return p->op = RECON_XOR;
	}
	/* a decode: every slot that cannot be read is erased, every other
	 * one is a source (k of them when m <= 2) */
	p->pm = (int)m;
	for (uint32_t i = 0; i < n; i++)
		if (unread >> i & 1)
			p->erased[p->nerased++] = (int)i;
	p->calc = unread;
	p->read = avail;
	return p->op = RECON_DECODE;
}

enum recon_op recon_plan(struct recon_plan *p, const struct layout *l, uint64_t s, uint32_t g,
			 uint64_t readable, uint64_t want, uint32_t prefer)
{
	const uint32_t n = l->k + l->m;
	assert(g < l->groups && want && !(want & ~bits(n)));
	p->l = l;
	p->s = s;
	p->g = g;
	p->prefer = prefer;
	p->want = want;
	p->avail = 0;
	for (uint32_t i = 0; i < n; i++) {
		p->member[i] = layout_slot_member(l, s, g, i);
		p->avail |= (uint64_t)(readable >> p->member[i] & 1) << i;
	}
	return decide(p);
}

enum recon_op recon_exclude(struct recon_plan *p, uint32_t slot)
{
	assert(slot < p->l->k + p->l->m);
	p->avail &= ~(1ull << slot);
	return decide(p);
}

int recon_compute(const struct recon_plan *p, size_t len, uint8_t *const *blk)
{
	const int k = (int)p->l->k;
	switch (p->op) {
	case RECON_READ:
		return 0;
	case RECON_COPY:
		for (uint32_t i = 0; i < p->l->k + p->l->m; i++)
			if ((p->calc >> i & 1) && blk[i] != blk[p->src])
				memcpy(blk[i], blk[p->src], len);
		return 0;
	case RECON_XOR:
		return parity_reconstruct(k, 1, len, blk, p->erased, 1);
	case RECON_ENCODE:
		return parity_encode(k, p->pm, len, blk);
	case RECON_DECODE:
		return parity_reconstruct(k, p->pm, len, blk, p->erased, p->nerased);
	case RECON_IMPOSSIBLE:
	default:
		return -EIO;
	}
}
