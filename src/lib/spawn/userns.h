/* userns — a user namespace whose ids 0-65535 are host ids base..
 * base+65535, made for one sandbox before its clone: the sandbox child
 * mounts its layers idmapped through it and joins it last, just before it
 * execs init (spawn.c).
 * Runs in the CLI/daemon (any thread). */
#ifndef ABOX_SPAWN_USERNS_H
#define ABOX_SPAWN_USERNS_H

#include <stdint.h>

#include "base/base.h"

/* An fd on the new namespace (close-on-exec), or -errno. */
int userns_new(uint32_t base, abox_error *err);

/* Whether this kernel lets us make one and mount through it (cached). */
bool userns_supported(void);

#endif
