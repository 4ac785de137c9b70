/* store.h — abox-pull's blob store (see store.c). */
#ifndef ABOX_PULL_STORE_H
#define ABOX_PULL_STORE_H

#include "pull.h"
#include "registry.h"

struct store {
	int dir;
};

enum fetch_state {
	FETCH_CACHED,
	FETCH_NEW,
	FETCH_RESUMED
};
struct fetch_report {
	void (*progress)(uint64_t done, uint64_t total, void *ud);
	void *ud;
	/* results */
	enum fetch_state state;
	uint64_t resumed_at;
	unsigned retries;
};

/* Opens (making) the store at path; 0 or -1 (errno). */
int store_open(struct store *s, const char *path);
/* Is the blob there, complete? */
bool store_has(struct store *s, const struct descriptor *d);
/* Makes sure the blob is there: downloaded (resumed, retried when the
 * transfer breaks off), its size and digest checked. 0, or -1 with
 * reg->err naming the cause. */
int store_fetch(struct store *s, struct registry *reg, const struct descriptor *d, struct fetch_report *rep);

#endif
