/* image.c — the image store: an import extracts into a private temp dir, then moves it
 * into place by digest and records the name, under a store-wide flock. */
#include "image_internal.h"

#include "archive_extract.h"
#include "crash.h"
#include "cleanup.h"
#include "fsutil.h"
#include "log.h"
#include "state.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>

#define IMG_JSON_MAX  (64 * 1024)
#define IMG_META_PATH "etc/sandlot/image.json"

int img_path(char *buf, size_t len, sl_err *err,
							  const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len)
		return sl_fail(err, SL_INVALID, ENAMETOOLONG, "image store path under %s",
			       buf[0] ? buf : "state dir");
	return 0;
}

int image_name_check(const char *name, sl_err *err)
{
	size_t n = name ? strlen(name) : 0;
	bool ok = n >= 1 && n <= IMAGE_NAME_MAX &&
		  ((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9'));
	for (size_t i = 1; ok && i < n; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9');
		/* A pulled reference ("localhost:5000/team/app:1.0", "app@sha256:..."): every
		 * path component starts with a letter or digit, so none is "", "." or "..". */
		ok = alnum || c == '.' || c == '_' || c == '-' || c == ':' || c == '@' ||
		     (c == '/' && i + 1 < n &&
		      ((name[i + 1] >= 'a' && name[i + 1] <= 'z') ||
		       (name[i + 1] >= '0' && name[i + 1] <= '9')));
	}
	if (ok && !strncmp(name, "sha256:", 7))
		return sl_fail(err, SL_INVALID, 0,
			       "image name '%.80s' is invalid: a digest names an image, it is not "
			       "a name", name);
	if (!ok)
		return sl_fail(
		    err, SL_INVALID, 0,
		    "image name '%.80s' is invalid: use 1-%d characters from a-z A-Z 0-9 . _ - : "
		    "@ /, starting with a lowercase letter or digit, each /-separated part too",
		    name ? name : "", IMAGE_NAME_MAX);
	return 0;
}

/* <state>/images/names/<name>.json, a '/' of a pulled reference stored as '+' (which no
 * name has), so every record is one file of names/. */
int img_record_path(const char *state_dir, const char *name, char *buf, size_t len,
		    sl_err *err)
{
	char file[IMAGE_NAME_MAX + 1];
	snprintf(file, sizeof(file), "%s", name);
	for (char *c = file; *c; c++)
		if (*c == '/')
			*c = '+';
	return img_path(buf, len, err, "%s/images/names/%s.json", state_dir, file);
}

/* A user as `useradd` or docker's USER would take it: name, uid, or user:group. */
bool img_user_ok(const char *u)
{
	size_t n = strlen(u);
	if (n == 0 || n >= sizeof(((sl_image *)0)->user))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((u[i] >= 'a' && u[i] <= 'z') || (u[i] >= 'A' && u[i] <= 'Z') ||
		      (u[i] >= '0' && u[i] <= '9') || strchr("._-:@+", u[i])))
			return false;
	return true;
}

bool img_workdir_ok(const char *w)
{
	size_t n = strlen(w);
	if (w[0] != '/' || n >= sizeof(((sl_image *)0)->workdir))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)w[i] < 0x20 || w[i] == 0x7f)
			return false;
	return true;
}

