/* net/client — the library's side of abox-netd (src/netd/): the one
 * process that holds libmnl and libnftnl, makes sandboxes' veths and
 * table elements, and serves their DNS and name proxy. The library asks
 * it over its control socket (net_netd_address) and starts it when none
 * answers, so a daemonless `abox run --net open` needs nothing running
 * beforehand; abox-netd leaves by itself once no sandbox needs it.
 * Runs in the creator (CLI, aboxd, the library's caller). */
#ifndef ABOX_NET_CLIENT_H
#define ABOX_NET_CLIENT_H

#include <stdint.h>

#include "base/base.h"

struct json_object;

/* A connection to abox-netd of state_dir, started (netd_path, its log
 * in <state>/net/netd.log) when none answers. The fd, or -errno. */
int net_client_connect(const char *state_dir, const char *netd_path, abox_error *err);
/* Sends a request for sandbox id in slot (fd: sent along, -1 none). */
int net_client_send(int conn, const char *op, const char *id, uint32_t slot, int fd, abox_error *err);
/* Asks for a slot of the pool and a spare namespace for sandbox id with
 * its policy (JSON; prefer: the slot a cold resume held, -1 none).
 * netd records the slot and answers it (see src/netd/control.c). */
int net_client_take(int conn, const char *id, const char *policy_json, int64_t prefer, abox_error *err);
/* Asks netd to remove sandbox id's elements and flows and then free its
 * slot, and waits until it has: a kill or gc that returned has left
 * nothing in the table (a request still queued when netd stopped or was
 * killed would have left the sandbox's elements and slot behind). */
int net_client_remove(const char *state_dir, const char *netd_path, const char *id, uint32_t slot,
		      abox_error *err);
/* Waits for the answer: 0, or the -errno and message netd gave. *out
 * (when not NULL) gets the answer object (json_object_put it). */
int net_client_wait(int conn, struct json_object **out, abox_error *err);
/* The same, with the fd netd sent along (-1: none; close-on-exec). */
int net_client_wait_fd(int conn, struct json_object **out, int *fd, abox_error *err);
/* connect + send + wait, the connection closed. */
int net_client_call(const char *state_dir, const char *netd_path, const char *op, const char *id,
		    uint32_t slot, int fd, struct json_object **out, abox_error *err);
/* The status of a running abox-netd, without starting one: -ESRCH when
 * none runs. */
int net_client_status(const char *state_dir, struct json_object **out, abox_error *err);

#endif
