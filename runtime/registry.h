/* registry.h — one repository of an OCI distribution registry over HTTP(S): GET its
 * manifests and blobs, answering Bearer and Basic challenges (libcurl, in sandlot-registry.so,
 * loaded on first use as dl.h says). No policy: image_pull.c decides what may be asked. */
#ifndef SANDLOT_REGISTRY_H
#define SANDLOT_REGISTRY_H

#include "err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sl_registry sl_registry;

typedef struct sl_registry_opts {
	const char *base;  /* "https://registry-1.docker.io", "http://127.0.0.1:5000" */
	const char *repo;  /* "library/python" */
	const char *basic; /* "user:password" for this registry, NULL: anonymous */
	bool plain_ok;	   /* may a token realm or a redirect be plain http too */
} sl_registry_opts;

/* Called as a blob's bytes arrive, with how many the file now holds; nonzero stops. */
typedef int (*registry_progress_fn)(void *arg, uint64_t have);

sl_registry *registry_open(const sl_registry_opts *o, sl_err *err);
void registry_close(sl_registry *r);

/* GET /v2/<repo>/manifests/<REF> (tag or digest), accepting OCI and docker manifests and
 * indexes: the body (malloc'd, at most MAX bytes, NUL-terminated) and its Content-Type.
 * A missing manifest is SL_NOTFOUND; refused credentials SL_UNAUTH; an unreachable
 * or failing (5xx) registry, or a cut connection, SL_UPSTREAM. */
int registry_manifest(sl_registry *r, const char *ref, size_t max, char **body, size_t *len,
		      char *media_type, size_t mt_len, sl_err *err);

/* GET /v2/<repo>/blobs/<DIGEST> written to FD from byte FROM on (asked with Range; a
 * registry that answers with the whole blob has FD truncated and rewritten), never past
 * MAX bytes in all. *HAVE: the bytes FD holds after, also on failure (a dropped
 * connection leaves what came, for a later resume). */
int registry_blob(sl_registry *r, const char *digest, int fd, uint64_t from, uint64_t max,
		  registry_progress_fn cb, void *arg, uint64_t *have, sl_err *err);

#endif
