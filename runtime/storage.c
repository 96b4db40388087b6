/* storage.c — btrfs-on-loop store. Chosen by measurement (see docs/storage.md): a
 * qgroup gives a kernel-enforced EDQUOT exactly at the limit, a subvolume is cheap to
 * create and delete, and snapshots of it are nearly free; this kernel has no ext4/XFS
 * quotas, and a tmpfs upper would be charged to memory and lost on stop. */
#include "storage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/loop.h>
#include <linux/magic.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "fsutil.h"
#include "log.h"
#include "space.h"

extern char **environ;

static void store_dir(const sl_config *cfg, char *buf, size_t len)
{
	snprintf(buf, len, "%s/store", cfg->state_dir);
}

static int is_btrfs_mount(const char *path)
{
	struct statfs sf;
	return statfs(path, &sf) == 0 && sf.f_type == BTRFS_SUPER_MAGIC;
}

static int run_mkfs(const char *img, sl_err *err)
{
	char *argv[] = { "mkfs.btrfs", "-q", "-f", (char *)img, NULL };
	pid_t pid;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	int r = posix_spawnp(&pid, "mkfs.btrfs", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return sl_fail(err, SL_INTERNAL, r, "run mkfs.btrfs (is btrfs-progs installed?)");
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return sl_sysfail(err, "wait for mkfs.btrfs");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return sl_fail(err, SL_INTERNAL, 0, "mkfs.btrfs %s failed (status %d)", img, st);
	return 0;
}

/* Attach img to a free loop device (autoclear: it detaches when unmounted). */
static int loop_attach(const char *img, char *dev, size_t len, int *loopfd, sl_err *err)
{
	_cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return sl_sysfail(err, "open /dev/loop-control");
	_cleanup_close_ int imgfd = open(img, O_RDWR | O_CLOEXEC);
	if (imgfd < 0)
		return sl_sysfail(err, "open %s", img);
	for (int tries = 0; tries < 16; tries++) {
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0)
			return sl_sysfail(err, "get a free loop device");
		snprintf(dev, len, "/dev/loop%d", n);
		int fd = open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return sl_sysfail(err, "open %s", dev);
		struct loop_config lc = { .fd = imgfd };
		lc.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		snprintf((char *)lc.info.lo_file_name, LO_NAME_SIZE, "%s", img);
		if (ioctl(fd, LOOP_CONFIGURE, &lc) == 0) {
			*loopfd = fd;
			return 0;
		}
		int e = errno;
		close(fd);
		if (e != EBUSY)
			return sl_fail(err, SL_INTERNAL, e, "attach %s to %s", img, dev);
	}
	return sl_fail(err, SL_EXHAUSTED, EBUSY, "no free loop device for %s", img);
}

static int store_subdirs(const char *dir, sl_err *err)
{
	static const char *const subs[] = { "sandboxes", "snapshots" };
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		char sub[PATH_MAX + 16];
		snprintf(sub, sizeof(sub), "%s/%s", dir, subs[i]);
		if (mkdir(sub, 0700) < 0 && errno != EEXIST)
			return sl_sysfail(err, "create %s", sub);
	}
	return 0;
}

