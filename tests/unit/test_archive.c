/* test_archive.c — safe extraction: crafted hostile archives are refused and leave
 * nothing behind; honest ones (tar, gz, zst, xz, from a file or a pipe) come out exact. */
#include "archive_extract.h"
#include "fsutil.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

enum { F_NONE, F_GZIP, F_ZSTD, F_XZ };

struct spec {
	const char *path;
	mode_t type; /* AE_IF*; 0 with hardlink set */
	mode_t perm;
	int uid, gid;
	const char *data;     /* regular file content */
	const char *link;     /* symlink target */
	const char *hardlink; /* hardlink target */
	dev_t rdev;
	size_t size; /* when data is NULL: this many pseudo-random bytes */
};

struct fix {
	char tmp[64];
	char dest[128];
	char outside[128];
	char tar[128];
};

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	strcpy(f->tmp, "/tmp/sl_test_archive_XXXXXX");
	if (!mkdtemp(f->tmp))
		return -1;
	snprintf(f->dest, sizeof(f->dest), "%s/out", f->tmp);
	snprintf(f->outside, sizeof(f->outside), "%s/outside", f->tmp);
	snprintf(f->tar, sizeof(f->tar), "%s/in.tar", f->tmp);
	if (mkdir(f->outside, 0755) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;
	sl_err err;
	int rc = fs_remove_tree(f->tmp, &err);
	free(f);
	return rc;
}

static void build(const char *file, int filter, const struct spec *s, size_t n)
{
	struct archive *a = archive_write_new();
	assert_non_null(a);
	assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	if (filter == F_GZIP)
		assert_int_equal(archive_write_add_filter_gzip(a), ARCHIVE_OK);
	if (filter == F_ZSTD)
		assert_int_equal(archive_write_add_filter_zstd(a), ARCHIVE_OK);
	if (filter == F_XZ)
		assert_int_equal(archive_write_add_filter_xz(a), ARCHIVE_OK);
	assert_int_equal(archive_write_open_filename(a, file), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, s[i].path);
		archive_entry_set_uid(e, s[i].uid);
		archive_entry_set_gid(e, s[i].gid);
		archive_entry_set_mtime(e, 1000000, 0);
		size_t size = s[i].data ? strlen(s[i].data) : s[i].size;
		if (s[i].hardlink) {
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_perm(e, 0644);
			archive_entry_set_hardlink(e, s[i].hardlink);
			size = 0;
		} else {
			archive_entry_set_filetype(e, s[i].type);
			archive_entry_set_perm(e, s[i].perm ? s[i].perm : 0644);
		}
		if (s[i].link)
			archive_entry_set_symlink(e, s[i].link);
		if (s[i].rdev)
			archive_entry_set_rdev(e, s[i].rdev);
		if (s[i].type == AE_IFREG && !s[i].hardlink)
			archive_entry_set_size(e, (la_int64_t)size);
		assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
		if (s[i].type == AE_IFREG && !s[i].hardlink && size) {
			char *buf = malloc(size);
			if (s[i].data) {
				memcpy(buf, s[i].data, size);
			} else {
				uint32_t x = 2463534242u;
				for (size_t k = 0; k < size; k++) {
					x ^= x << 13, x ^= x >> 17, x ^= x << 5;
					buf[k] = (char)x;
				}
			}
			assert_int_equal(archive_write_data(a, buf, size), (la_ssize_t)size);
			free(buf);
		}
		archive_entry_free(e);
	}
	assert_int_equal(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
}

static int extract_file(const char *file, const char *dest, const sl_archive_limits *lim,
			char hex[65], sl_err *err)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	sl_err_clear(err);
	int rc = archive_extract_safe(fd, dest, lim, hex, err);
	close(fd);
	return rc;
}

