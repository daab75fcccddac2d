/*
 * test_layout.c - exhaustive unit test of src/layout.c.
 *
 * Every layout the array can be created with (every level, widths from
 * the minimum to 16, raid50/60 with 2..4 groups, every rotation, chunks of
 * 4 KiB and 64 KiB, a few of 1 MiB) is checked for:
 *   - layout_init(): derived fields, rotation reduction, and rejection of
 *     every bad input, compared against an independent validity rule;
 *   - placement: every (stripe, member) slot used exactly once, the
 *     slot <-> member and data index <-> slot functions invert each other,
 *     placement equals a direct transcription of the formulas in layout.h,
 *     parity rotates over every position, groups stay in their members;
 *   - known tables written by hand from Linux md's left-symmetric layout
 *     (drivers/md/raid5.c, raid5_compute_sector) for raid5, raid6, and
 *     small raid0/raid10/raid50 arrays;
 *   - layout_map()/layout_unmap() round trips at and around every chunk
 *     and stripe boundary, at random and at huge offsets;
 *   - layout_rotation_for_id() spreads random and sequential ids evenly;
 *   - layout_tolerance() against a brute force over every set of lost
 *     members;
 *   - layout_shard_size()/layout_size_from_shard(): the size recovers
 *     exactly from the shard lengths, and (chunk 4 KiB) both agree with a
 *     byte-by-byte walk of the file through layout_map() and
 *     layout_slot_member().
 *
 * Exit status 0 when everything passed, 1 otherwise; failures print the
 * layout and the values involved.  Deterministic (fixed seeds).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "layout.h"
#include "layout_spec.h"

/* ------------------------------------------------------------------ */
/* Harness */

static unsigned long long nchecks;
static unsigned long nfailed;
static unsigned long nlayouts;
static char where[160];		/* the layout under test, for messages */

#define MAX_REPORTED 25

