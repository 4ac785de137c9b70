/* cgroup/limits.c — writes a sandbox's memory, pids and CPU limits in
 * the v1 or v2 spelling of the hierarchy that serves each, with no swap
 * past the memory limit; and the commands' limit once init has left the
 * sandbox's v2 directory.
 *
 * Does not choose the limits (local/link.c) or read usage (stats.c).
 * Runs in the CLI/daemon, never between clone and exec. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup/cgroup_internal.h"

#define CPU_PERIOD_US 100000u
/* v1 only: the most socket buffer memory a sandbox holds (its memory
 * limit when smaller). v1 does not count socket buffers against
 * memory.limit_in_bytes: without this, a sandbox with a 256 MiB limit
 * held 478 MiB of unread TCP buffers on its own loopback, memory the
 * host's TCP stack shares with every other socket (tcp_mem), pushing
 * all of them into memory pressure. Writing the limit also turns the
 * accounting on, for sockets made afterwards: before init starts. v2
 * charges socket memory to memory.max already. */
#define CG_V1_TCP_MAX ((uint64_t)64 << 20)

/* The v1 TCP buffer bound of a sandbox whose memory limit is bytes. */
static void tcp_bound(uint64_t bytes, char out[24])
{
	snprintf(out, 24, "%" PRIu64, bytes < CG_V1_TCP_MAX ? bytes : CG_V1_TCP_MAX);
}

/* A memory limit without swap past it: v1 memsw counts memory + swap, so
 * the same value leaves none; v2 limits swap separately. v1 keeps the
 * limit at most memsw: a limit raised past it is refused (EINVAL), so
 * memsw goes first then (an update; at a create memsw is unlimited). */
static int mem_write(const struct cg_dir *d, uint64_t bytes, abox_error *err)
{
	bool v1 = d->version == CG_V1;
	char mem[24];
	snprintf(mem, sizeof(mem), "%" PRIu64, bytes);
	abox_error e = ABOX_ERROR_INIT;
	int r = cgroup_knob_write(d, v1 ? "memory.limit_in_bytes" : "memory.max", mem, false, &e);
	if (r == -EINVAL && v1) {
		if ((r = cgroup_knob_write(d, "memory.memsw.limit_in_bytes", mem, true, err)) < 0)
			return r;
		return cgroup_knob_write(d, "memory.limit_in_bytes", mem, false, err);
	}
	if (r < 0) {
		if (err)
			*err = e;
		return r;
	}
	return cgroup_knob_write(d, v1 ? "memory.memsw.limit_in_bytes" : "memory.swap.max", v1 ? mem : "0",
				 true, err);
}

/* The user's memory limit on the commands' cgroup, without swap past it. */
static int cmds_limit(struct cg_sandbox *cg, uint64_t bytes, abox_error *err)
{
	const struct cg_dir *d = &cg->dir[cg->cmds];
	bool v1 = d->version == CG_V1;
	int r = mem_write(d, bytes, err);
	/* the commands' sockets are charged where they are made: the
	 * accounting is turned on here too (see CG_V1_TCP_MAX) */
	char tcp[24];
	tcp_bound(bytes, tcp);
	if (r >= 0 && v1)
		r = cgroup_knob_write(d, "memory.kmem.tcp.limit_in_bytes", tcp, true, err);
	return r;
}

/* Writes the limits in lim that are set. Any failure fails the whole
 * create, so on success cg->lim (the request, from _begin) holds. */
