/* Integration-test harness (see harness.h). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "mount/mountinfo.h"

const char *abox_bin(void)
{
	const char *b = getenv("ABOX_BIN");
	return b && *b ? b : "abox";
}

bool is_root(void)
{
	return geteuid() == 0;
}

double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct buf {
	char *p;
	size_t len, cap;
};

static void buf_add(struct buf *b, const char *d, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* abox's binary and then args: the argv of a run of abox (free it) */
static const char **abox_argv(const char *const *args)
{
	size_t n = 0;
	while (args[n])
		n++;
	const char **argv = calloc(n + 2, sizeof(char *));
	argv[0] = abox_bin();
	for (size_t i = 0; i < n; i++)
		argv[i + 1] = args[i];
	return argv;
}

pid_t start_abox(int *out_fd, int *err_fd, const char *const *args)
{
	int o[2], e[2];
	cr_assert_eq(pipe2(o, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(e, O_CLOEXEC), 0);
	const char **argv = abox_argv(args);
	pid_t p = fork();
	cr_assert_geq(p, 0);
	if (p == 0) {
		int null = open("/dev/null", O_RDONLY);
		dup2(null, 0);
		dup2(o[1], 1);
		dup2(e[1], 2);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	free(argv);
	close(o[1]);
	close(e[1]);
	*out_fd = o[0];
	*err_fd = e[0];
	return p;
}

char *slurp(int fd)
{
	struct buf b = { 0 };
	buf_add(&b, "", 0);
	char tmp[4096];
	ssize_t n;
	while ((n = read(fd, tmp, sizeof(tmp))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0)
			buf_add(&b, tmp, (size_t)n);
	close(fd);
	return b.p;
}

int wait_exit(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int run_timeout_s = 60;

static void run_argv(struct run_result *r, const void *stdin_data, size_t stdin_len, const char *const *argv);

void run_abox(struct run_result *r, const void *stdin_data, size_t stdin_len, const char *const *args)
{
	const char **argv = abox_argv(args);
	run_argv(r, stdin_data, stdin_len, argv);
	free(argv);
}

void run_abox_argv(struct run_result *r, const char *const *argv)
{
	run_argv(r, NULL, 0, argv);
}

static void run_argv(struct run_result *r, const void *stdin_data, size_t stdin_len, const char *const *argv)
{
	int in[2], o[2], e[2];
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(o, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(e, O_CLOEXEC), 0);
	double t0 = now_s();
	pid_t p = fork();
	cr_assert_geq(p, 0);
	if (p == 0) {
		dup2(in[0], 0);
		dup2(o[1], 1);
		dup2(e[1], 2);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(in[0]);
	close(o[1]);
	close(e[1]);
	fcntl(in[1], F_SETFL, O_NONBLOCK);
	struct buf ob = { 0 }, eb = { 0 };
	buf_add(&ob, "", 0);
	buf_add(&eb, "", 0);
	size_t sent = 0;
	int infd = in[1];
	if (!stdin_data) {
		close(infd);
		infd = -1;
	}
	bool killed = false;
	while (o[0] >= 0 || e[0] >= 0) {
		struct pollfd pfd[3] = {
			{ .fd = o[0], .events = POLLIN },
			{ .fd = e[0], .events = POLLIN },
			{ .fd = infd, .events = POLLOUT },
		};
		int k = poll(pfd, 3, 1000);
		if (!killed && now_s() - t0 > run_timeout_s) {
			kill(p, SIGKILL);
			killed = true;
		}
		if (k <= 0)
			continue;
		char tmp[65536];
		for (int i = 0; i < 2; i++) {
			int *fd = i == 0 ? &o[0] : &e[0];
			if (*fd >= 0 && pfd[i].revents) {
				ssize_t m = read(*fd, tmp, sizeof(tmp));
				if (m > 0)
					buf_add(i == 0 ? &ob : &eb, tmp, (size_t)m);
				else if (m == 0 || errno != EINTR) {
					close(*fd);
					*fd = -1;
				}
			}
		}
		if (infd >= 0 && pfd[2].revents) {
			ssize_t w = write(infd, (const char *)stdin_data + sent, stdin_len - sent);
			if (w > 0)
				sent += (size_t)w;
			if (w < 0 && errno != EAGAIN) {
				close(infd);
				infd = -1;
			} else if (sent == stdin_len) {
				close(infd);
				infd = -1;
			}
		}
	}
	if (infd >= 0)
		close(infd);
	r->status = wait_exit(p);
	r->seconds = now_s() - t0;
	r->out = ob.p;
	r->out_len = ob.len;
	r->err = eb.p;
}

void run_result_free(struct run_result *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

char *read_whole(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *s = slurp(fd);
	if (len)
		*len = strlen(s);
	return s;
}

static void walk_cgroups(struct buf *b, const char *dir, int depth)
{
	if (depth > 8)
		return;
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		char p[4096];
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (strstr(de->d_name, "abox")) {
			buf_add(b, p, strlen(p));
			buf_add(b, "\n", 1);
		}
		walk_cgroups(b, p, depth + 1);
	}
	closedir(d);
}

/* The cgroups below this test's own, in every hierarchy: sandboxes are
 * made under the cgroup of their creator, so this sees all of ours and
 * none of another test run's on the same machine. */
const char *state_root(void)
{
	const char *r = getenv("ABOX_ROOT");
	return r && *r ? r : "/var/lib/abox";
}

const char *runtime_root(void)
{
	const char *r = getenv("ABOX_RUNTIME_DIR");
	return r && *r ? r : "/run/abox";
}

static void own_cgroups(struct buf *b)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return;
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		const char *ctrls = c1 + 1, *path = c2 + 1;
		if (!strncmp(ctrls, "name=", 5))
			ctrls += 5;
		char cands[3][4200];
		int n = 0;
		if (ctrls[0]) {
			/* v1: the mount is named after its controllers ("cpu,cpuacct")
			 * or after the first of them */
			snprintf(cands[n++], sizeof(cands[0]), "/sys/fs/cgroup/%s%s", ctrls, path);
			snprintf(cands[n++], sizeof(cands[0]), "/sys/fs/cgroup/%.*s%s", (int)strcspn(ctrls, ","), ctrls, path);
		} else {
			/* v2: beside v1 (hybrid) or alone */
			snprintf(cands[n++], sizeof(cands[0]), "/sys/fs/cgroup/unified%s", path);
			snprintf(cands[n++], sizeof(cands[0]), "/sys/fs/cgroup%s", path);
		}
		for (int i = 0; i < n; i++) {
			struct stat st;
			if (stat(cands[i], &st) == 0 && S_ISDIR(st.st_mode)) {
				walk_cgroups(b, cands[i], 0);
				break;
			}
		}
	}
	fclose(f);
}

static int add_mount_point(const struct mountinfo_entry *e, void *ud)
{
	struct buf *b = ud;
	buf_add(b, "mount ", 6);
	buf_add(b, e->mount_point, strlen(e->mount_point));
	buf_add(b, "\n", 1);
	return 0;
}

/* Loop devices bound to a file of this test's state folder (a sandbox's
 * disk): one left bound is a leaked disk. Other runs' devices name other
 * folders. */
static void loop_devices(struct buf *b, const char *root)
{
	char real[4096];
	if (!realpath(root, real))
		return;
	size_t n = strlen(real);
	DIR *d = opendir("/sys/block");
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "loop", 4) != 0)
			continue;
		char p[512];
		snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file", de->d_name);
		char *f = read_whole(p, NULL);
		if (f && strncmp(f, real, n) == 0 && f[n] == '/') {
			buf_add(b, "loop ", 5);
			buf_add(b, f, strcspn(f, "\n"));
			buf_add(b, "\n", 1);
		}
		free(f);
	}
	closedir(d);
}

