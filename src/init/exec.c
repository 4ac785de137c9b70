/* exec.c — abox-init's MSG_REQ_EXEC: the request parsed and bounded,
 * the user it names looked up, a slot taken and the child started
 * (child.c); its events then flow through procs.c.
 * Runs only inside the sandbox, as its PID 1. */
#include <fcntl.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "base/base.h"
#include "base/clock.h"
#include "base/fdpass.h"
#include "init.h"
#include "proto/messages.h"
#include "proto/proto.h"
#include "tables.h"

/* The request's strings by their field tags: a later one replaces an
 * earlier one, and exec_req_free frees each. */
static const struct {
	uint16_t tag;
	size_t off;
} strings[] = {
	{ F_CWD, offsetof(struct exec_req, cwd) },
	{ F_HOME, offsetof(struct exec_req, home) },
	{ F_USER, offsetof(struct exec_req, user) },
	{ F_TAG, offsetof(struct exec_req, tag) },
	{ F_TEE_DIR, offsetof(struct exec_req, tee_dir) },
	{ F_APPARMOR, offsetof(struct exec_req, apparmor) },
};

static char **string_at(struct exec_req *req, size_t i)
{
	return (char **)((char *)req + strings[i].off);
}

/* The slot of req for a string field tag, or NULL for another field. */
static char **string_slot(struct exec_req *req, uint16_t tag)
{
	for (size_t i = 0; i < ELEMENTSOF(strings); i++)
		if (strings[i].tag == tag)
			return string_at(req, i);
	return NULL;
}

void exec_req_free(struct exec_req *req)
{
	strv_free(req->argv);
	strv_free(req->env);
	for (size_t i = 0; i < ELEMENTSOF(strings); i++)
		free(*string_at(req, i));
	free(req->filter);
	memset(req, 0, sizeof(*req));
}

/* A seccomp program: whole instructions, as many as the kernel takes */
static int parse_filter(const struct proto_field *fl, struct exec_req *req)
{
	if (req->filter || !fl->len || fl->len % sizeof(*req->filter) ||
	    fl->len / sizeof(*req->filter) > 4096 /* BPF_MAXINSNS */)
		return -EINVAL;
	if (!(req->filter = malloc(fl->len)))
		return -ENOMEM;
	memcpy(req->filter, fl->val, fl->len);
	req->filter_len = (unsigned short)(fl->len / sizeof(*req->filter));
	return 0;
}

/* "RESOURCE SOFT HARD" */
static int parse_rlimit(const struct proto_field *fl, struct exec_req *req)
{
	char buf[80];
	int res;
	unsigned long long soft, hard;
	if (fl->len >= sizeof(buf) || req->nrlimits >= ELEMENTSOF(req->rlimits))
		return -E2BIG;
	memcpy(buf, fl->val, fl->len);
	buf[fl->len] = '\0';
	if (sscanf(buf, "%d %llu %llu", &res, &soft, &hard) != 3 || res < 0 || res >= RLIMIT_NLIMITS)
		return -EINVAL;
	req->rlimits[req->nrlimits].resource = res;
	req->rlimits[req->nrlimits].soft = soft;
	req->rlimits[req->nrlimits].hard = hard;
	req->nrlimits++;
	return 0;
}

