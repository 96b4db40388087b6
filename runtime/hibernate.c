/* hibernate.c — a sandbox's processes written to disk with CRIU and ended, and brought
 * back (docs/hibernate.md). Only a sandbox launched to be hibernated (launch_hib.c) can
 * be dumped. Its images are <state>/hibernate/<id>/ (0750, the sandbox's uid_base and
 * group root: CRIU's restore opens some of them as the restored tree), in
 * <state>/hibernate (0700, root). */
#include "hibernate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "criu_img.h"
#include "fsutil.h"
#include "image.h"
#include "launch.h"
#include "launch_internal.h"
#include "log.h"
#include "lookup.h"
#include "spares.h"
#include "state.h"
#include "storage.h"

#define CRIU_DEFAULT  "/usr/local/lib/sandlot/criu/4.1.1-1/criu"
#define MAX_EXTERNALS 64

const char *hibernate_criu(void)
{
	const char *c = getenv("SANDLOT_CRIU");
	return c && *c ? c : CRIU_DEFAULT;
}

void hibernate_images_dir(const sl_ctx *ctx, const char *id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/hibernate/%s", ctx->cfg.state_dir, id);
}

void hibernate_images_delete(const sl_ctx *ctx, const char *id)
{
	char dir[PATH_MAX];
	sl_err e = {0};
	hibernate_images_dir(ctx, id, dir, sizeof(dir));
	if (fs_remove_tree(dir, &e) < 0)
		sl_log(SL_LOG_WARN, "sandbox %s: %s", id, e.msg);
}

struct mnt {
	char dev[16], root[PATH_MAX], point[PATH_MAX];
};

/* The mounts of /proc/PID/mountinfo (PID 0: ours): major:minor, root, mount point. */
static size_t read_mounts(pid_t pid, struct mnt *m, size_t max)
{
	char p[64], line[3 * PATH_MAX];
	snprintf(p, sizeof(p), pid ? "/proc/%d/mountinfo" : "/proc/self/mountinfo", (int)pid);
	FILE *f = fopen(p, "re");
	size_t n = 0;
	_Static_assert(PATH_MAX == 4096, "the widths below");
	while (f && n < max && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d %*d %15s %4095s %4095s", m[n].dev, m[n].root, m[n].point) ==
		    3)
			n++;
	if (f)
		fclose(f);
	return n;
}

/* The mounts CRIU must be told are external: binds into the sandbox of a file system
 * whose root it does not hold (the host's device nodes, the masks' empty directory,
 * sandlot-init's binary). Each gets "--external=mnt[POINT]:KEY" for the dump, and a line
 * "KEY HOSTPATH" in EXT for the restore. -1 when one has no host path. */
static int externals(pid_t pid, char (*args)[2 * PATH_MAX], size_t *nargs, FILE *ext)
{
	/* On the heap: a daemon hibernates on several threads at once. */
	_cleanup_free_ struct mnt *in = calloc(MAX_EXTERNALS * 2, sizeof(*in));
	_cleanup_free_ struct mnt *host = calloc(1024, sizeof(*host));
	_cleanup_free_ char(*keys)[PATH_MAX] = calloc(MAX_EXTERNALS, PATH_MAX);
	if (!in || !host || !keys)
		return -1;
	size_t nin = read_mounts(pid, in, MAX_EXTERNALS * 2);
	size_t nhost = read_mounts(0, host, 1024);
	size_t nkeys = 0;
	*nargs = 0;
	for (size_t i = 0; i < nin; i++) {
		bool rooted = false;
		for (size_t j = 0; j < nin && !rooted; j++)
			rooted = !strcmp(in[j].dev, in[i].dev) && !strcmp(in[j].root, "/");
		if (rooted)
			continue;
		const struct mnt *h = NULL;
		for (size_t j = 0; j < nhost && !h; j++)
			if (!strcmp(host[j].dev, in[i].dev) && !strcmp(host[j].root, "/"))
				h = &host[j];
		if (!h || *nargs >= MAX_EXTERNALS)
			return -1;
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s%s", strcmp(h->point, "/") ? h->point : "",
			 in[i].root);
		size_t k = 0;
		while (k < nkeys && strcmp(keys[k], path))
			k++;
		if (k == nkeys) {
			snprintf(keys[nkeys++], PATH_MAX, "%s", path);
			fprintf(ext, "x%zu %s\n", k, path);
		}
		snprintf(args[(*nargs)++], 2 * PATH_MAX, "--external=mnt[%s]:x%zu", in[i].point, k);
	}
	return 0;
}

