/*
 * inode.h - the node table of the FUSE layer (layer 7, under fuse.c): what
 * each node id the kernel holds stands for.
 *
 * A node is one file, directory or other object of the array as the kernel
 * sees it.  Nodes are keyed twice: by node id (what the kernel sends), and
 * by the inode number of the object on the primary member in the current
 * key epoch (rfile_epoch()), so every hard link of a file is ONE node and
 * one kernel inode (its size and times cached once).  A node keeps:
 *
 *   - its lookup count: every entry replied (lookup, create, mkdir, mknod,
 *     symlink, link) adds one, forget takes them away; a node goes when
 *     the count is 0 and nobody has it open (the root never goes);
 *   - the names it is known by, each a parent node id and a name; the
 *     first one builds its path (inode_path()), the others keep it
 *     reachable when that name is unlinked or renamed away.  A name is
 *     unique in the table: a lookup that finds another object at a name
 *     moves the name, and the node it leaves keeps it as a past name,
 *     tried last (after a new primary, a directory's new node takes its
 *     name, and what the kernel still reaches through the old node -
 *     a working directory, an open directory - keeps its path);
 *   - its open count and the open file (struct rfile) while open, so that
 *     operations on an open file never need a path (inode_rfile());
 *   - its orphan id: a file unlinked (or renamed over) while open is kept
 *     under `.raidfs/orphans/<id>` on every member until its last release
 *     (fuse.c); its only name is then INODE_ORPHANS + the id in hex.
 *
 * Node ids are never reused during a mount (generation 0 with a 64-bit
 * counter).  When the primary changes, the inode numbers change with it:
 * nodes of the old epoch stay reachable by id and by name, and a lookup
 * in the new epoch may give the same object a new node.
 *
 * Locking: one reader/writer lock over the whole table (paths are built
 * under it shared; every change takes it exclusively).  It nests under
 * a->ns_lock and fuse.c's orphan lock, and over the open-file table's
 * lock (inode_rfile() holds the file: locks.h).
 */
#ifndef RAIDFS_INODE_H
#define RAIDFS_INODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rfile;
struct stat;

#define INODE_ROOT 1		/* FUSE_ROOT_ID */
#define INODE_ORPHANS 0		/* pseudo parent of orphan names */
#define INODE_ORPHAN_DIR ".raidfs/orphans"

/* The empty table (the root only). */
void inode_init(void);

/*
 * A lookup found (parent, name) to be the object with inode number ino on
 * the primary in key epoch `epoch`: its node (an existing one of that ino
 * and epoch, else a new one) gets one more lookup and the name.  The node
 * id, or 0 when out of memory.
 */
uint64_t inode_found(uint64_t parent, const char *name, uint64_t ino, uint64_t epoch);
/* The kernel forgets n lookups of node id. */
void inode_forget(uint64_t id, uint64_t n);

/*
 * The path of node id (a leading '/', relative to the member roots: "/"
 * for the root, "/.raidfs/orphans/<hex>" for an orphan) into buf; with
 * name, the path of that name under the node.  0, -ENAMETOOLONG, or
 * -ESTALE when the node or one of its parents is unknown (forgotten,
 * or known by no name any more).
 */
int inode_path(uint64_t id, const char *name, char *buf, size_t len);

/* The name went (unlink, rmdir): a node left without names is no longer
 * found by its inode number (a new object may get it). */
void inode_unlinked(uint64_t parent, const char *name);
/* rename(parent, name -> newparent, newname) with renameat2() flags
 * (RENAME_EXCHANGE swaps the two names' nodes). */
void inode_renamed(uint64_t parent, const char *name, uint64_t newparent, const char *newname, unsigned flags);

/*
 * The file at (parent, name) is about to lose its last name: when its
 * node is open, the name becomes its orphan name (INODE_ORPHANS, `id` in
 * hex), the node remembers id, and its node id is returned (the caller
 * moves the shards, or undoes with inode_unorphan()); else 0.
 */
uint64_t inode_orphan(uint64_t parent, const char *name, uint64_t id);
void inode_unorphan(uint64_t node, uint64_t parent, const char *name);

/* An open of node id gave rf (one reference, which the handle keeps). */
void inode_opened(uint64_t id, struct rfile *rf);
/* An opendir of node id: fd (a descriptor of the directory on the
 * primary, taken over: closed at the last close) answers its attributes
 * once no name reaches it (another directory renamed over it). */
void inode_opened_dir(uint64_t id, int fd);
/* fstat() of that descriptor: 0, or -ESTALE when there is none. */
int inode_dir_stat(uint64_t id, struct stat *st);
/* A new descriptor of that directory (-ESTALE: none, or -errno). */
int inode_dir_dup(uint64_t id);
/* A handle of node id was released: its orphan id when that was the last
 * handle of an orphan (the caller removes the shards), else 0. */
uint64_t inode_closed(uint64_t id);
/* The open file of node id with one more reference (rfile_release() it),
 * or NULL when it is not open. */
struct rfile *inode_rfile(uint64_t id);

/* The node of inode number ino in key epoch `epoch` (0: none). */
uint64_t inode_by_ino(uint64_t ino, uint64_t epoch);
/* fn(parent, name, arg) for every name in the table (outside the table's
 * lock: a copy is taken first). */
void inode_each_name(void (*fn)(uint64_t parent, const char *name, void *arg), void *arg);

/* Nodes in the table (tests, status). */
uint64_t inode_count(void);

#endif
