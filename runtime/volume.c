/* volume.c — volume records (<state>/volumes/<name>.json) over btrfs subvolumes in
 * <store>/volumes/, and the allow-list check for host directories. */
#include "volume.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "lookup.h"
#include "state.h"
#include "storage.h"

static int valid_name(const char *n)
{
	size_t len = strlen(n);
	if (!len || len > 63)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') || n[i] == '-' ||
		      (i && (n[i] == '.' || n[i] == '_'))))
			return 0;
	return 1;
}

static void volume_record_path(const sl_ctx *ctx, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/volumes/%s.json", ctx->cfg.state_dir, name);
}

static void subvol_path(const sl_ctx *ctx, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/store/volumes/%s", ctx->cfg.state_dir, name);
}

/* Whoever's it is. */
static int volume_read(sl_ctx *ctx, const char *name, sl_volume *out, sl_err *err)
{
	if (!valid_name(name))
		return sl_fail(err, SL_INVALID, 0,
			       "volume name \"%s\": use 1-63 lowercase letters, digits, '-', '.', '_'",
			       name);
	char p[PATH_MAX];
	volume_record_path(ctx, name, p, sizeof(p));
	_cleanup_free_ char *data = NULL;
	if (state_read_file(p, 65536, &data, NULL, err) < 0) {
		if (err->kind == SL_NOTFOUND)
			sl_fail(err, SL_NOTFOUND, 0, "volume %s not found", name);
		return -1;
	}
	cJSON *o = cJSON_Parse(data);
	/* Version 2 names the member; version 1 (no "schema") said createdMs. */
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(
	    o, cJSON_GetObjectItemCaseSensitive(o, "schema") ? "created_ms" : "createdMs");
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", name);
	out->created_ms = cJSON_IsNumber(c) ? (int64_t)c->valuedouble : 0;
	const cJSON *ow = cJSON_GetObjectItemCaseSensitive(o, "owner"); /* absent: the admin's */
	snprintf(out->owner, sizeof(out->owner), "%s", cJSON_IsString(ow) ? ow->valuestring : "");
	cJSON_Delete(o);
	return 0;
}

/* Only what the thread's key may see: another key's volume is "not found". */
int volume_get(sl_ctx *ctx, const char *name, sl_volume *out, sl_err *err)
{
	if (volume_read(ctx, name, out, err) < 0)
		return -1;
	if (!owner_sees(out->owner))
		return sl_fail(err, SL_NOTFOUND, 0, "volume %s not found", name);
	return 0;
}

int volume_create(sl_ctx *ctx, const char *name, sl_volume *out, sl_err *err)
{
	if (!valid_name(name))
		return sl_fail(err, SL_INVALID, 0,
			       "volume name \"%s\": use 1-63 lowercase letters, digits, '-', '.', '_'",
			       name);
	char p[PATH_MAX], lockp[PATH_MAX];
	snprintf(p, sizeof(p), "%s/volumes", ctx->cfg.state_dir);
	if (state_mkdirs(p, 0700, err) < 0 || store_ensure(&ctx->cfg, err) < 0)
		return -1;
	snprintf(lockp, sizeof(lockp), "%s/.lock", p);
	_cleanup_close_ int lk = state_lock(lockp, err);
	if (lk < 0)
		return -1;
	sl_err e2 = { 0 };
	if (volume_read(ctx, name, out, &e2) == 0)
		return sl_fail(err, SL_CONFLICT, 0, "volume %s already exists", name);
	snprintf(p, sizeof(p), "%s/store/volumes", ctx->cfg.state_dir);
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		return sl_sysfail(err, "create %s", p);
	_cleanup_close_ int parent = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct btrfs_ioctl_vol_args_v2 va = { 0 };
	snprintf(va.name, sizeof(va.name), "%s", name);
	if (parent < 0 || (ioctl(parent, BTRFS_IOC_SUBVOL_CREATE_V2, &va) < 0 && errno != EEXIST))
		return sl_sysfail(err, "create volume %s", name);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", name);
	out->created_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	snprintf(out->owner, sizeof(out->owner), "%s", owner_acting());
	char rec[192]; /* the name and owner are of letters, digits and "-._" only */
	snprintf(rec, sizeof(rec),
		 "{\"schema\":2,\"name\":\"%s\",\"created_ms\":%lld,\"owner\":\"%s\"}", name,
		 (long long)out->created_ms, out->owner);
	volume_record_path(ctx, name, p, sizeof(p));
	return state_write_atomic(p, rec, strlen(rec), err);
}

