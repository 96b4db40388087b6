/* http.c — replies in the API's one error shape, and the query/body helpers every
 * route uses; nothing here knows what a sandbox is. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "quantity.h"
#include "http.h"

enum MHD_Result api_reply(api_req *r, unsigned status, struct MHD_Response *resp)
{
	if (!resp)
		return MHD_NO;
	if (r->deferring) {
		if (r->deferred)
			MHD_destroy_response(r->deferred);
		r->deferred = resp;
		r->deferred_status = status;
		return MHD_YES;
	}
	enum MHD_Result ret = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	if (ret == MHD_YES)
		r->queued = true;
	return ret;
}

static struct MHD_Response *json_response(cJSON *body)
{
	char *s = cJSON_PrintUnformatted(body);
	cJSON_Delete(body);
	if (!s)
		return NULL;
	size_t n = strlen(s);
	/* A trailing newline makes curl output readable; JSON parsers ignore it. */
	char *t = realloc(s, n + 2);
	if (!t) {
		free(s);
		return NULL;
	}
	t[n] = '\n';
	t[n + 1] = '\0';
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(n + 1, t, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(t);
		return NULL;
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	return resp;
}

enum MHD_Result api_reply_json(api_req *r, unsigned status, cJSON *body)
{
	if (!body)
		return MHD_NO;
	return api_reply(r, status, json_response(body));
}

static int json_list_put(api_json_list *l, const char *s, size_t n, sl_err *err)
{
	if (l->len + n + 1 > API_JSON_LIST_MAX)
		return sl_fail(err, SL_TOOLARGE, 0,
			       "the answer would pass %u MiB of JSON after %zu entries; ask for less",
			       API_JSON_LIST_MAX >> 20, l->count);
	if (l->len + n + 1 > l->cap) {
		size_t cap = l->cap ? l->cap : 4096;
		while (cap < l->len + n + 1)
			cap *= 2;
		char *b = realloc(l->buf, cap);
		if (!b)
			return sl_fail(err, SL_INTERNAL, ENOMEM, "a listing's answer");
		l->buf = b;
		l->cap = cap;
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
	l->buf[l->len] = '\0';
	return 0;
}

int api_json_list_add(api_json_list *l, cJSON *item, sl_err *err)
{
	char *s = item ? cJSON_PrintUnformatted(item) : NULL;
	cJSON_Delete(item);
	if (!s)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "a listing's answer");
	int rc = json_list_put(l, l->count ? "," : "[", 1, err);
	if (rc == 0)
		rc = json_list_put(l, s, strlen(s), err);
	free(s);
	if (rc == 0)
		l->count++;
	return rc;
}

enum MHD_Result api_reply_json_list(api_req *r, unsigned status, api_json_list *l,
				    const char *before, const char *after)
{
	size_t nb = strlen(before), na = strlen(after);
	char *t = malloc(nb + (l->len ? l->len : 1) + 1 + na + 2);
	if (!t)
		return MHD_NO;
	size_t n = 0;
	memcpy(t, before, nb);
	n += nb;
	memcpy(t + n, l->len ? l->buf : "[", l->len ? l->len : 1);
	n += l->len ? l->len : 1;
	t[n++] = ']';
	memcpy(t + n, after, na);
	n += na;
	t[n++] = '\n';
	t[n] = '\0';
	api_json_list_free(l);
	struct MHD_Response *resp = MHD_create_response_from_buffer(n, t, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(t);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	return api_reply(r, status, resp);
}

void api_json_list_free(api_json_list *l)
{
	free(l->buf);
	l->buf = NULL;
	l->len = l->cap = l->count = 0;
}

enum MHD_Result api_reply_empty(api_req *r, unsigned status)
{
	return api_reply(r, status,
			 MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT));
}

struct MHD_Response *api_error_response(const char *code, const char *message, cJSON *extra)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *e = cJSON_AddObjectToObject(o, "error");
	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", message);
	if (extra) {
		cJSON *it = extra->child;
		while (it) {
			cJSON *next = it->next;
			cJSON_AddItemToObject(e, it->string, cJSON_DetachItemViaPointer(extra, it));
			it = next;
		}
		cJSON_Delete(extra);
	}
	return json_response(o);
}

