/*
 * test_event.c - unit test of the event history (src/event.c) that
 * `raidfs monitor` reads through the control socket's "events SINCE":
 *
 *   - before any event: last 0, nothing to read;
 *   - events are numbered 1, 2, ... in the order posted, with their
 *     member (-1 for the array), name and time;
 *   - since = N gives the events after N, oldest first, at most `max`;
 *     since = the last gives none;
 *   - past EVENT_HISTORY events the oldest are dropped: `oldest` says the
 *     first still held, a reader behind it gets those held (and can tell
 *     how many it missed: oldest - since - 1), each with the right name
 *     across the ring's wrap;
 *   - threads posting at once lose no number and repeat none.
 *
 * Exit status 0 when everything passed, 1 otherwise.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array.h"
#include "event.h"
#include "util.h"

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "FAIL (line %d): ", __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); failures++; } } while (0)

static struct array *arr;
static struct event_rec rec[EVENT_HISTORY + 8];

/* post event "E<n>" for member n % 7 - 1 */
static void post(unsigned n)
{
	char name[24];
	snprintf(name, sizeof(name), "E%u", n);
	event_post(arr, name, (int)(n % 7) - 1);
}

static bool is_event(const struct event_rec *r, uint64_t seq)
{
	char name[24];
	snprintf(name, sizeof(name), "E%u", (unsigned)seq);
	return r->seq == seq && !strcmp(r->event, name) && r->member == (int)(seq % 7) - 1;
}

static void *poster(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++)
		event_post(arr, "Concurrent", 0);
	return NULL;
}

int main(void)
{
	uint64_t last, oldest;
	arr = calloc(1, sizeof(*arr));
	if (!arr || log_open("/dev/null") < 0)
		return 1;
	snprintf(arr->mountpoint, sizeof(arr->mountpoint), "/test/mnt");

	CHECK(event_history(0, rec, EVENT_HISTORY, &last, &oldest) == 0 && last == 0, "empty: last %llu",
	      (unsigned long long)last);

	time_t t0 = time(NULL);
	for (unsigned n = 1; n <= 10; n++)
		post(n);
	size_t got = event_history(0, rec, EVENT_HISTORY, &last, &oldest);
	CHECK(got == 10 && last == 10 && oldest == 1, "10 posted: got %zu last %llu oldest %llu", got,
	      (unsigned long long)last, (unsigned long long)oldest);
	for (size_t i = 0; i < got; i++) {
		CHECK(is_event(&rec[i], i + 1), "event %zu: seq %llu '%s' member %d", i + 1,
		      (unsigned long long)rec[i].seq, rec[i].event, rec[i].member);
		CHECK(rec[i].time >= t0 && rec[i].time <= time(NULL) + 1, "event %zu: time %lld", i + 1,
		      (long long)rec[i].time);
	}
	got = event_history(7, rec, EVENT_HISTORY, &last, &oldest);
	CHECK(got == 3 && is_event(&rec[0], 8) && is_event(&rec[2], 10), "since 7: got %zu", got);
	got = event_history(2, rec, 4, &last, &oldest);
	CHECK(got == 4 && is_event(&rec[0], 3) && is_event(&rec[3], 6), "since 2, max 4: got %zu", got);
	CHECK(event_history(10, rec, EVENT_HISTORY, &last, &oldest) == 0 && last == 10, "since the last: none");
	CHECK(event_history(0, rec, 0, &last, &oldest) == 0 && last == 10, "max 0: only the numbers");

	/* the ring wraps: 10 + EVENT_HISTORY + 5 posted */
	unsigned total = 10 + EVENT_HISTORY + 5;
	for (unsigned n = 11; n <= total; n++)
		post(n);
	got = event_history(3, rec, EVENT_HISTORY + 8, &last, &oldest);
	CHECK(last == total && oldest == total - EVENT_HISTORY + 1, "wrapped: last %llu oldest %llu",
	      (unsigned long long)last, (unsigned long long)oldest);
	CHECK(got == EVENT_HISTORY, "a reader behind the ring gets the %d held, not %zu", EVENT_HISTORY, got);
	for (size_t i = 0; i < got; i++)
		CHECK(is_event(&rec[i], oldest + i), "held %zu: seq %llu '%s'", i, (unsigned long long)rec[i].seq,
		      rec[i].event);
	CHECK(oldest - 3 - 1 == total - EVENT_HISTORY - 3, "missed count");
	got = event_history(total - 2, rec, EVENT_HISTORY, &last, &oldest);
	CHECK(got == 2 && is_event(&rec[0], total - 1) && is_event(&rec[1], total), "the newest two across the wrap");

	/* threads posting at once */
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, poster, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	got = event_history(0, rec, EVENT_HISTORY, &last, &oldest);
	CHECK(last == total + 4000 && got == EVENT_HISTORY, "4 x 1000 concurrent: last %llu",
	      (unsigned long long)last);
	for (size_t i = 0; i < got; i++)
		CHECK(rec[i].seq == oldest + i && !strcmp(rec[i].event, "Concurrent"), "concurrent %zu: seq %llu '%s'", i,
		      (unsigned long long)rec[i].seq, rec[i].event);

	free(arr);
	if (failures)
		fprintf(stderr, "test_event: %d failure%s\n", failures, failures == 1 ? "" : "s");
	else
		printf("test_event: all passed\n");
	return failures != 0;
}