/* The 64 hex digits of "sha256:<hex>" or "<hex>", or NULL. */
static const char *img_digest_hex(const char *d)
{
	if (!strncmp(d, "sha256:", 7))
		d += 7;
	if (strlen(d) != 64)
		return NULL;
	for (const char *c = d; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
			return NULL;
	return d;
}

int image_layer_path(const char *state_dir, const char *digest, char *buf, size_t len)
{
	const char *hex = img_digest_hex(digest);
	if (!hex) {
		errno = EINVAL;
		return -1;
	}
	int n = snprintf(buf, len, "%s/images/layers/%s", state_dir, hex);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int img_lock(const char *state_dir, sl_err *err)
{
	char p[PATH_MAX];
	if (img_path(p, sizeof(p), err, "%s/images/.lock", state_dir) < 0)
		return -1;
	return state_lock(p, err);
}

/* A private scratch path under images/tmp, claimed by a flocked "<path>.lock" that
 * exists before the path does and is unlinked only after it is gone: a tree there
 * whose lock is missing or free belongs to a process that died, and img_gc_tmp
 * deletes it. */
void img_scratch_release(struct img_scratch *s)
{
	if (s->fd < 0)
		return;
	unlink(s->lock);
	close(s->fd);
	s->fd = -1;
}
int img_scratch_claim(const char *state_dir, const char *prefix, struct img_scratch *s,
			     sl_err *err)
{
	unsigned char r[8];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return sl_sysfail(err, "image store: random name");
	if (img_path(s->path, sizeof(s->path), err,
		     "%s/images/tmp/%s%02x%02x%02x%02x%02x%02x%02x%02x", state_dir, prefix, r[0],
		     r[1], r[2], r[3], r[4], r[5], r[6], r[7]) < 0)
		return -1;
	snprintf(s->lock, sizeof(s->lock), "%s.lock", s->path);
	int fd = open(s->lock, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sl_sysfail(err, "image store: create %s", s->lock);
	while (flock(fd, LOCK_EX) < 0) { /* waits only while a GC pass peeks at it */
		if (errno != EINTR) {
			unlink(s->lock);
			close(fd);
			return sl_sysfail(err, "image store: lock %s", s->lock);
		}
	}
	s->fd = fd;
	return 0;
}

/* What crashed imports and removals left in images/tmp: how many trees, deleted when
 * REMOVE (best effort). */
int image_scratch_collect(const char *state_dir, bool remove)
{
	int n = 0;
	char dir[PATH_MAX];
	if (img_path(dir, sizeof(dir), NULL, "%s/images/tmp", state_dir) < 0)
		return 0;
	_cleanup_closedir_ DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		bool is_lock = len > 5 && !strcmp(de->d_name + len - 5, ".lock");
		if (de->d_name[0] == '.')
			continue;
		char path[PATH_MAX], lock[PATH_MAX];
		if (img_path(path, sizeof(path), NULL, "%s/%.*s", dir,
			     (int)(is_lock ? len - 5 : len), de->d_name) < 0 ||
		    img_path(lock, sizeof(lock), NULL, "%s.lock", path) < 0)
			continue;
		_cleanup_close_ int fd = open(lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue; /* its claimant is alive */
		struct stat st;
		if (is_lock) {
			/* A lock without its tree: stale unless just created and not yet
			 * flocked by a claimant (a window of microseconds). */
			if (remove && fd >= 0 && lstat(path, &st) < 0 && errno == ENOENT &&
			    fstat(fd, &st) == 0 && st.st_ctime < time(NULL) - 60)
				unlink(lock);
			continue;
		}
		n++;
		if (!remove)
			continue;
		sl_err e;
		sl_log(SL_LOG_INFO, "image store: removing %s, left by an interrupted import",
		       path);
		if (fs_remove_tree(path, &e) < 0)
			sl_log(SL_LOG_WARN, "image store: %s", e.msg);
		else if (fd >= 0)
			unlink(lock);
	}
	return n;
}

/* Layers keep the owners and set-id bits of the archive they came from (a sandbox sees
 * them through an id-mapped nosuid mount): on the host they are root's alone, in
 * directories no other user can enter, on a mount that honours neither set-id bits nor
 * device nodes (image_store_secure). */
int img_prepare(const char *state_dir, sl_err *err)
{
	static const char *const dirs[] = {"images",	  "images/layers", "images/names",
					   "images/tmp",  "images/diffs",  "images/meta",
					   "images/blobs", "images/blobs/sha256"};
	if (state_private_dir(state_dir, 0700, err) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char p[PATH_MAX];
		if (img_path(p, sizeof(p), err, "%s/%s", state_dir, dirs[i]) < 0 ||
		    state_private_dir(p, 0700, err) < 0)
			return sl_wrap(err, "image store");
	}
	return image_store_secure(state_dir, err);
}

/* <state>/images bound on itself nosuid,nodev: a second wall behind its mode, so a set-id
 * file of an imported layer is never honoured on the host even if the tree were reached.
 * A mount lasts until reboot; every context open makes it again when it is missing. A
 * non-root caller's store cannot hold root's set-id files (it cannot chown to 0), and it
 * could not mount: nothing to do. */
int image_store_secure(const char *state_dir, sl_err *err)
{
	const unsigned long want = ST_NOSUID | ST_NODEV;
	char p[PATH_MAX];
	struct statvfs sv;
	if (img_path(p, sizeof(p), err, "%s/images", state_dir) < 0)
		return -1;
	if (statvfs(p, &sv) < 0)
		return errno == ENOENT ? 0 : sl_sysfail(err, "image store: stat %s", p);
	if ((sv.f_flag & want) == want || geteuid() != 0)
		return 0;
	_cleanup_close_ int lk = img_lock(state_dir, err);
	if (lk < 0)
		return -1;
	if (statvfs(p, &sv) == 0 && (sv.f_flag & want) == want)
		return 0; /* another process made it while we waited */
	if (mount(p, p, NULL, MS_BIND, NULL) < 0)
		return sl_sysfail(err, "image store: bind %s on itself", p);
	if (mount(NULL, p, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV, NULL) < 0) {
		int e = errno;
		umount2(p, MNT_DETACH);
		return sl_fail(err, SL_INTERNAL, e, "image store: make %s nosuid,nodev", p);
	}
	return 0;
}

/* Read the image's own metadata from the (hostile) extracted tree: resolved inside the
 * tree, so a symlink to /etc/... reads the tree's file, never the host's. */
static int img_read_meta_file(const char *root, char **text, sl_err *err)
{
	*text = NULL;
	_cleanup_close_ int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return sl_sysfail(err, "open %s", root);
	struct open_how how = {
	    .flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC,
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, rfd, IMG_META_PATH, &how, sizeof(how));
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
		return 0;
	if (fd < 0)
		return sl_fail(err, SL_INVALID, errno, "image metadata %s", IMG_META_PATH);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return sl_sysfail(err, "image metadata %s: stat", IMG_META_PATH);
	if (!S_ISREG(st.st_mode) || st.st_size > IMG_JSON_MAX)
		return sl_fail(err, SL_INVALID, 0,
			       "image metadata %s must be a regular file of at most %d bytes",
			       IMG_META_PATH, IMG_JSON_MAX);
	_cleanup_free_ char *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "image metadata %s", IMG_META_PATH);
	size_t off = 0;
	while (off < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + off, (size_t)st.st_size - off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sl_sysfail(err, "image metadata %s: read", IMG_META_PATH);
		if (r == 0)
			break;
		off += (size_t)r;
	}
	buf[off] = '\0';
	*text = steal_ptr(&buf);
	return 0;
}

/* Fill IMG's user and workdir: the caller's flags, else the image's metadata file, else
 * root and /. */
static int img_resolve_meta(const char *root, const char *user, const char *workdir, sl_image *img,
			    sl_err *err)
{
	snprintf(img->user, sizeof(img->user), "%s", user ? user : "root");
	snprintf(img->workdir, sizeof(img->workdir), "%s", workdir ? workdir : "/");
	if (user && workdir)
		return 0;
	_cleanup_free_ char *text = NULL;
	if (img_read_meta_file(root, &text, err) < 0)
		return -1;
	if (!text)
		return 0;
	cJSON *o = cJSON_Parse(text);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return sl_fail(err, SL_INVALID, 0,
			       "image metadata %s is not a JSON object "
			       "({\"user\": \"...\", \"workingDirectory\": \"/...\"})",
			       IMG_META_PATH);
	}
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "user");
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "workingDirectory");
	int rc = 0;
	if (u && (!cJSON_IsString(u) || !img_user_ok(u->valuestring)))
		rc = sl_fail(err, SL_INVALID, 0,
			     "image metadata %s: \"user\" must be a user name, uid or user:group "
			     "of at most 63 characters",
			     IMG_META_PATH);
	else if (w && (!cJSON_IsString(w) || !img_workdir_ok(w->valuestring)))
		rc = sl_fail(err, SL_INVALID, 0,
			     "image metadata %s: \"workingDirectory\" must be an absolute path "
			     "shorter than 256 bytes",
			     IMG_META_PATH);
	if (rc == 0 && u && !user)
		snprintf(img->user, sizeof(img->user), "%s", u->valuestring);
	if (rc == 0 && w && !workdir)
		snprintf(img->workdir, sizeof(img->workdir), "%s", w->valuestring);
	cJSON_Delete(o);
	return rc;
}

