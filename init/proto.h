/* proto.h — the control protocol between sandlot (host side) and sandlot-init
 * (pid 1 in a sandbox): SOCK_SEQPACKET messages, fds passed with SCM_RIGHTS. */
#ifndef SANDLOT_PROTO_H
#define SANDLOT_PROTO_H

#include <stdint.h>

#define SL_PROTO_MAGIC 0x534c4e31u /* "SLN1" */
#define SL_PROTO_MAX 131072	   /* largest message either side accepts */
#define SL_INIT_LISTEN_FD 3	   /* the listening socket init inherits */
#define SL_INIT_LOG_FD 4	   /* init's own log (run dir), may be absent */

enum sl_msg_type {
	SL_REQ_SPAWN = 1,  /* start a command; fds: stdin, stdout, stderr[, exit record] */
	SL_REQ_SIGNAL = 2, /* signal a spawned pid (or its process group) */
	SL_REQ_PING = 3,   /* liveness: init answers SL_REP_PONG */
	SL_REQ_RESIZE = 4, /* pty window size of a spawned pid */
	SL_REP_STARTED = 101,
	SL_REP_EXITED = 102,
	SL_REP_ERROR = 103,
	SL_REP_PONG = 104,
};

enum sl_spawn_flags {
	SL_SPAWN_TTY = 1u << 0,	    /* allocate a pty; its master comes back with STARTED */
	SL_SPAWN_HAS_EXIT = 1u << 1, /* a 4th fd: init writes "exit <wstatus>\n" there */
};

struct sl_msg_hdr {
	uint32_t magic;
	uint32_t type;
};

/* SL_REQ_SPAWN: header, then nstr NUL-terminated strings: user, cwd, argv[0..argc),
 * env[0..envc). */
struct sl_req_spawn {
	struct sl_msg_hdr hdr;
	uint32_t flags;
	uint16_t rows, cols;
	uint32_t argc, envc;
};

struct sl_req_signal {
	struct sl_msg_hdr hdr;
	int32_t pid;
	int32_t sig;
	uint32_t group; /* 1: the pid's whole process group */
};

struct sl_req_resize {
	struct sl_msg_hdr hdr;
	int32_t pid;
	uint16_t rows, cols;
};

/* Replies. STARTED: pid is the command's pid inside the sandbox. EXITED: status is
 * the wait(2) status. ERROR: status is an errno; code 127/126 semantics are the
 * client's to map. */
struct sl_rep {
	struct sl_msg_hdr hdr;
	int32_t pid;
	int32_t status;
	char msg[200];
};

#endif
