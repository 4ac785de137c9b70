/* proto — the framed protocol between the host side (libabox) and
 * abox-init, over a SOCK_STREAM unix socket.
 *
 * A frame is a 12-byte little-endian header {u32 payload length, u16 type,
 * u8 number of fds, u8 flags, u32 request id} followed by the payload: a
 * sequence of fields {u16 tag, u32 length, bytes}. Requests carry an id the
 * host picks; events about a request (start, data, end, error) carry the
 * same id, so several requests can be in flight on one connection. File
 * descriptors travel with SCM_RIGHTS attached to the frame's first byte and
 * are handed out in order to the frame that declares them.
 *
 * What it does: encode, decode (strict bounds, size limits), send, receive.
 * What it does not do: interpret messages (messages.h names them; init and
 * local/ act on them).
 * Runs in the CLI/daemon and in abox-init (so it depends on libc only). */
#ifndef ABOX_PROTO_H
#define ABOX_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_HDR_SIZE 12
#define PROTO_MAX_PAYLOAD (1u << 20)
#define PROTO_MAX_FDS 4
#define PROTO_FIELD_HDR 6

struct proto_msg {
	uint16_t type;
	uint32_t id;
	uint8_t *buf; /* header + payload */
	size_t len, cap;
	int fds[PROTO_MAX_FDS]; /* borrowed: not closed by proto_msg_free */
	unsigned nfds;
	int failed; /* errno of a failed append (EMSGSIZE, ENOMEM, EBADF) */
};

/* Builder. Appends never fail loudly; a failure sets msg->failed and
 * proto_send then returns -errno, so call sites stay linear. */
void proto_msg_init(struct proto_msg *m, uint16_t type, uint32_t id);
void proto_msg_free(struct proto_msg *m);
void proto_put_bytes(struct proto_msg *m, uint16_t tag, const void *p, size_t n);
void proto_put_str(struct proto_msg *m, uint16_t tag, const char *s);
void proto_put_u64(struct proto_msg *m, uint16_t tag, uint64_t v);
void proto_put_i64(struct proto_msg *m, uint16_t tag, int64_t v);
void proto_put_fd(struct proto_msg *m, int fd);
/* Sends the whole frame, waiting for room when the socket is full (the fds
 * ride on the first byte). Returns 0 or -errno. For peers that must never
 * block, use proto_queue + proto_flush. */
int proto_send(int sock, struct proto_msg *m);

/* A send queue for non-blocking peers: frames are appended whole and
 * written as the socket takes them, so neither side ever blocks on the
 * other (a blocked init could not read stdin; a blocked host could not
 * read output: each would wait for the other forever). */
struct proto_outq {
	uint8_t *buf;
	size_t start, end, cap;
};
/* Appends the frame (no fds). -ENOMEM, -EMSGSIZE, -EINVAL (has fds). */
int proto_queue(struct proto_outq *q, struct proto_msg *m);
/* Writes what the socket takes now: 0 = queue empty, 1 = bytes remain
 * (wait for POLLOUT), < 0 = -errno (peer gone). */
int proto_flush(int sock, struct proto_outq *q);
size_t proto_outq_len(const struct proto_outq *q);
void proto_outq_free(struct proto_outq *q);

struct proto_frame {
	uint16_t type;
	uint32_t id;
	const uint8_t *payload;
	uint32_t len;
	int fds[PROTO_MAX_FDS]; /* owned by the receiver of the frame */
	unsigned nfds;
};

/* Pure decoder (fuzzed): parses one frame header + payload from buf.
 * Returns 1 and fills *f and *consumed when a whole frame is there, 0 when
 * more bytes are needed, -EPROTO/-EMSGSIZE when the bytes can never be a
 * valid frame. Does not touch f->fds. */
int proto_decode(const uint8_t *buf, size_t len, struct proto_frame *f, size_t *consumed);

struct proto_field {
	uint16_t tag;
	uint32_t len;
	const uint8_t *val;
};
/* Iterates the fields of a payload: returns 1 with *fl filled, 0 at the
 * end, -EPROTO when a field overruns the payload. *off starts at 0. */
int proto_field_next(const struct proto_frame *f, size_t *off, struct proto_field *fl);
/* Typed views; -EPROTO when the length is wrong. */
int proto_field_u64(const struct proto_field *fl, uint64_t *v);
int proto_field_i64(const struct proto_field *fl, int64_t *v);
/* Copies a string field into a fresh NUL-terminated buffer; -EPROTO when it
 * contains a NUL byte, -ENOMEM. */
int proto_field_strdup(const struct proto_field *fl, char **out);

/* Receiving side of a connection: a buffer plus the queue of fds that
 * arrived and are not yet claimed by a frame. */
struct proto_reader {
	int sock;
	uint8_t *buf;
	size_t start, end, cap;
	int fdq[PROTO_MAX_FDS * 4];
	unsigned nfdq;
	bool eof;
};

void proto_reader_init(struct proto_reader *r, int sock);
/* Closes queued fds and frees the buffer (not the socket). */
void proto_reader_free(struct proto_reader *r);
/* One recvmsg into the buffer. Returns bytes read (> 0), 0 at EOF,
 * -EAGAIN when non-blocking and empty, -errno on error. */
int proto_reader_fill(struct proto_reader *r);
/* Takes the next complete frame out of the buffer: 1 = *f filled (payload
 * valid until the next fill/next call; fds now owned by the caller),
 * 0 = need more bytes, < 0 = protocol error (-EPROTO, -EMSGSIZE, or
 * -EBADMSG when a frame declares fds that never arrived). */
int proto_reader_next(struct proto_reader *r, struct proto_frame *f);
/* Blocking helper: fill until a frame is there. 0 = EOF before a frame. */
int proto_recv(struct proto_reader *r, struct proto_frame *f);
/* proto_recv, or -ETIMEDOUT after timeout_ms without data (-1: never). */
int proto_recv_timeout(struct proto_reader *r, struct proto_frame *f, int timeout_ms);

#endif
