/* store/rundir.c — see store.h.
 *
 * The agent socket lives in a 0700 root-owned folder on the host and is
 * handed to init as an already-listening fd: nothing inside the sandbox
 * can reach it by path (the folder is not in the sandbox's tree), and no
 * other host user can connect to it. */
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "store/store.h"

static int mkdir_0700(const char *p, abox_error *err)
{
	if (mkdir(p, 0700) == 0)
		return 0;
	if (errno != EEXIST)
		return abox_error_set(err, errno, "mkdir '%s'", p);
	struct stat st;
	if (lstat(p, &st) < 0)
		return abox_error_set(err, errno, "stat '%s'", p);
	/* a pre-made folder (or a symlink planted there) open to others would
	 * let them reach every sandbox's agent socket */
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return abox_error_setx(err, EPERM, "'%s' must be a folder owned by uid %u with mode 0700",
				       p, (unsigned)geteuid());
	return 0;
}

/* The folder appears under its final name already locked: it is made as
 * ".new-<id>", locked, then renamed, so `abox gc` (which takes the lock of
 * every folder it considers dead) can never remove a sandbox being made. */
static int make_locked(const char *runtime_dir, const char *id, const char *d, int *dir_fd, abox_error *err)
{
	char tmp[4096];
	safe_snprintf(tmp, sizeof(tmp), "%s/.new-%s", runtime_dir, id);
	if (mkdir(tmp, 0700) < 0)
		return abox_error_set(err, errno, "mkdir '%s'", tmp);
	int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0 || rename(tmp, d) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		rmdir(tmp);
		return abox_error_set(err, e, "create '%s'", d);
	}
	*dir_fd = fd;
	return 0;
}

/* The same for an ephemeral sandbox's record file: made as
 * ".new-<id>.run", locked, then renamed. */
static int make_locked_file(const char *runtime_dir, const char *id, const char *f, int *fd_out, abox_error *err)
{
	char tmp[4096];
	safe_snprintf(tmp, sizeof(tmp), "%s/.new-%s" STORE_RUN_SUFFIX, runtime_dir, id);
	int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return abox_error_set(err, errno, "create '%s'", tmp);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || rename(tmp, f) < 0) {
		int e = errno;
		close(fd);
		unlink(tmp);
		return abox_error_set(err, e, "create '%s'", f);
	}
	*fd_out = fd;
	return 0;
}

static bool is_run_record(const char *path)
{
	size_t n = strlen(path), k = strlen(STORE_RUN_SUFFIX);
	return n > k && strcmp(path + n - k, STORE_RUN_SUFFIX) == 0;
}

int store_rundir_create(const char *runtime_dir, const char *id, bool private_link, char **dir, int *dir_fd,
			int *listen_fd, int *conn_fd, abox_error *err)
{
	int r;
	if ((r = mkdir_0700(runtime_dir, err)) < 0)
		return r;
	_cleanup_free_ char *d = NULL;
	_cleanup_close_ int dfd = -EBADF;

	if (private_link) {
		if (asprintf(&d, "%s/%s" STORE_RUN_SUFFIX, runtime_dir, id) < 0)
			return abox_error_set(err, ENOMEM, "rundir");
		if ((r = make_locked_file(runtime_dir, id, d, &dfd, err)) < 0)
			return r;
		/* nobody else will ever connect: a connected pair, and no
		 * socket file to make and remove */
		int sp[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
			r = abox_error_set(err, errno, "socketpair");
			(void)store_rundir_remove(d, NULL);
			return r;
		}
		*conn_fd = sp[0];
		*listen_fd = sp[1];
		*dir_fd = TAKE_FD(dfd);
		*dir = TAKE_PTR(d);
		return 0;
	}
	if (asprintf(&d, "%s/%s", runtime_dir, id) < 0)
		return abox_error_set(err, ENOMEM, "rundir");
	if ((r = make_locked(runtime_dir, id, d, &dfd, err)) < 0)
		return r;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/init.sock", d);
	_cleanup_close_ int l = -EBADF, c = -EBADF;
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path)) {
		r = abox_error_setx(err, ENAMETOOLONG, "socket path '%s/init.sock' is too long", d);
		goto fail;
	}
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || c < 0) {
		r = abox_error_set(err, errno, "socket");
		goto fail;
	}
	if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 64) < 0) {
		r = abox_error_set(err, errno, "listen on '%s'", sa.sun_path);
		goto fail;
	}
	/* connecting before init runs is fine: the connection waits in the
	 * backlog, and the first request can be sent right away */
	if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = abox_error_set(err, errno, "connect '%s'", sa.sun_path);
		goto fail;
	}
	*listen_fd = TAKE_FD(l);
	*conn_fd = TAKE_FD(c);
	*dir_fd = TAKE_FD(dfd);
	*dir = TAKE_PTR(d);
	return 0;
fail:
	(void)store_rundir_remove(d, NULL);
	return r;
}

int store_rundir_record(int dir_fd, const char *name, const char *content, abox_error *err)
{
	_cleanup_close_ int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return abox_error_set(err, errno, "record '%s'", name);
	int r = write_full(fd, content, strlen(content));
	if (r < 0)
		return abox_error_set(err, -r, "record '%s'", name);
	return 0;
}

int store_runrec_write(int fd, const char *content, abox_error *err)
{
	int r = write_full(fd, content, strlen(content));
	if (r < 0)
		return abox_error_set(err, -r, "record the cgroups");
	return 0;
}

int store_rundir_remove(const char *dir, abox_error *err)
{
	if (!dir)
		return 0;
	if (is_run_record(dir)) {
		if (unlink(dir) < 0 && errno != ENOENT)
			return abox_error_set(err, errno, "remove '%s'", dir);
		return 0;
	}
	char p[4096];
	snprintf(p, sizeof(p), "%s/" STORE_CGROUPS_FILE, dir);
	if (unlink(p) < 0 && errno != ENOENT)
		return abox_error_set(err, errno, "remove '%s'", p);
	snprintf(p, sizeof(p), "%s/" STORE_ROOT_FILE, dir);
	if (unlink(p) < 0 && errno != ENOENT)
		return abox_error_set(err, errno, "remove '%s'", p);
	snprintf(p, sizeof(p), "%s/init.sock", dir);
	if (unlink(p) < 0 && errno != ENOENT)
		return abox_error_set(err, errno, "remove '%s'", p);
	if (rmdir(dir) < 0 && errno != ENOENT)
		return abox_error_set(err, errno, "remove '%s'", dir);
	return 0;
}

int store_rundir_relisten(const char *dir, int *listen_fd, int *conn_fd, abox_error *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/init.sock", dir);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return abox_error_setx(err, ENAMETOOLONG, "socket path '%s/init.sock' is too long", dir);
	_cleanup_close_ int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	_cleanup_close_ int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || c < 0)
		return abox_error_set(err, errno, "socket");
	(void)unlink(sa.sun_path);
	if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 64) < 0)
		return abox_error_set(err, errno, "listen on '%s'", sa.sun_path);
	if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return abox_error_set(err, errno, "connect '%s'", sa.sun_path);
	*listen_fd = TAKE_FD(l);
	*conn_fd = TAKE_FD(c);
	return 0;
}