/* A line "<label><name>" for each entry of dir not starting with a dot. */
static void list_folder(struct buf *b, const char *label, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		buf_add(b, label, strlen(label));
		buf_add(b, de->d_name, strlen(de->d_name));
		buf_add(b, "\n", 1);
	}
	closedir(d);
}

char *leak_snapshot(void)
{
	struct buf b = { 0 };
	buf_add(&b, "", 0);
	/* mount points in order: a leaked or missing mount shows (read and
	 * parsed as abox does: lines of any length, escaped names) */
	char *mi = NULL;
	if (mountinfo_read("/proc/self/mountinfo", &mi, NULL, NULL) == 0) {
		if (mountinfo_parse(mi, add_mount_point, &b, NULL) < 0)
			buf_add(&b, "mountinfo unreadable\n", 21);
		free(mi);
	}
	own_cgroups(&b);
	const char *root = state_root();
	char sdir[4096];
	snprintf(sdir, sizeof(sdir), "%s/sandboxes", root);
	list_folder(&b, "state ", sdir);
	/* snapshots someone asked for (not a fork's, which gc removes once
	 * unused): a failed pause or snapshot must not leave one */
	snprintf(sdir, sizeof(sdir), "%s/snapshots", root);
	DIR *sd = opendir(sdir);
	if (sd) {
		struct dirent *de;
		while ((de = readdir(sd))) {
			if (de->d_name[0] == '.')
				continue;
			char p[4400];
			snprintf(p, sizeof(p), "%s/%s/snapshot.json", sdir, de->d_name);
			char *rec = read_whole(p, NULL);
			if (rec && !strstr(rec, "\"auto\":true")) {
				buf_add(&b, "snapshot ", 9);
				buf_add(&b, de->d_name, strlen(de->d_name));
				buf_add(&b, "\n", 1);
			}
			free(rec);
		}
		closedir(sd);
	}
	loop_devices(&b, root);
	list_folder(&b, "run ", runtime_root());
	return b.p;
}

