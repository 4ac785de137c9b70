/* cgroup/freeze.c — freezes and thaws a sandbox through v2 cgroup.freeze
 * or the v1 freezer, and returns once the kernel reports the new state.
 *
 * Does not kill (kill.c uses it to hold tasks still while it signals
 * them). Runs in the CLI/daemon. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "cgroup/cgroup_internal.h"

static bool state_is(const struct cg_dir *d, const char *buf, bool frozen)
{
	uint64_t v;
	if (d->version == CG_V2)
		return cgroup_kv_get(buf, "frozen", &v) == 0 && v == (frozen ? 1 : 0);
	/* v1 reads FREEZING until every task has stopped */
	return strncmp(buf, frozen ? "FROZEN" : "THAWED", 6) == 0;
}

/* Writes the new state and re-reads the state file until the kernel reports
 * it. We do not wait on cgroup.events notifications: they are rate-limited
 * to one per 10 ms, far slower than an idle freeze (a few µs on v2). */
int cgroup_set_frozen(const struct cg_dir *d, bool frozen, uint64_t deadline, abox_error *err)
{
	bool v2 = d->version == CG_V2;
	const char *knob = v2 ? "cgroup.freeze" : "freezer.state";
	const char *state = v2 ? "cgroup.events" : "freezer.state";
	const char *val = v2 ? (frozen ? "1" : "0") : (frozen ? "FROZEN" : "THAWED");
	uint64_t delay = SPIN_MIN_NS;
	char buf[256];

	int r = cgroup_knob_write(d, knob, val, false, err);
	if (r < 0)
		return r;
	_cleanup_close_ int fd = openat(d->fd, state, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return abox_error_set(err, errno, "cgroup: open '%s/%s'", d->path, state);
	for (;;) {
		/* pread at offset 0 makes kernfs render the file afresh */
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return abox_error_set(err, errno, "cgroup: read '%s/%s'", d->path, state);
		}
		buf[n] = '\0';
		if (state_is(d, buf, frozen))
			return 0;
		if (clock_mono_ns() >= deadline)
			break;
		cgroup_backoff(&delay);
		/* v1 can miss tasks forked while FREEZING; writing FROZEN again
		 * makes the kernel retry them (runc does the same) */
		if (!v2 && frozen && delay == SPIN_MAX_NS) {
			r = cgroup_knob_write(d, knob, val, false, err);
			if (r < 0)
				return r;
		}
	}
	/* do not leave a half-frozen sandbox behind */
	if (frozen)
		(void)cgroup_knob_write(d, knob, v2 ? "0" : "THAWED", false, NULL);
	return abox_error_setx(err, ETIMEDOUT, "cgroup: '%s' did not become %s in time", d->path,
			       frozen ? "frozen" : "thawed");
}

const char *cgroup_freezer_dir(const struct cg_sandbox *cg)
{
	return cg && cg->ctl[CG_FREEZER] >= 0 ? cg->dir[cg->ctl[CG_FREEZER]].path : NULL;
}

int cgroup_freeze(struct cg_sandbox *cg, bool frozen, abox_error *err)
{
	if (!cg)
		return abox_error_setx(err, EINVAL, "cgroup: freeze: invalid argument");
	if (cg->ctl[CG_FREEZER] < 0)
		return abox_error_setx(err, EOPNOTSUPP,
				       "cgroup: no freezer (no v2 cgroup.freeze, no v1 freezer "
				       "hierarchy)");
	return cgroup_set_frozen(&cg->dir[cg->ctl[CG_FREEZER]], frozen, clock_mono_ns() + WAIT_NS, err);
}
