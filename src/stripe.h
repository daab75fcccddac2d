/*
 * stripe.h - reading and writing file data across the member shards
 * (stripe.c; layer 3, below the open-file table and the cache).
 *
 * The unit of work is one redundancy group of one stripe (a "row"): k data
 * chunks and m redundancy chunks at the same shard offset, stripe * chunk
 * (layout.h maps file offsets to members and shard offsets).  Every
 * function here works on an open file (struct rfile, file.h).
 *
 * A write, from the FUSE callback to the member pwrite()s:
 *
 *   fs_write_buf()          fuse.c   the request, on the open file
 *   cache_write()           cache.c  write-back or write-through (the
 *                                    cache's policy; cache.c draws the
 *                                    write-back path and the destage)
 *   stripe_write_locked()   stripe.c marks the file dirty (dirty-file log),
 *                                    walks the stripes of the request:
 *     write_full_stripes()           whole stripes: parity from the buffer,
 *                                    nothing read (both cores: pair.h)
 *     write_group()                  a partial row: load_group() reads what
 *                                    parity needs (absent chunks
 *                                    reconstructed), parity_encode(), and
 *   shard_write()/put_member()       one pwritev() per chunk:
 *   member_pwritev()        member.c fault injection, counters, the error
 *                                    judged (a failing member is failed,
 *                                    the write goes on with the others)
 *   io_pwritev_some()       util.c   the system call, short writes resumed
 *
 * A read: fs_read() -> cache_read() -> stripe_read_locked() reads data
 * chunks straight into the caller's buffer and reconstructs only chunks
 * whose member cannot be read (load_group()).
 *
 * Crash consistency: every change starts with stripe_mark_dirty(), which
 * puts the file in the array's dirty-file log before any shard is touched,
 * so a crash in the middle of a row leaves a file the next mount resyncs
 * (resync.h); in a degraded row the chunks a cut write could destroy are
 * kept in a guard slot first (guard.h) when the cache has a battery.
 *
 * Locking: the functions without _locked take rf->rw (shared to read,
 * exclusive to write); the _locked ones expect the caller to hold it.
 * Below that no lock of the data path is taken, except the array's
 * marking of the dirty log.  Return: 0 or bytes, or a negative errno.
 */
#ifndef RAIDFS_STRIPE_H
#define RAIDFS_STRIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "file.h"

/* The metadata record of rf at `version` with `size` (the index is the
 * caller's to set). */
struct file_meta stripe_meta_record(struct rfile *rf, uint64_t version, uint32_t flags, uint64_t size);
/* Write the metadata (size, flags) to every present shard. */
int stripe_write_meta(struct rfile *rf, uint32_t flags);

/* A truncate to `size` is about to cut the file (META_F_TRUNC): recorded
 * before any shard changes, so that a crash in the middle ends with the
 * file truncated (the mount finishes it), not half cut.  rf->rw held
 * exclusively; 0 or -errno. */
int stripe_record_truncate(struct rfile *rf, uint64_t size);

/* Record how far acknowledged writes reach (rfile_acked()) when the
 * metadata is short of it; 0 or -errno.  rf->rw held (shared: the
 * shards are not touched). */
int stripe_record_acked(struct rfile *rf);

/* The file's last close: what the writes reserved ahead on the members
 * past its end (reserve(), a step ahead of a writer) is given back, so
 * that the space the members report is the file's.  Nobody else holds
 * rf (its table entry is still there: no open makes another meanwhile). */
void stripe_give_back(struct rfile *rf);

/* Callers hold no lock; these take rf->rw. */
ssize_t stripe_read(struct rfile *rf, void *buf, size_t len, uint64_t off);
ssize_t stripe_write(struct rfile *rf, const void *buf, size_t len, uint64_t off);
int stripe_truncate(struct rfile *rf, uint64_t size);
int stripe_fsync(struct rfile *rf, bool datasync);
/* Member j's shard, found damaged (short) at open, rebuilt from the others
 * from stripe `from` on (caller holds rf->rw exclusively): bytes written
 * or -errno. */
long stripe_repair_shard(struct rfile *rf, uint32_t j, uint64_t from);

/* The same with rf->rw already held by the caller (shared for reads and
 * the cache's destage of lines, exclusively for the others); used by the
 * cache (cache.c).  They do not
 * check that the array is writable. */
