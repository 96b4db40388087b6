/* test_hibernate.c — end-to-end checks of hibernate and resume (runtime/hibernate.c,
 * docs/hibernate.md) through the CLI, on sandboxes created with --hibernate: a process
 * with state only in memory goes on after a resume; nothing of the sandbox runs or is
 * charged while it is hibernated; a sandbox of the usual launch is refused and runs on; a
 * delete while hibernated leaves nothing (the per-test leak check). Skipped when the
 * criu binary is absent (scripts/setup builds it). */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common.h"
#include "exec.h"
#include "hibernate.h"
#include "lookup.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool have_criu(void)
{
	if (access(hibernate_criu(), X_OK) == 0)
		return true;
	print_message("skipped: no criu at %s (scripts/setup builds it)\n", hibernate_criu());
	return false;
}

/* <state>/WHAT/ID (WHAT/ID/REST with REST). */
static char *path_of(const char *what, const char *id, const char *rest)
{
	char *p;
	assert_true(asprintf(&p, "%s/%s/%s%s", getenv("SANDLOT_STATE_DIR"), what, id, rest) > 0);
	return p;
}

static char *status_of(const char *id)
{
	char *out = e2e_sandlot_ok("ls", "-a", NULL);
	const char *line = strstr(out, id);
	assert_non_null(line);
	char st[32] = "";
	assert_int_equal(sscanf(line + strlen(id), " %*s %31s", st), 1);
	free(out);
	return strdup(st);
}

/* "TOKEN COUNT" the loop last wrote, read from the host's side of the sandbox's layer. */
static void read_counter(const char *id, char token[32], long *count)
{
	char *p = path_of("store/sandboxes", id, "/upper/c");
	char buf[128] = "";
	for (int i = 0; i < 100; i++) {
		FILE *f = fopen(p, "r");
		if (f) {
			bool ok = fgets(buf, sizeof(buf), f) &&
				  sscanf(buf, "%31s %ld", token, count) == 2;
			fclose(f);
			if (ok)
				break;
		}
		usleep(50000);
	}
	free(p);
	assert_true(*count > 0);
}

/* State only in memory: a token made at start, a count; written every 0.2 s. */
static void start_counter(const char *id)
{
	free(e2e_sandlot_ok("exec", id, "--", "sh", "-c",
			    "t=$RANDOM$RANDOM$RANDOM; (i=0; while true; do i=$((i+1)); "
			    "echo \"$t $i\" > /c.new; mv /c.new /c; sleep 0.2; done) "
			    "</dev/null >/dev/null 2>&1 &",
			    NULL));
}

static char *hibernate_sandbox(void)
{
	char *id = e2e_sandlot_ok("create", "--hibernate", "--image", "busybox", NULL);
	start_counter(id);
	return id;
}

static void test_hibernate_and_resume(void **state)
{
	if (!have_criu())
		skip();
	char *id = hibernate_sandbox();
	char tok[32], tok2[32];
	long n1, n2, n3;
	usleep(600000);
	read_counter(id, tok, &n1);
	double t0 = now_s();
	free(e2e_sandlot_ok("hibernate", id, NULL));
	double t1 = now_s();
	char *st = status_of(id);
	assert_string_equal(st, "hibernated");
	free(st);
	/* Nothing runs: the count stands still, and its cgroups (tasks, memory charge) are
	 * gone with its processes. */
	read_counter(id, tok2, &n2);
	usleep(700000);
	read_counter(id, tok2, &n3);
	assert_int_equal(n2, n3);
	assert_string_equal(tok, tok2);
	char *cg = NULL;
	assert_true(asprintf(&cg, "/sys/fs/cgroup/memory/sandlot/%s", id) > 0);
	assert_int_equal(access(cg, F_OK), -1);
	char *img = path_of("store/sandboxes", id, "/hibernate");
	assert_int_equal(access(img, F_OK), 0);
	/* A checkpoint of it holds its files, never its memory's images. */
	free(e2e_sandlot_ok("checkpoint", "create", id, "while-hibernated", NULL));
	char *find = e2e_printf("find '%s/store/snapshots' -maxdepth 2 -name hibernate | grep -q .",
				getenv("SANDLOT_STATE_DIR"));
	assert_int_not_equal(system(find), 0);
	free(find);
	/* Back: the same token, the count going on from where it stood. */
	double t2 = now_s();
	free(e2e_sandlot_ok("resume", id, NULL));
	double t3 = now_s();
	print_message("hibernate %.3f s, resume %.3f s (sandlot hibernate|resume, as processes)\n",
		      t1 - t0, t3 - t2);
	st = status_of(id);
	assert_string_equal(st, "running");
	free(st);
	assert_int_equal(access(img, F_OK), -1); /* images deleted */
	assert_int_equal(access(cg, F_OK), 0);	 /* back in its cgroups */
	usleep(1000000);
	read_counter(id, tok2, &n3);
	assert_string_equal(tok, tok2);
	assert_true(n3 > n2);
	char *out = e2e_sandlot_ok("exec", id, "--", "cat", "/c", NULL);
	assert_non_null(strstr(out, tok));
	free(out);
	free(cg);
	free(img);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

/* A command started through the API and still running: its stdout log, stderr log and
 * the host's /dev/null, and init's descriptor of its exit record, are the host's files
 * (external to CRIU). It is hibernated with them and resumed: its later output reaches
 * the same log, every line once and in order, and its exit is recorded. */
static void test_hibernate_with_a_running_execution(void **state)
{
	if (!have_criu())
		skip();
	e2e_runtime_env();
	sl_ctx *ctx = calloc(1, sizeof(*ctx));
	sl_err err = {0};
	if (ctx_open(ctx, &err) < 0)
		fail_msg("ctx_open: %s", err.msg);
	char *id = e2e_sandlot_ok("create", "--hibernate", "--image", "busybox", NULL);
	sl_sandbox sb;
	if (sandbox_get(ctx, id, &sb, &err) < 0)
		fail_msg("sandbox_get: %s", err.msg);
	sl_exec_spec spec = {.shell = "i=0; while [ $i -lt 30 ]; do echo line$i; "
				      "i=$((i+1)); sleep 0.2; done; echo done >&2; exit 7"};
	sl_exec e;
	if (exec_start(ctx, &sb, &spec, &e, &err) < 0)
		fail_msg("exec_start: %s", err.msg);
	sandbox_free(&sb);
	char eid[32], rid[32];
	snprintf(eid, sizeof(eid), "%s", e.id);
	assert_int_equal(e.status, SL_EXEC_RUNNING);
	exec_free(&e);
	/* And one reading its stdin (a FIFO of the host's), fed before and after. */
	sl_exec_spec rspec = {.shell = "while read x; do echo got:$x; done; exit 3",
			      .stdin_pipe = true};
	if (sandbox_get(ctx, id, &sb, &err) < 0 || exec_start(ctx, &sb, &rspec, &e, &err) < 0)
		fail_msg("exec_start: %s", err.msg);
	sandbox_free(&sb);
	snprintf(rid, sizeof(rid), "%s", e.id);
	exec_free(&e);
	if (exec_write_stdin(ctx, id, rid, "a\n", 2, &err) < 0)
		fail_msg("exec_write_stdin: %s", err.msg);
	/* And one whose stdout log is gone at the resume (as after a reboot): a stand-in. */
	sl_exec_spec gspec = {.shell = "sleep 2; echo gone; exit 5"};
	char gid[32];
	if (sandbox_get(ctx, id, &sb, &err) < 0 || exec_start(ctx, &sb, &gspec, &e, &err) < 0)
		fail_msg("exec_start: %s", err.msg);
	sandbox_free(&sb);
	snprintf(gid, sizeof(gid), "%s", e.id);
	exec_free(&e);
	usleep(1200000);
	free(e2e_sandlot_ok("hibernate", id, NULL));
	char *st = status_of(id);
	assert_string_equal(st, "hibernated");
	free(st);
	/* While hibernated it is running still, not lost with its init. */
	usleep(500000);
	if (exec_get(ctx, id, eid, &e, &err) < 0)
		fail_msg("exec_get: %s", err.msg);
	assert_int_equal(e.status, SL_EXEC_RUNNING);
	exec_free(&e);
	char *gone =
	    e2e_printf("%s/sandboxes/%s/execs/%s/stdout", getenv("SANDLOT_RUN_DIR"), id, gid);
	assert_int_equal(unlink(gone), 0);
	free(gone);
	free(e2e_sandlot_ok("resume", id, NULL));
	if (exec_wait(ctx, id, gid, 20000, &e, &err) < 0)
		fail_msg("exec_wait: %s", err.msg);
	assert_int_equal(e.exit_code, 5);
	exec_free(&e);
	if (exec_write_stdin(ctx, id, rid, "b\n", 2, &err) < 0 ||
	    exec_close_stdin(ctx, id, rid, &err) < 0)
		fail_msg("stdin of %s: %s", rid, err.msg);
	if (exec_wait(ctx, id, rid, 20000, &e, &err) < 0)
		fail_msg("exec_wait: %s", err.msg);
	assert_int_equal(e.exit_code, 3);
	exec_free(&e);
	if (exec_wait(ctx, id, eid, 20000, &e, &err) < 0)
		fail_msg("exec_wait: %s", err.msg);
	assert_int_equal(e.status, SL_EXEC_FAILED);
	assert_int_equal(e.exit_code, 7);
	exec_free(&e);
	char want[512] = "";
	for (int i = 0; i < 30; i++)
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "line%d\n", i);
	int fd;
	char out[1024] = "";
	const char *streams[] = {"stdout", "stderr"};
	const char *expect[] = {want, "done\n"};
	for (int s = 0; s < 2; s++) {
		if (exec_open_log(ctx, id, eid, streams[s], &fd, &err) < 0)
			fail_msg("exec_open_log: %s", err.msg);
		ssize_t n = read(fd, out, sizeof(out) - 1);
		close(fd);
		assert_true(n >= 0);
		out[n] = '\0';
		assert_string_equal(out, expect[s]);
	}
	if (exec_open_log(ctx, id, rid, "stdout", &fd, &err) < 0)
		fail_msg("exec_open_log: %s", err.msg);
	ssize_t n = read(fd, out, sizeof(out) - 1);
	close(fd);
	assert_true(n >= 0);
	out[n] = '\0';
	assert_string_equal(out, "got:a\ngot:b\n");
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
	ctx_close(ctx);
	free(ctx);
}

