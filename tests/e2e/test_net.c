/* test_net.c — sandbox networking end to end, hermetic: the test makes its own "internet"
 * (a network namespace behind a veth, serving 203.0.113.10/.20, 169.254.99.1, private
 * 10.77.0.10, 192.168.77.10 and 100.64.77.10, and 198.18.7.10 of the benchmark range) and
 * proves NAT, isolation, private ranges closed by default, egress rules (also after
 * PATCH), leases and a clean host. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <stdarg.h>

#include <cjson/cJSON.h>
#include <nftables/libnftables.h>

#include "common.h"
#include "netlab.h"

#define INET_A	  "203.0.113.10"
#define INET_B	  "203.0.113.20"
#define INET_HOST "203.0.113.1"	 /* the host's end: what NAT makes sources look like */
#define META	  "169.254.99.1" /* link-local, served by the test's "internet" */
#define INET_PORT 8080
#define INET_VETH "sltinet0"
/* Private ranges, closed by default; the benchmark range 198.18.0.0/15 is not. */
#define PRIV_A	  "10.77.0.10"
#define PRIV_DNS  "10.77.0.53" /* a "resolver": answers on port 53 (and 8080) */
#define PRIV_B	  "192.168.77.10"
#define PRIV_C	  "100.64.77.10" /* CGNAT */
#define BENCH_NET "198.18.7.10"

static pid_t inet_pid; /* the "internet": a server in its own network namespace */

static void internet_up(void)
{
	int ready[2], go[2];
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	inet_pid = fork();
	assert_true(inet_pid >= 0);
	if (inet_pid == 0) {
		char c;
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWNET) < 0 || write(ready[1], "r", 1) != 1 ||
		    read(go[0], &c, 1) != 1)
			_exit(1);
		int dns = listen_on("0.0.0.0", 53);
		pid_t p = fork();
		if (p == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			banner_server(dns, "resolver");
		}
		/* Both servers are there before the first test looks at the host's processes
		 * (forked after the go, the resolver once appeared during the first test). */
		int inet = listen_on("0.0.0.0", INET_PORT);
		if (p < 0 || write(ready[1], "d", 1) != 1)
			_exit(1);
		banner_server(inet, "internet");
	}
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1);
	char *cmd = e2e_printf(
	    "set -e; ip link add " INET_VETH " type veth peer name eth0 netns %d; "
	    "ip addr add " INET_HOST "/24 dev " INET_VETH "; ip link set " INET_VETH " up; "
	    "nsenter -t %d -n sh -c 'ip link set lo up; ip link set eth0 up; "
	    "ip addr add " INET_A "/24 dev eth0; ip addr add " INET_B "/24 dev eth0; "
	    "ip addr add " META "/24 dev eth0; ip addr add " PRIV_A "/24 dev eth0; "
	    "ip addr add " PRIV_DNS "/24 dev eth0; ip addr add " PRIV_B "/24 dev eth0; "
	    "ip addr add " PRIV_C "/24 dev eth0; ip addr add " BENCH_NET "/24 dev eth0; "
	    "ip route add default via " INET_HOST "'; "
	    "ip route add 169.254.99.0/24 via " INET_A " dev " INET_VETH "; "
	    "ip route add 10.77.0.0/24 via " INET_A " dev " INET_VETH "; "
	    "ip route add 192.168.77.0/24 via " INET_A " dev " INET_VETH "; "
	    "ip route add 100.64.77.0/24 via " INET_A " dev " INET_VETH "; "
	    "ip route add 198.18.7.0/24 via " INET_A " dev " INET_VETH,
	    (int)inet_pid, (int)inet_pid);
	run_ok(cmd);
	free(cmd);
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]), close(ready[1]), close(go[0]), close(go[1]);
}

static void internet_down(void)
{
	char *argv[] = {"/bin/sh", "-c", "ip link del " INET_VETH " 2>/dev/null", NULL};
	e2e_result r;
	e2e_run(&r, NULL, 0, 10000, argv);
	e2e_result_free(&r);
	child_kill(inet_pid);
	inet_pid = 0;
}

/* ---- sandboxes ----------------------------------------------------------------------- */

static char *create_net(const char *extra1, const char *extra2)
{
	return e2e_sandlot_ok("create", "--image", "busybox", "--network", extra1, extra2, NULL);
}

/* ---- the daemon, driven with common.h's HTTP client ---------------------------------- */

/* The daemon's preview port, from its health. */
static int preview_port(const e2e_daemon *d)
{
	cJSON *h = api(d, "GET", "/v1/health", NULL, 200);
	const cJSON *pp = cJSON_GetObjectItemCaseSensitive(h, "previewPort");
	assert_true(cJSON_IsNumber(pp));
	int port = pp->valueint;
	cJSON_Delete(h);
	return port;
}

static const char *jaddr(const cJSON *sb)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(sb, "network"), "address");
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- tests ----------------------------------------------------------------------------- */

static void test_net_off_only_lo(void **state)
{
	char *id = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	char *links = e2e_sh_ok(id, "ls /sys/class/net");
	assert_string_equal(links, "lo");
	char *routes = e2e_sh_ok(id, "tail -n +2 /proc/net/route | wc -l");
	assert_string_equal(routes, "0");
	char *out = dial(id, INET_A, INET_PORT);
	assert_false(e2e_contains(out, "internet"));
	char *en = e2e_net_field(id, "address");
	assert_null(en);
	free(links), free(routes), free(out);
	rm(id);
	free(id);
}

