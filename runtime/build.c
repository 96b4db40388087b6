/* build.c — `sandlot image build` of a Dockerfile: RUN, COPY, ADD and WORKDIR run in a
 * build sandbox whose writable layer becomes the step's layer; steps cached by key. */
#include "build.h"

#include "archive_extract.h"
#include "archive_write.h"
#include "build_copy.h"
#include "cleanup.h"
#include "clock.h"
#include "crash.h"
#include "dockerfile.h"
#include "fsutil.h"
#include "log.h"
#include "sandbox.h"
#include "sbxfs.h"
#include "startcmd.h"
#include "state.h"
#include "storage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BUILD_RECIPE	 "sandlot-build-1" /* part of every key: a new one drops the cache */
#define RUN_TIMEOUT_MS	 (60 * 60 * 1000)
#define MAX_STAGES	 32
#define MAX_TMP_IMAGES	 (MAX_STAGES * 4 + DF_MAX_INSTR)
#define RUN_OUTPUT_LINES 2000

struct layer {
	char digest[72]; /* the diff id */
	uint64_t size;
};

struct stage {
	char name[64];
	struct layer *layers;
	size_t nlayers;
	cJSON *cfg;   /* oci_config_parse's shape: user, workingDir, env, entrypoint, cmd, ... */
	cJSON *shell; /* SHELL's array */
	cJSON *args;  /* the ARGs declared in the stage: name -> value */
	bool cmd_set; /* CMD given in this stage (an ENTRYPOINT then keeps it) */
	uint8_t key[SHA256_DIGEST_SIZE];
	char tmp_image[64]; /* its image, when a step needed one */
};

struct build {
	sl_ctx *ctx;
	const sl_build_opts *o;
	sl_err *err;
	char dir[PATH_MAX]; /* <state>/images/build */
	int ctxfd;
	df_file df;
	struct stage stages[MAX_STAGES];
	size_t nstages;
	cJSON *global_args; /* ARGs before the first FROM */
	cJSON *build_args;
	bc_ignore ignore;
	int lockfd;	 /* active.lock, held shared while the build runs */
	char (*tmp)[64]; /* temporary images to remove */
	size_t ntmp;
	size_t step, nsteps;
};

static void say(struct build *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct build *b, const char *fmt, ...)
{
	if (!b->o->out)
		return;
	char line[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	b->o->out(b->o->out_arg, line);
}

static void to_hex(const uint8_t *d, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void key_add(struct stage *st, const char *what, const char *s)
{
	struct sha256_ctx h;
	sha256_init(&h);
	sha256_update(&h, sizeof(st->key), st->key);
	sha256_update(&h, strlen(what) + 1, (const uint8_t *)what);
	sha256_update(&h, strlen(s) + 1, (const uint8_t *)s);
	sha256_digest(&h, sizeof(st->key), st->key);
}

/* ---- variables ---- */

static const char *env_get(const cJSON *env, const char *name)
{
	size_t n = strlen(name);
	const cJSON *e;
	cJSON_ArrayForEach(e, env)
	{
		if (cJSON_IsString(e) && !strncmp(e->valuestring, name, n) &&
		    e->valuestring[n] == '=')
			return e->valuestring + n + 1;
	}
	return NULL;
}

static void env_set(cJSON *env, const char *name, const char *value)
{
	size_t n = strlen(name);
	char *kv = malloc(n + strlen(value) + 2);
	if (!kv)
		return;
	sprintf(kv, "%s=%s", name, value);
	int i = 0;
	cJSON *e;
	cJSON_ArrayForEach(e, env)
	{
		if (cJSON_IsString(e) && !strncmp(e->valuestring, name, n) &&
		    e->valuestring[n] == '=') {
			cJSON_ReplaceItemInArray(env, i, cJSON_CreateString(kv));
			free(kv);
			return;
		}
		i++;
	}
	cJSON_AddItemToArray(env, cJSON_CreateString(kv));
	free(kv);
}

struct scope {
	const struct stage *st; /* NULL before the first FROM */
	const cJSON *global;
};

/* ENV wins over ARG, as in docker. */
static const char *scope_lookup(void *arg, const char *name)
{
	const struct scope *s = arg;
	if (s->st) {
		const char *v = env_get(cJSON_GetObjectItemCaseSensitive(s->st->cfg, "env"), name);
		if (v)
			return v;
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(s->st->args, name);
		return cJSON_IsString(a) ? a->valuestring : NULL;
	}
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(s->global, name);
	return cJSON_IsString(a) ? a->valuestring : NULL;
}

static int expand(struct build *b, const struct stage *st, const df_instr *in, const char *text,
		  char **out)
{
	struct scope s = {st, b->global_args};
	if (dockerfile_expand(text, scope_lookup, &s, out, b->err) < 0)
		return sl_wrap(b->err, "Dockerfile line %d", in->line);
	return 0;
}

/* The expanded words of IN's text (JSON form: its array, expanded one by one). */
static int expand_words(struct build *b, const struct stage *st, const df_instr *in, char ***words,
			size_t *n)
{
	if (in->json) {
		char **v = calloc(in->argc + 1, sizeof(*v));
		if (!v)
			return sl_fail(b->err, SL_EXHAUSTED, ENOMEM, "words");
		for (size_t i = 0; i < in->argc; i++)
			if (expand(b, st, in, in->argv[i], &v[i]) < 0) {
				dockerfile_words_free(v);
				return -1;
			}
		*words = v;
		*n = in->argc;
		return 0;
	}
	_cleanup_free_ char *x = NULL;
	if (expand(b, st, in, in->rest, &x) < 0)
		return -1;
	if (dockerfile_words(x, words, n, b->err) < 0)
		return sl_wrap(b->err, "Dockerfile line %d", in->line);
	return 0;
}

/* ---- the cache: <state>/images/build/{steps,blobs,tmp} ---- */

static int blob_path(struct build *b, const char *digest, char *buf, size_t len)
{
	return snprintf(buf, len, "%s/blobs/%s", b->dir, digest + 7) < (int)len ? 0 : -1;
}

/* Is layer L available to a layout: a blob of ours, or a layer of the store? */
static bool layer_present(struct build *b, const struct layer *l)
{
	char p[PATH_MAX];
	struct stat st;
	if (blob_path(b, l->digest, p, sizeof(p)) == 0 && lstat(p, &st) == 0)
		return true;
	snprintf(p, sizeof(p), "%s/images/diffs/%s", b->ctx->cfg.state_dir, l->digest + 7);
	return lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int cache_get(struct build *b, const struct stage *st, struct layer *out)
{
	char key[65], p[PATH_MAX];
	to_hex(st->key, sizeof(st->key), key);
	snprintf(p, sizeof(p), "%s/steps/%s.json", b->dir, key);
	_cleanup_free_ char *data = NULL;
	sl_err e = {0};
	if (state_read_file(p, 4096, &data, NULL, &e) < 0)
		return 1;
	_cleanup_cjson_ cJSON *o = cJSON_Parse(data);
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "digest");
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "size");
	if (!cJSON_IsString(d) || strlen(d->valuestring) != 71 || !cJSON_IsNumber(s))
		return 1;
	snprintf(out->digest, sizeof(out->digest), "%s", d->valuestring);
	out->size = (uint64_t)s->valuedouble;
	return layer_present(b, out) ? 0 : 1;
}

static int cache_put(struct build *b, const struct stage *st, const struct layer *l)
{
	char key[65], p[PATH_MAX], rec[160];
	to_hex(st->key, sizeof(st->key), key);
	snprintf(p, sizeof(p), "%s/steps/%s.json", b->dir, key);
	int n = snprintf(rec, sizeof(rec), "{\"digest\":\"%s\",\"size\":%llu}\n", l->digest,
			 (unsigned long long)l->size);
	return state_write_atomic(p, rec, (size_t)n, b->err);
}

/* TMP (a file in the cache's tmp/) moved to blobs/<its sha256>, described in *L. */
static int blob_commit(struct build *b, const char *tmp, struct layer *l)
{
	_cleanup_close_ int fd = open(tmp, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sl_sysfail(b->err, "build: open %s", tmp);
	struct sha256_ctx h;
	sha256_init(&h);
	uint8_t buf[65536];
	uint64_t total = 0;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sl_sysfail(b->err, "build: read %s", tmp);
		if (n == 0)
			break;
		sha256_update(&h, (size_t)n, buf);
		total += (uint64_t)n;
	}
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_digest(&h, sizeof(d), d);
	strcpy(l->digest, "sha256:");
	to_hex(d, sizeof(d), l->digest + 7);
	l->size = total;
	char dst[PATH_MAX];
	blob_path(b, l->digest, dst, sizeof(dst));
	if (fsync(fd) < 0 || rename(tmp, dst) < 0)
		return sl_sysfail(b->err, "build: store the layer %s", dst);
	return 0;
}

/* A layer tar of DIR (an overlay upper, or a tree made on the host) into the cache. */
static int layer_from_dir(struct build *b, const char *dir, uint32_t uid_base,
			  const char *const *skip, struct layer *l)
{
	char tmp[PATH_MAX];
	uint64_t r;
	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		return sl_sysfail(b->err, "build: random");
	snprintf(tmp, sizeof(tmp), "%s/tmp/layer-%016llx.tar", b->dir, (unsigned long long)r);
	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return sl_sysfail(b->err, "build: create %s", tmp);
	int rc = archive_write_layer(fd, dir, uid_base, skip, b->err);
	if (rc == 0)
		rc = blob_commit(b, tmp, l);
	unlink(tmp);
	return rc;
}

/* ---- images of a stage: the layout, the temporary image, the final one ---- */

static cJSON *docker_config(const struct stage *st)
{
	const cJSON *c = st->cfg;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "architecture", "amd64");
	cJSON_AddStringToObject(o, "os", "linux");
	cJSON *cc = cJSON_AddObjectToObject(o, "config");
	const char *u = cJSON_GetObjectItemCaseSensitive(c, "user")->valuestring;
	const char *w = cJSON_GetObjectItemCaseSensitive(c, "workingDir")->valuestring;
	if (*u)
		cJSON_AddStringToObject(cc, "User", u);
	if (*w)
		cJSON_AddStringToObject(cc, "WorkingDir", w);
	static const char *const pairs[][2] = {
	    {"env", "Env"}, {"entrypoint", "Entrypoint"}, {"cmd", "Cmd"}, {"labels", "Labels"}};
	for (size_t i = 0; i < 4; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, pairs[i][0]);
		if (v && !cJSON_IsNull(v) && cJSON_GetArraySize(v) > 0)
			cJSON_AddItemToObject(cc, pairs[i][1], cJSON_Duplicate(v, true));
	}
	static const char *const lines[][2] = {{"startCmd", "StartCmd"}, {"readyCmd", "ReadyCmd"}};
	for (size_t i = 0; i < 2; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, lines[i][0]);
		if (cJSON_IsString(v))
			cJSON_AddStringToObject(cc, lines[i][1], v->valuestring);
	}
	const cJSON *ports = cJSON_GetObjectItemCaseSensitive(c, "exposedPorts"), *p;
	if (cJSON_GetArraySize(ports) > 0) {
		cJSON *ep = cJSON_AddObjectToObject(cc, "ExposedPorts");
		cJSON_ArrayForEach(p, ports) cJSON_AddObjectToObject(ep, p->valuestring);
	}
	cJSON *rootfs = cJSON_AddObjectToObject(o, "rootfs");
	cJSON_AddStringToObject(rootfs, "type", "layers");
	cJSON *ids = cJSON_AddArrayToObject(rootfs, "diff_ids");
	for (size_t i = 0; i < st->nlayers; i++)
		cJSON_AddItemToArray(ids, cJSON_CreateString(st->layers[i].digest));
	return o;
}

