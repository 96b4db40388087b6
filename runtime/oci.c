/* oci.c — reading the JSON of container image archives (OCI layout, docker save) and
 * OCI whiteout names. Everything here is hostile input: each field is type- and size-checked. */
#include "oci.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OCI_MAX_STRV	4096	  /* Env, Cmd, Entrypoint entries, labels, ports */
#define OCI_MAX_STR	(64 << 10) /* one such string */

bool oci_digest_ok(const char *d)
{
	if (!d || strncmp(d, "sha256:", 7) || strlen(d) != 71)
		return false;
	for (const char *c = d + 7; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
			return false;
	return true;
}

static cJSON *oci_parse_object(const char *text, size_t len, const char *what, sl_err *err)
{
	if (len > OCI_JSON_MAX) {
		sl_fail(err, SL_TOOLARGE, 0, "%s is %zu bytes, over %d", what, len, OCI_JSON_MAX);
		return NULL;
	}
	cJSON *o = cJSON_ParseWithLength(text, len);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		sl_fail(err, SL_INVALID, 0, "%s is not a JSON object", what);
		return NULL;
	}
	return o;
}

static const char *oci_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A descriptor {mediaType, digest, size, platform?}; WHAT names it in errors. */
static int oci_desc(const cJSON *o, const char *what, sl_oci_desc *d, sl_err *err)
{
	*d = (sl_oci_desc){0};
	if (!cJSON_IsObject(o))
		return sl_fail(err, SL_INVALID, 0, "%s is not an object", what);
	const char *mt = oci_str(o, "mediaType");
	const char *dg = oci_str(o, "digest");
	const cJSON *sz = cJSON_GetObjectItemCaseSensitive(o, "size");
	if (!dg || !oci_digest_ok(dg))
		return sl_fail(err, SL_INVALID, 0,
			       "%s: digest '%.80s' is not sha256:<64 hex digits> (the only "
			       "algorithm taken)",
			       what, dg ? dg : "");
	if (!cJSON_IsNumber(sz) || sz->valuedouble < 0 || sz->valuedouble > 1e15)
		return sl_fail(err, SL_INVALID, 0, "%s: size is missing or not a size", what);
	if (mt && strlen(mt) >= sizeof(d->media_type))
		return sl_fail(err, SL_INVALID, 0, "%s: mediaType too long", what);
	snprintf(d->media_type, sizeof(d->media_type), "%s", mt ? mt : "");
	snprintf(d->digest, sizeof(d->digest), "%s", dg);
	d->size = (int64_t)sz->valuedouble;
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "platform");
	if (cJSON_IsObject(p)) {
		const char *os = oci_str(p, "os"), *arch = oci_str(p, "architecture");
		const char *var = oci_str(p, "variant");
		if (!os || !arch || strlen(os) > 20 || strlen(arch) > 20 ||
		    (var && strlen(var) > 20))
			return sl_fail(err, SL_INVALID, 0, "%s: platform needs os and architecture",
				       what);
		snprintf(d->platform, sizeof(d->platform), "%s/%s%s%s", os, arch,
			 var ? "/" : "", var ? var : "");
	}
	return 0;
}

bool oci_is_index(const char *mt)
{
	return !strcmp(mt, "application/vnd.oci.image.index.v1+json") ||
	       !strcmp(mt, "application/vnd.docker.distribution.manifest.list.v2+json");
}

/* "linux/amd64" taken by "linux/amd64/v2"-less WANT: the variant is not compared. */
static bool oci_platform_is(const char *have, const char *want)
{
	size_t n = strlen(want);
	return !strncmp(have, want, n) && (have[n] == '\0' || have[n] == '/');
}

