/* wire.c — the parsers of aboxd's untrusted input, kept free of the
 * server around them so a fuzzer can drive them (tests/fuzz/fuzz_daemon.c):
 * Connect envelopes, JSON bodies with a depth limit, the twice-encoded
 * metadata filter, sandbox hosts, Basic credentials. */
#include <ctype.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/accounts.h"
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

/* A second look at a body json-c accepted, for what json-c lets through
 * silently: a name given twice in one object (json-c keeps the last, so
 * a client and a proxy that checked the first disagree about what was
 * asked), and NUL bytes in strings (C strings end there: "base\u0000x"
 * would be taken as "base"), and what json-c takes beyond JSON even in its
 * strict mode (single-quoted names). The input is what json-c parsed, no
 * deeper than WIRE_MAX_JSON_DEPTH, which bounds the recursion. */
struct scan {
	const char *p, *end;
	char *why;
	size_t whyn;
};

static void skip_ws(struct scan *s)
{
	while (s->p < s->end) {
		if (isspace((unsigned char)*s->p)) {
			s->p++;
		} else if (s->end - s->p >= 2 && s->p[0] == '/' && s->p[1] == '*') {
			const char *e = memmem(s->p + 2, (size_t)(s->end - s->p - 2), "*/", 2);
			s->p = e ? e + 2 : s->end;
		} else if (s->end - s->p >= 2 && s->p[0] == '/' && s->p[1] == '/') {
			const char *e = memchr(s->p, '\n', (size_t)(s->end - s->p));
			s->p = e ? e + 1 : s->end;
		} else {
			return;
		}
	}
}

static void put_utf8(char *out, size_t *n, uint32_t c)
{
	if (c < 0x80) {
		out[(*n)++] = (char)c;
	} else if (c < 0x800) {
		out[(*n)++] = (char)(0xc0 | c >> 6);
		out[(*n)++] = (char)(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		out[(*n)++] = (char)(0xe0 | c >> 12);
		out[(*n)++] = (char)(0x80 | (c >> 6 & 0x3f));
		out[(*n)++] = (char)(0x80 | (c & 0x3f));
	} else {
		out[(*n)++] = (char)(0xf0 | c >> 18);
		out[(*n)++] = (char)(0x80 | (c >> 12 & 0x3f));
		out[(*n)++] = (char)(0x80 | (c >> 6 & 0x3f));
		out[(*n)++] = (char)(0x80 | (c & 0x3f));
	}
}

static int hex4(const char *p, const char *end, uint32_t *out)
{
	if (end - p < 4)
		return -1;
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) {
		int c = (unsigned char)p[i];
		v = v << 4 | (uint32_t)(isdigit(c) ? c - '0' : isxdigit(c) ? (tolower(c) - 'a' + 10) : 0);
		if (!isxdigit(c))
			return -1;
	}
	*out = v;
	return 0;
}

/* A string at s->p (its quote): decoded into a malloc'd *out (NULL when
 * out is NULL); *nul: whether it holds a NUL. -1 when malformed. */
static int scan_string(struct scan *s, char **out, size_t *outn, bool *nul)
{
	s->p++;
	const char *start = s->p;
	char *buf = NULL;
	size_t n = 0;
	*nul = false;
	while (s->p < s->end && *s->p != '"')
		s->p += *s->p == '\\' && s->p + 1 < s->end ? 2 : 1;
	if (s->p >= s->end)
		return -1;
	/* a decoded string is never longer than its escaped form */
	if (out && !(buf = malloc((size_t)(s->p - start) + 1)))
		return -1;
	for (const char *c = start; c < s->p; c++) {
		uint32_t cp = (unsigned char)*c;
		if (*c == '\\') {
			c++;
			switch (*c) {
			case 'b': cp = '\b'; break;
			case 'f': cp = '\f'; break;
			case 'n': cp = '\n'; break;
			case 'r': cp = '\r'; break;
			case 't': cp = '\t'; break;
			case 'u':
				if (hex4(c + 1, s->p, &cp) < 0) {
					free(buf);
					return -1;
				}
				c += 4;
				uint32_t lo;
				if (cp >= 0xd800 && cp < 0xdc00 && s->p - c >= 7 && c[1] == '\\' && c[2] == 'u' &&
				    hex4(c + 3, s->p, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					c += 6;
				}
				break;
			default: cp = (unsigned char)*c; break;
			}
			*nul |= cp == 0;
			if (buf)
				put_utf8(buf, &n, cp);
			continue;
		}
		*nul |= cp == 0;
		if (buf)
			buf[n++] = *c;
	}
	s->p++;
	if (buf) {
		buf[n] = '\0';
		*out = buf;
		*outn = n;
	}
	return 0;
}

struct name {
	char *s;
	size_t n;
};

static int name_cmp(const void *a, const void *b)
{
	const struct name *x = a, *y = b;
	int c = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);
	return c ? c : (x->n > y->n) - (x->n < y->n);
}