static int write_blob(struct build *b, const char *layout, const char *text, char digest[72],
		      size_t *size)
{
	uint8_t d[SHA256_DIGEST_SIZE];
	struct sha256_ctx h;
	sha256_init(&h);
	sha256_update(&h, strlen(text), (const uint8_t *)text);
	sha256_digest(&h, sizeof(d), d);
	strcpy(digest, "sha256:");
	to_hex(d, sizeof(d), digest + 7);
	*size = strlen(text);
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/blobs/sha256/%s", layout, digest + 7);
	return state_write_atomic_nosync(p, text, *size, b->err);
}

/* An OCI layout of ST in a new directory LAYOUT: our layer blobs linked in, the store's
 * left out (image_import_build takes them from the store). */
static int write_layout(struct build *b, const struct stage *st, const char *layout)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/blobs/sha256", layout);
	if (state_mkdirs(p, 0700, b->err) < 0)
		return -1;
	_cleanup_cjson_ cJSON *man = cJSON_CreateObject();
	cJSON_AddNumberToObject(man, "schemaVersion", 2);
	cJSON_AddStringToObject(man, "mediaType", "application/vnd.oci.image.manifest.v1+json");
	cJSON *cd = cJSON_AddObjectToObject(man, "config");
	cJSON *ls = cJSON_AddArrayToObject(man, "layers");
	for (size_t i = 0; i < st->nlayers; i++) {
		const struct layer *l = &st->layers[i];
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "mediaType", "application/vnd.oci.image.layer.v1.tar");
		cJSON_AddStringToObject(d, "digest", l->digest);
		cJSON_AddNumberToObject(d, "size", (double)l->size);
		cJSON_AddItemToArray(ls, d);
		char src[PATH_MAX], dst[PATH_MAX];
		blob_path(b, l->digest, src, sizeof(src));
		snprintf(dst, sizeof(dst), "%s/blobs/sha256/%s", layout, l->digest + 7);
		if (link(src, dst) < 0 && errno != ENOENT && errno != EEXIST)
			return sl_sysfail(b->err, "build: link %s", src);
	}
	_cleanup_cjson_ cJSON *cfg = docker_config(st);
	_cleanup_free_ char *cfg_text = cJSON_PrintUnformatted(cfg);
	char dg[72], mdg[72];
	size_t sz, msz;
	if (!cfg_text || write_blob(b, layout, cfg_text, dg, &sz) < 0)
		return cfg_text ? -1 : sl_fail(b->err, SL_EXHAUSTED, ENOMEM, "build: config");
	cJSON_AddStringToObject(cd, "mediaType", "application/vnd.oci.image.config.v1+json");
	cJSON_AddStringToObject(cd, "digest", dg);
	cJSON_AddNumberToObject(cd, "size", (double)sz);
	_cleanup_free_ char *man_text = cJSON_PrintUnformatted(man);
	if (!man_text || write_blob(b, layout, man_text, mdg, &msz) < 0)
		return man_text ? -1 : sl_fail(b->err, SL_EXHAUSTED, ENOMEM, "build: manifest");
	char idx[512];
	int n = snprintf(idx, sizeof(idx),
			 "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"application/"
			 "vnd.oci.image.manifest.v1+json\",\"digest\":\"%s\",\"size\":%zu}]}",
			 mdg, msz);
	snprintf(p, sizeof(p), "%s/index.json", layout);
	if (state_write_atomic_nosync(p, idx, (size_t)n, b->err) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/oci-layout", layout);
	const char *ol = "{\"imageLayoutVersion\":\"1.0.0\"}";
	return state_write_atomic_nosync(p, ol, strlen(ol), b->err);
}

