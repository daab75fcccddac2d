/*
 * nsintent.c - intent records of namespace operations (see nsintent.h).
 *
 * .raidfs/ns-intent on each member: NSI_SLOTS slots of NSI_SLOT bytes.  A
 * slot holds a 64-byte header (magic "RNSI", kind, renameat2 flags, the
 * two path lengths, a sequence number, crc32 of the header and paths) and
 * the two relative paths; a slot whose magic is not there is free.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "meta.h"
#include "nsintent.h"
#include "parity.h"
#include "superblock.h"
#include "util.h"

#define NSI_FILE SB_DIR "/ns-intent"
#define NSI_MAGIC 0x49534e52u	/* "RNSI" */
#define NSI_HDR 64u
#define NSI_PATH 4096u
#define NSI_SLOT (NSI_HDR + 2 * NSI_PATH)
#define NSI_SLOTS 64

static struct {
	pthread_mutex_t lock;
	pthread_cond_t freed;
	uint64_t busy;			/* bit s: slot s in use */
	uint64_t seq;
	int fd[NSI_SLOTS][LAYOUT_MAX_WIDTH];	/* an operation's files, open until its end (-1: none) */
	int emptied[LAYOUT_MAX_WIDTH];	/* dirfd + 1 of the member directory whose file was
					 * emptied; 0 once it is out of service */
	bool warned;
	bool recovered;			/* the mount read the last daemon's records */
} S = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.freed = PTHREAD_COND_INITIALIZER,
};

static void encode(uint8_t *b, enum nsi_kind kind, unsigned flags, uint64_t seq, const char *p1, size_t l1,
		   const char *p2, size_t l2)
{
	memset(b, 0, NSI_HDR);
	put_le32(b, NSI_MAGIC);
	put_le32(b + 4, kind);
	put_le32(b + 8, flags);
	put_le32(b + 12, (uint32_t)l1);
	put_le32(b + 16, (uint32_t)l2);
	put_le64(b + 24, seq);
	memcpy(b + NSI_HDR, p1, l1);
	memcpy(b + NSI_HDR + l1, p2, l2);
	uint32_t crc = parity_crc32(0, b, 60);
	put_le32(b + 60, parity_crc32(crc, b + NSI_HDR, l1 + l2));
}

/* The member's intent file, opened for one operation (not kept open: an
 * open file would keep the member's filesystem busy, for a remount
 * read-only or an unmount after it left the array).  Emptied at its first
 * use by this daemon - the mount settled the last daemon's records, and a
 * member that joins later may hold records from before it left - under
 * the lock, so no other operation's record is there yet.  Lock held. */
