/* driver.c — the timing core of `make bench`: runs variants of one measure interleaved
 * (A B A B, so drift cancels), each as commands or HTTP requests, and prints statistics.
 *
 *   bench-driver time [--runs N] [--warmup N] [--parallel P --duration S] [--socket PATH]
 *                     [--samples FILE] [--capture FILE] [--timeout S] [--pause MS]
 *                     [--order rotate|fixed]
 *                     -v NAME STEP [:: STEP]... ';'  [-v NAME ... ';']...
 *   bench-driver stats [COLUMN]      statistics of the numbers on stdin
 *
 * A STEP is a program and its arguments (spawned directly, no shell; it must exit 0), or
 * `@http METHOD PATH [BODY]`: one HTTP/1.1 request on the unix socket --socket (kept
 * open between requests); the answer must be 2xx, and a top-level "exitCode" in it must
 * be 0. In every argument `{i}` becomes a token unique to this operation and `{id}` the
 * top-level "id" of the operation's first HTTP answer that had one (create -> exec ->
 * delete: the sandbox's, not the execution's). One operation = all steps of a
 * variant, timed together, but for a step written `@untimed STEP`: it runs and is not
 * timed (`@untimed @http POST /v1/sandboxes ... :: @http POST .../code ... :: @untimed
 * @http DELETE ...` times a new sandbox's first call alone). Output: one tab-separated
 * line per variant,
 *   NAME  n  median_ms  p99_ms  mean_ms  min_ms  max_ms  ops_per_s
 * With --parallel P, each round runs P clients of one variant for S seconds (variants
 * take turns); ops_per_s is completed operations per second of wall time. --pause MS
 * waits that long (untimed) before each sequential operation: a client at an agent's
 * pace, which lets background work (a daemon's pool refill, releases) catch up. Each round
 * of a sequential run starts one variant further on (A B, B A, ...) so that no variant
 * always follows another; --order fixed keeps A B every round, for variants that are the
 * halves of one cycle (pause, then resume). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cleanup.h"

extern char **environ;

#define MAX_VARIANTS 8
#define MAX_STEPS    8

struct step {
	char **argv; /* into the driver's argv; argv[0] == "@http" for requests */
	int argc;
	bool untimed; /* written `@untimed STEP`: run, but not counted in the time */
};

struct variant {
	const char *name;
	struct step steps[MAX_STEPS];
	int nsteps;
	double *ms; /* latencies of timed operations */
	size_t n, cap;
	double busy_s; /* parallel mode: wall time of this variant's rounds */
	uint64_t ops;  /* parallel mode: operations completed */
};

struct opts {
	int runs, warmup, parallel;
	double duration_s, timeout_s, pause_ms;
	bool fixed_order;
	const char *socket, *samples, *capture;
};

/* Per client: its HTTP connection, the last id seen, buffers for stderr and output. */
struct client {
	const struct opts *o;
	int http_fd;
	char id[128]; /* {id}: see the top of the file */
	int errfd;    /* memfd collecting the stderr of spawned steps */
	int outfd;    /* stdout of spawned steps: /dev/null or the capture file */
	uint64_t k;   /* operations started, for {i} */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int push_ms(struct variant *v, double ms)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 256;
		double *p = realloc(v->ms, cap * sizeof(*p));
		if (!p)
			return -1;
		v->ms = p, v->cap = cap;
	}
	v->ms[v->n++] = ms;
	return 0;
}

/* Expand {i} and {id} in one argument; returns malloc'd text. */
static char *expand(const char *arg, struct client *c)
{
	char tok[64];
	snprintf(tok, sizeof(tok), "%d-%llu", (int)getpid(), (unsigned long long)c->k);
	size_t cap = strlen(arg) + 1;
	for (const char *p = arg; (p = strchr(p, '{')); p++)
		cap += sizeof(tok) + sizeof(c->id);
	char *out = malloc(cap), *w = out;
	if (!out)
		return NULL;
	for (const char *p = arg; *p;) {
		if (!strncmp(p, "{i}", 3)) {
			w = stpcpy(w, tok), p += 3;
		} else if (!strncmp(p, "{id}", 4)) {
			w = stpcpy(w, c->id), p += 4;
		} else {
			*w++ = *p++;
		}
	}
	*w = '\0';
	return out;
}