/* ST as image NAME (a temporary one, or the result). */
static int stage_commit(struct build *b, const struct stage *st, const char *name, sl_image *img)
{
	char layout[PATH_MAX];
	uint64_t r;
	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		return sl_sysfail(b->err, "build: random");
	snprintf(layout, sizeof(layout), "%s/tmp/layout-%016llx", b->dir, (unsigned long long)r);
	int rc = write_layout(b, st, layout);
	if (rc == 0)
		rc = image_import_build(b->ctx->cfg.state_dir, &b->ctx->cfg.min_free, name, layout,
					img, b->err);
	sl_err e;
	if (fs_remove_tree(layout, &e) < 0)
		sl_log(SL_LOG_WARN, "build: %s", e.msg);
	return rc;
}

/* ST's temporary image (for a step's sandbox, or a COPY --from), made once per key. */
static int stage_image(struct build *b, struct stage *st, sl_image *img)
{
	char key[65], name[64];
	to_hex(st->key, sizeof(st->key), key);
	snprintf(name, sizeof(name), "build-tmp-%.24s", key);
	if (!strcmp(st->tmp_image, name))
		return image_lookup(b->ctx->cfg.state_dir, name, img, b->err);
	if (stage_commit(b, st, name, img) < 0)
		return -1;
	snprintf(st->tmp_image, sizeof(st->tmp_image), "%s", name);
	snprintf(b->tmp[b->ntmp++], 64, "%s", name);
	return 0;
}

static void tmp_images_remove(struct build *b)
{
	for (size_t i = 0; i < b->ntmp; i++) {
		sl_err e = {0};
		if (image_remove(b->ctx->cfg.state_dir, b->tmp[i], &e) < 0 && e.kind != SL_NOTFOUND)
			sl_log(SL_LOG_WARN, "build: remove image %s: %s", b->tmp[i], e.msg);
	}
	b->ntmp = 0;
}

/* ---- steps that make a layer: in a build sandbox of the stage's image ---- */

struct sandbox_step {
	sl_sandbox sb;
	bool made;
};

static int step_sandbox(struct build *b, struct stage *st, struct sandbox_step *s)
{
	sl_image img;
	if (stage_image(b, st, &img) < 0)
		return -1;
	const char *labels[] = {"sandlot.build=1", NULL};
	sl_create_opts co = {
	    .image = img.name, .user = "root", .workdir = "/", .labels = labels, .ephemeral = true};
	co.net.enabled = b->o->network;
	if (sandbox_create(b->ctx, &co, &s->sb, b->err) < 0)
		return sl_wrap(b->err, "start the build sandbox");
	s->made = true;
	return 0;
}

/* The sandbox stopped, its writable layer taken as the step's layer, the sandbox gone. */
static int step_capture(struct build *b, struct sandbox_step *s, struct layer *l)
{
	int rc = sandbox_stop(b->ctx, s->sb.id, 0, NULL, b->err);
	if (rc == 0) {
		char upper[PATH_MAX];
		store_layer_path(&b->ctx->cfg, s->sb.id, upper, sizeof(upper));
		strncat(upper, "/upper", sizeof(upper) - strlen(upper) - 1);
		/* Written by the runtime at each start when there is a network, as docker
		 * bind-mounts them: never part of an image. */
		static const char *const net_files[] = {"etc/hosts", "etc/resolv.conf", NULL};
		rc = layer_from_dir(b, upper, s->sb.uid_base, b->o->network ? net_files : NULL, l);
	}
	return rc;
}

static void step_end(struct build *b, struct sandbox_step *s)
{
	if (!s->made)
		return;
	sl_err e = {0};
	if (sandbox_discard(b->ctx, s->sb.id, &e) < 0)
		sl_log(SL_LOG_WARN, "build: remove build sandbox %s: %s", s->sb.id, e.msg);
	sandbox_free(&s->sb);
	s->made = false;
}

/* A RUN's output, said line by line as it comes (RUN_OUTPUT_LINES at most, then a count). */
struct run_output {
	char buf[4096];
	size_t len;
	int lines;
};

static void output_line(struct build *b, struct run_output *o, const char *line)
{
	if (++o->lines <= RUN_OUTPUT_LINES)
		say(b, "  %s", line);
}

/* What FD has now (it is non-blocking); at END the unfinished line too. */
static void output_take(struct build *b, struct run_output *o, int fd, bool end)
{
	for (;;) {
		ssize_t r = read(fd, o->buf + o->len, sizeof(o->buf) - 1 - o->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		o->len += (size_t)r;
		char *p = o->buf, *nl;
		while ((nl = memchr(p, '\n', o->len - (size_t)(p - o->buf)))) {
			*nl = '\0';
			output_line(b, o, p);
			p = nl + 1;
		}
		o->len -= (size_t)(p - o->buf);
		memmove(o->buf, p, o->len);
		if (o->len == sizeof(o->buf) - 1) { /* a line longer than the buffer: cut */
			o->buf[o->len] = '\0';
			output_line(b, o, o->buf);
			o->len = 0;
		}
	}
	if (end && o->len) {
		o->buf[o->len] = '\0';
		output_line(b, o, o->buf);
		o->len = 0;
	}
	if (end && o->lines > RUN_OUTPUT_LINES)
		say(b, "  ... (%d more lines)", o->lines - RUN_OUTPUT_LINES);
}

/* Wait for P's exit, saying its output (the read end of its stdout and stderr, OUT) as
 * it comes. The step ends when the command exits, as docker's does: what a process it
 * left in the background still writes is not waited for. */
static int run_wait(struct build *b, sl_proc *p, int out, int *ws)
{
	struct run_output o = {.len = 0};
	struct pollfd pf[2] = {{.fd = out, .events = POLLIN}, {.fd = p->conn, .events = POLLIN}};
	for (;;) {
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return sl_sysfail(b->err, "build: wait for RUN");
		}
		if (pf[0].revents)
			output_take(b, &o, out, false);
		if (pf[0].revents & (POLLHUP | POLLERR))
			pf[0].fd = -1; /* every writer gone: only the exit is left */
		if (pf[1].revents) {
			int r = proc_wait(p, 0, ws, b->err);
			if (r < 0)
				return -1;
			if (r == 0)
				break;
		}
	}
	output_take(b, &o, out, true);
	return 0;
}

/* The ARGs of the stage as "K=V" for a RUN (ENV of the same name wins: not passed). */
static char **run_env(const struct stage *st)
{
	size_t n = (size_t)cJSON_GetArraySize(st->args), k = 0;
	char **v = calloc(n + 1, sizeof(*v));
	const cJSON *a;
	cJSON_ArrayForEach(a, st->args)
	{
		if (!v || !cJSON_IsString(a) ||
		    env_get(cJSON_GetObjectItemCaseSensitive(st->cfg, "env"), a->string))
			continue;
		if (asprintf(&v[k], "%s=%s", a->string, a->valuestring) > 0)
			k++;
	}
	return v;
}

