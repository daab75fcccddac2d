/*
 * fuse.c - the FUSE operations of raidfs (libfuse3 high-level API).
 *
 * Namespace operations (mkdir, rename, link, chmod ...) are applied to every
 * present member at the same relative path, primary member first: the
 * primary's result is the result the caller sees, so the mount behaves
 * like the primary's local filesystem.  Member paths are always resolved
 * relative to the member's directory descriptor (the *at() calls), so a
 * deep path inside the mount never overflows PATH_MAX because of the member
 * prefix.  Regular files go through file.c / stripe.c.
 *
 * Ownership: when the daemon runs as root (for example with allow_other),
 * new files, directories, symlinks and nodes are chowned to the calling
 * process's uid/gid (the group of a setgid parent directory wins), and the
 * kernel checks permissions (default_permissions).
 *
 * `.raidfs` at the member root holds raidfs's own state and is hidden.
 */
#define FUSE_USE_VERSION 312
#include <fuse.h>

#include <dirent.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cache.h"
#include "fsops.h"
#include "file.h"
#include "meta.h"
#include "csum.h"
#include "hidden.h"
#include "nsintent.h"
#include "rebuild.h"
#include "util.h"

static struct array *A;

static const char *rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

/* raidfs's own directory is not part of the user's namespace */
static bool hidden(const char *path)
{
	return strncmp(path, "/" SB_DIR, sizeof(SB_DIR)) == 0 &&
	       (path[sizeof(SB_DIR)] == '\0' || path[sizeof(SB_DIR)] == '/');
}

/* lookups that found nothing (see fs_rename()) */
static unsigned long hide_misses;

/* path is NULL for an unlinked or renamed-away object reached by handle */
#define CHECK_HIDDEN(p) do { if (!(p) || hidden(p)) return -ENOENT; } while (0)

/* File handles: an rfile pointer for regular files, with bit 1 set for a
 * direct-I/O handle (see direct_io_for()), a dir handle with the low bit
 * set for directories (both are at least 8-byte aligned). */
#define FH_DIRECT 2
struct dirh {
	DIR *d;			/* on the primary of opendir() */
	bool root;
	char *path;		/* as opendir() saw it (fs_fsyncdir()) */
};

static struct rfile *RF(const struct fuse_file_info *fi)
{
	if (!fi || !fi->fh || (fi->fh & 1))
		return NULL;
	return (struct rfile *)(uintptr_t)(fi->fh & ~(uint64_t)FH_DIRECT);
}

static struct dirh *DH(const struct fuse_file_info *fi)
{
	if (!fi || !(fi->fh & 1))
		return NULL;
	return (struct dirh *)(uintptr_t)(fi->fh & ~(uint64_t)1);
}
/*
 * PRIMARY reads the current primary member and remembers it for this
 * thread's operation (cur_primary); OP_FD is that same member again, and
 * FOR_OTHERS skips exactly it.  So when the primary fails in the middle of
 * an operation, the operation still reaches every online member once.
 */
static __thread int cur_primary;
static inline int primary_fd(void)
{
	cur_primary = __atomic_load_n(&A->primary, __ATOMIC_ACQUIRE);
	return A->m[cur_primary].dirfd;
}
#define PRIMARY primary_fd()
#define OP_FD (A->m[cur_primary].dirfd)
#define PRIMARY_IDX (primary_fd(), cur_primary)
/* the paths ON_PRIMARY() re-checks on ENOENT (see primary_disagrees());
 * rename and link shadow path2 with their second name */
#define PRIMARY_PATH path
static const char *const path2 = NULL;
#define FOR_OTHER_MEMBERS(j) \
	for (uint32_t j = 0; j < A->width; j++) \
		if ((int)j != cur_primary && member_writable(A, j))
/* the same, and the replacement of a member being replaced in place */
static inline uint32_t next_slot(uint32_t j)
{
	return j + 1 < A->width ? j + 1 : j < SHADOW ? SHADOW : SHADOW + 1;
}
#define FOR_OTHERS(j) \
	for (uint32_t j = 0; j <= SHADOW; j = next_slot(j)) \
		if ((int)j != cur_primary && member_writable(A, j))

/* A namespace operation failed on a non-primary member: a broken or
 * vanished member is failed; anything else is logged (check finds it). */
static void note_member_error(uint32_t j, const char *op, const char *path, const char *to, int err)
{
	const char *why;
	if (member_rebuilding(A, j)) {
		/* the rebuild brings both names up to date (the old name
		 * first: see the redo queue in rebuild.c) */
		rebuild_redo(A, path);
		if (to)
			rebuild_redo(A, to);
		return;
	}
	/* (the daemon's own shortage is not the member's fault) */
	if (!member_error_is_own(err) && (member_error_is_fatal(err) || member_vanished(A, j, &why))) {
		char msg[160];
		snprintf(msg, sizeof(msg), "%s of '%s' failed: %s", op, path ? path : "?", strerror(err));
		array_fail_member(A, j, msg);
		return;
	}
	log_err("%s '%s' failed on member %u '%s': %s (the member's namespace may now differ; run 'raidfs check')",
		op, path, j, A->m[j].path, strerror(err));
}

/* The primary failed an operation: if the member itself is broken or
 * gone, fail it (another member becomes primary) and tell the caller to
 * retry; an ordinary error (ENOENT, EEXIST ...) is the answer. */
static bool primary_disagrees(const char *path);

static bool primary_lost(int err, const char *path, const char *path2)
{
	int p = cur_primary;
	const char *why;
	char msg[160];
	if (member_error_is_fatal(err)) {
		snprintf(msg, sizeof(msg), "namespace operation failed: %s", strerror(err));
		return array_fail_member(A, p, msg) == 1 && array_state(A) != ARRAY_FAILED;
	}
	/* cheap tests first (ENOENT is common: every lookup of a missing
	 * name): the root directory gone, the other members disagreeing,
	 * the member's own .raidfs gone (an rm -rf of the member directory
	 * that took it first: a create, which links the new file into
	 * .raidfs/dirty, fails with ENOENT in an existing directory); the
	 * monitor catches the rest within a second */
	struct stat st;
	if (fstat(A->m[p].dirfd, &st) == 0 && st.st_nlink > 0 && !A->m[p].fault.vanished) {
		if (err != ENOENT && err != ENOTDIR)
			return false;
		if (primary_disagrees(path) || primary_disagrees(path2))
			return true;
		if (fstatat(A->m[p].dirfd, SB_DIR, &st, AT_SYMLINK_NOFOLLOW) == 0)
			return false;
	}
	if (member_vanished(A, p, &why))
		return array_fail_member(A, p, why) == 1 && array_state(A) != ARRAY_FAILED;
	return false;
}

/*
 * The primary answered ENOENT for a path the kernel believes in.  If every
 * other online member has the path (or its parent), the primary lost it
 * underneath us (its directory is being deleted, for example): fail it.
 * A name left on the other members by a crash in the middle of an unlink
 * looks the same, but is only reached by a user naming it explicitly.
 * With a single other member the evidence is not enough: the monitor
 * decides within a second instead.
 */
