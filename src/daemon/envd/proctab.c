/* proctab.c — see proctab.h. A small list under a lock: a sandbox runs
 * tens of commands, not thousands; each List prunes what ended, and the
 * table holds at most PROCTAB_MAX entries (the oldest go first). */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "abox/common.h" /* ABOX_ID_LEN */
#include "proctab.h"

#define PROCTAB_MAX 4096

struct entry {
	struct entry *next;
	char sid[ABOX_ID_LEN + 1];
	int pid;
	char *config; /* the JSON text: json-c objects are not to be shared between threads */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *head;
static size_t count;

static bool is(const struct entry *e, const char *sid, int pid)
{
	return e->pid == pid && !strcmp(e->sid, sid);
}

static void drop_where(bool (*gone)(const struct entry *, const void *), const void *arg)
{
	for (struct entry **pp = &head; *pp;) {
		struct entry *e = *pp;
		if (gone(e, arg)) {
			*pp = e->next;
			free(e->config);
			free(e);
			count--;
		} else {
			pp = &e->next;
		}
	}
}

struct key {
	const char *sid;
	int pid;
};

static bool same_key(const struct entry *e, const void *arg)
{
	const struct key *k = arg;
	return is(e, k->sid, k->pid);
}

void proctab_put(const char *sid, int pid, json_object *config)
{
	struct entry *e = calloc(1, sizeof(*e));
	const char *j = json_object_to_json_string_ext(config, JSON_C_TO_STRING_PLAIN);
	if (!e || strlen(sid) >= sizeof(e->sid) || !(e->config = strdup(j))) {
		free(e);
		return; /* List falls back to init's command line */
	}
	strcpy(e->sid, sid);
	e->pid = pid;
	struct key k = { sid, pid };
	pthread_mutex_lock(&lock);
	drop_where(same_key, &k);
	e->next = head; /* newest first: the oldest is the tail */
	head = e;
	if (++count > PROCTAB_MAX) {
		struct entry **pp = &head;
		while ((*pp)->next)
			pp = &(*pp)->next;
		free((*pp)->config);
		free(*pp);
		*pp = NULL;
		count--;
	}
	pthread_mutex_unlock(&lock);
}

json_object *proctab_get(const char *sid, int pid)
{
	char *j = NULL;
	pthread_mutex_lock(&lock);
	for (struct entry *e = head; e; e = e->next)
		if (is(e, sid, pid)) {
			j = strdup(e->config);
			break;
		}
	pthread_mutex_unlock(&lock);
	json_object *o = j ? json_tokener_parse(j) : NULL;
	free(j);
	return o;
}

struct alive {
	const char *sid;
	const int *pids;
	size_t n;
};

static bool ended(const struct entry *e, const void *arg)
{
	const struct alive *a = arg;
	if (strcmp(e->sid, a->sid))
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->pids[i] == e->pid)
			return false;
	return true;
}

void proctab_prune(const char *sid, const int *running, size_t n)
{
	struct alive a = { sid, running, n };
	pthread_mutex_lock(&lock);
	drop_where(ended, &a);
	pthread_mutex_unlock(&lock);
}
