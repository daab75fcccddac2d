/*
 * resync.c - at mount, bring every file the dirty-file log names back to
 * a consistent state (crash consistency, DESIGN.md decision 8; the log
 * itself is kept by array.c).  See resync.h.
 */
#include "resync.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "array.h"
#include "cache.h"
#include "file.h"
#include "stripe.h"
#include "meta.h"
#include "nsintent.h"
#include "util.h"

/* The shards of dirty-log entry `entry` on the members online, reached
 * through its marks (fds[j], -1 where none).  Returns how many were
 * found; *orphan: no shard has another name (the file was unlinked). */
static int open_marks(struct array *a, const char *entry, int *fds, bool *orphan)
{
	char name[PATH_MAX];
	int nlinks = 0;
	*orphan = true;
	snprintf(name, sizeof(name), SB_DIRTY_DIR "/%s", entry);
	for (uint32_t j = 0; j < a->width; j++) {
		fds[j] = -1;
		if (!member_online(a, j))
			continue;
		fds[j] = openat(a->m[j].dirfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fds[j] >= 0) {
			struct stat st;
			nlinks++;
			if (fstat(fds[j], &st) == 0 && st.st_nlink > 1)
				*orphan = false;
		}
	}
	return nlinks;
}

/* A create was interrupted (the shards carry CREATING_XATTR, the path):
 * the members online that did not get their shard yet get it now, empty,
 * as the create would have (added to fds, counted in *nlinks).  Returns
 * the length of the path found (> 0), or <= 0 when no create was cut. */
static ssize_t finish_create(struct array *a, int *fds, int *nlinks)
{
	char creating[PATH_MAX];
	ssize_t cl = -1;
	for (uint32_t j = 0; j < a->width && cl < 0; j++)
		if (fds[j] >= 0)
			cl = fgetxattr(fds[j], CREATING_XATTR, creating, sizeof(creating) - 1);
	if (cl <= 0)
		return cl;
	creating[cl] = '\0';
	struct stat pst;
	mode_t mode = 0644;
	for (uint32_t j = 0; j < a->width; j++)
		if (fds[j] >= 0 && fstat(fds[j], &pst) == 0)
			mode = pst.st_mode & 07777;
	for (uint32_t j = 0; j < a->width; j++) {
		if (fds[j] >= 0 || !member_online(a, j))
			continue;
		fds[j] = openat(a->m[j].dirfd, creating, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fds[j] >= 0) {
			(*nlinks)++;
			if (fstat(fds[j], &pst) == 0 && pst.st_size > 0)
				ftruncate(fds[j], 0);	/* a leftover: the new file is empty */
		}
	}
	log_warn("file '%s': its create was interrupted; the missing shards were made", creating);
	return cl;
}

/* Does no shard of fds hold a record at all (none damaged either)? */
static bool no_record(struct array *a, const int *fds)
{
	for (uint32_t j = 0; j < a->width; j++) {
		struct file_meta fm;
		if (fds[j] >= 0 && meta_get(fds[j], &fm) != -ENODATA)
			return false;
	}
	return true;
}

/* Resync the file whose shards are fds: the cache's preserved writes
 * replayed into it (*replayed), its redundancy made again from its data
 * unless the replay alone makes it consistent (cache_only, the cache of
 * the last run found), a truncate cut short finished, the record written.
 * 0 or -errno; *complete false when it stays in the dirty log. */
