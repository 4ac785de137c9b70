/* store — on-disk places of a sandbox. For now the runtime folder
 * (<runtime_dir>/<id>, mode 0700) that holds the host-only agent socket,
 * and its removal. Long-lived state comes with the state directory.
 * Runs in the CLI/daemon. */
#ifndef ABOX_STORE_H
#define ABOX_STORE_H

#include "base/base.h"

/* Creates <runtime_dir>/<id> (0700, runtime_dir created 0700 if needed),
 * binds and listens on <...>/init.sock and connects to it. Returns the
 * folder path in *dir (malloc'd). On failure nothing is left. */
int store_rundir_create(const char *runtime_dir, const char *id, char **dir, int *listen_fd,
			int *conn_fd, abox_error *err);
/* Removes the socket and the folder. Missing pieces are not errors. */
int store_rundir_remove(const char *dir, abox_error *err);

#endif
