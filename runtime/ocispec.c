/* ocispec.c — config.json and process.json of a runtime-spec bundle read into oci_spec
 * (ocispec.h), with the checks that refuse what a sandbox runtime must not run. */
#include "ocispec.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include "cleanup.h"
#include "seccomp.h"

static const char *const cap_names[] = {
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
};

static const char *const ns_names[OCI_NS_COUNT] = {
    [OCI_NS_PID] = "pid",	[OCI_NS_NET] = "network", [OCI_NS_MNT] = "mount",
    [OCI_NS_IPC] = "ipc",	[OCI_NS_UTS] = "uts",	  [OCI_NS_USER] = "user",
    [OCI_NS_CGROUP] = "cgroup",
};

uint64_t oci_caps_accepted(void)
{
	return seccomp_default_caps() | 1ULL << CAP_MKNOD | 1ULL << CAP_NET_RAW |
	       1ULL << CAP_AUDIT_WRITE;
}

static int cap_parse(const char *s)
{
	if (!strncasecmp(s, "CAP_", 4))
		s += 4;
	for (size_t i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]); i++)
		if (!strcasecmp(s, cap_names[i]))
			return (int)i;
	return -1;
}

static char *dup_or_null(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* A JSON array of strings as a NULL-terminated vector (an absent one is empty). */
static int strv_parse(const cJSON *a, const char *what, char ***out, sl_err *err)
{
	int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;
	if (a && !cJSON_IsArray(a))
		return sl_fail(err, SL_INVALID, 0, "%s: not an array", what);
	char **v = calloc((size_t)n + 1, sizeof(char *));
	if (!v)
		return sl_fail(err, SL_INTERNAL, 0, "out of memory");
	for (int i = 0; i < n; i++) {
		const cJSON *s = cJSON_GetArrayItem(a, i);
		if (!cJSON_IsString(s) || !(v[i] = strdup(s->valuestring))) {
			strv_free(v);
			return sl_fail(err, SL_INVALID, 0, "%s[%d]: not a string", what, i);
		}
	}
	*out = v;
	return 0;
}

static const struct {
	const char *name;
	int resource;
} rlimit_names[] = {
    {"RLIMIT_CPU", RLIMIT_CPU},		  {"RLIMIT_FSIZE", RLIMIT_FSIZE},
    {"RLIMIT_DATA", RLIMIT_DATA},	  {"RLIMIT_STACK", RLIMIT_STACK},
    {"RLIMIT_CORE", RLIMIT_CORE},	  {"RLIMIT_RSS", RLIMIT_RSS},
    {"RLIMIT_NPROC", RLIMIT_NPROC},	  {"RLIMIT_NOFILE", RLIMIT_NOFILE},
    {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},	  {"RLIMIT_AS", RLIMIT_AS},
    {"RLIMIT_LOCKS", RLIMIT_LOCKS},	  {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
    {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE}, {"RLIMIT_NICE", RLIMIT_NICE},
    {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},	  {"RLIMIT_RTTIME", RLIMIT_RTTIME},
};

static int caps_parse(const cJSON *caps, uint64_t *out, sl_err *err)
{
	static const char *const sets[] = {"bounding", "effective", "permitted", "inheritable",
					   "ambient"};
	*out = 0;
	for (size_t s = 0; caps && s < sizeof(sets) / sizeof(sets[0]); s++) {
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(caps, sets[s]), *c;
		cJSON_ArrayForEach(c, a)
		{
			int n = cJSON_IsString(c) ? cap_parse(c->valuestring) : -1;
			if (n < 0)
				return sl_fail(err, SL_INVALID, 0,
					       "process.capabilities.%s: unknown capability %s",
					       sets[s], cJSON_IsString(c) ? c->valuestring : "?");
			if (!(oci_caps_accepted() & 1ULL << n))
				return sl_fail(
				    err, SL_INVALID, 0,
				    "process.capabilities.%s: CAP_%s is beyond sandlot's "
				    "capability set (privileged containers are refused)",
				    sets[s], cap_names[n]);
			*out |= 1ULL << n;
		}
	}
	return 0;
}

/* A JSON number as a uint64_t, saturating: runtime-spec writes unlimited as 2^64 - 1,
 * which a double rounds up to 2^64, past what a cast may convert; below 0 (or not a
 * number) is 0. */
static uint64_t num_u64(const cJSON *v)
{
	if (!cJSON_IsNumber(v) || !(v->valuedouble > 0))
		return 0;
	return v->valuedouble >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v->valuedouble;
}

/* A uid or gid: a whole number below 2^32 - 1 (-1 is "no id" to the kernel). */
static bool num_id(const cJSON *v, uint32_t *out)
{
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble >= 4294967295.0 ||
	    v->valuedouble != (double)(uint32_t)v->valuedouble)
		return false;
	*out = (uint32_t)v->valuedouble;
	return true;
}

static int process_fill(const cJSON *p, oci_process *out, sl_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(p))
		return sl_fail(err, SL_INVALID, 0, "process: missing or not an object");
	const cJSON *user = cJSON_GetObjectItemCaseSensitive(p, "user");
	const cJSON *uid = cJSON_GetObjectItemCaseSensitive(user, "uid");
	const cJSON *gid = cJSON_GetObjectItemCaseSensitive(user, "gid");
	if ((uid && !num_id(uid, &out->uid)) || (gid && !num_id(gid, &out->gid)))
		return sl_fail(
		    err, SL_INVALID, 0,
		    "process.user: uid and gid must be whole numbers from 0 to 4294967294");
	const cJSON *ag = cJSON_GetObjectItemCaseSensitive(user, "additionalGids"), *g;
	if (ag && !cJSON_IsArray(ag))
		return sl_fail(err, SL_INVALID, 0, "process.user.additionalGids: not an array");
	out->gids = calloc((size_t)cJSON_GetArraySize(ag) + 1, sizeof(uint32_t));
	if (!out->gids)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "process.user.additionalGids");
	cJSON_ArrayForEach(g, ag)
	{
		if (!num_id(g, &out->gids[out->ngids++]))
			return sl_fail(err, SL_INVALID, 0,
				       "process.user.additionalGids: each a whole number from 0 "
				       "to 4294967294");
	}
	if (strv_parse(cJSON_GetObjectItemCaseSensitive(p, "args"), "process.args", &out->args,
		       err) < 0 ||
	    strv_parse(cJSON_GetObjectItemCaseSensitive(p, "env"), "process.env", &out->env, err) <
		0)
		return -1;
	if (!out->args[0])
		return sl_fail(err, SL_INVALID, 0, "process.args: empty");
	out->cwd = dup_or_null(p, "cwd");
	if (!out->cwd || out->cwd[0] != '/')
		return sl_fail(err, SL_INVALID, 0, "process.cwd: must be an absolute path");
	out->terminal = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "terminal"));
	out->no_new_privs = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "noNewPrivileges"));
	if (caps_parse(cJSON_GetObjectItemCaseSensitive(p, "capabilities"), &out->caps, err) < 0)
		return -1;
	const cJSON *rl, *rls = cJSON_GetObjectItemCaseSensitive(p, "rlimits");
	cJSON_ArrayForEach(rl, rls)
	{
		const char *type =
		    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rl, "type"));
		size_t i = 0;
		while (type && i < sizeof(rlimit_names) / sizeof(rlimit_names[0]) &&
		       strcmp(type, rlimit_names[i].name))
			i++;
		if (!type || i == sizeof(rlimit_names) / sizeof(rlimit_names[0]))
			return sl_fail(err, SL_INVALID, 0, "process.rlimits: unknown type %s",
				       type ? type : "(none)");
		if (out->nrlimits == OCI_MAX_RLIMITS)
			return sl_fail(err, SL_INVALID, 0, "process.rlimits: too many");
		const cJSON *soft = cJSON_GetObjectItemCaseSensitive(rl, "soft");
		const cJSON *hard = cJSON_GetObjectItemCaseSensitive(rl, "hard");
		out->rlimits[out->nrlimits].resource = rlimit_names[i].resource;
		out->rlimits[out->nrlimits].soft = num_u64(soft);
		out->rlimits[out->nrlimits].hard = num_u64(hard);
		out->nrlimits++;
	}
	return 0;
}

