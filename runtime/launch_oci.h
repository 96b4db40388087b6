/* launch_oci.h — the init and exec'd processes of a runtime-spec container (sandlot-oci),
 * built from launch.c's own steps: namespaces made as host root, the root id-mapped,
 * /dev, masks, pivot_root, then the user namespace, capabilities and seccomp last. */
#ifndef SANDLOT_LAUNCH_OCI_H
#define SANDLOT_LAUNCH_OCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "ocispec.h"
#include "seccomp.h"

typedef struct sl_oci_launch {
	const oci_spec *spec;
	const char *bundle;	 /* a relative root.path is under it */
	const char *dir;	 /* the container's state dir: exec.fifo, rootfs/, empty/ */
	int userns;		 /* the user namespace it enters last, or -1 (none: spec-only) */
	uint32_t uid_base;	 /* host id of root inside (0 without a user namespace) */
	const char *const *join; /* cgroup.procs files (cgroup_join_files) */
	size_t njoin;
	const sl_bpf *filter; /* installed just before the exec; NULL: none */
	uint64_t caps;	      /* what the process keeps (1ULL << CAP_x) */
	const char *console;  /* --console-socket, or NULL */
	int preserve_fds;     /* fds 3..3+N-1 pass to the process */
	/* What a spec's `cgroup` mount shows, read-only: the container's own cgroup, at
	 * CG_NAMES[i] under the mount point (v1: a controller's name; v2: "", the mount point
	 * itself), from the host's CG_DIRS[i]. None (NCG 0): the mount is skipped. */
	const char *const *cg_names, *const *cg_dirs;
	size_t ncg;
} sl_oci_launch;

/* The container's init, stopped before its exec until `start` opens DIR/exec.fifo: its
 * host pid in *PID. Its parent is this process, which should exit soon so it is re-parented
 * to the caller's subreaper (containerd's shim, conmon). On failure nothing is left. */
int launch_oci_init(const sl_oci_launch *l, pid_t *pid, sl_err *err);

/* PROC run in the namespaces, cgroups (L->join) and user namespace of the container whose
 * init is TARGET, with L's filter and caps (L->spec, dir, bundle unused). *PID: its pid. */
int launch_oci_exec(const sl_oci_launch *l, const oci_process *proc, pid_t target, pid_t *pid,
		    sl_err *err);

#endif
