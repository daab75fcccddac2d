/*
 * member.c - member system calls with counters and fault injection (see
 * member.h).
 */
#include "member.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "array.h"
#include "meta.h"
#include "superblock.h"
#include "util.h"

static const char *const op_name[FOP_COUNT] = { "read", "write", "fsync", "open", "truncate", "meta" };

static double rand01(void)
{
	static __thread uint64_t x;
	if (!x)
		x = random_u64() | 1;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return (x >> 11) * (1.0 / 9007199254740992.0);
}

int fault_rule_hit(struct fault_rule *r)
{
	r->seen++;
	switch (r->mode) {
	case FM_OFF: break;
	case FM_EVERY: return -r->err;
	case FM_AFTER: return r->seen > r->n ? -r->err : 0;
	case FM_PROB: return rand01() < r->p ? -r->err : 0;
	case FM_COUNT:
		if (r->n > 0) {
			if (--r->n == 0)
				r->mode = FM_OFF;
			return -r->err;
		}
		break;
	}
	return 0;
}

/* 0, or the negative errno the rule injects for this operation. */
static int inject(struct array *a, uint32_t j, enum fault_op op)
{
	struct member *m = &a->m[j];
	if (!__atomic_load_n(&m->fault.any, __ATOMIC_ACQUIRE))
		return 0;
	int ret = 0;
	uint32_t lat;
	pthread_mutex_lock(&m->fault_lock);
	if (m->fault.vanished) {
		pthread_mutex_unlock(&m->fault_lock);
		return -ENXIO;
	}
	ret = fault_rule_hit(&m->fault.rule[op]);
	lat = m->fault.latency_ops && !(m->fault.latency_ops >> op & 1) ? 0 : m->fault.latency_ms;
	pthread_mutex_unlock(&m->fault_lock);
	if (lat)
		util_sleep_ms(lat);
	return ret;
}

/*
 * The silent write faults (drop-write, misdirect-write) for a shard data
 * write at `off`: 0, the write goes where it was meant to; 1, it is
 * dropped; 2, it goes to *to instead (one chunk before `off`, or after
 * it in stripe 0).  Each rule counts the writes it sees, as the error
 * rules do.
 */
