/*
 * parity.c - parity over ISA-L, plus a plain-C reference implementation.
 *
 * Design
 *   Every operation is reduced to one "job": a list of input blocks, a list
 *   of (at most PARITY_MAX_M) output blocks and one ISA-L kernel that maps
 *   the first onto the second:
 *
 *     OP_XOR  xor_gen       m = 1 encode, single data erasure with P alive
 *     OP_PQ   pq_gen        m = 2 encode, or P and Q both lost
 *     OP_EC   ec_encode_data with tables for a k x nout matrix: m >= 3
 *                           encode, and every other reconstruction
 *
 *   k = 1 never reaches ISA-L: every parity row has coefficient g^0 = 1 for
 *   column 0, so every block of the row is a copy of the data block (and
 *   xor_gen / pq_gen refuse fewer than two sources anyway).
 *
 *   ISA-L wants 64-byte aligned buffers (xor_gen's older SIMD variants use
 *   aligned loads, the *_check functions crash on unaligned ones) and
 *   pq_gen wants len % 32 == 0.  Callers hand us whatever they have, so
 *   run_job() splits the length into a body (a multiple of 64) and a tail
 *   (< 64 bytes).  In the body, a block whose address is 64-byte aligned is
 *   used in place; others go through per-thread aligned scratch.  Input
 *   blocks are used in place whatever their alignment when
 *   parity_probe_unaligned() found that the kernels ISA-L picked for this
 *   CPU read misaligned input right (its AVX-512 ones load unaligned): a
 *   FUSE write payload is never 64-byte aligned, so that saves a copy of
 *   every data block written.  The tail
 *   always goes through scratch, zero-padded to 64 bytes, because reading
 *   past the caller's buffer is not ours to do.  The body is cut in pieces
 *   so that scratch stays under SCRATCH_BUDGET and ISA-L's int lengths
 *   never overflow.
 *
 *   Reconstruction (m >= 2) follows ISA-L's own recipe: take k surviving
 *   rows of the gf_gen_rs_matrix() generator (all surviving data rows, then
 *   as few parity rows as needed), invert that k x k matrix, and express
 *   each erased row in terms of the k surviving blocks.  The inversion and
 *   ec_init_tables() cost far more than decoding one 4 KiB row, so the
 *   resulting "plan" is cached per (k, m, erasure pattern) in a small LRU
 *   hash table.  Plans are immutable once built and reference counted, so
 *   the lock is held only for the lookup, never while decoding.
 *
 *   The reference functions (parity_ref_*) share nothing with the ISA-L
 *   path except argument checking: their own GF(2^8) log/exp tables, their
 *   own generator coefficients and their own Gauss-Jordan inversion, so
 *   the tests comparing the two can catch a mistake in either.
 *
 * Locking
 *   plan_lock protects the plan hash table and LRU list.  Reference counts
 *   are atomic because the last put can happen outside the lock.  Encode
 *   plans for m >= 3 live outside the cache, published once per (k, m)
 *   with a CAS, so encoding takes no lock.  Scratch is per thread (pthread
 *   key, freed by the key destructor).
 */
#include "parity.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <isa-l/crc.h>
#include <isa-l/erasure_code.h>
#include <isa-l/raid.h>

#define ALIGN		64
#define PIECE_MAX	(1u << 20)	/* longest piece handed to ISA-L */
#define SCRATCH_BUDGET	(1u << 20)	/* per-thread scratch for the body */
#define NBLK_MAX	(PARITY_MAX_K + PARITY_MAX_M)
#define M4_MAX_K	21	/* m = 4: larger k has singular patterns */
#define PLAN_MAX	256
#define PLAN_BUCKETS	512

/* ---------------------------------------------------------------------- */
/* Argument checks (shared by both implementations)                       */
/* ---------------------------------------------------------------------- */

static int check_args(int k, int m, size_t len, uint8_t *const *blocks)
{
	if (k < 1 || k > PARITY_MAX_K || m < 0 || m > PARITY_MAX_M)
		return -EINVAL;
	if (m == 4 && k > M4_MAX_K)
		return -EINVAL;
	if (len == 0 || !blocks)
		return -EINVAL;
	for (int i = 0; i < k + m; i++)
		if (!blocks[i])
			return -EINVAL;
	return 0;
}

/*
 * Validate an erasure list and turn it into a sorted copy in sorted[] and
 * a flag per block in lost[].  -EIO when more blocks are lost than m can
 * repair (checked first: the caller asked for the impossible whatever the
 * indices say), -EINVAL for an index out of range or listed twice.
 */
