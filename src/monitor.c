/*
 * monitor.c - the member monitor: once a second it looks at every member
 * and at the work that waits for a moment to start.  See monitor.h.
 */
#include "monitor.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "array.h"
#include "cache.h"
#include "file.h"
#include "member.h"
#include "rebuild.h"
#include "resync.h"
#include "superblock.h"
#include "util.h"

static pthread_t monitor_thread;
static volatile bool monitor_run;

/* Member j, online or being rebuilt (or SHADOW, the replacement of a
 * member replaced in place), is gone (member_vanished(), *why its
 * reason).  Seen without the lock first (a look at a dying disk may hang),
 * then again under it: a directory taking the slot changes its
 * descriptor, path and superblock under the lock. */
static bool member_vanished_now(struct array *a, uint32_t j, const char **why)
{
	if (!(member_online(a, j) || member_rebuilding(a, j)) || !member_vanished(a, j, why))
		return false;
	pthread_mutex_lock(&a->lock);
	bool gone = (member_online(a, j) || member_rebuilding(a, j)) && member_vanished(a, j, why);
	pthread_mutex_unlock(&a->lock);
	return gone;
}

/* A file that grew while every member was there has its size in its
 * shards' lengths - except for a tail only a member that failed since
 * held: written down within 100 ms of the failure (when a battery keeps
 * what the cache held: without one, nothing is recorded), and again each
 * tick while a file was busy. */
static void record_sizes(struct array *a)
{
	if (__atomic_load_n(&a->sizes_due, __ATOMIC_ACQUIRE) && cache_battery()) {
		__atomic_store_n(&a->sizes_due, false, __ATOMIC_RELEASE);
		if (!rfile_record_acked_all())
			__atomic_store_n(&a->sizes_due, true, __ATOMIC_RELEASE);
	}
}

/* A member in service whose filesystem passed -o space_warn: logged and
 * posted (NearlyFull) once, again only after it had room. */
