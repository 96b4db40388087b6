/* cleanup.h — scope-bound release of memory, fds, FILEs, DIRs and cJSON trees
 * (__attribute__((cleanup))), and steal_* to hand ownership on. A sandbox record's is
 * _cleanup_sandbox_ (record.h). */
#ifndef SANDLOT_CLEANUP_H
#define SANDLOT_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <cjson/cJSON.h>

static inline void sl_freep(void *p)
{
	free(*(void **)p);
}
static inline void sl_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
static inline void sl_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}
static inline void sl_closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}
static inline void sl_cjson_deletep(cJSON **o)
{
	cJSON_Delete(*o);
}

#define _cleanup_free_ __attribute__((cleanup(sl_freep)))
#define _cleanup_close_ __attribute__((cleanup(sl_closep)))
/* A lock's fd (state_lock), unlocked before it is closed: a close alone leaves the flock
 * held while any copy of the fd lives, and a launch's clone (launch_hib.c) copies every
 * fd the daemon's other threads have open, then waits for this process to attach its
 * network under the same lock. */
static inline void sl_unlockp(int *fd)
{
	if (*fd >= 0) {
		flock(*fd, LOCK_UN);
		close(*fd);
	}
}
#define _cleanup_unlock_ __attribute__((cleanup(sl_unlockp)))
#define _cleanup_fclose_ __attribute__((cleanup(sl_fclosep)))
#define _cleanup_closedir_ __attribute__((cleanup(sl_closedirp)))
#define _cleanup_cjson_ __attribute__((cleanup(sl_cjson_deletep)))

#define steal_ptr(pp)                      \
	({                                 \
		__typeof__(*(pp)) _p = *(pp); \
		*(pp) = NULL;              \
		_p;                        \
	})
#define steal_fd(fdp)            \
	({                       \
		int _fd = *(fdp); \
		*(fdp) = -1;     \
		_fd;             \
	})

#endif