static void test_net_on_nat_resolv_hosts(void **state)
{
	char *id = create_net(NULL, NULL);
	char *addr = e2e_net_field(id, "address"), *gw = e2e_net_field(id, "gateway");
	assert_non_null(addr);
	assert_non_null(gw);
	/* eth0 has the leased address, the default route goes via the gateway. */
	char *ifc = e2e_sh_ok(id, "ip -4 addr show eth0");
	assert_true(e2e_contains(ifc, addr));
	char *rt = e2e_sh_ok(id, "ip route show default");
	assert_true(e2e_contains(rt, gw));
	/* Through NAT: the server sees the host's address, not the sandbox's. */
	char *out = dial(id, INET_A, INET_PORT);
	char *want = e2e_printf("internet " INET_A " from " INET_HOST);
	if (!e2e_contains(out, want))
		fail_msg("expected \"%s\", got \"%s\"", want, out);
	char *hosts = e2e_sh_ok(id, "cat /etc/hosts");
	assert_true(e2e_contains(hosts, addr));
	assert_true(e2e_contains(hosts, id));
	char *resolv = e2e_sh_ok(id, "cat /etc/resolv.conf");
	assert_true(e2e_contains(resolv, "sandlot"));
	free(ifc), free(rt), free(out), free(want), free(hosts), free(resolv), free(addr), free(gw);
	rm(id);
	free(id);
}

static void test_net_run_cli(void **state)
{
	e2e_result r;
	e2e_sandlot(&r, NULL, 0, "run", "--image", "busybox", "--network", "--", "nc", "-w", "3",
		    INET_B, "8080", NULL);
	assert_int_equal(r.status, 0);
	assert_true(e2e_contains(r.out, "internet " INET_B));
	e2e_result_free(&r);
	/* `run` answers before its release (veth, chain, layer, cgroups) is over, and the
	 * name stays claimed until then: the same name again at once waits for it rather
	 * than failing. */
	for (int i = 0; i < 2; i++) {
		e2e_sandlot(&r, NULL, 0, "run", "--name", "again", "--image", "busybox",
			    "--network", "--", "hostname", NULL);
		if (r.status != 0)
			fail_msg("run --name again (%d): %d %s", i, r.status, r.err);
		assert_string_equal(r.out, "again\n");
		e2e_result_free(&r);
	}
}

static void test_net_isolation(void **state)
{
	char *a = create_net(NULL, NULL), *b = create_net(NULL, NULL);
	char *baddr = e2e_net_field(b, "address"), *gw = e2e_net_field(a, "gateway");
	/* B serves on 9000; it answers itself, but not A. */
	free(e2e_sh_ok(b,
		       "(while true; do echo sandbox-b | nc -l -p 9000; done) >/dev/null 2>&1 &"));
	usleep(200000);
	assert_true(reaches(b, "127.0.0.1", 9000, "sandbox-b"));
	assert_false(reaches(a, baddr, 9000, "sandbox-b"));
	/* Host services: a listener on the gateway address and one on 0.0.0.0. */
	pid_t s1 = host_server(gw, 9101, "hostsvc");
	pid_t s2 = host_server("0.0.0.0", 9102, "hostsvc");
	e2e_daemon d;
	daemon_start(&d);
	/* Control: the host itself reaches them all, and the "metadata" address. */
	char *line = e2e_printf("busybox nc -w 3 %s 9101 </dev/null; busybox nc -w 3 127.0.0.1 "
				"9102 </dev/null; busybox nc -w 3 " META " %d </dev/null",
				gw, INET_PORT);
	char *argv[] = {"/bin/sh", "-c", line, NULL};
	e2e_result r;
	e2e_run(&r, NULL, 0, 20000, argv);
	assert_true(e2e_contains(r.out, "hostsvc"));
	assert_true(e2e_contains(r.out, "internet " META));
	e2e_result_free(&r);
	free(line);
	/* The sandbox: none of them. */
	assert_false(reaches(a, gw, 9101, "hostsvc"));
	assert_false(reaches(a, gw, 9102, "hostsvc"));
	assert_false(reaches(a, INET_HOST, 9102, "hostsvc"));
	assert_false(reaches(a, META, INET_PORT, "internet"));
	char *o1 = dial(a, gw, d.port), *o2 = dial(a, gw, preview_port(&d));
	char *o3 = dial(a, "127.0.0.1", d.port);
	assert_false(e2e_contains(o1, "HTTP"));
	assert_false(e2e_contains(o2, "HTTP"));
	assert_false(e2e_contains(o3, "HTTP"));
	/* ... but the internet, yes. */
	assert_true(reaches(a, INET_A, INET_PORT, "internet"));
	free(o1), free(o2), free(o3);
	e2e_daemon_halt(&d);
	child_kill(s1);
	child_kill(s2);
	rm(a), rm(b);
	free(a), free(b), free(baddr), free(gw);
}

static void expect_reach(const char *id, bool a, bool b)
{
	assert_int_equal(reaches(id, INET_A, INET_PORT, "internet"), a);
	assert_int_equal(reaches(id, INET_B, INET_PORT, "internet"), b);
}

