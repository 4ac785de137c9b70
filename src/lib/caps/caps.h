/* caps — the capability set a sandbox's root keeps.
 *
 * What it does: names the default set, drops everything else from the
 * bounding set and clears the inheritable and ambient sets, so that after
 * exec sandbox root holds exactly the kept set and any other uid holds none.
 *
 * Runs in the sandbox child between clone and exec, or in init before
 * anything else when the sandbox has a user namespace (init/confine.c);
 * caps_apply is async-signal-safe. caps_last_cap runs in the parent
 * before clone. */
#ifndef ABOX_CAPS_H
#define ABOX_CAPS_H

#include <stdint.h>

#include "base/base.h"

/* The documented default set (docs/security.md), a subset of Docker's:
 * CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP
 * NET_BIND_SERVICE SYS_CHROOT SETFCAP.
 * Left out on purpose: MKNOD (no devices cgroup stands between a sandbox
 * and a block device node of the host's disk), NET_RAW (raw packets on
 * the sandbox's links are rarely needed and ease spoofing) and AUDIT_WRITE
 * (sandbox root is host uid 0 without a user namespace: it could write
 * forged records into the host's audit log). */
uint64_t caps_default(void);
/* Highest capability number the kernel knows (/proc/sys/kernel/cap_last_cap). */
int caps_last_cap(void);
/* Bounding set := keep, inheritable := inherit (0 but where a root's exec
 * must give more than keep: spawn_config.keep_admin), ambient := 0. */
int caps_apply(uint64_t keep, uint64_t inherit, int last_cap, abox_error *err);
/* The same for a process that execs nothing after (init taking its own
 * confinement in a user namespace): held stays in its permitted set
 * alone (outside the bounding, effective and inheritable sets). */
int caps_apply_held(uint64_t keep, uint64_t held, int last_cap, abox_error *err);
/* "CAP_CHOWN" style name, or NULL. */
const char *caps_name(int cap);

#endif
