/* netd/workers.c — threads kept for the next connection (workers.h).
 * Runs in abox-netd. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "workers.h"

/* At most this many wait idle; each waits this long before it ends. */
#define IDLE_MAX 16
#define IDLE_SECONDS 30

struct worker {
	pthread_cond_t wake;
	void *(*fn)(void *);
	void *arg;
	struct worker *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct worker *idle; /* a stack: the warmest thread goes first */
static unsigned nidle;

static void idle_unlink(struct worker *w)
{
	for (struct worker **p = &idle; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			nidle--;
			return;
		}
}

/* Waits for the next job with mu held: false when none came in time
 * (the worker is off the idle list then). */
static bool idle_wait(struct worker *w)
{
	w->fn = NULL;
	w->next = idle;
	idle = w;
	nidle++;
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += IDLE_SECONDS;
	while (!w->fn)
		if (pthread_cond_timedwait(&w->wake, &mu, &until) == ETIMEDOUT && !w->fn) {
			idle_unlink(w);
			return false;
		}
	return true;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	for (;;) {
		w->fn(w->arg);
		pthread_mutex_lock(&mu);
		bool again = nidle < IDLE_MAX && idle_wait(w);
		pthread_mutex_unlock(&mu);
		if (!again)
			break;
	}
	pthread_cond_destroy(&w->wake);
	free(w);
	return NULL;
}

int netd_thread(void *(*fn)(void *), void *arg)
{
	pthread_mutex_lock(&mu);
	struct worker *w = idle;
	if (w) {
		/* handed over under the lock: the worker sees fn set */
		idle = w->next;
		nidle--;
		w->fn = fn;
		w->arg = arg;
		pthread_cond_signal(&w->wake);
	}
	pthread_mutex_unlock(&mu);
	if (w)
		return 0;
	if (!(w = calloc(1, sizeof(*w))))
		return ENOMEM;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->wake, &ca);
	pthread_condattr_destroy(&ca);
	w->fn = fn;
	w->arg = arg;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 128 * 1024);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	int r = pthread_create(&t, &at, worker_main, w);
	pthread_attr_destroy(&at);
	if (r) {
		pthread_cond_destroy(&w->wake);
		free(w);
	}
	return r;
}
