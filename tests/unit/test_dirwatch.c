/* test_dirwatch.c — directory watches on reused inotify instances: a watch sees what
 * happens in its directory, an ended one hands its instance on with nothing queued
 * and nothing more to come from the old directory, and a full cache closes. */
#include "dirwatch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct fixture {
	char dir[64];
	char a[PATH_MAX], b[PATH_MAX];
	sl_dirwatches cache;
} fixture;

static int setup(void **state)
{
	fixture *fx = calloc(1, sizeof(*fx));
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/sandlot-dirwatch.XXXXXX");
	if (!fx || !mkdtemp(fx->dir))
		return -1;
	snprintf(fx->a, sizeof(fx->a), "%s/a", fx->dir);
	snprintf(fx->b, sizeof(fx->b), "%s/b", fx->dir);
	if (mkdir(fx->a, 0700) < 0 || mkdir(fx->b, 0700) < 0)
		return -1;
	dirwatch_cache_init(&fx->cache);
	*state = fx;
	return 0;
}

static void remove_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[PATH_MAX];
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	if (d)
		closedir(d);
}

static int teardown(void **state)
{
	fixture *fx = *state;
	dirwatch_cache_close(&fx->cache);
	remove_files(fx->a);
	remove_files(fx->b);
	rmdir(fx->a);
	rmdir(fx->b);
	rmdir(fx->dir);
	free(fx);
	return 0;
}

static void touch(const char *dir, const char *name)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
}

/* Whether W has an event queued within MS. */
static bool readable(const sl_dirwatch *w, int ms)
{
	struct pollfd p = {w->fd, POLLIN, 0};
	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* How many inotify instances this process holds. */
static int instances(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;
	char p[PATH_MAX], link[64];
	while (d && (e = readdir(d))) {
		snprintf(p, sizeof(p), "/proc/self/fd/%s", e->d_name);
		ssize_t len = readlink(p, link, sizeof(link) - 1);
		if (len > 0) {
			link[len] = '\0';
			n += strcmp(link, "anon_inode:inotify") == 0;
		}
	}
	if (d)
		closedir(d);
	return n;
}

static void test_sees_its_directory(void **state)
{
	fixture *fx = *state;
	sl_dirwatch w;
	assert_int_equal(dirwatch_start(&fx->cache, &w, fx->a, IN_CLOSE_WRITE), 0);
	assert_true(w.fd >= 0);
	assert_false(readable(&w, 0));
	touch(fx->a, "exit");
	assert_true(readable(&w, 1000));
	dirwatch_drain(&w);
	assert_false(readable(&w, 0));
	dirwatch_end(&fx->cache, &w);
	assert_int_equal(w.fd, -1);
	dirwatch_end(&fx->cache, &w); /* a second end is harmless */
}

/* The next watch gets the same instance, clean: no event left from the first
 * directory, none arriving from it later, and its own directory's events do. */
static void test_reused_clean(void **state)
{
	fixture *fx = *state;
	int before = instances();
	sl_dirwatch w;
	assert_int_equal(dirwatch_start(&fx->cache, &w, fx->a, IN_CLOSE_WRITE), 0);
	/* A second fd of the first instance: it sees the later watches' events only if
	 * they are on that same instance (a closed and remade one could get the same fd
	 * number back). */
	sl_dirwatch twin = {dup(w.fd), -1};
	assert_true(twin.fd >= 0);
	touch(fx->a, "one"); /* queued, never read: the end must drop it */
	dirwatch_end(&fx->cache, &w);
	for (int i = 0; i < 50; i++) {
		assert_int_equal(dirwatch_start(&fx->cache, &w, fx->b, IN_CLOSE_WRITE), 0);
		assert_false(readable(&w, 0));
		touch(fx->a, "two"); /* the old directory: nothing */
		assert_false(readable(&w, 20));
		touch(fx->b, "three");
		assert_true(readable(&w, 1000));
		assert_true(readable(&twin, 0));
		dirwatch_end(&fx->cache, &w);
	}
	close(twin.fd);
	assert_int_equal(instances(), before + 1); /* one, kept, never a new one */
}

static void test_missing_directory(void **state)
{
	fixture *fx = *state;
	char gone[PATH_MAX + 8];
	snprintf(gone, sizeof(gone), "%s/none", fx->dir);
	sl_dirwatch w;
	assert_int_equal(dirwatch_start(&fx->cache, &w, gone, IN_CLOSE_WRITE), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(w.fd, -1);
	/* Its instance went back to the cache: the next start reuses it. */
	int before = instances();
	assert_int_equal(dirwatch_start(&fx->cache, &w, fx->a, IN_CLOSE_WRITE), 0);
	assert_int_equal(instances(), before);
	dirwatch_end(&fx->cache, &w);
}

/* A directory removed under its watch: the kernel drops the watch, the end still
 * hands back a clean instance. */
static void test_directory_removed(void **state)
{
	fixture *fx = *state;
	char d[PATH_MAX + 8];
	snprintf(d, sizeof(d), "%s/tmpdir", fx->dir);
	assert_int_equal(mkdir(d, 0700), 0);
	sl_dirwatch w;
	assert_int_equal(dirwatch_start(&fx->cache, &w, d, IN_CLOSE_WRITE | IN_DELETE_SELF), 0);
	assert_int_equal(rmdir(d), 0);
	assert_true(readable(&w, 1000));
	dirwatch_end(&fx->cache, &w);
	assert_int_equal(dirwatch_start(&fx->cache, &w, fx->a, IN_CLOSE_WRITE), 0);
	assert_false(readable(&w, 0));
	dirwatch_end(&fx->cache, &w);
}

/* More watches at once than the cache keeps: every one works, and the ones that do
 * not fit are closed when they end. */
static void test_cache_bounded(void **state)
{
	fixture *fx = *state;
	int before = instances();
	enum { N = SL_DIRWATCH_CACHE + 3 };
	sl_dirwatch w[N];
	for (int i = 0; i < N; i++)
		assert_int_equal(dirwatch_start(&fx->cache, &w[i], fx->a, IN_CLOSE_WRITE), 0);
	assert_int_equal(instances(), before + N);
	touch(fx->a, "all");
	for (int i = 0; i < N; i++) {
		assert_true(readable(&w[i], 1000));
		dirwatch_end(&fx->cache, &w[i]);
	}
	assert_int_equal(fx->cache.n, SL_DIRWATCH_CACHE);
	assert_int_equal(instances(), before + SL_DIRWATCH_CACHE);
	dirwatch_cache_close(&fx->cache);
	assert_int_equal(fx->cache.n, 0);
	assert_int_equal(instances(), before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_sees_its_directory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reused_clean, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_missing_directory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_directory_removed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cache_bounded, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
