/* hibernate_files.c — the host's files a sandbox's tasks hold open, told to CRIU as
 * external files: a command started through the API holds its stdout and stderr logs
 * and the host's /dev/null, and sandlot-init its exit record, all passed in from the
 * host (exec.c, start_prepare), on mounts the sandbox does not have, which CRIU cannot
 * look up ("Can't lookup mount=..."). At the dump each is "--external file[MNT:INO]"
 * (MNT its mount id, INO its inode, both hex: CRIU's key, criu/files-reg.c); at the
 * restore the daemon opens the same host path and hands it in as "--inherit-fd
 * fd[N]:file[MNT:INO]", which CRIU reopens through /proc/self/fd/N with the dumped
 * flags, as the restored task. */
#include "hibernate_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "execlogs.h"

#define MAX_MOUNTS 256
#define MAX_TASKS  4096

/* The mount ids of PID's mount namespace. */
static size_t mount_ids(pid_t pid, int *ids, size_t max)
{
	char p[64], line[8192];
	snprintf(p, sizeof(p), "/proc/%d/mountinfo", (int)pid);
	FILE *f = fopen(p, "re");
	size_t n = 0;
	while (f && n < max && fgets(line, sizeof(line), f))
		if (sscanf(line, "%d", &ids[n]) == 1)
			n++;
	if (f)
		fclose(f);
	return n;
}

/* INIT and its descendants (what CRIU dumps), from every thread's children. */
static size_t tree(pid_t init, pid_t *pids, size_t max)
{
	size_t n = 0;
	pids[n++] = init;
	for (size_t i = 0; i < n; i++) {
		char p[64], q[128];
		snprintf(p, sizeof(p), "/proc/%d/task", (int)pids[i]);
		DIR *d = opendir(p);
		struct dirent *de;
		while (d && (de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(q, sizeof(q), "%s/%s/children", p, de->d_name);
			FILE *f = fopen(q, "re");
			int c;
			while (f && n < max && fscanf(f, "%d", &c) == 1)
				pids[n++] = c;
			if (f)
				fclose(f);
		}
		if (d)
			closedir(d);
	}
	return n;
}

/* flags (octal) and mnt_id of PID's FD. */
static int fd_info(pid_t pid, const char *fd, unsigned *flags, int *mnt)
{
	char p[96], line[256];
	int got = 0;
	snprintf(p, sizeof(p), "/proc/%d/fdinfo/%s", (int)pid, fd);
	FILE *f = fopen(p, "re");
	while (f && fgets(line, sizeof(line), f)) {
		got += sscanf(line, "flags: %o", flags) == 1;
		got += sscanf(line, "mnt_id: %d", mnt) == 1;
	}
	if (f)
		fclose(f);
	return got == 2 ? 0 : -1;
}

int hib_files_dump(pid_t init, const char *dir, hib_file_arg *args, size_t *n)
{
	_cleanup_free_ int *ids = calloc(MAX_MOUNTS, sizeof(*ids));
	_cleanup_free_ pid_t *pids = calloc(MAX_TASKS, sizeof(*pids));
	char out[PATH_MAX];
	*n = 0;
	if (!ids || !pids)
		return -1;
	size_t nids = mount_ids(init, ids, MAX_MOUNTS);
	size_t npids = tree(init, pids, MAX_TASKS);
	if (nids == 0)
		return -1;
	snprintf(out, sizeof(out), "%s/extfiles", dir);
	FILE *ext = fopen(out, "we");
	if (!ext)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < npids && rc == 0; i++) {
		char p[64], fp[128], path[PATH_MAX];
		snprintf(p, sizeof(p), "/proc/%d/fd", (int)pids[i]);
		DIR *d = opendir(p);
		struct dirent *de;
		while (d && rc == 0 && (de = readdir(d))) {
			unsigned flags = 0;
			int mnt = -1;
			struct stat st;
			if (de->d_name[0] == '.')
				continue;
			snprintf(fp, sizeof(fp), "%s/%s", p, de->d_name);
			ssize_t len = readlink(fp, path, sizeof(path) - 1);
			if (len <= 0)
				continue;
			path[len] = '\0';
			/* Paths only: sockets, pipes, anonymous inodes are "type:[...]"; a memfd's
			 * mount is the kernel's, and CRIU dumps it itself. */
			if (path[0] != '/' || !strncmp(path, "/memfd:", 7))
				continue;
			if (fd_info(pids[i], de->d_name, &flags, &mnt) < 0 || stat(fp, &st) < 0)
				continue; /* closed meanwhile */
			bool inside = false;
			for (size_t j = 0; j < nids && !inside; j++)
				inside = ids[j] == mnt;
			if (inside)
				continue;
			char key[64];
			snprintf(key, sizeof(key), "file[%x:%" PRIx64 "]", (unsigned)mnt,
				 (uint64_t)st.st_ino);
			bool seen = false;
			for (size_t j = 0; j < *n && !seen; j++)
				seen = !strcmp(args[j] + strlen("--external="), key);
			if (seen)
				continue;
			if (*n >= HIB_MAX_FILES) {
				errno = E2BIG;
				rc = -1;
				break;
			}
			snprintf(args[(*n)++], sizeof(args[0]), "--external=%s", key);
			/* KEY FLAGS MODE SIZE PATH */
			fprintf(ext, "%s %o %o %lld %s\n", key, flags, (unsigned)st.st_mode,
				(long long)st.st_size, path);
		}
		if (d)
			closedir(d);
	}
	if (fclose(ext) != 0)
		rc = -1;
	return rc;
}

