/*
 * pair.c - the helper thread of pair_run() (see pair.h).  Started at the
 * first use, it lives as long as the daemon and runs one job at a time.
 * A fork does not take it along (the mount's replay can use it before the
 * daemon forks into the background): the child starts its own.
 */
#include <pthread.h>
#include <stdbool.h>

#include "pair.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER, done = PTHREAD_COND_INITIALIZER;
static void (*job_fn)(void *, int);
static void *job_arg;
static bool started, busy, has_job;

/* In the child of a fork: no helper thread, no job, nobody waiting. */
static void forked_child(void)
{
	started = busy = has_job = false;
	pthread_mutex_init(&lock, NULL);
	pthread_cond_init(&go, NULL);
	pthread_cond_init(&done, NULL);
}

static void *helper_main(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&lock);
	for (;;) {
		while (!has_job)
			pthread_cond_wait(&go, &lock);
		pthread_mutex_unlock(&lock);
		job_fn(job_arg, 1);
		pthread_mutex_lock(&lock);
		has_job = false;
		pthread_cond_signal(&done);
	}
	return NULL;
}

void pair_run(void (*fn)(void *arg, int t), void *arg)
{
	pthread_mutex_lock(&lock);
	if (!started) {
		static bool registered;
		if (!registered)
			registered = pthread_atfork(NULL, NULL, forked_child) == 0;
		pthread_t t;
		started = pthread_create(&t, NULL, helper_main, NULL) == 0;
		if (started)
			pthread_detach(t);
	}
	bool use = started && !busy;
	if (use) {
		busy = true;
		job_fn = fn;
		job_arg = arg;
		has_job = true;
		pthread_cond_signal(&go);
	}
	pthread_mutex_unlock(&lock);
	fn(arg, 0);
	if (!use) {
		fn(arg, 1);
		return;
	}
	pthread_mutex_lock(&lock);
	while (has_job)
		pthread_cond_wait(&done, &lock);
	busy = false;
	pthread_mutex_unlock(&lock);
}