char *img_record_json(const sl_image *img)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "name", img->name);
	cJSON_AddStringToObject(o, "digest", img->digest);
	cJSON_AddStringToObject(o, "user", img->user);
	cJSON_AddStringToObject(o, "workdir", img->workdir);
	cJSON_AddNumberToObject(o, "size", (double)img->size_bytes);
	cJSON_AddNumberToObject(o, "created", (double)img->created);
	cJSON_AddStringToObject(o, "owner", img->owner);
	if (img->format[0] && strcmp(img->format, "tar")) {
		cJSON_AddStringToObject(o, "format", img->format);
		cJSON_AddStringToObject(o, "platform", img->platform);
		cJSON_AddNumberToObject(o, "layers", img->nlayers);
	}
	char *s = cJSON_Print(o);
	cJSON_Delete(o);
	return s;
}

static bool img_copy_field(const cJSON *o, const char *key, char *dst, size_t len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsString(v) || strlen(v->valuestring) >= len)
		return false;
	memcpy(dst, v->valuestring, strlen(v->valuestring) + 1);
	return true;
}

static int img_record_parse(const char *text, const char *path, sl_image *out, sl_err *err)
{
	cJSON *o = cJSON_Parse(text);
	sl_image img = {0};
	const cJSON *size = cJSON_GetObjectItemCaseSensitive(o, "size");
	const cJSON *created = cJSON_GetObjectItemCaseSensitive(o, "created");
	bool ok = cJSON_IsObject(o) && img_copy_field(o, "name", img.name, sizeof(img.name)) &&
		  img_copy_field(o, "digest", img.digest, sizeof(img.digest)) &&
		  img_copy_field(o, "user", img.user, sizeof(img.user)) &&
		  img_copy_field(o, "workdir", img.workdir, sizeof(img.workdir)) &&
		  cJSON_IsNumber(size) && size->valuedouble >= 0 && cJSON_IsNumber(created) &&
		  img_digest_hex(img.digest) && !strncmp(img.digest, "sha256:", 7);
	if (ok) {
		img.size_bytes = (uint64_t)size->valuedouble;
		img.created = (int64_t)created->valuedouble;
		/* Absent (made before keys): the admin's. */
		if (!img_copy_field(o, "owner", img.owner, sizeof(img.owner)))
			img.owner[0] = '\0';
		/* Absent: a tarball's record (the only kind before container imports). */
		const cJSON *nl = cJSON_GetObjectItemCaseSensitive(o, "layers");
		if (!img_copy_field(o, "format", img.format, sizeof(img.format)))
			snprintf(img.format, sizeof(img.format), "tar");
		if (!img_copy_field(o, "platform", img.platform, sizeof(img.platform)))
			img.platform[0] = '\0';
		img.nlayers = cJSON_IsNumber(nl) && nl->valuedouble >= 1 && nl->valuedouble <= 1000
				      ? (uint32_t)nl->valuedouble
				      : 1;
	}
	cJSON_Delete(o);
	if (!ok)
		return sl_fail(err, SL_INTERNAL, 0,
			       "image record %s is corrupt; remove it and import the image again",
			       path);
	*out = img;
	return 0;
}

int img_load(const char *state_dir, const char *name, sl_image *out, sl_err *err)
{
	char p[PATH_MAX];
	if (img_record_path(state_dir, name, p, sizeof(p), err) < 0)
		return -1;
	_cleanup_free_ char *text = NULL;
	if (state_read_file(p, IMG_JSON_MAX, &text, NULL, err) < 0)
		return -1;
	if (img_record_parse(text, p, out, err) < 0)
		return -1;
	if (strcmp(out->name, name))
		return sl_fail(err, SL_INTERNAL, 0, "image record %s names '%s'", p, out->name);
	return 0;
}

