/* secret.c — the secret store (secret.h): <state>/secrets/<owner>/s-<name>.json holds
 * the name, dates and "sealed" (base64 of nonce, ciphertext, tag); never the value. */
#include "secret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/base64.h>
#include <nettle/gcm.h>
#include <nettle/memops.h>

#include "cleanup.h"
#include "clock.h"
#include "state.h"

/* The record's size bound: a 64 KiB value sealed and in base64, and the rest. */
#define SECRET_RECORD_MAX (BASE64_ENCODE_RAW_LENGTH(SECRET_VALUE_MAX + 64) + 1024)

int secret_name_check(const char *name, sl_err *err)
{
	size_t n = strlen(name);
	bool ok = n >= 1 && n <= SECRET_NAME_MAX;
	for (const char *p = name; ok && *p; p++)
		ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		     (*p >= '0' && *p <= '9') || *p == '_' || *p == '.' || *p == '-';
	if (!ok)
		return sl_fail(err, SL_INVALID, 0,
			       "secret name \"%.140s\": use 1-%d letters, digits, '_', '.', '-'",
			       name, SECRET_NAME_MAX);
	return 0;
}

void secret_wipe(char *value, size_t len)
{
	if (value)
		explicit_bzero(value, len);
	free(value);
}

/* ---- sealing ---- */

int secret_seal(const uint8_t key[SECRET_KEY_LEN], const char *aad, const void *plain, size_t len,
		uint8_t **out, size_t *outlen, sl_err *err)
{
	size_t total = SECRET_NONCE_LEN + len + SECRET_TAG_LEN;
	uint8_t *buf = malloc(total);
	if (!buf)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "seal a secret");
	if (getrandom(buf, SECRET_NONCE_LEN, 0) != SECRET_NONCE_LEN) {
		free(buf);
		return sl_sysfail(err, "seal a secret: read random bytes for its nonce");
	}
	struct gcm_aes256_ctx g;
	gcm_aes256_set_key(&g, key);
	gcm_aes256_set_iv(&g, SECRET_NONCE_LEN, buf);
	gcm_aes256_update(&g, strlen(aad), (const uint8_t *)aad);
	gcm_aes256_encrypt(&g, len, buf + SECRET_NONCE_LEN, plain);
	gcm_aes256_digest(&g, SECRET_TAG_LEN, buf + SECRET_NONCE_LEN + len);
	explicit_bzero(&g, sizeof(g));
	*out = buf;
	*outlen = total;
	return 0;
}

int secret_open(const uint8_t key[SECRET_KEY_LEN], const char *aad, const uint8_t *sealed,
		size_t len, char **plain, size_t *plen, sl_err *err)
{
	if (len < SECRET_NONCE_LEN + SECRET_TAG_LEN)
		return sl_fail(err, SL_INTERNAL, 0, "open a secret: sealed value too short");
	size_t n = len - SECRET_NONCE_LEN - SECRET_TAG_LEN;
	char *buf = malloc(n + 1);
	if (!buf)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "open a secret");
	struct gcm_aes256_ctx g;
	uint8_t tag[SECRET_TAG_LEN];
	gcm_aes256_set_key(&g, key);
	gcm_aes256_set_iv(&g, SECRET_NONCE_LEN, sealed);
	gcm_aes256_update(&g, strlen(aad), (const uint8_t *)aad);
	gcm_aes256_decrypt(&g, n, (uint8_t *)buf, sealed + SECRET_NONCE_LEN);
	gcm_aes256_digest(&g, SECRET_TAG_LEN, tag);
	explicit_bzero(&g, sizeof(g));
	if (!memeql_sec(tag, sealed + SECRET_NONCE_LEN + n, SECRET_TAG_LEN)) {
		secret_wipe(buf, n);
		return sl_fail(err, SL_INTERNAL, 0,
			       "open a secret: it does not authenticate (damaged, or sealed "
			       "under another key)");
	}
	buf[n] = '\0';
	*plain = buf;
	*plen = n;
	return 0;
}

