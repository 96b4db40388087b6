/* e2b.c — the E2B façade (issue 10): E2B's control plane (/v2/sandboxes, /sandboxes/{id}
 * with X-API-KEY) translated to the runtime calls /v1 makes, and the gate of the sandbox
 * plane (requests carrying E2b-Sandbox-Id; envd and the code interpreter). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <nettle/base64.h>
#include <nettle/hmac.h>
#include <nettle/sha2.h>

#include "cleanup.h"
#include "clock.h"
#include "hibernate.h"
#include "owner.h"
#include "park.h"
#include "secret.h"
#include "snapshot.h"
#include "e2b.h"

#define DEFAULT_TIMEOUT_S 300
#define LIST_LIMIT_MAX	  1000


/* ---- shared pieces ---- */

void e2b_token(api_server *s, const char *kind, const char *sandbox_id, char out[65])
{
	struct hmac_sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];
	hmac_sha256_set_key(&h, strlen(s->key), (const uint8_t *)s->key);
	hmac_sha256_update(&h, strlen(kind), (const uint8_t *)kind);
	hmac_sha256_update(&h, 1, (const uint8_t *)":");
	hmac_sha256_update(&h, strlen(sandbox_id), (const uint8_t *)sandbox_id);
	hmac_sha256_digest(&h, sizeof(d), d);
	for (size_t i = 0; i < sizeof(d); i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static enum MHD_Result reply_code_v(api_req *r, unsigned status, const char *fmt, va_list ap)
{
	char msg[1100];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "code", status);
	cJSON_AddStringToObject(o, "message", msg);
	return api_reply_json(r, status, o);
}

enum MHD_Result e2b_reply_code(api_req *r, unsigned status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	enum MHD_Result ret = reply_code_v(r, status, fmt, ap);
	va_end(ap);
	return ret;
}

enum MHD_Result e2b_reply_err(api_req *r, const sl_err *err)
{
	return e2b_reply_code(r, api_err_status(err), "%s", err->msg);
}

/* Any length: api_key_equal is for the daemon key's fixed length. */
bool e2b_secret_equal(const char *given, const char *want)
{
	size_t gl = given ? strlen(given) : 0, wl = strlen(want);
	unsigned diff = gl != wl;
	for (size_t i = 0; i < wl; i++)
		diff |= (unsigned char)want[i] ^ (unsigned char)(i < gl ? given[i] : 0);
	return diff == 0;
}

/* A signed /files URL (uploadUrl/downloadUrl) names no sandbox: its signature,
 * "v1_" + base64(sha256("<path>:<read|write>:<user>:<envd token>[:<expiry>]")) unpadded,
 * is tested against each running sandbox's token. */
static bool signature_matches(api_server *s, api_req *r, const char *sid, const char *sig)
{
	const char *path = api_query(r, "path"), *user = api_query(r, "username");
	const char *exp = api_query(r, "signature_expiration");
	char tok[65], b64[BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE) + 1];
	uint8_t d[SHA256_DIGEST_SIZE];
	e2b_token(s, "envd", sid, tok);
	_cleanup_free_ char *raw = NULL;
	if (asprintf(&raw, "%s:%s:%s:%s%s%s", path ? path : "",
		     strcmp(r->method, "GET") ? "write" : "read", user ? user : "", tok,
		     exp ? ":" : "", exp ? exp : "") < 0)
		return false;
	struct sha256_ctx h;
	sha256_init(&h);
	sha256_update(&h, strlen(raw), (const uint8_t *)raw);
	sha256_digest(&h, sizeof(d), d);
	base64_encode_raw(b64, sizeof(d), d);
	b64[BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE)] = '\0';
	char *pad = strchr(b64, '=');
	if (pad)
		*pad = '\0';
	char want[128];
	snprintf(want, sizeof(want), "v1_%s", b64);
	return e2b_secret_equal(sig, want);
}

/* envd's words for a signature that is no good for sandbox SID, or NULL when it is: the
 * signature is checked first, so a forged URL never learns whether its expiry was also
 * wrong. EXP_MS: the URL's checked signature_expiration, or -1 when it has none. */
static const char *signature_refusal(api_server *s, api_req *r, const char *sid, const char *sig,
				     int64_t exp_ms)
{
	if (!signature_matches(s, r, sid, sig))
		return "invalid signature";
	if (exp_ms >= 0 && exp_ms < sl_now_ms())
		return "signature is already expired";
	return NULL;
}

/* ?signature_expiration= as unix ms: -1 when absent, -2 when not unix seconds. */
static int64_t signature_expiry(api_req *r)
{
	const char *exp = api_query(r, "signature_expiration");
	if (!exp)
		return -1;
	char *end = NULL;
	errno = 0;
	long long secs = strtoll(exp, &end, 10);
	if (!*exp || *end || errno || secs < 0 || secs > INT64_MAX / 1000)
		return -2;
	return (int64_t)secs * 1000;
}

static int signed_sandbox(api_req *r, const char *sig, sl_sandbox *sb, enum MHD_Result *ret)
{
	const char *exp = api_query(r, "signature_expiration");
	/* E2B's URLs without an expiry are good for the sandbox's life: sandlot's default is
	 * safer (--provider-defaults gives E2B's). An expiry is unix seconds, bounded so that
	 * its milliseconds cannot overflow. */
	if (!exp && !r->srv->opt.provider_defaults) {
		*ret = e2b_reply_code(r, 401,
				      "a signed URL needs signature_expiration (useSignatureExpiration "
				      "in the SDK), unless the daemon runs with --provider-defaults");
		return -1;
	}
	int64_t exp_ms = signature_expiry(r);
	if (exp_ms == -2) {
		*ret = e2b_reply_code(r, 400,
				      "invalid signature_expiration %.40s: not unix seconds", exp);
		return -1;
	}
	sl_sandbox *all;
	size_t n;
	sl_err err = {0};
	if (sandbox_list_live(r->srv->ctx, &all, &n, &err) < 0) {
		*ret = e2b_reply_err(r, &err);
		return -1;
	}
	int found = -1;
	for (size_t i = 0; i < n && found < 0; i++)
		if (all[i].status == SL_ST_RUNNING && signature_matches(r->srv, r, all[i].id, sig))
			found = (int)i;
	char id[32] = "";
	if (found >= 0)
		snprintf(id, sizeof(id), "%s", all[found].id);
	sandbox_free_list(all, n);
	const char *no =
	    found < 0 ? "invalid signature" : signature_refusal(r->srv, r, id, sig, exp_ms);
	if (!no && sandbox_get(r->srv->ctx, id, sb, &err) < 0)
		no = "invalid signature"; /* gone since */
	if (no) {
		*ret = e2b_reply_code(r, 401, "%s", no);
		return -1;
	}
	api_touch(r->srv, sb->id);
	return 0;
}

/* A paused sandbox with autoResume, resumed by a call that needs it: E2B gives it a fresh
 * timeout of the one it was last given (create, connect, setTimeout), 5 minutes at least
 * (E2B's docs, "Timeout after auto-resume"). */
