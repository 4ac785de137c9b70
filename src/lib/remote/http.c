/* remote/http.c — one HTTP exchange with aboxd: headers, bounded bodies,
 * error mapping and retries of idempotent calls. Runs in the caller's
 * process. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/base64.h"
#include "e2b/e2b.h"
#include "remote/remote.h"

void rbuf_free(struct rbuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

static size_t collect(char *d, size_t sz, size_t nm, void *ud)
{
	struct rbuf *b = ud;
	size_t n = sz * nm;
	if (b->len + n + 1 > b->max)
		return 0; /* curl fails the transfer: the body is over its bound */
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *p = realloc(b->data, cap);
		if (!p)
			return 0;
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, d, n);
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

int remote_errno(long status, const char *code)
{
	int e = e2b_errno_of_code(code);
	if (e)
		return e;
	switch (status) {
	case 400:
		return EINVAL;
	case 401:
	case 403:
		return EACCES;
	case 404:
		return ENOENT;
	case 409:
		return EALREADY;
	case 412:
		return EAGAIN;
	case 413:
		return E2BIG;
	case 429:
	case 507:
		return ENOSPC;
	case 501:
		return EOPNOTSUPP;
	default:
		return EIO;
	}
}

/* "2026-11-30T10:00:00.123Z" -> Unix ms; 0 when it is not that. */
int64_t remote_time_ms(const char *s)
{
	struct tm tm = { 0 };
	int ms = 0;
	if (!s || sscanf(s, "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
			 &tm.tm_sec) != 6)
		return 0;
	const char *dot = strchr(s, '.');
	if (dot)
		for (int i = 1, f = 100; i <= 3 && dot[i] >= '0' && dot[i] <= '9'; i++, f /= 10)
			ms += (dot[i] - '0') * f;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm) * 1000 + ms;
}

int remote_refine(int e, const char *msg)
{
	/* the wire's codes are coarser than errno (invalid_argument is also
	 * ENOTDIR and EISDIR); the daemon's message ends with the errno's
	 * text, which abox_strerror gives alike on every C library */
	static const int precise[] = { ENOTDIR, EISDIR, ENOSPC, ENAMETOOLONG, ELOOP, ENOTEMPTY, EROFS, EFBIG, EXDEV };
	size_t ml = msg ? strlen(msg) : 0;
	for (size_t i = 0; ml && i < ELEMENTSOF(precise); i++) {
		const char *s = abox_strerror(precise[i]);
		size_t sl = strlen(s);
		if (ml >= sl && !strcmp(msg + ml - sl, s))
			return precise[i];
	}
	return e;
}

json_object *remote_json(const struct rbuf *b, const char *what, abox_error *err)
{
	json_tokener *t = json_tokener_new_ex(64);
	json_object *o = t && b->data ? json_tokener_parse_ex(t, b->data, (int)b->len) : NULL;
	if (t)
		json_tokener_free(t);
	if (!o)
		abox_error_setx(err, EPROTO, "%s: the daemon's reply is not JSON", what);
	return o;
}

int remote_call_json(struct remote *rm, const struct rreq *q, const char *what, json_object **out,
		     abox_error *err)
{
	struct rbuf resp = { 0 };
	int r = remote_call(rm, q, &resp, NULL, err);
	if (r >= 0) {
		*out = remote_json(&resp, what, err);
		r = *out ? 0 : -EPROTO;
	}
	rbuf_free(&resp);
	return r;
}

int remote_want_array(json_object *j, const char *what, abox_error *err)
{
	if (json_object_is_type(j, json_type_array))
		return 0;
	json_object_put(j);
	return abox_error_setx(err, EPROTO, "%s: the daemon's reply is not an array", what);
}

/* The server's error as errno + message: {code, message} (E2B's control
 * plane has a numeric code, Connect a string one). */
static int server_error(long status, const struct rbuf *b, const struct rreq *q, abox_error *err)
{
	const char *code = NULL, *msg = NULL;
	json_object *o = NULL, *v;
	if (b->len) {
		json_tokener *t = json_tokener_new_ex(16);
		o = t ? json_tokener_parse_ex(t, b->data, (int)b->len) : NULL;
		if (t)
			json_tokener_free(t);
	}
	if (o && json_object_is_type(o, json_type_object)) {
		if (json_object_object_get_ex(o, "code", &v) && json_object_is_type(v, json_type_string))
			code = json_object_get_string(v);
		if (json_object_object_get_ex(o, "message", &v) && json_object_is_type(v, json_type_string))
			msg = json_object_get_string(v);
	}
	int e = remote_refine(remote_errno(status, code), msg);
	int r;
	if (msg)
		r = abox_error_setx(err, e, "%s", msg);
	else
		r = abox_error_setx(err, e, "%s %s: HTTP %ld from the daemon", q->method, q->path, status);
	json_object_put(o);
	return r;
}

