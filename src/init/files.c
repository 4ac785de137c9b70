/* abox-init/files.c — file operations inside the sandbox, done by init on
 * the host's behalf.
 *
 * Why here: paths resolve in init's root, which is the sandbox's root, so
 * `..`, absolute symlinks and /proc/self/root lead only into the sandbox's
 * own tree; the host never opens a path inside a sandbox (the classic
 * `docker cp` symlink-race escapes). Each operation runs with the
 * requested user's filesystem identity (setfsuid/setfsgid), so it may do
 * exactly what that user may: a file written "as user" is owned by user,
 * and a folder only root may enter stays closed to it.
 *
 * Errors are the kernel's errno, sent as they are, so the host can tell
 * "not found" from "permission denied", "not a directory", "is a
 * directory", "exists" and "no space left". Reads and writes stream in
 * chunks: a file never sits in memory whole (writes: files_write.c).
 * Runs in abox-init. */
#include <dirent.h>
#include <stdio.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>

#include "base/base.h"
#include "files.h"
#include "init.h"
#include "proto/messages.h"

/* the same limits as ABOX_FILE_LIST_MAX_DEPTH/_ENTRIES of the public
 * header: a listing is bounded for whoever asks */
#define LIST_MAX_DEPTH 16
#define LIST_MAX_ENTRIES 100000

static void as_user(const struct init_ident *id)
{
	users_enter(id);
}

static void as_init(void)
{
	users_leave();
}

static int type_of(mode_t m)
{
	return S_ISREG(m) ? FS_TYPE_FILE : S_ISDIR(m) ? FS_TYPE_DIR : S_ISLNK(m) ? FS_TYPE_SYMLINK : FS_TYPE_OTHER;
}

static void put_entry(struct proto_msg *m, const char *path, const char *name, const struct stat *st, int dfd,
		      const char *rel)
{
	proto_put_str(m, F_PATH, path);
	proto_put_str(m, F_NAME, name);
	proto_put_u64(m, F_TYPE, (uint64_t)type_of(st->st_mode));
	proto_put_u64(m, F_SIZE, (uint64_t)st->st_size);
	proto_put_u64(m, F_MODE, st->st_mode & 07777);
	proto_put_u64(m, F_UID, st->st_uid);
	proto_put_u64(m, F_GID, st->st_gid);
	proto_put_i64(m, F_MTIME_MS, (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000);
	if (S_ISLNK(st->st_mode)) {
		char target[4096];
		ssize_t n = readlinkat(dfd, rel, target, sizeof(target) - 1);
		if (n >= 0) {
			target[n] = '\0';
			proto_put_str(m, F_TARGET, target);
		}
	}
}

static int parse(const struct proto_frame *f, struct fs_req *r)
{
	size_t off = 0;
	struct proto_field fl;
	int k;
	if ((k = users_ident(f, &r->id)) < 0)
		return k;
	while ((k = proto_field_next(f, &off, &fl)) > 0) {
		int e = 0;
		switch (fl.tag) {
		case F_PATH: free(r->path); r->path = NULL; e = proto_field_strdup(&fl, &r->path); break;
		case F_TARGET: free(r->target); r->target = NULL; e = proto_field_strdup(&fl, &r->target); break;
		case F_FLAGS: e = proto_field_u64(&fl, &r->flags); break;
		case F_DEPTH: e = proto_field_u64(&fl, &r->depth); break;
		default: break;
		}
		if (e < 0)
			return e;
	}
	if (k < 0)
		return k;
	if (!r->path || !r->path[0])
		return -EINVAL;
	/* relative paths are below the user's home (the host sends them
	 * relative only for users it cannot place itself) */
	char buf[4200];
	char **paths[] = { &r->path, &r->target };
	for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
		const char *p = *paths[i] ? users_path(&r->id, *paths[i], buf, sizeof(buf)) : NULL;
		if (*paths[i] && !p)
			return -ENAMETOOLONG;
		if (p == buf) {
			char *d = strdup(buf);
			if (!d)
				return -ENOMEM;
			free(*paths[i]);
			*paths[i] = d;
		}
	}
	return 0;
}

static void fs_req_free(struct fs_req *r)
{
	free(r->path);
	free(r->target);
}

