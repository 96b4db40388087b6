/* id.c — the ids of sandboxes, executions and snapshots: a prefix and 20 random
 * lowercase base32 chars (they appear in hostnames). */
#include "id.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

void sl_new_id(const char *prefix, char *out, size_t len)
{
	static const char b32[] = "abcdefghijklmnopqrstuvwxyz234567";
	unsigned char r[20];
	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		abort(); /* no entropy: ids would collide */
	char s[21];
	for (int i = 0; i < 20; i++)
		s[i] = b32[r[i] & 31];
	s[20] = '\0';
	snprintf(out, len, "%s%s", prefix, s);
}

bool id_ok(const char *s, const char *prefix)
{
	size_t pl = strlen(prefix), n = s ? strlen(s) : 0;
	return n > pl && n < 32 && !strncmp(s, prefix, pl) &&
	       strspn(s + pl, "abcdefghijklmnopqrstuvwxyz234567") == n - pl;
}
