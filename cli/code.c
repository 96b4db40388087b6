/* code.c — `sandlot code ID --language L (CODE | -)`: executeCode from the command
 * line; prints the snippet's stdout and stderr (or the whole result as JSON). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "code.h"
#include "quantity.h"

static char *read_all(FILE *f, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (n == cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		if (r == 0)
			break;
		n += r;
	}
	*len = n;
	return buf;
}

int cmd_code(sl_ctx *ctx, int argc, char **argv)
{
	const char *lang = "python", *ref = NULL, *src = NULL, *env[257];
	bool json = false;
	int nenv = 0;
	uint64_t timeout = 0;
	for (int i = 1; i < argc; i++) {
		sl_err err = { 0 };
		if ((!strcmp(argv[i], "--language") || !strcmp(argv[i], "-l")) && i + 1 < argc)
			lang = argv[++i];
		else if (!strcmp(argv[i], "--format") && i + 1 < argc && !strcmp(argv[i + 1], "json"))
			json = true, i++;
		else if (!strcmp(argv[i], "-e") && i + 1 < argc && nenv < 256)
			env[nenv++] = argv[++i];
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			if (duration_parse("--timeout", argv[++i], &timeout, &err) < 0)
				return cli_fail(&err);
		} else if (!ref)
			ref = argv[i];
		else if (!src)
			src = argv[i];
		else
			return cli_usage("code: unexpected argument \"%s\"", argv[i]);
	}
	env[nenv] = NULL;
	if (!ref || !src)
		return cli_usage("code ID --language python|typescript|javascript|bash (CODE | -)");
	size_t len = 0;
	char *code = !strcmp(src, "-") ? read_all(stdin, &len) : strdup(src);
	if (!code)
		return cli_usage("code: cannot read the code");
	if (strcmp(src, "-"))
		len = strlen(code);
	sl_sandbox sb;
	sl_code_result res;
	sl_err err = { 0 };
	int r = sandbox_get(ctx, ref, &sb, &err);
	if (r == 0)
		r = code_run(ctx, &sb, lang, code, len, env, timeout, &res, &err);
	free(code);
	if (r < 0)
		return cli_fail(&err);
	if (json) {
		cJSON *o = code_result_to_json(&res);
		char *s = cJSON_Print(o);
		puts(s);
		free(s);
		cJSON_Delete(o);
	} else {
		fputs(res.out, stdout);
		fputs(res.errout, stderr);
		if (res.has_error && !res.error_traceback)
			fprintf(stderr, "%s: %s\n", res.error_name, res.error_message);
	}
	fflush(stdout);
	/* A first call: the sandbox's warm runner, for the calls after it (not started:
	 * the next call runs cold and asks again). */
	sl_err e2 = {0};
	if (res.runner_wanted)
		code_runner_start(ctx, &sb, lang, (const char *const *)env, &e2);
	sandbox_free(&sb);
	int code_status = res.success ? 0 : 1;
	code_result_free(&res);
	return code_status;
}
