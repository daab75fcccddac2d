/*
 * file.c - the open-file table and the life of an rfile (see file.h).
 */
#include "file.h"
#include "stripe.h"
#include "csum.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cache.h"
#include "rebuild.h"
#include "util.h"

#define TABLE_SIZE 4096

static struct rfile *table[TABLE_SIZE];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

void rfile_table_init(void)
{
	memset(table, 0, sizeof(table));
}

static unsigned bucket(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return key % TABLE_SIZE;
}

bool rfile_path_of(uint64_t id, char *buf, size_t len)
{
	bool found = false;
	pthread_mutex_lock(&table_lock);
	for (unsigned b = 0; b < TABLE_SIZE && !found; b++)
		for (struct rfile *rf = table[b]; rf && !found; rf = rf->next)
			if (rf->id == id && rf->path && strlen(rf->path) < len) {
				strcpy(buf, rf->path);
				found = true;
			}
	pthread_mutex_unlock(&table_lock);
	return found;
}

static void rfile_free(struct rfile *rf)
{
	stripe_rows_forget(rf);
	pthread_rwlock_destroy(&rf->rw);
	pthread_mutex_destroy(&rf->log_order);
	free(rf->path);
	free(rf);
}

static struct rfile *find_locked(uint64_t key)
{
	for (struct rfile *rf = table[bucket(key)]; rf; rf = rf->next)
		if (rf->key == key)
			return rf;
	return NULL;
}

/*
 * Keys and member directories change together.  An rfile is keyed by the
 * inode of its primary shard and holds a descriptor per member directory:
 * when the primary changes, or a replacement takes a member's slot, what a
 * thread looked up or opened a moment before may come from the old
 * directory - a lookup by an inode of the old primary finds nothing, or
 * another file.  key_epoch counts these changes (key_changing: how many
 * are under way): a thread notes it before it looks at the members, and
 * checks it under the table lock before it trusts or inserts what it
 * found.
 */
static uint64_t key_epoch;
static unsigned key_changing;	/* changes under way (they can nest) */
static pthread_cond_t key_cv = PTHREAD_COND_INITIALIZER;

uint64_t rfile_epoch(void)
{
	if (!__atomic_load_n(&key_changing, __ATOMIC_ACQUIRE))
		return __atomic_load_n(&key_epoch, __ATOMIC_ACQUIRE);
	pthread_mutex_lock(&table_lock);
	while (key_changing)
		pthread_cond_wait(&key_cv, &table_lock);
	uint64_t e = key_epoch;
	pthread_mutex_unlock(&table_lock);
	return e;
}

/* What was found since rfile_epoch() gave `epoch` can be trusted (no
 * change began or ended meanwhile, none under way).  Table lock held. */
static bool epoch_holds(uint64_t epoch)
{
	return key_epoch == epoch && !key_changing;
}

/* The key of rf from its shard on the current primary; a file without
 * one keeps a key no path lookup produces (it stays reachable through its
 * handles).  Table lock held. */
static void key_locked(struct array *a, struct rfile *rf)
{
	struct stat st;
	int p = a->primary;
	rf->key = (rf->fd[p] >= 0 && fstat(rf->fd[p], &st) == 0) ? st.st_ino : ~(uint64_t)(uintptr_t)rf;
}

void rfile_change_begin(void)
{
	pthread_mutex_lock(&table_lock);
	__atomic_add_fetch(&key_changing, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&key_epoch, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&table_lock);
}

void rfile_change_end(struct array *a)
{
	struct rfile *all = NULL;
	pthread_mutex_lock(&table_lock);
	for (unsigned b = 0; b < TABLE_SIZE; b++) {
		while (table[b]) {
			struct rfile *rf = table[b];
			table[b] = rf->next;
			rf->next = all;
			all = rf;
		}
	}
	while (all) {
		struct rfile *rf = all;
		all = rf->next;
		key_locked(a, rf);
		unsigned b = bucket(rf->key);
		rf->next = table[b];
		table[b] = rf;
	}
	__atomic_add_fetch(&key_epoch, 1, __ATOMIC_RELEASE);
	__atomic_sub_fetch(&key_changing, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&key_cv);
	pthread_mutex_unlock(&table_lock);
}

static void for_each_open(void (*fn)(struct rfile *rf, uint32_t j), uint32_t j);

static void forget_one(struct rfile *rf, uint32_t j)
{
	if (rf->fd[j] >= 0)
		close(rf->fd[j]);
	rf->fd[j] = -1;
	if (rf->sfd[j] >= 0)
		close(rf->sfd[j]);	/* (the new shard's is opened when needed) */
	rf->sfd[j] = -1;
	rf->damaged &= ~(1ull << j);	/* (a new shard comes from the rebuild) */
}

void rfile_forget_member(uint32_t j)
{
	for_each_open(forget_one, j);
}

static void commit_one(struct rfile *rf, uint32_t j)
{
	/* the shadow's shard takes over the old one's descriptor number:
	 * a thread that read it without the file's lock (getattr) meets
	 * one shard of the file or the other, never a closed number */
	if (rf->fd[j] >= 0 && rf->fd[SHADOW] >= 0 && dup3(rf->fd[SHADOW], rf->fd[j], O_CLOEXEC) >= 0) {
		close(rf->fd[SHADOW]);
	} else {
		if (rf->fd[j] >= 0)
			close(rf->fd[j]);
		rf->fd[j] = rf->fd[SHADOW];
	}
	rf->fd[SHADOW] = -1;
	/* (its checksum file too: the shadow's records are member j's now) */
	if (rf->sfd[j] >= 0)
		close(rf->sfd[j]);
	rf->sfd[j] = rf->sfd[SHADOW];
	rf->sfd[SHADOW] = -1;
	rf->damaged &= ~(1ull << j);	/* the copy was rebuilt from the others */
}

void rfile_shadow_commit(uint32_t j)
{
	for_each_open(commit_one, j);
}

/* A reference on every open file, taken under the table lock (the
 * caller locks each file without it: rf->rw comes before table_lock,
 * locks.h).  *short_: some were left out (no memory). */
static struct rfile **collect_open(size_t *count, bool *short_)
{
	struct rfile **all = NULL;
	size_t n = 0, cap = 0;
	*short_ = false;
	pthread_mutex_lock(&table_lock);
	for (unsigned b = 0; b < TABLE_SIZE; b++) {
		for (struct rfile *rf = table[b]; rf; rf = rf->next) {
			if (UTIL_GROW(all, cap, n + 1) < 0) {
				*short_ = true;
				break;
			}
			rf->refs++;
			all[n++] = rf;
		}
	}
	pthread_mutex_unlock(&table_lock);
	*count = n;
	return all;
}

/* fn(rf, j) on every open file under its write lock */
static void for_each_open(void (*fn)(struct rfile *rf, uint32_t j), uint32_t j)
{
	size_t n;
	bool short_;
	struct rfile **all = collect_open(&n, &short_);
	for (size_t i = 0; i < n; i++) {
		struct rfile *rf = all[i];
		pthread_rwlock_wrlock(&rf->rw);
		fn(rf, j);
		pthread_rwlock_unlock(&rf->rw);
		rfile_release(rf);
	}
	free(all);
}

