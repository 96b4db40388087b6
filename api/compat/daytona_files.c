/* daytona_files.c — the toolbox's file calls over runtime/sbxfs.h (every path resolved
 * inside the sandbox): list, info, folder, delete, move, permissions; find and search
 * as grep and find inside the sandbox; bulk upload (a multipart body parsed as it
 * streams, each file written to a temporary name and renamed) and bulk download (a
 * multipart/form-data response streamed from the files, errors as parts). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cleanup.h"
#include "sbxfs.h"
#include "multipart.h"
#include "daytona.h"

#define BOUNDARY   "DAYTONA-FILE-BOUNDARY"
#define FIND_CAP   (8u << 20)

/* ---- FileInfo ---- */

static cJSON *file_info(const sl_fileinfo *fi)
{
	cJSON *base = fileinfo_to_json(fi);
	cJSON *o = cJSON_CreateObject();
	char perm[10], s[32];
	fileinfo_permissions(fi->mode, perm);
	bool dir = !strcmp(fi->type, "dir");
	cJSON_AddStringToObject(o, "name", fi->name);
	cJSON_AddStringToObject(o, "path", fi->path);
	cJSON_AddBoolToObject(o, "isDir", dir);
	cJSON_AddNumberToObject(o, "size", (double)fi->size);
	/* Go's FileMode.String(): a type letter, then rwx bits. */
	snprintf(s, sizeof(s), "%c%s", dir ? 'd' : !strcmp(fi->type, "symlink") ? 'L' : '-', perm);
	cJSON_AddStringToObject(o, "mode", s);
	snprintf(s, sizeof(s), "%04o", fi->mode & 07777);
	cJSON_AddStringToObject(o, "permissions", s);
	snprintf(s, sizeof(s), "%u", fi->uid);
	cJSON_AddStringToObject(o, "owner", s);
	snprintf(s, sizeof(s), "%u", fi->gid);
	cJSON_AddStringToObject(o, "group", s);
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(base, "mtime");
	cJSON_AddStringToObject(o, "modTime", cJSON_IsString(mt) ? mt->valuestring : "");
	cJSON_AddStringToObject(o, "modifiedAt", cJSON_IsString(mt) ? mt->valuestring : "");
	cJSON_Delete(base);
	return o;
}

/* The sandbox and the resolved ?KEY= path (the work dir when absent and DEF_WORKDIR). */
static int target(api_req *r, const char *key, bool def_workdir, sl_sandbox *sb, char **path,
		  sl_err *err)
{
	if (dt_sandbox(r, sb, err) < 0)
		return -1;
	const char *p = api_query(r, key);
	char field[32];
	snprintf(field, sizeof(field), "?%s", key);
	*path = api_sandbox_path(sb, field, (!p || !*p) && def_workdir ? sb->workdir : p, err);
	if (!*path) {
		sandbox_free(sb);
		return -1;
	}
	return 0;
}

/* An error before the files are touched (sandbox, arguments) in the API's shape; one
 * from the files themselves in the daemon's (FILE_NOT_FOUND, INVALID_FILE_PATH). */
static enum MHD_Result target_error(api_req *r, const sl_err *err)
{
	return err->kind == SL_INVALID ? dt_file_error(r, err) : dt_error(r, err, NULL);
}

#define LIST_MAX_ENTRIES 100000 /* a recursive listing stops there (a cut, as before) */

/* A recursive listing under way: its answer, and how deep it may still go. */
struct list_walk {
	api_req *r;
	const sl_sandbox *sb;
	api_json_list out;
	int depth;
	bool full; /* the answer reached API_JSON_LIST_MAX: the listing fails */
};

static int list_into(struct list_walk *w, const char *path, int depth, sl_err *err);

/* One entry, then (a directory, DEPTH left) its children: 1 stops the walk (enough
 * entries), -1 fails it (the answer too large); a child that cannot be listed is
 * skipped. */
static int list_entry(void *arg, const sl_fileinfo *fi, sl_err *err)
{
	struct list_walk *w = arg;
	if (w->out.count >= LIST_MAX_ENTRIES)
		return 1;
	if (api_json_list_add(&w->out, file_info(fi), err) < 0) {
		w->full = true;
		return -1;
	}
	if (w->depth <= 1 || strcmp(fi->type, "dir"))
		return 0;
	sl_err sub = {0};
	int rc = list_into(w, fi->path, w->depth - 1, &sub);
	if (rc < 0 && w->full)
		*err = sub;
	return rc > 0 || (rc < 0 && w->full) ? rc : 0;
}

