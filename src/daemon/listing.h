/* listing — the sandbox list's query as E2B's API has it (GET
 * /v2/sandboxes and /sandboxes): state, template, startedAfter and
 * startedBefore, order (by start time, newest first unless asc) and
 * pages that are stable whatever is created meanwhile (the token is the
 * last entry's start time and id, not an offset). Every parameter is
 * honoured or refused with a 400 naming it, never ignored. */
#ifndef ABOX_DAEMON_LISTING_H
#define ABOX_DAEMON_LISTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <abox/abox.h>

struct listing {
	bool running, paused;     /* the states asked for */
	bool asc;                 /* oldest first */
	int64_t after_ms, before_ms; /* started at or after / at or before (0: any) */
	const char *template;     /* NULL: any */
	const char *template_here; /* the template it stands for here (E2B's built-in names), or NULL */
	uint32_t limit;           /* 0: no limit */
	bool has_token;
	int64_t token_ms;         /* the previous page's last entry */
	char token_id[ABOX_ID_LEN + 1];
};

/* The query's values (NULL when absent) into l; -1 with why on a bad one. */
int listing_parse(struct listing *l, bool v2, const char *state, const char *order, const char *after,
		  const char *before, const char *tmpl, const char *limit, const char *token, char *why, size_t n);
/* Keeps the infos l selects, sorted and cut to one page (the rest are
 * cleared); *n becomes the page's length, *running the number of running
 * ones selected before the cut. next: the token of the next page ("" when
 * none), at least 48 bytes. */
void listing_apply(const struct listing *l, abox_sandbox_info *v, size_t *n, size_t *running, char *next,
		   size_t next_n);
/* An RFC 3339 time ("2026-12-02T21:08:20.033Z", "...+01:00") in Unix
 * ms; -1 when it is not one. */
int64_t listing_time(const char *s);

#endif
