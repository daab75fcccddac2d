/*
 * nslock.c - the namespace lock (see nslock.h).
 */
#include "nslock.h"

void nslock_init(struct nslock *l)
{
	*l = (struct nslock){ 0 };
	pthread_mutex_init(&l->m, NULL);
	pthread_cond_init(&l->cv, NULL);
}

static bool shared_may(const struct nslock *l, uint64_t ticket)
{
	return !l->excl && !l->group && !l->wait_excl && (!l->wait_group || ticket < l->pass);
}

void nslock_shared(struct nslock *l)
{
	pthread_mutex_lock(&l->m);
	if (!shared_may(l, UINT64_MAX)) {
		uint64_t mine = l->ticket++;
		l->wait_shared++;
		while (!shared_may(l, mine))
			pthread_cond_wait(&l->cv, &l->m);
		l->wait_shared--;
		if (mine < l->pass)
			l->passed--;
	}
	l->shared++;
	pthread_mutex_unlock(&l->m);
}

bool nslock_try_shared(struct nslock *l)
{
	pthread_mutex_lock(&l->m);
	bool ok = shared_may(l, UINT64_MAX);
	if (ok)
		l->shared++;
	pthread_mutex_unlock(&l->m);
	return ok;
}

void nslock_group(struct nslock *l)
{
	pthread_mutex_lock(&l->m);
	l->wait_group++;
	while (l->excl || l->shared || l->wait_excl || l->passed || (l->group && l->wait_shared))
		pthread_cond_wait(&l->cv, &l->m);
	l->wait_group--;
	l->group++;
	pthread_mutex_unlock(&l->m);
}

void nslock_excl(struct nslock *l)
{
	pthread_mutex_lock(&l->m);
	l->wait_excl++;
	while (l->excl || l->shared || l->group)
		pthread_cond_wait(&l->cv, &l->m);
	l->wait_excl--;
	l->excl = true;
	pthread_mutex_unlock(&l->m);
}

bool nslock_try_excl(struct nslock *l)
{
	pthread_mutex_lock(&l->m);
	bool ok = !l->excl && !l->shared && !l->group;
	if (ok)
		l->excl = true;
	pthread_mutex_unlock(&l->m);
	return ok;
}

void nslock_unlock(struct nslock *l)
{
	pthread_mutex_lock(&l->m);
	if (l->excl) {
		l->excl = false;
	} else if (l->group) {
		if (--l->group == 0 && l->wait_shared) {
			/* the shared holders waiting now go before the next group */
			l->pass = l->ticket;
			l->passed = l->wait_shared;
		}
	} else {
		l->shared--;
	}
	if (l->wait_shared || l->wait_group || l->wait_excl)
		pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->m);
}
