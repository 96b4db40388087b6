/* archive_extract.h — extraction of untrusted tar archives (plain, gz, zst, xz, bz2) into a
 * fresh directory, refusing anything that could reach outside it, with the input's sha256. */
#ifndef SANDLOT_ARCHIVE_EXTRACT_H
#define SANDLOT_ARCHIVE_EXTRACT_H

#include "err.h"
#include "space.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct sl_archive_limits {
	uint64_t max_entry_bytes; /* one regular file's size (SL_TOOLARGE) */
	uint64_t max_total_bytes; /* sum of all regular files' sizes (SL_TOOLARGE) */
	uint64_t max_entries;	  /* number of entries of any type (SL_TOOLARGE) */
	bool allow_devices;	  /* char/block device nodes (SL_INVALID when false) */
	/* The free space kept on the destination's filesystem, checked as the writing goes
	 * (every 4 MiB and every 256 entries): SL_NOSPACE when crossed. Zero: none. */
	sl_space_floor min_free;
} sl_archive_limits;

/* 4 GiB per entry, 16 GiB in all, 1,000,000 entries, no device nodes, no floor. Inline:
 * the sandlot binary, which loads the extractor on first use, fills limits too. */
static inline void archive_limits_default(sl_archive_limits *l)
{
	*l = (sl_archive_limits){.max_entry_bytes = 4ULL << 30,
				 .max_total_bytes = 16ULL << 30,
				 .max_entries = 1000000};
}

/* Read one tar archive from IN_FD (a file or a pipe; read once, front to back, to the
 * end of the input), create DEST_DIR (0755; it must not exist yet) and extract into it
 * with owners, modes (setuid included), mtimes and links preserved. DIGEST_HEX receives
 * the sha256 of every input byte, as `sha256sum` would print it. Refused: absolute or
 * `..` paths, hardlinks leaving the tree, relative symlinks whose target climbs above
 * the archive root, writes through a symlink, devices unless LIM allows them, sizes over
 * LIM (SL_TOOLARGE), truncated or corrupt input (SL_INVALID), a full destination
 * filesystem or one below LIM's floor (SL_NOSPACE). Symlinks with an absolute
 * target are kept: they resolve inside the sandbox's root, and the host never follows
 * links inside a layer. On any failure DEST_DIR is removed entirely. LIM NULL = defaults. */
int archive_extract_safe(int in_fd, const char *dest_dir, const sl_archive_limits *lim,
			 char digest_hex[65], sl_err *err);

/* The same, also reporting the total size of the regular files written (hardlinks
 * counted once) in *FILE_BYTES. */
int archive_extract_counted(int in_fd, const char *dest_dir, const sl_archive_limits *lim,
			    char digest_hex[65], uint64_t *file_bytes, sl_err *err);

/* A container image's blob read to the end from IN_FD: BLOB_HEX the sha256 of its bytes
 * (the digest a manifest names), TAR_HEX of its bytes decompressed (gzip, zstd, xz or
 * none: the layer's diff id, which the image config lists) and *TAR_BYTES their count.
 * Nothing is extracted: a blob is verified before any of it is written. Corrupt or
 * truncated compressed data is SL_INVALID. */
int archive_blob_digests(int in_fd, char blob_hex[65], char tar_hex[65], uint64_t *tar_bytes,
			 sl_err *err);

/* A container layer's blob from IN_FD extracted into DEST_DIR in one pass, under the same
 * rules as archive_extract_safe: decompressed once (gzip, zstd, xz or none, as
 * archive_blob_digests), TAR_HEX the sha256 of the decompressed tar (the diff id) and
 * *TAR_BYTES its size, BLOB_HEX of the raw bytes unless BLOB_VERIFIED (the caller hashed
 * them as they arrived; BLOB_HEX is then left untouched). The tree is extracted before
 * the digests are known: the caller compares them and removes DEST_DIR on a mismatch,
 * and never uses the tree before. *FILE_BYTES as archive_extract_counted's. */
int archive_extract_layer(int in_fd, const char *dest_dir, const sl_archive_limits *lim,
			  bool blob_verified, char blob_hex[65], char tar_hex[65],
			  uint64_t *tar_bytes, uint64_t *file_bytes, sl_err *err);

#endif
