/* ports_parse.c — the `ports` object of a create or PATCH, and a preview request's head:
 * the Host it routes by, the credential it carries, and the head forwarded without it
 * (and with the sandbox's request host, when it has one). */
#include "ports_parse.h"
#include "ui.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int ports_parse(const cJSON *v, sl_port_setting *set, size_t *n, sl_err *err)
{
	*n = 0;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsObject(v))
		return sl_fail(err, SL_INVALID, 0,
			       "ports: expected an object like {\"8000\": {\"public\": true}}");
	const cJSON *it;
	cJSON_ArrayForEach(it, v)
	{
		const char *k = it->string;
		unsigned long p = SL_PORT_ALL;
		if (strcmp(k, "*") != 0) {
			char *end;
			errno = 0;
			p = strtoul(k, &end, 10);
			if (!*k || *end || errno || *k < '1' || *k > '9' || p > 65535)
				return sl_fail(err, SL_INVALID, 0,
					       "ports.%s: not a port number (1-65535, or \"*\" for "
					       "every port)",
					       k);
		}
		if (*n >= SL_MAX_PORTS)
			return sl_fail(err, SL_INVALID, 0, "ports: at most %d entries",
				       SL_MAX_PORTS);
		if (!cJSON_IsObject(it))
			return sl_fail(err, SL_INVALID, 0,
				       "ports.%s: expected an object {\"public\": bool}", k);
		const cJSON *f;
		cJSON_ArrayForEach(f, it) if (strcmp(f->string, "public")) return sl_fail(
		    err, SL_INVALID, 0, "ports.%s.%s: unknown field (known: public)", k, f->string);
		const cJSON *pub = cJSON_GetObjectItemCaseSensitive(it, "public");
		if (!cJSON_IsBool(pub))
			return sl_fail(err, SL_INVALID, 0,
				       "ports.%s.public: expected true or false", k);
		set[*n].port = (unsigned)p;
		set[*n].public_port = cJSON_IsTrue(pub);
		(*n)++;
	}
	return 0;
}

/* ---- the preview head ---- */

static void add_cred(preview_req *r, preview_src src, const char *v, size_t len)
{
	while (len && (*v == ' ' || *v == '\t'))
		v++, len--;
	while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
		len--;
	if (r->ncred == PREVIEW_MAX_CREDS || !len || len >= sizeof(r->cred[0].value))
		return;
	r->cred[r->ncred].src = src;
	memcpy(r->cred[r->ncred].value, v, len);
	r->cred[r->ncred].value[len] = '\0';
	r->ncred++;
}

/* "8080-sbx_xxx.localhost[:N]" -> port and id. */
static void parse_host(preview_req *r, const char *h, size_t len)
{
	char host[256];
	while (len && (*h == ' ' || *h == '\t'))
		h++, len--;
	if (len >= sizeof(host))
		return;
	memcpy(host, h, len);
	host[len] = '\0';
	host[strcspn(host, ": \t")] = '\0';
	char *dash = strchr(host, '-'), *dot = strstr(host, ".localhost");
	if (!dash || !dot || dot < dash || strcmp(dot, ".localhost"))
		return;
	char *end;
	unsigned long p = strtoul(host, &end, 10);
	if (end != dash || p < 1 || p > 65535 || (size_t)(dot - dash - 1) >= sizeof(r->id) ||
	    strncmp(dash + 1, "sbx_", 4))
		return;
	snprintf(r->id, sizeof(r->id), "%.*s", (int)(dot - dash - 1), dash + 1);
	r->port = (unsigned)p;
}

/* Append to a growing buffer (the forwarded head is never longer than the original plus
 * "Connection: close\r\n"). */
static void put(char *buf, size_t *at, const char *s, size_t n)
{
	memcpy(buf + *at, s, n);
	*at += n;
}

/* The Cookie header's value without sandlot_token=... and the dashboard's cookie, its value
 * recorded; OUT holds 2 * LEN bytes. */
