/* meta.c — E2B's file metadata on the envd plane (envd 0.6.2): an upload's
 * X-Metadata-<key>: <value> headers are kept on every file it writes (as
 * "user.e2b.<key>" extended attributes, by init: src/init/meta.c), keys
 * lower-cased, and come back as `metadata` in the upload's answer and in
 * entries (Stat, ListDir, MakeDir, Move). Headers are untrusted input:
 * their count and sizes are bounded and their characters checked before
 * anything is written. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "envd.h"
#include "meta.h"

#define PREFIX "X-Metadata-"

struct collect {
	struct file_meta *m;
	char *why;
	size_t whylen;
	int bad;
};

static bool key_ok(const char *k)
{
	if (!*k)
		return false;
	for (; *k; k++)
		if (!isalnum((unsigned char)*k) && !strchr("!#$%&'*+-.^_`|~", *k))
			return false;
	return true;
}

static bool value_ok(const char *v)
{
	for (; *v; v++)
		if ((unsigned char)*v < 0x20 || (unsigned char)*v > 0x7e)
			return false;
	return true;
}

static enum MHD_Result one(void *cls, enum MHD_ValueKind kind, const char *name, const char *value)
{
	(void)kind;
	struct collect *c = cls;
	if (c->bad || strncasecmp(name, PREFIX, strlen(PREFIX)) != 0)
		return MHD_YES;
	const char *k = name + strlen(PREFIX);
	struct file_meta *m = c->m;
	if (!key_ok(k) || strlen(k) > META_MAX_KEY) {
		snprintf(c->why, c->whylen, "metadata key '%.64s': HTTP token characters, at most %d", k, META_MAX_KEY);
	} else if (!value || !value_ok(value) || strlen(value) > META_MAX_VALUE) {
		snprintf(c->why, c->whylen, "metadata value of '%.64s': printable ASCII, at most %d bytes", k,
			 META_MAX_VALUE);
	} else if (m->n == META_MAX_PAIRS) {
		snprintf(c->why, c->whylen, "more than %d metadata entries", META_MAX_PAIRS);
	} else {
		char *lk = strdup(k), *v = strdup(value);
		if (!lk || !v) {
			free(lk);
			free(v);
			snprintf(c->why, c->whylen, "out of memory");
			c->bad = 1;
			return MHD_NO;
		}
		for (char *p = lk; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		m->kv[2 * m->n] = lk;
		m->kv[2 * m->n + 1] = v;
		m->n++;
		return MHD_YES;
	}
	c->bad = 1;
	return MHD_NO;
}

int meta_from_request(struct request *rq, struct file_meta *m, char *why, size_t whylen)
{
	memset(m, 0, sizeof(*m));
	struct collect c = { m, why, whylen, 0 };
	MHD_get_connection_values(rq->conn, MHD_HEADER_KIND, one, &c);
	if (c.bad) {
		meta_free(m);
		return -EINVAL;
	}
	return 0;
}

void meta_free(struct file_meta *m)
{
	for (size_t i = 0; i < 2 * m->n; i++)
		free(m->kv[i]);
	m->n = 0;
}

json_object *meta_json(const struct file_meta *m)
{
	if (!m->n)
		return NULL;
	json_object *o = json_object_new_object();
	for (size_t i = 0; i < m->n; i++)
		json_object_object_add(o, m->kv[2 * i], json_object_new_string(m->kv[2 * i + 1]));
	return o;
}

struct batch {
	json_object *entries;
	size_t first; /* the batch's first entry */
};

static int add_pair(size_t index, const char *key, const char *value, void *ud)
{
	struct batch *b = ud;
	json_object *entry = json_object_array_get_idx(b->entries, b->first + index), *md;
	if (!entry)
		return 0;
	if (!json_object_object_get_ex(entry, "metadata", &md)) {
		md = json_object_new_object();
		json_object_object_add(entry, "metadata", md);
	}
	json_object_object_add(md, key, json_object_new_string(value));
	return 0;
}

/* one request to init carries at most this many bytes of paths (its
 * frames are bounded), so a long listing goes in batches */
#define BATCH_BYTES (256u << 10)

void meta_add_to_entries(abox_sandbox *sb, const char *user, json_object *entries)
{
	size_t n = json_object_array_length(entries);
	if (!n)
		return;
	const char **paths = calloc(n, sizeof(*paths));
	if (!paths)
		return;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(entries, i), *p;
		paths[i] = json_object_object_get_ex(e, "path", &p) ? json_object_get_string(p) : "";
	}
	for (size_t first = 0; first < n;) {
		size_t k = 0, bytes = 0;
		while (first + k < n && (k == 0 || bytes + strlen(paths[first + k]) < BATCH_BYTES))
			bytes += strlen(paths[first + k++]) + 8;
		struct batch b = { entries, first };
		/* best effort: a sandbox whose init predates metadata has none */
		if (abox_file_meta_get(sb, paths + first, k, user, add_pair, &b, NULL) == -ENOTSUP)
			break;
		first += k;
	}
	free(paths);
}

void meta_add_to_entry(abox_sandbox *sb, const char *user, json_object *entry)
{
	json_object *one = json_object_new_array();
	json_object_array_add(one, json_object_get(entry));
	meta_add_to_entries(sb, user, one);
	json_object_put(one);
}

int meta_check(struct request *rq, char *why, size_t whylen)
{
	struct file_meta m;
	int r = meta_from_request(rq, &m, why, whylen);
	if (r == 0)
		meta_free(&m);
	return r;
}

int meta_apply(abox_sandbox *sb, struct request *rq, const char *path, abox_error *err)
{
	struct file_meta m;
	char why[200];
	if (meta_from_request(rq, &m, why, sizeof(why)) < 0)
		return abox_error_setx(err, EINVAL, "%s", why);
	int r = m.n ? abox_file_meta_set(sb, path, rq->user, (const char *const *)m.kv, m.n, err) : 0;
	meta_free(&m);
	return r;
}

void meta_add_written(struct request *rq, json_object *info)
{
	struct file_meta m;
	char why[200];
	if (meta_from_request(rq, &m, why, sizeof(why)) < 0)
		return;
	json_object *o = meta_json(&m);
	if (o)
		json_object_object_add(info, "metadata", o);
	meta_free(&m);
}
