/* control.h — the control plane's calls and what its files share:
 * control.c (lists, connect, pause, the calls on one sandbox, and the
 * pieces the others use), control_create.c (create) and
 * control_snapshots.c (snapshots and forks), which call down into
 * control.c, never the other way. Its route table is router.c's, its
 * owner checks are auth.c's (auth.h). Runs in aboxd. */
#ifndef ABOX_DAEMON_CONTROL_H
#define ABOX_DAEMON_CONTROL_H

#include <json-c/json.h>

#include "auth.h"
#include "daemon.h"

#define DEFAULT_TIMEOUT_S 300

/* The calls of the control plane, which router.c's route table makes
 * with the request's context: the list of sandboxes (v2: GET
 * /v2/sandboxes), connect or resume (legacy_resume: POST
 * /sandboxes/{id}/resume), pause, a call on one sandbox (what: "info",
 * "kill", "timeout", "metrics", "network") and DELETE /templates/{name}. */
enum MHD_Result control_list(struct request *rq, abox_ctx *ctx, bool v2);
enum MHD_Result control_connect(struct request *rq, abox_ctx *ctx, const char *id, bool legacy_resume);
enum MHD_Result control_pause(struct request *rq, abox_ctx *ctx, const char *id);
enum MHD_Result control_sandbox_call(struct request *rq, abox_ctx *ctx, const char *id, const char *what);
enum MHD_Result control_template_forget(struct request *rq, abox_ctx *ctx, const char *name);
enum MHD_Result control_template_alias(struct request *rq, abox_ctx *ctx, const char *alias);
enum MHD_Result control_create(struct request *rq, abox_ctx *ctx);
bool control_checkpointer_works(abox_ctx *ctx);
int control_snapshot_of(abox_ctx *ctx, struct request *rq, const char *ref, char id[ABOX_ID_LEN + 1]);
enum MHD_Result control_snapshot(struct request *rq, abox_ctx *ctx, const char *id);
enum MHD_Result control_fork(struct request *rq, abox_ctx *ctx, const char *id);
enum MHD_Result control_snapshots(struct request *rq, abox_ctx *ctx);
json_object *control_sandbox_json(const abox_sandbox_info *in);
abox_sandbox *control_open_visible(struct request *rq, abox_ctx *ctx, const char *id, abox_sandbox_info *in,
				  enum MHD_Result *sent);
bool control_owned_by(const char *id, const char *owner);
json_object *control_snap_json(const abox_snapshot_info *s);

#endif
