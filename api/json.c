/* json.c — reading request fields with the type and unit checks the API promises:
 * any mistake is a 400 whose message names the field and says what was expected. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nettle/base64.h>

#include "quantity.h"
#include "http.h"

static const char *type_name(const cJSON *v)
{
	if (cJSON_IsString(v))
		return "a string";
	if (cJSON_IsNumber(v))
		return "a number";
	if (cJSON_IsBool(v))
		return "a boolean";
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsArray(v))
		return "an array";
	if (cJSON_IsObject(v))
		return "an object";
	return "something else";
}

static int wrong_type(const char *where, const char *key, const cJSON *v, const char *want,
		      sl_err *err)
{
	return sl_fail(err, SL_INVALID, 0, "%s%s: expected %s, got %s", where, key, want,
		       type_name(v));
}

int api_json_fields(const cJSON *o, const char *where, const char *const *allowed, sl_err *err)
{
	if (!cJSON_IsObject(o)) {
		if (!*where)
			return sl_fail(err, SL_INVALID, 0, "the body must be a JSON object, not %s",
				       type_name(o));
		return sl_fail(err, SL_INVALID, 0, "%.*s: expected an object, got %s",
			       (int)strlen(where) - 1, where, type_name(o));
	}
	const cJSON *it;
	cJSON_ArrayForEach(it, o)
	{
		bool ok = false;
		for (const char *const *a = allowed; *a && !ok; a++)
			ok = !strcmp(*a, it->string);
		if (!ok)
			return sl_fail(err, SL_INVALID, 0, "%s%s: unknown field", where,
				       it->string);
	}
	return 0;
}

int api_json_string(const cJSON *o, const char *where, const char *key, const char **out,
		    sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	*out = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v))
		return wrong_type(where, key, v, "a string", err);
	*out = v->valuestring;
	return 0;
}

int api_json_bool(const cJSON *o, const char *where, const char *key, bool *out, sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v))
		return wrong_type(where, key, v, "true or false", err);
	*out = cJSON_IsTrue(v);
	return 0;
}

int api_json_uint(const cJSON *o, const char *where, const char *key, uint64_t min, uint64_t max,
		  uint64_t *out, bool *given, sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	*given = false;
	if (!v || cJSON_IsNull(v))
		return 0;
	double d;
	if (cJSON_IsNumber(v)) {
		d = v->valuedouble;
	} else if (cJSON_IsString(v)) {
		char *end;
		errno = 0;
		unsigned long long u = strtoull(v->valuestring, &end, 10);
		if (!*v->valuestring || *end || errno || v->valuestring[0] == '-')
			return sl_fail(err, SL_INVALID, 0, "%s%s: \"%s\" is not a whole number",
				       where, key, v->valuestring);
		d = (double)u;
	} else {
		return wrong_type(where, key, v, "a whole number", err);
	}
	/* The range first: a cast of a double out of uint64_t's range (or NaN) is undefined;
	 * MAX = UINT64_MAX is 2^64 as a double, itself out of range. */
	if (!(d >= (double)min && d <= (double)max && d < 0x1p64) || d != (double)(uint64_t)d)
		return sl_fail(err, SL_INVALID, 0,
			       "%s%s: expected a whole number from %llu to %llu", where, key,
			       (unsigned long long)min, (unsigned long long)max);
	*out = (uint64_t)d;
	*given = true;
	return 0;
}

int api_json_duration(const cJSON *o, const char *where, const char *key, uint64_t *ms, bool *given,
		      sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	char field[128];
	snprintf(field, sizeof(field), "%s%s", where, key);
	*given = false;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if (!(d >= 0 && d <= 1e15) || d != (double)(uint64_t)d)
			return sl_fail(err, SL_INVALID, 0,
				       "%s: a number means milliseconds and must be a whole number "
				       "from 0",
				       field);
		*ms = (uint64_t)d;
	} else if (cJSON_IsString(v)) {
		if (duration_parse(field, v->valuestring, ms, err) < 0)
			return -1;
	} else {
		return wrong_type(where, key, v, "a duration (\"30s\") or milliseconds", err);
	}
	*given = true;
	return 0;
}

void api_strv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

