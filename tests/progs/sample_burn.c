// SPDX-License-Identifier: MIT
/* A native program with a known profile, for the sampler's tests
 * (tests/integration/test_sample.sh) and bench/sampling.sh:
 *
 *   sample_burn shares SECONDS   heavy/medium/light burn 60/30/10 % of the CPU
 *   sample_burn block SECONDS    a thread sleeps in long_wait (75 %) and
 *                                short_wait (25 %) while main burns
 *   sample_burn span SECONDS     in_span and outside_span burn half each
 *   sample_burn kernel SECONDS   in_kernel reads /dev/zero: the CPU time is
 *                                the kernel's, on in_kernel's behalf
 *
 * Each part burns in a loop of its own that calls nothing most of the
 * time, so a sample's leaf function says which part it is in; built with
 * and without frame pointers (mk/sampler.mk). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CYCLE_NS 100000000ull

static volatile unsigned long sink;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Each burner spins until UNTIL, looking at the clock every few
 * thousand steps. */
#define BURNER(name)                                              \
	__attribute__((noinline)) void name(unsigned long long until) \
	{                                                         \
		unsigned long x = 0;                              \
		do {                                              \
			for (int i = 0; i < 20000; i++)           \
				x += (unsigned long)i * i;        \
		} while (now_ns() < until);                       \
		sink = x;                                         \
	}

BURNER(heavy)
BURNER(medium)
BURNER(light)
BURNER(in_span)
BURNER(outside_span)

static void shares(double seconds)
{
	unsigned long long end = now_ns() + (unsigned long long)(seconds * 1e9);

	while (now_ns() < end) {
		unsigned long long t = now_ns();

		heavy(t + CYCLE_NS * 6 / 10);
		medium(t + CYCLE_NS * 9 / 10);
		light(t + CYCLE_NS);
	}
}

__attribute__((noinline)) static void span(double seconds)
{
	unsigned long long end = now_ns() + (unsigned long long)(seconds * 1e9);

	while (now_ns() < end) {
		unsigned long long t = now_ns();

		in_span(t + CYCLE_NS / 2);
		outside_span(t + CYCLE_NS);
	}
}

__attribute__((noinline)) void long_wait(void)
{
	usleep(300000);
}

__attribute__((noinline)) void short_wait(void)
{
	usleep(100000);
}

static unsigned long long block_end;

static void *waiter(void *arg)
{
	(void)arg;
	while (now_ns() < block_end) {
		long_wait();
		short_wait();
	}
	return NULL;
}

static void block(double seconds)
{
	pthread_t t;

	block_end = now_ns() + (unsigned long long)(seconds * 1e9);
	pthread_create(&t, NULL, waiter, NULL);
	shares(seconds);
	pthread_join(t, NULL);
}

/* Burns in the kernel: reads of /dev/zero, whose cost is the kernel
 * clearing the buffer. */
static void in_kernel(double seconds)
{
	static char buf[1 << 16];
	unsigned long long end = now_ns() + (unsigned long long)(seconds * 1e9);
	FILE *zero = fopen("/dev/zero", "rb");

	if (!zero)
		exit(1);
	setvbuf(zero, NULL, _IONBF, 0);
	while (now_ns() < end)
		if (fread(buf, 1, sizeof(buf), zero) != sizeof(buf))
			exit(1);
	fclose(zero);
}

int main(int argc, char **argv)
{
	double seconds = argc > 2 ? atof(argv[2]) : 1;

	if (argc < 2)
		return 2;
	if (strcmp(argv[1], "shares") == 0)
		shares(seconds);
	else if (strcmp(argv[1], "span") == 0)
		span(seconds);
	else if (strcmp(argv[1], "block") == 0)
		block(seconds);
	else if (strcmp(argv[1], "kernel") == 0)
		in_kernel(seconds);
	else
		return 2;
	return 0;
}
