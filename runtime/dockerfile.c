/* dockerfile.c — a Dockerfile read into instructions and the builder's substitution of
 * variables: pure text work, no I/O, fuzzed by fuzz_dockerfile (docs/images.md, "Builds"). */
#include "dockerfile.h"

#include "cleanup.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const kind_names[] = {
    [DF_FROM] = "FROM",	      [DF_RUN] = "RUN",
    [DF_COPY] = "COPY",	      [DF_ADD] = "ADD",
    [DF_ENV] = "ENV",	      [DF_ARG] = "ARG",
    [DF_WORKDIR] = "WORKDIR", [DF_USER] = "USER",
    [DF_CMD] = "CMD",	      [DF_ENTRYPOINT] = "ENTRYPOINT",
    [DF_LABEL] = "LABEL",     [DF_EXPOSE] = "EXPOSE",
    [DF_SHELL] = "SHELL",
};

/* Known to docker, refused here with the reason (docs/images.md lists them). */
static const char *const unsupported[] = {"HEALTHCHECK", "ONBUILD",    "STOPSIGNAL",
					  "VOLUME",	 "MAINTAINER", NULL};

const char *dockerfile_kind_name(df_kind kind)
{
	return kind <= DF_SHELL ? kind_names[kind] : "?";
}

/* A growable string. */
struct buf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->s, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void buf_addc(struct buf *b, char c)
{
	buf_add(b, &c, 1);
}

void dockerfile_free(df_file *f)
{
	for (size_t i = 0; f && i < f->n; i++) {
		free(f->v[i].flags);
		free(f->v[i].rest);
		dockerfile_words_free(f->v[i].argv);
	}
	if (f) {
		free(f->v);
		f->v = NULL;
		f->n = 0;
	}
}

void dockerfile_words_free(char **words)
{
	for (size_t i = 0; words && words[i]; i++)
		free(words[i]);
	free(words);
}

/* ["a", "b"]: a JSON array of strings, as a NULL-terminated vector; NULL when TEXT is
 * not one (then the instruction is in shell form, as docker reads it). */
static char **json_argv(const char *text, size_t *argc)
{
	_cleanup_cjson_ cJSON *a = cJSON_Parse(text);
	if (!cJSON_IsArray(a))
		return NULL;
	int n = cJSON_GetArraySize(a);
	char **v = calloc((size_t)n + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (int i = 0; i < n; i++) {
		const cJSON *s = cJSON_GetArrayItem(a, i);
		if (!cJSON_IsString(s) || !(v[i] = strdup(s->valuestring))) {
			dockerfile_words_free(v);
			return NULL;
		}
	}
	*argc = (size_t)n;
	return v;
}

static bool flag_allowed(df_kind k, const char *flag)
{
	size_t n = strcspn(flag, "=");
	if (k == DF_COPY && (!strncmp(flag, "--from", n) || !strncmp(flag, "--chown", n) ||
			     !strncmp(flag, "--chmod", n)))
		return n > 2;
	if (k == DF_ADD && (!strncmp(flag, "--chown", n) || !strncmp(flag, "--chmod", n)))
		return n > 2;
	if (k == DF_FROM && !strncmp(flag, "--platform", n))
		return n > 2;
	return false;
}

/* One logical line (continuations joined) starting at LINE: keyword, flags, rest. */
static int parse_instr(char *text, int line, df_instr *in, sl_err *err)
{
	char *p = text;
	while (isspace((unsigned char)*p))
		p++;
	char *kw = p;
	while (*p && !isspace((unsigned char)*p))
		p++;
	size_t kwlen = (size_t)(p - kw);
	int kind = -1;
	for (int k = 0; k <= DF_SHELL; k++)
		if (strlen(kind_names[k]) == kwlen && !strncasecmp(kw, kind_names[k], kwlen))
			kind = k;
	if (kind < 0) {
		for (size_t i = 0; unsupported[i]; i++)
			if (strlen(unsupported[i]) == kwlen &&
			    !strncasecmp(kw, unsupported[i], kwlen))
				return sl_fail(err, SL_INVALID, 0,
					       "Dockerfile line %d: %s is not supported by sandlot "
					       "builds (docs/images.md, \"Builds\")",
					       line, unsupported[i]);
		return sl_fail(err, SL_INVALID, 0, "Dockerfile line %d: unknown instruction %.*s",
			       line, (int)(kwlen > 40 ? 40 : kwlen), kw);
	}
	in->kind = (df_kind)kind;
	in->line = line;
	struct buf flags = {0};
	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (strncmp(p, "--", 2) ||
		    (kind != DF_COPY && kind != DF_ADD && kind != DF_FROM && kind != DF_RUN))
			break;
		char *f = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		char save = *p;
		*p = '\0';
		if (!flag_allowed(in->kind, f)) {
			free(flags.s);
			return sl_fail(err, SL_INVALID, 0,
				       "Dockerfile line %d: %s does not support the flag %.60s",
				       line, kind_names[kind], f);
		}
		if (flags.len)
			buf_addc(&flags, ' ');
		buf_add(&flags, f, strlen(f));
		*p = save;
	}
	size_t rl = strlen(p);
	while (rl && isspace((unsigned char)p[rl - 1]))
		p[--rl] = '\0';
	in->flags = flags.s ? flags.s : strdup("");
	in->rest = strdup(p);
	if (flags.oom || !in->flags || !in->rest)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "Dockerfile line %d", line);
	if (!*in->rest)
		return sl_fail(err, SL_INVALID, 0, "Dockerfile line %d: %s needs arguments", line,
			       kind_names[kind]);
	bool may_json = kind == DF_RUN || kind == DF_CMD || kind == DF_ENTRYPOINT ||
			kind == DF_SHELL || kind == DF_COPY || kind == DF_ADD;
	if (may_json && in->rest[0] == '[' && (in->argv = json_argv(in->rest, &in->argc)))
		in->json = true;
	if (kind == DF_SHELL && (!in->json || in->argc == 0))
		return sl_fail(err, SL_INVALID, 0,
			       "Dockerfile line %d: SHELL takes a JSON array, e.g. [\"/bin/sh\", "
			       "\"-c\"]",
			       line);
	if ((kind == DF_COPY || kind == DF_ADD) && in->json && in->argc < 2)
		return sl_fail(err, SL_INVALID, 0,
			       "Dockerfile line %d: %s needs a source and a destination", line,
			       kind_names[kind]);
	return 0;
}

