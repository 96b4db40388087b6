/* fuzz_ref.c — image references and names (runtime/image_ref.c, image_name_check) on each
 * line of the input: a parsed reference's short name is a valid name that parses back to
 * the same registry, repository, tag and digest; a refusal says why. */
#include <stdio.h>

#include "fuzz.h"
#include "pull.h"

static void check_ref(const char *s)
{
	sl_image_ref r, again;
	sl_err err = {0};
	if (image_ref_parse(s, &r, &err) < 0) {
		if (!err.msg[0] || err.kind != SL_INVALID)
			abort();
		return;
	}
	if (!r.domain[0] || !r.repo[0] || (!r.tag[0] && !r.digest[0]) ||
	    !image_ref_domain_ok(r.domain))
		abort();
	if (!r.name[0])
		return; /* too long to be a name: the caller must give one */
	if (image_name_check(r.name, &err) < 0 || image_ref_parse(r.name, &again, &err) < 0 ||
	    strcmp(again.domain, r.domain) || strcmp(again.repo, r.repo) ||
	    strcmp(again.tag, r.tag) || strcmp(again.digest, r.digest))
		abort();
}

static void check_name(const char *s)
{
	sl_err err = {0};
	if (image_name_check(s, &err) < 0) {
		if (!err.msg[0] || err.kind != SL_INVALID)
			abort();
		return;
	}
	/* A valid name is never a path out of names/: no "..", no empty or dot part. */
	if (strstr(s, "/.") || strstr(s, "//") || s[0] == '/' || s[strlen(s) - 1] == '/' ||
	    strlen(s) > IMAGE_NAME_MAX || strchr(s, '+'))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_in in = {data, size};
	while (in.n) {
		char *line = fuzz_line(&in);
		check_ref(line);
		check_name(line);
		free(line);
	}
	return 0;
}
