/* agentuity_files.c — Agentuity's /fs calls over runtime/sbxfs.h: base64 JSON writes, raw
 * reads, list/mkdir/rm/rmdir, and tar.gz/zip archives made and unpacked by the sandbox's
 * own tar/zip/unzip in an execution (so no host process ever parses the tree). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "sbxfs.h"
#include "agentuity.h"

#define ARCHIVE_WAIT_MS (10 * 60 * 1000)
/* The output file is append-only, so Python writes the zip as to a pipe (no seeking back):
 * a writer without tell() makes zipfile use data descriptors. */
#define ZIP_SCRIPT                                                                                 \
	"cd \"$1\" || exit 1; command -v zip >/dev/null && exec zip -qr - .; "                     \
	"command -v python3 >/dev/null || { echo 'zip: not found' >&2; exit 127; }; "              \
	"exec python3 -c 'import os,sys,zipfile\n"                                                 \
	"class Out:\n"                                                                             \
	"    write = sys.stdout.buffer.write\n"                                                    \
	"    flush = sys.stdout.buffer.flush\n"                                                    \
	"z = zipfile.ZipFile(Out(), \"w\", zipfile.ZIP_DEFLATED)\n"                                \
	"for d, ds, fs in os.walk(\".\"):\n"                                                       \
	"    for n in sorted(ds + fs): z.write(os.path.join(d, n)[2:])\n"                          \
	"z.close()'"
#define UNZIP_SCRIPT                                                                               \
	"command -v unzip >/dev/null && exec unzip -oq \"$1\" -d \"$2\"; "                         \
	"command -v python3 >/dev/null || { echo 'unzip: not found' >&2; exit 127; }; "            \
	"exec python3 -m zipfile -e \"$1\" \"$2\""

/* The sandbox and a path (a query parameter or a body field; relative to the workspace). */
static int target(api_req *r, const char *given, const char *field, sl_sandbox *sb, char **path,
		  sl_err *err)
{
	if (ag_sandbox_for_call(r, sb, NULL, err) < 0)
		return -1;
	*path = api_sandbox_path(sb, field, given, err);
	if (!*path) {
		sandbox_free(sb);
		return -1;
	}
	return 0;
}

enum MHD_Result ag_fs_write(api_req *r)
{
	static const char *const fields[] = {"files", NULL};
	const cJSON *body;
	sl_err err = {0};
	sl_sandbox sb;
	int n = 0;
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_fields(body, "", fields, &err) < 0)
		return ag_reply_error(r, &err, NULL);
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(body, "files");
	if (!files)
		return ag_fail(r, SL_INVALID, "files: required, [{path, content (base64)}]");
	if (ag_sandbox_for_call(r, &sb, NULL, &err) < 0)
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	int rc = api_files_write_batch(r->srv, &sb, files, &n, &err);
	sandbox_free(&sb);
	if (rc < 0)
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	cJSON *d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "filesWritten", n);
	return ag_reply_data(r, 200, d);
}

