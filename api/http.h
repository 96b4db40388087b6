/* http.h — the pieces of `sandlot serve` the route handlers share: the server and
 * request structs, replies in the one error shape, query and body helpers. */
#ifndef SANDLOT_API_HTTP_H
#define SANDLOT_API_HTTP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "code.h"
#include "exec.h"
#include "sandbox.h"
#include "secret.h"
#include "api.h"
#include "conns.h"

/* A pty master the daemon holds for an interactive execution until it ends: the one
 * piece of live state that is not in files (pty sessions end with the daemon). */
typedef struct api_pty {
	struct api_pty *next;
	char sandbox_id[32], exec_id[32];
	int master;
	bool attached;
} api_pty;

typedef struct api_server {
	sl_ctx *ctx;
	api_options opt;
	char key[API_KEY_LEN + 1];
	atomic_bool stopping;
	atomic_ullong executions_started; /* since this daemon started (metrics) */
	pthread_mutex_t lock;		  /* guards ptys and relays */
	api_pty *ptys;
	struct api_relay *relays; /* port relays (ports.c) */
	int preview_fd;
	uint16_t preview_port;
	api_caps port_caps; /* the relays' and the preview proxy's connections (ports.c) */
	struct api_pool *pool; /* the pool, the releaser and the syncer (pool.c) */
	int64_t tombstones_ms; /* the deadline sweep's last tombstone collection */
	atomic_uint imports;   /* image imports running (at most cfg.max_imports) */
	struct dt_builds *dt_builds; /* the Daytona façade's builds (compat/daytona_build.c) */
	struct mcp_sessions *mcp;    /* the MCP server's sessions (mcp.c) */
	struct api_ui *ui;	     /* the dashboard's sessions and sign-in tokens (ui.c) */
	struct api_events *events;   /* the event stream's ring (events.c) */
	uint16_t tcp_port;	     /* the TCP listener's port (0: none), for `sandlot ui` */
} api_server;

typedef struct api_pool api_pool;
/* Start the releaser (and the pool's filler when SPECS ask for one), after finishing
 * what a previous daemon left; stop discards the pool and finishes every release. */
int api_pool_start(api_server *s, const api_pool_spec *specs, int n, sl_err *err);
void api_pool_stop(api_server *s);
/* A create served from the pool: 1 (OUT is the sandbox), 0 (not poolable or the pool is
 * empty: create cold), -1 (ERR). */
int api_pool_take(api_server *s, const sl_create_opts *o, sl_sandbox *out, sl_err *err);
/* Destroy through the releaser: kill and tombstone now, free the rest in the background. */
int api_destroy(api_server *s, const char *ref, const char *reason, sl_err *err);
/* Records the syncer made durable since the daemon started, and those waiting. */
void api_sync_stats(api_server *s, uint64_t *synced, size_t *pending);
/* [{image, size, ready}] for /v1/health; the number of ready sandboxes. */
cJSON *api_pool_json(api_server *s);

typedef enum api_body { API_BODY_NONE, API_BODY_JSON, API_BODY_RAW } api_body;

#define API_MAX_PARAMS 4

typedef struct api_req api_req;

typedef struct api_route {
	const char *method;
	const char *pattern; /* "/v1/sandboxes/{id}/files"; {x} captures one segment */
	api_body body;
	enum MHD_Result (*handle)(api_req *r);
	/* Raw uploads: begin before the first byte (may refuse the request), then each
	 * piece in order. A failure answers with the error once the body is consumed. */
	int (*begin)(api_req *r, sl_err *err);
	int (*chunk)(api_req *r, const char *data, size_t len, sl_err *err);
	unsigned flags; /* API_ROUTE_* */
} api_route;

/* The handler authenticates the request itself (capability URLs, per-sandbox tokens):
 * the TCP listener does not ask for the API key first. */
#define API_ROUTE_OWN_AUTH 1u

/* A compatibility façade (api/compat/): a remote provider's wire protocol translated to
 * the same runtime calls as /v1. The server asks each façade, in order, whether a
 * request is its own (by path prefix or header); a claimed request is matched only
 * against the façade's table and answered in its error shape. */
