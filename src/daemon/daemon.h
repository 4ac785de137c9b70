/* aboxd — the E2B-compatible HTTP server over libabox's local backend.
 *
 * One listener serves three planes (see docs/daemon.md): the control plane
 * (X-API-Key), the envd plane of a sandbox (E2b-Sandbox-Id and port 49983,
 * or Host "<port>-<id>.<domain>") and, later, its code plane. Built on
 * libmicrohttpd with a thread per connection: a streamed response (a
 * command's output) blocks only its own thread. Every request opens its
 * own libabox context and sandbox handle; nothing is shared between
 * requests except the configuration, so one sandbox's trouble never
 * reaches another request.
 * Runs as root on the host. */
#ifndef ABOX_DAEMON_H
#define ABOX_DAEMON_H

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <abox/abox.h>

#include "base/accounts.h"
#include "base/base.h"

#define DAEMON_ENVD_PORT 49983
#define DAEMON_CODE_PORT 49999
/* what the SDKs gate features on: stdin (0.3.0), default user (0.4.0),
 * closeStdin (0.5.2), octet-stream uploads (0.5.7), file metadata (0.6.2,
 * meta.c), watch events with their entry (0.6.3) and watches allowed on
 * network mounts (0.6.4, watch.c) are all served */
#define DAEMON_ENVD_VERSION "0.6.4"
#define DAEMON_MAX_BODY (64u << 20)     /* one buffered body (JSON, proxied); uploads stream */
#define DAEMON_BODY_BUDGET (128u << 20) /* all buffered bodies together */
#define DAEMON_MAX_JSON_DEPTH 32
#define DAEMON_OWNER_KEY "_aboxOwner"   /* metadata entry naming the API key's owner */

struct daemon_config {
	char *state_dir;      /* NULL: libabox's default */
	char *listen;         /* address, default 127.0.0.1 */
	uint16_t port;        /* default 49982 */
	char **keys;          /* accepted API keys */
	char *domain;         /* returned as `domain` (getHost) */
	uint64_t memory_bytes, disk_bytes;
	uint32_t cpu_millis;
	char *unix_path;        /* also serve on this unix socket */
	char *access_log_path;  /* a file, "-" for stderr, NULL for none */
	char *admin_listen;     /* the metrics listener, default 127.0.0.1 */
	int admin_port;         /* default 49990; 0: none */
	unsigned idle_timeout;  /* s: a client silent this long is cut off (slowloris) */
	/* connections: caps and the head deadline (conns.c) */
	unsigned max_conns, per_client_conns, head_timeout;
	json_object *limits;    /* "limits" as given, for admission_configure */
	uint32_t net_default; /* a create without network settings: ABOX_NET_OPEN (E2B's) or NONE */
	/* the template served as E2B's `code-interpreter-v1` (the code
	 * interpreter SDKs' default); NULL: "code-interpreter" */
	char *ci_template;
	/* start the default python context at the create of a code
	 * interpreter sandbox (its first cell then finds IPython loaded) */
	bool ci_head_start;
};

/* The template E2B's name want stands for here: "base" is the host
 * template, "code-interpreter-v1" the configured code interpreter one,
 * "name:tag" and "name:BUILD_ID" the template of that tag (ttags.h);
 * any other name is itself. */
const char *daemon_template_of(const char *want);

/* The configuration (config.c), set before the daemon serves and only
 * read after. */
extern struct daemon_config daemon_cfg;
/* Reads the config file at path into daemon_cfg (a missing one is no
 * error unless explicit): 0, or -1 with the reasons on stderr. */
int config_load(const char *path, bool explicit);
/* Sets daemon_cfg.keys to the key of <state>/aboxd.key, made on first
 * start: 0, or -1 with a message on stderr. */
int config_default_key(void);

