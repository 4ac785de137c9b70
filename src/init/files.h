/* files.h — what abox-init's file operations (files.c) and uploads
 * (files_write.c) share (files_common.c). Runs only inside the sandbox,
 * as its PID 1. */
#ifndef ABOX_INIT_FILES_H
#define ABOX_INIT_FILES_H

#include <stdbool.h>
#include <stdint.h>

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

void files_write_open(int ci, const struct proto_frame *f, const struct fs_req *r);
void files_write_data(int ci, const struct proto_frame *f);
void files_write_close(int ci, const struct proto_frame *f);

#endif