static int resync_shards(struct array *a, const char *entry, int *fds, bool cache_only, bool created,
			 bool *complete, bool *replayed)
{
	struct file_meta fm;
	int nvalid = 0, ret;
	ret = rfile_best_meta(a, fds, &fm, &nvalid);
	if (ret < 0) {
		/* interrupted create: empty shards, no metadata yet; or a new
		 * file whose one record (its primary's, rfile_create()) is on
		 * a member not here: the entry names its id, the array its
		 * layout */
		bool none = no_record(a, fds);
		if (rfile_shards_empty(a, fds) || none) {
			rfile_new_meta(a, strtoull(entry, NULL, 16), &fm);
			ret = 0;
		}
		if (none && !rfile_shards_empty(a, fds))
			log_warn("dirty file %s: no member here holds its record (a new file's first is its primary's "
				 "only): made again from its id", entry);
	}
	if (ret < 0) {
		log_err("dirty file %s has no valid metadata on any member; left in the dirty log", entry);
		*complete = false;
		return ret;
	}
	struct rfile rf;
	ret = rfile_private(a, fds, &fm, &rf);
	if (ret == 0) {
		/* Size from what really reached the shards.  (A shard short of
		 * the record's size is resynced as it is, like the rest: its
		 * file was being written, and rebuilding it from redundancy
		 * that may lag behind the data would put other bytes where md
		 * puts the data the members hold; docs/crash-consistency.md.) */
		rf.size = array_size_reached(a, &rf.lay, fds, fm.size, fm.flags);
		/* what the cache of the last run held for it goes in first;
		 * its mark is there already (a cache mark stays one: a crash
		 * during the replay finds the file as it was) */
		rf.marked = !cache_only;
		rf.cmarked = cache_only;
		stripe_log_covered(cache_only);
		rf.recovering = true;
		ret = cache_replay_file(&rf);
		stripe_log_covered(false);
		*replayed = ret == 0;
		/* (a file only the cache changed is whole after the replay,
		 * unless the cache of the last run was lost; a truncate cut
		 * short - its size taken above, its record replayed - is
		 * finished by the resync, which cuts the shards to the size
		 * and makes the parity over it) */
		bool cut = fm.flags & META_F_TRUNC;
		if (ret == 0 && (!cache_only || !cache_found_last_run() || cut))
			ret = stripe_resync(&rf);
		if (ret == 0 && cut)
			log_warn("dirty file %s: a truncate to %" PRIu64 " bytes was cut short by the crash: finished now",
				 entry, fm.size);
		if (ret == 0)
			ret = stripe_write_meta(&rf, 0);
		rfile_private_end(&rf);
		for (uint32_t j = 0; ret == 0 && created && j < a->width; j++)
			if (fds[j] >= 0)
				fremovexattr(fds[j], CREATING_XATTR);
	}
	return ret;
}

/* Resync one file of the dirty log; its shards are reached through the
 * dirty links.  Returns 0 or -errno. */
static int resync_one(struct array *a, const char *entry, bool cache_only, bool *complete, bool *unreplayed)
{
	bool replayed = false, orphan;
	int fds[LAYOUT_MAX_WIDTH];
	int ret = 0;

	*complete = true;
	int nlinks = open_marks(a, entry, fds, &orphan);
	if (nlinks == 0)
		return 0;
	ssize_t cl = orphan ? -1 : finish_create(a, fds, &nlinks);
	if (orphan)
		goto out;	/* only the dirty links keep it alive: the file was unlinked */
	/* A member in service without a mark: either the crash came while
	 * the marks were being made, before any data was written (writes
	 * start after every mark exists), or the file's shard there is
	 * missing (deleted by hand: its data is in the redundancy, and
	 * what was being written there is lost, as on a dirty degraded
	 * array).  The first member in service is marked last
	 * (mark_links()): member 0 marked means it was in service, so it
	 * was marked last and every other mark was made - the second case: the
	 * file is resynced from the shards there are (and its cache log
	 * replayed).  Otherwise the first is assumed, and nothing is done. */
	bool partial = nlinks < a->width - array_absent_count(a);
	if (partial && !(a->primary == 0 && fds[0] >= 0)) {
		goto out;
	}
	if (partial) {
		int n = a->width - array_absent_count(a) - nlinks;
		const char *it = n == 1 ? "it" : "them";
		log_warn("dirty file %s: its shard is missing on %d member%s in service: resynced without %s (what was "
			 "being written to %s is lost: 'raidfs scrub MOUNTPOINT --repair' puts %s back from the rest)",
			 entry, n, n == 1 ? "" : "s", it, it, it);
	}
	ret = resync_shards(a, entry, fds, cache_only, cl > 0, complete, &replayed);
	if (ret < 0 && *complete) {
		log_err("resync of dirty file %s failed: %s; left in the dirty log", entry, strerror(-ret));
		*complete = false;
	}
out:
	/* what the cache of the last run holds for it is not on the members */
	*unreplayed = !*complete && !replayed && cache_preserved_for(strtoull(entry, NULL, 16));
	for (uint32_t j = 0; j < a->width; j++)
		if (fds[j] >= 0)
			close(fds[j]);
	return ret;
}