bool rfile_record_acked_all(void)
{
	size_t n;
	bool short_;
	struct rfile **all = collect_open(&n, &short_);
	bool done = !short_;
	for (size_t i = 0; i < n; i++) {
		struct rfile *rf = all[i];
		/* (no wait behind a long write: the next tick) */
		if (pthread_rwlock_trywrlock(&rf->rw) == 0) {
			if (stripe_record_acked(rf) < 0)
				done = false;
			pthread_rwlock_unlock(&rf->rw);
		} else {
			done = false;
		}
		rfile_release(rf);
	}
	free(all);
	return done;
}

/* A healthy member is being replaced in place: the file's shard on the
 * replacement, if the copy has made it yet (else the copy makes it).  On
 * create (mode given) it is made here. */
static void open_shadow(struct rfile *rf, const char *relpath, bool create, mode_t mode)
{
	struct array *a = rf->a;
	int sj = shadow_of(a);
	if (sj < 0 || a->m[SHADOW].dirfd < 0)
		return;
	int fd = create ? openat(a->m[SHADOW].dirfd, relpath,
				 O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode)
			: openat(a->m[SHADOW].dirfd, relpath, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		/* its directory not copied yet; or out of descriptors: the
		 * copy settles it again before it ends */
		if (create || member_error_is_own(errno))
			array_redo(a, relpath);
		return;
	}
	struct file_meta fm;
	if (!create && meta_get(fd, &fm) == 0 && fm.id != rf->id) {
		close(fd);	/* a leftover: the copy replaces it */
		return;
	}
	rf->fd[SHADOW] = fd;
}

bool rfile_any_without(uint32_t j)
{
	bool any = false;
	pthread_mutex_lock(&table_lock);
	for (unsigned b = 0; b < TABLE_SIZE && !any; b++)
		for (struct rfile *rf = table[b]; rf && !any; rf = rf->next)
			any = rf->fd[j] < 0;
	pthread_mutex_unlock(&table_lock);
	return any;
}

int rfile_lookup_size(uint64_t epoch, uint64_t key, uint64_t *size, int *marks)
{
	int found = 0;
	pthread_mutex_lock(&table_lock);
	struct rfile *rf;
	if (!epoch_holds(epoch)) {
		found = -EAGAIN;
	} else if ((rf = find_locked(key))) {
		*size = __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE);
		*marks = __atomic_load_n(&rf->marked, __ATOMIC_ACQUIRE) +
			 __atomic_load_n(&rf->cmarked, __ATOMIC_ACQUIRE);
		found = 1;
	}
	pthread_mutex_unlock(&table_lock);
	return found;
}

static void close_fds(const struct array *a, int *fds)
{
	for (uint32_t j = 0; j < a->width; j++) {
		if (fds[j] >= 0)
			close(fds[j]);
		fds[j] = -1;
	}
}

static void close_rf_fds(struct rfile *rf)
{
	close_fds(rf->a, rf->fd);
	if (rf->sums)
		close_fds(rf->a, rf->sfd);
	if (rf->fd[SHADOW] >= 0)
		close(rf->fd[SHADOW]);
	rf->fd[SHADOW] = -1;
	if (rf->sums && rf->sfd[SHADOW] >= 0)
		close(rf->sfd[SHADOW]);
	rf->sfd[SHADOW] = -1;
}

/* What rfile_open() learns of the shards' records besides the best one. */
struct meta_look {
	bool read[LAYOUT_MAX_WIDTH];	/* shard j has a readable record */
	uint64_t id[LAYOUT_MAX_WIDTH];	/* the file id in it */
	bool agree;			/* the valid records all hold the best one's version */
};

/* As rfile_best_meta(), and what `look` holds (when given). */
static int best_meta(const struct array *a, const int *fds, struct file_meta *best, int *nvalid,
		     struct meta_look *look)
{
	struct file_meta fm[LAYOUT_MAX_WIDTH];
	bool ok[LAYOUT_MAX_WIDTH];
	uint64_t want = 0;
	int p = a->primary, votes_best = 0;

	for (uint32_t j = 0; j < a->width; j++) {
		struct layout l;
		bool got = fds[j] >= 0 && meta_get(fds[j], &fm[j]) == 0;
		if (look) {
			look->read[j] = got;
			look->id[j] = got ? fm[j].id : 0;
		}
		ok[j] = got && meta_layout(&fm[j], &l) == 0 && fm[j].width == a->width;
	}
	/* Version counters belong to one file: first decide which file this
	 * is (the primary's, which serves the namespace, else the majority),
	 * then take that file's newest record.  A shard of another file left
	 * by an interrupted rename must not win on its version. */
	if (p >= 0 && (uint32_t)p < a->width && ok[p]) {
		want = fm[p].id;
	} else {
		for (uint32_t j = 0; j < a->width; j++) {
			int v = 0;
			for (uint32_t i = 0; i < a->width && ok[j]; i++)
				v += ok[i] && fm[i].id == fm[j].id;
			if (v > votes_best) {
				votes_best = v;
				want = fm[j].id;
			}
		}
	}
	bool have = false;
	*nvalid = 0;
	for (uint32_t j = 0; j < a->width; j++) {
		if (!ok[j] || fm[j].id != want)
			continue;
		(*nvalid)++;
		if (!have || fm[j].version > best->version) {
			*best = fm[j];
			have = true;
		}
	}
	if (look) {
		look->agree = have && !(best->flags & META_F_DIRTY);
		for (uint32_t j = 0; j < a->width; j++)
			if (fds[j] >= 0 && (!ok[j] || fm[j].id != want || fm[j].version != best->version ||
					    fm[j].size != best->size || fm[j].flags != best->flags))
				look->agree = false;
	}
	return have ? 0 : -EIO;
}

int rfile_best_meta(const struct array *a, const int *fds, struct file_meta *best, int *nvalid)
{
	return best_meta(a, fds, best, nvalid, NULL);
}

void rfile_new_meta(const struct array *a, uint64_t id, struct file_meta *fm)
{
	struct layout l;
	memset(fm, 0, sizeof(*fm));
	fm->id = id;
	fm->level = a->lay.level;
	fm->chunk = a->lay.chunk;
	fm->width = a->lay.width;
	fm->groups = a->lay.groups;
	layout_init(&l, fm->level, fm->chunk, fm->width, fm->groups, 0, NULL);
	fm->rotation = layout_rotation_for_id(&l, id);
	if (a->csum)
		fm->flags |= META_F_SUMS;
}

bool rfile_shards_empty(const struct array *a, const int *fds)
{
	for (uint32_t j = 0; j < a->width; j++) {
		struct stat st;
		if (fds[j] >= 0 && (fstat(fds[j], &st) < 0 || st.st_size != 0))
			return false;
	}
	return true;
}

/* As rfile_private(); `fresh`: a new file's, whose shards are empty:
 * no checksum file opened, each made by the first record written to its
 * member (sums_fd() in stripe.c), so that a member the file's stripes do
 * not reach never gets one; and no hole anywhere (rf->dense 0: reserve()
 * need not ask the members). */