/* ---- the key: <state>/secrets.key, 32 raw bytes, beside api.key ---- */

static void key_path(const sl_config *cfg, char *buf, size_t len)
{
	snprintf(buf, len, "%s/secrets.key", cfg->state_dir);
}

/* A new key into PATH unless another process made one first: 0 made, 1 lost the race. */
static int key_create(const char *path, sl_err *err)
{
	uint8_t raw[SECRET_KEY_LEN];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return sl_sysfail(err, "read random bytes for the secrets key");
	int r = state_write_first(path, raw, sizeof(raw), err);
	explicit_bzero(raw, sizeof(raw));
	return r;
}

int secret_key_load(const sl_config *cfg, uint8_t key[SECRET_KEY_LEN], sl_err *err)
{
	char path[PATH_MAX];
	key_path(cfg, path, sizeof(path));
	for (int attempt = 0; attempt < 2; attempt++) {
		_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 && errno != ENOENT)
			return sl_sysfail(err, "open %s", path);
		if (fd < 0) {
			if (state_mkdirs(cfg->state_dir, 0700, err) < 0 ||
			    key_create(path, err) < 0)
				return -1;
			continue;
		}
		struct stat st;
		if (fstat(fd, &st) < 0)
			return sl_sysfail(err, "stat %s", path);
		if (st.st_uid != geteuid() || (st.st_mode & 077))
			return sl_fail(err, SL_INTERNAL, 0,
				       "%s must belong to this user with mode 0600 (chmod 600 it)",
				       path);
		ssize_t n = read(fd, key, SECRET_KEY_LEN);
		if (n != SECRET_KEY_LEN) {
			explicit_bzero(key, SECRET_KEY_LEN);
			return sl_fail(err, SL_INTERNAL, n < 0 ? errno : 0,
				       "%s does not hold a key of %d bytes", path, SECRET_KEY_LEN);
		}
		return 0;
	}
	return sl_fail(err, SL_INTERNAL, 0, "cannot create %s", path);
}

/* ---- the store ---- */

static const char *owner_dir_name(const char *owner)
{
	return owner && owner[0] ? owner : "admin";
}

static void owner_dir(const sl_config *cfg, const char *owner, char *buf, size_t len)
{
	snprintf(buf, len, "%s/secrets/%s", cfg->state_dir, owner_dir_name(owner));
}

static void record_path_of(const sl_config *cfg, const char *owner, const char *name, char *buf,
			   size_t len)
{
	snprintf(buf, len, "%s/secrets/%s/s-%s.json", cfg->state_dir, owner_dir_name(owner), name);
}

/* Bound in as GCM's associated data: a sealed value copied under another name or key
 * does not open. */
static void secret_aad(const char *owner, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "sandlot-secret:%s:%s", owner_dir_name(owner), name);
}

/* OWNER's record of NAME, parsed: SL_NOTFOUND naming it when there is none. */
static int record_read(const sl_config *cfg, const char *owner, const char *name, cJSON **out,
		       sl_secret *meta, sl_err *err)
{
	if (secret_name_check(name, err) < 0)
		return -1;
	char p[PATH_MAX];
	record_path_of(cfg, owner, name, p, sizeof(p));
	_cleanup_free_ char *data = NULL;
	if (state_read_file(p, SECRET_RECORD_MAX, &data, NULL, err) < 0) {
		if (err->kind == SL_NOTFOUND)
			sl_fail(err, SL_NOTFOUND, 0, "secret %s not found", name);
		return -1;
	}
	cJSON *o = cJSON_Parse(data);
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "created_ms");
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "updated_ms");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "version");
	if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "sealed"))) {
		cJSON_Delete(o);
		return sl_fail(err, SL_INTERNAL, 0, "secret %s: record %s unreadable", name, p);
	}
	if (meta) {
		memset(meta, 0, sizeof(*meta));
		snprintf(meta->name, sizeof(meta->name), "%s", name);
		meta->created_ms = cJSON_IsNumber(c) ? (int64_t)c->valuedouble : 0;
		meta->updated_ms = cJSON_IsNumber(u) ? (int64_t)u->valuedouble : meta->created_ms;
		meta->version =
		    cJSON_IsNumber(v) && v->valuedouble >= 1 ? (int64_t)v->valuedouble : 1;
	}
	if (out)
		*out = o;
	else
		cJSON_Delete(o);
	return 0;
}

