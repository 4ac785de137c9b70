/* local/kill.c — a sandbox ended on this machine: init and its tree
 * killed, cgroups, layers, disk and record removed; and what a handle
 * releases when it is freed.
 * Runs in the CLI/daemon. */
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "store/uidpool.h"
#include "local/local.h"
#include "disk/disk.h"
#include "layer/layer.h"
#include "layer/snapshot.h"
#include "proto/messages.h"
#include "store/state.h"
#include "store/store.h"

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
		backend_reap_init(sb, true);
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
		backend_release(sb);
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
	/* its network (elements, flows, slot): not for a cold pause, whose
	 * resume takes the same slot again */
	if (!keep_record) {
		int k = local_net_teardown(sb, r < 0 ? NULL : err);
		if (r >= 0)
			r = k;
	}
	if (long_lived && !keep_record)
		(void)state_remove(sb->ctx->state_dir, sb->id);
	/* its host ids: nothing on disk carries them (its layers, a cold
	 * pause's too, are kept with sandbox-relative owners), so they are
	 * free once its processes are gone; a resume takes a range anew */
	if (sb->id_base)
		uidpool_give(sb->ctx->runtime_dir, sb->id_base, sb->id);
	backend_release(sb);
	backend_log(sb->ctx, ABOX_LOG_DEBUG, "kill %s: cleaned up", sb->id);
	return r;
}

int local_kill(abox_sandbox *sb, abox_error *err)
{
	return backend_kill(sb, false, err);
}

void local_release(abox_sandbox *sb)
{
	/* an ephemeral sandbox ends with its handle; a long-lived one runs on */
	if (sb->flags & ABOX_SANDBOX_EPHEMERAL)
		(void)backend_kill(sb, false, NULL);
	else
		backend_release(sb);
	if (sb->cg)
		cgroup_sandbox_free(sb->cg);
	sb->cg = NULL;
}


void local_free(abox_sandbox *sb)
{
	if (!sb)
		return;
	local_release(sb);
	free(sb);
}
