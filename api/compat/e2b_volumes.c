/* e2b_volumes.c — E2B's Volume client (docs/e2b.md, "Volumes") over sandlot's named
 * volumes: /volumes (create, list, info, delete; a volume's id is its name) as /v1 does
 * them, create's volumeMounts as /v1's volumes, and the volume content API
 * (/volumecontent/{id}/file|dir|path, authorised by the volume's own token) over volfs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "e2b.h"
#include "fsutil.h"
#include "volfs.h"
#include "volume.h"

/* ---- the control plane ---- */

/* The volume's token: an HMAC of the daemon key over its name, owner and birth, so one
 * made again under the same name gets a new one, and no key's token opens another's. */
static void volume_token(api_server *s, const sl_volume *v, char out[65])
{
	char id[192];
	snprintf(id, sizeof(id), "%s:%s:%lld", v->name, v->owner, (long long)v->created_ms);
	e2b_token(s, "volume", id, out);
}

static cJSON *volume_json(api_server *s, const sl_volume *v, bool with_token)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "volumeID", v->name);
	cJSON_AddStringToObject(o, "name", v->name);
	if (with_token) {
		char tok[65];
		volume_token(s, v, tok);
		cJSON_AddStringToObject(o, "token", tok);
	}
	return o;
}

/* A missing volume and a malformed id are the same 404 (Volume.getInfo's
 * VolumeNotFoundError; Volume.destroy's false). */
static enum MHD_Result volume_fail(api_req *r, const sl_err *err)
{
	if (err->kind == SL_NOTFOUND || err->kind == SL_INVALID)
		return e2b_reply_code(r, 404, "volume \"%s\" not found", r->param[0]);
	return e2b_reply_err(r, err);
}

/* GET /volumes -> [{volumeID, name}]: the volumes the key sees, as /v1 lists them. */
enum MHD_Result e2b_volume_list(api_req *r)
{
	sl_volume *list;
	size_t n;
	sl_err err = {0};
	if (volume_list(r->srv->ctx, &list, &n, &err) < 0)
		return e2b_reply_err(r, &err);
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, volume_json(r->srv, &list[i], false));
	free(list);
	return api_reply_json(r, 200, arr);
}

/* POST /volumes {name} -> 201 {volumeID, name, token}. */
enum MHD_Result e2b_volume_create(api_req *r)
{
	static const char *const fields[] = {"name", NULL};
	const cJSON *in;
	const char *name = NULL;
	sl_err err = {0};
	sl_volume v;
	if (api_body_object(r, false, &in, &err) < 0 || api_json_fields(in, "", fields, &err) < 0 ||
	    api_json_string(in, "", "name", &name, &err) < 0)
		return e2b_reply_err(r, &err);
	if (!name)
		return e2b_reply_code(r, 400, "name: required");
	if (volume_create(r->srv->ctx, name, &v, &err) < 0)
		return e2b_reply_err(r, &err);
	return api_reply_json(r, 201, volume_json(r->srv, &v, true));
}

/* GET /volumes/{id} -> {volumeID, name, token}. */
enum MHD_Result e2b_volume_get(api_req *r)
{
	sl_err err = {0};
	sl_volume v;
	if (volume_get(r->srv->ctx, r->param[0], &v, &err) < 0)
		return volume_fail(r, &err);
	return api_reply_json(r, 200, volume_json(r->srv, &v, true));
}

/* DELETE /volumes/{id} -> 204; a volume a sandbox mounts is 409, as on /v1. */
enum MHD_Result e2b_volume_delete(api_req *r)
{
	sl_err err = {0};
	if (volume_delete(r->srv->ctx, r->param[0], &err) < 0)
		return volume_fail(r, &err);
	return api_reply_empty(r, 204);
}

/* ---- sandboxes ---- */