static void test_net_allow_deny_patch(void **state)
{
	/* CLI: --network-deny refuses exactly that. */
	char *c = create_net("--network-deny", INET_B "/32");
	expect_reach(c, true, false);
	rm(c);
	free(c);
	e2e_daemon d;
	daemon_start(&d);
	cJSON *sb = api(&d, "POST", "/v1/sandboxes",
			"{\"image\":\"busybox\",\"network\":{\"enabled\":true,"
			"\"allow\":[\"" INET_A "\"]}}",
			201);
	char *id = strdup(cJSON_GetObjectItemCaseSensitive(sb, "id")->valuestring);
	cJSON *allow = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(sb, "network"), "allow");
	assert_string_equal(cJSON_GetArrayItem(allow, 0)->valuestring, INET_A "/32");
	cJSON_Delete(sb);
	expect_reach(id, true, false);
	char *path = e2e_printf("/v1/sandboxes/%s", id);
	/* PATCH on the running sandbox: allow everything but A. */
	cJSON_Delete(api(&d, "PATCH", path,
			 "{\"network\":{\"allow\":[],\"deny\":[\"" INET_A "/32\"]}}", 200));
	expect_reach(id, false, true);
	/* The /24 allowed, B denied inside it: deny wins. */
	sb = api(&d, "PATCH", path,
		 "{\"network\":{\"allow\":[\"203.0.113.0/24\"],\"deny\":[\"" INET_B "\"]}}", 200);
	cJSON *net = cJSON_GetObjectItemCaseSensitive(sb, "network");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(net, "enabled")));
	assert_string_equal(
	    cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(net, "deny"), 0)->valuestring,
	    INET_B "/32");
	cJSON_Delete(sb);
	expect_reach(id, true, false);
	/* Bad input changes nothing. */
	cJSON_Delete(api(&d, "PATCH", path, "{\"network\":{\"allow\":[\"nope\"]}}", 400));
	cJSON_Delete(api(&d, "PATCH", path, "{\"network\":{\"enabled\":false}}", 400));
	expect_reach(id, true, false);
	/* Stop keeps the lease and the rules; start applies them again. */
	char *addr = e2e_net_field(id, "address");
	free(e2e_sandlot_ok("stop", id, NULL));
	char *addr2 = e2e_net_field(id, "address");
	assert_string_equal(addr, addr2);
	free(e2e_sandlot_ok("start", id, NULL));
	expect_reach(id, true, false);
	free(addr), free(addr2);
	cJSON_Delete(api(&d, "DELETE", path, NULL, 204));
	e2e_daemon_halt(&d);
	free(path), free(id);
}

static void test_net_snapshot_keeps_working(void **state)
{
	char *id = create_net(NULL, NULL);
	char *snap = e2e_sandlot_ok("snapshot", "create", id, "--name", "netsnap", NULL);
	char *id2 = create_net("--snapshot", "netsnap");
	char *a1 = e2e_net_field(id, "address"), *a2 = e2e_net_field(id2, "address");
	assert_string_not_equal(a1, a2);
	assert_true(reaches(id2, INET_A, INET_PORT, "internet"));
	char *hosts = e2e_sh_ok(id2, "cat /etc/hosts");
	assert_true(e2e_contains(hosts, a2));
	rm(id2), rm(id);
	free(e2e_sandlot_ok("snapshot", "rm", "netsnap", NULL));
	free(hosts), free(a1), free(a2), free(snap), free(id2), free(id);
}

#define MANY 20

static void test_net_many_distinct_and_restart(void **state)
{
	/* 20 creates at once, each its own process: the lease claims race. */
	char *bin = e2e_build_path("sandlot");
	char *line = e2e_printf("for i in $(seq %d); do %s create --image busybox --network "
				">%s/many.$i 2>&1 & done; wait",
				MANY, bin, e2e_root());
	run_ok(line);
	free(line);
	free(bin);
	char *ids[MANY], *addrs[MANY];
	for (int i = 0; i < MANY; i++) {
		char *p = e2e_printf("%s/many.%d", e2e_root(), i + 1);
		char *t = e2e_read_file(p);
		assert_non_null(t);
		t[strcspn(t, "\n")] = '\0';
		if (strncmp(t, "sbx_", 4))
			fail_msg("create %d: %s", i + 1, t);
		ids[i] = t;
		addrs[i] = e2e_net_field(t, "address");
		assert_non_null(addrs[i]);
		for (int j = 0; j < i; j++)
			assert_string_not_equal(addrs[i], addrs[j]);
		free(p);
	}
	assert_int_equal(leases_count(), MANY);
	assert_true(reaches(ids[0], INET_A, INET_PORT, "internet"));
	assert_true(reaches(ids[MANY - 1], INET_B, INET_PORT, "internet"));
	/* A daemon killed and restarted keeps every lease: a new sandbox gets a new one. */
	e2e_daemon d;
	daemon_start(&d);
	e2e_daemon_kill(&d);
	daemon_start(&d);
	char *p0 = e2e_printf("/v1/sandboxes/%s", ids[0]);
	cJSON *sb = api(&d, "GET", p0, NULL, 200);
	assert_string_equal(jaddr(sb), addrs[0]);
	cJSON_Delete(sb);
	sb = api(&d, "POST", "/v1/sandboxes",
		 "{\"image\":\"busybox\",\"network\":{\"enabled\":true}}", 201);
	const char *na = jaddr(sb);
	assert_non_null(na);
	for (int i = 0; i < MANY; i++)
		assert_string_not_equal(na, addrs[i]);
	char *pn =
	    e2e_printf("/v1/sandboxes/%s", cJSON_GetObjectItemCaseSensitive(sb, "id")->valuestring);
	cJSON_Delete(sb);
	cJSON_Delete(api(&d, "DELETE", pn, NULL, 204));
	e2e_daemon_halt(&d);
	for (int i = 0; i < MANY; i++) {
		rm(ids[i]);
		free(ids[i]), free(addrs[i]);
	}
	free(p0), free(pn);
}