static bool primary_disagrees(const char *path)
{
	if (!path)
		return false;
	char parent[PATH_MAX];
	const char *r = rel(path);
	snprintf(parent, sizeof(parent), "%s", r);
	char *slash = strrchr(parent, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(parent, sizeof(parent), ".");
	for (int pass = 0; pass < 2; pass++) {
		const char *q = pass ? parent : r;
		int others = 0, have = 0;
		struct stat st;
		FOR_OTHER_MEMBERS(j) {
			others++;
			if (fstatat(A->m[j].dirfd, q, &st, AT_SYMLINK_NOFOLLOW) == 0)
				have++;
			else
				break;	/* one member agrees with the primary */
		}
		/* two or more members against the primary: one member alone may
		 * be the one that is dying (its rm -rf half done) */
		if (others >= 2 && have == others && fstatat(PRIMARY, q, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			char msg[160];
			snprintf(msg, sizeof(msg), "'%.100s' vanished from it but not from the other members", q);
			return array_fail_member(A, cur_primary, msg) == 1 && array_state(A) != ARRAY_FAILED;
		}
		if (pass == 0 && !strcmp(parent, "."))
			break;
	}
	return false;
}

/* Same for calls that return 0 or -errno themselves. */
#define ON_PRIMARY_ERR(call) ({ \
	int _r; const char *_path = PRIMARY_PATH; \
	for (uint32_t _t = 0;; _t++) { \
		_r = (call); \
		if (_r >= 0 || _t >= A->width || !primary_lost(-_r, _path, path2)) \
			break; \
	} \
	_r; })

/* Run a call on the primary member (PRIMARY is re-read on each try);
 * 0 or -errno. */
#define ON_PRIMARY(call) ({ \
	int _r; const char *_path = PRIMARY_PATH; \
	for (uint32_t _t = 0;; _t++) { \
		_r = (call) < 0 ? -errno : 0; \
		if (_r == 0 || _t >= A->width || !primary_lost(-_r, _path, path2)) \
			break; \
	} \
	_r; })

/* uid/gid for a new object under path's parent */
static void new_owner(const char *path, uid_t *uid, gid_t *gid)
{
	struct fuse_context *ctx = fuse_get_context();
	*uid = ctx->uid;
	*gid = ctx->gid;
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", rel(path));
	char *slash = strrchr(parent, '/');
	const char *pp = ".";
	if (slash) {
		*slash = '\0';
		pp = parent;
	}
	struct stat st;
	if (fstatat(PRIMARY, pp, &st, 0) == 0 && (st.st_mode & S_ISGID))
		*gid = st.st_gid;
}

