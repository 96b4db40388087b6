/* ocirun.c — sandlot-oci's containers (ocirun.h): a state dir per container under the
 * caller's --root holding state.json (ours: pid, bundle, cgroup, uid range, what was
 * added), exec.fifo until `start`, and the mount points of its init. The uid range comes
 * from sandlot's allocator (claim.c, owner "oci_<hash>" of the pod or the container),
 * the limits from cgroup.c, the filter from seccomp.c, the processes from launch_oci.c. */
#include "ocirun.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "claim.h"
#include "cleanup.h"
#include "fsutil.h"
#include "launch.h"
#include "launch_oci.h"
#include "ocihook.h"
#include "ocispec.h"
#include "state.h"

typedef struct oci_state {
	char id[256], bundle[PATH_MAX], created[40], cgroup[512], owner[40], slot[16];
	char seccomp[8]; /* the filter's source: "spec", "sandlot" or "none" */
	pid_t pid;
	uint64_t start, caps;
	uint32_t uid_base;
	bool userns, paused;
	sl_limits limits;
	char *annotations; /* JSON text */
} oci_state;

enum oci_status { ST_CREATED, ST_RUNNING, ST_PAUSED, ST_STOPPED };
static const char *const status_names[] = {"created", "running", "paused", "stopped"};

static int check_id(const char *id, sl_err *err)
{
	size_t n = strlen(id);
	if (!n || n > 200 ||
	    strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		       "0123456789_.-") != n ||
	    id[0] == '.')
		return sl_fail(err, SL_INVALID, 0, "invalid container id %s", id);
	return 0;
}

static void container_dir(const char *root, const char *id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", root, id);
}

static int state_save(const char *dir, const oci_state *s, sl_err *err)
{
	_cleanup_cjson_ cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", s->id);
	cJSON_AddNumberToObject(o, "pid", s->pid);
	cJSON_AddNumberToObject(o, "start", (double)s->start);
	cJSON_AddStringToObject(o, "bundle", s->bundle);
	cJSON_AddStringToObject(o, "created", s->created);
	cJSON_AddStringToObject(o, "cgroup", s->cgroup);
	cJSON_AddStringToObject(o, "owner", s->owner);
	cJSON_AddStringToObject(o, "slot", s->slot);
	cJSON_AddStringToObject(o, "seccomp", s->seccomp);
	cJSON_AddNumberToObject(o, "caps", (double)s->caps);
	cJSON_AddNumberToObject(o, "uidBase", s->uid_base);
	cJSON_AddBoolToObject(o, "userns", s->userns);
	cJSON_AddBoolToObject(o, "paused", s->paused);
	cJSON_AddNumberToObject(o, "cpuMillicores", (double)s->limits.cpu_millicores);
	cJSON_AddNumberToObject(o, "memoryBytes", (double)s->limits.memory_bytes);
	cJSON_AddNumberToObject(o, "pidsMax", (double)s->limits.pids_max);
	cJSON *ann = cJSON_Parse(s->annotations ? s->annotations : "{}");
	cJSON_AddItemToObject(o, "annotations", ann ? ann : cJSON_CreateObject());
	_cleanup_free_ char *text = cJSON_PrintUnformatted(o);
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/state.json", dir);
	return state_write_atomic_nosync(p, text, strlen(text), err);
}

