/* netd/spares.c — the pool of namespaces made ahead (see spares.h). */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "base/clock.h"
#include "base/procsys.h"
#include "net/config.h"
#include "netd.h"
#include "spares.h"
#include "take.h"

static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* a spare was taken */
	struct spare v[NET_SPARES_MAX];
	unsigned n, want;
	unsigned creating; /* creates between their take and their end */
	int64_t last_end_ms; /* when the last of them ended */
} pool = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER };

void spare_free(struct spare *sp)
{
	nl_close(&sp->in);
	if (sp->netns_fd >= 0)
		close(sp->netns_fd);
	sp->netns_fd = -1;
}

/* A new namespace with `lo` up and a route socket of it: this thread
 * goes there and comes straight back (a thread left in it would make
 * every later spare's veth inside the one before). */
static int namespace_new(struct spare *sp, abox_error *err)
{
	_cleanup_close_ int own = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (own < 0)
		return abox_error_set(err, errno, "spare: open own network namespace");
	if (unshare(CLONE_NEWNET) < 0)
		return abox_error_set(err, errno, "spare: new network namespace");
	int r = 0;
	if ((sp->netns_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) < 0)
		r = abox_error_set(err, errno, "spare: open the new network namespace");
	if (r >= 0)
		r = nl_open(&sp->in, err);
	int lo = r < 0 ? r : nl_link_index(&sp->in, "lo", err);
	if (r >= 0)
		r = lo < 0 ? lo : nl_link_up(&sp->in, lo, false, err);
	/* Ports below 1024 for anyone in the namespace, as Docker sets: a
	 * sandbox's root with a user namespace holds CAP_NET_BIND_SERVICE in
	 * that namespace only, which this (host-owned) one does not heed.
	 * Set here, ahead, the create does not pay the write (spawn.c);
	 * through a procfs of its own (base/procsys.h). */
	if (r >= 0 && (r = (int)procsys_write_once("sys/net/ipv4/ip_unprivileged_port_start", "0")) < 0)
		r = abox_error_set(err, -r, "spare: allow ports below 1024");
	if (setns(own, CLONE_NEWNET) < 0)
		abort();
	return r;
}

static int spare_make(struct spare *sp, abox_error *err)
{
	memset(sp, 0, sizeof(*sp));
	sp->netns_fd = -1;
	int r = namespace_new(sp, err);
	if (r < 0) {
		spare_free(sp);
		return r;
	}
	uint8_t rnd[6];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		spare_free(sp);
		return abox_error_set(err, errno, "spare: getrandom");
	}
	snprintf(sp->host_if, sizeof(sp->host_if), "%s%02x%02x%02x%02x%02x%02x", NET_SPARE_PREFIX, rnd[0],
		 rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
	struct nl host;
	if ((r = nl_open(&host, err)) < 0) {
		spare_free(sp);
		return r;
	}
	if ((r = nl_veth_new(&host, sp->host_if, "eth0", sp->netns_fd, err)) >= 0 &&
	    (r = sp->host_index = nl_link_index(&host, sp->host_if, err)) >= 0 &&
	    (r = attach_host_no_ipv6(sp->host_if, err)) >= 0 &&
	    (r = sp->eth0_index = nl_link_index(&sp->in, "eth0", err)) >= 0 &&
	    (r = nl_link_no_ipv6(&sp->in, sp->eth0_index, err)) >= 0)
		r = nl_link_up(&sp->in, sp->eth0_index, false, err);
	nl_close(&host);
	/* on failure the namespace goes, and a veth made in it with it */
	if (r < 0)
		spare_free(sp);
	return r;
}

/* Spares are made a while after the last create ended, unless fewer
 * than half are left: making one (a namespace, a veth) is ≈ 1.5 ms of
 * kernel work which, even at a low priority, took the CPU from the very
 * create whose take woke this thread, and then from its first commands
 * and its kill (`abox run` with a spare remade at once: ≈ 0.6 ms
 * slower on two cores). Between creates it costs no one; under a steady
 * stream of them the pool runs down to half and is kept there. */
#define QUIET_MS 20

/* pool.lock held: true when a spare is to be made now; otherwise it
 * waited for a change (or the quiet to be over) and is to be asked
 * again. */
static bool time_to_make(void)
{
	if (pool.n >= pool.want) {
		pthread_cond_wait(&pool.wake, &pool.lock);
		return false;
	}
	if (pool.n * 2 < pool.want)
		return true;
	if (pool.creating) {
		pthread_cond_wait(&pool.wake, &pool.lock);
		return false;
	}
	int64_t left = pool.last_end_ms + QUIET_MS - clock_mono_ms();
	if (left <= 0)
		return true;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += left * 1000000;
	until.tv_sec += until.tv_nsec / 1000000000;
	until.tv_nsec %= 1000000000;
	pthread_cond_timedwait(&pool.wake, &pool.lock, &until);
	return false;
}

static void *spares_main(void *arg)
{
	(void)arg;
	/* behind the creates: a spare made while one runs must not slow it */
	(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	unsigned failures = 0;
	for (;;) {
		pthread_mutex_lock(&pool.lock);
		while (!time_to_make())
			;
		pthread_mutex_unlock(&pool.lock);
		/* the files the next takes record their slots in, first */
		take_premake();
		struct spare sp;
		abox_error e = ABOX_ERROR_INIT;
		if (spare_make(&sp, &e) < 0) {
			/* creates go the slow way meanwhile; a host that
			 * refuses is told once, not every second */
			if (failures++ == 0)
				netd_log("spare namespaces: %s (creates make their own)", e.msg);
			sleep(failures < 10 ? 1 : 10);
			continue;
		}
		failures = 0;
		pthread_mutex_lock(&pool.lock);
		pool.v[pool.n++] = sp;
		pthread_mutex_unlock(&pool.lock);
	}
	return NULL;
}

int spares_start(unsigned want, abox_error *err)
{
	if (want == 0)
		return 0;
	pool.want = want > NET_SPARES_MAX ? NET_SPARES_MAX : want;
	pthread_t t;
	int r = pthread_create(&t, NULL, spares_main, NULL);
	if (r)
		return abox_error_set(err, r, "start the spare namespaces' thread");
	pthread_detach(t);
	return 0;
}

bool spares_take(struct spare *out)
{
	pthread_mutex_lock(&pool.lock);
	bool ok = pool.n > 0;
	if (ok) {
		/* the oldest first: the longest settled */
		*out = pool.v[0];
		memmove(&pool.v[0], &pool.v[1], (pool.n - 1) * sizeof(pool.v[0]));
		pool.n--;
		pthread_cond_signal(&pool.wake);
	}
	pthread_mutex_unlock(&pool.lock);
	return ok;
}

void spares_create_begin(void)
{
	pthread_mutex_lock(&pool.lock);
	pool.creating++;
	pthread_mutex_unlock(&pool.lock);
}

void spares_create_end(void)
{
	pthread_mutex_lock(&pool.lock);
	if (pool.creating && --pool.creating == 0) {
		pool.last_end_ms = clock_mono_ms();
		pthread_cond_signal(&pool.wake);
	}
	pthread_mutex_unlock(&pool.lock);
}

unsigned spares_ready(void)
{
	pthread_mutex_lock(&pool.lock);
	unsigned n = pool.n;
	pthread_mutex_unlock(&pool.lock);
	return n;
}
