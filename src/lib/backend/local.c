/* backend/local.c — sandbox lifecycle on this machine: create (template,
 * policy, runtime folder, cgroups, clone), kill and cleanup.
 *
 * Create prepares everything the sandbox child needs before the clone, so
 * the child only makes system calls; a failure at any step undoes the
 * steps before it, leaving no folder, cgroup, process or mount.
 * Runs in the CLI/daemon. */
#include <fcntl.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "backend/backend.h"
#include "layer/snapshot.h"
#include "caps/caps.h"
#include "disk/disk.h"
#include "layer/layer.h"
#include "proto/messages.h"
#include "seccomp/policy.h"
#include "spawn/spawn.h"
#include "store/state.h"
#include "store/store.h"
#include "versioned.h"



static unsigned kernel_version(void)
{
	struct utsname u;
	unsigned maj = 0, min = 0;
	if (uname(&u) == 0)
		sscanf(u.release, "%u.%u", &maj, &min);
	return maj * 1000 + min;
}

static int check_opts(const abox_sandbox_opts *o, abox_error *err)
{
	if (o->memory_bytes && o->memory_bytes < (8ULL << 20))
		return abox_error_setx(err, EINVAL, "memory limit %llu bytes is below the minimum of 8M",
				       (unsigned long long)o->memory_bytes);
	if (o->disk_bytes && o->disk_bytes < (1ULL << 20))
		return abox_error_setx(err, EINVAL, "disk limit %llu bytes is below the minimum of 1M",
				       (unsigned long long)o->disk_bytes);
	if (o->cpu_millis && o->cpu_millis < 10)
		return abox_error_setx(err, EINVAL, "cpu limit %.3f is below the minimum of 0.01",
				       o->cpu_millis / 1000.0);
	if (o->pids && o->pids < 2)
		return abox_error_setx(err, EINVAL, "pids limit %llu is below the minimum of 2",
				       (unsigned long long)o->pids);
	if ((o->flags & ABOX_SANDBOX_AUTO_PAUSE) && (o->flags & ABOX_SANDBOX_EPHEMERAL))
		return abox_error_setx(err, EINVAL, "an ephemeral sandbox cannot pause at its deadline");
	if ((o->flags & ABOX_SANDBOX_AUTO_PAUSE_NO_MEMORY) && !(o->flags & ABOX_SANDBOX_AUTO_PAUSE))
		return abox_error_setx(err, EINVAL, "auto-pause without memory needs auto-pause");
	if ((o->flags & ABOX_SANDBOX_LAYER_DISK) && (o->flags & ABOX_SANDBOX_LAYER_TMPFS))
		return abox_error_setx(err, EINVAL, "the writable layer cannot be both on disk and in memory");
	if (o->flags & ~(ABOX_SANDBOX_EPHEMERAL | ABOX_SANDBOX_AUTO_PAUSE | ABOX_SANDBOX_AUTO_PAUSE_NO_MEMORY | ABOX_SANDBOX_LAYER_DISK |
			 ABOX_SANDBOX_LAYER_TMPFS))
		return abox_error_setx(err, EINVAL, "unknown sandbox flags 0x%x", o->flags);
	return 0;
}

static void reap_blocking(abox_sandbox *sb)
{
	backend_reap_init(sb, true);
}

void backend_reap_init(abox_sandbox *sb, bool wait)
{
	if (sb->dead || sb->pid <= 0)
		return;
	if (sb->attached) {
		/* not our child (another process made it): its pidfd becomes
		 * readable when it exits */
		struct pollfd p = { .fd = sb->pidfd, .events = POLLIN };
		int k;
		do
			k = poll(&p, 1, wait ? 10000 : 0);
		while (k < 0 && errno == EINTR);
		if (k > 0 || sb->pidfd < 0)
			sb->dead = true;
		/* found by id, but made by this very process (a daemon that
		 * runs on): then it is our child and only we can reap it */
		if (k > 0) {
			siginfo_t si;
			(void)waitid(P_PIDFD, (id_t)sb->pidfd, &si, WEXITED | WNOHANG);
		}
		return;
	}
	int st;
	pid_t r;
	do
		r = waitpid(sb->pid, &st, wait ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == sb->pid || (r < 0 && errno == ECHILD)) {
		sb->dead = true;
		sb->init_status = r == sb->pid ? st : 0;
	}
}

int backend_layout(abox_ctx *ctx, abox_error *err)
{
	if (ctx->cg_ready)
		return 0;
	int r = cgroup_layout_detect(&ctx->cg, err);
	if (r < 0)
		return r;
	ctx->proc_masks = rootfs_proc_masks_present();
	ctx->cg_ready = true;
	return 0;
}

