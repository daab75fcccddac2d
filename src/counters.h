/*
 * counters.h - a member's error counters as `zpool status` shows them
 * (READ, WRITE, CKSUM, repaired bytes), and the file that keeps them on
 * the member across mounts (layer 1, beside superblock.h).
 *
 * What counts (array.c feeds them; see array.h):
 *   read_errors     reads the member failed (array_member_io_error())
 *   write_errors    writes, syncs, truncates or metadata records the
 *                   member failed or refused (array_member_io_error(),
 *                   array_member_refused())
 *   cksum_errors    chunks whose bytes did not match their checksum
 *                   (array_note_cksum_error())
 *   repaired_bytes  bytes rewritten on the member from redundancy
 *                   (array_note_repaired())
 * They are kept until `raidfs clear`, also across mounts: a disk that
 * returns wrong data now and then is known by its history, not by what
 * this mount met.
 *
 * The file (docs/format.md, "Error counters"): `.raidfs/counters` on the
 * member itself, text, its last line the crc32 of the lines before it,
 * replaced atomically (written to `.raidfs/counters.tmp`, fdatasynced,
 * renamed over).  Not in the superblock: the superblock is rewritten and
 * fsynced on every member only when the array's state changes, while the
 * counters move on every error and belong to one member alone.
 *
 * Everything here but counters_write()/counters_read() is pure.
 * counters_write() and counters_read() do their own I/O on the directory
 * descriptor given; they take no lock.
 */
#ifndef RAIDFS_COUNTERS_H
#define RAIDFS_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COUNTERS_FILE ".raidfs/counters"
#define COUNTERS_TMP ".raidfs/counters.tmp"
/* the longest file counters_encode() writes */
#define COUNTERS_MAX_BYTES 256

struct member_counters {
	uint64_t read_errors, write_errors, cksum_errors, repaired_bytes;
};

/* The file's bytes for c into buf (COUNTERS_MAX_BYTES): its length. */
size_t counters_encode(const struct member_counters *c, char *buf, size_t len);
/* buf[0..len) as counters_encode() wrote it into *c: 0, or -EINVAL (not
 * this format, cut short, or its crc does not match) with *c untouched.
 * Lines it does not know (a later raidfs's) are skipped. */
int counters_decode(const char *buf, size_t len, struct member_counters *c);

/* Replace the file on the member directory dirfd atomically: 0 or
 * -errno. */
int counters_write(int dirfd, const struct member_counters *c);
/* Read it: 0; -ENOENT when the member has none (a new member, or one of
 * an older raidfs: all zero); -EINVAL when it is damaged. *c is zeroed
 * unless 0 is returned. */
int counters_read(int dirfd, struct member_counters *c);

/* Is a member with `count` checksum errors to be failed under
 * `threshold` (-o cksum_error_threshold; 0: never)? */
bool counters_over_threshold(uint64_t count, uint32_t threshold);

/* A byte count the way zpool prints one, in at most 5 characters for
 * anything below 1000 PiB: "0B", "512B", "4K", "1.50M", "12.3G", "100T". */
const char *counters_nicenum(uint64_t bytes, char *buf, size_t len);

#endif
