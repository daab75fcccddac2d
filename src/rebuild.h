/*
 * rebuild.h - online rebuild of a member onto a replacement directory.
 *
 * `raidfs replace MOUNTPOINT MEMBER DIR` (member faulty or missing) puts
 * DIR in MEMBER's slot in state REBUILDING and starts one rebuild thread:
 *
 *   1. every open file forgets its shard on the old member;
 *   2. the thread walks the namespace of the primary member and recreates
 *      directories, symlinks and FIFOs on DIR (mode, owner, times, user
 *      xattrs), hard links as hard links;
 *   3. each regular file is rebuilt window by window (1 MiB of the
 *      member's shard) under the file's write lock: the member's chunk of
 *      every stripe is reconstructed from the online members and written
 *      to its new shard, all-zero chunks are skipped so holes stay holes;
 *      two files are rebuilt at a time (the walk queues them for a file
 *      worker thread and rebuilds one itself when the queue is full); a
 *      big file's windows are cut in pieces for both threads instead;
 *   4. a verify pass walks again: a file nobody changed since step 3
 *      wrote its new shard (same metadata version, not open, the shard as
 *      long as written) is done; any other is rebuilt again and compared,
 *      and what differs is rewritten (a re-add's verify pass looks only at
 *      the files its first pass resynced);
 *   5. when both are done the member becomes ONLINE (events bumped,
 *      superblocks written) and the array optimal again.
 *
 * While it runs, the REBUILDING member receives every write and namespace
 * change (member_writable()) but is never read (member_online()), so a
 * half-rebuilt member is never a source.  Writes to a file not yet rebuilt
 * also land on it and are overwritten by the reconstruction, which already
 * includes them: either way the result is the current data.
 *
 * Rate: at most max_rate MB/s; while users did I/O in the last 100 ms, at
 * most min_rate (md's speed_limit_min/max).  pause/resume stop and start
 * the walk between windows.
 *
 * Resume: the walk is in sorted order and the last rebuilt path is saved
 * on the new member (.raidfs/rebuild, crc protected) at most once a
 * second; a mount that finds a member recorded as rebuilding continues
 * after that path (files before it are not rebuilt again; the verify pass
 * still checks them).
 *
 * The namespace under the walk: operations that change the namespace
 * hold a->ns_lock shared; the rebuild's two file threads hold it as a
 * group (nslock.h: together, never beside an operation) to open a file
 * by path and settle its new shard, so a path never names two different
 * files on two members.  An operation that fails on the rebuilding member
 * queues its paths (rebuild_redo(), persisted in .raidfs/rebuild-redo);
 * after the walk and the verify pass the queue is worked off until it is
 * empty under the exclusive lock, and only then is the member online.
 * The verify pass also removes names the primary does not have.  Hard-
 * linked files keep their rfile open for the whole rebuild, so all their
 * names end up on one inode of the new member.  docs/failures.md
 * ("Rebuild") says why each of these is needed.
 *
 * Re-add (rebuild_readd(), `raidfs add` of a member's old directory): the
 * same walk, but a file whose shard on the member has the current
 * metadata version and is not in the missed-write log (array.h) is left
 * as it is.
 *
 * Replace in place (`raidfs replace` of an online member, like mdadm
 * --replace): the new directory sits in the shadow slot (array.h), member
 * j keeps serving and every change to it also reaches the shadow; the walk
 * copies j's chunks (reconstructing only what j cannot read) and, under
 * the exclusive namespace lock with the redo queue empty, the shadow
 * becomes member j.  The replacement is recorded in the superblocks
 * (format version 2, docs/format.md) and its position saved on the
 * shadow like a rebuild's (mode "replace"): a mount puts the shadow back
 * and rebuild_resume() continues the copy after that position.  If
 * member j fails during the copy (rebuild_replaced_member_failed()), the
 * shadow becomes j's rebuild target between two files of the walk
 * (array_shadow_promote()): what was copied is kept, the rest is
 * reconstructed, and the verify pass (run again if the promotion came
 * during it) checks every chunk, also those written to j after it failed
 * and before the promotion, which the copy missed.
 */
#ifndef RAIDFS_REBUILD_H
#define RAIDFS_REBUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct array;

/* A rebuild copies every file, verifies them all against the others, and
 * catches up with the paths the namespace changed meanwhile. */
enum { REBUILD_COPY = 1, REBUILD_VERIFY, REBUILD_CATCH_UP };