static void copy_str(char *dst, size_t len, const cJSON *o, const char *key)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
	snprintf(dst, len, "%s", v ? v : "");
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* ID's state; SL_NOTFOUND when there is none. DIR gets its directory. */
static int state_load(const char *root, const char *id, oci_state *s, char dir[PATH_MAX],
		      sl_err *err)
{
	memset(s, 0, sizeof(*s));
	if (check_id(id, err) < 0)
		return -1;
	container_dir(root, id, dir, PATH_MAX);
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/state.json", dir);
	_cleanup_free_ char *text = NULL;
	size_t len;
	sl_err e = {0};
	if (state_read_file(p, 1 << 20, &text, &len, &e) < 0)
		return sl_fail(err, SL_NOTFOUND, 0, "container %s does not exist", id);
	_cleanup_cjson_ cJSON *o = cJSON_ParseWithLength(text, len);
	if (!o)
		return sl_fail(err, SL_INTERNAL, 0, "container %s: state.json is not JSON", id);
	copy_str(s->id, sizeof(s->id), o, "id");
	copy_str(s->bundle, sizeof(s->bundle), o, "bundle");
	copy_str(s->created, sizeof(s->created), o, "created");
	copy_str(s->cgroup, sizeof(s->cgroup), o, "cgroup");
	copy_str(s->owner, sizeof(s->owner), o, "owner");
	copy_str(s->slot, sizeof(s->slot), o, "slot");
	copy_str(s->seccomp, sizeof(s->seccomp), o, "seccomp");
	s->pid = (pid_t)num(o, "pid");
	s->start = (uint64_t)num(o, "start");
	s->caps = (uint64_t)num(o, "caps");
	s->uid_base = (uint32_t)num(o, "uidBase");
	s->userns = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "userns"));
	s->paused = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "paused"));
	s->limits.cpu_millicores = (uint64_t)num(o, "cpuMillicores");
	s->limits.memory_bytes = (uint64_t)num(o, "memoryBytes");
	s->limits.pids_max = (uint64_t)num(o, "pidsMax");
	s->annotations = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(o, "annotations"));
	return 0;
}

static void state_free(oci_state *s)
{
	free(s->annotations);
	s->annotations = NULL;
}

static enum oci_status status_of(const oci_state *s, const char *dir)
{
	if (!s->pid || proc_start_time(s->pid) != s->start)
		return ST_STOPPED;
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/exec.fifo", dir);
	if (access(p, F_OK) == 0)
		return ST_CREATED;
	return s->paused ? ST_PAUSED : ST_RUNNING;
}

/* The runtime-spec state of S (its annotations kept) as STATUS with PID: what `state`
 * prints and a hook reads on its stdin. */
static char *state_json(const oci_state *s, const char *status, pid_t pid, bool pretty)
{
	_cleanup_cjson_ cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "ociVersion", "1.0.2");
	cJSON_AddStringToObject(o, "id", s->id);
	cJSON_AddNumberToObject(o, "pid", pid);
	cJSON_AddStringToObject(o, "status", status);
	cJSON_AddStringToObject(o, "bundle", s->bundle);
	char rootfs[PATH_MAX + 8];
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", s->bundle);
	cJSON_AddStringToObject(o, "rootfs", rootfs);
	cJSON_AddStringToObject(o, "created", s->created);
	cJSON_AddStringToObject(o, "owner", "");
	/* As runc: no annotations key when there are none. */
	cJSON *ann = cJSON_Parse(s->annotations ? s->annotations : "{}");
	if (ann && cJSON_GetArraySize(ann))
		cJSON_AddItemToObject(o, "annotations", ann);
	else
		cJSON_Delete(ann);
	return pretty ? cJSON_Print(o) : cJSON_PrintUnformatted(o);
}

/* ID's state (its annotations freed) and status. */
static int state_status(const char *root, const char *id, oci_state *s, char dir[PATH_MAX],
			enum oci_status *st, sl_err *err)
{
	if (state_load(root, id, s, dir, err) < 0)
		return -1;
	state_free(s);
	*st = status_of(s, dir);
	return 0;
}

/* <state>/oci/<owner>: the containers holding the owner's uid range, one file each. */
static void owner_path(const sl_ctx *ctx, const char *owner, const char *name, char *buf,
		       size_t len)
{
	snprintf(buf, len, "%s/oci/%s%s%s", ctx->cfg.state_dir, owner, name ? "/" : "",
		 name ? name : "");
}