static int private_init(struct array *a, const int *fds, const struct file_meta *m, struct rfile *rf,
			bool fresh)
{
	memset(rf, 0, sizeof(*rf));
	rf->a = a;
	rf->id = m->id;
	if (meta_layout(m, &rf->lay) < 0)
		return -EIO;
	for (uint32_t j = 0; j < MEMBER_SLOTS; j++)
		rf->fd[j] = j < a->width ? fds[j] : -1;
	rf->sums = m->flags & META_F_SUMS;
	for (uint32_t j = 0; j < MEMBER_SLOTS; j++)
		rf->sfd[j] = -1;
	for (uint32_t j = 0; rf->sums && !fresh && j < a->width; j++) {
		int fd = rf->fd[j] < 0 ? -1 : csum_open(a->m[j].dirfd, m->id, a->readonly ? O_RDONLY : O_RDWR | O_CREAT);
		if (fd < 0 && member_error_is_own(fd)) {
			close_fds(a, rf->sfd);	/* (the daemon's own shortage: the open fails) */
			return fd;
		}
		rf->sfd[j] = fd < 0 ? -1 : fd;	/* (none there: the others' records serve) */
	}
	rf->size = m->size;
	rf->acked = m->size;
	rf->size_recorded = m->size;
	rf->reserved = m->size;
	rf->dense = fresh ? 0 : RF_DENSE_UNKNOWN;
	rf->meta_version = m->version;
	rf->meta_flags = m->flags;
	pthread_rwlock_init(&rf->rw, NULL);
	pthread_mutex_init(&rf->log_order, NULL);
	return 0;
}

int rfile_private(struct array *a, const int *fds, const struct file_meta *m, struct rfile *rf)
{
	return private_init(a, fds, m, rf, false);
}

void rfile_private_end(struct rfile *rf)
{
	if (rf->sums)
		close_fds(rf->a, rf->sfd);
	stripe_rows_forget(rf);
	pthread_rwlock_destroy(&rf->rw);
	pthread_mutex_destroy(&rf->log_order);
}

int rfile_write_meta_rebuilt(struct rfile *rf, uint32_t j)
{
	pthread_mutex_lock(&table_lock);
	bool alone = rf->refs == 1;
	pthread_mutex_unlock(&table_lock);
	if (!alone || !rf->meta_agree || rf->meta_stale || rf->marked || rf->cmarked)
		return stripe_write_meta(rf, 0);
	int sj = j == SHADOW ? shadow_of(rf->a) : (int)j;
	struct file_meta fm = stripe_meta_record(rf, rf->meta_version, rf->meta_flags, rf->size_recorded);	/* (the shard has its length) */
	fm.index = (uint32_t)sj;
	int r = sj >= 0 ? member_meta_set(rf->a, j, rf->fd[j], &fm) : -EINVAL;
	if (r < 0)
		log_err("cannot write metadata of file %016" PRIx64 " on the new shard of member %d: %s", rf->id, sj,
			strerror(-r));
	return r;
}

static uint64_t closed_next;	/* closes so far */
/* The last close of each file (its last handle), by hash of its key: the
 * key, the close's number and when (ms).  A slot another file took since
 * cannot tell whether this one closed meanwhile. */
#define CLOSE_SLOTS 1024
static struct {
	uint64_t key, seq, ms;
} close_slot[CLOSE_SLOTS];

/* Did the last handle of the file keyed `key` close after the close
 * counter read `since`?  A close writes the file's record (a truncate by
 * the other opener, say), so an open that read the record before it holds
 * an old size.  When the slot went to another file since, `strict` says
 * yes.  Table lock held. */
static bool closed_since_locked(uint64_t key, uint64_t since, bool strict)
{
	unsigned h = bucket(key) % CLOSE_SLOTS;
	if (close_slot[h].seq <= since)
		return false;
	return close_slot[h].key == key || strict;
}

bool rfile_in_use(uint64_t ino, uint64_t epoch, uint64_t closed_ms)
{
	uint64_t now = util_now_ms();
	pthread_mutex_lock(&table_lock);
	bool used = !epoch_holds(epoch) || find_locked(ino) != NULL;
	unsigned h = bucket(ino) % CLOSE_SLOTS;
	if (!used && closed_ms && close_slot[h].key == ino && close_slot[h].seq)
		used = now - close_slot[h].ms <= closed_ms;
	pthread_mutex_unlock(&table_lock);
	return used;
}

/* Put a freshly built rfile into the table, or take the one another
 * thread inserted meanwhile.  Its key and shards come from the members as
 * they were at `epoch`: if they changed since, it is keyed again when
 * `rekey` (a create: the namespace lock keeps replacements out, only the
 * primary can have changed), else dropped and NULL returned (an open
 * starts again: a shard may come from a replaced directory).  An open
 * also starts again when the file's last handle closed since the close
 * counter read `closes` (its record may predate what that close wrote;
 * `strict`: also when another file's close took its slot since). */
static struct rfile *insert_or_share(struct rfile *rf, uint64_t epoch, bool rekey, uint64_t closes,
				     bool strict)
{
	pthread_mutex_lock(&table_lock);
	if (!rekey && (!epoch_holds(epoch) || (!find_locked(rf->key) && closed_since_locked(rf->key, closes, strict)))) {
		pthread_mutex_unlock(&table_lock);
		close_rf_fds(rf);
		rfile_free(rf);
		return NULL;
	}
	if (!epoch_holds(epoch))
		key_locked(rf->a, rf);	/* (a change still under way keys it again at its end) */
	struct rfile *old = find_locked(rf->key);
	if (old) {
		old->refs++;
		pthread_mutex_unlock(&table_lock);
		close_rf_fds(rf);
		rfile_free(rf);
		return old;
	}
	rf->refs = 1;
	unsigned b = bucket(rf->key);
	rf->next = table[b];
	table[b] = rf;
	pthread_mutex_unlock(&table_lock);
	return rf;
}

/*
 * A shard that cannot be opened for a member error (EIO, EROFS: its
 * filesystem went read-only after an error, ...) fails the member, as a
 * write error does: the file would be opened without that shard, its
 * writes would skip the member, and once the member worked again the
 * shard would read as its old bytes - with no record that they are old.
 * True when the member was failed.  (A shard that is not there, ENOENT,
 * is missing: the file is served from the others.)
 */
static bool shard_open_failed(struct array *a, uint32_t j, const char *relpath, int err)
{
	if (!member_error_is_fatal(err) || !member_online(a, j) || a->readonly)
		return false;	/* (a read-only mount only reads) */
	char what[96];
	snprintf(what, sizeof(what), "to open a shard for writing ('%.60s')", relpath);
	array_member_refused(a, j, err, what);
	return true;
}

static int open_shard(struct array *a, uint32_t j, const char *relpath)
{
	int fd = member_openat(a, j, relpath, O_RDWR | O_NOFOLLOW, 0);
	if (fd == -EACCES)
		fd = member_openat(a, j, relpath, O_RDONLY | O_NOFOLLOW, 0);
	return fd;
}

