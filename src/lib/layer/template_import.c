/* layer/template_import.c — new templates from a folder, an archive or a
 * container image, with their metadata.
 *
 * Folders are copied here (layer_import_tree: fd-relative, sanitized).
 * Archives and images are unpacked by abox-unpack, a helper process, so
 * that libarchive and the decompressors never parse hostile bytes inside
 * the CLI or the daemon. Either way the result is built in a .build
 * folder and only published (made current) when complete.
 * Runs in the CLI/daemon, as root. */
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "base/clock.h"
#include "base/json.h"
#include "layer/copy.h"
#include "layer/layer.h"
#include "layer/unpack_run.h"

struct import_args {
	const char *src;
	int src_fd;
	bool folder;                          /* a plain folder: copy it here */
	const struct template_import_req *req;
	struct template_meta *meta;           /* filled in by the build */
	char *image_config;                   /* from the unpacker */
};

static bool has_file(int dir, const char *name)
{
	struct stat st;
	return fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

static int build(const char *dir, void *ud, abox_error *err)
{
	struct import_args *a = ud;
	if (mkdir(dir, 0755) < 0)
		return abox_error_set(err, errno, "template: create '%s'", dir);
	_cleanup_close_ int bfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (bfd < 0)
		return abox_error_set(err, errno, "template: open '%s'", dir);
	int r;
	if (a->folder) {
		struct layer_copy_stats st = { 0 };
		if ((r = layer_import_tree(a->src_fd, bfd, &st, err)) < 0)
			return r;
		a->meta->entries = st.entries;
		a->meta->bytes = st.data_bytes;
		a->meta->dropped = st.dropped;
	} else {
		if (!a->req->unpack_helper)
			return abox_error_setx(err, ENOENT,
					       "template: abox-unpack not found (needed for archives and images; "
					       "set $ABOX_UNPACK)");
		char scratch[4200];
		safe_snprintf(scratch, sizeof(scratch), "%s.scratch", dir);
		if (mkdir(scratch, 0700) < 0)
			return abox_error_set(err, errno, "template: create '%s'", scratch);
		struct unpack_run u = {
			.helper = a->req->unpack_helper,
			.source = a->src,
			.dest = dir,
			.scratch = scratch,
			.keep_setuid = a->req->keep_setuid,
			.keep_devices = a->req->keep_devices,
			.max_bytes = a->req->max_bytes,
			.max_entries = a->req->max_entries,
			.progress = a->req->progress,
			.ud = a->req->ud,
		};
		r = unpack_run(&u, err);
		(void)rm_rf_at(AT_FDCWD, scratch, 0);
		if (r == 1)
			r = abox_error_setx(err, EINVAL, "template: '%s' holds no image", a->src);
		if (r < 0) {
			unpack_run_free(&u);
			return r;
		}
		a->meta->entries = u.entries;
		a->meta->bytes = u.bytes;
		a->meta->dropped = u.dropped;
		a->image_config = TAKE_PTR(u.config);
	}
	if ((r = template_add_skeleton(bfd, err)) < 0)
		return r;
	/* the root of a template is never writable by the sandbox's user */
	if (fchown(bfd, 0, 0) < 0 || fchmod(bfd, 0755) < 0)
		return abox_error_set(err, errno, "template: set up its root");
	return 0;
}

/* The image's config first, the caller's choices over it. */
static int fill_meta(struct import_args *a, abox_error *err)
{
	struct template_meta *m = a->meta;
	const struct template_import_req *q = a->req;
	if (a->image_config) {
		json_object *o = json_tokener_parse(a->image_config);
		json_object *v;
		if (o && json_object_object_get_ex(o, "user", &v) && json_object_is_type(v, json_type_string)) {
			const char *u = template_user_from_image(json_object_get_string(v));
			m->user = u ? strdup(u) : NULL;
		} else if (o) {
			m->user = strdup("root"); /* an image without User runs as root */
		}
		if (o && json_object_object_get_ex(o, "workdir", &v) && json_object_is_type(v, json_type_string))
			m->workdir = strdup(json_object_get_string(v));
		m->cmd = js_strv(o, "cmd");
		if (o && json_object_object_get_ex(o, "env", &v) && json_object_is_type(v, json_type_array))
			for (size_t i = 0; i < json_object_array_length(v); i++) {
				json_object *e = json_object_array_get_idx(v, i);
				if (json_object_is_type(e, json_type_string))
					(void)strv_env_set(&m->env, json_object_get_string(e));
			}
		json_object_put(o);
	}
	if (q->user) {
		free(m->user);
		m->user = strdup(q->user);
	}
	if (q->workdir) {
		free(m->workdir);
		m->workdir = strdup(q->workdir);
	}
	for (size_t i = 0; q->env && q->env[i]; i++)
		if (strv_env_set(&m->env, q->env[i]) < 0)
			return abox_error_setx(err, EINVAL, "template: environment entry '%s' is not K=V", q->env[i]);
	if (q->cmd) {
		strv_free(m->cmd);
		m->cmd = strv_copy(q->cmd);
	}
	m->start_cmd = q->start_cmd ? strdup(q->start_cmd) : NULL;
	m->ready_cmd = q->ready_cmd ? strdup(q->ready_cmd) : NULL;
	m->ready_port = q->ready_port;
	m->ready_timeout_ms = q->ready_timeout_ms;
	m->created_ms = clock_wall_ms();
	m->source = q->source ? strdup(q->source) : realpath(a->src, NULL);
	return 0;
}

static int build_then_meta(const char *dir, void *ud, abox_error *err)
{
	int r = build(dir, ud, err);
	return r < 0 ? r : fill_meta(ud, err);
}

static int check_req(const struct template_import_req *q, abox_error *err)
{
	if (q->user && strcmp(q->user, "root") != 0 && strcmp(q->user, "user") != 0)
		return abox_error_setx(err, EINVAL, "template: unknown user '%s' (use 'user' or 'root')", q->user);
	if (q->workdir && q->workdir[0] != '/')
		return abox_error_setx(err, EINVAL, "template: working folder '%s' is not absolute", q->workdir);
	if (q->ready_cmd && q->ready_port)
		return abox_error_setx(err, EINVAL,
				       "template: a readiness check is a command or a port, not both");
	return 0;
}

int template_lock(const char *tdir, abox_error *err)
{
	char lockp[4200];
	safe_snprintf(lockp, sizeof(lockp), "%s/.lock", tdir);
	int lk = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lk < 0 || flock(lk, LOCK_EX) < 0) {
		int e = errno;
		if (lk >= 0)
			close(lk);
		return abox_error_set(err, e, "template: lock '%s'", lockp);
	}
	return lk;
}

