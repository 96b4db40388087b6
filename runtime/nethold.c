/* nethold.c — the daemon's hold on the network's host side (net.h). In the binary, not
 * in sandlot-net.so: the hold is taken before the module is loaded (the daemon's resolver
 * loads it to learn the gateway). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "launch.h"
#include "log.h"
#include "net.h"
#include "state.h"

/* <state>/net/holders/<pid>: one record per holding daemon (its pid and start time).
 * One file for all of them was overwritten by a second daemon on the same state (a
 * restart's successor started before the old one ended, a test's second daemon) and
 * removed when that one stopped: the first then held nothing and, at its own stop, left
 * the bridge, the table and ip_forward behind. */
static void holders_dir(const sl_config *cfg, char *buf, size_t len)
{
	snprintf(buf, len, "%s/net/holders", cfg->state_dir);
}

/* Whether the record NAME in DIR names a live process (same start time). */
static bool holder_alive(int dir, const char *name)
{
	char text[64] = "";
	_cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || read(fd, text, sizeof(text) - 1) <= 0)
		return false;
	unsigned long long start = 0;
	int pid = 0;
	if (sscanf(text, "%d %llu", &pid, &start) != 2 || pid <= 0 || !start)
		return false;
	return proc_start_time(pid) == start;
}

/* Whether a record in DIR names a live holder; with DROP_DEAD, the records of dead ones
 * (daemons killed with -9) are removed on the way. */
static bool holders_scan(const char *dir, bool drop_dead)
{
	DIR *d = opendir(dir);
	if (!d)
		return false;
	bool held = false;
	struct dirent *de;
	while ((drop_dead || !held) && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (holder_alive(dirfd(d), de->d_name))
			held = true;
		else if (drop_dead)
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
	return held;
}

int net_hold(const sl_config *cfg, sl_err *err)
{
	char p[PATH_MAX], text[64];
	holders_dir(cfg, p, sizeof(p));
	if (state_mkdirs(p, 0700, err) < 0)
		return -1;
	holders_scan(p, true);
	size_t n = strlen(p);
	snprintf(p + n, sizeof(p) - n, "/%d", (int)getpid());
	snprintf(text, sizeof(text), "%d %llu\n", (int)getpid(),
		 (unsigned long long)proc_self_start_time());
	/* Not durable: after a crash the pid is dead, and a dead holder holds nothing. */
	return state_write_atomic_nosync(p, text, strlen(text), err);
}

bool net_held(const sl_config *cfg)
{
	char p[PATH_MAX];
	holders_dir(cfg, p, sizeof(p));
	return holders_scan(p, false);
}

void net_unhold(const sl_config *cfg)
{
	char p[PATH_MAX];
	holders_dir(cfg, p, sizeof(p));
	size_t n = strlen(p);
	snprintf(p + n, sizeof(p) - n, "/%d", (int)getpid());
	unlink(p);
	/* The bridge exists only while some network was made: without one the module stays
	 * unloaded. Another daemon's hold keeps it up (host_idle asks). */
	snprintf(p, sizeof(p), "/sys/class/net/%s", cfg->net_bridge);
	if (access(p, F_OK) != 0)
		return;
	sl_err e = { 0 };
	if (net_down_if_idle(cfg, &e) < 0)
		sl_log(SL_LOG_WARN, "network: %s", e.msg);
}
