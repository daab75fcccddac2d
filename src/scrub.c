/*
 * scrub.c - the online scrub (see scrub.h).
 *
 * One thread: a first walk of the primary member's tree counts the files
 * (for the progress bar), a second opens each regular file with
 * rfile_open(), as a user's open does, and compares SCRUB_WINDOW stripes
 * at a time with stripe_verify_range() under the file's lock held shared.
 * A stripe group that does not match is logged; with --repair it is
 * compared again under the lock held exclusively (a write may have fixed
 * it meanwhile) and its redundancy recomputed from its data
 * (stripe_regen()), the file marked dirty first as for any write.  The
 * scrub stops by itself when the array is no longer optimal (a degraded
 * stripe has nothing to compare against, and a rebuild comes first).
 */
#include "scrub.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "cache.h"
#include "file.h"
#include "stripe.h"
#include "layout.h"
#include "rebuild.h"
#include "superblock.h"
#include "util.h"

#define SCRUB_WINDOW 16	/* stripes compared per lock hold */
#define SCRUB_MAX_BAD 1024	/* mismatches remembered per window (16 stripes x groups) */

static pthread_mutex_t sc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct scrub_info info;
static struct scrub_bad_file bad_list[SCRUB_LIST_FILES];	/* (under sc_lock) */
static unsigned bad_n;
/* the kinds of problem the list holds (scrub.h; compared by address) */
static const char *const kinds[] = { "mismatch", "missing", "unreadable" };
static pthread_t sc_thread;
static bool sc_live, sc_stop, sc_closed;	/* closed: unmounting, no new scrub */
static uint64_t t_start_ms;

static bool stopping(void)
{
	return __atomic_load_n(&sc_stop, __ATOMIC_ACQUIRE);
}

/* While users did I/O in the last 100 ms, sleep so that the scrub's
 * `bytes` stay under SCRUB_BUSY_MB. */
