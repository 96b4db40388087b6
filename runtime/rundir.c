/* rundir.c — a sandbox's run dir as the layers above runtime/ see it (rundir.h): its idle
 * clock, where an execution lives, and the façades' own directories. */
#include "rundir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "id.h"
#include "state.h"

static void activity_path(const sl_config *cfg, const char *id, char *buf, size_t len)
{
	char run[PATH_MAX];
	state_run_dir(cfg, id, run, sizeof(run));
	snprintf(buf, len, "%s/activity", run);
}

void rundir_touch(const sl_config *cfg, const char *id)
{
	if (!id_ok(id, "sbx_"))
		return;
	char p[PATH_MAX + 16];
	activity_path(cfg, id, p, sizeof(p));
	utimensat(AT_FDCWD, p, NULL, 0);
}

int64_t rundir_activity_ms(const sl_config *cfg, const char *id)
{
	char p[PATH_MAX + 16];
	struct stat st;
	activity_path(cfg, id, p, sizeof(p));
	if (stat(p, &st) < 0)
		return 0;
	return (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
}

int rundir_exec_sandbox(const sl_config *cfg, const char *eid, char sid[32], sl_err *err)
{
	if (!id_ok(eid, "exe_"))
		return sl_fail(err, SL_NOTFOUND, 0, "no execution %s", eid);
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/sandboxes", cfg->run_dir);
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!id_ok(de->d_name, "sbx_"))
			continue;
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s/execs/%s", dir, de->d_name, eid);
		if (access(p, F_OK) == 0) {
			snprintf(sid, 32, "%s", de->d_name);
			return 0;
		}
	}
	return sl_fail(err, SL_NOTFOUND, 0, "no execution %s", eid);
}

int rundir_facade_dir(const sl_config *cfg, const char *id, const char *facade, bool make,
		      char *buf, size_t len, sl_err *err)
{
	if (!id_ok(id, "sbx_") || !facade[0] || strchr(facade, '/') || facade[0] == '.')
		return sl_fail(err, SL_INVALID, 0, "sandbox %.40s: no directory %.40s", id, facade);
	char run[PATH_MAX];
	state_run_dir(cfg, id, run, sizeof(run));
	int n = snprintf(buf, len, "%s/%s", run, facade);
	if (n < 0 || (size_t)n >= len)
		return sl_fail(err, SL_INTERNAL, ENAMETOOLONG, "sandbox %s: %s directory", id,
			       facade);
	if (make && mkdir(buf, 0700) < 0 && errno != EEXIST)
		return sl_sysfail(err, "sandbox %s: make its %s directory", id, facade);
	return 0;
}
