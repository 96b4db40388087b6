/* image_pull.c — pulling an image: reference, registry and credentials chosen here,
 * blobs fetched (layers in parallel) into the content-addressed cache images/blobs, then
 * linked into an OCI layout that image_oci.c imports: a blob this pull hashed as it came
 * is not hashed again there, one found in the cache is; every layer's diff id is. */
#include "pull.h"

#include "cleanup.h"
#include "fsutil.h"
#include "image_internal.h"
#include "log.h"
#include "oci.h"
#include "registry.h"
#include "space.h"
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <nettle/base64.h>
#include <nettle/sha2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define PULL_HOST_PLATFORM   "linux/amd64"
#define PULL_WORKERS	     3 /* layers fetched at once, as docker's default */
#define PULL_AUTH_MAX	     (1 << 20)
#define PULL_BLOB_MAX	     (16ULL << 30) /* one layer: the import's own bound on files */
#define OCI_MAX_NESTING_PULL 5		   /* a top index, and 4 more levels, as image_oci.c */

/* ---- which registry, over what, with which credentials ---- */

struct pull_target {
	char base[512]; /* "https://host[:port]" */
	char host[256]; /* "host[:port]": the auth file's key */
	bool plain;
};

static int pull_target(const sl_image_ref *ref, const sl_pull_opts *o, struct pull_target *t,
		       sl_err *err)
{
	if (!strcmp(ref->domain, "docker.io") && o->mirror && o->mirror[0]) {
		const char *m = o->mirror;
		bool http = !strncmp(m, "http://", 7);
		if (!http && strncmp(m, "https://", 8))
			return sl_fail(
			    err, SL_INVALID, 0,
			    "registry mirror '%.200s' must be an http:// or https:// URL", m);
		const char *h = m + (http ? 7 : 8);
		size_t hn = strcspn(h, "/");
		snprintf(t->host, sizeof(t->host), "%.*s", (int)hn, h);
		if (!image_ref_domain_ok(t->host) && !(t->host[0] == '[' && hn > 2))
			return sl_fail(err, SL_INVALID, 0, "registry mirror '%.200s' names no host",
				       m);
		snprintf(t->base, sizeof(t->base), "%s", m);
		size_t bl = strlen(t->base);
		while (bl > 8 && t->base[bl - 1] == '/')
			t->base[--bl] = '\0';
		t->plain = http;
	} else {
		snprintf(t->host, sizeof(t->host), "%s", ref->domain);
		t->plain = image_host_local(t->host) || image_host_insecure(t->host, o->insecure);
		snprintf(t->base, sizeof(t->base), "%s://%s", t->plain ? "http" : "https",
			 !strcmp(ref->domain, "docker.io") ? "registry-1.docker.io" : t->host);
	}
	if (t->plain && !image_host_local(t->host) && !image_host_insecure(t->host, o->insecure))
		return sl_fail(
		    err, SL_INVALID, 0,
		    "registry %s: plain http is allowed only for this machine "
		    "(localhost, 127.0.0.0/8) or a registry named by --insecure-registry",
		    t->host);
	return 0;
}

/* The "user:password" docker's config.json holds for HOST: {"auths": {KEY: {"auth":
 * base64(user:password)} or {"username", "password"}}}, KEY the host or a URL of it. The
 * file holds secrets: read only when it is a regular file of ours no one else may read. */
