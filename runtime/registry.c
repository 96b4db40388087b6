/* registry.c — the OCI distribution API's two GETs with libcurl, and the token dance of
 * a 401 (docker's "token authentication specification"). Built into sandlot-registry.so. */
#include "registry.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REG_TOKEN_MAX (64 << 10)

struct sl_registry {
	char base[512];
	char repo[256];
	char basic[512];
	bool plain_ok;
	pthread_mutex_t lock; /* guards auth: layers download on several threads */
	char *auth;	      /* "Authorization: ..." once a challenge was answered */
};

static pthread_once_t reg_once = PTHREAD_ONCE_INIT;
static void reg_global_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

sl_registry *registry_open(const sl_registry_opts *o, sl_err *err)
{
	pthread_once(&reg_once, reg_global_init);
	sl_registry *r = calloc(1, sizeof(*r));
	if (!r) {
		sl_fail(err, SL_EXHAUSTED, ENOMEM, "registry %s", o->base);
		return NULL;
	}
	snprintf(r->base, sizeof(r->base), "%s", o->base);
	snprintf(r->repo, sizeof(r->repo), "%s", o->repo);
	snprintf(r->basic, sizeof(r->basic), "%s", o->basic ? o->basic : "");
	r->plain_ok = o->plain_ok;
	pthread_mutex_init(&r->lock, NULL);
	return r;
}

void registry_close(sl_registry *r)
{
	if (!r)
		return;
	free(r->auth);
	explicit_bzero(r->basic, sizeof(r->basic));
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* One exchange: where the body goes, and the challenge of a 401. */
struct reg_call {
	CURL *c;
	/* to memory */
	char *buf;
	size_t len, max;
	/* or to a file */
	int fd;
	uint64_t from, at, max_file;
	bool restarted; /* asked for a range, got the whole blob: rewritten from 0 */
	registry_progress_fn cb;
	void *arg;
	bool too_big, cb_stop, write_err;
	int write_errno;
	char challenge[1024];
	char content_type[128];
};

static long reg_status(CURL *c)
{
	long code = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	return code;
}

static size_t reg_header(char *data, size_t size, size_t n, void *p)
{
	struct reg_call *k = p;
	size_t len = size * n;
	char line[1024];
	snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) - 1 ? len : sizeof(line) - 1),
		 data);
	line[strcspn(line, "\r\n")] = '\0';
	if (!strncasecmp(line, "WWW-Authenticate:", 17))
		snprintf(k->challenge, sizeof(k->challenge), "%s",
			 line + 17 + strspn(line + 17, " "));
	else if (!strncasecmp(line, "Content-Type:", 13)) {
		const char *v = line + 13 + strspn(line + 13, " ");
		snprintf(k->content_type, sizeof(k->content_type), "%.*s", (int)strcspn(v, "; "),
			 v);
	}
	return len;
}

static size_t reg_write(char *data, size_t size, size_t n, void *p)
{
	struct reg_call *k = p;
	size_t len = size * n;
	long code = reg_status(k->c);
	if (code != 200 && code != 206)
		return len; /* an error page: not the content */
	if (k->fd < 0) {
		if (k->len + len > k->max) {
			k->too_big = true;
			return 0;
		}
		char *nb = realloc(k->buf, k->len + len + 1);
		if (!nb) {
			k->write_err = true, k->write_errno = ENOMEM;
			return 0;
		}
		k->buf = nb;
		memcpy(k->buf + k->len, data, len);
		k->len += len;
		k->buf[k->len] = '\0';
		return len;
	}
	if (code == 200 && k->from > 0 && !k->restarted) {
		/* No range support: the whole blob comes, over what we had. */
		if (ftruncate(k->fd, 0) < 0) {
			k->write_err = true, k->write_errno = errno;
			return 0;
		}
		k->at = 0;
		k->restarted = true;
	}
	if (k->at + len > k->max_file) {
		k->too_big = true;
		return 0;
	}
	for (size_t off = 0; off < len;) {
		ssize_t w = pwrite(k->fd, data + off, len - off, (off_t)(k->at + off));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			k->write_err = true, k->write_errno = w < 0 ? errno : EIO;
			return 0;
		}
		off += (size_t)w;
	}
	k->at += len;
	if (k->cb && k->cb(k->arg, k->at)) {
		k->cb_stop = true;
		return 0;
	}
	return len;
}

/* key="value" out of a challenge's parameters. */
static void reg_param(const char *ch, const char *key, char *out, size_t len)
{
	out[0] = '\0';
	size_t kl = strlen(key);
	for (const char *p = ch; (p = strcasestr(p, key)); p += kl) {
		bool start = p == ch || p[-1] == ' ' || p[-1] == ',';
		if (!start || p[kl] != '=')
			continue;
		const char *v = p + kl + 1;
		if (*v == '"') {
			v++;
			snprintf(out, len, "%.*s", (int)strcspn(v, "\""), v);
		} else {
			snprintf(out, len, "%.*s", (int)strcspn(v, ", "), v);
		}
		return;
	}
}