static int check_erasures(int k, int m, const int *erased, int nerased,
			  int *sorted, bool *lost)
{
	if (nerased < 0 || (nerased > 0 && !erased))
		return -EINVAL;
	if (nerased > m)
		return -EIO;
	memset(lost, 0, sizeof(bool) * (k + m));
	for (int i = 0; i < nerased; i++) {
		int e = erased[i];

		if (e < 0 || e >= k + m || lost[e])
			return -EINVAL;
		lost[e] = true;
	}
	int n = 0;
	for (int i = 0; i < k + m; i++)
		if (lost[i])
			sorted[n++] = i;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Per-thread scratch                                                     */
/* ---------------------------------------------------------------------- */

struct scratch {
	uint8_t *buf;
	size_t size;
};

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static bool scratch_key_ok;

static void scratch_free(void *p)
{
	struct scratch *s = p;

	free(s->buf);
	free(s);
}

static void scratch_init(void)
{
	scratch_key_ok = pthread_key_create(&scratch_key, scratch_free) == 0;
}

/*
 * Return at least `size` bytes of 64-byte aligned scratch owned by the
 * calling thread, or NULL when memory cannot be had.  The contents are not
 * preserved across calls.  Scratch only grows; run_job() keeps requests
 * under SCRATCH_BUDGET (+ one 64-byte slot per block for the tail), so a
 * thread never holds more than about 1 MiB.
 */
static uint8_t *scratch_get(size_t size)
{
	struct scratch *s;

	pthread_once(&scratch_once, scratch_init);
	if (!scratch_key_ok)
		return NULL;
	s = pthread_getspecific(scratch_key);
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		if (pthread_setspecific(scratch_key, s)) {
			free(s);
			return NULL;
		}
	}
	if (s->size < size) {
		void *p;

		free(s->buf);
		s->buf = NULL;
		s->size = 0;
		if (posix_memalign(&p, ALIGN, size))
			return NULL;
		s->buf = p;
		s->size = size;
	}
	return s->buf;
}

/* ---------------------------------------------------------------------- */
/* Jobs: one ISA-L kernel over any length and alignment                   */
/* ---------------------------------------------------------------------- */

enum op { OP_XOR, OP_PQ, OP_EC };

struct job {
	enum op op;
	int nin, nout;
	uint8_t *in[NBLK_MAX];
	uint8_t *out[PARITY_MAX_M];
	const uint8_t *gftbls;	/* OP_EC: 32 * nin * nout bytes */
	bool compare;		/* compare outputs with out[], do not write */
};

static inline bool aligned(const void *p)
{
	return ((uintptr_t)p & (ALIGN - 1)) == 0;
}

/* set once by parity_probe_unaligned(), before other threads run */
static bool any_input_alignment;

/* May ISA-L read input block p in place? */
static inline bool input_in_place(const void *p)
{
	return any_input_alignment || aligned(p);
}

/* Run the kernel on n bytes (n % 64 == 0, outputs 64-byte aligned, inputs
 * as input_in_place() allows). */
static void kernel(const struct job *j, size_t n, uint8_t **src, uint8_t **dst)
{
	void *v[NBLK_MAX + 1];
	int i, ret = 0;

	switch (j->op) {
	case OP_XOR:
	case OP_PQ:
		for (i = 0; i < j->nin; i++)
			v[i] = src[i];
		for (i = 0; i < j->nout; i++)
			v[j->nin + i] = dst[i];
		if (j->op == OP_XOR)
			ret = xor_gen(j->nin + 1, (int)n, v);
		else
			ret = pq_gen(j->nin + 2, (int)n, v);
		break;
	case OP_EC:
		ec_encode_data((int)n, j->nin, j->nout, (uint8_t *)j->gftbls,
			       src, dst);
		break;
	}
	/* Only a broken precondition (too few sources, bad length) fails. */
	assert(ret == 0);
	(void)ret;
}

/*
 * Apply job j to `len` bytes of every block.  Returns 0, or with
 * j->compare 1 as soon as a computed output differs from the stored one,
 * or -ENOMEM when scratch cannot be had.  Only out[] blocks are written,
 * and only when !j->compare.
 */
static int run_job(const struct job *j, size_t len)
{
	size_t body = len & ~(size_t)(ALIGN - 1), tail = len - body;
	int nbuf = j->nin + j->nout, nscr = 0, i;
	size_t slot = 0, need = 0;
	uint8_t *src[NBLK_MAX], *dst[PARITY_MAX_M], *scr = NULL;

	for (i = 0; i < j->nin; i++)
		nscr += !input_in_place(j->in[i]);
	for (i = 0; i < j->nout; i++)
		nscr += j->compare || !aligned(j->out[i]);
	if (body && nscr) {
		slot = (SCRATCH_BUDGET / nscr) & ~(size_t)(ALIGN - 1);
		if (slot > body)
			slot = body;
		need = slot * nscr;
	}
	if (tail && need < (size_t)nbuf * ALIGN)
		need = (size_t)nbuf * ALIGN;
	if (need && !(scr = scratch_get(need)))
		return -ENOMEM;

	for (size_t off = 0, n; off < body; off += n) {
		uint8_t *s = scr;

		n = body - off;
		if (n > PIECE_MAX)
			n = PIECE_MAX;
		if (nscr && n > slot)
			n = slot;
		for (i = 0; i < j->nin; i++) {
			src[i] = j->in[i] + off;
			if (!input_in_place(src[i])) {
				memcpy(s, src[i], n);
				src[i] = s;
				s += slot;
			}
		}
		for (i = 0; i < j->nout; i++) {
			dst[i] = j->out[i] + off;
			if (j->compare || !aligned(dst[i])) {
				dst[i] = s;
				s += slot;
			}
		}
		kernel(j, n, src, dst);
		for (i = 0; i < j->nout; i++) {
			if (dst[i] == j->out[i] + off)
				continue;
			if (!j->compare)
				memcpy(j->out[i] + off, dst[i], n);
			else if (memcmp(j->out[i] + off, dst[i], n))
				return 1;
		}
	}

	if (tail) {
		uint8_t *s = scr;

		for (i = 0; i < j->nin; i++, s += ALIGN) {
			memcpy(s, j->in[i] + body, tail);
			memset(s + tail, 0, ALIGN - tail);
			src[i] = s;
		}
		for (i = 0; i < j->nout; i++, s += ALIGN)
			dst[i] = s;
		kernel(j, ALIGN, src, dst);
		for (i = 0; i < j->nout; i++) {
			if (!j->compare)
				memcpy(j->out[i] + body, dst[i], tail);
			else if (memcmp(j->out[i] + body, dst[i], tail))
				return 1;
		}
	}
	return 0;
}