uint64_t rfile_short_shards(const struct array *a, const struct layout *l, const int *fds, uint64_t size,
			    uint64_t *beyond)
{
	uint64_t cut = 0, lost = 0;
	for (uint32_t j = 0; j < a->width; j++) {
		struct stat st;
		if (fds[j] >= 0 && member_online(a, j) && fstat(fds[j], &st) == 0 &&
		    (uint64_t)st.st_size < layout_shard_size(l, j, size))
			cut |= 1ull << j;
	}
	for (uint32_t g = 0; g < l->groups; g++) {
		/* members g * gw ... (raid10: a mirror pair) rebuild each other */
		uint64_t set = (l->gw == 64 ? ~0ull : (1ull << l->gw) - 1) << (g * l->gw);
		if ((uint32_t)__builtin_popcountll(cut & set) > l->m)
			lost |= cut & set;
	}
	*beyond = lost;
	return cut & ~lost;
}

/*
 * A shard shorter than the file's size needs, although the record says
 * every shard had its length (META_F_EXACT), lost data since: its member's
 * filesystem came back from a crash without it, or someone cut it.  Read
 * as it is, the missing part would come back as zeros.  Where the other
 * members of its redundancy set can rebuild it, it is marked damaged
 * instead (read from them) and rebuilt by repair_shards() once the file is
 * in the table.  Where more are short than the level tolerates, the bytes
 * never reached any disk (the usual case: a power cut after the metadata
 * went out and before data written without fsync did): they read as
 * zeros, as on one disk, and the file is resynced as the mount resyncs a
 * file of its dirty log; true then.
 */
static bool find_short_shards(struct rfile *rf)
{
	uint64_t lost;
	rf->damaged = rfile_short_shards(rf->a, &rf->lay, rf->fd, rf->size, &lost);
	for (uint32_t j = 0; j < rf->a->width; j++) {
		struct stat st;
		if (rf->damaged >> j & 1)	/* (the chunk its length ends in is lost too) */
			rf->damaged_from[j] = fstat(rf->fd[j], &st) == 0 ? (uint64_t)st.st_size / rf->lay.chunk : 0;
	}
	return lost != 0;
}

/*
 * What find_short_shards() found, acted on once the file is in the table
 * (under its lock: a second opener waits).  If the record changed since
 * it was read (another open truncated the file and closed it meanwhile),
 * the finding is stale and dropped.  A damaged shard is rebuilt from the
 * stripe its length ends in (below, it is as it was written); one that
 * cannot be rebuilt stays damaged for this open: its chunks from that
 * stripe on are not read, nor written (put_damaged(), stripe.c), so the
 * rest stays right and the next open finds it short again.  Its lost
 * part reads as an I/O error, never as zeros.  With `resync`, the file's redundancy is
 * recomputed from its data.  A read-only mount changes nothing.  Short
 * shards are not member errors (a power cut leaves them on healthy
 * disks): the rebuilt ones count as corrected.
 */
static void repair_shards(struct rfile *rf, const char *relpath, bool resync)
{
	struct array *a = rf->a;
	struct file_meta now;
	int nvalid;
	if (!array_writable(a))
		return;	/* (damaged shards are only read around) */
	pthread_rwlock_wrlock(&rf->rw);
	/* (the best record over every shard: a damaged shard's own lags,
	 * stripe_write_meta() skips it) */
	if (rfile_best_meta(a, rf->fd, &now, &nvalid) == 0 && now.version != rf->meta_version) {
		rf->damaged = 0;
		resync = false;
	}
	if (resync)
		log_warn("file '%s': its shards are short on more members than %s can rebuild from "
			 "(a crash before written data reached the disks?): the missing part reads as zeros; "
			 "restore the file's end from a copy if it matters",
			 relpath, layout_level_name(rf->lay.level));
	for (uint32_t j = 0; j < a->width; j++) {
		struct stat st;
		if (!(rf->damaged >> j & 1) || fstat(rf->fd[j], &st) < 0)
			continue;
		log_err("file '%s': its shard on member %u '%s' is %" PRIu64 " bytes, shorter than the %" PRIu64
			" its size needs: data lost on that member; rebuilt from the others",
			relpath, j, a->m[j].path, (uint64_t)st.st_size, layout_shard_size(&rf->lay, j, rf->size));
		long n = stripe_repair_shard(rf, j, rf->damaged_from[j]);
		if (n >= 0) {
			array_member_corrected(a, j);
			array_note_repaired(a, j, (uint64_t)n);
			log_warn("file '%s': its shard on member %u '%s' was rebuilt from the other members (%ld bytes written)",
				 relpath, j, a->m[j].path, n);
		} else {
			log_err("file '%s': cannot rebuild its shard on member %u '%s': %s", relpath, j, a->m[j].path,
				n == -EIO || n == -EINVAL ? "too few other members hold the file; what it lost reads as an "
							    "I/O error until the missing members are back (the next open "
							    "rebuilds it then)"
							  : strerror((int)-n));
		}
	}
	if (resync) {
		/* (in the dirty log first, as every change: a crash meanwhile
		 * is finished by the next mount) */
		int r = stripe_mark_dirty(rf);
		rf->recovering = true;
		if (r == 0)
			r = stripe_resync(rf);
		rf->recovering = false;
		if (r < 0)
			log_err("file '%s': cannot recompute its redundancy: %s", relpath, strerror(-r));
		else
			log_warn("file '%s': redundancy recomputed from the data the disks hold", relpath);
	}
	pthread_rwlock_unlock(&rf->rw);
}

void rfile_copy_xattrs(int from, int to, bool created)
{
	char names[4096], theirs[4096];
	const size_t own = sizeof(META_XATTR_PREFIX) - 1;
	ssize_t n = flistxattr(from, names, sizeof(names));
	for (ssize_t i = 0; i < n; i += strlen(names + i) + 1) {
		if (!strncmp(names + i, META_XATTR_PREFIX, own))
			continue;
		char val[65536];
		ssize_t v = fgetxattr(from, names + i, val, sizeof(val));
		if (v >= 0)
			fsetxattr(to, names + i, val, v, 0);
	}
	ssize_t m = n < 0 || created ? -1 : flistxattr(to, theirs, sizeof(theirs));
	for (ssize_t i = 0; i < m; i += strlen(theirs + i) + 1) {
		if (strncmp(theirs + i, META_XATTR_PREFIX, own) != 0 &&
		    fgetxattr(from, theirs + i, NULL, 0) < 0 && errno == ENODATA)
			fremovexattr(to, theirs + i);
	}
}

#define RESTORE_WINDOW 64	/* stripes filled per lock hold */

/* What the put-back of shard j of rf knows between its steps. */
struct restore {
	struct rfile *rf;
	const char *relpath;
	uint32_t j;
	int p;			/* the primary */
	int fd;			/* the new shard, unnamed until published */
	int dirfd;		/* member j's directory when it was made */
	uint64_t epoch;		/* of keys and directories, at step 1 */
	uint64_t gen, size;	/* rf->wgen and rf->size when filling began */
};

