/* key.c — the API keys TCP clients present. The admin key: made once from the kernel's
 * random bytes, kept in <state>/api.key (0600), compared in constant time. The keys
 * `sandlot key create` issues: kept only as their SHA-256 under <state>/keys/ (0700). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <nettle/sha2.h>

#include "cleanup.h"
#include "clock.h"
#include "http.h"
#include "id.h"
#include "state.h"

static bool key_valid(const char *k)
{
	if (strlen(k) != API_KEY_LEN)
		return false;
	for (const char *p = k; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

/* 32 random bytes as 64 hex digits: every key, the admin's and the issued ones. */
static int key_random(char key[API_KEY_LEN + 1], sl_err *err)
{
	unsigned char raw[32];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return sl_sysfail(err, "read random bytes for the API key");
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(key + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

/* A new key into PATH, unless another process made one first (then read that). */
static int key_create(const char *path, char key[API_KEY_LEN + 1], sl_err *err)
{
	if (key_random(key, err) < 0)
		return -1;
	char line[API_KEY_LEN + 2];
	snprintf(line, sizeof(line), "%s\n", key);
	return state_write_first(path, line, API_KEY_LEN + 1, err);
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

/* ---- issued keys: <state>/keys/<sha256 of the key>.json = {id, name, created_ms} ---- */

/* The keys are 256 random bits, so an unsalted fast hash is enough: nothing short of
 * the key itself finds it from its hash, and the file name is the lookup. */
static void key_hash_hex(const char *key, char hex[2 * SHA256_DIGEST_SIZE + 1])
{
	struct sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_init(&h);
	sha256_update(&h, strlen(key), (const uint8_t *)key);
	sha256_digest(&h, sizeof(d), d);
	for (size_t i = 0; i < sizeof(d); i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

static void keys_dir(const sl_config *cfg, char *buf, size_t len)
{
	snprintf(buf, len, "%s/keys", cfg->state_dir);
}

static int key_read(const char *path, api_key_info *out)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	sl_err e = {0};
	if (state_read_file(path, 4096, &text, &len, &e) < 0)
		return -1;
	_cleanup_cjson_ cJSON *o = cJSON_Parse(text);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
	const cJSON *created = cJSON_GetObjectItemCaseSensitive(o, "created_ms");
	if (!cJSON_IsString(id) || !id_ok(id->valuestring, "key_") || !cJSON_IsString(name))
		return -1;
	memset(out, 0, sizeof(*out));
	snprintf(out->id, sizeof(out->id), "%s", id->valuestring);
	snprintf(out->name, sizeof(out->name), "%s", name->valuestring);
	out->created_ms = cJSON_IsNumber(created) ? (int64_t)created->valuedouble : 0;
	return 0;
}

static bool key_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 63 || name[0] == '.' || name[0] == '-')
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		      *p == '_' || *p == '.'))
			return false;
	return true;
}

/* Every issued key's file, by hash (NAMES, N: state_free_names). */
static int keys_files(const sl_config *cfg, char ***names, size_t *n, sl_err *err)
{
	char dir[PATH_MAX];
	keys_dir(cfg, dir, sizeof(dir));
	return state_list_dir(dir, "", ".json", names, n, err);
}

int api_keys_list(const sl_config *cfg, api_key_info **out, size_t *n, sl_err *err)
{
	char **names, dir[PATH_MAX], p[PATH_MAX + 80];
	size_t nn;
	*out = NULL;
	*n = 0;
	if (keys_files(cfg, &names, &nn, err) < 0)
		return -1;
	keys_dir(cfg, dir, sizeof(dir));
	api_key_info *list = calloc(nn ? nn : 1, sizeof(*list));
	if (!list) {
		state_free_names(names, nn);
		return sl_fail(err, SL_INTERNAL, ENOMEM, "list the API keys");
	}
	for (size_t i = 0; i < nn; i++) {
		snprintf(p, sizeof(p), "%s/%s.json", dir, names[i]);
		if (key_read(p, &list[*n]) == 0)
			(*n)++;
	}
	state_free_names(names, nn);
	*out = list;
	return 0;
}