/* One entry of a listing, in the SDK's shape, into the array ARG. */
static int list_entry(void *arg, const sl_fileinfo *fi, sl_err *err)
{
	cJSON *o = cJSON_CreateObject();
	char mode[8], t[40];
	cJSON_AddStringToObject(o, "path", fi->name);
	cJSON_AddNumberToObject(o, "size", (double)fi->size);
	cJSON_AddBoolToObject(o, "isDir", !strcmp(fi->type, "dir"));
	cJSON_AddBoolToObject(o, "isSymlink", !strcmp(fi->type, "symlink"));
	if (!strcmp(fi->type, "symlink"))
		cJSON_AddStringToObject(o, "linkTarget", fi->target);
	snprintf(mode, sizeof(mode), "%04o", fi->mode & 07777);
	cJSON_AddStringToObject(o, "mode", mode);
	time_t s = (time_t)(fi->mtime_ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", &tm);
	cJSON_AddStringToObject(o, "modTime", t);
	cJSON_AddItemToArray(arg, o);
	return 0;
}

enum MHD_Result ag_fs_read(api_req *r)
{
	sl_sandbox sb;
	_cleanup_free_ char *path = NULL;
	sl_err err = {0};
	if (target(r, api_query(r, "path"), "?path", &sb, &path, &err) < 0)
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	/* Raw bytes, whatever Accept says: the client hands the body on as it is. */
	struct MHD_Response *resp = api_file_response(r->srv, &sb, path, &err);
	sandbox_free(&sb);
	if (!resp)
		return ag_reply_error(r, &err, "FILE_NOT_FOUND");
	return api_reply(r, 200, resp);
}

enum MHD_Result ag_fs_list(api_req *r)
{
	sl_sandbox sb;
	_cleanup_free_ char *path = NULL;
	sl_err err = {0};
	const char *given = api_query(r, "path");
	if (target(r, given && *given ? given : ".", "?path", &sb, &path, &err) < 0)
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	cJSON *d = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(d, "files");
	int rc = sbxfs_list(r->srv->ctx, &sb, path, list_entry, arr, &err);
	sandbox_free(&sb);
	if (rc < 0) {
		cJSON_Delete(d);
		return ag_reply_error(r, &err, "FILE_NOT_FOUND");
	}
	return ag_reply_data(r, 200, d);
}

/* {path, recursive?} bodies of mkdir, rm and rmdir. */
static int path_body(api_req *r, sl_sandbox *sb, char **path, bool *recursive, sl_err *err)
{
	static const char *const fields[] = {"path", "recursive", NULL};
	const cJSON *body;
	const char *p = NULL;
	*recursive = false;
	if (api_body_object(r, false, &body, err) < 0 ||
	    api_json_fields(body, "", fields, err) < 0 ||
	    api_json_string(body, "", "path", &p, err) < 0 ||
	    api_json_bool(body, "", "recursive", recursive, err) < 0)
		return -1;
	return target(r, p, "path", sb, path, err);
}

enum MHD_Result ag_fs_mkdir(api_req *r)
{
	sl_sandbox sb;
	_cleanup_free_ char *path = NULL;
	sl_err err = {0};
	bool recursive;
	if (path_body(r, &sb, &path, &recursive, &err) < 0)
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	/* Without recursive the parent must exist, as mkdir(1) without -p. */
	int rc = 0;
	if (!recursive) {
		_cleanup_free_ char *parent = strdup(path);
		char *slash = parent ? strrchr(parent, '/') : NULL;
		sl_fileinfo fi;
		if (slash && slash != parent) {
			*slash = '\0';
			rc = sbxfs_stat_follow(r->srv->ctx, &sb, parent, &fi, &err);
		}
	}
	if (rc == 0)
		rc = sbxfs_mkdir(r->srv->ctx, &sb, path, &err);
	sandbox_free(&sb);
	return rc < 0 ? ag_reply_error(r, &err, "FILE_NOT_FOUND") : ag_reply_ok(r, NULL);
}

static enum MHD_Result remove_path(api_req *r, bool dir)
{
	sl_sandbox sb;
	_cleanup_free_ char *path = NULL;
	sl_err err = {0};
	bool recursive;
	if (path_body(r, &sb, &path, &recursive, &err) < 0)
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	sl_fileinfo fi;
	int rc = sbxfs_stat(r->srv->ctx, &sb, path, &fi, &err);
	bool found = rc == 0;
	if (rc < 0 && err.kind == SL_NOTFOUND)
		rc = 0;
	else if (rc == 0 && dir != !strcmp(fi.type, "dir"))
		rc = sl_fail(&err, SL_INVALID, 0, "%s is %s", path,
			     dir ? "not a directory (use rm)" : "a directory (use rmdir)");
	if (rc == 0 && found)
		rc = sbxfs_remove(r->srv->ctx, &sb, path, dir && recursive, &err);
	sandbox_free(&sb);
	if (rc < 0)
		return ag_reply_error(r, &err, "FILE_NOT_FOUND");
	cJSON *top = cJSON_CreateObject();
	cJSON_AddBoolToObject(top, "found", found);
	return ag_reply_ok(r, top);
}

enum MHD_Result ag_fs_rm(api_req *r)
{
	return remove_path(r, false);
}

enum MHD_Result ag_fs_rmdir(api_req *r)
{
	return remove_path(r, true);
}

/* ---- archives, made and unpacked inside the sandbox ---- */

static int archive_format(api_req *r, bool *zip, sl_err *err)
{
	const char *f = api_query(r, "format");
	*zip = f && !strcmp(f, "zip");
	if (f && *f && !*zip && strcmp(f, "tar.gz"))
		return sl_fail(err, SL_INVALID, 0, "?format=%s: expected zip or tar.gz", f);
	return 0;
}

/* Run ARGV in SB to its end; an exit other than 0 is an error carrying its stderr. */
static int run_tool(api_req *r, const sl_sandbox *sb, char **argv, sl_exec *out, sl_err *err)
{
	sl_exec e;
	if (ag_exec_start(r, sb, argv, NULL, NULL, ARCHIVE_WAIT_MS, &e, err) < 0)
		return -1;
	char eid[32];
	snprintf(eid, sizeof(eid), "%s", e.id);
	exec_free(&e);
	int rc = api_exec_wait(r, sb->id, eid, ARCHIVE_WAIT_MS, out, err);
	if (rc != 0) {
		if (rc > 0)
			exec_free(out);
		return rc < 0 ? -1 : sl_fail(err, SL_TIMEOUT, 0, "%s did not finish", argv[0]);
	}
	if (out->status == SL_EXEC_COMPLETED)
		return 0;
	char *text = NULL;
	bool trunc;
	sl_err e2 = {0};
	api_exec_read_output(r->srv, sb->id, eid, "stderr", 2000, &text, &trunc, &e2);
	int code = out->exit_code;
	exec_free(out);
	if (code == 127)
		sl_fail(err, SL_NOTIMPL, 0, "%s is not in this sandbox's image: %s", argv[0],
			text ? text : "");
	else
		sl_fail(err, SL_INVALID, 0, "%s exited with %d: %s", argv[0], code,
			text ? text : "");
	free(text);
	return -1;
}

enum MHD_Result ag_fs_download(api_req *r)
{
	sl_sandbox sb;
	_cleanup_free_ char *path = NULL;
	sl_err err = {0};
	bool zip;
	const char *given = api_query(r, "path");
	if (archive_format(r, &zip, &err) < 0 ||
	    target(r, given && *given ? given : ".", "?path", &sb, &path, &err) < 0)
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	sl_fileinfo fi;
	if (sbxfs_stat_follow(r->srv->ctx, &sb, path, &fi, &err) < 0) {
		sandbox_free(&sb);
		return ag_reply_error(r, &err, "FILE_NOT_FOUND");
	}
	char *tar[] = {"tar", "-czf", "-", "-C", path, ".", NULL};
	/* zip(1) when the image has it, else Python's zipfile (the default image's). */
	char *zipv[] = {"/bin/sh", "-c", ZIP_SCRIPT, "sh", path, NULL};
	sl_exec e;
	int rc = run_tool(r, &sb, zip ? zipv : tar, &e, &err);
	sandbox_free(&sb);
	if (rc < 0)
		return ag_reply_error(r, &err, "FILE_NOT_FOUND");
	struct MHD_Response *resp =
	    api_exec_stream_response(r, e.sandbox_id, e.id, "stdout", false, &err);
	exec_free(&e);
	if (!resp)
		return ag_reply_error(r, &err, NULL);
	MHD_del_response_header(resp, "Content-Type", "application/octet-stream");
	MHD_add_response_header(resp, "Content-Type", zip ? "application/zip" : "application/gzip");
	return api_reply(r, 200, resp);
}

/* The upload lands in a temporary file in the sandbox, then its tar/unzip unpacks it. */
typedef struct ag_upload {
	sl_sandbox sb;
	char *dest, *tmp;
	int fd;
	bool zip;
} ag_upload;

static void upload_free(api_req *r)
{
	ag_upload *u = r->upload;
	if (!u)
		return;
	if (u->fd >= 0)
		close(u->fd);
	if (u->tmp) {
		sl_err err = {0};
		sbxfs_remove(r->srv->ctx, &u->sb, u->tmp, false, &err);
	}
	sandbox_free(&u->sb);
	free(u->dest);
	free(u->tmp);
	free(u);
	r->upload = NULL;
}

int ag_fs_upload_begin(api_req *r, sl_err *err)
{
	ag_upload *u = calloc(1, sizeof(*u));
	if (!u)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "upload");
	u->fd = -1;
	const char *given = api_query(r, "path");
	if (archive_format(r, &u->zip, err) < 0 ||
	    target(r, given && *given ? given : ".", "?path", &u->sb, &u->dest, err) < 0) {
		free(u);
		return -1;
	}
	r->upload = u;
	r->upload_free = upload_free;
	unsigned char rnd[8];
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return sl_sysfail(err, "random");
	if (asprintf(&u->tmp, "/tmp/.sandlot-archive-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0],
		     rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]) < 0) {
		u->tmp = NULL;
		return sl_fail(err, SL_INTERNAL, ENOMEM, "upload");
	}
	if (sbxfs_open_write(r->srv->ctx, &u->sb, u->tmp, 0600, &u->fd, err) < 0) {
		free(u->tmp);
		u->tmp = NULL;
		return -1;
	}
	return 0;
}

int ag_fs_upload_chunk(api_req *r, const char *data, size_t len, sl_err *err)
{
	ag_upload *u = r->upload;
	return sbxfs_write_all(&u->sb, u->fd, u->tmp, data, len, err);
}

enum MHD_Result ag_fs_upload(api_req *r)
{
	ag_upload *u = r->upload;
	sl_err err = {0};
	int fd = u->fd;
	u->fd = -1;
	if (close(fd) < 0) {
		sbxfs_io_fail(&u->sb, "write", u->tmp, errno, &err);
		return ag_reply_error(r, &err, NULL);
	}
	char *tar[] = {"tar", "-xzf", u->tmp, "-C", u->dest, NULL};
	char *unzip[] = {"/bin/sh", "-c", UNZIP_SCRIPT, "sh", u->tmp, u->dest, NULL};
	sl_exec e;
	if (sbxfs_mkdir(r->srv->ctx, &u->sb, u->dest, &err) < 0 ||
	    run_tool(r, &u->sb, u->zip ? unzip : tar, &e, &err) < 0)
		return ag_reply_error(r, &err, NULL);
	exec_free(&e);
	return ag_reply_ok(r, NULL);
}