/* Deletes answer before their release ends, so creates overlap releases: the network
 * lock a releaser holds must never stay held by a launch's half-made child (it was, by
 * a copy of the lock's fd inherited at clone: a deadlock, so a hang fails here). */
static void test_net_create_delete_cycles(void **state)
{
	e2e_daemon d;
	daemon_start(&d);
	for (int i = 0; i < 15; i++) {
		cJSON *sb = api(&d, "POST", "/v1/sandboxes",
				"{\"image\":\"busybox\",\"network\":{\"enabled\":true}}", 201);
		const cJSON *idj = cJSON_GetObjectItemCaseSensitive(sb, "id");
		assert_true(cJSON_IsString(idj));
		char *p = e2e_printf("/v1/sandboxes/%s/executions?wait=30s", idj->valuestring);
		cJSON *ex = api(&d, "POST", p, "{\"command\":[\"true\"]}", 201);
		assert_int_equal(cJSON_GetObjectItemCaseSensitive(ex, "exitCode")->valueint, 0);
		cJSON_Delete(ex);
		free(p);
		p = e2e_printf("/v1/sandboxes/%s", idj->valuestring);
		cJSON_Delete(api(&d, "DELETE", p, NULL, 204));
		free(p);
		cJSON_Delete(sb);
	}
	e2e_daemon_halt(&d);
}

/* The bridge of this state dir's networks (SANDLOT_NET_BRIDGE, else sandlot0). */
static bool bridge_up(void)
{
	const char *br = getenv("SANDLOT_NET_BRIDGE");
	char *p = e2e_printf("/sys/class/net/%s", br && *br ? br : "sandlot0");
	bool up = access(p, F_OK) == 0;
	free(p);
	return up;
}

/* Until the bridge is gone (a `run` answers before its release ends), at most 5 s. */
static bool bridge_gone(void)
{
	for (int i = 0; i < 250 && bridge_up(); i++)
		usleep(20000);
	return !bridge_up();
}

/* The bridge's ifindex (a new bridge of the same name gets a new one), 0 if none. */
static int bridge_ifindex(void)
{
	const char *br = getenv("SANDLOT_NET_BRIDGE");
	char *p = e2e_printf("/sys/class/net/%s/ifindex", br && *br ? br : "sandlot0");
	char *text = e2e_read_file(p);
	int ifindex = text ? atoi(text) : 0;
	free(text), free(p);
	return ifindex;
}

/* Without a daemon, the last network's host side stays up for a second after a `run`
 * (its detached releaser takes it down then): the next `run --network` of a loop finds
 * the same bridge instead of waiting for its removal (the kernel's rtnl lock, which a
 * new network namespace needs too, is held for tens of ms by it). A `run` that exits
 * before that second is over takes nothing down; after it, all is as before (the
 * fixture checks the ruleset, ip_forward and the leases). */
static void test_net_run_cli_keeps_bridge_a_moment(void **state)
{
	assert_false(bridge_up());
	free(e2e_sandlot_ok("run", "--network", "--image", "busybox", "--", "true", NULL));
	/* Well past a release's end (~50-100 ms), well within the second. */
	usleep(300000);
	int first = bridge_ifindex();
	assert_true(first > 0);
	char *out = e2e_sandlot_ok("run", "--network", "--image", "busybox", "--", "cat",
				   "/sys/class/net/eth0/operstate", NULL);
	assert_string_equal(out, "up");
	free(out);
	assert_int_equal(bridge_ifindex(), first);
	assert_true(bridge_gone());
}

/* Until no veth is on the bridge (a DELETE answers before its release ends). */
/* Is bridge port NAME a daemon's spare network ("slv" + its address in hex, the lease
 * of that address held by "spn_...": runtime/spares.c)? */
static bool port_is_spare(const char *name)
{
	unsigned a;
	if (strlen(name) != 11 || sscanf(name, "slv%8x", &a) != 1)
		return false;
	char *p = e2e_printf("%s/leases/%u.%u.%u.%u", getenv("SANDLOT_STATE_DIR"), a >> 24,
			     (a >> 16) & 255, (a >> 8) & 255, a & 255);
	char *owner = e2e_read_file(p);
	bool spare = owner && !strncmp(owner, "spn_", 4);
	free(owner), free(p);
	return spare;
}

/* Until the bridge has no port but a daemon's spare networks'. */
static void wait_bridge_empty(void)
{
	const char *br = getenv("SANDLOT_NET_BRIDGE");
	char *p = e2e_printf("/sys/class/net/%s/brif", br && *br ? br : "sandlot0");
	for (int i = 0; i < 250; i++) {
		DIR *d = opendir(p);
		int n = 0;
		for (struct dirent *e; d && (e = readdir(d));)
			n += e->d_name[0] != '.' && !port_is_spare(e->d_name);
		if (d)
			closedir(d);
		if (n == 0)
			break;
		usleep(20000);
	}
	free(p);
}

