/*
 * nsintent.h - namespace operations that survive a crash half done.
 *
 * A rename, unlink, rmdir, link, mkdir, symlink or mknod changes the
 * members one after the other (the primary first, fuse.c).  A daemon
 * killed in between would leave the name changed on some members only:
 * a file whose shards sit under two names reads as EIO, a stale shard is
 * left under the old name, a later create of the name fails a healthy
 * member.  So each such operation is first written down as an intent
 * record on every member in service (.raidfs/ns-intent, one slot per
 * operation in flight; format in docs/format.md), and cleared when every
 * member has it.  The next mount completes every operation still
 * recorded, on the members that did not get it (nsintent_recover()),
 * before anything is served: the operation was not acknowledged, and
 * completing it is one of the two outcomes it may have.
 *
 * Recovery judges an operation done on a member by its names alone (a
 * rename where the old name is gone, ...).  That is sound because no
 * other operation on the same names can run between an operation's last
 * member and the clearing of its record: the kernel holds the parent
 * directories' locks on the mount until the reply, which comes after.
 *
 * The record is written, not synced: it covers a crash of the daemon.  A
 * power loss of the members' machine may lose the record as it may lose
 * the operation on some members (their filesystems do not order their
 * commits with each other); `raidfs check` reports what is left then.
 */
#ifndef RAIDFS_NSINTENT_H
#define RAIDFS_NSINTENT_H

#include <stdint.h>

struct array;

enum nsi_kind {
	NSI_UNLINK = 1,		/* p1 */
	NSI_RMDIR = 2,		/* p1 */
	NSI_RENAME = 3,		/* p1 -> p2, renameat2() flags */
	NSI_LINK = 4,		/* p1 -> new name p2 */
	NSI_MAKE = 5,		/* p1: a directory, symlink, FIFO or socket made */
};

/* Before the first member changes: the record, on every member in
 * service.  Returns the slot for nsintent_end() (-1: not recorded, for
 * an array of one member or when no slot could be written; logged). */
int nsintent_begin(struct array *a, enum nsi_kind kind, const char *p1, const char *p2, unsigned flags);
/* Every member got the operation (or failed, and is out of the array). */
void nsintent_end(struct array *a, int slot);
/* Once a second (the mount's monitor): a member that joined meanwhile
 * gets its intent file emptied before anything can be recorded there. */
void nsintent_refresh(struct array *a);

/* At mount, before the dirty-file resync (resync_dirty()):
 * complete the recorded operations on the members in service (logged),
 * then empty the records. */
void nsintent_recover(struct array *a);

#endif