static void chown_new(int dirfd, const char *path, uid_t uid, gid_t gid, mode_t mode)
{
	if (geteuid() == 0 && fchownat(dirfd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (mode & (S_ISUID | S_ISGID)) && !S_ISDIR(mode) && !S_ISLNK(mode))
		fchmodat(dirfd, rel(path), mode & 07777, 0);	/* (the chown dropped them) */
}

static int note_write(void)
{
	if (!array_writable(A))
		return A->readonly ? -EROFS : -EIO;
	return array_note_write(A);
}

/* ------------------------------------------------------------ attributes */

static void fix_file_stat(struct stat *st, uint64_t size)
{
	st->st_size = size;
	st->st_blocks = (size + 511) / 512 < (uint64_t)st->st_blocks * layout_data_chunks(&A->lay)
				? (blkcnt_t)((size + 511) / 512)
				: st->st_blocks * (blkcnt_t)layout_data_chunks(&A->lay);
}

/* logical size of a closed file from its metadata, any member */
static int closed_file_size(const char *r, uint64_t *size)
{
	int ret = -EIO;
	uint64_t best_ver = 0;
	for (uint32_t j = 0; j < A->width; j++) {
		if (!member_online(A, j))
			continue;
		int fd = openat(A->m[j].dirfd, r, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		struct file_meta fm;
		if (meta_get(fd, &fm) == 0 && (ret < 0 || fm.version > best_ver)) {
			*size = fm.size;
			best_ver = fm.version;
			ret = 0;
		}
		close(fd);
		if (ret == 0 && j == (uint32_t)A->primary)
			break;	/* the primary's copy is current unless it is bad */
	}
	if (ret < 0) {
		/* empty shards of an interrupted create */
		struct stat st;
		if (fstatat(PRIMARY, r, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_size == 0) {
			*size = 0;
			return 0;
		}
	}
	return ret;
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct rfile *rf = RF(fi);
	if (rf) {
		/* (the file's lock: a failure or a replacement changes its
		 * descriptors under it) */
		pthread_rwlock_rdlock(&rf->rw);
		int e = fstat(rf->fd[PRIMARY_IDX], st) < 0 ? -errno : 0;
		pthread_rwlock_unlock(&rf->rw);
		if (e < 0)
			return e;
		fix_file_stat(st, __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE));
		int marks = __atomic_load_n(&rf->marked, __ATOMIC_ACQUIRE) +
			    __atomic_load_n(&rf->cmarked, __ATOMIC_ACQUIRE);
		if ((int)st->st_nlink > marks)
			st->st_nlink -= marks;	/* the dirty-log links are ours, not the user's */
		return 0;
	}
	CHECK_HIDDEN(path);
	const char *r = rel(path);
again:;
	/* an open file's size is its rfile's, found by the inode on the
	 * primary: a new primary meanwhile makes the inode another's */
	uint64_t epoch = rfile_epoch();
	int _e = ON_PRIMARY(fstatat(PRIMARY, r, st, AT_SYMLINK_NOFOLLOW));
	if (_e < 0 && rfile_epoch() != epoch)
		goto again;
	if (_e == -ENOENT)
		__atomic_add_fetch(&hide_misses, 1, __ATOMIC_RELEASE);	/* see fs_rename() */
	if (_e < 0)
		return _e;
	if (S_ISREG(st->st_mode)) {
		uint64_t size;
		int marks = 0, found = rfile_lookup_size(epoch, st->st_ino, &size, &marks);
		if (found < 0)
			goto again;
		if (found) {
			if ((int)st->st_nlink > marks)
				st->st_nlink -= marks;	/* the dirty-log links are ours */
		} else if (st->st_nlink > 1 &&
			   (_e = ON_PRIMARY(fstatat(PRIMARY, r, st, AT_SYMLINK_NOFOLLOW))) < 0) {
			/* the file was being closed (FUSE sends release without
			 * waiting) while we looked: its dirty link was still
			 * there at the first stat; the lookup waited for the
			 * close to finish, so a second stat counts right */
			return _e;
		} else if (closed_file_size(r, &size) < 0) {
			log_err("file '%s': no valid metadata on any member", r);
			return -EIO;
		}
		fix_file_stat(st, size);
	}
	return 0;
}

static int fs_readlink(const char *path, char *buf, size_t size)
{
	CHECK_HIDDEN(path);
	ssize_t n = readlinkat(PRIMARY, rel(path), buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/* ------------------------------------------------------------- namespace */

/* A directory (target NULL, S_IFDIR in mode), FIFO, socket or device
 * node (target NULL), or symlink to target at path under member directory dirfd. */
static int make_at(int dirfd, const char *path, mode_t mode, dev_t rdev, const char *target)
{
	if (target)
		return symlinkat(target, dirfd, rel(path));
	if (S_ISDIR(mode))
		return mkdirat(dirfd, rel(path), mode & 07777);
	return mknodat(dirfd, rel(path), mode, rdev);
}

/* mkdir, mknod of a FIFO, socket or device, symlink: on the primary, then on the
 * others, owned as new_owner() says */
static int make_everywhere(const char *path, mode_t mode, dev_t rdev, const char *target, const char *op)
{
	uid_t uid; gid_t gid;
	int r = note_write();
	if (r < 0)
		return r;
	new_owner(path, &uid, &gid);
	int slot = nsintent_begin(A, NSI_MAKE, rel(path), NULL, 0);
	int _e = ON_PRIMARY(make_at(PRIMARY, path, mode, rdev, target));
	if (_e == 0) {
		chown_new(OP_FD, path, uid, gid, mode);
		FOR_OTHERS(j) {
			if (make_at(A->m[j].dirfd, path, mode, rdev, target) < 0 && errno != EEXIST)
				note_member_error(j, op, path, NULL, errno);
			chown_new(A->m[j].dirfd, path, uid, gid, mode);
		}
	}
	nsintent_end(A, slot);
	return _e;
}

static int fs_mkdir(const char *path, mode_t mode)
{
	CHECK_HIDDEN(path);
	return make_everywhere(path, S_IFDIR | (mode & 07777), 0, NULL, "mkdir");
}

static int fs_mknod(const char *path, mode_t mode, dev_t rdev)
{
	CHECK_HIDDEN(path);
	if (S_ISREG(mode)) {
		struct rfile *rf;
		uid_t uid; gid_t gid;
		new_owner(path, &uid, &gid);
		int r = rfile_create(A, rel(path), mode & 07777, uid, gid, &rf);
		if (r == 0)
			rfile_release(rf);
		return r;
	}
	/* device nodes too (as root): a backup of a root filesystem keeps
	 * them, as md, ZFS and btrfs do; each member holds one */
	return make_everywhere(path, mode, rdev, NULL, "mknod");
}

static int fs_symlink(const char *target, const char *path)
{
	CHECK_HIDDEN(path);
	return make_everywhere(path, 0, 0, target, "symlink");
}

/* unlink (flags 0) or rmdir (AT_REMOVEDIR) on the members but the primary
 * (cur_primary evaluated before) */
static void remove_on_others(const char *path, int flags)
{
	FOR_OTHERS(j)
		if (unlinkat(A->m[j].dirfd, rel(path), flags) < 0 && errno != ENOENT)
			note_member_error(j, flags ? "rmdir" : "unlink", path, NULL, errno);
}

/* unlink (flags 0) or rmdir (AT_REMOVEDIR) on every member */
static int remove_everywhere(const char *path, int flags)
{
	int slot = nsintent_begin(A, flags ? NSI_RMDIR : NSI_UNLINK, rel(path), NULL, 0);
	int _e = ON_PRIMARY(unlinkat(PRIMARY, rel(path), flags));
	if (_e == 0)
		remove_on_others(path, flags);
	nsintent_end(A, slot);
	return _e;
}

static bool hidden_by_libfuse(const char *path);
static bool regular_at(const char *relpath, struct stat *st, uint64_t *id);

/* The regular file at relpath loses its last name if it is unlinked or
 * renamed over: its id (its checksum files go with it), else 0.  (The
 * namespace lock is held: no link comes in between.) */
static uint64_t last_name_of(const char *relpath)
{
	struct stat st;
	uint64_t id;
	int p = __atomic_load_n(&A->primary, __ATOMIC_ACQUIRE);
	if (p < 0 || !regular_at(relpath, &st, &id) || !id)
		return 0;
	return st.st_nlink - array_dirty_links(A, id, (uint32_t)p, &st) <= 1 ? id : 0;
}

/* The checksum files of a file whose last name went (csum.h). */
static void forget_sums(uint64_t id)
{
	for (uint32_t j = 0; id && j < A->width; j++)
		if (member_writable(A, j))
			csum_unlink(A->m[j].dirfd, id);
}

static int fs_unlink(const char *path)
{
	CHECK_HIDDEN(path);
	int r = note_write();
	uint64_t last = r == 0 ? last_name_of(rel(path)) : 0;
	if (r == 0)
		r = remove_everywhere(path, 0);
	if (r == 0)
		forget_sums(last);
	if (r == 0 && hidden_by_libfuse(path))
		hidden_unmark(A, rel(path));	/* (libfuse's at the last close) */
	return r;
}

static int fs_rmdir(const char *path)
{
	CHECK_HIDDEN(path);
	int r = note_write();
	return r < 0 ? r : remove_everywhere(path, AT_REMOVEDIR);
}

/* both names on the same member: one evaluation of PRIMARY */
static int rename_on_primary(const char *from, const char *to, unsigned int flags)
{
	int fd = PRIMARY;
	return renameat2(fd, rel(from), fd, rel(to), flags);
}

static int link_on_primary(const char *from, const char *to)
{
	int fd = PRIMARY;
	return linkat(fd, rel(from), fd, rel(to), 0);
}

static int rename_everywhere(const char *from, const char *to, unsigned int flags)
{
	const char *path = from, *path2 = to;
	int slot = nsintent_begin(A, NSI_RENAME, rel(from), rel(to), flags);
	{
		int _e = ON_PRIMARY(rename_on_primary(from, to, flags));
		if (_e < 0) {
			nsintent_end(A, slot);
			return _e;
		}
	}
	FOR_OTHERS(j) {
		if (renameat2(A->m[j].dirfd, rel(from), A->m[j].dirfd, rel(to), flags) < 0)
			note_member_error(j, "rename", from, to, errno);
		else if (member_rebuilding(A, j))
			/* what moved under a rebuild's walk is looked at again
			 * under its new name: a directory the walk may be inside,
			 * or a file a re-add has not resynced yet moving behind
			 * the walk's position with its stale shard */
			rebuild_redo(A, to);
	}
	nsintent_end(A, slot);
	return 0;
}

/*
 * rename(a, b) where a and b are hard links of one file does nothing
 * (POSIX).  The kernel cannot see it here: the high-level libfuse gives
 * each name its own inode.  When b is open, libfuse first renames b to a
 * ".fuse_hidden..." name (so the open file survives) and only then asks
 * for rename(a, b), which would move a away.  So a hide is remembered on
 * its thread, and the rename that libfuse sends right after it on that
 * thread, of another link of the hidden file onto the hidden name, puts
 * the name back instead (as a link: the open file keeps its hidden
 * name, which libfuse removes at the last close).
 *
 * A hide that came from unlink(b) must not count: a later rename(a, b) is
 * then a real one.  Before any rename onto b after that unlink the kernel
 * looks b up and gets ENOENT, so every lookup that finds nothing ends the
 * remembered hide (hide_misses); between a rename's hide and its rename no
 * lookup is sent.
 */
static _Thread_local struct {
	bool armed;
	char name[PATH_MAX];	/* b */
	char hidden[PATH_MAX];	/* the name libfuse gave it */
	unsigned long misses;	/* hide_misses when it was hidden */
} hide;

/* libfuse's hidden names: exactly ".fuse_hidden" and 16 hex digits */
static bool hidden_by_libfuse(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (strncmp(base, ".fuse_hidden", 12) != 0 || strlen(base) != 28)
		return false;
	for (int i = 12; i < 28; i++)
		if (!isxdigit((unsigned char)base[i]))
			return false;
	return true;
}

static void hide_remember(const char *from, const char *to)
{
	hide.armed = strlen(from) < sizeof(hide.name) && strlen(to) < sizeof(hide.hidden);
	if (hide.armed) {
		strcpy(hide.name, from);
		strcpy(hide.hidden, to);
		hide.misses = __atomic_load_n(&hide_misses, __ATOMIC_ACQUIRE);
	}
}

static int fs_link(const char *from, const char *to);

/*
 * libfuse 3.14 (Debian 12's) removes a file's hidden name at its last
 * release, but a release that runs while an unlink is hiding the file
 * finds it not hidden yet, and the hidden name stays for good (libfuse
 * issue #746, fixed in 3.15): `rm f; rmdir d` then fails with ENOTEMPTY
 * for ever.  So a rename to a name of libfuse's form, of a file open or
 * closed a moment ago (libfuse hides only open files; in the race the
 * release came first), is noted with the file's inode, and once a second
 * the monitor removes the names still on that file once nobody has it
 * open (sweep_hidden()).
 */
#define HIDDEN_MAX 1024
#define HIDDEN_CLOSED_MS 2000
static struct hidden_name {
	char *path;
	uint64_t ino;		/* on the primary of key epoch `epoch` */
	uint64_t epoch;
} hidden_names[HIDDEN_MAX];
static size_t nhidden_names;
static pthread_mutex_t hidden_lock = PTHREAD_MUTEX_INITIALIZER;

static void hidden_note(const char *path, uint64_t ino, uint64_t epoch)
{
	pthread_mutex_lock(&hidden_lock);
	char *p = nhidden_names < HIDDEN_MAX ? strdup(path) : NULL;
	if (p)
		hidden_names[nhidden_names++] = (struct hidden_name){ p, ino, epoch };
	pthread_mutex_unlock(&hidden_lock);
}

/*
 * Remove a hidden name libfuse left behind.  Unlike a user's unlink, the
 * kernel does not keep lookups of the name away meanwhile, so the name
 * goes from the other members first: a lookup in between finds it on the
 * primary (as if it came before the removal), never gone from the primary
 * alone - which primary_disagrees() would take for a failing primary.
 */
static int remove_hidden(const char *path)
{
	int r = note_write();
	if (r < 0)
		return r;
	int slot = nsintent_begin(A, NSI_UNLINK, rel(path), NULL, 0);
	(void)PRIMARY;	/* (cur_primary for FOR_OTHERS) */
	remove_on_others(path, 0);
	r = ON_PRIMARY(unlinkat(PRIMARY, rel(path), 0));
	nsintent_end(A, slot);
	if (r == 0)
		hidden_unmark(A, rel(path));
	return r;
}

static void sweep_hidden(struct array *a)
{
	/* (no wait behind a rebuild or a long operation: next second) */
	if (!__atomic_load_n(&nhidden_names, __ATOMIC_RELAXED) || !nslock_try_shared(&a->ns_lock))
		return;
	pthread_mutex_lock(&hidden_lock);
	size_t n = nhidden_names;
	struct hidden_name mine[HIDDEN_MAX];
	memcpy(mine, hidden_names, n * sizeof(mine[0]));
	nhidden_names = 0;
	pthread_mutex_unlock(&hidden_lock);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		uint64_t epoch = rfile_epoch();
		bool keep = false;
		if (fstatat(PRIMARY, rel(mine[i].path), &st, AT_SYMLINK_NOFOLLOW) < 0) {
			/* (gone: libfuse removed it) */
		} else if (epoch != mine[i].epoch) {
			/* another member serves the namespace since: its inode
			 * of the name, looked at again next time */
			keep = true;
			mine[i].ino = st.st_ino;
			mine[i].epoch = epoch;
		} else if (st.st_ino == mine[i].ino) {
			/* (a file released right now: libfuse removes the name
			 * itself, or finds it gone) */
			keep = rfile_in_use(mine[i].ino, epoch, 0);
			if (!keep && remove_hidden(mine[i].path) == 0)
				log_info("removed '%s', a hidden name libfuse left behind", mine[i].path);
		}
		if (keep)
			hidden_note(mine[i].path, mine[i].ino, mine[i].epoch);
		free(mine[i].path);
	}
	nslock_unlock(&a->ns_lock);
}

/* Is relpath a regular file on the primary?  *st its stat, *id its
 * raidfs id (its metadata record's; 0: none). */
static bool regular_at(const char *relpath, struct stat *st, uint64_t *id)
{
	int fd = openat(PRIMARY, relpath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct file_meta fm;
	bool ok = fd >= 0 && fstat(fd, st) == 0 && S_ISREG(st->st_mode);
	*id = ok && meta_get(fd, &fm) == 0 ? fm.id : 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* A hidden name noted by an earlier mount (hidden.h): its file was open
 * when that daemon stopped, and nobody holds it now - the sweep removes
 * it, if the file there is still the one noted.  Any other note just
 * goes. */
static void hidden_noted(const char *relpath, uint64_t id, void *arg)
{
	struct array *a = arg;
	char path[PATH_MAX];
	struct stat st;
	uint64_t now;
	snprintf(path, sizeof(path), "/%s", relpath);
	if (hidden_by_libfuse(path) && regular_at(relpath, &st, &now) && now == id) {
		log_info("'%s' is the hidden name of a file open when raidfs stopped: it is removed", path);
		hidden_note(path, st.st_ino, rfile_epoch());
	} else {
		hidden_unmark(a, relpath);
	}
}

/* once a second (array.c's monitor) */
static void tick(struct array *a)
{
	static bool noted;
	if (!noted && !a->readonly) {
		noted = true;
		hidden_each(a, hidden_noted, a);
	}
	sweep_hidden(a);
	nsintent_refresh(a);
}

/* true when rename(from, to) is libfuse's follow-up of hiding an open
 * 'to' that is a link of 'from': 'to' is then back (as a link).  Every
 * rename ends the remembered hide (fs_rename()). */
static bool rename_between_links(const char *from, const char *to)
{
	bool same = false;
	if (hide.armed && strcmp(hide.name, to) == 0 &&
	    __atomic_load_n(&hide_misses, __ATOMIC_ACQUIRE) == hide.misses) {
		struct stat a, h, t;
		int fd = PRIMARY;
		same = fstatat(fd, rel(from), &a, AT_SYMLINK_NOFOLLOW) == 0 &&
		       fstatat(fd, rel(hide.hidden), &h, AT_SYMLINK_NOFOLLOW) == 0 &&
		       fstatat(fd, rel(to), &t, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT &&
		       a.st_ino == h.st_ino && a.st_dev == h.st_dev;
		if (same && fs_link(hide.hidden, to) < 0) {
			log_warn("rename '%s' -> '%s' between links of one file: "
				 "could not link '%s' back; the open file's hidden name "
				 "goes back instead", from, to, to);
			same = rename_everywhere(hide.hidden, to, 0) == 0;
			if (same)
				hidden_unmark(A, rel(hide.hidden));
		}
	}
	return same;
}

static int fs_rename(const char *from, const char *to, unsigned int flags)
{
	CHECK_HIDDEN(from);
	CHECK_HIDDEN(to);
	int r = note_write();
	if (r < 0)
		return r;
	if (flags == 0 && hidden_by_libfuse(to)) {
		struct stat st;
		uint64_t epoch = rfile_epoch(), id;
		bool note = regular_at(rel(from), &st, &id) && rfile_in_use(st.st_ino, epoch, HIDDEN_CLOSED_MS);
		/* (noted first: a crash right after the rename leaves it;
		 * a file closed long ago under such a name is the user's) */
		if (note && id)
			hidden_mark(A, rel(to), id);
		r = rename_everywhere(from, to, flags);
		if (r == 0) {
			hide_remember(from, to);
			if (note)
				hidden_note(to, st.st_ino, epoch);
			if (hidden_by_libfuse(from))
				hidden_unmark(A, rel(from));
		}
		if (r < 0 ? note : !note)
			hidden_unmark(A, rel(to));
		return r;
	}
	bool no_op = flags == 0 && rename_between_links(from, to);
	hide.armed = false;
	uint64_t last = !no_op && !(flags & (RENAME_EXCHANGE | RENAME_NOREPLACE)) ? last_name_of(rel(to)) : 0;
	r = no_op ? 0 : rename_everywhere(from, to, flags);
	if (r == 0)
		forget_sums(last);	/* (the file renamed over) */
	if (r == 0 && !no_op && hidden_by_libfuse(from))
		hidden_unmark(A, rel(from));
	return r;
}

static int fs_link(const char *from, const char *to)
{
	const char *path = from, *path2 = to;
	CHECK_HIDDEN(from);
	CHECK_HIDDEN(to);
	int r = note_write();
	if (r < 0)
		return r;
	int slot = nsintent_begin(A, NSI_LINK, rel(from), rel(to), 0);
	{
		int _e = ON_PRIMARY(link_on_primary(from, to));
		if (_e < 0) {
			nsintent_end(A, slot);
			return _e;
		}
	}
	FOR_OTHERS(j) {
		if (linkat(A->m[j].dirfd, rel(from), A->m[j].dirfd, rel(to), 0) < 0)
			note_member_error(j, "link", from, to, errno);
		else if (member_rebuilding(A, j))
			/* the new name may be behind the walk's position, linked
			 * to a shard a re-add has not resynced yet: looked at
			 * again, as a rename's new name is */
			rebuild_redo(A, to);
	}
	nsintent_end(A, slot);
	return 0;
}

/*
 * Owner, mode, times or xattrs are about to change.  Members out of
 * service miss it: a regular file goes into their missed-write logs (its
 * resync at the re-add brings all of them: rebuild_file()), anything else
 * makes the re-add walk the namespace (note_write()).
 */
static int note_meta_write(const char *path, struct fuse_file_info *fi)
{
	if (array_state(A) == ARRAY_OPTIMAL)
		return note_write();
	struct rfile *rf = RF(fi);
	if (rf)
		pthread_rwlock_rdlock(&rf->rw);
	int fd = rf ? rf->fd[PRIMARY_IDX]
		    : path && !hidden(path) ? openat(PRIMARY, rel(path), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
					     : -1;
	struct stat st;
	struct file_meta fm;
	bool file = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && meta_get(fd, &fm) == 0;
	if (rf)
		pthread_rwlock_unlock(&rf->rw);
	else if (fd >= 0)
		close(fd);
	if (!file)
		return note_write();
	int r = array_note_data_write(A);
	if (r == 0)
		r = array_missed_file(A, fm.id, rf ? rf->path : rel(path));
	return r;
}

/* call (on descriptor fd) on an open file's primary shard, then on its
 * other shards; 0 or the primary's -errno.  Under the file's lock: a
 * failure or a replacement changes its descriptors under it. */
#define ON_SHARDS(rf, fd, call) ({ \
	pthread_rwlock_rdlock(&(rf)->rw); \
	int fd = (rf)->fd[PRIMARY_IDX]; \
	int _sr = (call) < 0 ? -errno : 0; \
	FOR_OTHERS(_j) \
		if (_sr == 0 && (fd = (rf)->fd[_j]) >= 0) \
			(void)(call); \
	pthread_rwlock_unlock(&(rf)->rw); \
	_sr; })

static int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct rfile *rf = RF(fi);
	int r = note_meta_write(path, fi);
	if (r < 0)
		return r;
	if (rf)
		return ON_SHARDS(rf, fd, fchmod(fd, mode));
	CHECK_HIDDEN(path);
	{
		int _e = ON_PRIMARY(fchmodat(PRIMARY, rel(path), mode, 0));
		if (_e < 0)
			return _e;
	}
	FOR_OTHERS(j)
		if (fchmodat(A->m[j].dirfd, rel(path), mode, 0) < 0)
			note_member_error(j, "chmod", path, NULL, errno);
	return 0;
}

static int fs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	struct rfile *rf = RF(fi);
	int r = note_meta_write(path, fi);
	if (r < 0)
		return r;
	if (rf)
		return ON_SHARDS(rf, fd, fchown(fd, uid, gid));
	CHECK_HIDDEN(path);
	{
		int _e = ON_PRIMARY(fchownat(PRIMARY, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW));
		if (_e < 0)
			return _e;
	}
	FOR_OTHERS(j)
		if (fchownat(A->m[j].dirfd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
			note_member_error(j, "chown", path, NULL, errno);
	return 0;
}

static int fs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	struct rfile *rf = RF(fi);
	int r = note_meta_write(path, fi);
	if (r < 0)
		return r;
	if (rf)
		return ON_SHARDS(rf, fd, futimens(fd, tv));
	CHECK_HIDDEN(path);
	{
		int _e = ON_PRIMARY(utimensat(PRIMARY, rel(path), tv, AT_SYMLINK_NOFOLLOW));
		if (_e < 0)
			return _e;
	}
	FOR_OTHERS(j)
		if (utimensat(A->m[j].dirfd, rel(path), tv, AT_SYMLINK_NOFOLLOW) < 0)
			note_member_error(j, "utimens", path, NULL, errno);
	return 0;
}

/* ------------------------------------------------------------ file data */

static int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct rfile *rf = RF(fi);
	if (size < 0)
		return -EINVAL;
	if (rf)
		return cache_truncate(rf, size);
	CHECK_HIDDEN(path);
	int r = ON_PRIMARY_ERR(rfile_open(A, rel(path), &rf));
	if (r < 0)
		return r;
	r = cache_truncate(rf, size);
	int r2 = rfile_release(rf);
	return r ? r : r2;
}

/*
 * An open with O_DIRECT gets a direct-I/O handle: the kernel then sends
 * its reads and writes straight to us.  Through the page-cache path every
 * read of an O_DIRECT descriptor costs one more request (GETATTR, because
 * attributes are not cached, see fs_init) and every write one more
 * (GETXATTR of security.capability, from the kernel's set-id clearing), so
 * the direct handle halves the requests of databases and of fio direct=1.
 * The kernel still keeps other descriptors' page cache coherent with it
 * (posix_check "direct_and_buffered"); the set-id clearing it skips is
 * done by kill_setid_on_write().  Shared writable mmap of such a
 * descriptor is refused by the kernel (ENODEV), as for any direct-I/O
 * FUSE file.
 */
static bool direct_io_for(const struct fuse_file_info *fi)
{
	return (fi->flags & O_DIRECT) != 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	CHECK_HIDDEN(path);
	struct rfile *rf;
	int r = ON_PRIMARY_ERR(rfile_open(A, rel(path), &rf));
	if (r < 0)
		return r;
	if ((fi->flags & O_TRUNC) && (fi->flags & O_ACCMODE) != O_RDONLY) {
		/* atomic O_TRUNC: the kernel leaves the truncation to us */
		r = cache_truncate(rf, 0);
		if (r < 0) {
			rfile_release(rf);
			return r;
		}
	}
	fi->direct_io = direct_io_for(fi);
	fi->fh = (uintptr_t)rf | (fi->direct_io ? FH_DIRECT : 0);
	return 0;
}

static int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	CHECK_HIDDEN(path);
	uid_t uid; gid_t gid;
	struct rfile *rf;
	if (!array_writable(A))
		return A->readonly ? -EROFS : -EIO;
	new_owner(path, &uid, &gid);
	int r = ON_PRIMARY_ERR(rfile_create(A, rel(path), mode & 07777, uid, gid, &rf));
	if (r < 0)
		return r;
	fi->direct_io = direct_io_for(fi);
	fi->fh = (uintptr_t)rf | (fi->direct_io ? FH_DIRECT : 0);
	return 0;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	return cache_read(RF(fi), buf, size, off);
}

static int fs_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	return cache_write(RF(fi), buf, size, off);
}

/* A write by someone without CAP_FSETID (approximated as: not root)
 * clears set-user-ID, and set-group-ID when group execute is set, as the
 * kernel does for the page-cache path. */
static void kill_setid_on_write(struct fuse_file_info *fi)
{
	struct stat st;
	struct rfile *rf = RF(fi);
	if (fuse_get_context()->uid == 0)
		return;
	pthread_rwlock_rdlock(&rf->rw);	/* (see fs_getattr()) */
	int e = fstat(rf->fd[PRIMARY_IDX], &st);
	pthread_rwlock_unlock(&rf->rw);
	if (e < 0)
		return;
	mode_t kill = st.st_mode & S_ISUID;
	if ((st.st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		kill |= S_ISGID;
	if (kill) {
		nslock_shared(&A->ns_lock);
		fs_chmod(NULL, st.st_mode & 07777 & ~kill, fi);
		nslock_unlock(&A->ns_lock);
	}
}

/*
 * Writes arrive here rather than in fs_write: with splice the payload is
 * still in a pipe and is copied once, into a 64-byte aligned per-thread
 * buffer.  A payload in memory is used as it is, although the FUSE header
 * leaves it misaligned: the parity code reads it in place where ISA-L's
 * kernels allow (parity_probe_unaligned()), else copies the blocks it needs
 * into per-thread scratch as it goes, on both threads of a full-stripe
 * write (stripe.c).
 */
static int fs_write_buf(const char *path, struct fuse_bufvec *buf, off_t off,
			struct fuse_file_info *fi)
{
	static __thread void *abuf;
	static __thread size_t abuf_len;
	struct rfile *rf = RF(fi);
	size_t len = fuse_buf_size(buf);
	const struct fuse_buf *b0 = &buf->buf[buf->idx];

	if (fi->fh & FH_DIRECT)
		kill_setid_on_write(fi);

	if (buf->count == 1 && !(b0->flags & FUSE_BUF_IS_FD))
		return cache_write(rf, (const char *)b0->mem + buf->off, len, off);
	if (abuf_len < len) {
		void *p;
		if (posix_memalign(&p, 64, len))
			return -ENOMEM;
		free(abuf);
		abuf = p;
		abuf_len = len;
	}
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(len);
	dst.buf[0].mem = abuf;
	ssize_t n = fuse_buf_copy(&dst, buf, 0);
	if (n < 0)
		return n;
	return cache_write(rf, abuf, n, off);
}

static int fs_release(const char *path, struct fuse_file_info *fi)
{
	return rfile_release(RF(fi));
}

static int fs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	return cache_fsync(RF(fi), datasync);
}

/* ------------------------------------------------------------- dirs, fs */

static int open_primary(const char *path, int flags)
{
	int fd = openat(PRIMARY, rel(path), flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int fs_opendir(const char *path, struct fuse_file_info *fi)
{
	CHECK_HIDDEN(path);
	int fd = ON_PRIMARY_ERR(open_primary(path, O_RDONLY | O_DIRECTORY));
	if (fd < 0)
		return fd;
	struct dirh *h = malloc(sizeof(*h));
	if (!h || !(h->path = strdup(path)) || !(h->d = fdopendir(fd))) {
		int e = h && h->path ? errno : ENOMEM;
		if (h)
			free(h->path);
		free(h);
		close(fd);
		return -e;
	}
	h->root = strcmp(path, "/") == 0;
	fi->fh = (uintptr_t)h | 1;
	return 0;
}

static int fs_releasedir(const char *path, struct fuse_file_info *fi)
{
	struct dirh *h = DH(fi);
	if (h) {
		closedir(h->d);
		free(h->path);
		free(h);
	}
	return 0;
}

/*
 * fsync() of a directory: its entries made durable on every member in
 * service (write a file, fsync it, rename it, fsync the directory - the
 * way programs make a rename survive a power loss).  A member that cannot
 * sync is failed, as for a file's fsync.  (Without this the kernel took
 * the missing operation for a success and synced nothing.)  The kernel
 * gives no path here (nullpath_ok): the name opendir() saw is used while
 * the primary still has this directory under it; renamed since, each
 * member's whole filesystem is synced instead.
 */
static int fs_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	struct dirh *h = DH(fi);
	if (member_sync_mode == MSYNC_NEVER)
		return 0;
	if (!path && h) {
		struct stat mine, now;
		path = h->path;
		if (fstat(dirfd(h->d), &mine) < 0 || fstatat(PRIMARY, rel(path), &now, AT_SYMLINK_NOFOLLOW) < 0 ||
		    mine.st_ino != now.st_ino || mine.st_dev != now.st_dev)
			path = NULL;
	}
	int ret = 0, synced = 0;
	(void)PRIMARY;	/* (cur_primary) */
	for (uint32_t j = 0; j <= SHADOW; j = next_slot(j)) {
		if (!member_writable(A, j))
			continue;
		int fd = path ? openat(A->m[j].dirfd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
		int r = path && fd < 0 ? -errno : path ? member_fsync(A, j, fd, datasync) : member_syncfs(A, j);
		if (fd >= 0)
			close(fd);
		if (r == 0) {
			synced++;
		} else if (fd >= 0 || !path) {
			log_err("fsync of directory '%s' failed on %s '%s': %s", path,
				j == SHADOW ? "the replacement" : "a member", A->m[j].path, strerror(-r));
			if (j == SHADOW)
				rebuild_abandon_replace();
			else
				array_member_io_error(A, j, r, true);
		} else if ((int)j == cur_primary) {
			ret = r;	/* (ENOENT: gone meanwhile) */
		}
	}
	if (ret == 0 && !synced)
		ret = -EIO;
	return ret < 0 ? ret : array_writable(A) ? 0 : -EIO;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
		      off_t off, struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct dirh *h = DH(fi);
	if (!h)
		return -EBADF;
	/* the whole directory in one pass (offset 0 mode): libfuse buffers it */
	rewinddir(h->d);
	struct dirent *e;
	errno = 0;
	while ((e = readdir(h->d))) {
		if (h->root && strcmp(e->d_name, SB_DIR) == 0)
			continue;
		struct stat st;
		memset(&st, 0, sizeof(st));
		st.st_ino = e->d_ino;
		st.st_mode = DTTOIF(e->d_type);
		if (filler(buf, e->d_name, &st, 0, 0))
			break;
	}
	return 0;
}

static int fs_statfs(const char *path, struct statvfs *out)
{
	uint64_t tot = UINT64_MAX, fre = UINT64_MAX, avail = UINT64_MAX;
	uint64_t files = UINT64_MAX, ffree = UINT64_MAX;
	struct statvfs sv;
	for (uint32_t j = 0; j < A->width; j++) {
		if (!member_online(A, j) || fstatvfs(A->m[j].dirfd, &sv) < 0)
			continue;
		uint64_t t = (uint64_t)sv.f_blocks * sv.f_frsize;
		uint64_t f = (uint64_t)sv.f_bfree * sv.f_frsize;
		uint64_t a = (uint64_t)sv.f_bavail * sv.f_frsize;
		if (t < tot) tot = t;
		if (f < fre) fre = f;
		if (a < avail) avail = a;
		if (sv.f_files < files) files = sv.f_files;
		if (sv.f_ffree < ffree) ffree = sv.f_ffree;
	}
	if (tot == UINT64_MAX)
		return -EIO;
	/* every member holds one chunk per stripe; D of them carry data */
	uint64_t d = layout_data_chunks(&A->lay);
	memset(out, 0, sizeof(*out));
	out->f_bsize = out->f_frsize = 4096;
	out->f_blocks = tot / 4096 * d;
	out->f_bfree = fre / 4096 * d;
	out->f_bavail = avail / 4096 * d;
	out->f_files = files;
	out->f_ffree = ffree;
	out->f_favail = ffree;
	out->f_namemax = 255;
	return 0;
}

/* ----------------------------------------------------------------- xattr */

static bool reserved_xattr(const char *name)
{
	return strncmp(name, META_XATTR_PREFIX, sizeof(META_XATTR_PREFIX) - 1) == 0;
}

/* xattrs live on the shard or directory itself; symlinks cannot carry
 * user xattrs on Linux */
static int xattr_fd(int dirfd, const char *path)
{
	int fd = openat(dirfd, rel(path), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	return fd;
}

static int fs_setxattr(const char *path, const char *name, const char *val,
		       size_t size, int flags)
{
	CHECK_HIDDEN(path);
	if (reserved_xattr(name))
		return -EPERM;
	int r = note_meta_write(path, NULL);
	if (r < 0)
		return r;
	int fd = xattr_fd(PRIMARY, path);
	if (fd < 0)
		return fd;
	r = fsetxattr(fd, name, val, size, flags) < 0 ? -errno : 0;
	close(fd);
	if (r < 0)
		return r;
	FOR_OTHERS(j) {
		fd = xattr_fd(A->m[j].dirfd, path);
		if (fd < 0) {
			note_member_error(j, "setxattr", path, NULL, -fd);
			continue;
		}
		if (fsetxattr(fd, name, val, size, 0) < 0)
			note_member_error(j, "setxattr", path, NULL, errno);
		close(fd);
	}
	return 0;
}

static int fs_getxattr(const char *path, const char *name, char *val, size_t size)
{
	CHECK_HIDDEN(path);
	if (reserved_xattr(name))
		return -ENODATA;
	int fd = xattr_fd(PRIMARY, path);
	if (fd < 0)
		return fd == -EPERM ? -ENODATA : fd;
	ssize_t n = fgetxattr(fd, name, val, size);
	int e = errno;
	close(fd);
	return n < 0 ? -e : (int)n;
}

static int fs_listxattr(const char *path, char *list, size_t size)
{
	CHECK_HIDDEN(path);
	int fd = xattr_fd(PRIMARY, path);
	if (fd < 0)
		return fd == -EPERM ? 0 : fd;
	char *raw = NULL;
	ssize_t n = flistxattr(fd, NULL, 0);
	if (n > 0) {
		raw = malloc(n);
		n = raw ? flistxattr(fd, raw, n) : -1;
	}
	int e = errno;
	close(fd);
	if (n < 0) {
		free(raw);
		return -e;
	}
	size_t out = 0;
	for (ssize_t i = 0; i < n;) {
		size_t l = strlen(raw + i) + 1;
		if (!reserved_xattr(raw + i)) {
			if (size) {
				if (out + l > size) {
					free(raw);
					return -ERANGE;
				}
				memcpy(list + out, raw + i, l);
			}
			out += l;
		}
		i += l;
	}
	free(raw);
	return out;
}

static int fs_removexattr(const char *path, const char *name)
{
	CHECK_HIDDEN(path);
	if (reserved_xattr(name))
		return -EPERM;
	int r = note_meta_write(path, NULL);
	if (r < 0)
		return r;
	int fd = xattr_fd(PRIMARY, path);
	if (fd < 0)
		return fd;
	r = fremovexattr(fd, name) < 0 ? -errno : 0;
	close(fd);
	if (r < 0)
		return r;
	FOR_OTHERS(j) {
		fd = xattr_fd(A->m[j].dirfd, path);
		if (fd < 0) {
			note_member_error(j, "removexattr", path, NULL, -fd);
			continue;
		}
		fremovexattr(fd, name);
		close(fd);
	}
	return 0;
}

/* ------------------------------------------ local filesystem calls
 *
 * Thin callbacks over the cache (cache.h): each turns the request into
 * the cache's call on the open file.  The low-level API keeps the same
 * calls (fallocate, lseek, copy_file_range, ioctl).
 */

static int fs_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
	if (off < 0 || len <= 0)
		return -EINVAL;
	return cache_fallocate(RF(fi), mode, (uint64_t)off, (uint64_t)len);
}

static off_t fs_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi)
{
	if (off < 0)
		return -ENXIO;
	return (off_t)cache_seek(RF(fi), (uint64_t)off, whence);
}

static ssize_t fs_copy_file_range(const char *pin, struct fuse_file_info *fi_in, off_t off_in, const char *pout,
				  struct fuse_file_info *fi_out, off_t off_out, size_t len, int flags)
{
	if (flags || off_in < 0 || off_out < 0)
		return -EINVAL;
	return cache_copy_range(RF(fi_in), (uint64_t)off_in, RF(fi_out), (uint64_t)off_out, len);
}

/* The inode flags (lsattr, chattr): raidfs keeps none, so it says none
 * and takes none; an fsxattr with nothing set; other ioctls: ENOTTY.
 * (The kernel asks with a 4-byte flags word, whatever the command's
 * encoded size.) */
static int fs_ioctl(const char *path, unsigned int cmd, void *arg, struct fuse_file_info *fi, unsigned int flags,
		    void *data)
{
	if (cmd == FS_IOC_GETFLAGS || cmd == FS_IOC32_GETFLAGS) {
		memset(data, 0, sizeof(unsigned int));
		return 0;
	}
	if (cmd == FS_IOC_SETFLAGS || cmd == FS_IOC32_SETFLAGS)
		return *(const unsigned int *)data ? -EOPNOTSUPP : 0;
	if (cmd == FS_IOC_FSGETXATTR) {
		memset(data, 0, sizeof(struct fsxattr));
		return 0;
	}
	return -ENOTTY;
}

/* ------------------------------------------------------------ lifecycle */

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* inode numbers are the primary member's, so hard links share one */
	cfg->use_ino = 1;
	/* An unlinked open file is renamed to .fuse_hidden* until closed:
	 * the kernel sends fstat() of it without a file handle, which only a
	 * path can answer in the high-level API. */
	cfg->hard_remove = 0;
	/* Operations on an open file (read, write, fsync, ftruncate, fchmod,
	 * fstat ...) work from the file handle alone: libfuse need not build
	 * their path (it takes its tree lock and allocates for that on every
	 * request). */
	cfg->nullpath_ok = 1;
	cfg->entry_timeout = 1.0;
	/* The high-level API gives every name of a hard-linked file its own
	 * kernel inode, so a cached size could be stale under the other name
	 * after a write: attributes are not cached (DESIGN.md decision 13: the
	 * low-level API lifts this). */
	cfg->attr_timeout = 0;
	cfg->negative_timeout = 0;
	if (conn->capable & FUSE_CAP_SPLICE_READ)
		conn->want |= FUSE_CAP_SPLICE_READ;
	conn->max_write = 1024 * 1024;
	conn->max_read = 0;
	log_info("array '%s' (%s, %u members, state %s) mounted on %s", A->sb.name,
		 layout_level_name(A->lay.level), A->width, array_state_name(array_state(A)), A->mountpoint);
	return A;
}

static void fs_destroy(void *priv)
{
	log_info("array '%s' unmounted from %s", A->sb.name, A->mountpoint);
}

/*
 * Every operation that changes the namespace runs under the namespace
 * lock (shared), so the rebuild (whose file threads hold it as a group,
 * its walk exclusively: nslock.h) never sees an operation applied to some
 * members and not yet to the others.  None runs
 * while a preserved cache keeps the mount offline (EIO).
 */
#define NS(call) ({ \
	int _nr = -EIO; \
	if (!cache_offline()) { \
		nslock_shared(&A->ns_lock); \
		_nr = (call); \
		nslock_unlock(&A->ns_lock); \
	} \
	_nr; })