/* A running daemon holds the host side: a lone network sandbox made and deleted again
 * and again does not make and delete the bridge and table each time (a bridge deletion
 * waits ~50 ms for RCU here). When the daemon stops, the host side goes (the fixture
 * checks the ruleset and ip_forward); a daemon killed with -9 holds nothing. */
static void test_net_daemon_holds_host_side(void **state)
{
	net_state *s = *state;
	e2e_daemon d;
	daemon_start(&d);
	for (int i = 0; i < 2; i++) {
		cJSON *sb = api(&d, "POST", "/v1/sandboxes",
				"{\"image\":\"busybox\",\"network\":{\"enabled\":true}}", 201);
		char *p = e2e_printf("/v1/sandboxes/%s",
				     cJSON_GetObjectItemCaseSensitive(sb, "id")->valuestring);
		cJSON_Delete(api(&d, "DELETE", p, NULL, 204));
		free(p);
		cJSON_Delete(sb);
		wait_bridge_empty();
		assert_true(bridge_up());
		/* With no port on it, the bridge keeps an address of its own, set (3:
		 * NET_ADDR_SET), not its lowest port's, which changes as ports come and go
		 * (runtime/net.c, addr_fix). */
		const char *br = getenv("SANDLOT_NET_BRIDGE");
		char *at =
		    e2e_printf("/sys/class/net/%s/addr_assign_type", br && *br ? br : "sandlot0");
		char *type = e2e_read_file(at);
		assert_non_null(type);
		assert_string_equal(type, "3\n");
		free(type);
		free(at);
		char *fwd = ip_forward();
		assert_string_equal(fwd, "1\n");
		free(fwd);
	}
	/* The CLI's last network leaves it up too while the daemon runs (once the run's
	 * detached release is over: its lease goes last). */
	free(e2e_sandlot_ok("run", "--network", "--image", "busybox", "--", "true", NULL));
	for (int i = 0; i < 250 && sandbox_leases_count() != s->leases; i++)
		usleep(20000);
	assert_int_equal(sandbox_leases_count(), s->leases);
	assert_true(bridge_up());
	e2e_daemon_halt(&d);
	assert_false(bridge_up());
	char *nft = nft_ruleset();
	assert_string_equal(nft, s->nft);
	free(nft);
	/* A daemon killed with -9: its hold is void, the CLI's last network takes it down. */
	daemon_start(&d);
	e2e_daemon_kill(&d);
	free(e2e_sandlot_ok("run", "--network", "--image", "busybox", "--", "true", NULL));
	assert_true(bridge_gone());
}

/* Addresses whose lease a daemon's spare network holds ("spn_..."), at most MAX. */
static int spare_leases(char addrs[][16], int max)
{
	char *dir = e2e_printf("%s/leases", getenv("SANDLOT_STATE_DIR"));
	DIR *d = opendir(dir);
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d)) && n < max;) {
		if (e->d_name[0] == '.')
			continue;
		char *p = e2e_printf("%s/%s", dir, e->d_name);
		char *owner = e2e_read_file(p);
		if (owner && !strncmp(owner, "spn_", 4))
			snprintf(addrs[n++], 16, "%s", e->d_name);
		free(owner), free(p);
	}
	if (d)
		closedir(d);
	free(dir);
	return n;
}

/* The spare inits of daemon D (runtime/spares.c, launch spares; cgroup v1 only): its
 * children that are not (yet) a sandbox's sandlot-init, as pids, at most MAX. */
static int spare_inits(const e2e_daemon *d, pid_t *out, int max)
{
	DIR *dir = opendir("/proc");
	int n = 0;
	for (struct dirent *de; dir && (de = readdir(dir)) && n < max;) {
		int pid = atoi(de->d_name);
		if (pid <= 0)
			continue;
		char *p = e2e_printf("/proc/%d/stat", pid);
		char *text = e2e_read_file(p);
		int ppid = 0;
		char comm[64] = "";
		if (text && sscanf(text, "%*d (%63[^)]) %*c %d", comm, &ppid) == 2 &&
		    ppid == d->pid && strcmp(comm, "sandlot-init"))
			out[n++] = pid;
		free(text), free(p);
	}
	if (dir)
		closedir(dir);
	return n;
}

/* Spare networks (runtime/spares.c): after a daemon's first network create it keeps two
 * made ahead (veth on the bridge, address leased to "spn_...", route), and the next
 * create takes one: its lease passes to the sandbox, which works as any other (its
 * address on eth0, its own sysfs, NAT and its chain). On cgroup v1 that create also
 * takes one of the daemon's spare inits, which enters the network at the take and mounts
 * a sysfs of its own there (runtime/launch_spare.c, spare_enter_net): read-only, masked,
 * showing eth0; the profile in the spare's two filters. A spare whose bridge was made
 * again behind the daemon's back is made again at its take. When the daemon stops the
 * spares' veths and leases go, and with them the bridge and table. */
