/* archive_write.c — tar.zst writer over libarchive's disk reader: it walks without
 * following symlinks and keeps hardlinks, modes, mtimes; only owners are rewritten. */
#include "archive_write.h"

#include <stdbool.h>

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

static void canon(struct archive_entry *e, uint32_t base)
{
	int64_t u = archive_entry_uid(e), g = archive_entry_gid(e);
	if (base && u >= base && u < (int64_t)base + 65536)
		archive_entry_set_uid(e, u - base);
	if (base && g >= base && g < (int64_t)base + 65536)
		archive_entry_set_gid(e, g - base);
	/* Numeric owners only: host names mean nothing on another host. */
	archive_entry_set_uname(e, NULL);
	archive_entry_set_gname(e, NULL);
}

/* A disk walker (symlinks as links, no xattrs, ACLs, flags or other mounts) over
 * OPEN_PATH and a pax writer (ZSTD: zstd-compressed, unpadded) onto OUT_FD: 0, or -1
 * with ERR (what was made is the caller's to free, NULL or not). */
static int walk_open(int out_fd, const char *open_path, bool zstd, struct archive **disk,
		     struct archive **w, sl_err *err)
{
	*disk = archive_read_disk_new();
	*w = archive_write_new();
	if (!*disk || !*w)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "archive: set up writer");
	archive_read_disk_set_symlink_physical(*disk);
	archive_read_disk_set_behavior(*disk, ARCHIVE_READDISK_NO_XATTR |
						      ARCHIVE_READDISK_NO_ACL |
						      ARCHIVE_READDISK_NO_FFLAGS |
						      ARCHIVE_READDISK_NO_TRAVERSE_MOUNTS);
	archive_write_set_format_pax_restricted(*w);
	if (zstd) {
		archive_write_add_filter_zstd(*w);
		/* No block padding: zeros after a zstd frame are garbage to every reader. */
		archive_write_set_bytes_in_last_block(*w, 1);
	}
	if (archive_write_open_fd(*w, out_fd) != ARCHIVE_OK ||
	    archive_read_disk_open(*disk, open_path) != ARCHIVE_OK)
		return sl_fail(err, SL_INTERNAL, 0, "archive: open: %s",
			       archive_error_string(*w) ? archive_error_string(*w)
							: archive_error_string(*disk));
	return 0;
}

/* E's header as NAME, then (a regular file) its bytes from the walk. A short write (a
 * full disk) or read is an error, not a truncated entry. */
static int entry_copy(struct archive *disk, struct archive *w, struct archive_entry *e,
		      const char *name, sl_err *err)
{
	if (archive_write_header(w, e) < ARCHIVE_WARN)
		return sl_fail(err, SL_INTERNAL, 0, "archive: write %s: %s", name,
			       archive_error_string(w));
	if (archive_entry_filetype(e) != AE_IFREG || archive_entry_size(e) <= 0)
		return 0;
	char buf[65536];
	ssize_t n;
	while ((n = archive_read_data(disk, buf, sizeof(buf))) > 0)
		if (archive_write_data(w, buf, (size_t)n) < 0)
			return sl_fail(err, SL_INTERNAL, archive_errno(w), "archive: write %s: %s",
				       name, archive_error_string(w));
	if (n < 0)
		return sl_fail(err, SL_INTERNAL, archive_errno(disk), "archive: read %s: %s", name,
			       archive_error_string(disk));
	return 0;
}

/* Close W (its last block written: a full disk shows here too) and free both. */
static int walk_close(struct archive *disk, struct archive *w, int rc, sl_err *err)
{
	if (rc == 0 && archive_write_close(w) != ARCHIVE_OK)
		rc = sl_fail(err, SL_INTERNAL, 0, "archive: finish: %s", archive_error_string(w));
	if (disk)
		archive_read_free(disk);
	if (w)
		archive_write_free(w);
	return rc;
}

