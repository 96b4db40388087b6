/* launch_internal.h — what the launcher's three files share (launch.c: a launch from
 * nothing; launch_spare.c: pid 1 made ahead and its take; launch_stage.c: the staging
 * mount namespace). The child-side calls run in the cloned child, as a vfork: raw
 * syscalls only, nothing that takes a lock (launch.c, clone_shared). */
#ifndef SANDLOT_LAUNCH_INTERNAL_H
#define SANDLOT_LAUNCH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "launch.h"
#include "seccomp.h"

/* A launch's clone stack (launch_stack_get; launch.c says why they are kept). */
#define LAUNCH_STACK (256 * 1024)

/* ASan's shadow of a stack a CLONE_VM child ran on (make SAN=1); nothing otherwise. */
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#define asan_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define asan_unpoison(p, n) ((void)(p), (void)(n))
#endif

/* What container runtimes hide in /proc and /sys (NULL-terminated). */
extern const char *const launch_masked_paths[];
extern const char *const launch_readonly_paths[];

/* The fds a child works with, made by the launcher before the clone. */
struct child_fds {
	int err, userns, lower, root, listen, init, log, client, netns;
	int stage; /* the staging mount namespace (stage_ns_open), or -1 */
	int mounts[SL_MAX_VOLUMES];
};

/* ---- the child's side (launch.c) ---- */

/* Report errno E and a message on ERRFD, then exit: the launcher reads it. */
void __attribute__((noreturn, format(printf, 3, 4)))
child_fail(int errfd, int e, const char *fmt, ...);
/* Join the cgroups, the network namespace, and (SLAVE) make mounts private to us. */
void child_enter(int errfd, const char *const *join, size_t njoin, int netns, bool slave);
/* Close every fd but the child's own. */
void launch_close_inherited(const sl_launch *l, const struct child_fds *f);
/* Keep the lower layer's fd open for overlay (as DIR). */
void child_keep_lower(const struct child_fds *f, const char *dir);
/* /proc, /sys and /dev of a new root at DIRFD (DIR), owned by host uid BASE. */
void launch_kernel_fs(int errfd, int dirfd, const char *dir, const char *empty, uint32_t base,
		      bool new_net, bool proc_mounted, bool sys_shared, bool host_nodes);
/* The nodes, links, /dev/pts and /dev/shm of a /dev tmpfs at DEVFD, owned by host uid BASE
 * (HOST_NODES: in the sandbox's user namespace already, the host's nodes bound on files). */
void launch_make_dev(int errfd, int devfd, uint32_t base, bool host_nodes);
/* MASKED hidden and READONLY made read-only under ROOT (paths relative to it, a leading
 * "/" ignored; missing ones skipped; EMPTY: the empty directory a masked directory gets,
 * NULL: a read-only tmpfs instead;
 * SYS_MASKED: leave sys/ alone). */
void launch_mask_paths(int errfd, const char *root, const char *empty,
		       const char *const *masked, const char *const *readonly, bool sys_masked);
/* Keep only KEEP (1ULL << CAP_x) in the bounding, permitted and effective sets, clear the
 * inheritable and ambient ones, and set no_new_privs. */
void launch_drop_privileges(int errfd, uint64_t keep);
/* mkdir -p of absolute PATH under ROOTFD, no symlink followed: an O_PATH fd of it. */
int launch_make_target(int errfd, int rootfd, const char *path);
/* pivot_root into DIR, the old root detached. */
void launch_pivot_into(int errfd, const char *dir);
/* Drop into the sandbox's user namespace and exec init: the end of every child. */
void __attribute__((noreturn))
child_finish(const sl_launch *l, struct child_fds *f, int rootfd, const sl_bpf *filter);
/* An O_PATH fd of a mount point NAME under DIRFD, never following a symlink. */
int launch_open_mountpoint(int dirfd, const char *name, int is_dir);
/* The overlay of L's upper and work over LOWERDIR, as a detached mount fd (WHY: the
 * kernel's complaint on failure). */
int launch_overlay_mount(const sl_launch *l, const char *lowerdir, char *why, size_t whylen);

/* ---- the launcher's side (launch.c) ---- */

/* A detached clone of DIR's mount, its ids shifted into USERNS's range. */
int launch_idmapped_tree(const char *dir, int userns, bool readonly, sl_err *err);

/* FDS[i], a detached mount for each of L's mounts: a volume id-mapped into USERNS's
 * range, or a copy of a caller's tree fd; 0, or -1 with none left open. */
int launch_volume_fds(const sl_launch *l, int userns, int *fds, sl_err *err);

/* A clone stack (kept for the next launch), and its return. */
char *launch_stack_get(void);
void launch_stack_put(char *s);
/* DIR/NAME made with MODE (an existing one is fine). */
int launch_mkdir_in(const char *dir, const char *name, mode_t mode, sl_err *err);
/* lo up in this thread's network namespace (WHAT names the failing step). */
int launch_netns_lo_up(const char **what);

/* A launch CRIU can dump (launch_hib.c; L->hibernate). */
int launch_hib_sandbox(const sl_launch *l, pid_t *init_pid, sl_err *err);

/* ---- the spare's side (launch_spare.c) ---- */

/* A launch from nothing in a copy of the staging namespace (F->stage): the root fd. */
int child_root_staged(const sl_launch *l, const struct child_fds *f);
/* Whether overlayfs takes a detached mount as a layer (probed once, in DIR). */
bool launch_detached_layers(const char *dir);
/* Whether PID runs the file INIT (an open fd) now. */
bool launch_runs_file(pid_t pid, int init);
/* The take: hand L->spare its fds and wait until it has exec'd init. */
int launch_spare_go(const sl_launch *l, const struct child_fds *f, sl_err *err);

#endif
