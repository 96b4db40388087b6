/* idset.c — see idset.h. Deletion shifts the entries after a freed slot back (no
 * tombstone markers), so a set whose ids come and go never fills with dead slots. The
 * table grows with what it holds: allocated whole at its cap (2 MiB for the daemon's dead
 * set), its pages were touched one by one as ids landed on them, and the daemon's size
 * grew by ~1 MiB per thousand sandboxes until it was full (the load suite found it). */
#include "idset.h"

#include <stdlib.h>
#include <string.h>

uint64_t sl_id_hash(const char *id)
{
	uint64_t h = 1469598103934665603ull;
	for (const char *c = id; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	return h;
}

/* The slot of ID, or of the empty one ending its probe. Under the lock. */
static size_t find(const sl_idset *s, const char *id)
{
	size_t i = sl_id_hash(id) % s->size;
	while (s->ids[i][0] && strncmp(s->ids[i], id, sizeof(s->ids[i])))
		i = (i + 1) % s->size;
	return i;
}

/* Room for one more id: the table made, or doubled (every id placed again) when half
 * full and under its cap. False when out of memory or at the cap. Under the lock. */
static bool room(sl_idset *s)
{
	if (!s->ids) {
		s->size = s->cap < 64 ? s->cap : 64;
		s->ids = calloc(s->size, sizeof(s->ids[0]));
		if (!s->ids)
			s->size = 0;
		return s->ids != NULL;
	}
	if (s->n < s->size / 2)
		return true;
	if (s->size * 2 > s->cap)
		return false;
	sl_idset bigger = {.cap = s->cap, .size = s->size * 2, .n = s->n};
	bigger.ids = calloc(bigger.size, sizeof(bigger.ids[0]));
	if (!bigger.ids)
		return false;
	for (size_t i = 0; i < s->size; i++)
		if (s->ids[i][0])
			memcpy(bigger.ids[find(&bigger, s->ids[i])], s->ids[i], sizeof(s->ids[i]));
	free(s->ids);
	s->ids = bigger.ids;
	s->size = bigger.size;
	return true;
}

bool idset_has(sl_idset *s, const char *id)
{
	pthread_mutex_lock(&s->lock);
	bool found = s->ids && strlen(id) < sizeof(s->ids[0]) && s->ids[find(s, id)][0];
	pthread_mutex_unlock(&s->lock);
	return found;
}

bool idset_add(sl_idset *s, const char *id)
{
	if (strlen(id) >= sizeof(s->ids[0]) || !s->cap)
		return false;
	bool added = false;
	pthread_mutex_lock(&s->lock);
	if (s->ids && s->ids[find(s, id)][0])
		added = true; /* there already */
	else if (room(s)) {
		memcpy(s->ids[find(s, id)], id, strlen(id) + 1);
		s->n++;
		added = true;
	}
	pthread_mutex_unlock(&s->lock);
	return added;
}

void idset_del(sl_idset *s, const char *id)
{
	if (strlen(id) >= sizeof(s->ids[0]))
		return;
	pthread_mutex_lock(&s->lock);
	size_t i = s->ids ? find(s, id) : 0;
	if (s->ids && s->ids[i][0]) {
		s->ids[i][0] = '\0';
		s->n--;
		/* Move back every later entry of the run that the hole now cuts off from
		 * its home slot. */
		for (size_t j = (i + 1) % s->size; s->ids[j][0]; j = (j + 1) % s->size) {
			size_t home = sl_id_hash(s->ids[j]) % s->size;
			/* j's entry may stay if its home lies cyclically in (i, j]. */
			bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
			if (stays)
				continue;
			memcpy(s->ids[i], s->ids[j], sizeof(s->ids[i]));
			s->ids[j][0] = '\0';
			i = j;
		}
	}
	pthread_mutex_unlock(&s->lock);
}

void idset_clear(sl_idset *s)
{
	pthread_mutex_lock(&s->lock);
	free(s->ids);
	s->ids = NULL;
	s->size = 0;
	s->n = 0;
	pthread_mutex_unlock(&s->lock);
}

size_t idset_count(sl_idset *s)
{
	pthread_mutex_lock(&s->lock);
	size_t n = s->n;
	pthread_mutex_unlock(&s->lock);
	return n;
}