static int img_cmp_name(const void *a, const void *b)
{
	return strcmp(((const sl_image *)a)->name, ((const sl_image *)b)->name);
}

/* May the thread's key use IMG (create from it): its own, and the admin's. */
static bool img_usable(const sl_image *img)
{
	return !img->owner[0] || owner_sees(img->owner);
}

/* May the thread's key replace or remove the image OWNER holds: the admin any, a key
 * its own. */
bool img_mine(const char *owner)
{
	return !owner_acting()[0] || !strcmp(owner, owner_acting());
}

static int img_list(const char *state_dir, bool everyones, sl_image **out, size_t *n,
		    sl_err *err);

/* Each listed image's shared_bytes: its layers that another listed name holds too (a
 * tarball's one layer is its digest). */
static void img_count_shared(const char *state_dir, sl_image *v, size_t n)
{
	cJSON **layers = calloc(n ? n : 1, sizeof(*layers));
	if (!layers)
		return;
	for (size_t i = 0; i < n; i++) {
		layers[i] = img_meta_layers(state_dir, &v[i]);
		if (!layers[i]) {
			layers[i] = cJSON_CreateArray();
			cJSON *l = cJSON_CreateObject();
			cJSON_AddStringToObject(l, "digest", v[i].digest);
			cJSON_AddNumberToObject(l, "size", (double)v[i].size_bytes);
			cJSON_AddItemToArray(layers[i], l);
		}
	}
	for (size_t i = 0; i < n; i++) {
		v[i].shared_bytes = 0;
		const cJSON *l;
		cJSON_ArrayForEach(l, layers[i])
		{
			const cJSON *d = cJSON_GetObjectItemCaseSensitive(l, "digest");
			const cJSON *sz = cJSON_GetObjectItemCaseSensitive(l, "size");
			if (!cJSON_IsString(d) || !cJSON_IsNumber(sz))
				continue;
			bool shared = false;
			for (size_t j = 0; j < n && !shared; j++) {
				const cJSON *m;
				cJSON_ArrayForEach(m, layers[j])
				{
					const cJSON *e = cJSON_GetObjectItemCaseSensitive(m, "digest");
					if (j != i && cJSON_IsString(e) &&
					    !strcmp(e->valuestring, d->valuestring))
						shared = true;
				}
			}
			if (shared)
				v[i].shared_bytes += (uint64_t)sz->valuedouble;
		}
	}
	for (size_t i = 0; i < n; i++)
		cJSON_Delete(layers[i]);
	free(layers);
	for (size_t i = 0; i < n; i++)
		if (v[i].shared_bytes > v[i].size_bytes)
			v[i].shared_bytes = v[i].size_bytes;
}

int image_list(const char *state_dir, sl_image **out, size_t *n, sl_err *err)
{
	if (img_list(state_dir, false, out, n, err) < 0)
		return -1;
	img_count_shared(state_dir, *out, *n);
	return 0;
}