/* PATH gone (a reboot emptied the run dir): an unlinked file in SB's log space instead,
 * of MODE and SIZE (CRIU checks both), so the command runs on, its output kept nowhere. */
static int stand_in(const sl_ctx *ctx, const sl_sandbox *sb, unsigned mode, long long size,
		    sl_err *err)
{
	char d[PATH_MAX];
	int lk = -1;
	if (execlogs_ready(ctx, sb, d, &lk, err) < 0)
		return -1;
	if (lk >= 0)
		close(lk);
	int fd = open(d, O_TMPFILE | O_RDWR | O_CLOEXEC, mode & 07777);
	if (fd < 0 || fchmod(fd, mode & 07777) < 0 || ftruncate(fd, size) < 0) {
		sl_sysfail(err, "sandbox %s: a stand-in file in %s", sb->id, d);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Whether the "other" bits of MODE let the sandbox's root open it with FLAGS. */
static bool others_may(unsigned mode, unsigned flags)
{
	unsigned acc = flags & O_ACCMODE;
	bool r = acc != O_WRONLY, w = acc != O_RDONLY;
	return (!r || (mode & S_IROTH)) && (!w || (mode & S_IWOTH));
}

int hib_files_restore(const sl_ctx *ctx, const sl_sandbox *sb, const char *dir, hib_files *f,
		      hib_file_arg *args, sl_err *err)
{
	char p[PATH_MAX], line[PATH_MAX + 128];
	f->n = 0;
	snprintf(p, sizeof(p), "%s/extfiles", dir);
	FILE *ext = fopen(p, "re");
	if (!ext)
		return errno == ENOENT ? 0 : sl_sysfail(err, "open %s", p);
	int rc = 0;
	while (rc == 0 && f->n < HIB_MAX_FILES && fgets(line, sizeof(line), ext)) {
		char key[64];
		unsigned flags, mode;
		long long size;
		int used = 0;
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%63s %o %o %lld %n", key, &flags, &mode, &size, &used) != 4 ||
		    line[used] != '/') {
			rc = sl_fail(err, SL_INTERNAL, 0, "sandbox %s: bad line in %s", sb->id, p);
			break;
		}
		const char *path = line + used;
		/* A FIFO (a stdin) opened for both ends: neither waits for the other. */
		int oflags =
		    S_ISFIFO(mode) ? O_RDWR | O_NONBLOCK : (int)(flags & (O_ACCMODE | O_APPEND));
		int fd = open(path, oflags | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
		if (fd < 0 && errno == ENOENT && S_ISREG(mode))
			fd = stand_in(ctx, sb, mode, size, err);
		else if (fd < 0)
			sl_sysfail(err, "sandbox %s: open %s", sb->id, path);
		if (fd < 0) {
			rc = -1;
			break;
		}
		struct stat st;
		f->fd[f->n] = fd;
		f->uid[f->n] = (uid_t)-1;
		/* CRIU reopens it as the restored tree's root (host uid uid_base), which a
		 * log of the host's (0600, root's) would refuse: lent to it for the restore. */
		if (fstat(fd, &st) == 0 && st.st_uid != sb->uid_base &&
		    (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)) &&
		    !others_may(st.st_mode, flags)) {
			if (fchown(fd, sb->uid_base, (gid_t)-1) < 0)
				rc = sl_sysfail(err, "sandbox %s: lend %s", sb->id, path);
			else
				f->uid[f->n] = st.st_uid;
		}
		snprintf(args[f->n], sizeof(args[0]), "--inherit-fd=fd[%d]:%s", fd, key);
		f->n++;
	}
	fclose(ext);
	if (rc < 0)
		hib_files_release(f);
	return rc;
}

void hib_files_release(hib_files *f)
{
	for (size_t i = 0; i < f->n; i++) {
		if (f->uid[i] != (uid_t)-1 && fchown(f->fd[i], f->uid[i], (gid_t)-1) < 0) {
			/* the restored tree keeps its descriptor either way */
		}
		close(f->fd[i]);
	}
	f->n = 0;
}