/* Step 1, under the namespace lock: still missing, one name, redundancy
 * to fill it from that is not in doubt; the shard made unnamed in its
 * directory there (x->fd).  0 or -errno. */
static int restore_begin(struct restore *x)
{
	struct rfile *rf = x->rf;
	struct array *a = rf->a;
	uint32_t j = x->j;
	int p = x->p, r = 0;
	struct stat pst, st;
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", x->relpath);
	char *slash = strrchr(parent, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(parent, sizeof(parent), ".");

	nslock_excl(&a->ns_lock);
	pthread_rwlock_rdlock(&rf->rw);
	x->epoch = rfile_epoch();
	if (p < 0 || j >= a->width || (int)j == p || rf->lay.m == 0 || !member_online(a, j) || shadow_of(a) == (int)j ||
	    rf->fd[p] < 0 || rf->fd[j] >= 0)
		r = -EINVAL;
	else if (array_left_dirty(a, rf->id))
		r = -EBUSY;
	else if (stripe_names(rf, &pst) < 0)
		r = -errno;
	else if (pst.st_nlink > 1)
		r = -EMLINK;
	else if (fstatat(a->m[j].dirfd, x->relpath, &st, AT_SYMLINK_NOFOLLOW) == 0)
		r = -EEXIST;
	else if (errno != ENOENT)
		r = -errno;
	pthread_rwlock_unlock(&rf->rw);
	if (r == 0) {
		x->dirfd = a->m[j].dirfd;
		x->fd = member_openat(a, j, parent, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		r = x->fd >= 0 ? 0 : x->fd == -EISDIR || x->fd == -EINVAL ? -EOPNOTSUPP : x->fd;
	}
	nslock_unlock(&a->ns_lock);
	return r;
}

/* Step 2: filled a window of stripes at a time under the file's lock,
 * through a private copy of the rfile: nobody else sees the shard before
 * it is whole (the dirty log's marks link every shard they see).  A write
 * or truncate meanwhile (rf->wgen) makes it stale: given up (-EAGAIN),
 * the next scrub tries again.  On the disk before it gets a name.  0 or
 * -errno. */
static int restore_fill(struct restore *x, bool (*go_on)(struct array *a, uint64_t bytes))
{
	struct rfile *rf = x->rf;
	uint32_t j = x->j;
	int r = 0;
	const struct layout *l = &rf->lay;
	uint64_t sbytes = layout_stripe_data_bytes(l);
	struct rfile *cp = malloc(sizeof(*cp));
	int sfd = -1;	/* the put-back's own descriptor of j's checksum file */
	if (!cp)
		r = -ENOMEM;
	for (uint64_t s0 = 0; r == 0; s0 += RESTORE_WINDOW) {
		long bytes = 0;
		/* the first window under the lock held exclusively (no destage
		 * half done when gen is read), the others shared (readers go on;
		 * a destage bumps wgen before it writes: seen at the window's
		 * end at the latest) */
		if (s0 == 0) {
			pthread_rwlock_wrlock(&rf->rw);
			x->gen = __atomic_load_n(&rf->wgen, __ATOMIC_ACQUIRE);
			x->size = __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE);
		} else {
			pthread_rwlock_rdlock(&rf->rw);
		}
		uint64_t nstripes = (x->size + sbytes - 1) / sbytes;
		if (__atomic_load_n(&rf->wgen, __ATOMIC_ACQUIRE) != x->gen ||
		    __atomic_load_n(&rf->size, __ATOMIC_ACQUIRE) != x->size) {
			r = -EAGAIN;
		} else {
			memcpy(cp, rf, sizeof(*cp));	/* (its lock is not used) */
			cp->fd[j] = x->fd;
			cp->damaged |= 1ull << j;	/* (not read from) */
			cp->damaged_from[j] = 0;
			/* (the copy's checksum file and cached records are its own:
			 * kept across windows, let go of below) */
			cp->sfd[j] = sfd;
			cp->rowc = NULL;
			for (uint64_t s = s0; s < s0 + RESTORE_WINDOW && s < nstripes && r == 0; s++) {
				bool fixed = false;
				long b = stripe_rebuild_chunk(cp, s, j, j, false, &fixed, NULL);
				r = b < 0 ? (int)b : 0;
				bytes += b > 0 ? b : 0;
			}
			sfd = cp->sfd[j];
			stripe_rows_forget(cp);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);	/* (after the reads above) */
			if (r == 0 && __atomic_load_n(&rf->wgen, __ATOMIC_ACQUIRE) != x->gen)
				r = -EAGAIN;	/* (a destage wrote meanwhile) */
		}
		pthread_rwlock_unlock(&rf->rw);
		if (r < 0 || s0 + RESTORE_WINDOW >= nstripes)
			break;
		if (!go_on(rf->a, bytes))
			r = -EINTR;
	}
	if (r == 0 && cp && rf->sums) {
		/* none of an older file's records past the end */
		cp->sfd[j] = sfd;
		cp->size = x->size;
		r = stripe_sums_trim(cp, j);
		sfd = cp->sfd[j];
	}
	if (sfd >= 0)
		close(sfd);
	free(cp);
	if (r == 0 && ftruncate(x->fd, (off_t)layout_shard_size(l, j, x->size)) < 0)
		r = -errno;
	if (r == 0)
		r = member_fsync(rf->a, j, x->fd, false);
	return r;
}

/* Step 3, under the namespace lock again, unless anything changed
 * (-EAGAIN): owner, mode, xattrs and times as the primary has them now (a
 * chmod meanwhile missed the shard), then marked and linked at its name
 * and put in service (stripe_publish_shard()), then the record.  0 or
 * -errno. */
static int restore_publish(struct restore *x)
{
	struct rfile *rf = x->rf;
	struct array *a = rf->a;
	uint32_t j = x->j;
	int p = x->p, fd = x->fd, r = 0;
	struct stat pst, now;
	nslock_excl(&a->ns_lock);
	pthread_rwlock_wrlock(&rf->rw);
	if (rf->wgen != x->gen || rf->size != x->size || rf->fd[j] >= 0 || rfile_epoch() != x->epoch ||
	    a->m[j].dirfd != x->dirfd || !member_online(a, j) || shadow_of(a) == (int)j ||
	    stripe_names(rf, &pst) < 0 || pst.st_nlink > 1 ||
	    fstatat(a->m[p].dirfd, x->relpath, &now, AT_SYMLINK_NOFOLLOW) < 0 || now.st_ino != rf->key)
		r = -EAGAIN;
	if (r == 0) {
		struct timespec tv[2] = { pst.st_atim, pst.st_mtim };
		fchown(fd, pst.st_uid, pst.st_gid);
		fchmod(fd, pst.st_mode & 07777);	/* after the chown, which drops set-id bits */
		rfile_copy_xattrs(rf->fd[p], fd, true);
		futimens(fd, tv);
		r = member_fsync(a, j, fd, false);
		if (r == 0)
			r = stripe_publish_shard(rf, j, fd, x->relpath);
	}
	/* (a crash before the record is written leaves a whole shard
	 * without one: the next close repairs that) */
	if (r == 0 && stripe_write_meta(rf, 0) < 0)
		rf->meta_stale = true;
	pthread_rwlock_unlock(&rf->rw);
	nslock_unlock(&a->ns_lock);
	return r;
}

