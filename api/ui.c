/* ui.c — the dashboard (docs/dashboard.md): its files at /ui/ (built by `make` into
 * ui_assets.c), sign-in (an API key or a one-time token from `sandlot ui`, exchanged for a
 * session cookie), and the cookie's checks for /v1 (api_ui_cookie_auth, from server.c).
 *
 * Cookies ignore ports, so a cookie set for 127.0.0.1 would reach every sandbox port
 * relayed there: the dashboard lives on its own host name, sandlot.localhost:PORT, its
 * cookie is for that host only (no Domain), HttpOnly and SameSite=Strict, a request it
 * authenticates must come from that origin when it changes anything, and the preview
 * proxy and the port relays cut it out of what they forward (ports_parse.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "clock.h"
#include "http.h"
#include "ui.h"

#define UI_HOST	     "sandlot.localhost"
#define TOKEN_HEX    API_KEY_LEN /* so api_key_equal compares them */
#define SESSIONS_MAX 256
#define TOKENS_MAX   32
#define SESSION_MS   (12 * 3600 * 1000ll) /* a sign-in lasts a working day */
#define TOKEN_MS     (5 * 60 * 1000ll)	  /* a `sandlot ui` link, five minutes */

typedef struct ui_entry {
	char secret[TOKEN_HEX + 1];
	char owner[SL_OWNER_LEN];
	int64_t expires_ms; /* 0: a free slot */
} ui_entry;

struct api_ui {
	pthread_mutex_t mu;
	ui_entry sessions[SESSIONS_MAX];
	ui_entry tokens[TOKENS_MAX]; /* one-time login tokens */
};

static struct api_ui *ui_of(api_server *s)
{
	pthread_mutex_lock(&s->lock);
	if (!s->ui) {
		s->ui = calloc(1, sizeof(*s->ui));
		if (s->ui)
			pthread_mutex_init(&s->ui->mu, NULL);
	}
	pthread_mutex_unlock(&s->lock);
	return s->ui;
}

static int random_hex(char out[TOKEN_HEX + 1], sl_err *err)
{
	unsigned char rnd[TOKEN_HEX / 2];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return sl_sysfail(err, "dashboard token");
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(out + 2 * i, 3, "%02x", rnd[i]);
	return 0;
}

/* A new entry in TABLE (N slots) for OWNER: a free or expired slot, else the oldest. */
static int entry_new(api_server *s, bool session, const char *owner, int64_t ttl,
		     char secret[TOKEN_HEX + 1], sl_err *err)
{
	struct api_ui *u = ui_of(s);
	if (!u)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "dashboard sessions");
	if (random_hex(secret, err) < 0)
		return -1;
	pthread_mutex_lock(&u->mu);
	ui_entry *t = session ? u->sessions : u->tokens;
	size_t n = session ? SESSIONS_MAX : TOKENS_MAX, at = 0;
	int64_t now = sl_mono_ms();
	for (size_t i = 0; i < n; i++) {
		if (t[i].expires_ms <= now) {
			at = i;
			break;
		}
		if (t[i].expires_ms < t[at].expires_ms)
			at = i;
	}
	snprintf(t[at].secret, sizeof(t[at].secret), "%s", secret);
	snprintf(t[at].owner, sizeof(t[at].owner), "%s", owner);
	t[at].expires_ms = now + ttl;
	pthread_mutex_unlock(&u->mu);
	return 0;
}

/* The owner of a live entry with SECRET (constant-time compare); a token is used up. */
static bool entry_find(api_server *s, bool session, const char *secret, char owner[SL_OWNER_LEN])
{
	struct api_ui *u = ui_of(s);
	if (!u || !secret || strlen(secret) != TOKEN_HEX)
		return false;
	bool found = false;
	pthread_mutex_lock(&u->mu);
	ui_entry *t = session ? u->sessions : u->tokens;
	size_t n = session ? SESSIONS_MAX : TOKENS_MAX;
	int64_t now = sl_mono_ms();
	for (size_t i = 0; i < n && !found; i++) {
		if (t[i].expires_ms <= now || !api_key_equal(secret, t[i].secret))
			continue;
		found = true;
		memcpy(owner, t[i].owner, SL_OWNER_LEN);
		if (!session)
			t[i].expires_ms = 0;
	}
	pthread_mutex_unlock(&u->mu);
	return found;
}

static void entry_drop(api_server *s, const char *secret)
{
	struct api_ui *u = ui_of(s);
	if (!u || !secret)
		return;
	pthread_mutex_lock(&u->mu);
	for (size_t i = 0; i < SESSIONS_MAX; i++)
		if (u->sessions[i].expires_ms && api_key_equal(secret, u->sessions[i].secret))
			u->sessions[i].expires_ms = 0;
	pthread_mutex_unlock(&u->mu);
}

/* ---- the request's host, origin and cookie ---- */

