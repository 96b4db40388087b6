/* secretfs.h — a sandbox's secret files: a tmpfs made on the host side and never
 * attached there, filled with the values its record names, moved in at each launch. */
#ifndef SANDLOT_SECRETFS_H
#define SANDLOT_SECRETFS_H

#include "config.h"
#include "err.h"
#include "record.h"

/* Is PATH one a secret file may have: SECRET_FILES_DIR/<1-128 of [A-Za-z0-9_.-]>? */
int secretfs_path_check(const char *path, sl_err *err);

/* A detached tmpfs (into *FD) holding SB's secret files (sb->secret_files), each mode
 * 0400 and owned by the sandbox's user (looked up in the writable layer UPPER's
 * /etc/passwd, else the image layer's IMAGE_LAYER), as host ids of its range; mounted
 * read-only, nosuid, nodev, noexec. The values are wiped from this process's memory
 * once written. */
int secretfs_make(const sl_config *cfg, const sl_sandbox *sb, const char *image_layer,
		  const char *upper, int *fd, sl_err *err);

#endif
