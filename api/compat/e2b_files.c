/* e2b_files.c — envd's plain-HTTP side: GET /health (isRunning), GET /files (a file's
 * bytes) and POST /files (multipart, or octet-stream with optional gzip), over sbxfs as
 * the /v1 file routes. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <zlib.h>

#include "cleanup.h"
#include "sbxfs.h"
#include "multipart.h"
#include "e2b.h"

enum MHD_Result e2b_envd_health(api_req *r)
{
	sl_sandbox sb;
	enum MHD_Result ret;
	if (e2b_plane_sandbox(r, false, &sb, &ret) < 0)
		return ret;
	sandbox_free(&sb);
	return api_reply_empty(r, 204);
}

/* ---- metadata (envd 0.6.2) ---- */

#define META_HEADER "X-Metadata-"
#define META_MAX    64 /* keys per upload */

void e2b_entry_metadata(sl_ctx *ctx, const sl_sandbox *sb, const char *path, cJSON *o)
{
	cJSON *meta = NULL;
	sl_err err = {0};
	if (sbxfs_xattrs_get(ctx, sb, path, E2B_META_NS, &meta, &err) < 0 ||
	    !cJSON_GetArraySize(meta)) {
		cJSON_Delete(meta);
		return;
	}
	cJSON_AddItemToObject(o, "metadata", meta);
}

/* An HTTP token (RFC 9110), as the SDK checks keys: they travel as header names. */
static bool meta_key_ok(const char *k)
{
	if (!*k)
		return false;
	for (; *k; k++)
		if (!isalnum((unsigned char)*k) && !strchr("!#$%&'*+-.^_`|~", *k))
			return false;
	return true;
}

static bool meta_value_ok(const char *v)
{
	for (; *v; v++)
		if (*v < 0x20 || *v > 0x7e)
			return false;
	return true;
}

struct meta_scan {
	cJSON *meta;
	sl_err *err;
};

/* Header names are case-insensitive on the way (fetch sends them lower-case), so the
 * keys are kept lower-case, as envd keeps them. */
