/* cgroup/attach.c — putting processes into one sandbox's cgroups: init
 * by pid, a child of its own accord (v1 "tasks" fds, the v2 directory for
 * clone3), and the commands' and init's own cgroups below the sandbox's.
 *
 * Does not make the directories (create.c). Runs in the CLI/daemon; the
 * fds it opens are written by the sandbox child and by init. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "cgroup/cgroup_internal.h"

int cgroup_v2_fd(const struct cg_sandbox *cg)
{
	return cg && cg->v2 >= 0 ? cg->dir[cg->v2].fd : -1;
}

int cgroup_cmds_fd(const struct cg_sandbox *cg, abox_error *err)
{
	if (!cg || cg->cmds < 0)
		return -ENOENT;
	const struct cg_dir *d = &cg->dir[cg->cmds];
	int fd = d->version == CG_V1 ? openat(d->fd, "tasks", O_WRONLY | O_CLOEXEC | O_NOCTTY)
				     : openat(d->fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return abox_error_set(err, errno, "cgroup: open '%s'", d->path);
	return fd;
}

int cgroup_init_leaf_fd(const struct cg_sandbox *cg, abox_error *err)
{
	if (!cg || cg->init_leaf < 0)
		return -ENOENT;
	const struct cg_dir *d = &cg->dir[cg->init_leaf];
	int fd = openat(d->fd, "cgroup.procs", O_WRONLY | O_CLOEXEC | O_NOCTTY | (d->fake ? O_CREAT : 0), 0644);
	if (fd < 0)
		return abox_error_set(err, errno, "cgroup: open '%s/cgroup.procs'", d->path);
	return fd;
}

int cgroup_attach(struct cg_sandbox *cg, pid_t pid, bool include_v2, abox_error *err)
{
	char v[24];

	if (!cg || pid <= 0)
		return abox_error_setx(err, EINVAL, "cgroup: attach: invalid argument");
	snprintf(v, sizeof(v), "%d", (int)pid);
	for (size_t i = 0; i < cg->n; i++) {
		if (cg->dir[i].version == CG_V2 && !include_v2)
			continue;
		/* init's place: the sandbox's own directories, or its v2 leaf */
		if ((int)i == cg->cmds || (int)i == cg->init_leaf)
			continue;
		const struct cg_dir *d = (int)i == cg->v2 && cg->init_leaf >= 0 ? &cg->dir[cg->init_leaf] : &cg->dir[i];
		int r = cgroup_knob_write(d, "cgroup.procs", v, false, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int cgroup_attach_v2(struct cg_sandbox *cg, pid_t pid, abox_error *err)
{
	char v[24];
	if (!cg || cg->v2 < 0)
		return 0;
	snprintf(v, sizeof(v), "%d", (int)pid);
	return cgroup_knob_write(&cg->dir[cg->v2], "cgroup.procs", v, false, err);
}

int cgroup_open_self_attach(struct cg_sandbox *cg, int *fds, size_t max, size_t *n, abox_error *err)
{
	size_t k = 0;
	for (size_t i = 0; i < cg->n; i++) {
		if (cg->dir[i].version != CG_V1 || (int)i == cg->cmds)
			continue;
		if (k == max) {
			for (size_t j = 0; j < k; j++)
				close(fds[j]);
			return abox_error_setx(err, E2BIG, "cgroup: too many v1 hierarchies");
		}
		int fd = openat(cg->dir[i].fd, "tasks", O_WRONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0) {
			int e = errno;
			for (size_t j = 0; j < k; j++)
				close(fds[j]);
			return abox_error_set(err, e, "cgroup: open '%s/tasks'", cg->dir[i].path);
		}
		fds[k++] = fd;
	}
	*n = k;
	return 0;
}
