/* startcmd.c — an image's start command as a sandbox's background execution, and its
 * ready command run until it succeeds (E2B's template start/ready; docs/images.md). */
#include "startcmd.h"

#include "cleanup.h"
#include "clock.h"
#include "exec.h"
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define READY_LINES 200 /* of one ready command's output, said; the rest dropped */

static void say(const sl_startcmd *sc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const sl_startcmd *sc, const char *fmt, ...)
{
	if (!sc->out)
		return;
	char line[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	sc->out(sc->out_arg, line);
}

/* What FD has now, said a line at a time ("  " before each); at END the rest too. */
struct lines {
	char buf[1024];
	size_t len;
	int n;
};

static void lines_take(const sl_startcmd *sc, struct lines *l, int fd, bool end)
{
	for (;;) {
		ssize_t r = fd < 0 ? 0 : read(fd, l->buf + l->len, sizeof(l->buf) - 1 - l->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r > 0)
			l->len += (size_t)r;
		char *nl;
		while ((nl = memchr(l->buf, '\n', l->len)) ||
		       (l->len && (l->len == sizeof(l->buf) - 1 || (r <= 0 && end)))) {
			size_t cut = nl ? (size_t)(nl - l->buf) : l->len;
			if (++l->n <= READY_LINES)
				say(sc, "  %.*s", (int)cut, l->buf);
			size_t drop = nl ? cut + 1 : cut;
			memmove(l->buf, l->buf + drop, l->len - drop);
			l->len -= drop;
		}
		if (r <= 0)
			return;
	}
}

/* 1 when the start command ended with a failure (*WHY says how), else 0 (running, or
 * done with exit 0: E2B's start command may be one that returns, like `echo hi`). */
static int start_failed(sl_ctx *ctx, const sl_sandbox *sb, const char *eid, char *why, size_t len,
			sl_err *err)
{
	sl_exec e;
	if (exec_get(ctx, sb->id, eid, &e, err) < 0)
		return -1;
	int failed = e.status != SL_EXEC_RUNNING && e.status != SL_EXEC_COMPLETED;
	if (failed && e.signal)
		snprintf(why, len, "killed by signal %d", e.signal);
	else if (failed)
		snprintf(why, len, "exit code %d", e.exit_code);
	exec_free(&e);
	return failed;
}

/* One run of the ready command: 0 when it exited 0, 1 when it did not (*WHY says how),
 * 2 when the start command (EID, "" for none) failed meanwhile (the ready command is then
 * killed, as E2B's builder cancels it), 3 when the deadline cut it off (*WHY untouched: the
 * error names the last run that ended on its own, not one a loaded host started late),
 * -1 when it could not be run or waited for. */
static int ready_once(sl_ctx *ctx, const sl_sandbox *sb, const sl_startcmd *sc, const char *eid,
		      int64_t deadline, char *why, size_t len, sl_err *err)
{
	char *argv[] = {"/bin/sh", "-c", (char *)sc->ready, NULL};
	_cleanup_close_ int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int pfd[2] = {-1, -1};
	if (nul < 0 || pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0)
		return sl_sysfail(err, "sandbox %s: the ready command's output pipe", sb->id);
	_cleanup_close_ int rd = pfd[0], wr = pfd[1];
	int64_t left = deadline - sl_mono_ms();
	sl_spawn sp = {.argv = argv,
		       .user = sc->user,
		       .cwd = sc->cwd,
		       .fds = {nul, wr, wr},
		       .exit_fd = -1,
		       .timeout_ms = left > 0 ? (uint64_t)left : 1};
	sl_proc p;
	sl_err e = {0};
	int rc = sandbox_spawn(ctx, sb, &sp, &p, &e);
	close(wr);
	wr = -1;
	if (rc < 0) {
		if (e.kind != SL_NOTFOUND && e.kind != SL_INVALID) {
			*err = e;
			return -1;
		}
		snprintf(why, len, "%s", e.msg); /* no /bin/sh, a user it does not have */
		return 1;
	}
	struct lines l = {.len = 0};
	struct pollfd pf[2] = {{.fd = rd, .events = POLLIN}, {.fd = p.conn, .events = POLLIN}};
	int ws = 0;
	for (rc = 1; rc == 1;) {
		int n = poll(pf, 2, *eid ? 200 : -1);
		if (n < 0 && errno != EINTR) {
			rc = sl_sysfail(err, "sandbox %s: wait for the ready command", sb->id);
			break;
		}
		if (n == 0 && (rc = start_failed(ctx, sb, eid, why, len, err)) != 0) {
			sl_err e2;
			proc_signal(&p, SIGKILL, true, &e2);
			rc = rc > 0 ? 2 : -1;
			break;
		}
		rc = 1;
		if (pf[0].revents)
			lines_take(sc, &l, rd, false);
		if (pf[0].revents & (POLLHUP | POLLERR))
			pf[0].fd = -1;
		if (pf[1].revents)
			rc = proc_wait(&p, 0, &ws, err);
	}
	proc_close(&p);
	lines_take(sc, &l, rc == 0 ? rd : -1, true);
	if (rc < 0 || rc == 2)
		return rc;
	if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
		return 0;
	if (WIFEXITED(ws))
		snprintf(why, len, "exit code %d", WEXITSTATUS(ws));
	else if (WTERMSIG(ws) == SIGKILL && sl_mono_ms() >= deadline)
		return 3; /* our own deadline ended it: it tells nothing of the command */
	else
		snprintf(why, len, "killed by signal %d", WTERMSIG(ws));
	return 1;
}

/* The start command's output so far, said (a build shows it as E2B's does). */
static void start_output(sl_ctx *ctx, const sl_sandbox *sb, const sl_startcmd *sc, const char *eid)
{
	static const char *const streams[] = {"stdout", "stderr"};
	for (int i = 0; i < 2 && sc->out; i++) {
		int fd;
		sl_err e;
		if (exec_open_log(ctx, sb->id, eid, streams[i], &fd, &e) < 0)
			continue;
		struct lines l = {.len = 0};
		lines_take(sc, &l, fd, true);
		close(fd);
	}
}

int startcmd_run(sl_ctx *ctx, const sl_sandbox *sb, const sl_startcmd *sc, char exec_id[32],
		 sl_err *err)
{
	exec_id[0] = '\0';
	bool has_start = sc->start && *sc->start, has_ready = sc->ready && *sc->ready;
	uint64_t tmo = sc->timeout_ms ? sc->timeout_ms : ctx->cfg.ready_timeout_ms;
	int64_t t0 = sl_mono_ms(), deadline = t0 + (int64_t)tmo;
	if (has_start) {
		say(sc, "start command: %s", sc->start);
		sl_exec_spec spec = {.shell = sc->start, .user = sc->user, .cwd = sc->cwd};
		sl_exec e;
		if (exec_start(ctx, sb, &spec, &e, err) < 0)
			return sl_wrap(err, "start command");
		snprintf(exec_id, 32, "%s", e.id);
		exec_free(&e);
	}
	char why[1100] = "";
	int rc = 0, waited_ms = 100;
	for (int attempt = 1; has_ready; attempt++) {
		say(sc, "ready command (%d): %s", attempt, sc->ready);
		rc = ready_once(ctx, sb, sc, exec_id, deadline, why, sizeof(why), err);
		if (rc <= 0)
			break;
		if (rc == 1)
			say(sc, "not ready: %s", why);
		if (rc == 3 && !*why)
			snprintf(why, sizeof(why), "still running at the deadline");
		if (rc == 2 || (has_start && (rc = start_failed(ctx, sb, exec_id, why, sizeof(why),
								err)) != 0)) {
			if (rc > 0)
				rc = sl_fail(err, SL_INVALID, 0, "the start command failed: %s",
					     why);
			break;
		}
		int64_t left = deadline - sl_mono_ms();
		if (left <= 0) {
			rc = sl_fail(err, SL_TIMEOUT, 0,
				     "the ready command did not succeed within %llu s (its last "
				     "run: %s)",
				     (unsigned long long)(tmo / 1000), why);
			break;
		}
		usleep((useconds_t)(waited_ms < left ? waited_ms : left) * 1000);
		waited_ms = waited_ms * 2 > 2000 ? 2000 : waited_ms * 2;
	}
	if (rc == 0 && has_start && start_failed(ctx, sb, exec_id, why, sizeof(why), err) > 0)
		rc = sl_fail(err, SL_INVALID, 0, "the start command failed: %s", why);
	if (has_start)
		start_output(ctx, sb, sc, exec_id);
	if (rc == 0)
		say(sc, "ready in %lld ms", (long long)(sl_mono_ms() - t0));
	return rc < 0 ? -1 : 0;
}

int startcmd_image_run(sl_ctx *ctx, const sl_sandbox *sb, char exec_id[32], sl_err *err)
{
	exec_id[0] = '\0';
	sl_image img;
	_cleanup_cjson_ cJSON *cfg = NULL;
	sl_err e;
	/* By its name first (one record: every create asks), by digest when the name has
	 * moved on since (a snapshot's image, a rebuild). */
	if ((image_lookup(ctx->cfg.state_dir, sb->image, &img, &e) < 0 ||
	     strcmp(img.digest, sb->digest)) &&
	    image_lookup(ctx->cfg.state_dir, sb->digest, &img, err) < 0)
		return -1;
	if (image_config(ctx->cfg.state_dir, &img, &cfg, err) < 0)
		return -1;
	const cJSON *start = cJSON_GetObjectItemCaseSensitive(cfg, "startCmd");
	const cJSON *ready = cJSON_GetObjectItemCaseSensitive(cfg, "readyCmd");
	if (!cJSON_IsString(start) && !cJSON_IsString(ready))
		return 0;
	/* As the image's user, in its working directory, whatever the create asked for the
	 * sandbox's commands: as the build checked them, and as E2B runs them. */
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(cfg, "user");
	const cJSON *wd = cJSON_GetObjectItemCaseSensitive(cfg, "workingDir");
	sl_startcmd sc = {.start = cJSON_IsString(start) ? start->valuestring : NULL,
			  .ready = cJSON_IsString(ready) ? ready->valuestring : NULL,
			  .user = cJSON_IsString(u) && *u->valuestring ? u->valuestring : "root",
			  .cwd = cJSON_IsString(wd) && *wd->valuestring ? wd->valuestring : "/"};
	if (startcmd_run(ctx, sb, &sc, exec_id, err) < 0)
		return sl_wrap(err, "sandbox %s: image %s", sb->id, img.name);
	return 0;
}
