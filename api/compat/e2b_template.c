/* e2b_template.c — E2B's template builds (the SDK's v2 build system: request a build, upload
 * each COPY's files, start it with its steps, poll status and logs) made a Dockerfile for the
 * runtime's one builder (build_image), the template's name the image's. See docs/e2b.md. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "archive_extract.h"
#include "build.h"
#include "clock.h"
#include "e2b.h"
#include "fsutil.h"
#include "log.h"
#include "owner.h"
#include "pull.h"
#include "state.h"

/* A build's directory, <state>/e2b-builds/<build id>/: build.json (its template, whether
 * it started and in which daemon), ctx/ (the uploads, ctx/<files hash>/, and the generated
 * Dockerfile; removed when the build ends), log (one JSON entry a line), result.json. */
#define BUILDS_DIR    "e2b-builds"
#define BUILD_KEEP_MS (60 * 60 * 1000) /* an ended or abandoned build's record */
#define UPLOAD_MAX    (4ULL << 30)     /* one COPY's files, unpacked */
#define UPLOAD_FILES  100000
#define MAX_STEPS     500

static bool hex_ok(const char *s, size_t n)
{
	size_t i = 0;
	for (; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == n;
}

static void build_dir(api_server *s, const char *bid, char *buf, size_t len)
{
	snprintf(buf, len, "%s/" BUILDS_DIR "/%s", s->ctx->cfg.state_dir, bid);
}

/* ---- the build's record ---- */

#define MAX_TAGS 16

typedef struct tpl_build {
	char template[IMAGE_NAME_MAX + 1];
	/* The images it makes: the first built, the others its tags (e2b_tags.c). */
	char images[MAX_TAGS][IMAGE_NAME_MAX + 1];
	size_t nimages;
	bool started;
	long pid; /* the daemon that runs it (one that stopped never finishes it) */
	int64_t created_ms;
} tpl_build;

static int tb_load(api_server *s, const char *bid, tpl_build *b, sl_err *err)
{
	char dir[PATH_MAX], p[PATH_MAX + 16];
	if (!hex_ok(bid, 32))
		return sl_fail(err, SL_NOTFOUND, 0, "build %.40s: no such build", bid);
	build_dir(s, bid, dir, sizeof(dir));
	snprintf(p, sizeof(p), "%s/build.json", dir);
	_cleanup_free_ char *text = NULL;
	if (state_read_file(p, 4096, &text, NULL, err) < 0)
		return sl_fail(err, SL_NOTFOUND, 0, "build %s: no such build", bid);
	_cleanup_cjson_ cJSON *o = cJSON_Parse(text);
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "template");
	if (!cJSON_IsString(t))
		return sl_fail(err, SL_INTERNAL, 0, "build %s: a damaged record", bid);
	snprintf(b->template, sizeof(b->template), "%s", t->valuestring);
	/* Absent (a record of a daemon before tags): the template's name alone. */
	const cJSON *im, *ims = cJSON_GetObjectItemCaseSensitive(o, "images");
	b->nimages = 0;
	cJSON_ArrayForEach(im, ims)
	{
		if (cJSON_IsString(im) && b->nimages < MAX_TAGS &&
		    image_name_check(im->valuestring, NULL) == 0)
			snprintf(b->images[b->nimages++], sizeof(b->images[0]), "%s",
				 im->valuestring);
	}
	if (!b->nimages)
		snprintf(b->images[b->nimages++], sizeof(b->images[0]), "%s", b->template);
	b->started = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "started"));
	b->pid = (long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "pid"));
	b->created_ms =
	    (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "created"));
	return 0;
}

static int tb_save(api_server *s, const char *bid, const tpl_build *b, sl_err *err)
{
	char dir[PATH_MAX], p[PATH_MAX + 16];
	build_dir(s, bid, dir, sizeof(dir));
	snprintf(p, sizeof(p), "%s/build.json", dir);
	_cleanup_cjson_ cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "template", b->template);
	cJSON *ims = cJSON_AddArrayToObject(o, "images");
	for (size_t i = 0; i < b->nimages; i++)
		cJSON_AddItemToArray(ims, cJSON_CreateString(b->images[i]));
	cJSON_AddBoolToObject(o, "started", b->started);
	cJSON_AddNumberToObject(o, "pid", (double)b->pid);
	cJSON_AddNumberToObject(o, "created", (double)b->created_ms);
	_cleanup_free_ char *text = cJSON_PrintUnformatted(o);
	if (!text)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "build %s", bid);
	return state_write_atomic_nosync(p, text, strlen(text), err);
}

/* Is the build's result written? STATUS "ready" or "error"; REASON its message and step. */
static cJSON *result_load(api_server *s, const char *bid)
{
	char dir[PATH_MAX], p[PATH_MAX + 16];
	build_dir(s, bid, dir, sizeof(dir));
	snprintf(p, sizeof(p), "%s/result.json", dir);
	_cleanup_free_ char *text = NULL;
	sl_err e;
	if (state_read_file(p, 64 * 1024, &text, NULL, &e) < 0)
		return NULL;
	return cJSON_Parse(text);
}

static bool build_running(const tpl_build *b)
{
	return b->started && b->pid == (long)getpid();
}

static int result_save(api_server *s, const char *bid, const cJSON *res, sl_err *err)
{
	char dir[PATH_MAX], p[PATH_MAX + 16];
	build_dir(s, bid, dir, sizeof(dir));
	snprintf(p, sizeof(p), "%s/result.json", dir);
	_cleanup_free_ char *text = cJSON_PrintUnformatted(res);
	if (!text)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "build %s", bid);
	return state_write_atomic_nosync(p, text, strlen(text), err);
}

