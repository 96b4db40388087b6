/* test_net_names.c — domain egress rules end to end, hermetic: the test makes its own
 * upstream (a network namespace behind a veth with Debian's dnsmasq as name server and
 * banner servers on benchmark-range addresses), points `sandlot serve --dns` at it, and
 * proves what the daemon's resolver and the sandbox's nftables set allow. */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common.h"
#include "netlab.h"

#define UP_NS	"sltnames"
#define UP_VETH "sltnames0"
#define UP_HOST "198.19.53.1"
#define UP_DNS	"198.19.53.53"
#define ALLOWED "198.19.53.10" /* allowed.test */
#define BLOCKED "198.19.53.20" /* blocked.test */
#define SVC_A	"198.19.53.30" /* a.svc.test */
#define EVIL	"198.19.53.40" /* svc.test.evil */
#define SVC	"198.19.53.45" /* svc.test */
#define OTHER	"198.19.53.50" /* other.test */
#define PORT	8080

static pid_t dns_pid, web_pid;

static pid_t in_upstream(void)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int ns = open("/run/netns/" UP_NS, O_RDONLY | O_CLOEXEC);
		if (ns < 0 || setns(ns, CLONE_NEWNET) < 0)
			_exit(1);
	}
	return pid;
}

static void upstream_up(void)
{
	run_ok("set -e; ip netns add " UP_NS "; "
	       "ip link add " UP_VETH " type veth peer name eth0 netns " UP_NS "; "
	       "ip addr add " UP_HOST "/24 dev " UP_VETH "; ip link set " UP_VETH " up; "
	       "ip -n " UP_NS " link set lo up; ip -n " UP_NS " link set eth0 up; "
	       "for a in " UP_DNS " " ALLOWED " " BLOCKED " " SVC_A " " EVIL " " SVC " " OTHER
	       "; do ip -n " UP_NS " addr add $a/24 dev eth0; done; "
	       "ip -n " UP_NS " route add default via " UP_HOST);
	if ((web_pid = in_upstream()) == 0)
		banner_server(listen_on("0.0.0.0", PORT), "web");
	if ((dns_pid = in_upstream()) == 0) {
		execlp("dnsmasq", "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null",
		       "--no-resolv", "--no-hosts", "--bind-interfaces", "--listen-address=" UP_DNS,
		       "--pid-file=", "--user=root", "--host-record=allowed.test," ALLOWED,
		       "--host-record=blocked.test," BLOCKED, "--host-record=a.svc.test," SVC_A,
		       "--host-record=svc.test.evil," EVIL, "--host-record=svc.test," SVC,
		       "--host-record=other.test," OTHER, (char *)NULL);
		_exit(127);
	}
	/* dnsmasq answers once it has bound. */
	for (int i = 0; i < 50; i++) {
		e2e_result r;
		char *argv[] = {"/bin/sh", "-c",
				"ip netns exec " UP_NS " ss -lun | grep -q '" UP_DNS ":53 '", NULL};
		int ok = e2e_run(&r, NULL, 0, 5000, argv) == 0;
		e2e_result_free(&r);
		if (ok)
			return;
		usleep(100 * 1000);
	}
	fail_msg("dnsmasq did not start in " UP_NS " (is it installed? scripts/setup)");
}

static void upstream_down(void)
{
	child_kill(dns_pid);
	child_kill(web_pid);
	char *argv[] = {"/bin/sh", "-c", "ip netns del " UP_NS " 2>/dev/null", NULL};
	e2e_result r;
	e2e_run(&r, NULL, 0, 10000, argv);
	e2e_result_free(&r);
}

static const char *const serve_dns[] = {"--dns", UP_DNS, NULL};

/* Does NAME resolve in the sandbox (busybox nslookup through its resolv.conf)? */
static bool resolves(const char *id, const char *name, const char *addr)
{
	char *line = e2e_printf("nslookup %s 2>&1; true", name);
	char *out = e2e_sh_ok(id, line);
	bool ok = e2e_contains(out, addr);
	free(line), free(out);
	return ok;
}

