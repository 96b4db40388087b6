/* test_pull.c — `sandlot image pull` and POST /v1/images/pull against Debian's real
 * docker-registry on 127.0.0.1, filled by skopeo from the OCI layouts oci_fixture.py
 * writes; registry_proxy.py in front of it for what a registry can do wrong (cut
 * connections, bad bytes, 5xx, bearer tokens). Nothing but 127.0.0.1 is ever contacted. */
#include "common.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t reg_pid = -1, auth_pid = -1;
static int reg_port, auth_port;
static char *reg_log, *auth_log;
static char layers_digest[72]; /* the busybox layer of the "layers" image (1 MB) */

/* ---- helpers ---------------------------------------------------------------------------- */

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		fail_msg("free port: %s", strerror(errno));
	close(fd);
	return ntohs(a.sin_port);
}

static bool port_open(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bool ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

/* ARGV as a child of the test, stdout and stderr appended to OUT. */
static pid_t spawn(char *const argv[], const char *out)
{
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static void stop(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	*pid = -1;
}

/* A docker-registry on 127.0.0.1:PORT over the shared storage, htpasswd auth when
 * HTPASSWD; its access log in LOG. */
static pid_t registry_start(const char *tag, int port, const char *htpasswd, const char *log)
{
	char *cfg = e2e_printf("%s/registry-%s.yml", e2e_root(), tag);
	char *auth =
	    htpasswd ? e2e_printf("auth:\n  htpasswd:\n    realm: test\n    path: %s\n", htpasswd)
		     : strdup("");
	char *text =
	    e2e_printf("version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: "
		       "false\nstorage:\n  filesystem:\n    rootdirectory: %s/registry-data\n"
		       "http:\n  addr: 127.0.0.1:%d\n%s",
		       e2e_root(), port, auth);
	FILE *f = fopen(cfg, "w");
	fputs(text, f);
	fclose(f);
	char *argv[] = {"/usr/bin/docker-registry", "serve", cfg, NULL};
	pid_t pid = spawn(argv, log);
	for (int i = 0; i < 200 && !port_open(port); i++)
		usleep(25000);
	if (!port_open(port))
		fail_msg("docker-registry on port %d did not start (see %s)", port, log);
	free(cfg);
	free(auth);
	free(text);
	return pid;
}

static void run_ok(char *const argv[])
{
	e2e_result r;
	if (e2e_run(&r, NULL, 0, 120000, argv) != 0)
		fail_msg("%s %s: %s%s", argv[0], argv[1], r.out, r.err);
	e2e_result_free(&r);
}

/* oci_fixture.py SCENARIO as a layout, copied (all platforms) to the registry as REPO:TAG. */
static void push(const char *scenario, const char *repo_tag)
{
	char *dir = e2e_printf("%s/oci-%s", e2e_root(), scenario);
	struct stat st;
	if (stat(dir, &st) != 0) {
		char *bb = e2e_build_path("images/busybox.tar");
		char *argv[] = {"/usr/bin/python3",
				"tests/e2e/oci_fixture.py",
				bb,
				dir,
				(char *)scenario,
				NULL};
		run_ok(argv);
		free(bb);
	}
	char *src = e2e_printf("oci:%s:latest", dir);
	char *dst = e2e_printf("docker://127.0.0.1:%d/%s", reg_port, repo_tag);
	char *argv[] = {"/usr/bin/skopeo",
			"--insecure-policy",
			"copy",
			"-q",
			"--all",
			"--dest-tls-verify=false",
			src,
			dst,
			NULL};
	run_ok(argv);
	free(src);
	free(dst);
	free(dir);
}

/* How many lines of FILE contain NEEDLE (and NEEDLE2, when given). */
static int count_lines2(const char *file, const char *needle, const char *needle2)
{
	char *text = e2e_read_file(file);
	int n = 0;
	for (char *l = text ? strtok(text, "\n") : NULL; l; l = strtok(NULL, "\n"))
		n += strstr(l, needle) && (!needle2 || strstr(l, needle2));
	free(text);
	return n;
}

static int count_lines(const char *file, const char *needle)
{
	return count_lines2(file, needle, NULL);
}

/* Blob GETs in a registry's access log (written just after each answer). */
static int blob_gets(const char *log)
{
	usleep(300000);
	return count_lines2(log, "\"GET /v2/", "/blobs/sha256:");
}

static char *state_path(const char *sub)
{
	return e2e_printf("%s/images/%s", getenv("SANDLOT_STATE_DIR"), sub);
}

static int count_dir(const char *sub, const char *suffix)
{
	char *p = state_path(sub);
	DIR *d = opendir(p);
	free(p);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name), sl = suffix ? strlen(suffix) : 0;
		n += de->d_name[0] != '.' &&
		     (!suffix || (l > sl && !strcmp(de->d_name + l - sl, suffix)));
	}
	if (d)
		closedir(d);
	return n;
}