static uint64_t fnv64(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* A uid range for S (a pod's containers share their pod's, keyed by its sandbox id). */
static int range_take(sl_ctx *ctx, const oci_spec *spec, oci_state *s, const char *marker,
		      sl_err *err)
{
	uint64_t h = fnv64(spec->pod_id ? spec->pod_id : s->id);
	char p[PATH_MAX], base_file[PATH_MAX];
	snprintf(s->owner, sizeof(s->owner), "oci_%016llx", (unsigned long long)h);
	owner_path(ctx, s->owner, NULL, p, sizeof(p));
	if (state_mkdirs(p, 0700, err) < 0)
		return -1;
	owner_path(ctx, s->owner, marker, p, sizeof(p));
	if (state_write_atomic_nosync(p, s->id, strlen(s->id), err) < 0)
		return -1;
	owner_path(ctx, s->owner, ".slot", base_file, sizeof(base_file));
	_cleanup_free_ char *slot = NULL;
	size_t len;
	sl_err e = {0};
	if (state_read_file(base_file, 64, &slot, &len, &e) == 0 && len < sizeof(s->slot)) {
		snprintf(s->slot, sizeof(s->slot), "%.*s", (int)len, slot);
		s->uid_base = ctx->cfg.uid_base + (uint32_t)strtoul(s->slot, NULL, 10) * 65536u;
		return 0;
	}
	if (claim_uid_range(ctx, s->owner, h, &s->uid_base, err) < 0) {
		unlink(p);
		return -1;
	}
	snprintf(s->slot, sizeof(s->slot), "%u", (s->uid_base - ctx->cfg.uid_base) / 65536u);
	return state_write_atomic_nosync(base_file, s->slot, strlen(s->slot), err);
}

/* S's hold on its owner's range let go; the range itself when no container holds it. */
static void range_drop(sl_ctx *ctx, const oci_state *s, const char *marker)
{
	if (!s->owner[0])
		return;
	char p[PATH_MAX];
	owner_path(ctx, s->owner, marker, p, sizeof(p));
	unlink(p);
	owner_path(ctx, s->owner, NULL, p, sizeof(p));
	_cleanup_closedir_ DIR *d = opendir(p);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			return;
	if (s->slot[0])
		claim_drop(ctx, "slots", s->slot, s->owner);
	owner_path(ctx, s->owner, ".slot", p, sizeof(p));
	unlink(p);
	owner_path(ctx, s->owner, NULL, p, sizeof(p));
	rmdir(p);
}

/* The operator's sandlot-oci config (SANDLOT_OCI_CONFIG, default /etc/sandlot/oci.json):
 * {"allowSpecOnly": true} lets a spec's sandlot.dev/hardening: spec-only annotation count. */
static bool spec_only_allowed(void)
{
	const char *p = getenv("SANDLOT_OCI_CONFIG");
	_cleanup_free_ char *text = NULL;
	size_t len;
	sl_err e = {0};
	if (state_read_file(p && *p ? p : "/etc/sandlot/oci.json", 1 << 16, &text, &len, &e) < 0)
		return false;
	_cleanup_cjson_ cJSON *o = cJSON_ParseWithLength(text, len);
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "allowSpecOnly"));
}

/* The controllers a v1 `cgroup` mount shows: the ones sandlot's cgroups are made in. */
static const char *const cg_controllers[] = {"cpu", "cpuacct", "memory", "pids", "freezer"};
#define CG_VIEW_MAX (sizeof(cg_controllers) / sizeof(cg_controllers[0]))

/* What SPEC's `cgroup` mount (if it has one) shows of the cgroup NAME: its directory per
 * controller into DIRS, with their names, in *N (launch_oci.h). Each is made readable to
 * the container's root: sandlot's cgroups are 0700, and their parents keep the host's
 * other users out still. */
static int cgroup_view(sl_ctx *ctx, const oci_spec *spec, const char *name, char dirs[][PATH_MAX],
		       const char **names, const char **paths, size_t *n, sl_err *err)
{
	*n = 0;
	bool wanted = false;
	for (size_t i = 0; i < spec->nmounts; i++)
		wanted |= !strncmp(spec->mounts[i].type, "cgroup", 6);
	bool v2 = cgroup_version(ctx->cg) == 2;
	for (size_t i = 0; wanted && i < (v2 ? 1 : CG_VIEW_MAX); i++) {
		if (cgroup_path(ctx->cg, v2 ? NULL : cg_controllers[i], name, dirs[i], PATH_MAX) <
			0 ||
		    chmod(dirs[i], 0755) < 0)
			return sl_sysfail(err, "cgroup %s: its view for the container", name);
		names[i] = v2 ? "" : cg_controllers[i];
		paths[i] = dirs[i];
		(*n)++;
	}
	return 0;
}

