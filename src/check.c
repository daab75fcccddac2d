/*
 * check.c - `raidfs check`: offline verification of an array.
 *
 * Walks the namespace of the primary member and, for every regular file,
 * checks that each present member has its shard, that the metadata copies
 * are valid and agree (id, layout, size), that no shard holds bytes past
 * its length for the logical size, and that every stripe's redundancy
 * matches its data.  Directories and other entries must exist on every
 * present member.  Nothing is modified.
 *
 * Exit status: 0 clean, 1 inconsistencies found, 2 could not run.
 */
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "file.h"
#include "stripe.h"
#include "util.h"

struct check {
	struct array *a;
	long files, dirs, others, problems;
	const char *cur;
};

static void problem(struct check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct check *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("raidfs check: ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
	c->problems++;
}

static void bad_row(void *ctx, uint64_t stripe, uint32_t group, uint64_t members)
{
	struct check *c = ctx;
	if (!members)
		problem(c, "file '%s': stripe %" PRIu64 " group %u: redundancy does not match the data",
			c->cur, stripe, group);
	for (uint32_t j = 0; j < LAYOUT_MAX_WIDTH; j++)
		if (members >> j & 1)
			problem(c, "file '%s': stripe %" PRIu64 " group %u: the chunk on member %u '%s' (shard offset %" PRIu64
				") does not match its checksum (a scrub with --repair rebuilds it from the others)",
				c->cur, stripe, group, j, c->a->m[j].path, stripe * c->a->lay.chunk);
}

static void check_file(struct check *c, const char *path)
{
	struct array *a = c->a;
	int fds[LAYOUT_MAX_WIDTH];
	struct file_meta metas[LAYOUT_MAX_WIDTH];
	bool valid[LAYOUT_MAX_WIDTH];
	struct file_meta best;
	int nvalid;

	c->files++;
	c->cur = path;
	for (uint32_t j = 0; j < LAYOUT_MAX_WIDTH; j++)
		fds[j] = -1;
	for (uint32_t j = 0; j < a->width; j++) {
		valid[j] = false;
		if (!member_present(a, j))
			continue;
		fds[j] = openat(a->m[j].dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fds[j] < 0) {
			problem(c, "file '%s': shard missing on member %u '%s'%s", path, j, a->m[j].path,
				(int)j == a->primary || a->lay.m == 0 ? ""
						       : " (mounted, 'raidfs scrub MOUNTPOINT --repair' puts it back)");
			continue;
		}
		valid[j] = meta_get(fds[j], &metas[j]) == 0;
	}
	if (rfile_best_meta(a, fds, &best, &nvalid) < 0) {
		/* empty shards without metadata: an interrupted create, which
		 * the next mount (dirty log) or open adopts */
		if (!rfile_shards_empty(a, fds))
			problem(c, "file '%s': no valid metadata on any member: the file cannot be read; delete it through the mount", path);
		goto out;
	}
	for (uint32_t j = 0; j < a->width; j++) {
		if (fds[j] < 0 || valid[j])
			continue;
		int r = meta_get(fds[j], &metas[j]);
		problem(c, "file '%s': metadata on member %u '%s' is %s (mounting and opening the file rewrites it)",
			path, j, a->m[j].path,
			r == -ENODATA ? "missing" : r == -EBADMSG ? "corrupt (checksum)" : strerror(-r));
	}
	for (uint32_t j = 0; j < a->width; j++) {
		if (!valid[j])
			continue;
		const struct file_meta *m = &metas[j];
		if (m->id != best.id || m->level != best.level || m->chunk != best.chunk ||
		    m->rotation != best.rotation || m->groups != best.groups)
			problem(c, "file '%s': metadata on member %u disagrees with the other members (id or layout)", path, j);
		else if (m->size != best.size)
			problem(c, "file '%s': size on member %u is %" PRIu64 ", others say %" PRIu64,
				path, j, m->size, best.size);
		if (m->index != j)
			problem(c, "file '%s': shard on member %u claims to be member %u's", path, j, m->index);
	}
	struct rfile rf;
	if (rfile_private(a, fds, &best, &rf) < 0) {
		problem(c, "file '%s': invalid layout in metadata", path);
		goto out;
	}
	uint64_t lost = 0, cut = 0;
	if (best.flags & META_F_EXACT)
		cut = rfile_short_shards(a, &rf.lay, fds, best.size, &lost);
	for (uint32_t j = 0; j < a->width; j++) {
		struct stat st;
		if (fds[j] < 0 || fstat(fds[j], &st) < 0)
			continue;
		uint64_t want = layout_shard_size(&rf.lay, j, best.size);
		if ((uint64_t)st.st_size > want)
			problem(c, "file '%s': shard on member %u is %" PRIu64 " bytes, longer than the %" PRIu64 " its size allows",
				path, j, (uint64_t)st.st_size, want);
		else if (cut >> j & 1)
			problem(c, "file '%s': shard on member %u is %" PRIu64 " bytes, shorter than the %" PRIu64
				" its size needs: data lost on that member (opening the file on the mount rebuilds it)",
				path, j, (uint64_t)st.st_size, want);
	}
	if (lost)
		problem(c, "file '%s': shards on %d members are shorter than its size needs, more than %s can rebuild "
			"from: data written before a crash did not reach the disks (it reads as zeros; opening the "
			"file on the mount recomputes its redundancy)", path, __builtin_popcountll(lost),
			layout_level_name(rf.lay.level));
	rf.damaged = cut;	/* (not compared below) */
	long bad = stripe_verify(&rf, bad_row, c);
	if (bad < 0)
		problem(c, "file '%s': cannot verify: %s", path, strerror((int)-bad));
	rfile_private_end(&rf);
out:
	for (uint32_t j = 0; j < a->width; j++)
		if (fds[j] >= 0)
			close(fds[j]);
}

static void check_dir(struct check *c, const char *path)
{
	struct array *a = c->a;
	int fd = openat(a->m[a->primary].dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		problem(c, "directory '%s': cannot open on member %d: %s", path, a->primary, strerror(errno));
		return;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	c->dirs++;
	struct dirent *e;
	bool root = strcmp(path, ".") == 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (root && !strcmp(e->d_name, SB_DIR))
			continue;
		char *child;
		if (asprintf(&child, "%s/%s", path, e->d_name) < 0)
			continue;
		const char *rel = root ? child + 2 : child;
		struct stat st;
		if (fstatat(a->m[a->primary].dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			free(child);
			continue;
		}
		for (uint32_t j = 0; j < a->width; j++) {
			struct stat o;
			if (!member_present(a, j) || (int)j == a->primary || S_ISREG(st.st_mode))
				continue;
			if (fstatat(a->m[j].dirfd, rel, &o, AT_SYMLINK_NOFOLLOW) < 0)
				problem(c, "'%s' is missing on member %u '%s'", rel, j, a->m[j].path);
			else if ((o.st_mode & S_IFMT) != (st.st_mode & S_IFMT))
				problem(c, "'%s' has a different type on member %u '%s'", rel, j, a->m[j].path);
		}
		if (S_ISDIR(st.st_mode))
			check_dir(c, rel);
		else if (S_ISREG(st.st_mode))
			check_file(c, rel);
		else
			c->others++;
		free(child);
	}
	closedir(d);
}

int check_main(char *members)
{
	char *paths[LAYOUT_MAX_WIDTH + 1];
	int n = 0;
	char err[2048];
	/* (array_assemble() keeps keep_failed, readonly and mountpoint; a
	 * check writes nothing, not even a format upgrade) */
	struct array a = { .readonly = true };

	for (char *save = NULL, *p = strtok_r(members, ":", &save); p && n <= LAYOUT_MAX_WIDTH;
	     p = strtok_r(NULL, ":", &save))
		paths[n++] = p;
	if (n == 0 || n > LAYOUT_MAX_WIDTH) {
		fprintf(stderr, "raidfs: check: give the member directories as DIR[:DIR...]\n");
		return 2;
	}
	if (array_assemble(&a, paths, n, true, err, sizeof(err)) < 0) {
		fprintf(stderr, "raidfs: cannot check: %s\n", err);
		return 2;
	}
	struct check c = { .a = &a };
	for (int u = 0; u < a.nunusable; u++)
		problem(&c, "member '%s' is not usable: %s", a.unusable_path[u], a.unusable_why[u]);
	for (uint32_t j = 0; j < a.width; j++)
		if (!member_present(&a, j))
			problem(&c, "member %u ('%s') is %s: the array is degraded; redundancy is checked where it is complete",
				j, a.m[j].path, a.m[j].stale ? "stale" : "missing");
	/* an unclean shutdown leaves files in the dirty log */
	for (uint32_t j = 0; j < a.width; j++) {
		if (!member_present(&a, j))
			continue;
		int fd = openat(a.m[j].dirfd, SB_DIRTY_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		if (!d) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		long dirty = 0;
		struct dirent *e;
		while ((e = readdir(d)))
			dirty += e->d_name[0] != '.';
		closedir(d);
		if (dirty) {
			problem(&c, "member %u: %ld file%s in the dirty log (the array was not stopped cleanly; mounting it resyncs them)",
				j, dirty, dirty == 1 ? "" : "s");
			break;
		}
	}
	check_dir(&c, ".");
	printf("raidfs check: %ld file%s, %ld director%s, %ld other: %s",
	       c.files, c.files == 1 ? "" : "s", c.dirs, c.dirs == 1 ? "y" : "ies", c.others,
	       c.problems ? "" : "clean\n");
	if (c.problems)
		printf("%ld problem%s found\n", c.problems, c.problems == 1 ? "" : "s");
	array_close(&a);
	return c.problems ? 1 : 0;
}
