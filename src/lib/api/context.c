/* api/context.c — the context: where state, runtime sockets, abox-init and the
 * default policy are found. Runs in the CLI/daemon. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "api/api.h"
#include "caps/caps.h"
#include "config.h"
#include "versioned.h"

static bool exists(const char *p)
{
	return access(p, R_OK) == 0;
}

/* First readable candidate, malloc'd; NULL entries are skipped. */
static char *pick(const char *const *cands, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (cands[i] && *cands[i] && exists(cands[i]))
			return strdup(cands[i]);
	return NULL;
}

/* Paths are recorded (runtime folders name their state folder): relative
 * ones would mean something else from another working directory. */
static char *absolute(const char *p)
{
	if (p[0] == '/')
		return strdup(p);
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	char *r = NULL;
	return asprintf(&r, "%s/%s", cwd, p) < 0 ? NULL : r;
}

static void self_dir(char *buf, size_t n)
{
	ssize_t l = readlink("/proc/self/exe", buf, n - 1);
	if (l <= 0) {
		buf[0] = '\0';
		return;
	}
	buf[l] = '\0';
	char *slash = strrchr(buf, '/');
	if (slash)
		*slash = '\0';
}

int abox_ctx_new(const abox_ctx_opts *opts, abox_ctx **out, abox_error *err)
{
	abox_ctx_opts o = ABOX_CTX_OPTS_INIT;
	if (opts && versioned_copy_in(VERSIONED_CTX_OPTS, &o, opts) < 0)
		return abox_error_setx(err, EINVAL, "abox_ctx_opts: bad version %u", opts->version);
	abox_ctx *ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return abox_error_set(err, ENOMEM, "context");
	const char *env_root = getenv("ABOX_ROOT"), *env_run = getenv("ABOX_RUNTIME_DIR");
	ctx->state_dir = absolute(o.state_dir ? o.state_dir : env_root && *env_root ? env_root : "/var/lib/abox");
	ctx->runtime_dir = absolute(o.runtime_dir ? o.runtime_dir : env_run && *env_run ? env_run : "/run/abox");

	char dir[PATH_MAX], near[PATH_MAX + 16];
	self_dir(dir, sizeof(dir));
	snprintf(near, sizeof(near), "%s/abox-init", dir);
	/* An explicit choice (option or $ABOX_INIT) is used as given, even
	 * when missing: silently running another init would hide the mistake. */
	const char *env_init = getenv("ABOX_INIT");
	const char *init_cands[] = { near, ABOX_LIBEXECDIR "/abox-init" };
	if (o.init_path)
		ctx->init_path = strdup(o.init_path);
	else if (env_init && *env_init)
		ctx->init_path = strdup(env_init);
	else
		ctx->init_path = pick(init_cands, ELEMENTSOF(init_cands));

	/* the unpacker: next to us, in the build folder (tests, bench), or
	 * installed; $ABOX_UNPACK wins */
	char near_unpack[PATH_MAX + 16];
	snprintf(near_unpack, sizeof(near_unpack), "%s/abox-unpack", dir);
	const char *unpack_cands[] = { getenv("ABOX_UNPACK"), near_unpack, ABOX_LIBEXECDIR "/abox-unpack",
				       ABOX_BUILD_DIR "/abox-unpack" };
	ctx->unpack_path = pick(unpack_cands, ELEMENTSOF(unpack_cands));

	/* abox-pull (registries), found as the unpacker is */
	char near_pull[PATH_MAX + 16];
	snprintf(near_pull, sizeof(near_pull), "%s/abox-pull", dir);
	const char *pull_cands[] = { getenv("ABOX_PULL"), near_pull, ABOX_LIBEXECDIR "/abox-pull",
				     ABOX_BUILD_DIR "/abox-pull" };
	ctx->pull_path = pick(pull_cands, ELEMENTSOF(pull_cands));

	/* abox-netd (sandboxes' egress), found as the unpacker is */
	char near_netd[PATH_MAX + 16];
	snprintf(near_netd, sizeof(near_netd), "%s/abox-netd", dir);
	const char *netd_cands[] = { getenv("ABOX_NETD"), near_netd, ABOX_LIBEXECDIR "/abox-netd",
				     ABOX_BUILD_DIR "/abox-netd" };
	ctx->netd_path = pick(netd_cands, ELEMENTSOF(netd_cands));

	/* abox-sudo (installed in sandboxes as sudo), found as the others */
	char near_sudo[PATH_MAX + 16];
	snprintf(near_sudo, sizeof(near_sudo), "%s/abox-sudo", dir);
	const char *sudo_cands[] = { getenv("ABOX_SUDO"), near_sudo, ABOX_LIBEXECDIR "/abox-sudo",
				     ABOX_BUILD_DIR "/abox-sudo" };
	ctx->sudo_path = pick(sudo_cands, ELEMENTSOF(sudo_cands));

	const char *pol_cands[] = { getenv("ABOX_DEFAULT_POLICY"), ABOX_DATADIR "/policies/default.json",
				    ABOX_SOURCE_DIR "/policies/default.json" };
	ctx->default_policy = pick(pol_cands, ELEMENTSOF(pol_cands));
	ctx->be = &local_backend_ops;
	ctx->log = o.log;
	ctx->log_userdata = o.log_userdata;
	ctx->log_max = o.version >= 3 ? o.log_max : 0;
	if (o.version >= 5 && (o.cgroup_parent_flags & ~ABOX_CGROUP_PARENT_OWN)) {
		abox_ctx_free(ctx);
		return abox_error_setx(err, EINVAL, "abox_ctx_opts: unknown cgroup_parent_flags 0x%x",
				       o.cgroup_parent_flags);
	}
	ctx->cgroup_parent_own =
		o.version >= 5 && o.cgroup_parent && (o.cgroup_parent_flags & ABOX_CGROUP_PARENT_OWN);
	if (o.version >= 4 && o.cgroup_parent && !(ctx->cgroup_parent = strdup(o.cgroup_parent))) {
		abox_ctx_free(ctx);
		return abox_error_set(err, ENOMEM, "context");
	}
	ctx->last_cap = caps_last_cap();

	const char *env_remote = getenv("ABOX_REMOTE"), *env_key = getenv("ABOX_API_KEY");
	const char *url = o.version >= 2 && o.remote_url ? o.remote_url : env_remote && *env_remote ? env_remote : NULL;
	if (url) {
		const char *key = o.version >= 2 && o.api_key ? o.api_key : env_key;
		if (!remote_backend) {
			abox_ctx_free(ctx);
			return abox_error_setx(err, EOPNOTSUPP,
					       "remote abox %s: this program was built without the remote backend "
					       "(use libabox, or abox-remote)", url);
		}
		ctx->be = remote_backend();
		int r = ctx->be->open(ctx, url, key, err);
		if (r < 0) {
			ctx->be = &local_backend_ops; /* nothing of the remote's to close */
			abox_ctx_free(ctx);
			return r;
		}
		*out = ctx;
		return 0;
	}

	if (!ctx->state_dir || !ctx->runtime_dir) {
		abox_ctx_free(ctx);
		return abox_error_set(err, ENOMEM, "context");
	}
	if (!ctx->init_path) {
		abox_ctx_free(ctx);
		return abox_error_setx(err, ENOENT,
				       "abox-init not found (looked at $ABOX_INIT, %s, " ABOX_LIBEXECDIR "/abox-init)", near);
	}
	*out = ctx;
	return 0;
}