/* The cgroup a cgroupsPath names (cgroupfs only: "slice:prefix:name" is systemd's). */
static int cgroup_name(const oci_spec *spec, const char *id, char *buf, size_t len, sl_err *err)
{
	const char *p = spec ? spec->cgroups_path : NULL;
	if (!p || !*p) {
		snprintf(buf, len, "sandlot-oci/%s", id);
		return 0;
	}
	if (strchr(p, ':'))
		return sl_fail(err, SL_INVALID, 0,
			       "linux.cgroupsPath %s: systemd cgroup paths are "
			       "not supported (use the cgroupfs driver)",
			       p);
	while (*p == '/')
		p++;
	if (!*p || strstr(p, ".."))
		return sl_fail(err, SL_INVALID, 0, "linux.cgroupsPath %s: not supported",
			       spec->cgroups_path);
	snprintf(buf, len, "%s", p);
	return 0;
}

/* The filter of the container in DIR, from the BPF cache (<state>/seccomp-cache): the
 * spec's profile (SPEC_JSON, kept as DIR/seccomp.json for its execs) when it has one, else
 * sandlot's; none when SOURCE is "none" already (spec-only). *SOURCE says which. */
static int filter_make(sl_ctx *ctx, const char *dir, const char *spec_json, uint64_t caps,
		       sl_bpf *out, char source[8], sl_err *err)
{
	char path[PATH_MAX], cache[PATH_MAX];
	memset(out, 0, sizeof(*out));
	if (!strcmp(source, "none"))
		return 0;
	snprintf(path, sizeof(path), "%s/seccomp.json", dir);
	if (spec_json) {
		snprintf(source, 8, "spec");
		if (state_write_atomic_nosync(path, spec_json, strlen(spec_json), err) < 0)
			return -1;
	} else if (strcmp(source, "spec")) { /* "spec": an exec, the profile its create kept */
		snprintf(source, 8, "sandlot");
		snprintf(path, sizeof(path), "%s", ctx->cfg.seccomp_profile);
	}
	snprintf(cache, sizeof(cache), "%s/seccomp-cache", ctx->cfg.state_dir);
	/* A spec's profile as runc takes it; sandlot's own strictly (seccomp.h). */
	if ((!strcmp(source, "spec") ? seccomp_bpf_get_spec(path, cache, caps, out, err)
				     : seccomp_bpf_get(path, cache, caps, out, err)) < 0)
		return sl_wrap(err, "seccomp profile %s", path);
	return 0;
}

static int read_bundle(const char *bundle, oci_spec *spec, sl_err *err)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/config.json", bundle);
	_cleanup_free_ char *text = NULL;
	size_t len;
	sl_err e = {0};
	if (state_read_file(p, 4 << 20, &text, &len, &e) < 0)
		return sl_fail(err, SL_INVALID, e.errnum, "bundle %s: read config.json", bundle);
	if (oci_spec_parse(text, len, spec, err) < 0)
		return sl_wrap(err, "bundle %s", bundle);
	return 0;
}

static int write_pid_file(const char *path, pid_t pid, sl_err *err)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d", (int)pid);
	return path ? state_write_atomic_nosync(path, buf, (size_t)n, err) : 0;
}

/* What a failed create made, undone: cgroup, range, state dir. */
static void create_undo(sl_ctx *ctx, const oci_state *s, const char *dir, bool cgroup)
{
	sl_err e = {0};
	if (cgroup)
		cgroup_destroy(ctx->cg, s->cgroup, &e);
	range_drop(ctx, s, s->id);
	fs_remove_tree(dir, &e);
}

/* The user namespace at PATH (/proc/<pid>/ns/user), joined as a whole: an fd, its host id
 * of root in *BASE (its uid_map must be one 65536-wide range from 0, as sandlot makes). */
