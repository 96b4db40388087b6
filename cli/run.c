/* run.c — `sandlot run`, `create` and `exec`: option parsing shared by the three,
 * and the foreground loop that relays a terminal, forwards signals, applies
 * --timeout and turns the command's end into docker-style exit codes. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "log.h"
#include "packages.h"
#include "net.h"
#include "quantity.h"
#include "release.h"
#include "startcmd.h"

#define MAX_KV 512

enum { MODE_RUN, MODE_CREATE, MODE_EXEC };

struct opts {
	sl_create_opts c;
	int nenv, nlabels, nallow, ndeny;
	bool interactive, tty;
	uint64_t timeout_ms;
	/* --secret ENV=NAME and --secret-file PATH=NAME: /v1's secrets and secretFiles. */
	cJSON *secret_env, *secret_files;
	/* Filled up to their counts and NULL-terminated after parsing, never zeroed as a
	 * whole: ~60 KB of stack that a memset would fault in page by page (~10-17 us a page
	 * on a VM; docs/bench.md). */
	const char *env[MAX_KV + 1];
	const char *labels[MAX_KV + 1];
	const char *allow[SL_NET_MAX_RULES + 1], *deny[SL_NET_MAX_RULES + 1];
	sl_volume_spec vols[16];
	char volbuf[16][1024];
	sl_package pkgs[SL_MAX_PACKAGES];
	char pkgbuf[SL_MAX_PACKAGES][512];
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --package MANAGER:NAME[@VERSION]: the manager before the first ':', the version
 * after the last '@' that is not the first character (npm scopes: npm:@types/node@20). */
static int parse_package(struct opts *o, const char *arg, sl_err *err)
{
	size_t k = o->c.npackages;
	if (k >= SL_MAX_PACKAGES)
		return sl_fail(err, SL_INVALID, 0, "--package: at most %d", SL_MAX_PACKAGES);
	snprintf(o->pkgbuf[k], sizeof(o->pkgbuf[k]), "%s", arg);
	char *m = o->pkgbuf[k], *name = strchr(m, ':');
	if (!name || name == m || !name[1])
		return sl_fail(err, SL_INVALID, 0,
			       "--package: \"%s\" is not MANAGER:NAME[@VERSION] (apt, pip or npm)",
			       arg);
	*name++ = '\0';
	char *at = strrchr(name, '@');
	if (at && at != name)
		*at++ = '\0';
	else
		at = NULL;
	o->pkgs[k] = (sl_package){ name, at, m };
	o->c.packages = o->pkgs;
	o->c.npackages = k + 1;
	return packages_validate(&o->pkgs[k], 1, err) < 0 ? sl_wrap(err, "--package %s", arg) : 0;
}

static void opts_free(struct opts *o)
{
	cJSON_Delete(o->secret_env);
	cJSON_Delete(o->secret_files);
}

/* --secret ENV=NAME, --secret-file PATH=NAME: KEY -> secret name into *REFS, as /v1's
 * `secrets` and `secretFiles` (sandbox_create checks the names, the variable, the path). */
static int parse_secret_ref(cJSON **refs, const char *opt, const char *what, const char *arg,
			    sl_err *err)
{
	const char *eq = strrchr(arg, '=');
	if (!eq || eq == arg || !eq[1])
		return sl_fail(err, SL_INVALID, 0, "%s: \"%s\" is not %s=SECRET", opt, arg, what);
	char key[1024];
	snprintf(key, sizeof(key), "%.*s", (int)(eq - arg), arg);
	if (!*refs && !(*refs = cJSON_CreateObject()))
		return sl_fail(err, SL_INTERNAL, ENOMEM, "%s", opt);
	if (cJSON_GetObjectItemCaseSensitive(*refs, key))
		return sl_fail(err, SL_INVALID, 0, "%s: %s given twice", opt, key);
	if (!cJSON_AddStringToObject(*refs, key, eq + 1))
		return sl_fail(err, SL_INTERNAL, ENOMEM, "%s", opt);
	return 0;
}