/* Empty the blob cache: the next pull fetches everything. */
static void cache_clear(void)
{
	char *p = state_path("blobs/sha256");
	DIR *d = opendir(p);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.') {
			char *f = e2e_printf("%s/%s", p, de->d_name);
			unlink(f);
			free(f);
		}
	if (d)
		closedir(d);
	free(p);
}

static char *ref(int port, const char *repo)
{
	return e2e_printf("127.0.0.1:%d/%s", port, repo);
}

/* `sandlot image pull ARGS...`: R filled, its status returned. */
#define pull(r, ...) e2e_sandlot((r), NULL, 0, "image", "pull", __VA_ARGS__, NULL)

static bool image_listed(const char *name)
{
	char *out = e2e_sandlot_ok("image", "ls", NULL);
	bool hit = false;
	for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
		hit |= !strncmp(l, name, strlen(name)) && l[strlen(name)] == ' ';
	free(out);
	return hit;
}

/* A refused pull: exit 125, its message has every NEEDLE, no image NAME, nothing in
 * images/tmp. */
static void refused(e2e_result *r, const char *name, const char *needle1, const char *needle2)
{
	if (r->status != 125 || !e2e_contains(r->err, needle1) ||
	    (needle2 && !e2e_contains(r->err, needle2)))
		fail_msg("expected a refusal with '%s' / '%s', got %d:\n%s%s", needle1,
			 needle2 ? needle2 : "", r->status, r->out, r->err);
	assert_false(image_listed(name));
	assert_int_equal(count_dir("tmp", NULL), 0);
	e2e_result_free(r);
}

struct proxy {
	pid_t pid;
	int port;
	char *log;
};

static void proxy_start(struct proxy *p, const char *mode, const char *digest)
{
	char *portfile = e2e_printf("%s/proxy-%s.port", e2e_root(), mode);
	p->log = e2e_printf("%s/proxy-%s.log", e2e_root(), mode);
	char *out = e2e_printf("%s/proxy-%s.out", e2e_root(), mode);
	char *up = e2e_printf("%d", reg_port);
	unlink(portfile);
	unlink(p->log);
	char *argv[] = {"/usr/bin/python3",
			"tests/e2e/registry_proxy.py",
			(char *)mode,
			up,
			portfile,
			p->log,
			(char *)(digest ? digest : ""),
			NULL};
	p->pid = spawn(argv, out);
	char *text = NULL;
	for (int i = 0; i < 200 && !(text = e2e_read_file(portfile)); i++)
		usleep(25000);
	if (!text)
		fail_msg("registry_proxy.py %s did not start (see %s)", mode, out);
	p->port = atoi(text);
	free(text);
	free(portfile);
	free(out);
	free(up);
}

static void proxy_stop(struct proxy *p)
{
	stop(&p->pid);
	free(p->log);
}

/* ---- fixtures ---------------------------------------------------------------------------- */

