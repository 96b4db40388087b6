/* fuzz_websocket.c — the WebSocket frame reader (api_ws_frame, api/attach.c) as the attach
 * session and the socket.io channel drive it: frames off a buffer that fills piece by piece. */
#include "fuzz.h"
#include "http.h"

/* Input: <max exponent> <piece length> <client bytes>. The bytes are read twice: all at
 * once, and arriving in pieces (the session's recv loop: parse what is whole, keep the
 * rest); both must yield the same frames and the same verdict. Text messages go through
 * api_json_parse, as control messages and socket.io CONNECT packets do. */

typedef struct reader {
	uint64_t max;
	unsigned char *in;
	size_t len, cap;
	unsigned char *msg; /* a fragmented message being assembled, as attach.c does */
	size_t msg_len;
	/* what was seen: opcode, FIN, payload, per frame */
	unsigned char *log;
	size_t log_len;
	int bad;
	bool closed;
} reader;

static void log_put(reader *r, const void *p, size_t n)
{
	r->log = realloc(r->log, r->log_len + n + 1);
	if (!r->log)
		abort();
	memcpy(r->log + r->log_len, p, n);
	r->log_len += n;
}

static void text_message(const unsigned char *p, size_t n)
{
	sl_err err = {0};
	cJSON *o = api_json_parse((const char *)p, n, &err);
	if (!o && !err.msg[0])
		abort();
	cJSON_Delete(o);
}

/* parse_frames() of attach.c, less the replies. */
static void frames(reader *r)
{
	size_t at = 0;
	while (!r->closed && r->len - at >= 2) {
		int op, bad = 0;
		bool fin;
		unsigned char *pl = NULL;
		uint64_t n = 0;
		ssize_t used =
		    api_ws_frame(r->in + at, r->len - at, r->max, &op, &fin, &pl, &n, &bad);
		if (used < 0) {
			if (bad != 1002 && bad != 1009)
				abort();
			r->bad = bad;
			r->closed = true;
			break;
		}
		if (used == 0)
			break;
		/* The payload lies inside the frame, and the frame inside what was read. */
		if ((size_t)used > r->len - at || n > r->max || pl < r->in + at ||
		    pl + n != r->in + at + used || op < 0 || op > 15)
			abort();
		at += used;
		unsigned char head[2] = {(unsigned char)op, fin};
		log_put(r, head, 2);
		log_put(r, &n, sizeof(n));
		log_put(r, pl, n);
		if (op == 0x8) {
			r->closed = true;
			break;
		}
		if (op == 0x0 || op == 0x1 || op == 0x2) {
			if (r->msg_len + n > r->max) {
				r->closed = true;
				break;
			}
			r->msg = realloc(r->msg, r->msg_len + n + 1);
			if (!r->msg)
				abort();
			memcpy(r->msg + r->msg_len, pl, n);
			r->msg_len += n;
			if (fin) {
				text_message(r->msg, r->msg_len);
				r->msg_len = 0;
			}
		}
	}
	memmove(r->in, r->in + at, r->len - at);
	r->len -= at;
}

static void run(reader *r, const uint8_t *p, size_t n, size_t piece)
{
	r->cap = n + 1;
	r->in = malloc(r->cap);
	if (!r->in)
		abort();
	for (size_t at = 0; at < n && !r->closed;) {
		size_t k = piece < n - at ? piece : n - at;
		memcpy(r->in + r->len, p + at, k);
		r->len += k;
		at += k;
		frames(r);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_in in = {data, size};
	uint64_t max = 1ull << (fuzz_u8(&in) % 21); /* up to attach.c's 1 MiB */
	size_t piece = fuzz_u8(&in) % 32 + 1;
	reader whole = {.max = max}, cut = {.max = max};
	run(&whole, in.p, in.n, in.n ? in.n : 1);
	run(&cut, in.p, in.n, piece);
	if (whole.closed != cut.closed || whole.bad != cut.bad || whole.log_len != cut.log_len ||
	    (whole.log_len && memcmp(whole.log, cut.log, whole.log_len)))
		abort();
	free(whole.in), free(whole.msg), free(whole.log);
	free(cut.in), free(cut.msg), free(cut.log);
	return 0;
}
