/*
 * fsops.h - the FUSE operations (fuse.c) (layer 7): every request of the kernel is
 * served here (libfuse's low-level API), from the array's namespace (the
 * primary member) through the node table (inode.h) and the open-file
 * table (file.h), through the cache (cache.h).
 */
#ifndef RAIDFS_FSOPS_H
#define RAIDFS_FSOPS_H

#include <stdbool.h>

#include "array.h"

struct fuse_lowlevel_ops;
struct fuse_session;

/* The operation table for fuse_session_new(), serving array a (the node
 * table starts empty: the root only). */
const struct fuse_lowlevel_ops *fsops_get(struct array *a);

/* How long the kernel may keep attributes and names it was given, in
 * seconds (-o attr_timeout=, entry_timeout=; 1 each by default). */
extern double fsops_attr_timeout, fsops_entry_timeout;
/* -o writeback_cache: the kernel's page cache takes buffered writes and
 * sends them merged (off by default: what it holds is lost with the
 * daemon, which the cache's battery would have kept). */
extern bool fsops_writeback_cache;

/* Before the mount serves: the files a stopped daemon kept as orphans
 * (unlinked while open, .raidfs/orphans/) removed from every member. */
void fsops_sweep_orphans(struct array *a);

/* The kernel told of what changes under what it caches without a request
 * of its (a new primary, a mirror's copies rewritten): started with the
 * session se, stopped after its loop. */
void fsops_start(struct fuse_session *se);
void fsops_stop(void);
/* The hooks that tell it (array.h), registered by mount.c. */
extern const struct array_hooks fsops_hooks;

#endif
