/* layer/template_store.c — where templates live and how they change.
 *
 * A template is stored as immutable versions: <state>/templates/host.<gen>
 * folders, and the name `host` is a symlink to the current one. A version is
 * never modified or removed while a sandbox uses it, because it is the
 * lower layer of that sandbox's overlay and overlayfs forbids changing a
 * lower layer under a mounted overlay. Users hold a shared flock on their
 * version's folder; a rebuild (the host's files changed) makes a new
 * version, swaps the symlink atomically, and removes only the old versions
 * it can lock exclusively. Builders are serialized by templates/.lock.
 *
 * Long-lived sandboxes will record their version in their state and keep
 * it alive the same way.
 * Runs in the CLI/daemon. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "layer/copy.h"
#include "layer/layer.h"
#include "layer/snapshot.h"
#include "layer/template_meta.h"
#include "store/state.h"

/* Opens the version `name` points to and locks it shared. Returns the
 * lock fd and the version's path, or -ENOENT/-ESTALE when there is no
 * usable current version. */
static int open_current(const char *tdir, const char *name, char *path, size_t len, bool check)
{
	char link[4096], target[256];
	safe_snprintf(link, sizeof(link), "%s/%s", tdir, name);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return errno == EINVAL ? -ESTALE /* a folder of an older layout */ : -errno;
	target[n] = '\0';
	if (strchr(target, '/') || strncmp(target, name, strlen(name)) != 0)
		return -ESTALE;
	safe_snprintf(path, len, "%s/%s", tdir, target);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_SH) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	/* a sweep may have removed it between our open and our lock */
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_nlink == 0) {
		close(fd);
		return -ESTALE;
	}
	/* locked: a remover can no longer take it from under us; but it may
	 * have emptied it before we locked, or the host may have moved on */
	if (check && !host_template_fresh(path)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* Whether a long-lived sandbox (whose creator is gone, so nobody holds
 * its version's lock) still runs on this version. */
static bool sandbox_on(const char *state_dir, const char *id, const char *version_path)
{
	struct sb_state st = { 0 };
	if (state_read(state_dir, id, &st, NULL) < 0)
		return false;
	bool on = st.template_root && strcmp(st.template_root, version_path) == 0 &&
		  state_status(&st) != SB_DEAD;
	sb_state_free(&st);
	return on;
}

/* Whether a snapshot's layers stand on this version (its record names it):
 * sandboxes made from the snapshot later need it as it was. */
static bool snapshot_on(const char *state_dir, const char *id, const char *version_path)
{
	struct snap_record s;
	if (snap_read(state_dir, id, &s, NULL) < 0)
		return false;
	bool on = s.template_root && strcmp(s.template_root, version_path) == 0;
	snap_record_free(&s);
	return on;
}

/* Whether any of the records list gives (sandboxes or snapshots) stands
 * on this version by on(). */
static bool used_by(const char *state_dir, const char *version_path,
		    int (*list)(const char *state_dir, char ***ids, abox_error *err),
		    bool (*on)(const char *state_dir, const char *id, const char *version_path))
{
	char **ids = NULL;
	bool used = false;
	if (list(state_dir, &ids, NULL) < 0)
		return true; /* when in doubt, keep it */
	for (size_t i = 0; ids[i] && !used; i++)
		used = on(state_dir, ids[i], version_path);
	strv_free(ids);
	return used;
}

/* Removes old versions and abandoned builds that nobody uses. */
void template_sweep(const char *state_dir, const char *name);
static void sweep(const char *state_dir, const char *tdir, const char *name, const char *keep)
{
	DIR *d = opendir(tdir);
	if (!d)
		return;
	size_t nl = strlen(name);
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		bool version = strncmp(n, name, nl) == 0 && n[nl] == '.';
		bool build = strncmp(n, ".build.", 7) == 0; /* builders are serialized: any is dead */
		if ((!version && !build) || strcmp(n, keep) == 0)
			continue;
		size_t len = strlen(n);
		if (version && len > 5 && strcmp(n + len - 5, ".json") == 0) {
			/* metadata of a version that is gone */
			char dir[256];
			struct stat st;
			safe_snprintf(dir, sizeof(dir), "%.*s", (int)(len - 5), n);
			if (fstatat(dirfd(d), dir, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
				(void)unlinkat(dirfd(d), n, 0);
			continue;
		}
		int fd = openat(dirfd(d), n, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		char vpath[4400];
		safe_snprintf(vpath, sizeof(vpath), "%s/%s", tdir, n);
		if (flock(fd, LOCK_EX | LOCK_NB) == 0 &&
		    (build || (!used_by(state_dir, vpath, state_list, sandbox_on) &&
			       !used_by(state_dir, vpath, snap_list, snapshot_on))) &&
		    rm_rf_at(dirfd(d), n, 0) == 0 && version) {
			char meta[300];
			safe_snprintf(meta, sizeof(meta), "%s.json", n);
			(void)unlinkat(dirfd(d), meta, 0);
		}
		close(fd);
	}
	closedir(d);
}


static int build_host(const char *dir, void *ud, abox_error *err)
{
	(void)ud;
	return host_template_build("/", dir, err);
}

/* Builds a new version of template name in a .build folder (under the
 * templates lock, held by the caller), then makes it the current one:
 * rename to NAME.GEN, atomic switch of the NAME symlink, sweep of the
 * versions nobody uses any more. */
int template_publish(const char *state_dir, const char *tdir, const char *name, template_build_fn fn, void *ud,
		     const struct template_meta *meta, abox_error *err)
{
	char gen[9], build[4200], version[256], final[4200], link[4200], tmplink[4200];
	int r = random_id(gen, 8);
	if (r < 0)
		return abox_error_set(err, -r, "template: random");
	safe_snprintf(build, sizeof(build), "%s/.build.%s", tdir, gen);
	safe_snprintf(version, sizeof(version), "%s.%s", name, gen);
	safe_snprintf(final, sizeof(final), "%s/%s", tdir, version);
	safe_snprintf(link, sizeof(link), "%s/%s", tdir, name);
	safe_snprintf(tmplink, sizeof(tmplink), "%s/.link.%s", tdir, gen);

	r = fn(build, ud, err);
	if (r < 0) {
		(void)rm_rf_at(AT_FDCWD, build, 0);
		return r;
	}
	if (rename(build, final) < 0) {
		r = abox_error_set(err, errno, "template: rename '%s'", final);
		(void)rm_rf_at(AT_FDCWD, build, 0);
		return r;
	}
	/* before the switch: a current version always has its metadata */
	if (meta && (r = template_meta_write(final, meta, err)) < 0) {
		(void)rm_rf_at(AT_FDCWD, final, 0);
		return r;
	}
	/* a folder of the older layout (not a symlink) is moved aside so
	 * the symlink can take its name; the sweep removes it once unused */
	struct stat st;
	if (lstat(link, &st) == 0 && S_ISDIR(st.st_mode)) {
		char aside[4400];
		safe_snprintf(aside, sizeof(aside), "%s/%s.old%s", tdir, name, gen);
		if (rename(link, aside) < 0)
			return abox_error_set(err, errno, "template: move '%s' aside", link);
	}
	if (symlink(version, tmplink) < 0 || rename(tmplink, link) < 0) {
		r = abox_error_set(err, errno, "template: switch '%s' to '%s'", link, version);
		unlink(tmplink);
		return r;
	}
	sweep(state_dir, tdir, name, version);
	return 0;
}

static int rebuild(const char *state_dir, const char *tdir, const char *name, abox_error *err)
{
	char lockp[4096];
	safe_snprintf(lockp, sizeof(lockp), "%s/.lock", tdir);
	_cleanup_close_ int lk = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lk < 0)
		return abox_error_set(err, errno, "template: open '%s'", lockp);
	if (flock(lk, LOCK_EX) < 0)
		return abox_error_set(err, errno, "template: lock '%s'", lockp);

	/* someone may have built it while we waited */
	char path[4096];
	int fd = open_current(tdir, name, path, sizeof(path), true);
	if (fd >= 0) {
		close(fd);
		return 0;
	}

	return template_publish(state_dir, tdir, name, build_host, NULL, NULL, err);
}

int template_open(const char *state_dir, const char *name, struct template_info *out, abox_error *err)
{
	char tdir[4096], path[4096];
	int r;

	if (!state_dir || !name)
		return abox_error_setx(err, EINVAL, "template: missing argument");
	if (strlen(state_dir) > 3500)
		return abox_error_setx(err, ENAMETOOLONG, "state folder path is too long");
	safe_snprintf(tdir, sizeof(tdir), "%s/templates", state_dir);
	if (mkdir(state_dir, 0700) < 0 && errno != EEXIST)
		return abox_error_set(err, errno, "template: mkdir '%s'", state_dir);
	if (mkdir(tdir, 0700) < 0 && errno != EEXIST)
		return abox_error_set(err, errno, "template: mkdir '%s'", tdir);

	if (strcmp(name, "host") != 0) {
		/* an imported template: its versions never go stale */
		int fd = -ENOENT;
		for (int attempt = 0; template_name_ok(name) && attempt < 3; attempt++)
			if ((fd = open_current(tdir, name, path, sizeof(path), false)) != -ESTALE)
				break; /* -ESTALE: replaced while we opened it, try the new one */
		if (fd < 0)
			return abox_error_setx(err, ENOENT, "template '%s' not found (`abox template ls` lists them)",
					       name);
		struct template_info t = { .user_uid = 1000, .user_gid = 1000, .lock_fd = fd, .root = strdup(path) };
		if (!t.root) {
			template_info_free(&t);
			return abox_error_set(err, ENOMEM, "template");
		}
		if ((r = template_meta_read(path, &t.meta, err)) < 0) {
			template_info_free(&t);
			return r;
		}
		*out = t;
		return 0;
	}
	int fd = open_current(tdir, name, path, sizeof(path), true);
	for (int attempt = 0; attempt < 3 && fd < 0; attempt++) {
		if ((r = rebuild(state_dir, tdir, name, err)) < 0)
			return r;
		/* just built (by us or a concurrent creator): use it as it is,
		 * even if the host changed again meanwhile */
		fd = open_current(tdir, name, path, sizeof(path), false);
	}
	if (fd < 0)
		return abox_error_setx(err, EAGAIN, "template: '%s' keeps changing while opened", name);

	struct template_info t = { .user_uid = 1000, .user_gid = 1000, .lock_fd = fd };
	t.root = strdup(path);
	if (!t.root) {
		template_info_free(&t);
		return abox_error_set(err, ENOMEM, "template");
	}
	for (size_t i = 0; i < ELEMENTSOF(host_trees) && t.ntrees < ROOTFS_MAX_TREES; i++) {
		char p[256];
		safe_snprintf(p, sizeof(p), "/%s", host_trees[i]);
		struct stat st;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
			t.trees[t.ntrees] = strdup(host_trees[i]);
			if (!t.trees[t.ntrees]) {
				template_info_free(&t);
				return abox_error_set(err, ENOMEM, "template");
			}
			t.ntrees++;
		}
	}
	*out = t;
	return 0;
}

int template_open_version(const char *name, const char *version_root, struct template_info *out, abox_error *err)
{
	struct template_info t = { .user_uid = 1000, .user_gid = 1000, .lock_fd = -1 };
	t.lock_fd = open(version_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (t.lock_fd < 0 || flock(t.lock_fd, LOCK_SH) < 0 || fstat(t.lock_fd, &st) < 0 || st.st_nlink == 0) {
		int e = errno;
		template_info_free(&t);
		return abox_error_setx(err, e ? e : ENOENT, "template '%s': its version '%s' is gone", name,
				       version_root);
	}
	int r;
	if (!(t.root = strdup(version_root))) {
		template_info_free(&t);
		return abox_error_set(err, ENOMEM, "template");
	}
	if (strcmp(name, "host") == 0) {
		for (size_t i = 0; i < ELEMENTSOF(host_trees) && t.ntrees < ROOTFS_MAX_TREES; i++) {
			char p[256];
			safe_snprintf(p, sizeof(p), "/%s", host_trees[i]);
			struct stat ts;
			if (lstat(p, &ts) == 0 && S_ISDIR(ts.st_mode) && !(t.trees[t.ntrees++] = strdup(host_trees[i]))) {
				template_info_free(&t);
				return abox_error_set(err, ENOMEM, "template");
			}
		}
	} else if ((r = template_meta_read(version_root, &t.meta, err)) < 0) {
		template_info_free(&t);
		return r;
	}
	*out = t;
	return 0;
}

void template_info_free(struct template_info *t)
{
	if (!t)
		return;
	free(t->root);
	for (unsigned i = 0; i < t->ntrees; i++)
		free(t->trees[i]);
	if (t->lock_fd > 0)
		close(t->lock_fd);
	template_meta_free(&t->meta);
	memset(t, 0, sizeof(*t));
	t->lock_fd = -1;
}

static void sweep_name(const char *state_dir, const char *tdir, const char *name)
{
	char link[4200], target[256];
	safe_snprintf(link, sizeof(link), "%s/%s", tdir, name);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	/* a removed template: none of its versions is current any more */
	target[n > 0 ? n : 0] = '\0';
	sweep(state_dir, tdir, name, target);
}

void template_sweep(const char *state_dir, const char *name)
{
	char tdir[4096];
	safe_snprintf(tdir, sizeof(tdir), "%s/templates", state_dir);
	/* builders hold .lock: sweeping under it never races a rebuild */
	char lockp[4200];
	safe_snprintf(lockp, sizeof(lockp), "%s/.lock", tdir);
	int lk = open(lockp, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (lk < 0)
		return;
	if (flock(lk, LOCK_EX | LOCK_NB) == 0) {
		if (name) {
			sweep_name(state_dir, tdir, name);
		} else {
			/* every template that has versions, removed ones included */
			_cleanup_(strv_freep) char **names = calloc(1, sizeof(char *));
			size_t k = 0;
			DIR *d = opendir(tdir);
			struct dirent *de;
			while (names && d && (de = readdir(d))) {
				const char *dot = strrchr(de->d_name, '.');
				if (!dot || dot == de->d_name || de->d_type != DT_DIR)
					continue;
				char *nm = strndup(de->d_name, (size_t)(dot - de->d_name));
				bool dup = !nm || !template_name_ok(nm);
				for (size_t i = 0; !dup && i < k; i++)
					dup = strcmp(names[i], nm) == 0;
				char **nv = dup ? NULL : realloc(names, (k + 2) * sizeof(char *));
				if (!nv) {
					free(nm);
					continue;
				}
				names = nv;
				names[k++] = nm;
				names[k] = NULL;
			}
			if (d)
				closedir(d);
			for (size_t i = 0; names && i < k; i++)
				sweep_name(state_dir, tdir, names[i]);
		}
	}
	close(lk);
}

bool template_name_ok(const char *name)
{
	size_t n = 0;
	for (; name[n]; n++)
		if (!((name[n] >= 'a' && name[n] <= 'z') || (name[n] >= '0' && name[n] <= '9') ||
		      (n && (name[n] == '-' || name[n] == '_'))))
			return false;
	return n >= 1 && n <= 63;
}

/* One folder of the skeleton, below parent (an fd): an entry of the image
 * that is not a real folder (a symlink above all, which could point
 * anywhere on the host while we still work as root) is replaced. */
static int skeleton_dir(int parent, const char *name, mode_t mode, uid_t uid, int *out, abox_error *err)
{
	struct stat st;
	bool made = false;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
		int r = rm_rf_at(parent, name, 0);
		if (r < 0)
			return abox_error_set(err, -r, "template: replace /%s", name);
	}
	if (mkdirat(parent, name, mode) == 0)
		made = true;
	else if (errno != EEXIST)
		return abox_error_set(err, errno, "template: create /%s", name);
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return abox_error_set(err, errno, "template: open /%s", name);
	if (made && (fchown(fd, uid, uid) < 0 || fchmod(fd, mode) < 0)) {
		int e = errno;
		close(fd);
		return abox_error_set(err, e, "template: set up /%s", name);
	}
	*out = fd;
	return 0;
}

/* The folders every sandbox root needs, made when an image lacks them:
 * mount points, a world-writable /tmp and the home of `user`. Never
 * follows anything in the image. */
int template_add_skeleton(int root, abox_error *err)
{
	static const struct {
		const char *name;
		mode_t mode;
	} top[] = { { "etc", 0755 }, { "tmp", 01777 }, { "proc", 0555 }, { "dev", 0755 },
		    { "sys", 0555 }, { "root", 0700 } };
	for (size_t i = 0; i < ELEMENTSOF(top); i++) {
		int fd;
		int r = skeleton_dir(root, top[i].name, top[i].mode, 0, &fd, err);
		if (r < 0)
			return r;
		close(fd);
	}
	_cleanup_close_ int home = -EBADF, user = -EBADF;
	int r = skeleton_dir(root, "home", 0755, 0, &home, err);
	if (r < 0 || (r = skeleton_dir(home, "user", 0755, 1000, &user, err)) < 0)
		return r;
	return 0;
}

int template_remove(const char *state_dir, const char *name, abox_error *err)
{
	if (strcmp(name, "host") == 0)
		return abox_error_setx(err, EPERM, "template: 'host' is built in and cannot be removed");
	if (!template_name_ok(name))
		return abox_error_setx(err, ENOENT, "template '%s' not found", name);
	char tdir[4096], link[4200], lockp[4200];
	safe_snprintf(tdir, sizeof(tdir), "%s/templates", state_dir);
	safe_snprintf(link, sizeof(link), "%s/%s", tdir, name);
	safe_snprintf(lockp, sizeof(lockp), "%s/.lock", tdir);
	_cleanup_close_ int lk = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lk < 0 || flock(lk, LOCK_EX) < 0)
		return abox_error_set(err, errno, "template: lock '%s'", lockp);
	if (unlink(link) < 0)
		return errno == ENOENT ? abox_error_setx(err, ENOENT, "template '%s' not found", name)
				       : abox_error_set(err, errno, "template: remove '%s'", link);
	/* versions still in use by sandboxes stay until they are gone (the
	 * sweep keeps what a recorded sandbox uses) */
	sweep(state_dir, tdir, name, "");
	return 0;
}

int template_list(const char *state_dir, char ***names, abox_error *err)
{
	char tdir[4096];
	safe_snprintf(tdir, sizeof(tdir), "%s/templates", state_dir);
	size_t n = 0;
	char **v = calloc(2, sizeof(char *));
	if (!v || !(v[n++] = strdup("host"))) {
		strv_free(v);
		return abox_error_set(err, ENOMEM, "templates");
	}
	DIR *d = opendir(tdir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_type != DT_LNK || !template_name_ok(de->d_name) || strcmp(de->d_name, "host") == 0)
			continue;
		char **nv = realloc(v, (n + 2) * sizeof(char *));
		if (!nv)
			break;
		v = nv;
		if (!(v[n] = strdup(de->d_name)))
			break;
		v[++n] = NULL;
	}
	if (d)
		closedir(d);
	*names = v;
	return 0;
}