char **api_strv_dup(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	char **c = v ? calloc(n + 1, sizeof(*c)) : NULL;
	for (size_t i = 0; c && i < n; i++)
		if (!(c[i] = strdup(v[i]))) {
			api_strv_free(c);
			return NULL;
		}
	return c;
}

int api_json_kv(const cJSON *o, const char *where, const char *key, char ***out, sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	*out = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsObject(v))
		return wrong_type(where, key, v, "an object of strings", err);
	size_t n = cJSON_GetArraySize(v), k = 0;
	char **list = calloc(n + 1, sizeof(char *));
	if (!list)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "%s%s", where, key);
	const cJSON *it;
	cJSON_ArrayForEach(it, v)
	{
		if (!cJSON_IsString(it)) {
			api_strv_free(list);
			return sl_fail(err, SL_INVALID, 0, "%s%s.%s: expected a string, got %s",
				       where, key, it->string, type_name(it));
		}
		if (!*it->string || strchr(it->string, '=')) {
			api_strv_free(list);
			return sl_fail(err, SL_INVALID, 0,
				       "%s%s: \"%s\" is not a valid name (empty or has '=')", where,
				       key, it->string);
		}
		if (asprintf(&list[k], "%s=%s", it->string, it->valuestring) < 0) {
			list[k] = NULL;
			api_strv_free(list);
			return sl_fail(err, SL_INTERNAL, ENOMEM, "%s%s", where, key);
		}
		k++;
	}
	*out = list;
	return 0;
}

int api_json_command(const cJSON *o, const char *where, const char *key, char ***argv,
		     const char **shell, sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	*argv = NULL;
	*shell = NULL;
	if (!v || cJSON_IsNull(v))
		return sl_fail(err, SL_INVALID, 0, "%s%s: required (an argv array or a shell line)",
			       where, key);
	if (cJSON_IsString(v)) {
		if (!*v->valuestring)
			return sl_fail(err, SL_INVALID, 0, "%s%s: empty", where, key);
		*shell = v->valuestring;
		return 0;
	}
	if (!cJSON_IsArray(v))
		return wrong_type(where, key, v, "an array of strings or a string", err);
	size_t n = cJSON_GetArraySize(v), k = 0;
	if (n == 0)
		return sl_fail(err, SL_INVALID, 0, "%s%s: empty", where, key);
	char **list = calloc(n + 1, sizeof(char *));
	if (!list)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "%s%s", where, key);
	const cJSON *it;
	cJSON_ArrayForEach(it, v)
	{
		if (!cJSON_IsString(it)) {
			api_strv_free(list);
			return sl_fail(err, SL_INVALID, 0, "%s%s[%zu]: expected a string, got %s",
				       where, key, k, type_name(it));
		}
		list[k] = strdup(it->valuestring);
		if (!list[k]) {
			api_strv_free(list);
			return sl_fail(err, SL_INTERNAL, ENOMEM, "%s%s", where, key);
		}
		k++;
	}
	*argv = list;
	return 0;
}

int api_base64_decode(const char *field, const char *text, unsigned char **out, size_t *len,
		      sl_err *err)
{
	size_t n = strlen(text);
	unsigned char *buf = malloc(BASE64_DECODE_LENGTH(n) + 1);
	if (!buf)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "%s: decode base64", field);
	struct base64_decode_ctx ctx;
	base64_decode_init(&ctx);
	size_t dl = 0;
	if (!base64_decode_update(&ctx, &dl, buf, n, text) || !base64_decode_final(&ctx)) {
		free(buf);
		return sl_fail(err, SL_INVALID, 0, "%s: not valid base64", field);
	}
	*out = buf;
	*len = dl;
	return 0;
}

int api_parse_mode(const char *field, const char *s, uint32_t *mode, sl_err *err)
{
	char *end;
	errno = 0;
	unsigned long m = strtoul(s, &end, 8);
	if (*s < '0' || *s > '7' || *end || errno || m > 07777)
		return sl_fail(err, SL_INVALID, 0,
			       "%s: \"%s\" is not an octal file mode (\"0644\", up to 07777)",
			       field, s);
	*mode = (uint32_t)m;
	return 0;
}