void oci_process_free(oci_process *p)
{
	strv_free(p->args);
	strv_free(p->env);
	free(p->cwd);
	free(p->gids);
	memset(p, 0, sizeof(*p));
}

int oci_process_parse(const char *json, size_t len, oci_process *p, sl_err *err)
{
	_cleanup_cjson_ cJSON *root = cJSON_ParseWithLength(json, len);
	memset(p, 0, sizeof(*p));
	if (!root)
		return sl_fail(err, SL_INVALID, 0, "process: not valid JSON");
	if (process_fill(root, p, err) < 0) {
		oci_process_free(p);
		return -1;
	}
	return 0;
}

static const struct {
	const char *name;
	unsigned long set, clear, prop;
} mount_opts[] = {
    {"ro", MS_RDONLY, 0, 0},
    {"rw", 0, MS_RDONLY, 0},
    {"nosuid", MS_NOSUID, 0, 0},
    {"suid", 0, MS_NOSUID, 0},
    {"nodev", MS_NODEV, 0, 0},
    {"dev", 0, MS_NODEV, 0},
    {"noexec", MS_NOEXEC, 0, 0},
    {"exec", 0, MS_NOEXEC, 0},
    {"relatime", MS_RELATIME, 0, 0},
    {"noatime", MS_NOATIME, 0, 0},
    {"strictatime", MS_STRICTATIME, 0, 0},
    {"nodiratime", MS_NODIRATIME, 0, 0},
    {"private", 0, 0, MS_PRIVATE},
    {"rprivate", 0, 0, MS_PRIVATE | MS_REC},
    {"slave", 0, 0, MS_SLAVE},
    {"rslave", 0, 0, MS_SLAVE | MS_REC},
    {"shared", 0, 0, MS_SHARED},
    {"rshared", 0, 0, MS_SHARED | MS_REC},
    {"unbindable", 0, 0, MS_UNBINDABLE},
    {"runbindable", 0, 0, MS_UNBINDABLE | MS_REC},
};

