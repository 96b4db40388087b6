/* clock.h — wall-clock time as the records and every API shape show it, and the
 * monotonic clock for deadlines. */
#ifndef SANDLOT_CLOCK_H
#define SANDLOT_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/* Milliseconds since the epoch (CLOCK_REALTIME). */
int64_t sl_now_ms(void);
/* Milliseconds of CLOCK_MONOTONIC: for deadlines and waits, which wall-clock steps must
 * not move. */
int64_t sl_mono_ms(void);
/* MS as RFC 3339 UTC with milliseconds: "2026-11-29T13:53:29.123Z". */
void sl_iso_time(int64_t ms, char *buf, size_t len);
/* FROM + MS (unix ms), saturated at INT64_MAX: a lifetime too long to end is no overflow
 * (which would be undefined, and could wrap into the past). */
int64_t sl_deadline_after(int64_t from, uint64_t ms);

#endif
