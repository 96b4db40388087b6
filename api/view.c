/* view.c — the API's shapes of the runtime's objects (Sandbox, Snapshot, Volume,
 * Execution), built from their records: the wire format is api/'s, the files are
 * runtime/'s. Linked into the binary too (like key.c): `sandlot ls --format json` and
 * `inspect` print the same shape. */
#include "view.h"

#include "clock.h"
#include "exec.h"
#include "quantity.h"

static cJSON *resources_json(const sl_sandbox *sb)
{
	char b[32];
	cJSON *r = cJSON_CreateObject();
	quantity_format_cpu(sb->limits.cpu_millicores, b, sizeof(b));
	cJSON_AddStringToObject(r, "cpu", b);
	quantity_format_bytes(sb->limits.memory_bytes, b, sizeof(b));
	cJSON_AddStringToObject(r, "memory", b);
	quantity_format_bytes(sb->disk_bytes, b, sizeof(b));
	cJSON_AddStringToObject(r, "disk", b);
	cJSON_AddNumberToObject(r, "pids", (double)sb->limits.pids_max);
	return r;
}

cJSON *view_sandbox_json(const sl_sandbox *sb)
{
	char t[40];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", sb->id);
	if (sb->name[0])
		cJSON_AddStringToObject(o, "name", sb->name);
	else
		cJSON_AddNullToObject(o, "name");
	cJSON_AddStringToObject(o, "status", sandbox_status_name(sb->status));
	cJSON_AddStringToObject(o, "image", sb->image);
	cJSON_AddStringToObject(o, "imageDigest", sb->digest);
	sl_iso_time(sb->created_ms, t, sizeof(t));
	cJSON_AddStringToObject(o, "createdAt", t);
	cJSON_AddItemToObject(o, "resources", resources_json(sb));
	cJSON_AddItemToObject(o, "env", sb->env ? cJSON_Duplicate(sb->env, 1) : cJSON_CreateObject());
	/* The references only: a secret's value is never in a record or a reply. */
	cJSON_AddItemToObject(o, "secrets", sb->secret_env ? cJSON_Duplicate(sb->secret_env, 1)
							   : cJSON_CreateObject());
	cJSON_AddItemToObject(o, "secretFiles", sb->secret_files
						    ? cJSON_Duplicate(sb->secret_files, 1)
						    : cJSON_CreateObject());
	cJSON_AddItemToObject(o, "labels",
			      sb->labels ? cJSON_Duplicate(sb->labels, 1) : cJSON_CreateObject());
	cJSON_AddStringToObject(o, "user", sb->user);
	cJSON_AddStringToObject(o, "workingDirectory", sb->workdir);
	cJSON_AddBoolToObject(o, "ephemeral", sb->ephemeral);
	cJSON_AddBoolToObject(o, "hibernate", sb->hibernate);
	cJSON *to = cJSON_AddObjectToObject(o, "timeout");
	const struct {
		const char *k;
		uint64_t v;
	} tos[] = { { "idle", sb->idle_ms },
		    { "lifetime", sb->lifetime_ms },
		    { "execution", sb->exec_timeout_ms } };
	for (size_t i = 0; i < 3; i++) {
		if (tos[i].v)
			cJSON_AddNumberToObject(to, tos[i].k, (double)tos[i].v);
		else
			cJSON_AddNullToObject(to, tos[i].k);
	}
	cJSON_AddStringToObject(to, "onLifetime", sandbox_on_lifetime_name(sb->on_lifetime));
	cJSON_AddStringToObject(to, "onIdle",
				sandbox_on_lifetime_name(sandbox_idle_action(
				    sb->on_idle_set, sb->on_idle, sb->ephemeral)));
	cJSON_AddBoolToObject(to, "autoResume", sb->auto_resume);
	if (sb->expires_ms) {
		sl_iso_time(sb->expires_ms, t, sizeof(t));
		cJSON_AddStringToObject(o, "expiresAt", t);
	} else {
		cJSON_AddNullToObject(o, "expiresAt");
	}
	cJSON_AddItemToObject(o, "volumes",
			      sb->volumes ? cJSON_Duplicate(sb->volumes, 1) : cJSON_CreateArray());
	cJSON_AddItemToObject(o, "packages", sb->packages ? cJSON_Duplicate(sb->packages, 1)
							       : cJSON_CreateArray());
	cJSON *net = cJSON_AddObjectToObject(o, "network");
	cJSON_AddBoolToObject(net, "enabled", sb->net_enabled);
	if (sb->net_enabled && sb->net_addr[0]) {
		cJSON_AddStringToObject(net, "address", sb->net_addr);
		cJSON_AddStringToObject(net, "gateway", sb->net_gateway);
	} else {
		cJSON_AddNullToObject(net, "address");
		cJSON_AddNullToObject(net, "gateway");
	}
	cJSON_AddItemToObject(net, "allow", sb->net_allow ? cJSON_Duplicate(sb->net_allow, 1)
							  : cJSON_CreateArray());
	cJSON_AddItemToObject(net, "deny", sb->net_deny ? cJSON_Duplicate(sb->net_deny, 1)
							: cJSON_CreateArray());
	cJSON_AddItemToObject(o, "ports",
			      sb->ports ? cJSON_Duplicate(sb->ports, 1) : cJSON_CreateObject());
	if (sb->request_host[0])
		cJSON_AddStringToObject(o, "requestHost", sb->request_host);
	else
		cJSON_AddNullToObject(o, "requestHost");
	if (sb->snapshot[0])
		cJSON_AddStringToObject(o, "snapshot", sb->snapshot);
	else
		cJSON_AddNullToObject(o, "snapshot");
	if (sb->forked_from[0])
		cJSON_AddStringToObject(o, "forkedFrom", sb->forked_from);
	else
		cJSON_AddNullToObject(o, "forkedFrom");
	if (sb->status == SL_ST_BROKEN)
		cJSON_AddStringToObject(o, "reason", sb->reason);
	if (sb->terminated_ms) {
		sl_iso_time(sb->terminated_ms, t, sizeof(t));
		cJSON_AddStringToObject(o, "terminatedAt", t);
		cJSON_AddStringToObject(o, "reason", sb->reason);
	}
	return o;
}

