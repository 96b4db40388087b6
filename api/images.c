/* images.c — /v1/images: list, import a tarball body (streamed through a pipe into the
 * image store as it arrives, never held whole), pull from a registry (its progress
 * streamed as JSON lines), delete (409 while a sandbox uses it). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "http.h"
#include "image.h"
#include "pull.h"
#include "space.h"

cJSON *api_image_json(const sl_image *img)
{
	char t[32];
	time_t c = img->created;
	struct tm tm;
	gmtime_r(&c, &tm);
	strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", &tm);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", img->name);
	cJSON_AddStringToObject(o, "digest", img->digest);
	cJSON_AddNumberToObject(o, "sizeBytes", (double)img->size_bytes);
	cJSON_AddStringToObject(o, "user", img->user);
	cJSON_AddStringToObject(o, "workingDirectory", img->workdir);
	cJSON_AddStringToObject(o, "createdAt", t);
	cJSON_AddNumberToObject(o, "sharedBytes", (double)img->shared_bytes);
	cJSON_AddNumberToObject(o, "ownBytes", (double)(img->size_bytes - img->shared_bytes));
	cJSON_AddStringToObject(o, "format", img->format);
	if (img->platform[0])
		cJSON_AddStringToObject(o, "platform", img->platform);
	cJSON_AddNumberToObject(o, "layers", img->nlayers);
	if (img->picked[0])
		cJSON_AddStringToObject(o, "platformChoice", img->picked);
	return o;
}

/* GET /v1/images/{name}: the image as the list has it (shared sizes are relative to
 * the other images), plus a container image's config. */
enum MHD_Result api_images_get(api_req *r)
{
	sl_image img, *list;
	size_t n;
	sl_err err = {0};
	const char *state = r->srv->ctx->cfg.state_dir;
	if (image_lookup(state, r->param[0], &img, &err) < 0 ||
	    image_list(state, &list, &n, &err) < 0)
		return api_reply_error(r, &err);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i].name, img.name))
			img = list[i];
	free(list);
	cJSON *cfg = NULL;
	if (image_config(state, &img, &cfg, &err) < 0)
		return api_reply_error(r, &err);
	cJSON *o = api_image_json(&img);
	if (cfg)
		cJSON_AddItemToObject(o, "config", cfg);
	return api_reply_json(r, 200, o);
}

enum MHD_Result api_images_list(api_req *r)
{
	sl_image *list;
	size_t n;
	sl_err err = {0};
	if (image_list(r->srv->ctx->cfg.state_dir, &list, &n, &err) < 0)
		return api_reply_error(r, &err);
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "images");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, api_image_json(&list[i]));
	free(list);
	return api_reply_json(r, 200, o);
}

/* ---- import: request body -> pipe -> image_import on its own thread ---- */

typedef struct import_job {
	api_server *srv; /* its imports count holds this one until import_free */
	const char *state_dir;
	char owner[SL_OWNER_LEN]; /* the request's key: the import is made for it */
	const sl_space_floor *floor;
	char name[128], user[64], workdir[256];
	bool has_user, has_workdir;
	api_upload up;
	int result;
	sl_image img;
	sl_err err;
} import_job;

static void *import_main(void *p)
{
	import_job *j = p;
	owner_act_as(j->owner);
	j->result =
	    image_import(j->state_dir, j->floor, j->name, j->up.rfd, j->has_user ? j->user : NULL,
			 j->has_workdir ? j->workdir : NULL, &j->img, &j->err);
	/* Closing our end tells the writer (EPIPE) that no more input is wanted. */
	close(j->up.rfd);
	j->up.rfd = -1;
	return NULL;
}

static void import_free(api_req *r)
{
	import_job *j = r->upload;
	if (!j)
		return;
	/* An unfinished body ends the archive early: the import fails cleanly. */
	api_upload_fini(&j->up);
	if (j->srv)
		atomic_fetch_sub(&j->srv->imports, 1);
	free(j);
	r->upload = NULL;
}

/* Each import holds a thread, a pipe and scratch space on the state filesystem until its
 * body ends: a few at once, refused (429, Retry-After) past cfg.max_imports, and none
 * below the free-space floor (507). Both are known before the body is read. */
