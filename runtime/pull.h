/* pull.h — `sandlot image pull`: Docker-style references, and an image fetched from an
 * OCI distribution registry into the blob cache, then imported as an OCI layout would be.
 * See docs/images.md, "Pulling from a registry". */
#ifndef SANDLOT_PULL_H
#define SANDLOT_PULL_H

#include "config.h"
#include "image.h"

/* A reference taken apart: "python:3.12-slim" is docker.io, library/python, tag 3.12-slim. */
typedef struct sl_image_ref {
	char domain[256];	       /* "docker.io", "localhost:5000", "ghcr.io" */
	char repo[256];		       /* "library/python" */
	char tag[129];		       /* "" when pulled by digest alone */
	char digest[72];	       /* "" or "sha256:<hex>" */
	char name[IMAGE_NAME_MAX + 1]; /* docker's short form: "python:3.12-slim"; "" when that is
					* no name (over 127 characters, or "sha256:...") */
} sl_image_ref;

/* Parse REF (a tag defaults to "latest" when neither tag nor digest is given). */
int image_ref_parse(const char *ref, sl_image_ref *out, sl_err *err);
/* "host[:port]" as a reference's registry may be (letters, digits, . -, digits after :). */
bool image_ref_domain_ok(const char *hostport);
/* Is HOSTPORT this machine (localhost, 127.0.0.0/8, [::1])? In LIST (comma-separated
 * host[:port]s, a bare host matching any port)? Only those may be plain http. */
bool image_host_local(const char *hostport);
bool image_host_insecure(const char *hostport, const char *list);

/* One line of progress: STATUS ("Pulling fs layer", "Downloading", "Download complete",
 * "Already exists", ...) of LAYER (12 hex digits of its blob; "" for the image), with
 * CURRENT of TOTAL bytes when downloading. */
typedef void (*image_pull_progress_fn)(void *arg, const char *status, const char *layer,
				       uint64_t current, uint64_t total);

typedef struct sl_pull_opts {
	const char *name;      /* the image's name; NULL: the reference's short form */
	const char *auth_file; /* docker's config.json; NULL or "": <state>/auth.json if any */
	const char *mirror;    /* "http(s)://host[:port]" serving docker.io's images, or NULL */
	const char *insecure;  /* comma-separated host[:port]s that may be plain http */
	const sl_space_floor *floor;
	image_pull_progress_fn progress; /* NULL: silent; called from one thread at a time */
	void *arg;
} sl_pull_opts;

/* The options every pull of the daemon or CLI uses: CFG's credentials, mirror, plain-http
 * hosts and space floor, with PROGRESS (may be NULL) called with ARG. */
sl_pull_opts image_pull_opts(const sl_config *cfg, image_pull_progress_fn progress, void *arg);

/* Pull REF for linux/amd64 and import it as O->name (replacing it, as an import does).
 * Blobs already in <state>/images/blobs are not fetched again; a partial one is resumed.
 * A failure leaves no image and no scratch; complete verified blobs stay cached. */
int image_pull(const char *state_dir, const char *ref, const sl_pull_opts *o, sl_image *out,
	       sl_err *err);

#endif
