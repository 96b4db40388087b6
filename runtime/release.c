/* release.c — the second half of a destroy, off the caller's path: a detached child for
 * the CLI's `run`, a thread with a queue for the daemon (release.h). */
#include "release.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "idring.h"
#include "log.h"
#include "net.h"

/* The finish, logged rather than returned: nobody is waiting for it any more. */
static void release_finish(sl_ctx *ctx, const char *id)
{
	sl_err e = {0};
	if (sandbox_destroy_finish(ctx, id, &e) < 0)
		sl_log(SL_LOG_WARN, "sandbox %s: release: %s", id, e.msg);
}

/* ---- the CLI's detached child ---- */

/* How long the host side of the last network stays up after its release. */
#define NET_LINGER_MS 1000

/* The tombstone names the child as its releaser, so uid range, name and address stay
 * claimed until it is done; `rm ID` meanwhile waits for it on the sandbox's lock; if it
 * dies midway, the next `rm ID` or daemon start finishes the release
 * (sandbox_finish_orphans).
 *
 * The child is made first and waits on a pipe until the tombstone names it. It shares
 * our memory (CLONE_VM): a fork would copy the page tables, which on this host's shadow
 * paging costs more than the release (measured: +0.9 ms per run against -1.4). So the two
 * never run C at once on shared data: until it is told to go, the child only waits on the
 * pipe, and once it is told we only _exit. set_tid_address(NULL) keeps the kernel from
 * zeroing the thread id in the TLS the child goes on using when we exit. */
static struct {
	sl_ctx *ctx;
	char id[32];
	int go[2];
} detached;

static int detached_main(void *arg)
{
	(void)arg;
	char c;
	syscall(SYS_close, detached.go[1]);
	if (syscall(SYS_read, detached.go[0], &c, 1) != 1)
		syscall(SYS_exit, 0); /* the tombstone was not written: nothing is ours */
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3 && nul >= 0; fd++)
		dup2(nul, fd);
	detached.ctx->net_linger = true;
	release_finish(detached.ctx, detached.id);
	if (detached.ctx->net_left_up) {
		/* The next `run --network` of a script or an agent's loop finds the bridge up
		 * instead of waiting for its removal (which holds the kernel's rtnl lock for
		 * tens of ms, and a new network namespace needs that lock). */
		struct timespec ts = {NET_LINGER_MS / 1000, (NET_LINGER_MS % 1000) * 1000000L};
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		sl_err e = {0};
		if (net_down_if_idle(&detached.ctx->cfg, &e) < 0)
			sl_log(SL_LOG_WARN, "network: %s", e.msg);
	}
	_exit(0);
}

int release_detached_exit(sl_ctx *ctx, const char *ref, int code, sl_err *err)
{
	const size_t size = 1 << 20;
	detached.ctx = ctx;
	char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	pid_t pid = -1;
	if (stack != MAP_FAILED && pipe2(detached.go, O_CLOEXEC) == 0) {
		pid = clone(detached_main, stack + size, CLONE_VM | SIGCHLD, NULL);
		/* Out of our process group before we exit, by us (the child's own setsid
		 * could come after our exit): a kill of the group we were started in, or a
		 * terminal's ^C, must not end the release. */
		if (pid > 0)
			setpgid(pid, pid);
		close(detached.go[0]);
		if (pid < 0)
			close(detached.go[1]);
	}
	if (pid < 0) { /* no child: all of it here */
		if (stack != MAP_FAILED)
			munmap(stack, size);
		return sandbox_destroy(ctx, ref, "deleted", err);
	}
	int r = sandbox_destroy_begin_for(ctx, ref, "deleted", pid, detached.id, err);
	if (r == 0) {
		fflush(NULL);
		syscall(SYS_set_tid_address, NULL);
		if (write(detached.go[1], "g", 1) == 1)
			_exit(code);
	}
	close(detached.go[1]); /* the child reads EOF and exits */
	waitpid(pid, NULL, 0);
	munmap(stack, size);
	return r < 0 ? -1 : sandbox_destroy_finish(ctx, detached.id, err);
}

/* ---- the daemon's thread ---- */

struct sl_releaser {
	sl_ctx *ctx;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	bool stopping;
	sl_idring queue;
};

static void *releaser_main(void *arg)
{
	sl_releaser *r = arg;
	pthread_mutex_lock(&r->lock);
	for (;;) {
		while (!r->queue.len && !r->stopping)
			pthread_cond_wait(&r->wake, &r->lock);
		if (!r->queue.len && r->stopping)
			break;
		char id[32];
		idring_pop(&r->queue, id);
		pthread_mutex_unlock(&r->lock);
		release_finish(r->ctx, id);
		pthread_mutex_lock(&r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

sl_releaser *releaser_start(sl_ctx *ctx, sl_err *err)
{
	sl_releaser *r = calloc(1, sizeof(*r));
	if (!r || !idring_init(&r->queue)) {
		free(r);
		sl_fail(err, SL_INTERNAL, ENOMEM, "start the releaser");
		return NULL;
	}
	r->ctx = ctx;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->wake, NULL);
	int e = pthread_create(&r->thread, NULL, releaser_main, r);
	if (e != 0) {
		idring_free(&r->queue);
		pthread_mutex_destroy(&r->lock);
		pthread_cond_destroy(&r->wake);
		free(r);
		sl_fail(err, SL_INTERNAL, e, "start the releaser thread");
		return NULL;
	}
	return r;
}

int release_queue(sl_releaser *r, sl_ctx *ctx, const char *ref, const char *reason,
		  sl_err *err)
{
	if (!r)
		return sandbox_destroy(ctx, ref, reason, err);
	char id[32];
	if (sandbox_destroy_begin(ctx, ref, reason, id, err) < 0)
		return -1;
	pthread_mutex_lock(&r->lock);
	bool queued = idring_push(&r->queue, id, 0);
	if (queued)
		pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->lock);
	if (!queued) /* a flood of deletes: this one waits for its own release */
		release_finish(ctx, id);
	return 0;
}

void releaser_stop(sl_releaser *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stopping = true;
	pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL); /* it drains its queue before it leaves */
	idring_free(&r->queue);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->wake);
	free(r);
}