static int auto_resume(api_req *r, sl_sandbox *sb, enum MHD_Result *ret)
{
	char id[32];
	sl_err err = {0};
	snprintf(id, sizeof(id), "%s", sb->id);
	sandbox_free(sb);
	if (api_sandbox_wake(r->srv, id, DEFAULT_TIMEOUT_S * 1000, sb, &err) < 0) {
		*ret =
		    e2b_reply_code(r, 502, "The sandbox %s could not be resumed: %s", id, err.msg);
		return -1;
	}
	if (sb->status != SL_ST_RUNNING) {
		*ret = e2b_reply_code(r, 502, "The sandbox %s is %s", id,
				      sandbox_status_name(sb->status));
		sandbox_free(sb);
		return -1;
	}
	return 0;
}

int e2b_plane_sandbox(api_req *r, bool traffic_ok, sl_sandbox *sb, enum MHD_Result *ret)
{
	const char *id = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "E2b-Sandbox-Id");
	const char *sig = api_query(r, "signature");
	sl_err err = {0};
	if (!id && sig && !strcmp(r->url, "/files"))
		return signed_sandbox(r, sig, sb, ret);
	if (!id || sandbox_get(r->srv->ctx, id, sb, &err) < 0) {
		*ret = e2b_reply_code(r, 502, "The sandbox %s was not found", id ? id : "");
		return -1;
	}
	/* autoResume: traffic wakes a paused (frozen or hibernated) sandbox, once its token
	 * is checked. */
	bool wake =
	    (sb->status == SL_ST_PAUSED || sb->status == SL_ST_HIBERNATED) && sb->auto_resume;
	if (sb->status != SL_ST_RUNNING && !wake) {
		*ret = e2b_reply_code(r, 502, "The sandbox %s is %s", sb->id,
				      sandbox_status_name(sb->status));
		sandbox_free(sb);
		return -1;
	}
	char want[65];
	const char *tok = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Access-Token");
	e2b_token(r->srv, "envd", sb->id, want);
	bool ok = e2b_secret_equal(tok, want);
	if (!ok && sig && !strcmp(r->url, "/files")) {
		int64_t exp_ms = signature_expiry(r);
		const char *no = exp_ms == -2 ? "invalid signature_expiration"
					      : signature_refusal(r->srv, r, sb->id, sig, exp_ms);
		if (no) {
			*ret = e2b_reply_code(r, 401, "%s", no);
			sandbox_free(sb);
			return -1;
		}
		ok = true;
	}
	if (!ok && traffic_ok) {
		tok = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
						  "E2B-Traffic-Access-Token");
		e2b_token(r->srv, "traffic", sb->id, want);
		ok = e2b_secret_equal(tok, want);
	}
	if (!ok) {
		*ret = e2b_reply_code(r, 401,
				      "sandbox %s: missing or wrong access token "
				      "(X-Access-Token from create or connect)",
				      sb->id);
		sandbox_free(sb);
		return -1;
	}
	if (wake && auto_resume(r, sb, ret) < 0)
		return -1;
	api_touch(r->srv, sb->id);
	return 0;
}

void e2b_request_user(api_req *r, char user[64])
{
	user[0] = '\0';
	const char *q = api_query(r, "username");
	if (q) {
		snprintf(user, 64, "%s", q);
		return;
	}
	const char *a = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
	if (!a || strncasecmp(a, "Basic ", 6))
		return;
	struct base64_decode_ctx b;
	uint8_t out[96];
	size_t n = sizeof(out);
	const char *in = a + 6;
	base64_decode_init(&b);
	if (strlen(in) > 120 || !base64_decode_update(&b, &n, out, strlen(in), in) ||
	    !base64_decode_final(&b))
		return;
	char *colon = memchr(out, ':', n);
	size_t len = colon ? (size_t)(colon - (char *)out) : n;
	if (len < 64)
		snprintf(user, 64, "%.*s", (int)len, (const char *)out);
}

void e2b_user_home(const sl_sandbox *sb, const char *user, char *home, size_t len)
{
	if (!user || !*user || !strcmp(user, sb->user))
		snprintf(home, len, "%s", sb->workdir[0] ? sb->workdir : "/");
	else if (!strcmp(user, "root"))
		snprintf(home, len, "/root");
	else
		snprintf(home, len, "/home/%s", user);
}

char *e2b_path(const sl_sandbox *sb, const char *user, const char *path, sl_err *err)
{
	char home[300];
	if (!path || !*path) {
		sl_fail(err, SL_INVALID, 0, "path: required");
		return NULL;
	}
	if (path[0] == '/')
		return strdup(path);
	e2b_user_home(sb, user, home, sizeof(home));
	char *out;
	if (asprintf(&out, "%s/%s", strcmp(home, "/") ? home : "", path) < 0) {
		sl_fail(err, SL_INTERNAL, ENOMEM, "path");
		return NULL;
	}
	return out;
}

/* ---- the sandbox as E2B shows it ---- */



static const char *template_of(const sl_sandbox *sb)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(sb->labels, E2B_LABEL_TEMPLATE);
	return cJSON_IsString(t) ? t->valuestring : sb->image;
}

static cJSON *metadata_of(const sl_sandbox *sb)
{
	cJSON *m = cJSON_CreateObject();
	const cJSON *it;
	cJSON_ArrayForEach(it, sb->labels)
	{
		if (cJSON_IsString(it) &&
		    strncmp(it->string, E2B_LABEL_PREFIX, strlen(E2B_LABEL_PREFIX)))
			cJSON_AddStringToObject(m, it->string, it->valuestring);
	}
	return m;
}

/* E2B knows running and paused: a hibernated sandbox (betaPause, autoPause) and a stopped
 * one (a filesystem-only pause, a Daytona or /v1 stop) are paused to it, and connect
 * resumes or starts them. */
static bool e2b_paused(const sl_sandbox *sb)
{
	return sb->status == SL_ST_PAUSED || sb->status == SL_ST_HIBERNATED ||
	       sb->status == SL_ST_STOPPED;
}

/* ListedSandbox, or with DETAIL the SandboxDetail fields too. */
static cJSON *sandbox_e2b_json(const sl_sandbox *sb, bool detail)
{
	cJSON *o = cJSON_CreateObject();
	char t[40];
	cJSON_AddStringToObject(o, "sandboxID", sb->id);
	cJSON_AddStringToObject(o, "templateID", template_of(sb));
	cJSON_AddStringToObject(o, "alias", template_of(sb));
	cJSON_AddStringToObject(o, "clientID", "sandlot");
	cJSON_AddItemToObject(o, "metadata", metadata_of(sb));
	sl_iso_time(sb->created_ms, t, sizeof(t));
	cJSON_AddStringToObject(o, "startedAt", t);
	sl_iso_time(sb->expires_ms ? sb->expires_ms : sb->created_ms + 100LL * 365 * 86400000, t,
		 sizeof(t));
	cJSON_AddStringToObject(o, "endAt", t);
	cJSON_AddStringToObject(o, "state", e2b_paused(sb) ? "paused" : "running");
	uint64_t cpu = sb->limits.cpu_millicores;
	cJSON_AddNumberToObject(o, "cpuCount", cpu ? (double)((cpu + 999) / 1000) : 1);
	cJSON_AddNumberToObject(o, "memoryMB", (double)(sb->limits.memory_bytes >> 20));
	cJSON_AddNumberToObject(o, "diskSizeMB", (double)(sb->disk_bytes >> 20));
	cJSON_AddStringToObject(o, "envdVersion", E2B_ENVD_VERSION);
	cJSON_AddItemToObject(o, "volumeMounts", e2b_volume_mounts_json(sb));
	if (detail) {
		cJSON_AddBoolToObject(o, "allowInternetAccess", sb->net_enabled);
		cJSON *net = cJSON_AddObjectToObject(o, "network");
		cJSON_AddBoolToObject(net, "allowPublicTraffic", sandbox_port_public(sb, SL_PORT_ALL));
		if (sb->request_host[0])
			cJSON_AddStringToObject(net, "maskRequestHost", sb->request_host);
		/* /v1's rules the way E2B writes them: an allow list is "deny all but". */
		if (cJSON_GetArraySize(sb->net_allow)) {
			cJSON_AddItemToObject(net, "allowOut", cJSON_Duplicate(sb->net_allow, 1));
			cJSON *deny = sb->net_deny ? cJSON_Duplicate(sb->net_deny, 1) : cJSON_CreateArray();
			cJSON_AddItemToArray(deny, cJSON_CreateString("0.0.0.0/0"));
			cJSON_AddItemToObject(net, "denyOut", deny);
		} else if (cJSON_GetArraySize(sb->net_deny)) {
			cJSON_AddItemToObject(net, "denyOut", cJSON_Duplicate(sb->net_deny, 1));
		}
		cJSON *l = cJSON_AddObjectToObject(o, "lifecycle");
		bool pause = sb->on_lifetime == SL_LIFE_PAUSE || sb->on_lifetime == SL_LIFE_STOP ||
			     sb->on_lifetime == SL_LIFE_HIBERNATE;
		cJSON_AddStringToObject(l, "onTimeout", pause ? "pause" : "kill");
		cJSON_AddBoolToObject(l, "autoResume", sb->auto_resume);
	}
	return o;
}

