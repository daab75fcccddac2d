/*
 * test_cachelog.c - unit test of src/cachelog.c, the log behind
 * -o bbu=file:PATH, in a temporary directory, without a mounted array
 * (a struct array with only its uuid and layout; member_sync=never, so
 * that moving the tail syncs no member).
 *
 *   - a record's header is encoded as docs/format.md says ("Cache log");
 *   - records written and committed are replayed after a reopen, in order,
 *     with their kinds, file ids, offsets and bytes (cachelog_replay_each);
 *   - the last record cut at every byte offset (the file truncated there,
 *     or the rest of its space left as the ring held it before: a torn
 *     write over an older lap) is replayed exactly when its header and
 *     bytes are complete, and every record before it always is; with a
 *     ring that laps, from the tail the header names;
 *   - after a replay (cachelog_replay_done) a new record is the only one a
 *     later reopen finds: the torn remnant is never taken up again.
 *
 * Each open runs in a child process (the log is one per process).
 * Exit status 0 when everything passed, 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array.h"
#include "cachelog.h"
#include "file.h"
#include "parity.h"
#include "util.h"

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "FAIL (line %d): ", __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); failures++; } } while (0)

/* docs/format.md: the header block, a record's header, its padding */
#define HDR_BYTES 4096u
#define REC_HDR 64u
#define REC_ALIGN 512u

static uint64_t rec_size(uint32_t len)
{
	return (REC_HDR + len + REC_ALIGN - 1) / REC_ALIGN * REC_ALIGN;
}

#define MAXREC 64
#define NEW_FID 99

struct rec {
	bool truncate;
	uint64_t fid, off, v, seq;
	uint32_t len;
};

/* What a writer child tells the parent (shared memory). */
static struct shared {
	struct rec r[MAXREC];
	int n;
	int tail_idx;			/* the header's tail: record r[tail_idx] */
	int window;			/* the tail follows the head at this many records */
	bool wait_called, failed_called;
} *sh;

static char dir[256], path[300], before[300], after[300];
static struct array *arr;
static uint64_t ring;

static uint8_t pattern(uint64_t fid, uint64_t off, uint32_t i)
{
	return (uint8_t)((fid * 131 + off * 7 + i * 29 + (i >> 8)) ^ 0x5a);
}

static uint8_t *bytes_of(const struct rec *r)
{
	uint8_t *b = malloc(r->len ? r->len : 1);
	for (uint32_t i = 0; i < r->len; i++)
		b[i] = pattern(r->fid, r->off, i);
	return b;
}

/* ----------------------------------------------------------- the cache side */

/* The tail the "cache" needs: the record `window` back from the last one
 * written (the lines of the older ones are on the members). */
static void writer_tail(void *arg, uint64_t *v, uint64_t *seq)
{
	(void)arg;
	int k = sh->n - sh->window;
	if (k < 0)
		k = 0;
	if (k >= sh->n) {
		cachelog_position(v, seq);
		return;
	}
	*v = sh->r[k].v;
	*seq = sh->r[k].seq;
	if (k > sh->tail_idx)
		sh->tail_idx = k;	/* (the log moves its tail up to it) */
}

/* (the tail always makes room: a wait would never end) */
static void writer_wait(void *arg)
{
	(void)arg;
	sh->wait_called = true;
	_exit(5);
}

static void writer_failed(void *arg)
{
	(void)arg;
	sh->failed_called = true;
}

static const struct cachelog_ops writer_ops = { .tail = writer_tail, .wait = writer_wait, .failed = writer_failed };

/* The reader's cache has nothing dirty: the tail may go to the head. */
static const struct cachelog_ops reader_ops = { 0 };

/* ---------------------------------------------------------------- helpers */

static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	char buf[65536];
	ssize_t n;
	int r = in >= 0 && out >= 0 ? 0 : -1;
	while (r == 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			r = -1;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return r;
}

static uint8_t *slurp(const char *p, size_t *len)
{
	int fd = open(p, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return NULL;
	uint8_t *b = malloc(st.st_size + 1);
	*len = io_pread(fd, b, st.st_size, 0);
	close(fd);
	return b;
}

static void spill(const char *p, const uint8_t *b, size_t len)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || io_pwrite(fd, b, len, 0) < 0)
		CHECK(0, "cannot write %s", p);
	if (fd >= 0)
		close(fd);
}

/* Run fn in a child; its exit status (0: passed). */
static int in_child(int (*fn)(void *), void *arg)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		_exit(fn(arg));
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
}

/* ------------------------------------------------------------- the writer */

/* The records of a scenario: sizes and kinds that vary, a truncate now
 * and then, a write of three pieces, an empty write. */
