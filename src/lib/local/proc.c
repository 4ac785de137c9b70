/* local/proc.c — processes inside a local sandbox: the exec request and
 * the events init streams back, plus stdin and signals.
 * One process at a time per sandbox handle in this version.
 * Runs in the CLI/daemon. */
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "local/local.h"
#include "base/accounts.h"
#include "store/state.h"
#include "proto/messages.h"

struct user_entry {
	const char *name;
	uid_t uid;
	gid_t gid;
	const char *home;
};

static const struct user_entry users[] = {
	{ "user", 1000, 1000, "/home/user" },
	{ "root", 0, 0, "/root" },
};

int local_proc_start(abox_sandbox *sb, const abox_proc_opts *opts, abox_proc **out, abox_error *err)
{
	if (!opts || opts->version < 1 || !opts->argv || !opts->argv[0])
		return abox_error_setx(err, EINVAL, "exec: no command given");
	if (sb->paused)
		return backend_not_paused(sb, "exec", err);
	if (sb->dead || (sb->conn < 0 && !sb->conn_errno))
		return abox_error_setx(err, ESRCH, "exec: sandbox %s is not running", sb->id);
	if (sb->conn < 0)
		return abox_error_set(err, sb->conn_errno, "exec: cannot reach the init of sandbox %s", sb->id);
	if (sb->active)
		return abox_error_setx(err, EBUSY, "exec: sandbox handle already runs a process");

	const char *uname = opts->user ? opts->user : sb->def_user ? sb->def_user : "user";
	/* `user` and `root` go with their ids; any other name is looked up
	 * by init in the sandbox's own /etc/passwd (with its groups and
	 * home), so a user made inside with useradd runs as itself */
	const struct user_entry *u = NULL;
	for (size_t i = 0; i < ELEMENTSOF(users); i++)
		if (strcmp(users[i].name, uname) == 0)
			u = &users[i];
	if (!u && !acct_name_ok(uname))
		return abox_error_setx(err, EINVAL, "exec: '%s' is not a user name", uname);

	abox_proc *p = calloc(1, sizeof(*p));
	if (!p)
		return abox_error_set(err, ENOMEM, "exec");
	p->sb = sb;
	p->req = ++sb->next_req;
	p->stdin_open = (opts->flags & ABOX_PROC_STDIN) || (opts->pty_rows && opts->pty_cols);

	struct proto_msg m;
	proto_msg_init(&m, MSG_REQ_EXEC, p->req);
	for (size_t i = 0; opts->argv[i]; i++)
		proto_put_str(&m, F_ARG, opts->argv[i]);
	for (size_t i = 0; sb->env && sb->env[i]; i++)
		proto_put_str(&m, F_ENV, sb->env[i]);
	for (size_t i = 0; opts->env && opts->env[i]; i++) {
		if (!strchr(opts->env[i], '=')) {
			proto_msg_free(&m);
			free(p);
			return abox_error_setx(err, EINVAL, "exec: environment entry '%s' is not K=V", opts->env[i]);
		}
		proto_put_str(&m, F_ENV, opts->env[i]);
	}
	/* a relative cwd is below the user's home, as in envd */
	char cwd_abs[4200];
	const char *cwd = opts->cwd ? backend_user_path(uname, opts->cwd, cwd_abs, sizeof(cwd_abs)) : NULL;
	if (opts->cwd && !cwd) {
		proto_msg_free(&m);
		free(p);
		return abox_error_setx(err, ENAMETOOLONG, "exec: cwd too long");
	}
	if (cwd || sb->def_cwd || u)
		proto_put_str(&m, F_CWD, cwd ? cwd : sb->def_cwd ? sb->def_cwd : u->home);
	if (opts->pty_rows && opts->pty_cols) {
		proto_put_u64(&m, F_ROWS, opts->pty_rows);
		proto_put_u64(&m, F_COLS, opts->pty_cols);
	}
	if (opts->version >= 2 && opts->timeout_ms)
		proto_put_u64(&m, F_TIMEOUT_MS, opts->timeout_ms);
	if (opts->version >= 1 && opts->truncate_threshold) {
		int tr = truncate_setup(p, opts->truncate_threshold, opts->truncate_head, opts->truncate_tail);
		if (tr < 0) {
			truncate_free(p);
			proto_msg_free(&m);
			free(p);
			return abox_error_set(err, -tr, "exec: truncation");
		}
		proto_put_str(&m, F_TEE_DIR, p->t_dir);
	}
	if (opts->tag) {
		if (strlen(opts->tag) >= 128) {
			proto_msg_free(&m);
			free(p);
			return abox_error_setx(err, EINVAL, "exec: tag longer than 127 characters");
		}
		proto_put_str(&m, F_TAG, opts->tag);
	}
	proto_put_str(&m, F_USER, uname);
	if (u) {
		proto_put_str(&m, F_HOME, u->home);
		proto_put_u64(&m, F_UID, u->uid);
		proto_put_u64(&m, F_GID, u->gid);
	} else {
		/* see F_LOOKUP: an older init runs it as nobody, never as 1000 */
		proto_put_u64(&m, F_LOOKUP, 1);
		proto_put_u64(&m, F_UID, 65534);
		proto_put_u64(&m, F_GID, 65534);
	}
	uint32_t flags = 0;
	if (opts->flags & ABOX_PROC_STDIN)
		flags |= EXEC_STDIN;
	if ((sb->flags & ABOX_SANDBOX_EPHEMERAL) && !(opts->flags & PROC_NOT_ONESHOT))
		flags |= EXEC_ONESHOT;
	proto_put_u64(&m, F_FLAGS, flags);
	if (!sb->oom_known) {
		uint64_t n;
		if (local_oom_kills(sb, &n, NULL) >= 0)
			sb->oom_base = n;
		sb->oom_known = true;
	}
	int r = backend_send(sb, &m);
	if (r < 0) {
		free(p);
		return abox_error_set(err, -r, r == -EMSGSIZE ? "exec: command and environment too large" : "exec: send request");
	}
	sb->active = p;
	*out = p;
	return 0;
}