static void free_argv(char **argv)
{
	for (char **a = argv; a && *a; a++)
		free(*a);
	free(argv);
}

static char **expand_argv(const struct step *s, int from, struct client *c)
{
	char **argv = calloc((size_t)(s->argc - from + 1), sizeof(char *));
	for (int i = from; argv && i < s->argc; i++)
		if (!(argv[i - from] = expand(s->argv[i], c)))
			return free_argv(argv), NULL;
	return argv;
}

static void dump_stderr(struct client *c)
{
	char buf[4096];
	ssize_t n = pread(c->errfd, buf, sizeof(buf) - 1, 0);
	if (n > 0) {
		buf[n] = '\0';
		fprintf(stderr, "bench-driver:   its stderr: %s%s", buf,
			buf[n - 1] == '\n' ? "" : "\n");
	}
}

static int run_command(const struct step *s, struct client *c)
{
	char **argv = expand_argv(s, 0, c);
	if (!argv)
		return -1;
	if (ftruncate(c->errfd, 0) < 0 || lseek(c->errfd, 0, SEEK_SET) < 0)
		return free_argv(argv), -1;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, c->outfd, 1);
	posix_spawn_file_actions_adddup2(&fa, c->errfd, 2);
	pid_t pid;
	int r = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0) {
		fprintf(stderr, "bench-driver: cannot start %s: %s\n", argv[0], strerror(r));
		return free_argv(argv), -1;
	}
	/* Bounded wait: a hung step must not hang the whole bench. */
	_cleanup_close_ int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd >= 0) {
		struct pollfd p = {.fd = pfd, .events = POLLIN};
		int pr;
		while ((pr = poll(&p, 1, (int)(c->o->timeout_s * 1000))) < 0 && errno == EINTR)
			;
		if (pr == 0) {
			syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
			fprintf(stderr, "bench-driver: %s ran over %.0f s; killed it\n", argv[0],
				c->o->timeout_s);
		}
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return free_argv(argv), -1;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "bench-driver: `%s", argv[0]);
		for (char **a = argv + 1; *a; a++)
			fprintf(stderr, " %s", *a);
		if (WIFEXITED(st))
			fprintf(stderr, "` exited %d\n", WEXITSTATUS(st));
		else
			fprintf(stderr, "` died of signal %d\n", WTERMSIG(st));
		dump_stderr(c);
		return free_argv(argv), -1;
	}
	free_argv(argv);
	return 0;
}