/* create and connect answer the same: where envd is and how to reach it. */
static cJSON *connection_json(api_server *s, const sl_sandbox *sb)
{
	char tok[65];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "sandboxID", sb->id);
	cJSON_AddStringToObject(o, "templateID", template_of(sb));
	cJSON_AddStringToObject(o, "alias", template_of(sb));
	cJSON_AddStringToObject(o, "clientID", "sandlot");
	cJSON_AddStringToObject(o, "envdVersion", E2B_ENVD_VERSION);
	e2b_token(s, "envd", sb->id, tok);
	cJSON_AddStringToObject(o, "envdAccessToken", tok);
	e2b_token(s, "traffic", sb->id, tok);
	cJSON_AddStringToObject(o, "trafficAccessToken", tok);
	return o;
}

cJSON *e2b_connection_json(api_server *s, const sl_sandbox *sb)
{
	return connection_json(s, sb);
}

/* A sandbox named in the path: E2B answers 404 in the body for unknown and dead ones. */
static int path_sandbox(api_req *r, sl_sandbox *sb, enum MHD_Result *ret)
{
	sl_err err = {0};
	if (sandbox_get(r->srv->ctx, r->param[0], sb, &err) < 0) {
		*ret = e2b_reply_code(r, 404, "sandbox \"%s\" not found", r->param[0]);
		return -1;
	}
	if (sb->status == SL_ST_TERMINATED || sb->status == SL_ST_FAILED) {
		*ret = e2b_reply_code(r, 404, "sandbox \"%s\" not found (%s)", sb->id,
				      sb->reason[0] ? sb->reason : sandbox_status_name(sb->status));
		sandbox_free(sb);
		return -1;
	}
	return 0;
}

/* {"timeout": seconds} -> ms, or -1 when absent. */
static int timeout_field(const cJSON *body, int64_t *ms, sl_err *err)
{
	uint64_t v;
	bool given = false;
	*ms = -1;
	if (body && api_json_uint(body, "", "timeout", 0, 366ULL * 86400, &v, &given, err) < 0)
		return -1;
	if (given)
		*ms = (int64_t)v * 1000;
	return 0;
}

/* ---- create ---- */

static bool is_everything(const cJSON *c)
{
	return cJSON_IsString(c) &&
	       (!strcmp(c->valuestring, "0.0.0.0/0") || !strcmp(c->valuestring, "::/0"));
}

/* E2B's network options as /v1's `network` object. allow_internet_access turns the
 * network on; false is E2B's denyOut ALL_TRAFFIC. network.allowOut/denyOut are lists of
 * CIDRs and domain names ("*.github.com") where allowOut wins over denyOut. sandlot's
 * deny wins over its allow, so E2B's "deny everything but X" (denyOut 0.0.0.0/0 or
 * allow_internet_access false, allowOut X) is /v1's allow [X]; other denyOut entries are
 * /v1's deny, and allowOut without a deny-all admits no more than the default
 * (everything). Neither given: sandlot's default, no network; with --provider-defaults
 * E2B's, on. Everything denied and nothing allowed: the network off. */
int e2b_network_body(const cJSON *in, cJSON *body, bool provider_defaults, sl_err *err)
{
	const cJSON *inet = cJSON_GetObjectItemCaseSensitive(in, "allow_internet_access");
	const cJSON *net = cJSON_GetObjectItemCaseSensitive(in, "network");
	if (inet && !cJSON_IsBool(inet) && !cJSON_IsNull(inet))
		return sl_fail(err, SL_INVALID, 0, "allow_internet_access: must be a boolean");
	if (net && !cJSON_IsObject(net) && !cJSON_IsNull(net))
		return sl_fail(err, SL_INVALID, 0, "network: must be an object");
	const cJSON *aout = cJSON_IsObject(net) ? cJSON_GetObjectItemCaseSensitive(net, "allowOut") : NULL;
	const cJSON *dout = cJSON_IsObject(net) ? cJSON_GetObjectItemCaseSensitive(net, "denyOut") : NULL;
	if ((aout && !cJSON_IsArray(aout)) || (dout && !cJSON_IsArray(dout)))
		return sl_fail(err, SL_INVALID, 0,
			       "network.allowOut/denyOut: must be lists of CIDRs and domain names");
	bool on = cJSON_IsTrue(inet) || cJSON_GetArraySize(aout) > 0 || cJSON_GetArraySize(dout) > 0 ||
		  (provider_defaults && !inet);
	if (!cJSON_IsBool(inet) && !on)
		return 0;
	bool deny_all = cJSON_IsFalse(inet);
	const cJSON *c;
	cJSON_ArrayForEach(c, dout) deny_all |= is_everything(c);
	/* Everything denied and nothing allowed: no way out, as with no network. */
	if (deny_all && cJSON_GetArraySize(aout) == 0)
		on = false;
	cJSON *o = cJSON_AddObjectToObject(body, "network");
	cJSON_AddBoolToObject(o, "enabled", on);
	if (!on)
		return 0;
	if (deny_all)
		cJSON_AddItemToObject(o, "allow", aout ? cJSON_Duplicate(aout, 1) : cJSON_CreateArray());
	cJSON *deny = cJSON_AddArrayToObject(o, "deny");
	cJSON_ArrayForEach(c, dout)
	{
		if (!is_everything(c))
			cJSON_AddItemToArray(deny, cJSON_Duplicate(c, 1));
	}
	return 0;
}

/* network.allowPublicTraffic: true makes every port public (no credential); false
 * keeps them private, so the preview proxy wants E2B-Traffic-Access-Token (the create's
 * trafficAccessToken). Absent: private, or with --provider-defaults E2B's default,
 * public. network.maskRequestHost is /v1's requestHost: the Host header requests through
 * the preview proxy reach the sandbox with ("${PORT}" the port), checked by the runtime. */