static int userns_join(const char *path, uint32_t *base, sl_err *err)
{
	char map[PATH_MAX];
	unsigned long in, host, len;
	const char *ns = strstr(path, "/ns/user");
	if (strncmp(path, "/proc/", 6) || !ns || ns[8])
		return sl_fail(err, SL_INVALID, 0,
			       "user namespace path %s: want /proc/<pid>/ns/user", path);
	snprintf(map, sizeof(map), "%.*s/uid_map", (int)(ns - path), path);
	_cleanup_fclose_ FILE *f = fopen(map, "re");
	if (!f || fscanf(f, "%lu %lu %lu", &in, &host, &len) != 3 || in != 0 || len != 65536 ||
	    host < 65536)
		return sl_fail(err, SL_INVALID, 0,
			       "user namespace %s: its uid_map is not one range "
			       "of 65536 from 0 to a host id of 65536 or above",
			       path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sl_fail(err, SL_INVALID, errno, "user namespace %s", path);
	*base = (uint32_t)host;
	return fd;
}

/* The container in DIR's hooks (DIR/hooks.json, kept by create); none when there is none. */
static int hooks_load(const char *dir, oci_hooks *h, sl_err *err)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/hooks.json", dir);
	_cleanup_free_ char *text = NULL;
	size_t len;
	sl_err e = {0};
	memset(h, 0, sizeof(*h));
	if (state_read_file(p, 4 << 20, &text, &len, &e) < 0)
		return 0;
	return oci_hooks_parse(text, len, h, err);
}

/* The hooks of KIND of the container S in DIR, with its state as STATUS and PID. Their
 * failure is only a warning (runc's poststart and poststop): into *WARN, 0 returned. */
static void hooks_run_warn(const oci_state *s, const char *dir, enum oci_hook_kind kind,
			   const char *status, pid_t pid, sl_err *warn)
{
	oci_hooks h;
	if (hooks_load(dir, &h, warn) < 0)
		return;
	if (h.n[kind]) {
		_cleanup_free_ char *json = state_json(s, status, pid, false);
		if (oci_hooks_run(&h, kind, json, warn) < 0)
			sl_wrap(warn, "container %s", s->id);
	}
	oci_hooks_free(&h);
}

/* SPEC's prestart and createRuntime hooks, in that order (runc's), as the init waits for
 * `start`; their copy kept in DIR for `start` and `delete`. */
static int hooks_create(const oci_spec *spec, const oci_state *s, const char *dir, sl_err *err)
{
	if (!spec->hooks_json)
		return 0;
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/hooks.json", dir);
	if (state_write_atomic_nosync(p, spec->hooks_json, strlen(spec->hooks_json), err) < 0)
		return -1;
	oci_hooks h;
	if (oci_hooks_parse(spec->hooks_json, strlen(spec->hooks_json), &h, err) < 0)
		return -1;
	_cleanup_free_ char *json = state_json(s, "creating", s->pid, false);
	int r = 0;
	if (oci_hooks_run(&h, OCI_HOOK_PRESTART, json, err) < 0 ||
	    oci_hooks_run(&h, OCI_HOOK_CREATE_RUNTIME, json, err) < 0)
		r = -1;
	oci_hooks_free(&h);
	return r;
}

