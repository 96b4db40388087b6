/* proto.h — the control protocol between sandlot (host side) and sandlot-init
 * (pid 1 in a sandbox): SOCK_SEQPACKET messages, fds passed with SCM_RIGHTS. */
#ifndef SANDLOT_PROTO_H
#define SANDLOT_PROTO_H

#include <stdint.h>

#define SL_PROTO_MAGIC	  0x534c4e31u /* "SLN1" */
#define SL_PROTO_MAX	  131072      /* largest message either side accepts */
#define SL_INIT_LISTEN_FD 3	      /* the listening socket init inherits */
#define SL_INIT_LOG_FD	  4	      /* init's own log (run dir), may be absent */
/* A connected client init starts with, may be absent: whoever launched init may have
 * queued requests on its peer (a one-shot's command), served before any accept. */
#define SL_INIT_CLIENT_FD 5
/* A sandbox launched to be hibernated (docs/hibernate.md) has no socket on the host: init's
 * listener is this abstract name in the sandbox's network namespace, which the host reaches
 * by setns (initctl.c), and init accepts only a peer outside its pid namespace. */
#define SL_INIT_ABSTRACT "sandlot-init"
/* In init's environment when its sandbox is a one-shot's (an ephemeral layer): it lives
 * too briefly for the move off exec's stack (init/init.c) to pay its ~40 µs of start. */
#define SL_INIT_BRIEF "SANDLOT_INIT_BRIEF=1"

enum sl_msg_type {
	SL_REQ_SPAWN = 1,     /* start a command; fds: stdin, stdout, stderr (not with TTY),
			       * then [exit record], then [held fd] per the flags */
	SL_REQ_SIGNAL = 2,    /* signal a spawned pid (or its process group) */
	SL_REQ_PING = 3,      /* liveness: init answers SL_REP_PONG */
	SL_REQ_RESIZE = 4,    /* pty window size of a spawned pid */
	SL_REQ_STDIN_EOF = 5, /* close the fd held for a spawned pid (struct sl_req_pid);
			       * PONG, or ERROR ESRCH when init no longer tracks the pid */
	SL_REP_STARTED = 101,
	SL_REP_EXITED = 102,
	SL_REP_ERROR = 103,
	SL_REP_PONG = 104,
};

enum sl_spawn_flags {
	SL_SPAWN_TTY = 1u << 0,	     /* allocate a pty; its master comes back with STARTED */
	SL_SPAWN_HAS_EXIT = 1u << 1, /* an exit-record fd: init writes the exit line there */
	/* A last fd init keeps open until SL_REQ_STDIN_EOF for the pid or the pid's exit:
	 * the write end of a stdin FIFO, so the command sees EOF only when asked. */
	SL_SPAWN_HOLD_FD = 1u << 2,
	/* The connection's last request: init closes it after SL_REP_EXITED for this
	 * command, so the client's own close wakes nobody. */
	SL_SPAWN_LAST = 1u << 3,
};

#define SL_SPAWN_TIMEOUT_MAX (1ull << 40) /* ms, ~35 years: beyond is a malformed request */

/* Most fds a spawn request carries: stdin, stdout, stderr, exit record, held fd. */
#define SL_SPAWN_MAX_FDS 5

/* The exit record init writes (one write, then close) when a spawned command
 * ends: "exit <wait(2) status>\n", or "exit <status> timeout\n" when init killed its
 * process group because timeout_ms ran out. */

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
	/* 0: none. Else init SIGKILLs the command's process group this long after the start
	 * (monotonic clock), whether or not any client is connected. */
	uint64_t timeout_ms;
};

struct sl_req_signal {
	struct sl_msg_hdr hdr;
	int32_t pid;
	int32_t sig;
	uint32_t group; /* 1: the pid's whole process group */
};

struct sl_req_pid {
	struct sl_msg_hdr hdr;
	int32_t pid;
};

struct sl_req_resize {
	struct sl_msg_hdr hdr;
	int32_t pid;
	uint16_t rows, cols;
};

/* Replies. STARTED: pid is the command's pid inside the sandbox. EXITED: status is
 * the wait(2) status. ERROR: status is an errno; code 127/126 semantics are the
 * client's to map. An ERROR to a spawn says in pid who failed: 0..4, the command could
 * not start (the child failed to 0 set up stdio, 1 look up the user, 2 switch to it,
 * 3 change directory, 4 execute); -1, init itself could not take the request
 * (malformed, no pty, fork failed, too many commands). */
struct sl_rep {
	struct sl_msg_hdr hdr;
	int32_t pid;
	int32_t status;
	char msg[200];
};

#endif
