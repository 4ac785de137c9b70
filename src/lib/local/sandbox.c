/* local/sandbox.c — a running sandbox's timeout, OOM count and
 * metrics, from its record, its cgroups and its init.
 * Runs in the CLI/daemon. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "local/local.h"
#include "disk/disk.h"
#include "layer/layer.h"
#include "layer/snapshot.h"
#include "proto/messages.h"
#include "store/state.h"
#include "store/store.h"

int local_set_timeout(abox_sandbox *sb, uint32_t timeout_ms, abox_error *err)
{
	if (sb->flags & ABOX_SANDBOX_EPHEMERAL)
		return abox_error_setx(err, EINVAL, "set-timeout: sandbox %s is ephemeral", sb->id);
	_cleanup_close_ int lock = -EBADF;
	struct sb_state st = { 0 };
	int r = backend_lock_read(sb, &lock, &st, err);
	if (r < 0)
		return r;
	if (st.paused_ms) {
		/* the record is the truth, not this handle: a frozen init would
		 * never answer, and we hold the lock resume and kill need */
		sb->paused = true;
		sb_state_free(&st);
		return backend_not_paused(sb, "set-timeout", err);
	}
	if (!st.auto_pause) {
		struct proto_msg m;
		proto_msg_init(&m, MSG_REQ_SET_TIMEOUT, ++sb->next_req);
		proto_put_u64(&m, F_TIMEOUT_MS, timeout_ms);
		r = backend_call(sb, &m, "set-timeout", NULL, NULL, err);
	}
	if (r >= 0) {
		st.deadline_ms = timeout_ms ? clock_wall_ms() + timeout_ms : 0;
		r = state_write(sb->ctx->state_dir, &st, err);
		sb->deadline_ms = timeout_ms && !st.auto_pause ? clock_mono_ms() + timeout_ms : 0;
	}
	sb_state_free(&st);
	return r;
}

/* An OCI container's cpuset (its folder planned and recorded at create,
 * oci_resources.c), where the host has cpusets. */
static int set_cpuset(abox_sandbox *sb, const struct sb_state *st, const abox_limits *l, abox_error *err)
{
	if (!st->template_name || strcmp(st->template_name, "oci") != 0)
		return abox_error_setx(err, EOPNOTSUPP, "a cpuset is for an OCI container's sandbox alone");
	char dir[4096];
	int r = cgroup_cpuset_plan(&sb->ctx->cg, sb->ctx->cgroup_parent, sb->id, dir, sizeof(dir), err);
	if (r < 0)
		return r;
	return cgroup_cpuset_update(sb->cg, dir, sb->ctx->cgroup_parent_own, l->cpuset_cpus, l->cpuset_mems,
				    err);
}

int local_set_limits(abox_sandbox *sb, const abox_limits *l, abox_error *err)
{
	bool cpuset = l->cpuset_cpus || l->cpuset_mems;
	if (!l->memory_bytes && !l->pids && !l->cpu_millis && !l->cpu_shares && !l->cpu_quota_us && !cpuset)
		return 0;
	if ((l->cpu_quota_us && l->cpu_millis) || (l->cpu_period_us && !l->cpu_quota_us) ||
	    (l->cpu_period_us && (l->cpu_period_us < 1000 || l->cpu_period_us > 1000000)) ||
	    (l->cpu_quota_us && l->cpu_quota_us < 1000))
		return abox_error_setx(
			err, EINVAL,
			"set-limits: a CPU quota (at least 1000 us) or cpu_millis, not both; a "
			"period (1000..1000000 us) only with a quota");
	_cleanup_close_ int lock = -EBADF;
	struct sb_state st = { 0 };
	int r = backend_lock_read(sb, &lock, &st, err);
	if (r < 0)
		return r;
	/* paused without memory: no cgroup until the resume, which makes it
	 * with the limits recorded here */
	if (!st.cold) {
		struct cg_limits lim = { .memory_bytes = l->memory_bytes,
					 .pids = l->pids,
					 .cpu_millis = l->cpu_millis,
					 .cpu_shares = l->cpu_shares };
		bool parent = sb->ctx->cgroup_parent_own;
		if ((r = backend_cgroups(sb, err)) >= 0 && !sb->cg)
			r = abox_error_setx(err, ENOENT, "sandbox %s has no cgroups", sb->id);
		/* a quota: over the period given, or the one in force */
		if (r >= 0 && l->cpu_quota_us) {
			lim.cpu_period_us = l->cpu_period_us ? l->cpu_period_us : cgroup_cpu_period(sb->cg);
			lim.cpu_quota_us = l->cpu_quota_us;
			uint64_t m = l->cpu_quota_us * 1000 / lim.cpu_period_us;
			lim.cpu_millis = m > UINT32_MAX ? UINT32_MAX : m ? (uint32_t)m : 1;
		}
		/* the sandbox's own folder holds them too (an OCI container's
		 * cgroupsPath): a raised CPU quota there first, as cgroup v1
		 * refuses a child's quota above its parent's */
		uint32_t was = st.cpu_millis; /* as recorded: a handle's cgroups opened anew know none */
		if (r >= 0 && parent && was && lim.cpu_millis > was) {
			struct cg_limits cpu = { .cpu_millis = lim.cpu_millis,
						 .cpu_period_us = lim.cpu_period_us,
						 .cpu_quota_us = lim.cpu_quota_us };
			r = cgroup_parent_write(&sb->ctx->cg, &cpu, err);
		}
		if (r >= 0)
			r = cgroup_update_limits(sb->cg, &lim, err);
		if (r >= 0 && parent)
			r = cgroup_parent_limits(&sb->ctx->cg, sb->cg, err);
		if (r >= 0 && cpuset)
			r = set_cpuset(sb, &st, l, err);
	}
	if (r >= 0) {
		st.memory_bytes = l->memory_bytes ? l->memory_bytes : st.memory_bytes;
		st.pids = l->pids ? l->pids : st.pids;
		const struct cg_limits *now = sb->cg ? cgroup_limits(sb->cg) : NULL;
		st.cpu_millis = l->cpu_millis                               ? l->cpu_millis
				: l->cpu_quota_us && now && now->cpu_millis ? now->cpu_millis
									    : st.cpu_millis;
		r = state_write(sb->ctx->state_dir, &st, err);
	}
	sb_state_free(&st);
	return r < 0 ? abox_error_prefix(err, "set-limits") : 0;
}