/* The time of one lookup of NAME in the sandbox, ms (20 in one shell, averaged); the
 * cost of the resolver's path (forwarding, and admitting for an allowed name). */
static double lookup_ms(const char *id, const char *name)
{
	char *line = e2e_printf("for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; "
				"do nslookup %s >/dev/null 2>&1; done; true",
				name);
	free(e2e_sh_ok(id, "true"));
	int64_t t0 = e2e_now_ms();
	free(e2e_sh_ok(id, line));
	double ms = (double)(e2e_now_ms() - t0) / 20;
	free(line);
	return ms;
}

static void test_names_allow_wildcard_patch_restart(void **state)
{
	e2e_daemon d;
	daemon_start_with(&d, serve_dns);
	char *id = net_create(&d, "[\"allowed.test\", \"*.svc.test\"]", NULL, 0);
	char *resolv = e2e_sh_ok(id, "cat /etc/resolv.conf");
	assert_false(e2e_contains(resolv, UP_DNS)); /* the gateway: the daemon's resolver */

	assert_true(resolves(id, "allowed.test", ALLOWED));
	assert_true(reaches(id, "allowed.test", PORT, "web " ALLOWED));
	assert_true(reaches(id, ALLOWED, PORT, "web " ALLOWED)); /* admitted by its answer */
	assert_false(resolves(id, "blocked.test", BLOCKED));
	assert_false(reaches(id, "blocked.test", PORT, "web"));
	assert_false(reaches(id, BLOCKED, PORT, "web"));
	assert_true(reaches(id, "a.svc.test", PORT, "web " SVC_A));
	assert_false(resolves(id, "svc.test.evil", EVIL));
	assert_false(reaches(id, EVIL, PORT, "web"));
	assert_false(resolves(id, "svc.test", SVC));
	/* Past the resolver: straight to the upstream over UDP and TCP. */
	assert_false(resolves(id, "blocked.test " UP_DNS, BLOCKED));
	assert_false(resolves(id, "allowed.test " UP_DNS, ALLOWED));
	char *tcp53 = dial(id, UP_DNS, 53);
	assert_false(e2e_contains(tcp53, "open"));
	assert_false(reaches(id, UP_DNS, PORT, "web"));
	printf("names: lookup of an allowed name (forwarded, admitted) %.1f ms, of a refused "
	       "one %.1f ms\n",
	       lookup_ms(id, "allowed.test"), lookup_ms(id, "blocked.test"));

	/* A rule change holds for the next connection, no restart: the old name's
	 * addresses are forgotten, the new name resolves. */
	char *path = e2e_printf("/v1/sandboxes/%s", id);
	cJSON *sb = api(&d, "PATCH", path,
			"{\"network\": {\"enabled\": true, \"allow\": "
			"[\"other.test\"]}}",
			200);
	cJSON *allow = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(sb, "network"), "allow");
	assert_int_equal(cJSON_GetArraySize(allow), 1);
	assert_string_equal(cJSON_GetArrayItem(allow, 0)->valuestring, "other.test");
	cJSON_Delete(sb);
	assert_false(resolves(id, "allowed.test", ALLOWED));
	assert_false(reaches(id, ALLOWED, PORT, "web"));
	assert_true(reaches(id, "other.test", PORT, "web " OTHER));

	/* The sandbox outlives the daemon; the next one answers it again. */
	e2e_daemon_stop(&d);
	daemon_start_with(&d, serve_dns);
	assert_true(reaches(id, "other.test", PORT, "web " OTHER));
	assert_false(resolves(id, "blocked.test", BLOCKED));
	net_delete(&d, id);
	e2e_daemon_stop(&d);
	free(path), free(tcp53), free(resolv), free(id);
}

