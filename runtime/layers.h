/* layers.h — a container image's layers made into one tree: each layer (extracted once,
 * kept by its diff id) hardlinked into the image's tree, OCI whiteouts applied. */
#ifndef SANDLOT_LAYERS_H
#define SANDLOT_LAYERS_H

#include "err.h"

/* Apply the extracted layer LAYER_FD (a directory, whiteouts still as ".wh." files) onto
 * the image tree FLAT_FD, as docker applies a layer: ".wh.NAME" deletes NAME of the
 * layers below, ".wh..wh..opq" hides a directory's lower contents, a directory is merged
 * (its owner, mode and times taken from this layer), anything else replaces what was
 * there (a directory replaced by a file or symlink, or the other way round, is removed
 * first). Files, symlinks and FIFOs are hardlinked, not copied: the layer's bytes are
 * stored once for every image holding it. Nothing is followed: a symlink of a lower
 * layer is replaced, never written through. LABEL ("layer 3 (sha256:ab...)") names the
 * layer in errors; a whiteout of "", "." or ".." is SL_INVALID. */
int layers_apply(int flat_fd, int layer_fd, const char *label, sl_err *err);

#endif
