/* system.c — /v1/health and /metrics (Prometheus text): what the daemon and its sandboxes
 * are doing, for people and for scrapers. */
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "owner.h"

enum MHD_Result api_health(api_req *r)
{
	size_t n, live = 0;
	sl_err err = {0};
	if (owner_acting()[0]) {
		/* A key's own count (hardening fix 10: another key's sandboxes are not even
		 * counted for it); the list reads its records, which the admin's count spares. */
		sl_sandbox *mine;
		if (sandbox_list(r->srv->ctx, &mine, &n, &err) < 0)
			return api_reply_error(r, &err);
		for (size_t i = 0; i < n; i++)
			live += mine[i].status != SL_ST_TERMINATED;
		sandbox_free_list(mine, n);
	} else {
		sl_deadline *list;
		if (sandbox_list_deadlines(r->srv->ctx, &list, &n, &err) < 0)
			return api_reply_error(r, &err);
		live = n;
		free(list);
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "status", "ok");
	cJSON_AddStringToObject(o, "version", SANDLOT_VERSION);
	cJSON_AddNumberToObject(o, "sandboxes", (double)live);
	cJSON_AddNumberToObject(o, "previewPort", r->srv->preview_port);
	cJSON_AddItemToObject(o, "pool", api_pool_json(r->srv));
	return api_reply_json(r, 200, o);
}

/* A growing text buffer; on allocation failure it stays NULL and the reply is a 500. */
typedef struct textbuf {
	char *s;
	size_t len, cap;
	bool failed;
} textbuf;

static void tb_printf(textbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_printf(textbuf *b, const char *fmt, ...)
{
	if (b->failed)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->failed = true;
			return;
		}
		if (b->s && b->len + n < b->cap) {
			b->len += n;
			return;
		}
		size_t cap = (b->cap ? b->cap : 4096);
		while (cap <= b->len + n)
			cap *= 2;
		char *s = realloc(b->s, cap);
		if (!s) {
			b->failed = true;
			return;
		}
		b->s = s;
		b->cap = cap;
	}
}

enum MHD_Result api_metrics(api_req *r)
{
	static const char *const statuses[] = {"creating", "running", "paused",
					       "stopped",  "failed",  "terminated"};
	sl_sandbox *list;
	size_t n;
	sl_err err = {0};
	if (sandbox_list(r->srv->ctx, &list, &n, &err) < 0)
		return api_reply_error(r, &err);
	textbuf b = {0};
	tb_printf(&b, "# HELP sandlot_sandboxes Sandboxes by status (terminated: tombstones).\n"
		      "# TYPE sandlot_sandboxes gauge\n");
	for (size_t s = 0; s < sizeof(statuses) / sizeof(statuses[0]); s++) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			k += !strcmp(sandbox_status_name(list[i].status), statuses[s]);
		tb_printf(&b, "sandlot_sandboxes{status=\"%s\"} %zu\n", statuses[s], k);
	}
	tb_printf(&b,
		  "# HELP sandlot_executions_total Executions started through this daemon "
		  "since it started.\n"
		  "# TYPE sandlot_executions_total counter\n"
		  "sandlot_executions_total %llu\n",
		  (unsigned long long)atomic_load(&r->srv->executions_started));
	uint64_t synced;
	size_t pending;
	api_sync_stats(r->srv, &synced, &pending);
	tb_printf(&b,
		  "# HELP sandlot_record_syncs_total Sandbox records made durable after their "
		  "request was answered, since the daemon started.\n"
		  "# TYPE sandlot_record_syncs_total counter\n"
		  "sandlot_record_syncs_total %llu\n"
		  "# HELP sandlot_record_syncs_pending Sandbox records answered for and not yet "
		  "durable.\n"
		  "# TYPE sandlot_record_syncs_pending gauge\n"
		  "sandlot_record_syncs_pending %zu\n",
		  (unsigned long long)synced, pending);
	/* What the daemon holds, free chunks and unreturned arena pages aside: the figure a
	 * leak moves and fragmentation does not (its RSS swings by ±20% with how a burst of
	 * connection threads spread over the arenas; docs/reliability.md). */
	struct mallinfo2 mi = mallinfo2();
	tb_printf(&b,
		  "# HELP sandlot_daemon_heap_bytes Bytes the daemon has allocated and not "
		  "freed.\n"
		  "# TYPE sandlot_daemon_heap_bytes gauge\n"
		  "sandlot_daemon_heap_bytes %zu\n",
		  mi.uordblks + mi.hblkhd);
	textbuf mem = {0}, pids = {0};
	tb_printf(&b, "# HELP sandlot_sandbox_cpu_seconds_total CPU time used by a sandbox.\n"
		      "# TYPE sandlot_sandbox_cpu_seconds_total counter\n");
	tb_printf(&mem, "# HELP sandlot_sandbox_memory_bytes Memory a sandbox uses now.\n"
			"# TYPE sandlot_sandbox_memory_bytes gauge\n");
	tb_printf(&pids, "# HELP sandlot_sandbox_pids Processes in a sandbox.\n"
			 "# TYPE sandlot_sandbox_pids gauge\n");
	for (size_t i = 0; i < n; i++) {
		if (list[i].status != SL_ST_RUNNING && list[i].status != SL_ST_PAUSED)
			continue;
		char cg[64];
		sl_cgusage u;
		sl_err e2 = {0};
		snprintf(cg, sizeof(cg), "sandlot/%s", list[i].id);
		if (cgroup_usage_basic(r->srv->ctx->cg, cg, &u, &e2) < 0)
			continue;
		tb_printf(&b, "sandlot_sandbox_cpu_seconds_total{sandbox=\"%s\"} %.6f\n",
			  list[i].id, u.cpu_usage_ns / 1e9);
		tb_printf(&mem, "sandlot_sandbox_memory_bytes{sandbox=\"%s\"} %llu\n", list[i].id,
			  (unsigned long long)u.memory_bytes);
		tb_printf(&pids, "sandlot_sandbox_pids{sandbox=\"%s\"} %llu\n", list[i].id,
			  (unsigned long long)u.pids_current);
	}
	sandbox_free_list(list, n);
	tb_printf(&b, "%s%s", mem.s ? mem.s : "", pids.s ? pids.s : "");
	bool failed = b.failed || mem.failed || pids.failed;
	free(mem.s);
	free(pids.s);
	if (failed) {
		free(b.s);
		return api_fail(r, SL_INTERNAL, "out of memory writing metrics");
	}
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(b.len, b.s, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(b.s);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	return api_reply(r, 200, resp);
}

