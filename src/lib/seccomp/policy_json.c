/* seccomp/policy_json.c — reads the bytes of a policy into a json-c tree,
 * with the limits and the strictness json-c lacks.
 *
 * What it does: size and NUL checks, json-c in strict mode with a depth
 * limit and UTF-8 validation, the whole input consumed, then a scan of the
 * text for what json-c accepts silently (see scan_raw). What it does not
 * do: look at the meaning of the fields (policy_parse.c, policy_fields.c).
 * Runs in the CLI/daemon, on untrusted input. */
#include <stdio.h>
#include <string.h>

#include "seccomp/policy_internal.h"

#define MAX_FIELDS 32 /* per object; no object of the schema has more than 9 */

static int fail(const char *source, abox_error *err, int code, const char *where, const char *fmt,
		...) _printf_(5, 6);
static int fail(const char *source, abox_error *err, int code, const char *where, const char *fmt,
		...)
{
	char msg[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (where)
		abox_error_setx(err, code, "%s: %s: %s", source, where, msg);
	else
		abox_error_setx(err, code, "%s: %s", source, msg);
	return -code; /* always < 0: every caller passes a real errno */
}

/* Copies an untrusted string for a message: bounded, printable only, so a
 * policy cannot forge extra lines or escape sequences in logs. */
const char *policy_show(const char *s, char *buf, size_t n)
{
	size_t i = 0, j = 0;
	for (; s[i] && j + 4 < n && i < 48; i++)
		buf[j++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (s[i] && j + 4 < n) {
		memcpy(buf + j, "...", 3);
		j += 3;
	}
	buf[j] = '\0';
	return buf;
}

static unsigned line_of(const char *s, size_t off)
{
	unsigned line = 1;
	for (size_t i = 0; i < off; i++)
		line += s[i] == '\n';
	return line;
}

struct frame {
	bool object, expect_key;
	unsigned n_keys;
	size_t key_off[MAX_FIELDS];
	size_t key_len[MAX_FIELDS];
};

/* Runs after json-c accepted the text, for what json-c lets through:
 * duplicate fields (json-c keeps the last one, so a reviewer reading the
 * first "action" would approve a policy that does something else),
 * single-quoted strings, and integers out of range (json-c clamps them
 * silently to INT64_MIN/UINT64_MAX). */
static int scan_raw(const char *source, abox_error *err, const char *s, size_t len)
{
	struct frame st[POLICY_MAX_DEPTH + 1];
	int top = -1;
	char where[32];
	/* The line is only counted for a message: counting it for every
	 * byte would make the scan quadratic. */
#define WHERE() (snprintf(where, sizeof(where), "line %u", line_of(s, i)), where)

	for (size_t i = 0; i < len; i++) {
		char ch = s[i];
		switch (ch) {
		case '{':
		case '[':
			if (top + 1 >= (int)ELEMENTSOF(st))
				return fail(source, err, E2BIG, WHERE(),
					    "nested deeper than %u levels", POLICY_MAX_DEPTH);
			top++;
			st[top].object = ch == '{';
			st[top].expect_key = ch == '{';
			st[top].n_keys = 0;
			break;
		case '}':
		case ']':
			if (top >= 0)
				top--;
			break;
		case ',':
			if (top >= 0 && st[top].object)
				st[top].expect_key = true;
			break;
		case '\'':
			return fail(source, err, EINVAL, WHERE(),
				    "single-quoted strings are not JSON");
		case '"': {
			size_t start = ++i;
			bool escaped = false;
			while (i < len && s[i] != '"') {
				if (s[i] == '\\') {
					escaped = true;
					i++;
				}
				i++;
			}
			if (i >= len)
				return fail(source, err, EINVAL, WHERE(), "unterminated string");
			if (top < 0 || !st[top].object || !st[top].expect_key)
				break;
			struct frame *f = &st[top];
			size_t klen = i - start;
			char shown[64], tmp[64];
			snprintf(tmp, sizeof(tmp), "%.*s", (int)(klen < 60 ? klen : 60), s + start);
			/* An escaped key could spell a known field in disguise
			 * ("\u0061ction") next to the plain one. */
			if (escaped)
				return fail(source, err, EINVAL, WHERE(),
					    "escape sequence in field name '%s'",
					    policy_show(tmp, shown, sizeof(shown)));
			for (unsigned k = 0; k < f->n_keys; k++)
				if (f->key_len[k] == klen &&
				    memcmp(s + f->key_off[k], s + start, klen) == 0)
					return fail(source, err, EINVAL, WHERE(),
						    "duplicate field '%s'",
						    policy_show(tmp, shown, sizeof(shown)));
			if (f->n_keys == MAX_FIELDS)
				return fail(source, err, E2BIG, WHERE(),
					    "more than %u fields in one object", MAX_FIELDS);
			f->key_off[f->n_keys] = start;
			f->key_len[f->n_keys] = klen;
			f->n_keys++;
			f->expect_key = false;
			break;
		}
		case '-':
		case '0' ... '9': {
			size_t j = i + (ch == '-');
			bool integer = true;
			unsigned long long v = 0;
			bool overflow = false;
			for (;
			     j < len && ((s[j] >= '0' && s[j] <= '9') || s[j] == '.' ||
					 s[j] == 'e' || s[j] == 'E' || s[j] == '+' || s[j] == '-');
			     j++) {
				if (s[j] < '0' || s[j] > '9') {
					integer = false;
					continue;
				}
				unsigned d = (unsigned)(s[j] - '0');
				if (v > (UINT64_MAX - d) / 10)
					overflow = true;
				else
					v = v * 10 + d;
			}
			/* A negative integer below INT64_MIN overflows too, but
			 * every number of the schema is >= 0: the type check
			 * rejects it anyway. */
			if (integer && overflow)
				return fail(source, err, ERANGE, WHERE(),
					    "integer %.*s does not fit in 64 bits",
					    (int)(j - i < 40 ? j - i : 40), s + i);
			i = j - 1;
			break;
		}
		default: break;
		}
	}
	return 0;
#undef WHERE
}

static bool only_space(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
			return false;
	return true;
}

int policy_json_read(const char *json, size_t len, const char *source, json_object **out,
		     abox_error *err)
{
	if (!json || len == 0)
		return fail(source, err, EINVAL, NULL, "empty policy");
	if (len > POLICY_MAX_BYTES)
		return fail(source, err, EFBIG, NULL, "%zu bytes, above the limit of %u", len,
			    POLICY_MAX_BYTES);
	if (memchr(json, '\0', len))
		return fail(source, err, EINVAL, NULL, "contains a NUL byte");

	json_tokener *tok = json_tokener_new_ex(POLICY_MAX_DEPTH);
	if (!tok)
		return fail(source, err, ENOMEM, NULL, "out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	json_object *root = json_tokener_parse_ex(tok, json, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	size_t end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	char where[32];
	if (jerr != json_tokener_success) {
		json_object_put(root);
		if (jerr == json_tokener_continue)
			return fail(source, err, EINVAL, NULL, "unexpected end of input");
		snprintf(where, sizeof(where), "line %u", line_of(json, end < len ? end : len));
		return fail(source, err, jerr == json_tokener_error_depth ? E2BIG : EINVAL, where,
			    "malformed JSON: %s", json_tokener_error_desc(jerr));
	}
	int r = 0;
	if (!only_space(json + end, len - end)) {
		snprintf(where, sizeof(where), "line %u", line_of(json, end));
		r = fail(source, err, EINVAL, where, "trailing data after the JSON object");
	} else if (!root || !json_object_is_type(root, json_type_object))
		r = fail(source, err, EINVAL, NULL, "the top level must be an object");
	else
		r = scan_raw(source, err, json, len);
	if (r < 0) {
		json_object_put(root);
		return r;
	}
	*out = root;
	return 0;
}