static size_t cookie_strip(preview_req *r, const char *v, size_t len, char *out)
{
	size_t o = 0;
	const char *p = v, *end = v + len;
	while (p < end) {
		const char *semi = memchr(p, ';', end - p);
		const char *e = semi ? semi : end;
		const char *s = p;
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		size_t nl = strlen(PREVIEW_COOKIE_NAME);
		size_t ul = strlen(UI_COOKIE_NAME);
		if ((size_t)(e - s) > nl && !strncmp(s, PREVIEW_COOKIE_NAME, nl) && s[nl] == '=') {
			add_cred(r, PREVIEW_COOKIE, s + nl + 1, e - s - nl - 1);
		} else if ((size_t)(e - s) > ul && !strncmp(s, UI_COOKIE_NAME, ul) &&
			   s[ul] == '=') {
			/* The dashboard's session is never the sandbox's business (ui.c). */
		} else if (e > s) {
			if (o)
				put(out, &o, "; ", 2);
			put(out, &o, s, e - s);
		}
		p = semi ? semi + 1 : end;
	}
	return o;
}

/* The request target with ?sandlot_token=... cut out (its value recorded). */
static char *target_strip(preview_req *r, const char *t, size_t len)
{
	char *out = malloc(len + 1);
	if (!out)
		return NULL;
	const char *q = memchr(t, '?', len);
	size_t o = 0;
	if (!q) {
		put(out, &o, t, len);
		out[o] = '\0';
		return out;
	}
	put(out, &o, t, q - t);
	const char *p = q + 1, *end = t + len;
	bool first = true;
	size_t nl = strlen("sandlot_token");
	while (p <= end) {
		const char *amp = memchr(p, '&', end - p);
		const char *e = amp ? amp : end;
		if ((size_t)(e - p) >= nl && !strncmp(p, "sandlot_token", nl) &&
		    (p + nl == e || p[nl] == '=')) {
			if (p + nl < e)
				add_cred(r, PREVIEW_QUERY, p + nl + 1, e - p - nl - 1);
		} else if (e > p) {
			put(out, &o, first ? "?" : "&", 1);
			put(out, &o, p, e - p);
			first = false;
		}
		if (!amp)
			break;
		p = amp + 1;
	}
	out[o] = '\0';
	return out;
}

static bool header_is(const char *line, size_t len, const char *name)
{
	size_t n = strlen(name);
	return len > n && line[n] == ':' && !strncasecmp(line, name, n);
}

