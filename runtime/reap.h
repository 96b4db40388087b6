/* reap.h — reaping the dead sandbox inits a long-lived process launched (reap.c). */
#ifndef SANDLOT_REAP_H
#define SANDLOT_REAP_H

/* Reap every child of any of this process's threads that is a dead sandlot-init; other
 * children (mkfs.btrfs, launch helpers) are left to the callers that wait for them. */
void inits_reap_dead(void);

#endif
