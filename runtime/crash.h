/* crash.h — named crash points for the fault-injection tests: sl_crash_point("name") kills
 * the process with SIGKILL, as `kill -9` would, when SANDLOT_CRASH_POINT names that point
 * (docs/testing.md, "Crash points"). Unset, it is one getenv. */
#ifndef SANDLOT_CRASH_H
#define SANDLOT_CRASH_H

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline void sl_crash_point(const char *name)
{
	const char *want = getenv("SANDLOT_CRASH_POINT");
	if (want && !strcmp(want, name))
		kill(getpid(), SIGKILL);
}

#endif
