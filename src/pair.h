/*
 * pair.h - one piece of work on two threads: the caller's and a helper
 * thread the whole daemon shares (the machine raidfs targets has two
 * cores; a full-stripe write and a rebuild window each use both).
 */
#ifndef RAIDFS_PAIR_H
#define RAIDFS_PAIR_H

/*
 * fn(arg, 0) on the calling thread and fn(arg, 1) on the helper at the
 * same time; when the helper is busy (another caller, or this is the
 * helper itself), fn(arg, 1) runs here after fn(arg, 0).  Returns when
 * both have returned.  fn(arg, t) does share t of the work, or takes
 * pieces from a counter in arg until none are left.
 */
void pair_run(void (*fn)(void *arg, int t), void *arg);

#endif
