/*
 * rebuild.c - online rebuild onto a replacement member (see rebuild.h).
 */
#include "rebuild.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "file.h"
#include "meta.h"
#include "parity.h"
#include "util.h"

#define WINDOW_STRIPES 16

static pthread_mutex_t rb_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rb_cond = PTHREAD_COND_INITIALIZER;
static struct rebuild_info info = { .member = -1, .min_rate = 100, .max_rate = 0 };
static pthread_t rb_thread;
static bool rb_thread_live, rb_stop;
static struct array *RA;
static uint64_t last_user_io_ms;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

void rebuild_note_user_io(void)
{
	if (__atomic_load_n(&info.active, __ATOMIC_RELAXED)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
		__atomic_store_n(&last_user_io_ms, ts.tv_sec * 1000ull + ts.tv_nsec / 1000000,
				 __ATOMIC_RELAXED);
	}
}

void rebuild_get(struct rebuild_info *out)
{
	pthread_mutex_lock(&rb_lock);
	*out = info;
	pthread_mutex_unlock(&rb_lock);
}

void rebuild_pause(bool pause)
{
	pthread_mutex_lock(&rb_lock);
	info.paused = pause;
	pthread_cond_broadcast(&rb_cond);
	pthread_mutex_unlock(&rb_lock);
}

void rebuild_set_rates(uint32_t min_mb, uint32_t max_mb)
{
	pthread_mutex_lock(&rb_lock);
	info.min_rate = min_mb;
	info.max_rate = max_mb;
	pthread_mutex_unlock(&rb_lock);
}

/* ------------------------------------------------------------- throttle */

static uint64_t t_start_ms, window_start_ms, window_bytes;

/* Account bytes; sleep to keep under the current limit; wait while
 * paused.  Returns false when the rebuild must stop. */
static bool throttle(uint64_t bytes)
{
	pthread_mutex_lock(&rb_lock);
	info.done += bytes;
	int last_pct = info.total ? (int)((info.done - bytes) * 100 / info.total) : 0;
	int pct = info.total ? (int)(info.done * 100 / info.total) : 0;
	uint64_t t = now_ms();
	info.elapsed = (t - t_start_ms) / 1000.0;
	if (info.elapsed > 0.2)
		info.rate = info.done / info.elapsed;
	while (info.paused && !rb_stop)
		pthread_cond_wait(&rb_cond, &rb_lock);
	bool busy = t - __atomic_load_n(&last_user_io_ms, __ATOMIC_RELAXED) < 100;
	uint32_t limit = busy ? info.min_rate : info.max_rate;
	if (busy && info.max_rate && info.max_rate < limit)
		limit = info.max_rate;
	bool stop = rb_stop;
	pthread_mutex_unlock(&rb_lock);
	for (int mark = 20; mark <= 80; mark += 20) {
		if (last_pct < mark && pct >= mark && pct < 100) {
			char ev[16];
			snprintf(ev, sizeof(ev), "Rebuild%d", mark);
			array_event(RA, ev, info.member);
		}
	}
	window_bytes += bytes;
	if (limit) {
		/* sleep until window_bytes fit the limit over the window */
		double need_ms = window_bytes / (limit * 1048576.0) * 1000.0;
		double spent = now_ms() - window_start_ms;
		if (need_ms > spent)
			usleep((useconds_t)((need_ms - spent) * 1000));
	}
	if (now_ms() - window_start_ms > 1000) {
		window_start_ms = now_ms();
		window_bytes = 0;
	}
	return !stop;
}

/* ---------------------------------------------------------------- walk */

struct walk {
	struct array *a;
	uint32_t j;
	int src, dst;		/* primary and new member dirfds */
	struct { uint64_t ino; char *path; } *links;
	size_t nlinks, caplinks;
	int errors;
	bool count_only;
	const char *resume_after;	/* skip files up to this path (walk order) */
	uint64_t skipped;
	uint64_t last_save_ms;
	bool verify;		/* second pass: compare and repair */
	uint64_t fixed;		/* chunks the verify pass had to rewrite */
	uint64_t total;
};

