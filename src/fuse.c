/*
 * fuse.c - the FUSE operations of raidfs (libfuse3 low-level API).
 *
 * The kernel names objects by node id (inode.h): each request's node is
 * turned into its path relative to the member roots by the node table,
 * and the operations below work on those paths; an open file is reached
 * through its struct rfile, never by a path.
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
#include <fuse_lowlevel.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <pthread.h>
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
#include "inode.h"
#include "nsintent.h"
#include "rebuild.h"
#include "util.h"

static struct array *A;
/* the caller of this thread's request */
static __thread const struct fuse_ctx *CTX;
/* -o attr_timeout=, entry_timeout= (fsops.h) */
double fsops_attr_timeout = 1.0, fsops_entry_timeout = 1.0;

/* What the kernel may keep of a reply: nothing while a preserved cache
 * keeps the mount offline (its writes, a file's size among them, are
 * not on the members yet: what a lookup says then changes, with no
 * request, the moment the mount comes online). */
static double kept_for(double timeout)
{
	return cache_offline() ? 0 : timeout;
}
bool fsops_writeback_cache;

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
	off_t pos;		/* the offset the stream is at (ll_readdir()) */
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
	const struct fuse_ctx *ctx = CTX;
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
	/* (an array without checksums has no checksum files) */
	for (uint32_t j = 0; id && A->csum && j < A->width; j++)
		if (member_writable(A, j))
			csum_unlink(A->m[j].dirfd, id);
}

/*
 * A file unlinked or renamed over while open keeps its shards under
 * `.raidfs/orphans/<file id>` on every member (inode.h) until its last
 * release: nothing is left in its directory, and its data stays reachable
 * by name for the namespace's own work (a crash leaves the orphans to the
 * next mount, fsops_sweep_orphans()).  orphan_lock orders an orphaning
 * (unlink, rename) against the last release that removes the orphan.
 */
static pthread_mutex_t orphan_lock = PTHREAD_MUTEX_INITIALIZER;

static void orphan_name(uint64_t id, char *buf, size_t len)
{
	snprintf(buf, len, "/" INODE_ORPHAN_DIR "/%016" PRIx64, id);
}

/* rename from -> to (relative) on member directory dirfd, making the
 * orphans' directory when it is missing */
static int orphan_rename_at(int dirfd, const char *from, const char *to)
{
	if (renameat(dirfd, from, dirfd, to) == 0)
		return 0;
	if (errno != ENOENT || mkdirat(dirfd, INODE_ORPHAN_DIR, 0700) < 0) {
		if (errno == EEXIST)
			errno = ENOENT;	/* (from is missing, not the directory) */
		return -1;
	}
	return renameat(dirfd, from, dirfd, to);
}

/* path moved to the orphan name of file id on every member */
static int orphan_move(const char *path, uint64_t id)
{
	char to[64];
	orphan_name(id, to, sizeof(to));
	int slot = nsintent_begin(A, NSI_RENAME, rel(path), rel(to), 0);
	int _e = ON_PRIMARY(orphan_rename_at(PRIMARY, rel(path), rel(to)));
	if (_e == 0)
		FOR_OTHERS(j)
			if (orphan_rename_at(A->m[j].dirfd, rel(path), rel(to)) < 0 && errno != ENOENT)
				note_member_error(j, "unlink", path, NULL, errno);
	nsintent_end(A, slot);
	return _e;
}

/* The last release of orphan id: its shards and checksum files go. */
static void orphan_remove(uint64_t id)
{
	char path[64];
	orphan_name(id, path, sizeof(path));
	pthread_mutex_lock(&orphan_lock);
	if (note_write() == 0 && remove_everywhere(path, 0) == 0)
		forget_sums(id);
	pthread_mutex_unlock(&orphan_lock);
}