int store_ensure(const sl_config *cfg, sl_err *err)
{
	char dir[PATH_MAX], img[PATH_MAX], lock[PATH_MAX];
	store_dir(cfg, dir, sizeof(dir));
	if (is_btrfs_mount(dir))
		return store_subdirs(dir, err);
	snprintf(img, sizeof(img), "%s/store.img", cfg->state_dir);
	snprintf(lock, sizeof(lock), "%s/store.lock", cfg->state_dir);
	if (mkdir(cfg->state_dir, 0700) < 0 && errno != EEXIST)
		return sl_sysfail(err, "create state dir %s", cfg->state_dir);
	_cleanup_close_ int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lfd < 0 || flock(lfd, LOCK_EX) < 0)
		return sl_sysfail(err, "lock %s", lock);
	if (is_btrfs_mount(dir)) /* another process won the race */
		return store_subdirs(dir, err);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return sl_sysfail(err, "create %s", dir);
	struct stat st;
	if (stat(img, &st) < 0) {
		char tmp[PATH_MAX + 8];
		snprintf(tmp, sizeof(tmp), "%s.new", img);
		_cleanup_close_ int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			return sl_sysfail(err, "create %s", tmp);
		if (ftruncate(fd, (off_t)cfg->store_bytes) < 0)
			return sl_sysfail(err, "size %s", tmp);
		if (run_mkfs(tmp, err) < 0 || rename(tmp, img) < 0) {
			unlink(tmp);
			return err->kind ? -1 : sl_sysfail(err, "rename %s", tmp);
		}
		sl_log(SL_LOG_INFO, "store: formatted %s (%llu bytes, sparse)", img,
		       (unsigned long long)cfg->store_bytes);
	}
	char dev[64];
	_cleanup_close_ int loopfd = -1;
	if (loop_attach(img, dev, sizeof(dev), &loopfd, err) < 0)
		return -1;
	if (mount(dev, dir, "btrfs", MS_NOSUID | MS_NODEV | MS_NOATIME, NULL) < 0)
		return sl_sysfail(err, "mount %s on %s", dev, dir);
	_cleanup_close_ int sfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct btrfs_ioctl_quota_ctl_args q = { .cmd = BTRFS_QUOTA_CTL_ENABLE };
	if (sfd < 0 || ioctl(sfd, BTRFS_IOC_QUOTA_CTL, &q) < 0) {
		int e = errno;
		umount2(dir, MNT_DETACH);
		return sl_fail(err, SL_INTERNAL, e, "enable quotas on %s", dir);
	}
	return store_subdirs(dir, err);
}

int store_space_check(const sl_config *cfg, uint64_t disk_bytes, sl_err *err)
{
	char what[PATH_MAX], store[PATH_MAX];
	snprintf(what, sizeof(what), "the state filesystem (%s)", cfg->state_dir);
	if (space_check_room(cfg->state_dir, &cfg->min_free, disk_bytes, "disk", what, err) < 0)
		return -1;
	store_dir(cfg, store, sizeof(store));
	if (!is_btrfs_mount(store))
		return 0;
	snprintf(what, sizeof(what), "the sandbox store (%s)", store);
	return space_check_room(store, &cfg->min_free, disk_bytes, "disk", what, err);
}

int store_layer_path(const sl_config *cfg, const char *id, char *buf, size_t len)
{
	return snprintf(buf, len, "%s/store/sandboxes/%s", cfg->state_dir, id) >= (int)len ? -1 : 0;
}

static int destroy_subvol(const sl_config *cfg, const char *kind, const char *id, sl_err *err);

static int open_kind(const sl_config *cfg, const char *kind, sl_err *err)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/store/%s", cfg->state_dir, kind);
	int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		sl_sysfail(err, "open %s", p);
	return fd;
}

static int limit_subvol(int sv, uint64_t disk_bytes)
{
	struct btrfs_ioctl_qgroup_limit_args ql = { 0 };
	ql.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
	ql.lim.max_rfer = disk_bytes;
	return disk_bytes ? ioctl(sv, BTRFS_IOC_QGROUP_LIMIT, &ql) : 0;
}

