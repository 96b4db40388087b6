/* cli.h — the sandlot command line: one function per verb, thin over runtime/.
 * Exit codes follow docker: the command's own, 125 when sandlot fails. */
#ifndef SANDLOT_CLI_H
#define SANDLOT_CLI_H

#include "sandbox.h"

#define EXIT_SANDLOT 125
#define EXIT_CANNOT_EXEC 126
#define EXIT_NOT_FOUND 127
#define EXIT_TIMEOUT 124

/* Print "sandlot: <msg>" and return 125. */
int cli_fail(const sl_err *err);
/* Print O as indented JSON and a newline. */
void cli_print_json(const cJSON *o);
int cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int cmd_run(sl_ctx *ctx, int argc, char **argv);
int cmd_create(sl_ctx *ctx, int argc, char **argv);
int cmd_exec(sl_ctx *ctx, int argc, char **argv);
int cmd_ls(sl_ctx *ctx, int argc, char **argv);
int cmd_inspect(sl_ctx *ctx, int argc, char **argv);
int cmd_rm(sl_ctx *ctx, int argc, char **argv);
int cmd_image(sl_ctx *ctx, int argc, char **argv);
int cmd_lifecycle(sl_ctx *ctx, int argc, char **argv);
int cmd_snapshot(sl_ctx *ctx, int argc, char **argv);
int cmd_fork(sl_ctx *ctx, int argc, char **argv);
int cmd_checkpoint(sl_ctx *ctx, int argc, char **argv);
int cmd_rollback(sl_ctx *ctx, int argc, char **argv);
int cmd_volume(sl_ctx *ctx, int argc, char **argv);
int cmd_secret(sl_ctx *ctx, int argc, char **argv);
int cmd_cp(sl_ctx *ctx, int argc, char **argv);
int cmd_serve(sl_ctx *ctx, int argc, char **argv);
int cmd_key(sl_ctx *ctx, int argc, char **argv);
int cmd_code(sl_ctx *ctx, int argc, char **argv);
int cmd_image_build(sl_ctx *ctx, int argc, char **argv);
/* --registry-mirror URL, --insecure-registry HOST[:PORT] (added to the list) or
 * --auth-file PATH into CFG; 0, or -1 having printed why. */
int cli_registry_flag(sl_config *cfg, const char *flag, const char *value);
/* `doctor` opens the runtime itself: not being able to is its exit 2. */
int cmd_doctor(int argc, char **argv);
/* `sandlot-oci`: runc's command line (argv[0] is the link's name). */
int cmd_oci(int argc, char **argv);
/* `mcp` needs only the config (the daemon's socket): it is a bridge to the daemon's /mcp. */
int cmd_mcp(int argc, char **argv);
/* `ui`: a one-time sign-in link to the dashboard, asked of the daemon (docs/dashboard.md). */
int cmd_ui(int argc, char **argv);

/* One request to the daemon on its unix socket (daemon.c). */
typedef struct cli_http_reply {
	int status;
	char session[80]; /* `mcp`: the Mcp-Session-Id of the answer */
	char *body;	  /* NUL-terminated; points into buf */
	char *buf;	  /* the head (NUL-terminated) and body: free() it */
} cli_http_reply;
/* EXTRA_HEADERS: "Name: value\r\n" lines, or NULL. */
int cli_daemon_http(const char *socket_path, const char *method, const char *path,
		    const char *extra_headers, const char *body, size_t len, cli_http_reply *out,
		    sl_err *err);
/* The value of header NAME in R's head (up to its line's end), or NULL. */
const char *cli_http_header(const cli_http_reply *r, const char *name);

#endif