void fsops_sweep_orphans(struct array *a)
{
	unsigned n = 0;
	for (uint32_t j = 0; j < a->width; j++) {
		int fd = member_writable(a, j) ? openat(a->m[j].dirfd, INODE_ORPHAN_DIR,
							O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		if (!d) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			if (unlinkat(fd, e->d_name, 0) == 0)
				n += j == (uint32_t)a->primary;
			char *end;
			uint64_t id = strtoull(e->d_name, &end, 16);
			if (!*end && id)
				csum_unlink(a->m[j].dirfd, id);
		}
		closedir(d);
	}
	if (n)
		log_info("removed %u file%s unlinked while open when raidfs stopped", n, n == 1 ? "" : "s");
}

static int fs_unlink(uint64_t parent, const char *name, const char *path)
{
	CHECK_HIDDEN(path);
	int r = note_write();
	if (r < 0)
		return r;
	uint64_t last = last_name_of(rel(path));
	pthread_mutex_lock(&orphan_lock);
	uint64_t node = last ? inode_orphan(parent, name, last) : 0;
	r = node ? orphan_move(path, last) : remove_everywhere(path, 0);
	if (r < 0 && node)
		inode_unorphan(node, parent, name);
	pthread_mutex_unlock(&orphan_lock);
	if (r == 0 && !node) {
		forget_sums(last);
		inode_unlinked(parent, name);
	}
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

/* once a second (array.c's monitor) */
static void tick(struct array *a)
{
	nsintent_refresh(a);
}

/* rename(parent/name -> newparent/newname), at paths from and to */
static int fs_rename(uint64_t parent, const char *name, uint64_t newparent, const char *newname,
		     const char *from, const char *to, unsigned int flags)
{
	CHECK_HIDDEN(from);
	CHECK_HIDDEN(to);
	int r = note_write();
	if (r < 0)
		return r;
	uint64_t last = !(flags & (RENAME_EXCHANGE | RENAME_NOREPLACE)) ? last_name_of(rel(to)) : 0;
	pthread_mutex_lock(&orphan_lock);
	/* an open file renamed over is kept as an orphan (fs_unlink()) */
	uint64_t node = last ? inode_orphan(newparent, newname, last) : 0;
	r = node ? orphan_move(to, last) : 0;
	bool moved = node && r == 0;
	if (r == 0)
		r = rename_everywhere(from, to, flags);
	if (r < 0 && moved) {
		char o[64];
		orphan_name(last, o, sizeof(o));
		rename_everywhere(o, to, 0);	/* (back) */
	}
	if (r < 0 && node)
		inode_unorphan(node, newparent, newname);
	pthread_mutex_unlock(&orphan_lock);
	if (r == 0) {
		if (!node)
			forget_sums(last);	/* (the file renamed over) */
		inode_renamed(parent, name, newparent, newname, flags);
	}
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

/* A write by someone without CAP_FSETID (approximated as: not root)
 * clears set-user-ID, and set-group-ID when group execute is set, as the
 * kernel does for the page-cache path. */
static void attrs_changed(uint64_t node);

static void kill_setid_on_write(uint64_t node, struct fuse_file_info *fi)
{
	struct stat st;
	struct rfile *rf = RF(fi);
	if (CTX->uid == 0)
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
		if (fs_chmod(NULL, st.st_mode & 07777 & ~kill, fi) == 0)
			attrs_changed(node);	/* (the kernel caches the mode) */
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
static ssize_t fs_write_buf(uint64_t node, struct fuse_bufvec *buf, off_t off, struct fuse_file_info *fi)
{
	static __thread void *abuf;
	static __thread size_t abuf_len;
	struct rfile *rf = RF(fi);
	size_t len = fuse_buf_size(buf);
	const struct fuse_buf *b0 = &buf->buf[buf->idx];

	if (fi->fh & FH_DIRECT)
		kill_setid_on_write(node, fi);

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

/* ------------------------------------------------------------- dirs, fs */

static int open_primary(const char *path, int flags)
{
	int fd = openat(PRIMARY, rel(path), flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* The handle of directory descriptor fd (taken over) opened at path. */
static int dirh_make(int fd, const char *path, struct fuse_file_info *fi)
{
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
	h->pos = 0;
	fi->fh = (uintptr_t)h | 1;
	return 0;
}

static int fs_opendir(const char *path, struct fuse_file_info *fi)
{
	CHECK_HIDDEN(path);
	int fd = ON_PRIMARY_ERR(open_primary(path, O_RDONLY | O_DIRECTORY));
	return fd < 0 ? fd : dirh_make(fd, path, fi);
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

/* ------------------------------------------------------------ lifecycle */

static void ll_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	if (conn->capable & FUSE_CAP_SPLICE_READ)
		conn->want |= FUSE_CAP_SPLICE_READ;
	/* (the kernel then owns the size and mtime of a file it caches
	 * writes for, and reads pages to fill them partly written) */
	if (fsops_writeback_cache && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	conn->max_write = 1024 * 1024;
	conn->max_read = 0;
	log_info("array '%s' (%s, %u members, state %s) mounted on %s", A->sb.name,
		 layout_level_name(A->lay.level), A->width, array_state_name(array_state(A)), A->mountpoint);
}

static void ll_destroy(void *userdata)
{
	(void)userdata;
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

/* The request's caller noted (new_owner(), kill_setid_on_write()). */
#define REQ(req) (CTX = fuse_req_ctx(req))

/* path of node ino (with name: of that name in it), or the reply sent */
#define PATH_OR_REPLY(req, ino, name, buf) do { \
	int _pr = inode_path((ino), (name), (buf), sizeof(buf)); \
	if (_pr < 0) { \
		fuse_reply_err((req), -_pr); \
		return; \
	} \
} while (0)

static void reply_status(fuse_req_t req, int r)
{
	fuse_reply_err(req, r < 0 ? -r : 0);
}

/* The open file of node ino, from the handle or the node (a reference
 * in *held to release then). */
static struct rfile *file_of(fuse_ino_t ino, struct fuse_file_info *fi, struct fuse_file_info *tmp,
			     struct rfile **held)
{
	*held = NULL;
	if (RF(fi))
		return RF(fi);
	*held = inode_rfile(ino);
	if (*held) {
		memset(tmp, 0, sizeof(*tmp));
		tmp->fh = (uintptr_t)*held;
	}
	return *held;
}

/* attributes of node ino (path: its path, or NULL for an open file) */
static int attr_of(fuse_ino_t ino, const char *path, struct fuse_file_info *fi, struct stat *st)
{
	struct fuse_file_info tmp;
	struct rfile *held;
	memset(st, 0, sizeof(*st));
	if (file_of(ino, fi, &tmp, &held)) {
		int r = fs_getattr(NULL, st, held ? &tmp : fi);
		if (held)
			rfile_release(held);
		return r;
	}
	return path ? fs_getattr(path, st, NULL) : -ESTALE;
}

/* The entry of name under parent, found at path: its node counted. */
static void reply_entry_at(fuse_req_t req, fuse_ino_t parent, const char *name, const char *path,
			   struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	uint64_t epoch = rfile_epoch();
	int r = fi ? fs_getattr(NULL, &e.attr, fi) : fs_getattr(path, &e.attr, NULL);
	if (r == 0 && !(e.ino = inode_found(parent, name, e.attr.st_ino, epoch)))
		r = -ENOMEM;
	if (r < 0) {
		if (fi)
			rfile_release(RF(fi));
		fuse_reply_err(req, -r);
		return;
	}
	e.attr_timeout = kept_for(fsops_attr_timeout);
	e.entry_timeout = kept_for(fsops_entry_timeout);
	if (fi) {
		inode_opened(e.ino, RF(fi));
		if (fuse_reply_create(req, &e, fi) == -ENOENT) {
			/* (the caller was interrupted: nobody will release it) */
			inode_closed(e.ino);
			inode_forget(e.ino, 1);
			rfile_release(RF(fi));
		}
		return;
	}
	fuse_reply_entry(req, &e);
}

/* A new object at path (parent, name), made with result r: its entry. */
static void reply_made(fuse_req_t req, fuse_ino_t parent, const char *name, const char *path, int r)
{
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_entry_at(req, parent, name, path, NULL);
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	char path[PATH_MAX];
	REQ(req);
	PATH_OR_REPLY(req, parent, name, path);
	if (hidden(path)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	reply_entry_at(req, parent, name, path, NULL);
}

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	inode_forget(ino, nlookup);
	fuse_reply_none(req);
}

static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		inode_forget(forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char path[PATH_MAX];
	struct stat st;
	REQ(req);
	int r = inode_path(ino, NULL, path, sizeof(path));
	r = attr_of(ino, r == 0 ? path : NULL, fi, &st);
	/* an open directory no name reaches any more (another directory was
	 * renamed over it, or it was removed) answers from its descriptor */
	if ((r == -ESTALE || r == -ENOENT) && inode_dir_stat(ino, &st) == 0)
		r = 0;
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, kept_for(fsops_attr_timeout));
}

/* the changes of a setattr, in the order chmod, chown, truncate, times */
static int set_attrs(const char *path, struct stat *attr, int valid, struct fuse_file_info *fi)
{
	int r = 0;
	if (valid & FUSE_SET_ATTR_MODE)
		r = NS(fs_chmod(path, attr->st_mode, fi));
	if (r == 0 && (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		r = NS(fs_chown(path, (valid & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1,
				(valid & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1, fi));
	if (r == 0 && (valid & FUSE_SET_ATTR_SIZE))
		r = RF(fi) ? fs_truncate(path, attr->st_size, fi) : NS(fs_truncate(path, attr->st_size, fi));
	if (r == 0 && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
		struct timespec tv[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };
		if (valid & FUSE_SET_ATTR_ATIME_NOW)
			tv[0].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_ATIME)
			tv[0] = attr->st_atim;
		if (valid & FUSE_SET_ATTR_MTIME_NOW)
			tv[1].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_MTIME)
			tv[1] = attr->st_mtim;
		r = NS(fs_utimens(path, tv, fi));
	}
	return r;
}

static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid, struct fuse_file_info *fi)
{
	char path[PATH_MAX];
	struct fuse_file_info tmp;
	struct rfile *held;
	struct stat st;
	REQ(req);
	if (!file_of(ino, fi, &tmp, &held))
		PATH_OR_REPLY(req, ino, NULL, path);
	else
		path[0] = '\0';
	struct fuse_file_info *f = held ? &tmp : fi;
	int r = set_attrs(path[0] ? path : NULL, attr, valid, f);
	if (r == 0)
		r = attr_of(ino, path[0] ? path : NULL, f, &st);
	if (held)
		rfile_release(held);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, kept_for(fsops_attr_timeout));
}

static void ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char path[PATH_MAX], buf[PATH_MAX + 1];
	REQ(req);
	PATH_OR_REPLY(req, ino, NULL, path);
	int r = fs_readlink(path, buf, sizeof(buf));
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_readlink(req, buf);
}

static void ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	char path[PATH_MAX];
	REQ(req);
	PATH_OR_REPLY(req, parent, name, path);
	int r = NS(fs_mknod(path, mode, rdev));
	reply_made(req, parent, name, path, r);
}

static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	char path[PATH_MAX];
	REQ(req);
	PATH_OR_REPLY(req, parent, name, path);
	int r = NS(fs_mkdir(path, mode));
	reply_made(req, parent, name, path, r);
}

static void ll_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name)
{
	char path[PATH_MAX];
	REQ(req);
	PATH_OR_REPLY(req, parent, name, path);
	int r = NS(fs_symlink(target, path));
	reply_made(req, parent, name, path, r);
}

static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	char path[PATH_MAX];
	REQ(req);
	PATH_OR_REPLY(req, parent, name, path);
	reply_status(req, NS(fs_unlink(parent, name, path)));
}

static void ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	char path[PATH_MAX];
	REQ(req);
	PATH_OR_REPLY(req, parent, name, path);
	int r = NS(fs_rmdir(path));
	if (r == 0)
		inode_unlinked(parent, name);
	reply_status(req, r);
}

