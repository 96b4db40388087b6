/* secretfs.c — a sandbox's secret files (secretfs.h): a tmpfs from fsopen, filled
 * through its detached mount's fd, so no host path ever shows a value. */
#include "secretfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "sbxfs.h"
#include "secret.h"

#define PASSWD_MAX (1 << 20) /* the sandbox's file, hence hostile: bounded */

int secretfs_path_check(const char *path, sl_err *err)
{
	size_t dl = strlen(SECRET_FILES_DIR);
	const char *file = path + dl + 1;
	sl_err e = {0};
	if (strncmp(path, SECRET_FILES_DIR "/", dl + 1) || secret_name_check(file, &e) < 0 ||
	    !strcmp(file, ".") || !strcmp(file, ".."))
		return sl_fail(
		    err, SL_INVALID, 0,
		    "secretFiles: path \"%.200s\" must be %s/NAME, NAME 1-%d letters, "
		    "digits, '_', '.', '-' (a tmpfs of the sandbox's own is mounted on %s)",
		    path, SECRET_FILES_DIR, SECRET_NAME_MAX, SECRET_FILES_DIR);
	return 0;
}

/* LAYER's /etc/passwd into *BUF (NUL-terminated), nothing followed: 1 when it has none. */
static int passwd_read(const char *layer, char **buf, sl_err *err)
{
	_cleanup_close_ int root = open(layer, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int etc =
	    root < 0 ? -1 : openat(root, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int fd =
	    etc < 0 ? -1 : openat(etc, "passwd", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return 1; /* none, or a whiteout: the layer below's, if any */
	char *b = malloc(PASSWD_MAX + 1);
	if (!b)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "read %s/etc/passwd", layer);
	size_t len = 0;
	while (len < PASSWD_MAX) {
		ssize_t n = read(fd, b + len, PASSWD_MAX - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	b[len] = '\0';
	*buf = b;
	return 0;
}

static bool parse_uid(const char *s, size_t n, uint32_t *out)
{
	uint32_t v = 0;
	if (n == 0 || n > 5)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint32_t)(s[i] - '0');
	}
	*out = v;
	return v < 65536;
}

/* The sandbox user's uid and gid inside ("name", "uid" or "uid:gid", as init takes it). */
static int user_ids(const sl_sandbox *sb, const char *image_layer, const char *upper, uint32_t *uid,
		    uint32_t *gid, sl_err *err)
{
	const char *user = sb->user[0] ? sb->user : "root";
	size_t ul = strcspn(user, ":");
	if (parse_uid(user, ul, uid)) {
		*gid = *uid;
		return user[ul] == ':' && !parse_uid(user + ul + 1, strlen(user + ul + 1), gid)
			   ? sl_fail(err, SL_INVALID, 0, "user \"%s\": gid is not 0-65535", user)
			   : 0;
	}
	char name[64];
	snprintf(name, sizeof(name), "%.*s", (int)ul, user);
	const char *layers[] = {upper, image_layer};
	for (size_t i = 0; i < 2; i++) {
		_cleanup_free_ char *buf = NULL;
		int r = passwd_read(layers[i], &buf, err);
		if (r < 0)
			return -1;
		if (r == 0)
			return sbxfs_userdb_scan(buf, true, name, 0, uid, gid) == 0
				   ? 0
				   : sl_fail(
					 err, SL_INVALID, 0,
					 "secretFiles: user %s is not in the sandbox's /etc/passwd",
					 name);
	}
	if (!strcmp(name, "root"))
		return *uid = *gid = 0, 0;
	return sl_fail(err, SL_INVALID, 0, "secretFiles: user %s: the image has no /etc/passwd",
		       name);
}

/* One file of the tmpfs at MNT: secret SECRET's value, 0400, owned by host UID/GID. */
static int write_file(const sl_config *cfg, const sl_sandbox *sb, int mnt, const char *file,
		      const char *secret, uid_t uid, gid_t gid, sl_err *err)
{
	char *value = NULL;
	size_t len = 0;
	if (secret_reveal(cfg, sb->owner, secret, &value, &len, err) < 0)
		return -1;
	_cleanup_close_ int fd =
	    openat(mnt, file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
	size_t off = 0;
	while (fd >= 0 && off < len) {
		ssize_t n = write(fd, value + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	int e = errno;
	secret_wipe(value, len);
	if (fd < 0 || off < len || fchown(fd, uid, gid) < 0 || fchmod(fd, 0400) < 0)
		return sl_fail(err, SL_INTERNAL, fd < 0 || off < len ? e : errno,
			       "sandbox %s: write secret file %s/%s", sb->id, SECRET_FILES_DIR,
			       file);
	return 0;
}

int secretfs_make(const sl_config *cfg, const sl_sandbox *sb, const char *image_layer,
		  const char *upper, int *out, sl_err *err)
{
	uint32_t uid, gid;
	if (user_ids(sb, image_layer, upper, &uid, &gid, err) < 0)
		return sl_wrap(err, "sandbox %s", sb->id);
	/* Room for every value at its largest, and no more: the sandbox cannot fill it. */
	char size[32], owner[16], inodes[16];
	snprintf(size, sizeof(size), "%zu",
		 (size_t)(cJSON_GetArraySize(sb->secret_files) + 1) * (SECRET_VALUE_MAX + 4096));
	snprintf(owner, sizeof(owner), "%u", sb->uid_base);
	snprintf(inodes, sizeof(inodes), "%d", cJSON_GetArraySize(sb->secret_files) + 8);
	_cleanup_close_ int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "size", size, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "nr_inodes", inodes, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "uid", owner, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "gid", owner, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return sl_sysfail(err, "sandbox %s: a tmpfs for its secret files", sb->id);
	_cleanup_close_ int mnt =
	    fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (mnt < 0)
		return sl_sysfail(err, "sandbox %s: mount the tmpfs of its secret files", sb->id);
	const cJSON *it;
	cJSON_ArrayForEach(it, sb->secret_files)
	{
		if (!cJSON_IsString(it) || secretfs_path_check(it->string, err) < 0)
			return sl_wrap(err, "sandbox %s: its record", sb->id);
		if (write_file(cfg, sb, mnt, it->string + strlen(SECRET_FILES_DIR) + 1,
			       it->valuestring, sb->uid_base + uid, sb->uid_base + gid, err) < 0)
			return -1;
	}
	/* Read-only from now on: not even the sandbox's root adds to it. */
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
	if (mount_setattr(mnt, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
		return sl_sysfail(err, "sandbox %s: make its secret files read-only", sb->id);
	*out = steal_fd(&mnt);
	return 0;
}
