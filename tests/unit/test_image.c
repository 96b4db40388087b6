/* test_image.c — the image store: dedup by digest, names, lookup by name or digest,
 * metadata from the image and from flags, removal, and failed or racing imports. */
#include "fsutil.h"
#include "image.h"
#include "pull.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

struct fix {
	char tmp[64];
	char state[128];
	char tar[128];
};

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	strcpy(f->tmp, "/tmp/sl_test_image_XXXXXX");
	if (!mkdtemp(f->tmp))
		return -1;
	snprintf(f->state, sizeof(f->state), "%s/state", f->tmp);
	snprintf(f->tar, sizeof(f->tar), "%s/in.tar", f->tmp);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;
	sl_err err;
	/* As root, an import binds <state>/images on itself nosuid,nodev (none otherwise). */
	char images[160];
	snprintf(images, sizeof(images), "%s/images", f->state);
	while (umount2(images, MNT_DETACH) == 0)
		;
	int rc = fs_remove_tree(f->tmp, &err);
	free(f);
	return rc;
}

static void add(struct archive *a, const char *path, mode_t type, const char *data,
		const char *link)
{
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, path);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, type == AE_IFDIR ? 0755 : 0644);
	archive_entry_set_mtime(e, 1000000, 0);
	if (link)
		archive_entry_set_symlink(e, link);
	if (type == AE_IFREG)
		archive_entry_set_size(e, (la_int64_t)strlen(data));
	assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
	if (type == AE_IFREG && data[0])
		assert_int_equal(archive_write_data(a, data, strlen(data)),
				 (la_ssize_t)strlen(data));
	archive_entry_free(e);
}

/* A tiny rootfs: bin/hello holds CONTENT; META (if any) is etc/sandlot/image.json, and
 * META_LINK (if any) makes that file a symlink instead. */