static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	char from[PATH_MAX], to[PATH_MAX];
	REQ(req);
	PATH_OR_REPLY(req, parent, name, from);
	PATH_OR_REPLY(req, newparent, newname, to);
	reply_status(req, NS(fs_rename(parent, name, newparent, newname, from, to, flags)));
}

static void ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	char from[PATH_MAX], to[PATH_MAX];
	REQ(req);
	PATH_OR_REPLY(req, ino, NULL, from);
	PATH_OR_REPLY(req, newparent, newname, to);
	reply_made(req, newparent, newname, to, NS(fs_link(from, to)));
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char path[PATH_MAX];
	REQ(req);
	PATH_OR_REPLY(req, ino, NULL, path);
	int r = NS(fs_open(path, fi));
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	inode_opened(ino, RF(fi));
	if (fuse_reply_open(req, fi) == -ENOENT) {
		/* (interrupted: no release will come) */
		uint64_t orphan = inode_closed(ino);
		rfile_release(RF(fi));
		if (orphan)
			NS((orphan_remove(orphan), 0));
	}
}

static void ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	char path[PATH_MAX];
	REQ(req);
	PATH_OR_REPLY(req, parent, name, path);
	int r = NS(fs_create(path, mode, fi));
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_entry_at(req, parent, name, path, fi);
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	static __thread char *buf;
	static __thread size_t buf_len;
	(void)ino;
	REQ(req);
	if (buf_len < size) {
		void *p;
		if (posix_memalign(&p, 4096, size)) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		free(buf);
		buf = p;
		buf_len = size;
	}
	ssize_t n = cache_read(RF(fi), buf, size, off);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, n);
}

