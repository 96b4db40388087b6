/* state.h — durable records: atomic file writes (temp + fsync + rename), flock-based
 * locks, and the paths of a sandbox's record and run dirs. */
#ifndef SANDLOT_STATE_H
#define SANDLOT_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"
#include "err.h"

/* Write data to path so that a crash leaves either the old or the new file. */
int state_write_atomic(const char *path, const char *data, size_t len, sl_err *err);
/* DATA as a new PATH (mode 0600, synced) unless PATH exists: 0 made, 1 another writer's
 * was there first (link() decides: the first wins, everyone reads its). For the keys. */
int state_write_first(const char *path, const void *data, size_t len, sl_err *err);
/* The same, atomic but without the fsyncs, for records a crash may lose. */
int state_write_atomic_nosync(const char *path, const char *data, size_t len, sl_err *err);
/* A sandbox record: atomic like the above (durable: with the fsyncs), rewritten in a
 * spare kept beside it (path.next) and exchanged into place, so a rewrite makes no
 * inode and frees no blocks. Writers of one record must be serialised by the caller
 * (the record dir's state_lock_dir); readers use state_read_record. */
int state_write_record(const char *path, const char *data, size_t len, bool durable, sl_err *err);
/* state_write_record without the fsyncs, durable after a later state_sync(path). Until
 * then a crash may leave the spare's older version under the name (the spare is
 * rewritten in place): only for records whose spare holds a state that reads right after
 * a crash (the daemon's sandbox records: record.c, record_write). */
int state_write_record_soon(const char *path, const char *data, size_t len, sl_err *err);
/* fsync path and its directory: what state_write_record_soon left to do. */
int state_sync(const char *path, sl_err *err);
/* Read a whole (small) file; *out is NUL-terminated, caller frees. */
int state_read_file(const char *path, size_t max, char **out, size_t *len, sl_err *err);
/* The same for a record state_write_record writes: always one whole version of it. */
int state_read_record(const char *path, size_t max, char **out, size_t *len, sl_err *err);
/* Take an exclusive lock on a lock file (created if needed); returns the fd. */
int state_lock(const char *path, sl_err *err);
/* The same lock taken on a directory itself (no lock file to create): SL_NOTFOUND when
 * it is gone. */
int state_lock_dir(const char *path, sl_err *err);
int state_mkdirs(const char *path, mode_t mode, sl_err *err);
/* PATH made as state_mkdirs does, and, when it exists with more permissions than MODE,
 * brought down to MODE (a tree an older version left open to other users). */
int state_private_dir(const char *path, mode_t mode, sl_err *err);
/* The same for an existing directory only: a missing PATH is fine. */
int state_restrict(const char *path, mode_t mode, sl_err *err);

/* The names in DIR that start with PREFIX and end with SUFFIX (either may be ""; a name
 * must be longer than the suffix, and not start with '.'), SUFFIX cut off, in readdir
 * order. A missing DIR lists nothing. state_free_names frees the list. */
int state_list_dir(const char *dir, const char *prefix, const char *suffix, char ***names,
		   size_t *n, sl_err *err);
void state_free_names(char **names, size_t n);

void state_sandbox_dir(const sl_config *cfg, const char *id, char *buf, size_t len);
void state_run_dir(const sl_config *cfg, const char *id, char *buf, size_t len);
/* The API's default unix socket (<run>/sandlot.sock) and its key file (<state>/api.key). */
void state_api_socket_path(const sl_config *cfg, char *buf, size_t len);
void state_api_key_path(const sl_config *cfg, char *buf, size_t len);

#endif
