/* multipart.c — multipart/form-data read as a stream (multipart.h). */
#include "multipart.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cleanup.h"

enum { MP_BODY, MP_AFTER_DELIM, MP_HEADERS, MP_DONE };

int api_multipart_init(api_multipart *m, const char *ct, const api_multipart_cb *cb, void *arg,
		       sl_err *err)
{
	memset(m, 0, sizeof(*m));
	m->cb = *cb;
	m->arg = arg;
	const char *b = ct ? strcasestr(ct, "boundary=") : NULL;
	if (!ct || strncasecmp(ct, "multipart/form-data", 19) || !b)
		return sl_fail(err, SL_INVALID, 0,
			       "a multipart/form-data body with a boundary is needed");
	b += 9;
	size_t n = *b == '"' ? strcspn(b + 1, "\"") : strcspn(b, "; \t");
	if (*b == '"')
		b++;
	if (n == 0 || n > 70)
		return sl_fail(err, SL_INVALID, 0, "multipart boundary: 1 to 70 characters");
	m->dlen = (size_t)snprintf(m->delim, sizeof(m->delim), "\r\n--%.*s", (int)n, b);
	/* The first delimiter has no CRLF before it: supply one. */
	m->cap = 4096;
	if (!(m->buf = malloc(m->cap)))
		return sl_fail(err, SL_INTERNAL, ENOMEM, "multipart");
	memcpy(m->buf, "\r\n", 2);
	m->len = 2;
	m->state = MP_BODY;
	return 0;
}

static int part_data(api_multipart *m, const char *p, size_t n, sl_err *err)
{
	return m->in_part && n ? m->cb.data(m->arg, p, n, err) : 0;
}

static int part_end(api_multipart *m, sl_err *err)
{
	if (!m->in_part)
		return 0;
	m->in_part = false;
	return m->cb.end(m->arg, err);
}

/* Consume what m->buf holds; keep any tail that may start a delimiter. */
static int parse(api_multipart *m, sl_err *err)
{
	size_t at = 0;
	while (m->state != MP_DONE) {
		char *p = m->buf + at;
		size_t avail = m->len - at;
		if (m->state == MP_BODY) {
			char *hit = memmem(p, avail, m->delim, m->dlen);
			if (!hit) {
				size_t safe = avail >= m->dlen ? avail - (m->dlen - 1) : 0;
				if (part_data(m, p, safe, err) < 0)
					return -1;
				at += safe;
				break;
			}
			if (part_data(m, p, (size_t)(hit - p), err) < 0 || part_end(m, err) < 0)
				return -1;
			at += (size_t)(hit - p) + m->dlen;
			m->state = MP_AFTER_DELIM;
			continue;
		}
		if (m->state == MP_AFTER_DELIM) {
			if (avail < 2)
				break;
			if (!memcmp(p, "--", 2)) {
				m->state = MP_DONE;
				continue;
			}
			char *eol = memmem(p, avail, "\r\n", 2);
			if (!eol) {
				if (avail > API_MULTIPART_HEADER_MAX)
					return sl_fail(err, SL_INVALID, 0,
						       "multipart: a delimiter line over %d bytes",
						       API_MULTIPART_HEADER_MAX);
				break;
			}
			at += (size_t)(eol - p) + 2; /* transport padding, then the line's CRLF */
			m->state = MP_HEADERS;
			continue;
		}
		/* MP_HEADERS: up to an empty line. */
		char *end =
		    avail >= 2 && !memcmp(p, "\r\n", 2) ? p : memmem(p, avail, "\r\n\r\n", 4);
		if (!end) {
			if (avail > API_MULTIPART_HEADER_MAX)
				return sl_fail(err, SL_INVALID, 0,
					       "multipart: part headers over %d bytes",
					       API_MULTIPART_HEADER_MAX);
			break;
		}
		size_t hl = (size_t)(end - p);
		_cleanup_free_ char *h = strndup(p, hl);
		if (!h)
			return sl_fail(err, SL_INTERNAL, ENOMEM, "multipart");
		at += hl + (end == p ? 2 : 4);
		m->in_part = true;
		if (m->cb.begin(m->arg, h, err) < 0)
			return -1;
		m->state = MP_BODY;
	}
	if (m->state == MP_DONE)
		at = m->len; /* the epilogue is ignored */
	memmove(m->buf, m->buf + at, m->len - at);
	m->len -= at;
	return 0;
}

int api_multipart_feed(api_multipart *m, const char *data, size_t len, sl_err *err)
{
	if (m->state == MP_DONE)
		return 0;
	if (m->len + len > m->cap) {
		size_t cap = m->cap;
		while (cap < m->len + len)
			cap *= 2;
		char *b = realloc(m->buf, cap);
		if (!b)
			return sl_fail(err, SL_INTERNAL, ENOMEM, "multipart");
		m->buf = b;
		m->cap = cap;
	}
	memcpy(m->buf + m->len, data, len);
	m->len += len;
	return parse(m, err);
}

bool api_multipart_done(const api_multipart *m)
{
	return m->state == MP_DONE;
}

void api_multipart_free(api_multipart *m)
{
	free(m->buf);
	m->buf = NULL;
	m->len = m->cap = 0;
}
