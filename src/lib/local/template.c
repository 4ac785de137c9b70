/* Templates through the library. */
#include <stddef.h>
#include <string.h>

#include "local/local.h"
#include "layer/layer.h"

static void forward_progress(uint64_t entries, uint64_t bytes, unsigned layer, unsigned layers, void *ud)
{
	const abox_template_opts *o = ud;
	abox_template_progress p = { .entries = entries, .bytes = bytes, .layer = layer, .layers = layers };
	o->progress(&p, o->userdata);
}

static void forward_line(const char *line, void *ud)
{
	const abox_template_opts *o = ud;
	abox_template_progress p = { .message = line };
	o->progress(&p, o->userdata);
}

static int opts_to_req(const abox_template_opts *opts, abox_template_opts *o, struct template_import_req *req,
		       abox_ctx *ctx, abox_error *err)
{
	*o = (abox_template_opts)ABOX_TEMPLATE_OPTS_INIT;
	if (opts) {
		if (opts->version < 1)
			return abox_error_setx(err, EINVAL, "abox_template_opts: bad version %u", opts->version);
		*o = *opts;
	}
	*req = (struct template_import_req){
		.unpack_helper = ctx->unpack_path,
		.keep_setuid = o->flags & ABOX_TEMPLATE_KEEP_SETUID,
		.keep_devices = o->flags & ABOX_TEMPLATE_KEEP_DEVICES,
		.rebuild = o->flags & ABOX_TEMPLATE_REBUILD,
		.max_bytes = o->max_bytes,
		.max_entries = o->max_entries,
		.progress = o->progress ? forward_progress : NULL,
		.ud = o,
		.user = o->user,
		.workdir = o->workdir,
		.env = (char *const *)o->env,
		.start_cmd = o->start_cmd,
		.ready_cmd = o->ready_cmd,
		.ready_port = o->ready_port,
		.ready_timeout_ms = o->ready_timeout_ms,
	};
	return 0;
}

/* A template from a recipe (build) or from an archive or image (import). */
static int make(abox_ctx *ctx, const char *name, const char *from, bool build, const abox_template_opts *opts,
		abox_error *err)
{
	abox_template_opts o;
	struct template_import_req req;
	int r = opts_to_req(opts, &o, &req, ctx, err);
	if (r < 0)
		return r;
	if (!name || !from)
		return abox_error_setx(err, EINVAL, "template %s: missing name or %s",
				       build ? "build" : "import", build ? "recipe" : "source");
	struct template_meta m;
	if (build)
		r = template_build(ctx->state_dir, name, from, &req, o.progress ? forward_line : NULL, &o, &m,
				   err);
	else
		r = template_import(ctx->state_dir, name, from, &req, &m, err);
	if (r < 0)
		return r;
	backend_log(ctx, ABOX_LOG_DEBUG, "template %s %s from %s: %llu entries, %llu bytes, %llu left out",
		    name, build ? "built" : "imported", from, (unsigned long long)m.entries,
		    (unsigned long long)m.bytes, (unsigned long long)m.dropped);
	template_meta_free(&m);
	return 0;
}

int local_template_build(abox_ctx *ctx, const char *name, const char *recipe, const abox_template_opts *opts,
			 abox_error *err)
{
	return make(ctx, name, recipe, true, opts, err);
}

int local_template_import(abox_ctx *ctx, const char *name, const char *source, const abox_template_opts *opts,
			  abox_error *err)
{
	return make(ctx, name, source, false, opts, err);
}

static void forward_pull(unsigned layer, unsigned layers, uint64_t done, uint64_t total, const char *state,
			 const char *message, void *ud)
{
	const abox_template_opts *o = ud;
	abox_template_progress p = { .layer = layer,
				     .layers = layers,
				     .pulled = done,
				     .pull_size = total,
				     .pull_state = state,
				     .message = message };
	o->progress(&p, o->userdata);
}

