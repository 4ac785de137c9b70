/* abox-init/watch.c — file watches (inotify) inside the sandbox, as the
 * requested user: events for create, write, remove, rename and chmod,
 * optionally recursive (folders made later are watched too), streamed to
 * the client that asked until it stops or hangs up. Bounded: a few
 * watches per client, a few thousand folders per watch.
 * Runs in abox-init. */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "base/base.h"
#include "files.h"
#include "init.h"
#include "proto/messages.h"

#define WATCHES_MAX 8
#define STR_(x) #x
#define STR(x) STR_(x)
#define DIRS_MAX 4096
#define MASK (IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE | IN_DELETE_SELF | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB)

struct watch {
	int fd; /* inotify, 0 = free slot */
	int client;
	uint32_t id;
	bool recursive;
	unsigned ndirs;
	int wd[DIRS_MAX];
	char *path[DIRS_MAX];
};

static struct watch watches[WATCHES_MAX];

static void emit(struct watch *w, const char *dir, const char *name, int type);

/* Watches the folder open at dfd (closed here), named path in events,
 * and with recursive its subfolders. The watch is added through our own
 * /proc/self/fd link to dfd, so the folder is the one files_openat
 * resolved (never a path crossing a magic link, see files.h), and
 * subfolders are opened below it without following symlinks. late: a
 * folder made while the watch runs, whose first entries may have come
 * before its watch did (a `mkdir -p a/b` or `mkdir d && touch d/f`):
 * each entry found is reported made (and written when it holds bytes),
 * as its own events would have said. */
static void add_dir_at(struct watch *w, int dfd, const char *path, unsigned depth, bool late)
{
	if (w->ndirs == DIRS_MAX || depth > 32) {
		close(dfd);
		return;
	}
	char self[40];
	safe_snprintf(self, sizeof(self), "/proc/self/fd/%d", dfd);
	int wd = inotify_add_watch(w->fd, self, MASK | IN_ONLYDIR);
	bool known = wd < 0;
	for (unsigned i = 0; i < w->ndirs && !known; i++)
		known = w->wd[i] == wd;
	char *copy = known ? NULL : strdup(path);
	if (known || !copy) {
		close(dfd);
		return;
	}
	w->wd[w->ndirs] = wd;
	w->path[w->ndirs] = copy;
	w->ndirs++;
	DIR *d = w->recursive ? fdopendir(dfd) : NULL;
	if (!d) {
		close(dfd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (late) {
			emit(w, path, de->d_name, FS_EV_CREATE);
			if (de->d_type == DT_REG &&
			    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_size > 0)
				emit(w, path, de->d_name, FS_EV_WRITE);
		}
		if (de->d_type != DT_DIR)
			continue;
		int sub = files_openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
				       0);
		if (sub < 0)
			continue;
		char subpath[4096];
		safe_snprintf(subpath, sizeof(subpath), "%s%s%s", path, strcmp(path, "/") ? "/" : "",
			      de->d_name);
		add_dir_at(w, sub, subpath, depth + 1, late);
	}
	closedir(d);
}

static void add_dir(struct watch *w, int dfd, const char *path, unsigned depth)
{
	add_dir_at(w, dfd, path, depth, false);
}

static void free_watch(struct watch *w)
{
	if (w->fd > 0)
		close(w->fd);
	for (unsigned i = 0; i < w->ndirs; i++)
		free(w->path[i]);
	memset(w, 0, sizeof(*w));
}

