/* reap.c — the dead inits of sandboxes a long-lived process (the daemon) launched: its
 * children, found and reaped without touching any other child it waits for itself. */
#include "reap.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"

/* Inits of sandboxes this process created are its children: reap the dead ones. Only
 * zombies named sandlot-init are taken (other children, like mkfs.btrfs or launch's
 * helpers, are waited for by their callers). Each child costs one waitid that only looks
 * (WNOWAIT); a zombie's name is read from /proc. Reading every child's stat at each
 * SIGCHLD (each create's user-namespace helper ends with one) was O(sandboxes) of this
 * thread's time per create: with 300 up, 3 s of CPU over 665 creates and deletes, against
 * 1 s now (docs/bench.md, "Session 22").
 *
 * The once-a-second sweep reaps too. An init is the child of the thread that launched it,
 * often a connection's, which ends after its answer: the kernel then moves its children to
 * another of our threads without a new SIGCHLD. A scan at the init's SIGCHLD that read the
 * new parent's list before the move and the old one's after it missed the zombie, which
 * then waited for the next SIGCHLD (seen in test_parallel_creates_take_spares: a
 * sandlot-init zombie past the leak check's 4 s). */
void inits_reap_dead(void)
{
	_cleanup_closedir_ DIR *tasks = opendir("/proc/self/task");
	struct dirent *t;
	while (tasks && (t = readdir(tasks))) {
		if (t->d_name[0] == '.')
			continue;
		char p[96];
		snprintf(p, sizeof(p), "/proc/self/task/%s/children", t->d_name);
		_cleanup_fclose_ FILE *f = fopen(p, "re");
		int pid;
		while (f && fscanf(f, "%d", &pid) == 1) {
			siginfo_t si = {0};
			if (waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0 ||
			    si.si_pid != pid)
				continue; /* alive, or not ours to look at any more */
			char sp[64], buf[256];
			snprintf(sp, sizeof(sp), "/proc/%d/stat", pid);
			_cleanup_close_ int fd = open(sp, O_RDONLY | O_CLOEXEC);
			ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
			if (n <= 0)
				continue;
			buf[n] = '\0';
			const char *c = strchr(buf, '(');
			if (c && !strncmp(c, "(sandlot-init) ", 15))
				waitpid(pid, NULL, WNOHANG | __WALL);
		}
	}
}