int oci_index_pick(const char *text, size_t len, const char *want, sl_oci_desc *out,
		   char *picked, size_t picked_len, sl_err *err)
{
	cJSON *o = oci_parse_object(text, len, "the image index", err);
	if (!o)
		return -1;
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(o, "manifests");
	int n = cJSON_IsArray(ms) ? cJSON_GetArraySize(ms) : -1;
	int rc = 0, hits = 0;
	char have[512] = "";
	if (n <= 0 || n > 1024) {
		rc = sl_fail(err, SL_INVALID, 0,
			     "the image index lists no manifests (or more than 1024)");
		goto out;
	}
	for (int i = 0; i < n && rc == 0; i++) {
		char what[48];
		sl_oci_desc d;
		snprintf(what, sizeof(what), "the image index's manifests[%d]", i);
		if (oci_desc(cJSON_GetArrayItem(ms, i), what, &d, err) < 0) {
			rc = -1;
			break;
		}
		/* Attestations and signatures ride in indexes as "unknown/unknown". */
		if (!strcmp(d.platform, "unknown/unknown"))
			continue;
		size_t hl = strlen(have);
		if (d.platform[0] && !strstr(have, d.platform) && hl + strlen(d.platform) + 3 < sizeof(have))
			snprintf(have + hl, sizeof(have) - hl, "%s%s", hl ? ", " : "", d.platform);
		bool match = d.platform[0] ? oci_platform_is(d.platform, want) : n == 1;
		if (match && !hits++)
			*out = d;
	}
	if (rc == 0 && !hits)
		rc = sl_fail(err, SL_INVALID, 0,
			     "the image has no %s manifest (it has: %s); this host runs %s images "
			     "only",
			     want, have[0] ? have : "none with a platform", want);
	if (rc == 0 && picked)
		snprintf(picked, picked_len, "%s (of %d manifest%s: %s)",
			 out->platform[0] ? out->platform : want, n, n == 1 ? "" : "s",
			 have[0] ? have : "no platform named");
out:
	cJSON_Delete(o);
	return rc;
}

static bool oci_layer_type_ok(const char *mt)
{
	static const char *const ok[] = {
	    "application/vnd.oci.image.layer.v1.tar",
	    "application/vnd.oci.image.layer.v1.tar+gzip",
	    "application/vnd.oci.image.layer.v1.tar+zstd",
	    "application/vnd.docker.image.rootfs.diff.tar",
	    "application/vnd.docker.image.rootfs.diff.tar.gzip",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(mt, ok[i]))
			return true;
	return false;
}

int oci_manifest_parse(const char *text, size_t len, sl_oci_desc *config, sl_oci_desc **layers,
		       size_t *n, sl_err *err)
{
	*layers = NULL;
	*n = 0;
	cJSON *o = oci_parse_object(text, len, "the image manifest", err);
	if (!o)
		return -1;
	int rc = -1;
	const cJSON *sv = cJSON_GetObjectItemCaseSensitive(o, "schemaVersion");
	const cJSON *ls = cJSON_GetObjectItemCaseSensitive(o, "layers");
	const char *mt = oci_str(o, "mediaType");
	int cnt = cJSON_IsArray(ls) ? cJSON_GetArraySize(ls) : -1;
	sl_oci_desc *v = NULL;
	if (!cJSON_IsNumber(sv) || sv->valuedouble != 2) {
		sl_fail(err, SL_INVALID, 0, "the image manifest is not schemaVersion 2");
		goto out;
	}
	if (mt && oci_is_index(mt)) {
		sl_fail(err, SL_INVALID, 0, "expected an image manifest, found an index (%s)", mt);
		goto out;
	}
	if (oci_desc(cJSON_GetObjectItemCaseSensitive(o, "config"), "the manifest's config",
		     config, err) < 0)
		goto out;
	if (cnt < 0 || cnt > OCI_MAX_LAYERS) {
		sl_fail(err, SL_INVALID, 0, "the image manifest has no layers array, or more than %d "
			"layers", OCI_MAX_LAYERS);
		goto out;
	}
	v = calloc(cnt ? (size_t)cnt : 1, sizeof(*v));
	if (!v) {
		sl_fail(err, SL_EXHAUSTED, ENOMEM, "image manifest");
		goto out;
	}
	for (int i = 0; i < cnt; i++) {
		char what[40];
		snprintf(what, sizeof(what), "layer %d of the manifest", i + 1);
		if (oci_desc(cJSON_GetArrayItem(ls, i), what, &v[i], err) < 0)
			goto out;
		if (!oci_layer_type_ok(v[i].media_type)) {
			sl_fail(err, SL_INVALID, 0,
				"%s (%.19s): media type '%s' is not a tar, tar+gzip or tar+zstd "
				"layer",
				what, v[i].digest, v[i].media_type);
			goto out;
		}
	}
	*layers = v;
	*n = (size_t)cnt;
	v = NULL;
	rc = 0;
out:
	free(v);
	cJSON_Delete(o);
	return rc;
}

