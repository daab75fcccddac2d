/*
 * util.h - small helpers shared by every module: logging, little-endian
 * encoding, size parsing, random ids, full-length member I/O, growable
 * arrays.
 *
 * Logging goes to one sink chosen at start-up by log_open(): stderr (CLI
 * and foreground daemon), a file (-o log=FILE) or syslog (background
 * daemon).  log_msg() is thread safe.
 */
#ifndef RAIDFS_UTIL_H
#define RAIDFS_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <dirent.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

enum log_level { LOG_L_ERR, LOG_L_WARN, LOG_L_INFO, LOG_L_DEBUG };

/* sink: NULL = stderr, "syslog", or a file path (appended to). */
int log_open(const char *sink);
void log_msg(enum log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define log_err(...) log_msg(LOG_L_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_L_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_L_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_L_DEBUG, __VA_ARGS__)

/* One kind of message said at most once every `secs` seconds: a burst of
 * the same refusal (a full member) must not flood the log.  True when it
 * may be said now; *held then gets how many were held back since the
 * last time it was said. */
struct log_every {
	int64_t last;		/* seconds (CLOCK_MONOTONIC) */
	unsigned long held;
};
bool log_every(struct log_every *r, int secs, unsigned long *held);

/* Little-endian field access for on-disk formats. */
static inline void put_le16(uint8_t *p, uint16_t v) { p[0] = v; p[1] = v >> 8; }
static inline void put_le32(uint8_t *p, uint32_t v)
{ for (int i = 0; i < 4; i++) p[i] = v >> (8 * i); }
static inline void put_le64(uint8_t *p, uint64_t v)
{ for (int i = 0; i < 8; i++) p[i] = v >> (8 * i); }
static inline uint16_t get_le16(const uint8_t *p) { return p[0] | (uint16_t)p[1] << 8; }
static inline uint32_t get_le32(const uint8_t *p)
{ uint32_t v = 0; for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i); return v; }
static inline uint64_t get_le64(const uint8_t *p)
{ uint64_t v = 0; for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i); return v; }

/* "64K", "1M", "4096" -> bytes.  Returns 0 or -EINVAL. */
int parse_size(const char *s, uint64_t *out);
/* Human-readable size ("1.5 GiB") into buf. */
const char *fmt_size(uint64_t bytes, char *buf, size_t len);

/* qsort/bsearch order of uint64_t values */
int cmp_u64(const void *x, const void *y);

/* 64 random bits from getrandom(). */
uint64_t random_u64(void);
void random_bytes(void *buf, size_t len);

/*
 * Full-length positional I/O.  io_pread() reads up to len bytes and zero
 * fills whatever lies beyond the end of the file; returns bytes that came
 * from the file (>= 0) or -errno.  io_pwrite() writes all of it or fails
 * with -errno.
 */
ssize_t io_pread(int fd, void *buf, size_t len, off_t off);
int io_pwrite(int fd, const void *buf, size_t len, off_t off);
struct iovec;
int io_pwritev(int fd, const struct iovec *iov, int n, off_t off);
/* The same; *some (when not NULL): whether any byte went out, also when
 * it fails after a short write. */
int io_pwritev_some(int fd, const struct iovec *iov, int n, off_t off, bool *some);

/* opendir() of path under dirfd (no symlink at the end); NULL with errno
 * set on failure. */
DIR *opendir_at(int dirfd, const char *path);

/* p as an absolute path (symlinks resolved when it exists): the daemon
 * changes its directory to / when it goes to the background. */
void abs_path(const char *p, char *out, size_t len);

/* Give the open file fd the name `name` under dirfd (linkat() through
 * /proc/self/fd: also an unnamed O_TMPFILE file).  0, or -1 with errno. */
int link_fd(int fd, int dirfd, const char *name);

/* The canonical path inner is outer or lies below it (both absolute,
 * without "." or ".." components nor trailing slashes, as realpath()
 * gives them).  Pure. */
bool util_path_within(const char *inner, const char *outer);
/* CLOCK_MONOTONIC in milliseconds */
uint64_t util_now_ms(void);
void util_sleep_ms(uint32_t ms);

/* argv[0..argc) joined by single spaces into buf (cut at len) */
void util_join_words(char *buf, size_t len, int argc, char **argv);

/*
 * Growable arrays.  An array is a pointer, a count and a capacity (the
 * elements there is room for).  util_grow() makes room for `need`
 * elements of `elem` bytes at *pp (a pointer to the array's pointer),
 * doubling the capacity (at least 16), so that appending one element at a
 * time costs amortised O(1):
 *
 *	struct rec *recs = NULL;
 *	size_t n = 0, cap = 0;
 *	if (UTIL_GROW(recs, cap, n + 1) < 0)
 *		return -ENOMEM;		(recs and cap are left as they were)
 *	recs[n++] = r;
 *
 * 0, or -ENOMEM when the size overflows or memory runs out; then *pp and
 * *cap are unchanged, so what the array holds is still there to use or
 * free.  free() the pointer when done.
 */
int util_grow(void *pp, size_t *cap, size_t need, size_t elem);
#define UTIL_GROW(p, cap, need) util_grow(&(p), &(cap), (need), sizeof(*(p)))

/* A copy of name appended to the array *names of *n (room for *cap,
 * grown as needed); false when memory ran out (nothing added). */
bool util_names_add(char ***names, size_t *n, size_t *cap, const char *name);

#endif
