/* test_volfs.c — a volume's files from the host: the calls E2B's content API makes, and
 * what a sandbox may plant in a volume (symlinks out, "..", a FIFO) never followed or
 * opened. The volume is a plain directory here; volfs only needs its descriptor. */
#include "volfs.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fsutil.h"

static char base[64], vol[96], victim[96];
static sl_volfs v;

static int setup(void **state)
{
	strcpy(base, "/tmp/sl_test_volfs_XXXXXX");
	if (!mkdtemp(base))
		return -1;
	snprintf(vol, sizeof(vol), "%s/vol", base);
	snprintf(victim, sizeof(victim), "%s/victim", base);
	if (mkdir(vol, 0755) < 0 || mkdir(victim, 0755) < 0)
		return -1;
	char p[160];
	snprintf(p, sizeof(p), "%s/secret", victim);
	int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, "host", 4) != 4)
		return -1;
	close(fd);
	v.root = open(vol, O_PATH | O_DIRECTORY | O_CLOEXEC);
	snprintf(v.name, sizeof(v.name), "test");
	return v.root < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	sl_err err;
	volfs_close(&v);
	return fs_remove_tree(base, &err);
}

static void put(const char *path, const char *data, bool overwrite, sl_kind want)
{
	sl_err err = {0};
	sl_volfs_attrs a = {-1, -1, -1};
	int fd = -1;
	int rc = volfs_open_write(&v, path, overwrite, &a, &fd, &err);
	if (want != SL_OK) {
		assert_int_equal(rc, -1);
		assert_int_equal(err.kind, want);
		return;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(fs_write_all(fd, data, strlen(data), -1), 0);
	close(fd);
}

static void get(const char *path, const char *want)
{
	sl_err err = {0};
	int fd;
	uint64_t size;
	char buf[64] = {0};
	assert_int_equal(volfs_open_read(&v, path, &fd, &size, &err), 0);
	assert_int_equal(size, strlen(want));
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), (ssize_t)strlen(want));
	close(fd);
	assert_string_equal(buf, want);
}

static int collect(void *arg, const sl_volfs_entry *e, sl_err *err)
{
	strcat(arg, e->path);
	strcat(arg, e->type == SL_VOLFS_SYMLINK ? "@ " : " ");
	return 0;
}

static void test_files_and_dirs(void **state)
{
	sl_err err = {0};
	sl_volfs_entry e;
	sl_volfs_attrs a = {1000, 1000, 0750}, none = {-1, -1, -1};
	put("/a.txt", "one", false, SL_OK);
	get("a.txt", "one");
	put("/a.txt", "two", false, SL_CONFLICT); /* no overwrite without force */
	put("//./a.txt", "three", true, SL_OK);
	get("/a.txt", "three");
	put("/no/such/b", "x", true, SL_NOTFOUND);
	assert_int_equal(volfs_stat(&v, "/a.txt", &e, &err), 0);
	assert_int_equal(e.type, SL_VOLFS_FILE);
	assert_int_equal(e.mode, 0644);
	assert_string_equal(e.name, "a.txt");

	assert_int_equal(volfs_mkdir(&v, "/d/e", false, &none, &e, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	assert_int_equal(volfs_mkdir(&v, "/d/e", true, &a, &e, &err), 0);
	assert_int_equal(e.uid, 1000);
	assert_int_equal(e.mode, 0750);
	assert_int_equal(volfs_mkdir(&v, "/d/e", false, &none, &e, &err), -1);
	assert_int_equal(err.kind, SL_CONFLICT);
	assert_int_equal(volfs_mkdir(&v, "/d/e", true, &none, &e, &err), 0);
	assert_int_equal(volfs_mkdir(&v, "/a.txt/x", true, &none, &e, &err), -1);
	assert_int_equal(err.kind, SL_CONFLICT);
	put("/d/e/f", "deep", false, SL_OK);

	char seen[512] = "";
	assert_int_equal(volfs_list(&v, "/", 1, collect, seen, &err), 0);
	assert_string_equal(seen, "/a.txt /d ");
	seen[0] = '\0';
	assert_int_equal(volfs_list(&v, "/", 3, collect, seen, &err), 0);
	assert_string_equal(seen, "/a.txt /d /d/e /d/e/f ");

	sl_volfs_attrs big = {70000, -1, -1}, mode = {-1, -1, 0600};
	assert_int_equal(volfs_setattr(&v, "/a.txt", &big, &e, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_int_equal(volfs_setattr(&v, "/a.txt", &mode, &e, &err), 0);
	assert_int_equal(e.mode, 0600);

	assert_int_equal(volfs_remove(&v, "/d", &err), 0);
	assert_int_equal(volfs_stat(&v, "/d/e/f", &e, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	assert_int_equal(volfs_remove(&v, "/", &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_int_equal(volfs_remove(&v, "/d", &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
}

static void test_hostile(void **state)
{
	sl_err err = {0};
	sl_volfs_entry e;
	sl_volfs_attrs mode = {-1, -1, 0777}, none = {-1, -1, -1};
	char p[160], seen[512] = "";
	int fd;
	uint64_t size;
	/* What a sandbox can leave in its volume. */
	snprintf(p, sizeof(p), "%s/out", vol);
	assert_int_equal(symlink(victim, p), 0);
	snprintf(p, sizeof(p), "%s/secret-link", vol);
	assert_int_equal(symlink("../victim/secret", p), 0);
	snprintf(p, sizeof(p), "%s/fifo", vol);
	assert_int_equal(mkfifo(p, 0644), 0);

	for (const char *const *bad =
		 (const char *const[]){"../victim/secret", "/a/../../x", "..", NULL};
	     *bad; bad++) {
		assert_int_equal(volfs_open_read(&v, *bad, &fd, &size, &err), -1);
		assert_int_equal(err.kind, SL_INVALID);
	}
	assert_int_equal(volfs_open_read(&v, "", &fd, &size, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	/* Through a link, or the link itself: refused, the host's file as it was. */
	assert_int_equal(volfs_open_read(&v, "/out/secret", &fd, &size, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_int_equal(volfs_open_read(&v, "/secret-link", &fd, &size, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	put("/secret-link", "pwned", true, SL_INVALID);
	put("/out/new", "pwned", true, SL_INVALID);
	assert_int_equal(volfs_mkdir(&v, "/out/dir", true, &none, &e, &err), -1);
	assert_int_equal(volfs_setattr(&v, "/secret-link", &mode, &e, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_int_equal(volfs_list(&v, "/out", 1, collect, seen, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	/* A FIFO is never opened for reading (it would block) nor written. */
	assert_int_equal(volfs_open_read(&v, "/fifo", &fd, &size, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	put("/fifo", "x", true, SL_CONFLICT);
	/* Listed as links, removed as links. */
	assert_int_equal(volfs_stat(&v, "/out", &e, &err), 0);
	assert_int_equal(e.type, SL_VOLFS_SYMLINK);
	assert_string_equal(e.target, victim);
	assert_int_equal(volfs_list(&v, "/", 2, collect, seen, &err), 0);
	assert_string_equal(seen, "/fifo /out@ /secret-link@ ");
	assert_int_equal(volfs_remove(&v, "/out", &err), 0);

	char buf[16] = {0};
	struct stat st;
	snprintf(p, sizeof(p), "%s/secret", victim);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 4);
	close(fd);
	assert_string_equal(buf, "host");
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	snprintf(p, sizeof(p), "%s/new", victim);
	assert_int_equal(access(p, F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_files_and_dirs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
