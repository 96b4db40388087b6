/* daytona_build.c — Daytona's image builds: `create({image})` with a Dockerfile and
 * `snapshot.create` run the runtime's Dockerfile builder (build_image_from_text) in a
 * thread, their logs kept for the build-logs streams; a snapshot is a sandlot image. */
#include <errno.h>
#include <nettle/sha2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "build.h"
#include "cleanup.h"
#include "clock.h"
#include "daytona.h"
#include "dockerfile.h"
#include "log.h"
#include "pull.h"

#define GIB	  1073741824.0
#define KEEP_MS	  (10 * 60 * 1000) /* a finished build or create is remembered this long */
#define LOG_MAX	  (4u << 20)	   /* a build log past this keeps its first 4 MiB */
#define BUILD_PFX "daytona-"	   /* images built for create({image}), then the hash */

typedef enum dt_bstate { DT_BUILDING, DT_DONE, DT_FAILED } dt_bstate;

/* One build of one image for one key; shared by every create that waits for it. */
typedef struct dt_build {
	struct dt_build *next;
	api_server *srv;
	char image[IMAGE_NAME_MAX + 1];
	char owner[SL_OWNER_LEN];
	char *dockerfile;
	bool snapshot; /* asked for by POST /snapshots (listed as building) */
	dt_bstate state;
	char reason[sizeof(((sl_err *)0)->msg)];
	char *log;
	size_t len, cap;
	int64_t created, ended; /* ms */
	int refs;		/* log streams and creates still reading it */
} dt_build;

/* A sandbox create waiting for a build: the id the SDK holds until the sandbox exists. */
typedef struct dt_pending {
	struct dt_pending *next;
	char id[40], name[128];
	char owner[SL_OWNER_LEN];
	dt_build *b;
	cJSON *v1;	  /* the /v1 create body */
	char sandbox[32]; /* the sandbox made, once made */
	char reason[sizeof(((sl_err *)0)->msg)];
	bool failed, deleted;
	int64_t created, ended;
} dt_pending;

struct dt_builds {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a log grew or a build ended */
	dt_build *builds;
	dt_pending *pending;
	int running; /* build threads (detached) not yet ended */
	bool stopping;
};

static struct dt_builds *table(api_server *s)
{
	pthread_mutex_lock(&s->lock);
	if (!s->dt_builds) {
		struct dt_builds *t = calloc(1, sizeof(*t));
		if (t) {
			pthread_mutex_init(&t->mu, NULL);
			pthread_cond_init(&t->cv, NULL);
		}
		s->dt_builds = t;
	}
	pthread_mutex_unlock(&s->lock);
	return s->dt_builds;
}

static void build_free(dt_build *b)
{
	free(b->dockerfile);
	free(b->log);
	free(b);
}

/* Forget what ended long ago and nothing reads (under t->mu). */
static void prune(struct dt_builds *t)
{
	int64_t now = sl_mono_ms();
	for (dt_pending **pp = &t->pending; *pp;) {
		dt_pending *p = *pp;
		if (p->ended && now - p->ended > KEEP_MS) {
			*pp = p->next;
			if (p->b)
				p->b->refs--;
			cJSON_Delete(p->v1);
			free(p);
		} else {
			pp = &p->next;
		}
	}
	for (dt_build **bp = &t->builds; *bp;) {
		dt_build *b = *bp;
		if (b->state != DT_BUILDING && !b->refs && now - b->ended > KEEP_MS) {
			*bp = b->next;
			build_free(b);
		} else {
			bp = &b->next;
		}
	}
}

/* The newest build of IMAGE for the acting key (under t->mu). */
static dt_build *build_find(struct dt_builds *t, const char *owner, const char *image)
{
	for (dt_build *b = t->builds; b; b = b->next)
		if (!strcmp(b->image, image) && !strcmp(b->owner, owner))
			return b;
	return NULL;
}

