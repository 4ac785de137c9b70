/* Sandbox identities on the host: each sandbox's root and user are host
 * ids of a range no host account and no other sandbox holds (a user
 * namespace of its own, on by default), a host uid 1000 reaches none of a
 * sandbox user's files or processes, snapshots keep sandbox-relative
 * owners from one range to another, and the pool of ranges survives
 * exhaustion and crashed creators. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <grp.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

TestSuite(userns, .init = sandbox_suite_init, .fini = sandbox_suite_fini, .timeout = 180);

static const char *state_dir(void)
{
	const char *s = getenv("ABOX_ROOT");
	cr_assert(s && *s, "the tests run with their own ABOX_ROOT");
	return s;
}

/* The first host id of the sandbox's range, from its own uid_map. */
static unsigned long id_base(const char *id)
{
	char *o = root_sh(id, "cat /proc/self/uid_map");
	unsigned long inside = 1, base = 0, count = 0;
	cr_assert_eq(sscanf(o, "%lu %lu %lu", &inside, &base, &count), 3, "uid_map: %s", o);
	cr_assert_eq(inside, 0);
	cr_assert_eq(count, 65536, "uid_map: %s", o);
	free(o);
	return base;
}

static pid_t init_pid(const char *id)
{
	char *out = ABOX_OUT("info", "--json", id);
	json_object *o = json_tokener_parse(out), *v;
	cr_assert(o && json_object_object_get_ex(o, "pid", &v), "info --json: %s", out);
	pid_t pid = (pid_t)json_object_get_int(v);
	json_object_put(o);
	free(out);
	return pid;
}

/* The host's view of a process: its real uid. */
static long host_uid(pid_t pid)
{
	char p[64], line[256];
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	FILE *f = fopen(p, "r");
	cr_assert(f, "open %s", p);
	long uid = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid:\t%ld", &uid) == 1)
			break;
	fclose(f);
	return uid;
}

static const char *runtime_dir(void)
{
	const char *s = getenv("ABOX_RUNTIME_DIR");
	cr_assert(s && *s, "the tests run with their own ABOX_RUNTIME_DIR");
	return s;
}

static bool range_file(unsigned long base)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/uids/%lu", runtime_dir(), base);
	return access(p, F_OK) == 0;
}

Test(userns, identities_are_distinct_and_unprivileged)
{
	char *a = CREATE("--layer", "tmpfs"), *b = CREATE("--layer", "tmpfs");
	unsigned long ba = id_base(a), bb = id_base(b);
	cr_assert_geq(ba, 65536, "sandbox root must not be a host system or login id: %lu", ba);
	cr_assert_geq(bb, 65536);
	/* ranges apart, not just different starts */
	cr_assert(ba + 65536 <= bb || bb + 65536 <= ba, "ranges overlap: %lu and %lu", ba, bb);
	cr_assert_eq(host_uid(init_pid(a)), (long)ba, "init of a runs as its range's first id");
	cr_assert_eq(host_uid(init_pid(b)), (long)bb);
	char *o = root_sh(a, "id -u; id -un");
	cr_assert_str_eq(o, "0\nroot\n");
	free(o);
	o = ABOX_OUT("exec", a, "--", "id", "-u");
	cr_assert_str_eq(o, "1000\n");
	free(o);
	cr_assert(range_file(ba) && range_file(bb), "each range recorded in the pool");
	kill_and_free(a);
	kill_and_free(b);
	cr_assert(!range_file(ba) && !range_file(bb), "kill gives the range back");
}

/* Sandbox root holds capabilities in its own user namespace only, and
 * every other namespace is the host's: it cannot mount, rename the host,
 * change its network, tune the kernel or make cgroups, even as root. */
