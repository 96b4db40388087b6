/* exec.c — durable executions: one directory per command under the sandbox's run dir,
 * started through sandlot-init, which enforces the timeout and writes the exit itself. */
#include "exec.h"
#include "initctl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "cleanup.h"
#include "clock.h"
#include "execlogs.h"
#include "fsutil.h"
#include "id.h"
#include "launch.h"
#include "lookup.h"
#include "log.h"
#include "state.h"

#define RECORD_MAX	 (1 << 20)
#define EXIT_MAX	 256   /* the exit record: init's line and one line of ours */
#define SPAWN_REPLY_MS	 30000 /* init answers a spawn once the exec succeeded or failed */
#define CONTROL_REPLY_MS 5000  /* signal and stdin-EOF requests */
#define STDIN_STALL_MS	 5000  /* a stdin write gives up after this long without progress */
#define WAIT_BACKSTOP_MS 10000 /* exec_wait re-reads at least this often (see exec_wait) */
#define WAIT_POLL_MS	 100   /* exec_wait without inotify (instances exhausted) */

/* ---- names and paths ---- */

/* An id is taken as is; anything else is looked up as a sandbox name. */
static int sandbox_ref(sl_ctx *ctx, const char *ref, char *id, size_t len, sl_err *err)
{
	if (id_ok(ref, "sbx_")) {
		snprintf(id, len, "%s", ref);
		return 0;
	}
	_cleanup_sandbox_ sl_sandbox sb = {0};
	if (sandbox_get(ctx, ref, &sb, err) < 0)
		return -1;
	snprintf(id, len, "%s", sb.id);
	return 0;
}

static int exec_ref(sl_ctx *ctx, const char *sandbox_ref_, const char *exec_id, char *sid,
		    sl_err *err)
{
	if (sandbox_ref(ctx, sandbox_ref_, sid, 32, err) < 0)
		return -1;
	if (!id_ok(exec_id, "exe_"))
		return sl_fail(err, SL_NOTFOUND, 0, "execution %s not found in sandbox %s",
			       exec_id ? exec_id : "", sid);
	return 0;
}

static void exec_dir(const sl_ctx *ctx, const char *sid, const char *eid, char *buf, size_t len)
{
	char d[PATH_MAX];
	execlogs_dir(ctx, sid, d, sizeof(d));
	snprintf(buf, len, "%s/%s", d, eid);
}

static void path_in(const char *dir, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* ---- signal names ---- */

void exec_signal_name(int sig, char *buf, size_t len)
{
	const char *abbrev = sig > 0 && sig < NSIG ? sigabbrev_np(sig) : NULL;
	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else if (sig >= SIGRTMIN && sig <= SIGRTMAX)
		snprintf(buf, len, "SIGRTMIN+%d", sig - SIGRTMIN);
	else
		snprintf(buf, len, "SIG%d", sig);
}

int exec_signal_from_name(const char *name)
{
	if (!name || !*name)
		return -1;
	if (name[0] >= '0' && name[0] <= '9') {
		char *end;
		long v = strtol(name, &end, 10);
		return *end || v < 1 || v >= NSIG ? -1 : (int)v;
	}
	if (!strncasecmp(name, "SIG", 3))
		name += 3;
	for (int s = 1; s < NSIG; s++) {
		const char *a = sigabbrev_np(s);
		if (a && !strcasecmp(a, name))
			return s;
	}
	return -1;
}

/* ---- the record: exec.json ---- */

/* What exec.json holds beyond sl_exec's fields. */
typedef struct exec_facts {
	uint64_t oom_before;
	bool stdin_pipe;
	pid_t starter_pid; /* who is starting it, for a record whose pid is still 0 */
	uint64_t starter_start;
} exec_facts;

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* Write REC as DIR's exec.json, once, in the dir just made for it, in place (no
 * temporary and rename): a reader that lists the dir meanwhile sees no record or a torn
 * one and skips it either way, as a start in progress. What changes later (the pid, the
 * exit) goes into the exit record. No fsync: the run dir does not survive a host crash
 * anyway (tmpfs). */
static int exec_record_save(const char *dir, const cJSON *rec, sl_err *err)
{
	char p[PATH_MAX];
	path_in(dir, "exec.json", p, sizeof(p));
	_cleanup_free_ char *s = cJSON_PrintUnformatted(rec);
	if (!s)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "serialise %s", p);
	size_t len = strlen(s);
	_cleanup_close_ int fd =
	    open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sl_sysfail(err, "create %s", p);
	return write(fd, s, len) == (ssize_t)len ? 0 : sl_sysfail(err, "write %s", p);
}

/* Fill E and F from a record's JSON O (its "command" is moved into E). */
static int record_take(cJSON *o, const char *sid, const char *eid, sl_exec *e, exec_facts *f)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(o, "command");
	if (!cJSON_IsString(id) || strcmp(id->valuestring, eid) != 0 || !cJSON_IsArray(cmd))
		return -1;
	memset(e, 0, sizeof(*e));
	e->master = -1;
	snprintf(e->id, sizeof(e->id), "%s", eid);
	snprintf(e->sandbox_id, sizeof(e->sandbox_id), "%s", sid);
	e->pid = num(o, "pid");
	e->started_ms = num(o, "startedAt");
	e->started_us = num(o, "startedUs"); /* 0 in a record of a build before it */
	e->status = SL_EXEC_RUNNING;
	e->command = cJSON_DetachItemFromObjectCaseSensitive(o, "command");
	*f = (exec_facts){.oom_before = num(o, "oomKillsBefore"),
			  .stdin_pipe = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "stdin")),
			  .starter_pid = num(o, "starterPid"),
			  .starter_start = num(o, "starterStart")};
	return 0;
}