static const char *cfg_str(const struct stage *st, const char *k, const char *dflt)
{
	const char *v = cJSON_GetObjectItemCaseSensitive(st->cfg, k)->valuestring;
	return *v ? v : dflt;
}

static int do_run(struct build *b, struct stage *st, const df_instr *in, struct layer *l)
{
	char **argv = NULL;
	size_t argc = 0;
	if (in->json) {
		argv = calloc(in->argc + 1, sizeof(*argv));
		for (size_t i = 0; argv && i < in->argc; i++)
			argv[i] = strdup(in->argv[i]);
		argc = in->argc;
	} else {
		size_t ns = (size_t)cJSON_GetArraySize(st->shell);
		argv = calloc(ns + 2, sizeof(*argv));
		for (size_t i = 0; argv && i < ns; i++)
			argv[i] = strdup(cJSON_GetArrayItem(st->shell, (int)i)->valuestring);
		if (argv)
			argv[ns] = strdup(in->rest);
		argc = ns + 1;
	}
	if (!argv || !argc) {
		dockerfile_words_free(argv);
		return sl_fail(b->err, SL_INVALID, 0, "Dockerfile line %d: RUN with no command",
			       in->line);
	}
	char **env = run_env(st);
	struct sandbox_step s = {0};
	int rc = step_sandbox(b, st, &s);
	_cleanup_close_ int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int pipefd[2] = {-1, -1};
	if (rc == 0 && (nul < 0 || pipe2(pipefd, O_CLOEXEC) < 0))
		rc = sl_sysfail(b->err, "build: output pipe");
	_cleanup_close_ int out = pipefd[0], out_w = pipefd[1];
	if (rc == 0 && fcntl(out, F_SETFL, O_NONBLOCK) < 0)
		rc = sl_sysfail(b->err, "build: output pipe");
	if (rc == 0) {
		const char *wd = cfg_str(st, "workingDir", "/");
		if (strcmp(wd, "/"))
			sbxfs_mkdir(b->ctx, &s.sb, wd, b->err); /* WORKDIR made it; best effort */
		sl_spawn sp = {.argv = argv,
			       .env = (const char *const *)env,
			       .user = cfg_str(st, "user", "root"),
			       .cwd = wd,
			       .fds = {nul, out_w, out_w},
			       .exit_fd = -1,
			       .timeout_ms = RUN_TIMEOUT_MS};
		sl_proc p;
		int ws = 0;
		rc = sandbox_spawn(b->ctx, &s.sb, &sp, &p, b->err);
		close(out_w); /* the command's copy is the only writer left */
		out_w = -1;
		if (rc == 0) {
			rc = run_wait(b, &p, out, &ws);
			proc_close(&p);
		}
		if (rc < 0)
			sl_wrap(b->err, "Dockerfile line %d: RUN", in->line);
		else if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
			rc = WIFEXITED(ws)
				 ? sl_fail(b->err, SL_INVALID, 0,
					   "Dockerfile line %d: RUN %.200s: exit code %d", in->line,
					   in->rest, WEXITSTATUS(ws))
				 : sl_fail(b->err, SL_INVALID, 0,
					   "Dockerfile line %d: RUN %.200s: killed by signal %d",
					   in->line, in->rest, WTERMSIG(ws));
	}
	sl_crash_point("build-run-done"); /* a build sandbox and a build-tmp image left */
	if (rc == 0)
		rc = step_capture(b, &s, l);
	step_end(b, &s);
	dockerfile_words_free(argv);
	dockerfile_words_free(env);
	return rc;
}

/* COPY/ADD/WORKDIR: files put in place through a sink (the build sandbox's files, or a
 * host tree for a stage that has no files yet). */
static int do_files(struct build *b, struct stage *st, const df_instr *in, bc_plan *plan,
		    struct layer *l)
{
	if (st->nlayers == 0) {
		/* FROM scratch: nothing to run a sandbox on; the layer is made on the host. */
		char tree[PATH_MAX];
		uint64_t r;
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			return sl_sysfail(b->err, "build: random");
		snprintf(tree, sizeof(tree), "%s/tmp/tree-%016llx", b->dir, (unsigned long long)r);
		if (mkdir(tree, 0755) < 0)
			return sl_sysfail(b->err, "build: create %s", tree);
		int rc = bc_apply_host(plan, tree, b->err);
		if (rc == 0)
			rc = layer_from_dir(b, tree, 0, NULL, l);
		sl_err e;
		fs_remove_tree(tree, &e);
		return rc < 0 ? sl_wrap(b->err, "Dockerfile line %d", in->line) : 0;
	}
	struct sandbox_step s = {0};
	int rc = step_sandbox(b, st, &s);
	if (rc == 0 && bc_apply_sandbox(plan, b->ctx, &s.sb, b->err) < 0)
		rc = sl_wrap(b->err, "Dockerfile line %d: %s", in->line,
			     dockerfile_kind_name(in->kind));
	if (rc == 0)
		rc = step_capture(b, &s, l);
	step_end(b, &s);
	return rc;
}

/* ---- instructions ---- */

static struct stage *stage_ref(struct build *b, const char *ref, size_t before)
{
	for (size_t i = 0; i < before; i++)
		if (!strcasecmp(b->stages[i].name, ref))
			return &b->stages[i];
	char *end;
	unsigned long n = strtoul(ref, &end, 10);
	if (*ref && !*end && n < before)
		return &b->stages[n];
	return NULL;
}

static int stage_from_image(struct build *b, struct stage *st, const df_instr *in, const char *ref)
{
	sl_image img;
	sl_err e = {0};
	if (image_lookup(b->ctx->cfg.state_dir, ref, &img, &e) < 0) {
		if (e.kind == SL_NOTFOUND)
			return sl_fail(b->err, SL_NOTFOUND, 0,
				       "Dockerfile line %d: FROM %s: no local image of that name "
				       "(import or pull it first: builds never fetch images)",
				       in->line, ref);
		*b->err = e;
		return sl_wrap(b->err, "Dockerfile line %d: FROM %s", in->line, ref);
	}
	key_add(st, "image", img.digest);
	_cleanup_cjson_ cJSON *cfg = NULL;
	if (image_config(b->ctx->cfg.state_dir, &img, &cfg, b->err) < 0)
		return sl_wrap(b->err, "Dockerfile line %d: FROM %s", in->line, ref);
	if (cfg) {
		const cJSON *ls = cJSON_GetObjectItemCaseSensitive(cfg, "layers"), *x;
		st->layers = calloc((size_t)cJSON_GetArraySize(ls) + 1, sizeof(*st->layers));
		if (!st->layers)
			return sl_fail(b->err, SL_EXHAUSTED, ENOMEM, "build");
		cJSON_ArrayForEach(x, ls)
		{
			struct layer *l = &st->layers[st->nlayers++];
			snprintf(l->digest, sizeof(l->digest), "%s",
				 cJSON_GetObjectItemCaseSensitive(x, "digest")->valuestring);
			l->size =
			    (uint64_t)cJSON_GetObjectItemCaseSensitive(x, "size")->valuedouble;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(cfg, "layers");
		cJSON_DeleteItemFromObjectCaseSensitive(cfg, "platform");
		cJSON_DeleteItemFromObjectCaseSensitive(cfg, "diffIds");
		cJSON_Delete(st->cfg);
		st->cfg = steal_ptr(&cfg);
		return 0;
	}
	/* A root filesystem tarball: its tree as one layer, made once per image digest. */
	cJSON_ReplaceItemInObjectCaseSensitive(st->cfg, "user", cJSON_CreateString(img.user));
	cJSON_ReplaceItemInObjectCaseSensitive(st->cfg, "workingDir",
					       cJSON_CreateString(img.workdir));
	st->layers = calloc(1, sizeof(*st->layers));
	if (!st->layers)
		return sl_fail(b->err, SL_EXHAUSTED, ENOMEM, "build");
	struct stage probe = {0};
	memcpy(probe.key, st->key, sizeof(probe.key));
	if (cache_get(b, &probe, &st->layers[0]) != 0) {
		char tree[PATH_MAX];
		if (image_layer_path(b->ctx->cfg.state_dir, img.digest, tree, sizeof(tree)) < 0)
			return sl_fail(b->err, SL_INTERNAL, errno, "build: image %s", ref);
		say(b, "  (the tarball image %s made a layer once)", img.name);
		if (layer_from_dir(b, tree, 0, NULL, &st->layers[0]) < 0 ||
		    cache_put(b, &probe, &st->layers[0]) < 0)
			return sl_wrap(b->err, "Dockerfile line %d: FROM %s", in->line, ref);
	}
	st->nlayers = 1;
	return 0;
}

static cJSON *empty_cfg(void)
{
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "user", "");
	cJSON_AddStringToObject(c, "workingDir", "");
	cJSON_AddArrayToObject(c, "env");
	cJSON_AddNullToObject(c, "entrypoint");
	cJSON_AddNullToObject(c, "cmd");
	cJSON_AddObjectToObject(c, "labels");
	cJSON_AddArrayToObject(c, "exposedPorts");
	return c;
}

