/* cleanup.h — scope-bound release of memory, fds, FILEs and DIRs
 * (__attribute__((cleanup))), and steal_* to hand ownership on. */
#ifndef SANDLOT_CLEANUP_H
#define SANDLOT_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

#define _cleanup_free_ __attribute__((cleanup(sl_freep)))
#define _cleanup_close_ __attribute__((cleanup(sl_closep)))
#define _cleanup_fclose_ __attribute__((cleanup(sl_fclosep)))
#define _cleanup_closedir_ __attribute__((cleanup(sl_closedirp)))

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
