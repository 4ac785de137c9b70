/* store — on-disk places of a sandbox. For now the runtime folder
 * (<runtime_dir>/<id>, mode 0700) that holds the host-only agent socket,
 * and its removal. Long-lived state comes with the state directory.
 * Runs in the CLI/daemon. */
#ifndef ABOX_STORE_H
#define ABOX_STORE_H

#include "base/base.h"

struct cg_layout;

#define STORE_CGROUPS_FILE "cgroups"
/* the state folder the sandbox is recorded in (sandboxes made with other
 * --root values share the runtime folder) */
#define STORE_ROOT_FILE "root"

/* An ephemeral sandbox (one only its creator talks to) has no folder of
 * its own: its lock and its record are one file, <runtime_dir>/<id>.run.
 * A folder costs an inode and a data block to make and to free; on a
 * disk-backed /run that is ≈ 0.1 ms per `abox run`. */
#define STORE_RUN_SUFFIX ".run"

/* Creates <runtime_dir>/<id> (0700, runtime_dir created 0700 if needed),
 * locked (flock, held through *dir_fd for the sandbox's life: a folder
 * whose lock can be taken belongs to a dead sandbox), binds and listens on
 * <...>/init.sock and connects to it. Returns the folder path in *dir
 * (malloc'd).
 * With private_link (ephemeral), makes the locked record file
 * <runtime_dir>/<id>.run instead (*dir is its path, *dir_fd its fd), and
 * *listen_fd and *conn_fd are the two ends of a connected pair.
 * On failure nothing is left. */
int store_rundir_create(const char *runtime_dir, const char *id, bool private_link, char **dir, int *dir_fd,
			int *listen_fd, int *conn_fd, abox_error *err);
/* A new listening socket at <dir>/init.sock (the old one unlinked) and a
 * connection to it: for an init that let go of its socket (checkpoints). */
int store_rundir_relisten(const char *dir, int *listen_fd, int *conn_fd, abox_error *err);
/* Writes a small record file into the folder (e.g. the cgroup folders a
 * sandbox is about to make, so gc can remove them after a crash). */
int store_rundir_record(int dir_fd, const char *name, const char *content, abox_error *err);
/* The same for an ephemeral sandbox: the content of its record file. */
int store_runrec_write(int fd, const char *content, abox_error *err);
/* Removes leftovers of dead sandboxes: runtime folders nobody holds the
 * lock of (ephemeral sandboxes whose creator died) unless their record
 * says a long-lived init still runs, records whose init is gone, and the
 * cgroups they recorded. Cheap when there are none. *removed counts them. */
int store_gc(const char *runtime_dir, const char *state_dir, const struct cg_layout *layout,
	     unsigned *removed, abox_error *err);
/* Whether anything of ours still speaks for sandbox id: its runtime
 * folder or ephemeral record (any state folder's), a create under way,
 * or its record in state_dir. */
bool store_has_owner(const char *runtime_dir, const char *state_dir, const char *id);
/* Removes the cgroup folders a sandbox recorded (one path per line),
 * ending what still runs in them. Each path is checked as gc checks it
 * (layout may be NULL: then its filesystem must be a cgroup one), so a
 * tampered record removes nothing else. -EBUSY when a folder stays. */
int store_cgroups_remove(const char *record, const char *id, const struct cg_layout *layout, abox_error *err);
/* Removes the socket and the folder (or an ephemeral sandbox's record
 * file). Missing pieces are not errors. */
int store_rundir_remove(const char *dir, abox_error *err);

#endif
