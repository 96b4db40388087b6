/* test_state.c — record writes: durable, durable later or not, the new content replaces
 * the old in one step and no temporary file is left beside it; a sandbox record reuses
 * its spare (no new inode per rewrite) and concurrent writers never tear it; state_sync
 * makes a record durable later and says when there is none; a directory lock excludes;
 * state_mkdirs makes every missing level. */
#include "cleanup.h"
#include "fsutil.h"
#include "state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static char base[64];

static int setup(void **state)
{
	strcpy(base, "/tmp/sl_test_state_XXXXXX");
	return mkdtemp(base) ? 0 : -1;
}

static int teardown(void **state)
{
	sl_err err;
	return fs_remove_tree(base, &err);
}

static char *slurp(const char *path)
{
	char *s = NULL;
	sl_err err = {0};
	assert_int_equal(state_read_file(path, 1 << 20, &s, NULL, &err), 0);
	return s;
}

static char *slurp_record(const char *path)
{
	char *s = NULL;
	sl_err err = {0};
	assert_int_equal(state_read_record(path, 1 << 20, &s, NULL, &err), 0);
	return s;
}

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void test_write_replaces(void **state)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/rec.json", base);
	sl_err err = {0};
	/* first write (no file to exchange with), then replacements both ways */
	assert_int_equal(state_write_atomic_nosync(p, "one", 3, &err), 0);
	char *s = slurp(p);
	assert_string_equal(s, "one");
	free(s);
	assert_int_equal(state_write_atomic_nosync(p, "two!", 4, &err), 0);
	s = slurp(p);
	assert_string_equal(s, "two!");
	free(s);
	assert_int_equal(state_write_atomic(p, "three", 5, &err), 0);
	s = slurp(p);
	assert_string_equal(s, "three");
	free(s);
	assert_int_equal(state_write_atomic_nosync(p, "4", 1, &err), 0);
	s = slurp(p);
	assert_string_equal(s, "4");
	free(s);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(entries(base), 1); /* no temporary left */
	/* a write into a missing directory fails and says where */
	char q[160];
	snprintf(q, sizeof(q), "%s/nodir/rec.json", base);
	assert_int_equal(state_write_atomic_nosync(q, "x", 1, &err), -1);
	assert_non_null(strstr(err.msg, "nodir"));
}

