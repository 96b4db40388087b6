/* hibernate.c — a sandbox's processes written to disk with CRIU and ended, and brought
 * back (docs/hibernate.md). Only a sandbox launched to be hibernated (launch_hib.c) can
 * be dumped. A hibernated sandbox's images are <state>/store/sandboxes/<id>/hibernate/ (in
 * its btrfs layer, whose quota counts them, beside upper/ and work/); a fork's or a memory
 * checkpoint's dump is <state>/hibernate/<id>/ (in <state>/hibernate, 0700 root's). Either
 * directory is 0711 and the sandbox's root's (images_own). */
#include "hibernate.h"

#include <arpa/inet.h>
#include <dirent.h>
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
#include "hibernate_files.h"
#include "image.h"
#include "launch.h"
#include "launch_internal.h"
#include "log.h"
#include "lookup.h"
#include "sbxnet.h"
#include "spares.h"
#include "state.h"
#include "storage.h"

#define CRIU_DEFAULT  "/usr/local/lib/sandlot/criu/4.1.1-2/criu"
#define MAX_EXTERNALS 64

const char *hibernate_criu(void)
{
	const char *c = getenv("SANDLOT_CRIU");
	return c && *c ? c : CRIU_DEFAULT;
}

/* In the sandbox's btrfs layer, beside upper/ and work/: its quota group counts them
 * against its disk limit (a dump past it fails, the tasks running on), and the layer's
 * parent, <state>/store/sandboxes, is 0700 root's. */
void hibernate_images_dir(const sl_ctx *ctx, const char *id, char *buf, size_t len)
{
	char layer[PATH_MAX];
	store_layer_path(&ctx->cfg, id, layer, sizeof(layer));
	snprintf(buf, len, "%s/hibernate", layer);
}

void hibernate_dump_dir(const sl_ctx *ctx, const char *id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/hibernate/%s", ctx->cfg.state_dir, id);
}

/* DIR removed, a failure logged (ID's). */
static void remove_logged(const char *dir, const char *id)
{
	sl_err e = {0};
	if (fs_remove_tree(dir, &e) < 0)
		sl_log(SL_LOG_WARN, "%s: %s", id, e.msg);
}

void hibernate_dump_delete(const sl_ctx *ctx, const char *id)
{
	char dir[PATH_MAX];
	hibernate_dump_dir(ctx, id, dir, sizeof(dir));
	remove_logged(dir, id);
}

static void ext_release(const sl_ctx *ctx, const char *id);

void hibernate_images_delete(const sl_ctx *ctx, const char *id)
{
	char dir[PATH_MAX];
	hibernate_images_dir(ctx, id, dir, sizeof(dir));
	remove_logged(dir, id);
	ext_release(ctx, id);
}

struct mnt {
	char dev[16], root[PATH_MAX], point[PATH_MAX], opts[256];
};

/* Whether OPTS (a mount's own options, "rw,nosuid,idmapped") has OPT. */
static bool has_opt(const char *opts, const char *opt)
{
	size_t n = strlen(opt);
	for (const char *o = opts; o; o = strchr(o, ','), o = o ? o + 1 : NULL)
		if (!strncmp(o, opt, n) && (o[n] == ',' || o[n] == '\0'))
			return true;
	return false;
}

/* The mounts of /proc/PID/mountinfo (PID 0: ours): major:minor, root, mount point,
 * options. */
static size_t read_mounts(pid_t pid, struct mnt *m, size_t max)
{
	char p[64], line[3 * PATH_MAX];
	snprintf(p, sizeof(p), pid ? "/proc/%d/mountinfo" : "/proc/self/mountinfo", (int)pid);
	FILE *f = fopen(p, "re");
	size_t n = 0;
	_Static_assert(PATH_MAX == 4096, "the widths below");
	while (f && n < max && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d %*d %15s %4095s %4095s %255s", m[n].dev, m[n].root,
			   m[n].point, m[n].opts) == 4)
			n++;
	if (f)
		fclose(f);
	return n;
}

