/* routes.c — the /v1 route table and its matcher: method + path pattern to handler.
 * api/openapi.yaml describes the same routes; tests/api/spec_check.py keeps them equal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

/* clang-format off */
static const api_route v1_routes[] = {
	{ "POST",   "/v1/sandboxes", API_BODY_JSON, api_sandboxes_create, NULL, NULL },
	{ "GET",    "/v1/sandboxes", API_BODY_NONE, api_sandboxes_list, NULL, NULL },
	{ "GET",    "/v1/sandboxes/{id}", API_BODY_NONE, api_sandboxes_get, NULL, NULL },
	{ "PATCH",  "/v1/sandboxes/{id}", API_BODY_JSON, api_sandboxes_patch, NULL, NULL },
	{ "DELETE", "/v1/sandboxes/{id}", API_BODY_NONE, api_sandboxes_delete, NULL, NULL },
	{ "POST",   "/v1/sandboxes/{id}/pause", API_BODY_NONE, api_sandboxes_pause, NULL, NULL },
	{ "POST",   "/v1/sandboxes/{id}/hibernate", API_BODY_NONE, api_sandboxes_hibernate, NULL, NULL },
	{ "POST",   "/v1/sandboxes/{id}/resume", API_BODY_NONE, api_sandboxes_resume, NULL, NULL },
	{ "POST",   "/v1/sandboxes/{id}/stop", API_BODY_NONE, api_sandboxes_stop, NULL, NULL },
	{ "POST",   "/v1/sandboxes/{id}/start", API_BODY_NONE, api_sandboxes_start, NULL, NULL },
	{ "POST",   "/v1/sandboxes/{id}/executions", API_BODY_JSON, api_exec_create, NULL, NULL },
	{ "GET",    "/v1/sandboxes/{id}/executions", API_BODY_NONE, api_exec_list, NULL, NULL },
	{ "GET",    "/v1/sandboxes/{id}/executions/{eid}", API_BODY_NONE, api_exec_get, NULL, NULL },
	{ "GET",    "/v1/sandboxes/{id}/executions/{eid}/stdout", API_BODY_NONE, api_exec_stdout, NULL, NULL },
	{ "GET",    "/v1/sandboxes/{id}/executions/{eid}/stderr", API_BODY_NONE, api_exec_stderr, NULL, NULL },
	{ "POST",   "/v1/sandboxes/{id}/executions/{eid}/stdin", API_BODY_RAW, api_exec_stdin,
		    api_exec_stdin_begin, api_exec_stdin_chunk },
	{ "POST",   "/v1/sandboxes/{id}/executions/{eid}/signal", API_BODY_JSON, api_exec_signal, NULL, NULL },
	{ "GET",    "/v1/sandboxes/{id}/executions/{eid}/attach", API_BODY_NONE, api_exec_attach, NULL, NULL },
	{ "GET",    "/v1/sandboxes/{id}/processes", API_BODY_NONE, api_processes_list, NULL, NULL },
	{ "DELETE", "/v1/sandboxes/{id}/processes/{pid}", API_BODY_NONE, api_processes_kill, NULL, NULL },
	{ "POST",   "/v1/sandboxes/{id}/code", API_BODY_JSON, api_code, NULL, NULL },
	{ "GET",    "/v1/sandboxes/{id}/files", API_BODY_NONE, api_files_get, NULL, NULL },
	{ "PUT",    "/v1/sandboxes/{id}/files", API_BODY_RAW, api_files_put,
		    api_files_put_begin, api_files_put_chunk },
	{ "POST",   "/v1/sandboxes/{id}/files", API_BODY_JSON, api_files_post, NULL, NULL },
	{ "DELETE", "/v1/sandboxes/{id}/files", API_BODY_NONE, api_files_delete, NULL, NULL },
	{ "GET",    "/v1/sandboxes/{id}/fs/list", API_BODY_NONE, api_fs_list, NULL, NULL },
	{ "GET",    "/v1/sandboxes/{id}/fs/stat", API_BODY_NONE, api_fs_stat, NULL, NULL },
	{ "POST",   "/v1/sandboxes/{id}/fs/mkdir", API_BODY_JSON, api_fs_mkdir, NULL, NULL },
	{ "POST",   "/v1/sandboxes/{id}/fs/move", API_BODY_JSON, api_fs_move, NULL, NULL },
	{ "POST",   "/v1/sandboxes/{id}/fs/chmod", API_BODY_JSON, api_fs_chmod, NULL, NULL },
	{ "GET",    "/v1/sandboxes/{id}/ports/{port}", API_BODY_NONE, api_ports_get, NULL, NULL },
	{ "POST",   "/v1/sandboxes/{id}/snapshots", API_BODY_JSON, api_snapshots_create, NULL, NULL },
	{ "POST",   "/v1/sandboxes/{id}/fork", API_BODY_JSON, api_sandboxes_fork, NULL, NULL },
	{ "POST",   "/v1/sandboxes/{id}/checkpoints", API_BODY_JSON, api_checkpoints_create, NULL, NULL },
	{ "GET",    "/v1/sandboxes/{id}/checkpoints", API_BODY_NONE, api_checkpoints_list, NULL, NULL },
	{ "DELETE", "/v1/sandboxes/{id}/checkpoints/{name}", API_BODY_NONE, api_checkpoints_delete, NULL, NULL },
	{ "POST",   "/v1/sandboxes/{id}/rollback", API_BODY_JSON, api_sandboxes_rollback, NULL, NULL },
	{ "GET",    "/v1/snapshots", API_BODY_NONE, api_snapshots_list, NULL, NULL },
	{ "GET",    "/v1/snapshots/{sid}", API_BODY_NONE, api_snapshots_get, NULL, NULL },
	{ "DELETE", "/v1/snapshots/{sid}", API_BODY_NONE, api_snapshots_delete, NULL, NULL },
	{ "GET",    "/v1/images", API_BODY_NONE, api_images_list, NULL, NULL },
	{ "POST",   "/v1/images", API_BODY_RAW, api_images_post,
		    api_images_post_begin, api_images_post_chunk },
	{ "POST",   "/v1/images/pull", API_BODY_JSON, api_images_pull, NULL, NULL },
	{ "POST",   "/v1/images/build", API_BODY_RAW, api_images_build,
		    api_images_build_begin, api_images_build_chunk },
	{ "GET",    "/v1/images/{name+}/tags", API_BODY_NONE, api_images_tags, NULL, NULL },
	{ "POST",   "/v1/images/{name+}/tags", API_BODY_JSON, api_images_tag, NULL, NULL },
	{ "GET",    "/v1/images/{name+}", API_BODY_NONE, api_images_get, NULL, NULL },
	{ "DELETE", "/v1/images/{name+}", API_BODY_NONE, api_images_delete, NULL, NULL },
	{ "GET",    "/v1/volumes", API_BODY_NONE, api_volumes_list, NULL, NULL },
	{ "POST",   "/v1/volumes", API_BODY_JSON, api_volumes_create, NULL, NULL },
	{ "DELETE", "/v1/volumes/{name}", API_BODY_NONE, api_volumes_delete, NULL, NULL },
	{ "GET",    "/v1/secrets", API_BODY_NONE, api_secrets_list, NULL, NULL },
	{ "POST",   "/v1/secrets", API_BODY_JSON, api_secrets_set, NULL, NULL },
	{ "DELETE", "/v1/secrets/{name}", API_BODY_NONE, api_secrets_delete, NULL, NULL },
	{ "POST",   "/v1/run", API_BODY_JSON, api_run, NULL, NULL },
	{ "GET",    "/v1/health", API_BODY_NONE, api_health, NULL, NULL },
	{ "GET",    "/v1/events", API_BODY_NONE, api_events, NULL, NULL },
	{ "GET",    "/metrics", API_BODY_NONE, api_metrics, NULL, NULL },
};
/* clang-format on */

