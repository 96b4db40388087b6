/* archive_extract.c — extract an untrusted tar stream into a new directory: every entry is
 * validated and re-rooted before libarchive's disk writer sees it; failure leaves nothing. */
#include "archive_extract.h"

#include "cleanup.h"
#include "fsutil.h"
#include "log.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#define AX_READ_BUF (128 * 1024)
/* Data after the tar end marker is hashed but not extracted; a little is normal
 * (blocking-factor padding), a lot means the input is not what it claims to be. */
#define AX_MAX_TRAILING (16ULL << 20)
/* How often the destination's free space is checked against the floor. */
#define AX_SPACE_EVERY_BYTES (4ULL << 20)
#define AX_SPACE_EVERY_ENTRIES 256

/* The raw input: everything read is hashed, so the digest names the bytes as sent. */
struct ax_input {
	int fd;
	struct sha256_ctx md;
	unsigned char *buf;
	int read_errno;
	bool eof;
	bool no_hash; /* the caller verified these bytes already */
};

struct ax_run {
	const char *dest; /* canonical absolute path, no symlink in it */
	int dest_fd;
	const sl_archive_limits *lim;
	uint64_t entries, total;
	uint64_t unchecked; /* bytes written since the last look at the free space */
	struct ax_input in;
	struct archive *r, *w;
	/* A layer (archive_extract_layer): R reads the tar from OUTER, which decompresses
	 * the input; TAR_MD hashes the tar as it goes through (the diff id). */
	struct archive *outer;
	struct sha256_ctx tar_md;
	uint64_t tar_bytes;
	bool outer_eof;
	sl_err *err;
};


static void ax_hex(struct sha256_ctx *md, char hex[65])
{
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_digest(md, sizeof(d), d);
	for (unsigned i = 0; i < SHA256_DIGEST_SIZE; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

static ssize_t ax_read_cb(struct archive *a, void *data, const void **out)
{
	struct ax_input *in = data;
	ssize_t n;
	do
		n = read(in->fd, in->buf, AX_READ_BUF);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		in->read_errno = errno;
		archive_set_error(a, errno, "read archive input");
		return -1;
	}
	if (n == 0)
		in->eof = true;
	else if (!in->no_hash)
		sha256_update(&in->md, (size_t)n, in->buf);
	*out = in->buf;
	return n;
}

/* Hash what libarchive left unread after the end marker, so the digest covers the
 * whole input exactly as `sha256sum` would. */
static int ax_drain(struct ax_input *in, sl_err *err)
{
	uint64_t extra = 0;
	while (!in->eof) {
		ssize_t n = read(in->fd, in->buf, AX_READ_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sl_sysfail(err, "read archive input");
		if (n == 0)
			break;
		extra += (uint64_t)n;
		if (extra > AX_MAX_TRAILING)
			return sl_fail(err, SL_INVALID, 0,
				       "archive: more than %llu MiB of data after the end of the "
				       "tar archive; is it really one tar file?",
				       AX_MAX_TRAILING >> 20);
		if (!in->no_hash)
			sha256_update(&in->md, (size_t)n, in->buf);
	}
	return 0;
}

/* Rewrite archive path P as clean components ("a/b", "" for the root). Absolute paths
 * and ".." anywhere are refused here, before any prefixing, so no later step can be
 * fooled into leaving the tree. */
static int ax_clean_path(const char *entry, const char *what, const char *p, char *out, size_t len,
			 sl_err *err)
{
	if (p[0] == '/')
		return sl_fail(err, SL_INVALID, 0,
			       "archive entry '%s': %s '%s' is absolute; archive paths must be "
			       "relative to the root",
			       entry, what, p);
	size_t o = 0;
	out[0] = '\0';
	while (*p) {
		const char *slash = strchrnul(p, '/');
		size_t n = (size_t)(slash - p);
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return sl_fail(err, SL_INVALID, 0,
				       "archive entry '%s': %s contains a '..' component", entry,
				       what);
		if (n > 0 && !(n == 1 && p[0] == '.')) {
			if (o + n + 2 > len)
				return sl_fail(err, SL_INVALID, 0,
					       "archive entry '%s': %s is too long", entry, what);
			if (o)
				out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
			out[o] = '\0';
		}
		p = *slash ? slash + 1 : slash;
	}
	return 0;
}

/* Would the relative symlink target T, followed from the directory holding the clean
 * link path LINK, climb above the root? Checked lexically, the way the sandbox's own
 * path walk inside its root will see it. */
static bool ax_symlink_escapes(const char *link, const char *t)
{
	long depth = 0;
	for (const char *c = link; *c; c++)
		depth += *c == '/';
	while (*t) {
		const char *slash = strchrnul(t, '/');
		size_t n = (size_t)(slash - t);
		if (n == 2 && t[0] == '.' && t[1] == '.') {
			if (--depth < 0)
				return true;
		} else if (n > 0 && !(n == 1 && t[0] == '.')) {
			depth++;
		}
		t = *slash ? slash + 1 : slash;
	}
	return false;
}

/* Open REL beneath the destination without following any symlink on the way. */
static int ax_open_beneath(struct ax_run *x, const char *rel, int flags)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_CLOEXEC),
	    .resolve =
		RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	return (int)syscall(SYS_openat2, x->dest_fd, rel[0] ? rel : ".", &how, sizeof(how));
}

