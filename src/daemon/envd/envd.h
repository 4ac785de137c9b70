/* envd — what the files of the envd plane share: the request's sandbox
 * (envd.c), each call's entry point (process.c, fs.c, watch.c, files.c,
 * upload.c, input.c, listdir.c) and EntryInfo (entry.c). Its route
 * table is router.c's. Runs in aboxd. */
#ifndef ABOX_DAEMON_ENVD_H
#define ABOX_DAEMON_ENVD_H

#include <stdarg.h>

#include "daemon.h"

typedef struct sandbox_handle {
	abox_ctx *ctx;
	abox_sandbox *sb;
} sandbox_handle_t;

/* The request's sandbox, checked (user, access token, running); on
 * failure .sb is NULL and the reply is sent (*sent). */
sandbox_handle_t envd_open(struct request *rq, enum MHD_Result *sent);
/* The same for a request whose body b came first: b is put when the
 * sandbox cannot be opened (b may be NULL). */
sandbox_handle_t envd_open_body(struct request *rq, json_object *b, enum MHD_Result *sent);
/* The request's body (envd_body), then its sandbox (envd_open_body): a bad
 * body is answered before the sandbox is looked at. On failure .sb and *b
 * are NULL and the reply is sent; else the caller puts *b. */
sandbox_handle_t envd_read_open(struct request *rq, bool enveloped, json_object **b, enum MHD_Result *sent);
/* The home of user in the sandbox (`user` and `root` without asking it):
 * 0, -ABOX_ENOUSER or -errno. */
int envd_user_home(abox_sandbox *sb, const char *user, char *home, size_t n);
void envd_close(sandbox_handle_t *h);
/* A Connect error: {"code": "not_found", ...} with its HTTP status. */
enum MHD_Result envd_error(struct request *rq, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
json_object *envd_body(struct request *rq, bool enveloped, enum MHD_Result *sent);

enum MHD_Result process_rpc(struct request *rq, const char *method);
/* Sends the stdin queued on p, for up to 10 s: 1 when the process ended
 * meanwhile, 0 when it did not (abox_proc_stdin_pending says whether some
 * is left), or -errno. */
int envd_proc_drain(abox_proc *p, abox_error *err);
enum MHD_Result filesystem_rpc(struct request *rq, const char *method);
enum MHD_Result watch_dir(struct request *rq);
enum MHD_Result watcher_rpc(struct request *rq, const char *method);
enum MHD_Result files_get_stream(struct request *rq);
/* What GET and POST /files share (files.c): ?username= into rq->user
 * (false: a name that cannot be a user), and a failed request's answer
 * (envd's 401 for a user the sandbox lacks, else path and msg). */
bool files_username(struct request *rq);
enum MHD_Result files_fail(struct request *rq, int e, const char *user, const char *path, const char *msg);
/* POST /files (upload.c) with an octet-stream body, streamed into the sandbox as it
 * arrives: begin at the request's first call (false: not such a request),
 * each chunk, the end (the reply), and free (also when the client left). */
bool files_stream_begin(struct request *rq);
void files_stream_chunk(struct request *rq, const char *data, size_t n);
enum MHD_Result files_stream_end(struct request *rq);
void files_stream_free(struct request *rq);
enum MHD_Result files_post(struct request *rq);
/* process.Process/StreamInput, decoded as its body arrives (input.c):
 * the same four steps as the streamed upload. */
bool input_stream_begin(struct request *rq);
void input_stream_chunk(struct request *rq, const char *data, size_t n);
enum MHD_Result input_stream_end(struct request *rq);
void input_stream_free(struct request *rq);

/* ListDir's answer, streamed as init sends the entries (listdir.c); h is
 * taken over. */
enum MHD_Result list_dir_stream(struct request *rq, sandbox_handle_t h, const char *path, unsigned depth);
/* EntryInfo of proto3 JSON (entry.c). */
json_object *entry_json(const abox_file_info *f, const abox_accounts *acc);

#endif