/* A dirty-log name of a file only the cache changed ("<id>.c"). */
static bool cache_mark(const char *name)
{
	return strlen(name) > 16 && !strcmp(name + 16, CACHED_SUFFIX);
}

/* The union of the dirty-log names over the members online, each once.
 * 0, or -ENOMEM (what was read is in *names all the same). */
static int collect_names(struct array *a, char ***names, size_t *nnames)
{
	size_t cap = 0;
	bool oom = false;
	for (uint32_t j = 0; j < a->width && !oom; j++) {
		if (!member_online(a, j))
			continue;
		DIR *d = opendir_at(a->m[j].dirfd, SB_DIRTY_DIR);
		if (!d)
			continue;
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			bool seen = false;
			for (size_t i = 0; i < *nnames && !seen; i++)
				seen = !strcmp((*names)[i], e->d_name);
			if (seen)
				continue;
			if (!util_names_add(names, nnames, &cap, e->d_name)) {
				oom = true;
				break;
			}
		}
		closedir(d);
	}
	return oom ? -ENOMEM : 0;
}

/* A dirty array that is also degraded: the parity of the files being
 * written cannot be trusted to rebuild the missing members (md refuses a
 * dirty degraded array so).  0 to go on (nothing in doubt, or forced: the
 * absent members are recorded as out of date), or -EUCLEAN / -errno with
 * err set. */
static int judge_degraded(struct array *a, char **names, size_t nnames, bool force, char *err, size_t errlen)
{
	int ret;
	int lost = 0;
	for (uint32_t j = 0; j < a->width; j++)
		lost += !member_writable(a, j);	/* a rebuilding member is verified anyway */
	/* Files only the cache changed are consistent after its replay when
	 * the last run's cache survived with its guard slots (guard.h): it
	 * holds every acknowledged write, and the chunks of absent members
	 * a cut write could have changed - of members already out of service
	 * in the last run (recorded so): one in service then and missing now
	 * had its stripes' writes unguarded.  The others' parity is in doubt. */
	bool guarded = cache_guarded_last_run();
	for (uint32_t j = 0; j < a->width; j++)
		if (!member_writable(a, j) && !(a->out_before >> j & 1))
			guarded = false;
	size_t doubt = 0;
	for (size_t i = 0; i < nnames; i++) {
		bool co = cache_mark(names[i]);
		if (!co || !guarded)
			doubt++;	/* (a file with both marks: its plain one) */
	}
	if (doubt && lost && !force) {
		snprintf(err, errlen, "array '%s' is both dirty (%zu file%s were being written when it stopped) and degraded: parity of those files cannot be trusted to rebuild the missing members; return the missing members, or mount with -o force to accept possible damage to those files",
		     a->sb.name, doubt, doubt == 1 ? "" : "s");
		return -EUCLEAN;
	}
	if (doubt && lost) {
		/* forced: the resync changes files without the absent members,
		 * which are therefore out of date from now on */
		ret = array_note_write(a);
		if (ret < 0) {
			snprintf(err, errlen, "cannot record the absent members in the superblocks: %s", strerror(-ret));
			return ret;
		}
		log_warn("array '%s': resyncing %zu dirty file%s without the absent members (forced); they are out of date now",
			 a->sb.name, nnames, nnames == 1 ? "" : "s");
	}
	return 0;
}

/* What the resync of the dirty files came to. */
struct outcome {
	int done;		/* resynced, their marks cleared */
	int cache_only;		/* of them, made consistent by the replay alone */
	int lost_cache;		/* changed only through a cache not found */
	int unreplayed;		/* whose preserved writes the members cannot take */
	char first[128];	/* the first of those, and why */
};

