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

int64_t sl_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Civil date from days since 1970-01-01 (H. Hinnant's days_from_civil, inverted).
 * Not gmtime_r: glibc's loads /etc/localtime on first use, seven system calls on every
 * CLI start for a zone it does not use. */
void sl_iso_time(int64_t ms, char *buf, size_t len)
{
	int64_t s = ms / 1000, msr = ms % 1000;
	if (msr < 0) {
		msr += 1000;
		s--;
	}
	int64_t days = s / 86400, sod = s % 86400;
	if (sod < 0) {
		sod += 86400;
		days--;
	}
	int64_t z = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	int d = (int)(doy - (153 * mp + 2) / 5 + 1);
	int m = (int)(mp < 10 ? mp + 3 : mp - 9);
	int64_t y = yoe + era * 400 + (m <= 2);
	snprintf(buf, len, "%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ", (long long)y, m, d,
		 (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60), (int)msr);
}

int64_t sl_deadline_after(int64_t from, uint64_t ms)
{
	return ms > (uint64_t)(INT64_MAX - from) ? INT64_MAX : from + (int64_t)ms;
}
