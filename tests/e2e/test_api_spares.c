/* test_api_spares.c — what `sandlot serve` makes ahead, end to end: spare network
 * namespaces, cgroups and inits are taken by creates (also eight clients at once), and a
 * spare killed during its take costs nothing but a launch from nothing. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "api_common.h"

/* ---- spares: made ahead, taken by creates ------------------------------------------------ */

/* The inode of a network namespace link ("net:[N]"), 0 if LINK is not one. */
static unsigned long netns_ino(const char *link)
{
	char buf[64];
	ssize_t n = readlink(link, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	unsigned long ino = 0;
	return sscanf(buf, "net:[%lu]", &ino) == 1 ? ino : 0;
}

/* The network namespaces the daemon holds open (its spares), up to MAX. Not the host's:
 * a spare being made holds that one open for a moment too (launch_new_netns). */
static int daemon_netns_fds(unsigned long *out, int max)
{
	unsigned long host = netns_ino("/proc/self/ns/net");
	char *dir = e2e_printf("/proc/%d/fd", (int)D.pid);
	DIR *d = opendir(dir); /* no assert: sample_spares calls this on a thread */
	int n = 0;
	if (!d) {
		free(dir);
		return 0;
	}
	struct dirent *de;
	while ((de = readdir(d)) && n < max) {
		char *l = e2e_printf("%s/%s", dir, de->d_name);
		unsigned long ino = netns_ino(l);
		if (ino && ino != host)
			out[n++] = ino;
		free(l);
	}
	closedir(d);
	free(dir);
	return n;
}

static unsigned long init_netns(const char *id)
{
	char *l = e2e_printf("/proc/%d/ns/net", (int)record_init_pid(id));
	unsigned long ino = netns_ino(l);
	free(l);
	assert_true(ino != 0);
	return ino;
}

/* Waits (2 s at most) until LIST shows the daemon's two spares, into HELD: exactly two
 * (a third may be on its way while one is being made). */
static void wait_held(int (*list)(unsigned long *, int), unsigned long held[8])
{
	int n = 0;
	for (int i = 0; i < 200 && n != 2; i++) {
		n = list(held, 8);
		if (n != 2)
			usleep(10000);
	}
	assert_int_equal(n, 2);
}

/* Waits (2 s at most) until LIST shows two spares again and TAKEN is not among them: what
 * a daemon does after a create took one (its syncer, 20 ms later). NOW gets the list. */
static void wait_replaced(int (*list)(unsigned long *, int), unsigned long taken,
			  unsigned long now[8])
{
	int m = 0;
	bool still = true;
	for (int i = 0; i < 200 && (m != 2 || still); i++) {
		m = list(now, 8);
		still = false;
		for (int k = 0; k < m; k++)
			still = still || now[k] == taken;
		if (m != 2 || still)
			usleep(10000);
	}
	assert_int_equal(m, 2);
	assert_false(still);
}

/* A create with the network off takes a network namespace the daemon made ahead (lo up,
 * nothing else) instead of cloning one, and the daemon makes another; no two sandboxes
 * share one, nor does any the host's (runtime/spares.c, spare_netns_take). Limits other
 * than the defaults, so that no spare init (which brings its own) is taken. */
#define OTHER_LIMITS "{\"image\":\"busybox\",\"resources\":{\"memory\":\"256Mi\"}}"
static void test_creates_take_spare_netns(void **state)
{
	unsigned long host = netns_ino("/proc/self/ns/net"), held[8], now[8];
	assert_true(host != 0);
	wait_held(daemon_netns_fds, held); /* NETNS_SPARES, made at the start and after each take */
	char *a = sandbox_new(OTHER_LIMITS);
	unsigned long na = init_netns(a);
	assert_true(na == held[0] || na == held[1]);
	/* Handed over, and replaced shortly after. */
	wait_replaced(daemon_netns_fds, na, now);
	char *b = sandbox_new(OTHER_LIMITS);
	unsigned long nb = init_netns(b);
	assert_true(nb == now[0] || nb == now[1]);
	assert_true(na != nb && na != host && nb != host);
	/* What the clone would have made: lo alone, up, and reachable on any port. */
	char *out = sh_ok(a, "ls /sys/class/net; cat /sys/class/net/lo/flags; "
			     "(nc -l -p 7 -e echo ok &) ; sleep 0.2; nc 127.0.0.1 7 </dev/null");
	assert_string_equal(out, "lo\n0x9\nok\n");
	free(out);
	sandbox_del(a);
	sandbox_del(b);
}

/* The daemon's spare cgroups in the v1 memory hierarchy, as inodes (a renamed cgroup keeps
 * its own); not those its spare inits are in (.spare-...-i<n>). */
static int spare_cgroups(unsigned long *out, int max)
{
	char *mine = e2e_printf(".spare-%d-", (int)D.pid);
	int n = prefixed_inodes("/sys/fs/cgroup/memory/sandlot", mine, "-i", out, max);
	free(mine);
	return n;
}

static unsigned long memcg_ino(const char *id)
{
	char *p = e2e_printf("/sys/fs/cgroup/memory/sandlot/%s", id);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	free(p);
	return st.st_ino;
}

/* PID is in sandbox ID's cgroups, in every v1 hierarchy of them. */
static void assert_in_cgroups(pid_t pid, const char *id)
{
	char *f = e2e_printf("/proc/%d/cgroup", (int)pid);
	char *cg = e2e_read_file(f);
	free(f);
	assert_non_null(cg);
	static const char *const ctrls[] = {
	    ":cpu:", ":cpuacct:", ":memory:", ":pids:", ":freezer:"};
	for (size_t i = 0; i < sizeof(ctrls) / sizeof(ctrls[0]); i++) {
		char *want = e2e_printf("%s/sandlot/%s\n", ctrls[i], id);
		if (!strstr(cg, want))
			fail_msg("pid %d not in %s of %s:\n%s", (int)pid, ctrls[i], id, cg);
		free(want);
	}
	free(cg);
}

/* On cgroup v1 the daemon keeps two cgroups of the default limits made, and a create with
 * those limits renames one to its own (runtime/spares.c, spare_cgroup_create_or_take); one with
 * other limits makes its own. They go when the daemon stops (the group's leak check). A
 * volume keeps the first create off the spare inits, which bring cgroups of their own. */
static void test_creates_take_spare_cgroups(void **state)
{
	if (access("/sys/fs/cgroup/memory", F_OK) != 0)
		skip(); /* cgroup v2: no rename, no spares */
	unsigned long held[8], now[8];
	wait_held(spare_cgroups, held);
	char *a = sandbox_new("{\"image\":\"busybox\",\"volumes\":[{\"name\":\"cgvol\","
			      "\"mountPath\":\"/vol\"}]}");
	unsigned long ia = memcg_ino(a);
	assert_true(ia == held[0] || ia == held[1]);
	char *f = e2e_printf("/sys/fs/cgroup/pids/sandlot/%s/pids.max", a);
	char *lim = e2e_read_file(f);
	assert_string_equal(lim, "512\n");
	free(lim);
	free(f);
	/* init is in every hierarchy of it */
	assert_in_cgroups(record_init_pid(a), a);
	/* replaced shortly after */
	wait_replaced(spare_cgroups, ia, now);
	char *b = sandbox_new("{\"image\":\"busybox\",\"resources\":{\"memory\":\"256Mi\"}}");
	unsigned long ib = memcg_ino(b);
	assert_true(ib != now[0] && ib != now[1] && ib != ia);
	f = e2e_printf("/sys/fs/cgroup/memory/sandlot/%s/memory.limit_in_bytes", b);
	lim = e2e_read_file(f);
	assert_string_equal(lim, "268435456\n");
	free(lim);
	free(f);
	sandbox_del(a);
	sandbox_del(b);
	expect_call("DELETE", "/v1/volumes/cgvol", NULL, 204, NULL, NULL);
}

static int spare_init_dirs(unsigned long *out, int max)
{
	return spare_init_dirs_of(D.pid, out, max);
}

static unsigned long run_dir_ino(const char *id)
{
	char *p = e2e_printf("%s/sandboxes/%s", getenv("SANDLOT_RUN_DIR"), id);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	free(p);
	return st.st_ino;
}

/* The daemon's spare inits: its children in a mount namespace of their own that are not
 * (yet) a sandbox's sandlot-init. */
static int spare_init_pids(pid_t *out, int max)
{
	char *self = e2e_printf("/proc/%d/ns/mnt", (int)D.pid);
	char dns[64] = "";
	ssize_t l = readlink(self, dns, sizeof(dns) - 1);
	free(self);
	assert_true(l > 0);
	DIR *d = opendir("/proc");
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < max) {
		int pid = atoi(de->d_name);
		if (pid <= 0)
			continue;
		char *stat = e2e_printf("/proc/%d/stat", pid);
		char *text = e2e_read_file(stat);
		free(stat);
		int ppid = 0;
		char comm[64] = "";
		if (text && sscanf(text, "%*d (%63[^)]) %*c %d", comm, &ppid) == 2 &&
		    ppid == D.pid && strcmp(comm, "sandlot-init")) {
			char *ns = e2e_printf("/proc/%d/ns/mnt", pid), buf[64] = "";
			if (readlink(ns, buf, sizeof(buf) - 1) > 0 && strcmp(buf, dns))
				out[n++] = pid;
			free(ns);
		}
		free(text);
	}
	closedir(d);
	return n;
}

