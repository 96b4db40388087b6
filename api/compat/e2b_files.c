/* e2b_files.c — envd's plain-HTTP side: GET /health (isRunning), GET /files (a file's
 * bytes) and POST /files (multipart, or octet-stream with optional gzip), over sbxfs as
 * the /v1 file routes. */
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
	free(u->path);
	free(u);
	r->upload = NULL;
}

static void written(cJSON *arr, const char *path)
{
	cJSON *o = cJSON_CreateObject();
	const char *slash = strrchr(path, '/');
	cJSON_AddStringToObject(o, "path", path);
	cJSON_AddStringToObject(o, "name", slash ? slash + 1 : path);
	cJSON_AddStringToObject(o, "type", "file");
	cJSON_AddItemToArray(arr, o);
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
	int fd = u->fd;
	u->fd = -1;
	if (close(fd) < 0)
		return sbxfs_io_fail(&u->sb, "write", u->path, errno, err);
	written(u->written, u->path);
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
		int fd = u->fd;
		u->fd = -1;
		if (close(fd) < 0) {
			sbxfs_io_fail(&u->sb, "write", u->path, errno, &u->err);
			return e2b_reply_err(r, &u->err);
		}
		written(arr, u->path);
	}
	if (!cJSON_GetArraySize(arr))
		return e2b_reply_code(r, 400, "no file in the upload (a part named \"file\")");
	cJSON *out = arr;
	arr = NULL;
	return api_reply_json(r, 200, out);
}
