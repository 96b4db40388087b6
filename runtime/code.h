/* code.h — executeCode: run a snippet of Python, TypeScript, JavaScript or bash in a
 * sandbox and hand back a structured result (the provider interface's
 * CodeExecutionResult). Each call starts from a clean interpreter. */
#ifndef SANDLOT_CODE_H
#define SANDLOT_CODE_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "err.h"
#include "ctx.h"
#include "record.h"

typedef struct sl_code_result {
	bool success;
	cJSON *output; /* parsed last non-empty stdout line, when it is JSON; else NULL */
	char *out, *errout;
	int64_t duration_ms;
	int exit_code;
	bool has_error;
	char *error_name, *error_message, *error_traceback;
	char exec_id[32];
	/* The call ran cold for want of a warm runner of its language: its caller starts
	 * one (code_runner_start) once it has answered. */
	bool runner_wanted;
} sl_code_result;

/* language: python | typescript | javascript | bash. timeout_ms 0: the default. */
int code_run(sl_ctx *ctx, const sl_sandbox *sb, const char *language, const char *code,
	     size_t len, const char *const *env, uint64_t timeout_ms, sl_code_result *out,
	     sl_err *err);
void code_result_free(sl_code_result *r);
/* The sandbox's warm runner of LANGUAGE (python, or node's for typescript and
 * javascript), started detached: what a call answered with runner_wanted asks for.
 * An execution that ends at once (its record forgotten); the runner comes up ~20 ms
 * later. ENV: the first call's (what the interpreter reads at start-up, PYTHON*, LANG,
 * LC_*, is then the runner's own, and later calls that set the same run warm). */
int code_runner_start(sl_ctx *ctx, const sl_sandbox *sb, const char *language,
		      const char *const *env, sl_err *err);
cJSON *code_result_to_json(const sl_code_result *r);

#endif
