/* archive_write.h — a directory tree written as a tar.zst stream (snapshot export),
 * with owners made canonical (a sandbox's uid range shifted back to 0..65535). */
#ifndef SANDLOT_ARCHIVE_WRITE_H
#define SANDLOT_ARCHIVE_WRITE_H

#include <stdint.h>

#include "err.h"

/* Write every entry under root (never following symlinks, not crossing mounts) to
 * out_fd as tar.zst. Owners in [uid_base, uid_base + 65536) become owner - uid_base. */
int archive_write_tree(int out_fd, const char *root, uint32_t uid_base, sl_err *err);

/* An overlayfs upper directory ROOT (an absolute path) written to OUT_FD as an OCI
 * layer: a plain tar (its sha256 is the layer's diff id), names relative, owners shifted
 * as above, overlay whiteouts (0:0 character devices) written as `.wh.NAME` and opaque
 * directories (trusted.overlay.opaque=y) followed by `.wh..wh..opq`. Paths in SKIP
 * (relative, NULL-terminated; may be NULL) are left out. */
int archive_write_layer(int out_fd, const char *root, uint32_t uid_base,
			const char *const *skip, sl_err *err);
#endif
