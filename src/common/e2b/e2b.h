/* e2b/e2b.h — E2B's wire (Connect over HTTP with JSON) as both sides of
 * abox speak it: aboxd serves it, the remote backend is its client. One
 * copy of the envelope format and of the spellings both sides must
 * agree on. Free of curl and libmicrohttpd: the fuzz targets link it
 * alone. Runs in aboxd and in the library (remote backend). */
#ifndef ABOX_E2B_H
#define ABOX_E2B_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A Connect envelope: a flag byte, a 4-byte big-endian length, then that
 * many bytes of JSON. The end-of-stream message of a stream has this
 * flag; a compressed one (0x01) is never sent nor accepted. */
#define E2B_ENVELOPE_HEAD 5
#define E2B_END_STREAM 0x02

/* Writes the 5-byte head of an envelope of n bytes with flags. */
void e2b_envelope_head(char out[E2B_ENVELOPE_HEAD], uint8_t flags, size_t n);
/* o as one envelope (malloc'd, *len bytes), or NULL without memory. */
char *e2b_envelope(uint8_t flags, json_object *o, size_t *len);

#define ENVQ_MAX (16u << 20) /* one message; output comes in far smaller pieces */

/* The error aboxd puts in a process's end event when init killed it at
 * its own timeout (ABOX_END_CMD_TIMEOUT); the remote backend reads it
 * back, so both sides use this one spelling. */
#define END_TIMEOUT_ERROR "signal: killed (its timeout passed)"

/* Connect's error codes (errors.c). An errno as aboxd answers it: the
 * code, and in *status the HTTP status of a unary call's failure
 * (ABOX_ENOUSER is unauthenticated, an unknown errno internal). */
const char *e2b_code_of_errno(int e, unsigned *status);
/* A code as the remote backend reads it back: its errno, or 0 for a
 * code it does not know (then the HTTP status decides). */
int e2b_errno_of_code(const char *code);
/* The code a process stream ends with when a timeout passed (the
 * command's or the connection's); the remote backend tells a command's
 * end by it. */
#define E2B_DEADLINE_EXCEEDED "deadline_exceeded"

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
/* Hands each whole envelope in q to fn (its flags, and its object or NULL
 * for an empty end-stream; put after fn returns) until fn returns non-zero
 * or more bytes are needed: 0, fn's return, or envq_next's error (why
 * says what). Both ends of a stream read it so. */
int envq_each(struct envq *q, int (*fn)(void *ud, uint8_t flags, json_object *o), void *ud, char *why,
	      size_t whyn);
void envq_free(struct envq *q);

#endif
