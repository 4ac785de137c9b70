/* abox doctor — what this host offers abox, one line per facility, with
 * what follows from it. Exit 0 when sandboxes can run here. */
#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/mount.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "base/base.h"
#include "cli.h"

static bool fatal;

static void line(bool ok, bool required, const char *what, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void line(bool ok, bool required, const char *what, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	printf("%-5s %-18s %s\n", ok ? "ok" : required ? "FAIL" : "no", what, buf);
	if (!ok && required)
		fatal = true;
}

/* Runs fn in a forked child (namespace probes must not touch us). */
static int in_child(int (*fn)(void))
{
	pid_t p = fork();
	if (p < 0)
		return -errno;
	if (p == 0)
		_exit(fn() == 0 ? 0 : 1);
	int st;
	if (waitpid(p, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int probe_userns(void)
{
	return unshare(CLONE_NEWUSER) == 0 ? 0 : -1;
}

static int write_map(const char *file, const char *map)
{
	return write_file_at(AT_FDCWD, file, map);
}

static int probe_overlay_userns(void)
{
	/* overlay inside a user namespace needs "userxattr" (5.11+) */
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char dir[] = "/tmp/abox-doctor-XXXXXX";
	if (!mkdtemp(dir))
		return -1;
	int ok = -1;
	pid_t p = fork();
	if (p == 0) {
		char map[64];
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			_exit(1);
		snprintf(map, sizeof(map), "0 %u 1", uid);
		write_map("/proc/self/setgroups", "deny");
		if (write_map("/proc/self/uid_map", map) < 0)
			_exit(1);
		snprintf(map, sizeof(map), "0 %u 1", gid);
		if (write_map("/proc/self/gid_map", map) < 0)
			_exit(1);
		if (mount("t", dir, "tmpfs", 0, NULL) < 0)
			_exit(1);
		char p1[128], opts[512];
		const char *sub[] = { "l", "u", "w", "m" };
		for (int i = 0; i < 4; i++) {
			snprintf(p1, sizeof(p1), "%s/%s", dir, sub[i]);
			mkdir(p1, 0755);
		}
		snprintf(opts, sizeof(opts), "lowerdir=%s/l,upperdir=%s/u,workdir=%s/w,userxattr", dir, dir, dir);
		snprintf(p1, sizeof(p1), "%s/m", dir);
		_exit(mount("overlay", p1, "overlay", 0, opts) == 0 ? 0 : 1);
	}
	if (p > 0) {
		int st;
		waitpid(p, &st, 0);
		ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
	}
	rmdir(dir);
	return ok;
}

/* Idmapped mounts, for real: a user namespace with a mapping, a tmpfs
 * cloned with open_tree and mount_setattr(MOUNT_ATTR_IDMAP) on it. */
static int probe_idmap(void)
{
	int sync[2];
	if (pipe2(sync, O_CLOEXEC) < 0)
		return -1;
	pid_t holder = fork();
	if (holder == 0) {
		char c;
		close(sync[1]);
		if (unshare(CLONE_NEWUSER) < 0)
			_exit(1);
		(void)!read(sync[0], &c, 1); /* parent closes: done */
		_exit(0);
	}
	close(sync[0]);
	if (holder < 0) {
		close(sync[1]);
		return -1;
	}
	usleep(20000); /* let the holder unshare */
	char p[64];
	int ok = -1;
	snprintf(p, sizeof(p), "/proc/%d/uid_map", (int)holder);
	if (write_file_at(AT_FDCWD, p, "0 100000 65536") == 0) {
		snprintf(p, sizeof(p), "/proc/%d/gid_map", (int)holder);
		if (write_file_at(AT_FDCWD, p, "0 100000 65536") == 0) {
			snprintf(p, sizeof(p), "/proc/%d/ns/user", (int)holder);
			int usfd = open(p, O_RDONLY | O_CLOEXEC);
			pid_t probe = usfd >= 0 ? fork() : -1;
			if (probe == 0) {
				char dir[] = "/tmp/abox-doctor-XXXXXX";
				if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
				    !mkdtemp(dir))
					_exit(1);
				int r = 1;
				if (mount("t", dir, "tmpfs", 0, NULL) == 0) {
					int t = (int)syscall(SYS_open_tree, AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
					struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)usfd };
					if (t >= 0 && syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH, &attr, sizeof(attr)) == 0)
						r = 0;
					umount2(dir, MNT_DETACH);
				}
				rmdir(dir);
				_exit(r);
			}
			if (probe > 0) {
				int st;
				waitpid(probe, &st, 0);
				ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
			}
			if (usfd >= 0)
				close(usfd);
		}
	}
	close(sync[1]);
	waitpid(holder, NULL, 0);
	return ok;
}

static bool has_fs(const char *name)
{
	_cleanup_free_ char *s = NULL;
	if (read_file_at(AT_FDCWD, "/proc/filesystems", 1 << 16, &s, NULL) < 0)
		return false;
	char pat[64];
	snprintf(pat, sizeof(pat), "\t%s\n", name);
	return strstr(s, pat) != NULL;
}

static void print_check(const abox_host_check *c, void *ud)
{
	(void)ud;
	line(c->ok, c->required, c->name, "%s", c->detail);
}

/* The checkpointer abox would use (pause --to-disk, snapshot/fork
 * --memory), and whether it works here. */
static void check_checkpointer(void)
{
	abox_ctx *ctx;
	if (abox_ctx_new(NULL, &ctx, NULL) < 0)
		return;
	abox_error err = ABOX_ERROR_INIT;
	char *hook = NULL, *version = NULL;
	int r = abox_checkpointer_check(ctx, &hook, &version, &err);
	if (r == -EOPNOTSUPP)
		line(false, false, "checkpointer",
		     "%s%s%s: memory checkpoints unavailable here (pauses keep their "
		     "memory frozen in place)",
		     hook ? hook : "", hook ? ": " : "", err.msg);
	else if (r < 0)
		line(false, false, "checkpointer", "%s%s%s: memory checkpoints unavailable (scripts/criu-setup.sh installs "
		     "CRIU 4)", hook ? hook : "", hook ? ": " : "", err.msg);
	else
		line(true, false, "checkpointer", "%s (%s): check passed", hook, version ? version : "?");
	free(hook);
	free(version);
	abox_ctx_free(ctx);
}

/* Whether this process holds capability cap (its CapEff line). */
static bool have_cap(int cap)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long eff = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	if (f)
		fclose(f);
	return (eff >> cap) & 1;
}