ssize_t stripe_read_locked(struct rfile *rf, void *buf, size_t len, uint64_t off);
ssize_t stripe_write_locked(struct rfile *rf, const void *buf, size_t len, uint64_t off);
/* The parity of each group holding one of the file offsets off[0..n),
 * made again from its data (absent slots reconstructed), bytes past the
 * file's end as zeros, then the shards cut to their lengths: guard.c's
 * put-back, after a write cut short (rf->rw held or private).  The number
 * of groups, or -errno. */
int stripe_regen_at(struct rfile *rf, const uint64_t *off, int n);
/* rf->rw held exclusively.  said: the caller wrote the shrink's "began"
 * record (stripe_record_truncate()) already (the cache does, before it
 * drops the lines past the new end); else it is written here. */
int stripe_truncate_locked(struct rfile *rf, uint64_t size, bool said);
/* Put back the previous run's guarded chunks of rf (guard.h: writes into
 * degraded stripes cut short), rf->rw held or rf private: the bytes as
 * they were written again, the parity of their groups made again with
 * zeros past the end, the slots freed once durable.  Two slots never
 * cover the same bytes (their writes were cut short at the same moment,
 * and one file's stripe is written by one writer at a time), so their
 * order does not matter.  0 or -errno. */
int stripe_put_back_guarded(struct rfile *rf);
/* A truncate's record replayed from the cache's log: the same, and the
 * stripe across the size made again even when the file has that size
 * already (a power loss can keep a shard's new length and lose the parity
 * written before it; its file, with the cache's mark, gets no resync). */
int stripe_truncate_replayed(struct rfile *rf, uint64_t size);
/* Whole stripes [s0, s0+ns) (ns <= 16): sd[i] holds stripe s0+i's data
 * bytes.  Parity comes from the buffers, nothing is read. */
int stripe_write_stripes_locked(struct rfile *rf, uint64_t s0, uint32_t ns, const uint8_t *const *sd);

/* Write the dirty sectors of a cache line (stripe s; data holds the
 * stripe's data bytes, valid/dirty one bit per `sector` bytes) with their
 * parity, reading what parity needs: the fewer reads of reconstruct-write
 * and read-modify-write (stripe.c).  Nothing past the file's end is
 * written.  rf->rw held (shared by the destage: its lines are busy). */
int stripe_destage_line(struct rfile *rf, uint64_t s, const uint8_t *data, const uint64_t *valid,
			const uint64_t *dirty, uint32_t sector);

/* The same with the cache-log mark (bbu=file: the change is in the log
 * before it is acknowledged), unless the file is marked already. */
int stripe_mark_cached(struct rfile *rf);
/* Shard j of rf (fd, unnamed and whole: rfile_restore_shard()) goes into
 * service: under the marking lock, its dirty-log marks first if the file
 * is marked (a crash must not find a marked file without them), then its
 * name relpath on member j, then rf->fd[j].  0 or -errno (nothing put in
 * service).  Caller holds the namespace lock and rf->rw exclusively. */
int stripe_publish_shard(struct rfile *rf, uint32_t j, int fd, const char *relpath);
/* *st: the primary shard's, st_nlink its names alone (its dirty-log links
 * not counted; no mark is made meanwhile).  0, or -1 with errno. */
int stripe_names(struct rfile *rf, struct stat *st);
/* This thread writes data that the cache log holds (destage in
 * bbu=file): a file marked by stripe_mark_cached needs no other mark. */
void stripe_log_covered(bool on);
/* fdatasync rf's shards on every member that takes writes (failures fail
 * the member): member_sync=always after a write, and before a guard slot
 * is freed (guard.h).  Nothing with member_sync=never. */
int stripe_sync_shards(struct rfile *rf);

/* fallocate(2) below the cache (cache_fallocate() calls these):
 * stripe_allocate(): room for file bytes [off, end) on every member
 * (the shards' ranges of those stripes, sizes kept), taking rf->rw; 0,
 * or -ENOSPC (-EDQUOT, -EFBIG) with nothing allocated past any shard's
 * length.  stripe_zero_locked(): [off, end) made zeros, rf->rw held
 * exclusively, `zeros` at least end - off zero bytes (and a chunk):
 * with `punch` and every member taking writes, its whole stripes made
 * holes on every member straight away (checksum records of zero
 * chunks); the rest written with zeros as any write (parity, checksums,
 * guards), but for stripes that are holes on the members already (no
 * room needed), and with `punch` the whole stripes then given back.
 * Later writes into the holes take their room again.  0 or -errno. */
