/* spawn/userns.c — see userns.h.
 *
 * Two helper tasks share our memory (no page tables copied, whatever the
 * size of the daemon), so the whole making runs on another CPU while the
 * create goes on, and a create waits only for its answer:
 *
 *  - the maker (`maker`, CLONE_VM | CLONE_FILES: the fd it opens is ours)
 *    starts the member, writes the namespace's maps once it exists, opens
 *    it, ends the member and reports the fd number (or -errno) on a pipe;
 *  - the member (`member`, CLONE_VM, its own fd table holding nothing but
 *    its pipe) makes the namespace as the range's first id, not as host
 *    root: the kernel charges a namespace's per-user counts (inotify
 *    instances and watches, user namespaces, message queue bytes) to its
 *    creator as well, so one sandbox using up its share uses up its own
 *    id's, never root's or another sandbox's.
 *
 * Both run on our TLS: only raw system calls (base/rawsys.h), which never
 * write our errno or take libc's locks (glibc's setresuid would even try
 * to change the ids of every thread of ours). */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

#include "base/procsys.h"
#include "base/rawsys.h"
#include "mount/rootfs.h"
#include "spawn/userns.h"
#include "store/uidpool.h"

/* After the maps (the kernel refuses a namespace's own limits to an id it
 * does not map): one write per limit, as the namespace's root. The maker
 * does it, joining the namespace as its owner (the range's first id):
 * not the member that made it, which hosts that confine the makers of
 * unprivileged user namespaces (AppArmor's
 * apparmor_restrict_unprivileged_userns) leave without capabilities in
 * it. */
static bool write_limits(struct userns_job *j, long proc)
{
	for (unsigned i = 0; i < j->nlimits; i++) {
		long w = proc < 0 ? proc : procsys_write(proc, j->limit_path[i], j->limit_value[i]);
		if (w < 0) {
			j->limit_failed = (int)i;
			j->limit_errno = (int)-w;
			return false;
		}
	}
	return true;
}

static int member(void *arg)
{
	struct userns_job *j = arg;
	int fd = j->m_ready;
	if (fd > 0)
		RS3(SYS_close_range, 0, fd - 1, 0);
	RS3(SYS_close_range, fd + 1, ~0U, 0);
	char c = 'u';
	if (RS2(SYS_setgroups, 0, NULL) < 0 || RS3(SYS_setresgid, j->base, j->base, j->base) < 0 ||
	    RS3(SYS_setresuid, j->base, j->base, j->base) < 0 || RS1(SYS_unshare, CLONE_NEWUSER) < 0)
		c = 'e';
	RS3(SYS_write, fd, &c, 1);
	for (;;) /* until the maker kills it (ppoll: no pause(2) on every arch) */
		RS4(SYS_ppoll, NULL, 0, NULL, NULL);
	return 0;
}

/* "/proc/<pid>/<file>" into buf, without libc's formatting. */
static void proc_path(char *buf, pid_t pid, const char *file)
{
	char digits[16];
	int n = 0;
	for (unsigned v = (unsigned)pid; n == 0 || v; v /= 10)
		digits[n++] = (char)('0' + v % 10);
	char *p = buf;
	for (const char *s = "/proc/"; *s;)
		*p++ = *s++;
	while (n)
		*p++ = digits[--n];
	*p++ = '/';
	while (*file)
		*p++ = *file++;
	*p = '\0';
}

