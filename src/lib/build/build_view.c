/* build/build_view.c — a stage's files as the sandbox would see them:
 * its layers (newest first) over its template, looked up without
 * merging (a destination's folders, its symlinks resolved as docker
 * resolves them) or merged into one folder (COPY --from, the template at
 * the end); and the folders a new layer needs, with the attributes the
 * stage already gives them. */
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/openat2.h"
#include "base/sha256.h"
#include "build/build.h"
#include "build/dockerfile.h"
#include "layer/copy.h"
#include "layer/layer.h"
#include "layer/snapshot.h"

#define MAX_HOPS 40

long build_beneath(int dir, const char *path, int flags)
{
	/* openat2 refuses O_PATH with any flag but these */
	if (!(flags & O_PATH))
		flags |= O_NOCTTY;
	struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC),
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
	return openat2_retry(dir, path, &how, sizeof(how));
}

/* ---- the stage's view: its layers (newest first) over its template */

void build_view_free(struct build_viewl *v)
{
	strv_free(v->layers);
	free(v->root);
}

int build_view_open(struct build *b, struct stage *s, struct build_viewl *v, abox_error *err)
{
	memset(v, 0, sizeof(*v));
	v->root = strdup(s->template_root);
	if (!v->root)
		return abox_error_set(err, ENOMEM, "build");
	if (!s->snapshot)
		return 0;
	char **chain = NULL;
	int r = snap_chain(build_state_dir(b), s->snapshot, &chain, NULL, err);
	if (r < 0)
		return r;
	size_t n = strv_length(chain);
	v->layers = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; v->layers && i < n; i++)
		if (asprintf(&v->layers[i], "%s/root", chain[i]) < 0)
			v->layers[i] = NULL;
	strv_free(chain);
	return v->layers ? 0 : abox_error_set(err, ENOMEM, "build");
}

static bool whiteout(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);
}

/* lstat of path (absolute, no symlinks in its folders) as the stage sees
 * it; *where: the folder it was found in. 0 or -ENOENT. */
int build_view_lstat(const struct build_viewl *v, const char *path, struct stat *st, const char **where)
{
	char p[4600];
	for (size_t i = 0; v->layers && v->layers[i]; i++) {
		safe_snprintf(p, sizeof(p), "%s%s", v->layers[i], path);
		if (lstat(p, st) == 0) {
			if (whiteout(st))
				return -ENOENT;
			*where = v->layers[i];
			return 0;
		}
	}
	safe_snprintf(p, sizeof(p), "%s%s", v->root, path);
	if (lstat(p, st) == 0) {
		*where = v->root;
		return 0;
	}
	return -ENOENT;
}

/* path (absolute) with every symlink of the stage's view resolved, as
 * the sandbox would see it; the last components may not exist. */
int build_view_resolve(const struct build_viewl *v, const char *path, char *out, size_t n)
{
	char todo[4096], done[4096] = "";
	safe_snprintf(todo, sizeof(todo), "%s", path);
	int hops = 0;
	char *p = todo;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		size_t cl = strcspn(p, "/");
		char comp[256];
		if (cl >= sizeof(comp))
			return -ENAMETOOLONG;
		memcpy(comp, p, cl);
		comp[cl] = '\0';
		p += cl;
		if (strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0) {
			char *slash = strrchr(done, '/');
			if (slash)
				*slash = '\0';
			continue;
		}
		char next[4096];
		safe_snprintf(next, sizeof(next), "%s/%s", done, comp);
		struct stat st;
		const char *where;
		if (build_view_lstat(v, next, &st, &where) == 0 && S_ISLNK(st.st_mode)) {
			if (++hops > MAX_HOPS)
				return -ELOOP;
			char lp[4600], target[4096];
			safe_snprintf(lp, sizeof(lp), "%s%s", where, next);
			ssize_t tl = readlink(lp, target, sizeof(target) - 1);
			if (tl < 0)
				return -errno;
			target[tl] = '\0';
			char rest[4096];
			safe_snprintf(rest, sizeof(rest), "%s/%s", target, p);
			if (target[0] == '/')
				done[0] = '\0';
			safe_snprintf(todo, sizeof(todo), "%s", rest);
			p = todo;
			continue;
		}
		safe_snprintf(done, sizeof(done), "%s", next);
	}
	safe_snprintf(out, n, "%s", done[0] ? done : "/");
	return 0;
}

