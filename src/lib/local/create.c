/* local/create.c — a sandbox made on this machine, as phases: the
 * options checked, what it stands on prepared (snapshot stack, template,
 * environment, seccomp program), its runtime folder and cgroups made, its
 * egress prepared (a slot of the pool, abox-netd reached), the sandbox
 * child cloned (its interface made meanwhile), the record written, the
 * handle made ready (the template's start command). A create from a memory snapshot is restored
 * instead (checkpoint/restore.c).
 *
 * Everything the sandbox child needs is prepared before the clone, so the
 * child only makes system calls; a failure in any phase is undone by one
 * create_undo, leaving no folder, cgroup, process or mount.
 * Runs in the CLI/daemon. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "local/local.h"
#include "local/create_oci.h"
#include "caps/caps.h"
#include "disk/disk.h"
#include "layer/layer.h"
#include "layer/snapshot.h"
#include "net/policy.h"
#include "proto/messages.h"
#include "seccomp/policy.h"
#include "spawn/spawn.h"
#include "store/state.h"
#include "store/store.h"
#include "store/uidpool.h"
#include "versioned.h"

/* What one create carries from phase to phase, and what create_undo
 * takes apart. */
struct create {
	abox_ctx *ctx;
	abox_sandbox_opts o;
	const char *fixed_id;
	const char *tmpl_name;
	abox_sandbox *sb;
	struct stack stk;
	struct template_info tmpl;
	struct policy_bpf bpf;
	char **merged_env;
	int listen_fd, memfd, disk_fd;
	char planned[8192]; /* the cgroups it will have, recorded first */
	struct cg_limits lim;
	uint64_t disk_bytes;
	bool on_disk;
	const char *net_json; /* a record's policy (a cold resume, a fork), else opts.net's */
	struct net_policy net; /* the policy; mode none: loopback only */
	struct local_net ln;
	struct userns_job uj; /* its user namespace, being made */
	int userns_fd; /* the namespace, or -1 */
	uint32_t id_base; /* its host ids' first, taken from the pool; 0: none */
	struct oci_create oci; /* an OCI container (oci.root set), create_oci.c */
};

/* Tells init it is recorded and must outlive us; waits for its answer, so
 * that our exit right after cannot take it along. */
static int detach(abox_sandbox *sb, abox_error *err)
{
	struct proto_msg m;
	proto_msg_init(&m, MSG_REQ_DETACH, ++sb->next_req);
	return backend_call(sb, &m, "detach", NULL, NULL, err);
}

int local_create(abox_ctx *ctx, const abox_sandbox_opts *opts, abox_sandbox **out, abox_error *err)
{
	return backend_create(ctx, opts, NULL, out, err);
}


/* The options, checked before anything is made. */
static int create_check(struct create *c, const abox_sandbox_opts *opts, abox_error *err)
{
	abox_sandbox_opts *o = &c->o;
	if (opts && versioned_copy_in(VERSIONED_SANDBOX_OPTS, o, opts) < 0)
		return abox_error_setx(err, EINVAL, "abox_sandbox_opts: bad version %u", opts->version);
	if (local_create_opts_check(o, err) < 0 || (o->oci_bundle && oci_create_check(o, &c->oci, err) < 0))
		return abox_error_prefix(err, "create");
	if (c->oci.warning[0])
		backend_log(c->ctx, ABOX_LOG_WARNING, "create: %s", c->oci.warning);
	for (size_t i = 0; o->env && o->env[i]; i++)
		if (!strchr(o->env[i], '=') || o->env[i][0] == '=')
			return abox_error_setx(err, EINVAL, "create: environment entry '%s' is not K=V", o->env[i]);
	size_t nmeta = 0;
	while (o->metadata && o->metadata[nmeta])
		nmeta++;
	/* the record holds this many: cutting the rest would silently drop
	 * what a caller put last (aboxd puts its owner tag there) */
	if (nmeta > STATE_MAX_META)
		return abox_error_setx(err, E2BIG, "create: %zu metadata entries, at most %d", nmeta, STATE_MAX_META);
	int r = c->net_json ? net_policy_parse(c->net_json, &c->net, err)
			    : local_net_policy(o->net, &c->net, err);
	if (r < 0)
		return abox_error_prefix(err, "create");
	if (c->net.mode != NET_MODE_NONE && !c->ctx->netd_path)
		return abox_error_setx(err, ENOENT,
				       "create: networking needs abox-netd, which is not installed");
	return 0;
}

