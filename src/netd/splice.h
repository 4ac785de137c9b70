/* netd/splice — what the name proxy (proxy.c) and the relay (relay.c)
 * share once a connection is decided: dialling the destination with a
 * time limit and moving the bytes both ways in the kernel.
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

#endif