static void fs_read(int ci, const struct proto_frame *f, const struct fs_req *r)
{
	int fd = files_openat(AT_FDCWD, r->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0);
	if (fd < 0) {
		files_error(ci, f, errno, r->path);
		return;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode) || !S_ISREG(st.st_mode)) {
		/* a FIFO or device would block PID 1 or never end */
		int e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		close(fd);
		files_error(ci, f, e, r->path);
		return;
	}
	static uint8_t buf[FS_CHUNK];
	uint64_t total = 0;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			files_error(ci, f, e, r->path);
			return;
		}
		if (n == 0)
			break;
		struct proto_msg m;
		proto_msg_init(&m, MSG_EV_DATA, f->id);
		proto_put_bytes(&m, F_DATA, buf, (size_t)n);
		init_queue(ci, &m);
		total += (uint64_t)n;
		/* write out as we go: a big file must not pile up in our queue */
		if (init_flush_blocking(ci) < 0)
			break;
	}
	close(fd);
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_OK, f->id);
	proto_put_u64(&m, F_SIZE, total);
	init_queue(ci, &m);
}

/* Walks a folder down to max_depth: with f, each entry is sent (and the
 * queue flushed as it grows, so a big tree never piles up in init); with
 * f NULL, entries are only counted. More than LIST_MAX_ENTRIES: -E2BIG. */
static int list_dir(int ci, const struct proto_frame *f, int dfd, const char *path, unsigned depth,
		    unsigned max_depth, unsigned *count)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		int e = errno;
		close(dfd);
		return -e;
	}
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (++*count > LIST_MAX_ENTRIES) {
			r = -E2BIG;
			break;
		}
		bool is_dir = de->d_type == DT_DIR;
		char child[4096];
		safe_snprintf(child, sizeof(child), "%s%s%s", path, strcmp(path, "/") == 0 ? "" : "/", de->d_name);
		if (f || de->d_type == DT_UNKNOWN) {
			struct stat st;
			if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue; /* gone meanwhile */
			is_dir = S_ISDIR(st.st_mode);
			if (f) {
				struct proto_msg m;
				proto_msg_init(&m, MSG_EV_ENTRY, f->id);
				put_entry(&m, child, de->d_name, &st, dirfd(d), de->d_name);
				init_queue(ci, &m);
				if (init_flush_blocking(ci) < 0) {
					r = -EPIPE; /* the host stopped reading */
					break;
				}
			}
		}
		if (is_dir && depth + 1 < max_depth) {
			int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
			if (sub >= 0) {
				int k = list_dir(ci, f, sub, child, depth + 1, max_depth, count);
				if (k == -E2BIG || k == -EPIPE)
					r = k;
			}
		}
	}
	closedir(d);
	return r;
}

/* A listing: counted first, so that a tree over the limit is refused
 * before any entry goes out (the host can then answer a clean error
 * instead of cutting a reply it already started), then sent. */
static void fs_list(int ci, const struct proto_frame *f, const struct fs_req *r)
{
	if (r->depth > LIST_MAX_DEPTH) {
		char msg[160];
		safe_snprintf(msg, sizeof(msg), "list: depth %llu is over the limit of %u",
			      (unsigned long long)r->depth, LIST_MAX_DEPTH);
		init_send_error(ci, f->id, EINVAL, msg);
		return;
	}
	unsigned depth = r->depth == 0 ? 1 : (unsigned)r->depth;
	for (int pass = 0; pass < 2; pass++) {
		int fd = files_openat(AT_FDCWD, r->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
		if (fd < 0) {
			files_error(ci, f, errno, r->path);
			return;
		}
		unsigned count = 0;
		int e = list_dir(ci, pass ? f : NULL, fd, r->path, 0, depth, &count);
		if (e == -E2BIG) {
			char msg[600];
			safe_snprintf(msg, sizeof(msg),
				      "list '%s': more than %u entries (the limit of a listing): ask for less depth",
				      r->path, LIST_MAX_ENTRIES);
			init_send_error(ci, f->id, E2BIG, msg);
			return;
		}
		if (e < 0) {
			files_error(ci, f, -e, r->path);
			return;
		}
	}
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_OK, f->id);
	init_queue(ci, &m);
}

