/* files.h — what abox-init's file operations (files.c) and uploads
 * (files_write.c) share (files_common.c). Runs only inside the sandbox,
 * as its PID 1. */
#ifndef ABOX_INIT_FILES_H
#define ABOX_INIT_FILES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "init.h"
#include "proto/proto.h"

#define FS_CHUNK 65536

/* One parsed file request: its path (and a move's target), who it runs
 * as, its flags and a listing's depth. */
struct fs_req {
	char *path, *target;
	struct init_ident id;
	uint64_t flags, depth;
};

/* A file request's operation, for messages ("read", "write", ...). */
const char *files_what(uint16_t type);
/* Sends "<operation> '<path>': <errno name>" under the request's id. */
void files_error(int ci, const struct proto_frame *f, int code, const char *path);
/* mkdir -p of path's parents (or of path itself when self): 0 or
 * -errno. */
int files_make_dirs(const char *path, bool self);

/* Every path a request names is opened by these, never by a plain
 * open or a syscall on the whole path: the resolution refuses magic
 * links (/proc/PID/fd/N, root, cwd, exe) with ELOOP. Init holds the
 * writable layer's folder (INIT_LAYER_FD) and cgroup files, and as PID 1
 * may follow its own /proc/self/fd: a request for
 * "/proc/self/fd/4/upper/root" would otherwise reach the layer's raw
 * folders, beside the overlay, where a symlink planted in place of
 * upper/root or l/ is followed in the host's root at the sandbox's next
 * start. */
/* openat with RESOLVE_NO_MAGICLINKS (plain openat where the kernel has
 * no openat2): an fd, or -1 and errno. */
int files_openat(int dfd, const char *path, int flags, mode_t mode);
/* The folder holding path's last component, opened O_PATH (an fd, or
 * -errno), and that component in base (n bytes; "." for "/"), for the
 * *at system calls. */
int files_anchor(const char *path, char *base, size_t n);

void files_write_open(int ci, const struct proto_frame *f, const struct fs_req *r);
void files_write_data(int ci, const struct proto_frame *f);
void files_write_close(int ci, const struct proto_frame *f);

#endif