int build_view(struct build *b, struct stage *s, char **out, abox_error *err)
{
	char dir[4300];
	safe_snprintf(dir, sizeof(dir), "%s/view-XXXXXX", build_tmp(b));
	if (!mkdtemp(dir))
		return abox_error_set(err, errno, "build: create a folder in '%s'", build_tmp(b));
	_cleanup_close_ int lk = snap_lock(build_state_dir(b), false, err);
	if (lk < 0)
		return lk;
	struct build_viewl v;
	int r = build_view_open(b, s, &v, err);
	_cleanup_close_ int dst = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int src = open(v.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r >= 0 && (dst < 0 || src < 0))
		r = abox_error_set(err, errno, "build: open '%s'", dst < 0 ? dir : v.root);
	if (r >= 0)
		r = layer_copy_tree(src, dst, NULL, err);
	size_t n = strv_length(v.layers);
	for (size_t i = n; r >= 0 && i-- > 0;) {
		_cleanup_close_ int l = open(v.layers[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (l < 0 && errno == ENOENT)
			continue;
		r = l < 0 ? abox_error_set(err, errno, "build: open '%s'", v.layers[i])
			  : layer_merge_tree(l, dst, NULL, err);
	}
	build_view_free(&v);
	if (r < 0) {
		(void)rm_rf_at(AT_FDCWD, dir, 0);
		return r;
	}
	*out = strdup(dir);
	return *out ? 0 : abox_error_set(err, ENOMEM, "build");
}

/* ---- the destination's folders in the layer */

/* Creates the folders of path (resolved, absolute) below the layer root
 * lfd, each with the owner and mode the stage already gives it. */
int build_make_parents(const struct build_viewl *v, int lfd, const char *path, abox_error *err)
{
	char cur[4096] = "";
	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		size_t cl = strcspn(p, "/");
		size_t l = strlen(cur);
		safe_snprintf(cur + l, sizeof(cur) - l, "/%.*s", (int)cl, p);
		p += cl;
		struct stat st;
		const char *where;
		bool have = build_view_lstat(v, cur, &st, &where) == 0 && S_ISDIR(st.st_mode);
		if (mkdirat(lfd, cur + 1, 0755) < 0 && errno != EEXIST)
			return abox_error_set(err, errno, "build: create '%s'", cur);
		if (have && (fchownat(lfd, cur + 1, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0 ||
			     fchmodat(lfd, cur + 1, st.st_mode & 07777, 0) < 0))
			return abox_error_set(err, errno, "build: set up '%s'", cur);
	}
	return 0;
}

/* A fresh layer folder (L/upper/root) for build_layer; its root's fd. */
int build_new_layer(struct build *b, char *dir, size_t n, abox_error *err)
{
	safe_snprintf(dir, n, "%s/layer-XXXXXX", build_tmp(b));
	if (!mkdtemp(dir))
		return abox_error_set(err, errno, "build: create a folder in '%s'", build_tmp(b));
	char p[4400];
	safe_snprintf(p, sizeof(p), "%s/upper", dir);
	if (mkdir(p, 0755) < 0)
		return abox_error_set(err, errno, "build: create '%s'", p);
	safe_snprintf(p, sizeof(p), "%s/upper/root", dir);
	if (mkdir(p, 0755) < 0)
		return abox_error_set(err, errno, "build: create '%s'", p);
	int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? abox_error_set(err, errno, "build: open '%s'", p) : fd;
}

int build_mkdir(struct build *b, struct stage *s, const char *path, abox_error *err)
{
	struct build_viewl v;
	_cleanup_close_ int lk = snap_lock(build_state_dir(b), false, err);
	if (lk < 0)
		return lk;
	int r = build_view_open(b, s, &v, err);
	if (r < 0)
		return r;
	char res[4096];
	struct stat st;
	const char *where;
	r = build_view_resolve(&v, path, res, sizeof(res));
	if (r < 0) {
		build_view_free(&v);
		return abox_error_set(err, -r, "build: WORKDIR %s", path);
	}
	struct sha256 h;
	sha256_init(&h);
	sha256_update(&h, s->key, 65);
	sha256_update(&h, "mkdir", 6);
	sha256_update(&h, res, strlen(res) + 1);
	char key[65];
	sha256_hex(&h, key);
	if (build_view_lstat(&v, res, &st, &where) == 0 && S_ISDIR(st.st_mode)) {
		build_view_free(&v);
		memcpy(s->key, key, 65);
		build_say(b, "step %u/%u: WORKDIR %s", b->step, b->steps, path);
		return 0; /* already there: no layer */
	}
	char what[4200];
	safe_snprintf(what, sizeof(what), "WORKDIR %s", path);
	close(lk);
	lk = -1;
	if (build_cached(b, s, key, what)) {
		build_view_free(&v);
		return 0;
	}
	build_say(b, "step %u/%u: %s", b->step, b->steps, what);
	char dir[4300];
	int lfd = build_new_layer(b, dir, sizeof(dir), err);
	r = lfd < 0 ? lfd : build_make_parents(&v, lfd, res, err);
	build_view_free(&v);
	if (lfd >= 0)
		close(lfd);
	if (r >= 0)
		r = build_layer(b, s, key, dir, err);
	(void)rm_rf_at(AT_FDCWD, dir, 0);
	return r;
}
