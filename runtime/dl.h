/* dl.h — loading sandlot's own optional modules (sandlot-archive.so, sandlot-api.so):
 * their libraries (libarchive with libxml2 and ICU; libmicrohttpd with gnutls) cost
 * milliseconds of dynamic loading, which the one-shot CLI path must not pay. */
#ifndef SANDLOT_DL_H
#define SANDLOT_DL_H

#include "err.h"

/* SYMBOL from module NAME ("sandlot-api.so"), found via $ENV, next to the running
 * binary, or in ../lib/sandlot/; loaded once. NULL with err filled when absent. */
void *sl_module_symbol(const char *name, const char *env, const char *symbol, sl_err *err);

#endif
