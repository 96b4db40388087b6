/* archive_dl.c — archive_extract_* and archive_write_tree for the sandlot binary, from
 * sandlot-archive.so on first use (dl.h says why). Unit tests link the real ones. */
#include "archive_extract.h"
#include "archive_write.h"
#include "dl.h"

typedef int (*extract_fn)(int, const char *, const sl_archive_limits *, char[65], uint64_t *,
			  sl_err *);
typedef int (*write_fn)(int, const char *, uint32_t, sl_err *);

int archive_extract_counted(int in_fd, const char *dest_dir, const sl_archive_limits *lim,
			    char digest_hex[65], uint64_t *file_bytes, sl_err *err)
{
	extract_fn fn = (extract_fn)sl_module_symbol("sandlot-archive.so", "SANDLOT_ARCHIVE_SO",
						     "archive_extract_counted", err);
	return fn ? fn(in_fd, dest_dir, lim, digest_hex, file_bytes, err) : -1;
}

int archive_write_tree(int out_fd, const char *root, uint32_t uid_base, sl_err *err)
{
	write_fn fn = (write_fn)sl_module_symbol("sandlot-archive.so", "SANDLOT_ARCHIVE_SO",
						 "archive_write_tree", err);
	return fn ? fn(out_fd, root, uid_base, err) : -1;
}

typedef int (*digests_fn)(int, char[65], char[65], uint64_t *, sl_err *);

int archive_blob_digests(int in_fd, char blob_hex[65], char tar_hex[65], uint64_t *tar_bytes,
			 sl_err *err)
{
	digests_fn fn = (digests_fn)sl_module_symbol("sandlot-archive.so", "SANDLOT_ARCHIVE_SO",
						     "archive_blob_digests", err);
	return fn ? fn(in_fd, blob_hex, tar_hex, tar_bytes, err) : -1;
}

typedef int (*layer_fn)(int, const char *, uint32_t, const char *const *, sl_err *);

int archive_write_layer(int out_fd, const char *root, uint32_t uid_base,
			const char *const *skip, sl_err *err)
{
	layer_fn fn = (layer_fn)sl_module_symbol("sandlot-archive.so", "SANDLOT_ARCHIVE_SO",
						 "archive_write_layer", err);
	return fn ? fn(out_fd, root, uid_base, skip, err) : -1;
}

typedef int (*extract_layer_fn)(int, const char *, const sl_archive_limits *, bool, char[65],
				char[65], uint64_t *, uint64_t *, sl_err *);

int archive_extract_layer(int in_fd, const char *dest_dir, const sl_archive_limits *lim,
			  bool blob_verified, char blob_hex[65], char tar_hex[65],
			  uint64_t *tar_bytes, uint64_t *file_bytes, sl_err *err)
{
	extract_layer_fn fn = (extract_layer_fn)sl_module_symbol(
	    "sandlot-archive.so", "SANDLOT_ARCHIVE_SO", "archive_extract_layer", err);
	return fn ? fn(in_fd, dest_dir, lim, blob_verified, blob_hex, tar_hex, tar_bytes,
		       file_bytes, err)
		  : -1;
}
