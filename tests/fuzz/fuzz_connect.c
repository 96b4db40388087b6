/* fuzz_connect.c — the Connect request reader of the E2B façade (e2b_rpc_message_parse,
 * api/compat/e2b_envd.c): one envelope (flag, big-endian length, JSON), or bare JSON. */
#include "compat/e2b.h"
#include "fuzz.h"

/* Input: <mode byte> <body>; mode bit 0 = application/connect+json (an envelope). A
 * message that parses must be an object, and parse again from the envelope made of its
 * printed form, printing the same. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_in in = {data, size};
	bool streaming = fuzz_u8(&in) & 1;
	size_t len;
	char *body = fuzz_rest(&in, &len);
	sl_err err = {0};
	cJSON *msg = e2b_rpc_message_parse(body, len, streaming, &err);
	if (!msg) {
		if (!err.msg[0] || err.kind != SL_INVALID)
			abort();
		free(body);
		return 0;
	}
	if (!cJSON_IsObject(msg))
		abort();
	char *text = cJSON_PrintUnformatted(msg);
	if (!text)
		abort();
	size_t n = strlen(text);
	char *env = malloc(n + 5);
	if (!env)
		abort();
	env[0] = 0;
	env[1] = (char)(n >> 24), env[2] = (char)(n >> 16), env[3] = (char)(n >> 8);
	env[4] = (char)n;
	memcpy(env + 5, text, n);
	cJSON *again = e2b_rpc_message_parse(env, n + 5, true, &err);
	/* Compared as printed: cJSON_Compare looks keys up by name, so an object with a
	 * key twice ({"": 1, "": 2}) would differ from itself. */
	char *text2 = again ? cJSON_PrintUnformatted(again) : NULL;
	if (!text2 || strcmp(text, text2))
		abort();
	free(text2);
	cJSON_Delete(again);
	cJSON_Delete(msg);
	free(env);
	free(text);
	free(body);
	return 0;
}
