/* mcp_tools.c — the MCP tools (docs/mcp.md): each checks its arguments and makes the
 * calls the /v1 route of the same job makes (create, list, delete, exec, code, files). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/base64.h>

#include "cleanup.h"
#include "mcp.h"
#include "sbxfs.h"

/* The most of a file file_read returns: past it, the /v1 files route streams it. */
#define MCP_FILE_MAX (1u << 20)

/* ---- arguments ---- */

/* The sandbox_id argument, required. */
static int arg_sandbox(const cJSON *args, const char **id, sl_err *err)
{
	if (api_json_string(args, "", "sandbox_id", id, err) < 0)
		return -1;
	if (!*id || !**id)
		return sl_fail(err, SL_INVALID, 0,
			       "sandbox_id: required (an id from sandbox_create or sandbox_list)");
	return 0;
}

/* The running sandbox of the sandbox_id argument (a paused one is resumed: MCP has no
 * resume tool). FOR_EXEC: the lookup of a command's start (api_sandbox_for_exec). */
static int arg_sandbox_ready(api_req *r, const cJSON *args, bool for_exec, sl_sandbox *sb,
			     sl_err *err)
{
	const char *id;
	if (arg_sandbox(args, &id, err) < 0 ||
	    api_sandbox_ready(r->srv, id, for_exec, true, sb, err) < 0)
		return -1;
	api_touch(r->srv, sb->id); /* use, as on /v1: the idle timeout starts again */
	return 0;
}

/* ARGS less the keys in DROP (NULL-terminated): the rest is a /v1 body. */
static cJSON *v1_body(const cJSON *args, const char *const *drop, sl_err *err)
{
	cJSON *b = cJSON_Duplicate(args, true);
	if (!b) {
		sl_fail(err, SL_INTERNAL, ENOMEM, "arguments");
		return NULL;
	}
	for (; *drop; drop++)
		cJSON_DeleteItemFromObjectCaseSensitive(b, *drop);
	return b;
}

/* "utf-8" (the default) or "base64": *base64. */
static int arg_encoding(const cJSON *args, bool *base64, sl_err *err)
{
	const char *enc = NULL;
	if (api_json_string(args, "", "encoding", &enc, err) < 0)
		return -1;
	*base64 = enc && !strcmp(enc, "base64");
	if (enc && !*base64 && strcmp(enc, "utf-8"))
		return sl_fail(err, SL_INVALID, 0, "encoding: \"utf-8\" or \"base64\", not \"%s\"",
			       enc);
	return 0;
}

/* ---- sandboxes ---- */

static int tool_sandbox_create(api_req *r, const cJSON *args, cJSON **out, char **text, sl_err *err)
{
	static const char *const fields[] = {"image", "name",	"resources", "network",
					     "env",   "labels", "timeout",   NULL};
	_cleanup_sandbox_ sl_sandbox sb = {0};
	if (api_json_fields(args, "", fields, err) < 0 ||
	    api_sandbox_create_from(r->srv, args, false, false, &sb, err) < 0)
		return -1;
	*out = api_sandbox_json(r->srv, &sb, true);
	return *out ? 0 : sl_fail(err, SL_INTERNAL, ENOMEM, "sandbox %s", sb.id);
}

static int tool_sandbox_list(api_req *r, const cJSON *args, cJSON **out, char **text, sl_err *err)
{
	static const char *const fields[] = {NULL};
	sl_sandbox *list;
	size_t n;
	if (api_json_fields(args, "", fields, err) < 0 ||
	    sandbox_list_live(r->srv->ctx, &list, &n, err) < 0)
		return -1;
	*out = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(*out, "sandboxes");
	for (size_t i = 0; i < n; i++)
		if (list[i].status != SL_ST_TERMINATED)
			cJSON_AddItemToArray(arr, api_sandbox_json(r->srv, &list[i], false));
	sandbox_free_list(list, n);
	return 0;
}

