/* netlab.h — helpers the network end-to-end tests share (test_net.c, test_net_names.c):
 * servers in network namespaces, host state checked around each test, API calls. */
#ifndef SANDLOT_E2E_NETLAB_H
#define SANDLOT_E2E_NETLAB_H

#include <stdbool.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "common.h"

/* LINE by /bin/sh; fails the test unless it exits 0. */
void run_ok(const char *line);
/* Accept forever on LISTEN_FD, answering "BANNER <local addr> from <peer addr>". */
void __attribute__((noreturn)) banner_server(int listen_fd, const char *banner);
int listen_on(const char *addr, int port);
/* A banner server on a host address in a child (killed by the caller). */
pid_t host_server(const char *addr, int port, const char *banner);
void child_kill(pid_t pid);

/* Host state beyond the harness's: the nft ruleset, ip_forward, the lease store. */
char *nft_ruleset(void);
char *ip_forward(void);
int leases_count(void);
/* Those held by sandboxes (not by a daemon's spare networks, "spn_..."). */
int sandbox_leases_count(void);
typedef struct net_state {
	void *snap; /* the harness's */
	char *nft, *fwd;
	int leases;
} net_state;
/* Per test: the harness's leak check, and nft ruleset, ip_forward and leases as before. */
int net_setup(void **state);
int net_teardown(void **state);
#define NET_TEST(fn) cmocka_unit_test_setup_teardown(fn, net_setup, net_teardown)

void rm(const char *id);
/* What a TCP connection from sandbox ID to ADDR:PORT reads ("" when none); ADDR may be
 * a name, resolved in the sandbox. */
char *dial(const char *id, const char *addr, int port);
bool reaches(const char *id, const char *addr, int port, const char *banner);

/* METHOD PATH (with BODY) to D; fails unless the status is WANT; the parsed body. */
cJSON *api(const e2e_daemon *d, const char *method, const char *path, const char *body, long want);
/* A daemon on <root>/api.sock and loopback TCP (EXTRA: more `serve` arguments). */
/* A network-on busybox sandbox made through D (with the allow list ALLOW, a JSON array,
 * when not NULL): its id, its address in ADDR when not NULL. */
char *net_create(const e2e_daemon *d, const char *allow, char *addr, size_t len);
/* DELETE it through D (204). */
void net_delete(const e2e_daemon *d, const char *id);
void daemon_start(e2e_daemon *d);
void daemon_start_with(e2e_daemon *d, const char *const *extra);

#endif