static void plan(struct rec *r, int i)
{
	memset(r, 0, sizeof(*r));
	r->fid = 1 + i % 3;
	r->off = (uint64_t)i * 1000 + (i % 2) * 7;
	if (i % 5 == 4) {
		r->truncate = true;
		r->off = (uint64_t)i * 300;
		return;
	}
	r->len = i == 3 ? 0 : (uint32_t)((i * 733u + 61u) % 2600u + 1u);
}

static int put_rec(struct rec *r, int i)
{
	uint64_t end = 0;
	int e;
	cachelog_position(&r->v, &r->seq);
	if (r->truncate) {
		e = cachelog_try_put_truncate(r->fid, r->off, &end);
	} else {
		uint8_t *b = bytes_of(r);
		if (i % 7 == 6 && r->len >= 3) {
			/* in three pieces */
			struct iovec v[3] = { { b, 1 }, { b + 1, r->len / 2 }, { b + 1 + r->len / 2, r->len - 1 - r->len / 2 } };
			e = cachelog_put_writev(r->fid, r->off, v, 3, &end);
		} else {
			e = cachelog_put_write(r->fid, r->off, b, r->len, &end);
		}
		free(b);
	}
	if (e == 0)
		e = cachelog_commit(end);
	r->v = end - rec_size(r->len);	/* (where it went: a new lap, maybe) */
	return e;
}

/* Write sh->n records into a new log; `before` holds the file as it was
 * just before the last one, `after` as it is at the end. */
static int writer(void *arg)
{
	int n = *(int *)arg;
	char err[512];
	sh->n = 0;
	sh->tail_idx = 0;
	if (cachelog_open(arr, path, ring, &writer_ops, err, sizeof(err)) < 0) {
		fprintf(stderr, "writer: %s\n", err);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		struct rec r;
		plan(&r, i);
		if (i == n - 1 && copy_file(path, before) < 0)
			return 2;
		int e = put_rec(&r, i);
		if (e < 0) {
			fprintf(stderr, "writer: record %d: %s\n", i, strerror(-e));
			return 3;
		}
		sh->r[sh->n++] = r;
	}
	return copy_file(path, after) < 0 ? 4 : 0;
}

/* ------------------------------------------------------------- the reader */

struct expect {
	const struct rec *r[MAXREC + 1];
	int n;
	bool then_write;		/* replay, then write one more record */
};

struct seen {
	const struct expect *want;
	int fid_i;			/* next expected record of this file */
	uint64_t fid;
	int bad;
};

static int check_one(void *arg, const struct cachelog_record *got, const void *data)
{
	struct seen *s = arg;
	const struct rec *w = NULL;
	while (s->fid_i < s->want->n && s->want->r[s->fid_i]->fid != s->fid)
		s->fid_i++;
	if (s->fid_i < s->want->n)
		w = s->want->r[s->fid_i++];
	if (!w) {
		fprintf(stderr, "reader: file %llu: a record too many (off %llu)\n", (unsigned long long)s->fid,
			(unsigned long long)got->off);
		s->bad++;
		return 0;
	}
	if (got->truncate != w->truncate || got->fid != w->fid || got->off != w->off || got->len != w->len ||
	    (data == NULL) != w->truncate) {
		fprintf(stderr, "reader: file %llu: record (%d, off %llu, len %u), want (%d, off %llu, len %u)\n",
			(unsigned long long)s->fid, got->truncate, (unsigned long long)got->off, got->len,
			w->truncate, (unsigned long long)w->off, w->len);
		s->bad++;
		return 0;
	}
	if (data) {
		uint8_t *b = bytes_of(w);
		if (memcmp(b, data, w->len)) {
			fprintf(stderr, "reader: file %llu: the bytes of the record at %llu differ\n",
				(unsigned long long)s->fid, (unsigned long long)w->off);
			s->bad++;
		}
		free(b);
	}
	return 0;
}