int preview_head_parse(const char *head, size_t len, preview_req *r)
{
	memset(r, 0, sizeof(*r));
	const char *end = head + len;
	const char *eol = memchr(head, '\n', len);
	if (!eol || len < 4 || memcmp(end - 4, "\r\n\r\n", 4))
		return -1;
	/* Request line: METHOD SP TARGET SP VERSION */
	const char *sp1 = memchr(head, ' ', eol - head);
	const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', eol - sp1 - 1) : NULL;
	if (!sp1 || !sp2 || sp2 == sp1 + 1)
		return -1;
	r->target = target_strip(r, sp1 + 1, sp2 - sp1 - 1);
	r->head = malloc(2 * len + 64); /* a rebuilt Cookie line can be a byte longer */
	if (!r->target || !r->head) {
		preview_req_free(r);
		return -1;
	}
	size_t o = 0;
	put(r->head, &o, head, sp1 + 1 - head);
	put(r->head, &o, r->target, strlen(r->target));
	put(r->head, &o, sp2, eol + 1 - sp2);
	/* Upgrade: may come after Connection:, which an upgrade keeps. */
	for (const char *l = eol + 1; l < end - 2;) {
		const char *nl = memchr(l, '\n', end - l);
		if (!nl)
			break;
		r->upgrade |= header_is(l, nl - l, "Upgrade");
		l = nl + 1;
	}
	for (const char *l = eol + 1; l < end - 2;) {
		const char *nl = memchr(l, '\n', end - l);
		if (!nl)
			break;
		size_t ll = nl - l; /* without \n; with \r */
		size_t vl = ll && l[ll - 1] == '\r' ? ll - 1 : ll;
		const char *colon = memchr(l, ':', vl);
		if (!colon) {
			preview_req_free(r);
			return -1;
		}
		const char *v = colon + 1;
		size_t vlen = l + vl - v;
		if (header_is(l, vl, "Host")) {
			parse_host(r, v, vlen);
		} else if (header_is(l, vl, "X-Sandlot-Preview-Token")) {
			add_cred(r, PREVIEW_HEADER, v, vlen);
			l = nl + 1;
			continue;
		} else if (header_is(l, vl, "X-Daytona-Preview-Token")) {
			add_cred(r, PREVIEW_DAYTONA, v, vlen);
			l = nl + 1;
			continue;
		} else if (header_is(l, vl, "E2B-Traffic-Access-Token")) {
			add_cred(r, PREVIEW_E2B, v, vlen);
			l = nl + 1;
			continue;
		} else if (header_is(l, vl, "Cookie")) {
			/* Cookies are rejoined with "; ": "a;b" grows to "a; b", up to half
			 * again as long as the value, never twice. */
			char *kept = malloc(2 * vlen + 1);
			size_t kl = kept ? cookie_strip(r, v, vlen, kept) : 0;
			if (kl) {
				put(r->head, &o, "Cookie: ", 8);
				put(r->head, &o, kept, kl);
				put(r->head, &o, "\r\n", 2);
			}
			free(kept);
			l = nl + 1;
			continue;
		} else if (!r->upgrade &&
			   (header_is(l, vl, "Connection") || header_is(l, vl, "Keep-Alive"))) {
			/* An upgrade keeps its own; anything else is closed after one answer. */
			l = nl + 1;
			continue;
		}
		put(r->head, &o, l, nl + 1 - l);
		l = nl + 1;
	}
	if (!r->upgrade)
		put(r->head, &o, "Connection: close\r\n", 19);
	put(r->head, &o, "\r\n", 2);
	r->head[o] = '\0';
	r->head_len = o;
	return 0;
}

/* MASK with each "${PORT}" made PORT, into OUT (at most CAP - 1 bytes kept). */
static size_t mask_expand(const char *mask, unsigned port, char *out, size_t cap)
{
	static const char var[] = "${PORT}";
	char num[8];
	size_t nl = (size_t)snprintf(num, sizeof(num), "%u", port), o = 0;
	for (const char *p = mask; *p && o + 1 < cap;) {
		bool is_var = !strncmp(p, var, sizeof(var) - 1);
		const char *s = is_var ? num : p;
		size_t n = is_var ? nl : 1;
		if (o + n >= cap)
			break;
		memcpy(out + o, s, n);
		o += n;
		p += is_var ? sizeof(var) - 1 : 1;
	}
	out[o] = '\0';
	return o;
}

int preview_head_set_host(preview_req *r, const char *mask, unsigned port)
{
	if (!mask || !*mask || !r->head)
		return 0;
	/* At most 255 characters of mask, each "${PORT}" (7) at most 5 digits. */
	char host[320];
	size_t hl = mask_expand(mask, port, host, sizeof(host));
	char *out = malloc(r->head_len + hl + 16);
	if (!out)
		return -1;
	const char *p = r->head, *end = r->head + r->head_len;
	const char *eol = memchr(p, '\n', r->head_len);
	size_t o = 0;
	put(out, &o, p, eol + 1 - p);
	put(out, &o, "Host: ", 6);
	put(out, &o, host, hl);
	put(out, &o, "\r\n", 2);
	for (const char *l = eol + 1; l < end;) {
		const char *nl = memchr(l, '\n', end - l);
		size_t ll = nl ? (size_t)(nl + 1 - l) : (size_t)(end - l);
		if (!header_is(l, ll, "Host"))
			put(out, &o, l, ll);
		l += ll;
	}
	out[o] = '\0';
	free(r->head);
	r->head = out;
	r->head_len = o;
	return 0;
}

void preview_req_free(preview_req *r)
{
	free(r->head);
	free(r->target);
	r->head = r->target = NULL;
}