/* A snapshot with processes: those come back instead of a fresh init.
 * 1 when it was one (*r is then the create's answer). */
static int create_from_memory(struct create *c, abox_sandbox **out, int *r, abox_error *err)
{
	struct snap_record sr;
	if (!c->o.snapshot || snap_read(c->ctx->state_dir, c->o.snapshot, &sr, NULL) < 0)
		return 0;
	bool mem = sr.memory;
	if (mem && c->net.mode != NET_MODE_NONE)
		*r = abox_error_setx(err, EOPNOTSUPP,
				     "create: a sandbox restored from a memory snapshot cannot have "
				     "networking yet (start it from a snapshot of its files)");
	else if (mem)
		*r = backend_create_restored(c->ctx, &c->o, &sr, c->fixed_id, out, err);
	snap_record_free(&sr);
	return mem;
}

/* What the sandbox stands on: its snapshot stack (locked), the handle
 * with its id, the template version, the environment, the seccomp
 * program. */
static int create_prepare(struct create *c, abox_error *err)
{
	abox_ctx *ctx = c->ctx;
	int r;
	if (c->o.snapshot) {
		if ((r = stack_open(ctx, c->o.snapshot, &c->stk, err)) < 0)
			return abox_error_prefix(err, "create");
		if (c->o.template_name && strcmp(c->o.template_name, c->stk.top.template_name) != 0)
			return abox_error_setx(err, EINVAL, "create: snapshot %s stands on template '%s', not '%s'",
					       c->stk.top.id, c->stk.top.template_name, c->o.template_name);
		c->o.template_name = c->stk.top.template_name;
	}
	c->tmpl_name = c->oci.root ? "oci" : c->o.template_name ? c->o.template_name : "host";

	abox_sandbox *sb = c->sb = calloc(1, sizeof(*sb));
	if (!sb)
		return abox_error_set(err, ENOMEM, "create");
	sb->ctx = ctx;
	sb->conn = -1;
	sb->pidfd = -1;
	sb->template_lock = -1;
	sb->rundir_fd = -1;
	sb->flags = c->o.flags;
	proto_reader_init(&sb->rd, -1);

	if (c->fixed_id)
		safe_snprintf(sb->id, sizeof(sb->id), "%s", c->fixed_id);
	else if ((r = random_id(sb->id, ABOX_ID_LEN)) < 0)
		return abox_error_set(err, -r, "create: random id");
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: start", sb->id);
	/* egress asked for now (a slot, abox-netd and a spare namespace), so
	 * netd's part runs while the template and seccomp are readied */
	if ((r = local_net_ask(ctx, sb->id, c->fixed_id, &c->net, &c->ln, err)) < 0)
		return abox_error_prefix(err, "create");
	/* and its user namespace, made by the kernel meanwhile */
	/* (an OCI container's from its config, not the pool's: recorded all
	 * the same, as what refuses memory checkpoints of such sandboxes) */
	if ((r = c->oci.root ? oci_userns_begin(ctx, &c->oci, &c->uj, err)
			     : local_userns_begin(ctx, sb->id, c->o.flags, &c->uj, err)) < 0)
		return abox_error_prefix(err, "create");
	c->id_base = c->oci.root ? (c->oci.userns ? c->oci.userns_base : 0) : c->uj.pid > 0 ? c->uj.base : 0;
	sb->id_base = c->id_base;
	/* from a snapshot: the very template version its layers were made on
	 * (a re-import or rebuild since must not slide under them) */
	const char *pinned = c->o.snapshot ? c->stk.top.template_root : NULL;
	if ((r = c->oci.root ? 0
		 : pinned    ? template_open_version(c->tmpl_name, pinned, &c->tmpl, err)
			     : template_open(ctx->state_dir, c->tmpl_name, &c->tmpl, err)) < 0 ||
	    (c->o.snapshot && (r = stack_lowers(&c->stk, &c->tmpl, err)) < 0))
		return abox_error_prefix(err, "create");

	/* the template's env first, the create's over it (the later wins) */
	if (!(c->merged_env = strv_env_merge(c->tmpl.meta.env, c->o.env)))
		return abox_error_set(err, ENOMEM, "create");
	const char *policy = c->o.seccomp_policy ? c->o.seccomp_policy : ctx->default_policy;
	if (!policy)
		return abox_error_setx(err, ENOENT, "create: default seccomp policy not found (set ABOX_DEFAULT_POLICY)");
	char cache[4096];
	snprintf(cache, sizeof(cache), "%s/cache", ctx->state_dir);
	if (mkdir(cache, 0700) < 0 && errno != EEXIST)
		return abox_error_set(err, errno, "create: mkdir '%s'", cache);
	snprintf(cache, sizeof(cache), "%s/cache/seccomp", ctx->state_dir);
	struct policy_env penv = { .caps = caps_default(), .kernel = local_kernel_version() };
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: template ready", sb->id);
	if ((r = policy_load(policy, cache, &penv, &c->bpf, err)) < 0)
		return abox_error_prefix(err, "create: seccomp policy");
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: seccomp policy ready (%u instructions)", sb->id, c->bpf.len);
	return 0;
}

