/* api/sandbox.c — the public sandbox calls: checks, then the context's
 * backend. Runs in the caller's process. */
#include "api/api.h"
#include "net/policy.h"
#include "versioned.h"

int abox_sandbox_create(abox_ctx *ctx, const abox_sandbox_opts *opts, abox_sandbox **out, abox_error *err)
{
	API_NEED(ctx, "create");
	API_NEED(out, "create");
	return API_CALL(ctx, create, "create", ctx, opts, out, err);
}

int abox_sandbox_connect(abox_ctx *ctx, const char *id, abox_sandbox **out, abox_error *err)
{
	API_NEED(ctx, "connect");
	API_NEED(id, "connect");
	return API_CALL(ctx, connect, "connect", ctx, id, out, err);
}

int abox_sandbox_start(abox_sandbox *sb, int *pid, abox_error *err)
{
	API_NEED(sb, "start");
	return API_CALL(sb->ctx, start, "start", sb, pid, err);
}

int abox_sandbox_remove(abox_ctx *ctx, const char *id, abox_error *err)
{
	API_NEED(ctx, "remove");
	API_NEED(id, "remove");
	return API_CALL(ctx, remove, "remove", ctx, id, err);
}

int abox_sandbox_info_get(abox_ctx *ctx, const char *id, abox_sandbox_info *out, abox_error *err)
{
	API_NEED(ctx, "info");
	API_NEED(id, "info");
	return API_CALL(ctx, info, "info", ctx, id, out, err);
}

int abox_sandbox_list(abox_ctx *ctx, char ***ids, abox_error *err)
{
	API_NEED(ctx, "list");
	return API_CALL(ctx, list, "list", ctx, ids, err);
}

int abox_sandbox_query(abox_ctx *ctx, const abox_list_opts *opts, abox_sandbox_info **infos, size_t *n,
		       char **next, abox_error *err)
{
	API_NEED(ctx, "list");
	return API_CALL(ctx, query, "list", ctx, opts, infos, n, next, err);
}

const char *abox_sandbox_id(const abox_sandbox *sb)
{
	return sb->id;
}

uint64_t abox_sandbox_memory_limit(const abox_sandbox *sb)
{
	return sb->memory_limit;
}

int abox_sandbox_kill(abox_sandbox *sb, abox_error *err)
{
	API_NEED(sb, "kill");
	return API_CALL(sb->ctx, kill, "kill", sb, err);
}

void abox_sandbox_free(abox_sandbox *sb)
{
	if (!sb)
		return;
	sb->ctx->be->release(sb);
	free(sb);
}

int abox_sandbox_set_timeout(abox_sandbox *sb, uint32_t timeout_ms, abox_error *err)
{
	API_NEED(sb, "set-timeout");
	return API_CALL(sb->ctx, set_timeout, "set-timeout", sb, timeout_ms, err);
}

int abox_sandbox_set_limits(abox_sandbox *sb, const abox_limits *l, abox_error *err)
{
	API_NEED(sb, "set-limits");
	API_NEED(l, "set-limits");
	abox_limits o = ABOX_LIMITS_INIT;
	if (versioned_copy_in(VERSIONED_LIMITS, &o, l) < 0)
		return abox_error_setx(err, EINVAL, "abox_limits: bad version %u", l->version);
	return API_CALL(sb->ctx, set_limits, "set-limits", sb, &o, err);
}

int abox_sandbox_oom_kills(abox_sandbox *sb, uint64_t *out, abox_error *err)
{
	API_NEED(sb, "oom kills");
	API_NEED(out, "oom kills");
	return API_CALL(sb->ctx, oom_kills, "oom kills", sb, out, err);
}

int abox_sandbox_pause(abox_sandbox *sb, abox_error *err)
{
	return abox_sandbox_pause_flags(sb, 0, err);
}

int abox_sandbox_pause_flags(abox_sandbox *sb, uint32_t flags, abox_error *err)
{
	API_NEED(sb, "pause");
	if (flags & ~(ABOX_PAUSE_NO_MEMORY | ABOX_PAUSE_TO_DISK) ||
	    (flags & (ABOX_PAUSE_NO_MEMORY | ABOX_PAUSE_TO_DISK)) == (ABOX_PAUSE_NO_MEMORY | ABOX_PAUSE_TO_DISK))
		return abox_error_setx(err, EINVAL, "pause: unknown flags 0x%x", flags);
	return API_CALL(sb->ctx, pause, "pause", sb, flags, err);
}