static int pull_credentials(const char *state_dir, const sl_pull_opts *o, const char *host,
			    bool hub, char *out, size_t len, sl_err *err)
{
	out[0] = '\0';
	char def[PATH_MAX];
	bool given = o->auth_file && o->auth_file[0];
	const char *path = given ? o->auth_file : def;
	if (!given && img_path(def, sizeof(def), err, "%s/auth.json", state_dir) < 0)
		return -1;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && !given)
		return 0;
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return sl_fail(err, SL_INVALID, errno, "auth file %s", path);
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return sl_fail(err, SL_INVALID, 0,
			       "auth file %s must be a regular file of uid %u that no one else may "
			       "read (chmod 600)",
			       path, (unsigned)geteuid());
	if (st.st_size > PULL_AUTH_MAX)
		return sl_fail(err, SL_INVALID, 0, "auth file %s is over %d bytes", path,
			       PULL_AUTH_MAX);
	_cleanup_free_ char *text = calloc(1, (size_t)st.st_size + 1);
	if (!text)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "auth file %s", path);
	ssize_t got = 0;
	for (ssize_t r; got < st.st_size; got += r)
		if ((r = read(fd, text + got, (size_t)(st.st_size - got))) <= 0) {
			if (r < 0 && errno == EINTR) {
				r = 0;
				continue;
			}
			break;
		}
	_cleanup_cjson_ cJSON *doc = cJSON_ParseWithLength(text, (size_t)got);
	explicit_bzero(text, (size_t)got);
	const cJSON *auths = cJSON_GetObjectItemCaseSensitive(doc, "auths");
	if (!cJSON_IsObject(auths))
		return sl_fail(err, SL_INVALID, 0, "auth file %s: no \"auths\" object", path);
	const cJSON *e;
	cJSON_ArrayForEach(e, auths)
	{
		const char *k = e->string;
		k += !strncmp(k, "https://", 8) ? 8 : !strncmp(k, "http://", 7) ? 7 : 0;
		size_t kn = strcspn(k, "/");
		bool match = (kn == strlen(host) && !strncmp(k, host, kn)) ||
			     (hub && ((kn == 15 && !strncmp(k, "index.docker.io", 15)) ||
				      (kn == 9 && !strncmp(k, "docker.io", 9))));
		if (!match)
			continue;
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "auth");
		const cJSON *u = cJSON_GetObjectItemCaseSensitive(e, "username");
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "password");
		if (cJSON_IsString(a) && a->valuestring[0]) {
			struct base64_decode_ctx b;
			size_t n = len - 1;
			base64_decode_init(&b);
			if (strlen(a->valuestring) > BASE64_ENCODE_LENGTH(len - 1) ||
			    !base64_decode_update(&b, &n, (uint8_t *)out, strlen(a->valuestring),
						  a->valuestring) ||
			    !base64_decode_final(&b))
				return sl_fail(err, SL_INVALID, 0,
					       "auth file %s: the \"auth\" of %s is not base64",
					       path, e->string);
			out[n] = '\0';
		} else if (cJSON_IsString(u) && cJSON_IsString(p)) {
			snprintf(out, len, "%s:%s", u->valuestring, p->valuestring);
		}
		if (!strchr(out, ':'))
			return sl_fail(err, SL_INVALID, 0,
				       "auth file %s: the entry of %s has no user:password", path,
				       e->string);
		return 0;
	}
	return 0;
}

/* ---- the blob cache: images/blobs/sha256/<hex>, complete and verified ---- */

struct pull {
	const char *state_dir;
	const sl_pull_opts *o;
	sl_registry *reg;
	pthread_mutex_t lock;  /* the progress callback, the work queue, the first error */
	pthread_cond_t landed; /* a layer's blob is in the cache, or a download failed */
	sl_oci_desc *layers;
	/* Per layer: in the cache (DONE), fetched and hashed by this pull rather than found
	 * there (FRESH: the import need not hash it again). */
	bool *done, *fresh;
	size_t nlayers, next;
	bool failed;
	bool import_waited; /* the import stopped on a failed download: FIRST is the story */
	const char *layout; /* the import's OCI layout, each layer linked in as it lands */
	sl_err first;
};

static void pull_say(struct pull *p, const char *status, const char *digest, uint64_t cur,
		     uint64_t total)
{
	if (!p->o->progress || !digest)
		return;
	char layer[13] = "";
	if (digest)
		snprintf(layer, sizeof(layer), "%.12s", digest + 7);
	pthread_mutex_lock(&p->lock);
	p->o->progress(p->o->arg, status, layer, cur, total);
	pthread_mutex_unlock(&p->lock);
}

/* A line about the image as a whole ("Digest: sha256:..."), LAYER "". */
static void pull_note(struct pull *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pull_note(struct pull *p, const char *fmt, ...)
{
	if (!p->o->progress)
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&p->lock);
	p->o->progress(p->o->arg, line, "", 0, 0);
	pthread_mutex_unlock(&p->lock);
}

static int pull_blob_path(const struct pull *p, const char *digest, const char *suffix, char *buf,
			  size_t len, sl_err *err)
{
	return img_path(buf, len, err, "%s/images/blobs/sha256/%s%s", p->state_dir, digest + 7,
			suffix);
}