/* Its runtime folder (socket, lock) and its cgroups, the plan of those
 * recorded before they exist. */
static int create_rundir_and_cgroups(struct create *c, abox_error *err)
{
	abox_ctx *ctx = c->ctx;
	abox_sandbox *sb = c->sb;
	bool ephemeral = (c->o.flags & ABOX_SANDBOX_EPHEMERAL) != 0;
	int r;
	/* an ephemeral sandbox talks to its creator only: a socket pair */
	if ((r = store_rundir_create(ctx->runtime_dir, sb->id, ephemeral, &sb->rundir, &sb->rundir_fd, &c->listen_fd,
				     &sb->conn, err)) < 0)
		return abox_error_prefix(err, "create");
	sb->rd.sock = sb->conn;
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: runtime folder ready", sb->id);

	if ((r = backend_layout(ctx, err)) < 0)
		return abox_error_prefix(err, "create");
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: cgroup layout known", sb->id);
	/* recorded before they exist: a crash from here on leaves a list
	 * that `abox gc` cleans up from */
	if ((r = cgroup_planned_dirs(&ctx->cg, sb->id, c->planned, sizeof(c->planned), err)) < 0 ||
	    (c->oci.root &&
	     (r = oci_cpuset_plan(ctx, sb->id, &c->oci, c->planned, sizeof(c->planned), err)) < 0) ||
	    (r = ephemeral ? store_runrec_write(sb->rundir_fd, c->planned, err)
			   : store_rundir_record(sb->rundir_fd, STORE_CGROUPS_FILE, c->planned, err)) < 0 ||
	    (!ephemeral &&
	     (r = store_rundir_record(sb->rundir_fd, STORE_ROOT_FILE, ctx->state_dir, err)) < 0))
		return abox_error_prefix(err, "create");
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: cgroup plan recorded", sb->id);
	c->lim = (struct cg_limits){
		.memory_bytes = c->o.memory_bytes ? c->o.memory_bytes : DEFAULT_MEMORY,
		.pids = c->o.pids ? c->o.pids : DEFAULT_PIDS,
		.cpu_millis = c->o.cpu_millis ? c->o.cpu_millis : DEFAULT_CPU,
		.cpu_shares = c->oci.cpu_shares,
		.cpu_period_us = c->oci.cpu_period,
		.cpu_quota_us = c->oci.cpu_quota,
	};
	sb->memory_limit = c->lim.memory_bytes;
	sb->created_wall_ms = clock_wall_ms();
	if ((r = cgroup_create_begin(&ctx->cg, sb->id, &c->lim, &sb->cg, err)) < 0)
		return abox_error_prefix(err, "create");
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: cgroups ready", sb->id);
	return 0;
}