/* Hibernated and resumed twice: the token the same and the count going on each time. A
 * restored init (non-dumpable again) has its memory owned by the host's user namespace,
 * which CRIU 4.1.1's check of the namespaces refused ("Can't open PID/ns/net on
 * procfs: Permission denied") until scripts/criu-4.1.1-userns-check.patch. */
static void test_hibernate_and_resume_twice(void **state)
{
	if (!have_criu())
		skip();
	char *id = hibernate_sandbox();
	char tok[32], tok2[32];
	long n1, n2;
	usleep(600000);
	read_counter(id, tok, &n1);
	for (int round = 0; round < 2; round++) {
		free(e2e_sandlot_ok("hibernate", id, NULL));
		read_counter(id, tok2, &n1);
		assert_string_equal(tok, tok2);
		free(e2e_sandlot_ok("resume", id, NULL));
		usleep(800000);
		read_counter(id, tok2, &n2);
		assert_string_equal(tok, tok2);
		assert_true(n2 > n1);
	}
	char *st = status_of(id);
	assert_string_equal(st, "running");
	free(st);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

static void test_hibernate_refused_for_the_usual_launch(void **state)
{
	char *id = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	e2e_result r;
	assert_int_not_equal(e2e_sandlot(&r, NULL, 0, "hibernate", id, NULL), 0);
	assert_non_null(strstr(r.err, "\"hibernate\": true"));
	e2e_result_free(&r);
	char *st = status_of(id);
	assert_string_equal(st, "running");
	free(st);
	char *out = e2e_sandlot_ok("exec", id, "--", "echo", "still", NULL);
	assert_string_equal(out, "still");
	free(out);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

/* The per-test leak check (e2e_test_teardown) sees any cgroup, mount, process or run
 * file left; the images are looked for here. */
static void test_delete_while_hibernated(void **state)
{
	if (!have_criu())
		skip();
	char *id = hibernate_sandbox();
	usleep(400000);
	free(e2e_sandlot_ok("hibernate", id, NULL));
	char *img = path_of("store/sandboxes", id, "/hibernate");
	assert_int_equal(access(img, F_OK), 0);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	assert_int_equal(access(img, F_OK), -1);
	free(img);
	free(id);
}

/* Size of FILE in sandbox ID (stat -c %s). */
static long size_in(const char *id, const char *file)
{
	char *out = e2e_sandlot_ok("exec", id, "--", "stat", "-c", "%s", file, NULL);
	long n = atol(out);
	free(out);
	return n;
}

/* A sandlot volume and a host directory bound in, id-mapped: files written before the
 * hibernate are there after it, a process holding a volume file open writes on through
 * its fd, and the sandbox's root still owns and writes what it made (the restore maps
 * them again, not as the host's ids). */
static void test_hibernate_with_volumes(void **state)
{
	if (!have_criu())
		skip();
	char *hostdir = e2e_printf("%s/hib-hostdir", e2e_root());
	assert_int_equal(mkdir(hostdir, 0755), 0);
	char *hv = e2e_printf("%s:/h", hostdir);
	setenv("SANDLOT_HOST_MOUNTS", hostdir, 1);
	free(e2e_sandlot_ok("volume", "create", "hibvol", NULL));
	char *id = e2e_sandlot_ok("create", "--hibernate", "--image", "busybox", "-v",
				  "hibvol:/data", "-v", hv, NULL);
	free(e2e_sandlot_ok("exec", id, "--", "sh", "-c",
			    "echo before > /data/f && echo hostside > /h/g && "
			    "(exec 3>>/data/held; while true; do echo x >&3; sleep 0.2; done) "
			    "</dev/null >/dev/null 2>&1 &",
			    NULL));
	usleep(600000);
	free(e2e_sandlot_ok("hibernate", id, NULL));
	char *st = status_of(id);
	assert_string_equal(st, "hibernated");
	free(st);
	free(e2e_sandlot_ok("resume", id, NULL));
	long n1 = size_in(id, "/data/held");
	usleep(800000);
	long n2 = size_in(id, "/data/held");
	assert_true(n2 > n1); /* the holder writes on through its fd */
	char *out = e2e_sandlot_ok("exec", id, "--", "cat", "/data/f", "/h/g", NULL);
	assert_string_equal(out, "before\nhostside");
	free(out);
	out = e2e_sandlot_ok("exec", id, "--", "sh", "-c",
			     "echo after > /data/new && echo more >> /h/g && "
			     "stat -c '%u %g' /data/f /data/new /h/g",
			     NULL);
	assert_string_equal(out, "0 0\n0 0\n0 0");
	free(out);
	/* The host sees the volume's canonical ids (0), not the sandbox's range. */
	char *g = e2e_printf("%s/g", hostdir);
	struct stat sg;
	assert_int_equal(stat(g, &sg), 0);
	assert_int_equal(sg.st_uid, 0);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(e2e_sandlot_ok("volume", "rm", "hibvol", NULL));
	unsetenv("SANDLOT_HOST_MOUNTS");
	unlink(g);
	rmdir(hostdir);
	free(g);
	free(hv);
	free(hostdir);
	free(id);
}

/* A secret file (a tmpfs of its own, read-only) comes back with its value and still
 * read-only, a process that holds it open reads it on. While hibernated its files are in
 * the images (CRIU's archives of the sandbox's tmpfs mounts, tmpfs-dev-*), which are
 * 0700. */
static void test_hibernate_with_secret_files(void **state)
{
	if (!have_criu())
		skip();
	const char *value = "hib-secret-7f3a9c";
	e2e_result r;
	assert_int_equal(e2e_sandlot(&r, value, strlen(value), "secret", "set", "hibsec", NULL), 0);
	e2e_result_free(&r);
	char *id = e2e_sandlot_ok("create", "--hibernate", "--image", "busybox", "--secret-file",
				  "/run/secrets/tok=hibsec", NULL);
	free(e2e_sandlot_ok("exec", id, "--", "sh", "-c",
			    "(exec 3</run/secrets/tok; while true; do cat <&3 >/dev/null; "
			    "echo $((i=i+1)) > /n; sleep 0.2; done) </dev/null >/dev/null 2>&1 &",
			    NULL));
	usleep(600000);
	free(e2e_sandlot_ok("hibernate", id, NULL));
	char *img = path_of("store/sandboxes", id, "/hibernate");
	struct stat si;
	assert_int_equal(stat(img, &si), 0);
	assert_int_equal(si.st_mode & 07777, 0711); /* in a 0700 root's dir: docs/hibernate.md */
	DIR *d = opendir(img);
	struct dirent *de;
	int tmpfs = 0;
	while (d && (de = readdir(d)))
		tmpfs += !strncmp(de->d_name, "tmpfs-dev-", 10);
	if (d)
		closedir(d);
	assert_true(tmpfs > 0);
	free(e2e_sandlot_ok("resume", id, NULL));
	char *out = e2e_sandlot_ok("exec", id, "--", "cat", "/run/secrets/tok", NULL);
	assert_string_equal(out, value);
	free(out);
	out = e2e_sandlot_ok("exec", id, "--", "sh", "-c",
			     "a=$(cat /n); sleep 0.7; b=$(cat /n); [ $b -gt $a ] && echo on; "
			     "echo x > /run/secrets/tok 2>/dev/null || echo ro",
			     NULL);
	assert_string_equal(out, "on\nro");
	free(out);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "secret", "rm", "hibsec", NULL), 0);
	e2e_result_free(&r);
	free(img);
	free(id);
}

