/* build/dockerfile.c — see dockerfile.h. */
#include <ctype.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base.h"
#include "build/dockerfile.h"

static const struct {
	const char *name;
	enum df_kind kind;
} kinds[] = {
	{ "FROM", DF_FROM },
	{ "RUN", DF_RUN },
	{ "COPY", DF_COPY },
	{ "ADD", DF_ADD },
	{ "ENV", DF_ENV },
	{ "ARG", DF_ARG },
	{ "WORKDIR", DF_WORKDIR },
	{ "USER", DF_USER },
	{ "LABEL", DF_LABEL },
	{ "CMD", DF_CMD },
	{ "ENTRYPOINT", DF_ENTRYPOINT },
	{ "EXPOSE", DF_EXPOSE },
	{ "SHELL", DF_SHELL },
};

/* Instructions docker has and abox's builder does not run: refused by
 * name, never skipped (a build that silently left out a HEALTHCHECK or a
 * VOLUME would not be the image its author meant). */
static const struct {
	const char *name, *why;
} refused[] = {
	{ "HEALTHCHECK", "abox templates have a readiness check instead (--ready-cmd)" },
	{ "ONBUILD", "triggers for later builds are not kept" },
	{ "VOLUME", "sandboxes have no volumes; their files are all in their own layer" },
	{ "STOPSIGNAL", "sandboxes are stopped by abox, not by a signal to a main process" },
	{ "MAINTAINER", "deprecated by docker; use LABEL maintainer=..." },
};

/* flags each instruction may carry; others are refused by name */
static const char *const allowed_flags[][4] = {
	[DF_FROM] = { "platform" },
	[DF_COPY] = { "from", "chown", "chmod", "link" },
	[DF_ADD] = { "chown", "chmod", "link" },
};

const char *df_kind_name(enum df_kind k)
{
	for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
		if (kinds[i].kind == k)
			return kinds[i].name;
	return "?";
}

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return -1;
}

struct buf {
	char *s;
	size_t len, cap;
};

static bool put(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *ns = realloc(b->s, cap);
		if (!ns)
			return false;
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return true;
}

static bool putc_(struct buf *b, char c)
{
	return put(b, &c, 1);
}

void dockerfile_free(struct dockerfile *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].text);
		strv_free(d->v[i].flags);
		free(d->v[i].rest);
		strv_free(d->v[i].json);
	}
	free(d->v);
	d->v = NULL;
	d->n = 0;
}

static char **json_form(const char *rest)
{
	json_object *o = json_tokener_parse(rest);
	if (!o || !json_object_is_type(o, json_type_array)) {
		json_object_put(o);
		return NULL;
	}
	size_t n = json_object_array_length(o);
	char **v = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; v && i < n; i++) {
		json_object *e = json_object_array_get_idx(o, i);
		if (!json_object_is_type(e, json_type_string) ||
		    !(v[i] = strdup(json_object_get_string(e)))) {
			strv_free(v);
			v = NULL;
		}
	}
	json_object_put(o);
	return v;
}

static bool heredoc(const char *rest)
{
	for (const char *p = strstr(rest, "<<"); p; p = strstr(p + 2, "<<")) {
		const char *q = p + 2;
		if (*q == '-')
			q++;
		if (*q == '"' || *q == '\'')
			q++;
		if (isalpha((unsigned char)*q) || *q == '_')
			return true;
	}
	return false;
}

