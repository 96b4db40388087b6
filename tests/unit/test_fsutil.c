/* test_fsutil.c — fs_remove_tree: removes everything it owns, never follows a link out,
 * never crosses a mount, and copes with trees deeper than the fd limit; fs_network_kind. */
#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cmocka.h>

static char base[64];

static void touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
}

static int setup(void **state)
{
	strcpy(base, "/tmp/sl_test_fsutil_XXXXXX");
	return mkdtemp(base) ? 0 : -1;
}

static int teardown(void **state)
{
	sl_err err;
	return fs_remove_tree(base, &err);
}

static void test_missing_and_file(void **state)
{
	char p[128];
	sl_err err;
	snprintf(p, sizeof(p), "%s/nope", base);
	assert_int_equal(fs_remove_tree(p, &err), 0);
	touch(p);
	assert_int_equal(fs_remove_tree(p, &err), 0);
	assert_int_equal(access(p, F_OK), -1);
}

static void test_symlinks_not_followed(void **state)
{
	char victim[128], victim_file[160], tree[128], p[200];
	sl_err err;
	snprintf(victim, sizeof(victim), "%s/victim", base);
	snprintf(victim_file, sizeof(victim_file), "%s/precious", victim);
	snprintf(tree, sizeof(tree), "%s/tree", base);
	assert_int_equal(mkdir(victim, 0755), 0);
	touch(victim_file);
	assert_int_equal(mkdir(tree, 0755), 0);
	snprintf(p, sizeof(p), "%s/dirlink", tree);
	assert_int_equal(symlink(victim, p), 0);
	snprintf(p, sizeof(p), "%s/filelink", tree);
	assert_int_equal(symlink(victim_file, p), 0);
	snprintf(p, sizeof(p), "%s/sub", tree);
	/* No permissions: root still empties it (others could not). */
	assert_int_equal(mkdir(p, geteuid() == 0 ? 0000 : 0700), 0);
	snprintf(p, sizeof(p), "%s/sub/f", tree);
	touch(p);
	snprintf(p, sizeof(p), "%s/sub/fifo", tree);
	assert_int_equal(mkfifo(p, 0600), 0);

	assert_int_equal(fs_remove_tree(tree, &err), 0);
	assert_int_equal(access(tree, F_OK), -1);
	assert_int_equal(access(victim_file, F_OK), 0);

	/* A symlink given as the path itself is removed, not followed. */
	snprintf(p, sizeof(p), "%s/toplink", base);
	assert_int_equal(symlink(victim, p), 0);
	assert_int_equal(fs_remove_tree(p, &err), 0);
	assert_int_equal(access(victim_file, F_OK), 0);
	struct stat st;
	assert_int_equal(lstat(p, &st), -1);
}

/* Deeper than the soft fd limit: a walk holding one fd per level would fail. */
static void test_deep_tree(void **state)
{
	struct rlimit rl, low;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	low = rl;
	low.rlim_cur = 64;
	unsigned depth = 1000;
	char tree[128];
	snprintf(tree, sizeof(tree), "%s/deep", base);
	assert_int_equal(mkdir(tree, 0755), 0);
	int fd = open(tree, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	for (unsigned i = 0; i < depth; i++) {
		assert_int_equal(mkdirat(fd, "d", 0755), 0);
		int nfd = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		assert_true(nfd >= 0);
		close(fd);
		fd = nfd;
		int ffd = openat(fd, "f", O_CREAT | O_WRONLY, 0600);
		assert_true(ffd >= 0);
		close(ffd);
	}
	close(fd);
	sl_err err;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	int rc = fs_remove_tree(tree, &err);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rc < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(access(tree, F_OK), -1);
}

static void test_mount_point_left_alone(void **state)
{
	char tree[128], mnt[160], inner[200], other[160];
	snprintf(tree, sizeof(tree), "%s/m", base);
	snprintf(mnt, sizeof(mnt), "%s/mnt", tree);
	snprintf(inner, sizeof(inner), "%s/keep", mnt);
	snprintf(other, sizeof(other), "%s/other", tree);
	assert_int_equal(mkdir(tree, 0755), 0);
	assert_int_equal(mkdir(mnt, 0755), 0);
	touch(other);
	if (mount("sl_test", mnt, "tmpfs", 0, "size=1m") < 0)
		skip();
	touch(inner);
	sl_err err;
	sl_err_clear(&err);
	int rc = fs_remove_tree(tree, &err);
	assert_int_equal(access(inner, F_OK), 0);  /* the mounted fs is untouched */
	assert_int_equal(access(other, F_OK), -1); /* the rest is gone */
	assert_int_equal(umount(mnt), 0);
	assert_int_equal(rc, -1);
	assert_int_equal(err.kind, SL_CONFLICT);
	assert_non_null(strstr(err.msg, "mount point"));
	/* Asked to remove a mount point itself: refused outright. */
	assert_int_equal(mount("sl_test", mnt, "tmpfs", 0, "size=1m"), 0);
	rc = fs_remove_tree(mnt, &err);
	assert_int_equal(umount(mnt), 0);
	assert_int_equal(rc, -1);
	assert_int_equal(err.kind, SL_CONFLICT);
	assert_int_equal(fs_remove_tree(tree, &err), 0);
	assert_int_equal(access(tree, F_OK), -1);
}

/* Network filesystems by their magic (as statfs gives f_type, sign-extended on some
 * ABIs), and the local ones under a test root are not. */
static void test_network_kind(void **state)
{
	assert_string_equal(fs_network_kind(0x6969), "nfs");
	assert_string_equal(fs_network_kind(0xFF534D42UL), "cifs");
	assert_string_equal(fs_network_kind(0xFFFFFFFFFF534D42UL), "cifs");
	assert_string_equal(fs_network_kind(0xFE534D42UL), "smb2");
	assert_string_equal(fs_network_kind(0x65735546), "fuse");
	assert_string_equal(fs_network_kind(0x01021997), "9p");
	assert_null(fs_network_kind(0x01021994)); /* tmpfs */
	assert_null(fs_network_kind(0x9123683e)); /* btrfs */
	assert_null(fs_network_kind(0xEF53));	  /* ext4 */
	struct statfs sf;
	assert_int_equal(statfs(base, &sf), 0);
	assert_null(fs_network_kind((unsigned long)sf.f_type));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_missing_and_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_symlinks_not_followed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_deep_tree, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mount_point_left_alone, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_network_kind, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