static void test_write_soon_then_sync(void **state)
{
	char p[128], q[160];
	snprintf(p, sizeof(p), "%s/rec.json", base);
	sl_err err = {0};
	assert_int_equal(state_write_record_soon(p, "five", 4, &err), 0);
	char *s = slurp(p);
	assert_string_equal(s, "five");
	free(s);
	assert_int_equal(state_write_record(p, "sixty", 5, true, &err), 0);
	assert_int_equal(state_write_record_soon(p, "seven", 5, &err), 0);
	s = slurp(p);
	assert_string_equal(s, "seven"); /* visible before any sync */
	free(s);
	assert_int_equal(entries(base), 2); /* the record and its spare */
	assert_int_equal(state_sync(p, &err), 0);
	s = slurp(p);
	assert_string_equal(s, "seven");
	free(s);
	/* nothing to sync: not found, and it says which */
	snprintf(q, sizeof(q), "%s/gone.json", base);
	assert_int_equal(state_sync(q, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	assert_non_null(strstr(err.msg, "gone.json"));
	/* a symlink where the record was is not followed */
	sl_err_clear(&err);
	assert_int_equal(symlink(p, q), 0);
	assert_int_equal(state_sync(q, &err), -1);
	assert_int_equal(err.kind, SL_INTERNAL);
	snprintf(q, sizeof(q), "%s/nodir/rec.json", base);
	assert_int_equal(state_write_record_soon(q, "x", 1, &err), -1);
	assert_non_null(strstr(err.msg, "nodir"));
}

static ino_t ino_of(const char *path)
{
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	return st.st_ino;
}

static void test_record_reuses_its_spare(void **state)
{
	char p[128], spare[160];
	snprintf(p, sizeof(p), "%s/sandbox.json", base);
	snprintf(spare, sizeof(spare), "%s.next", p);
	sl_err err = {0};
	/* The first write has nothing to exchange with: its spare becomes the record. */
	assert_int_equal(state_write_record(p, "first, the longest", 18, false, &err), 0);
	char *s = slurp(p);
	assert_string_equal(s, "first, the longest");
	free(s);
	assert_int_equal(entries(base), 1);
	/* The second makes the spare that later writes keep. */
	assert_int_equal(state_write_record(p, "second", 6, true, &err), 0);
	assert_int_equal(entries(base), 2);
	ino_t a = ino_of(p), b = ino_of(spare);
	assert_true(a != b);
	const char *next[] = {"3", "fourth, longer than the rest", "5th", ""};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(state_write_record(p, next[i], strlen(next[i]), i % 2, &err), 0);
		s = slurp(p);
		assert_string_equal(s, next[i]); /* shorter after longer: no tail left */
		free(s);
		/* The two inodes swap names; no third is made. */
		ino_t now = ino_of(p);
		assert_true(now == a || now == b);
		assert_int_equal(ino_of(spare), now == a ? b : a);
		assert_int_equal(entries(base), 2);
	}
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* A symlink planted as the spare is not written through. */
	char victim[160];
	snprintf(victim, sizeof(victim), "%s/victim", base);
	assert_int_equal(unlink(spare), 0);
	assert_int_equal(symlink(victim, spare), 0);
	assert_int_equal(state_write_record(p, "x", 1, false, &err), -1);
	assert_int_equal(access(victim, F_OK), -1);
	char q[160];
	snprintf(q, sizeof(q), "%s/nodir/sandbox.json", base);
	assert_int_equal(state_write_record(q, "x", 1, false, &err), -1);
	assert_non_null(strstr(err.msg, "nodir"));
}

/* state_write_record_soon: the spare, exchanged in without the fsyncs, never gets
 * shorter: a shorter record is padded with blanks, so an unsynced one a crash finds is
 * the new version or the whole old one. state_sync makes it durable. */
static void test_record_soon_keeps_the_size(void **state)
{
	char p[128], spare[160];
	snprintf(p, sizeof(p), "%s/sandbox.json", base);
	snprintf(spare, sizeof(spare), "%s.next", p);
	sl_err err = {0};
	assert_int_equal(state_write_record(p, "{\"v\":\"creating, a long one\"}", 28, false, &err),
			 0);
	assert_int_equal(state_write_record(p, "{\"v\":\"pooled\"}", 14, false, &err), 0);
	ino_t spare_ino = ino_of(spare);
	/* The spare holds the 28-byte version: the 15-byte take is padded to 28. */
	assert_int_equal(state_write_record_soon(p, "{\"v\":\"running\"}", 15, &err), 0);
	assert_int_equal(ino_of(p), spare_ino);
	char *s = slurp_record(p);
	assert_string_equal(s, "{\"v\":\"running\"}             ");
	free(s);
	assert_int_equal(state_sync(p, &err), 0);
	/* No shorter than the spare (now the 14-byte "pooled"): written as it is. */
	assert_int_equal(state_write_record_soon(p, "{\"v\":\"running, and longer\"}", 27, &err),
			 0);
	s = slurp_record(p);
	assert_string_equal(s, "{\"v\":\"running, and longer\"}");
	free(s);
	/* A durable write cuts the blanks of the one before. */
	assert_int_equal(state_write_record(p, "{}", 2, true, &err), 0);
	s = slurp_record(p);
	assert_string_equal(s, "{}");
	free(s);
	assert_int_equal(entries(base), 2);
}

/* A record of writer W, round R: "{W R <R+W padding bytes>}" with its own length, so a
 * reader can tell a whole one from a torn one. */
static size_t record_text(char *buf, int w, int r)
{
	int pad = (r * 7 + w * 13) % 300;
	int n = snprintf(buf, 400, "{%d %d %d ", w, r, pad);
	memset(buf + n, 'a' + w, pad);
	buf[n + pad] = '}';
	buf[n + pad + 1] = '\0';
	return n + pad + 1;
}

static bool record_whole(const char *s)
{
	int w, r, pad, n;
	if (sscanf(s, "{%d %d %d %n", &w, &r, &pad, &n) != 3 || w < 0 || w > 9)
		return false;
	if (strlen(s) != (size_t)n + pad + 1 || s[n + pad] != '}')
		return false;
	for (int i = 0; i < pad; i++)
		if (s[n + i] != 'a' + w)
			return false;
	return true;
}

static void test_record_concurrent_writers(void **state)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/sandbox.json", base);
	sl_err err = {0};
	char buf[400];
	size_t len = record_text(buf, 0, 0);
	assert_int_equal(state_write_record(p, buf, len, false, &err), 0);
	enum { WRITERS = 4, ROUNDS = 400 };
	pid_t kids[WRITERS];
	for (int w = 0; w < WRITERS; w++) {
		kids[w] = fork();
		assert_true(kids[w] >= 0);
		if (kids[w] == 0) {
			char b[400];
			sl_err e = {0};
			for (int r = 1; r <= ROUNDS; r++) {
				size_t l = record_text(b, w + 1, r);
				/* writers hold the record dir's lock, as record_save's do */
				int lk = state_lock_dir(base, &e);
				if (lk < 0 || state_write_record(p, b, l, false, &e) < 0) {
					fprintf(stderr, "writer %d: %s\n", w + 1, e.msg);
					_exit(1);
				}
				close(lk);
			}
			_exit(0);
		}
	}
	/* Read while they write: every read is one writer's whole record (a plain read
	 * can catch the spare being rewritten under an fd opened as the record). */
	int reads = 0, alive = WRITERS, seen[WRITERS + 1] = {0};
	while (alive > 0) {
		char *s = slurp_record(p);
		if (!record_whole(s))
			fail_msg("torn record after %d reads: \"%s\"", reads, s);
		/* and never an older version than one already read (a lost update) */
		int sw, sr;
		assert_int_equal(sscanf(s, "{%d %d", &sw, &sr), 2);
		if (sr < seen[sw])
			fail_msg("writer %d's round %d read after its round %d", sw, sr, seen[sw]);
		seen[sw] = sr;
		free(s);
		reads++;
		alive = 0;
		for (int w = 0; w < WRITERS; w++)
			if (kids[w] > 0) {
				int st;
				pid_t r = waitpid(kids[w], &st, WNOHANG);
				if (r == kids[w]) {
					assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
					kids[w] = 0;
				} else
					alive++;
			}
	}
	char *s = slurp(p);
	assert_true(record_whole(s));
	int w, r;
	assert_int_equal(sscanf(s, "{%d %d", &w, &r), 2);
	assert_int_equal(r, ROUNDS); /* the last write of whichever writer ended last */
	free(s);
	assert_int_equal(entries(base), 2);
	print_message("%d reads, all whole\n", reads);
}

