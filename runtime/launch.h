/* launch.h — starting a sandbox's pid 1: namespaces, the id-mapped image layer under
 * an overlay, pivot_root, /proc /sys /dev, capabilities, seccomp, then sandlot-init. */
#ifndef SANDLOT_LAUNCH_H
#define SANDLOT_LAUNCH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "seccomp.h"

#define SL_MAX_VOLUMES 16

/* A directory mounted into the sandbox, id-mapped into its uid range (so a volume's
 * files keep one canonical ownership whichever sandbox writes them). */
typedef struct sl_mount {
	const char *source; /* host directory; NULL: TREE_FD */
	const char *target; /* absolute path inside */
	bool readonly;
	/* With no source: a detached mount made and filled by the caller, its files owned
	 * by host ids of the sandbox's range already (a tmpfs of secret files): moved in
	 * as it is, not id-mapped. The caller keeps and closes it. */
	int tree_fd;
} sl_mount;

typedef struct sl_launch_spare sl_launch_spare;

typedef struct sl_launch {
	const char *id;
	const char *hostname;
	const char *image_layer; /* read-only rootfs dir, owned by host ids 0..65535 */
	const char *upper, *work; /* the sandbox's writable layer (btrfs subvolume) */
	/* The layer dies with the sandbox (ephemeral): overlay's "volatile" skips the
	 * sync of the whole store filesystem that unmounting it otherwise costs. */
	bool volatile_upper;
	const char *run_dir;	  /* <run>/sandboxes/<id>: rootfs/, lower/, empty/, init.sock */
	/* <run>/stage: the staging mount namespace a launch from nothing enters a copy of
	 * (stage_ns_open). NULL: it copies the launcher's, as before. */
	const char *stage_dir;
	const char *init_path;	  /* the static sandlot-init binary */
	uint32_t uid_base;	  /* host uid/gid of root inside; range is 65536 wide */
	const sl_bpf *seccomp;
	const sl_mount *mounts;
	size_t nmounts;
	/* Written into the rootfs's /etc (owned by the sandbox's root) when not NULL:
	 * a sandbox with a network gets its own hosts and resolv.conf. */
	const char *etc_hosts, *etc_resolv;
	/* The cgroup.procs files of the sandbox's cgroups, made beforehand: the child
	 * writes itself into them, and the launch is a vfork sharing our memory (no
	 * page-table copy, no copy-on-write faults, which in a multi-threaded daemon also
	 * cost a TLB shootdown on every CPU). */
	const char *const *join;
	size_t njoin;
	/* A network namespace made and set up beforehand (launch_new_netns, net_attach):
	 * the child enters it instead of making an empty one. NULL: a new, empty one. */
	const int *netns;
	/* It is prepared already (launch_new_netns): the child leaves it alone. */
	bool netns_ready;
	/* A network of its own (veth): a sysfs of its own, which shows its devices, not the
	 * staging namespace's shared one. */
	bool network;
	/* A launch CRIU can dump (launch_hib.c, docs/hibernate.md): the user namespace made
	 * first and owning the others, pivot_root, no staging namespace, no spare, no host
	 * fd in init; its control socket an abstract one in its network namespace
	 * (SL_INIT_ABSTRACT), reached through <run_dir>/init.ns. Its network namespace is
	 * the clone's own (NETNS must be NULL): NET_SETUP, when set, is called with it
	 * (an fd) and NET_ARG after the child's maps are written and before it goes on, to
	 * give it its network (the veth, net_attach). */
	bool hibernate;
	int (*net_setup)(void *arg, int netns, sl_err *err);
	void *net_arg;
	/* A connected control socket init takes as its first client (SL_INIT_CLIENT_FD):
	 * requests queued on its peer before the launch are served as soon as init
	 * starts, with no connect. NULL: none. */
	const int *client;
	/* "SANDLOT_DEFAULT_USER=<user>" for init's environment, or NULL: the user init
	 * looks up while it waits for its first command (init/init.c, warm_up). */
	const char *default_user_env;
	/* A pid 1 made ahead (launch_spare_make) to become this sandbox's init, its dir
	 * renamed to run_dir and its cgroups to the sandbox's: it takes no volumes and no
	 * join list; a network (netns, prepared: netns_ready) it enters at the take, with a
	 * sysfs of its own. NULL: a new one is cloned. Consumed either way (exec'd into
	 * init, or dropped). */
	sl_launch_spare *spare;
} sl_launch;