/* The build ends in error before it ran: its uploads go, its result says why. */
static void build_refused(api_server *s, const char *bid, const char *msg, const char *step)
{
	char dir[PATH_MAX], ctx[PATH_MAX + 8];
	build_dir(s, bid, dir, sizeof(dir));
	snprintf(ctx, sizeof(ctx), "%s/ctx", dir);
	sl_err e;
	if (fs_remove_tree(ctx, &e) < 0)
		sl_log(SL_LOG_WARN, "e2b template build %s: %s", bid, e.msg);
	_cleanup_cjson_ cJSON *res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "status", "error");
	cJSON *reason = cJSON_AddObjectToObject(res, "reason");
	cJSON_AddStringToObject(reason, "message", msg);
	if (step)
		cJSON_AddStringToObject(reason, "step", step);
	if (result_save(s, bid, res, &e) < 0)
		sl_log(SL_LOG_WARN, "e2b template build %s: %s", bid, e.msg);
}

/* Builds that ended over an hour ago are forgotten; one of NAME still waiting for its
 * files is superseded by the new request (an SDK that stopped halfway leaves one); one of
 * NAME running is reported in *BUSY. */
static void builds_sweep(api_server *s, const char *name, char busy[33])
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/" BUILDS_DIR, s->ctx->cfg.state_dir);
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *e;
	busy[0] = '\0';
	while (d && (e = readdir(d))) {
		tpl_build b;
		sl_err err;
		if (!hex_ok(e->d_name, 32) || tb_load(s, e->d_name, &b, &err) < 0)
			continue;
		_cleanup_cjson_ cJSON *res = result_load(s, e->d_name);
		bool mine = !strcmp(b.template, name);
		if (!res && mine && build_running(&b))
			snprintf(busy, 33, "%s", e->d_name);
		else if (!res && mine && !b.started)
			build_refused(s, e->d_name, "superseded by a newer build request", NULL);
		else if (!res && !build_running(&b) && b.started)
			build_refused(s, e->d_name, "the daemon that ran it stopped", NULL);
		if (res && sl_now_ms() - b.created_ms > BUILD_KEEP_MS) {
			char p[PATH_MAX];
			build_dir(s, e->d_name, p, sizeof(p));
			if (fs_remove_tree(p, &err) < 0)
				sl_log(SL_LOG_WARN, "e2b template build: %s", err.msg);
		}
	}
}

/* The newest build of TEMPLATE that waits for its files. */
static int build_waiting(api_server *s, const char *template, char bid[33])
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/" BUILDS_DIR, s->ctx->cfg.state_dir);
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *e;
	int64_t best = -1;
	while (d && (e = readdir(d))) {
		tpl_build b;
		sl_err err;
		if (hex_ok(e->d_name, 32) && tb_load(s, e->d_name, &b, &err) == 0 && !b.started &&
		    !strcmp(b.template, template) && b.created_ms > best) {
			best = b.created_ms;
			snprintf(bid, 33, "%s", e->d_name);
		}
	}
	return best < 0 ? -1 : 0;
}

/* ---- the log: {timestamp, level, message} a line ---- */

static void log_add(const char *dir, const char *level, const char *msg)
{
	char p[PATH_MAX + 8], ts[40];
	snprintf(p, sizeof(p), "%s/log", dir);
	int64_t now = sl_now_ms();
	time_t t = (time_t)(now / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	size_t n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + n, sizeof(ts) - n, ".%03dZ", (int)(now % 1000));
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "timestamp", ts);
	cJSON_AddStringToObject(o, "level", level);
	cJSON_AddStringToObject(o, "message", msg);
	_cleanup_free_ char *line = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	_cleanup_close_ int fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || !line)
		return;
	size_t len = strlen(line);
	line[len] = '\n';
	if (write(fd, line, len + 1) != (ssize_t)(len + 1))
		sl_log(SL_LOG_WARN, "e2b template build: %s: short write", p);
}

/* Entries from the OFFSET-th on, as the SDK's logEntries. */
static cJSON *log_entries(const char *dir, uint64_t offset)
{
	char p[PATH_MAX + 8];
	snprintf(p, sizeof(p), "%s/log", dir);
	cJSON *a = cJSON_CreateArray();
	_cleanup_fclose_ FILE *f = fopen(p, "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	for (uint64_t i = 0; f && getline(&line, &cap, f) > 0; i++) {
		cJSON *o;
		if (i >= offset && (o = cJSON_Parse(line)))
			cJSON_AddItemToArray(a, o);
	}
	return a;
}

/* ---- POST /v3/templates {name, tags?, cpuCount?, memoryMB?, minFreeDiskMb?} ---- */

const char *e2b_stock_image(const char *state_dir, const char *tpl)
{
	if (!e2b_stock_template(tpl))
		return NULL;
	sl_image img;
	if (strcmp(tpl, "base") && image_lookup(state_dir, "code-interpreter", &img, NULL) == 0)
		return "code-interpreter";
	return "default";
}