/* One logical line: kind, flags, rest. */
static int instruction(struct dockerfile *d, unsigned line, char *text, char *err, size_t errlen)
{
	char *p = text;
	while (*p == ' ' || *p == '\t')
		p++;
	size_t wl = strcspn(p, " \t");
	char word[32];
	snprintf(word, sizeof(word), "%.*s", (int)(wl < 31 ? wl : 31), p);
	for (size_t i = 0; i < ELEMENTSOF(refused); i++)
		if (strcasecmp(word, refused[i].name) == 0)
			return fail(err, errlen, "line %u: %s is not supported by abox's builder (%s)", line,
				    refused[i].name, refused[i].why);
	int kind = -1;
	for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
		if (strcasecmp(word, kinds[i].name) == 0)
			kind = (int)kinds[i].kind;
	if (kind < 0)
		return fail(err, errlen, "line %u: unknown instruction '%s'", line, word);
	if (d->n >= DF_MAX_INSTRUCTIONS)
		return fail(err, errlen, "line %u: more than %d instructions", line, DF_MAX_INSTRUCTIONS);
	char *rest = p + wl;
	while (*rest == ' ' || *rest == '\t')
		rest++;
	struct df_inst in = { .kind = (enum df_kind)kind, .line = line };
	/* leading --flags */
	size_t nf = 0;
	while (strncmp(rest, "--", 2) == 0) {
		size_t fl = strcspn(rest, " \t");
		char **nv = realloc(in.flags, (nf + 2) * sizeof(char *));
		if (!nv)
			goto oom;
		in.flags = nv;
		in.flags[nf] = strndup(rest, fl);
		in.flags[++nf] = NULL;
		if (!in.flags[nf - 1])
			goto oom;
		const char *name = in.flags[nf - 1] + 2;
		size_t nl = strcspn(name, "=");
		bool ok = false;
		const char *const *allow =
			(size_t)kind < ELEMENTSOF(allowed_flags) ? allowed_flags[kind] : NULL;
		for (size_t i = 0; allow && i < 4 && allow[i]; i++)
			ok = ok || (strlen(allow[i]) == nl && strncmp(allow[i], name, nl) == 0);
		if (!ok) {
			fail(err, errlen, "line %u: %s --%.*s is not supported by abox's builder", line, word,
			     (int)nl, name);
			strv_free(in.flags);
			return -1;
		}
		rest += fl;
		while (*rest == ' ' || *rest == '\t')
			rest++;
	}
	if ((kind == DF_RUN || kind == DF_COPY || kind == DF_ADD) && heredoc(rest)) {
		strv_free(in.flags);
		return fail(err, errlen, "line %u: heredocs (<<EOF) are not supported by abox's builder",
			    line);
	}
	if (!*rest && kind != DF_RUN) {
		strv_free(in.flags);
		return fail(err, errlen, "line %u: %s needs arguments", line, word);
	}
	if (*rest == '[')
		in.json = json_form(rest);
	if (kind == DF_SHELL && !in.json) {
		strv_free(in.flags);
		return fail(err, errlen, "line %u: SHELL takes a JSON array ([\"/bin/bash\", \"-c\"])", line);
	}
	in.rest = strdup(rest);
	char *t = strdup(p);
	if (!in.rest || !t) {
		free(t);
		goto oom;
	}
	/* trailing blanks are not part of it */
	for (size_t tl = strlen(t); tl && (t[tl - 1] == ' ' || t[tl - 1] == '\t'); tl--)
		t[tl - 1] = '\0';
	in.text = t;
	struct df_inst *nv = realloc(d->v, (d->n + 1) * sizeof(*nv));
	if (!nv) {
		free(t);
		goto oom;
	}
	d->v = nv;
	d->v[d->n++] = in;
	return 0;
oom:
	strv_free(in.flags);
	free(in.rest);
	strv_free(in.json);
	return fail(err, errlen, "out of memory");
}

