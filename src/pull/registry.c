/* registry.c — see registry.h. One curl handle, reset per request.
 *
 * Security steps, each against a registry (or someone on its path) that
 * lies:
 *  - redirects stay on https unless the registry itself is plain HTTP,
 *    and our Authorization header is never sent to another host (blob
 *    redirects go to storage services);
 *  - a token server on plain http is refused for an https registry (the
 *    credentials sent to it would travel in the clear);
 *  - every body is bounded by the sink (a manifest's 4 MiB, a blob's
 *    declared size), so an endless answer cannot fill memory or disk;
 *  - headers we keep are length-checked copies. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/json.h"
#include "registry.h"

#ifndef ABOX_VERSION
#define ABOX_VERSION "0"
#endif

struct xfer {
	struct registry *reg;
	struct fetch *f; /* NULL: a token request */
	char challenge[2048];
	char content_range[128];
	char *body; /* an error answer, or a token server's answer */
	size_t body_len, body_max;
	bool restarted;
};

static void keep_header(char *dst, size_t dn, const char *v, size_t vn)
{
	while (vn && (v[vn - 1] == '\r' || v[vn - 1] == '\n' || v[vn - 1] == ' '))
		vn--;
	while (vn && (*v == ' ' || *v == '\t'))
		v++, vn--;
	if (vn >= dn)
		vn = dn - 1;
	memcpy(dst, v, vn);
	dst[vn] = '\0';
}

static size_t on_header(char *buf, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;
	if (n >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
		/* a new answer (after a redirect or a 100): forget the last one's */
		x->challenge[0] = x->content_range[0] = '\0';
		if (x->f)
			x->f->content_type[0] = x->f->digest[0] = '\0';
		return n;
	}
	const char *colon = memchr(buf, ':', n);
	if (!colon)
		return n;
	size_t kn = (size_t)(colon - buf), vn = n - kn - 1;
	const char *v = colon + 1;
	if (kn == 16 && strncasecmp(buf, "www-authenticate", kn) == 0 && !x->challenge[0])
		keep_header(x->challenge, sizeof(x->challenge), v, vn);
	else if (kn == 13 && strncasecmp(buf, "content-range", kn) == 0)
		keep_header(x->content_range, sizeof(x->content_range), v, vn);
	else if (x->f && kn == 12 && strncasecmp(buf, "content-type", kn) == 0)
		keep_header(x->f->content_type, sizeof(x->f->content_type), v, vn);
	else if (x->f && kn == 21 && strncasecmp(buf, "docker-content-digest", kn) == 0)
		keep_header(x->f->digest, sizeof(x->f->digest), v, vn);
	return n;
}

static bool keep_body(struct xfer *x, const char *data, size_t n)
{
	if (x->body_len + n > x->body_max)
		return x->f != NULL; /* an error answer is only read in part; a token must fit */
	char *nb = realloc(x->body, x->body_len + n + 1);
	if (!nb)
		return false;
	memcpy(nb + x->body_len, data, n);
	x->body = nb;
	x->body_len += n;
	x->body[x->body_len] = '\0';
	return true;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;
	long code = 0;
	curl_easy_getinfo(x->reg->curl, CURLINFO_RESPONSE_CODE, &code);
	if (!x->f || code < 200 || code > 299)
		return keep_body(x, data, n) ? n : 0;
	struct fetch *f = x->f;
	if (f->from && !x->restarted) {
		/* a Range request: a 206 must start where we asked, a 200 is
		 * the whole body again */
		x->restarted = true;
		char want[64];
		snprintf(want, sizeof(want), "bytes %llu-", (unsigned long long)f->from);
		bool resumed = code == 206 && strncmp(x->content_range, want, strlen(want)) == 0;
		if (!resumed && (code == 206 || !f->restart || !f->restart(f->ud))) {
			snprintf(x->reg->err, sizeof(x->reg->err),
				 "the registry answered a resumed download "
				 "with another range ('%s')",
				 x->content_range);
			f->sink_stopped = true;
			return 0;
		}
	}
	if (!f->sink(data, n, f->ud)) {
		f->sink_stopped = true;
		return 0;
	}
	return n;
}

static void common(struct registry *reg, struct xfer *x, const char *url)
{
	CURL *c = reg->curl;
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, reg->plain_http ? "http,https" : "https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(c, CURLOPT_UNRESTRICTED_AUTH, 0L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
	/* a registry that stops sending: give up on this attempt (a blob is
	 * resumed), never hang */
	long stall = 60;
	const char *e = getenv("ABOX_PULL_STALL_SECONDS");
	if (e && atol(e) > 0)
		stall = atol(e);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, stall);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "abox-pull/" ABOX_VERSION);
	if (reg->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, reg->ca_file);
	if (reg->no_verify) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
}

int registry_init(struct registry *reg)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || !(reg->curl = curl_easy_init())) {
		snprintf(reg->err, sizeof(reg->err), "libcurl could not start");
		return -1;
	}
	return 0;
}