static void ll_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv, off_t off,
			 struct fuse_file_info *fi)
{
	REQ(req);
	ssize_t n = fs_write_buf(ino, bufv, off, fi);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, n);
}

static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	REQ(req);
	uint64_t orphan = inode_closed(ino);
	int r = rfile_release(RF(fi));
	if (orphan)
		NS((orphan_remove(orphan), 0));
	reply_status(req, r);
}

static void ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	REQ(req);
	reply_status(req, cache_fsync(RF(fi), datasync));
}

static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char path[PATH_MAX];
	REQ(req);
	int r = inode_path(ino, NULL, path, sizeof(path));
	if (r == 0) {
		r = fs_opendir(path, fi);
	} else if (r == -ESTALE && (r = inode_dir_dup(ino)) >= 0) {
		/* a directory no name reaches, open elsewhere: read as it is
		 * (its fsyncdir syncs the members' filesystems) */
		snprintf(path, sizeof(path), "/%s", SB_DIR);
		r = dirh_make(r, path, fi);
	}
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	inode_opened_dir(ino, fcntl(dirfd(DH(fi)->d), F_DUPFD_CLOEXEC, 0));
	if (fuse_reply_open(req, fi) == -ENOENT) {
		inode_closed(ino);
		fs_releasedir(path, fi);
	}
}

