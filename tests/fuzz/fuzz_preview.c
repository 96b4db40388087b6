/* fuzz_preview.c — the preview proxy's request-head reader (preview_head_parse, api/
 * ports_parse.c): the Host it routes by, the credentials it takes, the head it forwards. */
#include <strings.h>

#include "fuzz.h"
#include "ports_parse.h"

/* Input: a request head; "\r\n\r\n" is added when it does not end so (the proxy reads
 * up to it). Checked: the forwarded head ends with a blank line, keeps within its buffer,
 * and carries no credential on to the sandbox (no token header, no sandlot_token
 * cookie, no ?sandlot_token in the target); a routed Host names a port and an sbx_ id. */

static bool header_is(const char *l, size_t len, const char *name)
{
	size_t n = strlen(name);
	return len > n && l[n] == ':' && !strncasecmp(l, name, n);
}

static bool has_token_param(const char *target)
{
	const char *q = strchr(target, '?');
	for (const char *p = q; p; p = strchr(p + 1, '&'))
		if (!strncmp(p + 1, "sandlot_token=", 14))
			return true; /* a token value would reach the sandbox */
	return false;
}

static void check_cookie(const char *v, size_t len)
{
	for (size_t i = 0; i < len;) {
		while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ';'))
			i++;
		if (len - i > 13 && !strncmp(v + i, "sandlot_token=", 14))
			abort(); /* the token cookie is forwarded */
		while (i < len && v[i] != ';')
			i++;
	}
}

static void check(const preview_req *r, size_t in_len)
{
	const char *h = r->head, *end = h + r->head_len;
	/* Lines are forwarded as they came: the last may end in a bare "\n". */
	if (r->head_len > 2 * in_len + 64 || r->head_len < 3 || memcmp(end - 3, "\n\r\n", 3))
		abort();
	if (has_token_param(r->target))
		abort();
	const char *eol = memchr(h, '\n', r->head_len);
	for (const char *l = eol + 1; l < end - 2;) {
		const char *nl = memchr(l, '\n', end - l);
		size_t ll = nl - l;
		if (header_is(l, ll, "X-Sandlot-Preview-Token") ||
		    header_is(l, ll, "X-Daytona-Preview-Token") ||
		    header_is(l, ll, "E2B-Traffic-Access-Token"))
			abort();
		if (header_is(l, ll, "Cookie"))
			check_cookie(l + 7, ll - 7);
		l = nl + 1;
	}
	if (r->port && (r->port > 65535 || strncmp(r->id, "sbx_", 4)))
		abort();
	for (int i = 0; i < r->ncred; i++)
		if (!memchr(r->cred[i].value, '\0', sizeof(r->cred[i].value)))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Exactly SIZE bytes (and no terminator) so ASan sees any read past the end. */
	char *head = malloc(size + 4);
	if (!head)
		abort();
	memcpy(head, data, size);
	size_t len = size;
	if (len < 4 || memcmp(head + len - 4, "\r\n\r\n", 4)) {
		memcpy(head + len, "\r\n\r\n", 4);
		len += 4;
	}
	char *exact = malloc(len);
	if (!exact)
		abort();
	memcpy(exact, head, len);
	free(head);
	preview_req r;
	if (preview_head_parse(exact, len, &r) == 0) {
		check(&r, len);
		preview_req_free(&r);
	}
	free(exact);
	return 0;
}
