/* build.h — Dockerfile builds: each step run in a build sandbox (RUN, COPY, ADD, WORKDIR),
 * its writable layer kept as an image layer, cached by step; the result a container image. */
#ifndef SANDLOT_BUILD_H
#define SANDLOT_BUILD_H

#include "ctx.h"
#include "err.h"
#include "image.h"

#include <stdbool.h>

/* One line of progress ("STEP 2/7: RUN make", "CACHED", a RUN's output line). */
typedef void (*sl_build_out_fn)(void *arg, const char *line);

typedef struct sl_build_opts {
	const char *name;	       /* the image's name */
	const char *context;	       /* the build context, a directory */
	const char *dockerfile;	       /* relative to the context; NULL: "Dockerfile" */
	const char *const *build_args; /* "K=V", NULL-terminated; may be NULL */
	bool network;		       /* RUN steps get a network (off by default) */
	/* The image's start and ready commands (startcmd.h; NULL: the base image's, if
	 * any), checked at the end of the build in a build sandbox: the start command
	 * started, the ready command run until it succeeds, or the build fails. */
	const char *start_cmd, *ready_cmd;
	sl_build_out_fn out;
	void *out_arg;
} sl_build_opts;

/* Does DIR hold a Dockerfile (DOCKERFILE_OR_NULL: that name, relative to DIR)? */
bool build_is_dockerfile_dir(const char *dir, const char *dockerfile_or_null);

/* Build and name the image (the thread's key owns it, as an import). A failure names
 * the Dockerfile line and leaves no image, no sandbox and no temporary image behind;
 * the step cache (<state>/images/build) keeps the steps that finished. */
int build_image(sl_ctx *ctx, const sl_build_opts *o, sl_image *out, sl_err *err);

/* The same with the context read as a tar archive from TAR_FD (to its end; any hostile-
 * archive rule of imports refuses it) into a scratch directory, removed afterwards;
 * O->context is ignored. */
int build_image_from_tar(sl_ctx *ctx, const sl_build_opts *o, int tar_fd, sl_image *out,
			 sl_err *err);

/* The same with DOCKERFILE (text) as the whole context: a Dockerfile with no COPY or ADD
 * of local files (the Daytona façade's builds); O->context and O->dockerfile ignored. */
int build_image_from_text(sl_ctx *ctx, const sl_build_opts *o, const char *dockerfile,
			  sl_image *out, sl_err *err);

/* What builds killed midway left (their build sandboxes, build-tmp-* images, files in
 * <state>/images/build/tmp), counted, and freed when REMOVE; 0 while any build runs (it
 * holds <state>/images/build/active.lock shared). Every build does it at its start, the
 * daemon at its start, `sandlot doctor` reports it. */
int build_collect_unfinished(sl_ctx *ctx, bool remove);

#endif
