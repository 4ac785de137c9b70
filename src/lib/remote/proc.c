/* remote/proc.c — a process through aboxd's Connect API: start (with
 * retries of what may run twice), attach, the list, and the unary calls on
 * a running one (input, signal, resize); a WatchDir stream is held the same
 * way. Each opens a server stream whose events a thread turns into init's
 * frames (proc_reader.c). Runs in the caller's process. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <sys/mman.h>

#include "base/clock.h"
#include "base/base64.h"
#include "base/accounts.h"
#include "remote/remote.h"

static void rp_free(struct remote_proc *rp)
{
	if (!rp)
		return;
	if (rp->multi && rp->easy)
		curl_multi_remove_handle(rp->multi, rp->easy);
	if (rp->easy)
		curl_easy_cleanup(rp->easy);
	if (rp->multi)
		curl_multi_cleanup(rp->multi);
	curl_slist_free_all(rp->hdrs);
	if (rp->fd >= 0)
		close(rp->fd);
	free(rp->body);
	free(rp->watch_root);
	for (int i = 0; i < 2; i++)
		if (rp->spool[i] >= 0)
			close(rp->spool[i]);
	free(rp->user);
	free(rp->cmdline);
	envq_free(&rp->q);
	pthread_mutex_destroy(&rp->lock);
	pthread_cond_destroy(&rp->cond);
	free(rp);
}

static json_object *start_json(const abox_proc_opts *o)
{
	json_object *b = json_object_new_object(), *p = json_object_new_object();
	json_object_object_add(p, "cmd", json_object_new_string(o->argv[0]));
	json_object *args = json_object_new_array();
	for (size_t i = 1; o->argv[i]; i++)
		json_object_array_add(args, json_object_new_string(o->argv[i]));
	json_object_object_add(p, "args", args);
	json_object *envs = json_object_new_object();
	for (size_t i = 0; o->env && o->env[i]; i++) {
		const char *eq = strchr(o->env[i], '=');
		char *k = eq ? strndup(o->env[i], (size_t)(eq - o->env[i])) : NULL;
		if (k)
			json_object_object_add(envs, k, json_object_new_string(eq + 1));
		free(k);
	}
	json_object_object_add(p, "envs", envs);
	if (o->cwd)
		json_object_object_add(p, "cwd", json_object_new_string(o->cwd));
	json_object_object_add(b, "process", p);
	if (o->tag)
		json_object_object_add(b, "tag", json_object_new_string(o->tag));
	if (o->flags & ABOX_PROC_STDIN)
		json_object_object_add(b, "stdin", json_object_new_boolean(true));
	if (o->pty_rows && o->pty_cols) {
		json_object *pty = json_object_new_object(), *size = json_object_new_object();
		json_object_object_add(size, "rows", json_object_new_int(o->pty_rows));
		json_object_object_add(size, "cols", json_object_new_int(o->pty_cols));
		json_object_object_add(pty, "size", size);
		json_object_object_add(b, "pty", pty);
	}
	return b;
}

/* body as one Connect envelope (malloc'd) */
static char *envelope(json_object *b, size_t *len)
{
	return e2b_envelope(0, b, len);
}

/* Opens a server stream of process events (Start or Connect) and waits
 * for its first event: the process's pid, or why there is none. */
