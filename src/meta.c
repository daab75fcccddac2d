/*
 * meta.c - per-file metadata records (see meta.h).
 *
 *   0  magic u32 "RFM1"      4  version u16   6  flags u16
 *   8  level u8, 3 reserved  12 chunk u32     16 width u32
 *   20 groups u32            24 rotation u32  28 member index u32
 *   32 file id u64           40 size u64      48 version counter u64
 *   56 reserved u32          60 crc32 of bytes 0..59
 */
#include "meta.h"

#include <errno.h>
#include <string.h>
#include <sys/xattr.h>

#include "parity.h"
#include "util.h"

void meta_encode(const struct file_meta *m, uint8_t b[META_SIZE])
{
	memset(b, 0, META_SIZE);
	put_le32(b, META_MAGIC);
	put_le16(b + 4, META_VERSION);
	put_le16(b + 6, m->flags);
	b[8] = m->level;
	put_le32(b + 12, m->chunk);
	put_le32(b + 16, m->width);
	put_le32(b + 20, m->groups);
	put_le32(b + 24, m->rotation);
	put_le32(b + 28, m->index);
	put_le64(b + 32, m->id);
	put_le64(b + 40, m->size);
	put_le64(b + 48, m->version);
	put_le32(b + 60, parity_crc32(0, b, 60));
}

int meta_decode(const uint8_t *b, size_t len, struct file_meta *m)
{
	if (len != META_SIZE || get_le32(b) != META_MAGIC)
		return -EBADMSG;
	if (get_le32(b + 60) != parity_crc32(0, b, 60))
		return -EBADMSG;
	if (get_le16(b + 4) != META_VERSION)
		return -EPROTO;
	m->flags = get_le16(b + 6);
	m->level = b[8];
	m->chunk = get_le32(b + 12);
	m->width = get_le32(b + 16);
	m->groups = get_le32(b + 20);
	m->rotation = get_le32(b + 24);
	m->index = get_le32(b + 28);
	m->id = get_le64(b + 32);
	m->size = get_le64(b + 40);
	m->version = get_le64(b + 48);
	return 0;
}

int meta_get(int fd, struct file_meta *m)
{
	uint8_t b[META_SIZE + 1];
	ssize_t n = fgetxattr(fd, META_XATTR, b, sizeof(b));
	if (n < 0)
		return errno == ENODATA ? -ENODATA : -errno;
	return meta_decode(b, n, m);
}

int meta_set(int fd, const struct file_meta *m)
{
	uint8_t b[META_SIZE];
	meta_encode(m, b);
	if (fsetxattr(fd, META_XATTR, b, META_SIZE, 0) < 0)
		return -errno;
	return 0;
}

int meta_layout(const struct file_meta *m, struct layout *l)
{
	if (m->level >= LEVEL_COUNT)
		return -EBADMSG;
	if (layout_init(l, m->level, m->chunk, m->width, m->groups, m->rotation, NULL) < 0)
		return -EBADMSG;
	return 0;
}
