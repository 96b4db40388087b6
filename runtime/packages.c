/* packages.c — installs at create: a temporary root sandbox of the image (with a
 * network when a source needs one) runs apt-get, pip and npm; its writable layer is
 * kept as a read-only snapshot under <state>/packages/<key>.json, and every sandbox
 * asking for the same (image, packages, sources) starts from a clone of it. */
#include "packages.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "image.h"
#include "log.h"
#include "netaddr.h"
#include "sbxfs.h"
#include "state.h"
#include "storage.h"

/* Part of the key: a change to how the installers run makes new layers. */
#define RECIPE		"sandlot-packages-1"
#define WHEELS_MOUNT	"/mnt"
#define SOURCES_FILE	"/tmp/.sandlot-apt-sources.list"
#define STEP_TIMEOUT_MS (15 * 60 * 1000)
#define TAIL_BYTES	700


/* ---- the key ---- */

static int cmp_pkg(const void *a, const void *b)
{
	const sl_package *x = a, *y = b;
	int c = strcmp(x->manager, y->manager);
	if (!c)
		c = strcmp(x->name, y->name);
	if (!c)
		c = strcmp(x->version ? x->version : "", y->version ? y->version : "");
	return c;
}

static bool uses(const sl_package *p, size_t n, const char *manager)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(p[i].manager, manager))
			return true;
	return false;
}

static void hash_str(struct sha256_ctx *h, const char *s)
{
	sha256_update(h, strlen(s) + 1, (const uint8_t *)s); /* with the NUL: unambiguous */
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The wheel directory's listing (names, sizes, mtimes): new wheels make a new key. */
static int hash_wheels(struct sha256_ctx *h, const char *dir, sl_err *err)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	if (!d)
		return sl_sysfail(err, "pip wheel directory %s", dir);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	int r = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		struct stat st;
		char line[600];
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		snprintf(line, sizeof(line), "%s %lld %lld.%09ld", e->d_name, (long long)st.st_size,
			 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **nn = realloc(names, cap * sizeof(*names));
			if (!nn) {
				r = sl_fail(err, SL_INTERNAL, ENOMEM, "list %s", dir);
				break;
			}
			names = nn;
		}
		names[n++] = strdup(line);
	}
	if (r == 0) {
		qsort(names, n, sizeof(*names), cmp_str);
		for (size_t i = 0; i < n; i++)
			hash_str(h, names[i] ? names[i] : "");
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r;
}

static int cache_key(const sl_config *cfg, const char *digest, const sl_package *sorted, size_t n,
		     char hex[65], sl_err *err)
{
	struct sha256_ctx h;
	sha256_init(&h);
	hash_str(&h, RECIPE);
	hash_str(&h, digest);
	for (size_t i = 0; i < n; i++) {
		hash_str(&h, sorted[i].manager);
		hash_str(&h, sorted[i].name);
		hash_str(&h, sorted[i].version ? sorted[i].version : "");
	}
	/* Only the sources a manager in the list reads. */
	if (uses(sorted, n, "apt"))
		hash_str(&h, cfg->apt_mirror);
	if (uses(sorted, n, "pip")) {
		hash_str(&h, cfg->pip_index);
		hash_str(&h, cfg->pip_wheels);
		if (cfg->pip_wheels[0] && hash_wheels(&h, cfg->pip_wheels, err) < 0)
			return -1;
	}
	if (uses(sorted, n, "npm"))
		hash_str(&h, cfg->npm_registry);
	uint8_t md[SHA256_DIGEST_SIZE];
	sha256_digest(&h, sizeof(md), md);
	for (size_t i = 0; i < sizeof(md); i++)
		sprintf(hex + 2 * i, "%02x", md[i]);
	return 0;
}

/* ---- running the installers ---- */

/* The last TAIL_BYTES of fd's content, trimmed, one line per "; ". */
static void tail_of(int fd, char *buf, size_t len)
{
	off_t size = lseek(fd, 0, SEEK_END);
	off_t from = size > TAIL_BYTES ? size - TAIL_BYTES : 0;
	ssize_t n =
	    size > 0 ? pread(fd, buf, len - 1 < TAIL_BYTES ? len - 1 : TAIL_BYTES, from) : 0;
	buf[n > 0 ? n : 0] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	for (char *c = buf; *c; c++)
		if (*c == '\n')
			*c = ' ';
		else if ((unsigned char)*c < ' ')
			*c = ' ';
}