struct rebuild_info {
	bool active, paused;
	bool readd;			/* a re-add (changed files only) */
	bool replace;			/* a healthy member copied in place */
	char target[256];		/* its replacement's directory */
	int member;
	uint64_t done, total;		/* bytes written to the new member */
	int phase;			/* REBUILD_COPY, _VERIFY, _CATCH_UP */
	uint64_t copied;		/* done when the copy ended (verify counts on) */
	uint64_t files_copied;		/* files_done then */
	uint64_t files_done;
	double rate;			/* bytes/s, smoothed */
	double elapsed;			/* seconds */
	uint32_t min_rate, max_rate;	/* MB/s */
	char current[256];		/* file being rebuilt */
	char last_result[512];		/* message of the last finished rebuild */
	int failed_files;		/* files it could not rebuild */
	/* the last finished rebuild, replacement or re-add (last_member -1:
	 * none since the mount) */
	int last_member;
	bool last_ok;			/* its member ended in service */
	bool last_replace, last_readd;
	double last_elapsed;		/* seconds, start to end */
	uint64_t last_bytes;		/* bytes written to the new member */
	int64_t last_end;		/* when it ended (Unix time, s) */
	int starting;			/* a member whose queued replacement (or
					 * spare) is being taken, until its
					 * rebuild is active; -1 none */
};

/* `raidfs replace`: DIR (an empty directory, checked as
 * array_check_new_dir() checks) rebuilds member (faulty or missing) or,
 * for an online member, copies it in place.  0 started; 1 queued: a
 * rebuild of another member runs, so DIR is recorded as the member's
 * queued replacement (array_queue_replacement(), array.h) and
 * rebuild_take_spare() starts it once no rebuild runs; <0 refused, with
 * the reason in err. */
int rebuild_start(struct array *a, int member, const char *dir, char *err, size_t errlen);
/* Hot spares: add DIR as a spare; if no rebuild runs, start the first
 * queued replacement (in queue order; an online member's is copied in
 * place), else take a hot spare for a member faulty or missing (called
 * by the monitor every second; returns 1 when a rebuild was started). */
int rebuild_add_spare(struct array *a, const char *dir, char *err, size_t errlen);
/* Re-add: DIR holds this array's superblock (a member that was failed,
 * pulled or missing): it goes back into its slot and only the files
 * changed while it was away are resynced (missed-write log, metadata
 * versions).  -ENOENT when DIR holds no superblock of this array. */
int rebuild_readd(struct array *a, const char *dir, char *err, size_t errlen);
int rebuild_take_spare(struct array *a);
/* At mount (and when a stopped rebuild can go on: rebuild_resume_due(),
 * 'raidfs rebuild MNT resume'): continue the rebuild of a member recorded
 * as rebuilding, or
 * the replacement in place recorded in the superblocks, from its saved
 * position (.raidfs/rebuild on the new directory).  A replacement whose
 * member is not online any more becomes that member's rebuild. */
int rebuild_resume(struct array *a);
void rebuild_pause(bool pause);
void rebuild_set_rates(uint32_t min_mb, uint32_t max_mb);
void rebuild_get(struct rebuild_info *out);
/* Stop a running rebuild (unmount); the member stays REBUILDING. */
void rebuild_stop(void);
/* A namespace operation failed on the member being rebuilt: bring path
 * (relative to the mount) in line with the primary before the rebuild
 * ends.  Called with the namespace lock held shared. */
void rebuild_redo(struct array *a, const char *path);
/* The replacement of a healthy member cannot go on (a write to it
 * failed): the copy stops and is dropped.  Any thread. */
void rebuild_abandon_replace(void);
/* The member being replaced in place failed: the copy becomes its
 * rebuild target, between two files of the walk.  Any thread. */
void rebuild_replaced_member_failed(void);
/* Member j failed while it was being rebuilt (array_fail_member()): its
 * rebuild, if it is the one running, stops.  Any thread. */
void rebuild_target_failed(uint32_t j);

/* The rebuild's hooks for the array (array.h), registered by mount.c. */
extern const struct array_hooks rebuild_hooks;
/* The replacement of a member being replaced in place failed (why: it
 * vanished, a write to it failed, 'raidfs fail' of its directory): logged,
 * and the copy stops and is dropped, also when it is not running.  Any
 * thread holding no lock. */
void rebuild_fail_replacement(struct array *a, const char *why);
/* Should the monitor call rebuild_resume_member(a, *member)?  1: the last
 * rebuild (of *member) stopped because the array lost more members than
 * it tolerates, and enough are back now; 2: a start that found another
 * rebuild running left *member recorded as rebuilding, and that one has
 * ended; 0: no. */
int rebuild_resume_due(struct array *a, int *member);
/* rebuild_resume() of that member only. */
int rebuild_resume_member(struct array *a, int only);

#endif
