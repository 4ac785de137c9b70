/* listing.c — see listing.h. Runs in aboxd's request threads. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "listing.h"

static bool digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

static int num(const char *s, size_t n)
{
	int v = 0;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

int64_t listing_time(const char *s)
{
	/* YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM) */
	size_t len = strlen(s);
	if (len < 20 || !digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) || s[7] != '-' || !digits(s + 8, 2) ||
	    (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(s + 11, 2) || s[13] != ':' ||
	    !digits(s + 14, 2) || s[16] != ':' || !digits(s + 17, 2))
		return -1;
	struct tm tm = { .tm_year = num(s, 4) - 1900, .tm_mon = num(s + 5, 2) - 1, .tm_mday = num(s + 8, 2),
			 .tm_hour = num(s + 11, 2), .tm_min = num(s + 14, 2), .tm_sec = num(s + 17, 2) };
	if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
	    tm.tm_sec > 60)
		return -1;
	const char *p = s + 19;
	int64_t ms = 0;
	if (*p == '.') {
		p++;
		size_t k = 0;
		for (; isdigit((unsigned char)p[k]); k++)
			if (k < 3)
				ms = ms * 10 + (p[k] - '0');
		if (k == 0)
			return -1;
		for (size_t j = k; j < 3; j++)
			ms *= 10;
		p += k;
	}
	int64_t off = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if ((*p == '+' || *p == '-') && digits(p + 1, 2) && p[3] == ':' && digits(p + 4, 2)) {
		off = (num(p + 1, 2) * 60 + num(p + 4, 2)) * 60 * (*p == '-' ? -1 : 1);
		p += 6;
	} else {
		return -1;
	}
	if (*p)
		return -1;
	time_t t = timegm(&tm);
	if (t == (time_t)-1 && tm.tm_year != 69)
		return -1;
	return ((int64_t)t - off) * 1000 + ms;
}

int listing_parse(struct listing *l, bool v2, const char *state, const char *order, const char *after,
		  const char *before, const char *tmpl, const char *limit, const char *token, char *why, size_t n)
{
	memset(l, 0, sizeof(*l));
	l->running = true;
	l->paused = v2; /* the v1 list is of running sandboxes */
	if (state && v2) {
		l->running = l->paused = false;
		for (const char *p = state; *p;) {
			size_t k = strcspn(p, ",");
			if (k == 7 && !strncmp(p, "running", 7))
				l->running = true;
			else if (k == 6 && !strncmp(p, "paused", 6))
				l->paused = true;
			else {
				snprintf(why, n, "state: '%.*s' is not running or paused", (int)(k < 40 ? k : 40), p);
				return -1;
			}
			p += k + (p[k] == ',');
		}
	}
	if (order) {
		if (!strcmp(order, "asc"))
			l->asc = true;
		else if (strcmp(order, "desc")) {
			snprintf(why, n, "order: '%.40s' is not asc or desc", order);
			return -1;
		}
	}
	if (after && (l->after_ms = listing_time(after)) < 0) {
		snprintf(why, n, "startedAfter: '%.60s' is not an RFC 3339 time", after);
		return -1;
	}
	if (before && (l->before_ms = listing_time(before)) < 0) {
		snprintf(why, n, "startedBefore: '%.60s' is not an RFC 3339 time", before);
		return -1;
	}
	l->template = tmpl && *tmpl ? tmpl : NULL;
	if (limit) {
		char *end = NULL;
		unsigned long v = strtoul(limit, &end, 10);
		if (!isdigit((unsigned char)*limit) || *end || v < 1 || v > 100) {
			snprintf(why, n, "limit must be 1-100");
			return -1;
		}
		l->limit = (uint32_t)v;
	}
	if (token && *token) {
		/* "<ms>.<id>": what listing_apply hands out */
		char *end = NULL;
		long long ms = strtoll(token, &end, 10);
		if (!isdigit((unsigned char)*token) || *end != '.' || strlen(end + 1) != ABOX_ID_LEN) {
			snprintf(why, n, "nextToken: not a token this server gave");
			return -1;
		}
		l->has_token = true;
		l->token_ms = ms;
		memcpy(l->token_id, end + 1, ABOX_ID_LEN + 1);
	}
	return 0;
}

/* E2B's built-in names are the templates they stand for here */
static bool template_matches(const struct listing *l, const char *have)
{
	return !strcmp(l->template, have) || (l->template_here && !strcmp(l->template_here, have));
}

static int newest_first(const void *a, const void *b)
{
	const abox_sandbox_info *x = a, *y = b;
	if (x->created_ms != y->created_ms)
		return x->created_ms > y->created_ms ? -1 : 1;
	return -strcmp(x->id, y->id);
}

/* Whether e comes after the token's entry in the order asked for. */
static bool after_token(const struct listing *l, const abox_sandbox_info *e)
{
	int c = e->created_ms != l->token_ms ? (e->created_ms < l->token_ms ? -1 : 1) : strcmp(e->id, l->token_id);
	return l->asc ? c > 0 : c < 0;
}

void listing_apply(const struct listing *l, abox_sandbox_info *v, size_t *n, size_t *running, char *next,
		   size_t next_n)
{
	size_t k = 0;
	*running = 0;
	next[0] = '\0';
	for (size_t i = 0; i < *n; i++) {
		bool keep = ((v[i].state == ABOX_STATE_RUNNING && l->running) ||
			     (v[i].state == ABOX_STATE_PAUSED && l->paused)) &&
			    (!l->after_ms || v[i].created_ms >= l->after_ms) &&
			    (!l->before_ms || v[i].created_ms <= l->before_ms) &&
			    (!l->template || template_matches(l, v[i].template_name));
		if (keep) {
			*running += v[i].state == ABOX_STATE_RUNNING;
			if (k != i)
				v[k] = v[i];
			k++;
		} else {
			abox_sandbox_info_clear(&v[i]);
		}
	}
	qsort(v, k, sizeof(*v), newest_first);
	if (l->asc)
		for (size_t i = 0; i < k / 2; i++) {
			abox_sandbox_info t = v[i];
			v[i] = v[k - 1 - i];
			v[k - 1 - i] = t;
		}
	/* the page: what follows the token, up to the limit */
	size_t from = 0;
	if (l->has_token)
		while (from < k && !after_token(l, &v[from]))
			from++;
	size_t to = l->limit && k - from > l->limit ? from + l->limit : k;
	if (to < k)
		snprintf(next, next_n, "%lld.%s", (long long)v[to - 1].created_ms, v[to - 1].id);
	for (size_t i = 0; i < from; i++)
		abox_sandbox_info_clear(&v[i]);
	for (size_t i = to; i < k; i++)
		abox_sandbox_info_clear(&v[i]);
	memmove(v, v + from, (to - from) * sizeof(*v));
	*n = to - from;
}