/* A long-lived sandbox's deadline may have moved since this handle read
 * it: another process paused it (the clock stopped), resumed it or set a
 * new timeout. Re-reads the record and updates sb->deadline_ms; true when
 * it is still due. An ephemeral sandbox's deadline is this handle's own. */
bool local_deadline_due(abox_sandbox *sb)
{
	if (sb->flags & ABOX_SANDBOX_EPHEMERAL)
		return true;
	struct sb_state st = { 0 };
	if (state_read(sb->ctx->state_dir, sb->id, &st, NULL) < 0)
		return true;
	int64_t left = st.deadline_ms - clock_wall_ms();
	if (st.paused_ms || !st.deadline_ms || st.auto_pause)
		sb->deadline_ms = 0; /* paused or no timeout: init enforces any new one */
	else
		sb->deadline_ms = clock_mono_ms() + left;
	sb_state_free(&st);
	return sb->deadline_ms && left <= 0;
}

/* Sends queued stdin as far as init's window allows, then the close. */
static int pump_stdin(abox_proc *p)
{
	struct proto_outq *q = &p->stdin_q;
	while (proto_outq_len(q) && p->stdin_unacked < STDIN_WINDOW) {
		size_t n = proto_outq_len(q);
		if (n > 65536)
			n = 65536;
		if (n > STDIN_WINDOW - p->stdin_unacked)
			n = STDIN_WINDOW - p->stdin_unacked;
		struct proto_msg m;
		proto_msg_init(&m, MSG_REQ_STDIN, p->req);
		proto_put_u64(&m, F_PID, (uint64_t)p->pid);
		proto_put_bytes(&m, F_DATA, q->buf + q->start, n);
		int r = backend_send(p->sb, &m);
		if (r < 0)
			return r;
		q->start += n;
		p->stdin_unacked += n;
	}
	if (!proto_outq_len(q))
		proto_outq_free(q);
	if (p->stdin_close_pending && !proto_outq_len(q)) {
		p->stdin_close_pending = false;
		struct proto_msg m;
		proto_msg_init(&m, MSG_REQ_STDIN_CLOSE, p->req);
		proto_put_u64(&m, F_PID, (uint64_t)p->pid);
		return backend_send(p->sb, &m);
	}
	return 0;
}

