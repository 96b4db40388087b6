/* clock.c — see clock.h. */
#include "clock.h"

#include <stdio.h>
#include <time.h>

int64_t sl_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sl_iso_time(int64_t ms, char *buf, size_t len)
{
	time_t s = ms / 1000;
	struct tm tm;
	gmtime_r(&s, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}
