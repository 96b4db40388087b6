/* space.h — the free-space floor of the host's disks: below it, creates and imports
 * stop with SL_NOSPACE (507) instead of filling the state filesystem or the store. */
#ifndef SANDLOT_SPACE_H
#define SANDLOT_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* At least BYTES, or PERCENT of the filesystem's size, free (whichever is set; both
 * zero: no floor). A floor also keeps 1% of the inodes free where the filesystem
 * counts them. */
typedef struct sl_space_floor {
	uint64_t bytes;
	uint32_t percent;
} sl_space_floor;

/* "1Gi" (a byte quantity), "5%" (1-99 percent) or "0" (no floor). FIELD names the
 * setting in the message (SL_INVALID). */
int space_floor_parse(const char *field, const char *s, sl_space_floor *out, sl_err *err);
/* "1Gi" or "5%" or "0", for messages. */
void space_floor_format(const sl_space_floor *f, char *buf, size_t len);

/* 0 when the filesystem of FD (or PATH) is above FLOOR; SL_NOSPACE naming WHAT and the
 * floor when not; SL_INTERNAL when statfs fails. FLOOR NULL: always 0. */
int space_check_fd(int fd, const sl_space_floor *floor, const char *what, sl_err *err);
int space_check(const char *path, const sl_space_floor *floor, const char *what, sl_err *err);
/* The same, and WANT more bytes must fit above the floor (a sandbox's whole disk, which
 * its writes may fill): SL_NOSPACE naming FIELD and what is left when they do not. */
int space_check_room(const char *path, const sl_space_floor *floor, uint64_t want,
		     const char *field, const char *what, sl_err *err);

#endif
