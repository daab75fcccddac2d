/*
 * csum.c - block checksums and row records (see csum.h).
 */
#include "csum.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parity.h"
#include "util.h"

static const uint8_t zeros[CSUM_BLOCK];

size_t csum_record_size(const struct layout *l)
{
	size_t r = 8 + 4 * (size_t)csum_per_row(l) + 4;
	return (r + 15) & ~(size_t)15;
}

uint32_t csum_block(const void *buf, size_t len)
{
	uint32_t crc = parity_crc32c(0, buf, len);
	return len < CSUM_BLOCK ? parity_crc32c(crc, zeros, CSUM_BLOCK - len) : crc;
}

void csum_blocks(const void *buf, size_t have, uint32_t nb, uint32_t *out)
{
	const uint8_t *p = buf;
	uint32_t i = 0;
	/* whole blocks three at a time (parity_crc32c_x3()) */
	for (; i + 3 <= nb && (size_t)(i + 3) * CSUM_BLOCK <= have; i += 3)
		parity_crc32c_x3(p + (size_t)i * CSUM_BLOCK, p + (size_t)(i + 1) * CSUM_BLOCK,
				 p + (size_t)(i + 2) * CSUM_BLOCK, CSUM_BLOCK, out + i);
	for (; i < nb; i++) {
		size_t at = (size_t)i * CSUM_BLOCK;
		size_t n = have > at ? have - at : 0;
		out[i] = csum_block(p + (n ? at : 0), n > CSUM_BLOCK ? CSUM_BLOCK : n);
	}
}

bool csum_slot_matches(const struct layout *l, const uint32_t *crc, uint32_t slot, uint32_t b0, uint32_t nb,
		       const void *buf)
{
	const uint8_t *p = buf;
	const uint32_t *want = crc + (size_t)slot * (l->chunk / CSUM_BLOCK) + b0;
	uint32_t got[48];
	for (uint32_t b = 0; b < nb; b += 48) {
		uint32_t n = nb - b < 48 ? nb - b : 48;
		csum_blocks(p + (size_t)b * CSUM_BLOCK, (size_t)n * CSUM_BLOCK, n, got);
		if (memcmp(got, want + b, (size_t)n * 4))
			return false;
	}
	return true;
}

uint32_t csum_zero_block(void)
{
	static uint32_t z;
	uint32_t v = __atomic_load_n(&z, __ATOMIC_RELAXED);
	if (!v) {	/* (never 0: CRC32C of 4 KiB of zeros is 0x98f94189) */
		v = csum_block(zeros, CSUM_BLOCK);
		__atomic_store_n(&z, v, __ATOMIC_RELAXED);
	}
	return v;
}

/* The checksum of block b of the XOR of the slots in `from` (bit i: slot
 * i; B checksums a slot), from theirs: CRC32C is affine over GF(2). */
static uint32_t xor_block(const uint32_t *crc, uint32_t B, uint32_t b, uint64_t from)
{
	uint32_t x = __builtin_popcountll(from) & 1 ? 0 : csum_zero_block();
	for (uint64_t f = from; f; f &= f - 1)
		x ^= crc[(size_t)__builtin_ctzll(f) * B + b];
	return x;
}

bool csum_xor_matches(const struct layout *l, const uint32_t *crc, uint64_t from, uint32_t slot)
{
	uint32_t B = l->chunk / CSUM_BLOCK;
	for (uint32_t b = 0; b < B; b++)
		if (xor_block(crc, B, b, from) != crc[(size_t)slot * B + b])
			return false;
	return true;
}

void csum_xor(uint32_t *crc, uint32_t B, uint32_t b0, uint32_t nb, uint32_t k)
{
	for (uint32_t b = b0; b < b0 + nb; b++)
		crc[(size_t)k * B + b] = xor_block(crc, B, b, (1ull << k) - 1);
}

void csum_encode(uint8_t *rec, size_t R, uint64_t gen, const uint32_t *crc, uint32_t n)
{
	memset(rec, 0, R);
	put_le64(rec, gen);
	for (uint32_t i = 0; i < n; i++)
		put_le32(rec + 8 + 4 * (size_t)i, crc[i]);
	put_le32(rec + R - 4, parity_crc32c(0, rec, R - 4));
}

