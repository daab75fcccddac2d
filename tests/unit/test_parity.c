/*
 * test_parity.c - unit test of isal-glue/parity.c.
 *
 * What it checks, on fixed-seed random data:
 *   - ISA-L encode equals the plain-C reference, for m = 1 at every width
 *     3..16, m = 2 at every width 4..16, m = 3 and 4 for a few k, k = 1,
 *     lengths around every ISA-L boundary (1, 15, 31, 32, 33, 4096, 4097,
 *     65536, 65549 and a few MiB), 64-byte aligned and misaligned blocks;
 *   - verify says 0 on good rows and 1 after one flipped byte in any block;
 *   - for every erasure pattern of size 1..m, both reconstruct paths give
 *     back every original byte and leave the survivors alone;
 *   - P and Q match hand-computed vectors (md / pq_gen compatibility), and
 *     m = 3 / 4 parity begins with the m = 2 / 3 parity;
 *   - argument errors and too many erasures return -EINVAL / -EIO;
 *   - nothing is written outside [block, block + len) (guard bytes);
 *   - parity_crc32 equals zlib's crc32, chained and unaligned;
 *   - threads reconstructing concurrently (plan cache, eviction, scratch).
 *
 * Usage: test_parity [--quick] [-v]   (or PARITY_TEST_QUICK=1)
 * --quick keeps lengths <= 4097 and fewer widths, for runs under valgrind;
 * -v prints each row with its time.
 * Exit 0 on success, 1 with a message naming the case on the first failure.
 */
#include "parity.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define NB	(PARITY_MAX_K + PARITY_MAX_M)
#define GUARD	64
#define GBYTE	0xa5

static bool quick, verbose;
static unsigned long nchecks;
static char ctx[256];		/* the case being run, for failure messages */

static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "test_parity: FAIL [%s]: ", ctx);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

#define CHECK(cond, ...) do {					\
	__atomic_add_fetch(&nchecks, 1, __ATOMIC_RELAXED);	\
	if (!(cond))						\
		fail(__VA_ARGS__);				\
} while (0)

/* xorshift64*: fixed seeds, same bytes on every machine. */
static uint64_t rnd_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static uint64_t seed = 0x5eed0fa11ed5ull;

static uint64_t rnd(void)
{
	return rnd_next(&seed);
}

static void fill(uint64_t *s, uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = rnd_next(s);

		memcpy(p + i, &v, len - i < 8 ? len - i : 8);
	}
}

/* ---------------------------------------------------------------------- */
/* Rows with guard bytes around every block                               */
/* ---------------------------------------------------------------------- */

struct row {
	int k, m, n;
	size_t len;
	uint8_t *mem[NB];	/* own pages: GUARD + 7 + len + GUARD bytes */
	uint8_t *b[NB];		/* blocks, maybe misaligned inside mem */
	uint8_t *orig[NB];	/* expected contents */
};

static size_t row_maplen(const struct row *r)
{
	return (GUARD + 7 + r->len + GUARD + 4095) & ~(size_t)4095;
}

/*
 * Each block gets pages of its own, so that blocks the library must only
 * read can be made read-only (row_protect) and a stray write faults.
 * misalign: 0 = every block 64-byte aligned; 1 = offsets (3i+1) % 8, so
 * most blocks are 1..7 bytes off and a few aligned.
 */