typedef struct api_facade {
	const char *name;
	bool (*claims)(api_req *r);
	const api_route *routes;
	size_t nroutes;
	/* A path one of its routes names literally is only that route's, for every method
	 * (as /v1's: /ui/login is never the file "login"). */
	bool literal_wins;
	/* No route matched (PATH_KNOWN: another method serves it; ALLOW lists them). */
	enum MHD_Result (*no_route)(api_req *r, bool path_known, const char *allow);
	/* The API key was missing or wrong on a keyed listener. */
	enum MHD_Result (*unauthorized)(api_req *r);
	/* For a route with its own auth (API_ROUTE_OWN_AUTH): the credentials in the headers,
	 * checked before any of the body is read. -1 with the refusal queued in *RET. */
	int (*gate)(api_req *r, enum MHD_Result *ret);
	/* The daemon is stopping, its listeners closed: end what the façade runs itself
	 * (may be NULL). */
	void (*stop)(api_server *s);
} api_facade;

extern const api_facade api_facade_daytona, api_facade_e2b, api_facade_agentuity,
    api_facade_mcp, api_facade_ui;
/* NULL-terminated, in the order they are asked (routes.c). */
extern const api_facade *const api_facades[];

struct api_req {
	api_server *srv;
	struct MHD_Connection *conn;
	const api_route *route;
	const api_facade *facade; /* the façade that claimed the request, or NULL (/v1) */
	bool keyed;		  /* it came on a listener that needs the API key */
	bool ui_refused;	  /* a dashboard cookie used from another origin (ui.c) */
	char owner[SL_OWNER_LEN]; /* the key it acts for ("" the admin, the socket's) */
	char method[16];
	char *url;
	char *param[API_MAX_PARAMS];
	int nparam;
	cJSON *json; /* the parsed body of a JSON route; NULL when the body was empty */
	char *body;
	size_t body_len, body_cap;
	uint64_t received, cap;
	sl_err pending; /* an error met while the body was arriving */
	bool queued;
	/* An answer found before a body that is still to come (no route, no key, ...):
	 * kept until the body is read, since a reply sent before it makes libmicrohttpd
	 * close the connection, and a client still writing the body gets EPIPE or a reset
	 * instead of the error. */
	bool deferring;
	struct MHD_Response *deferred;
	unsigned deferred_status;
	api_caps *caps;	  /* the listener's connections, and this one's place there */
	api_conn *place;
	bool long_lived; /* a stream or an upgrade: no idle timeout (api_conn_long_lived) */
	void *upload; /* a raw route's state, released by upload_free */
	void (*upload_free)(api_req *r);
	/* Work for after the answer has gone out (on_completed, in the connection's
	 * thread, before its next request is read), given AFTER_ARG to free: a sandbox's
	 * warm code runner to start (api_code_run). */
	void (*after)(api_req *r, void *arg);
	void *after_arg;
};

/* ---- the dashboard (ui.c) and the event stream (events.c) ---- */

/* R's dashboard session cookie: 1 (r->owner set), 0 (none, or not a live session), -1
 * (a live session used from another origin: answer api_ui_reply_forbidden). */
int api_ui_cookie_auth(api_req *r);
enum MHD_Result api_ui_reply_forbidden(api_req *r);
/* The ring the runtime's record writes feed (ctx->record_changed); freed at the stop. */
int api_events_start(api_server *s, sl_err *err);
void api_events_stop(api_server *s);
enum MHD_Result api_events(api_req *r);

/* ---- routing (routes.c) ---- */

/* The route for METHOD and PATH, filling r->param; NULL when none. *path_known says
 * whether some other method serves PATH (405 rather than 404). */
const api_route *api_route_match(api_req *r, const char *method, const char *path, bool *path_known,
				 char *allow, size_t allow_len);
/* The same over a façade's table (its literal_wins). */
const api_route *api_route_match_in(const api_facade *f, api_req *r, const char *method,
				    const char *path, bool *path_known, char *allow,
				    size_t allow_len);

/* ---- replies (http.c) ---- */

enum MHD_Result api_reply(api_req *r, unsigned status, struct MHD_Response *resp);
/* Takes BODY. */
enum MHD_Result api_reply_json(api_req *r, unsigned status, cJSON *body);
enum MHD_Result api_reply_empty(api_req *r, unsigned status);