/* Run criu with ARGV (NULL-terminated) and CRIU_FAULT=130 (no hardware breakpoints: they
 * never fire on some VMs, docs/hibernate.md); its exit status, -1 if it could not run. */
static int run_criu(char *const *argv)
{
	/* Made before the fork: a daemon's child may call nothing that allocates. */
	char *envp[] = {"CRIU_FAULT=130",
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
		}
		execve(argv[0], argv, envp);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* CRIU's first "Error" line in DIR/LOG (the RLIMIT_NOFILE one every run logs aside). */
static void criu_reason(const char *dir, const char *log, char *buf, size_t len)
{
	char p[PATH_MAX], line[1024];
	snprintf(p, sizeof(p), "%s/%s", dir, log);
	snprintf(buf, len, "criu failed (its log: %s)", p);
	FILE *f = fopen(p, "re");
	while (f && fgets(line, sizeof(line), f)) {
		char *e = strstr(line, "Error (");
		if (!e || strstr(line, "RLIMIT_NOFILE"))
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(buf, len, "%s", e);
		break;
	}
	if (f)
		fclose(f);
}

static int refuse(sl_err *err, const char *id, const char *why)
{
	return sl_fail(err, SL_HIBERNATE_REFUSED, 0, "sandbox %s cannot be hibernated: %s", id,
		       why);
}

/* DIR owned by host uid UID (a sandbox's root) and group root, 0750. CRIU's restore
 * opens images from inside the restored tree: as UID once the tree's user namespace has
 * its maps, and (timens-0.img) sometimes before, as host uid and gid 0 without
 * capabilities over DIR: then the group's search and read let it ("Unable to open
 * timens-0.img: Permission denied" otherwise, one restore in a few). The root-only
 * <state>/hibernate around it keeps everyone else out. */
static int images_own(const char *dir, uid_t uid, sl_err *err)
{
	if (chown(dir, uid, 0) < 0 || chmod(dir, 0750) < 0)
		return sl_sysfail(err, "give %s to uid %u", dir, (unsigned)uid);
	return 0;
}

/* <state>/hibernate (0700, root's) and in it DIR (images_own), empty. */
static int images_make(const sl_ctx *ctx, const sl_sandbox *sb, const char *dir, sl_err *err)
{
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s/hibernate", ctx->cfg.state_dir);
	if ((mkdir(parent, 0700) < 0 && errno != EEXIST) || chmod(parent, 0700) < 0)
		return sl_sysfail(err, "create %s", parent);
	if (fs_remove_tree(dir, err) < 0)
		return -1;
	if (mkdir(dir, 0700) < 0)
		return sl_sysfail(err, "create %s", dir);
	return images_own(dir, sb->uid_base, err);
}

/* Dump into DIR under the record's lock (held by the caller): 0 and the tasks gone (with
 * LEAVE, still running: their cgroup FROZEN by the caller stays so), or -1 with them
 * running on (a refused dump leaves them as they were) and the images removed. */
static int dump_to(sl_ctx *ctx, const sl_sandbox *sb, const char *dir, bool leave, sl_err *err)
{
	char extp[PATH_MAX], pid[16], why[512], freezer[PATH_MAX], cg[64];
	if (access(hibernate_criu(), X_OK) < 0)
		return refuse(err, sb->id, "CRIU is not installed (scripts/setup builds it)");
	snprintf(cg, sizeof(cg), "sandlot/%s", sb->id);
	if (leave && cgroup_path(ctx->cg, "freezer", cg, freezer, sizeof(freezer)) < 0)
		return sl_sysfail(err, "sandbox %s: its freezer cgroup", sb->id);
	if (images_make(ctx, sb, dir, err) < 0)
		return -1;
	snprintf(extp, sizeof(extp), "%s/externals", dir);
	FILE *ext = fopen(extp, "we");
	_cleanup_free_ char(*args)[2 * PATH_MAX] = calloc(MAX_EXTERNALS, 2 * PATH_MAX);
	size_t nargs = 0;
	if (!ext || !args || externals(sb->init_pid, args, &nargs, ext) < 0) {
		if (ext)
			fclose(ext);
		fs_remove_tree(dir, NULL);
		return refuse(err, sb->id, "a mount of the host's in it has no path on the host");
	}
	fclose(ext);
	snprintf(pid, sizeof(pid), "%d", (int)sb->init_pid);
	char *argv[MAX_EXTERNALS + 16];
	size_t n = 0;
	argv[n++] = (char *)hibernate_criu();
	argv[n++] = "dump";
	argv[n++] = "-t";
	argv[n++] = pid;
	argv[n++] = "-D";
	argv[n++] = (char *)dir;
	argv[n++] = "-o";
	argv[n++] = "dump.log";
	if (leave) {
		/* CRIU seizes the frozen tasks, and freezes them again before it lets go. */
		argv[n++] = "--leave-running";
		argv[n++] = "--freeze-cgroup";
		argv[n++] = freezer;
	}
	for (size_t i = 0; i < nargs; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	int rc = run_criu(argv);
	if (rc != 0) {
		criu_reason(dir, "dump.log", why, sizeof(why));
		sl_log(SL_LOG_WARN, "sandbox %s: criu dump exited %d: %s", sb->id, rc, why);
		fs_remove_tree(dir, NULL);
		return refuse(err, sb->id, why);
	}
	return 0;
}

int sandbox_hibernate(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err)
{
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (sandbox_get_locked(ctx, ref, &sb, &lk, err) < 0)
		return -1;
	int r = 0;
	if (sb.status != SL_ST_RUNNING)
		r = sl_fail(err, sb.status == SL_ST_TERMINATED ? SL_NOTFOUND : SL_CONFLICT, 0,
			    "sandbox %s is %s; only a running sandbox can be hibernated", sb.id,
			    sandbox_status_name(sb.status));
	else if (!sb.hibernate)
		r = refuse(err, sb.id,
			   "it was not created with \"hibernate\": true (its launch cannot be "
			   "dumped: docs/hibernate.md)");
	char dir[PATH_MAX];
	hibernate_images_dir(ctx, sb.id, dir, sizeof(dir));
	if (r == 0)
		r = dump_to(ctx, &sb, dir, false, err);
	if (r == 0) {
		/* Its tasks are gone; its cgroups go too, and with them their memory charge
		 * (the page cache of its files): made again on resume. */
		char cg[64], run[PATH_MAX];
		sl_err e = {0};
		snprintf(cg, sizeof(cg), "sandlot/%s", sb.id);
		if (cgroup_destroy(ctx->cg, cg, &e) < 0)
			sl_log(SL_LOG_WARN, "sandbox %s: %s", sb.id, e.msg);
		state_run_dir(&ctx->cfg, sb.id, run, sizeof(run));
		strncat(run, "/init.ns", sizeof(run) - strlen(run) - 1);
		unlink(run);
		sb.status = SL_ST_HIBERNATED;
		sb.init_pid = 0;
		sb.init_start = 0;
		r = record_save(ctx, &sb, true, err);
	}
	if (r == 0 && out)
		*out = sb;
	else
		sandbox_free(&sb);
	return r;
}

/* The sandbox's overlay attached at ROOT on the host, for criu restore --root. */
static int root_mount(sl_ctx *ctx, const sl_sandbox *sb, const char *root, sl_err *err)
{
	char layer[PATH_MAX], upper[PATH_MAX], work[PATH_MAX], img[PATH_MAX], p[64], why[256];
	store_layer_path(&ctx->cfg, sb->id, layer, sizeof(layer));
	snprintf(upper, sizeof(upper), "%s/upper", layer);
	snprintf(work, sizeof(work), "%s/work", layer);
	if (image_layer_path(ctx->cfg.state_dir, sb->digest, img, sizeof(img)) < 0)
		return sl_fail(err, SL_INTERNAL, errno, "image layer of %s", sb->id);
	sl_launch l = {.id = sb->id, .upper = upper, .work = work};
	_cleanup_close_ int userns = launch_userns_open(sb->uid_base, err);
	if (userns < 0)
		return -1;
	_cleanup_close_ int lower = launch_idmapped_tree(img, userns, true, err);
	if (lower < 0)
		return -1;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", lower);
	_cleanup_close_ int ovl = launch_overlay_mount(&l, p, why, sizeof(why));
	if (ovl < 0)
		return sl_fail(err, SL_INTERNAL, errno, "sandbox %s: overlay of %s%s%s", sb->id,
			       upper, why[0] ? ": " : "", why);
	if ((mkdir(root, 0700) < 0 && errno != EEXIST) ||
	    move_mount(ovl, "", AT_FDCWD, root, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return sl_sysfail(err, "sandbox %s: attach its root on %s", sb->id, root);
	return 0;
}

/* criu restore of DIR's images into ROOT (with EXTRA, a NULL-terminated list of more
 * arguments, or NULL): the restored init's host pid, or -1. */
static pid_t restore(const char *dir, const char *root, char *const *extra, const char *id,
		     sl_err *err)
{
	char extp[PATH_MAX], pidf[PATH_MAX], why[512], line[2 * PATH_MAX];
	_cleanup_free_ char(*args)[2 * PATH_MAX] = calloc(MAX_EXTERNALS, 2 * PATH_MAX);
	size_t nargs = 0;
	if (!args)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "sandbox %s: criu restore", id);
	snprintf(extp, sizeof(extp), "%s/externals", dir);
	snprintf(pidf, sizeof(pidf), "%s/restored.pid", dir);
	unlink(pidf); /* an earlier restore's (a fork's copies share the images) */
	FILE *ext = fopen(extp, "re");
	while (ext && nargs < MAX_EXTERNALS && fgets(line, sizeof(line), ext)) {
		char key[32], path[PATH_MAX];
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%31s", key) == 1 && strlen(line) > strlen(key) + 1) {
			snprintf(path, sizeof(path), "%s", line + strlen(key) + 1);
			snprintf(args[nargs++], sizeof(args[0]), "--external=mnt[%s]:%s", key,
				 path);
		}
	}
	if (ext)
		fclose(ext);
	char *argv[MAX_EXTERNALS + 32];
	size_t n = 0;
	argv[n++] = (char *)hibernate_criu();
	argv[n++] = "restore";
	argv[n++] = "-d";
	argv[n++] = "-D";
	argv[n++] = (char *)dir;
	argv[n++] = "--root";
	argv[n++] = (char *)root;
	argv[n++] = "--pidfile";
	argv[n++] = pidf;
	argv[n++] = "-o";
	argv[n++] = "restore.log";
	for (size_t i = 0; extra && extra[i] && i < 12; i++)
		argv[n++] = extra[i];
	for (size_t i = 0; i < nargs; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	int rc = run_criu(argv);
	char text[32] = "";
	_cleanup_close_ int fd = rc == 0 ? open(pidf, O_RDONLY | O_CLOEXEC) : -1;
	ssize_t got = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
	if (rc != 0 || got <= 0) {
		criu_reason(dir, "restore.log", why, sizeof(why));
		sl_log(SL_LOG_WARN, "sandbox %s: criu restore exited %d: %s", id, rc, why);
		return sl_fail(err, SL_INTERNAL, 0, "sandbox %s: criu restore: %s", id, why);
	}
	text[got] = '\0';
	return (pid_t)atoi(text);
}

/* SB's cgroups made (with its limits), its overlay attached for the restore, DIR's images
 * restored into them (EXTRA: more arguments to criu restore), init.ns written: SB's
 * init_pid and init_start set. -1 with its cgroups gone and nothing running. */
static int restore_into(sl_ctx *ctx, sl_sandbox *sb, const char *dir, char *const *extra,
			sl_err *err)
{
	char run[PATH_MAX], root[PATH_MAX], cg[64];
	state_run_dir(&ctx->cfg, sb->id, run, sizeof(run));
	snprintf(root, sizeof(root), "%s/rootfs", run);
	snprintf(cg, sizeof(cg), "sandlot/%s", sb->id);
	/* Its cgroups again, with its limits, before CRIU puts the tasks back in them by
	 * their path. */
	if (spare_cgroup_create_or_take(ctx, cg, &sb->limits, err) < 0)
		return -1;
	if (root_mount(ctx, sb, root, err) < 0)
		goto drop_cgroups;
	pid_t pid = restore(dir, root, extra, sb->id, err);
	/* The restored tree holds its root in its own mount namespace: the host's goes. */
	umount2(root, MNT_DETACH);
	if (pid <= 0)
		goto drop_cgroups;
	if (launch_hib_record(run, pid, err) < 0) {
		kill(pid, SIGKILL);
		goto drop_cgroups;
	}
	sb->init_pid = pid;
	sb->init_start = proc_start_time(pid);
	return 0;
drop_cgroups:;
	sl_err e = {0};
	cgroup_destroy(ctx->cg, cg, &e);
	return -1;
}

int hibernate_resume_locked(sl_ctx *ctx, sl_sandbox *sb, sl_err *err)
{
	char dir[PATH_MAX], cg[64];
	hibernate_images_dir(ctx, sb->id, dir, sizeof(dir));
	if (restore_into(ctx, sb, dir, NULL, err) < 0)
		return -1;
	sb->status = SL_ST_RUNNING;
	if (record_save(ctx, sb, true, err) < 0) {
		sl_err e = {0};
		snprintf(cg, sizeof(cg), "sandlot/%s", sb->id);
		cgroup_destroy(ctx->cg, cg, &e);
		return -1;
	}
	hibernate_images_delete(ctx, sb->id);
	return 0;
}

int hibernate_dump_copy(sl_ctx *ctx, const sl_sandbox *sb, const char *dir, sl_err *err)
{
	return dump_to(ctx, sb, dir, true, err);
}

int hibernate_restore_copy(sl_ctx *ctx, sl_sandbox *sb, const char *dir, sl_err *err)
{
	/* The tasks go to SB's cgroups: CRIU moves the dumped tree's cgroup of each of
	 * sandlot's controllers (the source's) to SB's; the others (cpuset, devices, ...)
	 * stay the host's root, where the source's tasks are. */
	static const char *const ctl[] = {"cpu", "cpuacct", "memory", "pids", "freezer"};
	char roots[5][96];
	char *extra[11];
	size_t n = 0;
	for (size_t i = 0; i < 5; i++) {
		bool v2 = cgroup_version(ctx->cg) == 2;
		snprintf(roots[i], sizeof(roots[i]), "%s%s/sandlot/%s", v2 ? "" : ctl[i],
			 v2 ? "" : ":", sb->id);
		extra[n++] = "--cgroup-root";
		extra[n++] = roots[i];
		if (v2)
			break;
	}
	extra[n] = NULL;
	/* The images are the source's: its user namespace's maps become SB's range (its
	 * files were shifted to it), its hostname SB's (as launch gives it), and the
	 * directory SB's root's (9 in docs/hibernate.md). */
	if (criu_userns_rebase(dir, sb->uid_base, err) < 0 ||
	    criu_utsns_rename(dir, sb->name[0] ? sb->name : sb->id, err) < 0)
		return sl_wrap(err, "sandbox %s: restore a copy", sb->id);
	if (images_own(dir, sb->uid_base, err) < 0)
		return -1;
	return restore_into(ctx, sb, dir, extra, err);
}
