/* common.c — the end-to-end harness behind common.h: environment set-up and forced
 * clean-up, a poll-driven command runner, host snapshots for leak checks, and the one
 * way tests start a daemon and talk HTTP to it. */
#include "common.h"

#include <archive.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "fsutil.h"
#include "launch.h"
#include "net.h"

#define E2E_MAX_ARGS	  128
#define E2E_EXIT_GRACE_MS 2000
/* A `run --network`'s releaser keeps the host side up 1 s after the last network. */
#define E2E_LEAK_RETRY_MS 4000
#define CGROUP_ROOT	  "/sys/fs/cgroup"

/* ---- small helpers ---------------------------------------------------------------------- */

static void *e2e_checked(void *p)
{
	if (!p) {
		fprintf(stderr, "e2e: out of memory\n");
		abort();
	}
	return p;
}

static char *e2e_strdup(const char *s)
{
	return e2e_checked(strdup(s));
}

char *e2e_printf(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;

	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return e2e_checked(n < 0 ? NULL : s);
}

int64_t e2e_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void e2e_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

bool e2e_contains(const char *haystack, const char *needle)
{
	return haystack && needle && strstr(haystack, needle) != NULL;
}

long e2e_proc_kib(pid_t pid, const char *field)
{
	char *p = e2e_printf("/proc/%d/status", (int)pid);
	char *st = e2e_read_file(p);
	if (!st)
		fail_msg("%s: %s", p, strerror(errno));
	const char *v = strstr(st, field);
	if (!v)
		fail_msg("%s: no %s", p, field);
	long kib = atol(v + strlen(field));
	free(st);
	free(p);
	return kib;
}

/* An idle init off the stack exec made (init/init.c): its stack below the vdso and
 * nothing mapped above (the old stack was, far above it: 36-40 KiB of page tables
 * against 28-32 now, docs/bench.md), and /proc still shows its command line and
 * environment, moved with it. */
void e2e_assert_init_off_exec_stack(pid_t pid)
{
	char *p = e2e_printf("/proc/%d/maps", (int)pid);
	char *maps = e2e_read_file(p);
	if (!maps)
		fail_msg("%s: %s", p, strerror(errno));
	free(p);
	unsigned long long vdso = 0, stack = 0, top = 0;
	char *save = NULL;
	for (char *line = strtok_r(maps, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long lo, hi;
		if (sscanf(line, "%llx-%llx", &lo, &hi) != 2 || lo >= 0xffff800000000000ull)
			continue; /* [vsyscall]: the kernel's */
		if (strstr(line, "[vdso]"))
			vdso = hi;
		if (strstr(line, "[stack]"))
			stack = hi;
		top = hi > top ? hi : top;
	}
	free(maps);
	assert_true(vdso != 0 && stack != 0);
	assert_true(stack < vdso);
	assert_true(top == vdso);
	p = e2e_printf("/proc/%d/cmdline", (int)pid);
	size_t len = 0;
	char *cmd = e2e_read_file_len(p, &len);
	free(p);
	assert_non_null(cmd);
	assert_int_equal(len, sizeof("sandlot-init"));
	assert_string_equal(cmd, "sandlot-init");
	free(cmd);
	p = e2e_printf("/proc/%d/environ", (int)pid);
	char *env = e2e_read_file_len(p, &len);
	free(p);
	assert_non_null(env);
	assert_true((len > 21 && !memcmp(env, "SANDLOT_DEFAULT_USER=", 21)) ||
		    memmem(env, len, "\0SANDLOT_DEFAULT_USER=", 22));
	free(env);
}

void e2e_proc_hwm_reset(pid_t pid)
{
	char *p = e2e_printf("/proc/%d/clear_refs", (int)pid);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "5", 1) != 1)
		fail_msg("%s: %s", p, strerror(errno));
	close(fd);
	free(p);
}

char *e2e_read_file(const char *path)
{
	return e2e_read_file_len(path, NULL);
}

char *e2e_read_file_len(const char *path, size_t *out_len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0, cap = 4096;
	_cleanup_free_ char *buf = NULL;

	if (fd < 0)
		return NULL;
	buf = e2e_checked(malloc(cap));
	for (;;) {
		if (len + 1 >= cap)
			buf = e2e_checked(realloc(buf, cap *= 2));
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return NULL;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (out_len)
		*out_len = len;
	return steal_ptr(&buf);
}

char *e2e_probe_bytes(size_t *len)
{
	_cleanup_free_ char *path = e2e_build_path("probe");
	char *buf = e2e_read_file_len(path, len);
	if (!buf)
		fail_msg("e2e: read %s: %s (run `make`)", path, strerror(errno));
	return buf;
}

char *e2e_probe_field(const char *probe_out, const char *name)
{
	size_t name_len = strlen(name);

	for (const char *line = probe_out; line && *line;) {
		const char *end = strchrnul(line, '\n');
		if ((size_t)(end - line) > name_len && strncmp(line, name, name_len) == 0 &&
		    line[name_len] == ' ')
			return e2e_checked(strndup(line + name_len + 1, end - line - name_len - 1));
		line = *end ? end + 1 : end;
	}
	return NULL;
}

/* A growable list of owned strings. */
typedef struct strv {
	char **v;
	size_t n, cap;
} strv;

static void strv_push(strv *s, char *str)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->v = e2e_checked(realloc(s->v, s->cap * sizeof(*s->v)));
	}
	s->v[s->n++] = str;
}

static void strv_free(strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	*s = (strv){0};
}

static int strv_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool path_is_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* ---- environment ------------------------------------------------------------------------ */

const char *e2e_root(void)
{
	return getenv("SANDLOT_E2E_ROOT");
}

char *e2e_build_path(const char *name)
{
	const char *build = getenv("SANDLOT_BUILD");

	return e2e_printf("%s/%s", build ? build : "build", name);
}

void e2e_runtime_env(void)
{
	_cleanup_free_ char *init = e2e_build_path("sandlot-init");
	char prof[PATH_MAX];
	if (!realpath("seccomp/default.json", prof))
		fail_msg("run from the source tree (seccomp/default.json)");
	setenv("SANDLOT_INIT", init, 1);
	setenv("SANDLOT_SECCOMP_PROFILE", prof, 1);
}

static bool sandlot_available(void)
{
	_cleanup_free_ char *path = e2e_build_path("sandlot");

	return access(path, X_OK) == 0;
}

/* ---- running commands ------------------------------------------------------------------- */

typedef struct run_buf {
	char *data;
	size_t len, cap;
} run_buf;