static int open_locked(struct array *a, uint32_t j, bool *later)
{
	int dirfd = a->m[j].dirfd;
	*later = false;
	if (!member_writable(a, j)) {
		S.emptied[j] = 0;	/* (out of service: emptied again when back) */
		return -1;
	}
	if (S.emptied[j] == dirfd + 1) {
		*later = true;	/* (opened by the caller, without the lock) */
		return -1;
	}
	S.emptied[j] = dirfd + 1;
	return openat(dirfd, NSI_FILE, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
}

int nsintent_begin(struct array *a, enum nsi_kind kind, const char *p1, const char *p2, unsigned flags)
{
	size_t l1 = strlen(p1), l2 = p2 ? strlen(p2) : 0;
	if (a->width < 2 || l1 > NSI_PATH || l2 > NSI_PATH)
		return -1;
	uint8_t b[NSI_SLOT];
	pthread_mutex_lock(&S.lock);
	while (S.busy == ~0ull)
		pthread_cond_wait(&S.freed, &S.lock);
	int slot = __builtin_ctzll(~S.busy);
	S.busy |= 1ull << slot;
	uint64_t seq = ++S.seq;
	int *fds = S.fd[slot], n = 0;
	bool later[LAYOUT_MAX_WIDTH];
	for (uint32_t j = 0; j < a->width; j++)
		fds[j] = open_locked(a, j, &later[j]);
	pthread_mutex_unlock(&S.lock);

	encode(b, kind, flags, seq, p1, l1, p2 ? p2 : "", l2);
	for (uint32_t j = 0; j < a->width; j++) {
		if (later[j])
			fds[j] = openat(a->m[j].dirfd, NSI_FILE, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fds[j] >= 0 && io_pwrite(fds[j], b, NSI_HDR + l1 + l2, (off_t)slot * NSI_SLOT) == 0)
			n++;
		else if (fds[j] >= 0)
			close(fds[j]), fds[j] = -1;
	}
	if (n == 0) {
		pthread_mutex_lock(&S.lock);
		S.busy &= ~(1ull << slot);
		bool warn = !S.warned;
		S.warned = true;
		pthread_cond_signal(&S.freed);
		pthread_mutex_unlock(&S.lock);
		if (warn)
			log_warn("cannot write the namespace intent file '%s' on any member (is each member's .raidfs directory there and writable?): until it can be, a crash in the middle of a rename or removal may leave it done on some members only",
				 NSI_FILE);
		return -1;
	}
	return slot;
}

void nsintent_refresh(struct array *a)
{
	pthread_mutex_lock(&S.lock);
	/* (not before the mount read them: an offline mount reads them
	 * when it comes online) */
	for (uint32_t j = 0; S.recovered && j < a->width; j++) {
		bool later;
		int fd = open_locked(a, j, &later);
		if (fd >= 0)
			close(fd);
	}
	pthread_mutex_unlock(&S.lock);
}

void nsintent_end(struct array *a, int slot)
{
	if (slot < 0)
		return;
	static const uint8_t zero[4];
	int *fds = S.fd[slot];	/* (this operation's own) */
	for (uint32_t j = 0; j < a->width; j++)
		if (fds[j] >= 0) {
			io_pwrite(fds[j], zero, sizeof(zero), (off_t)slot * NSI_SLOT);
			close(fds[j]);
			fds[j] = -1;
		}
	pthread_mutex_lock(&S.lock);
	S.busy &= ~(1ull << slot);
	pthread_cond_signal(&S.freed);
	pthread_mutex_unlock(&S.lock);
}

/* ------------------------------------------------------------- recovery */

struct rec {
	enum nsi_kind kind;
	unsigned flags;
	uint64_t seq;
	char p1[NSI_PATH + 1], p2[NSI_PATH + 1];
};

static bool decode(const uint8_t *b, size_t n, struct rec *r)
{
	if (n < NSI_HDR || get_le32(b) != NSI_MAGIC)
		return false;
	uint32_t l1 = get_le32(b + 12), l2 = get_le32(b + 16);
	if (l1 == 0 || l1 > NSI_PATH || l2 > NSI_PATH || NSI_HDR + l1 + l2 > n)
		return false;
	uint32_t crc = parity_crc32(0, b, 60);
	if (get_le32(b + 60) != parity_crc32(crc, b + NSI_HDR, l1 + l2))
		return false;
	r->kind = get_le32(b + 4);
	r->flags = get_le32(b + 8);
	r->seq = get_le64(b + 24);
	memcpy(r->p1, b + NSI_HDR, l1);
	r->p1[l1] = '\0';
	memcpy(r->p2, b + NSI_HDR + l1, l2);
	r->p2[l2] = '\0';
	return r->kind >= NSI_UNLINK && r->kind <= NSI_MAKE && ((r->kind != NSI_RENAME && r->kind != NSI_LINK) || l2);
}

static bool has(struct array *a, uint32_t j, const char *p, struct stat *st)
{
	struct stat tmp;
	return fstatat(a->m[j].dirfd, p, st ? st : &tmp, AT_SYMLINK_NOFOLLOW) == 0;
}

/* the file id of a regular file at p on member j, 0 if none */
static uint64_t file_id(struct array *a, uint32_t j, const char *p)
{
	int fd = openat(a->m[j].dirfd, p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct file_meta fm;
	uint64_t id = fd >= 0 && meta_get(fd, &fm) == 0 ? fm.id : 0;
	if (fd >= 0)
		close(fd);
	return id;
}

/* Make p on member j what it is on member from (a directory, symlink,
 * FIFO, socket or device node that only some members got). */
static bool make_like(struct array *a, uint32_t from, uint32_t j, const char *p, const struct stat *st)
{
	int dfd = a->m[j].dirfd;
	bool ok = false;
	if (S_ISDIR(st->st_mode)) {
		ok = mkdirat(dfd, p, st->st_mode & 07777) == 0;
	} else if (S_ISLNK(st->st_mode)) {
		char t[PATH_MAX];
		ssize_t n = readlinkat(a->m[from].dirfd, p, t, sizeof(t) - 1);
		if (n >= 0) {
			t[n] = '\0';
			ok = symlinkat(t, dfd, p) == 0;
		}
	} else if (S_ISFIFO(st->st_mode) || S_ISSOCK(st->st_mode) || S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
		ok = mknodat(dfd, p, st->st_mode, st->st_rdev) == 0;
	}
	if (ok) {
		fchownat(dfd, p, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW);
		if (!S_ISLNK(st->st_mode))
			fchmodat(dfd, p, st->st_mode & 07777, 0);
	}
	return ok;
}

/* One recorded operation, completed on the members that lack it: how
 * many members were changed. */
static int complete(struct array *a, const struct rec *r)
{
	bool on[LAYOUT_MAX_WIDTH], any = false;
	uint32_t done_on = 0;
	struct stat st;
	int changed = 0;
	for (uint32_t j = 0; j < a->width; j++)
		on[j] = member_online(a, j);
	switch (r->kind) {
	case NSI_UNLINK:
	case NSI_RMDIR:
		/* done on a member that no longer has the name */
		for (uint32_t j = 0; j < a->width; j++)
			any |= on[j] && !has(a, j, r->p1, NULL);
		for (uint32_t j = 0; any && j < a->width; j++)
			if (on[j] && has(a, j, r->p1, NULL))
				changed += unlinkat(a->m[j].dirfd, r->p1, r->kind == NSI_RMDIR ? AT_REMOVEDIR : 0) == 0;
		break;
	case NSI_LINK:
		/* done on a member that has the new name */
		for (uint32_t j = 0; j < a->width; j++)
			any |= on[j] && has(a, j, r->p2, NULL);
		for (uint32_t j = 0; any && j < a->width; j++)
			if (on[j] && !has(a, j, r->p2, NULL) && has(a, j, r->p1, NULL))
				changed += linkat(a->m[j].dirfd, r->p1, a->m[j].dirfd, r->p2, 0) == 0;
		break;
	case NSI_MAKE:
		for (uint32_t j = 0; j < a->width && !any; j++)
			if (on[j] && has(a, j, r->p1, &st)) {
				any = true;
				done_on = j;
			}
		for (uint32_t j = 0; any && j < a->width; j++)
			if (on[j] && !has(a, j, r->p1, NULL))
				changed += make_like(a, done_on, j, r->p1, &st);
		break;
	case NSI_RENAME:
		if (r->flags & RENAME_EXCHANGE) {
			/* both names stay: done where the regular files under them
			 * are the other way round than on the first member */
			uint32_t ref = a->width;
			for (uint32_t j = 0; j < a->width && ref == a->width; j++)
				if (on[j])
					ref = j;
			uint64_t f = ref < a->width ? file_id(a, ref, r->p1) : 0;
			uint64_t t = ref < a->width ? file_id(a, ref, r->p2) : 0;
			if (!f || !t || f == t) {
				log_warn("an exchange of '%s' and '%s' was interrupted by a crash; it is left as the members have it (run 'raidfs check')",
					 r->p1, r->p2);
				break;
			}
			for (uint32_t j = ref + 1; j < a->width; j++)
				if (on[j] && file_id(a, j, r->p1) == t && file_id(a, j, r->p2) == f)
					changed += renameat2(a->m[j].dirfd, r->p1, a->m[j].dirfd, r->p2, RENAME_EXCHANGE) == 0;
			/* (those like ref were either all done, or ref was not
			 * and then none was: the primary goes first) */
			break;
		}
		/* done on a member that no longer has the old name */
		for (uint32_t j = 0; j < a->width; j++)
			any |= on[j] && !has(a, j, r->p1, NULL);
		for (uint32_t j = 0; any && j < a->width; j++)
			if (on[j] && has(a, j, r->p1, NULL))
				changed += renameat2(a->m[j].dirfd, r->p1, a->m[j].dirfd, r->p2, 0) == 0;
		break;
	}
	return changed;
}

static int cmp_seq(const void *x, const void *y)
{
	const struct rec *a = x, *b = y;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

void nsintent_recover(struct array *a)
{
	static const char *const names[] = { "", "unlink", "rmdir", "rename", "link", "create" };
	pthread_mutex_lock(&S.lock);
	S.recovered = true;
	pthread_mutex_unlock(&S.lock);
	struct rec *recs = NULL;
	size_t n = 0, cap = 0;
	uint8_t *b = malloc(NSI_SLOT);
	if (!b)
		return;
	for (uint32_t j = 0; j < a->width; j++) {
		if (!member_online(a, j))
			continue;
		int fd = openat(a->m[j].dirfd, NSI_FILE, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		for (int s = 0; s < NSI_SLOTS; s++) {
			ssize_t got = io_pread(fd, b, NSI_SLOT, (off_t)s * NSI_SLOT);
			struct rec r;
			if (got <= 0 || !decode(b, (size_t)got, &r))
				continue;
			bool seen = false;
			for (size_t i = 0; i < n && !seen; i++)
				seen = recs[i].seq == r.seq && recs[i].kind == r.kind && !strcmp(recs[i].p1, r.p1);
			if (seen)
				continue;
			if (UTIL_GROW(recs, cap, n + 1) < 0) {
				log_err("array '%s': out of memory reading the namespace intent log: the operation on '%s' is not completed",
					a->sb.name, r.p1);
				continue;
			}
			recs[n++] = r;
		}
		close(fd);
	}
	free(b);
	qsort(recs, n, sizeof(*recs), cmp_seq);
	/* (members out of service miss these changes: their re-add walks) */
	if (n && array_note_write(a) < 0) {
		log_err("array '%s': %zu namespace operation%s interrupted by a crash not completed: the superblocks cannot be written; the next mount tries again",
			a->sb.name, n, n == 1 ? "" : "s");
		free(recs);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		int c = complete(a, &recs[i]);
		if (c) {
			char to[NSI_PATH + 16] = "";
			if (recs[i].kind == NSI_RENAME || recs[i].kind == NSI_LINK)
				snprintf(to, sizeof(to), " to '%s'", recs[i].p2);
			log_warn("array '%s': a %s of '%s'%s was interrupted by a crash: completed on %d more member%s",
				 a->sb.name, names[recs[i].kind], recs[i].p1, to, c, c == 1 ? "" : "s");
		}
	}
	free(recs);
	/* settled: emptied now (a crash before this daemon's first record
	 * must not find them again once names were created anew) */
	for (uint32_t j = 0; j < a->width; j++) {
		int fd = member_online(a, j) ? openat(a->m[j].dirfd, NSI_FILE, O_WRONLY | O_TRUNC | O_CLOEXEC) : -1;
		if (fd >= 0)
			close(fd);
	}
}