static int reader(void *arg)
{
	const struct expect *want = arg;
	char err[512];
	int bad = 0;
	if (cachelog_open(arr, path, ring, &reader_ops, err, sizeof(err)) < 0) {
		fprintf(stderr, "reader: %s\n", err);
		return 1;
	}
	uint64_t bytes = 0;
	for (int i = 0; i < want->n; i++)
		bytes += want->r[i]->len;
	if (cachelog_replay_records() != (size_t)want->n || cachelog_replay_bytes() != bytes) {
		fprintf(stderr, "reader: %zu records (%llu bytes) to replay, want %d (%llu)\n", cachelog_replay_records(),
			(unsigned long long)cachelog_replay_bytes(), want->n, (unsigned long long)bytes);
		bad++;
	}
	for (uint64_t fid = 1; fid <= NEW_FID; fid++) {
		struct seen s = { want, 0, fid, 0 };
		cachelog_replay_each(fid, check_one, &s);
		/* every expected record of this file was seen */
		for (; s.fid_i < want->n; s.fid_i++)
			if (want->r[s.fid_i]->fid == fid) {
				fprintf(stderr, "reader: file %llu: record at %llu not replayed\n",
					(unsigned long long)fid, (unsigned long long)want->r[s.fid_i]->off);
				s.bad++;
			}
		bad += s.bad;
		bool holds = false;
		for (int i = 0; i < want->n; i++)
			holds |= want->r[i]->fid == fid;
		if (cachelog_holds(fid) != holds) {
			fprintf(stderr, "reader: cachelog_holds(%llu) is %d\n", (unsigned long long)fid, !holds);
			bad++;
		}
	}
	if (want->then_write) {
		cachelog_replay_done();
		struct rec r = { false, NEW_FID, 4242, 0, 0, 700 };
		uint8_t *b = bytes_of(&r);
		uint64_t end;
		int e = cachelog_put_write(r.fid, r.off, b, r.len, &end);
		if (e == 0)
			e = cachelog_commit(end);
		free(b);
		if (e < 0) {
			fprintf(stderr, "reader: the record after the replay: %s\n", strerror(-e));
			bad++;
		}
	}
	return bad ? 1 : 0;
}

/* ------------------------------------------------------------------ tests */

/* The header of the first record, byte by byte (docs/format.md). */
static void test_encoding(void)
{
	size_t len;
	uint8_t *f = slurp(after, &len);
	const struct rec *r = &sh->r[0];
	CHECK(f && len >= HDR_BYTES + rec_size(r->len), "log too short");
	if (!f || len < HDR_BYTES + rec_size(r->len))
		return;
	CHECK(!memcmp(f, "RAIDFSL1", 8) && get_le32(f + 8) == 1, "log magic and version");
	CHECK(get_le64(f + 32) == ring, "ring size in the header");
	CHECK(get_le32(f + 60) == parity_crc32(0, f, 60), "header crc");
	const uint8_t *h = f + HDR_BYTES + r->v % ring;
	CHECK(get_le32(h) == 0x31474c52u, "record magic");
	CHECK(get_le32(h + 4) == 1, "record kind write");
	CHECK(get_le64(h + 8) == 1, "first sequence number 1");
	CHECK(get_le64(h + 16) == r->v, "own virtual offset");
	CHECK(get_le64(h + 24) == r->fid && get_le64(h + 32) == r->off && get_le32(h + 40) == r->len,
	      "file id, offset, length");
	CHECK(get_le32(h + 44) == parity_crc32(0, h + REC_HDR, r->len), "data crc");
	CHECK(get_le32(h + 60) == parity_crc32(0, h, 60), "record header crc");
	uint8_t *b = bytes_of(r);
	CHECK(!memcmp(h + REC_HDR, b, r->len), "record data");
	free(b);
	for (uint64_t i = REC_HDR + r->len; i < rec_size(r->len); i++)
		if (h[i]) {
			CHECK(0, "padding not zero at %llu", (unsigned long long)i);
			break;
		}
	/* a truncate: kind 2, no data */
	for (int i = 0; i < sh->n; i++)
		if (sh->r[i].truncate && sh->r[i].v + REC_HDR <= ring) {
			const uint8_t *t = f + HDR_BYTES + sh->r[i].v % ring;
			CHECK(get_le32(t + 4) == 2 && get_le32(t + 40) == 0 && get_le64(t + 32) == sh->r[i].off,
			      "truncate record");
			break;
		}
	free(f);
}

/*
 * One scenario: n records in a ring of ring_bytes, the tail `window`
 * records behind.  The last record cut at the offsets `every` (all of
 * them) or a few; `trunc`: also by truncating the file (the last record
 * must be at its end).
 */
