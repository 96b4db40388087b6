/* criu_img.h — the one edit sandlot makes to CRIU's images: a user namespace's uid and
 * gid maps moved to another sandbox's range, for a fork with memory (docs/forks.md). */
#ifndef SANDLOT_CRIU_IMG_H
#define SANDLOT_CRIU_IMG_H

#include <stdint.h>

#include "err.h"

/* Every userns*.img in DIR: each extent of its uid_map and gid_map (CRIU's
 * images/userns.proto) mapped to host ids from BASE (lower_first = BASE + first).
 * SL_INTERNAL when a file is not what CRIU 4.1 writes, or an extent leaves 65536 ids. */
int criu_userns_rebase(const char *dir, uint32_t base, sl_err *err);

#endif
