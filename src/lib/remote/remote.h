/* remote — libabox's remote backend: the public API over an aboxd's
 * E2B-compatible HTTP API (control plane with X-API-Key, envd plane routed
 * by E2b-Sandbox-Id/-Port), with libcurl. Runs in the caller's process. */
#ifndef ABOX_REMOTE_H
#define ABOX_REMOTE_H

#include <curl/curl.h>
#include <json-c/json.h>
#include <pthread.h>

#include "backend.h"
#include "e2b/e2b.h"

struct remote {
	char *base;      /* "http://host:port", no trailing slash */
	char *unix_path; /* a unix socket, or NULL */
	char *key;       /* X-API-Key, or NULL */
	CURL *easy;      /* reused for calls made on the caller's thread */
};

struct remote_sandbox {
	char *token;     /* envdAccessToken of a secure sandbox, or NULL */
};

/* A response body (bounded: max bytes, then the call fails). */
struct rbuf {
	char *data;
	size_t len, cap, max;
};

struct rreq {
	const char *method;
	const char *path;        /* with its query string, escaped */
	const char *body;        /* NULL: none */
	size_t body_len;
	const char *ctype;       /* of body; NULL: application/json */
	const char *sandbox;     /* envd plane of this sandbox, or NULL (control plane) */
	const char *user;        /* envd plane: the Linux user (Basic auth) */
	const char *token;       /* envd plane: X-Access-Token, or NULL */
	bool idempotent;         /* may be retried on a transient failure */
	char **next_token;       /* gets a malloc'd X-Next-Token header, or NULL */
	/* streamed bodies (no retry then): */
	curl_write_callback sink;
	void *sink_ud;
	curl_read_callback source;
	void *source_ud;
};

/* Performs a request on rm's handle. 2xx: 0 and *resp (when not NULL)
 * holds the body. Else a negative errno with the server's message (its
 * JSON {code, message}) or curl's. Idempotent calls are tried up to
 * three times on connection failures and 502/503/504. */
int remote_call(struct remote *rm, const struct rreq *q, struct rbuf *resp, long *status, abox_error *err);
/* Prepares a handle for q (headers in *hdrs, freed by the caller). */
int remote_setup(struct remote *rm, CURL *h, const struct rreq *q, struct curl_slist **hdrs);
/* The errno for an HTTP status and a Connect/E2B error code. */
int remote_errno(long status, const char *code);
/* An RFC 3339 time as the daemon writes it -> Unix ms (0: not one). */
int64_t remote_time_ms(const char *s);
/* e, or the precise errno the message's strerror() suffix names. */
int remote_refine(int e, const char *msg);
/* Parses a JSON body; NULL (and err set) when it is not JSON. */
json_object *remote_json(const struct rbuf *b, const char *what, abox_error *err);
/* remote_call for a JSON reply: *out (the caller's to put), or -EPROTO
 * when the reply is not JSON. */
int remote_call_json(struct remote *rm, const struct rreq *q, const char *what, json_object **out,
		     abox_error *err);
/* 0 when the reply j is an array (a list); else j is put and the error
 * says so. */
int remote_want_array(json_object *j, const char *what, abox_error *err);
void rbuf_free(struct rbuf *b);
/* The envd plane's unary Connect call: POST /<service>/<method> with a
 * JSON body; *out (may be NULL) gets the reply. */
int remote_rpc(abox_sandbox *sb, const char *service, const char *method, const char *user, json_object *body,
	       json_object **out, abox_error *err);

/* sandbox.c: the entries of one sandbox's lifecycle, and what the
 * other control-plane files share */
int remote_create(abox_ctx *ctx, const abox_sandbox_opts *o, abox_sandbox **out, abox_error *err);
int remote_info(abox_ctx *ctx, const char *id, abox_sandbox_info *out, abox_error *err);
int remote_connect(abox_ctx *ctx, const char *id, abox_sandbox **out, abox_error *err);
int remote_kill(abox_sandbox *sb, abox_error *err);
void remote_release(abox_sandbox *sb);
int remote_set_timeout(abox_sandbox *sb, uint32_t timeout_ms, abox_error *err);
int remote_pause(abox_sandbox *sb, uint32_t flags, abox_error *err);
int remote_resume(abox_sandbox *sb, abox_error *err);
int remote_metrics(abox_sandbox *sb, abox_metrics *out, abox_error *err);
/* A handle on sandbox id as the daemon named it; NULL when id (or
 * token, then dropped) could not safely go into a URL or header, or out
 * of memory. */
abox_sandbox *remote_sandbox_new(abox_ctx *ctx, const char *id, const char *token, uint32_t flags);
/* out (its version kept) from one sandbox object of the daemon's. */
void remote_info_from(json_object *o, abox_sandbox_info *out);
/* POST body (NULL: {}) to a control-plane path. */
int remote_post_json(abox_ctx *ctx, const char *path, json_object *body, bool idempotent, struct rbuf *resp,
		     long *status, abox_error *err);
