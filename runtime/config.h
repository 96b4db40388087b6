/* config.h — where sandlot keeps things and the defaults a sandbox gets when it
 * asks for nothing; read once from the environment (and later from serve flags). */
#ifndef SANDLOT_CONFIG_H
#define SANDLOT_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "space.h"

typedef struct sl_config {
	char state_dir[PATH_MAX / 4];	    /* SANDLOT_STATE_DIR, default /var/lib/sandlot */
	char run_dir[PATH_MAX / 4];	    /* SANDLOT_RUN_DIR, default /run/sandlot */
	char init_path[PATH_MAX / 4];	    /* SANDLOT_INIT, default: next to the binary */
	char seccomp_profile[PATH_MAX / 4]; /* SANDLOT_SECCOMP_PROFILE */
	char cgroup_root[PATH_MAX / 4];	    /* SANDLOT_CGROUP_ROOT, default /sys/fs/cgroup */
	uint32_t uid_base;		    /* SANDLOT_UID_BASE: first host uid of sandbox ranges */
	/* SANDLOT_CODE_RUNNER=off: executeCode's Python calls start a new interpreter
	 * each, as before the warm runner (docs/executions.md, "Code"; the bench's A/B). */
	bool code_runner_off;
	uint32_t uid_slots;   /* how many 65536-wide ranges may be handed out */
	uint64_t store_bytes; /* SANDLOT_STORE_SIZE: sparse btrfs volume size */
	/* Defaults (Kubernetes quantities) for a sandbox that names no limit. */
	uint64_t def_cpu_millis, def_memory, def_disk, def_pids;
	/* What the operator grants (docs/storage.md, "Disk the host can give"):
	 * SANDLOT_MAX_DISK, the most a sandbox may ask for its disk (default: the store's
	 * size); SANDLOT_MIN_FREE, the free space kept on the state filesystem and in the
	 * store, below which creates and imports fail (default 1Gi; "5%" or "0" too);
	 * SANDLOT_MAX_IMPORTS, the image imports a daemon runs at once (default 2).
	 * `sandlot serve --max-disk/--min-free/--max-imports` set them. */
	uint64_t max_disk;
	sl_space_floor min_free;
	uint32_t max_imports;
	/* SANDLOT_READY_TIMEOUT (seconds, default 300, E2B's): how long an image's ready
	 * command may take to succeed, at its build and at each create (startcmd.h). */
	uint64_t ready_timeout_ms;
	/* SANDLOT_TOMBSTONES_MAX: the most tombstones kept (the newest; each also goes
	 * after 24 h). */
	uint64_t tombstones_max;
	/* Package sources for installs at create ("": the image's and registries' own):
	 * SANDLOT_APT_MIRROR, SANDLOT_PIP_INDEX, SANDLOT_PIP_WHEELS, SANDLOT_NPM_REGISTRY;
	 * `sandlot serve --apt-mirror/--pip-index/--pip-wheels/--npm-registry` set them. */
	char apt_mirror[1024], pip_index[1024], pip_wheels[PATH_MAX / 4], npm_registry[1024];
	/* Image pulls (docs/images.md, "Pulling"): SANDLOT_REGISTRY_MIRROR (for docker.io),
	 * SANDLOT_INSECURE_REGISTRIES (comma-separated host[:port]s allowed plain http),
	 * SANDLOT_REGISTRY_AUTH (docker's config.json; "": <state>/auth.json); `image pull`
	 * and `serve` take --registry-mirror, --insecure-registry and --auth-file. */
	char registry_mirror[1024], insecure_registries[1024], registry_auth[PATH_MAX / 4];
	/* Sandbox networking (docs/network.md): the bridge (also our nftables table's
	 * name), its subnet ("" picks a free one), and the DNS servers given to sandboxes
	 * ("" copies the host's non-loopback ones). */
	char net_bridge[16]; /* SANDLOT_NET_BRIDGE, default sandlot0 */
	char net_subnet[32]; /* SANDLOT_NET_SUBNET */
	char net_dns[128];   /* SANDLOT_NET_DNS: comma-separated addresses */
	/* SANDLOT_NET_ALLOW_PRIVATE (`serve --allow-private`): private ranges opened to
	 * every sandbox (netaddr.h, net_private_list_parse), comma-separated. */
	char net_allow_private[1024];
	/* Set by `sandlot serve` once its resolver listens on the gateway (api/resolver.c):
	 * sandboxes then resolve through it and may have domain rules (netname.h). */
	bool net_resolver;
} sl_config;

int config_load(sl_config *cfg, sl_err *err);

#endif