/* A hardlink may only point at a non-directory already extracted, reached without
 * crossing a symlink on the way. */
static int ax_check_hardlink(struct ax_run *x, const char *entry, const char *target)
{
	if (!target[0])
		return sl_fail(x->err, SL_INVALID, 0,
			       "archive entry '%s': hardlink to the archive root", entry);
	_cleanup_close_ int fd = ax_open_beneath(x, target, O_PATH | O_NOFOLLOW);
	if (fd < 0 && errno == ELOOP)
		return sl_fail(x->err, SL_INVALID, 0,
			       "archive entry '%s': hardlink target '%s' goes through a symlink",
			       entry, target);
	if (fd < 0)
		return sl_fail(x->err, SL_INVALID, errno,
			       "archive entry '%s': hardlink target '%s' is not an earlier entry",
			       entry, target);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return sl_sysfail(x->err, "archive entry '%s': stat hardlink target", entry);
	/* A hardlink to a symlink is fine: linkat() links the symlink itself. */
	if (S_ISDIR(st.st_mode))
		return sl_fail(x->err, SL_INVALID, 0,
			       "archive entry '%s': hardlink target '%s' is a directory", entry,
			       target);
	return 0;
}

/* The entry's parent must be reachable without a symlink (one planted by an earlier
 * entry would carry the write outside), and a directory must not be swapped for a
 * non-directory (deferred directory fixups would then land on the replacement). */
