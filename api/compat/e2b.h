/* e2b.h — what the E2B façade's files share: the sandbox plane's gate (the sandbox named
 * by E2b-Sandbox-Id, its per-sandbox tokens), error replies in E2B's shapes, and the
 * handlers of the envd (e2b_envd.c) and code-interpreter (e2b_interp.c) routes. */
#ifndef SANDLOT_API_E2B_H
#define SANDLOT_API_E2B_H

#include "cleanup.h"
#include "http.h"

/* What the SDK is told envd is: it gates client features (octet-stream uploads need
 * 0.5.7, closeStdin 0.5.2, getMetrics 0.1.5; see docs/e2b.md). */
#define E2B_ENVD_VERSION "0.6.4"
#define E2B_ENVD_PORT	 "49983"
#define E2B_INTERP_PORT	 "49999"

/* The label holding the template a sandbox was created from (metadata are the other
 * labels, minus this prefix). */
#define E2B_LABEL_PREFIX   "e2b."
#define E2B_LABEL_TEMPLATE "e2b.templateID"

/* Per-sandbox tokens: hex HMAC-SHA256 of the daemon key and "<kind>:<sandbox id>", so
 * they survive restarts and are worthless for any other sandbox. KIND: "envd" or
 * "traffic". */
void e2b_token(api_server *s, const char *kind, const char *sandbox_id, char out[65]);

/* The sandbox of a sandbox-plane request: it must exist and be running (else 502, what
 * E2B's proxy answers for a sandbox that is gone; a paused one created with autoResume
 * is resumed once the token is checked), and the request must carry its
 * envd token in X-Access-Token (or, when TRAFFIC_OK, its traffic token in
 * E2B-Traffic-Access-Token). A signed /files URL (uploadUrl/downloadUrl) has no header:
 * its signature finds the sandbox. On failure the reply is queued and -1 returned. */
int e2b_plane_sandbox(api_req *r, bool traffic_ok, sl_sandbox *sb, enum MHD_Result *ret);

