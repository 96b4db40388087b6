/* dirwatch.c — inotify watches of one directory on reused instances (dirwatch.h says why:
 * an instance's close waits for an SRCU grace period, a watch's removal does not). */
#include <errno.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "dirwatch.h"

void dirwatch_cache_init(sl_dirwatches *c)
{
	pthread_mutex_init(&c->lock, NULL);
	c->n = 0;
}

void dirwatch_cache_close(sl_dirwatches *c)
{
	pthread_mutex_lock(&c->lock);
	while (c->n > 0)
		close(c->fds[--c->n]);
	pthread_mutex_unlock(&c->lock);
}

void dirwatch_drain(const sl_dirwatch *w)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	if (w->fd < 0)
		return;
	while (read(w->fd, buf, sizeof(buf)) > 0)
		;
}

int dirwatch_start(sl_dirwatches *c, sl_dirwatch *w, const char *dir, uint32_t mask)
{
	w->fd = w->wd = -1;
	pthread_mutex_lock(&c->lock);
	if (c->n > 0)
		w->fd = c->fds[--c->n];
	pthread_mutex_unlock(&c->lock);
	if (w->fd < 0)
		w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0)
		return -1;
	w->wd = inotify_add_watch(w->fd, dir, mask);
	if (w->wd < 0) {
		int e = errno;
		dirwatch_end(c, w); /* the instance holds no watch: back to the cache */
		errno = e;
		return -1;
	}
	return 0;
}

void dirwatch_end(sl_dirwatches *c, sl_dirwatch *w)
{
	if (w->fd < 0)
		return;
	/* EINVAL when the kernel already dropped it (the directory was removed). Either
	 * way an IN_IGNORED is queued by now, and no event can follow it. */
	if (w->wd >= 0)
		inotify_rm_watch(w->fd, w->wd);
	dirwatch_drain(w);
	pthread_mutex_lock(&c->lock);
	if (c->n < SL_DIRWATCH_CACHE) {
		c->fds[c->n++] = w->fd;
		w->fd = -1;
	}
	pthread_mutex_unlock(&c->lock);
	if (w->fd >= 0)
		close(w->fd);
	w->fd = w->wd = -1;
}