/* Does PATH match PATTERN? Captured segments go to CAPS (pointers into a copy). */
static bool match(const char *pattern, const char *path, const char **caps, size_t *caplen,
		  int *ncap, int *literals)
{
	*ncap = 0;
	*literals = 0;
	const char *p = pattern, *s = path;
	while (*p && *s) {
		if (*p != '/' || *s != '/')
			return false;
		p++, s++;
		size_t pl = strcspn(p, "/"), sl = strcspn(s, "/");
		if (*p == '{' && p[pl - 2] == '+') {
			/* {name+}: the rest of the path, slashes and all (an image name such as
			 * "localhost:5000/app:1", sent URL-encoded and decoded by the server),
			 * but for the literal segments that follow it ("{name+}/tags"). */
			const char *tail = p + pl;
			size_t sn = strlen(s), tn = strlen(tail);
			if (!*s || *ncap == API_MAX_PARAMS || sn <= tn ||
			    strcmp(s + sn - tn, tail) || strchr(tail, '{'))
				return false;
			for (const char *c = tail; *c; c++)
				*literals += *c == '/';
			caps[*ncap] = s;
			caplen[(*ncap)++] = sn - tn;
			return true;
		}
		if (*p == '{') {
			if (sl == 0 || *ncap == API_MAX_PARAMS)
				return false;
			caps[*ncap] = s;
			caplen[(*ncap)++] = sl;
		} else if (pl != sl || strncmp(p, s, pl) != 0) {
			return false;
		} else {
			(*literals)++;
		}
		p += pl, s += sl;
	}
	return !*p && !*s;
}