static void row_alloc(struct row *r, int k, int m, size_t len, int misalign)
{
	r->k = k;
	r->m = m;
	r->n = k + m;
	r->len = len;
	for (int i = 0; i < r->n; i++) {
		size_t total = row_maplen(r);
		void *p = mmap(NULL, total, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			fail("out of memory");
		memset(p, GBYTE, total);
		r->mem[i] = p;
		r->b[i] = r->mem[i] + GUARD + (misalign ? (3 * i + 1) % 8 : 0);
		r->orig[i] = malloc(len);
		if (!r->orig[i])
			fail("out of memory");
	}
}

static void row_free(struct row *r)
{
	for (int i = 0; i < r->n; i++) {
		munmap(r->mem[i], row_maplen(r));
		free(r->orig[i]);
	}
}

/*
 * The glue pads to 64 bytes in scratch; a copy-back of the padding would
 * land in the GUARD bytes after a block.
 */
static void row_guards(const struct row *r)
{
	static uint8_t pattern[GUARD + 7];

	if (!pattern[0])
		memset(pattern, GBYTE, sizeof(pattern));
	for (int i = 0; i < r->n; i++) {
		if (memcmp(r->mem[i], pattern, r->b[i] - r->mem[i]))
			fail("block %d: guard before it written", i);
		if (memcmp(r->b[i] + r->len, pattern, GUARD))
			fail("block %d: guard after it written", i);
	}
	CHECK(1, "");
}

static void block_prot(const struct row *r, int i, int prot)
{
	if (mprotect(r->mem[i], row_maplen(r), prot))
		fail("mprotect: %s", strerror(errno));
}

/* All blocks read-only (writable = false) or read-write. */
static void row_protect(const struct row *r, bool writable)
{
	for (int i = 0; i < r->n; i++)
		block_prot(r, i, writable ? PROT_READ | PROT_WRITE : PROT_READ);
}

static void on_segv(int sig)
{
	static const char msg[] = "test_parity: FAIL: memory fault, probably "
		"a write to a block that must stay read-only, in case [";

	(void)!write(2, msg, sizeof(msg) - 1);
	(void)!write(2, ctx, strnlen(ctx, sizeof(ctx)));
	(void)!write(2, "]\n", 2);
	_exit(1);
}

static void row_save(struct row *r)
{
	for (int i = 0; i < r->n; i++)
		memcpy(r->orig[i], r->b[i], r->len);
}

static void row_compare(const struct row *r, const char *what)
{
	for (int i = 0; i < r->n; i++) {
		if (!memcmp(r->b[i], r->orig[i], r->len))
			continue;
		size_t x = 0;

		while (r->b[i][x] == r->orig[i][x])
			x++;
		fail("%s: block %d differs at byte %zu (0x%02x, want 0x%02x)",
		     what, i, x, r->b[i][x], r->orig[i][x]);
	}
	CHECK(1, "");
	row_guards(r);
}

/* ---------------------------------------------------------------------- */
/* Encode, verify, reconstruct on one row                                 */
/* ---------------------------------------------------------------------- */

static void garbage(struct row *r, const int *e, int ne)
{
	for (int i = 0; i < ne; i++)
		fill(&seed, r->b[e[i]], r->len);
}

/* Erase the pattern, reconstruct with both implementations, compare. */
static void one_pattern(struct row *r, const int *pat, int ne)
{
	int e[PARITY_MAX_M];
	int ret;

	/* Hand the list over in a random order: the glue must not care. */
	memcpy(e, pat, sizeof(int) * ne);
	for (int i = ne - 1; i > 0; i--) {
		int j = rnd() % (i + 1), t = e[i];

		e[i] = e[j];
		e[j] = t;
	}

	/* The row is read-only here (test_row): open just the erased. */
	for (int i = 0; i < ne; i++)
		block_prot(r, e[i], PROT_READ | PROT_WRITE);
	garbage(r, e, ne);
	ret = parity_reconstruct(r->k, r->m, r->len, r->b, e, ne);
	CHECK(ret == 0, "parity_reconstruct returned %d", ret);
	row_compare(r, "parity_reconstruct");

	garbage(r, e, ne);
	ret = parity_ref_reconstruct(r->k, r->m, r->len, r->b, e, ne);
	CHECK(ret == 0, "parity_ref_reconstruct returned %d", ret);
	row_compare(r, "parity_ref_reconstruct");
	for (int i = 0; i < ne; i++)
		block_prot(r, e[i], PROT_READ);
}

/* Every subset of 1..m of the k+m blocks, in lexicographic order. */
static int all_patterns(struct row *r)
{
	int n = r->n, count = 0;
	int e[PARITY_MAX_M];

	for (int ne = 1; ne <= r->m; ne++) {
		for (int i = 0; i < ne; i++)
			e[i] = i;
		for (;;) {
			char *p = ctx + strlen(ctx), *q = p;

			for (int i = 0; i < ne; i++)
				q += sprintf(q, " %d", e[i]);
			one_pattern(r, e, ne);
			*p = 0;
			count++;
			int i = ne - 1;

			while (i >= 0 && e[i] == n - ne + i)
				i--;
			if (i < 0)
				break;
			e[i]++;
			for (int j = i + 1; j < ne; j++)
				e[j] = e[j - 1] + 1;
		}
	}
	return count;
}

static void flip_checks(struct row *r)
{
	for (int i = 0; i < r->n; i++) {
		/* the last byte sits in the scratch-copied tail; mix both */
		size_t x = (i & 1) ? r->len - 1 : rnd() % r->len;
		uint8_t bit = 1 << (rnd() % 8);
		int ret;

		r->b[i][x] ^= bit;
		row_protect(r, false);		/* verify writes nothing */
		ret = parity_verify(r->k, r->m, r->len, r->b);
		CHECK(ret == 1, "verify after flip of block %d byte %zu: %d",
		      i, x, ret);
		/* the reference is slow on long rows: sample it */
		if (r->len <= 65549 || i < 2) {
			ret = parity_ref_verify(r->k, r->m, r->len, r->b);
			CHECK(ret == 1, "ref verify after flip of block %d "
			      "byte %zu: %d", i, x, ret);
		}
		row_protect(r, true);
		r->b[i][x] ^= bit;
	}
	row_compare(r, "verify must not write");
}

static unsigned long npatterns, nrows;

/* Random patterns of 1..m erasures, for rows too long for all of them. */
static int some_patterns(struct row *r, int count)
{
	for (int c = 0; c < count; c++) {
		int ne = 1 + rnd() % r->m, e[PARITY_MAX_M];

		for (int i = 0; i < ne; i++) {
			bool dup;

			do {
				e[i] = rnd() % r->n;
				dup = false;
				for (int j = 0; j < i; j++)
					dup |= e[j] == e[i];
			} while (dup);
		}
		one_pattern(r, e, ne);
	}
	return count;
}

/*
 * The whole treatment for one (k, m, len, alignment); patterns < 0 runs
 * every erasure pattern, otherwise that many random ones.
 */
static void test_row(int k, int m, size_t len, int misalign, int patterns)
{
	struct row r;
	struct timespec t0, t1;
	unsigned long np = npatterns;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	snprintf(ctx, sizeof(ctx) - 64, "k=%d m=%d len=%zu %s", k, m, len,
		 misalign ? "misaligned" : "aligned");
	row_alloc(&r, k, m, len, misalign);
	for (int i = 0; i < k; i++)
		fill(&seed, r.b[i], len);
	for (int i = k; i < r.n; i++)
		fill(&seed, r.b[i], len);	/* stale parity */

	ret = parity_ref_encode(k, m, len, r.b);
	CHECK(ret == 0, "parity_ref_encode returned %d", ret);
	row_save(&r);
	for (int i = k; i < r.n; i++)
		fill(&seed, r.b[i], len);
	ret = parity_encode(k, m, len, r.b);
	CHECK(ret == 0, "parity_encode returned %d", ret);
	row_compare(&r, "parity_encode vs reference");

	row_protect(&r, false);
	ret = parity_verify(k, m, len, r.b);
	CHECK(ret == 0, "parity_verify on a good row returned %d", ret);
	ret = parity_ref_verify(k, m, len, r.b);
	CHECK(ret == 0, "parity_ref_verify on a good row returned %d", ret);
	row_protect(&r, true);
	if (m > 0)
		flip_checks(&r);

	/*
	 * Survivors are read-only while reconstructing: a write to one, even
	 * of the right value, faults (the contract says read only, and
	 * another thread may be using them).
	 */
	row_protect(&r, false);
	if (m > 0)
		npatterns += patterns < 0 ? all_patterns(&r)
					  : some_patterns(&r, patterns);
	row_protect(&r, true);

	/* One more erasure than m can repair. */
	int e[PARITY_MAX_M + 1];

	for (int i = 0; i <= m && i < r.n; i++)
		e[i] = r.n - 1 - i;
	if (m < r.n) {
		row_protect(&r, false);
		ret = parity_reconstruct(k, m, len, r.b, e, m + 1);
		CHECK(ret == -EIO, "%d erasures with m=%d: %d", m + 1, m, ret);
		ret = parity_ref_reconstruct(k, m, len, r.b, e, m + 1);
		CHECK(ret == -EIO, "ref: %d erasures with m=%d: %d", m + 1, m,
		      ret);
		row_protect(&r, true);
		row_compare(&r, "refused reconstruct must not write");
	}
	row_free(&r);
	nrows++;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (verbose)
		printf("%-40s %6lu patterns %8.3f s\n", ctx, npatterns - np,
		       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
}

/* ---------------------------------------------------------------------- */
/* Known vectors, code extension, argument errors                         */
/* ---------------------------------------------------------------------- */

/*
 * P = XOR, Q = sum 2^i D_i over GF(2^8)/0x11d, R = sum 4^i D_i,
 * S = sum 8^i D_i: expected bytes computed independently (by hand for Q
 * of k = 2: 2 * 0x80 = 0x100 ^ 0x11d = 0x1d, so Q[1] = 0x01 ^ 0x1d).
 */
static void known_vectors(void)
{
	static const uint8_t d[3][6] = {
		{ 0x00, 0x01, 0x80, 0xff, 0x53, 0x1d },
		{ 0x01, 0x80, 0x80, 0x53, 0xca, 0x8e },
		{ 0x10, 0x02, 0x40, 0x00, 0xff, 0x01 },
	};
	static const uint8_t want[2][4][6] = {
		{	/* k = 2 */
			{ 0x01, 0x81, 0x00, 0xac, 0x99, 0x93 },
			{ 0x02, 0x1c, 0x9d, 0x59, 0xda, 0x1c },
			{ 0x04, 0x3b, 0xba, 0xae, 0x5c, 0x1f },
			{ 0x08, 0x75, 0xf4, 0x5d, 0x4d, 0x19 },
		}, {	/* k = 3 */
			{ 0x11, 0x83, 0x40, 0xac, 0x66, 0x92 },
			{ 0x42, 0x14, 0x80, 0x59, 0x01, 0x18 },
			{ 0x19, 0x1b, 0xce, 0xae, 0x17, 0x0f },
			{ 0x7c, 0xf5, 0x39, 0x5d, 0x7c, 0x59 },
		},
	};

	for (int k = 2; k <= 3; k++) {
		for (int m = 1; m <= 4; m++) {
			for (int ref = 0; ref < 2; ref++) {
				uint8_t blk[7][6];
				uint8_t *b[7];
				int ret;

				snprintf(ctx, sizeof(ctx), "known vector k=%d "
					 "m=%d %s", k, m, ref ? "ref" : "isa-l");
				for (int i = 0; i < k + m; i++)
					b[i] = blk[i];
				memcpy(blk, d, (size_t)k * 6);
				ret = ref ? parity_ref_encode(k, m, 6, b)
					  : parity_encode(k, m, 6, b);
				CHECK(ret == 0, "encode returned %d", ret);
				for (int r = 0; r < m; r++)
					CHECK(!memcmp(blk[k + r],
						      want[k - 2][r], 6),
					      "parity row %d differs", r);
			}
		}
	}
}

/* m = 3 and 4 must extend RAID6: their first rows are P and Q. */
static void code_extension(void)
{
	size_t len = 4096 + 17;

	for (int k = 2; k <= 21; k += 19) {
		uint8_t *b[PARITY_MAX_M + 1][NB];
		struct row r[3];

		snprintf(ctx, sizeof(ctx), "extension k=%d", k);
		for (int m = 2; m <= 4; m++) {
			row_alloc(&r[m - 2], k, m, len, m == 3);
			for (int i = 0; i < k; i++) {
				if (m == 2)
					fill(&seed, r[0].b[i], len);
				else
					memcpy(r[m - 2].b[i], r[0].b[i], len);
			}
			CHECK(parity_encode(k, m, len, r[m - 2].b) == 0,
			      "encode m=%d", m);
			memcpy(b[m], r[m - 2].b, sizeof(b[m]));
		}
		for (int m = 3; m <= 4; m++)
			for (int p = 0; p < m - 1; p++)
				CHECK(!memcmp(b[m][k + p], b[m - 1][k + p], len),
				      "m=%d parity row %d differs from m=%d",
				      m, p, m - 1);
		for (int m = 0; m < 3; m++)
			row_free(&r[m]);
	}
}

static void bad_args(void)
{
	uint8_t blk[NB + 1][64];
	uint8_t *b[NB + 1];
	int e[5];

	snprintf(ctx, sizeof(ctx), "argument errors");
	memset(blk, 0, sizeof(blk));
	for (int i = 0; i <= NB; i++)
		b[i] = blk[i];
	for (int ref = 0; ref < 2; ref++) {
		int (*enc)(int, int, size_t, uint8_t *const *) =
			ref ? parity_ref_encode : parity_encode;
		int (*ver)(int, int, size_t, uint8_t *const *) =
			ref ? parity_ref_verify : parity_verify;
		int (*rec)(int, int, size_t, uint8_t *const *, const int *, int) =
			ref ? parity_ref_reconstruct : parity_reconstruct;
		static const int bad[][3] = {	/* k, m, len */
			{ 0, 1, 64 }, { -1, 1, 64 }, { PARITY_MAX_K + 1, 1, 64 },
			{ 4, -1, 64 }, { 4, PARITY_MAX_M + 1, 64 }, { 4, 2, 0 },
			{ 22, 4, 64 },	/* m = 4 needs k <= 21 */
		};

		for (size_t t = 0; t < sizeof(bad) / sizeof(bad[0]); t++) {
			int k = bad[t][0], m = bad[t][1], len = bad[t][2];

			e[0] = 0;
			CHECK(enc(k, m, len, b) == -EINVAL, "%s encode k=%d m=%d "
			      "len=%d", ref ? "ref" : "isa-l", k, m, len);
			CHECK(ver(k, m, len, b) == -EINVAL, "%s verify k=%d m=%d "
			      "len=%d", ref ? "ref" : "isa-l", k, m, len);
			CHECK(rec(k, m, len, b, e, 1) == -EINVAL, "%s "
			      "reconstruct k=%d m=%d len=%d",
			      ref ? "ref" : "isa-l", k, m, len);
		}
		CHECK(enc(4, 2, 64, NULL) == -EINVAL, "NULL blocks");
		b[5] = NULL;
		CHECK(enc(4, 2, 64, b) == -EINVAL, "NULL parity block");
		b[5] = blk[5];
		CHECK(enc(21, 4, 64, b) == 0, "k=21 m=4 is allowed");

		/* erasure lists: out of range, duplicate, negative count */
		static const int bad_e[][3] = {
			{ -1, 0, 1 }, { 6, 0, 1 }, { 2, 2, 2 }, { 0, 6, 2 },
		};
		for (size_t t = 0; t < sizeof(bad_e) / sizeof(bad_e[0]); t++) {
			e[0] = bad_e[t][0];
			e[1] = bad_e[t][1];
			CHECK(rec(4, 2, 64, b, e, bad_e[t][2]) == -EINVAL,
			      "%s erasures {%d,%d} n=%d", ref ? "ref" : "isa-l",
			      e[0], e[1], bad_e[t][2]);
		}
		CHECK(rec(4, 2, 64, b, e, -1) == -EINVAL, "nerased -1");
		CHECK(rec(4, 2, 64, b, NULL, 1) == -EINVAL, "NULL erased");
		CHECK(rec(4, 2, 64, b, NULL, 0) == 0, "nothing erased");
		e[0] = 0; e[1] = 1; e[2] = 2;
		CHECK(rec(4, 2, 64, b, e, 3) == -EIO, "3 erasures, m=2");
		CHECK(rec(4, 0, 64, b, e, 1) == -EIO, "1 erasure, m=0");
		CHECK(enc(4, 0, 64, b) == 0, "m=0 encode is a no-op");
		CHECK(ver(4, 0, 64, b) == 0, "m=0 verify is trivially good");
	}
}

/* ---------------------------------------------------------------------- */
/* crc32                                                                  */
/* ---------------------------------------------------------------------- */

static void crc_checks(void)
{
	static uint8_t buf[70000];

	snprintf(ctx, sizeof(ctx), "crc32");
	fill(&seed, buf, sizeof(buf));
	CHECK(parity_crc32(0, "123456789", 9) == 0xcbf43926,
	      "crc32 check value of \"123456789\"");
	CHECK(parity_crc32(0x1234, NULL, 0) == crc32(0x1234, NULL, 0),
	      "NULL buffer, as zlib");
	for (int t = 0; t < 300; t++) {
		size_t off = rnd() % 8, len = rnd() % (t < 200 ? 300 : 65536);
		uint32_t seed32 = t % 3 ? (uint32_t)rnd() : 0;
		uint32_t want = crc32(seed32, buf + off, len);

		CHECK(parity_crc32(seed32, buf + off, len) == want,
		      "off=%zu len=%zu seed=%08x", off, len, seed32);
		/* chained in up to four pieces */
		uint32_t c = seed32;
		size_t pos = 0;

		for (int p = 0; p < 3 && pos < len; p++) {
			size_t n = rnd() % (len - pos + 1);

			c = parity_crc32(c, buf + off + pos, n);
			pos += n;
		}
		c = parity_crc32(c, buf + off + pos, len - pos);
		CHECK(c == want, "chained off=%zu len=%zu", off, len);
	}
}

/* ---------------------------------------------------------------------- */
/* Threads                                                                */
/* ---------------------------------------------------------------------- */

/*
 * Several threads reconstructing random patterns at once: the plan cache
 * sees concurrent misses for the same key and, with more than 256 keys,
 * evicts plans other threads may still be using.
 */
static void *thread_main(void *arg)
{
	uint64_t s = 0x7417ead0ull + (uintptr_t)arg;
	int iters = quick ? 60 : 600;

	for (int it = 0; it < iters; it++) {
		int m = 2 + rnd_next(&s) % 3;
		int k = 1 + rnd_next(&s) % (m == 4 ? 21 : 30);
		size_t len = 1 + rnd_next(&s) % 3000;
		int misalign = rnd_next(&s) & 1;
		int ne = 1 + rnd_next(&s) % m, e[PARITY_MAX_M];
		uint8_t *mem[NB], *b[NB], *orig[NB];

		for (int i = 0; i < k + m; i++) {
			mem[i] = malloc(len + 8);
			orig[i] = malloc(len);
			if (!mem[i] || !orig[i])
				fail("out of memory");
			b[i] = mem[i] + (misalign ? i % 8 : 0);
			if (i < k)
				fill(&s, b[i], len);
		}
		if (parity_encode(k, m, len, b))
			fail("thread: encode k=%d m=%d", k, m);
		for (int i = 0; i < k + m; i++)
			memcpy(orig[i], b[i], len);
		for (int i = 0; i < ne; i++) {
			int dup;

			do {
				e[i] = rnd_next(&s) % (k + m);
				dup = 0;
				for (int j = 0; j < i; j++)
					dup |= e[j] == e[i];
			} while (dup);
			fill(&s, b[e[i]], len);
		}
		int ret = parity_reconstruct(k, m, len, b, e, ne);

		if (ret)
			fail("thread: reconstruct k=%d m=%d: %d", k, m, ret);
		for (int i = 0; i < k + m; i++) {
			if (memcmp(orig[i], b[i], len))
				fail("thread: k=%d m=%d len=%zu block %d wrong",
				     k, m, len, i);
			free(mem[i]);
			free(orig[i]);
		}
		__atomic_add_fetch(&nchecks, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void thread_checks(void)
{
	pthread_t t[4];

	snprintf(ctx, sizeof(ctx), "threads");
	for (uintptr_t i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, thread_main, (void *)i))
			fail("pthread_create");
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

/* ---------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	static const size_t small[] = { 1, 15, 31, 32, 33, 4096, 4097 };
	static const size_t big[] = { 65536, 65536 + 13 };
	struct timespec t0, t1;
	const char *q = getenv("PARITY_TEST_QUICK");

	signal(SIGSEGV, on_segv);
	quick = q && *q == '1';
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = true;
		} else if (!strcmp(argv[i], "-v")) {
			verbose = true;
		} else {
			fprintf(stderr, "usage: test_parity [--quick] [-v]\n");
			return 2;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);

	known_vectors();
	bad_args();
	crc_checks();
	code_extension();

	/*
	 * Widths: m = 1 for k + m = 3..16, m = 2 for 4..16, m = 3 and 4 for
	 * a few k (21 is the m = 4 maximum), k = 1 (copies) for every m.
	 * Big lengths for a few widths only, to keep the run short.
	 */
	struct width { int k, m; bool big; } w[64];
	int nw = 0;

	w[nw++] = (struct width){ 3, 0, false };
	w[nw++] = (struct width){ 16, 0, false };
	for (int m = 1; m <= 2; m++)
		for (int k = 1; k + m <= 16; k++)
			w[nw++] = (struct width){ k, m,
				k == 2 || k == 7 || k + m == 16 };
	for (int i = 0; i < 5; i++)
		w[nw++] = (struct width){ (int[]){ 1, 2, 5, 8, 13 }[i], 3,
					  i == 2 };
	for (int i = 0; i < 6; i++)
		w[nw++] = (struct width){ (int[]){ 1, 2, 4, 8, 12, 21 }[i], 4,
					  i == 2 };

	for (int i = 0; i < nw; i++) {
		int k = w[i].k, m = w[i].m;

		if (quick && !w[i].big && k > 3 && k != 21)
			continue;
		for (size_t l = 0; l < sizeof(small) / sizeof(*small); l++) {
			size_t len = small[l];
			/*
			 * m = 4 with k = 12 / 21 has 2516 / 15275 patterns:
			 * all of them up to 33 bytes (k = 21: at 33 only,
			 * which is all tail, so alignment does not matter),
			 * 100 random ones on longer rows.
			 */
			bool all21 = len == 33 && !quick;
			int pat = -1;

			if (m == 4 && k == 21 && !all21)
				pat = 100;
			if (m == 4 && k == 12 && len > 33)
				pat = 100;

			if (quick && (len == 15 || len == 32))
				continue;
			if (!(m == 4 && k == 21 && all21))
				test_row(k, m, len, 0, pat);
			test_row(k, m, len, 1, pat);
		}
		if (w[i].big && !quick)
			for (size_t l = 0; l < 2; l++) {
				test_row(k, m, big[l], 0, -1);
				test_row(k, m, big[l], 1, -1);
			}
	}

	/*
	 * Lengths beyond one ISA-L piece (1 MiB) and beyond one scratch slot
	 * (1 MiB / number of copied blocks), aligned and not.
	 */
	if (!quick) {
		test_row(4, 2, (2u << 20) + 5, 0, 10);
		test_row(4, 2, (2u << 20) + 5, 1, 10);
		test_row(20, 4, 200000, 1, 30);
	} else {
		test_row(20, 4, 50000, 1, 10);
	}

	thread_checks();

	/*
	 * Again with misaligned input blocks used in place, where the probe
	 * finds that ISA-L's kernels on this CPU allow it (the daemon probes
	 * at start-up): every width up to 16 with m = 1 and 2, a few with
	 * m = 3 and 4, lengths around the 64-byte body/tail split and one
	 * beyond a scratch slot.
	 */
	bool in_place = parity_probe_unaligned();
	printf("test_parity: misaligned input blocks %s\n",
	       in_place ? "used in place (ISA-L's kernels here load unaligned): checking that path too"
			: "copied to aligned scratch (ISA-L's kernels here need alignment)");
	if (in_place) {
		static const size_t lens[] = { 63, 64, 65, 4097, 65536 + 13 };

		for (int i = 0; i < nw; i++) {
			if (w[i].m == 0 || (w[i].m >= 3 && !w[i].big) || (quick && w[i].k > 3 && !w[i].big))
				continue;
			for (size_t l = 0; l < sizeof(lens) / sizeof(*lens); l++)
				test_row(w[i].k, w[i].m, lens[l], 1,
					 w[i].m == 4 || lens[l] > 4097 ? 20 : -1);
		}
		test_row(20, 4, quick ? 50000 : 200000, 1, 10);
		thread_checks();
	}

	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("test_parity: ok: %lu checks, %lu rows, %lu erasure patterns x2 "
	       "paths, %.2f s%s\n", nchecks, nrows, npatterns,
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
	       quick ? " (quick)" : "");
	return 0;
}
