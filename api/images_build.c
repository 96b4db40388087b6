/* images_build.c — POST /v1/images/build: the context tar streamed through a pipe to a
 * build thread (build_image_from_tar), its progress answered as JSON lines as it goes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "http.h"

typedef struct build_job {
	api_server *srv; /* its imports count holds this one until job_free */
	char owner[SL_OWNER_LEN];
	char name[128], dockerfile[256];
	bool has_dockerfile, network;
	char *start_cmd, *ready_cmd; /* ?startCmd, ?readyCmd, or NULL */
	api_upload up;		     /* the upload: request body -> the build thread */
	int out_r, out_w;	     /* the progress: the build thread -> the response */
} build_job;

/* One JSON line to the response; a client gone (EPIPE) is ignored: the build goes on. */
static void emit(build_job *j, cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s || j->out_w < 0) {
		free(s);
		return;
	}
	size_t len = strlen(s);
	s[len] = '\n'; /* the NUL becomes the line's end */
	const char *p = s;
	size_t left = len + 1;
	while (left) {
		ssize_t n = write(j->out_w, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		p += n, left -= (size_t)n;
	}
	free(s);
}

static void on_line(void *arg, const char *line)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "stream", line);
	emit(arg, o);
}

static void *build_main(void *p)
{
	build_job *j = p;
	owner_act_as(j->owner);
	sl_build_opts o = {.name = j->name,
			   .dockerfile = j->has_dockerfile ? j->dockerfile : NULL,
			   .network = j->network,
			   .start_cmd = j->start_cmd,
			   .ready_cmd = j->ready_cmd,
			   .out = on_line,
			   .out_arg = j};
	sl_image img;
	sl_err err = {0};
	int rc = build_image_from_tar(j->srv->ctx, &o, j->up.rfd, &img, &err);
	/* Closing our end tells the uploader (EPIPE) that no more input is wanted. */
	close(j->up.rfd);
	j->up.rfd = -1;
	cJSON *res = cJSON_CreateObject();
	if (rc == 0) {
		cJSON_AddItemToObject(res, "image", api_image_json(&img));
	} else {
		cJSON *e = cJSON_AddObjectToObject(res, "error");
		cJSON_AddStringToObject(e, "code", sl_kind_code(err.kind));
		cJSON_AddStringToObject(e, "message", err.msg);
	}
	emit(j, res);
	close(j->out_w);
	j->out_w = -1;
	return NULL;
}

static void job_free(build_job *j)
{
	if (j->out_r >= 0) { /* a client gone: the build's writes fail, it still ends */
		close(j->out_r);
		j->out_r = -1;
	}
	api_upload_fini(&j->up);
	if (j->out_w >= 0)
		close(j->out_w);
	atomic_fetch_sub(&j->srv->imports, 1);
	free(j->start_cmd);
	free(j->ready_cmd);
	free(j);
}

static void upload_free(api_req *r)
{
	build_job *j = r->upload;
	if (j)
		job_free(j);
	r->upload = NULL;
}

int api_images_build_begin(api_req *r, sl_err *err)
{
	const char *name = api_query(r, "name"), *df = api_query(r, "dockerfile");
	const char *start = api_query(r, "startCmd"), *ready = api_query(r, "readyCmd");
	bool network = false;
	if (!name)
		return sl_fail(err, SL_INVALID, 0, "?name: required (the image's name)");
	if (image_name_check(name, err) < 0 ||
	    api_query_bool(r, "network", false, &network, err) < 0)
		return -1;
	if (df && (!*df || strlen(df) >= 256))
		return sl_fail(err, SL_INVALID, 0,
			       "?dockerfile: a path in the context, under 256 bytes");
	if ((start && (!*start || strlen(start) > 65536)) ||
	    (ready && (!*ready || strlen(ready) > 65536)))
		return sl_fail(err, SL_INVALID, 0,
			       "?startCmd, ?readyCmd: a shell command of 1 to 65536 bytes");
	if (api_import_admit(r->srv, err) < 0)
		return -1;
	build_job *j = calloc(1, sizeof(*j));
	if (!j) {
		atomic_fetch_sub(&r->srv->imports, 1);
		return sl_fail(err, SL_INTERNAL, ENOMEM, "build");
	}
	j->srv = r->srv;
	j->up.rfd = j->up.wfd = j->out_r = j->out_w = -1;
	j->network = network;
	snprintf(j->owner, sizeof(j->owner), "%s", r->owner);
	snprintf(j->name, sizeof(j->name), "%s", name);
	if ((j->has_dockerfile = df))
		snprintf(j->dockerfile, sizeof(j->dockerfile), "%s", df);
	r->upload = j;
	r->upload_free = upload_free;
	if ((start && !(j->start_cmd = strdup(start))) ||
	    (ready && !(j->ready_cmd = strdup(ready))))
		return sl_fail(err, SL_INTERNAL, ENOMEM, "build");
	int out[2];
	if (pipe2(out, O_CLOEXEC) < 0)
		return sl_sysfail(err, "pipe");
	j->out_r = out[0];
	j->out_w = out[1];
	return api_upload_start(&j->up, build_main, j, "the build", err);
}

int api_images_build_chunk(api_req *r, const char *data, size_t len, sl_err *err)
{
	build_job *j = r->upload;
	return api_upload_chunk(&j->up, data, len, "the build", err);
}

static ssize_t progress_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	build_job *j = cls;
	(void)pos;
	for (;;) {
		ssize_t n = read(j->out_r, buf, max);
		if (n > 0)
			return n;
		if (n < 0 && errno == EINTR)
			continue;
		return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM
			      : MHD_CONTENT_READER_END_WITH_ERROR;
	}
}

static void progress_free(void *cls)
{
	job_free(cls);
}

/* The body is in: end the upload (the build reads to its end), answer with the stream.
 * The job moves from the request to the response, which frees it. */
enum MHD_Result api_images_build(api_req *r)
{
	build_job *j = r->upload;
	api_upload_end(&j->up);
	struct MHD_Response *resp = MHD_create_response_from_callback(
	    MHD_SIZE_UNKNOWN, 4096, progress_read, j, progress_free);
	if (!resp)
		return api_fail(r, SL_INTERNAL, "build: out of memory");
	r->upload = NULL;
	MHD_add_response_header(resp, "Content-Type", "application/x-ndjson");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	api_conn_long_lived(r, false);
	return api_reply(r, 200, resp);
}
