/* view.h — the /v1 JSON of the runtime's objects (view.c): one place where a record
 * becomes what clients see. */
#ifndef SANDLOT_API_VIEW_H
#define SANDLOT_API_VIEW_H

#include <cjson/cJSON.h>

#include "sandbox.h"
#include "snapshot.h"
#include "exec.h"
#include "volume.h"

/* The API's Sandbox (internal fields omitted). */
cJSON *view_sandbox_json(const sl_sandbox *sb);
cJSON *view_snapshot_json(const sl_snapshot *s);
/* The API's Checkpoint: {id, name, sandboxId, createdAt}. */
cJSON *view_checkpoint_json(const sl_snapshot *s);
cJSON *view_volume_json(const sl_volume *v);
cJSON *view_exec_json(const sl_exec *e);

#endif