static int pull_sha256_fd(int fd, char hex[65], sl_err *err)
{
	struct sha256_ctx md;
	sha256_init(&md);
	_cleanup_free_ uint8_t *buf = malloc(1 << 20);
	if (!buf)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "hash");
	for (off_t off = 0;;) {
		ssize_t r = pread(fd, buf, 1 << 20, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sl_sysfail(err, "read");
		if (r == 0)
			break;
		sha256_update(&md, (size_t)r, buf);
		off += r;
	}
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_digest(&md, sizeof(d), d);
	for (unsigned i = 0; i < sizeof(d); i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	return 0;
}

static void pull_sha256_mem(const char *buf, size_t len, char digest[72])
{
	struct sha256_ctx md;
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_init(&md);
	sha256_update(&md, len, (const uint8_t *)buf);
	sha256_digest(&md, sizeof(d), d);
	strcpy(digest, "sha256:");
	for (unsigned i = 0; i < sizeof(d); i++)
		snprintf(digest + 7 + 2 * i, 3, "%02x", d[i]);
}

/* A manifest or index (already checked against its digest) kept in the cache. */
static int pull_cache_put(struct pull *p, const char *digest, const char *buf, size_t len,
			  sl_err *err)
{
	char path[PATH_MAX];
	struct stat st;
	if (pull_blob_path(p, digest, "", path, sizeof(path), err) < 0)
		return -1;
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == len)
		return 0;
	return state_write_atomic(path, buf, len, err);
}

/* The sha256 of a blob file's first AT bytes, carried forward as the file grows: the
 * bytes are hashed while they are fresh in the page cache, and the download's thread
 * does it, not a pass after it. */
struct pull_hash {
	int fd;
	struct sha256_ctx md;
	uint64_t at;
	bool broken; /* a read failed: hash the whole file at the end instead */
	uint8_t buf[256 << 10];
};

static void pull_hash_to(struct pull_hash *h, uint64_t upto)
{
	if (upto < h->at) { /* the file was rewritten from 0 (no range support) */
		sha256_init(&h->md);
		h->at = 0;
	}
	while (!h->broken && h->at < upto) {
		size_t want = upto - h->at < sizeof(h->buf) ? upto - h->at : sizeof(h->buf);
		ssize_t r = pread(h->fd, h->buf, want, (off_t)h->at);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			h->broken = true;
			break;
		}
		sha256_update(&h->md, (size_t)r, h->buf);
		h->at += (uint64_t)r;
	}
}

struct blob_progress {
	struct pull *p;
	const char *digest;
	uint64_t total;
	uint64_t said; /* the byte count last reported */
	struct pull_hash *hash;
};

static int pull_blob_progress(void *arg, uint64_t have)
{
	struct blob_progress *b = arg;
	pull_hash_to(b->hash, have);
	/* A report per 1% or 512 KiB, whichever is more: lines, not a flood. */
	uint64_t step = b->total / 100 > (512 << 10) ? b->total / 100 : (512 << 10);
	if (have == b->total || have >= b->said + step) {
		b->said = have;
		pull_say(b->p, "Downloading", b->digest, have, b->total);
	}
	pthread_mutex_lock(&b->p->lock);
	bool stop = b->p->failed && have < b->total; /* a blob all there is kept whole */
	pthread_mutex_unlock(&b->p->lock);
	return stop;
}

/* Blob D in the cache: there already (its size checked; its digest was at entry, and the
 * import checks it again), or fetched into <hex>.partial (resumed from what a cut pull
 * left), verified, then renamed into place. Two pulls of one blob: the second waits on
 * the first's lock and finds it done. WHAT names it in errors ("layer 2 of 5"). */