static void test_net_daemon_spare_networks(void **state)
{
	net_state *s = *state;
	e2e_daemon d;
	daemon_start(&d);
	char a_addr[16], b_addr[16], c_addr[16], spares[4][16];
	char *a = net_create(&d, NULL, a_addr, sizeof(a_addr));
	int n = 0;
	for (int i = 0; i < 250 && (n = spare_leases(spares, 4)) < 2; i++)
		usleep(20000);
	assert_int_equal(n, 2);
	bool v1 = access("/sys/fs/cgroup/memory", F_OK) == 0;
	pid_t inits[4];
	int ninits = 0;
	for (int i = 0; v1 && i < 250 && (ninits = spare_inits(&d, inits, 4)) < 2; i++)
		usleep(20000);
	assert_true(!v1 || ninits == 2);
	/* The spares' own network namespaces: empty, and not what they end in. */
	char spare_ns[2][64] = {"", ""};
	for (int i = 0; i < ninits && i < 2; i++) {
		char *p = e2e_printf("/proc/%d/ns/net", (int)inits[i]);
		assert_true(readlink(p, spare_ns[i], sizeof(spare_ns[i]) - 1) > 0);
		free(p);
	}
	char *b = net_create(&d, NULL, b_addr, sizeof(b_addr));
	assert_true(!strcmp(b_addr, spares[0]) || !strcmp(b_addr, spares[1]));
	char *lease = e2e_printf("%s/leases/%s", getenv("SANDLOT_STATE_DIR"), b_addr);
	char *owner = e2e_read_file(lease);
	assert_non_null(owner);
	assert_string_equal(owner, b);
	char *ifc = e2e_sh_ok(b, "ip -4 addr show eth0; ip route show default; ls /sys/class/net");
	assert_true(e2e_contains(ifc, b_addr));
	assert_true(e2e_contains(ifc, "default via"));
	assert_true(e2e_contains(ifc, "eth0\nlo"));
	assert_true(reaches(b, INET_A, INET_PORT, "internet"));
	if (v1) {
		char *p = e2e_printf("%s/sandboxes/%s/sandbox.json", getenv("SANDLOT_STATE_DIR"), b);
		char *rec = e2e_read_file(p);
		assert_non_null(rec);
		cJSON *j = cJSON_Parse(rec);
		cJSON *pid = cJSON_GetObjectItemCaseSensitive(j, "init_pid");
		assert_true(cJSON_IsNumber(pid));
		pid_t ipid = (pid_t)pid->valuedouble;
		assert_true(ipid == inits[0] || ipid == inits[1]);
		char *nsp = e2e_printf("/proc/%d/ns/net", (int)ipid), now[64] = "";
		assert_true(readlink(nsp, now, sizeof(now) - 1) > 0);
		assert_string_not_equal(now, spare_ns[0]);
		assert_string_not_equal(now, spare_ns[1]);
		char *out = e2e_sh_ok(b, "grep ^Seccomp_filters /proc/self/status; "
					 "ls /sys/firmware | wc -l; "
					 "grep -c ' /sys ro,' /proc/self/mountinfo; "
					 "cat /sys/class/net/eth0/operstate; "
					 "echo 1 > /sys/class/net/eth0/mtu 2>/dev/null || echo ro; "
					 "grep -c sbx_ /etc/hosts; hostname");
		char *want = e2e_printf("Seccomp_filters:\t2\n0\n1\nup\nro\n1\n%s", b);
		assert_string_equal(out, want);
		free(want), free(out), free(nsp), free(rec), free(p);
		cJSON_Delete(j);
	}
	/* The bridge made again behind the daemon's back: the spares' veths are off it. */
	for (int i = 0; i < 250 && spare_leases(spares, 4) < 2; i++)
		usleep(20000);
	const char *br = getenv("SANDLOT_NET_BRIDGE");
	char *cmd = e2e_printf("ip link del %s", br && *br ? br : "sandlot0");
	run_ok(cmd);
	char *c = net_create(&d, NULL, c_addr, sizeof(c_addr));
	assert_true(reaches(c, INET_B, INET_PORT, "internet"));
	char *logp = e2e_printf("%s/sandlot.log", getenv("SANDLOT_STATE_DIR"));
	char *log = e2e_read_file(logp);
	assert_non_null(log);
	assert_true(e2e_contains(log, "off the bridge; made again")); /* C took a stale spare */
	free(log), free(logp);
	net_delete(&d, c);
	net_delete(&d, b);
	net_delete(&d, a);
	wait_bridge_empty();
	e2e_daemon_halt(&d);
	assert_false(bridge_up());
	assert_int_equal(leases_count(), s->leases);
	char *nft = nft_ruleset();
	assert_string_equal(nft, s->nft);
	free(nft), free(cmd), free(ifc), free(owner), free(lease), free(a), free(b), free(c);
}

/* The daemon skips listing the tables once it has seen its own (the bridge unchanged);
 * if someone removes the table behind its back, the next create makes it again. */
