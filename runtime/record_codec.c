/* record_codec.c — sandbox records on disk (record_codec.h). Version 2 names each field
 * after the struct member it stores, in snake case, flat; the API's shape is api/'s to
 * build (api/view.c), so renaming an API field never changes a file. Version 1 (every
 * record before this one) is read field by field and written back as 2 on its next save.
 * One table says both: each member, its key in version 2, and where version 1 kept it. */
#include "record_codec.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

enum field_type { F_STR, F_I64, F_U64, F_U32, F_PID, F_BOOL, F_OBJECT, F_ARRAY };

struct field {
	enum field_type type;
	size_t off, len; /* the member; len: a string's buffer */
	const char *v2;	 /* its key in version 2 */
	const char *v1_in, *v1; /* version 1: the object that held it ("" the top), its key */
};

#define M(member) offsetof(sl_sandbox, member)
#define S(member) M(member), sizeof(((sl_sandbox *)0)->member)

/* Every member a record keeps, but its status (a name, record.c's table). Version 1 had
 * no net_subnet outside "internal", no ports, preview token or owner: NULL there. A
 * version 2 record without "owner" (made before keys) reads as "", the admin's. */
static const struct field fields[] = {
    {F_STR, S(id), "id", "", "id"},
    {F_STR, S(name), "name", "", "name"},
    {F_STR, S(image), "image", "", "image"},
    {F_STR, S(digest), "image_digest", "", "imageDigest"},
    {F_STR, S(user), "user", "", "user"},
    {F_STR, S(workdir), "workdir", "", "workingDirectory"},
    {F_STR, S(reason), "reason", "", "reason"},
    {F_STR, S(snapshot), "snapshot", "", "snapshot"},
    {F_I64, M(created_ms), 0, "created_ms", "internal", "createdMs"},
    {F_I64, M(terminated_ms), 0, "terminated_ms", "internal", "terminatedMs"},
    {F_I64, M(expires_ms), 0, "expires_ms", "internal", "expiresMs"},
    {F_U64, M(limits.cpu_millicores), 0, "cpu_millicores", "internal", "cpuMillis"},
    {F_U64, M(limits.memory_bytes), 0, "memory_bytes", "internal", "memoryBytes"},
    {F_U64, M(limits.pids_max), 0, "pids_max", "resources", "pids"},
    {F_U64, M(disk_bytes), 0, "disk_bytes", "internal", "diskBytes"},
    {F_U64, M(idle_ms), 0, "idle_ms", "timeout", "idle"},
    {F_U64, M(lifetime_ms), 0, "lifetime_ms", "timeout", "lifetime"},
    {F_U64, M(exec_timeout_ms), 0, "exec_timeout_ms", "timeout", "execution"},
    {F_U32, M(uid_base), 0, "uid_base", "internal", "uidBase"},
    {F_PID, M(init_pid), 0, "init_pid", "internal", "initPid"},
    {F_U64, M(init_start), 0, "init_start", "internal", "initStart"},
    {F_PID, M(creator_pid), 0, "creator_pid", "internal", "creatorPid"},
    {F_U64, M(creator_start), 0, "creator_start", "internal", "creatorStart"},
    {F_PID, M(releaser_pid), 0, "releaser_pid", "internal", "releaserPid"},
    {F_U64, M(releaser_start), 0, "releaser_start", "internal", "releaserStart"},
    {F_BOOL, M(ephemeral), 0, "ephemeral", "", "ephemeral"},
    {F_BOOL, M(hibernate), 0, "hibernate", NULL, NULL},
    {F_STR, S(boot_id), "boot_id", "internal", "bootId"},
    {F_BOOL, M(net_enabled), 0, "net_enabled", "network", "enabled"},
    {F_STR, S(net_addr), "net_address", "network", "address"},
    {F_STR, S(net_gateway), "net_gateway", "network", "gateway"},
    {F_STR, S(net_subnet), "net_subnet", "internal", "netSubnet"},
    {F_STR, S(preview_token), "preview_token", NULL, NULL},
    {F_STR, S(request_host), "request_host", NULL, NULL},
    {F_STR, S(owner), "owner", NULL, NULL},
    {F_STR, S(forked_from), "forked_from", NULL, NULL},
    {F_BOOL, M(stop_policy), 0, "stop_policy", NULL, NULL},
    {F_BOOL, M(archived), 0, "archived", NULL, NULL},
    {F_I64, M(auto_archive_min), 0, "auto_archive_min", NULL, NULL},
    {F_I64, M(auto_delete_min), 0, "auto_delete_min", NULL, NULL},
    {F_I64, M(stopped_ms), 0, "stopped_ms", NULL, NULL},
    {F_U32, M(on_lifetime), 0, "on_lifetime", NULL, NULL},
    {F_BOOL, M(auto_resume), 0, "auto_resume", NULL, NULL},
    {F_U32, M(on_idle), 0, "on_idle", NULL, NULL},
    {F_BOOL, M(on_idle_set), 0, "on_idle_set", NULL, NULL},
    {F_OBJECT, M(env), 0, "env", "", "env"},
    {F_OBJECT, M(labels), 0, "labels", "", "labels"},
    {F_ARRAY, M(volumes), 0, "volumes", "", "volumes"},
    {F_ARRAY, M(packages), 0, "packages", "", "packages"},
    {F_ARRAY, M(net_allow), 0, "net_allow", "network", "allow"},
    {F_ARRAY, M(net_deny), 0, "net_deny", "network", "deny"},
    {F_ARRAY, M(net_open), 0, "net_open", NULL, NULL},
    {F_OBJECT, M(ports), 0, "ports", NULL, NULL},
    {F_OBJECT, M(secret_env), 0, "secret_env", NULL, NULL},
    {F_OBJECT, M(secret_files), 0, "secret_files", NULL, NULL},
};