static int exec_record_load(const char *dir, const char *sid, const char *eid, sl_exec *e, exec_facts *f,
		       sl_err *err)
{
	char p[PATH_MAX];
	path_in(dir, "exec.json", p, sizeof(p));
	_cleanup_free_ char *data = NULL;
	if (state_read_file(p, RECORD_MAX, &data, NULL, err) < 0) {
		if (err->kind == SL_NOTFOUND)
			sl_fail(err, SL_NOTFOUND, 0, "execution %s not found in sandbox %s", eid,
				sid);
		return -1;
	}
	cJSON *o = cJSON_Parse(data);
	if (!o)
		return sl_fail(err, SL_INTERNAL, 0, "record %s is not valid JSON", p);
	int r = record_take(o, sid, eid, e, f);
	cJSON_Delete(o);
	return r < 0 ? sl_fail(err, SL_INTERNAL, 0, "record %s is not execution %s's", p, eid) : 0;
}

/* ---- the exit record ----
 * Lines, in any order; only the first "exit" line counts:
 * - "exit <wait status>[ <tag>]": written by init when the command ends (tag "timeout"
 *   when init killed it for its timeout), or by the runtime with tag "nostart" (the
 *   command could not start) or "lost" (init died before the command ended);
 * - "pid <n>": the command's pid inside the sandbox, written by the starter when init
 *   says it started (one write on the fd it shares with init, so before or after init's
 *   line, never into it) — cheaper than rewriting exec.json;
 * - "oom 0|1": the runtime's verdict on a SIGKILL, written by the first reader so the
 *   answer does not change when later kills bump the sandbox's OOM counter.
 * Any other line where the exit line should be first makes the record garbled: init is
 * untrusted. */

typedef struct exit_rec {
	bool done;    /* a complete exit line is there */
	bool garbled; /* ... but it does not parse (init is untrusted) */
	int wstatus;
	char tag[16];
	int oom;   /* -1 no verdict yet */
	pid_t pid; /* 0 when no pid line */
	int64_t mtime_ms;
} exit_rec;

static void exit_line(const char *line, exit_rec *x)
{
	unsigned long w;
	int used = 0;
	char tag[16] = "";
	x->done = true;
	if (sscanf(line, "exit %lu%n %15[a-z]%n", &w, &used, tag, &used) < 1 ||
	    (size_t)used != strlen(line) || w > 0xffff) {
		x->garbled = true;
		return;
	}
	x->wstatus = (int)w;
	snprintf(x->tag, sizeof(x->tag), "%s", tag);
}

static void exit_parse(const char *s, exit_rec *x)
{
	x->oom = -1;
	for (const char *nl; (nl = strchr(s, '\n')); s = nl + 1) {
		char line[64];
		int used = 0, pid;
		snprintf(line, sizeof(line), "%.*s", (int)(nl - s), s);
		if (!strcmp(line, "oom 0") || !strcmp(line, "oom 1"))
			x->oom = line[4] == '1';
		else if (sscanf(line, "pid %d%n", &pid, &used) == 1 &&
			 (size_t)used == strlen(line) && pid > 1)
			x->pid = pid;
		else if (!x->done)
			exit_line(line, x);
	}
}