static enum MHD_Result meta_header(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct meta_scan *m = cls;
	size_t pl = strlen(META_HEADER);
	if (strncasecmp(key, META_HEADER, pl))
		return MHD_YES;
	char k[256];
	if (snprintf(k, sizeof(k), "%s", key + pl) >= (int)sizeof(k) || !meta_key_ok(k)) {
		sl_fail(m->err, SL_INVALID, 0, "metadata key %.64s: not an HTTP token", key + pl);
		return MHD_NO;
	}
	for (char *c = k; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	if (!meta_value_ok(value ? value : "")) {
		sl_fail(m->err, SL_INVALID, 0, "metadata %s: the value must be printable ASCII", k);
		return MHD_NO;
	}
	if (cJSON_GetArraySize(m->meta) >= META_MAX) {
		sl_fail(m->err, SL_INVALID, 0, "metadata: at most %d keys", META_MAX);
		return MHD_NO;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(m->meta, k);
	cJSON_AddStringToObject(m->meta, k, value ? value : "");
	return MHD_YES;
}

/* The upload's X-Metadata-* headers as an object (empty when none: an overwrite then
 * clears what the file had). */
static cJSON *upload_metadata(api_req *r, sl_err *err)
{
	struct meta_scan m = {cJSON_CreateObject(), err};
	if (!m.meta) {
		sl_fail(err, SL_INTERNAL, ENOMEM, "upload metadata");
		return NULL;
	}
	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, meta_header, &m);
	if (err->kind) {
		cJSON_Delete(m.meta);
		return NULL;
	}
	return m.meta;
}

/* ---- /files ---- */

enum MHD_Result e2b_files_get(api_req *r)
{
	sl_sandbox sb;
	enum MHD_Result ret;
	sl_err err = {0};
	char user[64];
	if (e2b_plane_sandbox(r, false, &sb, &ret) < 0)
		return ret;
	e2b_request_user(r, user);
	_cleanup_free_ char *path = e2b_path(&sb, user, api_query(r, "path"), &err);
	struct MHD_Response *resp = path ? api_file_response(r->srv, &sb, path, &err) : NULL;
	sandbox_free(&sb);
	if (!resp)
		return e2b_reply_err(r, &err);
	return api_reply(r, 200, resp);
}

/* An upload: octet-stream goes straight to the file, and so does each part named "file"
 * of a multipart body (read as a stream: api/multipart.c). A failure met early is kept
 * and answered once the body is in. */
typedef struct files_up {
	sl_sandbox sb;
	bool have_sb, multipart;
	enum MHD_Result early; /* the gate's reply was queued: nothing more to say */
	bool replied;
	sl_err err;
	char user[64];
	char *path; /* the file being written: octet-stream's, or the current part's */
	int fd;
	api_multipart mp;
	api_req *r;
	cJSON *written; /* multipart: the files written */
	cJSON *meta;	/* X-Metadata-*: every file of the upload gets it */
	bool gzip;	/* Content-Encoding: gzip (octet-stream only) */
	z_stream z;
} files_up;

static void files_up_free(api_req *r)
{
	files_up *u = r->upload;
	if (!u)
		return;
	if (u->fd >= 0)
		close(u->fd);
	if (u->gzip)
		inflateEnd(&u->z);
	if (u->have_sb)
		sandbox_free(&u->sb);
	api_multipart_free(&u->mp);
	cJSON_Delete(u->written);
	cJSON_Delete(u->meta);
	free(u->path);
	free(u);
	r->upload = NULL;
}

static void written(cJSON *arr, const char *path, const cJSON *meta)
{
	cJSON *o = cJSON_CreateObject();
	const char *slash = strrchr(path, '/');
	cJSON_AddStringToObject(o, "path", path);
	cJSON_AddStringToObject(o, "name", slash ? slash + 1 : path);
	cJSON_AddStringToObject(o, "type", "file");
	if (cJSON_GetArraySize(meta))
		cJSON_AddItemToObject(o, "metadata", cJSON_Duplicate(meta, true));
	cJSON_AddItemToArray(arr, o);
}

/* The file's data is in: its metadata replaces what it had, then it is closed. */
static int upload_finish(files_up *u, sl_err *err)
{
	int fd = u->fd;
	u->fd = -1;
	if (sbxfs_fd_xattrs_set(&u->sb, fd, u->path, E2B_META_NS, u->meta, err) < 0) {
		close(fd);
		return -1;
	}
	if (close(fd) < 0)
		return sbxfs_io_fail(&u->sb, "write", u->path, errno, err);
	return 0;
}

/* A part: envd takes those named "file" only, to ?path= or else their filename. */
static int part_begin(void *arg, const char *hdr, sl_err *err)
{
	files_up *u = arg;
	const char *name = strcasestr(hdr, " name=\"");
	if (!name || strncmp(name + 7, "file\"", 5))
		return 0;
	const char *fn = strcasestr(hdr, "filename=\"");
	_cleanup_free_ char *fname = fn ? strndup(fn + 10, strcspn(fn + 10, "\"")) : NULL;
	const char *q = api_query(u->r, "path");
	free(u->path);
	if (!(u->path = e2b_path(&u->sb, u->user, q ? q : fname, err)))
		return -1;
	return sbxfs_open_write(u->r->srv->ctx, &u->sb, u->path, 0, &u->fd, err);
}

static int part_data(void *arg, const char *data, size_t n, sl_err *err)
{
	files_up *u = arg;
	return u->fd < 0 ? 0 : sbxfs_write_all(&u->sb, u->fd, u->path, data, n, err);
}

static int part_end(void *arg, sl_err *err)
{
	files_up *u = arg;
	if (u->fd < 0)
		return 0;
	if (upload_finish(u, err) < 0)
		return -1;
	written(u->written, u->path, u->meta);
	return 0;
}

int e2b_files_post_begin(api_req *r, sl_err *err)
{
	files_up *u = calloc(1, sizeof(*u));
	if (!u)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "upload");
	u->fd = -1;
	r->upload = u;
	r->upload_free = files_up_free;
	if (e2b_plane_sandbox(r, false, &u->sb, &u->early) < 0) {
		u->replied = true;
		return 0;
	}
	u->have_sb = true;
	e2b_request_user(r, u->user);
	if (!(u->meta = upload_metadata(r, &u->err)))
		return 0; /* refused before any file is made */
	const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Type");
	const char *enc = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Encoding");
	bool gz = enc && !strcasecmp(enc, "gzip");
	if (enc && !gz && strcasecmp(enc, "identity")) {
		sl_fail(&u->err, SL_INVALID, 0, "Content-Encoding %s: not supported", enc);
		return 0;
	}
	if (gz) {
		if (ct && !strncasecmp(ct, "multipart/", 10)) {
			sl_fail(&u->err, SL_INVALID, 0, "gzip: for octet-stream uploads only");
			return 0;
		}
		if (inflateInit2(&u->z, 16 + MAX_WBITS) != Z_OK)
			return sl_fail(err, SL_INTERNAL, ENOMEM, "upload: gzip");
		u->gzip = true;
	}
	if (ct && !strncasecmp(ct, "multipart/form-data", 19)) {
		static const api_multipart_cb cb = {part_begin, part_data, part_end};
		u->multipart = true;
		u->r = r;
		if (!(u->written = cJSON_CreateArray()))
			return sl_fail(err, SL_INTERNAL, ENOMEM, "upload");
		api_multipart_init(&u->mp, ct, &cb, u, &u->err);
		return 0;
	}
	u->path = e2b_path(&u->sb, u->user, api_query(r, "path"), &u->err);
	if (u->path)
		sbxfs_open_write(r->srv->ctx, &u->sb, u->path, 0, &u->fd, &u->err);
	return 0;
}