/* k = 1: every block of the row equals the data block. */
static int copy_row(int m, size_t len, uint8_t *const *blocks, bool compare)
{
	for (int i = 1; i <= m; i++) {
		if (blocks[i] == blocks[0])
			continue;
		if (!compare)
			memcpy(blocks[i], blocks[0], len);
		else if (memcmp(blocks[i], blocks[0], len))
			return 1;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Generator matrix and decode plans                                      */
/* ---------------------------------------------------------------------- */

/*
 * gf_gen_rs_matrix() must give the code parity.h promises (row k all ones
 * = P, row k+1 = 2^i = Q, then 4^i and 8^i), or m >= 3 would not extend
 * RAID6 and disks written by md could not be read.  Checked once against
 * the reference tables; a mismatch means a different ISA-L, not bad input.
 */
static void gf_ready(void);
static uint8_t ref_coef(int r, int i);
static pthread_once_t isal_once = PTHREAD_ONCE_INIT;

static void isal_selfcheck(void)
{
	static uint8_t a[NBLK_MAX * PARITY_MAX_K];
	int k = PARITY_MAX_K;

	gf_ready();
	gf_gen_rs_matrix(a, k + PARITY_MAX_M, k);
	for (int r = 0; r < PARITY_MAX_M; r++)
		for (int i = 0; i < k; i++)
			assert(a[(k + r) * k + i] == ref_coef(r, i));
	(void)a;
}

/*
 * A decode plan: erased block out[o] = sum_s coef(o, s) * block src[s],
 * with the coefficients expanded by ec_init_tables() into gftbls.
 */
struct plan_key {
	uint8_t k, m, n, e[PARITY_MAX_M];
};

struct plan {
	struct plan_key key;
	struct plan *hnext;		/* hash chain */
	struct plan *lprev, *lnext;	/* LRU list, most recent first */
	int refs;			/* table's reference + users' */
	int nsrc, nout;
	int src[PARITY_MAX_K];
	int out[PARITY_MAX_M];
	uint8_t gftbls[];		/* 32 * nsrc * nout */
};

static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;
static struct plan *plan_hash[PLAN_BUCKETS];
static struct plan plan_lru = { .lprev = &plan_lru, .lnext = &plan_lru };
static int plan_count;

static unsigned plan_hashfn(const struct plan_key *key)
{
	const uint8_t *p = (const uint8_t *)key;
	unsigned h = 2166136261u;

	for (size_t i = 0; i < sizeof(*key); i++)
		h = (h ^ p[i]) * 16777619u;
	return h % PLAN_BUCKETS;
}

static void plan_put(struct plan *p)
{
	if (__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(p);
}

static void lru_unlink_locked(struct plan *p)
{
	p->lprev->lnext = p->lnext;
	p->lnext->lprev = p->lprev;
}

static void lru_push_locked(struct plan *p)
{
	p->lnext = plan_lru.lnext;
	p->lprev = &plan_lru;
	plan_lru.lnext->lprev = p;
	plan_lru.lnext = p;
}

static struct plan *plan_find_locked(const struct plan_key *key)
{
	struct plan *p;

	for (p = plan_hash[plan_hashfn(key)]; p; p = p->hnext)
		if (!memcmp(&p->key, key, sizeof(*key)))
			break;
	if (p) {
		lru_unlink_locked(p);
		lru_push_locked(p);
		__atomic_add_fetch(&p->refs, 1, __ATOMIC_ACQ_REL);
	}
	return p;
}

static void plan_evict_locked(struct plan *p)
{
	struct plan **pp = &plan_hash[plan_hashfn(&p->key)];

	while (*pp != p)
		pp = &(*pp)->hnext;
	*pp = p->hnext;
	lru_unlink_locked(p);
	plan_count--;
	plan_put(p);
}

/*
 * Build the plan for key.  Sources are all surviving data blocks plus the
 * first set of surviving parity rows (in order P, Q, R, S) that makes the
 * k x k matrix invertible.  Returns the plan with one reference for the
 * caller, NULL with *err = -ENOMEM or -EIO (no invertible choice).
 */
static struct plan *plan_build(const struct plan_key *key, int *err)
{
	int k = key->k, m = key->m, n = key->n, ed = 0;
	uint8_t gen[NBLK_MAX * PARITY_MAX_K];
	uint8_t *b = NULL, *tmp = NULL, *inv = NULL;
	uint8_t dm[PARITY_MAX_M * PARITY_MAX_K];
	bool lost[NBLK_MAX] = { false };
	struct plan *p;
	int nsrc, mask;

	pthread_once(&isal_once, isal_selfcheck);
	p = calloc(1, sizeof(*p) + (size_t)32 * k * n);
	b = malloc((size_t)k * k);
	tmp = malloc((size_t)k * k);
	inv = malloc((size_t)k * k);
	if (!p || !b || !tmp || !inv) {
		*err = -ENOMEM;
		goto fail;
	}
	p->key = *key;
	p->refs = 1;
	p->nout = n;
	for (int i = 0; i < n; i++) {
		p->out[i] = key->e[i];
		lost[key->e[i]] = true;
		ed += key->e[i] < k;
	}
	gf_gen_rs_matrix(gen, k + m, k);

	for (mask = 0; mask < (1 << m); mask++) {
		if (__builtin_popcount(mask) != ed)
			continue;
		bool ok = true;

		for (int r = 0; r < m; r++)
			if ((mask >> r & 1) && lost[k + r])
				ok = false;
		if (!ok)
			continue;
		nsrc = 0;
		for (int i = 0; i < k; i++)
			if (!lost[i])
				p->src[nsrc++] = i;
		for (int r = 0; r < m; r++)
			if (mask >> r & 1)
				p->src[nsrc++] = k + r;
		for (int s = 0; s < k; s++)
			memcpy(b + s * k, gen + p->src[s] * k, k);
		memcpy(tmp, b, (size_t)k * k);	/* gf_invert_matrix eats it */
		if (gf_invert_matrix(tmp, inv, k) == 0)
			break;
	}
	if (mask == 1 << m) {
		*err = -EIO;
		goto fail;
	}
	p->nsrc = k;

	/*
	 * data = inv * sources.  An erased data block d is row d of inv; an
	 * erased parity row is its generator row times inv.
	 */
	for (int o = 0; o < n; o++) {
		int e = p->out[o];

		if (e < k) {
			memcpy(dm + o * k, inv + e * k, k);
			continue;
		}
		for (int s = 0; s < k; s++) {
			uint8_t c = 0;

			for (int i = 0; i < k; i++)
				c ^= gf_mul(gen[e * k + i], inv[i * k + s]);
			dm[o * k + s] = c;
		}
	}
	ec_init_tables(k, n, dm, p->gftbls);
	free(b);
	free(tmp);
	free(inv);
	return p;
fail:
	free(p);
	free(b);
	free(tmp);
	free(inv);
	return NULL;
}

/* Find or build the plan for an erasure pattern; the caller plan_put()s. */
static struct plan *plan_get(int k, int m, const int *sorted, int n, int *err)
{
	struct plan_key key;
	struct plan *p, *q;

	memset(&key, 0, sizeof(key));
	key.k = k;
	key.m = m;
	key.n = n;
	for (int i = 0; i < n; i++)
		key.e[i] = sorted[i];

	pthread_mutex_lock(&plan_lock);
	p = plan_find_locked(&key);
	pthread_mutex_unlock(&plan_lock);
	if (p)
		return p;

	/* Build outside the lock: an inversion must not stall other rows. */
	p = plan_build(&key, err);
	if (!p)
		return NULL;

	pthread_mutex_lock(&plan_lock);
	q = plan_find_locked(&key);
	if (q) {			/* another thread got there first */
		pthread_mutex_unlock(&plan_lock);
		plan_put(p);
		return q;
	}
	p->refs = 2;			/* the table's and the caller's */
	p->hnext = plan_hash[plan_hashfn(&key)];
	plan_hash[plan_hashfn(&key)] = p;
	lru_push_locked(p);
	if (++plan_count > PLAN_MAX)
		plan_evict_locked(plan_lru.lprev);
	pthread_mutex_unlock(&plan_lock);
	return p;
}

/* ---------------------------------------------------------------------- */
/* ISA-L entry points                                                     */
/* ---------------------------------------------------------------------- */

/*
 * Encode plans for m >= 3, one per (k, m), built on first use and kept for
 * the life of the process (at most 2 * 64 small tables), so that the write
 * path takes no lock.  "All parity lost" is exactly the encode matrix.
 */
static struct plan *enc_plans[PARITY_MAX_M - 2][PARITY_MAX_K + 1];

static struct plan *enc_plan_get(int k, int m, int *err)
{
	struct plan **slot = &enc_plans[m - 3][k], *p, *expected = NULL;
	struct plan_key key;

	p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (p)
		return p;
	memset(&key, 0, sizeof(key));
	key.k = k;
	key.m = m;
	key.n = m;
	for (int r = 0; r < m; r++)
		key.e[r] = k + r;
	p = plan_build(&key, err);
	if (!p)
		return NULL;
	if (!__atomic_compare_exchange_n(slot, &expected, p, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		free(p);		/* another thread published first */
		p = expected;
	}
	return p;
}

/* Encode (or, with compare, verify) blocks[k..k+m-1]; k >= 2, m >= 1. */
static int encode_job(int k, int m, size_t len, uint8_t *const *blocks,
		      bool compare)
{
	struct job j = { .nin = k, .nout = m, .compare = compare };
	struct plan *p = NULL;
	int ret;

	for (int i = 0; i < k; i++)
		j.in[i] = blocks[i];
	for (int r = 0; r < m; r++)
		j.out[r] = blocks[k + r];
	if (m == 1) {
		j.op = OP_XOR;
	} else if (m == 2) {
		j.op = OP_PQ;		/* ~2.6x faster than ec_encode_data */
	} else {
		p = enc_plan_get(k, m, &ret);
		if (!p)
			return ret;
		j.op = OP_EC;
		j.gftbls = p->gftbls;
	}
	return run_job(&j, len);
}

int parity_encode(int k, int m, size_t len, uint8_t *const *blocks)
{
	int ret = check_args(k, m, len, blocks);

	if (ret || m == 0)
		return ret;
	if (k == 1)
		return copy_row(m, len, blocks, false);
	return encode_job(k, m, len, blocks, false);
}

int parity_verify(int k, int m, size_t len, uint8_t *const *blocks)
{
	int ret = check_args(k, m, len, blocks);

	if (ret || m == 0)
		return ret;
	if (k == 1)
		return copy_row(m, len, blocks, true);
	return encode_job(k, m, len, blocks, true);
}

int parity_reconstruct(int k, int m, size_t len, uint8_t *const *blocks,
		       const int *erased, int nerased)
{
	int sorted[PARITY_MAX_M], ed = 0, ret;
	bool lost[NBLK_MAX];
	struct job j = { .nout = nerased };
	struct plan *p;

	ret = check_args(k, m, len, blocks);
	if (!ret)
		ret = check_erasures(k, m, erased, nerased, sorted, lost);
	if (ret || nerased == 0)
		return ret;
	for (int i = 0; i < nerased; i++) {
		ed += sorted[i] < k;
		j.out[i] = blocks[sorted[i]];
	}

	if (k == 1) {
		/* All blocks are equal: copy any survivor. */
		int s = 0;

		while (lost[s])
			s++;
		for (int i = 0; i < nerased; i++)
			memcpy(blocks[sorted[i]], blocks[s], len);
		return 0;
	}
	if (ed == 0 && nerased == m)
		return encode_job(k, m, len, blocks, false);
	if (ed == 0 && nerased == 1 && sorted[0] == k)
		return encode_job(k, 1, len, blocks, false);	/* P only */
	if (ed == 0 && nerased == 2 && sorted[0] == k && sorted[1] == k + 1)
		return encode_job(k, 2, len, blocks, false);	/* P and Q */
	if (ed == 1 && nerased == 1) {
		/* One data block: XOR of the others and P, whatever m is. */
		j.op = OP_XOR;
		for (int i = 0; i <= k; i++)
			if (i != sorted[0])
				j.in[j.nin++] = blocks[i];
		return run_job(&j, len);
	}

	p = plan_get(k, m, sorted, nerased, &ret);
	if (!p)
		return ret;
	j.op = OP_EC;
	j.nin = p->nsrc;
	for (int s = 0; s < p->nsrc; s++)
		j.in[s] = blocks[p->src[s]];
	j.gftbls = p->gftbls;
	ret = run_job(&j, len);
	plan_put(p);
	return ret;
}

uint32_t parity_crc32(uint32_t crc, const void *buf, size_t len)
{
	/*
	 * crc32_gzip_refl() pre- and post-inverts like zlib's crc32(), so
	 * seeds chain the same way.  zlib returns 0 for a NULL buffer (the
	 * "initial value" idiom); do the same.
	 */
	if (!buf)
		return 0;
	return crc32_gzip_refl(crc, buf, len);
}

uint32_t parity_crc32c(uint32_t crc, const void *buf, size_t len)
{
	/* crc32_iscsi() neither pre- nor post-inverts: the standard
	 * CRC32C starts from ~0 and inverts at the end */
	crc = ~crc;
	while (len > 0) {
		int n = len > (1u << 30) ? 1 << 30 : (int)len;
		crc = crc32_iscsi((unsigned char *)buf, n, crc);
		buf = (const uint8_t *)buf + n;
		len -= (size_t)n;
	}
	return ~crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

__attribute__((target("sse4.2")))
static void crc32c_x3_sse42(const uint8_t *a, const uint8_t *b, const uint8_t *c, size_t len, uint32_t *out)
{
	uint64_t x = 0xffffffffu, y = 0xffffffffu, z = 0xffffffffu;
	for (size_t i = 0; i < len; i += 8) {
		uint64_t va, vb, vc;
		memcpy(&va, a + i, 8);
		memcpy(&vb, b + i, 8);
		memcpy(&vc, c + i, 8);
		x = _mm_crc32_u64(x, va);
		y = _mm_crc32_u64(y, vb);
		z = _mm_crc32_u64(z, vc);
	}
	out[0] = ~(uint32_t)x;
	out[1] = ~(uint32_t)y;
	out[2] = ~(uint32_t)z;
}
#endif

#if defined(__x86_64__)
#include <immintrin.h>

#define CLMUL_TARGET __attribute__((target("avx2,vpclmulqdq,pclmul,sse4.2")))
#define LOAD256(p) _mm256_loadu_si256((const __m256i *)(p))

/* x folded over 16 * 8 * ... bytes: x.lo * k.lo ^ x.hi * k.hi (in each
 * 128-bit lane), plus the bytes y it lands on */
CLMUL_TARGET static inline __m256i fold256(__m256i x, __m256i k, __m256i y)
{
	return _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(x, k, 0x00),
						 _mm256_clmulepi64_epi128(x, k, 0x11)), y);
}

/* A CRC register c carried over n zero bytes: k = x^(8n - 33) mod P,
 * bit-reflected */
CLMUL_TARGET static inline uint32_t crc_shift(uint32_t c, uint32_t k)
{
	__m128i p = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)c), _mm_cvtsi32_si128((int)k), 0x00);
	return (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(p));
}

