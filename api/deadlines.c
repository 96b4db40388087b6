/* deadlines.c — the daemon's timers: a sandbox past its lifetime is destroyed (or paused,
 * hibernated or stopped, as its onLifetime says), one idle for its idle timeout (no API
 * call, no running command) is stopped, or destroyed when ephemeral (or as its onIdle
 * says); a stopped one with a stop
 * policy is deleted or archived in time. Deadlines live in files (the record's expiry,
 * the activity file's mtime), so a daemon that was down when one passed acts on it at
 * start. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "park.h"
#include "rundir.h"
#include "state.h"
#include "http.h"


void api_touch(api_server *s, const char *ref)
{
	rundir_touch(&s->ctx->cfg, ref);
}

/* The last sign of life: creation, an API call, a command starting or ending. The
 * executions are read only when creation and the API say nothing since SINCE: this runs
 * every second for every sandbox with an idle timeout, and a sandbox may have run
 * thousands of commands. */
static int64_t last_activity(api_server *s, const sl_deadline *sb, int64_t since, bool *running)
{
	int64_t last = sb->created_ms, touched = rundir_activity_ms(&s->ctx->cfg, sb->id);
	last = touched > last ? touched : last;
	*running = false;
	if (last > since) /* not idle, whatever the executions say */
		return last;
	sl_exec *list;
	size_t n;
	sl_err err = { 0 };
	if (exec_list(s->ctx, sb->id, &list, &n, &err) == 0) {
		for (size_t i = 0; i < n; i++) {
			if (list[i].status == SL_EXEC_RUNNING)
				*running = true;
			int64_t t = list[i].finished_ms ? list[i].finished_ms : list[i].started_ms;
			last = t > last ? t : last;
		}
		exec_free_list(list, n);
	}
	return last;
}

/* Tombstones also go when they are 24 h old: the sweep looks for those every few
 * minutes, and at the daemon's first sweep (releases collect by count, not age). */
#define TOMBSTONES_SWEEP_MS (5 * 60 * 1000)

/* A stopped sandbox with a stop policy (Daytona's intervals): deleted once stopped for
 * auto_delete_min (0: at once), else archived once stopped for auto_archive_min (0: the
 * most, 30 days). True when it acted. */
#define ARCHIVE_MAX_MIN (30 * 24 * 60)
static bool enforce_stop_policy(api_server *s, const sl_deadline *sb, int64_t now)
{
	if (!sb->stop_policy || sb->status != SL_ST_STOPPED || !sb->stopped_ms)
		return false;
	int64_t stopped = now - sb->stopped_ms;
	sl_err e = { 0 };
	if (sb->auto_delete_min >= 0 && stopped >= sb->auto_delete_min * 60000) {
		sl_log(SL_LOG_INFO, "sandbox %s: stopped for %lld min: auto-delete", sb->id,
		       (long long)(stopped / 60000));
		if (api_destroy(s, sb->id, "auto-delete interval", &e) < 0)
			sl_log(SL_LOG_WARN, "sandbox %s: %s", sb->id, e.msg);
		return true;
	}
	int64_t arch = sb->auto_archive_min ? sb->auto_archive_min : ARCHIVE_MAX_MIN;
	if (!sb->archived && stopped >= arch * 60000) {
		sl_log(SL_LOG_INFO, "sandbox %s: stopped for %lld min: archived", sb->id,
		       (long long)(stopped / 60000));
		if (sandbox_archive(s->ctx, sb->id, NULL, &e) < 0)
			sl_log(SL_LOG_WARN, "sandbox %s: %s", sb->id, e.msg);
		return true;
	}
	return false;
}

/* The lifetime has passed: destroyed, or (onLifetime) paused, hibernated (else paused:
 * sandbox_park) or stopped with the deadline dropped (the lifetime kept), as E2B keeps a
 * paused sandbox until it is
 * resumed or killed; a resume or start sets a new one when the caller gives one, an
 * auto-resume the lifetime again (api_sandbox_wake). */
