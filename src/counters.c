/*
 * counters.c - a member's error counters and their file (see counters.h).
 */
#include "counters.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "parity.h"
#include "util.h"

#define MAGIC_LINE "raidfs-counters 1\n"

static const char *const field_name[] = { "read_errors", "write_errors", "cksum_errors", "repaired_bytes" };
#define NFIELDS (sizeof(field_name) / sizeof(field_name[0]))

static uint64_t *field(struct member_counters *c, size_t i)
{
	uint64_t *f[NFIELDS] = { &c->read_errors, &c->write_errors, &c->cksum_errors, &c->repaired_bytes };
	return f[i];
}

size_t counters_encode(const struct member_counters *c, char *buf, size_t len)
{
	struct member_counters v = *c;
	int n = snprintf(buf, len, MAGIC_LINE);
	for (size_t i = 0; i < NFIELDS && n > 0 && (size_t)n < len; i++)
		n += snprintf(buf + n, len - n, "%s %" PRIu64 "\n", field_name[i], *field(&v, i));
	if (n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, "crc %08x\n", parity_crc32(0, buf, n));
	return n > 0 && (size_t)n < len ? (size_t)n : 0;
}

/* "NAME DIGITS\n" at *p (before end): the value, *p moved past the line.
 * false when the line is not NAME's. */
static bool take_line(const char **p, const char *end, const char *name, uint64_t *v)
{
	size_t nl = strlen(name);
	const char *s = *p;
	if ((size_t)(end - s) < nl + 2 || memcmp(s, name, nl) || s[nl] != ' ')
		return false;
	s += nl + 1;
	uint64_t x = 0;
	const char *d = s;
	while (s < end && *s >= '0' && *s <= '9' && s - d < 20) {
		uint64_t nx = x * 10 + (uint64_t)(*s - '0');
		if (nx / 10 != x)
			return false;	/* (overflow) */
		x = nx;
		s++;
	}
	if (s == d || s == end || *s != '\n')
		return false;
	*v = x;
	*p = s + 1;
	return true;
}

int counters_decode(const char *buf, size_t len, struct member_counters *c)
{
	const char *end = buf + len, *p = buf;
	size_t ml = strlen(MAGIC_LINE);
	if (len < ml || memcmp(buf, MAGIC_LINE, ml))
		return -EINVAL;
	p += ml;
	struct member_counters v = { 0 };
	bool seen[NFIELDS] = { false };
	/* the crc line is the last one: everything before it is covered */
	for (;;) {
		if (p == end)
			return -EINVAL;	/* (no crc line: cut short) */
		const char *line = p;
		if (end - p >= 4 && !memcmp(p, "crc ", 4)) {
			if (end - p != 13 || p[12] != '\n')
				return -EINVAL;
			unsigned want;
			char hex[9];
			memcpy(hex, p + 4, 8);
			hex[8] = '\0';
			if (strspn(hex, "0123456789abcdef") != 8 || sscanf(hex, "%x", &want) != 1 ||
			    parity_crc32(0, buf, line - buf) != want)
				return -EINVAL;
			break;
		}
		size_t i;
		for (i = 0; i < NFIELDS; i++)
			if (take_line(&p, end, field_name[i], field(&v, i))) {
				seen[i] = true;
				break;
			}
		if (i == NFIELDS) {
			/* a line of a later raidfs: skipped */
			const char *nl = memchr(p, '\n', end - p);
			if (!nl)
				return -EINVAL;
			p = nl + 1;
		}
	}
	for (size_t i = 0; i < NFIELDS; i++)
		if (!seen[i])
			return -EINVAL;
	*c = v;
	return 0;
}

int counters_write(int dirfd, const struct member_counters *c)
{
	char buf[COUNTERS_MAX_BYTES];
	size_t n = counters_encode(c, buf, sizeof(buf));
	if (!n)
		return -EOVERFLOW;
	int fd = openat(dirfd, COUNTERS_TMP, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int r = io_pwrite(fd, buf, n, 0);
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	close(fd);
	if (r == 0 && renameat(dirfd, COUNTERS_TMP, dirfd, COUNTERS_FILE) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dirfd, COUNTERS_TMP, 0);
	return r;
}

int counters_read(int dirfd, struct member_counters *c)
{
	char buf[COUNTERS_MAX_BYTES * 4];
	memset(c, 0, sizeof(*c));
	int fd = openat(dirfd, COUNTERS_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = io_pread(fd, buf, sizeof(buf), 0);
	close(fd);
	if (n < 0)
		return (int)n;
	if ((size_t)n == sizeof(buf))
		return -EINVAL;	/* (not a file this raidfs wrote) */
	return counters_decode(buf, (size_t)n, c);
}

bool counters_over_threshold(uint64_t count, uint32_t threshold)
{
	return threshold > 0 && count >= threshold;
}

const char *counters_nicenum(uint64_t b, char *buf, size_t len)
{
	static const char unit[] = "BKMGTPE";
	int u = 0;
	uint64_t div = 1;
	while (u < 6 && b / div >= 1024) {
		div *= 1024;
		u++;
	}
	if (u == 0 || b % div == 0) {
		snprintf(buf, len, "%" PRIu64 "%c", b / div, unit[u]);
		return buf;
	}
	double v = (double)b / (double)div;
	/* three significant digits, as zpool's nicenum; what rounds up to
	 * 1024 of a unit is written in that unit (1024K: "1024K") */
	snprintf(buf, len, "%.*f%c", v < 10 ? 2 : v < 100 ? 1 : 0, v, unit[u]);
	return buf;
}
