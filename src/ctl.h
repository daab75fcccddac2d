/*
 * ctl.h - the control plane (layer 7): a Unix socket per mount, served by
 * its own thread, so that `raidfs status`, `fail`, `replace`, cache and
 * battery commands work even while file I/O is stuck (see ctl.c).
 */
#ifndef RAIDFS_CTL_H
#define RAIDFS_CTL_H

#include <stdbool.h>
#include <stddef.h>

struct array;

/* The socket is found from the mount point without entering the mount
 * (the parent directory is canonicalised, not the mount point itself), so
 * the CLI works while file I/O is stuck. */
void ctl_canonical(const char *mountpoint, char *buf, size_t len);
int ctl_socket_path(const char *mountpoint, char *buf, size_t len);
/* Bind the socket before the daemon detaches (so `raidfs status` works as
 * soon as `raidfs mount` returns), start serving after. */
int ctl_listen(struct array *a);
int ctl_start(struct array *a);
void ctl_stop(void);
/* Client side: send a request, print the reply; returns the exit status
 * the daemon put in the reply, or 2 when no daemon answers. */
int ctl_request(const char *mountpoint, const char *req, bool quiet, char *reply, size_t replylen);

#endif
