/* test_api_mcp.c — the daemon's MCP server (/mcp, api/mcp.c) and `sandlot mcp` from C,
 * without an SDK: bad JSON-RPC gets its stable codes (-32700, -32600, -32601, -32602),
 * sessions are enforced, the TCP listener wants the key, a tool's failure is a result with
 * isError carrying the daemon's code and message, and the stdio bridge passes all of it
 * through. tests/compat/mcp drives both with the official SDK. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "api_common.h"

static const char INIT[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
			   "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
			   "\"clientInfo\":{\"name\":\"e2e\",\"version\":\"0\"}}}";

/* POST BODY to /mcp on the socket, with the session SID (NULL: none). */
static long mcp_post(e2e_resp *r, const char *sid, const char *body)
{
	char h[96];
	const char *headers[] = {h, NULL};
	snprintf(h, sizeof(h), "Mcp-Session-Id: %s", sid ? sid : "");
	e2e_req q = {.method = "POST",
		     .path = "/mcp",
		     .body = body,
		     .len = strlen(body),
		     .headers = sid ? headers : NULL};
	return e2e_http_q(r, &q);
}

/* A new session's id (caller frees). */
static char *session(void)
{
	e2e_resp r;
	assert_int_equal(mcp_post(&r, NULL, INIT), 200);
	const cJSON *res = jget(r.json, "result");
	assert_string_equal(jstr(res, "protocolVersion"), "2025-06-18");
	assert_string_equal(jstr(jget(res, "serverInfo"), "name"), "sandlot");
	const char *h = strcasestr(r.headers, "\nMcp-Session-Id: ");
	assert_non_null(h);
	char *sid = strndup(h + 17, 32);
	assert_int_equal(strspn(sid, "0123456789abcdef"), 32);
	e2e_resp_free(&r);
	return sid;
}

/* The JSON-RPC error code of R's body (its id must be ID, or null when ID is NULL). */
static int rpc_code(const e2e_resp *r, const char *id)
{
	const cJSON *e = jget(r->json, "error");
	assert_non_null(e);
	const cJSON *got = jget(r->json, "id");
	if (id) {
		char *printed = cJSON_PrintUnformatted(got);
		assert_string_equal(printed, id);
		free(printed);
	} else
		assert_true(cJSON_IsNull(got));
	assert_non_null(jstr(e, "message"));
	return (int)jnum(e, "code");
}

