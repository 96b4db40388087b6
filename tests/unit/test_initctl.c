/* test_initctl.c — the host side of init's protocol reading replies on a real
 * SOCK_SEQPACKET pair: a passed fd arrives, a reset connection is "the sandbox
 * stopped", and a failed read closes none of our fds (a failed recvmsg leaves the
 * control buffer as it was, with an earlier reply's fd numbers in it). */
#include "initctl.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

static void send_rep(int fd, uint16_t type, int32_t pid, int passfd)
{
	struct sl_rep rep = {.hdr = {.magic = SL_PROTO_MAGIC, .type = type}, .pid = pid};
	assert_int_equal(
	    initctl_send(fd, &rep, sizeof(rep), passfd >= 0 ? &passfd : NULL, passfd >= 0 ? 1 : 0),
	    0);
}

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* One call site for every read: each lands in the same stack frame, as a daemon's
 * successive reads do. */
static int __attribute__((noinline)) recv_one(int fd, struct sl_rep *rep, int *passed, sl_err *err)
{
	return initctl_recv(fd, rep, passed, 2000, err);
}

/* Two reads back to back from one frame: the second's control buffer is the very
 * stack the first filled with a passed fd. */
static void __attribute__((noinline))
recv_two(int a, int b, struct sl_rep *rep, int *passed_a, int *passed_b, int *rb, sl_err *err)
{
	assert_int_equal(initctl_recv(a, rep, passed_a, 2000, err), 0);
	*rb = initctl_recv(b, rep, passed_b, 2000, err);
}

static void test_passed_fd_then_reset(void **state)
{
	int a[2], b[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, a), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, b), 0);
	int payload = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(payload >= 0);
	send_rep(a[1], SL_REP_STARTED, 42, payload);
	close(payload);
	/* b's peer closes with our message unread in its queue: our read on b fails with
	 * ECONNRESET, the way init's does when a client leaves before reading. */
	send_rep(b[0], SL_REP_PONG, 1, -1);
	close(b[1]);

	struct sl_rep rep;
	int passed = -1, passed_b = -1, rb = 0;
	sl_err err = {0};
	recv_two(a[0], b[0], &rep, &passed, &passed_b, &rb, &err);
	assert_true(passed >= 0);
	assert_int_equal(rb, -1);
	assert_int_equal(err.kind, SL_CONFLICT);
	assert_non_null(strstr(err.msg, "stopped"));
	assert_int_equal(passed_b, -1);
	/* The fd the first reply passed is still ours, open. */
	assert_true(fd_open(passed));
	assert_true(fd_open(a[0]) && fd_open(b[0]));
	close(passed);
	close(a[0]);
	close(a[1]);
	close(b[0]);
}

static void test_orderly_close_and_timeout(void **state)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	struct sl_rep rep;
	int passed = -1;
	sl_err err = {0};
	assert_int_equal(initctl_recv(sv[0], &rep, &passed, 10, &err), 1);
	close(sv[1]);
	assert_int_equal(recv_one(sv[0], &rep, &passed, &err), -1);
	assert_int_equal(err.kind, SL_CONFLICT);
	close(sv[0]);
}

static void test_malformed_reply(void **state)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	struct sl_rep bad = {.hdr = {.magic = 0x12345678, .type = SL_REP_PONG}};
	assert_int_equal(send(sv[1], &bad, sizeof(bad), 0), (ssize_t)sizeof(bad));
	assert_int_equal(send(sv[1], "short", 5, 0), 5);
	struct sl_rep rep;
	int passed = -1;
	sl_err err = {0};
	assert_int_equal(recv_one(sv[0], &rep, &passed, &err), -1);
	assert_int_equal(err.kind, SL_INTERNAL);
	assert_int_equal(recv_one(sv[0], &rep, &passed, &err), -1);
	assert_int_equal(err.kind, SL_INTERNAL);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_passed_fd_then_reset),
	    cmocka_unit_test(test_orderly_close_and_timeout),
	    cmocka_unit_test(test_malformed_reply),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