int api_json_mode(const cJSON *o, const char *where, const char *key, uint32_t *mode, bool *given,
		  sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	char field[128];
	snprintf(field, sizeof(field), "%s%s", where, key);
	*given = false;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (cJSON_IsString(v)) {
		if (api_parse_mode(field, v->valuestring, mode, err) < 0)
			return -1;
	} else if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if (!(d >= 0 && d <= 07777) || d != (double)(uint32_t)d)
			return sl_fail(err, SL_INVALID, 0,
				       "%s: a number is the mode's value (420 = 0644), 0 to 4095; "
				       "or give an octal string",
				       field);
		*mode = (uint32_t)d;
	} else {
		return wrong_type(where, key, v, "an octal string (\"0644\") or a number", err);
	}
	*given = true;
	return 0;
}

/* Length of the valid UTF-8 sequence at P (max N bytes), 0 if invalid. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	if (p[0] < 0x80)
		return p[0] ? 1 : 0;
	size_t len;
	uint32_t cp;
	if ((p[0] & 0xe0) == 0xc0)
		len = 2, cp = p[0] & 0x1f;
	else if ((p[0] & 0xf0) == 0xe0)
		len = 3, cp = p[0] & 0x0f;
	else if ((p[0] & 0xf8) == 0xf0)
		len = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
	if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

char *api_utf8_string(const char *buf, size_t len)
{
	/* Worst case every byte becomes the 3-byte U+FFFD. */
	char *out = malloc(len * 3 + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	const unsigned char *p = (const unsigned char *)buf;
	for (size_t i = 0; i < len;) {
		size_t s = utf8_seq(p + i, len - i);
		if (s) {
			memcpy(out + o, p + i, s);
			o += s, i += s;
		} else {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3, i++;
		}
	}
	out[o] = '\0';
	return out;
}

static const struct {
	const char *name;
	int sig;
} signals[] = {
    {"HUP", SIGHUP},	   {"INT", SIGINT},   {"QUIT", SIGQUIT},   {"ILL", SIGILL},
    {"TRAP", SIGTRAP},	   {"ABRT", SIGABRT}, {"BUS", SIGBUS},	   {"FPE", SIGFPE},
    {"KILL", SIGKILL},	   {"USR1", SIGUSR1}, {"SEGV", SIGSEGV},   {"USR2", SIGUSR2},
    {"PIPE", SIGPIPE},	   {"ALRM", SIGALRM}, {"TERM", SIGTERM},   {"CHLD", SIGCHLD},
    {"CONT", SIGCONT},	   {"STOP", SIGSTOP}, {"TSTP", SIGTSTP},   {"TTIN", SIGTTIN},
    {"TTOU", SIGTTOU},	   {"URG", SIGURG},   {"XCPU", SIGXCPU},   {"XFSZ", SIGXFSZ},
    {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},
    {"PWR", SIGPWR},	   {"SYS", SIGSYS},
};

int api_signal_parse(const char *field, const char *s, int *sig, sl_err *err)
{
	if (!s || !*s)
		return sl_fail(err, SL_INVALID, 0, "%s: empty; give a name like \"SIGTERM\"",
			       field);
	char *end;
	long n = strtol(s, &end, 10);
	if (!*end && n >= 1 && n < NSIG) {
		*sig = (int)n;
		return 0;
	}
	const char *name = strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		if (!strcasecmp(name, signals[i].name)) {
			*sig = signals[i].sig;
			return 0;
		}
	return sl_fail(err, SL_INVALID, 0, "%s: \"%s\" is not a signal (SIGTERM, SIGKILL, 15...)",
		       field, s);
}

void api_duration_format(uint64_t ms, char *buf, size_t len)
{
	if (ms == 0)
		snprintf(buf, len, "0s");
	else if (ms % 3600000 == 0)
		snprintf(buf, len, "%lluh", (unsigned long long)(ms / 3600000));
	else if (ms % 60000 == 0)
		snprintf(buf, len, "%llum", (unsigned long long)(ms / 60000));
	else if (ms % 1000 == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(ms / 1000));
	else
		snprintf(buf, len, "%llums", (unsigned long long)ms);
}