/* The record from FD, or from DIR's file when FD is -1. */
static void exit_read(const char *dir, int fd, exit_rec *x)
{
	char p[PATH_MAX], buf[EXIT_MAX];
	memset(x, 0, sizeof(*x));
	x->oom = -1;
	_cleanup_close_ int own = -1;
	if (fd < 0) {
		path_in(dir, "exit", p, sizeof(p));
		fd = own = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return;
	ssize_t n;
	while ((n = pread(fd, buf, sizeof(buf) - 1, 0)) < 0 && errno == EINTR)
		;
	if (n <= 0)
		return;
	buf[n] = '\0';
	x->mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
	exit_parse(buf, x);
}

/* Our own exit line, only into a record without one: a file that is gone (the sandbox's
 * run dir was removed) is left gone, and nothing new appears in the dir. */
static void exit_write_unless_done(const char *dir, const char *line)
{
	char p[PATH_MAX];
	path_in(dir, "exit", p, sizeof(p));
	_cleanup_close_ int fd = open(p, O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	exit_rec x;
	if (fd < 0)
		return;
	exit_read(dir, fd, &x);
	if (!x.done && write(fd, line, strlen(line)) < 0)
		sl_log(SL_LOG_WARN, "write %s: %s", p, strerror(errno));
}

static void exit_append(const char *dir, const char *line)
{
	char p[PATH_MAX];
	path_in(dir, "exit", p, sizeof(p));
	_cleanup_close_ int fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && write(fd, line, strlen(line)) < 0)
		sl_log(SL_LOG_WARN, "write %s: %s", p, strerror(errno));
}

/* ---- status ---- */

/* Liveness of the sandbox's init, looked up once per call (exec_list reads many). */
typedef struct sb_live {
	int state; /* -1 not looked up, 0 gone, 1 running or paused */
} sb_live;

static bool sandbox_alive(sl_ctx *ctx, const char *sid, sb_live *live)
{
	if (live->state < 0) {
		_cleanup_sandbox_ sl_sandbox sb = {0};
		sl_err e = {0};
		if (sandbox_get(ctx, sid, &sb, &e) < 0)
			/* An unreadable record says nothing about init: assume it lives. */
			live->state = e.kind == SL_NOTFOUND ? 0 : 1;
		else
			/* Hibernated: its init and commands come back on resume, with their
			 * descriptors of the exit record (docs/hibernate.md). */
			live->state = sb.status == SL_ST_RUNNING || sb.status == SL_ST_PAUSED ||
				      sb.status == SL_ST_HIBERNATED;
	}
	return live->state == 1;
}

static bool oom_verdict(sl_ctx *ctx, const char *dir, const char *sid, const exec_facts *f,
			const exit_rec *x)
{
	if (x->oom >= 0)
		return x->oom == 1;
	char cg[64];
	snprintf(cg, sizeof(cg), "sandlot/%s", sid);
	uint64_t now = 0;
	sl_err e = {0};
	if (cgroup_oom_kills(ctx->cg, cg, &now, &e) < 0)
		return false; /* the cgroup is gone with the sandbox: no verdict to keep */
	bool oom = now > f->oom_before;
	exit_append(dir, oom ? "oom 1\n" : "oom 0\n");
	return oom;
}

static void settle(sl_ctx *ctx, const char *dir, sl_exec *e, const exec_facts *f, const exit_rec *x)
{
	e->finished_ms = x->mtime_ms > e->started_ms ? x->mtime_ms : e->started_ms;
	e->signal = 0;
	e->oom_killed = false;
	e->lost = !x->garbled && !strcmp(x->tag, "lost");
	e->status = SL_EXEC_FAILED;
	if (x->garbled) {
		e->exit_code = -1;
		return;
	}
	int w = x->wstatus;
	if (!strcmp(x->tag, "nostart")) {
		e->exit_code = WIFEXITED(w) ? WEXITSTATUS(w) : 127;
		return;
	}
	if (WIFEXITED(w)) {
		e->exit_code = WEXITSTATUS(w);
	} else if (WIFSIGNALED(w)) {
		e->signal = WTERMSIG(w);
		e->exit_code = 128 + e->signal;
	} else {
		e->exit_code = -1;
		return;
	}
	char p[PATH_MAX];
	path_in(dir, "cancelled", p, sizeof(p));
	if (!strcmp(x->tag, "timeout"))
		e->status = SL_EXEC_TIMEOUT;
	else if (e->exit_code == 0)
		e->status = SL_EXEC_COMPLETED;
	else if (access(p, F_OK) == 0)
		e->status = SL_EXEC_CANCELLED;
	if (e->signal == SIGKILL && strcmp(x->tag, "lost") != 0)
		e->oom_killed = oom_verdict(ctx, dir, e->sandbox_id, f, x);
}

/* Fill E's status from the exit record, settling records whose init is gone. */
static void refresh(sl_ctx *ctx, const char *dir, int fd, sl_exec *e, const exec_facts *f,
		    sb_live *live)
{
	exit_rec x;
	exit_read(dir, fd, &x);
	if (e->pid == 0)
		e->pid = x.pid; /* exec.json had it before the pid line (older records) */
	if (!x.done && e->pid == 0) {
		/* Between the record and init's answer. If the starter died there, init may
		 * or may not have the command: say failed, but write nothing, so an exit
		 * init writes later still wins. */
		if (f->starter_pid > 0 && proc_start_time(f->starter_pid) != f->starter_start) {
			e->status = SL_EXEC_FAILED;
			e->exit_code = -1;
			e->finished_ms = e->started_ms;
		}
		return;
	}
	if (!x.done && !sandbox_alive(ctx, e->sandbox_id, live)) {
		/* init is dead, so nobody else writes this file: the kernel SIGKILLed what
		 * was left in the sandbox's pid namespace. */
		exit_write_unless_done(dir, "exit 9 lost\n");
		exit_read(dir, -1, &x);
	}
	if (x.done)
		settle(ctx, dir, e, f, &x);
}

static int exec_load(sl_ctx *ctx, const char *sid, const char *eid, sl_exec *out, exec_facts *f,
		     sb_live *live, sl_err *err)
{
	char dir[PATH_MAX];
	exec_dir(ctx, sid, eid, dir, sizeof(dir));
	if (exec_record_load(dir, sid, eid, out, f, err) < 0)
		return -1;
	refresh(ctx, dir, -1, out, f, live);
	return 0;
}

int exec_get(sl_ctx *ctx, const char *sandbox_id, const char *exec_id, sl_exec *out, sl_err *err)
{
	char sid[32];
	exec_facts f;
	sb_live live = {-1};
	memset(out, 0, sizeof(*out));
	out->master = -1;
	if (exec_ref(ctx, sandbox_id, exec_id, sid, err) < 0)
		return -1;
	return exec_load(ctx, sid, exec_id, out, &f, &live, err);
}

void exec_free(sl_exec *e)
{
	if (!e)
		return;
	cJSON_Delete(e->command);
	e->command = NULL;
}

void exec_free_list(sl_exec *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		exec_free(&list[i]);
	free(list);
}

static int cmp_started(const void *a, const void *b)
{
	const sl_exec *x = a, *y = b;
	if (x->started_ms != y->started_ms)
		return x->started_ms < y->started_ms ? -1 : 1;
	if (x->started_us != y->started_us)
		return x->started_us < y->started_us ? -1 : 1;
	return strcmp(x->id, y->id);
}

int exec_count(sl_ctx *ctx, const char *sandbox_id, size_t *n, sl_err *err)
{
	char sid[32], d[PATH_MAX];
	*n = 0;
	if (sandbox_ref(ctx, sandbox_id, sid, sizeof(sid), err) < 0)
		return -1;
	execlogs_dir(ctx, sid, d, sizeof(d));
	/* Its link count, where the file system keeps one per subdirectory (tmpfs, ext4 up
	 * to 65000; btrfs and others say 1): every subdirectory of it is an execution's, and
	 * the one of a start that fails is removed, so this counts as the scan below does
	 * but for a start in progress (or one a crash cut short). A sandbox's GET read one
	 * exec.json per execution before: 0.68 ms at 640, 0.14 ms now. */
	struct stat st;
	if (stat(d, &st) < 0)
		return errno == ENOENT ? 0 : sl_sysfail(err, "stat %s", d);
	if (S_ISDIR(st.st_mode) && st.st_nlink >= 2) {
		*n = st.st_nlink - 2;
		return 0;
	}
	_cleanup_closedir_ DIR *dir = opendir(d);
	if (!dir)
		return errno == ENOENT ? 0 : sl_sysfail(err, "list %s", d);
	struct dirent *de;
	while ((de = readdir(dir))) {
		char rec[64];
		/* Counted as exec_list counts: a dir without exec.json is a start in
		 * progress, or one that failed. */
		if (id_ok(de->d_name, "exe_") &&
		    snprintf(rec, sizeof(rec), "%s/exec.json", de->d_name) < (int)sizeof(rec) &&
		    faccessat(dirfd(dir), rec, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			(*n)++;
	}
	return 0;
}

int exec_list(sl_ctx *ctx, const char *sandbox_id, sl_exec **out, size_t *n, sl_err *err)
{
	char sid[32], d[PATH_MAX];
	*out = NULL;
	*n = 0;
	if (sandbox_ref(ctx, sandbox_id, sid, sizeof(sid), err) < 0)
		return -1;
	execlogs_dir(ctx, sid, d, sizeof(d));
	_cleanup_closedir_ DIR *dir = opendir(d);
	if (!dir) {
		if (errno != ENOENT)
			return sl_sysfail(err, "list %s", d);
		/* No execution yet, or no sandbox: tell the two apart. */
		_cleanup_sandbox_ sl_sandbox sb = {0};
		return sandbox_get(ctx, sid, &sb, err) < 0 ? -1 : 0;
	}
	sl_exec *list = NULL;
	size_t k = 0, cap = 0;
	sb_live live = {-1};
	struct dirent *de;
	while ((de = readdir(dir))) {
		if (!id_ok(de->d_name, "exe_"))
			continue;
		if (k == cap) {
			cap = cap ? cap * 2 : 16;
			sl_exec *nl = realloc(list, cap * sizeof(*nl));
			if (!nl) {
				exec_free_list(list, k);
				return sl_fail(err, SL_INTERNAL, ENOMEM, "list executions");
			}
			list = nl;
		}
		exec_facts f;
		sl_err e2 = {0};
		/* A dir without exec.json is a start in progress (or one that failed). */
		if (exec_load(ctx, sid, de->d_name, &list[k], &f, &live, &e2) == 0)
			k++;
	}
	if (k > 1) /* qsort of a NULL list (none) is undefined, even for no element */
		qsort(list, k, sizeof(*list), cmp_started);
	*out = list;
	*n = k;
	return 0;
}

/* ---- start ---- */

/* What exec_start has made so far; released on every path. */
typedef struct start_state {
	char dir[PATH_MAX];
	bool made_dir;
	cJSON *rec;
	int out, errfd, exitfd, in, hold;
} start_state;

static void start_state_release(start_state *s)
{
	int *fds[] = {&s->out, &s->errfd, &s->exitfd, &s->in, &s->hold};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0)
			close(steal_fd(fds[i]));
	cJSON_Delete(s->rec);
	s->rec = NULL;
}

static int check_spec(const sl_exec_spec *spec, sl_err *err)
{
	bool has_argv = spec->argv && spec->argv[0];
	if (has_argv == (spec->shell != NULL))
		return sl_fail(err, SL_INVALID, 0,
			       "command: give either an argv array or a shell line");
	if (has_argv && !spec->argv[0][0])
		return sl_fail(err, SL_INVALID, 0, "command: the program name is empty");
	if (spec->tty && spec->stdin_pipe)
		return sl_fail(err, SL_INVALID, 0,
			       "stdin and pty together: a pty execution takes its input through "
			       "the pty");
	if (spec->timeout_ms > SL_SPAWN_TIMEOUT_MAX)
		return sl_fail(err, SL_INVALID, 0, "timeout %" PRIu64 " ms is too long",
			       spec->timeout_ms);
	if (spec->cwd && spec->cwd[0] != '/')
		return sl_fail(err, SL_INVALID, 0, "cwd \"%s\" must be an absolute path",
			       spec->cwd);
	for (const char *const *e = spec->env; e && *e; e++)
		if (!strchr(*e, '=') || **e == '=')
			return sl_fail(err, SL_INVALID, 0, "env: \"%s\" is not KEY=VALUE", *e);
	return 0;
}

static cJSON *strs_json(const char *const *v)
{
	cJSON *a = cJSON_CreateArray();
	for (; v && *v; v++)
		cJSON_AddItemToArray(a, cJSON_CreateString(*v));
	return a;
}

static cJSON *record_new(sl_ctx *ctx, const sl_sandbox *sb, const sl_exec_spec *spec,
			 char *const *argv, const char *eid)
{
	char cg[64];
	snprintf(cg, sizeof(cg), "sandlot/%s", sb->id);
	uint64_t oom = 0;
	sl_err e = {0};
	if (cgroup_oom_kills(ctx->cg, cg, &oom, &e) < 0)
		sl_log(SL_LOG_WARN, "execution %s: %s", eid, e.msg);
	pid_t self = getpid();
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", eid);
	cJSON_AddStringToObject(o, "sandboxId", sb->id);
	cJSON_AddItemToObject(o, "command", strs_json((const char *const *)argv));
	cJSON_AddItemToObject(o, "env", strs_json(spec->env));
	cJSON_AddStringToObject(o, "cwd", spec->cwd ? spec->cwd : sb->workdir);
	cJSON_AddStringToObject(o, "user", spec->user ? spec->user : sb->user);
	cJSON_AddNumberToObject(o, "timeoutMs", (double)spec->timeout_ms);
	cJSON_AddBoolToObject(o, "stdin", spec->stdin_pipe);
	cJSON_AddBoolToObject(o, "tty", spec->tty);
	/* The µs orders the starts of one millisecond (exec_list lists oldest first). */
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	int64_t us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
	cJSON_AddNumberToObject(o, "startedAt", (double)(us / 1000));
	cJSON_AddNumberToObject(o, "startedUs", (double)us);
	cJSON_AddNumberToObject(o, "oomKillsBefore", (double)oom);
	cJSON_AddNumberToObject(o, "starterPid", self);
	cJSON_AddNumberToObject(o, "starterStart", (double)proc_self_start_time());
	return o;
}

static int open_new(const char *dir, const char *name, int flags, int *fd, sl_err *err)
{
	char p[PATH_MAX];
	path_in(dir, name, p, sizeof(p));
	/* No O_NOFOLLOW (O_EXCL refuses a symlink already): it stays in the file's flags,
	 * and a resume of a hibernated sandbox reopens the file through /proc/self/fd/N
	 * with them (docs/hibernate.md, "Running executions"). */
	*fd = open(p, flags | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	return *fd < 0 ? sl_sysfail(err, "create %s", p) : 0;
}

/* stdin as a FIFO: the command reads one end, init holds the other (so the command sees
 * no EOF between writes), and exec_write_stdin opens more writers by path. */
static int make_stdin_fifo(const char *dir, int *rd, int *wr, sl_err *err)
{
	char p[PATH_MAX];
	path_in(dir, "stdin", p, sizeof(p));
	if (mkfifo(p, 0600) < 0)
		return sl_sysfail(err, "create %s", p);
	/* Non-blocking opens: neither end waits for the other; the command's end then
	 * blocks as a stdin should. No O_NOFOLLOW (the name is the mkfifo's just made, in
	 * a directory only root reaches): it would stay in the flags a resume reopens them
	 * with, as for open_new. */
	*rd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (*rd < 0)
		return sl_sysfail(err, "open %s", p);
	*wr = open(p, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (*wr < 0 || fcntl(*rd, F_SETFL, O_RDONLY) < 0)
		return sl_sysfail(err, "open %s", p);
	return 0;
}

/* One /dev/null for the stdin of every command without one, opened once. */
static int devnull(void)
{
	static _Atomic int fd = -1;
	int f = atomic_load(&fd);
	if (f >= 0)
		return f;
	int mine = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (mine < 0 || atomic_compare_exchange_strong(&fd, &f, mine))
		return mine;
	close(mine); /* another thread was first: F is its fd */
	return f;
}

/* Finished executions go, oldest first, until a quarter of the space and of its inodes is
 * free (or none finished is left). Under the run dir's lock. */
static void logs_prune(sl_ctx *ctx, const char *sid, const char *d)
{
	sl_exec *list;
	size_t n, removed = 0;
	sl_err e = {0};
	if (exec_list(ctx, sid, &list, &n, &e) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct statfs f;
		if (statfs(d, &f) < 0 || execlogs_has_room(&f, 4))
			break;
		if (list[i].status == SL_EXEC_RUNNING)
			continue;
		char p[PATH_MAX];
		exec_dir(ctx, sid, list[i].id, p, sizeof(p));
		if (fs_remove_tree(p, NULL) == 0)
			removed++;
	}
	exec_free_list(list, n);
	if (removed)
		sl_log(SL_LOG_INFO, "sandbox %s: removed %zu finished execution(s) for log space",
		       sid, removed);
}

int exec_logs_ready(sl_ctx *ctx, const sl_sandbox *sb, sl_err *err)
{
	char d[PATH_MAX];
	_cleanup_close_ int lk = -1;
	int r = execlogs_ready(ctx, sb, d, &lk, err);
	if (r == 1)
		logs_prune(ctx, sb->id, d);
	return r < 0 ? -1 : 0;
}

static int start_prepare(sl_ctx *ctx, const sl_sandbox *sb, const sl_exec_spec *spec,
			 char *const *argv, const char *eid, start_state *s, sl_err *err)
{
	exec_dir(ctx, sb->id, eid, s->dir, sizeof(s->dir));
	if (exec_logs_ready(ctx, sb, err) < 0)
		return -1;
	int r = mkdir(s->dir, 0700);
	if (r < 0)
		return sl_sysfail(err, "create %s", s->dir);
	s->made_dir = true;
	s->rec = record_new(ctx, sb, spec, argv, eid);
	if (exec_record_save(s->dir, s->rec, err) < 0 ||
	    open_new(s->dir, "stdout", O_WRONLY | O_APPEND, &s->out, err) < 0 ||
	    open_new(s->dir, "stderr", O_WRONLY | O_APPEND, &s->errfd, err) < 0 ||
	    /* Read back by us, appended to by init and us: see "the exit record". */
	    open_new(s->dir, "exit", O_RDWR | O_APPEND, &s->exitfd, err) < 0)
		return -1;
	if (spec->stdin_pipe)
		return make_stdin_fifo(s->dir, &s->in, &s->hold, err);
	if (!spec->tty && devnull() < 0)
		return sl_sysfail(err, "open /dev/null");
	return 0;
}

/* The command could not start: record that as its result (exit 127 or 126, the reason
 * in its stderr log), as a shell would. */
static void record_nostart(start_state *s, const sl_exec_spec *spec, char *const *argv,
			   const struct sl_rep *rep)
{
	const char *user = spec->user ? spec->user : "(the sandbox's user)";
	int code = rep->pid == 4 && rep->status == ENOENT ? 127 : 126;
	char why[512];
	switch (rep->pid) {
	case 1:
		snprintf(why, sizeof(why), "unknown user %s", user);
		break;
	case 3:
		snprintf(why, sizeof(why), "cannot change to the working directory: %s",
			 strerror(rep->status));
		break;
	case 4:
		snprintf(why, sizeof(why), "%s: %s", argv[0],
			 rep->status == ENOENT ? "command not found" : strerror(rep->status));
		break;
	default:
		snprintf(why, sizeof(why), "%s: cannot start: %s", argv[0], rep->msg);
	}
	dprintf(s->errfd, "sandlot: %s\n", why);
	dprintf(s->exitfd, "exit %d nostart\n", code << 8);
	fsync(s->exitfd);
}

int exec_start(sl_ctx *ctx, const sl_sandbox *sb, const sl_exec_spec *spec, sl_exec *out,
	       sl_err *err)
{
	memset(out, 0, sizeof(*out));
	out->master = -1;
	if (sb->status != SL_ST_RUNNING)
		return sl_fail(err, SL_CONFLICT, 0, "sandbox %s is %s, not running", sb->id,
			       sandbox_status_name(sb->status));
	if (check_spec(spec, err) < 0)
		return -1;
	char *shell_argv[] = {"/bin/sh", "-c", (char *)spec->shell, NULL};
	char *const *argv = spec->shell ? shell_argv : spec->argv;
	char eid[32];
	sl_new_id("exe_", eid, sizeof(eid));

	start_state s = {.out = -1, .errfd = -1, .exitfd = -1, .in = -1, .hold = -1};
	_cleanup_free_ char *req = NULL;
	size_t reqlen = 0;
	/* A waiting start keeps the connection only for this command's exit. */
	uint32_t flags = SL_SPAWN_HAS_EXIT | (spec->tty ? SL_SPAWN_TTY : 0) |
			 (spec->stdin_pipe ? SL_SPAWN_HOLD_FD : 0) |
			 (spec->wait_ms > 0 ? SL_SPAWN_LAST : 0);
	struct sl_rep rep;
	int passed = -1;
	_cleanup_close_ int conn = -1;
	initctl_spawn isp = { .cfg = &ctx->cfg,
			      .argv = argv,
			      .env = spec->env,
			      .user = spec->user,
			      .cwd = spec->cwd,
			      .flags = flags,
			      .rows = spec->rows,
			      .cols = spec->cols,
			      .timeout_ms = spec->timeout_ms };
	int r = initctl_build_spawn(sb, &isp, &req, &reqlen, err);
	if (r == 0)
		r = start_prepare(ctx, sb, spec, argv, eid, &s, err);
	if (r == 0) {
		int fds[SL_SPAWN_MAX_FDS], nfds = 0;
		if (!spec->tty) {
			fds[nfds++] = s.in >= 0 ? s.in : devnull();
			fds[nfds++] = s.out;
			fds[nfds++] = s.errfd;
		}
		/* init's own descriptor of the exit record, write-only and appending: CRIU
		 * checks the size of any other file it restores, and the record grows while
		 * the sandbox is hibernated (our lines), which failed the resume ("bad size"). */
		char xp[PATH_MAX];
		path_in(s.dir, "exit", xp, sizeof(xp));
		_cleanup_close_ int initx = open(xp, O_WRONLY | O_APPEND | O_CLOEXEC);
		if (initx < 0)
			r = sl_sysfail(err, "open %s", xp);
		fds[nfds++] = initx;
		if (spec->stdin_pipe)
			fds[nfds++] = s.hold;
		if (r == 0)
			r = initctl_call_keep(ctx, sb->id, req, reqlen, fds, nfds, SPAWN_REPLY_MS,
					      &rep, &passed, spec->wait_ms > 0 ? &conn : NULL, err);
	}
	if (req) /* the sandbox's secrets in clear, if it has any */
		explicit_bzero(req, reqlen);
	if (r == 0 && rep.hdr.type == SL_REP_ERROR && rep.pid < 0)
		r = sl_fail(
		    err, rep.status == EAGAIN || rep.status == ENOMEM ? SL_EXHAUSTED : SL_INTERNAL,
		    0, "sandbox %s cannot start a command: %s", sb->id, rep.msg);
	else if (r == 0 && rep.hdr.type == SL_REP_ERROR && rep.pid <= 4)
		record_nostart(&s, spec, argv, &rep);
	else if (r == 0 && (rep.hdr.type != SL_REP_STARTED || rep.pid <= 1))
		r = sl_fail(err, SL_INTERNAL, 0, "sandbox %s: unexpected reply from its init",
			    sb->id);
	if (r == 0 && rep.hdr.type == SL_REP_STARTED) {
		char line[32];
		int n = snprintf(line, sizeof(line), "pid %d\n", (int)rep.pid);
		if (write(s.exitfd, line, n) != n)
			r = sl_sysfail(err, "record the pid of execution %s", eid);
		out->master = steal_fd(&passed);
	}
	if (passed >= 0)
		close(passed);
	/* The record as saved: read back from memory below, not from the file; the exit
	 * record through our fd. */
	cJSON *rec = r == 0 ? steal_ptr(&s.rec) : NULL;
	_cleanup_close_ int exitfd = r == 0 ? steal_fd(&s.exitfd) : -1;
	/* Kept to tell an empty log at the end without opening it (sl_exec.log_empty). */
	_cleanup_close_ int logfd_out = r == 0 ? steal_fd(&s.out) : -1;
	_cleanup_close_ int logfd_err = r == 0 ? steal_fd(&s.errfd) : -1;
	start_state_release(&s);
	if (r < 0) {
		if (out->master >= 0)
			close(steal_fd(&out->master));
		if (s.made_dir)
			fs_remove_tree(s.dir, NULL);
		return -1;
	}
	int master = out->master;
	exec_facts f;
	sb_live live = {1}; /* its init just answered */
	if (conn >= 0 && rep.hdr.type == SL_REP_STARTED) {
		/* init says SL_REP_EXITED on this connection after it wrote the exit record:
		 * for a short command, one wait here replaces the caller's exec_wait. */
		struct sl_rep done;
		int dpassed = -1;
		sl_err e = {0};
		if (initctl_recv(conn, &done, &dpassed, spec->wait_ms, &e) == 0 && dpassed >= 0)
			close(dpassed);
	}
	r = record_take(rec, sb->id, eid, out, &f);
	cJSON_Delete(rec);
	if (r < 0) {
		if (master >= 0)
			close(master);
		return sl_fail(err, SL_INTERNAL, 0, "execution %s: its record lost its shape", eid);
	}
	if (rep.hdr.type == SL_REP_STARTED)
		out->pid = rep.pid;
	refresh(ctx, s.dir, exitfd, out, &f, &live);
	out->master = master;
	if (out->status != SL_EXEC_RUNNING) {
		const int logfd[2] = {logfd_out, logfd_err};
		for (int i = 0; i < 2; i++) {
			struct stat st;
			out->log_empty[i] =
			    logfd[i] >= 0 && fstat(logfd[i], &st) == 0 && st.st_size == 0;
		}
	}
	return 0;
}

/* ---- logs, stdin, signals, pty ---- */

int exec_open_log(sl_ctx *ctx, const char *sandbox_id, const char *exec_id, const char *stream,
		  int *fd, sl_err *err)
{
	char sid[32], dir[PATH_MAX], p[PATH_MAX];
	*fd = -1;
	if (!stream || (strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0))
		return sl_fail(err, SL_INVALID, 0, "log \"%s\": use stdout or stderr",
			       stream ? stream : "");
	if (exec_ref(ctx, sandbox_id, exec_id, sid, err) < 0)
		return -1;
	exec_dir(ctx, sid, exec_id, dir, sizeof(dir));
	path_in(dir, stream, p, sizeof(p));
	*fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (*fd < 0)
		return sl_fail(err, errno == ENOENT ? SL_NOTFOUND : SL_INTERNAL, errno,
			       "execution %s in sandbox %s: open %s", exec_id, sid, stream);
	return 0;
}

/* Load a record that must still be running, for the calls that act on the command. */
static int load_running(sl_ctx *ctx, const char *sandbox_id, const char *exec_id, char *sid,
			char *dir, sl_exec *e, exec_facts *f, sl_err *err)
{
	sb_live live = {-1};
	if (exec_ref(ctx, sandbox_id, exec_id, sid, err) < 0 ||
	    exec_load(ctx, sid, exec_id, e, f, &live, err) < 0)
		return -1;
	exec_dir(ctx, sid, exec_id, dir, PATH_MAX);
	if (e->status != SL_EXEC_RUNNING || e->pid <= 1) {
		exec_free(e);
		return sl_fail(err, SL_CONFLICT, 0, "execution %s %s", exec_id,
			       e->pid <= 1 && e->status == SL_EXEC_RUNNING ? "is still starting"
									   : "has ended");
	}
	return 0;
}

/* write(2) to a pipe whose reader may go away: EPIPE, never a SIGPIPE that would kill
 * the daemon. SIGPIPE is sent to the writing thread, so blocking it there is enough;
 * one that we caused is consumed before unblocking. */
static ssize_t write_nosigpipe(int fd, const void *buf, size_t len)
{
	sigset_t pipe_set, old, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pending);
	bool was_pending = sigismember(&pending, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	ssize_t n;
	while ((n = write(fd, buf, len)) < 0 && errno == EINTR)
		;
	int e = errno;
	if (n < 0 && e == EPIPE && !was_pending) {
		struct timespec zero = {0, 0};
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return n;
}

int exec_write_stdin(sl_ctx *ctx, const char *sandbox_id, const char *exec_id, const void *buf,
		     size_t len, sl_err *err)
{
	char sid[32], dir[PATH_MAX], p[PATH_MAX];
	sl_exec e;
	exec_facts f;
	if (load_running(ctx, sandbox_id, exec_id, sid, dir, &e, &f, err) < 0)
		return -1;
	exec_free(&e);
	if (!f.stdin_pipe)
		return sl_fail(err, SL_CONFLICT, 0, "execution %s was not started with stdin",
			       exec_id);
	path_in(dir, "stdin", p, sizeof(p));
	_cleanup_close_ int fd = open(p, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return sl_fail(err, SL_CONFLICT, 0,
			       errno == ENOENT ? "execution %s: stdin is closed"
					       : "execution %s: nothing reads its stdin any more",
			       exec_id);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode))
		return sl_fail(err, SL_INTERNAL, 0, "%s is not a FIFO", p);
	size_t off = 0;
	while (off < len) {
		ssize_t n = write_nosigpipe(fd, (const char *)buf + off, len - off);
		if (n > 0) {
			off += n;
			continue;
		}
		if (n < 0 && errno == EPIPE)
			return sl_fail(err, SL_CONFLICT, 0,
				       "execution %s stopped reading stdin after %zu of %zu bytes",
				       exec_id, off, len);
		if (n < 0 && errno != EAGAIN)
			return sl_sysfail(err, "write stdin of execution %s", exec_id);
		/* The pipe is full: wait for the command to read, within bounds. */
		struct pollfd pf = {fd, POLLOUT, 0};
		int r;
		while ((r = poll(&pf, 1, STDIN_STALL_MS)) < 0 && errno == EINTR)
			;
		if (r == 0)
			return sl_fail(err, SL_TIMEOUT, 0,
				       "execution %s did not read its stdin for %d ms (%zu of %zu "
				       "bytes written)",
				       exec_id, STDIN_STALL_MS, off, len);
	}
	return 0;
}

int exec_close_stdin(sl_ctx *ctx, const char *sandbox_id, const char *exec_id, sl_err *err)
{
	char sid[32], dir[PATH_MAX], p[PATH_MAX];
	sl_exec e;
	exec_facts f;
	sb_live live = {-1};
	if (exec_ref(ctx, sandbox_id, exec_id, sid, err) < 0 ||
	    exec_load(ctx, sid, exec_id, &e, &f, &live, err) < 0)
		return -1;
	pid_t pid = e.pid;
	bool running = e.status == SL_EXEC_RUNNING;
	exec_free(&e);
	if (!f.stdin_pipe)
		return sl_fail(err, SL_CONFLICT, 0, "execution %s was not started with stdin",
			       exec_id);
	exec_dir(ctx, sid, exec_id, dir, sizeof(dir));
	path_in(dir, "stdin", p, sizeof(p));
	/* Unlinked first: no new writer can open it, so EOF comes once the writers that
	 * are mid-write finish. Closing twice is fine. */
	if (unlink(p) < 0 && errno != ENOENT)
		return sl_sysfail(err, "remove %s", p);
	if (!running || pid <= 1)
		return 0;
	struct sl_req_pid rq = {.hdr = {SL_PROTO_MAGIC, SL_REQ_STDIN_EOF}, .pid = pid};
	struct sl_rep rep;
	int passed = -1;
	sl_err e2 = {0};
	if (initctl_call(ctx, sid, &rq, sizeof(rq), NULL, 0, CONTROL_REPLY_MS, &rep, &passed, &e2) <
	    0) {
		/* No init: the command and its stdin are gone with it. */
		if (e2.kind == SL_CONFLICT)
			return 0;
		*err = e2;
		return -1;
	}
	if (passed >= 0)
		close(passed);
	if (rep.hdr.type == SL_REP_ERROR && rep.status != ESRCH)
		return sl_fail(err, SL_INTERNAL, rep.status, "close stdin of execution %s",
			       exec_id);
	return 0;
}

int exec_signal(sl_ctx *ctx, const char *sandbox_id, const char *exec_id, int sig, sl_err *err)
{
	char sid[32], dir[PATH_MAX], p[PATH_MAX], name[32];
	if (sig < 1 || sig >= NSIG)
		return sl_fail(err, SL_INVALID, 0, "signal %d: no such signal", sig);
	sl_exec e;
	exec_facts f;
	if (load_running(ctx, sandbox_id, exec_id, sid, dir, &e, &f, err) < 0)
		return -1;
	pid_t pid = e.pid;
	exec_free(&e);
	exec_signal_name(sig, name, sizeof(name));
	path_in(dir, "cancelled", p, sizeof(p));
	bool cancel = sig == SIGKILL || sig == SIGTERM;
	/* The mark goes first: the exit can follow the signal at once. */
	if (cancel && state_write_atomic_nosync(p, name, strlen(name), err) < 0)
		return -1;
	struct sl_req_signal rq = {
	    .hdr = {SL_PROTO_MAGIC, SL_REQ_SIGNAL}, .pid = pid, .sig = sig, .group = 1};
	struct sl_rep rep;
	int passed = -1;
	if (initctl_call(ctx, sid, &rq, sizeof(rq), NULL, 0, CONTROL_REPLY_MS, &rep, &passed, err) < 0)
		return sl_wrap_obj(err, "sandbox", sid, "signal an execution");
	if (passed >= 0)
		close(passed);
	if (rep.hdr.type == SL_REP_ERROR) {
		if (rep.status != ESRCH)
			return sl_fail(err, SL_INTERNAL, rep.status, "send %s to execution %s",
				       name, exec_id);
		/* It ended on its own before the signal: it was not cancelled. */
		if (cancel)
			unlink(p);
		return sl_fail(err, SL_CONFLICT, 0, "execution %s has ended", exec_id);
	}
	return 0;
}

int exec_resize(int master, unsigned short rows, unsigned short cols, sl_err *err)
{
	if (!rows || !cols)
		return sl_fail(err, SL_INVALID, 0, "pty size %ux%u: rows and cols must be > 0",
			       rows, cols);
	struct winsize ws = {.ws_row = rows, .ws_col = cols};
	if (ioctl(master, TIOCSWINSZ, &ws) < 0)
		return sl_sysfail(err, "resize the execution's pty to %ux%u", rows, cols);
	return 0;
}

/* ---- wait ---- */

/* A pidfd of the sandbox's init, or -1: its death settles every running execution, and
 * the close of its exit-record fds that announces it comes a moment before the kernel
 * shows the process as gone. */
static int init_pidfd(sl_ctx *ctx, const char *sid)
{
	_cleanup_sandbox_ sl_sandbox sb = {0};
	sl_err e = {0};
	if (sandbox_get(ctx, sid, &sb, &e) < 0)
		return -1;
	int fd = -1;
	if ((sb.status == SL_ST_RUNNING || sb.status == SL_ST_PAUSED) && sb.init_pid > 1) {
		fd = syscall(SYS_pidfd_open, sb.init_pid, 0);
		/* Checked after the open: the pidfd is then surely that init's. */
		if (fd >= 0 && proc_start_time(sb.init_pid) != sb.init_start)
			close(steal_fd(&fd));
	}
	return fd;
}

int exec_wait(sl_ctx *ctx, const char *sandbox_id, const char *exec_id, int timeout_ms,
	      sl_exec *out, sl_err *err)
{
	char sid[32], dir[PATH_MAX];
	memset(out, 0, sizeof(*out));
	out->master = -1;
	if (exec_ref(ctx, sandbox_id, exec_id, sid, err) < 0)
		return -1;
	int64_t deadline = timeout_ms < 0 ? -1 : sl_mono_ms() + timeout_ms;
	/* Most waits find the command ended already: no watch for those. */
	exec_facts f;
	sb_live live = {-1};
	if (exec_load(ctx, sid, exec_id, out, &f, &live, err) < 0)
		return -1;
	if (out->status != SL_EXEC_RUNNING || timeout_ms == 0)
		return 0;
	exec_free(out);
	exec_dir(ctx, sid, exec_id, dir, sizeof(dir));
	/* One watch per waiter: init's write and close of `exit` (or our rewrite of it)
	 * wakes exactly the waiters of this execution. The watch is set before the record
	 * is read again, so an exit in between is not missed. Instances are limited per
	 * user (fs.inotify.max_user_instances); without one, poll slowly. */
	sl_dirwatch w;
	if (dirwatch_start(&ctx->watches, &w, dir,
			   IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |
			       IN_ONLYDIR) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return sl_fail(err, SL_NOTFOUND, 0, "execution %s not found in sandbox %s",
				       exec_id, sid);
		if (errno != EMFILE && errno != ENFILE && errno != ENOMEM)
			return sl_sysfail(err, "watch %s", dir);
	}
	_cleanup_close_ int ipfd = init_pidfd(ctx, sid);
	int rc = 0;
	for (;;) {
		live.state = -1;
		if (exec_load(ctx, sid, exec_id, out, &f, &live, err) < 0) {
			rc = -1;
			break;
		}
		if (out->status != SL_EXEC_RUNNING)
			break;
		int64_t left = deadline < 0 ? INT_MAX : deadline - sl_mono_ms();
		if (left <= 0)
			break;
		exec_free(out);
		/* The backstop covers the one change no file event announces: a starter
		 * that died before recording the pid. */
		int step = w.fd >= 0 ? WAIT_BACKSTOP_MS : WAIT_POLL_MS;
		struct pollfd pf[2] = {{w.fd, POLLIN, 0}, {ipfd, POLLIN, 0}};
		int r = poll(pf, 2, left < step ? (int)left : step);
		if (r < 0 && errno != EINTR) {
			rc = sl_sysfail(err, "wait for execution %s", exec_id);
			break;
		}
		dirwatch_drain(&w); /* any event: read the record again */
		if (r > 0 && (pf[1].revents & POLLIN))
			close(steal_fd(&ipfd)); /* once: it stays readable */
	}
	dirwatch_end(&ctx->watches, &w);
	return rc;
}

void exec_watch(sl_ctx *ctx, const char *sandbox_id, const char *exec_id, uint32_t mask,
		sl_dirwatch *w)
{
	char sid[32], dir[PATH_MAX];
	sl_err e = {0};
	w->fd = w->wd = -1;
	if (exec_ref(ctx, sandbox_id, exec_id, sid, &e) < 0)
		return;
	exec_dir(ctx, sid, exec_id, dir, sizeof(dir));
	dirwatch_start(&ctx->watches, w, dir, mask);
}

void exec_watch_end(sl_ctx *ctx, sl_dirwatch *w)
{
	dirwatch_end(&ctx->watches, w);
}

/* ---- JSON ---- */

const char *exec_status_name(sl_exec_status s)
{
	switch (s) {
	case SL_EXEC_RUNNING:
		return "running";
	case SL_EXEC_COMPLETED:
		return "completed";
	case SL_EXEC_FAILED:
		return "failed";
	case SL_EXEC_TIMEOUT:
		return "timeout";
	case SL_EXEC_CANCELLED:
		return "cancelled";
	}
	return "failed";
}

