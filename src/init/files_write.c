/* abox-init/files_write.c — uploads into the sandbox: one write in
 * progress per client, opened as the requested user (FS_WRITE), fed by
 * data frames under its id (FS_DATA, each bounded by the sandbox's
 * memory limit when the layer is in memory) and closed with its size or
 * its first error (FS_CLOSE). A client that goes away leaves no fd open.
 * Runs in abox-init. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "base/base.h"
#include "files.h"
#include "init.h"
#include "proto/messages.h"

/* The write in progress per client (one at a time; the host sends its
 * data frames in order under the FS_WRITE's id). */
static struct {
	uint32_t id;
	int fd;
	int error; /* first error: later data is dropped, close reports it */
	uint64_t size;
	char path[4096];
	struct init_ident who;
} writes[INIT_MAX_CLIENTS];

void files_client_gone(int ci)
{
	if (writes[ci].fd > 0)
		close(writes[ci].fd);
	memset(&writes[ci], 0, sizeof(writes[ci]));
}

void files_client_moved(int from, int to)
{
	writes[to] = writes[from];
	memset(&writes[from], 0, sizeof(writes[from]));
}

void files_write_open(int ci, const struct proto_frame *f, const struct fs_req *r)
{
	files_client_gone(ci);
	writes[ci].id = f->id;
	writes[ci].who = r->id;
	safe_snprintf(writes[ci].path, sizeof(writes[ci].path), "%s", r->path);
	int e = 0;
	if ((r->flags & FS_PARENTS) && (e = files_make_dirs(r->path, false)) < 0) {
		writes[ci].error = -e;
		return;
	}
	int fd = files_openat(AT_FDCWD, r->path,
			      O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0644);
	if (fd < 0) {
		writes[ci].error = errno;
		return;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		writes[ci].error = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		close(fd);
		return;
	}
	writes[ci].fd = fd;
}

static void write_data(int ci, const struct proto_frame *f)
{
	if (writes[ci].id != f->id || writes[ci].error || writes[ci].fd <= 0)
		return;
	size_t off = 0;
	struct proto_field fl;
	while (proto_field_next(f, &off, &fl) > 0) {
		if (fl.tag != F_DATA)
			continue;
		/* a layer in memory: an upload must not push init past the
		 * sandbox's memory limit (see memguard.c) */
		if (memguard_room(writes[ci].fd, fl.len) < 0) {
			writes[ci].error = ENOSPC;
			return;
		}
		if (write_full(writes[ci].fd, fl.val, fl.len) < 0) {
			writes[ci].error = errno ? errno : EIO;
			return;
		}
		writes[ci].size += fl.len;
	}
}

void files_write_close(int ci, const struct proto_frame *f)
{
	if (writes[ci].id != f->id) {
		files_error(ci, f, EBADF, "");
		return;
	}
	int e = writes[ci].error;
	/* ENOSPC can also surface only at close on some filesystems */
	if (!e && writes[ci].fd > 0 && close(writes[ci].fd) < 0)
		e = errno;
	else if (writes[ci].fd > 0 && e)
		close(writes[ci].fd);
	writes[ci].fd = 0;
	if (e) {
		struct proto_frame g = *f;
		g.type = MSG_REQ_FS_WRITE;
		files_error(ci, &g, e, writes[ci].path);
	} else {
		struct proto_msg m;
		proto_msg_init(&m, MSG_EV_OK, f->id);
		proto_put_u64(&m, F_SIZE, writes[ci].size);
		init_queue(ci, &m);
	}
	memset(&writes[ci], 0, sizeof(writes[ci]));
}

/* A data frame of the write in progress, written as the user who opened
 * it. */
void files_write_data(int ci, const struct proto_frame *f)
{
	if (writes[ci].id == f->id)
		users_enter(&writes[ci].who);
	write_data(ci, f);
	users_leave();
}
