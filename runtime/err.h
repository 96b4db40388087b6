/* err.h — sandlot's error value: every fallible call returns int (-1 on failure)
 * and fills an sl_err, which names the object and maps to a stable API code. */
#ifndef SANDLOT_ERR_H
#define SANDLOT_ERR_H

#include <stdarg.h>

typedef enum sl_kind {
	SL_OK = 0,
	SL_INVALID,   /* INVALID_ARGUMENT */
	SL_NOTFOUND,  /* NOT_FOUND */
	SL_CONFLICT,  /* CONFLICT */
	SL_TOOLARGE,  /* PAYLOAD_TOO_LARGE */
	SL_EXHAUSTED, /* RESOURCE_EXHAUSTED */
	SL_NOTIMPL,   /* NOT_IMPLEMENTED */
	SL_TIMEOUT,   /* TIMEOUT */
	SL_INTERNAL,  /* INTERNAL */
	SL_UNAUTH,    /* UNAUTHENTICATED */
	SL_NOSPACE,   /* INSUFFICIENT_STORAGE: the host's disk is below its free-space floor */
	SL_UPSTREAM,  /* BAD_GATEWAY: a registry unreachable, failing (5xx), or cut off */
	SL_HIBERNATE_REFUSED, /* HIBERNATE_REFUSED (409): CRIU cannot dump it (hibernate.c) */
} sl_kind;

typedef struct sl_err {
	sl_kind kind;
	int errnum; /* errno at the failure site, 0 if none */
	char msg[1024];
} sl_err;

/* Record a failure; appends strerror(errnum) when errnum != 0. Returns -1. */
int sl_fail(sl_err *err, sl_kind kind, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Record a failure with errno as the cause and SL_INTERNAL kind. Returns -1. */
#define sl_sysfail(err, ...) sl_fail((err), SL_INTERNAL, errno, __VA_ARGS__)
/* Prefix context to an existing failure ("sandbox sbx_x: " + msg). Returns -1. */
int sl_wrap(sl_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* At a boundary (a launch, a talk with a sandbox's init): name KIND ID and STEP in the
 * message ("sandbox sbx_x: launch its init: pipe: Too many open files"), unless the
 * message names ID already. Returns -1. */
int sl_wrap_obj(sl_err *err, const char *kind, const char *id, const char *step);
/* The stable machine code for a kind ("NOT_FOUND", ...). */
const char *sl_kind_code(sl_kind kind);
void sl_err_clear(sl_err *err);

#endif
