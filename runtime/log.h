/* log.h — the runtime's log: warnings and events go to a log file (the state
 * dir's sandlot.log) or the daemon's stderr, never into a command's output. */
#ifndef SANDLOT_LOG_H
#define SANDLOT_LOG_H

enum { SL_LOG_ERROR, SL_LOG_WARN, SL_LOG_INFO, SL_LOG_DEBUG };

/* Send log lines to PATH (appended; created 0600). NULL means stderr. */
int sl_log_open(const char *path);
void sl_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