int api_import_admit(api_server *s, sl_err *err)
{
	const sl_config *cfg = &s->ctx->cfg;
	char what[PATH_MAX];
	snprintf(what, sizeof(what), "the state filesystem (%s)", cfg->state_dir);
	if (space_check(cfg->state_dir, &cfg->min_free, what, err) < 0)
		return sl_wrap(err, "import");
	if (atomic_fetch_add(&s->imports, 1) >= cfg->max_imports) {
		atomic_fetch_sub(&s->imports, 1);
		return sl_fail(err, SL_EXHAUSTED, 0,
			       "import: %u image imports are running, the most at once (serve "
			       "--max-imports); try again when one ends",
			       cfg->max_imports);
	}
	return 0;
}

int api_images_post_begin(api_req *r, sl_err *err)
{
	const char *name = api_query(r, "name"), *user = api_query(r, "user"),
		   *workdir = api_query(r, "workdir");
	if (!name)
		return sl_fail(err, SL_INVALID, 0, "?name: required (the image's name)");
	if (image_name_check(name, err) < 0)
		return -1;
	if ((user && strlen(user) >= 64) ||
	    (workdir && (strlen(workdir) >= 256 || workdir[0] != '/')))
		return sl_fail(err, SL_INVALID, 0,
			       "?user must be under 64 bytes and ?workdir an absolute path");
	if (api_import_admit(r->srv, err) < 0)
		return -1;
	import_job *j = calloc(1, sizeof(*j));
	if (!j) {
		atomic_fetch_sub(&r->srv->imports, 1);
		return sl_fail(err, SL_INTERNAL, ENOMEM, "import");
	}
	j->srv = r->srv;
	j->up.rfd = j->up.wfd = -1;
	j->state_dir = r->srv->ctx->cfg.state_dir;
	snprintf(j->owner, sizeof(j->owner), "%s", r->owner);
	j->floor = &r->srv->ctx->cfg.min_free;
	snprintf(j->name, sizeof(j->name), "%s", name);
	if ((j->has_user = user))
		snprintf(j->user, sizeof(j->user), "%s", user);
	if ((j->has_workdir = workdir))
		snprintf(j->workdir, sizeof(j->workdir), "%s", workdir);
	r->upload = j;
	r->upload_free = import_free;
	return api_upload_start(&j->up, import_main, j, "the image import", err);
}

int api_upload_start(api_upload *u, void *(*fn)(void *), void *arg, const char *what, sl_err *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return sl_sysfail(err, "pipe");
	u->rfd = p[0];
	u->wfd = p[1];
	int e = pthread_create(&u->thread, NULL, fn, arg);
	if (e)
		return sl_fail(err, SL_INTERNAL, e, "start %s", what);
	u->started = true;
	return 0;
}

int api_upload_chunk(api_upload *u, const char *data, size_t len, const char *to, sl_err *err)
{
	while (len && !u->reader_gone) {
		ssize_t n = write(u->wfd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EPIPE) {
			u->reader_gone = true; /* done or refused: its result tells */
			break;
		}
		if (n < 0)
			return sl_sysfail(err, "pass the upload to %s", to);
		data += n, len -= (size_t)n;
	}
	return 0;
}

void api_upload_end(api_upload *u)
{
	if (u->wfd >= 0) {
		close(u->wfd);
		u->wfd = -1;
	}
}

void api_upload_join(api_upload *u)
{
	api_upload_end(u);
	if (u->started && !u->joined) {
		pthread_join(u->thread, NULL);
		u->joined = true;
	}
}

void api_upload_fini(api_upload *u)
{
	api_upload_join(u);
	if (u->rfd >= 0) {
		close(u->rfd);
		u->rfd = -1;
	}
}

int api_images_post_chunk(api_req *r, const char *data, size_t len, sl_err *err)
{
	import_job *j = r->upload;
	return api_upload_chunk(&j->up, data, len, "the importer", err);
}

enum MHD_Result api_images_post(api_req *r)
{
	import_job *j = r->upload;
	api_upload_join(&j->up);
	if (j->result < 0)
		return api_reply_error(r, &j->err);
	return api_reply_json(r, 201, api_image_json(&j->img));
}