static int mount_fill(const cJSON *m, size_t i, oci_mount *out, sl_err *err)
{
	out->dest = dup_or_null(m, "destination");
	out->type = dup_or_null(m, "type");
	out->source = dup_or_null(m, "source");
	if (!out->dest || out->dest[0] != '/')
		return sl_fail(err, SL_INVALID, 0, "mounts[%zu].destination: must be absolute", i);
	if (!out->type)
		out->type = strdup("");
	size_t cap = 1;
	const cJSON *o, *opts = cJSON_GetObjectItemCaseSensitive(m, "options");
	cJSON_ArrayForEach(o, opts) if (cJSON_IsString(o)) cap += strlen(o->valuestring) + 1;
	out->data = calloc(cap, 1);
	cJSON_ArrayForEach(o, opts)
	{
		if (!cJSON_IsString(o))
			return sl_fail(err, SL_INVALID, 0, "mounts[%zu].options: not a string", i);
		const char *s = o->valuestring;
		if (!strcmp(s, "bind") || !strcmp(s, "rbind")) {
			out->bind = true;
			out->recursive |= s[0] == 'r';
			continue;
		}
		size_t k = 0, nk = sizeof(mount_opts) / sizeof(mount_opts[0]);
		while (k < nk && strcmp(s, mount_opts[k].name))
			k++;
		if (k < nk) {
			out->flags = (out->flags | mount_opts[k].set) & ~mount_opts[k].clear;
			out->propagation |= mount_opts[k].prop;
			continue;
		}
		if (out->data[0])
			strcat(out->data, ",");
		strcat(out->data, s);
	}
	if (!strcmp(out->type, "bind"))
		out->bind = true;
	if (out->bind && !out->source)
		return sl_fail(err, SL_INVALID, 0, "mounts[%zu]: a bind mount needs a source", i);
	return 0;
}

static int namespaces_fill(const cJSON *lx, oci_spec *s, sl_err *err)
{
	const cJSON *n, *nss = cJSON_GetObjectItemCaseSensitive(lx, "namespaces");
	cJSON_ArrayForEach(n, nss)
	{
		const char *type =
		    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(n, "type"));
		int k = 0;
		while (type && k < OCI_NS_COUNT && strcmp(type, ns_names[k]))
			k++;
		if (!type || k == OCI_NS_COUNT)
			return sl_fail(err, SL_INVALID, 0,
				       "linux.namespaces: unknown namespace type %s",
				       type ? type : "(none)");
		s->ns[k] = true;
		free(s->ns_path[k]);
		s->ns_path[k] = dup_or_null(n, "path");
		if (!s->ns_path[k])
			s->ns_path[k] = strdup("");
	}
	/* The container's mount namespace is where its root is remade (id-mapped layers) and its
	 * masks laid: one it joined would have neither. */
	if (s->ns_path[OCI_NS_MNT] && s->ns_path[OCI_NS_MNT][0])
		return sl_fail(err, SL_INVALID, 0,
			       "linux.namespaces: joining the mount namespace %s is not "
			       "supported (a container gets its own, made from root.path)",
			       s->ns_path[OCI_NS_MNT]);
	static const int needed[] = {OCI_NS_PID, OCI_NS_NET, OCI_NS_MNT, OCI_NS_IPC, OCI_NS_UTS};
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
		if (!s->ns[needed[i]])
			return sl_fail(err, SL_INVALID, 0,
				       "linux.namespaces: the host's %s namespace is refused "
				       "(a sandbox gets its own)",
				       ns_names[needed[i]]);
	return 0;
}

