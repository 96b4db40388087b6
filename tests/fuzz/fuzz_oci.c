/* fuzz_oci.c — the readers of a container archive's JSON (runtime/oci.c): the index, an
 * image manifest, docker's manifest.json and the image config, all hostile input. */
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "oci.h"

/* Input: <which> <json>. Which % 4: index, manifest, docker manifest, config. What a
 * parser accepts must hold what its header promises. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_in in = {data, size};
	uint8_t which = fuzz_u8(&in);
	size_t len;
	char *text = fuzz_rest(&in, &len);
	sl_err err;
	switch (which % 4) {
	case 0: {
		sl_oci_desc d;
		char picked[160];
		if (oci_index_pick(text, len, "linux/amd64", &d, picked, sizeof(picked), &err) == 0 &&
		    !oci_digest_ok(d.digest))
			abort();
		break;
	}
	case 1: {
		sl_oci_desc cfg, *ls = NULL;
		size_t n = 0;
		if (oci_manifest_parse(text, len, &cfg, &ls, &n, &err) == 0) {
			if (!oci_digest_ok(cfg.digest) || n > OCI_MAX_LAYERS)
				abort();
			for (size_t i = 0; i < n; i++)
				if (!oci_digest_ok(ls[i].digest) || ls[i].size < 0)
					abort();
		}
		free(ls);
		break;
	}
	case 2: {
		char *cfg = NULL, **ls = NULL;
		size_t n = 0;
		if (oci_docker_manifest_parse(text, len, &cfg, &ls, &n, &err) == 0) {
			if (cfg[0] == '/' || n > OCI_MAX_LAYERS)
				abort();
			for (size_t i = 0; i < n; i++)
				if (ls[i][0] == '/' || strstr(ls[i], "../") == ls[i])
					abort();
		}
		free(cfg);
		oci_strv_free(ls, n);
		break;
	}
	default: {
		cJSON *c = NULL;
		if (oci_config_parse(text, len, &c, &err) == 0) {
			const cJSON *w = cJSON_GetObjectItem(c, "workingDir");
			if (!cJSON_IsString(w) || (w->valuestring[0] && w->valuestring[0] != '/'))
				abort();
		}
		cJSON_Delete(c);
		break;
	}
	}
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "fuzz_oci: parser %d\n", which % 4);
	free(text);
	return 0;
}