/* A reader holding the record's inode keeps it whole: once exchanged away it is the
 * spare, and the write after next waits for the reader before it rewrites it. */
static void test_record_waits_for_readers(void **state)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/sandbox.json", base);
	sl_err err = {0};
	assert_int_equal(state_write_record(p, "zero", 4, false, &err), 0);
	assert_int_equal(state_write_record(p, "one", 3, false, &err), 0);
	/* A reader's hold, as state_read_record takes it. */
	int rd = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(rd >= 0);
	assert_int_equal(flock(rd, LOCK_SH), 0);
	int done[2];
	assert_int_equal(pipe(done), 0);
	pid_t kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) {
		sl_err e = {0};
		close(rd); /* the hold is the parent's (a flock belongs to the open file) */
		close(done[0]);
		/* "two" goes into the spare; "three" then needs the reader's inode */
		if (state_write_record(p, "two", 3, false, &e) < 0 ||
		    state_write_record(p, "three", 5, false, &e) < 0)
			_exit(1);
		_exit(write(done[1], "x", 1) == 1 ? 0 : 1);
	}
	close(done[1]);
	struct pollfd pf = {done[0], POLLIN, 0};
	assert_int_equal(poll(&pf, 1, 300), 0); /* the writer waits */
	char buf[16] = "";
	assert_int_equal(pread(rd, buf, sizeof(buf) - 1, 0), 3);
	assert_string_equal(buf, "one"); /* what the reader opened, whole */
	char *s = slurp_record(p);
	assert_string_equal(s, "two");
	free(s);
	close(rd); /* the writer goes on */
	assert_int_equal(poll(&pf, 1, 5000), 1);
	int st;
	assert_int_equal(waitpid(kid, &st, 0), kid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(done[0]);
	s = slurp_record(p);
	assert_string_equal(s, "three");
	free(s);
}

