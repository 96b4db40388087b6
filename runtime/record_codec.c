/* record_codec.c — sandbox records on disk (record_codec.h). Version 2 names each field
 * after the struct member it stores, in snake case, flat; the API's shape is api/'s to
 * build (api/view.c), so renaming an API field never changes a file. Version 1 (every
 * record before this one) is read field by field and written back as 2 on its next save. */
#include "record_codec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

static void get_str(char *dst, size_t len, const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	snprintf(dst, len, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static double get_num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static bool get_bool(const cJSON *o, const char *key)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* The string fields, with their names in each version. */
#define STR_FIELDS(sb)                                                                           \
	{                                                                                        \
		{"id", "id", sb->id, sizeof(sb->id)},                                            \
		    {"name", "name", sb->name, sizeof(sb->name)},                                \
		    {"image", "image", sb->image, sizeof(sb->image)},                            \
		    {"image_digest", "imageDigest", sb->digest, sizeof(sb->digest)},             \
		    {"user", "user", sb->user, sizeof(sb->user)},                                \
		    {"workdir", "workingDirectory", sb->workdir, sizeof(sb->workdir)},           \
		    {"reason", "reason", sb->reason, sizeof(sb->reason)},                        \
		    {"snapshot", "snapshot", sb->snapshot, sizeof(sb->snapshot)},                \
	}

struct str_field {
	const char *v2, *v1;
	char *dst;
	size_t len;
};

char *record_encode(const sl_sandbox *sb)
{
	_cleanup_cjson_ cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "schema", RECORD_SCHEMA);
	cJSON_AddStringToObject(o, "status", sandbox_status_name(sb->status));
	sl_sandbox *s = (sl_sandbox *)sb; /* STR_FIELDS takes the members' addresses */
	const struct str_field strs[] = STR_FIELDS(s);
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		cJSON_AddStringToObject(o, strs[i].v2, strs[i].dst);
	const struct {
		const char *key;
		double v;
	} nums[] = {
	    {"created_ms", (double)sb->created_ms},
	    {"terminated_ms", (double)sb->terminated_ms},
	    {"expires_ms", (double)sb->expires_ms},
	    {"cpu_millicores", (double)sb->limits.cpu_millicores},
	    {"memory_bytes", (double)sb->limits.memory_bytes},
	    {"pids_max", (double)sb->limits.pids_max},
	    {"disk_bytes", (double)sb->disk_bytes},
	    {"idle_ms", (double)sb->idle_ms},
	    {"lifetime_ms", (double)sb->lifetime_ms},
	    {"exec_timeout_ms", (double)sb->exec_timeout_ms},
	    {"uid_base", sb->uid_base},
	    {"init_pid", sb->init_pid},
	    {"init_start", (double)sb->init_start},
	    {"creator_pid", sb->creator_pid},
	    {"creator_start", (double)sb->creator_start},
	    {"releaser_pid", sb->releaser_pid},
	    {"releaser_start", (double)sb->releaser_start},
	};
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		cJSON_AddNumberToObject(o, nums[i].key, nums[i].v);
	cJSON_AddBoolToObject(o, "ephemeral", sb->ephemeral);
	cJSON_AddStringToObject(o, "boot_id", sb->boot_id);
	cJSON_AddBoolToObject(o, "net_enabled", sb->net_enabled);
	cJSON_AddStringToObject(o, "net_address", sb->net_addr);
	cJSON_AddStringToObject(o, "net_gateway", sb->net_gateway);
	cJSON_AddStringToObject(o, "net_subnet", sb->net_subnet);
	cJSON_AddStringToObject(o, "preview_token", sb->preview_token);
	const struct {
		const char *key;
		const cJSON *v;
		bool object;
	} items[] = {
	    {"env", sb->env, true},		{"labels", sb->labels, true},
	    {"volumes", sb->volumes, false},	{"packages", sb->packages, false},
	    {"net_allow", sb->net_allow, false}, {"net_deny", sb->net_deny, false},
	    {"ports", sb->ports, true},
	};
	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++)
		cJSON_AddItemToObject(o, items[i].key,
				      items[i].v	? cJSON_Duplicate(items[i].v, 1)
				      : items[i].object ? cJSON_CreateObject()
							: cJSON_CreateArray());
	return cJSON_PrintUnformatted(o);
}

