/* test_proc.c — a process's own start time, kept after the first read: the same as
 * /proc/self/stat says, and read again by a forked child (which started later). */
#include "launch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static void test_self_matches_proc(void **state)
{
	uint64_t t = proc_self_start_time();
	assert_true(t > 0);
	assert_int_equal(t, proc_start_time(getpid()));
	assert_int_equal(proc_self_start_time(), t); /* now from the cache */
}

static void test_child_reads_its_own(void **state)
{
	uint64_t parent = proc_self_start_time();
	/* Start times count clock ticks (1/100 s): let one pass. */
	nanosleep(&(struct timespec){.tv_nsec = 30 * 1000 * 1000}, NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint64_t mine = proc_self_start_time();
		_exit(mine == proc_start_time(getpid()) && mine != parent ? 0 : 1);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_self_matches_proc),
	    cmocka_unit_test(test_child_reads_its_own),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