/* Entries of PATH, and with DEPTH > 1 their children's, depth-first (full paths;
 * symlinks are not followed). Only the top directory's errors count. Each level holds
 * its entries' names only; the answer is text as it grows. */
static int list_into(struct list_walk *w, const char *path, int depth, sl_err *err)
{
	int saved = w->depth;
	w->depth = depth;
	int rc = sbxfs_list(w->r->srv->ctx, w->sb, path, list_entry, w, err);
	w->depth = saved;
	return rc;
}

enum MHD_Result dt_files_list(api_req *r)
{
	sl_sandbox sb;
	_cleanup_free_ char *path = NULL;
	sl_err err = {0};
	const char *d = api_query(r, "depth");
	char *end = NULL;
	long depth = d && *d ? strtol(d, &end, 10) : 1;
	if (d && *d && (*end || depth < 1 || depth > 64))
		return dt_fail(r, SL_INVALID, NULL, "?depth=%s: expected a whole number 1-64", d);
	if (target(r, "path", true, &sb, &path, &err) < 0)
		return target_error(r, &err);
	struct list_walk w = {.r = r, .sb = &sb};
	int rc = list_into(&w, path, (int)depth, &err);
	sandbox_free(&sb);
	if (rc < 0) {
		api_json_list_free(&w.out);
		return dt_file_error(r, &err);
	}
	return api_reply_json_list(r, 200, &w.out, "", "");
}

enum MHD_Result dt_files_info(api_req *r)
{
	sl_sandbox sb;
	_cleanup_free_ char *path = NULL;
	sl_err err = {0};
	if (target(r, "path", false, &sb, &path, &err) < 0)
		return target_error(r, &err);
	sl_fileinfo *fi = malloc(sizeof(*fi));
	int rc = fi ? sbxfs_stat_follow(r->srv->ctx, &sb, path, fi, &err)
		    : sl_fail(&err, SL_INTERNAL, ENOMEM, "stat");
	sandbox_free(&sb);
	cJSON *o = rc == 0 ? file_info(fi) : NULL;
	free(fi);
	return rc < 0 ? dt_file_error(r, &err) : api_reply_json(r, 200, o);
}

enum MHD_Result dt_files_folder(api_req *r)
{
	sl_sandbox sb;
	_cleanup_free_ char *path = NULL;
	sl_err err = {0};
	uint32_t mode = 0755;
	const char *m = api_query(r, "mode");
	if (m && *m && api_parse_mode("?mode", m, &mode, &err) < 0)
		return dt_error(r, &err, NULL);
	if (target(r, "path", false, &sb, &path, &err) < 0)
		return target_error(r, &err);
	int rc = sbxfs_mkdir(r->srv->ctx, &sb, path, &err);
	if (rc == 0 && m && *m)
		rc = sbxfs_chmod(r->srv->ctx, &sb, path, mode, NULL, &err);
	sandbox_free(&sb);
	return rc < 0 ? dt_file_error(r, &err) : api_reply_empty(r, 201);
}

enum MHD_Result dt_files_delete(api_req *r)
{
	sl_sandbox sb;
	_cleanup_free_ char *path = NULL;
	sl_err err = {0};
	bool recursive;
	if (api_query_bool(r, "recursive", false, &recursive, &err) < 0 ||
	    target(r, "path", false, &sb, &path, &err) < 0)
		return target_error(r, &err);
	int rc = sbxfs_remove(r->srv->ctx, &sb, path, recursive, &err);
	sandbox_free(&sb);
	return rc < 0 ? dt_file_error(r, &err) : api_reply_empty(r, 204);
}

enum MHD_Result dt_files_move(api_req *r)
{
	sl_sandbox sb;
	_cleanup_free_ char *from = NULL;
	sl_err err = {0};
	if (target(r, "source", false, &sb, &from, &err) < 0)
		return target_error(r, &err);
	_cleanup_free_ char *to =
	    api_sandbox_path(&sb, "?destination", api_query(r, "destination"), &err);
	int rc = to ? sbxfs_move(r->srv->ctx, &sb, from, to, &err) : -1;
	sandbox_free(&sb);
	return rc < 0 ? dt_file_error(r, &err) : api_reply_empty(r, 200);
}

