/* stream — a buffer of Connect envelopes for a streamed response
 * (process.c, watch.c). */
#ifndef ABOX_DAEMON_STREAM_H
#define ABOX_DAEMON_STREAM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon.h"

struct ebuf {
	char *buf;
	size_t len, off, cap;
	bool finished;    /* the end-stream envelope is queued */
	int64_t last_ms;  /* when something was last queued */
};

/* Queues one envelope (flag 0: a message, 2: end of stream) holding o,
 * and frees o. */
void ebuf_put(struct ebuf *b, unsigned char flag, json_object *o);
/* {"event": {kind: body}} */
void ebuf_event(struct ebuf *b, const char *kind, json_object *body);
/* {kind: body}: a response whose oneof is at the top (WatchDirResponse) */
void ebuf_field(struct ebuf *b, const char *kind, json_object *body);
/* The end-stream envelope: {} or {"error": {code, message}}. */
void ebuf_end(struct ebuf *b, const char *code, const char *msg);
/* Copies what is queued into out; 0 when nothing is. */
size_t ebuf_take(struct ebuf *b, char *out, size_t max);
/* The body of a streamed reply over b (its MHD reader's work): what b
 * holds, and once it is finished and taken, the end; while b is empty,
 * fill(cls) queues more into it (or ends it), waiting as long as it must. */
ssize_t ebuf_read(struct ebuf *b, char *out, size_t max, void (*fill)(void *cls), void *cls);
void ebuf_free(struct ebuf *b);

#endif