static int lifetime_end(api_server *s, const sl_deadline *sb, sl_err *e)
{
	enum sl_on_lifetime a = sb->on_lifetime;
	sl_log(SL_LOG_INFO, "sandbox %s: lifetime expired: %s", sb->id,
	       sandbox_on_lifetime_name(a));
	if (a != SL_LIFE_PAUSE && a != SL_LIFE_STOP && a != SL_LIFE_HIBERNATE)
		return api_destroy(s, sb->id, "lifetime expired", e);
	int r = 0;
	if (sb->status == SL_ST_RUNNING)
		r = a == SL_LIFE_PAUSE ? sandbox_pause(s->ctx, sb->id, NULL, e)
		    : a == SL_LIFE_STOP
			? sandbox_stop(s->ctx, sb->id, 10000, NULL, e)
			: sandbox_park(s->ctx, sb->id, SL_PARK_PAUSE, "lifetime expired", NULL, e);
	/* Dropped even when the pause failed: a sandbox that cannot be paused is not
	 * retried every second; it stays as it is, as a sandbox without a deadline. */
	sl_err e2 = { 0 };
	if (sandbox_drop_deadline(s->ctx, sb->id, NULL, &e2) < 0 && r == 0) {
		*e = e2;
		return -1;
	}
	return r;
}

/* Idle for its idle timeout: destroyed, stopped, paused or hibernated (else paused:
 * sandbox_park), as its onIdle says (a paused or hibernated sandbox is not running, so
 * the sweep leaves it be until a resume, an API call, makes it active again). An
 * ephemeral sandbox that stops is destroyed, as any stop of it is. */
static int idle_end(api_server *s, const sl_deadline *sb, sl_err *e)
{
	switch (sb->on_idle) {
	case SL_LIFE_PAUSE:
		return sandbox_pause(s->ctx, sb->id, NULL, e);
	case SL_LIFE_HIBERNATE:
		return sandbox_park(s->ctx, sb->id, SL_PARK_PAUSE, "idle timeout", NULL, e);
	case SL_LIFE_STOP:
		if (!sb->ephemeral)
			return sandbox_stop(s->ctx, sb->id, 10000, NULL, e);
		/* fall through */
	case SL_LIFE_DELETE:
	default:
		return api_destroy(s, sb->id, "idle timeout", e);
	}
}

void api_enforce_deadlines(api_server *s)
{
	sl_deadline *list;
	size_t n;
	sl_err err = { 0 };
	int64_t t = sl_now_ms();
	if (!s->tombstones_ms || t - s->tombstones_ms >= TOMBSTONES_SWEEP_MS) {
		s->tombstones_ms = t;
		if (sandbox_collect_tombstones(s->ctx, &err) < 0)
			sl_log(SL_LOG_WARN, "state: tombstone collection: %s", err.msg);
		err = (sl_err){0};
	}
	if (sandbox_list_deadlines(s->ctx, &list, &n, &err) < 0)
		return;
	int64_t now = sl_now_ms();
	for (size_t i = 0; i < n; i++) {
		sl_deadline *sb = &list[i];
		if (sb->status == SL_ST_CREATING)
			continue;
		sl_err e = { 0 };
		if (sb->expires_ms && now >= sb->expires_ms) {
			if (lifetime_end(s, sb, &e) < 0)
				sl_log(SL_LOG_WARN, "sandbox %s: %s", sb->id, e.msg);
			continue;
		}
		if (enforce_stop_policy(s, sb, now))
			continue;
		if (!sb->idle_ms || sb->status != SL_ST_RUNNING)
			continue;
		bool running;
		int64_t last = last_activity(s, sb, now - (int64_t)sb->idle_ms, &running);
		if (running || now - last < (int64_t)sb->idle_ms)
			continue;
		sl_log(SL_LOG_INFO, "sandbox %s: idle for %llu ms: %s", sb->id,
		       (unsigned long long)sb->idle_ms, sandbox_on_lifetime_name(sb->on_idle));
		int r = idle_end(s, sb, &e);
		if (r < 0)
			sl_log(SL_LOG_WARN, "sandbox %s: %s", sb->id, e.msg);
	}
	free(list);
}
