/*
 * mount.c - assemble an array, repair it after an unclean stop, mount it
 * and serve FUSE requests until it is unmounted.
 *
 * Order matters: the dirty-file log is resynced before the mount appears,
 * so nothing reads a stripe whose parity may be behind its data.  Errors
 * up to the moment the daemon detaches are printed on the terminal of the
 * `raidfs mount` command; later ones go to the log.
 */
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "monitor.h"
#include "resync.h"
#include "file.h"
#include "ctl.h"
#include "fsops.h"
#include "mount.h"
#include "parity.h"
#include "rebuild.h"
#include "scrub.h"
#include "util.h"

static struct array the_array;

/* Say why the mount cannot go on, on stderr and in the log. */
static int refuse(const struct mount_opts *o, const char *err)
{
	fprintf(stderr, "raidfs: cannot mount: %s\n", err);
	if (o->log)
		log_err("cannot mount: %s", err);
	return 1;
}

/* The members' paths from DIR[:DIR...] (members modified): their count,
 * or 0 with the reason printed. */
static int split_members(char *members, char **paths)
{
	int n = 0;
	for (char *save = NULL, *p = strtok_r(members, ":", &save); p;
	     p = strtok_r(NULL, ":", &save)) {
		if (n == LAYOUT_MAX_WIDTH + 1) {
			fprintf(stderr, "raidfs: too many members: at most %d are supported\n", LAYOUT_MAX_WIDTH);
			return 0;
		}
		paths[n++] = p;
	}
	if (n == 0)
		fprintf(stderr, "raidfs: no member directories given (DIR[:DIR...])\n");
	return n;
}

/*
 * Bad input that harms, refused before anything is touched (issue 29):
 * a mount point that is a member or lies inside one (the array would
 * contain itself: every request on it waits for the daemon that serves
 * it, and the unmount is refused as busy), a member that lies inside the
 * mount point (hidden by the mount, then reached through it), and a
 * member inside another member.  Paths are compared canonical
 * (realpath()); a member that does not exist is left to assembly (a
 * missing member).  0, or 1 with the reason printed.
 */
static int refuse_nesting(char **paths, int n, const char *mountpoint, const struct mount_opts *o)
{
	char mnt[PATH_MAX], err[3 * PATH_MAX];
	/* (the log is not open yet: stderr only) */
	const struct mount_opts quiet = { .log = NULL };
	o = &quiet;
	char *real[LAYOUT_MAX_WIDTH + 1] = { NULL };
	int r = 0;
	if (!realpath(mountpoint, mnt))
		return 0;	/* (fuse_mount() says what is wrong with it) */
	for (int i = 0; i < n; i++)
		real[i] = realpath(paths[i], NULL);
	for (int i = 0; i < n && !r; i++) {
		if (!real[i])
			continue;
		if (util_path_within(mnt, real[i])) {
			snprintf(err, sizeof(err), "the mount point '%s' is %s member '%s': the array would contain itself; mount it outside every member directory",
				 mountpoint, strcmp(mnt, real[i]) ? "inside" : "the same directory as", paths[i]);
			r = refuse(o, err);
		} else if (util_path_within(real[i], mnt)) {
			snprintf(err, sizeof(err), "member '%s' is inside the mount point '%s': the mount would hide it and reach it through itself; give a mount point outside every member",
				 paths[i], mountpoint);
			r = refuse(o, err);
		}
		for (int k = 0; k < n && !r; k++)
			if (k != i && real[k] && strcmp(real[i], real[k]) && util_path_within(real[i], real[k])) {
				snprintf(err, sizeof(err), "member '%s' is inside member '%s': each member must be a directory of its own, outside the others",
					 paths[i], paths[k]);
				r = refuse(o, err);
			}
	}
	for (int i = 0; i < n; i++)
		free(real[i]);
	return r;
}

/* The process set up to serve the array: log, descriptor limit, ISA-L
 * probe.  0, or 1 with the reason printed. */
static int prepare(const struct mount_opts *o)
{
	if (o->log && log_open(o->log) < 0) {
		fprintf(stderr, "raidfs: cannot open log file '%s': %s\n", o->log, strerror(errno));
		return 1;
	}
	/* each open file takes a descriptor per member: the usual soft limit
	 * (1,024) allows about 120 open files over 8 members; the hard limit
	 * is the one that counts */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* before any thread: it forks (see isal-glue/parity.c) */
	parity_probe_unaligned();
	return 0;
}