enum MHD_Result e2b_template_request(api_req *r)
{
	static const char *const fields[] = {"name",	 "alias",	  "tags",   "cpuCount",
					     "memoryMB", "minFreeDiskMb", "teamID", NULL};
	const cJSON *in;
	const char *given = NULL, *alias = NULL;
	char name[IMAGE_NAME_MAX + 1], tag[E2B_TAG_MAX + 1];
	char tags[MAX_TAGS][E2B_TAG_MAX + 1];
	size_t ntags = 0;
	sl_err err = {0};
	tpl_build b = {.pid = (long)getpid(), .created_ms = sl_now_ms()};
	if (api_body_object(r, false, &in, &err) < 0 || api_json_fields(in, "", fields, &err) < 0 ||
	    api_json_string(in, "", "name", &given, &err) < 0 ||
	    api_json_string(in, "", "alias", &alias, &err) < 0)
		return e2b_reply_err(r, &err);
	if (!given)
		given = alias;
	if (!given)
		return e2b_reply_code(r, 400, "name: required (the template's name)");
	/* "name:tag" and the tags: the build's image is its first tag's, the others are
	 * tagged when it is ready; E2B's default tag (the bare name) when none is given. */
	if (e2b_template_parse(given, name, tag, &err) < 0)
		return e2b_reply_code(r, 400, "Invalid alias: template %s", err.msg);
	if (tag[0])
		snprintf(tags[ntags++], sizeof(tags[0]), "%s", tag);
	size_t more, from = ntags;
	if (e2b_template_tags(cJSON_GetObjectItemCaseSensitive(in, "tags"), tags + from,
			      MAX_TAGS - from, &more, &err) < 0)
		return e2b_reply_code(r, 400, "Invalid tag: %s", err.msg);
	for (size_t i = from; i < from + more; i++) /* the name's tag given again */
		if (!from || strcmp(tags[0], tags[i]))
			memmove(tags[ntags++], tags[i], sizeof(tags[0]));
	if (!ntags)
		snprintf(tags[ntags++], sizeof(tags[0]), "default");
	if (e2b_stock_template(name))
		return e2b_reply_code(r, 400,
				      "template %s: the name of E2B's stock template, which is "
				      "sandlot's default image; choose another",
				      name);
	for (size_t i = 0; i < ntags; i++)
		if (e2b_template_image(name, tags[i], b.images[b.nimages++], sizeof(b.images[0]),
				       &err) < 0)
			return e2b_reply_code(r, 400, "Invalid tag: %s", err.msg);
	char dir[PATH_MAX], sub[PATH_MAX + 8], busy[33];
	snprintf(dir, sizeof(dir), "%s/" BUILDS_DIR, r->srv->ctx->cfg.state_dir);
	if (state_private_dir(dir, 0700, &err) < 0)
		return e2b_reply_err(r, &err);
	builds_sweep(r->srv, name, busy);
	if (busy[0])
		return e2b_reply_code(r, 409, "template %s: build %s is not finished yet", name,
				      busy);
	uint8_t rnd[16];
	char bid[33];
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return e2b_reply_code(r, 500, "build: random: %s", strerror(errno));
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(bid + 2 * i, 3, "%02x", rnd[i]);
	build_dir(r->srv, bid, dir, sizeof(dir));
	snprintf(sub, sizeof(sub), "%s/ctx", dir);
	snprintf(b.template, sizeof(b.template), "%s", name);
	if (mkdir(dir, 0700) < 0 || mkdir(sub, 0700) < 0)
		return e2b_reply_code(r, 500, "build %s: create %s: %s", bid, dir, strerror(errno));
	if (tb_save(r->srv, bid, &b, &err) < 0)
		return e2b_reply_err(r, &err);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "templateID", name);
	cJSON_AddStringToObject(o, "buildID", bid);
	const char *nm = name;
	cJSON_AddItemToObject(o, "aliases", cJSON_CreateStringArray(&nm, 1));
	cJSON_AddItemToObject(o, "names", cJSON_CreateStringArray(&nm, 1));
	cJSON *ta = cJSON_AddArrayToObject(o, "tags");
	for (size_t i = 0; i < ntags; i++)
		cJSON_AddItemToArray(ta, cJSON_CreateString(tags[i]));
	cJSON_AddBoolToObject(o, "public", false);
	return api_reply_json(r, 202, o);
}

/* ---- GET /templates/{tid}/files/{hash}: where a COPY's files go ---- */

/* The upload URL's token: it names the build and the files, so it opens nothing else. */
static void upload_token(api_server *s, const char *bid, const char *hash, char out[65])
{
	char what[128];
	snprintf(what, sizeof(what), "%s:%s", bid, hash);
	e2b_token(s, "template-upload", what, out);
}

static bool host_ok(const char *h)
{
	if (!h || !*h || strlen(h) > 255)
		return false;
	for (; *h; h++)
		if (!((*h >= 'a' && *h <= 'z') || (*h >= 'A' && *h <= 'Z') ||
		      (*h >= '0' && *h <= '9') || strchr(".-:[]", *h)))
			return false;
	return true;
}

enum MHD_Result e2b_template_files_link(api_req *r)
{
	const char *tid = r->param[0], *hash = r->param[1];
	const char *host = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Host");
	char bid[33], dir[PATH_MAX], p[PATH_MAX + 80], tok[65];
	if (!hex_ok(hash, 64))
		return e2b_reply_code(r, 400, "files hash %.80s: not a sha256 in hex", hash);
	if (!host_ok(host))
		return e2b_reply_code(r, 400, "the Host header is missing or not a host[:port]");
	if (build_waiting(r->srv, tid, bid) < 0)
		return e2b_reply_code(r, 404,
				      "template %s: no build waiting for its files (request one "
				      "with POST /v3/templates first)",
				      tid);
	build_dir(r->srv, bid, dir, sizeof(dir));
	snprintf(p, sizeof(p), "%s/ctx/%s", dir, hash);
	struct stat st;
	bool present = stat(p, &st) == 0;
	upload_token(r->srv, bid, hash, tok);
	_cleanup_free_ char *url = NULL;
	if (asprintf(&url, "%s://%s/templates/%s/files/%s?build=%s&token=%s",
		     r->srv->opt.tls_cert ? "https" : "http", host, tid, hash, bid, tok) < 0)
		return e2b_reply_code(r, 500, "files link: out of memory");
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "present", present);
	cJSON_AddStringToObject(o, "url", url);
	return api_reply_json(r, 201, o);
}

/* ---- PUT /templates/{tid}/files/{hash}?build=&token=: the files, a tar (gzip'd) ---- */

