/* images.c — /v1/images: list, import a tarball body (streamed through a pipe into the
 * image store as it arrives, never held whole), delete (409 while a sandbox uses it). */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "image.h"
#include "space.h"
#include "http.h"

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
	int rfd, wfd;
	pthread_t thread;
	bool started, joined, reader_gone;
	int result;
	sl_image img;
	sl_err err;
} import_job;

static void *import_main(void *p)
{
	import_job *j = p;
	owner_act_as(j->owner);
	j->result =
	    image_import(j->state_dir, j->floor, j->name, j->rfd, j->has_user ? j->user : NULL,
			 j->has_workdir ? j->workdir : NULL, &j->img, &j->err);
	/* Closing our end tells the writer (EPIPE) that no more input is wanted. */
	close(j->rfd);
	j->rfd = -1;
	return NULL;
}

static void import_join(import_job *j)
{
	if (j->wfd >= 0) {
		close(j->wfd);
		j->wfd = -1;
	}
	if (j->started && !j->joined) {
		pthread_join(j->thread, NULL);
		j->joined = true;
	}
}

static void import_free(api_req *r)
{
	import_job *j = r->upload;
	if (!j)
		return;
	import_join(j); /* an unfinished body ends the archive early: the import fails cleanly */
	if (j->rfd >= 0)
		close(j->rfd);
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
	j->rfd = j->wfd = -1;
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
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return sl_sysfail(err, "pipe");
	j->rfd = p[0];
	j->wfd = p[1];
	int e = pthread_create(&j->thread, NULL, import_main, j);
	if (e)
		return sl_fail(err, SL_INTERNAL, e, "start the image import");
	j->started = true;
	return 0;
}

int api_images_post_chunk(api_req *r, const char *data, size_t len, sl_err *err)
{
	import_job *j = r->upload;
	while (len && !j->reader_gone) {
		ssize_t n = write(j->wfd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EPIPE) {
			j->reader_gone = true; /* done or failed: its result tells */
			break;
		}
		if (n < 0)
			return sl_sysfail(err, "pass the upload to the importer");
		data += n, len -= n;
	}
	return 0;
}

enum MHD_Result api_images_post(api_req *r)
{
	import_job *j = r->upload;
	import_join(j);
	if (j->result < 0)
		return api_reply_error(r, &j->err);
	return api_reply_json(r, 201, api_image_json(&j->img));
}

enum MHD_Result api_images_delete(api_req *r)
{
	sl_image img;
	sl_err err = {0};
	bool used = false;
	if (image_lookup(r->srv->ctx->cfg.state_dir, r->param[0], &img, &err) < 0 ||
	    sandbox_image_in_use(r->srv->ctx, img.digest, &used, &err) < 0)
		return api_reply_error(r, &err);
	if (used)
		return api_fail(r, SL_CONFLICT,
				"image %s is used by a sandbox, a snapshot or the daemon's pool "
				"(serve --pool); delete those first",
				img.name);
	if (image_remove(r->srv->ctx->cfg.state_dir, img.name, &err) < 0)
		return api_reply_error(r, &err);
	return api_reply_empty(r, 204);
}