int remote_setup(struct remote *rm, CURL *h, const struct rreq *q, struct curl_slist **hdrs)
{
	char url[8192], line[512];
	if (snprintf(url, sizeof(url), "%s%s", rm->base, q->path) >= (int)sizeof(url))
		return -ENAMETOOLONG;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	if (rm->unix_path)
		curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, rm->unix_path);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
	curl_easy_setopt(h, CURLOPT_NOBODY, !strcmp(q->method, "HEAD") ? 1L : 0L);
	struct curl_slist *l = NULL;
	if (rm->key) {
		snprintf(line, sizeof(line), "X-API-Key: %s", rm->key);
		l = curl_slist_append(l, line);
	}
	if (q->sandbox) {
		snprintf(line, sizeof(line), "E2b-Sandbox-Id: %s", q->sandbox);
		l = curl_slist_append(l, line);
		l = curl_slist_append(l, "E2b-Sandbox-Port: 49983");
		char cred[160];
		snprintf(cred, sizeof(cred), "%s:", q->user ? q->user : "user");
		char *b64 = base64_encode(cred, strlen(cred));
		if (b64) {
			snprintf(line, sizeof(line), "Authorization: Basic %s", b64);
			l = curl_slist_append(l, line);
			free(b64);
		}
		if (q->token) {
			snprintf(line, sizeof(line), "X-Access-Token: %s", q->token);
			l = curl_slist_append(l, line);
		}
	}
	/* no "Expect: 100-continue" round trip on uploads */
	l = curl_slist_append(l, "Expect:");
	if (q->body || q->source) {
		snprintf(line, sizeof(line), "Content-Type: %s", q->ctype ? q->ctype : "application/json");
		l = curl_slist_append(l, line);
	}
	*hdrs = l;
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
	if (q->source) {
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, q->source);
		curl_easy_setopt(h, CURLOPT_READDATA, q->source_ud);
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
	} else {
		curl_easy_setopt(h, CURLOPT_UPLOAD, 0L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(q->body ? q->body_len : 0));
	}
	return 0;
}

static size_t header(char *d, size_t sz, size_t nm, void *ud)
{
	char **next = ud;
	size_t n = sz * nm;
	static const char name[] = "x-next-token:";
	if (n > sizeof(name) - 1 && !strncasecmp(d, name, sizeof(name) - 1)) {
		size_t a = sizeof(name) - 1, e = n;
		while (a < e && (d[a] == ' ' || d[a] == '\t'))
			a++;
		while (e > a && (d[e - 1] == '\r' || d[e - 1] == '\n' || d[e - 1] == ' '))
			e--;
		free(*next);
		*next = e > a ? strndup(d + a, e - a) : NULL;
	}
	return n;
}

static bool transient(CURLcode c, long status)
{
	return c == CURLE_COULDNT_CONNECT || c == CURLE_SEND_ERROR || c == CURLE_RECV_ERROR ||
	       c == CURLE_GOT_NOTHING || c == CURLE_PARTIAL_FILE ||
	       (c == CURLE_OK && (status == 502 || status == 503 || status == 504));
}

int remote_call(struct remote *rm, const struct rreq *q, struct rbuf *resp, long *status_out, abox_error *err)
{
	struct rbuf local = { .max = 64u << 20 };
	struct rbuf *b = resp ? resp : &local;
	if (!b->max)
		b->max = 64u << 20;
	int tries = q->idempotent && !q->sink && !q->source ? 3 : 1;
	for (int t = 0;; t++) {
		CURL *h = rm->easy;
		curl_easy_reset(h);
		struct curl_slist *hdrs = NULL;
		if (remote_setup(rm, h, q, &hdrs) < 0)
			return abox_error_setx(err, ENAMETOOLONG, "%s %s: path too long", q->method, q->path);
		b->len = 0;
		if (q->sink) {
			curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, q->sink);
			curl_easy_setopt(h, CURLOPT_WRITEDATA, q->sink_ud);
		} else {
			curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
			curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
		}
		if (q->next_token) {
			*q->next_token = NULL;
			curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header);
			curl_easy_setopt(h, CURLOPT_HEADERDATA, q->next_token);
		}
		CURLcode c = curl_easy_perform(h);
		long status = 0;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		curl_slist_free_all(hdrs);
		if (t + 1 < tries && transient(c, status)) {
			struct timespec ts = { 0, (long)(50L << (2 * t)) * 1000000L }; /* 50, 200 ms */
			nanosleep(&ts, NULL);
			continue;
		}
		if (status_out)
			*status_out = status;
		int r = 0;
		if (c == CURLE_WRITE_ERROR && q->sink)
			r = -ECANCELED; /* the caller's sink said stop (or failed): it set err */
		else if (c != CURLE_OK)
			r = abox_error_setx(err, c == CURLE_COULDNT_CONNECT ? ECONNREFUSED : EIO, "%s %s (daemon %s%s): %s",
					    q->method, q->path, rm->unix_path ? "unix:" : "",
					    rm->unix_path ? rm->unix_path : rm->base, curl_easy_strerror(c));
		else if (status < 200 || status > 299)
			r = server_error(status, b, q, err);
		if (!resp || r < 0)
			rbuf_free(b == &local ? &local : b);
		return r;
	}
}

int remote_rpc(abox_sandbox *sb, const char *service, const char *method, const char *user, json_object *body,
	       json_object **out, abox_error *err)
{
	char path[256];
	snprintf(path, sizeof(path), "/%s/%s", service, method);
	const char *s = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
	struct rreq q = { .method = "POST", .path = path, .body = s, .body_len = strlen(s), .sandbox = sb->id,
			  .user = user, .token = sb->remote->token,
			  /* reads are safe to repeat */
			  .idempotent = !strcmp(method, "Stat") || !strcmp(method, "ListDir") || !strcmp(method, "List") };
	struct rbuf b = { .max = 64u << 20 };
	int r = remote_call(sb->ctx->remote, &q, &b, NULL, err);
	if (r < 0)
		return r;
	if (out) {
		*out = remote_json(&b, method, err);
		r = *out ? 0 : -EPROTO;
	}
	rbuf_free(&b);
	return r;
}