/*
 * CRC32C of one 4 KiB block with both of the core's CRC engines at once:
 * its first 2,176 bytes are folded by carry-less multiplication (four
 * 256-bit accumulators, 128 bytes a step), while three CRC32-instruction
 * streams take 640 bytes each of the rest; the four partial registers
 * are then carried to the block's end (crc_shift()) and combined.  The
 * fold constants are x^(8D+31) and x^(8D-33) mod P, bit-reflected, for a
 * fold over D = 128, 32 and 16 bytes; the carries' are for 640, 1,280 and
 * 1,920 bytes.  About 1.7 times the CRC32-instruction loop alone on the
 * AMD EPYC this was measured on.
 */
CLMUL_TARGET static uint32_t crc32c_4k(const uint8_t *p)
{
	enum { FOLDED = 2176, STREAM = (4096 - FOLDED) / 3, STEPS = FOLDED / 128 - 1, PER = STREAM / 8 / STEPS };
	__m256i x0 = LOAD256(p), x1 = LOAD256(p + 32), x2 = LOAD256(p + 64), x3 = LOAD256(p + 96);
	x0 = _mm256_xor_si256(x0, _mm256_setr_epi32(-1, 0, 0, 0, 0, 0, 0, 0));	/* (the initial ~0) */
	const __m256i k128 = _mm256_setr_epi32(0x6992cea2, 0, 0x0d3b6092, 0, 0x6992cea2, 0, 0x0d3b6092, 0);
	const uint8_t *b1 = p + FOLDED, *b2 = b1 + STREAM, *b3 = b2 + STREAM;
	uint64_t s1 = 0, s2 = 0, s3 = 0;
	for (int i = 1; i <= STEPS; i++) {
		const uint8_t *q = p + 128 * i;
		x0 = fold256(x0, k128, LOAD256(q));
		x1 = fold256(x1, k128, LOAD256(q + 32));
		x2 = fold256(x2, k128, LOAD256(q + 64));
		x3 = fold256(x3, k128, LOAD256(q + 96));
		for (int t = 0; t < PER; t++, b1 += 8, b2 += 8, b3 += 8) {
			uint64_t v1, v2, v3;
			memcpy(&v1, b1, 8);
			memcpy(&v2, b2, 8);
			memcpy(&v3, b3, 8);
			s1 = _mm_crc32_u64(s1, v1);
			s2 = _mm_crc32_u64(s2, v2);
			s3 = _mm_crc32_u64(s3, v3);
		}
	}
	_Static_assert(PER * STEPS * 8 == STREAM && STREAM % 8 == 0, "the streams end with the folding");
	const __m256i k32 = _mm256_setr_epi32(0x3da6d0cb, 0, (int)0xba4fc28e, 0, 0x3da6d0cb, 0, (int)0xba4fc28e, 0);
	x1 = fold256(x0, k32, x1);
	x2 = fold256(x1, k32, x2);
	x3 = fold256(x2, k32, x3);
	__m128i lo = _mm256_castsi256_si128(x3), hi = _mm256_extracti128_si256(x3, 1);
	const __m128i k16 = _mm_setr_epi32((int)0xf20c0dfe, 0, 0x493c7d27, 0);
	__m128i v = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(lo, k16, 0x00),
						_mm_clmulepi64_si128(lo, k16, 0x11)), hi);
	uint32_t a = (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(v));
	a = (uint32_t)_mm_crc32_u64(a, (uint64_t)_mm_extract_epi64(v, 1));
	uint32_t c = crc_shift(a, 0xf48642e9) ^ crc_shift((uint32_t)s1, 0xdd66cbbb) ^
		     crc_shift((uint32_t)s2, 0x6b749fb2) ^ (uint32_t)s3;
	return ~c;
}
#endif

