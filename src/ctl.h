/*
 * ctl.h - the control plane (layer 7): a Unix socket per mount, served by
 * its own thread, so that `raidfs status`, `fail`, `replace`, cache and
 * battery commands work even while file I/O is stuck (see ctl.c).
 */
#ifndef RAIDFS_CTL_H
#define RAIDFS_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Client side, for every array: the mount points of the raidfs mounts
 * (fstype fuse.raidfs in /proc/self/mountinfo) into a malloc'd list, and
 * their sources (raidfs:NAME) into another when srcs is not NULL;
 * returns how many, or -errno.  ctl_mounts_free() lets go of a list. */
int ctl_mounts(char ***mnts, char ***srcs);
void ctl_mounts_free(char **list, int n);
/* The mount point of the raidfs mount that holds `arg` (the mount point
 * itself, checked without entering the mount; or any path inside one,
 * "." included) into buf; `arg` itself when none holds it. */
const char *ctl_resolve(const char *arg, char *buf, size_t len);
/* `raidfs status` with no mount point (one line per array, as
 * /proc/mdstat) or `raidfs list` (one tab-separated line per array);
 * attention: only the arrays that need it ("all arrays are healthy"
 * otherwise).  Returns the worst exit status of the arrays. */
int ctl_status_all(bool list, bool attention);
/* `raidfs status --json` with no mount point: a JSON array of every
 * array's document (docs/status-json.md), mountinfo order. */
int ctl_status_all_json(void);
/* --wait of replace (member: the one replaced) or scrub: poll the status
 * until it ended; prints how.  replace: 0 the member is in service, 1 it
 * is not; scrub: 0 finished with nothing left to repair, 1 finished with
 * problems left, 3 stopped before the end; 2 the daemon went away. */
int ctl_wait(const char *mountpoint, bool scrub, int member);

#endif
