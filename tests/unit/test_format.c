/*
 * test_format.c - superblock and per-file metadata records: round trips,
 * and every single-byte corruption is detected (never accepted, never a
 * crash).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta.h"
#include "parity.h"
#include "superblock.h"
#include "util.h"

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static void test_spares(void)
{
	struct superblock sb, out;
	uint8_t buf[32768];
	memset(&sb, 0, sizeof(sb));
	sb.level = LEVEL_RAID5;
	sb.chunk = 4096;
	sb.width = 4;
	sb.nspares = 2;
	sb.index = 5;	/* the second spare */
	for (uint32_t i = 0; i < 6; i++) {
		sb.members[i].state = i < 4 ? MS_ONLINE : MS_SPARE;
		snprintf(sb.members[i].path, SB_PATH_MAX, "/srv/d%u", i);
	}
	size_t len = sb_encode(&sb, buf);
	CHECK(len == sb_encoded_size(6), "spares: encoded size %zu", len);
	CHECK(sb_decode(buf, len, &out, NULL) == 0 && out.nspares == 2 && out.index == 5 &&
	      out.members[5].state == MS_SPARE && !strcmp(out.members[4].path, "/srv/d4"),
	      "spares round trip");
	CHECK(out.members[4].queued_for == 0 && out.members[5].queued_for == 0, "a plain spare read as queued");
	/* a queued replacement: the spare's entry bound to member 2 (byte 1);
	 * a member entry never carries it; a binding beyond the width (no
	 * raidfs writes one) is read as a plain spare */
	sb.members[5].queued_for = 3;
	sb.members[1].queued_for = 2;
	len = sb_encode(&sb, buf);
	CHECK(buf[192 + 5 * 280 + 1] == 3 && buf[192 + 1 * 280 + 1] == 0, "queued-for byte misplaced");
	CHECK(sb_decode(buf, len, &out, NULL) == 0 && out.members[5].queued_for == 3 && out.members[4].queued_for == 0 &&
	      out.members[1].queued_for == 0, "queued replacement round trip");
	sb.members[5].queued_for = 9;
	len = sb_encode(&sb, buf);
	CHECK(sb_decode(buf, len, &out, NULL) == 0 && out.members[5].queued_for == 0,
	      "a binding beyond the width accepted");
	sb.members[5].queued_for = 0;
	sb.members[1].queued_for = 0;
	sb.nspares = SB_MAX_SPARES + 1;
	sb.index = 0;
	len = sb_encode(&sb, buf);
	CHECK(sb_decode(buf, len, &out, NULL) == -EBADMSG, "too many spares accepted");
}

/* A replacement in place: one more entry (flag bit 0 in format 3; format
 * 2 in the older encoding); the replacement's own index. */
static void test_replacement(void)
{
	struct superblock sb, out;
	uint8_t buf[SB_MAX_BYTES];
	memset(&sb, 0, sizeof(sb));
	sb.level = LEVEL_RAID6;
	sb.chunk = 4096;
	sb.width = 5;
	sb.nspares = 1;
	for (uint32_t i = 0; i < 6; i++)
		sb.members[i].state = i < 5 ? MS_ONLINE : MS_SPARE;
	size_t len = sb_encode(&sb, buf);
	CHECK(get_le32(buf + 8) == SB_VERSION && buf[161] == 0 && len == sb_encoded_size(6),
	      "no replacement: version, flags or size");
	sb.replacing = true;
	sb.repl_of = 3;
	memset(sb.repl_uuid, 0xa5, 16);
	snprintf(sb.repl_path, SB_PATH_MAX, "/srv/new3");
	sb.index = 6;	/* the replacement's own superblock */
	len = sb_encode(&sb, buf);
	CHECK(get_le32(buf + 8) == SB_VERSION && buf[161] == 1 && len == sb_encoded_size(7),
	      "replacement: version, flags or size");
	CHECK(sb_decode(buf, len, &out, NULL) == 0 && out.replacing && out.repl_of == 3 &&
	      !strcmp(out.repl_path, "/srv/new3") && sb_is_replacement(&out) && out.nspares == 1 &&
	      out.members[5].state == MS_SPARE && out.repl_uuid[15] == 0xa5, "replacement round trip");
	/* the same in the older encoding: format 2 */
	uint8_t old[SB_MAX_BYTES];
	size_t olen = sb_encode_old(&sb, old);
	CHECK(get_le32(old + 8) == SB_VERSION_REPL && olen == sb_encoded_size_v(SB_VERSION_REPL, 7),
	      "older replacement: version or size");
	CHECK(sb_decode(old, olen, &out, NULL) == 0 && out.version == SB_VERSION_REPL && out.replacing &&
	      out.repl_of == 3 && !strcmp(out.repl_path, "/srv/new3") && sb_uuid_nil(out.repl_uuid),
	      "format 2 replacement read");
	sb.index = 2;
	len = sb_encode(&sb, buf);
	CHECK(sb_decode(buf, len, &out, NULL) == 0 && out.replacing && !sb_is_replacement(&out),
	      "a member's superblock with a replacement recorded");
	buf[192 + 6 * 280 + 1] = 5;	/* replaces member 5 of 5: corrupt (crc fixed) */
	put_le32(buf + len - 4, parity_crc32(0, buf, len - 4));
	CHECK(sb_decode(buf, len, &out, NULL) == -EBADMSG, "replacement of a member out of range accepted");
	sb.replacing = false;
	sb.index = 6;
	len = sb_encode(&sb, buf);
	CHECK(sb_decode(buf, len, &out, NULL) == -EBADMSG, "index past the table accepted without a replacement");
}

