/*
 * inode.c - the node table of the FUSE layer (inode.h).
 *
 * Three chained hash tables over the same nodes: by node id, by (inode
 * number, epoch) for the nodes still known by a name, and of the names
 * (parent id, name) -> node.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "inode.h"

#define BUCKETS (1u << 16)
#define PATH_DEPTH_MAX 4096	/* (a path of PATH_MAX has at most 2048) */
#define PAST_MAX 2

struct name {
	uint64_t parent;
	char *name;
	struct node *node;
	struct name *hnext;	/* hash chain */
	struct name *nnext;	/* the node's other names */
};

struct node {
	uint64_t id;
	uint64_t ino, epoch;
	bool indexed;		/* in the (ino, epoch) table */
	uint64_t nlookup;
	int nopen;
	struct rfile *rf;	/* while nopen > 0 */
	int dirfd;		/* an open directory's (or -1) */
	uint64_t orphan;	/* id of the file kept under .raidfs/orphans */
	struct name *names;
	struct name *past;	/* names a lookup gave to another node (a new
				 * primary's): not in the hash, tried last by
				 * build() so that what is still below this node
				 * stays reachable; at most PAST_MAX */
	struct node *idnext, *inonext;
};

static struct node *by_id[BUCKETS], *by_ino[BUCKETS];
static struct name *by_name[BUCKETS];
static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static uint64_t next_id = INODE_ROOT + 1;
static uint64_t nnodes;
static struct node root = { .id = INODE_ROOT, .nlookup = 1, .dirfd = -1 };

static uint32_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (uint32_t)x & (BUCKETS - 1);
}

static uint32_t name_hash(uint64_t parent, const char *name)
{
	uint64_t h = 1469598103934665603ULL ^ parent;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return mix(h);
}

static struct node *find_id(uint64_t id)
{
	if (id == INODE_ROOT)
		return &root;
	for (struct node *n = by_id[mix(id)]; n; n = n->idnext)
		if (n->id == id)
			return n;
	return NULL;
}

static struct node *find_ino(uint64_t ino, uint64_t epoch)
{
	struct node *n = by_ino[mix(ino ^ epoch << 48)];
	while (n && (n->ino != ino || n->epoch != epoch))
		n = n->inonext;
	return n;
}

static struct name **find_name(uint64_t parent, const char *name)
{
	struct name **pp = &by_name[name_hash(parent, name)];
	for (; *pp; pp = &(*pp)->hnext)
		if ((*pp)->parent == parent && !strcmp((*pp)->name, name))
			return pp;
	return pp;
}

static void unindex(struct node *n)
{
	if (!n->indexed)
		return;
	for (struct node **pp = &by_ino[mix(n->ino ^ n->epoch << 48)]; *pp; pp = &(*pp)->inonext)
		if (*pp == n) {
			*pp = n->inonext;
			break;
		}
	n->indexed = false;
}

/* Drop the name *pp points at (from the hash and from its node). */
static void drop_name(struct name **pp)
{
	struct name *nm = *pp;
	*pp = nm->hnext;
	for (struct name **q = &nm->node->names; *q; q = &(*q)->nnext)
		if (*q == nm) {
			*q = nm->nnext;
			break;
		}
	if (!nm->node->names)
		unindex(nm->node);
	free(nm->name);
	free(nm);
}

/* The name *pp points at went to another node: kept in its old node's
 * past names (the oldest beyond PAST_MAX freed). */
static void keep_past(struct name **pp)
{
	struct name *nm = *pp;
	struct node *n = nm->node;
	*pp = nm->hnext;
	for (struct name **q = &n->names; *q; q = &(*q)->nnext)
		if (*q == nm) {
			*q = nm->nnext;
			break;
		}
	if (!n->names)
		unindex(n);
	nm->hnext = NULL;
	nm->nnext = n->past;
	n->past = nm;
	int k = 0;
	for (struct name **q = &n->past; *q; q = &(*q)->nnext)
		if (++k > PAST_MAX) {
			struct name *old = *q;
			*q = old->nnext;
			free(old->name);
			free(old);
			break;
		}
}

