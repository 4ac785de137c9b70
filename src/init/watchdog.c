/* abox-init/watchdog.c — a bound on how long a command may take to reach
 * its exec.
 *
 * Commands are started sharing init's memory, with init suspended until the
 * child has exec'd (CLONE_VM | CLONE_VFORK, see child.c): no page tables to
 * copy, no copy-on-write faults. The attack this file stops: a process in
 * the sandbox SIGSTOPs such a child before its exec (the sandbox's root may
 * signal it from its first instruction on, any process of the target user
 * once it has that uid) and so freezes PID 1 — no more requests served, no
 * deadline enforced, for as long as the attacker likes.
 *
 * A second thread of init waits for a timer's signal, which every thread
 * blocks. Each start arms the timer; when a child has not exec'd by then,
 * the thread SIGKILLs it (SIGKILL ends even a stopped process), and the
 * vfork returns. When nothing stalls nothing wakes: a start costs two
 * timer_settime calls. The thread blocks every other signal, so SIGCHLD
 * and the rest keep going to init's signalfd, and it ends itself after a
 * few idle seconds (the next start makes a new one). */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "init.h"

/* a real-time signal that the C library does not use for itself */
#define WATCHDOG_SIG (SIGRTMIN + 6)

/* the thread ends itself after this long without a start, so that an
 * idle sandbox costs no more than init (a kernel stack, a task) */
#define WATCHDOG_IDLE_MS 5000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* all under lock */
static bool running;     /* the thread is there (or starting) */
static bool unavailable; /* no timer could be made: commands are forked */
static bool in_start;    /* between watchdog_arm and watchdog_disarm */
static pid_t guarded;    /* the child being started (written by clone) */
static pid_t killed;     /* the last child the watchdog ended */
static int64_t armed_at; /* when the current start began (monotonic ms) */
static int64_t last_use;
static int timer_id = -1; /* made once, kept: the thread comes and goes */

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *watchdog_main(void *arg)
{
	(void)arg;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, WATCHDOG_SIG);
	int64_t wait_ms = WATCHDOG_IDLE_MS;
	for (;;) {
		const struct timespec idle = { .tv_sec = wait_ms / 1000, .tv_nsec = (wait_ms % 1000) * 1000000L };
		/* the timer's signal is process-directed and blocked in every
		 * thread: it waits, pending, until taken here */
		int sig = sigtimedwait(&set, NULL, &idle);
		pthread_mutex_lock(&lock);
		if (sig == WATCHDOG_SIG) {
			/* init is still inside the clone of this child, so it has
			 * not reaped it: the pid cannot belong to anyone else. A
			 * signal left over from an earlier start (it fired as that
			 * one ended) finds a start younger than the limit. */
			pid_t p = __atomic_load_n(&guarded, __ATOMIC_ACQUIRE);
			if (in_start && p > 0 && mono_ms() - armed_at >= SPAWN_LIMIT_MS - 10 && kill(p, SIGKILL) == 0)
				killed = p;
		}
		int64_t quiet = mono_ms() - last_use;
		if (!in_start && quiet >= WATCHDOG_IDLE_MS) {
			/* idle: the next start makes a new thread */
			running = false;
			pthread_mutex_unlock(&lock);
			return NULL;
		}
		/* sleep until the last start is WATCHDOG_IDLE_MS old */
		wait_ms = in_start || quiet < 0 ? WATCHDOG_IDLE_MS : WATCHDOG_IDLE_MS - quiet;
		pthread_mutex_unlock(&lock);
	}
}

/* Makes the timer (once) and starts the thread; does not wait for it to
 * run: a signal that came first would wait for it, pending. Called with
 * the lock held. */
static void watchdog_start(void)
{
	if (timer_id < 0) {
		/* init keeps the watchdog's signal blocked; the thread below
		 * inherits that */
		sigset_t sig;
		sigemptyset(&sig);
		sigaddset(&sig, WATCHDOG_SIG);
		pthread_sigmask(SIG_BLOCK, &sig, NULL);
		struct sigevent sev;
		memset(&sev, 0, sizeof(sev));
		sev.sigev_notify = SIGEV_SIGNAL;
		sev.sigev_signo = WATCHDOG_SIG;
		int id = -1;
		if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &id) < 0) {
			unavailable = true;
			return;
		}
		timer_id = id;
	}
	/* the thread starts with every signal blocked (it inherits the mask
	 * of its creator): process-directed signals stay init's */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_t attr;
	pthread_t t;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 16384);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int r = pthread_create(&t, &attr, watchdog_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r == 0)
		running = true;
	/* else: no thread this time (no memory, no pids): fork this one */
}

pid_t *watchdog_arm(void)
{
	struct itimerspec its = { .it_value = { .tv_sec = SPAWN_LIMIT_MS / 1000,
						.tv_nsec = (SPAWN_LIMIT_MS % 1000) * 1000000L } };
	pthread_mutex_lock(&lock);
	if (!running && !unavailable)
		watchdog_start();
	if (!running) {
		pthread_mutex_unlock(&lock);
		return NULL;
	}
	/* under the lock: the thread cannot decide it is idle meanwhile */
	in_start = true;
	last_use = mono_ms();
	__atomic_store_n(&guarded, 0, __ATOMIC_RELEASE);
	armed_at = last_use;
	(void)syscall(SYS_timer_settime, timer_id, 0, &its, NULL);
	pthread_mutex_unlock(&lock);
	return &guarded;
}

bool watchdog_disarm(pid_t child)
{
	struct itimerspec off;
	memset(&off, 0, sizeof(off));
	pthread_mutex_lock(&lock);
	(void)syscall(SYS_timer_settime, timer_id, 0, &off, NULL);
	in_start = false;
	last_use = mono_ms();
	__atomic_store_n(&guarded, 0, __ATOMIC_RELEASE);
	bool was_killed = child > 0 && killed == child;
	killed = 0;
	pthread_mutex_unlock(&lock);
	return was_killed;
}
