/* startcmd.h — an image's start and ready commands (E2B's setStartCmd/setReadyCmd): the
 * start command a background execution of a sandbox, the ready command run until it
 * succeeds. A build checks them once; every create from the image runs them. */
#ifndef SANDLOT_STARTCMD_H
#define SANDLOT_STARTCMD_H

#include "ctx.h"
#include "err.h"
#include "image.h"
#include "record.h"

#include <stdint.h>

typedef struct sl_startcmd {
	const char *start;	/* a shell line; NULL or "": none */
	const char *ready;	/* a shell line; NULL or "": ready as soon as start has started */
	const char *user, *cwd; /* NULL: the sandbox's */
	uint64_t timeout_ms;	/* 0: ctx->cfg.ready_timeout_ms */
	/* Progress and the commands' output, a line at a time (NULL: none). */
	void (*out)(void *arg, const char *line);
	void *out_arg;
} sl_startcmd;

/* Start SC->start in SB as a background execution (its id in EXEC_ID, "" when there is
 * none), then run SC->ready (/bin/sh -c) until it exits 0, again after 0.1 s, doubling
 * up to 2 s (E2B's interval). Fails (SL_TIMEOUT) when it has not by the timeout, and
 * (SL_INVALID) as soon as the start command ends with a non-zero status; the start
 * command is then left as it is, for the caller to remove with the sandbox. */
int startcmd_run(sl_ctx *ctx, const sl_sandbox *sb, const sl_startcmd *sc, char exec_id[32],
		 sl_err *err);

/* The start and ready commands of a sandbox's image (by its digest), run as above as the
 * image's user in its working directory (root and / when it names none), as the build
 * checked them: a create from that image calls it. EXEC_ID is "" when it has none. */
int startcmd_image_run(sl_ctx *ctx, const sl_sandbox *sb, char exec_id[32], sl_err *err);

#endif
