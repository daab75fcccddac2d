/*
 * superblock.c - encode, decode, read and write member superblocks.
 *
 * Layout (all little-endian; see docs/format.md):
 *   0   magic "RAIDFSSB"         8
 *   8   format version u32       (3; 1 and 2 read)
 *   12  record length u32        (bytes including the crc)
 *   16  uuid                     16
 *   32  name                     64, NUL padded
 *   96  level, chunk, width, groups, index   5 x u32
 *   116 spares u32 (hot spares; their entries follow the members)
 *   120 events u64, ctime u64, utime u64
 *   144 this member's uuid       16
 *   160 checksum algorithm u8, flags u8 (bit 0: replacement entry), 30 reserved
 *   192 member entries, (width + spares) x 280: state u8, queued-for u8
 *       (a spare's: 0 any member, J + 1 a queued replacement of member J),
 *       2 reserved, generation u32, member uuid[16], path[256]
 *   ... with flag bit 0: the replacement entry, 280: state u8 (5), the
 *       index of the member it replaces u8, 6 reserved, uuid[16], path[256]
 *   ... crc32 u32 of all previous bytes
 * Formats 1 and 2: bytes 0..143 as above, entries of 264 bytes from 144
 * (state, 3 reserved, generation, path), version 2 with the replacement
 * entry; no member uuids, no checksum algorithm.
 */
#include "superblock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parity.h"
#include "util.h"

/* Formats 1 and 2 */
#define HDR1 144
#define ENT1 264
/* Format 3 */
#define HDR3 192
#define ENT3 280
#define F3_REPL 0x01	/* header flags: a replacement entry follows */

const char *member_state_name(enum member_state s)
{
	switch (s) {
	case MS_ONLINE: return "online";
	case MS_FAULTY: return "faulty";
	case MS_REMOVED: return "removed";
	case MS_REBUILDING: return "rebuilding";
	case MS_SPARE: return "spare";
	case MS_REPLACEMENT: return "replacement";
	}
	return "unknown";
}

const char *sb_csum_name(unsigned csum)
{
	switch (csum) {
	case SB_CSUM_NONE: return "none";
	case SB_CSUM_CRC32C: return "crc32c";
	}
	return "unknown";
}

int sb_csum_parse(const char *name)
{
	for (unsigned c = 0; c < SB_CSUM_COUNT; c++)
		if (!strcmp(name, sb_csum_name(c)))
			return (int)c;
	return -1;
}

int sb_name_check(const char *name, const char **why)
{
	*why = NULL;
	if (!*name)
		*why = "it is empty";
	else if (strlen(name) >= SB_NAME_MAX)
		*why = "it is too long (at most 63 characters)";
	else if (name[0] == '-')
		*why = "it starts with '-' (it would be read as an option)";
	else if (!strncasecmp(name, "uuid=", 5))
		*why = "it starts with 'UUID=' (it would be read as the array's uuid)";
	for (const unsigned char *p = (const unsigned char *)name; !*why && *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			*why = "it holds a control character";
		else if (*p == '/' || *p == ':')
			*why = "it holds '/' or ':' (it would be read as member directories)";
		else if (*p == ',' || *p == '\\')
			*why = "it holds ',' or '\\' (they separate mount options)";
		else if (*p == ' ')
			*why = "it holds a space (it separates fstab's fields)";
	}
	return *why ? -EINVAL : 0;
}

size_t sb_encoded_size_v(uint32_t version, uint32_t entries)
{
	if (version >= SB_VERSION)
		return HDR3 + (size_t)entries * ENT3 + 4;
	return HDR1 + (size_t)entries * ENT1 + 4;
}

/* The fields formats 1, 2 and 3 share: bytes 0..143. */
static void encode_common(const struct superblock *sb, uint8_t *buf, uint32_t version, size_t len)
{
	memset(buf, 0, len);
	memcpy(buf, SB_MAGIC, 8);
	put_le32(buf + 8, version);
	put_le32(buf + 12, len);
	memcpy(buf + 16, sb->uuid, 16);
	memcpy(buf + 32, sb->name, strnlen(sb->name, SB_NAME_MAX - 1));
	put_le32(buf + 96, sb->level);
	put_le32(buf + 100, sb->chunk);
	put_le32(buf + 104, sb->width);
	put_le32(buf + 108, sb->groups);
	put_le32(buf + 112, sb->index);
	put_le32(buf + 116, sb->nspares);
	put_le64(buf + 120, sb->events);
	put_le64(buf + 128, sb->ctime);
	put_le64(buf + 136, sb->utime);
}