void registry_free(struct registry *reg)
{
	if (reg->curl)
		curl_easy_cleanup(reg->curl);
	reg->curl = NULL;
	free(reg->authz);
	reg->authz = NULL;
}

/* The registry's own words from an error answer:
 * {"errors": [{"code": "MANIFEST_UNKNOWN", "message": "..."}]}. */
static void registry_words(const char *body, char *out, size_t n)
{
	out[0] = '\0';
	json_object *o = body ? js_parse_object(body, 8) : NULL;
	json_object *errs = js_get(o, "errors", json_type_array);
	json_object *e0 = errs && json_object_array_length(errs) ? json_object_array_get_idx(errs, 0) : NULL;
	const char *code = js_str(e0, "code"), *msg = js_str(e0, "message");
	if (code || msg)
		snprintf(out, n, " (%.60s%s%.200s)", code ? code : "", code && msg ? ": " : "",
			 msg ? msg : "");
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
	json_object_put(o);
}

static void curl_failed(struct registry *reg, CURLcode rc, const char *ebuf, const char *what)
{
	snprintf(reg->err, sizeof(reg->err), "%s %s: %s", what, reg->ref->registry,
		 ebuf[0] ? ebuf : curl_easy_strerror(rc));
	if (rc == CURLE_PEER_FAILED_VERIFICATION)
		snprintf(reg->err + strlen(reg->err), sizeof(reg->err) - strlen(reg->err),
			 " (give the registry's CA with --ca-file, or --tls-verify=false)");
}

/* Asks the challenge's token server for a pull token (with our
 * credentials when we have them); sets reg->authz. */
static int fetch_token(struct registry *reg, const struct challenge *ch)
{
	if (strncmp(ch->realm, "http://", 7) == 0 && !reg->plain_http) {
		snprintf(reg->err, sizeof(reg->err),
			 "the registry's token server %.300s is plain http: refused "
			 "(credentials would travel in the clear)",
			 ch->realm);
		return -1;
	}
	char scope[600];
	if (ch->scope[0])
		snprintf(scope, sizeof(scope), "%s", ch->scope);
	else
		snprintf(scope, sizeof(scope), "repository:%s:pull", reg->ref->repo);
	char *es = curl_easy_escape(reg->curl, scope, 0), *sv = curl_easy_escape(reg->curl, ch->service, 0);
	size_t ul = strlen(ch->realm) + (es ? strlen(es) : 0) + (sv ? strlen(sv) : 0) + 32;
	char *url = malloc(ul);
	if (!es || !sv || !url) {
		curl_free(es);
		curl_free(sv);
		free(url);
		snprintf(reg->err, sizeof(reg->err), "out of memory");
		return -1;
	}
	snprintf(url, ul, "%s%sservice=%s&scope=%s", ch->realm, strchr(ch->realm, '?') ? "&" : "?", sv, es);
	curl_free(es);
	curl_free(sv);
	struct xfer x = { .reg = reg, .body_max = PULL_MAX_TOKEN };
	char ebuf[CURL_ERROR_SIZE] = "";
	common(reg, &x, url);
	curl_easy_setopt(reg->curl, CURLOPT_ERRORBUFFER, ebuf);
	if (reg->user) {
		curl_easy_setopt(reg->curl, CURLOPT_USERNAME, reg->user);
		curl_easy_setopt(reg->curl, CURLOPT_PASSWORD, reg->pass ? reg->pass : "");
	}
	CURLcode rc = curl_easy_perform(reg->curl);
	free(url);
	long code = 0;
	curl_easy_getinfo(reg->curl, CURLINFO_RESPONSE_CODE, &code);
	int r = -1;
	if (rc != CURLE_OK) {
		curl_failed(reg, rc, ebuf, "token server of");
	} else if (code == 401 || code == 403) {
		snprintf(reg->err, sizeof(reg->err), "%s refused %s to pull %s%s", reg->ref->registry,
			 reg->user ? "the credentials given" : "anonymous access", reg->ref->repo,
			 reg->user ? ""
				   : " (give credentials with --username and --password-stdin, or a config "
				     "file)");
	} else if (code != 200) {
		snprintf(reg->err, sizeof(reg->err), "token server of %s answered %ld", reg->ref->registry,
			 code);
	} else {
		char *tok = token_parse(x.body, x.body_len);
		if (!tok) {
			snprintf(reg->err, sizeof(reg->err), "token server of %s sent no usable token",
				 reg->ref->registry);
		} else {
			free(reg->authz);
			reg->authz = NULL;
			if (asprintf(&reg->authz, "Bearer %s", tok) > 0)
				r = 0;
			free(tok);
		}
	}
	free(x.body);
	return r;
}

