/* probe.c — tries syscalls a sandbox must refuse, each with valid arguments, and prints
 * "<name> ok" or "<name> errno=<NAME>" per check; e2e tests run it inside and outside sandboxes. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* musl ships no kernel UAPI headers: the few constants and structs are spelled out here. */
#define PROBE_CLONE_NEWUSER	       0x10000000
#define PROBE_KEYCTL_GET_KEYRING_ID    0
#define PROBE_KEY_SPEC_SESSION_KEYRING (-3)
#define PROBE_BPF_MAP_CREATE	       0
#define PROBE_BPF_MAP_TYPE_ARRAY       2
#define PROBE_PERF_TYPE_SOFTWARE       1
#define PROBE_PERF_COUNT_SW_TASK_CLOCK 1
#define PROBE_PERF_ATTR_SIZE_VER0      64

/* The head of union bpf_attr used by BPF_MAP_CREATE; the kernel wants the tail zeroed. */
struct probe_bpf_map_create {
	uint32_t map_type;
	uint32_t key_size;
	uint32_t value_size;
	uint32_t max_entries;
	uint32_t map_flags;
	uint8_t zero[108];
};

/* struct perf_event_attr as of PERF_ATTR_SIZE_VER0. */
struct probe_perf_attr {
	uint32_t type;
	uint32_t size;
	uint64_t config;
	uint64_t sample_period;
	uint64_t sample_type;
	uint64_t read_format;
	uint64_t flags; /* bit 0 disabled, bit 5 exclude_kernel, bit 6 exclude_hv */
	uint32_t wakeup_events;
	uint32_t bp_type;
	uint64_t bp_addr;
};

static const char *probe_errno_name(int e)
{
	static const struct {
		int num;
		const char *name;
	} names[] = {
	    {EPERM, "EPERM"},
	    {ENOENT, "ENOENT"},
	    {ESRCH, "ESRCH"},
	    {EINTR, "EINTR"},
	    {EIO, "EIO"},
	    {ENOEXEC, "ENOEXEC"},
	    {EBADF, "EBADF"},
	    {ECHILD, "ECHILD"},
	    {EAGAIN, "EAGAIN"},
	    {ENOMEM, "ENOMEM"},
	    {EACCES, "EACCES"},
	    {EFAULT, "EFAULT"},
	    {EBUSY, "EBUSY"},
	    {EEXIST, "EEXIST"},
	    {ENODEV, "ENODEV"},
	    {ENOTDIR, "ENOTDIR"},
	    {EINVAL, "EINVAL"},
	    {EMFILE, "EMFILE"},
	    {ENOSPC, "ENOSPC"},
	    {EROFS, "EROFS"},
	    {ENOSYS, "ENOSYS"},
	    {EOPNOTSUPP, "EOPNOTSUPP"},
	    {EKEYREJECTED, "EKEYREJECTED"},
	    {EBADMSG, "EBADMSG"},
	    {E2BIG, "E2BIG"},
	    {EUSERS, "EUSERS"},
	    {ENOKEY, "ENOKEY"},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].num == e)
			return names[i].name;
	return NULL;
}

/* rc < 0 means the call failed with errno e. */
static void probe_report(const char *name, long rc, int e)
{
	const char *ename = probe_errno_name(e);

	if (rc >= 0)
		printf("%s ok\n", name);
	else if (ename)
		printf("%s errno=%s\n", name, ename);
	else
		printf("%s errno=%d\n", name, e);
}

/* Mounting needs an existing directory, or the lookup's ENOENT would hide the EPERM
 * we are after; a read-only root cannot get /tmp/probe-mnt, so fall back to /tmp, then /.
 * A directory named by --mount-dir is used alone. */
static void probe_mount(const char *dir)
{
	const char *candidates[] = {dir ? dir : "/tmp/probe-mnt", dir ? NULL : "/tmp",
				    dir ? NULL : "/"};
	int created = mkdir(candidates[0], 0700) == 0;

	for (size_t i = 0; i < 3; i++) {
		struct stat st;
		if (!candidates[i] || stat(candidates[i], &st) != 0 || !S_ISDIR(st.st_mode))
			continue;
		long rc = mount("probe", candidates[i], "tmpfs", 0, "size=64k");
		int e = errno;
		if (rc == 0 && umount2(candidates[i], MNT_DETACH) != 0)
			fprintf(stderr, "probe: umount %s: %s\n", candidates[i], strerror(errno));
		if (created)
			rmdir(candidates[0]);
		probe_report("mount", rc, e);
		return;
	}
	probe_report("mount", -1, ENOENT);
}

/* In a child, so the probe itself keeps its namespaces; the exit code carries errno. */
static void probe_unshare(void)
{
	pid_t pid = fork();
	int status;

	if (pid < 0) {
		probe_report("unshare", -1, errno);
		return;
	}
	if (pid == 0)
		_exit(syscall(SYS_unshare, PROBE_CLONE_NEWUSER) == 0 ? 0 : (errno & 0xff));
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			probe_report("unshare", -1, errno);
			return;
		}
	if (!WIFEXITED(status)) {
		printf("unshare errno=SIGNAL%d\n", WTERMSIG(status));
		return;
	}
	probe_report("unshare", WEXITSTATUS(status) == 0 ? 0 : -1, WEXITSTATUS(status));
}

