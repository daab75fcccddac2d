/*
 * mount.h - the mount driver (layer 8): assemble, repair (cache replay,
 * dirty-file resync), mount, start the services, serve until unmounted,
 * stop everything in order.
 */
#ifndef RAIDFS_MOUNT_H
#define RAIDFS_MOUNT_H

#include <stdbool.h>

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
/* The same with the member directories as a list (n of them). */
int mount_paths(char **paths, int n, const char *mountpoint, struct mount_opts *o);

#endif
