/*
 * rebuild-ceiling.c - the data movement of a rebuild and nothing else, on
 * the array's own member files: what the machine can do at best for the
 * rebuild contrib/bench/rebuild.sh just timed, measured in the same run.
 *
 *   cc -O2 -o rebuild-ceiling rebuild-ceiling.c -lisal -lpthread
 *   rebuild-ceiling OUTDIR LIST SRC...
 *
 * LIST holds NUL-terminated paths relative to each SRC (the shards of the
 * array's files).  For every path, the SRC/path files are read in 64 KiB
 * pieces (a piece per source stays in the core's cache, as in the
 * rebuild), XORed with ISA-L and written to OUTDIR/N, two threads taking
 * files in turn.  Give as many sources as the rebuild reads per chunk (a
 * raid5 member: the n - 1 others; raid6: n - 2; a mirror: one).  No
 * metadata, locks, layout or verify pass: a rebuild cannot go faster than
 * this on the same memory and cores.  Prints the seconds and the bytes
 * written.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <isa-l.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PIECE 65536
#define MAX_SRC 32
#define THREADS 2

static char **paths;
static size_t npaths;
static int nsrc;
static char **srcs;
static const char *outdir;
static long long written;

static void *run(void *arg)
{
	long t = (long)arg;
	char p[8192];
	void *b[MAX_SRC + 1];
	long long mine = 0;
	for (int i = 0; i <= nsrc; i++)
		if (posix_memalign(&b[i], 64, PIECE))
			exit(1);
	for (size_t f = t; f < npaths; f += THREADS) {
		int fd[MAX_SRC];
		off_t len = 0;
		for (int i = 0; i < nsrc; i++) {
			struct stat st;
			snprintf(p, sizeof(p), "%s/%s", srcs[i], paths[f]);
			fd[i] = open(p, O_RDONLY);
			if (fd[i] >= 0 && fstat(fd[i], &st) == 0 && st.st_size > len)
				len = st.st_size;
		}
		snprintf(p, sizeof(p), "%s/%zu", outdir, f);
		int o = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		for (off_t off = 0; off < len; off += PIECE) {
			size_t n = len - off < PIECE ? (size_t)(len - off) : PIECE;
			for (int i = 0; i < nsrc; i++) {
				ssize_t r = fd[i] >= 0 ? pread(fd[i], b[i], n, off) : 0;
				if (r < (ssize_t)n)	/* a shorter shard: zeros */
					memset((char *)b[i] + (r > 0 ? r : 0), 0, n - (r > 0 ? r : 0));
			}
			if (nsrc > 1)
				xor_gen(nsrc + 1, (int)n, b);
			if (pwrite(o, nsrc > 1 ? b[nsrc] : b[0], n, off) == (ssize_t)n)
				mine += n;
		}
		for (int i = 0; i < nsrc; i++)
			if (fd[i] >= 0)
				close(fd[i]);
		if (o >= 0)
			close(o);
	}
	__atomic_add_fetch(&written, mine, __ATOMIC_RELAXED);
	for (int i = 0; i <= nsrc; i++)
		free(b[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 4 || argc - 3 > MAX_SRC) {
		fprintf(stderr, "usage: rebuild-ceiling OUTDIR LIST SRC... (1 to %d sources)\n", MAX_SRC);
		return 2;
	}
	outdir = argv[1];
	nsrc = argc - 3;
	srcs = argv + 3;
	FILE *l = fopen(argv[2], "r");
	if (!l) {
		perror(argv[2]);
		return 1;
	}
	char *line = NULL;
	size_t cap = 0, have = 0;
	while (getdelim(&line, &cap, '\0', l) > 0) {
		if (npaths == have) {
			have = have ? have * 2 : 4096;
			paths = realloc(paths, have * sizeof(*paths));
			if (!paths)
				return 1;
		}
		paths[npaths++] = strdup(line);
	}
	fclose(l);
	struct timespec a, c;
	pthread_t th[THREADS];
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long t = 0; t < THREADS; t++)
		pthread_create(&th[t], NULL, run, (void *)t);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	clock_gettime(CLOCK_MONOTONIC, &c);
	printf("%.3f %lld\n", (c.tv_sec - a.tv_sec) + (c.tv_nsec - a.tv_nsec) / 1e9, written);
	return 0;
}
