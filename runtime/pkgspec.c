/* pkgspec.c — packages as a create names them: each name and version checked as its
 * manager allows (nothing a shell or an option parser could take for more), the list as
 * a record keeps it, and the sources configured at serve. No sandbox is touched here. */
#include "pkgspec.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- names and versions ---- */

static bool alnum_lc(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c)
{
	return alnum_lc(c) || (c >= 'A' && c <= 'Z');
}

static bool all_in(const char *s, const char *extra, bool upper)
{
	for (; *s; s++)
		if (!(upper ? alnum(*s) : alnum_lc(*s)) && !strchr(extra, *s))
			return false;
	return true;
}

/* Debian policy 5.6.1: [a-z0-9][a-z0-9+.-]+, and apt's NAME:ARCH. */
static bool apt_name_ok(const char *s)
{
	char name[256];
	const char *colon = strchr(s, ':');
	size_t len = colon ? (size_t)(colon - s) : strlen(s);
	if (len < 2 || len >= sizeof(name))
		return false;
	snprintf(name, sizeof(name), "%.*s", (int)len, s);
	if (!alnum_lc(name[0]) || !all_in(name, "+.-", false))
		return false;
	return !colon || (colon[1] && alnum_lc(colon[1]) && all_in(colon + 1, "-", false));
}

/* Debian policy 5.6.12: [epoch:]upstream[-revision], starting with a digit. */
static bool apt_version_ok(const char *v)
{
	return v[0] >= '0' && v[0] <= '9' && all_in(v, ".+~:-", true);
}

/* PEP 508 names: letters, digits, . _ -, starting and ending with a letter or digit. */
static bool pip_name_ok(const char *s)
{
	size_t len = strlen(s);
	return len && alnum(s[0]) && alnum(s[len - 1]) && all_in(s, "._-", true);
}

/* PEP 440 versions, bare ("2.31": ==2.31) or with specifiers (">=2,<3", "~=2.0"). */
static bool pip_version_ok(const char *v)
{
	return v[0] != '-' && all_in(v, ".*+!_=<>~,-", true) && strpbrk(v, "0123456789");
}

/* npm: [@scope/]name, lowercase URL-safe characters, not starting with . or _. */
static bool npm_name_ok(const char *s)
{
	const char *name = s;
	if (s[0] == '@') {
		const char *slash = strchr(s, '/');
		if (!slash || slash == s + 1)
			return false;
		char scope[256];
		snprintf(scope, sizeof(scope), "%.*s", (int)(slash - s - 1), s + 1);
		if (!alnum_lc(scope[0]) || !all_in(scope, "._~-", false))
			return false;
		name = slash + 1;
	}
	return name[0] && (alnum_lc(name[0])) && all_in(name, "._~-", false) && strlen(s) <= 214;
}

/* npm versions, ranges without spaces and dist-tags: "1.2.3", "^1.2", ">=1", "latest". */
static bool npm_version_ok(const char *v)
{
	return alnum(v[0]) || strchr("^~<>=*", v[0]) ? all_in(v, ".^~<>=*+|_-", true) : false;
}

int packages_validate(const sl_package *p, size_t n, sl_err *err)
{
	if (n > SL_MAX_PACKAGES)
		return sl_fail(err, SL_INVALID, 0, "packages: at most %d", SL_MAX_PACKAGES);
	for (size_t i = 0; i < n; i++) {
		const char *m = p[i].manager ? p[i].manager : "",
			   *name = p[i].name ? p[i].name : "";
		const char *v = p[i].version;
		bool name_ok, ver_ok = true;
		if (strlen(name) > 214 || (v && strlen(v) > 128))
			return sl_fail(err, SL_INVALID, 0,
				       "packages[%zu]: name or version too long", i);
		if (!strcmp(m, "apt")) {
			name_ok = apt_name_ok(name);
			ver_ok = !v || apt_version_ok(v);
		} else if (!strcmp(m, "pip")) {
			name_ok = pip_name_ok(name);
			ver_ok = !v || pip_version_ok(v);
		} else if (!strcmp(m, "npm")) {
			name_ok = npm_name_ok(name);
			ver_ok = !v || npm_version_ok(v);
		} else {
			return sl_fail(err, SL_INVALID, 0,
				       "packages[%zu].manager: \"%s\" is not one of apt, pip, npm",
				       i, m);
		}
		if (!name_ok)
			return sl_fail(err, SL_INVALID, 0,
				       "packages[%zu].name: \"%s\" is not a valid %s package name",
				       i, name, m);
		if (!ver_ok || (v && !*v))
			return sl_fail(err, SL_INVALID, 0,
				       "packages[%zu].version: \"%s\" is not a valid %s version", i,
				       v, m);
	}
	return 0;
}

cJSON *packages_json(const sl_package *p, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", p[i].name);
		if (p[i].version)
			cJSON_AddStringToObject(o, "version", p[i].version);
		cJSON_AddStringToObject(o, "manager", p[i].manager);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

/* ---- sources ---- */

static bool url_ok(const char *u)
{
	if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8))
		return false;
	for (; *u; u++)
		if ((unsigned char)*u <= ' ' || *u == 0x7f || strchr("\"'`\\$;|&<>", *u))
			return false;
	return true;
}

/* The apt source: a mirror URL (Debian layout: dists/<codename>/main), or a whole
 * one-line entry "deb [options] URL SUITE [COMPONENT...]" for other layouts. */
static bool apt_source_ok(const char *s)
{
	if (strncmp(s, "deb ", 4))
		return url_ok(s);
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c < ' ' || *c == 0x7f)
			return false;
	return true;
}

int packages_check_sources(sl_config *cfg, sl_err *err)
{
	if (cfg->apt_mirror[0] && !apt_source_ok(cfg->apt_mirror))
		return sl_fail(err, SL_INVALID, 0,
			       "apt mirror \"%s\": give an http(s) URL of a Debian mirror, or a "
			       "one-line \"deb [options] URL SUITE [COMPONENT...]\" entry",
			       cfg->apt_mirror);
	if (cfg->pip_index[0] && !url_ok(cfg->pip_index))
		return sl_fail(err, SL_INVALID, 0, "pip index \"%s\": give an http(s) URL",
			       cfg->pip_index);
	if (cfg->npm_registry[0] && !url_ok(cfg->npm_registry))
		return sl_fail(err, SL_INVALID, 0, "npm registry \"%s\": give an http(s) URL",
			       cfg->npm_registry);
	if (cfg->pip_wheels[0]) {
		char *real = realpath(cfg->pip_wheels, NULL);
		struct stat st;
		if (!real || stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
			free(real);
			return sl_fail(err, SL_INVALID, errno ? errno : ENOTDIR,
				       "pip wheel directory %s", cfg->pip_wheels);
		}
		snprintf(cfg->pip_wheels, sizeof(cfg->pip_wheels), "%s", real);
		free(real);
	}
	return 0;
}