int backend_send(abox_sandbox *sb, struct proto_msg *m)
{
	int r = proto_queue(&sb->out, m);
	proto_msg_free(m);
	if (r < 0)
		return r;
	r = proto_flush(sb->conn, &sb->out);
	return r < 0 ? r : 0;
}

static void sandbox_release(abox_sandbox *sb)
{
	if (sb->conn >= 0)
		close(sb->conn);
	sb->conn = -1;
	proto_reader_free(&sb->rd);
	proto_outq_free(&sb->out);
	strv_free(sb->env);
	sb->env = NULL;
	free(sb->def_user);
	free(sb->def_cwd);
	sb->def_user = sb->def_cwd = NULL;
	if (sb->pidfd >= 0)
		close(sb->pidfd);
	sb->pidfd = -1;
	if (sb->template_lock >= 0)
		close(sb->template_lock);
	sb->template_lock = -1;
	free(sb->rundir);
	sb->rundir = NULL;
	if (sb->rundir_fd >= 0)
		close(sb->rundir_fd); /* releases the lock: nothing is left to clean */
	sb->rundir_fd = -1;
}

int backend_recv(abox_sandbox *sb, struct proto_frame *f, const char *what, abox_error *err)
{
	/* never for ever: a tree frozen by someone who does not let go (or
	 * an init that stopped serving) ends in an error, not a hang that
	 * holds the sandbox's lock */
	int64_t end = clock_mono_ms() + lock_timeout_ms();
	for (;;) {
		int r = proto_recv_timeout(&sb->rd, f, 1000);
		if (r != -ETIMEDOUT)
			return r;
		if (clock_mono_ms() >= end)
			return abox_error_setx(err, ETIMEDOUT, "%s: init of sandbox %s did not answer for %lld ms", what,
					       sb->id, (long long)lock_timeout_ms());
		/* a frozen init never answers: if another process paused the
		 * sandbox since this handle looked, say so instead of waiting
		 * for ever */
		struct sb_state st = { 0 };
		bool paused = !(sb->flags & ABOX_SANDBOX_EPHEMERAL) &&
			      state_read(sb->ctx->state_dir, sb->id, &st, NULL) == 0 && st.paused_ms;
		sb_state_free(&st);
		if (paused) {
			sb->paused = true;
			return backend_not_paused(sb, what, err);
		}
	}
}

int backend_call(abox_sandbox *sb, struct proto_msg *m, const char *what,
		 void (*on_ok)(const struct proto_frame *f, void *ud), void *ud, abox_error *err)
{
	int r = backend_not_paused(sb, what, err);
	if (r < 0)
		return r;
	if (sb->conn < 0)
		return abox_error_setx(err, ESRCH, "%s: sandbox %s is not reachable", what, sb->id);
	if (sb->active)
		return abox_error_setx(err, EBUSY, "%s: the handle is running a process", what);
	uint32_t id = m->id;
	r = backend_send(sb, m);
	if (r < 0)
		return abox_error_set(err, -r, "%s", what);
	for (;;) {
		while (proto_outq_len(&sb->out)) {
			struct pollfd p = { .fd = sb->conn, .events = POLLOUT };
			poll(&p, 1, 1000);
			if ((r = proto_flush(sb->conn, &sb->out)) < 0)
				return abox_error_set(err, -r, "%s", what);
		}
		struct proto_frame f;
		r = backend_recv(sb, &f, what, err);
		if (r == -EAGAIN)
			return r;
		if (r <= 0)
			return abox_error_set(err, r < 0 ? -r : EPIPE, "%s: init did not answer", what);
		for (unsigned i = 0; i < f.nfds; i++)
			close(f.fds[i]);
		if (f.id != id)
			continue;
		if (f.type == MSG_EV_OK) {
			if (on_ok)
				on_ok(&f, ud);
			return 0;
		}
		_cleanup_free_ char *msg = NULL;
		size_t off = 0;
		struct proto_field fl;
		while (proto_field_next(&f, &off, &fl) > 0)
			if (fl.tag == F_MESSAGE && !msg)
				(void)proto_field_strdup(&fl, &msg);
		return abox_error_setx(err, EPROTO, "%s: %s", what, msg ? msg : "init refused");
	}
}