static void test_net_daemon_table_removed_behind_its_back(void **state)
{
	e2e_daemon d;
	daemon_start(&d);
	const char *body = "{\"image\":\"busybox\",\"network\":{\"enabled\":true}}";
	cJSON *a = api(&d, "POST", "/v1/sandboxes", body, 201);
	const char *br = getenv("SANDLOT_NET_BRIDGE");
	char *cmd = e2e_printf("nft delete table inet %s", br && *br ? br : "sandlot0");
	run_ok(cmd);
	free(cmd);
	cJSON *b = api(&d, "POST", "/v1/sandboxes", body, 201);
	const char *bid = cJSON_GetObjectItemCaseSensitive(b, "id")->valuestring;
	/* Its NAT and egress rules are there: the "internet" answers. */
	assert_true(reaches(bid, INET_A, INET_PORT, "internet"));
	cJSON *sbs[] = {a, b};
	for (int i = 0; i < 2; i++) {
		char *p = e2e_printf("/v1/sandboxes/%s",
				     cJSON_GetObjectItemCaseSensitive(sbs[i], "id")->valuestring);
		cJSON_Delete(api(&d, "DELETE", p, NULL, 204));
		free(p);
		cJSON_Delete(sbs[i]);
	}
	wait_bridge_empty();
	e2e_daemon_halt(&d);
	assert_false(bridge_up());
}

/* Which of the test's private servers (and the benchmark-range one) ID reaches. */
static void expect_private(const char *id, bool a, bool b, bool c, bool bench)
{
	assert_int_equal(reaches(id, PRIV_A, INET_PORT, "internet"), a);
	assert_int_equal(reaches(id, PRIV_B, INET_PORT, "internet"), b);
	assert_int_equal(reaches(id, PRIV_C, INET_PORT, "internet"), c);
	assert_int_equal(reaches(id, BENCH_NET, INET_PORT, "internet"), bench);
}

/* Network on, no rules: the internet (the benchmark range here) yes; RFC 1918, CGNAT,
 * the host's own addresses and other sandboxes no. An allow rule naming a private range
 * opens it; 0.0.0.0/0 does not; a PATCH opens one on a running sandbox. */
static void test_net_private_closed_by_default(void **state)
{
	/* Control: the host reaches every one of them. */
	char *line = e2e_printf("for a in " PRIV_A " " PRIV_B " " PRIV_C " " BENCH_NET "; do "
				"busybox nc -w 3 $a %d </dev/null; done",
				INET_PORT);
	char *argv[] = {"/bin/sh", "-c", line, NULL};
	e2e_result r;
	e2e_run(&r, NULL, 0, 20000, argv);
	assert_true(e2e_contains(r.out, "internet " PRIV_A));
	assert_true(e2e_contains(r.out, "internet " PRIV_B));
	assert_true(e2e_contains(r.out, "internet " PRIV_C));
	assert_true(e2e_contains(r.out, "internet " BENCH_NET));
	e2e_result_free(&r);
	free(line);
	char *a = create_net(NULL, NULL), *b = create_net(NULL, NULL);
	expect_private(a, false, false, false, true);
	/* The host: a service on 0.0.0.0, by each of its addresses the sandbox could route
	 * to; another sandbox's service. */
	pid_t hs = host_server("0.0.0.0", 9104, "hostsvc");
	char *gw = e2e_net_field(a, "gateway"), *baddr = e2e_net_field(b, "address");
	assert_false(reaches(a, gw, 9104, "hostsvc"));
	assert_false(reaches(a, INET_HOST, 9104, "hostsvc"));
	assert_false(reaches(a, "127.0.0.1", 9104, "hostsvc"));
	free(e2e_sh_ok(b,
		       "(while true; do echo sandbox-b | nc -l -p 9000; done) >/dev/null 2>&1 &"));
	usleep(200000);
	assert_false(reaches(a, baddr, 9000, "sandbox-b"));
	child_kill(hs);
	rm(a), rm(b);
	free(a), free(b), free(gw), free(baddr);
	/* Everything allowed is not a private range named. */
	a = create_net("--network-allow", "0.0.0.0/0");
	expect_private(a, false, false, false, true);
	rm(a);
	free(a);
	/* A range named: that one (and, as any allow list, nothing else). */
	a = create_net("--network-allow", "10.77.0.0/24");
	expect_private(a, true, false, false, false);
	rm(a);
	free(a);
	/* Deny still wins over a private range named. */
	a = e2e_sandlot_ok("create", "--image", "busybox", "--network-allow", "10.77.0.0/24",
			   "--network-allow", "198.18.0.0/15", "--network-deny", PRIV_A, NULL);
	expect_private(a, false, false, false, true);
	rm(a);
	free(a);
	/* PATCH on a running sandbox, through the API. */
	e2e_daemon d;
	daemon_start(&d);
	cJSON *sb = api(&d, "POST", "/v1/sandboxes",
			"{\"image\":\"busybox\",\"network\":{\"enabled\":true}}", 201);
	char *id = strdup(cJSON_GetObjectItemCaseSensitive(sb, "id")->valuestring);
	cJSON_Delete(sb);
	char *path = e2e_printf("/v1/sandboxes/%s", id);
	expect_private(id, false, false, false, true);
	cJSON_Delete(api(&d, "PATCH", path,
			 "{\"network\":{\"allow\":[\"192.168.77.0/24\",\"198.18.0.0/15\"]}}", 200));
	expect_private(id, false, true, false, true);
	cJSON_Delete(api(&d, "DELETE", path, NULL, 204));
	e2e_daemon_halt(&d);
	free(path), free(id);
}

/* The operator opens ranges for every sandbox: `serve --allow-private` (repeatable,
 * comma lists) and SANDLOT_NET_ALLOW_PRIVATE for the CLI. A sandbox's allow list still
 * limits it. */