/* Reads what is there without blocking; closes *fd at end of file or on error. */
static void run_drain(int *fd, run_buf *b)
{
	for (;;) {
		if (b->cap - b->len < 65536) {
			b->cap = b->cap ? b->cap * 2 : 131072;
			b->data = e2e_checked(realloc(b->data, b->cap));
		}
		ssize_t n = read(*fd, b->data + b->len, b->cap - b->len - 1);
		if (n > 0) {
			b->len += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		close(*fd);
		*fd = -1;
		return;
	}
}

static char *run_buf_finish(run_buf *b, size_t *len)
{
	if (!b->data)
		b->data = e2e_checked(calloc(1, 1));
	b->data[b->len] = '\0';
	*len = b->len;
	return b->data;
}

static void run_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void run_child(const int *inp, const int *outp, const int *errp, const sigset_t *mask,
		      char *const argv[])
{
	int in = inp[0] >= 0 ? inp[0] : open("/dev/null", O_RDONLY);

	sigprocmask(SIG_SETMASK, mask, NULL);
	if (in < 0 || dup2(in, 0) < 0 || dup2(outp[1], 1) < 0 || dup2(errp[1], 2) < 0)
		_exit(125);
	execv(argv[0], argv);
	dprintf(2, "e2e: cannot execute %s: %s\n", argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

/* The parent's side: feed stdin, collect stdout/stderr, and watch the child through a pidfd
 * so the safety kill can only ever reach the process we started. */
static void run_loop(e2e_result *r, int pidfd, int *in_fd, const char *in, size_t in_len,
		     int *out_fd, int *err_fd, int timeout_ms, const char *what)
{
	run_buf out = {0}, err = {0};
	int64_t deadline = e2e_now_ms() + timeout_ms, grace_end = 0;
	bool exited = false, killed = false;
	size_t in_off = 0;

	if (*in_fd >= 0 && in_len == 0)
		run_close(in_fd);
	while (!exited || *out_fd >= 0 || *err_fd >= 0) {
		int64_t now = e2e_now_ms();
		if (!exited && !killed && now >= deadline) {
			fprintf(stderr, "e2e: %s still running after %d ms: SIGKILL\n", what,
				timeout_ms);
			syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
			killed = r->timed_out = true;
		}
		if (exited && now >= grace_end) {
			fprintf(stderr,
				"e2e: %s exited but a descendant still holds its stdout/stderr; "
				"stopped reading\n",
				what);
			break;
		}
		struct pollfd p[4] = {{pidfd, POLLIN, 0},
				      {*in_fd, POLLOUT, 0},
				      {*out_fd, POLLIN, 0},
				      {*err_fd, POLLIN, 0}};
		int64_t wait = exited ? grace_end - now : killed ? 1000 : deadline - now;
		if (exited)
			p[0].fd = -1;
		if (poll(p, 4, (int)wait) < 0) {
			if (errno == EINTR)
				continue;
			fail_msg("e2e: poll while running %s: %s", what, strerror(errno));
		}
		if (p[0].revents) {
			exited = true;
			grace_end = e2e_now_ms() + E2E_EXIT_GRACE_MS;
		}
		if (p[1].revents) {
			ssize_t n = write(*in_fd, in + in_off, in_len - in_off);
			if (n > 0)
				in_off += (size_t)n;
			if ((n < 0 && errno != EAGAIN && errno != EINTR) || in_off == in_len)
				run_close(in_fd);
		}
		if (p[2].revents)
			run_drain(out_fd, &out);
		if (p[3].revents)
			run_drain(err_fd, &err);
	}
	r->out = run_buf_finish(&out, &r->out_len);
	r->err = run_buf_finish(&err, &r->err_len);
}

int e2e_run(e2e_result *r, const char *stdin_data, size_t stdin_len, int timeout_ms,
	    char *const argv[])
{
	int inp[2] = {-1, -1}, outp[2], errp[2], status;
	sigset_t pipe_set, old_mask;
	struct timespec zero = {0, 0};

	memset(r, 0, sizeof(*r));
	assert_non_null(argv[0]);
	if ((stdin_data && pipe2(inp, O_CLOEXEC) != 0) || pipe2(outp, O_CLOEXEC) != 0 ||
	    pipe2(errp, O_CLOEXEC) != 0)
		fail_msg("e2e: pipe for %s: %s", argv[0], strerror(errno));
	/* A child that stops reading stdin must not kill the test with SIGPIPE. */
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigprocmask(SIG_BLOCK, &pipe_set, &old_mask);

	pid_t pid = fork();
	if (pid < 0)
		fail_msg("e2e: fork for %s: %s", argv[0], strerror(errno));
	if (pid == 0)
		run_child(inp, outp, errp, &old_mask, argv);
	run_close(&inp[0]);
	run_close(&outp[1]);
	run_close(&errp[1]);
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		fail_msg("e2e: pidfd_open %d: %s", pid, strerror(errno));
	for (int i = 0; i < 3; i++) {
		int fd = i == 0 ? inp[1] : i == 1 ? outp[0] : errp[0];
		if (fd >= 0)
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	}
	run_loop(r, pidfd, &inp[1], stdin_data, stdin_len, &outp[0], &errp[0], timeout_ms, argv[0]);
	run_close(&inp[1]);
	run_close(&outp[0]);
	run_close(&errp[0]);
	close(pidfd);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			fail_msg("e2e: waitpid %d: %s", pid, strerror(errno));
	while (sigtimedwait(&pipe_set, NULL, &zero) > 0)
		;
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return r->status;
}

int e2e_sandlotv(e2e_result *r, const char *stdin_data, size_t stdin_len, char *const argv[])
{
	char *full[E2E_MAX_ARGS + 2];
	_cleanup_free_ char *path = e2e_build_path("sandlot");
	size_t n = 0;

	full[n++] = path;
	for (; argv[n - 1]; n++) {
		assert_true(n <= E2E_MAX_ARGS);
		full[n] = argv[n - 1];
	}
	full[n] = NULL;
	return e2e_run(r, stdin_data, stdin_len, E2E_SANDLOT_TIMEOUT_MS, full);
}

static void collect_args(char **argv, const char *arg, va_list ap)
{
	size_t n = 0;

	for (; arg; arg = va_arg(ap, const char *)) {
		assert_true(n < E2E_MAX_ARGS);
		argv[n++] = (char *)arg;
	}
	argv[n] = NULL;
}

int e2e_sandlot(e2e_result *r, const char *stdin_data, size_t stdin_len, const char *arg, ...)
{
	char *argv[E2E_MAX_ARGS + 1];
	va_list ap;

	va_start(ap, arg);
	collect_args(argv, arg, ap);
	va_end(ap);
	return e2e_sandlotv(r, stdin_data, stdin_len, argv);
}

void e2e_result_free(e2e_result *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

static char *e2e_trim(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	return e2e_checked(strndup(s, n));
}

char *e2e_sandlot_ok(const char *arg, ...)
{
	char *argv[E2E_MAX_ARGS + 1];
	char line[1024] = "";
	e2e_result r;
	va_list ap;

	va_start(ap, arg);
	collect_args(argv, arg, ap);
	va_end(ap);
	e2e_sandlotv(&r, NULL, 0, argv);
	if (r.status != 0) {
		for (size_t i = 0; argv[i]; i++)
			snprintf(line + strlen(line), sizeof(line) - strlen(line), " %s", argv[i]);
		print_error("e2e: `sandlot%s` exited %d\nstdout: %s\nstderr: %s\n", line, r.status,
			    r.out, r.err);
		e2e_result_free(&r);
		fail();
	}
	char *out = e2e_trim(r.out);
	e2e_result_free(&r);
	return out;
}

int e2e_sh(e2e_result *r, const char *id, const char *line)
{
	return e2e_sandlot(r, NULL, 0, "exec", id, "--", "sh", "-c", line, NULL);
}

char *e2e_net_field(const char *id, const char *key)
{
	char *js = e2e_sandlot_ok("inspect", id, NULL);
	cJSON *o = cJSON_Parse(js);
	assert_non_null(o);
	const cJSON *v =
	    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "network"), key);
	char *s = cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
	cJSON_Delete(o);
	free(js);
	return s;
}

char *e2e_sh_ok(const char *id, const char *line)
{
	e2e_result r;
	int st = e2e_sh(&r, id, line);
	if (st != 0)
		fail_msg("`%s` in %s exited %d: %s", line, id, st, r.err);
	char *out = e2e_checked(strdup(r.out));
	e2e_result_free(&r);
	size_t n = strlen(out);
	while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
		out[--n] = '\0';
	return out;
}

/* ---- host state: mounts, processes, cgroups, sandboxes ----------------------------------- */

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static char *mountinfo_unescape(const char *s)
{
	char *out = e2e_checked(malloc(strlen(s) + 1)), *o = out;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
	return out;
}

/* Mount points (unescaped) into points, "mount POINT TYPE SOURCE" into lines; either NULL. */
static void mounts_read(strv *points, strv *lines)
{
	_cleanup_free_ char *info = e2e_read_file("/proc/self/mountinfo");
	char *save = NULL;

	assert_non_null(info);
	for (char *line = strtok_r(info, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *fields[64], *fsave = NULL;
		size_t n = 0, dash = 0;
		for (char *f = strtok_r(line, " ", &fsave); f && n < 64;
		     f = strtok_r(NULL, " ", &fsave)) {
			if (!dash && n >= 6 && strcmp(f, "-") == 0)
				dash = n;
			fields[n++] = f;
		}
		if (!dash || dash + 2 >= n)
			continue;
		_cleanup_free_ char *point = mountinfo_unescape(fields[4]);
		if (lines)
			strv_push(lines, e2e_printf("mount %s %s %s", point, fields[dash + 1],
						    fields[dash + 2]));
		if (points)
			strv_push(points, steal_ptr(&point));
	}
}

typedef struct proc_info {
	pid_t pid, ppid;
	char comm[64];
} proc_info;

static size_t procs_read(proc_info **out)
{
	_cleanup_closedir_ DIR *d = opendir("/proc");
	size_t n = 0, cap = 256;
	proc_info *p = e2e_checked(malloc(cap * sizeof(*p)));
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d))) {
		char path[64];
		pid_t pid = (pid_t)strtol(de->d_name, NULL, 10);
		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		_cleanup_free_ char *stat = e2e_read_file(path);
		char *open_paren = stat ? strchr(stat, '(') : NULL;
		char *close_paren = stat ? strrchr(stat, ')') : NULL;
		if (!open_paren || !close_paren || close_paren < open_paren)
			continue; /* gone meanwhile */
		if (n == cap)
			p = e2e_checked(realloc(p, (cap *= 2) * sizeof(*p)));
		p[n].pid = pid;
		snprintf(p[n].comm, sizeof(p[n].comm), "%.*s", (int)(close_paren - open_paren - 1),
			 open_paren + 1);
		char state;
		if (sscanf(close_paren + 1, " %c %d", &state, &p[n].ppid) != 2)
			continue;
		n++;
	}
	*out = p;
	return n;
}

