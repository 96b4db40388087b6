/* multipart.h — a streaming multipart/form-data reader for the file uploads of the
 * façades (Daytona's bulk upload, E2B's POST /files): bytes in as they arrive, parts out
 * through three callbacks, never more buffered than a delimiter's tail or a part's
 * headers. */
#ifndef SANDLOT_API_MULTIPART_H
#define SANDLOT_API_MULTIPART_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* The most a part's header block (or a delimiter line's padding) may take. */
#define API_MULTIPART_HEADER_MAX 16384

typedef struct api_multipart_cb {
	/* A part begins; HEADERS is its header block (NUL-terminated, CRLF-separated). */
	int (*begin)(void *arg, const char *headers, sl_err *err);
	/* Some of its content, in order (N > 0). */
	int (*data)(void *arg, const char *data, size_t n, sl_err *err);
	/* Its content is complete. */
	int (*end)(void *arg, sl_err *err);
} api_multipart_cb;

typedef struct api_multipart {
	api_multipart_cb cb;
	void *arg;
	char delim[96]; /* "\r\n--" + boundary */
	size_t dlen;
	char *buf;
	size_t len, cap;
	int state;
	bool in_part;
} api_multipart;

/* Take the boundary from CONTENT_TYPE (multipart/form-data; boundary=..., quoted or not,
 * 1-70 characters, as RFC 2046 has it). SL_INVALID when it is not one. */
int api_multipart_init(api_multipart *m, const char *content_type, const api_multipart_cb *cb,
		       void *arg, sl_err *err);
/* Feed the next LEN bytes of the body. A callback's failure is returned as is. */
int api_multipart_feed(api_multipart *m, const char *data, size_t len, sl_err *err);
/* Was the closing delimiter seen? (A body that ends before it was cut short.) */
bool api_multipart_done(const api_multipart *m);
void api_multipart_free(api_multipart *m);

#endif