static int silent_write_fault(struct array *a, uint32_t j, uint64_t off, uint64_t *to)
{
	struct member *m = &a->m[j];
	if (!__atomic_load_n(&m->fault.any, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&m->fault_lock);
	int drop = m->fault.drop.mode != FM_OFF && fault_rule_hit(&m->fault.drop) < 0;
	int mis = !drop && m->fault.misdirect.mode != FM_OFF && fault_rule_hit(&m->fault.misdirect) < 0;
	pthread_mutex_unlock(&m->fault_lock);
	if (drop)
		return 1;
	if (!mis)
		return 0;
	uint32_t chunk = a->lay.chunk;
	*to = off >= chunk ? off - chunk : off + chunk;
	return 2;
}

static void count_error(struct array *a, uint32_t j)
{
	__atomic_add_fetch(&a->m[j].errors, 1, __ATOMIC_RELAXED);
}

ssize_t member_pread(struct array *a, uint32_t j, int fd, void *buf, size_t len, uint64_t off)
{
	int e = inject(a, j, FOP_READ);
	if (e < 0) {
		count_error(a, j);
		return e;
	}
	ssize_t n = io_pread(fd, buf, len, off);
	if (n < 0) {
		count_error(a, j);
		return n;
	}
	__atomic_add_fetch(&a->m[j].reads, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&a->m[j].read_bytes, (uint64_t)n, __ATOMIC_RELAXED);
	struct member *m = &a->m[j];
	if (__atomic_load_n(&m->fault.any, __ATOMIC_ACQUIRE) && len) {
		pthread_mutex_lock(&m->fault_lock);
		double p = m->fault.corrupt_p;
		pthread_mutex_unlock(&m->fault_lock);
		if (p > 0 && rand01() < p)
			((uint8_t *)buf)[(size_t)(rand01() * len) % len] ^= 0x5a;
	}
	return n;
}

int member_pwritev(struct array *a, uint32_t j, int fd, const struct iovec *iov, int n, uint64_t off, bool *some)
{
	int e = inject(a, j, FOP_WRITE);
	if (some)
		*some = false;
	uint64_t to = off;
	if (e == 0 && silent_write_fault(a, j, off, &to) == 1) {
		if (some)
			*some = true;	/* as a write that went out */
	} else if (e == 0) {
		e = io_pwritev_some(fd, iov, n, to, some);
	}
	if (e < 0) {
		count_error(a, j);
		return e;
	}
	__atomic_add_fetch(&a->m[j].writes, 1, __ATOMIC_RELAXED);
	uint64_t bytes = 0;
	for (int i = 0; i < n; i++)
		bytes += iov[i].iov_len;
	__atomic_add_fetch(&a->m[j].written_bytes, bytes, __ATOMIC_RELAXED);
	return 0;
}

int member_pwrite(struct array *a, uint32_t j, int fd, const void *buf, size_t len, uint64_t off)
{
	struct iovec v = { (void *)buf, len };
	return member_pwritev(a, j, fd, &v, 1, off, NULL);
}

int member_fsync(struct array *a, uint32_t j, int fd, bool datasync)
{
	int e = inject(a, j, FOP_FSYNC);
	if (e == 0 && (datasync ? fdatasync(fd) : fsync(fd)) < 0)
		e = -errno;
	if (e < 0)
		count_error(a, j);
	return e;
}

int member_syncfs(struct array *a, uint32_t j)
{
	int e = inject(a, j, FOP_FSYNC);
	if (e == 0 && syncfs(a->m[j].dirfd) < 0)
		e = -errno;
	if (e < 0)
		count_error(a, j);
	return e;
}

int member_ftruncate(struct array *a, uint32_t j, int fd, uint64_t len)
{
	int e = inject(a, j, FOP_TRUNCATE);
	if (e == 0 && ftruncate(fd, (off_t)len) < 0)
		e = -errno;
	if (e < 0)
		count_error(a, j);
	return e;
}

int member_meta_set(struct array *a, uint32_t j, int fd, const struct file_meta *fm)
{
	int e = inject(a, j, FOP_META);
	if (e == 0)
		e = meta_set(fd, fm);
	if (e < 0)
		count_error(a, j);
	return e;
}

int member_link_mark(struct array *a, uint32_t j, int fd, const char *name)
{
	int e = inject(a, j, FOP_META);
	if (e == 0 && link_fd(fd, a->m[j].dirfd, name) < 0)
		e = -errno;
	if (e < 0 && e != -EEXIST && e != -ENOENT)
		count_error(a, j);
	return e;
}

int member_openat(struct array *a, uint32_t j, const char *relpath, int flags, mode_t mode)
{
	int e = inject(a, j, FOP_OPEN);
	if (e < 0) {
		count_error(a, j);
		return e;
	}
	int fd = openat(a->m[j].dirfd, relpath, flags | O_CLOEXEC, mode);
	return fd < 0 ? -errno : fd;
}

bool member_error_is_fatal(int err)
{
	switch (err < 0 ? -err : err) {
	case EIO: case ENXIO: case ENODEV: case ENOTCONN: case EROFS:
	case ESTALE: case EREMOTEIO: case ENOMEDIUM: case EBADF:
		return true;
	}
	return false;
}

bool member_error_is_own(int err)
{
	err = err < 0 ? -err : err;
	if (err != EMFILE && err != ENFILE && err != ENOMEM)
		return false;
	static uint64_t last_ms;
	uint64_t now = util_now_ms();
	uint64_t was = __atomic_load_n(&last_ms, __ATOMIC_RELAXED);
	int saved = errno;	/* (callers report errno after this) */
	if ((!was || now - was > 10000) &&
	    __atomic_compare_exchange_n(&last_ms, &was, now, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		struct rlimit rl = { 0, 0 };
		getrlimit(RLIMIT_NOFILE, &rl);
		if (err == ENOMEM)
			log_err("raidfs is short of memory: operations fail with ENOMEM until it has room again; no member is failed for it");
		else
			log_err("raidfs is short of file descriptors (%s; open-file limit %llu): operations fail with that error until it has room again; each open file takes a descriptor per member (two with checksums): raise the limit (ulimit -n, or LimitNOFILE= for a systemd unit) or close files",
				strerror(err), (unsigned long long)rl.rlim_cur);
	}
	errno = saved;
	return true;
}

bool member_fs_readonly(struct array *a, uint32_t j)
{
	struct statvfs vfs;
	return a->m[j].dirfd >= 0 && fstatvfs(a->m[j].dirfd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY);
}

bool member_vanished(struct array *a, uint32_t j, const char **why)
{
	struct member *m = &a->m[j];
	struct stat st;
	const char *dummy;
	if (!why)
		why = &dummy;
	if (m->dirfd < 0) {
		*why = "not present";
		return true;
	}
	pthread_mutex_lock(&m->fault_lock);
	bool v = m->fault.vanished;
	pthread_mutex_unlock(&m->fault_lock);
	if (v) {
		*why = "the disk disappeared (injected)";
		return true;
	}
	if (fstat(m->dirfd, &st) < 0 || st.st_nlink == 0) {
		*why = "its directory was deleted";
		return true;
	}
	/* the directory still works through our descriptor but is no longer
	 * at its path: moved away, or its disk unmounted lazily */
	struct stat at;
	if (m->path[0] == '/' && j < a->width &&
	    (stat(m->path, &at) < 0 ? errno == ENOENT || errno == ENOTDIR
				     : at.st_dev != st.st_dev || at.st_ino != st.st_ino)) {
		*why = "its directory is no longer at its path (moved, or its disk unmounted)";
		return true;
	}
	struct superblock sb;
	const char *sbwhy;
	int r = sb_read(m->dirfd, &sb, &sbwhy);
	if (r == -ENOENT) {
		*why = "its superblock disappeared";
		return true;
	}
	if (r == 0 && memcmp(sb.uuid, a->sb.uuid, 16) != 0) {
		*why = "it now holds another array's superblock";
		return true;
	}
	if (r < 0 && member_error_is_fatal(r)) {
		*why = "its superblock cannot be read";
		return true;
	}
	return false;
}

/* ------------------------------------------------------------ injection */

static int parse_errno(const char *s)
{
	static const struct { const char *name; int e; } t[] = {
		{ "EIO", EIO }, { "ENXIO", ENXIO }, { "ENOSPC", ENOSPC }, { "EROFS", EROFS },
		{ "ENOTCONN", ENOTCONN }, { "ESTALE", ESTALE }, { "ENODEV", ENODEV },
		{ "EACCES", EACCES }, { "ENOENT", ENOENT },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcasecmp(s, t[i].name))
			return t[i].e;
	char *end;
	long v = strtol(s, &end, 10);
	return (*end || v <= 0 || v > 4095) ? -1 : (int)v;
}

int fault_rule_parse(int argc, char **argv, struct fault_rule *rule, char *err, size_t errlen)
{
	struct fault_rule r = { .mode = FM_EVERY, .err = EIO };
	int i = 0;
	if (i < argc && !strcmp(argv[i], "every")) {
		i++;
	} else if (i < argc && (!strcmp(argv[i], "after") || !strcmp(argv[i], "count"))) {
		char *end;
		r.mode = !strcmp(argv[i], "after") ? FM_AFTER : FM_COUNT;
		long long n = i + 1 < argc ? strtoll(argv[i + 1], &end, 10) : -1;
		if (i + 1 >= argc || *end || n < 0) {
			snprintf(err, errlen, "inject: '%s' needs a number of operations", argv[i]);
			return -EINVAL;
		}
		r.n = n;
		i += 2;
	} else if (i < argc && !strcmp(argv[i], "prob")) {
		char *end;
		r.mode = FM_PROB;
		r.p = i + 1 < argc ? strtod(argv[i + 1], &end) : -1;
		if (i + 1 >= argc || *end || r.p < 0 || r.p > 1) {
			snprintf(err, errlen, "inject: 'prob' needs a probability from 0 to 1");
			return -EINVAL;
		}
		i += 2;
	} else if (i < argc && !strcmp(argv[i], "off")) {
		r.mode = FM_OFF;
		i++;
	}
	if (i < argc) {
		r.err = parse_errno(argv[i]);
		if (r.err < 0) {
			snprintf(err, errlen, "inject: unknown errno '%s' (EIO, ENXIO, ENOSPC, EROFS, ... or a number)", argv[i]);
			return -EINVAL;
		}
		i++;
	}
	if (i < argc) {
		snprintf(err, errlen, "inject: unexpected '%s'", argv[i]);
		return -EINVAL;
	}
	*rule = r;
	return 0;
}

/* A rule of drop-write / misdirect-write: fault_rule_parse() without an
 * errno (the write succeeds). */
static int silent_rule_parse(const char *what, int argc, char **argv, struct fault_rule *r,
			     char *err, size_t errlen)
{
	int words = 0;
	if (argc > 0)
		words = !strcmp(argv[0], "every") || !strcmp(argv[0], "off") ? 1
			: !strcmp(argv[0], "after") || !strcmp(argv[0], "count") || !strcmp(argv[0], "prob") ? 2 : 0;
	if (argc > words) {
		snprintf(err, errlen, "inject: unexpected '%s' (%s [every|after N|count N|prob P|off] takes no errno: the write succeeds)",
			 argv[words], what);
		return -EINVAL;
	}
	return fault_rule_parse(argc, argv, r, err, errlen);
}

#define FAULT_NAMES "read-error, write-error, fsync-error, open-error, truncate-error, meta-error, " \
	"drop-write, misdirect-write, latency, corrupt, vanish, clear"

int member_inject(struct array *a, uint32_t j, int argc, char **argv,
		  char *err, size_t errlen)
{
	struct member *m = &a->m[j];
	if (argc < 1) {
		snprintf(err, errlen, "inject: say what to inject (" FAULT_NAMES ")");
		return -EINVAL;
	}
	const char *what = argv[0];
	struct member_faults f;
	pthread_mutex_lock(&m->fault_lock);
	f = m->fault;
	pthread_mutex_unlock(&m->fault_lock);

	if (!strcmp(what, "clear")) {
		memset(&f, 0, sizeof(f));
	} else if (!strcmp(what, "vanish")) {
		f.vanished = true;
	} else if (!strcmp(what, "latency")) {
		char *end;
		long ms = argc > 1 ? strtol(argv[1], &end, 10) : -1;
		if (argc < 2 || *end || ms < 0 || ms > 60000) {
			snprintf(err, errlen, "inject: latency needs milliseconds (0..60000), for example 'latency 20' "
				 "(or 'latency 20 write': only the writes; read, write, fsync, open, truncate, meta)");
			return -EINVAL;
		}
		f.latency_ms = ms;
		f.latency_ops = 0;
		for (int i = 2; i < argc; i++) {
			int op = FOP_COUNT;
			for (int k = 0; k < FOP_COUNT; k++)
				if (!strcmp(argv[i], op_name[k]))
					op = k;
			if (op == FOP_COUNT) {
				snprintf(err, errlen, "inject: latency of '%s'? (read, write, fsync, open, truncate, meta; none: all of them)", argv[i]);
				return -EINVAL;
			}
			f.latency_ops |= 1u << op;
		}
	} else if (!strcmp(what, "corrupt")) {
		char *end;
		double p = argc > 1 ? strtod(argv[1], &end) : -1;
		if (argc != 2 || *end || p < 0 || p > 1) {
			snprintf(err, errlen, "inject: corrupt needs a probability from 0 to 1, for example 'corrupt 0.01'");
			return -EINVAL;
		}
		f.corrupt_p = p;
	} else if (!strcmp(what, "drop-write") || !strcmp(what, "misdirect-write")) {
		struct fault_rule r;
		if (silent_rule_parse(what, argc - 1, argv + 1, &r, err, errlen) < 0)
			return -EINVAL;
		*(what[0] == 'd' ? &f.drop : &f.misdirect) = r;
	} else {
		enum fault_op op = FOP_COUNT;
		for (int i = 0; i < FOP_COUNT; i++) {
			char name[32];
			snprintf(name, sizeof(name), "%s-error", op_name[i]);
			if (!strcmp(what, name))
				op = i;
		}
		if (op == FOP_COUNT) {
			snprintf(err, errlen, "inject: unknown fault '%s' (" FAULT_NAMES ")", what);
			return -EINVAL;
		}
		struct fault_rule r;
		if (fault_rule_parse(argc - 1, argv + 1, &r, err, errlen) < 0)
			return -EINVAL;
		f.rule[op] = r;
	}
	bool any = f.vanished || f.latency_ms || f.corrupt_p > 0 ||
		   f.drop.mode != FM_OFF || f.misdirect.mode != FM_OFF;
	for (int i = 0; i < FOP_COUNT; i++)
		any |= f.rule[i].mode != FM_OFF;
	f.any = any;
	pthread_mutex_lock(&m->fault_lock);
	m->fault = f;
	pthread_mutex_unlock(&m->fault_lock);
	char args[128];
	util_join_words(args, sizeof(args), argc, argv);
	if (j == SHADOW)
		log_warn("the replacement of member %d '%s': fault injection: %s", shadow_of(a), m->path, args);
	else
		log_warn("member %u '%s': fault injection: %s", j, m->path, args);
	return 0;
}

/* "SEP NAME MODE" into buf; `every` names the errno unless silent. */
static size_t rule_describe(const struct fault_rule *r, const char *name, bool silent,
			    const char *sep, char *buf, size_t len)
{
	int n = 0;
	switch (r->mode) {
	case FM_OFF: break;
	case FM_EVERY:
		n = silent ? snprintf(buf, len, "%s%s every", sep, name)
			   : snprintf(buf, len, "%s%s every (%s)", sep, name, strerror(r->err));
		break;
	case FM_AFTER: n = snprintf(buf, len, "%s%s after %llu", sep, name, (unsigned long long)r->n); break;
	case FM_PROB: n = snprintf(buf, len, "%s%s prob %g", sep, name, r->p); break;
	case FM_COUNT: n = snprintf(buf, len, "%s%s count %llu", sep, name, (unsigned long long)r->n); break;
	}
	return n > 0 ? (size_t)n : 0;
}

size_t fault_rule_describe(const struct fault_rule *r, const char *op, const char *sep, char *buf, size_t len)
{
	char name[32];
	snprintf(name, sizeof(name), "%s-error", op);
	return rule_describe(r, name, false, sep, buf, len);
}

void member_inject_describe(struct array *a, uint32_t j, char *buf, size_t len)
{
	struct member *m = &a->m[j];
	struct member_faults f;
	size_t off = 0;
	pthread_mutex_lock(&m->fault_lock);
	f = m->fault;
	pthread_mutex_unlock(&m->fault_lock);
	buf[0] = '\0';
#define ADD(...) off += snprintf(buf + off, off < len ? len - off : 0, __VA_ARGS__)
	if (f.vanished)
		ADD("%svanished", off ? ", " : "");
	for (int i = 0; i < FOP_COUNT; i++) {
		off += fault_rule_describe(&f.rule[i], op_name[i], off ? ", " : "", buf + off, off < len ? len - off : 0);
	}
	off += rule_describe(&f.drop, "drop-write", true, off ? ", " : "", buf + off, off < len ? len - off : 0);
	off += rule_describe(&f.misdirect, "misdirect-write", true, off ? ", " : "", buf + off, off < len ? len - off : 0);
	if (f.latency_ms) {
		ADD("%slatency %u ms", off ? ", " : "", f.latency_ms);
		for (int i = 0, n = 0; i < FOP_COUNT; i++)
			if (f.latency_ops >> i & 1)
				ADD("%s%s", n++ ? "/" : " (", op_name[i]);
		if (f.latency_ops)
			ADD(")");
	}
	if (f.corrupt_p > 0)
		ADD("%scorrupt %g", off ? ", " : "", f.corrupt_p);
#undef ADD
}

enum member_sync member_sync_mode = MSYNC_FLUSH;
