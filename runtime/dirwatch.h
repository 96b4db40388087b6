/* dirwatch.h — inotify watches of one directory (an execution's), for waiters and log
 * followers, on instances that are kept and reused instead of closed. */
#ifndef SANDLOT_DIRWATCH_H
#define SANDLOT_DIRWATCH_H

#include <pthread.h>
#include <stdint.h>

/* Closing an inotify instance that ever held a watch waits for the kernel's fsnotify
 * SRCU grace period (fsnotify_destroy_group -> fsnotify_wait_marks_destroyed): 2-15 ms
 * here, on the path of every request that waited on an execution. Removing a watch
 * does not wait (the mark is freed by a kernel worker later), so a finished watch
 * hands its instance back to this cache for the next one. */
#define SL_DIRWATCH_CACHE 8

typedef struct sl_dirwatches {
	pthread_mutex_t lock;
	int fds[SL_DIRWATCH_CACHE]; /* idle instances, no watch on them, nothing queued */
	int n;
} sl_dirwatches;

typedef struct sl_dirwatch {
	int fd; /* non-blocking, close-on-exec; -1 when none */
	int wd;
} sl_dirwatch;

void dirwatch_cache_init(sl_dirwatches *c);
void dirwatch_cache_close(sl_dirwatches *c); /* closes the idle instances (may wait, see above) */

/* Watch DIR for MASK on an instance from C (or a new one). 0, or -1 with errno set
 * (ENOENT/ENOTDIR: no such directory; EMFILE/ENFILE/ENOMEM: no instance to be had),
 * and then W->fd is -1. */
int dirwatch_start(sl_dirwatches *c, sl_dirwatch *w, const char *dir, uint32_t mask);
/* Drop W's watch and any events it queued, and keep its instance in C (closed when C
 * is full). W->fd is -1 after; a W with fd -1 is left alone. */
void dirwatch_end(sl_dirwatches *c, sl_dirwatch *w);
/* Read and discard the events queued on W (it is non-blocking). */
void dirwatch_drain(const sl_dirwatch *w);

#endif
