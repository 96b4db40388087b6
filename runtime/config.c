/* config.c — defaults and environment overrides; finds sandlot-init and the seccomp
 * profile next to the running binary (build tree) or in the install prefix. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netaddr.h"
#include "quantity.h"

static void set_str(char *dst, size_t len, const char *env, const char *def)
{
	const char *v = getenv(env);
	snprintf(dst, len, "%s", v && *v ? v : def);
}

/* First existing of: dir-of-exe/rel1, dir-of-exe/rel2 ... */
static void find_near_exe(char *dst, size_t len, const char *const rels[])
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = '\0';
	for (int i = 0; rels[i]; i++) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", exe, rels[i]);
		if (access(p, R_OK) == 0) {
			char *r = realpath(p, NULL);
			snprintf(dst, len, "%s", r ? r : p);
			free(r);
			return;
		}
	}
}

static int env_quantity(const char *env, const char *def, int cpu, uint64_t *out, sl_err *err)
{
	const char *v = getenv(env);
	if (!v || !*v)
		v = def;
	return cpu ? quantity_parse_cpu(env, v, out, err) : quantity_parse_bytes(env, v, out, err);
}

static int config_disk_grants(sl_config *cfg, sl_err *err)
{
	cfg->max_disk = cfg->store_bytes;
	if (getenv("SANDLOT_MAX_DISK") && *getenv("SANDLOT_MAX_DISK") &&
	    env_quantity("SANDLOT_MAX_DISK", "", 0, &cfg->max_disk, err) < 0)
		return -1;
	const char *v = getenv("SANDLOT_MIN_FREE");
	if (space_floor_parse("SANDLOT_MIN_FREE", v && *v ? v : "1Gi", &cfg->min_free, err) < 0)
		return -1;
	v = getenv("SANDLOT_MAX_IMPORTS");
	cfg->max_imports = 2;
	if (v && *v) {
		if (strspn(v, "0123456789") != strlen(v) || strlen(v) > 4 || !atoi(v))
			return sl_fail(err, SL_INVALID, 0,
				       "SANDLOT_MAX_IMPORTS=%s: a whole number from 1", v);
		cfg->max_imports = (uint32_t)atoi(v);
	}
	return 0;
}

/* SANDLOT_READY_TIMEOUT: seconds an image's ready command may take (startcmd.h). */
static int config_ready_timeout(sl_config *cfg, sl_err *err)
{
	const char *v = getenv("SANDLOT_READY_TIMEOUT");
	cfg->ready_timeout_ms = 300 * 1000;
	if (v && *v) {
		if (strspn(v, "0123456789") != strlen(v) || strlen(v) > 5 || !atoi(v) ||
		    atoi(v) > 86400)
			return sl_fail(err, SL_INVALID, 0,
				       "SANDLOT_READY_TIMEOUT=%s: seconds, from 1 to 86400", v);
		cfg->ready_timeout_ms = (uint64_t)atoi(v) * 1000;
	}
	return 0;
}

