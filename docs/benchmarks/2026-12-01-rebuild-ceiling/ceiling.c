/*
 * ceiling.c - the data movement of a rebuild, and nothing else: what the
 * machine can do at best, as a baseline for contrib/bench/rebuild.sh.
 *
 *   cc -O2 -o ceiling ceiling.c -lpthread -lisal
 *   [MM=1|2] [NOV=1] ./ceiling DIR K FILES SIZE THREADS
 *
 * Two switches (../2026-12-01-ceiling-modes/ runs them):
 *   NOV=1  no read-back of the new file (as the verify pass works now);
 *   MM=1   the K sources are mmap'ed and XORed in place (no copy into a
 *          buffer); MM=2 also maps the new file for the read-back's crc.
 *
 * DIR holds s0 .. s(K-1)/fN (FILES files of SIZE bytes each: the
 * surviving shards a chunk is computed from) and an empty n/.  For every
 * file: read the K sources in 64 KiB pieces, XOR them (ISA-L), crc the
 * result, write it to n/fN, then read n/fN back and crc it (the verify
 * pass) -- what raidfs does per byte of a rebuilt member, without
 * metadata, locks or layout.  THREADS threads take whole files.
 * Prints MiB/s of new data (member data, as rebuild.sh reports).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <isa-l.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
static int MM, NOV;

#define PIECE 65536
static int K, NF, T;
static size_t S;
static const char *D;

static void *run(void *arg)
{
	long t = (long)arg;
	char p[512];
	uint8_t *src[16], *out = aligned_alloc(64, PIECE);
	for (int i = 0; i < K; i++)
		src[i] = aligned_alloc(64, PIECE);
	for (int f = t; f < NF; f += T) {
		int fd[16];
		for (int i = 0; i < K; i++) {
			snprintf(p, sizeof(p), "%s/s%d/f%d", D, i, f);
			fd[i] = open(p, O_RDONLY);
		}
		snprintf(p, sizeof(p), "%s/n/f%d", D, f);
		int o = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
		uint8_t *map[16];
		if (MM) for (int i = 0; i < K; i++) { map[i] = mmap(NULL, S, PROT_READ, MAP_SHARED, fd[i], 0); if (map[i] == MAP_FAILED) perror("mmap"); }
		for (size_t off = 0; off < S; off += PIECE) {
			void *bl[17];
			for (int i = 0; i < K; i++) {
				if (MM) { bl[i] = map[i] + off; continue; }
				if (pread(fd[i], src[i], PIECE, off) < 0)
					perror("pread");
				bl[i] = src[i];
			}
			bl[K] = out;
			size_t n = S - off < PIECE ? S - off : PIECE;
			xor_gen(K + 1, n, bl);
			crc32_gzip_refl(0, out, n);
			if (pwrite(o, out, n, off) < 0)
				perror("pwrite");
		}
		if (MM) for (int i = 0; i < K; i++) munmap(map[i], S);
		if (!NOV && MM == 2) { uint8_t *m = mmap(NULL, S, PROT_READ, MAP_SHARED, o, 0); crc32_gzip_refl(0, m, S); munmap(m, S); }
		else if (!NOV)
		for (size_t off = 0; off < S; off += PIECE) {
			if (pread(o, out, PIECE, off) < 0)
				perror("pread");
			crc32_gzip_refl(0, out, PIECE);
		}
		for (int i = 0; i < K; i++)
			close(fd[i]);
		close(o);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 6 || (K = atoi(argv[2])) < 1 || K > 16) {
		fprintf(stderr, "usage: ceiling DIR K FILES SIZE THREADS\n");
		return 2;
	}
	D = argv[1]; MM = getenv("MM") ? atoi(getenv("MM")) : 0; NOV = getenv("NOV") != NULL;
	NF = atoi(argv[3]);
	S = strtoul(argv[4], NULL, 0);
	T = atoi(argv[5]);
	struct timespec a, b;
	pthread_t th[64];
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long t = 0; t < T && t < 64; t++)
		pthread_create(&th[t], NULL, run, (void *)t);
	for (int t = 0; t < T && t < 64; t++)
		pthread_join(th[t], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	printf("K=%d threads=%d files=%d size=%zu: %.3f s, %.0f MiB/s of new data\n", K, T, NF, S, s,
	       (double)NF * S / 1048576 / s);
	return 0;
}
