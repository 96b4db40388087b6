/* criu_img.c — CRIU's userns image rewritten for another uid range (criu_img.h). A CRIU
 * image is two 32-bit magics, then entries, each a 32-bit length and a protobuf message;
 * userns.img holds one userns_entry { repeated uid_gid_extent uid_map = 1, gid_map = 2 },
 * an extent being { uint32 first = 1, lower_first = 2, count = 3 }. Small enough to
 * decode and encode here: no protobuf library. */
#include "criu_img.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"

#define IMG_MAX 4096

static int varint_get(const uint8_t *p, size_t n, size_t *at, uint64_t *v)
{
	*v = 0;
	for (int sh = 0; sh < 64 && *at < n; sh += 7) {
		uint8_t b = p[(*at)++];
		*v |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

static size_t varint_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	do {
		p[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			p[n] |= 0x80;
		n++;
	} while (v);
	return n;
}

/* One extent (P, N bytes) encoded again into OUT with lower_first = BASE + first. */
static ssize_t extent_rebase(const uint8_t *p, size_t n, uint32_t base, uint8_t *out)
{
	uint64_t f[4] = {0}, tag, v;
	size_t at = 0;
	while (at < n) {
		if (varint_get(p, n, &at, &tag) < 0 || (tag & 7) != 0 ||
		    varint_get(p, n, &at, &v) < 0)
			return -1;
		if (tag >> 3 >= 1 && tag >> 3 <= 3)
			f[tag >> 3] = v;
	}
	if (f[1] + f[3] > 65536)
		return -1;
	f[2] = base + f[1];
	size_t o = 0;
	for (int i = 1; i <= 3; i++) {
		o += varint_put(out + o, (uint64_t)i << 3);
		o += varint_put(out + o, f[i]);
	}
	return (ssize_t)o;
}

/* The userns_entry of IN (N bytes) into OUT (its length, -1 if it is not one). */
static ssize_t entry_rebase(const uint8_t *in, size_t n, uint32_t base, uint8_t *out, size_t max)
{
	size_t at = 0, o = 0;
	uint64_t tag, len;
	uint8_t ext[64];
	while (at < n) {
		if (varint_get(in, n, &at, &tag) < 0 || (tag & 7) != 2 ||
		    (tag >> 3 != 1 && tag >> 3 != 2) || varint_get(in, n, &at, &len) < 0 ||
		    len > n - at)
			return -1;
		ssize_t el = extent_rebase(in + at, len, base, ext);
		at += len;
		if (el < 0 || o + 2 + 10 + (size_t)el > max)
			return -1;
		o += varint_put(out + o, tag);
		o += varint_put(out + o, (uint64_t)el);
		memcpy(out + o, ext, (size_t)el);
		o += (size_t)el;
	}
	return (ssize_t)o;
}

static int file_rebase(int dfd, const char *name, uint32_t base, sl_err *err)
{
	uint8_t in[IMG_MAX], out[IMG_MAX];
	_cleanup_close_ int fd = openat(dfd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n = fd >= 0 ? read(fd, in, sizeof(in)) : -1;
	if (n < 0)
		return sl_sysfail(err, "read CRIU's %s", name);
	memcpy(out, in, 8);
	size_t at = 8, o = 8;
	while (at + 4 <= (size_t)n) {
		uint32_t len;
		memcpy(&len, in + at, 4);
		at += 4;
		if (len > (size_t)n - at)
			break;
		ssize_t el = entry_rebase(in + at, len, base, out + o + 4, sizeof(out) - o - 4);
		if (el < 0)
			break;
		uint32_t l32 = (uint32_t)el;
		memcpy(out + o, &l32, 4);
		o += 4 + (size_t)el;
		at += len;
	}
	if (n < 8 || n == (ssize_t)sizeof(in) || at != (size_t)n)
		return sl_fail(err, SL_INTERNAL, 0,
			       "CRIU's %s is not a user namespace image sandlot can read", name);
	if (pwrite(fd, out, o, 0) != (ssize_t)o || ftruncate(fd, (off_t)o) < 0)
		return sl_sysfail(err, "rewrite CRIU's %s", name);
	return 0;
}

int criu_userns_rebase(const char *dir, uint32_t base, sl_err *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return sl_sysfail(err, "open %s", dir);
	int r = 0, found = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d)))
		if (!fnmatch("userns*.img", e->d_name, 0)) {
			found++;
			r = file_rebase(dirfd(d), e->d_name, base, err);
		}
	closedir(d);
	if (r == 0 && !found)
		return sl_fail(err, SL_INTERNAL, 0, "%s holds no user namespace image", dir);
	return r;
}