int cgroup_write_limits(struct cg_sandbox *cg, const struct cg_limits *lim, abox_error *err)
{
	const struct cg_dir *m = lim->memory_bytes ? &cg->dir[cg->ctl[CG_MEMORY]] : NULL;
	const struct cg_dir *p = lim->pids ? &cg->dir[cg->ctl[CG_PIDS]] : NULL;
	const struct cg_dir *c = lim->cpu_millis ? &cg->dir[cg->ctl[CG_CPU]] : NULL;
	const struct cg_dir *w = lim->cpu_shares && cg->ctl[CG_CPU] >= 0 ? &cg->dir[cg->ctl[CG_CPU]] : NULL;
	bool m1 = m && m->version == CG_V1, c1 = c && c->version == CG_V1, w1 = w && w->version == CG_V1;
	uint64_t period = lim->cpu_period_us ? lim->cpu_period_us : CPU_PERIOD_US;
	uint64_t quota = lim->cpu_period_us && lim->cpu_quota_us ? lim->cpu_quota_us
								 : (uint64_t)lim->cpu_millis * period / 1000;
	char pids[24], cpu[48], tcp[24], weight[24], per[24];
	snprintf(per, sizeof(per), "%" PRIu64, period);
	/* v2's weight from shares, as runc maps them: 2..262144 onto 1..10000 */
	uint64_t shares = lim->cpu_shares < 2 ? 2 : lim->cpu_shares > 262144 ? 262144 : lim->cpu_shares;
	snprintf(weight, sizeof(weight), "%" PRIu64, w1 ? shares : 1 + ((shares - 2) * 9999) / 262142);

	/* with a commands' cgroup below, the sandbox's own bound is the
	 * commands' limit plus init's headroom (see CG_INIT_HEADROOM) */
	uint64_t total = lim->memory_bytes + (cg->cmds >= 0 ? CG_INIT_HEADROOM : 0);
	tcp_bound(lim->memory_bytes, tcp);
	snprintf(pids, sizeof(pids), "%" PRIu64, lim->pids);
	if (c1)
		snprintf(cpu, sizeof(cpu), "%" PRIu64, quota);
	else
		snprintf(cpu, sizeof(cpu), "%" PRIu64 " %" PRIu64, quota, period);
	const struct {
		const struct cg_dir *d;
		const char *file, *val;
		bool optional;
	} knobs[] = {
		/* v1: socket buffers bounded (CG_V1_TCP_MAX); a kernel without
		 * the knob has no such accounting to turn on */
		{ m1 ? m : NULL, "memory.kmem.tcp.limit_in_bytes", tcp, true },
		{ p, "pids.max", pids, false },
		{ c, c1 ? "cpu.cfs_quota_us" : "cpu.max", cpu, false },
		{ w, w1 ? "cpu.shares" : "cpu.weight", weight, false },
	};
	int r;
	if (m && (r = mem_write(m, total, err)) < 0)
		return r;
	/* v1's period apart from its quota (a new cgroup's is the kernel's
	 * 100 ms, not inherited): written first, as runc does, unless the
	 * old quota over the new period would exceed the parent's share
	 * (EINVAL): then the quota first */
	if (c1 && lim->cpu_period_us && cgroup_knob_write(c, "cpu.cfs_period_us", per, false, NULL) < 0 &&
	    ((r = cgroup_knob_write(c, "cpu.cfs_quota_us", cpu, false, err)) < 0 ||
	     (r = cgroup_knob_write(c, "cpu.cfs_period_us", per, false, err)) < 0))
		return r;
	for (size_t i = 0; i < ELEMENTSOF(knobs); i++) {
		if (!knobs[i].d)
			continue;
		if ((r = cgroup_knob_write(knobs[i].d, knobs[i].file, knobs[i].val, knobs[i].optional, err)) <
		    0)
			return r;
	}
	/* v1: the commands' limit now; v2 needs the controller handed down
	 * first, once init has left the sandbox's directory (cgroup_nest_finish) */
	if (m1 && cg->cmds >= 0)
		return cmds_limit(cg, lim->memory_bytes, err);
	return 0;
}

int cgroup_nest_finish(struct cg_sandbox *cg, abox_error *err)
{
	if (!cg || cg->init_leaf < 0 || cg->cmds < 0)
		return 0;
	/* init is in its leaf now: the sandbox's directory is empty of
	 * processes, so it may hand the memory controller down */
	int r = cgroup_knob_write(&cg->dir[cg->v2], "cgroup.subtree_control", "+memory", false, err);
	if (r < 0)
		return r;
	return cmds_limit(cg, cg->lim.memory_bytes, err);
}

uint32_t cgroup_cpu_period(const struct cg_sandbox *cg)
{
	const struct cg_dir *c = cg && cg->ctl[CG_CPU] >= 0 ? &cg->dir[cg->ctl[CG_CPU]] : NULL;
	_cleanup_free_ char *now = NULL;
	if (!c || c->fd < 0 ||
	    read_file_at(c->fd, c->version == CG_V1 ? "cpu.cfs_period_us" : "cpu.max", 64, &now, NULL) < 0)
		return CPU_PERIOD_US;
	/* v2's cpu.max is "QUOTA PERIOD" */
	const char *p = c->version == CG_V1 ? now : strchr(now, ' ');
	unsigned long long v = p ? strtoull(p, NULL, 10) : 0;
	return v >= 1000 && v <= 1000000 ? (uint32_t)v : CPU_PERIOD_US;
}

/* A quota without a period is over the period in force: v1 keeps it
 * apart from the quota, and a container's may not be 100 ms. */