static int tool_sandbox_delete(api_req *r, const cJSON *args, cJSON **out, char **text, sl_err *err)
{
	static const char *const fields[] = {"sandbox_id", NULL};
	const char *id;
	if (api_json_fields(args, "", fields, err) < 0 || arg_sandbox(args, &id, err) < 0)
		return -1;
	if (api_destroy(r->srv, id, "deleted", err) < 0) {
		if (err->kind == SL_INVALID)
			err->kind = SL_NOTFOUND;
		return -1;
	}
	*out = cJSON_CreateObject();
	cJSON_AddStringToObject(*out, "id", id);
	cJSON_AddBoolToObject(*out, "deleted", true);
	return 0;
}

/* ---- commands and code ---- */

static int tool_sandbox_exec(api_req *r, const cJSON *args, cJSON **out, char **text, sl_err *err)
{
	static const char *const fields[] = {"sandbox_id", "command", "cwd", "env",
					     "timeout",	   "user",    NULL};
	static const char *const drop[] = {"sandbox_id", NULL};
	if (api_json_fields(args, "", fields, err) < 0)
		return -1;
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(args, "command");
	if (!cmd || cJSON_IsNull(cmd))
		return sl_fail(err, SL_INVALID, 0,
			       "command: required (a shell line, or an array of program and "
			       "arguments)");
	_cleanup_sandbox_ sl_sandbox sb = {0};
	if (arg_sandbox_ready(r, args, true, &sb, err) < 0)
		return -1;
	cJSON *body = v1_body(args, drop, err);
	if (!body)
		return -1;
	api_exec_body b;
	sl_exec e;
	int rc = api_exec_body_parse(body, &sb, &b, err);
	if (rc == 0)
		rc = api_exec_run(r, &sb, &b.spec, &e, err);
	api_exec_body_free(&b);
	cJSON_Delete(body);
	if (rc < 0)
		return -1;
	if (rc == 1) {
		exec_free(&e);
		return sl_fail(err, SL_INTERNAL, 0,
			       "the command was abandoned (client gone or daemon stopping)");
	}
	*out = api_exec_json(r->srv, &e, true);
	exec_free(&e);
	return 0;
}

static int tool_run_code(api_req *r, const cJSON *args, cJSON **out, char **text, sl_err *err)
{
	static const char *const fields[] = {"language", "code",  "sandbox_id", "timeout",
					     "env",	 "image", NULL};
	static const char *const drop[] = {"sandbox_id", "image", NULL};
	if (api_json_fields(args, "", fields, err) < 0)
		return -1;
	const cJSON *sid = cJSON_GetObjectItemCaseSensitive(args, "sandbox_id");
	bool given = sid && !cJSON_IsNull(sid);
	if (given && cJSON_GetObjectItemCaseSensitive(args, "image"))
		return sl_fail(err, SL_INVALID, 0,
			       "image: only without sandbox_id (the image of the sandbox run_code "
			       "makes)");
	cJSON *body = v1_body(args, drop, err);
	if (!body)
		return -1;
	api_code_args a = {0};
	int rc = api_code_args_parse(body, &a, err);
	_cleanup_sandbox_ sl_sandbox sb = {0};
	if (rc == 0 && given) {
		rc = arg_sandbox_ready(r, args, false, &sb, err);
		if (rc == 0 && !(*out = api_code_run(r->srv, r, &sb, &a, err)))
			rc = -1;
	} else if (rc == 0) {
		/* A sandbox of its own, made and destroyed as /v1/run does. */
		static const char *const code_only[] = {"language", "code", "sandbox_id",
							"timeout",  "env",  NULL};
		cJSON *create = v1_body(args, code_only, err);
		rc = create ? api_sandbox_create_from(r->srv, create, true, false, &sb, err) : -1;
		cJSON_Delete(create);
		if (rc == 0) {
			if (!(*out = api_code_run(r->srv, NULL, &sb, &a, err)))
				rc = -1;
			sl_err e2 = {0};
			if (api_destroy(r->srv, sb.id, "run finished", &e2) < 0 && rc == 0) {
				*err = e2;
				cJSON_Delete(*out);
				*out = NULL;
				rc = -1;
			}
		}
	}
	api_code_args_free(&a);
	cJSON_Delete(body);
	return rc;
}