/* dst_kind/name := a snapshot of the subvolume at src. */
static int snapshot_subvol(const sl_config *cfg, const char *src, const char *dst_kind,
			   const char *name, bool rdonly, sl_err *err)
{
	_cleanup_close_ int parent = open_kind(cfg, dst_kind, err);
	if (parent < 0)
		return -1;
	_cleanup_close_ int sfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (sfd < 0)
		return sl_fail(err, errno == ENOENT ? SL_NOTFOUND : SL_INTERNAL, errno, "open %s",
			       src);
	/* A hibernated sandbox's layer holds its memory's images (runtime/hibernate.c): no
	 * snapshot (checkpoint, fork, clone) takes them; read-only once they are out. */
	bool images = faccessat(sfd, "hibernate", F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	struct btrfs_ioctl_vol_args_v2 va = { .fd = sfd,
					      .flags = rdonly && !images ? BTRFS_SUBVOL_RDONLY : 0 };
	snprintf(va.name, sizeof(va.name), "%s", name);
	if (ioctl(parent, BTRFS_IOC_SNAP_CREATE_V2, &va) < 0)
		return sl_sysfail(err, "snapshot %s", src);
	if (!images)
		return 0;
	char p[PATH_MAX];
	uint64_t ro = BTRFS_SUBVOL_RDONLY;
	snprintf(p, sizeof(p), "%s/store/%s/%s/hibernate", cfg->state_dir, dst_kind, name);
	_cleanup_close_ int dfd = -1;
	if (fs_remove_tree(p, err) < 0 ||
	    (rdonly && ((dfd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
			ioctl(dfd, BTRFS_IOC_SUBVOL_SETFLAGS, &ro) < 0))) {
		int e = errno;
		destroy_subvol(cfg, dst_kind, name, NULL);
		return err->kind ? -1 : sl_fail(err, SL_INTERNAL, e, "snapshot %s", src);
	}
	return 0;
}

/* Ready-made subvolumes in <store>/sandboxes, taken by a create instead of making its
 * layer: .spare-<disk bytes>-<k> (empty layers, upper/ root's until taken) and
 * .clone-<snapshot id>-<disk bytes>-<k> (writable snapshots of a snapshot, still owned by
 * its uid range: the caller shifts them as it does a fresh clone). Each is under its
 * qgroup limit. A create renames one to its id (RENAME_NOREPLACE: of two creates racing
 * for one, the second gets ENOENT) where a subvolume, its limit and two directories took
 * ~0.17 ms, and a snapshot's clone commits a btrfs transaction (~5 ms here); releases
 * and the daemon's syncer make them again (docs/storage.md). */
#define SPARES 2

static void slot_name(const char *kind, int k, char *buf, size_t len)
{
	snprintf(buf, len, ".%s-%d", kind, k);
}

/* A spare of KIND renamed to ID: true, or false when there is none. */
static bool slot_take(int parent, const char *kind, const char *id)
{
	for (int k = 0; k < SPARES; k++) {
		char spare[192];
		slot_name(kind, k, spare, sizeof(spare));
		if (syscall(SYS_renameat2, parent, spare, parent, id, RENAME_NOREPLACE) == 0)
			return true;
	}
	return false;
}

/* Make the missing spares of KIND: each built by BUILD as .building-<TAG> (so concurrent
 * fillers never share one) and renamed into a free slot; a crash midway leaves that one,
 * which store_layers_collect removes later. */
static void slots_fill(const sl_config *cfg, int parent, const char *kind, const char *tag,
		       int (*build)(const sl_config *cfg, int parent, const char *tmp,
				    const void *arg),
		       const void *arg)
{
	char tmp[96];
	snprintf(tmp, sizeof(tmp), ".building-%s", tag);
	bool built = false;
	for (int k = 0; k < SPARES; k++) {
		char spare[192];
		slot_name(kind, k, spare, sizeof(spare));
		if (faccessat(parent, spare, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		if (!built) {
			built = true;
			if (build(cfg, parent, tmp, arg) < 0)
				break;
		}
		if (syscall(SYS_renameat2, parent, tmp, parent, spare, RENAME_NOREPLACE) == 0)
			built = false;
	}
	if (built)
		destroy_subvol(cfg, "sandboxes", tmp, NULL);
}

static void layer_kind(uint64_t disk_bytes, char *buf, size_t len)
{
	snprintf(buf, len, "spare-%llu", (unsigned long long)disk_bytes);
}

static void clone_kind(const char *snp_id, uint64_t disk_bytes, char *buf, size_t len)
{
	snprintf(buf, len, "clone-%s-%llu", snp_id, (unsigned long long)disk_bytes);
}

static int build_layer(const sl_config *cfg, int parent, const char *tmp, const void *arg)
{
	struct btrfs_ioctl_vol_args_v2 va = { 0 };
	snprintf(va.name, sizeof(va.name), "%s", tmp);
	if (ioctl(parent, BTRFS_IOC_SUBVOL_CREATE_V2, &va) < 0)
		return -1;
	_cleanup_close_ int sv = openat(parent, tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sv < 0 || limit_subvol(sv, *(const uint64_t *)arg) < 0 ||
	    mkdirat(sv, "upper", 0755) < 0 || mkdirat(sv, "work", 0700) < 0)
		return -1;
	return 0;
}

struct clone_src {
	const char *path;
	uint64_t disk_bytes;
};

static int build_clone(const sl_config *cfg, int parent, const char *tmp, const void *arg)
{
	const struct clone_src *c = arg;
	if (snapshot_subvol(cfg, c->path, "sandboxes", tmp, false, NULL) < 0)
		return -1;
	_cleanup_close_ int sv = openat(parent, tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return sv < 0 ? -1 : limit_subvol(sv, c->disk_bytes);
}

/* The ready-made clones of snapshot SNP_ID, whatever their size. */
static void drop_clones(const sl_config *cfg, const char *snp_id)
{
	char dir[PATH_MAX], prefix[96];
	snprintf(dir, sizeof(dir), "%s/store/sandboxes", cfg->state_dir);
	snprintf(prefix, sizeof(prefix), ".clone-%s-", snp_id);
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, prefix, strlen(prefix)))
			destroy_subvol(cfg, "sandboxes", de->d_name, NULL);
}

void store_layer_spares_fill(const sl_config *cfg, uint64_t disk_bytes, const char *tag)
{
	_cleanup_close_ int parent = open_kind(cfg, "sandboxes", NULL);
	char kind[64];
	layer_kind(disk_bytes, kind, sizeof(kind));
	if (parent >= 0 && disk_bytes)
		slots_fill(cfg, parent, kind, tag, build_layer, &disk_bytes);
}

void store_clone_spares_fill(const sl_config *cfg, const char *snp_id, uint64_t disk_bytes,
			     const char *tag)
{
	_cleanup_close_ int parent = open_kind(cfg, "sandboxes", NULL);
	char src[PATH_MAX], kind[160];
	store_snapshot_path(cfg, snp_id, src, sizeof(src));
	clone_kind(snp_id, disk_bytes, kind, sizeof(kind));
	if (parent < 0 || !disk_bytes || access(src, F_OK) != 0)
		return;
	struct clone_src c = { src, disk_bytes };
	slots_fill(cfg, parent, kind, tag, build_clone, &c);
	/* The snapshot deleted meanwhile, after its clones were looked for: what this made
	 * would be left with nothing to remove it. */
	if (access(src, F_OK) != 0)
		drop_clones(cfg, snp_id);
}

/* A writable layer for sandbox ID made as a snapshot of another subvolume (a snapshot's),
 * capped at DISK_BYTES. Nearly free: btrfs shares the extents. */
static int store_layer_create_from(const sl_config *cfg, const char *id, const char *src,
				   uint64_t disk_bytes, sl_err *err)
{
	if (snapshot_subvol(cfg, src, "sandboxes", id, false, err) < 0)
		return -1;
	char p[PATH_MAX];
	store_layer_path(cfg, id, p, sizeof(p));
	_cleanup_close_ int sv = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sv < 0 || limit_subvol(sv, disk_bytes) < 0) {
		int e = errno;
		store_layer_destroy(cfg, id, NULL);
		return sl_fail(err, SL_INTERNAL, e, "limit the writable layer of %s", id);
	}
	return 0;
}

int store_layer_clone_snapshot(const sl_config *cfg, const char *id, const char *snp_id,
			       uint64_t disk_bytes, sl_err *err)
{
	_cleanup_close_ int parent = open_kind(cfg, "sandboxes", err);
	if (parent < 0)
		return -1;
	char kind[160], src[PATH_MAX];
	clone_kind(snp_id, disk_bytes, kind, sizeof(kind));
	if (slot_take(parent, kind, id))
		return 0;
	store_snapshot_path(cfg, snp_id, src, sizeof(src));
	return store_layer_create_from(cfg, id, src, disk_bytes, err);
}

int store_layer_replace(const sl_config *cfg, const char *id, const char *snp_id,
			uint64_t disk_bytes, sl_err *err)
{
	_cleanup_close_ int parent = open_kind(cfg, "sandboxes", err);
	if (parent < 0)
		return -1;
	char old[80];
	snprintf(old, sizeof(old), ".rollback-%s", id);
	destroy_subvol(cfg, "sandboxes", old, NULL); /* one a crash left, if any */
	if (renameat2(parent, id, parent, old, RENAME_NOREPLACE) < 0)
		return sl_sysfail(err, "sandbox %s: set its writable layer aside", id);
	if (store_layer_clone_snapshot(cfg, id, snp_id, disk_bytes, err) < 0) {
		if (renameat2(parent, old, parent, id, RENAME_NOREPLACE) < 0)
			sl_log(SL_LOG_WARN, "sandbox %s: put its writable layer back: %s", id,
			       strerror(errno));
		return -1;
	}
	/* The old overlay may be busy a moment after its namespace went (as at a
	 * destroy); store_layers_collect takes what stays. */
	sl_err e = { 0 };
	for (int i = 0; i < 50; i++) {
		sl_err_clear(&e);
		if (destroy_subvol(cfg, "sandboxes", old, &e) == 0 || e.errnum != EBUSY)
			break;
		usleep(10000);
	}
	if (e.kind)
		sl_log(SL_LOG_WARN, "sandbox %s: delete its old writable layer: %s", id, e.msg);
	return 0;
}

int store_snapshot_path(const sl_config *cfg, const char *snp_id, char *buf, size_t len)
{
	return snprintf(buf, len, "%s/store/snapshots/%s", cfg->state_dir, snp_id) >= (int)len ? -1
												  : 0;
}

int store_snapshot_create(const sl_config *cfg, const char *sandbox_id, const char *snp_id,
			  sl_err *err)
{
	char src[PATH_MAX];
	store_layer_path(cfg, sandbox_id, src, sizeof(src));
	return snapshot_subvol(cfg, src, "snapshots", snp_id, true, err);
}

int store_snapshot_create_empty(const sl_config *cfg, const char *snp_id, sl_err *err)
{
	_cleanup_close_ int parent = open_kind(cfg, "snapshots", err);
	if (parent < 0)
		return -1;
	struct btrfs_ioctl_vol_args_v2 va = { 0 };
	snprintf(va.name, sizeof(va.name), "%s", snp_id);
	if (ioctl(parent, BTRFS_IOC_SUBVOL_CREATE_V2, &va) < 0)
		return sl_sysfail(err, "create snapshot %s", snp_id);
	_cleanup_close_ int sv = openat(parent, snp_id, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint64_t ro = BTRFS_SUBVOL_RDONLY;
	if (sv < 0 || mkdirat(sv, "upper", 0755) < 0 || mkdirat(sv, "work", 0700) < 0 ||
	    ioctl(sv, BTRFS_IOC_SUBVOL_SETFLAGS, &ro) < 0) {
		int e = errno;
		destroy_subvol(cfg, "snapshots", snp_id, NULL);
		return sl_fail(err, SL_INTERNAL, e, "set up snapshot %s", snp_id);
	}
	return 0;
}

int store_snapshot_destroy(const sl_config *cfg, const char *snp_id, sl_err *err)
{
	if (destroy_subvol(cfg, "snapshots", snp_id, err) < 0)
		return -1;
	drop_clones(cfg, snp_id);
	return 0;
}

int store_layer_create(const sl_config *cfg, const char *id, uint64_t disk_bytes, uid_t owner,
		       sl_err *err)
{
	_cleanup_close_ int parent = open_kind(cfg, "sandboxes", err);
	if (parent < 0)
		return -1;
	char kind[64];
	layer_kind(disk_bytes, kind, sizeof(kind));
	if (slot_take(parent, kind, id)) {
		_cleanup_close_ int sv =
		    openat(parent, id, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (sv >= 0 && fchownat(sv, "upper", owner, owner, AT_SYMLINK_NOFOLLOW) == 0)
			return 0;
		int e = errno;
		store_layer_destroy(cfg, id, NULL);
		return sl_fail(err, SL_INTERNAL, e, "set up the writable layer of %s", id);
	}
	struct btrfs_ioctl_vol_args_v2 va = { 0 };
	snprintf(va.name, sizeof(va.name), "%s", id);
	if (ioctl(parent, BTRFS_IOC_SUBVOL_CREATE_V2, &va) < 0)
		return sl_sysfail(err, "create subvolume for %s", id);
	_cleanup_close_ int sv = openat(parent, id, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sv < 0 || limit_subvol(sv, disk_bytes) < 0)
		goto fail;
	if (mkdirat(sv, "upper", 0755) < 0 || fchownat(sv, "upper", owner, owner, 0) < 0 ||
	    mkdirat(sv, "work", 0700) < 0)
		goto fail;
	return 0;
fail:;
	int e = errno;
	store_layer_destroy(cfg, id, NULL);
	return sl_fail(err, SL_INTERNAL, e, "set up the writable layer of %s", id);
}

int store_layers_collect(const sl_config *cfg, bool (*known)(void *arg, const char *id),
			 void *arg)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/store/sandboxes", cfg->state_dir);
	_cleanup_closedir_ DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	time_t now = time(NULL);
	struct dirent *de;
	while ((de = readdir(d))) {
		bool gone = false;
		if (!strncmp(de->d_name, "sbx_", 4)) {
			gone = !known(arg, de->d_name);
		} else if (!strncmp(de->d_name, ".building-", 10) ||
			   !strncmp(de->d_name, ".rollback-", 10)) {
			/* A fill or a rollback takes milliseconds: one this old was left by a
			 * crash (or a layer that stayed busy: gone by now). */
			struct stat st;
			gone = fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			       now - st.st_mtime > 60;
		}
		if (gone && destroy_subvol(cfg, "sandboxes", de->d_name, NULL) == 0)
			n++;
	}
	return n;
}

int store_layer_destroy(const sl_config *cfg, const char *id, sl_err *err)
{
	return destroy_subvol(cfg, "sandboxes", id, err);
}

static int destroy_subvol(const sl_config *cfg, const char *kind, const char *id, sl_err *err)
{
	_cleanup_close_ int parent = open_kind(cfg, kind, err);
	if (parent < 0)
		return errno == ENOENT ? 0 : -1;
	/* Learn the subvolume id first, to drop its qgroup afterwards. */
	uint64_t subvol = 0;
	int sv = openat(parent, id, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (sv < 0)
		return errno == ENOENT ? 0 : sl_sysfail(err, "open layer of %s", id);
	struct btrfs_ioctl_ino_lookup_args il = { .treeid = 0, .objectid = BTRFS_FIRST_FREE_OBJECTID };
	if (ioctl(sv, BTRFS_IOC_INO_LOOKUP, &il) == 0)
		subvol = il.treeid;
	close(sv);
	if (!strcmp(kind, "snapshots")) {
		/* Read-only subvolumes must be made writable before deletion. */
		_cleanup_close_ int s2 = openat(parent, id, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		uint64_t flags = 0;
		if (s2 >= 0)
			ioctl(s2, BTRFS_IOC_SUBVOL_SETFLAGS, &flags);
	}
	struct btrfs_ioctl_vol_args va = { 0 };
	snprintf(va.name, sizeof(va.name), "%s", id);
	if (ioctl(parent, BTRFS_IOC_SNAP_DESTROY, &va) < 0 && errno != ENOENT)
		return sl_sysfail(err, "delete the writable layer of %s", id);
	if (subvol) {
		/* Best effort: the kernel may still be cleaning the subvolume. */
		struct btrfs_ioctl_qgroup_create_args qc = { .create = 0, .qgroupid = subvol };
		ioctl(parent, BTRFS_IOC_QGROUP_CREATE, &qc);
	}
	return 0;
}