/* Run argv as root in the install sandbox. Its stdout, when out is given, lands there
 * (trimmed); a non-zero exit fails with what ran and the tail of its stderr. */
static int step(sl_ctx *ctx, const sl_sandbox *sb, const char *what, char *const *argv,
		const char *const *env, char *out, size_t outlen, sl_err *err)
{
	_cleanup_close_ int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	_cleanup_close_ int ofd = memfd_create("sandlot-install-out", MFD_CLOEXEC);
	_cleanup_close_ int efd = memfd_create("sandlot-install-err", MFD_CLOEXEC);
	if (nul < 0 || ofd < 0 || efd < 0)
		return sl_sysfail(err, "packages: %s: open output files", what);
	sl_spawn sp = {.argv = argv,
		       .env = env,
		       .user = "root",
		       .cwd = "/",
		       .fds = {nul, ofd, efd},
		       .exit_fd = -1,
		       .timeout_ms = STEP_TIMEOUT_MS};
	sl_proc p;
	if (sandbox_spawn(ctx, sb, &sp, &p, err) < 0) {
		if (err->kind == SL_NOTFOUND)
			return sl_fail(err, SL_INVALID, 0,
				       "packages: the image has no %s (needed for %s)", argv[0],
				       what);
		return sl_wrap(err, "packages: %s", what);
	}
	int st = 0, r = proc_wait(&p, -1, &st, err);
	proc_close(&p);
	if (r != 0)
		return sl_wrap(err, "packages: %s", what);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		char tail[TAIL_BYTES + 1];
		tail_of(efd, tail, sizeof(tail));
		if (!tail[0])
			tail_of(ofd, tail, sizeof(tail));
		char how[40];
		if (WIFEXITED(st))
			snprintf(how, sizeof(how), "exit status %d", WEXITSTATUS(st));
		else
			snprintf(how, sizeof(how), "signal %d%s", WTERMSIG(st),
				 WTERMSIG(st) == SIGKILL ? ", killed (time or memory limit)" : "");
		return sl_fail(err, SL_INVALID, 0, "packages: %s failed (%s): %s", what, how, tail);
	}
	if (out) {
		ssize_t n = pread(ofd, out, outlen - 1, 0);
		out[n > 0 ? n : 0] = '\0';
		out[strcspn(out, "\n")] = '\0';
	}
	return 0;
}

static void free_argv(char **argv);

/* argv = the fixed words, then NAME[SEP[OP]VERSION] for each package of the manager;
 * NULL when out of memory (never a shorter list). */
static char **pkg_argv(const char *const *fixed, const sl_package *p, size_t n, const char *manager,
		       const char *sep, const char *bare_op)
{
	size_t nf = 0;
	while (fixed[nf])
		nf++;
	char **argv = calloc(nf + n + 1, sizeof(char *));
	if (!argv)
		return NULL;
	size_t k = 0;
	bool ok = true;
	for (; k < nf && ok; k++)
		ok = (argv[k] = strdup(fixed[k])) != NULL;
	for (size_t i = 0; i < n && ok; i++) {
		if (strcmp(p[i].manager, manager))
			continue;
		const char *v = p[i].version;
		/* pip: a bare version means ==; a specifier is passed as given. */
		const char *op = v && bare_op && !strchr("=<>!~", v[0]) ? bare_op : "";
		if (v)
			ok = asprintf(&argv[k], "%s%s%s%s", p[i].name, sep, op, v) >= 0;
		else
			ok = (argv[k] = strdup(p[i].name)) != NULL;
		if (!ok)
			argv[k] = NULL;
		k++;
	}
	if (!ok) {
		free_argv(argv);
		return NULL;
	}
	return argv;
}