enum MHD_Result dt_files_permissions(api_req *r)
{
	sl_sandbox sb;
	_cleanup_free_ char *path = NULL;
	sl_err err = {0};
	uint32_t mode = 0;
	const char *m = api_query(r, "mode"), *owner = api_query(r, "owner"),
		   *group = api_query(r, "group");
	if (m && *m && api_parse_mode("?mode", m, &mode, &err) < 0)
		return dt_error(r, &err, NULL);
	if (target(r, "path", false, &sb, &path, &err) < 0)
		return target_error(r, &err);
	/* sbxfs_chmod sets mode and owner together: keep what was not asked to change. */
	sl_fileinfo *fi = malloc(sizeof(*fi));
	int rc = fi ? sbxfs_stat(r->srv->ctx, &sb, path, fi, &err)
		    : sl_fail(&err, SL_INTERNAL, ENOMEM, "stat");
	char own[160] = "";
	if (rc == 0) {
		if (!m || !*m)
			mode = fi->mode & 07777;
		if ((owner && *owner) || (group && *group)) {
			char u[16], g[16];
			snprintf(u, sizeof(u), "%u", fi->uid);
			snprintf(g, sizeof(g), "%u", fi->gid);
			snprintf(own, sizeof(own), "%.70s:%.70s", owner && *owner ? owner : u,
				 group && *group ? group : g);
		}
		rc = sbxfs_chmod(r->srv->ctx, &sb, path, mode, own[0] ? own : NULL, &err);
	}
	free(fi);
	sandbox_free(&sb);
	return rc < 0 ? dt_file_error(r, &err) : api_reply_empty(r, 200);
}

/* ---- find (content) and search (names): grep and find inside the sandbox ---- */

static int tool_target(api_req *r, sl_sandbox *sb, char **path, const char **pattern,
		       enum MHD_Result *ret)
{
	sl_err err = {0};
	*pattern = api_query(r, "pattern");
	if (!*pattern || !**pattern) {
		*ret = dt_fail(r, SL_INVALID, NULL, "?pattern: required");
		return -1;
	}
	if (target(r, "path", true, sb, path, &err) < 0) {
		*ret = target_error(r, &err);
		return -1;
	}
	sl_fileinfo *fi = malloc(sizeof(*fi));
	int rc = fi ? sbxfs_stat_follow(r->srv->ctx, sb, *path, fi, &err)
		    : sl_fail(&err, SL_INTERNAL, ENOMEM, "stat");
	free(fi);
	if (rc < 0) {
		sandbox_free(sb);
		*ret = dt_file_error(r, &err);
		return -1;
	}
	return 0;
}

enum MHD_Result dt_files_find(api_req *r)
{
	sl_sandbox sb;
	_cleanup_free_ char *path = NULL, *out = NULL;
	const char *pattern;
	enum MHD_Result ret;
	if (tool_target(r, &sb, &path, &pattern, &ret) < 0)
		return ret;
	/* Text, not a regex (as Daytona's daemon matches); -Z puts a NUL after the name. */
	char *argv[] = {"grep", "-rnHIZF", "-e", (char *)pattern, "--", path, NULL};
	int code;
	sl_err err = {0};
	int rc = dt_capture(r, &sb, argv, FIND_CAP, &out, &code, &err);
	sandbox_free(&sb);
	if (rc < 0)
		return dt_error(r, &err, NULL);
	if (code > 1)
		return dt_fail(r, SL_INTERNAL, NULL, "grep in the sandbox failed (status %d)",
			       code);
	cJSON *arr = cJSON_CreateArray();
	char *save = NULL;
	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		/* NAME NUL LINE:CONTENT; the NUL reads as U+FFFD after api_utf8_string. */
		char *sep = strstr(l, "\xef\xbf\xbd");
		if (!sep)
			continue;
		*sep = '\0';
		char *num = sep + 3, *colon = strchr(num, ':');
		if (!colon)
			continue;
		*colon = '\0';
		cJSON *m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "file", l);
		cJSON_AddNumberToObject(m, "line", atoi(num));
		cJSON_AddStringToObject(m, "content", colon + 1);
		cJSON_AddItemToArray(arr, m);
	}
	return api_reply_json(r, 200, arr);
}