static const char *header(api_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* Host is sandlot.localhost[:PORT]. */
static bool host_ok(api_req *r)
{
	const char *host = header(r, "Host");
	size_t n = strlen(UI_HOST);
	return host && !strncasecmp(host, UI_HOST, n) && (host[n] == '\0' || host[n] == ':');
}

/* Origin is the dashboard's own: "http(s)://" + Host, on the dashboard's host. */
static bool origin_ok(api_req *r)
{
	const char *origin = header(r, "Origin"), *host = header(r, "Host");
	if (!origin || !host || !host_ok(r))
		return false;
	const char *rest = !strncasecmp(origin, "http://", 7)	 ? origin + 7
			   : !strncasecmp(origin, "https://", 8) ? origin + 8
								 : NULL;
	return rest && !strcasecmp(rest, host);
}

/* The value of our cookie in R's Cookie header (into OUT), or false. */
static bool cookie_value(api_req *r, char out[TOKEN_HEX + 1])
{
	const char *c = header(r, "Cookie");
	size_t nl = strlen(UI_COOKIE_NAME);
	for (const char *p = c; p && *p;) {
		while (*p == ' ' || *p == ';')
			p++;
		size_t len = strcspn(p, ";");
		if (len == nl + 1 + TOKEN_HEX && !strncmp(p, UI_COOKIE_NAME "=", nl + 1)) {
			memcpy(out, p + nl + 1, TOKEN_HEX);
			out[TOKEN_HEX] = '\0';
			return true;
		}
		p += len;
	}
	return false;
}

static bool safe_method(const char *m)
{
	return !strcmp(m, "GET") || !strcmp(m, "HEAD") || !strcmp(m, "OPTIONS");
}

int api_ui_cookie_auth(api_req *r)
{
	char secret[TOKEN_HEX + 1];
	if (!cookie_value(r, secret) || !host_ok(r) || !entry_find(r->srv, true, secret, r->owner))
		return 0;
	/* A change, or a WebSocket (browsers send Origin with both), from another page is a
	 * forged request carrying our cookie: refused. */
	if ((!safe_method(r->method) || header(r, "Origin")) && !origin_ok(r))
		return -1;
	return 1;
}

enum MHD_Result api_ui_reply_forbidden(api_req *r)
{
	return api_reply(r, 403,
			 api_error_response("UNAUTHENTICATED",
					    "the dashboard's session may only be used from its own "
					    "page (Origin http://" UI_HOST ":PORT)",
					    NULL));
}

/* ---- routes ---- */

static bool ui_claims(api_req *r)
{
	return !strcmp(r->url, "/ui") || !strncmp(r->url, "/ui/", 4);
}

/* Not on the dashboard's host name: sent there (GET), refused otherwise. */
static int ui_gate(api_req *r, enum MHD_Result *ret)
{
	if (!r->keyed || host_ok(r))
		return 0;
	const char *host = header(r, "Host");
	const char *port = host ? strrchr(host, ':') : NULL;
	if (port && strchr(port, ']'))
		port = NULL;
	if (!safe_method(r->method)) {
		*ret = api_fail(r, SL_INVALID, "the dashboard answers on http://%s%s/ui/ only",
				UI_HOST, port ? port : "");
		return -1;
	}
	char loc[128];
	snprintf(loc, sizeof(loc), "http://%s%.10s/ui/", UI_HOST, port ? port : "");
	struct MHD_Response *resp = api_error_response(
	    "NOT_FOUND", "the dashboard is at http://" UI_HOST ":PORT/ui/", NULL);
	if (resp)
		MHD_add_response_header(resp, "Location", loc);
	*ret = api_reply(r, 307, resp);
	return -1;
}

static const ui_asset *asset_find(const char *path)
{
	for (const ui_asset *a = ui_assets; a->path; a++)
		if (!strcmp(a->path, path))
			return a;
	return NULL;
}

static enum MHD_Result serve_asset(api_req *r, const char *path)
{
	const ui_asset *a = asset_find(path);
	if (!a)
		return api_fail(r, SL_NOTFOUND, "no dashboard file %s", r->url);
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return api_fail(r, SL_INTERNAL, "answer %s: out of memory", r->url);
	MHD_add_response_header(resp, "Content-Type", a->type);
	MHD_add_response_header(resp, "Cache-Control", "no-cache");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "X-Frame-Options", "DENY");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(resp, "Content-Security-Policy",
				"default-src 'self'; connect-src 'self'; img-src 'self' data:; "
				"style-src 'self' 'unsafe-inline'; frame-ancestors 'none'");
	return api_reply(r, 200, resp);
}

static enum MHD_Result ui_index(api_req *r)
{
	if (!strcmp(r->url, "/ui")) {
		struct MHD_Response *resp =
		    MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
		if (resp)
			MHD_add_response_header(resp, "Location", "/ui/");
		return api_reply(r, 308, resp);
	}
	return serve_asset(r, "index.html");
}

static enum MHD_Result ui_file(api_req *r)
{
	return serve_asset(r, r->param[0]);
}