int stripe_allocate(struct rfile *rf, uint64_t off, uint64_t end);
int stripe_zero_locked(struct rfile *rf, const void *zeros, uint64_t off, uint64_t end, bool punch);
/* lseek(SEEK_DATA or SEEK_HOLE) from file offset off (< size, else
 * -ENXIO), at stripe granularity: a hole is a stripe every member with
 * valid data for it has no data in (it reads as zeros); the end of the
 * file is a hole.  The shards only: the caller writes cached lines out
 * first.  Takes rf->rw shared.  The offset or -errno. */
int64_t stripe_seek(struct rfile *rf, uint64_t off, int whence);

/* Put the file in the dirty log before its first change (idempotent,
 * any lock state). */
int stripe_mark_dirty(struct rfile *rf);

/* Recompute every stripe's redundancy from its data (resync after a
 * crash).  Caller holds rf->rw or owns rf privately. */
int stripe_resync(struct rfile *rf);

/* Rebuild member j's chunk of stripe s into rf->fd[target] (rebuild.c):
 * target is j for a rebuild (the chunk is reconstructed from the others),
 * SHADOW for a replace in place (copied from j while j can be read).
 * Caller holds rf->rw exclusively.  With verify, the chunk is compared
 * with what the target holds and rewritten (and *fixed set) only when it
 * differs.  Bytes written or -errno; *target_err (if not NULL): the
 * target's own error, when writing to it failed (the rebuild fails the
 * target for it). */
long stripe_rebuild_chunk(struct rfile *rf, uint64_t s, uint32_t j, uint32_t target, bool verify,
			  bool *fixed, int *target_err);
/* A checksummed file's fast rebuild of member lj's shard (rebuild.c's
 * windows), rf->rw held exclusively: the believed record of lj's row in
 * each stripe of [s0, s0 + ns) - the one stripe_rebuild_chunk() goes by -
 * read with one call per member of the rows: gens[x] and csum_per_row()
 * checksums at crcs + x * csum_per_row().  A generation 0: no record (the
 * row was never written), the checksums those of zero blocks.  A damaged
 * record on one member is said in the log; the others' are used.  0 or
 * -ENOMEM. */
int stripe_rows_believed(struct rfile *rf, uint32_t lj, uint64_t s0, uint32_t ns, uint64_t *gens, uint32_t *crcs);
/* Those records to the checksum file of the shard rebuilt on `target`
 * (lj, or SHADOW) in one write, as stripe_rebuild_chunk() writes them
 * one by one: none (zeros) for a row without a record, so that an older
 * one left there cannot outvote the hole.  With verify (the second
 * pass), written only when what the target holds differs.  0 or -errno
 * (said in the log: the rows keep what they had, which the other
 * members' records outvote). */
int stripe_rows_rebuilt(struct rfile *rf, uint32_t target, uint64_t s0, uint32_t ns, const uint64_t *gens,
			const uint32_t *crcs, bool verify);
/* The checksum file of the shard rebuilt on `target` (a checksummed file)
 * cut to the file's rows: none of an older file's records past its end
 * stay (the rebuild's last step, also for a file now empty).  0 or
 * -errno. */
int stripe_sums_trim(struct rfile *rf, uint32_t target);
/* The cached row records of rf let go of (its last close). */
void stripe_rows_forget(struct rfile *rf);

/*
 * Verify redundancy of every stripe against the data (offline check).
 * Returns the number of inconsistent rows (>= 0), or -errno; calls
 * report(stripe, group, members) for each bad row when report is not
 * NULL: `members` (bit j: member j) those whose chunk does not match its
 * checksum (a checksummed file), 0 when nothing says which side is
 * wrong.
 * stripe_verify_range(): stripes [s0, s1) only (the scrub, rf->rw held);
 * *unreadable (if not NULL) counts the groups with a chunk that could not
 * be read, which are compared as far as the chunks read allow (parity:
 * with every data chunk and some redundancy read, the redundancy read;
 * mirrors: the copies read, two or more) and otherwise skipped.
 */
long stripe_verify_range(struct rfile *rf, uint64_t s0, uint64_t s1,
			 void (*report)(void *ctx, uint64_t stripe, uint32_t group, uint64_t members), void *ctx,
			 uint64_t *unreadable);
/* Recompute group g of stripe s's redundancy from its data (the scrub's
 * repair; rf->rw held exclusively, the file marked dirty); mirror copies
 * take what most of them agree on.  A checksummed file's chunks that do
 * not match their checksums are rebuilt from the others (and counted on
 * their members), never the redundancy from them. */
int stripe_regen(struct rfile *rf, uint64_t s, uint32_t g);
long stripe_verify(struct rfile *rf,
		   void (*report)(void *ctx, uint64_t stripe, uint32_t group, uint64_t members),
		   void *ctx);

#endif