int rfile_restore_shard(struct rfile *rf, const char *relpath, uint32_t j, bool (*go_on)(struct array *a, uint64_t bytes))
{
	struct restore x = { .rf = rf, .relpath = relpath, .j = j, .p = rf->a->primary, .fd = -1, .dirfd = -1 };
	int r = restore_begin(&x);
	if (r < 0)
		return r;
	r = restore_fill(&x, go_on);
	if (r == 0)
		r = restore_publish(&x);
	if (r < 0)
		close(x.fd);
	return r;
}

/*
 * A file the mount's resync left in the dirty log (it failed there, for
 * a read or write error): its redundancy may lag behind its data.  So its
 * short shards are not rebuilt from it but read as they are, at the size
 * the shards reached (rfile_open() sets both up before the file is
 * shared), and the resync of the mount is tried again here, once the
 * file is in the table, under its lock.  Until a resync succeeds the file
 * stays in the dirty log, whatever closes it.  If the record changed
 * since it was read (another open's close), the finding is stale and the
 * next open tries.  A read-only mount only reads.
 */
static void resync_left(struct rfile *rf, const char *relpath)
{
	struct array *a = rf->a;
	struct file_meta now;
	int nvalid;
	if (!array_writable(a))
		return;
	pthread_rwlock_wrlock(&rf->rw);
	nvalid = 0;
	if (rfile_best_meta(a, rf->fd, &now, &nvalid) == 0 && now.version == rf->meta_version) {
		int r = stripe_mark_dirty(rf);
		rf->recovering = true;
		if (r == 0)
			r = stripe_resync(rf);
		rf->recovering = false;
		if (r == 0)
			r = stripe_write_meta(rf, 0);
		if (r == 0) {
			array_left_dirty_done(a, rf->id);
			log_warn("file '%s': resynced now (the mount's resync of it failed: it was left in the dirty log)",
				 relpath);
		} else {
			log_err("file '%s': the mount could not resync it, nor can this open: %s; its redundancy may not "
				"match its data until a resync succeeds (the next open or mount tries again)",
				relpath, strerror(-r));
		}
	} else if (nvalid) {
		/* stale: the record as it is now */
		__atomic_store_n(&rf->size, now.size, __ATOMIC_RELEASE);
		rf->meta_version = now.version;
		rf->meta_flags = now.flags;
	}
	pthread_rwlock_unlock(&rf->rw);
}

/* rfile_open(), step 1: the primary's shard of relpath (*p the primary
 * it was found on, *epoch the epoch of the look-up, *st its stat): a
 * regular file's descriptor, or -errno.  Follows the primary when the
 * directory leaves the array meanwhile or the shard cannot be opened
 * there (*moved counts the moves). */
static int open_primary(struct array *a, const char *relpath, int *p, uint64_t *epoch, struct stat *st, int *moved)
{
	for (;;) {
		*epoch = rfile_epoch();
		*p = a->primary;
		int fd = open_shard(a, *p, relpath);
		if (fd < 0 && rfile_epoch() != *epoch)
			continue;	/* (the directory just left the array) */
		if (fd < 0) {
			/* (the next primary serves it, while the level allows) */
			if (shard_open_failed(a, *p, relpath, fd) && ++*moved < LAYOUT_MAX_WIDTH && array_writable(a))
				continue;
			return fd;
		}
		if (fstat(fd, st) < 0) {
			int e = -errno;
			close(fd);
			return e;
		}
		if (!S_ISREG(st->st_mode)) {
			close(fd);
			return -EINVAL;
		}
		return fd;
	}
}

/* Step 2: is the file open already?  1: *out shares it (fd closed); 0:
 * not open, *closes noted (the record is read after this); -EAGAIN: the
 * keys changed since the look-up (fd closed), look again. */
static int share_open(uint64_t epoch, ino_t key, int fd, struct rfile **out, uint64_t *closes)
{
	pthread_mutex_lock(&table_lock);
	if (!epoch_holds(epoch)) {
		pthread_mutex_unlock(&table_lock);
		close(fd);
		return -EAGAIN;
	}
	struct rfile *rf = find_locked(key);
	if (rf) {
		rf->refs++;
		pthread_mutex_unlock(&table_lock);
		close(fd);
		*out = rf;
		return 1;
	}
	*closes = closed_next;
	pthread_mutex_unlock(&table_lock);
	return 0;
}

/* Step 3: the other members' shards of relpath into fds (fds[p] is the
 * primary's).  A shard missing on a member in service is logged (and
 * judged: shard_open_failed()); one on a member being rebuilt is left to
 * the rebuild.  0, or -errno when the daemon itself cannot open files
 * (every fd closed then). */
static int open_others(struct array *a, const char *relpath, int p, int *fds)
{
	for (uint32_t j = 0; j < a->width; j++) {
		if (j == (uint32_t)p || !member_writable(a, j))
			continue;
		fds[j] = open_shard(a, j, relpath);
		if (fds[j] < 0 && member_error_is_own(fds[j])) {
			int e = fds[j];
			fds[j] = -1;
			close_fds(a, fds);
			return e;
		}
		if (fds[j] < 0 && member_rebuilding(a, j)) {
			fds[j] = -1;	/* not rebuilt yet: the rebuild opens it */
		} else if (fds[j] < 0) {
			if (!shard_open_failed(a, j, relpath, fds[j]))
				log_err("file '%s': shard missing on member %u '%s': %s",
					relpath, j, a->m[j].path, strerror(-fds[j]));
			fds[j] = -1;
		}
	}
	return 0;
}

/* Step 4: the file's record, the best over its shards (*nvalid valid
 * copies, *look what each shard holds); empty shards without one (a
 * create cut short) adopted; shards of another file dropped from fds.
 * 0, or -EIO when no record can be trusted. */
static int read_record(struct array *a, const char *relpath, int *fds, struct file_meta *fm, int *nvalid,
		       struct meta_look *look)
{
	int ret = best_meta(a, fds, fm, nvalid, look);
	if (ret < 0) {
		/* A crash between creating the shards and writing their
		 * metadata leaves empty shards without it: adopt them. */
		if (!rfile_shards_empty(a, fds)) {
			log_err("file '%s': no valid raidfs metadata on any member; it cannot be read (run 'raidfs check')",
				relpath);
			return -EIO;
		}
		rfile_new_meta(a, random_u64(), fm);
		log_warn("file '%s': empty shards without metadata (interrupted create); metadata recreated",
			 relpath);
	}
	for (uint32_t j = 0; ret == 0 && j < a->width; j++) {
		/* (a shard without a readable record is repaired on close;
		 * nothing to compare with after an adoption) */
		if (fds[j] >= 0 && look->read[j] && look->id[j] != fm->id) {
			/* on a member being rebuilt: a leftover the rebuild replaces */
			if (!member_rebuilding(a, j))
				log_err("file '%s': the shard on member %u '%s' belongs to another file (interrupted rename?); not used (run 'raidfs check')",
					relpath, j, a->m[j].path);
			close(fds[j]);
			fds[j] = -1;
		}
	}
	return 0;
}