static int do_from(struct build *b, const df_instr *in)
{
	if (b->nstages == MAX_STAGES)
		return sl_fail(b->err, SL_INVALID, 0, "Dockerfile line %d: over %d stages",
			       in->line, MAX_STAGES);
	char **w = NULL;
	size_t n = 0;
	if (expand_words(b, NULL, in, &w, &n) < 0)
		return -1;
	struct stage *st = &b->stages[b->nstages];
	memset(st, 0, sizeof(*st));
	st->cfg = empty_cfg();
	st->args = cJSON_CreateObject();
	st->shell = cJSON_CreateStringArray((const char *[]){"/bin/sh", "-c"}, 2);
	b->nstages++;
	int rc = 0;
	_cleanup_free_ char *plat = dockerfile_flag(in->flags, "platform");
	if (n != 1 && !(n == 3 && !strcasecmp(w[1], "AS")))
		rc = sl_fail(b->err, SL_INVALID, 0,
			     "Dockerfile line %d: FROM takes IMAGE [AS NAME]", in->line);
	else if (plat && strcmp(plat, "linux/amd64"))
		rc = sl_fail(b->err, SL_INVALID, 0,
			     "Dockerfile line %d: --platform=%s: this host builds linux/amd64 only",
			     in->line, plat);
	if (rc == 0) {
		snprintf(st->name, sizeof(st->name), "%s", n == 3 ? w[2] : "");
		key_add(st, "recipe", BUILD_RECIPE);
		struct stage *prev = stage_ref(b, w[0], b->nstages - 1);
		if (!strcmp(w[0], "scratch")) {
			key_add(st, "scratch", "");
		} else if (prev) {
			memcpy(st->key, prev->key, sizeof(st->key));
			st->layers = calloc(prev->nlayers + 1, sizeof(*st->layers));
			if (st->layers)
				memcpy(st->layers, prev->layers,
				       prev->nlayers * sizeof(*st->layers));
			st->nlayers = prev->nlayers;
			cJSON_Delete(st->cfg);
			st->cfg = cJSON_Duplicate(prev->cfg, true);
		} else {
			rc = stage_from_image(b, st, in, w[0]);
		}
	}
	dockerfile_words_free(w);
	return rc;
}

static int add_layer(struct build *b, struct stage *st, const struct layer *l)
{
	struct layer *v = realloc(st->layers, (st->nlayers + 1) * sizeof(*v));
	if (!v)
		return sl_fail(b->err, SL_EXHAUSTED, ENOMEM, "build");
	st->layers = v;
	st->layers[st->nlayers++] = *l;
	st->tmp_image[0] = '\0';
	return 0;
}

/* K=V pairs (or the old form "K V") of ENV and LABEL. */
static int key_values(struct build *b, struct stage *st, const df_instr *in,
		      void (*set)(struct stage *, const char *, const char *))
{
	char **w = NULL;
	size_t n = 0;
	if (expand_words(b, st, in, &w, &n) < 0)
		return -1;
	int rc = 0;
	if (n >= 1 && !strchr(w[0], '=')) {
		/* ENV K some words */
		size_t len = 0;
		for (size_t i = 1; i < n; i++)
			len += strlen(w[i]) + 1;
		char *v = calloc(len + 1, 1);
		for (size_t i = 1; v && i < n; i++) {
			if (i > 1)
				strcat(v, " ");
			strcat(v, w[i]);
		}
		if (n < 2 || !v)
			rc = sl_fail(b->err, SL_INVALID, 0,
				     "Dockerfile line %d: %s takes KEY=VALUE ...", in->line,
				     dockerfile_kind_name(in->kind));
		else
			set(st, w[0], v);
		free(v);
	} else {
		for (size_t i = 0; i < n && rc == 0; i++) {
			char *eq = strchr(w[i], '=');
			if (!eq || eq == w[i]) {
				rc = sl_fail(b->err, SL_INVALID, 0,
					     "Dockerfile line %d: %s: '%.60s' is not KEY=VALUE",
					     in->line, dockerfile_kind_name(in->kind), w[i]);
				break;
			}
			*eq = '\0';
			set(st, w[i], eq + 1);
		}
	}
	dockerfile_words_free(w);
	return rc;
}

static void set_env(struct stage *st, const char *k, const char *v)
{
	env_set(cJSON_GetObjectItemCaseSensitive(st->cfg, "env"), k, v);
}

static void set_label(struct stage *st, const char *k, const char *v)
{
	cJSON *l = cJSON_GetObjectItemCaseSensitive(st->cfg, "labels");
	cJSON_DeleteItemFromObjectCaseSensitive(l, k);
	cJSON_AddStringToObject(l, k, v);
}

/* ARG NAME[=default]: the --build-arg value, else the default. */
static int do_arg(struct build *b, struct stage *st, const df_instr *in)
{
	char **w = NULL;
	size_t n = 0;
	if (expand_words(b, st, in, &w, &n) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		char *eq = strchr(w[i], '=');
		if (eq)
			*eq = '\0';
		if (!*w[i]) {
			rc = sl_fail(b->err, SL_INVALID, 0, "Dockerfile line %d: ARG needs a name",
				     in->line);
			break;
		}
		const cJSON *given = cJSON_GetObjectItemCaseSensitive(b->build_args, w[i]);
		const char *v = cJSON_IsString(given) ? given->valuestring : eq ? eq + 1 : NULL;
		if (!v && !st) { /* a global ARG with no value: unset, but declared */
			continue;
		}
		if (!v) {
			/* Inside a stage, a bare ARG takes the global one's value. */
			const cJSON *g = cJSON_GetObjectItemCaseSensitive(b->global_args, w[i]);
			v = cJSON_IsString(g) ? g->valuestring : NULL;
		}
		cJSON *obj = st ? st->args : b->global_args;
		cJSON_DeleteItemFromObjectCaseSensitive(obj, w[i]);
		if (v)
			cJSON_AddStringToObject(obj, w[i], v);
		if (st)
			key_add(st, w[i], v ? v : "\x01unset");
	}
	dockerfile_words_free(w);
	return rc;
}

