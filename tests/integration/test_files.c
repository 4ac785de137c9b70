/* Files of a running sandbox through abox-init: round trips, precise
 * errors, metadata, listing, moves, removal, path escapes, big files with
 * bounded memory, and `abox cp` both ways. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static char id[ABOX_ID_LEN + 1];

static void init(void)
{
	if (!is_root())
		cr_skip_test("needs root (sandboxes are created for real)");
	leak_check_begin();
	char *made = CREATE("--disk", "300M", "--memory", "1G");
	memcpy(id, made, sizeof(id));
	free(made);
}

static void fini(void)
{
	if (!is_root())
		return;
	ABOX_ANY("kill", id);
	leak_check_end();
}

TestSuite(files, .init = init, .fini = fini, .timeout = 180);

static struct run_result files(const char *stdin_data, const char *const *args)
{
	const char *argv[16] = { "files" };
	size_t n = 1;
	for (size_t i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	struct run_result r;
	run_abox(&r, stdin_data, stdin_data ? strlen(stdin_data) : 0, argv);
	return r;
}
#define FILES(in, ...) files((in), (const char *const[]){ __VA_ARGS__, NULL })
/* `abox files ARGS...`, in on its stdin (NULL: none), checked as ABOX_EXPECT does */
#define FILES_EXPECT(in, status, out, err_has, ...)                                                          \
	run_abox_expect((in), (status), (out), (err_has), (const char *const[]){ "files", __VA_ARGS__, NULL })

Test(files, write_read_round_trip_and_parents)
{
	FILES_EXPECT("hello\nworld\n", 0, NULL, NULL, "write", "-p", id, "/home/user/deep/er/f.txt");
	FILES_EXPECT(NULL, ANY_STATUS, "hello\nworld\n", NULL, "cat", id, "/home/user/deep/er/f.txt");
	/* an empty file is 0 bytes, not an error */
	FILES_EXPECT("", 0, NULL, NULL, "write", id, "/home/user/empty");
	struct run_result r = FILES(NULL, "cat", id, "/home/user/empty");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(r.out_len, 0);
	run_result_free(&r);
	/* without -p a missing parent is an error */
	r = FILES("x", "write", id, "/home/user/nope/f");
	cr_assert_eq(r.status, 125);
	cr_assert(strstr(r.err, "No such file or directory"), "%s", r.err);
	cr_assert(strstr(r.err, "-p makes the missing parent folders"), "%s", r.err);
	run_result_free(&r);
}