static int http_connect(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (!path || strlen(path) >= sizeof(a.sun_path)) {
		fprintf(stderr, "bench-driver: @http needs --socket PATH (a unix socket)\n");
		return -1;
	}
	strcpy(a.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		fprintf(stderr, "bench-driver: connect %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

struct rbuf {
	char *b;
	size_t len, cap, pos; /* pos: parse position */
};

/* Reads more into rb; 0 at EOF, -1 on error. */
static ssize_t rb_fill(int fd, struct rbuf *rb, double deadline)
{
	if (rb->cap - rb->len < 4096) {
		size_t cap = rb->cap ? rb->cap * 2 : 16384;
		char *p = realloc(rb->b, cap);
		if (!p)
			return -1;
		rb->b = p, rb->cap = cap;
	}
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int left = (int)((deadline - now_s()) * 1000);
	if (left <= 0 || poll(&p, 1, left) <= 0)
		return errno = ETIMEDOUT, -1;
	ssize_t n = read(fd, rb->b + rb->len, rb->cap - rb->len - 1);
	if (n > 0)
		rb->len += (size_t)n, rb->b[rb->len] = '\0';
	return n;
}

/* Parses one response: status, and the body (de-chunked in place) into *body. */
static int http_read(int fd, struct rbuf *rb, int *status, char **body, size_t *blen,
		     bool *close_after, double deadline)
{
	char *eoh;
	while (!rb->b || !(eoh = strstr(rb->b, "\r\n\r\n")))
		if (rb_fill(fd, rb, deadline) <= 0)
			return -1;
	*eoh = '\0';
	if (sscanf(rb->b, "HTTP/1.%*d %d", status) != 1)
		return -1;
	long clen = -1;
	bool chunked = false;
	*close_after = strstr(rb->b, "HTTP/1.0") == rb->b;
	for (char *h = strstr(rb->b, "\r\n"); h; h = strstr(h + 2, "\r\n")) {
		if (!strncasecmp(h + 2, "content-length:", 15))
			clen = strtol(h + 17, NULL, 10);
		else if (!strncasecmp(h + 2, "transfer-encoding:", 18) &&
			 strcasestr(h + 20, "chunked"))
			chunked = true;
		else if (!strncasecmp(h + 2, "connection:", 11) && strcasestr(h + 13, "close"))
			*close_after = true;
	}
	size_t start = (size_t)(eoh + 4 - rb->b);
	if (*status == 204 || *status == 304 || *status / 100 == 1) {
		*blen = 0; /* never a body, whatever the headers say */
	} else if (chunked) {
		/* De-chunk into the same buffer: output never overtakes input. */
		size_t in = start, out = start;
		for (;;) {
			char *nl;
			while (!(nl = strstr(rb->b + in, "\r\n")))
				if (rb_fill(fd, rb, deadline) <= 0)
					return -1;
			size_t sz = strtoul(rb->b + in, NULL, 16);
			size_t data = (size_t)(nl + 2 - rb->b);
			while (rb->len < data + sz + 2)
				if (rb_fill(fd, rb, deadline) <= 0)
					return -1;
			if (sz == 0)
				break;
			memmove(rb->b + out, rb->b + data, sz);
			out += sz, in = data + sz + 2;
		}
		*blen = out - start;
	} else if (clen >= 0) {
		while (rb->len < start + (size_t)clen)
			if (rb_fill(fd, rb, deadline) <= 0)
				return -1;
		*blen = (size_t)clen;
	} else {
		ssize_t n;
		while ((n = rb_fill(fd, rb, deadline)) > 0)
			;
		if (n < 0)
			return -1;
		*blen = rb->len - start;
		*close_after = true;
	}
	*body = rb->b + start;
	(*body)[*blen] = '\0';
	return 0;
}

/* One request; keeps the connection for the next one unless the server closes it. */
static int run_http(const struct step *s, struct client *c)
{
	if (s->argc < 3) {
		fprintf(stderr, "bench-driver: @http needs METHOD PATH [BODY]\n");
		return -1;
	}
	char **a = expand_argv(s, 1, c);
	if (!a)
		return -1;
	const char *body = s->argc > 3 ? a[2] : "";
	for (int attempt = 0; attempt < 2; attempt++) {
		if (c->http_fd < 0 && (c->http_fd = http_connect(c->o->socket)) < 0)
			return free_argv(a), -1;
		_cleanup_free_ char *req = NULL;
		int rl = asprintf(
		    &req,
		    "%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
		    "Content-Length: %zu\r\n\r\n%s",
		    a[0], a[1], strlen(body), body);
		struct rbuf rb = {0};
		int status = 0;
		char *resp = NULL;
		size_t blen = 0;
		bool close_after = false;
		if (rl < 0 || send(c->http_fd, req, (size_t)rl, MSG_NOSIGNAL) != rl ||
		    http_read(c->http_fd, &rb, &status, &resp, &blen, &close_after,
			      now_s() + c->o->timeout_s) < 0) {
			free(rb.b);
			close(c->http_fd), c->http_fd = -1;
			if (attempt == 0 && errno != ETIMEDOUT)
				continue; /* the server closed an idle keep-alive connection */
			fprintf(stderr, "bench-driver: %s %s: no answer: %s\n", a[0], a[1],
				strerror(errno));
			return free_argv(a), -1;
		}
		if (close_after)
			close(c->http_fd), c->http_fd = -1;
		int ok = status >= 200 && status < 300 ? 0 : -1;
		cJSON *j = blen ? cJSON_Parse(resp) : NULL;
		cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
		cJSON *ec = cJSON_GetObjectItemCaseSensitive(j, "exitCode");
		if (cJSON_IsString(id) && !c->id[0])
			snprintf(c->id, sizeof(c->id), "%s", id->valuestring);
		if (ok == 0 && cJSON_IsNumber(ec) && ec->valueint != 0)
			ok = -1;
		if (ok < 0)
			fprintf(stderr, "bench-driver: %s %s -> %d: %.400s\n", a[0], a[1], status,
				resp);
		cJSON_Delete(j);
		free(rb.b);
		return free_argv(a), ok;
	}
	return free_argv(a), -1;
}

/* One operation: every step of the variant. Returns its duration in ms, or -1. */
static double run_op(const struct variant *v, struct client *c)
{
	c->k++;
	c->id[0] = '\0';
	double ms = 0;
	for (int i = 0; i < v->nsteps; i++) {
		const struct step *s = &v->steps[i];
		double t0 = now_s();
		int r = strcmp(s->argv[0], "@http") == 0 ? run_http(s, c) : run_command(s, c);
		if (r < 0) {
			fprintf(stderr, "bench-driver: variant %s failed at step %d\n", v->name,
				i + 1);
			return -1;
		}
		if (!s->untimed)
			ms += (now_s() - t0) * 1000;
	}
	return ms;
}

static int client_init(struct client *c, const struct opts *o)
{
	memset(c, 0, sizeof(*c));
	c->o = o;
	c->http_fd = -1;
	c->errfd = memfd_create("bench-stderr", MFD_CLOEXEC);
	c->outfd = o->capture ? open(o->capture, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)
			      : open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (c->errfd < 0 || c->outfd < 0) {
		fprintf(stderr, "bench-driver: open %s: %s\n",
			o->capture ? o->capture : "/dev/null", strerror(errno));
		return -1;
	}
	return 0;
}

static void client_close(struct client *c)
{
	if (c->http_fd >= 0)
		close(c->http_fd);
	close(c->errfd);
	close(c->outfd);
}

static int run_sequential(struct variant *vs, int nv, const struct opts *o)
{
	struct client c;
	if (client_init(&c, o) < 0)
		return -1;
	int ret = 0;
	for (int round = 0; round < o->warmup + o->runs && ret == 0; round++) {
		/* Rotate the order too, so no variant always runs right after another. */
		for (int j = 0; j < nv; j++) {
			struct variant *v = &vs[(o->fixed_order ? j : round + j) % nv];
			if (o->pause_ms > 0) {
				struct timespec ts = {(time_t)(o->pause_ms / 1000),
						      (long)(fmod(o->pause_ms, 1000) * 1e6)};
				nanosleep(&ts, NULL);
			}
			double ms = run_op(v, &c);
			if (ms < 0 || (round >= o->warmup && push_ms(v, ms) < 0)) {
				ret = -1;
				break;
			}
		}
	}
	client_close(&c);
	return ret;
}

/* A parallel client: runs operations until the deadline, then writes its latencies
 * (doubles, ms) to fd; a failed operation ends it with status 1. */
static int client_loop(const struct variant *v, const struct opts *o, int fd, double deadline)
{
	struct client c;
	if (client_init(&c, o) < 0)
		return 1;
	int status = 0;
	while (now_s() < deadline) {
		double ms = run_op(v, &c);
		if (ms < 0) {
			status = 1;
			break;
		}
		if (write(fd, &ms, sizeof(ms)) != sizeof(ms)) {
			status = 1;
			break;
		}
	}
	client_close(&c);
	return status;
}

static int run_parallel_round(struct variant *v, const struct opts *o, bool timed)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	double t0 = now_s(), deadline = t0 + o->duration_s;
	pid_t kids[256];
	int nk = 0;
	fflush(NULL);
	for (; nk < o->parallel; nk++) {
		kids[nk] = fork();
		if (kids[nk] < 0)
			break;
		if (kids[nk] == 0) {
			close(p[0]);
			_exit(client_loop(v, o, p[1], deadline));
		}
	}
	close(p[1]);
	double ms;
	ssize_t n;
	int ret = nk == o->parallel ? 0 : -1;
	while ((n = read(p[0], &ms, sizeof(ms))) == sizeof(ms) || (n < 0 && errno == EINTR))
		if (n > 0 && timed && push_ms(v, ms) == 0)
			v->ops++;
	close(p[0]);
	double t1 = now_s(); /* every client has finished its last operation */
	for (int i = 0; i < nk; i++) {
		int st;
		while (waitpid(kids[i], &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			ret = -1;
	}
	if (timed)
		v->busy_s += t1 - t0;
	return ret;
}

static int run_parallel(struct variant *vs, int nv, const struct opts *o)
{
	for (int round = 0; round < o->warmup + o->runs; round++)
		for (int j = 0; j < nv; j++)
			if (run_parallel_round(&vs[(round + j) % nv], o, round >= o->warmup) < 0) {
				fprintf(stderr, "bench-driver: %s with %d clients failed\n",
					vs[(round + j) % nv].name, o->parallel);
				return -1;
			}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* n, median, p99 (nearest rank), mean, min, max of a[0..n) (sorted in place). */
static void print_stats(const char *name, double *a, size_t n, double ops_per_s)
{
	if (n == 0) {
		printf("%s\t0\tnan\tnan\tnan\tnan\tnan\tnan\n", name);
		return;
	}
	qsort(a, n, sizeof(*a), cmp_double);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += a[i];
	double med = n % 2 ? a[n / 2] : (a[n / 2 - 1] + a[n / 2]) / 2;
	size_t r99 = (size_t)ceil(0.99 * (double)n);
	double p99 = a[r99 ? r99 - 1 : 0];
	if (ops_per_s < 0)
		ops_per_s = 1000.0 * (double)n / sum;
	printf("%s\t%zu\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.2f\n", name, n, med, p99, sum / (double)n,
	       a[0], a[n - 1], ops_per_s);
}

static int usage(const char *why)
{
	fprintf(stderr,
		"bench-driver: %s\n"
		"usage: bench-driver time [--runs N] [--warmup N] [--parallel P --duration S]\n"
		"                         [--socket PATH] [--samples FILE] [--capture FILE] "
		"[--timeout S]\n"
		"                         [--pause MS] [--order rotate|fixed]\n"
		"                         -v NAME STEP [:: STEP]... ';' ...\n"
		"       bench-driver stats [COLUMN] < numbers\n",
		why);
	return 2;
}

static int parse_time_args(int argc, char **argv, struct opts *o, struct variant *vs, int *nv)
{
	int i = 0;
	for (; i < argc && strcmp(argv[i], "-v") != 0; i += 2) {
		if (i + 1 >= argc)
			return usage("option without a value");
		const char *k = argv[i], *val = argv[i + 1];
		if (!strcmp(k, "--runs"))
			o->runs = atoi(val);
		else if (!strcmp(k, "--warmup"))
			o->warmup = atoi(val);
		else if (!strcmp(k, "--parallel"))
			o->parallel = atoi(val);
		else if (!strcmp(k, "--duration"))
			o->duration_s = atof(val);
		else if (!strcmp(k, "--timeout"))
			o->timeout_s = atof(val);
		else if (!strcmp(k, "--socket"))
			o->socket = val;
		else if (!strcmp(k, "--pause"))
			o->pause_ms = atof(val);
		else if (!strcmp(k, "--order") && (!strcmp(val, "fixed") || !strcmp(val, "rotate")))
			o->fixed_order = !strcmp(val, "fixed");
		else if (!strcmp(k, "--samples"))
			o->samples = val;
		else if (!strcmp(k, "--capture"))
			o->capture = val;
		else
			return usage("unknown option");
	}
	while (i < argc) {
		if (strcmp(argv[i], "-v") || i + 2 >= argc || *nv == MAX_VARIANTS)
			return usage("expected -v NAME STEP... ';'");
		struct variant *v = &vs[(*nv)++];
		v->name = argv[i + 1];
		i += 2;
		struct step *s = &v->steps[0];
		s->argv = &argv[i];
		v->nsteps = 1;
		for (; i < argc && strcmp(argv[i], ";"); i++) {
			if (strcmp(argv[i], "::"))
				continue;
			if (v->nsteps == MAX_STEPS)
				return usage("too many steps");
			argv[i] = NULL;
			s->argc = (int)(&argv[i] - s->argv);
			s = &v->steps[v->nsteps++];
			s->argv = &argv[i + 1];
		}
		if (i == argc)
			return usage("a variant must end with ';'");
		argv[i] = NULL; /* each step's argv is NULL-terminated in place */
		s->argc = (int)(&argv[i] - s->argv);
		for (int k = 0; k < v->nsteps; k++) {
			struct step *t = &v->steps[k];
			if (t->argc > 1 && !strcmp(t->argv[0], "@untimed")) {
				t->untimed = true;
				t->argv++;
				t->argc--;
			}
			if (t->argc == 0 || !strcmp(t->argv[0], "@untimed"))
				return usage("empty step");
		}
		i++;
	}
	if (*nv == 0 || o->runs < 1 || o->warmup < 0 || (o->parallel && o->duration_s <= 0) ||
	    o->parallel > 256)
		return usage(
		    "need a variant, --runs >= 1, and --duration with --parallel (<= 256)");
	return 0;
}

static int cmd_time(int argc, char **argv)
{
	struct opts o = {.runs = 30, .warmup = 3, .timeout_s = 120};
	struct variant vs[MAX_VARIANTS] = {0};
	int nv = 0;
	int r = parse_time_args(argc, argv, &o, vs, &nv);
	if (r)
		return r;
	signal(SIGPIPE, SIG_IGN);
	r = o.parallel ? run_parallel(vs, nv, &o) : run_sequential(vs, nv, &o);
	if (r < 0)
		return 1;
	_cleanup_fclose_ FILE *sf = o.samples ? fopen(o.samples, "a") : NULL;
	for (int i = 0; i < nv; i++) {
		for (size_t k = 0; sf && k < vs[i].n; k++)
			fprintf(sf, "%s\t%.3f\n", vs[i].name, vs[i].ms[k]);
		print_stats(vs[i].name, vs[i].ms, vs[i].n,
			    o.parallel ? (double)vs[i].ops / vs[i].busy_s : -1);
		free(vs[i].ms);
	}
	return 0;
}

/* Statistics of one column (1-based, default 1) of whitespace-separated numbers. */
static int cmd_stats(int argc, char **argv)
{
	int col = argc > 0 ? atoi(argv[0]) : 1;
	struct variant v = {0};
	char line[4096];
	while (fgets(line, sizeof(line), stdin)) {
		char *save = NULL, *f = strtok_r(line, " \t\n", &save);
		for (int k = 1; f && k < col; k++)
			f = strtok_r(NULL, " \t\n", &save);
		char *end;
		double d = f ? strtod(f, &end) : 0;
		if (f && end != f && push_ms(&v, d) < 0)
			return 1;
	}
	print_stats("stats", v.ms, v.n, -1);
	free(v.ms);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "time"))
		return cmd_time(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "stats"))
		return cmd_stats(argc - 2, argv + 2);
	return usage("expected `time` or `stats`");
}
