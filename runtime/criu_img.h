/* criu_img.h — the edits sandlot makes to CRIU's images, for a fork with memory
 * (docs/forks.md): a user namespace's uid and gid maps moved to another sandbox's range,
 * and the hostname of its uts namespace made the copy's. */
#ifndef SANDLOT_CRIU_IMG_H
#define SANDLOT_CRIU_IMG_H

#include <stdint.h>

#include "err.h"

/* Every userns*.img in DIR: each extent of its uid_map and gid_map (CRIU's
 * images/userns.proto) mapped to host ids from BASE (lower_first = BASE + first).
 * SL_INTERNAL when a file is not what CRIU 4.1 writes, or an extent leaves 65536 ids. */
int criu_userns_rebase(const char *dir, uint32_t base, sl_err *err);
/* Every utsns*.img in DIR: its nodename (the hostname) made HOSTNAME (at most 64
 * bytes), its domain name kept. */
int criu_utsns_rename(const char *dir, const char *hostname, sl_err *err);

#endif
