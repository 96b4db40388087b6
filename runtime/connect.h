/* connect.h — a TCP connection to a port inside a sandbox, through its own network
 * namespace (so it works with the sandbox's network off): what the port relays and the
 * preview proxy open (api/ports.c). */
#ifndef SANDLOT_CONNECT_H
#define SANDLOT_CONNECT_H

#include <stdint.h>

#include "sandbox.h"

/* A socket connected to 127.0.0.1:PORT inside SB (running, its init the one the record
 * names), or -1 with errno set. */
int sandbox_connect_port(const sl_sandbox *sb, uint16_t port);

#endif