Test(userns, sandbox_root_owns_no_namespace)
{
	char *id = CREATE("--layer", "tmpfs");
	char *o = root_sh(id, "mount -t tmpfs none /mnt 2>/dev/null && echo mounted; "
			      "hostname other 2>/dev/null && echo renamed; "
			      "ip link add d0 type dummy 2>/dev/null && echo linked; "
			      "ip addr add 203.0.113.9/32 dev lo 2>/dev/null && echo addressed; "
			      "echo 1 2>/dev/null > /proc/sys/net/ipv4/ip_forward && echo tuned; "
			      "mkdir /sys/fs/cgroup/x 2>/dev/null && echo cgroup; "
			      "python3 -c 'import os; os.setuid(0); os.unshare(os.CLONE_NEWUSER)' "
			      "2>/dev/null && echo nested; "
			      "id -u");
	cr_assert_str_eq(o, "0\n", "sandbox root did more than its own namespace allows: %s", o);
	free(o);
	/* what it may: its own files and users, and a server on a low port */
	o = root_sh(id, "touch /f && chown 1000:1000 /f && stat -c '%u' /f && "
			"python3 -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 80)); "
			"print(\"bound\")'");
	cr_assert_str_eq(o, "1000\nbound\n");
	free(o);
	kill_and_free(id);
}

/* init (PID 1) serves the sandbox but is not at its mercy: sandbox root
 * can neither raise its oom_score_adj (the OOM killer would then pick
 * init, and the sandbox would be lost) nor see or follow its fds (the
 * host's sockets and the writable layer's folder), and cannot ptrace it.
 * Commands still start at oom_score_adj 0 and may raise their own. */
Test(userns, init_is_beyond_sandbox_root)
{
	char *id = CREATE("--layer", "tmpfs");
	char *o = root_sh(id, "echo 900 2>/dev/null > /proc/1/oom_score_adj && echo raised; "
			      "echo 15 2>/dev/null > /proc/1/oom_adj && echo raised_adj; "
			      "ls /proc/1/fd >/dev/null 2>&1 && echo listed; "
			      "readlink /proc/1/fd/3 >/dev/null 2>&1 && echo followed; "
			      "readlink /proc/1/cwd >/dev/null 2>&1 && echo cwd; "
			      "cat /proc/1/environ >/dev/null 2>&1 && echo environ; "
			      "python3 -c 'import ctypes; l = ctypes.CDLL(None); "
			      "print(\"traced\") if l.ptrace(16, 1, 0, 0) == 0 else None' 2>/dev/null; "
			      "cat /proc/1/oom_score_adj; cat /proc/self/oom_score_adj; "
			      "echo 300 > /proc/self/oom_score_adj && cat /proc/self/oom_score_adj; "
			      "grep -c . /proc/1/status >/dev/null && echo status_readable");
	cr_assert_str_eq(o, "0\n0\n300\nstatus_readable\n", "sandbox root reached init: %s", o);
	free(o);
	/* on the host, init's score is what abox set, and it still answers */
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/oom_score_adj", (int)init_pid(id));
	FILE *f = fopen(p, "r");
	cr_assert(f);
	int adj = 1;
	cr_assert_eq(fscanf(f, "%d", &adj), 1);
	fclose(f);
	cr_assert_eq(adj, 0);
	o = root_sh(id, "echo alive");
	cr_assert_str_eq(o, "alive\n");
	free(o);
	kill_and_free(id);
}

Test(userns, off_keeps_host_ids)
{
	char *id = CREATE("--layer", "tmpfs", "--userns", "off");
	char *o = root_sh(id, "cat /proc/self/uid_map");
	unsigned long inside, base, count;
	cr_assert_eq(sscanf(o, "%lu %lu %lu", &inside, &base, &count), 3);
	cr_assert_eq(base, 0, "--userns off: the host's ids: %s", o);
	free(o);
	kill_and_free(id);
	ABOX_EXPECT(NONZERO, NULL, "expected on or off", "run", "--userns", "maybe", "--", "true");
}

/* As host uid 1000 (what a login account usually is): a sandbox user's
 * 0600 file through /proc/PID/root, ptrace and signals of its process. */
