/* park.h — a sandbox put aside with as little host memory as this host allows: its
 * processes hibernated with CRIU (hibernate.c) when it can be, else kept another way
 * (the freezer's pause, or a stop with its files), with a log line saying why. The one
 * implementation behind timeout.onIdle/onLifetime "hibernate" (api/deadlines.c), E2B's
 * pause and autoPause and Daytona's archive (docs/hibernate.md, "Hibernate as a
 * policy"). */
#ifndef SANDLOT_PARK_H
#define SANDLOT_PARK_H

#include "ctx.h"
#include "err.h"
#include "record.h"

/* What a park does when CRIU cannot: SL_PARK_PAUSE freezes the sandbox (memory kept, as
 * a pause), SL_PARK_ARCHIVE stops it with its files and marks it archived
 * (sandbox_archive). */
enum sl_park_fallback { SL_PARK_PAUSE, SL_PARK_ARCHIVE };

/* Hibernate running sandbox REF; when that is refused (SL_HIBERNATE_REFUSED: not launched
 * with "hibernate": true, CRIU absent or refusing; the sandbox runs on), FALLBACK instead,
 * logged with WHY (the caller: "idle timeout", "E2B pause", ...) and the refusal. So it
 * fails only where the fallback alone would. Any other error of the hibernate (the
 * sandbox not running, gone) is answered as is. OUT (may be NULL) gets the record. */
int sandbox_park(sl_ctx *ctx, const char *ref, enum sl_park_fallback fallback, const char *why,
		 sl_sandbox *out, sl_err *err);

#endif
