/* lifecycle — a sandbox's E2B lifecycle (onTimeout, autoResume): read
 * from the create request, kept in the sandbox's record as reserved
 * metadata (hidden from clients), and answered in its info. */
#ifndef ABOX_DAEMON_LIFECYCLE_H
#define ABOX_DAEMON_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon.h"

#define LIFECYCLE_ON_TIMEOUT_KEY "_aboxOnTimeout"   /* "pause"; absent: kill */
#define LIFECYCLE_AUTO_RESUME_KEY "_aboxAutoResume" /* "1"; absent: no */

/* The create body's autoResume ({"enabled": bool}): 0 with *on, or -1
 * with why (a 400) when it is malformed or asked without autoPause. */
int lifecycle_parse(json_object *body, bool auto_pause, bool *on, char *why, size_t n);
/* {"onTimeout": "kill"|"pause", "autoResume": bool} for the info. */
json_object *lifecycle_json(const abox_sandbox_info *in);
bool lifecycle_auto_resume(const abox_sandbox_info *in);

#endif
