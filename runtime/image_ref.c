/* image_ref.c — Docker-style image references taken apart, and which registry hosts may
 * be spoken to in plain http. No I/O: unit-tested in tests/unit/test_image.c. */
#include "pull.h"

#include "oci.h"

#include <stdio.h>
#include <string.h>

static bool ref_component_ok(const char *s, size_t n)
{
	if (!n || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

bool image_ref_domain_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 253)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '-' || s[i] == ':'))
			return false;
	const char *port = strchr(s, ':');
	if (port && (!port[1] || strspn(port + 1, "0123456789") != strlen(port + 1)))
		return false; /* host:port, the port digits */
	return s[0] != '.' && s[0] != '-' && s[0] != ':';
}

int image_ref_parse(const char *ref, sl_image_ref *out, sl_err *err)
{
	memset(out, 0, sizeof(*out));
	char s[512];
	if (!ref || !ref[0] || strlen(ref) >= sizeof(s))
		return sl_fail(err, SL_INVALID, 0, "image reference '%.80s' is empty or too long",
			       ref ? ref : "");
	snprintf(s, sizeof(s), "%s", ref);
	char *at = strchr(s, '@');
	if (at) {
		*at = '\0';
		if (!oci_digest_ok(at + 1))
			return sl_fail(
			    err, SL_INVALID, 0,
			    "image reference '%.200s': the digest must be sha256: and 64 "
			    "lowercase hex digits",
			    ref);
		snprintf(out->digest, sizeof(out->digest), "%s", at + 1);
	}
	char *slash = strrchr(s, '/'), *colon = strrchr(s, ':');
	if (colon && (!slash || colon > slash)) {
		*colon = '\0';
		const char *t = colon + 1;
		size_t n = strlen(t);
		bool ok = n >= 1 && n <= 128 && t[0] != '.' && t[0] != '-';
		for (size_t i = 0; ok && i < n; i++)
			ok = (t[i] >= 'a' && t[i] <= 'z') || (t[i] >= 'A' && t[i] <= 'Z') ||
			     (t[i] >= '0' && t[i] <= '9') || t[i] == '.' || t[i] == '_' ||
			     t[i] == '-';
		if (!ok)
			return sl_fail(
			    err, SL_INVALID, 0,
			    "image reference '%.200s': the tag '%.130s' must be 1-128 of "
			    "A-Z a-z 0-9 _ . -, not starting with . or -",
			    ref, t);
		snprintf(out->tag, sizeof(out->tag), "%s", t);
	}
	const char *path = s;
	char *first = strchr(s, '/');
	if (first && (memchr(s, '.', (size_t)(first - s)) || memchr(s, ':', (size_t)(first - s)) ||
		      !strncmp(s, "localhost/", 10))) {
		*first = '\0';
		if (!image_ref_domain_ok(s))
			return sl_fail(err, SL_INVALID, 0,
				       "image reference '%.200s': '%.100s' is not a registry host",
				       ref, s);
		snprintf(out->domain, sizeof(out->domain), "%s", s);
		for (char *c = out->domain; *c; c++) /* host names are case-blind; names are not */
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		path = first + 1;
	} else {
		snprintf(out->domain, sizeof(out->domain), "docker.io");
	}
	if (!strcmp(out->domain, "index.docker.io") || !strcmp(out->domain, "registry-1.docker.io"))
		snprintf(out->domain, sizeof(out->domain), "docker.io");
	for (const char *p = path;;) {
		size_t n = strcspn(p, "/");
		if (!ref_component_ok(p, n))
			return sl_fail(
			    err, SL_INVALID, 0,
			    "image reference '%.200s': the repository '%.200s' must be "
			    "/-separated parts of a-z 0-9 . _ -, each starting with a letter "
			    "or digit",
			    ref, path);
		if (!p[n])
			break;
		p += n + 1;
	}
	bool hub = !strcmp(out->domain, "docker.io");
	if ((size_t)snprintf(out->repo, sizeof(out->repo), "%s%s",
			     hub && !strchr(path, '/') ? "library/" : "",
			     path) >= sizeof(out->repo))
		return sl_fail(err, SL_INVALID, 0, "image reference '%.80s' is too long", ref);
	if (!out->tag[0] && !out->digest[0])
		snprintf(out->tag, sizeof(out->tag), "latest");
	/* "library/x" reads as "x"; "library/x/y" stays (a bare "x/y" is another repo). */
	const char *shortrepo =
	    hub && !strncmp(out->repo, "library/", 8) && !strchr(out->repo + 8, '/') ? out->repo + 8
										     : out->repo;
	/* docker.io's images drop "docker.io/", unless the rest would then read as another
	 * registry ("docker.io/a.b/c" stays whole: "a.b/c" is registry a.b's "c"). */
	size_t fl = strcspn(shortrepo, "/");
	bool keep =
	    shortrepo[fl] == '/' && (memchr(shortrepo, '.', fl) || memchr(shortrepo, ':', fl) ||
				     (fl == 9 && !strncmp(shortrepo, "localhost", 9)));
	bool bare = hub && !keep;
	char name[1024];
	snprintf(name, sizeof(name), "%s%s%s%s%s%s", bare ? "" : out->domain, bare ? "" : "/",
		 bare ? shortrepo : out->repo, out->tag[0] ? ":" : "", out->tag,
		 out->digest[0] ? "@" : "");
	if (out->digest[0])
		snprintf(name + strlen(name), sizeof(name) - strlen(name), "%s", out->digest);
	snprintf(out->name, sizeof(out->name), "%.*s", IMAGE_NAME_MAX, name);
	if (strlen(name) > IMAGE_NAME_MAX || image_name_check(name, NULL) < 0)
		out->name[0] = '\0'; /* not a name (too long, "sha256:..."): the caller gives one */
	return 0;
}

/* "127.0.0.1:5000" -> is it this machine (localhost, 127.0.0.0/8, ::1)? */
bool image_host_local(const char *hostport)
{
	char h[256];
	snprintf(h, sizeof(h), "%s", hostport);
	if (h[0] == '[')
		return !strncmp(h, "[::1]", 5);
	h[strcspn(h, ":")] = '\0';
	if (!strcmp(h, "localhost"))
		return true;
	if (strncmp(h, "127.", 4))
		return false;
	int dots = 0;
	for (const char *c = h; *c; c++) {
		if (*c == '.')
			dots++;
		else if (*c < '0' || *c > '9')
			return false;
	}
	return dots == 3;
}

bool image_host_insecure(const char *hostport, const char *list)
{
	size_t hl = strlen(hostport), nl = strcspn(hostport, ":");
	for (const char *p = list ? list : ""; *p;) {
		p += strspn(p, ", ");
		size_t n = strcspn(p, ", ");
		if (n && ((n == hl && !strncmp(p, hostport, n)) ||
			  (n == nl && !strncmp(p, hostport, n))))
			return true;
		p += n;
	}
	return false;
}
