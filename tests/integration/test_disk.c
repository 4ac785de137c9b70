/* Disks: a long-lived sandbox's files live on a disk of its own (a loop
 * device over a file of the state folder), never in its memory; the
 * disk's size is enforced (ENOSPC inside); tmpfs only on request;
 * snapshots and forks keep the files; every disk is released when its
 * sandbox ends (the suite's leftover check lists bound loop devices). */
#include <abox/abox.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "disk/disk.h"
#include "harness.h"

TestSuite(disk, .init = sandbox_suite_init, .fini = sandbox_suite_fini, .timeout = 240);

/* Loop devices bound to a file of this test's state folder. */
static int disks(void)
{
	char real[4096];
	if (!realpath(state_root(), real))
		return -1;
	size_t n = strlen(real);
	int k = 0;
	DIR *d = opendir("/sys/block");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char p[512];
		snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file", de->d_name);
		char *f = strncmp(de->d_name, "loop", 4) == 0 ? read_whole(p, NULL) : NULL;
		if (f && strncmp(f, real, n) == 0 && f[n] == '/')
			k++;
		free(f);
	}
	if (d)
		closedir(d);
	return k;
}

static unsigned long long metric(const char *id, const char *key)
{
	struct run_result r;
	ABOX(&r, "metrics", "--json", id);
	cr_assert_eq(r.status, 0, "metrics: %s", r.err);
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(r.out, pat);
	cr_assert_not_null(p, "no %s in %s", key, r.out);
	unsigned long long v = strtoull(p + strlen(pat), NULL, 10);
	run_result_free(&r);
	return v;
}

Test(disk, a_full_disk_gives_enospc_inside)
{
	char *id = ABOX_LINE("create", "--timeout", "120", "--disk", "64M");
	cr_assert_eq(disks(), 1, "the sandbox's layer is not on a disk of its own");
	char *out = root_sh(
		id, "dd if=/dev/zero of=/home/user/fill bs=1M count=200 2>&1 | grep -c 'No space left';"
		    "stat -c %s /home/user/fill; df -k / | tail -1 | awk '{print $2}'");
	unsigned long long hits = 0, size = 0, total = 0;
	cr_assert_eq(sscanf(out, "%llu\n%llu\n%llu", &hits, &size, &total), 3, "%s", out);
	cr_assert_eq(hits, 1, "writing past the disk's size must fail with ENOSPC: %s", out);
	cr_assert_lt(size, 64ULL << 20, "%s", out);
	cr_assert_gt(size, 48ULL << 20, "most of the disk is usable: %s", out);
	cr_assert_eq(total, 64 * 1024, "df shows the disk's size: %s", out);
	free(out);
	cr_assert_eq(metric(id, "diskTotal"), 64ULL << 20);
	/* the sandbox goes on: removing the file frees the room */
	out = root_sh(id, "rm /home/user/fill; echo again > /home/user/again; cat /home/user/again");
	cr_assert_str_eq(out, "again\n");
	free(out);
	kill_and_free(id);
}

Test(disk, files_never_count_as_memory)
{
	/* 300 MB of files in a sandbox of 64 MB of memory: in memory, the
	 * writer (or init) is OOM-killed; on a disk it is just a file */
	char *id = ABOX_LINE("create", "--timeout", "120", "--memory", "64M", "--disk", "512M");
	char *out = root_sh(id, "dd if=/dev/zero of=/home/user/big bs=1M count=300 2>/dev/null; echo rc=$?;"
				"stat -c %s /home/user/big");
	cr_assert_str_eq(out, "rc=0\n314572800\n");
	free(out);
	unsigned long long used = metric(id, "memUsed");
	cr_assert_lt(used, 32ULL << 20, "memUsed %llu counts the files", used);
	cr_assert_gt(metric(id, "diskUsed"), 300ULL << 20);
	/* tmpfs the sandbox makes itself (/dev/shm) is memory, and says so */
	free(root_sh(id, "dd if=/dev/zero of=/dev/shm/x bs=1M count=24 2>/dev/null"));
	used = metric(id, "memUsed");
	cr_assert_gt(used, 24ULL << 20, "memUsed %llu misses the tmpfs files", used);
	kill_and_free(id);
}

Test(disk, tmpfs_only_on_request)
{
	char *id = ABOX_LINE("create", "--timeout", "120", "--layer", "tmpfs", "--memory", "256M", "--disk",
			     "128M");
	cr_assert_eq(disks(), 0, "a tmpfs layer has no disk");
	free(root_sh(id, "dd if=/dev/zero of=/home/user/f bs=1M count=48 2>/dev/null"));
	unsigned long long used = metric(id, "memUsed");
	cr_assert_gt(used, 48ULL << 20, "a tmpfs layer's files are memory: memUsed %llu", used);
	/* forks keep the kind */
	struct run_result r;
	ABOX(&r, "fork", id);
	cr_assert_eq(r.status, 0, "fork: %s", r.err);
	char *nl = strchr(r.out, '\n');
	if (nl)
		*nl = '\0';
	cr_assert_eq(disks(), 0, "the fork of a tmpfs sandbox got a disk");
	ABOX_OK("kill", id, r.out);
	run_result_free(&r);
	free(id);

	/* an unknown kind is refused */
	ABOX_EXPECT(NONZERO, NULL, "--layer 'floppy'", "create", "--layer", "floppy");
}