/* LITERAL_WINS (/v1's, and a façade's that asks; the others keep their order): a path that a route
 * names literally is that route's (POST /v1/images/build is not the image "build"), so
 * routes with parameters do not match it. */
static const api_route *route_match(const api_route *table, size_t ntable, bool literal_wins,
				    api_req *r, const char *method, const char *path,
				    bool *path_known, char *allow, size_t allow_len)
{
	*path_known = false;
	if (allow_len)
		allow[0] = '\0';
	const api_route *hit = NULL;
	const char *caps[API_MAX_PARAMS];
	size_t caplen[API_MAX_PARAMS];
	int ncap = 0;
	const api_route *routes = table;
	/* With LITERAL_WINS, the routes that name the most segments literally win (OpenAPI's
	 * rule): /v1/images/pull and /v1/images/build are those routes for every method,
	 * never the images named "pull" or "build". */
	int best = -1;
	for (size_t i = 0; literal_wins && i < ntable; i++) {
		const char *c[API_MAX_PARAMS];
		size_t cl[API_MAX_PARAMS];
		int n, lit;
		if (match(routes[i].pattern, path, c, cl, &n, &lit) && lit > best)
			best = lit;
	}
	for (size_t i = 0; i < ntable; i++) {
		const char *c[API_MAX_PARAMS];
		size_t cl[API_MAX_PARAMS];
		int n, lit;
		if (!match(routes[i].pattern, path, c, cl, &n, &lit) || (literal_wins && lit != best))
			continue;
		*path_known = true;
		size_t used = strlen(allow);
		snprintf(allow + used, allow_len - used, "%s%s", used ? ", " : "",
			 routes[i].method);
		if (!hit && !strcmp(routes[i].method, method)) {
			hit = &routes[i];
			memcpy(caps, c, sizeof(c));
			memcpy(caplen, cl, sizeof(cl));
			ncap = n;
		}
	}
	if (!hit)
		return NULL;
	for (int i = 0; i < ncap; i++)
		r->param[i] = strndup(caps[i], caplen[i]);
	r->nparam = ncap;
	for (int i = 0; i < ncap; i++)
		if (!r->param[i])
			return NULL;
	return hit;
}

const api_route *api_route_match_in(const api_facade *f, api_req *r, const char *method,
				    const char *path, bool *path_known, char *allow,
				    size_t allow_len)
{
	return route_match(f->routes, f->nroutes, f->literal_wins, r, method, path, path_known,
			   allow, allow_len);
}

const api_route *api_route_match(api_req *r, const char *method, const char *path, bool *path_known,
				 char *allow, size_t allow_len)
{
	return route_match(v1_routes, sizeof(v1_routes) / sizeof(v1_routes[0]), true, r, method,
			   path, path_known, allow, allow_len);
}

/* The compatibility façades (api/compat/) and the MCP server (api/mcp.c), asked in this
 * order before /v1. */
const api_facade *const api_facades[] = {&api_facade_mcp,	&api_facade_ui,
					 &api_facade_daytona,	&api_facade_e2b,
					 &api_facade_agentuity, NULL};
