/* claim.c — claims on what sandboxes must not share: uid ranges (<state>/slots), names
 * (<state>/names) and addresses (<state>/leases), each a file holding its owner's id,
 * taken atomically; released claim files are kept in <state>/spares for the next. */
#include "claim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "fsutil.h"

/* Claims are files: <state>/slots/<n> for uid ranges, <state>/names/<name> for names
 * and <state>/leases/<ip> for addresses, each holding the owner's id. A claim is a file
 * already holding the id, renamed into place with RENAME_NOREPLACE: atomic, so
 * concurrent creates need no global lock and no scan of the records. A claim whose
 * owner is gone (no record, or a tombstone) is stale and is taken over.
 *
 * A released claim's file is not unlinked but moved to <state>/spares, and the next
 * claim takes one from there instead of making a new file. On an ext4 without a
 * journal (this host's root), each new inode costs a check of every inode freed in the
 * last minutes, and a one-shot's released uid-range claim was the one inode it freed:
 * each create paid for the churn of all the ones before it (docs/bench.md, session 15). */
void claim_path(const sl_ctx *ctx, const char *kind, const char *key, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s/%s", ctx->cfg.state_dir, kind, key);
}

/* The owner's id a claim file holds, NUL-terminated: its length, or <= 0 (errno set
 * when it could not be opened; 0 while its creator is still writing it). */
ssize_t claim_read(const char *path, char owner[40])
{
	owner[0] = '\0';
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, owner, 39);
	owner[n > 0 ? n : 0] = '\0';
	return n;
}

static void spares_path(const sl_ctx *ctx, char *buf, size_t len)
{
	snprintf(buf, len, "%s/spares", ctx->cfg.state_dir);
}

/* A claim file holding ID, at a name in <state>/spares that no other claimer uses
 * (MINE, ".<id>"): the file of a released claim when there is one, else a new file.
 * 0, or -1 with errno. */
static int claim_file(const sl_ctx *ctx, const char *id, char *mine, size_t len)
{
	char dir[PATH_MAX];
	spares_path(ctx, dir, sizeof(dir));
	if (snprintf(mine, len, "%s/.%s", dir, id) >= (int)len)
		return errno = ENAMETOOLONG, -1;
	const char *name = mine + strlen(dir) + 1;
	bool taken = false;
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	/* The first few entries are enough: a lost race for one (ENOENT) tries the next. */
	char buf[1024] __attribute__((aligned(8)));
	ssize_t n = getdents64(dfd, buf, sizeof(buf));
	for (ssize_t off = 0; !taken && off < n;) {
		struct dirent64 *e = (struct dirent64 *)(buf + off);
		off += e->d_reclen;
		if (e->d_type == DT_REG && e->d_name[0] != '.' &&
		    renameat(dfd, e->d_name, dfd, name) == 0)
			taken = true;
	}
	_cleanup_close_ int fd =
	    open(mine, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | (taken ? 0 : O_CREAT | O_TRUNC), 0600);
	size_t l = strlen(id);
	struct stat st;
	if (fd < 0 || fs_write_all(fd, id, l, 0) < 0 || fstat(fd, &st) < 0 ||
	    (st.st_size > (off_t)l && ftruncate(fd, (off_t)l) < 0)) {
		int e = errno;
		unlink(mine);
		return errno = e, -1;
	}
	return 0;
}

/* Put claim file MINE, which holds ID, at PATH unless PATH exists: 0, or -1 with errno
 * (EEXIST: claimed by someone else). Where a rename cannot do it (no RENAME_NOREPLACE,
 * or the claim dirs on another file system than the spares), a new file is made at PATH
 * with O_EXCL, as exclusive. */