static void ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	inode_closed(ino);
	fs_releasedir(NULL, fi);
	fuse_reply_err(req, 0);
}

static void ll_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	REQ(req);
	reply_status(req, fs_fsyncdir(NULL, datasync, fi));
}

/* Entries from the offset the kernel gives on (the stream's own offsets:
 * d_off), as many as fit in size bytes. */
static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct dirh *h = DH(fi);
	(void)ino;
	char *buf = h ? malloc(size) : NULL;
	if (!buf) {
		fuse_reply_err(req, h ? ENOMEM : EBADF);
		return;
	}
	if (off != h->pos) {
		if (off == 0)
			rewinddir(h->d);
		else
			seekdir(h->d, off);
		h->pos = off;
	}
	size_t used = 0;
	struct dirent *e;
	for (;;) {
		long here = telldir(h->d);
		errno = 0;
		if (!(e = readdir(h->d)))
			break;
		if (h->root && strcmp(e->d_name, SB_DIR) == 0) {
			h->pos = e->d_off;
			continue;
		}
		struct stat st;
		memset(&st, 0, sizeof(st));
		st.st_ino = e->d_ino;
		st.st_mode = DTTOIF(e->d_type);
		size_t l = fuse_add_direntry(req, buf + used, size - used, e->d_name, &st, e->d_off);
		if (l > size - used) {
			seekdir(h->d, here);	/* (the next call starts with it) */
			break;
		}
		used += l;
		h->pos = e->d_off;
	}
	if (!e && errno && !used)
		fuse_reply_err(req, errno);
	else
		fuse_reply_buf(req, buf, used);
	free(buf);
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;
	(void)ino;
	int r = fs_statfs(NULL, &sv);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_statfs(req, &sv);
}