void parity_crc32c_x3(const void *a, const void *b, const void *c, size_t len, uint32_t *out)
{
#if defined(__x86_64__)
	static int sse42 = -1, clmul = -1;
	if (sse42 < 0) {
		sse42 = __builtin_cpu_supports("sse4.2") ? 1 : 0;
		clmul = sse42 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("vpclmulqdq") &&
			__builtin_cpu_supports("pclmul") && !getenv("RAIDFS_NO_VPCLMUL");
	}
	if (clmul && len == 4096) {
		out[0] = crc32c_4k(a);
		out[1] = crc32c_4k(b);
		out[2] = crc32c_4k(c);
		return;
	}
	if (sse42 && len % 8 == 0) {
		crc32c_x3_sse42(a, b, c, len, out);
		return;
	}
#endif
	out[0] = parity_crc32c(0, a, len);
	out[1] = parity_crc32c(0, b, len);
	out[2] = parity_crc32c(0, c, len);
}

/* ---------------------------------------------------------------------- */
/* Plain-C reference                                                      */
/* ---------------------------------------------------------------------- */

/*
 * log/exp tables for g = 2 and poly 0x11d, and from them a full product
 * table, so the reference multiplies with one lookup and needs no special
 * case for long runs.
 */
static uint8_t gf_log[256], gf_exp[510], gf_prod[256][256];
static pthread_once_t gf_once = PTHREAD_ONCE_INIT;