static int public_body(const cJSON *in, cJSON *body, bool provider_defaults, sl_err *err)
{
	const cJSON *net = cJSON_GetObjectItemCaseSensitive(in, "network");
	const cJSON *pub = cJSON_IsObject(net) ? cJSON_GetObjectItemCaseSensitive(net, "allowPublicTraffic")
					       : NULL;
	if (pub && !cJSON_IsBool(pub) && !cJSON_IsNull(pub))
		return sl_fail(err, SL_INVALID, 0, "network.allowPublicTraffic: must be a boolean");
	const cJSON *mask =
	    cJSON_IsObject(net) ? cJSON_GetObjectItemCaseSensitive(net, "maskRequestHost") : NULL;
	if (mask && !cJSON_IsString(mask) && !cJSON_IsNull(mask))
		return sl_fail(err, SL_INVALID, 0, "network.maskRequestHost: must be a string");
	if (cJSON_IsString(mask))
		cJSON_AddStringToObject(body, "requestHost", mask->valuestring);
	if (cJSON_IsTrue(pub) || (!cJSON_IsBool(pub) && provider_defaults)) {
		cJSON *all = cJSON_AddObjectToObject(cJSON_AddObjectToObject(body, "ports"), "*");
		cJSON_AddBoolToObject(all, "public", true);
	}
	return 0;
}

/* envVars as /v1's env, except a variable whose whole value is a secret's placeholder
 * (the SDK's Secret.fill(NAME), "${e2b.secrets.NAME}"): that one is /v1's secrets
 * {VAR: NAME}, so the variable holds the value itself (docs/e2b.md). A placeholder
 * inside a longer value is refused: sandlot does not template values. */
static int env_body(const cJSON *in, cJSON *body, sl_err *err)
{
	static const char mark[] = "${e2b.secrets.";
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(in, "envVars"), *it;
	if (!cJSON_IsObject(env))
		return 0;
	cJSON *plain = cJSON_AddObjectToObject(body, "env"), *refs = NULL;
	cJSON_ArrayForEach(it, env)
	{
		const char *v = cJSON_IsString(it) ? it->valuestring : NULL;
		const char *at = v ? strstr(v, mark) : NULL;
		size_t n = v ? strlen(v) : 0;
		if (!at) {
			cJSON_AddItemToObject(plain, it->string, cJSON_Duplicate(it, 1));
			continue;
		}
		if (at != v || v[n - 1] != '}' || n == sizeof(mark))
			return sl_fail(err, SL_INVALID, 0,
				       "envVars.%.140s: a secret's placeholder (Secret.fill) must be "
				       "the whole value",
				       it->string);
		if (!refs)
			refs = cJSON_AddObjectToObject(body, "secrets");
		char name[SECRET_NAME_MAX + 2];
		snprintf(name, sizeof(name), "%.*s", (int)(n - sizeof(mark)), v + sizeof(mark) - 1);
		cJSON_AddStringToObject(refs, it->string, name);
	}
	return 0;
}

/* network.rules: per-host transforms (headers, often a Secret.fill placeholder) that
 * E2B's egress proxy applies to HTTPS requests. sandlot does not intercept a sandbox's
 * TLS, so a rule with a transform is refused rather than silently not applied; one
 * without is nothing to apply. */
static int rules_check(const cJSON *in, sl_err *err)
{
	const cJSON *net = cJSON_GetObjectItemCaseSensitive(in, "network");
	const cJSON *rules = cJSON_IsObject(net) ? cJSON_GetObjectItemCaseSensitive(net, "rules")
						 : NULL;
	const cJSON *host, *rule;
	cJSON_ArrayForEach(host, rules)
	{
		cJSON_ArrayForEach(rule, host)
		{
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(rule, "transform");
			if (t && !cJSON_IsNull(t))
				return sl_fail(err, SL_INVALID, 0,
					       "network.rules.%.140s: sandlot does not rewrite a "
					       "sandbox's requests (no transforms); give a secret as "
					       "envVars {VAR: Secret.fill(name)} instead",
					       host->string);
		}
	}
	return 0;
}

/* The SDK's lifecycle ({onTimeout: 'pause' | {action: 'pause', keepMemory}, autoResume})
 * as it sends it: autoPause, autoPauseMemory, autoResume {enabled}. A pause that keeps
 * memory is /v1's onLifetime "hibernate" (CRIU, else the freezer: sandbox_park); one that
 * does not ends the processes and keeps the files ("stop"), so the connect after it is a
 * cold boot. The SDK refuses autoResume with anything but a memory pause; so does this.
 * *MEM_PAUSE: a pause that keeps memory was asked for. */
static int lifecycle_body(const cJSON *in, cJSON *timeout, bool *mem_pause, sl_err *err)
{
	bool pause = false, memory = true, resume = false;
	const cJSON *ar = cJSON_GetObjectItemCaseSensitive(in, "autoResume");
	if (api_json_bool(in, "", "autoPause", &pause, err) < 0 ||
	    api_json_bool(in, "", "autoPauseMemory", &memory, err) < 0)
		return -1;
	if (ar && !cJSON_IsNull(ar) && !cJSON_IsObject(ar))
		return sl_fail(err, SL_INVALID, 0,
			       "autoResume: must be an object {enabled: boolean}");
	if (cJSON_IsObject(ar) && api_json_bool(ar, "autoResume.", "enabled", &resume, err) < 0)
		return -1;
	if (resume && (!pause || !memory))
		return sl_fail(err, SL_INVALID, 0,
			       "autoResume: needs autoPause with its memory kept (autoPauseMemory "
			       "not false)");
	if (pause)
		cJSON_AddStringToObject(timeout, "onLifetime", memory ? "hibernate" : "stop");
	*mem_pause = pause && memory;
	if (resume)
		cJSON_AddBoolToObject(timeout, "autoResume", true);
	return 0;
}

/* A create whose pause keeps memory (autoPause) is launched to hibernate ("hibernate":
 * true, docs/isolation.md), so that its pause really frees its memory (with its network,
 * volumes and secret files, which that launch takes too), when the criu binary is
 * installed (without it the pause is the freezer's anyway, and
 * the launch would cost its cold start for nothing). Otherwise the usual launch, paused
 * by the freezer (sandbox_park's fallback). Other creates keep the usual launch: it has
 * the spare (a warm start) and the stronger isolation (docs/e2b.md, "Pause"). */
static void hibernate_launch_body(cJSON *body)
{
	if (access(hibernate_criu(), X_OK) < 0)
		return;
	cJSON_AddBoolToObject(body, "hibernate", true);
}

/* templateID: a snapshot name or id when one exists; else a template's tag (E2B's stock
 * templates are sandlot's images: e2b_stock_image), else an image name. */
static void template_source(api_server *s, const char *tpl, cJSON *body)
{
	sl_snapshot snap;
	sl_err err = {0};
	char name[IMAGE_NAME_MAX + 1], tag[E2B_TAG_MAX + 1], img[IMAGE_NAME_MAX + 1];
	bool parsed = e2b_template_parse(tpl, name, tag, &err) == 0 &&
		      e2b_template_image(name, tag, img, sizeof(img), &err) == 0;
	if (parsed && e2b_stock_template(name) && !tag[0])
		cJSON_AddStringToObject(body, "image", e2b_stock_image(s->ctx->cfg.state_dir, name));
	else if (snapshot_get(s->ctx, tpl, &snap, &err) == 0)
		cJSON_AddStringToObject(body, "snapshot", snap.id);
	else /* "name:default" is the image "name"; "name:tag" is the image of that name */
		cJSON_AddStringToObject(body, "image", parsed && !tag[0] ? img : tpl);
}