/* A JSON array written an item at a time, each printed as it comes and freed: a reply
 * of N entries costs their text, not a tree of them, and at most API_JSON_LIST_MAX. */
#define API_JSON_LIST_MAX (32u << 20)
typedef struct api_json_list {
	char *buf;
	size_t len, cap, count;
} api_json_list;
/* Takes ITEM. SL_TOOLARGE once the text would pass API_JSON_LIST_MAX. */
int api_json_list_add(api_json_list *l, cJSON *item, sl_err *err);
/* Answers BEFORE, the array, AFTER (e.g. "{\"entries\":" and "}"); takes L's text. */
enum MHD_Result api_reply_json_list(api_req *r, unsigned status, api_json_list *l,
				    const char *before, const char *after);
void api_json_list_free(api_json_list *l);
/* The HTTP status of ERR: its kind's, but 507 for a full sandbox disk (every shape uses it). */
unsigned api_err_status(const sl_err *err);
enum MHD_Result api_reply_error(api_req *r, const sl_err *err);
/* How one API shape answers a failure: /v1's, and each façade's (CODE: the shape's own
 * machine code for it, or NULL for the kind's). */
typedef enum MHD_Result (*api_error_reply)(api_req *r, const sl_err *err, const char *code);
enum MHD_Result api_reply_error_coded(api_req *r, const sl_err *err, const char *code);
/* The one varargs failure: an error of KIND with a formatted message, answered by REPLY. */
enum MHD_Result api_fail_with(api_req *r, api_error_reply reply, const char *code, sl_kind kind,
			      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
#define api_fail(r, kind, ...) api_fail_with((r), api_reply_error_coded, NULL, (kind), __VA_ARGS__)
/* The error body, {"error":{"code","message"}}; EXTRA (taken) is merged into "error". */
struct MHD_Response *api_error_response(const char *code, const char *message, cJSON *extra);

/* ---- query and body helpers (http.c) ---- */

const char *api_query(api_req *r, const char *key);
/* "1", "true", "yes" / "0", "false", "no", or absent (DEF). */
int api_query_bool(api_req *r, const char *key, bool def, bool *out, sl_err *err);
/* A whole number 0..MAX; absent leaves *OUT as it is, anything else is SL_INVALID. */
int api_query_uint(api_req *r, const char *key, uint64_t max, uint64_t *out, sl_err *err);
/* A duration ("30s", "500ms", or integer ms); *given false when absent. */
int api_query_duration(api_req *r, const char *key, uint64_t *ms, bool *given, sl_err *err);
/* The JSON body, which must be an object (an empty body counts as {} when EMPTY_OK). */
int api_body_object(api_req *r, bool empty_ok, const cJSON **out, sl_err *err);
/* Append to r->body (kept NUL-terminated): the JSON routes' body, and raw routes that
 * want their body whole. */
int api_body_append(api_req *r, const char *data, size_t n, sl_err *err);
/* Did the client close its end (long-polls stop early)? */
bool api_client_gone(api_req *r);
/* Parse TEXT as JSON; a syntax error is SL_INVALID naming the byte, line and column. */
cJSON *api_json_parse(const char *text, size_t len, sl_err *err);

/* ---- JSON field readers (json.c): a wrong type or unit is SL_INVALID naming the field ---- */

/* O must be an object whose keys are all in ALLOWED (NULL-terminated). WHERE prefixes
 * field names in messages ("" for the top level, "resources." inside). */
int api_json_fields(const cJSON *o, const char *where, const char *const *allowed, sl_err *err);
/* Absent or null leaves *out NULL. */
int api_json_string(const cJSON *o, const char *where, const char *key, const char **out,
		    sl_err *err);
int api_json_bool(const cJSON *o, const char *where, const char *key, bool *out, sl_err *err);
/* A whole number MIN..MAX, or a string of one; *given false when absent or null. */
int api_json_uint(const cJSON *o, const char *where, const char *key, uint64_t min, uint64_t max,
		  uint64_t *out, bool *given, sl_err *err);
/* A duration string or integer milliseconds. */
int api_json_duration(const cJSON *o, const char *where, const char *key, uint64_t *ms, bool *given,
		      sl_err *err);
/* An object of strings as a NULL-terminated "K=V" list (NULL when absent); free with
 * api_strv_free. */
int api_json_kv(const cJSON *o, const char *where, const char *key, char ***out, sl_err *err);
/* A command: an array of strings (argv) or one string (a shell line). */
int api_json_command(const cJSON *o, const char *where, const char *key, char ***argv,
		     const char **shell, sl_err *err);
/* Base64 (standard alphabet, padding optional) into a malloc'd buffer. */
int api_base64_decode(const char *field, const char *text, unsigned char **out, size_t *len,
		      sl_err *err);
/* File mode: a string of octal digits ("0644") or an integer; 0..07777. */
int api_json_mode(const cJSON *o, const char *where, const char *key, uint32_t *mode, bool *given,
		  sl_err *err);
/* Parse an octal mode string. */
int api_parse_mode(const char *field, const char *s, uint32_t *mode, sl_err *err);
void api_strv_free(char **v);
/* A copy of V (NULL-terminated; NULL for NULL, or when out of memory), for api_strv_free. */
char **api_strv_dup(char *const *v);
/* The network object {enabled?, allow?: [CIDR], deny?: [CIDR]} at KEY of O into NET;
 * *allow / *deny own the lists (NULL when absent; free with api_strv_free);
 * *enabled_given says whether "enabled" was there. Absent or null: all left empty. */
int api_json_network(const cJSON *o, const char *key, sl_net_opts *net, bool *enabled_given,
		     char ***allow, char ***deny, sl_err *err);
/* Bytes as a JSON-safe string: invalid UTF-8 and NUL become U+FFFD. */
char *api_utf8_string(const char *buf, size_t len);
/* "SIGTERM", "TERM", "15" -> 15; SL_INVALID naming FIELD otherwise. */
int api_signal_parse(const char *field, const char *s, int *sig, sl_err *err);
/* "5m", "1h30m", "500ms": the canonical form of a duration. */
void api_duration_format(uint64_t ms, char *buf, size_t len);

/* ---- shared by the route files ---- */

/* Constant-time comparison of a presented key with the daemon's (key.c). */
bool api_key_equal(const char *given, const char *key);

/* The sandbox REF names, unless it is unknown or destroyed (SL_NOTFOUND, also for a
 * malformed id). Free SB. */
int api_sandbox_live(api_server *s, const char *ref, sl_sandbox *sb, sl_err *err);
/* The sandbox REF names for a call on it (FOR_INIT: as api_sandbox_for_exec): NOT_FOUND
 * when unknown or destroyed; a paused or hibernated one is resumed when RESUME, else
 * CONFLICT. */
int api_sandbox_ready(api_server *s, const char *ref, bool for_init, bool resume, sl_sandbox *sb,
		      sl_err *err);
/* Resume the paused or hibernated sandbox ID for a call that needs it (autoResume; one
 * that another resume won is as good). One whose lifetime paused it (its deadline dropped) gets a
 * fresh one: its lifetime again, at least MIN_LIFETIME_MS (E2B: 5 minutes). SB: the
 * record after it; free it. */
int api_sandbox_wake(api_server *s, const char *id, uint64_t min_lifetime_ms, sl_sandbox *sb,
		     sl_err *err);
/* The sandbox named by r->param[0] for a call on it: 404 when unknown or destroyed,
 * 409 when paused or hibernated (unless ?autoResume=1), and the record in SB (free it). */
int api_sandbox_for_call(api_req *r, sl_sandbox *sb, sl_err *err);
/* The same for a call that starts a command: the init of a "running" record is not
 * looked up in /proc (sandbox_get_for_init); a dead one fails the start with 409. */
int api_sandbox_for_exec(api_req *r, sl_sandbox *sb, sl_err *err);
/* Paths a user gives are inside the sandbox; relative ones start at its working
 * directory. Returns a malloc'd absolute path, or NULL with SL_INVALID. */
char *api_sandbox_path(const sl_sandbox *sb, const char *field, const char *path, sl_err *err);
/* An upload's temporary name beside PATH (a sandbox file path; trailing slashes are cut
 * in place): "<dir>/.sandlot-upload-<random>", moved over PATH when complete. WHAT names
 * the field in the error when PATH names a directory. */
int api_upload_tmp(char *path, const char *what, char **tmp, sl_err *err);
/* The API's Sandbox object (with usage and execution count when DETAIL). */
cJSON *api_sandbox_json(api_server *s, const sl_sandbox *sb, bool detail);
/* Create a sandbox from a create-shaped body (used by /v1/run too). */
int api_sandbox_create_from(api_server *s, const cJSON *body, bool ephemeral, bool run_body,
			    sl_sandbox *out, sl_err *err);
/* The file PATH of SB as a raw-bytes response (application/octet-stream), served from
 * the descriptor sbxfs opened inside the sandbox's root; NULL with ERR. */
struct MHD_Response *api_file_response(api_server *s, const sl_sandbox *sb, const char *path,
				       sl_err *err);
/* Write {files:[{path, content, mode?}]} into SB; *n counts them. */
int api_files_write_batch(api_server *s, const sl_sandbox *sb, const cJSON *files, int *n,
			  sl_err *err);
/* Read up to CAP bytes of an execution's log as a JSON-safe string. */
int api_exec_read_output(api_server *s, const char *sandbox_id, const char *exec_id,
			 const char *stream, size_t cap, char **out, bool *truncated, sl_err *err);
/* Wait for an execution in slices, stopping early when the daemon stops or the client
 * leaves. Returns 0 when it ended, 1 when the wait ran out, -1 on error. */
int api_exec_wait(api_req *r, const char *sandbox_id, const char *exec_id, int64_t wait_ms,
		  sl_exec *out, sl_err *err);
/* The body of a command's start (POST /v1/sandboxes/{id}/executions: command, env, cwd,
 * user, timeout, stdin, pty), checked, as the spec of an exec_start in SB (timeout: the
 * sandbox's default when absent). Free with api_exec_body_free. */
typedef struct api_exec_body {
	char **argv, **env;
	const char *shell;
	sl_exec_spec spec;
} api_exec_body;
int api_exec_body_parse(const cJSON *body, const sl_sandbox *sb, api_exec_body *b, sl_err *err);
void api_exec_body_free(api_exec_body *b);
/* The Execution shape; with OUTPUT and a finished command, stdout/stderr inline (1 MiB
 * each, with stdoutTruncated/stderrTruncated). */
cJSON *api_exec_json(api_server *s, const sl_exec *e, bool output);
/* Start SPEC in SB and wait for its end: a short command's end arrives on init's own
 * connection (spec->wait_ms), a longer one's through api_exec_wait. Returns what that
 * does (0 ended, 1 abandoned, -1 error); OUT is filled unless -1. A pty is closed. */
/* The Entrypoint + Cmd of SB's image as *ARGV (one block: free() it); SL_INVALID when
 * the image names none. */
int api_image_command(api_server *s, const sl_sandbox *sb, char ***argv, sl_err *err);
int api_exec_run(api_req *r, const sl_sandbox *sb, sl_exec_spec *spec, sl_exec *out,
		 sl_err *err);
/* An execution's "stdout" or "stderr" log as a chunked body (stream.c): what is there
 * now, or with FOLLOW live until the command ends. NULL with ERR when it cannot open. */
struct MHD_Response *api_exec_stream_response(api_req *r, const char *sandbox_id,
					      const char *exec_id, const char *stream, bool follow,
					      sl_err *err);

/* ---- pty masters held for attach (attach.c) ---- */
void api_pty_add(api_server *s, const char *sandbox_id, const char *exec_id, int master);
/* Close the masters of executions that ended; with ALL, every master (shutdown). */
void api_pty_sweep(api_server *s, bool all);

/* ---- route handlers ---- */

/* sandboxes.c */
enum MHD_Result api_sandboxes_create(api_req *r);
enum MHD_Result api_sandboxes_list(api_req *r);
enum MHD_Result api_sandboxes_get(api_req *r);
enum MHD_Result api_sandboxes_patch(api_req *r);
enum MHD_Result api_sandboxes_delete(api_req *r);
/* executions.c */
enum MHD_Result api_exec_create(api_req *r);
enum MHD_Result api_exec_list(api_req *r);
enum MHD_Result api_exec_get(api_req *r);
enum MHD_Result api_exec_signal(api_req *r);
enum MHD_Result api_exec_stdin(api_req *r);
int api_exec_stdin_begin(api_req *r, sl_err *err);
int api_exec_stdin_chunk(api_req *r, const char *data, size_t len, sl_err *err);
enum MHD_Result api_processes_list(api_req *r);
enum MHD_Result api_processes_kill(api_req *r);
enum MHD_Result api_run(api_req *r);
/* stream.c */
enum MHD_Result api_exec_stdout(api_req *r);
enum MHD_Result api_exec_stderr(api_req *r);
/* attach.c */
enum MHD_Result api_exec_attach(api_req *r);
/* WebSocket (RFC 6455) pieces for other streams: does R ask for an upgrade; are its
 * handshake headers right (SL_INVALID saying what is missing); answer 101 (no
 * subprotocol) and run HANDLER (cls NULL, req_cls R) on the connection's thread once
 * upgraded, which ends with MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE); one
 * unmasked server frame (0x1 text, 0x2 binary, 0x8 close). */
bool api_ws_requested(api_req *r);
int api_ws_check(api_req *r, sl_err *err);
enum MHD_Result api_ws_accept(api_req *r, MHD_UpgradeHandler handler);
/* R's answer is a long-lived stream (?follow=1 logs, E2B Connect and code streams) or,
 * UPGRADE, a WebSocket: its connection is exempt from the idle timeout and the head
 * deadline until the request ends (server.c). Called once the request is authenticated. */
void api_conn_long_lived(api_req *r, bool upgrade);
int api_ws_send(int sock, int opcode, const void *data, size_t len);
/* One client frame at the start of IN: 0 while incomplete, else the bytes it takes, its
 * opcode, FIN bit and payload (unmasked in place); -1 with *bad the close code (1002
 * unmasked or reserved bits, 1009 payload over MAX). */
ssize_t api_ws_frame(unsigned char *in, size_t avail, uint64_t max, int *op, bool *fin,
		     unsigned char **payload, uint64_t *plen, int *bad);
/* files.c */
enum MHD_Result api_files_get(api_req *r);
enum MHD_Result api_files_put(api_req *r);
int api_files_put_begin(api_req *r, sl_err *err);
int api_files_put_chunk(api_req *r, const char *data, size_t len, sl_err *err);
enum MHD_Result api_files_post(api_req *r);
enum MHD_Result api_files_delete(api_req *r);
enum MHD_Result api_fs_list(api_req *r);
enum MHD_Result api_fs_stat(api_req *r);
enum MHD_Result api_fs_mkdir(api_req *r);
enum MHD_Result api_fs_move(api_req *r);
enum MHD_Result api_fs_chmod(api_req *r);
/* images.c */
enum MHD_Result api_images_list(api_req *r);
enum MHD_Result api_images_post(api_req *r);
int api_images_post_begin(api_req *r, sl_err *err);
int api_images_post_chunk(api_req *r, const char *data, size_t len, sl_err *err);
/* The API's Image object; the admission of an upload into the image store (imports and
 * builds share the --max-imports count: the caller gives its slot back). */
cJSON *api_image_json(const sl_image *img);
/* Remove image NAME unless a sandbox, snapshot or the pool uses it (SL_CONFLICT). */
int api_image_remove(api_server *s, const char *name, sl_err *err);
int api_import_admit(api_server *s, sl_err *err);
/* A request body a worker thread reads from a pipe as it comes (image imports and
 * builds): the chunks go in at WFD, the worker reads RFD and closes it when it wants no
 * more (the rest of the body is then dropped: the worker's result says why). */
typedef struct api_upload {
	int rfd, wfd;
	pthread_t thread;
	bool started, joined, reader_gone;
} api_upload;
/* The pipe made and FN(ARG) started on its own thread; U first set to no fds. */
int api_upload_start(api_upload *u, void *(*fn)(void *), void *arg, const char *what,
		     sl_err *err);
int api_upload_chunk(api_upload *u, const char *data, size_t len, const char *to,
		     sl_err *err);
/* The body is in: the worker reads its end. */
void api_upload_end(api_upload *u);
/* End, and wait for the worker. */
void api_upload_join(api_upload *u);
/* Join, and close what the worker left open. */
void api_upload_fini(api_upload *u);
/* images_build.c */
enum MHD_Result api_images_build(api_req *r);
int api_images_build_begin(api_req *r, sl_err *err);
int api_images_build_chunk(api_req *r, const char *data, size_t len, sl_err *err);
enum MHD_Result api_images_delete(api_req *r);
enum MHD_Result api_images_tags(api_req *r);
enum MHD_Result api_images_tag(api_req *r);
enum MHD_Result api_images_get(api_req *r);
/* POST /v1/images/pull: the pull's progress as JSON lines, then the image or the error. */
enum MHD_Result api_images_pull(api_req *r);
/* deadlines.c: mark API activity on a sandbox; act on passed lifetimes and idle
 * timeouts (called every second by the main loop, and once at start). */
void api_touch(api_server *s, const char *ref);
void api_enforce_deadlines(api_server *s);
/* ports.c: loopback relays into sandboxes and the preview proxy. */
enum MHD_Result api_ports_get(api_req *r);
void api_ports_sweep(api_server *s, bool all);
/* At the daemon's stop: close every relay, free them and the relays' caps. */
void api_ports_stop(api_server *s);
int api_preview_start(api_server *s, uint16_t want, sl_err *err);
/* The preview proxy's URL for PORT of sandbox ID (http://PORT-ID.localhost:PREVIEW/). */
void api_preview_url(api_server *s, const char *id, unsigned port, char *buf, size_t len);
/* forks.c */
enum MHD_Result api_sandboxes_fork(api_req *r);
enum MHD_Result api_sandboxes_rollback(api_req *r);
enum MHD_Result api_checkpoints_create(api_req *r);
enum MHD_Result api_checkpoints_list(api_req *r);
enum MHD_Result api_checkpoints_delete(api_req *r);
/* lifecycle.c */
enum MHD_Result api_sandboxes_pause(api_req *r);
enum MHD_Result api_sandboxes_hibernate(api_req *r);
enum MHD_Result api_sandboxes_resume(api_req *r);
enum MHD_Result api_sandboxes_stop(api_req *r);
enum MHD_Result api_sandboxes_start(api_req *r);
enum MHD_Result api_snapshots_create(api_req *r);
enum MHD_Result api_snapshots_list(api_req *r);
enum MHD_Result api_snapshots_get(api_req *r);
enum MHD_Result api_snapshots_delete(api_req *r);
enum MHD_Result api_volumes_list(api_req *r);
enum MHD_Result api_volumes_create(api_req *r);
enum MHD_Result api_volumes_delete(api_req *r);
enum MHD_Result api_code(api_req *r);
/* The body of POST /v1/sandboxes/{id}/code (code, language: python when absent, timeout,
 * env), checked; its run in SB as the CodeExecutionResult JSON (NULL with ERR). */
typedef struct api_code_args {
	const char *code, *language;
	char **env;
	uint64_t timeout_ms; /* 0: the sandbox's default */
} api_code_args;
int api_code_args_parse(const cJSON *body, api_code_args *a, sl_err *err);
void api_code_args_free(api_code_args *a);
/* A's code run in SB. R, when not NULL, is the request it answers: a call that asks for a
 * warm runner (sl_code_result.runner_wanted) has it started after R's answer. */
cJSON *api_code_run(api_server *s, api_req *r, const sl_sandbox *sb, const api_code_args *a,
		    sl_err *err);
/* RES asked for a warm runner (a call that ran cold): SB's runner of LANGUAGE started
 * after R's answer is out (api_req.after), with the call's ENV (copied). Every route that
 * runs code_run calls this. */
void api_code_runner_after(api_req *r, const sl_sandbox *sb, const char *language,
			   char *const *env, const sl_code_result *res);
/* secrets.c; the façades' secret routes use the same two calls. */
enum MHD_Result api_secrets_set(api_req *r);
/* BODY's "value" (a string) stored as NAME for the acting key under MODE (secret.h). */
int api_secret_put(api_req *r, const cJSON *body, const char *name, secret_mode mode,
		   sl_secret *out, bool *created, sl_err *err);
/* The request's copies of a secret's value (the raw body, BODY's parsed "value"), wiped:
 * every handler that read one calls it before it answers, whatever happened. */
void api_secret_wipe(api_req *r, const cJSON *body);
enum MHD_Result api_secrets_list(api_req *r);
enum MHD_Result api_secrets_delete(api_req *r);
/* system.c */
enum MHD_Result api_health(api_req *r);
enum MHD_Result api_metrics(api_req *r);

#endif
