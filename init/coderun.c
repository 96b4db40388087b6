/* coderun.c — sandlot-coderun, one executeCode call's execution inside a sandbox: hands
 * its stdin/stdout/stderr, cwd and environment to the sandbox's warm runner (a zygote on
 * a unix socket, runtime/code.c), which forks a clean interpreter for the call, and ends
 * as that interpreter ended. Static (musl) and tiny: it is what each call starts.
 *
 *   sandlot-coderun SOCKET NORUNNER ARG...
 *   sandlot-coderun --start MS CMD...     (how a first call starts the runner)
 *
 * No runner on SOCKET: NORUNNER is created and it exits 255 before any code ran (the
 * host then starts a runner and calls again). Killed (a timeout): the runner kills the
 * call's process group. A signal it can catch is passed on to that group. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define REQUEST_MAX (4u << 20)

static volatile pid_t call_pid;

static void forward(int sig)
{
	if (call_pid > 0)
		kill(-call_pid, sig);
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t n = read(fd, (char *)buf + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += n;
	}
	return 0;
}

static int add(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s) + 1;
	if (*len + n > REQUEST_MAX)
		return -1;
	while (*len + n > *cap) {
		*cap = *cap ? *cap * 2 : 4096;
		char *nb = realloc(*buf, *cap);
		if (!nb)
			return -1;
		*buf = nb;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	return 0;
}

/* [u32 length] then "ARGC\0ARG\0...K=V\0...", with fds 0, 1, 2 and the cwd attached. */
static int send_request(int s, char **args, int nargs)
{
	char *buf = malloc(4096), num[16];
	size_t len = 4, cap = 4096; /* the length goes first */
	if (!buf)
		return -1;
	snprintf(num, sizeof(num), "%d", nargs);
	int bad = add(&buf, &len, &cap, num);
	for (int i = 0; i < nargs && !bad; i++)
		bad = add(&buf, &len, &cap, args[i]);
	for (char **e = environ; *e && !bad; e++)
		bad = add(&buf, &len, &cap, *e);
	int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (bad || cwd < 0) {
		fprintf(stderr, "sandlot-coderun: request too large or no cwd\n");
		return -1;
	}
	uint32_t body = len - 4;
	memcpy(buf, &body, 4);
	int fds[4] = {0, 1, 2, cwd};
	char ctl[CMSG_SPACE(sizeof(fds))] = {0};
	struct iovec iov = {buf, len};
	struct msghdr m = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	ssize_t n;
	do
		n = sendmsg(s, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	size_t off = n > 0 ? (size_t)n : 0;
	while (n >= 0 && off < len) {
		n = send(s, buf + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			n = 0;
		off += n > 0 ? n : 0;
	}
	close(cwd);
	free(buf);
	return n < 0 ? -1 : 0;
}

static int no_runner(const char *marker)
{
	int fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	return 255;
}

/* --start MS CMD...: CMD (the runner) once MS have passed, detached (a session of its
 * own, its output to /dev/null), this process exiting at once: the execution that
 * started it ends, and the runner's start-up is not beside what its starter does next. */
static int start_later(char **argv)
{
	long ms = atol(argv[0]);
	pid_t pid = fork();
	if (pid != 0)
		return pid < 0 ? 127 : 0;
	setsid();
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
	}
	struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
	execvp(argv[1], argv + 1);
	_exit(127);
}

int main(int argc, char **argv)
{
	if (argc > 3 && !strcmp(argv[1], "--start"))
		return start_later(argv + 2);
	if (argc < 3) {
		fprintf(stderr,
			"usage: sandlot-coderun SOCKET NORUNNER ARG... | --start MS CMD...\n");
		return 2;
	}
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(argv[1]) >= sizeof(a.sun_path))
		return no_runner(argv[2]);
	strcpy(a.sun_path, argv[1]);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) < 0)
		return no_runner(argv[2]);
	if (send_request(s, argv + 3, argc - 3) < 0)
		return no_runner(argv[2]);
	int32_t pid, status;
	/* No pid: the runner (or its waiting child) went before the call began, so the
	 * code has not run; the host starts a runner and calls again. */
	if (read_full(s, &pid, 4) < 0 || pid <= 0)
		return no_runner(argv[2]);
	call_pid = pid;
	struct sigaction sa = {.sa_handler = forward};
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	if (read_full(s, &status, 4) < 0) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		fprintf(stderr, "sandlot-coderun: the code runner ended during the call\n");
		return 255;
	}
	if ((status & 0x7f) == 0)
		return (status >> 8) & 0xff;
	/* Killed by a signal: end by it too, so the execution records the signal. */
	int sig = status & 0x7f;
	signal(sig, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	kill(getpid(), sig);
	return 128 + sig;
}