enum MHD_Result dt_files_search(api_req *r)
{
	sl_sandbox sb;
	_cleanup_free_ char *path = NULL, *out = NULL;
	const char *pattern;
	enum MHD_Result ret;
	if (tool_target(r, &sb, &path, &pattern, &ret) < 0)
		return ret;
	char *argv[] = {"find", path, "-name", (char *)pattern, NULL};
	int code;
	sl_err err = {0};
	int rc = dt_capture(r, &sb, argv, FIND_CAP, &out, &code, &err);
	sandbox_free(&sb);
	if (rc < 0)
		return dt_error(r, &err, NULL);
	cJSON *o = cJSON_CreateObject();
	cJSON *files = cJSON_AddArrayToObject(o, "files");
	char *save = NULL;
	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		cJSON_AddItemToArray(files, cJSON_CreateString(l));
	return api_reply_json(r, 200, o);
}

/* ---- bulk download: a multipart/form-data response, one part per path ---- */

typedef struct download {
	api_server *srv;
	sl_sandbox sb;
	cJSON *paths;
	int n, next;
	char *head; /* part headers (or a whole error part) still to send */
	size_t head_len, head_off;
	int fd;
	bool ended;
} download;

static void download_free(void *cls)
{
	download *d = cls;
	if (d->fd >= 0)
		close(d->fd);
	free(d->head);
	cJSON_Delete(d->paths);
	sandbox_free(&d->sb);
	free(d);
}

/* The disposition's filename: quoted as is when plain ASCII, else also RFC 5987's
 * filename* (which busboy prefers), so it always equals the requested string. */
static void disposition(const char *name, const char *path, char *buf, size_t len)
{
	bool plain = true;
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		plain = plain && *p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\';
	size_t at =
	    snprintf(buf, len, "Content-Disposition: form-data; name=\"%s\"; filename=\"", name);
	for (const unsigned char *p = (const unsigned char *)path; *p && at + 4 < len; p++)
		buf[at++] = *p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\' ? *p : '_';
	at += snprintf(buf + at, len - at, "\"");
	if (!plain) {
		at += snprintf(buf + at, len - at, "; filename*=UTF-8''");
		for (const unsigned char *p = (const unsigned char *)path; *p && at + 4 < len; p++)
			at += strchr("-._~", *p) || (*p >= '0' && *p <= '9') ||
				      ((*p | 32) >= 'a' && (*p | 32) <= 'z')
				  ? snprintf(buf + at, len - at, "%c", *p)
				  : snprintf(buf + at, len - at, "%%%02X", *p);
	}
}

static void set_head(download *d, int n)
{
	if (n < 0)
		d->head = NULL; /* asprintf leaves it undefined; the reader ends the response */
	d->head_len = n < 0 ? 0 : (size_t)n;
}

/* Open the next path and set the head of its part (or the closing delimiter). */
static void next_part(download *d)
{
	free(d->head);
	d->head = NULL;
	d->head_off = 0;
	const char *lead = d->next > 0 ? "\r\n" : "";
	if (d->next >= d->n) {
		d->ended = true;
		set_head(d, asprintf(&d->head, "%s--" BOUNDARY "--\r\n", d->n ? "\r\n" : ""));
		return;
	}
	const cJSON *p = cJSON_GetArrayItem(d->paths, d->next++);
	const char *req = cJSON_IsString(p) ? p->valuestring : "";
	char disp[8192];
	sl_err err = {0};
	_cleanup_free_ char *path = api_sandbox_path(&d->sb, "path", req, &err);
	uint64_t size = 0;
	if (path && sbxfs_open_read(d->srv->ctx, &d->sb, path, &d->fd, &size, &err) == 0) {
		disposition("file", req, disp, sizeof(disp));
		set_head(d, asprintf(&d->head,
				     "%s--" BOUNDARY "\r\n%s\r\nContent-Type: "
				     "application/octet-stream\r\nContent-Length: %llu\r\n\r\n",
				     lead, disp, (unsigned long long)size));
		return;
	}
	d->fd = -1;
	disposition("error", req, disp, sizeof(disp));
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "message", err.msg);
	cJSON_AddNumberToObject(e, "statusCode", api_err_status(&err));
	cJSON_AddStringToObject(e, "code",
				err.kind == SL_NOTFOUND	 ? "FILE_NOT_FOUND"
				: err.kind == SL_INVALID ? "INVALID_FILE_PATH"
							 : "FILE_READ_FAILED");
	cJSON_AddStringToObject(e, "source", "DAYTONA_DAEMON");
	_cleanup_free_ char *body = cJSON_PrintUnformatted(e);
	cJSON_Delete(e);
	set_head(d, asprintf(&d->head,
			     "%s--" BOUNDARY "\r\n%s\r\nContent-Type: application/json\r\n\r\n%s",
			     lead, disp, body ? body : "{}"));
}