int rfile_open(struct array *a, const char *relpath, struct rfile **out)
{
	struct stat st;
	int tries = 0, moved = 0, p;
again:;
	uint64_t epoch, closes;
	int fd = open_primary(a, relpath, &p, &epoch, &st, &moved);
	if (fd < 0)
		return fd;
	int r = share_open(epoch, st.st_ino, fd, out, &closes);
	if (r == -EAGAIN)
		goto again;
	if (r == 1)
		return 0;

	struct rfile *rf = calloc(1, sizeof(*rf));
	if (!rf) {
		close(fd);
		return -ENOMEM;
	}
	int fds[LAYOUT_MAX_WIDTH];
	for (uint32_t j = 0; j < LAYOUT_MAX_WIDTH; j++)
		fds[j] = -1;
	fds[p] = fd;
	struct file_meta fm;
	struct meta_look look;
	int nvalid;
	int ret = open_others(a, relpath, p, fds);
	if (ret == 0) {
		ret = read_record(a, relpath, fds, &fm, &nvalid, &look);
		if (ret < 0)
			close_fds(a, fds);
	}
	if (ret == 0) {
		ret = rfile_private(a, fds, &fm, rf);
		if (ret < 0)
			close_fds(a, fds);
	}
	if (ret < 0) {
		free(rf);
		return ret;
	}
	rf->key = st.st_ino;
	rf->path = strdup(relpath);
	if (nvalid < (int)(a->width - array_absent_count(a)))
		rf->meta_stale = true;	/* repair the bad copies on close */
	rf->meta_agree = ret == 0 && look.agree;
	/* (a file the mount's resync left: its size and short shards as
	 * the resync takes them, before anybody shares it; resync_left()) */
	bool left = array_left_dirty(a, rf->id);
	bool resync = !left && (fm.flags & META_F_EXACT) && find_short_shards(rf);
	if (left && array_writable(a)) {
		rf->size = array_size_reached(a, &rf->lay, rf->fd, rf->size, rf->meta_flags);
		rf->acked = rf->size;
		if (rf->reserved > rf->size)
			rf->reserved = rf->size;
	}
	open_shadow(rf, relpath, false, 0);
	*out = insert_or_share(rf, epoch, false, closes, ++tries < 8);
	if (!*out)
		goto again;
	if (*out == rf && left)
		resync_left(rf, relpath);
	else if (*out == rf && (rf->damaged || resync))
		repair_shards(rf, relpath, resync);
	return 0;
}

/*
 * The primary shard of a new file, crash-safe: made unnamed (O_TMPFILE),
 * given its path in CREATING_XATTR, entered in the dirty log, and only
 * then linked at its name (which fails if the name exists: O_EXCL).  A
 * crash before the name exists leaves nothing visible; after it, the
 * dirty log holds the file and the mount creates the shards the other
 * members did not get yet (array.c, resync).  Filesystems without
 * O_TMPFILE get a plain exclusive create and a tiny window.
 */
