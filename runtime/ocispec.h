/* ocispec.h — a runtime-spec bundle's config.json (and an exec's process.json) read into
 * plain structs, checked against what sandlot-oci runs: no I/O, fuzzed (fuzz_ocispec). */
#ifndef SANDLOT_OCISPEC_H
#define SANDLOT_OCISPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup.h"
#include "err.h"

#define OCI_MAX_NS	8
#define OCI_MAX_MOUNTS	64
#define OCI_MAX_RLIMITS 16
#define OCI_MAX_HOOKS	16

/* A runtime-spec hook: a host program run as the runtime's user with the container's
 * state on its stdin. args and env NULL-terminated (args empty: argv is just path). */
typedef struct oci_hook {
	char *path;
	char **args, **env;
	int timeout; /* seconds, 0 = none */
} oci_hook;

/* The hooks sandlot-oci runs, in the order runc runs them at create: prestart (the
 * deprecated name) then createRuntime; poststart after `start`, poststop at `delete`. */
enum oci_hook_kind {
	OCI_HOOK_PRESTART,
	OCI_HOOK_CREATE_RUNTIME,
	OCI_HOOK_POSTSTART,
	OCI_HOOK_POSTSTOP,
	OCI_HOOK_KINDS
};

typedef struct oci_hooks {
	oci_hook list[OCI_HOOK_KINDS][OCI_MAX_HOOKS];
	size_t n[OCI_HOOK_KINDS];
} oci_hooks;

enum oci_ns {
	OCI_NS_PID,
	OCI_NS_NET,
	OCI_NS_MNT,
	OCI_NS_IPC,
	OCI_NS_UTS,
	OCI_NS_USER,
	OCI_NS_CGROUP,
	OCI_NS_COUNT
};

typedef struct oci_mount {
	char *dest, *type, *source;
	unsigned long flags;	   /* MS_* from the options */
	unsigned long propagation; /* MS_PRIVATE, MS_SLAVE, ... | MS_REC, or 0 */
	bool bind, recursive;
	char *data; /* the options that are not flags, comma-joined ("" when none) */
} oci_mount;

typedef struct oci_process {
	char **args, **env; /* NULL-terminated */
	char *cwd;
	uint32_t uid, gid;
	uint32_t *gids;
	size_t ngids;
	bool terminal, no_new_privs;
	uint64_t caps; /* the union of bounding, effective, permitted (1ULL << CAP_x) */
	struct {
		int resource;
		uint64_t soft, hard;
	} rlimits[OCI_MAX_RLIMITS];
	size_t nrlimits;
} oci_process;

typedef struct oci_spec {
	char *root_path;
	bool root_readonly;
	char *hostname;
	oci_process proc;
	/* Each namespace the spec names: present, and the path it joins ("" = a new one). */
	bool ns[OCI_NS_COUNT];
	char *ns_path[OCI_NS_COUNT];
	/* uidMappings/gidMappings: only one 65536-wide range from container id 0. */
	bool has_mapping;
	uint32_t map_host;
	oci_mount mounts[OCI_MAX_MOUNTS];
	size_t nmounts;
	char *cgroups_path;
	sl_limits limits;
	char *seccomp_json;	   /* linux.seccomp as text, NULL when none */
	char **masked, **readonly; /* NULL-terminated, maybe empty */
	char **sysctl;		   /* key, value, key, value, ..., NULL */
	char *annotations_json;	   /* "{}" when none */
	bool spec_only;		   /* sandlot.dev/hardening: spec-only */
	char *pod_id;		   /* io.kubernetes.cri.sandbox-id, or NULL */
	char *hooks_json;	   /* "hooks" as text (checked by oci_hooks_parse), or NULL */
} oci_spec;

/* The capabilities a container may ask for: sandlot's set and the three more that
 * containerd's and Docker's default specs list (MKNOD, NET_RAW, AUDIT_WRITE), which it
 * drops silently. Any other is refused. */
uint64_t oci_caps_accepted(void);

/* config.json's text JSON[0..LEN) into *SPEC (free with oci_spec_free). SL_INVALID naming
 * the field on anything malformed; an unknown namespace type, a host namespace (one of
 * pid, network, mount, ipc, uts absent) and a capability beyond oci_caps_accepted are
 * SL_INVALID too, each saying so. */
int oci_spec_parse(const char *json, size_t len, oci_spec *spec, sl_err *err);
void oci_spec_free(oci_spec *spec);

/* An exec's process.json (runtime-spec "process") into *P; free with oci_process_free. */
int oci_process_parse(const char *json, size_t len, oci_process *p, sl_err *err);
void oci_process_free(oci_process *p);

/* A spec's "hooks" object (as text) into *H; free with oci_hooks_free. SL_INVALID naming
 * the hook on a missing or relative path, a bad args/env/timeout, more than OCI_MAX_HOOKS
 * of a kind, and on createContainer/startContainer (run inside the container: refused). */
int oci_hooks_parse(const char *json, size_t len, oci_hooks *h, sl_err *err);
void oci_hooks_free(oci_hooks *h);
extern const char *const oci_hook_names[OCI_HOOK_KINDS];

/* linux.resources (an `update --resources` body) over *LIM: the fields it names. */
int oci_resources_parse(const char *json, size_t len, sl_limits *lim, sl_err *err);

/* The signal a runc user names: "KILL", "SIGKILL" or "9"; -1 when none. */
int oci_signal_parse(const char *s);

#endif
