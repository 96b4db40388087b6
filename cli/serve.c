/* serve.c — `sandlot serve` (the HTTP API daemon, api/) and `sandlot key` (the API key
 * TCP clients send): option parsing only; the server lives in api/server.c. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "cli.h"
#include "dl.h"
#include "netaddr.h"
#include "packages.h"
#include "quantity.h"
#include "space.h"

/* --state-dir replaces the context main opened from the environment. */
static int reopen_state(sl_ctx *ctx, const char *dir)
{
	sl_err err = {0};
	ctx_close(ctx);
	setenv("SANDLOT_STATE_DIR", dir, 1);
	if (ctx_open(ctx, &err) < 0)
		return cli_fail(&err);
	return 0;
}

/* --pool [IMAGE=]N */
static int pool_parse(const char *spec, api_pool_spec *out, sl_err *err)
{
	const char *eq = strrchr(spec, '=');
	const char *num = eq ? eq + 1 : spec;
	char *end;
	unsigned long n = strtoul(num, &end, 10);
	if (!*num || *end || n > API_MAX_POOL_SIZE)
		return sl_fail(err, SL_INVALID, 0,
			       "--pool \"%s\": give [IMAGE=]N with N from 0 to %d", spec,
			       API_MAX_POOL_SIZE);
	if (eq && (eq == spec || (size_t)(eq - spec) >= sizeof(out->image)))
		return sl_fail(err, SL_INVALID, 0,
			       "--pool \"%s\": the image name is empty or too long", spec);
	snprintf(out->image, sizeof(out->image), "%.*s", eq ? (int)(eq - spec) : 0, spec);
	out->size = (int)n;
	return 0;
}

/* A whole number from MIN to MAX. */
static int count_parse(const char *flag, const char *text, unsigned long min, unsigned long max,
		       unsigned *out, sl_err *err)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(text, &end, 10);
	if (!*text || *end || errno || *text == '-' || v < min || v > max)
		return sl_fail(err, SL_INVALID, 0, "%s \"%s\": give a whole number from %lu to %lu",
			       flag, text, min, max);
	*out = (unsigned)v;
	return 0;
}

/* --max-disk, --min-free, --max-imports over what config.c read from the environment. */
static int grants_apply(sl_config *cfg, const char *const grants[3], sl_err *err)
{
	if (grants[0] && quantity_parse_bytes("--max-disk", grants[0], &cfg->max_disk, err) < 0)
		return -1;
	if (grants[1] && space_floor_parse("--min-free", grants[1], &cfg->min_free, err) < 0)
		return -1;
	if (grants[2]) {
		char *end;
		unsigned long n = strtoul(grants[2], &end, 10);
		if (!*grants[2] || *end || n < 1 || n > 1000)
			return sl_fail(err, SL_INVALID, 0,
				       "--max-imports \"%s\": give a number from 1 to 1000",
				       grants[2]);
		cfg->max_imports = (uint32_t)n;
	}
	if (grants[0] && cfg->def_disk > cfg->max_disk)
		return sl_fail(err, SL_INVALID, 0,
			       "--max-disk: below the default disk of a sandbox "
			       "(SANDLOT_DEFAULT_DISK); raise it or lower the default");
	return 0;
}

/* --allow-private's ranges after the environment's (PRIV starts with a comma). */
static int private_apply(sl_config *cfg, const char *priv, sl_err *err)
{
	size_t n = strlen(cfg->net_allow_private);
	if (n + strlen(priv) >= sizeof(cfg->net_allow_private))
		return sl_fail(err, SL_INVALID, 0, "--allow-private: too many ranges");
	snprintf(cfg->net_allow_private + n, sizeof(cfg->net_allow_private) - n, "%s",
		 n ? priv : priv + 1);
	return net_private_list_parse("--allow-private", cfg->net_allow_private, NULL,
				      SL_NET_MAX_PRIVATE, err) < 0
		   ? -1
		   : 0;
}