static int add_name(struct node *n, uint64_t parent, const char *name)
{
	struct name **pp = find_name(parent, name);
	if (*pp && (*pp)->node == n)
		return 0;
	if (*pp)
		keep_past(pp);	/* (another object has the name now) */
	struct name *nm = malloc(sizeof(*nm));
	if (!nm || !(nm->name = strdup(name))) {
		free(nm);
		return -ENOMEM;
	}
	nm->parent = parent;
	nm->node = n;
	nm->hnext = NULL;
	*find_name(parent, name) = nm;
	/* (first: the name looked up last is the likeliest to lead there) */
	nm->nnext = n->names;
	n->names = nm;
	return 0;
}

static void free_node(struct node *n)
{
	while (n->names) {
		struct name *nm = n->names;
		drop_name(find_name(nm->parent, nm->name));
	}
	while (n->past) {
		struct name *nm = n->past;
		n->past = nm->nnext;
		free(nm->name);
		free(nm);
	}
	unindex(n);
	for (struct node **pp = &by_id[mix(n->id)]; *pp; pp = &(*pp)->idnext)
		if (*pp == n) {
			*pp = n->idnext;
			break;
		}
	nnodes--;
	free(n);
}

void inode_init(void)
{
	pthread_rwlock_wrlock(&lock);
	for (uint32_t b = 0; b < BUCKETS; b++)
		while (by_id[b])
			free_node(by_id[b]);
	pthread_rwlock_unlock(&lock);
}

static struct node *new_node(uint64_t ino, uint64_t epoch)
{
	struct node *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->id = next_id++;
	n->dirfd = -1;
	n->ino = ino;
	n->epoch = epoch;
	n->indexed = true;
	n->idnext = by_id[mix(n->id)];
	by_id[mix(n->id)] = n;
	n->inonext = by_ino[mix(ino ^ epoch << 48)];
	by_ino[mix(ino ^ epoch << 48)] = n;
	nnodes++;
	return n;
}

uint64_t inode_found(uint64_t parent, const char *name, uint64_t ino, uint64_t epoch)
{
	pthread_rwlock_wrlock(&lock);
	struct node *n = find_ino(ino, epoch);
	bool fresh = !n;
	if (fresh)
		n = new_node(ino, epoch);
	uint64_t id = 0;
	if (n && add_name(n, parent, name) == 0) {
		n->nlookup++;
		id = n->id;
	} else if (n && fresh) {
		free_node(n);
	}
	pthread_rwlock_unlock(&lock);
	return id;
}

void inode_forget(uint64_t id, uint64_t count)
{
	if (id == INODE_ROOT)
		return;
	pthread_rwlock_wrlock(&lock);
	struct node *n = find_id(id);
	if (n) {
		n->nlookup = n->nlookup > count ? n->nlookup - count : 0;
		if (!n->nlookup && !n->nopen)
			free_node(n);
	}
	pthread_rwlock_unlock(&lock);
}

/* Prepend "/s" to the path being built backwards at *end (down to buf). */
static int prepend(char *buf, char **end, const char *s, size_t l)
{
	if ((size_t)(*end - buf) < l + 1)
		return -ENAMETOOLONG;
	*end -= l;
	memcpy(*end, s, l);
	*--*end = '/';
	return 0;
}

/* The path of node id prepended at *end: through the first of its names
 * whose parents lead to the root (a name whose parent lost its own names
 * - a new primary's lookups made new nodes for them - is passed over),
 * else through a past name. */
static int build(uint64_t id, char *buf, char **end, int depth)
{
	if (id == INODE_ROOT)
		return 0;
	struct node *n = find_id(id);
	/* (a bound on the walk: a loop in the names would be a bug) */
	if (!n || depth > PATH_DEPTH_MAX)
		return -ESTALE;
	const struct name *lists[2] = { n->names, n->past };
	for (int l = 0; l < 2; l++)
		for (const struct name *nm = lists[l]; nm; nm = nm->nnext) {
			char *mark = *end;
			int r = prepend(buf, end, nm->name, strlen(nm->name));
			if (r == 0 && nm->parent == INODE_ORPHANS)
				return prepend(buf, end, INODE_ORPHAN_DIR, strlen(INODE_ORPHAN_DIR));
			if (r == 0)
				r = build(nm->parent, buf, end, depth + 1);
			if (r != -ESTALE)
				return r;
			*end = mark;
		}
	return -ESTALE;
}