static int ax_check_parent(struct ax_run *x, const char *rel, bool is_dir)
{
	if (!rel[0])
		return 0;
	char parent[PATH_MAX];
	const char *base = strrchr(rel, '/');
	if (base) {
		memcpy(parent, rel, (size_t)(base - rel));
		parent[base - rel] = '\0';
		base++;
	} else {
		parent[0] = '\0';
		base = rel;
	}
	_cleanup_close_ int pfd = ax_open_beneath(x, parent, O_PATH | O_DIRECTORY);
	if (pfd < 0) {
		if (errno == ENOENT)
			return 0; /* created by the writer, as plain directories */
		if (errno == ELOOP || errno == EXDEV)
			return sl_fail(x->err, SL_INVALID, 0,
				       "archive entry '%s' would be written through a symlink "
				       "planted by an earlier entry",
				       rel);
		if (errno == ENOTDIR)
			return sl_fail(x->err, SL_INVALID, 0,
				       "archive entry '%s': a parent is not a directory", rel);
		return sl_sysfail(x->err, "archive entry '%s': open parent", rel);
	}
	struct stat st;
	if (!is_dir && fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		return sl_fail(x->err, SL_INVALID, 0,
			       "archive entry '%s' would replace a directory with a non-directory",
			       rel);
	return 0;
}

static int ax_check_type(struct ax_run *x, struct archive_entry *e, const char *rel)
{
	const sl_archive_limits *lim = x->lim;
	mode_t type = archive_entry_filetype(e);
	if (!rel[0] && type != AE_IFDIR)
		return sl_fail(x->err, SL_INVALID, 0,
			       "archive entry '.': the archive root must be a directory");
	switch (type) {
	case AE_IFREG: {
		int64_t size = archive_entry_size(e);
		if (size < 0)
			return sl_fail(x->err, SL_INVALID, 0, "archive entry '%s': bad size", rel);
		if ((uint64_t)size > lim->max_entry_bytes)
			return sl_fail(x->err, SL_TOOLARGE, 0,
				       "archive entry '%s' is %lld bytes, over the per-file limit "
				       "of %llu",
				       rel, (long long)size,
				       (unsigned long long)lim->max_entry_bytes);
		x->total += (uint64_t)size;
		if (x->total > lim->max_total_bytes)
			return sl_fail(x->err, SL_TOOLARGE, 0,
				       "archive entry '%s' brings the content to %llu bytes, over "
				       "the limit of %llu",
				       rel, (unsigned long long)x->total,
				       (unsigned long long)lim->max_total_bytes);
		return 0;
	}
	case AE_IFDIR:
	case AE_IFIFO:
		return 0;
	case AE_IFLNK: {
		const char *t = archive_entry_symlink(e);
		if (!t || !t[0])
			return sl_fail(x->err, SL_INVALID, 0,
				       "archive entry '%s': symlink with an empty target", rel);
		if (t[0] != '/' && ax_symlink_escapes(rel, t))
			return sl_fail(x->err, SL_INVALID, 0,
				       "archive entry '%s': symlink target '%s' climbs above the "
				       "archive root",
				       rel, t);
		return 0;
	}
	case AE_IFCHR:
	case AE_IFBLK:
		if (lim->allow_devices)
			return 0;
		return sl_fail(x->err, SL_INVALID, 0,
			       "archive entry '%s' is a %s device node; device nodes are not "
			       "allowed in images",
			       rel, type == AE_IFCHR ? "character" : "block");
	default:
		return sl_fail(x->err, SL_INVALID, 0,
			       "archive entry '%s' has an unsupported type (0%o)", rel,
			       (unsigned)type);
	}
}

/* Map a disk-writer failure: libarchive's own security refusals carry no errno. */
static int ax_write_fail(struct ax_run *x, const char *rel, const char *step)
{
	int e = archive_errno(x->w);
	const char *msg = archive_error_string(x->w);
	if (!msg)
		msg = "unknown error";
	sl_kind kind = SL_INTERNAL;
	if (e == ENOSPC || e == EDQUOT)
		kind = SL_NOSPACE; /* the host's disk, not a sandbox's quota */
	else if (e <= 0)
		kind = SL_INVALID;
	bool has_errtext = e > 0 && strstr(msg, strerror(e));
	return sl_fail(x->err, kind, has_errtext || e <= 0 ? 0 : e, "archive entry '%s': %s: %s",
		       rel[0] ? rel : ".", step, msg);
}

/* Reader failures are the input's fault (truncated, corrupt) unless read(2) failed. */
static int ax_read_fail(struct ax_run *x, const char *what)
{
	if (x->in.read_errno)
		return sl_fail(x->err, SL_INTERNAL, x->in.read_errno, "archive: read input");
	const char *msg = archive_error_string(x->r);
	return sl_fail(x->err, SL_INVALID, 0,
		       "archive: %s (after %llu good entries): %s; is the file a complete tar, "
		       "tar.gz, tar.zst or tar.xz?",
		       what, (unsigned long long)x->entries, msg ? msg : "unknown error");
}

/* Stop before the host's disk goes under its floor, not when it is full: the floor is
 * what the rest of the host (records, logs, other sandboxes) lives on. */
static int ax_space_check(struct ax_run *x, const char *rel)
{
	x->unchecked = 0;
	if (space_check_fd(x->dest_fd, &x->lim->min_free, "the image store's filesystem",
			   x->err) < 0)
		return sl_wrap(x->err, "archive entry '%s'", rel[0] ? rel : ".");
	return 0;
}

static int ax_copy_data(struct ax_run *x, const char *rel)
{
	for (;;) {
		const void *buf;
		size_t size;
		la_int64_t off;
		int r = archive_read_data_block(x->r, &buf, &size, &off);
		if (r == ARCHIVE_EOF)
			return 0;
		if (r < ARCHIVE_WARN)
			return ax_read_fail(x, "bad file data");
		if (archive_write_data_block(x->w, buf, size, off) < ARCHIVE_WARN)
			return ax_write_fail(x, rel, "write data");
		x->unchecked += size;
		if (x->unchecked >= AX_SPACE_EVERY_BYTES && ax_space_check(x, rel) < 0)
			return -1;
	}
}

static int ax_entry(struct ax_run *x, struct archive_entry *e)
{
	if (++x->entries > x->lim->max_entries)
		return sl_fail(x->err, SL_TOOLARGE, 0, "archive has more than %llu entries",
			       (unsigned long long)x->lim->max_entries);
	if (x->entries % AX_SPACE_EVERY_ENTRIES == 1 && ax_space_check(x, "") < 0)
		return -1;
	const char *raw = archive_entry_pathname(e);
	if (!raw)
		return sl_fail(x->err, SL_INVALID, 0,
			       "archive entry #%llu has a pathname that cannot be decoded",
			       (unsigned long long)x->entries);
	/* The full path must stay under PATH_MAX: beyond it libarchive would chdir(),
	 * which is process-wide. */
	size_t room = PATH_MAX - strlen(x->dest) - 1;
	char rel[PATH_MAX], full[PATH_MAX];
	if (ax_clean_path(raw, "path", raw, rel, room, x->err) < 0)
		return -1;
	if (snprintf(full, sizeof(full), "%s%s%s", x->dest, rel[0] ? "/" : "", rel) >=
	    (int)sizeof(full))
		return sl_fail(x->err, SL_INVALID, 0, "archive entry '%s': path too long", rel);

	const char *hard = archive_entry_hardlink(e);
	if (hard) {
		char target[PATH_MAX], hfull[PATH_MAX];
		if (!rel[0])
			return sl_fail(x->err, SL_INVALID, 0,
				       "archive entry '%s': the root cannot be a hardlink", raw);
		if (ax_clean_path(rel, "hardlink target", hard, target, room, x->err) < 0 ||
		    ax_check_hardlink(x, rel, target) < 0 || ax_check_parent(x, rel, false) < 0)
			return -1;
		if (snprintf(hfull, sizeof(hfull), "%s/%s", x->dest, target) >= (int)sizeof(hfull))
			return sl_fail(x->err, SL_INVALID, 0,
				       "archive entry '%s': hardlink target too long", rel);
		archive_entry_set_hardlink(e, hfull);
		/* Data carried by a hardlink entry would be written through the link. */
		archive_entry_set_size(e, 0);
	} else if (ax_check_type(x, e, rel) < 0 ||
		   ax_check_parent(x, rel, archive_entry_filetype(e) == AE_IFDIR) < 0) {
		return -1;
	}
	archive_entry_set_pathname(e, full);

	int r = archive_write_header(x->w, e);
	if (r < ARCHIVE_WARN)
		return ax_write_fail(x, rel, "create");
	if (r == ARCHIVE_WARN)
		sl_log(SL_LOG_WARN, "archive entry '%s': %s", rel, archive_error_string(x->w));
	if (!hard && archive_entry_filetype(e) == AE_IFREG && ax_copy_data(x, rel) < 0)
		return -1;
	if (archive_write_finish_entry(x->w) < ARCHIVE_WARN)
		return ax_write_fail(x, rel, "finish");
	return 0;
}

static void ax_run_release(struct ax_run *x)
{
	if (x->r)
		archive_read_free(x->r);
	if (x->outer)
		archive_read_free(x->outer);
	if (x->w)
		archive_write_free(x->w);
	free(x->in.buf);
	if (x->dest_fd >= 0)
		close(x->dest_fd);
}

/* The decompressing reader's failure: the input's fault unless read(2) failed. */
static int ax_outer_fail(struct ax_run *x, const char *what)
{
	if (x->in.read_errno)
		return sl_fail(x->err, SL_INTERNAL, x->in.read_errno, "archive: read input");
	const char *msg = archive_error_string(x->outer);
	return sl_fail(x->err, SL_INVALID, 0, "archive: %s: %s", what,
		       msg ? msg : "unknown error");
}

/* A container layer's blob decompressed (gzip, zstd, xz or none) as one raw entry: the
 * filters archive_blob_digests accepts, so both name the same tar. */
static int ax_open_outer(struct ax_run *x)
{
	struct archive_entry *e;
	sha256_init(&x->tar_md);
	archive_read_support_format_raw(x->outer);
	archive_read_support_filter_none(x->outer);
	archive_read_support_filter_gzip(x->outer);
	archive_read_support_filter_zstd(x->outer);
	archive_read_support_filter_xz(x->outer);
	if (archive_read_open(x->outer, &x->in, NULL, ax_read_cb, NULL) != ARCHIVE_OK ||
	    archive_read_next_header(x->outer, &e) != ARCHIVE_OK)
		return ax_outer_fail(x, "cannot read the layer's blob");
	return 0;
}

/* The tar reader's input: the next decompressed block, hashed on its way. */
static ssize_t ax_tar_read_cb(struct archive *a, void *data, const void **out)
{
	struct ax_run *x = data;
	const void *buf;
	size_t size;
	la_int64_t off;
	if (x->outer_eof)
		return 0;
	int r;
	do /* an empty block is not the end: 0 would tell the tar reader it is */
		r = archive_read_data_block(x->outer, &buf, &size, &off);
	while (r >= ARCHIVE_WARN && r != ARCHIVE_EOF && size == 0);
	if (r == ARCHIVE_EOF) {
		x->outer_eof = true;
		return 0;
	}
	if (r < ARCHIVE_WARN) {
		const char *msg = archive_error_string(x->outer);
		archive_set_error(a, archive_errno(x->outer) > 0 ? archive_errno(x->outer) : EIO,
				  "bad compressed data: %s", msg ? msg : "unknown error");
		return -1;
	}
	sha256_update(&x->tar_md, size, buf);
	x->tar_bytes += size;
	*out = buf;
	return (ssize_t)size;
}

/* What the tar reader left after the end marker: hashed into the diff id (it is part of
 * the decompressed stream), bounded as ax_drain bounds the raw input's. */
static int ax_drain_outer(struct ax_run *x)
{
	uint64_t extra = 0;
	while (!x->outer_eof) {
		const void *buf;
		size_t size;
		la_int64_t off;
		int r = archive_read_data_block(x->outer, &buf, &size, &off);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN)
			return ax_outer_fail(x, "bad compressed data");
		sha256_update(&x->tar_md, size, buf);
		x->tar_bytes += size;
		extra += size;
		if (extra > AX_MAX_TRAILING)
			return sl_fail(x->err, SL_INVALID, 0,
				       "archive: more than %llu MiB of data after the end of the "
				       "layer's tar; is it really one tar file?",
				       AX_MAX_TRAILING >> 20);
	}
	return 0;
}