static void free_argv(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

static int install_apt(sl_ctx *ctx, const sl_sandbox *sb, const sl_package *p, size_t n,
		       sl_err *err)
{
	static const char *const env[] = {"DEBIAN_FRONTEND=noninteractive", NULL};
	const char *srcopt[5] = {NULL};
	if (ctx->cfg.apt_mirror[0]) {
		/* The configured source replaces the image's own for this install only. */
		char line[2048], codename[64] = "";
		if (strncmp(ctx->cfg.apt_mirror, "deb ", 4)) {
			_cleanup_free_ char *osr = NULL;
			sl_err e2 = {0};
			if (sbxfs_read_file(ctx, sb, "/etc/os-release", 65536, &osr, NULL, &e2) ==
			    0) {
				const char *c = strstr(osr, "VERSION_CODENAME=");
				if (c)
					sscanf(c + 17, "%63[a-z0-9-]", codename);
			}
			if (!codename[0])
				return sl_fail(err, SL_INVALID, 0,
					       "packages: the image's /etc/os-release names no "
					       "VERSION_CODENAME; give the apt mirror as a whole "
					       "\"deb URL SUITE COMPONENT\" line");
			snprintf(line, sizeof(line), "deb %s %s main\n", ctx->cfg.apt_mirror,
				 codename);
		} else {
			snprintf(line, sizeof(line), "%s\n", ctx->cfg.apt_mirror);
		}
		if (sbxfs_write_file(ctx, sb, SOURCES_FILE, line, strlen(line), 0644, err) < 0)
			return sl_wrap(err, "packages: apt sources");
		srcopt[0] = "-o";
		srcopt[1] = "Dir::Etc::SourceList=" SOURCES_FILE;
		srcopt[2] = "-o";
		srcopt[3] = "Dir::Etc::SourceParts=-";
	}
	const char *upd[16] = {"apt-get", "-q"}, *ins[16] = {"apt-get", "-q"};
	size_t ku = 2, ki = 2;
	for (size_t i = 0; srcopt[i]; i++)
		upd[ku++] = ins[ki++] = srcopt[i];
	upd[ku++] = "--error-on=any";
	upd[ku++] = "update";
	ins[ki++] = "install";
	ins[ki++] = "-y";
	ins[ki++] = "--no-install-recommends";
	char **install = pkg_argv(ins, p, n, "apt", "=", NULL);
	if (!install)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "packages: apt");
	int r = step(ctx, sb, "apt-get update", (char *const *)upd, env, NULL, 0, err);
	if (r == 0)
		r = step(ctx, sb, "apt-get install", install, env, NULL, 0, err);
	free_argv(install);
	/* As the image has it: no package lists, no downloaded .debs. */
	static char *const clean[] = {
	    "sh", "-c", "apt-get clean && rm -rf /var/lib/apt/lists/* " SOURCES_FILE, NULL};
	if (r == 0)
		r = step(ctx, sb, "apt-get clean", clean, env, NULL, 0, err);
	return r;
}

static int install_pip(sl_ctx *ctx, const sl_sandbox *sb, const sl_package *p, size_t n,
		       sl_err *err)
{
	/* System-wide for every user; the image may mark Python externally managed. */
	static const char *const env[] = {
	    "PIP_BREAK_SYSTEM_PACKAGES=1", "PIP_ROOT_USER_ACTION=ignore",
	    "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1", NULL};
	const char *fixed[12] = {"python3", "-m", "pip", "install", "--no-cache-dir"};
	size_t k = 5;
	if (ctx->cfg.pip_index[0]) {
		fixed[k++] = "--index-url";
		fixed[k++] = ctx->cfg.pip_index;
	} else if (ctx->cfg.pip_wheels[0]) {
		fixed[k++] = "--no-index";
	}
	if (ctx->cfg.pip_wheels[0]) {
		fixed[k++] = "--find-links";
		fixed[k++] = WHEELS_MOUNT;
	}
	char **argv = pkg_argv(fixed, p, n, "pip", "", "==");
	if (!argv)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "packages: pip");
	int r = step(ctx, sb, "pip install", argv, env, NULL, 0, err);
	free_argv(argv);
	return r;
}

static int install_npm(sl_ctx *ctx, const sl_sandbox *sb, const sl_package *p, size_t n,
		       char *node_path, size_t len, sl_err *err)
{
	static const char *const env[] = {"NPM_CONFIG_UPDATE_NOTIFIER=false",
					  "NPM_CONFIG_FUND=false", "NPM_CONFIG_AUDIT=false", NULL};
	/* Global, as Agentuity's packages and E2B templates do; NODE_PATH (set on the
	 * sandbox) lets require() and ts-run find them from any directory. */
	const char *fixed[8] = {"npm", "install", "--global", "--no-audit", "--no-fund"};
	size_t k = 5;
	if (ctx->cfg.npm_registry[0]) {
		fixed[k++] = "--registry";
		fixed[k++] = ctx->cfg.npm_registry;
	}
	char **argv = pkg_argv(fixed, p, n, "npm", "@", NULL);
	if (!argv)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "packages: npm");
	int r = step(ctx, sb, "npm install", argv, env, NULL, 0, err);
	free_argv(argv);
	static char *const clean[] = {"npm", "cache", "clean", "--force", NULL};
	static char *const root[] = {"npm", "root", "--global", NULL};
	if (r == 0)
		r = step(ctx, sb, "npm cache clean", clean, env, NULL, 0, err);
	if (r == 0)
		r = step(ctx, sb, "npm root", root, env, node_path, len, err);
	return r;
}