static void log_line(void *arg, const char *line)
{
	dt_build *b = arg;
	struct dt_builds *t = b->srv->dt_builds;
	size_t n = strlen(line);
	pthread_mutex_lock(&t->mu);
	if (b->len + n + 1 <= LOG_MAX) {
		if (b->len + n + 1 > b->cap) {
			size_t cap = b->cap ? b->cap * 2 : 4096;
			while (cap < b->len + n + 1)
				cap *= 2;
			char *p = realloc(b->log, cap);
			if (p)
				b->log = p, b->cap = cap;
		}
		if (b->len + n + 1 <= b->cap) {
			memcpy(b->log + b->len, line, n);
			b->log[b->len + n] = '\n';
			b->len += n + 1;
		}
	}
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

/* The creates that waited for B: each made now (or failed with the build's reason). */
static void pending_finish(api_server *s, dt_build *b)
{
	struct dt_builds *t = s->dt_builds;
	for (;;) {
		pthread_mutex_lock(&t->mu);
		dt_pending *p = t->pending;
		while (p && (p->b != b || p->ended))
			p = p->next;
		if (!p) {
			pthread_mutex_unlock(&t->mu);
			return;
		}
		cJSON *v1 = p->deleted || b->state == DT_FAILED ? NULL : cJSON_Duplicate(p->v1, 1);
		char owner[SL_OWNER_LEN];
		snprintf(owner, sizeof(owner), "%s", p->owner);
		if (!v1) {
			p->failed = !p->deleted;
			snprintf(p->reason, sizeof(p->reason), "%s", b->reason);
			p->ended = sl_mono_ms();
			pthread_mutex_unlock(&t->mu);
			continue;
		}
		pthread_mutex_unlock(&t->mu);
		sl_sandbox sb;
		sl_err err = {0};
		owner_act_as(owner);
		int rc = api_sandbox_create_from(s, v1, false, false, &sb, &err);
		cJSON_Delete(v1);
		pthread_mutex_lock(&t->mu);
		bool deleted = p->deleted;
		if (rc == 0)
			snprintf(p->sandbox, sizeof(p->sandbox), "%s", sb.id);
		else
			p->failed = true, snprintf(p->reason, sizeof(p->reason), "%s", err.msg);
		p->ended = sl_mono_ms();
		pthread_cond_broadcast(&t->cv);
		pthread_mutex_unlock(&t->mu);
		if (rc == 0) {
			/* Deleted while it was being made: it goes at once. */
			if (deleted && api_destroy(s, sb.id, "deleted while building", &err) < 0)
				sl_log(SL_LOG_WARN, "daytona: %s", err.msg);
			sandbox_free(&sb);
		}
	}
}

static void pull_progress(void *arg, const char *status, const char *layer, uint64_t current,
			  uint64_t total)
{
	if (strcmp(status, "Pull complete") && strcmp(status, "Already exists"))
		return; /* the log keeps one line a layer, not the byte counts */
	char line[160];
	snprintf(line, sizeof(line), "  %s: %s", layer, status);
	log_line(arg, line);
}

/* The builder takes local images only: each FROM naming an image the key has not (not
 * scratch, not an earlier stage, no ARG in it) is pulled first, through the daemon's
 * --registry-mirror and credentials as `sandlot image pull` is. */
static int pull_bases(dt_build *b, sl_err *err)
{
	const sl_config *cfg = &b->srv->ctx->cfg;
	df_file f = {0};
	if (dockerfile_parse(b->dockerfile, strlen(b->dockerfile), &f, err) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < f.n && rc == 0; i++) {
		char ref[512] = "", as[8] = "", stage[128] = "";
		if (f.v[i].kind != DF_FROM ||
		    sscanf(f.v[i].rest, "%511s %7s %127s", ref, as, stage) < 1 ||
		    strchr(ref, '$') || !strcmp(ref, "scratch"))
			continue;
		bool earlier = false;
		for (size_t k = 0; k < i && !earlier; k++) {
			char r2[512] = "", as2[8] = "", st2[128] = "";
			earlier = f.v[k].kind == DF_FROM &&
				  sscanf(f.v[k].rest, "%511s %7s %127s", r2, as2, st2) == 3 &&
				  !strcasecmp(as2, "as") && !strcmp(st2, ref);
		}
		sl_image img;
		sl_err e = {0};
		if (earlier || image_lookup(cfg->state_dir, ref, &img, &e) == 0)
			continue;
		char line[600];
		snprintf(line, sizeof(line), "Pulling %s%s%s", ref,
			 cfg->registry_mirror[0] ? " through " : "", cfg->registry_mirror);
		log_line(b, line);
		sl_pull_opts o = image_pull_opts(cfg, pull_progress, b);
		if (image_pull(cfg->state_dir, ref, &o, &img, err) < 0)
			rc = sl_wrap(err, "Dockerfile line %d: FROM %s", f.v[i].line, ref);
	}
	dockerfile_free(&f);
	return rc;
}

static void *build_main(void *arg)
{
	dt_build *b = arg;
	api_server *s = b->srv;
	struct dt_builds *t = s->dt_builds;
	owner_act_as(b->owner);
	sl_build_opts o = {.name = b->image, .out = log_line, .out_arg = b};
	sl_image img;
	sl_err err = {0};
	int rc = pull_bases(b, &err);
	if (rc == 0)
		rc = build_image_from_text(s->ctx, &o, b->dockerfile, &img, &err);
	if (rc < 0)
		log_line(b, err.msg);
	pthread_mutex_lock(&t->mu);
	b->state = rc == 0 ? DT_DONE : DT_FAILED;
	if (rc < 0)
		snprintf(b->reason, sizeof(b->reason), "%s", err.msg);
	b->ended = sl_mono_ms();
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	atomic_fetch_sub(&s->imports, 1);
	pending_finish(s, b);
	pthread_mutex_lock(&t->mu);
	t->running--;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

/* The build of IMAGE from DOCKERFILE for the request's key: a running one joined, else a
 * new one started (it counts as an image import: --max-imports). Under t->mu. */
static dt_build *build_start(api_req *r, struct dt_builds *t, const char *image,
			     const char *dockerfile, bool snapshot, sl_err *err)
{
	dt_build *b = build_find(t, r->owner, image);
	if (b && b->state == DT_BUILDING)
		return b;
	if (t->stopping) {
		sl_fail(err, SL_CONFLICT, 0, "the daemon is stopping");
		return NULL;
	}
	if (api_import_admit(r->srv, err) < 0)
		return NULL;
	b = calloc(1, sizeof(*b));
	if (!b || !(b->dockerfile = strdup(dockerfile))) {
		free(b);
		atomic_fetch_sub(&r->srv->imports, 1);
		sl_fail(err, SL_EXHAUSTED, ENOMEM, "build");
		return NULL;
	}
	b->srv = r->srv;
	snprintf(b->image, sizeof(b->image), "%s", image);
	snprintf(b->owner, sizeof(b->owner), "%s", r->owner);
	b->snapshot = snapshot;
	b->created = sl_mono_ms();
	pthread_t th;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	int e = pthread_create(&th, &at, build_main, b);
	pthread_attr_destroy(&at);
	if (e != 0) {
		build_free(b);
		atomic_fetch_sub(&r->srv->imports, 1);
		sl_fail(err, SL_INTERNAL, e, "build: start its thread");
		return NULL;
	}
	t->running++;
	b->next = t->builds;
	t->builds = b;
	return b;
}

void dt_builds_stop(api_server *s)
{
	struct dt_builds *t = s->dt_builds;
	if (!t)
		return;
	/* A build cannot be cut short: its steps end, then the thread (the server's
	 * watchdog ends a stop that takes too long). */
	pthread_mutex_lock(&t->mu);
	t->stopping = true;
	while (t->running)
		pthread_cond_wait(&t->cv, &t->mu);
	pthread_mutex_unlock(&t->mu);
}

/* ---- the Dockerfile a create or snapshot sends ---- */

int dt_dockerfile_check(const cJSON *build_info, const char **dockerfile, sl_err *err)
{
	const char *df = NULL;
	if (api_json_string(build_info, "buildInfo.", "dockerfileContent", &df, err) < 0)
		return -1;
	if (!df || !*df)
		return sl_fail(err, SL_INVALID, 0, "buildInfo.dockerfileContent: required");
	const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(build_info, "contextHashes");
	if (ctx && !cJSON_IsNull(ctx) && !(cJSON_IsArray(ctx) && !cJSON_GetArraySize(ctx)))
		return sl_fail(err, SL_NOTIMPL, 0,
			       "buildInfo.contextHashes: images with local files (addLocalFile, "
			       "addLocalDir) need Daytona's object storage, which sandlot has not; "
			       "use `sandlot image build` with the files in its context");
	df_file f = {0};
	if (dockerfile_parse(df, strlen(df), &f, err) < 0)
		return -1;
	bool empty = f.n == 0;
	dockerfile_free(&f);
	if (empty)
		return sl_fail(err, SL_INVALID, 0, "buildInfo.dockerfileContent: no instructions");
	*dockerfile = df;
	return 0;
}

/* "daytona-" and 24 hex digits of the Dockerfile's sha256: the cache of create({image}). */
static void cache_name(const char *dockerfile, char out[IMAGE_NAME_MAX + 1])
{
	struct sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_init(&h);
	sha256_update(&h, strlen(dockerfile), (const uint8_t *)dockerfile);
	sha256_digest(&h, sizeof(d), d);
	int n = snprintf(out, IMAGE_NAME_MAX + 1, BUILD_PFX);
	for (int i = 0; i < 12; i++)
		n += snprintf(out + n, (size_t)(IMAGE_NAME_MAX + 1 - n), "%02x", d[i]);
}

/* "FROM ref" alone, ref an image the key has: that image, nothing to build. */
static bool bare_from(api_server *s, const char *dockerfile, char ref[IMAGE_NAME_MAX + 1])
{
	char rest[8] = "";
	sl_image img;
	sl_err e = {0};
	return sscanf(dockerfile, "FROM %127s %7s", ref, rest) == 1 &&
	       image_lookup(s->ctx->cfg.state_dir, ref, &img, &e) == 0;
}

/* ---- sandboxes waiting for a build ---- */

static cJSON *pending_dto(api_req *r, const dt_pending *p)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", p->id);
	cJSON_AddStringToObject(o, "name", p->name[0] ? p->name : p->id);
	cJSON_AddStringToObject(o, "organizationId", "local");
	cJSON_AddStringToObject(o, "snapshot", p->b ? p->b->image : "");
	cJSON_AddStringToObject(o, "user", "");
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(p->v1, "env");
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(p->v1, "labels");
	cJSON_AddItemToObject(o, "env", env ? cJSON_Duplicate(env, 1) : cJSON_CreateObject());
	cJSON_AddItemToObject(o, "labels",
			      labels ? cJSON_Duplicate(labels, 1) : cJSON_CreateObject());
	cJSON_AddBoolToObject(o, "public", false);
	cJSON_AddStringToObject(o, "target", "local");
	/* The image built but the sandbox not made: an error, not a failed build. */
	const char *state =
	    !p->failed ? (p->b && p->b->state == DT_BUILDING ? "building_snapshot" : "creating")
	    : p->b && p->b->state == DT_DONE ? "error"
					     : "build_failed";
	cJSON_AddStringToObject(o, "state", state);
	cJSON_AddStringToObject(o, "desiredState", "started");
	if (p->failed)
		cJSON_AddStringToObject(o, "errorReason", p->reason);
	cJSON_AddNumberToObject(o, "cpu", 0);
	cJSON_AddNumberToObject(o, "gpu", 0);
	cJSON_AddNumberToObject(o, "memory", 0);
	cJSON_AddNumberToObject(o, "disk", 0);
	cJSON_AddNumberToObject(o, "autoStopInterval", 0);
	cJSON_AddNumberToObject(o, "autoArchiveInterval", 0);
	cJSON_AddNumberToObject(o, "autoPauseInterval", 0);
	cJSON_AddNumberToObject(o, "autoDeleteInterval", -1);
	cJSON_AddItemToObject(o, "volumes", cJSON_CreateArray());
	char origin[256], url[300];
	dt_origin(r, origin, sizeof(origin));
	snprintf(url, sizeof(url), "%s/toolbox", origin);
	cJSON_AddStringToObject(o, "toolboxProxyUrl", url);
	return o;
}

static dt_pending *pending_find(struct dt_builds *t, const char *owner, const char *id)
{
	for (dt_pending *p = t->pending; p; p = p->next)
		if (!strcmp(p->id, id) && !strcmp(p->owner, owner) && !p->deleted)
			return p;
	return NULL;
}

int dt_build_create(api_req *r, cJSON *v1, const char *dockerfile, cJSON **dto, sl_err *err)
{
	char image[IMAGE_NAME_MAX + 1];
	*dto = NULL;
	if (bare_from(r->srv, dockerfile, image)) {
		cJSON_AddStringToObject(v1, "image", image);
		return 0;
	}
	cache_name(dockerfile, image);
	cJSON_DeleteItemFromObjectCaseSensitive(v1, "image");
	cJSON_AddStringToObject(v1, "image", image);
	sl_image img;
	sl_err e = {0};
	if (image_lookup(r->srv->ctx->cfg.state_dir, image, &img, &e) == 0)
		return 0; /* built before: the same Dockerfile is not built again */
	struct dt_builds *t = table(r->srv);
	if (!t)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "build");
	dt_pending *p = calloc(1, sizeof(*p));
	if (!p || !(p->v1 = cJSON_Duplicate(v1, 1))) {
		free(p);
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "build");
	}
	uint64_t rnd;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		cJSON_Delete(p->v1);
		free(p);
		return sl_sysfail(err, "build: random");
	}
	snprintf(p->id, sizeof(p->id), "build_%016llx", (unsigned long long)rnd);
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(v1, "name");
	if (cJSON_IsString(name))
		snprintf(p->name, sizeof(p->name), "%s", name->valuestring);
	snprintf(p->owner, sizeof(p->owner), "%s", r->owner);
	p->created = sl_mono_ms();
	pthread_mutex_lock(&t->mu);
	prune(t);
	p->b = build_start(r, t, image, dockerfile, false, err);
	if (!p->b) {
		pthread_mutex_unlock(&t->mu);
		cJSON_Delete(p->v1);
		free(p);
		return -1;
	}
	p->b->refs++;
	p->next = t->pending;
	t->pending = p;
	*dto = pending_dto(r, p);
	/* The SDK waits while it reads pending_build, then asks for the build's log. */
	cJSON_ReplaceItemInObjectCaseSensitive(*dto, "state", cJSON_CreateString("pending_build"));
	pthread_mutex_unlock(&t->mu);
	return 0;
}