static int ax_open(struct ax_run *x)
{
	x->in.buf = malloc(AX_READ_BUF);
	sha256_init(&x->in.md);
	x->r = archive_read_new();
	x->w = archive_write_disk_new();
	if (!x->in.buf || !x->r || !x->w)
		return sl_fail(x->err, SL_EXHAUSTED, ENOMEM, "archive: set up extraction");
	/* Compression filters are named, not _all: _all would also run external
	 * programs (lrzip, lzop, ...) on hostile input. */
	archive_read_support_format_tar(x->r);
	archive_read_support_filter_none(x->r);
	if (!x->outer) {
		archive_read_support_filter_gzip(x->r);
		archive_read_support_filter_zstd(x->r);
		archive_read_support_filter_xz(x->r);
		archive_read_support_filter_lzma(x->r);
		archive_read_support_filter_bzip2(x->r);
	}
	/* No SECURE_NOABSOLUTEPATHS: every path is made absolute under dest after
	 * ax_clean_path has refused absolute ones. No XATTR/ACL/FFLAGS: trusted.* and
	 * security.* from a hostile archive have no business on the host. Owners stay
	 * numeric: no name lookup against the host's passwd. */
	archive_write_disk_set_options(
	    x->w, ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
		      ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT);
	if (x->outer) {
		if (ax_open_outer(x) < 0)
			return -1;
		if (archive_read_open(x->r, x, NULL, ax_tar_read_cb, NULL) != ARCHIVE_OK)
			return ax_read_fail(x, "cannot read the layer's tar");
		return 0;
	}
	if (archive_read_open(x->r, &x->in, NULL, ax_read_cb, NULL) != ARCHIVE_OK)
		return ax_read_fail(x, "cannot read the archive");
	return 0;
}