void watch_start(int ci, const struct proto_frame *f, const char *path, const struct init_ident *id, bool recursive)
{
	struct watch *w = NULL;
	for (unsigned i = 0; i < WATCHES_MAX && !w; i++)
		if (!watches[i].fd)
			w = &watches[i];
	if (!w) {
		init_send_error(ci, f->id, EMFILE, "watch: too many watches (the limit is " STR(WATCHES_MAX) " per sandbox)");
		return;
	}
	users_enter(id);
	int e = 0;
	int dfd = files_openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (dfd < 0)
		e = errno;
	if (!e) {
		w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (w->fd < 0) {
			e = errno;
			w->fd = 0;
		}
	}
	if (!e) {
		w->client = ci;
		w->id = f->id;
		w->recursive = recursive;
		add_dir(w, dfd, path, 0);
		dfd = -1;
		if (!w->ndirs)
			e = EACCES;
	}
	if (dfd >= 0)
		close(dfd);
	users_leave();
	if (e) {
		char msg[600];
		safe_snprintf(msg, sizeof(msg), "watch '%s': %s", path, errno_name(e) ? errno_name(e) : "error");
		free_watch(w);
		init_send_error(ci, f->id, e, msg);
		return;
	}
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_OK, f->id);
	init_queue(ci, &m);
}

void watch_stop(int ci, uint32_t id)
{
	for (unsigned i = 0; i < WATCHES_MAX; i++)
		if (watches[i].fd && watches[i].client == ci && watches[i].id == id)
			free_watch(&watches[i]);
}

void watch_client_gone(int ci)
{
	for (unsigned i = 0; i < WATCHES_MAX; i++)
		if (watches[i].fd && watches[i].client == ci)
			free_watch(&watches[i]);
}

void watch_client_moved(int from, int to)
{
	for (unsigned i = 0; i < WATCHES_MAX; i++)
		if (watches[i].fd && watches[i].client == from)
			watches[i].client = to;
}

unsigned watch_pollfds(struct pollfd *pfd)
{
	for (unsigned i = 0; i < WATCHES_MAX; i++)
		pfd[i] = (struct pollfd){ .fd = watches[i].fd ? watches[i].fd : -1, .events = POLLIN };
	return WATCHES_MAX;
}

static void emit(struct watch *w, const char *dir, const char *name, int type)
{
	char p[4096];
	safe_snprintf(p, sizeof(p), "%s%s%s", dir, name && *name ? (strcmp(dir, "/") ? "/" : "") : "", name ? name : "");
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_FS_EVENT, w->id);
	proto_put_str(&m, F_PATH, p);
	proto_put_u64(&m, F_TYPE, (uint64_t)type);
	init_queue(w->client, &m);
}

void watch_ready(const struct pollfd *pfd)
{
	static uint8_t buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (unsigned i = 0; i < WATCHES_MAX; i++) {
		struct watch *w = &watches[i];
		if (!w->fd || !pfd[i].revents)
			continue;
		ssize_t n = read(w->fd, buf, sizeof(buf));
		for (ssize_t off = 0; n > 0 && off < n;) {
			const struct inotify_event *ev = (const void *)(buf + off);
			off += (ssize_t)(sizeof(*ev) + ev->len);
			const char *dir = NULL;
			for (unsigned k = 0; k < w->ndirs; k++)
				if (w->wd[k] == ev->wd)
					dir = w->path[k];
			if (!dir)
				continue;
			const char *name = ev->len ? ev->name : "";
			if (ev->mask & IN_CREATE) {
				emit(w, dir, name, FS_EV_CREATE);
				if ((ev->mask & IN_ISDIR) && w->recursive) {
					char sub[4096];
					safe_snprintf(sub, sizeof(sub), "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", name);
					int sfd = files_openat(
						AT_FDCWD, sub,
						O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
					if (sfd >= 0)
						add_dir_at(w, sfd, sub, 0, true);
				}
			}
			if (ev->mask & (IN_MODIFY | IN_CLOSE_WRITE))
				emit(w, dir, name, FS_EV_WRITE);
			if (ev->mask & IN_DELETE)
				emit(w, dir, name, FS_EV_REMOVE);
			if (ev->mask & (IN_MOVED_FROM | IN_MOVED_TO))
				emit(w, dir, name, FS_EV_RENAME);
			if (ev->mask & IN_ATTRIB)
				emit(w, dir, name, FS_EV_CHMOD);
		}
	}
}
