/* events.c — GET /v1/events: the daemon's sandbox state changes as server-sent events,
 * the one live stream the dashboard holds (docs/dashboard.md) instead of polling.
 *
 * Every sandbox record write in this process (create, pause, stop, delete, a deadline, a
 * façade: all go through runtime/record.c) calls ctx->record_changed, which puts the id in
 * a ring and wakes the streams. Each stream reads the ring from where it left off and sends
 * the sandbox as GET /v1/sandboxes/{id} shows it, as its key sees it (another key's
 * sandbox is left out). Every USAGE_MS it also sends the running sandboxes' usage, so the
 * page's charts move without a request. Changes made by another process (the CLI with no
 * daemon) are not seen until that sandbox's next change here. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "http.h"
#include "lookup.h"
#include "owner.h"

#define RING	     1024 /* ids kept; a stream further behind is told to resync */
#define WAKE_MS	     1000 /* how often a stream looks at its client and the clock */
#define USAGE_MS     5000
#define KEEPALIVE_MS 15000

struct api_events {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t seq; /* ids published so far; id n is ring[n % RING] */
	char ring[RING][32];
};

typedef struct ev_stream {
	api_server *srv;
	char owner[SL_OWNER_LEN];
	uint64_t seq; /* the next id this stream sends */
	int conn;     /* the client's socket: a hang-up ends the stream */
	int64_t usage_at, quiet_at;
	char *out; /* text to send, from pos */
	size_t len, pos;
	bool hello;
} ev_stream;

static void record_changed(void *arg, const char *id)
{
	struct api_events *ev = arg;
	pthread_mutex_lock(&ev->mu);
	snprintf(ev->ring[ev->seq % RING], sizeof(ev->ring[0]), "%s", id);
	ev->seq++;
	pthread_cond_broadcast(&ev->cv);
	pthread_mutex_unlock(&ev->mu);
}

int api_events_start(api_server *s, sl_err *err)
{
	struct api_events *ev = calloc(1, sizeof(*ev));
	if (!ev)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "the event stream");
	pthread_mutex_init(&ev->mu, NULL);
	pthread_cond_init(&ev->cv, NULL);
	s->events = ev;
	s->ctx->record_changed_arg = ev;
	s->ctx->record_changed = record_changed;
	return 0;
}

/* After the listeners stopped: no stream is left to read the ring. */
void api_events_stop(api_server *s)
{
	if (!s->events)
		return;
	s->ctx->record_changed = NULL;
	pthread_cond_destroy(&s->events->cv);
	pthread_mutex_destroy(&s->events->mu);
	free(s->events);
	s->events = NULL;
}

/* One event, "event: TYPE\ndata: JSON\n\n", appended to the stream's pending text. */
static void ev_add(ev_stream *st, const char *type, cJSON *data)
{
	char *json = cJSON_PrintUnformatted(data);
	cJSON_Delete(data);
	if (!json)
		return;
	size_t need = strlen(type) + strlen(json) + 32;
	char *n = realloc(st->out, st->len + need);
	if (n) {
		st->out = n;
		st->len += snprintf(n + st->len, need, "event: %s\ndata: %s\n\n", type, json);
	}
	free(json);
}

static void ev_sandbox(ev_stream *st, const char *id, bool detail)
{
	sl_sandbox sb;
	sl_err err = {0};
	if (sandbox_get(st->srv->ctx, id, &sb, &err) < 0)
		return; /* gone, or another key's */
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "sandbox", api_sandbox_json(st->srv, &sb, detail));
	sandbox_free(&sb);
	ev_add(st, detail ? "usage" : "sandbox", o);
}

static void ev_usage(ev_stream *st)
{
	sl_sandbox *list;
	size_t n;
	sl_err err = {0};
	if (sandbox_list_live(st->srv->ctx, &list, &n, &err) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (list[i].status == SL_ST_RUNNING || list[i].status == SL_ST_PAUSED) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddItemToObject(o, "sandbox",
					      api_sandbox_json(st->srv, &list[i], true));
			ev_add(st, "usage", o);
		}
	sandbox_free_list(list, n);
}