void oci_strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

/* A path inside the archive, as docker's manifest.json names its files. */
static bool oci_rel_path_ok(const char *p)
{
	if (!p[0] || p[0] == '/' || strlen(p) > 1024)
		return false;
	for (const char *c = p; *c;) {
		const char *s = strchrnul(c, '/');
		if (s - c == 2 && c[0] == '.' && c[1] == '.')
			return false;
		c = *s ? s + 1 : s;
	}
	return true;
}

int oci_docker_manifest_parse(const char *text, size_t len, char **config_path,
			      char ***layer_paths, size_t *n, sl_err *err)
{
	*config_path = NULL;
	*layer_paths = NULL;
	*n = 0;
	if (len > OCI_JSON_MAX)
		return sl_fail(err, SL_TOOLARGE, 0, "manifest.json is over %d bytes", OCI_JSON_MAX);
	cJSON *a = cJSON_ParseWithLength(text, len);
	int rc = -1;
	if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 1) {
		sl_fail(err, SL_INVALID, 0,
			"manifest.json must list exactly one image (docker save one image per "
			"archive)");
		goto out;
	}
	const cJSON *m = cJSON_GetArrayItem(a, 0);
	const char *cfg = oci_str(m, "Config");
	const cJSON *ls = cJSON_GetObjectItemCaseSensitive(m, "Layers");
	int cnt = cJSON_IsArray(ls) ? cJSON_GetArraySize(ls) : -1;
	if (!cfg || !oci_rel_path_ok(cfg)) {
		sl_fail(err, SL_INVALID, 0, "manifest.json: Config must be a relative path in the "
			"archive");
		goto out;
	}
	if (cnt < 0 || cnt > OCI_MAX_LAYERS) {
		sl_fail(err, SL_INVALID, 0, "manifest.json: Layers must be an array of at most %d",
			OCI_MAX_LAYERS);
		goto out;
	}
	char **v = calloc(cnt ? (size_t)cnt : 1, sizeof(*v));
	if (!v) {
		sl_fail(err, SL_EXHAUSTED, ENOMEM, "manifest.json");
		goto out;
	}
	for (int i = 0; i < cnt; i++) {
		const cJSON *l = cJSON_GetArrayItem(ls, i);
		if (!cJSON_IsString(l) || !oci_rel_path_ok(l->valuestring) ||
		    !(v[i] = strdup(l->valuestring))) {
			oci_strv_free(v, (size_t)i);
			sl_fail(err, SL_INVALID, 0,
				"manifest.json: Layers[%d] must be a relative path in the archive",
				i);
			goto out;
		}
	}
	if (!(*config_path = strdup(cfg))) {
		oci_strv_free(v, (size_t)cnt);
		sl_fail(err, SL_EXHAUSTED, ENOMEM, "manifest.json");
		goto out;
	}
	*layer_paths = v;
	*n = (size_t)cnt;
	rc = 0;
out:
	cJSON_Delete(a);
	return rc;
}

static bool oci_text_ok(const char *s, bool allow_newline)
{
	size_t n = strlen(s);
	if (n > OCI_MAX_STR)
		return false;
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] < 0x20 && !(allow_newline && (s[i] == '\n' || s[i] == '\t'))) ||
		    s[i] == 0x7f)
			return false;
	return true;
}