static void probe_keyctl(void)
{
	long rc =
	    syscall(SYS_keyctl, PROBE_KEYCTL_GET_KEYRING_ID, PROBE_KEY_SPEC_SESSION_KEYRING, 0);
	probe_report("keyctl", rc, errno);
}

static void probe_bpf(void)
{
	struct probe_bpf_map_create attr;

	memset(&attr, 0, sizeof(attr));
	attr.map_type = PROBE_BPF_MAP_TYPE_ARRAY;
	attr.key_size = 4;
	attr.value_size = 4;
	attr.max_entries = 1;
	long rc = syscall(SYS_bpf, PROBE_BPF_MAP_CREATE, &attr, sizeof(attr));
	int e = errno;
	if (rc >= 0)
		close((int)rc);
	probe_report("bpf", rc, e);
}

/* exclude_kernel keeps perf_event_paranoid from refusing it, so only a seccomp or
 * capability barrier can make this fail. */
static void probe_perf(void)
{
	struct probe_perf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.type = PROBE_PERF_TYPE_SOFTWARE;
	attr.size = PROBE_PERF_ATTR_SIZE_VER0;
	attr.config = PROBE_PERF_COUNT_SW_TASK_CLOCK;
	attr.flags = (1u << 0) | (1u << 5) | (1u << 6);
	long rc = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	int e = errno;
	if (rc >= 0)
		close((int)rc);
	probe_report("perf_event_open", rc, e);
}

/* A truncated ELF header: the loader rejects it (ENOEXEC), so a result other than EPERM
 * proves the call reached the module loader, and nothing can ever get loaded. */
static void probe_init_module(void)
{
	static const char image[64] = "\177ELF\2\1\1";
	long rc = syscall(SYS_init_module, image, sizeof(image), "");
	probe_report("init_module", rc, errno);
}

static void probe_ptrace(const char *target)
{
	pid_t child = -1, pid;
	int status;

	if (strcmp(target, "child") == 0) {
		child = fork();
		if (child < 0) {
			probe_report("ptrace", -1, errno);
			return;
		}
		if (child == 0) {
			for (;;)
				pause();
		}
		pid = child;
	} else {
		pid = (pid_t)strtol(target, NULL, 10);
	}

	long rc = ptrace(PTRACE_ATTACH, pid, 0, 0);
	int e = errno;
	if (rc == 0) {
		/* Hand back any signal other than our own SIGSTOP so the target loses nothing. */
		int sig = 0;
		while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR)
			;
		if (WIFSTOPPED(status) && WSTOPSIG(status) != SIGSTOP)
			sig = WSTOPSIG(status);
		if (ptrace(PTRACE_DETACH, pid, 0, sig) != 0)
			fprintf(stderr, "probe: detach %d: %s\n", pid, strerror(errno));
	}
	if (child > 0) {
		kill(child, SIGKILL);
		while (waitpid(child, &status, 0) < 0 && errno == EINTR)
			;
	}
	probe_report("ptrace", rc, e);
}

/* The classic chroot escape, as a root with CAP_SYS_CHROOT would try it: chroot into DIR
 * with the working directory left outside it, climb "..", and chroot to where the climb
 * ended. Prints "chroot_escape same" when "/" is still the file it was (the escape ended
 * on this root) and "chroot_escape moved" when it got out; run last, it changes the root. */
static void probe_chroot_escape(const char *dir)
{
	struct stat before, after;
	if (stat("/", &before) < 0 || (mkdir(dir, 0700) < 0 && errno != EEXIST) || chdir("/") < 0) {
		probe_report("chroot_escape", -1, errno);
		return;
	}
	if (chroot(dir) < 0) {
		probe_report("chroot_escape", -1, errno);
		return;
	}
	for (int i = 0; i < 256; i++)
		if (chdir("..") < 0)
			break;
	if (chroot(".") < 0 || stat("/", &after) < 0) {
		probe_report("chroot_escape", -1, errno);
		return;
	}
	bool same = before.st_dev == after.st_dev && before.st_ino == after.st_ino;
	printf("chroot_escape %s\n", same ? "same" : "moved");
}

int main(int argc, char **argv)
{
	const char *target = "1", *mount_dir = NULL, *escape_dir = NULL;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--ptrace-target") == 0 && i + 1 < argc)
			target = argv[++i];
		else if (strcmp(argv[i], "--mount-dir") == 0 && i + 1 < argc)
			mount_dir = argv[++i];
		else if (strcmp(argv[i], "--chroot-escape") == 0 && i + 1 < argc)
			escape_dir = argv[++i];
		else
			fprintf(
			    stderr,
			    "probe: ignoring argument %s (usage: probe [--ptrace-target PID|child] "
			    "[--mount-dir DIR] [--chroot-escape DIR])\n",
			    argv[i]);
	}
	if (escape_dir) {
		probe_chroot_escape(escape_dir);
		return 0;
	}
	probe_mount(mount_dir);
	probe_unshare();
	probe_keyctl();
	probe_bpf();
	probe_perf();
	probe_init_module();
	probe_ptrace(target);
	return 0;
}
