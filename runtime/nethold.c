/* nethold.c — the daemon's hold on the network's host side (net.h). In the binary, not
 * in sandlot-net.so: the hold is taken before the module is loaded (the daemon's resolver
 * loads it to learn the gateway). */
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

static void holder_path(const sl_config *cfg, char *buf, size_t len)
{
	snprintf(buf, len, "%s/net/holder", cfg->state_dir);
}

/* The holder's pid, if it is alive (same start time); 0 if none or gone. */
static pid_t holder_alive(const sl_config *cfg)
{
	char p[PATH_MAX], text[64] = "";
	holder_path(cfg, p, sizeof(p));
	_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || read(fd, text, sizeof(text) - 1) <= 0)
		return 0;
	unsigned long long start = 0;
	int pid = 0;
	if (sscanf(text, "%d %llu", &pid, &start) != 2 || pid <= 0 || !start)
		return 0;
	return proc_start_time(pid) == start ? pid : 0;
}

int net_hold(const sl_config *cfg, sl_err *err)
{
	char p[PATH_MAX], text[64];
	snprintf(p, sizeof(p), "%s/net", cfg->state_dir);
	if (state_mkdirs(p, 0700, err) < 0)
		return -1;
	holder_path(cfg, p, sizeof(p));
	snprintf(text, sizeof(text), "%d %llu\n", (int)getpid(),
		 (unsigned long long)proc_self_start_time());
	/* Not durable: after a crash the pid is dead, and a dead holder holds nothing. */
	return state_write_atomic_nosync(p, text, strlen(text), err);
}

bool net_held(const sl_config *cfg)
{
	return holder_alive(cfg) != 0;
}

void net_unhold(const sl_config *cfg)
{
	char p[PATH_MAX];
	if (holder_alive(cfg) != getpid())
		return;
	holder_path(cfg, p, sizeof(p));
	unlink(p);
	/* The bridge exists only while some network was made: without one the module stays
	 * unloaded. */
	snprintf(p, sizeof(p), "/sys/class/net/%s", cfg->net_bridge);
	if (access(p, F_OK) != 0)
		return;
	sl_err e = { 0 };
	if (net_down_if_idle(cfg, &e) < 0)
		sl_log(SL_LOG_WARN, "network: %s", e.msg);
}