/* ---- files ---- */

/* The sandbox and the path argument (relative: to the sandbox's working directory). */
static int file_target(api_req *r, const cJSON *args, const char *def, sl_sandbox *sb, char **path,
		       sl_err *err)
{
	const char *p = NULL;
	if (api_json_string(args, "", "path", &p, err) < 0 ||
	    arg_sandbox_ready(r, args, false, sb, err) < 0)
		return -1;
	*path = api_sandbox_path(sb, "path", p ? p : def, err);
	return *path ? 0 : -1;
}

static char *base64_text(const unsigned char *data, size_t len)
{
	char *t = malloc(BASE64_ENCODE_RAW_LENGTH(len) + 1);
	if (!t)
		return NULL;
	base64_encode_raw(t, len, data);
	t[BASE64_ENCODE_RAW_LENGTH(len)] = '\0';
	return t;
}

static int tool_file_read(api_req *r, const cJSON *args, cJSON **out, char **text, sl_err *err)
{
	static const char *const fields[] = {"sandbox_id", "path", "encoding", NULL};
	_cleanup_sandbox_ sl_sandbox sb = {0};
	_cleanup_free_ char *path = NULL, *data = NULL;
	size_t len;
	bool base64;
	if (api_json_fields(args, "", fields, err) < 0 || arg_encoding(args, &base64, err) < 0 ||
	    file_target(r, args, NULL, &sb, &path, err) < 0)
		return -1;
	if (sbxfs_read_file(r->srv->ctx, &sb, path, MCP_FILE_MAX, &data, &len, err) < 0) {
		if (err->kind == SL_TOOLARGE)
			sl_wrap(err,
				"file_read returns at most %u MiB (GET "
				"/v1/sandboxes/{id}/files serves any size)",
				MCP_FILE_MAX >> 20);
		return -1;
	}
	*text = base64 ? base64_text((unsigned char *)data, len) : api_utf8_string(data, len);
	if (!*text)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "read %s", path);
	*out = cJSON_CreateObject();
	cJSON_AddStringToObject(*out, "path", path);
	cJSON_AddNumberToObject(*out, "size", (double)len);
	cJSON_AddStringToObject(*out, "encoding", base64 ? "base64" : "utf-8");
	cJSON_AddStringToObject(*out, "content", *text);
	return 0;
}

static int tool_file_write(api_req *r, const cJSON *args, cJSON **out, char **text, sl_err *err)
{
	static const char *const fields[] = {"sandbox_id", "path", "content",
					     "encoding",   "mode", NULL};
	_cleanup_sandbox_ sl_sandbox sb = {0};
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ unsigned char *decoded = NULL;
	const char *content = NULL;
	uint32_t mode = 0644;
	bool base64, given;
	if (api_json_fields(args, "", fields, err) < 0 || arg_encoding(args, &base64, err) < 0 ||
	    api_json_string(args, "", "content", &content, err) < 0 ||
	    api_json_mode(args, "", "mode", &mode, &given, err) < 0)
		return -1;
	if (!content)
		return sl_fail(err, SL_INVALID, 0, "content: required (\"\" for an empty file)");
	const void *data = content;
	size_t len = strlen(content);
	if (base64 && api_base64_decode("content", content, &decoded, &len, err) < 0)
		return -1;
	if (base64)
		data = decoded;
	if (file_target(r, args, NULL, &sb, &path, err) < 0 ||
	    sbxfs_write_file(r->srv->ctx, &sb, path, data, len, mode, err) < 0)
		return -1;
	*out = cJSON_CreateObject();
	cJSON_AddStringToObject(*out, "path", path);
	cJSON_AddNumberToObject(*out, "bytes", (double)len);
	return 0;
}

static int list_entry(void *arg, const sl_fileinfo *fi, sl_err *err)
{
	cJSON_AddItemToArray(arg, fileinfo_to_json(fi));
	return 0;
}

