/* test_peer.c — the owner of a loopback connection's client socket (sock_diag), for
 * IPv4 and IPv6, another uid's socket (as root), a closed client, and --allow-uid lists. */
#include "peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* A listener on the loopback of FAMILY; its address in SA. */
static int listener(int family, struct sockaddr_storage *sa, socklen_t *len)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(sa, 0, sizeof(*sa));
	if (family == AF_INET) {
		struct sockaddr_in *a = (void *)sa;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (void *)sa;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		*len = sizeof(*a);
	}
	if (fd < 0 || bind(fd, (struct sockaddr *)sa, *len) < 0 || listen(fd, 4) < 0 ||
	    getsockname(fd, (struct sockaddr *)sa, len) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void own_uid(int family)
{
	struct sockaddr_storage sa;
	socklen_t len;
	int l = listener(family, &sa, &len);
	if (l < 0) {
		assert_int_equal(family, AF_INET6); /* a host without IPv6 loopback */
		return;
	}
	int c = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&sa, len), 0);
	int a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	assert_true(a >= 0);
	uid_t uid = 12345;
	sl_err err = {0};
	assert_int_equal(peer_uid(a, &uid, &err), 0);
	assert_int_equal(uid, getuid());
	/* A client that closed its end is nobody: not found, never uid 0. */
	close(c);
	usleep(20000);
	assert_int_equal(peer_uid(a, &uid, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	close(a);
	close(l);
}

static void test_own_uid_ipv4(void **state)
{
	own_uid(AF_INET);
}
static void test_own_uid_ipv6(void **state)
{
	own_uid(AF_INET6);
}

/* As root: a child that became uid 65534 connects; its uid is what the lookup says. */
static void test_other_uid(void **state)
{
	if (getuid() != 0)
		skip();
	struct sockaddr_storage sa;
	socklen_t len;
	int l = listener(AF_INET, &sa, &len);
	int sync[2];
	assert_int_equal(pipe(sync), 0);
	pid_t pid = fork();
	if (pid == 0) {
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c < 0 || connect(c, (struct sockaddr *)&sa, len) < 0)
			_exit(3);
		char b;
		_exit(read(sync[0], &b, 1) == 1 ? 0 : 4);
	}
	int a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	assert_true(a >= 0);
	uid_t uid = 0;
	sl_err err = {0};
	int r = peer_uid(a, &uid, &err);
	assert_int_equal(write(sync[1], "x", 1), 1);
	int st;
	waitpid(pid, &st, 0);
	assert_int_equal(r, 0);
	assert_int_equal(uid, 65534);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(a);
	close(l);
	close(sync[0]);
	close(sync[1]);
}

static void test_uids_parse(void **state)
{
	peer_uids set = {0};
	sl_err err = {0};
	assert_true(peer_uid_allowed(&set, 0));
	assert_false(peer_uid_allowed(&set, 1000));
	assert_int_equal(peer_uids_parse("--allow-uid", "1000,1001", &set, &err), 0);
	assert_int_equal(peer_uids_parse("--allow-uid", "1000", &set, &err), 0);
	assert_int_equal(set.n, 2);
	assert_true(peer_uid_allowed(&set, 1001));
	assert_false(peer_uid_allowed(&set, 1002));
	assert_int_equal(peer_uids_parse("--allow-uid", "root", &set, &err), 0);
	assert_true(peer_uid_allowed(&set, 0));
	static const char *const bad[] = {"",  ",", "12x", "-1", "4294967295", "no-such-user-here",
					  NULL};
	for (const char *const *b = bad; *b; b++) {
		sl_err e = {0};
		assert_int_equal(peer_uids_parse("--allow-uid", *b, &set, &e), -1);
		assert_int_equal(e.kind, SL_INVALID);
		assert_non_null(strstr(e.msg, "--allow-uid"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_own_uid_ipv4),
	    cmocka_unit_test(test_own_uid_ipv6),
	    cmocka_unit_test(test_other_uid),
	    cmocka_unit_test(test_uids_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