/* The probe's chroot escape (tests/probe) run by the root of sandbox ID: "same" when the
 * climb ended on the sandbox's own root, "moved" when it got out. */
static char *chroot_escape(const char *id)
{
	size_t len;
	char *bytes = e2e_probe_bytes(&len);
	char *p = e2e_printf("/v1/sandboxes/%s/files?path=/tmp/probe&mode=0755", id);
	e2e_req q = {.method = "PUT", .path = p, .body = bytes, .len = len};
	e2e_resp r;
	e2e_http_q(&r, &q);
	expect(&r, 204, NULL, NULL);
	e2e_resp_free(&r);
	free(p);
	free(bytes);
	char *out = sh_ok(id, "/tmp/probe --chroot-escape /tmp/esc");
	char *v = e2e_probe_field(out, "chroot_escape");
	assert_non_null(v);
	free(out);
	return v;
}

/* The control: in a plain chroot(2) on the host the same probe does get out. */
static void chroot_escape_control(void)
{
	char dir[] = "/tmp/sandlot-escape.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *copy = e2e_printf("%s/probe", dir);
	size_t len;
	char *bytes = e2e_probe_bytes(&len);
	FILE *f = fopen(copy, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(bytes, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(copy, 0755), 0);
	e2e_result r;
	char *argv[] = {"/usr/sbin/chroot", dir, "/probe", "--chroot-escape", "/esc", NULL};
	assert_int_equal(e2e_run(&r, NULL, 0, 30000, argv), 0);
	char *v = e2e_probe_field(r.out, "chroot_escape");
	assert_non_null(v);
	assert_string_equal(v, "moved");
	free(v);
	e2e_result_free(&r);
	char *esc = e2e_printf("%s/esc", dir);
	rmdir(esc);
	unlink(copy);
	rmdir(dir);
	free(esc);
	free(copy);
	free(bytes);
}

/* The system calls a spare's take makes (launch_take_calls), each tried by a sandbox's
 * root: all must fail. */
#define HELD_CALLS_DENIED                                                                          \
	"grep ^Seccomp_filters /proc/self/status; mount -t tmpfs x /mnt 2>&1 | grep -c denied; "   \
	"hostname x 2>&1 | grep -c 'not permitted'; unshare -U true 2>&1 | grep -c 'not "          \
	"permitted'; nsenter -t $$ -u true 2>&1 | grep -c 'not permitted'"
#define HELD_DENIED_OUT "1\n1\n1\n1\n"

/* On cgroup v1 the daemon keeps two sandbox inits made ahead (runtime/launch.c,
 * sl_launch_spare): in their namespaces and cgroups of the default limits, /proc, /sys and
 * /dev mounted in a staging root of their own run dir, the host's tree detached. A create of the
 * default limits and no volumes renames one's run dir and cgroups to its own and
 * hands it the rest; what it becomes is the sandbox a launch from nothing makes (its devices and
 * ttys the sandbox's root's, the masks in place). A spare killed under the daemon costs nothing but
 * the wait for it: the create launches from nothing. */
static void test_creates_take_spare_init(void **state)
{
	if (access("/sys/fs/cgroup/memory", F_OK) != 0)
		skip(); /* cgroup v2: no rename, no spares */
	unsigned long held[8], now[8];
	wait_held(spare_init_dirs, held);
	/* A spare's dir is made just before its process: wait for both processes too. */
	pid_t spids[8];
	int n = 0;
	for (int i = 0; i < 200 && (n = spare_init_pids(spids, 8)) < 2; i++)
		usleep(10000);
	assert_int_equal(n, 2);
	char *a = sandbox_new(NULL);
	unsigned long ia = run_dir_ino(a);
	assert_true(ia == held[0] || ia == held[1]);
	pid_t ipid = record_init_pid(a);
	assert_true(ipid == spids[0] || ipid == spids[1]);
	assert_in_cgroups(ipid, a);
	char *f = e2e_printf("/proc/%d/status", (int)ipid);
	char *status = e2e_read_file(f);
	free(f);
	unsigned base = 0;
	assert_non_null(strstr(status, "\nUid:"));
	assert_int_equal(sscanf(strstr(status, "\nUid:"), "\nUid: %u", &base), 1);
	free(status);
	assert_true(base >= 65536);
	wait_replaced(spare_init_dirs, ia, now);

	char *out =
	    sh_ok(a, "hostname; ls -ldn /dev /dev/null /dev/tty /dev/shm | "
		     "awk '{print $3\":\"$4}' | sort -u; ls /sys/firmware | wc -l; "
		     "echo x > /proc/sys/kernel/domainname 2>/dev/null || echo ro; "
		     "ls /sys/class/net; cat /proc/sys/net/ipv4/ip_unprivileged_port_start; "
		     "grep -o ' devpts devpts .*gid=[0-9]*' /proc/self/mountinfo | "
		     "sed 's/.*gid=//'; echo s > /dev/shm/x && cat /dev/shm/x; "
		     "cat /proc/1/comm");
	char *want = e2e_printf("%s\n0:0\n0\nro\nlo\n0\n%u\ns\nsandlot-init\n", a, base + 5);
	assert_string_equal(out, want);
	free(want);
	free(out);
	e2e_assert_init_off_exec_stack(ipid); /* made ahead; it has served a command now */
	/* Its profile came in two filters (the whole one installed while it was made, a
	 * small one at the take: seccomp_bpf_get_split), and the calls the take still made
	 * are denied again. */
	out = sh_ok(a, HELD_CALLS_DENIED);
	assert_string_equal(out, "Seccomp_filters:\t2\n" HELD_DENIED_OUT);
	free(out);
	/* Its root was moved onto the spare's staging root, not pivoted into: a chroot escape
	 * by its root still ends on it (the control shows the probe's escape works). */
	chroot_escape_control();
	char *v = chroot_escape(a);
	assert_string_equal(v, "same");
	free(v);

	/* Both spares killed under the daemon: the next create drops them (reaped, not handed
	 * the sandbox) and launches from nothing; the one after may take a spare made since,
	 * and spares come back. */
	n = spare_init_pids(spids, 8);
	assert_int_equal(n, 2);
	for (int i = 0; i < n; i++)
		assert_int_equal(kill(spids[i], SIGKILL), 0);
	for (int i = 0; i < n; i++) { /* dead, not yet reaped: the daemon is their parent */
		char *sf = e2e_printf("/proc/%d/stat", (int)spids[i]);
		assert_file_comes_to_hold(sf, ") Z ");
		free(sf);
	}
	char *b = sandbox_new(NULL);
	for (int i = 0; i < n; i++)
		assert_reaped(spids[i]);
	char *c = sandbox_new(NULL);
	for (int i = 0; i < 2; i++) {
		char *id = i ? c : b;
		out = sh_ok(id, "hostname; ls /sys/class/net");
		want = e2e_printf("%s\nlo\n", id);
		assert_string_equal(out, want);
		free(want);
		free(out);
	}
	out = sh_ok(b, HELD_CALLS_DENIED); /* launched from nothing: one filter, all of it */
	assert_string_equal(out, "Seccomp_filters:\t1\n" HELD_DENIED_OUT);
	free(out);
	v = chroot_escape(b); /* launched from nothing: pivot_root */
	assert_string_equal(v, "same");
	free(v);
	pid_t ib = record_init_pid(b), ic = record_init_pid(c);
	assert_true(ib != spids[0] && ib != spids[1] && ic != spids[0] && ic != spids[1]);
	for (int i = 0; i < 200 && (n = spare_init_pids(spids, 8)) < 2; i++)
		usleep(10000);
	assert_int_equal(n, 2);
	sandbox_del(a);
	sandbox_del(b);
	sandbox_del(c);
}

/* A start after a stop takes a spare init too: the sandbox's run dir, kept with its
 * executions' records, stays, and the spare's own (empty) goes. It used to fail the
 * spare's rename ("Directory not empty"), drop the spare and launch from nothing. */
static void test_start_takes_spare_init(void **state)
{
	if (access("/sys/fs/cgroup/memory", F_OK) != 0)
		skip(); /* cgroup v2: no rename, no spares */
	char *a = sandbox_new(NULL);
	free(sh_ok(a, "echo kept"));
	char *sp = e2e_printf("/v1/sandboxes/%s/stop", a);
	expect_call("POST", sp, NULL, 200, NULL, NULL);
	pid_t spids[8];
	int n = 0;
	for (int i = 0; i < 200 && (n = spare_init_pids(spids, 8)) < 2; i++)
		usleep(10000);
	assert_int_equal(n, 2);
	char *st = e2e_printf("/v1/sandboxes/%s/start", a);
	expect_call("POST", st, NULL, 200, NULL, NULL);
	pid_t ipid = record_init_pid(a);
	assert_true(ipid == spids[0] || ipid == spids[1]);
	char *out = sh_ok(a, "grep ^Seccomp_filters /proc/self/status");
	assert_string_equal(out, "Seccomp_filters:\t2\n");
	free(out);
	/* The first run's execution is still listed (its record is in the run dir). */
	char *p = e2e_printf("/v1/sandboxes/%s/executions", a);
	e2e_resp r;
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	assert_true(cJSON_GetArraySize(jget(r.json, "executions")) >= 2);
	e2e_resp_free(&r);
	char *logp = e2e_printf("%s/sandlot.log", getenv("SANDLOT_STATE_DIR"));
	char *log = e2e_read_file(logp);
	assert_true(!log || !strstr(log, "Directory not empty"));
	free(log), free(logp), free(p), free(st), free(sp);
	sandbox_del(a);
}

/* One client's back-to-back one-shots; the first that fails stops it. */
typedef struct runner {
	int n;
	long bad;
	char why[256];
} runner;

static void *runner_main(void *p)
{
	runner *w = p;
	for (int i = 0; i < w->n && !w->bad; i++) {
		e2e_resp r;
		e2e_req q = {.method = "POST",
			     .path = "/v1/run",
			     .body = "{\"image\":\"busybox\",\"command\":[\"true\"]}"};
		q.len = strlen(q.body);
		long st = e2e_http_q(&r, &q);
		if (st != 200 || !r.json || jnum(r.json, "exitCode") != 0) {
			w->bad = st;
			snprintf(w->why, sizeof(w->why), "%.*s", (int)(r.len < 200 ? r.len : 200),
				 r.body ? r.body : "");
		}
		e2e_resp_free(&r);
	}
	return NULL;
}

/* The spares of D seen while clients take them, by kind and inode: network namespaces,
 * and on cgroup v1 cgroups and inits (by run dir). Only a take ends a spare while the
 * daemon runs, so one seen and gone by the end was taken (an inode the kernel reuses
 * hides a take, never adds one). */
enum { SPARE_NETNS, SPARE_CGROUP, SPARE_INIT, SPARE_KINDS };
static const char *const spare_kind[] = {"network namespaces", "cgroups", "inits"};

typedef struct spares_seen {
	unsigned long ino[SPARE_KINDS][2048];
	int n[SPARE_KINDS];
	atomic_bool stop;
} spares_seen;

static void spares_add(spares_seen *s, int kind, const unsigned long *ino, int n)
{
	for (int i = 0; i < n; i++) {
		bool known = false;
		for (int k = 0; k < s->n[kind] && !known; k++)
			known = s->ino[kind][k] == ino[i];
		if (!known && s->n[kind] < 2048)
			s->ino[kind][s->n[kind]++] = ino[i];
	}
}

/* Lists of the spares of each kind now; no cmocka calls (it runs on a thread). */
static int spares_now(int kind, unsigned long *out, int max)
{
	if (kind == SPARE_NETNS)
		return daemon_netns_fds(out, max);
	if (access("/sys/fs/cgroup/memory", F_OK) != 0)
		return 0; /* cgroup v2: neither spare cgroups nor spare inits */
	return kind == SPARE_CGROUP ? spare_cgroups(out, max) : spare_init_dirs(out, max);
}

static void *spares_sample(void *p)
{
	spares_seen *s = p;
	while (!atomic_load(&s->stop)) {
		for (int kind = 0; kind < SPARE_KINDS; kind++) {
			unsigned long now[16];
			spares_add(s, kind, now, spares_now(kind, now, 16));
		}
		usleep(1000);
	}
	return NULL;
}

/* How many of the spares of KIND seen are gone now: taken. */
static int spares_taken(const spares_seen *s, int kind)
{
	unsigned long now[16];
	int n = spares_now(kind, now, 16), gone = 0;
	for (int k = 0; k < s->n[kind]; k++) {
		bool left = false;
		for (int i = 0; i < n && !left; i++)
			left = now[i] == s->ino[kind][k];
		gone += !left;
	}
	return gone;
}

/* Eight clients creating at once, while the daemon's syncer makes the spares they take
 * (network namespaces, cgroups, layers, record dirs): every one succeeds. A take racing
 * the make of a spare cgroup once left a half-renamed cgroup behind and the create
 * failed with "already exists" (runtime/spares.c, spare_cgroup_create_or_take). And spares
 * were taken, or none of that was tried: of each kind the daemon keeps (on cgroup v1,
 * eight clients are more than two spare inits, so creates take spare cgroups and network
 * namespaces too). */
static void test_parallel_creates_take_spares(void **state)
{
	enum { N = 8 };
	runner w[N];
	pthread_t th[N], sampler;
	spares_seen *seen = calloc(1, sizeof(*seen));
	assert_non_null(seen);
	assert_int_equal(pthread_create(&sampler, NULL, spares_sample, seen), 0);
	for (int i = 0; i < N; i++) {
		w[i] = (runner){.n = 40};
		pthread_create(&th[i], NULL, runner_main, &w[i]);
	}
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	atomic_store(&seen->stop, true);
	pthread_join(sampler, NULL);
	for (int i = 0; i < N; i++)
		if (w[i].bad)
			fail_msg("client %d: status %ld: %s", i, w[i].bad, w[i].why);
	bool v1 = access("/sys/fs/cgroup/memory", F_OK) == 0;
	for (int kind = 0; kind < (v1 ? SPARE_KINDS : 1); kind++) {
		int taken = spares_taken(seen, kind);
		print_message("spare %s: %d seen, %d taken\n", spare_kind[kind], seen->n[kind],
			      taken);
		if (taken < 1)
			fail_msg("%d clients x 40 one-shots took no spare %s", N, spare_kind[kind]);
	}
	free(seen);
}

/* Stop the tracee PID at its next system call's exit that returns a message from
 * recvmsg(2): 1 when it is stopped there, 0 at another stop (resumed), -1 when it is
 * gone. ENTRY keeps the number of the call it entered last. */
static int at_recvmsg_exit(pid_t pid, int st, long *entry)
{
	if (!WIFSTOPPED(st))
		return -1;
	struct __ptrace_syscall_info si;
	if (WSTOPSIG(st) == (SIGTRAP | 0x80) &&
	    ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof(si), &si) > 0) {
		if (si.op == PTRACE_SYSCALL_INFO_ENTRY)
			*entry = (long)si.entry.nr;
		else if (si.op == PTRACE_SYSCALL_INFO_EXIT && *entry == __NR_recvmsg &&
			 !si.exit.is_error && si.exit.rval >= 1)
			return 1;
	}
	/* A syscall stop or the seize's interrupt: on to the next; a signal: delivered. */
	int sig =
	    WSTOPSIG(st) == (SIGTRAP | 0x80) || st >> 16 == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(st);
	ptrace(PTRACE_SYSCALL, pid, 0, sig);
	return 0;
}