static char *before;

void leak_check_begin(void)
{
	before = leak_snapshot();
}

void leak_check_end(void)
{
	/* kill() reaps init and removes everything before abox exits, so
	 * no settling time should be needed; allow a short grace for the
	 * kernel to finish tearing down cgroups of exited tasks anyway */
	char *after = NULL;
	for (int i = 0; i < 20; i++) {
		free(after);
		after = leak_snapshot();
		if (strcmp(before, after) == 0)
			break;
		usleep(50000);
	}
	cr_expect_str_eq(after, before, "state changed: something was left behind");
	free(after);
	free(before);
	before = NULL;
}

void sandbox_suite_init(void)
{
	if (!is_root())
		cr_skip_test("needs root (sandboxes are created for real)");
	leak_check_begin();
}

void sandbox_suite_fini(void)
{
	if (is_root())
		leak_check_end();
}

/* "abox ARGS..." for failure messages, cut to fit line. */
static const char *command_line(char *line, size_t n, const char *const *args)
{
	size_t len = (size_t)snprintf(line, n, "abox");
	for (size_t i = 0; args[i] && len < n; i++)
		len += (size_t)snprintf(line + len, n - len, " %s", args[i]);
	return line;
}

char *run_abox_out(const char *const *args)
{
	struct run_result r;
	run_abox(&r, NULL, 0, args);
	char line[512];
	cr_assert_eq(r.status, 0, "%s exited %d: %s", command_line(line, sizeof(line), args), r.status,
		     r.err);
	free(r.err);
	return r.out;
}

void run_abox_ok(const char *const *args)
{
	free(run_abox_out(args));
}

char *run_abox_line(const char *const *args)
{
	char *out = run_abox_out(args);
	out[strcspn(out, "\n")] = '\0';
	return out;
}