static int mappings_fill(const cJSON *lx, oci_spec *s, sl_err *err)
{
	static const char *const keys[] = {"uidMappings", "gidMappings"};
	for (int i = 0; i < 2; i++) {
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(lx, keys[i]);
		if (!a || !cJSON_GetArraySize(a))
			continue;
		const cJSON *m = cJSON_GetArrayItem(a, 0);
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "containerID");
		const cJSON *h = cJSON_GetObjectItemCaseSensitive(m, "hostID");
		const cJSON *z = cJSON_GetObjectItemCaseSensitive(m, "size");
		if (cJSON_GetArraySize(a) != 1 || !cJSON_IsNumber(c) || c->valuedouble != 0 ||
		    !cJSON_IsNumber(h) || !cJSON_IsNumber(z) || z->valuedouble != 65536 ||
		    h->valuedouble < 65536 || h->valuedouble > 4294901760.0 ||
		    (s->has_mapping && s->map_host != (uint32_t)h->valuedouble))
			return sl_fail(err, SL_INVALID, 0,
				       "linux.%s: only one range of 65536 ids from container id 0 "
				       "to a host id of 65536 or above is supported (the same for "
				       "uids and gids)",
				       keys[i]);
		s->has_mapping = true;
		s->map_host = (uint32_t)h->valuedouble;
	}
	return 0;
}

static int resources_fill(const cJSON *r, sl_limits *lim)
{
	const cJSON *mem = cJSON_GetObjectItemCaseSensitive(r, "memory");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(mem, "limit");
	if (cJSON_IsNumber(v))
		lim->memory_bytes = num_u64(v);
	const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(r, "cpu");
	const cJSON *q = cJSON_GetObjectItemCaseSensitive(cpu, "quota");
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(cpu, "period");
	if (cJSON_IsNumber(q)) {
		double period = cJSON_IsNumber(p) && p->valuedouble > 0 ? p->valuedouble : 100000;
		double m = q->valuedouble * 1000 / period;
		lim->cpu_millicores = m > 0 ? (m >= 1e18 ? (uint64_t)1e18 : (uint64_t)m) : 0;
	}
	const cJSON *pids = cJSON_GetObjectItemCaseSensitive(r, "pids");
	v = cJSON_GetObjectItemCaseSensitive(pids, "limit");
	if (cJSON_IsNumber(v))
		lim->pids_max = num_u64(v);
	return 0;
}

int oci_resources_parse(const char *json, size_t len, sl_limits *lim, sl_err *err)
{
	_cleanup_cjson_ cJSON *root = cJSON_ParseWithLength(json, len);
	if (!cJSON_IsObject(root))
		return sl_fail(err, SL_INVALID, 0, "resources: not a JSON object");
	return resources_fill(root, lim);
}

static int linux_fill(const cJSON *lx, oci_spec *s, sl_err *err)
{
	if (!cJSON_IsObject(lx))
		return sl_fail(err, SL_INVALID, 0, "linux: missing or not an object");
	if (namespaces_fill(lx, s, err) < 0 || mappings_fill(lx, s, err) < 0)
		return -1;
	if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(lx, "devices")) > 0)
		return sl_fail(err, SL_INVALID, 0,
			       "linux.devices: device nodes from the host are refused (a "
			       "container gets sandlot's minimal /dev)");
	s->cgroups_path = dup_or_null(lx, "cgroupsPath");
	resources_fill(cJSON_GetObjectItemCaseSensitive(lx, "resources"), &s->limits);
	const cJSON *sc = cJSON_GetObjectItemCaseSensitive(lx, "seccomp");
	if (cJSON_IsObject(sc))
		s->seccomp_json = cJSON_PrintUnformatted(sc);
	if (strv_parse(cJSON_GetObjectItemCaseSensitive(lx, "maskedPaths"), "linux.maskedPaths",
		       &s->masked, err) < 0 ||
	    strv_parse(cJSON_GetObjectItemCaseSensitive(lx, "readonlyPaths"), "linux.readonlyPaths",
		       &s->readonly, err) < 0)
		return -1;
	const cJSON *sys = cJSON_GetObjectItemCaseSensitive(lx, "sysctl"), *kv;
	int n = cJSON_IsObject(sys) ? cJSON_GetArraySize(sys) : 0, i = 0;
	s->sysctl = calloc(2 * (size_t)n + 1, sizeof(char *));
	cJSON_ArrayForEach(kv, sys)
	{
		if (!cJSON_IsString(kv) || strchr(kv->string, '/') || strstr(kv->string, ".."))
			return sl_fail(err, SL_INVALID, 0,
				       "linux.sysctl.%s: not a string or bad key", kv->string);
		s->sysctl[i++] = strdup(kv->string);
		s->sysctl[i++] = strdup(kv->valuestring);
	}
	return 0;
}