int e2b_volume_mounts_body(const cJSON *in, cJSON *body, sl_ctx *ctx, sl_err *err)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(in, "volumeMounts");
	if (!m || cJSON_IsNull(m))
		return 0;
	if (!cJSON_IsArray(m))
		return sl_fail(err, SL_INVALID, 0, "volumeMounts: expected an array");
	static const char *const fields[] = {"name", "path", NULL};
	cJSON *vols = cJSON_AddArrayToObject(body, "volumes");
	size_t i = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, m)
	{
		char where[40];
		const char *name = NULL, *path = NULL;
		snprintf(where, sizeof(where), "volumeMounts[%zu].", i++);
		if (!cJSON_IsObject(it))
			return sl_fail(err, SL_INVALID, 0, "%s: expected an object", where);
		if (api_json_fields(it, where, fields, err) < 0 ||
		    api_json_string(it, where, "name", &name, err) < 0 ||
		    api_json_string(it, where, "path", &path, err) < 0)
			return -1;
		if (!name || !path)
			return sl_fail(err, SL_INVALID, 0, "%sname and path are required", where);
		/* E2B mounts volumes made before; /v1 would make a missing one. */
		sl_volume v;
		if (volume_get(ctx, name, &v, err) < 0)
			return sl_fail(err, SL_INVALID, 0, "%sname: volume \"%s\" not found", where,
				       name);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", name);
		cJSON_AddStringToObject(o, "mountPath", path);
		cJSON_AddItemToArray(vols, o);
	}
	return 0;
}