static int group_setup(void **state)
{
	e2e_env_setup();
	reg_port = free_port();
	reg_log = e2e_printf("%s/registry.log", e2e_root());
	reg_pid = registry_start("open", reg_port, NULL, reg_log);
	push("layers", "layers:1");
	push("multi", "multi:1");
	push("armonly", "armonly:1");
	push("layers", "library/busybox-test:1");
	/* The same storage behind a second registry that wants user:pass. */
	char *htp = e2e_printf("%s/htpasswd", e2e_root());
	char *argv[] = {"/usr/bin/htpasswd", "-Bbc", htp, "user", "pass", NULL};
	run_ok(argv);
	auth_port = free_port();
	auth_log = e2e_printf("%s/registry-auth.log", e2e_root());
	auth_pid = registry_start("auth", auth_port, htp, auth_log);
	free(htp);
	/* The layers image's first layer (busybox, the big one): from its layout. */
	char *idx = e2e_printf("%s/oci-layers/index.json", e2e_root());
	char *text = e2e_read_file(idx);
	cJSON *o = cJSON_Parse(text);
	const char *mdig = cJSON_GetObjectItem(
			       cJSON_GetArrayItem(cJSON_GetObjectItem(o, "manifests"), 0), "digest")
			       ->valuestring;
	char *mpath = e2e_printf("%s/oci-layers/blobs/sha256/%s", e2e_root(), mdig + 7);
	char *mtext = e2e_read_file(mpath);
	cJSON *m = cJSON_Parse(mtext);
	snprintf(
	    layers_digest, sizeof(layers_digest), "%s",
	    cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(m, "layers"), 0), "digest")
		->valuestring);
	cJSON_Delete(o);
	cJSON_Delete(m);
	free(idx);
	free(text);
	free(mpath);
	free(mtext);
	return 0;
}