const char *const oci_hook_names[OCI_HOOK_KINDS] = {
    [OCI_HOOK_PRESTART] = "prestart",
    [OCI_HOOK_CREATE_RUNTIME] = "createRuntime",
    [OCI_HOOK_POSTSTART] = "poststart",
    [OCI_HOOK_POSTSTOP] = "poststop",
};

static int hook_fill(const cJSON *o, const char *what, oci_hook *h, sl_err *err)
{
	char w[96];
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "timeout");
	if (!cJSON_IsObject(o))
		return sl_fail(err, SL_INVALID, 0, "%s: not an object", what);
	h->path = dup_or_null(o, "path");
	if (!h->path || h->path[0] != '/')
		return sl_fail(err, SL_INVALID, 0, "%s.path: missing or not absolute", what);
	snprintf(w, sizeof(w), "%s.args", what);
	if (strv_parse(cJSON_GetObjectItemCaseSensitive(o, "args"), w, &h->args, err) < 0)
		return -1;
	snprintf(w, sizeof(w), "%s.env", what);
	if (strv_parse(cJSON_GetObjectItemCaseSensitive(o, "env"), w, &h->env, err) < 0)
		return -1;
	if (t && (!cJSON_IsNumber(t) || t->valuedouble < 1 || t->valuedouble > 86400))
		return sl_fail(err, SL_INVALID, 0, "%s.timeout: not a number of seconds above 0",
			       what);
	h->timeout = t ? (int)t->valuedouble : 0;
	return 0;
}

int oci_hooks_parse(const char *json, size_t len, oci_hooks *h, sl_err *err)
{
	memset(h, 0, sizeof(*h));
	_cleanup_cjson_ cJSON *root = cJSON_ParseWithLength(json, len);
	const cJSON *kind;
	if (!root)
		return sl_fail(err, SL_INVALID, 0, "hooks: not valid JSON");
	if (cJSON_IsNull(root))
		return 0;
	if (!cJSON_IsObject(root))
		return sl_fail(err, SL_INVALID, 0, "hooks: not an object");
	cJSON_ArrayForEach(kind, root)
	{
		int k = 0;
		while (k < OCI_HOOK_KINDS && strcmp(kind->string, oci_hook_names[k]))
			k++;
		if (cJSON_IsNull(kind) || (cJSON_IsArray(kind) && !cJSON_GetArraySize(kind)))
			continue;
		if (k == OCI_HOOK_KINDS) {
			bool inside = !strcmp(kind->string, "createContainer") ||
				      !strcmp(kind->string, "startContainer");
			oci_hooks_free(h);
			return sl_fail(err, SL_INVALID, 0,
				       inside ? "hooks.%s: hooks run inside the container's "
						"namespaces are not supported"
					      : "hooks.%s: unknown hook",
				       kind->string);
		}
		if (!cJSON_IsArray(kind) || cJSON_GetArraySize(kind) > OCI_MAX_HOOKS) {
			oci_hooks_free(h);
			return sl_fail(err, SL_INVALID, 0, "hooks.%s: not an array of at most %d",
				       kind->string, OCI_MAX_HOOKS);
		}
		const cJSON *o;
		cJSON_ArrayForEach(o, kind)
		{
			char what[64];
			snprintf(what, sizeof(what), "hooks.%s[%zu]", kind->string, h->n[k]);
			if (hook_fill(o, what, &h->list[k][h->n[k]++], err) < 0) {
				oci_hooks_free(h);
				return -1;
			}
		}
	}
	return 0;
}

void oci_hooks_free(oci_hooks *h)
{
	for (int k = 0; k < OCI_HOOK_KINDS; k++)
		for (size_t i = 0; i < h->n[k]; i++) {
			free(h->list[k][i].path);
			strv_free(h->list[k][i].args);
			strv_free(h->list[k][i].env);
		}
	memset(h, 0, sizeof(*h));
}