static long write_map(pid_t pid, const char *file, const char *map, size_t len)
{
	char p[64];
	proc_path(p, pid, file);
	long fd = RS4(SYS_openat, AT_FDCWD, p, O_WRONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	long w = RS3(SYS_write, fd, map, len);
	RS1(SYS_close, fd);
	return w == (long)len ? 0 : w < 0 ? w : -EIO;
}

static int maker(void *arg)
{
	struct userns_job *j = arg;
	long r = 0;
	int mp[2];
	if ((r = RS2(SYS_pipe2, mp, O_CLOEXEC)) == 0) {
		j->m_ready = mp[1];
		/* glibc's clone: it only sets our errno when it fails */
		pid_t m = clone(member, j->m_stack_top, CLONE_VM, j);
		RS1(SYS_close, mp[1]);
		char c = 0;
		if (m < 0)
			r = -EAGAIN;
		else if (RS3(SYS_read, mp[0], &c, 1) != 1 || c != 'u')
			r = -EPERM;
		if (r == 0 && (r = write_map(m, "uid_map", j->map, j->map_len)) == 0 &&
		    (r = write_map(m, "gid_map", j->gmap, j->gmap_len)) == 0) {
			char p[64];
			proc_path(p, m, "ns/user");
			r = RS4(SYS_openat, AT_FDCWD, p, O_RDONLY | O_CLOEXEC, 0);
		}
		/* the limits go through a procfs of this write's own
		 * (base/procsys.h: the host's grows slower with every
		 * sandbox), made while this task is still host root */
		long proc = r >= 0 && j->nlimits ? procsys_open() : -1;
		/* the last thing this task does: it leaves host root for
		 * good (the change of ids and the namespace are its own, not
		 * the caller's) */
		if (r >= 0 && j->nlimits &&
		    (RS2(SYS_setgroups, 0, NULL) < 0 || RS3(SYS_setresgid, j->base, j->base, j->base) < 0 ||
		     RS3(SYS_setresuid, j->base, j->base, j->base) < 0 ||
		     RS2(SYS_setns, r, CLONE_NEWUSER) < 0 || !write_limits(j, proc))) {
			RS1(SYS_close, r);
			if (j->limit_failed < 0) { /* joining failed: named by the first */
				j->limit_failed = 0;
				j->limit_errno = EPERM;
			}
			r = -j->limit_errno;
		}
		if (proc >= 0)
			RS1(SYS_close, proc);
		if (m > 0) {
			RS2(SYS_kill, m, SIGKILL);
			while (RS4(SYS_wait4, m, NULL, __WCLONE, NULL) == -EINTR)
				;
		}
		RS1(SYS_close, mp[0]);
	}
	int result = (int)r;
	RS3(SYS_write, j->h_ready, &result, sizeof(result));
	RS1(SYS_close, j->h_ready);
	RS1(SYS_exit, 0);
	return 0;
}

/* The helpers' stacks: the thread's own, never zeroed or copied (a page
 * first touched costs a fault; the helpers touch only their tops, on the
 * other CPU) */
static _Thread_local struct {
	char maker[8192] __attribute__((aligned(16)));
	char member[4096] __attribute__((aligned(16)));
} stacks;

static int start(struct userns_job *j, abox_error *err);

int userns_begin(uint32_t base, const int64_t *limits, struct userns_job *j, abox_error *err)
{
	*j = (struct userns_job){ .pid = -1, .ready_fd = -1, .base = base, .limit_failed = -1 };
	for (int i = 0; limits && i < UIDPOOL_LIMITS; i++) {
		if (limits[i] < 0)
			continue;
		snprintf(j->limit_path[j->nlimits], sizeof(j->limit_path[0]), "sys/user/max_%s",
			 uidpool_limit_names[i]);
		snprintf(j->limit_value[j->nlimits], sizeof(j->limit_value[0]), "%lld", (long long)limits[i]);
		j->nlimits++;
	}
	j->map_len = (size_t)snprintf(j->map, sizeof(j->map), "0 %u %u\n", base, UIDPOOL_RANGE);
	memcpy(j->gmap, j->map, j->map_len);
	j->gmap_len = j->map_len;
	return start(j, err);
}

int userns_begin_maps(uint32_t owner, const char *uid_map, const char *gid_map, struct userns_job *j,
		      abox_error *err)
{
	*j = (struct userns_job){
		.pid = -1, .ready_fd = -1, .base = owner, .custom = true, .limit_failed = -1
	};
	size_t u = strlen(uid_map), g = strlen(gid_map);
	if (!u || !g || u >= sizeof(j->map) || g >= sizeof(j->gmap))
		return abox_error_setx(err, E2BIG, "user namespace: maps of %zu and %zu bytes", u, g);
	memcpy(j->map, uid_map, u);
	memcpy(j->gmap, gid_map, g);
	j->map_len = u;
	j->gmap_len = g;
	return start(j, err);
}

static int start(struct userns_job *j, abox_error *err)
{
	int rp[2];
#ifdef __SANITIZE_ADDRESS__
	/* the helpers end with a raw exit, so the sanitizer never sees their
	 * frames leave: the last ones' scope marks would stay on these
	 * stacks and fault the next helpers' (false) uses after scope */
	__asan_unpoison_memory_region(&stacks, sizeof(stacks));
#endif
	j->m_stack_top = stacks.member + sizeof(stacks.member);
	if (pipe2(rp, O_CLOEXEC) < 0)
		return abox_error_set(err, errno, "user namespace: pipe");
	j->ready_fd = rp[0];
	j->h_ready = rp[1]; /* the maker's to close: our fd table is its */
	/* no exit signal: only a wait with __WCLONE (ours) reaps it, so its
	 * pid stays ours until we have */
	pid_t pid = clone(maker, stacks.maker + sizeof(stacks.maker), CLONE_VM | CLONE_FILES, j);
	if (pid < 0) {
		int e = errno;
		close(rp[0]);
		close(rp[1]);
		j->ready_fd = -1;
		return abox_error_set(err, e, "user namespace: clone");
	}
	j->pid = pid;
	return 0;
}

/* The maker's answer, once: the fd, or -errno. */
static int wait_maker(struct userns_job *j)
{
	int result = -EIO;
	if (j->pid <= 0)
		return -EINVAL;
	ssize_t n;
	while ((n = read(j->ready_fd, &result, sizeof(result))) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(result))
		result = -EIO;
	while (waitpid(j->pid, NULL, __WCLONE) < 0 && errno == EINTR)
		;
	close(j->ready_fd);
	j->ready_fd = -1;
	j->pid = -1;
	return result;
}

void userns_abort(struct userns_job *j)
{
	int fd = wait_maker(j);
	if (fd >= 0)
		close(fd);
}

int userns_finish(struct userns_job *j, abox_error *err)
{
	if (j->pid <= 0)
		return abox_error_setx(err, EINVAL, "user namespace: not begun");
	int r = wait_maker(j);
	if (r < 0 && j->limit_failed >= 0)
		return abox_error_set(err, -r, "user namespace: set /proc/%s to %s (limits in userns.json)",
				      j->limit_path[j->limit_failed], j->limit_value[j->limit_failed]);
	if (r == -EPERM)
		return abox_error_setx(err, EPERM,
				       "user namespace: this kernel refused to make one (unshare)");

	if (r < 0 && j->custom) {
		/* the maps on one line, as the message's */
		char m[sizeof(j->map) + sizeof(j->gmap) + 32];
		snprintf(m, sizeof(m), "uid_map \"%s\", gid_map \"%s\"", j->map, j->gmap);
		for (char *c = m; *c; c++)
			if (*c == '\n')
				*c = c[1] == '"' ? ' ' : ',';
		return abox_error_set(err, -r, "user namespace: the kernel refused the maps (%s)", m);
	}
	if (r < 0)
		return abox_error_set(err, -r, "user namespace: map host ids %u-%u", j->base,
				      j->base + UIDPOOL_RANGE - 1);
	return r;
}

int userns_new(uint32_t base, abox_error *err)
{
	struct userns_job j;
	int r = userns_begin(base, NULL, &j, err);
	return r < 0 ? r : userns_finish(&j, err);
}

bool userns_supported(void)
{
	/* a yes is kept for the process's life (a daemon's); a no may pass
	 * (a clone refused for want of memory) and is asked again */
	static bool known;
	if (!known) {
		int fd = userns_new(UIDPOOL_DEFAULT_START, NULL);
		known = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
	return known;
}

int userns_idmap_probe(const char *path, abox_error *err)
{
	int us = userns_new(UIDPOOL_DEFAULT_START, err);
	if (us < 0)
		return us;
	/* a detached copy of the mount: idmapped, then dropped with its fd */
	int t = rootfs_idmapped_tree(path, us, err);
	if (t >= 0)
		close(t);
	close(us);
	return t < 0 ? t : 0;
}
