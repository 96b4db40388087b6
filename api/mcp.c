/* mcp.c — the Model Context Protocol at /mcp (docs/mcp.md): JSON-RPC 2.0 over streamable
 * HTTP (POST answers in application/json, sessions by Mcp-Session-Id), tools in mcp_tools.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "clock.h"
#include "mcp.h"

/* Protocol versions spoken, newest first: an initialize naming another gets the first. */
static const char *const versions[] = {"2025-06-18", "2025-03-26", "2024-11-05", NULL};

/* JSON-RPC's codes, and two of the server range for the transport's refusals. */
#define RPC_PARSE_ERROR	     -32700
#define RPC_INVALID_REQUEST  -32600
#define RPC_METHOD_NOT_FOUND -32601
#define RPC_INVALID_PARAMS   -32602
#define RPC_INTERNAL	     -32603
#define RPC_REFUSED	     -32000 /* no session, a foreign Origin, no key */
#define RPC_NO_SESSION	     -32001 /* an unknown or ended session */

#define SESSIONS_MAX 1024
#define SESSION_HEX  32

/* ---- sessions: made by initialize, named by Mcp-Session-Id, ended by DELETE ---- */

typedef struct mcp_session {
	char id[SESSION_HEX + 1];
	char owner[SL_OWNER_LEN]; /* the key that made it: only that key may use it */
	char version[16];
	int64_t used_ms;
} mcp_session;

struct mcp_sessions {
	pthread_mutex_t mu;
	mcp_session s[SESSIONS_MAX];
	size_t n;
};

static struct mcp_sessions *sessions(api_server *s)
{
	pthread_mutex_lock(&s->lock);
	if (!s->mcp) {
		s->mcp = calloc(1, sizeof(*s->mcp));
		if (s->mcp)
			pthread_mutex_init(&s->mcp->mu, NULL);
	}
	pthread_mutex_unlock(&s->lock);
	return s->mcp;
}

/* A new session for R's key; past SESSIONS_MAX the least recently used one ends. */
static int session_new(api_req *r, const char *version, char id[SESSION_HEX + 1], sl_err *err)
{
	struct mcp_sessions *t = sessions(r->srv);
	unsigned char rnd[SESSION_HEX / 2];
	if (!t)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "MCP sessions");
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return sl_sysfail(err, "MCP session id");
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(id + 2 * i, 3, "%02x", rnd[i]);
	pthread_mutex_lock(&t->mu);
	size_t at = t->n;
	if (t->n == SESSIONS_MAX) {
		at = 0;
		for (size_t i = 1; i < t->n; i++)
			if (t->s[i].used_ms < t->s[at].used_ms)
				at = i;
	} else {
		t->n++;
	}
	mcp_session *s = &t->s[at];
	snprintf(s->id, sizeof(s->id), "%s", id);
	snprintf(s->owner, sizeof(s->owner), "%s", r->owner);
	snprintf(s->version, sizeof(s->version), "%s", version);
	s->used_ms = sl_mono_ms();
	pthread_mutex_unlock(&t->mu);
	return 0;
}

/* Is ID a session of R's key (marking it used)? With END, it ends. */
static bool session_use(api_req *r, const char *id, bool end)
{
	struct mcp_sessions *t = sessions(r->srv);
	bool found = false;
	if (!t || strlen(id) != SESSION_HEX)
		return false;
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->n && !found; i++) {
		if (strcmp(t->s[i].id, id) || strcmp(t->s[i].owner, r->owner))
			continue;
		found = true;
		t->s[i].used_ms = sl_mono_ms();
		if (end)
			t->s[i] = t->s[--t->n];
	}
	pthread_mutex_unlock(&t->mu);
	return found;
}

static void mcp_stop(api_server *s)
{
	if (!s->mcp)
		return;
	pthread_mutex_destroy(&s->mcp->mu);
	free(s->mcp);
	s->mcp = NULL;
}

/* ---- replies ---- */

