/* conns.h — how many connections each client holds, and in all: the caps of the API
 * listeners, the port relays and the preview proxy, and the head deadline of the API's. */
#ifndef SANDLOT_API_CONNS_H
#define SANDLOT_API_CONNS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Who a connection counts against: a local user (a unix socket's SO_PEERCRED, or the
 * owner of a loopback TCP client's socket, runtime/peer.c), else the remote address. */
typedef struct api_client {
	bool by_uid;
	uid_t uid;
	unsigned char addr[16]; /* IPv6, or IPv4-mapped */
} api_client;

typedef struct api_conn {
	api_client who;
	int fd;
	bool used;
	bool started;	   /* libmicrohttpd knows it (its socket context points here) */
	bool waiting_head; /* no request head yet: the head deadline runs from head_since */
	bool upgraded;	   /* a WebSocket now: no deadline again */
	bool cut;	   /* shut down by the deadline sweep */
	int64_t head_since;
} api_conn;

/* The connections of one listener (or of the relays and the preview proxy together). */
typedef struct api_caps {
	pthread_mutex_t lock;
	const char *what; /* "the TCP listener", in log lines */
	unsigned max, per_client, used;
	api_conn *slot;	       /* max of them */
	unsigned long refused; /* since the last log line about it */
	int64_t refused_logged_ms;
} api_caps;

int api_caps_init(api_caps *c, const char *what, unsigned max, unsigned per_client);
void api_caps_fini(api_caps *c);
/* The same, only when no connection holds a place (true then). */
bool api_caps_fini_idle(api_caps *c);

/* The client of FD, an accepted connection. */
void api_client_of(int fd, api_client *who);
/* "uid 1000", "address 192.0.2.7". */
void api_client_name(const api_client *who, char *buf, size_t len);

/* A place for WHO's connection FD, or NULL when a cap is reached (*client_cap: the
 * client's own, rather than the total). */
api_conn *api_caps_take(api_caps *c, const api_client *who, int fd, bool *client_cap);
/* Give the place back (before FD is closed). */
void api_caps_drop(api_caps *c, api_conn *k);
/* Give it back unless libmicrohttpd took it (after a failed MHD_add_connection). */
void api_caps_forget(api_caps *c, api_conn *k);
/* The place taken for FD that libmicrohttpd now knows, or NULL. */
api_conn *api_caps_start(api_caps *c, int fd);
/* Head deadline: armed (a request may come: from now), or stopped (a head came). */
void api_caps_wait_head(api_caps *c, api_conn *k, bool waiting);
void api_caps_upgraded(api_caps *c, api_conn *k);
/* Shut down the connections that have waited over LIMIT_MS for a request head: their
 * threads see the end and close them. Returns how many. */
unsigned api_caps_cut_slow(api_caps *c, int64_t limit_ms);

/* Refuse WHO's connection FD at once and close it: a 429 RESOURCE_EXHAUSTED in the one
 * error shape when PLAIN (HTTP in clear; TLS and relayed bytes are just closed), never
 * blocking. CLIENT_CAP: which cap (api_caps_take). Logged at most every 10 s. */
void api_caps_refuse(api_caps *c, int fd, const api_client *who, bool client_cap, bool plain);

#endif