/* The one mapping of a failure to an HTTP status: /v1 and every façade answer by it. */
unsigned api_err_status(const sl_err *err)
{
	static const unsigned status[] = {
	    [SL_INVALID] = 400,	  [SL_NOTFOUND] = 404, [SL_CONFLICT] = 409,
	    [SL_TOOLARGE] = 413,  [SL_EXHAUSTED] = 429, [SL_NOTIMPL] = 501,
	    [SL_TIMEOUT] = 504,	  [SL_INTERNAL] = 500, [SL_UNAUTH] = 401,
	    [SL_NOSPACE] = 507,
	    [SL_UPSTREAM] = 502,
	    [SL_HIBERNATE_REFUSED] = 409,
	};
	sl_kind kind = err->kind && err->kind <= SL_HIBERNATE_REFUSED ? err->kind : SL_INTERNAL;
	/* 507 rather than 429 when the disk quota ran out: the caller cannot retry it away. */
	if (kind == SL_EXHAUSTED && (err->errnum == ENOSPC || err->errnum == EDQUOT))
		return 507;
	return status[kind];
}

enum MHD_Result api_reply_error(api_req *r, const sl_err *err)
{
	sl_kind kind = err->kind ? err->kind : SL_INTERNAL;
	unsigned status = api_err_status(err);
	struct MHD_Response *resp = api_error_response(
	    sl_kind_code(kind), err->msg[0] ? err->msg : "internal error", NULL);
	/* A 429 is a busy moment (the import slots, the uid ranges): say when to try again. */
	if (status == 429 && resp)
		MHD_add_response_header(resp, "Retry-After", "1");
	return api_reply(r, status, resp);
}

enum MHD_Result api_fail_with(api_req *r, api_error_reply reply, const char *code, sl_kind kind,
			      const char *fmt, ...)
{
	sl_err err = {0};
	err.kind = kind;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err.msg, sizeof(err.msg), fmt, ap);
	va_end(ap);
	return reply(r, &err, code);
}

enum MHD_Result api_reply_error_coded(api_req *r, const sl_err *err, const char *code)
{
	(void)code; /* /v1's code is always the kind's */
	return api_reply_error(r, err);
}

const char *api_query(api_req *r, const char *key)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

int api_query_uint(api_req *r, const char *key, uint64_t max, uint64_t *out, sl_err *err)
{
	const char *v = api_query(r, key);
	if (!v)
		return 0;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (!*v || *end || errno || *v == '-' || n > max)
		return sl_fail(err, SL_INVALID, 0, "?%s=%s: expected a whole number up to %llu",
			       key, v, (unsigned long long)max);
	*out = n;
	return 0;
}

int api_query_bool(api_req *r, const char *key, bool def, bool *out, sl_err *err)
{
	const char *v = api_query(r, key);
	*out = def;
	if (!v)
		return 0;
	if (!*v || !strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"))
		*out = true;
	else if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no"))
		*out = false;
	else
		return sl_fail(err, SL_INVALID, 0, "?%s=%s: expected 1 or 0 (true or false)", key,
			       v);
	return 0;
}

int api_query_duration(api_req *r, const char *key, uint64_t *ms, bool *given, sl_err *err)
{
	const char *v = api_query(r, key);
	*given = v != NULL;
	*ms = 0;
	if (!v)
		return 0;
	char field[64];
	snprintf(field, sizeof(field), "?%s", key);
	return duration_parse(field, v, ms, err);
}

int api_body_object(api_req *r, bool empty_ok, const cJSON **out, sl_err *err)
{
	*out = r->json;
	if (!r->json) {
		if (empty_ok)
			return 0;
		return sl_fail(err, SL_INVALID, 0, "the request needs a JSON object body");
	}
	if (!cJSON_IsObject(r->json))
		return sl_fail(err, SL_INVALID, 0, "the request body must be a JSON object");
	return 0;
}

bool api_client_gone(api_req *r)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return false;
	struct pollfd p = {ci->connect_fd, POLLRDHUP, 0};
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

cJSON *api_json_parse(const char *text, size_t len, sl_err *err)
{
	const char *end = NULL;
	cJSON *o = cJSON_ParseWithLengthOpts(text, len, &end, false);
	if (o) {
		/* Only whitespace may follow the value. */
		size_t at = end - text;
		while (at < len && strchr(" \t\r\n", text[at]))
			at++;
		if (at == len)
			return o;
		cJSON_Delete(o);
		end = text + at;
	}
	size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : len;
	size_t line = 1, col = 1;
	for (size_t i = 0; i < at; i++) {
		if (text[i] == '\n')
			line++, col = 1;
		else
			col++;
	}
	char near[24] = "";
	size_t k = 0;
	for (size_t i = at; i < len && k < 16; i++)
		near[k++] =
		    (unsigned char)text[i] >= 0x20 && (unsigned char)text[i] < 0x7f ? text[i] : '?';
	near[k] = '\0';
	if (at >= len)
		sl_fail(err, SL_INVALID, 0,
			"malformed JSON: the body ends early (at byte %zu, line %zu, column %zu)",
			at, line, col);
	else
		sl_fail(err, SL_INVALID, 0,
			"malformed JSON at byte %zu (line %zu, column %zu), near \"%s\"", at, line,
			col, near);
	return NULL;
}
