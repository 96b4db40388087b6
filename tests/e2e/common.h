/* common.h — the end-to-end harness: a throw-away sandlot state/run root per test program,
 * running build/sandlot with poll-driven pipes, and host snapshots that catch leaks. */
#ifndef SANDLOT_E2E_COMMON_H
#define SANDLOT_E2E_COMMON_H

/* cmocka needs these before it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cmocka.h>

#include <cjson/cJSON.h>

/* ---- environment ------------------------------------------------------------------------
 * The environment lives in the process environment, which every sandlot child inherits:
 *   SANDLOT_E2E_ROOT   /var/tmp/sandlot-e2e-<pid>
 *   SANDLOT_STATE_DIR  $root/state        SANDLOT_RUN_DIR  $root/run
 *   SANDLOT_BUILD      absolute build dir (from SANDLOT_BUILD or ./build)
 * Setup also makes the test process a child subreaper, so every process sandlot leaves
 * behind, daemonised or not, stays a descendant the snapshots can see. */

/* Fresh root, env vars, and `sandlot image import busybox build/images/busybox.tar`. */
void e2e_env_setup(void);
/* The same; import_busybox=false for suites that do not need the CLI. */
void e2e_env_setup_opts(bool import_busybox);
/* rm -f every live sandbox, kill what is left in their cgroups, unmount everything under
 * the root (deepest first), detach loop devices backed there, and remove the root. */
void e2e_env_teardown(void);

/* cmocka group fixtures around the two calls above. */
int e2e_group_setup(void **state);
int e2e_group_setup_no_image(void **state);
int e2e_group_teardown(void **state);

/* Honour E2E_FILTER (a cmocka glob on test names, e.g. "test_run_*") for the next run. */
void e2e_apply_filter(void);
/* main's usual body: the filter, then the group with the standard fixtures. */
#define e2e_run_tests(tests)                                                                       \
	(e2e_apply_filter(), cmocka_run_group_tests(tests, e2e_group_setup, e2e_group_teardown))

/* The test root (NULL before setup) and "<build dir>/<name>" (caller frees). */
const char *e2e_root(void);
char *e2e_build_path(const char *name);
/* SANDLOT_INIT and SANDLOT_SECCOMP_PROFILE for ctx_open in a test program, which does
 * not sit next to sandlot-init and the profile as the CLI does. */
void e2e_runtime_env(void);

/* ---- running commands ------------------------------------------------------------------- */

typedef struct e2e_result {
	int status; /* exit code, or 128+signal */
	char *out;  /* always NUL-terminated (also when empty) */
	size_t out_len;
	char *err;
	size_t err_len;
	bool timed_out; /* the safety timeout fired and the child was SIGKILLed */
} e2e_result;

#define E2E_SANDLOT_TIMEOUT_MS 120000

/* Run argv[0] (a path) with argv; stdin_data=NULL gives /dev/null, otherwise the bytes are
 * fed and stdin closed. Stops the child with SIGKILL after timeout_ms. Returns r->status. */
int e2e_run(e2e_result *r, const char *stdin_data, size_t stdin_len, int timeout_ms,
	    char *const argv[]);
/* Run build/sandlot with the NULL-terminated arguments. Returns r->status. */
int e2e_sandlot(e2e_result *r, const char *stdin_data, size_t stdin_len, const char *arg, ...)
    __attribute__((sentinel));
/* argv excludes the program name and is NULL-terminated. */
int e2e_sandlotv(e2e_result *r, const char *stdin_data, size_t stdin_len, char *const argv[]);
void e2e_result_free(e2e_result *r);
/* Run build/sandlot, fail the test unless it exits 0; returns trimmed stdout (caller frees). */
char *e2e_sandlot_ok(const char *arg, ...) __attribute__((sentinel));
/* `sandlot exec ID -- sh -c LINE`; returns the status, output in R. */
int e2e_sh(e2e_result *r, const char *id, const char *line);
/* The same, failing the test unless it exits 0; stdout without trailing newlines and
 * spaces (caller frees). */
