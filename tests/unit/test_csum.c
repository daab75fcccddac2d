/*
 * test_csum.c - block checksums and row records (csum.h): the CRC32C
 * check value, zero padding of short blocks, record round trips, every
 * single-byte change of a record detected, and the checksum file's rows
 * (a row never written, or past the end, reads as none).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csum.h"
#include "layout.h"
#include "parity.h"

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static void test_crc(void)
{
	CHECK(parity_crc32c(0, "123456789", 9) == 0xe3069283u, "crc32c check value %08x",
	      parity_crc32c(0, "123456789", 9));
	CHECK(parity_crc32c(parity_crc32c(0, "12345", 5), "6789", 4) == 0xe3069283u, "crc32c chains");
	uint8_t blk[CSUM_BLOCK];
	memset(blk, 0, sizeof(blk));
	memcpy(blk, "raidfs", 6);
	CHECK(csum_block(blk, 6) == csum_block(blk, CSUM_BLOCK), "a short block counts its tail as zeros");
	CHECK(csum_block(blk, 0) == parity_crc32c(0, blk + 8, CSUM_BLOCK), "an empty block is a zero block");
	uint8_t chunk[3 * CSUM_BLOCK];
	for (size_t i = 0; i < sizeof(chunk); i++)
		chunk[i] = (uint8_t)(i * 7 + 3);
	uint32_t out[3];
	csum_blocks(chunk, CSUM_BLOCK + 10, 3, out);
	CHECK(out[0] == csum_block(chunk, CSUM_BLOCK) && out[1] == csum_block(chunk + CSUM_BLOCK, 10) &&
	      out[2] == csum_block(chunk, 0), "csum_blocks over a short chunk");
	/* whole blocks go three at a time (parity_crc32c_x3()), the rest one
	 * by one: every block's checksum as csum_block() makes it */
	static uint8_t seven[7 * CSUM_BLOCK];
	uint32_t s7[7];
	for (size_t i = 0; i < sizeof(seven); i++)
		seven[i] = (uint8_t)(i * 2654435761u >> 11);
	csum_blocks(seven, sizeof(seven), 7, s7);
	for (uint32_t b = 0; b < 7; b++)
		CHECK(s7[b] == parity_crc32c(0, seven + (size_t)b * CSUM_BLOCK, CSUM_BLOCK), "block %u of seven", b);
	uint32_t x3[3];
	parity_crc32c_x3("123456789", seven, seven + 8, 8, x3);
	CHECK(x3[0] == parity_crc32c(0, "12345678", 8) && x3[1] == parity_crc32c(0, seven, 8) &&
	      x3[2] == parity_crc32c(0, seven + 8, 8), "parity_crc32c_x3 over 8 bytes");
	/* 4 KiB blocks (folded and streamed at once where the CPU can: every
	 * part of the block counts): at odd alignments, one byte changed
	 * anywhere, all zeros and all ones */
	static uint8_t big[3 * CSUM_BLOCK + 64];
	uint32_t seed = 12345;
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)((seed = seed * 1103515245u + 12345u) >> 16);
	for (int round = 0; round < 64; round++) {
		size_t at = (size_t)round % 61;
		if (round >= 32)
			big[at + (size_t)(round * 997) % (3 * CSUM_BLOCK)] ^= (uint8_t)(1u << (round % 8));
		if (round == 62)
			memset(big + at, 0, 3 * CSUM_BLOCK);
		if (round == 63)
			memset(big + at, 0xff, 3 * CSUM_BLOCK);
		parity_crc32c_x3(big + at, big + at + CSUM_BLOCK, big + at + 2 * CSUM_BLOCK, CSUM_BLOCK, x3);
		for (int k = 0; k < 3; k++)
			CHECK(x3[k] == parity_crc32c(0, big + at + (size_t)k * CSUM_BLOCK, CSUM_BLOCK),
			      "parity_crc32c_x3 of 4 KiB block %d, round %d", k, round);
	}
}

/* P's checksums from the data's (csum_xor()): equal to those of the
 * XOR's bytes, for an odd and an even number of data slots, over a
 * window of blocks in the middle of the chunk */
static void test_xor_make(void)
{
	enum { B = 4, MAXK = 4 };
	static uint8_t data[MAXK][B * CSUM_BLOCK], p[B * CSUM_BLOCK];
	uint32_t seed = 12345;
	for (int i = 0; i < MAXK; i++)
		for (size_t x = 0; x < sizeof(data[i]); x++)
			data[i][x] = (uint8_t)((seed = seed * 1103515245u + 12345u) >> 16);
	for (uint32_t k = 1; k <= MAXK; k++) {
		uint32_t crc[(MAXK + 1) * B] = { 0 }, want[B];
		memset(p, 0, sizeof(p));
		for (uint32_t i = 0; i < k; i++) {
			for (size_t x = 0; x < sizeof(p); x++)
				p[x] ^= data[i][x];
			csum_blocks(data[i] + CSUM_BLOCK, 2 * CSUM_BLOCK, 2, crc + i * B + 1);
		}
		csum_blocks(p + CSUM_BLOCK, 2 * CSUM_BLOCK, 2, want);
		csum_xor(crc, B, 1, 2, k);
		CHECK(crc[k * B + 1] == want[0] && crc[k * B + 2] == want[1], "P's checksums from %u data slots", k);
		CHECK(crc[k * B] == 0 && crc[k * B + 3] == 0, "csum_xor wrote outside its blocks (k %u)", k);
	}
}