static int ns_mknod(const char *p, mode_t m, dev_t d) { return NS(fs_mknod(p, m, d)); }
static int ns_mkdir(const char *p, mode_t m) { return NS(fs_mkdir(p, m)); }
static int ns_unlink(const char *p) { return NS(fs_unlink(p)); }
static int ns_rmdir(const char *p) { return NS(fs_rmdir(p)); }
static int ns_symlink(const char *t, const char *p) { return NS(fs_symlink(t, p)); }
static int ns_rename(const char *f, const char *t, unsigned int fl) { return NS(fs_rename(f, t, fl)); }
static int ns_link(const char *f, const char *t) { return NS(fs_link(f, t)); }
static int ns_chmod(const char *p, mode_t m, struct fuse_file_info *fi) { return NS(fs_chmod(p, m, fi)); }
static int ns_chown(const char *p, uid_t u, gid_t g, struct fuse_file_info *fi) { return NS(fs_chown(p, u, g, fi)); }
static int ns_utimens(const char *p, const struct timespec tv[2], struct fuse_file_info *fi) { return NS(fs_utimens(p, tv, fi)); }
static int ns_setxattr(const char *p, const char *n, const char *v, size_t s, int f) { return NS(fs_setxattr(p, n, v, s, f)); }
static int ns_removexattr(const char *p, const char *n) { return NS(fs_removexattr(p, n)); }
static int ns_create(const char *p, mode_t m, struct fuse_file_info *fi) { return NS(fs_create(p, m, fi)); }
/* An open (or a truncate by name) finds the shards by path on every
 * member: under the lock, so it never catches a member's slot in the
 * middle of a rebuild or replacement switching it over. */
