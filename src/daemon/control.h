/* control.h — what the control plane's files share: control.c (routes,
 * lists, connect, pause and the simple calls), control_create.c (create),
 * control_snapshots.c (snapshots and forks) and the owner checks in
 * auth.c. Runs in aboxd. */
#ifndef ABOX_DAEMON_CONTROL_H
#define ABOX_DAEMON_CONTROL_H

#include <json-c/json.h>

#include "daemon.h"

#define DEFAULT_TIMEOUT_S 300
#define TOKEN_KEY "_aboxToken"

bool control_authorized(struct request *rq);
json_object *control_public_metadata(const abox_sandbox_info *in, char **token, char *owner);
char *control_network_note(json_object *net, json_object *allow, char *why, size_t whyn);
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