int api_image_remove(api_server *s, const char *name, sl_err *err)
{
	sl_image img;
	bool used = false;
	if (image_lookup(s->ctx->cfg.state_dir, name, &img, err) < 0 ||
	    sandbox_image_in_use(s->ctx, img.digest, &used, err) < 0)
		return -1;
	if (used)
		return sl_fail(err, SL_CONFLICT, 0,
			       "image %s is used by a sandbox, a snapshot or the daemon's pool "
			       "(serve --pool); delete those first",
			       img.name);
	return image_remove(s->ctx->cfg.state_dir, img.name, err);
}

enum MHD_Result api_images_delete(api_req *r)
{
	sl_err err = {0};
	if (api_image_remove(r->srv, r->param[0], &err) < 0)
		return api_reply_error(r, &err);
	return api_reply_empty(r, 204);
}

static cJSON *images_json(const sl_image *v, size_t n)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "images");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, api_image_json(&v[i]));
	return o;
}

/* GET /v1/images/{name}/tags: the names of the image's repository. */
enum MHD_Result api_images_tags(api_req *r)
{
	_cleanup_free_ sl_image *v = NULL;
	size_t n;
	sl_err err = {0};
	if (image_tags(r->srv->ctx->cfg.state_dir, r->param[0], &v, &n, &err) < 0)
		return api_reply_error(r, &err);
	if (!n)
		return api_fail(r, SL_NOTFOUND, "no image in the repository of '%s'", r->param[0]);
	return api_reply_json(r, 200, images_json(v, n));
}

/* POST /v1/images/{name}/tags {"tags": [...]}: each tag a new name of the image, in its
 * repository ("app:v1" + "prod" = "app:prod"); all are checked before any is made. */
enum MHD_Result api_images_tag(api_req *r)
{
	static const char *const fields[] = {"tags", NULL};
	const cJSON *in, *tags, *t;
	sl_err err = {0};
	sl_image img;
	const char *state = r->srv->ctx->cfg.state_dir;
	if (api_body_object(r, false, &in, &err) < 0 || api_json_fields(in, "", fields, &err) < 0)
		return api_reply_error(r, &err);
	tags = cJSON_GetObjectItemCaseSensitive(in, "tags");
	int n = cJSON_GetArraySize(tags);
	if (!cJSON_IsArray(tags) || n < 1 || n > 64)
		return api_fail(r, SL_INVALID, "tags: an array of 1-64 tags");
	if (image_lookup(state, r->param[0], &img, &err) < 0)
		return api_reply_error(r, &err);
	char names[64][IMAGE_NAME_MAX + 1];
	int i = 0;
	cJSON_ArrayForEach(t, tags)
	{
		if (!cJSON_IsString(t))
			return api_fail(r, SL_INVALID, "tags: each a string");
		if (image_tag_name(img.name, t->valuestring, names[i++], sizeof(names[0]), &err) <
		    0)
			return api_reply_error(r, &err);
	}
	_cleanup_free_ sl_image *made = calloc((size_t)n, sizeof(*made));
	if (!made)
		return api_fail(r, SL_EXHAUSTED, "tags: out of memory");
	for (i = 0; i < n; i++)
		if (image_tag(state, img.name, names[i], &made[i], &err) < 0)
			return api_reply_error(r, &err);
	return api_reply_json(r, 201, images_json(made, (size_t)n));
}

/* ---- pull: a thread runs image_pull; its progress reaches the client through a pipe,
 * one JSON object a line, as docker's API streams a pull ---- */

typedef struct pull_job {
	api_server *srv; /* its imports count holds this one until pull_free */
	char owner[SL_OWNER_LEN];
	char ref[512], name[IMAGE_NAME_MAX + 1];
	sl_pull_opts opts;
	int rfd, wfd;
	pthread_t thread;
	bool started;
} pull_job;

static void pull_line(pull_job *j, cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		return;
	size_t len = strlen(s);
	s[len] = '\n'; /* over the NUL: the line is written whole, with its newline */
	for (size_t off = 0; off <= len && j->wfd >= 0;) {
		ssize_t n = write(j->wfd, s + off, len + 1 - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) { /* the client went away: the pull goes on, unheard */
			close(j->wfd);
			j->wfd = -1;
			break;
		}
		off += (size_t)n;
	}
	free(s);
}