static void test_lock_dir(void **state)
{
	char d[128];
	snprintf(d, sizeof(d), "%s/sbx", base);
	assert_int_equal(mkdir(d, 0700), 0);
	sl_err err = {0};
	int lk = state_lock_dir(d, &err);
	assert_true(lk >= 0);
	/* Another open of the directory cannot take it while we hold it. */
	int other = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(other >= 0);
	assert_int_equal(flock(other, LOCK_EX | LOCK_NB), -1);
	assert_int_equal(errno, EWOULDBLOCK);
	close(lk);
	assert_int_equal(flock(other, LOCK_EX | LOCK_NB), 0);
	close(other);
	assert_int_equal(entries(d), 0); /* no lock file */
	/* Gone: not found, and it says which. */
	snprintf(d, sizeof(d), "%s/gone", base);
	assert_int_equal(state_lock_dir(d, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	assert_non_null(strstr(err.msg, "gone"));
}

/* A lock taken through _cleanup_unlock_ is free once its scope ends, even while a copy
 * of its fd lives on in a child (a launch's clone copies the fds of every thread): a
 * close alone would leave it held until the child exits. */
static void hold_in_child_then_release(const char *p, pid_t *child, int ready[2])
{
	sl_err err = {0};
	_cleanup_unlock_ int lk = state_lock(p, &err);
	assert_true(lk >= 0);
	assert_int_equal(pipe(ready), 0);
	*child = fork();
	assert_true(*child >= 0);
	if (*child == 0) { /* keeps its copy of LK until the parent closes READY's end */
		char c;
		close(ready[1]);
		while (read(ready[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(ready[0]);
}

static void test_unlock_with_a_copy_alive(void **state)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/lock", base);
	int ready[2];
	pid_t child;
	hold_in_child_then_release(p, &child, ready);
	int other = open(p, O_RDWR | O_CLOEXEC);
	assert_true(other >= 0);
	assert_int_equal(flock(other, LOCK_EX | LOCK_NB), 0);
	close(other);
	close(ready[1]);
	int st;
	assert_int_equal(waitpid(child, &st, 0), child);
}

static void test_mkdirs(void **state)
{
	char p[160];
	snprintf(p, sizeof(p), "%s/a/b/c", base);
	sl_err err = {0};
	assert_int_equal(state_mkdirs(p, 0700, &err), 0);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(state_mkdirs(p, 0700, &err), 0); /* already there */
	snprintf(p, sizeof(p), "%s/a/b/d", base);
	assert_int_equal(state_mkdirs(p, 0700, &err), 0); /* one level missing */
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(entries(base), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_write_replaces, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unlock_with_a_copy_alive, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_soon_then_sync, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_record_reuses_its_spare, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_record_soon_keeps_the_size, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_record_concurrent_writers, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_record_waits_for_readers, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lock_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mkdirs, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
