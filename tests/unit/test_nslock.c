/*
 * test_nslock.c - unit test of src/nslock.c, the namespace lock.
 *
 *   - exclusion: threads of the three kinds hammer one lock; a checker
 *     inside every critical section finds no shared holder beside a
 *     group or an exclusive holder, never two exclusive holders; a
 *     second group holder gets in beside a first (the rebuild's file
 *     threads must not wait for each other);
 *   - the try forms fail exactly when the plain forms would wait;
 *   - no starvation: two group threads overlapping without a gap do not
 *     keep a shared locker out (it gets in 200 times), and a stream of
 *     shared holders does not keep a group or an exclusive locker out.
 *     A starved locker would wait for ever: alarm() ends the test then.
 *
 * Exit status 0 when everything passed, 1 otherwise.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "nslock.h"

static struct nslock L;
static int in_shared, in_group, in_excl, max_group;
static pthread_mutex_t cnt = PTHREAD_MUTEX_INITIALIZER;
static int failures;
static volatile bool stop;

static void fail(const char *what)
{
	__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
	fprintf(stderr, "FAIL: %s\n", what);
}

static void enter(int *kind)
{
	pthread_mutex_lock(&cnt);
	(*kind)++;
	if (in_excl > 1 || (in_excl && (in_shared || in_group)) || (in_shared && in_group))
		fail("two kinds of holders at once");
	if (in_group > max_group)
		max_group = in_group;
	pthread_mutex_unlock(&cnt);
}

static void leave(int *kind)
{
	pthread_mutex_lock(&cnt);
	(*kind)--;
	pthread_mutex_unlock(&cnt);
}

static void spin(int n)
{
	for (volatile int i = 0; i < n; i++)
		;
}

static void *hammer(void *arg)
{
	long kind = (long)arg;
	for (int i = 0; i < 20000; i++) {
		if (kind == 0) {
			nslock_shared(&L);
			enter(&in_shared);
			spin(200);
			leave(&in_shared);
		} else if (kind == 1) {
			nslock_group(&L);
			enter(&in_group);
			spin(2000);
			leave(&in_group);
		} else {
			if (i % 50)
				continue;
			nslock_excl(&L);
			enter(&in_excl);
			spin(500);
			leave(&in_excl);
		}
		nslock_unlock(&L);
	}
	return NULL;
}

static void *group_once(void *arg)
{
	(void)arg;
	nslock_group(&L);
	nslock_unlock(&L);
	return NULL;
}

/* two group threads, each leaving only once the other entered since it
 * began to enter itself, or waits to: a lock that let a group grow while a shared
 * locker waits would never be free of them */
static int entries[2];

static bool group_waits(void)
{
	pthread_mutex_lock(&L.m);
	bool w = L.wait_group > 0;
	pthread_mutex_unlock(&L.m);
	return w;
}

static void *group_loop(void *arg)
{
	int me = (int)(long)arg;
	while (!stop) {
		int seen = __atomic_load_n(&entries[!me], __ATOMIC_SEQ_CST);
		nslock_group(&L);
		__atomic_add_fetch(&entries[me], 1, __ATOMIC_SEQ_CST);
		while (!stop && __atomic_load_n(&entries[!me], __ATOMIC_SEQ_CST) == seen && !group_waits())
			;
		nslock_unlock(&L);
	}
	return NULL;
}

static void *shared_loop(void *arg)
{
	(void)arg;
	while (!stop) {
		nslock_shared(&L);
		spin(5000);
		nslock_unlock(&L);
	}
	return NULL;
}

int main(void)
{
	alarm(120);
	nslock_init(&L);

	/* exclusion */
	pthread_t t[7];
	long kinds[7] = { 0, 0, 0, 1, 1, 2, 2 };
	for (int i = 0; i < 7; i++)
		pthread_create(&t[i], NULL, hammer, (void *)kinds[i]);
	for (int i = 0; i < 7; i++)
		pthread_join(t[i], NULL);

	/* a second group holder gets in beside the first (a lock that made
	 * them wait would hang here) */
	nslock_group(&L);
	pthread_t second;
	pthread_create(&second, NULL, group_once, NULL);
	pthread_join(second, NULL);
	nslock_unlock(&L);

	/* try forms */
	nslock_shared(&L);
	if (nslock_try_excl(&L))
		fail("try_excl got in beside a shared holder");
	if (!nslock_try_shared(&L))
		fail("try_shared waited beside a shared holder");
	nslock_unlock(&L);
	nslock_unlock(&L);
	nslock_group(&L);
	if (nslock_try_shared(&L) || nslock_try_excl(&L))
		fail("a try form got in beside a group holder");
	nslock_unlock(&L);
	if (!nslock_try_excl(&L))
		fail("try_excl failed on a free lock");
	if (nslock_try_shared(&L) || nslock_try_excl(&L))
		fail("a try form got in beside an exclusive holder");
	nslock_unlock(&L);

	/* no starvation of a shared locker by overlapping groups */
	stop = false;
	pthread_t g[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&g[i], NULL, group_loop, (void *)(long)i);
	while (__atomic_load_n(&entries[0], __ATOMIC_SEQ_CST) < 5 || __atomic_load_n(&entries[1], __ATOMIC_SEQ_CST) < 5)
		;	/* (they take turns by now) */
	for (int i = 0; i < 200; i++) {
		nslock_shared(&L);
		nslock_unlock(&L);
	}
	stop = true;
	for (int i = 0; i < 2; i++)
		pthread_join(g[i], NULL);

	/* nor of a group or an exclusive locker by overlapping shared ones */
	stop = false;
	pthread_t s[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&s[i], NULL, shared_loop, NULL);
	usleep(10000);	/* (they overlap by now) */
	for (int i = 0; i < 200; i++) {
		nslock_group(&L);
		nslock_unlock(&L);
		nslock_excl(&L);
		nslock_unlock(&L);
	}
	stop = true;
	for (int i = 0; i < 3; i++)
		pthread_join(s[i], NULL);

	printf("%s: nslock (exclusion, try forms, no starvation; most group holders at once in the hammering: %d)\n",
	       failures ? "FAIL" : "PASS", max_group);
	return failures ? 1 : 0;
}
