/* local/extras.c — the layer of abox's own files that every sandbox gets
 * on top of its template: today /usr/bin/sudo (abox-sudo, which asks the
 * sandbox's init; src/init/sudo.c). One folder per version of those
 * files, <state>/cache/extras-<size>-<mtime>, made once (in a temporary
 * folder, renamed when whole) and shared read-only by every sandbox as an
 * overlay lower, so a create copies nothing.
 * Runs in the CLI/daemon. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "local/local.h"
#include "mount/rootfs.h"

static int copy_exe(const char *src, int dfd, const char *name, abox_error *err)
{
	_cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (in < 0 || fstat(in, &st) < 0)
		return abox_error_set(err, errno, "extras: open '%s'", src);
	_cleanup_close_ int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (out < 0)
		return abox_error_set(err, errno, "extras: create '%s'", name);
	off_t off = 0;
	while (off < st.st_size) {
		ssize_t n = sendfile(out, in, &off, (size_t)(st.st_size - off));
		if (n <= 0)
			return abox_error_set(err, n < 0 ? errno : EIO, "extras: copy '%s'", src);
	}
	/* exactly 0755, whatever the umask */
	if (fchmod(out, 0755) < 0 || fsync(out) < 0)
		return abox_error_set(err, errno, "extras: finish '%s'", name);
	return 0;
}

static int make(const char *dir, const char *sudo, abox_error *err)
{
	char tmp[4200];
	safe_snprintf(tmp, sizeof(tmp), "%s.tmp-%d", dir, (int)getpid());
	(void)rm_rf_at(AT_FDCWD, tmp, 0);
	int r = 0;
	static const char *const dirs[] = { "", "/usr", "/usr/bin" };
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(dirs); i++) {
		char p[4300];
		safe_snprintf(p, sizeof(p), "%s%s", tmp, dirs[i]);
		if (mkdir(p, 0755) < 0 || chmod(p, 0755) < 0)
			r = abox_error_set(err, errno, "extras: mkdir '%s'", p);
	}
	if (r >= 0) {
		char bin[4300];
		safe_snprintf(bin, sizeof(bin), "%s/usr/bin", tmp);
		_cleanup_close_ int dfd = open(bin, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = dfd < 0 ? abox_error_set(err, errno, "extras: open '%s'", bin)
			    : copy_exe(sudo, dfd, "sudo", err);
	}
	/* another creator may have made it meanwhile: theirs is as good */
	if (r >= 0 && rename(tmp, dir) < 0 && errno != EEXIST && errno != ENOTEMPTY)
		r = abox_error_set(err, errno, "extras: rename to '%s'", dir);
	(void)rm_rf_at(AT_FDCWD, tmp, 0);
	return r;
}

const char *local_extras(abox_ctx *ctx)
{
	if (ctx->extras_dir)
		return ctx->extras_dir;
	struct stat st;
	if (!ctx->sudo_path || stat(ctx->sudo_path, &st) < 0) {
		backend_log(ctx, ABOX_LOG_DEBUG, "no abox-sudo found: sandboxes get no sudo");
		return NULL;
	}
	char cache[4200], dir[4300];
	safe_snprintf(cache, sizeof(cache), "%s/cache", ctx->state_dir);
	if (mkdir(ctx->state_dir, 0700) < 0 && errno != EEXIST)
		return NULL;
	if (mkdir(cache, 0700) < 0 && errno != EEXIST)
		return NULL;
	/* a new abox-sudo (an upgrade) is a new folder; the old one stays for
	 * the sandboxes that stand on it */
	safe_snprintf(dir, sizeof(dir), "%s/extras-%lld-%lld.%09ld", cache, (long long)st.st_size,
		      (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	abox_error e = ABOX_ERROR_INIT;
	if (access(dir, F_OK) < 0 && make(dir, ctx->sudo_path, &e) < 0) {
		backend_log(ctx, ABOX_LOG_WARNING, "sandboxes get no sudo: %s", e.msg);
		return NULL;
	}
	ctx->extras_dir = strdup(dir);
	return ctx->extras_dir;
}

char *local_lower_with(const char *lowers, const char *extra)
{
	/* just above the bottom layer (the template's root or the host's
	 * tree): snapshot layers stay above it, so a sandbox that removed or
	 * replaced one of these files keeps it that way */
	const char *last = strrchr(lowers, ':');
	size_t head = last ? (size_t)(last - lowers) + 1 : 0;
	char *s = malloc(strlen(lowers) + strlen(extra) + 2);
	if (!s)
		return NULL;
	memcpy(s, lowers, head);
	sprintf(s + head, "%s:%s", extra, lowers + head);
	return s;
}

int local_extras_apply(abox_ctx *ctx, struct rootfs_plan *plan, char **owned, abox_error *err)
{
	const char *x = local_extras(ctx);
	if (!x)
		return 0;
	/* the host template borrows the host's /usr as a tree of its own:
	 * the files go there; any other template has /usr in its root */
	for (unsigned i = 0; i < plan->ntrees; i++) {
		if (strcmp(plan->trees[i], "usr") != 0)
			continue;
		char usr[4300];
		safe_snprintf(usr, sizeof(usr), "%s/usr", x);
		if (!(*owned = local_lower_with(plan->tree_lowers[i] ? plan->tree_lowers[i] : "/usr", usr)))
			return abox_error_set(err, ENOMEM, "extras");
		plan->tree_lowers[i] = *owned;
		return 0;
	}
	if (!(*owned = local_lower_with(plan->lower, x)))
		return abox_error_set(err, ENOMEM, "extras");
	plan->lower = *owned;
	return 0;
}
