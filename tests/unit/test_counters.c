/*
 * test_counters.c - unit test of the per-member error counters:
 * src/counters.c (the `.raidfs/counters` file, the threshold, the
 * numbers status prints) and the array's side of them (src/array.c) on a
 * real array assembled from temporary directories, without a mount.
 *
 *   - the file is as docs/format.md says ("Error counters"), decodes to
 *     what was encoded (also the largest values), and is refused when cut
 *     at any length or with any byte changed; a line it does not know is
 *     skipped;
 *   - counters_write() replaces it atomically (no temporary file left),
 *     counters_read() says ENOENT for a member without one and EINVAL for
 *     a damaged one;
 *   - counters_over_threshold(): 0 never fails, N fails at N and above;
 *   - counters_nicenum() prints as zpool does;
 *   - array_note_cksum_error(): below the threshold the member stays
 *     online with its count and repaired bytes; at the threshold it is
 *     failed with the reason "N checksum errors (threshold N...)" and the
 *     events ChecksumErrors, Fail, DegradedArray reach the event program
 *     in that order; a threshold of 0 never fails one;
 *   - array_member_io_error() feeds READ and WRITE; array_counters_clear()
 *     zeroes one member;
 *   - the counters survive array_close() and a new array_assemble().
 *
 * Exit status 0 when everything passed, 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "counters.h"
#include "event.h"
#include "parity.h"
#include "util.h"

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "FAIL (line %d): ", __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); failures++; } } while (0)

static char dir[256];

static bool same(const struct member_counters *x, const struct member_counters *y)
{
	return x->read_errors == y->read_errors && x->write_errors == y->write_errors &&
	       x->cksum_errors == y->cksum_errors && x->repaired_bytes == y->repaired_bytes;
}

static void test_format(void)
{
	struct member_counters c = { 3, 1, 7, 65536 }, d;
	char buf[COUNTERS_MAX_BYTES];
	size_t n = counters_encode(&c, buf, sizeof(buf));
	const char *want_head = "raidfs-counters 1\nread_errors 3\nwrite_errors 1\ncksum_errors 7\nrepaired_bytes 65536\n";
	CHECK(n > strlen(want_head) && !memcmp(buf, want_head, strlen(want_head)), "encoded: %.*s", (int)n, buf);
	char crcline[32];
	snprintf(crcline, sizeof(crcline), "crc %08x\n", parity_crc32(0, buf, strlen(want_head)));
	CHECK(n == strlen(want_head) + strlen(crcline) && !memcmp(buf + strlen(want_head), crcline, strlen(crcline)),
	      "the crc line: %.*s", (int)n, buf);
	CHECK(counters_decode(buf, n, &d) == 0 && same(&c, &d), "round trip");

	struct member_counters big = { UINT64_MAX, UINT64_MAX - 1, 1ull << 63, 12345678901234567890ull };
	n = counters_encode(&big, buf, sizeof(buf));
	CHECK(n > 0 && n <= COUNTERS_MAX_BYTES, "largest values fit (%zu bytes)", n);
	CHECK(counters_decode(buf, n, &d) == 0 && same(&big, &d), "largest values round trip");

	/* cut at every length, every byte changed: refused, *c untouched */
	n = counters_encode(&c, buf, sizeof(buf));
	struct member_counters keep = { 9, 9, 9, 9 };
	for (size_t cut = 0; cut < n; cut++) {
		d = keep;
		CHECK(counters_decode(buf, cut, &d) == -EINVAL && same(&d, &keep), "cut at %zu taken", cut);
	}
	for (size_t i = 0; i < n; i++) {
		char b2[COUNTERS_MAX_BYTES];
		memcpy(b2, buf, n);
		b2[i] ^= 0x04;
		d = keep;
		CHECK(counters_decode(b2, n, &d) == -EINVAL && same(&d, &keep), "byte %zu changed, taken", i);
	}
	/* a later raidfs's line is skipped when the crc covers it */
	char later[COUNTERS_MAX_BYTES];
	int l = snprintf(later, sizeof(later),
			 "raidfs-counters 1\nread_errors 1\nwrite_errors 2\nslow_ios 44\ncksum_errors 3\nrepaired_bytes 4\n");
	l += snprintf(later + l, sizeof(later) - l, "crc %08x\n", parity_crc32(0, later, l));
	struct member_counters w = { 1, 2, 3, 4 };
	CHECK(counters_decode(later, l, &d) == 0 && same(&d, &w), "a line it does not know is not skipped");
	/* a field missing (crc right): refused */
	l = snprintf(later, sizeof(later), "raidfs-counters 1\nread_errors 1\nwrite_errors 2\ncksum_errors 3\n");
	l += snprintf(later + l, sizeof(later) - l, "crc %08x\n", parity_crc32(0, later, l));
	CHECK(counters_decode(later, l, &d) == -EINVAL, "a file without repaired_bytes taken");
	/* a value past 2^64: refused */
	l = snprintf(later, sizeof(later),
		     "raidfs-counters 1\nread_errors 18446744073709551616\nwrite_errors 2\ncksum_errors 3\nrepaired_bytes 4\n");
	l += snprintf(later + l, sizeof(later) - l, "crc %08x\n", parity_crc32(0, later, l));
	CHECK(counters_decode(later, l, &d) == -EINVAL, "a value past 2^64 taken");
}

