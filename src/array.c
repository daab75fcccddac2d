/*
 * array.c - create and assemble arrays, member-state bookkeeping, and the
 * dirty-file log (see array.h for the state diagram and the contract).
 */
#include "array.h"
#include "cache.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "counters.h"
#include "meta.h"
#include "nsintent.h"
#include "parity.h"
#include "util.h"

static void errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------ hooks */

/* Call hook `fn` of every registered set that has it. */
#define HOOKS(a, fn, ...) do { \
	for (int h_ = 0; h_ < (a)->nhooks; h_++) \
		if ((a)->hooks[h_]->fn) \
			(a)->hooks[h_]->fn(__VA_ARGS__); \
} while (0)

void array_add_hooks(struct array *a, const struct array_hooks *h)
{
	assert(a->nhooks < ARRAY_MAX_HOOKS);
	a->hooks[a->nhooks++] = h;
}

void array_note_user_io(struct array *a)
{
	if (__atomic_load_n(&a->user_io_watchers, __ATOMIC_RELAXED) > 0) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
		__atomic_store_n(&a->last_user_io_ms, ts.tv_sec * 1000ull + ts.tv_nsec / 1000000,
				 __ATOMIC_RELAXED);
	}
}

void array_watch_user_io(struct array *a, bool on)
{
	__atomic_add_fetch(&a->user_io_watchers, on ? 1 : -1, __ATOMIC_RELAXED);
}

uint64_t array_last_user_io_ms(const struct array *a)
{
	return __atomic_load_n(&a->last_user_io_ms, __ATOMIC_RELAXED);
}

void array_abandon_replace(struct array *a)
{
	HOOKS(a, abandon_replace);
}

void array_redo(struct array *a, const char *path)
{
	HOOKS(a, redo, a, path);
}

void array_data_rewritten(struct array *a, struct rfile *rf, uint64_t off, uint64_t end)
{
	HOOKS(a, data_rewritten, rf, off, end);
}

static bool open_path_of(struct array *a, uint64_t id, char *buf, size_t len)
{
	for (int h = 0; h < a->nhooks; h++)
		if (a->hooks[h]->open_path_of && a->hooks[h]->open_path_of(id, buf, len))
			return true;
	return false;
}

const char *array_state_name(enum array_state s)
{
	switch (s) {
	case ARRAY_OPTIMAL: return "optimal";
	case ARRAY_DEGRADED: return "degraded";
	case ARRAY_FAILED: return "failed";
	}
	return "unknown";
}

int array_absent_count(const struct array *a)
{
	int n = 0;
	for (uint32_t i = 0; i < a->width; i++)
		n += !member_online(a, i);
	return n;
}

/* Worst group: does any redundancy group miss more than it tolerates? */
enum array_state array_state(const struct array *a)
{
	const struct layout *l = &a->lay;
	int absent = 0;
	for (uint32_t g = 0; g < l->groups; g++) {
		uint32_t lost = 0;
		for (uint32_t p = 0; p < l->gw; p++)
			lost += !member_online(a, g * l->gw + p);
		if (lost > l->m)
			return ARRAY_FAILED;
		absent += lost;
	}
	return absent ? ARRAY_DEGRADED : ARRAY_OPTIMAL;
}

/* Some redundancy group has lost as many members as it tolerates (raid6
 * with two gone, raid1 with one copy left, a raid50/60 group at its
 * limit), and none more: one more loss there loses data. */
static bool no_redundancy_left(const struct array *a)
{
	const struct layout *l = &a->lay;
	bool none = false;
	for (uint32_t g = 0; g < l->groups && l->m > 0; g++) {
		uint32_t lost = 0;
		for (uint32_t p = 0; p < l->gw; p++)
			lost += !member_online(a, g * l->gw + p);
		if (lost > l->m)
			return false;	/* (failed) */
		none |= lost == l->m;
	}
	return none;
}

void array_capacity_ratio(const struct array *a, uint32_t *num, uint32_t *den)
{
	*num = layout_data_chunks(&a->lay);
	*den = a->width;
}

/* ---------------------------------------------------------------- create */

/* Can this directory hold user xattrs (our per-file metadata)? */
int array_probe_xattr(int dirfd)
{
	static const char probe[] = ".raidfs-xattr-probe";
	int fd = openat(dirfd, probe, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int ret = 0;
	if (fsetxattr(fd, "user.raidfs.probe", "1", 1, 0) < 0)
		ret = -errno;
	close(fd);
	unlinkat(dirfd, probe, 0);
	return ret;
}

/* Directory `rel` under dirfd holds nothing, or nothing but the
 * directory `sub` (a path under dirfd too, or NULL) holding nothing. */
static bool holds_only_empty(int dirfd, const char *rel, const char *sub)
{
	DIR *d = opendir_at(dirfd, rel);
	if (!d)
		return false;
	struct dirent *e;
	bool only = true;
	while (only && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", rel, e->d_name);
		only = sub && !strcmp(path, sub) && holds_only_empty(dirfd, path, NULL);
	}
	closedir(d);
	return only;
}

bool array_dir_is_empty(int dirfd)
{
	int fd = dup(dirfd);
	if (fd < 0)
		return false;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return false;
	}
	rewinddir(d);
	struct dirent *e;
	bool empty = true;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, "lost+found"))
			continue;
		/* what install_member() makes before the superblock (.raidfs
		 * and its empty dirty log): left by a daemon stopped between */
		if (!strcmp(e->d_name, SB_DIR) && holds_only_empty(dirfd, SB_DIR, SB_DIRTY_DIR))
			continue;
		empty = false;
		break;
	}
	closedir(d);
	return empty;
}

/* The index of an earlier entry of fds[] (open directories, -1 for
 * none) that is the same directory as fds[i], or -1. */
static int given_before(const int *fds, int i)
{
	struct stat x, y;
	for (int k = 0; fds[i] >= 0 && k < i; k++)
		if (fds[k] >= 0 && fstat(fds[i], &x) == 0 && fstat(fds[k], &y) == 0 &&
		    x.st_dev == y.st_dev && x.st_ino == y.st_ino)
			return k;
	return -1;
}

/* A member (or spare) inside another one: its files would be shards of
 * the other's namespace, and the first write would fail (also with
 * --force).  Canonical paths compared (a symlink resolved); -EINVAL with
 * the message printed, before anything is opened. */
static int nested_member(char **paths, int total)
{
	char *real[LAYOUT_MAX_WIDTH + SB_MAX_SPARES] = { NULL };
	int ret = 0;
	for (int i = 0; i < total; i++)
		real[i] = realpath(paths[i], NULL);
	for (int i = 0; i < total && !ret; i++)
		for (int k = 0; k < total && !ret; k++)
			if (k != i && real[i] && real[k] && strcmp(real[i], real[k]) &&
			    util_path_within(real[i], real[k])) {
				fprintf(stderr, "raidfs: member '%s' is inside member '%s': each member must be a directory of its own, outside the others\n",
					paths[i], paths[k]);
				ret = -EINVAL;
			}
	for (int i = 0; i < total; i++)
		free(real[i]);
	return ret;
}

/* s as a message shows it: printable bytes as they are, others as \xNN
 * (cut after 80 bytes) */
static void shown_bytes(const char *s, char *buf, size_t len)
{
	size_t off = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p && p - (const unsigned char *)s < 80 && off + 5 < len; p++)
		off += snprintf(buf + off, len - off, *p < 0x20 || *p == 0x7f ? "\\x%02x" : "%c", *p);
	buf[off] = '\0';
}

/* array_create()'s options, checked before any directory is touched;
 * *l the layout.  0 or -EINVAL (said). */
static int create_check_opts(const struct create_opts *o, int n, struct layout *l)
{
	const char *why;
	if (n > LAYOUT_MAX_WIDTH) {
		fprintf(stderr, "raidfs: too many members (%d): at most %d are supported\n",
			n, LAYOUT_MAX_WIDTH);
		return -EINVAL;
	}
	if (o->groups && o->level != LEVEL_RAID50 && o->level != LEVEL_RAID60) {
		fprintf(stderr, "raidfs: cannot create %s: --groups %u is for raid50 and raid60 only (leave --groups out%s)\n",
			layout_level_name(o->level), o->groups,
			o->level == LEVEL_RAID5 ? ", or use --level raid50" :
			o->level == LEVEL_RAID6 ? ", or use --level raid60" : "");
		return -EINVAL;
	}
	if (o->name && sb_name_check(o->name, &why) < 0) {
		char shown[4 * 80 + 4];
		shown_bytes(o->name, shown, sizeof(shown));
		fprintf(stderr, "raidfs: bad array name '%s': %s; use letters, digits and '-', '_', '.'\n",
			shown, why);
		return -EINVAL;
	}
	if (layout_init(l, o->level, o->chunk, n, o->groups, 0, &why) < 0) {
		fprintf(stderr, "raidfs: cannot create %s with %d member%s: %s\n",
			layout_level_name(o->level), n, n == 1 ? "" : "s", why);
		return -EINVAL;
	}
	if (o->nspares > SB_MAX_SPARES) {
		fprintf(stderr, "raidfs: too many spares (%d): at most %d\n", o->nspares, SB_MAX_SPARES);
		return -EINVAL;
	}
	return 0;
}

/* The total directories of a new array (members, then spares) opened
 * into fds[] (the caller closes them), each checked: a directory, not
 * given twice, empty (unless --force), able to hold user xattrs.  0 or
 * -errno (said). */
