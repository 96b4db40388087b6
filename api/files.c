/* files.c — a sandbox's files over HTTP, as its processes see them (runtime/sbxfs.c does
 * the safe resolution): raw read and streamed write, batch write, delete, fs/ calls. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "cleanup.h"
#include "sbxfs.h"
#include "http.h"

/* The sandbox and the ?path= of a file call; *path is malloc'd. */
static int file_target(api_req *r, sl_sandbox *sb, char **path, sl_err *err)
{
	if (api_sandbox_for_call(r, sb, err) < 0)
		return -1;
	*path = api_sandbox_path(sb, "?path", api_query(r, "path"), err);
	if (!*path) {
		sandbox_free(sb);
		return -1;
	}
	return 0;
}

/* ---- GET: raw bytes ---- */

struct MHD_Response *api_file_response(api_server *s, const sl_sandbox *sb, const char *path,
				       sl_err *err)
{
	int fd;
	uint64_t size;
	if (sbxfs_open_read(s->ctx, sb, path, &fd, &size, err) < 0)
		return NULL;
	/* Served from the fd sbxfs opened safely: the path is never looked up again. */
	struct MHD_Response *resp = MHD_create_response_from_fd64(size, fd);
	if (!resp) {
		close(fd);
		sl_fail(err, SL_INTERNAL, ENOMEM, "serve %s", path);
		return NULL;
	}
	MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
	return resp;
}

enum MHD_Result api_files_get(api_req *r)
{
	sl_sandbox sb;
	_cleanup_free_ char *path = NULL;
	sl_err err = {0};
	if (file_target(r, &sb, &path, &err) < 0)
		return api_reply_error(r, &err);
	struct MHD_Response *resp = api_file_response(r->srv, &sb, path, &err);
	sandbox_free(&sb);
	if (!resp)
		return api_reply_error(r, &err);
	return api_reply(r, 200, resp);
}

/* ---- PUT: the body streams into a temporary file that replaces PATH at the end ---- */

typedef struct put_upload {
	sl_sandbox sb;
	char *path, *tmp;
	int fd;
} put_upload;

static void put_free(api_req *r)
{
	put_upload *u = r->upload;
	if (!u)
		return;
	if (u->fd >= 0) {
		/* Not finished: leave nothing behind. */
		close(u->fd);
		sl_err err = {0};
		sbxfs_remove(r->srv->ctx, &u->sb, u->tmp, false, &err);
	}
	sandbox_free(&u->sb);
	free(u->path);
	free(u->tmp);
	free(u);
	r->upload = NULL;
}

int api_upload_tmp(char *path, const char *what, char **tmp, sl_err *err)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	const char *slash = strrchr(path, '/');
	if (!slash || !slash[1] || !strcmp(slash + 1, ".") || !strcmp(slash + 1, ".."))
		return sl_fail(err, SL_INVALID, 0, "%s=%s: names a directory, not a file", what,
			       path);
	unsigned char rnd[6];
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return sl_sysfail(err, "random");
	if (asprintf(tmp, "%.*s/.sandlot-upload-%02x%02x%02x%02x%02x%02x", (int)(slash - path),
		     path, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]) < 0) {
		*tmp = NULL;
		return sl_fail(err, SL_INTERNAL, ENOMEM, "upload");
	}
	return 0;
}

int api_files_put_begin(api_req *r, sl_err *err)
{
	put_upload *u = calloc(1, sizeof(*u));
	if (!u)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "upload");
	u->fd = -1;
	if (file_target(r, &u->sb, &u->path, err) < 0) {
		free(u);
		return -1;
	}
	r->upload = u;
	r->upload_free = put_free;
	uint32_t mode = 0644;
	const char *m = api_query(r, "mode");
	if (m && api_parse_mode("?mode", m, &mode, err) < 0)
		return -1;
	if (api_upload_tmp(u->path, "?path", &u->tmp, err) < 0)
		return -1;
	return sbxfs_open_write(r->srv->ctx, &u->sb, u->tmp, mode, &u->fd, err);
}

int api_files_put_chunk(api_req *r, const char *data, size_t len, sl_err *err)
{
	put_upload *u = r->upload;
	return sbxfs_write_all(&u->sb, u->fd, u->path, data, len, err);
}

