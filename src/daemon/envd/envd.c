/* envd.c — what every call of the in-sandbox API of E2B (envd) starts
 * with: the request's sandbox, opened and checked (user, access token,
 * running, woken when it auto-resumes), the call's body, and errors as
 * Connect has them. The calls are process.c's and fs.c's (Connect RPC
 * with JSON for process.Process and filesystem.Filesystem) and files.c's
 * and upload.c's (/files); the route table, /health and /metrics are
 * router.c's.
 *
 * Unary calls take and give plain JSON; server streams (Start, Connect)
 * are Connect envelopes (flag byte, 4-byte big-endian length, JSON), and
 * always end with an end-stream envelope (flag 0x02), errors included.
 * The Linux user comes from "Authorization: Basic base64(user:)". Every
 * request, /health included, needs the sandbox's access token or a signed
 * URL (auth.c): without one, a local process could read the sandbox's
 * files or run commands in it. Runs in aboxd. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/base64.h"
#include "e2b/e2b.h"
#include "auth.h"
#include "daemon.h"
#include "envd.h"
#include "lifecycle.h"
#include "wire.h"

enum MHD_Result envd_error(struct request *rq, int e, const char *fmt, ...)
{
	char msg[1024];
	if (e == ABOX_ENOUSER) { /* envd's words for a user the sandbox lacks */
		snprintf(msg, sizeof(msg), "invalid username: '%s'", rq->user);
	} else {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
	}
	unsigned status;
	const char *code = e2b_code_of_errno(e, &status);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "code", json_object_new_string(code));
	json_object_object_add(o, "message", json_object_new_string(msg));
	const char *ct = header(rq, "Content-Type");
	if (ct && !strncasecmp(ct, "application/connect+", 20))
		return reply_stream_error(rq, o);
	return reply_json(rq, status, o);
}

static bool user_of(struct request *rq)
{
	return basic_user(header(rq, "Authorization"), rq->user, sizeof(rq->user)) == 0;
}

/* envd's answer for a user the sandbox lacks: its authentication's on
 * the Connect routes, its file handler's on /files */
static enum MHD_Result unknown_user(struct request *rq)
{
	if (!strcmp(rq->url, "/files"))
		return reply_error(rq, 401, "error looking up user '%s': user: unknown user %s", rq->user, rq->user);
	return envd_error(rq, ABOX_ENOUSER, "unknown user");
}

int envd_user_home(abox_sandbox *sb, const char *user, char *home, size_t n)
{
	if (!strcmp(user, "root") || !strcmp(user, "user")) {
		snprintf(home, n, "%s", !strcmp(user, "root") ? "/root" : "/home/user");
		return 0;
	}
	abox_accounts *a = NULL;
	int r = abox_accounts_read(sb, &a, NULL);
	const char *h = NULL;
	if (r >= 0)
		r = abox_accounts_user(a, user, NULL, NULL, &h);
	if (r >= 0)
		snprintf(home, n, "%s", h);
	abox_accounts_free(a);
	return r;
}

sandbox_handle_t envd_open(struct request *rq, enum MHD_Result *sent)
{
	sandbox_handle_t h = { 0 };
	if (!user_of(rq)) {
		*sent = unknown_user(rq);
		return h;
	}
	h.ctx = request_ctx();
	if (!h.ctx) {
		*sent = envd_error(rq, EIO, "cannot open abox's state");
		return h;
	}
	abox_sandbox_info in;
	if (!rq->sandbox[0]) {
		/* a signed URL no sandbox's token made (auth_signed_route) */
		*sent = reply_error(rq, 401, "the signature is invalid or has expired");
		abox_ctx_free(h.ctx);
		h.ctx = NULL;
		return h;
	}
	if (sandbox_visible(rq, h.ctx, rq->sandbox, &in) < 0) {
		*sent = envd_error(rq, ENOENT, "sandbox %s not found", rq->sandbox);
		abox_ctx_free(h.ctx);
		h.ctx = NULL;
		return h;
	}
	/* the token guards envd and the code plane alike: /execute runs code */
	bool ok = auth_request_ok(rq, &in);
	abox_error err = ABOX_ERROR_INIT;
	int w = ok ? lifecycle_wake(h.ctx, &in, &err) : 0;
	bool paused = w == -EAGAIN;
	abox_sandbox_info_clear(&in);
	if (ok && w < 0) {
		*sent = paused ? lifecycle_paused_reply(rq) : envd_error(rq, -w, "resuming sandbox %s: %s", rq->sandbox, err.msg);
		abox_ctx_free(h.ctx);
		h.ctx = NULL;
		return h;
	}
	if (!ok) {
		*sent = reply_error(rq, 401, "invalid or missing X-Access-Token for sandbox %s", rq->sandbox);
		abox_ctx_free(h.ctx);
		h.ctx = NULL;
		return h;
	}
	int r = abox_sandbox_connect(h.ctx, rq->sandbox, &h.sb, &err);
	char home[ACCT_HOME_MAX + 1];
	/* a user of the sandbox's own is checked before anything starts,
	 * as envd's authentication does: a command's stream would otherwise
	 * open and then fail */
	int u = r < 0 ? 0 : envd_user_home(h.sb, rq->user, home, sizeof(home));
	if (r < 0) {
		*sent = envd_error(rq, -r, "%s", err.msg);
	} else if (u == -EOPNOTSUPP) {
		*sent = envd_error(rq, EOPNOTSUPP, "sandbox %s was started by an abox without users of its own: "
					    "only 'user' and 'root' work in it", rq->sandbox);
	} else if (u == -ABOX_ENOUSER) {
		*sent = unknown_user(rq);
	} else if (u < 0) {
		*sent = envd_error(rq, -u, "user '%s'", rq->user);
	}
	if (r < 0 || u < 0) {
		abox_sandbox_free(h.sb);
		abox_ctx_free(h.ctx);
		h = (sandbox_handle_t){ 0 };
	}
	return h;
}

sandbox_handle_t envd_open_body(struct request *rq, json_object *b, enum MHD_Result *sent)
{
	sandbox_handle_t h = envd_open(rq, sent);
	if (!h.sb)
		json_object_put(b);
	return h;
}

sandbox_handle_t envd_read_open(struct request *rq, bool enveloped, json_object **b, enum MHD_Result *sent)
{
	*b = envd_body(rq, enveloped, sent);
	if (!*b)
		return (sandbox_handle_t){ 0 };
	sandbox_handle_t h = envd_open_body(rq, *b, sent);
	if (!h.sb)
		*b = NULL;
	return h;
}

void envd_close(sandbox_handle_t *h)
{
	abox_sandbox_free(h->sb);
	abox_ctx_free(h->ctx);
	*h = (sandbox_handle_t){ 0 };
}

/* The body of a unary call, or of the single message of a stream call
 * (a Connect envelope). */
json_object *envd_body(struct request *rq, bool enveloped, enum MHD_Result *sent)
{
	if (!enveloped)
		return body_json(rq, sent);
	const char *msg;
	size_t n;
	char why[256];
	if (connect_unframe(rq->body ? rq->body : "", rq->len, &msg, &n, why, sizeof(why)) < 0) {
		*sent = envd_error(rq, EINVAL, "%s", why);
		return NULL;
	}
	/* the message to the front, then parsed as a plain body */
	memmove(rq->body, msg, n);
	rq->len = n;
	rq->body[n] = '\0';
	if (!n) {
		rq->len = 2;
		strcpy(rq->body, "{}");
	}
	return body_json(rq, sent);
}