/* Without domain rules the resolver forwards every name, and deny names are refused. */
static void test_names_deny_only(void **state)
{
	e2e_daemon d;
	daemon_start_with(&d, serve_dns);
	cJSON *sb = api(&d, "POST", "/v1/sandboxes",
			"{\"image\": \"busybox\", \"network\": {\"enabled\": true, "
			"\"deny\": [\"blocked.test\"]}}",
			201);
	char *id = strdup(cJSON_GetObjectItemCaseSensitive(sb, "id")->valuestring);
	cJSON_Delete(sb);
	assert_true(reaches(id, "allowed.test", PORT, "web " ALLOWED));
	assert_false(resolves(id, "blocked.test", BLOCKED));
	/* The upstream is reachable as an address here; as a name server it is not. */
	assert_true(reaches(id, UP_DNS, PORT, "web"));
	assert_false(resolves(id, "blocked.test " UP_DNS, BLOCKED));
	/* a name rule, not an address rule: documented (docs/network.md) */
	assert_true(reaches(id, BLOCKED, PORT, "web " BLOCKED));
	net_delete(&d, id);
	free(id);
	/* No rules at all: every name resolves through the daemon. */
	id = net_create(&d, "[]", NULL, 0);
	assert_true(reaches(id, "blocked.test", PORT, "web " BLOCKED));
	printf("names: lookup without domain rules (forwarded) %.1f ms\n",
	       lookup_ms(id, "allowed.test"));
	net_delete(&d, id);
	free(id);
	e2e_daemon_stop(&d);
}

/* Does the nftables object KIND NAME exist in our table (the bridge's name)? */
static bool nft_has(const char *kind, const char *name)
{
	const char *br = getenv("SANDLOT_NET_BRIDGE");
	char *line = e2e_printf("nft list %s inet %s %s > /dev/null 2>&1", kind,
				br && *br ? br : "sandlot0", name);
	char *argv[] = {"/bin/sh", "-c", line, NULL};
	e2e_result r;
	int rc = e2e_run(&r, NULL, 0, 10000, argv);
	e2e_result_free(&r);
	free(line);
	return rc == 0;
}

/* The set of admitted addresses lives as long as the rules name domains: made with
 * them, gone when a change drops the names, made again, gone at delete while other
 * networks keep the table (the delete adds the set to its chain's batch only then). */
static void test_names_set_follows_rules(void **state)
{
	e2e_daemon d;
	daemon_start_with(&d, serve_dns);
	char *keep = net_create(&d, "[]", NULL, 0);
	char *id = net_create(&d, "[\"allowed.test\"]", NULL, 0);
	char *set = e2e_printf("%s_names", id);
	char *path = e2e_printf("/v1/sandboxes/%s", id);
	assert_true(nft_has("set", set));
	assert_false(nft_has("set", "sbx_none_names")); /* the probe can say no */
	cJSON_Delete(api(&d, "PATCH", path,
			 "{\"network\": {\"enabled\": true, \"allow\": [\"" ALLOWED "/32\"]}}",
			 200));
	assert_false(nft_has("set", set));
	assert_true(reaches(id, ALLOWED, PORT, "web " ALLOWED));
	assert_false(reaches(id, BLOCKED, PORT, "web"));
	cJSON_Delete(api(&d, "PATCH", path,
			 "{\"network\": {\"enabled\": true, \"allow\": [\"other.test\"]}}",
			 200));
	assert_true(nft_has("set", set));
	assert_true(reaches(id, "other.test", PORT, "web " OTHER));
	net_delete(&d, id);
	/* The release (chain, set, lease) follows the answer. */
	for (int i = 0; i < 100 && nft_has("chain", id); i++)
		usleep(50 * 1000);
	assert_false(nft_has("chain", id));
	assert_false(nft_has("set", set));
	assert_true(nft_has("chain", keep));
	net_delete(&d, keep);
	e2e_daemon_stop(&d);
	free(path), free(set), free(id), free(keep);
}