int config_load(sl_config *cfg, sl_err *err)
{
	memset(cfg, 0, sizeof(*cfg));
	set_str(cfg->state_dir, sizeof(cfg->state_dir), "SANDLOT_STATE_DIR", "/var/lib/sandlot");
	set_str(cfg->run_dir, sizeof(cfg->run_dir), "SANDLOT_RUN_DIR", "/run/sandlot");
	set_str(cfg->cgroup_root, sizeof(cfg->cgroup_root), "SANDLOT_CGROUP_ROOT",
		"/sys/fs/cgroup");
	static const char *const init_rels[] = {"sandlot-init", "../libexec/sandlot/sandlot-init",
						NULL};
	static const char *const prof_rels[] = {"../seccomp/default.json",
						"../share/sandlot/seccomp/default.json", NULL};
	find_near_exe(cfg->init_path, sizeof(cfg->init_path), init_rels);
	find_near_exe(cfg->seccomp_profile, sizeof(cfg->seccomp_profile), prof_rels);
	if (getenv("SANDLOT_INIT"))
		set_str(cfg->init_path, sizeof(cfg->init_path), "SANDLOT_INIT", "");
	if (getenv("SANDLOT_SECCOMP_PROFILE"))
		set_str(cfg->seccomp_profile, sizeof(cfg->seccomp_profile),
			"SANDLOT_SECCOMP_PROFILE", "");
	if (!cfg->init_path[0])
		return sl_fail(
		    err, SL_INTERNAL, 0,
		    "cannot find sandlot-init next to the sandlot binary; set SANDLOT_INIT");
	if (!cfg->seccomp_profile[0])
		return sl_fail(err, SL_INTERNAL, 0,
			       "cannot find seccomp/default.json; set SANDLOT_SECCOMP_PROFILE");

	const char *b = getenv("SANDLOT_UID_BASE");
	cfg->uid_base = b && *b ? (uint32_t)strtoul(b, NULL, 10) : 1000000000u;
	if (cfg->uid_base < 65536)
		return sl_fail(err, SL_INVALID, 0,
			       "SANDLOT_UID_BASE=%u: sandbox uid ranges must start above 65535",
			       cfg->uid_base);
	cfg->uid_slots = (UINT32_MAX - 65536 - cfg->uid_base) / 65536;
	if (cfg->uid_slots > 60000)
		cfg->uid_slots = 60000;
	if (env_quantity("SANDLOT_STORE_SIZE", "64Gi", 0, &cfg->store_bytes, err) < 0 ||
	    env_quantity("SANDLOT_DEFAULT_CPU", "1", 1, &cfg->def_cpu_millis, err) < 0 ||
	    env_quantity("SANDLOT_DEFAULT_MEMORY", "1Gi", 0, &cfg->def_memory, err) < 0 ||
	    env_quantity("SANDLOT_DEFAULT_DISK", "4Gi", 0, &cfg->def_disk, err) < 0)
		return -1;
	if (config_disk_grants(cfg, err) < 0 || config_ready_timeout(cfg, err) < 0)
		return -1;
	const char *runner = getenv("SANDLOT_CODE_RUNNER");
	cfg->code_runner_off = runner && !strcmp(runner, "off");
	set_str(cfg->apt_mirror, sizeof(cfg->apt_mirror), "SANDLOT_APT_MIRROR", "");
	set_str(cfg->pip_index, sizeof(cfg->pip_index), "SANDLOT_PIP_INDEX", "");
	set_str(cfg->pip_wheels, sizeof(cfg->pip_wheels), "SANDLOT_PIP_WHEELS", "");
	set_str(cfg->npm_registry, sizeof(cfg->npm_registry), "SANDLOT_NPM_REGISTRY", "");
	set_str(cfg->registry_mirror, sizeof(cfg->registry_mirror), "SANDLOT_REGISTRY_MIRROR", "");
	set_str(cfg->insecure_registries, sizeof(cfg->insecure_registries),
		"SANDLOT_INSECURE_REGISTRIES", "");
	set_str(cfg->registry_auth, sizeof(cfg->registry_auth), "SANDLOT_REGISTRY_AUTH", "");
	const char *p = getenv("SANDLOT_DEFAULT_PIDS");
	cfg->def_pids = p && *p ? strtoull(p, NULL, 10) : 512;
	p = getenv("SANDLOT_TOMBSTONES_MAX");
	cfg->tombstones_max = 5000;
	if (p && *p) {
		if (strspn(p, "0123456789") != strlen(p) || strlen(p) > 9)
			return sl_fail(err, SL_INVALID, 0,
				       "SANDLOT_TOMBSTONES_MAX=%s: a whole number of tombstones",
				       p);
		cfg->tombstones_max = strtoull(p, NULL, 10);
	}
	set_str(cfg->net_bridge, sizeof(cfg->net_bridge), "SANDLOT_NET_BRIDGE", "sandlot0");
	set_str(cfg->net_subnet, sizeof(cfg->net_subnet), "SANDLOT_NET_SUBNET", "");
	set_str(cfg->net_dns, sizeof(cfg->net_dns), "SANDLOT_NET_DNS", "");
	set_str(cfg->net_allow_private, sizeof(cfg->net_allow_private), "SANDLOT_NET_ALLOW_PRIVATE",
		"");
	if (net_private_list_parse("SANDLOT_NET_ALLOW_PRIVATE", cfg->net_allow_private, NULL,
				   SL_NET_MAX_PRIVATE, err) < 0)
		return -1;
	for (const char *c = cfg->net_bridge; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' ||
		      *c == '-') ||
		    strlen(cfg->net_bridge) > 15)
			return sl_fail(err, SL_INVALID, 0,
				       "SANDLOT_NET_BRIDGE=%s: use up to 15 of a-z 0-9 _ -",
				       cfg->net_bridge);
	return 0;
}