static ssize_t download_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	download *d = cls;
	for (;;) {
		if (d->head && d->head_off < d->head_len) {
			size_t n = d->head_len - d->head_off;
			n = n < max ? n : max;
			memcpy(buf, d->head + d->head_off, n);
			d->head_off += n;
			return n;
		}
		if (d->fd >= 0) {
			ssize_t n = read(d->fd, buf, max);
			if (n < 0 && errno == EINTR)
				continue;
			if (n > 0)
				return n;
			close(d->fd);
			d->fd = -1;
			if (n < 0) /* a part cut short cannot be repaired: end the response */
				return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		if (d->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		next_part(d);
		if (!d->head)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
}

enum MHD_Result dt_files_download(api_req *r)
{
	const cJSON *body;
	sl_err err = {0};
	if (api_body_object(r, false, &body, &err) < 0)
		return dt_error(r, &err, NULL);
	const cJSON *paths = cJSON_GetObjectItemCaseSensitive(body, "paths"), *p;
	if (!cJSON_IsArray(paths))
		return dt_fail(r, SL_INVALID, NULL, "paths: expected an array of file paths");
	cJSON_ArrayForEach(p, paths)
	{
		if (!cJSON_IsString(p))
			return dt_fail(r, SL_INVALID, NULL, "paths: expected strings");
	}
	download *d = calloc(1, sizeof(*d));
	if (!d)
		return dt_fail(r, SL_INTERNAL, NULL, "out of memory");
	d->fd = -1;
	if (dt_sandbox(r, &d->sb, &err) < 0) {
		free(d);
		return dt_error(r, &err, NULL);
	}
	d->srv = r->srv;
	d->paths = cJSON_Duplicate(paths, 1);
	d->n = cJSON_GetArraySize(paths);
	struct MHD_Response *resp = MHD_create_response_from_callback(
	    MHD_SIZE_UNKNOWN, 65536, download_read, d, download_free);
	if (!resp) {
		download_free(d);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "multipart/form-data; boundary=" BOUNDARY);
	return api_reply(r, 200, resp);
}

/* ---- bulk upload: multipart/form-data, files[i].path before files[i].file ---- */

typedef struct upload {
	sl_sandbox sb;
	bool have_sb;
	sl_err err; /* the first failure: answered once the body is consumed */
	api_multipart mp;
	api_req *r;
	bool is_file;
	int index;
	char value[4096];
	size_t vlen;
	char **paths;
	int npaths;
	int fd;
	char *tmp, *dest;
	uint64_t bytes;
	cJSON *done;
} upload;

static void upload_drop_tmp(api_req *r, upload *u)
{
	if (u->fd >= 0) {
		close(u->fd);
		u->fd = -1;
		sl_err e = {0};
		sbxfs_remove(r->srv->ctx, &u->sb, u->tmp, false, &e);
	}
	free(u->tmp);
	free(u->dest);
	u->tmp = u->dest = NULL;
}

static void upload_free(api_req *r)
{
	upload *u = r->upload;
	if (!u)
		return;
	upload_drop_tmp(r, u);
	for (int i = 0; i < u->npaths; i++)
		free(u->paths[i]);
	free(u->paths);
	api_multipart_free(&u->mp);
	cJSON_Delete(u->done);
	if (u->have_sb)
		sandbox_free(&u->sb);
	free(u);
	r->upload = NULL;
}

/* files[N].path or files[N].file -> N and which. */
static bool field_name(const char *name, int *index, bool *is_file)
{
	int n = -1, used = 0;
	char what[8] = "";
	if (sscanf(name, "files[%d].%5[a-z]%n", &n, what, &used) != 2 || name[used] || n < 0 ||
	    n > 100000)
		return false;
	*index = n;
	*is_file = !strcmp(what, "file");
	return *is_file || !strcmp(what, "path");
}

static int part_begin(void *arg, const char *headers, sl_err *err)
{
	upload *u = arg;
	const char *cd = strcasestr(headers, "content-disposition:");
	const char *nm = cd ? strstr(cd, " name=\"") : NULL;
	if (!nm)
		nm = cd ? strstr(cd, ";name=\"") : NULL;
	char name[128];
	if (!nm || sscanf(nm + 7, "%127[^\"]", name) != 1 ||
	    !field_name(name, &u->index, &u->is_file))
		return sl_fail(err, SL_INVALID, 0,
			       "bulk-upload: parts are files[N].path and files[N].file");
	u->vlen = 0;
	if (!u->is_file)
		return 0;
	if (u->index >= u->npaths || !u->paths[u->index])
		return sl_fail(err, SL_INVALID, 0,
			       "bulk-upload: files[%d].file came before files[%d].path", u->index,
			       u->index);
	u->dest = api_sandbox_path(&u->sb, "files[].path", u->paths[u->index], err);
	if (!u->dest)
		return -1;
	if (api_upload_tmp(u->dest, "files[].path", &u->tmp, err) < 0)
		return -1;
	u->bytes = 0;
	return sbxfs_open_write(u->r->srv->ctx, &u->sb, u->tmp, 0644, &u->fd, err);
}

static int part_data(void *arg, const char *data, size_t n, sl_err *err)
{
	upload *u = arg;
	if (!u->is_file) {
		if (u->vlen + n >= sizeof(u->value))
			return sl_fail(err, SL_INVALID, 0, "files[%d].path: too long", u->index);
		memcpy(u->value + u->vlen, data, n);
		u->vlen += n;
		return 0;
	}
	u->bytes += n;
	return sbxfs_write_all(&u->sb, u->fd, u->dest, data, n, err);
}

static int part_end(void *arg, sl_err *err)
{
	upload *u = arg;
	if (!u->is_file) {
		if (u->index >= u->npaths) {
			char **p = realloc(u->paths, (u->index + 1) * sizeof(*p));
			if (!p)
				return sl_fail(err, SL_INTERNAL, ENOMEM, "upload");
			memset(p + u->npaths, 0, (u->index + 1 - u->npaths) * sizeof(*p));
			u->paths = p;
			u->npaths = u->index + 1;
		}
		free(u->paths[u->index]);
		u->paths[u->index] = strndup(u->value, u->vlen);
		return u->paths[u->index] ? 0 : sl_fail(err, SL_INTERNAL, ENOMEM, "upload");
	}
	int fd = u->fd;
	u->fd = -1;
	if (close(fd) < 0 || sbxfs_move(u->r->srv->ctx, &u->sb, u->tmp, u->dest, err) < 0) {
		if (!err->kind)
			sbxfs_io_fail(&u->sb, "write", u->dest, errno, err);
		sl_err e = {0};
		sbxfs_remove(u->r->srv->ctx, &u->sb, u->tmp, false, &e);
		return -1;
	}
	cJSON *f = cJSON_CreateObject();
	cJSON_AddStringToObject(f, "path", u->dest);
	cJSON_AddNumberToObject(f, "bytes", (double)u->bytes);
	cJSON_AddItemToArray(u->done, f);
	free(u->tmp);
	free(u->dest);
	u->tmp = u->dest = NULL;
	return 0;
}

int dt_files_upload_begin(api_req *r, sl_err *err)
{
	static const api_multipart_cb cb = {part_begin, part_data, part_end};
	upload *u = calloc(1, sizeof(*u));
	if (!u)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "upload");
	u->fd = -1;
	u->r = r;
	u->done = cJSON_CreateArray();
	r->upload = u;
	r->upload_free = upload_free;
	/* Failures are kept for the handler, so they are answered in Daytona's shape. */
	const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Type");
	if (api_multipart_init(&u->mp, ct, &cb, u, &u->err) < 0) {
		sl_wrap(&u->err, "bulk-upload");
		return 0;
	}
	if (dt_sandbox(r, &u->sb, &u->err) == 0)
		u->have_sb = true;
	return 0;
}

int dt_files_upload_chunk(api_req *r, const char *data, size_t len, sl_err *err)
{
	upload *u = r->upload;
	if (u->err.kind)
		return 0; /* read and dropped; the handler answers the first failure */
	if (api_multipart_feed(&u->mp, data, len, &u->err) < 0)
		upload_drop_tmp(r, u);
	return 0;
}

enum MHD_Result dt_files_upload(api_req *r)
{
	upload *u = r->upload;
	if (!u->err.kind && !api_multipart_done(&u->mp))
		sl_fail(&u->err, SL_INVALID, 0, "bulk-upload: the multipart body ends early");
	if (u->err.kind)
		return u->have_sb ? dt_file_error(r, &u->err) : dt_error(r, &u->err, NULL);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "files", u->done);
	u->done = NULL;
	return api_reply_json(r, 200, o);
}