/* ---- the cache ---- */

static void cache_dir(const sl_ctx *ctx, char *buf, size_t len)
{
	snprintf(buf, len, "%s/packages", ctx->cfg.state_dir);
}

static int cache_record_load(const sl_ctx *ctx, const char *key, sl_pkg_layer *out)
{
	char p[PATH_MAX];
	cache_dir(ctx, p, sizeof(p));
	snprintf(p + strlen(p), sizeof(p) - strlen(p), "/%s.json", key);
	_cleanup_free_ char *data = NULL;
	sl_err e = {0};
	if (state_read_file(p, 1 << 20, &data, NULL, &e) < 0)
		return -1;
	cJSON *o = cJSON_Parse(data);
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "key");
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "layer");
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "uidBase");
	const cJSON *np = cJSON_GetObjectItemCaseSensitive(o, "nodePath");
	int r = -1;
	if (cJSON_IsString(k) && !strcmp(k->valuestring, key) && cJSON_IsString(l) &&
	    cJSON_IsNumber(u)) {
		memset(out, 0, sizeof(*out));
		snprintf(out->id, sizeof(out->id), "%s", l->valuestring);
		out->uid_base = (uint32_t)u->valuedouble;
		snprintf(out->node_path, sizeof(out->node_path), "%s",
			 cJSON_IsString(np) ? np->valuestring : "");
		char sp[PATH_MAX];
		store_snapshot_path(&ctx->cfg, out->id, sp, sizeof(sp));
		r = access(sp, F_OK) == 0 ? 0 : -1;
	}
	cJSON_Delete(o);
	return r;
}

static int cache_record_save(const sl_ctx *ctx, const char *key, const char *digest, const sl_package *p,
		       size_t n, const sl_pkg_layer *l, sl_err *err)
{
	char path[PATH_MAX];
	cache_dir(ctx, path, sizeof(path));
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s.json", key);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "key", key);
	cJSON_AddStringToObject(o, "layer", l->id);
	cJSON_AddStringToObject(o, "imageDigest", digest);
	cJSON_AddItemToObject(o, "packages", packages_json(p, n));
	cJSON *src = cJSON_AddObjectToObject(o, "sources");
	cJSON_AddStringToObject(src, "aptMirror", ctx->cfg.apt_mirror);
	cJSON_AddStringToObject(src, "pipIndex", ctx->cfg.pip_index);
	cJSON_AddStringToObject(src, "pipWheels", ctx->cfg.pip_wheels);
	cJSON_AddStringToObject(src, "npmRegistry", ctx->cfg.npm_registry);
	cJSON_AddNumberToObject(o, "uidBase", l->uid_base);
	cJSON_AddStringToObject(o, "nodePath", l->node_path);
	cJSON_AddNumberToObject(o, "createdMs", (double)sl_now_ms());
	cJSON_AddNumberToObject(o, "buildMs", (double)l->build_ms);
	_cleanup_free_ char *txt = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return txt ? state_write_atomic(path, txt, strlen(txt), err)
		   : sl_fail(err, SL_INTERNAL, ENOMEM, "packages: serialise the cache record");
}

/* ---- the mirrors' addresses ---- */

#define MAX_MIRROR_ADDRS 16

/* The host of the first URL in SRC ("http://10.0.0.5:3142/debian", or an apt line
 * "deb [trusted=yes] http://mirror.lan/debian bookworm main"); false if none. */
static bool url_host(const char *src, char *host, size_t len)
{
	const char *p = strstr(src, "://");
	if (!p || p[3] == '[') /* IPv6 literals: sandboxes have no IPv6 route */
		return false;
	p += 3;
	const char *at = memchr(p, '@', strcspn(p, "/ ")); /* user:password@host */
	if (at)
		p = at + 1;
	size_t n = strcspn(p, ":/ ");
	if (n == 0 || n >= len)
		return false;
	memcpy(host, p, n);
	host[n] = '\0';
	return true;
}

/* The private addresses of the configured mirrors (apt, pip, npm), opened to the install
 * sandbox alone (docs/network.md, "Private ranges"): a literal address as it is, a name
 * as the host resolves it now. Public ones need nothing; link-local stays closed. */
