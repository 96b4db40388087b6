/* build_copy.h — a build's COPY, ADD and WORKDIR: sources found in the context (or an
 * earlier stage's tree) without leaving it, .dockerignore, the inputs' hash for the step
 * cache, and the files put in place, in a build sandbox or in a host tree. */
#ifndef SANDLOT_BUILD_COPY_H
#define SANDLOT_BUILD_COPY_H

#include "ctx.h"
#include "err.h"
#include "record.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct bc_ignore {
	char **pat;
	bool *neg;
	size_t n;
} bc_ignore;

typedef enum bc_kind { BC_COPY, BC_ADD, BC_MKDIR } bc_kind;

typedef struct bc_plan {
	bc_kind kind;
	int line;
	const char *workdir; /* a relative DEST is under it */
	const char *chown;   /* NULL: 0:0 (ADD's extracted archives keep their owners) */
	const char *chmod;   /* NULL: the sources' modes */
	const char *const *srcs;
	size_t nsrcs;
	const char *dest;
	int ctxfd;		 /* where sources are looked up (RESOLVE_IN_ROOT) */
	const bc_ignore *ignore; /* NULL: nothing ignored */
	const char *scratch;	 /* a directory for ADD's extracted archives */
} bc_plan;

/* PATH opened under ROOTFD as if ROOTFD were "/" (openat2 RESOLVE_IN_ROOT). */
int bc_open_in(int rootfd, const char *path, int flags, sl_err *err);

/* .dockerignore of the context (none: nothing ignored). */
int bc_ignore_load(bc_ignore *ig, int ctxfd, sl_err *err);
void bc_ignore_free(bc_ignore *ig);
/* Is REL (a path relative to the context, no leading '/') ignored? */
bool bc_ignored(const bc_ignore *ig, const char *rel);

/* The sha256 (hex) of what the step would put where: paths, types, modes, owners,
 * contents, link targets. Errors (a missing source, an escape, ADD <url>) are the ones
 * the step itself would give. */
int bc_plan_hash(const bc_plan *p, char hex[65], sl_err *err);
/* The step done in a running build sandbox (its files, sbxfs.h), as root. */
int bc_apply_sandbox(const bc_plan *p, sl_ctx *ctx, const sl_sandbox *sb, sl_err *err);
/* The step done into TREE, a host directory that becomes the layer (FROM scratch). */
int bc_apply_host(const bc_plan *p, const char *tree, sl_err *err);

#endif