static int stream_open(abox_sandbox *sb, const char *method, const char *watch_root, json_object *body,
		       const char *user, const abox_proc_opts *spool_for, uint32_t timeout_ms, abox_proc **out,
		       bool *transient, abox_error *err)
{
	if (transient)
		*transient = false;
	if (sb->active)
		return abox_error_setx(err, EBUSY, "exec: sandbox handle already runs a process");
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return abox_error_set(err, errno, "exec: socketpair");
	abox_proc *p = calloc(1, sizeof(*p));
	struct remote_proc *rp = calloc(1, sizeof(*rp));
	if (!p || !rp) {
		free(p);
		free(rp);
		close(sp[0]);
		close(sp[1]);
		return abox_error_set(err, ENOMEM, "exec");
	}
	pthread_mutex_init(&rp->lock, NULL);
	pthread_cond_init(&rp->cond, NULL);
	rp->spool[0] = rp->spool[1] = -1;
	rp->fd = sp[1];
	rp->req = ++sb->next_req;
	rp->body = envelope(body, &rp->body_len);
	rp->easy = curl_easy_init();
	rp->multi = curl_multi_init();
	int r;
	char path[64];
	snprintf(path, sizeof(path), "/%s", method);
	rp->watch_root = watch_root ? strdup(watch_root) : NULL;
	if (spool_for) {
		/* unnamed files that go with the handle: O_TMPFILE where the
		 * temp folder allows it, else memory */
		const char *tmp = getenv("TMPDIR");
		for (int i = 0; i < 2; i++) {
			rp->spool[i] = open(tmp && *tmp ? tmp : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
			if (rp->spool[i] < 0)
				rp->spool[i] = memfd_create(i ? "abox-stderr" : "abox-stdout", MFD_CLOEXEC);
		}
		char line[4096];
		size_t used = 0;
		line[0] = '\0';
		for (size_t i = 0; spool_for->argv[i] && used + 2 < sizeof(line); i++)
			used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s", i ? " " : "", spool_for->argv[i]);
		rp->cmdline = strdup(line);
		rp->user = spool_for->user ? strdup(spool_for->user) : NULL;
		if (rp->spool[0] < 0 || rp->spool[1] < 0 || !rp->cmdline) {
			r = abox_error_set(err, errno ? errno : ENOMEM, "exec: keep the complete output");
			goto fail;
		}
	}
	struct rreq q = { .method = "POST", .path = path, .body = rp->body, .body_len = rp->body_len,
			  .ctype = "application/connect+json", .sandbox = sb->id, .user = user, .token = sb->remote->token };
	if (!rp->body || !rp->easy || !rp->multi || remote_setup(sb->ctx->remote, rp->easy, &q, &rp->hdrs) < 0) {
		r = abox_error_set(err, ENOMEM, "exec");
		goto fail;
	}
	rp->hdrs = curl_slist_append(rp->hdrs, "Connect-Protocol-Version: 1");
	if (timeout_ms) {
		char th[48];
		snprintf(th, sizeof(th), "Connect-Timeout-Ms: %u", timeout_ms);
		rp->hdrs = curl_slist_append(rp->hdrs, th);
		rp->timeout_ms = timeout_ms;
		rp->t0_ms = clock_mono_ms();
	}
	curl_easy_setopt(rp->easy, CURLOPT_HTTPHEADER, rp->hdrs);
	curl_easy_setopt(rp->easy, CURLOPT_WRITEFUNCTION, remote_proc_on_data);
	curl_easy_setopt(rp->easy, CURLOPT_WRITEDATA, rp);
	curl_multi_add_handle(rp->multi, rp->easy);

	if (sb->conn >= 0)
		close(sb->conn);
	proto_reader_free(&sb->rd);
	sb->conn = sp[0];
	sp[0] = -1; /* owned by sb now */
	(void)fcntl(sb->conn, F_SETFL, O_NONBLOCK);
	proto_reader_init(&sb->rd, sb->conn);
	if (pthread_create(&rp->thread, NULL, remote_proc_run, rp) != 0) {
		r = abox_error_setx(err, EAGAIN, "exec: cannot start the stream thread");
		goto fail;
	}
	rp->thread_started = true;
	p->sb = sb;
	p->req = rp->req;
	p->remote = rp;
	sb->active = p;
	/* the daemon starts the process before it answers: its pid (or why it
	 * could not start) is known on return, as with the local backend */
	pthread_mutex_lock(&rp->lock);
	while (!rp->decided)
		pthread_cond_wait(&rp->cond, &rp->lock);
	int e = rp->pid ? 0 : rp->err ? rp->err : EPIPE;
	pthread_mutex_unlock(&rp->lock);
	if (e) {
		if (transient)
			*transient = e == ECONNREFUSED || rp->transient;
		r = abox_error_setx(err, e, "%s", rp->errmsg[0] ? rp->errmsg : "exec failed");
		proc_handle_free(p);
		return r;
	}
	p->pid = rp->pid;
	*out = p;
	return 0;
fail:
	if (sp[0] >= 0)
		close(sp[0]);
	rp_free(rp);
	free(p);
	return r;
}

int remote_proc_start(abox_sandbox *sb, const abox_proc_opts *o, abox_proc **out, abox_error *err)
{
	if (!o || o->version < 1 || !o->argv || !o->argv[0])
		return abox_error_setx(err, EINVAL, "exec: no command given");
	/* the name travels in a Basic credential: a ':' would end it early */
	if (o->user && !acct_name_ok(o->user))
		return abox_error_setx(err, EINVAL, "exec: '%s' is not a user name", o->user);
	json_object *b = start_json(o);
	bool transient = false;
	int r;
	for (int t = 0;; t++) {
		r = stream_open(sb, "process.Process/Start", NULL, b, o->user, o->truncate_threshold ? o : NULL,
				o->version >= 2 ? o->timeout_ms : 0, out, &transient, err);
		/* only what may run twice is tried again, and only when it did
		 * not start */
		if (r >= 0 || !transient || !(o->flags & ABOX_PROC_IDEMPOTENT) || t == 2)
			break;
		struct timespec ts = { 0, (long)(50L << (2 * t)) * 1000000L }; /* 50, 200 ms */
		nanosleep(&ts, NULL);
	}
	json_object_put(b);
	if (r >= 0 && o->truncate_threshold &&
	    (r = truncate_setup(*out, o->truncate_threshold, o->truncate_head, o->truncate_tail)) < 0) {
		proc_handle_free(*out);
		*out = NULL;
		r = abox_error_set(err, -r, "exec: truncation");
	}
	return r;
}

/* The complete output as a local sandbox keeps it: <dir>/command.txt,
 * stdout.txt and stderr.txt, written as the command's user. */
int remote_truncate_finish(abox_proc *p, abox_error *err)
{
	struct remote_proc *rp = p->remote;
	if (!rp || rp->spool[0] < 0 || rp->spool_written)
		return 0;
	abox_sandbox *sb = p->sb;
	char path[sizeof(p->t_dir) + 16];
	int made, r = remote_file_mkdir(sb, p->t_dir, rp->user, &made, err);
	if (r >= 0) {
		snprintf(path, sizeof(path), "%s/command.txt", p->t_dir);
		r = remote_file_write(sb, path, rp->user, -1, rp->cmdline, strlen(rp->cmdline), 0, NULL, err);
	}
	for (int i = 0; r >= 0 && i < 2; i++) {
		uint64_t size;
		(void)lseek(rp->spool[i], 0, SEEK_SET);
		snprintf(path, sizeof(path), "%s/%s", p->t_dir, i ? "stderr.txt" : "stdout.txt");
		r = remote_file_write(sb, path, rp->user, rp->spool[i], NULL, 0, 0, &size, err);
	}
	if (r < 0)
		return abox_error_prefix(err, "result: keep the complete output in the sandbox");
	rp->spool_written = true;
	return 0;
}

int remote_proc_attach(abox_sandbox *sb, int pid, const char *tag, abox_proc **out, abox_error *err)
{
	if ((pid <= 0) == (tag == NULL))
		return abox_error_setx(err, EINVAL, "attach: give a pid or a tag");
	json_object *b = json_object_new_object(), *sel = json_object_new_object();
	if (tag)
		json_object_object_add(sel, "tag", json_object_new_string(tag));
	else
		json_object_object_add(sel, "pid", json_object_new_int(pid));
	json_object_object_add(b, "process", sel);
	int r = stream_open(sb, "process.Process/Connect", NULL, b, "root", NULL, 0, out, NULL, err);
	json_object_put(b);
	return r;
}

int remote_watch_start(abox_sandbox *sb, const char *path, const char *user, int recursive, abox_watch *w,
		       abox_error *err)
{
	json_object *b = json_object_new_object();
	json_object_object_add(b, "path", json_object_new_string(path));
	json_object_object_add(b, "recursive", json_object_new_boolean(recursive != 0));
	int r = stream_open(sb, "filesystem.Filesystem/WatchDir", path, b, user, NULL, 0, &w->stream, NULL, err);
	json_object_put(b);
	if (r >= 0)
		w->id = w->stream->req;
	return r;
}

int remote_watch_stop(abox_watch *w, bool answer, abox_error *err)
{
	(void)answer; /* ending the stream is the end: the daemon drops the watch */
	(void)err;
	proc_handle_free(w->stream);
	w->stream = NULL;
	return 0;
}

int remote_proc_list(abox_sandbox *sb, abox_proc_info **out, size_t *n, abox_error *err)
{
	json_object *b = json_object_new_object(), *reply = NULL, *a;
	int r = remote_rpc(sb, "process.Process", "List", "root", b, &reply, err);
	json_object_put(b);
	if (r < 0)
		return r;
	if (!json_object_object_get_ex(reply, "processes", &a) || !json_object_is_type(a, json_type_array)) {
		json_object_put(reply);
		return abox_error_setx(err, EPROTO, "ps: the daemon's reply has no processes");
	}
	size_t cnt = json_object_array_length(a);
	abox_proc_info *v = calloc(cnt ? cnt : 1, sizeof(*v));
	if (!v) {
		json_object_put(reply);
		return abox_error_set(err, ENOMEM, "ps");
	}
	for (size_t i = 0; i < cnt; i++) {
		json_object *e = json_object_array_get_idx(a, i), *x, *c;
		v[i].pid = json_object_object_get_ex(e, "pid", &x) ? json_object_get_int(x) : 0;
		v[i].running = 1; /* the protocol lists running processes */
		if (json_object_object_get_ex(e, "tag", &x))
			snprintf(v[i].tag, sizeof(v[i].tag), "%s", json_object_get_string(x));
		if (json_object_object_get_ex(e, "config", &c)) {
			size_t k = 0;
			if (json_object_object_get_ex(c, "cmd", &x))
				k = (size_t)snprintf(v[i].cmd, sizeof(v[i].cmd), "%s", json_object_get_string(x));
			json_object *args;
			if (json_object_object_get_ex(c, "args", &args) && json_object_is_type(args, json_type_array))
				for (size_t j = 0; j < json_object_array_length(args) && k < sizeof(v[i].cmd); j++)
					k += (size_t)snprintf(v[i].cmd + k, sizeof(v[i].cmd) - k, " %s",
							      json_object_get_string(json_object_array_get_idx(args, j)));
		}
	}
	json_object_put(reply);
	*out = v;
	*n = cnt;
	return 0;
}

void remote_proc_free(abox_proc *p)
{
	struct remote_proc *rp = p->remote;
	if (!rp)
		return;
	rp->stop = true;
	if (rp->thread_started) {
		curl_multi_wakeup(rp->multi);
		/* a thread blocked writing to a full socketpair is freed by
		 * closing our end: its write fails */
		if (p->sb->conn >= 0)
			shutdown(p->sb->conn, SHUT_RDWR);
		pthread_join(rp->thread, NULL);
	}
	if (p->sb->conn >= 0)
		close(p->sb->conn);
	p->sb->conn = -1;
	proto_reader_free(&p->sb->rd);
	rp_free(rp);
	p->remote = NULL;
}

static int unary(abox_proc *p, const char *method, json_object *b, abox_error *err)
{
	json_object *sel = json_object_new_object();
	json_object_object_add(sel, "pid", json_object_new_int(p->pid));
	json_object_object_add(b, "process", sel);
	int r = remote_rpc(p->sb, "process.Process", method, NULL, b, NULL, err);
	json_object_put(b);
	return r;
}

int remote_proc_input(abox_proc *p, const void *buf, size_t len, bool close, abox_error *err)
{
	json_object *b = json_object_new_object();
	if (close)
		return unary(p, "CloseStdin", b, err);
	/* a pty's input goes to the terminal, the same request otherwise */
	char *enc = base64_encode(buf, len);
	if (!enc) {
		json_object_put(b);
		return abox_error_set(err, ENOMEM, "stdin");
	}
	json_object *in = json_object_new_object();
	json_object_object_add(in, "stdin", json_object_new_string(enc));
	free(enc);
	json_object_object_add(b, "input", in);
	return unary(p, "SendInput", b, err);
}

int remote_proc_signal(abox_proc *p, int sig, abox_error *err)
{
	if (sig != SIGKILL && sig != SIGTERM)
		return abox_error_setx(err, EINVAL, "signal %d: the protocol carries SIGKILL and SIGTERM only", sig);
	json_object *b = json_object_new_object();
	json_object_object_add(b, "signal", json_object_new_string(sig == SIGKILL ? "SIGNAL_SIGKILL" : "SIGNAL_SIGTERM"));
	return unary(p, "SendSignal", b, err);
}

int remote_proc_resize(abox_proc *p, uint16_t rows, uint16_t cols, abox_error *err)
{
	json_object *b = json_object_new_object(), *pty = json_object_new_object(), *size = json_object_new_object();
	json_object_object_add(size, "rows", json_object_new_int(rows));
	json_object_object_add(size, "cols", json_object_new_int(cols));
	json_object_object_add(pty, "size", size);
	json_object_object_add(b, "pty", pty);
	return unary(p, "Update", b, err);
}
