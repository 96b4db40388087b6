/* secret.h — named secrets, each API key's own: sealed with AES-256-GCM under a key kept
 * beside the API key (<state>/secrets.key, 0600), opened only when a sandbox uses one. */
#ifndef SANDLOT_SECRET_H
#define SANDLOT_SECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "err.h"
#include "owner.h"

#define SECRET_NAME_MAX	 128
#define SECRET_VALUE_MAX (64 * 1024)
#define SECRET_KEY_LEN	 32 /* AES-256 */
#define SECRET_NONCE_LEN 12 /* GCM's 96-bit nonce, random per value */
#define SECRET_TAG_LEN	 16
/* What a create may reference: env variables and files, each. */
#define SECRET_REFS_MAX 64
/* Where secret files go: a tmpfs of the sandbox's own, mounted here. */
#define SECRET_FILES_DIR "/run/secrets"

typedef struct sl_secret {
	char name[SECRET_NAME_MAX + 1];
	int64_t created_ms, updated_ms;
	int64_t version; /* 1 when set, one more each time the value is replaced */
} sl_secret;

/* What a set may do: /v1 and the CLI replace or create (PUT); the façades' "create"
 * refuses a name in use (SL_CONFLICT) and their "update" an unknown one (SL_NOTFOUND). */
typedef enum { SECRET_PUT, SECRET_CREATE, SECRET_REPLACE } secret_mode;

/* NAME is 1-128 of [A-Za-z0-9_.-] (SL_INVALID naming the rule otherwise). */
int secret_name_check(const char *name, sl_err *err);

/* Store VALUE (LEN bytes, at most SECRET_VALUE_MAX, no NUL) as NAME for the acting key
 * (owner.h), replacing its value if it exists: *CREATED says which. */
int secret_set(const sl_config *cfg, const char *name, const char *value, size_t len,
	       sl_secret *out, bool *created, sl_err *err);
/* The same under MODE's rule. */
int secret_put(const sl_config *cfg, const char *name, const char *value, size_t len,
	       secret_mode mode, sl_secret *out, bool *created, sl_err *err);
/* The acting key's secret NAME, name and dates only (SL_NOTFOUND naming it). */
int secret_get(const sl_config *cfg, const char *name, sl_secret *out, sl_err *err);
/* The acting key's secrets, names and dates only; free(*out). */
int secret_list(const sl_config *cfg, sl_secret **out, size_t *n, sl_err *err);
int secret_delete(const sl_config *cfg, const char *name, sl_err *err);
/* Does OWNER have a secret NAME? SL_NOTFOUND naming it otherwise. */
int secret_check(const sl_config *cfg, const char *owner, const char *name, sl_err *err);
/* OWNER's secret NAME in clear, NUL-terminated, into *VALUE (malloc'd): the caller
 * wipes it (secret_wipe) as soon as it is used. */
int secret_reveal(const sl_config *cfg, const char *owner, const char *name, char **value,
		  size_t *len, sl_err *err);
/* explicit_bzero then free. */
void secret_wipe(char *value, size_t len);

/* A create's references: REFS an object of ENV_NAME (or path) -> secret name, each
 * checked (FIELD names them in errors: "secrets", "secretFiles") and known to OWNER. */
int secret_refs_check(const sl_config *cfg, const char *owner, const char *field, const cJSON *refs,
		      sl_err *err);

/* ---- the sealing itself (no I/O; unit-tested) ---- */

/* NONCE || ciphertext || TAG of PLAIN under KEY, with AAD bound in; *OUT malloc'd. */
int secret_seal(const uint8_t key[SECRET_KEY_LEN], const char *aad, const void *plain, size_t len,
		uint8_t **out, size_t *outlen, sl_err *err);
/* The reverse: SL_INTERNAL when the tag does not match (a flipped byte, another key,
 * another AAD). *PLAIN is NUL-terminated and the caller wipes it. */
int secret_open(const uint8_t key[SECRET_KEY_LEN], const char *aad, const uint8_t *sealed,
		size_t len, char **plain, size_t *plen, sl_err *err);
/* The store's key, made from getrandom() on first use (0600). */
int secret_key_load(const sl_config *cfg, uint8_t key[SECRET_KEY_LEN], sl_err *err);

#endif
