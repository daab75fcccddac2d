/*
 * member.h - every data-path system call on a member goes through here.
 *
 * Why one place: counting (status shows reads, writes - operations and bytes -
 * and errors per member),
 * fault injection (decision 11: errors, latency, silent corruption,
 * disappearance, set from the CLI at runtime), and classifying errors so a
 * member that misbehaves is failed instead of the caller seeing an error
 * that redundancy can hide.
 *
 * Fault injection rules (one per operation: read, write, fsync, open,
 * truncate - ftruncate of a shard, meta - the write of a shard's metadata
 * record or of its mark in the dirty log):
 *   every          every operation fails
 *   after N        operations after the first N fail
 *   prob P         each operation fails with probability P (0..1)
 *   count N        the next N operations fail, then the rule clears
 * with an errno (default EIO).  Also: latency MS (added to every
 * operation), corrupt P (flip one byte of data read, with probability P),
 * vanish (every operation fails with ENXIO and the monitor fails the
 * member: the disk was unplugged), clear.
 *
 * Silent write faults, with the same modes (every, after N, count N,
 * prob P; no errno: the write succeeds), on shard data writes only -
 * member_pwritev() and member_pwrite(); the superblock, the metadata
 * record, the dirty log, the checksum files and every other record of
 * raidfs's own are written elsewhere and never dropped:
 *   drop-write       the write reports success for its full length and
 *                    writes nothing (a lost write: the place keeps its
 *                    old bytes)
 *   misdirect-write  the bytes go to another place of the same shard,
 *                    one chunk before the intended one (one chunk after
 *                    it for a write that starts in stripe 0), and the
 *                    intended place keeps its old bytes
 * A write that is not hit by the rule is made as usual; drop-write is
 * asked first, so a write hit by both is dropped.
 *
 * Functions return 0 (bytes for member_pread: those that came from the
 * file; the rest of the buffer is zeroed) or a negative errno.  They never
 * change member states themselves: callers decide (stripe.c repairs read
 * errors and fails members on write errors).
 *
 * Thread safety: the counters are atomic; the rules are protected by the
 * member's fault lock.
 */
#ifndef RAIDFS_MEMBER_H
#define RAIDFS_MEMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct array;

enum fault_op { FOP_READ, FOP_WRITE, FOP_FSYNC, FOP_OPEN, FOP_TRUNCATE, FOP_META, FOP_COUNT };

enum fault_mode { FM_OFF, FM_EVERY, FM_AFTER, FM_PROB, FM_COUNT };

struct fault_rule {
	enum fault_mode mode;
	uint64_t n;		/* after N / count N */
	double p;		/* probability */
	int err;		/* positive errno */
	uint64_t seen;		/* operations seen since the rule was set */
};

struct member_faults {
	struct fault_rule rule[FOP_COUNT];
	uint32_t latency_ms;
	uint32_t latency_ops;	/* bit op: the operations it delays (0: all) */
	double corrupt_p;
	struct fault_rule drop;		/* drop-write (err unused) */
	struct fault_rule misdirect;	/* misdirect-write (err unused) */
	bool vanished;
	bool any;		/* fast path: no rule at all */
};

ssize_t member_pread(struct array *a, uint32_t j, int fd, void *buf, size_t len, uint64_t off);
/* all of iov[0..n) at off, in one call when the kernel takes it; *some
 * (when not NULL): whether any byte went out, also when it failed */
struct iovec;
int member_pwritev(struct array *a, uint32_t j, int fd, const struct iovec *iov, int n, uint64_t off, bool *some);
int member_pwrite(struct array *a, uint32_t j, int fd, const void *buf, size_t len, uint64_t off);
int member_fsync(struct array *a, uint32_t j, int fd, bool datasync);
/* syncfs() of member j's filesystem (fault injection: fsync) */
int member_syncfs(struct array *a, uint32_t j);
int member_openat(struct array *a, uint32_t j, const char *relpath, int flags, mode_t mode);
int member_ftruncate(struct array *a, uint32_t j, int fd, uint64_t len);
/* the file's metadata record on its shard (meta_set(); injection: meta) */
struct file_meta;
int member_meta_set(struct array *a, uint32_t j, int fd, const struct file_meta *fm);
/* a link of shard fd at `name` in the member's own directory (the dirty
 * log's mark; injection: meta) */
int member_link_mark(struct array *a, uint32_t j, int fd, const char *name);

/* Is the member's filesystem mounted read-only (as ext4 does after an
 * error with errors=remount-ro)?  Cheap enough for a 1 s monitor. */
bool member_fs_readonly(struct array *a, uint32_t j);

/* Is the member's disk gone (injected vanish, or its root directory
 * deleted or replaced)?  Cheap enough for a 1 s monitor. */
bool member_vanished(struct array *a, uint32_t j, const char **why);

/*
 * Parse and apply an injection spec (argv words, see above) to member j.
 * Returns 0, or -EINVAL with a message in err.
 */
int member_inject(struct array *a, uint32_t j, int argc, char **argv,
		  char *err, size_t errlen);
/* One line describing the active injections ("" when none). */
void member_inject_describe(struct array *a, uint32_t j, char *buf, size_t len);

/* One rule, also for the cache log (cachelog.h): argv after the
 * "OP-error" word ([every | after N | count N | prob P | off] [ERRNO]);
 * whether this operation fails (0 or -errno; the caller holds its lock);
 * "SEP OP-error MODE" into buf (bytes written, 0 when off). */
int fault_rule_parse(int argc, char **argv, struct fault_rule *r, char *err, size_t errlen);
int fault_rule_hit(struct fault_rule *r);
size_t fault_rule_describe(const struct fault_rule *r, const char *op, const char *sep, char *buf, size_t len);

/* Errors that mean the member (not the request) is broken. */
bool member_error_is_fatal(int err);
/* err (either sign) is the daemon's own shortage - out of descriptors or
 * memory - not a fault of the member: it never fails a member nor opens a
 * file without one of its shards; the operation fails with it (and the
 * first of a burst is logged with what to do). */
bool member_error_is_own(int err);

/* -o member_sync: after member writes, fdatasync them (always), only on
 * fsync (flush, the default), or never (the members' own write cache is
 * trusted, like a controller's "disk cache enabled"). */
enum member_sync { MSYNC_ALWAYS, MSYNC_FLUSH, MSYNC_NEVER };
extern enum member_sync member_sync_mode;

#endif