cJSON *view_snapshot_json(const sl_snapshot *s)
{
	char t[40];
	sl_iso_time(s->created_ms, t, sizeof(t));
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", s->id);
	if (s->name[0])
		cJSON_AddStringToObject(o, "name", s->name);
	else
		cJSON_AddNullToObject(o, "name");
	cJSON_AddStringToObject(o, "sandboxId", s->sandbox_id);
	cJSON_AddStringToObject(o, "image", s->image);
	cJSON_AddStringToObject(o, "imageDigest", s->digest);
	cJSON_AddStringToObject(o, "createdAt", t);
	return o;
}

cJSON *view_checkpoint_json(const sl_snapshot *s)
{
	char t[40];
	sl_iso_time(s->created_ms, t, sizeof(t));
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", s->id);
	cJSON_AddStringToObject(o, "name", s->name);
	cJSON_AddStringToObject(o, "sandboxId", s->checkpoint_of);
	cJSON_AddBoolToObject(o, "memory", s->memory);
	cJSON_AddStringToObject(o, "createdAt", t);
	return o;
}

cJSON *view_volume_json(const sl_volume *v)
{
	char t[40];
	sl_iso_time(v->created_ms, t, sizeof(t));
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", v->name);
	cJSON_AddStringToObject(o, "createdAt", t);
	return o;
}

/* The API's Execution. */
cJSON *view_exec_json(const sl_exec *e)
{
	char t[40];
	bool running = e->status == SL_EXEC_RUNNING;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", e->id);
	cJSON_AddStringToObject(o, "sandboxId", e->sandbox_id);
	cJSON_AddItemToObject(o, "command",
			      e->command ? cJSON_Duplicate(e->command, 1) : cJSON_CreateArray());
	cJSON_AddStringToObject(o, "status", exec_status_name(e->status));
	if (running || e->exit_code < 0)
		cJSON_AddNullToObject(o, "exitCode");
	else
		cJSON_AddNumberToObject(o, "exitCode", e->exit_code);
	if (e->signal) {
		exec_signal_name(e->signal, t, sizeof(t));
		cJSON_AddStringToObject(o, "signal", t);
	} else {
		cJSON_AddNullToObject(o, "signal");
	}
	cJSON_AddBoolToObject(o, "oomKilled", e->oom_killed);
	sl_iso_time(e->started_ms, t, sizeof(t));
	cJSON_AddStringToObject(o, "startedAt", t);
	if (running) {
		cJSON_AddNullToObject(o, "finishedAt");
		cJSON_AddNullToObject(o, "durationMs");
	} else {
		sl_iso_time(e->finished_ms, t, sizeof(t));
		cJSON_AddStringToObject(o, "finishedAt", t);
		cJSON_AddNumberToObject(o, "durationMs", (double)(e->finished_ms - e->started_ms));
	}
	if (e->pid > 0)
		cJSON_AddNumberToObject(o, "pid", e->pid);
	return o;
}
