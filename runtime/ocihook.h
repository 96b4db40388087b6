/* ocihook.h — a runtime-spec bundle's hooks run on the host (runtime-spec config.md,
 * "POSIX-platform Hooks"), as runc runs them. */
#ifndef SANDLOT_OCIHOOK_H
#define SANDLOT_OCIHOOK_H

#include "err.h"
#include "ocispec.h"

/* The hooks of KIND in H in order, in the caller's own pid namespace (also for its later
 * children), each with STATE (the container's state JSON) on its
 * stdin, its args and env (the runtime's environment when it names none), killed at its
 * timeout. The first that fails (exec failed, non-zero exit, killed, timed out) stops the
 * rest: SL_INTERNAL naming it and quoting the start of what it wrote. */
int oci_hooks_run(const oci_hooks *h, enum oci_hook_kind kind, const char *state, sl_err *err);

#endif
