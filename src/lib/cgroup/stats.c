/* cgroup/stats.c — what a sandbox uses now (CPU time, memory and its
 * file cache, pids) and how many OOM kills struck it, read from the v1 or
 * v2 files of each controller.
 *
 * Does not write limits (limits.c). Runs in the CLI/daemon. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "cgroup/cgroup_internal.h"

/* The "oom_kill N" count of one memory cgroup, through a kept fd: read
 * after every command that ends, one pread instead of open, read, close. */
static int oom_read(const struct cg_dir *d, int *fd, uint64_t *n, abox_error *err)
{
	const char *file = d->version == CG_V1 ? "memory.oom_control" : "memory.events";
	if (*fd < 0)
		*fd = openat(d->fd, file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (*fd < 0)
		return abox_error_set(err, errno, "cgroup: open '%s/%s'", d->path, file);
	char text[1024];
	ssize_t got = pread(*fd, text, sizeof(text) - 1, 0);
	if (got < 0)
		return abox_error_set(err, errno, "cgroup: read '%s/%s'", d->path, file);
	text[got] = '\0';
	if (cgroup_kv_get(text, "oom_kill", n) < 0)
		return abox_error_setx(err, EPROTO, "cgroup: no 'oom_kill N' line in '%s/%s'",
				       d->path, file);
	return 0;
}

int cgroup_oom_kills(struct cg_sandbox *cg, uint64_t *out, abox_error *err)
{
	uint64_t n;

	if (!cg || !out)
		return abox_error_setx(err, EINVAL, "cgroup: oom count: invalid argument");
	if (cg->ctl[CG_MEMORY] < 0)
		return abox_error_setx(err, EOPNOTSUPP,
				       "cgroup: no memory controller, OOM kills are not counted");
	const struct cg_dir *d = &cg->dir[cg->ctl[CG_MEMORY]];
	int r = oom_read(d, &cg->oom_fd, &n, err);
	/* v1 counts kills in the cgroup itself only, v2 in its whole
	 * subtree: on v1 the commands' own count is added */
	if (r >= 0 && cg->cmds >= 0 && d->version == CG_V1) {
		uint64_t k;
		r = oom_read(&cg->dir[cg->cmds], &cg->oom_cmds_fd, &k, err);
		n += k;
	}
	if (r < 0)
		return r;
	*out = n;
	return 0;
}

static int read_u64(const struct cg_dir *d, const char *file, uint64_t *v)
{
	char buf[64];
	_cleanup_close_ int fd = openat(d->fd, file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -EPROTO;
	buf[n] = '\0';
	if (strncmp(buf, "max", 3) == 0) {
		*v = UINT64_MAX;
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long long x = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return -EPROTO;
	*v = x;
	return 0;
}

/* What the sandbox uses in memory, from one read of memory.stat (a charge
 * and a cache read apart disagree while the kernel charges and reclaims a
 * disk's cache, as it does for a while after a large write): its anonymous
 * and shared memory (tmpfs included) and the kernel's memory for it, never
 * the page cache of files on disks, which the kernel reclaims under
 * pressure. v1's memory.stat names no kernel memory: its kmem counter is
 * read beside it. UINT64_MAX when unknown. */
static uint64_t mem_used(const struct cg_dir *d, bool v1)
{
	_cleanup_free_ char *ms = NULL;
	if (read_file_at(d->fd, "memory.stat", 16384, &ms, NULL) < 0)
		return UINT64_MAX;
	uint64_t anon = 0, shmem = 0, kernel = 0, sock = 0, part;
	if (cgroup_kv_get(ms, v1 ? "total_rss" : "anon", &anon) < 0 ||
	    cgroup_kv_get(ms, v1 ? "total_shmem" : "shmem", &shmem) < 0)
		return UINT64_MAX;
	if (v1) {
		if (read_u64(d, "memory.kmem.usage_in_bytes", &kernel) < 0 || kernel == UINT64_MAX)
			kernel = 0;
	} else if (cgroup_kv_get(ms, "kernel", &kernel) < 0) {
		/* kernels before "kernel" was counted: its parts */
		static const char *const parts[] = { "slab", "kernel_stack", "pagetables", "percpu" };
		for (size_t i = 0; i < ELEMENTSOF(parts); i++)
			if (cgroup_kv_get(ms, parts[i], &part) == 0)
				kernel += part;
	}
	if (!v1)
		(void)cgroup_kv_get(ms, "sock", &sock);
	return anon + shmem + kernel + sock;
}

int cgroup_stats(struct cg_sandbox *cg, struct cg_stats *out, abox_error *err)
{
	struct cg_stats st = { .cpu_usec = UINT64_MAX,
			       .mem_current = UINT64_MAX,
			       .mem_used = UINT64_MAX,
			       .mem_limit = UINT64_MAX,
			       .pids_current = UINT64_MAX };
	if (!cg || !out)
		return abox_error_setx(err, EINVAL, "cgroup: stats: invalid argument");
	/* CPU time: v2 keeps cpu.stat in every cgroup, with or without the
	 * cpu controller; on v1 only cpuacct counts it */
	_cleanup_free_ char *text = NULL;
	if (cg->v2 >= 0 && read_file_at(cg->dir[cg->v2].fd, "cpu.stat", 4096, &text, NULL) == 0)
		(void)cgroup_kv_get(text, "usage_usec", &st.cpu_usec);
	if (st.cpu_usec == UINT64_MAX && cg->ctl[CG_CPU] >= 0 && cg->dir[cg->ctl[CG_CPU]].version == CG_V1) {
		uint64_t ns;
		if (read_u64(&cg->dir[cg->ctl[CG_CPU]], "cpuacct.usage", &ns) == 0)
			st.cpu_usec = ns / 1000;
	}
	if (cg->ctl[CG_MEMORY] >= 0) {
		const struct cg_dir *d = &cg->dir[cg->ctl[CG_MEMORY]];
		bool v1 = d->version == CG_V1;
		(void)read_u64(d, v1 ? "memory.usage_in_bytes" : "memory.current", &st.mem_current);
		st.mem_used = mem_used(d, v1);
		/* the user's limit is the commands' (the sandbox's own adds
		 * init's headroom) */
		const struct cg_dir *ld = cg->cmds >= 0 ? &cg->dir[cg->cmds] : d;
		(void)read_u64(ld, v1 ? "memory.limit_in_bytes" : "memory.max", &st.mem_limit);
	}
	if (cg->ctl[CG_PIDS] >= 0)
		(void)read_u64(&cg->dir[cg->ctl[CG_PIDS]], "pids.current", &st.pids_current);
	*out = st;
	return 0;
}