/* ----------------------------------------------------------------- xattr */

static void ll_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
			int flags)
{
	char path[PATH_MAX];
	REQ(req);
	PATH_OR_REPLY(req, ino, NULL, path);
	reply_status(req, NS(fs_setxattr(path, name, value, size, flags)));
}

static void ll_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	char path[PATH_MAX];
	REQ(req);
	PATH_OR_REPLY(req, ino, NULL, path);
	reply_status(req, NS(fs_removexattr(path, name)));
}

/* getxattr and listxattr: size 0 asks for the size alone */
static void reply_xattr_call(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char path[PATH_MAX];
	REQ(req);
	PATH_OR_REPLY(req, ino, NULL, path);
	char *buf = size ? malloc(size) : NULL;
	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	int r = name ? fs_getxattr(path, name, buf, size) : fs_listxattr(path, buf, size);
	if (r < 0)
		fuse_reply_err(req, -r);
	else if (!size)
		fuse_reply_xattr(req, r);
	else
		fuse_reply_buf(req, buf, r);
	free(buf);
}

/*
 * The kernel asks for security.capability before every write through the
 * page cache (its set-id and capability clearing).  libfuse 3.14 cannot
 * offer FUSE_HANDLE_KILLPRIV_V2, with which the kernel would stop asking
 * (SB_NOSEC), and an ENOSYS would turn off every xattr of the mount; so
 * an open file answers from its primary shard's descriptor, without a
 * path or an open on the member.
 */
static int open_file_xattr(fuse_ino_t ino, const char *name, char *buf, size_t size)
{
	struct rfile *rf = inode_rfile(ino);
	if (!rf)
		return 1;
	pthread_rwlock_rdlock(&rf->rw);	/* (see fs_getattr()) */
	int fd = rf->fd[PRIMARY_IDX];
	ssize_t n = reserved_xattr(name) || fd < 0 ? -1 : fgetxattr(fd, name, buf, size);
	int r = fd < 0 ? 1 : reserved_xattr(name) ? -ENODATA : n < 0 ? -errno : (int)n;
	pthread_rwlock_unlock(&rf->rw);
	rfile_release(rf);
	return r;
}

static void ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char buf[256];
	int r = size <= sizeof(buf) ? open_file_xattr(ino, name, buf, size) : 1;
	if (r == 1)
		reply_xattr_call(req, ino, name, size);
	else if (r < 0)
		fuse_reply_err(req, -r);
	else if (!size)
		fuse_reply_xattr(req, r);
	else
		fuse_reply_buf(req, buf, r);
}

static void ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	reply_xattr_call(req, ino, NULL, size);
}

/* ------------------------------------------ local filesystem calls
 *
 * Thin callbacks over the cache (cache.h): each turns the request into
 * the cache's call on the open file.
 */

static void ll_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
	(void)ino;
	REQ(req);
	reply_status(req, off < 0 || len <= 0 ? -EINVAL : cache_fallocate(RF(fi), mode, (uint64_t)off, (uint64_t)len));
}

static void ll_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
	(void)ino;
	REQ(req);
	off_t r = off < 0 ? -ENXIO : (off_t)cache_seek(RF(fi), (uint64_t)off, whence);
	if (r < 0)
		fuse_reply_err(req, (int)-r);
	else
		fuse_reply_lseek(req, r);
}