static cJSON *rpc_id(const cJSON *id)
{
	return id ? cJSON_Duplicate(id, false) : cJSON_CreateNull();
}

static cJSON *rpc_result(const cJSON *id, cJSON *result)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	cJSON_AddItemToObject(o, "id", rpc_id(id));
	cJSON_AddItemToObject(o, "result", result);
	return o;
}

static cJSON *rpc_error(const cJSON *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static cJSON *rpc_error(const cJSON *id, int code, const char *fmt, ...)
{
	char msg[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	cJSON_AddItemToObject(o, "id", rpc_id(id));
	cJSON *e = cJSON_AddObjectToObject(o, "error");
	cJSON_AddNumberToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", msg);
	return o;
}

/* BODY (taken) as application/json, with the header NAME: VALUE when NAME. */
static enum MHD_Result reply_rpc_with(api_req *r, unsigned status, cJSON *body, const char *name,
				      const char *value)
{
	char *s = body ? cJSON_PrintUnformatted(body) : NULL;
	cJSON_Delete(body);
	if (!s)
		return MHD_NO;
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(s);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	if (name)
		MHD_add_response_header(resp, name, value);
	return api_reply(r, status, resp);
}

/* With the session's id when SESSION (initialize's answer). */
static enum MHD_Result reply_rpc(api_req *r, unsigned status, cJSON *body, const char *session)
{
	return reply_rpc_with(r, status, body, session ? "Mcp-Session-Id" : NULL, session);
}

/* A refusal of the whole HTTP request: STATUS and a JSON-RPC error with no id. */
static enum MHD_Result refuse(api_req *r, unsigned status, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static enum MHD_Result refuse(api_req *r, unsigned status, int code, const char *fmt, ...)
{
	char msg[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return reply_rpc(r, status, rpc_error(NULL, code, "%s", msg), NULL);
}

/* ---- the transport's checks ---- */

static const char *header(api_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* DNS rebinding: a browser page may reach a loopback port under any host name, and sends
 * its Origin. Allowed: no Origin (every non-browser client), or the Origin of the daemon's
 * own address under a loopback name; never a sandbox's page (the relays and the preview
 * proxy are other ports, so other origins). */
static bool origin_ok(api_req *r)
{
	const char *origin = header(r, "Origin"), *host = header(r, "Host");
	if (!origin)
		return true;
	const char *rest = !strncasecmp(origin, "http://", 7)	 ? origin + 7
			   : !strncasecmp(origin, "https://", 8) ? origin + 8
								 : NULL;
	if (!rest || !host || strcasecmp(rest, host))
		return false;
	size_t n = host[0] == '[' ? strcspn(host, "]") + 1 : strcspn(host, ":");
	static const char *const names[] = {"localhost", "127.0.0.1", "[::1]", "sandlot.localhost",
					    NULL};
	for (const char *const *k = names; *k; k++)
		if (strlen(*k) == n && !strncasecmp(host, *k, n))
			return true;
	return false;
}

static bool version_known(const char *v)
{
	for (const char *const *k = versions; *k; k++)
		if (!strcmp(*k, v))
			return true;
	return false;
}

/* ---- methods ---- */

static cJSON *tools_list(void)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "tools");
	for (size_t i = 0; i < mcp_ntools; i++) {
		const mcp_tool *t = &mcp_tools[i];
		cJSON *it = cJSON_CreateObject();
		cJSON_AddStringToObject(it, "name", t->name);
		cJSON_AddStringToObject(it, "title", t->title);
		cJSON_AddStringToObject(it, "description", t->description);
		cJSON_AddItemToObject(it, "inputSchema", cJSON_Parse(t->input_schema));
		cJSON *ann = cJSON_AddObjectToObject(it, "annotations");
		cJSON_AddBoolToObject(ann, "readOnlyHint",
				      !strcmp(t->name, "sandbox_list") ||
					  !strcmp(t->name, "file_read") ||
					  !strcmp(t->name, "file_list"));
		cJSON_AddBoolToObject(ann, "destructiveHint",
				      !strcmp(t->name, "sandbox_delete") ||
					  !strcmp(t->name, "file_write"));
		cJSON_AddBoolToObject(ann, "openWorldHint", false);
		cJSON_AddItemToArray(arr, it);
	}
	return o;
}

/* A tool's answer: its result, or its failure as a tool error the model reads. */
static cJSON *tool_result(int rc, cJSON *out, char *text, const sl_err *err)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *content = cJSON_AddArrayToObject(o, "content");
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "type", "text");
	cJSON_AddItemToArray(content, c);
	if (rc < 0) {
		sl_kind kind = err->kind ? err->kind : SL_INTERNAL;
		const char *msg = err->msg[0] ? err->msg : "internal error";
		cJSON_AddStringToObject(c, "text", msg);
		cJSON *sc = cJSON_AddObjectToObject(o, "structuredContent");
		cJSON *e = cJSON_AddObjectToObject(sc, "error");
		cJSON_AddStringToObject(e, "code", sl_kind_code(kind));
		cJSON_AddStringToObject(e, "message", msg);
		cJSON_AddBoolToObject(o, "isError", true);
		return o;
	}
	char *printed = text ? NULL : cJSON_PrintUnformatted(out);
	cJSON_AddStringToObject(c, "text", text ? text : printed ? printed : "");
	free(printed);
	cJSON_AddItemToObject(o, "structuredContent", out);
	cJSON_AddBoolToObject(o, "isError", false);
	return o;
}

