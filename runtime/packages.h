/* packages.h — packages installed at create (apt, pip, npm): the cache of derived layers
 * keyed by (image, sorted packages, sources), built once in a temporary root sandbox.
 * It creates sandboxes, so it sits above sandbox.c, which reaches packages_layer only
 * through ctx->package_layer (set by ctx_open). Names, versions, sources: pkgspec.h. */
#ifndef SANDLOT_PACKAGES_H
#define SANDLOT_PACKAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "err.h"
#include "pkgspec.h"
#include "sandbox.h"


/* The layer for these packages on the image with this digest: from the cache, or
 * built now (once: concurrent callers with the same key wait for the first). A failed
 * install leaves nothing (no sandbox, no layer, no record) and says why, with the
 * installer's stderr. disk: the install sandbox's disk limit. */
int packages_layer(sl_ctx *ctx, const char *digest, const sl_package *p, size_t n, uint64_t disk,
		   sl_pkg_layer *out, sl_err *err);

#endif