static void ll_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in, struct fuse_file_info *fi_in,
			       fuse_ino_t ino_out, off_t off_out, struct fuse_file_info *fi_out, size_t len, int flags)
{
	(void)ino_in;
	(void)ino_out;
	REQ(req);
	ssize_t n = flags || off_in < 0 || off_out < 0
			    ? -EINVAL
			    : cache_copy_range(RF(fi_in), (uint64_t)off_in, RF(fi_out), (uint64_t)off_out, len);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

/* The inode flags (lsattr, chattr): raidfs keeps none, so it says none
 * and takes none; an fsxattr with nothing set; other ioctls: ENOTTY.
 * (The kernel asks with a 4-byte flags word, whatever the command's
 * encoded size.) */
static void ll_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg, struct fuse_file_info *fi,
		     unsigned flags, const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	union {
		unsigned int flags;
		struct fsxattr fsx;
	} out;
	unsigned int c = cmd, v = 0;
	(void)ino;
	(void)arg;
	(void)fi;
	(void)flags;
	memset(&out, 0, sizeof(out));
	if (c == FS_IOC_GETFLAGS || c == FS_IOC32_GETFLAGS || c == FS_IOC_FSGETXATTR) {
		size_t n = c == FS_IOC_FSGETXATTR ? sizeof(out.fsx) : sizeof(out.flags);
		fuse_reply_ioctl(req, 0, &out, out_bufsz < n ? out_bufsz : n);
	} else if (c == FS_IOC_SETFLAGS || c == FS_IOC32_SETFLAGS) {
		memcpy(&v, in_buf, in_bufsz < sizeof(v) ? in_bufsz : sizeof(v));
		if (v)
			fuse_reply_err(req, EOPNOTSUPP);
		else
			fuse_reply_ioctl(req, 0, NULL, 0);
	} else {
		fuse_reply_err(req, ENOTTY);
	}
}

/* ------------------------------------------------------ kernel caches */

/*
 * What the kernel caches (attributes for attr_timeout, names for
 * entry_timeout, the pages of files) is kept right by the requests
 * themselves; what changes it otherwise is told to the kernel here: a
 * slot or the primary changed (another member's inode numbers and times:
 * every node's attributes), a mirror's copies rewritten from another
 * copy (the file's pages).  A thread of its own sends the notices: the
 * kernel may wait for page locks that a request waiting for us holds.
 */
struct kinval {
	uint64_t node;
	int64_t off, len;	/* off < 0: the attributes only */
	char *name;		/* not NULL: the entry of that name in node */
};
#define KINVAL_MAX (1u << 20)
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct kinval *q;
	size_t n, cap;
	bool started, stop;
	pthread_t thread;
	struct fuse_session *se;
} K = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

/* queued (lost when the queue is full: the timeouts still bound it);
 * name is taken over */
static void kinval(uint64_t node, int64_t off, int64_t len, char *name)
{
	pthread_mutex_lock(&K.lock);
	if (K.started && K.n == K.cap && K.cap < KINVAL_MAX) {
		size_t cap = K.cap ? K.cap * 2 : 256;
		struct kinval *q = realloc(K.q, cap * sizeof(*q));
		if (q) {
			K.q = q;
			K.cap = cap;
		}
	}
	if (K.started && K.n < K.cap) {
		K.q[K.n++] = (struct kinval){ node, off, len, name };
		name = NULL;
		pthread_cond_signal(&K.cond);
	}
	pthread_mutex_unlock(&K.lock);
	free(name);
}

static void *notifier(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&K.lock);
	while (!K.stop) {
		if (!K.n) {
			pthread_cond_wait(&K.cond, &K.lock);
			continue;
		}
		struct kinval *q = K.q;
		size_t n = K.n;
		K.q = NULL;
		K.n = K.cap = 0;
		pthread_mutex_unlock(&K.lock);
		/* (-ENOENT: the kernel forgot the node meanwhile) */
		for (size_t i = 0; i < n; i++) {
			if (q[i].name)
				fuse_lowlevel_notify_inval_entry(K.se, q[i].node, q[i].name, strlen(q[i].name));
			else
				fuse_lowlevel_notify_inval_inode(K.se, q[i].node, q[i].off, q[i].len);
			free(q[i].name);
		}
		free(q);
		pthread_mutex_lock(&K.lock);
	}
	pthread_mutex_unlock(&K.lock);
	return NULL;
}