static bool procs_descends_from(const proc_info *p, size_t n, pid_t pid, pid_t ancestor)
{
	for (int depth = 0; depth < 4096 && pid > 1; depth++) {
		size_t i = 0;
		while (i < n && p[i].pid != pid)
			i++;
		if (i == n)
			return false;
		pid = p[i].ppid;
		if (pid == ancestor)
			return true;
	}
	return false;
}

/* Sandbox ids are the directory names under $STATE/sandboxes. */
static void sandbox_ids_read(strv *ids)
{
	const char *state = getenv("SANDLOT_STATE_DIR");
	_cleanup_free_ char *dir = state ? e2e_printf("%s/sandboxes", state) : NULL;
	_cleanup_closedir_ DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			strv_push(ids, e2e_strdup(de->d_name));
}

static bool proc_in_sandboxes(pid_t pid, const strv *ids)
{
	char path[64];

	if (!ids->n)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	_cleanup_free_ char *cg = e2e_read_file(path);
	for (size_t i = 0; cg && i < ids->n; i++) {
		_cleanup_free_ char *needle = e2e_printf("/sandlot/%s", ids->v[i]);
		for (const char *at = strstr(cg, needle); at; at = strstr(at + 1, needle)) {
			char next = at[strlen(needle)];
			if (next == '\0' || next == '\n' || next == '/')
				return true;
		}
	}
	return false;
}

/* A live daemon's spare init (runtime/launch.c, sl_launch_spare): in a cgroup
 * sandlot/.spare-<daemon pid>-..., of a daemon still running. Like its spare cgroups, it is
 * the daemon's state, not a test's leak (every create replaces the one it took): it is
 * checked once the daemon has stopped, when it must be gone with it. */
static bool proc_spare_of_live_daemon(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	_cleanup_free_ char *cg = e2e_read_file(path);
	const char *at = cg ? strstr(cg, "/sandlot/.spare-") : NULL;
	if (!at)
		return false;
	int owner = atoi(at + strlen("/sandlot/.spare-"));
	return owner > 0 && (kill(owner, 0) == 0 || errno != ESRCH);
}

/* Ours: descended from the test process (a subreaper, so orphans stay descendants) or in a
 * cgroup of one of this root's sandboxes. */
static size_t procs_ours(pid_t **out, const strv *ids)
{
	proc_info *p = NULL;
	size_t n = procs_read(&p), k = 0;
	pid_t self = getpid();

	*out = e2e_checked(malloc((n + 1) * sizeof(**out)));
	for (size_t i = 0; i < n; i++)
		if (p[i].pid != self &&
		    (procs_descends_from(p, n, p[i].pid, self) ||
		     proc_in_sandboxes(p[i].pid, ids)) &&
		    !proc_spare_of_live_daemon(p[i].pid))
			(*out)[k++] = p[i].pid;
	free(p);
	return k;
}

static bool cmdline_has(pid_t pid, const char *needle)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t len = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (len <= 0)
		return false;
	for (ssize_t i = 0; i < len; i++)
		buf[i] = buf[i] ? buf[i] : ' ';
	buf[len] = '\0';
	return strstr(buf, needle) != NULL;
}

static int proc_ppid(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	_cleanup_free_ char *stat = e2e_read_file(path);
	const char *rp = stat ? strrchr(stat, ')') : NULL;
	int ppid = 0;
	if (!rp || sscanf(rp + 1, " %*c %d", &ppid) != 1)
		return 0;
	return ppid;
}

/* A code runner's child started ahead for its next call (runtime/code_runner.py: a
 * forked Python child, or a node): a new pid after every call, so its line names what it
 * is, not its pid (1). The waiting node's esbuild, which it starts ~0.1 s after its own
 * start, is left out of the lines (2). The runner itself (init's child) keeps its pid. */
static int proc_is_runner_child(pid_t pid)
{
	int ppid = proc_ppid(pid);
	if (ppid <= 1)
		return 0;
	if (cmdline_has(ppid, "code_runner.py"))
		return 1;
	int gpid = proc_ppid(ppid);
	return gpid > 1 && cmdline_has(ppid, "process.dlopen") &&
		       cmdline_has(gpid, "code_runner.py")
		   ? 2
		   : 0;
}

static void procs_lines(strv *lines, const strv *ids)
{
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = procs_ours(&pids, ids);

	for (size_t i = 0; i < n; i++) {
		char path[64], exe[512] = "?", comm_path[64];
		snprintf(path, sizeof(path), "/proc/%d/exe", pids[i]);
		ssize_t len = readlink(path, exe, sizeof(exe) - 1);
		exe[len > 0 ? len : 1] = '\0';
		snprintf(comm_path, sizeof(comm_path), "/proc/%d/comm", pids[i]);
		_cleanup_free_ char *comm = e2e_read_file(comm_path);
		if (!comm) /* gone since it was listed (a killed call's node ending) */
			continue;
		comm[strcspn(comm, "\n")] = '\0';
		int runner = proc_is_runner_child(pids[i]);
		if (runner == 2)
			continue;
		if (runner) {
			/* neither comm nor exe: a node's is python3's until it has exec'd; and
			 * one line per runner, which keeps one or two (node's) waiting */
			bool seen = false;
			for (size_t j = 0; j < i && !seen; j++)
				seen = proc_ppid(pids[j]) == proc_ppid(pids[i]) &&
				       proc_is_runner_child(pids[j]) == 1;
			if (!seen)
				strv_push(lines, strdup("process (a code runner's waiting child)"));
		} else {
			strv_push(lines, e2e_printf("process %d %s %s", pids[i], comm, exe));
		}
	}
}