static enum MHD_Result create(api_req *r)
{
	const cJSON *in;
	sl_err err = {0};
	if (api_body_object(r, true, &in, &err) < 0)
		return e2b_reply_err(r, &err);
	const char *tpl = NULL;
	int64_t tmo;
	if (in && (api_json_string(in, "", "templateID", &tpl, &err) < 0 ||
		   timeout_field(in, &tmo, &err) < 0))
		return e2b_reply_err(r, &err);
	if (!in)
		tmo = -1;
	if (!tpl)
		tpl = "base";
	/* The /v1 create body: one translation, one create path. */
	_cleanup_cjson_ cJSON *body = cJSON_CreateObject();
	template_source(r->srv, tpl, body);
	/* Unknown secrets named here, not as a missing template (below). */
	if (in && (env_body(in, body, &err) < 0 || rules_check(in, &err) < 0 ||
		   e2b_volume_mounts_body(in, body, r->srv->ctx, &err) < 0 ||
		   secret_refs_check(&r->srv->ctx->cfg, owner_acting(), "envVars",
				     cJSON_GetObjectItemCaseSensitive(body, "secrets"), &err) < 0))
		return e2b_reply_err(r, &err);
	cJSON *labels = cJSON_AddObjectToObject(body, "labels");
	const cJSON *meta = in ? cJSON_GetObjectItemCaseSensitive(in, "metadata") : NULL;
	if (cJSON_IsObject(meta)) {
		const cJSON *it;
		cJSON_ArrayForEach(it, meta)
		{
			if (!cJSON_IsString(it))
				return e2b_reply_code(r, 400, "metadata.%s: must be a string",
						      it->string);
			cJSON_AddStringToObject(labels, it->string, it->valuestring);
		}
	}
	cJSON_AddStringToObject(labels, E2B_LABEL_TEMPLATE, tpl);
	_cleanup_cjson_ cJSON *empty = in ? NULL : cJSON_CreateObject();
	bool defaults = r->srv->opt.provider_defaults;
	if (e2b_network_body(in ? in : empty, body, defaults, &err) < 0 ||
	    public_body(in ? in : empty, body, defaults, &err) < 0)
		return e2b_reply_err(r, &err);
	char life[32];
	snprintf(life, sizeof(life), "%llds",
		 (long long)(tmo >= 0 ? tmo / 1000 : DEFAULT_TIMEOUT_S));
	cJSON *t = cJSON_AddObjectToObject(body, "timeout");
	cJSON_AddStringToObject(t, "lifetime", life);
	bool mem_pause = false;
	if (in && lifecycle_body(in, t, &mem_pause, &err) < 0)
		return e2b_reply_err(r, &err);
	if (mem_pause)
		hibernate_launch_body(body);
	sl_sandbox sb;
	if (api_sandbox_create_from(r->srv, body, false, false, &sb, &err) < 0) {
		if (err.kind == SL_NOTFOUND)
			return e2b_reply_code(r, 400, "template \"%s\": %s", tpl, err.msg);
		return e2b_reply_err(r, &err);
	}
	cJSON *o = connection_json(r->srv, &sb);
	sandbox_free(&sb);
	return api_reply_json(r, 201, o);
}

/* ---- connect (resumes a paused sandbox), timeout, pause, kill ---- */

static enum MHD_Result connect_sandbox(api_req *r)
{
	const cJSON *in;
	sl_err err = {0};
	int64_t tmo = -1;
	sl_sandbox sb;
	enum MHD_Result ret;
	if (api_body_object(r, true, &in, &err) < 0 || timeout_field(in, &tmo, &err) < 0)
		return e2b_reply_err(r, &err);
	if (path_sandbox(r, &sb, &ret) < 0)
		return ret;
	unsigned status = 200;
	char id[32];
	snprintf(id, sizeof(id), "%s", sb.id);
	if (e2b_paused(&sb)) {
		bool paused = sb.status != SL_ST_STOPPED; /* frozen or hibernated */
		sandbox_free(&sb);
		if ((paused ? sandbox_resume(r->srv->ctx, id, &sb, &err)
			    : sandbox_start(r->srv->ctx, id, &sb, &err)) < 0)
			return e2b_reply_err(r, &err);
		status = 201;
		if (tmo < 0)
			tmo = DEFAULT_TIMEOUT_S * 1000;
	} else if (tmo >= 0 && (!sb.expires_ms || sl_now_ms() + tmo <= sb.expires_ms)) {
		tmo = -1; /* E2B: connecting to a running sandbox only ever extends its life */
	}
	if (tmo >= 0) {
		sandbox_free(&sb);
		if (sandbox_set_timeouts(r->srv->ctx, id, tmo, -1, -1, &sb, &err) < 0)
			return e2b_reply_err(r, &err);
	}
	api_touch(r->srv, id);
	cJSON *o = connection_json(r->srv, &sb);
	sandbox_free(&sb);
	return api_reply_json(r, status, o);
}

static enum MHD_Result set_timeout(api_req *r)
{
	const cJSON *in;
	sl_err err = {0};
	int64_t tmo = -1;
	_cleanup_sandbox_ sl_sandbox sb = {0};
	enum MHD_Result ret;
	if (api_body_object(r, false, &in, &err) < 0 || timeout_field(in, &tmo, &err) < 0)
		return e2b_reply_err(r, &err);
	if (tmo < 0)
		return e2b_reply_code(r, 400, "timeout: required (seconds)");
	if (path_sandbox(r, &sb, &ret) < 0)
		return ret;
	/* 0 would mean "no deadline" to the runtime; E2B means "now". */
	if (sandbox_set_timeouts(r->srv->ctx, sb.id, tmo ? tmo : 1, -1, -1, NULL, &err) < 0)
		return e2b_reply_err(r, &err);
	return api_reply_empty(r, 204);
}

/* {memory: false} (the SDK's pause({keepMemory: false})): a filesystem-only pause, the
 * runtime's stop, so every process ends and the connect after it is a cold boot (a new
 * boot_id inside). Otherwise (betaPause, pause) a hibernate, or the freezer's pause when
 * CRIU cannot (sandbox_park logs why): it fails only where the freezer would. */
static enum MHD_Result pause_sandbox(api_req *r)
{
	_cleanup_sandbox_ sl_sandbox sb = {0};
	const cJSON *in;
	sl_err err = {0};
	enum MHD_Result ret;
	bool memory = true;
	if (api_body_object(r, true, &in, &err) < 0 ||
	    (in && api_json_bool(in, "", "memory", &memory, &err) < 0))
		return e2b_reply_err(r, &err);
	if (path_sandbox(r, &sb, &ret) < 0)
		return ret;
	if (e2b_paused(&sb))
		return e2b_reply_code(r, 409, "sandbox %s is already paused", sb.id);
	/* A paused E2B sandbox keeps until resumed or killed: no deadline while paused
	 * (connect sets a new one). */
	if ((memory ? sandbox_park(r->srv->ctx, sb.id, SL_PARK_PAUSE, "E2B pause", NULL, &err)
		    : sandbox_stop(r->srv->ctx, sb.id, 10000, NULL, &err)) < 0 ||
	    sandbox_drop_deadline(r->srv->ctx, sb.id, NULL, &err) < 0)
		return e2b_reply_err(r, &err);
	return api_reply_empty(r, 204);
}