static void test_file(void)
{
	char m[300];
	snprintf(m, sizeof(m), "%s/file", dir);
	mkdir(m, 0700);
	int fd = open(m, O_RDONLY | O_DIRECTORY);
	struct member_counters c = { 1, 2, 3, 4 }, d = { 7, 7, 7, 7 }, zero = { 0 };
	CHECK(counters_read(fd, &d) == -ENOENT && same(&d, &zero), "a member without .raidfs: not ENOENT");
	CHECK(counters_write(fd, &c) == -ENOENT, "written without .raidfs");
	mkdirat(fd, ".raidfs", 0700);
	CHECK(counters_write(fd, &c) == 0, "write");
	CHECK(counters_read(fd, &d) == 0 && same(&c, &d), "read back");
	CHECK(faccessat(fd, COUNTERS_TMP, F_OK, 0) < 0, "the temporary file is left");
	c.cksum_errors = 100;
	CHECK(counters_write(fd, &c) == 0 && counters_read(fd, &d) == 0 && same(&c, &d), "replaced");
	/* damaged: EINVAL, zeros */
	int f = openat(fd, COUNTERS_FILE, O_WRONLY);
	CHECK(f >= 0 && pwrite(f, "X", 1, 20) == 1, "damage it");
	close(f);
	CHECK(counters_read(fd, &d) == -EINVAL && same(&d, &zero), "a damaged file read");
	close(fd);
}

static void test_threshold(void)
{
	CHECK(!counters_over_threshold(0, 0) && !counters_over_threshold(UINT64_MAX, 0), "threshold 0 fails a member");
	CHECK(!counters_over_threshold(0, 1) && counters_over_threshold(1, 1) && counters_over_threshold(2, 1),
	      "threshold 1");
	CHECK(!counters_over_threshold(49, 50) && counters_over_threshold(50, 50) && counters_over_threshold(51, 50),
	      "threshold 50");
	CHECK(counters_over_threshold(UINT64_MAX, UINT32_MAX) && !counters_over_threshold(UINT32_MAX - 1ull, UINT32_MAX),
	      "threshold UINT32_MAX");
}

