/* api.h — `sandlot serve`: the JSON HTTP API over the runtime (unix socket, loopback
 * TCP with an API key). The calls cli/serve.c makes; everything else is internal. */
#ifndef SANDLOT_API_H
#define SANDLOT_API_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "owner.h"
#include "peer.h"
#include "sandbox.h"

#ifndef SANDLOT_VERSION
#define SANDLOT_VERSION "0.1.0-dev"
#endif

#define API_DEFAULT_MAX_JSON   (8ull << 20) /* 8 MiB */
#define API_DEFAULT_MAX_UPLOAD (1ull << 30) /* 1 GiB */

/* `serve --pool [IMAGE=]N`: keep N ready sandboxes of IMAGE ("": the default image). */
#define API_MAX_POOLS	  8
#define API_MAX_POOL_SIZE 64
typedef struct api_pool_spec {
	char image[128];
	int size;
} api_pool_spec;

typedef struct api_options {
	const char *socket_path; /* NULL: <run>/sandlot.sock */
	const char *listen;	 /* NULL: no TCP; else "127.0.0.1:PORT", "[::1]:PORT" */
	bool allow_remote;	 /* accept a non-loopback --listen address (TLS needed) */
	const char *tls_cert;	 /* PEM files: --listen speaks HTTPS (NULL: HTTP) */
	const char *tls_key;
	uint64_t max_json;	 /* largest JSON request body */
	uint64_t max_upload;	 /* largest raw upload (files, images, stdin) */
	uint16_t preview_port;	 /* loopback port of the preview proxy; 0: 7081 */
	bool preview_any;	 /* let the kernel choose it (tests run several daemons) */
	api_pool_spec pools[API_MAX_POOLS];
	int npools;
	/* --allow-uid: local users who reach every sandbox's ports through the relays and
	 * the preview proxy (root always does); others need a public port or a token. */
	peer_uids allow_uids;
	/* --provider-defaults: a façade's creates take its provider's defaults where they
	 * are less safe than sandlot's (E2B: public ports, network on; Daytona: network on). */
	bool provider_defaults;
	/* --conn-timeout: seconds a connection may take to send a request head, or stay idle
	 * (no byte either way) outside a handler and a long-lived stream; 0: none. */
	unsigned conn_timeout;
	/* --max-conns, --max-conns-per-client: connections at once on each listener (and on
	 * the relays and the preview proxy together), and of those from one client. */
	unsigned max_conns, max_conns_client;
} api_options;

#define API_DEFAULT_CONN_TIMEOUT 30
#define API_DEFAULT_MAX_CONNS	 1024
#define API_DEFAULT_MAX_CONNS_CLIENT 256
/* The most --max-conns may allow (a place for each is allocated at start). */
#define API_CONNS_MAX 65536


/* Listen, print one line saying where, and serve until SIGTERM or SIGINT. */
int api_serve(sl_ctx *ctx, const api_options *o, sl_err *err);

/* The API key TCP clients must send: <state>/api.key (64 hex chars, mode 0600), made
 * from 32 random bytes the first time it is asked for. */
#define API_KEY_LEN 64
int api_key_load(const sl_config *cfg, char key[API_KEY_LEN + 1], sl_err *err);

/* Keys per user (`sandlot key create|ls|rm`): each has an id (the owner of what it
 * makes, owner.h), a name, and its creation time; the key itself is shown once by
 * api_keys_create and kept only as its SHA-256, in <state>/keys/ (0700). */
typedef struct api_key_info {
	char id[SL_OWNER_LEN];
	char name[64];
	int64_t created_ms;
} api_key_info;
/* A new key named NAME (1-63 of [a-z0-9._-]; SL_CONFLICT when taken) into KEY. */
int api_keys_create(const sl_config *cfg, const char *name, char key[API_KEY_LEN + 1],
		    api_key_info *out, sl_err *err);
/* Every issued key (free *OUT). */
int api_keys_list(const sl_config *cfg, api_key_info **out, size_t *n, sl_err *err);
/* SL_NOTFOUND when no key has NAME. What the key made stays, the admin's to manage. */
int api_keys_remove(const sl_config *cfg, const char *name, sl_err *err);
/* Who GIVEN (as sent; "e2b_KEY" is KEY) is: 0 with OWNER "" for the admin key, or the
 * issued key's id; -1 for no key. The admin key is compared in constant time; an issued
 * one is found by its hash. */
int api_key_identify(const sl_config *cfg, const char *admin, const char *given,
		     char owner[SL_OWNER_LEN]);

#endif