static int group_teardown(void **state)
{
	stop(&reg_pid);
	stop(&auth_pid);
	free(reg_log);
	free(auth_log);
	return e2e_group_teardown(state);
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_pull_by_tag_then_digest(void **state)
{
	cache_clear();
	char *name = ref(reg_port, "layers:1");
	e2e_result r;
	int before = blob_gets(reg_log);
	assert_int_equal(pull(&r, name), 0);
	/* docker pull's lines: a line per layer, the manifest digest, the image. */
	assert_true(e2e_contains(r.err, "1: Pulling from layers"));
	assert_true(e2e_contains(r.err, ": Download complete"));
	assert_true(e2e_contains(r.err, "Status: Downloaded newer image for"));
	const char *dl = strstr(r.err, "Digest: ");
	assert_non_null(dl);
	char mdigest[72];
	snprintf(mdigest, sizeof(mdigest), "%.71s", dl + 8);
	assert_true(e2e_contains(r.out, name));
	/* 5 layers and a config fetched. */
	assert_int_equal(blob_gets(reg_log) - before, 6);
	e2e_result_free(&r);
	/* Usable at once under its reference, with the image's config. */
	char *out = e2e_sandlot_ok("run", "--image", name, NULL);
	assert_string_equal(out, "hello from the image in /data as 1234:2345");
	free(out);
	out = e2e_sandlot_ok("image", "inspect", name, NULL);
	assert_true(e2e_contains(out, "\"format\":\t\"registry\""));
	free(out);

	/* Again: the manifest is asked, no blob. */
	before = blob_gets(reg_log);
	assert_int_equal(pull(&r, name), 0);
	assert_true(e2e_contains(r.err, "Image is up to date"));
	assert_int_equal(blob_gets(reg_log), before);
	e2e_result_free(&r);

	/* By digest, as another name: every blob from the cache, the same image. */
	char *byd = e2e_printf("127.0.0.1:%d/layers@%s", reg_port, mdigest);
	before = blob_gets(reg_log);
	assert_int_equal(pull(&r, byd), 0);
	assert_int_equal(blob_gets(reg_log), before);
	assert_true(e2e_contains(r.err, "Already exists"));
	e2e_result_free(&r);
	char *a = e2e_sandlot_ok("image", "inspect", name, NULL);
	char *b = e2e_sandlot_ok("image", "inspect", byd, NULL);
	cJSON *ja = cJSON_Parse(a), *jb = cJSON_Parse(b);
	assert_string_equal(cJSON_GetObjectItem(ja, "digest")->valuestring,
			    cJSON_GetObjectItem(jb, "digest")->valuestring);
	cJSON_Delete(ja);
	cJSON_Delete(jb);
	free(a);
	free(b);
	/* A digest the registry does not have. */
	char *missing = e2e_printf("127.0.0.1:%d/layers@sha256:%064d", reg_port, 0);
	pull(&r, missing);
	refused(&r, missing, "not found", "HTTP 404");
	free(e2e_sandlot_ok("image", "rm", name, byd, NULL));
	assert_false(image_listed(name));
	/* Its layers' and config's blobs went with it; the manifest (small) stays. */
	assert_int_equal(count_dir("blobs/sha256", NULL), 1);
	free(missing);
	free(byd);
	free(name);
}

static void test_multi_platform_index(void **state)
{
	char *name = ref(reg_port, "multi:1");
	e2e_result r;
	assert_int_equal(pull(&r, name), 0);
	assert_true(e2e_contains(r.err, "took the linux/amd64 (of 2 manifests"));
	e2e_result_free(&r);
	char *out = e2e_sandlot_ok("image", "inspect", name, NULL);
	assert_true(e2e_contains(out, "linux/amd64"));
	free(out);
	free(e2e_sandlot_ok("image", "rm", name, NULL));
	/* Only another platform: refused, nothing made. */
	char *arm = ref(reg_port, "armonly:1");
	pull(&r, arm);
	refused(&r, arm, "no linux/amd64 manifest", "linux/arm64");
	free(arm);
	free(name);
}

static void test_interrupted_pull_resumes(void **state)
{
	cache_clear();
	struct proxy p;
	proxy_start(&p, "cut", layers_digest);
	char *name = ref(p.port, "layers:1");
	e2e_result r;
	pull(&r, name);
	refused(&r, name, "layer 1 of 5", "sha256:");
	/* The half that came is kept; the blobs done are in the cache. */
	assert_true(count_dir("blobs/sha256", ".partial") >= 1);
	char *part = e2e_printf("%s/images/blobs/sha256/%s.partial", getenv("SANDLOT_STATE_DIR"),
				layers_digest + 7);
	struct stat st;
	assert_int_equal(stat(part, &st), 0);
	assert_true(st.st_size > 0);
	/* Which blobs the second run may ask: only those not complete now. */
	char *dir = state_path("blobs/sha256");
	DIR *d = opendir(dir);
	struct dirent *de;
	char have[16][65];
	int nhave = 0;
	while ((de = readdir(d)) && nhave < 16)
		if (de->d_name[0] != '.' && !strstr(de->d_name, ".partial"))
			snprintf(have[nhave++], 65, "%.64s", de->d_name);
	closedir(d);
	unlink(p.log);
	assert_int_equal(pull(&r, name), 0);
	e2e_result_free(&r);
	for (int i = 0; i < nhave; i++)
		assert_int_equal(count_lines(p.log, have[i]), 0);
	/* The cut blob asked from where it stopped. */
	char *ranged = e2e_printf("range=bytes=%lld-", (long long)st.st_size);
	assert_int_equal(count_lines(p.log, ranged), 1);
	assert_int_equal(count_dir("blobs/sha256", ".partial"), 0);
	char *out = e2e_sandlot_ok("run", "--image", name, NULL);
	assert_string_equal(out, "hello from the image in /data as 1234:2345");
	free(out);
	free(e2e_sandlot_ok("image", "rm", name, NULL));
	proxy_stop(&p);
	free(ranged);
	free(dir);
	free(part);
	free(name);
}

/* A layer blob in the cache is hashed again by the import (only one this pull fetched is
 * not): one that rotted there (same size, a byte changed) fails the pull as a digest
 * mismatch, leaves nothing listed, and is dropped, so the next pull fetches it again. */
static void test_corrupt_cached_blob_is_caught(void **state)
{
	cache_clear();
	char *name = ref(reg_port, "layers:1");
	e2e_result r;
	assert_int_equal(pull(&r, name), 0);
	e2e_result_free(&r);
	/* The blobs kept aside, the image removed (its blobs with it), the blobs put back. */
	char *dir = state_path("blobs/sha256");
	char *save = e2e_printf("%s/blob-save", e2e_root());
	char *cmd = e2e_printf("rm -rf '%s' && cp -a '%s' '%s'", save, dir, save);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	free(e2e_sandlot_ok("image", "rm", name, NULL));
	cmd = e2e_printf("cp -a '%s'/. '%s'/", save, dir);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	/* The largest is a layer: a byte in its middle flipped. */
	DIR *d = opendir(dir);
	struct dirent *de;
	char big[PATH_MAX] = "";
	off_t most = 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			struct stat st;
			char *f = e2e_printf("%s/%s", dir, de->d_name);
			if (stat(f, &st) == 0 && st.st_size > most) {
				most = st.st_size;
				snprintf(big, sizeof(big), "%s", f);
			}
			free(f);
		}
	closedir(d);
	assert_true(most > 0);
	int fd = open(big, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	unsigned char c;
	assert_int_equal(pread(fd, &c, 1, most / 2), 1);
	c ^= 0xff;
	assert_int_equal(pwrite(fd, &c, 1, most / 2), 1);
	close(fd);
	int before = blob_gets(reg_log);
	pull(&r, name);
	refused(&r, name, "digest mismatch: the manifest names", "the blob is sha256:");
	assert_int_equal(blob_gets(reg_log), before); /* every blob came from the cache */
	struct stat st;
	assert_int_equal(stat(big, &st), -1); /* dropped */
	assert_int_equal(count_dir("tmp", NULL), 0);
	/* Again: that one blob fetched, the image whole. */
	assert_int_equal(pull(&r, name), 0);
	e2e_result_free(&r);
	assert_int_equal(blob_gets(reg_log) - before, 1);
	char *out = e2e_sandlot_ok("run", "--image", name, NULL);
	assert_string_equal(out, "hello from the image in /data as 1234:2345");
	free(out);
	free(e2e_sandlot_ok("image", "rm", name, NULL));
	cmd = e2e_printf("rm -rf '%s'", save);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	free(save);
	free(dir);
	free(name);
}

static char *write_auth(const char *host, const char *userpass, mode_t mode)
{
	char *path = e2e_printf("%s/auth.json", getenv("SANDLOT_STATE_DIR"));
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char enc[128] = "";
	size_t n = strlen(userpass), k = 0;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned char)userpass[i] << 16 |
			     (i + 1 < n ? (unsigned char)userpass[i + 1] << 8 : 0) |
			     (i + 2 < n ? (unsigned char)userpass[i + 2] : 0);
		enc[k++] = b64[v >> 18 & 63];
		enc[k++] = b64[v >> 12 & 63];
		enc[k++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
		enc[k++] = i + 2 < n ? b64[v & 63] : '=';
	}
	enc[k] = '\0';
	char *text = e2e_printf("{\"auths\": {\"%s\": {\"auth\": \"%s\"}}}", host, enc);
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	assert_true(fd >= 0);
	fchmod(fd, mode);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	free(text);
	return path;
}