static cJSON *tools_call(api_req *r, const cJSON *id, const cJSON *params)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	if (!cJSON_IsString(name))
		return rpc_error(id, RPC_INVALID_PARAMS,
				 "tools/call: params.name: required (a tool "
				 "from tools/list)");
	const mcp_tool *t = NULL;
	for (size_t i = 0; i < mcp_ntools && !t; i++)
		if (!strcmp(mcp_tools[i].name, name->valuestring))
			t = &mcp_tools[i];
	if (!t)
		return rpc_error(id, RPC_INVALID_PARAMS,
				 "Unknown tool: %.200s (tools/list names them)", name->valuestring);
	if (args && !cJSON_IsNull(args) && !cJSON_IsObject(args))
		return rpc_error(id, RPC_INVALID_PARAMS,
				 "tools/call: params.arguments: expected an "
				 "object");
	cJSON *empty = NULL;
	if (!cJSON_IsObject(args))
		args = empty = cJSON_CreateObject();
	cJSON *out = NULL;
	char *text = NULL;
	sl_err err = {0};
	int rc = t->call(r, args, &out, &text, &err);
	if (rc < 0)
		cJSON_Delete(out);
	cJSON *res = tool_result(rc, rc < 0 ? NULL : out, text, &err);
	free(text);
	cJSON_Delete(empty);
	return rpc_result(id, res);
}

/* One message of a session: its response, or NULL for a notification or a response. */
static cJSON *rpc_handle(api_req *r, const cJSON *m)
{
	if (!cJSON_IsObject(m))
		return rpc_error(NULL, RPC_INVALID_REQUEST,
				 "Invalid Request: expected a JSON-RPC 2.0 object");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "jsonrpc");
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(m, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(m, "params");
	if (id && !cJSON_IsString(id) && !cJSON_IsNumber(id))
		return rpc_error(NULL, RPC_INVALID_REQUEST,
				 "Invalid Request: id must be a string or a number");
	if (!cJSON_IsString(v) || strcmp(v->valuestring, "2.0"))
		return rpc_error(id, RPC_INVALID_REQUEST,
				 "Invalid Request: jsonrpc must be \"2.0\"");
	if (!method) {
		/* A client's response: this server sends no requests, so nothing waits for it. */
		if (id && (cJSON_HasObjectItem(m, "result") || cJSON_HasObjectItem(m, "error")))
			return NULL;
		return rpc_error(id, RPC_INVALID_REQUEST, "Invalid Request: no method");
	}
	if (!cJSON_IsString(method))
		return rpc_error(id, RPC_INVALID_REQUEST,
				 "Invalid Request: method must be a string");
	if (!id)
		return NULL; /* notifications/initialized, cancelled, ...: nothing to answer */
	if (params && !cJSON_IsObject(params))
		return rpc_error(id, RPC_INVALID_PARAMS, "%s: params must be an object",
				 method->valuestring);
	const char *name = method->valuestring;
	if (!strcmp(name, "ping"))
		return rpc_result(id, cJSON_CreateObject());
	if (!strcmp(name, "tools/list"))
		return rpc_result(id, tools_list());
	if (!strcmp(name, "tools/call"))
		return tools_call(r, id, params);
	if (!strcmp(name, "initialize"))
		return rpc_error(id, RPC_INVALID_REQUEST,
				 "initialize starts a session: send it alone, without "
				 "Mcp-Session-Id");
	return rpc_error(id, RPC_METHOD_NOT_FOUND, "Method not found: %.200s", name);
}

