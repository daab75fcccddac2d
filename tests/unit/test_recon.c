/*
 * test_recon.c - exhaustive unit test of src/recon.c, the planner.
 *
 * For every level and a range of widths (raid0 2-4, raid1 2-4, raid5 3-8,
 * raid6 4-8, raid10 4/6/8, raid50/60 with 2 and 3 groups), every stripe
 * of a rotation period (two rotations), every group, every set of lost
 * slots of the group up to m+1 (the members of other groups lost at
 * random), and every wanted set (all of them up to 8 slots; beyond, every
 * single slot, all data, all redundancy and all slots), the plan is
 * checked against a transcription of layout.h's placement and against the
 * level's tolerance:
 *   - member[] is the placement of layout.h;
 *   - it reads only readable slots, never a wanted-and-missing one, and
 *     computes only slots it does not read;
 *   - every wanted slot is read or computed;
 *   - it is impossible exactly when a wanted slot is lost and the group
 *     lost more than m slots;
 *   - it reads no more than it needs: the wanted slots when they are all
 *     there; else k sources (the other data and P for one data slot, the
 *     data for redundancy) plus the wanted slots it does not compute; one
 *     copy for mirrors, the preferred one first;
 *   - executed on random bytes with the real parity code, with every
 *     slot it does not read filled with garbage, it gives the wanted
 *     slots' original bytes;
 *   - the redundancy wanted with only the data readable (how scrub and
 *     check verify) is an encode exactly when all the data is there;
 *   - each slot it reads, excluded in turn (a read error, a checksum
 *     mismatch), gives a plan that passes all of the above with that slot
 *     lost too, and computes the excluded slot where the group has
 *     parity (so a repair has its bytes).
 *
 * Exit status 0 when everything passed, 1 otherwise.  Deterministic.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "layout_spec.h"
#include "parity.h"
#include "recon.h"

static unsigned long long nchecks, nplans;
static unsigned long nfailed;
static char where[200];

#define MAX_REPORTED 25
#define LEN 32		/* bytes per chunk in the execution check */