static void gf_init(void)
{
	unsigned x = 1;

	for (int i = 0; i < 255; i++) {
		gf_exp[i] = gf_exp[i + 255] = x;
		gf_log[x] = i;
		x <<= 1;
		if (x & 0x100)
			x ^= 0x11d;
	}
	for (int a = 1; a < 256; a++)
		for (int b = 1; b < 256; b++)
			gf_prod[a][b] = gf_exp[gf_log[a] + gf_log[b]];
}

static inline uint8_t ref_mul(uint8_t a, uint8_t b)
{
	return gf_prod[a][b];
}

static inline uint8_t ref_inv(uint8_t a)
{
	return gf_exp[255 - gf_log[a]];
}

static void gf_ready(void)
{
	pthread_once(&gf_once, gf_init);
}

/* Coefficient of data column i in parity row r (0 = P): (2^r)^i. */
static uint8_t ref_coef(int r, int i)
{
	return gf_exp[(r * i) % 255];
}

/* Row `row` (0..k+m-1) of the generator matrix. */
static void ref_gen_row(int k, int row, uint8_t *out)
{
	for (int i = 0; i < k; i++)
		out[i] = row < k ? (i == row) : ref_coef(row - k, i);
}

/* out ^= c * in, byte by byte. */
static void ref_mad(uint8_t c, const uint8_t *in, uint8_t *out, size_t len)
{
	const uint8_t *t = gf_prod[c];

	for (size_t x = 0; x < len; x++)
		out[x] ^= t[in[x]];
}

