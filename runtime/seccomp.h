/* seccomp.h — compile an OCI/Docker seccomp profile (JSON) into a BPF program with
 * libseccomp, cache the program on disk keyed by its inputs, and install it. */

/* This file's name shadows libseccomp's <seccomp.h> under -Iruntime, so pull the
 * real one in with include_next, outside the guard: when this header was found
 * through the including file's directory, the include_next finds this file once
 * more via -Iruntime, and that copy's include_next reaches the system header. */
#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Winclude-next-absolute-path"
#endif
#include_next <seccomp.h>
#ifdef __clang__
#pragma clang diagnostic pop
#endif

#ifndef SANDLOT_SECCOMP_H
#define SANDLOT_SECCOMP_H

#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* A classic-BPF seccomp program; insns is malloc'd, free with seccomp_bpf_free. */
typedef struct sl_bpf {
	struct sock_filter *insns;
	unsigned short len;
} sl_bpf;

/* Build a libseccomp filter for the native arch (plus the sub-arches the profile's
 * archMap lists for it) from the profile text JSON[0..len). CAPS is a mask of
 * 1ULL << CAP_xxx that decides includes.caps/excludes.caps; KERNEL_RELEASE
 * ("6.18.44-fc") decides includes.minKernel, NULL means uname(2). Syscall names the
 * installed libseccomp does not know are skipped with one warning in the log.
 * On success *OUT owns a filter the caller releases with seccomp_release. Errors in
 * the profile are SL_INVALID naming the rule ("syscalls[3].args[0].op"). */
int seccomp_profile_compile(const char *json, size_t len, uint64_t caps, const char *kernel_release,
			    scmp_filter_ctx *out, sl_err *err);

/* The same for the seccomp profile of a runtime spec (config.json's linux.seccomp), taken
 * as runc takes it (docs/oci.md): rules that give one syscall different actions are
 * left to libseccomp, which keeps the first unconditional one and lets an unconditional
 * rule replace conditional ones before it (podman's default profile allows setns, then
 * denies it without CAP_SYS_ADMIN: setns stays allowed, as under runc); a rule comparing
 * one argument twice becomes one rule per comparison. What libseccomp refuses is refused.
 * seccomp_profile_compile refuses both, for profiles sandlot's operators write. */
int seccomp_spec_profile_compile(const char *json, size_t len, uint64_t caps,
				 const char *kernel_release, scmp_filter_ctx *out, sl_err *err);

/* The BPF program for the profile at PROFILE_PATH and CAPS on this host. Served from
 * CACHE_DIR/<sha256>.bpf when present (the key covers the profile bytes, caps,
 * arch, kernel release and libseccomp version); otherwise compiled and written
 * there atomically (CACHE_DIR is created 0700; a failed cache write is only
 * logged). On success *OUT owns the program. */
int seccomp_bpf_get(const char *profile_path, const char *cache_dir, uint64_t caps, sl_bpf *out,
		    sl_err *err);
/* The same, compiled by seccomp_spec_profile_compile (cached apart). */
int seccomp_bpf_get_spec(const char *profile_path, const char *cache_dir, uint64_t caps,
			 sl_bpf *out, sl_err *err);

/* The same profile split in two for a process made ahead of its sandbox (a daemon's
 * spare init), so that the costly install of the whole program leaves the create's path:
 * *AHEAD is the profile with the system calls HELD (names, NULL-terminated) allowed as
 * well, installed while the process is made; *LAST, a few instructions, denies just
 * HELD with the profile's default action and allows everything else, installed when
 * the process becomes the sandbox's. The kernel runs both and keeps the stricter
 * verdict, which is the profile's verdict for every call. SL_INVALID when that would not
 * hold: the profile allows by default, or has a rule of its own (for CAPS, this arch and
 * kernel) for one of HELD. Cached in CACHE_DIR as seccomp_bpf_get does. */
int seccomp_bpf_get_split(const char *profile_path, const char *cache_dir, uint64_t caps,
			  const char *const *held, sl_bpf *ahead, sl_bpf *last, sl_err *err);

/* Install BPF on the calling thread. The caller has set PR_SET_NO_NEW_PRIVS (or
 * holds CAP_SYS_ADMIN); after this, the filter applies to the thread and its
 * future children for good. */
int seccomp_bpf_install(const sl_bpf *bpf, sl_err *err);

void seccomp_bpf_free(sl_bpf *bpf);

/* The capabilities every sandbox runs with (the container-default set), as a mask
 * of 1ULL << CAP_xxx: CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, NET_BIND_SERVICE,
 * SETFCAP, SETGID, SETPCAP, SETUID, SYS_CHROOT. */
uint64_t seccomp_default_caps(void);

#endif
