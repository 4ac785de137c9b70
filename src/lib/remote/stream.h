/* remote/stream.h — Connect server streams of process events, decoded
 * (see stream.c). Free of curl, so the fuzz target links it alone. */
#ifndef ABOX_REMOTE_STREAM_H
#define ABOX_REMOTE_STREAM_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "e2b/e2b.h"
#include "proto/proto.h"

/* One process event ({"event": {...}}) as the frame init would have sent
 * for request req: 1 with *m to send (and free), 0 for nothing to send
 * (keepalive, unknown events), -EPROTO when malformed. A start sets *pid;
 * later events carry it. *end is true for the end event. */
int remote_event_frame(json_object *ev, uint32_t req, int *pid, bool *end, struct proto_msg *m);
/* One WatchDir message ({"start"|"filesystem"|"keepalive": ...}) as
 * init's MSG_EV_FS_EVENT for request req (whole
 * path: root + "/" + the event's name): 1 with *m, 0 for nothing (the
 * start sets *started; keepalives), -EPROTO when malformed. */
int remote_watch_frame(json_object *ev, uint32_t req, const char *root, bool *started, struct proto_msg *m);
/* An end-stream message's error, if any: true with *code (may be NULL)
 * and *msg pointing into o. */
bool remote_end_error(json_object *o, const char **code, const char **msg);

#endif