static int img_list(const char *state_dir, bool everyones, sl_image **out, size_t *n,
		    sl_err *err)
{
	*out = NULL;
	*n = 0;
	char dir[PATH_MAX];
	if (img_path(dir, sizeof(dir), err, "%s/images/names", state_dir) < 0)
		return -1;
	_cleanup_closedir_ DIR *d = opendir(dir);
	if (!d && errno == ENOENT)
		return 0;
	if (!d)
		return sl_sysfail(err, "image store: open %s", dir);
	_cleanup_free_ sl_image *v = NULL;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	while ((errno = 0, de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (de->d_name[0] == '.' || len <= 5 || strcmp(de->d_name + len - 5, ".json"))
			continue;
		char name[IMAGE_NAME_MAX + 8];
		snprintf(name, sizeof(name), "%.*s", (int)(len - 5), de->d_name);
		for (char *c = name; *c; c++)
			if (*c == '+')
				*c = '/';
		if (image_name_check(name, NULL) < 0)
			continue;
		if (cnt == cap) {
			cap = cap ? cap * 2 : 16;
			sl_image *nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				return sl_fail(err, SL_EXHAUSTED, ENOMEM, "image store: list");
			v = nv;
		}
		sl_err e;
		if (img_load(state_dir, name, &v[cnt], &e) < 0) {
			if (e.kind != SL_NOTFOUND) /* removed meanwhile: not an error */
				sl_log(SL_LOG_WARN, "image list: skipping %s", e.msg);
			continue;
		}
		if (everyones || img_usable(&v[cnt]))
			cnt++;
	}
	if (errno)
		return sl_sysfail(err, "image store: read %s", dir);
	if (cnt)
		qsort(v, cnt, sizeof(*v), img_cmp_name);
	*out = steal_ptr(&v);
	*n = cnt;
	return 0;
}

static int img_lookup_digest(const char *state_dir, const char *ref, sl_image *out, sl_err *err)
{
	const char *hex = !strncmp(ref, "sha256:", 7) ? ref + 7 : ref;
	size_t hl = strlen(hex);
	bool is_hex = hl >= 12 && hl <= 64;
	for (size_t i = 0; is_hex && i < hl; i++)
		is_hex = (hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f');
	if (!is_hex)
		return 1;
	_cleanup_free_ sl_image *all = NULL;
	size_t n;
	if (image_list(state_dir, &all, &n, err) < 0)
		return -1;
	const sl_image *hit = NULL;
	for (size_t i = 0; i < n; i++) {
		if (strncmp(all[i].digest + 7, hex, hl))
			continue;
		if (hit && strcmp(hit->digest, all[i].digest))
			return sl_fail(err, SL_CONFLICT, 0,
				       "image digest prefix '%s' matches more than one image; give "
				       "more digits",
				       ref);
		if (!hit)
			hit = &all[i]; /* the first name (sorted) stands for the layer */
	}
	if (!hit)
		return 1;
	*out = *hit;
	return 0;
}

int image_lookup(const char *state_dir, const char *name_or_digest, sl_image *out, sl_err *err)
{
	const char *ref = name_or_digest ? name_or_digest : "";
	bool is_name = image_name_check(ref, NULL) == 0;
	if (is_name) {
		sl_err e;
		int r = img_load(state_dir, ref, out, &e);
		if (r == 0 && img_usable(out))
			return 0;
		if (r == 0) /* another key's: as if there were none (nor a digest match) */
			return sl_fail(err, SL_NOTFOUND, 0, "image '%s' not found", ref);
		if (e.kind != SL_NOTFOUND) {
			if (err)
				*err = e;
			return -1;
		}
	}
	int r = img_lookup_digest(state_dir, ref, out, err);
	if (r <= 0)
		return r;
	if (is_name)
		return sl_fail(err, SL_NOTFOUND, 0,
			       "image '%s' not found; import one with `sandlot image import %s "
			       "ROOTFS.tar`",
			       ref, ref);
	return sl_fail(err, SL_NOTFOUND, 0,
		       "image '%.80s' not found: not an image name or the digest of an imported "
		       "image (see `sandlot image ls`)",
		       ref);
}

/* Make scratch S's tree durable before any record points at it: each of its files and
 * directories fsynced, or (WHOLE_FS) syncfs of the store's filesystem. The latter is a
 * build's: its trees are hardlinks to layers already on disk, so only their inodes are
 * dirty, and fsync writes each inode alone (synchronously, on an ext4 without a journal)
 * where syncfs writes them together. syncfs reports a writeback error on the filesystem
 * since S's lock was opened, before the tree was made. */
int img_sync(const struct img_scratch *s, bool whole_fs, sl_err *err)
{
	if (whole_fs)
		return syncfs(s->fd) < 0 ? sl_sysfail(err, "image store: sync %s", s->path) : 0;
	if (fs_sync_tree(s->path, false, err) < 0)
		return sl_wrap(err, "image store");
	return 0;
}

/* Under the store lock: move TMP into place as the layer (or drop it when the same
 * content is already there) and write the name record. */
static int img_commit(const char *state_dir, const char *tmp, const sl_image *img, sl_err *err)
{
	char layer[PATH_MAX], rec[PATH_MAX];
	if (image_layer_path(state_dir, img->digest, layer, sizeof(layer)) < 0)
		return sl_fail(err, SL_INTERNAL, errno, "image store: layer path");
	if (img_record_path(state_dir, img->name, rec, sizeof(rec), err) < 0)
		return -1;
	_cleanup_unlock_ int lock = img_lock(state_dir, err);
	if (lock < 0)
		return -1;
	sl_image old;
	sl_err e;
	bool replaced = img_load(state_dir, img->name, &old, &e) == 0;
	if (replaced && !img_mine(old.owner))
		return sl_fail(err, SL_CONFLICT, 0,
			       "image name %s is taken (another API key's, or an admin image)",
			       img->name);
	bool moved = false;
	struct stat st;
	if (lstat(layer, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (fs_remove_tree(tmp, err) < 0)
			return -1;
	} else if (rename(tmp, layer) < 0) {
		return sl_sysfail(err, "image store: move %s to %s", tmp, layer);
	} else {
		moved = true;
	}
	sl_crash_point("import-placed"); /* the tree in images/layers, no name on it yet */
	_cleanup_free_ char *json = img_record_json(img);
	if (!json || state_write_atomic(rec, json, strlen(json), err) < 0) {
		if (!json)
			sl_fail(err, SL_EXHAUSTED, ENOMEM, "image store: encode record");
		if (moved && fs_remove_tree(layer, &e) < 0)
			sl_log(SL_LOG_ERROR, "image store: %s", e.msg);
		return -1;
	}
	if (replaced && strcmp(old.digest, img->digest))
		sl_log(SL_LOG_INFO,
		       "image %s now points to %s; its previous layer %s stays for sandboxes "
		       "made from it",
		       img->name, img->digest, old.digest);
	return 0;
}

int image_import(const char *state_dir, const sl_space_floor *floor, const char *name, int fd,
		 const char *user_or_null, const char *workdir_or_null, sl_image *out,
		 sl_err *err)
{
	if (image_name_check(name, err) < 0)
		return -1;
	if (user_or_null && !img_user_ok(user_or_null))
		return sl_fail(err, SL_INVALID, 0,
			       "image %s: user '%.80s' must be a user name, uid or user:group of "
			       "at most 63 characters",
			       name, user_or_null);
	if (workdir_or_null && !img_workdir_ok(workdir_or_null))
		return sl_fail(err, SL_INVALID, 0,
			       "image %s: working directory '%.80s' must be an absolute path "
			       "shorter than 256 bytes",
			       name, workdir_or_null);
	if (img_prepare(state_dir, err) < 0)
		return -1;
	image_scratch_collect(state_dir, true);
	char what[PATH_MAX];
	snprintf(what, sizeof(what), "the state filesystem (%s)", state_dir);
	if (space_check(state_dir, floor, what, err) < 0)
		return sl_wrap(err, "import image %s", name);
	_cleanup_scratch_ struct img_scratch scratch = {.fd = -1};
	if (img_scratch_claim(state_dir, "import-", &scratch, err) < 0)
		return -1;
	const char *tmp = scratch.path;

	char hex[65];
	sl_image img = {0};
	sl_archive_limits lim;
	archive_limits_default(&lim);
	if (floor)
		lim.min_free = *floor;
	if (archive_extract_counted(fd, tmp, &lim, hex, &img.size_bytes, err) < 0)
		return sl_wrap(err, "import image %s", name);
	snprintf(img.name, sizeof(img.name), "%s", name);
	snprintf(img.digest, sizeof(img.digest), "sha256:%s", hex);
	img.created = (int64_t)time(NULL);
	snprintf(img.owner, sizeof(img.owner), "%s", owner_acting());
	snprintf(img.format, sizeof(img.format), "tar");
	img.nlayers = 1;
	sl_crash_point("import-extracted"); /* the tree in images/tmp, nothing committed */
	int c = img_import_container(state_dir, floor, tmp, NULL, NULL, user_or_null, workdir_or_null,
				     &img, err);
	if (c <= 0) {
		sl_err e;
		if (fs_remove_tree(tmp, &e) < 0)
			sl_log(SL_LOG_ERROR, "image store: %s", e.msg);
		if (c < 0)
			return sl_wrap(err, "import image %s", name);
		if (out)
			*out = img;
		return 0;
	}
	if (img_resolve_meta(tmp, user_or_null, workdir_or_null, &img, err) < 0 ||
	    img_sync(&scratch, false, err) < 0 || img_commit(state_dir, tmp, &img, err) < 0) {
		sl_err e;
		if (fs_remove_tree(tmp, &e) < 0)
			sl_log(SL_LOG_ERROR, "image store: %s", e.msg);
		return sl_wrap(err, "import image %s", name);
	}
	if (out)
		*out = img;
	return 0;
}

int img_import_layout(const char *state_dir, const sl_space_floor *floor, const char *name,
		      const char *tree, const char *format, const img_blob_wait *wait,
		      sl_image *out, sl_err *err)
{
	if (image_name_check(name, err) < 0 || img_prepare(state_dir, err) < 0)
		return -1;
	sl_image img = {0};
	snprintf(img.name, sizeof(img.name), "%s", name);
	img.created = (int64_t)time(NULL);
	snprintf(img.owner, sizeof(img.owner), "%s", owner_acting());
	int c = img_import_container(state_dir, floor, tree, format, wait, NULL, NULL,
				     &img, err);
	if (c > 0)
		return sl_fail(err, SL_INVALID, 0, "import image %s: %s is not an image layout",
			       name, tree);
	if (c < 0)
		return sl_wrap(err, "import image %s", name);
	*out = img;
	return 0;
}

/* Does any image of ALL (a container image) hold the layer DIFF? */
static bool img_layer_used(const char *state_dir, const sl_image *all, size_t n,
			   const char *diff)
{
	for (size_t i = 0; i < n; i++) {
		_cleanup_cjson_ cJSON *ls = img_meta_layers(state_dir, &all[i]);
		const cJSON *l;
		cJSON_ArrayForEach(l, ls)
		{
			const cJSON *d = cJSON_GetObjectItemCaseSensitive(l, "digest");
			if (cJSON_IsString(d) && !strcmp(d->valuestring, diff))
				return true;
		}
	}
	return false;
}

/* <state>/images/blobs/sha256/<hex> of DIGEST removed, if a pull left it there. */
static void img_blob_drop(const char *state_dir, const char *digest)
{
	char p[PATH_MAX];
	sl_err e;
	if (img_path(p, sizeof(p), &e, "%s/images/blobs/sha256/%s", state_dir,
		     img_digest_hex(digest)) == 0 &&
	    unlink(p) < 0 && errno != ENOENT)
		sl_log(SL_LOG_WARN, "image store: remove %s: %s", p, strerror(errno));
}

/* Under the store lock, IMG's name gone and no other name on its digest: move its tree,
 * its meta record and every layer no image of ALL holds into DOOMED. Out of sight first,
 * so a crash mid-delete never leaves a partial tree that a later import of the same
 * bytes would take as complete. */
static int img_doom_unused(const char *state_dir, const sl_image *img, const sl_image *all,
			   size_t n, const char *doomed, sl_err *err)
{
	char p[PATH_MAX], to[PATH_MAX];
	_cleanup_cjson_ cJSON *layers = img_meta_layers(state_dir, img);
	image_layer_path(state_dir, img->digest, p, sizeof(p));
	if (img_path(to, sizeof(to), err, "%s/image", doomed) < 0)
		return -1;
	if (rename(p, to) < 0 && errno != ENOENT)
		return sl_sysfail(err, "move layer %s away", p);
	if (img_meta_path(state_dir, img->digest, p, sizeof(p), err) < 0)
		return -1;
	if (unlink(p) < 0 && errno != ENOENT)
		return sl_sysfail(err, "remove %s", p);
	int i = 0;
	const cJSON *l;
	cJSON_ArrayForEach(l, layers)
	{
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(l, "digest");
		i++;
		if (!cJSON_IsString(d) || !img_digest_hex(d->valuestring) ||
		    img_layer_used(state_dir, all, n, d->valuestring))
			continue;
		if (img_path(p, sizeof(p), err, "%s/images/diffs/%s", state_dir,
			     img_digest_hex(d->valuestring)) < 0 ||
		    img_path(to, sizeof(to), err, "%s/layer-%d", doomed, i) < 0)
			return -1;
		if (rename(p, to) < 0 && errno != ENOENT)
			return sl_sysfail(err, "move layer %s away", p);
		/* A pull's cached blob of the layer goes with it (complete: no one fetches it). */
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(l, "blob");
		if (cJSON_IsString(b) && img_digest_hex(b->valuestring))
			img_blob_drop(state_dir, b->valuestring);
	}
	img_blob_drop(state_dir, img->digest); /* the config's, when it was pulled */
	return 0;
}

int img_meta_path(const char *state_dir, const char *digest, char *buf, size_t len, sl_err *err)
{
	const char *hex = img_digest_hex(digest);
	if (!hex)
		return sl_fail(err, SL_INTERNAL, EINVAL, "image digest '%s'", digest);
	return img_path(buf, len, err, "%s/images/meta/%s.json", state_dir, hex);
}

static cJSON *img_meta_load(const char *state_dir, const sl_image *img, sl_err *err)
{
	char p[PATH_MAX];
	_cleanup_free_ char *text = NULL;
	if (img_meta_path(state_dir, img->digest, p, sizeof(p), err) < 0 ||
	    state_read_file(p, 8 << 20, &text, NULL, err) < 0)
		return NULL;
	cJSON *o = cJSON_Parse(text);
	if (!cJSON_IsObject(o) ||
	    !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "config")) ||
	    !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(o, "layers"))) {
		cJSON_Delete(o);
		sl_fail(err, SL_INTERNAL, 0,
			"image %s: its record %s is corrupt; remove the image and import it again",
			img->name, p);
		return NULL;
	}
	return o;
}