/* CMD/ENTRYPOINT/SHELL's argv: the JSON array, or the shell form run by SHELL. */
static cJSON *command_of(struct build *b, struct stage *st, const df_instr *in)
{
	if (in->json) {
		cJSON *a = cJSON_CreateArray();
		for (size_t i = 0; i < in->argc; i++)
			cJSON_AddItemToArray(a, cJSON_CreateString(in->argv[i]));
		return a;
	}
	cJSON *a = cJSON_Duplicate(st->shell, true);
	cJSON_AddItemToArray(a, cJSON_CreateString(in->rest));
	return a;
}

static int do_expose(struct build *b, struct stage *st, const df_instr *in)
{
	char **w = NULL;
	size_t n = 0;
	if (expand_words(b, st, in, &w, &n) < 0)
		return -1;
	cJSON *ports = cJSON_GetObjectItemCaseSensitive(st->cfg, "exposedPorts");
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		char *end;
		long p = strtol(w[i], &end, 10);
		if (p < 1 || p > 65535 ||
		    (*end && strcasecmp(end, "/tcp") && strcasecmp(end, "/udp"))) {
			rc = sl_fail(b->err, SL_INVALID, 0,
				     "Dockerfile line %d: EXPOSE %.40s: a port 1-65535, optionally "
				     "/tcp or /udp",
				     in->line, w[i]);
			break;
		}
		char name[32];
		snprintf(name, sizeof(name), "%ld/%s", p,
			 *end ? (end[1] == 'u' || end[1] == 'U') ? "udp" : "tcp" : "tcp");
		bool have = false;
		const cJSON *x;
		cJSON_ArrayForEach(x, ports) have |= !strcmp(x->valuestring, name);
		if (!have)
			cJSON_AddItemToArray(ports, cJSON_CreateString(name));
	}
	dockerfile_words_free(w);
	return rc;
}

