/*
 * layout_spec.h - layout.h's statement of where each chunk lives,
 * transcribed independently of layout.c, for the unit tests that check
 * layout.c (test_layout) and the reconstruction planner (test_recon)
 * against it.
 */
#ifndef RAIDFS_TEST_LAYOUT_SPEC_H
#define RAIDFS_TEST_LAYOUT_SPEC_H

#include <stdint.h>

#include "layout.h"

/* Member of (stripe s, group g, slot), transcribed from layout.h. */
static inline uint32_t spec_member(const struct layout *l, uint64_t s, uint32_t g,
			    uint32_t slot)
{
	uint32_t r = l->rotation, gw = l->gw;

	switch (l->level) {
	case LEVEL_SINGLE:
	case LEVEL_RAID0:
		return (slot + r) % gw;
	case LEVEL_RAID1:
		return slot;
	case LEVEL_RAID10:
		return ((g + r) % (l->width / 2)) * 2 + slot;
	default: {
		uint32_t t = (uint32_t)((s + r) % gw);
		uint32_t p = gw - 1 - t, pos;

		if (slot == l->k)
			pos = p;
		else if (slot == l->k + 1)
			pos = (p + 1) % gw;
		else
			pos = (p + l->m + slot) % gw;
		return g * gw + pos;
	}
	}
}

#endif
