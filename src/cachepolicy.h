/*
 * cachepolicy.h - the cache's decisions, as pure functions.
 *
 * Whether a write goes to the cache (write-back) or to the members
 * (write-through) is decided in two steps, each a function of plain
 * values, with no I/O, no lock and no clock, so that tests can walk every
 * case (tests/unit/test_cache.c):
 *
 *   cache_policy_effective()  the write policy in force: the configured one
 *                             as the battery, the cache log and the
 *                             members' free space allow it (MegaRAID's "no
 *                             write cache if bad BBU");
 *   cache_room()              for a write-back write, whether the members
 *                             have room for everything the cache may still
 *                             have to write there: admit it, measure the
 *                             free space again first, or send it through.
 *
 * cache.c gathers the inputs under its lock and acts on the answers
 * (cache.c's map at its top shows where).  The array's state is not an
 * input: an array that takes no writes refuses the write on either path
 * (-EROFS read-only, -EIO failed), it does not change the path.
 *
 * cache_lines_for() and cache_watermarks() size the line table and the
 * dirty-line water marks of the back-pressure (cache_backpressure()).
 */
#ifndef RAIDFS_CACHEPOLICY_H
#define RAIDFS_CACHEPOLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "cache.h"

/* What the effective policy depends on. */
struct cache_policy_in {
	enum cache_wpolicy configured;	/* -o write_policy=, or `raidfs cache` */
	enum bbu_kind bbu;		/* -o bbu= (BBU_NONE: no battery) */
	enum bbu_state state;		/* the battery's state (MISSING with none) */
	bool log_failed;		/* bbu=file: its log failed in this run */
	bool space_low;			/* a member has less room than the cache may need */
};

/*
 * The write policy in force: WP_WRITEBACK or WP_WRITETHROUGH (never
 * WP_ALWAYS_WRITEBACK, which is write-back whatever the battery and the
 * log).  writeback is write-back only with a battery that is there and
 * OPTIMAL and a log that has not failed; writethrough is write-through.
 * Either write-back goes through while the members are nearly full.
 * *why (when not NULL): why write-back was asked for and is not in force,
 * or NULL.
 */
enum cache_wpolicy cache_policy_effective(const struct cache_policy_in *in, const char **why);

/* Bytes kept free on every member beyond what the cache may still write. */
#define CACHE_SPACE_MARGIN (8ull << 20)
/* How long a measure of the members' free space is trusted (ns). */
#define CACHE_SPACE_PERIOD_NS (100 * 1000000ull)

enum cache_room {
	CACHE_ROOM_ADMIT,		/* write-back: the members have room for it */
	CACHE_ROOM_MEASURE,		/* the count is old or short: measure again */
	CACHE_ROOM_THROUGH,		/* just measured, and short: write-through */
};

/*
 * Room on the members for a write-back write of len bytes, while
 * dirty_bytes are in the cache.  free_bytes: the free space of the fullest
 * member that takes writes, measured age_ns ago; used: what write-back
 * admitted since.  The write needs room for every dirty byte, itself and
 * CACHE_SPACE_MARGIN (as if one member had to take them all).  An answer
 * from a measure older than CACHE_SPACE_PERIOD_NS, or one that says no,
 * is not taken until the free space is measured again (`measured`: it
 * just was, used is 0).
 */
enum cache_room cache_room(uint64_t dirty_bytes, uint64_t len, uint64_t free_bytes, uint64_t used,
			   uint64_t age_ns, bool measured);

/* Lines in a cache of `size` bytes of lines of line_bytes (4 at least). */
uint64_t cache_lines_for(uint64_t size, uint64_t line_bytes);
/* The dirty-line water marks: writers wait at high (at least 1); the
 * destage threads write partial lines at once from low on. */
void cache_watermarks(uint32_t nlines, uint32_t *high, uint32_t *low);
/* Must a write-back writer wait for the destage (too many dirty lines)? */
bool cache_backpressure(uint32_t dirty_lines, uint32_t high);

#endif
