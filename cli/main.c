/* main.c — sandlot's entry point: picks the verb, opens the runtime context, and
 * turns failures into one line on stderr and exit status 125. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
	"usage: sandlot COMMAND [OPTIONS]\n"
	"\n"
	"  run    [OPTIONS] [--image NAME] -- CMD [ARG...]   create, run, destroy\n"
	"  create [OPTIONS] [--image NAME] [--name NAME]     print the new sandbox's id\n"
	"  exec   [-e K=V] [-w DIR] [-u USER] [-i] [-t] [--timeout 30s] ID -- CMD [ARG...]\n"
	"  ls [-a] [--format json]   inspect ID   rm [-f] ID...\n"
	"  cp [-L] SRC DST                                   either side may be ID:PATH\n"
	"  code ID --language python|typescript|javascript|bash (CODE | -)\n"
	"  serve [--socket PATH] [--listen 127.0.0.1:PORT]\n"
	"  mcp [--socket PATH]   the MCP server over stdio, for AI clients (docs/mcp.md)\n"
    "  ui [--socket PATH]    a one-time sign-in link to the dashboard (docs/dashboard.md)\n"
	"  key                print the admin API key (sees and manages everything)\n"
	"  key create NAME    issue a key (printed once; it sees only what it makes)\n"
	"  key ls   key rm NAME\n"
	"  pause|resume|stop|start ID...\n"
	"  hibernate ID...    its processes to disk with CRIU (made with --hibernate; resume)\n"
	"  snapshot create ID [--name N]   snapshot ls   snapshot rm ID|NAME\n"
	"  fork ID [-n N] [--name NAME] [--memory]\n"
	"                                 N copies of a sandbox's files and settings\n"
	"                                 (--memory: and its processes; --hibernate ones)\n"
	"  checkpoint create ID NAME [--memory]   checkpoint ls ID   checkpoint rm ID NAME\n"
	"  rollback ID CHECKPOINT      the sandbox's files back as the checkpoint has them\n"
	"  volume create NAME   volume ls   volume rm NAME\n"
	"  secret set NAME (the value on stdin)   secret ls   secret rm NAME\n"
	"  image import NAME FILE|-   image pull REF   image ls   image rm NAME   image inspect NAME\n"
	"  image build -t NAME [-f FILE] [--build-arg K=V] [--network] DIR   (a Dockerfile)\n"
	"  image build RECIPE|default                      (a directory with build.sh)\n"
	"  doctor [--repair] [--format json]   find (and remove) what is broken or orphaned;\n"
	"         exit 0 clean, 1 problems found (left), 2 could not check\n"
	"\n"
	"OPTIONS: --cpu 500m --memory 256Mi --disk 1Gi --pids 512 -e K=V -w DIR -u USER\n"
	"         -v VOLUME|HOSTDIR:/path[:ro] --snapshot ID|NAME\n"
	"         --label K=V -i -t --timeout 30s\n"
	"         --network [--network-allow CIDR]... [--network-deny CIDR]...\n"
	"         --package apt|pip|npm:NAME[@VERSION]   installed before start, cached\n"
	"         --secret ENV=SECRET   --secret-file /run/secrets/FILE=SECRET   (secret set)\n"
	"         --hibernate   launched so that it can be hibernated (docs/hibernate.md)\n";

int cli_fail(const sl_err *err)
{
	fprintf(stderr, "sandlot: %s\n", err->msg[0] ? err->msg : "unknown error");
	return EXIT_SANDLOT;
}

void cli_print_json(const cJSON *o)
{
	char *s = cJSON_Print(o);
	if (s)
		puts(s);
	free(s);
}

int cli_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("sandlot: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs(" (see 'sandlot --help')\n", stderr);
	va_end(ap);
	return EXIT_SANDLOT;
}

#ifdef __SANITIZE_ADDRESS__
/* make SAN=1 only. ASan calls this before every noreturn call to unpoison the rest of
 * the stack, and warns once ("ignoring requested __asan_handle_no_return") when the stack
 * is not the thread's: a launch child runs on its own stack (runtime/launch.c), so the
 * warning landed in the sandbox's stderr. The unpoisoning matters only where a stack
 * lives on after a noreturn call (longjmp, swapcontext), which sandlot never does; the
 * launch stacks are unpoisoned when they are put back (launch_stack_put). This
 * definition in the executable comes before libasan's for every caller. */
void __asan_handle_no_return(void);
void __asan_handle_no_return(void)
{
}
#endif

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(sl_ctx *, int, char **);
	} verbs[] = {
		{ "run", cmd_run },	 { "create", cmd_create }, { "exec", cmd_exec },
		{ "ls", cmd_ls },	 { "ps", cmd_ls },	   { "inspect", cmd_inspect },
		{ "rm", cmd_rm },	 { "image", cmd_image },	   { "pause", cmd_lifecycle },
		{ "hibernate", cmd_lifecycle },
		{ "resume", cmd_lifecycle }, { "stop", cmd_lifecycle }, { "start", cmd_lifecycle },
		{ "snapshot", cmd_snapshot }, { "volume", cmd_volume }, { "cp", cmd_cp },
		{ "secret", cmd_secret }, { "fork", cmd_fork }, { "checkpoint", cmd_checkpoint },
		{ "rollback", cmd_rollback },
		{ "serve", cmd_serve },	 { "key", cmd_key },	   { "code", cmd_code },
	};
	const char *self = strrchr(argv[0], '/');
	if (!strcmp(self ? self + 1 : argv[0], "sandlot-oci"))
		return cmd_oci(argc, argv);
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_SANDLOT : 0;
	}
	if (!strcmp(argv[1], "doctor"))
		return cmd_doctor(argc - 1, argv + 1);
	if (!strcmp(argv[1], "mcp"))
		return cmd_mcp(argc - 1, argv + 1);
	if (!strcmp(argv[1], "ui"))
		return cmd_ui(argc - 1, argv + 1);
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		if (strcmp(argv[1], verbs[i].name) != 0)
			continue;
		sl_ctx ctx;
		sl_err err = { 0 };
		if (ctx_open(&ctx, &err) < 0)
			return cli_fail(&err);
		int r = verbs[i].fn(&ctx, argc - 1, argv + 1);
		ctx_close(&ctx);
		return r;
	}
	return cli_usage("unknown command \"%s\"", argv[1]);
}