/* A spare killed after it took in what the take handed it closes its end of the socket
 * as an exec of init does. The create must see that no init runs, drop it (reaped, not
 * left a zombie) and launch from nothing: it once recorded the dead pid as the sandbox's
 * init (runtime/launch.c, spare_go), and test_creates_take_spare_init, which kills both
 * spares just before its creates, failed on that now and then. Killed before it reads
 * them, it resets the socket instead, which the take always caught. Here both spares are
 * traced, a request to PATH with BODY is sent, and the spare it takes is killed as its
 * recvmsg returns. Returns the dead spare's pid; the answer is in J. */
static pid_t kill_spare_during_take(job *j, const char *path, const char *body)
{
	pid_t spids[8];
	int n = 0;
	for (int i = 0; i < 200 && (n = spare_init_pids(spids, 8)) < 2; i++)
		usleep(10000);
	assert_int_equal(n, 2);
	long entry[2] = {-1, -1};
	for (int i = 0; i < 2; i++) {
		assert_int_equal(ptrace(PTRACE_SEIZE, spids[i], 0, PTRACE_O_TRACESYSGOOD), 0);
		assert_int_equal(ptrace(PTRACE_INTERRUPT, spids[i], 0, 0), 0);
	}
	*j = (job){.method = "POST", .body = body};
	snprintf(j->path, sizeof(j->path), "%s", path);
	pthread_t th;
	pthread_create(&th, NULL, job_main, j);
	pid_t taken = 0;
	for (int i = 0; i < 10000 && !taken; i++) {
		bool stopped = false;
		for (int k = 0; k < 2 && !taken; k++) {
			int st;
			if (waitpid(spids[k], &st, WNOHANG | __WALL) != spids[k])
				continue;
			stopped = true;
			if (at_recvmsg_exit(spids[k], st, &entry[k]) == 1)
				taken = spids[k];
		}
		if (!stopped)
			usleep(1000);
	}
	int st = 0;
	if (taken) {
		kill(taken, SIGKILL);
		while (waitpid(taken, &st, __WALL) == taken && !WIFSIGNALED(st))
			; /* its exit stop, then its death: the daemon reaps it after that */
	}
	for (int k = 0; k < 2; k++)
		if (spids[k] != taken) {
			ptrace(PTRACE_INTERRUPT, spids[k], 0, 0);
			int ost;
			while (waitpid(spids[k], &ost, __WALL) == spids[k] && WIFSTOPPED(ost) &&
			       ptrace(PTRACE_DETACH, spids[k], 0, 0) < 0)
				ptrace(PTRACE_INTERRUPT, spids[k], 0, 0);
		}
	pthread_join(th, NULL);
	assert_true(taken != 0);
	assert_true(WIFSIGNALED(st));
	return taken;
}