/* {"code":<status>,"message":...} with that HTTP status (control plane, /files). */
enum MHD_Result e2b_reply_code(api_req *r, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
enum MHD_Result e2b_reply_err(api_req *r, const sl_err *err);

/* The user the SDK names: "Authorization: Basic base64(user:)" on RPCs, ?username= on
 * /files. Empty when none (the sandbox's user). */
void e2b_request_user(api_req *r, char user[64]);
/* The user's home inside the sandbox (relative paths and the default cwd start there). */
void e2b_user_home(const sl_sandbox *sb, const char *user, char *home, size_t len);
/* A path the SDK gives, made absolute from the user's home (malloc'd; NULL + SL_INVALID). */
char *e2b_path(const sl_sandbox *sb, const char *user, const char *path, sl_err *err);

/* E2B's allow_internet_access and network {allowOut, denyOut} of a create IN as /v1's
 * `network` object in BODY (e2b.c). */
int e2b_network_body(const cJSON *in, cJSON *body, bool provider_defaults, sl_err *err);

/* envd (e2b_envd.c) */
enum MHD_Result e2b_envd_health(api_req *r);
enum MHD_Result e2b_rpc(api_req *r);
/* A Connect request's message: BODY (N bytes) is bare JSON (unary) or, when STREAMING, one
 * uncompressed envelope (flag 0, 4-byte big-endian length, JSON). An object, or NULL. */
cJSON *e2b_rpc_message_parse(const char *body, size_t n, bool streaming, sl_err *err);
/* envd 0.6.2's file metadata: the attributes user.e2b.KEY (sbxfs_xattrs_*). */
#define E2B_META_NS "e2b."
/* PATH's metadata into the entry O as "metadata", when it has any (envd leaves it out
 * otherwise). A file that cannot be read for it is an entry without. */
void e2b_entry_metadata(sl_ctx *ctx, const sl_sandbox *sb, const char *path, cJSON *o);
enum MHD_Result e2b_files_get(api_req *r);
enum MHD_Result e2b_files_post(api_req *r);
int e2b_files_post_begin(api_req *r, sl_err *err);
int e2b_files_post_chunk(api_req *r, const char *data, size_t len, sl_err *err);

/* Constant-time equality of a presented secret with the expected one (e2b.c). */
bool e2b_secret_equal(const char *given, const char *want);

/* The create's answer for SB: sandboxID, templateID, envd and traffic tokens (e2b.c). */
cJSON *e2b_connection_json(api_server *s, const sl_sandbox *sb);

/* forks and snapshots (e2b_snapshots.c) */
enum MHD_Result e2b_fork(api_req *r);
enum MHD_Result e2b_snapshot_create(api_req *r);
enum MHD_Result e2b_snapshot_list(api_req *r);
enum MHD_Result e2b_snapshot_delete(api_req *r);

/* template names and tags (e2b_tags.c): E2B's "name[:tag]" is the image "name" for its
 * default tag and "name:tag" for another (runtime/image_tag.c) */
#define E2B_TAG_MAX 128
/* base, code-interpreter-v1 and code-interpreter: sandlot's default image, never built. */
bool e2b_stock_template(const char *name);
/* IN ("name" or "name:tag", split at the first ':' as E2B does; its "default" tag the
 * same as none) in NAME (IMAGE_NAME_MAX + 1) and TAG (E2B_TAG_MAX + 1, "" for the
 * default). SL_INVALID for a bad name or a tag E2B refuses. */
int e2b_template_parse(const char *in, char *name, char *tag, sl_err *err);
/* The image of template NAME's TAG (NULL or "" or "default": the default tag) in OUT. */
int e2b_template_image(const char *name, const char *tag, char *out, size_t len, sl_err *err);
/* The strings of ARR (NULL: none) checked as E2B checks tags, lower-cased and without
 * duplicates, in TAGS (at most MAX); their number in *N. */
int e2b_template_tags(const cJSON *arr, char tags[][E2B_TAG_MAX + 1], size_t max, size_t *n,
		      sl_err *err);
enum MHD_Result e2b_template_tags_assign(api_req *r);
enum MHD_Result e2b_template_tags_remove(api_req *r);
enum MHD_Result e2b_template_tags_list(api_req *r);

/* template builds (e2b_template.c) */
/* The image of an E2B stock template: `code-interpreter-v1` and `code-interpreter` are the
 * `code-interpreter` image when it is installed, and those and `base` otherwise the
 * `default` image; NULL for any other name. */
const char *e2b_stock_image(const char *state_dir, const char *tpl);
enum MHD_Result e2b_template_request(api_req *r);
enum MHD_Result e2b_template_alias(api_req *r);
enum MHD_Result e2b_template_files_link(api_req *r);
/* The upload URL's own credential (?build=&token=), checked before the body is read. */
int e2b_template_upload_gate(api_req *r, enum MHD_Result *ret);
int e2b_template_upload_begin(api_req *r, sl_err *err);
int e2b_template_upload_chunk(api_req *r, const char *data, size_t len, sl_err *err);
enum MHD_Result e2b_template_upload(api_req *r);
enum MHD_Result e2b_template_build_start(api_req *r);
enum MHD_Result e2b_template_build_status(api_req *r);

/* the Secret client (e2b_secrets.c) */
enum MHD_Result e2b_secret_list(api_req *r);
enum MHD_Result e2b_secret_create(api_req *r);
enum MHD_Result e2b_secret_get(api_req *r);
enum MHD_Result e2b_secret_update(api_req *r);
enum MHD_Result e2b_secret_delete(api_req *r);

/* the Volume client (e2b_volumes.c) */
enum MHD_Result e2b_volume_list(api_req *r);
enum MHD_Result e2b_volume_create(api_req *r);
enum MHD_Result e2b_volume_get(api_req *r);
enum MHD_Result e2b_volume_delete(api_req *r);
/* Create's volumeMounts [{name, path}] as /v1's volumes in BODY (each volume must exist). */
int e2b_volume_mounts_body(const cJSON *in, cJSON *body, sl_ctx *ctx, sl_err *err);
/* The sandbox's volumes as E2B's volumeMounts [{name, path}]. */
cJSON *e2b_volume_mounts_json(const sl_sandbox *sb);
/* The content routes' credential: the volume's token (Authorization: Bearer). */
int e2b_volume_gate(api_req *r, enum MHD_Result *ret);
enum MHD_Result e2b_volume_stat(api_req *r);
enum MHD_Result e2b_volume_setattr(api_req *r);
enum MHD_Result e2b_volume_remove(api_req *r);
enum MHD_Result e2b_volume_list_dir(api_req *r);
enum MHD_Result e2b_volume_mkdir(api_req *r);
enum MHD_Result e2b_volume_read(api_req *r);
int e2b_volume_write_begin(api_req *r, sl_err *err);
int e2b_volume_write_chunk(api_req *r, const char *data, size_t len, sl_err *err);
enum MHD_Result e2b_volume_write(api_req *r);

/* code interpreter (e2b_interp.c) */
#define E2B_CONTEXT_MARK "--sandlot-e2b-context"
enum MHD_Result e2b_execute(api_req *r);
enum MHD_Result e2b_contexts_create(api_req *r);
enum MHD_Result e2b_contexts_list(api_req *r);
enum MHD_Result e2b_contexts_delete(api_req *r);
enum MHD_Result e2b_contexts_restart(api_req *r);

#endif