Test(disk, snapshots_and_forks_keep_the_files_on_disks_of_their_own)
{
	char *src = ABOX_LINE("create", "--timeout", "120", "--memory", "64M");
	free(root_sh(src, "echo kept > /srv/f; dd if=/dev/zero of=/srv/big bs=1M count=100 2>/dev/null"));
	char *snap = ABOX_LINE("snapshot", src);
	char *from = ABOX_LINE("create", "--from", snap, "--timeout", "120", "--memory", "64M");
	char *out = root_sh(from, "cat /srv/f; stat -c %s /srv/big");
	cr_assert_str_eq(out, "kept\n104857600\n");
	free(out);

	struct run_result r;
	ABOX(&r, "fork", "--count", "2", src);
	cr_assert_eq(r.status, 0, "fork: %s", r.err);
	char *save = NULL, *a = strtok_r(r.out, "\n", &save), *b = strtok_r(NULL, "\n", &save);
	cr_assert(a && b, "two forks: %s", r.out);
	cr_assert_eq(disks(), 4, "source, sandbox from the snapshot and two forks: a disk each");
	/* a fork writes more files than its memory holds, on its own disk */
	out = root_sh(a, "cat /srv/f; dd if=/dev/zero of=/srv/more bs=1M count=150 2>/dev/null; echo rc=$?");
	cr_assert_str_eq(out, "kept\nrc=0\n");
	free(out);
	out = root_sh(b, "cat /srv/f; test -e /srv/more || echo isolated");
	cr_assert_str_eq(out, "kept\nisolated\n");
	free(out);
	ABOX_OK("kill", src, from, a, b);
	run_result_free(&r);
	ABOX_OK("snapshots", "rm", snap);
	cr_assert_eq(disks(), 0, "kill releases every disk");
	free(snap);
	free(from);
	free(src);
}

Test(disk, an_ephemeral_sandbox_on_a_disk_on_request)
{
	ABOX_EXPECT(0, "209715200\n", NULL, "run", "--layer", "disk", "--memory", "64M", "--", "sh", "-c",
		    "dd if=/dev/zero of=/tmp/x bs=1M count=200 2>/dev/null && stat -c %s /tmp/x");
	cr_assert_eq(disks(), 0, "the run's disk is released when it ends");
}

Test(disk, doctor_says_which_layer_this_host_gets)
{
	struct run_result r;
	ABOX(&r, "doctor");
	cr_assert_eq(r.status, 0, "%s", r.out);
	const char *l = strstr(r.out, "sandbox disks");
	cr_assert_not_null(l, "no disk line: %s", r.out);
	/* this host has loop devices and ext4: the line says ok and how */
	cr_assert(strncmp(l - 6, "ok    ", 6) == 0 && strstr(l, "loop devices"), "%s", r.out);
	run_result_free(&r);
	/* the probe's disk is gone again */
	cr_assert_eq(disks(), 0);
}

static int spare_taken;

static void count_spares(abox_log_level level, const char *msg, void *ud)
{
	(void)level;
	(void)ud;
	if (strstr(msg, "disk: a spare taken"))
		spare_taken++;
}

/* In a process of its own: spares go with their process. */
static int spares_child(void)
{
	abox_ctx_opts co = ABOX_CTX_OPTS_INIT;
	co.log = count_spares;
	abox_ctx *ctx;
	abox_error err = ABOX_ERROR_INIT;
	if (abox_ctx_new(&co, &ctx, &err) < 0 || abox_spare_disks(ctx, 0, 2, &err) < 0) {
		fprintf(stderr, "spares: %s\n", err.msg);
		return 1;
	}
	for (int i = 0; i < 200 && disks() < 2; i++)
		usleep(50 * 1000);
	if (disks() != 2) {
		fprintf(stderr, "spares: %d disks made ahead, not 2\n", disks());
		return 2;
	}
	abox_sandbox_opts so = ABOX_SANDBOX_OPTS_INIT;
	so.timeout_ms = 60000;
	abox_sandbox *sb;
	if (abox_sandbox_create(ctx, &so, &sb, &err) < 0) {
		fprintf(stderr, "spares: %s\n", err.msg);
		return 3;
	}
	int taken = spare_taken;
	/* the one taken is replaced: two spares and the sandbox's disk */
	for (int i = 0; i < 200 && disks() < 3; i++)
		usleep(50 * 1000);
	int n = disks();
	abox_metrics m = { .version = ABOX_METRICS_VERSION };
	int mr = abox_sandbox_metrics(sb, &m, &err);
	(void)abox_sandbox_kill(sb, NULL);
	abox_sandbox_free(sb);
	abox_ctx_free(ctx);
	if (taken != 1 || n != 3 || mr < 0 || m.disk_limit != 1ULL << 30) {
		fprintf(stderr, "spares: taken %d, %d disks, disk total %llu (%s)\n", taken, n,
			(unsigned long long)m.disk_limit, err.msg);
		return 4;
	}
	return 0;
}