static int ns_open(const char *p, struct fuse_file_info *fi) { return NS(fs_open(p, fi)); }
static int ns_truncate(const char *p, off_t s, struct fuse_file_info *fi)
{
	return RF(fi) ? fs_truncate(p, s, fi) : NS(fs_truncate(p, s, fi));
}

static const struct fuse_operations ops = {
	.init = fs_init,
	.destroy = fs_destroy,
	.getattr = fs_getattr,
	.readlink = fs_readlink,
	.mknod = ns_mknod,
	.mkdir = ns_mkdir,
	.unlink = ns_unlink,
	.rmdir = ns_rmdir,
	.symlink = ns_symlink,
	.rename = ns_rename,
	.link = ns_link,
	.chmod = ns_chmod,
	.chown = ns_chown,
	.truncate = ns_truncate,
	.open = ns_open,
	.read = fs_read,
	.write = fs_write,
	.write_buf = fs_write_buf,
	.statfs = fs_statfs,
	.release = fs_release,
	.fsync = fs_fsync,
	.setxattr = ns_setxattr,
	.getxattr = fs_getxattr,
	.listxattr = fs_listxattr,
	.removexattr = ns_removexattr,
	.opendir = fs_opendir,
	.readdir = fs_readdir,
	.releasedir = fs_releasedir,
	.fsyncdir = fs_fsyncdir,
	.create = ns_create,
	.utimens = ns_utimens,
	/* local filesystem calls */
	.fallocate = fs_fallocate,
	.lseek = fs_lseek,
	.copy_file_range = fs_copy_file_range,
	.ioctl = fs_ioctl,
};

const struct fuse_operations *fsops_get(struct array *a)
{
	A = a;
	a->tick = tick;
	return &ops;
}
