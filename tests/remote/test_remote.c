/* The remote backend against a live aboxd (tests/remote/run.py starts it
 * and sets ABOX_REMOTE/ABOX_API_KEY): the public API, unchanged, driving
 * sandboxes over HTTP. Every test kills what it made. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <abox/abox.h>

static abox_ctx *ctx;

static void setup(void)
{
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_not_null(getenv("ABOX_REMOTE"), "run through tests/remote/run.py");
	cr_assert_eq(abox_ctx_new(NULL, &ctx, &err), 0, "%s", err.msg);
}

static void teardown(void)
{
	abox_ctx_free(ctx);
}

TestSuite(remote, .init = setup, .fini = teardown, .timeout = 120);

struct out {
	char so[65536], se[65536];
	size_t nso, nse;
	uint64_t total;
	int pid, code, sig;
	char error[256];
	bool ended;
};

static void on_ev(const abox_event *ev, void *ud)
{
	struct out *o = ud;
	switch (ev->type) {
	case ABOX_EVENT_START:
		o->pid = ev->pid;
		break;
	case ABOX_EVENT_STDOUT:
	case ABOX_EVENT_PTY:
		o->total += ev->len;
		if (o->nso + ev->len < sizeof(o->so)) {
			memcpy(o->so + o->nso, ev->data, ev->len);
			o->nso += ev->len;
		}
		break;
	case ABOX_EVENT_STDERR:
		if (o->nse + ev->len < sizeof(o->se)) {
			memcpy(o->se + o->nse, ev->data, ev->len);
			o->nse += ev->len;
		}
		break;
	case ABOX_EVENT_END:
		o->ended = true;
		o->code = ev->exit_code;
		o->sig = ev->signal;
		if (ev->error)
			snprintf(o->error, sizeof(o->error), "%s", ev->error);
		break;
	}
}

static abox_sandbox *make(const char *const *meta, const char *const *env)
{
	abox_sandbox_opts o = ABOX_SANDBOX_OPTS_INIT;
	o.metadata = meta;
	o.env = env;
	o.timeout_ms = 120000;
	abox_sandbox *sb = NULL;
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(abox_sandbox_create(ctx, &o, &sb, &err), 0, "create: %s", err.msg);
	return sb;
}

static void drop(abox_sandbox *sb)
{
	abox_error err = ABOX_ERROR_INIT;
	cr_expect_eq(abox_sandbox_kill(sb, &err), 0, "kill: %s", err.msg);
	abox_sandbox_free(sb);
}

/* starts a process as po says (asserted) */
static abox_proc *start(abox_sandbox *sb, const abox_proc_opts *po)
{
	abox_proc *p = NULL;
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(abox_proc_start(sb, po, &p, &err), 0, "start: %s", err.msg);
	return p;
}

/* runs argv to its end; returns the output */
static struct out *run(abox_sandbox *sb, const char *user, const char *const *argv)
{
	struct out *o = calloc(1, sizeof(*o));
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	po.argv = argv;
	po.user = user;
	abox_proc *p = start(sb, &po);
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_gt(abox_proc_pid(p), 0);
	cr_assert_eq(abox_proc_wait(p, 60000, on_ev, o, &err), 1, "wait: %s", err.msg);
	abox_proc_free(p);
	return o;
}

/* runs argv to its end and expects its stdout to be want */
static void expect_prints(abox_sandbox *sb, const char *user, const char *const *argv, const char *want)
{
	struct out *o = run(sb, user, argv);
	cr_expect_str_eq(o->so, want, "%s", argv[0]);
	free(o);
}

/* a sandbox (as make makes it) holding the file path with text in it */
static abox_sandbox *make_with_file(const char *path, const char *text)
{
	abox_sandbox *sb = make(NULL, NULL);
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(abox_file_write(sb, path, NULL, text, strlen(text), 0, &err), 0, "%s", err.msg);
	return sb;
}

