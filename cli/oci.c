/* oci.c — `sandlot-oci` (sandlot run by that name, a link make installs): runc's command
 * line, as containerd's runc shim (options.BinaryName) and podman (--runtime) drive it,
 * over runtime/ocirun.c. Errors go to --log as JSON lines ({"level","msg","time"}), which
 * the shim reads back, and to stderr; the exit code is 1, or an exec'd process's own. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ocirun.h"
#include "ocispec.h"
#include "state.h"

#define OCI_VERSION_TEXT "sandlot-oci version 0.1 (sandlot)\nspec: 1.0.2\n"

struct oci_cli {
	const char *root, *log;
	bool json;
};

static void log_line(const struct oci_cli *c, const char *level, const char *msg)
{
	FILE *f = c->log ? fopen(c->log, "ae") : NULL;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char t[64];
	strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (f && c->json) {
		fprintf(f, "{\"level\":\"%s\",\"msg\":\"", level);
		for (const char *p = msg; *p; p++) {
			if (*p == '"' || *p == '\\')
				fprintf(f, "\\%c", *p);
			else if ((unsigned char)*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
		fprintf(f, "\",\"time\":\"%s\"}\n", t);
	} else if (f) {
		fprintf(f, "time=\"%s\" level=%s msg=\"%s\"\n", t, level, msg);
	}
	if (f)
		fclose(f);
}

static int fail_msg(const struct oci_cli *c, const char *msg)
{
	log_line(c, "error", msg);
	fprintf(stderr, "sandlot-oci: %s\n", msg);
	return 1;
}

static int fail(const struct oci_cli *c, const sl_err *err)
{
	char msg[1100];
	snprintf(msg, sizeof(msg), "%s (%s)", err->msg, sl_kind_code(err->kind));
	return fail_msg(c, msg);
}

/* "--name value" or "--name=value" (one dash too, as runc's parser takes): 1 matched
 * (*VAL set, *I moved past it), 0 not this flag, -1 value missing. */
static int opt_val(int argc, char **argv, int *i, const char *name, const char **val)
{
	const char *a = argv[*i];
	a += a[1] == '-' ? 2 : 1;
	size_t n = strlen(name);
	if (strncmp(a, name, n))
		return 0;
	if (a[n] == '=') {
		*val = a + n + 1;
		return 1;
	}
	if (a[n])
		return 0;
	if (*i + 1 >= argc)
		return -1;
	*val = argv[++*i];
	return 1;
}

static bool opt_flag(const char *a, const char *name)
{
	if (a[0] != '-')
		return false;
	a += a[1] == '-' ? 2 : 1;
	size_t n = strlen(name);
	return !strncmp(a, name, n) && (!a[n] || !strcmp(a + n, "=true"));
}

struct verb_opts {
	const char *bundle, *pid_file, *console, *process, *format, *resources;
	int preserve_fds;
	bool detach, all, force;
	const char *args[2];
	int nargs;
};

static int parse_verb(const struct oci_cli *c, int argc, char **argv, struct verb_opts *v)
{
	static const char *const ignored_flags[] = {"no-pivot", "no-new-keyring",	 "tty", "t",
						    "rm",	"systemd-cgroup-ignored"};
	static const char *const ignored_vals[] = {"cwd", "user",	   "u",	       "env", "e",
						   "cap", "process-label", "apparmor", "log"};
	memset(v, 0, sizeof(*v));
	v->bundle = ".";
	v->preserve_fds = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		if (a[0] != '-' || !a[1]) {
			if (v->nargs == 2)
				return fail_msg(c, "too many arguments");
			v->args[v->nargs++] = a;
			continue;
		}
		int r;
		if ((r = opt_val(argc, argv, &i, "bundle", &val)) ||
		    (r = opt_val(argc, argv, &i, "b", &val)))
			v->bundle = val;
		else if ((r = opt_val(argc, argv, &i, "pid-file", &val)))
			v->pid_file = val;
		else if ((r = opt_val(argc, argv, &i, "console-socket", &val)))
			v->console = val;
		else if ((r = opt_val(argc, argv, &i, "process", &val)) ||
			 (r = opt_val(argc, argv, &i, "p", &val)))
			v->process = val;
		else if ((r = opt_val(argc, argv, &i, "format", &val)) ||
			 (r = opt_val(argc, argv, &i, "f", &val)))
			v->format = val;
		else if ((r = opt_val(argc, argv, &i, "resources", &val)) ||
			 (r = opt_val(argc, argv, &i, "r", &val)))
			v->resources = val;
		else if ((r = opt_val(argc, argv, &i, "preserve-fds", &val))) {
			char *end;
			long n = strtol(val, &end, 10);
			if (*end || n < 0 || n > 1024)
				return fail_msg(c, "--preserve-fds: want a number 0..1024");
			v->preserve_fds = (int)n;
		} else if (opt_flag(a, "detach") || opt_flag(a, "d"))
			v->detach = true;
		else if (opt_flag(a, "all") || opt_flag(a, "a"))
			v->all = true;
		else if (opt_flag(a, "force") || opt_flag(a, "f"))
			v->force = true;
		else {
			bool known = false;
			for (size_t k = 0;
			     !known && k < sizeof(ignored_flags) / sizeof(*ignored_flags); k++)
				known = opt_flag(a, ignored_flags[k]);
			for (size_t k = 0;
			     !known && k < sizeof(ignored_vals) / sizeof(*ignored_vals); k++)
				known = (r = opt_val(argc, argv, &i, ignored_vals[k], &val)) == 1;
			if (!known) {
				char m[300];
				snprintf(m, sizeof(m), "unknown option %s", a);
				return fail_msg(c, m);
			}
		}
		if (r < 0) {
			char m[300];
			snprintf(m, sizeof(m), "option %s needs a value", a);
			return fail_msg(c, m);
		}
	}
	return 0;
}