static int create_open_dirs(const struct create_opts *o, char **paths, int total, int *fds)
{
	struct stat st;
	for (int i = 0; i < total; i++) {
		fds[i] = open(paths[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fds[i] < 0 || fstat(fds[i], &st) < 0) {
			fprintf(stderr, "raidfs: cannot open member '%s': %s (create the directory, or mount the disk there)\n",
				paths[i], strerror(errno));
			return -ENOENT;
		}
		int twin = given_before(fds, i);
		if (twin >= 0) {
			fprintf(stderr, "raidfs: member '%s' is given twice (same directory as '%s'): each member must be a different directory\n",
				paths[i], paths[twin]);
			return -EINVAL;
		}
		if (!o->force && !array_dir_is_empty(fds[i])) {
			fprintf(stderr, "raidfs: member '%s' is not empty: raidfs needs empty member directories (use --force to use it anyway; files already there are left alone but are not part of the array)\n",
				paths[i]);
			return -ENOTEMPTY;
		}
		int e = array_probe_xattr(fds[i]);
		if (e < 0) {
			fprintf(stderr, "raidfs: member '%s' cannot hold user extended attributes (%s): raidfs keeps per-file metadata there; use a filesystem with user xattrs (ext4, xfs, btrfs, tmpfs)\n",
				paths[i], strerror(-e));
			return e;
		}
	}
	return 0;
}

/* The new array's superblock (n members, then the spares) written to
 * every directory, with its dirty-file log.  0 or -errno (said). */
static int create_write_superblocks(const struct create_opts *o, const struct layout *l, int n, int total,
				    char **paths, const int *fds)
{
	struct superblock sb;
	memset(&sb, 0, sizeof(sb));
	random_bytes(sb.uuid, sizeof(sb.uuid));
	snprintf(sb.name, sizeof(sb.name), "%s", o->name ? o->name : "raidfs");
	sb.level = o->level;
	sb.chunk = o->chunk;
	sb.width = n;
	sb.nspares = o->nspares;
	sb.groups = l->groups;
	sb.events = 1;
	sb.csum = o->csum;
	sb.ctime = sb.utime = time(NULL);
	for (int i = 0; i < total; i++) {
		sb.members[i].state = i < n ? MS_ONLINE : MS_SPARE;
		random_bytes(sb.members[i].uuid, 16);
		char *rp = realpath(paths[i], NULL);
		snprintf(sb.members[i].path, SB_PATH_MAX, "%s", rp ? rp : paths[i]);
		free(rp);
	}
	for (int i = 0; i < total; i++) {
		sb.index = i;
		memcpy(sb.member_uuid, sb.members[i].uuid, 16);
		int ret = sb_write(fds[i], &sb);
		if (ret == 0 && mkdirat(fds[i], SB_DIRTY_DIR, 0700) < 0 && errno != EEXIST)
			ret = -errno;
		if (ret < 0) {
			fprintf(stderr, "raidfs: cannot write the superblock to member '%s': %s\n",
				paths[i], strerror(-ret));
			return ret;
		}
	}
	return 0;
}

int array_create(const struct create_opts *o, char **members, int n)
{
	struct layout l;
	int fds[LAYOUT_MAX_WIDTH + SB_MAX_SPARES];
	char *paths[LAYOUT_MAX_WIDTH + SB_MAX_SPARES];
	int ret = create_check_opts(o, n, &l);
	if (ret < 0)
		return ret;
	int total = n + o->nspares;
	for (int i = 0; i < n; i++)
		paths[i] = members[i];
	for (int i = 0; i < o->nspares; i++)
		paths[n + i] = o->spares[i];
	for (int i = 0; i < total; i++)
		fds[i] = -1;
	if (nested_member(paths, total) < 0)
		return -EINVAL;
	ret = create_open_dirs(o, paths, total, fds);
	if (ret == 0)
		ret = create_write_superblocks(o, &l, n, total, paths, fds);
	for (int i = 0; i < total; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return ret;
}

/* -------------------------------------------------------------- assemble */

/*
 * A replacement in place was recorded (a->sb.replacing) when the array
 * stopped: its directory goes back into the shadow slot, and the copy
 * resumes after mount (rebuild_resume()).  Only a directory whose own
 * superblock is the replacement's, of this array, for the same member,
 * with the same event counter as the array: it then received every write
 * member repl_of did until the stop (the verify pass settles the last
 * ones).  Returns 0 when fd (path) was taken; fd stays the caller's
 * otherwise.
 */
static int attach_shadow(struct array *a, int fd, const struct superblock *sb, const char *path)
{
	const char *why = NULL;
	if (!a->sb.replacing)
		why = "the array no longer records a replacement";
	else if (memcmp(sb->uuid, a->sb.uuid, 16) != 0 || !sb_is_replacement(sb))
		why = "it is not this array's replacement";
	else if (sb->repl_of != a->sb.repl_of)
		why = "it replaces another member";
	else if (!sb_uuid_nil(sb->member_uuid) && !sb_uuid_nil(a->sb.repl_uuid) &&
		 memcmp(sb->member_uuid, a->sb.repl_uuid, 16) != 0)
		why = "its member uuid is not the replacement's the array records (an older replacement's directory?)";
	else if (sb->events != a->sb.events)
		why = "its superblock is behind the members' (it missed a state change)";
	else if (a->m[SHADOW].dirfd >= 0)
		why = "given twice";
	if (why) {
		log_warn("'%s' holds a partial copy of member %u from an in-place replacement, and is not used: %s (empty it to use it again)",
			 path, sb->repl_of, why);
		return -EINVAL;
	}
	struct member *s = &a->m[SHADOW];
	s->dirfd = fd;
	abs_path(path, s->path, sizeof(s->path));
	s->given = true;
	s->state = MS_REBUILDING;
	a->shadow_of = (int)a->sb.repl_of;
	return 0;
}

/*
 * sb is the superblock of the member a replacement in place took over,
 * left behind when the daemon stopped between the commit's superblock
 * writes and the removal of the old directory's (shadow_take_slot()): it
 * still records the replacement of its own index, at an older event
 * counter, while the array's newest table has the replacement's directory
 * as that member.  Taken back, it would serve the writes it missed since
 * the commit (the table says the member is online, so the event counter
 * alone does not make it stale).  A replacement that was abandoned
 * instead leaves the old path in the table.
 */
static bool replaced_member(const struct superblock *cur, const struct superblock *sb)
{
	return sb->replacing && !sb_is_replacement(sb) && sb->repl_of == sb->index && sb->events < cur->events &&
	       !(cur->replacing && cur->repl_of == sb->index) && sb->repl_path[0] &&
	       strcmp(cur->members[sb->index].path, sb->repl_path) == 0;
}

/*
 * A state change that makes a directory member j writes the new table to
 * each member in turn, j's new directory among them; a daemon stopped in
 * between leaves that directory with the superblock it had before, which
 * the newest table (some member's) contradicts.  sb is such a superblock
 * when the newest table has the directory's recorded path as member j:
 *  - a replacement's own superblock (it still records the replacement,
 *    the newest table no longer does): after a commit, j is online (the
 *    commit starts only once the copy is complete, and a write since
 *    would have recorded j as faulty, note_write()); after a promotion
 *    (the replaced member failed during the copy), j is rebuilding;
 *  - a hot spare's (array_take_spare(), then install_member()): j is
 *    rebuilding.
 * Returns j's state, with *jp = j, or -1.  A rebuilding member is only
 * written until its rebuild, which rewrites what differs and verifies
 * every file, is complete: taking a directory with older contents as the
 * target is safe.  An abandoned replacement leaves the old path in the
 * table; a spare still listed as one stays a spare.
 */
static int taken_as(const struct superblock *cur, const struct superblock *sb, uint32_t *jp)
{
	const char *path;
	uint32_t j = 0;
	bool spare = !sb_is_replacement(sb);
	if (sb->events >= cur->events)
		return -1;
	if (!spare) {
		if (cur->replacing || sb->repl_of >= cur->width)
			return -1;
		j = sb->repl_of;
		path = sb->repl_path;
	} else if (sb->index >= sb->width && sb->index < sb->width + sb->nspares &&
		   sb->members[sb->index].state == MS_SPARE) {
		path = sb->members[sb->index].path;
		while (j < cur->width && strcmp(cur->members[j].path, path) != 0)
			j++;
	} else {
		return -1;
	}
	if (j >= cur->width || !path[0] || strcmp(cur->members[j].path, path) != 0)
		return -1;
	enum member_state st = cur->members[j].state;
	if (st != MS_REBUILDING && (spare || st != MS_ONLINE))
		return -1;
	*jp = j;
	return st;
}

/* The recorded replacement was not among the directories given: it is
 * not looked for at its recorded path (that may be another array's
 * directory, a copy of this one's), so the record is dropped and member
 * repl_of simply stays in service. */
static void drop_shadow_record(struct array *a)
{
	log_warn("array '%s': the replacement of member %u by '%s' is not resumed: that directory is not in the member list (a mount uses only the directories it is given); member %u stays in service. To resume a replacement, give its directory among the members; to start it again, empty '%s' and run 'raidfs replace'",
		 a->sb.name, a->sb.repl_of, a->sb.repl_path, a->sb.repl_of, a->sb.repl_path);
	a->sb.replacing = false;
	memset(a->sb.repl_path, 0, sizeof(a->sb.repl_path));
	memset(a->sb.repl_uuid, 0, sizeof(a->sb.repl_uuid));
	a->sb.events++;
	array_write_superblocks_locked(a);
}

/* What assembly knows of the directories it was given (paths[i]): each
 * one's descriptor (-1 once placed or closed), whether it holds a valid
 * superblock (ok) and that superblock; the descriptors of stale members,
 * which may be taken back; and whether a cut state change must be settled
 * by writing the newest table to every member. */
struct given {
	char **paths;
	int n;
	int fds[LAYOUT_MAX_WIDTH];
	bool ok[LAYOUT_MAX_WIDTH];
	struct superblock sbs[LAYOUT_MAX_WIDTH];
	int stale_fd[LAYOUT_MAX_WIDTH];
	bool settle;
};

static void given_close(struct given *g)
{
	for (int i = 0; i < g->n; i++)
		if (g->fds[i] >= 0)
			close(g->fds[i]);
	for (int i = 0; i < LAYOUT_MAX_WIDTH; i++)
		if (g->stale_fd[i] >= 0)
			close(g->stale_fd[i]);
}

/* Assembly, step 1: open every given directory, lock it for this daemon
 * and read its superblock.  A directory that is missing or has no valid
 * superblock is recorded as unusable (a->unusable_*), an empty one kept
 * open (it may be a rebuild's target).  0, or -EINVAL with err set. */
static int read_given(struct array *a, struct given *g, char *err, size_t errlen)
{
	int i, r;
	if (g->n > LAYOUT_MAX_WIDTH) {
		errf(err, errlen, "too many members (%d): at most %d are supported", g->n, LAYOUT_MAX_WIDTH);
		return -EINVAL;
	}
	for (i = 0; i < g->n; i++)
		g->fds[i] = -1;
	for (i = 0; i < g->n; i++) {
		const char *why = NULL;
		g->ok[i] = false;
		g->fds[i] = open(g->paths[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int twin = given_before(g->fds, i);
		if (twin >= 0) {
			errf(err, errlen, "member '%s' is given twice (same directory as '%s'): each member must be a different directory",
			     g->paths[i], g->paths[twin]);
			return -EINVAL;
		}
		if (g->fds[i] >= 0 && array_lock_dir(g->fds[i]) < 0) {
			errf(err, errlen, "member '%s' is in use by another running raidfs (this array mounted elsewhere, or being checked): two of them writing the same members would corrupt the array; unmount the other one first",
			     g->paths[i]);
			return -EINVAL;
		}
		bool retry = false;
		if (g->fds[i] < 0) {
			why = errno == ENOENT ? "no such directory" : "cannot open the directory";
			log_warn("member '%s' is missing: %s", g->paths[i], strerror(errno));
			retry = true;	/* (a disk that shows up there later) */
		} else if ((r = sb_read(g->fds[i], &g->sbs[i], &why)) < 0) {
			log_warn("member '%s' is not usable: %s", g->paths[i], why);
			retry = r == -ENOENT;	/* (a disk not mounted there yet) */
			if (r != -ENOENT || !array_dir_is_empty(g->fds[i])) {
				close(g->fds[i]);
				g->fds[i] = -1;
			}	/* else kept: maybe a rebuild target (below) */
		} else {
			g->ok[i] = true;
			continue;
		}
		if (retry && a->nunusable < 64)
			a->unusable_retry |= 1ull << a->nunusable;
		a->unusable_path[a->nunusable] = g->paths[i];
		a->unusable_why[a->nunusable++] = why;
	}
	return 0;
}

/* Step 2: the array is the uuid most members agree on, its newest
 * superblock the truth; members of another array are refused.  Sets
 * a->sb, the layout and the member slots from that table.  0, or -EINVAL
 * with err set. */
static int pick_array(struct array *a, struct given *g, char *err, size_t errlen)
{
	int best = -1, i;
	char u1[37], u2[37];
	for (i = 0; i < g->n; i++) {
		if (!g->ok[i])
			continue;
		int votes = 0, best_votes = 0;
		for (int j = 0; j < g->n; j++) {
			if (g->ok[j] && memcmp(g->sbs[j].uuid, g->sbs[i].uuid, 16) == 0)
				votes++;
			if (best >= 0 && g->ok[j] && memcmp(g->sbs[j].uuid, g->sbs[best].uuid, 16) == 0)
				best_votes++;
		}
		if (best < 0 || votes > best_votes ||
		    (votes == best_votes && memcmp(g->sbs[i].uuid, g->sbs[best].uuid, 16) == 0 &&
		     g->sbs[i].events > g->sbs[best].events))
			best = i;
	}
	if (best < 0) {
		size_t off = 0;
		char list[1536] = "";
		for (int u = 0; u < a->nunusable; u++)
			off += snprintf(list + off, off < sizeof(list) ? sizeof(list) - off : 0,
					"%s'%s' (%s)", u ? ", " : "", a->unusable_path[u], a->unusable_why[u]);
		errf(err, errlen, "no member holds a valid raidfs superblock: %s; check the member paths (or create the array with 'raidfs create')",
		     list);
		return -EINVAL;
	}
	/* Refuse members of another array: they are not "missing", they are a
	 * mistake on the command line and would be overwritten. */
	for (i = 0; i < g->n; i++) {
		if (!g->ok[i] || memcmp(g->sbs[i].uuid, g->sbs[best].uuid, 16) == 0)
			continue;
		sb_uuid_str(g->sbs[i].uuid, u1);
		sb_uuid_str(g->sbs[best].uuid, u2);
		errf(err, errlen, "member '%s' belongs to another array ('%s', uuid %s), not to '%s' (uuid %s): remove it from the member list",
		     g->paths[i], g->sbs[i].name, u1, g->sbs[best].name, u2);
		return -EINVAL;
	}
	a->sb = g->sbs[best];
	a->width = a->sb.width;
	if (layout_init(&a->lay, a->sb.level, a->sb.chunk, a->sb.width, a->sb.groups, 0, NULL) < 0) {
		errf(err, errlen, "member '%s' has a superblock with an invalid geometry", g->paths[best]);
		return -EINVAL;
	}
	a->shadow_of = -1;
	for (uint32_t j = 0; j < MEMBER_SLOTS; j++) {
		a->m[j].dirfd = -1;
		pthread_mutex_init(&a->m[j].fault_lock, NULL);
		if (j == SHADOW)
			break;
		a->m[j].state = a->sb.members[j].state;
		if (j < a->width && a->sb.members[j].state != MS_ONLINE)
			a->out_before |= 1ull << j;
		snprintf(a->m[j].path, sizeof(a->m[j].path), "%s", a->sb.members[j].path);
	}
	return 0;
}

/*
 * Does a directory whose superblock is sb carry the identity the newest
 * table (cur) records for slot idx?  Its member uuid must be the slot's;
 * when one of them is not known (an array, or a directory, of format 1
 * or 2) nothing contradicts it here, and the event counter and the slot's
 * generation decide (place_given()).
 */
static bool same_identity(const struct superblock *cur, const struct superblock *sb, uint32_t idx)
{
	const uint8_t *want = cur->members[idx].uuid, *has = sb->member_uuid;
	return sb_uuid_nil(want) || sb_uuid_nil(has) || memcmp(want, has, 16) == 0;
}

/*
 * Step 2b: two given directories that claim one slot (a copy of a member
 * made with cp -a or rsync, a restored backup, a cloned disk) - the same
 * array uuid and index.  Only one can be the member.  When one's member
 * uuid is the slot's and the other's is not, place_given() refuses the
 * other (its message names the slot's directory).  Else the one with the
 * higher event counter is the member (the other missed changes): the
 * other is not used, and the log names both and why.  When nothing tells them apart
 * (same uuid, same counter) the mount is refused: either may hold the
 * member's current data.  0, or -EINVAL with err set.
 */
static int drop_twins(struct array *a, struct given *g, char *err, size_t errlen)
{
	for (int i = 0; i < g->n; i++) {
		if (!g->ok[i] || sb_is_replacement(&g->sbs[i]))
			continue;
		for (int k = 0; k < i && g->ok[i]; k++) {
			if (!g->ok[k] || sb_is_replacement(&g->sbs[k]) || g->sbs[k].index != g->sbs[i].index)
				continue;
			uint32_t idx = g->sbs[i].index;
			bool id_i = same_identity(&a->sb, &g->sbs[i], idx), id_k = same_identity(&a->sb, &g->sbs[k], idx);
			int keep, drop;
			const char *why;
			char whybuf[160];
			if (id_i != id_k)
				continue;	/* place_given() refuses the one that is not the slot's, naming the other */
			if (g->sbs[i].events != g->sbs[k].events) {
				keep = g->sbs[i].events > g->sbs[k].events ? i : k;
				drop = keep == i ? k : i;
				snprintf(whybuf, sizeof(whybuf),
					 "its event counter is behind (%" PRIu64 " < %" PRIu64 "): an older copy, which missed changes",
					 g->sbs[drop].events, g->sbs[keep].events);
				why = whybuf;
			} else {
				errf(err, errlen, "'%s' and '%s' both claim to be member %u of array '%s', with the same member uuid and event counter: one is a copy of the other (cp -a, a restored backup, a cloned disk) and nothing tells which one holds the member's current data; give only the member's own directory",
				     g->paths[k], g->paths[i], idx, a->sb.name);
				return -EINVAL;
			}
			log_warn("'%s' and '%s' both claim to be member %u: '%s' is used; '%s' is not: %s",
				 g->paths[k], g->paths[i], idx, g->paths[keep], g->paths[drop], why);
			close(g->fds[drop]);
			g->fds[drop] = -1;
			g->ok[drop] = false;
		}
	}
	return 0;
}

enum array_claim array_claim(const struct superblock *cur, const struct superblock *sb, uint32_t *slot,
			     int *taken)
{
	uint32_t idx = sb->index;
	int t = taken_as(cur, sb, &idx);
	*slot = idx;
	*taken = t;
	if (t < 0 && sb_is_replacement(sb))
		return CLAIM_REPLACEMENT;
	if (idx >= cur->width && idx < cur->width + cur->nspares && cur->members[idx].state == MS_SPARE)
		return CLAIM_SPARE;
	if (idx >= cur->width)
		return CLAIM_CORRUPT;
	if (replaced_member(cur, sb))
		return CLAIM_REPLACED;
	/* the slot went to another directory since this one's last
	 * superblock (a rebuild or replacement onto it): the table's state
	 * is that directory's, not this one's */
	if (t < 0 && sb->events < cur->events && sb->members[idx].gen != cur->members[idx].gen)
		return CLAIM_REBUILT_SINCE;
	if (t < 0 && !same_identity(cur, sb, idx))
		return CLAIM_OTHER_UUID;
	/* Stale: it missed state changes (md's event counter), or the
	 * survivors recorded it as failed while it was away. */
	if (t < 0 && sb->events < cur->events && cur->members[idx].state != MS_ONLINE)
		return CLAIM_STALE;
	if (cur->members[idx].state == MS_REBUILDING && (sb->events == cur->events || t >= 0))
		return CLAIM_REBUILDING;	/* a rebuild was interrupted: resumed after mount */
	if (cur->members[idx].state != MS_ONLINE)
		return CLAIM_OUT;
	return CLAIM_ONLINE;
}

const char *array_claim_name(enum array_claim c)
{
	switch (c) {
	case CLAIM_ONLINE: return "present";
	case CLAIM_REBUILDING: return "rebuilding";
	case CLAIM_SPARE: return "spare";
	case CLAIM_REPLACEMENT: return "replacement";
	case CLAIM_STALE: return "stale";
	case CLAIM_OUT: return "out";
	case CLAIM_REPLACED: return "replaced";
	case CLAIM_REBUILT_SINCE: return "rebuilt-since";
	case CLAIM_OTHER_UUID: return "other-uuid";
	case CLAIM_CORRUPT: return "corrupt";
	}
	return "unknown";
}

/* Step 3: given directory i, with a superblock of this array, goes into
 * its slot: online, being rebuilt, a spare, the replacement in place, or
 * stale (kept aside in g->stale_fd) - or it is not used, with the reason
 * logged.  What it is, array_claim() decides.  0, or -EINVAL with err set
 * (a corrupt or doubled index). */
static int place_given(struct array *a, struct given *g, int i, char *err, size_t errlen)
{
	uint32_t idx;
	int taken;
	enum array_claim claim = array_claim(&a->sb, &g->sbs[i], &idx, &taken);
	if (taken >= 0) {
		g->settle = true;
		log_warn("'%s' %s member %u, and the daemon stopped while it recorded that: taken as member %u%s",
			 g->paths[i],
			 !sb_is_replacement(&g->sbs[i]) ? "was a hot spare taking the place of"
			 : taken == MS_ONLINE	     ? "replaced"
						     : "became the rebuild target of",
			 idx, idx, taken == MS_ONLINE ? "" : ", to be rebuilt (what is there is kept where right)");
	}
	switch (claim) {
	case CLAIM_REPLACEMENT:
		/* given on the command line: the replacement in place */
		if (attach_shadow(a, g->fds[i], &g->sbs[i], g->paths[i]) == 0)
			g->fds[i] = -1;
		return 0;
	case CLAIM_SPARE:
		abs_path(g->paths[i], a->m[idx].path, sizeof(a->m[idx].path));
		a->m[idx].given = true;
		a->m[idx].state = MS_SPARE;
		a->m[idx].dirfd = g->fds[i];
		g->fds[i] = -1;
		return 0;
	case CLAIM_CORRUPT:
		errf(err, errlen, "member '%s' claims index %u of a %u-member array (corrupt superblock)",
		     g->paths[i], idx, a->width);
		return -EINVAL;
	case CLAIM_REPLACED:
		log_warn("'%s' was member %u until its replacement by '%s' finished (the daemon stopped before it could remove this directory's superblock): it missed the writes since and is not used; give '%s' in its place, and remove this directory's .raidfs to reuse it",
			 g->paths[i], idx, g->sbs[i].repl_path, g->sbs[i].repl_path);
		close(g->fds[i]);
		g->fds[i] = -1;
		return 0;
	case CLAIM_REBUILT_SINCE:
		log_warn("'%s' was member %u, which has been rebuilt onto '%s' since: it missed the writes since and is not used; give '%s' in its place, or resync this directory with 'raidfs add %s %s' once mounted (every file's version is compared)",
			 g->paths[i], idx, a->sb.members[idx].path, a->sb.members[idx].path,
			 a->mountpoint[0] ? a->mountpoint : "MOUNTPOINT", g->paths[i]);
		close(g->fds[i]);
		g->fds[i] = -1;
		return 0;
	case CLAIM_OTHER_UUID: {
		char want[37], has[37];
		sb_uuid_str(a->sb.members[idx].uuid, want);
		sb_uuid_str(g->sbs[i].member_uuid, has);
		log_warn("'%s' claims to be member %u, but its member uuid %s is not the one the array records for member %u (%s): it is a directory that slot had before (it was rebuilt or replaced since, onto '%s') and is not used; give member %u's own directory, or resync this one with 'raidfs add %s %s' once mounted",
			 g->paths[i], idx, has, idx, want, a->sb.members[idx].path, idx,
			 a->mountpoint[0] ? a->mountpoint : "MOUNTPOINT", g->paths[i]);
		close(g->fds[i]);
		g->fds[i] = -1;
		return 0;
	}
	default:
		break;
	}
	if (a->m[idx].dirfd >= 0) {
		errf(err, errlen, "members '%s' and '%s' both claim to be member %u: give each member once",
		     a->m[idx].path, g->paths[i], idx);
		return -EINVAL;
	}
	abs_path(g->paths[i], a->m[idx].path, sizeof(a->m[idx].path));
	a->m[idx].given = true;
	switch (claim) {
	case CLAIM_STALE:
		a->m[idx].stale = true;
		log_warn("member %u '%s' is stale (events %" PRIu64 " < %" PRIu64 "): it missed writes while it was away and is not used",
			 idx, g->paths[i], g->sbs[i].events, a->sb.events);
		g->stale_fd[idx] = g->fds[i];	/* may be taken back below */
		g->fds[i] = -1;
		return 0;
	case CLAIM_REBUILDING:
		a->m[idx].dirfd = g->fds[i];
		a->m[idx].state = MS_REBUILDING;
		g->fds[i] = -1;
		return 0;
	case CLAIM_OUT:
		log_warn("member %u '%s' is recorded as %s and is not used",
			 idx, g->paths[i], member_state_name(a->sb.members[idx].state));
		close(g->fds[i]);
		g->fds[i] = -1;
		return 0;
	default:
		a->m[idx].dirfd = g->fds[i];
		g->fds[i] = -1;
		return 0;
	}
}

/* Step 4: an empty directory without a superblock that the newest table
 * has as a member being rebuilt: the start of that rebuild (the member
 * installed by 'raidfs replace', 'raidfs add' or a spare,
 * install_member()) was cut short before its superblock was written.
 * Nothing of the array is on it yet: it is the rebuild's target.  Every
 * other directory left is closed. */
static void adopt_targets(struct array *a, struct given *g)
{
	int i;
	for (i = 0; i < g->n; i++) {
		if (g->ok[i] || g->fds[i] < 0)
			continue;
		char abs[PATH_MAX];
		abs_path(g->paths[i], abs, sizeof(abs));
		for (uint32_t j = 0; j < a->width && g->fds[i] >= 0; j++) {
			if (a->m[j].dirfd >= 0 || a->sb.members[j].state != MS_REBUILDING ||
			    strcmp(a->sb.members[j].path, abs) != 0)
				continue;
			log_warn("'%s' has no superblock yet, but the newest table has it as member %u being rebuilt (the daemon stopped while it recorded that): taken as member %u, to be rebuilt",
				 g->paths[i], j, j);
			a->m[j].dirfd = g->fds[i];
			a->m[j].given = true;
			a->m[j].state = MS_REBUILDING;
			g->fds[i] = -1;
			g->settle = true;
		}
		if (g->fds[i] >= 0)
			close(g->fds[i]);
		g->fds[i] = -1;
	}
}

static void counters_load(struct array *a, uint32_t j, int fd);

/* Step 5: too many members away for the array to run, but some came
 * back: a stale member for which the others logged no change at all since
 * it left (empty missed-write log) holds exactly the current data, and is
 * taken back (md's forced assembly, made safe by the log).  The stale
 * members not taken are closed, the missing ones re-added when they show
 * up. */
static void take_back_stale(struct array *a, struct given *g)
{
	if (array_state(a) == ARRAY_FAILED && a->primary >= 0) {
		bool taken = false;
		for (uint32_t j = 0; j < a->width; j++) {
			if (g->stale_fd[j] < 0 || !array_missed_empty(a, j))
				continue;
			log_warn("member %u '%s' was away but nothing changed since it left (its missed-write log is empty): taken back",
				 j, a->m[j].path);
			a->m[j].dirfd = g->stale_fd[j];
			g->stale_fd[j] = -1;
			a->m[j].stale = false;
			a->m[j].state = a->sb.members[j].state = MS_ONLINE;
			taken = true;
		}
		if (taken) {
			a->sb.events++;
			array_write_superblocks_locked(a);
		}
	}
	for (uint32_t j = 0; j < a->width; j++) {
		if (g->stale_fd[j] >= 0) {
			struct stat st;
			counters_load(a, j, g->stale_fd[j]);
			if (fstat(g->stale_fd[j], &st) == 0) {
				a->m[j].stale_dev = st.st_dev;
				a->m[j].stale_ino = st.st_ino;
			}
			close(g->stale_fd[j]);
		}
		g->stale_fd[j] = -1;
		/* missing (not merely stale): re-added when it shows up */
		if (!member_present(a, j) && !a->m[j].stale)
			a->m[j].went_away = true;
	}
}

/* Step 6: may the array start as it is?  0 (optimal, or degraded and
 * allowed), 1 (failed, and the caller keeps it: a->keep_failed), or
 * -EINVAL with err set. */
static int judge_start(struct array *a, bool allow_degraded, char *err, size_t errlen)
{
	enum array_state st = array_state(a);
	if (st != ARRAY_OPTIMAL) {
		char list[1024] = "";
		size_t off = 0;
		for (uint32_t j = 0; j < a->width; j++) {
			if (member_present(a, j))
				continue;
			off += snprintf(list + off, off < sizeof(list) ? sizeof(list) - off : 0,
					"%s%u ('%s'%s)", off ? ", " : "", j, a->m[j].path,
					a->m[j].stale ? ", stale" : !a->m[j].given ? ", not given" : "");
			if (!a->m[j].given)
				log_warn("array '%s': member %u is not among the directories given: a mount uses only the directories it is given, and the path the superblocks recorded for it ('%s') is not opened; give member %u's directory in the member list, or 'raidfs add %s DIR' once mounted",
					 a->sb.name, j, a->m[j].path, j, a->mountpoint[0] ? a->mountpoint : "MOUNTPOINT");
		}
		if (st == ARRAY_FAILED) {
			errf(err, errlen, "array '%s' cannot start: too many members are missing for %s: %s; give the missing member directories on the command line",
			     a->sb.name, layout_level_name(a->lay.level), list);
			/* with keep_failed the caller mounts it offline (a
			 * preserved cache) */
			return a->keep_failed ? 1 : -EINVAL;
		}
		if (!allow_degraded) {
			errf(err, errlen, "array '%s' is degraded (missing: %s) and -o nodegraded was given",
			     a->sb.name, list);
			return -EINVAL;
		}
		log_warn("array '%s' is degraded: missing member%s %s", a->sb.name,
			 array_absent_count(a) > 1 ? "s" : "", list);
	}
	return 0;
}

/*
 * Step 7: every member in place carries a member uuid.  An array of
 * format 1 or 2 has none: each present member (and spare, and the
 * replacement in place) gets a random one, and the superblocks are
 * written in format 3 (events bumped, so the new table is the newest:
 * a member absent now gets its uuid when it comes back).  Not on a
 * read-only mount.
 */
static void give_identities(struct array *a)
{
	if (a->readonly)
		return;
	uint32_t old = a->sb.version;
	int made = 0;
	for (uint32_t j = 0; j < a->width + a->sb.nspares; j++)
		if (a->m[j].dirfd >= 0 && sb_uuid_nil(a->sb.members[j].uuid)) {
			random_bytes(a->sb.members[j].uuid, 16);
			made++;
		}
	if (a->sb.replacing && a->m[SHADOW].dirfd >= 0 && sb_uuid_nil(a->sb.repl_uuid)) {
		random_bytes(a->sb.repl_uuid, 16);
		made++;
	}
	if (!made && old == SB_VERSION)
		return;
	a->sb.version = SB_VERSION;
	a->sb.events++;
	if (old != SB_VERSION)
		log_warn("array '%s': its superblocks are of format %u, without member uuids: each member now gets a uuid of its own and the superblocks are written in format %u (a raidfs that does not know format %u can no longer mount the array)",
			 a->sb.name, old, SB_VERSION, SB_VERSION);
	else
		log_warn("array '%s': %d member%s without a member uuid (of an older format) got one", a->sb.name, made,
			 made == 1 ? "" : "s");
	array_write_superblocks_locked(a);
}

/*
 * Assemble the array from the given member directories: read their
 * superblocks, pick the array and its newest table, put each directory
 * in its slot, settle state changes a crash cut short, and judge whether
 * the array can start.  0; 1 when it cannot run but a->keep_failed asks
 * to keep it (mounted offline for a preserved cache); -EINVAL with err
 * set, nothing left open.
 */
int array_assemble(struct array *a, char **paths, int n, bool allow_degraded,
		   char *err, size_t errlen)
{
	struct given g = { .paths = paths, .n = n };
	for (int i = 0; i < LAYOUT_MAX_WIDTH; i++)
		g.fds[i] = g.stale_fd[i] = -1;
	bool keep_failed = a->keep_failed, readonly = a->readonly;
	char mountpoint[sizeof(a->mountpoint)];	/* the caller's, for messages */
	memcpy(mountpoint, a->mountpoint, sizeof(mountpoint));
	memset(a, 0, sizeof(*a));
	a->keep_failed = keep_failed;
	a->readonly = readonly;
	memcpy(a->mountpoint, mountpoint, sizeof(mountpoint));
	pthread_mutex_init(&a->lock, NULL);
	pthread_mutex_init(&a->left_lock, NULL);
	nslock_init(&a->ns_lock);

	int r = read_given(a, &g, err, errlen);
	if (r == 0)
		r = pick_array(a, &g, err, errlen);
	if (r == 0)
		r = drop_twins(a, &g, err, errlen);
	for (int i = 0; i < n && r == 0; i++)
		if (g.ok[i])
			r = place_given(a, &g, i, err, errlen);
	if (r < 0) {
		given_close(&g);
		return r;
	}
	a->primary = -1;
	for (uint32_t j = 0; j < a->width; j++)
		if (member_online(a, j) && a->primary < 0)
			a->primary = j;	/* never a member still being rebuilt */
	adopt_targets(a, &g);
	if (a->sb.replacing && a->m[SHADOW].dirfd < 0)
		drop_shadow_record(a);
	if (g.settle) {
		/* every member present gets the newest table */
		a->sb.events++;
		array_write_superblocks_locked(a);
	}
	take_back_stale(a, &g);
	for (uint32_t j = 0; j < MEMBER_SLOTS; j++)
		if (a->m[j].dirfd >= 0)
			counters_load(a, j, a->m[j].dirfd);
	r = judge_start(a, allow_degraded, err, errlen);
	if (r < 0)
		array_close(a);
	else
		give_identities(a);
	given_close(&g);
	return r;
}

void array_close(struct array *a)
{
	array_counters_flush(a);	/* (the unmount: the last changes) */
	for (uint32_t j = 0; j < MEMBER_SLOTS; j++) {
		if (a->m[j].dirfd >= 0)
			close(a->m[j].dirfd);
		a->m[j].dirfd = -1;
	}
	for (unsigned i = 0; i < a->nretired && i < ARRAY_RETIRED; i++)
		close(a->retired[i]);
	a->nretired = 0;
	free(a->left_dirty);
	a->left_dirty = NULL;
	a->nleft_dirty = 0;
	pthread_mutex_destroy(&a->left_lock);
}

/* Close fd at the unmount (struct array, retired); the oldest of them
 * now if there are too many.  Caller holds a->lock. */
static void retire_fd_locked(struct array *a, int fd)
{
	flock(fd, LOCK_UN);	/* the directory is free for other uses */
	unsigned i = a->nretired++ % ARRAY_RETIRED;
	if (a->nretired > ARRAY_RETIRED)
		close(a->retired[i]);
	a->retired[i] = fd;
}

int array_lock_dir(int fd)
{
	return flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK ? -EBUSY : 0;
}

int array_check_new_dir(struct array *a, int fd, const char *dir, char *err, size_t errlen)
{
	char *rp = realpath(dir, NULL);
	size_t ml = strlen(a->mountpoint);
	bool inside_mount = rp && ml && strncmp(rp, a->mountpoint, ml) == 0 && (rp[ml] == '/' || rp[ml] == '\0');
	free(rp);
	if (inside_mount) {
		snprintf(err, errlen, "'%s' is inside the array's own mount point '%s': give a directory on another disk",
			 dir, a->mountpoint);
		return -EINVAL;
	}
	/* the directory and each of its parents, against every directory the
	 * array has (a member inside another goes with it when its disk dies,
	 * and the other's walks would take its files for strays) */
	struct stat ms[MEMBER_SLOTS];
	for (uint32_t j = 0; j < MEMBER_SLOTS; j++)
		if (a->m[j].dirfd < 0 || fstat(a->m[j].dirfd, &ms[j]) < 0)
			ms[j].st_ino = 0, ms[j].st_dev = 0;
	int cur = dup(fd);
	struct stat st, prev = { 0 };
	for (int depth = 0; cur >= 0 && depth < 4096 && fstat(cur, &st) == 0; depth++) {
		if (depth && st.st_dev == prev.st_dev && st.st_ino == prev.st_ino)
			break;	/* the root */
		for (uint32_t j = 0; j < MEMBER_SLOTS; j++) {
			if (!ms[j].st_ino || ms[j].st_dev != st.st_dev || ms[j].st_ino != st.st_ino)
				continue;
			const char *what = j < a->width ? "member" : j == SHADOW ? "the replacement of member" : "spare";
			int idx = j < a->width ? (int)j : j == SHADOW ? shadow_of(a) : (int)(j - a->width);
			if (depth)
				snprintf(err, errlen, "'%s' is inside %s %d '%s': each member needs a directory of its own, on its own disk",
					 dir, what, idx, a->m[j].path);
			else
				snprintf(err, errlen, "'%s' is already %s %d of this array", dir, what, idx);
			close(cur);
			return -EINVAL;
		}
		prev = st;
		int up = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(cur);
		cur = up;
	}
	if (cur >= 0)
		close(cur);
	if (array_lock_dir(fd) < 0) {
		snprintf(err, errlen, "'%s' is in use by another running raidfs (a member of a mounted array?)", dir);
		return -EBUSY;
	}
	return 0;
}

/* Write the authoritative superblock, with each member's own index, to
 * every present member.  Caller holds a->lock. */
int array_write_superblocks_locked(struct array *a)
{
	int ret = 0;
	a->sb.utime = time(NULL);
	for (uint32_t j = 0; j < a->width + a->sb.nspares; j++) {
		bool spare = j >= a->width && a->m[j].dirfd >= 0;
		if (!member_writable(a, j) && !spare)
			continue;
		struct superblock sb = a->sb;
		sb.index = j;
		memcpy(sb.member_uuid, sb.members[j].uuid, 16);
		snprintf(sb.members[j].path, SB_PATH_MAX, "%s", a->m[j].path);
		int r = sb_write(a->m[j].dirfd, &sb);
		if (r < 0) {
			log_err("cannot update the superblock of member %u '%s': %s",
				j, a->m[j].path, strerror(-r));
			if (!ret)
				ret = r;
		}
	}
	if (a->sb.replacing && a->m[SHADOW].dirfd >= 0) {
		/* the replacement in place, last: a mount finds it through the
		 * members' record only once they all name it */
		struct superblock sb = a->sb;
		sb.index = a->width + a->sb.nspares;
		memcpy(sb.member_uuid, sb.repl_uuid, 16);
		int r = sb_write(a->m[SHADOW].dirfd, &sb);
		if (r < 0)
			log_err("cannot update the superblock of the replacement '%s' of member %u: %s",
				a->m[SHADOW].path, a->sb.repl_of, strerror(-r));
	}
	return ret;
}

static int missed_note_change(struct array *a, bool names);

static int note_write(struct array *a, bool names)
{
	int r = missed_note_change(a, names);
	if (r < 0)
		return r;	/* unrecorded, the change would be lost to the absent */
	if (__atomic_load_n(&a->absent_recorded, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&a->lock);
	int ret = 0;
	if (!a->absent_recorded) {
		bool change = false;
		for (uint32_t j = 0; j < a->width; j++) {
			if (!member_online(a, j) && a->sb.members[j].state == MS_ONLINE) {
				a->sb.members[j].state = MS_FAULTY;
				a->m[j].state = MS_FAULTY;
				change = true;
			}
		}
		if (change) {
			a->sb.events++;
			ret = array_write_superblocks_locked(a);
			log_warn("array '%s': writing while degraded; absent members are now recorded as faulty (event %" PRIu64 ")",
				 a->sb.name, a->sb.events);
		}
		__atomic_store_n(&a->absent_recorded, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&a->lock);
	return ret;
}

int array_note_write(struct array *a)
{
	return note_write(a, true);
}

int array_note_data_write(struct array *a)
{
	return note_write(a, false);
}

/* ------------------------------------------------------------ dirty log */

/* The dirty-log entry of file id: "<id>", or "<id>.c" for a file whose
 * changes since it was marked all went through the file-backed cache log
 * (a crash is repaired by replaying the log; no parity resync needed). */
static void dirty_name(uint64_t id, char *buf, size_t len, const char *suffix)
{
	snprintf(buf, len, SB_DIRTY_DIR "/%016" PRIx64 "%s", id, suffix);
}


/* One dirty-log link of shard fd on member j: 1 made, 0 there already
 * (or nothing to protect, or the member failed for it), or -errno. */
static int mark_one(struct array *a, uint32_t j, uint64_t id, int fd, const char *name)
{
	int e = member_link_mark(a, j, fd, name);
	if (e == -ENOENT) {
		/* the dirty directory was removed by hand, or the shard
		 * was unlinked (then there is nothing to protect) */
		mkdirat(a->m[j].dirfd, SB_DIRTY_DIR, 0700);
		e = member_link_mark(a, j, fd, name);
	}
	if (e == 0)
		return 1;
	if (e == -EEXIST || e == -ENOENT)
		return 0;
	if (member_error_is_fatal(e))
		return e;	/* (judged by the caller) */
	/* (a full member refuses every file's first write: said once
	 * every 10 s) */
	static struct log_every full;
	unsigned long held = 0;
	if (e != -ENOSPC || log_every(&full, 10, &held))
		log_err("cannot mark file %016" PRIx64 " dirty on member %u '%s': %s%s", id, j, a->m[j].path,
			strerror(-e), e == -ENOSPC ? "; writes to files not marked yet fail with ENOSPC until it has room" : "");
	return e;
}

/*
 * The first member in service last (the primary of the next mount): the
 * mount's resync takes a mark on member 0 as proof that the marking was
 * complete (resync_dirty()), so that a member without one lacks the
 * shard itself (deleted by hand), rather than the daemon having died in
 * the middle of marking.
 */
static int mark_links(struct array *a, uint64_t id, const int *fds, const char *path, const char *suffix, int have)
{
	char name[64];
	int ret = 0, p = -1;
	dirty_name(id, name, sizeof(name), suffix);
	/* (the member the next mount makes the primary: the first in
	 * service; the running primary may be another, after a rebuild) */
	for (uint32_t j = 0; j < a->width && p < 0; j++)
		if (member_online(a, j) && fds[j] >= 0)
			p = (int)j;
	/* p last */
	uint32_t order[LAYOUT_MAX_WIDTH], n = 0;
	for (uint32_t j = 0; j < a->width; j++)
		if ((int)j != p && (int)j != have && member_writable(a, j) && fds[j] >= 0)
			order[n++] = j;
	if (p >= 0 && p != have)
		order[n++] = (uint32_t)p;
	uint64_t made = 0, bad = 0;
	int err[LAYOUT_MAX_WIDTH];
	bool held = have >= 0 && member_online(a, (uint32_t)have);
	for (uint32_t k = 0; k < n && ret == 0; k++) {
		uint32_t j = order[k];
		int r = mark_one(a, j, id, fds[j], name);
		if (r < 0 && member_error_is_fatal(r)) {
			bad |= 1ull << j;	/* a member error */
			err[j] = r;
		} else if (r < 0) {
			ret = r;
		} else {
			held |= member_online(a, j);	/* (one being rebuilt is no copy yet) */
			made |= (uint64_t)(r > 0) << j;
		}
	}
	/* A member error on a mark the others took fails the member, as on
	 * a write (also one being rebuilt: its rebuild stops), and the
	 * change goes on with the others, which note it as missed. */
	if (ret == 0 && bad) {
		char what[64];
		snprintf(what, sizeof(what), "the dirty-log mark of file %016" PRIx64, id);
		ret = array_judge_refusals(a, bad, err, held, what);
	}
	if (array_state(a) != ARRAY_OPTIMAL) {
		int r = array_missed_file(a, id, path);
		if (r < 0 && ret == 0)
			ret = r;	/* the write must not go ahead unrecorded */
	}
	/* refused: the change does not happen, and no link may stay behind
	 * (a clean unmount would leave it, a file "in the dirty log") */
	for (uint32_t j = 0; ret < 0 && j < a->width; j++)
		if (made >> j & 1)
			unlinkat(a->m[j].dirfd, name, 0);
	return ret;
}

int array_mark_dirty(struct array *a, uint64_t id, const int *fds, const char *path)
{
	return mark_links(a, id, fds, path, "", -1);
}

int array_mark_created(struct array *a, uint64_t id, const int *fds, const char *path, uint32_t marked)
{
	return mark_links(a, id, fds, path, "", (int)marked);
}

int array_mark_cached(struct array *a, uint64_t id, const int *fds, const char *path)
{
	return mark_links(a, id, fds, path, CACHED_SUFFIX, -1);
}

#define CACHE_LOG_ID_FILE SB_DIRTY_DIR "/.cachelog"
#define CACHE_LOG_ID_TMP SB_DIRTY_DIR "/.cachelog.new"
#define RETIRED_TAG "RETD"

/* The note on member j: written aside, synced and renamed over the old
 * one (a crash leaves one or the other whole). */
static int note_one(struct array *a, uint32_t j, const uint8_t *b, size_t n)
{
	int dfd = a->m[j].dirfd;
	int fd = openat(dfd, CACHE_LOG_ID_TMP, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int r = fd < 0 ? -errno : io_pwrite(fd, b, n, 0);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	if (r == 0 && renameat(dfd, CACHE_LOG_ID_TMP, dfd, CACHE_LOG_ID_FILE) < 0)
		r = -errno;
	int d = r == 0 ? openat(dfd, SB_DIRTY_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (d >= 0) {
		if (fsync(d) < 0)
			r = -errno;
		close(d);
	}
	return r;
}

int array_note_cache_log(struct array *a, uint64_t log_id, bool retired)
{
	uint8_t b[16];
	put_le64(b, log_id);
	put_le32(b + 8, parity_crc32(0, b, 8));
	memcpy(b + 12, RETIRED_TAG, 4);
	uint64_t refused = 0;
	int err[MEMBER_SLOTS] = { 0 };
	bool took = false;
	for (uint32_t j = 0; j < a->width; j++) {
		if (!member_writable(a, j))
			continue;
		int r = note_one(a, j, b, retired ? 16 : 12);
		if (r == 0) {
			took |= member_online(a, j);	/* (one being rebuilt is no copy yet) */
			continue;
		}
		if (!retired) {
			log_err("member %u '%s': cannot write %s: %s", j, a->m[j].path, CACHE_LOG_ID_FILE, strerror(-r));
			return r;	/* (the caller marks the file plainly instead) */
		}
		refused |= 1ull << j;
		err[j] = r;
	}
	/* a retirement some member did not take fails that member: its
	 * note would otherwise have the log replayed over newer bytes */
	int r = refused ? array_judge_refusals(a, refused, err, took, "the cache log's retirement note") : 0;
	return took ? r : r < 0 ? r : -EIO;
}

int array_cache_log_check(struct array *a, uint64_t log_id)
{
	bool other = false, current = false, retired = false;
	for (uint32_t j = 0; j < a->width; j++) {
		if (!member_online(a, j))
			continue;
		uint8_t b[16];
		int fd = openat(a->m[j].dirfd, CACHE_LOG_ID_FILE, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;	/* (one that joined or came back since) */
		ssize_t n = io_pread(fd, b, sizeof(b), 0);
		close(fd);
		bool ok = (n == 12 || (n == 16 && !memcmp(b + 12, RETIRED_TAG, 4))) &&
			  get_le32(b + 8) == parity_crc32(0, b, 8) && get_le64(b) == log_id;
		other |= !ok;
		current |= ok && n == 12;
		retired |= ok && n == 16;
	}
	/* (a member noting it in use was noted after the retirement, or the
	 * retirement did not finish: either way the log holds what counts) */
	return other ? -1 : current ? 1 : retired ? -2 : 0;
}

int array_mark_member(struct array *a, uint64_t id, uint32_t j, int fd, bool cached)
{
	char name[64];
	dirty_name(id, name, sizeof(name), cached ? CACHED_SUFFIX : "");
	int r = mark_one(a, j, id, fd, name);
	return r > 0 ? 0 : r;
}

/*
 * Missed-write log (the write-intent bitmap of md, per file): while a
 * member is not in service, every file whose contents change gets a
 * marker .raidfs/missed/<member>/<file id> on the members in service,
 * holding the file's path as it was opened (empty when not known).  Any
 * other change (names, directories, owners, modes, times, xattrs) leaves
 * the marker NAMES_MARK, and any change at all CHANGED_MARK (both once
 * per absence).  A re-add of that member resyncs only the marked files;
 * without NAMES_MARK it needs no walk of the namespace: the paths lead to
 * them (rebuild.c).  A finished rebuild or re-add clears the markers.
 * Readers take the union over the members in service: a member rebuilt
 * while another was away holds none of that member's markers.
 */
#define CHANGED_MARK "changed"
#define NAMES_MARK "namespace"

/* Member `on` holds logs for member `away` (every member in service). */
static bool log_holder(const struct array *a, uint32_t on, uint32_t away)
{
	return on != away && member_online(a, on) && a->m[on].dirfd >= 0;
}

/* `away`'s log on member `on`: NULL with *err 0 when there is none,
 * -errno when it cannot be read. */
static DIR *missed_dir_open(const struct array *a, uint32_t on, uint32_t away, int *err)
{
	char dir[64];
	snprintf(dir, sizeof(dir), SB_MISSED_DIR "/%u", away);
	DIR *d = opendir_at(a->m[on].dirfd, dir);
	*err = d || errno == ENOENT ? 0 : -errno;
	return d;
}

/* 0, or -errno */
static int missed_mark_on(struct array *a, uint32_t on, uint32_t away, const char *id, const char *content)
{
	char path[96];
	snprintf(path, sizeof(path), SB_MISSED_DIR "/%u/%s", away, id);
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (content ? O_TRUNC : 0);
	int fd = openat(a->m[on].dirfd, path, flags, 0600);
	int err = fd < 0 ? errno : 0;
	if (fd < 0 && err == ENOENT) {
		char dir[64];
		snprintf(dir, sizeof(dir), SB_MISSED_DIR "/%u", away);
		if ((mkdirat(a->m[on].dirfd, SB_MISSED_DIR, 0700) < 0 && errno != EEXIST) ||
		    (mkdirat(a->m[on].dirfd, dir, 0700) < 0 && errno != EEXIST))
			err = errno;	/* why the log has no directory */
		else if ((fd = openat(a->m[on].dirfd, path, flags, 0600)) < 0)
			err = errno;
		else
			err = 0;
	}
	if (fd >= 0) {
		size_t len = content ? strlen(content) : 0;
		ssize_t n = len ? write(fd, content, len) : 0;
		err = n == (ssize_t)len ? 0 : n < 0 ? errno : ENOSPC;
		close(fd);
		if (err)
			unlinkat(a->m[on].dirfd, path, 0);	/* a path cut short leads astray */
	}
	if (err)
		log_warn("cannot record %s as changed for member %u on member %u '%s': %s (while no member can, changes are refused: make room there)",
			 id, away, on, a->m[on].path, strerror(err));
	return -err;
}

/* The marker `name` for member `away`, on every member in service: 0
 * when at least one holds it, else -errno (the change must not go ahead
 * unrecorded).  When some cannot hold it, the re-add walks everything. */
static int missed_mark_all(struct array *a, uint32_t away, const char *name, const char *content)
{
	bool ok = false, all = true;
	int err = -EIO;
	for (uint32_t on = 0; on < a->width; on++) {
		if (member_online(a, on)) {
			int r = missed_mark_on(a, on, away, name, content);
			ok |= r == 0;
			all &= r == 0;
			if (r < 0)
				err = r;
		}
	}
	if (!all)
		__atomic_store_n(&a->m[away].missed_incomplete, true, __ATOMIC_RELEASE);
	return ok ? 0 : err;
}

/* A change that has happened (a member left during it) and that no member
 * could record: said loudly, since only this daemon knows it now. */
static void missed_unrecorded(struct array *a, uint32_t away, int err)
{
	if (err < 0)
		log_err("member %u: a change it missed could not be recorded on any member (%s): its re-add by this daemon walks everything, but after a restart it would look current: replace it ('raidfs replace') instead of adding it back",
			away, strerror(-err));
}

int array_missed_file(struct array *a, uint64_t id, const char *path)
{
	char name[24];
	int ret = 0;
	snprintf(name, sizeof(name), "%016" PRIx64, id);
	for (uint32_t away = 0; away < a->width; away++) {
		int r = member_writable(a, away) ? 0 : missed_mark_all(a, away, name, path ? path : "");
		if (r < 0)
			ret = r;
	}
	return ret;
}

/* Something is about to change while members are away: CHANGED_MARK, and
 * NAMES_MARK for a change that is not only a file's contents, once per
 * absence each, so even a change to the namespace alone keeps a returning
 * member from being taken back as is.  -errno when a marker could not be
 * made on any member: the change is refused. */
static int note_absent(struct array *a, uint32_t away, bool names)
{
	struct member *m = &a->m[away];
	int r = 0;
	if (!__atomic_load_n(&m->missed_noted, __ATOMIC_ACQUIRE)) {
		r = missed_mark_all(a, away, CHANGED_MARK, NULL);
		__atomic_store_n(&m->missed_noted, r == 0, __ATOMIC_RELEASE);
	}
	if (r == 0 && names && !__atomic_load_n(&m->names_noted, __ATOMIC_ACQUIRE)) {
		r = missed_mark_all(a, away, NAMES_MARK, NULL);
		__atomic_store_n(&m->names_noted, r == 0, __ATOMIC_RELEASE);
	}
	return r;
}

static int missed_note_change(struct array *a, bool names)
{
	if (array_state(a) == ARRAY_OPTIMAL)
		return 0;
	int ret = 0;
	for (uint32_t away = 0; away < a->width; away++) {
		int r = member_writable(a, away) ? 0 : note_absent(a, away, names);
		if (r < 0)
			ret = r;
	}
	return ret;
}

/* Member j leaves service while namespace operations may be under way
 * (one of them may be what failed on it): they may have reached the
 * others and not j. */
static void missed_names_in_flight(struct array *a, uint32_t j)
{
	if (nslock_try_excl(&a->ns_lock)) {
		nslock_unlock(&a->ns_lock);
		return;
	}
	missed_unrecorded(a, j, note_absent(a, j, true));
}

/* `name` is in member `away`'s log on member `on` (or it cannot be told) */
static bool missed_has(struct array *a, uint32_t on, uint32_t away, const char *name)
{
	char path[96];
	snprintf(path, sizeof(path), SB_MISSED_DIR "/%u/%s", away, name);
	return faccessat(a->m[on].dirfd, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT;
}

bool array_missed_empty(struct array *a, uint32_t away)
{
	if (__atomic_load_n(&a->m[away].missed_incomplete, __ATOMIC_ACQUIRE))
		return false;	/* a marker could not be made */
	for (uint32_t on = 0; on < a->width; on++) {
		if (!log_holder(a, on, away))
			continue;
		int err;
		DIR *d = missed_dir_open(a, on, away, &err);
		if (!d) {
			if (err)
				return false;
			continue;
		}
		struct dirent *e;
		bool empty = true;
		while (empty && (e = readdir(d)))
			empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
		closedir(d);
		if (!empty)
			return false;
	}
	return true;
}

bool array_missed_names(struct array *a, uint32_t away)
{
	if (__atomic_load_n(&a->m[away].missed_incomplete, __ATOMIC_ACQUIRE))
		return true;
	for (uint32_t on = 0; on < a->width; on++)
		if (log_holder(a, on, away) && missed_has(a, on, away, NAMES_MARK))
			return true;
	return false;
}

int array_missed_path(struct array *a, uint32_t away, uint64_t id, char *buf, size_t len)
{
	char path[96];
	snprintf(path, sizeof(path), SB_MISSED_DIR "/%u/%016" PRIx64, away, id);
	for (uint32_t on = 0; on < a->width; on++) {
		int fd = log_holder(a, on, away) ? openat(a->m[on].dirfd, path, O_RDONLY | O_CLOEXEC) : -1;
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, len - 1);
		close(fd);
		if (n > 0 && (size_t)n < len - 1) {
			buf[n] = '\0';
			return (int)n;
		}
	}
	return 0;
}

/* Member `away` just left service: the files being changed right now
 * (the dirty log) changed while it was away. */
static void missed_from_dirty(struct array *a, uint32_t away)
{
	int p = __atomic_load_n(&a->primary, __ATOMIC_ACQUIRE);
	if (p < 0 || !member_online(a, p))
		return;
	DIR *d = opendir_at(a->m[p].dirfd, SB_DIRTY_DIR);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			char id[24], path[PATH_MAX];
			snprintf(id, sizeof(id), "%.16s", e->d_name);	/* without ".c" */
			if (!open_path_of(a, strtoull(id, NULL, 16), path, sizeof(path)))
				path[0] = '\0';	/* not open: found by the walk */
			missed_unrecorded(a, away, missed_mark_all(a, away, id, path));
		}
	closedir(d);
}

int array_missed_load(struct array *a, uint32_t away, uint64_t **ids, size_t *n)
{
	*ids = NULL;
	*n = 0;
	size_t cap = 0;
	for (uint32_t on = 0; on < a->width; on++) {
		if (!log_holder(a, on, away))
			continue;
		int err;
		DIR *d = missed_dir_open(a, on, away, &err);
		if (!d) {
			if (err)
				return err;
			continue;
		}
		struct dirent *e;
		while ((e = readdir(d))) {
			char *end;
			uint64_t id = strtoull(e->d_name, &end, 16);
			if (e->d_name[0] == '.' || *end)
				continue;
			if (UTIL_GROW(*ids, cap, *n + 1) < 0) {
				closedir(d);
				return -ENOMEM;
			}
			(*ids)[(*n)++] = id;
		}
		closedir(d);
	}
	/* sorted, each once */
	qsort(*ids, *n, sizeof(**ids), cmp_u64);
	size_t k = 0;
	for (size_t i = 0; i < *n; i++)
		if (k == 0 || (*ids)[k - 1] != (*ids)[i])
			(*ids)[k++] = (*ids)[i];
	*n = k;
	return 0;
}

void array_missed_clear(struct array *a, uint32_t away)
{
	char dir[64];
	snprintf(dir, sizeof(dir), SB_MISSED_DIR "/%u", away);
	for (uint32_t on = 0; on < a->width; on++) {
		if (!member_writable(a, on))
			continue;
		DIR *d = opendir_at(a->m[on].dirfd, dir);
		if (!d)
			continue;
		struct dirent *e;
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
		unlinkat(a->m[on].dirfd, dir, AT_REMOVEDIR);
	}
	__atomic_store_n(&a->m[away].missed_noted, false, __ATOMIC_RELEASE);
	__atomic_store_n(&a->m[away].names_noted, false, __ATOMIC_RELEASE);
	__atomic_store_n(&a->m[away].missed_incomplete, false, __ATOMIC_RELEASE);
}

void array_dirty_prune(struct array *a, int fd)
{
	/* its note of the cache log is from before it went away (the log
	 * may have been retired since: a mount must not go by it) */
	unlinkat(fd, CACHE_LOG_ID_FILE, 0);
	unlinkat(fd, CACHE_LOG_ID_TMP, 0);
	int p = __atomic_load_n(&a->primary, __ATOMIC_ACQUIRE);
	DIR *d = opendir_at(fd, SB_DIRTY_DIR);
	if (!d || p < 0) {
		if (d)
			closedir(d);
		return;
	}
	struct dirent *e;
	char name[96];
	struct stat st;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(name, sizeof(name), SB_DIRTY_DIR "/%.60s", e->d_name);
		if (fstatat(a->m[p].dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

bool array_left_dirty(struct array *a, uint64_t id)
{
	if (!__atomic_load_n(&a->nleft_dirty, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&a->left_lock);
	bool in = a->nleft_dirty && bsearch(&id, a->left_dirty, a->nleft_dirty, sizeof(id), cmp_u64) != NULL;
	pthread_mutex_unlock(&a->left_lock);
	return in;
}

void array_left_dirty_done(struct array *a, uint64_t id)
{
	pthread_mutex_lock(&a->left_lock);
	uint64_t *at = a->nleft_dirty ? bsearch(&id, a->left_dirty, a->nleft_dirty, sizeof(id), cmp_u64) : NULL;
	if (at) {
		memmove(at, at + 1, (a->left_dirty + a->nleft_dirty - at - 1) * sizeof(id));
		__atomic_store_n(&a->nleft_dirty, a->nleft_dirty - 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&a->left_lock);
}

void array_left_dirty_add(struct array *a, uint64_t id)
{
	pthread_mutex_lock(&a->left_lock);
	size_t i = 0;
	while (i < a->nleft_dirty && a->left_dirty[i] < id)
		i++;
	if (i == a->nleft_dirty || a->left_dirty[i] != id) {
		if (UTIL_GROW(a->left_dirty, a->left_cap, a->nleft_dirty + 1) == 0) {	/* (kept sorted) */
			uint64_t *n = a->left_dirty;
			memmove(n + i + 1, n + i, (a->nleft_dirty - i) * sizeof(id));
			n[i] = id;
			__atomic_store_n(&a->nleft_dirty, a->nleft_dirty + 1, __ATOMIC_RELEASE);
		} else {
			log_err("file %016" PRIx64 ": out of memory: its dirty-log entry may be cleared at a close "
				"without a resync", id);
		}
	}
	pthread_mutex_unlock(&a->left_lock);
}

uint64_t array_size_reached(const struct array *a, const struct layout *l, const int *fds, uint64_t recorded,
			    uint32_t flags)
{
	uint64_t size = 0;
	if (flags & META_F_TRUNC)
		return recorded;
	bool unknown = false;	/* a member whose shard is not here */
	for (uint32_t j = 0; j < a->width; j++) {
		struct stat st;
		/* (a member being rebuilt may hold an old, longer shard) */
		if (fds[j] < 0 || !member_online(a, j) || fstat(fds[j], &st) < 0) {
			unknown = true;
			continue;
		}
		uint64_t s = layout_size_from_shard(l, j, st.st_size);
		if (s > size)
			size = s;
	}
	if (unknown && recorded > size)
		size = recorded;	/* the member not here may hold the tail */
	return size;
}

nlink_t array_dirty_links(struct array *a, uint64_t id, uint32_t j, const struct stat *of)
{
	char name[64];
	struct stat st;
	nlink_t n = 0;
	for (int c = 0; c < 2; c++) {
		dirty_name(id, name, sizeof(name), c ? CACHED_SUFFIX : "");
		n += fstatat(a->m[j].dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == of->st_ino &&
		     st.st_dev == of->st_dev;	/* (a stale mark holds another inode) */
	}
	return n;
}

/* The names of the kinds asked for (plain, cached) on member j removed. */
static void unmark_kinds(struct array *a, uint64_t id, uint32_t j, bool plain, bool cached)
{
	char name[64];
	for (int c = 0; c < 2; c++) {
		if (!(c ? cached : plain))
			continue;
		dirty_name(id, name, sizeof(name), c ? CACHED_SUFFIX : "");
		unlinkat(a->m[j].dirfd, name, 0);
	}
}

void array_unmark_member(struct array *a, uint64_t id, uint32_t j)
{
	unmark_kinds(a, id, j, true, true);
}

void array_clear_dirty(struct array *a, uint64_t id, const char *path)
{
	array_clear_marks(a, id, path, true, true);
}

void array_clear_marks(struct array *a, uint64_t id, const char *path, bool plain, bool cached)
{
	if (array_left_dirty(a, id))
		return;	/* (a resync has to clear it) */
	/* a member that left service a moment ago and has not read the
	 * dirty log yet (missed_from_dirty()) would not find this file
	 * there: it goes into its missed-write log from here */
	for (uint32_t j = 0; j < a->width; j++)
		if (__atomic_load_n(&a->m[j].dirty_scan_due, __ATOMIC_SEQ_CST) && !member_writable(a, j)) {
			char name[24];
			snprintf(name, sizeof(name), "%016" PRIx64, id);
			missed_unrecorded(a, j, missed_mark_all(a, j, name, path ? path : ""));
		}
	for (uint32_t j = 0; j < a->width; j++)
		if (member_writable(a, j))
			unmark_kinds(a, id, j, plain, cached);
}

/* ------------------------------------------------------ runtime failures */

uint32_t array_read_error_threshold = 20;	/* as md's max_corrected_read_errors */
uint32_t array_space_warn_pct = 90;
uint64_t array_space_warn_free;

bool array_space_low(uint64_t used, uint64_t avail)
{
	return (array_space_warn_pct && used * 100 >= (uint64_t)array_space_warn_pct * (used + avail)) ||
	       (array_space_warn_free && avail < array_space_warn_free);
}
uint32_t array_cksum_error_threshold = ARRAY_CKSUM_ERROR_THRESHOLD;

/* ------------------------------------------------------ error counters */

/* Member j's counters from its directory's (fd) .raidfs/counters (zero
 * when it has none, or fd is -1).  Called when a directory takes the
 * slot, and for a stale member at assembly (status shows its history). */
static void counters_load(struct array *a, uint32_t j, int fd)
{
	struct member *m = &a->m[j];
	struct member_counters c = { 0 };
	int r = fd >= 0 ? counters_read(fd, &c) : -ENOENT;
	if (r < 0 && r != -ENOENT)
		log_warn("member %u '%s': its error counters (%s) cannot be read (%s): they start again from zero",
			 j, m->path, COUNTERS_FILE, r == -EINVAL ? "damaged" : strerror(-r));
	__atomic_store_n(&m->read_errors, c.read_errors, __ATOMIC_RELAXED);
	__atomic_store_n(&m->write_errors, c.write_errors, __ATOMIC_RELAXED);
	__atomic_store_n(&m->cksum_errors, c.cksum_errors, __ATOMIC_RELAXED);
	__atomic_store_n(&m->repaired_bytes, c.repaired_bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&m->cksum_failing, false, __ATOMIC_RELAXED);
	__atomic_store_n(&m->counters_due, false, __ATOMIC_RELEASE);
}

static void counters_changed(struct member *m)
{
	__atomic_store_n(&m->counters_due, true, __ATOMIC_RELEASE);
}

static void count_io_error(struct array *a, uint32_t j, bool write)
{
	__atomic_add_fetch(write ? &a->m[j].write_errors : &a->m[j].read_errors, 1, __ATOMIC_RELAXED);
	counters_changed(&a->m[j]);
}

void array_note_repaired(struct array *a, uint32_t j, uint64_t bytes)
{
	if (j >= MEMBER_SLOTS || !bytes)
		return;
	__atomic_add_fetch(&a->m[j].repaired_bytes, bytes, __ATOMIC_RELAXED);
	counters_changed(&a->m[j]);
}

void array_note_cksum_error(struct array *a, uint32_t j, uint64_t bytes_repaired_or_0)
{
	if (j >= MEMBER_SLOTS)
		return;
	struct member *m = &a->m[j];
	uint64_t n = __atomic_add_fetch(&m->cksum_errors, 1, __ATOMIC_RELAXED);
	if (bytes_repaired_or_0)
		__atomic_add_fetch(&m->repaired_bytes, bytes_repaired_or_0, __ATOMIC_RELAXED);
	counters_changed(m);
	uint32_t t = __atomic_load_n(&array_cksum_error_threshold, __ATOMIC_RELAXED);
	if (j >= a->width || !counters_over_threshold(n, t) || (!member_online(a, j) && !member_rebuilding(a, j)))
		return;
	if (__atomic_exchange_n(&m->cksum_failing, true, __ATOMIC_ACQ_REL))
		return;	/* (another thread is failing it) */
	char why[96];
	snprintf(why, sizeof(why), "%" PRIu64 " checksum errors (threshold %u)", n,
		 t);
	event_post(a, "ChecksumErrors", (int)j);
	array_fail_member(a, j, why);
}

void array_counters_clear(struct array *a, uint32_t j)
{
	struct member *m = &a->m[j];
	__atomic_store_n(&m->read_errors, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&m->write_errors, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&m->cksum_errors, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&m->repaired_bytes, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&m->errors, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&m->corrected, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&m->cksum_failing, false, __ATOMIC_RELAXED);
	counters_changed(m);
}

/* The directory of stale member m (not in use, not kept open), opened
 * by its path if that still leads to the directory found at assembly;
 * else -1.  Caller holds a->lock. */
static int stale_dir(const struct member *m)
{
	struct stat st;
	if (!m->stale || !m->stale_ino)
		return -1;
	int fd = open(m->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_dev != m->stale_dev || st.st_ino != m->stale_ino)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

void array_counters_flush(struct array *a)
{
	static struct log_every said;
	for (uint32_t j = 0; j < MEMBER_SLOTS; j++) {
		struct member *m = &a->m[j];
		if (!__atomic_load_n(&m->counters_due, __ATOMIC_ACQUIRE) || a->readonly)
			continue;
		/* the directory and the values together: a slot that takes
		 * another directory meanwhile loads that one's (the write below
		 * then goes to the directory the values belong to) */
		pthread_mutex_lock(&a->lock);
		__atomic_store_n(&m->counters_due, false, __ATOMIC_RELEASE);
		int fd = m->dirfd >= 0 ? fcntl(m->dirfd, F_DUPFD_CLOEXEC, 0) : stale_dir(m);
		struct member_counters c = {
			.read_errors = __atomic_load_n(&m->read_errors, __ATOMIC_RELAXED),
			.write_errors = __atomic_load_n(&m->write_errors, __ATOMIC_RELAXED),
			.cksum_errors = __atomic_load_n(&m->cksum_errors, __ATOMIC_RELAXED),
			.repaired_bytes = __atomic_load_n(&m->repaired_bytes, __ATOMIC_RELAXED),
		};
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s", m->path);
		pthread_mutex_unlock(&a->lock);
		if (fd < 0)
			continue;
		int r = counters_write(fd, &c);
		close(fd);
		unsigned long held;
		if (r < 0 && log_every(&said, 60, &held))
			log_warn("member %u '%s': cannot write its error counters (%s): %s; they are kept in memory%s",
				 j, path, COUNTERS_FILE, strerror(-r), held ? " (more such warnings held back)" : "");
	}
}

bool array_writable(struct array *a)
{
	return !a->readonly && array_state(a) != ARRAY_FAILED;
}

/* Lowest online member; the namespace is served from it. */
static void pick_primary_locked(struct array *a)
{
	int old = a->primary;
	for (uint32_t j = 0; j < a->width; j++) {
		if (member_online(a, j)) {
			if ((int)j != old) {
				HOOKS(a, slot_change_begin);
				__atomic_store_n(&a->primary, (int)j, __ATOMIC_RELEASE);
				HOOKS(a, slot_change_end, a);
				log_warn("array '%s': member %u '%s' now serves the namespace",
					 a->sb.name, j, a->m[j].path);
			}
			return;
		}
	}
}

#define DEFER_MAX MEMBER_SLOTS
static __thread struct {
	bool on;
	int n;
	uint32_t j[DEFER_MAX];
	char why[DEFER_MAX][128];
} deferred;

void array_defer_failures(struct array *a, bool on)
{
	if (on) {
		deferred.on = true;
		return;
	}
	deferred.on = false;
	for (int i = 0; i < deferred.n; i++)
		array_fail_member(a, deferred.j[i], deferred.why[i]);
	deferred.n = 0;
}

bool array_failures_deferred(void)
{
	return deferred.n > 0;
}

int array_fail_member(struct array *a, uint32_t j, const char *why)
{
	if (deferred.on) {
		bool seen = false;
		for (int i = 0; i < deferred.n && !seen; i++)
			seen = deferred.j[i] == j;
		if (!seen && deferred.n < DEFER_MAX) {
			deferred.j[deferred.n] = j;
			snprintf(deferred.why[deferred.n++], sizeof(deferred.why[0]), "%s", why);
		}
		return 1;
	}
	pthread_mutex_lock(&a->lock);
	bool rebuilding = j < a->width && member_rebuilding(a, j);
	if (j >= a->width || (!member_online(a, j) && !rebuilding)) {
		pthread_mutex_unlock(&a->lock);
		return 0;
	}
	__atomic_store_n(&a->m[j].dirty_scan_due, true, __ATOMIC_SEQ_CST);
	__atomic_store_n(&a->m[j].state, MS_FAULTY, __ATOMIC_SEQ_CST);
	__atomic_store_n(&a->sizes_due, true, __ATOMIC_RELEASE);
	a->sb.members[j].state = MS_FAULTY;
	/* a member failed during its rebuild holds a partial copy: should
	 * its directory return, it is compared file by file, never taken
	 * back as it is nor resynced from the missed-write log alone (as
	 * for a slot that went to another directory) */
	if (rebuilding)
		a->sb.members[j].gen++;
	a->m[j].partial = rebuilding;
	snprintf(a->m[j].fail_reason, sizeof(a->m[j].fail_reason), "%s", why);
	a->sb.events++;
	enum array_state st = array_state(a);
	if (rebuilding)
		log_err("member %u '%s' failed during its rebuild: %s; the rebuild stops, array '%s' is %s",
			j, a->m[j].path, why, a->sb.name, array_state_name(st));
	else
		log_err("member %u '%s' failed: %s; array '%s' is now %s", j, a->m[j].path, why,
			a->sb.name, array_state_name(st));
	array_write_superblocks_locked(a);
	if ((int)j == a->primary)
		pick_primary_locked(a);
	pthread_mutex_unlock(&a->lock);
	if (rebuilding)
		HOOKS(a, target_failed, j);
	if ((int)j == shadow_of(a))
		HOOKS(a, replaced_member_failed);	/* its copy becomes its rebuild */
	missed_from_dirty(a, j);
	__atomic_store_n(&a->m[j].dirty_scan_due, false, __ATOMIC_SEQ_CST);
	missed_names_in_flight(a, j);
	event_post(a, "Fail", j);
	if (st == ARRAY_FAILED) {
		log_err("array '%s' has lost more members than %s tolerates: it refuses writes and returns errors for data it cannot reconstruct; bring the members back (a disk that returns to its path is taken back by itself, or 'raidfs add')",
			a->sb.name, layout_level_name(a->lay.level));
		event_post(a, "ArrayFailed", j);
	} else {
		event_post(a, "DegradedArray", j);
		if (no_redundancy_left(a))
			event_post(a, "NoRedundancy", -1);	/* one more loss loses data */
	}
	return 1;
}

void array_member_refused(struct array *a, uint32_t j, int err, const char *what)
{
	char why[160];
	if (j < MEMBER_SLOTS)
		count_io_error(a, j, true);
	snprintf(why, sizeof(why), "refused %s (%s)", what, strerror(-err));
	if (err == -ENXIO || err == -ENODEV || err == -ENOTCONN)
		a->m[j].went_away = true;	/* the disk is gone, not broken */
	array_fail_member(a, j, why);
}

int array_judge_refusals(struct array *a, uint64_t refused, const int *err, bool held, const char *what)
{
	int ret = 0;
	for (uint32_t j = 0; j < a->width; j++) {
		if (!(refused >> j & 1))
			continue;
		bool fail = held && !member_error_is_own(err[j]);
		log_err("member %u '%s' refused %s: %s%s", j, a->m[j].path, what, strerror(-err[j]),
			fail ? " while the others took it; the member is failed, as on a write error" : "");
		if (fail)
			array_member_refused(a, j, err[j], what);
		else if (!ret)
			ret = err[j];
	}
	return ret == 0 && !array_writable(a) ? -EIO : ret;
}

bool array_member_io_error(struct array *a, uint32_t j, int err, bool write)
{
	char why[96];
	if (j < MEMBER_SLOTS)
		count_io_error(a, j, write);
	if (!member_online(a, j))
		return true;
	if (err == -ENXIO || err == -ENODEV || err == -ENOTCONN)
		a->m[j].went_away = true;	/* the disk is gone, not broken */
	if (write || err == -ENXIO || err == -ENODEV || err == -ENOTCONN) {
		snprintf(why, sizeof(why), "%s error (%s)", write ? "write" : "I/O", strerror(-err));
		array_fail_member(a, j, why);
		return true;
	}
	uint64_t n = __atomic_load_n(&a->m[j].errors, __ATOMIC_RELAXED);
	if (n >= array_read_error_threshold) {
		snprintf(why, sizeof(why), "%llu read errors (threshold %u)",
			 (unsigned long long)n, array_read_error_threshold);
		array_fail_member(a, j, why);
		return true;
	}
	return false;
}

int array_sync_members(struct array *a)
{
	if (member_sync_mode == MSYNC_NEVER)
		return 0;
	dev_t done[MEMBER_SLOTS];
	int ndone = 0;
	for (uint32_t j = 0; j < MEMBER_SLOTS; j++) {
		bool shadow = j == SHADOW && shadow_of(a) >= 0 && a->m[SHADOW].dirfd >= 0;
		if (!(j < a->width && member_writable(a, j)) && !shadow)
			continue;
		struct stat st;
		bool known = fstat(a->m[j].dirfd, &st) == 0;
		bool seen = false;
		for (int i = 0; known && i < ndone && !seen; i++)
			seen = done[i] == st.st_dev;
		if (seen)
			continue;	/* (that filesystem is synced: all of it) */
		int r = member_syncfs(a, j);
		if (r == 0) {
			if (known)
				done[ndone++] = st.st_dev;
			continue;
		}
		log_err("cannot make what was written to member %u '%s' durable (syncfs): %s", j, a->m[j].path,
			strerror(-r));
		if (shadow)
			array_abandon_replace(a);	/* (callers may hold the namespace lock) */
		else
			array_member_io_error(a, j, r, true);
	}
	return array_writable(a) ? 0 : -EIO;
}

void array_member_corrected(struct array *a, uint32_t j)
{
	__atomic_add_fetch(&a->m[j].corrected, 1, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------- replacement */

/* Put directory fd (path) in member j's slot in `state`, events bumped
 * (and the slot's generation when it is `another` directory than the
 * member's own) and superblocks written; -EBUSY if j is in service.  fd
 * is ours in every case.  Takes a->lock. */
static int install_member(struct array *a, uint32_t j, int fd, const char *path,
			  enum member_state state, bool another, enum array_state *st)
{
	pthread_mutex_lock(&a->lock);
	if (member_online(a, j) || member_rebuilding(a, j)) {
		pthread_mutex_unlock(&a->lock);
		close(fd);
		return -EBUSY;
	}
	if (a->m[j].dirfd >= 0)
		close(a->m[j].dirfd);
	if (array_lock_dir(fd) < 0)	/* (a re-add of the member's own directory, unlocked by that close) */
		log_warn("member %u '%s' is also open in another running raidfs", j, path);
	a->m[j].dirfd = fd;
	snprintf(a->m[j].path, sizeof(a->m[j].path), "%s", path);
	a->m[j].fail_reason[0] = '\0';
	a->m[j].stale = a->m[j].went_away = a->m[j].readd_told = a->m[j].partial = false;
	a->m[j].errors = a->m[j].corrected = a->m[j].reads = a->m[j].writes = 0;
	counters_load(a, j, fd);	/* (the directory's own: a re-add keeps them) */
	memset(&a->m[j].fault, 0, sizeof(a->m[j].fault));
	__atomic_store_n(&a->m[j].state, state, __ATOMIC_RELEASE);
	a->sb.members[j].state = state;
	snprintf(a->sb.members[j].path, SB_PATH_MAX, "%s", path);
	a->m[j].given = true;
	if (another) {
		a->sb.members[j].gen++;	/* the old directory is no longer j */
		random_bytes(a->sb.members[j].uuid, 16);	/* and it has another identity */
	} else if (sb_uuid_nil(a->sb.members[j].uuid)) {
		random_bytes(a->sb.members[j].uuid, 16);	/* (an array of an older format) */
	}
	a->sb.events++;
	mkdirat(fd, SB_DIR, 0700);
	mkdirat(fd, SB_DIRTY_DIR, 0700);
	int r = array_write_superblocks_locked(a);
	*st = array_state(a);
	pthread_mutex_unlock(&a->lock);
	return r;
}

int array_replace_begin(struct array *a, uint32_t j, int newfd, const char *path, bool same_dir)
{
	enum array_state st;
	int r = install_member(a, j, newfd, path, MS_REBUILDING, !same_dir, &st);
	if (r != -EBUSY)
		log_warn("array '%s': member %u is being rebuilt onto '%s'", a->sb.name, j, path);
	return r;
}

int array_member_back(struct array *a, uint32_t j, int fd, const char *path)
{
	enum array_state st;
	int r = install_member(a, j, fd, path, MS_ONLINE, false, &st);
	if (r == -EBUSY)
		return r;
	log_warn("array '%s': member %u '%s' is back, with nothing missed; array is %s", a->sb.name, j, path,
		 array_state_name(st));
	event_post(a, "MemberReturned", j);
	return r;
}

/* A path (PATH_MAX) into a superblock's path field, cut and NUL padded */
static void sb_path_set(char dst[SB_PATH_MAX], const char *src)
{
	size_t l = strnlen(src, SB_PATH_MAX - 1);
	memcpy(dst, src, l);
	memset(dst + l, 0, SB_PATH_MAX - l);
}

/* Record member j's replacement in place in the superblocks (j >= 0:
 * the shadow's path; -1: none any more); events bumped, superblocks
 * written.  Caller holds a->lock. */
static void record_replacement_locked(struct array *a, int j)
{
	a->sb.replacing = j >= 0;
	a->sb.repl_of = j >= 0 ? (uint32_t)j : 0;
	sb_path_set(a->sb.repl_path, j >= 0 ? a->m[SHADOW].path : "");
	if (j < 0)
		memset(a->sb.repl_uuid, 0, 16);
	a->sb.events++;
	array_write_superblocks_locked(a);
}

int array_shadow_begin(struct array *a, uint32_t j, int fd, const char *path)
{
	/* no open file may carry a shard of an earlier replacement's
	 * directory into this one (none should: the commit, the promotion
	 * and the drop keep opens out while they change the slot) */
	if (shadow_of(a) < 0)
		HOOKS(a, forget_member, SHADOW);
	pthread_mutex_lock(&a->lock);
	if (!member_online(a, j) || shadow_of(a) >= 0) {
		pthread_mutex_unlock(&a->lock);
		return -EBUSY;
	}
	struct member *s = &a->m[SHADOW];
	s->dirfd = fd;
	snprintf(s->path, sizeof(s->path), "%s", path);
	s->given = true;
	random_bytes(a->sb.repl_uuid, 16);	/* the directory's identity, member j's once done */
	s->errors = s->corrected = s->reads = s->writes = 0;
	counters_load(a, SHADOW, fd);
	memset(&s->fault, 0, sizeof(s->fault));
	s->state = MS_REBUILDING;
	mkdirat(fd, SB_DIR, 0700);
	mkdirat(fd, SB_DIRTY_DIR, 0700);
	__atomic_store_n(&a->shadow_of, (int)j, __ATOMIC_RELEASE);
	/* recorded, so that a mount after an unmount or a crash resumes it */
	record_replacement_locked(a, (int)j);
	pthread_mutex_unlock(&a->lock);
	log_warn("array '%s': member %u '%s' is being replaced by '%s'; it serves until the copy is complete",
		 a->sb.name, j, a->m[j].path, path);
	return 0;
}

void array_shadow_drop(struct array *a)
{
	HOOKS(a, slot_change_begin);	/* opens wait (see shadow_take_slot()) */
	pthread_mutex_lock(&a->lock);
	int j = shadow_of(a);
	__atomic_store_n(&a->shadow_of, -1, __ATOMIC_RELEASE);
	int fd = a->m[SHADOW].dirfd;
	a->m[SHADOW].dirfd = -1;
	a->m[SHADOW].state = MS_REMOVED;
	if (a->sb.replacing)
		record_replacement_locked(a, -1);
	if (fd >= 0) {
		/* no longer anything of the array's: a mount must not take it */
		unlinkat(fd, SB_FILE, 0);
		retire_fd_locked(a, fd);
	}
	pthread_mutex_unlock(&a->lock);
	HOOKS(a, forget_member, SHADOW);
	HOOKS(a, slot_change_end, a);
	if (j >= 0)
		log_warn("array '%s': the replacement of member %d was abandoned; '%s' holds a partial copy (empty it before trying again)",
			 a->sb.name, j, a->m[SHADOW].path);
}

/*
 * The shadow takes member j's slot: its shards become rf->fd[j] in every
 * open file (a write meanwhile reaches whichever shard its file has at
 * that moment, and the shadow's also gets it), then, under a->lock, the
 * slot's directory.  If
 * the copy is complete and j still online, the slot stays ONLINE (the
 * replacement is done) and the old directory loses its superblock;
 * otherwise j failed meanwhile and the slot becomes REBUILDING (promote).
 * Returns 1 (done), 0 (promoted) or a negative errno.
 */
static int shadow_take_slot(struct array *a, int j, bool complete)
{
	/* opens wait from here until the slot has its new directory (an
	 * open between the two would keep the old directory's shard) */
	HOOKS(a, slot_change_begin);
	HOOKS(a, shadow_commit, j);
	pthread_mutex_lock(&a->lock);
	bool done = complete && member_online(a, j);
	struct member *m = &a->m[j];
	int old = m->dirfd;
	char oldpath[PATH_MAX];
	snprintf(oldpath, sizeof(oldpath), "%s", m->path);
	m->dirfd = a->m[SHADOW].dirfd;
	memcpy(m->path, a->m[SHADOW].path, sizeof(m->path));
	m->errors = m->corrected = m->reads = m->writes = 0;
	counters_load(a, (uint32_t)j, m->dirfd);
	memset(&m->fault, 0, sizeof(m->fault));
	if (!done) {
		m->stale = m->went_away = m->readd_told = false;
		m->fail_reason[0] = '\0';
		__atomic_store_n(&m->state, MS_REBUILDING, __ATOMIC_RELEASE);
		a->sb.members[j].state = MS_REBUILDING;
	}
	sb_path_set(a->sb.members[j].path, m->path);
	m->given = true;
	a->sb.members[j].gen++;
	memcpy(a->sb.members[j].uuid, a->sb.repl_uuid, 16);
	memset(a->sb.repl_uuid, 0, 16);
	a->m[SHADOW].dirfd = -1;
	a->m[SHADOW].state = MS_REMOVED;
	__atomic_store_n(&a->shadow_of, -1, __ATOMIC_RELEASE);
	/* opens go on, keyed by the slot's new directory (and no shadow
	 * shard: one opened now would be taken for the next replacement's) */
	HOOKS(a, slot_change_end, a);
	a->sb.replacing = false;
	sb_path_set(a->sb.repl_path, "");
	a->sb.events++;
	int r = array_write_superblocks_locked(a);
	/* the old directory is no longer a member: a later mount must not
	 * take it for one (a failed one is stale by its event counter) */
	if (done)
		unlinkat(old, SB_FILE, 0);
	if (old >= 0)
		retire_fd_locked(a, old);
	pthread_mutex_unlock(&a->lock);
	if (done) {
		log_info("array '%s': member %d is now '%s' (replaced '%s', which can be removed)", a->sb.name, j,
			 m->path, oldpath);
		event_post(a, "RebuildFinished", j);
	} else {
		log_warn("array '%s': member %d failed during its replacement: '%s' becomes its rebuild target and keeps what was copied",
			 a->sb.name, j, m->path);
	}
	return r < 0 ? r : done;
}

int array_shadow_commit(struct array *a)
{
	int j = shadow_of(a);
	return j < 0 ? -EINVAL : shadow_take_slot(a, j, true);
}

int array_shadow_promote(struct array *a)
{
	int j = shadow_of(a);
	if (j < 0 || member_online(a, j) || a->lay.red == RED_NONE || array_state(a) == ARRAY_FAILED)
		return -EBUSY;
	return shadow_take_slot(a, j, false);
}

int array_member_rebuilt(struct array *a, uint32_t j)
{
	pthread_mutex_lock(&a->lock);
	if (!member_rebuilding(a, j)) {
		pthread_mutex_unlock(&a->lock);
		return -EINVAL;
	}
	__atomic_store_n(&a->m[j].state, MS_ONLINE, __ATOMIC_RELEASE);
	a->sb.members[j].state = MS_ONLINE;
	a->sb.events++;
	int r = array_write_superblocks_locked(a);
	/* the primary keeps serving: switching would change every inode
	 * number the kernel and open files know */
	if (a->primary < 0 || !member_online(a, a->primary))
		pick_primary_locked(a);
	enum array_state st = array_state(a);
	pthread_mutex_unlock(&a->lock);
	log_info("array '%s': member %u '%s' rebuilt; array is %s", a->sb.name, j, a->m[j].path,
		 array_state_name(st));
	return r;
}

/* A faulty member leaves the array: its directory is closed (the disk can
 * be unplugged) and it is recorded as removed. */
int array_remove_member(struct array *a, uint32_t j, char *err, size_t errlen)
{
	pthread_mutex_lock(&a->lock);
	int st = __atomic_load_n(&a->m[j].state, __ATOMIC_ACQUIRE);
	if (member_online(a, j) || member_rebuilding(a, j)) {
		pthread_mutex_unlock(&a->lock);
		snprintf(err, errlen, "member %u '%s' is %s: fail it first ('raidfs fail %s %u')", j,
			 a->m[j].path, st == MS_ONLINE ? "online" : "being rebuilt", a->mountpoint, j);
		return -EBUSY;
	}
	if (st == MS_REMOVED) {
		pthread_mutex_unlock(&a->lock);
		snprintf(err, errlen, "member %u is already removed", j);
		return -EINVAL;
	}
	__atomic_store_n(&a->m[j].state, MS_REMOVED, __ATOMIC_RELEASE);
	a->sb.members[j].state = MS_REMOVED;
	a->sb.events++;
	int r = array_write_superblocks_locked(a);
	int fd = a->m[j].dirfd;
	a->m[j].dirfd = -1;
	pthread_mutex_unlock(&a->lock);
	HOOKS(a, forget_member, j);
	if (fd >= 0)
		close(fd);
	log_warn("array '%s': member %u '%s' removed", a->sb.name, j, a->m[j].path);
	event_post(a, "Remove", j);
	return r;
}

/* -------------------------------------------------------------- spares */

/* Take spare slot idx out of the list, closing the gap (its dirfd is the
 * caller's now).  Caller holds a->lock. */
static void drop_spare_locked(struct array *a, uint32_t idx)
{
	for (uint32_t s = idx; s + 1 < a->width + a->sb.nspares; s++) {
		a->m[s].dirfd = a->m[s + 1].dirfd;
		a->m[s].given = a->m[s + 1].given;
		memcpy(a->m[s].path, a->m[s + 1].path, sizeof(a->m[s].path));
		a->sb.members[s] = a->sb.members[s + 1];
	}
	a->sb.nspares--;
	a->m[a->width + a->sb.nspares].dirfd = -1;
	memset(&a->sb.members[a->width + a->sb.nspares], 0, sizeof(a->sb.members[0]));
}

/* Directory fd (path) as a new last spare entry (queued_for: 0, a hot
 * spare; J + 1, the queued replacement of member J), recorded in the
 * superblocks (events bumped; the directory gets its own).  Caller holds
 * a->lock and has checked there is room. */
static int append_spare_locked(struct array *a, int fd, const char *path, uint8_t queued_for)
{
	uint32_t idx = a->width + a->sb.nspares++;
	a->m[idx].dirfd = fd;
	snprintf(a->m[idx].path, sizeof(a->m[idx].path), "%s", path);
	a->m[idx].given = true;
	a->m[idx].state = MS_SPARE;
	a->sb.members[idx].state = MS_SPARE;
	a->sb.members[idx].queued_for = queued_for;
	random_bytes(a->sb.members[idx].uuid, 16);
	snprintf(a->sb.members[idx].path, SB_PATH_MAX, "%s", path);
	a->sb.events++;
	mkdirat(fd, SB_DIR, 0700);
	return array_write_superblocks_locked(a);
}

int array_remove_spare(struct array *a, const char *path, int *queued_for, char *err, size_t errlen)
{
	pthread_mutex_lock(&a->lock);
	char *want = realpath(path, NULL);
	int found = -1;
	for (uint32_t s = 0; s < a->sb.nspares && found < 0; s++) {
		const char *p = a->m[a->width + s].path;
		if (!strcmp(p, path) || (want && !strcmp(p, want)))
			found = s;
	}
	free(want);
	if (found < 0) {
		pthread_mutex_unlock(&a->lock);
		snprintf(err, errlen, "'%s' is neither a member nor a spare of array '%s'", path, a->sb.name);
		return -ENOENT;
	}
	uint32_t idx = a->width + found;
	int fd = a->m[idx].dirfd;
	int q = (int)a->sb.members[idx].queued_for - 1;
	if (queued_for)
		*queued_for = q;
	drop_spare_locked(a, idx);
	a->sb.events++;
	int r = array_write_superblocks_locked(a);
	pthread_mutex_unlock(&a->lock);
	if (fd >= 0) {
		unlinkat(fd, SB_FILE, 0);	/* an empty directory again */
		unlinkat(fd, SB_DIR, AT_REMOVEDIR);
		close(fd);
	}
	if (q >= 0)
		log_warn("array '%s': the queued replacement of member %d by '%s' is cancelled", a->sb.name, q, path);
	else
		log_info("array '%s': spare '%s' removed", a->sb.name, path);
	return r;
}

int array_queue_replacement(struct array *a, uint32_t j, int fd, const char *path, char *err, size_t errlen)
{
	pthread_mutex_lock(&a->lock);
	for (uint32_t s = 0; s < a->sb.nspares; s++) {
		uint32_t idx = a->width + s;
		if (a->sb.members[idx].queued_for == j + 1) {
			snprintf(err, errlen, "member %u already has a replacement queued, '%s': cancel it first with 'raidfs remove %s %s'",
				 j, a->m[idx].path, a->mountpoint, a->m[idx].path);
			pthread_mutex_unlock(&a->lock);
			return -EBUSY;
		}
	}
	if (a->sb.nspares >= SB_MAX_SPARES) {
		pthread_mutex_unlock(&a->lock);
		snprintf(err, errlen, "the array already holds %d spares and queued replacements (the most it can hold): remove a spare first",
			 SB_MAX_SPARES);
		return -ENOSPC;
	}
	int r = append_spare_locked(a, fd, path, (uint8_t)(j + 1));
	pthread_mutex_unlock(&a->lock);
	log_warn("array '%s': the replacement of member %u by '%s' is queued: it starts when the running rebuild ends",
		 a->sb.name, j, path);
	return r;
}

int array_queued(struct array *a, int *members, int max)
{
	int n = 0;
	pthread_mutex_lock(&a->lock);
	for (uint32_t s = 0; s < a->sb.nspares && n < max; s++) {
		uint32_t idx = a->width + s;
		if (a->sb.members[idx].queued_for && a->m[idx].dirfd >= 0)
			members[n++] = a->sb.members[idx].queued_for - 1;
	}
	pthread_mutex_unlock(&a->lock);
	return n;
}

/* The queued directory open as fd (at path) is gone: deleted, moved or
 * unmounted, its superblock removed or another array's.  *why says how. */
static bool queued_dir_gone(struct array *a, int fd, const char *path, const char **why)
{
	struct stat st, at;
	struct superblock sb;
	if (fstat(fd, &st) < 0 || st.st_nlink == 0) {
		*why = "its directory was deleted";
		return true;
	}
	if (path[0] == '/' && (stat(path, &at) < 0 ? errno == ENOENT || errno == ENOTDIR
						: at.st_dev != st.st_dev || at.st_ino != st.st_ino)) {
		*why = "its directory is no longer at its path (moved, or its disk unmounted)";
		return true;
	}
	int r = sb_read(fd, &sb, NULL);
	if (r == -ENOENT) {
		*why = "its superblock disappeared";
		return true;
	}
	if (r == 0 && memcmp(sb.uuid, a->sb.uuid, 16) != 0) {
		*why = "it now holds another array's superblock";
		return true;
	}
	return false;
}

void array_queued_check(struct array *a)
{
	int fds[SB_MAX_SPARES], n = 0;
	char paths[SB_MAX_SPARES][PATH_MAX];
	pthread_mutex_lock(&a->lock);
	for (uint32_t s = 0; s < a->sb.nspares; s++) {
		uint32_t idx = a->width + s;
		if (a->sb.members[idx].queued_for && a->m[idx].dirfd >= 0) {
			fds[n] = a->m[idx].dirfd;
			snprintf(paths[n++], PATH_MAX, "%s", a->m[idx].path);
		}
	}
	pthread_mutex_unlock(&a->lock);
	for (int i = 0; i < n; i++) {
		const char *why;
		/* (looked at without the lock first: a look at a dying disk may
		 * hang; then again under it, where the entry cannot move) */
		if (!queued_dir_gone(a, fds[i], paths[i], &why))
			continue;
		pthread_mutex_lock(&a->lock);
		int found = -1;
		for (uint32_t s = 0; s < a->sb.nspares && found < 0; s++) {
			uint32_t idx = a->width + s;
			if (a->sb.members[idx].queued_for && a->m[idx].dirfd == fds[i] && !strcmp(a->m[idx].path, paths[i]) &&
			    queued_dir_gone(a, fds[i], paths[i], &why))
				found = (int)idx;
		}
		if (found < 0) {
			pthread_mutex_unlock(&a->lock);
			continue;
		}
		int j = a->sb.members[found].queued_for - 1;
		drop_spare_locked(a, found);
		a->sb.events++;
		array_write_superblocks_locked(a);
		pthread_mutex_unlock(&a->lock);
		close(fds[i]);	/* (nothing is removed from it: it may be another array's now) */
		log_err("array '%s': the queued replacement of member %d by '%s' is dropped: %s; queue another with 'raidfs replace %s %d NEWDIR'",
			a->sb.name, j, paths[i], why, a->mountpoint, j);
	}
}

uint32_t array_spare_count(struct array *a)
{
	pthread_mutex_lock(&a->lock);
	uint32_t n = 0;
	for (uint32_t s = 0; s < a->sb.nspares; s++)
		n += a->m[a->width + s].dirfd >= 0;
	pthread_mutex_unlock(&a->lock);
	return n;
}

int array_add_spare(struct array *a, int fd, const char *path, char *err, size_t errlen)
{
	pthread_mutex_lock(&a->lock);
	if (a->sb.nspares >= SB_MAX_SPARES) {
		pthread_mutex_unlock(&a->lock);
		snprintf(err, errlen, "the array already has %d spares (the most it can hold)", SB_MAX_SPARES);
		return -ENOSPC;
	}
	int r = append_spare_locked(a, fd, path, 0);
	pthread_mutex_unlock(&a->lock);
	log_info("array '%s': '%s' added as a hot spare", a->sb.name, path);
	return r;
}

int array_take_spare(struct array *a, uint32_t j, bool only_queued, int *fd, char *path, size_t pathlen, bool *queued)
{
	pthread_mutex_lock(&a->lock);
	int found = -1;
	/* a replacement queued for j first, else a hot spare for any member;
	 * never one queued for another member */
	for (int pass = 0; pass < (only_queued ? 1 : 2) && found < 0; pass++)
		for (uint32_t s = 0; s < a->sb.nspares && found < 0; s++)
			if (a->m[a->width + s].dirfd >= 0 &&
			    a->sb.members[a->width + s].queued_for == (pass == 0 ? j + 1 : 0))
				found = s;
	if (found < 0) {
		pthread_mutex_unlock(&a->lock);
		return -ENOENT;
	}
	uint32_t idx = a->width + found;
	*fd = a->m[idx].dirfd;
	*queued = a->sb.members[idx].queued_for != 0;
	snprintf(path, pathlen, "%s", a->m[idx].path);
	drop_spare_locked(a, idx);
	pthread_mutex_unlock(&a->lock);
	return 0;
}
