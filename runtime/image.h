/* image.h — the content-addressed image store: rootfs layers extracted once by sha256
 * under <state>/images/layers/<hex>, and names pointing at them. See docs/images.md. */
#ifndef SANDLOT_IMAGE_H
#define SANDLOT_IMAGE_H

#include "err.h"
#include <cjson/cJSON.h>
#include "owner.h"
#include "space.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sl_image {
	char name[128];
	char digest[72]; /* "sha256:<hex>" of the archive bytes as imported */
	char user[64];	 /* default user for commands ("root", "1000", "app:app") */
	char workdir[256];
	uint64_t size_bytes; /* total size of the layer's regular files */
	int64_t created;     /* unix seconds of the import */
	/* The key that imported or built it (owner.h). The admin's ("") are every key's
	 * base images, to use but not to replace or remove; a key's own are its alone. */
	char owner[SL_OWNER_LEN];
	/* "tar" (a root filesystem tarball), "docker-archive", "oci-archive" or
	 * "registry" (a container image, imported or pulled: its config is image_config's;
	 * the digest is its config's). */
	char format[16];
	char platform[32]; /* container images: "linux/amd64"; "" for a tarball */
	uint32_t nlayers;  /* a tarball's is 1 */
	/* image_list only: the part of size_bytes in layers another listed image holds
	 * too (stored once); the rest is the image's own. */
	uint64_t shared_bytes;
	/* image_import only: the platform taken from an index of several, and of which
	 * ("linux/amd64 (of 2 manifests: linux/amd64, linux/arm64)"); "" when no choice. */
	char picked[160];
} sl_image;

#define IMAGE_NAME_MAX 127

/* 0 when NAME is [a-z0-9] then up to 126 of [a-zA-Z0-9._-:@/], each '/' followed by
 * [a-z0-9] (a pulled reference: "localhost:5000/app:1"), not "sha256:..."; else SL_INVALID. */
int image_name_check(const char *name, sl_err *err);

/* Import the tar archive read from FD (file or pipe; tar, .gz, .zst, .xz, .bz2) as NAME,
 * either a root filesystem or a container image (docker save / docker-archive, OCI
 * image layout / oci-archive: told from the content; its layers verified, kept once by
 * diff id and merged with their whiteouts, its config kept for image_config),
 * replacing an existing NAME (SL_CONFLICT when another key's, or an admin image and the
 * thread acts for a key), owned by the thread's key. The layer is shared when the same bytes were imported
 * before. USER/WORKDIR (NULL = not given) override etc/sandlot/image.json in the archive,
 * whose defaults are "root" and "/". FLOOR (NULL: none) is the free space kept on the
 * state filesystem: an import refused at the start, or stopped as it writes, when the
 * disk goes under it (SL_NOSPACE). A failed import leaves the store as it was. */
int image_import(const char *state_dir, const sl_space_floor *floor, const char *name, int fd,
		 const char *user_or_null, const char *workdir_or_null, sl_image *out,
		 sl_err *err);

/* The config of a container image, checked and reduced (oci.h, oci_config_parse) plus
 * "layers": [{"digest" (diff id), "size"}], in *OUT (cJSON_Delete it); NULL for a
 * tarball image. */
int image_config(const char *state_dir, const sl_image *img, cJSON **out, sl_err *err);

/* The image's Entrypoint followed by its Cmd, as a NULL-terminated argv in *ARGV (one
 * malloc'd block: free() it), NULL when the image names no command. */
int image_command(const char *state_dir, const sl_image *img, char ***argv, sl_err *err);

/* By name, or by digest ("sha256:<hex>", bare hex, or a unique prefix of 12+ hex
 * digits). SL_NOTFOUND says how to import; an ambiguous prefix is SL_CONFLICT. */
int image_lookup(const char *state_dir, const char *name_or_digest, sl_image *out, sl_err *err);