static int create_primary(struct array *a, int p, const char *relpath, mode_t mode, uint64_t id)
{
	int dirfd = a->m[p].dirfd;
	char parent[PATH_MAX], name[64];
	snprintf(parent, sizeof(parent), "%s", relpath);
	char *slash = strrchr(parent, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(parent, sizeof(parent), ".");
	snprintf(name, sizeof(name), SB_DIRTY_DIR "/%016" PRIx64, id);
	int fd = openat(dirfd, parent, O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
	bool tmp = fd >= 0;
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL))
		fd = openat(dirfd, relpath, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	if (fsetxattr(fd, CREATING_XATTR, relpath, strlen(relpath), 0) < 0 ||
	    (link_fd(fd, dirfd, name) < 0 &&
	     (errno != ENOENT || mkdirat(dirfd, SB_DIRTY_DIR, 0700) < 0 || link_fd(fd, dirfd, name) < 0))) {
		int e = errno;
		close(fd);
		if (!tmp)
			unlinkat(dirfd, relpath, 0);
		return -e;
	}
	if (tmp && link_fd(fd, dirfd, relpath) < 0) {
		int e = errno;
		unlinkat(dirfd, name, 0);
		close(fd);
		return -e;
	}
	return fd;
}

/*
 * A new file's first record, on its primary shard only: what a stat of its
 * name or a look for its id reads while nothing else is written (the
 * open-file table answers the rest while it is open), until its last
 * close, fsync or truncate gives every shard its record (meta_stale).  A
 * crash before that finds the file in the dirty log, whose resync takes
 * the primary's record, or makes the file's from its id and the array's
 * layout when no shard has one (resync.c).  A primary that refuses it:
 * every shard's written instead, its refusal judged as any other's.
 */
static int record_created(struct rfile *rf, uint32_t p)
{
	struct file_meta fm = stripe_meta_record(rf, rf->meta_version + 1, META_F_EXACT, 0);
	fm.index = p;
	if (member_meta_set(rf->a, p, rf->fd[p], &fm) < 0)
		return stripe_write_meta(rf, 0);
	rf->meta_version = fm.version;
	rf->meta_flags = fm.flags;
	rf->meta_agree = false;
	rf->meta_stale = true;
	return 0;
}

int rfile_create(struct array *a, const char *relpath, mode_t mode,
		 uid_t uid, gid_t gid, struct rfile **out)
{
	int fds[LAYOUT_MAX_WIDTH];
	uint64_t epoch = rfile_epoch();
	int p = a->primary, ret = 0;
	struct stat st;

	for (uint32_t j = 0; j < LAYOUT_MAX_WIDTH; j++)
		fds[j] = -1;
	int r = array_note_write(a);
	if (r < 0)
		return r;
	uint64_t id = random_u64();
	fds[p] = create_primary(a, p, relpath, mode, id);
	if (fds[p] < 0)
		return fds[p];
	for (uint32_t j = 0; j < a->width; j++) {
		if (j == (uint32_t)p || !member_writable(a, j))
			continue;
		/* O_TRUNC: a leftover of an interrupted create or unlink */
		fds[j] = openat(a->m[j].dirfd, relpath, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fds[j] < 0 && member_error_is_own(errno)) {
			ret = -errno;
			goto fail;
		}
		if (fds[j] < 0 && member_rebuilding(a, j)) {
			fds[j] = -1;	/* its directory is not rebuilt yet */
			array_redo(a, relpath);
		} else if (fds[j] < 0) {
			/* a member that cannot hold the new shard would leave the
			 * file short of redundancy for good: it is failed, and the
			 * file is created on the others */
			char why[128];
			snprintf(why, sizeof(why), "cannot create a shard there: %.80s", strerror(errno));
			array_fail_member(a, j, why);
			fds[j] = -1;
			if (!array_writable(a)) {
				ret = -EIO;
				goto fail;
			}
		}
	}
	if (geteuid() == 0) {
		for (uint32_t j = 0; j < a->width; j++)
			if (fds[j] >= 0 && (fchown(fds[j], uid, gid) < 0 ||
					    ((mode & (S_ISUID | S_ISGID)) && fchmod(fds[j], mode) < 0))) {
				/* (the chown dropped the set-id bits given) */
				ret = -errno;
				goto fail;
			}
	}
	struct rfile *rf = calloc(1, sizeof(*rf));
	if (!rf) {
		ret = -ENOMEM;
		goto fail;
	}
	struct file_meta fm;
	rfile_new_meta(a, id, &fm);
	ret = private_init(a, fds, &fm, rf, true);
	if (ret < 0) {
		free(rf);
		goto fail;
	}
	open_shadow(rf, relpath, true, mode);
	if (rf->fd[SHADOW] >= 0 && geteuid() == 0 && fchown(rf->fd[SHADOW], uid, gid) == 0 &&
	    (mode & (S_ISUID | S_ISGID)))
		fchmod(rf->fd[SHADOW], mode);
	/* in the dirty log before the metadata goes out member by member:
	 * a crash in between is repaired by the next mount */
	rf->path = strdup(relpath);
	ret = array_mark_created(a, fm.id, fds, relpath, (uint32_t)p);
	if (ret == 0) {
		rf->marked = true;
		rf->created = true;
		ret = record_created(rf, (uint32_t)p);
	}
	if (ret == 0)
		fremovexattr(fds[p], CREATING_XATTR);	/* every shard exists */
	if (ret < 0) {
		if (rf->fd[SHADOW] >= 0) {
			close(rf->fd[SHADOW]);
			unlinkat(a->m[SHADOW].dirfd, relpath, 0);
		}
		rfile_free(rf);
		goto fail;
	}
	fstat(fds[p], &st);
	rf->key = st.st_ino;
	*out = insert_or_share(rf, epoch, true, 0, false);
	return 0;
fail:
	close_fds(a, fds);
	for (uint32_t j = 0; j < a->width; j++)
		if (member_writable(a, j))
			unlinkat(a->m[j].dirfd, relpath, 0);
	array_clear_dirty(a, id, relpath);
	return ret;
}

void rfile_hold(struct rfile *rf)
{
	pthread_mutex_lock(&table_lock);
	rf->refs++;
	pthread_mutex_unlock(&table_lock);
}

/* With the cache log, a file's dirty-log mark goes only once its writes
 * are durable on the members: the destage does not sync them, the log
 * forgets their records after a sync (cachelog.c), and a mount replays
 * the log only into marked files.  So the last release syncs the
 * members first: with the last reference here, every write of the file
 * has returned, and a sync that starts now covers them all (not so
 * another thread's sync: a write may still have been on its way to the
 * members when it started).  A write through an open meanwhile (rf->wgen
 * moved) keeps the marks for the next release or mount. */
static bool marks_wait_sync(const struct rfile *rf)
{
	return !rf->a->readonly && (rf->marked || rf->cmarked) && rf->a->marks_wait_sync;
}

int rfile_release(struct rfile *rf)
{
	pthread_mutex_lock(&table_lock);
	bool synced = false;	/* the file's writes up to write `wgen` are durable */
	uint64_t wgen = __atomic_load_n(&rf->wgen, __ATOMIC_ACQUIRE);
	if (rf->refs == 1 && marks_wait_sync(rf)) {
		/* (not under the table lock: a sync can take long) */
		pthread_mutex_unlock(&table_lock);
		synced = array_sync_members(rf->a) == 0;
		pthread_mutex_lock(&table_lock);
	}
	if (--rf->refs > 0) {
		pthread_mutex_unlock(&table_lock);
		return 0;
	}
	/* unlink from the table before the (slow) cleanup; a new open builds
	 * a fresh rfile from the metadata we are about to write, so write it
	 * while still holding the table lock for this key's consistency. */
	int ret = 0;
	bool clear_after = false;
	/* the kinds of dirty-log names to remove: a file created in this
	 * run has those its flags say, any other may have a name an earlier
	 * open or run left */
	bool plain = !rf->created || rf->marked, cached = !rf->created || rf->cmarked;
	/* (a member failed meanwhile is failed once the table lock is let
	 * go; its file keeps its marks until then, so the failure notes it
	 * as missed) */
	array_defer_failures(rf->a, true);
	/* (a read-only mount writes nothing, not even a repaired record) */
	if (!rf->a->readonly && (rf->meta_stale || rf->marked || rf->cmarked)) {
		ret = stripe_write_meta(rf, 0);
		/* Written to during the sync, through references all gone now
		 * (their releases, not the last, left the marks to this one):
		 * nothing can write to it any more, so one more sync covers
		 * those writes - under the table lock (an open meanwhile would
		 * mark it again, and a clear after that would undo its mark;
		 * rare).  Else a file deleted since kept its dirty-log entry
		 * until the next mount. */
		if (ret == 0 && synced && marks_wait_sync(rf) && __atomic_load_n(&rf->wgen, __ATOMIC_ACQUIRE) != wgen) {
			wgen = __atomic_load_n(&rf->wgen, __ATOMIC_ACQUIRE);
			synced = array_sync_members(rf->a) == 0;
		}
		/* (the marks stay when the sync failed: the next mount
		 * resyncs the file and replays its log) */
		if (ret == 0 && (rf->marked || rf->cmarked) &&
		    (!marks_wait_sync(rf) || (synced && __atomic_load_n(&rf->wgen, __ATOMIC_ACQUIRE) == wgen))) {
			/* (with a failure waiting: once it noted the file as
			 * missed by its member, below) */
			if (!array_failures_deferred())
				array_clear_marks(rf->a, rf->id, rf->path, plain, cached);
			else
				clear_after = true;
			rf->marked = rf->cmarked = false;
		}
	}
	/* (before it leaves the table: an open of the file meanwhile would
	 * make a new rfile that writes past the end) */
	stripe_give_back(rf);
	struct rfile **pp = &table[bucket(rf->key)];
	while (*pp && *pp != rf)
		pp = &(*pp)->next;
	if (*pp)
		*pp = rf->next;
	unsigned h = bucket(rf->key) % CLOSE_SLOTS;
	close_slot[h].key = rf->key;
	close_slot[h].seq = ++closed_next;
	close_slot[h].ms = util_now_ms();
	pthread_mutex_unlock(&table_lock);
	array_defer_failures(rf->a, false);
	if (clear_after) {
		/* (unless the file was opened again meanwhile: its release
		 * clears them) */
		pthread_mutex_lock(&table_lock);
		if (!find_locked(rf->key))
			array_clear_marks(rf->a, rf->id, rf->path, plain, cached);
		pthread_mutex_unlock(&table_lock);
	}
	close_rf_fds(rf);
	rfile_free(rf);
	return ret;
}

/* What the array tells the open-file table (array.h, struct array_hooks;
 * registered by mount.c). */
const struct array_hooks rfile_hooks = {
	.slot_change_begin = rfile_change_begin,
	.slot_change_end = rfile_change_end,
	.forget_member = rfile_forget_member,
	.shadow_commit = rfile_shadow_commit,
	.open_path_of = rfile_path_of,
};