/* Version 2: the struct's members by name. */
static void decode_v2(cJSON *o, sl_sandbox *sb)
{
	sb->created_ms = get_num(o, "created_ms");
	sb->terminated_ms = get_num(o, "terminated_ms");
	sb->expires_ms = get_num(o, "expires_ms");
	sb->limits.cpu_millicores = get_num(o, "cpu_millicores");
	sb->limits.memory_bytes = get_num(o, "memory_bytes");
	sb->limits.pids_max = get_num(o, "pids_max");
	sb->disk_bytes = get_num(o, "disk_bytes");
	sb->idle_ms = get_num(o, "idle_ms");
	sb->lifetime_ms = get_num(o, "lifetime_ms");
	sb->exec_timeout_ms = get_num(o, "exec_timeout_ms");
	sb->uid_base = get_num(o, "uid_base");
	sb->init_pid = get_num(o, "init_pid");
	sb->init_start = get_num(o, "init_start");
	sb->creator_pid = get_num(o, "creator_pid");
	sb->creator_start = get_num(o, "creator_start");
	sb->releaser_pid = get_num(o, "releaser_pid");
	sb->releaser_start = get_num(o, "releaser_start");
	sb->ephemeral = get_bool(o, "ephemeral");
	get_str(sb->boot_id, sizeof(sb->boot_id), o, "boot_id");
	sb->net_enabled = get_bool(o, "net_enabled");
	get_str(sb->net_addr, sizeof(sb->net_addr), o, "net_address");
	get_str(sb->net_gateway, sizeof(sb->net_gateway), o, "net_gateway");
	get_str(sb->net_subnet, sizeof(sb->net_subnet), o, "net_subnet");
	sb->env = cJSON_DetachItemFromObjectCaseSensitive(o, "env");
	sb->labels = cJSON_DetachItemFromObjectCaseSensitive(o, "labels");
	sb->volumes = cJSON_DetachItemFromObjectCaseSensitive(o, "volumes");
	sb->packages = cJSON_DetachItemFromObjectCaseSensitive(o, "packages");
	sb->net_allow = cJSON_DetachItemFromObjectCaseSensitive(o, "net_allow");
	sb->net_deny = cJSON_DetachItemFromObjectCaseSensitive(o, "net_deny");
	sb->ports = cJSON_DetachItemFromObjectCaseSensitive(o, "ports");
	get_str(sb->preview_token, sizeof(sb->preview_token), o, "preview_token");
}

/* Version 1: the /v1 shape of the sandbox, with what the API does not show under
 * "internal" (runtime/sandbox.c before the schema had a number). */
static void decode_v1(cJSON *o, sl_sandbox *sb)
{
	sb->ephemeral = get_bool(o, "ephemeral");
	sb->env = cJSON_DetachItemFromObjectCaseSensitive(o, "env");
	sb->labels = cJSON_DetachItemFromObjectCaseSensitive(o, "labels");
	sb->volumes = cJSON_DetachItemFromObjectCaseSensitive(o, "volumes");
	sb->packages = cJSON_DetachItemFromObjectCaseSensitive(o, "packages");
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "internal");
	sb->created_ms = get_num(in, "createdMs");
	sb->terminated_ms = get_num(in, "terminatedMs");
	sb->limits.cpu_millicores = get_num(in, "cpuMillis");
	sb->limits.memory_bytes = get_num(in, "memoryBytes");
	sb->limits.pids_max = get_num(cJSON_GetObjectItemCaseSensitive(o, "resources"), "pids");
	sb->disk_bytes = get_num(in, "diskBytes");
	sb->uid_base = get_num(in, "uidBase");
	sb->init_pid = get_num(in, "initPid");
	sb->init_start = get_num(in, "initStart");
	sb->creator_pid = get_num(in, "creatorPid");
	sb->creator_start = get_num(in, "creatorStart");
	get_str(sb->boot_id, sizeof(sb->boot_id), in, "bootId");
	sb->expires_ms = get_num(in, "expiresMs");
	get_str(sb->net_subnet, sizeof(sb->net_subnet), in, "netSubnet");
	sb->releaser_pid = get_num(in, "releaserPid");
	sb->releaser_start = get_num(in, "releaserStart");
	cJSON *net = cJSON_GetObjectItemCaseSensitive(o, "network");
	sb->net_enabled = get_bool(net, "enabled");
	get_str(sb->net_addr, sizeof(sb->net_addr), net, "address");
	get_str(sb->net_gateway, sizeof(sb->net_gateway), net, "gateway");
	sb->net_allow = cJSON_DetachItemFromObjectCaseSensitive(net, "allow");
	sb->net_deny = cJSON_DetachItemFromObjectCaseSensitive(net, "deny");
	const cJSON *to = cJSON_GetObjectItemCaseSensitive(o, "timeout");
	sb->idle_ms = get_num(to, "idle");
	sb->lifetime_ms = get_num(to, "lifetime");
	sb->exec_timeout_ms = get_num(to, "execution");
}

int record_decode(const char *text, const char *what, sl_sandbox *sb, sl_err *err)
{
	_cleanup_cjson_ cJSON *o = cJSON_Parse(text);
	if (!cJSON_IsObject(o))
		return sl_fail(err, SL_INTERNAL, 0, "record %s is not a JSON object", what);
	const cJSON *schema = cJSON_GetObjectItemCaseSensitive(o, "schema");
	int version = schema ? (cJSON_IsNumber(schema) ? (int)schema->valuedouble : -1) : 1;
	if (version != 1 && version != RECORD_SCHEMA)
		return sl_fail(err, SL_INTERNAL, 0,
			       "record %s has schema %d; this sandlot reads 1 and %d (is it "
			       "newer than this binary?)",
			       what, version, RECORD_SCHEMA);
	memset(sb, 0, sizeof(*sb));
	struct str_field strs[] = STR_FIELDS(sb);
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		get_str(strs[i].dst, strs[i].len, o, version == 1 ? strs[i].v1 : strs[i].v2);
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
	sandbox_status_parse(cJSON_IsString(st) ? st->valuestring : "", &sb->status);
	if (version == 1)
		decode_v1(o, sb);
	else
		decode_v2(o, sb);
	return 0;
}