/* The body of GET /t from ADDR:8000 (the sandbox's httpd), "" when nothing answers. */
static char *http_token(const char *addr)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(8000)};
	inet_pton(AF_INET, addr, &sa.sin_addr);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = {3, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	char buf[2048] = "";
	size_t n = 0;
	const char *req = "GET /t HTTP/1.0\r\n\r\n";
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    write(fd, req, strlen(req)) == (ssize_t)strlen(req)) {
		ssize_t k;
		while (n < sizeof(buf) - 1 && (k = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
			n += (size_t)k;
	}
	close(fd);
	buf[n] = '\0';
	const char *body = strstr(buf, "\r\n\r\n");
	char *out = strdup(body ? body + 4 : "");
	out[strcspn(out, "\n")] = '\0';
	return out;
}

/* The host pid of ID's init (<run>/sandboxes/<id>/init.ns). */
static pid_t init_pid_of(const char *id)
{
	char *p = e2e_printf("%s/sandboxes/%s/init.ns", getenv("SANDLOT_RUN_DIR"), id);
	char *t = e2e_read_file(p);
	assert_non_null(t);
	pid_t pid = (pid_t)atoi(t);
	free(t);
	free(p);
	return pid;
}

/* Whether any process of the host is in, or holds an fd of, the namespace "net:[INO]". */
static bool netns_held(unsigned long ino)
{
	char want[64], link[64], p[300];
	snprintf(want, sizeof(want), "net:[%lu]", ino);
	DIR *proc = opendir("/proc");
	struct dirent *de;
	bool held = false;
	while (proc && !held && (de = readdir(proc))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(p, sizeof(p), "/proc/%s/ns/net", de->d_name);
		ssize_t n = readlink(p, link, sizeof(link) - 1);
		held = n > 0 && (link[n] = '\0', !strcmp(link, want));
		snprintf(p, sizeof(p), "/proc/%s/fd", de->d_name);
		DIR *fds = opendir(p);
		struct dirent *fe;
		while (fds && !held && (fe = readdir(fds))) {
			snprintf(p, sizeof(p), "/proc/%s/fd/%s", de->d_name, fe->d_name);
			n = readlink(p, link, sizeof(link) - 1);
			held = n > 0 && (link[n] = '\0', !strcmp(link, want));
		}
		if (fds)
			closedir(fds);
	}
	if (proc)
		closedir(proc);
	return held;
}

/* /sys/class/net/<the host veth of address ADDR> ("slv" and the address in hex, net.c). */
static char *veth_of(const char *addr)
{
	struct in_addr a;
	assert_int_equal(inet_pton(AF_INET, addr, &a), 1);
	return e2e_printf("/sys/class/net/slv%08x", ntohl(a.s_addr));
}

/* A sandbox with a network, an httpd listening in it: httpd's pid inside, its token. */
static char *net_sandbox(char **addr, char **tok, char **pid)
{
	char *id = e2e_sandlot_ok("create", "--hibernate", "--network", "--image", "busybox", NULL);
	*addr = e2e_net_field(id, "address");
	assert_non_null(*addr);
	free(e2e_sandlot_ok("exec", id, "--", "sh", "-c",
			    "mkdir -p /www && echo $RANDOM$RANDOM$RANDOM > /www/t && "
			    "httpd -p 8000 -h /www",
			    NULL));
	*tok = e2e_sandlot_ok("exec", id, "--", "cat", "/www/t", NULL);
	*pid = e2e_sandlot_ok("exec", id, "--", "pidof", "httpd", NULL);
	char *got = http_token(*addr);
	assert_string_equal(got, *tok);
	free(got);
	return id;
}

/* With a network: while hibernated the host has no veth for it and no process in or
 * holding its network namespace; after the resume the same httpd (its pid inside)
 * answers on the sandbox's address, and eth0 has its address and route again. */
static void test_hibernate_with_network(void **state)
{
	if (!have_criu())
		skip();
	char *addr, *tok, *pid;
	char *id = net_sandbox(&addr, &tok, &pid);
	char *veth = veth_of(addr);
	assert_int_equal(access(veth, F_OK), 0);
	char *nsp = e2e_printf("/proc/%d/ns/net", (int)init_pid_of(id));
	struct stat ns;
	assert_int_equal(stat(nsp, &ns), 0);
	assert_true(netns_held(ns.st_ino));
	double t0 = now_s();
	free(e2e_sandlot_ok("hibernate", id, NULL));
	double t1 = now_s();
	assert_int_equal(access(veth, F_OK), -1);
	assert_false(netns_held(ns.st_ino));
	char *got = http_token(addr);
	assert_string_equal(got, "");
	free(got);
	double t2 = now_s();
	free(e2e_sandlot_ok("resume", id, NULL));
	print_message("with a network: hibernate %.3f s, resume %.3f s\n", t1 - t0, now_s() - t2);
	assert_int_equal(access(veth, F_OK), 0);
	got = http_token(addr);
	assert_string_equal(got, tok);
	free(got);
	char *pid2 = e2e_sandlot_ok("exec", id, "--", "pidof", "httpd", NULL);
	assert_string_equal(pid2, pid);
	char *ifc = e2e_sh_ok(id, "ip -4 addr show eth0; ip route show default");
	assert_true(e2e_contains(ifc, addr));
	assert_true(e2e_contains(ifc, "default via"));
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	assert_int_equal(access(veth, F_OK), -1);
	free(ifc), free(pid2), free(nsp), free(veth), free(addr), free(tok), free(pid), free(id);
}

/* A TCP connection (here between two processes of the sandbox, on its lo), and a
 * listener bound to the sandbox's own address, are refused before anything is touched:
 * the sandbox runs on with its network. A CRIU that fails
 * after the network was taken out gives it back. With the connection closed, the
 * hibernate goes through. */
static void test_hibernate_network_refusals(void **state)
{
	if (!have_criu())
		skip();
	char *addr, *tok, *pid;
	char *id = net_sandbox(&addr, &tok, &pid);
	free(e2e_sandlot_ok("exec", id, "--", "sh", "-c",
			    "(sleep 600 | nc -l -p 9000) </dev/null >/dev/null 2>&1 & sleep 0.3; "
			    "(sleep 600 | nc 127.0.0.1 9000) </dev/null >/dev/null 2>&1 &",
			    NULL));
	usleep(300000);
	char *conns = e2e_sh_ok(id, "grep -c '^ *[0-9]*: [^ ]* [^ ]* 01 ' /proc/net/tcp");
	if (atoi(conns) < 1) /* ESTABLISHED */
		fail_msg("no connection in the sandbox: %s", conns);
	free(conns);
	e2e_result r;
	assert_int_not_equal(e2e_sandlot(&r, NULL, 0, "hibernate", id, NULL), 0);
	if (!e2e_contains(r.err, "TCP connection"))
		fail_msg("hibernate: %s", r.err);
	e2e_result_free(&r);
	char *st = status_of(id);
	assert_string_equal(st, "running");
	free(st);
	char *got = http_token(addr);
	assert_string_equal(got, tok);
	free(got);
	free(e2e_sandlot_ok("exec", id, "--", "sh", "-c", "killall nc sleep; true", NULL));
	/* A listener bound to the sandbox's own address: CRIU would bind it before the
	 * resume gives the address back, a resume that could never succeed. */
	char *own = e2e_printf("httpd -p %s:8001 -h /www", addr);
	free(e2e_sh_ok(id, own));
	assert_int_not_equal(e2e_sandlot(&r, NULL, 0, "hibernate", id, NULL), 0);
	if (!e2e_contains(r.err, "bound to its address"))
		fail_msg("hibernate: %s", r.err);
	e2e_result_free(&r);
	free(e2e_sh_ok(id, "kill $(pidof httpd | tr ' ' '\n' | sort -n | tail -n 1)"));

	free(own);
	/* CRIU failing after the veth went (a criu that exits 1): it comes back. */
	setenv("SANDLOT_CRIU", "/bin/false", 1);
	int rc = e2e_sandlot(&r, NULL, 0, "hibernate", id, NULL);
	unsetenv("SANDLOT_CRIU");
	assert_int_not_equal(rc, 0);
	e2e_result_free(&r);
	st = status_of(id);
	assert_string_equal(st, "running");
	free(st);
	got = http_token(addr);
	assert_string_equal(got, tok);
	free(got);
	free(e2e_sandlot_ok("hibernate", id, NULL));
	free(e2e_sandlot_ok("resume", id, NULL));
	got = http_token(addr);
	assert_string_equal(got, tok);
	free(got);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(addr), free(tok), free(pid), free(id);
}

/* GET or POST PATH of sandbox ID on daemon D: the sandbox's status (the body's). */
static char *api_status(e2e_daemon *d, const char *method, const char *id, const char *verb)
{
	char *p = e2e_printf("/v1/sandboxes/%s%s%s", id, verb ? "/" : "", verb ? verb : "");
	e2e_req q = {.method = method, .path = p, .d = d};
	e2e_resp r;
	e2e_http_q(&r, &q);
	if (r.status != 200)
		fail_msg("%s %s: %ld %s", method, p, r.status, r.body);
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(r.json, "status");
	assert_true(cJSON_IsString(st));
	char *out = strdup(st->valuestring);
	e2e_resp_free(&r);
	free(p);
	return out;
}

/* A hibernated sandbox is a record and images on disk: daemons started (and stopped)
 * while it is hibernated see it hibernated, not crashed, and the API's resume brings it
 * back with its memory. */
static void test_hibernated_across_daemon_restarts(void **state)
{
	if (!have_criu())
		skip();
	char *id = hibernate_sandbox();
	char tok[32], tok2[32];
	long n1, n2;
	usleep(600000);
	read_counter(id, tok, &n1);
	free(e2e_sandlot_ok("hibernate", id, NULL));
	read_counter(id, tok, &n1);
	char *sock = e2e_printf("%s/hib.sock", e2e_root());
	for (int i = 0; i < 2; i++) {
		e2e_daemon d;
		e2e_daemon_start(&d, sock, false, NULL);
		char *st = api_status(&d, "GET", id, NULL);
		assert_string_equal(st, "hibernated");
		free(st);
		if (i == 1) {
			st = api_status(&d, "POST", id, "resume");
			assert_string_equal(st, "running");
			free(st);
		}
		e2e_daemon_stop(&d);
	}
	usleep(1000000);
	read_counter(id, tok2, &n2);
	assert_string_equal(tok, tok2);
	assert_true(n2 > n1);
	free(sock);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

/* POST BODY to /v1/sandboxes on D: the new sandbox's id. */
static char *api_create(e2e_daemon *d, const char *body)
{
	e2e_req q = {
	    .method = "POST", .path = "/v1/sandboxes", .body = body, .len = strlen(body), .d = d};
	e2e_resp r;
	e2e_http_q(&r, &q);
	if (r.status != 201)
		fail_msg("POST /v1/sandboxes %s: %ld %s", body, r.status, r.body);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(r.json, "id");
	assert_true(cJSON_IsString(id));
	char *out = strdup(id->valuestring);
	e2e_resp_free(&r);
	return out;
}

/* The status of ID comes to be WANT within 10 s (read from its record by the CLI: a GET
 * of the API would be a sign of life, which the idle timeout waits for the lack of). */
static void status_becomes(const char *id, const char *want)
{
	char *st = NULL;
	for (int i = 0; i < 50; i++) {
		free(st);
		st = status_of(id);
		if (!strcmp(st, want))
			break;
		usleep(200000);
	}
	assert_string_equal(st, want);
	free(st);
}

/* timeout.onIdle "hibernate" (docs/hibernate.md, "Hibernate as a policy"): the daemon's
 * idle sweep hibernates a sandbox created with "hibernate": true (its cgroups gone, its
 * count standing still); a call with ?autoResume=1 brings it back with its memory (same
 * token, the count going on), one without answers 409. A sandbox of the usual launch with
 * the same policy is paused by the freezer instead (sandbox_park's fallback), and the
 * daemon says why in its log. */
static void test_idle_hibernate_policy(void **state)
{
	if (!have_criu())
		skip();
	char *sock = e2e_printf("%s/hibp.sock", e2e_root());
	e2e_daemon d;
	e2e_daemon_start(&d, sock, false, NULL);
	char *id = api_create(&d, "{\"image\":\"busybox\",\"hibernate\":true,"
				  "\"timeout\":{\"idle\":\"3s\",\"onIdle\":\"hibernate\"}}");
	char *plain = api_create(&d, "{\"image\":\"busybox\","
				     "\"timeout\":{\"idle\":\"3s\",\"onIdle\":\"hibernate\"}}");
	start_counter(id);
	char tok[32], tok2[32];
	long n1, n2, n3;
	usleep(600000);
	read_counter(id, tok, &n1);
	status_becomes(id, "hibernated");
	read_counter(id, tok2, &n2);
	usleep(600000);
	read_counter(id, tok2, &n3);
	assert_int_equal(n2, n3);
	char *cg = NULL;
	assert_true(asprintf(&cg, "/sys/fs/cgroup/memory/sandlot/%s", id) > 0);
	assert_int_equal(access(cg, F_OK), -1);
	/* Without autoResume a call on it is refused, saying what it is. */
	const char *body = "{\"command\":[\"cat\",\"/c\"]}";
	char *p = e2e_printf("/v1/sandboxes/%s/executions?wait=30s", id);
	e2e_req q = {.method = "POST", .path = p, .body = body, .len = strlen(body), .d = &d};
	e2e_resp r;
	e2e_http_q(&r, &q);
	assert_int_equal(r.status, 409);
	assert_true(e2e_contains(r.body, "hibernated"));
	e2e_resp_free(&r);
	free(p);
	/* With it, the call resumes it: the same token, the count going on. */
	p = e2e_printf("/v1/sandboxes/%s/executions?wait=30s&autoResume=1", id);
	q.path = p;
	e2e_http_q(&r, &q);
	if (r.status != 201)
		fail_msg("POST %s: %ld %s", p, r.status, r.body);
	assert_true(e2e_contains(r.body, tok));
	e2e_resp_free(&r);
	free(p);
	assert_int_equal(access(cg, F_OK), 0);
	usleep(800000);
	read_counter(id, tok2, &n3);
	assert_string_equal(tok, tok2);
	assert_true(n3 > n2);
	/* The usual launch: paused (frozen), with the reason in the daemon's log. */
	status_becomes(plain, "paused");
	char *lp = e2e_printf("%s/sandlot.log", getenv("SANDLOT_STATE_DIR"));
	char *log = e2e_read_file(lp);
	free(lp);
	assert_non_null(log);
	char *line = e2e_printf("%s: idle timeout: not hibernated", plain);
	assert_true(e2e_contains(log, line));
	assert_true(e2e_contains(log, "\"hibernate\": true"));
	assert_true(e2e_contains(log, "paused instead"));
	free(line);
	free(log);
	e2e_daemon_stop(&d);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(e2e_sandlot_ok("rm", "-f", plain, NULL));
	free(cg);
	free(sock);
	free(plain);
	free(id);
}

/* The memory cgroup's charge of sandbox ID, in MiB. */
static long charge_mib(const char *id)
{
	char *p = e2e_printf("/sys/fs/cgroup/memory/sandlot/%s/memory.usage_in_bytes", id);
	char *t = e2e_read_file(p);
	long v = t ? atol(t) >> 20 : -1;
	free(t);
	free(p);
	return v;
}

/* The images are written in the sandbox's layer, so its disk limit counts them: a heap
 * bigger than the limit is refused (CRIU's write fails, it lets the tasks go on), the
 * sandbox runs on with its heap, and nothing of the images stays; without the heap the
 * same sandbox hibernates. */
static void test_hibernate_refused_past_the_disk_limit(void **state)
{
	if (!have_criu())
		skip();
	char *id = e2e_sandlot_ok("create", "--hibernate", "--image", "busybox", "--disk", "64Mi",
				  "--memory", "512Mi", NULL);
	free(
	    e2e_sandlot_ok("exec", id, "--", "sh", "-c",
			   "t=$RANDOM$RANDOM; (i=0; while true; do i=$((i+1)); "
			   "echo \"$t $i\" > /c.new; mv /c.new /c; sleep 0.2; done) "
			   "</dev/null >/dev/null 2>&1 &"
			   "awk 'BEGIN { s = sprintf(\"%160000000s\", \"\"); while (1) "
			   "system(\"sleep 1\") }' </dev/null >/dev/null 2>&1 & echo $! > /awk.pid",
			   NULL));
	long mib = 0;
	for (int i = 0; i < 100 && (mib = charge_mib(id)) < 150; i++)
		usleep(100000);
	assert_true(mib >= 150);
	char tok[32], tok2[32];
	long n1, n2;
	read_counter(id, tok, &n1);
	e2e_result r;
	assert_int_not_equal(e2e_sandlot(&r, NULL, 0, "hibernate", id, NULL), 0);
	print_message("refused (%ld MiB charged, 64 MiB disk): %s", mib, r.err);
	assert_non_null(strstr(r.err, "cannot be hibernated"));
	assert_non_null(strstr(r.err, "disk limit"));
	e2e_result_free(&r);
	char *st = status_of(id);
	assert_string_equal(st, "running");
	free(st);
	char *img = path_of("store/sandboxes", id, "/hibernate");
	assert_int_equal(access(img, F_OK), -1);
	usleep(700000);
	read_counter(id, tok2, &n2);
	assert_string_equal(tok, tok2);
	assert_true(n2 > n1);
	assert_true(charge_mib(id) >= 150); /* the heap is still there */
	/* The heap gone, the same limit holds the images. */
	free(e2e_sandlot_ok("exec", id, "--", "sh", "-c", "kill $(cat /awk.pid)", NULL));
	for (int i = 0; i < 50 && charge_mib(id) >= 150; i++)
		usleep(100000);
	free(e2e_sandlot_ok("hibernate", id, NULL));
	assert_int_equal(access(img, F_OK), 0);
	free(e2e_sandlot_ok("resume", id, NULL));
	usleep(700000);
	read_counter(id, tok2, &n2);
	assert_string_equal(tok, tok2);
	free(img);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

/* The sandbox's memory cgroup exists (it runs in its cgroups again). */
static bool has_cgroup(const char *id)
{
	char *cg = e2e_printf("/sys/fs/cgroup/memory/sandlot/%s", id);
	bool r = access(cg, F_OK) == 0;
	free(cg);
	return r;
}

/* Resumed through daemon D: running, the same token, a count going on from N, in its
 * cgroups, its images gone. */
static void assert_resumes(e2e_daemon *d, const char *id, const char *tok, long n)
{
	char tok2[32];
	long n2;
	char *st = api_status(d, "POST", id, "resume");
	assert_string_equal(st, "running");
	free(st);
	usleep(1000000);
	read_counter(id, tok2, &n2);
	assert_string_equal(tok, tok2);
	assert_true(n2 > n);
	assert_true(has_cgroup(id));
	char *img = path_of("store/sandboxes", id, "/hibernate");
	assert_int_equal(access(img, F_OK), -1);
	free(img);
}

/* A sandbox counting (its token and a count read into TOK, N) and daemon D started on
 * *SOCK (caller frees): the start of the tests of a daemon killed. */
static char *counting_with_daemon(e2e_daemon *d, char **sock, char tok[32], long *n)
{
	char *id = hibernate_sandbox();
	usleep(600000);
	read_counter(id, tok, n);
	*sock = e2e_printf("%s/hib.sock", e2e_root());
	e2e_daemon_start(d, *sock, false, NULL);
	return id;
}

/* Hibernated through a daemon that is then killed -9: the next daemon shows it
 * hibernated (not failed) and brings it back with its memory. */
static void test_daemon_killed_while_hibernated(void **state)
{
	if (!have_criu())
		skip();
	char tok[32], *sock;
	long n;
	e2e_daemon d;
	char *id = counting_with_daemon(&d, &sock, tok, &n);
	char *st = api_status(&d, "POST", id, "hibernate");
	assert_string_equal(st, "hibernated");
	free(st);
	read_counter(id, tok, &n);
	e2e_daemon_kill(&d);
	unlink(sock); /* a killed daemon leaves its socket */
	e2e_daemon_start(&d, sock, false, NULL);
	st = api_status(&d, "GET", id, NULL);
	assert_string_equal(st, "hibernated");
	free(st);
	assert_false(has_cgroup(id));
	assert_resumes(&d, id, tok, n);
	e2e_daemon_stop(&d);
	free(sock);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

struct hib_call {
	e2e_daemon *d;
	const char *id;
	long status;
};

static void *hibernate_call(void *arg)
{
	struct hib_call *c = arg;
	char *p = e2e_printf("/v1/sandboxes/%s/hibernate", c->id);
	e2e_req q = {.method = "POST", .path = p, .d = c->d, .no_capture = true};
	e2e_resp r;
	c->status = e2e_http_q(&r, &q);
	e2e_resp_free(&r);
	free(p);
	return NULL;
}

/* A child of PARENT named criu, or 0. */
static pid_t criu_child(pid_t parent)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;
	while (d && !found && (e = readdir(d))) {
		char *p = e2e_printf("/proc/%s/stat", e->d_name), *t = e2e_read_file(p);
		int pp = 0;
		char *c = t ? strrchr(t, ')') : NULL;
		if (c && strstr(t, "(criu)") && sscanf(c + 1, " %*c %d", &pp) == 1 && pp == parent)
			found = atoi(e->d_name);
		free(t);
		free(p);
	}
	if (d)
		closedir(d);
	return found;
}

/* Whether process PID has PATH open (PATH freed). */
static bool holds(pid_t pid, char *path)
{
	char *fds = e2e_printf("/proc/%d/fd", (int)pid), l[4096];
	DIR *d = opendir(fds);
	struct dirent *e;
	bool found = false;
	while (d && !found && (e = readdir(d))) {
		char *p = e2e_printf("%s/%s", fds, e->d_name);
		ssize_t n = readlink(p, l, sizeof(l) - 1);
		found = n > 0 && (l[n] = '\0', !strcmp(l, path));
		free(p);
	}
	if (d)
		closedir(d);
	free(fds);
	free(path);
	return found;
}

/* The daemon killed -9 while its criu dumps the sandbox: criu goes on (holding the
 * record's lock), and the next daemon finds the sandbox whole, hibernated (the dump was
 * done) or running (it was not), never failed; hibernated, it resumes with its memory. */
static void test_daemon_killed_during_hibernate(void **state)
{
	if (!have_criu())
		skip();
	char tok[32], *sock;
	long n;
	e2e_daemon d;
	char *id = counting_with_daemon(&d, &sock, tok, &n);
	struct hib_call c = {.d = &d, .id = id};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, hibernate_call, &c), 0);
	pid_t criu = 0;
	for (int i = 0; i < 20000 && !criu; i++) {
		criu = criu_child(d.pid);
		if (!criu)
			usleep(500);
	}
	assert_true(criu > 0);
	/* It holds the record's lock: a descriptor of the record's directory. */
	assert_true(holds(criu, path_of("sandboxes", id, "")));
	e2e_daemon_kill(&d);
	pthread_join(t, NULL);
	assert_int_not_equal(c.status, 200); /* no answer: the daemon died first */
	/* criu, now ours (the harness is a subreaper), finishes its work. */
	int wst;
	while (waitpid(criu, &wst, 0) < 0 && errno == EINTR)
		;
	unlink(sock);
	e2e_daemon_start(&d, sock, false, NULL);
	char *st = api_status(&d, "GET", id, NULL);
	print_message("criu exited %d; the next daemon sees the sandbox %s\n",
		      WIFEXITED(wst) ? WEXITSTATUS(wst) : -1, st);
	if (!strcmp(st, "hibernated")) {
		assert_false(has_cgroup(id));
		read_counter(id, tok, &n);
		assert_resumes(&d, id, tok, n);
	} else {
		assert_string_equal(st, "running");
		char *img = path_of("store/sandboxes", id, "/hibernate");
		assert_int_equal(access(img, F_OK), -1);
		free(img);
	}
	free(st);
	e2e_daemon_stop(&d);
	free(sock);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

/* The pid in sandbox ID's record ("init_pid"), 0 if none. */
static pid_t record_init(const char *id)
{
	char *p = path_of("sandboxes", id, "/sandbox.json"), *t = e2e_read_file(p);
	assert_non_null(t);
	cJSON *j = cJSON_Parse(t);
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(j, "init_pid");
	pid_t pid = cJSON_IsNumber(in) ? (pid_t)in->valuedouble : 0;
	cJSON_Delete(j);
	free(t);
	free(p);
	return pid;
}

/* Every mount under PREFIX, deepest first (a reboot takes them all). */
static void unmount_under(const char *prefix)
{
	for (int pass = 0; pass < 16; pass++) {
		char *t = e2e_read_file("/proc/self/mountinfo"), *best = NULL, pt[4096];
		size_t bl = 0;
		for (char *l = strtok(t, "\n"); l; l = strtok(NULL, "\n"))
			if (sscanf(l, "%*d %*d %*s %*s %4095s", pt) == 1 &&
			    !strncmp(pt, prefix, strlen(prefix)) && strlen(pt) > bl) {
				free(best);
				best = strdup(pt);
				bl = strlen(pt);
			}
		free(t);
		if (!best)
			return;
		if (umount2(best, 0) < 0)
			fail_msg("umount %s: %s", best, strerror(errno));
		free(best);
	}
}

/* A host reboot, simulated: the daemon and every process of every sandbox end (by the
 * init pids in their records), the sandboxes' cgroups, every mount of sandlot's (the
 * store's btrfs, the images' bind) and everything under the run dir (a tmpfs) go; a daemon started
 * then lists the hibernated sandbox "hibernated", and it resumes with its memory. */
static void test_hibernated_across_a_reboot(void **state)
{
	if (!have_criu())
		skip();
	char tok[32], *sock;
	long n;
	e2e_daemon d;
	char *id = counting_with_daemon(&d, &sock, tok, &n);
	char *other = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	char *other2 = e2e_sandlot_ok("create", "--hibernate", "--image", "busybox", NULL);
	char *st = api_status(&d, "POST", id, "hibernate");
	assert_string_equal(st, "hibernated");
	free(st);
	read_counter(id, tok, &n);
	/* The reboot. */
	const char *ids[] = {other, other2};
	for (int i = 0; i < 2; i++) {
		pid_t init = record_init(ids[i]);
		assert_true(init > 0);
		assert_int_equal(kill(init, SIGKILL), 0);
	}
	e2e_daemon_kill(&d);
	for (int i = 0; i < 2; i++) /* their pid namespaces end with their inits */
		for (int k = 0; k < 100; k++) {
			char *p = e2e_printf("/sys/fs/cgroup/pids/sandlot/%s/cgroup.procs", ids[i]);
			char *t = e2e_read_file(p);
			bool empty = !t || !*t;
			free(t);
			free(p);
			if (empty)
				break;
			usleep(50000);
		}
	const char *run = getenv("SANDLOT_RUN_DIR");
	unmount_under(run);
	/* The store's btrfs (its loop device goes with it: autoclear) and the images'
	 * nosuid bind: remade by sandlot when it needs them. */
	char *store = path_of("store", "", ""), *images = path_of("images", "", "");
	store[strlen(store) - 1] = images[strlen(images) - 1] = '\0'; /* the '/' */
	unmount_under(store);
	unmount_under(images);
	free(store);
	free(images);
	char *cmd = e2e_printf("rm -rf '%s'/* && find /sys/fs/cgroup/*/sandlot -depth -mindepth 1 "
			       "-type d \\( -path '*/%s*' -o -path '*/%s*' \\) -exec rmdir {} +",
			       run, other, other2);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	/* After it. */
	e2e_daemon_start(&d, sock, false, NULL);
	st = api_status(&d, "GET", id, NULL);
	assert_string_equal(st, "hibernated");
	free(st);
	assert_resumes(&d, id, tok, n);
	e2e_daemon_stop(&d);
	free(sock);
	free(e2e_sandlot_ok("rm", "-f", id, other, other2, NULL));
	free(id);
	free(other);
	free(other2);
}

/* Sandbox ID's loop writes token TOK and its count goes up, half a second apart. */
static void counting_on(const char *id, const char *tok)
{
	char t1[32], t2[32];
	long n1, n2;
	read_counter(id, t1, &n1);
	usleep(500000);
	read_counter(id, t2, &n2);
	assert_string_equal(t1, tok);
	assert_string_equal(t2, tok);
	assert_true(n2 > n1);
}

/* The host uid the first task of sandbox ID's memory cgroup runs as. */
static uid_t task_uid(const char *id)
{
	char *p = e2e_printf("/sys/fs/cgroup/memory/sandlot/%s/tasks", id);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	int pid = 0;
	assert_int_equal(fscanf(f, "%d", &pid), 1);
	fclose(f);
	free(p);
	char *sp = e2e_printf("/proc/%d", pid);
	struct stat st;
	assert_int_equal(stat(sp, &st), 0);
	free(sp);
	return st.st_uid;
}

static bool exists_in(const char *id, const char *path)
{
	char *p = path_of("store/sandboxes", id, path);
	bool r = access(p, F_OK) == 0;
	free(p);
	return r;
}

/* The entries of <state>/hibernate (0 when it is absent). */
static int images_left(void)
{
	char *cmd =
	    e2e_printf("ls -A %s/hibernate 2>/dev/null | wc -l", getenv("SANDLOT_STATE_DIR"));
	FILE *pf = popen(cmd, "r");
	int left = -1;
	assert_int_equal(fscanf(pf, "%d", &left), 1);
	pclose(pf);
	free(cmd);
	return left;
}

/* A fork with memory: each copy runs the source's loop on, with its token and a count
 * from the fork's instant, under its own uid range and cgroup; the source runs on;
 * writes after the fork are each sandbox's own. */
static void test_fork_with_memory(void **state)
{
	if (!have_criu())
		skip();
	char *id = hibernate_sandbox();
	free(e2e_sandlot_ok("exec", id, "--", "sh", "-c", "echo before > /f", NULL));
	char tok[32], tok2[32];
	long n0, n1;
	usleep(600000);
	read_counter(id, tok, &n0);
	double t0 = now_s();
	char *out = e2e_sandlot_ok("fork", id, "-n", "2", "--memory", NULL);
	double t1 = now_s();
	print_message("fork --memory of 2 copies: %.3f s (sandlot fork, as a process)\n", t1 - t0);
	char fk[2][64];
	assert_int_equal(sscanf(out, "%63s %63s", fk[0], fk[1]), 2);
	free(out);
	free(e2e_sandlot_ok("exec", id, "--", "sh", "-c", "echo src > /after", NULL));
	usleep(1000000);
	for (int i = 0; i < 2; i++) {
		read_counter(fk[i], tok2, &n1);
		assert_string_equal(tok, tok2);
		assert_true(n1 >= n0);
		counting_on(fk[i], tok); /* it runs */
		char *f = e2e_sandlot_ok("exec", fk[i], "--", "cat", "/f", NULL);
		assert_string_equal(f, "before");
		free(f);
		/* The loop is pid 2 or more inside, as in the source; its init is pid 1. */
		char *ps =
		    e2e_sandlot_ok("exec", fk[i], "--", "sh", "-c", "cat /proc/1/comm", NULL);
		assert_string_equal(ps, "sandlot-init");
		free(ps);
		char *hn = e2e_sandlot_ok("exec", fk[i], "--", "hostname", NULL);
		assert_string_equal(hn, fk[i]); /* its own, not the source's */
		free(hn);
		free(e2e_sandlot_ok("exec", fk[i], "--", "sh", "-c",
				    i ? "echo one > /mine1" : "echo zero > /mine0", NULL));
		assert_int_not_equal(task_uid(fk[i]), task_uid(id));
	}
	assert_int_not_equal(task_uid(fk[0]), task_uid(fk[1]));
	/* Private: the source's write after the fork, each copy's own. */
	assert_false(exists_in(fk[0], "/upper/after"));
	assert_false(exists_in(fk[1], "/upper/after"));
	assert_true(exists_in(fk[0], "/upper/mine0"));
	assert_false(exists_in(fk[1], "/upper/mine0"));
	assert_false(exists_in(id, "/upper/mine0"));
	assert_false(exists_in(id, "/upper/mine1"));
	counting_on(id, tok); /* the source runs on */
	char *st = status_of(fk[0]);
	assert_string_equal(st, "running");
	free(st);
	assert_int_equal(images_left(), 0); /* no dump left behind (the fork base's) */
	free(e2e_sandlot_ok("rm", "-f", fk[0], fk[1], id, NULL));
	free(id);
}

/* The lines of TEXT (freed). */
static size_t lines_of(char *text)
{
	size_t n = 0;
	for (const char *c = text; *c; c++)
		n += *c == '\n';
	free(text);
	return n;
}

/* Refused for a sandbox of the usual launch, saying why; no copy left, the source runs. */
static void test_fork_with_memory_refused(void **state)
{
	char *id = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	size_t before = lines_of(e2e_sandlot_ok("ls", "-a", NULL));
	e2e_result r;
	assert_int_not_equal(e2e_sandlot(&r, NULL, 0, "fork", id, "--memory", NULL), 0);
	assert_non_null(strstr(r.err, "\"hibernate\": true"));
	e2e_result_free(&r);
	assert_int_equal(lines_of(e2e_sandlot_ok("ls", "-a", NULL)), before);
	char *st = status_of(id);
	assert_string_equal(st, "running");
	free(st);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

/* A criu that fails at STEP ("dump" or "restore") and runs the real one otherwise. */
static char *failing_criu(const char *step)
{
	char *path = e2e_printf("%s/criu-fails-%s", e2e_root(), step);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"#!/bin/sh\n[ \"$1\" = %s ] && { echo 'Error (test): refused' >&2; exit 1; }\n"
		"exec %s \"$@\"\n",
		step, hibernate_criu());
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
	return path;
}

/* CRIU failing at the dump, then at the restore of the copies: the fork fails, no copy
 * and no images are left (nor cgroup, mount or process: the per-test leak check), and
 * the source runs on. */
static void test_fork_with_memory_failures(void **state)
{
	if (!have_criu())
		skip();
	char *id = hibernate_sandbox();
	char tok[32];
	long n0;
	usleep(600000);
	read_counter(id, tok, &n0);
	size_t before = lines_of(e2e_sandlot_ok("ls", "-a", NULL));
	const char *steps[] = {"dump", "restore"};
	for (int i = 0; i < 2; i++) {
		char *criu = failing_criu(steps[i]);
		setenv("SANDLOT_CRIU", criu, 1);
		e2e_result r;
		int rc = e2e_sandlot(&r, NULL, 0, "fork", id, "-n", "2", "--memory", NULL);
		unsetenv("SANDLOT_CRIU");
		assert_int_not_equal(rc, 0);
		print_message("%s: %s", steps[i], r.err);
		assert_non_null(strstr(r.err, "criu failed"));
		e2e_result_free(&r);
		assert_int_equal(lines_of(e2e_sandlot_ok("ls", "-a", NULL)), before);
		assert_int_equal(images_left(), 0);
		counting_on(id, tok);
		free(criu);
	}
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

/* A checkpoint with memory: a rollback to it brings the files back and the processes as
 * they were at it (the loop's count goes back to the checkpoint's and on from there), as
 * often as asked; its dump goes with it. */
static void test_checkpoint_with_memory(void **state)
{
	if (!have_criu())
		skip();
	char *id = hibernate_sandbox();
	char tok[32], tok2[32];
	long n0, n1, n2;
	usleep(600000);
	read_counter(id, tok, &n0);
	double t0 = now_s();
	free(e2e_sandlot_ok("checkpoint", "create", id, "cp", "--memory", NULL));
	print_message("checkpoint create --memory: %.3f s (as a process)\n", now_s() - t0);
	char *ls = e2e_sandlot_ok("checkpoint", "ls", id, "--format", "json", NULL);
	assert_non_null(strstr(ls, "\"memory\":\ttrue") ? ls : strstr(ls, "\"memory\": true"));
	free(ls);
	assert_int_equal(images_left(), 1);
	free(e2e_sandlot_ok("exec", id, "--", "sh", "-c", "echo later > /later", NULL));
	for (int round = 0; round < 2; round++) {
		usleep(2000000); /* ten ticks past the checkpoint */
		read_counter(id, tok2, &n1);
		assert_true(n1 >= n0 + 8);
		double t1 = now_s();
		free(e2e_sandlot_ok("rollback", id, "cp", NULL));
		print_message("rollback to it: %.3f s (as a process)\n", now_s() - t1);
		usleep(400000);
		read_counter(id, tok2, &n2);
		print_message("round %d: count %ld at the checkpoint, %ld before the rollback, %ld "
			      "after\n",
			      round, n0, n1, n2);
		assert_string_equal(tok, tok2);
		assert_true(n2 < n1 - 4); /* back to the checkpoint's count */
		assert_true(n2 >= n0);
		assert_false(exists_in(id, "/upper/later"));
		counting_on(id, tok); /* and on from there */
		char *st = status_of(id);
		assert_string_equal(st, "running");
		free(st);
		char *out = e2e_sandlot_ok("exec", id, "--", "cat", "/proc/1/comm", NULL);
		assert_string_equal(out, "sandlot-init");
		free(out);
	}
	free(e2e_sandlot_ok("checkpoint", "rm", id, "cp", NULL));
	assert_int_equal(images_left(), 0);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
	/* A delete takes the dumps of its checkpoints with it. (A fresh sandbox: one whose
	 * processes CRIU restored cannot be dumped again here, docs/hibernate.md.) */
	id = hibernate_sandbox();
	free(e2e_sandlot_ok("checkpoint", "create", id, "cp2", "--memory", NULL));
	assert_int_equal(images_left(), 1);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	assert_int_equal(images_left(), 0);
	free(id);
	/* Refused for a sandbox of the usual launch, nothing made. */
	id = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	e2e_result r;
	assert_int_not_equal(
	    e2e_sandlot(&r, NULL, 0, "checkpoint", "create", id, "cp", "--memory", NULL), 0);
	assert_non_null(strstr(r.err, "\"hibernate\": true"));
	e2e_result_free(&r);
	char *none = e2e_sandlot_ok("checkpoint", "ls", id, "--format", "json", NULL);
	assert_string_equal(none, "[]");
	free(none);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_hibernate_and_resume),
	    E2E_TEST(test_hibernate_with_a_running_execution),
	    E2E_TEST(test_hibernate_and_resume_twice),
	    E2E_TEST(test_hibernate_refused_for_the_usual_launch),
	    E2E_TEST(test_delete_while_hibernated),
	    E2E_TEST(test_hibernated_across_daemon_restarts),
	    E2E_TEST(test_hibernate_refused_past_the_disk_limit),
	    E2E_TEST(test_daemon_killed_while_hibernated),
	    E2E_TEST(test_daemon_killed_during_hibernate),
	    E2E_TEST(test_hibernated_across_a_reboot),
	    E2E_TEST(test_hibernate_with_volumes),
	    E2E_TEST(test_hibernate_with_secret_files),
	    E2E_TEST(test_hibernate_with_network),
	    E2E_TEST(test_hibernate_network_refusals),
	    E2E_TEST(test_idle_hibernate_policy),
	    E2E_TEST(test_fork_with_memory),
	    E2E_TEST(test_fork_with_memory_refused),
	    E2E_TEST(test_fork_with_memory_failures),
	    E2E_TEST(test_checkpoint_with_memory),
	};
	return e2e_run_tests(tests);
}