void run_abox_any(const char *const *args)
{
	struct run_result r;
	run_abox(&r, NULL, 0, args);
	run_result_free(&r);
}

void run_abox_expect(const char *in, int status, const char *out, const char *err_has,
		     const char *const *args)
{
	struct run_result r;
	run_abox(&r, in, in ? strlen(in) : 0, args);
	char line[512];
	command_line(line, sizeof(line), args);
	if (status == NONZERO)
		cr_assert_neq(r.status, 0, "%s succeeded: %s", line, r.out);
	else if (status != ANY_STATUS)
		cr_assert_eq(r.status, status, "%s exited %d, not %d: %s", line, r.status, status, r.err);
	if (out)
		cr_assert_str_eq(r.out, out, "%s printed '%s', not '%s' (stderr: %s)", line, r.out, out,
				 r.err);
	if (err_has)
		cr_assert(strstr(r.err, err_has), "%s: no '%s' in its stderr: %s", line, err_has, r.err);
	run_result_free(&r);
}

char *create_sandbox(const char *const *extra)
{
	const char *args[32] = { "create" };
	size_t n = 1;
	for (size_t i = 0; extra && extra[i]; i++) {
		cr_assert_lt(n, 31, "too many arguments for create_sandbox");
		args[n++] = extra[i];
	}
	args[n] = NULL;
	char *out = run_abox_out(args);
	cr_assert_eq(strlen(out), 21, "create prints the id: '%s'", out);
	out[20] = '\0';
	return out;
}

void kill_and_free(char *id)
{
	ABOX_OK("kill", id);
	free(id);
}

char *root_sh(const char *id, const char *script)
{
	struct run_result r;
	ABOX(&r, "exec", "--user", "root", id, "--", "sh", "-c", script);
	cr_assert_eq(r.status, 0, "%s: %s", script, r.err);
	free(r.err);
	return r.out;
}

char *sandbox_state(const char *id)
{
	char *out = ABOX_OUT("info", "--json", id);
	json_object *o = json_tokener_parse(out), *v;
	cr_assert(o && json_object_object_get_ex(o, "state", &v), "info --json: %s", out);
	char *s = strdup(json_object_get_string(v));
	json_object_put(o);
	free(out);
	return s;
}

bool proc_running(const char *id, const char *tag)
{
	char *ps = ABOX_OUT("ps", id);
	bool running = false;
	for (char *l = strtok(ps, "\n"); l; l = strtok(NULL, "\n"))
		if (strstr(l, tag))
			running = strstr(l, "running") != NULL;
	free(ps);
	return running;
}

long read_counter(const char *id)
{
	char *out = ABOX_OUT("exec", id, "--", "cat", "/tmp/n");
	long n = atol(out);
	free(out);
	return n;
}

void api_create(abox_ctx **ctx, const abox_sandbox_opts *so, abox_sandbox **sb)
{
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(abox_ctx_new(NULL, ctx, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_sandbox_create(*ctx, so, sb, &err), 0, "%s", err.msg);
}

static char *unusable;

const char *checkpoint_unusable(void)
{
	return unusable;
}

void checkpoint_suite_init(void)
{
	sandbox_suite_init();
	unsetenv("ABOX_CHECKPOINTER");
	/* memory checkpoints are refused with a user namespace */
	setenv("ABOX_USERNS", "off", 1);
	struct run_result r;
	ABOX(&r, "doctor");
	const char *why = strstr(r.out, "cannot checkpoint on this kernel");
	if (why && !strstr(r.out, "ok    checkpointer")) {
		unusable = strndup(why, strcspn(why, "\n"));
		run_result_free(&r);
		return;
	}
	cr_assert(strstr(r.out, "ok    checkpointer"),
		  "no working checkpointer (CI runs scripts/criu-setup.sh first):\n%s", r.out);
	run_result_free(&r);
}
