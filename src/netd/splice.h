/* netd/splice — what the name proxy (proxy.c) and the relay (relay.c)
 * share once a connection is decided: dialling the destination with a
 * time limit, moving the bytes both ways in the kernel, and the small
 * detached thread each connection runs in.
 * Runs in abox-netd's connection threads. */
#ifndef ABOX_NETD_SPLICE_H
#define ABOX_NETD_SPLICE_H

#include <stdint.h>

/* A blocking TCP socket connected to addr:port (both network order)
 * within timeout_ms, or -errno (-ETIMEDOUT). */
int splice_connect(uint32_t addr, uint16_t port, int timeout_ms);

/* Moves bytes a → b and b → a through pipes with splice until both
 * sides are done (a half-close is passed on) or ten minutes pass with
 * nothing moving; the bytes moved each way are added to the counters. */
void splice_both(int a, int b, uint64_t *a_to_b, uint64_t *b_to_a);

/* Runs fn(arg) in a detached thread with a small stack (a connection
 * needs little, and there may be thousands): 0 or the error number. */
int netd_thread(void *(*fn)(void *), void *arg);

#endif
