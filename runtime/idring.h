/* idring.h — a bounded FIFO of sandbox ids, each due at a monotonic time (0: at once), for
 * the threads that take work off a request's path (release.c, api/pool.c's syncer). Not
 * locked: its owner holds its own lock around every call. */
#ifndef SANDLOT_IDRING_H
#define SANDLOT_IDRING_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SL_IDRING_MAX 4096

struct sl_id_job {
	char id[32];
	int64_t at_ms;
};

typedef struct sl_idring {
	struct sl_id_job *v; /* SL_IDRING_MAX slots */
	size_t head, len;
} sl_idring;

static inline bool idring_init(sl_idring *r)
{
	r->head = r->len = 0;
	return (r->v = calloc(SL_IDRING_MAX, sizeof(*r->v))) != NULL;
}

static inline void idring_free(sl_idring *r)
{
	free(r->v);
	r->v = NULL;
}

/* False when full. */
static inline bool idring_push(sl_idring *r, const char *id, int64_t at_ms)
{
	if (r->len == SL_IDRING_MAX)
		return false;
	struct sl_id_job *j = &r->v[(r->head + r->len++) % SL_IDRING_MAX];
	snprintf(j->id, sizeof(j->id), "%s", id);
	j->at_ms = at_ms;
	return true;
}

/* The oldest (the ring is not empty). */
static inline void idring_pop(sl_idring *r, char id[32])
{
	memcpy(id, r->v[r->head].id, 32);
	r->head = (r->head + 1) % SL_IDRING_MAX;
	r->len--;
}

#endif
