/* test_ports_parse.c — the `ports` object of create/PATCH, and the preview proxy's reading
 * of a request head: routing by Host, credentials from headers, cookie and query, and the
 * forwarded head with every credential cut out. */
#include "ports_parse.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_ports_object(void **state)
{
	sl_port_setting set[SL_MAX_PORTS];
	size_t n = 9;
	sl_err err = {0};
	assert_int_equal(ports_parse(NULL, set, &n, &err), 0);
	assert_int_equal(n, 0);
	cJSON *v = cJSON_Parse("{\"8000\":{\"public\":true},\"*\":{\"public\":false}}");
	assert_int_equal(ports_parse(v, set, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(set[0].port, 8000);
	assert_true(set[0].public_port);
	assert_int_equal(set[1].port, SL_PORT_ALL);
	assert_false(set[1].public_port);
	cJSON_Delete(v);
	static const char *const bad[][2] = {
	    {"[]", "ports:"},
	    {"{\"0\":{\"public\":true}}", "ports.0:"},
	    {"{\"65536\":{\"public\":true}}", "ports.65536:"},
	    {"{\"08\":{\"public\":true}}", "ports.08:"},
	    {"{\"x\":{\"public\":true}}", "ports.x:"},
	    {"{\"80\":true}", "ports.80:"},
	    {"{\"80\":{\"public\":\"yes\"}}", "ports.80.public"},
	    {"{\"80\":{}}", "ports.80.public"},
	    {"{\"80\":{\"public\":true,\"tls\":1}}", "ports.80.tls"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sl_err e = {0};
		v = cJSON_Parse(bad[i][0]);
		assert_non_null(v);
		assert_int_equal(ports_parse(v, set, &n, &e), -1);
		assert_int_equal(e.kind, SL_INVALID);
		if (!strstr(e.msg, bad[i][1]))
			fail_msg("%s: message \"%s\" does not name %s", bad[i][0], e.msg,
				 bad[i][1]);
		cJSON_Delete(v);
	}
}

static void parse(const char *head, preview_req *r)
{
	assert_int_equal(preview_head_parse(head, strlen(head), r), 0);
	assert_non_null(r->head);
	assert_int_equal(strlen(r->head), r->head_len);
}

static void test_head_routes_and_closes(void **state)
{
	preview_req r;
	parse("GET /a?b=1 HTTP/1.1\r\nHost: 8080-sbx_abc.localhost:7081\r\n"
	      "Connection: keep-alive\r\nKeep-Alive: timeout=5\r\nAccept: */*\r\n\r\n",
	      &r);
	assert_int_equal(r.port, 8080);
	assert_string_equal(r.id, "sbx_abc");
	assert_int_equal(r.ncred, 0);
	assert_false(r.upgrade);
	assert_string_equal(r.target, "/a?b=1");
	assert_string_equal(r.head, "GET /a?b=1 HTTP/1.1\r\nHost: 8080-sbx_abc.localhost:7081\r\n"
				    "Accept: */*\r\nConnection: close\r\n\r\n");
	preview_req_free(&r);
	/* Not a preview host: port 0. */
	parse("GET / HTTP/1.0\r\nHost: example.com\r\n\r\n", &r);
	assert_int_equal(r.port, 0);
	preview_req_free(&r);
	parse("GET / HTTP/1.0\r\nHost: 99999-sbx_a.localhost\r\n\r\n", &r);
	assert_int_equal(r.port, 0);
	preview_req_free(&r);
	/* An upgrade keeps its Connection header (before or after Upgrade). */
	parse("GET /ws HTTP/1.1\r\nConnection: Upgrade\r\nHost: 9000-sbx_a.localhost\r\n"
	      "Upgrade: websocket\r\n\r\n",
	      &r);
	assert_true(r.upgrade);
	assert_string_equal(r.head, "GET /ws HTTP/1.1\r\nConnection: Upgrade\r\nHost: "
				    "9000-sbx_a.localhost\r\nUpgrade: websocket\r\n\r\n");
	preview_req_free(&r);
	/* Not a head. */
	assert_int_equal(preview_head_parse("GARBAGE\r\n\r\n", 11, &r), -1);
	const char *nocolon = "GET / HTTP/1.1\r\nHost 1\r\n\r\n";
	assert_int_equal(preview_head_parse(nocolon, strlen(nocolon), &r), -1);
}

static void test_head_credentials_cut(void **state)
{
	preview_req r;
	parse("GET /p?x=1&sandlot_token=QQQ&y=2 HTTP/1.1\r\nHost: 80-sbx_a.localhost\r\n"
	      "X-Sandlot-Preview-Token: HHH\r\nx-daytona-preview-token:  DDD \r\n"
	      "e2b-traffic-access-token: EEE\r\n"
	      "Cookie: a=1; sandlot_token=CCC; b=2\r\n\r\n",
	      &r);
	assert_int_equal(r.ncred, 5);
	assert_int_equal(r.cred[0].src, PREVIEW_QUERY);
	assert_string_equal(r.cred[0].value, "QQQ");
	assert_int_equal(r.cred[1].src, PREVIEW_HEADER);
	assert_string_equal(r.cred[1].value, "HHH");
	assert_int_equal(r.cred[2].src, PREVIEW_DAYTONA);
	assert_string_equal(r.cred[2].value, "DDD");
	assert_int_equal(r.cred[3].src, PREVIEW_E2B);
	assert_string_equal(r.cred[3].value, "EEE");
	assert_int_equal(r.cred[4].src, PREVIEW_COOKIE);
	assert_string_equal(r.cred[4].value, "CCC");
	assert_string_equal(r.target, "/p?x=1&y=2");
	assert_string_equal(r.head, "GET /p?x=1&y=2 HTTP/1.1\r\nHost: 80-sbx_a.localhost\r\n"
				    "Cookie: a=1; b=2\r\nConnection: close\r\n\r\n");
	preview_req_free(&r);
	/* The only cookie and the only parameter: both lines lose them entirely. */
	parse("GET /?sandlot_token=QQQ HTTP/1.1\r\nHost: 80-sbx_a.localhost\r\n"
	      "Cookie: sandlot_token=CCC\r\n\r\n",
	      &r);
	assert_int_equal(r.ncred, 2);
	assert_string_equal(r.target, "/");
	assert_string_equal(r.head, "GET / HTTP/1.1\r\nHost: 80-sbx_a.localhost\r\n"
				    "Connection: close\r\n\r\n");
	preview_req_free(&r);
	/* A name that only starts like ours is someone else's. */
	parse("GET /?sandlot_tokens=1 HTTP/1.1\r\nHost: 80-sbx_a.localhost\r\n"
	      "Cookie: sandlot_tokenx=2\r\n\r\n",
	      &r);
	assert_int_equal(r.ncred, 0);
	assert_string_equal(r.target, "/?sandlot_tokens=1");
	preview_req_free(&r);
}

/* The dashboard's session cookie never reaches a sandbox (api/ui.c): cut, and not a
 * credential; a cookie whose name only starts like it is kept. */
static void test_head_dashboard_cookie_cut(void **state)
{
	preview_req r;
	parse("GET / HTTP/1.1\r\nHost: sandlot.localhost:40001\r\n"
	      "Cookie: a=1; sandlot_session=SSS; sandlot_sessions=2\r\n"
	      "Cookie: sandlot_session=TTT\r\n\r\n",
	      &r);
	assert_int_equal(r.ncred, 0);
	assert_null(strstr(r.head, "SSS"));
	assert_null(strstr(r.head, "TTT"));
	assert_string_equal(r.head, "GET / HTTP/1.1\r\nHost: sandlot.localhost:40001\r\n"
				    "Cookie: a=1; sandlot_sessions=2\r\nConnection: close\r\n\r\n");
	preview_req_free(&r);
}

/* A sandbox's request host (E2B's maskRequestHost) replaces the Host header, every
 * "${PORT}" in it the port; a head with no Host gets one; none given keeps the head. */
static void test_head_request_host(void **state)
{
	preview_req r;
	parse("GET /a HTTP/1.1\r\nhost: 8080-sbx_abc.localhost:7\r\nAccept: */*\r\n"
	      "X-Host: kept\r\n\r\n",
	      &r);
	assert_int_equal(r.port, 8080);
	assert_int_equal(preview_head_set_host(&r, "custom.example.com:${PORT}/${PORT}$", 8080), 0);
	assert_string_equal(r.head, "GET /a HTTP/1.1\r\nHost: custom.example.com:8080/8080$\r\n"
				    "Accept: */*\r\nX-Host: kept\r\nConnection: close\r\n\r\n");
	assert_int_equal(strlen(r.head), r.head_len);
	char *before = strdup(r.head);
	assert_int_equal(preview_head_set_host(&r, "", 8080), 0);
	assert_int_equal(preview_head_set_host(&r, NULL, 8080), 0);
	assert_string_equal(r.head, before);
	free(before);
	preview_req_free(&r);
	parse("GET / HTTP/1.0\r\n\r\n", &r);
	assert_int_equal(preview_head_set_host(&r, "${PORT}-x.e2b.app", 65535), 0);
	assert_string_equal(r.head,
			    "GET / HTTP/1.0\r\nHost: 65535-x.e2b.app\r\nConnection: close\r\n\r\n");
	preview_req_free(&r);
	/* The longest mask, all "${PORT}", fits with every port in it (none cut off). */
	char mask[256] = "";
	for (int i = 0; i < 36; i++)
		strcat(mask, "${PORT}");
	parse("GET / HTTP/1.1\r\nHost: 1-sbx_a.localhost\r\n\r\n", &r);
	assert_int_equal(preview_head_set_host(&r, mask, 65535), 0);
	const char *h = strstr(r.head, "Host: ") + 6;
	assert_int_equal(strcspn(h, "\r"), 36 * 5);
	preview_req_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ports_object),
	    cmocka_unit_test(test_head_routes_and_closes),
	    cmocka_unit_test(test_head_credentials_cut),
	    cmocka_unit_test(test_head_dashboard_cookie_cut),
	    cmocka_unit_test(test_head_request_host),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