/* "# key=value" at the very top. 1: a directive (handled), 0: not one. */
static int directive(const char *line, char *escape, unsigned n, char *err, size_t errlen)
{
	const char *p = line + 1;
	while (*p == ' ' || *p == '\t')
		p++;
	size_t kl = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
	const char *eq = p + kl;
	while (*eq == ' ')
		eq++;
	if (kl == 0 || *eq != '=')
		return 0;
	const char *v = eq + 1;
	while (*v == ' ')
		v++;
	if (kl == 6 && strncasecmp(p, "escape", 6) == 0) {
		if ((v[0] != '\\' && v[0] != '`') || (v[1] && v[1] != ' ' && v[1] != '\r'))
			return fail(err, errlen, "line %u: the escape directive takes \\ or `", n);
		*escape = v[0];
		return 1;
	}
	if (kl == 6 && strncasecmp(p, "syntax", 6) == 0) {
		/* docker's own frontend is what abox's builder follows */
		if (!strstr(v, "docker/dockerfile"))
			return fail(err, errlen,
				    "line %u: syntax '%.100s': abox's builder knows only docker's Dockerfile "
				    "syntax",
				    n, v);
		return 1;
	}
	if (kl == 5 && strncasecmp(p, "check", 5) == 0)
		return 1; /* BuildKit's lint settings: nothing to run */
	return 0;
}

int dockerfile_parse(const char *text, size_t len, struct dockerfile *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (len > DF_MAX_BYTES)
		return fail(err, errlen, "the Dockerfile is larger than 1 MiB");
	if (memchr(text, '\0', len))
		return fail(err, errlen, "the Dockerfile holds a NUL byte: not a text file");
	char escape = '\\';
	bool directives = true;
	struct buf cur = { 0 };
	unsigned start = 0, n = 0;
	const char *p = text, *end = text + len;
	int r = 0;
	while (p < end && r == 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *line = strndup(p, ll);
		p += ll + (nl ? 1 : 0);
		n++;
		if (!line) {
			r = fail(err, errlen, "out of memory");
			break;
		}
		size_t l = strlen(line);
		while (l && (line[l - 1] == '\r' || line[l - 1] == ' ' || line[l - 1] == '\t'))
			line[--l] = '\0';
		const char *s = line;
		while (*s == ' ' || *s == '\t')
			s++;
		if (directives && *s == '#') {
			int d = directive(s, &escape, n, err, errlen);
			if (d < 0)
				r = -1;
			if (d != 0) {
				free(line);
				continue;
			}
		}
		directives = false;
		/* comments and blank lines, also inside a continued instruction */
		if (*s == '#' || !*s) {
			free(line);
			continue;
		}
		if (!cur.len)
			start = n;
		bool cont = l && line[l - 1] == escape;
		if (cont)
			line[--l] = '\0';
		if (!put(&cur, line, strlen(line)) || (cont && !putc_(&cur, ' ')))
			r = fail(err, errlen, "out of memory");
		free(line);
		if (!cont && r == 0) {
			r = instruction(out, start, cur.s, err, errlen);
			cur.len = 0;
		}
	}
	if (r == 0 && cur.len)
		r = instruction(out, start, cur.s, err, errlen);
	free(cur.s);
	if (r == 0 && out->n == 0)
		r = fail(err, errlen, "the Dockerfile has no instructions");
	if (r == 0 && out->v[0].kind != DF_FROM && out->v[0].kind != DF_ARG)
		r = fail(err, errlen, "line %u: a Dockerfile starts with FROM (or ARG before it)",
			 out->v[0].line);
	if (r < 0)
		dockerfile_free(out);
	return r;
}

static bool name_char(char c, bool first)
{
	return isalpha((unsigned char)c) || c == '_' || (!first && isdigit((unsigned char)c));
}