/* ABOX_DEBUG: the steps the child and the parent stamped (spawn/marks.h). */
static void log_marks(abox_ctx *ctx, const char *id, const struct spawn_marks *m, uint64_t cloned)
{
	static const char *const names[MARK_MAX] = {
		[MARK_STARTED] = "clone3 (namespaces)", [MARK_PRIVATE] = "mounts made private",
		[MARK_LAYER] = "writable layer and overlays", [MARK_DEV] = "/dev", [MARK_PROC] = "/proc",
		[MARK_JOINED] = "network namespace and cgroups joined", [MARK_SYS] = "/sys",
		[MARK_PIVOT] = "pivot_root", [MARK_CONFINED] = "capabilities, seccomp",
		[MARK_P_NETNS] = "(parent) network namespace", [MARK_P_LO] = "(parent) lo up",
		[MARK_P_NET] = "(parent) its sysfs", [MARK_P_CGROUPS] = "(parent) v1 cgroups",
	};
	uint64_t prev = cloned;
	for (int k = 0; k < MARK_MAX; k++) {
		if (!m->t[k])
			continue;
		if (k == MARK_P_NETNS)
			prev = cloned; /* the parent's own line of steps */
		backend_log(ctx, ABOX_LOG_DEBUG, "create %s: %s%s done, %.1f us after clone (step %.1f us)", id,
			    k < MARK_P_NETNS ? "child: " : "", names[k], (double)(m->t[k] - cloned) / 1e3,
			    (double)(m->t[k] - prev) / 1e3);
		prev = m->t[k];
	}
}

/* Tells init it is recorded and must outlive us; waits for its answer, so
 * that our exit right after cannot take it along. */
static int detach(abox_sandbox *sb, abox_error *err)
{
	struct proto_msg m;
	proto_msg_init(&m, MSG_REQ_DETACH, ++sb->next_req);
	return backend_call(sb, &m, "detach", NULL, NULL, err);
}

