/* registry_dl.c — registry_* for the sandlot binary, from sandlot-registry.so on first use:
 * libcurl and its TLS stack cost milliseconds of loading no other verb should pay (dl.h). */
#include "dl.h"
#include "registry.h"

#define REG_SYM(sym) sl_module_symbol("sandlot-registry.so", "SANDLOT_REGISTRY_SO", sym, err)

typedef sl_registry *(*open_fn)(const sl_registry_opts *, sl_err *);
typedef void (*close_fn)(sl_registry *);
typedef int (*manifest_fn)(sl_registry *, const char *, size_t, char **, size_t *, char *, size_t,
			   sl_err *);
typedef int (*blob_fn)(sl_registry *, const char *, int, uint64_t, uint64_t, registry_progress_fn,
		       void *, uint64_t *, sl_err *);

sl_registry *registry_open(const sl_registry_opts *o, sl_err *err)
{
	open_fn fn = (open_fn)REG_SYM("registry_open");
	return fn ? fn(o, err) : NULL;
}

void registry_close(sl_registry *r)
{
	sl_err e, *err = &e;
	close_fn fn = r ? (close_fn)REG_SYM("registry_close") : NULL;
	if (fn)
		fn(r);
}

int registry_manifest(sl_registry *r, const char *ref, size_t max, char **body, size_t *len,
		      char *media_type, size_t mt_len, sl_err *err)
{
	manifest_fn fn = (manifest_fn)REG_SYM("registry_manifest");
	return fn ? fn(r, ref, max, body, len, media_type, mt_len, err) : -1;
}

int registry_blob(sl_registry *r, const char *digest, int fd, uint64_t from, uint64_t max,
		  registry_progress_fn cb, void *arg, uint64_t *have, sl_err *err)
{
	blob_fn fn = (blob_fn)REG_SYM("registry_blob");
	*have = from;
	return fn ? fn(r, digest, fd, from, max, cb, arg, have, err) : -1;
}
