/* agentuity.h — what the Agentuity façade's files share: the {success, data} envelope,
 * errors in its shape, the sandbox and execution shapes, and the stream capability URLs.
 * The wire protocol is /work/shared/compat/agentuity.md (@agentuity/core 2.0). */
#ifndef SANDLOT_API_COMPAT_AGENTUITY_H
#define SANDLOT_API_COMPAT_AGENTUITY_H

#include "http.h"

#define AG_PREFIX "/agentuity"

/* ---- replies (agentuity.c) ---- */

/* {"success":true,"data":DATA} (DATA taken; NULL leaves "data" out). */
enum MHD_Result ag_reply_data(api_req *r, unsigned status, cJSON *data);
/* {"success":true} plus TOP's members (taken; may be NULL): pause, destroy, mkdir... */
enum MHD_Result ag_reply_ok(api_req *r, cJSON *top);
/* {"success":false,"message","code"} with the status of ERR's kind. A not-found error
 * carries NOTFOUND_CODE ("SANDBOX_NOT_FOUND", "EXECUTION_NOT_FOUND", ...). */
enum MHD_Result ag_reply_error(api_req *r, const sl_err *err, const char *notfound_code);
enum MHD_Result ag_reply_failure(api_req *r, unsigned status, const char *code,
				 const char *message);
#define ag_fail(r, kind, ...) api_fail_with((r), ag_reply_error, NULL, (kind), __VA_ARGS__)

/* ---- sandboxes (agentuity.c) ---- */

/* The sandbox r->param[0] names, for a call on it: 404 when unknown or destroyed; a
 * paused or stopped one is resumed first (*resumed says so; RESUMED may be NULL). */
int ag_sandbox_for_call(api_req *r, sl_sandbox *sb, bool *resumed, sl_err *err);

/* A oneshot sandbox whose command has ended (Agentuity calls it terminated); its exit
 * code is remembered for after it is reclaimed. */
bool ag_sandbox_ended(api_req *r, const sl_sandbox *sb);

/* The /v1 create body for an Agentuity SandboxCreateRequest IN (ONESHOT: a command runs
 * and ends it), or NULL (ERR). */
cJSON *ag_v1_body(const cJSON *in, bool oneshot, sl_err *err);

/* ---- executions and streams (agentuity_exec.c) ---- */

/* The absolute, unguessable URL of an execution's "stdout" or "stderr", and its stream id
 * (the last path segment), into O as <stream>StreamUrl and <stream>StreamId. */
void ag_stream_fields(api_req *r, cJSON *o, const char *sandbox_id, const char *exec_id,
		      const char *stream, bool with_id);
/* Start ARGV (or the SHELL line) in SB after writing FILES ({path, content} array or
 * NULL). */
int ag_exec_start(api_req *r, const sl_sandbox *sb, char **argv, const char *shell,
		  const cJSON *files, uint64_t timeout_ms, sl_exec *out, sl_err *err);

enum MHD_Result ag_execute(api_req *r);
enum MHD_Result ag_execution_get(api_req *r);
enum MHD_Result ag_execution_list(api_req *r);
enum MHD_Result ag_stream(api_req *r);

/* ---- files (agentuity_files.c) ---- */

enum MHD_Result ag_fs_write(api_req *r);
enum MHD_Result ag_fs_read(api_req *r);
enum MHD_Result ag_fs_list(api_req *r);
enum MHD_Result ag_fs_mkdir(api_req *r);
enum MHD_Result ag_fs_rm(api_req *r);
enum MHD_Result ag_fs_rmdir(api_req *r);
enum MHD_Result ag_fs_download(api_req *r);
enum MHD_Result ag_fs_upload(api_req *r);
int ag_fs_upload_begin(api_req *r, sl_err *err);
int ag_fs_upload_chunk(api_req *r, const char *data, size_t len, sl_err *err);

#endif