/* Resync each file the names give (*count: how many were tried), then
 * clear the marks of those done once what was written is durable. */
static void resync_each(struct array *a, char **names, size_t nnames, int *count, struct outcome *o)
{
	int done = 0;
	uint64_t *ids = calloc(nnames ? nnames : 1, sizeof(*ids));	/* resynced */
	for (size_t i = 0; i < nnames; i++) {
		bool complete, unrep = false, co = cache_mark(names[i]);
		if (co) {
			/* also marked for a resync: that one replays too */
			bool both = false;
			for (size_t k = 0; k < nnames && !both; k++)
				both = k != i && !strncmp(names[k], names[i], 16) && !names[k][16];
			if (both)
				continue;
		}
		int r = resync_one(a, names[i], co, &complete, &unrep);
		if (unrep && !o->unreplayed++)
			snprintf(o->first, sizeof(o->first), "%.16s: %s", names[i], strerror(-r));
		if (complete && ids) {
			ids[done++] = strtoull(names[i], NULL, 16);
			o->cache_only += co && cache_found_last_run();
			o->lost_cache += co && !cache_found_last_run();
		} else {
			array_left_dirty_add(a, strtoull(names[i], NULL, 16));
		}
		(*count)++;
	}
	/* their marks go once what the resync and the replay wrote is
	 * durable: the log still holds the replayed writes until then */
	bool synced = done && array_sync_members(a) == 0;
	for (int i = 0; i < done; i++) {
		if (!synced) {
			array_left_dirty_add(a, ids[i]);
			continue;
		}
		array_left_dirty_done(a, ids[i]);	/* (a second try) */
		array_clear_dirty(a, ids[i], NULL);
	}
	free(ids);
	o->done = done;
}

/* Say what the resync did. */
static void log_outcome(struct array *a, const struct outcome *o)
{
	if (o->done)
		log_info("array '%s': resynced %d file%s left dirty by an unclean shutdown",
			 a->sb.name, o->done, o->done == 1 ? "" : "s");
	if (o->cache_only)
		log_info("array '%s': %d of them changed only through the cache: its replay made them consistent, no parity resync (the cache's log or arena closes the write hole)",
			 a->sb.name, o->cache_only);
	if (o->lost_cache && cache_retired_last_run())
		log_info("array '%s': the cache log of the last run failed and was retired once the members held all it had: %d file%s changed through it got a parity resync; nothing was lost",
			 a->sb.name, o->lost_cache, o->lost_cache == 1 ? "" : "s");
	else if (o->lost_cache)
		log_warn("array '%s': the cache of the last run was not found (%s): %d file%s it alone changed got a parity resync; the writes it held are lost",
			 a->sb.name, cache_opts.bbu == BBU_SHM ? "a bbu=shm cache does not outlive a reboot" : "its log is new",
			 o->lost_cache, o->lost_cache == 1 ? "" : "s");
}

int resync_dirty(struct array *a, bool force, int *count, char *err, size_t errlen)
{
	char **names = NULL;
	size_t nnames = 0;
	struct outcome o = { 0 };
	*count = 0;
	int ret = collect_names(a, &names, &nnames);
	if (ret < 0)
		snprintf(err, errlen, "out of memory reading the marks of files left dirty");
	else
		ret = judge_degraded(a, names, nnames, force, err, errlen);
	if (ret == 0) {
		/* names first: the files' resync finds them by name */
		if (array_writable(a))
			nsintent_recover(a);
		resync_each(a, names, nnames, count, &o);
		log_outcome(a, &o);
	}
	if (ret == 0 && o.unreplayed) {
		/* acknowledged writes the members cannot take now: kept (the
		 * caller does not drop the preserved cache), tried again */
		snprintf(err, errlen, "the cache of the last run holds writes to %d file%s that the members cannot take now (file id %s); the preserved cache is kept and written once they can: make room on the members, or return the failing ones",
			 o.unreplayed, o.unreplayed == 1 ? "" : "s", o.first);
		ret = -EAGAIN;
	}
	for (size_t i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	return ret;
}