static void test_basic_auth(void **state)
{
	char *name = ref(auth_port, "layers:1");
	char *host = e2e_printf("127.0.0.1:%d", auth_port);
	e2e_result r;
	char *auth = e2e_printf("%s/auth.json", getenv("SANDLOT_STATE_DIR"));
	unlink(auth);
	pull(&r, name);
	refused(&r, name, "authentication required", host);
	free(write_auth(host, "user:wrong", 0600));
	pull(&r, name);
	refused(&r, name, "refused", host);
	/* Credentials others may read are not read. */
	free(write_auth(host, "user:pass", 0644));
	pull(&r, name);
	refused(&r, name, "chmod 600", "auth.json");
	free(write_auth(host, "user:pass", 0600));
	assert_int_equal(pull(&r, name), 0);
	e2e_result_free(&r);
	assert_true(count_lines(auth_log, "\"GET /v2/layers/manifests/1") >= 1);
	/* --auth-file names another file. */
	char *other = e2e_printf("%s/other-auth.json", e2e_root());
	rename(auth, other);
	free(e2e_sandlot_ok("image", "rm", name, NULL));
	assert_int_equal(pull(&r, name, "--auth-file", other), 0);
	e2e_result_free(&r);
	free(e2e_sandlot_ok("image", "rm", name, NULL));
	unlink(other);
	free(other);
	free(auth);
	free(host);
	free(name);
}

