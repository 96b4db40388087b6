/* fuzz_archive.c — untrusted tar extraction (archive_extract_counted, runtime/
 * archive_extract.c) into a tmpfs of the harness's own mount namespace; nothing may leave it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive_extract.h"
#include "fsutil.h"
#include "fuzz.h"
#include "log.h"

/* The tmpfs holds box/ (where each input is extracted, as box/x) and outside/secret, a
 * file an escape would touch. After every input: the tmpfs root still lists exactly
 * box and outside, box lists x or nothing (nothing after a failure), the secret is
 * unchanged with one link, and the extracted tree holds no device node and no mount. */
static char root[PATH_MAX], box[PATH_MAX + 8], dest[PATH_MAX + 16], outside[PATH_MAX + 16],
    secret[PATH_MAX + 32];
static dev_t tmpfs_dev;
int LLVMFuzzerInitialize(int *argc, char ***argv);

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s) || close(fd) < 0)
		die(path);
}

/* Root: a mount namespace of our own. Otherwise a user namespace mapping us to root. */
static void own_mount_namespace(void)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	if (unshare(CLONE_NEWNS) < 0) {
		char map[64];
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			die("unshare");
		write_file("/proc/self/setgroups", "deny");
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
		write_file("/proc/self/uid_map", map);
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
		write_file("/proc/self/gid_map", map);
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		die("make / private");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* Beside the binary (build/fuzz/fuzz_archive.tmpfs), mounted in this namespace only:
	 * the host sees an empty directory under build/, and nothing else, however the
	 * fuzzer exits. */
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		die("readlink /proc/self/exe");
	exe[n] = '\0';
	if (snprintf(root, sizeof(root), "%s.tmpfs", exe) >= (int)sizeof(root))
		die("path too long");
	if (mkdir(root, 0700) < 0 && errno != EEXIST)
		die(root);
	own_mount_namespace();
	if (mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=0755") < 0)
		die("mount tmpfs");
	snprintf(box, sizeof(box), "%s/box", root);
	snprintf(dest, sizeof(dest), "%s/x", box);
	snprintf(outside, sizeof(outside), "%s/outside", root);
	snprintf(secret, sizeof(secret), "%s/secret", outside);
	if (mkdir(box, 0755) < 0 || mkdir(outside, 0755) < 0)
		die("mkdir");
	write_file(secret, "secret\n");
	struct stat st;
	if (stat(root, &st) < 0)
		die(root);
	tmpfs_dev = st.st_dev;
	sl_log_open("/dev/null"); /* libarchive's warnings on hostile input are expected */
	return 0;
}

/* The names in DIR, sorted, joined by '/'. */
static void listing(const char *dir, char *out, size_t len)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	if (n < 0)
		die(dir);
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, "..")) {
			strncat(out, names[i]->d_name, len - strlen(out) - 1);
			strncat(out, "/", len - strlen(out) - 1);
		}
		free(names[i]);
	}
	free(names);
}

static int check_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	if (st->st_dev != tmpfs_dev || S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
		fprintf(stderr, "fuzz_archive: %s: a device node or another filesystem\n", path);
		abort();
	}
	return 0;
}

static void check_host(bool extracted)
{
	char l[4096];
	listing(root, l, sizeof(l));
	if (strcmp(l, "box/outside/")) {
		fprintf(stderr, "fuzz_archive: the tmpfs root now holds %s\n", l);
		abort();
	}
	listing(box, l, sizeof(l));
	if (strcmp(l, extracted ? "x/" : "")) {
		fprintf(stderr, "fuzz_archive: box/ holds '%s' after %s\n", l,
			extracted ? "success" : "failure");
		abort();
	}
	listing(outside, l, sizeof(l));
	struct stat st;
	char buf[16] = "";
	int fd = open(secret, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (strcmp(l, "secret/") || fd < 0 || fstat(fd, &st) < 0 || st.st_nlink != 1 ||
	    (st.st_mode & 07777) != 0600 || read(fd, buf, sizeof(buf) - 1) != 7 ||
	    strcmp(buf, "secret\n")) {
		fprintf(stderr, "fuzz_archive: outside/ was touched\n");
		abort();
	}
	close(fd);
	if (extracted && nftw(dest, check_entry, 16, FTW_PHYS) < 0)
		die("nftw");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-archive", MFD_CLOEXEC);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) < 0)
		die("memfd");
	sl_archive_limits lim = {.max_entry_bytes = 1 << 20,
				 .max_total_bytes = 4 << 20,
				 .max_entries = 512,
				 .allow_devices = false};
	char digest[65];
	uint64_t bytes = 0;
	sl_err err = {0};
	int r = archive_extract_counted(fd, dest, &lim, digest, &bytes, &err);
	close(fd);
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "fuzz_archive: %s\n", r == 0 ? "extracted" : err.msg);
	if (r < 0 && !err.msg[0])
		abort();
	if (r == 0 && (strlen(digest) != 64 || bytes > lim.max_total_bytes))
		abort();
	check_host(r == 0);
	if (r == 0 && fs_remove_tree(dest, &err) < 0) {
		fprintf(stderr, "fuzz_archive: remove %s: %s\n", dest, err.msg);
		abort();
	}
	return 0;
}