/* Member uuids and the checksum algorithm round trip; formats 1 and 2
 * are read (no uuids, no checksums); unknown algorithms and flags are
 * refused as a format this raidfs does not know, never misread. */
static void test_identity(void)
{
	struct superblock sb, out;
	uint8_t buf[SB_MAX_BYTES];
	memset(&sb, 0, sizeof(sb));
	random_bytes(sb.uuid, 16);
	sb.level = LEVEL_RAID5;
	sb.chunk = 65536;
	sb.width = 4;
	sb.groups = 1;
	sb.index = 2;
	sb.csum = SB_CSUM_CRC32C;
	for (uint32_t i = 0; i < 4; i++) {
		random_bytes(sb.members[i].uuid, 16);
		snprintf(sb.members[i].path, SB_PATH_MAX, "/srv/d%u", i);
	}
	memcpy(sb.member_uuid, sb.members[2].uuid, 16);
	size_t len = sb_encode(&sb, buf);
	CHECK(sb_decode(buf, len, &out, NULL) == 0 && out.version == SB_VERSION && out.csum == SB_CSUM_CRC32C &&
	      !memcmp(out.member_uuid, sb.members[2].uuid, 16) && !memcmp(out.members[3].uuid, sb.members[3].uuid, 16) &&
	      !strcmp(out.members[3].path, "/srv/d3"), "uuids and checksum round trip");
	buf[160] = SB_CSUM_COUNT;	/* an algorithm of a newer raidfs */
	put_le32(buf + len - 4, parity_crc32(0, buf, len - 4));
	const char *why = NULL;
	CHECK(sb_decode(buf, len, &out, &why) == -EPROTO && why && strstr(why, "checksum"),
	      "unknown checksum algorithm not refused");
	buf[160] = SB_CSUM_NONE;
	buf[161] = 0x80;	/* a flag of a newer raidfs */
	put_le32(buf + len - 4, parity_crc32(0, buf, len - 4));
	CHECK(sb_decode(buf, len, &out, NULL) == -EPROTO, "unknown flag not refused");
	put_le32(buf + 8, SB_VERSION + 1);
	buf[161] = 0;
	put_le32(buf + len - 4, parity_crc32(0, buf, len - 4));
	CHECK(sb_decode(buf, len, &out, NULL) == -EPROTO, "newer format version not refused");
	/* format 1, as an older raidfs wrote it */
	len = sb_encode_old(&sb, buf);
	CHECK(get_le32(buf + 8) == SB_VERSION_1 && len == 144 + 4 * 264 + 4, "format 1: version or size");
	CHECK(!strcmp((const char *)buf + 144 + 3 * 264 + 8, "/srv/d3"), "format 1: path not at its place");
	CHECK(sb_decode(buf, len, &out, NULL) == 0 && out.version == SB_VERSION_1 && out.csum == SB_CSUM_NONE &&
	      sb_uuid_nil(out.member_uuid) && sb_uuid_nil(out.members[1].uuid) && out.index == 2 &&
	      !strcmp(out.members[3].path, "/srv/d3"), "format 1 read");
	CHECK(sb_csum_parse("crc32c") == SB_CSUM_CRC32C && sb_csum_parse("none") == SB_CSUM_NONE &&
	      sb_csum_parse("crc32") < 0 && !strcmp(sb_csum_name(SB_CSUM_CRC32C), "crc32c"), "checksum names");
}

