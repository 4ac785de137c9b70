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
 * blocks. Each start arms the timer; when the child is still before its
 * exec after SPAWN_LIMIT_MS and stopped (by a signal or a tracer), or
 * still before its exec after HARD_LIMIT_MS whatever its state, the
 * thread SIGKILLs it (SIGKILL ends even a stopped process) and the vfork
 * returns. A child in an uninterruptible sleep (hung storage) cannot be
 * ended by anything, and init waits with it. When nothing stalls nothing wakes: a start costs two
 * timer_settime calls. The thread blocks every other signal, so SIGCHLD
 * and the rest keep going to init's signalfd, and it ends itself after a
 * few idle seconds (the next start makes a new one). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "base/clock.h"
#include "init.h"

/* a real-time signal that the C library does not use for itself */
#define WATCHDOG_SIG (SIGRTMIN + 6)

int watchdog_signal(void)
{
	return WATCHDOG_SIG;
}

/* How often a start that is still before its exec is looked at again
 * after the first SPAWN_LIMIT_MS, and when it is ended whatever its state:
 * a child that is merely slow (its sandbox's CPU quota spent, a busy host)
 * is left alone until then. */
#define RECHECK_MS 500
#define HARD_LIMIT_MS 60000
#define PF_FORKNOEXEC_FLAG 0x40 /* "forked but did not exec" in /proc/PID/stat */

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

/* Whether the child has not exec'd yet, and whether it is stopped (by a
 * signal or a tracer), from its /proc/PID/stat (the sandbox's own procfs,
 * which the sandbox cannot replace). False when it cannot be read. */
static bool before_exec(pid_t pid, bool *stopped)
{
	char path[40], buf[512];
	safe_snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* after "(comm)": state ppid pgrp session tty_nr tpgid flags */
	char *p = strrchr(buf, ')');
	char state;
	unsigned long flags;
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
		return false;
	*stopped = state == 'T' || state == 't';
	return flags & PF_FORKNOEXEC_FLAG;
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
		 * thread: during a start (init's main thread waits in clone) it
		 * is taken here; otherwise init's signalfd drains it */
		siginfo_t si;
		int sig = sigtimedwait(&set, &si, &idle);
		pthread_mutex_lock(&lock);
		/* only our timer counts: sandbox root may send this signal too */
		if (sig == WATCHDOG_SIG && si.si_code == SI_TIMER && in_start) {
			/* init is still inside the clone of this child, so it has
			 * not reaped it: the pid cannot belong to anyone else. A
			 * signal left over from an earlier start finds a start
			 * younger than the limit. */
			pid_t p = __atomic_load_n(&guarded, __ATOMIC_ACQUIRE);
			int64_t age = clock_mono_ms() - armed_at;
			bool stopped = false;
			if (p > 0 && age >= SPAWN_LIMIT_MS - 10 && before_exec(p, &stopped) &&
			    (stopped || age >= HARD_LIMIT_MS) && kill(p, SIGKILL) == 0)
				killed = p;
		}
		int64_t quiet = clock_mono_ms() - last_use;
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
		/* init blocks the signal from its start (see main.c); a policy
		 * that refuses the calls the thread needs means no watchdog */
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, WATCHDOG_SIG);
		const struct timespec zero = { 0 };
		if (sigtimedwait(&set, NULL, &zero) < 0 && errno != EAGAIN) {
			unavailable = true;
			return;
		}
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
						.tv_nsec = (SPAWN_LIMIT_MS % 1000) * 1000000L },
				  .it_interval = { .tv_sec = 0, .tv_nsec = RECHECK_MS * 1000000L } };
	pthread_mutex_lock(&lock);
	if (!running && !unavailable)
		watchdog_start();
	if (!running) {
		pthread_mutex_unlock(&lock);
		return NULL;
	}
	/* under the lock: the thread cannot decide it is idle meanwhile */
	in_start = true;
	last_use = clock_mono_ms();
	__atomic_store_n(&guarded, 0, __ATOMIC_RELEASE);
	armed_at = last_use;
	if (syscall(SYS_timer_settime, timer_id, 0, &its, NULL) < 0) {
		in_start = false; /* no guard for this start: fork it */
		pthread_mutex_unlock(&lock);
		return NULL;
	}
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
	last_use = clock_mono_ms();
	__atomic_store_n(&guarded, 0, __ATOMIC_RELEASE);
	bool was_killed = child > 0 && killed == child;
	killed = 0;
	pthread_mutex_unlock(&lock);
	return was_killed;
}
