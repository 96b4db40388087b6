/* record_codec.h — a sandbox record (sl_sandbox) to and from its file: the runtime's own
 * versioned schema, not the API's JSON. Records written before the schema had a version
 * (the /v1 shape plus an "internal" object) are read as version 1. */
#ifndef SANDLOT_RECORD_CODEC_H
#define SANDLOT_RECORD_CODEC_H

#include "record.h"

#define RECORD_SCHEMA 2

/* The record's text (malloc'd), or NULL (ENOMEM). */
char *record_encode(const sl_sandbox *sb);
/* Fill SB from TEXT, which must be a JSON object of a known schema (SL_INTERNAL otherwise,
 * naming WHAT, the record's path). SB is zeroed first; free it with sandbox_free. */
int record_decode(const char *text, const char *what, sl_sandbox *sb, sl_err *err);

#endif
