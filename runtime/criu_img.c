/* criu_img.c — CRIU's userns and utsns images rewritten for a copy (criu_img.h). A CRIU
 * image is two 32-bit magics, then entries, each a 32-bit length and a protobuf message;
 * userns.img holds one userns_entry { repeated uid_gid_extent uid_map = 1, gid_map = 2 },
 * an extent being { uint32 first = 1, lower_first = 2, count = 3 }; utsns.img one
 * utsns_entry { string nodename = 1, domainname = 2 } (CRIU's images/userns.proto, utsns.proto).
 * Small enough to decode and encode here: no protobuf library. */
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

/* An entry of an image rewritten by a criu_edit: -1 when it is not what CRIU writes. */
typedef ssize_t (*entry_edit)(const uint8_t *in, size_t n, const void *arg, uint8_t *out,
			      size_t max);

static ssize_t userns_edit(const uint8_t *in, size_t n, const void *arg, uint8_t *out, size_t max)
{
	return entry_rebase(in, n, *(const uint32_t *)arg, out, max);
}

/* utsns.img: utsns_entry { string nodename = 1, domainname = 2 }; nodename becomes ARG. */
static ssize_t utsns_edit(const uint8_t *in, size_t n, const void *arg, uint8_t *out, size_t max)
{
	const char *name = arg;
	size_t at = 0, o = 0, nl = strlen(name);
	uint64_t tag, len;
	if (nl > 64 || max < nl + 12)
		return -1;
	o += varint_put(out + o, (1 << 3) | 2);
	o += varint_put(out + o, nl);
	memcpy(out + o, name, nl);
	o += nl;
	while (at < n) {
		if (varint_get(in, n, &at, &tag) < 0 || (tag & 7) != 2 ||
		    varint_get(in, n, &at, &len) < 0 || len > n - at)
			return -1;
		if (tag >> 3 != 1) { /* the rest as it is */
			if (o + 20 + len > max)
				return -1;
			o += varint_put(out + o, tag);
			o += varint_put(out + o, len);
			memcpy(out + o, in + at, len);
			o += len;
		}
		at += len;
	}
	return (ssize_t)o;
}

static int file_edit(int dfd, const char *name, entry_edit edit, const void *arg, sl_err *err)
{
	uint8_t in[IMG_MAX], out[IMG_MAX];
	_cleanup_close_ int fd = openat(dfd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n = fd >= 0 ? read(fd, in, sizeof(in)) : -1;
	if (n < 0)
		return sl_sysfail(err, "read CRIU's %s", name);
	memcpy(out, in, n < 8 ? (size_t)n : 8);
	size_t at = 8, o = 8;
	while (at + 4 <= (size_t)n) {
		uint32_t len;
		memcpy(&len, in + at, 4);
		at += 4;
		if (len > (size_t)n - at)
			break;
		ssize_t el = edit(in + at, len, arg, out + o + 4, sizeof(out) - o - 4);
		if (el < 0)
			break;
		uint32_t l32 = (uint32_t)el;
		memcpy(out + o, &l32, 4);
		o += 4 + (size_t)el;
		at += len;
	}
	if (n < 8 || n == (ssize_t)sizeof(in) || at != (size_t)n)
		return sl_fail(err, SL_INTERNAL, 0, "CRIU's %s is not an image sandlot can read",
			       name);
	if (pwrite(fd, out, o, 0) != (ssize_t)o || ftruncate(fd, (off_t)o) < 0)
		return sl_sysfail(err, "rewrite CRIU's %s", name);
	return 0;
}

/* Every file of DIR matching GLOB edited by EDIT; -1 when there is none. */
static int dir_edit(const char *dir, const char *glob, entry_edit edit, const void *arg,
		    sl_err *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return sl_sysfail(err, "open %s", dir);
	int r = 0, found = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d)))
		if (!fnmatch(glob, e->d_name, 0)) {
			found++;
			r = file_edit(dirfd(d), e->d_name, edit, arg, err);
		}
	closedir(d);
	if (r == 0 && !found)
		return sl_fail(err, SL_INTERNAL, 0, "%s holds no %s", dir, glob);
	return r;
}

int criu_userns_rebase(const char *dir, uint32_t base, sl_err *err)
{
	return dir_edit(dir, "userns*.img", userns_edit, &base, err);
}

int criu_utsns_rename(const char *dir, const char *hostname, sl_err *err)
{
	return dir_edit(dir, "utsns*.img", utsns_edit, hostname, err);
}