int csum_decode(const uint8_t *rec, size_t R, uint32_t n, uint64_t *gen, uint32_t *crc)
{
	if (get_le64(rec) == 0 && get_le32(rec + R - 4) == 0) {
		*gen = 0;	/* a hole: nothing written */
		return 0;
	}
	if (get_le32(rec + R - 4) != parity_crc32c(0, rec, R - 4) || get_le64(rec) == 0)
		return -EBADMSG;
	*gen = get_le64(rec);
	for (uint32_t i = 0; i < n; i++)
		crc[i] = get_le32(rec + 8 + 4 * (size_t)i);
	return 0;
}

void csum_path(uint64_t id, char *buf, size_t len)
{
	snprintf(buf, len, CSUM_DIR "/%02x/%016" PRIx64, (unsigned)(id >> 56), id);
}

int csum_open(int dirfd, uint64_t id, int flags)
{
	char path[64];
	csum_path(id, path, sizeof(path));
	int fd = openat(dirfd, path, flags | O_CLOEXEC, 0600);
	if (fd < 0 && errno == ENOENT && (flags & O_CREAT)) {
		/* its fan-out directory, and .raidfs/sums first when that
		 * is missing too (once per member) */
		char dir[64];
		snprintf(dir, sizeof(dir), "%s", path);
		*strrchr(dir, '/') = '\0';
		bool made = mkdirat(dirfd, dir, 0700) == 0 || errno == EEXIST;
		if (!made && errno != ENOENT)
			return -errno;
		if (!made && mkdirat(dirfd, CSUM_DIR, 0700) < 0 && errno != EEXIST)
			return -errno;
		if (!made && mkdirat(dirfd, dir, 0700) < 0 && errno != EEXIST)
			return -errno;
		fd = openat(dirfd, path, flags | O_CLOEXEC, 0600);
	}
	return fd < 0 ? -errno : fd;
}

int csum_unlink(int dirfd, uint64_t id)
{
	char path[64];
	csum_path(id, path, sizeof(path));
	return unlinkat(dirfd, path, 0) < 0 && errno != ENOENT ? -errno : 0;
}

int csum_read_row(int fd, const struct layout *l, uint64_t s, uint64_t *gen, uint32_t *crc)
{
	size_t R = csum_record_size(l);
	uint8_t stackbuf[512], *rec = R <= sizeof(stackbuf) ? stackbuf : malloc(R);
	if (!rec)
		return -ENOMEM;
	ssize_t n = pread(fd, rec, R, (off_t)(s * R));
	int ret;
	if (n < 0)
		ret = -errno;
	else if ((size_t)n < R && n > 0)
		ret = -EBADMSG;	/* cut in the middle of a record */
	else if (n == 0)
		ret = (*gen = 0, 0);
	else
		ret = csum_decode(rec, R, csum_per_row(l), gen, crc);
	if (rec != stackbuf)
		free(rec);
	return ret;
}

int csum_write_row(int fd, const struct layout *l, uint64_t s, uint64_t gen, const uint32_t *crc)
{
	size_t R = csum_record_size(l);
	uint8_t stackbuf[512], *rec = R <= sizeof(stackbuf) ? stackbuf : malloc(R);
	if (!rec)
		return -ENOMEM;
	csum_encode(rec, R, gen, crc, csum_per_row(l));
	ssize_t n = pwrite(fd, rec, R, (off_t)(s * R));
	int ret = n < 0 ? -errno : (size_t)n < R ? -ENOSPC : 0;
	if (rec != stackbuf)
		free(rec);
	return ret;
}

int csum_read_rows(int fd, const struct layout *l, uint64_t s0, uint32_t n, uint8_t *buf)
{
	size_t R = csum_record_size(l);
	ssize_t got = io_pread(fd, buf, (size_t)n * R, (off_t)(s0 * R));
	return got < 0 ? (int)got : 0;
}

int csum_write_rows(int fd, const struct layout *l, uint64_t s0, uint32_t n, const uint8_t *buf)
{
	size_t R = csum_record_size(l);
	ssize_t put = pwrite(fd, buf, (size_t)n * R, (off_t)(s0 * R));
	return put < 0 ? -errno : (size_t)put < (size_t)n * R ? -ENOSPC : 0;
}

int csum_clear_row(int fd, const struct layout *l, uint64_t s)
{
	size_t R = csum_record_size(l);
	uint8_t *rec = calloc(1, R);
	if (!rec)
		return -ENOMEM;
	ssize_t n = pwrite(fd, rec, R, (off_t)(s * R));
	free(rec);
	return n < 0 ? -errno : (size_t)n < R ? -ENOSPC : 0;
}

int csum_truncate(int fd, const struct layout *l, uint64_t stripes)
{
	return ftruncate(fd, (off_t)(stripes * csum_record_size(l))) < 0 ? -errno : 0;
}