/*
 * Before anything is served: the cache of the last run replayed and the
 * files of the dirty-file log resynced (resync.h).  *offline is set when
 * the mount must come up offline: the array cannot run (assembled != 0)
 * but a preserved cache holds acknowledged writes, or the members cannot
 * take them yet.  0, or 1 with the reason printed (the array closed).
 */
static int repair(struct array *a, const char *mountpoint, const struct mount_opts *o, int assembled,
		  char *err, size_t errlen, bool *offline)
{
	char cerr[1024];
	int count = 0, r = 0;
	*offline = assembled == 1;
	if (cache_open(a, cerr, sizeof(cerr)) < 0) {
		array_close(a);
		return refuse(o, cerr);
	}
	if (*offline && !cache_preserved_bytes()) {
		array_close(a);	/* (too many members missing, nothing preserved) */
		return refuse(o, err);
	}
	if (*offline) {
		/* A preserved cache: acknowledged writes that the members
		 * cannot take now.  Mounted offline (nothing is served) so that
		 * 'raidfs status' can say so and the data waits for the
		 * members; cache_monitor() brings the mount up when they are
		 * back.  As a controller keeps a preserved cache for an
		 * offline virtual drive. */
		fprintf(stderr, "raidfs: warning: %s\n", err);
		fprintf(stderr, "raidfs: warning: the cache of the last run holds %llu bytes that are not on the members yet (preserved cache): mounted OFFLINE, nothing is served until the missing members return; see 'raidfs status %s'\n",
			(unsigned long long)cache_preserved_bytes(), mountpoint);
		cache_set_offline(true);
		cache_set_offline_reason(err);
		return 0;
	}
	r = resync_dirty(a, o->force, &count, err, errlen);
	if (r == -EAGAIN) {
		/* the members cannot take the preserved cache (yet):
		 * offline as above, until they can */
		fprintf(stderr, "raidfs: warning: %s\n", err);
		fprintf(stderr, "raidfs: warning: mounted OFFLINE, nothing is served until the preserved cache is written; see 'raidfs status %s'\n",
			mountpoint);
		cache_set_offline(true);
		cache_set_offline_reason(err);
		*offline = true;
		return 0;
	}
	if (r == 0)
		r = cache_replay_finish(a, err, errlen);
	if (r < 0) {
		array_close(a);
		return refuse(o, err);
	}
	if (count)
		fprintf(stderr, "raidfs: resynced %d file%s left dirty by an unclean shutdown\n",
			count, count == 1 ? "" : "s");
	return 0;
}

/* The FUSE session of array a mounted on mountpoint, not served yet:
 * NULL with the reason printed. */
static struct fuse_session *fuse_up(struct array *a, const char *mountpoint, const struct mount_opts *o)
{
	char fsname[SB_NAME_MAX + 16];
	snprintf(fsname, sizeof(fsname), "fsname=raidfs:%.63s", a->sb.name);
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	fuse_opt_add_arg(&args, "raidfs");
	fuse_opt_add_arg(&args, "-o");
	fuse_opt_add_arg(&args, fsname);
	fuse_opt_add_arg(&args, "-o");
	fuse_opt_add_arg(&args, "subtype=raidfs,default_permissions");
	if (o->fuse_opts[0]) {
		fuse_opt_add_arg(&args, "-o");
		fuse_opt_add_arg(&args, o->fuse_opts);
	}
	if (o->readonly) {
		fuse_opt_add_arg(&args, "-o");
		fuse_opt_add_arg(&args, "ro");
	}
	const struct fuse_lowlevel_ops *ops = fsops_get(a);
	struct fuse_session *se = fuse_session_new(&args, ops, sizeof(*ops), a);
	fuse_opt_free_args(&args);
	if (!se) {
		fprintf(stderr, "raidfs: cannot start FUSE (bad option in '%s'?)\n", o->fuse_opts);
		return NULL;
	}
	if (fuse_session_mount(se, mountpoint) != 0) {
		fprintf(stderr, "raidfs: cannot mount on '%s' (does it exist, and is it not already mounted?)\n",
			mountpoint);
		fuse_session_destroy(se);
		return NULL;
	}
	return se;
}