/* The mounts CRIU must be told are external: binds into the sandbox of a file system
 * whose root it does not hold (the host's device nodes, sandlot-init's binary, the
 * volumes). Each gets "--external=mnt[POINT]:KEY" for the dump, and a line "KEY HOSTPATH"
 * in EXT for the restore; KEY is xN for a plain bind, iN (rN: read-only) for one
 * id-mapped into the sandbox's range (a volume), which the restore maps again
 * (ext_idmapped). -1 when one has no host path. */
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
		char path[PATH_MAX], kind = 'x';
		if (has_opt(in[i].opts, "idmapped"))
			kind = has_opt(in[i].opts, "ro") ? 'r' : 'i';
		snprintf(path, sizeof(path), "%s%s", strcmp(h->point, "/") ? h->point : "",
			 in[i].root);
		size_t k = 0;
		while (k < nkeys && (strcmp(keys[k] + 1, path) || keys[k][0] != kind))
			k++;
		if (k == nkeys) {
			snprintf(keys[nkeys++], PATH_MAX, "%c%s", kind, path);
			fprintf(ext, "%c%zu %s\n", kind, k, path);
		}
		snprintf(args[(*nargs)++], 2 * PATH_MAX, "--external=mnt[%s]:%c%zu", in[i].point,
			 kind, k);
	}
	return 0;
}

/* Run criu with ARGV (NULL-terminated) and CRIU_FAULT=130 (no hardware breakpoints: they
 * never fire on some VMs, docs/hibernate.md); its exit status, -1 if it could not run.
 * KEEP (or -1): the record's lock, which criu holds too, so that a daemon killed while it
 * runs leaves the record locked until criu is done (hibernate_recover waits for it).
 * FILES (or NULL): descriptors criu inherits (--inherit-fd). */
static int run_criu(char *const *argv, int keep, const hib_files *files)
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
		if (keep >= 0)
			fcntl(keep, F_SETFD, 0);
		for (size_t i = 0; files && i < files->n; i++)
			fcntl(files->fd[i], F_SETFD, 0);
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

/* DIR owned by host uid UID (a sandbox's root), 0711. CRIU's restore opens images from
 * inside the restored tree: as UID once the tree's user namespace has its maps, and
 * (timens-0.img) at times before, as host root without an override in the new user
 * namespace: the search bit for others lets it ("Unable to open timens-0.img: Permission
 * denied" in 3 of 18 resumes with 0700, none since). The directory above it (the
 * sandbox's layer, or <state>/hibernate) is root's and 0700: no one else reaches it. */
static int images_own(const char *dir, uid_t uid, sl_err *err)
{
	if (chown(dir, uid, uid) < 0 || chmod(dir, 0711) < 0)
		return sl_sysfail(err, "give %s to uid %u", dir, (unsigned)uid);
	return 0;
}

/* DIR (images_own), empty. */
static int images_make(const sl_sandbox *sb, const char *dir, sl_err *err)
{
	if (fs_remove_tree(dir, err) < 0)
		return -1;
	if (mkdir(dir, 0700) < 0)
		return sl_sysfail(err, "create %s", dir);
	return images_own(dir, sb->uid_base, err);
}

/* CRIU's restore opens each external's host path as the restored sandbox's root (a
 * uid of its own): every directory above it must be searchable by others, or the resume
 * fails ("mnt-v2: Failed to open_tree ...: Permission denied") with the tasks gone. False
 * with BAD holding "DIR\0PATH" for the first that is not. */
static bool externals_reachable(const char *extp, char *bad, size_t len)
{
	char line[2 * PATH_MAX], p[PATH_MAX];
	FILE *f = fopen(extp, "re");
	bool ok = true;
	while (ok && f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		const char *path = strchr(line, ' ');
		/* Keys "x...": a bind opened as it is ("r", "i": a volume, which the restore
		 * id-maps again and attaches under the run dir itself). */
		if (line[0] != 'x' || !path || path[1] != '/')
			continue;
		snprintf(p, sizeof(p), "%s", path + 1);
		for (char *s = strrchr(p, '/'); ok && s && s > p; s = strrchr(p, '/')) {
			struct stat st;
			*s = '\0';
			if (stat(p, &st) == 0 && S_ISDIR(st.st_mode) && !(st.st_mode & S_IXOTH)) {
				size_t n = strlen(p) + 1;
				snprintf(bad, len, "%s", p);
				if (n < len)
					snprintf(bad + n, len - n, "%s", path + 1);
				ok = false;
			}
		}
	}
	if (f)
		fclose(f);
	return ok;
}