static int pull_blob(struct pull *p, const sl_oci_desc *d, const char *what, bool *fresh,
		     sl_err *err)
{
	const char *shown = strcmp(what, "config") ? d->digest : NULL; /* docker shows layers */
	char final[PATH_MAX], part[PATH_MAX];
	struct stat st;
	if (pull_blob_path(p, d->digest, "", final, sizeof(final), err) < 0 ||
	    pull_blob_path(p, d->digest, ".partial", part, sizeof(part), err) < 0)
		return -1;
	if (d->size < 0 || (uint64_t)d->size > PULL_BLOB_MAX)
		return sl_fail(err, SL_INVALID, 0, "%s (%.19s): size %lld is out of range", what,
			       d->digest, (long long)d->size);
	if (lstat(final, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == d->size) {
		pull_say(p, "Already exists", shown, 0, 0);
		return 0;
	}
	_cleanup_close_ int fd = open(part, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sl_sysfail(err, "%s: create %s", what, part);
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return sl_sysfail(err, "%s: lock %s", what, part);
	struct stat ps, fs;
	if (lstat(final, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == d->size) {
		/* Another pull finished it while we waited: drop the file we may have made. */
		if (fstat(fd, &fs) == 0 && lstat(part, &ps) == 0 && fs.st_ino == ps.st_ino)
			unlink(part);
		pull_say(p, "Already exists", shown, 0, 0);
		return 0;
	}
	if (fstat(fd, &fs) < 0)
		return sl_sysfail(err, "%s: stat %s", what, part);
	uint64_t have = (uint64_t)fs.st_size;
	if (have > (uint64_t)d->size) {
		if (ftruncate(fd, 0) < 0)
			return sl_sysfail(err, "%s: truncate %s", what, part);
		have = 0;
	}
	pull_say(p, have ? "Resuming" : "Pulling fs layer", shown, have, (uint64_t)d->size);
	_cleanup_free_ struct pull_hash *hash = malloc(sizeof(*hash));
	if (!hash)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "%s: hash", what);
	hash->fd = fd;
	hash->at = 0;
	hash->broken = false;
	sha256_init(&hash->md);
	pull_hash_to(hash, have); /* what a cut pull left */
	if (have < (uint64_t)d->size) {
		struct blob_progress bp = {p, shown, (uint64_t)d->size, have, hash};
		if (registry_blob(p->reg, d->digest, fd, have, (uint64_t)d->size,
				  pull_blob_progress, &bp, &have, err) < 0) {
			/* A cut connection keeps what came; an answer too long is no blob. */
			if (err->kind == SL_INVALID || have == 0)
				unlink(part);
			return sl_wrap(err, "%s (%.19s)", what, d->digest);
		}
	}
	pull_say(p, "Verifying Checksum", shown, have, (uint64_t)d->size);
	if (have != (uint64_t)d->size) {
		unlink(part);
		return sl_fail(err, SL_INVALID, 0,
			       "%s (%.19s): the registry sent %llu bytes of %lld (truncated?)",
			       what, d->digest, (unsigned long long)have, (long long)d->size);
	}
	char hex[65];
	pull_hash_to(hash, have);
	if (hash->broken) {
		if (pull_sha256_fd(fd, hex, err) < 0)
			return sl_wrap(err, "%s: %s", what, part);
	} else {
		uint8_t dg[SHA256_DIGEST_SIZE];
		sha256_digest(&hash->md, sizeof(dg), dg);
		for (unsigned i = 0; i < sizeof(dg); i++)
			snprintf(hex + 2 * i, 3, "%02x", dg[i]);
	}
	if (strcmp(hex, d->digest + 7)) {
		unlink(part);
		return sl_fail(err, SL_INVALID, 0,
			       "%s: digest mismatch: the manifest names %s, the registry sent "
			       "sha256:%s",
			       what, d->digest, hex);
	}
	/* No fsync: a blob cut short by a crash is found by a later pull's import, which
	 * hashes what it finds in the cache, and dropped then (pull_drop_bad); the image's
	 * tree is synced before use. */
	if (rename(part, final) < 0)
		return sl_sysfail(err, "%s: store %s", what, final);
	if (fresh)
		*fresh = true;
	pull_say(p, "Download complete", shown, have, (uint64_t)d->size);
	return 0;
}

static void *pull_worker(void *arg)
{
	struct pull *p = arg;
	for (;;) {
		pthread_mutex_lock(&p->lock);
		size_t i = p->next++;
		bool stop = p->failed || i >= p->nlayers;
		pthread_mutex_unlock(&p->lock);
		if (stop)
			return NULL;
		char what[64];
		snprintf(what, sizeof(what), "layer %zu of %zu", i + 1, p->nlayers);
		sl_err e = {0};
		bool fresh = false;
		int r = pull_blob(p, &p->layers[i], what, &fresh, &e);
		pthread_mutex_lock(&p->lock);
		if (r < 0) {
			/* The first failure is the story; later ones are its echo ("stopped"). */
			if (!p->failed)
				p->first = e;
			p->failed = true;
		} else {
			p->fresh[i] = fresh;
			p->done[i] = true;
		}
		pthread_cond_broadcast(&p->landed);
		pthread_mutex_unlock(&p->lock);
		if (r < 0)
			return NULL;
	}
}

static int pull_link(struct pull *p, const char *layout, const char *digest, sl_err *err);

/* img_blob_wait's: the import waits for a layer's blob, then finds it in its layout. */
static int pull_wait_blob(void *arg, const char *digest, bool *verified, sl_err *err)
{
	struct pull *p = arg;
	size_t i = 0;
	while (i < p->nlayers && strcmp(p->layers[i].digest, digest))
		i++;
	if (i == p->nlayers)
		return sl_fail(err, SL_INTERNAL, 0, "image pull: layer %.19s is not the manifest's",
			       digest);
	pthread_mutex_lock(&p->lock);
	while (!p->done[i] && !p->failed)
		pthread_cond_wait(&p->landed, &p->lock);
	bool ok = p->done[i];
	*verified = p->fresh[i];
	if (!ok) {
		*err = p->first;
		p->import_waited = true;
	}
	pthread_mutex_unlock(&p->lock);
	if (!ok)
		return -1;
	return pull_link(p, p->layout, digest, err);
}

/* The layers' downloads started in T (how many threads in *STARTED); with none, done
 * here before returning. */
static void pull_layers_start(struct pull *p, pthread_t t[PULL_WORKERS], size_t *started)
{
	size_t n = p->nlayers < PULL_WORKERS ? p->nlayers : PULL_WORKERS;
	for (size_t i = 0; i < p->nlayers; i++)
		pull_say(p, "Waiting", p->layers[i].digest, 0, (uint64_t)p->layers[i].size);
	for (*started = 0; *started < n; (*started)++)
		if (pthread_create(&t[*started], NULL, pull_worker, p))
			break;
	if (!*started)
		pull_worker(p);
}

/* STOP: the import failed; the downloads still going give up (what came is kept). */
static void pull_layers_join(struct pull *p, pthread_t t[PULL_WORKERS], size_t started, bool stop)
{
	if (stop) {
		pthread_mutex_lock(&p->lock);
		p->failed = true;
		pthread_mutex_unlock(&p->lock);
	}
	for (size_t i = 0; i < started; i++)
		pthread_join(t[i], NULL);
}

/* ---- manifests ---- */

/* REF's manifest (following indexes to linux/amd64), fetched and cached; each blob it
 * passes through is in DIGESTS (the first is the top one, the last the manifest). */
struct pull_manifests {
	char digests[OCI_MAX_NESTING_PULL][72];
	char top_type[128];
	int64_t top_size;
	size_t n;
	char *manifest;
	size_t len;
};

static int pull_manifests(struct pull *p, const sl_image_ref *ref, struct pull_manifests *m,
			  sl_err *err)
{
	char want[72] = "", mt[128], ask[160];
	snprintf(ask, sizeof(ask), "%s", ref->digest[0] ? ref->digest : ref->tag);
	if (ref->digest[0])
		snprintf(want, sizeof(want), "%s", ref->digest);
	for (m->n = 0;; m->n++) {
		if (m->n >= OCI_MAX_NESTING_PULL)
			return sl_fail(err, SL_INVALID, 0, "image indexes nest deeper than %d",
				       OCI_MAX_NESTING_PULL - 1);
		char *body;
		size_t len;
		if (registry_manifest(p->reg, ask, OCI_JSON_MAX, &body, &len, mt, sizeof(mt), err) <
		    0)
			return -1;
		char got[72];
		pull_sha256_mem(body, len, got);
		if (want[0] && strcmp(want, got)) {
			free(body);
			return sl_fail(err, SL_INVALID, 0,
				       "manifest %s: digest mismatch: the registry sent %s", want,
				       got);
		}
		/* The body's own mediaType wins over a registry's Content-Type. */
		cJSON *o = cJSON_ParseWithLength(body, len);
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "mediaType");
		if (cJSON_IsString(t))
			snprintf(mt, sizeof(mt), "%s", t->valuestring);
		cJSON_Delete(o);
		if (m->n == 0) {
			snprintf(m->top_type, sizeof(m->top_type), "%s", mt);
			m->top_size = (int64_t)len;
		}
		snprintf(m->digests[m->n], sizeof(m->digests[0]), "%s", got);
		if (pull_cache_put(p, got, body, len, err) < 0) {
			free(body);
			return -1;
		}
		if (!oci_is_index(mt)) {
			m->manifest = body;
			m->len = len;
			m->n++;
			return 0;
		}
		sl_oci_desc d;
		int r = oci_index_pick(body, len, PULL_HOST_PLATFORM, &d, NULL, 0, err);
		free(body);
		if (r < 0)
			return sl_wrap(err, "image index %.19s", got);
		snprintf(want, sizeof(want), "%s", d.digest);
		snprintf(ask, sizeof(ask), "%s", d.digest);
	}
}

/* ---- the layout the import reads ---- */

static int pull_link(struct pull *p, const char *layout, const char *digest, sl_err *err)
{
	char src[PATH_MAX], dst[PATH_MAX];
	if (pull_blob_path(p, digest, "", src, sizeof(src), err) < 0 ||
	    img_path(dst, sizeof(dst), err, "%s/blobs/sha256/%s", layout, digest + 7) < 0)
		return -1;
	if (link(src, dst) < 0 && errno != EEXIST)
		return sl_sysfail(err, "link %s into %s", src, layout);
	return 0;
}

/* The layout with its index, manifests and config; the layers are linked in as they land
 * (pull_wait_blob). */
static int pull_layout(struct pull *p, const char *layout, const struct pull_manifests *m,
		       const sl_oci_desc *cfg, sl_err *err)
{
	char dir[PATH_MAX];
	if (mkdir(layout, 0700) < 0 || img_path(dir, sizeof(dir), err, "%s/blobs", layout) < 0 ||
	    mkdir(dir, 0700) < 0 ||
	    img_path(dir, sizeof(dir), err, "%s/blobs/sha256", layout) < 0 || mkdir(dir, 0700) < 0)
		return sl_sysfail(err, "create %s", layout);
	for (size_t i = 0; i < m->n; i++)
		if (pull_link(p, layout, m->digests[i], err) < 0)
			return -1;
	if (pull_link(p, layout, cfg->digest, err) < 0)
		return -1;
	char path[PATH_MAX], idx[512];
	static const char oci_layout[] = "{\"imageLayoutVersion\":\"1.0.0\"}";
	snprintf(idx, sizeof(idx),
		 "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"%s\",\"digest\":\"%s\","
		 "\"size\":%lld}]}",
		 m->top_type, m->digests[0], (long long)m->top_size);
	if (img_path(path, sizeof(path), err, "%s/oci-layout", layout) < 0 ||
	    state_write_atomic(path, oci_layout, strlen(oci_layout), err) < 0 ||
	    img_path(path, sizeof(path), err, "%s/index.json", layout) < 0 ||
	    state_write_atomic(path, idx, strlen(idx), err) < 0)
		return -1;
	return 0;
}

/* After a failed import: a cached blob that does not hash to its name is dropped, so the
 * next pull fetches it again rather than failing on it forever. */
static void pull_drop_bad(struct pull *p, const sl_oci_desc *cfg)
{
	for (size_t i = 0; i <= p->nlayers; i++) {
		const char *d = i < p->nlayers ? p->layers[i].digest : cfg->digest;
		char path[PATH_MAX], hex[65];
		sl_err e;
		if (pull_blob_path(p, d, "", path, sizeof(path), &e) < 0)
			continue;
		_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && pull_sha256_fd(fd, hex, &e) == 0 && strcmp(hex, d + 7)) {
			sl_log(SL_LOG_WARN, "image pull: cached blob %s is corrupt; removed", d);
			unlink(path);
		}
	}
}