/* A string array (or null/absent: NULL kept as JSON null when KEEP_NULL) copied in. */
static int oci_strv(const cJSON *cfg, const char *key, const char *name, cJSON *out,
		    bool keep_null, sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
	if (!v || cJSON_IsNull(v)) {
		if (keep_null)
			cJSON_AddNullToObject(out, name);
		else
			cJSON_AddArrayToObject(out, name);
		return 0;
	}
	int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : -1;
	if (n < 0 || n > OCI_MAX_STRV)
		return sl_fail(err, SL_INVALID, 0,
			       "image config: %s must be an array of at most %d strings", key,
			       OCI_MAX_STRV);
	cJSON *a = cJSON_AddArrayToObject(out, name);
	for (int i = 0; i < n; i++) {
		const cJSON *s = cJSON_GetArrayItem(v, i);
		if (!cJSON_IsString(s) || !oci_text_ok(s->valuestring, true))
			return sl_fail(err, SL_INVALID, 0,
				       "image config: %s[%d] is not a string of printable text", key,
				       i);
		cJSON_AddItemToArray(a, cJSON_CreateString(s->valuestring));
	}
	return 0;
}

static int oci_config_fields(const cJSON *c, cJSON *out, sl_err *err)
{
	const char *user = oci_str(c, "User"), *wd = oci_str(c, "WorkingDir");
	if (user && (strlen(user) > 63 || !oci_text_ok(user, false) || strchr(user, ' ')))
		return sl_fail(err, SL_INVALID, 0,
			       "image config: User '%.80s' is not a name, uid or user:group of at "
			       "most 63 characters",
			       user);
	if (wd && wd[0] && (wd[0] != '/' || strlen(wd) > 255 || !oci_text_ok(wd, false)))
		return sl_fail(err, SL_INVALID, 0,
			       "image config: WorkingDir '%.80s' is not an absolute path under 256 "
			       "bytes",
			       wd);
	cJSON_AddStringToObject(out, "user", user ? user : "");
	cJSON_AddStringToObject(out, "workingDir", wd ? wd : "");
	if (oci_strv(c, "Env", "env", out, false, err) < 0 ||
	    oci_strv(c, "Entrypoint", "entrypoint", out, true, err) < 0 ||
	    oci_strv(c, "Cmd", "cmd", out, true, err) < 0)
		return -1;
	/* sandlot's own, as Healthcheck is docker's: an image's start and ready commands
	 * (E2B's setStartCmd/setReadyCmd; startcmd.h), shell lines, kept only when given. */
	static const char *const lines[][2] = {{"StartCmd", "startCmd"}, {"ReadyCmd", "readyCmd"}};
	for (int i = 0; i < 2; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, lines[i][0]);
		if (!v || cJSON_IsNull(v))
			continue;
		if (!cJSON_IsString(v) || !v->valuestring[0] || !oci_text_ok(v->valuestring, true))
			return sl_fail(err, SL_INVALID, 0,
				       "image config: %s is not a line of printable text",
				       lines[i][0]);
		cJSON_AddStringToObject(out, lines[i][1], v->valuestring);
	}
	cJSON *env = cJSON_GetObjectItemCaseSensitive(out, "env");
	cJSON *e;
	cJSON_ArrayForEach(e, env) if (!strchr(e->valuestring, '=') || e->valuestring[0] == '=')
		return sl_fail(err, SL_INVALID, 0, "image config: Env entry '%.80s' is not K=V",
			       e->valuestring);
	const cJSON *lb = cJSON_GetObjectItemCaseSensitive(c, "Labels");
	cJSON *labels = cJSON_AddObjectToObject(out, "labels");
	if (lb && !cJSON_IsNull(lb)) {
		if (!cJSON_IsObject(lb) || cJSON_GetArraySize(lb) > OCI_MAX_STRV)
			return sl_fail(err, SL_INVALID, 0, "image config: Labels must be an object "
				       "of strings");
		const cJSON *l;
		cJSON_ArrayForEach(l, lb)
		{
			if (!cJSON_IsString(l) || !oci_text_ok(l->string, false) ||
			    !oci_text_ok(l->valuestring, true))
				return sl_fail(err, SL_INVALID, 0,
					       "image config: label '%.80s' is not a string", l->string);
			cJSON_AddStringToObject(labels, l->string, l->valuestring);
		}
	}
	const cJSON *ep = cJSON_GetObjectItemCaseSensitive(c, "ExposedPorts");
	cJSON *ports = cJSON_AddArrayToObject(out, "exposedPorts");
	if (ep && !cJSON_IsNull(ep)) {
		if (!cJSON_IsObject(ep) || cJSON_GetArraySize(ep) > OCI_MAX_STRV)
			return sl_fail(err, SL_INVALID, 0,
				       "image config: ExposedPorts must be an object");
		const cJSON *p;
		cJSON_ArrayForEach(p, ep)
		{
			char *end;
			long port = strtol(p->string, &end, 10);
			if (port < 1 || port > 65535 ||
			    (*end && strcmp(end, "/tcp") && strcmp(end, "/udp") && strcmp(end, "/sctp")))
				return sl_fail(err, SL_INVALID, 0,
					       "image config: exposed port '%.40s' is not PORT[/tcp|udp]",
					       p->string);
			cJSON_AddItemToArray(ports, cJSON_CreateString(p->string));
		}
	}
	return 0;
}

