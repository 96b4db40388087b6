/* id.h — ids: a prefix ("sbx_", "exe_", "snp_") and 20 random lowercase base32 chars. */
#ifndef SANDLOT_ID_H
#define SANDLOT_ID_H

#include <stdbool.h>
#include <stddef.h>

/* Ids: prefix + 20 lowercase base32 chars. */
void sl_new_id(const char *prefix, char *out, size_t len);
/* Is S an id sl_new_id could have made with PREFIX (under 32 chars)? Ids become path
 * components, so whatever names a file by id checks it first. */
bool id_ok(const char *s, const char *prefix);

#endif