/* csum_xor_matches(): the checksums of an XOR of 2 and 3 chunks follow
 * from theirs; a record whose slot says otherwise, by one bit of one
 * block, is not taken */
static void test_xor_matches(void)
{
	struct layout l;
	CHECK(layout_init(&l, LEVEL_RAID6, 16384, 6, 1, 0, NULL) == 0, "layout");
	uint32_t B = l.chunk / CSUM_BLOCK, crc[6 * 4];
	static uint8_t c[6][16384];
	srand(7);
	for (int i = 0; i < 4; i++)
		for (size_t b = 0; b < sizeof(c[i]); b++)
			c[i][b] = (uint8_t)rand();
	for (size_t b = 0; b < sizeof(c[4]); b++) {
		c[4][b] = c[0][b] ^ c[1][b] ^ c[2][b];
		c[5][b] = c[0][b] ^ c[3][b];
	}
	for (uint32_t i = 0; i < 6; i++)
		csum_blocks(c[i], l.chunk, B, crc + i * B);
	CHECK(csum_zero_block() == csum_block(c[0], 0), "the zero block's checksum");
	CHECK(csum_xor_matches(&l, crc, 0x7, 4), "XOR of three");
	CHECK(csum_xor_matches(&l, crc, 0x9, 5), "XOR of two");
	CHECK(!csum_xor_matches(&l, crc, 0x3, 4), "XOR of other slots");
	crc[4 * B + 2] ^= 1;
	CHECK(!csum_xor_matches(&l, crc, 0x7, 4), "a slot's checksum that does not follow");
}

static void test_records(void)
{
	struct layout l;
	CHECK(layout_init(&l, LEVEL_RAID6, 16384, 6, 1, 0, NULL) == 0, "layout");
	uint32_t n = csum_per_row(&l), crc[64], back[64];
	CHECK(n == 6 * 4, "per row %u", n);
	size_t R = csum_record_size(&l);
	CHECK(R % 16 == 0 && R >= 12 + 4 * n, "record size %zu", R);
	for (uint32_t i = 0; i < n; i++)
		crc[i] = 0x9e3779b9u * (i + 1);
	uint8_t rec[512];
	csum_encode(rec, R, 42, crc, n);
	uint64_t gen = 0;
	CHECK(csum_decode(rec, R, n, &gen, back) == 0 && gen == 42 && !memcmp(crc, back, 4 * n), "round trip");
	for (size_t i = 0; i < R; i++) {
		uint8_t save = rec[i];
		rec[i] ^= 0x10;
		CHECK(csum_decode(rec, R, n, &gen, back) == -EBADMSG, "byte %zu changed: not detected", i);
		rec[i] = save;
	}
	memset(rec, 0, R);
	CHECK(csum_decode(rec, R, n, &gen, back) == 0 && gen == 0, "a zero record is none");
}

static void test_file(void)
{
	char dir[] = "/tmp/test_csum.XXXXXX";
	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(mkdirat(dfd, ".raidfs", 0700) == 0, "mkdir .raidfs");
	struct layout l;
	layout_init(&l, LEVEL_RAID5, 4096, 4, 1, 0, NULL);
	uint64_t id = 0xabcdef0123456789ull;
	CHECK(csum_open(dfd, id, O_RDWR) == -ENOENT, "absent without O_CREAT");
	int fd = csum_open(dfd, id, O_RDWR | O_CREAT);
	CHECK(fd >= 0, "create: %d", fd);
	uint32_t crc[4] = { 1, 2, 3, 4 }, back[4];
	uint64_t gen = 9;
	CHECK(csum_write_row(fd, &l, 5, 7, crc) == 0, "write row 5");
	CHECK(csum_read_row(fd, &l, 5, &gen, back) == 0 && gen == 7 && back[3] == 4, "read row 5");
	CHECK(csum_read_row(fd, &l, 2, &gen, back) == 0 && gen == 0, "row 2 (a hole) is none");
	CHECK(csum_read_row(fd, &l, 9, &gen, back) == 0 && gen == 0, "row 9 (past the end) is none");
	CHECK(csum_truncate(fd, &l, 3) == 0, "truncate");
	CHECK(csum_read_row(fd, &l, 5, &gen, back) == 0 && gen == 0, "row 5 cut off");
	/* a record cut in the middle is damage, not "none" */
	CHECK(csum_write_row(fd, &l, 1, 3, crc) == 0 && ftruncate(fd, (off_t)(csum_record_size(&l) + 10)) == 0,
	      "cut");
	CHECK(csum_read_row(fd, &l, 1, &gen, back) == -EBADMSG, "a cut record");
	close(fd);
	CHECK(csum_unlink(dfd, id) == 0 && csum_open(dfd, id, O_RDWR) == -ENOENT, "unlink");
	CHECK(csum_unlink(dfd, id) == 0, "unlink twice");
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0, "cleanup");
	close(dfd);
}

int main(void)
{
	test_crc();
	test_xor_make();
	test_xor_matches();
	test_records();
	test_file();
	if (failures) {
		fprintf(stderr, "test_csum: %d failures\n", failures);
		return 1;
	}
	printf("test_csum: ok\n");
	return 0;
}