/* Returns the index of the first non-option argument, or -1 after printing.
 * Over 120 lines: one getopt switch, a case per option, each a line or two. */
static int parse_opts(int argc, char **argv, int mode, struct opts *o)
{
	enum { O_CPU = 256, O_MEM, O_DISK, O_PIDS, O_IMAGE, O_SNAPSHOT, O_NAME, O_LABEL,
	       O_NETWORK, O_ALLOW, O_DENY, O_IDLE, O_PACKAGE, O_SECRET, O_SECRET_FILE,
	       O_HIBERNATE, O_TIMEOUT };
	static const struct option all[] = {
		{ "cpu", required_argument, 0, O_CPU },
		{ "memory", required_argument, 0, O_MEM },
		{ "disk", required_argument, 0, O_DISK },
		{ "pids", required_argument, 0, O_PIDS },
		{ "image", required_argument, 0, O_IMAGE },
		{ "snapshot", required_argument, 0, O_SNAPSHOT },
		{ "name", required_argument, 0, O_NAME },
		{ "label", required_argument, 0, O_LABEL },
		{ "network", no_argument, 0, O_NETWORK },
		{ "network-allow", required_argument, 0, O_ALLOW },
		{ "network-deny", required_argument, 0, O_DENY },
		{ "idle-timeout", required_argument, 0, O_IDLE },
		{ "package", required_argument, 0, O_PACKAGE },
		{ "secret", required_argument, 0, O_SECRET },
		{ "secret-file", required_argument, 0, O_SECRET_FILE },
		{ "hibernate", no_argument, 0, O_HIBERNATE },
		{ "env", required_argument, 0, 'e' },
		{ "volume", required_argument, 0, 'v' },
		{ "workdir", required_argument, 0, 'w' },
		{ "user", required_argument, 0, 'u' },
		{ "interactive", no_argument, 0, 'i' },
		{ "tty", no_argument, 0, 't' },
		{ "timeout", required_argument, 0, O_TIMEOUT },
		{ 0, 0, 0, 0 },
	};
	memset(o, 0, offsetof(struct opts, env));
	sl_err err = { 0 };
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "+e:w:u:itv:", all, NULL)) != -1) {
		bool create_only = (c >= O_CPU && c <= O_HIBERNATE) || c == 'v';
		if (mode == MODE_EXEC && create_only)
			return cli_usage("exec: %s is an option of run and create", argv[optind - 1]),
			       -1;
		if (mode == MODE_CREATE && (c == 'i' || c == 't' || c == O_TIMEOUT))
			return cli_usage("create: %s is an option of run and exec", argv[optind - 1]),
			       -1;
		int r = 0;
		switch (c) {
		case O_CPU:
			r = quantity_parse_cpu("--cpu", optarg, &o->c.cpu_millis, &err);
			break;
		case O_MEM:
			r = quantity_parse_bytes("--memory", optarg, &o->c.memory, &err);
			break;
		case O_DISK:
			r = quantity_parse_bytes("--disk", optarg, &o->c.disk, &err);
			break;
		case O_PIDS: {
			char *end;
			unsigned long long v = strtoull(optarg, &end, 10);
			if (*end || !*optarg || v < 1 || v > 4194304)
				r = sl_fail(&err, SL_INVALID, 0,
					    "--pids: \"%s\" is not a process count (1-4194304)",
					    optarg);
			o->c.pids = v;
			break;
		}
		case O_IMAGE:
			o->c.image = optarg;
			break;
		case O_SNAPSHOT:
			o->c.snapshot = optarg;
			break;
		case O_NAME:
			o->c.name = optarg;
			break;
		case O_LABEL:
			if (o->nlabels < MAX_KV)
				o->labels[o->nlabels++] = optarg;
			break;
		case O_NETWORK:
			o->c.net.enabled = true;
			break;
		case O_HIBERNATE: /* launched so that it can be hibernated (docs/hibernate.md) */
			o->c.hibernate = true;
			break;
		case O_ALLOW: /* CIDRs, checked by sandbox_create; imply --network */
		case O_DENY: {
			int *n = c == O_ALLOW ? &o->nallow : &o->ndeny;
			if (*n >= SL_NET_MAX_RULES) {
				r = sl_fail(&err, SL_INVALID, 0, "%s: at most %d", argv[optind - 1],
					    SL_NET_MAX_RULES);
				break;
			}
			(c == O_ALLOW ? o->allow : o->deny)[(*n)++] = optarg;
			o->c.net.enabled = true;
			break;
		}
		case O_IDLE:
			/* Kept in the record; `sandlot serve` acts on it (stop, or destroy
			 * when ephemeral) whenever it runs. */
			r = duration_parse("--idle-timeout", optarg, &o->c.idle_ms, &err);
			break;
		case O_PACKAGE:
			r = parse_package(o, optarg, &err);
			break;
		case O_SECRET:
			r = parse_secret_ref(&o->secret_env, "--secret", "ENV", optarg, &err);
			o->c.secret_env = o->secret_env;
			break;
		case O_SECRET_FILE:
			r = parse_secret_ref(&o->secret_files, "--secret-file", "/run/secrets/FILE",
					     optarg, &err);
			o->c.secret_files = o->secret_files;
			break;
		case 'e':
			if (o->nenv < MAX_KV)
				o->env[o->nenv++] = optarg;
			if (!strchr(optarg, '='))
				r = sl_fail(&err, SL_INVALID, 0, "-e: \"%s\" is not KEY=VALUE",
					    optarg);
			break;
		case 'v': {
			/* docker's -v SOURCE:/path[:ro]; SOURCE is a volume name or host dir */
			size_t k = o->c.nvolumes;
			if (k >= 16) {
				r = sl_fail(&err, SL_INVALID, 0, "-v: at most 16 volumes");
				break;
			}
			snprintf(o->volbuf[k], sizeof(o->volbuf[k]), "%s", optarg);
			char *src = o->volbuf[k], *path = strchr(src, ':');
			if (!path) {
				r = sl_fail(&err, SL_INVALID, 0,
					    "-v: \"%s\" is not NAME:/path[:ro]", optarg);
				break;
			}
			*path++ = '\0';
			char *flags = strchr(path, ':');
			if (flags)
				*flags++ = '\0';
			o->vols[k] = (sl_volume_spec){ src, path, flags && !strcmp(flags, "ro") };
			o->c.volumes = o->vols;
			o->c.nvolumes = k + 1;
			break;
		}
		case 'w':
			o->c.workdir = optarg;
			break;
		case 'u':
			o->c.user = optarg;
			break;
		case 'i':
			o->interactive = true;
			break;
		case 't':
			o->tty = true;
			break;
		case O_TIMEOUT:
			r = duration_parse("--timeout", optarg, &o->timeout_ms, &err);
			break;
		default:
			return cli_usage("unknown or incomplete option \"%s\"", argv[optind - 1]),
			       -1;
		}
		if (r < 0)
			return cli_fail(&err), -1;
	}
	/* Touched only when given (each list starts on a page of its own). */
	if (o->nenv) {
		o->env[o->nenv] = NULL;
		o->c.env = o->env;
	}
	if (o->nlabels) {
		o->labels[o->nlabels] = NULL;
		o->c.labels = o->labels;
	}
	if (o->nallow) {
		o->allow[o->nallow] = NULL;
		o->c.net.allow = o->allow;
	}
	if (o->ndeny) {
		o->deny[o->ndeny] = NULL;
		o->c.net.deny = o->deny;
	}
	return optind;
}

