/* test_local_user.c — what another local user of the host can reach of sandlot: nothing
 * under the state and run dirs but the API socket, no set-id file of an imported image, no
 * list of sandbox cgroups. Each check runs as uid 65534 (nobody) on the host. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define NOBODY 65534

/* Run FN(ARG) in a child that has become uid/gid 65534 with no supplementary groups; its
 * exit status (0 = FN returned 0). */
static int as_nobody(int (*fn)(void *), void *arg)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
		    setresuid(NOBODY, NOBODY, NOBODY) < 0)
			_exit(100);
		_exit(fn(arg) ? 1 : 0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_not_equal(WEXITSTATUS(st), 100);
	return WEXITSTATUS(st);
}

/* ---- a set-id file in an imported image ---- */

/* This test binary, copied into an image as a set-uid root file: run by nobody, it says
 * which effective uid it got (E2E_PRINT_EUID). */
static void fill_setuid(struct archive *a)
{
	size_t len;
	char *bytes = e2e_read_file_len("/proc/self/exe", &len);
	assert_non_null(bytes);
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, "bin");
	archive_entry_set_filetype(e, AE_IFDIR);
	archive_entry_set_perm(e, 0755);
	archive_write_header(a, e);
	archive_entry_clear(e);
	archive_entry_set_pathname(e, "bin/rootme");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 04755);
	archive_entry_set_uid(e, 0);
	archive_entry_set_gid(e, 0);
	archive_entry_set_size(e, (la_int64_t)len);
	archive_write_header(a, e);
	archive_write_data(a, bytes, len);
	archive_entry_free(e);
	free(bytes);
}

/* The layer's path: <state>/images/layers/<hex of the digest `image import` printed>. */
static char *layer_file(const char *import_out, const char *file)
{
	const char *d = strstr(import_out, "sha256:");
	assert_non_null(d);
	return e2e_printf("%s/images/layers/%.64s/%s", getenv("SANDLOT_STATE_DIR"), d + 7, file);
}

static int run_rootme(void *arg)
{
	const char *path = arg;
	int p[2];
	if (pipe(p) < 0)
		return 2;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		char *argv[] = {(char *)path, NULL};
		char *envp[] = {"E2E_PRINT_EUID=1", NULL};
		execve(path, argv, envp);
		printf("exec: %s\n", strerror(errno));
		fflush(stdout);
		_exit(0);
	}
	close(p[1]);
	char buf[128] = {0};
	ssize_t n = read(p[0], buf, sizeof(buf) - 1);
	waitpid(pid, NULL, 0);
	if (n > 0 && strncmp(buf, "euid ", 5) == 0) {
		fprintf(stderr, "nobody ran %s: %s", path, buf);
		return 1;
	}
	return 0;
}

/* A local user could run a set-uid root file of an imported image as root (before the
 * fix, layers sat under world-traversable directories). Now the layer is out of reach,
 * and its mount honours no set-id bit even for whoever reaches it. */
static void test_setuid_file_of_an_image_is_no_way_to_root(void **state)
{
	char *tar = e2e_write_archive("setuid.tar", fill_setuid);
	char *out = e2e_sandlot_ok("image", "import", "setuid", tar, NULL);
	char *rootme = layer_file(out, "bin/rootme");
	struct stat st;
	assert_int_equal(stat(rootme, &st), 0);
	assert_true(st.st_mode & S_ISUID); /* the image keeps its bits: a sandbox may need them */
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(as_nobody(run_rootme, rootme), 0);
	/* Behind the modes, a second wall: the layers' mount is nosuid,nodev. */
	struct statvfs sv;
	assert_int_equal(statvfs(rootme, &sv), 0);
	assert_true(sv.f_flag & ST_NOSUID);
	assert_true(sv.f_flag & ST_NODEV);
	free(e2e_sandlot_ok("image", "rm", "setuid", NULL));
	unlink(tar);
	free(rootme);
	free(out);
	free(tar);
}

/* ---- nothing under the state and run dirs ---- */

struct reach {
	char **paths;
	size_t n, cap;
	const char *socket;
	const char *top[2]; /* the state and run dirs themselves */
};

static struct reach *walk_into;

static int collect(const char *path, const struct stat *st, int type, struct FTW *f)
{
	struct reach *r = walk_into;
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 256;
		r->paths = realloc(r->paths, r->cap * sizeof(char *));
		assert_non_null(r->paths);
	}
	r->paths[r->n++] = strdup(path);
	return 0;
}

static bool is_child_of(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && path[n] == '/' && !strchr(path + n + 1, '/');
}

/* As nobody: every path below the two dirs must be out of reach — not opened even as
 * O_PATH, which needs only search rights on the way — bar the socket. A direct child of
 * the run dir (0711: the socket's users pass it) can be named, not entered nor read. */
