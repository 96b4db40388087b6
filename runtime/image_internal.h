/* image_internal.h — what image.c (the store, names, tarball imports) shares with
 * image_oci.c (container archive imports): paths, the lock, scratch trees, records. */
#ifndef SANDLOT_IMAGE_INTERNAL_H
#define SANDLOT_IMAGE_INTERNAL_H

#include "image.h"

#include <limits.h>
#include <stdbool.h>

__attribute__((format(printf, 4, 5))) int img_path(char *buf, size_t len, sl_err *err,
						   const char *fmt, ...);
/* The store-wide flock (<state>/images/.lock): an fd, released by _cleanup_unlock_
 * (cleanup.h). */
int img_lock(const char *state_dir, sl_err *err);

/* A private scratch path under images/tmp (docs/images.md, "Store layout"). */
struct img_scratch {
	char path[PATH_MAX - 8];
	char lock[PATH_MAX];
	int fd;
};
void img_scratch_release(struct img_scratch *s);
#define _cleanup_scratch_ __attribute__((cleanup(img_scratch_release)))
int img_scratch_claim(const char *state_dir, const char *prefix, struct img_scratch *s,
		      sl_err *err);

/* The store's directories made (0700) and secured (image_store_secure). */
int img_prepare(const char *state_dir, sl_err *err);
bool img_user_ok(const char *u);
bool img_workdir_ok(const char *w);
int img_sync(const struct img_scratch *s, bool whole_fs, sl_err *err);
int img_load(const char *state_dir, const char *name, sl_image *out, sl_err *err);
/* May the thread's key replace or remove an image OWNER holds. */
bool img_mine(const char *owner);
char *img_record_json(const sl_image *img);

/* <state>/images/meta/<hex>.json of a container image (layers and config), and its
 * "layers" array read from there as a new array (NULL: none, or a tarball image). */
int img_meta_path(const char *state_dir, const char *digest, char *buf, size_t len, sl_err *err);
cJSON *img_meta_layers(const char *state_dir, const sl_image *img);

/* The container archive extracted at TREE (the input, unpacked), imported as IMG->name:
 * 1 when TREE is not one (a root filesystem), 0 imported (IMG filled), -1 failed.
 * FORMAT (NULL: told from the content) names an OCI layout's origin ("registry").
 * WAIT (NULL: none) as img_import_layout's. */
typedef struct img_blob_wait img_blob_wait;
int img_import_container(const char *state_dir, const sl_space_floor *floor, const char *tree,
			 const char *format, const img_blob_wait *wait, const char *user,
			 const char *workdir, sl_image *img, sl_err *err);

/* The store's directories made (0700) and its mount secured; every import's first step. */
int img_prepare(const char *state_dir, sl_err *err);
/* <state>/images/names/<name>.json of NAME ('/' stored as '+'). */
int img_record_path(const char *state_dir, const char *name, char *buf, size_t len,
		    sl_err *err);
/* A pull's layer blobs as they arrive: the import calls WAIT before it opens a layer's
 * blob, which returns once the blob DIGEST is in the layout (0) or its download failed
 * (-1, that error). *VERIFIED: this process hashed it as it came, so the import does not
 * hash it again (its diff id it still checks). */
struct img_blob_wait {
	int (*wait)(void *arg, const char *digest, bool *verified, sl_err *err);
	void *arg;
};

/* The OCI image layout at TREE (a pull's) imported as NAME, its format FORMAT, owned by
 * the thread's key; the store as it was on failure. Its blobs are verified here, but for
 * those WAIT (NULL: none) says were; a layer is extracted as soon as WAIT gives it. */
int img_import_layout(const char *state_dir, const sl_space_floor *floor, const char *name,
		      const char *tree, const char *format, const img_blob_wait *wait,
		      sl_image *out, sl_err *err);

#endif