static int place_claim(const char *mine, const char *path, const char *id)
{
	if (syscall(SYS_renameat2, AT_FDCWD, mine, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != EXDEV)
		return -1;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	int w = fs_write_all(fd, id, strlen(id), 0), e = errno;
	close(fd);
	if (w < 0) {
		unlink(path);
		return errno = e, -1;
	}
	unlink(mine);
	return 0;
}

/* Keep claim file PATH, released by ID, for the next claim (a spare's name must be
 * unique: ID's claim of that KIND); removed if it cannot be kept. */
static void spare_keep(const sl_ctx *ctx, const char *path, const char *id, const char *kind)
{
	char spare[PATH_MAX];
	spares_path(ctx, spare, sizeof(spare));
	size_t l = strlen(spare);
	snprintf(spare + l, sizeof(spare) - l, "/%s.%s", id, kind);
	if (rename(path, spare) < 0)
		unlink(path);
}

enum claim_owner { OWNER_GONE, OWNER_LIVE, OWNER_RELEASING };

/* An sandlot-oci owner ("oci_<hash>", a container or a pod's containers) lives while its
 * directory <state>/oci/<owner> lists a container, or while it is new (being made). */
static bool oci_owner_live(const sl_ctx *ctx, const char *owner, const char *path)
{
	char d[PATH_MAX];
	snprintf(d, sizeof(d), "%s/oci/%s", ctx->cfg.state_dir, owner);
	_cleanup_closedir_ DIR *dir = opendir(d);
	struct dirent *de;
	while (dir && (de = readdir(dir)))
		if (de->d_name[0] != '.')
			return true;
	struct stat st;
	return lstat(path, &st) == 0 && time(NULL) - st.st_mtime <= 60;
}

/* A daemon's spare network ("spn_<pid>_<start>_<k>", spares.c) lives while its daemon
 * does. */
static bool spn_owner_live(const char *owner)
{
	unsigned long long pid, start;
	if (sscanf(owner, "spn_%llu_%llu_", &pid, &start) != 2)
		return false;
	return record_pid_alive((pid_t)pid, start);
}

/* Who holds claim PATH: nobody any more (stale), a live sandbox (or one being made), or
 * a tombstone whose releaser is still freeing it. */
static enum claim_owner claim_owner(const sl_ctx *ctx, const char *path)
{
	char owner[40];
	ssize_t n = claim_read(path, owner);
	if (n < 0)
		return errno == ENOENT ? OWNER_GONE : OWNER_LIVE;
	if (n == 0) /* being written right now, or torn by a crash: look again later */
		return OWNER_LIVE;
	sl_sandbox sb;
	sl_err e = { 0 };
	if (!strncmp(owner, "oci_", 4))
		return oci_owner_live(ctx, owner, path) ? OWNER_LIVE : OWNER_GONE;
	if (!strncmp(owner, "spn_", 4))
		return spn_owner_live(owner) ? OWNER_LIVE : OWNER_GONE;
	if (strncmp(owner, "sbx_", 4) || record_load(ctx, owner, &sb, &e) < 0) {
		/* Its creator writes the record right after the claim: only an old
		 * claim without a record is stale. */
		struct stat st;
		bool old = e.kind == SL_NOTFOUND && lstat(path, &st) == 0 &&
			   time(NULL) - st.st_mtime > 60;
		return old ? OWNER_GONE : OWNER_LIVE;
	}
	/* A tombstone still being released keeps its claims until its releaser is done
	 * (or dead: then sandbox_finish_orphans frees what is left). */
	enum claim_owner o = OWNER_LIVE;
	if (sb.status == SL_ST_TERMINATED)
		o = record_pid_alive(sb.releaser_pid, sb.releaser_start) ? OWNER_RELEASING : OWNER_GONE;
	sandbox_free(&sb);
	return o;
}

bool claim_stale(const sl_ctx *ctx, const char *path)
{
	return claim_owner(ctx, path) == OWNER_GONE;
}

/* 0: claimed; 1: taken by a live owner; -1: error. A claim whose sandbox is being
 * released is waited for when WAIT (a name: `run --name x` twice in a row must not
 * fail because the first one's release, detached, is a few ms from done). */
int claim_take(const sl_ctx *ctx, const char *kind, const char *key, const char *id, bool wait,
	       sl_err *err)
{
	char path[PATH_MAX];
	claim_path(ctx, kind, key, path, sizeof(path));
	char mine[PATH_MAX];
	if (claim_file(ctx, id, mine, sizeof(mine)) < 0)
		return sl_sysfail(err, "claim %s", path);
	int64_t give_up = 0;
	for (int tries = 0; tries < 3;) {
		if (place_claim(mine, path, id) == 0)
			return 0;
		if (errno != EEXIST) {
			int e = errno;
			unlink(mine);
			return sl_fail(err, SL_INTERNAL, e, "claim %s", path);
		}
		enum claim_owner o = claim_owner(ctx, path);
		if (o == OWNER_RELEASING && wait) {
			if (!give_up)
				give_up = sl_now_ms() + 10000;
			if (sl_now_ms() < give_up) {
				usleep(2000);
				continue;
			}
		}
		if (o != OWNER_GONE)
			break;
		unlink(path);
		tries++;
	}
	spare_keep(ctx, mine, id, kind);
	return 1;
}

int claim_transfer(const sl_ctx *ctx, const char *kind, const char *key, const char *from,
		   const char *to, sl_err *err)
{
	char path[PATH_MAX], owner[40], mine[PATH_MAX];
	claim_path(ctx, kind, key, path, sizeof(path));
	if (claim_read(path, owner) <= 0 || strcmp(owner, from))
		return sl_fail(err, SL_INTERNAL, 0, "claim %s: not %s's", path, from);
	if (claim_file(ctx, to, mine, sizeof(mine)) < 0)
		return sl_sysfail(err, "claim %s", path);
	/* Over the old one: the claim is never absent, so no other create can take it. */
	if (rename(mine, path) < 0) {
		int e = errno;
		unlink(mine);
		return sl_fail(err, SL_INTERNAL, e, "claim %s", path);
	}
	return 0;
}

void claim_drop(const sl_ctx *ctx, const char *kind, const char *key, const char *id)
{
	char path[PATH_MAX], owner[40];
	claim_path(ctx, kind, key, path, sizeof(path));
	if (claim_read(path, owner) > 0 && !strcmp(owner, id))
		spare_keep(ctx, path, id, kind);
}

void claim_release_all(const sl_ctx *ctx, const sl_sandbox *sb)
{
	char slot[16];
	snprintf(slot, sizeof(slot), "%u", (sb->uid_base - ctx->cfg.uid_base) / 65536);
	claim_drop(ctx, "slots", slot, sb->id);
	if (sb->net_addr[0])
		claim_drop(ctx, "leases", sb->net_addr, sb->id);
	if (sb->name[0])
		claim_drop(ctx, "names", sb->name, sb->id);
}

void claim_find(const sl_ctx *ctx, const char *kind, const char *id, char *key, size_t len)
{
	char dir[PATH_MAX], path[PATH_MAX], owner[40];
	key[0] = '\0';
	claim_path(ctx, kind, "", dir, sizeof(dir));
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s%s", dir, de->d_name);
		if (claim_read(path, owner) > 0 && !strcmp(owner, id)) {
			snprintf(key, len, "%s", de->d_name);
			return;
		}
	}
}

int claim_uid_range(const sl_ctx *ctx, const char *owner, uint64_t h, uint32_t *base, sl_err *err)
{
	/* Probed from a slot the owner's hash picks, not from 0: at N sandboxes the first
	 * try is nearly always free, where a scan for the lowest was O(N). */
	for (uint32_t i = 0; i < ctx->cfg.uid_slots; i++) {
		uint32_t slot = (uint32_t)((h + i) % ctx->cfg.uid_slots);
		char key[16];
		snprintf(key, sizeof(key), "%u", slot);
		int r = claim_take(ctx, "slots", key, owner, false, err);
		if (r < 0)
			return -1;
		if (r == 1) /* a live owner's: try the next one */
			continue;
		*base = ctx->cfg.uid_base + slot * 65536u;
		return 0;
	}
	return sl_fail(err, SL_EXHAUSTED, 0, "no free uid range for another sandbox");
}