/* Its egress, asked for at the start (a slot of the pool, recorded: a
 * crash from then on leaves something gc finds; abox-netd reached,
 * started if need be): netd's answer, before the clone. */
static int create_network(struct create *c, abox_error *err)
{
	int r = local_net_answer(&c->ln, &c->merged_env, err);
	if (r < 0)
		return abox_error_prefix(err, "create");
	if (c->ln.have_slot)
		backend_log(c->ctx, ABOX_LOG_DEBUG, "create %s: network slot %u, abox-netd reached",
			    c->sb->id, c->ln.slot);
	return 0;
}

/* The writable layer's disk; on a host without disks (`abox doctor` says
 * so) the layer in memory, as before there were disks, unless the caller
 * asked for a disk. */
static int create_disk(struct create *c, abox_error *err)
{
	const abox_sandbox_opts *o = &c->o;
	c->disk_bytes = o->disk_bytes ? o->disk_bytes : DEFAULT_DISK;
	c->on_disk = backend_layer_on_disk(o->flags);
	if (c->on_disk && (c->disk_fd = backend_disk_new(c->ctx, c->disk_bytes, err)) < 0) {
		int r = c->disk_fd;
		c->disk_fd = -1;
		if ((o->flags & ABOX_SANDBOX_LAYER_DISK) || !disk_unsupported(r))
			return abox_error_prefix(err, "create");
		backend_log(c->ctx, ABOX_LOG_WARNING,
			    "create %s: no disk (%s), the writable layer is a tmpfs", c->sb->id,
			    err ? err->msg : "");
		if (err)
			*err = (abox_error)ABOX_ERROR_INIT;
		c->on_disk = false;
	}
	backend_log(c->ctx, ABOX_LOG_DEBUG, "create %s: writable layer %s", c->sb->id,
		    c->on_disk ? "on a disk" : "in memory");
	return 0;
}

/* init's command line (its strings in a). */
struct init_args {
	char *argv[8];
	char memory[48], timeout[64];
};

static void create_init_args(struct create *c, struct init_args *a)
{
	const abox_sandbox_opts *o = &c->o;
	int ai = 0;
	a->argv[ai++] = (char *)"abox-init";
	/* init keeps its own writes into a layer in memory within this */
	snprintf(a->memory, sizeof(a->memory), "memory=%llu", (unsigned long long)c->lim.memory_bytes);
	a->argv[ai++] = a->memory;
	if (o->flags & ABOX_SANDBOX_EPHEMERAL)
		a->argv[ai++] = (char *)"ephemeral";
	if (o->flags & ABOX_SANDBOX_NO_SUDO)
		a->argv[ai++] = (char *)"nosudo";
	if (c->oci.root)
		a->argv[ai++] = (char *)"oci";
	/* commands forked, never started in init's memory (see
	 * src/init/child.c): for hosts and debugging that want the plain way */
	const char *how = getenv("ABOX_INIT_SPAWN");
	if (how && strcmp(how, "fork") == 0)
		a->argv[ai++] = (char *)"spawn=fork";
	/* an auto-pause deadline is abox_reap's to act on, not init's */
	if (o->timeout_ms && !(o->flags & ABOX_SANDBOX_AUTO_PAUSE)) {
		snprintf(a->timeout, sizeof(a->timeout), "timeout_ms=%u", o->timeout_ms);
		a->argv[ai++] = a->timeout;
		c->sb->deadline_ms = clock_mono_ms() + o->timeout_ms;
	}
	a->argv[ai] = NULL;
}

/* After the clone: init's pid and pidfd, and its interface, which
 * abox-netd made while the child worked (init runs nothing of the
 * sandbox's before create returns). */