static int tool_file_list(api_req *r, const cJSON *args, cJSON **out, char **text, sl_err *err)
{
	static const char *const fields[] = {"sandbox_id", "path", NULL};
	_cleanup_sandbox_ sl_sandbox sb = {0};
	_cleanup_free_ char *path = NULL;
	if (api_json_fields(args, "", fields, err) < 0 ||
	    file_target(r, args, ".", &sb, &path, err) < 0)
		return -1;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "path", path);
	cJSON *arr = cJSON_AddArrayToObject(o, "entries");
	if (sbxfs_list(r->srv->ctx, &sb, path, list_entry, arr, err) < 0) {
		cJSON_Delete(o);
		return -1;
	}
	*out = o;
	return 0;
}

/* ---- the table ---- */

#define SANDBOX_ID                                                                                 \
	"\"sandbox_id\":{\"type\":\"string\",\"description\":\"The sandbox's id (sbx_...) or "     \
	"name, from sandbox_create or sandbox_list.\"}"
#define ENV_SCHEMA                                                                                 \
	"\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"             \
	"\"description\":\"Environment variables, NAME: value.\"}"
#define TIMEOUT_SCHEMA(what)                                                                       \
	"\"timeout\":{\"type\":[\"string\",\"integer\"],\"description\":\"How long " what          \
	" may run: a duration such as \\\"30s\\\" or \\\"5m\\\", or milliseconds. Default: "       \
	"the sandbox's execution timeout.\"}"
#define ENCODING_SCHEMA                                                                            \
	"\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"],\"default\":"           \
	"\"utf-8\",\"description\":\"utf-8 for text; base64 for any bytes.\"}"