int e2b_template_upload_gate(api_req *r, enum MHD_Result *ret)
{
	const char *bid = api_query(r, "build"), *tok = api_query(r, "token");
	char want[65];
	if (!bid || !tok || !hex_ok(bid, 32) || !hex_ok(r->param[1], 64)) {
		*ret = e2b_reply_code(r, 401,
				      "an upload URL needs its build and token (from GET "
				      "/templates/{id}/files/{hash})");
		return -1;
	}
	upload_token(r->srv, bid, r->param[1], want);
	if (!e2b_secret_equal(tok, want)) {
		*ret = e2b_reply_code(r, 401, "the upload token is wrong for these files");
		return -1;
	}
	return 0;
}

typedef struct upload_job {
	api_upload up;
	char tmp[PATH_MAX], dest[PATH_MAX];
	sl_archive_limits lim;
	int rc;
	sl_err err;
} upload_job;

static void *upload_main(void *p)
{
	upload_job *j = p;
	char hex[65];
	uint64_t bytes;
	j->rc = archive_extract_counted(j->up.rfd, j->tmp, &j->lim, hex, &bytes, &j->err);
	close(j->up.rfd);
	j->up.rfd = -1;
	if (j->rc == 0 && rename(j->tmp, j->dest) < 0) {
		/* Uploaded twice (the SDK's forceUpload): the first copy stays. */
		sl_err e;
		if (errno != EEXIST && errno != ENOTEMPTY)
			j->rc = sl_sysfail(&j->err, "files: rename into %s", j->dest);
		fs_remove_tree(j->tmp, &e);
	}
	return NULL;
}

static void upload_free(api_req *r)
{
	upload_job *j = r->upload;
	if (j) {
		api_upload_fini(&j->up);
		free(j);
	}
	r->upload = NULL;
}

int e2b_template_upload_begin(api_req *r, sl_err *err)
{
	const char *bid = api_query(r, "build");
	tpl_build b;
	if (tb_load(r->srv, bid, &b, err) < 0)
		return -1;
	if (strcmp(b.template, r->param[0]))
		return sl_fail(err, SL_NOTFOUND, 0, "build %s is not template %s's", bid,
			       r->param[0]);
	if (b.started)
		return sl_fail(err, SL_CONFLICT, 0, "build %s has started: its files are in", bid);
	upload_job *j = calloc(1, sizeof(*j));
	if (!j)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "files upload");
	j->up.rfd = j->up.wfd = -1;
	r->upload = j;
	r->upload_free = upload_free;
	char dir[PATH_MAX];
	uint64_t rnd;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		return sl_sysfail(err, "files upload: random");
	build_dir(r->srv, bid, dir, sizeof(dir));
	snprintf(j->dest, sizeof(j->dest), "%s/ctx/%s", dir, r->param[1]);
	snprintf(j->tmp, sizeof(j->tmp), "%s/ctx/.up-%016llx", dir, (unsigned long long)rnd);
	archive_limits_default(&j->lim);
	j->lim.max_total_bytes = j->lim.max_entry_bytes = UPLOAD_MAX;
	j->lim.max_entries = UPLOAD_FILES;
	j->lim.min_free = r->srv->ctx->cfg.min_free;
	return api_upload_start(&j->up, upload_main, j, "the files upload", err);
}

int e2b_template_upload_chunk(api_req *r, const char *data, size_t len, sl_err *err)
{
	upload_job *j = r->upload;
	return api_upload_chunk(&j->up, data, len, "the files upload", err);
}

enum MHD_Result e2b_template_upload(api_req *r)
{
	upload_job *j = r->upload;
	api_upload_join(&j->up);
	if (j->rc < 0) {
		sl_wrap(&j->err, "template %s: files %.12s", r->param[0], r->param[1]);
		return e2b_reply_err(r, &j->err);
	}
	return api_reply_empty(r, 200);
}

/* ---- POST /v2/templates/{tid}/builds/{bid}: the steps made a Dockerfile ---- */

typedef struct df_text {
	char *s;
	size_t len, cap;
	int line;
	int *step_of; /* the E2B step of each Dockerfile line (0: the base) */
	size_t nstep_of;
	bool oom;
} df_text;

static void df_line(df_text *d, int step, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void df_line(df_text *d, int step, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *l = NULL;
	int n = vasprintf(&l, fmt, ap);
	va_end(ap);
	if (n < 0 || d->oom) {
		d->oom = true;
		return;
	}
	if (d->len + (size_t)n + 2 > d->cap) {
		size_t cap = (d->len + (size_t)n + 2) * 2;
		char *s = realloc(d->s, cap);
		if (!s) {
			free(l);
			d->oom = true;
			return;
		}
		d->s = s, d->cap = cap;
	}
	memcpy(d->s + d->len, l, (size_t)n);
	d->len += (size_t)n;
	d->s[d->len++] = '\n';
	d->s[d->len] = '\0';
	free(l);
	int *v = realloc(d->step_of, (size_t)(d->line + 2) * sizeof(*v));
	if (!v) {
		d->oom = true;
		return;
	}
	d->step_of = v;
	d->step_of[++d->line] = step;
}

/* S as a JSON string ("..." with its escapes): the Dockerfile's exec form takes JSON. */
static char *json_str(const char *s)
{
	cJSON *o = cJSON_CreateString(s);
	char *t = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return t;
}

/* S in a Dockerfile's double quotes (ENV), or -1 for what one line cannot hold. */
static char *dq(const char *s)
{
	size_t n = strlen(s);
	char *o = malloc(2 * n + 3), *p = o;
	if (!o)
		return NULL;
	*p++ = '"';
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			*p++ = '\\';
		*p++ = *s;
	}
	*p++ = '"';
	*p = '\0';
	return o;
}

