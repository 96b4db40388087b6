/* crash.h — named crash points for the fault-injection tests: sl_crash_point("name") kills
 * the process with SIGKILL, as `kill -9` would, when SANDLOT_CRASH_POINT names that point;
 * sl_delay_point("name") sleeps when SANDLOT_DELAY_POINT is "name:MS", widening a race's
 * window so a test can hit it every time (docs/testing.md, "Crash points"). Unset, each is
 * one getenv. */
#ifndef SANDLOT_CRASH_H
#define SANDLOT_CRASH_H

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline void sl_crash_point(const char *name)
{
	const char *want = getenv("SANDLOT_CRASH_POINT");
	if (want && !strcmp(want, name))
		kill(getpid(), SIGKILL);
}

static inline void sl_delay_point(const char *name)
{
	const char *want = getenv("SANDLOT_DELAY_POINT");
	size_t n = strlen(name);
	if (!want || strncmp(want, name, n) || want[n] != ':')
		return;
	long ms = atol(want + n + 1);
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (ms > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

#endif