int dt_build_resolve(api_req *r, cJSON **dto)
{
	struct dt_builds *t = r->srv->dt_builds;
	*dto = NULL;
	if (!t || r->nparam < 1 || strncmp(r->param[0], "build_", 6))
		return 0;
	pthread_mutex_lock(&t->mu);
	dt_pending *p = pending_find(t, r->owner, r->param[0]);
	int rc = 0;
	char *id = p && p->sandbox[0] ? strdup(p->sandbox) : NULL;
	if (id) {
		free(r->param[0]);
		r->param[0] = id;
		rc = 1;
	} else if (p) {
		*dto = pending_dto(r, p);
		rc = 2;
	}
	pthread_mutex_unlock(&t->mu);
	return rc;
}

int dt_build_delete(api_req *r)
{
	struct dt_builds *t = r->srv->dt_builds;
	if (!t)
		return 0;
	pthread_mutex_lock(&t->mu);
	dt_pending *p = pending_find(t, r->owner, r->param[0]);
	if (p) /* pending_finish makes no sandbox for it, or destroys the one it made */
		p->deleted = true;
	pthread_mutex_unlock(&t->mu);
	return p ? 1 : 0;
}

/* ---- the build logs ---- */

typedef struct log_stream {
	api_server *srv;
	dt_build *b;
	size_t pos;
	bool follow;
} log_stream;