static int reach_nothing(void *arg)
{
	struct reach *r = arg;
	int bad = 0;
	for (size_t i = 0; i < r->n; i++) {
		const char *p = r->paths[i];
		if (!strcmp(p, r->top[0]) || !strcmp(p, r->top[1]) ||
		    (r->socket && !strcmp(p, r->socket)))
			continue;
		int fd = open(p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno != EACCES && errno != ENOENT) {
				fprintf(stderr, "nobody: open %s: %s\n", p, strerror(errno));
				bad++;
			}
			continue;
		}
		close(fd);
		if (is_child_of(p, r->top[1])) {
			int rd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			struct stat st;
			bool enter = lstat(p, &st) == 0 && S_ISDIR(st.st_mode) &&
				     faccessat(AT_FDCWD, p, X_OK, AT_EACCESS) == 0;
			if (rd < 0 && !enter)
				continue;
			if (rd >= 0)
				close(rd);
		}
		fprintf(stderr, "nobody reaches %s\n", p);
		bad++;
	}
	return bad;
}

/* A daemon, a running sandbox with a live command, a volume, a snapshot, an imported
 * snapshot: then nobody walks the whole state and run trees. Also the cgroups: the
 * sandboxes' directories cannot be listed (their names are sandbox ids). */
static void test_local_user_reaches_nothing_under_state_and_run(void **state)
{
	const char *sd = getenv("SANDLOT_STATE_DIR"), *rd = getenv("SANDLOT_RUN_DIR");
	char *sock = e2e_printf("%s/sandlot.sock", rd);
	e2e_daemon d;
	e2e_daemon_start(&d, sock, true, NULL);
	char *id = e2e_sandlot_ok("create", "--image", "busybox", "-v", "nobodyvol:/data", NULL);
	free(e2e_sandlot_ok("exec", id, "--", "sh", "-c", "echo x > /data/f; echo y > /root/g",
			    NULL));
	free(e2e_sandlot_ok("exec", id, "--", "sh", "-c", "sleep 30 >/dev/null 2>&1 &", NULL));
	char *snap = e2e_sandlot_ok("snapshot", "create", id, "--name", "nobodysnap", NULL);
	char *exp = e2e_printf("%s/snap.tar", e2e_root());
	char *snapid = strtok(snap, " \n");
	e2e_result x;
	assert_int_equal(e2e_sandlot(&x, NULL, 0, "snapshot", "export", snapid, NULL), 0);
	int fd = open(exp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0 && write(fd, x.out, x.out_len) == (ssize_t)x.out_len);
	close(fd);
	e2e_result_free(&x);
	free(e2e_sandlot_ok("snapshot", "import", "nobodyback", exp, NULL));

	struct reach r = {.socket = sock, .top = {sd, rd}};
	walk_into = &r;
	assert_int_equal(nftw(sd, collect, 64, FTW_PHYS), 0);
	assert_int_equal(nftw(rd, collect, 64, FTW_PHYS), 0);
	assert_true(r.n > 50); /* the walk saw the trees, not just their tops */
	int bad = as_nobody(reach_nothing, &r);

	/* The socket: 0660, root's (its users are root's group, as documented). */
	struct stat st;
	assert_int_equal(stat(sock, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0660);
	char *cg = e2e_printf("/sys/fs/cgroup/pids/sandlot");
	if (access(cg, F_OK) != 0) {
		free(cg);
		cg = e2e_printf("/sys/fs/cgroup/sandlot");
	}
	struct reach c = {.top = {"/nonexistent", "/nonexistent"}};
	c.paths = calloc(1, sizeof(char *));
	c.paths[0] = e2e_printf("%s/%s", cg, id);
	c.n = c.cap = 1;
	bad += as_nobody(reach_nothing, &c);
	assert_int_equal(stat(c.paths[0], &st), 0); /* it is there for root */

	e2e_daemon_stop(&d);
	free(e2e_sandlot_ok("rm", id, NULL));
	free(e2e_sandlot_ok("snapshot", "rm", "nobodysnap", NULL));
	free(e2e_sandlot_ok("snapshot", "rm", "nobodyback", NULL));
	free(e2e_sandlot_ok("volume", "rm", "nobodyvol", NULL));
	unlink(exp);
	for (size_t i = 0; i < r.n; i++)
		free(r.paths[i]);
	free(r.paths);
	free(c.paths[0]);
	free(c.paths);
	free(cg);
	free(exp);
	free(snap);
	free(id);
	free(sock);
	if (bad)
		fail_msg("uid %d reached paths it must not (listed above)", NOBODY);
}

int main(void)
{
	if (getenv("E2E_PRINT_EUID")) {
		printf("euid %d\n", (int)geteuid());
		return 0;
	}
	const struct CMUnitTest tests[] = {
		E2E_TEST(test_setuid_file_of_an_image_is_no_way_to_root),
		E2E_TEST(test_local_user_reaches_nothing_under_state_and_run),
	};
	return e2e_run_tests(tests);
}
