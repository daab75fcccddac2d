/*
 * layout.c - where every byte of a file lives.
 *
 * Everything here is arithmetic on the geometry in struct layout: no I/O,
 * no allocation, no global state.  The contract, the placement formulas
 * and the reasons behind them are in layout.h; this file only adds the
 * reasoning that is about the implementation.
 *
 * The one idea worth keeping in mind when reading the shard-length code:
 * within a stripe, data chunk d holds logical bytes [d*chunk, (d+1)*chunk)
 * of that stripe, so in a partial last stripe the bytes held per chunk are
 * non-increasing in d.  The longest data chunk of group g in any stripe is
 * therefore its slot 0 (data index g, the smallest index of the group).
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <strings.h>

#include "layout.h"

static const char *const level_names[LEVEL_COUNT] = {
	[LEVEL_SINGLE] = "single",
	[LEVEL_RAID0] = "raid0",
	[LEVEL_RAID1] = "raid1",
	[LEVEL_RAID5] = "raid5",
	[LEVEL_RAID6] = "raid6",
	[LEVEL_RAID10] = "raid10",
	[LEVEL_RAID50] = "raid50",
	[LEVEL_RAID60] = "raid60",
};

const char *layout_level_name(enum raid_level level)
{
	if ((unsigned int)level >= LEVEL_COUNT)
		return "unknown";
	return level_names[level];
}

int layout_level_parse(const char *name)
{
	if (!name)
		return -1;
	for (int i = 0; i < LEVEL_COUNT; i++)
		if (strcasecmp(name, level_names[i]) == 0)
			return i;
	return -1;
}

uint32_t layout_min_width(enum raid_level level)
{
	switch (level) {
	case LEVEL_SINGLE:	return 1;
	case LEVEL_RAID0:	return 2;
	case LEVEL_RAID1:	return 2;
	case LEVEL_RAID5:	return 3;
	case LEVEL_RAID6:	return 4;
	case LEVEL_RAID10:	return 4;
	case LEVEL_RAID50:	return 2 * 3;
	case LEVEL_RAID60:	return 2 * 4;
	default:		return 0;
	}
}

/*
 * Number of distinct rotations.  For raid10 the rotation picks the mirror
 * pair that takes group 0, so it ranges over the pairs; rotating inside a
 * pair (gw = 2) would change nothing, both members hold the same bytes.
 */
static uint32_t rotation_period(const struct layout *l)
{
	return l->level == LEVEL_RAID10 ? l->groups : l->gw;
}

/*
 * Why-messages are static strings, one per (level, problem), so callers
 * can print them without owning memory.
 */
static const char *const too_few[LEVEL_COUNT] = {
	[LEVEL_SINGLE] = "single needs exactly 1 member",
	[LEVEL_RAID0] = "raid0 needs at least 2 members",
	[LEVEL_RAID1] = "raid1 needs at least 2 members",
	[LEVEL_RAID5] = "raid5 needs at least 3 members",
	[LEVEL_RAID6] = "raid6 needs at least 4 members",
	[LEVEL_RAID10] = "raid10 needs at least 4 members (2 mirror pairs)",
	[LEVEL_RAID50] = "raid50 needs at least 3 members per group",
	[LEVEL_RAID60] = "raid60 needs at least 4 members per group",
};

static int fail(const char **why, const char *msg)
{
	if (why)
		*why = msg;
	return -EINVAL;
}