int volume_root_open(sl_ctx *ctx, const char *name, int *fd, sl_err *err)
{
	sl_volume v;
	if (volume_get(ctx, name, &v, err) < 0 || store_ensure(&ctx->cfg, err) < 0)
		return -1;
	char p[PATH_MAX];
	subvol_path(ctx, name, p, sizeof(p));
	*fd = open(p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0)
		return sl_sysfail(err, "volume %s: open its directory", name);
	return 0;
}

int volume_list(sl_ctx *ctx, sl_volume **out, size_t *n, sl_err *err)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/volumes", ctx->cfg.state_dir);
	*out = NULL;
	*n = 0;
	char **names;
	size_t nn;
	if (state_list_dir(p, "", ".json", &names, &nn, err) < 0)
		return -1;
	if (nn && !(*out = calloc(nn, sizeof(**out)))) {
		state_free_names(names, nn);
		return sl_fail(err, SL_INTERNAL, ENOMEM, "list volumes");
	}
	for (size_t i = 0; i < nn; i++) {
		char name[64];
		snprintf(name, sizeof(name), "%s", names[i]);
		sl_err e2 = { 0 };
		if (volume_get(ctx, name, &(*out)[*n], &e2) == 0)
			(*n)++;
	}
	state_free_names(names, nn);
	return 0;
}

static bool mounts_volume(const sl_sandbox *sb, const void *name)
{
	const cJSON *m;
	cJSON_ArrayForEach(m, sb->volumes)
	{
		const cJSON *vn = cJSON_GetObjectItemCaseSensitive(m, "name");
		if (cJSON_IsString(vn) && !strcmp(vn->valuestring, name))
			return true;
	}
	return false;
}

int volume_delete(sl_ctx *ctx, const char *name, sl_err *err)
{
	sl_volume v;
	if (volume_get(ctx, name, &v, err) < 0)
		return -1;
	char user[32];
	if (sandbox_find_user(ctx, mounts_volume, name, user, err) < 0)
		return -1;
	if (user[0])
		return sl_fail(err, SL_CONFLICT, 0,
			       "volume %s is mounted by sandbox %s; delete the sandbox first", name,
			       user);
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/store/volumes", ctx->cfg.state_dir);
	_cleanup_close_ int parent = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct btrfs_ioctl_vol_args va = { 0 };
	snprintf(va.name, sizeof(va.name), "%s", name);
	if (parent < 0 || (ioctl(parent, BTRFS_IOC_SNAP_DESTROY, &va) < 0 && errno != ENOENT))
		return sl_sysfail(err, "delete volume %s", name);
	volume_record_path(ctx, name, p, sizeof(p));
	unlink(p);
	return 0;
}

int volume_source(sl_ctx *ctx, const char *spec, char *buf, size_t len, sl_err *err)
{
	if (spec[0] != '/') {
		sl_volume v;
		sl_err e2 = { 0 };
		if (volume_read(ctx, spec, &v, &e2) < 0) {
			if (e2.kind != SL_NOTFOUND)
				return *err = e2, -1;
			if (volume_create(ctx, spec, &v, err) < 0 &&
			    (err->kind != SL_CONFLICT || volume_read(ctx, spec, &v, err) < 0))
				return -1;
		}
		if (!owner_sees(v.owner))
			return sl_fail(err, SL_CONFLICT, 0,
				       "volume %s belongs to another API key; choose another name",
				       spec);
		subvol_path(ctx, spec, buf, len);
		return 0;
	}
	/* A host directory: only inside a directory the operator allowed. */
	char *real = realpath(spec, NULL);
	if (!real)
		return sl_fail(err, SL_NOTFOUND, errno, "host directory %s", spec);
	const char *allow = getenv("SANDLOT_HOST_MOUNTS");
	bool ok = false;
	char list[4096];
	snprintf(list, sizeof(list), "%s", allow ? allow : "");
	for (char *save = NULL, *dir = strtok_r(list, ":", &save); dir && !ok;
	     dir = strtok_r(NULL, ":", &save)) {
		char *rd = realpath(dir, NULL);
		size_t l = rd ? strlen(rd) : 0;
		ok = rd && !strncmp(real, rd, l) && (real[l] == '/' || real[l] == '\0' ||
						      (l == 1 && rd[0] == '/'));
		free(rd);
	}
	if (!ok) {
		free(real);
		return sl_fail(err, SL_INVALID, 0,
			       "host directory %s is not in the allow-list of host mounts "
			       "(sandlot serve --allow-host-mount DIR, or SANDLOT_HOST_MOUNTS)",
			       spec);
	}
	snprintf(buf, len, "%s", real);
	free(real);
	return 0;
}