static ssize_t log_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	log_stream *ls = cls;
	struct dt_builds *t = ls->srv->dt_builds;
	(void)pos;
	pthread_mutex_lock(&t->mu);
	for (;;) {
		if (ls->pos < ls->b->len) {
			size_t n = ls->b->len - ls->pos < max ? ls->b->len - ls->pos : max;
			memcpy(buf, ls->b->log + ls->pos, n);
			ls->pos += n;
			pthread_mutex_unlock(&t->mu);
			return (ssize_t)n;
		}
		if (!ls->follow || ls->b->state != DT_BUILDING || atomic_load(&ls->srv->stopping))
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&t->cv, &t->mu, &ts);
	}
	pthread_mutex_unlock(&t->mu);
	return MHD_CONTENT_READER_END_OF_STREAM;
}

static void log_free(void *cls)
{
	log_stream *ls = cls;
	struct dt_builds *t = ls->srv->dt_builds;
	pthread_mutex_lock(&t->mu);
	ls->b->refs--;
	pthread_mutex_unlock(&t->mu);
	free(ls);
}

/* The log of B as text, with ?follow=true until the build ends. Under t->mu. */
static enum MHD_Result log_reply(api_req *r, dt_build *b)
{
	bool follow = false;
	sl_err err = {0};
	if (api_query_bool(r, "follow", false, &follow, &err) < 0)
		return dt_error(r, &err, NULL);
	log_stream *ls = calloc(1, sizeof(*ls));
	if (!ls)
		return dt_fail(r, SL_EXHAUSTED, NULL, "build log: out of memory");
	ls->srv = r->srv;
	ls->b = b;
	ls->follow = follow;
	b->refs++;
	struct MHD_Response *resp =
	    MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, log_read, ls, log_free);
	if (!resp) {
		b->refs--;
		free(ls);
		return dt_fail(r, SL_INTERNAL, NULL, "build log: out of memory");
	}
	MHD_add_response_header(resp, "Content-Type", "text/plain; charset=utf-8");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	if (follow)
		api_conn_long_lived(r, false);
	return api_reply(r, 200, resp);
}