static enum MHD_Result set_cookie(api_req *r, const char *secret, int max_age)
{
	char c[256];
	snprintf(c, sizeof(c), UI_COOKIE_NAME "=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%d",
		 secret, max_age);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "ok", true);
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	struct MHD_Response *resp =
	    text ? MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE)
		 : NULL;
	if (!resp) {
		free(text);
		return api_fail(r, SL_INTERNAL, "sign-in: out of memory");
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	MHD_add_response_header(resp, "Set-Cookie", c);
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	return api_reply(r, 200, resp);
}

/* POST /ui/login {key} or {token}: a session cookie. From the dashboard's page only. */
static enum MHD_Result ui_login(api_req *r)
{
	static const char *const fields[] = {"key", "token", NULL};
	const cJSON *body;
	const char *key = NULL, *token = NULL;
	sl_err err = {0};
	if (!origin_ok(r))
		return api_ui_reply_forbidden(r);
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_fields(body, "", fields, &err) < 0 ||
	    api_json_string(body, "", "key", &key, &err) < 0 ||
	    api_json_string(body, "", "token", &token, &err) < 0)
		return api_reply_error(r, &err);
	char owner[SL_OWNER_LEN] = "";
	bool ok = token ? entry_find(r->srv, false, token, owner)
			: key && api_key_identify(&r->srv->ctx->cfg, r->srv->key, key, owner) == 0;
	if (!ok)
		return api_reply(
		    r, 401,
		    api_error_response("UNAUTHENTICATED",
				       token ? "this sign-in link is used or expired: run "
					       "`sandlot ui` for another"
					     : "that is not an API key of this daemon "
					       "(`sandlot key` prints the admin's)",
				       NULL));
	char secret[TOKEN_HEX + 1];
	if (entry_new(r->srv, true, owner, SESSION_MS, secret, &err) < 0)
		return api_reply_error(r, &err);
	return set_cookie(r, secret, (int)(SESSION_MS / 1000));
}

static enum MHD_Result ui_logout(api_req *r)
{
	char secret[TOKEN_HEX + 1];
	if (!origin_ok(r))
		return api_ui_reply_forbidden(r);
	if (cookie_value(r, secret))
		entry_drop(r->srv, secret);
	return set_cookie(r, "", 0);
}

/* POST /ui/token, on the unix socket only (`sandlot ui`): a one-time sign-in token for
 * the admin, and the dashboard's address when the daemon listens on TCP. */
static enum MHD_Result ui_token(api_req *r)
{
	if (r->keyed)
		return api_fail(r, SL_NOTFOUND,
				"no route POST /ui/token on this listener "
				"(`sandlot ui` asks on the unix socket)");
	char secret[TOKEN_HEX + 1];
	sl_err err = {0};
	if (entry_new(r->srv, false, "", TOKEN_MS, secret, &err) < 0)
		return api_reply_error(r, &err);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "token", secret);
	if (r->srv->tcp_port) {
		char url[256];
		snprintf(url, sizeof(url), "http://%s:%u/ui/#token=%s", UI_HOST,
			 (unsigned)r->srv->tcp_port, secret);
		cJSON_AddStringToObject(o, "url", url);
	} else {
		cJSON_AddNullToObject(o, "url");
	}
	cJSON_AddNumberToObject(o, "expiresInSeconds", TOKEN_MS / 1000);
	return api_reply_json(r, 200, o);
}

static void ui_stop(api_server *s)
{
	if (!s->ui)
		return;
	explicit_bzero(s->ui, sizeof(*s->ui));
	free(s->ui);
	s->ui = NULL;
}

/* clang-format off */
static const api_route ui_routes[] = {
	{ "GET",  "/ui", API_BODY_NONE, ui_index, NULL, NULL, API_ROUTE_OWN_AUTH },
	{ "GET",  "/ui/", API_BODY_NONE, ui_index, NULL, NULL, API_ROUTE_OWN_AUTH },
	{ "POST", "/ui/login", API_BODY_JSON, ui_login, NULL, NULL, API_ROUTE_OWN_AUTH },
	{ "POST", "/ui/logout", API_BODY_NONE, ui_logout, NULL, NULL, API_ROUTE_OWN_AUTH },
	{ "POST", "/ui/token", API_BODY_NONE, ui_token, NULL, NULL, API_ROUTE_OWN_AUTH },
	{ "GET",  "/ui/{file+}", API_BODY_NONE, ui_file, NULL, NULL, API_ROUTE_OWN_AUTH },
};
/* clang-format on */

const api_facade api_facade_ui = {.name = "ui",
				  .claims = ui_claims,
				  .routes = ui_routes,
				  .nroutes = sizeof(ui_routes) / sizeof(ui_routes[0]),
				  /* GET /ui/login is the POST route's 405, not a file */
				  .literal_wins = true,
				  .gate = ui_gate,
				  .stop = ui_stop};
