/* image_oci.c — importing container image archives (docker save, OCI image layout):
 * every blob verified, layers extracted once by diff id and merged into the image's tree. */
#include "image_internal.h"

#include "crash.h"

#include "archive_extract.h"
#include "cleanup.h"
#include "fsutil.h"
#include "layers.h"
#include "log.h"
#include "oci.h"
#include "state.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define OCI_HOST_PLATFORM "linux/amd64"
#define OCI_MAX_NESTING	  4 /* an index naming an index naming ... */

/* One layer of the import: where its blob is in the unpacked archive, what it must
 * hash to, and where its tree is. */
struct oci_layer {
	char path[512];	      /* the blob, relative to the unpacked archive */
	char blob_digest[72]; /* "" when the archive names none (docker's legacy layout) */
	int64_t blob_size;    /* -1: not named */
	char diff_id[72];     /* from the config: the sha256 of the tar, decompressed */
	uint64_t tar_bytes;
	char tree[PATH_MAX]; /* its extracted tree: in the store, or in this import's scratch */
	bool is_new;	     /* extracted by this import (moved into the store at commit) */
	bool blob_verified;  /* hashed by the pull that fetched it, in this process */
};

struct oci_import {
	const char *state_dir;
	const sl_space_floor *floor;
	int root; /* the unpacked archive */
	const char *format;
	bool via_index; /* read through index.json (else docker's manifest.json) */
	char picked[160]; /* the platform taken from an index, for the user */
	char config_digest[72];
	cJSON *config; /* oci_config_parse's */
	struct oci_layer *layers;
	size_t nlayers;
	struct img_scratch work; /* the layers extracted here, and the image's tree */
	/* Builds only (image_import_build): a layer the store has is taken from it by its
	 * diff id (verified when it was stored), whether or not the layout has its blob;
	 * the blob is read only for a layer the store lacks. */
	bool store_layers;
	/* Builds only: the tree made durable by syncfs, not an fsync per file (img_sync). */
	bool sync_fs;
	/* Pulls only (img_import_layout): each layer's blob waited for as it downloads. */
	const img_blob_wait *wait;
	sl_err *err;
};

/* Open REL in the unpacked archive, never through a symlink, as a regular file. */
static int oi_open(struct oci_import *x, const char *rel, struct stat *st)
{
	struct open_how how = {
	    .flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC,
	    .resolve =
		RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	int fd = (int)syscall(SYS_openat2, x->root, rel, &how, sizeof(how));
	if (fd < 0)
		return sl_fail(x->err, SL_INVALID, errno, "the archive has no file '%.200s'", rel);
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return sl_fail(x->err, SL_INVALID, 0, "'%.200s' in the archive is not a regular file",
			       rel);
	}
	return fd;
}

