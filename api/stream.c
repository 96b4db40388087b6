/* stream.c — an execution's stdout/stderr as a chunked HTTP body read straight from its
 * log file: what is there now, or with ?follow=1 live until the command ends. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "state.h"
#include "http.h"

#define BLOCK	   (64 * 1024)
#define RECHECK_MS 250

typedef struct log_stream {
	api_server *srv;
	char sandbox_id[32], exec_id[32];
	int fd;	  /* the log, only ever appended to */
	sl_dirwatch ino; /* on the execution's directory; fd -1: we poll */
	int conn; /* the client's socket: a hang-up ends a follow */
	bool follow, ended;
} log_stream;

static void stream_free(void *cls)
{
	log_stream *ls = cls;
	if (ls->fd >= 0)
		close(ls->fd);
	exec_watch_end(ls->srv->ctx, &ls->ino);
	free(ls);
}

/* Wait until something in the execution's directory changes, a recheck is due, or the
 * client hangs up (-1). */
static int wait_change(log_stream *ls)
{
	struct pollfd p[2] = {{ls->conn, POLLRDHUP, 0}, {ls->ino.fd, POLLIN, 0}};
	int n = poll(p, ls->ino.fd >= 0 ? 2 : 1, ls->ino.fd >= 0 ? RECHECK_MS : 50);
	if (n > 0 && (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR)))
		return -1;
	if (n > 0 && (p[1].revents & POLLIN))
		dirwatch_drain(&ls->ino);
	return 0;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	log_stream *ls = cls;
	for (;;) {
		ssize_t n = pread(ls->fd, buf, max, (off_t)pos);
		if (n > 0)
			return n;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (!ls->follow || ls->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (atomic_load(&ls->srv->stopping))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		sl_exec e;
		sl_err err = {0};
		if (exec_get(ls->srv->ctx, ls->sandbox_id, ls->exec_id, &e, &err) < 0)
			return MHD_CONTENT_READER_END_OF_STREAM; /* destroyed meanwhile */
		/* Ended: one more read takes what it wrote before its exit. */
		ls->ended = e.status != SL_EXEC_RUNNING;
		exec_free(&e);
		if (!ls->ended && wait_change(ls) < 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
}

struct MHD_Response *api_exec_stream_response(api_req *r, const char *sandbox_id,
					      const char *exec_id, const char *stream, bool follow,
					      sl_err *err)
{
	log_stream *ls = calloc(1, sizeof(*ls));
	if (!ls) {
		sl_fail(err, SL_INTERNAL, ENOMEM, "stream %s", stream);
		return NULL;
	}
	ls->srv = r->srv;
	ls->fd = ls->ino.fd = -1;
	ls->follow = follow;
	snprintf(ls->sandbox_id, sizeof(ls->sandbox_id), "%s", sandbox_id);
	snprintf(ls->exec_id, sizeof(ls->exec_id), "%s", exec_id);
	if (exec_open_log(r->srv->ctx, ls->sandbox_id, ls->exec_id, stream, &ls->fd, err) < 0) {
		stream_free(ls);
		return NULL;
	}
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	ls->conn = ci ? ci->connect_fd : -1;
	if (follow)
		exec_watch(r->srv->ctx, ls->sandbox_id, ls->exec_id,
			   IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_ATTRIB,
			   &ls->ino);
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, BLOCK,
								      stream_read, ls, stream_free);
	if (!resp) {
		stream_free(ls);
		sl_fail(err, SL_INTERNAL, ENOMEM, "stream %s", stream);
		return NULL;
	}
	MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	if (follow)
		api_conn_long_lived(r, false);
	return resp;
}

static enum MHD_Result serve_log(api_req *r, const char *stream)
{
	sl_err err = {0};
	bool follow;
	sl_sandbox sb;
	if (api_query_bool(r, "follow", false, &follow, &err) < 0 ||
	    api_sandbox_for_call(r, &sb, &err) < 0)
		return api_reply_error(r, &err);
	struct MHD_Response *resp =
	    api_exec_stream_response(r, sb.id, r->param[1], stream, follow, &err);
	sandbox_free(&sb);
	if (!resp)
		return api_reply_error(r, &err);
	return api_reply(r, 200, resp);
}

enum MHD_Result api_exec_stdout(api_req *r)
{
	return serve_log(r, "stdout");
}

enum MHD_Result api_exec_stderr(api_req *r)
{
	return serve_log(r, "stderr");
}