/* updateNetwork: allowOut, denyOut and allow_internet_access as at create
 * (e2b_network_body), the sandbox's rules replaced for new connections. sandlot cannot
 * turn a network on or off after create, so a change that would (allowOut on a sandbox
 * made without one; everything denied, nothing allowed, on one with it) is a 400 naming
 * that; `rules` and `egressProxy` (E2B's request rewriting and proxy) are not kept. */
static enum MHD_Result update_network(api_req *r)
{
	const cJSON *in;
	sl_err err = {0};
	_cleanup_sandbox_ sl_sandbox sb = {0};
	enum MHD_Result ret;
	if (api_body_object(r, false, &in, &err) < 0)
		return e2b_reply_err(r, &err);
	static const char *const unkept[] = {"rules", "egressProxy"};
	for (size_t i = 0; i < 2; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(in, unkept[i]);
		if (v && !cJSON_IsNull(v))
			return e2b_reply_code(r, 400, "%s: not supported by sandlot", unkept[i]);
	}
	/* The create's reader wants them as create sends them: under network. */
	_cleanup_cjson_ cJSON *create = cJSON_CreateObject(), *body = cJSON_CreateObject();
	cJSON *net = cJSON_AddObjectToObject(create, "network");
	static const char *const lists[] = {"allowOut", "denyOut"};
	for (size_t i = 0; i < 2; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(in, lists[i]);
		if (v && !cJSON_IsNull(v))
			cJSON_AddItemToObject(net, lists[i], cJSON_Duplicate(v, 1));
	}
	const cJSON *inet = cJSON_GetObjectItemCaseSensitive(in, "allow_internet_access");
	if (inet)
		cJSON_AddItemToObject(create, "allow_internet_access", cJSON_Duplicate(inet, 1));
	if (e2b_network_body(create, body, true, &err) < 0)
		return e2b_reply_err(r, &err);
	/* Omitted is cleared: no allow list here is none, not the one the sandbox had. */
	cJSON *netv = cJSON_GetObjectItemCaseSensitive(body, "network");
	if (cJSON_IsObject(netv) && !cJSON_GetObjectItemCaseSensitive(netv, "allow"))
		cJSON_AddItemToObject(netv, "allow", cJSON_CreateArray());
	if (path_sandbox(r, &sb, &ret) < 0)
		return ret;
	sl_net_opts opts;
	bool given;
	char **allow = NULL, **deny = NULL;
	if (api_json_network(body, "network", &opts, &given, &allow, &deny, &err) < 0)
		return e2b_reply_err(r, &err);
	int rc = 0;
	if (opts.enabled != sb.net_enabled)
		rc = sl_fail(&err, SL_INVALID, 0,
			     "sandbox %s was created with its network %s; sandlot cannot turn it %s "
			     "after create",
			     sb.id, sb.net_enabled ? "on" : "off", sb.net_enabled ? "off" : "on");
	else if (opts.enabled)
		rc = sandbox_set_network(r->srv->ctx, sb.id, &opts, NULL, &err);
	api_strv_free(allow);
	api_strv_free(deny);
	if (rc < 0)
		return e2b_reply_err(r, &err);
	return api_reply_empty(r, 204);
}

static enum MHD_Result kill_sandbox(api_req *r)
{
	_cleanup_sandbox_ sl_sandbox sb = {0};
	sl_err err = {0};
	enum MHD_Result ret;
	if (path_sandbox(r, &sb, &ret) < 0)
		return ret;
	if (api_destroy(r->srv, sb.id, "deleted", &err) < 0)
		return e2b_reply_err(r, &err);
	return api_reply_empty(r, 204);
}

/* ---- get, metrics ---- */

static enum MHD_Result get_sandbox(api_req *r)
{
	sl_sandbox sb;
	enum MHD_Result ret;
	if (path_sandbox(r, &sb, &ret) < 0)
		return ret;
	cJSON *o = sandbox_e2b_json(&sb, true);
	sandbox_free(&sb);
	return api_reply_json(r, 200, o);
}

/* ?start= / ?end= (unix seconds): 0 when absent, -1 when bad. */
static int64_t metrics_bound(api_req *r, const char *name)
{
	const char *v = api_query(r, name);
	if (!v || !*v)
		return 0;
	char *end;
	errno = 0;
	long long s = strtoll(v, &end, 10);
	return *end || errno || s < 0 || s > 253402300799LL ? -1 : (int64_t)s * 1000;
}

/* E2B stamps samples in 5 s buckets and the SDK rounds start/end to seconds. */
#define METRICS_SLACK_MS 5000

/* One sample, now: the cgroup's counters (CPU as the average since start). It is
 * answered only when now falls within ?start..?end (none: always), so a range in the
 * past, before the sandbox was made or after a sample could be taken, is empty. */
static enum MHD_Result metrics(api_req *r)
{
	sl_sandbox sb;
	enum MHD_Result ret;
	int64_t from = metrics_bound(r, "start"), to = metrics_bound(r, "end");
	if (from < 0 || to < 0)
		return e2b_reply_code(r, 400, "start, end: unix seconds");
	if (to && from > to)
		return e2b_reply_code(r, 400, "start is after end");
	if (path_sandbox(r, &sb, &ret) < 0)
		return ret;
	int64_t at = sl_now_ms();
	if (at < from - METRICS_SLACK_MS || (to && at > to + METRICS_SLACK_MS)) {
		sandbox_free(&sb);
		return api_reply_json(r, 200, cJSON_CreateArray());
	}
	sl_cgusage u = {0};
	sl_err err = {0};
	char cg[64], t[40];
	snprintf(cg, sizeof(cg), "sandlot/%s", sb.id);
	cgroup_usage(r->srv->ctx->cg, cg, &u, &err);
	int64_t now = sl_now_ms(), up = now - sb.created_ms;
	uint64_t cpus = sb.limits.cpu_millicores ? (sb.limits.cpu_millicores + 999) / 1000 : 1;
	cJSON *arr = cJSON_CreateArray(), *m = cJSON_CreateObject();
	sl_iso_time(now, t, sizeof(t));
	cJSON_AddStringToObject(m, "timestamp", t);
	cJSON_AddNumberToObject(m, "timestampUnix", (double)(now / 1000));
	cJSON_AddNumberToObject(
	    m, "cpuUsedPct",
	    up > 0 ? (double)u.cpu_usage_ns / 1e6 / (double)up / (double)cpus * 100 : 0);
	cJSON_AddNumberToObject(m, "cpuCount", (double)cpus);
	cJSON_AddNumberToObject(m, "memUsed", (double)u.memory_bytes);
	cJSON_AddNumberToObject(m, "memTotal", (double)sb.limits.memory_bytes);
	cJSON_AddNumberToObject(m, "memCache", 0);
	cJSON_AddNumberToObject(m, "diskUsed", 0);
	cJSON_AddNumberToObject(m, "diskTotal", (double)sb.disk_bytes);
	cJSON_AddItemToArray(arr, m);
	sandbox_free(&sb);
	return api_reply_json(r, 200, arr);
}

/* ---- list ---- */

static void url_decode(char *s)
{
	char *o = s;
	for (char *p = s; *p; p++) {
		if (*p == '%' && p[1] && p[2] && strchr("0123456789abcdefABCDEF", p[1]) &&
		    strchr("0123456789abcdefABCDEF", p[2])) {
			char h[3] = {p[1], p[2], 0};
			*o++ = (char)strtol(h, NULL, 16);
			p += 2;
		} else {
			*o++ = *p == '+' ? ' ' : *p;
		}
	}
	*o = '\0';
}