static bool oi_has(int root, const char *rel)
{
	struct stat st;
	return fstatat(root, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

/* A JSON file of the archive, at most OCI_JSON_MAX bytes, and its sha256. */
static int oi_read(struct oci_import *x, const char *rel, char **text, size_t *len,
		   char digest[72])
{
	struct stat st;
	_cleanup_close_ int fd = oi_open(x, rel, &st);
	if (fd < 0)
		return -1;
	if (st.st_size > OCI_JSON_MAX)
		return sl_fail(x->err, SL_TOOLARGE, 0, "'%.200s' in the archive is over %d bytes",
			       rel, OCI_JSON_MAX);
	char *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return sl_fail(x->err, SL_EXHAUSTED, ENOMEM, "read %s", rel);
	size_t off = 0;
	while (off < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + off, (size_t)st.st_size - off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(buf);
			return sl_fail(x->err, SL_INTERNAL, r < 0 ? errno : EIO, "read %s", rel);
		}
		off += (size_t)r;
	}
	buf[off] = '\0';
	struct sha256_ctx md;
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_init(&md);
	sha256_update(&md, off, (const uint8_t *)buf);
	sha256_digest(&md, sizeof(d), d);
	strcpy(digest, "sha256:");
	for (unsigned i = 0; i < sizeof(d); i++)
		snprintf(digest + 7 + 2 * i, 3, "%02x", d[i]);
	*text = buf;
	*len = off;
	return 0;
}

/* A blob the archive names by descriptor: read and checked against its digest and size. */
static int oi_read_blob(struct oci_import *x, const sl_oci_desc *d, const char *what, char **text,
			size_t *len)
{
	char rel[96], got[72];
	snprintf(rel, sizeof(rel), "blobs/sha256/%s", d->digest + 7);
	if (oi_read(x, rel, text, len, got) < 0)
		return sl_wrap(x->err, "%s %.19s", what, d->digest);
	if (strcmp(got, d->digest) || (int64_t)*len != d->size) {
		free(*text);
		*text = NULL;
		return sl_fail(x->err, SL_INVALID, 0,
			       "%s: digest mismatch: named %s (%lld bytes), the blob is %s (%zu "
			       "bytes)",
			       what, d->digest, (long long)d->size, got, *len);
	}
	return 0;
}

static int oi_set_config(struct oci_import *x, const char *text, size_t len)
{
	if (oci_config_parse(text, len, &x->config, x->err) < 0)
		return -1;
	const char *plat = cJSON_GetObjectItemCaseSensitive(x->config, "platform")->valuestring;
	if (strncmp(plat, OCI_HOST_PLATFORM, strlen(OCI_HOST_PLATFORM)))
		return sl_fail(x->err, SL_INVALID, 0,
			       "the image is for %s; this host runs %s images only", plat,
			       OCI_HOST_PLATFORM);
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(x->config, "diffIds");
	if ((size_t)cJSON_GetArraySize(ids) != x->nlayers)
		return sl_fail(x->err, SL_INVALID, 0,
			       "the image has %zu layers but its config lists %d diff ids",
			       x->nlayers, cJSON_GetArraySize(ids));
	for (size_t i = 0; i < x->nlayers; i++)
		snprintf(x->layers[i].diff_id, sizeof(x->layers[i].diff_id), "%s",
			 cJSON_GetArrayItem(ids, (int)i)->valuestring);
	return 0;
}

/* OCI image layout: index.json -> (index ->)* manifest -> config and layers. */
static int oi_read_oci(struct oci_import *x)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	char dg[72];
	if (oi_read(x, "index.json", &text, &len, dg) < 0)
		return -1;
	sl_oci_desc m = {.media_type = "application/vnd.oci.image.index.v1+json"};
	for (int depth = 0; oci_is_index(m.media_type); depth++) {
		char picked[160];
		if (depth > OCI_MAX_NESTING)
			return sl_fail(x->err, SL_INVALID, 0, "image indexes nest deeper than %d",
				       OCI_MAX_NESTING);
		if (oci_index_pick(text, len, OCI_HOST_PLATFORM, &m, picked, sizeof(picked),
				   x->err) < 0)
			return -1;
		if (strstr(picked, ", ")) /* a choice among several: say which */
			snprintf(x->picked, sizeof(x->picked), "%s", picked);
		free(text);
		text = NULL;
		if (oi_read_blob(x, &m, oci_is_index(m.media_type) ? "image index" : "manifest",
				 &text, &len) < 0)
			return -1;
		/* A manifest without a mediaType field names itself by its content. */
		if (!m.media_type[0])
			snprintf(m.media_type, sizeof(m.media_type), "manifest");
	}
	sl_oci_desc cfg, *ls = NULL;
	size_t n;
	if (oci_manifest_parse(text, len, &cfg, &ls, &n, x->err) < 0)
		return -1;
	x->layers = calloc(n ? n : 1, sizeof(*x->layers));
	if (!x->layers) {
		free(ls);
		return sl_fail(x->err, SL_EXHAUSTED, ENOMEM, "image layers");
	}
	x->nlayers = n;
	for (size_t i = 0; i < n; i++) {
		snprintf(x->layers[i].path, sizeof(x->layers[i].path), "blobs/sha256/%s",
			 ls[i].digest + 7);
		snprintf(x->layers[i].blob_digest, sizeof(x->layers[i].blob_digest), "%s",
			 ls[i].digest);
		x->layers[i].blob_size = ls[i].size;
	}
	free(ls);
	free(text);
	text = NULL;
	if (oi_read_blob(x, &cfg, "config", &text, &len) < 0)
		return -1;
	snprintf(x->config_digest, sizeof(x->config_digest), "%s", cfg.digest);
	return oi_set_config(x, text, len);
}

/* "blobs/sha256/<hex>" or "<hex>.json"/"<hex>/layer.tar": the digest a docker archive's
 * file name claims, or "" when it claims none. */