static size_t mirror_addrs(const sl_config *cfg, char out[][24], size_t max)
{
	const char *srcs[] = {cfg->apt_mirror, cfg->pip_index, cfg->npm_registry};
	const sl_cidr *linklocal = &net_private_ranges[net_private_nranges - 1];
	size_t n = 0;
	for (size_t i = 0; i < sizeof(srcs) / sizeof(srcs[0]); i++) {
		char host[256];
		if (!srcs[i][0] || !url_host(srcs[i], host, sizeof(host)))
			continue;
		struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
		int r = getaddrinfo(host, NULL, &hints, &ai);
		if (r != 0) {
			sl_log(SL_LOG_WARN, "packages: mirror %s: %s (not opened to the install)",
			       host, gai_strerror(r));
			continue;
		}
		for (struct addrinfo *a = ai; a && n < max; a = a->ai_next) {
			sl_cidr c = {ntohl(((struct sockaddr_in *)a->ai_addr)->sin_addr.s_addr),
				     32};
			if (net_private_named(&c) && !cidr_inside(&c, linklocal))
				cidr_format(&c, out[n++], 24);
		}
		freeaddrinfo(ai);
	}
	return n;
}

/* The install sandbox: root, the image's files, a network only when a source needs
 * one (a wheel directory is mounted read-only and needs none). */
static int build(sl_ctx *ctx, const char *key, const char *digest, const sl_package *p, size_t n,
		 uint64_t disk, sl_pkg_layer *out, sl_err *err)
{
	int64_t t0 = sl_now_ms();
	bool pip_offline = ctx->cfg.pip_wheels[0] && !ctx->cfg.pip_index[0];
	sl_volume_spec wheels = {ctx->cfg.pip_wheels, WHEELS_MOUNT, true};
	char label[96];
	snprintf(label, sizeof(label), "sandlot.packages=%.16s", key);
	const char *labels[] = {label, NULL};
	sl_create_opts co = {.image = digest,
			     .user = "root",
			     .workdir = "/",
			     .disk = disk,
			     .labels = labels,
			     .ephemeral = true};
	co.net.enabled =
	    uses(p, n, "apt") || uses(p, n, "npm") || (uses(p, n, "pip") && !pip_offline);
	char mirrors[MAX_MIRROR_ADDRS][24];
	const char *open[MAX_MIRROR_ADDRS + 1] = {NULL};
	size_t nm = co.net.enabled ? mirror_addrs(&ctx->cfg, mirrors, MAX_MIRROR_ADDRS) : 0;
	for (size_t i = 0; i < nm; i++)
		open[i] = mirrors[i];
	co.net.open = open;
	if (uses(p, n, "pip") && ctx->cfg.pip_wheels[0]) {
		co.host_binds = &wheels;
		co.nhost_binds = 1;
	}
	sl_sandbox sb;
	if (sandbox_create(ctx, &co, &sb, err) < 0)
		return sl_wrap(err, "packages: start the install sandbox");
	memset(out, 0, sizeof(*out));
	int r = 0;
	if (uses(p, n, "apt"))
		r = install_apt(ctx, &sb, p, n, err);
	if (r == 0 && uses(p, n, "pip"))
		r = install_pip(ctx, &sb, p, n, err);
	if (r == 0 && uses(p, n, "npm"))
		r = install_npm(ctx, &sb, p, n, out->node_path, sizeof(out->node_path), err);
	/* Stopped, nothing writes while the layer is captured. */
	if (r == 0)
		r = sandbox_stop(ctx, sb.id, 0, NULL, err);
	if (r == 0) {
		snprintf(out->id, sizeof(out->id), "pkg_%.24s", key);
		out->uid_base = sb.uid_base;
		sl_err e2 = {0};
		store_snapshot_destroy(&ctx->cfg, out->id, &e2); /* a crashed build's */
		r = store_snapshot_create(&ctx->cfg, sb.id, out->id, err);
	}
	if (r == 0) {
		out->built = true;
		out->build_ms = sl_now_ms() - t0;
		if (cache_record_save(ctx, key, digest, p, n, out, err) < 0) {
			store_snapshot_destroy(&ctx->cfg, out->id, NULL);
			r = -1;
		}
	}
	sl_err e3 = {0};
	if (sandbox_discard(ctx, sb.id, &e3) < 0)
		sl_log(SL_LOG_WARN, "packages: remove install sandbox %s: %s", sb.id, e3.msg);
	sandbox_free(&sb);
	return r;
}