/* ?metadata= is "k=v&k2=v2" with keys and values URL-encoded once more by the SDK. */
static bool metadata_match(const sl_sandbox *sb, const char *filter)
{
	if (!filter || !*filter)
		return true;
	_cleanup_free_ char *copy = strdup(filter);
	char *save = NULL;
	for (char *kv = copy ? strtok_r(copy, "&", &save) : NULL; kv;
	     kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq)
			return false;
		*eq = '\0';
		char *k = kv, *v = eq + 1;
		url_decode(k);
		url_decode(k);
		url_decode(v);
		url_decode(v);
		const cJSON *have = cJSON_GetObjectItemCaseSensitive(sb->labels, k);
		if (!strncmp(k, E2B_LABEL_PREFIX, strlen(E2B_LABEL_PREFIX)) ||
		    !cJSON_IsString(have) || strcmp(have->valuestring, v))
			return false;
	}
	return true;
}

static bool state_match(const sl_sandbox *sb, const char *states)
{
	const char *st = sb->status == SL_ST_RUNNING ? "running" : e2b_paused(sb) ? "paused" : NULL;
	if (!st)
		return false;
	if (!states || !*states)
		return true;
	_cleanup_free_ char *copy = strdup(states);
	char *save = NULL;
	for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save))
		if (!strcmp(t, st))
			return true;
	return false;
}

/* ?startedAfter= as unix ms ("2024-01-01T00:00:00.000Z"); -1 when absent, -2 when bad. */
static int64_t started_after(api_req *r)
{
	const char *v = api_query(r, "startedAfter");
	if (!v || !*v)
		return -1;
	struct tm tm = {0};
	const char *rest = strptime(v, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!rest)
		return -2;
	int64_t ms = (int64_t)timegm(&tm) * 1000;
	if (*rest == '.') {
		int64_t scale = 100;
		for (rest++; *rest >= '0' && *rest <= '9'; rest++, scale /= 10)
			ms += (*rest - '0') * scale;
	}
	return ms;
}

static int by_created(const void *a, const void *b)
{
	const sl_sandbox *x = a, *y = b;
	if (x->created_ms != y->created_ms)
		return x->created_ms < y->created_ms ? -1 : 1;
	return strcmp(x->id, y->id);
}

/* Pages: nextToken is the offset of the next item in the filtered, ordered list. */
static enum MHD_Result list(api_req *r)
{
	sl_err err = {0};
	sl_sandbox *all;
	size_t n;
	const char *lim = api_query(r, "limit"), *tok = api_query(r, "nextToken");
	const char *order = api_query(r, "order"), *tpl = api_query(r, "template");
	char *end;
	unsigned long limit = lim ? strtoul(lim, &end, 10) : 100, off = 0;
	if (lim && (*end || !limit || limit > LIST_LIMIT_MAX))
		return e2b_reply_code(r, 400, "limit: a whole number 1..%d", LIST_LIMIT_MAX);
	if (tok && *tok) {
		off = strtoul(tok, &end, 10);
		if (*end)
			return e2b_reply_code(r, 400, "nextToken: not one this server gave");
	}
	/* E2B's default is newest first. */
	if (order && strcmp(order, "asc") && strcmp(order, "desc"))
		return e2b_reply_code(r, 400, "order: asc or desc");
	int64_t after = started_after(r);
	if (after == -2)
		return e2b_reply_code(r, 400, "startedAfter: expected an RFC 3339 time");
	if (sandbox_list_live(r->srv->ctx, &all, &n, &err) < 0)
		return e2b_reply_err(r, &err);
	if (n)
		qsort(all, n, sizeof(*all), by_created);
	bool desc = !order || !strcmp(order, "desc");
	cJSON *arr = cJSON_CreateArray();
	size_t seen = 0;
	bool more = false;
	for (size_t k = 0; k < n; k++) {
		const sl_sandbox *sb = &all[desc ? n - 1 - k : k];
		if (!state_match(sb, api_query(r, "state")) ||
		    !metadata_match(sb, api_query(r, "metadata")) ||
		    (tpl && *tpl && strcmp(template_of(sb), tpl)) || sb->created_ms < after)
			continue;
		if (seen >= off + limit) {
			more = true;
			break;
		}
		if (seen++ >= off)
			cJSON_AddItemToArray(arr, sandbox_e2b_json(sb, false));
	}
	sandbox_free_list(all, n);
	char *body = cJSON_PrintUnformatted(arr);
	cJSON_Delete(arr);
	if (!body)
		return MHD_NO;
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	if (more) {
		char next[32];
		snprintf(next, sizeof(next), "%lu", off + limit);
		MHD_add_response_header(resp, "X-Next-Token", next);
	}
	return api_reply(r, 200, resp);
}

/* ---- the façade ---- */

static bool claims(api_req *r)
{
	if (!strncmp(r->url, "/v1/", 4))
		return false; /* never sandlot's own API, whatever the headers */
	if (MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "E2b-Sandbox-Id"))
		return true;
	/* A signed upload or download URL: the signature names the sandbox. */
	if (!strcmp(r->url, "/files") && api_query(r, "signature"))
		return true;
	return !strncmp(r->url, "/v2/sandboxes", 13) || !strncmp(r->url, "/sandboxes", 10) ||
	       !strncmp(r->url, "/v3/templates", 13) || !strncmp(r->url, "/v2/templates/", 14) ||
	       !strncmp(r->url, "/templates/", 11) || !strcmp(r->url, "/secrets") ||
	       !strncmp(r->url, "/secrets/", 9) || !strcmp(r->url, "/snapshots") ||
	       !strcmp(r->url, "/volumes") || !strncmp(r->url, "/volumes/", 9) ||
	       !strncmp(r->url, "/volumecontent/", 15);
}

static enum MHD_Result no_route(api_req *r, bool path_known, const char *allow)
{
	if (path_known)
		return e2b_reply_code(r, 405, "%s answers %s, not %s", r->url, allow, r->method);
	return e2b_reply_code(r, 404, "no route %s %s in sandlot's E2B API", r->method, r->url);
}

static enum MHD_Result unauthorized(api_req *r)
{
	return e2b_reply_code(r, 401, "Invalid API key: set E2B_API_KEY to `sandlot key`");
}

/* The sandbox plane's credentials, from the headers alone (the handlers check again,
 * each as strictly as its route wants: the code interpreter's also take the traffic
 * token). */
static int gate(api_req *r, enum MHD_Result *ret)
{
	if (!strncmp(r->route->pattern, "/templates/", 11))
		return e2b_template_upload_gate(r, ret);
	if (!strncmp(r->route->pattern, "/volumecontent/", 15))
		return e2b_volume_gate(r, ret);
	bool traffic_ok = !strncmp(r->route->pattern, "/execute", 8) ||
			  !strncmp(r->route->pattern, "/contexts", 9);
	sl_sandbox sb;
	if (e2b_plane_sandbox(r, traffic_ok, &sb, ret) < 0)
		return -1;
	sandbox_free(&sb);
	return 0;
}