int dockerfile_parse(const char *text, size_t len, df_file *out, sl_err *err)
{
	memset(out, 0, sizeof(*out));
	if (len > DF_MAX_BYTES)
		return sl_fail(err, SL_TOOLARGE, 0, "Dockerfile: over %d bytes", DF_MAX_BYTES);
	if (memchr(text, '\0', len))
		return sl_fail(err, SL_INVALID, 0, "Dockerfile: holds a NUL byte (not text)");
	size_t cap = 0;
	struct buf cur = {0};
	int start = 0, line = 0;
	size_t i = 0;
	while (i < len) {
		size_t e = i;
		while (e < len && text[e] != '\n')
			e++;
		line++;
		const char *l = text + i;
		size_t n = e - i;
		i = e < len ? e + 1 : e;
		if (n && l[n - 1] == '\r')
			n--;
		size_t b = 0;
		while (b < n && isspace((unsigned char)l[b]))
			b++;
		/* Comments and blank lines, also between continued lines (as docker). */
		if (b == n || l[b] == '#')
			continue;
		size_t t = n;
		while (t > b && isspace((unsigned char)l[t - 1]))
			t--;
		bool more = t > b && l[t - 1] == '\\';
		if (!cur.len)
			start = line;
		else
			buf_addc(&cur, ' ');
		buf_add(&cur, l + b, (more ? t - 1 : t) - b);
		if (more && i < len)
			continue;
		if (cur.oom) {
			free(cur.s);
			dockerfile_free(out);
			return sl_fail(err, SL_EXHAUSTED, ENOMEM, "Dockerfile");
		}
		if (out->n == DF_MAX_INSTR) {
			free(cur.s);
			dockerfile_free(out);
			return sl_fail(err, SL_TOOLARGE, 0, "Dockerfile: over %d instructions",
				       DF_MAX_INSTR);
		}
		if (out->n == cap) {
			cap = cap ? cap * 2 : 16;
			df_instr *v = realloc(out->v, cap * sizeof(*v));
			if (!v) {
				free(cur.s);
				dockerfile_free(out);
				return sl_fail(err, SL_EXHAUSTED, ENOMEM, "Dockerfile");
			}
			out->v = v;
		}
		df_instr *in = &out->v[out->n++];
		memset(in, 0, sizeof(*in));
		int r = parse_instr(cur.s ? cur.s : (char *)"", start, in, err);
		cur.len = 0;
		if (r < 0) {
			free(cur.s);
			dockerfile_free(out);
			return -1;
		}
	}
	free(cur.s);
	if (!out->n)
		return sl_fail(err, SL_INVALID, 0, "Dockerfile: no instructions");
	for (size_t k = 0; k < out->n && out->v[k].kind != DF_FROM; k++)
		if (out->v[k].kind != DF_ARG) {
			int l = out->v[k].line;
			const char *name = kind_names[out->v[k].kind];
			dockerfile_free(out);
			return sl_fail(err, SL_INVALID, 0,
				       "Dockerfile line %d: %s before the first FROM (only ARG may "
				       "come first)",
				       l, name);
		}
	bool any_from = false;
	for (size_t k = 0; k < out->n; k++)
		any_from |= out->v[k].kind == DF_FROM;
	if (!any_from) {
		dockerfile_free(out);
		return sl_fail(err, SL_INVALID, 0, "Dockerfile: no FROM instruction");
	}
	return 0;
}

static bool name_char(char c, bool first)
{
	return c == '_' || isalpha((unsigned char)c) || (!first && isdigit((unsigned char)c));
}