/* Serve requests until the unmount, with the services running; then stop
 * them in order.  The result of fuse_session_loop_mt(). */
static int serve(struct array *a, struct fuse_session *se, bool offline)
{
	fuse_set_signal_handlers(se);
	if (!offline && cache_start() < 0)
		log_warn("array '%s' runs without a cache", a->sb.name);
	ctl_start(a);
	rebuild_resume(a);
	event_start(a);
	/* The kernel applied the caller's umask to the mode of every create
	 * already (FUSE without FUSE_CAP_DONT_MASK): the daemon's own must
	 * not take bits off a second time (a caller with umask 002 would get
	 * 0644 for 0664).  raidfs's own files and directories name their
	 * modes (0600, 0700); the event program gets the umask back. */
	umask(0);
	monitor_start(a);
	if (array_state(a) == ARRAY_DEGRADED)
		event_post(a, "DegradedArray", -1);
	struct fuse_loop_config *lc = fuse_loop_cfg_create();
	/* (no clone_fd: with a /dev/fuse descriptor per worker, a daemon
	 * killed during a rebuild kept its members locked a moment after
	 * it was reaped, and a mount right after the kill was refused) */
	fuse_loop_cfg_set_clone_fd(lc, 0);
	fuse_loop_cfg_set_max_threads(lc, 16);
	fuse_loop_cfg_set_idle_threads(lc, 8);
	fsops_start(se);
	int r = fuse_session_loop_mt(se, lc);
	fuse_loop_cfg_destroy(lc);
	fsops_stop();
	scrub_stop();	/* (before the cache's last destage, which it would slow) */
	cache_close();
	/* nothing may start a rebuild after rebuild_stop(): the monitor and
	 * the control socket go first */
	monitor_stop();
	ctl_stop();
	rebuild_stop();
	fuse_remove_signal_handlers(se);
	return r;
}

int mount_main(char *members, const char *mountpoint, struct mount_opts *o)
{
	char *paths[LAYOUT_MAX_WIDTH + 1];
	int n = split_members(members, paths);
	return n ? mount_paths(paths, n, mountpoint, o) : 1;
}

int mount_paths(char **paths, int n, const char *mountpoint, struct mount_opts *o)
{
	char err[2048];
	struct array *a = &the_array;
	bool offline;

	if (n > LAYOUT_MAX_WIDTH + 1) {
		fprintf(stderr, "raidfs: too many members: at most %d are supported\n", LAYOUT_MAX_WIDTH);
		return 1;
	}
	if (refuse_nesting(paths, n, mountpoint, o) || prepare(o))
		return 1;
	a->keep_failed = true;
	ctl_canonical(mountpoint, a->mountpoint, sizeof(a->mountpoint));	/* (messages) */
	a->readonly = o->readonly;	/* (kept by assembly: no format upgrade) */
	int r = array_assemble(a, paths, n, o->allow_degraded, err, sizeof(err));
	if (r < 0)
		return refuse(o, err);
	array_add_hooks(a, &rfile_hooks);
	array_add_hooks(a, &rebuild_hooks);
	array_add_hooks(a, &cache_hooks);
	array_add_hooks(a, &fsops_hooks);
	a->readonly = o->readonly;
	a->force = o->force;
	/* new files checksummed: the array's setting (docs/checksums.md) */
	a->csum = a->sb.csum == SB_CSUM_CRC32C;
	if (repair(a, mountpoint, o, r, err, sizeof(err), &offline))
		return 1;
	scrub_load(a);	/* (what the last scrub found, for status) */
	rfile_table_init();

	if (!offline && !a->readonly)
		fsops_sweep_orphans(a);

	struct fuse_session *f = fuse_up(a, mountpoint, o);
	if (!f) {
		array_close(a);
		return 1;
	}
	if (ctl_listen(a) < 0)
		fprintf(stderr, "raidfs: warning: control socket not available: 'raidfs status' will not reach this mount\n");
	if (!o->log && !o->foreground)
		log_open("syslog");
	if (fuse_daemonize(o->foreground) != 0) {
		fuse_session_unmount(f);
		fuse_session_destroy(f);
		return 1;
	}
	r = serve(a, f, offline);
	fuse_session_unmount(f);
	fuse_session_destroy(f);
	array_close(a);
	return r ? 1 : 0;
}
