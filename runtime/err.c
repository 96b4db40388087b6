/* err.c — building and wrapping sl_err values; mapping kinds to API codes. */
#include "err.h"

#include <stdio.h>
#include <string.h>

int sl_fail(sl_err *err, sl_kind kind, int errnum, const char *fmt, ...)
{
	if (!err)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	if (errnum && n >= 0 && (size_t)n < sizeof(err->msg))
		snprintf(err->msg + n, sizeof(err->msg) - n, ": %s", strerror(errnum));
	err->kind = kind;
	err->errnum = errnum;
	return -1;
}

int sl_wrap(sl_err *err, const char *fmt, ...)
{
	if (!err)
		return -1;
	char prefix[512], old[sizeof(err->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	size_t n = strnlen(prefix, sizeof(prefix));
	if (n > sizeof(err->msg) - 3)
		n = sizeof(err->msg) - 3;
	memcpy(err->msg, prefix, n);
	memcpy(err->msg + n, ": ", 2);
	size_t rest = sizeof(err->msg) - n - 3;
	size_t ol = strnlen(old, rest);
	memcpy(err->msg + n + 2, old, ol);
	err->msg[n + 2 + ol] = '\0';
	if (err->kind == SL_OK)
		err->kind = SL_INTERNAL;
	return -1;
}

int sl_wrap_obj(sl_err *err, const char *kind, const char *id, const char *step)
{
	if (!err)
		return -1;
	if (!err->kind)
		err->kind = SL_INTERNAL;
	if (id && *id && strstr(err->msg, id))
		return -1;
	return sl_wrap(err, "%s %s: %s", kind, id ? id : "?", step);
}

void sl_err_clear(sl_err *err)
{
	if (err) {
		err->kind = SL_OK;
		err->errnum = 0;
		err->msg[0] = '\0';
	}
}

/* The stable machine codes; their HTTP statuses are the API's (api/http.c). */
static const char *const kind_codes[] = {
	[SL_OK] = "OK",
	[SL_INVALID] = "INVALID_ARGUMENT",
	[SL_NOTFOUND] = "NOT_FOUND",
	[SL_CONFLICT] = "CONFLICT",
	[SL_TOOLARGE] = "PAYLOAD_TOO_LARGE",
	[SL_EXHAUSTED] = "RESOURCE_EXHAUSTED",
	[SL_NOTIMPL] = "NOT_IMPLEMENTED",
	[SL_TIMEOUT] = "TIMEOUT",
	[SL_INTERNAL] = "INTERNAL",
	[SL_UNAUTH] = "UNAUTHENTICATED",
	[SL_NOSPACE] = "INSUFFICIENT_STORAGE",
	[SL_UPSTREAM] = "BAD_GATEWAY",
	[SL_HIBERNATE_REFUSED] = "HIBERNATE_REFUSED",
};

const char *sl_kind_code(sl_kind kind)
{
	return kind <= SL_HIBERNATE_REFUSED ? kind_codes[kind] : "INTERNAL";
}
