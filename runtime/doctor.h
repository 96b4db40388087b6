/* doctor.h — `sandlot doctor`: a check of the state and store for what is broken (records
 * that cannot be read, records whose resources are gone, creates and releases a crash
 * cut short) or orphaned (layers, cgroups, run dirs, mounts, half-made snapshots and
 * imports that no record owns), and their repair. Safe beside a live daemon. */
#ifndef SANDLOT_DOCTOR_H
#define SANDLOT_DOCTOR_H

#include <stdbool.h>

#include "ctx.h"
#include "err.h"

/* One thing found: its kind ("record", "layer", "cgroup", "rundir", "mount", "snapshot",
 * "import"), what it is (an id or a path), the problem, and after a repair whether it
 * went (and why not). */
typedef struct sl_finding {
	const char *kind;
	char what[512];
	char problem[384];
	bool repaired;
	char repair_error[256];
} sl_finding;

typedef void (*sl_doctor_report)(void *arg, const sl_finding *f);

/* Check (and with REPAIR, repair) everything, handing each finding to REPORT. Holds
 * <state>/doctor.lock meanwhile (doctor_lock). *FOUND: how many findings; *LEFT: how
 * many are still there (all of them without REPAIR). -1 when it could not check. */
int doctor_run(sl_ctx *ctx, bool repair, sl_doctor_report report, void *arg, int *found,
	       int *left, sl_err *err);

/* The state's doctor lock: one doctor at a time, and none while a daemon collects what
 * its predecessor left at its start (api/pool.c). The fd. */
int doctor_lock(const sl_ctx *ctx, sl_err *err);

#endif