Test(remote, lifecycle_metadata_list_kill)
{
	char tag[40];
	snprintf(tag, sizeof(tag), "run=%d", getpid());
	const char *meta[] = { tag, "team=remote", NULL };
	abox_sandbox *sb = make(meta, NULL);
	const char *id = abox_sandbox_id(sb);
	cr_assert_eq(strlen(id), 20);

	abox_sandbox_info in = { .version = ABOX_SANDBOX_INFO_VERSION };
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(abox_sandbox_info_get(ctx, id, &in, &err), 0, "%s", err.msg);
	cr_expect_eq(in.state, ABOX_STATE_RUNNING);
	cr_expect_str_eq(in.id, id);
	cr_expect_gt(in.deadline_ms, in.created_ms);
	cr_expect(in.metadata_json && strstr(in.metadata_json, "\"team\":\"remote\""), "%s", in.metadata_json);
	abox_sandbox_info_clear(&in);

	/* the metadata filter finds it, and only it */
	abox_list_opts lo = ABOX_LIST_OPTS_INIT;
	const char *filter[] = { tag, NULL };
	lo.metadata = filter;
	abox_sandbox_info *v = NULL;
	size_t n = 0;
	cr_assert_eq(abox_sandbox_query(ctx, &lo, &v, &n, NULL, &err), 0, "%s", err.msg);
	cr_expect_eq(n, 1);
	if (n)
		cr_expect_str_eq(v[0].id, id);
	for (size_t i = 0; i < n; i++)
		abox_sandbox_info_clear(&v[i]);
	free(v);

	/* a connect by id sees the same sandbox */
	abox_sandbox *again = NULL;
	cr_assert_eq(abox_sandbox_connect(ctx, id, &again, &err), 0, "%s", err.msg);
	const char *echo[] = { "echo", "via connect", NULL };
	expect_prints(again, NULL, echo, "via connect\n");
	abox_sandbox_free(again);

	char saved[ABOX_ID_LEN + 1];
	snprintf(saved, sizeof(saved), "%s", id);
	drop(sb);
	cr_expect_eq(abox_sandbox_info_get(ctx, saved, &in, &err), -ENOENT, "after kill: %s", err.msg);
	cr_expect_eq(abox_sandbox_connect(ctx, saved, &again, &err), -ENOENT);
	cr_expect_eq(abox_sandbox_connect(ctx, "../../etc/passwd", &again, &err), -ENOENT);
}

Test(remote, pagination)
{
	char tag[40];
	snprintf(tag, sizeof(tag), "page=%d", getpid());
	const char *meta[] = { tag, NULL };
	abox_sandbox *sbs[3];
	for (int i = 0; i < 3; i++)
		sbs[i] = make(meta, NULL);
	abox_list_opts lo = ABOX_LIST_OPTS_INIT;
	const char *filter[] = { tag, NULL };
	lo.metadata = filter;
	lo.limit = 2;
	abox_error err = ABOX_ERROR_INIT;
	size_t seen = 0, pages = 0;
	char *next = NULL;
	do {
		abox_sandbox_info *v = NULL;
		size_t n = 0;
		char *tok = next;
		lo.next_token = tok;
		cr_assert_eq(abox_sandbox_query(ctx, &lo, &v, &n, &next, &err), 0, "%s", err.msg);
		free(tok);
		seen += n;
		pages++;
		for (size_t i = 0; i < n; i++)
			abox_sandbox_info_clear(&v[i]);
		free(v);
	} while (next && pages < 10);
	cr_expect_eq(seen, 3);
	cr_expect_eq(pages, 2);
	for (int i = 0; i < 3; i++)
		drop(sbs[i]);
}

Test(remote, commands_streams_env_users)
{
	const char *env[] = { "FOO=from-create", NULL };
	abox_sandbox *sb = make(NULL, env);
	const char *sh[] = { "sh", "-c", "echo out; echo err >&2; echo $FOO; exit 3", NULL };
	struct out *o = run(sb, NULL, sh);
	cr_expect_str_eq(o->so, "out\nfrom-create\n");
	cr_expect_str_eq(o->se, "err\n");
	cr_expect_eq(o->code, 3);
	cr_expect_gt(o->pid, 0);
	free(o);

	const char *id[] = { "id", "-u", NULL };
	expect_prints(sb, "root", id, "0\n");
	expect_prints(sb, NULL, id, "1000\n");

	/* 5 MB of output arrives whole, in order of arrival */
	const char *big[] = { "head", "-c", "5000000", "/dev/zero", NULL };
	o = run(sb, NULL, big);
	cr_expect_eq(o->total, 5000000);
	cr_expect_eq(o->code, 0);
	free(o);

	/* a command that does not exist: a clear failure, not a hang */
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	const char *none[] = { "no-such-command-xyz", NULL };
	po.argv = none;
	abox_proc *p = NULL;
	abox_error err = ABOX_ERROR_INIT;
	int r = abox_proc_start(sb, &po, &p, &err);
	if (r == 0) {
		struct out ne = { 0 };
		cr_expect_eq(abox_proc_wait(p, 30000, on_ev, &ne, &err), 1, "%s", err.msg);
		cr_expect(ne.error[0] && strstr(ne.error, "no-such-command-xyz"), "error: '%s'", ne.error);
		cr_expect_neq(ne.code, 0);
		abox_proc_free(p);
	} else {
		cr_expect(strstr(err.msg, "no-such-command-xyz"), "%s", err.msg);
	}
	drop(sb);
}

