/* daytona.h — the Daytona façade's shared pieces: its error shape, sandbox lookups for
 * toolbox calls, and the handlers of its three files (control plane, process, files).
 * Wire protocol: /work/shared/compat/daytona.md (docs/daytona.md for what maps to what). */
#ifndef SANDLOT_API_COMPAT_DAYTONA_H
#define SANDLOT_API_COMPAT_DAYTONA_H

#include "http.h"

/* Errors as the SDK maps them: {statusCode, message, code, source}. With DAEMON_CODE the
 * source is "DAYTONA_DAEMON" and the code that one (FILE_NOT_FOUND, SESSION_ENDED...), so
 * the SDK picks its domain class; else "DAYTONA_API" and sandlot's stable code. */
enum MHD_Result dt_reply_error(api_req *r, unsigned status, const char *message, const char *code,
			       const char *source);
enum MHD_Result dt_error(api_req *r, const sl_err *err, const char *daemon_code);
#define dt_fail(r, kind, daemon_code, ...)                                                     \
	api_fail_with((r), dt_error, (daemon_code), (kind), __VA_ARGS__)
/* A file call's error: not found -> FILE_NOT_FOUND, bad path -> INVALID_FILE_PATH. */
enum MHD_Result dt_file_error(api_req *r, const sl_err *err);

/* The sandbox of a toolbox call (r->param[0]), running; touched for idle tracking. */
int dt_sandbox(api_req *r, sl_sandbox *sb, sl_err *err);
/* "http://HOST" as the client addressed this server (the Host header). */
void dt_origin(api_req *r, char *buf, size_t len);
/* Run ARGV in SB and collect its stdout (capped at CAP bytes): a helper for the toolbox
 * calls that are shell tools inside the sandbox (find, grep, $HOME). */
int dt_capture(api_req *r, const sl_sandbox *sb, char *const *argv, size_t cap, char **out,
	       int *exit_code, sl_err *err);

/* daytona_sandbox.c: the control plane under /api */
/* A Daytona CreateSandbox BODY as the /v1 create body, into V1 (r: the server's options
 * and snapshots). *DOCKERFILE: buildInfo's Dockerfile (checked), NULL when none. */
int dt_v1_body(api_req *r, const cJSON *body, cJSON *v1, const char **dockerfile, sl_err *err);
enum MHD_Result dt_sandbox_create(api_req *r);
/* The live sandbox of r->param[0] (touched), and a reply of its DTO (daytona_sandbox.c). */
int dt_lookup(api_req *r, sl_sandbox *sb, sl_err *err);
enum MHD_Result dt_reply_sandbox(api_req *r, const char *id, unsigned status);
/* A create BODY's autoArchiveInterval / autoDeleteInterval set on sandbox ID: 0 set (the
 * record in *OUT), 1 neither given, -1 failed (logged). */
int dt_stop_policy_apply(api_req *r, const cJSON *body, const char *id, sl_sandbox *out);
/* forks, snapshots of a sandbox, archive, the stop intervals (daytona_fork.c) */
enum MHD_Result dt_sandbox_fork(api_req *r);
enum MHD_Result dt_sandbox_snapshot(api_req *r);
enum MHD_Result dt_sandbox_archive(api_req *r);
enum MHD_Result dt_sandbox_autoarchive(api_req *r);
enum MHD_Result dt_sandbox_autodelete(api_req *r);
enum MHD_Result dt_sandbox_list(api_req *r);
enum MHD_Result dt_sandbox_get(api_req *r);
enum MHD_Result dt_sandbox_delete(api_req *r);
enum MHD_Result dt_sandbox_start(api_req *r);
enum MHD_Result dt_sandbox_stop(api_req *r);
enum MHD_Result dt_sandbox_labels(api_req *r);
enum MHD_Result dt_sandbox_network(api_req *r);
enum MHD_Result dt_sandbox_autostop(api_req *r);
enum MHD_Result dt_sandbox_activity(api_req *r);
enum MHD_Result dt_sandbox_ttl(api_req *r);
enum MHD_Result dt_sandbox_unsupported_interval(api_req *r);
enum MHD_Result dt_sandbox_toolbox_url(api_req *r);
enum MHD_Result dt_sandbox_preview_url(api_req *r);

