/* fuzz_routes.c — the request router (api_route_match_in, api/routes.c): a method and a
 * URL path against /v1's table and each façade's, the way server.c asks. */
#include "fuzz.h"
#include "http.h"

/* Input: "<method>\n<path>". A route found has that method and a pattern the path
 * matches segment by segment; each captured parameter is one whole, non-empty segment,
 * but a last {name+} (an image name) is the whole non-empty rest of the path; the Allow
 * list (server.c's 64 bytes) is a terminated string. */

static size_t count_params(const char *pattern)
{
	size_t n = 0;
	for (const char *p = pattern; (p = strchr(p, '{')); p++)
		n++;
	return n;
}

static void check(const api_route *hit, api_req *r, const char *method, const char *path,
		  bool known, const char *allow, size_t allow_len)
{
	if (!memchr(allow, '\0', allow_len))
		abort();
	if (!hit)
		return;
	if (!known || strcmp(hit->method, method) || (size_t)r->nparam != count_params(hit->pattern))
		abort();
	const char *rest = strstr(hit->pattern, "+}");
	for (int i = 0; i < r->nparam; i++) {
		bool whole_rest = rest && i == r->nparam - 1;
		size_t pl = strlen(path), vl = strlen(r->param[i]);
		if (!r->param[i][0] || (!whole_rest && strchr(r->param[i], '/')) ||
		    !strstr(path, r->param[i]) ||
		    (whole_rest && (vl > pl || strcmp(path + pl - vl, r->param[i]))))
			abort();
	}
}

static void route_in(const api_facade *f, const char *method, const char *path)
{
	api_req r = {0};
	char allow[64];
	bool known;
	const api_route *hit =
	    f ? api_route_match_in(f, &r, method, path, &known, allow, sizeof(allow))
	      : api_route_match(&r, method, path, &known, allow, sizeof(allow));
	check(hit, &r, method, path, known, allow, sizeof(allow));
	for (int i = 0; i < r.nparam; i++)
		free(r.param[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_in in = {data, size};
	char *method = fuzz_line(&in);
	size_t len;
	char *path = fuzz_rest(&in, &len); /* a C string, as libmicrohttpd hands it over */
	route_in(NULL, method, path);
	for (const api_facade *const *f = api_facades; *f; f++)
		route_in(*f, method, path);
	free(path);
	free(method);
	return 0;
}