static void test_bearer_token(void **state)
{
	cache_clear();
	struct proxy p;
	proxy_start(&p, "bearer", NULL);
	char *name = ref(p.port, "layers:1");
	char *host = e2e_printf("127.0.0.1:%d", p.port);
	e2e_result r;
	char *auth = e2e_printf("%s/auth.json", getenv("SANDLOT_STATE_DIR"));
	unlink(auth);
	pull(&r, name);
	refused(&r, name, "token service refused", host);
	free(write_auth(host, "user:pass", 0600));
	assert_int_equal(pull(&r, name), 0);
	e2e_result_free(&r);
	/* One token, then every request with it. */
	assert_int_equal(
	    count_lines(p.log, "GET /token?service=test-registry&scope=repository%3Alayers%3Apull "
			       "range=- auth=Basic status=200"),
	    1);
	assert_true(count_lines(p.log, "/blobs/sha256:") >= 6);
	assert_int_equal(count_lines(p.log, "/blobs/sha256:"),
			 count_lines2(p.log, "/blobs/sha256:", "auth=Bearer status=200"));
	char *out = e2e_sandlot_ok("run", "--image", name, NULL);
	assert_string_equal(out, "hello from the image in /data as 1234:2345");
	free(out);
	free(e2e_sandlot_ok("image", "rm", name, NULL));
	unlink(auth);
	proxy_stop(&p);
	free(auth);
	free(host);
	free(name);
}

static void test_mirror_for_docker_hub_names(void **state)
{
	char *mirror = e2e_printf("http://127.0.0.1:%d", reg_port);
	e2e_result r;
	assert_int_equal(pull(&r, "busybox-test:1", "--registry-mirror", mirror), 0);
	assert_true(e2e_contains(r.out, "busybox-test:1 sha256:"));
	e2e_result_free(&r);
	assert_true(count_lines(reg_log, "\"GET /v2/library/busybox-test/manifests/1 ") >= 1);
	char *out = e2e_sandlot_ok("run", "--image", "busybox-test:1", NULL);
	assert_string_equal(out, "hello from the image in /data as 1234:2345");
	free(out);
	free(e2e_sandlot_ok("image", "rm", "busybox-test:1", NULL));
	/* Plain http to another machine: refused before any connection (TEST-NET-1). */
	pull(&r, "busybox-test:1", "--registry-mirror", "http://192.0.2.1:5000");
	refused(&r, "busybox-test:1", "plain http is allowed only", "192.0.2.1:5000");
	free(mirror);
}

static void test_bad_registry_answers(void **state)
{
	static const struct {
		const char *mode, *needle1, *needle2;
	} cases[] = {
	    {"corrupt", "layer 1 of 5: digest mismatch", "the registry sent sha256:"},
	    {"truncate", "layer 1 of 5", "(truncated?)"},
	    {"error", "layer 1 of 5", "HTTP 500"},
	};
	/* A manifest asked by digest whose bytes are not that digest's. */
	{
		char mdig[72];
		char *idx = e2e_printf("%s/oci-layers/index.json", e2e_root());
		char *text = e2e_read_file(idx);
		cJSON *o = cJSON_Parse(text);
		snprintf(mdig, sizeof(mdig), "%s",
			 cJSON_GetObjectItem(
			     cJSON_GetArrayItem(cJSON_GetObjectItem(o, "manifests"), 0), "digest")
			     ->valuestring);
		cJSON_Delete(o);
		free(text);
		free(idx);
		struct proxy p;
		proxy_start(&p, "corrupt", mdig);
		char *name = e2e_printf("127.0.0.1:%d/layers@%s", p.port, mdig);
		e2e_result r;
		pull(&r, name);
		refused(&r, name, "digest mismatch: the registry sent", mdig);
		proxy_stop(&p);
		free(name);
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cache_clear();
		struct proxy p;
		proxy_start(&p, cases[i].mode, layers_digest);
		char *name = ref(p.port, "layers:1");
		e2e_result r;
		pull(&r, name);
		assert_true(e2e_contains(r.err, name));
		refused(&r, name, cases[i].needle1, cases[i].needle2);
		/* No bad bytes kept: not as a blob, not as a partial one to resume. */
		char *blob = e2e_printf("%s/images/blobs/sha256/%s", getenv("SANDLOT_STATE_DIR"),
					layers_digest + 7);
		char *part = e2e_printf("%s.partial", blob);
		assert_int_not_equal(access(blob, F_OK), 0);
		assert_int_not_equal(access(part, F_OK), 0);
		proxy_stop(&p);
		free(blob);
		free(part);
		free(name);
	}
	/* Names and references a pull refuses outright. */
	e2e_result r;
	pull(&r, "UPPER/case:1");
	refused(&r, "UPPER/case:1", "repository", NULL);
	char *name = ref(reg_port, "layers:1");
	pull(&r, name, "--name", "../escape");
	refused(&r, "../escape", "image name '../escape' is invalid", NULL);
	free(name);
}

