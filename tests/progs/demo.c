// SPDX-License-Identifier: MIT
/* Demo target for `make demo`: a stand-in for the robot server that
 * analyses "protocols" (50-150 ms) and serves cached analyses (1-5 ms).
 *   demo [SECONDS]   runs for SECONDS (default 5), then exits */
#include <stdlib.h>
#include <time.h>

static void busy_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

__attribute__((noinline)) int analyze_protocol(int id)
{
	busy_sleep_ms(50 + (id * 37) % 100);
	return id;
}

__attribute__((noinline)) int get_cached_analysis(int id)
{
	busy_sleep_ms(1 + id % 5);
	return id;
}

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 5;
	time_t end = time(NULL) + seconds;

	for (int id = 0; time(NULL) < end; id++) {
		analyze_protocol(id);
		for (int j = 0; j < 3; j++)
			get_cached_analysis(id + j);
	}
	return 0;
}