/* The same, never repeated, for a JSON reply (remote_call_json). */
int remote_post_reply(abox_ctx *ctx, const char *path, json_object *body, const char *what, json_object **out,
		      abox_error *err);
/* query.c */
int remote_query(abox_ctx *ctx, const abox_list_opts *o, abox_sandbox_info **infos, size_t *n, char **next,
		 abox_error *err);
int remote_list(abox_ctx *ctx, char ***ids, abox_error *err);
/* snapshot.c */
int remote_snapshot(abox_sandbox *sb, const char *name, uint32_t flags, abox_snapshot_info *out,
		    abox_error *err);
int remote_fork(abox_sandbox *sb, unsigned count, uint32_t timeout_ms, uint32_t flags,
		abox_sandbox **forks, abox_error *errs, abox_error *err);
int remote_snapshot_list(abox_ctx *ctx, abox_snapshot_info **out, size_t *n, abox_error *err);
int remote_snapshot_remove(abox_ctx *ctx, const char *ref, bool forget, abox_error *err);
/* proc.c and proc_reader.c: the stream behind a remote process (or a
 * watch); the handle owns it, its thread writes what it reads */
struct remote_proc {
	pthread_t thread;
	bool thread_started;
	int fd;                  /* the thread's end of the socketpair */
	uint32_t req;
	CURL *easy;
	CURLM *multi;
	struct curl_slist *hdrs;
	char *body;              /* the request envelope */
	size_t body_len;
	struct envq q;           /* incoming envelopes */
	char err_body[4096];     /* the body of an error status */
	size_t err_len;
	bool ended;              /* an END frame went out */
	bool failed;             /* the stream carried an error */
	char errmsg[512];
	int err;
	/* start handshake with the caller's thread */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool decided;            /* START seen, or the call failed */
	int pid;
	volatile bool stop;
	bool transient;          /* 502/503/504: nothing ran */
	char *watch_root;        /* a WatchDir stream of that folder (else process events) */
	/* output truncation: the complete streams, kept on the client while
	 * they come and written into the sandbox when the result is read
	 * (the protocol has no way to have the sandbox keep them) */
	int spool[2];            /* stdout, stderr; -1 when not truncating */
	char *user;              /* the command's user, for those files */
	char *cmdline;
	bool spool_written;
	/* the command's own timeout (sent as Connect-Timeout-Ms) and when it
	 * was asked for: a SIGKILL after it is reported as that timeout */
	uint32_t timeout_ms;
	int64_t t0_ms; /* when it started (monotonic) */
};
/* proc_reader.c: the stream thread's curl write callback (ud: the
 * struct remote_proc) and the thread itself */
size_t remote_proc_on_data(char *d, size_t sz, size_t nm, void *ud);
void *remote_proc_run(void *arg);
/* proc.c */
int remote_proc_start(abox_sandbox *sb, const abox_proc_opts *o, abox_proc **out, abox_error *err);
int remote_proc_attach(abox_sandbox *sb, int pid, const char *tag, abox_proc **out, abox_error *err);
/* A WatchDir stream held by an internal process handle on sb (its
 * events arrive on sb->conn as init's MSG_EV_FS_EVENT frames). */
int remote_watch_start(abox_sandbox *sb, const char *path, const char *user, int recursive, abox_watch *w,
		       abox_error *err);
/* Ends the stream (the daemon drops the watch with it). */
int remote_watch_stop(abox_watch *w, bool answer, abox_error *err);
int remote_proc_list(abox_sandbox *sb, abox_proc_info **out, size_t *n, abox_error *err);
/* After END of a process started with truncation: writes its complete
 * output into the sandbox (once). */
int remote_truncate_finish(abox_proc *p, abox_error *err);
int remote_proc_input(abox_proc *p, const void *buf, size_t len, bool close, abox_error *err);
int remote_proc_signal(abox_proc *p, int sig, abox_error *err);
int remote_proc_resize(abox_proc *p, uint16_t rows, uint16_t cols, abox_error *err);
void remote_proc_free(abox_proc *p);
/* files.c */
int remote_file_read(abox_sandbox *sb, const char *path, const char *user, abox_data_fn fn, void *ud, uint64_t *size,
		     abox_error *err);
int remote_file_write(abox_sandbox *sb, const char *path, const char *user, int fd, const void *data, size_t len,
		      int parents, uint64_t *size, abox_error *err);
int remote_file_stat(abox_sandbox *sb, const char *path, const char *user, abox_file_info *out, abox_error *err);
int remote_file_list(abox_sandbox *sb, const char *path, const char *user, unsigned depth, abox_file_entry_fn fn,
		     void *ud, abox_error *err);
int remote_file_mkdir(abox_sandbox *sb, const char *path, const char *user, int *made, abox_error *err);
int remote_file_move(abox_sandbox *sb, const char *from, const char *to, const char *user, abox_error *err);
int remote_file_remove(abox_sandbox *sb, const char *path, const char *user, abox_error *err);

#endif