static int try_as_1000(pid_t pid, unsigned long base)
{
	pid_t k = fork();
	if (k == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(1000, 1000, 1000) < 0 ||
		    setresuid(1000, 1000, 1000) < 0)
			_exit(90);
		char p[128];
		snprintf(p, sizeof(p), "/proc/%d/root/home/user/secret", (int)pid);
		int fd = open(p, O_RDONLY);
		if (fd >= 0)
			_exit(91);
		if (ptrace(PTRACE_ATTACH, pid, NULL, NULL) == 0)
			_exit(92);
		if (kill(pid, 0) == 0 || errno != EPERM)
			_exit(93);
		(void)base;
		_exit(0);
	}
	int st;
	waitpid(k, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

Test(userns, host_uid_1000_cannot_reach_the_sandbox_user)
{
	char *id = CREATE("--layer", "tmpfs");
	unsigned long base = id_base(id);
	ABOX_OK("exec", id, "--", "sh", "-c", "echo secret > ~/secret && chmod 600 ~/secret");
	ABOX_OK("exec", "-d", id, "--", "sleep", "120");
	/* the sandbox user's sleep, as the host sees it */
	pid_t found = 0;
	for (int tries = 0; tries < 100 && !found; tries++) {
		DIR *d = opendir("/proc");
		struct dirent *de;
		while (d && (de = readdir(d)) && !found) {
			pid_t p = (pid_t)atoi(de->d_name);
			char comm[64] = "", path[64];
			snprintf(path, sizeof(path), "/proc/%d/comm", (int)p);
			FILE *f = p > 0 ? fopen(path, "r") : NULL;
			if (f) {
				if (!fgets(comm, sizeof(comm), f))
					comm[0] = '\0';
				fclose(f);
			}
			if (p > 0 && strcmp(comm, "sleep\n") == 0 && host_uid(p) == (long)(base + 1000))
				found = p;
		}
		if (d)
			closedir(d);
		if (!found)
			usleep(20000);
	}
	cr_assert(found, "no process of host uid %lu (the sandbox's user)", base + 1000);
	int r = try_as_1000(found, base);
	cr_assert_eq(r, 0, "host uid 1000 reached the sandbox user (step %d: 91 read, 92 ptrace, 93 signal)",
		     r);
	kill_and_free(id);
}

/* A snapshot of a sandbox stores owners relative to it: started in another
 * sandbox (another range), root's files are root's, the user's the
 * user's, with setuid bits, user xattrs and file capabilities kept. */
Test(userns, snapshot_moves_between_ranges)
{
	char *a = CREATE("--layer", "tmpfs");
	unsigned long ba = id_base(a);
	free(root_sh(
		a, "mkdir -p /opt/t && echo r > /opt/t/r && echo u > /opt/t/u && chown 1000:1000 /opt/t/u && "
		   "cp /bin/true /opt/t/s && chmod 4755 /opt/t/s && cp /bin/true /opt/t/c && "
		   "setcap cap_net_bind_service+ep /opt/t/c && "
		   "python3 -c \"import os; os.setxattr('/opt/t/u', 'user.k', b'v')\""));
	char *snap = ABOX_LINE("snapshot", a);
	/* on the host's disk: sandbox-relative owners, nothing of a's range */
	char p[4400];
	struct stat st;
	snprintf(p, sizeof(p), "%s/snapshots/%s/layer/root/opt/t/u", state_dir(), snap);
	cr_assert_eq(stat(p, &st), 0, "%s", p);
	cr_assert_eq(st.st_uid, 1000, "stored relative: %u", st.st_uid);
	snprintf(p, sizeof(p), "%s/snapshots/%s/layer/root/opt/t/s", state_dir(), snap);
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_uid, 0);
	cr_assert(st.st_mode & S_ISUID);
	snprintf(p, sizeof(p), "%s/snapshots/%s/layer/root/opt/t/c", state_dir(), snap);
	unsigned char cap[64];
	ssize_t n = getxattr(p, "security.capability", cap, sizeof(cap));
	cr_assert(n >= 20, "file capability stored: %zd", n);
	if (n == 24) {
		unsigned root = cap[20] | cap[21] << 8 | (unsigned)cap[22] << 16 | (unsigned)cap[23] << 24;
		cr_assert_eq(root, 0, "its root stored relative, not %u", root);
	}
	kill_and_free(a);

	char *b = CREATE("--layer", "tmpfs", "--from", snap);
	cr_assert_neq(id_base(b), ba);
	char *o =
		root_sh(b, "stat -c '%u %g %A' /opt/t/r /opt/t/u /opt/t/s; getcap /opt/t/c | sed 's/.* //'; "
			   "python3 -c \"import os; print(os.getxattr('/opt/t/u', 'user.k').decode())\"");
	cr_assert_str_eq(o,
			 "0 0 -rw-r--r--\n1000 1000 -rw-r--r--\n0 0 -rwsr-xr-x\ncap_net_bind_service=ep\nv\n",
			 "in b: %s", o);
	free(o);
	/* the user writes where the snapshot gave it a folder of its own */
	ABOX_OK("exec", b, "--", "sh", "-c", "echo more >> /opt/t/u");
	kill_and_free(b);
	ABOX_OK("snapshots", "rm", snap);
	free(snap);
}