static int create_started(struct create *c, const struct spawn_result *res, abox_error *err)
{
	abox_sandbox *sb = c->sb;
	sb->pid = res->pid;
	sb->oom_known = true; /* a fresh cgroup: no kills yet */
	sb->pidfd = res->pidfd;
	int r;
	if ((r = local_net_finish(&c->ln, err)) < 0) {
		(void)syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
		backend_reap_init(sb, true);
		return abox_error_prefix(err, "create");
	}
	if (c->ln.have_slot) {
		if (!(sb->net_policy = strdup(c->ln.policy_json)))
			return abox_error_set(err, ENOMEM, "create");
		sb->net_slot = c->ln.slot;
		backend_log(c->ctx, ABOX_LOG_DEBUG, "create %s: network attached", sb->id);
	}
	/* never block on init: requests wait in sb->out, see backend_send */
	fcntl(sb->conn, F_SETFL, O_NONBLOCK);
	backend_log(c->ctx, ABOX_LOG_DEBUG, "create %s: init running as pid %d", sb->id, (int)sb->pid);
	return 0;
}

/* The sandbox child: init's image, the writable layer's disk, init's
 * arguments, then the clone (spawn/). */
static int create_spawn(struct create *c, abox_error *err)
{
	abox_ctx *ctx = c->ctx;
	abox_sandbox *sb = c->sb;
	const abox_sandbox_opts *o = &c->o;
	int r;
	if (c->uj.pid > 0 && (c->userns_fd = c->oci.root ? userns_finish(&c->uj, err)
							 : local_userns_finish(ctx, &c->uj, err)) < 0)
		return abox_error_prefix(err, "create");
	if ((c->memfd = spawn_init_memfd(ctx->init_path, err)) < 0)
		return abox_error_prefix(err, "create");
	if ((r = create_disk(c, err)) < 0)
		return r;
	char hosts[256];
	snprintf(hosts, sizeof(hosts),
		 "127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n", sb->id);
	struct init_args ia;
	create_init_args(c, &ia);
	struct spawn_config cfg = {
		.rootfs = {
			/* an ephemeral sandbox has a record file, not a folder:
			 * its layer is mounted over the runtime folder itself,
			 * in the child's own mount namespace only */
			.scratch = (o->flags & ABOX_SANDBOX_EPHEMERAL) ? ctx->runtime_dir : sb->rundir,
			.lower = o->snapshot ? c->stk.root_lower : c->tmpl.root,
			.ntrees = c->tmpl.ntrees,
			.disk_bytes = c->disk_bytes,
			.on_disk = c->on_disk,
			.disk_fd = c->disk_fd,
			.hostname = sb->id,
			.hosts = hosts,
			.user_uid = c->tmpl.user_uid,
			.user_gid = c->tmpl.user_gid,
			.proc_masks = ctx->proc_masks,
			.init_in_dev = !(o->flags & ABOX_SANDBOX_EPHEMERAL),
			.resolv = c->ln.have_slot ? c->ln.resolv : NULL,
			.userns_fd = c->userns_fd,
			.id_base = c->id_base,
		},
		.listen_fd = c->listen_fd,
		.init_memfd = c->memfd,
		.init_argv = ia.argv,
		.bpf = &c->bpf,
		.caps_keep = caps_default(),
		.last_cap = ctx->last_cap,
		.cg = sb->cg,
		.cg_layout = &ctx->cg,
		.net_begin = c->ln.have_slot ? local_net_begin : NULL,
		.net_ud = &c->ln,
		.net_premade = c->ln.netns_fd >= 0,
		.net_premade_fd = c->ln.netns_fd,
	};
	for (unsigned i = 0; i < c->tmpl.ntrees; i++) {
		cfg.rootfs.trees[i] = c->tmpl.trees[i];
		cfg.rootfs.tree_lowers[i] = c->stk.tree_lowers[i];
	}
	if (c->oci.root)
		oci_create_spawn(&c->oci, &cfg);
	_cleanup_free_ char *with_extras = NULL;
	if (!(o->flags & ABOX_SANDBOX_NO_SUDO) &&
	    (r = local_extras_apply(ctx, &cfg.rootfs, &with_extras, err)) < 0)
		return abox_error_prefix(err, "create");
	struct spawn_result res;
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: cloning", sb->id);
	/* the child's own steps, timed on a page it shares with us */
	cfg.rootfs.marks = local_marks_begin(ctx);
	uint64_t cloned = cfg.rootfs.marks ? clock_mono_ns() : 0;
	r = spawn_sandbox(&cfg, &res, err);
	local_marks_end(ctx, sb->id, cfg.rootfs.marks, cloned);
	if (c->userns_fd >= 0)
		close(c->userns_fd);
	c->userns_fd = -1;
	/* attached in the child's namespace, or never (then this close
	 * releases the disk) */
	if (c->disk_fd >= 0)
		close(c->disk_fd);
	c->disk_fd = -1;
	if (r < 0)
		return abox_error_prefix(err, "create");
	return create_started(c, &res, err);
}

