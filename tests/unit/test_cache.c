/*
 * test_cache.c - unit test of the cache's decisions (src/cachepolicy.c).
 *
 *   - the effective write policy for every configured policy, battery
 *     kind, battery state, cache log state and members' free space, against
 *     a table of the rules (the first row that matches decides), with the
 *     reason given for write-through;
 *   - the room decision at and around its boundaries, and over a grid
 *     against the same rule in 128-bit arithmetic;
 *   - the line count, the water marks and the back-pressure.
 *
 * Exit status 0 when everything passed, 1 otherwise.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cachepolicy.h"

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "FAIL (line %d): ", __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); failures++; } } while (0)

/* ---------------------------------------------------------------- policy */

#define ANY (-1)
#define WB WP_WRITEBACK
#define WT WP_WRITETHROUGH

/*
 * The rules, first match wins (ANY matches everything).  writethrough is
 * never write-back; always-writeback always is, but for full members;
 * writeback needs a battery (bbu= not none), a log that has not failed and
 * the battery OPTIMAL - "no write cache if bad BBU" - in that order of
 * reasons, and room on the members.
 */
static const struct rule {
	int configured, bbu, state, log_failed, space_low;
	enum cache_wpolicy want;
	const char *why;
} rules[] = {
	{ WP_WRITETHROUGH, ANY, ANY, ANY, ANY, WT, NULL },
	{ WP_ALWAYS_WRITEBACK, ANY, ANY, ANY, true, WT, "members nearly full" },
	{ WP_ALWAYS_WRITEBACK, ANY, ANY, ANY, false, WB, NULL },
	{ WP_WRITEBACK, BBU_NONE, ANY, ANY, ANY, WT, "no battery" },
	{ WP_WRITEBACK, ANY, ANY, true, ANY, WT, "the cache log failed" },
	{ WP_WRITEBACK, ANY, BBU_LEARNING, ANY, ANY, WT, "battery learn cycle" },
	{ WP_WRITEBACK, ANY, BBU_FAILED, ANY, ANY, WT, "battery failed" },
	{ WP_WRITEBACK, ANY, BBU_MISSING, ANY, ANY, WT, "battery failed" },
	{ WP_WRITEBACK, ANY, BBU_OPTIMAL, false, true, WT, "members nearly full" },
	{ WP_WRITEBACK, ANY, BBU_OPTIMAL, false, false, WB, NULL },
};

static bool match(int field, int v)
{
	return field == ANY || field == v;
}

static const struct rule *rule_for(int cfg, int kind, int st, int lf, int sl)
{
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		const struct rule *r = &rules[i];
		if (match(r->configured, cfg) && match(r->bbu, kind) && match(r->state, st) &&
		    match(r->log_failed, lf) && match(r->space_low, sl))
			return r;
	}
	return NULL;
}

static void test_policy_all(void)
{
	int n = 0;
	for (int cfg = WP_WRITEBACK; cfg <= WP_WRITETHROUGH; cfg++)
		for (int kind = BBU_NONE; kind <= BBU_FILE; kind++)
			for (int st = BBU_OPTIMAL; st <= BBU_MISSING; st++)
				for (int lf = 0; lf <= 1; lf++)
					for (int sl = 0; sl <= 1; sl++) {
						struct cache_policy_in in = { cfg, kind, st, lf, sl };
						const struct rule *r = rule_for(cfg, kind, st, lf, sl);
						const char *why = "unset";
						enum cache_wpolicy e = cache_policy_effective(&in, &why);
						CHECK(r, "no rule for %d %d %d %d %d", cfg, kind, st, lf, sl);
						if (!r)
							continue;
						CHECK(e == r->want, "%s, bbu %s %s, log %s, space %s: %s, want %s",
						      cache_wpolicy_name(cfg), bbu_kind_name(kind), bbu_state_name(st),
						      lf ? "failed" : "ok", sl ? "low" : "ok", cache_wpolicy_name(e),
						      cache_wpolicy_name(r->want));
						CHECK(r->why ? why && !strcmp(why, r->why) : why == NULL,
						      "%s, bbu %s %s, log %s, space %s: why '%s', want '%s'",
						      cache_wpolicy_name(cfg), bbu_kind_name(kind), bbu_state_name(st),
						      lf ? "failed" : "ok", sl ? "low" : "ok", why ? why : "(none)",
						      r->why ? r->why : "(none)");
						/* never the forced policy itself */
						CHECK(e == WB || e == WT, "effective policy %d", e);
						/* why is optional */
						CHECK(cache_policy_effective(&in, NULL) == e, "without why");
						n++;
					}
	CHECK(n == 3 * 3 * 4 * 2 * 2, "%d combinations", n);
}