static int basic_auth(struct registry *reg)
{
	if (!reg->user) {
		snprintf(reg->err, sizeof(reg->err),
			 "%s asks for a user name and password to pull %s (give them "
			 "with --username and --password-stdin, or a config file)",
			 reg->ref->registry, reg->ref->repo);
		return -1;
	}
	char *up = NULL;
	if (asprintf(&up, "%s:%s", reg->user, reg->pass ? reg->pass : "") < 0)
		return -1;
	char *b = base64_encode(up, strlen(up));
	free(up);
	free(reg->authz);
	reg->authz = NULL;
	int r = b && asprintf(&reg->authz, "Basic %s", b) > 0 ? 0 : -1;
	free(b);
	return r;
}

static bool transient_code(CURLcode rc)
{
	switch (rc) {
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_GOT_NOTHING:
	case CURLE_COULDNT_CONNECT:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return true;
	default:
		return false;
	}
}

int registry_get(struct registry *reg, struct fetch *f)
{
	bool authed = false, scheme_tried = false;
	for (;;) {
		char url[1024];
		snprintf(url, sizeof(url), "%s://%s/v2/%s/%s", reg->plain_http ? "http" : "https",
			 reg->ref->registry, reg->ref->repo, f->path);
		struct xfer x = { .reg = reg, .f = f, .body_max = 4096 };
		char ebuf[CURL_ERROR_SIZE] = "";
		common(reg, &x, url);
		curl_easy_setopt(reg->curl, CURLOPT_ERRORBUFFER, ebuf);
		struct curl_slist *h = NULL;
		char line[128];
		if (f->accept) {
			char *a = NULL;
			if (asprintf(&a, "Accept: %s", f->accept) > 0)
				h = curl_slist_append(h, a);
			free(a);
		}
		if (reg->authz) {
			char *a = NULL;
			if (asprintf(&a, "Authorization: %s", reg->authz) > 0)
				h = curl_slist_append(h, a);
			free(a);
		}
		if (f->from) {
			snprintf(line, sizeof(line), "Range: bytes=%llu-", (unsigned long long)f->from);
			h = curl_slist_append(h, line);
		}
		curl_easy_setopt(reg->curl, CURLOPT_HTTPHEADER, h);
		f->sink_stopped = false;
		f->transient = 0;
		CURLcode rc = curl_easy_perform(reg->curl);
		curl_slist_free_all(h);
		curl_easy_getinfo(reg->curl, CURLINFO_RESPONSE_CODE, &f->status);
		if (f->sink_stopped) {
			free(x.body);
			return -1;
		}
		/* docker's rule for a registry on this machine: https first,
		 * plain http when the other end does not speak TLS */
		if (rc == CURLE_SSL_CONNECT_ERROR && !reg->plain_http && !scheme_tried &&
		    ref_loopback(reg->ref)) {
			scheme_tried = true;
			reg->plain_http = true;
			free(x.body);
			continue;
		}
		if (rc != CURLE_OK) {
			curl_failed(reg, rc, ebuf, "pull from");
			f->transient = transient_code(rc);
			free(x.body);
			return -1;
		}
		if (f->status == 401 && !authed) {
			struct challenge ch;
			authed = true;
			int r = challenge_parse(x.challenge, &ch);
			if (r < 0)
				snprintf(reg->err, sizeof(reg->err),
					 "%s asks for authentication in a way abox does not "
					 "know ('%.200s')",
					 reg->ref->registry, x.challenge);
			else
				r = ch.scheme == AUTH_BEARER ? fetch_token(reg, &ch) : basic_auth(reg);
			free(x.body);
			if (r < 0)
				return -1;
			continue;
		}
		if (f->status >= 200 && f->status <= 299) {
			free(x.body);
			return 0;
		}
		char words[300];
		registry_words(x.body, words, sizeof(words));
		free(x.body);
		if (f->status == 401 || f->status == 403)
			snprintf(reg->err, sizeof(reg->err), "%s refused %s to pull %s%s", reg->ref->registry,
				 reg->user ? "the credentials given" : "anonymous access", reg->ref->repo,
				 words);
		else if (f->status == 404 && strncmp(f->path, "manifests/", 10) == 0)
			snprintf(reg->err, sizeof(reg->err), "%s has no image %s%s%s%s", reg->ref->registry,
				 reg->ref->repo, strncmp(f->path + 10, "sha256:", 7) == 0 ? "@" : ":",
				 f->path + 10, words);
		else if (f->status == 404)
			snprintf(reg->err, sizeof(reg->err), "%s lacks %s of %s%s", reg->ref->registry,
				 f->path + 6, reg->ref->repo, words);
		else if (f->status == 429)
			snprintf(reg->err, sizeof(reg->err),
				 "%s is rate limiting pulls (429 Too Many Requests)%s; try "
				 "again later, or pull with credentials",
				 reg->ref->registry, words);
		else
			snprintf(reg->err, sizeof(reg->err), "%s answered %ld to GET %s%s",
				 reg->ref->registry, f->status, f->path, words);
		f->transient = f->status >= 500 || f->status == 429;
		return -1;
	}
}