int oci_config_parse(const char *text, size_t len, cJSON **out, sl_err *err)
{
	*out = NULL;
	cJSON *o = oci_parse_object(text, len, "the image config", err);
	if (!o)
		return -1;
	cJSON *norm = cJSON_CreateObject();
	int rc = -1;
	const char *os = oci_str(o, "os"), *arch = oci_str(o, "architecture");
	const char *var = oci_str(o, "variant");
	const cJSON *rootfs = cJSON_GetObjectItemCaseSensitive(o, "rootfs");
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(rootfs, "diff_ids");
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "config");
	int n = cJSON_IsArray(ids) ? cJSON_GetArraySize(ids) : -1;
	if (!os || !arch || strlen(os) > 20 || strlen(arch) > 20 || (var && strlen(var) > 20)) {
		sl_fail(err, SL_INVALID, 0, "the image config names no os and architecture");
		goto out;
	}
	char plat[64];
	snprintf(plat, sizeof(plat), "%s/%s%s%s", os, arch, var ? "/" : "", var ? var : "");
	cJSON_AddStringToObject(norm, "platform", plat);
	if (n < 0 || n > OCI_MAX_LAYERS) {
		sl_fail(err, SL_INVALID, 0, "the image config has no rootfs.diff_ids (or over %d)",
			OCI_MAX_LAYERS);
		goto out;
	}
	if (c && !cJSON_IsNull(c) && !cJSON_IsObject(c)) {
		sl_fail(err, SL_INVALID, 0, "the image config's \"config\" is not an object");
		goto out;
	}
	if (oci_config_fields(cJSON_IsObject(c) ? c : NULL, norm, err) < 0)
		goto out;
	cJSON *dv = cJSON_AddArrayToObject(norm, "diffIds");
	for (int i = 0; i < n; i++) {
		const cJSON *d = cJSON_GetArrayItem(ids, i);
		if (!cJSON_IsString(d) || !oci_digest_ok(d->valuestring)) {
			sl_fail(err, SL_INVALID, 0,
				"the image config's diff_ids[%d] is not a sha256 digest", i);
			goto out;
		}
		cJSON_AddItemToArray(dv, cJSON_CreateString(d->valuestring));
	}
	*out = norm;
	norm = NULL;
	rc = 0;
out:
	cJSON_Delete(norm);
	cJSON_Delete(o);
	return rc;
}

enum oci_wh oci_whiteout_kind(const char *name, const char **target)
{
	if (strncmp(name, ".wh.", 4))
		return OCI_WH_NONE;
	const char *t = name + 4;
	if (!strcmp(t, ".wh..opq"))
		return OCI_WH_OPAQUE;
	if (!strncmp(t, ".wh.", 4))
		return OCI_WH_META;
	if (!t[0] || !strcmp(t, ".") || !strcmp(t, ".."))
		return OCI_WH_INVALID;
	if (target)
		*target = t;
	return OCI_WH_FILE;
}