static void sub_path(char *out, size_t n, const char *path, const char *name)
{
	snprintf(out, n, "%s%s%s", path, *path ? "." : "", name);
}

static int scan_value(struct scan *s, const char *path);

static int scan_object(struct scan *s, const char *path)
{
	struct name *names = NULL;
	size_t count = 0, cap = 0;
	int r = 0;
	s->p++;
	for (;;) {
		skip_ws(s);
		if (s->p < s->end && *s->p == '}') {
			s->p++;
			break;
		}
		if (s->p >= s->end || *s->p != '"') {
			r = -1;
			break;
		}
		struct name nm;
		bool nul;
		if (count == cap) {
			struct name *nn = realloc(names, (cap = cap ? cap * 2 : 16) * sizeof(*names));
			if (!nn) {
				snprintf(s->why, s->whyn, "out of memory");
				r = -2;
				break;
			}
			names = nn;
		}
		if (scan_string(s, &nm.s, &nm.n, &nul) < 0) {
			r = -1;
			break;
		}
		names[count++] = nm;
		char sub[256];
		sub_path(sub, sizeof(sub), path, nm.s);
		if (nul) {
			snprintf(s->why, s->whyn, "a name in '%s' holds a NUL byte", *path ? path : "the body");
			r = -2;
			break;
		}
		skip_ws(s);
		if (s->p >= s->end || *s->p != ':') {
			r = -1;
			break;
		}
		s->p++;
		if ((r = scan_value(s, sub)) < 0)
			break;
		skip_ws(s);
		if (s->p < s->end && *s->p == ',')
			s->p++;
	}
	if (r == 0 && count > 1) {
		qsort(names, count, sizeof(*names), name_cmp);
		for (size_t i = 1; i < count && r == 0; i++)
			if (name_cmp(&names[i - 1], &names[i]) == 0) {
				char sub[256];
				sub_path(sub, sizeof(sub), path, names[i].s);
				snprintf(s->why, s->whyn, "'%s' is given twice", sub);
				r = -2;
			}
	}
	for (size_t i = 0; i < count; i++)
		free(names[i].s);
	free(names);
	return r;
}

static int scan_value(struct scan *s, const char *path)
{
	skip_ws(s);
	if (s->p >= s->end)
		return -1;
	if (*s->p == '{')
		return scan_object(s, path);
	if (*s->p == '[') {
		s->p++;
		for (size_t i = 0;; i++) {
			skip_ws(s);
			if (s->p < s->end && *s->p == ']') {
				s->p++;
				return 0;
			}
			char sub[256];
			snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
			int r = scan_value(s, sub);
			if (r < 0)
				return r;
			skip_ws(s);
			if (s->p < s->end && *s->p == ',')
				s->p++;
			else if (s->p >= s->end || *s->p != ']')
				return -1;
		}
	}
	if (*s->p == '"') {
		bool nul;
		if (scan_string(s, NULL, NULL, &nul) < 0)
			return -1;
		if (nul) {
			snprintf(s->why, s->whyn, "'%s' holds a NUL byte", *path ? path : "the body");
			return -2;
		}
		return 0;
	}
	/* a number or a literal */
	const char *start = s->p;
	while (s->p < s->end && !strchr(",]}:", *s->p) && !isspace((unsigned char)*s->p) && *s->p != '/')
		s->p++;
	return s->p > start ? 0 : -1;
}