Test(files, errors_are_distinct)
{
	struct { const char *op, *path, *user, *want; } cases[] = {
		{ "cat", "/home/user/missing", "user", "No such file or directory" },
		{ "cat", "/root/.bashrc", "user", "Permission denied" },
		{ "cat", "/etc/passwd/x", "user", "Not a directory" },
		{ "cat", "/home/user", "user", "Is a directory" },
		{ "mkdir", "/etc/passwd", "root", "File exists" },
		{ "ls", "/etc/passwd", "user", "Not a directory" },
		{ "rm", "/etc/passwd", "user", "Permission denied" },
		{ "stat", "/nope", "user", "No such file or directory" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct run_result r = FILES(NULL, "--user", cases[i].user, cases[i].op, id, cases[i].path);
		cr_expect_eq(r.status, 125, "%s %s", cases[i].op, cases[i].path);
		cr_expect(strstr(r.err, cases[i].want), "%s %s: %s", cases[i].op, cases[i].path, r.err);
		run_result_free(&r);
	}
	FILES_EXPECT(NULL, 1, NULL, NULL, "exists", id, "/home/user/missing");
	FILES_EXPECT(NULL, 0, NULL, NULL, "exists", id, "/home/user");
	/* removing what is not there succeeds, as envd's RemoveAll, also
	 * below a folder that is not there either */
	FILES_EXPECT(NULL, 0, NULL, NULL, "rm", id, "/home/user/missing");
	FILES_EXPECT(NULL, 0, NULL, NULL, "rm", id, "/home/user/missing/below/it");
}

Test(files, no_space_left)
{
	/* a sandbox with a small writable layer */
	char *small = CREATE("--disk", "8M");
	size_t n = 12 << 20;
	char *big = malloc(n + 1);
	memset(big, 'z', n);
	big[n] = '\0';
	struct run_result r = FILES(big, "write", small, "/home/user/big");
	cr_expect_eq(r.status, 125);
	cr_expect(strstr(r.err, "No space left on device"), "%s", r.err);
	run_result_free(&r);
	free(big);
	ABOX_ANY("kill", small);
	free(small);
}

Test(files, stat_and_list)
{
	ABOX_OK("exec", id, "--", "sh", "-c",
		"mkdir -p /home/user/t/a/b && echo 12345 > /home/user/t/a/f && chmod 640 /home/user/t/a/f && "
		"ln -s /etc/hostname /home/user/t/link");
	struct run_result r = FILES(NULL, "stat", "--json", id, "/home/user/t/a/f");
	cr_assert(strstr(r.out, "\"type\":\"file\""), "%s", r.out);
	cr_assert(strstr(r.out, "\"size\":6"), "%s", r.out);
	cr_assert(strstr(r.out, "\"mode\":416"), "0640: %s", r.out);
	cr_assert(strstr(r.out, "\"owner\":\"user\""), "%s", r.out);
	cr_assert(strstr(r.out, "\"mtimeMs\":"), "%s", r.out);
	run_result_free(&r);
	r = FILES(NULL, "stat", "--json", id, "/home/user/t/link");
	cr_assert(strstr(r.out, "\"type\":\"symlink\""), "%s", r.out);
	cr_assert(strstr(r.out, "\"symlinkTarget\":\"/etc/hostname\""), "%s", r.out);
	run_result_free(&r);
	r = FILES(NULL, "ls", id, "/home/user/t");
	cr_assert(strstr(r.out, "/home/user/t/a") && strstr(r.out, "/home/user/t/link"), "%s", r.out);
	cr_assert_null(strstr(r.out, "/home/user/t/a/f"), "depth 1 only: %s", r.out);
	run_result_free(&r);
	r = FILES(NULL, "ls", "--depth", "3", id, "/home/user/t");
	cr_assert(strstr(r.out, "/home/user/t/a/f") && strstr(r.out, "/home/user/t/a/b"), "%s", r.out);
	run_result_free(&r);
	FILES_EXPECT(NULL, 0, NULL, NULL, "mv", id, "/home/user/t/a", "/home/user/t/moved");
	FILES_EXPECT(NULL, ANY_STATUS, "12345\n", NULL, "cat", id, "/home/user/t/moved/f");
	FILES_EXPECT(NULL, 0, NULL, NULL, "rm", id, "/home/user/t");
	FILES_EXPECT(NULL, 1, NULL, NULL, "exists", id, "/home/user/t");
}

Test(files, paths_cannot_leave_the_sandbox)
{
	/* the host's hostname differs from the sandbox's: whatever path
	 * trick is used, the file read is the sandbox's */
	char host[256] = "";
	gethostname(host, sizeof(host));
	ABOX_OK("exec", id, "--", "sh", "-c", "ln -s / /home/user/rootlink && ln -s /etc /home/user/etclink");
	const char *paths[] = { "/home/user/rootlink/etc/hostname", "/../../../../etc/hostname",
				"/home/user/../../../etc/hostname" };
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct run_result r = FILES(NULL, "--user", "root", "cat", id, paths[i]);
		cr_expect_eq(r.status, 0, "%s: %s", paths[i], r.err);
		char want[32];
		snprintf(want, sizeof(want), "%s\n", id);
		cr_expect_str_eq(r.out, want, "%s leads outside the sandbox", paths[i]);
		run_result_free(&r);
	}
	/* /proc's magic links are not followed at all (see the next test) */
	const char *magic[] = { "/proc/1/root/etc/hostname", "/proc/self/root/etc/hostname" };
	for (size_t i = 0; i < sizeof(magic) / sizeof(magic[0]); i++)
		FILES_EXPECT(NULL, 125, "", "Too many levels of symbolic links", "--user", "root", "cat", id,
			     magic[i]);
	/* writing through a symlink as user: the user's permissions hold */
	FILES_EXPECT("pwned\n", 125, NULL, "Permission denied", "write", id, "/home/user/etclink/passwd");
	(void)host;
}

/* init serves the files API and holds the writable layer's folder open
 * (fd 4, for disk use and snapshots) and the host's cgroup files: as PID
 * 1 it may follow its own /proc/self/fd links, which would lead a
 * request past the overlay into the layer's raw folders (upper/root,
 * work, the l/ links to the lower layers), where a symlink planted in
 * place of upper/root is followed in the host's root at the sandbox's
 * next start. No operation crosses such a link, directly or through a
 * symlink the sandbox made. */