static int ax_extract(struct ax_run *x, char digest_hex[65])
{
	if (ax_open(x) < 0)
		return -1;
	for (;;) {
		struct archive_entry *e;
		int r = archive_read_next_header(x->r, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_OK && r != ARCHIVE_WARN)
			return ax_read_fail(x, "bad entry header");
		if (ax_entry(x, e) < 0)
			return -1;
	}
	if (archive_write_close(x->w) < ARCHIVE_WARN)
		return ax_write_fail(x, "", "apply directory modes and times");
	if (x->outer && ax_drain_outer(x) < 0)
		return -1;
	if (ax_drain(&x->in, x->err) < 0)
		return -1;
	uint8_t md[SHA256_DIGEST_SIZE];
	sha256_digest(&x->in.md, sizeof(md), md);
	for (unsigned i = 0; i < 32; i++)
		snprintf(digest_hex + 2 * i, 3, "%02x", md[i]);
	return 0;
}

/* DEST made absolute with a symlink-free parent: the disk writer's SECURE_SYMLINKS
 * check walks the whole path, and the prefix must not move under us. */
static int ax_canonical_dest(const char *dest, char *out, size_t len, sl_err *err)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s", dest) >= (int)sizeof(tmp))
		return sl_fail(err, SL_INVALID, 0, "archive: destination path too long");
	size_t n = strlen(tmp);
	while (n > 1 && tmp[n - 1] == '/')
		tmp[--n] = '\0';
	char *slash = strrchr(tmp, '/');
	const char *base = slash ? slash + 1 : tmp;
	if (!base[0] || !strcmp(base, ".") || !strcmp(base, ".."))
		return sl_fail(err, SL_INVALID, 0, "archive: bad destination '%s'", dest);
	const char *parent = slash ? (slash == tmp ? "/" : tmp) : ".";
	if (slash)
		*slash = '\0';
	_cleanup_free_ char *canon = realpath(parent, NULL);
	if (!canon)
		return sl_sysfail(err, "archive: destination parent of %s", dest);
	if (snprintf(out, len, "%s/%s", strcmp(canon, "/") ? canon : "", base) >= (int)len)
		return sl_fail(err, SL_INVALID, 0, "archive: destination path too long");
	return 0;
}