static enum MHD_Result initialize(api_req *r, const cJSON *m)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(m, "params");
	const cJSON *want = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
	if (!id || !(cJSON_IsString(id) || cJSON_IsNumber(id)))
		return refuse(r, 400, RPC_INVALID_REQUEST,
			      "Invalid Request: initialize is a request (it needs an id)");
	if (!cJSON_IsString(want))
		return reply_rpc(r, 200,
				 rpc_error(id, RPC_INVALID_PARAMS,
					   "initialize: params.protocolVersion: required"),
				 NULL);
	/* The client's version when spoken here, else the newest here (the client then
	 * goes on or disconnects). */
	const char *version = version_known(want->valuestring) ? want->valuestring : versions[0];
	char sid[SESSION_HEX + 1];
	sl_err err = {0};
	if (session_new(r, version, sid, &err) < 0)
		return refuse(r, 500, RPC_INTERNAL, "%s", err.msg);
	cJSON *res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "protocolVersion", version);
	cJSON *tools =
	    cJSON_AddObjectToObject(cJSON_AddObjectToObject(res, "capabilities"), "tools");
	cJSON_AddBoolToObject(tools, "listChanged", false);
	cJSON *info = cJSON_AddObjectToObject(res, "serverInfo");
	cJSON_AddStringToObject(info, "name", "sandlot");
	cJSON_AddStringToObject(info, "title", "sandlot local sandboxes");
	cJSON_AddStringToObject(info, "version", SANDLOT_VERSION);
	cJSON_AddStringToObject(
	    res, "instructions",
	    "sandlot runs isolated Linux sandboxes on this machine. run_code runs a snippet in a "
	    "throw-away sandbox; for more, sandbox_create one, then sandbox_exec, file_write, "
	    "file_read and file_list in it, and sandbox_delete it when done. Sandboxes have no "
	    "network unless created with network.enabled.");
	return reply_rpc(r, 200, rpc_result(id, res), sid);
}

/* ---- routes ---- */

static int mcp_post_begin(api_req *r, sl_err *err)
{
	r->cap = r->srv->opt.max_json; /* a JSON route's cap, though the body comes raw */
	return 0;
}

static int mcp_post_chunk(api_req *r, const char *data, size_t len, sl_err *err)
{
	return api_body_append(r, data, len, err);
}

static bool is_method(const cJSON *m, const char *name)
{
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(m, "method");
	return cJSON_IsString(method) && !strcmp(method->valuestring, name);
}