static bool client_gone(ev_stream *st)
{
	struct pollfd p = {st->conn, POLLRDHUP, 0};
	return st->conn >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Fill st->out with what is due: the ids published since st->seq (a resync when the
 * ring moved past them), the usage when due, a keep-alive comment after a quiet while.
 * Waits up to WAKE_MS for a change. */
static void ev_collect(ev_stream *st)
{
	struct api_events *ev = st->srv->events;
	char ids[64][32];
	size_t nids = 0;
	bool resync = false;
	pthread_mutex_lock(&ev->mu);
	if (st->seq == ev->seq) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)(WAKE_MS % 1000) * 1000000;
		ts.tv_sec += WAKE_MS / 1000 + ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&ev->cv, &ev->mu, &ts);
	}
	if (ev->seq - st->seq > RING) {
		resync = true;
		st->seq = ev->seq;
	}
	for (; st->seq < ev->seq && nids < 64; st->seq++) {
		const char *id = ev->ring[st->seq % RING];
		bool dup = false; /* a create writes its record a few times */
		for (size_t i = 0; i < nids && !dup; i++)
			dup = !strcmp(ids[i], id);
		if (!dup)
			snprintf(ids[nids++], sizeof(ids[0]), "%s", id);
	}
	pthread_mutex_unlock(&ev->mu);

	owner_act_as(st->owner);
	if (resync)
		ev_add(st, "resync", cJSON_CreateObject());
	for (size_t i = 0; i < nids; i++)
		ev_sandbox(st, ids[i], false);
	int64_t now = sl_mono_ms();
	if (now >= st->usage_at) {
		ev_usage(st);
		st->usage_at = now + USAGE_MS;
	}
	owner_act_as(NULL);
	if (st->len) {
		st->quiet_at = now + KEEPALIVE_MS;
	} else if (now >= st->quiet_at) {
		st->out = strdup(": keep-alive\n\n");
		st->len = st->out ? strlen(st->out) : 0;
		st->quiet_at = now + KEEPALIVE_MS;
	}
}

static ssize_t ev_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	ev_stream *st = cls;
	(void)pos;
	if (!st->hello) {
		st->hello = true;
		int n = snprintf(buf, max, "retry: 2000\nevent: hello\ndata: {}\n\n");
		return n;
	}
	while (st->pos == st->len) {
		free(st->out);
		st->out = NULL;
		st->len = st->pos = 0;
		if (atomic_load(&st->srv->stopping) || client_gone(st))
			return MHD_CONTENT_READER_END_OF_STREAM;
		ev_collect(st);
	}
	size_t n = st->len - st->pos < max ? st->len - st->pos : max;
	memcpy(buf, st->out + st->pos, n);
	st->pos += n;
	return (ssize_t)n;
}

static void ev_free(void *cls)
{
	ev_stream *st = cls;
	free(st->out);
	free(st);
}

enum MHD_Result api_events(api_req *r)
{
	ev_stream *st = calloc(1, sizeof(*st));
	if (!st)
		return api_fail(r, SL_INTERNAL, "the event stream: out of memory");
	st->srv = r->srv;
	memcpy(st->owner, r->owner, sizeof(st->owner));
	pthread_mutex_lock(&r->srv->events->mu);
	st->seq = r->srv->events->seq;
	pthread_mutex_unlock(&r->srv->events->mu);
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	st->conn = ci ? ci->connect_fd : -1;
	st->usage_at = sl_mono_ms(); /* the first usage at once */
	st->quiet_at = sl_mono_ms() + KEEPALIVE_MS;
	struct MHD_Response *resp =
	    MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, ev_read, st, ev_free);
	if (!resp) {
		ev_free(st);
		return api_fail(r, SL_INTERNAL, "the event stream: out of memory");
	}
	MHD_add_response_header(resp, "Content-Type", "text/event-stream");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	api_conn_long_lived(r, false);
	return api_reply(r, 200, resp);
}