static void in_force_period(const struct cg_sandbox *cg, struct cg_limits *l)
{
	if (!l->cpu_millis || l->cpu_period_us || cg->ctl[CG_CPU] < 0 ||
	    cg->dir[cg->ctl[CG_CPU]].version != CG_V1)
		return;
	l->cpu_period_us = cgroup_cpu_period(cg);
	l->cpu_quota_us = (uint64_t)l->cpu_millis * l->cpu_period_us / 1000;
}

int cgroup_update_limits(struct cg_sandbox *cg, const struct cg_limits *lim, abox_error *err)
{
	/* the sandbox's bound and, on v1, the commands' (cgroup_write_limits);
	 * on v2 the commands' too once init has left the sandbox's folder
	 * (the limit of a sandbox made with one) */
	struct cg_limits l = *lim;
	in_force_period(cg, &l);
	lim = &l;
	int r = cgroup_write_limits(cg, lim, err);
	if (r >= 0 && lim->memory_bytes && cg->cmds >= 0 && cg->dir[cg->cmds].version != CG_V1)
		r = cmds_limit(cg, lim->memory_bytes, err);
	if (r < 0)
		return r;
	if (lim->memory_bytes)
		cg->lim.memory_bytes = lim->memory_bytes;
	if (lim->pids)
		cg->lim.pids = lim->pids;
	if (lim->cpu_millis)
		cg->lim.cpu_millis = lim->cpu_millis;
	if (lim->cpu_shares)
		cg->lim.cpu_shares = lim->cpu_shares;
	if (lim->cpu_millis) {
		cg->lim.cpu_period_us = lim->cpu_period_us;
		cg->lim.cpu_quota_us = lim->cpu_quota_us;
	}
	return 0;
}

const struct cg_limits *cgroup_limits(const struct cg_sandbox *cg)
{
	return cg ? &cg->lim : NULL;
}

int cgroup_unified_write(struct cg_sandbox *cg, const char *file, const char *val, abox_error *err)
{
	if (!cg || cg->v2 < 0)
		return abox_error_setx(err, ENOENT, "cgroup: no cgroup v2 folder for '%s'", file);
	if (strchr(file, '/') || file[0] == '.')
		return abox_error_setx(err, EINVAL, "cgroup: '%s' is not a file name", file);
	return cgroup_knob_write(&cg->dir[cg->v2], file, val, false, err);
}

int cgroup_parent_limits(const struct cg_layout *l, const struct cg_sandbox *cg, abox_error *err)
{
	/* the sandbox's own bound (with init's headroom when its commands
	 * have a cgroup of their own), as a runtime's limits are its
	 * container's whole */
	struct cg_limits lim = cg->lim;
	if (lim.memory_bytes && cg->cmds >= 0)
		lim.memory_bytes += CG_INIT_HEADROOM;
	return cgroup_parent_write(l, &lim, err);
}

int cgroup_parent_write(const struct cg_layout *l, const struct cg_limits *want, abox_error *err)
{
	struct cg_limits lim = *want;
	struct cg_sandbox p = { .v2 = -1, .cmds = -1, .init_leaf = -1, .oom_fd = -1, .oom_cmds_fd = -1 };
	char paths[3][4096];
	static const enum cg_controller ctl[] = { CG_MEMORY, CG_PIDS, CG_CPU };
	for (int c = 0; c < CG_CONTROLLER_MAX; c++)
		p.ctl[c] = -1;
	for (size_t i = 0; i < ELEMENTSOF(ctl); i++) {
		enum cg_version v = l->use[ctl[i]];
		const char *mount = v == CG_V1 ? l->v1_mount[ctl[i]] : v == CG_V2 ? l->v2_mount : NULL;
		const char *self = v == CG_V1 ? l->v1_self[ctl[i]] : v == CG_V2 ? l->v2_self : NULL;
		/* never a hierarchy's root */
		int fd = -1;
		if (mount && self && self[strspn(self, "/")] &&
		    (size_t)snprintf(paths[i], sizeof(paths[i]), "%s%s", mount, self) < sizeof(paths[i]))
			fd = open(paths[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		p.dir[p.n] = (struct cg_dir){ .path = paths[i], .fd = fd, .version = v };
		p.ctl[ctl[i]] = (int)p.n++;
	}
	if (p.ctl[CG_MEMORY] < 0)
		lim.memory_bytes = 0;
	if (p.ctl[CG_PIDS] < 0)
		lim.pids = 0;
	if (p.ctl[CG_CPU] < 0)
		lim.cpu_millis = 0;
	in_force_period(&p, &lim);
	int r = cgroup_write_limits(&p, &lim, err);
	for (size_t i = 0; i < p.n; i++)
		close(p.dir[i].fd);
	return r;
}
