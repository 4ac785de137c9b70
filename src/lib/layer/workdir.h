/* workdir — scratch folders of long template jobs (pulls, Dockerfile
 * builds) in the state folder: each holds a lock for as long as its job
 * lives, so that the next job removes the folders of jobs that died
 * (SIGKILL, a crash, a power loss) and never one still at work.
 * Runs in the CLI/daemon. */
#ifndef ABOX_LAYER_WORKDIR_H
#define ABOX_LAYER_WORKDIR_H

#include <stddef.h>

#include "base/base.h"

/* Makes parent (0700) if missing, removes the folders in it whose job is
 * gone, and makes a new one, locked: its path in out, the lock's fd (keep
 * it open while working; close it after removing the folder) returned. */
int workdir_new(const char *parent, char *out, size_t n, abox_error *err);

#endif