static void test_mcp_bad_input(void **state)
{
	e2e_resp r;
	/* Not JSON: -32700 with a null id, before any session. */
	assert_int_equal(mcp_post(&r, NULL, "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": "), 400);
	assert_int_equal(rpc_code(&r, NULL), -32700);
	assert_true(e2e_contains(jstr(jget(r.json, "error"), "message"), "malformed JSON"));
	e2e_resp_free(&r);

	char *sid = session();
	static const struct {
		const char *body, *id;
		int code;
		const char *needle;
	} cases[] = {
	    {"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"prompts/list\"}", "2", -32601,
	     "prompts/list"},
	    {"{\"jsonrpc\":\"2.0\",\"id\":\"t\",\"method\":\"tools/call\",\"params\":"
	     "{\"name\":\"format_disk\",\"arguments\":{}}}",
	     "\"t\"", -32602, "format_disk"},
	    {"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{}}", "3", -32602,
	     "params.name"},
	    {"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":"
	     "{\"name\":\"sandbox_list\",\"arguments\":[]}}",
	     "4", -32602, "arguments"},
	    {"{\"jsonrpc\":\"1.0\",\"id\":5,\"method\":\"ping\"}", "5", -32600, "2.0"},
	    {"{\"jsonrpc\":\"2.0\",\"id\":6}", "6", -32600, "no method"},
	    {"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"initialize\",\"params\":{}}", "7", -32602,
	     "protocolVersion"},
	    {"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", NULL, -32600, "id"},
	    {"42", NULL, -32600, "object"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(mcp_post(&r, sid, cases[i].body), 200);
		assert_int_equal(rpc_code(&r, cases[i].id), cases[i].code);
		if (!e2e_contains(jstr(jget(r.json, "error"), "message"), cases[i].needle))
			fail_msg("%s: %s lacks \"%s\"", cases[i].body, r.body, cases[i].needle);
		e2e_resp_free(&r);
	}
	/* A notification: 202, no body. */
	assert_int_equal(
	    mcp_post(&r, sid, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"),
	    202);
	assert_int_equal(r.len, 0);
	e2e_resp_free(&r);
	/* Sessions: none 400, unknown 404, ended 404. */
	assert_int_equal(mcp_post(&r, NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"),
			 400);
	assert_int_equal(rpc_code(&r, NULL), -32000);
	e2e_resp_free(&r);
	assert_int_equal(mcp_post(&r, "00000000000000000000000000000000",
				  "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"),
			 404);
	e2e_resp_free(&r);
	char h[96];
	const char *headers[] = {h, NULL};
	snprintf(h, sizeof(h), "Mcp-Session-Id: %s", sid);
	e2e_req del = {.method = "DELETE", .path = "/mcp", .headers = headers};
	assert_int_equal(e2e_http_q(&r, &del), 204);
	e2e_resp_free(&r);
	assert_int_equal(mcp_post(&r, sid, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"),
			 404);
	e2e_resp_free(&r);
	free(sid);

	/* The TCP listener wants the key, as /v1 does. */
	e2e_req q = {
	    .method = "POST", .path = "/mcp", .body = INIT, .len = strlen(INIT), .tcp = true};
	assert_int_equal(e2e_http_q(&r, &q), 401);
	assert_int_equal(rpc_code(&r, NULL), -32000);
	e2e_resp_free(&r);
	char *auth = e2e_printf("Authorization: Bearer %s", KEY);
	q.auth = auth;
	assert_int_equal(e2e_http_q(&r, &q), 200);
	e2e_resp_free(&r);
	free(auth);
}

/* tools/call NAME with ARGS (JSON text) in session SID: the result object (caller frees). */
static cJSON *tool_with(const char *sid, const char *name, const char *args)
{
	char *body = e2e_printf("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\","
				"\"params\":{\"name\":\"%s\",\"arguments\":%s}}",
				name, args);
	e2e_resp r;
	assert_int_equal(mcp_post(&r, sid, body), 200);
	cJSON *res = cJSON_DetachItemFromObject(r.json, "result");
	if (!res)
		fail_msg("%s: %s", body, r.body);
	e2e_resp_free(&r);
	free(body);
	return res;
}

/* The same, taking ARGS (malloc'd). */
static cJSON *tool(const char *sid, const char *name, char *args)
{
	cJSON *res = tool_with(sid, name, args);
	free(args);
	return res;
}

static bool is_error(const cJSON *res)
{
	return cJSON_IsTrue(jget(res, "isError"));
}

static void test_mcp_tools(void **state)
{
	char *sid = session();
	/* A tool's failures are results the model reads: the daemon's code and message. */
	cJSON *res =
	    tool_with(sid, "sandbox_exec",
		      "{\"sandbox_id\":\"sbx_aaaaaaaaaaaaaaaaaaaa\",\"command\":\"true\"}");
	assert_true(is_error(res));
	const cJSON *err = jget(jget(res, "structuredContent"), "error");
	assert_string_equal(jstr(err, "code"), "NOT_FOUND");
	const cJSON *text = cJSON_GetArrayItem(jget(res, "content"), 0);
	assert_string_equal(jstr(text, "type"), "text");
	assert_string_equal(jstr(text, "text"), jstr(err, "message"));
	cJSON_Delete(res);
	res = tool_with(sid, "sandbox_create", "{\"image\":\"busybox\",\"ports\":[]}");
	assert_true(is_error(res));
	assert_string_equal(jstr(jget(jget(res, "structuredContent"), "error"), "code"),
			    "INVALID_ARGUMENT");
	cJSON_Delete(res);

	res = tool_with(sid, "sandbox_create", "{\"image\":\"busybox\"}");
	assert_false(is_error(res));
	char *id = strdup(jstr(jget(res, "structuredContent"), "id"));
	cJSON_Delete(res);
	res = tool(
	    sid, "sandbox_exec",
	    e2e_printf("{\"sandbox_id\":\"%s\",\"command\":\"echo hi; echo no >&2; exit 2\"}", id));
	assert_false(is_error(res));
	const cJSON *ex = jget(res, "structuredContent");
	assert_int_equal((int)jnum(ex, "exitCode"), 2);
	assert_string_equal(jstr(ex, "stdout"), "hi\n");
	assert_string_equal(jstr(ex, "stderr"), "no\n");
	cJSON_Delete(res);
	res = tool(sid, "sandbox_delete", e2e_printf("{\"sandbox_id\":\"%s\"}", id));
	assert_false(is_error(res));
	cJSON_Delete(res);
	res = tool(sid, "file_list", e2e_printf("{\"sandbox_id\":\"%s\"}", id));
	assert_true(is_error(res));
	assert_true(e2e_contains(jstr(jget(jget(res, "structuredContent"), "error"), "message"),
				 "destroyed"));
	cJSON_Delete(res);
	free(id);
	free(sid);
}

/* Each stdout line of `sandlot mcp` parsed, by id ("null" for none); N lines at most. */
static int bridge_lines(char *out, cJSON **by, char **ids, int n)
{
	int k = 0;
	for (char *save = NULL, *l = strtok_r(out, "\n", &save); l && k < n;
	     l = strtok_r(NULL, "\n", &save)) {
		by[k] = cJSON_Parse(l);
		if (!by[k])
			fail_msg("sandlot mcp printed a line that is not JSON: %s", l);
		ids[k] = cJSON_PrintUnformatted(jget(by[k], "id"));
		k++;
	}
	return k;
}

static const cJSON *bridge_find(cJSON **by, char **ids, int n, const char *id)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(ids[i], id))
			return by[i];
	fail_msg("sandlot mcp gave no answer with id %s", id);
	return NULL;
}

/* `sandlot mcp`, the stdio bridge: each line to the daemon, each answer a line, bad input
 * answered by the daemon's codes; with no daemon, each request gets -32603 saying so. */
static void test_mcp_stdio_bridge(void **state)
{
	char *in = e2e_printf("%s\n"
			      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
			      "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n"
			      "\n"
			      "{not json\n"
			      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
			      "{\"name\":\"nope\"}}\n",
			      INIT);
	e2e_result r;
	e2e_sandlot(&r, in, strlen(in), "mcp", "--socket", D.sock, NULL);
	assert_int_equal(r.status, 0);
	cJSON *by[8];
	char *ids[8];
	int n = bridge_lines(r.out, by, ids, 8);
	assert_int_equal(n, 4); /* no answer to the notification, nor to the empty line */
	const cJSON *init = bridge_find(by, ids, n, "1");
	assert_string_equal(jstr(jget(init, "result"), "protocolVersion"), "2025-06-18");
	const cJSON *tools = jget(jget(bridge_find(by, ids, n, "2"), "result"), "tools");
	assert_int_equal(cJSON_GetArraySize(tools), 8);
	assert_int_equal((int)jnum(jget(bridge_find(by, ids, n, "null"), "error"), "code"), -32700);
	assert_int_equal((int)jnum(jget(bridge_find(by, ids, n, "3"), "error"), "code"), -32602);
	for (int i = 0; i < n; i++) {
		cJSON_Delete(by[i]);
		free(ids[i]);
	}
	e2e_result_free(&r);

	char *none = e2e_printf("%s/no-daemon.sock", getenv("SANDLOT_E2E_ROOT"));
	e2e_sandlot(&r, in, strlen(in), "mcp", "--socket", none, NULL);
	assert_int_equal(r.status, 0);
	n = bridge_lines(r.out, by, ids, 8);
	assert_int_equal(n, 3); /* the three requests with ids; "{not json" has none */
	const cJSON *e = jget(bridge_find(by, ids, n, "1"), "error");
	assert_int_equal((int)jnum(e, "code"), -32603);
	assert_true(e2e_contains(jstr(e, "message"), "no sandlot daemon on"));
	assert_true(e2e_contains(r.err, "no sandlot daemon on"));
	for (int i = 0; i < n; i++) {
		cJSON_Delete(by[i]);
		free(ids[i]);
	}
	e2e_result_free(&r);
	free(none);
	free(in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_mcp_bad_input),
	    E2E_TEST(test_mcp_tools),
	    E2E_TEST(test_mcp_stdio_bridge),
	    E2E_TEST(test_zz_spec),
	};
	return api_run_tests(tests);
}
