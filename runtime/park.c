/* park.c — hibernate, else the fallback, with the log line (park.h). */
#include "park.h"

#include "hibernate.h"
#include "log.h"
#include "sandbox.h"

int sandbox_park(sl_ctx *ctx, const char *ref, enum sl_park_fallback fallback, const char *why,
		 sl_sandbox *out, sl_err *err)
{
	if (sandbox_hibernate(ctx, ref, out, err) == 0)
		return 0;
	if (err->kind != SL_HIBERNATE_REFUSED)
		return -1;
	bool pause = fallback == SL_PARK_PAUSE;
	sl_log(SL_LOG_INFO, "%s: %s: not hibernated (%s): %s instead", ref, why, err->msg,
	       pause ? "paused" : "stopped with its files (archived)");
	*err = (sl_err){0};
	return pause ? sandbox_pause(ctx, ref, out, err) : sandbox_archive(ctx, ref, out, err);
}