int layout_init(struct layout *l, enum raid_level level, uint32_t chunk,
		uint32_t width, uint32_t groups, uint32_t rotation,
		const char **why)
{
	struct layout n = { .level = level, .chunk = chunk, .width = width };

	assert(l);
	if ((unsigned int)level >= LEVEL_COUNT)
		return fail(why, "unknown raid level (use single, raid0, raid1, "
			    "raid5, raid6, raid10, raid50 or raid60)");
	if (chunk == 0 || (chunk & (chunk - 1)))
		return fail(why, "chunk size is not a power of two (use a "
			    "power of two from 4 KiB to 1 MiB, e.g. 64 KiB)");
	if (chunk < LAYOUT_MIN_CHUNK || chunk > LAYOUT_MAX_CHUNK)
		return fail(why, "chunk size is out of range (use a power of "
			    "two from 4 KiB to 1 MiB, e.g. 64 KiB)");
	if (width > LAYOUT_MAX_WIDTH)
		return fail(why, "too many members (at most 64)");

	switch (level) {
	case LEVEL_SINGLE:
		if (width != 1)
			return fail(why, too_few[level]);
		n.groups = 1, n.gw = 1, n.k = 1, n.m = 0, n.red = RED_NONE;
		break;
	case LEVEL_RAID0:
		if (width < 2)
			return fail(why, too_few[level]);
		n.groups = 1, n.gw = width, n.k = width, n.m = 0;
		n.red = RED_NONE;
		break;
	case LEVEL_RAID1:
		if (width < 2)
			return fail(why, too_few[level]);
		n.groups = 1, n.gw = width, n.k = 1, n.m = width - 1;
		n.red = RED_MIRROR;
		break;
	case LEVEL_RAID5:
	case LEVEL_RAID6: {
		uint32_t m = level == LEVEL_RAID5 ? 1 : 2;

		if (width < m + 2)
			return fail(why, too_few[level]);
		n.groups = 1, n.gw = width, n.k = width - m, n.m = m;
		n.red = RED_PARITY;
		break;
	}
	case LEVEL_RAID10:
		if (width % 2)
			return fail(why, "raid10 needs an even number of members "
				    "(it stripes over mirror pairs)");
		if (width < 4)
			return fail(why, too_few[level]);
		n.groups = width / 2, n.gw = 2, n.k = 1, n.m = 1;
		n.red = RED_MIRROR;
		break;
	case LEVEL_RAID50:
	case LEVEL_RAID60: {
		uint32_t m = level == LEVEL_RAID50 ? 1 : 2;
		int r50 = level == LEVEL_RAID50;

		if (groups == 0)
			groups = 2;
		if (groups < 2)
			return fail(why, r50 ?
				    "raid50 needs at least 2 groups (use raid5 "
				    "for one group)" :
				    "raid60 needs at least 2 groups (use raid6 "
				    "for one group)");
		if (width % groups)
			return fail(why, r50 ?
				    "raid50 member count is not a multiple of "
				    "the group count (every group needs the "
				    "same number of members)" :
				    "raid60 member count is not a multiple of "
				    "the group count (every group needs the "
				    "same number of members)");
		if (width / groups < m + 2)
			return fail(why, too_few[level]);
		n.groups = groups, n.gw = width / groups;
		n.k = n.gw - m, n.m = m;
		n.red = RED_PARITY;
		break;
	}
	default:
		return fail(why, "unknown raid level");
	}

	n.rotation = rotation % rotation_period(&n);
	*l = n;
	return 0;
}

uint32_t layout_tolerance(const struct layout *l)
{
	/*
	 * Every group has m redundancy slots per stripe and any m lost
	 * slots of a group can be rebuilt (mirrors: any copy survives;
	 * parity: XOR or P+Q).  The worst case puts all losses into one
	 * group, so the array-wide guarantee is m, raid1 included
	 * (m = width - 1).
	 */
	return l->m;
}

/*
 * splitmix64's finalizer (Steele, Lea, Flood 2014): every input bit
 * affects every output bit, so even sequential or low-entropy ids spread
 * evenly.  The result is stored in each file's metadata, so changing this
 * function later only affects new files.
 */
static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint32_t layout_rotation_for_id(const struct layout *l, uint64_t file_id)
{
	return (uint32_t)(mix64(file_id) % rotation_period(l));
}

uint32_t layout_data_chunks(const struct layout *l)
{
	return l->groups * l->k;
}

uint64_t layout_stripe_data_bytes(const struct layout *l)
{
	return (uint64_t)layout_data_chunks(l) * l->chunk;
}

/* Position of parity P inside a parity group in stripe s (md's pd_idx). */
static uint32_t parity_pos(const struct layout *l, uint64_t s)
{
	uint32_t t = (uint32_t)((s + l->rotation) % l->gw);

	return l->gw - 1 - t;
}

uint32_t layout_slot_member(const struct layout *l, uint64_t s, uint32_t g,
			    uint32_t slot)
{
	uint32_t pos;

	assert(g < l->groups && slot < l->k + l->m);
	switch (l->red) {
	case RED_PARITY: {
		uint32_t p = parity_pos(l, s);

		if (slot < l->k)
			pos = (p + l->m + slot) % l->gw;
		else
			pos = (p + (slot - l->k)) % l->gw;
		break;
	}
	case RED_MIRROR:
		/* raid10: group g lives on pair (g + r) % pairs. */
		if (l->level == LEVEL_RAID10)
			g = (g + l->rotation) % l->groups;
		pos = slot;
		break;
	case RED_NONE:
	default:
		pos = (slot + l->rotation) % l->gw;
		break;
	}
	return g * l->gw + pos;
}