cJSON *e2b_volume_mounts_json(const sl_sandbox *sb)
{
	cJSON *arr = cJSON_CreateArray();
	const cJSON *m;
	cJSON_ArrayForEach(m, sb->volumes)
	{
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(m, "name");
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(m, "mountPath");
		if (!cJSON_IsString(n) || !cJSON_IsString(p) || n->valuestring[0] == '/')
			continue; /* a host directory is no E2B volume */
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", n->valuestring);
		cJSON_AddStringToObject(o, "path", p->valuestring);
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

/* ---- the content plane ---- */

/* Authorization: Bearer <the volume's token>, checked before any body is read; the
 * request then acts for the volume's owner. Any failure is the same 401, so a token
 * tells nothing about volumes it does not open. */
int e2b_volume_gate(api_req *r, enum MHD_Result *ret)
{
	const char *auth = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
	const char *given = auth && !strncasecmp(auth, "Bearer ", 7) ? auth + 7 : NULL;
	sl_volume v;
	sl_err err = {0};
	char want[65];
	if (given && volume_get(r->srv->ctx, r->param[0], &v, &err) == 0) {
		volume_token(r->srv, &v, want);
		if (e2b_secret_equal(given, want)) {
			snprintf(r->owner, sizeof(r->owner), "%s", v.owner);
			owner_act_as(r->owner);
			return 0;
		}
	}
	*ret = e2b_reply_code(r, 401, "invalid volume token for volume \"%s\"", r->param[0]);
	return -1;
}

static const char *const type_names[] = {
    [SL_VOLFS_OTHER] = "unknown",
    [SL_VOLFS_FILE] = "file",
    [SL_VOLFS_DIR] = "directory",
    [SL_VOLFS_SYMLINK] = "symlink",
};

static void add_time(cJSON *o, const char *key, const struct timespec *ts)
{
	struct tm tm;
	char t[64];
	gmtime_r(&ts->tv_sec, &tm);
	size_t n = strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(t + n, sizeof(t) - n, ".%09ldZ", ts->tv_nsec);
	cJSON_AddStringToObject(o, key, t);
}

static cJSON *entry_json(const sl_volfs_entry *e)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", e->name);
	cJSON_AddStringToObject(o, "type", type_names[e->type]);
	cJSON_AddStringToObject(o, "path", e->path);
	cJSON_AddNumberToObject(o, "size", (double)e->size);
	cJSON_AddNumberToObject(o, "mode", e->mode);
	cJSON_AddNumberToObject(o, "uid", e->uid);
	cJSON_AddNumberToObject(o, "gid", e->gid);
	add_time(o, "atime", &e->atime);
	add_time(o, "mtime", &e->mtime);
	add_time(o, "ctime", &e->ctime);
	if (e->type == SL_VOLFS_SYMLINK)
		cJSON_AddStringToObject(o, "target", e->target);
	return o;
}

/* uid, gid and mode from the query (the SDK's writeFile and makeDir options). */
static int query_attrs(api_req *r, sl_volfs_attrs *a, sl_err *err)
{
	static const char *const keys[] = {"uid", "gid", "mode"};
	int64_t *dst[] = {&a->uid, &a->gid, &a->mode};
	for (size_t i = 0; i < 3; i++) {
		uint64_t x = UINT64_MAX;
		if (api_query_uint(r, keys[i], UINT32_MAX, &x, err) < 0)
			return -1;
		*dst[i] = x == UINT64_MAX ? -1 : (int64_t)x;
	}
	return 0;
}

static enum MHD_Result reply_entry(api_req *r, unsigned status, const sl_volfs *v, const char *path)
{
	sl_volfs_entry e;
	sl_err err = {0};
	if (volfs_stat(v, path, &e, &err) < 0)
		return e2b_reply_err(r, &err);
	return api_reply_json(r, status, entry_json(&e));
}

/* The volume of a content request, and its ?path=. On failure the reply is queued. */
static int content_open(api_req *r, sl_volfs *v, const char **path, enum MHD_Result *ret)
{
	sl_err err = {0};
	*path = api_query(r, "path");
	if (volfs_open(r->srv->ctx, r->param[0], v, &err) < 0) {
		*ret = volume_fail(r, &err);
		return -1;
	}
	return 0;
}

/* GET /volumecontent/{id}/path?path= -> the entry (a symlink as itself). */
enum MHD_Result e2b_volume_stat(api_req *r)
{
	_cleanup_volfs_ sl_volfs v = {.root = -1};
	const char *path;
	enum MHD_Result ret;
	if (content_open(r, &v, &path, &ret) < 0)
		return ret;
	return reply_entry(r, 200, &v, path);
}

/* PATCH /volumecontent/{id}/path?path= {uid?, gid?, mode?} -> the entry. */
enum MHD_Result e2b_volume_setattr(api_req *r)
{
	static const char *const fields[] = {"uid", "gid", "mode", NULL};
	_cleanup_volfs_ sl_volfs v = {.root = -1};
	const char *path;
	enum MHD_Result ret;
	if (content_open(r, &v, &path, &ret) < 0)
		return ret;
	const cJSON *in;
	sl_err err = {0};
	sl_volfs_attrs a = {-1, -1, -1};
	int64_t *dst[] = {&a.uid, &a.gid, &a.mode};
	if (api_body_object(r, true, &in, &err) < 0 ||
	    (in && api_json_fields(in, "", fields, &err) < 0))
		return e2b_reply_err(r, &err);
	for (size_t i = 0; in && fields[i]; i++) {
		uint64_t x;
		bool given;
		if (api_json_uint(in, "", fields[i], 0, UINT32_MAX, &x, &given, &err) < 0)
			return e2b_reply_err(r, &err);
		if (given)
			*dst[i] = (int64_t)x;
	}
	sl_volfs_entry e;
	if (volfs_setattr(&v, path, &a, &e, &err) < 0)
		return e2b_reply_err(r, &err);
	return api_reply_json(r, 200, entry_json(&e));
}

/* DELETE /volumecontent/{id}/path?path= -> 204 (a directory with all it holds). */
enum MHD_Result e2b_volume_remove(api_req *r)
{
	_cleanup_volfs_ sl_volfs v = {.root = -1};
	const char *path;
	enum MHD_Result ret;
	sl_err err = {0};
	if (content_open(r, &v, &path, &ret) < 0)
		return ret;
	if (volfs_remove(&v, path, &err) < 0)
		return e2b_reply_err(r, &err);
	return api_reply_empty(r, 204);
}

static int list_add(void *arg, const sl_volfs_entry *e, sl_err *err)
{
	cJSON_AddItemToArray(arg, entry_json(e));
	return 0;
}

/* GET /volumecontent/{id}/dir?path=&depth= -> [entry...]. */
enum MHD_Result e2b_volume_list_dir(api_req *r)
{
	_cleanup_volfs_ sl_volfs v = {.root = -1};
	const char *path;
	enum MHD_Result ret;
	sl_err err = {0};
	uint64_t depth = 1;
	if (content_open(r, &v, &path, &ret) < 0)
		return ret;
	if (api_query_uint(r, "depth", 64, &depth, &err) < 0)
		return e2b_reply_err(r, &err);
	_cleanup_cjson_ cJSON *arr = cJSON_CreateArray();
	if (volfs_list(&v, path, (unsigned)depth, list_add, arr, &err) < 0)
		return e2b_reply_err(r, &err);
	cJSON *out = arr;
	arr = NULL;
	return api_reply_json(r, 200, out);
}

/* POST /volumecontent/{id}/dir?path=&uid=&gid=&mode=&force= -> 201 the entry; force makes
 * missing parents and takes an existing directory. */
enum MHD_Result e2b_volume_mkdir(api_req *r)
{
	_cleanup_volfs_ sl_volfs v = {.root = -1};
	const char *path;
	enum MHD_Result ret;
	sl_err err = {0};
	sl_volfs_attrs a;
	bool force;
	sl_volfs_entry e;
	if (content_open(r, &v, &path, &ret) < 0)
		return ret;
	if (query_attrs(r, &a, &err) < 0 || api_query_bool(r, "force", false, &force, &err) < 0 ||
	    volfs_mkdir(&v, path, force, &a, &e, &err) < 0)
		return e2b_reply_err(r, &err);
	return api_reply_json(r, 201, entry_json(&e));
}

/* GET /volumecontent/{id}/file?path= -> the bytes, served from the descriptor volfs
 * opened (the path is never looked up again). */
enum MHD_Result e2b_volume_read(api_req *r)
{
	_cleanup_volfs_ sl_volfs v = {.root = -1};
	const char *path;
	enum MHD_Result ret;
	sl_err err = {0};
	int fd;
	uint64_t size;
	if (content_open(r, &v, &path, &ret) < 0)
		return ret;
	if (volfs_open_read(&v, path, &fd, &size, &err) < 0)
		return e2b_reply_err(r, &err);
	struct MHD_Response *resp = MHD_create_response_from_fd64(size, fd);
	if (!resp) {
		close(fd);
		return e2b_reply_code(r, 500, "serve %s: out of memory", path);
	}
	MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
	return api_reply(r, 200, resp);
}

/* PUT /volumecontent/{id}/file?path=&uid=&gid=&mode=&force= (the body is the file)
 * -> 201 the entry. An existing file is replaced only with force. Written as it arrives;
 * a failure met early is kept and answered once the body is in. */
typedef struct vol_up {
	sl_volfs v;
	int fd;
	sl_err err;
	char *path;
} vol_up;

static void vol_up_free(api_req *r)
{
	vol_up *u = r->upload;
	if (!u)
		return;
	if (u->fd >= 0)
		close(u->fd);
	volfs_close(&u->v);
	free(u->path);
	free(u);
	r->upload = NULL;
}

int e2b_volume_write_begin(api_req *r, sl_err *err)
{
	vol_up *u = calloc(1, sizeof(*u));
	if (!u)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "upload");
	u->fd = -1;
	u->v.root = -1;
	r->upload = u;
	r->upload_free = vol_up_free;
	sl_volfs_attrs a;
	bool force;
	const char *path = api_query(r, "path");
	if (!(u->path = strdup(path ? path : "")))
		return sl_fail(err, SL_INTERNAL, ENOMEM, "upload");
	if (volfs_open(r->srv->ctx, r->param[0], &u->v, &u->err) < 0 ||
	    query_attrs(r, &a, &u->err) < 0 ||
	    api_query_bool(r, "force", false, &force, &u->err) < 0)
		return 0;
	volfs_open_write(&u->v, u->path, force, &a, &u->fd, &u->err);
	return 0;
}

int e2b_volume_write_chunk(api_req *r, const char *data, size_t len, sl_err *err)
{
	vol_up *u = r->upload;
	if (!u || u->err.kind || u->fd < 0)
		return 0;
	if (fs_write_all(u->fd, data, len, -1) < 0)
		sl_fail(&u->err, errno == ENOSPC || errno == EDQUOT ? SL_EXHAUSTED : SL_INTERNAL,
			errno, "write %s in volume %s", u->path, u->v.name);
	return 0;
}

enum MHD_Result e2b_volume_write(api_req *r)
{
	vol_up *u = r->upload;
	if (!u)
		return MHD_NO;
	if (u->err.kind == SL_NOTFOUND && u->fd < 0 && u->v.root < 0)
		return volume_fail(r, &u->err);
	if (u->err.kind)
		return e2b_reply_err(r, &u->err);
	int fd = u->fd;
	u->fd = -1;
	if (close(fd) < 0)
		return e2b_reply_code(r, 500, "write %s in volume %s: %s", u->path, u->v.name,
				      strerror(errno));
	return reply_entry(r, 201, &u->v, u->path);
}
