/* quantity.h — Kubernetes resource quantities ("500m", "512Mi", "1e9") and durations
 * ("1h30m", "500ms") parsed into integers, and formatted back in canonical form. */
#ifndef SANDLOT_QUANTITY_H
#define SANDLOT_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* CPU as millicores: "500m", "0.5", "2", "1e0". Zero, negatives, units other than "m",
 * and values finer than 1m are SL_INVALID; FIELD names the setting in the message. */
int quantity_parse_cpu(const char *field, const char *s, uint64_t *millicores, sl_err *err);

/* Memory/disk as bytes: "1000", "1k" .. "1E" (decimal), "1Ki" .. "1Ei" (binary), "1e9",
 * fractions ("1.5Gi", rounded up to whole bytes). Zero, negatives, "m", values above
 * INT64_MAX and "64MB"-style units are SL_INVALID. */
int quantity_parse_bytes(const char *field, const char *s, uint64_t *bytes, sl_err *err);

/* A duration as milliseconds: Go-style "500ms", "30s", "5m", "1h30m", "1.5s" (units ns, us,
 * ms, s, m, h), or a plain integer meaning milliseconds. Sub-millisecond remainders round
 * up. Zero ("0", "0s") is accepted; the caller decides what it means. */
int duration_parse(const char *field, const char *s, uint64_t *ms, sl_err *err);

/* "512Mi" when BYTES is an exact multiple of a binary unit, else the plain byte count.
 * Return 0, or -1 with errno = ERANGE when BUF is too small. */
int quantity_format_bytes(uint64_t bytes, char *buf, size_t len);
/* "2" for whole cores, else "500m". Return 0, or -1 with errno = ERANGE. */
int quantity_format_cpu(uint64_t millicores, char *buf, size_t len);

#endif
