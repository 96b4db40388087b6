/* log.c — append-only log lines with a timestamp and level; one write(2) per
 * line so lines from concurrent CLI processes never interleave. */
#include "log.h"

#include <fcntl.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int log_fd = 2;
static int log_max = SL_LOG_INFO;

int sl_log_open(const char *path)
{
	const char *lvl = getenv("SANDLOT_LOG_LEVEL");
	if (lvl && !strcmp(lvl, "debug"))
		log_max = SL_LOG_DEBUG;
	if (!path)
		return 0;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (log_fd > 2)
		close(log_fd);
	log_fd = fd;
	return 0;
}

void sl_log(int level, const char *fmt, ...)
{
	static const char *names[] = { "error", "warn", "info", "debug" };
	if (level > log_max)
		return;
	char line[2048];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s [%d] ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec, ts.tv_nsec / 1000000, names[level], (int)getpid());
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	ssize_t w = write(log_fd, line, n);
	(void)w;
}