int secret_set(const sl_config *cfg, const char *name, const char *value, size_t len,
	       sl_secret *out, bool *created, sl_err *err)
{
	return secret_put(cfg, name, value, len, SECRET_PUT, out, created, err);
}

int secret_put(const sl_config *cfg, const char *name, const char *value, size_t len,
	       secret_mode mode, sl_secret *out, bool *created, sl_err *err)
{
	if (secret_name_check(name, err) < 0)
		return -1;
	if (len > SECRET_VALUE_MAX)
		return sl_fail(err, SL_TOOLARGE, 0, "secret %s: value of %zu bytes; at most %d",
			       name, len, SECRET_VALUE_MAX);
	if (memchr(value, '\0', len))
		return sl_fail(err, SL_INVALID, 0, "secret %s: the value holds a NUL byte", name);
	const char *owner = owner_acting();
	char dir[PATH_MAX], p[PATH_MAX], aad[SECRET_NAME_MAX + 64];
	snprintf(p, sizeof(p), "%s/secrets", cfg->state_dir);
	owner_dir(cfg, owner, dir, sizeof(dir));
	if (state_private_dir(p, 0700, err) < 0 || state_private_dir(dir, 0700, err) < 0)
		return -1;
	uint8_t key[SECRET_KEY_LEN];
	if (secret_key_load(cfg, key, err) < 0)
		return -1;
	secret_aad(owner, name, aad, sizeof(aad));
	_cleanup_free_ uint8_t *sealed = NULL;
	size_t slen;
	int r = secret_seal(key, aad, value, len, &sealed, &slen, err);
	explicit_bzero(key, sizeof(key));
	if (r < 0)
		return -1;
	_cleanup_free_ char *b64 = malloc(BASE64_ENCODE_RAW_LENGTH(slen) + 1);
	if (!b64)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "secret %s", name);
	base64_encode_raw(b64, slen, sealed);
	b64[BASE64_ENCODE_RAW_LENGTH(slen)] = '\0';
	/* One writer at a time, so created_ms survives a replace racing another. */
	snprintf(p, sizeof(p), "%s/.lock", dir);
	_cleanup_close_ int lk = state_lock(p, err);
	if (lk < 0)
		return -1;
	sl_secret old;
	sl_err e = {0};
	bool exists = record_read(cfg, owner, name, NULL, &old, &e) == 0;
	if (!exists && e.kind != SL_NOTFOUND)
		return *err = e, -1;
	if (exists && mode == SECRET_CREATE)
		return sl_fail(err, SL_CONFLICT, 0, "secret %s already exists", name);
	if (!exists && mode == SECRET_REPLACE)
		return *err = e, -1;
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", name);
	out->updated_ms = sl_now_ms();
	out->created_ms = exists ? old.created_ms : out->updated_ms;
	out->version = exists ? old.version + 1 : 1;
	_cleanup_cjson_ cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "schema", 1);
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddNumberToObject(o, "created_ms", (double)out->created_ms);
	cJSON_AddNumberToObject(o, "updated_ms", (double)out->updated_ms);
	cJSON_AddNumberToObject(o, "version", (double)out->version);
	cJSON_AddStringToObject(o, "sealed", b64);
	_cleanup_free_ char *text = cJSON_PrintUnformatted(o);
	if (!text)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "secret %s", name);
	record_path_of(cfg, owner, name, p, sizeof(p));
	if (state_write_atomic(p, text, strlen(text), err) < 0)
		return -1;
	*created = !exists;
	return 0;
}