/* With --remote: whether that daemon answers this key. */
static int doctor_remote(const char *url)
{
	abox_ctx *ctx = NULL;
	abox_error err = ABOX_ERROR_INIT;
	if (abox_ctx_new(NULL, &ctx, &err) < 0) {
		line(false, true, "remote", "%s", err.msg);
		return 1;
	}
	abox_list_opts lo = ABOX_LIST_OPTS_INIT;
	abox_sandbox_info *v = NULL;
	size_t n = 0;
	int r = abox_sandbox_query(ctx, &lo, &v, &n, NULL, &err);
	for (size_t i = 0; r >= 0 && i < n; i++)
		abox_sandbox_info_clear(&v[i]);
	free(v);
	abox_ctx_free(ctx);
	if (r < 0)
		line(false, true, "remote", "%s: %s", url, err.msg);
	else
		line(true, false, "remote", "%s answers this key (%zu sandboxes)", url, n);
	return r < 0 ? 1 : 0;
}

int cmd_doctor(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		printf("usage: abox doctor\n\nPrints what this host offers abox; exits 0 when sandboxes can run.\n");
		return 0;
	}
	const char *remote = getenv("ABOX_REMOTE");
	if (remote && *remote)
		return doctor_remote(remote);
	struct utsname u;
	uname(&u);
	line(true, false, "kernel", "%s %s", u.release, u.machine);
	line(geteuid() == 0, true, "privileges", geteuid() == 0 ? "running as root" : "abox needs root for now (rootless mode is planned)");
	/* commands run in a memory cgroup of their own that init is not in
	 * (lib/cgroup/cgroup.h), so the OOM killer never picks init; the
	 * oom_score_adj -1000 init also asks for needs CAP_SYS_RESOURCE and
	 * is only a second line */
	bool res = have_cap(24 /* CAP_SYS_RESOURCE */);
	line(true, false, "OOM shield of init", res ? "commands in their own memory cgroup; oom_score_adj -1000 too "
						    "(CAP_SYS_RESOURCE)"
						  : "commands in their own memory cgroup (no CAP_SYS_RESOURCE here for "
						    "oom_score_adj -1000: not needed)");

	/* how abox-init starts commands (src/init/child.c): sharing its
	 * memory until the exec, unless that could let a command's user
	 * ptrace the child while it still is init's memory */
	char dump[8] = "";
	int dfd = open("/proc/sys/fs/suid_dumpable", O_RDONLY | O_CLOEXEC);
	ssize_t dn = dfd >= 0 ? read(dfd, dump, sizeof(dump) - 1) : -1;
	if (dfd >= 0)
		close(dfd);
	bool shared_spawn = dn > 0 && (dump[0] == '0' || dump[0] == '2');
	line(shared_spawn, false, "command start",
	     shared_spawn ? "vfork-style (fs.suid_dumpable=%c): no copy of init's memory per command"
			  : "fork (fs.suid_dumpable=%c): each command costs a copy of init's page tables, about 0.2 ms",
	     dn > 0 ? dump[0] : '?');

	line(has_fs("overlay"), true, "overlayfs", has_fs("overlay") ? "available" : "missing: no sandbox root filesystem");
	bool userns = in_child(probe_userns) == 0;
	line(userns, false, "user namespaces",
	     userns ? "available"
		    : "unavailable: sandboxes need --userns off (or \"default\": \"off\" in userns.json)");
	if (userns) {
		bool ov = probe_overlay_userns() == 0;
		line(ov, false, "overlay in userns", ov ? "available (userxattr)" : "unavailable: rootless sandboxes cannot use overlay");
	}
	int idm = userns ? probe_idmap() : -1;
	line(idm == 0, false, "idmapped mounts",
	     idm == 0 ? "work (probed on tmpfs): per-sandbox uid ranges without copies" :
			"unavailable: per-sandbox uid ranges would need chown'd copies");

	/* what the library's modules say: cgroups, abox-init, disks, seccomp */
	abox_ctx *ctx = NULL;
	abox_error err = ABOX_ERROR_INIT;
	if (abox_ctx_new(NULL, &ctx, &err) < 0 || abox_ctx_describe(ctx, print_check, NULL, &err) < 0)
		line(false, true, "abox-init", "%s", err.msg);
	abox_ctx_free(ctx);

	long ll = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	line(ll > 0, false, "landlock", ll > 0 ? "ABI %ld" : "unavailable: no extra file-access layer", ll);
	int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	line(pfd >= 0, false, "pidfd", pfd >= 0 ? "available: PIDs are held, never reused by mistake" : "unavailable");
	if (pfd >= 0)
		close(pfd);
	long c3 = syscall(SYS_clone3, NULL, 0);
	bool clone3 = !(c3 < 0 && errno == ENOSYS);
	line(clone3, false, "clone3", clone3 ? "available (CLONE_INTO_CGROUP)" : "unavailable: slower cgroup placement");
	check_checkpointer();
	printf("%s\n", fatal ? "abox cannot run sandboxes here (see FAIL lines)" : "abox can run sandboxes here");
	return fatal ? 1 : 0;
}