int template_import_locked(const char *state_dir, const char *tdir, const char *name, const char *src,
			   const struct template_import_req *req, struct template_meta *out, abox_error *err)
{
	if (!template_name_ok(name) || strcmp(name, "host") == 0)
		return abox_error_setx(err, EINVAL,
				       "template: name '%s' must be 1-63 of a-z 0-9 - _ (and not 'host')", name);
	int r = check_req(req, err);
	if (r < 0)
		return r;
	_cleanup_close_ int sfd = open(src, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (sfd < 0 || fstat(sfd, &st) < 0)
		return abox_error_set(err, errno, "template: open '%s'", src);
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return abox_error_setx(err, EINVAL, "template: '%s' is neither a folder nor an archive", src);

	struct template_meta meta = { 0 };
	struct import_args a = {
		.src = src,
		.src_fd = sfd,
		.folder = S_ISDIR(st.st_mode) && !(has_file(sfd, "oci-layout") && has_file(sfd, "index.json")) &&
			  !has_file(sfd, "manifest.json"),
		.req = req,
		.meta = &meta,
	};
	/* the metadata is complete once the build has run: publish writes it
	 * after calling build, through the same pointer */
	r = template_publish(state_dir, tdir, name, build_then_meta, &a, &meta, err);
	free(a.image_config);
	if (r >= 0 && out)
		*out = meta;
	else
		template_meta_free(&meta);
	return r;
}

int template_import(const char *state_dir, const char *name, const char *src, const struct template_import_req *req,
		    struct template_meta *out, abox_error *err)
{
	if (!template_name_ok(name) || strcmp(name, "host") == 0)
		return abox_error_setx(err, EINVAL,
				       "template: name '%s' must be 1-63 of a-z 0-9 - _ (and not 'host')", name);
	char tdir[4096];
	safe_snprintf(tdir, sizeof(tdir), "%s/templates", state_dir);
	if ((mkdir(state_dir, 0700) < 0 && errno != EEXIST) || (mkdir(tdir, 0700) < 0 && errno != EEXIST))
		return abox_error_set(err, errno, "template: create '%s'", tdir);
	_cleanup_close_ int lk = template_lock(tdir, err);
	if (lk < 0)
		return lk;
	return template_import_locked(state_dir, tdir, name, src, req, out, err);
}