/* The runtime keeps <hierarchy>/sandlot as the parent of all sandboxes, by design. */
static bool cgroup_is_sandlot_parent(const char *path)
{
	const char *rest = path + strlen(CGROUP_ROOT "/");
	const char *slash = strchr(rest, '/');

	return strcmp(rest, "sandlot") == 0 || (slash && strcmp(slash + 1, "sandlot") == 0);
}

static void cgroups_walk(strv *lines, const char *dir, int depth)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;

	while (d && depth < 32 && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		_cleanup_free_ char *path = e2e_printf("%s/%s", dir, de->d_name);
		if (strstr(path, "sandlot") && !cgroup_is_sandlot_parent(path))
			strv_push(lines, e2e_printf("cgroup %s", path));
		cgroups_walk(lines, path, depth + 1);
	}
}

/* The bridge a running daemon holds (docs/network.md: `sandlot serve` keeps the host
 * side up while it runs), or NULL. Like the daemon's socket, it is the daemon's state,
 * not a test's leak: it is checked once the daemon has stopped (and by test_net). */
static const char *held_bridge(void)
{
	const char *state = getenv("SANDLOT_STATE_DIR");
	if (!state)
		return NULL;
	/* The runtime's own answer (runtime/nethold.c), not a copy of its record format. */
	sl_config cfg = {0};
	snprintf(cfg.state_dir, sizeof(cfg.state_dir), "%s", state);
	if (!net_held(&cfg))
		return NULL;
	const char *br = getenv("SANDLOT_NET_BRIDGE");
	return br && *br ? br : "sandlot0";
}

/* A live daemon's spare network's veth ("slv" + the address in hex, its lease held by
 * "spn_<daemon pid>_<start>_<n>": runtime/spares.c): the daemon's, as its held bridge,
 * gone when it stops (checked by test_net). */
static bool spare_netif_of_live_daemon(const char *name)
{
	unsigned a;
	const char *state = getenv("SANDLOT_STATE_DIR");
	if (!state || strlen(name) != 11 || sscanf(name, "slv%8x", &a) != 1)
		return false;
	_cleanup_free_ char *p = e2e_printf("%s/leases/%u.%u.%u.%u", state, a >> 24,
					     (a >> 16) & 255, (a >> 8) & 255, a & 255);
	_cleanup_free_ char *owner = e2e_read_file(p);
	int pid = 0;
	unsigned long long start = 0;
	return owner && sscanf(owner, "spn_%d_%llu_", &pid, &start) == 2 && pid > 0 &&
	       proc_start_time(pid) == start;
}

static void netifs_lines(strv *lines, const char *held)
{
	_cleanup_closedir_ DIR *d = opendir("/sys/class/net");
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.' && !(held && !strcmp(de->d_name, held)) &&
		    !spare_netif_of_live_daemon(de->d_name))
			strv_push(lines, e2e_printf("netif %s", de->d_name));
}

/* IPv4 routes of the main table (a bridge or veth left behind leaves its route). */
static void routes_lines(strv *lines, const char *held)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/net/route", "re");
	char line[512], ifc[64];
	unsigned dst, gw, mask;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %x %x %*x %*d %*d %*d %x", ifc, &dst, &gw, &mask) == 4 &&
		    !(held && !strcmp(ifc, held)))
			strv_push(lines,
				  e2e_printf("route %s %08x/%08x via %08x", ifc, dst, mask, gw));
}

/* Attached loop devices as "NAME\tBACKING" into out. */
static void loops_read(strv *out)
{
	_cleanup_closedir_ DIR *d = opendir("/sys/block");
	struct dirent *de;

	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, "loop", 4) != 0)
			continue;
		_cleanup_free_ char *path =
		    e2e_printf("/sys/block/%s/loop/backing_file", de->d_name);
		_cleanup_free_ char *backing = e2e_read_file(path);
		if (!backing)
			continue;
		backing[strcspn(backing, "\n")] = '\0';
		strv_push(out, e2e_printf("%s\t%s", de->d_name, backing));
	}
}

/* "terminated" is a tombstone; anything else (or an unreadable record) is alive. */
static char *sandbox_status(const char *id)
{
	_cleanup_free_ char *path =
	    e2e_printf("%s/sandboxes/%s/sandbox.json", getenv("SANDLOT_STATE_DIR"), id);
	_cleanup_free_ char *text = e2e_read_file(path);
	cJSON *json = text ? cJSON_Parse(text) : NULL;
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(json, "status");
	char *out = e2e_strdup(cJSON_IsString(status) ? status->valuestring : "?");

	cJSON_Delete(json);
	return out;
}

static void sandboxes_lines(strv *lines, const strv *ids)
{
	for (size_t i = 0; i < ids->n; i++) {
		_cleanup_free_ char *status = sandbox_status(ids->v[i]);
		if (strcmp(status, "terminated") != 0)
			strv_push(lines, e2e_printf("sandbox %s %s", ids->v[i], status));
	}
}

/* Files (not directories: an empty directory kept for reuse is no leak) under $RUN. */
static void run_files_walk(strv *lines, const char *base, const char *rel)
{
	_cleanup_free_ char *dir = rel[0] ? e2e_printf("%s/%s", base, rel) : e2e_strdup(base);
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		_cleanup_free_ char *sub =
		    rel[0] ? e2e_printf("%s/%s", rel, de->d_name) : e2e_strdup(de->d_name);
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (S_ISDIR(st.st_mode))
			run_files_walk(lines, base, sub);
		else
			strv_push(lines, e2e_printf("run-file %s", sub));
	}
}

/* A live sandbox's log space (the tmpfs its first execution mounts on its execs dir) is
 * its own state, as its run files are: it goes with the sandbox, and a sandbox a test
 * leaves behind is reported by its own line. */
static bool live_log_space(const char *line, const strv *ids)
{
	const char *run = getenv("SANDLOT_RUN_DIR");
	if (!run || !strstr(line, " tmpfs sandlot-logs"))
		return false;
	for (size_t i = 0; i < ids->n; i++) {
		_cleanup_free_ char *pfx =
		    e2e_printf("mount %s/sandboxes/%s/execs ", run, ids->v[i]);
		if (strncmp(line, pfx, strlen(pfx)) == 0) {
			_cleanup_free_ char *status = sandbox_status(ids->v[i]);
			return strcmp(status, "terminated") != 0;
		}
	}
	return false;
}

/* What the runtime keeps standing, not a test's leak. The staging mount namespace
 * (runtime/launch.c, stage_ns_open): made by the first launch
 * from nothing and kept for every later one, as the store stays mounted. It is the
 * runtime's, not a test's leak: the group's teardown unmounts it with the rest under the
 * root. Its mounts and files are under $RUN/stage. */
static bool standing_stage(const char *line)
{
	const char *run = getenv("SANDLOT_RUN_DIR");
	if (!run)
		return false;
	_cleanup_free_ char *mnt = e2e_printf("mount %s/stage ", run);
	_cleanup_free_ char *sub = e2e_printf("mount %s/stage/", run);
	if (strncmp(line, mnt, strlen(mnt)) == 0 || strncmp(line, sub, strlen(sub)) == 0 ||
	    strncmp(line, "run-file stage/", 15) == 0)
		return true;
	/* The image store's nosuid,nodev bind on itself (image_store_secure): made by the
	 * first import or context open, kept as the store is. */
	const char *state = getenv("SANDLOT_STATE_DIR");
	_cleanup_free_ char *img = state ? e2e_printf("mount %s/images ", state) : NULL;
	return img && strncmp(line, img, strlen(img)) == 0;
}

/* ---- snapshots --------------------------------------------------------------------------- */

struct e2e_snapshot {
	strv lines; /* sorted */
};