int abox_sandbox_set_timeout(abox_sandbox *sb, uint32_t timeout_ms, abox_error *err)
{
	if (REMOTE_SB(sb))
		return sb->ctx->remote_ops->set_timeout(sb, timeout_ms, err);
	if (sb->flags & ABOX_SANDBOX_EPHEMERAL)
		return abox_error_setx(err, EINVAL, "set-timeout: sandbox %s is ephemeral", sb->id);
	_cleanup_close_ int lock = backend_lock(sb->ctx, sb->id, err);
	if (lock < 0)
		return lock;
	struct sb_state st = { 0 };
	int r = state_read(sb->ctx->state_dir, sb->id, &st, err);
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

/* base's entries, then over's, one per key (the later wins); never NULL
 * unless out of memory. */
static char **env_merge(char *const *base, const char *const *over)
{
	size_t nb = strv_length(base), no = strv_length((char *const *)over), k = 0;
	char **v = calloc(nb + no + 1, sizeof(char *));
	for (size_t i = 0; v && i < nb + no; i++) {
		const char *e = i < nb ? base[i] : over[i - nb];
		const char *eq = strchr(e, '=');
		size_t kl = eq ? (size_t)(eq - e) + 1 : strlen(e);
		bool later = false;
		for (size_t j = i + 1; j < nb + no && !later; j++)
			later = strncmp(j < nb ? base[j] : over[j - nb], e, kl) == 0;
		if (later)
			continue;
		if (!(v[k++] = strdup(e))) {
			strv_free(v);
			return NULL;
		}
	}
	return v;
}

int abox_sandbox_create(abox_ctx *ctx, const abox_sandbox_opts *opts, abox_sandbox **out, abox_error *err)
{
	if (REMOTE_CTX(ctx))
		return ctx->remote_ops->create(ctx, opts, out, err);
	return backend_create(ctx, opts, NULL, out, err);
}

int backend_create(abox_ctx *ctx, const abox_sandbox_opts *opts, const char *fixed_id, abox_sandbox **out,
		   abox_error *err)
{
	abox_sandbox_opts o = ABOX_SANDBOX_OPTS_INIT;
	int r;

	if (opts && versioned_copy_in(VERSIONED_SANDBOX_OPTS, &o, opts) < 0)
		return abox_error_setx(err, EINVAL, "abox_sandbox_opts: bad version %u", opts->version);
	if ((r = check_opts(&o, err)) < 0)
		return abox_error_prefix(err, "create");
	for (size_t i = 0; o.env && o.env[i]; i++)
		if (!strchr(o.env[i], '=') || o.env[i][0] == '=')
			return abox_error_setx(err, EINVAL, "create: environment entry '%s' is not K=V", o.env[i]);
	size_t nmeta = 0;
	while (o.metadata && o.metadata[nmeta])
		nmeta++;
	/* the record holds this many: cutting the rest would silently drop
	 * what a caller put last (aboxd puts its owner tag there) */
	if (nmeta > STATE_MAX_META)
		return abox_error_setx(err, E2BIG, "create: %zu metadata entries, at most %d", nmeta, STATE_MAX_META);
	if (o.snapshot) {
		/* a snapshot with processes: those come back instead of a fresh init */
		struct snap_record sr;
		if (snap_read(ctx->state_dir, o.snapshot, &sr, NULL) == 0) {
			bool mem = sr.memory;
			r = mem ? backend_create_restored(ctx, &o, &sr, fixed_id, out, err) : 0;
			snap_record_free(&sr);
			if (mem)
				return r;
		}
	}
	struct stack stk = { .lock = -1 };
	if (o.snapshot) {
		if ((r = stack_open(ctx, o.snapshot, &stk, err)) < 0) {
			stack_free(&stk);
			return abox_error_prefix(err, "create");
		}
		if (o.template_name && strcmp(o.template_name, stk.top.template_name) != 0) {
			r = abox_error_setx(err, EINVAL, "create: snapshot %s stands on template '%s', not '%s'",
					    stk.top.id, stk.top.template_name, o.template_name);
			stack_free(&stk);
			return r;
		}
		o.template_name = stk.top.template_name;
	}
	const char *tmpl_name = o.template_name ? o.template_name : "host";

	abox_sandbox *sb = calloc(1, sizeof(*sb));
	if (!sb) {
		stack_free(&stk);
		return abox_error_set(err, ENOMEM, "create");
	}
	sb->ctx = ctx;
	sb->conn = -1;
	sb->pidfd = -1;
	sb->template_lock = -1;
	sb->rundir_fd = -1;
	sb->flags = o.flags;
	proto_reader_init(&sb->rd, -1);

	struct template_info tmpl = { .lock_fd = -1 };
	struct policy_bpf bpf = { 0 };
	char **merged_env = NULL;
	int listen_fd = -1, memfd = -1, disk_fd = -1;

	if (fixed_id)
		safe_snprintf(sb->id, sizeof(sb->id), "%s", fixed_id);
	else if ((r = random_id(sb->id, 20)) < 0) {
		abox_error_set(err, -r, "create: random id");
		goto fail;
	}
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: start", sb->id);
	/* from a snapshot: the very template version its layers were made on
	 * (a re-import or rebuild since must not slide under them) */
	const char *pinned = o.snapshot ? stk.top.template_root : NULL;
	if ((r = pinned ? template_open_version(tmpl_name, pinned, &tmpl, err)
			: template_open(ctx->state_dir, tmpl_name, &tmpl, err)) < 0 ||
	    (o.snapshot && (r = stack_lowers(&stk, &tmpl, err)) < 0)) {
		abox_error_prefix(err, "create");
		goto fail;
	}

	/* the template's env first, the create's over it (the later wins) */
	if (!(merged_env = env_merge(tmpl.meta.env, o.env))) {
		r = abox_error_set(err, ENOMEM, "create");
		goto fail;
	}
	const char *policy = o.seccomp_policy ? o.seccomp_policy : ctx->default_policy;
	if (!policy) {
		r = abox_error_setx(err, ENOENT, "create: default seccomp policy not found (set ABOX_DEFAULT_POLICY)");
		goto fail;
	}
	char cache[4096];
	snprintf(cache, sizeof(cache), "%s/cache", ctx->state_dir);
	if (mkdir(cache, 0700) < 0 && errno != EEXIST) {
		r = abox_error_set(err, errno, "create: mkdir '%s'", cache);
		goto fail;
	}
	snprintf(cache, sizeof(cache), "%s/cache/seccomp", ctx->state_dir);
	struct policy_env penv = { .caps = caps_default(), .kernel = kernel_version() };
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: template ready", sb->id);
	if ((r = policy_load(policy, cache, &penv, &bpf, err)) < 0) {
		abox_error_prefix(err, "create: seccomp policy");
		goto fail;
	}

	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: seccomp policy ready (%u instructions)", sb->id, bpf.len);
	/* an ephemeral sandbox talks to its creator only: a socket pair */
	if ((r = store_rundir_create(ctx->runtime_dir, sb->id, (o.flags & ABOX_SANDBOX_EPHEMERAL) != 0, &sb->rundir,
				     &sb->rundir_fd, &listen_fd, &sb->conn, err)) < 0) {
		abox_error_prefix(err, "create");
		goto fail;
	}
	sb->rd.sock = sb->conn;
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: runtime folder ready", sb->id);

	if ((r = backend_layout(ctx, err)) < 0) {
		abox_error_prefix(err, "create");
		goto fail;
	}
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: cgroup layout known", sb->id);
	/* recorded before they exist: a crash from here on leaves a list
	 * that `abox gc` cleans up from */
	char planned[8192];
	if ((r = cgroup_planned_dirs(&ctx->cg, sb->id, planned, sizeof(planned), err)) < 0 ||
	    (r = (o.flags & ABOX_SANDBOX_EPHEMERAL) ? store_runrec_write(sb->rundir_fd, planned, err)
						    : store_rundir_record(sb->rundir_fd, STORE_CGROUPS_FILE, planned, err)) < 0 ||
	    (!(o.flags & ABOX_SANDBOX_EPHEMERAL) &&
	     (r = store_rundir_record(sb->rundir_fd, STORE_ROOT_FILE, ctx->state_dir, err)) < 0)) {
		abox_error_prefix(err, "create");
		goto fail;
	}
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: cgroup plan recorded", sb->id);
	struct cg_limits lim = {
		.memory_bytes = o.memory_bytes ? o.memory_bytes : DEFAULT_MEMORY,
		.pids = o.pids ? o.pids : DEFAULT_PIDS,
		.cpu_millis = o.cpu_millis ? o.cpu_millis : DEFAULT_CPU,
	};
	sb->memory_limit = lim.memory_bytes;
	sb->created_wall_ms = clock_wall_ms();
	if ((r = cgroup_create_begin(&ctx->cg, sb->id, &lim, &sb->cg, err)) < 0) {
		abox_error_prefix(err, "create");
		goto fail;
	}

	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: cgroups ready", sb->id);
	if ((memfd = spawn_init_memfd(ctx->init_path, err)) < 0) {
		r = memfd;
		abox_error_prefix(err, "create");
		goto fail;
	}

	uint64_t disk_bytes = o.disk_bytes ? o.disk_bytes : DEFAULT_DISK;
	bool on_disk = backend_layer_on_disk(o.flags);
	if (on_disk && (disk_fd = backend_disk_new(ctx, disk_bytes, err)) < 0) {
		r = disk_fd;
		if (!(o.flags & ABOX_SANDBOX_LAYER_DISK) && disk_unsupported(r)) {
			/* a host without disks (`abox doctor` says so): the
			 * layer in memory, as before there were disks */
			backend_log(ctx, ABOX_LOG_WARNING, "create %s: no disk (%s), the writable layer is a tmpfs",
				    sb->id, err ? err->msg : "");
			if (err)
				*err = (abox_error)ABOX_ERROR_INIT;
			on_disk = false;
			disk_fd = -1;
		} else {
			abox_error_prefix(err, "create");
			goto fail;
		}
	}
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: writable layer %s", sb->id, on_disk ? "on a disk" : "in memory");

	char hosts[256], timeout_arg[64], memory_arg[48];
	snprintf(hosts, sizeof(hosts), "127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n", sb->id);
	char *init_argv[6] = { (char *)"abox-init", NULL, NULL, NULL, NULL, NULL };
	int ai = 1;
	/* init keeps its own writes into a layer in memory within this */
	snprintf(memory_arg, sizeof(memory_arg), "memory=%llu", (unsigned long long)lim.memory_bytes);
	init_argv[ai++] = memory_arg;
	if (o.flags & ABOX_SANDBOX_EPHEMERAL)
		init_argv[ai++] = (char *)"ephemeral";
	/* commands forked, never started in init's memory (see
	 * src/init/child.c): for hosts and debugging that want the plain way */
	const char *how = getenv("ABOX_INIT_SPAWN");
	if (how && strcmp(how, "fork") == 0)
		init_argv[ai++] = (char *)"spawn=fork";
	/* an auto-pause deadline is abox_reap's to act on, not init's */
	if (o.timeout_ms && !(o.flags & ABOX_SANDBOX_AUTO_PAUSE)) {
		snprintf(timeout_arg, sizeof(timeout_arg), "timeout_ms=%u", o.timeout_ms);
		init_argv[ai++] = timeout_arg;
		sb->deadline_ms = clock_mono_ms() + o.timeout_ms; /* not with auto-pause: abox_reap's */
	}

	struct spawn_config cfg = {
		.rootfs = {
			/* an ephemeral sandbox has a record file, not a folder:
			 * its layer is mounted over the runtime folder itself,
			 * in the child's own mount namespace only */
			.scratch = (o.flags & ABOX_SANDBOX_EPHEMERAL) ? ctx->runtime_dir : sb->rundir,
			.lower = o.snapshot ? stk.root_lower : tmpl.root,
			.ntrees = tmpl.ntrees,
			.disk_bytes = disk_bytes,
			.on_disk = on_disk,
			.disk_fd = disk_fd,
			.hostname = sb->id,
			.hosts = hosts,
			.user_uid = tmpl.user_uid,
			.user_gid = tmpl.user_gid,
			.proc_masks = ctx->proc_masks,
			.init_in_dev = !(o.flags & ABOX_SANDBOX_EPHEMERAL),
		},
		.listen_fd = listen_fd,
		.init_memfd = memfd,
		.init_argv = init_argv,
		.bpf = &bpf,
		.caps_keep = caps_default(),
		.last_cap = ctx->last_cap,
		.cg = sb->cg,
		.cg_layout = &ctx->cg,
	};
	for (unsigned i = 0; i < tmpl.ntrees; i++) {
		cfg.rootfs.trees[i] = tmpl.trees[i];
		cfg.rootfs.tree_lowers[i] = stk.tree_lowers[i];
	}

	struct spawn_result res;
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: cloning", sb->id);
	/* the child's own steps, timed on a page it shares with us */
	struct spawn_marks *marks = NULL;
	if (ctx->log) {
		marks = mmap(NULL, sizeof(*marks), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (marks == MAP_FAILED)
			marks = NULL;
	}
	cfg.rootfs.marks = marks;
	uint64_t cloned = marks ? clock_mono_ns() : 0;
	r = spawn_sandbox(&cfg, &res, err);
	if (marks) {
		log_marks(ctx, sb->id, marks, cloned);
		munmap(marks, sizeof(*marks));
	}
	/* attached in the child's namespace, or never (then this close
	 * releases the disk) */
	if (disk_fd >= 0)
		close(disk_fd);
	disk_fd = -1;
	if (r < 0) {
		abox_error_prefix(err, "create");
		goto fail;
	}
	sb->pid = res.pid;
	sb->oom_known = true; /* a fresh cgroup: no kills yet */
	sb->pidfd = res.pidfd;
	/* never block on init: requests wait in sb->out, see backend_send */
	fcntl(sb->conn, F_SETFL, O_NONBLOCK);
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: init running as pid %d", sb->id, (int)sb->pid);
	if (!(o.flags & ABOX_SANDBOX_EPHEMERAL)) {
		struct sb_state st = {
			.pid = sb->pid,
			.created_ms = clock_wall_ms(),
			.deadline_ms = o.timeout_ms ? clock_wall_ms() + o.timeout_ms : 0,
			.template_name = (char *)tmpl_name,
			.template_root = tmpl.root,
			.snapshots = stk.ids,
			.cgroups = planned,
			.memory_bytes = lim.memory_bytes,
			.disk_bytes = cfg.rootfs.disk_bytes,
			.pids = lim.pids,
			.cpu_millis = lim.cpu_millis,
			.env = merged_env,
			.user = tmpl.meta.user,
			.workdir = tmpl.meta.workdir,
			.auto_pause = (o.flags & ABOX_SANDBOX_AUTO_PAUSE) != 0,
			.tmpfs_layer = !on_disk,
			.auto_no_memory = (o.flags & ABOX_SANDBOX_AUTO_PAUSE_NO_MEMORY) != 0,
		};
		/* forks of this sandbox must get the same policy, not the
		 * default: record where it is */
		_cleanup_free_ char *policy_abs = o.seccomp_policy ? realpath(o.seccomp_policy, NULL) : NULL;
		/* never NULL for a custom policy: that would mean "default" */
		st.seccomp_policy = policy_abs ? policy_abs : (char *)o.seccomp_policy;
		memcpy(st.id, sb->id, sizeof(st.id));
		r = proc_start_time(sb->pid, &st.pid_start);
		for (size_t i = 0; r >= 0 && o.metadata && o.metadata[i] && st.nmeta < STATE_MAX_META; i++) {
			const char *eq = strchr(o.metadata[i], '=');
			if (!eq || eq == o.metadata[i]) {
				r = abox_error_setx(err, EINVAL, "create: metadata '%s' is not key=value", o.metadata[i]);
				break;
			}
			st.meta_keys[st.nmeta] = strndup(o.metadata[i], (size_t)(eq - o.metadata[i]));
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
			(void)abox_sandbox_kill(sb, NULL);
			(void)state_remove(ctx->state_dir, sb->id);
			goto fail_killed;
		}
	}
	close(listen_fd);
	close(memfd);
	sb->template_lock = TAKE_FD(tmpl.lock_fd);
	sb->env = TAKE_PTR(merged_env);
	sb->def_user = tmpl.meta.user ? strdup(tmpl.meta.user) : NULL;
	sb->def_cwd = tmpl.meta.workdir ? strdup(tmpl.meta.workdir) : NULL;
	/* the template's start command, and its readiness: a sandbox that
	 * never gets ready is not handed out */
	if ((r = backend_template_start(sb, &tmpl.meta, err)) < 0) {
		abox_error_prefix(err, "create %s", sb->id);
		template_info_free(&tmpl);
		policy_bpf_free(&bpf);
		stack_free(&stk);
		(void)abox_sandbox_kill(sb, NULL);
		abox_sandbox_free(sb);
		return r;
	}
	template_info_free(&tmpl);
	policy_bpf_free(&bpf);
	stack_free(&stk);
	*out = sb;
	return 0;

fail_killed:
fail:
	strv_free(merged_env);
	if (listen_fd >= 0)
		close(listen_fd);
	if (memfd >= 0)
		close(memfd);
	if (disk_fd >= 0)
		close(disk_fd);
	template_info_free(&tmpl);
	policy_bpf_free(&bpf);
	stack_free(&stk);
	if (sb->cg)
		(void)cgroup_destroy(sb->cg, NULL);
	sb->cg = NULL;
	if (sb->rundir)
		(void)store_rundir_remove(sb->rundir, NULL);
	sandbox_release(sb);
	free(sb);
	return r < 0 ? r : -EIO;
}

const char *abox_sandbox_id(const abox_sandbox *sb)
{
	return sb->id;
}

uint64_t abox_sandbox_memory_limit(const abox_sandbox *sb)
{
	return sb->memory_limit;
}

int abox_sandbox_oom_kills(abox_sandbox *sb, uint64_t *out, abox_error *err)
{
	if (REMOTE_SB(sb))
		return backend_remote_unsupported("oom kills", err);
	*out = 0;
	/* a handle found by id opens the sandbox's cgroups on first use, so
	 * that `abox exec` reports OOM kills as `abox run` does */
	if (!sb->cg && sb->attached) {
		int r;
		if ((r = backend_layout(sb->ctx, err)) < 0 ||
		    (r = cgroup_open_existing(&sb->ctx->cg, sb->id, &sb->cg, err)) < 0)
			return abox_error_prefix(err, "oom count");
	}
	if (!sb->cg)
		return 0;
	return cgroup_oom_kills(sb->cg, out, err);
}

int abox_sandbox_kill(abox_sandbox *sb, abox_error *err)
{
	if (REMOTE_SB(sb))
		return sb->ctx->remote_ops->kill(sb, err);
	return backend_kill(sb, false, err);
}

/* Removes the cgroup folders a long-lived sandbox recorded, listed in its
 * runtime folder or else in its state record. */
static int remove_recorded_cgroups(abox_sandbox *sb, abox_error *err)
{
	const struct cg_layout *l = sb->ctx->cg_ready ? &sb->ctx->cg : NULL;
	char p[4200];
	safe_snprintf(p, sizeof(p), "%s/%s/%s", sb->ctx->runtime_dir, sb->id, STORE_CGROUPS_FILE);
	_cleanup_free_ char *rec = NULL;
	int r = 0;
	if (read_file_at(AT_FDCWD, p, 65536, &rec, NULL) == 0)
		return store_cgroups_remove(rec, sb->id, l, err);
	/* the runtime folder is gone (a reboot, a half-done kill): the
	 * state record keeps the same list */
	struct sb_state st = { 0 };
	if (state_read(sb->ctx->state_dir, sb->id, &st, NULL) == 0 && st.cgroups)
		r = store_cgroups_remove(st.cgroups, sb->id, l, err);
	sb_state_free(&st);
	return r;
}

/* A disk about to go is not written back: its filesystem is shut down
 * first, so the unmount when init's namespace ends takes no writeback of
 * what the sandbox wrote. Reached through init's fd on its layer; the
 * pidfd check after the open proves the pid still named our init. */
static void discard_layer(abox_sandbox *sb)
{
	int fd = -1;
	if (sb->has_layer_fd) {
		fd = fcntl(sb->layer_fd, F_DUPFD_CLOEXEC, 3);
	} else if (sb->pidfd >= 0) {
		char p[64];
		safe_snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)sb->pid, INIT_LAYER_FD);
		fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0 && syscall(SYS_pidfd_send_signal, sb->pidfd, 0, NULL, 0) < 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0)
		return;
	(void)disk_discard(sb->ctx->state_dir, fd);
	close(fd);
}

