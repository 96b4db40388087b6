/* fuzz_multipart.c — the streaming multipart/form-data reader (api/multipart.c): the first
 * input line is the Content-Type, the rest the body, fed whole and then in pieces. */
#include "fuzz.h"
#include "multipart.h"

/* Input: "<content-type>\n" <n> <n piece lengths> <body>. The body is fed at once, then
 * again cut into pieces of those lengths (in turn, 1-256 bytes); when both reads succeed,
 * the parts seen (headers, content, ends) must be the same. */

typedef struct transcript {
	char *buf;
	size_t len, cap;
	bool in_part, last_data;
} transcript;

static void put(transcript *t, const void *p, size_t n)
{
	if (t->len + n > t->cap) {
		t->cap = (t->len + n) * 2 + 64;
		t->buf = realloc(t->buf, t->cap);
		if (!t->buf)
			abort();
	}
	memcpy(t->buf + t->len, p, n);
	t->len += n;
}

static int on_begin(void *arg, const char *headers, sl_err *err)
{
	transcript *t = arg;
	if (t->in_part)
		abort(); /* a part begins inside another */
	t->in_part = true;
	t->last_data = false;
	put(t, "B", 1);
	put(t, headers, strlen(headers) + 1);
	return 0;
}

static int on_data(void *arg, const char *data, size_t n, sl_err *err)
{
	transcript *t = arg;
	if (!t->in_part || n == 0)
		abort(); /* content outside a part, or an empty piece */
	if (!t->last_data)
		put(t, "D", 1);
	t->last_data = true;
	put(t, data, n); /* pieces joined: how the body was cut must not show */
	return 0;
}

static int on_end(void *arg, sl_err *err)
{
	transcript *t = arg;
	if (!t->in_part)
		abort();
	t->in_part = false;
	t->last_data = false;
	put(t, "E", 1);
	return 0;
}

static const api_multipart_cb cbs = {on_begin, on_data, on_end};

/* Feed BODY cut at CUTS (NULL: at once); 0 or -1 as the reader answered. */
static int read_body(const char *ct, const char *body, size_t len, const uint8_t *cuts,
		     size_t ncuts, transcript *t, bool *done)
{
	api_multipart m;
	sl_err err = {0};
	int r = -1;
	if (api_multipart_init(&m, ct, &cbs, t, &err) < 0) {
		if (!err.msg[0])
			abort();
		return -1;
	}
	size_t at = 0, i = 0;
	while (at < len) {
		size_t n = cuts ? (size_t)cuts[i++ % ncuts] + 1 : len;
		if (n > len - at)
			n = len - at;
		if (api_multipart_feed(&m, body + at, n, &err) < 0)
			goto out;
		at += n;
	}
	r = 0;
out:
	*done = api_multipart_done(&m);
	api_multipart_free(&m);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_in in = {data, size};
	char *ct = fuzz_line(&in);
	size_t ncuts = fuzz_u8(&in) % 16;
	uint8_t cuts[16];
	for (size_t i = 0; i < ncuts; i++)
		cuts[i] = fuzz_u8(&in);
	size_t len;
	char *body = fuzz_rest(&in, &len);
	transcript whole = {0}, cut = {0};
	bool whole_done, cut_done;
	int a = read_body(ct, body, len, NULL, 0, &whole, &whole_done);
	int b = ncuts ? read_body(ct, body, len, cuts, ncuts, &cut, &cut_done) : -1;
	if (a == 0 && b == 0 &&
	    (whole_done != cut_done || whole.len != cut.len || whole.in_part != cut.in_part ||
	     (whole.len && memcmp(whole.buf, cut.buf, whole.len))))
		abort();
	free(whole.buf);
	free(cut.buf);
	free(body);
	free(ct);
	return 0;
}