json_object *json_parse_object(const char *buf, size_t len, char *why, size_t whyn)
{
	if (len > INT32_MAX) {
		snprintf(why, whyn, "the body is too large");
		return NULL;
	}
	const char *zero = memchr(buf, 0, len);
	if (zero) {
		snprintf(why, whyn, "the body holds a NUL byte (at offset %zu)", (size_t)(zero - buf));
		return NULL;
	}
	json_tokener *tok = json_tokener_new_ex(WIRE_MAX_JSON_DEPTH);
	if (!tok) {
		snprintf(why, whyn, "out of memory");
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
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
	struct scan sc = { .p = buf, .end = buf + len, .why = why, .whyn = whyn };
	int r = scan_value(&sc, "");
	if (r < 0) {
		if (r == -1)
			snprintf(why, whyn, "the body is not a JSON object (unexpected bytes)");
		json_object_put(o);
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

bool sandbox_host(const char *host, char id[ABOX_ID_LEN + 1], unsigned *port)
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
	/* any user of the sandbox (init looks it up); an empty name is the
	 * default user, as the SDKs send "user:" or ":" */
	char who[ACCT_NAME_MAX + 1];
	size_t k = name < ACCT_NAME_MAX ? name : ACCT_NAME_MAX;
	for (size_t i = 0; i < k; i++) /* what an error message may quote */
		who[i] = raw[i] > 0x20 && raw[i] < 0x7f && raw[i] != '\'' ? (char)raw[i] : '?';
	who[k] = '\0';
	free(raw);
	if (name == 0)
		return 0;
	snprintf(user, n, "%s", who);
	return name <= ACCT_NAME_MAX && acct_name_ok(who) ? 0 : -1;
}

/* The readers below never coerce: a string where a number belongs, 1.5
 * where an integer belongs, -5 or 10^12 for a timeout are refused by name,
 * not read as the default (a client that sent them meant something else
 * than what it would get). null counts as absent, as the SDKs send it. */
static json_object *field(json_object *o, const char *k)
{
	json_object *v = NULL;
	return json_object_object_get_ex(o, k, &v) && !json_object_is_type(v, json_type_null) ? v : NULL;
}

/* A string (out: a const char *) or a boolean (out: a bool), of the one
 * type it must be. */
static int get_scalar(json_object *o, const char *k, json_type t, void *out, char *why, size_t whyn)
{
	json_object *v = field(o, k);
	if (!v)
		return 0;
	if (!json_object_is_type(v, t)) {
		snprintf(why, whyn, "%s must be %s", k, t == json_type_string ? "a string" : "true or false");
		return -1;
	}
	if (t == json_type_string)
		*(const char **)out = json_object_get_string(v);
	else
		*(bool *)out = json_object_get_boolean(v);
	return 1;
}

int json_get_string(json_object *o, const char *k, const char **out, char *why, size_t whyn)
{
	return get_scalar(o, k, json_type_string, out, why, whyn);
}

int json_get_int(json_object *o, const char *k, int64_t min, int64_t max, int64_t *out, char *why, size_t whyn)
{
	json_object *v = field(o, k);
	if (!v)
		return 0;
	int64_t x = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : 0;
	/* json-c clamps what does not fit in 64 bits to INT64_MAX/MIN */
	if (!json_object_is_type(v, json_type_int) || x < min || x > max || x == INT64_MAX || x == INT64_MIN) {
		snprintf(why, whyn, "%s must be an integer of %lld-%lld", k, (long long)min, (long long)max);
		return -1;
	}
	*out = x;
	return 1;
}

int json_get_bool(json_object *o, const char *k, bool *out, char *why, size_t whyn)
{
	return get_scalar(o, k, json_type_boolean, out, why, whyn);
}

char **json_string_map(json_object *o, const struct wire_map_bounds *b, size_t extra, char *why, size_t whyn)
{
	json_object *m = field(o, b->what);
	if (m && !json_object_is_type(m, json_type_object)) {
		snprintf(why, whyn, "%s must be an object of strings", b->what);
		return NULL;
	}
	size_t n = m ? (size_t)json_object_object_length(m) : 0, k = 0, total = 0;
	if (n > b->entries) {
		snprintf(why, whyn, "%s has %zu entries, at most %zu are allowed", b->what, n, b->entries);
		return NULL;
	}
	char **v = calloc(n + extra + 1, sizeof(char *));
	if (!v) {
		snprintf(why, whyn, "out of memory");
		return NULL;
	}
	if (!m)
		return v;
	json_object_object_foreach(m, key, val) {
		size_t kl = strlen(key), vl = json_object_is_type(val, json_type_string) ? (size_t)json_object_get_string_len(val) : 0;
		total += kl + vl;
		if (!json_object_is_type(val, json_type_string))
			snprintf(why, whyn, "%s.%s must be a string", b->what, key);
		else if (!kl || strchr(key, '='))
			snprintf(why, whyn, "%s: the name '%s' is empty or holds '='", b->what, key);
		else if (b->reserved && !strncmp(key, b->reserved, strlen(b->reserved)))
			snprintf(why, whyn, "%s: names starting with '%s' are reserved", b->what, b->reserved);
		else if (kl > b->name_bytes)
			snprintf(why, whyn, "%s: a name of %zu bytes, at most %zu are allowed", b->what, kl, b->name_bytes);
		else if (vl > b->value_bytes)
			snprintf(why, whyn, "%s.%.64s: a value of %zu bytes, at most %zu are allowed", b->what, key, vl,
				 b->value_bytes);
		else if (total > b->total_bytes)
			snprintf(why, whyn, "%s: more than %zu bytes of names and values in all", b->what, b->total_bytes);
		else if (asprintf(&v[k], "%s=%s", key, json_object_get_string(val)) < 0)
			snprintf(why, whyn, "out of memory");
		else {
			k++;
			continue;
		}
		for (size_t i = 0; i < k; i++)
			free(v[i]);
		free(v);
		return NULL;
	}
	return v;
}

const char *envd_user_path(const char *home, const char *path, char *buf, size_t n)
{
	if (!path || !path[0] || path[0] == '/')
		return path;
	const char *rest = path;
	if (rest[0] == '~' && (rest[1] == '\0' || rest[1] == '/'))
		rest += rest[1] ? 2 : 1;
	size_t hl = strlen(home);
	bool slash = *rest && (hl == 0 || home[hl - 1] != '/');
	int k = snprintf(buf, n, "%s%s%s", home, slash ? "/" : "", rest);
	return k < 0 || (size_t)k >= n ? path : buf;
}