int backend_kill(abox_sandbox *sb, bool keep_record, abox_error *err)
{
	int r = 0;
	if (!sb)
		return 0;
	bool long_lived = !(sb->flags & ABOX_SANDBOX_EPHEMERAL);
	_cleanup_close_ int lock = -EBADF;
	if (long_lived) {
		/* one killer at a time; a second one finds it gone */
		lock = state_lock(sb->ctx->state_dir, sb->id, NULL);
		if (!sb->cg && backend_layout(sb->ctx, NULL) >= 0)
			(void)cgroup_open_existing(&sb->ctx->cg, sb->id, &sb->cg, NULL);
	}
	if (!sb->dead && sb->pid > 0) {
		discard_layer(sb);
		/* cgroup.kill (or the v1 freeze-and-kill walk) reaches every
		 * task, including ones a frozen tree holds back; killing init
		 * alone would also end the pid namespace */
		if (sb->cg && long_lived)
			(void)cgroup_kill(sb->cg, NULL);
		if (sb->pidfd >= 0)
			(void)syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
		else if (!sb->attached)
			(void)kill(sb->pid, SIGKILL);
		reap_blocking(sb);
	}
	backend_log(sb->ctx, ABOX_LOG_DEBUG, "kill %s: init gone", sb->id);
	if (sb->cg) {
		r = cgroup_destroy(sb->cg, err);
		sb->cg = NULL;
	}
	/* the folders recorded at create, whether or not the handle found
	 * them (no layout: an unreadable mount table; or one seen from
	 * another cgroup than the creator's) */
	if (r >= 0 && long_lived)
		r = remove_recorded_cgroups(sb, err);
	if (r < 0) {
		/* a cgroup stays: keep the runtime folder and record, so
		 * that `abox gc` finds them and tries again */
		sandbox_release(sb);
		return r;
	}
	if (!sb->rundir && long_lived) {
		char rd[4096];
		safe_snprintf(rd, sizeof(rd), "%s/%s", sb->ctx->runtime_dir, sb->id);
		sb->rundir = strdup(rd);
	}
	if (sb->rundir) {
		int k = store_rundir_remove(sb->rundir, r < 0 ? NULL : err);
		if (r >= 0)
			r = k;
	}
	if (long_lived && !keep_record)
		(void)state_remove(sb->ctx->state_dir, sb->id);
	sandbox_release(sb);
	backend_log(sb->ctx, ABOX_LOG_DEBUG, "kill %s: cleaned up", sb->id);
	return r;
}