enum MHD_Result api_files_put(api_req *r)
{
	put_upload *u = r->upload;
	sl_err err = {0};
	int fd = u->fd;
	u->fd = -1;
	if (close(fd) < 0) {
		sbxfs_io_fail(&u->sb, "write", u->path, errno, &err);
	} else if (sbxfs_move(r->srv->ctx, &u->sb, u->tmp, u->path, &err) == 0) {
		return api_reply_empty(r, 204);
	}
	sl_err e2 = {0};
	sbxfs_remove(r->srv->ctx, &u->sb, u->tmp, false, &e2);
	return api_reply_error(r, &err);
}

/* ---- POST: a batch of small files as base64 in JSON ---- */

int api_files_write_batch(api_server *s, const sl_sandbox *sb, const cJSON *files, int *n,
			  sl_err *err)
{
	static const char *const fields[] = {"path", "content", "mode", NULL};
	*n = 0;
	if (!cJSON_IsArray(files))
		return sl_fail(err, SL_INVALID, 0, "files: expected an array of {path, content}");
	const cJSON *f;
	cJSON_ArrayForEach(f, files)
	{
		char where[32], field[48];
		snprintf(where, sizeof(where), "files[%d].", *n);
		const char *p, *content;
		uint32_t mode = 0644;
		bool given;
		if (api_json_fields(f, where, fields, err) < 0 ||
		    api_json_string(f, where, "path", &p, err) < 0 ||
		    api_json_string(f, where, "content", &content, err) < 0 ||
		    api_json_mode(f, where, "mode", &mode, &given, err) < 0)
			return -1;
		snprintf(field, sizeof(field), "%spath", where);
		_cleanup_free_ char *path = api_sandbox_path(sb, field, p, err);
		if (!path)
			return -1;
		snprintf(field, sizeof(field), "%scontent", where);
		_cleanup_free_ unsigned char *data = NULL;
		size_t len = 0;
		if (!content)
			content = "";
		if (api_base64_decode(field, content, &data, &len, err) < 0)
			return -1;
		_cleanup_close_ int fd = -1;
		if (sbxfs_open_write(s->ctx, sb, path, mode, &fd, err) < 0 ||
		    sbxfs_write_all(sb, fd, path, data, len, err) < 0)
			return -1;
		if (close(steal_fd(&fd)) < 0)
			return sl_sysfail(err, "write %s", path);
		(*n)++;
	}
	return 0;
}

enum MHD_Result api_files_post(api_req *r)
{
	static const char *const fields[] = {"files", NULL};
	const cJSON *body;
	sl_err err = {0};
	sl_sandbox sb;
	int n = 0;
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_fields(body, "", fields, &err) < 0)
		return api_reply_error(r, &err);
	if (api_sandbox_for_call(r, &sb, &err) < 0)
		return api_reply_error(r, &err);
	int rc = api_files_write_batch(r->srv, &sb, cJSON_GetObjectItemCaseSensitive(body, "files"),
				       &n, &err);
	sandbox_free(&sb);
	if (rc < 0)
		return api_reply_error(r, &err);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "filesWritten", n);
	return api_reply_json(r, 200, o);
}

/* ---- DELETE and fs/ ---- */

enum MHD_Result api_files_delete(api_req *r)
{
	sl_sandbox sb;
	_cleanup_free_ char *path = NULL;
	sl_err err = {0};
	bool recursive;
	if (api_query_bool(r, "recursive", false, &recursive, &err) < 0 ||
	    file_target(r, &sb, &path, &err) < 0)
		return api_reply_error(r, &err);
	int rc = sbxfs_remove(r->srv->ctx, &sb, path, recursive, &err);
	sandbox_free(&sb);
	return rc < 0 ? api_reply_error(r, &err) : api_reply_empty(r, 204);
}

static int list_entry(void *arg, const sl_fileinfo *fi, sl_err *err)
{
	return api_json_list_add(arg, fileinfo_to_json(fi), err);
}

enum MHD_Result api_fs_list(api_req *r)
{
	sl_sandbox sb;
	_cleanup_free_ char *path = NULL;
	sl_err err = {0};
	if (file_target(r, &sb, &path, &err) < 0)
		return api_reply_error(r, &err);
	api_json_list l = {0};
	int rc = sbxfs_list(r->srv->ctx, &sb, path, list_entry, &l, &err);
	sandbox_free(&sb);
	if (rc < 0) {
		api_json_list_free(&l);
		return api_reply_error(r, &err);
	}
	return api_reply_json_list(r, 200, &l, "{\"entries\":", "}");
}