static bool one_line(const char *s)
{
	return !strpbrk(s, "\n\r");
}

static bool env_name_ok(const char *k)
{
	if (!*k || (*k >= '0' && *k <= '9'))
		return false;
	for (; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
		      (*k >= '0' && *k <= '9') || *k == '_'))
			return false;
	return true;
}

/* A COPY source relative to the template's file context, never above it. */
static bool rel_ok(const char *p)
{
	if (!*p || *p == '/')
		return false;
	for (const char *c = p; c;) {
		const char *slash = strchr(c, '/');
		size_t n = slash ? (size_t)(slash - c) : strlen(c);
		if (n == 2 && !strncmp(c, "..", 2))
			return false;
		c = slash ? slash + 1 : NULL;
	}
	return true;
}

static const char *arg_at(const cJSON *args, int i)
{
	const cJSON *a = cJSON_GetArrayItem(args, i);
	return cJSON_IsString(a) ? a->valuestring : NULL;
}

/* One E2B step (number K) as Dockerfile lines. *USER is the user steps run as since the
 * last USER step (a RUN with its own user switches and back, as E2B's runs only it so). */
static int step_lines(df_text *d, int k, const cJSON *st, const char *ctx, char *user, size_t ulen,
		      sl_err *err)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(st, "type");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(st, "args");
	int na = cJSON_GetArraySize(args);
	for (int i = 0; i < na; i++)
		if (!arg_at(args, i))
			return sl_fail(err, SL_INVALID, 0, "step %d: args[%d]: not a string", k, i);
	if (!cJSON_IsString(type))
		return sl_fail(err, SL_INVALID, 0, "step %d: type: required", k);
	const char *t = type->valuestring;
	if (!strcmp(t, "RUN") && na >= 1) {
		_cleanup_free_ char *cmd = json_str(arg_at(args, 0));
		const char *as = na >= 2 ? arg_at(args, 1) : "";
		if (*as && !one_line(as))
			return sl_fail(err, SL_INVALID, 0, "step %d: RUN user: one line", k);
		if (*as)
			df_line(d, k, "USER %s", as);
		df_line(d, k, "RUN [\"/bin/sh\", \"-c\", %s]", cmd ? cmd : "\"\"");
		if (*as)
			df_line(d, k, "USER %s", user);
		return 0;
	}
	if (!strcmp(t, "COPY") && na >= 2) {
		const cJSON *h = cJSON_GetObjectItemCaseSensitive(st, "filesHash");
		const char *src = arg_at(args, 0), *dest = arg_at(args, 1);
		const char *own = na >= 3 ? arg_at(args, 2) : "",
			   *mode = na >= 4 ? arg_at(args, 3) : "";
		if (!cJSON_IsString(h) || !hex_ok(h->valuestring, 64))
			return sl_fail(err, SL_INVALID, 0,
				       "step %d: COPY %.80s: filesHash: required", k, src);
		if (!rel_ok(src))
			return sl_fail(err, SL_INVALID, 0,
				       "step %d: COPY %.80s: the source must be relative to the "
				       "template's files, not above them",
				       k, src);
		char p[PATH_MAX];
		struct stat sb;
		snprintf(p, sizeof(p), "%s/%s", ctx, h->valuestring);
		if (stat(p, &sb) < 0)
			return sl_fail(err, SL_INVALID, 0,
				       "step %d: COPY %.80s: its files were not uploaded", k, src);
		if (!one_line(own) || !one_line(mode) || strchr(own, ' ') || strchr(mode, ' '))
			return sl_fail(err, SL_INVALID, 0, "step %d: COPY: a bad user or mode", k);
		_cleanup_free_ char *from = NULL;
		if (asprintf(&from, "%s/%s", h->valuestring, src) < 0)
			return sl_fail(err, SL_EXHAUSTED, ENOMEM, "step %d", k);
		_cleanup_free_ char *js = json_str(from), *jd = json_str(dest);
		df_line(d, k, "COPY%s%s%s%s [%s, %s]", *own ? " --chown=" : "", own,
			*mode ? " --chmod=" : "", mode, js ? js : "\"\"", jd ? jd : "\"\"");
		return 0;
	}
	if (!strcmp(t, "ENV") && na >= 2 && na % 2 == 0) {
		size_t cap = 16;
		for (int i = 0; i < na; i++)
			cap += 2 * strlen(arg_at(args, i)) + 4;
		_cleanup_free_ char *line = calloc(1, cap);
		if (!line)
			return sl_fail(err, SL_EXHAUSTED, ENOMEM, "step %d", k);
		for (int i = 0; i < na; i += 2) {
			const char *key = arg_at(args, i), *v = arg_at(args, i + 1);
			if (!env_name_ok(key) || !one_line(v))
				return sl_fail(
				    err, SL_INVALID, 0,
				    "step %d: ENV %.60s: a name of letters, digits and _, "
				    "and a value of one line",
				    k, key);
			_cleanup_free_ char *q = dq(v);
			if (!q)
				return sl_fail(err, SL_EXHAUSTED, ENOMEM, "step %d", k);
			strcat(line, i ? " " : "");
			strcat(line, key);
			strcat(line, "=");
			strcat(line, q);
		}
		df_line(d, k, "ENV %s", line);
		return 0;
	}
	if ((!strcmp(t, "WORKDIR") || !strcmp(t, "USER")) && na == 1) {
		const char *v = arg_at(args, 0);
		if (!*v || !one_line(v))
			return sl_fail(err, SL_INVALID, 0, "step %d: %s: one line, not empty", k,
				       t);
		df_line(d, k, "%s %s", t, v);
		if (!strcmp(t, "USER"))
			snprintf(user, ulen, "%s", v);
		return 0;
	}
	return sl_fail(err, SL_INVALID, 0,
		       "step %d: %s with %d args has no Dockerfile equivalent in sandlot (RUN, "
		       "COPY, ENV, WORKDIR and USER do)",
		       k, t, na);
}