static void build(const char *file, const char *content, const char *meta, const char *meta_link)
{
	struct archive *a = archive_write_new();
	assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	assert_int_equal(archive_write_open_filename(a, file), ARCHIVE_OK);
	add(a, "./", AE_IFDIR, NULL, NULL);
	add(a, "bin/", AE_IFDIR, NULL, NULL);
	add(a, "bin/hello", AE_IFREG, content, NULL);
	add(a, "etc/", AE_IFDIR, NULL, NULL);
	add(a, "etc/hostname", AE_IFREG, "box\n", NULL);
	add(a, "etc/sandlot/", AE_IFDIR, NULL, NULL);
	if (meta)
		add(a, "etc/sandlot/image.json", AE_IFREG, meta, NULL);
	if (meta_link)
		add(a, "etc/sandlot/image.json", AE_IFLNK, NULL, meta_link);
	assert_int_equal(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
}

static int import(struct fix *f, const char *name, const char *user, const char *wd, sl_image *out,
		  sl_err *err)
{
	int fd = open(f->tar, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	sl_err_clear(err);
	int rc = image_import(f->state, NULL, name, fd, user, wd, out, err);
	close(fd);
	return rc;
}

static int count(struct fix *f, const char *sub)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/images/%s", f->state, sub);
	DIR *d = opendir(p);
	if (!d)
		return errno == ENOENT ? 0 : -1;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

static void test_import_dedup_lookup_remove(void **state)
{
	struct fix *f = *state;
	build(f->tar, "hello world\n", NULL, NULL);
	sl_image a, b, got;
	sl_err err;
	if (import(f, "beta", NULL, NULL, &a, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(import(f, "alpha", NULL, NULL, &b, &err), 0);
	assert_string_equal(a.digest, b.digest);
	assert_int_equal(strncmp(a.digest, "sha256:", 7), 0);
	assert_int_equal(strlen(a.digest), 7 + 64);
	assert_string_equal(a.name, "beta");
	assert_string_equal(a.user, "root");
	assert_string_equal(a.workdir, "/");
	assert_int_equal(a.size_bytes, strlen("hello world\n") + strlen("box\n"));
	assert_true(a.created > 1600000000);
	assert_int_equal(count(f, "layers"), 1);
	assert_int_equal(count(f, "names"), 2);
	assert_int_equal(count(f, "tmp"), 0);

	char layer[512], p[1024];
	assert_int_equal(image_layer_path(f->state, a.digest, layer, sizeof(layer)), 0);
	snprintf(p, sizeof(p), "%s/images/layers/%s", f->state, a.digest + 7);
	assert_string_equal(layer, p);
	snprintf(p, sizeof(p), "%s/bin/hello", layer);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_size, 12);
	/* Root's alone (docs/isolation.md, "The host's side"). */
	static const char *const private_dirs[] = {"", "/images", "/images/layers",
						   "/images/names", "/images/tmp"};
	for (size_t i = 0; i < sizeof(private_dirs) / sizeof(private_dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", f->state, private_dirs[i]);
		assert_int_equal(stat(p, &st), 0);
		if ((st.st_mode & 0777) != 0700)
			fail_msg("%s has mode %03o, want 0700", p, st.st_mode & 0777);
	}

	assert_int_equal(image_lookup(f->state, "beta", &got, &err), 0);
	assert_string_equal(got.digest, a.digest);
	assert_int_equal(got.size_bytes, a.size_bytes);
	assert_int_equal(got.created, a.created);
	assert_int_equal(image_lookup(f->state, a.digest, &got, &err), 0);
	assert_string_equal(got.name, "alpha"); /* first name, sorted */
	assert_int_equal(image_lookup(f->state, a.digest + 7, &got, &err), 0);
	char prefix[20];
	snprintf(prefix, sizeof(prefix), "%.12s", a.digest + 7);
	assert_int_equal(image_lookup(f->state, prefix, &got, &err), 0);
	assert_string_equal(got.digest, a.digest);
	assert_int_equal(image_lookup(f->state, "nope", &got, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	assert_non_null(strstr(err.msg, "sandlot image import nope"));

	sl_image *list;
	size_t n;
	assert_int_equal(image_list(f->state, &list, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(list[0].name, "alpha");
	assert_string_equal(list[1].name, "beta");
	free(list);

	assert_int_equal(image_remove(f->state, "alpha", &err), 0);
	assert_int_equal(image_lookup(f->state, "alpha", &got, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	assert_int_equal(access(layer, F_OK), 0); /* beta still uses it */
	assert_int_equal(image_remove(f->state, "beta", &err), 0);
	assert_int_equal(access(layer, F_OK), -1);
	assert_int_equal(count(f, "layers"), 0);
	assert_int_equal(count(f, "names"), 0);
	assert_int_equal(count(f, "tmp"), 0);
	assert_int_equal(image_remove(f->state, "beta", &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	assert_int_equal(image_list(f->state, &list, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_null(list);
}

static void test_replace_name(void **state)
{
	struct fix *f = *state;
	sl_image one, two, got;
	sl_err err;
	build(f->tar, "one\n", NULL, NULL);
	assert_int_equal(import(f, "img", NULL, NULL, &one, &err), 0);
	build(f->tar, "two\n", NULL, NULL);
	assert_int_equal(import(f, "img", NULL, NULL, &two, &err), 0);
	assert_string_not_equal(one.digest, two.digest);
	assert_int_equal(image_lookup(f->state, "img", &got, &err), 0);
	assert_string_equal(got.digest, two.digest);
	assert_int_equal(count(f, "names"), 1);
	/* The old layer may back sandboxes: it stays. */
	assert_int_equal(count(f, "layers"), 2);
}

static void test_metadata(void **state)
{
	struct fix *f = *state;
	sl_image img;
	sl_err err;
	build(f->tar, "x", "{\"user\": \"app\", \"workingDirectory\": \"/srv/app\"}", NULL);
	if (import(f, "meta", NULL, NULL, &img, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(img.user, "app");
	assert_string_equal(img.workdir, "/srv/app");
	assert_int_equal(image_lookup(f->state, "meta", &img, &err), 0);
	assert_string_equal(img.user, "app");
	assert_string_equal(img.workdir, "/srv/app");
	/* A flag wins over the file, field by field. */
	assert_int_equal(import(f, "meta2", "1000:1000", NULL, &img, &err), 0);
	assert_string_equal(img.user, "1000:1000");
	assert_string_equal(img.workdir, "/srv/app");
	assert_int_equal(import(f, "meta3", NULL, "/work", &img, &err), 0);
	assert_string_equal(img.user, "app");
	assert_string_equal(img.workdir, "/work");
	/* Bad flags and a bad file are refused before anything is stored. */
	assert_int_equal(import(f, "bad", "a b", NULL, &img, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_int_equal(import(f, "bad", NULL, "relative", &img, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	build(f->tar, "y", "{\"workingDirectory\": 3}", NULL);
	assert_int_equal(import(f, "bad", NULL, NULL, &img, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_non_null(strstr(err.msg, "workingDirectory"));
	build(f->tar, "y", "not json", NULL);
	assert_int_equal(import(f, "bad", NULL, NULL, &img, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_int_equal(image_lookup(f->state, "bad", &img, &err), -1);
	assert_int_equal(count(f, "layers"), 1);
	assert_int_equal(count(f, "tmp"), 0);
}

/* image.json as a symlink to a host path: read inside the tree, never on the host. */
static void test_metadata_symlink_stays_inside(void **state)
{
	struct fix *f = *state;
	char evil[160];
	snprintf(evil, sizeof(evil), "%s/evil.json", f->tmp);
	FILE *fp = fopen(evil, "w");
	assert_non_null(fp);
	fputs("{\"user\": \"evil\", \"workingDirectory\": \"/evil\"}", fp);
	fclose(fp);
	build(f->tar, "z", NULL, evil);
	sl_image img;
	sl_err err;
	if (import(f, "linked", NULL, NULL, &img, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(img.user, "root");
	assert_string_equal(img.workdir, "/");
	/* ...and a link to a file inside the tree is followed there. */
	build(f->tar, "z", NULL, "/etc/hostname");
	assert_int_equal(import(f, "linked2", NULL, NULL, &img, &err), -1);
	assert_int_equal(err.kind, SL_INVALID); /* "box\n" is not a JSON object */
}

static void test_bad_names(void **state)
{
	struct fix *f = *state;
	build(f->tar, "x", NULL, NULL);
	const char *bad[] = {"",
			     "Upper",
			     "-lead",
			     ".hidden",
			     "a/.b",
			     "a/../b",
			     "a//b",
			     "a/",
			     "a/-b",
			     "..",
			     "a b",
			     "x+y",
			     "sha256:0123456789ab",
			     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sl_image img;
		sl_err err;
		assert_int_equal(import(f, bad[i], NULL, NULL, &img, &err), -1);
		assert_int_equal(err.kind, SL_INVALID);
		assert_non_null(strstr(err.msg, "image name"));
		assert_int_equal(image_remove(f->state, bad[i], &err), -1);
		assert_int_equal(err.kind, SL_INVALID);
	}
	sl_err err;
	assert_int_equal(image_name_check("0k._-x", &err), 0);
	/* Pulled references are names too. */
	assert_int_equal(image_name_check("a/b", &err), 0);
	assert_int_equal(image_name_check("x:Y", &err), 0);
	assert_int_equal(image_name_check("localhost:5000/team/app:1.0", &err), 0);
	assert_int_equal(image_name_check("app@sha256:0123", &err), 0);
	assert_int_equal(
	    image_name_check("a234567890123456789012345678901234567890123456789012345678901234",
			     &err),
	    0);
	assert_int_equal(access(f->state, F_OK), -1); /* refused before touching the store */
}

static void test_ref_parse(void **state)
{
	static const struct {
		const char *in, *domain, *repo, *tag, *digest, *name;
	} ok[] = {
	    {"python:3.12-slim", "docker.io", "library/python", "3.12-slim", "", "python:3.12-slim"},
	    {"busybox", "docker.io", "library/busybox", "latest", "", "busybox:latest"},
	    {"docker.io/library/busybox:1", "docker.io", "library/busybox", "1", "", "busybox:1"},
	    {"team/app", "docker.io", "team/app", "latest", "", "team/app:latest"},
	    {"docker.io/a.b/c:1", "docker.io", "a.b/c", "1", "", "docker.io/a.b/c:1"},
	    {"docker.io/localhost/c", "docker.io", "localhost/c", "latest", "",
	     "docker.io/localhost/c:latest"},
	    {"localhost:5000/foo:1", "localhost:5000", "foo", "1", "", "localhost:5000/foo:1"},
	    {"localhost/foo", "localhost", "foo", "latest", "", "localhost/foo:latest"},
	    {"ghcr.io/a/b/c:v1.2", "ghcr.io", "a/b/c", "v1.2", "", "ghcr.io/a/b/c:v1.2"},
	    {"127.0.0.1:5000/x@sha256:"
	     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	     "127.0.0.1:5000", "x", "",
	     "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	     "127.0.0.1:5000/x@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"
	     "cdef"},
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		sl_image_ref r;
		sl_err err;
		if (image_ref_parse(ok[i].in, &r, &err) < 0)
			fail_msg("%s: %s", ok[i].in, err.msg);
		assert_string_equal(r.domain, ok[i].domain);
		assert_string_equal(r.repo, ok[i].repo);
		assert_string_equal(r.tag, ok[i].tag);
		assert_string_equal(r.digest, ok[i].digest);
		assert_string_equal(r.name, ok[i].name);
		assert_int_equal(image_name_check(r.name, &err), 0);
	}
	static const char *const bad[] = {
	    "", "Upper/x", "x:", "x:-tag", "x@sha256:12", "x@md5:0123", "a//b", "/x", "x/",
	    "host:5000/../x", "a b", "x:tag/y", ".x", "x y:1",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sl_image_ref r;
		sl_err err;
		if (image_ref_parse(bad[i], &r, &err) == 0)
			fail_msg("'%s' parsed as %s / %s", bad[i], r.domain, r.repo);
		assert_int_equal(err.kind, SL_INVALID);
	}
}

static void test_failed_import_leaves_nothing(void **state)
{
	struct fix *f = *state;
	build(f->tar, "x", NULL, NULL);
	struct stat st;
	assert_int_equal(stat(f->tar, &st), 0);
	/* Cut inside the data block of etc/hostname, the sixth 512-byte record. */
	assert_int_equal(truncate(f->tar, 512 * 6 + 100), 0);
	sl_image img;
	sl_err err;
	assert_int_equal(import(f, "broken", NULL, NULL, &img, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_non_null(strstr(err.msg, "broken"));
	assert_int_equal(count(f, "layers"), 0);
	assert_int_equal(count(f, "names"), 0);
	assert_int_equal(count(f, "tmp"), 0);
}

static void test_layer_path(void **state)
{
	char buf[256];
	const char *hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char d[80];
	snprintf(d, sizeof(d), "sha256:%s", hex);
	assert_int_equal(image_layer_path("/s", d, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/s/images/layers/0123456789abcdef0123456789abcdef0123456789abcdef"
				 "0123456789abcdef");
	assert_int_equal(image_layer_path("/s", hex, buf, sizeof(buf)), 0);
	assert_int_equal(image_layer_path("/s", "sha256:../../etc", buf, sizeof(buf)), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(image_layer_path("/s", "0123ABCDEF", buf, sizeof(buf)), -1);
	assert_int_equal(image_layer_path("/s", d, buf, 20), -1);
	assert_int_equal(errno, ENAMETOOLONG);
}

/* Trees left in images/tmp by a process that died are deleted by the next import; a
 * tree whose claimant still holds its lock is not. */
static void test_leftovers_collected(void **state)
{
	struct fix *f = *state;
	build(f->tar, "x", NULL, NULL);
	sl_image img;
	sl_err err;
	assert_int_equal(import(f, "first", NULL, NULL, &img, &err), 0);
	char dead[256], live[256], live_lock[272], p[300];
	snprintf(dead, sizeof(dead), "%s/images/tmp/import-00000000deadbeef", f->state);
	snprintf(live, sizeof(live), "%s/images/tmp/import-00000000a11ea11e", f->state);
	snprintf(live_lock, sizeof(live_lock), "%s.lock", live);
	assert_int_equal(mkdir(dead, 0755), 0);
	snprintf(p, sizeof(p), "%s/junk", dead);
	close(open(p, O_CREAT | O_WRONLY, 0600));
	assert_int_equal(mkdir(live, 0755), 0);
	int lfd = open(live_lock, O_CREAT | O_RDWR, 0600);
	assert_true(lfd >= 0);
	assert_int_equal(flock(lfd, LOCK_EX), 0);
	assert_int_equal(import(f, "second", NULL, NULL, &img, &err), 0);
	assert_int_equal(access(dead, F_OK), -1);
	assert_int_equal(access(live, F_OK), 0);
	close(lfd); /* its claimant "dies" */
	assert_int_equal(import(f, "third", NULL, NULL, &img, &err), 0);
	assert_int_equal(access(live, F_OK), -1);
	assert_int_equal(access(live_lock, F_OK), -1);
	assert_int_equal(count(f, "tmp"), 0);
}

/* Several CLI processes importing the same bytes at once: one layer, every name. */
static void test_concurrent_imports(void **state)
{
	struct fix *f = *state;
	build(f->tar, "same bytes\n", NULL, NULL);
	enum { N = 6 };
	pid_t pids[N];
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			char name[16];
			snprintf(name, sizeof(name), "c%d", i % 4); /* two pairs share a name */
			sl_image img;
			sl_err err;
			int fd = open(f->tar, O_RDONLY);
			_exit(image_import(f->state, NULL, name, fd, NULL, NULL, &img, &err) == 0 ? 0
											    : 1);
		}
	}
	for (int i = 0; i < N; i++) {
		int status;
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	assert_int_equal(count(f, "layers"), 1);
	assert_int_equal(count(f, "names"), 4);
	assert_int_equal(count(f, "tmp"), 0);
	sl_image *list;
	size_t n;
	sl_err err;
	assert_int_equal(image_list(f->state, &list, &n, &err), 0);
	assert_int_equal(n, 4);
	for (size_t i = 1; i < n; i++)
		assert_string_equal(list[i].digest, list[0].digest);
	free(list);
}

/* Tags: repositories told apart as docker does, another name for one image, the names of
 * a repository, and removal of a tag keeping the layer while another name holds it. */
static void test_tags(void **state)
{
	struct fix *f = *state;
	static const struct {
		const char *name;
		size_t repo;
	} repos[] = {{"app", 3},
		     {"app:v1", 3},
		     {"localhost:5000/team/app:1", 23},
		     {"localhost:5000/team/app", 23},
		     {"app@sha256:0123", 3},
		     {"a.b/c", 5}};
	for (size_t i = 0; i < sizeof(repos) / sizeof(repos[0]); i++)
		assert_int_equal(image_name_repo_len(repos[i].name), repos[i].repo);
	char buf[IMAGE_NAME_MAX + 1];
	sl_err err;
	assert_int_equal(image_tag_name("app:v1", "prod", buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, "app:prod");
	assert_int_equal(image_tag_name("localhost:5000/app", "2", buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, "localhost:5000/app:2");
	const char *bad[] = {"", ".x", "-x", "a:b", "a/b", "a b", NULL};
	for (size_t i = 0; bad[i]; i++)
		assert_int_equal(image_tag_name("app", bad[i], buf, sizeof(buf), &err), -1);
	char longtag[130];
	memset(longtag, 'x', 128);
	longtag[128] = '\0';
	assert_int_equal(image_tag_name("app", longtag, buf, sizeof(buf), &err), -1);
	assert_int_equal(err.kind, SL_INVALID);

	build(f->tar, "tagged\n", NULL, NULL);
	sl_image v1, prod, got;
	if (import(f, "app:v1", NULL, NULL, &v1, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(import(f, "other", NULL, NULL, &got, &err), 0);
	assert_int_equal(image_tag(f->state, "app:v1", "app:prod", &prod, &err), 0);
	assert_string_equal(prod.name, "app:prod");
	assert_string_equal(prod.digest, v1.digest);
	assert_int_equal(image_tag(f->state, "app:v1", "app", &got, &err), 0);
	assert_int_equal(image_tag(f->state, "nope", "app:x", &got, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	assert_int_equal(image_tag(f->state, "app:v1", "Bad", &got, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	sl_image *v;
	size_t n;
	assert_int_equal(image_tags(f->state, "app:prod", &v, &n, &err), 0);
	assert_int_equal(n, 3); /* app, app:prod, app:v1; not "other" */
	assert_string_equal(v[0].name, "app");
	assert_string_equal(v[1].name, "app:prod");
	assert_string_equal(v[2].name, "app:v1");
	free(v);
	assert_int_equal(image_remove(f->state, "app:v1", &err), 0);
	assert_int_equal(image_remove(f->state, "app", &err), 0);
	assert_int_equal(count(f, "layers"), 1); /* app:prod and other hold it */
	assert_int_equal(image_lookup(f->state, "app:prod", &got, &err), 0);
	assert_int_equal(image_tags(f->state, "app", &v, &n, &err), 0);
	assert_int_equal(n, 1);
	free(v);
	assert_int_equal(image_tags(f->state, "none", &v, &n, &err), 0);
	assert_int_equal(n, 0);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_import_dedup_lookup_remove, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_replace_name, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_metadata, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_metadata_symlink_stays_inside, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_names, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failed_import_leaves_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_layer_path, setup, teardown),
	    cmocka_unit_test(test_ref_parse),
	    cmocka_unit_test_setup_teardown(test_tags, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_leftovers_collected, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_concurrent_imports, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