/* A daemon's sandbox init made ahead: a process in new mount, pid, uts, ipc and network
 * namespaces (lo up), in the cgroups of JOIN, with /proc, /sys (masked as a sandbox's)
 * and /dev mounted in DIR, waiting for what no two sandboxes share: its uid range,
 * image layer, writable layer, socket and seccomp filter. What a launch does before its
 * root exists, made off the create's path (docs/bench.md, session 20). Its address must
 * not change while it lives: its child reads it. */
struct sl_launch_spare {
	char dir[PATH_MAX];	/* the run dir it becomes: <run>/sandboxes/.spare-... */
	char stage_dir[PATH_MAX]; /* <run>/stage (sl_launch.stage_dir), or "" */
	int stage;		  /* the staging namespace while it is made, else -1 */
	const char *join[8];	/* cgroup.procs files (cgroup_join_files), and their text */
	size_t njoin;
	char joinbuf[PATH_MAX];
	char cgroup[128];	/* the cgroups' name, for the take's rename */
	pid_t pid;
	int sock;		/* ours; the child's end closes with its exec */
	int child_sock;
	char *stack;
	const sl_launch *l;	/* the take's, set before the child is woken */
	/* The seccomp profile split at launch_take_calls (seccomp_bpf_get_split), or both
	 * NULL: the take then installs the launch's whole filter (l->seccomp). */
	const sl_bpf *seccomp_ahead, *seccomp_last;
};

/* The system calls a spare's take makes that a sandbox's profile may deny (Docker's
 * allows them only with CAP_SYS_ADMIN), NULL-terminated: a spare installs the profile
 * with these allowed while it is made, and its take a filter denying just these. */
extern const char *const launch_take_calls[];

/* Start one (dir, stage_dir, join, njoin, cgroup set by the caller); 0, or -1 with nothing
 * left running. */
int launch_spare_make(sl_launch_spare *sp, sl_err *err);
/* End it (SIGKILL, reaped): what it made in its dir and cgroups is the caller's. */
void launch_spare_drop(sl_launch_spare *sp);

/* A new network namespace, held by the returned fd (-1 on failure), with lo up and
 * the sysctls a sandbox's gets (launch.c, netns_prepare): all a sandbox with the network
 * off has. Made on this thread, which goes back to its own at once. A daemon makes
 * them ahead (sandbox_spares_fill): that takes ~0.5 ms, and any wait on the kernel's
 * rtnl lock, off a create. */
int launch_new_netns(sl_err *err);

/* The staging mount namespace of DIR (<run>/stage), made on first use and kept, bound on
 * DIR/ns: an fd, or -1 when there is none (this kernel's overlayfs takes no detached
 * layer, or it could not be made). Its tree is DIR/root alone, read-only: empty
 * directories proc, sys, dev, newroot, lower and empty. */
int stage_ns_open(const char *dir);

/* A user namespace mapping 0..65535 to BASE.., held by the returned fd (-1 on failure). */
int launch_userns_open(uint32_t base, sl_err *err);

/* Starts init; on success *init_pid is its host pid and it is listening on
 * <run_dir>/init.sock. On failure nothing it made is left running or mounted. */
int launch_sandbox(const sl_launch *l, pid_t *init_pid, sl_err *err);

/* <run_dir>/init.ns: "PID STARTTIME" of a sandbox's init launched to hibernate (or
 * restored), which the host's side of its control socket reads (initctl.c). */
int launch_hib_record(const char *run_dir, pid_t pid, sl_err *err);

/* Start time of a pid (field 22 of /proc/pid/stat), 0 if it is gone. */
uint64_t proc_start_time(pid_t pid);

/* The same for this process: read once per pid (a fork reads its own again). */
uint64_t proc_self_start_time(void);

#endif