static void oi_name_digest(const char *path, char out[72])
{
	const char *base = strrchr(path, '/');
	out[0] = '\0';
	char hex[65];
	if (!strncmp(path, "blobs/sha256/", 13))
		snprintf(hex, sizeof(hex), "%s", path + 13);
	else if (base && !strcmp(base, "/layer.tar") && base - path == 64)
		snprintf(hex, sizeof(hex), "%.64s", path);
	else if (strlen(path) == 69 && !strcmp(path + 64, ".json"))
		snprintf(hex, sizeof(hex), "%.64s", path);
	else
		return;
	char d[72];
	snprintf(d, sizeof(d), "sha256:%s", hex);
	if (oci_digest_ok(d))
		strcpy(out, d);
}

/* docker save: manifest.json -> config file (named by its digest) and layer files. */
static int oi_read_docker(struct oci_import *x)
{
	_cleanup_free_ char *text = NULL, *cfg_path = NULL;
	size_t len, n;
	char dg[72], **paths = NULL;
	if (oi_read(x, "manifest.json", &text, &len, dg) < 0 ||
	    oci_docker_manifest_parse(text, len, &cfg_path, &paths, &n, x->err) < 0)
		return -1;
	x->layers = calloc(n ? n : 1, sizeof(*x->layers));
	if (!x->layers) {
		oci_strv_free(paths, n);
		return sl_fail(x->err, SL_EXHAUSTED, ENOMEM, "image layers");
	}
	x->nlayers = n;
	for (size_t i = 0; i < n; i++) {
		snprintf(x->layers[i].path, sizeof(x->layers[i].path), "%s", paths[i]);
		oi_name_digest(paths[i], x->layers[i].blob_digest);
		x->layers[i].blob_size = -1;
	}
	oci_strv_free(paths, n);
	free(text);
	text = NULL;
	char claimed[72];
	if (oi_read(x, cfg_path, &text, &len, x->config_digest) < 0)
		return sl_wrap(x->err, "config");
	oi_name_digest(cfg_path, claimed);
	if (claimed[0] && strcmp(claimed, x->config_digest))
		return sl_fail(x->err, SL_INVALID, 0,
			       "config %s: digest mismatch: its name says %s, its content is %s",
			       cfg_path, claimed, x->config_digest);
	return oi_set_config(x, text, len);
}

/* "layer 3 of 5 (sha256:0123456789ab)" */
static void oi_label(const struct oci_import *x, size_t i, char *buf, size_t len)
{
	snprintf(buf, len, "layer %zu of %zu (%.19s)", i + 1, x->nlayers, x->layers[i].diff_id);
}

/* Layer I's blob hashes to what its manifest names (BLOB), its tar to the config's diff
 * id (TAR). */
static int oi_check_digests(struct oci_import *x, size_t i, const char *label, const char *blob,
			    const char *tar)
{
	const struct oci_layer *l = &x->layers[i];
	if (l->blob_digest[0] && strcmp(l->blob_digest + 7, blob))
		return sl_fail(x->err, SL_INVALID, 0,
			       "%s: digest mismatch: the manifest names %s, the blob is sha256:%s",
			       label, l->blob_digest, blob);
	if (strcmp(l->diff_id + 7, tar))
		return sl_fail(x->err, SL_INVALID, 0,
			       "%s: digest mismatch: the config's diff id is %s, the layer's tar is "
			       "sha256:%s",
			       label, l->diff_id, tar);
	return 0;
}

/* Layer I: its tree found earlier in this image or in the store (its blob verified:
 * digest, size, diff id), or extracted into the import's scratch while its digests are
 * computed, and kept only if they match. */