char *df_expand(const char *s, df_lookup_fn lookup, void *ud, char *err, size_t errlen)
{
	struct buf b = { 0 };
	bool single = false, ok = putc_(&b, '\0');
	b.len = 0;
	for (const char *p = s; ok && *p;) {
		if (*p == '\'') {
			single = !single;
			ok = putc_(&b, *p++);
		} else if (*p == '\\' && p[1] == '$' && !single) {
			ok = putc_(&b, '$');
			p += 2;
		} else if (*p == '\\' && p[1]) {
			ok = put(&b, p, 2);
			p += 2;
		} else if (*p != '$' || single) {
			ok = putc_(&b, *p++);
		} else if (p[1] == '{') {
			const char *q = p + 2;
			const char *nm = q;
			while (name_char(*q, q == nm))
				q++;
			size_t nl = (size_t)(q - nm);
			char op = 0;
			const char *word = NULL;
			size_t wl = 0;
			if (nl && q[0] == ':' && (q[1] == '-' || q[1] == '+')) {
				op = q[1];
				word = q + 2;
				int depth = 0;
				const char *w = word;
				while (*w && (*w != '}' || depth > 0)) {
					if (*w == '{')
						depth++;
					else if (*w == '}')
						depth--;
					w++;
				}
				wl = (size_t)(w - word);
				q = w;
			}
			if (!nl || *q != '}') {
				free(b.s);
				fail(err, errlen,
				     "'%.60s': a ${...} that is not ${NAME}, ${NAME:-word} or ${NAME:+word}",
				     p);
				return NULL;
			}
			char name[256];
			snprintf(name, sizeof(name), "%.*s", (int)(nl < 255 ? nl : 255), nm);
			const char *v = lookup(name, ud);
			if (op) {
				bool use = op == '-' ? !v || !*v : v && *v;
				if (use) {
					char *w = strndup(word, wl);
					char *x = w ? df_expand(w, lookup, ud, err, errlen) : NULL;
					free(w);
					if (!x) {
						free(b.s);
						return NULL;
					}
					ok = put(&b, x, strlen(x));
					free(x);
				} else if (op == '-' && v) {
					ok = put(&b, v, strlen(v));
				}
			} else if (v) {
				ok = put(&b, v, strlen(v));
			}
			p = q + 1;
		} else if (name_char(p[1], true)) {
			const char *q = p + 1;
			while (name_char(*q, q == p + 1))
				q++;
			char name[256];
			size_t nl = (size_t)(q - p - 1);
			snprintf(name, sizeof(name), "%.*s", (int)(nl < 255 ? nl : 255), p + 1);
			const char *v = lookup(name, ud);
			if (v)
				ok = put(&b, v, strlen(v));
			p = q;
		} else {
			ok = putc_(&b, *p++);
		}
	}
	if (!ok) {
		free(b.s);
		fail(err, errlen, "out of memory");
		return NULL;
	}
	return b.s;
}

char **df_words(const char *s)
{
	char **v = calloc(1, sizeof(char *));
	size_t n = 0;
	const char *p = s;
	while (v) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			return v;
		struct buf w = { 0 };
		bool ok = putc_(&w, '\0');
		w.len = 0;
		char quote = 0;
		while (ok && *p && (quote || (*p != ' ' && *p != '\t'))) {
			if (quote == '\'' && *p == '\'') {
				quote = 0;
				p++;
			} else if (quote == '"' && *p == '"') {
				quote = 0;
				p++;
			} else if (!quote && (*p == '"' || *p == '\'')) {
				quote = *p++;
			} else if (*p == '\\' && quote != '\'' && p[1]) {
				ok = putc_(&w, p[1]);
				p += 2;
			} else {
				ok = putc_(&w, *p++);
			}
		}
		char **nv = ok && !quote ? realloc(v, (n + 2) * sizeof(char *)) : NULL;
		if (!nv) {
			free(w.s);
			strv_free(v);
			return NULL;
		}
		v = nv;
		v[n++] = w.s;
		v[n] = NULL;
	}
	return NULL;
}

const char *df_flag(char *const *flags, const char *name)
{
	size_t nl = strlen(name);
	for (size_t i = 0; flags && flags[i]; i++) {
		const char *f = flags[i] + 2;
		if (strncmp(f, name, nl) == 0 && (f[nl] == '=' || f[nl] == '\0'))
			return f[nl] == '=' ? f + nl + 1 : "";
	}
	return NULL;
}