/* Parity row r from the data blocks, written to blocks[k + r]. */
static void ref_parity_row(int k, int r, size_t len, uint8_t *const *blocks)
{
	memset(blocks[k + r], 0, len);
	for (int i = 0; i < k; i++)
		ref_mad(ref_coef(r, i), blocks[i], blocks[k + r], len);
}

/* Gauss-Jordan inversion of the n x n matrix a (destroyed); -1 if singular. */
static int ref_invert(uint8_t *a, uint8_t *inv, int n)
{
	memset(inv, 0, (size_t)n * n);
	for (int i = 0; i < n; i++)
		inv[i * n + i] = 1;
	for (int c = 0; c < n; c++) {
		int piv = c;

		while (piv < n && !a[piv * n + c])
			piv++;
		if (piv == n)
			return -1;
		for (int x = 0; x < n; x++) {
			uint8_t t = a[c * n + x];

			a[c * n + x] = a[piv * n + x];
			a[piv * n + x] = t;
			t = inv[c * n + x];
			inv[c * n + x] = inv[piv * n + x];
			inv[piv * n + x] = t;
		}
		uint8_t f = ref_inv(a[c * n + c]);

		for (int x = 0; x < n; x++) {
			a[c * n + x] = ref_mul(a[c * n + x], f);
			inv[c * n + x] = ref_mul(inv[c * n + x], f);
		}
		for (int r = 0; r < n; r++) {
			uint8_t g = a[r * n + c];

			if (r == c || !g)
				continue;
			for (int x = 0; x < n; x++) {
				a[r * n + x] ^= ref_mul(g, a[c * n + x]);
				inv[r * n + x] ^= ref_mul(g, inv[c * n + x]);
			}
		}
	}
	return 0;
}

int parity_ref_encode(int k, int m, size_t len, uint8_t *const *blocks)
{
	int ret = check_args(k, m, len, blocks);

	if (ret)
		return ret;
	gf_ready();
	for (int r = 0; r < m; r++)
		ref_parity_row(k, r, len, blocks);
	return 0;
}

int parity_ref_verify(int k, int m, size_t len, uint8_t *const *blocks)
{
	int ret = check_args(k, m, len, blocks);

	if (ret)
		return ret;
	gf_ready();
	/* 4 KiB at a time on the stack: verify must not write, not even
	 * scratch shared with the ISA-L path. */
	for (size_t off = 0, n; off < len; off += n) {
		uint8_t tmp[4096];

		n = len - off < sizeof(tmp) ? len - off : sizeof(tmp);
		for (int r = 0; r < m; r++) {
			memset(tmp, 0, n);
			for (int i = 0; i < k; i++)
				ref_mad(ref_coef(r, i), blocks[i] + off, tmp, n);
			if (memcmp(tmp, blocks[k + r] + off, n))
				return 1;
		}
	}
	return 0;
}

