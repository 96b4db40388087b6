/* hibernate_files.h — the host's files a hibernated sandbox's tasks hold open (its
 * executions' logs and exit records, the host's /dev/null), for CRIU as external files
 * (docs/hibernate.md, "Running executions"). Internal to hibernate.c. */
#ifndef SANDLOT_HIBERNATE_FILES_H
#define SANDLOT_HIBERNATE_FILES_H

#include <stddef.h>
#include <sys/types.h>

#include "ctx.h"
#include "err.h"
#include "record.h"

#define HIB_MAX_FILES 64

typedef char hib_file_arg[128];

/* Every descriptor of INIT's tree whose file is on a mount its mount namespace does not
 * have: "--external=file[MNT:INO]" in ARGS (N of them), and a line per file in
 * DIR/extfiles for the restore. -1 (errno) when it cannot tell, or too many. */
int hib_files_dump(pid_t init, const char *dir, hib_file_arg *args, size_t *n);

/* Those files opened again for the restore: FDS (without O_CLOEXEC in criu only: the
 * caller's run_criu keeps them), "--inherit-fd=fd[N]:file[MNT:INO]" in ARGS. A file
 * gone since (a reboot emptied the run dir) is replaced by an unlinked one in the
 * sandbox's log space, of its size and mode. Each is lent to the sandbox's root for the
 * restore (CRIU reopens it as that uid); hib_files_release gives it back and closes. */
typedef struct hib_files {
	int fd[HIB_MAX_FILES];
	uid_t uid[HIB_MAX_FILES]; /* the owner to give back; (uid_t)-1: not lent */
	size_t n;
} hib_files;

int hib_files_restore(const sl_ctx *ctx, const sl_sandbox *sb, const char *dir, hib_files *f,
		      hib_file_arg *args, sl_err *err);
void hib_files_release(hib_files *f);

#endif
