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

#include "../../runtime/cleanup.h"
#include "../../runtime/sbxfs.h"
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

/* An upload: octet-stream goes straight to the file; multipart is kept whole and split
 * at the end. A failure met early is kept and answered once the body is in. */
typedef struct files_up {
	sl_sandbox sb;
	bool have_sb, multipart;
	enum MHD_Result early; /* the gate's reply was queued: nothing more to say */
	bool replied;
	sl_err err;
	char user[64];
	char *path; /* octet-stream: the destination */
	int fd;
	char boundary[128];
	bool gzip; /* Content-Encoding: gzip (octet-stream only) */
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
	free(u->path);
	free(u);
	r->upload = NULL;
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
		const char *b = strcasestr(ct, "boundary=");
		if (!b) {
			sl_fail(&u->err, SL_INVALID, 0, "multipart without a boundary");
			return 0;
		}
		b += 9;
		size_t n = strcspn(b, ";");
		if (*b == '"') {
			b++;
			n = strcspn(b, "\"");
		}
		if (n >= sizeof(u->boundary) - 4) {
			sl_fail(&u->err, SL_INVALID, 0, "multipart boundary too long");
			return 0;
		}
		snprintf(u->boundary, sizeof(u->boundary), "--%.*s", (int)n, b);
		u->multipart = true;
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
	if (u->multipart)
		return api_body_append(r, data, len, err);
	if (u->gzip) {
		gunzip_chunk(u, data, len);
		return 0;
	}
	write_all(u, data, len);
	return 0;
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

/* One part: headers up to a blank line, then the content. */
static int multipart_part(api_req *r, files_up *u, const char *p, size_t n, cJSON *arr)
{
	const char *hend = memmem(p, n, "\r\n\r\n", 4);
	if (!hend)
		return sl_fail(&u->err, SL_INVALID, 0, "multipart: a part without headers");
	_cleanup_free_ char *hdr = strndup(p, (size_t)(hend - p));
	const char *data = hend + 4;
	size_t len = n - (size_t)(data - p);
	if (!hdr)
		return sl_fail(&u->err, SL_INTERNAL, ENOMEM, "multipart");
	const char *name = strcasestr(hdr, " name=\"");
	if (!name || strncmp(name + 7, "file\"", 5))
		return 0; /* envd takes parts named "file" only */
	const char *fn = strcasestr(hdr, "filename=\"");
	_cleanup_free_ char *fname = fn ? strndup(fn + 10, strcspn(fn + 10, "\"")) : NULL;
	const char *q = api_query(r, "path");
	_cleanup_free_ char *path = e2b_path(&u->sb, u->user, q ? q : fname, &u->err);
	if (!path)
		return -1;
	if (sbxfs_write_file(r->srv->ctx, &u->sb, path, data, len, 0, &u->err) < 0)
		return -1;
	written(arr, path);
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
	_cleanup_cjson_ cJSON *arr = cJSON_CreateArray();
	if (!u->multipart) {
		int fd = u->fd;
		u->fd = -1;
		if (close(fd) < 0) {
			sbxfs_io_fail(&u->sb, "write", u->path, errno, &u->err);
			return e2b_reply_err(r, &u->err);
		}
		written(arr, u->path);
	} else {
		const char *body = r->body ? r->body : "";
		size_t blen = strlen(u->boundary), n = r->body_len;
		const char *p = memmem(body, n, u->boundary, blen);
		while (p) {
			p += blen;
			if ((size_t)(body + n - p) >= 2 && !strncmp(p, "--", 2))
				break;
			if ((size_t)(body + n - p) >= 2 && !strncmp(p, "\r\n", 2))
				p += 2;
			const char *next = memmem(p, (size_t)(body + n - p), u->boundary, blen);
			if (!next)
				break;
			size_t plen = (size_t)(next - p);
			if (plen >= 2 && next[-2] == '\r' && next[-1] == '\n')
				plen -= 2;
			if (multipart_part(r, u, p, plen, arr) < 0)
				return e2b_reply_err(r, &u->err);
			p = next;
		}
	}
	if (!cJSON_GetArraySize(arr))
		return e2b_reply_code(r, 400, "no file in the upload (a part named \"file\")");
	cJSON *out = arr;
	arr = NULL;
	return api_reply_json(r, 200, out);
}
