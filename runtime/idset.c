/* idset.c — see idset.h. Deletion shifts the entries after a freed slot back (no
 * tombstone markers), so a set whose ids come and go never fills with dead slots. */
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
	size_t i = sl_id_hash(id) % s->cap;
	while (s->ids[i][0] && strncmp(s->ids[i], id, sizeof(s->ids[i])))
		i = (i + 1) % s->cap;
	return i;
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
	if (!s->ids)
		s->ids = calloc(s->cap, sizeof(s->ids[0]));
	if (s->ids) {
		size_t i = find(s, id);
		if (s->ids[i][0])
			added = true; /* there already */
		else if (s->n < s->cap / 2) {
			memcpy(s->ids[i], id, strlen(id) + 1);
			s->n++;
			added = true;
		}
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
		for (size_t j = (i + 1) % s->cap; s->ids[j][0]; j = (j + 1) % s->cap) {
			size_t home = sl_id_hash(s->ids[j]) % s->cap;
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
	if (s->ids)
		memset(s->ids, 0, s->cap * sizeof(s->ids[0]));
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
