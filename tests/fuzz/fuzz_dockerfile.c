/* fuzz_dockerfile.c — the Dockerfile reader and the builder's substitution and word
 * splitting (runtime/dockerfile.c) on hostile text: what they accept must be well formed. */
#include <stdio.h>
#include <string.h>

#include "dockerfile.h"
#include "fuzz.h"

static const char *lookup(void *arg, const char *name)
{
	(void)arg;
	return strlen(name) % 3 == 0 ? NULL : strlen(name) % 3 == 1 ? "" : "v a'l\"ue";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_in in = {data, size};
	size_t len;
	char *text = fuzz_rest(&in, &len);
	df_file f;
	sl_err err;
	if (dockerfile_parse(text, len, &f, &err) == 0) {
		if (!f.n || f.n > DF_MAX_INSTR)
			abort();
		for (size_t i = 0; i < f.n; i++) {
			df_instr *d = &f.v[i];
			if (d->kind > DF_SHELL || d->line < 1 || !d->rest || !d->flags || !*d->rest)
				abort();
			if (d->json && (!d->argv || d->argv[d->argc]))
				abort();
			char *x = NULL, **w = NULL;
			size_t n;
			if (dockerfile_expand(d->rest, lookup, NULL, &x, &err) == 0) {
				if (strlen(x) > DF_MAX_EXPANDED)
					abort();
				if (dockerfile_words(x, &w, &n, &err) == 0) {
					if (w[n])
						abort();
					dockerfile_words_free(w);
				}
				free(x);
			}
			free(dockerfile_flag(d->flags, "from"));
		}
		dockerfile_free(&f);
	}
	free(text);
	return 0;
}
