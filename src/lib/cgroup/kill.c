/* cgroup/kill.c — SIGKILLs every task of a sandbox (v2 cgroup.kill, else
 * freeze, signal each listed pid, thaw, until empty) and removes its
 * directories once they are empty.
 *
 * Does not undo a half-done create (create.c does, with nothing inside).
 * Runs in the CLI/daemon; never signals the caller. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/clock.h"
#include "cgroup/cgroup_internal.h"

#define RESWEEP_NS (50 * 1000000ull)
#define PROCS_MAX (16u << 20)

/* SIGKILLs every task listed in the selected directories. Returns how many
 * were listed. */
static int signal_tasks(struct cg_sandbox *cg, const bool *only, abox_error *err)
{
	int found = 0;
	pid_t self = getpid();

	for (size_t i = 0; i < cg->n; i++) {
		const struct cg_dir *d = &cg->dir[i];
		_cleanup_free_ char *procs = NULL;
		if (d->fake || (only && !only[i]))
			continue;
		int r = read_file_at(d->fd, "cgroup.procs", PROCS_MAX, &procs, NULL);
		if (r == -ENOENT)
			continue; /* already removed: nothing inside */
		if (r < 0)
			return abox_error_set(err, -r, "cgroup: read '%s/cgroup.procs'", d->path);
		for (char *p = procs, *end; *p; p = end) {
			long pid = strtol(p, &end, 10);
			if (end == p || pid <= 0)
				return abox_error_setx(err, EPROTO, "cgroup: bad pid in '%s/cgroup.procs'",
						       d->path);
			while (*end == '\n')
				end++;
			if (pid == self)
				return abox_error_setx(err, EDEADLK,
						       "cgroup: the caller itself is in '%s'", d->path);
			if (kill((pid_t)pid, SIGKILL) < 0 && errno != ESRCH)
				return abox_error_set(err, errno, "cgroup: kill %ld in '%s'", pid,
						      d->path);
			found++;
		}
	}
	return found;
}

/* The kill procedure without cgroup.kill: freeze, so nothing forks and no
 * listed pid can exit and be reused by an unrelated process before we
 * signal it; SIGKILL every listed task; thaw, because tasks frozen by the
 * v1 freezer act on SIGKILL only once thawed; repeat until empty. */
static int sweep(struct cg_sandbox *cg, const bool *only, uint64_t deadline, abox_error *err)
{
	uint64_t delay = SPIN_MIN_NS;
	int fz = cg->ctl[CG_FREEZER];
	const struct cg_dir *fdir = fz >= 0 && !cg->dir[fz].fake ? &cg->dir[fz] : NULL;

	for (;;) {
		if (fdir) {
			/* best effort: a task in D state can hold v1 in
			 * FREEZING; then kill without the guarantee */
			uint64_t t = clock_mono_ns() + RESWEEP_NS;
			(void)cgroup_set_frozen(fdir, true, t < deadline ? t : deadline, NULL);
		}
		int found = signal_tasks(cg, only, err);
		if (fdir)
			(void)cgroup_set_frozen(fdir, false, deadline, NULL);
		if (found <= 0)
			return found;
		if (clock_mono_ns() >= deadline)
			return abox_error_setx(err, ETIMEDOUT, "cgroup: tasks of '%s' survived SIGKILL",
					       cg->dir[0].path);
		cgroup_backoff(&delay);
	}
}

int cgroup_kill(struct cg_sandbox *cg, abox_error *err)
{
	if (!cg)
		return abox_error_setx(err, EINVAL, "cgroup: kill: invalid argument");
	if (cg->v2_kill) {
		/* race-free: the kernel signals every task and fails forks meanwhile */
		int r = cgroup_knob_write(&cg->dir[cg->v2], "cgroup.kill", "1", false, err);
		if (r >= 0) {
			int fz = cg->ctl[CG_FREEZER];
			if (fz >= 0 && cg->dir[fz].version == CG_V1)
				r = cgroup_set_frozen(&cg->dir[fz], false, clock_mono_ns() + WAIT_NS, err);
			return r;
		}
	}
	int r = sweep(cg, NULL, clock_mono_ns() + WAIT_NS, err);
	return r < 0 ? r : 0;
}

int cgroup_destroy(struct cg_sandbox *cg, abox_error *err)
{
	bool left[DIRS_MAX];
	uint64_t delay = SPIN_MIN_NS, last_sweep, deadline;
	const char *busy;
	int r = 0;

	if (!cg)
		return 0;
	/* Errors of the kill show up below as directories that stay busy. */
	(void)cgroup_kill(cg, NULL);
	last_sweep = clock_mono_ns();
	deadline = last_sweep + WAIT_NS;
	for (size_t i = 0; i < DIRS_MAX; i++)
		left[i] = i < cg->n;
	for (;; cgroup_backoff(&delay)) {
		busy = NULL;
		/* backwards: nested directories come after their parents */
		for (size_t i = cg->n; i-- > 0;) {
			if (!left[i])
				continue;
			if (cg->dir[i].fake)
				cgroup_clear_fake_dir(&cg->dir[i]);
			int e = rmdir(cg->dir[i].path) < 0 ? errno : 0;
			if (e == EBUSY) {
				busy = busy ? busy : cg->dir[i].path;
				continue;
			}
			left[i] = false;
			if (e && e != ENOENT && r == 0)
				r = abox_error_set(err, e, "cgroup: rmdir '%s'", cg->dir[i].path);
		}
		if (!busy)
			break;
		uint64_t now = clock_mono_ns();
		if (now >= deadline) {
			if (r == 0)
				r = abox_error_setx(err, EBUSY,
						    "cgroup: '%s' still has tasks 2 s after SIGKILL", busy);
			break;
		}
		/* Killed tasks leave within a millisecond or so. Anything still
		 * there escaped cgroup.kill (attached to v1 only): sweep it. */
		if (now - last_sweep >= RESWEEP_NS) {
			(void)sweep(cg, left, deadline, NULL);
			last_sweep = clock_mono_ns();
		}
	}
	cgroup_sandbox_free(cg);
	return r;
}
