/*
 * event.c - the event queue: every state change of the array is logged
 * and, with -o event_program=PATH, handed to that program as
 * `PATH EVENT MOUNTPOINT [MEMBER]` (as mdadm --monitor's PROGRAM); the
 * last events are kept, numbered, for `raidfs monitor` (event_history()).
 * See event.h for the contract.
 */
#include "event.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "util.h"

const char *event_program;

/*
 * Events run the event program one at a time, in order, from their own
 * thread: the thread that fails a member may be in the middle of a write
 * and must not wait for a user's script.
 */
#define EVQ 64
static struct { char event[24]; int member; } evq[EVQ];
static unsigned evq_head, evq_tail;
static pthread_mutex_t evq_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t evq_cond = PTHREAD_COND_INITIALIZER;
static bool evq_thread_started;

/* Events of the mount itself are queued until the daemon is in the
 * background (event_start()): a thread started before the fork
 * would stay behind in the parent. */
static bool evq_may_start;

static void *event_thread(void *arg);

static void event_thread_start_locked(struct array *a)
{
	if (evq_thread_started || !evq_may_start)
		return;
	pthread_t t;
	if (pthread_create(&t, NULL, event_thread, a) == 0) {
		pthread_detach(t);
		evq_thread_started = true;
	}
}

static void *event_thread(void *arg)
{
	struct array *a = arg;
	for (;;) {
		pthread_mutex_lock(&evq_lock);
		while (evq_head == evq_tail)
			pthread_cond_wait(&evq_cond, &evq_lock);
		char event[24], mem[16] = "";
		snprintf(event, sizeof(event), "%s", evq[evq_tail % EVQ].event);
		if (evq[evq_tail % EVQ].member >= 0)
			snprintf(mem, sizeof(mem), "%d", evq[evq_tail % EVQ].member);
		evq_tail++;
		pthread_mutex_unlock(&evq_lock);
		pid_t pid = fork();
		if (pid == 0) {
			execl(event_program, event_program, event,
			      a->mountpoint, mem, (char *)NULL);
			_exit(127);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	return NULL;
}

/* The history (event.h): a ring of the last EVENT_HISTORY events. */
static struct event_rec evh[EVENT_HISTORY];
static uint64_t evh_last;
static pthread_mutex_t evh_lock = PTHREAD_MUTEX_INITIALIZER;

static void history_put(const char *event, int member)
{
	pthread_mutex_lock(&evh_lock);
	struct event_rec *r = &evh[evh_last % EVENT_HISTORY];
	r->seq = ++evh_last;
	r->time = (int64_t)time(NULL);
	r->member = member;
	snprintf(r->event, sizeof(r->event), "%s", event);
	pthread_mutex_unlock(&evh_lock);
}

size_t event_history(uint64_t since, struct event_rec *out, size_t max, uint64_t *last, uint64_t *oldest)
{
	pthread_mutex_lock(&evh_lock);
	*last = evh_last;
	*oldest = evh_last > EVENT_HISTORY ? evh_last - EVENT_HISTORY + 1 : 1;
	uint64_t from = since + 1 > *oldest ? since + 1 : *oldest;
	size_t n = 0;
	for (uint64_t s = from; s <= evh_last && n < max; s++)
		out[n++] = evh[(s - 1) % EVENT_HISTORY];
	pthread_mutex_unlock(&evh_lock);
	return n;
}

void event_post(struct array *a, const char *event, int member)
{
	history_put(event, member);
	char mem[16] = "";
	if (member >= 0)
		snprintf(mem, sizeof(mem), "%d", member);
	log_info("event %s%s%s on %s", event, member >= 0 ? " member " : "", mem, a->mountpoint);
	if (!event_program)
		return;
	pthread_mutex_lock(&evq_lock);
	event_thread_start_locked(a);
	if (evq_head - evq_tail < EVQ) {
		snprintf(evq[evq_head % EVQ].event, sizeof(evq[0].event), "%s", event);
		evq[evq_head % EVQ].member = member;
		evq_head++;
		pthread_cond_signal(&evq_cond);
	} else {
		log_warn("event queue full: event program not run for %s", event);
	}
	pthread_mutex_unlock(&evq_lock);
}

void event_start(struct array *a)
{
	pthread_mutex_lock(&evq_lock);	/* events of the mount, before the fork */
	evq_may_start = true;
	if (event_program && evq_head != evq_tail)
		event_thread_start_locked(a);
	pthread_mutex_unlock(&evq_lock);
}
