/* pkgspec.h — packages as a create names them (apt, pip, npm): the checks on names and
 * versions, the list as recorded, the sources configured at serve, and the derived
 * layer a create with packages starts from (made by packages.c). */
#ifndef SANDLOT_PKGSPEC_H
#define SANDLOT_PKGSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "err.h"

/* A package installed at create, before the sandbox starts (issue 7). */
typedef struct sl_package {
	const char *name;
	const char *version; /* NULL: the newest */
	const char *manager; /* "apt", "pip", "npm" */
} sl_package;

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

#endif
