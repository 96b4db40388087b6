/* owner.c — the key the calling thread acts for (owner.h): thread-local, like errno, so
 * that the runtime's lookups shared by the CLI, /v1 and the façades filter in one place. */
#include "owner.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char acting[SL_OWNER_LEN];

void owner_act_as(const char *owner)
{
	snprintf(acting, sizeof(acting), "%s", owner ? owner : "");
}

const char *owner_acting(void)
{
	return acting;
}

bool owner_sees(const char *owner)
{
	return !acting[0] || !strcmp(acting, owner ? owner : "");
}
