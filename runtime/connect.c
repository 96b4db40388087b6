/* connect.c — a TCP connection into a sandbox's network namespace (connect.h). */
#include "connect.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "launch.h"
#include "log.h"

/* Connect to 127.0.0.1:port inside the sandbox: the socket is made in its network
 * namespace by this thread, which then returns to ours (a thread that could not
 * return exits with the connection, never serving anything else from there). */
int sandbox_connect_port(const sl_sandbox *sb, uint16_t port)
{
	if (sb->status != SL_ST_RUNNING) {
		errno = ESRCH;
		return -1;
	}
	pid_t init = sb->init_pid;
	uint64_t start = sb->init_start;
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/ns/net", (int)init);
	int ns = open(p, O_RDONLY | O_CLOEXEC);
	int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	int fd = -1;
	if (ns >= 0 && self >= 0 && proc_start_time(init) == start &&
	    setns(ns, CLONE_NEWNET) == 0) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (setns(self, CLONE_NEWNET) < 0) {
			sl_log(SL_LOG_ERROR, "ports: cannot return to the host netns");
			pthread_exit(NULL);
		}
	}
	if (ns >= 0)
		close(ns);
	if (self >= 0)
		close(self);
	if (fd < 0) {
		errno = errno ? errno : ESRCH;
		return -1;
	}
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}