/* ---- the foreground loop ---- */

struct relay {
	int from, to;
	bool close_to; /* close `to` at EOF (a pipe into the command) */
};

static bool relay_once(struct relay *r)
{
	char buf[65536];
	ssize_t n = read(r->from, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	for (ssize_t off = 0; off < n;) {
		ssize_t w = write(r->to, buf + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return false;
		off += w;
	}
	return true;
}

static int exit_code(sl_ctx *ctx, sl_proc *p, int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st)) {
		int sig = WTERMSIG(st);
		if (sig == SIGKILL && proc_oom_killed(ctx, p))
			fprintf(stderr, "sandlot: the command was killed by the OOM killer "
					"(memory limit reached)\n");
		return 128 + sig;
	}
	return EXIT_SANDLOT;
}

/* The command's stdio: a terminal's size for a pty (-t), else our own fds handed over
 * (zero-copy) except terminals, relayed through pipes (RELAYS, CHILD_ENDS): a sandbox
 * must never hold the host's tty. -1 after saying why. */
static int stdio_setup(const struct opts *o, int devnull, sl_spawn *sp, struct relay *relays,
		       int *nrelays, int child_ends[3])
{
	if (o->tty) {
		struct winsize ws;
		if (ioctl(1, TIOCGWINSZ, &ws) == 0 || ioctl(0, TIOCGWINSZ, &ws) == 0) {
			sp->rows = ws.ws_row;
			sp->cols = ws.ws_col;
		}
	} else {
		/* Hand over our own fds (zero-copy), except terminals: a sandbox must
		 * never hold the host's tty. */
		for (int i = 0; i < 3; i++) {
			int fd = i;
			if (i == 0 && !o->interactive) {
				sp->fds[0] = devnull;
				continue;
			}
			if (!isatty(fd)) {
				sp->fds[i] = fd;
				continue;
			}
			int pp[2];
			if (pipe2(pp, O_CLOEXEC) < 0) {
				sl_err e;
				sl_sysfail(&e, "a pipe for the command's %s (a terminal here)",
					   i == 0 ? "stdin" : i == 1 ? "stdout" : "stderr");
				cli_fail(&e);
				return -1;
			}
			if (i == 0) {
				sp->fds[0] = child_ends[0] = pp[0];
				relays[(*nrelays)++] = (struct relay){ 0, pp[1], true };
			} else {
				sp->fds[i] = child_ends[i] = pp[1];
				relays[(*nrelays)++] = (struct relay){ pp[0], fd, false };
			}
		}
	}
	return 0;
}