void abox_sandbox_free(abox_sandbox *sb)
{
	if (!sb)
		return;
	if (REMOTE_SB(sb)) {
		sb->ctx->remote_ops->release(sb);
		free(sb);
		return;
	}
	/* an ephemeral sandbox ends with its handle; a long-lived one runs on */
	if (sb->flags & ABOX_SANDBOX_EPHEMERAL)
		(void)abox_sandbox_kill(sb, NULL);
	else
		sandbox_release(sb);
	if (sb->cg)
		cgroup_sandbox_free(sb->cg);
	free(sb);
}

int abox_gc(abox_ctx *ctx, unsigned *removed, abox_error *err)
{
	if (REMOTE_CTX(ctx))
		return removed ? (*removed = 0, 0) : 0; /* the daemon collects its own */
	(void)abox_reap(ctx, NULL, NULL);
	/* without a layout gc still removes every recorded cgroup (their
	 * filesystem vouches for them); only the search for unrecorded ones
	 * needs it */
	abox_error lerr = ABOX_ERROR_INIT;
	bool have_layout = backend_layout(ctx, &lerr) >= 0;
	if (!have_layout)
		backend_log(ctx, ABOX_LOG_DEBUG, "gc without a cgroup layout: %s", lerr.msg);
	template_sweep(ctx->state_dir, NULL);
	snap_sweep(ctx->state_dir);
	return store_gc(ctx->runtime_dir, ctx->state_dir, have_layout ? &ctx->cg : NULL, removed, err);
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

int abox_sandbox_metrics(abox_sandbox *sb, abox_metrics *out, abox_error *err)
{
	if (REMOTE_SB(sb))
		return sb->ctx->remote_ops->metrics(sb, out, err);
	if (!out || out->version < 1)
		return abox_error_setx(err, EINVAL, "metrics: abox_metrics needs its version set");
	int r;
	if (!sb->cg) {
		if ((r = backend_layout(sb->ctx, err)) < 0 ||
		    (r = cgroup_open_existing(&sb->ctx->cg, sb->id, &sb->cg, err)) < 0)
			return abox_error_prefix(err, "metrics");
	}
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
	m.mem_used = cs.mem_current != UINT64_MAX && cs.mem_current > cs.mem_file ? cs.mem_current - cs.mem_file
										     : cs.mem_current;
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

#define GC_INTERVAL_S 10

int abox_gc_maybe(abox_ctx *ctx, unsigned *removed, abox_error *err)
{
	if (REMOTE_CTX(ctx))
		return removed ? (*removed = 0, 0) : 0;
	char stamp[4200];
	safe_snprintf(stamp, sizeof(stamp), "%s/.gc-stamp", ctx->runtime_dir);
	struct stat st;
	int64_t now_s = clock_wall_ms() / 1000;
	if (removed)
		*removed = 0;
	if (stat(stamp, &st) == 0 && now_s - st.st_mtime < GC_INTERVAL_S && st.st_mtime <= now_s)
		return 0;
	int fd = open(stamp, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		(void)futimens(fd, NULL);
		close(fd);
	}
	return abox_gc(ctx, removed, err);
}