/* The cases a mount meets, spelled out. */
static void test_policy_named(void)
{
	struct cache_policy_in in;
	/* bbu=none: the battery is MISSING (cache_open()) */
	in = (struct cache_policy_in){ WP_WRITEBACK, BBU_NONE, BBU_MISSING, false, false };
	CHECK(cache_policy_effective(&in, NULL) == WT, "writeback without a battery goes through");
	in.configured = WP_ALWAYS_WRITEBACK;
	CHECK(cache_policy_effective(&in, NULL) == WB, "always-writeback without a battery is write-back");
	/* bbu=shm, optimal, learning, failed */
	in = (struct cache_policy_in){ WP_WRITEBACK, BBU_SHM, BBU_OPTIMAL, false, false };
	CHECK(cache_policy_effective(&in, NULL) == WB, "writeback with a good battery");
	in.state = BBU_LEARNING;
	CHECK(cache_policy_effective(&in, NULL) == WT, "no write cache during a learn cycle");
	in.state = BBU_FAILED;
	CHECK(cache_policy_effective(&in, NULL) == WT, "no write cache if bad BBU");
	in.configured = WP_ALWAYS_WRITEBACK;
	CHECK(cache_policy_effective(&in, NULL) == WB, "always-writeback with a failed battery");
	/* bbu=file whose log failed: the battery goes FAILED too
	 * (log_failed() in cache.c), but the log's reason comes first */
	const char *why = NULL;
	in = (struct cache_policy_in){ WP_WRITEBACK, BBU_FILE, BBU_FAILED, true, false };
	CHECK(cache_policy_effective(&in, &why) == WT && why && !strcmp(why, "the cache log failed"),
	      "failed log: write-through, and why");
	/* full members end write-back whatever was configured */
	in = (struct cache_policy_in){ WP_ALWAYS_WRITEBACK, BBU_NONE, BBU_MISSING, false, true };
	CHECK(cache_policy_effective(&in, &why) == WT && why && !strcmp(why, "members nearly full"),
	      "always-writeback on full members");
	/* writethrough gives no reason: it is what was asked for */
	in = (struct cache_policy_in){ WP_WRITETHROUGH, BBU_FILE, BBU_OPTIMAL, false, false };
	why = "unset";
	CHECK(cache_policy_effective(&in, &why) == WT && why == NULL, "writethrough: no reason");
}

/* ------------------------------------------------------------------ room */

#define M CACHE_SPACE_MARGIN
#define P CACHE_SPACE_PERIOD_NS

static void test_room_edges(void)
{
	/* exactly enough: dirty + len + margin */
	CHECK(cache_room(100, 10, 110 + M, 0, 0, false) == CACHE_ROOM_ADMIT, "exactly enough");
	CHECK(cache_room(100, 10, 109 + M, 0, 0, false) == CACHE_ROOM_MEASURE, "one byte short: measure");
	CHECK(cache_room(100, 10, 109 + M, 0, 0, true) == CACHE_ROOM_THROUGH, "one byte short, measured: through");
	CHECK(cache_room(100, 10, 110 + M, 0, 0, true) == CACHE_ROOM_ADMIT, "measured, enough");
	/* what was admitted since the measure counts */
	CHECK(cache_room(100, 10, 110 + M + 5, 5, 0, false) == CACHE_ROOM_ADMIT, "used counted, enough");
	CHECK(cache_room(100, 10, 110 + M + 5, 6, 0, false) == CACHE_ROOM_MEASURE, "used counted, short");
	CHECK(cache_room(0, 0, 3, 4, 0, false) == CACHE_ROOM_MEASURE, "used past free");
	/* an old measure is not trusted, however large */
	CHECK(cache_room(0, 1, UINT64_MAX, 0, P - 1, false) == CACHE_ROOM_ADMIT, "measure just young enough");
	CHECK(cache_room(0, 1, UINT64_MAX, 0, P, false) == CACHE_ROOM_MEASURE, "measure too old");
	CHECK(cache_room(0, 1, UINT64_MAX, 0, UINT64_MAX, false) == CACHE_ROOM_MEASURE,
	      "measure from the future (clock read before it)");
	/* the margin alone */
	CHECK(cache_room(0, 0, M, 0, 0, true) == CACHE_ROOM_ADMIT, "margin exactly");
	CHECK(cache_room(0, 0, M - 1, 0, 0, true) == CACHE_ROOM_THROUGH, "below the margin");
	/* a member reported nothing (no writable member): UINT64_MAX */
	CHECK(cache_room(1ull << 40, 1 << 20, UINT64_MAX, 0, 0, true) == CACHE_ROOM_ADMIT, "no member measured");
}