int local_oom_kills(abox_sandbox *sb, uint64_t *out, abox_error *err)
{
	*out = 0;
	/* a handle found by id opens the sandbox's cgroups on first use, so
	 * that `abox exec` reports OOM kills as `abox run` does */
	if (sb->attached && backend_cgroups(sb, err) < 0)
		return abox_error_prefix(err, "oom count");
	if (!sb->cg)
		return 0;
	return cgroup_oom_kills(sb->cg, out, err);
}

static void disk_fields(const struct proto_frame *f, void *ud)
{
	abox_metrics *m = ud;
	size_t off = 0;
	struct proto_field fl;
	while (proto_field_next(f, &off, &fl) > 0) {
		if (fl.tag == F_DISK_USED)
			(void)proto_field_u64(&fl, &m->disk_used);
		else if (fl.tag == F_DISK_TOTAL)
			(void)proto_field_u64(&fl, &m->disk_limit);
	}
}

int local_metrics(abox_sandbox *sb, abox_metrics *out, abox_error *err)
{
	if (!out || out->version < 1)
		return abox_error_setx(err, EINVAL, "metrics: abox_metrics needs its version set");
	int r = backend_cgroups(sb, err);
	if (r < 0)
		return abox_error_prefix(err, "metrics");
	struct cg_stats cs;
	if ((r = cgroup_stats(sb->cg, &cs, err)) < 0)
		return abox_error_prefix(err, "metrics");
	abox_metrics m = { .version = out->version, .timestamp_ms = clock_wall_ms() };
	struct proto_msg req;
	proto_msg_init(&req, MSG_REQ_METRICS, ++sb->next_req);
	if ((r = backend_call(sb, &req, "metrics", disk_fields, &m, err)) < 0)
		return r;
	m.cpu_used_usec = cs.cpu_usec;
	/* what a machine reports as used: its files' page cache does not
	 * count (the kernel drops it when memory runs short), its tmpfs
	 * files do */
	m.mem_used = cs.mem_used != UINT64_MAX ? cs.mem_used : cs.mem_current;
	m.mem_limit = cs.mem_limit;
	m.pids = cs.pids_current;
	/* CPU share since the previous call on this handle, or on its first
	 * call since the sandbox was made (what a one-shot client such as
	 * the daemon's metrics route sees) */
	int64_t now = clock_mono_ms(), wall = clock_wall_ms();
	if (cs.cpu_usec != UINT64_MAX && sb->metrics_at_ms && now > sb->metrics_at_ms)
		m.cpu_pct = (double)(cs.cpu_usec - sb->metrics_cpu_usec) / 10.0 / (double)(now - sb->metrics_at_ms);
	else if (cs.cpu_usec != UINT64_MAX && !sb->metrics_at_ms && sb->created_wall_ms && wall > sb->created_wall_ms)
		m.cpu_pct = (double)cs.cpu_usec / 10.0 / (double)(wall - sb->created_wall_ms);
	sb->metrics_at_ms = now;
	sb->metrics_cpu_usec = cs.cpu_usec;
	*out = m;
	return 0;
}