void layout_member_slot(const struct layout *l, uint64_t s, uint32_t member,
			uint32_t *g, uint32_t *slot)
{
	uint32_t grp, pos;

	assert(member < l->width);
	grp = member / l->gw;
	pos = member % l->gw;
	switch (l->red) {
	case RED_PARITY: {
		uint32_t rel = (pos + l->gw - parity_pos(l, s)) % l->gw;

		*slot = rel < l->m ? l->k + rel : rel - l->m;
		break;
	}
	case RED_MIRROR:
		if (l->level == LEVEL_RAID10)
			grp = (grp + l->groups - l->rotation) % l->groups;
		*slot = pos;
		break;
	case RED_NONE:
	default:
		*slot = (pos + l->gw - l->rotation) % l->gw;
		break;
	}
	*g = grp;
}

void layout_data_slot(const struct layout *l, uint32_t d, uint32_t *g,
		      uint32_t *slot)
{
	assert(d < layout_data_chunks(l));
	*g = d % l->groups;
	*slot = d / l->groups;
}

uint32_t layout_data_index(const struct layout *l, uint32_t g, uint32_t slot)
{
	assert(g < l->groups && slot < l->k);
	return slot * l->groups + g;
}

void layout_map(const struct layout *l, uint64_t off, uint64_t *s,
		uint32_t *d, uint32_t *o)
{
	uint64_t sb = layout_stripe_data_bytes(l);
	uint64_t in = off % sb;

	*s = off / sb;
	*d = (uint32_t)(in / l->chunk);
	*o = (uint32_t)(in % l->chunk);
}

uint64_t layout_unmap(const struct layout *l, uint64_t s, uint32_t d,
		      uint32_t o)
{
	assert(d < layout_data_chunks(l) && o < l->chunk);
	return (s * layout_data_chunks(l) + d) * l->chunk + o;
}

/*
 * Which data chunk's bytes the slot held by `member` in stripe s carries:
 * its own for a data slot, slot 0's for a mirror copy.  Returns -1 for a
 * parity slot.
 */
static int64_t member_data_index(const struct layout *l, uint64_t s,
				 uint32_t member)
{
	uint32_t g, slot;

	layout_member_slot(l, s, member, &g, &slot);
	if (slot < l->k)
		return layout_data_index(l, g, slot);
	if (l->red == RED_MIRROR)
		return layout_data_index(l, g, 0);
	return -1;
}

uint64_t layout_shard_size(const struct layout *l, uint32_t member,
			   uint64_t size)
{
	uint64_t sb = layout_stripe_data_bytes(l);
	uint64_t last, tail, start, held;
	uint32_t g, slot, d;

	assert(member < l->width);
	if (size == 0)
		return 0;
	last = (size - 1) / sb;		/* stripe holding byte size-1 */
	tail = size - last * sb;	/* 1..sb file bytes in that stripe */

	/*
	 * A redundancy slot is as long as the longest data slot of its
	 * group, which is slot 0 (see the top of the file); a data slot is
	 * as long as its own bytes.
	 */
	layout_member_slot(l, last, member, &g, &slot);
	d = layout_data_index(l, g, slot < l->k ? slot : 0);
	start = (uint64_t)d * l->chunk;
	held = 0;
	if (tail > start)
		held = tail - start < l->chunk ? tail - start : l->chunk;
	return last * l->chunk + held;
}

uint64_t layout_size_from_shard(const struct layout *l, uint32_t member,
				uint64_t shard_len)
{
	uint64_t q = shard_len / l->chunk;	/* first stripe not complete */
	uint32_t p = shard_len % l->chunk;	/* bytes of it in the shard */
	int64_t d;

	assert(member < l->width);
	/* Partial chunk at the end: it says exactly how far the file goes. */
	if (p) {
		d = member_data_index(l, q, member);
		if (d >= 0)
			return layout_unmap(l, q, (uint32_t)d, 0) + p;
	}
	/*
	 * Otherwise the last complete data chunk of this member bounds the
	 * size from below.  A member holds parity in at most m consecutive
	 * stripes (P then Q, left-symmetric), so m + 1 steps back always
	 * meet a data chunk unless the shard starts first.
	 */
	for (uint32_t i = 0; i <= l->m && i < q; i++) {
		uint64_t s = q - 1 - i;

		d = member_data_index(l, s, member);
		if (d >= 0)
			return layout_unmap(l, s, (uint32_t)d, 0) + l->chunk;
	}
	assert(q <= l->m);
	return 0;
}