int dockerfile_expand(const char *in, df_lookup_fn lookup, void *arg, char **out, sl_err *err)
{
	struct buf b = {0};
	buf_add(&b, "", 0);
	bool squote = false;
	for (const char *p = in; *p;) {
		if (b.len > DF_MAX_EXPANDED) {
			free(b.s);
			return sl_fail(err, SL_TOOLARGE, 0,
				       "substitution: the result is over %d bytes",
				       DF_MAX_EXPANDED);
		}
		if (*p == '\'') {
			squote = !squote;
			buf_addc(&b, *p++);
			continue;
		}
		if (*p == '\\' && p[1] == '$' && !squote) {
			buf_addc(&b, '$');
			p += 2;
			continue;
		}
		if (*p == '\\' && p[1]) {
			buf_add(&b, p, 2);
			p += 2;
			continue;
		}
		if (*p != '$' || squote) {
			buf_addc(&b, *p++);
			continue;
		}
		p++;
		char name[256];
		size_t nl = 0;
		if (*p == '{') {
			p++;
			while (name_char(*p, nl == 0) && nl < sizeof(name) - 1)
				name[nl++] = *p++;
			name[nl] = '\0';
			char op = 0;
			const char *word = NULL;
			size_t wl = 0;
			if (p[0] == ':' && (p[1] == '-' || p[1] == '+')) {
				op = p[1];
				p += 2;
				word = p;
				int depth = 0;
				while (*p && (*p != '}' || depth)) {
					depth += *p == '{' ? 1 : *p == '}' ? -1 : 0;
					p++;
				}
				wl = (size_t)(p - word);
			}
			if (!nl || *p != '}') {
				free(b.s);
				return sl_fail(
				    err, SL_INVALID, 0,
				    "bad substitution in '%.80s' (supported: $NAME, ${NAME}, "
				    "${NAME:-word}, ${NAME:+word})",
				    in);
			}
			p++;
			const char *v = lookup(arg, name);
			bool set = v && *v;
			if ((op == '-' && !set) || (op == '+' && set)) {
				_cleanup_free_ char *w = strndup(word, wl), *x = NULL;
				if (!w || dockerfile_expand(w, lookup, arg, &x, err) < 0) {
					free(b.s);
					return w ? -1
						 : sl_fail(err, SL_EXHAUSTED, ENOMEM,
							   "substitution");
				}
				buf_add(&b, x, strlen(x));
			} else if (op != '+' && v) {
				buf_add(&b, v, strlen(v));
			}
			continue;
		}
		while (name_char(*p, nl == 0) && nl < sizeof(name) - 1)
			name[nl++] = *p++;
		name[nl] = '\0';
		if (!nl) {
			buf_addc(&b, '$');
			continue;
		}
		const char *v = lookup(arg, name);
		if (v)
			buf_add(&b, v, strlen(v));
	}
	if (b.oom || b.len > DF_MAX_EXPANDED) {
		free(b.s);
		return b.oom
			   ? sl_fail(err, SL_EXHAUSTED, ENOMEM, "substitution")
			   : sl_fail(err, SL_TOOLARGE, 0,
				     "substitution: the result is over %d bytes", DF_MAX_EXPANDED);
	}
	*out = b.s;
	return 0;
}

int dockerfile_words(const char *in, char ***words, size_t *n, sl_err *err)
{
	char **v = NULL;
	size_t cnt = 0, cap = 0;
	const char *p = in;
	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		struct buf w = {0};
		buf_add(&w, "", 0);
		char q = 0;
		while (*p && (q || !isspace((unsigned char)*p))) {
			if (q && *p == q) {
				q = 0;
				p++;
			} else if (!q && (*p == '"' || *p == '\'')) {
				q = *p++;
			} else if (*p == '\\' && q != '\'' && p[1]) {
				buf_addc(&w, p[1]);
				p += 2;
			} else {
				buf_addc(&w, *p++);
			}
		}
		if (q || w.oom || cnt + 2 > 4096) {
			free(w.s);
			dockerfile_words_free(v);
			return q ? sl_fail(err, SL_INVALID, 0, "unterminated quote in '%.80s'", in)
				 : sl_fail(err, SL_INVALID, w.oom ? ENOMEM : 0,
					   "too many words in '%.80s'", in);
		}
		if (cnt + 2 > cap) {
			cap = cap ? cap * 2 : 8;
			char **nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(w.s);
				dockerfile_words_free(v);
				return sl_fail(err, SL_EXHAUSTED, ENOMEM, "words");
			}
			v = nv;
		}
		v[cnt++] = w.s;
		v[cnt] = NULL;
	}
	if (!v && !(v = calloc(1, sizeof(*v))))
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "words");
	*words = v;
	*n = cnt;
	return 0;
}

char *dockerfile_flag(const char *flags, const char *name)
{
	size_t nl = strlen(name);
	for (const char *p = flags; p && *p;) {
		while (*p == ' ')
			p++;
		size_t wl = strcspn(p, " ");
		if (wl > nl + 3 && !strncmp(p, "--", 2) && !strncmp(p + 2, name, nl) &&
		    p[2 + nl] == '=')
			return strndup(p + 3 + nl, wl - 3 - nl);
		p += wl;
	}
	return NULL;
}