static void test_room_grid(void)
{
	static const uint64_t vals[] = { 0, 1, 511, 512, 4096, M - 1, M, M + 1, 2 * M, 1ull << 32, 1ull << 40 };
	static const uint64_t ages[] = { 0, 1, P - 1, P, P + 1, 10 * P };
	const size_t nv = sizeof(vals) / sizeof(vals[0]), na = sizeof(ages) / sizeof(ages[0]);
	int n = 0;
	for (size_t d = 0; d < nv; d++)
		for (size_t l = 0; l < nv; l++)
			for (size_t f = 0; f < nv; f++)
				for (size_t u = 0; u < nv; u++)
					for (size_t g = 0; g < na; g++)
						for (int m = 0; m <= 1; m++) {
							uint64_t used = m ? 0 : vals[u];
							unsigned __int128 need = (unsigned __int128)vals[d] + vals[l] + M;
							bool room = (unsigned __int128)vals[f] >= need + used;
							bool fresh = m || ages[g] < P;
							enum cache_room want = fresh && room ? CACHE_ROOM_ADMIT
									       : m ? CACHE_ROOM_THROUGH
										   : CACHE_ROOM_MEASURE;
							enum cache_room got = cache_room(vals[d], vals[l], vals[f], used,
											 m ? 0 : ages[g], m);
							CHECK(got == want, "dirty %llu len %llu free %llu used %llu age %llu%s: %d, want %d",
							      (unsigned long long)vals[d], (unsigned long long)vals[l],
							      (unsigned long long)vals[f], (unsigned long long)used,
							      (unsigned long long)ages[g], m ? " measured" : "", got, want);
							n++;
						}
	CHECK(n > 0, "grid ran");
}

/* ------------------------------------------------- lines and water marks */

static void test_lines(void)
{
	CHECK(cache_lines_for(256ull << 20, 1 << 20) == 256, "256 lines of 1 MiB");
	CHECK(cache_lines_for(1 << 20, 1 << 20) == 4, "at least 4 lines");
	CHECK(cache_lines_for(0, 4096) == 4, "at least 4 lines (0)");
	CHECK(cache_lines_for((5 << 20) - 1, 1 << 20) == 4, "whole lines only");
	CHECK(cache_lines_for(5 << 20, 1 << 20) == 5, "5 lines");

	uint32_t hi, lo;
	cache_watermarks(4, &hi, &lo);
	CHECK(hi == 3 && lo == 1, "4 lines: %u %u", hi, lo);
	cache_watermarks(256, &hi, &lo);
	CHECK(hi == 192 && lo == 64, "256 lines: %u %u", hi, lo);
	cache_watermarks(1, &hi, &lo);
	CHECK(hi == 1 && lo == 0, "1 line: %u %u", hi, lo);
	cache_watermarks(0, &hi, &lo);
	CHECK(hi == 1 && lo == 0, "0 lines: %u %u", hi, lo);
	for (uint32_t n = 1; n < 5000; n++) {
		cache_watermarks(n, &hi, &lo);
		CHECK(hi >= 1 && lo <= hi && hi <= n, "%u lines: %u %u", n, hi, lo);
	}

	CHECK(!cache_backpressure(191, 192), "below high: go on");
	CHECK(cache_backpressure(192, 192), "at high: wait");
	CHECK(cache_backpressure(193, 192), "past high: wait");
}

int main(void)
{
	test_policy_all();
	test_policy_named();
	test_room_edges();
	test_room_grid();
	test_lines();
	if (failures) {
		fprintf(stderr, "test_cache: %d failure%s\n", failures, failures == 1 ? "" : "s");
		return 1;
	}
	printf("test_cache: ok\n");
	return 0;
}