static void pull_progress(void *arg, const char *status, const char *layer, uint64_t cur,
			  uint64_t total)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "status", status);
	if (layer[0])
		cJSON_AddStringToObject(o, "layer", layer);
	if (total) {
		cJSON_AddNumberToObject(o, "current", (double)cur);
		cJSON_AddNumberToObject(o, "total", (double)total);
	}
	pull_line(arg, o);
}

static void *pull_main(void *p)
{
	pull_job *j = p;
	owner_act_as(j->owner);
	sl_image img;
	sl_err err = {0};
	if (image_pull(j->srv->ctx->cfg.state_dir, j->ref, &j->opts, &img, &err) < 0) {
		cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
		cJSON_AddStringToObject(e, "code", sl_kind_code(err.kind));
		cJSON_AddStringToObject(e, "message", err.msg);
		pull_line(j, o);
	} else {
		pull_line(j, api_image_json(&img));
	}
	if (j->wfd >= 0)
		close(j->wfd);
	j->wfd = -1;
	return NULL;
}

static ssize_t pull_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	pull_job *j = cls;
	for (;;) {
		ssize_t n = read(j->rfd, buf, max);
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0)
			return n;
		return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM
			      : MHD_CONTENT_READER_END_WITH_ERROR;
	}
}

static void pull_free(void *cls)
{
	pull_job *j = cls;
	if (j->rfd >= 0)
		close(j->rfd); /* the thread's writes fail now: it finishes the pull unheard */
	if (j->started)
		pthread_join(j->thread, NULL);
	if (j->wfd >= 0)
		close(j->wfd);
	atomic_fetch_sub(&j->srv->imports, 1);
	free(j);
}

enum MHD_Result api_images_pull(api_req *r)
{
	static const char *const fields[] = {"ref", "name", NULL};
	const cJSON *body;
	const char *ref = NULL, *name = NULL;
	sl_image_ref parsed;
	sl_err err = {0};
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_fields(body, "", fields, &err) < 0 ||
	    api_json_string(body, "", "ref", &ref, &err) < 0 ||
	    api_json_string(body, "", "name", &name, &err) < 0)
		return api_reply_error(r, &err);
	if (!ref)
		return api_fail(r, SL_INVALID,
				"ref: required (an image reference, e.g. "
				"\"python:3.12-slim\")");
	if (image_ref_parse(ref, &parsed, &err) < 0 || (name && image_name_check(name, &err) < 0))
		return api_reply_error(r, &err);
	if (!name && !parsed.name[0])
		return api_fail(r, SL_INVALID,
				"ref '%.80s' does not make an image name (too long, or it "
				"reads as a digest): give \"name\"",
				ref);
	if (api_import_admit(r->srv, &err) < 0)
		return api_reply_error(r, &err);
	pull_job *j = calloc(1, sizeof(*j));
	if (!j) {
		atomic_fetch_sub(&r->srv->imports, 1);
		return api_fail(r, SL_INTERNAL, "pull: out of memory");
	}
	const sl_config *cfg = &r->srv->ctx->cfg;
	j->srv = r->srv;
	snprintf(j->owner, sizeof(j->owner), "%s", r->owner);
	snprintf(j->ref, sizeof(j->ref), "%s", ref);
	snprintf(j->name, sizeof(j->name), "%s", name ? name : "");
	j->opts = image_pull_opts(cfg, pull_progress, j);
	j->opts.name = j->name;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		j->rfd = j->wfd = -1;
		pull_free(j);
		return api_fail(r, SL_INTERNAL, "pull: pipe: %s", strerror(errno));
	}
	j->rfd = p[0];
	j->wfd = p[1];
	int e = pthread_create(&j->thread, NULL, pull_main, j);
	j->started = e == 0;
	struct MHD_Response *resp =
	    e ? NULL
	      : MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, pull_read, j, pull_free);
	if (!resp) {
		pull_free(j);
		return api_fail(r, SL_INTERNAL, "pull: start: %s", e ? strerror(e) : "no memory");
	}
	MHD_add_response_header(resp, "Content-Type", "application/x-ndjson");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	api_conn_long_lived(r, false);
	return api_reply(r, 200, resp);
}
