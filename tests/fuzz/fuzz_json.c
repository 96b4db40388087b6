/* fuzz_json.c — the JSON request readers of api/ (api/json.c, the /v1 create body of
 * api/sandboxes.c, Agentuity's create body) on one body, the way the routes call them. */
#include <signal.h>
#include <stdio.h>

#include "compat/agentuity.h"
#include "compat/daytona.h"
#include "compat/e2b.h"
#include "fuzz.h"
#include "http.h"
#include "packages.h"
#include "snapshot.h"

/* Linked with -Wl,--wrap for these: the create parser runs to its end, and the first
 * call that would touch a sandbox checks what was parsed and stops there; no name is a
 * snapshot (the façades then read it as an image). */
int __wrap_api_pool_take(api_server *s, const sl_create_opts *o, sl_sandbox *out, sl_err *err);
int __wrap_sandbox_create(sl_ctx *ctx, const sl_create_opts *o, sl_sandbox *out, sl_err *err);
int __wrap_snapshot_get(sl_ctx *ctx, const char *ref, sl_snapshot *out, sl_err *err);
int __wrap_sandbox_create_admit(sl_ctx *ctx, const sl_create_opts *o, sl_err *err);

/* The host's disk limits and free space (fix 7): not the parser's, and no context here. */
int __wrap_sandbox_create_admit(sl_ctx *ctx, const sl_create_opts *o, sl_err *err)
{
	return 0;
}

int __wrap_snapshot_get(sl_ctx *ctx, const char *ref, sl_snapshot *out, sl_err *err)
{
	return sl_fail(err, SL_NOTFOUND, 0, "snapshot %s: not found", ref);
}

int __wrap_api_pool_take(api_server *s, const sl_create_opts *o, sl_sandbox *out, sl_err *err)
{
	return 0; /* not from the pool: create */
}

static void check_strv(const char *const *v)
{
	for (; v && *v; v++)
		if (!strchr(*v, '='))
			abort(); /* env and labels are "k=v" */
}

/* What packages_validate promises: nothing a shell or an option parser could take for
 * more (the installers get argv, but the names are also logged and recorded). */
static void check_package_word(const char *s)
{
	if (s && s[0] == '-')
		abort();
	for (; s && *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f ||
		    strchr("'\"\\$`;&()", *s))
			abort();
}

int __wrap_sandbox_create(sl_ctx *ctx, const sl_create_opts *o, sl_sandbox *out, sl_err *err)
{
	if (o->nvolumes > 16 || o->npackages > SL_MAX_PACKAGES)
		abort();
	for (size_t i = 0; i < o->nvolumes; i++)
		if (!o->volumes[i].source || !o->volumes[i].mount_path)
			abort();
	for (size_t i = 0; i < o->npackages; i++)
		if (!o->packages[i].name || !o->packages[i].manager)
			abort();
	for (size_t i = 0; i < o->npackages; i++) {
		check_package_word(o->packages[i].name);
		check_package_word(o->packages[i].version);
	}
	if (o->nports > SL_MAX_PORTS)
		abort();
	for (size_t i = 0; i < o->nports; i++)
		if (o->ports[i].port > 65535)
			abort(); /* 1-65535, or SL_PORT_ALL (0) */
	check_strv(o->env);
	check_strv(o->labels);
	(void)strlen(o->image ? o->image : "");
	return sl_fail(err, SL_INVALID, 0, "fuzz: parsed");
}

static void must_fail_well(int r, const sl_err *err)
{
	if (r < 0 && !err->msg[0])
		abort(); /* every failure says why */
}

static void create(const cJSON *body, bool ephemeral, bool run_body)
{
	api_server srv = {0};
	sl_sandbox sb;
	sl_err err = {0};
	if (api_sandbox_create_from(&srv, body, ephemeral, run_body, &sb, &err) == 0)
		abort(); /* the stub always fails */
	must_fail_well(-1, &err);
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "fuzz_json: create: %s\n", err.msg);
}