/* The build behind a sandbox id (pending) or a snapshot name; NULL when none. */
static dt_build *logs_of(api_req *r, struct dt_builds *t, bool snapshot)
{
	if (snapshot)
		return build_find(t, r->owner, r->param[0]);
	dt_pending *p = pending_find(t, r->owner, r->param[0]);
	return p ? p->b : NULL;
}

static enum MHD_Result logs(api_req *r, bool snapshot, bool url)
{
	struct dt_builds *t = table(r->srv);
	if (!t)
		return dt_fail(r, SL_EXHAUSTED, NULL, "build log: out of memory");
	pthread_mutex_lock(&t->mu);
	dt_build *b = logs_of(r, t, snapshot);
	if (!b) {
		pthread_mutex_unlock(&t->mu);
		return dt_fail(r, SL_NOTFOUND, NULL,
			       "%s %s has no build log here (only builds this daemon ran since it "
			       "started, for 10 minutes after they end)",
			       snapshot ? "snapshot" : "sandbox", r->param[0]);
	}
	if (!url) {
		enum MHD_Result ret = log_reply(r, b);
		pthread_mutex_unlock(&t->mu);
		return ret;
	}
	pthread_mutex_unlock(&t->mu);
	char origin[256], u[700];
	dt_origin(r, origin, sizeof(origin));
	char enc[3 * IMAGE_NAME_MAX + 1];
	size_t n = 0;
	for (const char *c = r->param[0]; *c && n + 4 < sizeof(enc); c++)
		n += (size_t)snprintf(enc + n, sizeof(enc) - n,
				      strchr("/:@%?#&+ ", *c) ? "%%%02X" : "%c", (unsigned char)*c);
	snprintf(u, sizeof(u), "%s/api/%s/%s/build-logs", origin,
		 snapshot ? "snapshots" : "sandbox", enc);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "url", u);
	return api_reply_json(r, 200, o);
}

