/* rundir.h — what the layers above runtime/ need of a sandbox's run dir
 * (<run>/sandboxes/<id>/), asked for by name: its idle clock, an execution's sandbox,
 * and a directory a façade may keep its own small records in. Callers never compose a
 * path under the run or state dirs themselves. */
#ifndef SANDLOT_RUNDIR_H
#define SANDLOT_RUNDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "err.h"

/* Move sandbox ID's idle clock to now. Only an existing clock is moved (the create makes
 * it): a request racing a destroy must not leave a file behind. Anything but a well-formed
 * sandbox id is ignored (a name would need a lookup on every request). */
void rundir_touch(const sl_config *cfg, const char *id);
/* The idle clock's last move, in ms since the epoch; 0 when there is none. */
int64_t rundir_activity_ms(const sl_config *cfg, const char *id);
/* The sandbox that holds execution EID (an exe_ id) in its run dir, into SID;
 * SL_NOTFOUND when none does. For protocols whose execution URLs name no sandbox. */
int rundir_exec_sandbox(const sl_config *cfg, const char *eid, char sid[32], sl_err *err);
/* <run>/sandboxes/<ID>/<FACADE> (FACADE a plain name, like "e2b-contexts"): a
 * directory that lives and dies with the sandbox's run dir. Made (0700) when MAKE. */
int rundir_facade_dir(const sl_config *cfg, const char *id, const char *facade, bool make,
		      char *buf, size_t len, sl_err *err);

#endif
