/*
 * csum.h - block checksums of shards and their row records
 * (docs/checksums.md, docs/format.md "Checksum files").
 *
 * A shard is checksummed in 4 KiB blocks (CRC32C; bytes past the shard's
 * end count as zeros).  Every member holding a shard of a checksummed
 * file keeps a checksum file, `.raidfs/sums/<2 hex>/<file id>`, with one
 * row record per stripe: the checksums of every block of every slot of
 * the member's group in that stripe, and the row's generation (bumped by
 * each write of the row).  The record with the highest generation among
 * the members of a row is the one believed: a member whose write was lost
 * keeps an older record, which another member's newer one outvotes.
 *
 *   record at offset s x R (R = csum_record_size()):
 *     0      u64 generation (0: no record - a hole, never written)
 *     8      u32 crc[slot * B + block], slot-major, B = chunk / 4 KiB
 *     ...    zero padding to R - 4
 *     R - 4  u32 CRC32C of the bytes before it
 *
 * Pure functions plus the checksum file's open/read/write; no locking
 * (the caller's rfile lock orders the writes of one file).
 */
#ifndef RAIDFS_CSUM_H
#define RAIDFS_CSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "layout.h"

#define CSUM_BLOCK 4096u
#define CSUM_DIR ".raidfs/sums"

/* checksums per row (slots x blocks per chunk) */
static inline uint32_t csum_per_row(const struct layout *l)
{
	return (l->k + l->m) * (l->chunk / CSUM_BLOCK);
}

/* bytes of one row record */
size_t csum_record_size(const struct layout *l);

/* The checksum of one block: `len` (<= CSUM_BLOCK) bytes at buf, the
 * rest of the block zeros. */
uint32_t csum_block(const void *buf, size_t len);

/* The checksums of blocks [b0, b0 + nb) of a chunk whose bytes from
 * block b0 on are at buf, `have` bytes of them present (the rest, to the
 * end of the last block, zeros): out[i] for block b0 + i. */
void csum_blocks(const void *buf, size_t have, uint32_t nb, uint32_t *out);

/* The checksums of blocks [b0, b0 + nb) of the XOR of slots 0..k-1 of a
 * row (P), into slot k's place in crc[] (B checksums a slot), from the
 * slots' own: a CRC is affine over GF(2), crc(a ^ b) = crc(a) ^ crc(b) ^
 * crc(zeros) for blocks of one length, so P need not be summed byte by
 * byte. */
void csum_xor(uint32_t *crc, uint32_t B, uint32_t b0, uint32_t nb, uint32_t k);

/* Do blocks [b0, b0 + nb) of slot `slot` of a row, whole blocks at buf,
 * match the row's checksums crc[] (csum_per_row() of them)? */
bool csum_slot_matches(const struct layout *l, const uint32_t *crc, uint32_t slot, uint32_t b0, uint32_t nb,
		       const void *buf);

/* The checksum of a zero block (what a row without a record holds). */
uint32_t csum_zero_block(void);

/* Does the row's record give slot `slot` the checksums of the XOR of the
 * slots in `from` (bit i: slot i), block by block?  CRC32C is affine over
 * GF(2): the checksum of an XOR of n blocks is the XOR of theirs, and of
 * the zero block's when n is even.  So a chunk an XOR made (RAID5's lost
 * chunk, P) of chunks that matched their checksums is verified without
 * reading its bytes again. */
bool csum_xor_matches(const struct layout *l, const uint32_t *crc, uint64_t from, uint32_t slot);

/* Encode / decode a record of `n` checksums into / from R bytes.
 * csum_decode(): 0 (gen 0 and no checksums for an all-zero record: none
 * written), -EBADMSG when the record's own CRC does not match. */
void csum_encode(uint8_t *rec, size_t R, uint64_t gen, const uint32_t *crc, uint32_t n);
int csum_decode(const uint8_t *rec, size_t R, uint32_t n, uint64_t *gen, uint32_t *crc);

/* The checksum file of file `id` on the member whose root is dirfd:
 * open (flags as open(2): O_RDWR, O_CREAT makes it and its directory),
 * unlink.  fd or -errno; 0 or -errno. */
int csum_open(int dirfd, uint64_t id, int flags);
int csum_unlink(int dirfd, uint64_t id);
/* Its path relative to the member root (for messages). */
void csum_path(uint64_t id, char *buf, size_t len);

/* Row record of stripe s: read (a record past the file's end reads as
 * none: *gen 0) and write.  0 or -errno. */
int csum_read_row(int fd, const struct layout *l, uint64_t s, uint64_t *gen, uint32_t *crc);
int csum_write_row(int fd, const struct layout *l, uint64_t s, uint64_t gen, const uint32_t *crc);
/* The records of stripes [s0, s0 + n) as they are stored (n x R bytes;
 * zeros past the file's end), and written back in one call.  0 or -errno. */
int csum_read_rows(int fd, const struct layout *l, uint64_t s0, uint32_t n, uint8_t *buf);
int csum_write_rows(int fd, const struct layout *l, uint64_t s0, uint32_t n, const uint8_t *buf);
/* No record for stripe s (zeros: a row never written). */
int csum_clear_row(int fd, const struct layout *l, uint64_t s);
/* The file cut to the records of stripes [0, stripes). */
int csum_truncate(int fd, const struct layout *l, uint64_t stripes);

#endif