static int write_stdin(abox_proc *p, const void *buf, size_t len, abox_error *err)
{
	if (p->ended || !p->stdin_open)
		return abox_error_setx(err, EPIPE, "stdin: the process's stdin is closed");
	/* raw bytes wait here; frames are cut as the window opens */
	struct proto_outq *q = &p->stdin_q;
	if (q->cap - q->end < len) {
		if (q->start) {
			memmove(q->buf, q->buf + q->start, q->end - q->start);
			q->end -= q->start;
			q->start = 0;
		}
		if (q->cap - q->end < len) {
			size_t ncap = q->cap ? q->cap : 65536;
			while (ncap - q->end < len)
				ncap *= 2;
			uint8_t *nb = realloc(q->buf, ncap);
			if (!nb)
				return abox_error_set(err, ENOMEM, "stdin");
			q->buf = nb;
			q->cap = ncap;
		}
	}
	memcpy(q->buf + q->end, buf, len);
	q->end += len;
	int r = pump_stdin(p);
	if (r < 0)
		return abox_error_set(err, -r, "stdin: send");
	return 0;
}

static int simple_req(abox_proc *p, uint16_t type, int sig, const char *what, abox_error *err)
{
	if (p->ended)
		return abox_error_setx(err, ESRCH, "%s: the process has ended", what);
	struct proto_msg m;
	proto_msg_init(&m, type, p->req);
	proto_put_u64(&m, F_PID, (uint64_t)p->pid);
	if (sig)
		proto_put_u64(&m, F_SIGNAL, (uint64_t)sig);
	int r = backend_send(p->sb, &m);
	if (r < 0)
		return abox_error_set(err, -r, "%s: send", what);
	return 0;
}

static int close_stdin(abox_proc *p, abox_error *err)
{
	if (!p->stdin_open)
		return 0;
	p->stdin_open = false;
	p->stdin_close_pending = true; /* after what is still queued */
	int r = pump_stdin(p);
	if (r < 0)
		return abox_error_set(err, -r, "stdin: send");
	return 0;
}

int local_proc_resize(abox_proc *p, uint16_t rows, uint16_t cols, abox_error *err)
{
	if (!rows || !cols || rows > 1000 || cols > 1000)
		return abox_error_setx(err, EINVAL, "resize: bad size %ux%u", rows, cols);
	if (p->ended)
		return abox_error_setx(err, ESRCH, "resize: the process has ended");
	struct proto_msg m;
	proto_msg_init(&m, MSG_REQ_RESIZE, p->req);
	proto_put_u64(&m, F_PID, (uint64_t)p->pid);
	proto_put_u64(&m, F_ROWS, rows);
	proto_put_u64(&m, F_COLS, cols);
	int r = backend_send(p->sb, &m);
	if (r < 0)
		return abox_error_set(err, -r, "resize: send");
	return 0;
}

int local_proc_signal(abox_proc *p, int sig, abox_error *err)
{
	if (sig <= 0 || sig >= 65)
		return abox_error_setx(err, EINVAL, "signal: bad signal number %d", sig);
	return simple_req(p, MSG_REQ_SIGNAL, sig, "signal", err);
}

int local_proc_input(abox_proc *p, const void *buf, size_t len, bool close, abox_error *err)
{
	return close ? close_stdin(p, err) : write_stdin(p, buf, len, err);
}

void local_proc_stdin_ack(abox_proc *p)
{
	(void)pump_stdin(p);
}