static int pull_run(struct pull *p, const sl_image_ref *ref, const char *name, sl_image *out,
		    sl_err *err)
{
	struct pull_manifests m = {0};
	_cleanup_free_ sl_oci_desc *layers = NULL;
	sl_oci_desc cfg;
	size_t n;
	int r = pull_manifests(p, ref, &m, err);
	if (r == 0)
		r = oci_manifest_parse(m.manifest, m.len, &cfg, &layers, &n, err);
	free(m.manifest);
	if (r < 0)
		return -1;
	pull_note(p, "Digest: %s", m.digests[0]);
	sl_image have;
	sl_err e;
	char meta[PATH_MAX];
	if (img_load(p->state_dir, name, &have, &e) == 0 && !strcmp(have.digest, cfg.digest) &&
	    img_meta_path(p->state_dir, cfg.digest, meta, sizeof(meta), &e) == 0 &&
	    access(meta, F_OK) == 0 && img_mine(have.owner)) {
		pull_note(p, "Status: Image is up to date for %s", name);
		*out = have;
		return 0;
	}
	_cleanup_free_ bool *done = calloc(n ? n : 1, sizeof(*done));
	_cleanup_free_ bool *fresh = calloc(n ? n : 1, sizeof(*fresh));
	if (!done || !fresh)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "image layers");
	p->layers = layers;
	p->nlayers = n;
	p->done = done;
	p->fresh = fresh;
	if (pull_blob(p, &cfg, "config", NULL, err) < 0)
		return -1;
	_cleanup_scratch_ struct img_scratch work = {.fd = -1};
	if (img_scratch_claim(p->state_dir, "pull-", &work, err) < 0 ||
	    pull_layout(p, work.path, &m, &cfg, err) < 0) {
		if (work.fd >= 0 && fs_remove_tree(work.path, &e) < 0 && errno != ENOENT)
			sl_log(SL_LOG_ERROR, "image store: %s", e.msg);
		return -1;
	}
	p->layout = work.path;
	/* The layers download while the import extracts each one that has landed. */
	pthread_t t[PULL_WORKERS];
	size_t started;
	pull_layers_start(p, t, &started);
	pull_note(p, "Importing the layers into the image store");
	img_blob_wait wait = {pull_wait_blob, p};
	r = img_import_layout(p->state_dir, p->o->floor, name, work.path, "registry", &wait, out,
			      err);
	pull_layers_join(p, t, started, r < 0);
	if (r < 0 && p->import_waited)
		*err = p->first; /* a download's error, as it said it */
	if (fs_remove_tree(work.path, &e) < 0 && errno != ENOENT)
		sl_log(SL_LOG_ERROR, "image store: %s", e.msg);
	if (r < 0 && p->import_waited)
		return -1;
	if (r < 0)
		pull_drop_bad(p, &cfg);
	else
		pull_note(p, "Status: Downloaded newer image for %s", name);
	return r;
}

