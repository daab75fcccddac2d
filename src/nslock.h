/*
 * nslock.h - the namespace lock (struct array's ns_lock).
 *
 * Three kinds of holders (every one, and the lock's place first in the
 * one lock order, in locks.h):
 *   shared     operations that change the namespace on the members, and
 *              opens and truncates by name (fuse.c): many at once;
 *   group      the rebuild's file threads while each opens a file and
 *              creates its shard on the new member (rebuild.c): many at
 *              once, never beside a shared holder - so they never see an
 *              operation applied to some members and not yet to others,
 *              and they do not wait for each other;
 *   exclusive  everything else that must see the namespace still.
 * A waiting exclusive or group holder goes before new shared ones (the
 * rebuild is not starved by a busy mount); when a group empties, the
 * shared holders waiting by then go first, and a group does not grow
 * while they wait (a busy rebuild does not starve the mount either).
 * Not recursive.
 */
#ifndef RAIDFS_NSLOCK_H
#define RAIDFS_NSLOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct nslock {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int shared, group;		/* holders */
	bool excl;
	int wait_shared, wait_group, wait_excl;
	uint64_t ticket;		/* of the next shared waiter */
	uint64_t pass;			/* shared waiters with a ticket below it go first */
	int passed;			/* how many of those still wait */
};

void nslock_init(struct nslock *l);
void nslock_shared(struct nslock *l);
bool nslock_try_shared(struct nslock *l);
void nslock_group(struct nslock *l);
void nslock_excl(struct nslock *l);
bool nslock_try_excl(struct nslock *l);
/* Whichever way the caller holds it. */
void nslock_unlock(struct nslock *l);

#endif
