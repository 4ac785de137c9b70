/* abox — public C API.
 *
 * One contract, two backends (local now, remote later): a context, sandboxes
 * made from templates, and processes started inside them with streamed
 * events. Every handle is opaque. Option structs start with a version field
 * set by their _INIT macro and only ever grow, so code compiled against an
 * older header keeps working.
 *
 * Ownership: objects returned through `**out` parameters belong to the
 * caller and are released with the matching _free function. Strings
 * returned by accessors (abox_sandbox_id, ...) belong to the object and live
 * as long as it does. Event payloads passed to callbacks are valid only
 * during the callback. */
#ifndef ABOX_ABOX_H
#define ABOX_ABOX_H

/* The parts, each usable alone. */
#include <abox/common.h>
#include <abox/error.h>
#include <abox/version.h>
#include <abox/context.h>
#include <abox/sandbox.h>
#include <abox/snapshot.h>
#include <abox/template.h>
#include <abox/process.h>
#include <abox/files.h>

#endif