void fsops_start(struct fuse_session *se)
{
	K.se = se;
	K.stop = false;
	K.started = pthread_create(&K.thread, NULL, notifier, NULL) == 0;
	if (!K.started)
		log_warn("no thread to tell the kernel of changes: what it caches may lag up to %g s", fsops_attr_timeout);
}

void fsops_stop(void)
{
	pthread_mutex_lock(&K.lock);
	bool started = K.started;
	K.started = false;
	K.stop = true;
	pthread_cond_signal(&K.cond);
	pthread_mutex_unlock(&K.lock);
	if (started)
		pthread_join(K.thread, NULL);
	for (size_t i = 0; i < K.n; i++)
		free(K.q[i].name);
	free(K.q);
	K.q = NULL;
	K.n = K.cap = 0;
}

static void inval_entry(uint64_t parent, const char *name, void *arg)
{
	(void)arg;
	char *copy = strdup(name);
	if (copy)
		kinval(parent, 0, 0, copy);
}

/* Another member serves the namespace (or a slot changed): its inode
 * numbers differ, and the kernel keeps an inode's number for good, so
 * every name is dropped (the next lookup makes new nodes). */
/* The daemon itself changed node's attributes in a request about
 * something else: the kernel forgets what it cached of them, at once
 * (attributes only: no page lock is taken). */
static void attrs_changed(uint64_t node)
{
	if (K.se)
		fuse_lowlevel_notify_inval_inode(K.se, node, -1, 0);
}

static void slot_changed(struct array *a)
{
	(void)a;
	inode_each_name(inval_entry, NULL);
}

static void data_rewritten(struct rfile *rf, uint64_t off, uint64_t end)
{
	uint64_t id = inode_by_ino(__atomic_load_n(&rf->key, __ATOMIC_ACQUIRE), rfile_epoch());
	if (id)
		kinval(id, (int64_t)off, end == UINT64_MAX || end - off > INT64_MAX ? 0 : (int64_t)(end - off), NULL);
}

const struct array_hooks fsops_hooks = {
	.slot_change_end = slot_changed,
	.data_rewritten = data_rewritten,
};

static const struct fuse_lowlevel_ops ops = {
	.init = ll_init,
	.destroy = ll_destroy,
	.lookup = ll_lookup,
	.forget = ll_forget,
	.forget_multi = ll_forget_multi,
	.getattr = ll_getattr,
	.setattr = ll_setattr,
	.readlink = ll_readlink,
	.mknod = ll_mknod,
	.mkdir = ll_mkdir,
	.unlink = ll_unlink,
	.rmdir = ll_rmdir,
	.symlink = ll_symlink,
	.rename = ll_rename,
	.link = ll_link,
	.open = ll_open,
	.read = ll_read,
	.write_buf = ll_write_buf,
	.release = ll_release,
	.fsync = ll_fsync,
	.opendir = ll_opendir,
	.readdir = ll_readdir,
	.releasedir = ll_releasedir,
	.fsyncdir = ll_fsyncdir,
	.statfs = ll_statfs,
	.setxattr = ll_setxattr,
	.getxattr = ll_getxattr,
	.listxattr = ll_listxattr,
	.removexattr = ll_removexattr,
	.create = ll_create,
	/* local filesystem calls (thin, over the cache) */
	.fallocate = ll_fallocate,
	.lseek = ll_lseek,
	.copy_file_range = ll_copy_file_range,
	.ioctl = ll_ioctl,
};

const struct fuse_lowlevel_ops *fsops_get(struct array *a)
{
	A = a;
	a->tick = tick;
	inode_init();
	return &ops;
}
