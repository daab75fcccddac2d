/*
 * meta.h - per-file metadata, stored redundantly on every shard.
 *
 * Each shard of a regular file carries the user xattr `user.raidfs.meta`
 * (64 bytes, little-endian, crc32 protected; docs/format.md): the file id,
 * its layout (level, chunk, width, groups, rotation), the logical size, a
 * version counter bumped on every metadata update, this shard's member
 * index, a dirty flag set while writes may leave parity behind data, and
 * an "exact" flag: every shard had its full length when it was written.
 * Because every shard has a copy, the size survives any tolerated set of
 * missing members.
 *
 * meta_encode/meta_decode are pure; meta_get/meta_set do one xattr call on
 * an open shard descriptor.  Return 0 or a negative errno; a record that
 * fails its checksum or magic is -EBADMSG, an unknown version -EPROTO.
 */
#ifndef RAIDFS_META_H
#define RAIDFS_META_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"

#define META_XATTR "user.raidfs.meta"
#define META_XATTR_PREFIX "user.raidfs."
/* on the primary shard of a file being created: its path, so a mount
 * after a crash in the middle can create the missing shards */
#define CREATING_XATTR "user.raidfs.creating"
#define META_SIZE 64
#define META_MAGIC 0x314d4652u	/* "RFM1" */
#define META_VERSION 1

#define META_F_DIRTY 0x1
/* every shard was at least as long as the size needs (layout_shard_size())
 * when the record was written: a shorter one has lost data since */
#define META_F_EXACT 0x2
/* a truncate to `size` has begun and not ended (its shards may be cut in
 * part): the next mount takes that size and finishes it */
#define META_F_TRUNC 0x4
/* the file has a checksum file on every member holding a shard of it
 * (csum.h): its reads are verified */
#define META_F_SUMS 0x8

struct file_meta {
	uint64_t id;
	uint64_t size;
	uint64_t version;
	uint32_t flags;
	uint32_t level, chunk, width, groups, rotation;
	uint32_t index;		/* member index of the shard holding it */
};

void meta_encode(const struct file_meta *m, uint8_t buf[META_SIZE]);
int meta_decode(const uint8_t *buf, size_t len, struct file_meta *m);

int meta_get(int fd, struct file_meta *m);
int meta_set(int fd, const struct file_meta *m);

/* Fill a layout from the metadata; -EBADMSG if the layout is invalid. */
int meta_layout(const struct file_meta *m, struct layout *l);

#endif