/* Dump into DIR under the record's lock (held by the caller, LK: handed to criu, so that a
 * daemon killed meanwhile leaves it held until criu is done; -1: none): 0 and the tasks
 * gone (with LEAVE, still running: their cgroup FROZEN by the caller stays so), or -1 with
 * them running on (a refused dump leaves them as they were) and the images removed. */
static int dump_to(sl_ctx *ctx, const sl_sandbox *sb, const char *dir, bool leave, int lk,
		   sl_err *err)
{
	char extp[PATH_MAX], pid[16], why[512], freezer[PATH_MAX], cg[64];
	if (access(hibernate_criu(), X_OK) < 0)
		return refuse(err, sb->id, "CRIU is not installed (scripts/setup builds it)");
	snprintf(cg, sizeof(cg), "sandlot/%s", sb->id);
	if (leave && cgroup_path(ctx->cg, "freezer", cg, freezer, sizeof(freezer)) < 0)
		return sl_sysfail(err, "sandbox %s: its freezer cgroup", sb->id);
	if (images_make(sb, dir, err) < 0)
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
	/* The host's files its tasks hold (its running executions' logs): external too. */
	_cleanup_free_ hib_file_arg *fargs = calloc(HIB_MAX_FILES, sizeof(*fargs));
	size_t nf = 0;
	if (!fargs || hib_files_dump(sb->init_pid, dir, fargs, &nf) < 0) {
		bool many = errno == E2BIG;
		fs_remove_tree(dir, NULL);
		return refuse(err, sb->id,
			      many ? "it holds more than 64 files of the host's open (running "
				     "executions' logs): end some and hibernate again"
				   : "its open files could not be listed");
	}
	/* A copy (fork, checkpoint) would restore them as the source's own files, its
	 * executions' logs written by another sandbox: refused, as CRIU did before. */
	if (leave && nf > 0) {
		fs_remove_tree(dir, NULL);
		return refuse(err, sb->id,
			      "a command started through the API is running in it (its output "
			      "files are the host's): a copy of its memory cannot take them; "
			      "wait for it or end it");
	}
	char bad[PATH_MAX];
	if (!externals_reachable(extp, bad, sizeof(bad))) {
		fs_remove_tree(dir, NULL);
		snprintf(why, sizeof(why),
			 "its resume would open %s as the sandbox's root, and %s is not searchable "
			 "by others (chmod o+x it)",
			 bad + strlen(bad) + 1, bad);
		return refuse(err, sb->id, why);
	}
	snprintf(pid, sizeof(pid), "%d", (int)sb->init_pid);
	char *argv[MAX_EXTERNALS + HIB_MAX_FILES + 16];
	size_t n = 0;
	argv[n++] = (char *)hibernate_criu();
	argv[n++] = "dump";
	argv[n++] = "-t";
	argv[n++] = pid;
	argv[n++] = "-D";
	argv[n++] = (char *)dir;
	/* Its log in the run dir, not with the images: a dump past the disk limit could
	 * not write it there. */
	char run[PATH_MAX], log[PATH_MAX + 16];
	state_run_dir(&ctx->cfg, sb->id, run, sizeof(run));
	snprintf(log, sizeof(log), "%s/criu-dump.log", run);
	argv[n++] = "-o";
	argv[n++] = log;
	if (leave) {
		/* CRIU seizes the frozen tasks, and freezes them again before it lets go. */
		argv[n++] = "--leave-running";
		argv[n++] = "--freeze-cgroup";
		argv[n++] = freezer;
	}
	for (size_t i = 0; i < nargs; i++)
		argv[n++] = args[i];
	for (size_t i = 0; i < nf; i++)
		argv[n++] = fargs[i];
	argv[n] = NULL;
	int rc = run_criu(argv, lk, NULL);
	if (rc != 0) {
		criu_reason(run, "criu-dump.log", why, sizeof(why));
		if (strstr(why, "quota"))
			snprintf(why + strlen(why), sizeof(why) - strlen(why),
				 " (its memory's images count against its disk limit)");
		sl_log(SL_LOG_WARN, "sandbox %s: criu dump exited %d: %s", sb->id, rc, why);
		fs_remove_tree(dir, NULL);
		return refuse(err, sb->id, why);
	}
	unlink(log);
	return 0;
}