static int create_launch(sl_ctx *ctx, const oci_spec *spec, const oci_create_opts *o, oci_state *s,
			 const char *dir, sl_err *err)
{
	bool spec_only = spec->spec_only && spec_only_allowed();
	const char *join_user = spec->ns[OCI_NS_USER] ? spec->ns_path[OCI_NS_USER] : "";
	_cleanup_close_ int userns = -1;
	if (join_user[0]) {
		/* A pod's user namespace (the pause container's, hostUsers: false). */
		if ((userns = userns_join(join_user, &s->uid_base, err)) < 0)
			return -1;
	} else if (spec->has_mapping) {
		s->uid_base = spec->map_host;
	} else if (!spec_only && range_take(ctx, spec, s, s->id, err) < 0) {
		return -1;
	}
	s->userns = s->uid_base != 0;
	s->caps = spec->proc.caps & (spec_only ? oci_caps_accepted() : seccomp_default_caps());
	if (s->userns && userns < 0 && (userns = launch_userns_open(s->uid_base, err)) < 0)
		return -1;
	if (cgroup_name(spec, s->id, s->cgroup, sizeof(s->cgroup), err) < 0)
		return -1;
	s->limits = spec->limits;
	if (cgroup_create(ctx->cg, s->cgroup, &s->limits, err) < 0)
		return -1;
	char joinbuf[PATH_MAX * 2], cgdirs[CG_VIEW_MAX][PATH_MAX];
	const char *join[8], *cgnames[CG_VIEW_MAX], *cgpaths[CG_VIEW_MAX];
	size_t njoin = 0, ncg = 0;
	sl_bpf filter = {0};
	snprintf(s->seccomp, sizeof(s->seccomp), "%s",
		 spec_only && !spec->seccomp_json ? "none" : "");
	if (cgroup_join_files(ctx->cg, s->cgroup, joinbuf, sizeof(joinbuf), join, 8, &njoin, err) <
		0 ||
	    cgroup_view(ctx, spec, s->cgroup, cgdirs, cgnames, cgpaths, &ncg, err) < 0 ||
	    filter_make(ctx, dir, spec->seccomp_json, s->caps, &filter, s->seccomp, err) < 0) {
		create_undo(ctx, s, dir, true);
		return -1;
	}
	sl_oci_launch l = {.spec = spec,
			   .bundle = s->bundle,
			   .dir = dir,
			   .userns = userns,
			   .uid_base = s->uid_base,
			   .join = join,
			   .njoin = njoin,
			   .filter = filter.insns ? &filter : NULL,
			   .caps = s->caps,
			   .console = o->console_socket,
			   .preserve_fds = o->preserve_fds,
			   .cg_names = cgnames,
			   .cg_dirs = cgpaths,
			   .ncg = ncg};
	pid_t pid;
	int r = launch_oci_init(&l, &pid, err);
	seccomp_bpf_free(&filter);
	if (r < 0) {
		create_undo(ctx, s, dir, true);
		return -1;
	}
	s->pid = pid;
	s->start = proc_start_time(pid);
	if (state_save(dir, s, err) < 0 || hooks_create(spec, s, dir, err) < 0 ||
	    write_pid_file(o->pid_file, pid, err) < 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		create_undo(ctx, s, dir, true);
		return -1;
	}
	return 0;
}

