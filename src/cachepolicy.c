/*
 * cachepolicy.c - the cache's decisions as pure functions (see
 * cachepolicy.h).  Nothing here reads a clock, takes a lock or does I/O:
 * cache.c passes what it knows and acts on the answer.
 */
#include <stddef.h>

#include "cachepolicy.h"

enum cache_wpolicy cache_policy_effective(const struct cache_policy_in *in, const char **why)
{
	const char *w = NULL;
	enum cache_wpolicy e = in->configured;
	if (in->configured == WP_WRITEBACK) {
		/* no write cache without a good battery: the first reason wins */
		if (in->bbu == BBU_NONE)
			w = "no battery";
		else if (in->log_failed)
			w = "the cache log failed";
		else if (in->state == BBU_LEARNING)
			w = "battery learn cycle";
		else if (in->state != BBU_OPTIMAL)
			w = "battery failed";
		if (w)
			e = WP_WRITETHROUGH;
	}
	if (e == WP_ALWAYS_WRITEBACK)
		e = WP_WRITEBACK;
	if (e == WP_WRITEBACK && in->space_low) {
		w = "members nearly full";
		e = WP_WRITETHROUGH;
	}
	if (why)
		*why = w;
	return e;
}

enum cache_room cache_room(uint64_t dirty_bytes, uint64_t len, uint64_t free_bytes, uint64_t used,
			   uint64_t age_ns, bool measured)
{
	uint64_t need = dirty_bytes + len + CACHE_SPACE_MARGIN;
	bool fresh = measured || age_ns < CACHE_SPACE_PERIOD_NS;
	if (fresh && free_bytes >= used && free_bytes - used >= need)
		return CACHE_ROOM_ADMIT;
	return measured ? CACHE_ROOM_THROUGH : CACHE_ROOM_MEASURE;
}

uint64_t cache_lines_for(uint64_t size, uint64_t line_bytes)
{
	uint64_t n = size / line_bytes;
	return n < 4 ? 4 : n;	/* a few stripes at least, whatever was asked */
}

void cache_watermarks(uint32_t nlines, uint32_t *high, uint32_t *low)
{
	*high = nlines * 3 / 4;
	*low = nlines / 4;
	if (*high == 0)
		*high = 1;
}

bool cache_backpressure(uint32_t dirty_lines, uint32_t high)
{
	return dirty_lines >= high;
}
