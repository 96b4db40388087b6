/* exec_latency.c — build/bench-exec-latency: the runtime's own exec cost, without a CLI
 * or HTTP in front: exec_start, and exec_start + exec_wait, of /bin/true in a running
 * sandbox.
 *
 * Usage: bench-exec-latency SANDBOX_ID [RUNS]   (root; SANDLOT_STATE_DIR/RUN_DIR as for
 * the CLI that made the sandbox; sandlot-init and seccomp/ found next to the binary).
 * Prints two lines in bench-driver's format, which bench/run.sh reads:
 *   NAME  n  median_ms  p99_ms  mean_ms  min_ms  max_ms  ops_per_s */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec.h"
#include "sandbox.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* bench-driver's line for the N times in A (sorted in place): the same median, p99
 * (nearest rank) and rate as bench/driver.c's print_stats. */
static void print_stats(const char *name, double *a, size_t n)
{
	qsort(a, n, sizeof(*a), cmp_double);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += a[i];
	double med = n % 2 ? a[n / 2] : (a[n / 2 - 1] + a[n / 2]) / 2;
	size_t r99 = (size_t)ceil(0.99 * (double)n);
	printf("%s\t%zu\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.2f\n", name, n, med, a[r99 ? r99 - 1 : 0],
	       sum / (double)n, a[0], a[n - 1], 1000.0 * (double)n / sum);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: bench-exec-latency SANDBOX_ID [RUNS]\n");
		return 2;
	}
	const char *id = argv[1];
	size_t runs = argc == 3 ? strtoul(argv[2], NULL, 10) : 20;
	if (runs < 1)
		runs = 1;
	double *start = calloc(runs, sizeof(double)), *total = calloc(runs, sizeof(double));
	sl_ctx ctx;
	sl_sandbox sb;
	sl_err err = {0};
	if (!start || !total)
		return 1;
	if (ctx_open(&ctx, &err) < 0) {
		fprintf(stderr, "bench-exec-latency: %s\n", err.msg);
		return 1;
	}
	if (sandbox_get(&ctx, id, &sb, &err) < 0) {
		fprintf(stderr, "bench-exec-latency: %s\n", err.msg);
		ctx_close(&ctx);
		return 1;
	}
	char *cmd[] = {"/bin/true", NULL};
	int rc = 0;
	for (size_t i = 0; i < runs && rc == 0; i++) {
		sl_exec e, w;
		double a = now_ms();
		if (exec_start(&ctx, &sb, &(sl_exec_spec){.argv = cmd}, &e, &err) < 0) {
			fprintf(stderr, "bench-exec-latency: exec_start: %s\n", err.msg);
			rc = 1;
			break;
		}
		double b = now_ms();
		if (exec_wait(&ctx, id, e.id, 10000, &w, &err) < 0 ||
		    w.status != SL_EXEC_COMPLETED) {
			fprintf(stderr, "bench-exec-latency: exec_wait %s: %s\n", e.id,
				err.msg[0] ? err.msg : "did not complete in 10 s");
			rc = 1;
		} else {
			exec_free(&w);
		}
		start[i] = b - a;
		total[i] = now_ms() - a;
		exec_free(&e);
	}
	if (rc == 0) {
		print_stats("exec-start", start, runs);
		print_stats("exec-start-wait", total, runs);
	}
	sandbox_free(&sb);
	ctx_close(&ctx);
	free(start);
	free(total);
	return rc;
}
