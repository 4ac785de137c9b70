/* layer/template_copy.c — a template copied under another name.
 *
 * The copy is a version of its own (not a link to the source's): the two
 * names then live and are removed apart, and a rebuild of one never
 * changes what sandboxes of the other start from. aboxd keeps E2B's
 * template tags this way (each tag a template of its own).
 * Runs in the CLI/daemon, as root. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layer/copy.h"
#include "layer/layer.h"

struct copy_job {
	int src;
};

static int copy_version(const char *dir, void *ud, abox_error *err)
{
	struct copy_job *j = ud;
	if (mkdir(dir, 0755) < 0)
		return abox_error_set(err, errno, "template copy: create '%s'", dir);
	_cleanup_close_ int dst = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dst < 0)
		return abox_error_set(err, errno, "template copy: open '%s'", dir);
	/* the source is a published version: already stripped of what an
	 * import refuses, so an exact copy keeps it as it was */
	return layer_copy_tree(j->src, dst, NULL, err);
}

int template_copy(const char *state_dir, const char *src, const char *dst, abox_error *err)
{
	if (!template_name_ok(dst) || strcmp(dst, "host") == 0)
		return abox_error_setx(
			err, EINVAL, "template: name '%s' must be 1-63 of a-z 0-9 - _ (and not 'host')", dst);
	if (strcmp(src, "host") == 0)
		/* it borrows the host's /usr: a copy would be a snapshot of
		 * this host's files that stops following them */
		return abox_error_setx(err, EINVAL, "template: 'host' is built in and cannot be copied");
	if (strcmp(src, dst) == 0)
		return abox_error_setx(err, EINVAL, "template copy: '%s' onto itself", src);
	/* its version stays as it is while we copy: we hold it locked
	 * shared, as a sandbox on it would */
	struct template_info t;
	int r = template_open(state_dir, src, &t, err);
	if (r < 0)
		return r;
	char tdir[4096];
	safe_snprintf(tdir, sizeof(tdir), "%s/templates", state_dir);
	_cleanup_close_ int lk = template_lock(tdir, err);
	if (lk < 0) {
		template_info_free(&t);
		return lk;
	}
	struct copy_job j = { .src = open(t.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW) };
	if (j.src < 0)
		r = abox_error_set(err, errno, "template copy: open '%s'", t.root);
	else
		r = template_publish(state_dir, tdir, dst, copy_version, &j, &t.meta, err);
	if (j.src >= 0)
		close(j.src);
	template_info_free(&t);
	return r;
}