static void test_spare_killed_during_take(void **state)
{
	if (access("/sys/fs/cgroup/memory", F_OK) != 0)
		skip(); /* cgroup v2: no spare inits */
	job j;
	pid_t taken = kill_spare_during_take(&j, "/v1/sandboxes", "{\"image\":\"busybox\"}");
	assert_int_equal(j.status, 201);
	cJSON *got = cJSON_Parse(j.data);
	char *id = strdup(jstr(got, "id"));
	cJSON_Delete(got);
	free(j.data);
	assert_int_not_equal(record_init_pid(id), taken);
	char *out = sh_ok(id, "cat /proc/1/comm");
	assert_string_equal(out, "sandlot-init\n");
	free(out);
	assert_reaped(taken);
	sandbox_del(id);
}

/* The same for a one-shot, whose layer is mounted volatile: the failed take had left
 * overlayfs' volatile marker in its work dir, and the launch from nothing after it was
 * refused (500, "incompat feature volatile") until the marker was cleared first
 * (runtime/sandbox.c). The command runs as init's child in a sandbox made from nothing. */
static void test_spare_killed_during_run_take(void **state)
{
	if (access("/sys/fs/cgroup/memory", F_OK) != 0)
		skip(); /* cgroup v2: no spare inits */
	job j;
	pid_t taken = kill_spare_during_take(
	    &j, "/v1/run", "{\"image\":\"busybox\",\"command\":\"cat /proc/1/comm\"}");
	cJSON *got = cJSON_Parse(j.data);
	if (j.status != 200 || !got)
		fail_msg("POST /v1/run after a failed take: %ld %s", j.status, j.data);
	assert_int_equal(jnum(got, "exitCode"), 0);
	assert_string_equal(jstr(got, "stdout"), "sandlot-init\n");
	cJSON_Delete(got);
	free(j.data);
	assert_reaped(taken);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_creates_take_spare_netns),
	    E2E_TEST(test_start_takes_spare_init),
	    E2E_TEST(test_creates_take_spare_cgroups),
	    E2E_TEST(test_creates_take_spare_init),
	    E2E_TEST(test_parallel_creates_take_spares),
	    E2E_TEST(test_spare_killed_during_take),
	    E2E_TEST(test_spare_killed_during_run_take),
	    E2E_TEST(test_zz_spec),
	};
	return api_run_tests(tests);
}
