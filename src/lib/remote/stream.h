/* remote/stream.h — Connect server streams of process events, decoded
 * (see stream.c). Free of curl, so the fuzz target links it alone. */
#ifndef ABOX_REMOTE_STREAM_H
#define ABOX_REMOTE_STREAM_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h" /* struct proto_msg; envelope.c needs none of it */

#define ENVQ_MAX (16u << 20) /* one message; output comes in far smaller pieces */

/* The error aboxd puts in a process's end event when init killed it at
 * its own timeout (ABOX_END_CMD_TIMEOUT); the remote backend reads it
 * back, so both sides use this one spelling. */
#define END_TIMEOUT_ERROR "signal: killed (its timeout passed)"

/* Bytes received and not yet decoded. */
struct envq {
	uint8_t *buf;
	size_t off, len, cap;
};

/* Appends n bytes; -E2BIG when the undecoded rest would pass one
 * message's bound, -ENOMEM. */
int envq_push(struct envq *q, const void *d, size_t n);
/* The next whole envelope: 1 with its flags and JSON object (*o, yours;
 * NULL for an empty end-stream), 0 when more bytes are needed, -EPROTO
 * (why says what) for anything that is not a Connect JSON envelope. */
int envq_next(struct envq *q, uint8_t *flags, json_object **o, char *why, size_t whyn);
void envq_free(struct envq *q);

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
