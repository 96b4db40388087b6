/* layers.c — merging an image's layers into the tree sandboxes mount: hardlinks from the
 * extracted layers, whiteouts applied, no symlink ever followed. See docs/images.md. */
#include "layers.h"

#include "cleanup.h"
#include "fsutil.h"
#include "oci.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define LY_MAX_DEPTH 256 /* directories deep; one fd each while walking */

struct ly_walk {
	const char *label;
	sl_err *err;
	char path[PATH_MAX]; /* the directory being merged, for messages ("" = root) */
};

/* Remove NAME in DIR_FD, whatever it is, never following it. */
static int ly_remove(struct ly_walk *w, int dir_fd, const char *name)
{
	char p[64 + NAME_MAX];
	snprintf(p, sizeof(p), "/proc/self/fd/%d/%s", dir_fd, name);
	if (fs_remove_tree(p, w->err) < 0)
		return sl_wrap(w->err, "%s: remove /%s%s%s", w->label, w->path, w->path[0] ? "/" : "",
			       name);
	return 0;
}

/* A stream of DIR_FD's entries on an fd of its own (DIR_FD stays open), or NULL with
 * W's error set. */
static DIR *ly_opendir(struct ly_walk *w, int dir_fd)
{
	int dup_fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dup_fd < 0) {
		sl_sysfail(w->err, "%s: open /%s", w->label, w->path);
		return NULL;
	}
	DIR *d = fdopendir(dup_fd);
	if (!d) {
		sl_sysfail(w->err, "%s: read /%s", w->label, w->path);
		close(dup_fd);
	}
	return d;
}

/* Every entry of DIR_FD (the lower layers' contents of an opaque directory). */
static int ly_clear(struct ly_walk *w, int dir_fd)
{
	_cleanup_closedir_ DIR *d = ly_opendir(w, dir_fd);
	if (!d)
		return -1;
	struct dirent *de;
	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (ly_remove(w, dir_fd, de->d_name) < 0)
			return -1;
	}
	return errno ? sl_sysfail(w->err, "%s: read /%s", w->label, w->path) : 0;
}

static int ly_meta(struct ly_walk *w, int fd, const struct stat *st)
{
	struct timespec ts[2] = {st->st_atim, st->st_mtim};
	/* chown first: it clears set-id bits, which the chmod puts back. */
	if (fchown(fd, st->st_uid, st->st_gid) < 0 || fchmod(fd, st->st_mode & 07777) < 0 ||
	    futimens(fd, ts) < 0)
		return sl_sysfail(w->err, "%s: set owner, mode and times of /%s", w->label, w->path);
	return 0;
}

static int ly_dir(struct ly_walk *w, int flat_fd, int layer_fd, int depth);

/* Pass one over a layer's directory: its whiteouts, which act on the layers below only. */
static int ly_whiteouts(struct ly_walk *w, int flat_fd, DIR *d)
{
	struct dirent *de;
	rewinddir(d);
	while ((errno = 0, de = readdir(d))) {
		const char *target = NULL;
		switch (oci_whiteout_kind(de->d_name, &target)) {
		case OCI_WH_NONE:
		case OCI_WH_META:
			break;
		case OCI_WH_INVALID:
			return sl_fail(w->err, SL_INVALID, 0,
				       "%s: whiteout '/%s%s%s' names '%s', which is not a file "
				       "of the directory",
				       w->label, w->path, w->path[0] ? "/" : "", de->d_name,
				       de->d_name + 4);
		case OCI_WH_OPAQUE:
			if (ly_clear(w, flat_fd) < 0)
				return -1;
			break;
		case OCI_WH_FILE:
			if (ly_remove(w, flat_fd, target) < 0)
				return -1;
			break;
		}
	}
	return errno ? sl_sysfail(w->err, "%s: read /%s", w->label, w->path) : 0;
}

/* One entry of the layer (not a whiteout) onto the image tree. */
static int ly_entry(struct ly_walk *w, int flat_fd, int layer_fd, const char *name, int depth)
{
	struct stat ls, fs;
	if (fstatat(layer_fd, name, &ls, AT_SYMLINK_NOFOLLOW) < 0)
		return sl_sysfail(w->err, "%s: stat /%s/%s", w->label, w->path, name);
	bool have = fstatat(flat_fd, name, &fs, AT_SYMLINK_NOFOLLOW) == 0;
	if (!have && errno != ENOENT)
		return sl_sysfail(w->err, "%s: stat /%s/%s in the image", w->label, w->path, name);
	if (have && (!S_ISDIR(ls.st_mode) || !S_ISDIR(fs.st_mode))) {
		if (ly_remove(w, flat_fd, name) < 0)
			return -1;
		have = false;
	}
	if (!S_ISDIR(ls.st_mode)) {
		if (linkat(layer_fd, name, flat_fd, name, 0) < 0)
			return sl_fail(w->err, errno == EMLINK ? SL_EXHAUSTED : SL_INTERNAL, errno,
				       "%s: link /%s%s%s into the image", w->label, w->path,
				       w->path[0] ? "/" : "", name);
		return 0;
	}
	if (!have && mkdirat(flat_fd, name, 0700) < 0)
		return sl_sysfail(w->err, "%s: create /%s/%s", w->label, w->path, name);
	_cleanup_close_ int sub_layer =
	    openat(layer_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int sub_flat =
	    openat(flat_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub_layer < 0 || sub_flat < 0)
		return sl_sysfail(w->err, "%s: open /%s/%s", w->label, w->path, name);
	size_t len = strlen(w->path);
	if (len + strlen(name) + 2 >= sizeof(w->path))
		return sl_fail(w->err, SL_INVALID, 0, "%s: path too long under /%s", w->label,
			       w->path);
	snprintf(w->path + len, sizeof(w->path) - len, "%s%s", len ? "/" : "", name);
	int r = ly_dir(w, sub_flat, sub_layer, depth + 1);
	if (r == 0)
		r = ly_meta(w, sub_flat, &ls);
	w->path[len] = '\0';
	return r;
}

static int ly_dir(struct ly_walk *w, int flat_fd, int layer_fd, int depth)
{
	if (depth > LY_MAX_DEPTH)
		return sl_fail(w->err, SL_INVALID, 0, "%s: directories nest deeper than %d at /%s",
			       w->label, LY_MAX_DEPTH, w->path);
	_cleanup_closedir_ DIR *d = ly_opendir(w, layer_fd);
	if (!d)
		return -1;
	if (ly_whiteouts(w, flat_fd, d) < 0)
		return -1;
	rewinddir(d);
	struct dirent *de;
	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    oci_whiteout_kind(de->d_name, NULL) != OCI_WH_NONE)
			continue;
		if (ly_entry(w, flat_fd, layer_fd, de->d_name, depth) < 0)
			return -1;
	}
	return errno ? sl_sysfail(w->err, "%s: read /%s", w->label, w->path) : 0;
}

int layers_apply(int flat_fd, int layer_fd, const char *label, sl_err *err)
{
	struct ly_walk w = {.label = label, .err = err};
	if (ly_dir(&w, flat_fd, layer_fd, 0) < 0)
		return -1;
	struct stat st;
	if (fstat(layer_fd, &st) < 0)
		return sl_sysfail(err, "%s: stat its root", label);
	return ly_meta(&w, flat_fd, &st);
}
