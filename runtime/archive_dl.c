/* archive_dl.c — archive_extract_* for the sandlot binary, loaded on first use from
 * sandlot-archive.so. libarchive drags in libxml2, ICU and libstdc++ (~5 ms of
 * dynamic loading per process here); only image import needs it, so the one-shot
 * `sandlot run` path does not pay for it. Unit tests link archive_extract.c directly. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive_extract.h"
#include "archive_write.h"

typedef int (*extract_fn)(int, const char *, const sl_archive_limits *, char[65], uint64_t *,
			  sl_err *);
typedef int (*write_fn)(int, const char *, uint32_t, sl_err *);

/* Look NAME up in sandlot-archive.so (loaded once; dlopen is thread-safe and
 * idempotent, so concurrent first calls are harmless). */
static void *load(const char *name, sl_err *err)
{
	char exe[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		sl_fail(err, SL_INTERNAL, 0, "cannot find sandlot's own path");
		return NULL;
	}
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0';
	static const char *const rels[] = { "sandlot-archive.so", "../lib/sandlot/sandlot-archive.so",
					    NULL };
	const char *env = getenv("SANDLOT_ARCHIVE_SO");
	for (int i = -1; rels[i + 1] || i < 0; i++) {
		if (i < 0 && !env)
			continue;
		if (i < 0)
			snprintf(path, sizeof(path), "%s", env);
		else
			snprintf(path, sizeof(path), "%s/%s", exe, rels[i]);
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h)
			continue;
		void *fn = dlsym(h, name);
		if (fn)
			return fn;
	}
	sl_fail(err, SL_INTERNAL, 0, "cannot load sandlot-archive.so next to the sandlot binary: %s",
		dlerror() ? dlerror() : "not found");
	return NULL;
}

int archive_extract_counted(int in_fd, const char *dest_dir, const sl_archive_limits *lim,
			    char digest_hex[65], uint64_t *file_bytes, sl_err *err)
{
	extract_fn fn = (extract_fn)load("archive_extract_counted", err);
	return fn ? fn(in_fd, dest_dir, lim, digest_hex, file_bytes, err) : -1;
}

int archive_write_tree(int out_fd, const char *root, uint32_t uid_base, sl_err *err)
{
	write_fn fn = (write_fn)load("archive_write_tree", err);
	return fn ? fn(out_fd, root, uid_base, err) : -1;
}