static void test_nicenum(void)
{
	static const struct { uint64_t v; const char *s; } t[] = {
		{ 0, "0B" }, { 1, "1B" }, { 512, "512B" }, { 1023, "1023B" }, { 1024, "1K" }, { 4096, "4K" },
		{ 1536, "1.50K" }, { 65536, "64K" }, { 100 * 1024 + 512, "100K" }, { 15 * 1024 + 512, "15.5K" },
		{ 1ull << 20, "1M" }, { 3ull << 29, "1.50G" }, { 1ull << 40, "1T" }, { UINT64_MAX, "16.0E" },
	};
	char buf[16];
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		CHECK(!strcmp(counters_nicenum(t[i].v, buf, sizeof(buf)), t[i].s), "%llu: '%s', not '%s'",
		      (unsigned long long)t[i].v, buf, t[i].s);
}

/* ---------------------------------------------------------- on an array */

#define W 5
static char mpath[W][300], *mp[W], events[300];

static int assemble(struct array *a)
{
	char err[1024];
	int r;
	/* (an event program being started holds the last array's member
	 * directories - and their locks - from its fork until its exec:
	 * a loaded machine can stretch that; a second later they are free) */
	for (int i = 0; i < 50; i++) {
		memset(a, 0, sizeof(*a));
		snprintf(a->mountpoint, sizeof(a->mountpoint), "%s/mnt", dir);
		r = array_assemble(a, mp, W, true, err, sizeof(err));
		if (r != -EINVAL || !strstr(err, "in use by another running raidfs"))
			break;
		usleep(100000);
	}
	CHECK(r == 0, "assemble: %s", err);
	return r;
}