enum MHD_Result dt_sandbox_build_logs_url(api_req *r)
{
	return logs(r, false, true);
}

enum MHD_Result dt_sandbox_build_logs(api_req *r)
{
	return logs(r, false, false);
}

enum MHD_Result dt_snapshot_build_logs_url(api_req *r)
{
	return logs(r, true, true);
}

enum MHD_Result dt_snapshot_build_logs(api_req *r)
{
	return logs(r, true, false);
}

/* ---- snapshots: sandlot images under Daytona's name ---- */

static void iso_time(int64_t unix_s, char out[32])
{
	time_t c = (time_t)unix_s;
	struct tm tm;
	gmtime_r(&c, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static cJSON *snapshot_dto(api_req *r, const char *name, const char *state, const sl_image *img,
			   const char *reason)
{
	const sl_config *cfg = &r->srv->ctx->cfg;
	cJSON *o = cJSON_CreateObject();
	char t[32];
	iso_time(img ? img->created : (int64_t)time(NULL), t);
	cJSON_AddStringToObject(o, "id", name);
	cJSON_AddStringToObject(o, "organizationId", "local");
	cJSON_AddBoolToObject(o, "general", false);
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "imageName", name);
	cJSON_AddStringToObject(o, "state", state);
	if (img)
		cJSON_AddNumberToObject(o, "size", img->size_bytes / GIB);
	else
		cJSON_AddNullToObject(o, "size");
	cJSON_AddNullToObject(o, "entrypoint");
	cJSON_AddNumberToObject(o, "cpu", cfg->def_cpu_millis / 1000.0);
	cJSON_AddNumberToObject(o, "gpu", 0);
	cJSON_AddNumberToObject(o, "mem", cfg->def_memory / GIB);
	cJSON_AddNumberToObject(o, "disk", cfg->def_disk / GIB);
	if (reason)
		cJSON_AddStringToObject(o, "errorReason", reason);
	else
		cJSON_AddNullToObject(o, "errorReason");
	cJSON_AddStringToObject(o, "createdAt", t);
	cJSON_AddStringToObject(o, "updatedAt", t);
	cJSON_AddNullToObject(o, "lastUsedAt");
	cJSON_AddNullToObject(o, "sourceSandboxId");
	return o;
}

/* The snapshot NAME as the SDK polls it: building, else the image, else a failed build.
 * NULL with ERR (404) when none of them. */
static cJSON *snapshot_lookup(api_req *r, const char *name, sl_err *err)
{
	struct dt_builds *t = table(r->srv);
	dt_build *b = NULL;
	cJSON *o = NULL;
	if (t) {
		pthread_mutex_lock(&t->mu);
		b = build_find(t, r->owner, name);
		if (b && b->state == DT_BUILDING)
			o = snapshot_dto(r, name, "building", NULL, NULL);
		pthread_mutex_unlock(&t->mu);
		if (o)
			return o;
	}
	sl_image img;
	if (image_lookup(r->srv->ctx->cfg.state_dir, name, &img, err) == 0)
		return snapshot_dto(r, img.name, "active", &img, NULL);
	if (t && err->kind == SL_NOTFOUND) {
		pthread_mutex_lock(&t->mu);
		b = build_find(t, r->owner, name);
		if (b && b->state == DT_FAILED)
			o = snapshot_dto(r, name, "build_failed", NULL, b->reason);
		pthread_mutex_unlock(&t->mu);
	}
	if (!o && err->kind == SL_NOTFOUND)
		sl_fail(err, SL_NOTFOUND, 0, "snapshot %s not found", name);
	return o;
}

enum MHD_Result dt_snapshot_create(api_req *r)
{
	const cJSON *body;
	const char *name = NULL, *ref = NULL, *df = NULL;
	sl_err err = {0};
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_string(body, "", "name", &name, &err) < 0 ||
	    api_json_string(body, "", "imageName", &ref, &err) < 0)
		return dt_error(r, &err, NULL);
	if (!name)
		return dt_fail(r, SL_INVALID, NULL, "name: required (the snapshot's name)");
	if (image_name_check(name, &err) < 0)
		return dt_error(r, &err, NULL);
	const cJSON *bi = cJSON_GetObjectItemCaseSensitive(body, "buildInfo");
	const cJSON *ep = cJSON_GetObjectItemCaseSensitive(body, "entrypoint");
	if (ep && !cJSON_IsNull(ep) && !(cJSON_IsArray(ep) && !cJSON_GetArraySize(ep)))
		return dt_fail(r, SL_NOTIMPL, NULL,
			       "entrypoint: give it in the image (Image.entrypoint) instead");
	if (bi && !cJSON_IsNull(bi)) {
		if (dt_dockerfile_check(bi, &df, &err) < 0)
			return dt_error(r, &err, NULL);
	} else if (!ref) {
		return dt_fail(r, SL_INVALID, NULL, "imageName or buildInfo: required");
	}
	_cleanup_free_ char *from = NULL;
	if (!df) {
		if (asprintf(&from, "FROM %s\n", ref) < 0)
			return dt_fail(r, SL_EXHAUSTED, NULL, "snapshot: out of memory");
		df_file f = {0};
		if (dockerfile_parse(from, strlen(from), &f, &err) < 0)
			return dt_error(r, &err, NULL);
		dockerfile_free(&f);
		df = from;
	}
	sl_image img;
	sl_err e = {0};
	if (image_lookup(r->srv->ctx->cfg.state_dir, name, &img, &e) == 0)
		return dt_fail(r, SL_CONFLICT, NULL,
			       "snapshot %s already exists (a sandlot image of that name); delete "
			       "it first",
			       name);
	struct dt_builds *t = table(r->srv);
	if (!t)
		return dt_fail(r, SL_EXHAUSTED, NULL, "snapshot: out of memory");
	pthread_mutex_lock(&t->mu);
	prune(t);
	dt_build *b = build_find(t, r->owner, name);
	if (b && b->state == DT_BUILDING) {
		pthread_mutex_unlock(&t->mu);
		return dt_fail(r, SL_CONFLICT, NULL, "snapshot %s is being built", name);
	}
	b = build_start(r, t, name, df, true, &err);
	pthread_mutex_unlock(&t->mu);
	if (!b)
		return dt_error(r, &err, NULL);
	return api_reply_json(r, 200, snapshot_dto(r, name, "building", NULL, NULL));
}

