/* netd/workers — the threads abox-netd serves connections in: its
 * control clients (a create's, a kill's, a policy change's), the name
 * proxy's and the relay's connections. Each runs detached with a small
 * stack (a connection needs little, and there may be thousands); a
 * thread that finished waits a while for the next one instead of
 * ending, because making a thread (its kernel stack, its page tables
 * on a virtual machine) was a third of a policy change's time.
 * Runs in abox-netd. */
#ifndef ABOX_NETD_WORKERS_H
#define ABOX_NETD_WORKERS_H

/* Runs fn(arg) in a thread of its own now: an idle one when there is,
 * a new one when not (never queued behind another connection: a
 * creator holds its connection from before its clone until the attach
 * is answered). 0 or the error number. fn must leave the thread as it
 * found it (its network namespace, its signal mask). */
int netd_thread(void *(*fn)(void *), void *arg);

#endif
