/*
 * fsops.h - the FUSE operations (fuse.c) (layer 7): every request of the kernel is
 * served here, from the array's namespace (the primary member) and the
 * open-file table (file.h), through the cache (cache.h).
 */
#ifndef RAIDFS_FSOPS_H
#define RAIDFS_FSOPS_H

struct array;
struct fuse_operations;

/* The operation table for fuse_new(); a is handed back by the init
 * callback as the private data of every request. */
const struct fuse_operations *fsops_get(struct array *a);

#endif