/* "hooks" checked and kept as text: the runtime runs them at create, start and delete. */
static int hooks_fill(const cJSON *root, oci_spec *s, sl_err *err)
{
	const cJSON *hooks = cJSON_GetObjectItemCaseSensitive(root, "hooks");
	if (!hooks || cJSON_IsNull(hooks))
		return 0;
	s->hooks_json = cJSON_PrintUnformatted(hooks);
	oci_hooks h;
	if (!s->hooks_json)
		return sl_fail(err, SL_INTERNAL, 0, "out of memory");
	if (oci_hooks_parse(s->hooks_json, strlen(s->hooks_json), &h, err) < 0)
		return -1;
	oci_hooks_free(&h);
	return 0;
}

static int spec_fill(const cJSON *root, oci_spec *s, sl_err *err)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(root, "root");
	s->root_path = dup_or_null(r, "path");
	if (!s->root_path || !s->root_path[0])
		return sl_fail(err, SL_INVALID, 0, "root.path: missing");
	s->root_readonly = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "readonly"));
	s->hostname = dup_or_null(root, "hostname");
	if (hooks_fill(root, s, err) < 0 ||
	    process_fill(cJSON_GetObjectItemCaseSensitive(root, "process"), &s->proc, err) < 0 ||
	    linux_fill(cJSON_GetObjectItemCaseSensitive(root, "linux"), s, err) < 0)
		return -1;
	const cJSON *m, *ms = cJSON_GetObjectItemCaseSensitive(root, "mounts");
	cJSON_ArrayForEach(m, ms)
	{
		if (s->nmounts == OCI_MAX_MOUNTS)
			return sl_fail(err, SL_INVALID, 0, "mounts: more than %d", OCI_MAX_MOUNTS);
		if (mount_fill(m, s->nmounts, &s->mounts[s->nmounts], err) < 0) {
			s->nmounts++;
			return -1;
		}
		s->nmounts++;
	}
	const cJSON *ann = cJSON_GetObjectItemCaseSensitive(root, "annotations");
	s->annotations_json = ann ? cJSON_PrintUnformatted(ann) : strdup("{}");
	const char *h =
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ann, "sandlot.dev/hardening"));
	s->spec_only = h && !strcmp(h, "spec-only");
	s->pod_id = dup_or_null(ann, "io.kubernetes.cri.sandbox-id");
	return 0;
}

int oci_spec_parse(const char *json, size_t len, oci_spec *spec, sl_err *err)
{
	memset(spec, 0, sizeof(*spec));
	_cleanup_cjson_ cJSON *root = cJSON_ParseWithLength(json, len);
	if (!cJSON_IsObject(root))
		return sl_fail(err, SL_INVALID, 0, "config.json: not a valid JSON object");
	if (spec_fill(root, spec, err) < 0) {
		oci_spec_free(spec);
		return -1;
	}
	return 0;
}

void oci_spec_free(oci_spec *s)
{
	free(s->root_path);
	free(s->hostname);
	oci_process_free(&s->proc);
	for (int i = 0; i < OCI_NS_COUNT; i++)
		free(s->ns_path[i]);
	for (size_t i = 0; i < s->nmounts; i++) {
		free(s->mounts[i].dest);
		free(s->mounts[i].type);
		free(s->mounts[i].source);
		free(s->mounts[i].data);
	}
	free(s->cgroups_path);
	free(s->seccomp_json);
	strv_free(s->masked);
	strv_free(s->readonly);
	strv_free(s->sysctl);
	free(s->annotations_json);
	free(s->pod_id);
	free(s->hooks_json);
	memset(s, 0, sizeof(*s));
}

int oci_signal_parse(const char *s)
{
	static const struct {
		const char *name;
		int sig;
	} sigs[] = {{"HUP", SIGHUP},	{"INT", SIGINT},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL},
		    {"USR1", SIGUSR1},	{"USR2", SIGUSR2}, {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},
		    {"TERM", SIGTERM},	{"CONT", SIGCONT}, {"STOP", SIGSTOP}, {"TSTP", SIGTSTP},
		    {"WINCH", SIGWINCH}};
	if (!s || !*s)
		return -1;
	char *end;
	long n = strtol(s, &end, 10);
	if (!*end)
		return n > 0 && n < 65 ? (int)n : -1;
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (!strcasecmp(s, sigs[i].name))
			return sigs[i].sig;
	return -1;
}