static void scenario(uint64_t ring_bytes, int n, int window, bool every, bool trunc, int *lapped)
{
	ring = ring_bytes;
	unlink(path);
	sh->window = window;
	int st = in_child(writer, &n);
	CHECK(st == 0 && sh->n == n, "writer of %d records: status %d", n, st);
	CHECK(!sh->wait_called && !sh->failed_called, "the log waited or failed");
	if (st != 0)
		return;
	if (n > 0 && ring_bytes > 1 << 20)
		test_encoding();
	const struct rec *last = &sh->r[n - 1];
	uint64_t at = HDR_BYTES + last->v % ring, size = rec_size(last->len), whole = REC_HDR + last->len;
	if (last->v % ring == 0 && n > 1 && sh->r[n - 2].v + rec_size(sh->r[n - 2].len) < last->v)
		(*lapped)++;	/* the last one started a new lap, leaving a gap */
	size_t alen, blen;
	uint8_t *a = slurp(after, &alen), *b = slurp(before, &blen);
	CHECK(a && b && alen >= at + size, "snapshots");
	if (!a || !b || alen < at + size)
		return;
	uint8_t *img = malloc(alen > at + size ? alen : at + size);
	static const uint64_t some[] = { 0, 1, 8, 59, 63, 64, 65, 100, 511, 512, 513 };
	size_t nsome = sizeof(some) / sizeof(some[0]);
	for (uint64_t k = 0; k <= size + nsome; k++) {
		/* every offset, or the few, and those around the data's end */
		uint64_t x;
		if (every)
			x = k;
		else if (k < nsome)
			x = some[k];
		else if (k - nsome < 3)
			x = whole - 1 + (k - nsome);
		else
			break;
		if (x > size)
			continue;
		struct expect want = { .n = 0 };
		for (int i = sh->tail_idx; i < n - 1; i++)
			want.r[want.n++] = &sh->r[i];
		if (x >= whole)
			want.r[want.n++] = last;	/* header and bytes whole: replayed */
		for (int variant = 0; variant < (trunc ? 2 : 1); variant++) {
			/* variant 0: the rest of the record's space as it was
			 * before it was written; 1: the file ends at x */
			size_t ilen = alen;
			memcpy(img, a, alen);
			if (variant == 0) {
				for (uint64_t i = at + x; i < at + size; i++)
					img[i] = i < blen ? b[i] : 0;
			} else {
				CHECK(alen == at + size, "the last record ends the file");
				ilen = at + x;
			}
			spill(path, img, ilen);
			/* the chain is checked after a replay too, sometimes */
			want.then_write = !every || x % 97 == 0 || x == whole || x == whole - 1;
			st = in_child(reader, &want);
			CHECK(st == 0, "ring %llu, %d records, tail at %d, cut at %llu of %llu (%s): status %d",
			      (unsigned long long)ring, n, sh->tail_idx, (unsigned long long)x,
			      (unsigned long long)size, variant ? "truncated" : "torn", st);
			if (st == 0 && want.then_write) {
				struct rec nr = { false, NEW_FID, 4242, 0, 0, 700 };
				struct expect next = { .r = { &nr }, .n = 1 };
				st = in_child(reader, &next);
				CHECK(st == 0, "ring %llu, %d records, cut at %llu (%s): after the replay: status %d",
				      (unsigned long long)ring, n, (unsigned long long)x, variant ? "truncated" : "torn",
				      st);
			}
		}
	}
	free(img);
	free(a);
	free(b);
}

int main(void)
{
	/* (the log's messages in a file of the temporary directory) */
	member_sync_mode = MSYNC_NEVER;	/* no member to sync */
	/* (TMPDIR, else /dev/shm: fdatasync there costs nothing) */
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(dir, sizeof(dir), "%s/raidfs-cachelog-XXXXXX", tmp);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/log", dir);
	snprintf(before, sizeof(before), "%s/before", dir);
	snprintf(after, sizeof(after), "%s/after", dir);
	char logp[300];
	snprintf(logp, sizeof(logp), "%s/messages", dir);
	log_open(logp);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	arr = calloc(1, sizeof(*arr));
	if (sh == MAP_FAILED || !arr)
		return 1;
	for (int i = 0; i < 16; i++)
		arr->sb.uuid[i] = (uint8_t)(0x10 + i);
	arr->lay.chunk = 65536;
	arr->lay.groups = 1;
	arr->lay.m = 1;
	arr->shadow_of = -1;

	int lapped = 0;
	/* a large ring: no lap; every cut, truncated and torn */
	scenario(4 << 20, 12, MAXREC, true, true, &lapped);
	/* a ring of 16 KiB that laps several times, the tail a few records
	 * behind: a few cuts for each length of run */
	int lap_n = 0;
	for (int n = 8; n <= MAXREC; n++) {
		int was = lapped;
		scenario(16384, n, 3, false, false, &lapped);
		if (lapped > was && !lap_n)
			lap_n = n;
	}
	CHECK(lap_n > 0, "no scenario had its last record start a new lap");
	/* and every cut where it does */
	if (lap_n)
		scenario(16384, lap_n, 3, true, false, &lapped);

	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	if (failures) {
		fprintf(stderr, "test_cachelog: %d failure%s\n", failures, failures == 1 ? "" : "s");
		return 1;
	}
	printf("test_cachelog: ok (%d runs whose last record started a new lap)\n", lapped);
	return 0;
}
