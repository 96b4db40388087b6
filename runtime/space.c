/* space.c — the free-space floor: parsing "1Gi" / "5%", and checking a filesystem's free
 * bytes and inodes against it with fstatvfs (microseconds: cheap enough for each create). */
#include "space.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "cleanup.h"
#include "quantity.h"

int space_floor_parse(const char *field, const char *s, sl_space_floor *out, sl_err *err)
{
	*out = (sl_space_floor){0};
	size_t n = strlen(s);
	if (!strcmp(s, "0"))
		return 0;
	if (n >= 2 && s[n - 1] == '%') {
		char *end;
		errno = 0;
		unsigned long p = strtoul(s, &end, 10);
		if (end != s + n - 1 || s[0] < '0' || s[0] > '9' || p < 1 || p > 99 || errno)
			return sl_fail(err, SL_INVALID, 0,
				       "%s \"%s\": give a percentage from 1%% to 99%%", field, s);
		out->percent = (uint32_t)p;
		return 0;
	}
	return quantity_parse_bytes(field, s, &out->bytes, err);
}

void space_floor_format(const sl_space_floor *f, char *buf, size_t len)
{
	if (f->percent)
		snprintf(buf, len, "%u%%", f->percent);
	else if (!f->bytes || quantity_format_bytes(f->bytes, buf, len) < 0)
		snprintf(buf, len, "%llu", (unsigned long long)f->bytes);
}

static uint64_t floor_bytes(const sl_space_floor *f, const struct statvfs *st)
{
	if (f->percent)
		return (uint64_t)st->f_blocks * st->f_frsize / 100 * f->percent;
	return f->bytes;
}

int space_check_fd(int fd, const sl_space_floor *floor, const char *what, sl_err *err)
{
	if (!floor || (!floor->bytes && !floor->percent))
		return 0;
	struct statvfs st;
	if (fstatvfs(fd, &st) < 0)
		return sl_sysfail(err, "%s: statvfs", what);
	uint64_t avail = (uint64_t)st.f_bavail * st.f_frsize, want = floor_bytes(floor, &st);
	char fl[32];
	space_floor_format(floor, fl, sizeof(fl));
	if (avail < want)
		return sl_fail(err, SL_NOSPACE, 0,
			       "%s has %llu MiB free, below the floor of %s (serve --min-free, "
			       "SANDLOT_MIN_FREE); free some space on it",
			       what, (unsigned long long)(avail >> 20), fl);
	/* btrfs and tmpfs-like filesystems report no inode count. */
	if (st.f_files && st.f_favail < st.f_files / 100)
		return sl_fail(err, SL_NOSPACE, 0,
			       "%s has %llu of %llu inodes free, below 1%%; free some space on it",
			       what, (unsigned long long)st.f_favail,
			       (unsigned long long)st.f_files);
	return 0;
}

int space_check(const char *path, const sl_space_floor *floor, const char *what, sl_err *err)
{
	if (!floor || (!floor->bytes && !floor->percent))
		return 0;
	_cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return sl_sysfail(err, "%s: open %s", what, path);
	return space_check_fd(fd, floor, what, err);
}

int space_check_room(const char *path, const sl_space_floor *floor, uint64_t want,
		     const char *field, const char *what, sl_err *err)
{
	_cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return sl_sysfail(err, "%s: open %s", what, path);
	if (space_check_fd(fd, floor, what, err) < 0)
		return -1;
	struct statvfs st;
	if (fstatvfs(fd, &st) < 0)
		return sl_sysfail(err, "%s: statvfs", what);
	uint64_t avail = (uint64_t)st.f_bavail * st.f_frsize;
	uint64_t keep = floor ? floor_bytes(floor, &st) : 0;
	uint64_t room = avail > keep ? avail - keep : 0;
	if (want <= room)
		return 0;
	char w[32], fl[32] = "0";
	if (quantity_format_bytes(want, w, sizeof(w)) < 0)
		snprintf(w, sizeof(w), "%llu", (unsigned long long)want);
	if (floor)
		space_floor_format(floor, fl, sizeof(fl));
	return sl_fail(err, SL_NOSPACE, 0,
		       "%s %s: %s has only %llu MiB free above its floor of %s; ask for less or "
		       "free some space on it",
		       field, w, what, (unsigned long long)(room >> 20), fl);
}