static int do_copy(struct build *b, struct stage *st, size_t si, const df_instr *in,
		   struct layer *l, bool *cached)
{
	char **w = NULL;
	size_t n = 0;
	if (expand_words(b, st, in, &w, &n) < 0)
		return -1;
	_cleanup_free_ char *from = dockerfile_flag(in->flags, "from");
	_cleanup_free_ char *chown = dockerfile_flag(in->flags, "chown");
	_cleanup_free_ char *chmod = dockerfile_flag(in->flags, "chmod");
	char scratch[PATH_MAX];
	snprintf(scratch, sizeof(scratch), "%s/tmp", b->dir);
	bc_plan plan = {.kind = in->kind == DF_ADD ? BC_ADD : BC_COPY,
			.line = in->line,
			.workdir = cfg_str(st, "workingDir", "/"),
			.chown = chown,
			.chmod = chmod,
			.srcs = (const char *const *)w,
			.nsrcs = n ? n - 1 : 0,
			.dest = n ? w[n - 1] : "",
			.ctxfd = b->ctxfd,
			.ignore = &b->ignore,
			.scratch = scratch};
	int rc = 0;
	_cleanup_close_ int fromfd = -1;
	if (n < 2)
		rc = sl_fail(b->err, SL_INVALID, 0,
			     "Dockerfile line %d: %s needs a source and a destination", in->line,
			     dockerfile_kind_name(in->kind));
	if (rc == 0 && from) {
		struct stage *src = stage_ref(b, from, si);
		sl_image img;
		char tree[PATH_MAX];
		if (src)
			rc = stage_image(b, src, &img);
		else if (image_lookup(b->ctx->cfg.state_dir, from, &img, b->err) < 0)
			rc =
			    sl_fail(b->err, SL_NOTFOUND, 0,
				    "Dockerfile line %d: COPY --from=%s: no earlier stage or local "
				    "image of that name",
				    in->line, from);
		if (rc == 0 &&
		    image_layer_path(b->ctx->cfg.state_dir, img.digest, tree, sizeof(tree)) < 0)
			rc = sl_fail(b->err, SL_INTERNAL, errno, "build: image %s", img.name);
		if (rc == 0 && (fromfd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			rc = sl_sysfail(b->err, "build: open %s", tree);
		plan.ctxfd = fromfd;
		plan.ignore = NULL;
		if (rc == 0)
			key_add(st, "from", img.digest);
	}
	char hash[65];
	if (rc == 0 && bc_plan_hash(&plan, hash, b->err) < 0)
		rc = sl_wrap(b->err, "Dockerfile line %d", in->line);
	if (rc == 0) {
		key_add(st, "inputs", hash);
		*cached = cache_get(b, st, l) == 0;
		if (!*cached)
			rc = do_files(b, st, in, &plan, l);
	}
	dockerfile_words_free(w);
	return rc;
}

static int do_workdir(struct build *b, struct stage *st, const df_instr *in, struct layer *l,
		      bool *cached)
{
	_cleanup_free_ char *x = NULL;
	if (expand(b, st, in, in->rest, &x) < 0)
		return -1;
	char path[4096];
	const char *cur = cfg_str(st, "workingDir", "/");
	if (x[0] == '/')
		snprintf(path, sizeof(path), "%s", x);
	else
		snprintf(path, sizeof(path), "%s%s%s", cur, cur[strlen(cur) - 1] == '/' ? "" : "/",
			 x);
	cJSON_ReplaceItemInObjectCaseSensitive(st->cfg, "workingDir", cJSON_CreateString(path));
	key_add(st, "workdir", path);
	*cached = cache_get(b, st, l) == 0;
	if (*cached)
		return 0;
	bc_plan plan = {.kind = BC_MKDIR, .line = in->line, .dest = path, .ctxfd = -1};
	return do_files(b, st, in, &plan, l);
}

/* One instruction of stage SI (or before any, SI == nstages). */
static int step(struct build *b, const df_instr *in)
{
	if (in->kind == DF_FROM)
		return do_from(b, in);
	struct stage *st = b->nstages ? &b->stages[b->nstages - 1] : NULL;
	if (!st)
		return do_arg(b, NULL, in);
	key_add(st, dockerfile_kind_name(in->kind), in->flags);
	key_add(st, "text", in->rest);
	int64_t t0 = sl_now_ms();
	struct layer l = {0};
	bool cached = false, layered = false;
	int rc = 0;
	switch (in->kind) {
	case DF_RUN: {
		key_add(st, "network", b->o->network ? "1" : "0");
		_cleanup_free_ char *sh = cJSON_PrintUnformatted(st->shell);
		key_add(st, "shell", sh ? sh : "");
		layered = true;
		cached = cache_get(b, st, &l) == 0;
		if (!cached)
			rc = do_run(b, st, in, &l);
		break;
	}
	case DF_COPY:
	case DF_ADD:
		layered = true;
		rc = do_copy(b, st, b->nstages - 1, in, &l, &cached);
		break;
	case DF_WORKDIR:
		layered = true;
		rc = do_workdir(b, st, in, &l, &cached);
		break;
	case DF_ENV:
		rc = key_values(b, st, in, set_env);
		break;
	case DF_LABEL:
		rc = key_values(b, st, in, set_label);
		break;
	case DF_ARG:
		rc = do_arg(b, st, in);
		break;
	case DF_USER: {
		_cleanup_free_ char *x = NULL;
		rc = expand(b, st, in, in->rest, &x);
		if (rc == 0)
			cJSON_ReplaceItemInObjectCaseSensitive(st->cfg, "user",
							       cJSON_CreateString(x));
		break;
	}
	case DF_CMD:
		cJSON_ReplaceItemInObjectCaseSensitive(st->cfg, "cmd", command_of(b, st, in));
		st->cmd_set = true;
		break;
	case DF_ENTRYPOINT:
		cJSON_ReplaceItemInObjectCaseSensitive(st->cfg, "entrypoint",
						       command_of(b, st, in));
		if (!st->cmd_set)
			cJSON_ReplaceItemInObjectCaseSensitive(st->cfg, "cmd", cJSON_CreateNull());
		break;
	case DF_SHELL:
		cJSON_Delete(st->shell);
		st->shell = command_of(b, st, in);
		break;
	case DF_EXPOSE:
		rc = do_expose(b, st, in);
		break;
	case DF_FROM:
		break;
	}
	if (rc < 0)
		return -1;
	if (!layered) {
		say(b, "  (config only, no layer)");
		return 0;
	}
	if (!cached && cache_put(b, st, &l) < 0)
		return -1;
	if (add_layer(b, st, &l) < 0)
		return -1;
	if (cached)
		say(b, "  CACHED %.19s", l.digest);
	else
		say(b, "  done %.19s in %lld ms", l.digest, (long long)(sl_now_ms() - t0));
	return 0;
}

/* ---- the build ---- */

bool build_is_dockerfile_dir(const char *dir, const char *dockerfile_or_null)
{
	char p[PATH_MAX];
	struct stat st;
	return snprintf(p, sizeof(p), "%s/%s", dir,
			dockerfile_or_null ? dockerfile_or_null : "Dockerfile") < (int)sizeof(p) &&
	       stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int read_dockerfile(struct build *b)
{
	const char *name = b->o->dockerfile ? b->o->dockerfile : "Dockerfile";
	_cleanup_close_ int fd = bc_open_in(b->ctxfd, name, O_RDONLY, b->err);
	if (fd < 0)
		return sl_wrap(b->err, "build: the Dockerfile %s", name);
	_cleanup_free_ char *text = malloc(DF_MAX_BYTES + 1);
	if (!text)
		return sl_fail(b->err, SL_EXHAUSTED, ENOMEM, "build");
	size_t len = 0;
	for (;;) {
		ssize_t n = read(fd, text + len, DF_MAX_BYTES + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sl_sysfail(b->err, "build: read %s", name);
		if (n == 0 || (len += (size_t)n) > DF_MAX_BYTES)
			break;
	}
	return dockerfile_parse(text, len, &b->df, b->err);
}

/* ---- what a build killed midway left ---- */

/* Every build holds <state>/images/build/active.lock shared while it runs (its context
 * extracted, its build sandboxes, its build-tmp-* images, its files in tmp/). Whoever holds
 * it exclusive knows no build runs: each of those things is a dead build's. */
static bool tmp_image_name(const char *name)
{
	if (strncmp(name, "build-tmp-", 10) || strlen(name) != 10 + 24)
		return false;
	for (const char *c = name + 10; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
			return false;
	return true;
}

static bool build_sandbox(const sl_sandbox *sb)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(sb->labels, "sandlot.build");
	return sb->ephemeral && cJSON_IsString(v) && !strcmp(v->valuestring, "1");
}

/* Under the exclusive lock: count (and with REMOVE, free) what dead builds left. */
static int collect_locked(sl_ctx *ctx, const char *dir, bool remove)
{
	int n = 0;
	sl_err e = {0};
	sl_sandbox *sbs = NULL;
	size_t nsb = 0;
	if (sandbox_list_live(ctx, &sbs, &nsb, &e) == 0) {
		for (size_t i = 0; i < nsb; i++) {
			if (!build_sandbox(&sbs[i]))
				continue;
			n++;
			if (remove && sandbox_discard(ctx, sbs[i].id, &e) < 0)
				sl_log(SL_LOG_WARN, "build: discard build sandbox %s: %s",
				       sbs[i].id, e.msg);
		}
		sandbox_free_list(sbs, nsb);
	}
	_cleanup_free_ sl_image *imgs = NULL;
	size_t nimg = 0;
	if (image_list(ctx->cfg.state_dir, &imgs, &nimg, &e) == 0)
		for (size_t i = 0; i < nimg; i++) {
			if (!tmp_image_name(imgs[i].name))
				continue;
			n++;
			if (remove && image_remove(ctx->cfg.state_dir, imgs[i].name, &e) < 0 &&
			    e.kind != SL_NOTFOUND)
				sl_log(SL_LOG_WARN, "build: remove image %s: %s", imgs[i].name,
				       e.msg);
		}
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	_cleanup_closedir_ DIR *d = opendir(tmp);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		n++;
		char p[PATH_MAX];
		if (remove && snprintf(p, sizeof(p), "%s/%s", tmp, de->d_name) < (int)sizeof(p) &&
		    fs_remove_tree(p, &e) < 0)
			sl_log(SL_LOG_WARN, "build: %s", e.msg);
	}
	return n;
}

int build_collect_unfinished(sl_ctx *ctx, bool remove)
{
	char dir[PATH_MAX], p[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/images/build", ctx->cfg.state_dir);
	snprintf(p, sizeof(p), "%s/active.lock", dir);
	_cleanup_close_ int fd = open(p, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
		return 0; /* never a build here, or one runs */
	return collect_locked(ctx, dir, remove);
}

/* The build's hold on active.lock (shared); what dead builds left is freed first when no
 * build runs. The fd, closed when the build ends. */
static int build_hold(sl_ctx *ctx, sl_err *err)
{
	char dir[PATH_MAX], p[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/images/build", ctx->cfg.state_dir);
	const char *sub[] = {"steps", "blobs", "tmp"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, sub[i]);
		if (state_mkdirs(p, 0700, err) < 0)
			return -1;
	}
	snprintf(p, sizeof(p), "%s/active.lock", dir);
	int fd = open(p, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sl_sysfail(err, "build: %s", p);
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		int n = collect_locked(ctx, dir, true);
		if (n > 0)
			sl_log(SL_LOG_INFO, "build: freed %d thing(s) a killed build left", n);
	}
	while (flock(fd, LOCK_SH) < 0)
		if (errno != EINTR) {
			sl_sysfail(err, "build: lock %s", p);
			close(fd);
			return -1;
		}
	return fd;
}

static int build_args(struct build *b)
{
	b->build_args = cJSON_CreateObject();
	b->global_args = cJSON_CreateObject();
	for (size_t i = 0; b->o->build_args && b->o->build_args[i]; i++) {
		const char *kv = b->o->build_args[i], *eq = strchr(kv, '=');
		if (!eq || eq == kv)
			return sl_fail(b->err, SL_INVALID, 0, "--build-arg '%.60s': give KEY=VALUE",
				       kv);
		char k[256];
		snprintf(k, sizeof(k), "%.*s", (int)(eq - kv), kv);
		cJSON_DeleteItemFromObjectCaseSensitive(b->build_args, k);
		cJSON_AddStringToObject(b->build_args, k, eq + 1);
	}
	return 0;
}

static void start_say(void *arg, const char *line)
{
	say(arg, "  %s", line);
}

/* The image's start and ready commands (the build's, else the base's): set in ST's
 * config, and checked as a create will run them, in a build sandbox of the image. */
static int start_check(struct build *b, struct stage *st)
{
	const char *given[2] = {b->o->start_cmd, b->o->ready_cmd};
	static const char *const keys[2] = {"startCmd", "readyCmd"};
	for (int i = 0; i < 2; i++) {
		if (!given[i] || !*given[i])
			continue;
		cJSON_DeleteItemFromObjectCaseSensitive(st->cfg, keys[i]);
		cJSON_AddStringToObject(st->cfg, keys[i], given[i]);
	}
	const cJSON *start = cJSON_GetObjectItemCaseSensitive(st->cfg, "startCmd");
	const cJSON *ready = cJSON_GetObjectItemCaseSensitive(st->cfg, "readyCmd");
	if (!cJSON_IsString(start) && !cJSON_IsString(ready))
		return 0;
	say(b, "START: the start and ready commands, as each sandbox of the image runs them");
	struct sandbox_step s = {0};
	int rc = step_sandbox(b, st, &s);
	if (rc == 0) {
		sl_startcmd sc = {.start = cJSON_IsString(start) ? start->valuestring : NULL,
				  .ready = cJSON_IsString(ready) ? ready->valuestring : NULL,
				  .user = cfg_str(st, "user", "root"),
				  .cwd = cfg_str(st, "workingDir", "/"),
				  .out = start_say,
				  .out_arg = b};
		char eid[32];
		rc = startcmd_run(b->ctx, &s.sb, &sc, eid, b->err);
	}
	step_end(b, &s);
	return rc < 0 ? sl_wrap(b->err, "the image's start and ready commands") : 0;
}

static int build_run(struct build *b, sl_image *out)
{
	snprintf(b->dir, sizeof(b->dir), "%s/images/build", b->ctx->cfg.state_dir);
	if ((b->lockfd = build_hold(b->ctx, b->err)) < 0)
		return -1;
	if (image_name_check(b->o->name, b->err) < 0 || build_args(b) < 0)
		return -1;
	if (tmp_image_name(b->o->name))
		return sl_fail(b->err, SL_INVALID, 0,
			       "image name '%s' is reserved: build-tmp-<24 hex digits> names a "
			       "build's temporary images",
			       b->o->name);
	b->ctxfd = open(b->o->context, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (b->ctxfd < 0)
		return sl_fail(b->err, SL_INVALID, errno, "build: the context %s", b->o->context);
	if (read_dockerfile(b) < 0 || bc_ignore_load(&b->ignore, b->ctxfd, b->err) < 0)
		return -1;
	if (!(b->tmp = calloc(MAX_TMP_IMAGES, sizeof(*b->tmp))))
		return sl_fail(b->err, SL_EXHAUSTED, ENOMEM, "build");
	if (store_ensure(&b->ctx->cfg, b->err) < 0)
		return -1;
	b->nsteps = b->df.n;
	for (size_t i = 0; i < b->df.n; i++) {
		const df_instr *in = &b->df.v[i];
		say(b, "STEP %zu/%zu: %s%s%s %.300s", i + 1, b->nsteps,
		    dockerfile_kind_name(in->kind), in->flags[0] ? " " : "", in->flags, in->rest);
		if (b->ntmp + 4 >= MAX_TMP_IMAGES) {
			tmp_images_remove(b);
			for (size_t k = 0; k < b->nstages; k++)
				b->stages[k].tmp_image[0] = '\0';
		}
		if (step(b, in) < 0)
			return -1;
	}
	struct stage *last = &b->stages[b->nstages - 1];
	if (start_check(b, last) < 0 || stage_commit(b, last, b->o->name, out) < 0)
		return -1;
	say(b, "built %s %s", out->name, out->digest);
	return 0;
}

int build_image(sl_ctx *ctx, const sl_build_opts *o, sl_image *out, sl_err *err)
{
	struct build b = {.ctx = ctx, .o = o, .err = err, .ctxfd = -1, .lockfd = -1};
	sl_image img = {0};
	int rc = build_run(&b, &img);
	tmp_images_remove(&b);
	for (size_t i = 0; i < b.nstages; i++) {
		free(b.stages[i].layers);
		cJSON_Delete(b.stages[i].cfg);
		cJSON_Delete(b.stages[i].shell);
		cJSON_Delete(b.stages[i].args);
	}
	cJSON_Delete(b.build_args);
	cJSON_Delete(b.global_args);
	bc_ignore_free(&b.ignore);
	dockerfile_free(&b.df);
	free(b.tmp);
	if (b.ctxfd >= 0)
		close(b.ctxfd);
	if (b.lockfd >= 0)
		close(b.lockfd);
	if (rc == 0 && out)
		*out = img;
	return rc;
}

/* A fresh scratch context directory under <state>/images/build/tmp in DIR. Its caller
 * holds the build lock (build_hold) from before it is made until it is removed, or a
 * collector (build_collect_unfinished) could take it for a killed build's. */
static int scratch_dir(sl_ctx *ctx, char dir[PATH_MAX], sl_err *err)
{
	char tmp[PATH_MAX];
	uint64_t r;
	snprintf(tmp, sizeof(tmp), "%s/images/build/tmp", ctx->cfg.state_dir);
	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		return sl_sysfail(err, "build: random");
	snprintf(dir, PATH_MAX, "%s/ctx-%016llx", tmp, (unsigned long long)r);
	return 0;
}

/* build_image over the scratch context DIR, removed afterwards. */
static int build_in_scratch(sl_ctx *ctx, const sl_build_opts *o, const char *dir, sl_image *out,
			    sl_err *err)
{
	sl_build_opts o2 = *o;
	o2.context = dir;
	int rc = build_image(ctx, &o2, out, err);
	sl_err e;
	if (fs_remove_tree(dir, &e) < 0)
		sl_log(SL_LOG_WARN, "build: %s", e.msg);
	return rc;
}

int build_image_from_tar(sl_ctx *ctx, const sl_build_opts *o, int tar_fd, sl_image *out,
			 sl_err *err)
{
	char dir[PATH_MAX];
	_cleanup_close_ int hold = build_hold(ctx, err);
	if (hold < 0 || scratch_dir(ctx, dir, err) < 0)
		return -1;
	sl_archive_limits lim;
	archive_limits_default(&lim);
	lim.min_free = ctx->cfg.min_free;
	char hex[65];
	uint64_t bytes;
	if (archive_extract_counted(tar_fd, dir, &lim, hex, &bytes, err) < 0)
		return sl_wrap(err, "build: the context archive");
	return build_in_scratch(ctx, o, dir, out, err);
}

int build_image_from_text(sl_ctx *ctx, const sl_build_opts *o, const char *dockerfile,
			  sl_image *out, sl_err *err)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	_cleanup_close_ int hold = build_hold(ctx, err);
	if (hold < 0 || scratch_dir(ctx, dir, err) < 0)
		return -1;
	if (mkdir(dir, 0700) < 0)
		return sl_sysfail(err, "build: mkdir %s", dir);
	snprintf(path, sizeof(path), "%s/Dockerfile", dir);
	sl_build_opts o2 = *o;
	o2.dockerfile = NULL;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || fs_write_all(fd, dockerfile, strlen(dockerfile), -1) < 0) {
		sl_sysfail(err, "build: write %s", path);
		if (fd >= 0)
			close(fd);
		sl_err e;
		fs_remove_tree(dir, &e);
		return -1;
	}
	close(fd);
	return build_in_scratch(ctx, &o2, dir, out, err);
}