sl_pull_opts image_pull_opts(const sl_config *cfg, image_pull_progress_fn progress, void *arg)
{
	return (sl_pull_opts){.auth_file = cfg->registry_auth,
			      .mirror = cfg->registry_mirror,
			      .insecure = cfg->insecure_registries,
			      .floor = &cfg->min_free,
			      .progress = progress,
			      .arg = arg};
}

int image_pull(const char *state_dir, const char *refstr, const sl_pull_opts *o, sl_image *out,
	       sl_err *err)
{
	sl_image_ref ref;
	struct pull_target t;
	char basic[512];
	if (image_ref_parse(refstr, &ref, err) < 0)
		return -1;
	const char *name = o->name && o->name[0] ? o->name : ref.name;
	if (!name[0])
		return sl_fail(
		    err, SL_INVALID, 0,
		    "image reference '%.80s' does not make an image name (too long, or it reads "
		    "as a digest); give one with --name",
		    refstr);
	if (image_name_check(name, err) < 0 || pull_target(&ref, o, &t, err) < 0 ||
	    /* Docker Hub's credentials go to the hub only, never to a mirror. */
	    pull_credentials(state_dir, o, t.host,
			     !strcmp(ref.domain, "docker.io") && !(o->mirror && o->mirror[0]),
			     basic, sizeof(basic), err) < 0)
		return sl_wrap(err, "pull %s", refstr);
	if (img_prepare(state_dir, err) < 0)
		return -1;
	image_scratch_collect(state_dir, true);
	char what[PATH_MAX];
	snprintf(what, sizeof(what), "the state filesystem (%s)", state_dir);
	if (space_check(state_dir, o->floor, what, err) < 0)
		return sl_wrap(err, "pull %s", refstr);
	sl_registry_opts ro = {.base = t.base,
			       .repo = ref.repo,
			       .basic = basic[0] ? basic : NULL,
			       .plain_ok = t.plain};
	struct pull p = {.state_dir = state_dir, .o = o};
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.landed, NULL);
	p.reg = registry_open(&ro, err);
	explicit_bzero(basic, sizeof(basic));
	int r = -1;
	if (p.reg) {
		pull_note(&p, "%s: Pulling from %s", ref.digest[0] ? ref.digest : ref.tag,
			  ref.repo);
		r = pull_run(&p, &ref, name, out, err);
	}
	registry_close(p.reg);
	pthread_cond_destroy(&p.landed);
	pthread_mutex_destroy(&p.lock);
	if (r < 0)
		return sl_wrap(err, "pull %s", refstr);
	return 0;
}
