/* fuzz_quantity.c — the quantity and duration parsers (runtime/quantity.c) on each line of
 * the input; what parses must format back to the same value, and fail with a message. */
#include <stdio.h>

#include "fuzz.h"
#include "quantity.h"

static void check_bytes(const char *s)
{
	sl_err err = {0};
	uint64_t v = 0, again = 0;
	char buf[32];
	if (quantity_parse_bytes("memory", s, &v, &err) < 0) {
		if (!err.msg[0] || err.kind != SL_INVALID)
			abort();
		return;
	}
	if (v == 0 || v > INT64_MAX || quantity_format_bytes(v, buf, sizeof(buf)) < 0 ||
	    quantity_parse_bytes("memory", buf, &again, &err) < 0 || again != v)
		abort();
}

static void check_cpu(const char *s)
{
	sl_err err = {0};
	uint64_t v = 0, again = 0;
	char buf[32];
	if (quantity_parse_cpu("cpu", s, &v, &err) < 0) {
		if (!err.msg[0] || err.kind != SL_INVALID)
			abort();
		return;
	}
	if (v == 0 || v > INT64_MAX || quantity_format_cpu(v, buf, sizeof(buf)) < 0 ||
	    quantity_parse_cpu("cpu", buf, &again, &err) < 0 || again != v)
		abort();
}

static void check_duration(const char *s)
{
	sl_err err = {0};
	uint64_t v = 0, again = 0;
	char buf[32];
	if (duration_parse("timeout", s, &v, &err) < 0) {
		if (!err.msg[0] || err.kind != SL_INVALID)
			abort();
		return;
	}
	/* A plain integer is milliseconds: the value must read back the same. */
	snprintf(buf, sizeof(buf), "%llums", (unsigned long long)v);
	if (v > INT64_MAX || duration_parse("timeout", buf, &again, &err) < 0 || again != v)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_in in = {data, size};
	while (in.n) {
		char *s = fuzz_line(&in);
		check_bytes(s);
		check_cpu(s);
		check_duration(s);
		free(s);
	}
	return 0;
}