static void failed(int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	if (++nfailed > MAX_REPORTED)
		return;
	fprintf(stderr, "test_recon.c:%d: FAIL [%s] (%s) ", line, where, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#define CHECK(cond, ...) do {					\
	nchecks++;						\
	if (!(cond))						\
		failed(__LINE__, #cond, __VA_ARGS__);		\
} while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static inline uint64_t bits(uint32_t n)
{
	return n >= 64 ? ~0ull : (1ull << n) - 1;
}

static inline int pop(uint64_t x)
{
	return __builtin_popcountll(x);
}

/* A row of original chunks: data random, redundancy from the reference
 * code (mirrors: copies). */
struct row {
	uint8_t b[LAYOUT_MAX_WIDTH][LEN];
};

static void make_row(const struct layout *l, struct row *r)
{
	uint32_t n = l->k + l->m;
	uint8_t *blk[LAYOUT_MAX_WIDTH];
	for (uint32_t i = 0; i < n; i++)
		blk[i] = r->b[i];
	for (uint32_t i = 0; i < l->k; i++)
		for (int x = 0; x < LEN; x++)
			r->b[i][x] = (uint8_t)rnd();
	if (l->red == RED_MIRROR)
		for (uint32_t i = 1; i < n; i++)
			memcpy(r->b[i], r->b[0], LEN);
	else if (l->m)
		parity_ref_encode((int)l->k, (int)l->m, LEN, blk);
}

/*
 * Check plan p of group g, stripe s, made with `lost` (slots of the group
 * that cannot be read) and `want`.  `prefer` as given to the planner.
 */
static void check_plan(const struct layout *l, const struct recon_plan *p, uint64_t s, uint32_t g,
		       uint64_t lost, uint64_t want, uint32_t prefer, const struct row *orig)
{
	const uint32_t k = l->k, m = l->m, n = k + m;
	const uint64_t all = bits(n), data = bits(k), avail = all & ~lost, miss = want & lost;
	nplans++;

	for (uint32_t i = 0; i < n; i++)
		CHECK(p->member[i] == spec_member(l, s, g, i), "s=%" PRIu64 " g=%u slot %u: member %u, want %u", s, g,
		      i, p->member[i], spec_member(l, s, g, i));
	bool impossible = miss && (uint32_t)pop(lost) > m;
	CHECK((p->op == RECON_IMPOSSIBLE) == impossible, "lost %#" PRIx64 " want %#" PRIx64 ": %s", lost, want,
	      recon_op_name(p->op));
	if (p->op == RECON_IMPOSSIBLE)
		return;
	CHECK(!(p->read & ~avail), "lost %#" PRIx64 " want %#" PRIx64 ": reads %#" PRIx64, lost, want, p->read);
	CHECK(!(p->read & p->calc), "reads %#" PRIx64 " and computes %#" PRIx64, p->read, p->calc);
	CHECK(!(want & ~(p->read | p->calc)), "want %#" PRIx64 ": reads %#" PRIx64 " computes %#" PRIx64, want,
	      p->read, p->calc);
	CHECK(!(p->calc & ~all) && !(p->read & ~all), "slots out of the group");

	/* reads no more than it needs */
	if (!miss) {
		CHECK(p->op == RECON_READ && p->read == want, "all wanted there: %s reads %#" PRIx64,
		      recon_op_name(p->op), p->read);
	} else if (l->red == RED_MIRROR) {
		CHECK(p->op == RECON_COPY, "mirror: %s", recon_op_name(p->op));
		uint64_t direct = want & avail;
		CHECK(pop(p->read) == (direct ? pop(direct) : 1), "mirror reads %#" PRIx64 " for want %#" PRIx64,
		      p->read, want);
		uint32_t first = n;
		for (uint32_t c = 0; c < n && first == n; c++)
			if (((direct ? direct : avail) >> ((prefer + c) % n)) & 1)
				first = (prefer + c) % n;
		CHECK(p->src == first, "mirror copy %u, preferred %u -> %u", p->src, prefer, first);
		CHECK(p->copies == avail, "copies %#" PRIx64 ", readable %#" PRIx64, p->copies, avail);
	} else {
		CHECK(l->red == RED_PARITY, "no redundancy, yet a plan");
		uint64_t sources = p->read & ~(want & ~data & ~bits(k + 1));
		CHECK(pop(p->read & (data | 1ull << k)) <= (int)k && pop(p->read) <= (int)k + pop(want & avail & ~data),
		      "lost %#" PRIx64 " want %#" PRIx64 ": reads %#" PRIx64 " (%s)", lost, want, p->read,
		      recon_op_name(p->op));
		CHECK(pop(sources) >= (int)k || pop(p->read) >= (int)k, "reads %#" PRIx64 ": fewer than k sources",
		      p->read);
		/* today's choices: one data slot from the other data and P,
		 * a redundancy slot from the data */
		if (pop(want) == 1 && pop(lost) == 1 && (want & data))
			CHECK(p->read == ((data | 1ull << k) & ~want), "one data slot: reads %#" PRIx64, p->read);
		if (pop(want) == 1 && !(want & data) && !(lost & data))
			CHECK(p->read == data, "a redundancy slot: reads %#" PRIx64, p->read);
		/* verifying (recon.h): redundancy from the data alone is an
		 * encode exactly when every data slot is there */
		if (!(want & data) && (lost & ~data) == (all & ~data))
			CHECK((p->op == RECON_ENCODE) == !(lost & data), "lost %#" PRIx64 " want %#" PRIx64 ": %s",
			      lost, want, recon_op_name(p->op));
		if (m <= 2 && p->op == RECON_DECODE)
			CHECK(pop(p->read) == (int)k, "decode reads %d slots", pop(p->read));
	}

	/* execute on garbage where nothing is read */
	struct row r;
	uint8_t *blk[LAYOUT_MAX_WIDTH];
	for (uint32_t i = 0; i < n; i++) {
		blk[i] = r.b[i];
		if (p->read >> i & 1)
			memcpy(r.b[i], orig->b[i], LEN);
		else
			for (int x = 0; x < LEN; x++)
				r.b[i][x] = (uint8_t)rnd();
	}
	int rc = recon_compute(p, LEN, blk);
	CHECK(rc == 0, "recon_compute %s: %d", recon_op_name(p->op), rc);
	for (uint32_t i = 0; i < n && rc == 0; i++)
		if (want >> i & 1)
			CHECK(memcmp(r.b[i], orig->b[i], LEN) == 0,
			      "lost %#" PRIx64 " want %#" PRIx64 ": slot %u wrong after %s (reads %#" PRIx64 ")", lost,
			      want, i, recon_op_name(p->op), p->read);
	for (uint32_t i = 0; i < n && rc == 0 && l->red == RED_PARITY; i++)
		if (p->calc >> i & 1)
			CHECK(memcmp(r.b[i], orig->b[i], LEN) == 0, "computed slot %u wrong after %s", i,
			      recon_op_name(p->op));
}

/* Plan (lost, want) of group g in stripe s, check it, then again with
 * each slot it reads excluded. */
static void check_case(const struct layout *l, uint64_t s, uint32_t g, uint64_t lost, uint64_t want,
		       const struct row *orig)
{
	const uint32_t n = l->k + l->m;
	uint64_t readable = rnd() & bits(l->width);	/* other groups: anything */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t mem = spec_member(l, s, g, i);
		readable = (lost >> i & 1) ? readable & ~(1ull << mem) : readable | 1ull << mem;
	}
	uint32_t prefer = (uint32_t)(rnd() % (2 * n));
	struct recon_plan p;
	enum recon_op op = recon_plan(&p, l, s, g, readable, want, prefer);
	CHECK(op == p.op, "returned %d, plan says %d", op, p.op);
	check_plan(l, &p, s, g, lost, want, prefer % n, orig);
	if (p.op == RECON_IMPOSSIBLE)
		return;
	for (uint32_t x = 0; x < n; x++) {
		if (!(p.read >> x & 1))
			continue;
		struct recon_plan q = p;
		recon_exclude(&q, x);
		check_plan(l, &q, s, g, lost | 1ull << x, want, prefer % n, orig);
		if (l->red == RED_PARITY && q.op != RECON_IMPOSSIBLE)
			CHECK(q.calc >> x & 1, "excluded slot %u not computed (%s)", x, recon_op_name(q.op));
	}
}

static void test_layout_(enum raid_level lv, uint32_t width, uint32_t groups)
{
	for (uint32_t rot = 0; rot < 2; rot++) {
		struct layout l;
		const char *why = NULL;
		if (layout_init(&l, lv, 4096, width, groups, rot, &why)) {
			snprintf(where, sizeof(where), "%s width=%u groups=%u", layout_level_name(lv), width, groups);
			failed(__LINE__, "layout_init", "%s", why ? why : "");
			return;
		}
		const uint32_t n = l.k + l.m;
		const uint64_t all = bits(n);
		uint64_t wants[LAYOUT_MAX_WIDTH + 8];
		int nw = 0;
		if (n > 8) {	/* (up to 8 slots: every set, below) */
			for (uint32_t i = 0; i < n; i++)
				wants[nw++] = 1ull << i;
			wants[nw++] = bits(l.k);
			wants[nw++] = all & ~bits(l.k);
			wants[nw++] = all;
		}
		for (uint64_t s = 0; s < l.gw; s++) {
			for (uint32_t g = 0; g < l.groups; g++) {
				snprintf(where, sizeof(where), "%s width=%u groups=%u rot=%u s=%" PRIu64 " g=%u",
					 layout_level_name(lv), width, l.groups, rot, s, g);
				struct row orig;
				make_row(&l, &orig);
				for (uint64_t lost = 0; lost <= all; lost++) {
					if ((uint32_t)pop(lost) > l.m + 1)
						continue;
					if (n <= 8)
						for (uint64_t w = 1; w <= all; w++)
							check_case(&l, s, g, lost, w, &orig);
					else
						for (int i = 0; i < nw; i++)
							check_case(&l, s, g, lost, wants[i], &orig);
				}
			}
		}
	}
}

int main(void)
{
	static const struct { enum raid_level lv; uint32_t w0, w1, step, groups; } shapes[] = {
		{ LEVEL_SINGLE, 1, 1, 1, 0 },
		{ LEVEL_RAID0, 2, 4, 1, 0 },
		{ LEVEL_RAID1, 2, 4, 1, 0 },
		{ LEVEL_RAID5, 3, 8, 1, 0 },
		{ LEVEL_RAID6, 4, 8, 1, 0 },
		{ LEVEL_RAID10, 4, 8, 2, 0 },
		{ LEVEL_RAID50, 6, 8, 2, 2 },
		{ LEVEL_RAID50, 9, 12, 3, 3 },
		{ LEVEL_RAID60, 8, 10, 2, 2 },
		{ LEVEL_RAID60, 12, 12, 3, 3 },
	};
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		for (uint32_t w = shapes[i].w0; w <= shapes[i].w1; w += shapes[i].step)
			test_layout_(shapes[i].lv, w, shapes[i].groups);
	/* wide groups: one raid6 of 16 (k = 14, wanted sets thinned out) */
	test_layout_(LEVEL_RAID6, 16, 0);

	printf("test_recon: %llu plans, %llu checks, %lu failed\n", nplans, nchecks, nfailed);
	return nfailed ? 1 : 0;
}