/* the event program's output once it holds `lines` lines (5 s at most) */
static void events_wait(char *buf, size_t len, int lines)
{
	for (int i = 0; i < 500; i++) {
		int fd = open(events, O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : 0;
		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = '\0';
		int nl = 0;
		for (char *p = buf; *p; p++)
			nl += *p == '\n';
		if (nl >= lines)
			return;
		util_sleep_ms(10);
	}
}

static void test_array(void)
{
	for (int i = 0; i < W; i++) {
		snprintf(mpath[i], sizeof(mpath[i]), "%s/d%d", dir, i);
		mkdir(mpath[i], 0700);
		mp[i] = mpath[i];
	}
	struct create_opts o = { .level = LEVEL_RAID6, .chunk = 4096, .name = "ct" };
	if (array_create(&o, mp, W) < 0) {
		CHECK(0, "array_create");
		return;
	}
	static struct array arr;
	struct array *a = &arr;
	if (assemble(a))
		return;

	/* the event program: one line per event */
	char prog[300];
	snprintf(prog, sizeof(prog), "%s/ev.sh", dir);
	snprintf(events, sizeof(events), "%s/events", dir);
	FILE *f = fopen(prog, "w");
	fprintf(f, "#!/bin/sh\necho \"$1 $3\" >> '%s'\n", events);
	fclose(f);
	chmod(prog, 0700);
	event_program = prog;
	event_start(a);

	array_cksum_error_threshold = 5;
	for (int i = 0; i < 4; i++)
		array_note_cksum_error(a, 1, 4096);
	CHECK(member_online(a, 1), "member 1 failed below the threshold");
	CHECK(a->m[1].cksum_errors == 4 && a->m[1].repaired_bytes == 4 * 4096, "member 1: %llu checksum errors, %llu bytes",
	      (unsigned long long)a->m[1].cksum_errors, (unsigned long long)a->m[1].repaired_bytes);
	array_note_cksum_error(a, 1, 0);
	CHECK(!member_online(a, 1) && a->m[1].state == MS_FAULTY, "member 1 not failed at the threshold");
	CHECK(!strncmp(a->m[1].fail_reason, "5 checksum errors (threshold 5", 30), "fail reason: '%s'", a->m[1].fail_reason);
	CHECK(array_state(a) == ARRAY_DEGRADED, "array not degraded");
	CHECK(a->m[1].cksum_errors == 5 && a->m[1].repaired_bytes == 4 * 4096, "member 1 after: %llu, %llu",
	      (unsigned long long)a->m[1].cksum_errors, (unsigned long long)a->m[1].repaired_bytes);
	char ev[1024];
	events_wait(ev, sizeof(ev), 3);
	CHECK(!strcmp(ev, "ChecksumErrors 1\nFail 1\nDegradedArray 1\n"), "events: '%s'", ev);
	/* more on the failed member: counted, nothing more happens */
	array_note_cksum_error(a, 1, 0);
	CHECK(a->m[1].cksum_errors == 6, "a failed member's error not counted");

	/* threshold 0: counted, never failed */
	array_cksum_error_threshold = 0;
	for (int i = 0; i < 1000; i++)
		array_note_cksum_error(a, 0, 0);
	CHECK(member_online(a, 0) && a->m[0].cksum_errors == 1000, "threshold 0: member 0 %s with %llu",
	      member_online(a, 0) ? "online" : "failed", (unsigned long long)a->m[0].cksum_errors);

	/* READ and WRITE: a read error is counted (the member stays online
	 * below read_error_threshold), repaired bytes added */
	array_member_io_error(a, 0, -EIO, false);
	array_member_io_error(a, 0, -EIO, false);
	array_note_repaired(a, 0, 512);
	CHECK(a->m[0].read_errors == 2 && a->m[0].write_errors == 0 && a->m[0].repaired_bytes == 512 && member_online(a, 0),
	      "member 0: read %llu write %llu repaired %llu", (unsigned long long)a->m[0].read_errors,
	      (unsigned long long)a->m[0].write_errors, (unsigned long long)a->m[0].repaired_bytes);
	array_member_refused(a, 2, -EIO, "a test record");	/* (the second member out: raid6 goes on) */
	CHECK(a->m[2].write_errors == 1 && a->m[2].read_errors == 0, "a refusal not counted as a write error");
	array_member_io_error(a, 3, -EIO, false);
	array_counters_clear(a, 3);
	CHECK(a->m[3].read_errors == 0 && a->m[3].errors == 0, "member 3 not cleared");

	/* kept across an unmount: written at array_close(), read at assembly */
	array_close(a);
	struct member_counters c;
	int fd = open(mpath[0], O_RDONLY | O_DIRECTORY);
	CHECK(counters_read(fd, &c) == 0 && c.cksum_errors == 1000 && c.read_errors == 2 && c.repaired_bytes == 512,
	      "member 0's file: %llu %llu %llu", (unsigned long long)c.cksum_errors, (unsigned long long)c.read_errors,
	      (unsigned long long)c.repaired_bytes);
	close(fd);
	fd = open(mpath[1], O_RDONLY | O_DIRECTORY);
	CHECK(counters_read(fd, &c) == 0 && c.cksum_errors == 6 && c.repaired_bytes == 4 * 4096,
	      "member 1's file: %llu %llu", (unsigned long long)c.cksum_errors, (unsigned long long)c.repaired_bytes);
	close(fd);
	fd = open(mpath[3], O_RDONLY | O_DIRECTORY);
	CHECK(counters_read(fd, &c) == 0 && c.read_errors == 0, "member 3's file: %llu read errors after clear",
	      (unsigned long long)c.read_errors);
	close(fd);
	if (assemble(a))
		return;
	CHECK(a->m[0].cksum_errors == 1000 && a->m[0].read_errors == 2 && a->m[0].repaired_bytes == 512,
	      "member 0 after assembly: %llu %llu %llu", (unsigned long long)a->m[0].cksum_errors,
	      (unsigned long long)a->m[0].read_errors, (unsigned long long)a->m[0].repaired_bytes);
	/* a failed (now stale) member's history is shown too */
	CHECK(!member_present(a, 1) && a->m[1].cksum_errors == 6, "stale member 1 after assembly: %llu",
	      (unsigned long long)a->m[1].cksum_errors);
	array_close(a);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "%s/raidfs-test_counters.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_format();
	test_file();
	test_threshold();
	test_nicenum();
	test_array();
	if (!failures) {
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	printf("%s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
