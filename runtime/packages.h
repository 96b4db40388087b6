/* packages.h — packages installed at create (apt, pip, npm): the checks on names and
 * versions, the sources configured at serve, and the cache of derived layers keyed by
 * (image, sorted packages, sources), built once in a temporary root sandbox. */
#ifndef SANDLOT_PACKAGES_H
#define SANDLOT_PACKAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "err.h"
#include "sandbox.h"

#define SL_MAX_PACKAGES 64

/* Each name and version as its manager allows, nothing a shell or an option parser
 * could take for more (no leading '-', no spaces or metacharacters). */
int packages_validate(const sl_package *p, size_t n, sl_err *err);
/* Check (and normalise: the wheel dir made absolute) the configured sources. */
int packages_check_sources(sl_config *cfg, sl_err *err);
/* The list as recorded in a sandbox: [{name, version?, manager}]. */
cJSON *packages_json(const sl_package *p, size_t n);

/* A derived layer: a read-only btrfs snapshot in the store (as a snapshot's) holding
 * what the installers wrote on top of the image. */
typedef struct sl_pkg_layer {
	char id[32];	     /* store/snapshots/<id> */
	uint32_t uid_base;   /* the owner range its files were written under */
	char node_path[256]; /* `npm root -g` when npm packages are in it, else "" */
	bool built;	     /* false: it came from the cache */
	int64_t build_ms;
} sl_pkg_layer;

/* The layer for these packages on the image with this digest: from the cache, or
 * built now (once: concurrent callers with the same key wait for the first). A failed
 * install leaves nothing (no sandbox, no layer, no record) and says why, with the
 * installer's stderr. disk: the install sandbox's disk limit. */
int packages_layer(sl_ctx *ctx, const char *digest, const sl_package *p, size_t n, uint64_t disk,
		   sl_pkg_layer *out, sl_err *err);

#endif