Test(files, init_fds_are_no_way_out)
{
	ABOX_OK("exec", "-u", "root", id, "--", "sh", "-c",
		"ln -sfn /proc/self/fd/4 /tmp/layer; ln -sfn /proc/1/fd /tmp/initfds; mkdir -p /tmp/src");
	const char *ways[] = { "/proc/self/fd/4/upper", "/proc/1/fd/4/upper", "/tmp/layer/upper",
			       "/tmp/initfds/4/upper", "/proc/thread-self/fd/4/upper" };
	for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]); i++) {
		char p[128];
		const char *w = ways[i];
		FILES_EXPECT(NULL, 125, "", NULL, "--user", "root", "ls", id, w);
		FILES_EXPECT(NULL, 125, "", NULL, "--user", "root", "stat", id, w);
		snprintf(p, sizeof(p), "%s/root/etc/hostname", w);
		FILES_EXPECT(NULL, 125, "", NULL, "--user", "root", "cat", id, p);
		snprintf(p, sizeof(p), "%s/planted", w);
		FILES_EXPECT("x", 125, NULL, NULL, "--user", "root", "write", id, p);
		FILES_EXPECT(NULL, 125, NULL, NULL, "--user", "root", "mkdir", id, p);
		FILES_EXPECT(NULL, 125, NULL, NULL, "--user", "root", "mv", id, "/tmp/src", p);
		snprintf(p, sizeof(p), "%s/root/etc", w);
		FILES_EXPECT(NULL, 125, NULL, NULL, "--user", "root", "rm", id, p);
		struct run_result r = FILES(NULL, "--user", "root", "watch", "--timeout", "1", id, w);
		cr_expect_neq(r.status, 0, "watch %s: %s", w, r.out);
		run_result_free(&r);
	}
	/* nothing of it happened: the sandbox's files are as they were */
	FILES_EXPECT(NULL, 0, NULL, NULL, "exists", id, "/etc/hostname");
	FILES_EXPECT(NULL, 0, NULL, NULL, "exists", id, "/tmp/src");
}

static long maxrss_kb_of(const char *const *argv)
{
	pid_t p = fork();
	if (p == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	int st;
	struct rusage ru;
	wait4(p, &st, 0, &ru);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed", argv[1]);
	return ru.ru_maxrss;
}

Test(files, big_file_round_trip_with_bounded_memory)
{
	const char *src = "/tmp/abox-big-src", *back = "/tmp/abox-big-back";
	cr_assert_eq(system("yes 0123456789abcdef | head -c 200M > /tmp/abox-big-src"), 0);
	char dst[64];
	snprintf(dst, sizeof(dst), "%s:/home/user/big", id);
	long in_kb = maxrss_kb_of((const char *const[]){ abox_bin(), "cp", src, dst, NULL });
	long out_kb = maxrss_kb_of((const char *const[]){ abox_bin(), "cp", dst, back, NULL });
	cr_expect_lt(in_kb, 64 * 1024, "copying 200 MiB in used %ld KiB", in_kb);
	cr_expect_lt(out_kb, 64 * 1024, "copying 200 MiB out used %ld KiB", out_kb);
	cr_expect_eq(system("cmp -s /tmp/abox-big-src /tmp/abox-big-back"), 0, "contents differ");
	unlink(src);
	unlink(back);
}

Test(files, cp_folders_both_ways)
{
	cr_assert_eq(system("rm -rf /tmp/abox-cp-in /tmp/abox-cp-out && mkdir -p /tmp/abox-cp-in/sub && "
			    "echo one > /tmp/abox-cp-in/a && echo two > /tmp/abox-cp-in/sub/b"), 0);
	char dst[64];
	snprintf(dst, sizeof(dst), "%s:/home/user/tree", id);
	ABOX_OK("cp", "/tmp/abox-cp-in", dst);
	/* a symlink made inside the sandbox must not steer the copy out */
	ABOX_ANY("exec", id, "--", "ln", "-s", "/etc", "/home/user/tree/evil");
	ABOX_OK("cp", dst, "/tmp/abox-cp-out");
	cr_expect_eq(system("test \"$(cat /tmp/abox-cp-out/a)\" = one && test \"$(cat /tmp/abox-cp-out/sub/b)\" = two"), 0);
	cr_expect_neq(system("test -L /tmp/abox-cp-out/evil"), 0, "a symlink was made on the host");
	cr_assert_eq(system("rm -rf /tmp/abox-cp-in /tmp/abox-cp-out"), 0);
}

Test(files, watch_reports_changes_recursively)
{
	int o, e;
	pid_t w = start_abox(&o, &e, (const char *const[]){ "files", "watch", "-r", "--timeout", "10", "--count", "6",
							      id, "/home/user", NULL });
	usleep(400000);
	/* a new folder's watch comes once its creation is read: what is made
	 * in it before is reported from a look inside (create, write), and a
	 * change of mode needs the watch itself (hence the pause: a loaded
	 * machine may read the event late) */
	ABOX_OK("exec", id, "--", "sh", "-c",
		"mkdir /home/user/w && echo x > /home/user/w/f && sleep 0.5 && chmod 600 /home/user/w/f && "
		"mv /home/user/w/f /home/user/w/g && rm /home/user/w/g");
	char *out = slurp(o);
	free(slurp(e));
	cr_assert_eq(wait_exit(w), 0);
	cr_assert(strstr(out, "create /home/user/w\n"), "%s", out);
	cr_assert(strstr(out, "create /home/user/w/f\n"), "a new folder is watched too: %s", out);
	cr_assert(strstr(out, "write /home/user/w/f\n"), "%s", out);
	cr_assert(strstr(out, "chmod /home/user/w/f\n"), "%s", out);
	cr_assert(strstr(out, "rename /home/user/w/f\n"), "%s", out);
	free(out);
	FILES_EXPECT(NULL, 125, NULL, "Not a directory", "watch", id, "/etc/passwd");
}