enum MHD_Result dt_snapshot_get(api_req *r)
{
	sl_err err = {0};
	cJSON *o = snapshot_lookup(r, r->param[0], &err);
	return o ? api_reply_json(r, 200, o) : dt_error(r, &err, NULL);
}

/* Every image the key may use, as active snapshots, then the snapshots being built;
 * ?name filters by substring, ?page and ?limit page (Daytona's defaults 1 and 100). */
enum MHD_Result dt_snapshot_list(api_req *r)
{
	sl_err err = {0};
	uint64_t page = 1, limit = 100;
	const char *filter = api_query(r, "name");
	if (api_query_uint(r, "page", UINT32_MAX, &page, &err) < 0 ||
	    api_query_uint(r, "limit", 1000, &limit, &err) < 0)
		return dt_error(r, &err, NULL);
	if (!page)
		page = 1;
	if (!limit)
		limit = 100;
	sl_image *list = NULL;
	size_t n = 0;
	if (image_list(r->srv->ctx->cfg.state_dir, &list, &n, &err) < 0)
		return dt_error(r, &err, NULL);
	cJSON *all = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		if (!filter || strstr(list[i].name, filter))
			cJSON_AddItemToArray(
			    all, snapshot_dto(r, list[i].name, "active", &list[i], NULL));
	free(list);
	struct dt_builds *t = table(r->srv);
	if (t) {
		pthread_mutex_lock(&t->mu);
		for (dt_build *b = t->builds; b; b = b->next)
			if (b->snapshot && b->state == DT_BUILDING && !strcmp(b->owner, r->owner) &&
			    (!filter || strstr(b->image, filter)))
				cJSON_AddItemToArray(
				    all, snapshot_dto(r, b->image, "building", NULL, NULL));
		pthread_mutex_unlock(&t->mu);
	}
	uint64_t total = (uint64_t)cJSON_GetArraySize(all);
	cJSON *o = cJSON_CreateObject(), *items = cJSON_AddArrayToObject(o, "items");
	for (uint64_t i = (page - 1) * limit; i < total && i < page * limit; i++)
		cJSON_AddItemToArray(items, cJSON_Duplicate(cJSON_GetArrayItem(all, (int)i), 1));
	cJSON_Delete(all);
	cJSON_AddNumberToObject(o, "total", (double)total);
	cJSON_AddNumberToObject(o, "page", (double)page);
	cJSON_AddNumberToObject(o, "totalPages", (double)((total + limit - 1) / limit));
	return api_reply_json(r, 200, o);
}

enum MHD_Result dt_snapshot_delete(api_req *r)
{
	sl_err err = {0};
	struct dt_builds *t = table(r->srv);
	if (t) {
		pthread_mutex_lock(&t->mu);
		dt_build *b = build_find(t, r->owner, r->param[0]);
		bool building = b && b->state == DT_BUILDING;
		pthread_mutex_unlock(&t->mu);
		if (building)
			return dt_fail(r, SL_CONFLICT, NULL, "snapshot %s is being built",
				       r->param[0]);
	}
	if (api_image_remove(r->srv, r->param[0], &err) < 0) {
		if (err.kind == SL_NOTFOUND)
			return dt_fail(r, SL_NOTFOUND, NULL, "snapshot %s not found", r->param[0]);
		return dt_error(r, &err, NULL);
	}
	return api_reply_empty(r, 200);
}