/* The dump is done, its tasks gone: its cgroups go too, and with them their memory
 * charge (the page cache of its files), made again on resume; the record says so. */
static int hibernated(sl_ctx *ctx, sl_sandbox *sb, sl_err *err)
{
	char cg[64], run[PATH_MAX];
	sl_err e = {0};
	snprintf(cg, sizeof(cg), "sandlot/%s", sb->id);
	if (cgroup_destroy(ctx->cg, cg, &e) < 0)
		sl_log(SL_LOG_WARN, "sandbox %s: %s", sb->id, e.msg);
	state_run_dir(&ctx->cfg, sb->id, run, sizeof(run));
	strncat(run, "/init.ns", sizeof(run) - strlen(run) - 1);
	unlink(run);
	sb->status = SL_ST_HIBERNATED;
	sb->init_pid = 0;
	sb->init_start = 0;
	return record_save(ctx, sb, true, err);
}

/* An address of /proc/net/{tcp,udp}{,6} ("0100007F", or 32 hex digits for v6) as the
 * IPv4 address it is (its s_addr), if it is one (v4-mapped in a v6 file); ANY: all zero. */
static bool sk_v4(const char *hex, uint32_t *v4, bool *any)
{
	size_t n = strcspn(hex, ":");
	*any = strspn(hex, "0") >= n;
	if (n == 32 && !strncmp(hex, "0000000000000000FFFF0000", 24))
		hex += 24;
	else if (n != 8)
		return false;
	char w[9];
	memcpy(w, hex, 8);
	w[8] = '\0';
	*v4 = (uint32_t)strtoul(w, NULL, 16); /* the kernel prints the __be32 as it lies */
	return true;
}

/* Why the sockets of PID's network namespace cannot be restored, in WHY, or false:
 * a TCP connection (anything but LISTEN, TIME_WAIT, which no process holds, and CLOSE:
 * CRIU restores none without --tcp-established, and a peer outside would not follow);
 * with a network (OWN, the sandbox's address, non-zero), a socket bound to OWN or a UDP
 * socket connected outside lo, which CRIU would bind or connect before the resume gives
 * the namespace its network back (a resume that could never succeed). */
static bool sockets_unrestorable(pid_t pid, uint32_t own, char *why, size_t len)
{
	static const char *const files[] = {"tcp", "tcp6", "udp", "udp6"};
	bool found = false;
	for (size_t i = 0; i < 4 && !found; i++) {
		char p[64], line[512], local[64], remote[64];
		unsigned st;
		bool tcp = files[i][0] == 't';
		snprintf(p, sizeof(p), "/proc/%d/net/%s", (int)pid, files[i]);
		FILE *f = fopen(p, "re");
		while (f && !found && fgets(line, sizeof(line), f)) {
			/* TIME_WAIT: the kernel's alone, no process holds it, CRIU leaves it. */
			if (sscanf(line, " %*d: %63s %63s %x", local, remote, &st) != 3 ||
			    (tcp && st == 0x06))
				continue;
			const char *lp = strchr(local, ':'), *rp = strchr(remote, ':');
			long lport = lp ? strtol(lp + 1, NULL, 16) : 0;
			long rport = rp ? strtol(rp + 1, NULL, 16) : 0;
			uint32_t la = 0, ra = 0;
			bool lany, rany;
			bool l4 = sk_v4(local, &la, &lany);
			bool r4 = sk_v4(remote, &ra, &rany);
			bool rlo = (r4 && (ntohl(ra) >> 24) == 127) ||
				   !strcmp(remote, "00000000000000000000000001000000");
			if (tcp && st != 0x0A && st != 0x07)
				snprintf(
				    why, len,
				    "it holds a TCP connection (%s, local port %ld, remote "
				    "port %ld): CRIU cannot restore a connection; close it and "
				    "hibernate again",
				    files[i], lport, rport);
			else if (own && l4 && la == own)
				snprintf(
				    why, len,
				    "a socket is bound to its address (%s, port %ld), which it "
				    "gets back only after the restore: bind it to 0.0.0.0",
				    files[i], lport);
			else if (own && !tcp && !rany && !rlo)
				snprintf(why, len,
					 "a UDP socket is connected outside it (local port %ld, "
					 "remote port %ld): close it and hibernate again",
					 lport, rport);
			else
				continue;
			found = true;
		}
		if (f)
			fclose(f);
	}
	return found;
}