/* Every reader on KEY of O, as the routes do for their fields. */
static void readers(const cJSON *o, const char *key)
{
	sl_err err = {0};
	const char *s;
	bool b, given;
	uint64_t u;
	uint32_t mode;
	char **strv, **argv, **allow, **deny;
	const char *shell;
	sl_net_opts net;
	must_fail_well(api_json_string(o, "x.", key, &s, &err), &err);
	must_fail_well(api_json_bool(o, "x.", key, &b, &err), &err);
	must_fail_well(api_json_uint(o, "x.", key, 1, 4194304, &u, &given, &err), &err);
	if (given && (u < 1 || u > 4194304))
		abort();
	must_fail_well(api_json_duration(o, "x.", key, &u, &given, &err), &err);
	must_fail_well(api_json_mode(o, "x.", key, &mode, &given, &err), &err);
	if (given && mode > 07777)
		abort();
	if (api_json_kv(o, "x.", key, &strv, &err) == 0) {
		check_strv((const char *const *)strv);
		api_strv_free(strv);
	}
	if (api_json_command(o, "x.", key, &argv, &shell, &err) == 0) {
		if (!argv == !shell || (argv && !argv[0]))
			abort(); /* exactly one of the two, never an empty argv */
		api_strv_free(argv);
	}
	if (api_json_network(o, key, &net, &b, &allow, &deny, &err) == 0) {
		api_strv_free(allow);
		api_strv_free(deny);
	}
}

/* The string parsers on each string value. */
static void strings(const cJSON *v)
{
	if (!cJSON_IsString(v))
		return;
	const char *s = v->valuestring;
	sl_err err = {0};
	unsigned char *bytes;
	size_t n;
	uint32_t mode;
	int sig;
	if (api_base64_decode("f", s, &bytes, &n, &err) == 0) {
		if (n > strlen(s))
			abort();
		free(bytes);
	}
	if (api_parse_mode("f", s, &mode, &err) == 0 && mode > 07777)
		abort();
	if (api_signal_parse("f", s, &sig, &err) == 0 && (sig < 1 || sig >= NSIG))
		abort();
}

/* Replacing bad UTF-8 twice changes nothing the second time. */
static void utf8(const uint8_t *data, size_t size)
{
	char *once = api_utf8_string((const char *)data, size);
	if (!once)
		abort();
	char *twice = api_utf8_string(once, strlen(once));
	if (!twice || strcmp(once, twice))
		abort();
	free(once);
	free(twice);
}

/* The Daytona and E2B create bodies, translated to /v1 and created from, with and
 * without --provider-defaults. */
static void facades(const cJSON *body)
{
	for (int defaults = 0; defaults < 2; defaults++) {
		api_server srv = {.opt.provider_defaults = defaults};
		api_req req = {.srv = &srv};
		sl_err err = {0};
		cJSON *v1 = cJSON_CreateObject();
		const char *dockerfile;
		int r = dt_v1_body(&req, body, v1, &dockerfile, &err);
		must_fail_well(r, &err);
		if (getenv("FUZZ_VERBOSE") && r < 0)
			fprintf(stderr, "fuzz_json: daytona: %s\n", err.msg);
		if (r == 0)
			create(v1, false, false);
		cJSON_Delete(v1);
		v1 = cJSON_CreateObject();
		memset(&err, 0, sizeof(err));
		r = e2b_network_body(body, v1, defaults, &err);
		must_fail_well(r, &err);
		if (r == 0)
			create(v1, false, false);
		cJSON_Delete(v1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sl_err err = {0};
	utf8(data, size);
	cJSON *body = api_json_parse((const char *)data, size, &err);
	if (!body) {
		must_fail_well(-1, &err);
		return 0;
	}
	if (cJSON_IsObject(body)) {
		create(body, false, false);
		create(body, true, true);
		const cJSON *it, *in;
		cJSON_ArrayForEach(it, body)
		{
			readers(body, it->string);
			strings(it);
			if (cJSON_IsObject(it) || cJSON_IsArray(it))
				cJSON_ArrayForEach(in, it) strings(in);
		}
		facades(body);
		for (int oneshot = 0; oneshot < 2; oneshot++) {
			sl_err aerr = {0};
			cJSON *v1 = ag_v1_body(body, oneshot, &aerr);
			must_fail_well(v1 ? 0 : -1, &aerr);
			if (v1)
				create(v1, false, false);
			cJSON_Delete(v1);
		}
	}
	cJSON_Delete(body);
	return 0;
}
