/*
 * parity.h - the parity interface of raidfs, over Intel ISA-L.
 *
 * What it is for
 *   Computing, checking and using redundancy for one "row": k data blocks
 *   and m parity blocks of equal length, all at the same offset of their
 *   shard files.  m = 1 is RAID5 XOR parity, m = 2 is RAID6 P+Q, m = 3..4
 *   is a generic Reed-Solomon code (later k+m levels).
 *
 * Code (bit-compatible with Linux md and ISA-L pq_gen)
 *   P = D_0 ^ D_1 ^ ... ^ D_{k-1}
 *   Q = sum_i g^i * D_i over GF(2^8), polynomial 0x11d, generator g = 2.
 *   Rows 3 and 4 (m >= 3) follow gf_gen_rs_matrix(): counting parity rows
 *   from 0 (P = 0, Q = 1), row r has coefficients (2^r)^i, i.e. R = sum
 *   4^i * D_i and S = sum 8^i * D_i.  So m = 3 and 4 extend RAID6: their
 *   first two parity blocks are exactly P and Q.  For k = 1 every parity
 *   block is a copy of the data block.
 *
 * Blocks
 *   blocks[0..k-1] are data, blocks[k..k+m-1] parity, each `len` bytes.
 *   Any length >= 1 and any alignment is accepted: where ISA-L needs
 *   aligned buffers or a length multiple of 16/32, the glue copies through
 *   aligned, zero-padded scratch (per thread).  Nothing outside isal-glue/
 *   includes ISA-L headers.  Blocks whose addresses are 64-byte aligned
 *   are used in place; with len % 64 == 0 as well, nothing is copied at
 *   all, which is the fast path.  The k + m blocks must not overlap.
 *
 * Limits
 *   1 <= k <= PARITY_MAX_K, 0 <= m <= PARITY_MAX_M.  For m = 4, k <= 21
 *   (beyond that the RS matrix has singular erasure patterns); every
 *   function returns -EINVAL for m = 4 with k > 21.  Within these limits
 *   every pattern of up to m erasures is decodable (the test checks all of
 *   them for m = 4, k = 21).
 *
 * Thread safety
 *   All functions are safe to call from any number of threads.  Decode
 *   tables are cached per (k, m, erasure pattern) in a table protected by
 *   its own lock (at most 256 entries, least recently used evicted);
 *   encode tables for m >= 3 are built once per (k, m) and taken without
 *   a lock.  Scratch buffers are per thread: up to about 1 MiB each, held
 *   until the thread exits.
 *
 * Errors
 *   Functions return 0 on success or a negative errno: -EINVAL for bad
 *   k/m/len/indices or a NULL block, -ENOMEM when scratch cannot be had,
 *   -EIO when the erasure pattern cannot be decoded (more erasures than m;
 *   a singular pattern would also give -EIO, but none exists within the
 *   limits above).  On error no block has been written.
 */
#ifndef RAIDFS_PARITY_H
#define RAIDFS_PARITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PARITY_MAX_K 64
#define PARITY_MAX_M 4

/* Compute blocks[k..k+m-1] from blocks[0..k-1].  m == 0 is a no-op. */
int parity_encode(int k, int m, size_t len, uint8_t *const *blocks);

/* 0 if the parity blocks match the data, 1 if any byte differs, <0 on
 * error.  Does not modify any block. */
int parity_verify(int k, int m, size_t len, uint8_t *const *blocks);

/* Recompute the blocks whose indices (0..k+m-1, distinct, in any order)
 * are listed in erased[0..nerased-1] from the other blocks, in place.
 * nerased <= m, otherwise -EIO (checked before the indices); nerased == 0
 * is a no-op.  The old contents of erased blocks are ignored.  Surviving
 * blocks are read only, never written, not even with their own value. */
int parity_reconstruct(int k, int m, size_t len, uint8_t *const *blocks,
		       const int *erased, int nerased);

/* Once at start-up, before other threads run (it forks): find out whether
 * the ISA-L kernels chosen for this CPU read misaligned input blocks
 * correctly.  If they do, input blocks are used in place whatever their
 * alignment; otherwise (and without this call) every input block that is
 * not 64-byte aligned is copied to aligned scratch first.  Returns the
 * answer. */
bool parity_probe_unaligned(void);

/* Plain-C reference implementations with the same contract, used by the
 * tests to check the ISA-L paths (and usable as a fallback). */
int parity_ref_encode(int k, int m, size_t len, uint8_t *const *blocks);
int parity_ref_verify(int k, int m, size_t len, uint8_t *const *blocks);
int parity_ref_reconstruct(int k, int m, size_t len, uint8_t *const *blocks,
			   const int *erased, int nerased);

/* crc32 with zlib's value (ISA-L crc32_gzip_refl): parity_crc32(0, b, n)
 * == crc32(0, b, n), chaining the same way, and 0 for a NULL buf as zlib
 * does.  Any alignment and length. */
uint32_t parity_crc32(uint32_t crc, const void *buf, size_t len);

/* CRC32C (Castagnoli, iSCSI; ISA-L crc32_iscsi, hardware-accelerated)
 * with the standard value, chaining like parity_crc32():
 * parity_crc32c(0, "123456789", 9) == 0xe3069283.  Any alignment and
 * length. */
uint32_t parity_crc32c(uint32_t crc, const void *buf, size_t len);

/* parity_crc32c(0, ...) of three buffers of `len` bytes each, into
 * out[0..2].  4 KiB blocks on a CPU with VPCLMULQDQ and AVX2: each block
 * folded by carry-less multiplication and summed by CRC32 instructions at
 * once (parity.c's crc32c_4k(); the environment variable RAIDFS_NO_VPCLMUL
 * turns it off, for comparisons).  Else, lengths that are a multiple of
 * 8: one loop keeps three CRC32 instructions in flight (their latency is
 * three cycles, their throughput one a cycle).  Without SSE4.2, three
 * parity_crc32c() calls. */
void parity_crc32c_x3(const void *a, const void *b, const void *c, size_t len, uint32_t *out);

#endif