int exec_parse(const struct proto_frame *f, struct exec_req *req)
{
	size_t off = 0, nargs = 0, nenv = 0;
	struct proto_field fl;
	int k;
	while ((k = proto_field_next(f, &off, &fl)) > 0) {
		if (fl.tag == F_ARG)
			nargs++;
		else if (fl.tag == F_ENV)
			nenv++;
	}
	if (k < 0)
		return k;
	if (nargs == 0 || nargs > 65536 || nenv > 65536)
		return -EINVAL;
	req->argv = calloc(nargs + 1, sizeof(char *));
	req->env = calloc(nenv + 1, sizeof(char *));
	if (!req->argv || !req->env)
		return -ENOMEM;
	req->uid = 1000;
	req->gid = 1000;
	bool lookup_name = false;
	size_t ia = 0, ie = 0;
	off = 0;
	while ((k = proto_field_next(f, &off, &fl)) > 0) {
		uint64_t v;
		int r = 0;
		char **slot = string_slot(req, fl.tag);
		if (slot) {
			free(*slot);
			*slot = NULL;
			if ((r = proto_field_strdup(&fl, slot)) < 0)
				return r;
			continue;
		}
		switch (fl.tag) {
		case F_ARG: r = proto_field_strdup(&fl, &req->argv[ia++]); break;
		case F_ENV:
			r = proto_field_strdup(&fl, &req->env[ie++]);
			break;
		case F_UID: r = proto_field_u64(&fl, &v); req->uid = (uid_t)v; break;
		case F_LOOKUP: lookup_name = true; break;
		case F_GID: r = proto_field_u64(&fl, &v); req->gid = (gid_t)v; break;
		case F_GROUP:
			if ((r = proto_field_u64(&fl, &v)) >= 0 && req->ngroups >= INIT_MAX_GROUPS)
				r = -E2BIG;
			else if (r >= 0)
				req->groups[req->ngroups++] = (gid_t)v;
			break;
		case F_UMASK:
			r = proto_field_u64(&fl, &v);
			req->umask = 0x1000 | (v & 0777);
			break;
		case F_RLIMIT:
			r = parse_rlimit(&fl, req);
			break;
		case F_CAPS:
			r = proto_field_u64(&fl, &req->caps);
			req->has_caps = true;
			break;
		case F_CAPS_INH:
			r = proto_field_u64(&fl, &req->caps_inh);
			break;
		case F_CAPS_AMB:
			r = proto_field_u64(&fl, &req->caps_amb);
			break;
		case F_NNP:
			req->nnp = true;
			break;
		case F_SECCOMP:
			r = parse_filter(&fl, req);
			break;
		case F_OOM_ADJ:
			r = proto_field_u64(&fl, &v);
			if (r >= 0 && v > 2000)
				r = -EINVAL;
			req->oom_adj = (int)v - 1000;
			req->has_oom = true;
			break;
		case F_FLAGS:
			r = proto_field_u64(&fl, &v);
			req->flags = (uint32_t)v & ~EXEC_CWD_FIRST;
			break;
		case F_ROWS: r = proto_field_u64(&fl, &v); req->pty_rows = v > 1000 ? 1000 : (unsigned)v; break;
		case F_COLS: r = proto_field_u64(&fl, &v); req->pty_cols = v > 1000 ? 1000 : (unsigned)v; break;
		case F_TIMEOUT_MS: r = proto_field_u64(&fl, &v); req->timeout_ms = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; break;
		default: break; /* newer hosts may send more: ignore */
		}
		if (r < 0)
			return r;
	}
	if (k < 0 || !lookup_name)
		return k;
	if (!req->user)
		return -ABOX_ENOUSER;
	/* a user the host does not know: the sandbox's own, with its groups,
	 * home and (as a login) its home as the default folder */
	struct init_ident id;
	int r = users_lookup(req->user, &id);
	if (r < 0)
		return r;
	req->uid = id.uid;
	req->gid = id.gid;
	req->ngroups = id.ngroups;
	memcpy(req->groups, id.groups, sizeof(id.groups));
	if (!req->home && !(req->home = strdup(id.home)))
		return -ENOMEM;
	char buf[4200];
	const char *cwd = users_path(&id, req->cwd ? req->cwd : id.home, buf, sizeof(buf));
	if (!cwd)
		return -ENAMETOOLONG;
	if (cwd == buf) {
		free(req->cwd);
		if (!(req->cwd = strdup(buf)))
			return -ENOMEM;
	} else if (!req->cwd && !(req->cwd = strdup(cwd))) {
		return -ENOMEM;
	}
	return 0;
}

struct proc *procs_slot(void)
{
	struct proc *p = NULL;
	for (unsigned i = 0; i < MAX_PROCS && !p; i++)
		if (procs[i].state == P_FREE)
			p = &procs[i];
	if (p && (unsigned)(p - procs) >= procs_used)
		procs_used = (unsigned)(p - procs) + 1;
	return p;
}