#define OWN API_ROUTE_OWN_AUTH
/* clang-format off */
static const api_route routes[] = {
	/* control plane (X-API-KEY, checked by the server) */
	{ "POST",   "/v2/sandboxes", API_BODY_JSON, create, NULL, NULL, 0 },
	{ "GET",    "/v2/sandboxes", API_BODY_NONE, list, NULL, NULL, 0 },
	{ "POST",   "/v2/sandboxes/{id}/connect", API_BODY_JSON, connect_sandbox, NULL, NULL, 0 },
	{ "POST",   "/sandboxes", API_BODY_JSON, create, NULL, NULL, 0 },
	{ "GET",    "/sandboxes/{id}", API_BODY_NONE, get_sandbox, NULL, NULL, 0 },
	{ "DELETE", "/sandboxes/{id}", API_BODY_NONE, kill_sandbox, NULL, NULL, 0 },
	{ "POST",   "/sandboxes/{id}/timeout", API_BODY_JSON, set_timeout, NULL, NULL, 0 },
	{ "PUT",    "/sandboxes/{id}/network", API_BODY_JSON, update_network, NULL, NULL, 0 },
	{ "POST",   "/sandboxes/{id}/pause", API_BODY_JSON, pause_sandbox, NULL, NULL, 0 },
	{ "POST",   "/sandboxes/{id}/resume", API_BODY_JSON, connect_sandbox, NULL, NULL, 0 },
	{ "POST",   "/sandboxes/{id}/connect", API_BODY_JSON, connect_sandbox, NULL, NULL, 0 },
	{ "GET",    "/sandboxes/{id}/metrics", API_BODY_NONE, metrics, NULL, NULL, 0 },
	/* the Secret client (e2b_secrets.c) */
	{ "POST",   "/sandboxes/{id}/fork", API_BODY_JSON, e2b_fork, NULL, NULL, 0 },
	{ "POST",   "/sandboxes/{id}/snapshots", API_BODY_JSON, e2b_snapshot_create, NULL, NULL, 0 },
	{ "GET",    "/snapshots", API_BODY_NONE, e2b_snapshot_list, NULL, NULL, 0 },
	{ "POST",   "/templates/tags", API_BODY_JSON, e2b_template_tags_assign, NULL, NULL, 0 },
	{ "DELETE", "/templates/tags", API_BODY_JSON, e2b_template_tags_remove, NULL, NULL, 0 },
	{ "GET",    "/templates/{tid}/tags", API_BODY_NONE, e2b_template_tags_list, NULL, NULL,
		    0 },
	{ "DELETE", "/templates/{tid}", API_BODY_NONE, e2b_snapshot_delete, NULL, NULL, 0 },
	{ "GET",    "/secrets", API_BODY_NONE, e2b_secret_list, NULL, NULL, 0 },
	{ "POST",   "/secrets", API_BODY_JSON, e2b_secret_create, NULL, NULL, 0 },
	{ "GET",    "/secrets/{sid}", API_BODY_NONE, e2b_secret_get, NULL, NULL, 0 },
	{ "POST",   "/secrets/{sid}", API_BODY_JSON, e2b_secret_update, NULL, NULL, 0 },
	{ "DELETE", "/secrets/{sid}", API_BODY_NONE, e2b_secret_delete, NULL, NULL, 0 },
	/* the Volume client (e2b_volumes.c); its content routes take the volume's token */
	{ "GET",    "/volumes", API_BODY_NONE, e2b_volume_list, NULL, NULL, 0 },
	{ "POST",   "/volumes", API_BODY_JSON, e2b_volume_create, NULL, NULL, 0 },
	{ "GET",    "/volumes/{vid}", API_BODY_NONE, e2b_volume_get, NULL, NULL, 0 },
	{ "DELETE", "/volumes/{vid}", API_BODY_NONE, e2b_volume_delete, NULL, NULL, 0 },
	{ "GET",    "/volumecontent/{vid}/path", API_BODY_NONE, e2b_volume_stat, NULL, NULL, OWN },
	{ "PATCH",  "/volumecontent/{vid}/path", API_BODY_JSON, e2b_volume_setattr, NULL, NULL,
		    OWN },
	{ "DELETE", "/volumecontent/{vid}/path", API_BODY_NONE, e2b_volume_remove, NULL, NULL,
		    OWN },
	{ "GET",    "/volumecontent/{vid}/dir", API_BODY_NONE, e2b_volume_list_dir, NULL, NULL,
		    OWN },
	{ "POST",   "/volumecontent/{vid}/dir", API_BODY_NONE, e2b_volume_mkdir, NULL, NULL, OWN },
	{ "GET",    "/volumecontent/{vid}/file", API_BODY_NONE, e2b_volume_read, NULL, NULL, OWN },
	{ "PUT",    "/volumecontent/{vid}/file", API_BODY_RAW, e2b_volume_write,
		    e2b_volume_write_begin, e2b_volume_write_chunk, OWN },
	/* template builds (e2b_template.c); the upload URL carries its own token */
	{ "POST",   "/v3/templates", API_BODY_JSON, e2b_template_request, NULL, NULL, 0 },
	{ "GET",    "/templates/aliases/{alias}", API_BODY_NONE, e2b_template_alias, NULL, NULL,
		    0 },
	{ "GET",    "/templates/{tid}/files/{hash}", API_BODY_NONE, e2b_template_files_link,
		    NULL, NULL, 0 },
	{ "PUT",    "/templates/{tid}/files/{hash}", API_BODY_RAW, e2b_template_upload,
		    e2b_template_upload_begin, e2b_template_upload_chunk, OWN },
	{ "POST",   "/v2/templates/{tid}/builds/{bid}", API_BODY_JSON, e2b_template_build_start,
		    NULL, NULL, 0 },
	{ "GET",    "/templates/{tid}/builds/{bid}/status", API_BODY_NONE,
		    e2b_template_build_status, NULL, NULL, 0 },
	/* sandbox plane (E2b-Sandbox-Id; per-sandbox tokens, checked by the handlers) */
	{ "GET",    "/health", API_BODY_NONE, e2b_envd_health, NULL, NULL, OWN },
	{ "GET",    "/files", API_BODY_NONE, e2b_files_get, NULL, NULL, OWN },
	{ "POST",   "/files", API_BODY_RAW, e2b_files_post, e2b_files_post_begin,
		    e2b_files_post_chunk, OWN },
	{ "POST",   "/process.Process/{m}", API_BODY_RAW, e2b_rpc, NULL, api_body_append, OWN },
	{ "POST",   "/filesystem.Filesystem/{m}", API_BODY_RAW, e2b_rpc, NULL, api_body_append,
		    OWN },
	{ "POST",   "/execute", API_BODY_JSON, e2b_execute, NULL, NULL, OWN },
	{ "POST",   "/contexts", API_BODY_JSON, e2b_contexts_create, NULL, NULL, OWN },
	{ "GET",    "/contexts", API_BODY_NONE, e2b_contexts_list, NULL, NULL, OWN },
	{ "DELETE", "/contexts/{cid}", API_BODY_NONE, e2b_contexts_delete, NULL, NULL, OWN },
	{ "POST",   "/contexts/{cid}/restart", API_BODY_NONE, e2b_contexts_restart, NULL, NULL,
		    OWN },
};
/* clang-format on */

const api_facade api_facade_e2b = {
    .name = "e2b",
    .claims = claims,
    .routes = routes,
    .nroutes = sizeof(routes) / sizeof(routes[0]),
    .no_route = no_route,
    .unauthorized = unauthorized,
    .gate = gate,
};