/* inotify instances are counted per user: one sandbox using up all its
 * root can have leaves another sandbox and the host's root theirs. */
Test(userns, inotify_exhaustion_stays_in_its_sandbox)
{
	char *a = CREATE("--layer", "tmpfs"), *b = CREATE("--layer", "tmpfs");
	ABOX_OK("exec", "-d", "--user", "root", a, "--", "python3", "-c",
		"import ctypes, time\n"
		"libc = ctypes.CDLL(None)\n"
		"fds = []\n"
		"while len(fds) < 100000:\n"
		"    fd = libc.inotify_init()\n"
		"    if fd < 0: break\n"
		"    fds.append(fd)\n"
		"open('/tmp/n.tmp', 'w').write(str(len(fds)))\n"
		"__import__('os').rename('/tmp/n.tmp', '/tmp/n')\n"
		"time.sleep(120)\n");
	char *o = NULL;
	for (int i = 0; i < 200; i++) {
		struct run_result r;
		ABOX(&r, "exec", a, "--", "cat", "/tmp/n");
		free(r.err);
		if (r.status == 0) {
			o = r.out;
			break;
		}
		free(r.out);
		usleep(50000);
	}
	cr_assert(o, "the sandbox never reported its inotify count");
	long n = atol(o);
	free(o);
	cr_assert(n > 0 && n < 100000, "a stopped at its own limit: %ld", n);
	/* a has none left ... */
	ABOX_EXPECT(NONZERO, NULL, NULL, "exec", "--user", "root", a, "--", "python3", "-c",
		    "import ctypes, sys; sys.exit(ctypes.CDLL(None).inotify_init() < 0)");
	/* ... b and the host's root have theirs */
	ABOX_OK("exec", "--user", "root", b, "--", "python3", "-c",
		"import ctypes, sys; sys.exit(ctypes.CDLL(None).inotify_init() < 0)");
	int fd = inotify_init1(IN_CLOEXEC);
	cr_assert_geq(fd, 0, "host root's inotify: %s", strerror(errno));
	close(fd);
	kill_and_free(a);
	kill_and_free(b);
}

static void write_config(const char *json)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/userns.json", state_dir());
	if (!json) {
		unlink(p);
		return;
	}
	FILE *f = fopen(p, "w");
	cr_assert(f);
	fputs(json, f);
	fclose(f);
}

static void no_config(void)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/userns.json", state_dir());
	unlink(p);
}