static void sha256_file(const char *file, char hex[65])
{
	int fd = open(file, O_RDONLY);
	assert_true(fd >= 0);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	assert_int_equal(EVP_DigestInit_ex(md, EVP_sha256(), NULL), 1);
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		EVP_DigestUpdate(md, buf, (size_t)n);
	close(fd);
	unsigned char d[32];
	unsigned int len;
	EVP_DigestFinal_ex(md, d, &len);
	EVP_MD_CTX_free(md);
	for (int i = 0; i < 32; i++)
		sprintf(hex + 2 * i, "%02x", d[i]);
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

/* Every refusal: the right kind, a message naming the entry, no dest, nothing outside. */
static void expect_refused(struct fix *f, int filter, const struct spec *s, size_t n,
			   const sl_archive_limits *lim, sl_kind kind, const char *needle)
{
	build(f->tar, filter, s, n);
	char hex[65];
	sl_err err;
	assert_int_equal(extract_file(f->tar, f->dest, lim, hex, &err), -1);
	if (err.kind != kind || (needle && !strstr(err.msg, needle)))
		fail_msg("kind %s, message: %s", sl_kind_code(err.kind), err.msg);
	assert_int_equal(access(f->dest, F_OK), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(count_entries(f->outside), 0);
	assert_int_equal(count_entries(f->tmp), 2); /* in.tar and outside/ only */
}

#define REFUSE(f, specs, lim, kind, needle)                                                        \
	expect_refused((f), F_NONE, (specs), sizeof(specs) / sizeof((specs)[0]), (lim), (kind),    \
		       (needle))

static void test_absolute_path(void **state)
{
	struct spec s[] = {{.path = "ok", .type = AE_IFREG, .data = "x"},
			   {.path = "/tmp/sl_evil_abs", .type = AE_IFREG, .data = "x"}};
	REFUSE(*state, s, NULL, SL_INVALID, "/tmp/sl_evil_abs");
	assert_int_equal(access("/tmp/sl_evil_abs", F_OK), -1);
}

static void test_dotdot(void **state)
{
	struct spec s1[] = {{.path = "../x", .type = AE_IFREG, .data = "x"}};
	REFUSE(*state, s1, NULL, SL_INVALID, "'../x'");
	struct spec s2[] = {{.path = "a/", .type = AE_IFDIR, .perm = 0755},
			    {.path = "a/../../x", .type = AE_IFREG, .data = "x"}};
	REFUSE(*state, s2, NULL, SL_INVALID, "a/../../x");
}

static void test_hardlink_escapes(void **state)
{
	struct spec s1[] = {{.path = "h", .hardlink = "/etc/passwd"}};
	REFUSE(*state, s1, NULL, SL_INVALID, "/etc/passwd");
	struct spec s2[] = {{.path = "h", .hardlink = "../x"}};
	REFUSE(*state, s2, NULL, SL_INVALID, "'h'");
}

static void test_hardlink_through_symlink(void **state)
{
	struct fix *f = *state;
	char victim[160];
	snprintf(victim, sizeof(victim), "%s/victim", f->outside);
	int fd = open(victim, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	struct spec s[] = {{.path = "l", .type = AE_IFLNK, .link = f->outside},
			   {.path = "h", .hardlink = "l/victim"}};
	build(f->tar, F_NONE, s, 2);
	char hex[65];
	sl_err err;
	assert_int_equal(extract_file(f->tar, f->dest, NULL, hex, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_non_null(strstr(err.msg, "symlink"));
	assert_int_equal(access(f->dest, F_OK), -1);
	struct stat st;
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_nlink, 1);
	unlink(victim);
}

static void test_symlink_escapes(void **state)
{
	struct spec s1[] = {{.path = "a", .type = AE_IFLNK, .link = "../../.."}};
	REFUSE(*state, s1, NULL, SL_INVALID, "../../..");
	struct spec s2[] = {{.path = "d/", .type = AE_IFDIR, .perm = 0755},
			    {.path = "d/l", .type = AE_IFLNK, .link = "x/../../.."}};
	REFUSE(*state, s2, NULL, SL_INVALID, "'d/l'");
}

static void test_write_through_symlink(void **state)
{
	struct fix *f = *state;
	struct spec s[] = {{.path = "l", .type = AE_IFLNK, .link = f->outside},
			   {.path = "l/f", .type = AE_IFREG, .data = "pwned"}};
	REFUSE(f, s, NULL, SL_INVALID, "'l/f'");
	/* The same with a relative link that stays inside but lands on a planted one. */
	struct spec s2[] = {{.path = "l", .type = AE_IFLNK, .link = f->outside},
			    {.path = "m", .type = AE_IFLNK, .link = "l"},
			    {.path = "m/f", .type = AE_IFREG, .data = "pwned"}};
	REFUSE(f, s2, NULL, SL_INVALID, "'m/f'");
}

static void test_dir_replaced_by_symlink(void **state)
{
	struct fix *f = *state;
	struct stat before, after;
	assert_int_equal(stat(f->outside, &before), 0);
	struct spec s[] = {{.path = "d/", .type = AE_IFDIR, .perm = 0700},
			   {.path = "d", .type = AE_IFLNK, .link = f->outside}};
	REFUSE(f, s, NULL, SL_INVALID, "'d'");
	assert_int_equal(stat(f->outside, &after), 0);
	assert_int_equal(before.st_mode, after.st_mode);
}

static void test_devices(void **state)
{
	struct fix *f = *state;
	struct spec s[] = {{.path = "null", .type = AE_IFCHR, .perm = 0666, .rdev = makedev(1, 3)}};
	REFUSE(f, s, NULL, SL_INVALID, "'null'");
	struct spec b[] = {{.path = "sda", .type = AE_IFBLK, .perm = 0600, .rdev = makedev(8, 0)}};
	REFUSE(f, b, NULL, SL_INVALID, "block");

	if (geteuid() != 0)
		skip(); /* mknod needs root */
	sl_archive_limits lim;
	archive_limits_default(&lim);
	lim.allow_devices = true;
	build(f->tar, F_NONE, s, 1);
	char hex[65], path[160];
	sl_err err;
	assert_int_equal(extract_file(f->tar, f->dest, &lim, hex, &err), 0);
	snprintf(path, sizeof(path), "%s/null", f->dest);
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(st.st_rdev, makedev(1, 3));
	assert_int_equal(fs_remove_tree(f->dest, &err), 0);
}

static void test_limits(void **state)
{
	sl_archive_limits lim;
	archive_limits_default(&lim);
	assert_int_equal(lim.max_entry_bytes, 4ULL << 30);
	assert_int_equal(lim.max_total_bytes, 16ULL << 30);
	assert_int_equal(lim.max_entries, 1000000);
	assert_false(lim.allow_devices);

	lim.max_entry_bytes = 10;
	struct spec big[] = {{.path = "small", .type = AE_IFREG, .data = "0123456789"},
			     {.path = "big", .type = AE_IFREG, .data = "0123456789A"}};
	REFUSE(*state, big, &lim, SL_TOOLARGE, "'big'");

	archive_limits_default(&lim);
	lim.max_total_bytes = 100;
	struct spec total[] = {{.path = "a", .type = AE_IFREG, .size = 40},
			       {.path = "b", .type = AE_IFREG, .size = 40},
			       {.path = "c", .type = AE_IFREG, .size = 40}};
	REFUSE(*state, total, &lim, SL_TOOLARGE, "'c'");

	archive_limits_default(&lim);
	lim.max_entries = 2;
	struct spec many[] = {{.path = "a/", .type = AE_IFDIR, .perm = 0755},
			      {.path = "b/", .type = AE_IFDIR, .perm = 0755},
			      {.path = "c/", .type = AE_IFDIR, .perm = 0755}};
	REFUSE(*state, many, &lim, SL_TOOLARGE, "2 entries");

	/* A floor no filesystem here is above: refused at the first entry, nothing left. */
	archive_limits_default(&lim);
	lim.min_free.bytes = 1ULL << 60;
	REFUSE(*state, total, &lim, SL_NOSPACE, "below the floor of 1Ei");
	archive_limits_default(&lim);
	lim.min_free.percent = 99;
	REFUSE(*state, total, &lim, SL_NOSPACE, "below the floor of 99%");
}

static void test_truncated_and_garbage(void **state)
{
	struct fix *f = *state;
	struct spec s[] = {{.path = "d/", .type = AE_IFDIR, .perm = 0755},
			   {.path = "d/a", .type = AE_IFREG, .size = 200000},
			   {.path = "d/b", .type = AE_IFREG, .size = 200000}};
	for (int filter = F_NONE; filter <= F_GZIP; filter++) {
		build(f->tar, filter, s, 3);
		struct stat st;
		assert_int_equal(stat(f->tar, &st), 0);
		assert_int_equal(truncate(f->tar, st.st_size / 2), 0);
		char hex[65];
		sl_err err;
		assert_int_equal(extract_file(f->tar, f->dest, NULL, hex, &err), -1);
		assert_int_equal(err.kind, SL_INVALID);
		assert_int_equal(access(f->dest, F_OK), -1);
	}
	int fd = open(f->tar, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "this is not a tarball\n", 22), 22);
	close(fd);
	char hex[65];
	sl_err err;
	assert_int_equal(extract_file(f->tar, f->dest, NULL, hex, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_int_equal(access(f->dest, F_OK), -1);
	/* Empty input. */
	assert_int_equal(truncate(f->tar, 0), 0);
	assert_int_equal(extract_file(f->tar, f->dest, NULL, hex, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_int_equal(access(f->dest, F_OK), -1);
}

static void test_dest_exists(void **state)
{
	struct fix *f = *state;
	struct spec s[] = {{.path = "a", .type = AE_IFREG, .data = "x"}};
	build(f->tar, F_NONE, s, 1);
	assert_int_equal(mkdir(f->dest, 0700), 0);
	char hex[65], keep[160];
	snprintf(keep, sizeof(keep), "%s/keep", f->dest);
	close(open(keep, O_CREAT | O_WRONLY, 0600));
	sl_err err;
	assert_int_equal(extract_file(f->tar, f->dest, NULL, hex, &err), -1);
	assert_int_equal(err.kind, SL_CONFLICT);
	assert_int_equal(access(keep, F_OK), 0); /* someone else's directory: untouched */
	assert_int_equal(fs_remove_tree(f->dest, &err), 0);
}

static const struct spec good_tree[] = {
    {.path = "./", .type = AE_IFDIR, .perm = 0755},
    {.path = "bin/", .type = AE_IFDIR, .perm = 0755},
    {.path = "bin/su", .type = AE_IFREG, .perm = 04755, .data = "suid"},
    {.path = "bin/rel", .type = AE_IFLNK, .perm = 0777, .link = "su"},
    {.path = "bin/hard", .hardlink = "bin/su"},
    {.path = "bin/hardsym", .hardlink = "bin/rel"}, /* links the symlink itself */
    {.path = "etc/", .type = AE_IFDIR, .perm = 0755},
    {.path = "etc/abs", .type = AE_IFLNK, .perm = 0777, .link = "/bin/su"},
    {.path = "etc/up", .type = AE_IFLNK, .perm = 0777, .link = "../bin/./su"},
    {.path = "home/user/", .type = AE_IFDIR, .perm = 0700, .uid = 1000, .gid = 1000},
    {.path = "home/user/file",
     .type = AE_IFREG,
     .perm = 0640,
     .uid = 1000,
     .gid = 1000,
     .data = "hello\n"},
    {.path = "run/fifo", .type = AE_IFIFO, .perm = 0600},
    {.path = "tmp/", .type = AE_IFDIR, .perm = 01777},
};

static void check_good_tree(struct fix *f)
{
	char p[256], buf[64];
	struct stat st, st2;
#define AT(rel) (snprintf(p, sizeof(p), "%s/%s", f->dest, rel), p)
	/* Owners (and setuid, which needs them) are only restorable as root. */
	bool root = geteuid() == 0;
	assert_int_equal(lstat(AT("bin/su"), &st), 0);
	assert_int_equal(st.st_mode & 07777, root ? 04755 : 0755);
	assert_int_equal(st.st_uid, root ? 0 : geteuid());
	assert_int_equal(st.st_size, 4);
	assert_int_equal(st.st_mtime, 1000000);
	assert_int_equal(st.st_nlink, 2);
	assert_int_equal(lstat(AT("bin/hard"), &st2), 0);
	assert_int_equal(st.st_ino, st2.st_ino);
	assert_int_equal(lstat(AT("bin/hardsym"), &st2), 0);
	assert_true(S_ISLNK(st2.st_mode));
	assert_int_equal(st2.st_nlink, 2);
	ssize_t n = readlink(AT("etc/abs"), buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "/bin/su");
	n = readlink(AT("bin/rel"), buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "su");
	assert_int_equal(lstat(AT("home/user"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(st.st_uid, root ? 1000 : geteuid());
	assert_int_equal(st.st_gid, root ? 1000 : getegid());
	assert_int_equal(st.st_mtime, 1000000); /* set after its file was written */
	assert_int_equal(lstat(AT("home/user/file"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_uid, root ? 1000 : geteuid());
	assert_int_equal(st.st_gid, root ? 1000 : getegid());
	int fd = open(AT("home/user/file"), O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	assert_int_equal(n, 6);
	assert_memory_equal(buf, "hello\n", 6);
	assert_int_equal(lstat(AT("run/fifo"), &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(lstat(AT("tmp"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 01777);
	assert_int_equal(lstat(f->dest, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
#undef AT
}

static void test_good_formats(void **state)
{
	struct fix *f = *state;
	size_t n = sizeof(good_tree) / sizeof(good_tree[0]);
	for (int filter = F_NONE; filter <= F_XZ; filter++) {
		build(f->tar, filter, good_tree, n);
		char hex[65] = "", want[65];
		sl_err err;
		int fd = open(f->tar, O_RDONLY);
		uint64_t bytes = 0;
		if (archive_extract_counted(fd, f->dest, NULL, hex, &bytes, &err) < 0)
			fail_msg("filter %d: %s", filter, err.msg);
		close(fd);
		sha256_file(f->tar, want);
		assert_string_equal(hex, want);
		assert_int_equal(bytes, 4 + 6);
		check_good_tree(f);
		assert_int_equal(fs_remove_tree(f->dest, &err), 0);
		assert_int_equal(access(f->dest, F_OK), -1);
	}
}

/* A container layer in one pass (archive_extract_layer): the same tree and the same two
 * digests as archive_blob_digests gives, for every compression; a verified blob's digest
 * is not computed; the hostile-archive rules hold as in any extraction. */
static void test_layer_one_pass(void **state)
{
	struct fix *f = *state;
	size_t n = sizeof(good_tree) / sizeof(good_tree[0]);
	for (int filter = F_NONE; filter <= F_XZ; filter++) {
		build(f->tar, filter, good_tree, n);
		char blob[65], tar[65], want_blob[65], want_tar[65];
		uint64_t tar_bytes = 0, want_bytes = 0, files = 0;
		sl_err err;
		int fd = open(f->tar, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(archive_blob_digests(fd, want_blob, want_tar, &want_bytes, &err), 0);
		assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
		if (archive_extract_layer(fd, f->dest, NULL, false, blob, tar, &tar_bytes, &files,
					  &err) < 0)
			fail_msg("filter %d: %s", filter, err.msg);
		assert_string_equal(blob, want_blob);
		assert_string_equal(tar, want_tar);
		assert_int_equal(tar_bytes, want_bytes);
		assert_int_equal(files, 4 + 6);
		check_good_tree(f);
		assert_int_equal(fs_remove_tree(f->dest, &err), 0);
		/* Verified: the blob not hashed, its diff id still. */
		strcpy(blob, "untouched");
		assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
		assert_int_equal(archive_extract_layer(fd, f->dest, NULL, true, blob, tar,
						       &tar_bytes, NULL, &err),
				 0);
		assert_string_equal(blob, "untouched");
		assert_string_equal(tar, want_tar);
		assert_int_equal(fs_remove_tree(f->dest, &err), 0);
		close(fd);
	}
	/* An escape is refused, and nothing is left. */
	struct spec bad[] = {{.path = "a/", .type = AE_IFDIR, .perm = 0755},
			     {.path = "a/../../x", .type = AE_IFREG, .data = "x"}};
	build(f->tar, F_GZIP, bad, 2);
	char blob[65], tar[65];
	uint64_t tar_bytes;
	sl_err err;
	int fd = open(f->tar, O_RDONLY | O_CLOEXEC);
	assert_int_equal(
	    archive_extract_layer(fd, f->dest, NULL, false, blob, tar, &tar_bytes, NULL, &err), -1);
	close(fd);
	assert_int_equal(err.kind, SL_INVALID);
	assert_non_null(strstr(err.msg, "a/../../x"));
	assert_int_equal(access(f->dest, F_OK), -1);
	assert_int_equal(count_entries(f->outside), 0);
	/* Garbage after a gzip header: the reader's error, nothing left. */
	fd = open(f->tar, O_WRONLY | O_TRUNC | O_CLOEXEC);
	assert_int_equal(write(fd, "\x1f\x8b\x08\x00garbage-garbage-garbage", 27), 27);
	close(fd);
	fd = open(f->tar, O_RDONLY | O_CLOEXEC);
	assert_int_equal(
	    archive_extract_layer(fd, f->dest, NULL, false, blob, tar, &tar_bytes, NULL, &err), -1);
	close(fd);
	assert_int_equal(err.kind, SL_INVALID);
	assert_int_equal(access(f->dest, F_OK), -1);
}

/* Feed the archive through a pipe in small writes: one pass, short reads. */
static int extract_piped(const char *file, const char *dest, char hex[65], sl_err *err)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		int fd = open(file, O_RDONLY);
		char buf[1000];
		ssize_t n;
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			if (write(p[1], buf, (size_t)n) != n)
				_exit(1);
		_exit(0);
	}
	close(p[1]);
	int rc = archive_extract_safe(p[0], dest, NULL, hex, err);
	close(p[0]);
	int status;
	waitpid(pid, &status, 0);
	return rc;
}

static void test_from_pipe(void **state)
{
	struct fix *f = *state;
	for (int filter = F_NONE; filter <= F_ZSTD; filter += F_ZSTD - F_NONE) {
		build(f->tar, filter, good_tree, sizeof(good_tree) / sizeof(good_tree[0]));
		if (filter == F_NONE) {
			/* Bytes after the end marker are never parsed but were sent: hashed. */
			int tfd = open(f->tar, O_WRONLY | O_APPEND);
			assert_int_equal(write(tfd, "junk", 4), 4);
			close(tfd);
		}
		char hex[65], want[65];
		sl_err err;
		if (extract_piped(f->tar, f->dest, hex, &err) < 0)
			fail_msg("filter %d: %s", filter, err.msg);
		sha256_file(f->tar, want);
		assert_string_equal(hex, want);
		check_good_tree(f);
		assert_int_equal(fs_remove_tree(f->dest, &err), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_absolute_path, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dotdot, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hardlink_escapes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hardlink_through_symlink, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_symlink_escapes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_through_symlink, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dir_replaced_by_symlink, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_devices, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_truncated_and_garbage, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dest_exists, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_good_formats, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_layer_one_pass, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_from_pipe, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