e2e_snapshot *e2e_snapshot_take(void)
{
	e2e_snapshot *s = e2e_checked(calloc(1, sizeof(*s)));
	strv ids = {0}, loops = {0};
	const char *run = getenv("SANDLOT_RUN_DIR");

	sandbox_ids_read(&ids);
	strv mounts = {0};
	mounts_read(NULL, &mounts);
	for (size_t i = 0; i < mounts.n; i++) {
		if (live_log_space(mounts.v[i], &ids))
			free(mounts.v[i]);
		else
			strv_push(&s->lines, mounts.v[i]);
	}
	free(mounts.v);
	cgroups_walk(&s->lines, CGROUP_ROOT, 0);
	const char *held = held_bridge();
	netifs_lines(&s->lines, held);
	routes_lines(&s->lines, held);
	loops_read(&loops);
	for (size_t i = 0; i < loops.n; i++)
		strv_push(&s->lines, e2e_printf("loop %s", loops.v[i]));
	procs_lines(&s->lines, &ids);
	if (getenv("SANDLOT_STATE_DIR"))
		sandboxes_lines(&s->lines, &ids);
	if (run)
		run_files_walk(&s->lines, run, "");
	size_t kept = 0;
	for (size_t i = 0; i < s->lines.n; i++)
		if (standing_stage(s->lines.v[i]))
			free(s->lines.v[i]);
		else
			s->lines.v[kept++] = s->lines.v[i];
	s->lines.n = kept;
	strv_free(&ids);
	strv_free(&loops);
	qsort(s->lines.v, s->lines.n, sizeof(char *), strv_cmp);
	return s;
}

void e2e_snapshot_free(e2e_snapshot *s)
{
	if (!s)
		return;
	strv_free(&s->lines);
	free(s);
}

/* A merge of two sorted lists (duplicates count: two mounts on one point are two). */
char *e2e_snapshot_diff(const e2e_snapshot *before, const e2e_snapshot *after)
{
	char *out = NULL;
	size_t len = 0, i = 0, j = 0;
	FILE *f = e2e_checked(open_memstream(&out, &len));

	while (i < before->lines.n || j < after->lines.n) {
		int c = i == before->lines.n  ? 1
			: j == after->lines.n ? -1
					      : strcmp(before->lines.v[i], after->lines.v[j]);
		if (c < 0)
			fprintf(f, "- %s\n", before->lines.v[i++]);
		else if (c > 0)
			fprintf(f, "+ %s\n", after->lines.v[j++]);
		else
			i++, j++;
	}
	fclose(f);
	if (len == 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* The test process is a subreaper: exited orphans become our zombies until reaped. */
static void reap_zombies(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static void remove_sandbox(const char *id)
{
	e2e_result r;

	if (e2e_sandlot(&r, NULL, 0, "rm", "-f", id, NULL) != 0)
		fprintf(stderr, "e2e: clean-up `sandlot rm -f %s` exited %d: %s\n", id, r.status,
			r.err);
	e2e_result_free(&r);
}

/* Remove sandboxes the diff shows as appeared, so one failing test does not taint the next. */
static void remove_new_sandboxes(const char *diff)
{
	if (!sandlot_available())
		return;
	for (const char *at = strstr(diff, "+ sandbox "); at; at = strstr(at + 1, "+ sandbox ")) {
		_cleanup_free_ char *id = e2e_checked(strndup(at + 10, strcspn(at + 10, " \n")));
		remove_sandbox(id);
	}
}

static char *leak_check(const e2e_snapshot *before)
{
	int64_t give_up = e2e_now_ms() + E2E_LEAK_RETRY_MS;
	char *diff;

	for (;;) {
		reap_zombies();
		e2e_snapshot *after = e2e_snapshot_take();
		diff = e2e_snapshot_diff(before, after);
		e2e_snapshot_free(after);
		if (!diff || e2e_now_ms() >= give_up)
			break;
		free(diff);
		e2e_sleep_ms(50);
	}
	if (diff) {
		/* Their inits become our zombies (we are the subreaper): reap them here, or
		 * the next test's "before" lists them and its check sees them vanish. */
		remove_new_sandboxes(diff);
		reap_zombies();
	}
	return diff;
}

void e2e_assert_no_leaks(const e2e_snapshot *before)
{
	char *diff = leak_check(before);

	if (diff) {
		print_error("e2e: the host changed (+ appeared, - vanished):\n%s", diff);
		free(diff);
		fail();
	}
}

/* A `sandlot run` among our descendants at a test's start: the detached child that
 * frees what a finished `run` used (same argv; it exits right after its record says
 * the release is done). One on its way out (no command line any more: exiting, or a
 * zombie until reap_zombies) counts too. A daemon (`sandlot serve`) does not. */
static bool run_releaser_alive(void)
{
	proc_info *p = NULL;
	size_t n = procs_read(&p);
	pid_t self = getpid();
	bool alive = false;

	for (size_t i = 0; i < n && !alive; i++) {
		if (p[i].pid == self || strcmp(p[i].comm, "sandlot") != 0 ||
		    !procs_descends_from(p, n, p[i].pid, self))
			continue;
		char path[64], argv[256] = "";
		snprintf(path, sizeof(path), "/proc/%d/cmdline", p[i].pid);
		_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t len = fd >= 0 ? read(fd, argv, sizeof(argv) - 1) : 0;
		if (len <= 0) {
			alive = fd >= 0; /* exiting or a zombie; gone if it cannot be opened */
			continue;
		}
		argv[len] = '\0';
		size_t a0 = strlen(argv) + 1;
		alive = a0 < (size_t)len && !strcmp(argv + a0, "run");
	}
	free(p);
	return alive;
}

bool e2e_wait_run_releasers(void)
{
	for (int i = 0; i < 500; i++) {
		/* A zombie child is on its way out: it must not count as the host's state
		 * (a releaser that has exited is one, until reaped here). */
		reap_zombies();
		if (!run_releaser_alive())
			return true;
		e2e_sleep_ms(10);
	}
	return false;
}

int e2e_test_setup(void **state)
{
	/* A release still running (a group setup's `run`, say) ends before the snapshot. */
	e2e_wait_run_releasers();
	*state = e2e_snapshot_take();
	return 0;
}

void (*e2e_on_leak)(void);

int e2e_test_teardown(void **state)
{
	char *diff = leak_check(*state);

	e2e_snapshot_free(*state);
	*state = NULL;
	if (diff) {
		print_error("e2e: the test left the host changed (+ appeared, - vanished):\n%s",
			    diff);
		free(diff);
		if (e2e_on_leak)
			e2e_on_leak();
		fail();
	}
	return 0;
}

/* ---- forced clean-up -------------------------------------------------------------------- */

static void push_live(strv *out, const char *id, const char *status)
{
	if (!status || strcmp(status, "terminated") != 0)
		strv_push(out, e2e_strdup(id));
}

/* Ids of live sandboxes per `sandlot ls --format json`; the state dir if that fails. */
static void live_sandboxes(strv *out)
{
	cJSON *list = NULL, *item;

	if (sandlot_available()) {
		e2e_result r;
		if (e2e_sandlot(&r, NULL, 0, "ls", "--format", "json", NULL) == 0)
			list = cJSON_Parse(r.out);
		e2e_result_free(&r);
	}
	if (!cJSON_IsArray(list)) {
		strv ids = {0};
		sandbox_ids_read(&ids);
		for (size_t i = 0; i < ids.n; i++) {
			_cleanup_free_ char *status = sandbox_status(ids.v[i]);
			push_live(out, ids.v[i], status);
		}
		strv_free(&ids);
		cJSON_Delete(list);
		return;
	}
	cJSON_ArrayForEach(item, list)
	{
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "id");
		const cJSON *status = cJSON_GetObjectItemCaseSensitive(item, "status");
		if (cJSON_IsString(id))
			push_live(out, id->valuestring,
				  cJSON_IsString(status) ? status->valuestring : NULL);
	}
	cJSON_Delete(list);
}

static void write_file(const char *path, const char *text)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd >= 0 && write(fd, text, strlen(text)) < 0)
		fprintf(stderr, "e2e: write %s to %s: %s\n", text, path, strerror(errno));
}