static int write_all(files_up *u, const char *data, size_t len)
{
	return sbxfs_write_all(&u->sb, u->fd, u->path, data, len, &u->err);
}

static int gunzip_chunk(files_up *u, const char *data, size_t len)
{
	char out[64 * 1024];
	u->z.next_in = (Bytef *)data;
	u->z.avail_in = (uInt)len;
	while (u->z.avail_in) {
		u->z.next_out = (Bytef *)out;
		u->z.avail_out = sizeof(out);
		int zr = inflate(&u->z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
			return sl_fail(&u->err, SL_INVALID, 0, "the gzip body is damaged (%s)",
				       u->z.msg ? u->z.msg : "inflate");
		if (write_all(u, out, sizeof(out) - u->z.avail_out) < 0)
			return -1;
		if (zr == Z_STREAM_END) {
			inflateReset(&u->z); /* concatenated members, as gunzip takes them */
		} else if (zr == Z_BUF_ERROR) {
			break;
		}
	}
	return 0;
}

int e2b_files_post_chunk(api_req *r, const char *data, size_t len, sl_err *err)
{
	files_up *u = r->upload;
	if (!u || u->replied || u->err.kind)
		return 0;
	if (u->multipart) {
		api_multipart_feed(&u->mp, data, len, &u->err);
		return 0;
	}
	if (u->gzip) {
		gunzip_chunk(u, data, len);
		return 0;
	}
	write_all(u, data, len);
	return 0;
}

enum MHD_Result e2b_files_post(api_req *r)
{
	files_up *u = r->upload;
	if (!u)
		return MHD_NO;
	if (u->replied)
		return u->early;
	if (u->err.kind)
		return e2b_reply_err(r, &u->err);
	_cleanup_cjson_ cJSON *arr = NULL;
	if (u->multipart) {
		if (!api_multipart_done(&u->mp))
			return e2b_reply_code(r, 400, "the multipart body ends early");
		arr = u->written;
		u->written = NULL;
	} else {
		arr = cJSON_CreateArray();
		if (upload_finish(u, &u->err) < 0)
			return e2b_reply_err(r, &u->err);
		written(arr, u->path, u->meta);
	}
	if (!cJSON_GetArraySize(arr))
		return e2b_reply_code(r, 400, "no file in the upload (a part named \"file\")");
	cJSON *out = arr;
	arr = NULL;
	return api_reply_json(r, 200, out);
}