/* clang-format off */
const mcp_tool mcp_tools[] = {
	{"sandbox_create", "Create a sandbox",
	 "Create an isolated Linux sandbox (its own filesystem, processes and network "
	 "namespace) and start it. Returns the sandbox with its id, for the other tools. "
	 "Network is off unless network.enabled is true.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"image\":{\"type\":\"string\",\"description\":\"Image name (`sandlot image ls`); "
	 "default: the daemon's default image (Debian with Python, Node.js and common tools).\"},"
	 "\"name\":{\"type\":\"string\",\"description\":\"A unique name, usable in place of the id.\"},"
	 "\"resources\":{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
	 "\"cpu\":{\"type\":[\"string\",\"number\"],\"description\":\"CPUs, e.g. \\\"500m\\\" or 2.\"},"
	 "\"memory\":{\"type\":[\"string\",\"number\"],\"description\":\"Memory, e.g. \\\"512Mi\\\".\"},"
	 "\"disk\":{\"type\":[\"string\",\"number\"],\"description\":\"Writable disk, e.g. \\\"1Gi\\\".\"},"
	 "\"pids\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Most processes at once.\"}}},"
	 "\"network\":{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
	 "\"enabled\":{\"type\":\"boolean\",\"description\":\"Outbound network (NAT); off by default.\"},"
	 "\"allow\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Only these CIDRs.\"},"
	 "\"deny\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Never these CIDRs.\"}}},"
	 ENV_SCHEMA ","
	 "\"labels\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
	 "\"timeout\":{\"type\":\"object\",\"additionalProperties\":false,\"description\":"
	 "\"Durations such as \\\"10m\\\": idle (destroyed after that long unused), lifetime, "
	 "execution (each command's default limit).\",\"properties\":{"
	 "\"idle\":{\"type\":[\"string\",\"integer\"]},\"lifetime\":{\"type\":[\"string\",\"integer\"]},"
	 "\"execution\":{\"type\":[\"string\",\"integer\"]}}}"
	 "},\"additionalProperties\":false}",
	 tool_sandbox_create},
	{"sandbox_list", "List sandboxes",
	 "List the sandboxes that exist (not the destroyed ones): id, name, image, status, "
	 "limits, labels.",
	 "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
	 tool_sandbox_list},
	{"sandbox_delete", "Delete a sandbox",
	 "Destroy a sandbox: its processes are killed and its files are gone.",
	 "{\"type\":\"object\",\"properties\":{" SANDBOX_ID "},\"required\":[\"sandbox_id\"],"
	 "\"additionalProperties\":false}",
	 tool_sandbox_delete},
	{"sandbox_exec", "Run a command in a sandbox",
	 "Run a command in a sandbox and wait for it to end. Returns exitCode, stdout and "
	 "stderr (at most 1 MiB each; stdoutTruncated/stderrTruncated say when cut) and status "
	 "(completed, failed, timeout). A non-zero exit code is a result, not a tool error.",
	 "{\"type\":\"object\",\"properties\":{" SANDBOX_ID ","
	 "\"command\":{\"type\":[\"string\",\"array\"],\"items\":{\"type\":\"string\"},"
	 "\"description\":\"A shell line (run by /bin/sh -c), or an array of program and "
	 "arguments.\"},"
	 "\"cwd\":{\"type\":\"string\",\"description\":\"Working directory; default: the "
	 "sandbox's.\"},"
	 ENV_SCHEMA ","
	 "\"user\":{\"type\":\"string\",\"description\":\"User inside the sandbox (name or uid).\"},"
	 TIMEOUT_SCHEMA("the command")
	 "},\"required\":[\"sandbox_id\",\"command\"],\"additionalProperties\":false}",
	 tool_sandbox_exec},
	{"run_code", "Run code",
	 "Run a snippet of Python, JavaScript, TypeScript or bash and return its stdout, "
	 "stderr, exit code and error (name, message, traceback). In the sandbox sandbox_id "
	 "names, or, without it, in a new sandbox that is deleted afterwards.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"language\":{\"type\":\"string\",\"enum\":[\"python\",\"javascript\",\"typescript\","
	 "\"bash\"],\"default\":\"python\"},"
	 "\"code\":{\"type\":\"string\",\"description\":\"The source text.\"},"
	 "\"sandbox_id\":{\"type\":\"string\",\"description\":\"Run in this sandbox (its files "
	 "stay); omit for a throw-away one.\"},"
	 "\"image\":{\"type\":\"string\",\"description\":\"The throw-away sandbox's image "
	 "(only without sandbox_id).\"},"
	 ENV_SCHEMA "," TIMEOUT_SCHEMA("the code")
	 "},\"required\":[\"code\"],\"additionalProperties\":false}",
	 tool_run_code},
	{"file_read", "Read a file",
	 "Read a file in a sandbox (at most 1 MiB). The text is the file's content; "
	 "encoding base64 for binary files.",
	 "{\"type\":\"object\",\"properties\":{" SANDBOX_ID ","
	 "\"path\":{\"type\":\"string\",\"description\":\"Absolute, or relative to the "
	 "sandbox's working directory.\"}," ENCODING_SCHEMA
	 "},\"required\":[\"sandbox_id\",\"path\"],\"additionalProperties\":false}",
	 tool_file_read},
	{"file_write", "Write a file",
	 "Create or replace a file in a sandbox; missing parent directories are made.",
	 "{\"type\":\"object\",\"properties\":{" SANDBOX_ID ","
	 "\"path\":{\"type\":\"string\",\"description\":\"Absolute, or relative to the "
	 "sandbox's working directory.\"},"
	 "\"content\":{\"type\":\"string\",\"description\":\"The file's content (base64 when "
	 "encoding is base64).\"}," ENCODING_SCHEMA ","
	 "\"mode\":{\"type\":[\"string\",\"integer\"],\"description\":\"Permission bits of a "
	 "new file, octal like \\\"0755\\\"; default 0644.\"}"
	 "},\"required\":[\"sandbox_id\",\"path\",\"content\"],\"additionalProperties\":false}",
	 tool_file_write},
	{"file_list", "List a directory",
	 "List a directory in a sandbox: each entry's name, path, type (file, dir, symlink, "
	 "other), size, mode and modification time.",
	 "{\"type\":\"object\",\"properties\":{" SANDBOX_ID ","
	 "\"path\":{\"type\":\"string\",\"description\":\"Absolute, or relative to the "
	 "sandbox's working directory (the default).\"}"
	 "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
	 tool_file_list},
};
/* clang-format on */
const size_t mcp_ntools = sizeof(mcp_tools) / sizeof(mcp_tools[0]);