static void failed(int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	nfailed++;
	if (nfailed > MAX_REPORTED)
		return;
	fprintf(stderr, "test_layout.c:%d: FAIL [%s] (%s) ", line, where, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (nfailed == MAX_REPORTED)
		fprintf(stderr, "(further failures not shown)\n");
}

/* CHECK(cond, printf-args describing the values involved) */
#define CHECK(cond, ...) do {					\
	nchecks++;						\
	if (!(cond))						\
		failed(__LINE__, #cond, __VA_ARGS__);		\
} while (0)

static void set_where(const struct layout *l)
{
	snprintf(where, sizeof(where), "%s width=%u groups=%u chunk=%u rot=%u",
		 layout_level_name(l->level), l->width, l->groups, l->chunk,
		 l->rotation);
}

/* xorshift64*: deterministic pseudo-random numbers. */
static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static const enum raid_level all_levels[] = {
	LEVEL_SINGLE, LEVEL_RAID0, LEVEL_RAID1, LEVEL_RAID5,
	LEVEL_RAID6, LEVEL_RAID10, LEVEL_RAID50, LEVEL_RAID60,
};
#define NLEVELS (sizeof(all_levels) / sizeof(all_levels[0]))

/* ------------------------------------------------------------------ */
/* Independent statements of the contract */

/* Redundancy slots per group (m), straight from the table in layout.h. */
static uint32_t spec_m(enum raid_level lv, uint32_t width)
{
	switch (lv) {
	case LEVEL_RAID1:	return width - 1;
	case LEVEL_RAID5:
	case LEVEL_RAID10:
	case LEVEL_RAID50:	return 1;
	case LEVEL_RAID6:
	case LEVEL_RAID60:	return 2;
	default:		return 0;
	}
}

/* Members per group below which a level is refused. */
static uint32_t spec_min_group(enum raid_level lv)
{
	switch (lv) {
	case LEVEL_SINGLE:	return 1;
	case LEVEL_RAID0:
	case LEVEL_RAID1:	return 2;
	case LEVEL_RAID5:
	case LEVEL_RAID50:	return 3;
	case LEVEL_RAID6:
	case LEVEL_RAID60:	return 4;
	case LEVEL_RAID10:	return 4;
	default:		return 0;
	}
}

/* Whether layout_init() must accept (level, chunk, width, groups). */
static int spec_valid(enum raid_level lv, uint32_t chunk, uint32_t width,
		      uint32_t groups)
{
	if ((unsigned int)lv >= LEVEL_COUNT)
		return 0;
	if (chunk < 4096 || chunk > 1048576 || (chunk & (chunk - 1)))
		return 0;
	if (width > 64)
		return 0;
	switch (lv) {
	case LEVEL_SINGLE:
		return width == 1;
	case LEVEL_RAID10:
		return width % 2 == 0 && width >= 4;
	case LEVEL_RAID50:
	case LEVEL_RAID60: {
		uint32_t g = groups ? groups : 2;

		return g >= 2 && width % g == 0 &&
		       width / g >= spec_min_group(lv);
	}
	default:
		return width >= spec_min_group(lv);
	}
}

/* Number of distinct rotations: pairs for raid10, gw for the rest. */
static uint32_t spec_period(const struct layout *l)
{
	return l->level == LEVEL_RAID10 ? l->width / 2 : l->gw;
}

/*
 * layout_slot_member() for tests that index arrays with the result: an
 * out-of-range member is a failure, not a crash of the test.
 */
static uint32_t member_of(const struct layout *l, uint64_t s, uint32_t g,
			  uint32_t slot)
{
	uint32_t mem = layout_slot_member(l, s, g, slot);

	CHECK(mem < l->width, "s=%" PRIu64 " g=%u slot=%u -> member %u",
	      s, g, slot, mem);
	return mem < l->width ? mem : 0;
}

/* ------------------------------------------------------------------ */
/* Enumeration of layouts */

struct shape {
	enum raid_level level;
	uint32_t width, groups;	/* groups as passed to layout_init() */
};

static struct shape shapes[512];
static int nshapes;

/* Every (level, width, groups) with width <= 16 that layout_init takes. */
static void build_shapes(void)
{
	for (size_t i = 0; i < NLEVELS; i++) {
		enum raid_level lv = all_levels[i];

		for (uint32_t w = 1; w <= 16; w++) {
			if (lv == LEVEL_RAID50 || lv == LEVEL_RAID60) {
				for (uint32_t g = 2; g <= 4; g++)
					if (spec_valid(lv, 4096, w, g))
						shapes[nshapes++] =
							(struct shape){ lv, w, g };
			} else if (spec_valid(lv, 4096, w, 0)) {
				shapes[nshapes++] = (struct shape){ lv, w, 0 };
			}
		}
	}
}

static int make(struct layout *l, const struct shape *sh, uint32_t chunk,
		uint32_t rot)
{
	const char *why = NULL;
	int rc = layout_init(l, sh->level, chunk, sh->width, sh->groups, rot,
			     &why);

	if (rc) {
		snprintf(where, sizeof(where), "%s width=%u groups=%u",
			 layout_level_name(sh->level), sh->width, sh->groups);
		failed(__LINE__, "make", "layout_init refused a valid layout: %d %s",
		       rc, why ? why : "(no message)");
		return -1;
	}
	set_where(l);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Names */

static void test_names(void)
{
	snprintf(where, sizeof(where), "names");
	for (size_t i = 0; i < NLEVELS; i++) {
		const char *n = layout_level_name(all_levels[i]);
		char up[16];
		size_t j;

		CHECK(n != NULL && (strncmp(n, "raid", 4) == 0 ||
				    strcmp(n, "single") == 0), "level %zu", i);
		if (!n)
			continue;
		CHECK(layout_level_parse(n) == (int)all_levels[i],
		      "'%s' parses to %d", n, layout_level_parse(n));
		for (j = 0; n[j] && j < sizeof(up) - 1; j++)
			up[j] = (char)(n[j] >= 'a' && n[j] <= 'z' ?
				       n[j] - 32 : n[j]);
		up[j] = 0;
		CHECK(layout_level_parse(up) == (int)all_levels[i],
		      "'%s' (upper case)", up);
	}
	CHECK(strcmp(layout_level_name(LEVEL_RAID10), "raid10") == 0, "");
	CHECK(strcmp(layout_level_name(LEVEL_RAID60), "raid60") == 0, "");
	CHECK(strcmp(layout_level_name(LEVEL_SINGLE), "single") == 0, "");
	CHECK(layout_level_name(LEVEL_COUNT) != NULL, "");
	CHECK(layout_level_name((enum raid_level)-1) != NULL, "");
	CHECK(layout_level_parse(NULL) == -1, "");
	CHECK(layout_level_parse("") == -1, "");
	CHECK(layout_level_parse("raid") == -1, "");
	CHECK(layout_level_parse("raid2") == -1, "");
	CHECK(layout_level_parse("raid5 ") == -1, "");
	CHECK(layout_level_parse("raid500") == -1, "");
	CHECK(layout_level_parse("unknown") == -1, "");
}

/* ------------------------------------------------------------------ */
/* layout_init: acceptance, derived fields, rejection */

static int message_ok(const char *why)
{
	return why && why[0] && !(why[0] >= 'A' && why[0] <= 'Z') &&
	       why[strlen(why) - 1] != '.' && why[strlen(why) - 1] != '\n';
}

/* One call compared with spec_valid(); on success the derived fields. */
static void check_init(enum raid_level lv, uint32_t chunk, uint32_t width,
		       uint32_t groups, uint32_t rot)
{
	struct layout l, before;
	const char *why = "untouched";
	int want = spec_valid(lv, chunk, width, groups);
	int rc;

	memset(&l, 0xa5, sizeof(l));
	before = l;
	rc = layout_init(&l, lv, chunk, width, groups, rot, &why);
	snprintf(where, sizeof(where), "init level=%d chunk=%u width=%u "
		 "groups=%u rot=%u", (int)lv, chunk, width, groups, rot);
	if (!want) {
		CHECK(rc == -EINVAL, "accepted or wrong error: %d", rc);
		CHECK(message_ok(why) && strcmp(why, "untouched"),
		      "bad message '%s'", why ? why : "(null)");
		CHECK(memcmp(&l, &before, sizeof(l)) == 0,
		      "layout changed on failure");
		/* why == NULL must be accepted too */
		CHECK(layout_init(&l, lv, chunk, width, groups, rot, NULL) ==
		      -EINVAL, "");
		return;
	}
	CHECK(rc == 0, "refused: %d '%s'", rc, why ? why : "(null)");
	if (rc)
		return;
	CHECK(strcmp(why, "untouched") == 0, "why set on success: '%s'", why);

	uint32_t g = 1, m = spec_m(lv, width);
	enum redundancy red = RED_NONE;

	if (lv == LEVEL_RAID10)
		g = width / 2;
	if (lv == LEVEL_RAID50 || lv == LEVEL_RAID60)
		g = groups ? groups : 2;
	if (lv == LEVEL_RAID1 || lv == LEVEL_RAID10)
		red = RED_MIRROR;
	if (lv == LEVEL_RAID5 || lv == LEVEL_RAID6 || lv == LEVEL_RAID50 ||
	    lv == LEVEL_RAID60)
		red = RED_PARITY;
	CHECK(l.level == lv && l.chunk == chunk && l.width == width,
	      "level/chunk/width not stored");
	CHECK(l.groups == g, "groups %u, want %u", l.groups, g);
	CHECK(l.gw == width / g, "gw %u, want %u", l.gw, width / g);
	CHECK(l.m == m, "m %u, want %u", l.m, m);
	CHECK(l.k == (lv == LEVEL_RAID1 || lv == LEVEL_RAID10 ? 1 :
		      width / g - m), "k %u", l.k);
	CHECK(l.groups * (l.k + l.m) == width, "slots per stripe != width");
	CHECK(l.red == red, "red %d, want %d", l.red, red);
	CHECK(l.rotation == rot % spec_period(&l),
	      "rotation %u, want %u", l.rotation, rot % spec_period(&l));
	CHECK(layout_data_chunks(&l) == l.groups * l.k, "");
	CHECK(layout_stripe_data_bytes(&l) ==
	      (uint64_t)l.groups * l.k * chunk, "");
}

static void test_init(void)
{
	static const uint32_t bad_chunks[] = {
		0, 1, 2, 512, 1024, 2048, 4095, 4097, 6144, 12288, 65535,
		65537, 98304, 1048575, 1048577, 2097152, 1u << 31,
		0xffffffffu, 3 * 4096,
	};
	static const uint32_t rots[] = { 0, 1, 5, 63, 1000, 0xffffffffu };

	/* Every level x width 0..70 x groups 0..8, valid or not. */
	for (int lv = -1; lv <= LEVEL_COUNT; lv++)
		for (uint32_t w = 0; w <= 70; w++)
			for (uint32_t g = 0; g <= 8; g++)
				check_init((enum raid_level)lv, 65536, w, g,
					   (w * 7 + g) % 19);
	/* Every power-of-two chunk and the bad ones, on valid shapes. */
	for (size_t i = 0; i < NLEVELS; i++) {
		enum raid_level lv = all_levels[i];
		uint32_t w = layout_min_width(lv);

		for (int b = 0; b < 32; b++)
			check_init(lv, 1u << b, w, 0, 0);
		for (size_t c = 0; c < sizeof(bad_chunks) / 4; c++)
			check_init(lv, bad_chunks[c], w, 0, 0);
		for (size_t r = 0; r < sizeof(rots) / 4; r++)
			check_init(lv, 4096, w == 1 ? 1 : 12, 3, rots[r]);
	}

	/* The messages say what is wrong, naming the level. */
	static const struct { enum raid_level lv; uint32_t chunk, w, g;
			      const char *needle; } msgs[] = {
		{ LEVEL_RAID6, 65536, 3, 0, "raid6" },
		{ LEVEL_RAID6, 65536, 3, 0, "4" },
		{ LEVEL_RAID5, 65536, 2, 0, "raid5" },
		{ LEVEL_RAID0, 65536, 1, 0, "raid0" },
		{ LEVEL_RAID1, 65536, 1, 0, "raid1" },
		{ LEVEL_SINGLE, 65536, 2, 0, "single" },
		{ LEVEL_RAID10, 65536, 5, 0, "even" },
		{ LEVEL_RAID10, 65536, 2, 0, "raid10" },
		{ LEVEL_RAID50, 65536, 7, 2, "multiple" },
		{ LEVEL_RAID50, 65536, 6, 1, "group" },
		{ LEVEL_RAID50, 65536, 6, 3, "3 members per group" },
		{ LEVEL_RAID60, 65536, 12, 4, "4 members per group" },
		{ LEVEL_RAID5, 65536, 65, 0, "64" },
		{ LEVEL_RAID5, 6144, 4, 0, "power of two" },
		{ LEVEL_RAID5, 2048, 4, 0, "4 KiB" },
		{ LEVEL_RAID5, 2097152, 4, 0, "1 MiB" },
	};
	for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
		struct layout l;
		const char *why = NULL;

		snprintf(where, sizeof(where), "message %zu", i);
		CHECK(layout_init(&l, msgs[i].lv, msgs[i].chunk, msgs[i].w,
				  msgs[i].g, 0, &why) == -EINVAL, "");
		CHECK(why && strstr(why, msgs[i].needle),
		      "'%s' lacks '%s'", why ? why : "(null)", msgs[i].needle);
	}
	{
		const char *why = NULL;
		struct layout l;

		snprintf(where, sizeof(where), "message raid6 3");
		layout_init(&l, LEVEL_RAID6, 65536, 3, 0, 0, &why);
		CHECK(why && strcmp(why, "raid6 needs at least 4 members") == 0,
		      "'%s'", why ? why : "(null)");
	}
}

static void test_min_width_tolerance(void)
{
	static const uint32_t want_min[LEVEL_COUNT] = {
		[LEVEL_SINGLE] = 1, [LEVEL_RAID0] = 2, [LEVEL_RAID1] = 2,
		[LEVEL_RAID5] = 3, [LEVEL_RAID6] = 4, [LEVEL_RAID10] = 4,
		[LEVEL_RAID50] = 6, [LEVEL_RAID60] = 8,
	};

	for (size_t i = 0; i < NLEVELS; i++) {
		enum raid_level lv = all_levels[i];
		uint32_t w = layout_min_width(lv);
		struct layout l;

		snprintf(where, sizeof(where), "min width %s",
			 layout_level_name(lv));
		CHECK(w == want_min[lv], "%u, want %u", w, want_min[lv]);
		CHECK(layout_init(&l, lv, 65536, w, 0, 0, NULL) == 0, "");
		for (uint32_t x = 0; x < w; x++)
			CHECK(layout_init(&l, lv, 65536, x, 0, 0, NULL) ==
			      -EINVAL, "width %u accepted", x);
	}

	/* Tolerance: the table, then a brute force over lost-member sets. */
	for (int si = 0; si < nshapes; si++) {
		const struct shape *sh = &shapes[si];
		struct layout l;
		uint32_t want;

		if (make(&l, sh, 4096, 0))
			continue;
		switch (sh->level) {
		case LEVEL_RAID1:	want = sh->width - 1; break;
		case LEVEL_RAID5:
		case LEVEL_RAID10:
		case LEVEL_RAID50:	want = 1; break;
		case LEVEL_RAID6:
		case LEVEL_RAID60:	want = 2; break;
		default:		want = 0; break;
		}
		CHECK(layout_tolerance(&l) == want, "%u, want %u",
		      layout_tolerance(&l), want);
		if (sh->width > 12)
			continue;

		/*
		 * A set of lost members is survivable when in every stripe
		 * every group can still produce its data: parity groups
		 * lose at most m slots, mirror groups keep one copy, plain
		 * stripes lose nothing.  The tolerance is one less than
		 * the smallest unsurvivable set.
		 */
		uint32_t smallest_bad = sh->width + 1;

		for (uint32_t rot = 0; rot < spec_period(&l); rot++) {
			struct layout lr;

			layout_init(&lr, sh->level, 4096, sh->width,
				    sh->groups, rot, NULL);
			for (uint64_t set = 1; set < (1ull << sh->width);
			     set++) {
				uint32_t n = (uint32_t)__builtin_popcountll(set);
				int ok = 1;

				if (n >= smallest_bad)
					continue;
				for (uint64_t s = 0; s < lr.gw && ok; s++)
					for (uint32_t g = 0; g < lr.groups; g++) {
						uint32_t lost = 0;

						for (uint32_t j = 0; j < lr.k + lr.m; j++)
							lost += (set >> member_of(&lr, s, g, j)) & 1;
						if ((lr.red == RED_PARITY && lost > lr.m) ||
						    (lr.red == RED_MIRROR && lost == lr.k + lr.m) ||
						    (lr.red == RED_NONE && lost))
							ok = 0;
					}
				if (!ok)
					smallest_bad = n;
			}
		}
		CHECK(layout_tolerance(&l) + 1 == smallest_bad,
		      "tolerance %u but %u lost members lose data",
		      layout_tolerance(&l), smallest_bad);
	}
}

/* ------------------------------------------------------------------ */
/* Placement */

static void check_stripe(const struct layout *l, uint64_t s)
{
	uint8_t used[LAYOUT_MAX_WIDTH] = { 0 };
	uint32_t nused = 0;

	for (uint32_t g = 0; g < l->groups; g++) {
		for (uint32_t slot = 0; slot < l->k + l->m; slot++) {
			uint32_t mem = layout_slot_member(l, s, g, slot);
			uint32_t g2 = ~0u, slot2 = ~0u;

			CHECK(mem < l->width, "s=%" PRIu64 " g=%u slot=%u -> %u",
			      s, g, slot, mem);
			if (mem >= l->width)
				continue;
			CHECK(!used[mem], "s=%" PRIu64 " member %u used twice",
			      s, mem);
			used[mem] = 1;
			nused++;
			CHECK(mem == spec_member(l, s, g, slot),
			      "s=%" PRIu64 " g=%u slot=%u -> %u, formula says %u",
			      s, g, slot, mem, spec_member(l, s, g, slot));
			layout_member_slot(l, s, mem, &g2, &slot2);
			CHECK(g2 == g && slot2 == slot,
			      "s=%" PRIu64 " member %u -> (%u,%u), want (%u,%u)",
			      s, mem, g2, slot2, g, slot);
			/* groups stay on their members */
			if (l->level == LEVEL_RAID10)
				CHECK(mem / 2 == (g + l->rotation) % l->groups,
				      "raid10 group %u on member %u", g, mem);
			else
				CHECK(mem / l->gw == g,
				      "group %u on member %u", g, mem);
		}
	}
	CHECK(nused == l->width, "s=%" PRIu64 ": %u of %u members used",
	      s, nused, l->width);
	for (uint32_t mem = 0; mem < l->width; mem++) {
		uint32_t g = ~0u, slot = ~0u;

		layout_member_slot(l, s, mem, &g, &slot);
		CHECK(g < l->groups && slot < l->k + l->m,
		      "member %u -> (%u,%u)", mem, g, slot);
		if (g < l->groups && slot < l->k + l->m)
			CHECK(layout_slot_member(l, s, g, slot) == mem,
			      "member %u round trip", mem);
	}
}

static void test_placement(const struct layout *l)
{
	uint32_t D = layout_data_chunks(l);
	uint8_t seen[LAYOUT_MAX_WIDTH * LAYOUT_MAX_WIDTH];
	uint64_t ns = 3 * (uint64_t)l->gw + 2;

	/* data index <-> (group, slot), independent of the stripe */
	memset(seen, 0, sizeof(seen));
	for (uint32_t d = 0; d < D; d++) {
		uint32_t g = ~0u, slot = ~0u;

		layout_data_slot(l, d, &g, &slot);
		CHECK(g == d % l->groups && slot == d / l->groups,
		      "d=%u -> (%u,%u)", d, g, slot);
		if (g >= l->groups || slot >= l->k) {
			CHECK(0, "d=%u out of range (%u,%u)", d, g, slot);
			continue;
		}
		CHECK(!seen[g * l->k + slot], "(%u,%u) hit twice", g, slot);
		seen[g * l->k + slot] = 1;
		CHECK(layout_data_index(l, g, slot) == d, "d=%u back %u", d,
		      layout_data_index(l, g, slot));
	}

	for (uint64_t s = 0; s < ns; s++)
		check_stripe(l, s);
	/* stripes far out: no overflow, same period */
	for (uint64_t s = (1ull << 40) - 3; s < (1ull << 40) + 3; s++)
		check_stripe(l, s);
	check_stripe(l, UINT64_MAX / l->chunk);

	/* rotation is a stripe shift for parity levels */
	if (l->red == RED_PARITY) {
		struct layout l0 = *l;

		l0.rotation = 0;
		for (uint64_t s = 0; s < l->gw; s++)
			for (uint32_t slot = 0; slot < l->k + l->m; slot++)
				CHECK(layout_slot_member(l, s, 0, slot) ==
				      layout_slot_member(&l0, s + l->rotation, 0,
							 slot),
				      "rotation is not a stripe shift");
	}

	/* parity visits every position of its group once per gw stripes */
	if (l->red == RED_PARITY) {
		for (uint64_t s0 = 0; s0 < l->gw + 1; s0++)
			for (uint32_t g = 0; g < l->groups; g++)
				for (uint32_t j = l->k; j < l->k + l->m; j++) {
					uint64_t hit = 0;

					for (uint64_t s = s0; s < s0 + l->gw; s++)
						hit |= 1ull << (layout_slot_member(l, s, g, j) - g * l->gw);
					CHECK(hit == (l->gw == 64 ? ~0ull :
						      (1ull << l->gw) - 1),
					      "redundancy slot %u from s=%" PRIu64
					      " hits %#" PRIx64, j, s0, hit);
				}
	}
}

/* Hand-written tables; entries are global data chunk numbers, -1 = P,
 * -2 = Q. */
static void check_table(const char *name, enum raid_level lv, uint32_t w,
			uint32_t groups, uint32_t rot, int rows,
			const int table[][8])
{
	struct layout l;

	if (layout_init(&l, lv, 4096, w, groups, rot, NULL)) {
		snprintf(where, sizeof(where), "%s", name);
		CHECK(0, "refused");
		return;
	}
	snprintf(where, sizeof(where), "table %s", name);
	for (int s = 0; s < rows; s++) {
		for (uint32_t mem = 0; mem < w; mem++) {
			uint32_t g, slot;
			int got;

			layout_member_slot(&l, s, mem, &g, &slot);
			if (slot < l.k)
				got = (int)(s * layout_data_chunks(&l) +
					    layout_data_index(&l, g, slot));
			else if (l.red == RED_MIRROR)
				got = (int)(s * layout_data_chunks(&l) +
					    layout_data_index(&l, g, 0));
			else
				got = slot == l.k ? -1 : -2;
			CHECK(got == table[s][mem],
			      "stripe %d member %u: %d, want %d", s, mem, got,
			      table[s][mem]);
		}
	}
}

#define P -1
#define Q -2
static void test_tables(void)
{
	/*
	 * md left-symmetric, raid5 on 4 disks: pd_idx = 3 - s % 4, data
	 * chunk j on (pd_idx + 1 + j) % 4.
	 */
	static const int r5[][8] = {
		{  0,  1,  2,  P },
		{  4,  5,  P,  3 },
		{  8,  P,  6,  7 },
		{  P,  9, 10, 11 },
		{ 12, 13, 14,  P },
	};
	/* same, rotation 2: starts where md's stripe 2 is */
	static const int r5r2[][8] = {
		{  2,  P,  0,  1 },
		{  P,  3,  4,  5 },
		{  6,  7,  8,  P },
		{ 10, 11,  P,  9 },
	};
	/*
	 * md left-symmetric, raid6 on 5 disks: pd_idx = 4 - s % 5,
	 * qd_idx = (pd_idx + 1) % 5, data j on (pd_idx + 2 + j) % 5.
	 */
	static const int r6[][8] = {
		{  Q,  0,  1,  2,  P },
		{  3,  4,  5,  P,  Q },
		{  7,  8,  P,  Q,  6 },
		{ 11,  P,  Q,  9, 10 },
		{  P,  Q, 12, 13, 14 },
		{  Q, 15, 16, 17,  P },
	};
	/* raid50, 2 groups of 3: chunks alternate between the groups */
	static const int r50[][8] = {
		{  0,  2,  P,  1,  3,  P },
		{  6,  P,  4,  7,  P,  5 },
		{  P,  8, 10,  P,  9, 11 },
		{ 12, 14,  P, 13, 15,  P },
	};
	/* raid60, 2 groups of 4 */
	static const int r60[][8] = {
		{ Q,  0,  2,  P,  Q,  1,  3,  P },
		{ 4,  6,  P,  Q,  5,  7,  P,  Q },
	};
	/* raid0, 3 disks, rotation 1 */
	static const int r0[][8] = {
		{ 2, 0, 1 },
		{ 5, 3, 4 },
	};
	/* raid10, 6 disks (3 pairs), rotation 0 and 1 (mirrors show the
	 * chunk they copy) */
	static const int r10[][8] = {
		{ 0, 0, 1, 1, 2, 2 },
		{ 3, 3, 4, 4, 5, 5 },
	};
	static const int r10r1[][8] = {
		{ 2, 2, 0, 0, 1, 1 },
		{ 5, 5, 3, 3, 4, 4 },
	};
	static const int r1[][8] = {
		{ 0, 0, 0 },
		{ 1, 1, 1 },
	};

	check_table("raid5 4", LEVEL_RAID5, 4, 0, 0, 5, r5);
	check_table("raid5 4 rot 2", LEVEL_RAID5, 4, 0, 2, 4, r5r2);
	check_table("raid6 5", LEVEL_RAID6, 5, 0, 0, 6, r6);
	check_table("raid50 6", LEVEL_RAID50, 6, 2, 0, 4, r50);
	check_table("raid60 8", LEVEL_RAID60, 8, 2, 0, 2, r60);
	check_table("raid0 3 rot 1", LEVEL_RAID0, 3, 0, 1, 2, r0);
	check_table("raid10 6", LEVEL_RAID10, 6, 0, 0, 2, r10);
	check_table("raid10 6 rot 1", LEVEL_RAID10, 6, 0, 1, 2, r10r1);
	check_table("raid1 3 rot 2", LEVEL_RAID1, 3, 0, 2, 2, r1);
}
#undef P
#undef Q

/* ------------------------------------------------------------------ */
/* Address mapping */

static void check_off(const struct layout *l, uint64_t off)
{
	uint64_t sb = layout_stripe_data_bytes(l), s = ~0ull;
	uint32_t d = ~0u, o = ~0u;

	layout_map(l, off, &s, &d, &o);
	CHECK(s == off / sb && d == off % sb / l->chunk && o == off % l->chunk,
	      "map(%" PRIu64 ") = (%" PRIu64 ",%u,%u)", off, s, d, o);
	CHECK(layout_unmap(l, s, d, o) == off, "unmap(map(%" PRIu64 "))", off);
}

static void test_map(const struct layout *l)
{
	uint32_t D = layout_data_chunks(l);
	uint64_t sb = layout_stripe_data_bytes(l);

	for (uint64_t j = 0; j <= 3 * (uint64_t)D + 2; j++)
		for (int64_t delta = -2; delta <= 2; delta++)
			if ((int64_t)(j * l->chunk) + delta >= 0)
				check_off(l, j * l->chunk + delta);
	for (uint64_t i = 0; i <= 4; i++) {
		check_off(l, i * sb + l->chunk / 2);
		check_off(l, (i + 1) * sb - 1);
	}
	for (int i = 0; i < 200; i++) {
		check_off(l, rnd() % (64 * sb));
		check_off(l, rnd() >> 1);	/* below 2^63 */
	}
	check_off(l, (1ull << 63) - 1);
	check_off(l, (1ull << 62) / sb * sb);

	/* every (s, d, o) corner maps back */
	for (uint64_t s = 0; s < 3; s++)
		for (uint32_t d = 0; d < D; d++) {
			static const uint32_t os[] = { 0, 1, 2, 4095 };

			for (int i = 0; i < 4; i++) {
				uint32_t o = os[i] % l->chunk;
				uint64_t off = layout_unmap(l, s, d, o), s2;
				uint32_t d2, o2;

				CHECK(off == (s * D + d) * l->chunk + o,
				      "unmap(%" PRIu64 ",%u,%u)", s, d, o);
				layout_map(l, off, &s2, &d2, &o2);
				CHECK(s2 == s && d2 == d && o2 == o,
				      "map(unmap(%" PRIu64 ",%u,%u))", s, d, o);
			}
			CHECK(layout_unmap(l, s, d, l->chunk - 1) + 1 ==
			      (s * D + d + 1) * l->chunk, "chunk end");
		}
}

/* ------------------------------------------------------------------ */
/* Rotation spreading */

static void test_spread(const struct shape *sh)
{
	struct layout l;
	enum { N = 10000 };

	if (make(&l, sh, 65536, 0))
		return;
	uint32_t period = spec_period(&l);
	uint32_t rot_hits[LAYOUT_MAX_WIDTH] = { 0 }, seq_hits[LAYOUT_MAX_WIDTH] = { 0 };
	uint32_t str_hits[LAYOUT_MAX_WIDTH] = { 0 };
	uint32_t mem_hits[LAYOUT_MAX_WIDTH] = { 0 };

	for (uint64_t i = 0; i < N; i++) {
		uint64_t id = rnd();
		uint32_t r = layout_rotation_for_id(&l, id);
		uint32_t rs = layout_rotation_for_id(&l, i);
		/* ids with low bits constant (counters shifted or strided)
		 * must spread too: that is what the mix is for */
		uint32_t rt = layout_rotation_for_id(&l, i << 32 | 0x40);
		struct layout lr;

		CHECK(r < period && rs < period && rt < period,
		      "rotation %u/%u/%u >= %u", r, rs, rt, period);
		if (r >= period || rs >= period || rt >= period)
			return;
		CHECK(layout_rotation_for_id(&l, id) == r, "not stable");
		rot_hits[r]++;
		seq_hits[rs]++;
		str_hits[rt]++;
		/* where does a file smaller than a chunk land? */
		layout_init(&lr, l.level, l.chunk, l.width, sh->groups, r, NULL);
		CHECK(lr.rotation == r, "layout_init changed rotation %u", r);
		mem_hits[member_of(&lr, 0, 0, 0)]++;
	}
	double want = (double)N / period;

	for (uint32_t r = 0; r < period; r++) {
		CHECK(rot_hits[r] > 0.8 * want && rot_hits[r] < 1.2 * want,
		      "random ids: rotation %u hit %u times, expected ~%.0f",
		      r, rot_hits[r], want);
		CHECK(seq_hits[r] > 0.8 * want && seq_hits[r] < 1.2 * want,
		      "sequential ids: rotation %u hit %u times, expected ~%.0f",
		      r, seq_hits[r], want);
		CHECK(str_hits[r] > 0.8 * want && str_hits[r] < 1.2 * want,
		      "strided ids: rotation %u hit %u times, expected ~%.0f",
		      r, str_hits[r], want);
	}
	/*
	 * Data chunk 0 of stripe 0 must visit every member that can hold
	 * it: every member of group 0 (raid0/5/6/50/60), slot 0 of every
	 * pair (raid10).  raid1 and single have no choice.
	 */
	if (l.level != LEVEL_RAID1) {
		uint32_t step = l.level == LEVEL_RAID10 ? 2 : 1;
		uint32_t span = l.level == LEVEL_RAID10 ? l.width : l.gw;

		for (uint32_t mem = 0; mem < span; mem += step)
			CHECK(mem_hits[mem] > 0.8 * want &&
			      mem_hits[mem] < 1.2 * want,
			      "chunk 0 on member %u %u times, expected ~%.0f",
			      mem, mem_hits[mem], want);
	}
}

/* ------------------------------------------------------------------ */
/* Shard lengths */

static void check_size(const struct layout *l, uint64_t size)
{
	uint64_t shard[LAYOUT_MAX_WIDTH], best = 0;
	uint64_t sb = layout_stripe_data_bytes(l);
	uint64_t last = size ? (size - 1) / sb : 0;

	for (uint32_t mem = 0; mem < l->width; mem++) {
		uint64_t back;

		shard[mem] = layout_shard_size(l, mem, size);
		back = layout_size_from_shard(l, mem, shard[mem]);
		CHECK(back <= size, "size %" PRIu64 " member %u: shard %" PRIu64
		      " claims size %" PRIu64, size, mem, shard[mem], back);
		if (back > best)
			best = back;
		if (size == 0) {
			CHECK(shard[mem] == 0, "size 0 member %u shard %" PRIu64,
			      mem, shard[mem]);
			continue;
		}
		CHECK(shard[mem] >= last * l->chunk &&
		      shard[mem] <= (last + 1) * l->chunk,
		      "size %" PRIu64 " member %u: shard %" PRIu64
		      " outside stripe %" PRIu64, size, mem, shard[mem], last);
		CHECK(layout_shard_size(l, mem, size + 1) >= shard[mem],
		      "size %" PRIu64 " member %u: shard shrinks on growth",
		      size, mem);
	}
	CHECK(best == size, "size %" PRIu64 " recovered as %" PRIu64,
	      size, best);

	/* redundancy is exactly as long as the longest data of its group */
	for (uint32_t g = 0; g < l->groups && size; g++) {
		uint64_t longest = 0;

		for (uint32_t j = 0; j < l->k; j++) {
			uint64_t x = shard[member_of(l, last, g, j)];

			longest = x > longest ? x : longest;
		}
		for (uint32_t j = l->k; j < l->k + l->m; j++)
			CHECK(shard[member_of(l, last, g, j)] == longest,
			      "size %" PRIu64 " group %u redundancy slot %u",
			      size, g, j);
	}
}

static void test_shards(const struct layout *l)
{
	uint32_t D = layout_data_chunks(l);
	uint64_t sb = layout_stripe_data_bytes(l);

	check_size(l, 0);
	for (uint64_t j = 0; j <= 3 * (uint64_t)D + 2; j++) {
		static const int64_t deltas[] = { -2, -1, 0, 1, 2, 100 };

		for (int i = 0; i < 6; i++)
			if ((int64_t)(j * l->chunk) + deltas[i] > 0)
				check_size(l, j * l->chunk + deltas[i]);
		check_size(l, j * l->chunk + l->chunk / 2);
	}
	for (int i = 0; i < 40; i++)
		check_size(l, 1 + rnd() % (2 * (uint64_t)l->gw * sb + 1));
	for (int i = 0; i < 10; i++)
		check_size(l, rnd() >> 4);
	check_size(l, (1ull << 62) / sb * sb);
	check_size(l, (1ull << 62) / sb * sb + 1);
}

/*
 * Byte-by-byte reference (chunk 4 KiB): walk every byte x of a file of
 * ns stripes through layout_map() and layout_slot_member().
 *
 * Shard length for size x+1: long enough for every data byte and every
 * redundancy byte computed from it so far, and at least up to the start
 * of the stripe holding byte x (dense shards).
 *
 * Size from shard length L: 1 + the largest logical offset of a data byte
 * (or mirror copy) the member stores below shard offset L.
 */
static void test_bruteforce(const struct layout *l)
{
	uint64_t sb = layout_stripe_data_bytes(l);
	uint64_t ns = l->red == RED_PARITY ? l->gw + 2 : 3;
	uint64_t total = ns * sb, slen = ns * l->chunk;
	uint64_t hi[LAYOUT_MAX_WIDTH] = { 0 };
	uint64_t *held = calloc(l->width * slen, sizeof(*held));

	if (!held) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	for (uint64_t x = 0; x < total; x++) {
		uint64_t s;
		uint32_t d, o, g, slot;

		layout_map(l, x, &s, &d, &o);
		layout_data_slot(l, d, &g, &slot);
		for (uint32_t j = 0; j < l->k + l->m; j++) {
			uint32_t mem;

			if (j < l->k && j != slot)
				continue;
			mem = member_of(l, s, g, j);
			if (s * l->chunk + o + 1 > hi[mem])
				hi[mem] = s * l->chunk + o + 1;
			if (j == slot || l->red == RED_MIRROR)
				held[mem * slen + s * l->chunk + o] = x + 1;
		}
		/* compare at every size in the first stripe, near chunk
		 * edges and at a sample further on (all sizes is slow) */
		if (s == 0 || o < 2 || o > l->chunk - 3 || (x & 255) == 0)
			for (uint32_t mem = 0; mem < l->width; mem++) {
				uint64_t want = s * l->chunk;

				if (hi[mem] > want)
					want = hi[mem];
				CHECK(layout_shard_size(l, mem, x + 1) == want,
				      "size %" PRIu64 " member %u: shard %" PRIu64
				      ", byte walk says %" PRIu64, x + 1, mem,
				      layout_shard_size(l, mem, x + 1), want);
			}
	}
	for (uint32_t mem = 0; mem < l->width; mem++) {
		uint64_t want = 0;

		for (uint64_t len = 0; len <= slen; len++) {
			if (len && held[mem * slen + len - 1])
				want = held[mem * slen + len - 1];
			CHECK(layout_size_from_shard(l, mem, len) == want,
			      "member %u shard %" PRIu64 ": size %" PRIu64
			      ", byte walk says %" PRIu64, mem, len,
			      layout_size_from_shard(l, mem, len), want);
		}
	}
	free(held);
}

/* ------------------------------------------------------------------ */

int main(void)
{
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	build_shapes();
	test_names();
	test_init();
	test_min_width_tolerance();
	test_tables();

	for (int si = 0; si < nshapes; si++) {
		const struct shape *sh = &shapes[si];
		struct layout l;

		if (make(&l, sh, 4096, 0))
			continue;
		test_spread(sh);
		for (uint32_t rot = 0; rot < spec_period(&l); rot++) {
			static const uint32_t chunks[] = { 4096, 65536 };

			for (int c = 0; c < 2; c++) {
				if (make(&l, sh, chunks[c], rot))
					continue;
				nlayouts++;
				test_placement(&l);
				test_map(&l);
				test_shards(&l);
			}
			/* 1 MiB: once per shape is enough */
			if (rot == spec_period(&l) - 1 &&
			    !make(&l, sh, 1048576, rot)) {
				nlayouts++;
				test_placement(&l);
				test_map(&l);
				test_shards(&l);
			}
			/* byte walk: small arrays, every rotation */
			if (sh->width <= 8 ||
			    (sh->width <= 12 && sh->groups >= 3)) {
				if (!make(&l, sh, 4096, rot))
					test_bruteforce(&l);
			}
		}
	}

	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("test_layout: %lu layouts, %llu checks, %lu failed (%.2f s)\n",
	       nlayouts, nchecks, nfailed,
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return nfailed ? 1 : 0;
}