/* Over 120 lines: one getopt switch, a case per option, and the usage text. */
int cmd_serve(sl_ctx *ctx, int argc, char **argv)
{
	enum {
		O_SOCKET = 256,
		O_LISTEN,
		O_REMOTE,
		O_STATE,
		O_MAXBODY,
		O_MAXUP,
		O_PREVIEW,
		O_APT,
		O_PIPIDX,
		O_WHEELS,
		O_NPM,
		O_POOL,
		O_TLSCERT,
		O_TLSKEY,
		O_ALLOWUID,
		O_PROVDEF,
		O_CONNTO,
		O_MAXCONNS,
		O_MAXCLIENT,
		O_MAXDISK,
		O_MINFREE,
		O_MAXIMPORTS,
		O_REGMIRROR,
		O_INSECURE,
		O_AUTHFILE,
		O_ALLOWPRIV,
		O_DNS
	};
	static const struct option opts[] = {
	    {"socket", required_argument, 0, O_SOCKET},
	    {"listen", required_argument, 0, O_LISTEN},
	    {"allow-remote", no_argument, 0, O_REMOTE},
	    {"tls-cert", required_argument, 0, O_TLSCERT},
	    {"tls-key", required_argument, 0, O_TLSKEY},
	    {"state-dir", required_argument, 0, O_STATE},
	    {"max-body", required_argument, 0, O_MAXBODY},
	    {"max-upload", required_argument, 0, O_MAXUP},
	    {"preview-port", required_argument, 0, O_PREVIEW},
	    {"apt-mirror", required_argument, 0, O_APT},
	    {"pip-index", required_argument, 0, O_PIPIDX},
	    {"pip-wheels", required_argument, 0, O_WHEELS},
	    {"npm-registry", required_argument, 0, O_NPM},
	    {"pool", required_argument, 0, O_POOL},
	    {"allow-uid", required_argument, 0, O_ALLOWUID},
	    {"provider-defaults", no_argument, 0, O_PROVDEF},
	    {"conn-timeout", required_argument, 0, O_CONNTO},
	    {"max-conns", required_argument, 0, O_MAXCONNS},
	    {"max-conns-per-client", required_argument, 0, O_MAXCLIENT},
	    {"max-disk", required_argument, 0, O_MAXDISK},
	    {"min-free", required_argument, 0, O_MINFREE},
	    {"max-imports", required_argument, 0, O_MAXIMPORTS},
	    {"registry-mirror", required_argument, 0, O_REGMIRROR},
	    {"insecure-registry", required_argument, 0, O_INSECURE},
	    {"auth-file", required_argument, 0, O_AUTHFILE},
	    {"allow-private", required_argument, 0, O_ALLOWPRIV},
	    {"dns", required_argument, 0, O_DNS},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	api_options o = {.max_json = API_DEFAULT_MAX_JSON,
			 .max_upload = API_DEFAULT_MAX_UPLOAD,
			 .conn_timeout = API_DEFAULT_CONN_TIMEOUT,
			 .max_conns = API_DEFAULT_MAX_CONNS,
			 .max_conns_client = API_DEFAULT_MAX_CONNS_CLIENT};
	const char *state = NULL;
	/* Package sources: the environment's (config.c), or these flags. */
	const char *src[4] = {NULL};
	/* Disk grants: the environment's (config.c), or these flags. */
	const char *grants[3] = {NULL};
	/* --allow-private: appended to SANDLOT_NET_ALLOW_PRIVATE's list, checked at once. */
	char priv[sizeof(ctx->cfg.net_allow_private)] = "";
	/* --dns: the resolver's upstream servers, replacing SANDLOT_NET_DNS's. */
	char dns[sizeof(ctx->cfg.net_dns)] = "";
	const char *reg[32][2];
	size_t nreg = 0;
	sl_err err = {0};
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_SOCKET:
			o.socket_path = optarg;
			break;
		case O_LISTEN:
			o.listen = optarg;
			break;
		case O_REMOTE:
			o.allow_remote = true;
			break;
		case O_TLSCERT:
			o.tls_cert = optarg;
			break;
		case O_TLSKEY:
			o.tls_key = optarg;
			break;
		case O_STATE:
			state = optarg;
			break;
		case O_MAXBODY:
			if (quantity_parse_bytes("--max-body", optarg, &o.max_json, &err) < 0)
				return cli_fail(&err);
			break;
		case O_MAXUP:
			if (quantity_parse_bytes("--max-upload", optarg, &o.max_upload, &err) < 0)
				return cli_fail(&err);
			break;
		case O_PREVIEW: {
			char *end;
			unsigned long p = strtoul(optarg, &end, 10);
			if (*end || p > 65535)
				return cli_usage("serve: --preview-port %s is not a port", optarg);
			o.preview_port = p;
			o.preview_any = p == 0;
			break;
		}
		case O_POOL:
			if (o.npools >= API_MAX_POOLS)
				return cli_usage("serve: --pool: at most %d", API_MAX_POOLS);
			if (pool_parse(optarg, &o.pools[o.npools++], &err) < 0)
				return cli_fail(&err);
			break;
		case O_ALLOWUID:
			if (peer_uids_parse("--allow-uid", optarg, &o.allow_uids, &err) < 0)
				return cli_fail(&err);
			break;
		case O_PROVDEF:
			o.provider_defaults = true;
			break;
		case O_CONNTO:
			if (count_parse("--conn-timeout", optarg, 0, 86400, &o.conn_timeout, &err) <
			    0)
				return cli_fail(&err);
			break;
		case O_MAXCONNS:
			if (count_parse("--max-conns", optarg, 1, API_CONNS_MAX, &o.max_conns,
					&err) < 0)
				return cli_fail(&err);
			break;
		case O_MAXCLIENT:
			if (count_parse("--max-conns-per-client", optarg, 0, API_CONNS_MAX,
					&o.max_conns_client, &err) < 0)
				return cli_fail(&err);
			break;
		case O_MAXDISK:
		case O_MINFREE:
		case O_MAXIMPORTS:
			grants[c - O_MAXDISK] = optarg;
			break;
		case O_REGMIRROR:
		case O_INSECURE:
		case O_AUTHFILE:
			/* Applied after --state-dir, which reloads the configuration. */
			if (nreg == sizeof(reg) / sizeof(reg[0]))
				return cli_usage("serve: too many registry options");
			reg[nreg][0] = c == O_REGMIRROR	 ? "--registry-mirror"
				       : c == O_INSECURE ? "--insecure-registry"
							 : "--auth-file";
			reg[nreg++][1] = optarg;
			break;
		case O_APT:
		case O_PIPIDX:
		case O_WHEELS:
		case O_NPM:
			src[c - O_APT] = optarg;
			break;
		case O_ALLOWPRIV:
			if (net_private_list_parse("--allow-private", optarg, NULL,
						   SL_NET_MAX_PRIVATE, &err) < 0)
				return cli_fail(&err);
			if (strlen(priv) + strlen(optarg) + 2 > sizeof(priv))
				return cli_usage("serve: --allow-private: too many ranges");
			strcat(strcat(priv, ","), optarg);
			break;
		case O_DNS:
			if (strlen(dns) + strlen(optarg) + 2 > sizeof(dns))
				return cli_usage("serve: --dns: too many servers");
			strcat(strcat(dns, ","), optarg);
			break;
		case 'h':
			puts("usage: sandlot serve [--socket PATH] [--listen 127.0.0.1:PORT] "
			     "[--tls-cert PEM --tls-key PEM] [--allow-remote (needs TLS)]\n"
			     "                     [--state-dir DIR] [--max-body 8Mi] "
			     "[--max-upload 1Gi] [--preview-port 7081 (0: any)]\n"
			     "                     [--apt-mirror URL|'deb [trusted=yes] URL SUITE "
			     "[COMPONENT...]'] [--pip-index URL]\n"
			     "                     [--pip-wheels DIR] [--npm-registry URL]   "
			     "(package sources, docs/packages.md)\n"
			     "                     [--pool [IMAGE=]N]   (N ready sandboxes of "
			     "IMAGE, "
			     "default image if none; repeatable)\n"
			     "                     [--allow-uid UID|USER[,...]]   (repeatable)\n"
			     "                     [--provider-defaults]\n"
			     "                     [--conn-timeout 30 (seconds; 0: none)] "
			     "[--max-conns 1024] [--max-conns-per-client 256 (0: no cap)]\n"
			     "A connection sends its request head within --conn-timeout and is "
			     "closed after as long idle,\n"
			     "unless a handler works on it or it carries a stream (?follow=1, "
			     "WebSockets, E2B streams).\n"
			     "Each listener (and the relays and previews together) takes "
			     "--max-conns connections,\n"
			     "--max-conns-per-client from one local uid (or remote address); more "
			     "are "
			     "refused (429).\n"
			     "                     [--max-disk QUANTITY (default: the store's "
			     "size)] [--min-free 1Gi|N%|0] [--max-imports 2]\n"
			     "Port relays and preview URLs (loopback) let in root and the "
			     "--allow-uid "
			     "users;\n"
			     "others need a public port or the sandbox's preview token "
			     "(docs/api.md, \"Ports\").\n"
			     "--provider-defaults: sandboxes made through the E2B and Daytona APIs "
			     "get "
			     "their\n"
			     "provider's defaults (E2B: public ports and network on; Daytona: "
			     "network "
			     "on).\n"
			     "--max-disk: the most disk a sandbox may ask for (400 past it); "
			     "--min-free: the free\n"
			     "space kept on the state filesystem and in the store (creates and "
			     "imports: 507 below it);\n"
			     "--max-imports: image imports at once (429 past it). "
			     "docs/storage.md.\n"
			     "                     [--registry-mirror URL] [--insecure-registry "
			     "HOST[:PORT] (repeatable)] [--auth-file config.json]\n"
			     "   (image pulls, POST /v1/images/pull; docs/images.md, \"Pulling\")\n"
			     "                     [--allow-private CIDR[,...]]   (repeatable)\n"
			     "   private ranges every network-on sandbox may reach (closed by "
			     "default;\n"
			     "   docs/network.md, \"Private ranges\")\n"
			     "                     [--dns IP[,...]]   (repeatable; the upstream of "
			     "the sandboxes' resolver,\n"
			     "   default the host's resolv.conf; docs/network.md, \"Domain "
			     "rules\")\n"
			     "The unix socket (default <run dir>/sandlot.sock, mode 0660) needs no "
			     "key;\n"
			     "TCP clients send the key `sandlot key` prints.");
			return 0;
		default:
			return cli_usage("serve: unknown option \"%s\"", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage("serve: unexpected argument \"%s\"", argv[optind]);
	if (state && reopen_state(ctx, state) != 0)
		return EXIT_SANDLOT;
	if (grants_apply(&ctx->cfg, grants, &err) < 0)
		return cli_fail(&err);
	if (priv[0] && private_apply(&ctx->cfg, priv, &err) < 0)
		return cli_fail(&err);
	if (dns[0]) { /* checked by the resolver as it starts */
		if (strspn(dns + 1, "0123456789abcdefABCDEF.:,") != strlen(dns + 1))
			return cli_usage("serve: --dns %s: give IP addresses", dns + 1);
		snprintf(ctx->cfg.net_dns, sizeof(ctx->cfg.net_dns), "%s", dns + 1);
	}
	for (size_t i = 0; i < nreg; i++)
		if (cli_registry_flag(&ctx->cfg, reg[i][0], reg[i][1]) < 0)
			return EXIT_SANDLOT;
	char *dst[4] = {ctx->cfg.apt_mirror, ctx->cfg.pip_index, ctx->cfg.pip_wheels,
			ctx->cfg.npm_registry};
	size_t len[4] = {sizeof(ctx->cfg.apt_mirror), sizeof(ctx->cfg.pip_index),
			 sizeof(ctx->cfg.pip_wheels), sizeof(ctx->cfg.npm_registry)};
	for (int i = 0; i < 4; i++)
		if (src[i])
			snprintf(dst[i], len[i], "%s", src[i]);
	if (packages_check_sources(&ctx->cfg, &err) < 0)
		return cli_fail(&err);
	/* The server (libmicrohttpd, gnutls) is a module: other verbs don't load it. */
	int (*serve)(sl_ctx *, const api_options *, sl_err *) =
	    (int (*)(sl_ctx *, const api_options *, sl_err *))sl_module_symbol(
		"sandlot-api.so", "SANDLOT_API_SO", "api_serve", &err);
	if (!serve || serve(ctx, &o, &err) < 0)
		return cli_fail(&err);
	return 0;
}

/* `sandlot key ls`: one line per issued key (never the key, which is not kept). */
static int key_ls(sl_ctx *ctx)
{
	api_key_info *list;
	size_t n;
	sl_err err = {0};
	if (api_keys_list(&ctx->cfg, &list, &n, &err) < 0)
		return cli_fail(&err);
	printf("%-26s %-20s %s\n", "ID", "NAME", "CREATED");
	for (size_t i = 0; i < n; i++) {
		char when[32] = "";
		time_t t = (time_t)(list[i].created_ms / 1000);
		struct tm tm;
		if (gmtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		printf("%-26s %-20s %s\n", list[i].id, list[i].name, when);
	}
	free(list);
	return 0;
}

/* `sandlot key [--state-dir DIR] [create NAME | ls | rm NAME]`; alone, the admin key. */
int cmd_key(sl_ctx *ctx, int argc, char **argv)
{
	int at = 1;
	if (argc >= 3 && !strcmp(argv[1], "--state-dir")) {
		if (reopen_state(ctx, argv[2]) != 0)
			return EXIT_SANDLOT;
		at = 3;
	}
	const char *verb = at < argc ? argv[at] : NULL;
	int nargs = argc - at - (verb ? 1 : 0);
	char key[API_KEY_LEN + 1];
	sl_err err = {0};
	if (!verb) {
		if (api_key_load(&ctx->cfg, key, &err) < 0)
			return cli_fail(&err);
		puts(key);
		return 0;
	}
	if (!strcmp(verb, "ls") && nargs == 0)
		return key_ls(ctx);
	if (!strcmp(verb, "create") && nargs == 1) {
		api_key_info k;
		if (api_keys_create(&ctx->cfg, argv[at + 1], key, &k, &err) < 0)
			return cli_fail(&err);
		puts(key); /* the one time it is shown: only its hash is kept */
		fprintf(stderr, "sandlot: key %s (%s) created; it is not shown again\n", k.name,
			k.id);
		return 0;
	}
	if (!strcmp(verb, "rm") && nargs == 1) {
		if (api_keys_remove(&ctx->cfg, argv[at + 1], &err) < 0)
			return cli_fail(&err);
		return 0;
	}
	return cli_usage("key: use `key`, `key create NAME`, `key ls` or `key rm NAME` "
			 "(each may follow --state-dir DIR)");
}