/* The file of the key named NAME into PATH: 0, or -1 (SL_NOTFOUND). */
static int key_file_of(const sl_config *cfg, const char *name, char *path, size_t len, sl_err *err)
{
	char **names, dir[PATH_MAX];
	size_t nn;
	if (keys_files(cfg, &names, &nn, err) < 0)
		return -1;
	keys_dir(cfg, dir, sizeof(dir));
	int found = -1;
	for (size_t i = 0; i < nn && found < 0; i++) {
		api_key_info k;
		snprintf(path, len, "%s/%s.json", dir, names[i]);
		if (key_read(path, &k) == 0 && !strcmp(k.name, name))
			found = 0;
	}
	state_free_names(names, nn);
	return found == 0 ? 0 : sl_fail(err, SL_NOTFOUND, 0, "no API key named %s", name);
}

int api_keys_create(const sl_config *cfg, const char *name, char key[API_KEY_LEN + 1],
		    api_key_info *out, sl_err *err)
{
	char dir[PATH_MAX], lock[PATH_MAX + 8], p[PATH_MAX + 80];
	if (!key_name_ok(name))
		return sl_fail(err, SL_INVALID, 0,
			       "key name \"%s\": use 1-63 lowercase letters, digits, '-', '.', '_'",
			       name);
	keys_dir(cfg, dir, sizeof(dir));
	if (state_private_dir(dir, 0700, err) < 0)
		return -1;
	/* One create at a time, so two keys never get one name. */
	snprintf(lock, sizeof(lock), "%s/.lock", dir);
	_cleanup_close_ int lk = state_lock(lock, err);
	if (lk < 0)
		return -1;
	sl_err e = {0};
	if (key_file_of(cfg, name, p, sizeof(p), &e) == 0)
		return sl_fail(err, SL_CONFLICT, 0, "an API key named %s exists", name);
	if (e.kind != SL_NOTFOUND) {
		*err = e;
		return -1;
	}
	char hex[2 * SHA256_DIGEST_SIZE + 1];
	if (key_random(key, err) < 0)
		return -1;
	key_hash_hex(key, hex);
	memset(out, 0, sizeof(*out));
	sl_new_id("key_", out->id, sizeof(out->id));
	snprintf(out->name, sizeof(out->name), "%s", name);
	out->created_ms = sl_now_ms();
	_cleanup_cjson_ cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", out->id);
	cJSON_AddStringToObject(o, "name", out->name);
	cJSON_AddNumberToObject(o, "created_ms", (double)out->created_ms);
	_cleanup_free_ char *text = cJSON_PrintUnformatted(o);
	if (!text)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "save the API key %s", name);
	snprintf(p, sizeof(p), "%s/%s.json", dir, hex);
	return state_write_atomic(p, text, strlen(text), err);
}

int api_keys_remove(const sl_config *cfg, const char *name, sl_err *err)
{
	char p[PATH_MAX + 80];
	if (key_file_of(cfg, name, p, sizeof(p), err) < 0)
		return -1;
	if (unlink(p) < 0)
		return sl_sysfail(err, "remove %s", p);
	return 0;
}

int api_key_identify(const sl_config *cfg, const char *admin, const char *given,
		     char owner[SL_OWNER_LEN])
{
	owner[0] = '\0';
	/* E2B's SDKs want keys that start "e2b_": any key works with it in front. */
	if (given && !strncmp(given, "e2b_", 4))
		given += 4;
	if (api_key_equal(given, admin))
		return 0;
	if (!given || !key_valid(given))
		return -1;
	char hex[2 * SHA256_DIGEST_SIZE + 1], dir[PATH_MAX], p[PATH_MAX + 80];
	key_hash_hex(given, hex);
	keys_dir(cfg, dir, sizeof(dir));
	snprintf(p, sizeof(p), "%s/%s.json", dir, hex);
	api_key_info k;
	if (key_read(p, &k) < 0)
		return -1;
	snprintf(owner, SL_OWNER_LEN, "%s", k.id);
	return 0;
}
