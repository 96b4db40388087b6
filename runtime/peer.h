/* peer.h — who is on the other end of a loopback TCP connection: the owner (uid) of
 * the client's own socket, found with a NETLINK_SOCK_DIAG lookup of the 4-tuple. */
#ifndef SANDLOT_PEER_H
#define SANDLOT_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

/* The uid owning the client socket of FD, an accepted TCP connection (IPv4 or IPv6)
 * whose client is in this network namespace. SL_NOTFOUND when no such socket is there
 * (the client is gone, or lives in another namespace): callers refuse the connection. */
int peer_uid(int fd, uid_t *uid, sl_err *err);

/* A set of allowed uids: root always, plus those listed. */
#define PEER_MAX_UIDS 32
typedef struct peer_uids {
	uid_t uid[PEER_MAX_UIDS];
	size_t n;
} peer_uids;

bool peer_uid_allowed(const peer_uids *set, uid_t uid);
/* "1000", "1000,1001", or a user name ("alice"); FIELD names the input in messages.
 * Adds to SET (duplicates are kept once). */
int peer_uids_parse(const char *field, const char *text, peer_uids *set, sl_err *err);

#endif
