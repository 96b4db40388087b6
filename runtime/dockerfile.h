/* dockerfile.h — a Dockerfile read into instructions (continuations, comments, JSON exec
 * form, flags) and the builder's variable substitution ($V, ${V}, ${V:-x}, ${V:+x}). No I/O. */
#ifndef SANDLOT_DOCKERFILE_H
#define SANDLOT_DOCKERFILE_H

#include "err.h"

#include <stdbool.h>
#include <stddef.h>

#define DF_MAX_BYTES	(1 << 20) /* a Dockerfile over 1 MiB is refused */
#define DF_MAX_INSTR	1000
#define DF_MAX_EXPANDED (64 * 1024) /* one instruction after substitution */

typedef enum df_kind {
	DF_FROM,
	DF_RUN,
	DF_COPY,
	DF_ADD,
	DF_ENV,
	DF_ARG,
	DF_WORKDIR,
	DF_USER,
	DF_CMD,
	DF_ENTRYPOINT,
	DF_LABEL,
	DF_EXPOSE,
	DF_SHELL,
} df_kind;

typedef struct df_instr {
	df_kind kind;
	int line;    /* where the instruction starts (1-based) */
	char *flags; /* "--from=a --chown=1:1" as written ("" when none) */
	char *rest;  /* the text after the keyword and flags, continuations joined */
	bool json;   /* RUN/CMD/ENTRYPOINT/SHELL/COPY/ADD written as a JSON array */
	char **argv; /* json: the array (NULL-terminated) */
	size_t argc;
} df_instr;

typedef struct df_file {
	df_instr *v;
	size_t n;
} df_file;

/* The keyword of KIND ("RUN"). */
const char *dockerfile_kind_name(df_kind kind);

/* Parse TEXT (LEN bytes, need not be NUL-terminated). Errors are SL_INVALID and name the
 * line ("Dockerfile line 3: unknown instruction HEALTHCHECK ..."). *OUT: free with
 * dockerfile_free. */
int dockerfile_parse(const char *text, size_t len, df_file *out, sl_err *err);
void dockerfile_free(df_file *f);

/* A variable's value, NULL when unset. */
typedef const char *(*df_lookup_fn)(void *arg, const char *name);

/* IN with $NAME, ${NAME}, ${NAME:-word}, ${NAME:+word} replaced (unset: ""); `\$` is a
 * literal `$`; nothing inside '...' is replaced. Quotes are kept for dockerfile_words.
 * *OUT malloc'd. SL_INVALID on a bad ${...} or a result over DF_MAX_EXPANDED. */
int dockerfile_expand(const char *in, df_lookup_fn lookup, void *arg, char **out, sl_err *err);

/* IN split at unquoted blanks, quotes removed ("a b" 'c d' e\ f), as a NULL-terminated
 * malloc'd vector in *WORDS (free with dockerfile_words_free). SL_INVALID on an
 * unterminated quote. */
int dockerfile_words(const char *in, char ***words, size_t *n, sl_err *err);
void dockerfile_words_free(char **words);

/* One flag's value from FLAGS ("--from=x --chown=a:b"): NULL when absent (malloc'd). */
char *dockerfile_flag(const char *flags, const char *name);

#endif