/* LAYER: the input is a container layer's blob (decompressed once, its tar hashed into
 * TAR_HEX and counted in *TAR_BYTES); VERIFIED: its raw bytes are not hashed (DIGEST_HEX
 * is left as is). */
static int ax_extract_into(int in_fd, const char *dest_dir, const sl_archive_limits *lim,
			   bool layer, bool verified, char digest_hex[65], char tar_hex[65],
			   uint64_t *tar_bytes, uint64_t *file_bytes, sl_err *err)
{
	sl_archive_limits defaults;
	if (!lim) {
		archive_limits_default(&defaults);
		lim = &defaults;
	}
	char dest[PATH_MAX];
	if (ax_canonical_dest(dest_dir, dest, sizeof(dest), err) < 0)
		return -1;
	if (mkdir(dest, 0755) < 0)
		return sl_fail(err, errno == EEXIST ? SL_CONFLICT : SL_INTERNAL, errno,
			       "archive: create destination %s", dest);
	struct ax_run x = {.dest = dest, .dest_fd = -1, .lim = lim, .in.fd = in_fd,
			   .in.no_hash = verified, .err = err};
	char ignored[65];
	int rc = -1;
	if (layer && !(x.outer = archive_read_new()))
		sl_fail(err, SL_EXHAUSTED, ENOMEM, "archive: set up extraction");
	else if (chmod(dest, 0755) < 0)
		sl_sysfail(err, "archive: chmod %s", dest);
	else if ((x.dest_fd = open(dest, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		sl_sysfail(err, "archive: open %s", dest);
	else
		rc = ax_extract(&x, verified ? ignored : digest_hex);
	ax_run_release(&x);
	if (rc == 0) {
		if (file_bytes)
			*file_bytes = x.total;
		if (layer) {
			ax_hex(&x.tar_md, tar_hex);
			*tar_bytes = x.tar_bytes;
		}
		return 0;
	}
	sl_err rm_err;
	if (fs_remove_tree(dest, &rm_err) < 0)
		sl_log(SL_LOG_ERROR, "archive: cleaning up after a failed extraction: %s",
		       rm_err.msg);
	return -1;
}

int archive_extract_counted(int in_fd, const char *dest_dir, const sl_archive_limits *lim,
			    char digest_hex[65], uint64_t *file_bytes, sl_err *err)
{
	return ax_extract_into(in_fd, dest_dir, lim, false, false, digest_hex, NULL, NULL,
			       file_bytes, err);
}

int archive_extract_safe(int in_fd, const char *dest_dir, const sl_archive_limits *lim,
			 char digest_hex[65], sl_err *err)
{
	return archive_extract_counted(in_fd, dest_dir, lim, digest_hex, NULL, err);
}

int archive_extract_layer(int in_fd, const char *dest_dir, const sl_archive_limits *lim,
			  bool blob_verified, char blob_hex[65], char tar_hex[65],
			  uint64_t *tar_bytes, uint64_t *file_bytes, sl_err *err)
{
	return ax_extract_into(in_fd, dest_dir, lim, true, blob_verified, blob_hex, tar_hex,
			       tar_bytes, file_bytes, err);
}

int archive_blob_digests(int in_fd, char blob_hex[65], char tar_hex[65], uint64_t *tar_bytes,
			 sl_err *err)
{
	struct ax_run x = {.dest_fd = -1, .in.fd = in_fd, .err = err};
	struct sha256_ctx tar_md;
	sha256_init(&tar_md);
	sha256_init(&x.in.md);
	uint64_t total = 0;
	int rc = -1;
	x.in.buf = malloc(AX_READ_BUF);
	x.r = archive_read_new();
	if (!x.in.buf || !x.r) {
		sl_fail(err, SL_EXHAUSTED, ENOMEM, "archive: set up a blob's check");
		goto out;
	}
	/* The raw format: the decompressed stream as one entry, whatever it holds. */
	archive_read_support_format_raw(x.r);
	archive_read_support_filter_none(x.r);
	archive_read_support_filter_gzip(x.r);
	archive_read_support_filter_zstd(x.r);
	archive_read_support_filter_xz(x.r);
	struct archive_entry *e;
	if (archive_read_open(x.r, &x.in, NULL, ax_read_cb, NULL) != ARCHIVE_OK ||
	    archive_read_next_header(x.r, &e) != ARCHIVE_OK) {
		ax_read_fail(&x, "cannot read the blob");
		goto out;
	}
	for (;;) {
		const void *buf;
		size_t size;
		la_int64_t off;
		int r = archive_read_data_block(x.r, &buf, &size, &off);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			ax_read_fail(&x, "bad compressed data");
			goto out;
		}
		sha256_update(&tar_md, size, buf);
		total += size;
	}
	if (ax_drain(&x.in, err) < 0)
		goto out;
	ax_hex(&x.in.md, blob_hex);
	ax_hex(&tar_md, tar_hex);
	*tar_bytes = total;
	rc = 0;
out:
	ax_run_release(&x);
	return rc;
}