/* An exclusive lock on PATH that its holder unlinks before closing, so no lock file
 * outlives its use: a waiter that wakes on an unlinked file opens the path again. */
static int key_lock(const char *path, bool wait, sl_err *err)
{
	for (;;) {
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return sl_sysfail(err, "lock %s", path);
		int r;
		while ((r = flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB))) < 0 && errno == EINTR)
			;
		if (r < 0 && errno == EWOULDBLOCK) {
			close(fd); /* busy: its holder is using the entry */
			return sl_fail(err, SL_CONFLICT, EWOULDBLOCK, "lock %s", path);
		}
		struct stat a, b;
		if (r == 0 && fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino)
			return fd;
		int e = errno;
		close(fd);
		if (r < 0)
			return sl_fail(err, SL_INTERNAL, e, "lock %s", path);
	}
}

/* Drop the cache entries whose image is gone (`image rm`): no create can use them.
 * An entry whose lock is held (being built or pruned) is left alone. */
static void prune_dead_images(sl_ctx *ctx)
{
	char dir[PATH_MAX];
	cache_dir(ctx, dir, sizeof(dir));
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len != 64 + 5 || strcmp(e->d_name + 64, ".json"))
			continue;
		char path[PATH_MAX], img[PATH_MAX], lockp[PATH_MAX], key[65];
		snprintf(key, sizeof(key), "%.64s", e->d_name);
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		_cleanup_free_ char *data = NULL;
		sl_err e2 = {0};
		if (state_read_file(path, 1 << 20, &data, NULL, &e2) < 0)
			continue;
		cJSON *o = cJSON_Parse(data);
		const cJSON *dg = cJSON_GetObjectItemCaseSensitive(o, "imageDigest");
		const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "layer");
		if (cJSON_IsString(dg) && cJSON_IsString(l) &&
		    image_layer_path(ctx->cfg.state_dir, dg->valuestring, img, sizeof(img)) == 0 &&
		    access(img, F_OK) < 0 && errno == ENOENT) {
			snprintf(lockp, sizeof(lockp), "%s/packages/%s.lock", ctx->cfg.run_dir,
				 key);
			int lk = key_lock(lockp, false, &e2);
			if (lk >= 0) {
				unlink(path);
				store_snapshot_destroy(&ctx->cfg, l->valuestring, &e2);
				unlink(lockp);
				close(lk);
			}
		}
		cJSON_Delete(o);
	}
}

int packages_layer(sl_ctx *ctx, const char *digest, const sl_package *p, size_t n, uint64_t disk,
		   sl_pkg_layer *out, sl_err *err)
{
	if (packages_validate(p, n, err) < 0 || packages_check_sources(&ctx->cfg, err) < 0)
		return -1;
	sl_package *sorted = calloc(n ? n : 1, sizeof(*sorted));
	if (!sorted)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "packages");
	memcpy(sorted, p, n * sizeof(*p));
	qsort(sorted, n, sizeof(*sorted), cmp_pkg);
	size_t m = 0; /* drop exact repeats */
	for (size_t i = 0; i < n; i++)
		if (!m || cmp_pkg(&sorted[m - 1], &sorted[i]))
			sorted[m++] = sorted[i];
	char key[65], dir[PATH_MAX], lockp[PATH_MAX];
	int r = cache_key(&ctx->cfg, digest, sorted, m, key, err);
	cache_dir(ctx, dir, sizeof(dir));
	/* Lock files in the run dir: a failed build leaves nothing in the state dir. */
	snprintf(lockp, sizeof(lockp), "%s/packages", ctx->cfg.run_dir);
	if (r == 0)
		r = state_mkdirs(dir, 0700, err);
	if (r == 0)
		r = state_mkdirs(lockp, 0700, err);
	snprintf(lockp + strlen(lockp), sizeof(lockp) - strlen(lockp), "/%s.lock", key);
	/* One build per key: the others wait here and then find its record. */
	int lk = r == 0 ? key_lock(lockp, true, err) : -1;
	if (r == 0 && lk < 0)
		r = -1;
	if (r == 0 && cache_record_load(ctx, key, out) < 0) {
		prune_dead_images(ctx);
		r = build(ctx, key, digest, sorted, m, disk, out, err);
	}
	if (lk >= 0) {
		unlink(lockp);
		close(lk);
	}
	free(sorted);
	return r;
}