static void test_api_pull_streams_json_lines(void **state)
{
	e2e_daemon d;
	char *sock = e2e_printf("%s/pull.sock", e2e_root());
	char *captures = e2e_printf("%s/pull-captures.jsonl", e2e_root());
	e2e_daemon_start(&d, sock, false, NULL);
	e2e_http_use(&d, captures);
	cache_clear();
	e2e_resp r;
	char *body = e2e_printf("{\"ref\":\"127.0.0.1:%d/layers:1\"}", reg_port);
	e2e_http(&r, "POST", "/v1/images/pull", body);
	assert_int_equal(r.status, 200);
	assert_true(e2e_contains(r.ctype, "application/x-ndjson"));
	/* Lines of {"status","layer","current","total"}, the last the image. */
	char *last = NULL;
	int downloading = 0;
	for (char *l = strtok(r.body, "\n"); l; l = strtok(NULL, "\n")) {
		cJSON *o = cJSON_Parse(l);
		assert_non_null(o);
		const cJSON *st = cJSON_GetObjectItem(o, "status");
		if (cJSON_IsString(st) && !strcmp(st->valuestring, "Downloading")) {
			downloading++;
			assert_true(cJSON_IsString(cJSON_GetObjectItem(o, "layer")));
			assert_true(cJSON_GetObjectItem(o, "total")->valuedouble > 0);
		}
		cJSON_Delete(o);
		last = l;
	}
	assert_true(downloading >= 5);
	cJSON *img = cJSON_Parse(last);
	char *want = e2e_printf("127.0.0.1:%d/layers:1", reg_port);
	assert_string_equal(cJSON_GetObjectItem(img, "name")->valuestring, want);
	assert_string_equal(cJSON_GetObjectItem(img, "format")->valuestring, "registry");
	cJSON_Delete(img);
	e2e_resp_free(&r);
	/* The name in a path, URL-encoded. */
	char *path = e2e_printf("/v1/images/127.0.0.1%%3A%d%%2Flayers%%3A1", reg_port);
	e2e_http(&r, "GET", path, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(cJSON_GetObjectItem(r.json, "name")->valuestring, want);
	e2e_resp_free(&r);
	e2e_http(&r, "DELETE", path, NULL);
	assert_int_equal(r.status, 204);
	e2e_resp_free(&r);
	e2e_http(&r, "GET", path, NULL);
	assert_int_equal(r.status, 404);
	e2e_resp_free(&r);
	/* A failure is the stream's last line. */
	free(body);
	body = e2e_printf("{\"ref\":\"127.0.0.1:%d/nosuch:1\",\"name\":\"api-nosuch\"}", reg_port);
	e2e_http(&r, "POST", "/v1/images/pull", body);
	assert_int_equal(r.status, 200);
	assert_true(e2e_contains(r.body, "{\"error\":{\"code\":\"NOT_FOUND\""));
	assert_true(e2e_contains(r.body, "nosuch"));
	e2e_resp_free(&r);
	/* Refused before anything streams. */
	e2e_http(&r, "POST", "/v1/images/pull", "{\"ref\":\"Bad Ref\"}");
	assert_int_equal(r.status, 400);
	e2e_resp_free(&r);
	e2e_http(&r, "POST", "/v1/images/pull", "{}");
	assert_int_equal(r.status, 400);
	e2e_resp_free(&r);
	assert_false(image_listed("api-nosuch"));
	free(e2e_spec_check(sock, captures));
	e2e_daemon_stop(&d);
	free(path);
	free(want);
	free(body);
	free(sock);
	free(captures);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_pull_by_tag_then_digest),
	    E2E_TEST(test_multi_platform_index),
	    E2E_TEST(test_interrupted_pull_resumes),
	    E2E_TEST(test_corrupt_cached_blob_is_caught),
	    E2E_TEST(test_basic_auth),
	    E2E_TEST(test_bearer_token),
	    E2E_TEST(test_mirror_for_docker_hub_names),
	    E2E_TEST(test_bad_registry_answers),
	    E2E_TEST(test_api_pull_streams_json_lines),
	};
	e2e_apply_filter();
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
