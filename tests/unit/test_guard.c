/*
 * test_guard.c - unit test of src/guard.c, the guard slots that keep an
 * absent member's chunk aside during a write into a degraded stripe.
 *
 *   - a held slot is found by the next mount (file store and memory
 *     store), with its pieces' offsets, lengths and bytes; a released one
 *     is not;
 *   - a torn slot (crc) is not taken; a released one is cleared in the
 *     file itself (a later mount must not put an old chunk back);
 *   - slots a crashed run left stay reserved: a run's new holds never
 *     overwrite them until guard_replay_done();
 *   - a run holds at most half the slots at once: the next holder waits
 *     until one is released.
 *
 * Exit status 0 when everything passed, 1 otherwise.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "guard.h"

static int failures;

#define CHECK(cond, what) do { if (!(cond)) { fprintf(stderr, "FAIL: %s (line %d)\n", what, __LINE__); failures++; } } while (0)

static struct rfile *file_with_id(uint64_t id)
{
	struct rfile *rf = calloc(1, sizeof(*rf));
	rf->id = id;
	return rf;
}

/* what guard_recover() takes from st, as a fresh mount would */
static int recover(const struct guard_store *st)
{
	guard_replay_done();
	return guard_recover(st, false);
}

struct holder {
	const struct rfile *rf;
	struct guard_piece p;
	int slot;
	volatile bool done;
};

static void *hold_thread(void *arg)
{
	struct holder *h = arg;
	h->slot = guard_hold(h->rf, &h->p, 1, 0);
	h->done = true;
	return NULL;
}

int main(void)
{
	char path[] = "/tmp/raidfs-test-guard.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	unlink(path);
	uint8_t a[5000], b[300];
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)(i * 7 + 1);
	memset(b, 0xab, sizeof(b));
	struct rfile *f1 = file_with_id(0x1111), *f2 = file_with_id(0x2222);
	struct guard_store fs = { .fd = fd, .base = 8192, .nslots = GUARD_SLOTS, .stride = 16384, .durable = true };

	/* a held slot is found, with its pieces */
	guard_use(&fs);
	struct guard_piece p[2] = { { 65536, sizeof(a), a }, { 3 * 65536 + 100, sizeof(b), b } };
	int s = guard_hold(f1, p, 2, 123456789);
	CHECK(s >= 0, "hold");
	CHECK(recover(&fs) == 1 && guard_holds(0x1111) && !guard_holds(0x2222), "a held slot is found");
	/* (its bytes: read back through the store) */
	uint8_t slot[16384];
	CHECK(pread(fd, slot, sizeof(slot), 8192 + (uint64_t)s * 16384) >= (ssize_t)(GUARD_HDR + sizeof(a) + sizeof(b)),
	      "read slot");
	CHECK(!memcmp(slot + GUARD_HDR, a, sizeof(a)) && !memcmp(slot + GUARD_HDR + sizeof(a), b, sizeof(b)),
	      "the slot holds the pieces' bytes");
	uint64_t held_size;
	memcpy(&held_size, slot + 8, 8);
	CHECK(held_size == 123456789, "the slot holds the file's size (at 8)");
	/* torn: one byte of its data changed */
	uint8_t x = slot[GUARD_HDR + 17] ^ 1;
	CHECK(pwrite(fd, &x, 1, 8192 + (uint64_t)s * 16384 + GUARD_HDR + 17) == 1, "write");
	CHECK(recover(&fs) == 0, "a torn slot is not taken");
	CHECK(pwrite(fd, &slot[GUARD_HDR + 17], 1, 8192 + (uint64_t)s * 16384 + GUARD_HDR + 17) == 1, "write");
	CHECK(recover(&fs) == 1, "the slot whole again is taken");
	guard_release(s);
	uint32_t magic = 1;
	CHECK(pread(fd, &magic, 4, 8192 + (uint64_t)s * 16384) == 4 && magic == 0, "a released slot is cleared in the file");
	CHECK(recover(&fs) == 0, "a released slot is not taken");

	/* reservation: the last run's slot survives this run's holds */
	guard_replay_done();
	guard_use(&fs);
	s = guard_hold(f2, p, 1, 0);
	CHECK(s >= 0, "hold");
	/* ... a crash: the next mount */
	guard_use(&fs);
	CHECK(guard_recover(&fs, true) == 1, "the crashed run's slot is found");
	for (int i = 0; i < 2 * GUARD_SLOTS; i++) {
		int t[GUARD_SLOTS / 2];
		for (int k = 0; k < GUARD_SLOTS / 2; k++) {
			t[k] = guard_hold(f1, &p[1], 1, 0);
			CHECK(t[k] >= 0 && t[k] != s, "a new hold takes a free slot, not the reserved one");
		}
		for (int k = 0; k < GUARD_SLOTS / 2; k++)
			guard_release(t[k]);
	}
	uint32_t m2 = 0;
	CHECK(pread(fd, &m2, 4, 8192 + (uint64_t)s * 16384) == 4 && m2 == 0x31444752u,
	      "the reserved slot kept its content");
	/* the replay is over: a slot nobody put back (its file removed since)
	 * is cleared, or a later mount would put it back over newer bytes */
	guard_replay_done();
	CHECK(recover(&fs) == 0, "the replay's end clears the slots it did not put back");

	/* at most half the slots at once */
	guard_replay_done();
	guard_use(&fs);
	int t[GUARD_SLOTS / 2];
	for (int k = 0; k < GUARD_SLOTS / 2; k++)
		t[k] = guard_hold(f1, &p[1], 1, 0);
	struct holder h = { .rf = f2, .p = p[1], .slot = -1 };
	pthread_t th;
	pthread_create(&th, NULL, hold_thread, &h);
	usleep(200000);
	CHECK(!h.done, "a holder beyond half the slots waits");
	guard_release(t[0]);
	for (int i = 0; i < 100 && !h.done; i++)
		usleep(20000);
	CHECK(h.done && h.slot >= 0, "it gets a slot once one is released");
	pthread_join(th, NULL);
	guard_release(h.slot);
	for (int k = 1; k < GUARD_SLOTS / 2; k++)
		guard_release(t[k]);

	/* memory store (bbu=shm) */
	size_t ms = (size_t)GUARD_SLOTS * 16384;
	uint8_t *mem = calloc(1, ms);
	struct guard_store mst = { .fd = -1, .mem = mem, .nslots = GUARD_SLOTS, .stride = 16384 };
	guard_use(&mst);
	s = guard_hold(f2, p, 2, 0);
	CHECK(s >= 0, "hold (memory)");
	CHECK(recover(&mst) == 1 && guard_holds(0x2222), "a held slot is found (memory)");
	guard_release(s);
	CHECK(recover(&mst) == 0, "a released slot is not taken (memory)");
	/* too big for a slot: refused, not cut */
	uint8_t *big = calloc(1, 20000);
	struct guard_piece bp = { 0, 20000, big };
	CHECK(guard_hold(f1, &bp, 1, 0) < 0, "pieces larger than a slot are refused");
	guard_use(NULL);
	guard_replay_done();
	free(big);
	free(mem);
	free(f1);
	free(f2);
	close(fd);
	if (failures)
		fprintf(stderr, "test_guard: %d failure(s)\n", failures);
	else
		printf("test_guard: all passed\n");
	return failures ? 1 : 0;
}
