/* fuzz_ocispec.c — sandlot-oci's readers of a bundle (runtime/ocispec.c): config.json,
 * an exec's process.json, `update`'s resources and signal names, all hostile input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "ocispec.h"

/* Input: <which> <text>. What a parser accepts must hold what its header promises. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_in in = {data, size};
	uint8_t which = fuzz_u8(&in);
	size_t len;
	char *text = fuzz_rest(&in, &len);
	sl_err err;
	switch (which % 4) {
	case 0: {
		oci_spec s;
		if (oci_spec_parse(text, len, &s, &err) == 0) {
			/* Accepted: a root, args, the five namespaces, no capability beyond the
			 * set. */
			if (!s.root_path || !s.proc.args || !s.proc.args[0] || !s.ns[OCI_NS_PID] ||
			    !s.ns[OCI_NS_NET] || !s.ns[OCI_NS_MNT] ||
			    (s.proc.caps & ~oci_caps_accepted()))
				abort();
			oci_spec_free(&s);
		}
		break;
	}
	case 1: {
		oci_process p;
		if (oci_process_parse(text, len, &p, &err) == 0) {
			if (!p.args[0] || p.cwd[0] != '/')
				abort();
			oci_process_free(&p);
		}
		break;
	}
	case 2: {
		sl_limits lim = {0};
		oci_resources_parse(text, len, &lim, &err);
		break;
	}
	default: {
		int sig = oci_signal_parse(text);
		if (sig == 0 || sig > 64)
			abort();
	}
	}
	free(text);
	return 0;
}