void abox_ctx_free(abox_ctx *ctx)
{
	if (!ctx)
		return;
	if (ctx->be && ctx->be->close)
		ctx->be->close(ctx);
	free(ctx->state_dir);
	free(ctx->runtime_dir);
	free(ctx->netd_path);
	free(ctx->sudo_path);
	free(ctx->extras_dir);
	free(ctx->init_path);
	free(ctx->unpack_path);
	free(ctx->pull_path);
	free(ctx->default_policy);
	free(ctx->cgroup_parent);
	cgroup_layout_free(&ctx->cg);
	backend_reap_seen_free(ctx);
	free(ctx);
}

int abox_ctx_remove_cgroup_parent(abox_ctx *ctx, abox_error *err)
{
	API_NEED(ctx, "remove cgroup parent");
	if (!ctx->cgroup_parent || !ctx->be->remove_cgroup_parent)
		return 0;
	return ctx->be->remove_cgroup_parent(ctx, err);
}

int abox_ctx_describe(abox_ctx *ctx, abox_host_check_fn fn, void *ud, abox_error *err)
{
	if (!ctx || !fn)
		return abox_error_setx(err, EINVAL, "describe: no context or no callback");
	return API_CALL(ctx, describe, "describe", ctx, fn, ud, err);
}

int abox_checkpointer_check(abox_ctx *ctx, char **hook, char **version, abox_error *err)
{
	API_NEED(ctx, "checkpointer");
	return API_CALL(ctx, checkpointer_check, "checkpointer", ctx, hook, version, err);
}

int abox_gc(abox_ctx *ctx, unsigned *removed, abox_error *err)
{
	API_NEED(ctx, "gc");
	return API_CALL(ctx, gc, "gc", ctx, false, removed, err);
}

int abox_gc_maybe(abox_ctx *ctx, unsigned *removed, abox_error *err)
{
	API_NEED(ctx, "gc");
	return API_CALL(ctx, gc, "gc", ctx, true, removed, err);
}

int abox_spare_disks(abox_ctx *ctx, uint64_t disk_bytes, unsigned count, abox_error *err)
{
	API_NEED(ctx, "spare disks");
	return API_CALL(ctx, spare_disks, "spare disks", ctx, disk_bytes, count, err);
}

int abox_reap_steps(abox_ctx *ctx, uint32_t steps, unsigned *paused, int64_t *next_deadline_ms, abox_error *err)
{
	if (paused)
		*paused = 0;
	if (next_deadline_ms)
		*next_deadline_ms = 0;
	API_NEED(ctx, "reap");
	return API_CALL(ctx, reap, "reap", ctx, steps, paused, next_deadline_ms, err);
}

int abox_reap(abox_ctx *ctx, unsigned *paused, abox_error *err)
{
	return abox_reap_steps(ctx, ABOX_REAP_FREEZE | ABOX_REAP_MEMORY, paused, NULL, err);
}