int ocirun_create(sl_ctx *ctx, const char *root, const char *id, const oci_create_opts *o,
		  sl_err *err)
{
	char dir[PATH_MAX];
	if (check_id(id, err) < 0)
		return -1;
	oci_spec spec;
	if (read_bundle(o->bundle, &spec, err) < 0)
		return -1;
	oci_state s = {0};
	snprintf(s.id, sizeof(s.id), "%s", id);
	if (!realpath(o->bundle, s.bundle))
		snprintf(s.bundle, sizeof(s.bundle), "%s", o->bundle);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	strftime(s.created, sizeof(s.created), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(s.created + strlen(s.created), sizeof(s.created) - strlen(s.created), ".%09ldZ",
		 ts.tv_nsec);
	s.annotations = spec.annotations_json;
	container_dir(root, id, dir, sizeof(dir));
	int r = state_mkdirs(root, 0700, err);
	if (r == 0 && mkdir(dir, 0700) < 0)
		r = errno == EEXIST ? sl_fail(err, SL_CONFLICT, 0,
					      "container with given ID already exists: %s", id)
				    : sl_sysfail(err, "create %s", dir);
	if (r == 0)
		r = create_launch(ctx, &spec, o, &s, dir, err);
	s.annotations = NULL;
	oci_spec_free(&spec);
	return r;
}

int ocirun_start(sl_ctx *ctx, const char *root, const char *id, sl_err *warn, sl_err *err)
{
	(void)ctx;
	oci_state s;
	char dir[PATH_MAX], p[PATH_MAX];
	if (state_load(root, id, &s, dir, err) < 0)
		return -1;
	enum oci_status st = status_of(&s, dir);
	if (st != ST_CREATED) {
		state_free(&s);
		return sl_fail(err, SL_CONFLICT, 0,
			       "cannot start container %s: it is %s, not "
			       "created",
			       id, status_names[st]);
	}
	snprintf(p, sizeof(p), "%s/exec.fifo", dir);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct pollfd pfd = {fd, POLLIN, 0};
	char c;
	int r = 0;
	if (fd < 0)
		r = sl_sysfail(err, "container %s: open %s", id, p);
	else if (poll(&pfd, 1, 10000) != 1 || read(fd, &c, 1) != 1)
		r = sl_fail(err, SL_INTERNAL, 0, "container %s: its init did not start", id);
	if (r == 0) {
		unlink(p);
		hooks_run_warn(&s, dir, OCI_HOOK_POSTSTART, "running", s.pid, warn);
	}
	state_free(&s);
	return r;
}

int ocirun_state(sl_ctx *ctx, const char *root, const char *id, char **json, sl_err *err)
{
	(void)ctx;
	oci_state s;
	char dir[PATH_MAX];
	if (state_load(root, id, &s, dir, err) < 0)
		return -1;
	enum oci_status st = status_of(&s, dir);
	*json = state_json(&s, status_names[st], st == ST_STOPPED ? 0 : s.pid, true);
	state_free(&s);
	return 0;
}

int ocirun_kill(sl_ctx *ctx, const char *root, const char *id, int sig, bool all, sl_err *err)
{
	oci_state s;
	char dir[PATH_MAX];
	enum oci_status st;
	if (state_status(root, id, &s, dir, &st, err) < 0)
		return -1;
	if (st == ST_STOPPED)
		return sl_fail(err, SL_CONFLICT, 0, "container %s is not running", id);
	if (!all)
		return kill(s.pid, sig) < 0 ? sl_sysfail(err, "container %s: kill", id) : 0;
	pid_t *pids = NULL;
	size_t n = 0;
	if (cgroup_procs(ctx->cg, s.cgroup, &pids, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		kill(pids[i], sig);
	free(pids);
	return 0;
}

int ocirun_delete(sl_ctx *ctx, const char *root, const char *id, bool force, sl_err *warn,
		  sl_err *err)
{
	oci_state s;
	char dir[PATH_MAX];
	if (state_load(root, id, &s, dir, err) < 0)
		return -1;
	enum oci_status st = status_of(&s, dir);
	if ((st == ST_RUNNING || st == ST_PAUSED) && !force) {
		state_free(&s);
		return sl_fail(err, SL_CONFLICT, 0,
			       "cannot delete container %s that is not "
			       "stopped: %s",
			       id, status_names[st]);
	}
	sl_err e = {0};
	if (st == ST_PAUSED)
		cgroup_freeze(ctx->cg, s.cgroup, false, &e);
	/* Kills whatever is left in it (a created init, a forced running one) first. */
	if (cgroup_destroy(ctx->cg, s.cgroup, err) < 0) {
		state_free(&s);
		return -1;
	}
	for (int i = 0; i < 2000 && st != ST_STOPPED && proc_start_time(s.pid) == s.start; i++)
		usleep(1000);
	hooks_run_warn(&s, dir, OCI_HOOK_POSTSTOP, "stopped", 0, warn);
	state_free(&s);
	range_drop(ctx, &s, s.id);
	return fs_remove_tree(dir, err);
}

int ocirun_exec(sl_ctx *ctx, const char *root, const char *id, const oci_exec_opts *o, int *status,
		sl_err *err)
{
	oci_state s;
	char dir[PATH_MAX];
	enum oci_status st;
	if (state_status(root, id, &s, dir, &st, err) < 0)
		return -1;
	if (st != ST_RUNNING && st != ST_CREATED)
		return sl_fail(err, SL_CONFLICT, 0, "cannot exec in container %s: it is %s", id,
			       status_names[st]);
	_cleanup_free_ char *text = NULL;
	size_t len;
	if (state_read_file(o->process_file, 1 << 20, &text, &len, err) < 0)
		return -1;
	oci_process proc;
	if (oci_process_parse(text, len, &proc, err) < 0)
		return -1;
	sl_bpf filter = {0};
	char joinbuf[PATH_MAX * 2];
	const char *join[8];
	size_t njoin = 0;
	int r = -1;
	pid_t pid;
	/* The container's filter again: the spec's profile, sandlot's, or none. */
	if (filter_make(ctx, dir, NULL, s.caps, &filter, s.seccomp, err) < 0)
		goto out;
	if (cgroup_join_files(ctx->cg, s.cgroup, joinbuf, sizeof(joinbuf), join, 8, &njoin, err) <
	    0)
		goto out;
	sl_oci_launch l = {.userns = s.userns ? 0 : -1,
			   .uid_base = s.uid_base,
			   .join = join,
			   .njoin = njoin,
			   .filter = filter.insns ? &filter : NULL,
			   .caps = s.caps,
			   .console = o->console_socket,
			   .preserve_fds = -1};
	if (launch_oci_exec(&l, &proc, s.pid, &pid, err) < 0 ||
	    write_pid_file(o->pid_file, pid, err) < 0)
		goto out;
	r = 0;
	if (!o->detach) {
		int ws;
		while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
			;
		*status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	}
out:
	seccomp_bpf_free(&filter);
	oci_process_free(&proc);
	return r;
}

int ocirun_ps(sl_ctx *ctx, const char *root, const char *id, char **json, sl_err *err)
{
	oci_state s;
	char dir[PATH_MAX];
	enum oci_status st;
	if (state_status(root, id, &s, dir, &st, err) < 0)
		return -1;
	pid_t *pids = NULL;
	size_t n = 0;
	if (st != ST_STOPPED && cgroup_procs(ctx->cg, s.cgroup, &pids, &n, err) < 0)
		return -1;
	_cleanup_cjson_ cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(pids[i]));
	free(pids);
	*json = cJSON_PrintUnformatted(a);
	return 0;
}

int ocirun_pause(sl_ctx *ctx, const char *root, const char *id, bool paused, sl_err *err)
{
	oci_state s;
	char dir[PATH_MAX];
	if (state_load(root, id, &s, dir, err) < 0)
		return -1;
	enum oci_status st = status_of(&s, dir);
	int r = -1;
	if (st != (paused ? ST_RUNNING : ST_PAUSED))
		sl_fail(err, SL_CONFLICT, 0, "cannot %s container %s: it is %s",
			paused ? "pause" : "resume", id, status_names[st]);
	else if (cgroup_freeze(ctx->cg, s.cgroup, paused, err) == 0) {
		s.paused = paused;
		r = state_save(dir, &s, err);
	}
	state_free(&s);
	return r;
}

int ocirun_update(sl_ctx *ctx, const char *root, const char *id, const char *json, size_t len,
		  sl_err *err)
{
	oci_state s;
	char dir[PATH_MAX];
	if (state_load(root, id, &s, dir, err) < 0)
		return -1;
	int r = -1;
	if (status_of(&s, dir) == ST_STOPPED)
		sl_fail(err, SL_CONFLICT, 0, "container %s is not running", id);
	else if (oci_resources_parse(json, len, &s.limits, err) == 0 &&
		 cgroup_update(ctx->cg, s.cgroup, &s.limits, err) == 0)
		r = state_save(dir, &s, err);
	state_free(&s);
	return r;
}

const char *ocirun_features(void)
{
	return "{\"ociVersionMin\":\"1.0.0\",\"ociVersionMax\":\"1.0.2\","
	       "\"hooks\":[\"prestart\",\"createRuntime\",\"poststart\",\"poststop\"],"
	       "\"mountOptions\":[\"ro\",\"rw\",\"nosuid\",\"suid\",\"nodev\",\"dev\",\"noexec\","
	       "\"exec\",\"relatime\",\"noatime\",\"strictatime\",\"nodiratime\",\"bind\","
	       "\"rbind\","
	       "\"private\",\"rprivate\",\"slave\",\"rslave\",\"shared\",\"rshared\","
	       "\"unbindable\",\"runbindable\"],"
	       "\"linux\":{\"namespaces\":[\"pid\",\"network\",\"mount\",\"ipc\",\"uts\",\"user\","
	       "\"cgroup\"],\"capabilities\":[\"CAP_CHOWN\",\"CAP_DAC_OVERRIDE\",\"CAP_FOWNER\","
	       "\"CAP_FSETID\",\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\",\"CAP_SETFCAP\",\"CAP_"
	       "SETGID\","
	       "\"CAP_SETPCAP\",\"CAP_SETUID\",\"CAP_SYS_CHROOT\"],"
	       "\"cgroup\":{\"v1\":true,\"v2\":true,\"systemd\":false,\"systemdUser\":false},"
	       "\"seccomp\":{\"enabled\":true},\"apparmor\":{\"enabled\":false},"
	       "\"selinux\":{\"enabled\":false}},"
	       "\"annotations\":{\"sandlot.dev/hardening\":\"spec-only (when the operator's "
	       "/etc/sandlot/oci.json has allowSpecOnly)\"}}";
}
