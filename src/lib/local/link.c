/* local/link.c — the link to a sandbox's init: send, receive, the answer
 * to a request and a control call, reaping it, the cgroup layout and a
 * handle's cgroups, and what a handle holds.
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

#include "local/local.h"
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

int local_remove_cgroup_parent(abox_ctx *ctx, abox_error *err)
{
	int r = backend_layout(ctx, err);
	if (r < 0)
		return r;
	cgroup_layout_remove_self(&ctx->cg);
	cgroup_cpuset_remove_parent(ctx->cgroup_parent);
	return 0;
}

int backend_layout(abox_ctx *ctx, abox_error *err)
{
	if (ctx->cg_ready)
		return 0;
	int r = ctx->cgroup_parent ? cgroup_layout_detect_at(ctx->cgroup_parent, &ctx->cg, err)
				   : cgroup_layout_detect(&ctx->cg, err);
	if (r < 0)
		return r;
	ctx->proc_masks = rootfs_proc_masks_present();
	ctx->cg_ready = true;
	return 0;
}

int backend_cgroups(abox_sandbox *sb, abox_error *err)
{
	if (sb->cg)
		return 0;
	int r = backend_layout(sb->ctx, err);
	if (r < 0)
		return r;
	r = cgroup_open_existing(&sb->ctx->cg, sb->id, &sb->cg, err);
	return r < 0 ? r : 0;
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

void backend_release(abox_sandbox *sb)
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
	free(sb->net_policy);
	sb->net_policy = NULL;
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

int backend_can_ask(const abox_sandbox *sb, const char *what, abox_error *err)
{
	int r = backend_not_paused(sb, what, err);
	if (r < 0)
		return r;
	if (sb->conn < 0)
		return abox_error_setx(err, ESRCH, "%s: sandbox %s is not reachable", what, sb->id);
	if (sb->active)
		return abox_error_setx(err, EBUSY, "%s: the handle is running a process", what);
	return 0;
}

int backend_flush(abox_sandbox *sb, const char *what, abox_error *err)
{
	while (proto_outq_len(&sb->out)) {
		struct pollfd p = { .fd = sb->conn, .events = POLLOUT };
		poll(&p, 1, 1000);
		int r = proto_flush(sb->conn, &sb->out);
		if (r < 0)
			return abox_error_set(err, -r, "%s: send to init", what);
	}
	return 0;
}

int backend_answer(abox_sandbox *sb, uint32_t id, const char *what,
		   int (*on_frame)(const struct proto_frame *f, const char *what, void *ud, abox_error *err),
		   void (*on_ok)(const struct proto_frame *f, void *ud), void *ud, abox_error *err)
{
	int r = backend_flush(sb, what, err);
	if (r < 0)
		return r;
	for (;;) {
		struct proto_frame f;
		r = backend_recv(sb, &f, what, err);
		if (r == -EAGAIN)
			return r;
		if (r <= 0)
			return abox_error_set(err, r < 0 ? -r : EPIPE, "%s: init did not answer", what);
		for (unsigned i = 0; i < f.nfds; i++)
			close(f.fds[i]);
		if (f.id != id)
			continue; /* the late answer to a request given up on */
		if (f.type == MSG_EV_OK) {
			if (on_ok)
				on_ok(&f, ud);
			return 0;
		}
		if ((r = on_frame(&f, what, ud, err)) < 0)
			return r;
	}
}

/* A control request has no frames before its EV_OK: any other is init's
 * refusal, with its message. */
static int refused(const struct proto_frame *f, const char *what, void *ud, abox_error *err)
{
	_cleanup_free_ char *msg = NULL;
	size_t off = 0;
	struct proto_field fl;
	while (proto_field_next(f, &off, &fl) > 0)
		if (fl.tag == F_MESSAGE && !msg)
			(void)proto_field_strdup(&fl, &msg);
	return abox_error_setx(err, EPROTO, "%s: %s", what, msg ? msg : "init refused");
}

int backend_call(abox_sandbox *sb, struct proto_msg *m, const char *what,
		 void (*on_ok)(const struct proto_frame *f, void *ud), void *ud, abox_error *err)
{
	int r = backend_can_ask(sb, what, err);
	if (r < 0) {
		proto_msg_free(m);
		return r;
	}
	uint32_t id = m->id;
	r = backend_send_fds(sb, m, what, err);
	if (r < 0)
		return r;
	return backend_answer(sb, id, what, refused, on_ok, ud, err);
}

int backend_send_fds(abox_sandbox *sb, struct proto_msg *m, const char *what, abox_error *err)
{
	if (!m->nfds) {
		int r = backend_send(sb, m);
		return r < 0 ? abox_error_set(err, -r, "%s", what) : 0;
	}
	/* fds ride on a byte of their own, so the frame goes out whole, after
	 * what is queued */
	int r = backend_flush(sb, what, err);
	if (r < 0) {
		proto_msg_free(m);
		return r;
	}
	r = proto_send(sb->conn, m);
	proto_msg_free(m);
	return r < 0 ? abox_error_set(err, -r, "%s: send", what) : 0;
}

void local_link_lost(abox_sandbox *sb)
{
	backend_reap_init(sb, true);
}
