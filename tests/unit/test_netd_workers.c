/* abox-netd's connection threads (src/netd/workers.c): every job runs at
 * once in a thread of its own, never queued behind a busy one, and a
 * thread that finished serves the next job instead of a new thread. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "workers.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int started, done, release;
/* kernel thread ids: a new thread gets a new one (a pthread_t may be
 * the same address again, glibc reuses a finished thread's stack) */
static pid_t ran_on[64];

static void *job(void *arg)
{
	int i = (int)(intptr_t)arg;
	pthread_mutex_lock(&mu);
	ran_on[i] = gettid();
	started++;
	pthread_cond_broadcast(&cv);
	while (!release)
		pthread_cond_wait(&cv, &mu);
	done++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	return NULL;
}

/* waits (up to 5 s) until *what reaches n */
static bool reach(const int *what, int n)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	pthread_mutex_lock(&mu);
	while (*what < n && pthread_cond_timedwait(&cv, &mu, &until) == 0)
		;
	bool ok = *what >= n;
	pthread_mutex_unlock(&mu);
	return ok;
}

static void reset(bool hold)
{
	pthread_mutex_lock(&mu);
	started = done = 0;
	release = !hold;
	pthread_mutex_unlock(&mu);
}

static void let_go(void)
{
	pthread_mutex_lock(&mu);
	release = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

/* a creator holds its connection until its attach is answered: 40 jobs
 * that all wait must all be running at the same time */
Test(workers, jobs_that_block_all_run_at_once)
{
	reset(true);
	for (int i = 0; i < 40; i++)
		cr_assert_eq(netd_thread(job, (void *)(intptr_t)i), 0);
	cr_assert(reach(&started, 40), "only %d of 40 jobs started while the others waited", started);
	let_go();
	cr_assert(reach(&done, 40));
}

Test(workers, a_finished_thread_serves_the_next_job)
{
	reset(false);
	cr_assert_eq(netd_thread(job, (void *)(intptr_t)0), 0);
	cr_assert(reach(&done, 1));
	/* the worker is back on the idle list once job returned: give it
	 * the moment between its return and its wait */
	usleep(20000);
	cr_assert_eq(netd_thread(job, (void *)(intptr_t)1), 0);
	cr_assert(reach(&done, 2));
	cr_assert_eq(ran_on[0], ran_on[1], "the second job got a new thread");
}

/* every job runs exactly once, also when handed out while workers go
 * idle and wake in between */
static atomic_int count;

static void *tick(void *arg)
{
	(void)arg;
	atomic_fetch_add(&count, 1);
	return NULL;
}

Test(workers, many_short_jobs_each_run_once)
{
	atomic_store(&count, 0);
	for (int i = 0; i < 2000; i++)
		cr_assert_eq(netd_thread(tick, NULL), 0);
	for (int k = 0; k < 500 && atomic_load(&count) < 2000; k++)
		usleep(10000);
	usleep(50000);
	cr_assert_eq(atomic_load(&count), 2000);
}