/* .fini: a failed assertion ends the test early; the next ones must not
 * run with its pool */
Test(userns, pool_exhaustion_and_crashed_creators, .fini = no_config)
{
	/* one range only: the second sandbox cannot have one */
	write_config("{\"poolStart\": 3000000000, \"poolRanges\": 1}");
	char *a = CREATE("--layer", "tmpfs");
	cr_assert_eq(id_base(a), 3000000000UL);
	ABOX_EXPECT(NONZERO, NULL, "uid ranges of the pool", "create", "--layer", "tmpfs");
	ABOX_EXPECT(NONZERO, NULL, "uid ranges of the pool", "run", "--", "true");
	/* nothing of the failed creates stays: no range, no folder */
	kill_and_free(a);
	cr_assert(!range_file(3000000000UL));
	a = CREATE("--layer", "tmpfs");
	kill_and_free(a);
	/* a creator killed after taking its range: gc gives it back */
	char p[4200];
	snprintf(p, sizeof(p), "%s/uids", runtime_dir());
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/uids/3000000000", runtime_dir());
	FILE *f = fopen(p, "w");
	cr_assert(f);
	fputs("deadcreator000000000", f);
	fclose(f);
	/* a fresh one may be a create under way (ranges are taken before
	 * the runtime folder): gc leaves it */
	ABOX_OK("gc");
	cr_assert(range_file(3000000000UL), "gc must not take a range a create may be using");
	struct timespec old[2] = { { .tv_sec = time(NULL) - 120 }, { .tv_sec = time(NULL) - 120 } };
	cr_assert_eq(utimensat(AT_FDCWD, p, old, 0), 0);
	ABOX_OK("gc");
	cr_assert(!range_file(3000000000UL), "gc freed the dead creator's range");
	ABOX_EXPECT(0, "0\n", NULL, "run", "--user", "root", "--", "id", "-u");
	/* bad configs are refused by name */
	write_config("{\"poolStart\": 1000, \"poolRanges\": 4}");
	ABOX_EXPECT(NONZERO, NULL, "among the host's own ids", "run", "--", "true");
	write_config("{\"poolStart\": 4294000000, \"poolRanges\": 100}");
	ABOX_EXPECT(NONZERO, NULL, "run past the last id", "run", "--", "true");
	write_config("{\"default\": \"off\"}");
	ABOX_EXPECT(0, "0 0 4294967295\n", NULL, "run", "--user", "root", "--", "sh", "-c",
		    "tr -s ' ' < /proc/self/uid_map | sed 's/^ //'");
	write_config(NULL);
}

/* The namespace's own kernel limits (userns.json "limits"), written into
 * it as it is made: by default no user namespace can be made inside
 * (whatever a seccomp policy lets through), and sandbox root cannot lift
 * that; configured values hold for each of the sandbox's users. */
Test(userns, kernel_limits_inside, .fini = no_config)
{
	ABOX_EXPECT(0, "0\n2147483647\nrefused\n", NULL, "run", "--user", "root", "--", "sh", "-c",
		    "cat /proc/sys/user/max_user_namespaces /proc/sys/user/max_inotify_instances; "
		    "echo 9 2>/dev/null > /proc/sys/user/max_user_namespaces || echo refused");
	write_config("{\"limits\": {\"inotify_instances\": 3, \"user_namespaces\": null}}");
	const char *count = "python3 -c 'import ctypes; l = ctypes.CDLL(None); "
			    "print(sum(l.inotify_init() >= 0 for _ in range(6)))'; "
			    "cat /proc/sys/user/max_user_namespaces";
	ABOX_EXPECT(0, "3\n2147483647\n", NULL, "run", "--", "sh", "-c", count);
	ABOX_EXPECT(0, "3\n2147483647\n", NULL, "run", "--user", "root", "--", "sh", "-c", count);
	/* the two users' counts are their own */
	ABOX_EXPECT(0, "3\n3\n", NULL, "run", "--user", "root", "--", "sh", "-c",
		    "python3 -c 'import ctypes, subprocess; l = ctypes.CDLL(None); "
		    "k = [l.inotify_init() for _ in range(3)]; "
		    "subprocess.run([\"sudo\", \"-u\", \"user\", \"python3\", \"-c\", \"import ctypes; "
		    "l = ctypes.CDLL(None); print(sum(l.inotify_init() >= 0 for _ in range(6)))\"]); "
		    "print(sum(x >= 0 for x in k))'");
	write_config("{\"limits\": {\"inotify_watchers\": 3}}");
	ABOX_EXPECT(NONZERO, NULL, "unknown limit 'inotify_watchers'", "run", "--", "true");
	write_config("{\"limits\": {\"inotify_watches\": -1}}");
	ABOX_EXPECT(NONZERO, NULL, "must be a whole number from 0", "run", "--", "true");
	write_config("{\"limits\": 5}");
	ABOX_EXPECT(NONZERO, NULL, "limits must be an object", "run", "--", "true");
	write_config(NULL);
}

