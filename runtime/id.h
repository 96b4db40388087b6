/* id.h — ids: a prefix ("sbx_", "exe_", "snp_") and 20 random lowercase base32 chars. */
#ifndef SANDLOT_ID_H
#define SANDLOT_ID_H

#include <stddef.h>

/* Ids: prefix + 20 lowercase base32 chars. */
void sl_new_id(const char *prefix, char *out, size_t len);

#endif