int inode_path(uint64_t id, const char *name, char *buf, size_t len)
{
	char *end = buf + len - 1;
	*end = '\0';
	int r = name ? prepend(buf, &end, name, strlen(name)) : 0;
	pthread_rwlock_rdlock(&lock);
	if (r == 0)
		r = build(id, buf, &end, 0);
	pthread_rwlock_unlock(&lock);
	if (r < 0)
		return r;
	if (!*end)
		*--end = '/';	/* the root */
	memmove(buf, end, strlen(end) + 1);
	return 0;
}

void inode_unlinked(uint64_t parent, const char *name)
{
	pthread_rwlock_wrlock(&lock);
	struct name **pp = find_name(parent, name);
	if (*pp)
		drop_name(pp);
	pthread_rwlock_unlock(&lock);
}

/* Move the name *pp to (np, nn) (nothing there: the caller dropped it). */
static void move_name(struct name **pp, uint64_t np, const char *nn)
{
	struct name *nm = *pp;
	char *copy = strdup(nn);
	if (!copy) {
		drop_name(pp);	/* (found again by the next lookup) */
		return;
	}
	*pp = nm->hnext;
	free(nm->name);
	nm->name = copy;
	nm->parent = np;
	nm->hnext = NULL;
	*find_name(np, nn) = nm;
}

void inode_renamed(uint64_t parent, const char *name, uint64_t newparent, const char *newname, unsigned flags)
{
	pthread_rwlock_wrlock(&lock);
	struct name **from = find_name(parent, name), **to = find_name(newparent, newname);
	if (flags & 2 /* RENAME_EXCHANGE */) {
		struct node *a = *from ? (*from)->node : NULL, *b = *to ? (*to)->node : NULL;
		if (*from)
			drop_name(find_name(parent, name));
		if (*find_name(newparent, newname))
			drop_name(find_name(newparent, newname));
		if (a)
			add_name(a, newparent, newname);
		if (b)
			add_name(b, parent, name);
	} else if (*from) {
		if (*to && to != from)
			drop_name(to);
		from = find_name(parent, name);
		move_name(from, newparent, newname);
	} else if (*to) {
		drop_name(to);
	}
	pthread_rwlock_unlock(&lock);
}

uint64_t inode_orphan(uint64_t parent, const char *name, uint64_t fid)
{
	char hex[17];
	uint64_t id = 0;
	snprintf(hex, sizeof(hex), "%016" PRIx64, fid);
	pthread_rwlock_wrlock(&lock);
	struct name **pp = find_name(parent, name);
	struct node *n = *pp ? (*pp)->node : NULL;
	if (n && n->nopen > 0) {
		n->orphan = fid;
		move_name(pp, INODE_ORPHANS, hex);
		/* (the orphan name first: it builds the path now) */
		struct name **q = &n->names, *nm = *find_name(INODE_ORPHANS, hex);
		while (*q != nm)
			q = &(*q)->nnext;
		*q = nm->nnext;
		nm->nnext = n->names;
		n->names = nm;
		id = n->id;
	}
	pthread_rwlock_unlock(&lock);
	return id;
}

void inode_unorphan(uint64_t id, uint64_t parent, const char *name)
{
	char hex[17];
	pthread_rwlock_wrlock(&lock);
	struct node *n = find_id(id);
	if (n && n->orphan) {
		snprintf(hex, sizeof(hex), "%016" PRIx64, n->orphan);
		struct name **pp = find_name(INODE_ORPHANS, hex);
		if (*pp) {
			if (*find_name(parent, name))
				drop_name(find_name(parent, name));
			move_name(find_name(INODE_ORPHANS, hex), parent, name);
		}
		n->orphan = 0;
	}
	pthread_rwlock_unlock(&lock);
}

