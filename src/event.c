/*
 * event.c - the event queue: every state change of the array is logged
 * and, with -o event_program=PATH, handed to that program as
 * `PATH EVENT MOUNTPOINT [MEMBER]` (as mdadm --monitor's PROGRAM); the
 * last events are kept, numbered, for `raidfs monitor` (event_history()).
 * See event.h for the contract.
 */
#include "event.h"

#include <ctype.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
#define EV_DETAIL 256
static struct { char event[24]; int member; char detail[EV_DETAIL]; } evq[EVQ];
extern char **environ;
static unsigned evq_head, evq_tail;
static pthread_mutex_t evq_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t evq_cond = PTHREAD_COND_INITIALIZER;
static bool evq_thread_started;

/* Events of the mount itself are queued until the daemon is in the
 * background (event_start()): a thread started before the fork
 * would stay behind in the parent. */
static bool evq_may_start;
/* the event program's umask: the daemon's before mount.c cleared it */
static mode_t child_umask = 022;

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

/* The event program's environment: ours, then RAIDFS_EVENT_DETAIL and a
 * RAIDFS_<KEY> per pair of `detail`.  Built before the fork (the child of
 * a threaded process may not allocate).  NULL when out of memory. */
static char **detail_env(const char *detail)
{
	size_t n = 0, pairs = 1;
	while (environ[n])
		n++;
	for (const char *p = detail; *p; p++)
		pairs += *p == ' ';
	char **env = calloc(n + pairs + 2, sizeof(*env));
	if (!env)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "RAIDFS_", 7))
			env[k++] = strdup(environ[i]);
	size_t len = strlen("RAIDFS_EVENT_DETAIL=") + strlen(detail) + 1;
	if ((env[k] = malloc(len)))
		snprintf(env[k++], len, "RAIDFS_EVENT_DETAIL=%s", detail);
	char copy[EV_DETAIL], *save = NULL;
	snprintf(copy, sizeof(copy), "%s", detail);
	for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(w, '=');
		if (!eq || eq == w || !(env[k] = malloc(strlen(w) + 8)))
			continue;
		char *o = env[k] + sprintf(env[k], "RAIDFS_");
		k++;
		for (const char *c = w; c < eq; c++)
			*o++ = (char)toupper((unsigned char)*c);
		strcpy(o, eq);
	}
	for (size_t i = 0; i < k; i++)
		if (!env[i]) {	/* (a strdup that failed: leave it out) */
			memmove(&env[i], &env[i + 1], (k - i) * sizeof(*env));
			k--;
			i--;
		}
	env[k] = NULL;
	return env;
}

static void env_free(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

static void *event_thread(void *arg)
{
	struct array *a = arg;
	for (;;) {
		pthread_mutex_lock(&evq_lock);
		while (evq_head == evq_tail)
			pthread_cond_wait(&evq_cond, &evq_lock);
		char event[24], mem[16] = "", detail[EV_DETAIL];
		snprintf(event, sizeof(event), "%s", evq[evq_tail % EVQ].event);
		snprintf(detail, sizeof(detail), "%s", evq[evq_tail % EVQ].detail);
		if (evq[evq_tail % EVQ].member >= 0)
			snprintf(mem, sizeof(mem), "%d", evq[evq_tail % EVQ].member);
		evq_tail++;
		pthread_mutex_unlock(&evq_lock);
		char **env = detail[0] ? detail_env(detail) : NULL;
		pid_t pid = fork();
		if (pid == 0) {
			umask(child_umask);
			if (env)
				execve(event_program, (char *[]){ (char *)event_program, event, a->mountpoint,
								   mem, NULL }, env);
			else
				execl(event_program, event_program, event, a->mountpoint, mem, (char *)NULL);
			_exit(127);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
		env_free(env);
	}
	return NULL;
}

/* The history (event.h): a ring of the last EVENT_HISTORY events. */
static struct event_rec evh[EVENT_HISTORY];
static uint64_t evh_last;
static pthread_mutex_t evh_lock = PTHREAD_MUTEX_INITIALIZER;

static void history_put(const char *event, int member, const char *detail)
{
	pthread_mutex_lock(&evh_lock);
	struct event_rec *r = &evh[evh_last % EVENT_HISTORY];
	r->seq = ++evh_last;
	r->time = (int64_t)time(NULL);
	r->member = member;
	snprintf(r->event, sizeof(r->event), "%s", event);
	snprintf(r->detail, sizeof(r->detail), "%s", detail);
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

void event_post_detail(struct array *a, const char *event, int member, const char *detail)
{
	char mem[16] = "";
	if (!detail)
		detail = "";
	history_put(event, member, detail);
	if (member >= 0)
		snprintf(mem, sizeof(mem), "%d", member);
	log_info("event %s%s%s on %s%s%s", event, member >= 0 ? " member " : "", mem, a->mountpoint,
		 detail[0] ? ": " : "", detail);
	if (!event_program)
		return;
	pthread_mutex_lock(&evq_lock);
	event_thread_start_locked(a);
	if (evq_head - evq_tail < EVQ) {
		snprintf(evq[evq_head % EVQ].event, sizeof(evq[0].event), "%s", event);
		snprintf(evq[evq_head % EVQ].detail, sizeof(evq[0].detail), "%s", detail);
		evq[evq_head % EVQ].member = member;
		evq_head++;
		pthread_cond_signal(&evq_cond);
	} else {
		log_warn("event queue full: event program not run for %s", event);
	}
	pthread_mutex_unlock(&evq_lock);
}

void event_post(struct array *a, const char *event, int member)
{
	event_post_detail(a, event, member, NULL);
}

void event_start(struct array *a)
{
	child_umask = umask(022);	/* (the daemon clears its own next: mount.c) */
	umask(child_umask);
	pthread_mutex_lock(&evq_lock);	/* events of the mount, before the fork */
	evq_may_start = true;
	if (event_program && evq_head != evq_tail)
		event_thread_start_locked(a);
	pthread_mutex_unlock(&evq_lock);
}