/*
 * Solve for the erased data blocks from k surviving rows (surviving data
 * first, then parity in order P, Q, R, S, trying other parity choices if
 * the first is singular), then recompute erased parity from the data.
 */
int parity_ref_reconstruct(int k, int m, size_t len, uint8_t *const *blocks,
			   const int *erased, int nerased)
{
	int sorted[PARITY_MAX_M], src[PARITY_MAX_K], ed = 0, mask, ret;
	uint8_t a[PARITY_MAX_K * PARITY_MAX_K], inv[PARITY_MAX_K * PARITY_MAX_K];
	bool lost[NBLK_MAX];

	ret = check_args(k, m, len, blocks);
	if (!ret)
		ret = check_erasures(k, m, erased, nerased, sorted, lost);
	if (ret || nerased == 0)
		return ret;
	gf_ready();
	for (int i = 0; i < nerased; i++)
		ed += sorted[i] < k;

	if (ed) {
		for (mask = 0; mask < (1 << m); mask++) {
			int n = 0;
			bool ok = __builtin_popcount(mask) == ed;

			for (int r = 0; r < m && ok; r++)
				if ((mask >> r & 1) && lost[k + r])
					ok = false;
			if (!ok)
				continue;
			for (int i = 0; i < k; i++)
				if (!lost[i])
					src[n++] = i;
			for (int r = 0; r < m; r++)
				if (mask >> r & 1)
					src[n++] = k + r;
			for (int s = 0; s < k; s++)
				ref_gen_row(k, src[s], a + s * k);
			if (ref_invert(a, inv, k) == 0)
				break;
		}
		if (mask == 1 << m)
			return -EIO;
		for (int i = 0; i < nerased && sorted[i] < k; i++) {
			int d = sorted[i];

			memset(blocks[d], 0, len);
			for (int s = 0; s < k; s++)
				ref_mad(inv[d * k + s], blocks[src[s]],
					blocks[d], len);
		}
	}
	for (int i = 0; i < nerased; i++) {
		int r = sorted[i] - k;

		if (r >= 0)
			ref_parity_row(k, r, len, blocks);
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Misaligned input                                                       */
/* ---------------------------------------------------------------------- */

/*
 * Which kernel runs (SSE, AVX, AVX2, AVX-512) is ISA-L's choice, made at
 * run time from the CPU, and only some of them load unaligned.  Rather than
 * guess it from CPU flags, ask the kernels themselves: a child process
 * encodes with m = 1 (xor_gen), 2 (pq_gen) and 3 (ec_encode_data) from
 * input blocks at every kind of misalignment and compares with what the
 * same kernels computed here from aligned copies.  A kernel that faults
 * kills only the child.
 */
bool parity_probe_unaligned(void)
{
	enum { K = 4, LEN = 8192, STEP = LEN + ALIGN };
	static const int offs[] = { 1, 8, 16, 32, 48 };
	const int nm = 3, no = (int)(sizeof(offs) / sizeof(offs[0]));
	uint8_t *mem;

	/* data at [0, K), expected parity per m, parity per try, misaligned data */
	if (posix_memalign((void **)&mem, ALIGN, (size_t)STEP * (K + 2 * nm * 3 + K + 1)))
		return false;
	uint8_t *data = mem, *expect = mem + (size_t)K * STEP;
	uint8_t *got = expect + (size_t)nm * 3 * STEP, *mis = got + (size_t)nm * 3 * STEP;
	uint32_t x = 2463534242u;

	for (size_t i = 0; i < (size_t)K * STEP; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		data[i] = (uint8_t)x;
	}
	for (int m = 1; m <= nm; m++) {
		uint8_t *b[K + 3];

		for (int i = 0; i < K; i++)
			b[i] = data + (size_t)i * STEP;
		for (int i = 0; i < m; i++)
			b[K + i] = expect + (size_t)((m - 1) * 3 + i) * STEP;
		if (parity_encode(K, m, LEN, b)) {
			free(mem);
			return false;
		}
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		any_input_alignment = true;
		for (int o = 0; o < no; o++)
			for (int m = 1; m <= nm; m++) {
				uint8_t *b[K + 3];

				for (int i = 0; i < K; i++) {
					b[i] = mis + (size_t)i * STEP + offs[o];
					memcpy(b[i], data + (size_t)i * STEP, LEN);
				}
				for (int i = 0; i < m; i++)
					b[K + i] = got + (size_t)((m - 1) * 3 + i) * STEP;
				if (parity_encode(K, m, LEN, b))
					_exit(1);
				for (int i = 0; i < m; i++)
					if (memcmp(b[K + i], expect + (size_t)((m - 1) * 3 + i) * STEP, LEN))
						_exit(1);
			}
		_exit(0);
	}
	int status = 0;
	bool ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		  WEXITSTATUS(status) == 0;
	free(mem);
	any_input_alignment = ok;
	return ok;
}
