/* owner.h — whose a sandbox (and what is under it), snapshot, volume or image is: the
 * API key that made it, and the key the calling thread acts for. */
#ifndef SANDLOT_OWNER_H
#define SANDLOT_OWNER_H

#include <stdbool.h>

/* A key's id, "key_" and 20 base32 letters (sl_new_id); "" is the admin (the daemon's
 * own key, the API socket, the CLI), and what records made before keys read as. */
#define SL_OWNER_LEN 32

/* The daemon sets the key a request acts for around each call of its handler (a thread
 * serves one connection); NULL or "" is the admin. Every lookup by id or name and every
 * list of the runtime asks owner_sees, so a key is refused at one place for the /v1
 * routes, the façades and anything later, not at each of their many call sites; other
 * threads (the CLI, the daemon's sweeps and pool) act as the admin. */
void owner_act_as(const char *owner);
/* The key this thread acts for ("" the admin). */
const char *owner_acting(void);
/* Whether this thread may see and use a thing OWNER made: the admin sees all. */
bool owner_sees(const char *owner);

#endif