/* daytona_build.c: builds of create({image}) and snapshots (sandlot images) */
/* buildInfo {dockerfileContent, contextHashes}: the Dockerfile parsed (an error names its
 * line), local-file contexts refused (501); *DOCKERFILE points into BUILD_INFO. */
int dt_dockerfile_check(const cJSON *build_info, const char **dockerfile, sl_err *err);
/* The image of a create whose body V1 came with DOCKERFILE: "FROM ref" of an image there
 * is, or the image built from it ("daytona-" + its hash), when built before. Both set
 * V1's image and leave *DTO NULL: create now. Else the build starts (or a running one of
 * the same Dockerfile is joined) and *DTO is the waiting sandbox's (pending_build), whose
 * id ("build_...") the SDK polls; the sandbox is made when the build ends. */
int dt_build_create(api_req *r, cJSON *v1, const char *dockerfile, cJSON **dto, sl_err *err);
/* r->param[0] the id of a create waiting for a build: replaced by the sandbox's id once
 * made (1); while it builds, or when it failed, *DTO its DTO (2); else 0. */
int dt_build_resolve(api_req *r, cJSON **dto);
/* Forget the waiting create r->param[0] (its sandbox is not made, or is destroyed once
 * made): 1, or 0 when there is none. */
int dt_build_delete(api_req *r);
/* At the daemon's stop: wait for the builds to end. */
void dt_builds_stop(api_server *s);
enum MHD_Result dt_sandbox_build_logs_url(api_req *r);
enum MHD_Result dt_sandbox_build_logs(api_req *r);
enum MHD_Result dt_snapshot_create(api_req *r);
enum MHD_Result dt_snapshot_list(api_req *r);
enum MHD_Result dt_snapshot_get(api_req *r);
enum MHD_Result dt_snapshot_delete(api_req *r);
enum MHD_Result dt_snapshot_build_logs_url(api_req *r);
enum MHD_Result dt_snapshot_build_logs(api_req *r);

/* daytona_events.c: the socket.io channel */
enum MHD_Result dt_events(api_req *r);
/* the Secret service (daytona_secrets.c) */
enum MHD_Result dt_secret_create(api_req *r);
enum MHD_Result dt_secret_list(api_req *r);
enum MHD_Result dt_secret_page(api_req *r);
enum MHD_Result dt_secret_get(api_req *r);
enum MHD_Result dt_secret_update(api_req *r);
enum MHD_Result dt_secret_delete(api_req *r);

/* daytona_process.c: /toolbox/{id}/process/... and the dirs */
enum MHD_Result dt_execute(api_req *r);
enum MHD_Result dt_code_run(api_req *r);
enum MHD_Result dt_session_create(api_req *r);
enum MHD_Result dt_session_list(api_req *r);
enum MHD_Result dt_session_get(api_req *r);
enum MHD_Result dt_session_delete(api_req *r);
enum MHD_Result dt_session_exec(api_req *r);
enum MHD_Result dt_session_command(api_req *r);
enum MHD_Result dt_session_logs(api_req *r);
enum MHD_Result dt_session_input(api_req *r);
enum MHD_Result dt_home_dir(api_req *r);
enum MHD_Result dt_work_dir(api_req *r);

/* daytona_files.c: /toolbox/{id}/files... */
enum MHD_Result dt_files_list(api_req *r);
enum MHD_Result dt_files_info(api_req *r);
enum MHD_Result dt_files_folder(api_req *r);
enum MHD_Result dt_files_delete(api_req *r);
enum MHD_Result dt_files_move(api_req *r);
enum MHD_Result dt_files_permissions(api_req *r);
enum MHD_Result dt_files_find(api_req *r);
enum MHD_Result dt_files_search(api_req *r);
enum MHD_Result dt_files_download(api_req *r);
enum MHD_Result dt_files_upload(api_req *r);
int dt_files_upload_begin(api_req *r, sl_err *err);
int dt_files_upload_chunk(api_req *r, const char *data, size_t len, sl_err *err);

#endif
