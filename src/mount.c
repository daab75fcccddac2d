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
#include <fuse.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

int mount_main(char *members, const char *mountpoint, struct mount_opts *o)
{
	char *paths[LAYOUT_MAX_WIDTH + 1];
	int n = 0;
	char err[2048];
	struct array *a = &the_array;

	for (char *save = NULL, *p = strtok_r(members, ":", &save); p;
	     p = strtok_r(NULL, ":", &save)) {
		if (n == LAYOUT_MAX_WIDTH + 1) {
			fprintf(stderr, "raidfs: too many members: at most %d are supported\n", LAYOUT_MAX_WIDTH);
			return 1;
		}
		paths[n++] = p;
	}
	if (n == 0) {
		fprintf(stderr, "raidfs: no member directories given (DIR[:DIR...])\n");
		return 1;
	}
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
	a->keep_failed = true;
	ctl_canonical(mountpoint, a->mountpoint, sizeof(a->mountpoint));	/* (messages) */
	int r = array_assemble(a, paths, n, o->allow_degraded, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "raidfs: cannot mount: %s\n", err);
		if (o->log)
			log_err("cannot mount: %s", err);
		return 1;
	}
	bool failed = r == 1;
	array_add_hooks(a, &rfile_hooks);
	array_add_hooks(a, &rebuild_hooks);
	array_add_hooks(a, &cache_hooks);
	a->readonly = o->readonly;
	a->force = o->force;
	char cerr[1024];
	if (cache_open(a, cerr, sizeof(cerr)) < 0) {
		fprintf(stderr, "raidfs: cannot mount: %s\n", cerr);
		if (o->log)
			log_err("cannot mount: %s", cerr);
		array_close(a);
		return 1;
	}
	if (failed && !cache_preserved_bytes()) {
		fprintf(stderr, "raidfs: cannot mount: %s\n", err);
		if (o->log)
			log_err("cannot mount: %s", err);
		array_close(a);
		return 1;
	}
	int count = 0;
	if (failed) {
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
		r = 0;
	} else {
		r = resync_dirty(a, o->force, &count, err, sizeof(err));
		if (r == -EAGAIN) {
			/* the members cannot take the preserved cache (yet):
			 * offline as above, until they can */
			fprintf(stderr, "raidfs: warning: %s\n", err);
			fprintf(stderr, "raidfs: warning: mounted OFFLINE, nothing is served until the preserved cache is written; see 'raidfs status %s'\n",
				mountpoint);
			cache_set_offline(true);
			cache_set_offline_reason(err);
			failed = true;
			r = 0;
		} else if (r == 0) {
			r = cache_replay_finish(a, err, sizeof(err));
		}
	}
	if (r < 0) {
		fprintf(stderr, "raidfs: cannot mount: %s\n", err);
		if (o->log)
			log_err("cannot mount: %s", err);
		array_close(a);
		return 1;
	}
	if (count)
		fprintf(stderr, "raidfs: resynced %d file%s left dirty by an unclean shutdown\n",
			count, count == 1 ? "" : "s");
	rfile_table_init();

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
	struct fuse *f = fuse_new(&args, fsops_get(a), sizeof(struct fuse_operations), a);
	if (!f) {
		fprintf(stderr, "raidfs: cannot start FUSE (bad option in '%s'?)\n", o->fuse_opts);
		array_close(a);
		return 1;
	}
	if (fuse_mount(f, mountpoint) != 0) {
		fprintf(stderr, "raidfs: cannot mount on '%s' (does it exist, and is it not already mounted?)\n",
			mountpoint);
		fuse_destroy(f);
		array_close(a);
		return 1;
	}
	if (ctl_listen(a) < 0)
		fprintf(stderr, "raidfs: warning: control socket not available: 'raidfs status' will not reach this mount\n");
	if (!o->log && !o->foreground)
		log_open("syslog");
	if (fuse_daemonize(o->foreground) != 0) {
		fuse_unmount(f);
		fuse_destroy(f);
		return 1;
	}
	fuse_set_signal_handlers(fuse_get_session(f));
	if (!failed && cache_start() < 0)
		log_warn("array '%s' runs without a cache", a->sb.name);
	ctl_start();
	rebuild_resume(a);
	event_start(a);
	monitor_start(a);
	if (array_state(a) == ARRAY_DEGRADED)
		event_post(a, "DegradedArray", -1);
	struct fuse_loop_config *lc = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(lc, 0);
	fuse_loop_cfg_set_max_threads(lc, 16);
	fuse_loop_cfg_set_idle_threads(lc, 8);
	r = fuse_loop_mt(f, lc);
	fuse_loop_cfg_destroy(lc);
	scrub_stop();	/* (before the cache's last destage, which it would slow) */
	cache_close();
	/* nothing may start a rebuild after rebuild_stop(): the monitor and
	 * the control socket go first */
	monitor_stop();
	ctl_stop();
	rebuild_stop();
	fuse_remove_signal_handlers(fuse_get_session(f));
	fuse_unmount(f);
	fuse_destroy(f);
	array_close(a);
	return r ? 1 : 0;
}
