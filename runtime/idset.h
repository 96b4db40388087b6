/* idset.h — a bounded set of sandbox ids (open addressing, linear probing), for what a
 * process remembers about ids between listings: the daemon's dead set (record.c). */
#ifndef SANDLOT_IDSET_H
#define SANDLOT_IDSET_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sl_idset {
	pthread_mutex_t lock;
	size_t cap;  /* most slots; the set holds at most cap / 2 ids */
	size_t size; /* slots now: 64 at the first add, doubled as it fills, up to cap */
	size_t n;
	char (*ids)[32];
} sl_idset;

#define SL_IDSET_INIT(slots) { PTHREAD_MUTEX_INITIALIZER, (slots), 0, 0, NULL }

/* FNV-1a of an id: the start of its probe here and of its uid slot (sandbox.c, reserve). */
uint64_t sl_id_hash(const char *id);
bool idset_has(sl_idset *s, const char *id);
/* false when ID is too long or the set is at cap / 2 (then it is not remembered). */
bool idset_add(sl_idset *s, const char *id);
void idset_del(sl_idset *s, const char *id);
/* Forget every id (and the memory that held them): a set that filled with ids gone since
 * starts over. */
void idset_clear(sl_idset *s);
size_t idset_count(sl_idset *s);

#endif
