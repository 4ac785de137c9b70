/* api — what every public entry point in src/lib/api/ does before it
 * hands a call to its context's backend (struct abox_backend_ops):
 * refuse a missing handle by name, and answer EOPNOTSUPP, naming the
 * call, for an entry the backend leaves NULL. Runs in the caller's
 * process. */
#ifndef ABOX_API_H
#define ABOX_API_H

#include "backend.h"

/* A NULL handle is the caller's bug; answered, never dereferenced. */
#define API_NEED(h, what)                                                         \
	do {                                                                      \
		if (!(h))                                                         \
			return abox_error_setx(err, EINVAL, "%s: no handle", what); \
	} while (0)

/* ctx's backend does op, or the call is refused as unsupported there. */
#define API_CALL(ctx, op, what, ...) \
	((ctx)->be->op ? (ctx)->be->op(__VA_ARGS__) : backend_unsupported((ctx), (what), err))

#endif
