/*
 * event.h - the array's events (layer 2, beside array.h).
 *
 * event_post() logs an event ("Fail", "DegradedArray", "RebuildStarted",
 * "ScrubFinished", ...; the list is in the README) and, when event_program
 * is set, queues
 * it for that program.  The program runs one event at a time, in order,
 * on the queue's own thread, so the thread that posts (maybe in the
 * middle of a write, holding locks) never waits for a user's script.
 * The queue holds 64 events; beyond that an event is logged but its
 * program run is dropped with a warning.
 *
 * The thread starts only after event_start(), which mount.c calls once
 * the daemon is in the background: a thread started before the fork would
 * stay behind in the parent.  Events posted before are kept and run then.
 *
 * Any thread may call event_post(); it takes only the queue's own lock
 * (a leaf: nothing is taken under it).
 */
#ifndef RAIDFS_EVENT_H
#define RAIDFS_EVENT_H

#include <stddef.h>
#include <stdint.h>

struct array;

/* the program given with -o event_program=PATH, or NULL */
extern const char *event_program;

/* Log `event` for member `member` (-1: the array) and queue it for the
 * event program. */
void event_post(struct array *a, const char *event, int member);

/* event_post() with details: `detail` is "KEY=VALUE KEY=VALUE ..." (keys
 * in lowercase letters, digits and '_', values without spaces), logged
 * with the event and given to the event program in its environment:
 * RAIDFS_EVENT_DETAIL holds the whole string and each pair is also one
 * variable RAIDFS_<KEY in uppercase> (ScrubFinished: RAIDFS_MISMATCHES=3
 * ...).  NULL or "": as event_post(). */
void event_post_detail(struct array *a, const char *event, int member, const char *detail);

/* The daemon is in the background: the event program may run now. */
void event_start(struct array *a);

/*
 * The event history, for `raidfs monitor` (ctl.c's "events" request): the
 * last EVENT_HISTORY events, each with a sequence number (1, 2, ... since
 * the daemon started) and its time, as ZED reads the kernel's zevents by
 * their id.  A reader remembers the last number it saw and asks for those
 * after it; it missed some when `*oldest` is past the one it wants next.
 * event_history() copies the held events numbered after `since` (at most
 * max, oldest first) into out and returns their count; *last gets the
 * newest number (0: none yet), *oldest the oldest held.  Takes only the
 * history's own lock (a leaf).
 */
#define EVENT_HISTORY 256
struct event_rec {
	uint64_t seq;
	int64_t time;		/* seconds since the epoch */
	int member;		/* -1: the array */
	char event[24];
	char detail[256];	/* event_post_detail()'s, cut to fit; "" none */
};
size_t event_history(uint64_t since, struct event_rec *out, size_t max, uint64_t *last, uint64_t *oldest);

#endif