static int oi_layer(struct oci_import *x, size_t i)
{
	struct oci_layer *l = &x->layers[i];
	char label[80], blob[65], tar[65];
	oi_label(x, i, label, sizeof(label));
	struct stat st;
	if (x->store_layers) {
		if (img_path(l->tree, sizeof(l->tree), x->err, "%s/images/diffs/%s",
			     x->state_dir, l->diff_id + 7) < 0)
			return -1;
		if (lstat(l->tree, &st) == 0 && S_ISDIR(st.st_mode)) {
			l->tar_bytes = l->blob_size > 0 ? (uint64_t)l->blob_size : 0;
			return 0;
		}
		if (!oi_has(x->root, l->path))
			return sl_fail(x->err, SL_CONFLICT, 0,
				       "%s: not in the store any more (its image was removed "
				       "during the build?); build again",
				       label);
	}
	if (x->wait && l->blob_digest[0] &&
	    x->wait->wait(x->wait->arg, l->blob_digest, &l->blob_verified, x->err) < 0)
		return -1;
	_cleanup_close_ int fd = oi_open(x, l->path, &st);
	if (fd < 0)
		return sl_wrap(x->err, "%s", label);
	if (l->blob_size >= 0 && st.st_size != l->blob_size)
		return sl_fail(x->err, SL_INVALID, 0,
			       "%s: the blob is %lld bytes, the manifest says %lld (truncated?)",
			       label, (long long)st.st_size, (long long)l->blob_size);
	/* Taken from this image or the store: the blob is checked, nothing extracted. */
	bool have = false;
	for (size_t j = 0; j < i && !have; j++)
		if (!strcmp(x->layers[j].diff_id, l->diff_id)) {
			memcpy(l->tree, x->layers[j].tree, sizeof(l->tree));
			have = true;
		}
	if (!have) {
		if (img_path(l->tree, sizeof(l->tree), x->err, "%s/images/diffs/%s",
			     x->state_dir, l->diff_id + 7) < 0)
			return -1;
		have = lstat(l->tree, &st) == 0 && S_ISDIR(st.st_mode); /* an earlier import's */
	}
	if (have) {
		if (archive_blob_digests(fd, blob, tar, &l->tar_bytes, x->err) < 0)
			return sl_wrap(x->err, "%s", label);
		return oi_check_digests(x, i, label, blob, tar);
	}
	/* New: extracted into the scratch and hashed in the same pass, then checked; the
	 * tree is used (merged, moved into the store) only once both digests matched. */
	if (img_path(l->tree, sizeof(l->tree), x->err, "%s/layer-%zu", x->work.path, i) < 0)
		return -1;
	sl_archive_limits lim;
	archive_limits_default(&lim);
	if (x->floor)
		lim.min_free = *x->floor;
	if (archive_extract_layer(fd, l->tree, &lim, l->blob_verified, blob, tar, &l->tar_bytes,
				  NULL, x->err) < 0) {
		/* A blob that is not what its manifest names says so, rather than how its
		 * bytes broke the reader. */
		sl_err e;
		if (lseek(fd, 0, SEEK_SET) == 0 &&
		    archive_blob_digests(fd, blob, tar, &l->tar_bytes, &e) == 0 &&
		    oi_check_digests(x, i, label, blob, tar) < 0)
			return -1;
		return sl_wrap(x->err, "%s", label);
	}
	if (l->blob_verified)
		snprintf(blob, sizeof(blob), "%s", l->blob_digest + 7);
	if (oi_check_digests(x, i, label, blob, tar) < 0) {
		sl_err e;
		if (fs_remove_tree(l->tree, &e) < 0)
			sl_log(SL_LOG_ERROR, "image store: %s", e.msg);
		return -1;
	}
	l->is_new = true;
	/* Its writeback started now, while the next layers come: img_sync waits less. */
	sl_err e;
	fs_sync_tree(l->tree, true, &e);
	return 0;
}

static int oi_flatten(struct oci_import *x, const char *flat)
{
	if (mkdir(flat, 0755) < 0)
		return sl_sysfail(x->err, "create %s", flat);
	_cleanup_close_ int ffd = open(flat, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ffd < 0)
		return sl_sysfail(x->err, "open %s", flat);
	for (size_t i = 0; i < x->nlayers; i++) {
		char label[80];
		oi_label(x, i, label, sizeof(label));
		_cleanup_close_ int lfd =
		    open(x->layers[i].tree, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (lfd < 0)
			return sl_sysfail(x->err, "%s: open %s", label, x->layers[i].tree);
		if (layers_apply(ffd, lfd, label, x->err) < 0)
			return -1;
	}
	return 0;
}

static char *oi_meta_json(const struct oci_import *x)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "format", x->format);
	cJSON_AddStringToObject(o, "config_digest", x->config_digest);
	cJSON *ls = cJSON_AddArrayToObject(o, "layers");
	for (size_t i = 0; i < x->nlayers; i++) {
		cJSON *l = cJSON_CreateObject();
		cJSON_AddStringToObject(l, "digest", x->layers[i].diff_id);
		if (x->layers[i].blob_digest[0])
			cJSON_AddStringToObject(l, "blob", x->layers[i].blob_digest);
		cJSON_AddNumberToObject(l, "size", (double)x->layers[i].tar_bytes);
		cJSON_AddItemToArray(ls, l);
	}
	cJSON *c = cJSON_Duplicate(x->config, true);
	cJSON_DeleteItemFromObjectCaseSensitive(c, "diffIds");
	cJSON_AddItemToObject(o, "config", c);
	char *s = cJSON_Print(o);
	cJSON_Delete(o);
	return s;
}

