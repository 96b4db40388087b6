/* ocihook.c — hooks run as runc runs them (ocihook.h): a fork of the runtime, in its
 * namespaces (its own pid namespace, not the container's) and with its credentials, stdin a sealed
 * copy of the state, stdout and stderr kept for the error message. */
#include "ocihook.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"

extern char **environ;

static int memfd_with(const char *name, const char *text, sl_err *err)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	size_t len = text ? strlen(text) : 0, off = 0;
	if (fd < 0)
		return sl_sysfail(err, "memfd for a hook");
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return sl_sysfail(err, "write a hook's stdin");
		}
		off += (size_t)n;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Its exit status, or -1 with *TIMED_OUT when it outlived TIMEOUT seconds (then killed). */
static int hook_wait(pid_t pid, int timeout, bool *timed_out)
{
	uint64_t end = timeout ? now_ms() + (uint64_t)timeout * 1000 : 0;
	int ws;
	*timed_out = false;
	for (;;) {
		pid_t r = waitpid(pid, &ws, timeout ? WNOHANG : 0);
		if (r == pid)
			return ws;
		if (r < 0 && errno != EINTR)
			return -1;
		if (r == 0 && now_ms() >= end) {
			*timed_out = true;
			kill(pid, SIGKILL);
			while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
				;
			return -1;
		}
		if (r == 0)
			usleep(5000);
	}
}

static int hook_run(const oci_hook *h, const char *what, const char *state, sl_err *err)
{
	_cleanup_close_ int in = memfd_with("hook-state", state, err);
	if (in < 0)
		return -1;
	_cleanup_close_ int out = memfd_with("hook-output", NULL, err);
	if (out < 0)
		return -1;
	char *path_only[] = {h->path, NULL};
	char *const *argv = h->args && h->args[0] ? h->args : path_only;
	char *const *envp = h->env && h->env[0] ? h->env : environ;
	pid_t pid = fork();
	if (pid < 0)
		return sl_sysfail(err, "%s: fork", what);
	if (pid == 0) {
		if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
			_exit(126);
		execve(h->path, argv, envp);
		dprintf(2, "exec %s: %s", h->path, strerror(errno));
		_exit(127);
	}
	bool timed_out;
	int ws = hook_wait(pid, h->timeout, &timed_out);
	if (ws >= 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
		return 0;
	char text[400] = "";
	ssize_t n = pread(out, text, sizeof(text) - 1, 0);
	text[n > 0 ? n : 0] = '\0';
	for (char *p = text; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	if (timed_out)
		return sl_fail(err, SL_INTERNAL, 0, "%s %s: timed out after %d s (output: %s)",
			       what, h->path, h->timeout, text);
	if (ws >= 0 && WIFSIGNALED(ws))
		return sl_fail(err, SL_INTERNAL, 0, "%s %s: killed by signal %d (output: %s)", what,
			       h->path, WTERMSIG(ws), text);
	return sl_fail(err, SL_INTERNAL, 0, "%s %s: exit status %d (output: %s)", what, h->path,
		       ws >= 0 ? WEXITSTATUS(ws) : -1, text);
}

int oci_hooks_run(const oci_hooks *h, enum oci_hook_kind kind, const char *state, sl_err *err)
{
	if (!h->n[kind])
		return 0;
	/* Forks go to the runtime's own pid namespace again: create's unshare (launch_oci.c)
	 * left the container's as the one its children are made in. */
	_cleanup_close_ int pidns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	if (pidns < 0 || setns(pidns, CLONE_NEWPID) < 0)
		return sl_sysfail(err, "%s hooks: the runtime's pid namespace",
				  oci_hook_names[kind]);
	for (size_t i = 0; i < h->n[kind]; i++) {
		char what[64];
		snprintf(what, sizeof(what), "%s hook %zu", oci_hook_names[kind], i);
		if (hook_run(&h->list[kind][i], what, state, err) < 0)
			return -1;
	}
	return 0;
}