static void watch_space(struct array *a)
{
	for (uint32_t j = 0; j < a->width; j++) {
		struct statvfs sv;
		struct member *m = &a->m[j];
		if (!(member_online(a, j) || member_rebuilding(a, j)) || m->dirfd < 0 || fstatvfs(m->dirfd, &sv) < 0)
			continue;
		uint64_t used = (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize, avail = (uint64_t)sv.f_bavail * sv.f_frsize;
		bool low = array_space_low(used, avail);
		if (low && !m->space_low_told) {
			char fr[32];
			log_warn("array '%s': member %u '%s' is nearly full: %s free, %.0f%% used (-o space_warn)", a->sb.name, j,
				 m->path, fmt_size(avail, fr, sizeof(fr)), used + avail ? 100.0 * used / (used + avail) : 0.0);
			event_post(a, "NearlyFull", (int)j);
		}
		m->space_low_told = low;
	}
}

/* A directory in the member list that was missing at mount, or had no
 * superblock (a disk not mounted there yet), and now holds the superblock
 * of a member of this array that is away: re-added as if it had gone
 * away while mounted.  (Its slot was not known at mount.) */
static void readd_given(struct array *a)
{
	struct rebuild_info ri;
	for (int u = 0; u < a->nunusable && u < 64 && monitor_run; u++) {
		if (!(a->unusable_retry & (1ull << u)))
			continue;
		struct superblock sb;
		int fd = open(a->unusable_path[u], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		int r = sb_read(fd, &sb, NULL);
		close(fd);
		if (r < 0)
			continue;
		if (memcmp(sb.uuid, a->sb.uuid, 16) != 0 || sb.index >= a->width) {
			a->unusable_retry &= ~(1ull << u);	/* not a member of this array */
			continue;
		}
		uint32_t j = sb.index;
		if (!a->m[j].went_away || member_online(a, j) || member_rebuilding(a, j) || a->m[j].fault.vanished)
			continue;
		rebuild_get(&ri);
		if (ri.active)
			return;
		char err[512];
		if (rebuild_readd(a, a->unusable_path[u], err, sizeof(err)) >= 0) {
			log_warn("array '%s': member %u came back at '%s'", a->sb.name, j, a->unusable_path[u]);
			a->unusable_retry &= ~(1ull << u);
		} else if (!a->m[j].readd_told) {
			log_warn("array '%s': member %u is back at '%s' but cannot be re-added yet: %s", a->sb.name, j,
				 a->unusable_path[u], err);
			a->m[j].readd_told = true;
		}
	}
}

static void *monitor(void *arg)
{
	struct array *a = arg;
	bool shadow_told = false;
	while (monitor_run) {
		for (uint32_t j = 0; j < a->width && monitor_run; j++) {
			/* (also the member being rebuilt: the new disk can go too) */
			const char *why;
			if (member_vanished_now(a, j, &why)) {
				a->m[j].went_away = true;
				array_fail_member(a, j, why);
			} else if (!a->readonly && member_online(a, j) && member_fs_readonly(a, j)) {
				/* (its writes would fail; its shards would go
				 * stale while it still served reads) */
				array_fail_member(a, j, "its filesystem is mounted read-only (after an error on its disk?)");
			}
		}
		const char *swhy;
		bool gone = shadow_of(a) >= 0 && member_vanished_now(a, SHADOW, &swhy);
		if (gone && !shadow_told)
			rebuild_fail_replacement(a, swhy);
		shadow_told = gone;
		if (monitor_run)
			array_queued_check(a);	/* (a queued replacement's directory gone) */
		struct rebuild_info ri;
		rebuild_get(&ri);
		if (monitor_run && !ri.active)
			rebuild_take_spare(a);	/* (the queued replacements first) */
		int queued = -1, due = monitor_run ? rebuild_resume_due(a, &queued) : 0;
		if (due && rebuild_resume_member(a, queued) > 0)
			log_warn("array '%s': %s", a->sb.name,
				 due == 1 ? "enough members are back: the stopped rebuild goes on"
					  : "a rebuild that waited for the one before starts");
		if (monitor_run)
			cache_monitor(a, resync_dirty);	/* an offline mount comes up when it can */
		if (monitor_run && a->tick)
			a->tick(a);
		array_counters_flush(a);	/* (error counters that changed: at most once a second) */
		watch_space(a);
		/* a member whose disk went away and is back at its path (same
		 * array, same index) is re-added: hot-plug, as md's udev rules.
		 * Only a path this mount was given: the one the superblocks
		 * recorded may be another array's directory (a copy of this
		 * one's member) */
		readd_given(a);
		for (uint32_t j = 0; j < a->width && monitor_run; j++) {
			if (!a->m[j].went_away || member_online(a, j) || member_rebuilding(a, j) ||
			    a->m[j].fault.vanished || !a->m[j].path[0] || !a->m[j].given)
				continue;
			rebuild_get(&ri);
			if (ri.active)
				break;
			char err[512];
			int r = rebuild_readd(a, a->m[j].path, err, sizeof(err));
			if (r >= 0) {
				log_warn("array '%s': member %u came back at '%s'", a->sb.name, j, a->m[j].path);
			} else if (r != -ENOENT && !a->m[j].readd_told) {
				/* back at its path but refused: say why, once */
				log_warn("array '%s': member %u is back at '%s' but cannot be re-added yet: %s",
					 a->sb.name, j, a->m[j].path, err);
				a->m[j].readd_told = true;
			}
		}
		for (int i = 0; i < 10 && monitor_run; i++) {
			record_sizes(a);
			usleep(100 * 1000);
		}
	}
	return NULL;
}

int monitor_start(struct array *a)
{
	monitor_run = true;
	if (pthread_create(&monitor_thread, NULL, monitor, a) != 0) {
		monitor_run = false;
		return -EAGAIN;
	}
	return 0;
}

void monitor_stop(void)
{
	if (!monitor_run)
		return;
	monitor_run = false;
	pthread_join(monitor_thread, NULL);
}