void inode_opened(uint64_t id, struct rfile *rf)
{
	pthread_rwlock_wrlock(&lock);
	struct node *n = find_id(id);
	if (n) {
		n->nopen++;
		n->rf = rf;
	}
	pthread_rwlock_unlock(&lock);
}

uint64_t inode_closed(uint64_t id)
{
	uint64_t orphan = 0;
	pthread_rwlock_wrlock(&lock);
	struct node *n = find_id(id);
	if (n && n->nopen > 0 && --n->nopen == 0) {
		n->rf = NULL;
		if (n->dirfd >= 0)
			close(n->dirfd);
		n->dirfd = -1;
		orphan = n->orphan;
		if (orphan) {
			char hex[17];
			snprintf(hex, sizeof(hex), "%016" PRIx64, orphan);
			struct name **pp = find_name(INODE_ORPHANS, hex);
			if (*pp)
				drop_name(pp);
			n->orphan = 0;
		}
		if (!n->nlookup)
			free_node(n);
	}
	pthread_rwlock_unlock(&lock);
	return orphan;
}

void inode_opened_dir(uint64_t id, int fd)
{
	pthread_rwlock_wrlock(&lock);
	struct node *n = find_id(id);
	if (n) {
		n->nopen++;
		if (n->dirfd < 0) {
			n->dirfd = fd;
			fd = -1;
		}
	}
	pthread_rwlock_unlock(&lock);
	if (fd >= 0)
		close(fd);
}

int inode_dir_stat(uint64_t id, struct stat *st)
{
	pthread_rwlock_rdlock(&lock);
	struct node *n = find_id(id);
	int r = !n || n->dirfd < 0 ? -ESTALE : fstat(n->dirfd, st) < 0 ? -errno : 0;
	pthread_rwlock_unlock(&lock);
	return r;
}

int inode_dir_dup(uint64_t id)
{
	pthread_rwlock_rdlock(&lock);
	struct node *n = find_id(id);
	int fd = !n || n->dirfd < 0 ? -ESTALE : fcntl(n->dirfd, F_DUPFD_CLOEXEC, 0);
	if (fd == -1)
		fd = -errno;
	pthread_rwlock_unlock(&lock);
	return fd;
}

struct rfile *inode_rfile(uint64_t id)
{
	pthread_rwlock_rdlock(&lock);
	struct node *n = find_id(id);
	struct rfile *rf = n ? n->rf : NULL;
	if (rf)
		rfile_hold(rf);
	pthread_rwlock_unlock(&lock);
	return rf;
}

uint64_t inode_by_ino(uint64_t ino, uint64_t epoch)
{
	pthread_rwlock_rdlock(&lock);
	struct node *n = find_ino(ino, epoch);
	uint64_t id = n ? n->id : 0;
	pthread_rwlock_unlock(&lock);
	return id;
}

void inode_each_name(void (*fn)(uint64_t parent, const char *name, void *arg), void *arg)
{
	struct copy {
		uint64_t parent;
		char *name;
	} *c = NULL;
	size_t n = 0, cap = 0;
	pthread_rwlock_rdlock(&lock);
	for (uint32_t b = 0; b < BUCKETS; b++)
		for (struct name *nm = by_name[b]; nm; nm = nm->hnext) {
			if (n == cap) {
				struct copy *g = realloc(c, (cap = cap ? 2 * cap : 256) * sizeof(*c));
				if (!g)
					goto out;
				c = g;
			}
			if (!(c[n].name = strdup(nm->name)))
				goto out;
			c[n++].parent = nm->parent;
		}
out:
	pthread_rwlock_unlock(&lock);
	for (size_t i = 0; i < n; i++) {
		if (c[i].parent != INODE_ORPHANS)
			fn(c[i].parent, c[i].name, arg);
		free(c[i].name);
	}
	free(c);
}

uint64_t inode_count(void)
{
	pthread_rwlock_rdlock(&lock);
	uint64_t c = nnodes;
	pthread_rwlock_unlock(&lock);
	return c;
}
