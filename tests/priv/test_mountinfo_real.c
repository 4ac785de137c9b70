/* Privileged tests of mountinfo_read on a real mount table that changes
 * while it is read: the kernel hands the file out a page or so per read,
 * so a table of a few hundred mounts takes many reads, and a mount made or
 * removed in between must never cost a line of the mounts that stayed,
 * nor a line half written. Runs in a mount namespace of the test process
 * only (its mounts go with it); the churning helper dies with the test
 * (PR_SET_PDEATHSIG). Skips when not root. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mount/mountinfo.h"

#define STABLE 200

static char dir[64];
static pid_t churner = -1;

static void setup(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (mounts for real)");
	cr_assert_eq(unshare(CLONE_NEWNS), 0, "unshare: %m");
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0, "make / private: %m");
	strcpy(dir, "/tmp/abox-mi-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(mount("mi", dir, "tmpfs", 0, "size=1m"), 0, "%m");
}

static void teardown(void)
{
	if (churner > 0) {
		kill(churner, SIGKILL);
		waitpid(churner, NULL, 0);
	}
	if (dir[0]) {
		(void)umount2(dir, MNT_DETACH);
		(void)rmdir(dir);
	}
}

TestSuite(mountinfo_real, .init = setup, .fini = teardown, .timeout = 120);

struct tally {
	unsigned stable[STABLE];
	unsigned churn;
	unsigned lines;
};

static int count(const struct mountinfo_entry *e, void *ud)
{
	struct tally *t = ud;
	unsigned i;
	char tail[8];
	t->lines++;
	const char *base = strrchr(e->mount_point, '/');
	if (base && sscanf(base, "/stable %u%1s", &i, tail) == 1 && i < STABLE)
		t->stable[i]++;
	else if (base && strcmp(base, "/churn\tx") == 0)
		t->churn++;
	return 0;
}

/* a mount of its own for every stable point, names with a space in them
 * (written escaped), so the table is many pages long */
static void make_stable(void)
{
	for (unsigned i = 0; i < STABLE; i++) {
		char p[128];
		snprintf(p, sizeof(p), "%s/stable %u", dir, i);
		cr_assert_eq(mkdir(p, 0700), 0);
		cr_assert_eq(mount("", p, "tmpfs", 0, "size=4k"), 0, "%m");
	}
}

Test(mountinfo_real, table_that_changes_while_read)
{
	make_stable();
	char churn[128];
	snprintf(churn, sizeof(churn), "%s/churn\tx", dir);
	cr_assert_eq(mkdir(churn, 0700), 0);
	churner = fork();
	cr_assert_geq(churner, 0);
	if (churner == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;) {
			if (mount("c", churn, "tmpfs", 0, "size=4k") == 0)
				(void)umount2(churn, 0);
		}
	}
	unsigned long min_lines = ~0UL, max_lines = 0;
	for (int round = 0; round < 300; round++) {
		char *text = NULL;
		size_t len = 0;
		abox_error err = ABOX_ERROR_INIT;
		cr_assert_eq(mountinfo_read("/proc/self/mountinfo", &text, &len, &err), 0, "%s", err.msg);
		cr_assert_gt(len, 8192, "the table spans several reads");
		struct tally t = { 0 };
		cr_assert_eq(mountinfo_parse(text, count, &t, &err), 0, "round %d: %s", round, err.msg);
		for (unsigned i = 0; i < STABLE; i++)
			cr_assert_eq(t.stable[i], 1, "round %d: stable %u seen %u times", round, i, t.stable[i]);
		cr_assert_leq(t.churn, 1, "round %d: the churning mount seen %u times", round, t.churn);
		if (t.lines < min_lines)
			min_lines = t.lines;
		if (t.lines > max_lines)
			max_lines = t.lines;
		free(text);
	}
	cr_assert_leq(max_lines - min_lines, 1, "lines %lu..%lu", min_lines, max_lines);
}

/* The kernel reports a change of the table through poll: what
 * mountinfo_read relies on to read again. */
Test(mountinfo_real, poll_reports_a_change)
{
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	struct pollfd p = { .fd = fd, .events = POLLPRI };
	cr_assert_eq(poll(&p, 1, 0), 0, "no change yet");
	char m[128];
	snprintf(m, sizeof(m), "%s/p", dir);
	cr_assert_eq(mkdir(m, 0700), 0);
	cr_assert_eq(mount("p", m, "tmpfs", 0, "size=4k"), 0, "%m");
	cr_assert_eq(poll(&p, 1, 0), 1);
	cr_assert_neq(p.revents & POLLPRI, 0, "the mount is reported");
	(void)umount2(m, 0);
	close(fd);
}