void procs_exec(int ci, const struct proto_frame *f)
{
	struct exec_req req = { 0 };
	int r = exec_parse(f, &req);
	if (r >= 0 && (req.flags & EXEC_HELD)) {
		oci_hold(ci, f, &req); /* takes req */
		return;
	}
	if (r >= 0 && (req.flags & EXEC_FDS)) {
		oci_exec(ci, f, &req); /* takes req */
		return;
	}
	if (r == -ABOX_ENOUSER) {
		char m2[128];
		safe_snprintf(m2, sizeof(m2), "exec: unknown user '%s' (not in the sandbox's /etc/passwd)",
			      req.user ? req.user : "");
		init_send_error(ci, f->id, r, m2);
		exec_req_free(&req);
		return;
	}
	if (r == -ERANGE) {
		init_send_error(ci, f->id, r, "exec: the user's uid or gid in /etc/passwd is outside 0-65535");
		exec_req_free(&req);
		return;
	}
	if (r < 0) {
		init_send_error(ci, f->id, r, "exec: malformed request");
		exec_req_free(&req);
		return;
	}
	if (oci_filter_into(&req) < 0) {
		init_send_error(ci, f->id, ENOMEM, "exec: the container's seccomp profile");
		exec_req_free(&req);
		return;
	}
	struct proc *p = procs_slot();
	if (!p) {
		init_send_error(ci, f->id, EAGAIN, "exec: too many processes tracked by init");
		exec_req_free(&req);
		return;
	}
	int tee_out = -1, tee_err = -1;
	if (req.tee_dir) {
		char line[256];
		size_t u = 0;
		line[0] = '\0';
		for (size_t i = 0; req.argv[i] && u + 2 < sizeof(line); i++)
			u += safe_snprintf(line + u, sizeof(line) - u, "%s%s", i ? " " : "", req.argv[i]);
		r = tee_open(req.tee_dir, line, req.uid, req.gid, &tee_out, &tee_err);
		if (r < 0) {
			char m2[300];
			safe_snprintf(m2, sizeof(m2), "exec: keep output in '%s': %s", req.tee_dir,
				      errno_name(-r) ? errno_name(-r) : "error");
			init_send_error(ci, f->id, r, m2);
			exec_req_free(&req);
			return;
		}
	}
	pid_t pid;
	struct exec_fds fds;
	r = child_spawn(&req, &pid, &fds);
	bool oneshot = req.flags & EXEC_ONESHOT;
	/* the command line as `ps` shows it, bounded */
	char cmd[256];
	size_t used = 0;
	cmd[0] = '\0';
	for (size_t i = 0; req.argv[i] && used + 2 < sizeof(cmd); i++)
		used += safe_snprintf(cmd + used, sizeof(cmd) - used, "%s%s", i ? " " : "", req.argv[i]);
	char *tag = req.tag;
	req.tag = NULL;
	uint32_t timeout_ms = req.timeout_ms;
	exec_req_free(&req);
	if (r < 0) {
		char m2[128];
		safe_snprintf(m2, sizeof(m2), "exec: fork: %s", errno_name(-r) ? errno_name(-r) : "error");
		init_send_error(ci, f->id, r, m2);
		free(tag);
		close_if_open(tee_out);
		close_if_open(tee_err);
		if (oneshot)
			init_end_after_flush(125);
		return;
	}
	*p = (struct proc){ .state = P_STARTING, .pid = pid, .owner = ci, .owner_req = f->id,
			    .tag = tag, .cmd = strdup(cmd),
			    .in = fds.in, .out = fds.out, .err = fds.err, .ep = fds.ep,
			    .tee_out = tee_out, .tee_err = tee_err, .oneshot = oneshot,
			    .pty = fds.err < 0, .stalled = fds.stalled,
			    .kill_at = timeout_ms ? clock_boot_ms() + (int64_t)timeout_ms : 0 };
	p->att_req[ci] = f->id;
	fcntl(p->out, F_SETFL, O_NONBLOCK);
	fcntl(p->err, F_SETFL, O_NONBLOCK);
	if (p->in >= 0)
		fcntl(p->in, F_SETFL, O_NONBLOCK);
	proc_started(p); /* usually not known yet: the poll loop watches ep */
}