size_t sb_encode(const struct superblock *sb, uint8_t *buf)
{
	uint32_t entries = sb->width + sb->nspares;
	size_t len = sb_encoded_size_v(SB_VERSION, entries + sb->replacing);
	encode_common(sb, buf, SB_VERSION, len);
	memcpy(buf + 144, sb->member_uuid, 16);
	buf[160] = sb->csum;
	buf[161] = sb->replacing ? F3_REPL : 0;
	for (uint32_t i = 0; i < entries; i++) {
		uint8_t *e = buf + HDR3 + i * ENT3;
		e[0] = sb->members[i].state;
		e[1] = i >= sb->width ? sb->members[i].queued_for : 0;
		put_le32(e + 4, sb->members[i].gen);
		memcpy(e + 8, sb->members[i].uuid, 16);
		memcpy(e + 24, sb->members[i].path, strnlen(sb->members[i].path, SB_PATH_MAX - 1));
	}
	if (sb->replacing) {
		uint8_t *e = buf + HDR3 + entries * ENT3;
		e[0] = MS_REPLACEMENT;
		e[1] = sb->repl_of;
		memcpy(e + 8, sb->repl_uuid, 16);
		memcpy(e + 24, sb->repl_path, strnlen(sb->repl_path, SB_PATH_MAX - 1));
	}
	put_le32(buf + len - 4, parity_crc32(0, buf, len - 4));
	return len;
}

size_t sb_encode_old(const struct superblock *sb, uint8_t *buf)
{
	uint32_t entries = sb->width + sb->nspares;
	uint32_t version = sb->replacing ? SB_VERSION_REPL : SB_VERSION_1;
	size_t len = sb_encoded_size_v(version, entries + sb->replacing);
	encode_common(sb, buf, version, len);
	for (uint32_t i = 0; i < entries; i++) {
		uint8_t *e = buf + HDR1 + i * ENT1;
		e[0] = sb->members[i].state;
		put_le32(e + 4, sb->members[i].gen);
		memcpy(e + 8, sb->members[i].path, strnlen(sb->members[i].path, SB_PATH_MAX - 1));
	}
	if (sb->replacing) {
		uint8_t *e = buf + HDR1 + entries * ENT1;
		e[0] = MS_REPLACEMENT;
		e[1] = sb->repl_of;
		memcpy(e + 8, sb->repl_path, strnlen(sb->repl_path, SB_PATH_MAX - 1));
	}
	put_le32(buf + len - 4, parity_crc32(0, buf, len - 4));
	return len;
}

