/*
 * hidden.c - notes of libfuse's hidden names (see hidden.h).
 *
 * .raidfs/hidden/<16 hex digits> on each member in service: the digits are
 * a 64-bit FNV-1a hash of the relative path, the content is the file's id
 * (16 hex digits), a space and the path (no NUL, no newline).  Two paths
 * with one hash share a note: the later one overwrites it, and the earlier
 * name, should it outlive a crash, stays (as it would without notes).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "hidden.h"
#include "superblock.h"
#include "util.h"

#define HIDDEN_DIR SB_DIR "/hidden"

static void note_name(const char *relpath, char *buf, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (const unsigned char *p = (const unsigned char *)relpath; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	snprintf(buf, len, HIDDEN_DIR "/%016" PRIx64, h);
}

static int mark_on(struct array *a, uint32_t j, const char *note, const char *content)
{
	int dirfd = a->m[j].dirfd;
	int fd = openat(dirfd, note, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 && errno == ENOENT && (mkdirat(dirfd, HIDDEN_DIR, 0700) == 0 || errno == EEXIST))
		fd = openat(dirfd, note, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	size_t len = strlen(content);
	ssize_t n = write(fd, content, len);
	int err = n == (ssize_t)len ? 0 : n < 0 ? -errno : -ENOSPC;
	close(fd);
	if (err)
		unlinkat(dirfd, note, 0);	/* (a path cut short would name another file) */
	return err;
}

int hidden_mark(struct array *a, const char *relpath, uint64_t id)
{
	char note[64], content[PATH_MAX + 24];
	note_name(relpath, note, sizeof(note));
	snprintf(content, sizeof(content), "%016" PRIx64 " %s", id, relpath);
	int ret = -EIO;
	for (uint32_t j = 0; j < a->width; j++) {
		if (!member_online(a, j))
			continue;
		int r = mark_on(a, j, note, content);
		if (r == 0)
			ret = 0;
		else if (ret < 0)
			ret = r;
	}
	if (ret < 0)
		log_warn("cannot note the hidden name '%s' on any member (%s): should the daemon stop before the "
			 "file's last close, the name stays (remove it by hand)", relpath, strerror(-ret));
	return ret;
}

void hidden_unmark(struct array *a, const char *relpath)
{
	char note[64];
	note_name(relpath, note, sizeof(note));
	for (uint32_t j = 0; j < a->width; j++)
		if (member_online(a, j))
			unlinkat(a->m[j].dirfd, note, 0);
}

/* The id and the path a note holds (the path into buf): false when it
 * cannot be read or its path does not hash to the note's name (a note cut
 * short: ignored) */
static bool read_note(int dirfd, const char *name, uint64_t *id, char *buf, size_t len)
{
	char note[sizeof(HIDDEN_DIR) + NAME_MAX + 2], want[64], content[PATH_MAX + 24];
	snprintf(note, sizeof(note), HIDDEN_DIR "/%s", name);
	int fd = openat(dirfd, note, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, content, sizeof(content) - 1);
	close(fd);
	if (n < 18 || content[16] != ' ')
		return false;
	content[n] = '\0';
	char *end;
	*id = strtoull(content, &end, 16);
	if (end != content + 16 || strlen(content + 17) >= len)
		return false;
	strcpy(buf, content + 17);
	note_name(buf, want, sizeof(want));
	return strcmp(want, note) == 0;
}

void hidden_each(struct array *a, void (*fn)(const char *relpath, uint64_t id, void *arg), void *arg)
{
	char **seen = NULL;
	size_t nseen = 0, cap = 0;
	for (uint32_t j = 0; j < a->width; j++) {
		if (!member_online(a, j))
			continue;
		DIR *d = opendir_at(a->m[j].dirfd, HIDDEN_DIR);
		if (!d)
			continue;
		struct dirent *e;
		char path[PATH_MAX];
		uint64_t id;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.' || !read_note(a->m[j].dirfd, e->d_name, &id, path, sizeof(path)))
				continue;
			bool dup = false;
			for (size_t i = 0; i < nseen && !dup; i++)
				dup = strcmp(seen[i], path) == 0;
			if (dup)
				continue;
			if (!util_names_add(&seen, &nseen, &cap, path)) {
				log_err("array '%s': out of memory listing hidden names: '%s' is left as it is",
					a->sb.name, path);
				continue;
			}
			fn(seen[nseen - 1], id, arg);
		}
		closedir(d);
	}
	for (size_t i = 0; i < nseen; i++)
		free(seen[i]);
	free(seen);
}