static int create_record(struct create *c, abox_error *err)
{
	abox_ctx *ctx = c->ctx;
	abox_sandbox *sb = c->sb;
	const abox_sandbox_opts *o = &c->o;
	if (o->flags & ABOX_SANDBOX_EPHEMERAL)
		return 0;
	struct sb_state st = {
		.pid = sb->pid,
		.created_ms = clock_wall_ms(),
		.deadline_ms = o->timeout_ms ? clock_wall_ms() + o->timeout_ms : 0,
		.template_name = (char *)c->tmpl_name,
		.template_root = c->tmpl.root,
		.snapshots = c->stk.ids,
		.cgroups = c->planned,
		.memory_bytes = c->lim.memory_bytes,
		.disk_bytes = c->disk_bytes,
		.pids = c->lim.pids,
		.cpu_millis = c->lim.cpu_millis,
		.env = c->merged_env,
		.user = c->tmpl.meta.user,
		.workdir = c->tmpl.meta.workdir,
		.auto_pause = (o->flags & ABOX_SANDBOX_AUTO_PAUSE) != 0,
		.tmpfs_layer = !c->on_disk,
		.auto_no_memory = (o->flags & ABOX_SANDBOX_AUTO_PAUSE_NO_MEMORY) != 0,
		.net_policy = sb->net_policy,
		.net_slot = sb->net_slot,
		.id_base = sb->id_base,
		.no_sudo = (o->flags & ABOX_SANDBOX_NO_SUDO) != 0,
	};
	/* forks of this sandbox must get the same policy, not the default:
	 * record where it is */
	_cleanup_free_ char *policy_abs = o->seccomp_policy ? realpath(o->seccomp_policy, NULL) : NULL;
	/* never NULL for a custom policy: that would mean "default" */
	st.seccomp_policy = policy_abs ? policy_abs : (char *)o->seccomp_policy;
	memcpy(st.id, sb->id, sizeof(st.id));
	int r = proc_start_time(sb->pid, &st.pid_start);
	for (size_t i = 0; r >= 0 && o->metadata && o->metadata[i] && st.nmeta < STATE_MAX_META; i++) {
		const char *eq = strchr(o->metadata[i], '=');
		if (!eq || eq == o->metadata[i]) {
			r = abox_error_setx(err, EINVAL, "create: metadata '%s' is not key=value", o->metadata[i]);
			break;
		}
		st.meta_keys[st.nmeta] = strndup(o->metadata[i], (size_t)(eq - o->metadata[i]));
		st.meta_values[st.nmeta] = strdup(eq + 1);
		st.nmeta++;
	}
	if (r >= 0)
		r = state_write(ctx->state_dir, &st, err);
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: recorded", sb->id);
	if (r >= 0)
		r = detach(sb, err);
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: init answered", sb->id);
	for (unsigned i = 0; i < st.nmeta; i++) {
		free(st.meta_keys[i]);
		free(st.meta_values[i]);
	}
	if (r < 0) {
		abox_error_prefix(err, "create: record");
		(void)local_kill(sb, NULL);
		(void)state_remove(ctx->state_dir, sb->id);
	}
	return r;
}

/* The handle takes what it keeps (the template's lock, the environment,
 * the defaults), then the template's start command and its readiness: a
 * sandbox that never gets ready is not handed out. */