static void test_net_allow_private_operator(void **state)
{
	const char *extra[] = {"--allow-private", "10.77.0.0/24", "--allow-private",
			       "100.64.77.10,172.16.0.0/12", NULL};
	char *sock = e2e_printf("%s/api.sock", e2e_root());
	e2e_daemon d;
	e2e_daemon_start(&d, sock, true, extra);
	free(sock);
	cJSON *sb = api(&d, "POST", "/v1/sandboxes",
			"{\"image\":\"busybox\",\"network\":{\"enabled\":true}}", 201);
	char *p1 =
	    e2e_printf("/v1/sandboxes/%s", cJSON_GetObjectItemCaseSensitive(sb, "id")->valuestring);
	expect_private(cJSON_GetObjectItemCaseSensitive(sb, "id")->valuestring, true, false, true,
		       true);
	cJSON_Delete(sb);
	sb = api(&d, "POST", "/v1/sandboxes",
		 "{\"image\":\"busybox\",\"network\":{\"enabled\":true,"
		 "\"allow\":[\"198.18.0.0/15\"]}}",
		 201);
	char *p2 =
	    e2e_printf("/v1/sandboxes/%s", cJSON_GetObjectItemCaseSensitive(sb, "id")->valuestring);
	expect_private(cJSON_GetObjectItemCaseSensitive(sb, "id")->valuestring, false, false, false,
		       true);
	cJSON_Delete(sb);
	cJSON_Delete(api(&d, "DELETE", p1, NULL, 204));
	cJSON_Delete(api(&d, "DELETE", p2, NULL, 204));
	e2e_daemon_halt(&d);
	free(p1), free(p2);
	setenv("SANDLOT_NET_ALLOW_PRIVATE", "192.168.77.0/24", 1);
	char *id = create_net(NULL, NULL);
	unsetenv("SANDLOT_NET_ALLOW_PRIVATE");
	expect_private(id, false, true, false, true);
	rm(id);
	free(id);
}

/* The name servers a sandbox is given stay reachable on port 53 when they sit in a
 * private range (a cloud VPC's resolver, a LAN router), and only there. */
static void test_net_private_resolver(void **state)
{
	setenv("SANDLOT_NET_DNS", PRIV_DNS, 1);
	char *id = create_net(NULL, NULL);
	unsetenv("SANDLOT_NET_DNS");
	char *resolv = e2e_sh_ok(id, "cat /etc/resolv.conf");
	assert_true(e2e_contains(resolv, "nameserver " PRIV_DNS));
	assert_true(reaches(id, PRIV_DNS, 53, "resolver"));
	assert_false(reaches(id, PRIV_DNS, INET_PORT, "internet"));
	assert_false(reaches(id, PRIV_A, 53, "resolver"));
	free(resolv);
	rm(id);
	free(id);
}

static void test_net_bad_input(void **state)
{
	e2e_result r;
	e2e_sandlot(&r, NULL, 0, "create", "--image", "busybox", "--network-allow", "10.0.0.0/40",
		    NULL);
	assert_int_equal(r.status, 125);
	assert_true(e2e_contains(r.err, "network.allow[0]"));
	e2e_result_free(&r);
	/* serve refuses a bad --allow-private before it starts. */
	const char *bad[][2] = {{"10.0.0.0/33", "--allow-private[0]: \"10.0.0.0/33\" is not"},
				{"10.1.0.0/16,8.8.8.0/24", "not inside a private range"},
				{"169.254.169.254", "link-local"}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e2e_sandlot(&r, NULL, 0, "serve", "--allow-private", bad[i][0], NULL);
		assert_int_not_equal(r.status, 0);
		if (!e2e_contains(r.err, bad[i][1]))
			fail_msg("serve --allow-private %s: %s", bad[i][0], r.err);
		e2e_result_free(&r);
	}
	setenv("SANDLOT_NET_ALLOW_PRIVATE", "10.1.0.0/16,nope", 1);
	e2e_sandlot(&r, NULL, 0, "serve", NULL);
	unsetenv("SANDLOT_NET_ALLOW_PRIVATE");
	assert_int_not_equal(r.status, 0);
	assert_true(e2e_contains(r.err, "SANDLOT_NET_ALLOW_PRIVATE[1]"));
	e2e_result_free(&r);
}

static int group_setup(void **state)
{
	e2e_group_setup(state);
	internet_up();
	return 0;
}

static int group_teardown(void **state)
{
	internet_down();
	return e2e_group_teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    NET_TEST(test_net_off_only_lo),
	    NET_TEST(test_net_on_nat_resolv_hosts),
	    NET_TEST(test_net_run_cli),
	    NET_TEST(test_net_run_cli_keeps_bridge_a_moment),
	    NET_TEST(test_net_isolation),
	    NET_TEST(test_net_allow_deny_patch),
	    NET_TEST(test_net_snapshot_keeps_working),
	    NET_TEST(test_net_many_distinct_and_restart),
	    NET_TEST(test_net_create_delete_cycles),
	    NET_TEST(test_net_daemon_holds_host_side),
	    NET_TEST(test_net_daemon_table_removed_behind_its_back),
	    NET_TEST(test_net_daemon_spare_networks),
	    NET_TEST(test_net_private_closed_by_default),
	    NET_TEST(test_net_allow_private_operator),
	    NET_TEST(test_net_private_resolver),
	    NET_TEST(test_net_bad_input),
	};
	e2e_apply_filter();
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
