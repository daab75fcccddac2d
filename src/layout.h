/*
 * layout.h - where every byte of a file lives (pure functions, no I/O).
 *
 * Model
 *   A file is cut into chunks of `chunk` bytes.  Stripe s is the set of
 *   chunks that sit at shard offset s * chunk on every member: each member
 *   holds exactly one chunk (data, parity or mirror copy) of every stripe
 *   (shards are dense).  A stripe carries layout_data_chunks() data chunks,
 *   numbered d = 0..D-1 in file order, so logical offset
 *       off = (s * D + d) * chunk + o,   0 <= o < chunk.
 *
 *   The members are split into redundancy groups.  In every stripe each
 *   group has k data slots and m redundancy slots (slot 0..k-1 data in file
 *   order, k..k+m-1 redundancy):
 *
 *     level    groups        k           m        redundancy
 *     single   1             1           0        none
 *     raid0    1             width       0        none
 *     raid1    1             1           width-1  mirror copies
 *     raid5    1             width-1     1        XOR (P)
 *     raid6    1             width-2     2        P+Q
 *     raid10   width/2       1           1        mirror pair
 *     raid50   G             width/G-1   1        XOR per group
 *     raid60   G             width/G-2   2        P+Q per group
 *
 *   Group g owns members [g * gw, (g + 1) * gw) with gw = width / groups
 *   (raid10 excepted, see below).  Data chunk d of a stripe goes to group
 *   d % groups, slot d / groups (RAID0 across groups at chunk granularity);
 *   this mapping does not depend on the stripe or the rotation.
 *
 *   Placement inside a parity group is Linux md's left-symmetric layout,
 *   shifted by the file's rotation r:  with t = (s + r) % gw,
 *       P at position gw-1-t, Q (m = 2) at (P+1) % gw,
 *       data slot j at (P + m + j) % gw.
 *   Mirrors: slot j at position j (all copies are equal; the reader picks).
 *   raid0/single: data slot j at position (j + r) % gw.
 *   raid10: the rotation shifts which pair takes data chunk 0: group g
 *   (data chunks d with d % pairs == g) lives on pair (g + r) % pairs,
 *   i.e. members 2 * ((g + r) % pairs) (slot 0) and that + 1 (slot 1).
 *   This is done in layout_slot_member()/layout_member_slot(), so
 *   layout_data_slot() stays the same for every level and rotation.
 *
 * Rotation
 *   r = layout_rotation_for_id(file_id) spreads files smaller than a chunk
 *   over all members (decision 3 of DESIGN.md).  r ranges over 0..gw-1,
 *   except raid10, where it ranges over the pairs (0..groups-1): rotating
 *   inside a pair would change nothing.  raid1 ignores r (every member
 *   holds every byte).  raid50/60 rotate inside each group only, so files
 *   smaller than a chunk always land in group 0.
 *
 * Contract
 *   All functions are pure and thread safe.  layout_init() validates; the
 *   other functions assume a layout that layout_init() accepted and indices
 *   in range (they assert).
 */
#ifndef RAIDFS_LAYOUT_H
#define RAIDFS_LAYOUT_H

#include <stdint.h>

enum raid_level {
	LEVEL_SINGLE = 0,
	LEVEL_RAID0,
	LEVEL_RAID1,
	LEVEL_RAID5,
	LEVEL_RAID6,
	LEVEL_RAID10,
	LEVEL_RAID50,
	LEVEL_RAID60,
	LEVEL_COUNT
};

enum redundancy {
	RED_NONE,	/* m == 0 */
	RED_MIRROR,	/* redundancy slots are copies of the single data slot */
	RED_PARITY,	/* redundancy slots are parity (isal-glue/parity.h) */
};

#define LAYOUT_MAX_WIDTH 64
#define LAYOUT_MIN_CHUNK 4096u
#define LAYOUT_MAX_CHUNK (1024u * 1024u)
#define LAYOUT_DEFAULT_CHUNK (64u * 1024u)

struct layout {
	enum raid_level level;
	uint32_t chunk;		/* bytes, power of two, 4 KiB .. 1 MiB */
	uint32_t width;		/* number of members */
	uint32_t groups;	/* redundancy groups (see table) */
	uint32_t rotation;	/* 0 .. gw-1 (raid10: 0 .. groups-1) */
	/* derived by layout_init() */
	uint32_t gw;		/* members per group */
	uint32_t k;		/* data slots per group per stripe */
	uint32_t m;		/* redundancy slots per group per stripe */
	enum redundancy red;
};