typedef struct tpl_job {
	api_server *srv;
	char owner[SL_OWNER_LEN];
	char bid[33], dir[PATH_MAX], name[IMAGE_NAME_MAX + 1], base[512];
	tpl_build rec; /* its images: NAME is the first, the others its tags */
	bool pull;     /* the base is a reference to fetch when no local image has its name */
	df_text df;
	cJSON *steps;	     /* the start body's steps (reason_of words a failure with them) */
	char *start, *ready; /* the image's start and ready commands, or NULL */
} tpl_job;

static void job_free(tpl_job *j)
{
	free(j->df.s);
	free(j->df.step_of);
	cJSON_Delete(j->steps);
	free(j->start);
	free(j->ready);
	free(j);
}

/* The user a template's steps start as: the base image's. */
static void base_user(api_server *s, const char *ref, char *user, size_t len)
{
	sl_image img;
	sl_err e;
	snprintf(user, len, "root");
	if (image_lookup(s->ctx->cfg.state_dir, ref, &img, &e) < 0)
		return;
	_cleanup_cjson_ cJSON *cfg = NULL;
	if (image_config(s->ctx->cfg.state_dir, &img, &cfg, &e) == 0 && cfg) {
		const cJSON *u = cJSON_GetObjectItemCaseSensitive(cfg, "user");
		if (cJSON_IsString(u) && *u->valuestring)
			snprintf(user, len, "%s", u->valuestring);
	} else if (img.user[0]) {
		snprintf(user, len, "%s", img.user);
	}
}

/* The Dockerfile of a start body: FROM the base, then each step. */
static int translate(api_server *s, const cJSON *in, const char *ctx, tpl_job *j, sl_err *err)
{
	const char *img = NULL, *tpl = NULL, *start = NULL, *ready = NULL;
	static const char *const fields[] = {"fromImage",
					     "fromTemplate",
					     "fromImageRegistry",
					     "startCmd",
					     "readyCmd",
					     "steps",
					     "force",
					     NULL};
	if (api_json_fields(in, "", fields, err) < 0 ||
	    api_json_string(in, "", "fromImage", &img, err) < 0 ||
	    api_json_string(in, "", "fromTemplate", &tpl, err) < 0 ||
	    api_json_string(in, "", "startCmd", &start, err) < 0 ||
	    api_json_string(in, "", "readyCmd", &ready, err) < 0)
		return -1;
	if (cJSON_GetObjectItemCaseSensitive(in, "fromImageRegistry"))
		return sl_fail(err, SL_INVALID, 0,
			       "fromImageRegistry: registry credentials are the daemon's (its "
			       "auth.json, `sandlot serve --auth-file`), not the template's");
	/* The image's start and ready commands (startcmd.h). A start command with no ready
	 * command waits 20 s, as E2B's builder does. */
	if ((start && (!*start || strlen(start) > 65536)) ||
	    (ready && (!*ready || strlen(ready) > 65536)))
		return sl_fail(err, SL_INVALID, 0,
			       "startCmd, readyCmd: a command of 1 to 65536 bytes");
	if ((start && !(j->start = strdup(start))) ||
	    (start && !ready && !(j->ready = strdup("sleep 20"))) ||
	    (ready && !(j->ready = strdup(ready))))
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "startCmd");
	if (!!img == !!tpl)
		return sl_fail(err, SL_INVALID, 0, "give one of fromImage and fromTemplate");
	const char *base = img ? img : tpl;
	if (!*base || !one_line(base) || strchr(base, ' ') || strlen(base) >= sizeof(j->base))
		return sl_fail(err, SL_INVALID, 0, "base %.80s: not an image reference", base);
	if (tpl && e2b_stock_template(tpl))
		base = e2b_stock_image(s->ctx->cfg.state_dir, tpl);
	snprintf(j->base, sizeof(j->base), "%s", base);
	j->pull = img != NULL;
	const cJSON *steps = cJSON_GetObjectItemCaseSensitive(in, "steps"), *st;
	if (steps && !cJSON_IsArray(steps))
		return sl_fail(err, SL_INVALID, 0, "steps: an array");
	if (cJSON_GetArraySize(steps) > MAX_STEPS)
		return sl_fail(err, SL_INVALID, 0, "steps: at most %d", MAX_STEPS);
	if (steps && !(j->steps = cJSON_Duplicate(steps, 1)))
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "steps");
	char user[256];
	base_user(s, base, user, sizeof(user));
	/* FROM names the base as a local image; a reference not yet here is pulled first
	 * (tpl_main) under its short name, which the FROM line is rewritten to then. */
	df_line(&j->df, 0, "FROM %s", base);
	/* E2B's skipCache / a step's force: a build-unique ARG changes the cache key of every
	 * step after it, so they all run again. */
	bool forced = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(in, "force"));
	if (forced)
		df_line(&j->df, 0, "ARG E2B_SKIP_CACHE=%s", j->bid);
	int k = 0;
	cJSON_ArrayForEach(st, steps)
	{
		k++;
		if (!cJSON_IsObject(st))
			return sl_fail(err, SL_INVALID, 0, "step %d: an object", k);
		if (!forced && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "force"))) {
			forced = true;
			df_line(&j->df, k, "ARG E2B_SKIP_CACHE=%s", j->bid);
		}
		if (step_lines(&j->df, k, st, ctx, user, sizeof(user), err) < 0)
			return -1;
	}
	if (j->df.oom)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "the template's Dockerfile");
	return 0;
}