/* Every name the thread's key may use (lookups too: another key's image is "not
 * found"), sorted; *OUT is malloc'd (free() it), NULL when *N is 0. */
int image_list(const char *state_dir, sl_image **out, size_t *n, sl_err *err);

/* Remove NAME (SL_NOTFOUND for another key's, SL_CONFLICT for an admin image when the
 * thread acts for a key), and its layer when no other name points to it. The caller checks first
 * that no sandbox uses the layer (sandbox_image_in_use). */
int image_remove(const char *state_dir, const char *name, sl_err *err);

/* ---- tags (image_tag.c): a name's repository is what comes before its tag ----
 * "app:v1" and "localhost:5000/team/app:1" have the repositories "app" and
 * "localhost:5000/team/app"; "app" and "app@sha256:..." are repositories whose name
 * carries no tag. */
size_t image_name_repo_len(const char *name);
/* NAME's repository with the tag TAG ("app:v1", "prod" -> "app:prod") in BUF; SL_INVALID
 * for a tag that is not 1-128 of [A-Za-z0-9_.-] starting with neither '.' nor '-' (docker's
 * rule), or a name too long. */
int image_tag_name(const char *name, const char *tag, char *buf, size_t len, sl_err *err);
/* TARGET made a name of the image SRC names (a name or digest the thread's key may use),
 * as `docker tag` does: the same layers and config, owned by the thread's key, created
 * now. An existing TARGET is moved (SL_CONFLICT when another key's, or an admin image and
 * the thread acts for a key); its previous layer stays while a name or a sandbox has it. */
int image_tag(const char *state_dir, const char *src, const char *target, sl_image *out,
	      sl_err *err);
/* The names the thread's key may use in NAME's repository (NAME itself, if it has no
 * tag, and every NAME-repository:tag), sorted, as image_list gives them. */
int image_tags(const char *state_dir, const char *name, sl_image **out, size_t *n, sl_err *err);

/* <state>/images/layers/<hex> for DIGEST ("sha256:<hex>" or "<hex>"). -1 (errno EINVAL)
 * when DIGEST is not a sha256 digest, ENAMETOOLONG when BUF is too small. */
int image_layer_path(const char *state_dir, const char *digest, char *buf, size_t len);
/* <state>/images made a nosuid,nodev mount of itself, if it exists and is not one yet
 * (root only; docs/isolation.md). Every context open calls it: the mount ends at reboot. */
/* Trees a dead import or removal left in <state>/images/tmp (their lock free): how
 * many, removed when REMOVE. Each import collects them first; so does `sandlot doctor
 * --repair`. */
int image_scratch_collect(const char *state_dir, bool remove);
int image_store_secure(const char *state_dir, sl_err *err);

/* Orphans of the store: image trees and records (images/layers, images/meta) that no
 * name holds and IN_USE(use_arg, digest) does not claim for a sandbox or snapshot, and
 * layers (images/diffs) no named image has: what a crash between an import's placing and
 * its naming leaves. REPORT(arg, path, what) for each, under the store lock; how many,
 * or -1. image_orphan_remove removes PATH if, under the lock again, it still is one. */
typedef bool (*image_in_use_fn)(void *use_arg, const char *digest);
typedef void (*image_orphan_fn)(void *arg, const char *path, const char *what);
int image_orphans(const char *state_dir, image_in_use_fn in_use, void *use_arg,
		  image_orphan_fn report, void *arg, sl_err *err);
int image_orphan_remove(const char *state_dir, const char *path, image_in_use_fn in_use,
			void *use_arg, sl_err *err);

/* A built image (runtime/build.c) as NAME: LAYOUT is an OCI image layout directory whose
 * new layers are plain tar blobs; a layer blob it leaves out is the store's layer of that
 * diff id (the base image's). Committed as an import is (format "dockerfile"). */
int image_import_build(const char *state_dir, const sl_space_floor *floor, const char *name,
		       const char *layout, sl_image *out, sl_err *err);

#endif