/* Thaw first: a SIGKILL does not land in a frozen v1 cgroup until it thaws. */
static void cgroup_tree_kill(const char *dir)
{
	_cleanup_free_ char *freezer = e2e_printf("%s/freezer.state", dir);
	_cleanup_free_ char *freeze2 = e2e_printf("%s/cgroup.freeze", dir);
	_cleanup_free_ char *kill_file = e2e_printf("%s/cgroup.kill", dir);
	_cleanup_free_ char *procs_path = e2e_printf("%s/cgroup.procs", dir);

	if (access(freezer, F_OK) == 0)
		write_file(freezer, "THAWED");
	if (access(freeze2, F_OK) == 0)
		write_file(freeze2, "0");
	if (access(kill_file, F_OK) == 0)
		write_file(kill_file, "1");
	_cleanup_free_ char *procs = e2e_read_file(procs_path);
	for (char *p = procs; p && *p;) {
		pid_t pid = (pid_t)strtol(p, &p, 10);
		if (pid > 0)
			kill(pid, SIGKILL);
		p += strspn(p, "\n");
	}
}

static void cgroup_tree_remove(const char *dir)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		_cleanup_free_ char *sub = e2e_printf("%s/%s", dir, de->d_name);
		cgroup_tree_remove(sub);
	}
	for (int64_t give_up = e2e_now_ms() + 2000; rmdir(dir) != 0;) {
		if (errno == ENOENT)
			return;
		if (e2e_now_ms() >= give_up) {
			fprintf(stderr, "e2e: cannot remove cgroup %s: %s\n", dir, strerror(errno));
			return;
		}
		cgroup_tree_kill(dir);
		reap_zombies();
		e2e_sleep_ms(20);
	}
}

/* What `rm -f` left behind: processes and cgroups of this root's sandboxes, and our other
 * descendants (everything else we started has returned by now). */
static void kill_leftovers(const strv *ids)
{
	_cleanup_closedir_ DIR *d = opendir(CGROUP_ROOT);
	struct dirent *de;
	strv dirs = {0};

	for (size_t i = 0; i < ids->n; i++)
		strv_push(&dirs, e2e_printf(CGROUP_ROOT "/sandlot/%s", ids->v[i]));
	while (d && (de = readdir(d)))
		for (size_t i = 0; de->d_type == DT_DIR && de->d_name[0] != '.' && i < ids->n; i++)
			strv_push(&dirs,
				  e2e_printf(CGROUP_ROOT "/%s/sandlot/%s", de->d_name, ids->v[i]));
	for (size_t i = 0; i < dirs.n; i++)
		if (access(dirs.v[i], F_OK) == 0) {
			fprintf(stderr, "e2e: clean-up: cgroup %s outlived its sandbox\n",
				dirs.v[i]);
			cgroup_tree_kill(dirs.v[i]);
		}
	/* A removed sandbox's init is reparented to us (the subreaper) and waits here as a
	 * zombie: gone already, not a leftover. */
	reap_zombies();
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = procs_ours(&pids, ids);
	for (size_t i = 0; i < n; i++) {
		fprintf(stderr, "e2e: clean-up: killing leftover process %d\n", pids[i]);
		kill(pids[i], SIGKILL);
	}
	for (int64_t give_up = e2e_now_ms() + 2000; n && e2e_now_ms() < give_up;) {
		reap_zombies();
		free(pids);
		pids = NULL;
		n = procs_ours(&pids, ids);
		e2e_sleep_ms(20);
	}
	for (size_t i = 0; i < dirs.n; i++)
		if (access(dirs.v[i], F_OK) == 0)
			cgroup_tree_remove(dirs.v[i]);
	strv_free(&dirs);
}

static size_t path_depth(const char *p)
{
	size_t n = 0;

	for (; *p; p++)
		n += *p == '/';
	return n;
}

static int mount_deeper_first(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t dx = path_depth(x), dy = path_depth(y);

	return dx != dy ? (dx < dy ? 1 : -1) : strcmp(y, x);
}

/* Deepest first; stacked mounts need several rounds; MNT_DETACH only when a plain unmount
 * keeps failing (something still holds the mount). */
static void unmount_under(const char *root)
{
	for (int round = 0; round < 20; round++) {
		strv points = {0}, mine = {0};
		mounts_read(&points, NULL);
		for (size_t i = 0; i < points.n; i++)
			if (path_is_under(points.v[i], root))
				strv_push(&mine, steal_ptr(&points.v[i]));
		strv_free(&points);
		if (!mine.n) {
			strv_free(&mine);
			return;
		}
		qsort(mine.v, mine.n, sizeof(char *), mount_deeper_first);
		for (size_t i = 0; i < mine.n; i++) {
			if (umount2(mine.v[i], UMOUNT_NOFOLLOW) == 0 || errno == EINVAL)
				continue;
			if (round >= 5 && umount2(mine.v[i], MNT_DETACH | UMOUNT_NOFOLLOW) != 0)
				fprintf(stderr, "e2e: cannot unmount %s: %s\n", mine.v[i],
					strerror(errno));
		}
		strv_free(&mine);
		e2e_sleep_ms(round * 10);
	}
}

/* The store's loop device clears itself on unmount (autoclear); this catches the rest. */
static void detach_loops_under(const char *root)
{
	strv loops = {0};

	loops_read(&loops);
	for (size_t i = 0; i < loops.n; i++) {
		char *tab = strchr(loops.v[i], '\t');
		if (!tab || !path_is_under(tab + 1, root))
			continue;
		*tab = '\0';
		_cleanup_free_ char *dev = e2e_printf("/dev/%s", loops.v[i]);
		_cleanup_close_ int fd = open(dev, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || ioctl(fd, LOOP_CLR_FD, 0) != 0)
			fprintf(stderr, "e2e: cannot detach %s: %s\n", dev, strerror(errno));
	}
	strv_free(&loops);
}

/* fs_remove_tree never follows a symlink nor enters another mount (an unmount that failed). */
static void remove_root(const char *root)
{
	sl_err err = {0};

	if (fs_remove_tree(root, &err) != 0)
		fprintf(stderr, "e2e: clean-up: %s\n", err.msg);
}

/* Everything but the CLI: also used on a stale root left by a crashed run. */
static void cleanup_root(const char *root)
{
	strv ids = {0};

	sandbox_ids_read(&ids);
	kill_leftovers(&ids);
	strv_free(&ids);
	unmount_under(root);
	detach_loops_under(root);
	remove_root(root);
}

void e2e_env_teardown(void)
{
	const char *root_env = e2e_root();
	strv live = {0}, points = {0}, loops = {0};

	if (!root_env)
		return;
	_cleanup_free_ char *root = e2e_strdup(root_env);
	live_sandboxes(&live);
	for (size_t i = 0; i < live.n; i++)
		remove_sandbox(live.v[i]);
	strv_free(&live);
	cleanup_root(root);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	unsetenv("SANDLOT_E2E_ROOT");
	e2e_http_use(NULL, NULL);
	curl_global_cleanup();
	/* The runtime's parent cgroup ("sandlot" in each hierarchy) outlives sandboxes;
	 * remove it when empty, so a test run leaves no cgroup directory behind. rmdir
	 * fails harmlessly while any sandbox (anyone's) still has a cgroup under it. */
	static const char *const parents[] = {"cpu", "cpuacct", "memory", "pids", "freezer", ""};
	for (size_t i = 0; i < sizeof(parents) / sizeof(parents[0]); i++) {
		char p[128];
		snprintf(p, sizeof(p), "/sys/fs/cgroup/%s%ssandlot", parents[i],
			 parents[i][0] ? "/" : "");
		rmdir(p);
	}

	/* Verify: the host must be as before set-up. */
	mounts_read(&points, NULL);
	for (size_t i = 0; i < points.n; i++)
		if (path_is_under(points.v[i], root))
			fail_msg("e2e: teardown left %s mounted", points.v[i]);
	strv_free(&points);
	loops_read(&loops);
	for (size_t i = 0; i < loops.n; i++)
		if (path_is_under(strchr(loops.v[i], '\t') + 1, root))
			fail_msg("e2e: teardown left loop device %s attached", loops.v[i]);
	strv_free(&loops);
	if (access(root, F_OK) == 0)
		fail_msg("e2e: teardown could not remove %s (see messages above)", root);
}