/* Level names as the CLI spells them ("single", "raid0", ... "raid60");
 * "unknown" for a value out of range (never NULL, safe for printf). */
const char *layout_level_name(enum raid_level level);
/* Returns the level, or -1 for an unknown or NULL name (case-insensitive). */
int layout_level_parse(const char *name);

/*
 * Fill *l.  `groups` is only read for raid50/raid60 (0 means 2); for other
 * levels it is derived.  Returns 0, or -EINVAL and, when `why` is not NULL,
 * a static message saying what is wrong (too few members, odd raid10 width,
 * width not divisible by groups, chunk not a power of two in range...).
 * On failure *l is left untouched.  `rotation` is reduced modulo the
 * rotation range (see Rotation above), so any value is accepted.
 */
int layout_init(struct layout *l, enum raid_level level, uint32_t chunk,
		uint32_t width, uint32_t groups, uint32_t rotation,
		const char **why);

/* Minimum total members for a level; raid50/60 count two groups of the
 * minimum group size (3 / 4), so 6 / 8.  0 for an unknown level. */
uint32_t layout_min_width(enum raid_level level);
/* How many members may be lost in the worst case, always m (raid1:
 * width-1; raid10/50/60 survive m losses per group, but the array-wide
 * guarantee is m). */
uint32_t layout_tolerance(const struct layout *l);

/* Rotation for a file id, in 0..gw-1 (raid10: 0..groups-1): a 64-bit mix
 * (splitmix64) of the id, so sequential ids spread too.  Store the result;
 * do not recompute it for existing files. */
uint32_t layout_rotation_for_id(const struct layout *l, uint64_t file_id);

/* Data chunks per stripe (D = groups * k) and data bytes per stripe. */
uint32_t layout_data_chunks(const struct layout *l);
uint64_t layout_stripe_data_bytes(const struct layout *l);

/* Global member index of slot `slot` (0..k+m-1) of group g in stripe s. */
uint32_t layout_slot_member(const struct layout *l, uint64_t s, uint32_t g,
			    uint32_t slot);

/* Inverse: which group and slot member `member` holds in stripe s. */
void layout_member_slot(const struct layout *l, uint64_t s, uint32_t member,
			uint32_t *g, uint32_t *slot);

/* Data chunk d (0..D-1) of a stripe -> group and data slot, and back. */
void layout_data_slot(const struct layout *l, uint32_t d, uint32_t *g,
		      uint32_t *slot);
uint32_t layout_data_index(const struct layout *l, uint32_t g, uint32_t slot);

/*
 * Map a logical offset to (stripe, data chunk index, offset in chunk),
 * and back.
 */
void layout_map(const struct layout *l, uint64_t off, uint64_t *s,
		uint32_t *d, uint32_t *o);
uint64_t layout_unmap(const struct layout *l, uint64_t s, uint32_t d,
		      uint32_t o);

/*
 * Length of member `member`'s shard for a file of logical size `size`:
 * the shard covers every stripe up to the one holding byte size-1.  A data
 * slot of the last stripe is as long as the file bytes it holds (0 if
 * none, then the shard ends at the stripe's start); a redundancy slot is as
 * long as the longest data slot of its group in that stripe.  Writes and
 * truncates keep shards exactly this long, so the logical size can be
 * recovered from shard lengths (layout_size_from_shard()).
 */
uint64_t layout_shard_size(const struct layout *l, uint32_t member,
			   uint64_t size);

/*
 * The smallest logical size consistent with member `member`'s shard being
 * `shard_len` bytes long, judging by its data bytes only: 1 + the largest
 * logical offset among the file bytes the shard holds below shard_len.
 * Mirror copies count as data (they hold the bytes of their data slot);
 * parity does not, so when the last shard bytes are parity the answer
 * comes from this member's data in earlier stripes, or is 0 if it has
 * none.  The max over all members of this value is the file's size when
 * every shard follows layout_shard_size(); any single value is a lower
 * bound.
 */
uint64_t layout_size_from_shard(const struct layout *l, uint32_t member,
				uint64_t shard_len);

#endif
