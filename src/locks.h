/*
 * locks.h - every lock in raidfs: what it protects, who takes it, and the
 * order in which locks nest.  Documentation only: this header declares
 * nothing.  Other files point here instead of restating the order.
 *
 * THE ORDER
 *
 * A thread that holds a lock may take only locks further down this list
 * (a lock may be skipped, never taken in reverse).  Locks marked "leaf"
 * never have another raidfs lock taken under them, except log_lock.
 *
 *    1. c->last.lock        the preserved cache (struct cache, cache.c)
 *    2. a->ns_lock          namespace lock (struct nslock)
 *   2b. orphan_lock         a file orphaned against its last release (fuse.c)
 *    3. rf->rw              one file's reader/writer lock
 *    4. rf->log_order       one file's order of cache-log records
 *    5. tail_lock           the cache log's tail moves (cachelog.c)
 *    6. mark_lock           dirty-log marks (stripe.c)
 *    7. record_lock         size records (stripe.c)
 *    8. a->lock             member states and superblocks
 *    9. c->lock             the cache (struct cache, cache.c)
 *   9b. the node table      its rwlock (inode.c)
 *   10. table_lock          the open-file table (file.c)
 *   11. L.sync_lock         the cache log's fdatasync (cachelog.c)
 *   12. L.lock              the cache log's ring (cachelog.c)
 *   13. leaves, in any order after the above: G.lock, S.lock,
 *       rb_lock, fw.lock, w->lock, redo_lock, sc_lock, K.lock,
 *       a->left_lock, m->fault_lock, L.fault_lock, evq_lock,
 *       c->log.noted_lock, pair lock, plan_lock;
 *       then log_lock, taken under anything (every log line).
 *
 * The reconstruction planner (recon.c), the layout (layout.c) and the
 * cache's policy (cachepolicy.c) are pure and take no lock.
 *
 * The nestings that occur, each with a place that does it:
 *   c->last.lock -> the locks the mount's resync takes (those below
 *                             rf->rw: the resync's rfiles are private):
 *                             cache_monitor() holds it across
 *                             resync_dirty(), cache_replay_finish() and
 *                             cache_start() while an offline mount is
 *                             retried
 *   ns_lock   -> rf->rw       rebuild_file(), rfile_restore_shard(), the
 *                             scrub's open, fs_truncate() by name
 *   ns_lock   -> table_lock   rfile_open() from fs_open() (ll_open())
 *   ns_lock   -> orphan_lock  fs_unlink(), fs_rename(), orphan_remove()
 *   orphan_lock -> the node table  inode_orphan() in fs_unlink()
 *   the node table -> table_lock  inode_rfile() holds the open file
 *   ns_lock   -> S.lock       nsintent_begin() in every namespace operation
 *   ns_lock   -> redo_lock    rebuild_redo() from fuse.c; redo_drain()
 *   ns_lock   -> rb_lock      open_grouped() (progress), briefly
 *   ns_lock   -> a->lock      a namespace operation that fails a member
 *   rf->rw    -> rf->log_order  write_back() (wb_lock()), record_and_unlock()
 *                             (its turn taken before rf->rw goes),
 *                             lock_for_truncate()
 *   rf->rw    -> mark_lock    stripe_write_locked(), stripe_destage_line()
 *                             (stripe_mark_dirty())
 *   rf->rw    -> c->lock      cache_read(), put_range(), flush_file()
 *   rf->rw    -> a->lock      a member write error under a write
 *                             (write_failed() -> array_fail_member())
 *   rf->rw    -> G.lock       guard_absent() in write_group(), destage_range()
 *   rf->rw    -> record_lock  stripe_record_acked() (record_size() in the
 *                             destage, rfile_record_acked_all() from the
 *                             monitor)
 *   rf->log_order -> c->lock  put_range() under write_back(); lock_for_truncate();
 *                             a full log's wait (cachelog_ops.wait:
 *                             log_wait() -> wait_destage())
 *   rf->log_order -> tail_lock  a full log in put() (place_locked()) moves
 *                             its tail (set_tail())
 *   rf->log_order -> L.lock   cachelog_put_writev() from record_part(),
 *                             cachelog_put_write() from record_and_unlock()
 *   tail_lock -> a->lock      set_tail()/retire() -> array_sync_members()
 *   tail_lock -> c->lock      retire() -> cachelog_ops.needed (log_needed())
 *   tail_lock -> G.lock       retire() -> guard_stop()
 *   tail_lock -> L.sync_lock -> L.lock   set_tail() writing the header
 *   mark_lock -> a->lock      mark_dirty() -> array_note_data_write()
 *   record_lock -> a->lock    write_meta(): a member that refuses the
 *                             record is failed (array_judge_refusals())
 *   a->lock   -> table_lock   pick_primary_locked(), shadow_take_slot():
 *                             the slot_change hooks of struct array_hooks
 *                             (file.c's rfile_change_begin()/end())
 *   a->lock   -> c->lock, rb_lock, sc_lock, m->fault_lock, L.fault_lock
 *                             ctl.c cmd_status(): status_collect()
 *                             (cache_get_stats(), rebuild_get(),
 *                             scrub_get(), member_inject_describe(),
 *                             cachelog_inject_describe())
 *                             and the rendering, under a->lock
 *   c->lock   -> table_lock   rfile_hold() in note_dirty_locked(),
 *                             destage_main(), flush_all(), read_ahead()
 *   c->lock   -> L.lock       cachelog_position() in note_dirty_locked(),
 *                             log_tail() and log_needed() (the cache's
 *                             cachelog_ops.tail and .needed)
 *   L.sync_lock -> L.lock     cachelog_commit(), set_tail()
 *
 * What is deliberately NOT done (each would close a cycle):
 *   - rf->rw is never taken under c->lock: the destage threads and
 *     flush_all() drop c->lock, take rf->rw, then take c->lock again.
 *   - a->lock is never taken under table_lock: rfile_release() defers
 *     member failures (array_defer_failures()) until it lets the table
 *     lock go.
 *   - a->lock is never taken under c->lock: cache events (event_post())
 *     are sent after c->lock is dropped.
 *   - ns_lock is never taken under rf->rw: kill_setid_on_write() drops
 *     rf->rw before it takes ns_lock for the chmod.
 *   - L.lock is never held across the cache's callbacks (c->lock):
 *     place_locked() drops it before cachelog_ops.tail and .wait, and
 *     retire() calls .needed without it.
 *   - A thread that may hold ns_lock only tries it (nslock_try_excl() in
 *     missed_names_in_flight()).
 *
 * THE LOCKS
 *
 * struct array.ns_lock  (struct nslock, nslock.h; array.h)
 *   Protects: that the members' namespaces agree while someone looks at
 *   them - no operation is seen applied to some members and not others.
 *   Shared: every FUSE operation that changes names, owners, modes,
 *   times or xattrs, and open and truncate by name (fuse.c NS(): mknod,
 *   mkdir, unlink, rmdir, symlink, rename, link, chmod, chown, utimens,
 *   setxattr, removexattr, create, open, truncate without a handle);
 *   kill_setid_on_write(); an orphan's removal at the last release.
 *   Group: the rebuild's two file threads while each opens a file and
 *   settles its shard on the new member (rebuild_file()).
 *   Exclusive: the rebuild's walk where it creates or removes names on
 *   the new member (walk_entry(), drop_strays(), replace_mismatch()),
 *   its redo pass (redo_one(), redo_drain()), its end (the member goes
 *   online), a promotion or abandonment of a replacement in place
 *   (maybe_promote(), rebuild_fail_replacement()), resuming a rebuild
 *   (rebuild_resume_member()), a re-add's list of paths
 *   (readd_targets()); the scrub's open of each file; the put-back of a
 *   missing shard (rfile_restore_shard(), twice); a probe in
 *   missed_names_in_flight() (try).
 *   Phase-fair, not recursive (nslock.h).
 *
 * struct rfile.rw  (pthread_rwlock_t, file.h; glibc default: readers
 * are preferred, so a reader may take it again while a writer waits)
 *   Protects: one open file's data on the members (the stripes), its
 *   size and metadata record, its shard descriptors (rf->fd[], which a
 *   member failure or a replacement's commit changes), its damage marks.
 *   Shared: reads (cache_read(), stripe_read()), write-back writes
 *   (write_back(): the cache lines have their own lock), the destage
 *   threads (each line they write is marked busy), the read-ahead
 *   thread, the scrub's compare, getattr/chmod/chown/utimens by handle,
 *   the put-back's fill, the destage's size record (record_size()).
 *   Exclusive: write-through writes (write_through(), stripe_write()),
 *   truncate (cache_truncate(), lock_for_truncate()), fsync
 *   (stripe_fsync(), flush_file()), the rebuild of a file's windows
 *   (rebuild_file()), the scrub's repair, an open's repair of short
 *   shards (repair_shards()) and resync of a file left dirty
 *   (resync_left()), the monitor's size record (trywrlock,
 *   rfile_record_acked_all() -> stripe_record_acked()).  The mount's
 *   resync works on a private rfile (rfile_private()) nobody else sees,
 *   and takes no rf->rw.
 *
 * struct rfile.log_order  (pthread_mutex_t, file.h)
 *   Protects: that a file's cache-log records are in the order the cache
 *   took its writes (two writers of the same bytes through two hard
 *   links are not ordered by the kernel).  Taken with bbu=file only, by
 *   write_back() around its cache update and record (wb_lock()), by
 *   record_and_unlock() (a write-through write's record), and tried by
 *   lock_for_truncate().  The fdatasync (cachelog_commit()) is made
 *   after it is released.
 *
 * tail_lock  (static in set_tail(), cachelog.c)
 *   Protects: moves of the cache log's tail, one at a time (the members
 *   are synced first; a sync error is reported to one syncfs only).
 *   Taken by cachelog_advance() (destage threads, flush_all()),
 *   cachelog_reset() (write_through(), without_log()), and
 *   place_locked() (put()) when the log is full.
 *
 * mark_lock  (static, stripe.c)
 *   Protects: the making of a file's dirty-log marks (rf->marked,
 *   rf->cmarked and the links), so one mark is made once and st_nlink
 *   (stripe_names()) never counts a half-made one.  Taken by
 *   stripe_mark_dirty(), stripe_mark_cached(), mark_unguarded(),
 *   stripe_names(), stripe_publish_shard().
 *
 * struct array.lock  (pthread_mutex_t, array.h)
 *   Protects: member states (written under it, read atomically without
 *   it), the superblock in memory and its writes to every member
 *   (array_write_superblocks_locked(): held across their fsyncs), a
 *   slot's directory descriptor and path, fail_reason, the primary
 *   member, the spare table.  Taken by array_fail_member(),
 *   note_write() (absent members recorded as faulty), install_member(),
 *   the shadow functions, array_member_rebuilt(), array_remove_member(),
 *   the spare functions, member_vanished_now() (monitor.c), and ctl.c's
 *   cmd_status() (status_collect(), then the text or JSON rendering,
 *   under it).  array.c calls the hooks of struct array_hooks without
 *   it, except the slot_change pair from pick_primary_locked() and
 *   shadow_take_slot() (a->lock -> table_lock above).
 *
 * c->lock  (struct cache's `lock`; the one cache is cache_one, cache.c)
 *   Protects: everything in struct cache but what says otherwise: the
 *   lines (hash, free/clean/dirty lists, valid and dirty bitmaps, pins,
 *   busy flags), counters, the policy (c->pol: the free-space count of
 *   admit()) and battery state, the read-ahead queue, the log pins of
 *   truncates in flight, rf->cache_dirty.  Condition variables on it:
 *   c->work (destage threads wait for work), c->space (writers wait for
 *   a free line or for back-pressure to end), c->idle (a line is no
 *   longer busy), c->ra.cond (read-ahead queue).  Taken by admit(),
 *   put_range() and the other helpers of cache_write(), cache_read(),
 *   the destage threads, the read-ahead thread, cache_truncate(),
 *   cache_fsync(), the cache log's callbacks (log_tail(), log_needed()),
 *   the status and control functions.  Dropped during member I/O.
 *
 * c->last.lock  (struct cache, cache.c)
 *   Protects: what the last run's cache left (the preserved cache) while
 *   it is replayed or discarded, one at a time, and c->off.closing.
 *   Taken by cache_monitor() (the monitor's retry of an offline mount,
 *   held across resync_dirty(), cache_replay_finish() and cache_start()),
 *   the discard (`raidfs cache discard`), and cache_close().  First in
 *   the order: nothing else is held when it is taken.
 *
 * record_lock  (the static `lock` in stripe_record_acked(), stripe.c)
 *   Protects: one size record at a time (the destage threads hold rf->rw
 *   shared only).  Under it write_meta() may fail a member that refuses
 *   the record (a->lock).
 *
 * table_lock  (static, file.c)
 *   Protects: the open-file table (rfile keys, hash chains), rf->refs,
 *   the close slots, key_epoch and key_changing (with key_cv: opens wait
 *   while a primary change or a replacement's commit keys the table
 *   again).  Taken by rfile_open(), rfile_create(), rfile_hold(),
 *   rfile_release() (which writes the last metadata record under it),
 *   rfile_change_begin()/end(), collect_open(), rfile_path_of(),
 *   rfile_lookup_size(), rfile_in_use(), rfile_epoch() (while a change
 *   is under way).
 *
 * L.sync_lock, L.lock  (the cache log singleton, cachelog.c)
 *   L.lock protects the ring: head, tail, sequence number, the header's
 *   writes; records are appended under it (put()).  L.sync_lock makes
 *   the group commit: one fdatasync covers every record written before
 *   it (cachelog_commit()); the header's fdatasync in set_tail() takes
 *   it too, and the log's failure is set under it (the kernel reports a
 *   write-back error once per open file).
 *
 * Leaves (no raidfs lock is taken under them but log_lock):
 *   G.lock (guard.c)        the guard slots in use and reserved; G.freed:
 *                           a writer waits for a free slot.  Taken by
 *                           guard_absent() (via the slot functions) and
 *                           guard_stop(); a slot's write, clear and
 *                           fdatasync run outside it.
 *   S.lock (nsintent.c)     the intent slots in use and their files;
 *                           S.freed: an operation waits for a slot.
 *   rb_lock (rebuild.c)     the rebuild's state and progress (info),
 *                           rates, pause, queued starts; rb_cond: a start
 *                           waits for the last rebuild's end
 *                           (wait_ending()).
 *   fw.lock (rebuild.c)     the file worker's queue; fw.cv.
 *   w->lock (rebuild.c)     struct walk: the files the first pass rebuilt
 *                           in full, a re-add's resynced paths.
 *   redo_lock (rebuild.c)   the redo queue and .raidfs/rebuild-redo.
 *   sc_lock (scrub.c)       the scrub's state and progress.
 *   K.lock (fuse.c)         the queue of notices for the kernel.
 *   a->left_lock (array.h)  the files the mount's resync left dirty.
 *   m->fault_lock (array.h, member.c)  one member's injected faults.
 *   L.fault_lock (cachelog.c)  the cache log's injected faults.
 *   evq_lock (event.c)      the event queue; evq_cond wakes the event
 *                           thread.
 *   c->log.noted_lock (log_noted(), cache.c)  the note of the cache log
 *                           on the members, made once.
 *   pair lock (pair.c)      the helper thread's job; conditions go, done.
 *   plan_lock (isal-glue/parity.c)  the cache of decode plans.
 *   log_lock (util.c)       the log sink; taken under any lock.
 *
 * FILE LOCKS ON MEMBERS
 *
 * Each member directory is locked with flock(LOCK_EX | LOCK_NB)
 * (array_lock_dir()) by the raidfs that uses it: at assembly (a mount,
 * or an offline `raidfs check`), and when a directory joins as a spare,
 * a replacement or a re-added member (array_check_new_dir(),
 * install_member()).  A second raidfs on the same members is refused
 * (EBUSY).  The lock goes when the directory is closed (array_close())
 * or leaves the array (retire_fd_locked(), which unlocks it but keeps it
 * open until the unmount).  It is advisory: it keeps raidfs from itself,
 * not other programs.
 *
 * NOT LOCKS
 *
 * Member states, rf->size, rf->acked, rf->reserved, rf->wgen,
 * rf->sync_end, rf->unlogged, the member counters and the array's
 * primary are read (and some raised) with atomics; each field's comment
 * in its header says which.
 */
#ifndef RAIDFS_LOCKS_H
#define RAIDFS_LOCKS_H
#endif
