/* key.c — the API key TCP clients present: made once from the kernel's random bytes,
 * kept in <state>/api.key (0600), compared in constant time. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "state.h"
#include "http.h"

static bool key_valid(const char *k)
{
	if (strlen(k) != API_KEY_LEN)
		return false;
	for (const char *p = k; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

/* A new key into PATH, unless another process made one first (then read that). */
static int key_create(const char *path, char key[API_KEY_LEN + 1], sl_err *err)
{
	unsigned char raw[32];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return sl_sysfail(err, "read random bytes for the API key");
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(key + 2 * i, 3, "%02x", raw[i]);
	char tmp[PATH_MAX], line[API_KEY_LEN + 2];
	snprintf(tmp, sizeof(tmp), "%s.new.%d", path, (int)getpid());
	snprintf(line, sizeof(line), "%s\n", key);
	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return sl_sysfail(err, "create %s", tmp);
	if (write(fd, line, API_KEY_LEN + 1) != API_KEY_LEN + 1 || fsync(fd) < 0) {
		int e = errno;
		unlink(tmp);
		return sl_fail(err, SL_INTERNAL, e, "write %s", tmp);
	}
	/* link() fails when a key exists: the first writer wins, everyone reads it. */
	int r = link(tmp, path);
	int e = errno;
	unlink(tmp);
	if (r < 0 && e != EEXIST)
		return sl_fail(err, SL_INTERNAL, e, "save the API key as %s", path);
	return r < 0 ? 1 : 0;
}

int api_key_load(const sl_config *cfg, char key[API_KEY_LEN + 1], sl_err *err)
{
	char path[PATH_MAX];
	state_api_key_path(cfg, path, sizeof(path));
	for (int attempt = 0; attempt < 2; attempt++) {
		_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 && errno != ENOENT)
			return sl_sysfail(err, "open %s", path);
		if (fd < 0) {
			int r = key_create(path, key, err);
			if (r <= 0)
				return r;
			continue; /* lost the race: read the winner's */
		}
		struct stat st;
		if (fstat(fd, &st) < 0)
			return sl_sysfail(err, "stat %s", path);
		if (st.st_uid != geteuid() || (st.st_mode & 077))
			return sl_fail(err, SL_INTERNAL, 0,
				       "%s must belong to this user with mode 0600 (chmod 600 it)",
				       path);
		char buf[API_KEY_LEN + 8] = "";
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		if (n < 0)
			return sl_sysfail(err, "read %s", path);
		buf[n] = '\0';
		buf[strcspn(buf, "\r\n")] = '\0';
		if (!key_valid(buf))
			return sl_fail(err, SL_INTERNAL, 0,
				       "%s does not hold a key (64 hex digits); remove it to make "
				       "a new one",
				       path);
		memcpy(key, buf, API_KEY_LEN + 1);
		return 0;
	}
	return sl_fail(err, SL_INTERNAL, 0, "cannot create %s", path);
}

bool api_key_equal(const char *given, const char *key)
{
	/* Same work whatever GIVEN is: no early exit on the first difference or length. */
	size_t gl = given ? strlen(given) : 0;
	unsigned diff = gl != API_KEY_LEN;
	for (size_t i = 0; i < API_KEY_LEN; i++)
		diff |= (unsigned char)key[i] ^ (unsigned char)(i < gl ? given[i] : 0);
	return diff == 0;
}
