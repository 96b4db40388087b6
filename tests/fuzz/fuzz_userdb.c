/* fuzz_userdb.c — the reader of a sandbox's /etc/passwd and /etc/group (sbxfs_userdb_scan,
 * runtime/sbxfs.c): the files are the sandbox's to write, so the host reads hostile text. */
#include <stdio.h>

#include "fuzz.h"
#include "sbxfs.h"

/* Input: <flags> "<name>\n" <file>. Flags bit 0: passwd (else group); bit 1: look up by
 * id (the second byte) instead of by name. A line found names what was asked for, with
 * ids below 65536 (the sandbox's range). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_in in = {data, size};
	uint8_t flags = fuzz_u8(&in);
	bool passwd = flags & 1, by_id = flags & 2;
	uint32_t want = fuzz_u8(&in);
	char *name = fuzz_line(&in);
	size_t len;
	char *file = fuzz_rest(&in, &len);
	uint32_t id = 70000, gid = 70000;
	int r = sbxfs_userdb_scan(file, passwd, by_id ? NULL : name, want, &id, &gid);
	if (r != 0 && r != 1)
		abort();
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "fuzz_userdb: %s\n", r ? "not found" : "found");
	if (r == 0 && (id >= 65536 || (passwd && gid >= 65536) || (by_id && id != want)))
		abort();
	free(file);
	free(name);
	return 0;
}