static void expect_400(const e2e_daemon *d, const char *method, const char *path, const char *body,
		       const char *says)
{
	e2e_resp r;
	e2e_req q = {.method = method,
		     .path = path,
		     .body = body,
		     .len = strlen(body),
		     .d = d,
		     .timeout_ms = 30000};
	if (e2e_http_q(&r, &q) != 400 || !e2e_contains(r.body, "\"INVALID_ARGUMENT\"") ||
	    !e2e_contains(r.body, says))
		fail_msg("%s %s %s: HTTP %ld %s", method, path, body, r.status, r.body);
	e2e_resp_free(&r);
}

static void test_names_bad_input(void **state)
{
	e2e_daemon d;
	daemon_start_with(&d, serve_dns);
	const char *bad[][2] = {{"[\"exa mple.com\"]", "network.allow[0]"},
				{"[\"*\"]", "network.allow[0]"},
				{"[\"-a.example.com\"]", "neither a CIDR nor a domain"},
				{"[\"a..example.com\"]", "neither a CIDR nor a domain"},
				{"[\"com\"]", "neither a CIDR nor a domain"},
				{"[\"*.*.example.com\"]", "domain"},
				{"[\"1.2.3.4.5\"]", "network.allow[0]"},
				{"[\"ok.test\", \"a/b.test\"]", "network.allow[1]"}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *body = e2e_printf("{\"image\": \"busybox\", \"network\": {\"enabled\": true, "
					"\"allow\": %s}}",
					bad[i][0]);
		expect_400(&d, "POST", "/v1/sandboxes", body, bad[i][1]);
		free(body);
	}
	/* Block-all with nothing allowed: the network off is what that means. */
	expect_400(&d, "POST", "/v1/sandboxes",
		   "{\"image\": \"busybox\", \"network\": {\"enabled\": true, \"allow\": [], "
		   "\"deny\": [\"0.0.0.0/0\"]}}",
		   "network.deny[0]: 0.0.0.0/0 blocks every destination");
	char *id = net_create(&d, "[\"allowed.test\"]", NULL, 0);
	char *path = e2e_printf("/v1/sandboxes/%s", id);
	expect_400(&d, "PATCH", path, "{\"network\": {\"enabled\": true, \"allow\": [\"a b\"]}}",
		   "network.allow[0]");
	assert_true(reaches(id, "allowed.test", PORT, "web")); /* the rules stayed */
	net_delete(&d, id);
	e2e_daemon_stop(&d);
	/* The CLI alone runs no resolver: a clear refusal, not rules that do nothing. */
	e2e_result r;
	e2e_sandlot(&r, NULL, 0, "create", "--image", "busybox", "--network-allow", "allowed.test",
		    NULL);
	assert_int_equal(r.status, 125);
	assert_true(e2e_contains(r.err, "domain rules need the daemon's resolver"));
	e2e_result_free(&r);
	/* serve refuses an upstream that is not an address before it starts. */
	e2e_sandlot(&r, NULL, 0, "serve", "--dns", "1.2.3", NULL);
	assert_int_not_equal(r.status, 0);
	if (!e2e_contains(r.err, "--dns: \"1.2.3\" is not an IPv4 or IPv6 address"))
		fail_msg("serve --dns 1.2.3: %s", r.err);
	e2e_result_free(&r);
	free(path), free(id);
}

static int group_setup(void **state)
{
	e2e_group_setup(state);
	upstream_up();
	return 0;
}

static int group_teardown(void **state)
{
	upstream_down();
	return e2e_group_teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    NET_TEST(test_names_allow_wildcard_patch_restart),
	    NET_TEST(test_names_deny_only),
	    NET_TEST(test_names_set_follows_rules),
	    NET_TEST(test_names_bad_input),
	};
	e2e_apply_filter();
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
