/* netlab.c — what the network end-to-end tests share (netlab.h): servers in network
 * namespaces they make, the host's nftables and lease state around each test, and the
 * API and sandbox calls they drive. */
#include "netlab.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nftables/libnftables.h>

void run_ok(const char *line)
{
	char *argv[] = {"/bin/sh", "-c", (char *)line, NULL};
	e2e_result r;
	if (e2e_run(&r, NULL, 0, 20000, argv) != 0)
		fail_msg("`%s` exited %d: %s", line, r.status, r.err);
	e2e_result_free(&r);
}

/* Accept forever on LISTEN_FD, answering "BANNER <local addr> from <peer addr>". */
void __attribute__((noreturn)) banner_server(int listen_fd, const char *banner)
{
	for (;;) {
		struct sockaddr_in peer, local;
		socklen_t pl = sizeof(peer), ll = sizeof(local);
		int c = accept(listen_fd, (struct sockaddr *)&peer, &pl);
		if (c < 0)
			continue;
		getsockname(c, (struct sockaddr *)&local, &ll);
		char a[32], b[32];
		inet_ntop(AF_INET, &local.sin_addr, a, sizeof(a));
		inet_ntop(AF_INET, &peer.sin_addr, b, sizeof(b));
		dprintf(c, "%s %s from %s\n", banner, a, b);
		close(c);
	}
}

int listen_on(const char *addr, int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, addr, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0)
		fail_msg("listen on %s:%d: %s", addr, port, strerror(errno));
	return fd;
}

/* A banner server on a host address in a child (killed by the caller). */
pid_t host_server(const char *addr, int port, const char *banner)
{
	int fd = listen_on(addr, port);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		banner_server(fd, banner);
	}
	close(fd);
	return pid;
}

void child_kill(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* ---- host state beyond the harness's: nftables, ip_forward, leases ---------------------- */

char *nft_ruleset(void)
{
	struct nft_ctx *nft = nft_ctx_new(NFT_CTX_DEFAULT);
	assert_non_null(nft);
	nft_ctx_buffer_output(nft);
	nft_ctx_buffer_error(nft);
	assert_int_equal(nft_run_cmd_from_buffer(nft, "list ruleset"), 0);
	char *s = strdup(nft_ctx_get_output_buffer(nft));
	nft_ctx_free(nft);
	return s;
}

char *ip_forward(void)
{
	char *s = e2e_read_file("/proc/sys/net/ipv4/ip_forward");
	assert_non_null(s);
	return s;
}

static int leases_of(bool sandboxes_only)
{
	char *dir = e2e_printf("%s/leases", getenv("SANDLOT_STATE_DIR"));
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *p = e2e_printf("%s/%s", dir, e->d_name);
		char *owner = sandboxes_only ? e2e_read_file(p) : NULL;
		n += !sandboxes_only || (owner && !strncmp(owner, "sbx_", 4));
		free(owner), free(p);
	}
	if (d)
		closedir(d);
	free(dir);
	return n;
}

int leases_count(void)
{
	return leases_of(false);
}

int sandbox_leases_count(void)
{
	return leases_of(true);
}

int net_setup(void **state)
{
	net_state *s = calloc(1, sizeof(*s));
	e2e_test_setup(&s->snap);
	s->nft = nft_ruleset();
	s->fwd = ip_forward();
	s->leases = leases_count();
	*state = s;
	return 0;
}

/* The harness's leak check, then: the nft ruleset, ip_forward and the lease store are
 * as before the test (the host side goes with the last network). */
int net_teardown(void **state)
{
	net_state *s = *state;
	/* The harness's check first: it waits for a `run`'s detached release to be over
	 * (its process is ours), after which the host side is what the last release left. */
	e2e_test_teardown(&s->snap);
	char *nft = nft_ruleset(), *fwd = ip_forward();
	int leases = leases_count();
	if (strcmp(nft, s->nft))
		fail_msg("nft ruleset changed:\nbefore:\n%s\nafter:\n%s", s->nft, nft);
	assert_string_equal(fwd, s->fwd);
	assert_int_equal(leases, s->leases);
	free(nft), free(fwd), free(s->nft), free(s->fwd), free(s);
	return 0;
}

void rm(const char *id)
{
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
}

/* What a TCP connection from sandbox ID to ADDR:PORT reads ("" when none). */
char *dial(const char *id, const char *addr, int port)
{
	char *line = e2e_printf("nc -w 3 %s %d </dev/null 2>&1; true", addr, port);
	char *out = e2e_sh_ok(id, line);
	free(line);
	return out;
}

bool reaches(const char *id, const char *addr, int port, const char *banner)
{
	char *out = dial(id, addr, port);
	bool ok = e2e_contains(out, banner);
	free(out);
	return ok;
}

/* METHOD PATH (with BODY) to D; fails unless the status is WANT; the parsed body. */
cJSON *api(const e2e_daemon *d, const char *method, const char *path, const char *body, long want)
{
	e2e_resp r;
	e2e_req q = {.method = method,
		     .path = path,
		     .body = body,
		     .len = body ? strlen(body) : 0,
		     .d = d,
		     .timeout_ms = 60000};
	if (e2e_http_q(&r, &q) != want)
		fail_msg("%s %s: HTTP %ld, not %ld: %s", method, path, r.status, want, r.body);
	cJSON *j = r.json;
	r.json = NULL;
	e2e_resp_free(&r);
	return j;
}

void daemon_start(e2e_daemon *d)
{
	daemon_start_with(d, NULL);
}

void daemon_start_with(e2e_daemon *d, const char *const *extra)
{
	char *sock = e2e_printf("%s/api.sock", e2e_root());
	e2e_daemon_start(d, sock, true, extra);
	free(sock);
}

char *net_create(const e2e_daemon *d, const char *allow, char *addr, size_t len)
{
	char *body = e2e_printf("{\"image\": \"busybox\", \"network\": {\"enabled\": true%s%s}}",
				allow ? ", \"allow\": " : "", allow ? allow : "");
	cJSON *sb = api(d, "POST", "/v1/sandboxes", body, 201);
	char *id = strdup(cJSON_GetObjectItemCaseSensitive(sb, "id")->valuestring);
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(sb, "network"), "address");
	if (addr)
		snprintf(addr, len, "%s", cJSON_IsString(a) ? a->valuestring : "");
	cJSON_Delete(sb);
	free(body);
	return id;
}

void net_delete(const e2e_daemon *d, const char *id)
{
	char *path = e2e_printf("/v1/sandboxes/%s", id);
	cJSON_Delete(api(d, "DELETE", path, NULL, 204));
	free(path);
}