cJSON *img_meta_layers(const char *state_dir, const sl_image *img)
{
	if (!strcmp(img->format, "tar"))
		return NULL;
	cJSON *o = img_meta_load(state_dir, img, NULL);
	cJSON *l = o ? cJSON_DetachItemFromObjectCaseSensitive(o, "layers") : NULL;
	cJSON_Delete(o);
	return l;
}

int image_config(const char *state_dir, const sl_image *img, cJSON **out, sl_err *err)
{
	*out = NULL;
	if (!strcmp(img->format, "tar"))
		return 0;
	cJSON *o = img_meta_load(state_dir, img, err);
	if (!o)
		return -1;
	cJSON *c = cJSON_DetachItemFromObjectCaseSensitive(o, "config");
	cJSON_AddItemToObject(c, "layers", cJSON_DetachItemFromObjectCaseSensitive(o, "layers"));
	cJSON_Delete(o);
	*out = c;
	return 0;
}

int image_command(const char *state_dir, const sl_image *img, char ***argv, sl_err *err)
{
	*argv = NULL;
	_cleanup_cjson_ cJSON *c = NULL;
	if (image_config(state_dir, img, &c, err) < 0)
		return -1;
	const cJSON *parts[2] = {cJSON_GetObjectItemCaseSensitive(c, "entrypoint"),
				 cJSON_GetObjectItemCaseSensitive(c, "cmd")};
	size_t n = 0, bytes = 0;
	for (int k = 0; k < 2; k++) {
		const cJSON *s;
		cJSON_ArrayForEach(s, parts[k])
		{
			n++;
			bytes += strlen(s->valuestring) + 1;
		}
	}
	if (!n)
		return 0;
	char **v = malloc((n + 1) * sizeof(char *) + bytes);
	if (!v)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "image %s: its command", img->name);
	char *at = (char *)(v + n + 1);
	size_t i = 0;
	for (int k = 0; k < 2; k++) {
		const cJSON *s;
		cJSON_ArrayForEach(s, parts[k])
		{
			v[i++] = strcpy(at, s->valuestring);
			at += strlen(s->valuestring) + 1;
		}
	}
	v[n] = NULL;
	*argv = v;
	return 0;
}

