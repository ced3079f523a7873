// fsyncdelay: an LD_PRELOAD library that makes every fsync and fdatasync of the
// process that loads it take FSYNC_DELAY_US microseconds longer, sleeping (not
// spinning) after the real call returns. bench/private-postgres.sh starts a private
// PostgreSQL with it to measure hookinbox and its anchors on a disk whose commits
// cost what a network volume's do, on a machine whose own disk is fast: the sleep
// takes no CPU, as waiting for a disk takes none.
//
//   cc -shared -fPIC -O2 -o fsyncdelay.so fsyncdelay.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

static long delay_us = -1;

static void wait_as_a_slow_disk(void) {
	if (delay_us < 0) {
		const char *s = getenv("FSYNC_DELAY_US");
		delay_us = s ? atol(s) : 0;
	}
	if (delay_us > 0) {
		struct timespec ts = {delay_us / 1000000, (delay_us % 1000000) * 1000};
		while (nanosleep(&ts, &ts) != 0) {
		}
	}
}

int fdatasync(int fd) {
	static int (*real)(int);
	if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	int rc = real(fd);
	wait_as_a_slow_disk();
	return rc;
}

int fsync(int fd) {
	static int (*real)(int);
	if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	int rc = real(fd);
	wait_as_a_slow_disk();
	return rc;
}