static int create_ready(struct create *c, abox_error *err)
{
	abox_sandbox *sb = c->sb;
	close(c->listen_fd);
	close(c->memfd);
	c->listen_fd = c->memfd = -1;
	sb->template_lock = TAKE_FD(c->tmpl.lock_fd);
	sb->env = TAKE_PTR(c->merged_env);
	sb->def_user = c->tmpl.meta.user ? strdup(c->tmpl.meta.user) : NULL;
	sb->def_cwd = c->tmpl.meta.workdir ? strdup(c->tmpl.meta.workdir) : NULL;
	int r = c->oci.root ? oci_create_hold(sb, &c->oci, c->o.oci_console, err)
			    : backend_template_start(sb, &c->tmpl.meta, err);
	if (r < 0) {
		abox_error_prefix(err, "create %s", sb->id);
		(void)local_kill(sb, NULL);
		local_free(sb);
		c->sb = NULL;
	}
	return r;
}

/* What every phase leaves, taken apart: on success only what the handle
 * did not take; on failure the sandbox too (its cgroups, runtime folder
 * and handle; a recorded one was killed by create_record). */
static void create_undo(struct create *c, bool failed)
{
	strv_free(c->merged_env);
	if (c->listen_fd >= 0)
		close(c->listen_fd);
	if (c->memfd >= 0)
		close(c->memfd);
	if (c->disk_fd >= 0)
		close(c->disk_fd);
	template_info_free(&c->tmpl);
	oci_create_free(&c->oci);
	policy_bpf_free(&c->bpf);
	stack_free(&c->stk);
	net_policy_free(&c->net);
	abox_sandbox *sb = c->sb;
	if (failed && !(sb && sb->net_policy))
		local_net_undo(c->ctx, &c->ln); /* (a sandbox's own is its kill's) */
	userns_abort(&c->uj);
	if (c->userns_fd >= 0)
		close(c->userns_fd);
	/* its host ids, unless its kill gave them back already */
	if (failed && c->id_base && sb)
		uidpool_give(c->ctx->runtime_dir, c->id_base, sb->id);
	free(c->ln.policy_json);
	c->ln.policy_json = NULL;
	if (!failed || !sb)
		return;
	if (sb->cg)
		(void)cgroup_destroy(sb->cg, NULL);
	sb->cg = NULL;
	if (sb->rundir)
		(void)store_rundir_remove(sb->rundir, NULL);
	backend_release(sb);
	free(sb);
}

int backend_create(abox_ctx *ctx, const abox_sandbox_opts *opts, const char *fixed_id, abox_sandbox **out,
		   abox_error *err)
{
	return backend_create_net(ctx, opts, fixed_id, NULL, out, err);
}

int backend_create_net(abox_ctx *ctx, const abox_sandbox_opts *opts, const char *fixed_id,
		       const char *net_json, abox_sandbox **out, abox_error *err)
{
	struct create c = {
		.ctx = ctx,
		.o = ABOX_SANDBOX_OPTS_INIT,
		.fixed_id = fixed_id,
		.net_json = net_json,
		.ln = { .conn = -1, .netns_fd = -1 },
		.stk = { .lock = -1 },
		.tmpl = { .lock_fd = -1 },
		.listen_fd = -1,
		.memfd = -1,
		.disk_fd = -1,
		.userns_fd = -1,
		.uj = { .pid = -1, .ready_fd = -1 },
		.oci = OCI_CREATE_INIT,
	};
	int r = create_check(&c, opts, err);
	if (r < 0) {
		net_policy_free(&c.net);
		oci_create_free(&c.oci);
		return r;
	}
	if (create_from_memory(&c, out, &r, err)) {
		net_policy_free(&c.net);
		return r;
	}
	if ((r = create_prepare(&c, err)) < 0 || (r = create_rundir_and_cgroups(&c, err)) < 0 ||
	    (r = create_network(&c, err)) < 0 || (r = create_spawn(&c, err)) < 0 ||
	    (r = create_record(&c, err)) < 0 || (r = create_ready(&c, err)) < 0) {
		create_undo(&c, c.sb != NULL);
		return r < 0 ? r : -EIO;
	}
	*out = c.sb;
	create_undo(&c, false);
	return 0;
}