int secret_list(const sl_config *cfg, sl_secret **out, size_t *n, sl_err *err)
{
	char dir[PATH_MAX], **names;
	size_t nn;
	const char *owner = owner_acting();
	owner_dir(cfg, owner, dir, sizeof(dir));
	*out = NULL;
	*n = 0;
	if (state_list_dir(dir, "s-", ".json", &names, &nn, err) < 0)
		return -1;
	if (nn && !(*out = calloc(nn, sizeof(**out)))) {
		state_free_names(names, nn);
		return sl_fail(err, SL_INTERNAL, ENOMEM, "list secrets");
	}
	for (size_t i = 0; i < nn; i++) {
		sl_err e = {0};
		if (record_read(cfg, owner, names[i] + 2, NULL, &(*out)[*n], &e) == 0)
			(*n)++;
	}
	state_free_names(names, nn);
	return 0;
}

int secret_get(const sl_config *cfg, const char *name, sl_secret *out, sl_err *err)
{
	return record_read(cfg, owner_acting(), name, NULL, out, err);
}

int secret_delete(const sl_config *cfg, const char *name, sl_err *err)
{
	const char *owner = owner_acting();
	if (record_read(cfg, owner, name, NULL, NULL, err) < 0)
		return -1;
	char p[PATH_MAX];
	record_path_of(cfg, owner, name, p, sizeof(p));
	if (unlink(p) < 0 && errno != ENOENT)
		return sl_sysfail(err, "remove %s", p);
	return 0;
}

int secret_check(const sl_config *cfg, const char *owner, const char *name, sl_err *err)
{
	return record_read(cfg, owner, name, NULL, NULL, err);
}

int secret_reveal(const sl_config *cfg, const char *owner, const char *name, char **value,
		  size_t *len, sl_err *err)
{
	_cleanup_cjson_ cJSON *o = NULL;
	if (record_read(cfg, owner, name, &o, NULL, err) < 0)
		return -1;
	const char *b64 = cJSON_GetObjectItemCaseSensitive(o, "sealed")->valuestring;
	size_t blen = strlen(b64);
	_cleanup_free_ uint8_t *sealed = malloc(BASE64_DECODE_LENGTH(blen) + 1);
	if (!sealed)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "secret %s", name);
	struct base64_decode_ctx b;
	size_t slen = BASE64_DECODE_LENGTH(blen);
	base64_decode_init(&b);
	if (!base64_decode_update(&b, &slen, sealed, blen, b64) || !base64_decode_final(&b))
		return sl_fail(err, SL_INTERNAL, 0, "secret %s: its record is damaged", name);
	uint8_t key[SECRET_KEY_LEN];
	char aad[SECRET_NAME_MAX + 64];
	if (secret_key_load(cfg, key, err) < 0)
		return -1;
	secret_aad(owner, name, aad, sizeof(aad));
	int r = secret_open(key, aad, sealed, slen, value, len, err);
	explicit_bzero(key, sizeof(key));
	return r < 0 ? sl_wrap(err, "secret %s", name) : 0;
}

int secret_refs_check(const sl_config *cfg, const char *owner, const char *field, const cJSON *refs,
		      sl_err *err)
{
	if (!refs)
		return 0;
	if (!cJSON_IsObject(refs))
		return sl_fail(err, SL_INVALID, 0, "%s: must be an object of names", field);
	if (cJSON_GetArraySize(refs) > SECRET_REFS_MAX)
		return sl_fail(err, SL_INVALID, 0, "%s: at most %d", field, SECRET_REFS_MAX);
	const cJSON *it;
	cJSON_ArrayForEach(it, refs)
	{
		if (!cJSON_IsString(it))
			return sl_fail(err, SL_INVALID, 0, "%s.%.140s: must be a secret's name",
				       field, it->string);
		if (secret_check(cfg, owner, it->valuestring, err) < 0)
			return sl_wrap(err, "%s.%.140s", field, it->string);
	}
	return 0;
}