static void on_line(void *arg, const char *line)
{
	tpl_job *j = arg;
	log_add(j->dir, "info", line);
}

static void on_pull(void *arg, const char *status, const char *layer, uint64_t cur, uint64_t total)
{
	(void)cur, (void)total;
	if (!strcmp(status, "Downloading"))
		return;
	char line[256];
	snprintf(line, sizeof(line), "pull: %s%s%s", layer, *layer ? ": " : "", status);
	on_line(arg, line);
}

/* A base not in the store, fetched (through --registry-mirror for docker.io); the FROM
 * line then names it by its short name. */
static int base_ensure(tpl_job *j, sl_err *err)
{
	const sl_config *cfg = &j->srv->ctx->cfg;
	sl_image img;
	sl_image_ref ref;
	if (image_lookup(cfg->state_dir, j->base, &img, err) == 0 || !j->pull)
		return 0;
	if (image_ref_parse(j->base, &ref, err) < 0 || !ref.name[0])
		return sl_fail(err, SL_INVALID, 0,
			       "fromImage %.80s: not a reference sandlot can name", j->base);
	if (image_lookup(cfg->state_dir, ref.name, &img, err) != 0) {
		sl_pull_opts o = image_pull_opts(cfg, on_pull, j);
		log_add(j->dir, "info", "pulling the base image");
		if (image_pull(cfg->state_dir, j->base, &o, &img, err) < 0)
			return sl_wrap(err, "fromImage %s", j->base);
	}
	/* The first line is "FROM <base>": name the image as the store knows it. */
	char *nl = strchr(j->df.s, '\n');
	_cleanup_free_ char *rest = strdup(nl ? nl : "\n"), *s = NULL;
	if (!rest || asprintf(&s, "FROM %s%s", img.name, rest) < 0)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "the template's Dockerfile");
	free(j->df.s);
	j->df.s = steal_ptr(&s);
	j->df.len = strlen(j->df.s);
	return 0;
}

/* A RUN step as a user the image does not have: E2B's envd refuses it before it starts,
 * in words code written for E2B (and E2B's own suite) looks for. */
static bool run_user_unknown(tpl_job *j, int k, const char *rest, char *msg, size_t len)
{
	const cJSON *st = cJSON_GetArrayItem(j->steps, k - 1);
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(st, "type");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(st, "args");
	const char *cmd = arg_at(args, 0), *as = arg_at(args, 1);
	if (!cJSON_IsString(type) || strcmp(type->valuestring, "RUN") || !cmd || !as || !*as ||
	    !strstr(rest, ": look up user: "))
		return false;
	snprintf(msg, len,
		 "step %d: failed to run command '%s': command failed: unauthenticated: invalid "
		 "username: '%s'",
		 k, cmd, as);
	return true;
}

/* The builder's error names a Dockerfile line; the SDK wants the step (its stack trace),
 * "base" for the FROM. */
static void reason_of(tpl_job *j, const sl_err *err, cJSON *reason)
{
	const char *at = strstr(err->msg, "Dockerfile line ");
	int line = 0;
	char msg[sizeof(err->msg) + 64];
	static const char fin[] = "the image's start and ready commands: ";
	if (!strncmp(err->msg, fin, sizeof(fin) - 1)) { /* E2B's last phase, "finalize" */
		cJSON_AddStringToObject(reason, "message", err->msg + sizeof(fin) - 1);
		cJSON_AddStringToObject(reason, "step", "finalize");
		return;
	}
	if (at && sscanf(at, "Dockerfile line %d", &line) == 1 && line >= 1 && line <= j->df.line) {
		int k = j->df.step_of[line];
		const char *colon = strchr(at, ':');
		const char *rest = colon ? colon + 2 : at;
		if (k == 0)
			snprintf(msg, sizeof(msg), "base image %s: %s", j->base, rest);
		else if (!run_user_unknown(j, k, rest, msg, sizeof(msg)))
			snprintf(msg, sizeof(msg), "step %d: %s", k, rest);
		cJSON_AddStringToObject(reason, "message", msg);
		char step[16] = "base";
		if (k > 0)
			snprintf(step, sizeof(step), "%d", k);
		cJSON_AddStringToObject(reason, "step", step);
		return;
	}
	cJSON_AddStringToObject(reason, "message", err->msg);
}

static void *tpl_main(void *p)
{
	tpl_job *j = p;
	owner_act_as(j->owner);
	char ctx[PATH_MAX + 8], df[PATH_MAX + 24];
	snprintf(ctx, sizeof(ctx), "%s/ctx", j->dir);
	snprintf(df, sizeof(df), "%s/Dockerfile", ctx);
	sl_err err = {0};
	sl_build_opts o = {.name = j->name,
			   .context = ctx,
			   .start_cmd = j->start,
			   .ready_cmd = j->ready,
			   .out = on_line,
			   .out_arg = j};
	sl_image img;
	int rc = base_ensure(j, &err);
	if (rc == 0)
		rc = state_write_atomic_nosync(df, j->df.s, j->df.len, &err);
	if (rc == 0)
		rc = build_image(j->srv->ctx, &o, &img, &err);
	for (size_t i = 1; rc == 0 && i < j->rec.nimages; i++) {
		sl_image t;
		rc = image_tag(j->srv->ctx->cfg.state_dir, img.name, j->rec.images[i], &t, &err);
		char line[IMAGE_NAME_MAX + 16];
		snprintf(line, sizeof(line), "tagged %s", j->rec.images[i]);
		if (rc == 0)
			on_line(j, line);
	}
	_cleanup_cjson_ cJSON *res = cJSON_CreateObject();
	if (rc == 0) {
		cJSON_AddStringToObject(res, "status", "ready");
	} else {
		cJSON *reason = cJSON_AddObjectToObject(res, "reason");
		if (!strncmp(err.msg, "fromImage", 9)) {
			cJSON_AddStringToObject(reason, "message", err.msg);
			cJSON_AddStringToObject(reason, "step", "base");
		} else {
			reason_of(j, &err, reason);
		}
		cJSON_AddStringToObject(res, "status", "error");
		log_add(j->dir, "error",
			cJSON_GetObjectItemCaseSensitive(reason, "message")->valuestring);
	}
	sl_err e;
	if (fs_remove_tree(ctx, &e) < 0)
		sl_log(SL_LOG_WARN, "e2b template build %s: %s", j->bid, e.msg);
	if (result_save(j->srv, j->bid, res, &e) < 0)
		sl_log(SL_LOG_WARN, "e2b template build %s: %s", j->bid, e.msg);
	atomic_fetch_sub(&j->srv->imports, 1);
	job_free(j);
	return NULL;
}