int sb_decode(const uint8_t *buf, size_t len, struct superblock *sb,
	      const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	if (len < HDR1 + 4 || memcmp(buf, SB_MAGIC, 8) != 0) {
		*why = "not a raidfs superblock (bad magic)";
		return -EBADMSG;
	}
	uint32_t ver = get_le32(buf + 8);
	uint32_t rlen = get_le32(buf + 12);
	if (rlen > len || rlen < HDR1 + 4) {
		*why = "superblock is truncated";
		return -EBADMSG;
	}
	if (get_le32(buf + rlen - 4) != parity_crc32(0, buf, rlen - 4)) {
		*why = "superblock checksum mismatch (corrupt)";
		return -EBADMSG;
	}
	if (ver != SB_VERSION_1 && ver != SB_VERSION_REPL && ver != SB_VERSION) {
		*why = "superblock format version not supported by this raidfs (written by a newer raidfs?)";
		return -EPROTO;
	}
	bool v3 = ver == SB_VERSION;
	if (v3 && rlen < HDR3 + 4) {
		*why = "superblock is truncated";
		return -EBADMSG;
	}
	if (v3 && ((buf[161] & ~F3_REPL) || buf[160] >= SB_CSUM_COUNT)) {
		*why = buf[160] >= SB_CSUM_COUNT
			       ? "the array's checksum algorithm is not supported by this raidfs (written by a newer raidfs?)"
			       : "superblock flags not supported by this raidfs (written by a newer raidfs?)";
		return -EPROTO;
	}
	size_t hdr = v3 ? HDR3 : HDR1, ent = v3 ? ENT3 : ENT1, poff = v3 ? 24 : 8;
	memset(sb, 0, sizeof(*sb));
	sb->version = ver;
	memcpy(sb->uuid, buf + 16, 16);
	memcpy(sb->name, buf + 32, SB_NAME_MAX - 1);
	sb->level = get_le32(buf + 96);
	sb->chunk = get_le32(buf + 100);
	sb->width = get_le32(buf + 104);
	sb->groups = get_le32(buf + 108);
	sb->index = get_le32(buf + 112);
	sb->nspares = get_le32(buf + 116);
	sb->events = get_le64(buf + 120);
	sb->ctime = get_le64(buf + 128);
	sb->utime = get_le64(buf + 136);
	if (v3) {
		memcpy(sb->member_uuid, buf + 144, 16);
		sb->csum = buf[160];
	}
	bool repl = v3 ? (buf[161] & F3_REPL) != 0 : ver == SB_VERSION_REPL;
	if (sb->width == 0 || sb->width > LAYOUT_MAX_WIDTH || sb->nspares > SB_MAX_SPARES ||
	    rlen != sb_encoded_size_v(ver, sb->width + sb->nspares + repl) ||
	    sb->index >= sb->width + sb->nspares + repl || sb->level >= LEVEL_COUNT) {
		*why = "superblock fields out of range (corrupt)";
		return -EBADMSG;
	}
	if (repl) {
		const uint8_t *e = buf + hdr + (sb->width + sb->nspares) * ent;
		if (e[0] != MS_REPLACEMENT || e[1] >= sb->width) {
			*why = "superblock replacement entry out of range (corrupt)";
			return -EBADMSG;
		}
		sb->replacing = true;
		sb->repl_of = e[1];
		if (v3)
			memcpy(sb->repl_uuid, e + 8, 16);
		memcpy(sb->repl_path, e + poff, SB_PATH_MAX - 1);
	}
	for (uint32_t i = 0; i < sb->width + sb->nspares; i++) {
		const uint8_t *e = buf + hdr + i * ent;
		sb->members[i].state = e[0];
		sb->members[i].gen = get_le32(e + 4);
		if (v3)
			memcpy(sb->members[i].uuid, e + 8, 16);
		/* (a spare's binding to a member; one beyond the width, which no
		 * raidfs writes, is read as none: a plain hot spare) */
		if (v3 && i >= sb->width && e[1] <= sb->width)
			sb->members[i].queued_for = e[1];
		memcpy(sb->members[i].path, e + poff, SB_PATH_MAX - 1);
	}
	return 0;
}

int sb_read(int dirfd, struct superblock *sb, const char **why)
{
	uint8_t buf[SB_MAX_BYTES];
	const char *dummy;
	if (!why)
		why = &dummy;
	int fd = openat(dirfd, SB_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		*why = e == ENOENT ? "no raidfs superblock (not a member of any array)"
				   : "cannot open the superblock";
		return -e;
	}
	ssize_t n = io_pread(fd, buf, sizeof(buf), 0);
	close(fd);
	if (n < 0) {
		*why = "cannot read the superblock";
		return n;
	}
	return sb_decode(buf, n, sb, why);
}

int sb_write(int dirfd, const struct superblock *sb)
{
	uint8_t buf[SB_MAX_BYTES];
	size_t len = sb_encode(sb, buf);
	int ret;

	if (mkdirat(dirfd, SB_DIR, 0700) < 0 && errno != EEXIST)
		return -errno;
	int fd = openat(dirfd, SB_FILE ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	ret = io_pwrite(fd, buf, len, 0);
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	close(fd);
	if (ret == 0 && renameat(dirfd, SB_FILE ".tmp", dirfd, SB_FILE) < 0)
		ret = -errno;
	if (ret == 0) {
		int dfd = openat(dirfd, SB_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
	return ret;
}

void sb_uuid_str(const uint8_t u[16], char buf[37])
{
	snprintf(buf, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
}
