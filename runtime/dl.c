/* dl.c — find and load a sandlot module beside the binary (build tree) or in the
 * install prefix; dlopen is thread-safe and idempotent, so concurrent first calls are
 * harmless. */
#include "dl.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *sl_module_symbol(const char *name, const char *env, const char *symbol, sl_err *err)
{
	char exe[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		sl_fail(err, SL_INTERNAL, 0, "cannot find sandlot's own path");
		return NULL;
	}
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0';
	const char *over = env ? getenv(env) : NULL;
	const char *dirs[] = { "", "/../lib/sandlot" };
	for (int i = over ? -1 : 0; i < 2; i++) {
		if (i < 0)
			snprintf(path, sizeof(path), "%s", over);
		else
			snprintf(path, sizeof(path), "%s%s/%s", exe, dirs[i], name);
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		void *fn = h ? dlsym(h, symbol) : NULL;
		if (fn)
			return fn;
	}
	const char *why = dlerror();
	sl_fail(err, SL_INTERNAL, 0, "cannot load %s next to the sandlot binary: %s", name,
		why ? why : "not found");
	return NULL;
}
