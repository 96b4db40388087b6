/* coderun_node.c — the native part of executeCode's warm node runner (runtime/code.c's
 * js_runner): a node started ahead of a call cannot take the call's stdin/stdout/stderr
 * and cwd from the runner's socket by itself (no SCM_RIGHTS, no dup2 in node), so this
 * N-API module, loaded with process.dlopen, does what code_runner.py's waiting child
 * does: wait on the socket (or the zygote's end), accept a call, tell the zygote and the
 * client its pid, and make the call's fds 0/1/2 and cwd its own.
 *
 *   take(LS, CTL, GONE) -> [cwd, request]   (request: "ARGC\0ARG\0...K=V\0...")
 *
 * Built -nostdlib: libc's functions bind to the node process's own libc at load, and
 * the few N-API functions to node's. Exits the process where code_runner.py's would. */
#define _GNU_SOURCE
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_callback_info__ *napi_callback_info;
typedef int napi_status;
typedef napi_value (*napi_callback)(napi_env, napi_callback_info);
napi_status napi_create_function(napi_env, const char *, size_t, napi_callback, void *,
				 napi_value *);
napi_status napi_set_named_property(napi_env, napi_value, const char *, napi_value);
napi_status napi_get_cb_info(napi_env, napi_callback_info, size_t *, napi_value *, napi_value *,
			     void **);
napi_status napi_get_value_int32(napi_env, napi_value, int32_t *);
napi_status napi_create_buffer_copy(napi_env, size_t, const void *, void **, napi_value *);
napi_status napi_create_string_utf8(napi_env, const char *, size_t, napi_value *);
napi_status napi_create_array_with_length(napi_env, size_t, napi_value *);
napi_status napi_set_element(napi_env, napi_value, uint32_t, napi_value);

#define REQUEST_MAX (4u << 20)

static int read_full(int fd, void *buf, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t n = read(fd, (char *)buf + off, len - off);
		if (n <= 0)
			return -1;
		off += n;
	}
	return 0;
}

static napi_value take(napi_env env, napi_callback_info info)
{
	size_t argc = 3;
	napi_value args[3];
	int32_t ls, ctl, gone;
	napi_get_cb_info(env, info, &argc, args, NULL, NULL);
	napi_get_value_int32(env, args[0], &ls);
	napi_get_value_int32(env, args[1], &ctl);
	napi_get_value_int32(env, args[2], &gone);
	int conn;
	for (;;) {
		struct pollfd p[2] = {{ls, POLLIN, 0}, {gone, POLLIN, 0}};
		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents)
			_exit(0); /* the zygote is gone */
		conn = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (conn >= 0)
			break;
	}
	/* The zygote first (it forks the next waiter and watches the client), then the
	 * client: as code_runner.py's waiting(). */
	int32_t pid = getpid();
	char ctlbuf[CMSG_SPACE(sizeof(int))];
	memset(ctlbuf, 0, sizeof(ctlbuf));
	struct iovec iov = {&pid, 4};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = ctlbuf,
			   .msg_controllen = sizeof(ctlbuf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &conn, sizeof(int));
	if (sendmsg(ctl, &m, MSG_NOSIGNAL) < 0)
		_exit(255);
	close(ls);
	close(ctl);
	close(gone);
	if (write(conn, &pid, 4) != 4)
		_exit(255);
	/* The request: [u32 length] and the body, with fds 0, 1, 2 and the cwd. */
	char head[4096];
	int fds[4];
	char rctl[CMSG_SPACE(sizeof(fds))];
	memset(rctl, 0, sizeof(rctl));
	struct iovec riov = {head, sizeof(head)};
	struct msghdr r = {
	    .msg_iov = &riov, .msg_iovlen = 1, .msg_control = rctl, .msg_controllen = sizeof(rctl)};
	ssize_t n = recvmsg(conn, &r, MSG_CMSG_CLOEXEC);
	c = CMSG_FIRSTHDR(&r);
	if (n < 4 || !c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(fds)))
		_exit(255);
	memcpy(fds, CMSG_DATA(c), sizeof(fds));
	uint32_t len;
	memcpy(&len, head, 4);
	if (len > REQUEST_MAX)
		_exit(255);
	char *body =
	    mmap(NULL, len + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (body == MAP_FAILED)
		_exit(255);
	size_t got = (size_t)n - 4 > len ? len : (size_t)n - 4;
	memcpy(body, head + 4, got);
	if (read_full(conn, body + got, len - got) < 0)
		_exit(255);
	close(conn);
	for (int i = 0; i < 3; i++)
		if (dup2(fds[i], i) < 0)
			_exit(255);
	if (fchdir(fds[3]) < 0)
		_exit(255);
	for (int i = 0; i < 4; i++)
		if (fds[i] > 2)
			close(fds[i]);
	char cwd[4096];
	if (!getcwd(cwd, sizeof(cwd)))
		cwd[0] = '\0';
	napi_value out, s, b;
	napi_create_array_with_length(env, 2, &out);
	napi_create_string_utf8(env, cwd, strlen(cwd), &s);
	napi_create_buffer_copy(env, len, body, NULL, &b);
	munmap(body, len + 1);
	napi_set_element(env, out, 0, s);
	napi_set_element(env, out, 1, b);
	return out;
}

__attribute__((visibility("default"))) napi_value napi_register_module_v1(napi_env env,
									  napi_value exports)
{
	napi_value f;
	napi_create_function(env, "take", 4, take, NULL, &f);
	napi_set_named_property(env, exports, "take", f);
	return exports;
}