int local_proc_attach(abox_sandbox *sb, int pid, const char *tag, abox_proc **out, abox_error *err)
{
	if ((pid <= 0) == (tag == NULL))
		return abox_error_setx(err, EINVAL, "attach: give a pid or a tag");
	int r = backend_can_ask(sb, "attach", err);
	if (r < 0)
		return r;
	abox_proc *p = calloc(1, sizeof(*p));
	if (!p)
		return abox_error_set(err, ENOMEM, "attach");
	p->sb = sb;
	p->req = ++sb->next_req;
	/* a handle found again may feed the process's stdin (and close it):
	 * init knows whether it has one, and drops input for one without */
	p->stdin_open = true;
	p->pid = pid;
	struct proto_msg m;
	proto_msg_init(&m, MSG_REQ_ATTACH, p->req);
	if (tag)
		proto_put_str(&m, F_TAG, tag);
	else
		proto_put_u64(&m, F_PID, (uint64_t)pid);
	r = backend_send(sb, &m);
	if (r < 0) {
		free(p);
		return abox_error_set(err, -r, "attach: send");
	}
	sb->active = p;
	*out = p;
	return 0;
}

struct list_ctx {
	abox_proc_info *v;
	size_t n, cap;
};

/* One process of ps's answer (EV_PROC). */
static int list_entry(const struct proto_frame *f, const char *what, void *ud, abox_error *err)
{
	struct list_ctx *lc = ud;
	if (f->type != MSG_EV_PROC)
		return abox_error_setx(err, EPROTO, "%s: unexpected answer from init", what);
	if (lc->n == lc->cap) {
		size_t ncap = lc->cap ? lc->cap * 2 : 16;
		abox_proc_info *nv = realloc(lc->v, ncap * sizeof(*nv));
		if (!nv)
			return abox_error_set(err, ENOMEM, "%s", what);
		lc->v = nv;
		lc->cap = ncap;
	}
	abox_proc_info *pi = &lc->v[lc->n++];
	memset(pi, 0, sizeof(*pi));
	size_t off = 0;
	struct proto_field fl;
	uint64_t v;
	int64_t sv;
	while (proto_field_next(f, &off, &fl) > 0) {
		switch (fl.tag) {
		case F_PID:
			if (proto_field_u64(&fl, &v) == 0)
				pi->pid = (int)v;
			break;
		case F_FLAGS:
			if (proto_field_u64(&fl, &v) == 0)
				pi->running = v & 1;
			break;
		case F_EXIT_CODE:
			if (proto_field_i64(&fl, &sv) == 0)
				pi->exit_code = (int)sv;
			break;
		case F_SIGNAL:
			if (proto_field_u64(&fl, &v) == 0)
				pi->signal = (int)v;
			break;
		case F_TAG:
			safe_snprintf(pi->tag, sizeof(pi->tag), "%.*s", (int)(fl.len < 127 ? fl.len : 127),
				      (const char *)fl.val);
			break;
		case F_ARG:
			safe_snprintf(pi->cmd, sizeof(pi->cmd), "%.*s", (int)(fl.len < 255 ? fl.len : 255),
				      (const char *)fl.val);
			break;
		default:
			break;
		}
	}
	return 0;
}

int local_proc_list(abox_sandbox *sb, abox_proc_info **out, size_t *n, abox_error *err)
{
	int r = backend_can_ask(sb, "ps", err);
	if (r < 0)
		return r;
	uint32_t id = ++sb->next_req;
	struct proto_msg m;
	proto_msg_init(&m, MSG_REQ_LIST, id);
	if ((r = backend_send(sb, &m)) < 0)
		return abox_error_set(err, -r, "ps: send");
	struct list_ctx lc = { 0 };
	if ((r = backend_answer(sb, id, "ps", list_entry, NULL, &lc, err)) < 0) {
		free(lc.v);
		return r;
	}
	*out = lc.v;
	*n = lc.n;
	return 0;
}