void e2e_env_setup_opts(bool import_busybox)
{
	char root[64], resolved[4096];
	const char *build = getenv("SANDLOT_BUILD");

	snprintf(root, sizeof(root), "/var/tmp/sandlot-e2e-%d", getpid());
	if (!realpath(build ? build : "build", resolved))
		fail_msg("e2e: build directory %s: %s (run from the repository root, or set "
			 "SANDLOT_BUILD)",
			 build ? build : "./build", strerror(errno));
	_cleanup_free_ char *state = e2e_printf("%s/state", root);
	_cleanup_free_ char *run = e2e_printf("%s/run", root);
	setenv("SANDLOT_BUILD", resolved, 1);
	setenv("SANDLOT_E2E_ROOT", root, 1);
	setenv("SANDLOT_STATE_DIR", state, 1);
	setenv("SANDLOT_RUN_DIR", run, 1);
	_cleanup_free_ char *tar = e2e_build_path("images/busybox.tar");
	if (import_busybox && access(tar, R_OK) != 0)
		fail_msg("e2e: %s: %s (run `make images`)", tar, strerror(errno));
	if (access(root, F_OK) == 0) {
		fprintf(stderr, "e2e: removing stale %s\n", root);
		cleanup_root(root);
	}
	if (mkdir(root, 0755) != 0)
		fail_msg("e2e: mkdir %s: %s", root, strerror(errno));
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
		fail_msg("e2e: PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
	/* Here, before any thread: curl_global_init is not thread-safe. */
	curl_global_init(CURL_GLOBAL_ALL);
	if (!import_busybox)
		return;
	/* cmocka skips the group teardown when set-up fails: clean up here before failing. */
	e2e_result r;
	if (e2e_sandlot(&r, NULL, 0, "image", "import", "busybox", tar, NULL) != 0) {
		print_error("e2e: `sandlot image import busybox %s` exited %d: %s\n", tar, r.status,
			    r.err);
		e2e_result_free(&r);
		e2e_env_teardown();
		fail();
	}
	e2e_result_free(&r);
}

void e2e_env_setup(void)
{
	e2e_env_setup_opts(true);
}

void e2e_apply_filter(void)
{
	const char *filter = getenv("E2E_FILTER");

	if (filter && *filter)
		cmocka_set_test_filter(filter);
}

int e2e_group_setup(void **state)
{
	e2e_env_setup();
	return 0;
}

int e2e_group_setup_no_image(void **state)
{
	e2e_env_setup_opts(false);
	return 0;
}

int e2e_group_teardown(void **state)
{
	e2e_env_teardown();
	return 0;
}
/* ---- a daemon ---------------------------------------------------------------------------- */

static int e2e_daemon_seq;

/* A daemon on cgroup v1 makes its spare inits in the background once it serves, and the
 * first one's making probes overlayfs in that spare's run dir (runtime/launch.c,
 * detached_layers): a file of the probe's is there for a moment. Wait until the probe is
 * over (the spare's "empty" dir comes after it), so that no test's snapshot begins with
 * that file and then sees it vanish. No spares (an older kernel): 2 s, then on. */
static void daemon_wait_probe(pid_t pid)
{
	const char *run = getenv("SANDLOT_RUN_DIR");
	if (!run || access("/sys/fs/cgroup/memory", F_OK) != 0)
		return;
	char *p = e2e_printf("%s/sandboxes/.spare-%d-0/empty", run, (int)pid);
	for (int i = 0; i < 200 && access(p, F_OK) != 0; i++)
		usleep(10000);
	free(p);
}

/* Start build/sandlot serve on SOCK (plus loopback TCP when TCP) with EXTRA arguments
 * (NULL-terminated), and wait for its start-up line (and its overlayfs probe). */
void e2e_daemon_start(e2e_daemon *d, const char *sock, bool tcp, const char *const *extra)
{
	char path[256];
	snprintf(path, sizeof(path), "%s", sock); /* SOCK may be d->sock */
	memset(d, 0, sizeof(*d));
	snprintf(d->sock, sizeof(d->sock), "%s", path);
	snprintf(d->out, sizeof(d->out), "%s/serve-%d.out", e2e_root(), e2e_daemon_seq++);
	char *bin = e2e_build_path("sandlot");
	const char *argv[18] = {bin, "serve", "--socket", d->sock, "--preview-port", "0"};
	int n = 6;
	if (tcp) {
		argv[n++] = "--listen";
		argv[n++] = "127.0.0.1:0";
	}
	for (; extra && *extra && n < 17; extra++)
		argv[n++] = *extra;
	argv[n] = NULL;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* A test that dies (a sanitizer's abort) takes its daemon along: left running,
		 * it would hold the host-wide test lock if it inherited it (make's LOCK is
		 * `flock -o`, which keeps it from the suite; a lock taken by hand may not). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int fd = open(d->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	free(bin);
	d->pid = pid;
	for (int i = 0; i < 1000; i++) {
		char *text = e2e_read_file(d->out);
		if (text && strstr(text, "serving the API")) {
			const char *h = strstr(text, "://127.0.0.1:");
			if (h)
				d->port = atoi(h + strlen("://127.0.0.1:"));
			free(text);
			if (tcp)
				assert_true(d->port > 0);
			daemon_wait_probe(pid);
			return;
		}
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid)
			fail_msg("sandlot serve exited at start: %s", text ? text : "");
		free(text);
		usleep(10000);
	}
	fail_msg("sandlot serve did not start in 10 s");
}

/* Wait up to MS for the daemon to exit; its wait status, or -1. */
int e2e_daemon_wait(e2e_daemon *d, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		int st;
		if (waitpid(d->pid, &st, WNOHANG) == d->pid)
			return st;
		usleep(10000);
	}
	return -1;
}

/* SIGTERM, then (after 10 s) SIGKILL; returns the wait status, -1 if it had to be killed. */
int e2e_daemon_halt(e2e_daemon *d)
{
	if (d->pid <= 0)
		return 0;
	kill(d->pid, SIGTERM);
	int st = e2e_daemon_wait(d, 10000);
	if (st < 0) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
	}
	d->pid = 0;
	return st;
}

/* kill -9 and reap: what the daemon leaves behind (its socket, spares, pool) stays. */
void e2e_daemon_kill(e2e_daemon *d)
{
	pid_t pid = d->pid, w;
	if (pid <= 0)
		return;
	d->pid = 0; /* no later halt signals a pid the kernel may have reused */
	kill(pid, SIGKILL);
	while ((w = waitpid(pid, NULL, 0)) < 0 && errno == EINTR)
		;
	if (w != pid)
		fail_msg("e2e: waitpid of the daemon %d: %s", (int)pid, strerror(errno));
}

/* A clean stop: exit 0 soon after SIGTERM, socket removed. */
void e2e_daemon_stop(e2e_daemon *d)
{
	int st = e2e_daemon_halt(d);
	if (st < 0)
		fail_msg("sandlot serve did not stop within 10 s of SIGTERM");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(access(d->sock, F_OK), -1); /* it removed its socket */
}

