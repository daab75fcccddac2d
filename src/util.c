/*
 * util.c - logging, encoding and I/O helpers (see util.h).
 */
#include "util.h"

#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/random.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static FILE *log_file;		/* NULL: stderr */
static int log_syslog;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

int log_open(const char *sink)
{
	if (!sink) {
		log_file = NULL;
		log_syslog = 0;
		return 0;
	}
	if (strcmp(sink, "syslog") == 0) {
		openlog("raidfs", LOG_PID, LOG_DAEMON);
		log_syslog = 1;
		return 0;
	}
	FILE *f = fopen(sink, "a");
	if (!f)
		return -errno;
	setvbuf(f, NULL, _IOLBF, 0);
	log_file = f;
	return 0;
}

bool log_every(struct log_every *r, int secs, unsigned long *held)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t last = __atomic_load_n(&r->last, __ATOMIC_RELAXED);
	if ((last && ts.tv_sec - last < secs) ||
	    !__atomic_compare_exchange_n(&r->last, &last, (int64_t)ts.tv_sec, false, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED)) {
		__atomic_add_fetch(&r->held, 1, __ATOMIC_RELAXED);
		return false;
	}
	*held = __atomic_exchange_n(&r->held, 0, __ATOMIC_RELAXED);
	return true;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	static const char *const tag[] = { "error", "warning", "info", "debug" };
	va_list ap;

	if (lvl == LOG_L_DEBUG && !getenv("RAIDFS_DEBUG"))
		return;
	va_start(ap, fmt);
	if (log_syslog) {
		static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
		vsyslog(prio[lvl], fmt, ap);
		va_end(ap);
		return;
	}
	pthread_mutex_lock(&log_lock);
	FILE *f = log_file ? log_file : stderr;
	if (log_file) {
		struct timespec ts;
		struct tm tm;
		char when[32];
		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		fprintf(f, "%s.%03ld raidfs[%d] %s: ", when, ts.tv_nsec / 1000000,
			(int)getpid(), tag[lvl]);
	} else {
		fprintf(f, "raidfs: %s%s", lvl <= LOG_L_WARN ? tag[lvl] : "",
			lvl <= LOG_L_WARN ? ": " : "");
	}
	vfprintf(f, fmt, ap);
	fputc('\n', f);
	pthread_mutex_unlock(&log_lock);
	va_end(ap);
}

int parse_size(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	uint64_t mul = 1;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	case 't': case 'T': mul = 1ull << 40; end++; break;
	default: return -EINVAL;
	}
	if (*end == 'i' && mul > 1)
		end++;
	if ((*end == 'B' || *end == 'b') && end[1] == '\0')
		end++;
	if (*end)
		return -EINVAL;
	if (v > UINT64_MAX / mul)
		return -EINVAL;
	*out = v * mul;
	return 0;
}

const char *fmt_size(uint64_t b, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = b;
	int u = 0;
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

void random_bytes(void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* getrandom cannot fail on Linux >= 3.17 short of EINTR;
			 * fall back to a time-seeded mix rather than abort. */
			uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)p;
			for (; len; len--) {
				x ^= x << 13; x ^= x >> 7; x ^= x << 17;
				*p++ = x;
			}
			return;
		}
		p += n;
		len -= n;
	}
}

int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

uint64_t random_u64(void)
{
	uint64_t v;
	random_bytes(&v, sizeof(v));
	return v;
}

ssize_t io_pread(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, off + done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += n;
	}
	if (done < len)
		memset((char *)buf + done, 0, len - done);
	return done;
}

int io_pwritev_some(int fd, const struct iovec *iov, int n, off_t off, bool *some)
{
	struct iovec v[n];
	memcpy(v, iov, n * sizeof(*v));
	if (some)
		*some = false;
	for (int i = 0; i < n;) {
		ssize_t w = pwritev(fd, v + i, n - i, off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		if (some)
			*some = true;
		off += w;
		/* a short write: skip what went out, go on with the rest */
		for (; i < n && (size_t)w >= v[i].iov_len; i++)
			w -= v[i].iov_len;
		if (i < n) {
			v[i].iov_base = (char *)v[i].iov_base + w;
			v[i].iov_len -= w;
		}
	}
	return 0;
}

int io_pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
	return io_pwritev_some(fd, iov, n, off, NULL);
}

int io_pwrite(int fd, const void *buf, size_t len, off_t off)
{
	struct iovec v = { (void *)buf, len };
	return io_pwritev(fd, &v, 1, off);
}

DIR *opendir_at(int dirfd, const char *path)
{
	int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return d;
}

void abs_path(const char *p, char *out, size_t len)
{
	char *rp = realpath(p, NULL);
	if (rp) {
		snprintf(out, len, "%s", rp);
		free(rp);
		return;
	}
	char cwd[PATH_MAX];
	if (p[0] != '/' && getcwd(cwd, sizeof(cwd)))
		snprintf(out, len, "%s/%s", cwd, p);
	else
		snprintf(out, len, "%s", p);
}

int link_fd(int fd, int dirfd, const char *name)
{
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW);
}

uint64_t util_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

void util_sleep_ms(uint32_t ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

void util_join_words(char *buf, size_t len, int argc, char **argv)
{
	size_t o = 0;
	buf[0] = '\0';
	for (int i = 0; i < argc && o < len; i++)
		o += snprintf(buf + o, len - o, "%s%s", i ? " " : "", argv[i]);
}

int util_grow(void *pp, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 16;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return -ENOMEM;
		c *= 2;
	}
	if (elem && c > SIZE_MAX / elem)
		return -ENOMEM;
	void *old;
	memcpy(&old, pp, sizeof(old));	/* (pp is a T **: any object pointer) */
	void *g = realloc(old, c * elem);
	if (!g)
		return -ENOMEM;
	memcpy(pp, &g, sizeof(g));
	*cap = c;
	return 0;
}

bool util_names_add(char ***names, size_t *n, size_t *cap, const char *name)
{
	if (*n == SIZE_MAX || util_grow(names, cap, *n + 1, sizeof(**names)) < 0)
		return false;
	char *s = strdup(name);
	if (!s)
		return false;
	(*names)[(*n)++] = s;
	return true;
}

bool util_path_within(const char *inner, const char *outer)
{
	size_t l = strlen(outer);
	if (l == 1 && outer[0] == '/')
		return inner[0] == '/';
	return strncmp(inner, outer, l) == 0 && (inner[l] == '\0' || inner[l] == '/');
}