static double num_of(const sl_sandbox *sb, const struct field *f)
{
	const char *p = (const char *)sb + f->off;
	switch (f->type) {
	case F_I64:
		return (double)*(const int64_t *)p;
	case F_U64:
		return (double)*(const uint64_t *)p;
	case F_U32:
		return (double)*(const uint32_t *)p;
	case F_PID:
		return (double)*(const pid_t *)p;
	default:
		return 0;
	}
}

/* A number out of its member's range (a damaged record) reads as 0: a cast of it would
 * be undefined. */
static void set_num(sl_sandbox *sb, const struct field *f, double v)
{
	char *p = (char *)sb + f->off;
	switch (f->type) {
	case F_I64:
		*(int64_t *)p = v >= -9.2e18 && v <= 9.2e18 ? (int64_t)v : 0;
		break;
	case F_U64:
		*(uint64_t *)p = v >= 0 && v < 1.8e19 ? (uint64_t)v : 0;
		break;
	case F_U32:
		*(uint32_t *)p = v >= 0 && v <= (double)UINT32_MAX ? (uint32_t)v : 0;
		break;
	case F_PID:
		*(pid_t *)p = v >= 0 && v <= (double)INT32_MAX ? (pid_t)v : 0;
		break;
	default:
		break;
	}
}

char *record_encode(const sl_sandbox *sb)
{
	_cleanup_cjson_ cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "schema", RECORD_SCHEMA);
	cJSON_AddStringToObject(o, "status", sandbox_status_name(sb->status));
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const struct field *f = &fields[i];
		const char *p = (const char *)sb + f->off;
		const cJSON *j;
		switch (f->type) {
		case F_STR:
			cJSON_AddStringToObject(o, f->v2, p);
			break;
		case F_BOOL:
			cJSON_AddBoolToObject(o, f->v2, *(const bool *)p);
			break;
		case F_OBJECT:
		case F_ARRAY:
			j = *(cJSON *const *)(const void *)p;
			cJSON_AddItemToObject(o, f->v2,
					      j ? cJSON_Duplicate(j, 1)
					      : f->type == F_OBJECT ? cJSON_CreateObject()
								    : cJSON_CreateArray());
			break;
		default:
			cJSON_AddNumberToObject(o, f->v2, num_of(sb, f));
		}
	}
	return cJSON_PrintUnformatted(o);
}

/* FIELD's value in O, a record of VERSION (NULL when that version has none). Version 1's
 * values sit in the object the table names. */
static cJSON *value_of(cJSON *o, int version, const struct field *f)
{
	if (version != 1)
		return cJSON_GetObjectItemCaseSensitive(o, f->v2);
	if (!f->v1)
		return NULL;
	cJSON *in = *f->v1_in ? cJSON_GetObjectItemCaseSensitive(o, f->v1_in) : o;
	return cJSON_GetObjectItemCaseSensitive(in, f->v1);
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
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
	sandbox_status_parse(cJSON_IsString(st) ? st->valuestring : "", &sb->status);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const struct field *f = &fields[i];
		char *p = (char *)sb + f->off;
		cJSON *v = value_of(o, version, f);
		switch (f->type) {
		case F_STR:
			snprintf(p, f->len, "%s", cJSON_IsString(v) ? v->valuestring : "");
			break;
		case F_BOOL:
			*(bool *)p = cJSON_IsTrue(v);
			break;
		case F_OBJECT:
		case F_ARRAY:
			/* Taken out of the parsed tree (which then frees the rest). */
			if (v && (f->type == F_OBJECT ? cJSON_IsObject(v) : cJSON_IsArray(v)))
				*(cJSON **)(void *)p = cJSON_DetachItemViaPointer(
				    version == 1 && *f->v1_in
					? cJSON_GetObjectItemCaseSensitive(o, f->v1_in)
					: o,
				    v);
			break;
		default:
			set_num(sb, f, cJSON_IsNumber(v) ? v->valuedouble : 0);
		}
	}
	return 0;
}