static void reg_common(struct reg_call *k, CURL *c, bool plain_ok)
{
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, reg_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, k);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, reg_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, k);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, plain_ok ? "http,https" : "https");
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
	/* A registry that stops sending for a minute is gone. */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "sandlot");
}

/* The token a Bearer challenge's realm hands out for its scope (with our basic
 * credentials, if any), as an Authorization header in *OUT. */
static int reg_token(sl_registry *r, const char *ch, char **out, sl_err *err)
{
	char realm[512], service[256], scope[512];
	reg_param(ch, "realm", realm, sizeof(realm));
	reg_param(ch, "service", service, sizeof(service));
	reg_param(ch, "scope", scope, sizeof(scope));
	if (!realm[0])
		return sl_fail(err, SL_INVALID, 0,
			       "registry %s: a Bearer challenge without a realm", r->base);
	if (strncmp(realm, "https://", 8) && !(r->plain_ok && !strncmp(realm, "http://", 7)))
		return sl_fail(err, SL_UNAUTH, 0,
			       "registry %s: its token realm %.200s is not https (allowed only for "
			       "a local or --insecure-registry registry)",
			       r->base, realm);
	if (!scope[0])
		snprintf(scope, sizeof(scope), "repository:%s:pull", r->repo);
	CURL *c = curl_easy_init();
	if (!c)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "registry %s: token", r->base);
	char *es = curl_easy_escape(c, service, 0), *esc = curl_easy_escape(c, scope, 0);
	char url[2048];
	snprintf(url, sizeof(url), "%s%sservice=%s&scope=%s", realm, strchr(realm, '?') ? "&" : "?",
		 es ? es : "", esc ? esc : "");
	curl_free(es);
	curl_free(esc);
	struct reg_call k = {.c = c, .fd = -1, .max = REG_TOKEN_MAX};
	reg_common(&k, c, r->plain_ok);
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (r->basic[0])
		curl_easy_setopt(c, CURLOPT_USERPWD, r->basic);
	CURLcode rc = curl_easy_perform(c);
	long code = reg_status(c);
	curl_easy_cleanup(c);
	int ret = 0;
	if (rc != CURLE_OK)
		ret = sl_fail(err, SL_UPSTREAM, 0, "registry %s: token from %.200s: %s", r->base,
			      realm, curl_easy_strerror(rc));
	else if (code == 401 || code == 403)
		ret = sl_fail(
		    err, SL_UNAUTH, 0, "registry %s: the token service refused %s (HTTP %ld)%s",
		    r->base, r->basic[0] ? "our credentials" : "an anonymous pull", code,
		    r->basic[0] ? "" : "; give credentials in the auth file (--auth-file)");
	else if (code != 200)
		ret = sl_fail(err, SL_UPSTREAM, 0, "registry %s: token from %.200s: HTTP %ld",
			      r->base, realm, code);
	cJSON *o = ret ? NULL : cJSON_ParseWithLength(k.buf ? k.buf : "", k.len);
	free(k.buf);
	if (ret)
		return ret;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "token");
	if (!cJSON_IsString(t))
		t = cJSON_GetObjectItemCaseSensitive(o, "access_token");
	if (!cJSON_IsString(t) || !t->valuestring[0] || strpbrk(t->valuestring, "\r\n")) {
		cJSON_Delete(o);
		return sl_fail(err, SL_INVALID, 0,
			       "registry %s: the token service's answer has no token", r->base);
	}
	if (asprintf(out, "Authorization: Bearer %s", t->valuestring) < 0)
		*out = NULL;
	cJSON_Delete(o);
	return *out ? 0 : sl_fail(err, SL_EXHAUSTED, ENOMEM, "registry token");
}

/* Answer a 401's challenge: r->auth set for the retry. */
static int reg_answer(sl_registry *r, const char *ch, const char *used, sl_err *err)
{
	char *auth = NULL;
	pthread_mutex_lock(&r->lock);
	bool renewed = r->auth && (!used || strcmp(r->auth, used));
	pthread_mutex_unlock(&r->lock);
	if (renewed)
		return 0; /* another thread answered meanwhile */
	if (!strncasecmp(ch, "Bearer", 6)) {
		if (reg_token(r, ch + 6, &auth, err) < 0)
			return -1;
	} else if (!strncasecmp(ch, "Basic", 5)) {
		if (!r->basic[0])
			return sl_fail(err, SL_UNAUTH, 0,
				       "registry %s: authentication required; give credentials in "
				       "the auth file (--auth-file)",
				       r->base);
		if (used)
			return sl_fail(err, SL_UNAUTH, 0,
				       "registry %s: the credentials of the auth file were refused",
				       r->base);
		auth = strdup("basic"); /* curl's USERPWD does it: a marker */
	} else {
		return sl_fail(err, SL_UNAUTH, 0,
			       "registry %s: authentication required (challenge '%.60s')", r->base,
			       ch[0] ? ch : "none");
	}
	if (!auth)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "registry auth");
	pthread_mutex_lock(&r->lock);
	free(r->auth);
	r->auth = auth;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