/* Under the store lock: the new layers and the image's tree moved into place (each
 * dropped when an equal one got there first), the meta record, then the name. */
static int oi_commit(struct oci_import *x, const char *flat, const sl_image *img)
{
	sl_err *err = x->err;
	char tree[PATH_MAX], meta[PATH_MAX], rec[PATH_MAX];
	if (image_layer_path(x->state_dir, img->digest, tree, sizeof(tree)) < 0)
		return sl_fail(err, SL_INTERNAL, errno, "image store: layer path");
	if (img_meta_path(x->state_dir, img->digest, meta, sizeof(meta), err) < 0 ||
	    img_record_path(x->state_dir, img->name, rec, sizeof(rec), err) < 0)
		return -1;
	_cleanup_free_ char *meta_json = oi_meta_json(x);
	_cleanup_free_ char *rec_json = img_record_json(img);
	if (!meta_json || !rec_json)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "image store: encode records");
	_cleanup_unlock_ int lock = img_lock(x->state_dir, err);
	if (lock < 0)
		return -1;
	sl_image old;
	sl_err e;
	if (img_load(x->state_dir, img->name, &old, &e) == 0 && !img_mine(old.owner))
		return sl_fail(err, SL_CONFLICT, 0,
			       "image name %s is taken (another API key's, or an admin image)",
			       img->name);
	struct stat st;
	for (size_t i = 0; i < x->nlayers; i++) {
		struct oci_layer *l = &x->layers[i];
		char dst[PATH_MAX];
		if (img_path(dst, sizeof(dst), err, "%s/images/diffs/%s", x->state_dir,
			     l->diff_id + 7) < 0)
			return -1;
		if (!l->is_new) {
			/* Taken from the store: an `image rm` may have freed it since. Its
			 * files are in our tree (hardlinks), but the store would not know. */
			if (!strcmp(l->tree, dst) && lstat(dst, &st) < 0)
				return sl_fail(err, SL_CONFLICT, 0,
					       "layer %zu (%.19s) was removed from the store during "
					       "the import; import again",
					       i + 1, l->diff_id);
			continue;
		}
		if (lstat(dst, &st) == 0)
			continue; /* stored meanwhile; ours goes with the scratch */
		if (rename(l->tree, dst) < 0)
			return sl_sysfail(err, "image store: move %s to %s", l->tree, dst);
	}
	bool moved = false;
	if (lstat(tree, &st) < 0) {
		if (rename(flat, tree) < 0)
			return sl_sysfail(err, "image store: move %s to %s", flat, tree);
		moved = true;
	}
	/* Layers and tree in place, neither record written: `sandlot doctor` finds them. */
	sl_crash_point("import-layers-placed");
	if (state_write_atomic(meta, meta_json, strlen(meta_json), err) < 0 ||
	    state_write_atomic(rec, rec_json, strlen(rec_json), err) < 0) {
		/* The layers stay (content-addressed, complete); the image's tree goes. */
		if (moved && fs_remove_tree(tree, &e) < 0)
			sl_log(SL_LOG_ERROR, "image store: %s", e.msg);
		return -1;
	}
	return 0;
}

static void oi_release(struct oci_import *x)
{
	cJSON_Delete(x->config);
	free(x->layers);
	if (x->root >= 0)
		close(x->root);
	if (x->work.fd >= 0) {
		sl_err e;
		if (fs_remove_tree(x->work.path, &e) < 0)
			sl_log(SL_LOG_ERROR, "image store: %s", e.msg);
		img_scratch_release(&x->work);
	}
}