/* One request, built up across libmicrohttpd's calls. */
struct request {
	struct MHD_Connection *conn;
	const char *method;
	const char *url;
	char *body;
	size_t len, cap;
	bool too_big;
	bool no_room;             /* the bodies' budget was full: dropped, answered 503 */
	size_t expect;            /* its Content-Length, when it has one */
	bool answered;            /* answered before its body came (Expect: 100-continue) */
	bool smuggled;            /* Content-Length and Transfer-Encoding both */
	char raw_uri[8192];       /* the request target as sent (path and query), for the proxy */
	/* the target in libmicrohttpd's buffer, its length as a C string and
	 * whether it has a %00 (head.c: NULs in the target are refused) */
	const char *target;
	size_t target_len;
	bool target_pct00;
	int64_t start_ms;         /* when it came in (CLOCK_MONOTONIC) */
	struct upload *upload;    /* a streamed POST /files (fs.c) */
	/* an answer given before the body was read is kept until its end
	 * (defer_reply): answered early, a client still sending sees only a
	 * reset connection, never the 401 or 404 */
	bool defer_reply;
	char *deferred;
	size_t deferred_len;
	unsigned deferred_status;
	const char *deferred_ctype;
	struct instream *input;   /* a StreamInput client stream (input.c) */
	struct tb_stream *tupload; /* a template build's upload, to disk as it arrives (tbuild.c) */
	unsigned status;          /* what it was answered */
	/* set by routing */
	const char *key;          /* the API key it came with */
	char owner[17];           /* that key's owner tag */
	char sandbox[ABOX_ID_LEN + 1];         /* envd/code plane: the sandbox */
	unsigned port;            /* envd/code plane: the port asked for */
	char user[ACCT_NAME_MAX + 1];            /* envd: the Linux user (Basic auth) */
};

/* The toolkit of every plane (http.c). Queues a response, noting its
 * status (for the access log and metrics). */
enum MHD_Result daemon_queue(struct request *rq, unsigned status, struct MHD_Response *r);
/* A 200 whose body the reader produces as it comes (64 KiB blocks), of
 * unknown length; free_fn(cls) runs when it is over, or at once when no
 * response could be made. */
enum MHD_Result reply_stream(struct request *rq, const char *ctype, MHD_ContentReaderCallback reader, void *cls,
			     MHD_ContentReaderFreeCallback free_fn);
/* A streamed reply that a thread writes into a pipe: reply_pipe_put
 * writes all of data into the pipe (1 when the client went away: the
 * response's end is closed), reply_pipe_read is the response's reader
 * (the end of the pipe is the end of the reply, or a cut one when *cut is
 * set by then: cut may be NULL). */
int reply_pipe_put(int fd, const void *data, size_t n);
ssize_t reply_pipe_read(int fd, char *buf, size_t max, const atomic_bool *cut);
/* Responses. Each returns MHD_YES/MHD_NO from queueing. */
enum MHD_Result reply_json(struct request *rq, unsigned status, json_object *body);
/* A Connect streaming call's failure as the protocol has it: HTTP 200 and
 * one end-of-stream message {"error": error} (the SDKs read the code and
 * message from it; a bare HTTP status loses the message). */
enum MHD_Result reply_stream_error(struct request *rq, json_object *error);
/* Queues the answer kept by defer_reply (MHD_NO when there is none). */
enum MHD_Result reply_deferred(struct request *rq);
enum MHD_Result reply_empty(struct request *rq, unsigned status);
/* E2B-style control plane error: {"code": status, "message": ...} */
enum MHD_Result reply_error(struct request *rq, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The error of a libabox call, with its status (404 unknown, 409 paused...). */
enum MHD_Result reply_abox_error(struct request *rq, const abox_error *err, int r);
unsigned status_of_errno(int e);

const char *header(struct request *rq, const char *name);
const char *query(struct request *rq, const char *name);
/* The body as a JSON object (NULL and a 400 sent when it is not one). */
json_object *body_json(struct request *rq, enum MHD_Result *sent);
/* A buffered body (not a streamed one): n more bytes of it, kept within
 * DAEMON_MAX_BODY and DAEMON_BODY_BUDGET (past them it is dropped and
 * marked too_big or no_room, to be answered at its end); and its memory
 * given back. */
void http_body_append(struct request *rq, const char *data, size_t n);
void http_body_release(struct request *rq);

/* A libabox context for this request (free with abox_ctx_free). */
abox_ctx *request_ctx(void);

/* Notes kept beside libabox's records (notes.c): kind "snapshots" (the
 * owner tag of a snapshot the daemon made) or "network" (a sandbox's
 * network settings as given). id is a sandbox or snapshot id. */
int note_write(const char *kind, const char *id, const char *text);
char *note_read(const char *kind, const char *id); /* malloc'd, or NULL */
void note_remove(const char *kind, const char *id);
/* Removes the notes of what no longer exists. */
void notes_sweep(abox_ctx *ctx);

#endif