/* GET PATH (under /v2/<repo>/) into K, answering one challenge; the HTTP status. */
static long reg_get(sl_registry *r, const char *path, const char *accept, const char *range,
		    struct reg_call *k, const char *what, sl_err *err)
{
	char url[1024];
	snprintf(url, sizeof(url), "%s/v2/%s/%s", r->base, r->repo, path);
	for (int attempt = 0;; attempt++) {
		CURL *c = curl_easy_init();
		if (!c)
			return sl_fail(err, SL_EXHAUSTED, ENOMEM, "%s", what);
		k->c = c;
		k->challenge[0] = k->content_type[0] = '\0';
		reg_common(k, c, r->plain_ok);
		curl_easy_setopt(c, CURLOPT_URL, url);
		struct curl_slist *h = NULL;
		if (accept)
			h = curl_slist_append(h, accept);
		if (range)
			curl_easy_setopt(c, CURLOPT_RANGE, range);
		char *used = NULL;
		pthread_mutex_lock(&r->lock);
		if (r->auth) {
			used = strdup(r->auth);
			if (used && !strcmp(used, "basic")) {
				curl_easy_setopt(c, CURLOPT_USERPWD, r->basic);
				curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
			} else if (used) {
				h = curl_slist_append(h, used);
			}
		}
		pthread_mutex_unlock(&r->lock);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
		CURLcode rc = curl_easy_perform(c);
		long code = reg_status(c);
		curl_easy_cleanup(c);
		curl_slist_free_all(h);
		if (rc != CURLE_OK) {
			free(used);
			if (k->too_big)
				return sl_fail(
				    err, SL_INVALID, 0, "%s: larger than %llu bytes", what,
				    (unsigned long long)(k->fd < 0 ? k->max : k->max_file));
			if (k->write_err)
				return sl_fail(err, SL_INTERNAL, k->write_errno, "%s: write", what);
			if (k->cb_stop)
				return sl_fail(err, SL_INTERNAL, 0, "%s: stopped", what);
			return sl_fail(err, SL_UPSTREAM, 0, "%s: %s", what, curl_easy_strerror(rc));
		}
		if (code == 401 && attempt == 0) {
			int a = reg_answer(r, k->challenge, used, err);
			free(used);
			if (a < 0)
				return sl_wrap(err, "%s", what);
			continue;
		}
		free(used);
		if (code == 401 || code == 403)
			return sl_fail(err, SL_UNAUTH, 0,
				       "%s: the registry refused access (HTTP %ld)", what, code);
		if (code == 404)
			return sl_fail(err, SL_NOTFOUND, 0,
				       "%s: not found in the registry (HTTP 404)", what);
		if (code == 416 && range)
			return code; /* the caller holds the whole blob already */
		if (code != 200 && code != 206)
			return sl_fail(err, code >= 500 ? SL_UPSTREAM : SL_INVALID, 0,
				       "%s: the registry answered HTTP %ld", what, code);
		return code;
	}
}

int registry_manifest(sl_registry *r, const char *ref, size_t max, char **body, size_t *len,
		      char *media_type, size_t mt_len, sl_err *err)
{
	static const char accept[] = "Accept: application/vnd.oci.image.index.v1+json, "
				     "application/vnd.oci.image.manifest.v1+json, "
				     "application/vnd.docker.distribution.manifest.list.v2+json, "
				     "application/vnd.docker.distribution.manifest.v2+json";
	char path[512], what[512];
	snprintf(path, sizeof(path), "manifests/%s", ref);
	snprintf(what, sizeof(what), "manifest %.200s", ref);
	struct reg_call k = {.fd = -1, .max = max};
	if (reg_get(r, path, accept, NULL, &k, what, err) < 0) {
		free(k.buf);
		return -1;
	}
	if (!k.buf && !(k.buf = calloc(1, 1)))
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "%s", what);
	*body = k.buf;
	*len = k.len;
	snprintf(media_type, mt_len, "%s", k.content_type);
	return 0;
}

int registry_blob(sl_registry *r, const char *digest, int fd, uint64_t from, uint64_t max,
		  registry_progress_fn cb, void *arg, uint64_t *have, sl_err *err)
{
	char path[128], what[128], range[48];
	snprintf(path, sizeof(path), "blobs/%s", digest);
	snprintf(what, sizeof(what), "blob %.19s", digest);
	snprintf(range, sizeof(range), "%llu-", (unsigned long long)from);
	struct reg_call k = {
	    .fd = fd, .from = from, .at = from, .max_file = max, .cb = cb, .arg = arg};
	long code = reg_get(r, path, NULL, from ? range : NULL, &k, what, err);
	*have = k.at;
	return code < 0 ? -1 : 0;
}