char *e2e_sh_ok(const char *id, const char *line);
/* A string field of "network" in `sandlot inspect ID` (caller frees), NULL if none. */
char *e2e_net_field(const char *id, const char *key);
/* A malloc'd formatted string (fails the test when out of memory). */
char *e2e_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- leak checks ------------------------------------------------------------------------
 * A snapshot is a sorted list of lines, one per: mount (point, type, source); cgroup dir
 * whose path contains "sandlot" (the runtime's long-lived parent .../sandlot excepted);
 * network interface; IPv4 route; attached loop device; process descended from the test process or
 * living in a cgroup of one of this root's sandboxes; live sandbox in $STATE/sandboxes;
 * file under $RUN. */
typedef struct e2e_snapshot e2e_snapshot;

e2e_snapshot *e2e_snapshot_take(void);
/* NULL when equal, else lines "+ thing" (appeared) / "- thing" (vanished); caller frees. */
char *e2e_snapshot_diff(const e2e_snapshot *before, const e2e_snapshot *after);
void e2e_snapshot_free(e2e_snapshot *s);
/* Compare against a fresh snapshot, retrying for 4 s (exits are asynchronous); on a
 * difference, rm -f the sandboxes the test left, then fail the test with the diff. */
void e2e_assert_no_leaks(const e2e_snapshot *before);

/* Waits (up to 5 s) until no `sandlot run` releaser descended from this process is
 * left: what a finished `run` frees and makes ahead (spare layers, record dirs) is then
 * all there. False if one is still at work. */
bool e2e_wait_run_releasers(void);

/* Per-test fixtures: *state is the "before" snapshot. */
int e2e_test_setup(void **state);
int e2e_test_teardown(void **state);
#define E2E_TEST(fn) cmocka_unit_test_setup_teardown(fn, e2e_test_setup, e2e_test_teardown)
/* FN_hibernate: test FN again with FLAG set (the suite's sandboxes then made with
 * --hibernate, docs/hibernate.md). */
#define E2E_HIB_TEST(fn, flag)                                                                     \
	static void fn##_hibernate(void **state)                                                   \
	{                                                                                          \
		flag = true;                                                                       \
		fn(state);                                                                         \
		flag = false;                                                                      \
	}
/* Called by e2e_test_teardown after it reports a change, when set: a suite with a daemon
 * prints what the daemon logged (a release that failed says why there). */
extern void (*e2e_on_leak)(void);

/* ---- a daemon ----------------------------------------------------------------------------
 * `sandlot serve` of the test root, its output in <root>/serve-N.out. */
typedef struct e2e_daemon {
	pid_t pid;
	char sock[256];
	int port; /* its loopback TCP port, when started with tcp */
	char out[256];
} e2e_daemon;

/* Start build/sandlot serve on SOCK (plus loopback TCP when TCP) with EXTRA arguments
 * (NULL-terminated), and wait for its start-up line (and its overlayfs probe). */
void e2e_daemon_start(e2e_daemon *d, const char *sock, bool tcp, const char *const *extra);
/* Wait up to MS for the daemon to exit; its wait status, or -1. */
int e2e_daemon_wait(e2e_daemon *d, int ms);
/* SIGTERM, then (after 10 s) SIGKILL; the wait status, -1 if it had to be killed. */
int e2e_daemon_halt(e2e_daemon *d);
/* SIGKILL and reap; what it leaves behind (its socket, spares, pool) stays. */
void e2e_daemon_kill(e2e_daemon *d);
/* A clean stop: exit 0 soon after SIGTERM, socket removed (fails the test otherwise). */
void e2e_daemon_stop(e2e_daemon *d);
/* The host differs from BEFORE only by a restarted daemon: its process (OLD gone, NEU
 * there) and its spare cgroups; retried for 2 s, failing the test with the diff. */
void assert_only_daemon_changed(const e2e_snapshot *before, pid_t old, pid_t neu);
/* tests/api/spec_check.py: api/openapi.yaml against the sources, the daemon on SOCK and
 * the responses recorded in CAPTURES; fails the test unless it passes; its report
 * (caller frees). */
char *e2e_spec_check(const char *sock, const char *captures);

/* ---- HTTP ------------------------------------------------------------------------------------
 * The one client of the tests: libcurl to a daemon's unix socket or loopback TCP port. */

typedef struct e2e_resp {
	long status; /* 0: no answer came */
	char *body;  /* always NUL-terminated (also when empty) */
	size_t len;
	char *headers; /* every header line as received ("Name: value\r\n"...) */
	size_t headers_len;
	char ctype[128], allow[128]; /* Content-Type, Allow */
	cJSON *json;		     /* the body parsed, when it is application/json */
} e2e_resp;

typedef struct e2e_req {
	const char *method, *path;
	const void *body; /* sent as application/json unless chunked */
	size_t len;
	bool chunked;		    /* send the body with Transfer-Encoding: chunked */
	const e2e_daemon *d;	    /* NULL: the daemon given to e2e_http_use */
	bool tcp;		    /* over its TCP listener instead of its socket */
	const char *ca;		    /* with tcp: HTTPS, the server verified against this CA file */
	const char *auth;	    /* a full header, e.g. "Authorization: Bearer ..." */
	const char *const *headers; /* more header lines, NULL-terminated */
	long timeout_ms;	    /* 0: 120 s */
	/* A body of stream_len bytes made as it is sent (Content-Length, no chunks): STREAM
	 * fills up to LEN bytes of BUF and returns how many (0: no more, the request fails). */
	size_t (*stream)(char *buf, size_t len, void *ud);
	void *stream_ud;
	long long stream_len;
	bool no_capture; /* keep the response out of the spec check's captures */
} e2e_req;

/* The daemon of requests that name none, and the file (JSON lines) every response is
 * appended to for tests/api/spec_check.py (NULL: none). Teardown resets both. */
void e2e_http_use(const e2e_daemon *d, const char *captures);
/* One request; thread-safe (no cmocka calls). Returns r->status: the answer's, also when
 * the transfer failed after it came, 0 when none came; free R with e2e_resp_free. */
long e2e_http_q(e2e_resp *r, const e2e_req *q);
/* METHOD PATH to the e2e_http_use daemon's socket, with JSON (NULL: no body). */
long e2e_http(e2e_resp *r, const char *method, const char *path, const char *json);
void e2e_resp_free(e2e_resp *r);

/* ---- small helpers ---------------------------------------------------------------------- */

/* Whole file, NUL-terminated, or NULL (errno set); caller frees. */
char *e2e_read_file(const char *path);
/* The same, its length (NULs included) in *len. */
char *e2e_read_file_len(const char *path, size_t *len);
bool e2e_contains(const char *haystack, const char *needle);
/* A memory figure of process PID in KiB (FIELD: "VmRSS:", "VmHWM:"...); fails the test
 * when it cannot be read. */
long e2e_proc_kib(pid_t pid, const char *field);
/* Init PID is off the stack exec made (init/init.c); call it once that init has served. */
void e2e_assert_init_off_exec_stack(pid_t pid);
/* Reset PID's peak resident size (VmHWM) to its current one (clear_refs 5). */
void e2e_proc_hwm_reset(pid_t pid);
/* The most a daemon may grow over one hostile request, KiB: 64 MiB, four times that when
 * it is built with AddressSanitizer (`make SAN=1`), whose redzones and quarantine of freed
 * blocks keep roughly twice to three times what a plain build does (a 16,000-entry listing:
 * +142 MiB under ASan). The unbounded code these bounds were written against grew by
 * 136 MiB plain, so four times still fails it under ASan. */
#ifdef __SANITIZE_ADDRESS__
#define E2E_RSS_BOUND_KIB (256 * 1024)
#else
#define E2E_RSS_BOUND_KIB (64 * 1024)
#endif
int64_t e2e_now_ms(void);
/* build/probe's bytes (tests/probe), their count in *len; fails the test if unreadable. */
char *e2e_probe_bytes(size_t *len);
/* The value of probe output line "<name> <value>" ("ok", "errno=EPERM"), or NULL. */
char *e2e_probe_field(const char *probe_out, const char *name);

/* A pax archive <root>/NAME that FILL writes entries into; its path (caller frees). */
struct archive;
char *e2e_write_archive(const char *name, void (*fill)(struct archive *));

#endif