static int run_verb(sl_ctx *ctx, const struct oci_cli *c, const char *verb, struct verb_opts *v,
		    sl_err *err)
{
	const char *id = v->args[0];
	char *json = NULL;
	if (!id)
		return sl_fail(err, SL_INVALID, 0, "%s: a container id is needed", verb);
	if (!strcmp(verb, "create")) {
		oci_create_opts o = {v->bundle, v->pid_file, v->console, v->preserve_fds};
		return ocirun_create(ctx, c->root, id, &o, err);
	}
	if (!strcmp(verb, "start") || !strcmp(verb, "delete")) {
		/* A failed poststart or poststop hook is a warning, as in runc. */
		sl_err warn = {0};
		int r = verb[0] == 's' ? ocirun_start(ctx, c->root, id, &warn, err)
				       : ocirun_delete(ctx, c->root, id, v->force, &warn, err);
		if (warn.msg[0]) {
			log_line(c, "warning", warn.msg);
			if (!c->log)
				fprintf(stderr, "sandlot-oci: warning: %s\n", warn.msg);
		}
		return r;
	}
	if (!strcmp(verb, "state") || !strcmp(verb, "ps")) {
		if (!strcmp(verb, "ps") && v->format && strcmp(v->format, "json") &&
		    strcmp(v->format, "table"))
			return sl_fail(err, SL_INVALID, 0, "ps: unknown format %s", v->format);
		int r = verb[0] == 's' ? ocirun_state(ctx, c->root, id, &json, err)
				       : ocirun_ps(ctx, c->root, id, &json, err);
		if (r == 0)
			printf("%s\n", json);
		free(json);
		return r;
	}
	if (!strcmp(verb, "kill")) {
		int sig = oci_signal_parse(v->args[1] ? v->args[1] : "TERM");
		if (sig < 0)
			return sl_fail(err, SL_INVALID, 0, "kill: unknown signal %s", v->args[1]);
		return ocirun_kill(ctx, c->root, id, sig, v->all, err);
	}
	if (!strcmp(verb, "pause") || !strcmp(verb, "resume"))
		return ocirun_pause(ctx, c->root, id, verb[0] == 'p', err);
	if (!strcmp(verb, "update")) {
		if (!v->resources)
			return sl_fail(err, SL_INVALID, 0, "update: only --resources is supported");
		char *text = NULL;
		size_t len = 0;
		int r = state_read_file(strcmp(v->resources, "-") ? v->resources : "/dev/stdin",
					1 << 20, &text, &len, err);
		if (r == 0)
			r = ocirun_update(ctx, c->root, id, text, len, err);
		free(text);
		return r;
	}
	return sl_fail(err, SL_INVALID, 0, "unknown command %s", verb);
}

int cmd_oci(int argc, char **argv)
{
	struct oci_cli c = {.root = "/run/sandlot-oci"};
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *val;
		int r;
		if (opt_flag(argv[i], "version") || opt_flag(argv[i], "v")) {
			fputs(OCI_VERSION_TEXT, stdout);
			return 0;
		}
		if ((r = opt_val(argc, argv, &i, "root", &val)) == 1)
			c.root = val;
		else if ((r = opt_val(argc, argv, &i, "log", &val)) == 1)
			c.log = val;
		else if ((r = opt_val(argc, argv, &i, "log-format", &val)) == 1)
			c.json = !strcmp(val, "json");
		else if (opt_flag(argv[i], "systemd-cgroup"))
			return fail_msg(&c, "--systemd-cgroup is not supported: sandlot-oci drives "
					    "cgroupfs (v1 and v2); configure the cgroupfs driver");
		else if (opt_flag(argv[i], "debug") || opt_flag(argv[i], "rootless") ||
			 (r = opt_val(argc, argv, &i, "criu", &val)) == 1)
			continue;
		else {
			char m[300];
			snprintf(m, sizeof(m), "unknown global option %s", argv[i]);
			return fail_msg(&c, m);
		}
		if (r < 0)
			return fail_msg(&c, "a global option needs a value");
	}
	if (i >= argc)
		return fail_msg(&c, "usage: sandlot-oci [--root DIR] [--log FILE] [--log-format "
				    "json] COMMAND [OPTIONS] ID");
	const char *verb = argv[i];
	if (!strcmp(verb, "features")) {
		puts(ocirun_features());
		return 0;
	}
	struct verb_opts v;
	if (parse_verb(&c, argc - i, argv + i, &v))
		return 1;
	sl_ctx ctx;
	sl_err err = {0};
	if (ctx_open(&ctx, &err) < 0)
		return fail(&c, &err);
	int r, status = 0;
	if (!strcmp(verb, "exec")) {
		oci_exec_opts o = {v.process, v.pid_file, v.console, v.detach};
		if (!v.process)
			r = sl_fail(&err, SL_INVALID, 0, "exec: --process FILE is needed");
		else if (!v.args[0])
			r = sl_fail(&err, SL_INVALID, 0, "exec: a container id is needed");
		else
			r = ocirun_exec(&ctx, c.root, v.args[0], &o, &status, &err);
	} else {
		r = run_verb(&ctx, &c, verb, &v, &err);
	}
	ctx_close(&ctx);
	if (r < 0)
		return fail(&c, &err);
	return status;
}
