/* daemon.c — one HTTP request to the running daemon on its unix socket, for the verbs that
 * talk to it rather than to the runtime (`sandlot mcp`, `sandlot ui`). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w, n -= w;
	}
	return 0;
}

/* Connection: close: the answer ends at EOF. */
int cli_daemon_http(const char *socket_path, const char *method, const char *path,
		    const char *extra_headers, const char *body, size_t len, cli_http_reply *out,
		    sl_err *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memset(out, 0, sizeof(*out));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", socket_path);
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sl_sysfail(err, "socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return sl_fail(err, SL_INTERNAL, errno,
			       "no sandlot daemon on %s (start `sandlot serve`, or pass --socket)",
			       socket_path);
	char head[768];
	int n = snprintf(head, sizeof(head),
			 "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
			 "Content-Type: application/json\r\n"
			 "Accept: application/json, text/event-stream\r\n"
			 "Content-Length: %zu\r\n%s\r\n",
			 method, path, len, extra_headers ? extra_headers : "");
	if (n < 0 || (size_t)n >= sizeof(head))
		return sl_fail(err, SL_INVALID, 0, "request head for %s too long", path);
	if (write_all(fd, head, n) < 0 || write_all(fd, body, len) < 0)
		return sl_sysfail(err, "send to the daemon on %s", socket_path);
	size_t cap = 65536, got = 0;
	for (;;) {
		if (got + 1 >= cap || !out->buf) {
			char *nb = realloc(out->buf, out->buf ? cap *= 2 : cap);
			if (!nb)
				return sl_fail(err, SL_INTERNAL, ENOMEM, "the daemon's answer");
			out->buf = nb;
		}
		ssize_t r = read(fd, out->buf + got, cap - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sl_sysfail(err, "read the daemon's answer");
		if (r == 0)
			break;
		got += r;
	}
	out->buf[got] = '\0';
	char *end = strstr(out->buf, "\r\n\r\n");
	if (sscanf(out->buf, "HTTP/1.%*d %d", &out->status) != 1 || !end)
		return sl_fail(err, SL_INTERNAL, 0, "the daemon on %s gave no HTTP answer",
			       socket_path);
	*end = '\0';
	out->body = end + 4;
	return 0;
}

const char *cli_http_header(const cli_http_reply *r, const char *name)
{
	size_t nl = strlen(name);
	for (const char *h = strstr(r->buf, "\r\n"); h; h = strstr(h + 2, "\r\n"))
		if (!strncasecmp(h + 2, name, nl) && h[2 + nl] == ':') {
			const char *v = h + 3 + nl;
			while (*v == ' ')
				v++;
			return v;
		}
	return NULL;
}