/* ---- HTTP -------------------------------------------------------------------------------- */

static const e2e_daemon *http_daemon; /* the daemon of requests that name none */
static char http_captures[512];	      /* where responses are recorded, or "" */
static pthread_mutex_t http_capture_lock = PTHREAD_MUTEX_INITIALIZER;

void e2e_http_use(const e2e_daemon *d, const char *captures)
{
	http_daemon = d;
	snprintf(http_captures, sizeof(http_captures), "%s", captures ? captures : "");
}

static size_t http_on_body(char *p, size_t sz, size_t n, void *ud)
{
	e2e_resp *r = ud;
	char *b = realloc(r->body, r->len + sz * n + 1);
	if (!b)
		return 0;
	memcpy(b + r->len, p, sz * n);
	r->body = b;
	r->len += sz * n;
	r->body[r->len] = '\0';
	return sz * n;
}

/* Every header line goes to r->headers; Content-Type and Allow to their own fields too. */
static size_t http_on_header(char *p, size_t sz, size_t n, void *ud)
{
	e2e_resp *r = ud;
	size_t len = sz * n;
	char *h = realloc(r->headers, r->headers_len + len + 1);
	if (!h)
		return 0;
	memcpy(h + r->headers_len, p, len);
	r->headers = h;
	r->headers_len += len;
	r->headers[r->headers_len] = '\0';
	char line[256];
	snprintf(line, sizeof(line), "%.*s", (int)(len < 255 ? len : 255), p);
	line[strcspn(line, "\r\n")] = '\0';
	if (!strncasecmp(line, "Content-Type: ", 14))
		snprintf(r->ctype, sizeof(r->ctype), "%s", line + 14);
	if (!strncasecmp(line, "Allow: ", 7))
		snprintf(r->allow, sizeof(r->allow), "%s", line + 7);
	return len;
}

typedef struct http_chunks {
	const char *p;
	size_t left;
} http_chunks;

static size_t http_on_read(char *buf, size_t sz, size_t n, void *ud)
{
	http_chunks *s = ud;
	size_t k = sz * n < s->left ? sz * n : s->left;
	if (k > 65536)
		k = 65536;
	memcpy(buf, s->p, k);
	s->p += k;
	s->left -= k;
	return k;
}

static size_t http_on_stream(char *buf, size_t sz, size_t n, void *ud)
{
	const e2e_req *q = ud;
	return q->stream(buf, sz * n, q->stream_ud);
}

/* Record a response for the spec check (tests/api/spec_check.py): one JSON line of
 * method, path, status, content type and the JSON body. */
static void http_capture(const e2e_req *q, const e2e_resp *r)
{
	if (!http_captures[0] || r->status == 0 || q->no_capture)
		return;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "method", q->method);
	cJSON_AddStringToObject(o, "path", q->path);
	cJSON_AddNumberToObject(o, "status", r->status);
	cJSON_AddStringToObject(o, "contentType", r->ctype);
	cJSON_AddItemToObject(o, "body",
			      r->json ? cJSON_Duplicate(r->json, 1) : cJSON_CreateNull());
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	pthread_mutex_lock(&http_capture_lock);
	FILE *f = fopen(http_captures, "a");
	if (f) {
		fprintf(f, "%s\n", s);
		fclose(f);
	}
	pthread_mutex_unlock(&http_capture_lock);
	free(s);
}

long e2e_http_q(e2e_resp *r, const e2e_req *q)
{
	memset(r, 0, sizeof(*r));
	const e2e_daemon *d = q->d ? q->d : http_daemon;
	CURL *c = d ? curl_easy_init() : NULL;
	if (!c)
		return 0;
	char url[1024];
	if (q->tcp)
		snprintf(url, sizeof(url), "%s://127.0.0.1:%d%s", q->ca ? "https" : "http", d->port,
			 q->path);
	else
		snprintf(url, sizeof(url), "http://sandlot%s", q->path);
	struct curl_slist *h = curl_slist_append(NULL, "Expect:");
	if (q->auth)
		h = curl_slist_append(h, q->auth);
	if (q->body && !q->chunked)
		h = curl_slist_append(h, "Content-Type: application/json");
	for (const char *const *x = q->headers; x && *x; x++)
		h = curl_slist_append(h, *x);
	http_chunks src = {q->body, q->len};
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (!q->tcp)
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, d->sock);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, q->method);
	if (q->stream) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->stream_len);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, http_on_stream);
		curl_easy_setopt(c, CURLOPT_READDATA, (void *)q);
	} else if (q->chunked) {
		h = curl_slist_append(h, "Transfer-Encoding: chunked");
		curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, http_on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, &src);
	} else if (q->body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, q->body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->len);
	} else if (!strcmp(q->method, "GET")) {
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, http_on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, http_on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, q->timeout_ms ? q->timeout_ms : 120000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (q->ca)
		curl_easy_setopt(c, CURLOPT_CAINFO, q->ca);
	/* The status of an answer that came, also when the transfer failed after it (a
	 * request whose body the server stopped reading); 0 when none came. */
	curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	if (!r->body)
		r->body = calloc(1, 1);
	if (!r->headers)
		r->headers = calloc(1, 1);
	if (strstr(r->ctype, "application/json"))
		r->json = cJSON_Parse(r->body);
	http_capture(q, r);
	return r->status;
}

long e2e_http(e2e_resp *r, const char *method, const char *path, const char *json)
{
	e2e_req q = {.method = method, .path = path, .body = json, .len = json ? strlen(json) : 0};
	return e2e_http_q(r, &q);
}

void e2e_resp_free(e2e_resp *r)
{
	free(r->body);
	free(r->headers);
	cJSON_Delete(r->json);
	memset(r, 0, sizeof(*r));
}

char *e2e_write_archive(const char *name, void (*fill)(struct archive *))
{
	char *path = e2e_printf("%s/%s", e2e_root(), name);
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
	fill(a);
	archive_write_close(a);
	archive_write_free(a);
	return path;
}

/* ---- a daemon restarted ---- */

void assert_only_daemon_changed(const e2e_snapshot *before, pid_t old, pid_t neu)
{
	char *diff = NULL;
	char gone[64], came[64];
	snprintf(gone, sizeof(gone), "- process %d ", old);
	snprintf(came, sizeof(came), "+ process %d ", neu);
	for (int attempt = 0; attempt < 40; attempt++) {
		free(diff);
		/* Inits the killed daemon left are our orphans now (we are a subreaper). */
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		e2e_snapshot *now = e2e_snapshot_take();
		diff = e2e_snapshot_diff(before, now);
		e2e_snapshot_free(now);
		bool other = false;
		/* Besides its process, a daemon's spare cgroups are its own (they carry its
		 * pid: runtime/spares.c). */
		for (char *l = diff; l && *l;
		     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
			size_t len = strcspn(l, "\n");
			char *line = strndup(l, len);
			if (strncmp(l, gone, strlen(gone)) && strncmp(l, came, strlen(came)) &&
			    *l != '\n' && !strstr(line, "/sandlot/.spare-"))
				other = true;
			free(line);
		}
		if (!other) {
			free(diff);
			return;
		}
		usleep(50000);
	}
	fail_msg("the host changed beyond the daemon's restart:\n%s", diff);
}

/* ---- the API spec against a daemon ---- */

char *e2e_spec_check(const char *sock, const char *captures)
{
	char *cmd = e2e_printf("/usr/bin/python3 tests/api/spec_check.py --spec api/openapi.yaml "
			       "--sources api --socket %s --captures %s 2>&1",
			       sock, captures);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	char buf[4096];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	int st = pclose(f);
	free(cmd);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("spec check failed:\n%s", buf);
	return strdup(buf);
}
