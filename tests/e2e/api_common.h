/* api_common.h — what the test_api_*.c programs (one per route group of `sandlot serve`)
 * share: the main daemon every test talks to, request helpers, a WebSocket client. */
#ifndef SANDLOT_E2E_API_COMMON_H
#define SANDLOT_E2E_API_COMMON_H

#include <pthread.h>

#include "common.h"
#include "sandbox.h"

/* ---- the main daemon --------------------------------------------------------------------
 * api_group_setup makes the test root (e2e_group_setup), starts D on <root>/api.sock and a
 * loopback port, has e2e_http send to it and record every response in
 * <root>/captures.jsonl for test_zz_spec, and reads its key. */
extern e2e_daemon D;
extern char KEY[80]; /* D's API key */
extern sl_ctx CTX;   /* for runtime calls the API does not offer */

int api_group_setup(void **state);
/* Halts D (saying so when it did not stop cleanly), then e2e_group_teardown. */
int api_group_teardown(void **state);
/* Last in every test_api_* program: api/openapi.yaml against the sources, the live D,
 * and every response this program's tests recorded (tests/api/spec_check.py). */
void test_zz_spec(void **state);

/* main's body: the filter, then TESTS with the fixtures above. */
#define api_run_tests(tests)                                                                       \
	(e2e_apply_filter(), cmocka_run_group_tests(tests, api_group_setup, api_group_teardown))

/* ---- requests to D ----------------------------------------------------------------------- */

double now_s(void);				   /* CLOCK_MONOTONIC, in seconds */
const char *jstr(const cJSON *o, const char *key); /* NULL unless a string */
double jnum(const cJSON *o, const char *key);	   /* fails the test unless a number */
const cJSON *jget(const cJSON *o, const char *key);
/* Fail unless R has STATUS; on an error status, the error's code must be CODE and its
 * message must contain NEEDLE (when given). */
void expect(const e2e_resp *r, long status, const char *code, const char *needle);
/* The value of the metric NAME (no labels) in the daemon's /metrics; -1 if absent. */
long long metric(const char *name);
/* e2e_http + expect. */
void expect_call(const char *method, const char *path, const char *body, long status,
		 const char *code, const char *needle);
/* A sandbox from the create body BODY (NULL: busybox, nothing else); returns its id. */
char *sandbox_new(const char *body);
/* DELETE it (204 required); frees ID. */
void sandbox_del(char *id);
/* Run BODY (an ExecutionRequest) with ?wait=; the ended Execution (caller frees). */
cJSON *run_wait(const char *id, const char *body);
/* Start BODY without waiting; returns the execution id. */
char *exec_start_id(const char *id, const char *body);
/* GET the execution (with ?wait=WAIT when given; 200 required); caller frees. */
cJSON *exec_get_wait(const char *id, const char *eid, const char *wait);
/* Shell line -> stdout of a command run to its end (exit 0 required). */
char *sh_ok(const char *id, const char *line);
/* GET PATH's body, whatever the status (in *STATUS); caller frees. */
char *get_raw(const char *path, long *status);

/* One request on a thread of its own: pthread_create(&th, NULL, job_main, &job). */
typedef struct job {
	const char *method;
	char path[256];
	const char *body;
	long status;
	char estatus[32]; /* the answer's "status", when it has one */
	double secs;
	size_t bytes;
	char *data; /* the body; the caller frees */
} job;
void *job_main(void *p);

/* ---- the host and the daemon's processes ---------------------------------------------------- */

/* The host pid of sandbox ID's init, from its record. */
pid_t record_init_pid(const char *id);
/* PATH (a /proc or cgroup file) comes to hold NEEDLE within 1 s. */
void assert_file_comes_to_hold(const char *path, const char *needle);
/* PID is reaped within 2 s, not left a zombie. */
void assert_reaped(pid_t pid);
/* Inodes of the entries of DIR whose names start with PREFIX (and do not hold SKIP, when
 * given), up to MAX: a renamed directory keeps its own. */
int prefixed_inodes(const char *dir, const char *prefix, const char *skip, unsigned long *out,
		    int max);
/* The run dirs of the spare inits of daemon PID, as inodes. */
int spare_init_dirs_of(pid_t pid, unsigned long *out, int max);

/* ---- a WebSocket client ------------------------------------------------------------------ */

typedef struct ws {
	int fd;
	unsigned char buf[1 << 16];
	size_t len;
} ws;

/* The client half of the opening handshake on connected FD, for HOST and PATH; the
 * HTTP status, with the status line in STATUS_LINE and Sec-WebSocket-Accept checked. */
int ws_handshake(ws *w, int fd, const char *host, const char *path, char *status_line, size_t sl);
/* A WebSocket on D's unix socket. */
int ws_connect(ws *w, const char *path, char *status_line, size_t sl);
/* One masked frame of opcode OP. */
void ws_send(ws *w, int op, const void *data, size_t len);
/* Read frames until OUT contains NEEDLE (or a close frame arrives: *close = its code). */
bool ws_until(ws *w, char *out, size_t cap, const char *needle, int *close, int ms);

#endif