int archive_write_tree(int out_fd, const char *root, uint32_t uid_base, sl_err *err)
{
	struct archive *disk, *w;
	/* The caller chdir()s into ROOT: entries are relative ("./..."). */
	(void)root;
	int rc = walk_open(out_fd, ".", true, &disk, &w, err);
	while (rc == 0) {
		struct archive_entry *e = archive_entry_new();
		int r = archive_read_next_header2(disk, e);
		if (r == ARCHIVE_EOF) {
			archive_entry_free(e);
			break;
		}
		if (r < ARCHIVE_WARN) {
			rc = sl_fail(err, SL_INTERNAL, 0, "archive: walk: %s",
				     archive_error_string(disk));
		} else {
			archive_read_disk_descend(disk);
			canon(e, uid_base);
			rc = entry_copy(disk, w, e, archive_entry_pathname(e), err);
		}
		archive_entry_free(e);
	}
	return walk_close(disk, w, rc, err);
}

static bool skipped(const char *rel, const char *const *skip)
{
	for (size_t i = 0; skip && skip[i]; i++)
		if (!strcmp(rel, skip[i]))
			return true;
	return false;
}

/* An empty regular file entry NAME (a whiteout), owned by 0:0, mode 0. */
static int write_marker(struct archive *w, const char *name, sl_err *err)
{
	struct archive_entry *m = archive_entry_new();
	archive_entry_set_pathname(m, name);
	archive_entry_set_filetype(m, AE_IFREG);
	archive_entry_set_perm(m, 0);
	archive_entry_set_size(m, 0);
	int r = archive_write_header(w, m);
	archive_entry_free(m);
	if (r < ARCHIVE_WARN)
		return sl_fail(err, SL_INTERNAL, 0, "archive: write %s: %s", name,
			       archive_error_string(w));
	return 0;
}

int archive_write_layer(int out_fd, const char *root, uint32_t uid_base,
			const char *const *skip, sl_err *err)
{
	struct archive *disk, *w;
	int rc = walk_open(out_fd, root, false, &disk, &w, err);
	size_t rootlen = strlen(root);
	while (rc == 0) {
		struct archive_entry *e = archive_entry_new();
		int r = archive_read_next_header2(disk, e);
		if (r == ARCHIVE_EOF) {
			archive_entry_free(e);
			break;
		}
		if (r < ARCHIVE_WARN) {
			rc = sl_fail(err, SL_INTERNAL, 0, "archive: walk: %s",
				     archive_error_string(disk));
			archive_entry_free(e);
			break;
		}
		const char *src = archive_entry_sourcepath(e);
		const char *rel = src && !strncmp(src, root, rootlen) ? src + rootlen : NULL;
		while (rel && *rel == '/')
			rel++;
		bool top = !rel || !*rel;
		if (top || skipped(rel, skip)) {
			if (top) /* the upper itself is no entry; a skipped path is not walked */
				archive_read_disk_descend(disk);
			archive_entry_free(e);
			continue;
		}
		archive_read_disk_descend(disk);
		char name[4096];
		snprintf(name, sizeof(name), "%s", rel);
		if (archive_entry_filetype(e) == AE_IFCHR && archive_entry_rdev(e) == 0) {
			/* overlayfs' whiteout: the OCI form, in the same directory */
			char *slash = strrchr(name, '/');
			char wh[4096 + 8];
			if (slash)
				snprintf(wh, sizeof(wh), "%.*s/.wh.%s", (int)(slash - name), name,
					 slash + 1);
			else
				snprintf(wh, sizeof(wh), ".wh.%s", name);
			archive_entry_free(e);
			rc = write_marker(w, wh, err);
			continue;
		}
		archive_entry_set_pathname(e, name);
		canon(e, uid_base);
		rc = entry_copy(disk, w, e, name, err);
		if (rc == 0 && archive_entry_filetype(e) == AE_IFDIR) {
			char v[4];
			ssize_t n = lgetxattr(src, "trusted.overlay.opaque", v, sizeof(v));
			char opq[4096 + 16];
			snprintf(opq, sizeof(opq), "%s/.wh..wh..opq", name);
			if (n == 1 && v[0] == 'y')
				rc = write_marker(w, opq, err);
		}
		archive_entry_free(e);
	}
	return walk_close(disk, w, rc, err);
}