Test(remote, stdin_and_signals)
{
	abox_sandbox *sb = make(NULL, NULL);
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	const char *cat[] = { "cat", NULL };
	po.argv = cat;
	po.flags = ABOX_PROC_STDIN;
	abox_proc *p = start(sb, &po);
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(abox_proc_write_stdin(p, "hello ", 6, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_proc_write_stdin(p, "remote\n", 7, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_proc_close_stdin(p, &err), 0, "%s", err.msg);
	struct out o = { 0 };
	cr_assert_eq(abox_proc_wait(p, 30000, on_ev, &o, &err), 1, "%s", err.msg);
	cr_expect_str_eq(o.so, "hello remote\n");
	cr_expect_eq(o.code, 0);
	abox_proc_free(p);

	/* SIGKILL reaches the whole group: the shell and its sleeper */
	const char *sl[] = { "sh", "-c", "sleep 300 & sleep 300", NULL };
	po = (abox_proc_opts)ABOX_PROC_OPTS_INIT;
	po.argv = sl;
	p = start(sb, &po);
	cr_assert_eq(abox_proc_signal(p, SIGKILL, &err), 0, "%s", err.msg);
	struct out k = { 0 };
	cr_assert_eq(abox_proc_wait(p, 30000, on_ev, &k, &err), 1, "%s", err.msg);
	cr_expect_eq(k.sig, SIGKILL);
	cr_expect_eq(k.code, 128 + SIGKILL);
	abox_proc_free(p);
	const char *ps[] = { "sh", "-c", "pgrep -c sleep || true", NULL };
	expect_prints(sb, "root", ps, "0\n");

	/* a handle freed while its process runs: the call returns at once
	 * and the process runs on */
	const char *bg[] = { "sleep", "300", NULL };
	po = (abox_proc_opts)ABOX_PROC_OPTS_INIT;
	po.argv = bg;
	p = start(sb, &po);
	abox_proc_free(p);
	expect_prints(sb, "root", ps, "1\n");
	drop(sb);
}

static int collect(const void *d, size_t n, void *ud)
{
	FILE *f = ud;
	return fwrite(d, 1, n, f) == n ? 0 : 1;
}

static int stop_early(const void *d, size_t n, void *ud)
{
	(void)d;
	(void)n;
	(void)ud;
	return 1;
}

Test(remote, files)
{
	abox_sandbox *sb = make(NULL, NULL);
	abox_error err = ABOX_ERROR_INIT;
	size_t len = 3u << 20;
	char *data = malloc(len);
	for (size_t i = 0; i < len; i++)
		data[i] = (char)(i * 7 + i / 4096);
	cr_assert_eq(abox_file_write(sb, "/home/user/d/sub/blob", NULL, data, len, 1, &err), 0, "%s", err.msg);

	char *back = NULL;
	size_t blen = 0;
	FILE *f = open_memstream(&back, &blen);
	uint64_t size = 0;
	cr_assert_eq(abox_file_read(sb, "/home/user/d/sub/blob", NULL, collect, f, &size, &err), 0, "%s", err.msg);
	fclose(f);
	cr_expect_eq(size, len);
	cr_expect_eq(blen, len);
	cr_expect(blen == len && memcmp(back, data, len) == 0, "the bytes differ");
	free(back);
	cr_expect_eq(abox_file_read(sb, "/home/user/d/sub/blob", NULL, stop_early, NULL, NULL, &err), -ECANCELED);

	abox_file_info fi;
	cr_assert_eq(abox_file_stat(sb, "/home/user/d/sub/blob", NULL, &fi, &err), 0, "%s", err.msg);
	cr_expect_eq(fi.type, ABOX_FILE_REGULAR);
	cr_expect_eq(fi.size, len);
	cr_expect_eq(fi.uid, 1000);
	cr_expect_str_eq(fi.name, "blob");

	/* an empty file is 0 bytes, a missing one is ENOENT */
	cr_assert_eq(abox_file_write(sb, "/tmp/empty", NULL, "", 0, 0, &err), 0, "%s", err.msg);
	size = 99;
	cr_expect_eq(abox_file_read(sb, "/tmp/empty", NULL, collect, stderr, &size, &err), 0, "%s", err.msg);
	cr_expect_eq(size, 0);
	cr_expect_eq(abox_file_read(sb, "/tmp/none", NULL, collect, stderr, &size, &err), -ENOENT, "%s", err.msg);
	cr_expect_eq(abox_file_stat(sb, "/tmp/none", NULL, &fi, &err), -ENOENT, "%s", err.msg);
	cr_expect_eq(abox_file_stat(sb, "/tmp/empty/x", NULL, &fi, &err), -ENOTDIR, "%s", err.msg);
	/* as user, root's files stay closed */
	cr_expect_eq(abox_file_read(sb, "/root/.bashrc", NULL, collect, stderr, &size, &err), -EACCES, "%s", err.msg);

	int made = -1, exists = -1;
	cr_assert_eq(abox_file_mkdir(sb, "/home/user/m/n", NULL, &made, &err), 0, "%s", err.msg);
	cr_expect_eq(made, 1);
	cr_assert_eq(abox_file_mkdir(sb, "/home/user/m/n", NULL, &made, &err), 0, "%s", err.msg);
	cr_expect_eq(made, 0);
	cr_assert_eq(abox_file_move(sb, "/home/user/d/sub/blob", "/home/user/m/n/moved", NULL, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_file_exists(sb, "/home/user/m/n/moved", NULL, &exists, &err), 0, "%s", err.msg);
	cr_expect_eq(exists, 1);
	cr_assert_eq(abox_file_exists(sb, "/home/user/d/sub/blob", NULL, &exists, &err), 0, "%s", err.msg);
	cr_expect_eq(exists, 0);

	abox_file_info *v = NULL;
	size_t n = 0;
	cr_assert_eq(abox_file_list(sb, "/home/user/m", NULL, 2, &v, &n, &err), 0, "%s", err.msg);
	bool dir = false, file = false;
	for (size_t i = 0; i < n; i++) {
		dir |= !strcmp(v[i].path, "/home/user/m/n") && v[i].type == ABOX_FILE_DIR;
		file |= !strcmp(v[i].path, "/home/user/m/n/moved") && v[i].size == len;
	}
	cr_expect(dir && file, "list depth 2 has the folder and the file (%zu entries)", n);
	free(v);

	cr_assert_eq(abox_file_remove(sb, "/home/user/m", NULL, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_file_exists(sb, "/home/user/m", NULL, &exists, &err), 0, "%s", err.msg);
	cr_expect_eq(exists, 0);

	/* from a descriptor, in chunks: 20 MiB never held whole */
	int fd = memfd_create("src", MFD_CLOEXEC);
	cr_assert_geq(fd, 0);
	for (int i = 0; i < 20; i++)
		cr_assert_eq(write(fd, data, 1u << 20), 1 << 20);
	lseek(fd, 0, SEEK_SET);
	cr_assert_eq(abox_file_write_fd(sb, "/tmp/from-fd", "root", fd, 0, &size, &err), 0, "%s", err.msg);
	close(fd);
	cr_expect_eq(size, 20u << 20);
	cr_assert_eq(abox_file_stat(sb, "/tmp/from-fd", "root", &fi, &err), 0, "%s", err.msg);
	cr_expect_eq(fi.size, 20u << 20);
	cr_expect_eq(fi.uid, 0);
	free(data);
	drop(sb);
}

Test(remote, pause_resume_timeout_metrics)
{
	abox_sandbox *sb = make_with_file("/tmp/kept", "kept");
	abox_error err = ABOX_ERROR_INIT;

	abox_metrics m = { .version = ABOX_METRICS_VERSION };
	cr_assert_eq(abox_sandbox_metrics(sb, &m, &err), 0, "%s", err.msg);
	cr_expect_gt(m.mem_limit, 0);
	cr_expect_gt(m.timestamp_ms, 0);

	cr_assert_eq(abox_sandbox_set_timeout(sb, 600000, &err), 0, "%s", err.msg);
	abox_sandbox_info in = { .version = ABOX_SANDBOX_INFO_VERSION };
	cr_assert_eq(abox_sandbox_info_get(ctx, abox_sandbox_id(sb), &in, &err), 0, "%s", err.msg);
	int64_t left = in.deadline_ms - in.created_ms;
	cr_expect(left > 500000 && left < 700000, "deadline %lld ms after create", (long long)left);
	abox_sandbox_info_clear(&in);

	cr_assert_eq(abox_sandbox_pause(sb, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_sandbox_info_get(ctx, abox_sandbox_id(sb), &in, &err), 0, "%s", err.msg);
	cr_expect_eq(in.state, ABOX_STATE_PAUSED);
	abox_sandbox_info_clear(&in);
	cr_expect_eq(abox_sandbox_pause(sb, &err), -EALREADY, "%s", err.msg);

	cr_assert_eq(abox_sandbox_resume(sb, &err), 0, "%s", err.msg);
	cr_expect_eq(abox_sandbox_resume(sb, &err), -EALREADY, "%s", err.msg);
	const char *cat[] = { "cat", "/tmp/kept", NULL };
	expect_prints(sb, NULL, cat, "kept");
	drop(sb);
}

Test(remote, snapshots)
{
	abox_sandbox *sb = make_with_file("/home/user/snap.txt", "in the snapshot");
	abox_error err = ABOX_ERROR_INIT;
	abox_snapshot_info s = { .version = ABOX_SNAPSHOT_INFO_VERSION };
	char name[64];
	snprintf(name, sizeof(name), "remote-test-%d", getpid());
	cr_assert_eq(abox_sandbox_snapshot(sb, name, &s, &err), 0, "%s", err.msg);
	cr_expect_eq(strlen(s.id), 20);

	abox_snapshot_info *v = NULL;
	size_t n = 0;
	bool listed = false;
	cr_assert_eq(abox_snapshot_list(ctx, &v, &n, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < n; i++)
		listed |= !strcmp(v[i].id, s.id) && !strcmp(v[i].name, name);
	free(v);
	cr_expect(listed, "the snapshot is listed with its name");

	abox_sandbox_opts o = ABOX_SANDBOX_OPTS_INIT;
	o.snapshot = s.id;
	o.timeout_ms = 60000;
	abox_sandbox *child = NULL;
	cr_assert_eq(abox_sandbox_create(ctx, &o, &child, &err), 0, "%s", err.msg);
	const char *cat[] = { "cat", "/home/user/snap.txt", NULL };
	expect_prints(child, NULL, cat, "in the snapshot");
	drop(child);
	drop(sb);
	cr_expect_eq(abox_snapshot_remove(ctx, s.id, &err), 0, "%s", err.msg);
}

Test(remote, ephemeral_handle_ends_its_sandbox)
{
	abox_sandbox_opts o = ABOX_SANDBOX_OPTS_INIT;
	o.flags = ABOX_SANDBOX_EPHEMERAL;
	abox_sandbox *sb = NULL;
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(abox_sandbox_create(ctx, &o, &sb, &err), 0, "%s", err.msg);
	char id[ABOX_ID_LEN + 1];
	snprintf(id, sizeof(id), "%s", abox_sandbox_id(sb));
	abox_sandbox_free(sb);
	abox_sandbox_info in = { .version = ABOX_SANDBOX_INFO_VERSION };
	cr_expect_eq(abox_sandbox_info_get(ctx, id, &in, &err), -ENOENT);
}

Test(remote, errors_name_the_cause)
{
	abox_error err = ABOX_ERROR_INIT;
	/* a wrong key is refused */
	abox_ctx_opts co = ABOX_CTX_OPTS_INIT;
	co.remote_url = getenv("ABOX_REMOTE");
	co.api_key = "e2b_0000000000000000000000000000000000000000";
	abox_ctx *bad = NULL;
	cr_assert_eq(abox_ctx_new(&co, &bad, &err), 0, "%s", err.msg);
	abox_sandbox *sb = NULL;
	cr_expect_eq(abox_sandbox_create(bad, NULL, &sb, &err), -EACCES, "%s", err.msg);
	abox_ctx_free(bad);

	/* nobody listening: refused after the retries, naming the call */
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%s", getenv("ABOX_TEST_DEAD_PORT"));
	co.remote_url = url;
	cr_assert_eq(abox_ctx_new(&co, &bad, &err), 0, "%s", err.msg);
	abox_sandbox_info in = { .version = ABOX_SANDBOX_INFO_VERSION };
	cr_expect_eq(abox_sandbox_info_get(bad, "aaaaaaaaaaaaaaaaaaaa", &in, &err), -ECONNREFUSED, "%s", err.msg);
	cr_expect(strstr(err.msg, "GET /sandboxes/aaaaaaaaaaaaaaaaaaaa"), "%s", err.msg);
	abox_ctx_free(bad);

	/* a URL that is not one */
	co.remote_url = "ftp://x";
	cr_expect_eq(abox_ctx_new(&co, &bad, &err), -EINVAL);
	cr_expect(strstr(err.msg, "ftp://x"), "%s", err.msg);

	/* what the protocol does not carry says so */
	char **names = NULL;
	cr_expect_eq(abox_template_list(ctx, &names, &err), -EOPNOTSUPP);
	cr_expect(strstr(err.msg, "remote"), "%s", err.msg);
	abox_sandbox_opts o = ABOX_SANDBOX_OPTS_INIT;
	o.template_name = "no-such-template";
	cr_expect_eq(abox_sandbox_create(ctx, &o, &sb, &err), -ENOENT, "%s", err.msg);
}

Test(remote, background_attach_ps_pty)
{
	abox_sandbox *sb = make(NULL, NULL);
	abox_error err = ABOX_ERROR_INIT;
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	const char *bg[] = { "sh", "-c", "echo early; sleep 0.3; echo late; sleep 300", NULL };
	po.argv = bg;
	po.tag = "bg";
	abox_proc *p = start(sb, &po);
	int pid = abox_proc_pid(p);
	abox_proc_free(p); /* detached: it runs on */

	abox_proc_info *v = NULL;
	size_t n = 0;
	bool found = false;
	cr_assert_eq(abox_proc_list(sb, &v, &n, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < n; i++)
		found |= v[i].pid == pid && !strcmp(v[i].tag, "bg") && v[i].running && strstr(v[i].cmd, "sleep 300");
	free(v);
	cr_expect(found, "ps lists the background process with its tag and command");

	/* attach by tag: kept output first, then live output */
	cr_assert_eq(abox_proc_attach(sb, 0, "bg", &p, &err), 0, "%s", err.msg);
	struct out o = { 0 };
	for (int i = 0; i < 100 && !strstr(o.so, "late"); i++)
		cr_assert_geq(abox_proc_wait(p, 50, on_ev, &o, &err) == -ETIMEDOUT ? 0 : 0, 0);
	cr_expect_str_eq(o.so, "early\nlate\n");
	cr_assert_eq(abox_proc_signal(p, SIGTERM, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_proc_wait(p, 30000, on_ev, &o, &err), 1, "%s", err.msg);
	cr_expect_eq(o.sig, SIGTERM);
	abox_proc_free(p);
	/* an unknown tag: no such process, at attach or at the first wait */
	int r = abox_proc_attach(sb, 0, "no-such-tag", &p, &err);
	if (r == 0) {
		r = abox_proc_wait(p, 30000, on_ev, &o, &err);
		abox_proc_free(p);
	}
	cr_expect(r == -ESRCH || r == -ENOENT, "attach to an unknown tag: %d %s", r, err.msg);

	/* a terminal: its size follows resize */
	po = (abox_proc_opts)ABOX_PROC_OPTS_INIT;
	const char *shell[] = { "sh", NULL };
	po.argv = shell;
	po.pty_rows = 24;
	po.pty_cols = 80;
	p = start(sb, &po);
	cr_assert_eq(abox_proc_resize(p, 30, 100, &err), 0, "%s", err.msg);
	const char *line = "stty size; exit 7\n";
	cr_assert_eq(abox_proc_write_stdin(p, line, strlen(line), &err), 0, "%s", err.msg);
	struct out t = { 0 };
	cr_assert_eq(abox_proc_wait(p, 30000, on_ev, &t, &err), 1, "%s", err.msg);
	cr_expect(strstr(t.so, "30 100"), "terminal output: %s", t.so);
	cr_expect_eq(t.code, 7);
	abox_proc_free(p);
	drop(sb);
}

Test(remote, fork)
{
	abox_sandbox *sb = make_with_file("/tmp/before-fork", "x");
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *forks[2] = { 0 };
	abox_error errs[2];
	cr_assert_eq(abox_sandbox_fork(sb, 2, 60000, forks, errs, &err), 2, "%s", err.msg);
	for (int i = 0; i < 2; i++) {
		cr_assert_not_null(forks[i], "%s", errs[i].msg);
		cr_expect_str_neq(abox_sandbox_id(forks[i]), abox_sandbox_id(sb));
		int exists = 0;
		cr_expect_eq(abox_file_exists(forks[i], "/tmp/before-fork", NULL, &exists, &err), 0, "%s", err.msg);
		cr_expect_eq(exists, 1);
		drop(forks[i]);
	}
	drop(sb);
}

/* ---- retries: a daemon stand-in that answers 503 to what it is told ---- */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

static atomic_int flaky_starts, flaky_creates, flaky_infos;
static int flaky_fd;

static void *flaky_serve(void *arg)
{
	(void)arg;
	for (;;) {
		int c = accept(flaky_fd, NULL, NULL);
		if (c < 0)
			return NULL;
		char req[8192];
		size_t n = 0;
		ssize_t k;
		while (n < sizeof(req) - 1 && (k = read(c, req + n, sizeof(req) - 1 - n)) > 0) {
			n += (size_t)k;
			req[n] = '\0';
			char *end = strstr(req, "\r\n\r\n");
			const char *cl = strcasestr(req, "content-length:");
			if (end && (size_t)(end + 4 - req) + (cl ? strtoul(cl + 15, NULL, 10) : 0) <= n)
				break;
		}
		req[n] = '\0';
		const char *body;
		int status;
		if (!strncmp(req, "GET /sandboxes/", 15)) {
			atomic_fetch_add(&flaky_infos, 1);
			status = 200;
			body = "{\"sandboxID\":\"aaaaaaaaaaaaaaaaaaaa\",\"state\":\"running\"}";
		} else {
			if (!strncmp(req, "POST /process.Process/Start", 27))
				atomic_fetch_add(&flaky_starts, 1);
			else if (!strncmp(req, "POST /sandboxes ", 16))
				atomic_fetch_add(&flaky_creates, 1);
			status = 503;
			body = "{\"code\":503,\"message\":\"overloaded\"}";
		}
		char reply[512];
		snprintf(reply, sizeof(reply),
			 "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
			 status, status == 200 ? "OK" : "Service Unavailable", strlen(body), body);
		(void)!write(c, reply, strlen(reply));
		close(c);
	}
}

Test(remote, retries_only_what_may_run_twice)
{
	flaky_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	cr_assert_eq(bind(flaky_fd, (struct sockaddr *)&a, sizeof(a)), 0);
	socklen_t al = sizeof(a);
	getsockname(flaky_fd, (struct sockaddr *)&a, &al);
	cr_assert_eq(listen(flaky_fd, 16), 0);
	pthread_t t;
	pthread_create(&t, NULL, flaky_serve, NULL);

	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(a.sin_port));
	abox_ctx_opts co = ABOX_CTX_OPTS_INIT;
	co.remote_url = url;
	co.api_key = "e2b_0000000000000000000000000000000000000000";
	abox_ctx *fc = NULL;
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(abox_ctx_new(&co, &fc, &err), 0, "%s", err.msg);

	/* a create is never repeated: it could make two sandboxes */
	abox_sandbox *sb = NULL;
	cr_expect_lt(abox_sandbox_create(fc, NULL, &sb, &err), 0);
	cr_expect_eq(atomic_load(&flaky_creates), 1);
	cr_expect(strstr(err.msg, "overloaded"), "%s", err.msg);

	cr_assert_eq(abox_sandbox_connect(fc, "aaaaaaaaaaaaaaaaaaaa", &sb, &err), 0, "%s", err.msg);
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	const char *argv[] = { "true", NULL };
	po.argv = argv;
	abox_proc *p = NULL;
	cr_expect_lt(abox_proc_start(sb, &po, &p, &err), 0);
	cr_expect_eq(atomic_load(&flaky_starts), 1, "a plain command starts once");
	po.flags = ABOX_PROC_IDEMPOTENT;
	cr_expect_lt(abox_proc_start(sb, &po, &p, &err), 0);
	cr_expect_eq(atomic_load(&flaky_starts), 4, "an idempotent one is tried three times");
	cr_expect(strstr(err.msg, "overloaded"), "%s", err.msg);
	abox_sandbox_free(sb);
	abox_ctx_free(fc);
	shutdown(flaky_fd, SHUT_RDWR);
	close(flaky_fd);
	pthread_join(t, NULL);
}

struct seen {
	char paths[32][256];
	int types[32];
	int n;
};

static int on_fs(abox_fs_event_type t, const char *path, void *ud)
{
	struct seen *s = ud;
	if (s->n < 32) {
		snprintf(s->paths[s->n], sizeof(s->paths[0]), "%s", path);
		s->types[s->n++] = (int)t;
	}
	return 0;
}

static bool saw(const struct seen *s, abox_fs_event_type t, const char *path)
{
	for (int i = 0; i < s->n; i++)
		if (s->types[i] == (int)t && !strcmp(s->paths[i], path))
			return true;
	return false;
}

Test(remote, watch)
{
	abox_sandbox *sb = make(NULL, NULL);
	abox_error err = ABOX_ERROR_INIT;
	int made;
	cr_assert_eq(abox_file_mkdir(sb, "/home/user/w/sub", NULL, &made, &err), 0, "%s", err.msg);
	/* a watch holds its own handle */
	abox_sandbox *wh = NULL;
	cr_assert_eq(abox_sandbox_connect(ctx, abox_sandbox_id(sb), &wh, &err), 0, "%s", err.msg);
	abox_watch *w = NULL;
	cr_assert_eq(abox_watch_start(wh, "/home/user/w", NULL, 1, &w, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_file_write(sb, "/home/user/w/a.txt", NULL, "x", 1, 0, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_file_write(sb, "/home/user/w/sub/b.txt", NULL, "y", 1, 0, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_file_remove(sb, "/home/user/w/a.txt", NULL, &err), 0, "%s", err.msg);
	struct seen s = { 0 };
	for (int i = 0; i < 100 && !(saw(&s, ABOX_FS_REMOVE, "/home/user/w/a.txt") &&
				     saw(&s, ABOX_FS_CREATE, "/home/user/w/sub/b.txt")); i++) {
		struct pollfd p = { .fd = abox_watch_fd(w), .events = POLLIN };
		(void)poll(&p, 1, 50);
		cr_assert_geq(abox_watch_dispatch(w, on_fs, &s, &err), 0, "%s", err.msg);
	}
	cr_expect(saw(&s, ABOX_FS_CREATE, "/home/user/w/a.txt"), "create of a.txt (%d events)", s.n);
	cr_expect(saw(&s, ABOX_FS_CREATE, "/home/user/w/sub/b.txt"), "recursive: create in sub (%d events)", s.n);
	cr_expect(saw(&s, ABOX_FS_REMOVE, "/home/user/w/a.txt"), "remove of a.txt (%d events)", s.n);
	abox_watch_free(w);
	/* the handle is free again */
	const char *t[] = { "true", NULL };
	struct out *o = run(wh, NULL, t);
	cr_expect_eq(o->code, 0);
	free(o);
	abox_sandbox_free(wh);

	/* the blocking form ends at its timeout */
	struct seen s2 = { 0 };
	cr_expect_eq(abox_file_watch(sb, "/home/user/w", NULL, 0, 200, on_fs, &s2, &err), 0, "%s", err.msg);
	cr_expect_eq(abox_watch_start(sb, "/home/user/none", NULL, 0, &w, &err), -ENOENT, "%s", err.msg);
	drop(sb);
}

Test(remote, truncation_keeps_the_whole_output_in_the_sandbox)
{
	abox_sandbox *sb = make(NULL, NULL);
	abox_error err = ABOX_ERROR_INIT;
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	const char *argv[] = { "sh", "-c", "seq 1 20000; echo oops >&2", NULL };
	po.argv = argv;
	po.truncate_threshold = 1000;
	po.truncate_head = 100;
	po.truncate_tail = 100;
	abox_proc *p = start(sb, &po);
	cr_assert_eq(abox_proc_wait(p, 30000, NULL, NULL, &err), 1, "%s", err.msg);
	abox_proc_result res = { .version = ABOX_PROC_RESULT_VERSION };
	cr_assert_eq(abox_proc_result_get(p, &res, &err), 0, "%s", err.msg);
	cr_expect_eq(res.truncated, 1);
	cr_expect_eq(res.stdout_bytes, 108894); /* seq 1 20000 */
	cr_expect(strstr(res.stdout_text, "characters omitted") && strstr(res.stdout_text, "stdout.txt"), "%s",
		  res.stdout_text);
	cr_expect(strncmp(res.stdout_text, "1\n2\n3\n", 6) == 0);
	cr_expect(strstr(res.stdout_text, "19999\n20000\n") != NULL);
	cr_expect_str_eq(res.stderr_text, "oops\n");
	/* the complete streams are in the sandbox, as locally */
	char path[256];
	abox_file_info fi;
	snprintf(path, sizeof(path), "%s/stdout.txt", res.dir);
	cr_assert_eq(abox_file_stat(sb, path, NULL, &fi, &err), 0, "%s", err.msg);
	cr_expect_eq(fi.size, 108894);
	snprintf(path, sizeof(path), "%s/command.txt", res.dir);
	cr_expect_eq(abox_file_stat(sb, path, NULL, &fi, &err), 0, "%s", err.msg);
	abox_proc_result_clear(&res);
	abox_proc_free(p);
	drop(sb);
}