static enum MHD_Result mcp_post(api_req *r)
{
	if (!origin_ok(r))
		return refuse(r, 403, RPC_REFUSED, "Origin %s may not call this server",
			      header(r, "Origin"));
	const char *pv = header(r, "MCP-Protocol-Version");
	if (pv && !version_known(pv))
		return refuse(
		    r, 400, RPC_INVALID_REQUEST,
		    "MCP-Protocol-Version %.40s: this server speaks 2025-06-18, 2025-03-26 "
		    "and 2024-11-05",
		    pv);
	sl_err err = {0};
	cJSON *msg = api_json_parse(r->body ? r->body : "", r->body_len, &err);
	if (!msg)
		return refuse(r, 400, RPC_PARSE_ERROR, "Parse error: %s", err.msg);
	bool batch = cJSON_IsArray(msg);
	enum MHD_Result ret;
	if (!batch && is_method(msg, "initialize")) {
		ret = initialize(r, msg);
		cJSON_Delete(msg);
		return ret;
	}
	const char *sid = header(r, "Mcp-Session-Id");
	if (batch && !cJSON_GetArraySize(msg))
		ret = refuse(r, 400, RPC_INVALID_REQUEST, "Invalid Request: an empty batch");
	else if (!sid)
		ret = refuse(r, 400, RPC_REFUSED,
			     "Bad Request: no Mcp-Session-Id header (send initialize first; its "
			     "answer carries the session's id)");
	else if (!session_use(r, sid, false))
		ret =
		    refuse(r, 404, RPC_NO_SESSION,
			   "Session not found: %.64s is unknown or ended (initialize again)", sid);
	else if (!batch) {
		cJSON *resp = rpc_handle(r, msg);
		ret = resp ? reply_rpc(r, 200, resp, NULL) : api_reply_empty(r, 202);
	} else {
		cJSON *out = cJSON_CreateArray();
		const cJSON *m;
		cJSON_ArrayForEach(m, msg)
		{
			cJSON *resp = rpc_handle(r, m);
			if (resp)
				cJSON_AddItemToArray(out, resp);
		}
		if (cJSON_GetArraySize(out))
			ret = reply_rpc(r, 200, out, NULL);
		else {
			cJSON_Delete(out);
			ret = api_reply_empty(r, 202);
		}
	}
	cJSON_Delete(msg);
	return ret;
}

static enum MHD_Result mcp_delete(api_req *r)
{
	const char *sid = header(r, "Mcp-Session-Id");
	if (!origin_ok(r))
		return refuse(r, 403, RPC_REFUSED, "Origin %s may not call this server",
			      header(r, "Origin"));
	if (!sid)
		return refuse(r, 400, RPC_REFUSED, "Bad Request: no Mcp-Session-Id header");
	if (!session_use(r, sid, true))
		return refuse(r, 404, RPC_NO_SESSION, "Session not found: %.64s", sid);
	return api_reply_empty(r, 204);
}

static bool mcp_claims(api_req *r)
{
	return !strcmp(r->url, "/mcp");
}

/* GET (a server-sent event stream) is not offered: every answer comes with its POST. */
static enum MHD_Result mcp_no_route(api_req *r, bool path_known, const char *allow)
{
	return reply_rpc_with(
	    r, 405,
	    rpc_error(NULL, RPC_REFUSED, "%s /mcp: this server answers %s", r->method, allow),
	    "Allow", allow);
}

static enum MHD_Result mcp_unauthorized(api_req *r)
{
	return reply_rpc_with(r, 401,
			      rpc_error(NULL, RPC_REFUSED,
					"Unauthorized: /mcp on the TCP listener needs the API key: "
					"send \"Authorization: Bearer KEY\" (`sandlot key`)"),
			      "WWW-Authenticate", "Bearer");
}

/* clang-format off */
static const api_route mcp_routes[] = {
	{ "POST",   "/mcp", API_BODY_RAW, mcp_post, mcp_post_begin, mcp_post_chunk },
	{ "DELETE", "/mcp", API_BODY_NONE, mcp_delete, NULL, NULL },
};
/* clang-format on */

const api_facade api_facade_mcp = {.name = "mcp",
				   .claims = mcp_claims,
				   .routes = mcp_routes,
				   .nroutes = sizeof(mcp_routes) / sizeof(mcp_routes[0]),
				   .no_route = mcp_no_route,
				   .unauthorized = mcp_unauthorized,
				   .stop = mcp_stop};