/* Relay stdio and forward signals until the command ends (its exit status in the return,
 * -1 when it cannot be known), killing it at TIMEOUT_MS (0: none). */
static int foreground(sl_proc *p, int sfd, struct relay *relays, int nrelays, uint64_t timeout_ms,
		      bool *timed_out)
{
	int64_t deadline = timeout_ms ? mono_ms() + (int64_t)timeout_ms : 0;
	bool exited = false;
	int st = 0, r;
	sl_err err = {0};
	while (!exited) {
		struct pollfd pf[2 + 3];
		int n = 0;
		pf[n++] = (struct pollfd){ p->conn, POLLIN, 0 };
		pf[n++] = (struct pollfd){ sfd, POLLIN, 0 };
		for (int i = 0; i < nrelays; i++)
			pf[n++] = (struct pollfd){ relays[i].from, relays[i].from >= 0 ? POLLIN : 0, 0 };
		int wait = -1;
		if (deadline && !*timed_out) {
			int64_t left = deadline - mono_ms();
			wait = left < 0 ? 0 : (int)left;
		}
		int pr = poll(pf, n, wait);
		if (pr < 0 && errno != EINTR)
			break;
		if (pr == 0 && deadline && !*timed_out) {
			*timed_out = true;
			proc_signal(p, SIGKILL, true, &err);
			/* Give the exit report a bounded time to arrive. */
			deadline = mono_ms() + 10000;
			continue;
		}
		if (pf[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGWINCH && p->master >= 0) {
					struct winsize ws;
					if (ioctl(1, TIOCGWINSZ, &ws) == 0)
						ioctl(p->master, TIOCSWINSZ, &ws);
				} else if (si.ssi_signo != SIGWINCH) {
					proc_signal(p, si.ssi_signo, false, &err);
				}
			}
		}
		for (int i = 0; i < nrelays; i++) {
			if (relays[i].from < 0 || !(pf[2 + i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (!relay_once(&relays[i])) {
				if (relays[i].close_to)
					close(relays[i].to);
				if (relays[i].from != p->master && relays[i].from != 0)
					close(relays[i].from);
				relays[i].from = -1;
			}
		}
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			r = proc_wait(p, 0, &st, &err);
			if (r < 0) {
				fprintf(stderr, "sandlot: %s\n", err.msg);
				st = -1;
				break;
			}
			exited = r == 0;
		}
	}
	return st;
}

/* Run CMD in SB, or with CREATE in a new sandbox made into *SB (sb->id stays empty if
 * that fails): its init starts the command as soon as it runs. */
static int run_command(sl_ctx *ctx, sl_sandbox *sb, bool create, char **cmd, const struct opts *o)
{
	_cleanup_close_ int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	struct relay relays[3];
	int nrelays = 0, child_ends[3] = { -1, -1, -1 };
	sl_spawn sp = { .argv = cmd,
			.env = o->c.env,
			/* a new sandbox's settings hold user and workdir */
			.user = create ? NULL : o->c.user,
			.cwd = create ? NULL : o->c.workdir,
			.exit_fd = -1,
			.tty = o->tty,
			/* init's own deadline is a backstop should this process die: ours
			 * fires first and reports 124. */
			.timeout_ms = o->timeout_ms ? o->timeout_ms + 2000 : 0 };
	if (stdio_setup(o, devnull, &sp, relays, &nrelays, child_ends) < 0)
		return EXIT_SANDLOT;
	sigset_t mask;
	sigemptyset(&mask);
	int fwd[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH };
	for (size_t i = 0; i < sizeof(fwd) / sizeof(fwd[0]); i++)
		sigaddset(&mask, fwd[i]);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	_cleanup_close_ int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

	sl_proc p;
	sl_err err = { 0 };
	int r;
	bool create_failed = false;
	if (create) {
		sl_create_opts co = o->c;
		co.first = &sp;
		co.first_proc = &p;
		r = sandbox_create(ctx, &co, sb, &err);
		create_failed = r < 0;
		if (r == 0 && (r = proc_started(&p, cmd[0], &err)) < 0)
			proc_close(&p);
	} else {
		r = sandbox_spawn(ctx, sb, &sp, &p, &err);
	}
	for (int i = 0; i < 3; i++)
		if (child_ends[i] >= 0)
			close(child_ends[i]);
	if (r < 0) {
		for (int i = 0; i < nrelays; i++)
			close(relays[i].from == 0 ? relays[i].to : relays[i].from);
		sigprocmask(SIG_UNBLOCK, &mask, NULL);
		if (create_failed)
			return cli_fail(&err);
		fprintf(stderr, "sandlot: %s\n", err.msg);
		return err.kind == SL_NOTFOUND ? EXIT_NOT_FOUND
		       : err.kind == SL_INVALID ? EXIT_CANNOT_EXEC
						: EXIT_SANDLOT;
	}
	struct termios saved;
	bool raw = false;
	if (o->tty) {
		if (o->interactive && isatty(0) && tcgetattr(0, &saved) == 0) {
			struct termios t = saved;
			cfmakeraw(&t);
			raw = tcsetattr(0, TCSANOW, &t) == 0;
		}
		if (o->interactive)
			relays[nrelays++] = (struct relay){ 0, p.master, false };
		relays[nrelays++] = (struct relay){ p.master, 1, false };
	}
	bool timed_out = false;
	int st = foreground(&p, sfd, relays, nrelays, o->timeout_ms, &timed_out);
	/* Drain what the command wrote before it ended; don't wait for processes it
	 * left in the background. */
	for (int i = 0; i < nrelays; i++) {
		if (relays[i].from <= 0)
			continue;
		fcntl(relays[i].from, F_SETFL, fcntl(relays[i].from, F_GETFL) | O_NONBLOCK);
		struct pollfd pfd = { relays[i].from, POLLIN, 0 };
		while (poll(&pfd, 1, 50) > 0 && relay_once(&relays[i]))
			;
		if (relays[i].from != p.master)
			close(relays[i].from);
	}
	if (raw)
		tcsetattr(0, TCSANOW, &saved);
	sigprocmask(SIG_UNBLOCK, &mask, NULL);
	int code = st < 0 ? EXIT_SANDLOT : exit_code(ctx, &p, st);
	proc_close(&p);
	if (timed_out) {
		fprintf(stderr, "sandlot: the command timed out after %llums and was killed\n",
			(unsigned long long)o->timeout_ms);
		return EXIT_TIMEOUT;
	}
	return code;
}

int cmd_create(sl_ctx *ctx, int argc, char **argv)
{
	__attribute__((cleanup(opts_free))) struct opts o;
	int i = parse_opts(argc, argv, MODE_CREATE, &o);
	if (i < 0)
		return EXIT_SANDLOT;
	if (i < argc)
		return cli_usage("create: unexpected argument \"%s\"", argv[i]);
	sl_sandbox sb;
	sl_err err = { 0 };
	if (sandbox_create(ctx, &o.c, &sb, &err) < 0)
		return cli_fail(&err);
	/* The image's start command running and ready (startcmd.h), or no sandbox. */
	char start_exec[32];
	if (startcmd_image_run(ctx, &sb, start_exec, &err) < 0) {
		sl_err e2 = {0};
		sandbox_destroy(ctx, sb.id, "its image's start command failed", &e2);
		sandbox_free(&sb);
		return cli_fail(&err);
	}
	printf("%s\n", sb.id);
	sandbox_free(&sb);
	return 0;
}

/* `sandlot run` answers once its command has ended, as the API's DELETE does: the
 * sandbox is SIGKILLed and tombstoned, and a detached child frees the rest after we have
 * exited (release_detached_exit; ~1.4 ms here). */
int cmd_run(sl_ctx *ctx, int argc, char **argv)
{
	__attribute__((cleanup(opts_free))) struct opts o;
	int i = parse_opts(argc, argv, MODE_RUN, &o);
	if (i < 0)
		return EXIT_SANDLOT;
	o.c.ephemeral = true;
	sl_sandbox sb = { 0 };
	sl_err err = { 0 };
	_cleanup_free_ char **image_cmd = NULL;
	if (i >= argc) {
		/* As docker run: the image's Entrypoint + Cmd. */
		sl_image img;
		if (!o.c.snapshot && (sandbox_lookup_image(ctx, o.c.image, &img, &err) < 0 ||
				      image_command(ctx->cfg.state_dir, &img, &image_cmd, &err) < 0))
			return cli_fail(&err);
		if (!image_cmd)
			return cli_usage("run: no command given, and the image names none (sandlot "
					 "run [OPTIONS] -- CMD [ARG...])");
	}
	int code = run_command(ctx, &sb, true, image_cmd ? image_cmd : argv + i, &o);
	if (!sb.id[0])
		return code;
	if (release_detached_exit(ctx, sb.id, code, &err) < 0) {
		cli_fail(&err);
		code = EXIT_SANDLOT;
	}
	sandbox_free(&sb);
	return code;
}

int cmd_exec(sl_ctx *ctx, int argc, char **argv)
{
	__attribute__((cleanup(opts_free))) struct opts o;
	int i = parse_opts(argc, argv, MODE_EXEC, &o);
	if (i < 0)
		return EXIT_SANDLOT;
	if (i >= argc)
		return cli_usage("exec: no sandbox given (sandlot exec ID -- CMD [ARG...])");
	const char *ref = argv[i++];
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i >= argc)
		return cli_usage("exec: no command given (sandlot exec ID -- CMD [ARG...])");
	sl_sandbox sb;
	sl_err err = { 0 };
	if (sandbox_get(ctx, ref, &sb, &err) < 0)
		return cli_fail(&err);
	int code = run_command(ctx, &sb, false, argv + i, &o);
	sandbox_free(&sb);
	return code;
}