enum MHD_Result e2b_template_build_start(api_req *r)
{
	const char *tid = r->param[0], *bid = r->param[1];
	const cJSON *in;
	tpl_build b;
	sl_err err = {0};
	if (tb_load(r->srv, bid, &b, &err) < 0)
		return e2b_reply_code(r, 404, "%s", err.msg);
	if (strcmp(b.template, tid))
		return e2b_reply_code(r, 404, "build %s is not template %s's", bid, tid);
	if (b.started)
		return e2b_reply_code(r, 409, "build %s has started already", bid);
	if (api_body_object(r, false, &in, &err) < 0)
		return e2b_reply_err(r, &err);
	tpl_job *j = calloc(1, sizeof(*j));
	if (!j)
		return e2b_reply_code(r, 500, "build: out of memory");
	j->srv = r->srv;
	snprintf(j->owner, sizeof(j->owner), "%s", r->owner);
	snprintf(j->bid, sizeof(j->bid), "%s", bid);
	snprintf(j->name, sizeof(j->name), "%s", b.images[0]);
	j->rec = b;
	build_dir(r->srv, bid, j->dir, sizeof(j->dir));
	char ctx[PATH_MAX + 8];
	snprintf(ctx, sizeof(ctx), "%s/ctx", j->dir);
	int rc = translate(r->srv, in, ctx, j, &err);
	if (rc == 0)
		rc = api_import_admit(r->srv, &err);
	b.started = true;
	b.pid = (long)getpid();
	pthread_t t;
	pthread_attr_t at;
	if (rc == 0 && (rc = tb_save(r->srv, bid, &b, &err)) < 0)
		atomic_fetch_sub(&r->srv->imports, 1);
	if (rc == 0) {
		int e;
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		e = pthread_create(&t, &at, tpl_main, j);
		pthread_attr_destroy(&at);
		if (e) {
			atomic_fetch_sub(&r->srv->imports, 1);
			rc = sl_fail(&err, SL_INTERNAL, e, "build %s: start", bid);
		}
	}
	if (rc < 0) {
		/* Nothing half-made: the uploads go, the result says why. */
		build_refused(r->srv, bid, err.msg, NULL);
		job_free(j);
		return e2b_reply_code(r, api_err_status(&err), "template %s: %s", tid, err.msg);
	}
	return api_reply_empty(r, 202);
}

/* ---- GET /templates/{tid}/builds/{bid}/status?logsOffset= ---- */

enum MHD_Result e2b_template_build_status(api_req *r)
{
	const char *tid = r->param[0], *bid = r->param[1];
	tpl_build b;
	uint64_t offset = 0;
	sl_err err = {0};
	if (api_query_uint(r, "logsOffset", 1u << 30, &offset, &err) < 0)
		return e2b_reply_err(r, &err);
	if (tb_load(r->srv, bid, &b, &err) < 0)
		return e2b_reply_code(r, 404, "%s", err.msg);
	if (strcmp(b.template, tid))
		return e2b_reply_code(r, 404, "build %s is not template %s's", bid, tid);
	char dir[PATH_MAX];
	build_dir(r->srv, bid, dir, sizeof(dir));
	/* The result before the log: every entry is written by the time the result is. */
	cJSON *res = result_load(r->srv, bid);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "templateID", tid);
	cJSON_AddStringToObject(o, "buildID", bid);
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(res, "status");
	if (cJSON_IsString(st)) {
		cJSON_AddStringToObject(o, "status", st->valuestring);
		cJSON *reason = cJSON_DetachItemFromObjectCaseSensitive(res, "reason");
		if (reason)
			cJSON_AddItemToObject(o, "reason", reason);
	} else if (b.started && !build_running(&b)) {
		cJSON_AddStringToObject(o, "status", "error");
		cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "reason"), "message",
					"the build was cut short: the daemon that ran it stopped");
	} else {
		cJSON_AddStringToObject(o, "status", b.started ? "building" : "waiting");
	}
	cJSON_Delete(res);
	cJSON_AddItemToObject(o, "logEntries", log_entries(dir, offset));
	cJSON_AddArrayToObject(o, "logs");
	return api_reply_json(r, 200, o);
}

/* ---- GET /templates/aliases/{alias} ---- */

enum MHD_Result e2b_template_alias(api_req *r)
{
	const char *alias = r->param[0];
	_cleanup_free_ sl_image *v = NULL;
	size_t n = 0;
	sl_err err = {0};
	/* A template is there while one of its tags is (runtime/image_tag.c). */
	if (!e2b_stock_template(alias) &&
	    (image_tags(r->srv->ctx->cfg.state_dir, alias, &v, &n, &err) < 0 || !n))
		return e2b_reply_code(r, 404, "template %s: no image of that name", alias);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "templateID", alias);
	cJSON_AddBoolToObject(o, "public", false);
	return api_reply_json(r, 200, o);
}
