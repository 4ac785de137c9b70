/* cgroup/cgroup.c — what every part of one sandbox's cgroups uses: the
 * handle's destructor, knob writes, flat-keyed reads and the wait between
 * polls. The parts: create.c (make or open the directories), attach.c
 * (put processes in), limits.c, stats.c (usage and OOM kills), freeze.c,
 * kill.c (kill every task and remove the directories).
 *
 * Does not find the hierarchies (layout.c) or choose the limits
 * (local/link.c). Runs in the CLI/daemon, never between clone and exec.
 * Kernel: v1 memory/pids/cpu/freezer; v2 controllers, cgroup.freeze (5.2)
 * and cgroup.kill (5.14), both checked on the sandbox's own v2 directory.
 * Cost: one O_PATH fd per directory, knobs written with openat() on it,
 * nothing read back on the hot path.
 *
 * Fake trees (tests point the layout at a temp dir): mkdir there gives an
 * empty directory where cgroupfs would show knob files. Only in a sandbox
 * directory that is not on cgroupfs are required knobs created on first
 * write (O_CREAT|O_TRUNC); optional ones (memsw, memory.swap.max) are
 * skipped, no listed pid is ever signalled, and destroy empties the
 * directory before rmdir. On cgroupfs O_CREAT is never passed, so a missing
 * knob fails with ENOENT instead of being masked. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cgroup/cgroup_internal.h"

void cgroup_backoff(uint64_t *delay)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)*delay };
	nanosleep(&ts, NULL);
	*delay = *delay * 2 > SPIN_MAX_NS ? SPIN_MAX_NS : *delay * 2;
}

int cgroup_knob_write(const struct cg_dir *d, const char *file, const char *val, bool optional,
		      abox_error *err)
{
	int flags = O_WRONLY | O_CLOEXEC | O_NOCTTY;
	if (d->fake && !optional)
		flags |= O_CREAT | O_TRUNC;
	_cleanup_close_ int fd = openat(d->fd, file, flags, 0644);
	if (fd < 0) {
		if (errno == ENOENT && optional)
			return 0;
		return abox_error_set(err, errno, "cgroup: open '%s/%s'", d->path, file);
	}
	int r = write_full(fd, val, strlen(val));
	if (r < 0)
		return abox_error_set(err, -r, "cgroup: write '%s' to '%s/%s'", val, d->path, file);
	return 0;
}

/* "key value" lookup in flat-keyed files (cgroup.events, memory.events,
 * memory.oom_control). */
int cgroup_kv_get(const char *text, const char *key, uint64_t *v)
{
	size_t n = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, key, n) != 0 || p[n] != ' ')
			continue;
		const char *s = p + n + 1;
		char *end;
		if (*s < '0' || *s > '9')
			return -EPROTO;
		errno = 0;
		unsigned long long x = strtoull(s, &end, 10);
		if (errno || (*end && *end != '\n'))
			return -EPROTO;
		*v = x;
		return 0;
	}
	return -ENOENT;
}

bool cgroup_list_has(const char *list, const char *tok, const char *seps)
{
	size_t n = strlen(tok);
	for (const char *p = list; p && *p;) {
		size_t len = strcspn(p, seps);
		if (len == n && strncmp(p, tok, n) == 0)
			return true;
		p += len;
		p += *p != '\0';
	}
	return false;
}

char *cgroup_self_dir(const char *mount, const char *self)
{
	char *p = NULL;
	return asprintf(&p, "%s%s", mount, strcmp(self, "/") == 0 ? "" : self) < 0 ? NULL : p;
}

void cgroup_sandbox_free(struct cg_sandbox *cg)
{
	if (!cg)
		return;
	for (size_t i = 0; i < cg->n; i++) {
		closep(&cg->dir[i].fd);
		free(cg->dir[i].path);
	}
	closep(&cg->oom_fd);
	closep(&cg->oom_cmds_fd);
	free(cg);
}

/* Fake trees only: rmdir needs the knob files we created gone. */
void cgroup_clear_fake_dir(const struct cg_dir *d)
{
	int fd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return;
	}
	for (struct dirent *de; (de = readdir(dir));)
		if (de->d_type != DT_DIR)
			(void)unlinkat(dirfd(dir), de->d_name, 0);
	closedir(dir);
}