/* The network of SB's init (PID) into its network namespace: at the launch, after a
 * dump that failed, after a restore (sbxnet_attach, as a create does). */
static int net_into(sl_ctx *ctx, const sl_sandbox *sb, pid_t pid, sl_err *err)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/ns/net", (int)pid);
	_cleanup_close_ int ns = open(p, O_RDONLY | O_CLOEXEC);
	if (ns < 0)
		return sl_sysfail(err, "sandbox %s: open %s", sb->id, p);
	return sbxnet_attach(ctx, sb, ns, false, err);
}

/* Sockets CRIU could not restore refuse the hibernate before anything is touched. A
 * sandbox with a network is dumped without it: its veth (and so eth0, its address and
 * routes) and host rules go first, so that its namespace holds lo alone and nothing of
 * the host's; a resume gives it them again as a create does. A dump that fails gets the
 * network back. */
static int dump_networked(sl_ctx *ctx, sl_sandbox *sb, int lk, sl_err *err)
{
	char why[512];
	struct in_addr own = {0};
	if (sb->net_enabled && inet_pton(AF_INET, sb->net_addr, &own) != 1)
		return sl_fail(err, SL_INTERNAL, 0, "sandbox %s: bad network record", sb->id);
	if (sockets_unrestorable(sb->init_pid, own.s_addr, why, sizeof(why)))
		return refuse(err, sb->id, why);
	char dir[PATH_MAX];
	hibernate_images_dir(ctx, sb->id, dir, sizeof(dir));
	if (!sb->net_enabled)
		return dump_to(ctx, sb, dir, false, lk, err);
	sbxnet_detach(ctx, sb);
	if (dump_to(ctx, sb, dir, false, lk, err) == 0)
		return 0;
	sl_err e = {0};
	if (net_into(ctx, sb, sb->init_pid, &e) < 0)
		sl_log(SL_LOG_ERROR, "sandbox %s: its network after a refused hibernate: %s",
		       sb->id, e.msg);
	return -1;
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
	if (r == 0)
		r = dump_networked(ctx, &sb, lk, err);
	if (r == 0)
		r = hibernated(ctx, &sb, err);
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

/* <run>/hibernate/ID: where a restore finds the volumes it binds, id-mapped again. */
static void ext_dir(const sl_ctx *ctx, const char *id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/hibernate/%s", ctx->cfg.run_dir, id);
}

/* Its mounts (detached) and the directory gone. */
static void ext_release(const sl_ctx *ctx, const char *id)
{
	char d[PATH_MAX], p[PATH_MAX + 64];
	ext_dir(ctx, id, d, sizeof(d));
	DIR *dir = opendir(d);
	struct dirent *de;
	while (dir && (de = readdir(dir)))
		if (de->d_name[0] != '.') {
			snprintf(p, sizeof(p), "%s/%s", d, de->d_name);
			umount2(p, MNT_DETACH);
			rmdir(p);
		}
	if (dir)
		closedir(dir);
	rmdir(d);
}

/* PATH (a volume of the host) id-mapped into SB's range again, attached at
 * <run>/hibernate/<id>/KEY, which OUT gets: CRIU's restore opens an external mount's
 * source as the restored sandbox's root, so every directory above it must let host uid
 * uid_base through (<run> 0711, <run>/hibernate 0711, <id> 0700 and uid_base's), and a
 * bind of the bare directory would show its files by the host's ids. */
static int ext_idmapped(const sl_ctx *ctx, const sl_sandbox *sb, const char *key, const char *path,
			char *out, size_t len, sl_err *err)
{
	char d[PATH_MAX], parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s/hibernate", ctx->cfg.run_dir);
	ext_dir(ctx, sb->id, d, sizeof(d));
	if ((mkdir(parent, 0711) < 0 && errno != EEXIST) || chmod(parent, 0711) < 0 ||
	    (mkdir(d, 0700) < 0 && errno != EEXIST) || chown(d, sb->uid_base, sb->uid_base) < 0)
		return sl_sysfail(err, "sandbox %s: create %s", sb->id, d);
	snprintf(out, len, "%s/%s", d, key);
	if (mkdir(out, 0700) < 0 && errno != EEXIST)
		return sl_sysfail(err, "sandbox %s: create %s", sb->id, out);
	_cleanup_close_ int userns = launch_userns_open(sb->uid_base, err);
	if (userns < 0)
		return -1;
	_cleanup_close_ int tree = launch_idmapped_tree(path, userns, key[0] == 'r', err);
	if (tree < 0)
		return -1;
	if (move_mount(tree, "", AT_FDCWD, out, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return sl_sysfail(err, "sandbox %s: attach %s on %s", sb->id, path, out);
	return 0;
}

/* criu restore of DIR's images into ROOT (with EXTRA, a NULL-terminated list of more
 * arguments, or NULL): the restored init's host pid, or -1. */
static pid_t restore(const sl_ctx *ctx, const sl_sandbox *sb, const char *dir, const char *root,
		     char *const *extra, sl_err *err)
{
	const char *id = sb->id;
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
			char mapped[PATH_MAX];
			snprintf(path, sizeof(path), "%s", line + strlen(key) + 1);
			if ((key[0] == 'i' || key[0] == 'r') &&
			    ext_idmapped(ctx, sb, key, path, mapped, sizeof(mapped), err) < 0) {
				fclose(ext);
				return -1;
			}
			snprintf(args[nargs++], sizeof(args[0]), "--external=mnt[%s]:%s", key,
				 key[0] == 'x' ? path : mapped);
		}
	}
	if (ext)
		fclose(ext);
	_cleanup_free_ hib_file_arg *fargs = calloc(HIB_MAX_FILES, sizeof(*fargs));
	hib_files files = {.n = 0};
	if (!fargs)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "sandbox %s: resume", id);
	if (hib_files_restore(ctx, sb, dir, &files, fargs, err) < 0)
		return -1;
	char *argv[MAX_EXTERNALS + HIB_MAX_FILES + 32];
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
	for (size_t i = 0; i < files.n; i++)
		argv[n++] = fargs[i];
	argv[n] = NULL;
	int rc = run_criu(argv, -1, &files);
	hib_files_release(&files);
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
 * restored into them (EXTRA: more arguments to criu restore), its network given back,
 * init.ns written: SB's init_pid and init_start set. -1 with its cgroups gone and
 * nothing running. */
static int restore_into(sl_ctx *ctx, sl_sandbox *sb, const char *dir, char *const *extra,
			sl_err *err)
{
	char run[PATH_MAX], root[PATH_MAX], cg[64];
	state_run_dir(&ctx->cfg, sb->id, run, sizeof(run));
	snprintf(root, sizeof(root), "%s/rootfs", run);
	snprintf(cg, sizeof(cg), "sandlot/%s", sb->id);
	/* Its cgroups again, with its limits, before CRIU puts the tasks back in them by
	 * their path. */
	if (store_ensure(&ctx->cfg, err) < 0) /* mounted again after a reboot */
		return -1;
	if (spare_cgroup_create_or_take(ctx, cg, &sb->limits, err) < 0)
		return -1;
	/* Its run dir, which a reboot since the hibernate took (tmpfs), with the idle
	 * clock's file as a create makes it. */
	char act[PATH_MAX + 16];
	snprintf(act, sizeof(act), "%s/activity", run);
	_cleanup_close_ int afd = -1;
	if (state_mkdirs(run, 0700, err) < 0 ||
	    (afd = open(act, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0) {
		if (!err->kind)
			sl_sysfail(err, "create %s", act);
		goto drop_cgroups;
	}
	if (root_mount(ctx, sb, root, err) < 0)
		goto drop_cgroups;
	ext_release(ctx, sb->id); /* a resume's that died half-way */
	pid_t pid = restore(ctx, sb, dir, root, extra, err);
	/* The restored tree holds its root and volumes in its own mount namespace: the
	 * host's mounts of them go. */
	umount2(root, MNT_DETACH);
	ext_release(ctx, sb->id);
	if (pid <= 0)
		goto drop_cgroups;
	if ((sb->net_enabled && net_into(ctx, sb, pid, err) < 0) ||
	    launch_hib_record(run, pid, err) < 0) {
		kill(pid, SIGKILL);
		goto drop_cgroups;
	}
	sb->init_pid = pid;
	sb->init_start = proc_start_time(pid);
	return 0;
drop_cgroups:;
	sl_err e = {0};
	cgroup_destroy(ctx->cg, cg, &e);
	if (sb->net_enabled)
		sbxnet_detach(ctx, sb); /* a restored tree killed after its network came back */
	return -1;
}

/* One sandbox with images in its layer, under its record's lock (which a criu left by a
 * killed daemon holds until it is done). */
static void recover_one(sl_ctx *ctx, const char *id)
{
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	sl_err e = {0};
	char dir[PATH_MAX], done[PATH_MAX];
	if (record_lock_load(ctx, id, false, &sb, &lk, &e) < 0)
		return; /* no record: its layer is store_layers_collect's */
	hibernate_images_dir(ctx, id, dir, sizeof(dir));
	/* CRIU writes stats-dump once every task is dumped and killed, never otherwise. */
	snprintf(done, sizeof(done), "%s/stats-dump", dir);
	bool alive = record_pid_alive(sb.init_pid, sb.init_start);
	if (sb.status == SL_ST_RUNNING && !alive && access(done, F_OK) == 0) {
		if (hibernated(ctx, &sb, &e) < 0)
			sl_log(SL_LOG_WARN, "sandbox %s: %s", id, e.msg);
		else
			sl_log(SL_LOG_INFO,
			       "sandbox %s: hibernated (its dump ended after its daemon)", id);
	} else if (sb.status != SL_ST_HIBERNATED) {
		/* A dump refused or cut short (the tasks ran on, or died with nothing whole
		 * to bring back), or a resume that ended before it removed them. */
		sl_log(SL_LOG_INFO, "sandbox %s: %s: stale hibernate images removed", id,
		       sandbox_status_name(sb.status));
		hibernate_images_delete(ctx, id);
		/* Its network went before the dump (dump_networked): back, as a refusal does. */
		if (sb.status == SL_ST_RUNNING && alive && sb.net_enabled &&
		    net_into(ctx, &sb, sb.init_pid, &e) < 0)
			sl_log(SL_LOG_ERROR, "sandbox %s: its network: %s", id, e.msg);
	}
	sandbox_free(&sb);
}

void hibernate_recover(sl_ctx *ctx)
{
	char dir[PATH_MAX], p[PATH_MAX + 300];
	snprintf(dir, sizeof(dir), "%s/store/sandboxes", ctx->cfg.state_dir);
	char **names = NULL;
	size_t n = 0;
	sl_err e = {0};
	/* The store, when there is one, mounted (after a reboot it is not yet): a dump a
	 * reboot cut short left its images there. */
	snprintf(p, sizeof(p), "%s/store.img", ctx->cfg.state_dir);
	if (access(p, F_OK) == 0 && store_ensure(&ctx->cfg, &e) < 0) {
		sl_log(SL_LOG_WARN, "hibernate: %s", e.msg);
		return;
	}
	if (state_list_dir(dir, "sbx_", "", &names, &n, &e) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/%s/hibernate", dir, names[i]);
		if (access(p, F_OK) == 0)
			recover_one(ctx, names[i]);
	}
	state_free_names(names, n);
}

int hibernate_resume_locked(sl_ctx *ctx, sl_sandbox *sb, sl_err *err)
{
	char dir[PATH_MAX];
	hibernate_images_dir(ctx, sb->id, dir, sizeof(dir));
	if (restore_into(ctx, sb, dir, NULL, err) < 0)
		return -1;
	sb->status = SL_ST_RUNNING;
	if (record_save(ctx, sb, true, err) < 0) {
		char cg[64];
		sl_err e = {0};
		snprintf(cg, sizeof(cg), "sandlot/%s", sb->id);
		cgroup_destroy(ctx->cg, cg, &e);
		if (sb->net_enabled)
			sbxnet_detach(ctx, sb);
		return -1;
	}
	hibernate_images_delete(ctx, sb->id);
	return 0;
}

int hibernate_dump_copy(sl_ctx *ctx, const sl_sandbox *sb, const char *dir, sl_err *err)
{
	/* <state>/hibernate: 0700 and root's, around the dumps of forks and checkpoints. */
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s/hibernate", ctx->cfg.state_dir);
	if ((mkdir(parent, 0700) < 0 && errno != EEXIST) || chmod(parent, 0700) < 0)
		return sl_sysfail(err, "create %s", parent);
	return dump_to(ctx, sb, dir, true, -1, err);
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
