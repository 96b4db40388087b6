/* resolver.h — the daemon's DNS resolver for network-on sandboxes (resolver.c). */
#ifndef SANDLOT_RESOLVER_H
#define SANDLOT_RESOLVER_H

#include "ctx.h"
#include "err.h"

typedef struct api_resolver api_resolver;
/* Listen on the bridge gateway's port 53 and serve sandboxes; sets ctx->cfg.net_resolver
 * (sandboxes then get the gateway as their name server and may have domain rules). */
int api_resolver_start(sl_ctx *ctx, api_resolver **out, sl_err *err);
void api_resolver_stop(sl_ctx *ctx, api_resolver *r);

#endif