int local_template_pull(abox_ctx *ctx, const char *name, const char *ref, const abox_template_opts *opts,
			const abox_pull_opts *pull, abox_error *err)
{
	abox_template_opts o;
	struct template_import_req req;
	int r = opts_to_req(opts, &o, &req, ctx, err);
	if (r < 0)
		return r;
	if (!ref)
		return abox_error_setx(err, EINVAL, "template pull: missing image reference");
	if (pull && pull->version < 1)
		return abox_error_setx(err, EINVAL, "abox_pull_opts: bad version %u", pull->version);
	abox_pull_opts p = pull ? *pull : (abox_pull_opts)ABOX_PULL_OPTS_INIT;
	char derived[64];
	if (!name) {
		if ((r = abox_template_ref_name(ref, derived, sizeof(derived), err)) < 0)
			return r;
		name = derived;
	}
	struct template_pull_req q = {
		.pull_helper = ctx->pull_path,
		.platform = p.platform,
		.auth_file = p.auth_file,
		.username = p.username,
		.password = p.password,
		.ca_file = p.ca_file,
		.plain_http = p.flags & ABOX_PULL_PLAIN_HTTP,
		.no_verify = p.flags & ABOX_PULL_TLS_NO_VERIFY,
		.progress = o.progress ? forward_pull : NULL,
		.ud = &o,
	};
	struct template_meta m;
	if ((r = template_pull(ctx->state_dir, name, ref, &q, &req, &m, err)) < 0)
		return r;
	backend_log(ctx, ABOX_LOG_DEBUG,
		    "template %s pulled from %s: %llu entries, %llu bytes, %llu left out", name,
		    m.source ? m.source : ref, (unsigned long long)m.entries, (unsigned long long)m.bytes,
		    (unsigned long long)m.dropped);
	template_meta_free(&m);
	return 0;
}

/* The strings inspect copies from a version's metadata into an
 * abox_template_info as they are (user has a default, env is a list), and
 * abox_template_info_clear frees. */
static const struct {
	size_t meta, info;
} copied[] = {
	{ offsetof(struct template_meta, source), offsetof(abox_template_info, source) },
	{ offsetof(struct template_meta, workdir), offsetof(abox_template_info, workdir) },
	{ offsetof(struct template_meta, start_cmd), offsetof(abox_template_info, start_cmd) },
	{ offsetof(struct template_meta, ready_cmd), offsetof(abox_template_info, ready_cmd) },
};

static char **info_str(abox_template_info *i, size_t k)
{
	return (char **)((char *)i + copied[k].info);
}

int local_template_inspect(abox_ctx *ctx, const char *name, abox_template_info *out, abox_error *err)
{
	if (!out || out->version < 1)
		return abox_error_setx(err, EINVAL, "abox_template_info: bad version");
	struct template_info t = { .lock_fd = -1 };
	int r = template_open(ctx->state_dir, name, &t, err);
	if (r < 0)
		return r;
	abox_template_info i = { .version = ABOX_TEMPLATE_INFO_VERSION };
	safe_snprintf(i.name, sizeof(i.name), "%s", name);
	const char *slash = strrchr(t.root, '/');
	safe_snprintf(i.current, sizeof(i.current), "%s", slash ? slash + 1 : t.root);
	const struct template_meta *m = &t.meta;
	i.created_ms = m->created_ms;
	i.entries = m->entries;
	i.bytes = m->bytes;
	i.dropped = m->dropped;
	for (size_t k = 0; k < ELEMENTSOF(copied); k++) {
		const char *s = *(char *const *)((const char *)m + copied[k].meta);
		*info_str(&i, k) = s ? strdup(s) : NULL;
	}
	i.user = strdup(m->user ? m->user : "user");
	i.ready_port = m->ready_port;
	i.ready_timeout_ms = m->ready_port || m->ready_cmd
				     ? (m->ready_timeout_ms ? m->ready_timeout_ms : TEMPLATE_READY_TIMEOUT_MS)
				     : 0;
	i.env = strv_copy(m->env);
	i.cmd = out->version >= 2 ? strv_copy(m->cmd) : NULL;
	template_info_free(&t);
	if (!i.user) {
		abox_template_info_clear(&i);
		return abox_error_set(err, ENOMEM, "template inspect");
	}
	/* a caller built against version 1 has no room for cmd */
	i.version = out->version >= 2 ? ABOX_TEMPLATE_INFO_VERSION : 1;
	memcpy(out, &i, out->version >= 2 ? sizeof(i) : offsetof(abox_template_info, cmd));
	return 0;
}

void abox_template_info_clear(abox_template_info *i)
{
	if (!i)
		return;
	for (size_t k = 0; k < ELEMENTSOF(copied); k++)
		free(*info_str(i, k));
	free(i->user);
	strv_free(i->env);
	uint32_t v = i->version;
	if (v >= 2)
		strv_free(i->cmd);
	memset(i, 0, v >= 2 ? sizeof(*i) : offsetof(abox_template_info, cmd));
	i->version = v;
}

int local_template_list(abox_ctx *ctx, char ***names, abox_error *err)
{
	return template_list(ctx->state_dir, names, err);
}

int local_template_remove(abox_ctx *ctx, const char *name, abox_error *err)
{
	return template_remove(ctx->state_dir, name, err);
}

int local_template_copy(abox_ctx *ctx, const char *src, const char *dst, abox_error *err)
{
	return template_copy(ctx->state_dir, src, dst, err);
}