int image_remove(const char *state_dir, const char *name, sl_err *err)
{
	if (image_name_check(name, err) < 0)
		return -1;
	char rec[PATH_MAX], names[PATH_MAX];
	_cleanup_scratch_ struct img_scratch doomed = {.fd = -1};
	if (img_record_path(state_dir, name, rec, sizeof(rec), err) < 0 ||
	    img_path(names, sizeof(names), err, "%s/images/names", state_dir) < 0)
		return -1;
	if (access(rec, F_OK) < 0 && errno == ENOENT)
		return sl_fail(err, SL_NOTFOUND, 0, "image '%s' not found (see `sandlot image ls`)",
			       name);
	if (img_scratch_claim(state_dir, "remove-", &doomed, err) < 0)
		return -1;
	{
		_cleanup_unlock_ int lock = img_lock(state_dir, err);
		if (lock < 0)
			return -1;
		sl_image img;
		int r = img_load(state_dir, name, &img, err);
		if ((r < 0 && err && err->kind == SL_NOTFOUND) || (r == 0 && !img_usable(&img)))
			return sl_fail(err, SL_NOTFOUND, 0,
				       "image '%s' not found (see `sandlot image ls`)", name);
		if (r < 0)
			return -1;
		if (!img_mine(img.owner))
			return sl_fail(err, SL_CONFLICT, 0,
				       "image %s is an admin image: only the admin key removes it",
				       name);
		if (unlink(rec) < 0)
			return sl_sysfail(err, "image %s: remove %s", name, rec);
		_cleanup_close_ int dfd = open(names, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0)
			fsync(dfd);
		_cleanup_free_ sl_image *all = NULL;
		size_t n;
		if (img_list(state_dir, true, &all, &n, err) < 0)
			return sl_wrap(err, "image %s removed, but its layer was kept", name);
		for (size_t i = 0; i < n; i++)
			if (!strcmp(all[i].digest, img.digest))
				return 0; /* another name still uses the layer */
		if (mkdir(doomed.path, 0700) < 0)
			return sl_sysfail(err, "image %s: create %s", name, doomed.path);
		if (img_doom_unused(state_dir, &img, all, n, doomed.path, err) < 0)
			return sl_wrap(err, "image %s removed, but its layers were kept", name);
	}
	if (fs_remove_tree(doomed.path, err) < 0)
		return sl_wrap(err, "image %s removed, but deleting its layer failed", name);
	return 0;
}