static void copy_xattrs(int from, int to)
{
	char names[4096];
	ssize_t n = flistxattr(from, names, sizeof(names));
	for (ssize_t i = 0; i < n; i += strlen(names + i) + 1) {
		if (!strncmp(names + i, META_XATTR_PREFIX, sizeof(META_XATTR_PREFIX) - 1))
			continue;
		char val[65536];
		ssize_t v = fgetxattr(from, names + i, val, sizeof(val));
		if (v >= 0)
			fsetxattr(to, names + i, val, v, 0);
	}
}

static void copy_owner_times(struct walk *w, const char *rel, const struct stat *st)
{
	struct timespec tv[2] = { st->st_atim, st->st_mtim };
	fchownat(w->dst, rel, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW);
	utimensat(w->dst, rel, tv, AT_SYMLINK_NOFOLLOW);
}

static int rebuild_file(struct walk *w, const char *rel, const struct stat *st)
{
	struct array *a = w->a;
	struct rfile *rf;
	int r = rfile_open(a, rel, &rf);
	if (r < 0)
		return r == -ENOENT ? 0 : r;	/* deleted meanwhile */
	pthread_mutex_lock(&rb_lock);
	snprintf(info.current, sizeof(info.current), "%s", rel);
	pthread_mutex_unlock(&rb_lock);

	pthread_rwlock_wrlock(&rf->rw);
	if (rf->fd[w->j] < 0) {
		int fd = openat(w->dst, rel, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
				st->st_mode & 07777);
		if (fd < 0) {
			r = -errno;
			pthread_rwlock_unlock(&rf->rw);
			rfile_release(rf);
			return r;
		}
		fchown(fd, st->st_uid, st->st_gid);
		fchmod(fd, st->st_mode & 07777);
		if (rf->fd[a->primary] >= 0)
			copy_xattrs(rf->fd[a->primary], fd);
		rf->fd[w->j] = fd;
	}
	pthread_rwlock_unlock(&rf->rw);

	uint64_t sbytes = layout_stripe_data_bytes(&rf->lay);
	for (uint64_t s = 0;; s += WINDOW_STRIPES) {
		long bytes = 0;
		pthread_rwlock_wrlock(&rf->rw);
		uint64_t nstripes = (rf->size + sbytes - 1) / sbytes;
		for (uint64_t x = s; x < s + WINDOW_STRIPES && x < nstripes && r == 0; x++) {
			bool fixed = false;
			long b = stripe_rebuild_chunk(rf, x, w->j, w->verify, &fixed);
			if (b < 0)
				r = b;
			else
				bytes += b;
			w->fixed += fixed;
		}
		pthread_rwlock_unlock(&rf->rw);
		if (r < 0 || s + WINDOW_STRIPES >= nstripes) {
			if (r == 0 && !w->verify)
				throttle(bytes);
			break;
		}
		if (!throttle(w->verify ? 0 : bytes)) {
			r = -EINTR;
			break;
		}
	}
	if (r == 0) {
		pthread_rwlock_wrlock(&rf->rw);
		if (ftruncate(rf->fd[w->j], layout_shard_size(&rf->lay, w->j, rf->size)) < 0)
			r = -errno;
		if (r == 0)
			r = rfile_write_meta(rf, 0);
		struct timespec tv[2] = { st->st_atim, st->st_mtim };
		futimens(rf->fd[w->j], tv);
		pthread_rwlock_unlock(&rf->rw);
	}
	rfile_release(rf);
	pthread_mutex_lock(&rb_lock);
	info.files_done++;
	pthread_mutex_unlock(&rb_lock);
	return r;
}