void files_handle(int ci, const struct proto_frame *f)
{
	if (f->type == MSG_REQ_FS_DATA) {
		files_write_data(ci, f);
		return;
	}
	if (f->type == MSG_REQ_FS_CLOSE) {
		files_write_close(ci, f);
		return;
	}
	struct fs_req r = { 0 };
	int k = parse(f, &r);
	if (k == -ABOX_ENOUSER || k == -ERANGE) {
		char msg[200];
		safe_snprintf(msg, sizeof(msg), "%s: %s", files_what(f->type),
			      k == -ERANGE ? "the user's uid or gid in /etc/passwd is outside 0-65535"
					   : "no such user in the sandbox (not in its /etc/passwd)");
		init_send_error(ci, f->id, -k, msg);
		fs_req_free(&r);
		return;
	}
	if (k < 0) {
		files_error(ci, f, -k, r.path);
		fs_req_free(&r);
		return;
	}
	as_user(&r.id);
	struct stat st;
	struct proto_msg m;
	/* the name operations act in the folder their path names, opened
	 * through files_anchor (no magic link on the way) */
	char base[NAME_MAX + 1], tbase[NAME_MAX + 1];
	int dfd = -1, tdfd = -1, e = 0;
	if (f->type == MSG_REQ_FS_STAT || f->type == MSG_REQ_FS_MKDIR || f->type == MSG_REQ_FS_MOVE ||
	    f->type == MSG_REQ_FS_REMOVE) {
		if ((dfd = files_anchor(r.path, base, sizeof(base))) < 0)
			e = -dfd;
		else if (f->type == MSG_REQ_FS_MOVE && r.target &&
			 (tdfd = files_anchor(r.target, tbase, sizeof(tbase))) < 0)
			e = -tdfd;
		if (e == ENOENT && f->type == MSG_REQ_FS_REMOVE) {
			/* its folder is missing, so is it: nothing to remove
			 * (as below) */
			proto_msg_init(&m, MSG_EV_OK, f->id);
			init_queue(ci, &m);
			goto out;
		}
		if (e == ENOENT && f->type == MSG_REQ_FS_MKDIR) {
			/* its parents are missing: mkdir -p */
			e = -files_make_dirs(r.path, true);
			if (!e) {
				proto_msg_init(&m, MSG_EV_OK, f->id);
				proto_put_u64(&m, F_FLAGS, 1);
				init_queue(ci, &m);
				goto out;
			}
		}
		if (e) {
			files_error(ci, f, e, r.path);
			goto out;
		}
	}
	switch (f->type) {
	case MSG_REQ_FS_READ:
		fs_read(ci, f, &r);
		break;
	case MSG_REQ_FS_WRITE:
		files_write_open(ci, f, &r);
		break;
	case MSG_REQ_FS_STAT:
		if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			files_error(ci, f, errno, r.path);
			break;
		}
		proto_msg_init(&m, MSG_EV_OK, f->id);
		{
			const char *name = strrchr(r.path, '/');
			put_entry(&m, r.path, name && name[1] ? name + 1 : r.path, &st, dfd, base);
		}
		init_queue(ci, &m);
		break;
	case MSG_REQ_FS_LIST:
		fs_list(ci, f, &r);
		break;
	case MSG_REQ_FS_MKDIR: {
		bool made = mkdirat(dfd, base, 0755) == 0;
		e = made ? 0 : errno;
		if (e == ENOENT)
			e = -files_make_dirs(r.path, true), made = e == 0;
		else if (e == EEXIST &&
			 (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)))
			e = EEXIST; /* a file is in the way */
		else if (e == EEXIST)
			e = 0;
		if (e) {
			files_error(ci, f, e, r.path);
			break;
		}
		proto_msg_init(&m, MSG_EV_OK, f->id);
		proto_put_u64(&m, F_FLAGS, made ? 1 : 0);
		init_queue(ci, &m);
		break;
	}
	case MSG_REQ_FS_MOVE:
		if (!r.target || renameat(dfd, base, tdfd, tbase) < 0) {
			files_error(ci, f, r.target ? errno : EINVAL, r.path);
			break;
		}
		proto_msg_init(&m, MSG_EV_OK, f->id);
		init_queue(ci, &m);
		break;
	case MSG_REQ_FS_WATCH:
		as_init();
		watch_start(ci, f, r.path, &r.id, r.flags & FS_RECURSIVE);
		break;
	case MSG_REQ_FS_REMOVE: {
		/* a missing path is nothing to remove: envd's RemoveAll says so
		 * too (the SDKs' remove of a missing file succeeds) */
		e = rm_rf_strict_at(dfd, base);
		if (e < 0) {
			files_error(ci, f, -e, r.path);
			break;
		}
		proto_msg_init(&m, MSG_EV_OK, f->id);
		init_queue(ci, &m);
		break;
	}
	default:
		break;
	}
out:
	if (dfd >= 0)
		close(dfd);
	if (tdfd >= 0)
		close(tdfd);
	as_init();
	fs_req_free(&r);
}