int abox_sandbox_resume(abox_sandbox *sb, abox_error *err)
{
	API_NEED(sb, "resume");
	return API_CALL(sb->ctx, resume, "resume", sb, err);
}

int abox_sandbox_metrics(abox_sandbox *sb, abox_metrics *out, abox_error *err)
{
	API_NEED(sb, "metrics");
	if (!out || out->version < 1)
		return abox_error_setx(err, EINVAL, "metrics: abox_metrics needs its version set");
	return API_CALL(sb->ctx, metrics, "metrics", sb, out, err);
}

int abox_sandbox_snapshot(abox_sandbox *sb, const char *name, abox_snapshot_info *out, abox_error *err)
{
	return abox_sandbox_snapshot_flags(sb, name, 0, out, err);
}

int abox_sandbox_snapshot_flags(abox_sandbox *sb, const char *name, uint32_t flags, abox_snapshot_info *out,
				abox_error *err)
{
	API_NEED(sb, "snapshot");
	if (flags & ~(ABOX_SNAPSHOT_MEMORY | ABOX_SNAPSHOT_TAKE_NAME))
		return abox_error_setx(err, EINVAL, "snapshot: unknown flags 0x%x", flags);
	if (out && out->version < 1)
		return abox_error_setx(err, EINVAL, "snapshot: abox_snapshot_info needs its version set");
	return API_CALL(sb->ctx, snapshot, "snapshot", sb, name, flags, out, err);
}

int abox_sandbox_fork(abox_sandbox *sb, unsigned count, uint32_t timeout_ms, abox_sandbox **forks,
		      abox_error *errs, abox_error *err)
{
	return abox_sandbox_fork_flags(sb, count, timeout_ms, 0, forks, errs, err);
}

int abox_sandbox_fork_flags(abox_sandbox *sb, unsigned count, uint32_t timeout_ms, uint32_t flags,
			    abox_sandbox **forks, abox_error *errs, abox_error *err)
{
	API_NEED(sb, "fork");
	API_NEED(forks, "fork");
	if (flags & ~ABOX_FORK_MEMORY)
		return abox_error_setx(err, EINVAL, "fork: unknown flags 0x%x", flags);
	return API_CALL(sb->ctx, fork, "fork", sb, count, timeout_ms, flags, forks, errs, err);
}

int abox_sandbox_set_network(abox_sandbox *sb, const abox_net_opts *net, abox_error *err)
{
	API_NEED(sb, "set network");
	API_NEED(net, "set network");
	return API_CALL(sb->ctx, set_network, "set network", sb, net, err);
}

int abox_sandbox_network(abox_ctx *ctx, const char *id, abox_net_info *out, abox_error *err)
{
	API_NEED(ctx, "network");
	API_NEED(id, "network");
	API_NEED(out, "network");
	return API_CALL(ctx, network, "network", ctx, id, out, err);
}

void abox_net_info_clear(abox_net_info *info)
{
	if (!info || info->version < 1)
		return;
	abox_strv_free(info->allow_out);
	abox_strv_free(info->deny_out);
	info->allow_out = info->deny_out = NULL;
}

int abox_net_check(const abox_net_opts *net, abox_error *err)
{
	API_NEED(net, "network check");
	abox_net_opts o = ABOX_NET_OPTS_INIT;
	if (versioned_copy_in(VERSIONED_NET_OPTS, &o, net) < 0)
		return abox_error_setx(err, EINVAL, "abox_net_opts: bad version %u", net->version);
	struct net_policy p;
	int r = net_policy_make((enum net_mode)o.mode, o.allow_out, o.deny_out, &p, err);
	if (r >= 0)
		net_policy_free(&p);
	return r;
}

int abox_net_totals_get(abox_ctx *ctx, abox_net_totals *out, abox_error *err)
{
	API_NEED(ctx, "network totals");
	API_NEED(out, "network totals");
	if (out->version < 1)
		return abox_error_setx(err, EINVAL, "network totals: abox_net_totals needs its version set");
	return API_CALL(ctx, net_totals, "network totals", ctx, out, err);
}
