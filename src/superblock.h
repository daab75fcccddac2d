/*
 * superblock.h - the per-member superblock (on-disk format: docs/format.md).
 *
 * Every member directory holds `.raidfs/superblock`: which array it belongs
 * to (uuid, name), the array geometry (level, chunk, width, groups), this
 * member's index, the state of every member as this member last knew it,
 * the paths members were last seen at (for messages), and an event counter
 * bumped on every state change, as Linux md does.  The member with the
 * highest event counter holds the truth; a member whose counter is lower
 * missed changes (it is "stale").
 *
 * The record is little-endian, variable length (header + one entry per
 * member) and ends with a zlib crc32 of everything before it.  It is
 * replaced atomically (write tmp, fsync, rename, fsync dir).
 *
 * Format 3 gives every member an identity of its own: a random member
 * uuid, in the directory's own superblock and in every table entry, so a
 * directory proves which member it is (with the array uuid and the event
 * counter); the recorded paths are only for messages.  Formats 1 and 2
 * (no member uuids) are read, and written again as 3.
 *
 * sb_encode/sb_decode are pure.  sb_read/sb_write do I/O on a member root
 * directory descriptor.  All return 0 or a negative errno; sb_decode
 * returns -EBADMSG for a bad checksum or magic and -EPROTO for an unknown
 * format version, with a static explanation in *why.
 */
#ifndef RAIDFS_SUPERBLOCK_H
#define RAIDFS_SUPERBLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"

#define SB_DIR ".raidfs"
#define SB_FILE ".raidfs/superblock"
#define SB_DIRTY_DIR ".raidfs/dirty"
#define SB_MISSED_DIR ".raidfs/missed"
#define SB_MAGIC "RAIDFSSB"
#define SB_VERSION_1 1		/* older: no replacement recorded */
#define SB_VERSION_REPL 2	/* older: version 1 + a replacement entry */
#define SB_VERSION 3		/* member uuids, checksum algorithm (written) */
#define SB_NAME_MAX 64
#define SB_PATH_MAX 256
#define SB_MAX_SPARES 8

/* Member states as recorded in superblocks. */
enum member_state {
	MS_ONLINE = 0,	/* in sync, serving */
	MS_FAULTY = 1,	/* failed at runtime or missing during a write */
	MS_REMOVED = 2,	/* taken out of the array */
	MS_REBUILDING = 3,
	MS_SPARE = 4,
	MS_REPLACEMENT = 5,	/* the entry of a replacement in place (below) */
};

/* The array's checksum algorithm (sb.csum). */
enum sb_csum {
	SB_CSUM_NONE = 0,
	SB_CSUM_CRC32C = 1,
};
#define SB_CSUM_COUNT 2

struct sb_member {
	uint8_t state;			/* enum member_state */
	uint8_t queued_for;		/* a spare's entry: 0, a hot spare for any
					 * member; J + 1, a queued replacement of
					 * member J (`raidfs replace` while a
					 * rebuild ran): taken for J only, in
					 * table order.  Entry byte 1, 0 in older
					 * superblocks */
	uint32_t gen;			/* bumped each time the slot gets another
					 * directory (a rebuild or replacement
					 * onto it); 0 in older superblocks */
	uint8_t uuid[16];		/* the member uuid the slot's directory
					 * must carry (sb_uuid_nil(): not known
					 * yet, an array of format 1 or 2);
					 * changes with gen */
	char path[SB_PATH_MAX];		/* where it was last seen: for messages
					 * only, never opened */
};

struct superblock {
	uint32_t version;		/* as read (sb_decode()); written: SB_VERSION */
	uint8_t uuid[16];
	char name[SB_NAME_MAX];
	uint32_t level;			/* enum raid_level */
	uint32_t chunk;
	uint32_t width;
	uint32_t groups;
	uint32_t index;			/* this member's index */
	uint64_t events;
	uint64_t ctime;			/* creation, seconds since the epoch */
	uint64_t utime;			/* last update */
	uint32_t nspares;		/* hot spares, entries width .. width+nspares-1 */
	uint8_t member_uuid[16];	/* this directory's own identity: equal to
					 * its table entry's uuid while it is that
					 * member (nil in older formats) */
	uint8_t csum;			/* enum sb_csum; none in older formats */
	struct sb_member members[LAYOUT_MAX_WIDTH + SB_MAX_SPARES];
	/*
	 * A healthy member being replaced in place (`raidfs replace` of an
	 * online member): member repl_of is copied onto the directory
	 * repl_path.  Encoded as one more entry after the spares (state
	 * MS_REPLACEMENT, byte 1 = repl_of), in format version 2; without a
	 * replacement the record is format version 1, byte for byte, so an
	 * older raidfs reads it.  The replacement's own superblock has index
	 * width + nspares (sb_is_replacement()).
	 */
	bool replacing;
	uint32_t repl_of;
	uint8_t repl_uuid[16];		/* the replacement's member uuid */
	char repl_path[SB_PATH_MAX];
};

/* All zero: a member uuid not known (formats 1 and 2). */
static inline bool sb_uuid_nil(const uint8_t u[16])
{
	for (int i = 0; i < 16; i++)
		if (u[i])
			return false;
	return true;
}

/* "none", "crc32c" */
const char *sb_csum_name(unsigned csum);
/* The algorithm of a name (as sb_csum_name() gives), or -1. */
int sb_csum_parse(const char *name);

/*
 * Is `name` fit to be an array's name?  Pure.  0, or -EINVAL with *why
 * saying what is wrong (a static string).  Refused: empty, longer than
 * SB_NAME_MAX - 1 bytes, control characters, '/' and ':' (a name must
 * mount as 'raidfs mount NAME MNT', not be read as a member list),
 * ',' and '\' (the name goes into the fsname= FUSE option), white space
 * (fstab's fields), a leading '-' (an option) and "UUID=" (a uuid).
 */
int sb_name_check(const char *name, const char **why);

/* This superblock is the one of a replacement in place (not a member). */
static inline bool sb_is_replacement(const struct superblock *sb)
{
	return sb->replacing && sb->index == sb->width + sb->nspares;
}

const char *member_state_name(enum member_state s);

/* Encoded size in format `version` for a number of entries (width +
 * spares, + 1 for a replacement). */
size_t sb_encoded_size_v(uint32_t version, uint32_t entries);
static inline size_t sb_encoded_size(uint32_t entries)
{
	return sb_encoded_size_v(SB_VERSION, entries);
}
#define SB_MAX_BYTES (192 + (LAYOUT_MAX_WIDTH + SB_MAX_SPARES + 1) * 280 + 4)
/* Encode into buf (at least SB_MAX_BYTES bytes), in the current format. */
size_t sb_encode(const struct superblock *sb, uint8_t *buf);
/* Encode in an older format (SB_VERSION_1: 2 when a replacement is
 * recorded), as an older raidfs wrote it: no member uuids, no checksum
 * algorithm.  For tests of the upgrade. */
size_t sb_encode_old(const struct superblock *sb, uint8_t *buf);
int sb_decode(const uint8_t *buf, size_t len, struct superblock *sb,
	      const char **why);

/* Read / atomically replace the superblock of the member rooted at dirfd. */
int sb_read(int dirfd, struct superblock *sb, const char **why);
int sb_write(int dirfd, const struct superblock *sb);

/* uuid as 36-character text into buf[37]. */
void sb_uuid_str(const uint8_t uuid[16], char buf[37]);

#endif
