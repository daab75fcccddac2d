/*
 * fsops.h - the FUSE operation table (fuse.c) and the mount driver
 * (mount.c).
 */
#ifndef RAIDFS_FSOPS_H
#define RAIDFS_FSOPS_H

#include <stdbool.h>

#include "array.h"

struct fuse_operations;
const struct fuse_operations *fsops_get(struct array *a);
/* called from the FUSE init callback (the daemon is up) */
void fsops_started(void);

struct mount_opts {
	bool foreground;
	bool allow_degraded;	/* !nodegraded */
	bool force;		/* accept a dirty degraded array */
	bool readonly;
	const char *log;	/* -o log=FILE */
	char fuse_opts[4096];	/* options passed through to FUSE */
};

/* Assemble, repair, mount and serve until unmounted.  Returns the exit
 * status for main(). */
int mount_main(char *members, const char *mountpoint, struct mount_opts *o);

/* Control socket (ctl.c).  The socket is found from the mount point
 * without entering the mount (the parent directory is canonicalised, not
 * the mount point itself), so the CLI works while file I/O is stuck. */
void ctl_canonical(const char *mountpoint, char *buf, size_t len);
int ctl_socket_path(const char *mountpoint, char *buf, size_t len);
/* Bind the socket before the daemon detaches (so `raidfs status` works as
 * soon as `raidfs mount` returns), start serving after. */
int ctl_listen(struct array *a);
int ctl_start(void);
void ctl_stop(void);
/* Client side: send a request, print the reply; returns the exit status
 * the daemon put in the reply, or 2 when no daemon answers. */
int ctl_request(const char *mountpoint, const char *req, bool quiet, char *reply, size_t replylen);

#endif