enum MHD_Result api_fs_stat(api_req *r)
{
	sl_sandbox sb;
	_cleanup_free_ char *path = NULL;
	sl_err err = {0};
	if (file_target(r, &sb, &path, &err) < 0)
		return api_reply_error(r, &err);
	sl_fileinfo *fi = malloc(sizeof(*fi));
	int rc = fi ? sbxfs_stat(r->srv->ctx, &sb, path, fi, &err)
		    : sl_fail(&err, SL_INTERNAL, ENOMEM, "stat");
	sandbox_free(&sb);
	cJSON *o = rc == 0 ? fileinfo_to_json(fi) : NULL;
	free(fi);
	return rc < 0 ? api_reply_error(r, &err) : api_reply_json(r, 200, o);
}

/* A body with path-like FIELDS, resolved inside the sandbox (paths[i] malloc'd). */
static int fs_body(api_req *r, const char *const *fields, const char *const *path_fields,
		   sl_sandbox *sb, char **paths, sl_err *err)
{
	const cJSON *body;
	if (api_body_object(r, false, &body, err) < 0 || api_json_fields(body, "", fields, err) < 0)
		return -1;
	const char *raw[2] = {NULL, NULL};
	for (int i = 0; path_fields[i]; i++)
		if (api_json_string(body, "", path_fields[i], &raw[i], err) < 0)
			return -1;
	if (api_sandbox_for_call(r, sb, err) < 0)
		return -1;
	for (int i = 0; path_fields[i]; i++) {
		paths[i] = api_sandbox_path(sb, path_fields[i], raw[i], err);
		if (!paths[i]) {
			sandbox_free(sb);
			return -1;
		}
	}
	return 0;
}

enum MHD_Result api_fs_mkdir(api_req *r)
{
	static const char *const fields[] = {"path", NULL};
	sl_sandbox sb;
	char *paths[1] = {NULL};
	sl_err err = {0};
	if (fs_body(r, fields, fields, &sb, paths, &err) < 0)
		return api_reply_error(r, &err);
	int rc = sbxfs_mkdir(r->srv->ctx, &sb, paths[0], &err);
	sandbox_free(&sb);
	free(paths[0]);
	return rc < 0 ? api_reply_error(r, &err) : api_reply_empty(r, 204);
}

enum MHD_Result api_fs_move(api_req *r)
{
	static const char *const fields[] = {"from", "to", NULL};
	sl_sandbox sb;
	char *paths[2] = {NULL, NULL};
	sl_err err = {0};
	if (fs_body(r, fields, fields, &sb, paths, &err) < 0) {
		free(paths[0]);
		return api_reply_error(r, &err);
	}
	int rc = sbxfs_move(r->srv->ctx, &sb, paths[0], paths[1], &err);
	sandbox_free(&sb);
	free(paths[0]);
	free(paths[1]);
	return rc < 0 ? api_reply_error(r, &err) : api_reply_empty(r, 204);
}

enum MHD_Result api_fs_chmod(api_req *r)
{
	static const char *const fields[] = {"path", "mode", "owner", NULL};
	static const char *const path_fields[] = {"path", NULL};
	sl_sandbox sb;
	char *paths[1] = {NULL};
	sl_err err = {0};
	uint32_t mode = 0;
	bool given = false;
	const char *owner = NULL;
	const cJSON *body;
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_fields(body, "", fields, &err) < 0 ||
	    api_json_mode(body, "", "mode", &mode, &given, &err) < 0 ||
	    api_json_string(body, "", "owner", &owner, &err) < 0)
		return api_reply_error(r, &err);
	if (!given)
		return api_fail(r, SL_INVALID, "mode: required (an octal string like \"0644\")");
	if (fs_body(r, fields, path_fields, &sb, paths, &err) < 0)
		return api_reply_error(r, &err);
	int rc = sbxfs_chmod(r->srv->ctx, &sb, paths[0], mode, owner, &err);
	sandbox_free(&sb);
	free(paths[0]);
	return rc < 0 ? api_reply_error(r, &err) : api_reply_empty(r, 204);
}
