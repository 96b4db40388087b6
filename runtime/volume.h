/* volume.h — named volumes that outlive sandboxes: btrfs subvolumes in the store,
 * mounted into any number of sandboxes, id-mapped into each one's uid range so their
 * files keep one ownership. Host directories may be mounted too, but only from the
 * allow-list in SANDLOT_HOST_MOUNTS (colon-separated directories). */
#ifndef SANDLOT_VOLUME_H
#define SANDLOT_VOLUME_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "ctx.h"
#include "err.h"
#include "owner.h"

/* A mount a create asks for. */
typedef struct sl_volume_spec {
	const char *source; /* a volume name (made on first use) or an allowed host dir */
	const char *mount_path;
	bool readonly;
} sl_volume_spec;

typedef struct sl_volume {
	char name[64];
	int64_t created_ms;
	char owner[SL_OWNER_LEN]; /* the key that made it (owner.h): others get "not found" */
} sl_volume;

/* Volume names are one namespace: a name another key holds is SL_CONFLICT. */
int volume_create(sl_ctx *ctx, const char *name, sl_volume *out, sl_err *err);
int volume_list(sl_ctx *ctx, sl_volume **out, size_t *n, sl_err *err);
/* One volume, if the thread's key sees it (else SL_NOTFOUND; a bad name SL_INVALID). */
int volume_get(sl_ctx *ctx, const char *name, sl_volume *out, sl_err *err);
/* The volume's directory on the host (an O_PATH descriptor) for volfs.h. */
int volume_root_open(sl_ctx *ctx, const char *name, int *fd, sl_err *err);
/* SL_CONFLICT while a live sandbox mounts it. */
int volume_delete(sl_ctx *ctx, const char *name, sl_err *err);
/* The host directory behind a mount spec: a volume name (created on first use; another
 * key's is SL_CONFLICT) or,
 * for an absolute host path, that path if it lies in the allow-list. */
int volume_source(sl_ctx *ctx, const char *spec, char *buf, size_t len, sl_err *err);

#endif
