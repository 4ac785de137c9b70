/* local/describe.c — abox_ctx_describe: what this host offers a
 * context's sandboxes, told by the modules that depend on it (cgroup
 * layout, abox-init, disks, the seccomp compiler, egress), so a caller such as
 * `abox doctor` needs none of their internals. Kernel features that no
 * module holds (namespaces, Landlock, pidfd) are the caller's to probe.
 * Runs in the CLI (or whoever calls it). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>

#include "local/local.h"
#include "caps/caps.h"
#include "cgroup/cgroup.h"
#include "disk/disk.h"
#include "seccomp/policy.h"
#include "spawn/userns.h"
#include "store/uidpool.h"

__attribute__((format(printf, 6, 7))) static void tell(abox_host_check_fn fn, void *ud, const char *name, bool ok,
						      bool required, const char *fmt, ...)
{
	char detail[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	abox_host_check c = { .version = 1, .name = name, .ok = ok, .required = required, .detail = detail };
	fn(&c, ud);
}

static void describe_cgroups(abox_host_check_fn fn, void *ud)
{
	struct cg_layout l = { 0 };
	abox_error err = ABOX_ERROR_INIT;
	if (cgroup_layout_detect(&l, &err) < 0) {
		tell(fn, ud, "cgroups", false, true, "%s", err.msg);
		return;
	}
	for (int c = 0; c < CG_CONTROLLER_MAX; c++) {
		char what[32];
		safe_snprintf(what, sizeof(what), "cgroup %s", cgroup_controller_name((enum cg_controller)c));
		bool required = c == CG_MEMORY || c == CG_PIDS;
		switch (l.use[c]) {
		case CG_V2:
			tell(fn, ud, what, true, required, "v2 at %s%s", l.v2_mount,
			     strcmp(l.v2_self, "/") == 0 ? "" : l.v2_self);
			break;
		case CG_V1:
			tell(fn, ud, what, true, required, "v1 at %s%s", l.v1_mount[c],
			     strcmp(l.v1_self[c], "/") == 0 ? "" : l.v1_self[c]);
			break;
		default:
			tell(fn, ud, what, false, required, "not available: %s",
			     c == CG_CPU      ? "--cpus cannot be enforced"
			     : c == CG_FREEZER ? "pause will not work"
					       : "sandboxes cannot be limited");
		}
	}
	tell(fn, ud, "cgroup kill", l.v2_kill || l.v2_mount == NULL, false, "%s",
	     l.v2_kill ? "cgroup.kill on v2: kill is one write" : "no cgroup.kill: kill walks the v1 freezer");
	cgroup_layout_free(&l);
}

struct net_tell {
	abox_host_check_fn fn;
	void *ud;
};

static void net_tell(void *ud, const char *name, bool ok, const char *detail)
{
	struct net_tell *t = ud;
	tell(t->fn, t->ud, name, ok, false, "%s", detail);
}

/* Whether sandboxes get a user namespace here, from which ids, and
 * whether this kernel can give them one. */
static void describe_userns(abox_ctx *ctx, abox_host_check_fn fn, void *ud)
{
	struct uidpool_cfg cfg;
	abox_error e = ABOX_ERROR_INIT;
	if (uidpool_config(ctx->state_dir, &cfg, &e) < 0) {
		tell(fn, ud, "sandbox identities", false, true, "%s", e.msg);
		return;
	}
	const char *src = *cfg.path ? cfg.path : "the built-in default";
	abox_error ie = ABOX_ERROR_INIT;
	bool can = local_userns_probe(ctx, true, &ie) == 0;
	if (!cfg.default_on)
		tell(fn, ud, "sandbox identities", true, false,
		     "no user namespace by default (%s): sandbox root is host root with fewer capabilities, "
		     "its user host uid 1000%s%s",
		     src, can ? "; --userns on gives one" : "; --userns on fails here: ", can ? "" : ie.msg);
	else if (!can)
		tell(fn, ud, "sandbox identities", false, false,
		     "a user namespace per sandbox is the default (%s), but %s: sandboxes run without one "
		     "(sandbox root is host root with fewer capabilities, its user host uid 1000) and each "
		     "create warns; move the state folder to a filesystem that supports idmapped mounts "
		     "(ext4, xfs, btrfs, tmpfs) or set \"default\": \"off\" in userns.json to make that the "
		     "rule",
		     src, ie.msg);
	else
		tell(fn, ud, "sandbox identities", true, true,
		     "a user namespace per sandbox (%s): host ids %u-%u, %u ranges of %u, %u in use", src,
		     cfg.start, (unsigned)((uint64_t)cfg.start + (uint64_t)cfg.ranges * UIDPOOL_RANGE - 1),
		     cfg.ranges, UIDPOOL_RANGE, uidpool_used(ctx->runtime_dir));
}

int local_describe(abox_ctx *ctx, abox_host_check_fn fn, void *ud, abox_error *err)
{
	describe_cgroups(fn, ud);
	describe_userns(ctx, fn, ud);
	tell(fn, ud, "abox-init", true, true, "%s", ctx->init_path);
	/* which writable layer long-lived sandboxes get here: made for real,
	 * as a create would */
	abox_error derr = ABOX_ERROR_INIT;
	int dr = disk_probe(ctx->state_dir, &derr);
	if (dr >= 0)
		tell(fn, ud, "sandbox disks", true, false,
		     "ext4 images on loop devices in %s/disks: files on disk, never in memory; --disk enforced (ENOSPC); "
		     "tmpfs only with --layer tmpfs",
		     ctx->state_dir);
	else
		tell(fn, ud, "sandbox disks", false, false, "%s: writable layers are tmpfs here (files count as memory)%s",
		     derr.msg, disk_unsupported(dr) ? "" : "; creates fail until this is fixed");
	bool filters = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
	if (ctx->default_policy) {
		struct policy_bpf bpf = { 0 };
		struct policy_env env = { .caps = caps_default(), .kernel = 6000 };
		abox_error perr = ABOX_ERROR_INIT;
		int r = policy_load(ctx->default_policy, NULL, &env, &bpf, &perr);
		if (r >= 0)
			tell(fn, ud, "seccomp", filters, true, "filters %s; default policy %s compiles (%u instructions)",
			     filters ? "available" : "unavailable in this kernel", ctx->default_policy, (unsigned)bpf.len);
		else
			tell(fn, ud, "seccomp", false, true, "%s", perr.msg);
		policy_bpf_free(&bpf);
	} else {
		tell(fn, ud, "seccomp", false, true, "default policy not found (set ABOX_DEFAULT_POLICY)");
	}
	struct net_tell nt = { fn, ud };
	local_net_describe(ctx, net_tell, &nt);
	return 0;
}