static int cmp_names(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Order of the walk: component by component, each compared with strcmp. */
static int path_cmp(const char *a, const char *b)
{
	for (;;) {
		size_t la = strcspn(a, "/"), lb = strcspn(b, "/");
		size_t l = la < lb ? la : lb;
		int c = memcmp(a, b, l);
		if (c)
			return c;
		if (la != lb)
			return la < lb ? -1 : 1;
		if (!a[la] || !b[lb])
			return (a[la] ? 1 : 0) - (b[lb] ? 1 : 0);
		a += la + 1;
		b += lb + 1;
	}
}

#define POS_FILE ".raidfs/rebuild"

/* Persist the position on the new member at most once a second, so a
 * rebuild interrupted by unmount or kill -9 resumes after this file. */
static void save_position(struct walk *w, const char *path)
{
	uint64_t t = now_ms();
	if (t - w->last_save_ms < 1000)
		return;
	w->last_save_ms = t;
	char buf[PATH_MAX + 128];
	int n = snprintf(buf, sizeof(buf), "raidfs-rebuild 1\nmember %u\ndone %" PRIu64 "\nafter %s\n",
			 w->j, info.done, path);
	if (n < 0 || (size_t)n >= sizeof(buf) - 16)
		return;
	n += snprintf(buf + n, sizeof(buf) - n, "crc %08x\n", parity_crc32(0, buf, n));
	int fd = openat(w->dst, POS_FILE ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	bool ok = io_pwrite(fd, buf, n, 0) == 0 && fdatasync(fd) == 0;
	close(fd);
	if (ok)
		renameat(w->dst, POS_FILE ".tmp", w->dst, POS_FILE);
}

/* The saved position of a rebuild onto member j (dirfd): the last path
 * rebuilt and the bytes done; false when there is none or it is corrupt. */
static bool load_position(int dirfd, uint32_t j, char *path, size_t len, uint64_t *done)
{
	char buf[PATH_MAX + 128];
	int fd = openat(dirfd, POS_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	char *crc = strstr(buf, "crc ");
	unsigned member, want;
	unsigned long long d;
	if (!crc || sscanf(crc, "crc %x", &want) != 1 || parity_crc32(0, buf, crc - buf) != want)
		return false;
	char *after = strstr(buf, "\nafter ");
	if (sscanf(buf, "raidfs-rebuild 1\nmember %u\ndone %llu", &member, &d) != 2 || member != j || !after)
		return false;
	after += 7;
	size_t l = strcspn(after, "\n");
	if (l >= len)
		return false;
	memcpy(path, after, l);
	path[l] = '\0';
	*done = d;
	return true;
}

static int walk_dir(struct walk *w, const char *rel)
{
	int fd = openat(w->src, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	bool root = !strcmp(rel, ".");
	struct dirent *e;
	int ret = 0;
	/* sorted, so the walk order is stable and a position can be resumed */
	char **names = NULL;
	size_t nn = 0, cap = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (root && (!strcmp(e->d_name, ".raidfs") || !strncmp(e->d_name, ".raidfs-", 8)))
			continue;
		if (nn == cap) {
			cap = cap ? cap * 2 : 64;
			names = realloc(names, cap * sizeof(*names));
		}
		names[nn++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, nn, sizeof(*names), cmp_names);
	for (size_t ni = 0; ni < nn && ret == 0; ni++) {
		char *child;
		if (asprintf(&child, root ? "%s%s" : "%s/%s", root ? "" : rel, names[ni]) < 0) {
			ret = -ENOMEM;
			break;
		}
		struct stat st;
		if (fstatat(w->src, child, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			free(child);
			continue;	/* removed meanwhile */
		}
		if (w->count_only) {
			if (S_ISDIR(st.st_mode))
				ret = walk_dir(w, child);
			else if (S_ISREG(st.st_mode))
				w->total += st.st_size;
			free(child);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			if (mkdirat(w->dst, child, st.st_mode & 07777) < 0 && errno != EEXIST)
				ret = -errno;
			int dfd = openat(w->src, child, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			int nfd = openat(w->dst, child, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (dfd >= 0 && nfd >= 0)
				copy_xattrs(dfd, nfd);
			if (dfd >= 0) close(dfd);
			if (nfd >= 0) close(nfd);
			if (ret == 0)
				ret = walk_dir(w, child);
			copy_owner_times(w, child, &st);
		} else if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t n = readlinkat(w->src, child, target, sizeof(target) - 1);
			if (n >= 0) {
				target[n] = '\0';
				if (symlinkat(target, w->dst, child) == 0 || errno == EEXIST)
					copy_owner_times(w, child, &st);
			}
		} else if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
			if (mknodat(w->dst, child, st.st_mode, 0) == 0 || errno == EEXIST)
				copy_owner_times(w, child, &st);
		} else if (S_ISREG(st.st_mode)) {
			bool linked = false;
			if (st.st_nlink > 1) {
				for (size_t i = 0; i < w->nlinks && !linked; i++) {
					if (w->links[i].ino != st.st_ino)
						continue;
					linked = linkat(w->dst, w->links[i].path, w->dst, child, 0) == 0 ||
						 errno == EEXIST;
				}
			}
			if (!linked && !w->verify && w->resume_after && path_cmp(child, w->resume_after) <= 0) {
				w->skipped++;	/* rebuilt before the interruption */
				linked = true;
			}
			if (!linked) {
				int r = rebuild_file(w, child, &st);
				if (r == 0 && !w->verify)
					save_position(w, child);
				if (r < 0) {
					log_err("rebuild of '%s' onto member %u failed: %s", child, w->j, strerror(-r));
					if (r == -EINTR)
						ret = r;
					else
						w->errors++;
				}
				if (st.st_nlink > 1) {
					if (w->nlinks == w->caplinks) {
						w->caplinks = w->caplinks ? w->caplinks * 2 : 64;
						w->links = realloc(w->links, w->caplinks * sizeof(*w->links));
					}
					w->links[w->nlinks].ino = st.st_ino;
					w->links[w->nlinks++].path = strdup(child);
				}
			}
		}
		free(child);
	}
	for (size_t ni = 0; ni < nn; ni++)
		free(names[ni]);
	free(names);
	return ret;
}

static char resume_path[PATH_MAX];
static bool resume_set;

static void *rebuild_thread(void *arg)
{
	struct array *a = RA;
	uint32_t j = (uint32_t)(uintptr_t)arg;
	struct walk w = { .a = a, .j = j, .src = a->m[a->primary].dirfd, .dst = a->m[j].dirfd };
	if (resume_set)
		w.resume_after = resume_path;

	w.count_only = true;
	walk_dir(&w, ".");
	pthread_mutex_lock(&rb_lock);
	info.total = w.total ? w.total : 1;
	pthread_mutex_unlock(&rb_lock);
	w.count_only = false;
	t_start_ms = window_start_ms = now_ms();
	window_bytes = 0;
	int r = walk_dir(&w, ".");
	for (size_t i = 0; i < w.nlinks; i++)
		free(w.links[i].path);
	w.nlinks = 0;
	if (w.resume_after)
		log_info("rebuild of member %u resumed after '%s': %" PRIu64 " files already rebuilt were skipped",
			 j, w.resume_after, w.skipped);
	if (r == 0 && w.errors == 0) {
		/* verify: every chunk again, compared with the new member; also
		 * catches files renamed into an already rebuilt directory */
		pthread_mutex_lock(&rb_lock);
		snprintf(info.current, sizeof(info.current), "(verifying)");
		pthread_mutex_unlock(&rb_lock);
		w.verify = true;
		r = walk_dir(&w, ".");
		for (size_t i = 0; i < w.nlinks; i++)
			free(w.links[i].path);
		if (w.fixed)
			log_warn("rebuild of member %u: the verify pass rewrote %" PRIu64 " chunk%s changed during the rebuild",
				 j, w.fixed, w.fixed == 1 ? "" : "s");
	}
	free(w.links);

	char msg[256];
	if (r == 0 && w.errors == 0) {
		unlinkat(w.dst, POS_FILE, 0);
		array_member_rebuilt(a, j);
		snprintf(msg, sizeof(msg), "member %u rebuilt onto '%.120s' and verified (%" PRIu64 " files, %.1f s)",
			 j, a->m[j].path, info.files_done / 2, (now_ms() - t_start_ms) / 1000.0);
		log_info("%s", msg);
		array_event(a, "RebuildFinished", j);
	} else if (r == -EINTR) {
		snprintf(msg, sizeof(msg), "rebuild of member %u stopped at %.200s", j, info.current);
		log_warn("%s", msg);
	} else {
		snprintf(msg, sizeof(msg), "rebuild of member %u failed (%d file errors): the member stays rebuilding; see the log",
			 j, w.errors);
		log_err("%s", msg);
	}
	pthread_mutex_lock(&rb_lock);
	info.active = false;
	snprintf(info.last_result, sizeof(info.last_result), "%s", msg);
	pthread_mutex_unlock(&rb_lock);
	return NULL;
}

static int start_on(struct array *a, int member, int fd, const char *path, char *err, size_t errlen);

/* Common checks: can member be rebuilt now? */
static int can_rebuild(struct array *a, int member, char *err, size_t errlen)
{
	if (a->lay.red == RED_NONE) {
		snprintf(err, errlen, "%s has no redundancy: nothing to rebuild from", layout_level_name(a->lay.level));
		return -EINVAL;
	}
	if (member < 0 || (uint32_t)member >= a->width) {
		snprintf(err, errlen, "no member %d (the array has %u)", member, a->width);
		return -EINVAL;
	}
	if (member_online(a, member)) {
		snprintf(err, errlen, "member %d '%s' is still online: fail it first ('raidfs fail %s %d'); replacing a healthy member in place is not supported yet",
			 member, a->m[member].path, a->mountpoint, member);
		return -EBUSY;
	}
	pthread_mutex_lock(&rb_lock);
	bool busy = info.active;
	pthread_mutex_unlock(&rb_lock);
	if (busy) {
		snprintf(err, errlen, "a rebuild is already running (member %d)", info.member);
		return -EBUSY;
	}
	if (array_state(a) == ARRAY_FAILED) {
		snprintf(err, errlen, "the array has lost more members than it tolerates: there is no complete data to rebuild from");
		return -EIO;
	}
	return 0;
}

int rebuild_start(struct array *a, int member, const char *dir, char *err, size_t errlen)
{
	int r = can_rebuild(a, member, err, errlen);
	if (r < 0)
		return r;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open '%s': %s (create the directory, or mount the new disk there)", dir, strerror(errno));
		return -errno;
	}
	struct stat st, o;
	for (uint32_t j = 0; j < a->width; j++) {
		if (a->m[j].dirfd >= 0 && fstat(a->m[j].dirfd, &o) == 0 && fstat(fd, &st) == 0 &&
		    o.st_dev == st.st_dev && o.st_ino == st.st_ino) {
			snprintf(err, errlen, "'%s' is already member %u of this array", dir, j);
			close(fd);
			return -EINVAL;
		}
	}
	if (!array_dir_is_empty(fd)) {
		snprintf(err, errlen, "'%s' is not empty: a replacement must be an empty directory", dir);
		close(fd);
		return -ENOTEMPTY;
	}
	r = array_probe_xattr(fd);
	if (r < 0) {
		snprintf(err, errlen, "'%s' cannot hold user extended attributes (%s): use a filesystem with user xattrs",
			 dir, strerror(-r));
		close(fd);
		return r;
	}
	char *rp = realpath(dir, NULL);
	r = start_on(a, member, fd, rp ? rp : dir, err, errlen);
	free(rp);
	return r;
}

/* Put fd (an empty, checked directory) in member's slot and start. */
static int start_on(struct array *a, int member, int fd, const char *path, char *err, size_t errlen)
{
	int r = array_replace_begin(a, member, fd, path);
	if (r == -EBUSY) {
		snprintf(err, errlen, "member %d is not faulty or missing", member);
		close(fd);
		return r;
	}
	rfile_forget_member(member);
	pthread_mutex_lock(&rb_lock);
	if (rb_thread_live) {
		pthread_mutex_unlock(&rb_lock);
		pthread_join(rb_thread, NULL);
		pthread_mutex_lock(&rb_lock);
	}
	RA = a;
	resume_set = false;
	info.active = true;
	info.paused = false;
	info.member = member;
	info.done = info.files_done = 0;
	info.total = 0;
	info.rate = info.elapsed = 0;
	info.current[0] = '\0';
	rb_stop = false;
	pthread_mutex_unlock(&rb_lock);
	array_event(a, "RebuildStarted", member);
	if (pthread_create(&rb_thread, NULL, rebuild_thread, (void *)(uintptr_t)member) != 0) {
		info.active = false;
		snprintf(err, errlen, "cannot start the rebuild thread");
		return -EAGAIN;
	}
	rb_thread_live = true;
	return 0;
}

void rebuild_stop(void)
{
	pthread_mutex_lock(&rb_lock);
	rb_stop = true;
	pthread_cond_broadcast(&rb_cond);
	bool live = rb_thread_live;
	pthread_mutex_unlock(&rb_lock);
	if (live)
		pthread_join(rb_thread, NULL);
	rb_thread_live = false;
}

int rebuild_take_spare(struct array *a)
{
	char err[256], path[PATH_MAX];
	int fd;
	if (array_spare_count(a) == 0)
		return 0;
	for (uint32_t j = 0; j < a->width; j++) {
		if (member_online(a, j) || member_rebuilding(a, j))
			continue;
		if (can_rebuild(a, j, err, sizeof(err)) < 0)
			return 0;
		if (array_take_spare(a, j, &fd, path, sizeof(path)) < 0)
			return 0;
		log_warn("array '%s': hot spare '%s' takes the place of member %u", a->sb.name, path, j);
		array_event(a, "SpareActive", j);
		if (start_on(a, j, fd, path, err, sizeof(err)) < 0) {
			log_err("cannot rebuild member %u onto the spare '%s': %s", j, path, err);
			return -1;
		}
		return 1;
	}
	return 0;
}

int rebuild_add_spare(struct array *a, const char *dir, char *err, size_t errlen)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open '%s': %s (create the directory, or mount the new disk there)", dir, strerror(errno));
		return -errno;
	}
	if (!array_dir_is_empty(fd)) {
		snprintf(err, errlen, "'%s' is not empty: a spare must be an empty directory", dir);
		close(fd);
		return -ENOTEMPTY;
	}
	int r = array_probe_xattr(fd);
	if (r < 0) {
		snprintf(err, errlen, "'%s' cannot hold user extended attributes (%s)", dir, strerror(-r));
		close(fd);
		return r;
	}
	char *rp = realpath(dir, NULL);
	r = array_add_spare(a, fd, rp ? rp : dir, err, errlen);
	free(rp);
	if (r < 0)
		close(fd);
	return r;
}

int rebuild_resume(struct array *a)
{
	for (uint32_t j = 0; j < a->width; j++) {
		if (!member_rebuilding(a, j))
			continue;
		uint64_t done = 0;
		pthread_mutex_lock(&rb_lock);
		if (info.active) {
			pthread_mutex_unlock(&rb_lock);
			return 0;
		}
		resume_set = load_position(a->m[j].dirfd, j, resume_path, sizeof(resume_path), &done);
		RA = a;
		info.active = true;
		info.paused = false;
		info.member = j;
		info.done = resume_set ? done : 0;
		info.files_done = 0;
		info.total = 0;
		info.rate = info.elapsed = 0;
		rb_stop = false;
		pthread_mutex_unlock(&rb_lock);
		if (resume_set)
			log_warn("array '%s': resuming the rebuild of member %u onto '%s' after '%s'",
				 a->sb.name, j, a->m[j].path, resume_path);
		else
			log_warn("array '%s': restarting the rebuild of member %u onto '%s' (no saved position)",
				 a->sb.name, j, a->m[j].path);
		array_event(a, "RebuildStarted", j);
		if (pthread_create(&rb_thread, NULL, rebuild_thread, (void *)(uintptr_t)j) != 0) {
			info.active = false;
			return -EAGAIN;
		}
		rb_thread_live = true;
		return 1;
	}
	return 0;
}