/* ---- orphans: what a crash between placing and naming left (sandlot doctor) ---- */

/* Is HEX (64 digits) the digest or a layer of one of ALL, or (TREE: an image's own tree
 * or record) used by a sandbox or snapshot, as IN_USE says? */
static bool img_held(const char *state_dir, const sl_image *all, size_t n, const char *hex,
		     bool tree, image_in_use_fn in_use, void *use_arg)
{
	char digest[72];
	snprintf(digest, sizeof(digest), "sha256:%s", hex);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(all[i].digest, digest))
			return true;
	if (!tree)
		return img_layer_used(state_dir, all, n, digest);
	return in_use && in_use(use_arg, digest);
}

/* Each entry of images/layers, images/meta and images/diffs that nothing holds:
 * FOUND(found_arg, path, what) for each, until it returns false; how many it was given.
 * Under the store lock, so no import places anything meanwhile. */
static int img_orphans_locked(const char *state_dir, image_in_use_fn in_use, void *use_arg,
			      bool (*found)(void *, const char *, const char *), void *found_arg,
			      sl_err *err)
{
	_cleanup_free_ sl_image *all = NULL;
	size_t n;
	if (img_list(state_dir, true, &all, &n, err) < 0)
		return -1;
	static const struct {
		const char *dir, *suffix, *what;
		bool tree;
	} kinds[] = {
	    {"layers", "", "an image tree no image name holds", true},
	    {"meta", ".json", "an image record no image name holds", true},
	    {"diffs", "", "a layer no image holds", false},
	};
	int count = 0;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		char dir[PATH_MAX];
		if (img_path(dir, sizeof(dir), err, "%s/images/%s", state_dir, kinds[k].dir) < 0)
			return -1;
		_cleanup_closedir_ DIR *d = opendir(dir);
		struct dirent *de;
		while (d && (de = readdir(d))) {
			size_t sl = strlen(kinds[k].suffix);
			if (strlen(de->d_name) != 64 + sl || strcmp(de->d_name + 64, kinds[k].suffix))
				continue;
			char hex[65], p[PATH_MAX];
			snprintf(hex, sizeof(hex), "%.64s", de->d_name);
			if (!img_digest_hex(hex) ||
			    img_held(state_dir, all, n, hex, kinds[k].tree, in_use, use_arg))
				continue;
			if (img_path(p, sizeof(p), err, "%s/%s", dir, de->d_name) < 0)
				return -1;
			count++;
			if (!found(found_arg, p, kinds[k].what))
				return count;
		}
	}
	return count;
}

/* What img_orphans_locked found, kept to be reported once the lock is let go (a report
 * may repair, which takes the lock again). */
struct orphan_found {
	size_t n;
	struct {
		char path[PATH_MAX];
		const char *what;
	} v[64];
};

static bool orphan_keep(void *arg, const char *path, const char *what)
{
	struct orphan_found *f = arg;
	snprintf(f->v[f->n].path, sizeof(f->v[0].path), "%s", path);
	f->v[f->n++].what = what;
	return f->n < sizeof(f->v) / sizeof(f->v[0]);
}

int image_orphans(const char *state_dir, image_in_use_fn in_use, void *use_arg,
		  image_orphan_fn report, void *arg, sl_err *err)
{
	_cleanup_free_ struct orphan_found *f = calloc(1, sizeof(*f));
	if (!f)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "image store: orphans");
	{
		_cleanup_unlock_ int lock = img_lock(state_dir, err);
		if (lock < 0 ||
		    img_orphans_locked(state_dir, in_use, use_arg, orphan_keep, f, err) < 0)
			return -1;
	}
	/* At most 64 a run: a repair and another run find the rest. */
	for (size_t i = 0; i < f->n; i++)
		report(arg, f->v[i].path, f->v[i].what);
	return (int)f->n;
}

static bool orphan_is(void *arg, const char *path, const char *what)
{
	const char **want = arg;
	if (strcmp(path, want[0]))
		return true;
	want[1] = path; /* found: stop */
	return false;
}

int image_orphan_remove(const char *state_dir, const char *path, image_in_use_fn in_use,
			void *use_arg, sl_err *err)
{
	_cleanup_unlock_ int lock = img_lock(state_dir, err);
	if (lock < 0)
		return -1;
	const char *want[2] = {path, NULL};
	if (img_orphans_locked(state_dir, in_use, use_arg, orphan_is, want, err) < 0)
		return -1;
	if (!want[1])
		return 0; /* held again, or gone: nothing to do */
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return fs_remove_tree(path, err);
	if (unlink(path) < 0 && errno != ENOENT)
		return sl_sysfail(err, "image store: remove %s", path);
	return 0;
}
