/* oci.h — the JSON of container images, read from hostile archives: OCI index and
 * manifest, docker's manifest.json, the image config; and OCI whiteout names. No I/O. */
#ifndef SANDLOT_OCI_H
#define SANDLOT_OCI_H

#include "err.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OCI_JSON_MAX   (4 << 20) /* an index, a manifest or a config */
#define OCI_MAX_LAYERS 128	 /* overlayfs' own bound on lower layers is near it */

/* A content descriptor: what a blob is, its "sha256:<hex>" and size. */
typedef struct sl_oci_desc {
	char media_type[128];
	char digest[72];
	int64_t size;
	char platform[64]; /* "os/arch[/variant]" in an index; "" when not given */
} sl_oci_desc;

/* "sha256:" + 64 lowercase hex digits (the only algorithm the store takes). */
bool oci_digest_ok(const char *d);

/* An index (index.json, or a manifest list): the manifest for WANT ("linux/amd64")
 * in *OUT. One entry without a platform is taken as it is. With several platforms and
 * none WANT, SL_INVALID lists those there are. PICKED (may be NULL) says which platform
 * was taken, and of how many, for the caller to tell the user. */
int oci_index_pick(const char *text, size_t len, const char *want, sl_oci_desc *out,
		   char *picked, size_t picked_len, sl_err *err);

/* Is MEDIA_TYPE an index or manifest list (rather than one image's manifest)? */
bool oci_is_index(const char *media_type);

/* An image manifest: its config and layers (*LAYERS malloc'd, at most OCI_MAX_LAYERS;
 * free() it). Layers must be tar, tar+gzip or tar+zstd, OCI or docker media types. */
int oci_manifest_parse(const char *text, size_t len, sl_oci_desc *config,
		       sl_oci_desc **layers, size_t *n, sl_err *err);

/* docker save's manifest.json: exactly one image; its config path and layer paths
 * (malloc'd strings in a malloc'd array; oci_strv_free). Paths are checked relative,
 * without "..". */
int oci_docker_manifest_parse(const char *text, size_t len, char **config_path,
			      char ***layer_paths, size_t *n, sl_err *err);
void oci_strv_free(char **v, size_t n);

/* An image config, checked and reduced to what sandlot keeps, as a new object:
 * {"platform", "user", "workingDir", "env":[], "entrypoint":[]|null, "cmd":[]|null,
 *  "labels":{}, "exposedPorts":[], "diffIds":[]}, and "startCmd", "readyCmd" (strings)
 * when the config has sandlot's StartCmd, ReadyCmd (startcmd.h). */
int oci_config_parse(const char *text, size_t len, cJSON **out, sl_err *err);

enum oci_wh {
	OCI_WH_NONE,	/* an ordinary name */
	OCI_WH_FILE,	/* ".wh.NAME": NAME of the layers below is deleted */
	OCI_WH_OPAQUE,	/* ".wh..wh..opq": the directory's lower contents are hidden */
	OCI_WH_META,	/* another ".wh..wh." name (aufs' own files): skipped, as docker does */
	OCI_WH_INVALID, /* ".wh." naming "", "." or "..": refused */
};
/* What the directory entry NAME is; for OCI_WH_FILE, *TARGET is the name it deletes. */
enum oci_wh oci_whiteout_kind(const char *name, const char **target);

#endif
