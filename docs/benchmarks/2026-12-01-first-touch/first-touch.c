/* first-touch DIR FILES SIZE: write FILES new files of SIZE bytes in 64 KiB
 * pwrites; print the wall and system time (see first-touch.sh). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	int nf = atoi(argv[2]);
	size_t size = strtoul(argv[3], NULL, 0);
	char *buf = aligned_alloc(64, 65536), path[4096];
	memset(buf, 7, 65536);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int f = 0; f < nf; f++) {
		snprintf(path, sizeof(path), "%s/f%d", argv[1], f);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			return 1;
		for (size_t off = 0; off < size; off += 65536)
			if (pwrite(fd, buf, 65536, off) != 65536)
				return 1;
		close(fd);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double s = t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%.3f s wall, %.3f s system, %.0f MiB/s\n", s, ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
	       (double)nf * size / 1048576 / s);
	return 0;
}