static int oi_import(struct oci_import *x, const char *user, const char *workdir, sl_image *img)
{
	if (x->via_index ? oi_read_oci(x) < 0 : oi_read_docker(x) < 0)
		return -1;
	snprintf(img->picked, sizeof(img->picked), "%s", x->picked);
	if (img_scratch_claim(x->state_dir, "oci-", &x->work, x->err) < 0)
		return -1;
	if (mkdir(x->work.path, 0700) < 0)
		return sl_sysfail(x->err, "create %s", x->work.path);
	for (size_t i = 0; i < x->nlayers; i++)
		if (oi_layer(x, i) < 0)
			return -1;
	char flat[PATH_MAX];
	if (img_path(flat, sizeof(flat), x->err, "%s/image", x->work.path) < 0 ||
	    oi_flatten(x, flat) < 0)
		return -1;
	const char *cu = cJSON_GetObjectItemCaseSensitive(x->config, "user")->valuestring;
	const char *cw = cJSON_GetObjectItemCaseSensitive(x->config, "workingDir")->valuestring;
	const char *u = user ? user : cu[0] ? cu : "root";
	const char *w = workdir ? workdir : cw[0] ? cw : "/";
	if (!img_user_ok(u))
		return sl_fail(x->err, SL_INVALID, 0,
			       "the image's User '%.80s' is not a user name, uid or user:group", u);
	if (!img_workdir_ok(w))
		return sl_fail(x->err, SL_INVALID, 0,
			       "the image's WorkingDir '%.80s' is not an absolute path", w);
	snprintf(img->user, sizeof(img->user), "%s", u);
	snprintf(img->workdir, sizeof(img->workdir), "%s", w);
	snprintf(img->digest, sizeof(img->digest), "%s", x->config_digest);
	snprintf(img->format, sizeof(img->format), "%s", x->format);
	snprintf(img->platform, sizeof(img->platform), "%s",
		 cJSON_GetObjectItemCaseSensitive(x->config, "platform")->valuestring);
	img->nlayers = (uint32_t)x->nlayers;
	img->size_bytes = 0;
	for (size_t i = 0; i < x->nlayers; i++)
		img->size_bytes += x->layers[i].tar_bytes;
	if (img_sync(&x->work, x->sync_fs, x->err) < 0)
		return -1;
	return oi_commit(x, flat, img);
}

int img_import_container(const char *state_dir, const sl_space_floor *floor, const char *tree,
			 const char *format, const img_blob_wait *wait, const char *user,
			 const char *workdir, sl_image *img, sl_err *err)
{
	struct oci_import x = {.state_dir = state_dir, .floor = floor, .err = err,
			       .work = {.fd = -1}, .wait = wait};
	x.root = open(tree, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (x.root < 0)
		return sl_sysfail(err, "open %s", tree);
	/* docker save writes both since docker 25: the OCI index names the digests. */
	x.via_index = oi_has(x.root, "oci-layout") && oi_has(x.root, "index.json");
	if (oi_has(x.root, "manifest.json"))
		x.format = "docker-archive";
	else if (x.via_index)
		x.format = "oci-archive";
	else {
		close(x.root);
		return 1;
	}
	if (format && x.via_index)
		x.format = format;
	int rc = oi_import(&x, user, workdir, img);
	oi_release(&x);
	return rc;
}

int image_import_build(const char *state_dir, const sl_space_floor *floor, const char *name,
		       const char *layout, sl_image *out, sl_err *err)
{
	if (image_name_check(name, err) < 0 || img_prepare(state_dir, err) < 0)
		return -1;
	image_scratch_collect(state_dir, true);
	sl_image img = {0};
	snprintf(img.name, sizeof(img.name), "%s", name);
	img.created = (int64_t)time(NULL);
	snprintf(img.owner, sizeof(img.owner), "%s", owner_acting());
	struct oci_import x = {.state_dir = state_dir, .floor = floor, .err = err,
			       .work = {.fd = -1}, .store_layers = true, .sync_fs = true,
			       .via_index = true, .format = "dockerfile"};
	x.root = open(layout, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (x.root < 0)
		return sl_sysfail(err, "open %s", layout);
	int rc = oi_import(&x, NULL, NULL, &img);
	oi_release(&x);
	if (rc < 0)
		return sl_wrap(err, "build image %s", name);
	if (out)
		*out = img;
	return 0;
}
