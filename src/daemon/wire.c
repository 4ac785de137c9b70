/* wire.c — the parsers of aboxd's untrusted input, kept free of the
 * server around them so a fuzzer can drive them (tests/fuzz/fuzz_daemon.c):
 * Connect envelopes, JSON bodies with a depth limit, the twice-encoded
 * metadata filter, sandbox hosts, Basic credentials. */
#include <ctype.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "wire.h"

int connect_unframe(const char *buf, size_t len, const char **msg, size_t *mlen, char *why, size_t whyn)
{
	if (len < 5) {
		snprintf(why, whyn, "a Connect envelope needs 5 header bytes, the body has %zu", len);
		return -1;
	}
	if ((unsigned char)buf[0] != 0) {
		snprintf(why, whyn, "envelope flags 0x%02x: compressed or end-of-stream messages are not accepted here",
			 (unsigned char)buf[0]);
		return -1;
	}
	uint32_t n = (uint32_t)(unsigned char)buf[1] << 24 | (uint32_t)(unsigned char)buf[2] << 16 |
		     (uint32_t)(unsigned char)buf[3] << 8 | (unsigned char)buf[4];
	if (n != len - 5) {
		snprintf(why, whyn, "the envelope says %u bytes, the body has %zu (one message per request)", n, len - 5);
		return -1;
	}
	*msg = buf + 5;
	*mlen = n;
	return 0;
}

json_object *json_parse_object(const char *buf, size_t len, char *why, size_t whyn)
{
	if (len > INT32_MAX) {
		snprintf(why, whyn, "the body is too large");
		return NULL;
	}
	json_tokener *tok = json_tokener_new_ex(WIRE_MAX_JSON_DEPTH);
	if (!tok) {
		snprintf(why, whyn, "out of memory");
		return NULL;
	}
	json_object *o = json_tokener_parse_ex(tok, buf, (int)len);
	enum json_tokener_error je = json_tokener_get_error(tok);
	/* all of it must be the one value */
	if (je == json_tokener_success && json_tokener_get_parse_end(tok) < len) {
		size_t at = json_tokener_get_parse_end(tok);
		while (at < len && isspace((unsigned char)buf[at]))
			at++;
		if (at < len) {
			json_object_put(o);
			json_tokener_free(tok);
			snprintf(why, whyn, "trailing bytes after the JSON value");
			return NULL;
		}
	}
	json_tokener_free(tok);
	if (je != json_tokener_success || !o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		snprintf(why, whyn, "the body is not a JSON object (%s)",
			 je != json_tokener_success ? json_tokener_error_desc(je) : "another JSON value");
		return NULL;
	}
	return o;
}

char **metadata_query(const char *raw, const char *extra)
{
	char *s = strdup(raw ? raw : "");
	if (!s)
		return NULL;
	/* libmicrohttpd decoded it once; the SDKs encoded it twice */
	MHD_http_unescape(s);
	size_t n = 2;
	for (const char *p = s; *p; p++)
		n += *p == '&';
	char **v = calloc(n + 1, sizeof(char *));
	size_t k = 0;
	for (char *save = NULL, *t = strtok_r(s, "&", &save); v && t; t = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(t, '=');
		if (!eq || eq == t)
			continue;
		*eq = '\0';
		MHD_http_unescape(t);
		MHD_http_unescape(eq + 1);
		/* abox's own entries are not a client's to filter on */
		if (!strncmp(t, "_abox", 5))
			continue;
		if (asprintf(&v[k], "%s=%s", t, eq + 1) >= 0)
			k++;
	}
	if (v && extra && (v[k] = strdup(extra)))
		k++;
	free(s);
	return v;
}

static bool id_chars(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]))
			return false;
	return n == 20;
}

bool sandbox_host(const char *host, char id[21], unsigned *port)
{
	if (!host)
		return false;
	const char *dash = strchr(host, '-'), *dot = dash ? strchr(dash, '.') : NULL;
	if (!dash || !dot || dash == host || dash - host > 5 || !id_chars(dash + 1, (size_t)(dot - dash - 1)))
		return false;
	for (const char *p = host; p < dash; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	unsigned long pt = strtoul(host, NULL, 10);
	if (pt == 0 || pt > 65535)
		return false;
	memcpy(id, dash + 1, 20);
	id[20] = '\0';
	*port = (unsigned)pt;
	return true;
}

bool sandbox_id_ok(const char *id)
{
	return id && id_chars(id, strlen(id));
}

int basic_user(const char *auth, char *user, size_t n)
{
	snprintf(user, n, "user");
	if (!auth || strncmp(auth, "Basic ", 6) != 0)
		return 0;
	unsigned char *raw;
	size_t len;
	if (base64_decode(auth + 6, &raw, &len) < 0)
		return -1;
	size_t name = 0;
	while (name < len && raw[name] != ':')
		name++;
	int r = 0;
	if (name == 4 && !memcmp(raw, "root", 4))
		snprintf(user, n, "root");
	else if (!(name == 0 || (name == 4 && !memcmp(raw, "user", 4))))
		r = -1; /* abox has `user` and `root` */
	free(raw);
	return r;
}