static void pace(struct array *a, uint64_t bytes)
{
	uint64_t t = util_now_ms();
	if ((int64_t)(t - array_last_user_io_ms(a)) < 100 && bytes) {
		uint64_t us = bytes * 1000000ull / (SCRUB_BUSY_MB * 1048576ull);
		struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* Account `bytes` compared, and pace(). */
static void throttle(struct array *a, uint64_t bytes)
{
	uint64_t t = util_now_ms();
	pthread_mutex_lock(&sc_lock);
	info.bytes += bytes;
	info.elapsed = (t - t_start_ms) / 1000.0;
	if (info.elapsed > 0.2)
		info.rate = info.bytes / info.elapsed;
	pthread_mutex_unlock(&sc_lock);
	pace(a, bytes);
}

struct bad {
	uint64_t s[SCRUB_MAX_BAD];
	uint32_t g[SCRUB_MAX_BAD];
	uint64_t m[SCRUB_MAX_BAD];	/* members whose chunk is not its checksum's */
	unsigned n;
};

static void note_bad(void *ctx, uint64_t s, uint32_t g, uint64_t members)
{
	struct bad *b = ctx;
	if (b->n < SCRUB_MAX_BAD) {
		b->s[b->n] = s;
		b->m[b->n] = members;
		b->g[b->n++] = g;
	}
}

/* Note `count` problems of one kind in file rel (stripe: the first, or
 * UINT64_MAX for none), `fixed` of them repaired, in the list status -v
 * shows.  Files are scrubbed one after the other: the same file and kind
 * as the last entry add to it. */
static void note_file(const char *rel, const char *kind, uint64_t count, uint64_t fixed, uint64_t stripe)
{
	if (!count && !fixed)
		return;
	pthread_mutex_lock(&sc_lock);
	struct scrub_bad_file *e = bad_n ? &bad_list[bad_n - 1] : NULL;
	if (!e || strcmp(e->path, rel) || e->kind != kind) {
		bool listed = false;	/* (a file seen before under another kind is not counted twice) */
		for (unsigned i = 0; i < bad_n && !listed; i++)
			listed = !strcmp(bad_list[i].path, rel);
		if (!listed)
			info.bad_files++;
		e = NULL;
		if (bad_n < SCRUB_LIST_FILES) {
			e = &bad_list[bad_n++];
			memset(e, 0, sizeof(*e));
			snprintf(e->path, sizeof(e->path), "%.255s", rel);
			e->kind = kind;
		}
	}
	if (e) {
		e->count += count;
		e->fixed += fixed;
		if (stripe != UINT64_MAX && e->nstripes < SCRUB_LIST_STRIPES)
			e->stripe[e->nstripes++] = stripe;
	}
	pthread_mutex_unlock(&sc_lock);
}

/* The groups in b (found under the lock held shared) compared again under
 * it held exclusively: a destage of the write-back cache writes data and
 * parity under the shared lock, so a stripe it was half-way through looked
 * mismatched.  Those still mismatched are counted and logged, and with
 * `fix` recomputed from their data.  rf->rw not held. */
static void confirm(struct array *a, struct rfile *rf, const char *rel, const struct bad *b, bool fix)
{
	const struct layout *l = &rf->lay;
	uint64_t sbytes = layout_stripe_data_bytes(l), found = 0, fixed = 0;
	int r = 0;
	fix = fix && array_writable(a);
	pthread_rwlock_wrlock(&rf->rw);
	for (unsigned i = 0; i < b->n && r == 0; i++) {
		struct bad now = { .n = 0 };
		bool still = false;
		uint64_t wrong = 0;	/* (members, by checksum) */
		if (stripe_verify_range(rf, b->s[i], b->s[i] + 1, note_bad, &now, NULL) > 0)
			for (unsigned k = 0; k < now.n; k++)
				if (now.g[k] == b->g[i]) {
					still = true;
					wrong |= now.m[k];
				}
		if (!still)
			continue;	/* (written meanwhile, or the file got shorter) */
		found++;
		for (uint32_t j = 0; j < a->width; j++) {
			if (!(wrong >> j & 1))
				continue;
			log_warn("scrub: file '%s': stripe %" PRIu64 " (offset %" PRIu64 ", group %u): the chunk on member %u '%s' "
				 "(shard offset %" PRIu64 ") does not match its checksum%s%s%s", rel, b->s[i], b->s[i] * sbytes,
				 b->g[i], j, a->m[j].path, b->s[i] * l->chunk,
				 fix ? ": rebuilt from the others" : " ('raidfs scrub ", fix ? "" : a->mountpoint,
				 fix ? "" : " --repair' rebuilds it from the others)");
			if (!fix)
				array_note_cksum_error(a, j, 0);	/* (the repair counts what it rebuilds) */
		}
		/* (without checksums nothing tells which side is right: said
		 * so; --repair takes the data's side, as md does) */
		if (!wrong)
			log_warn("scrub: file '%s': the %s of stripe %" PRIu64 " (offset %" PRIu64 ", group %u) does not match its data, "
				 "and without checksums nothing tells which side is right%s%s%s",
				 rel, l->red == RED_MIRROR ? "copies" : "parity", b->s[i], b->s[i] * sbytes, b->g[i],
				 fix ? ": recomputed from the data" : " ('raidfs scrub ", fix ? "" : a->mountpoint,
				 fix ? "" : " --repair' recomputes it from the data)");
		if (!fix) {
			note_file(rel, kinds[0], 1, 0, b->s[i]);
			continue;
		}
		r = stripe_mark_dirty(rf);
		if (r == 0)
			r = stripe_regen(rf, b->s[i], b->g[i]);
		fixed += r == 0;
		note_file(rel, kinds[0], 1, r == 0, b->s[i]);
	}
	pthread_rwlock_unlock(&rf->rw);
	pthread_mutex_lock(&sc_lock);
	info.mismatches += found;
	info.repaired += fixed;
	pthread_mutex_unlock(&sc_lock);
	if (r < 0)
		log_err("scrub: file '%s': cannot recompute its redundancy: %s", rel, strerror(-r));
	else if (fixed && rf->sums)
		log_warn("scrub: file '%s': %" PRIu64 " stripe%s repaired, by the checksums", rel, fixed,
			 fixed == 1 ? "" : "s");
	else if (fixed)
		log_warn("scrub: file '%s': redundancy recomputed from the data (%" PRIu64 " stripe%s)", rel, fixed,
			 fixed == 1 ? "" : "s");
}

/* Stripes [s0, s1) of rf had chunks that could not be read.  Under the
 * file's lock held exclusively (no destage half done), each is read
 * through the read path, which rebuilds a data chunk it cannot read from
 * redundancy and writes it back (md's way; the error counts on its
 * member); a group whose redundancy still cannot be read, and whose
 * readable chunks do not disagree, has its redundancy written anew from
 * the data (see below).  Returns the stripes left unreadable. */
static uint64_t unreadable_stripes(struct array *a, struct rfile *rf, const char *rel, uint64_t s0, uint64_t s1,
				   bool fix)
{
	uint64_t sbytes = layout_stripe_data_bytes(&rf->lay), fixed = 0, left = 0;
	uint8_t *buf = malloc(sbytes);
	if (!buf)
		return 1;
	pthread_rwlock_wrlock(&rf->rw);
	uint64_t size = rf->size, nstripes = (size + sbytes - 1) / sbytes;
	for (uint64_t s = s0; s < s1 && s < nstripes; s++) {
		uint64_t len = size - s * sbytes < sbytes ? size - s * sbytes : sbytes, u = 0;
		struct bad mm = { .n = 0 };
		if (stripe_read_locked(rf, buf, len, s * sbytes) < 0 ||
		    stripe_verify_range(rf, s, s + 1, note_bad, &mm, &u) < 0) {
			left++;
			continue;
		}
		if (u) {	/* (once more: an error that does not repeat is gone) */
			u = 0;
			mm.n = 0;
			if (stripe_verify_range(rf, s, s + 1, note_bad, &mm, &u) < 0) {
				left++;
				continue;
			}
		}
		if (rf->lay.red == RED_MIRROR)	/* (the read may have rewritten a copy: as stripe_regen()) */
			cache_forget_clean(rf, s * sbytes, (s + 1) * sbytes);
		if (!u)
			continue;
		/* Redundancy that cannot be read is written anew from the data
		 * where a single redundancy chunk per group is all there is
		 * (raid5/50, two mirror copies: nothing to compare it with, md's
		 * way); with more (raid6, more copies) the readable ones might
		 * disagree with the data, so only --repair does it. */
		int r = (fix || rf->lay.m == 1) && array_writable(a) ? stripe_mark_dirty(rf) : -EROFS;
		for (uint32_t g = 0; g < rf->lay.groups && r == 0; g++) {
			bool mismatched = false;	/* (left to confirm(), as found) */
			for (unsigned k = 0; k < mm.n; k++)
				mismatched |= mm.g[k] == g;
			if (!mismatched)
				r = stripe_regen(rf, s, g);
		}
		u = 0;
		if (r < 0 || stripe_verify_range(rf, s, s + 1, NULL, NULL, &u) < 0 || u)
			left++;
		else
			fixed++;
	}
	pthread_rwlock_unlock(&rf->rw);
	free(buf);
	if (fixed)
		log_warn("scrub: file '%s': redundancy of %" PRIu64 " stripe%s that could not be read written anew", rel, fixed,
			 fixed == 1 ? "" : "s");
	return left;
}

/* Why the scrub must stop now (NULL: it goes on). */
static const char *must_stop(struct array *a)
{
	struct rebuild_info ri;
	if (stopping())
		return "stopped";
	if (array_state(a) != ARRAY_OPTIMAL)
		return "stopped: the array is no longer optimal";
	rebuild_get(&ri);
	if (ri.active)
		return "stopped: a rebuild or replacement started";
	return NULL;
}

static const char *stop_why;	/* (the scrub thread's own) */

static void count_error(void)
{
	pthread_mutex_lock(&sc_lock);
	info.errors++;
	pthread_mutex_unlock(&sc_lock);
}

/* Shards of rf missing on online members (deleted there by hand; read
 * around meanwhile), as a mask.  Caller holds the namespace lock
 * exclusively (no rename is half done). */
static uint64_t missing_shards(struct array *a, const struct rfile *rf, const char *rel)
{
	uint64_t missing = 0;
	for (uint32_t j = 0; j < a->width; j++) {
		struct stat st;
		if (rf->fd[j] < 0 && member_online(a, j) &&
		    fstatat(a->m[j].dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
			missing |= 1ull << j;	/* (a shard of another file there: 'raidfs check' names it) */
	}
	return missing;
}

/* Between the windows of a shard being put back. */
static bool restore_go_on(struct array *a, uint64_t bytes)
{
	pace(a, bytes);
	return !must_stop(a);
}

/* The missing shards counted and logged, and with `fix` put back
 * (rfile_restore_shard()).  No lock held. */
static void put_back(struct array *a, struct rfile *rf, const char *rel, uint64_t missing, bool fix)
{
	for (uint32_t j = 0; j < a->width; j++) {
		if (!(missing >> j & 1))
			continue;
		pthread_mutex_lock(&sc_lock);
		info.missing++;
		pthread_mutex_unlock(&sc_lock);
		note_file(rel, kinds[1], 1, 0, UINT64_MAX);
		if (rf->lay.m == 0) {
			log_err("scrub: file '%s': its shard on member %u '%s' is missing: its data there is lost (%s has no "
				"redundancy)", rel, j, a->m[j].path, layout_level_name(rf->lay.level));
			continue;
		}
		if (!fix) {
			log_warn("scrub: file '%s': its shard on member %u '%s' is missing (read from the other members "
				 "meanwhile; 'raidfs scrub %s --repair' puts it back)", rel, j, a->m[j].path, a->mountpoint);
			continue;
		}
		if (must_stop(a))
			return;
		int r = rfile_restore_shard(rf, rel, j, restore_go_on);
		if (r == 0) {
			pthread_mutex_lock(&sc_lock);
			info.restored++;
			pthread_mutex_unlock(&sc_lock);
			note_file(rel, kinds[1], 0, 1, UINT64_MAX);
			array_member_corrected(a, j);
			array_note_repaired(a, j, layout_shard_size(&rf->lay, j, __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE)));
			log_warn("scrub: file '%s': its shard on member %u '%s' was missing: put back from the other members",
				 rel, j, a->m[j].path);
			continue;
		}
		if (r == -EINTR)
			return;	/* (the scrub stops) */
		const char *why = r == -EAGAIN	  ? "the file changed meanwhile (the next scrub tries again)"
				  : r == -EINVAL  ? "the member is no longer in service"
				  : r == -EBUSY	  ? "its redundancy may lag behind its data (the mount could not resync "
						    "it; its next open does)"
				  : r == -EMLINK  ? "the file has more than one name (a rebuild of the member puts it back)"
				  : r == -ENOENT  ? "its directory is missing there too (a rebuild of the member puts it back)"
				  : r == -EOPNOTSUPP ? "the member's filesystem cannot make unnamed files (O_TMPFILE; a "
						       "rebuild of the member puts it back)"
				  : r == -EEXIST  ? "another entry has its name there now (run 'raidfs check')"
				  : r == -EIO	  ? "the other members could not be read for it (see the errors above)"
						  : strerror(-r);
		log_err("scrub: file '%s': its shard on member %u '%s' is missing and was not put back: %s", rel, j,
			a->m[j].path, why);
	}
}

static void scrub_file(struct array *a, const char *rel, bool fix)
{
	struct rfile *rf;
	/* (the namespace lock held exclusively, as the rebuild's open: a
	 * create or rename is never seen half done on the members) */
	nslock_excl(&a->ns_lock);
	int r = rfile_open(a, rel, &rf);
	uint64_t missing = r == 0 ? missing_shards(a, rf, rel) : 0;
	nslock_unlock(&a->ns_lock);
	if (r == -ENOENT || r == -ELOOP || r == -EISDIR || r == -EINVAL)
		return;	/* deleted, or another kind of entry, meanwhile */
	if (r < 0) {
		log_err("scrub: file '%s' cannot be opened: %s", rel, strerror(-r));
		count_error();
		note_file(rel, kinds[2], 1, 0, UINT64_MAX);
		return;
	}
	pthread_mutex_lock(&sc_lock);
	snprintf(info.current, sizeof(info.current), "%.250s", rel);
	pthread_mutex_unlock(&sc_lock);
	if (missing)
		put_back(a, rf, rel, missing, fix);
	const struct layout *l = &rf->lay;
	uint64_t sbytes = layout_stripe_data_bytes(l);
	bool failed = false;	/* (counted once per file) */
	for (uint64_t s = 0; !(stop_why = must_stop(a)); s += SCRUB_WINDOW) {
		struct bad b = { .n = 0 };
		uint64_t unreadable = 0;
		pthread_rwlock_rdlock(&rf->rw);
		uint64_t size = rf->size, nstripes = (size + sbytes - 1) / sbytes;
		long nb = s < nstripes ? stripe_verify_range(rf, s, s + SCRUB_WINDOW, note_bad, &b, &unreadable) : 0;
		pthread_rwlock_unlock(&rf->rw);
		if (s >= nstripes)
			break;
		if (nb >= 0 && unreadable) {
			/* repaired where it can be, then compared again */
			uint64_t left = unreadable_stripes(a, rf, rel, s, s + SCRUB_WINDOW, fix);
			if (left) {
				bool hint = !fix && rf->lay.m > 1 && array_writable(a);	/* (what --repair would add) */
				log_err("scrub: file '%s': %" PRIu64 " stripe%s from stripe %" PRIu64 " still cannot be read whole%s%s%s",
					rel, left, left == 1 ? "" : "s", s,
					!array_writable(a) ? " (read-only: not rewritten)" : hint ? " ('raidfs scrub " : "",
					hint ? a->mountpoint : "", hint ? " --repair' writes their redundancy anew)" : "");
				if (!failed)
					count_error();
				failed = true;
				note_file(rel, kinds[2], left, 0, s);
			}
			b.n = 0;
			pthread_rwlock_rdlock(&rf->rw);
			nb = stripe_verify_range(rf, s, s + SCRUB_WINDOW, note_bad, &b, NULL);
			pthread_rwlock_unlock(&rf->rw);
		}
		if (nb < 0) {
			log_err("scrub: file '%s': stripes from %" PRIu64 " cannot be read: %s", rel, s, strerror((int)-nb));
			if (!failed)
				count_error();
			note_file(rel, kinds[2], 1, 0, s);
			break;
		}
		if (nb > 0)
			confirm(a, rf, rel, &b, fix);
		uint64_t end = (s + SCRUB_WINDOW) * sbytes;
		throttle(a, (end < size ? end : size) - s * sbytes);
	}
	rfile_release(rf);
	pthread_mutex_lock(&sc_lock);
	info.files_done++;
	pthread_mutex_unlock(&sc_lock);
}

/* Walk the primary's tree under rel: count the regular files, or scrub
 * them.  false when the scrub must stop. */
static bool walk(struct array *a, const char *rel, bool count, bool fix)
{
	DIR *d = opendir_at(a->m[a->primary].dirfd, rel);
	if (!d)
		return !(stop_why = must_stop(a));	/* (removed meanwhile) */
	struct dirent *e;
	bool go = true;
	while (go && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!strcmp(rel, ".") && !strcmp(e->d_name, SB_DIR))
			continue;	/* raidfs's own */
		char child[PATH_MAX];
		if (snprintf(child, sizeof(child), "%s%s%s", strcmp(rel, ".") ? rel : "", strcmp(rel, ".") ? "/" : "",
			     e->d_name) >= (int)sizeof(child))
			continue;
		unsigned char type = e->d_type;
		if (type == DT_UNKNOWN) {
			struct stat st;
			if (fstatat(a->m[a->primary].dirfd, child, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
		}
		if (type == DT_DIR) {
			go = walk(a, child, count, fix);
		} else if (type == DT_REG && count) {
			pthread_mutex_lock(&sc_lock);
			info.files_total++;
			pthread_mutex_unlock(&sc_lock);
		} else if (type == DT_REG) {
			scrub_file(a, child, fix);
		}
		go = go && !(stop_why = must_stop(a));
	}
	closedir(d);
	return go;
}

/* ------------------------------------------------- the lasting result */

#define RESULT_MAX (1 << 20)	/* bytes of SCRUB_FILE read at most */

/* The last result as SCRUB_FILE holds it (malloc'd), or NULL.  sc_lock held. */
static char *result_encode_locked(void)
{
	json_t *files = json_array();
	for (unsigned i = 0; files && i < bad_n; i++) {
		const struct scrub_bad_file *b = &bad_list[i];
		json_t *st = json_array();
		for (unsigned k = 0; st && k < b->nstripes; k++)
			json_array_append_new(st, json_integer((json_int_t)b->stripe[k]));
		json_array_append_new(files, json_pack("{s:s, s:s, s:I, s:I, s:o}", "path", b->path, "kind", b->kind,
						       "count", (json_int_t)b->count, "fixed", (json_int_t)b->fixed,
						       "stripes", st ? st : json_array()));
	}
	json_t *doc = json_pack("{s:s, s:i, s:I, s:b, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
				"format", "raidfs-scrub", "version", 1, "ended", (json_int_t)info.ended,
				"repair", info.repair, "result", info.last_result, "files_done", (json_int_t)info.files_done,
				"files_total", (json_int_t)info.files_total, "bytes", (json_int_t)info.bytes,
				"mismatches", (json_int_t)info.mismatches, "repaired", (json_int_t)info.repaired,
				"errors", (json_int_t)info.errors, "missing", (json_int_t)info.missing,
				"restored", (json_int_t)info.restored, "bad_files", (json_int_t)info.bad_files,
				"files", files ? files : json_array());
	char *text = doc ? json_dumps(doc, JSON_PRESERVE_ORDER) : NULL;
	json_decref(doc);
	return text;
}

/* SCRUB_FILE on every member in service (the directory taken under
 * a->lock, written without it, as array_counters_flush() does). */
static void save_result(struct array *a)
{
	if (a->readonly)
		return;
	pthread_mutex_lock(&sc_lock);
	char *text = result_encode_locked();
	pthread_mutex_unlock(&sc_lock);
	for (uint32_t j = 0; text && j < a->width; j++) {
		pthread_mutex_lock(&a->lock);
		int dfd = member_online(a, j) && a->m[j].dirfd >= 0 ? fcntl(a->m[j].dirfd, F_DUPFD_CLOEXEC, 0) : -1;
		pthread_mutex_unlock(&a->lock);
		if (dfd < 0)
			continue;
		int r = 0, fd = openat(dfd, SCRUB_TMP, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			r = -errno;
		if (fd >= 0 && (r = io_pwrite(fd, text, strlen(text), 0)) == 0 && fdatasync(fd) < 0)
			r = -errno;
		if (fd >= 0)
			close(fd);
		if (r == 0 && renameat(dfd, SCRUB_TMP, dfd, SCRUB_FILE) < 0)
			r = -errno;
		if (r < 0) {
			unlinkat(dfd, SCRUB_TMP, 0);
			log_warn("member %u '%s': cannot write the scrub's result (%s): %s; status shows it until the unmount",
				 j, a->m[j].path, SCRUB_FILE, strerror(-r));
		}
		close(dfd);
	}
	free(text);
}

static uint64_t get_u64(json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));
	return v > 0 ? (uint64_t)v : 0;
}

/* SCRUB_FILE of member j, parsed, or NULL (none, or not one we read). */
static json_t *result_read(struct array *a, uint32_t j)
{
	int fd = openat(a->m[j].dirfd, SCRUB_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *buf = malloc(RESULT_MAX + 1);
	ssize_t n = buf ? io_pread(fd, buf, RESULT_MAX, 0) : -ENOMEM;
	close(fd);
	json_t *doc = NULL;
	if (n > 0) {
		buf[n] = '\0';
		doc = json_loads(buf, 0, NULL);
	}
	free(buf);
	if (doc && (json_integer_value(json_object_get(doc, "version")) != 1 ||
		    !json_is_string(json_object_get(doc, "format")) ||
		    strcmp(json_string_value(json_object_get(doc, "format")), "raidfs-scrub"))) {
		json_decref(doc);
		doc = NULL;
	}
	if (!doc && n > 0)
		log_warn("member %u '%s': its %s cannot be read: the last scrub's result is taken from the others", j,
			 a->m[j].path, SCRUB_FILE);
	return doc;
}

void scrub_load(struct array *a)
{
	json_t *best = NULL;
	for (uint32_t j = 0; j < a->width; j++) {
		if (!member_online(a, j) || a->m[j].dirfd < 0)
			continue;
		json_t *doc = result_read(a, j);
		if (doc && (!best || get_u64(doc, "ended") > get_u64(best, "ended"))) {
			json_decref(best);
			best = doc;
		} else {
			json_decref(doc);
		}
	}
	if (!best)
		return;
	pthread_mutex_lock(&sc_lock);
	if (!info.active) {
		memset(&info, 0, sizeof(info));
		info.ended = (int64_t)get_u64(best, "ended");
		info.repair = json_is_true(json_object_get(best, "repair"));
		const char *res = json_string_value(json_object_get(best, "result"));
		snprintf(info.last_result, sizeof(info.last_result), "%s", res ? res : "");
		info.files_done = get_u64(best, "files_done");
		info.files_total = get_u64(best, "files_total");
		info.bytes = get_u64(best, "bytes");
		info.mismatches = get_u64(best, "mismatches");
		info.repaired = get_u64(best, "repaired");
		info.errors = get_u64(best, "errors");
		info.missing = get_u64(best, "missing");
		info.restored = get_u64(best, "restored");
		info.bad_files = get_u64(best, "bad_files");
		bad_n = 0;
		json_t *files = json_object_get(best, "files"), *f;
		size_t i;
		json_array_foreach(files, i, f) {
			const char *path = json_string_value(json_object_get(f, "path"));
			const char *kind = json_string_value(json_object_get(f, "kind"));
			struct scrub_bad_file *b = &bad_list[bad_n];
			if (bad_n == SCRUB_LIST_FILES || !path || !kind)
				continue;
			memset(b, 0, sizeof(*b));
			for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
				if (!strcmp(kind, kinds[k]))
					b->kind = kinds[k];
			if (!b->kind)
				continue;
			snprintf(b->path, sizeof(b->path), "%s", path);
			b->count = get_u64(f, "count");
			b->fixed = get_u64(f, "fixed");
			json_t *st = json_object_get(f, "stripes"), *v;
			size_t k;
			json_array_foreach(st, k, v) {
				if (b->nstripes < SCRUB_LIST_STRIPES && json_integer_value(v) >= 0)
					b->stripe[b->nstripes++] = (uint64_t)json_integer_value(v);
			}
			bad_n++;
		}
	}
	pthread_mutex_unlock(&sc_lock);
	json_decref(best);
}

/* ---------------------------------------------------------------- thread */

static void *scrub_thread(void *arg)
{
	struct array *a = arg;
	bool fix = info.repair;
	array_watch_user_io(a, true);
	log_info("array '%s': scrub started%s", a->sb.name, fix ? " (repairing mismatches)" : "");
	bool done = walk(a, ".", true, fix) && walk(a, ".", false, fix);
	array_watch_user_io(a, false);
	char msg[512];
	pthread_mutex_lock(&sc_lock);
	const char *why = done ? "finished" : stop_why ? stop_why : "stopped";
	char sz[32];
	int len = snprintf(msg, sizeof(msg), "%s: %" PRIu64 " of %" PRIu64 " files, %s compared in %.2f s; %" PRIu64
			   " stripe%s did not match",
			   why, info.files_done, info.files_total, fmt_size(info.bytes, sz, sizeof(sz)),
			   (util_now_ms() - t_start_ms) / 1000.0, info.mismatches, info.mismatches == 1 ? "" : "s");
	if (fix && info.mismatches)
		len += snprintf(msg + len, sizeof(msg) - len, ", %" PRIu64 " recomputed", info.repaired);
	if (info.missing)
		len += snprintf(msg + len, sizeof(msg) - len, "; %" PRIu64 " shard%s missing%s", info.missing,
				info.missing == 1 ? "" : "s", fix ? "" : " (see the log)");
	if (info.missing && fix)
		len += snprintf(msg + len, sizeof(msg) - len, ", %" PRIu64 " put back", info.restored);
	if (info.errors)
		snprintf(msg + len, sizeof(msg) - len, "; %" PRIu64 " file%s could not be compared (see the log)",
			 info.errors, info.errors == 1 ? "" : "s");
	snprintf(info.last_result, sizeof(info.last_result), "%s", msg);
	info.active = false;
	info.ended = (int64_t)time(NULL);
	info.current[0] = '\0';
	char detail[256];
	snprintf(detail, sizeof(detail), "result=%s files=%" PRIu64 " bytes=%" PRIu64 " mismatches=%" PRIu64
		 " repaired=%" PRIu64 " errors=%" PRIu64 " missing=%" PRIu64 " restored=%" PRIu64 " bad_files=%" PRIu64,
		 done ? "finished" : "stopped", info.files_done, info.bytes, info.mismatches, info.repaired,
		 info.errors, info.missing, info.restored, info.bad_files);
	pthread_mutex_unlock(&sc_lock);
	if (info.mismatches || info.errors || info.missing)
		log_warn("array '%s': scrub %s", a->sb.name, msg);
	else
		log_info("array '%s': scrub %s", a->sb.name, msg);
	save_result(a);
	event_post_detail(a, "ScrubFinished", -1, detail);
	return NULL;
}

int scrub_start(struct array *a, bool fix, char *err, size_t errlen)
{
	struct rebuild_info ri;
	rebuild_get(&ri);
	if (array_state(a) != ARRAY_OPTIMAL || ri.active) {
		snprintf(err, errlen, "the array is %s: a scrub compares complete stripes; rebuild first",
			 ri.active ? "being rebuilt" : array_state_name(array_state(a)));
		return -EBUSY;
	}
	if (fix && !array_writable(a)) {
		snprintf(err, errlen, "the array is mounted read-only: 'raidfs scrub' without --repair only compares");
		return -EROFS;
	}
	pthread_mutex_lock(&sc_lock);
	if (!info.active && sc_live) {
		/* the last one ended: joined here, claimed under the lock so
		 * that scrub_stop() does not join it too */
		pthread_t old = sc_thread;
		sc_live = false;
		pthread_mutex_unlock(&sc_lock);
		pthread_join(old, NULL);
		pthread_mutex_lock(&sc_lock);
	}
	if (info.active || sc_live || sc_closed) {
		pthread_mutex_unlock(&sc_lock);
		snprintf(err, errlen, sc_closed ? "the array is being unmounted"
						: "a scrub is already running ('raidfs scrub MOUNTPOINT stop' stops it)");
		return -EBUSY;
	}
	memset(&info, 0, sizeof(info));
	bad_n = 0;
	info.active = true;
	info.repair = fix;
	stop_why = NULL;
	t_start_ms = util_now_ms();
	__atomic_store_n(&sc_stop, false, __ATOMIC_RELEASE);
	if (pthread_create(&sc_thread, NULL, scrub_thread, a) != 0) {
		info.active = false;
		pthread_mutex_unlock(&sc_lock);
		snprintf(err, errlen, "cannot start the scrub thread");
		return -EAGAIN;
	}
	sc_live = true;
	pthread_mutex_unlock(&sc_lock);
	return 0;
}

void scrub_request_stop(void)
{
	__atomic_store_n(&sc_stop, true, __ATOMIC_RELEASE);
}

void scrub_stop(void)
{
	pthread_mutex_lock(&sc_lock);
	__atomic_store_n(&sc_stop, true, __ATOMIC_RELEASE);
	sc_closed = true;
	bool live = sc_live;
	pthread_t t = sc_thread;
	sc_live = false;
	pthread_mutex_unlock(&sc_lock);
	if (live)
		pthread_join(t, NULL);
}

void scrub_get(struct scrub_info *out)
{
	pthread_mutex_lock(&sc_lock);
	*out = info;
	pthread_mutex_unlock(&sc_lock);
}

unsigned scrub_bad_list(struct scrub_bad_file *out, unsigned max)
{
	pthread_mutex_lock(&sc_lock);
	unsigned n = bad_n < max ? bad_n : max;
	memcpy(out, bad_list, n * sizeof(*out));
	pthread_mutex_unlock(&sc_lock);
	return n;
}

bool scrub_unresolved(const struct scrub_info *si)
{
	return !si->active && (si->mismatches > si->repaired || si->errors || si->missing > si->restored);
}
