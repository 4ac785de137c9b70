/* build/build_copy.c — COPY, ADD and WORKDIR's folder as layers written
 * directly (no sandbox), and a stage's files merged into one folder.
 *
 * Sources are read from the build context (or another stage's merged
 * folder) only through fds opened beneath it with RESOLVE_BENEATH: a
 * `COPY ../secret` or a symlink in the context that points out of it is
 * refused, never followed (the context escape docker also refuses).
 * Destinations are resolved in the stage's own view, following its
 * symlinks as docker does (COPY x /bin/ lands in /usr/bin where /bin
 * links there), and folders the layer must add take the attributes the
 * stage already gives them, so a COPY into /home/user does not hand the
 * user's home to root. Setuid and setgid bits are not copied. */
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
#include "backend.h"
#include "base/sha256.h"
#include "build/build.h"
#include "build/dockerfile.h"
#include "layer/copy.h"
#include "layer/layer.h"
#include "layer/snapshot.h"
#include "layer/unpack_run.h"

/* ---- sources */

struct source {
	char *rel; /* build_beneath the source folder */
};

struct srcs {
	struct source *v;
	size_t n;
};

static int add_source(struct srcs *s, const char *rel)
{
	struct source *nv = realloc(s->v, (s->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	s->v = nv;
	if (!(s->v[s->n].rel = strdup(rel)))
		return -ENOMEM;
	s->n++;
	return 0;
}

/* Every path below dir (relative), depth first, for globs. */
static int walk(int dir, const char *rel, char ***out, size_t *n, unsigned depth)
{
	if (depth > LAYER_COPY_MAX_DEPTH)
		return -ELOOP;
	DIR *d = fdopendir(dup(dir));
	if (!d)
		return -errno;
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char p[4096];
		safe_snprintf(p, sizeof(p), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
		char **nv = realloc(*out, (*n + 2) * sizeof(char *));
		if (!nv || !(nv[*n] = strdup(p))) {
			if (nv)
				*out = nv;
			r = -ENOMEM;
			break;
		}
		*out = nv;
		nv[++*n] = NULL;
		if (de->d_type == DT_DIR) {
			int sub = openat(dir, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				r = walk(sub, p, out, n, depth + 1);
				close(sub);
			}
		}
	}
	closedir(d);
	return r;
}

/* A source as written, made relative to the source folder: leading /
 * dropped, . and .. resolved; a .. out of it is refused. */
static int clean_rel(const char *src, char *out, size_t n)
{
	char tmp[4096];
	safe_snprintf(tmp, sizeof(tmp), "%s", src);
	out[0] = '\0';
	for (char *save = NULL, *c = strtok_r(tmp, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			char *slash = strrchr(out, '/');
			if (!out[0])
				return -EXDEV;
			if (slash)
				*slash = '\0';
			else
				out[0] = '\0';
			continue;
		}
		size_t l = strlen(out);
		safe_snprintf(out + l, n - l, "%s%s", l ? "/" : "", c);
	}
	return 0;
}

/* ---- hashing and copying one tree */

struct copy_job {
	struct build *b;
	int src; /* the source folder */
	const struct build_ignore *ig;
	uid_t uid;
	gid_t gid;
	int chmod; /* -1: keep the source's mode */
	struct sha256 h;
	bool hashing; /* first pass: hash only */
	uint64_t files, bytes;
};

static void hash_entry(struct copy_job *j, const char *dst, const struct stat *st, const char *extra,
		       size_t extra_len)
{
	char head[4300];
	int l = snprintf(head, sizeof(head), "%s\n%o\n%lld\n", dst, st->st_mode & (S_IFMT | 0777),
			 (long long)st->st_size);
	sha256_update(&j->h, head, (size_t)l);
	if (extra)
		sha256_update(&j->h, extra, extra_len);
}

static int copy_data(int in, int out, struct copy_job *j)
{
	char buf[1 << 16];
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		if (j->hashing)
			sha256_update(&j->h, buf, (size_t)n);
		else if (write_full(out, buf, (size_t)n) < 0)
			return -errno;
		j->bytes += (uint64_t)n;
	}
}

static mode_t mode_of(const struct copy_job *j, const struct stat *st)
{
	/* no setuid/setgid from a build context: a template is no way to
	 * raise privileges */
	return j->chmod >= 0 ? (mode_t)j->chmod : st->st_mode & 0777;
}

/* Copies (or hashes) the entry rel of the source folder to dst (a path
 * below layer root dfd). */
static int copy_entry(struct copy_job *j, const char *rel, int dfd, const char *dst, unsigned depth,
		      abox_error *err)
{
	if (depth > LAYER_COPY_MAX_DEPTH)
		return abox_error_setx(err, ELOOP, "build: '%s' is nested too deep", rel);
	if (j->ig && *rel && build_ignored(j->ig, rel))
		return 0;
	struct stat st;
	long fd = build_beneath(j->src, *rel ? rel : ".", O_PATH | O_NOFOLLOW);
	if (fd < 0)
		return abox_error_set(err, errno == EXDEV ? EXDEV : errno, "build: '%s'%s", rel,
				      errno == EXDEV ? " is outside the source folder: refused" : "");
	int r = fstat((int)fd, &st) < 0 ? -errno : 0;
	if (r < 0) {
		close((int)fd);
		return abox_error_set(err, -r, "build: '%s'", rel);
	}
	if (S_ISLNK(st.st_mode)) {
		char target[4096];
		ssize_t tl = readlinkat((int)fd, "", target, sizeof(target) - 1);
		close((int)fd);
		if (tl < 0)
			return abox_error_set(err, errno, "build: read link '%s'", rel);
		target[tl] = '\0';
		if (j->hashing) {
			hash_entry(j, dst, &st, target, (size_t)tl);
			return 0;
		}
		(void)unlinkat(dfd, dst, 0);
		if (symlinkat(target, dfd, dst) < 0 ||
		    fchownat(dfd, dst, j->uid, j->gid, AT_SYMLINK_NOFOLLOW) < 0)
			return abox_error_set(err, errno, "build: make link '%s'", dst);
		j->files++;
		return 0;
	}
	close((int)fd);
	if (S_ISREG(st.st_mode)) {
		long in = build_beneath(j->src, rel, O_RDONLY | O_NOFOLLOW);
		if (in < 0)
			return abox_error_set(err, errno, "build: open '%s'", rel);
		int out = -1;
		if (j->hashing) {
			hash_entry(j, dst, &st, NULL, 0);
		} else {
			(void)unlinkat(dfd, dst, 0);
			out = openat(dfd, dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (out < 0) {
				close((int)in);
				return abox_error_set(err, errno, "build: create '%s'", dst);
			}
		}
		r = copy_data((int)in, out, j);
		close((int)in);
		if (out >= 0) {
			if (r == 0 && (fchown(out, j->uid, j->gid) < 0 || fchmod(out, mode_of(j, &st)) < 0))
				r = -errno;
			close(out);
		}
		j->files++;
		return r < 0 ? abox_error_set(err, -r, "build: copy '%s'", rel) : 0;
	}
	if (!S_ISDIR(st.st_mode))
		return 0; /* devices, fifos, sockets: not copied */
	if (j->hashing) {
		hash_entry(j, dst, &st, NULL, 0);
	} else {
		if (mkdirat(dfd, dst, 0755) < 0 && errno != EEXIST)
			return abox_error_set(err, errno, "build: create '%s'", dst);
		if (fchownat(dfd, dst, j->uid, j->gid, AT_SYMLINK_NOFOLLOW) < 0 ||
		    fchmodat(dfd, dst, mode_of(j, &st), 0) < 0)
			return abox_error_set(err, errno, "build: set up '%s'", dst);
	}
	long dir = build_beneath(j->src, *rel ? rel : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	if (dir < 0)
		return abox_error_set(err, errno, "build: open '%s'", rel);
	char **names = NULL;
	size_t n = 0;
	DIR *d = fdopendir((int)dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			char **nv = realloc(names, (n + 2) * sizeof(char *));
			if (!nv)
				break;
			names = nv;
			names[n++] = strdup(de->d_name);
			names[n] = NULL;
		}
	if (d)
		closedir(d);
	/* sorted, so that the hash does not depend on the directory's order */
	for (size_t a = 0; a < n; a++)
		for (size_t c = a + 1; c < n; c++)
			if (names[a] && names[c] && strcmp(names[a], names[c]) > 0) {
				char *t = names[a];
				names[a] = names[c];
				names[c] = t;
			}
	r = 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (!names[i]) {
			r = abox_error_set(err, ENOMEM, "build");
			break;
		}
		char crel[4096], cdst[4096];
		safe_snprintf(crel, sizeof(crel), "%s%s%s", rel, *rel ? "/" : "", names[i]);
		safe_snprintf(cdst, sizeof(cdst), "%s/%s", dst, names[i]);
		r = copy_entry(j, crel, dfd, cdst, depth + 1, err);
	}
	strv_free(names);
	return r;
}

/* The entries of folder rel, copied into dst (which exists). */
static int copy_dir_contents(struct copy_job *j, const char *rel, int dfd, const char *dst, abox_error *err)
{
	long dir = build_beneath(j->src, *rel ? rel : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	if (dir < 0)
		return abox_error_set(err, errno, "build: open '%s'", rel);
	DIR *d = fdopendir((int)dir);
	if (!d) {
		close((int)dir);
		return abox_error_set(err, errno, "build: open '%s'", rel);
	}
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char crel[4096], cdst[4096];
		safe_snprintf(crel, sizeof(crel), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
		safe_snprintf(cdst, sizeof(cdst), "%s/%s", dst, de->d_name);
		r = copy_entry(j, crel, dfd, cdst, 1, err);
	}
	closedir(d);
	return r;
}

static bool globby(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* Is rel a tar archive (plain, gzip, bzip2, xz or zstd), by its first
 * bytes as docker decides? ADD unpacks those. */
static bool is_archive(int src, const char *rel)
{
	long fd = build_beneath(src, rel, O_RDONLY | O_NOFOLLOW);
	if (fd < 0)
		return false;
	unsigned char h[262] = { 0 };
	ssize_t n = pread((int)fd, h, sizeof(h), 0);
	close((int)fd);
	if (n < 6)
		return false;
	return (h[0] == 0x1f && h[1] == 0x8b) || !memcmp(h, "BZh", 3) ||
	       !memcmp(h,
		       "\xfd"
		       "7zXZ",
		       6) ||
	       !memcmp(h, "\x28\xb5\x2f\xfd", 4) || (n >= 262 && !memcmp(h + 257, "ustar", 5));
}

/* ADD of a local archive: unpacked by abox-unpack (the same rules as a
 * template import: nothing outside, no devices, no setuid) into a
 * scratch folder, then merged into the layer at dst. */
static int add_archive(struct build *b, const char *from_dir, const char *rel, int lfd, const char *dst,
		       abox_error *err)
{
	char e[4400], scratch[4400], path[8300];
	safe_snprintf(e, sizeof(e), "%s/unpack-XXXXXX", build_tmp(b));
	if (!mkdtemp(e))
		return abox_error_set(err, errno, "build: create a folder in '%s'", build_tmp(b));
	safe_snprintf(scratch, sizeof(scratch), "%s.scratch", e);
	safe_snprintf(path, sizeof(path), "%s/%s", from_dir, rel);
	int r = mkdir(scratch, 0700) < 0 ? abox_error_set(err, errno, "build: create '%s'", scratch) : 0;
	struct unpack_run u = {
		.helper = b->ctx->unpack_path, .source = path, .dest = e, .scratch = scratch
	};
	if (r == 0 && !u.helper)
		r = abox_error_setx(err, ENOENT, "build: abox-unpack not found (ADD of an archive needs it)");
	if (r == 0 && (r = unpack_run(&u, err)) == 1)
		r = abox_error_setx(err, EINVAL, "build: ADD '%s': not an archive abox can unpack", rel);
	unpack_run_free(&u);
	if (r == 0 && (mkdirat(lfd, dst, 0755) < 0 && errno != EEXIST))
		r = abox_error_set(err, errno, "build: create '%s'", dst);
	if (r == 0) {
		_cleanup_close_ int from = open(e, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		_cleanup_close_ int to = openat(lfd, dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		r = from < 0 || to < 0 ? abox_error_set(err, errno, "build: open '%s'", from < 0 ? e : dst)
				       : layer_merge_tree(from, to, NULL, err);
	}
	(void)rm_rf_at(AT_FDCWD, e, 0);
	(void)rm_rf_at(AT_FDCWD, scratch, 0);
	return r < 0 ? r : 0;
}

/* Where source rel lands below the layer root (d); true for a folder,
 * whose contents go there. */
static bool landing(int src, const char *rel, const char *res, bool to_dir, char *d, size_t n)
{
	const char *base = strrchr(rel, '/');
	base = base ? base + 1 : rel;
	struct stat st;
	long fd = build_beneath(src, rel[0] ? rel : ".", O_PATH);
	bool isdir = fd >= 0 && fstat((int)fd, &st) == 0 && S_ISDIR(st.st_mode);
	if (fd >= 0)
		close((int)fd);
	if (!res[1] && isdir)
		safe_snprintf(d, n, ".");
	else
		safe_snprintf(d, n, "%s%s%s", res + 1, to_dir && !isdir ? "/" : "",
			      to_dir && !isdir ? base : "");
	return isdir;
}

int build_copy(struct build *b, struct stage *s, char **words, char *const *flags, const char *from_dir,
	       bool context, const char *what, abox_error *err)
{
	size_t nw = strv_length(words);
	const char *dest = words[nw - 1];
	bool add = strncasecmp(what, "ADD", 3) == 0;
	struct copy_job j = { .b = b, .chmod = -1 };
	const char *chown_s = df_flag(flags, "chown"), *chmod_s = df_flag(flags, "chmod");
	if (chmod_s) {
		char *end;
		long m = strtol(chmod_s, &end, 8);
		if (*end || end == chmod_s || m < 0 || m > 0777)
			return abox_error_setx(err, EINVAL, "%s: --chmod '%s': give octal permissions (0755)",
					       what, chmod_s);
		j.chmod = (int)m;
	}
	_cleanup_close_ int src = open(from_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (src < 0)
		return abox_error_set(err, errno, "%s: open '%s'", what, from_dir);
	j.src = src;
	struct build_ignore ig = { 0 };
	if (context)
		build_ignore_load(src, &ig);
	j.ig = context ? &ig : NULL;

	/* what the sources name, in order */
	struct srcs ss = { 0 };
	int r = 0;
	char **all = NULL;
	size_t nall = 0;
	for (size_t i = 0; r == 0 && i + 1 < nw; i++) {
		char rel[4096];
		if (r == 0 && clean_rel(words[i], rel, sizeof(rel)) < 0)
			r = abox_error_setx(err, EXDEV, "%s: '%s' is outside the %s: refused", what, words[i],
					    context ? "build context" : "source stage");
		if (r < 0)
			break;
		if (!globby(rel)) {
			long fd = build_beneath(src, rel[0] ? rel : ".", O_PATH);
			if (fd < 0)
				r = abox_error_setx(
					err, errno == EXDEV ? EXDEV : ENOENT, "%s: '%s' %s", what, words[i],
					errno == EXDEV ? "leads outside the build context: refused"
						       : "is not in the build context");
			else
				close((int)fd);
			if (r == 0 && add_source(&ss, rel) < 0)
				r = abox_error_set(err, ENOMEM, "build");
			continue;
		}
		if (!all && (r = walk(src, "", &all, &nall, 0)) < 0) {
			r = abox_error_set(err, -r, "%s: list the sources", what);
			break;
		}
		size_t before = ss.n;
		for (size_t k = 0; r == 0 && k < nall; k++)
			if (fnmatch(rel, all[k], FNM_PATHNAME) == 0 &&
			    !(j.ig && build_ignored(j.ig, all[k])) && add_source(&ss, all[k]) < 0)
				r = abox_error_set(err, ENOMEM, "build");
		if (r == 0 && ss.n == before)
			r = abox_error_setx(err, ENOENT, "%s: no file matches '%s'", what, words[i]);
	}
	strv_free(all);

	/* the destination, resolved in the stage's view */
	struct build_viewl v = { 0 };
	char res[4096], abs[4096];
	bool to_dir = false;
	if (r == 0) {
		_cleanup_close_ int lk = snap_lock(build_state_dir(b), false, err);
		r = lk < 0 ? lk : build_view_open(b, s, &v, err);
	}
	if (r == 0 && build_owner(&v, chown_s, &j.uid, &j.gid) < 0)
		r = abox_error_setx(err, EINVAL,
				    "%s: --chown '%s': not an account of the image (its /etc/passwd and "
				    "/etc/group) nor numeric ids",
				    what, chown_s);
	if (r == 0) {
		size_t dl = strlen(dest);
		if (dest[0] == '/')
			safe_snprintf(abs, sizeof(abs), "%s", dest);
		else
			safe_snprintf(abs, sizeof(abs), "%s/%s", s->workdir ? s->workdir : "", dest);
		int e = build_view_resolve(&v, abs, res, sizeof(res));
		struct stat st;
		const char *where;
		to_dir = dest[dl - 1] == '/' || (dl && dest[dl - 1] == '.') || ss.n > 1 ||
			 (e == 0 && build_view_lstat(&v, res, &st, &where) == 0 && S_ISDIR(st.st_mode));
		if (e < 0)
			r = abox_error_set(err, -e, "%s: destination '%s'", what, dest);
	}
	/* pass 1: the key */
	struct sha256 h;
	sha256_init(&h);
	char key[65];
	if (r == 0) {
		j.h = h;
		j.hashing = true;
		sha256_update(&j.h, s->key, 65);
		sha256_update(&j.h, what, strlen(what) + 1);
		sha256_update(&j.h, res, strlen(res) + 1);
		for (size_t i = 0; r == 0 && i < ss.n; i++) {
			char d[4200];
			(void)landing(src, ss.v[i].rel, res, to_dir, d, sizeof(d));
			r = copy_entry(&j, ss.v[i].rel, -1, d, 0, err);
		}
		sha256_hex(&j.h, key);
	}
	if (r == 0 && build_cached(b, s, key, what))
		goto out;
	if (r == 0) {
		build_say(b, "step %u/%u: %s", b->step, b->steps, what);
		char dir[4300];
		int lfd = build_new_layer(b, dir, sizeof(dir), err);
		char parent[4096];
		safe_snprintf(parent, sizeof(parent), "%s", res);
		if (!to_dir) {
			char *slash = strrchr(parent, '/');
			if (slash)
				*slash = '\0';
		}
		r = lfd < 0 ? lfd : build_make_parents(&v, lfd, parent, err);
		j.hashing = false;
		j.files = j.bytes = 0;
		for (size_t i = 0; r >= 0 && i < ss.n; i++) {
			char d[4200];
			bool isdir = landing(src, ss.v[i].rel, res, to_dir, d, sizeof(d));
			/* a folder source: its contents, into a folder that keeps the
			 * stage's own attributes */
			if (isdir) {
				if (d[0] != '.' || d[1])
					r = build_make_parents(&v, lfd, res, err);
				if (r >= 0)
					r = copy_dir_contents(&j, ss.v[i].rel, lfd, d, err);
			} else if (add && is_archive(src, ss.v[i].rel)) {
				/* an archive goes into the folder dst names */
				char to[4200];
				safe_snprintf(to, sizeof(to), "%s", res[1] ? res + 1 : ".");
				r = build_make_parents(&v, lfd, res, err);
				if (r >= 0)
					r = add_archive(b, from_dir, ss.v[i].rel, lfd, to, err);
			} else {
				r = copy_entry(&j, ss.v[i].rel, lfd, d, 0, err);
			}
		}
		if (lfd >= 0)
			close(lfd);
		if (r >= 0) {
			build_say(b, "  %llu files, %llu bytes", (unsigned long long)j.files,
				  (unsigned long long)j.bytes);
			r = build_layer(b, s, key, dir, err);
		}
		(void)rm_rf_at(AT_FDCWD, dir, 0);
	}
out:
	build_view_free(&v);
	for (size_t i = 0; i < ss.n; i++)
		free(ss.v[i].rel);
	free(ss.v);
	strv_free(ig.pat);
	return r < 0 ? r : 0;
}
