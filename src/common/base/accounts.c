/* base/accounts.c — parsing a sandbox's passwd and group text (see
 * accounts.h). Lines are split in place by length, never by NUL: the text
 * may hold any byte. */
#include <errno.h>
#include <string.h>

#include "base/accounts.h"

#define MAX_FIELDS 7

struct fields {
	const char *p[MAX_FIELDS];
	size_t n[MAX_FIELDS];
	size_t count;
};

bool acct_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > ACCT_NAME_MAX || name[0] == '-' || name[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
			  c == '.' || c == '-' || (c == '$' && i == n - 1);
		if (!ok)
			return false;
	}
	return true;
}

/* The next line of text from *off, split at ':'. false at the end. */
static bool next_line(const char *text, size_t len, size_t *off, struct fields *f)
{
	if (*off >= len)
		return false;
	const char *s = text + *off;
	const char *nl = memchr(s, '\n', len - *off);
	size_t ln = nl ? (size_t)(nl - s) : len - *off;
	*off += ln + (nl ? 1 : 0);
	f->count = 0;
	size_t start = 0;
	for (size_t i = 0; i <= ln && f->count < MAX_FIELDS; i++) {
		if (i == ln || s[i] == ':') {
			f->p[f->count] = s + start;
			f->n[f->count] = i - start;
			f->count++;
			start = i + 1;
		}
	}
	return true;
}

static bool field_is(const struct fields *f, size_t i, const char *want)
{
	size_t n = strlen(want);
	return i < f->count && f->n[i] == n && memcmp(f->p[i], want, n) == 0;
}

/* A decimal id of at most 10 digits, no sign, no spaces: 0 or -EINVAL. */
static int field_id(const struct fields *f, size_t i, uint64_t *out)
{
	if (i >= f->count || f->n[i] == 0 || f->n[i] > 10)
		return -EINVAL;
	uint64_t v = 0;
	for (size_t k = 0; k < f->n[i]; k++) {
		char c = f->p[i][k];
		if (c < '0' || c > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(c - '0');
	}
	*out = v;
	return 0;
}

int acct_find_user(const char *text, size_t len, const char *name, struct acct_user *out)
{
	if (!acct_name_ok(name))
		return -ENOENT;
	struct fields f;
	size_t off = 0;
	while (next_line(text, len, &off, &f)) {
		/* name:password:uid:gid:gecos:home:shell — the first entry of a
		 * name counts, as for getpwnam() */
		if (!field_is(&f, 0, name))
			continue;
		uint64_t uid, gid;
		if (f.count < 6 || field_id(&f, 2, &uid) < 0 || field_id(&f, 3, &gid) < 0)
			continue;
		if (uid > ACCT_ID_MAX || gid > ACCT_ID_MAX)
			return -ERANGE;
		struct acct_user u = { .uid = (uint32_t)uid, .gid = (uint32_t)gid };
		memcpy(u.name, name, strlen(name) + 1);
		/* a home that is not an absolute path of printable bytes is "/",
		 * as login does when it cannot enter the home */
		size_t hn = f.n[5];
		bool home_ok = hn > 0 && hn <= ACCT_HOME_MAX && f.p[5][0] == '/';
		for (size_t k = 0; home_ok && k < hn; k++)
			home_ok = (unsigned char)f.p[5][k] >= 0x20 && f.p[5][k] != 0x7f;
		if (home_ok)
			memcpy(u.home, f.p[5], hn);
		else
			u.home[0] = '/';
		*out = u;
		return 0;
	}
	return -ENOENT;
}

int acct_name_of(const char *text, size_t len, uint32_t id, char *out, size_t n)
{
	struct fields f;
	size_t off = 0;
	while (next_line(text, len, &off, &f)) {
		uint64_t v;
		if (f.count < 3 || field_id(&f, 2, &v) < 0 || v != id)
			continue;
		if (f.n[0] == 0 || f.n[0] > ACCT_NAME_MAX || f.n[0] >= n)
			continue;
		char name[ACCT_NAME_MAX + 1];
		memcpy(name, f.p[0], f.n[0]);
		name[f.n[0]] = '\0';
		if (!acct_name_ok(name))
			continue;
		memcpy(out, name, f.n[0] + 1);
		return 0;
	}
	return -ENOENT;
}

static bool lists_member(const struct fields *f, const char *name)
{
	/* group:password:gid:member,member,... */
	if (f->count < 4)
		return false;
	size_t nn = strlen(name), start = 0, ln = f->n[3];
	for (size_t i = 0; i <= ln; i++) {
		if (i == ln || f->p[3][i] == ',') {
			if (i - start == nn && memcmp(f->p[3] + start, name, nn) == 0)
				return true;
			start = i + 1;
		}
	}
	return false;
}

size_t acct_groups(const char *text, size_t len, const char *name, uint32_t primary, uint32_t *out, size_t max)
{
	size_t k = 0;
	if (max == 0)
		return 0;
	out[k++] = primary;
	if (!acct_name_ok(name))
		return k;
	struct fields f;
	size_t off = 0;
	while (k < max && next_line(text, len, &off, &f)) {
		uint64_t gid;
		if (!lists_member(&f, name) || field_id(&f, 2, &gid) < 0 || gid > ACCT_ID_MAX)
			continue;
		bool dup = false;
		for (size_t i = 0; i < k && !dup; i++)
			dup = out[i] == gid;
		if (!dup)
			out[k++] = (uint32_t)gid;
	}
	return k;
}
