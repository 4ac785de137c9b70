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

/* The timeout a sandbox resumed by its traffic gets (s) */
#define LIFECYCLE_RESUME_TIMEOUT_S 300
/* Before a request to sandbox id of ctx (envd, code plane, port traffic)
 * is served: 0 when it runs, or was paused with autoResume and is now
 * resumed — once, whichever of concurrent requests comes first; -EAGAIN
 * when it is paused without autoResume (then *reply holds the answer,
 * as E2B's: 502 with a message), or -errno with err. */
int lifecycle_wake(abox_ctx *ctx, const abox_sandbox_info *in, abox_error *err);
/* Whether sandbox id is being killed or gone (not running nor paused):
 * a SIGKILL end then is the sandbox's end, not the command's. */
bool lifecycle_sandbox_gone(abox_ctx *ctx, const char *id);
/* The answer to a request to a paused sandbox without autoResume. */
enum MHD_Result lifecycle_paused_reply(struct request *rq);

#endif
