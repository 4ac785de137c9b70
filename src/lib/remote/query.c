/* remote/query.c — the sandbox lists of aboxd's control plane: one
 * page of a filtered query (GET /v2/sandboxes, its paging token and E2B's
 * metadata filter) and every id of one query. Not here: one sandbox's
 * info (sandbox.c). Runs in the caller's process. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "remote/remote.h"

/* "k=v&k2=v2", URL-escaped as one query value (E2B's metadata filter) */
static char *metadata_query(CURL *h, const char *const *md)
{
	size_t n = 1;
	for (size_t i = 0; md && md[i]; i++)
		n += strlen(md[i]) * 3 + 1;
	char *raw = calloc(1, n), *esc = NULL;
	if (!raw)
		return NULL;
	for (size_t i = 0; md && md[i]; i++) {
		if (i)
			strcat(raw, "&");
		char *e = curl_easy_escape(h, md[i], 0);
		/* keep the '=' between key and value, escaped once more below */
		if (e) {
			char *eq = strstr(e, "%3D");
			if (eq) {
				*eq = '\0';
				strcat(raw, e);
				strcat(raw, "=");
				strcat(raw, eq + 3);
			} else {
				strcat(raw, e);
			}
			curl_free(e);
		}
	}
	char *e = curl_easy_escape(h, raw, 0);
	free(raw);
	if (e) {
		esc = strdup(e);
		curl_free(e);
	}
	return esc;
}

/* Appends to buf at *k; false (and buf unchanged past *k) when it does
 * not fit. */
static bool append(char *buf, size_t n, size_t *k, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static bool append(char *buf, size_t n, size_t *k, const char *fmt, ...)
{
	if (*k >= n)
		return false;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(buf + *k, n - *k, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= n - *k) {
		buf[*k] = '\0';
		return false;
	}
	*k += (size_t)w;
	return true;
}

int remote_query(abox_ctx *ctx, const abox_list_opts *o, abox_sandbox_info **infos, size_t *n, char **next,
		 abox_error *err)
{
	abox_list_opts d = ABOX_LIST_OPTS_INIT;
	if (!o)
		o = &d;
	*infos = NULL;
	*n = 0;
	if (next)
		*next = NULL;
	if (o->state == ABOX_STATE_DEAD)
		return 0; /* the daemon hands out no dead sandboxes */
	char path[4096];
	size_t k = 0;
	bool ok = append(path, sizeof(path), &k, "/v2/sandboxes?state=%s",
			 o->state == ABOX_STATE_RUNNING ? "running"
			 : o->state == ABOX_STATE_PAUSED ? "paused"
							 : "running,paused");
	if (ok && o->limit)
		ok = append(path, sizeof(path), &k, "&limit=%u", o->limit > 100 ? 100 : o->limit);
	if (ok && o->next_token && *o->next_token) {
		char *e = curl_easy_escape(ctx->remote->easy, o->next_token, 0);
		ok = e && append(path, sizeof(path), &k, "&nextToken=%s", e);
		curl_free(e);
	}
	if (ok && o->metadata && o->metadata[0]) {
		char *mq = metadata_query(ctx->remote->easy, o->metadata);
		if (!mq)
			return abox_error_set(err, ENOMEM, "list");
		ok = append(path, sizeof(path), &k, "&metadata=%s", mq);
		free(mq);
	}
	if (!ok)
		return abox_error_setx(err, E2BIG, "list: the page token or the metadata filter is too long");
	char *tok = NULL;
	struct rreq q = { .method = "GET", .path = path, .idempotent = true, .next_token = &tok };
	json_object *j;
	int r = remote_call_json(ctx->remote, &q, "list", &j, err);
	if (r < 0 || (r = remote_want_array(j, "list", err)) < 0) {
		free(tok);
		return r;
	}
	size_t cnt = json_object_array_length(j);
	abox_sandbox_info *v = calloc(cnt ? cnt : 1, sizeof(*v));
	if (!v) {
		json_object_put(j);
		free(tok);
		return abox_error_set(err, ENOMEM, "list");
	}
	for (size_t i = 0; i < cnt; i++) {
		v[i].version = ABOX_SANDBOX_INFO_VERSION;
		remote_info_from(json_object_array_get_idx(j, i), &v[i]);
	}
	json_object_put(j);
	*infos = v;
	*n = cnt;
	if (next)
		*next = tok;
	else
		free(tok);
	return 0;
}


/* The ids of one query, every page. */
int remote_list(abox_ctx *ctx, char ***ids, abox_error *err)
{
	abox_list_opts o = ABOX_LIST_OPTS_INIT;
	abox_sandbox_info *v = NULL;
	size_t n = 0;
	int r = remote_query(ctx, &o, &v, &n, NULL, err);
	if (r < 0)
		return r;
	char **ids_out = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		if (ids_out)
			ids_out[i] = strdup(v[i].id);
		abox_sandbox_info_clear(&v[i]);
	}
	free(v);
	if (!ids_out)
		return abox_error_set(err, ENOMEM, "list");
	*ids = ids_out;
	return 0;
}
