/* ports_parse.h — the pure pieces of ports.c: the `ports` object of a create or PATCH,
 * and a preview request's head (where it goes, what credential it carries, and the head
 * to forward with that credential cut out). No HTTP library, so unit tests link it. */
#ifndef SANDLOT_API_PORTS_PARSE_H
#define SANDLOT_API_PORTS_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "err.h"
#include "sandbox.h"

/* {"8000": {"public": true}, "*": {"public": false}} into SET (at most SL_MAX_PORTS);
 * absent or null: *n = 0. Messages name the field ("ports.8000.public"). */
int ports_parse(const cJSON *v, sl_port_setting *set, size_t *n, sl_err *err);

/* Where a preview credential was found. */
typedef enum preview_src {
	PREVIEW_HEADER,	 /* X-Sandlot-Preview-Token */
	PREVIEW_DAYTONA, /* X-Daytona-Preview-Token */
	PREVIEW_E2B,	 /* E2B-Traffic-Access-Token (checked against E2B's token) */
	PREVIEW_COOKIE,	 /* Cookie: sandlot_token=... (set by a ?sandlot_token= visit) */
	PREVIEW_QUERY,	 /* ?sandlot_token=... */
} preview_src;

#define PREVIEW_COOKIE_NAME "sandlot_token"
#define PREVIEW_MAX_CREDS   6

typedef struct preview_req {
	unsigned port; /* from Host: PORT-ID.localhost[:N]; 0 when Host is not that */
	char id[32];
	struct {
		preview_src src;
		char value[96];
	} cred[PREVIEW_MAX_CREDS];
	int ncred;
	bool upgrade; /* Upgrade: (WebSocket): the connection is relayed as it is after this */
	/* The head to forward (malloc'd, with its blank line): every credential cut out
	 * (headers, the cookie, the query parameter) and, unless an upgrade, "Connection:
	 * close", so the next request comes on a new connection and through these checks. */
	char *head;
	size_t head_len;
	/* The request target without ?sandlot_token (malloc'd): where a query visit is sent
	 * once its cookie is set. */
	char *target;
} preview_req;

/* HEAD is a request head ending in "\r\n\r\n" (LEN bytes). -1: not a request head
 * (no request line, a line without a colon); 0 otherwise. Free with preview_req_free. */
int preview_head_parse(const char *head, size_t len, preview_req *out);
void preview_req_free(preview_req *r);
/* The head to forward (R->head) with its Host header, or one added when it has none,
 * made MASK with every "${PORT}" in it PORT (a sandbox's request host, record.h). MASK
 * NULL or "": the head is kept. -1: out of memory (R unchanged). */
int preview_head_set_host(preview_req *r, const char *mask, unsigned port);

#endif