/* Runs fn in a process of its own; returns its wait status. */
static int in_child(int (*fn)(void))
{
	fflush(NULL);
	pid_t p = fork();
	cr_assert_geq(p, 0);
	if (p == 0)
		_exit(fn());
	int st;
	cr_assert_eq(waitpid(p, &st, 0), p);
	return st;
}

/* disks(), once it is 0 or after tries 50 ms waits */
static int disks_settled(int tries)
{
	int n = -1;
	for (int i = 0; i < tries && (n = disks()) != 0; i++)
		usleep(50 * 1000);
	return n;
}

Test(disk, spares_are_taken_and_go_with_their_process)
{
	int st = in_child(spares_child);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the spares' process failed (%d)", st);
	/* its helper ends with it, and the spares in flight with both */
	cr_assert_eq(disks_settled(100), 0, "spare disks outlived their process");
}

Test(disk, a_create_that_fails_after_its_disk_releases_it)
{
	/* init that cannot be exec'd: the child fails after it attached the
	 * disk in its namespace */
	const char *init = getenv("ABOX_INIT");
	char *saved = init ? strdup(init) : NULL;
	setenv("ABOX_INIT", "/etc/hostname", 1);
	struct run_result r;
	ABOX(&r, "create", "--layer", "disk");
	if (saved)
		setenv("ABOX_INIT", saved, 1);
	else
		unsetenv("ABOX_INIT");
	free(saved);
	cr_assert_neq(r.status, 0, "a create with a broken init succeeded: %s", r.out);
	run_result_free(&r);
	cr_assert_eq(disks(), 0, "the failed create's disk is still bound");
}

Test(disk, creates_killed_at_any_point_leave_no_disk)
{
	/* SIGKILL of `abox create` at spread-out moments (before, during and
	 * after the disk is made); gc removes the rest, the kernel the disks */
	for (int i = 0; i < 16; i++) {
		int out, errfd;
		pid_t p = start_abox(&out, &errfd, (const char *const[]){ "create", "--timeout", "60", NULL });
		usleep((useconds_t)(i * 1500));
		kill(p, SIGKILL);
		wait_exit(p);
		char *id = slurp(out);
		free(slurp(errfd));
		char *nl = strchr(id, '\n');
		if (nl) {
			*nl = '\0';
			ABOX_OK("kill", id); /* it got as far as printing its id */
		}
		free(id);
	}
	/* one killed after its sandbox was recorded, before it printed the
	 * id, made a sandbox that runs on (as it should): those go by kill */
	struct run_result r;
	ABOX(&r, "ls");
	char *save = NULL;
	for (char *l = strtok_r(r.out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char id[32];
		if (sscanf(l, "%31s", id) == 1 && strlen(id) == 20)
			ABOX_OK("kill", id);
	}
	run_result_free(&r);
	ABOX_OK("gc");
	int n = disks_settled(40);
	cr_assert_eq(n, 0, "killed creates left %d disks bound", n);
}

/* In a mount namespace of its own: disk_discard shuts down our disks and
 * nothing else, not even an ext4 on a loop device whose file lies next to
 * the disks folder (a shutdown of the wrong filesystem takes it from the
 * host until it is mounted again). */
static int discard_child(void)
{
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return 10;
	char img[2048], dir[2048], cmd[16384];
	snprintf(img, sizeof(img), "%s/disks.img", state_root());
	snprintf(dir, sizeof(dir), "%s/disks.mnt", state_root());
	snprintf(cmd, sizeof(cmd),
		 "set -e; truncate -s 8M '%s'; mkfs.ext4 -q -F -O ^has_journal '%s'; mkdir -p '%s';"
		 "mount -o loop '%s' '%s'",
		 img, img, dir, img, dir);
	int rc = system(cmd) == 0 ? 0 : 11;
	int fd = rc ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!rc && (fd < 0 || disk_discard(state_root(), fd) != 0))
		rc = 12;
	/* still writable: not shut down */
	if (!rc && mkdirat(fd, "still-here", 0755) < 0)
		rc = 13;
	if (fd >= 0)
		close(fd);
	umount2(dir, 0);
	rmdir(dir);
	unlink(img);
	if (rc)
		return rc;
	/* one of ours: shut down, every later write fails */
	abox_error e = ABOX_ERROR_INIT;
	int m = disk_new(state_root(), 1 << 20, &e);
	if (m < 0)
		return 14;
	if (mkdirat(m, "before", 0755) < 0 || disk_discard(state_root(), m) != 0)
		rc = 15;
	else if (mkdirat(m, "after", 0755) == 0 || errno != EIO)
		rc = 16;
	close(m);
	return rc;
}

Test(disk, discard_shuts_down_our_disks_only)
{
	int st = in_child(discard_child);
	cr_assert(WIFEXITED(st), "status %d", st);
	cr_assert_eq(WEXITSTATUS(st), 0, "step %d failed (12-13: a foreign ext4 was shut down; 15-16: ours was not)",
		     WEXITSTATUS(st));
	cr_assert_eq(disks_settled(40), 0);
}