static void test_superblock(uint32_t width)
{
	struct superblock sb, out;
	uint8_t buf[32768];
	memset(&sb, 0, sizeof(sb));
	random_bytes(sb.uuid, 16);
	snprintf(sb.name, sizeof(sb.name), "tank-%u", width);
	sb.level = LEVEL_RAID6;
	sb.chunk = 65536;
	sb.width = width;
	sb.groups = 1;
	sb.index = width - 1;
	sb.events = 0x123456789abcull;
	sb.ctime = 1700000000;
	sb.utime = 1700000100;
	for (uint32_t i = 0; i < width; i++) {
		sb.members[i].state = i % 5;
		snprintf(sb.members[i].path, SB_PATH_MAX, "/srv/disk%u", i);
	}
	size_t len = sb_encode(&sb, buf);
	CHECK(len == sb_encoded_size(width), "encoded size %zu", len);
	CHECK(sb_decode(buf, len, &out, NULL) == 0, "decode of a good superblock failed");
	CHECK(memcmp(out.uuid, sb.uuid, 16) == 0 && !strcmp(out.name, sb.name) &&
	      out.level == sb.level && out.chunk == sb.chunk && out.width == width &&
	      out.index == sb.index && out.events == sb.events && out.ctime == sb.ctime,
	      "superblock round trip differs");
	for (uint32_t i = 0; i < width; i++)
		CHECK(out.members[i].state == sb.members[i].state &&
		      !strcmp(out.members[i].path, sb.members[i].path), "member %u differs", i);
	/* every single-byte corruption must be rejected */
	for (size_t i = 0; i < len; i++) {
		uint8_t save = buf[i];
		buf[i] ^= 0x5a;
		const char *why = NULL;
		int r = sb_decode(buf, len, &out, &why);
		CHECK(r == -EBADMSG || r == -EPROTO, "corrupt byte %zu accepted (r=%d)", i, r);
		CHECK(why != NULL, "no reason given for corrupt byte %zu", i);
		buf[i] = save;
	}
	/* truncated records */
	for (size_t l = 0; l < len; l += 7)
		CHECK(sb_decode(buf, l, &out, NULL) < 0, "truncated superblock (%zu bytes) accepted", l);
}

static void test_meta(void)
{
	struct file_meta m = {
		.id = 0xfeedfacecafebeefull, .size = 5ull << 30, .version = 42,
		.flags = META_F_DIRTY, .level = LEVEL_RAID5, .chunk = 4096,
		.width = 4, .groups = 1, .rotation = 3, .index = 2,
	}, out;
	uint8_t b[META_SIZE];
	meta_encode(&m, b);
	CHECK(meta_decode(b, META_SIZE, &out) == 0, "decode of good metadata failed");
	CHECK(out.id == m.id && out.size == m.size && out.version == m.version &&
	      out.flags == m.flags && out.level == m.level && out.chunk == m.chunk &&
	      out.width == m.width && out.rotation == m.rotation && out.index == m.index,
	      "metadata round trip differs");
	for (size_t i = 0; i < META_SIZE; i++) {
		for (int bit = 0; bit < 8; bit++) {
			b[i] ^= 1 << bit;
			int r = meta_decode(b, META_SIZE, &out);
			CHECK(r == -EBADMSG || r == -EPROTO, "corrupt metadata byte %zu bit %d accepted", i, bit);
			b[i] ^= 1 << bit;
		}
	}
	CHECK(meta_decode(b, META_SIZE - 1, &out) == -EBADMSG, "short metadata accepted");
	struct layout l;
	CHECK(meta_layout(&m, &l) == 0 && l.k == 3 && l.m == 1, "layout from metadata");
	m.chunk = 3000;
	CHECK(meta_layout(&m, &l) == -EBADMSG, "bad chunk in metadata accepted");
}

int main(void)
{
	for (uint32_t w = 1; w <= LAYOUT_MAX_WIDTH; w = w < 8 ? w + 1 : w * 2)
		test_superblock(w);
	test_meta();
	test_spares();
	test_replacement();
	test_identity();
	if (failures) {
		fprintf(stderr, "test_format: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_format: superblock and metadata records ok\n");
	return 0;
}