/* Where the state folder's filesystem cannot be mounted idmapped (here
 * bindfs, a FUSE filesystem that does not opt in), sandboxes run without
 * a user namespace rather than not at all, and say so; --userns on fails
 * naming the cause; doctor says what happens and what to do; "default":
 * "off" makes it the rule and ends the warning. */
Test(userns, falls_back_where_idmapped_mounts_cannot_be)
{
	char base[] = "/tmp/abox-idmapless-XXXXXX", src[64], mnt[64], state[80], run[64], cmd[256];
	cr_assert(mkdtemp(base));
	snprintf(src, sizeof(src), "%s/src", base);
	snprintf(mnt, sizeof(mnt), "%s/mnt", base);
	snprintf(state, sizeof(state), "%s/state", mnt);
	snprintf(run, sizeof(run), "%s/run", base);
	cr_assert(mkdir(src, 0700) == 0 && mkdir(mnt, 0700) == 0);
	snprintf(cmd, sizeof(cmd), "bindfs %s %s", src, mnt);
	cr_assert_eq(system(cmd), 0, "bindfs is needed (scripts/bootstrap.sh installs it)");
	char *old_root = strdup(getenv("ABOX_ROOT")), *old_run = strdup(getenv("ABOX_RUNTIME_DIR"));
	setenv("ABOX_ROOT", state, 1);
	setenv("ABOX_RUNTIME_DIR", run, 1);

	ABOX_EXPECT(0, "0 0 4294967295\n1000\n", "has no user namespace", "run", "--user", "root", "--", "sh",
		    "-c", "tr -s ' ' < /proc/self/uid_map | sed 's/^ //'; stat -c %u /home/user");
	ABOX_EXPECT(NONZERO, NULL, "cannot be mounted through the sandbox's user namespace", "run",
		    "--userns", "on", "--", "true");
	struct run_result r;
	ABOX(&r, "doctor");
	cr_assert(strstr(r.out, "sandboxes run without one"), "doctor: %s", r.out);
	run_result_free(&r);
	char p[128];
	snprintf(p, sizeof(p), "%s/userns.json", state);
	FILE *f = fopen(p, "w");
	cr_assert(f);
	fputs("{\"default\": \"off\"}", f);
	fclose(f);
	ABOX(&r, "run", "--", "id", "-u");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "1000\n");
	cr_assert(!strstr(r.err, "warning"), "\"default\": \"off\" ends the warning: %s", r.err);
	run_result_free(&r);

	setenv("ABOX_ROOT", old_root, 1);
	setenv("ABOX_RUNTIME_DIR", old_run, 1);
	free(old_root);
	free(old_run);
	snprintf(cmd, sizeof(cmd), "umount %s && rm -rf %s", mnt, base);
	cr_assert_eq(system(cmd), 0, "clean up %s", base);
}
