/* abox-init — PID 1 of every sandbox.
 *
 * Started by libabox from a sealed memfd copy (so /proc/1/exe never leads to
 * a host file), statically linked (so it runs in any root filesystem), with
 * the listening end of the host's agent socket as fd 3. It accepts host
 * connections, starts commands on request, streams their output as framed
 * events, forwards stdin and signals, reaps every zombie in the sandbox, and
 * ends the sandbox when told to (or, for an ephemeral sandbox, when its
 * creator hangs up or its oneshot command ends).
 *
 * It never blocks on anyone: sockets and pipes are non-blocking, events
 * wait in a per-client queue, and a client that does not read slows down
 * the commands it listens to (their pipes are no longer drained) instead of
 * stalling init. A child that stops before its exec does not stall it
 * either: the exec result is read from the poll loop.
 *
 * Runs inside the sandbox's namespaces under the sandbox's seccomp policy
 * and capability bounding set. Not dumpable: processes in the sandbox,
 * which lack CAP_SYS_PTRACE, can neither ptrace it nor open its /proc
 * files (mem, fds, environ). */
#include <fcntl.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
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

#define MAX_CLIENTS INIT_MAX_CLIENTS
#define MAX_PROCS 256
/* A host that ignores the stdin window is cut off past this. */
#define STDIN_HARD_LIMIT (4 * STDIN_WINDOW)
/* A client's event queue above this stops draining the pipes of the
 * commands it listens to: the commands block on write, as on a terminal. */
#define OUT_HIGH_WATER (4u << 20)
#define CHUNK 65536

enum proc_state { P_FREE = 0, P_STARTING, P_RUNNING, P_EXITED };

struct client {
	int fd;
	struct proto_reader rd;
	struct proto_outq out;
	bool doomed; /* broke the protocol: dropped after the current frame */
	bool mute;   /* cannot be written to any more: its events are dropped,
		      * but what it sent before hanging up is still served */
};

/* Output kept for clients that attach later: the last RING_MAX bytes of a
 * stream, with a count of what was dropped before them. Grows on demand,
 * so a quiet process costs nothing. */
#define RING_MAX (1u << 20)
/* All rings together: init lives on a bounded headroom above the
 * commands' memory limit (cgroup.h, CG_INIT_HEADROOM), and 256 chatty
 * processes at 2 MiB each would take 512 MiB of it. Past the budget a
 * ring keeps what it has (older output is dropped, and counted). */
#define RING_BUDGET (16u << 20)
static size_t ring_total;
struct ring {
	uint8_t *buf;
	size_t cap, start, len;
	uint64_t dropped;
};

struct proc {
	enum proc_state state;
	pid_t pid;
	int owner;          /* client that started it (its stdin), -1 when gone */
	uint32_t owner_req;
	/* per client: the request id its events go under, 0 = not attached
	 * (host request ids start at 1) */
	uint32_t att_req[MAX_CLIENTS];
	char *tag;
	char *cmd;
	struct ring rout, rerr;
	int in, out, err, ep;
	int tee_out, tee_err; /* complete output kept in files, or -1 */
	uint8_t *inbuf;
	size_t inlen;
	bool close_in; /* close stdin once inbuf drains */
	bool exited;   /* reaped; status valid */
	int status;
	int exit_code, exit_signal; /* once P_EXITED */
	char *error;                /* why it could not start, once P_EXITED */
	uint64_t exit_seq;          /* order of ending, for the bounded history */
	bool oneshot;
	bool pty;   /* out is a terminal's master */
	bool stalled; /* killed by the watchdog before its exec */
	int64_t kill_at;   /* CLOCK_BOOTTIME ms: its own timeout, 0 = none */
	int64_t kill_left; /* while the clocks stand (paused, checkpointed): ms left */
	bool timed_out;    /* killed at kill_at */
};

/* Ended processes stay listed (and attachable, with their output) up to
 * this many; the oldest goes first. */
#define HISTORY_MAX 32

static struct client clients[MAX_CLIENTS];
static unsigned nclients;
static struct proc procs[MAX_PROCS];
/* One past the highest slot ever taken. Slots are taken lowest first, so
 * loops stop here instead of walking all MAX_PROCS: a slot is ≈ 1 KiB, and
 * a full walk faulted in ≈ 75 pages on init's first pass (≈ 0.1 ms before
 * the first command could start) and touched 256 cache lines on every
 * pass of the loop after. */
static unsigned procs_used;
static int listen_fd = INIT_LISTEN_FD;
/* between MSG_REQ_CHECKPOINT and a re-arm: no host fds, nobody served */
static bool checkpointing;
static char ckpt_token[64];
static bool ephemeral;
/* the creator's death ends the sandbox (PR_SET_PDEATHSIG, set before our
 * exec) until it detaches us */
static bool creator_bound = true;

void init_creds_changed(void)
{
	/* a process of the same uid (sandbox root) could otherwise ptrace
	 * PID 1 when fs.suid_dumpable is 1 */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (creator_bound)
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
}
static bool exiting; /* leave once every queued event is out */
static int exit_code;
static int64_t deadline_ms; /* CLOCK_BOOTTIME, 0 = none */
static uint64_t exit_counter;

_Noreturn static void shutdown_sandbox(int code)
{
	/* Exiting PID 1 makes the kernel SIGKILL every process left in the
	 * pid namespace: nothing can outlive the sandbox. */
	_exit(code);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Queues an event for a client. Queues are written once per loop turn
 * (events of one turn leave together: an exec failure's start and end
 * arrive as one read); a client whose socket is gone is dropped there. */
static void client_queue(int ci, struct proto_msg *m)
{
	if (ci >= 0 && (unsigned)ci < nclients && !clients[ci].mute)
		(void)proto_queue(&clients[ci].out, m);
	proto_msg_free(m);
}

void init_queue(int ci, struct proto_msg *m)
{
	client_queue(ci, m);
}

int init_flush_blocking(int ci)
{
	/* a big file read: keep what waits for the host bounded; a host that
	 * stops reading for half a minute is cut off */
	struct client *c = &clients[ci];
	while (proto_outq_len(&c->out) > (1u << 20)) {
		int r = proto_flush(c->fd, &c->out);
		if (r < 0) {
			c->doomed = true;
			return -1;
		}
		if (r == 0)
			break;
		struct pollfd p = { .fd = c->fd, .events = POLLOUT };
		if (poll(&p, 1, 30000) <= 0) {
			c->doomed = true;
			return -1;
		}
	}
	return 0;
}

static void send_error(int ci, uint32_t id, int code, const char *msg);

void init_send_error(int ci, uint32_t id, int code, const char *msg)
{
	send_error(ci, id, code, msg);
}

static void send_error(int ci, uint32_t id, int code, const char *msg)
{
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_ERROR, id);
	proto_put_u64(&m, F_ERRNO, (uint64_t)(code < 0 ? -code : code));
	proto_put_str(&m, F_MESSAGE, msg);
	client_queue(ci, &m);
}

static void ring_put(struct ring *r, const uint8_t *d, size_t n)
{
	if (n >= RING_MAX) {
		r->dropped += r->len + (n - RING_MAX);
		d += n - RING_MAX;
		n = RING_MAX;
		r->start = r->len = 0;
	}
	if (r->len + n > r->cap && r->cap < RING_MAX) {
		size_t ncap = r->cap ? r->cap : 65536;
		while (ncap < r->len + n && ncap < RING_MAX)
			ncap *= 2;
		uint8_t *nb = ring_total - r->cap + ncap <= RING_BUDGET ? malloc(ncap) : NULL;
		if (nb) {
			ring_total = ring_total - r->cap + ncap;
			/* linearize into the bigger buffer */
			for (size_t i = 0; i < r->len; i++)
				nb[i] = r->buf[(r->start + i) % r->cap];
			free(r->buf);
			r->buf = nb;
			r->cap = ncap;
			r->start = 0;
		}
	}
	if (!r->cap) {
		r->dropped += n;
		return;
	}
	if (n > r->cap) {
		/* a ring that could not grow: only the newest bytes fit */
		r->dropped += r->len + (n - r->cap);
		d += n - r->cap;
		n = r->cap;
		r->start = r->len = 0;
	}
	if (r->len + n > r->cap) {
		size_t drop = r->len + n - r->cap;
		r->start = (r->start + drop) % r->cap;
		r->len -= drop;
		r->dropped += drop;
	}
	for (size_t i = 0; i < n;) {
		size_t at = (r->start + r->len) % r->cap;
		size_t k = r->cap - at < n - i ? r->cap - at : n - i;
		memcpy(r->buf + at, d + i, k);
		r->len += k;
		i += k;
	}
}

static void ring_free(struct ring *r)
{
	ring_total -= r->cap;
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/* Sends one event to every client attached to p (each under its own
 * request id). */
static void broadcast(struct proc *p, struct proto_msg *m)
{
	for (unsigned ci = 0; ci < nclients; ci++) {
		if (!p->att_req[ci])
			continue;
		m->id = p->att_req[ci];
		if (!clients[ci].mute)
			(void)proto_queue(&clients[ci].out, m);
	}
	proto_msg_free(m);
}

static void send_data(struct proc *p, uint16_t type, const void *buf, size_t n)
{
	ring_put(type == MSG_EV_STDERR ? &p->rerr : &p->rout, buf, n);
	int *tee = type == MSG_EV_STDERR ? &p->tee_err : &p->tee_out;
	if (*tee >= 0 && (memguard_room(*tee, n) < 0 || write_full(*tee, buf, n) < 0))
		close_fd(tee); /* the layer is full: keep what fitted */
	bool any = false;
	for (unsigned ci = 0; ci < nclients && !any; ci++)
		any = p->att_req[ci] != 0;
	if (!any)
		return;
	struct proto_msg m;
	proto_msg_init(&m, type, 0);
	proto_put_u64(&m, F_PID, (uint64_t)p->pid);
	proto_put_bytes(&m, F_DATA, buf, n);
	broadcast(p, &m);
}

/* Reads up to budget bytes from a pipe; closes it at EOF. */
static void drain(struct proc *p, int *fd, uint16_t type, size_t budget)
{
	static uint8_t buf[CHUNK];
	while (*fd >= 0 && budget > 0) {
		ssize_t n = read(*fd, buf, budget < sizeof(buf) ? budget : sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close_fd(fd);
			return;
		}
		send_data(p, type, buf, (size_t)n);
		budget -= (size_t)n;
	}
}

/* What a pipe holds right now: the last output of an ended command, but
 * no more (a background child that keeps writing cannot hold the end
 * event back). */
static size_t pending(int fd)
{
	int n = 0;
	if (fd < 0 || ioctl(fd, FIONREAD, &n) < 0 || n < 0)
		return 0;
	return (size_t)n;
}

static void proc_close_io(struct proc *p)
{
	close_fd(&p->in);
	close_fd(&p->out);
	close_fd(&p->err);
	close_fd(&p->ep);
	close_fd(&p->tee_out);
	close_fd(&p->tee_err);
	free(p->inbuf);
	p->inbuf = NULL;
	p->inlen = 0;
}

static void proc_release(struct proc *p)
{
	proc_close_io(p);
	ring_free(&p->rout);
	ring_free(&p->rerr);
	free(p->tag);
	free(p->cmd);
	free(p->error);
	memset(p, 0, sizeof(*p));
	p->in = p->out = p->err = p->ep = p->tee_out = p->tee_err = -1;
	p->owner = -1;
}

static void end_sandbox_after_flush(int code)
{
	exiting = true;
	exit_code = code;
}

static void put_end(struct proto_msg *m, const struct proc *p)
{
	proto_put_u64(m, F_PID, (uint64_t)p->pid);
	proto_put_i64(m, F_EXIT_CODE, p->exit_code);
	proto_put_u64(m, F_SIGNAL, (uint64_t)p->exit_signal);
	if (p->timed_out)
		proto_put_u64(m, F_FLAGS, END_TIMED_OUT);
	if (p->error) {
		proto_put_u64(m, F_ERRNO, ENOENT);
		proto_put_str(m, F_MESSAGE, p->error);
	}
}

/* Kills the commands whose own timeout has come: the whole group (the
 * command leads its session), so `sh -c 'sleep 1000 & sleep 1000'` ends
 * entirely. One that was reaped already is skipped: its pid may be
 * another process's by now. Returns the ms until the next such timeout,
 * or -1 when none is set. */
static int64_t kill_timed_out(void)
{
	int64_t now = 0, next = -1;
	for (unsigned j = 0; j < procs_used; j++) {
		struct proc *p = &procs[j];
		if (!p->kill_at || p->state == P_FREE || p->state == P_EXITED || p->exited)
			continue;
		if (!now) /* the clock is read only when a timeout is set */
			now = clock_boot_ms();
		if (p->kill_at <= now) {
			kill(-p->pid, SIGKILL);
			kill(p->pid, SIGKILL);
			p->timed_out = true;
			p->kill_at = 0;
			continue;
		}
		int64_t left = p->kill_at - now;
		if (next < 0 || left < next)
			next = left > INT32_MAX ? INT32_MAX : left;
	}
	return next;
}

/* Commands' timeouts count the sandbox's running time only. While it is
 * frozen (pause) or checkpointed, CLOCK_BOOTTIME goes on — and a restore
 * may even happen on another boot, where it means nothing — so what is
 * left is kept as a span and turned back into a time when it runs again. */
static void clocks_run(bool run)
{
	int64_t now = clock_boot_ms();
	for (unsigned j = 0; j < procs_used; j++) {
		struct proc *p = &procs[j];
		if (!run && p->kill_at) {
			p->kill_left = p->kill_at > now ? p->kill_at - now : 1;
			p->kill_at = 0;
		} else if (run && p->kill_left) {
			p->kill_at = now + p->kill_left;
			p->kill_left = 0;
		}
	}
}

/* Tells the attached clients and moves p to the history (bounded: the
 * oldest ended process goes). */
static void proc_ended(struct proc *p)
{
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_END, 0);
	put_end(&m, p);
	broadcast(p, &m);
	bool oneshot = p->oneshot;
	proc_close_io(p);
	p->state = P_EXITED;
	memset(p->att_req, 0, sizeof(p->att_req));
	p->owner = -1;
	p->exit_seq = ++exit_counter;
	unsigned n = 0;
	struct proc *oldest = NULL;
	for (unsigned i = 0; i < procs_used; i++) {
		if (procs[i].state != P_EXITED)
			continue;
		n++;
		if (!oldest || procs[i].exit_seq < oldest->exit_seq)
			oldest = &procs[i];
	}
	if (n > HISTORY_MAX && oldest)
		proc_release(oldest);
	if (oneshot)
		end_sandbox_after_flush(0);
}

static void proc_finish(struct proc *p)
{
	drain(p, &p->out, p->pty ? MSG_EV_PTY : MSG_EV_STDOUT, pending(p->out));
	drain(p, &p->err, MSG_EV_STDERR, pending(p->err));
	if (WIFEXITED(p->status)) {
		p->exit_code = WEXITSTATUS(p->status);
		p->exit_signal = 0;
	} else {
		p->exit_code = 128 + WTERMSIG(p->status);
		p->exit_signal = WTERMSIG(p->status);
	}
	/* it may have ended by itself just before its timeout came (a zombie
	 * not reaped yet gets the kill too): only a SIGKILL death is that */
	if (p->exit_signal != SIGKILL)
		p->timed_out = false;
	proc_ended(p);
}

/* The exec result arrived (or the child died before telling). */
static void proc_started(struct proc *p)
{
	int exec_errno = 0;
	char msg[480];
	int k = child_exec_result(p->ep, &exec_errno, msg, sizeof(msg));
	if (k == -EAGAIN)
		return;
	if (k == 0 && p->stalled) {
		/* no exec, no error from the child: it was stopped (by a signal
		 * from inside the sandbox) and killed by the watchdog */
		k = 1;
		exec_errno = ETIMEDOUT;
		safe_snprintf(msg, sizeof(msg), "exec '%s': stopped before its exec, killed after %d ms",
			      p->cmd ? p->cmd : "?", SPAWN_LIMIT_MS);
	}
	close_fd(&p->ep);
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_START, 0);
	proto_put_u64(&m, F_PID, (uint64_t)p->pid);
	broadcast(p, &m);
	if (k == 0) {
		p->state = P_RUNNING;
		if (p->exited)
			proc_finish(p);
		return;
	}
	/* It could not exec: an end with the shell's codes (127 not found,
	 * 126 not runnable) and the reason. The child is reaped by the
	 * SIGCHLD path (proc_find skips ended entries). */
	p->exit_code = exec_errno == ENOENT && strncmp(msg, "exec", 4) == 0 ? 127 : 126;
	p->exit_signal = 0;
	p->error = strdup(msg);
	proc_ended(p);
}

/* A live (starting or running) process by pid. */
static struct proc *proc_find(pid_t pid)
{
	for (unsigned i = 0; i < procs_used; i++)
		if ((procs[i].state == P_STARTING || procs[i].state == P_RUNNING) && procs[i].pid == pid)
			return &procs[i];
	return NULL;
}

static void reap(void)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid <= 0)
			return;
		struct proc *p = proc_find(pid);
		if (!p || p->exited)
			continue;
		p->exited = true;
		p->status = st;
		if (p->state == P_STARTING)
			proc_started(p); /* EOF or the error is there now */
		else
			proc_finish(p);
	}
}

static int parse_exec(const struct proto_frame *f, struct exec_req *req)
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
		switch (fl.tag) {
		case F_ARG: r = proto_field_strdup(&fl, &req->argv[ia++]); break;
		case F_ENV: r = proto_field_strdup(&fl, &req->env[ie++]); break;
		case F_CWD: free(req->cwd); req->cwd = NULL; r = proto_field_strdup(&fl, &req->cwd); break;
		case F_HOME: free(req->home); req->home = NULL; r = proto_field_strdup(&fl, &req->home); break;
		case F_USER: free(req->user); req->user = NULL; r = proto_field_strdup(&fl, &req->user); break;
		case F_UID: r = proto_field_u64(&fl, &v); req->uid = (uid_t)v; break;
		case F_LOOKUP: lookup_name = true; break;
		case F_GID: r = proto_field_u64(&fl, &v); req->gid = (gid_t)v; break;
		case F_FLAGS: r = proto_field_u64(&fl, &v); req->flags = (uint32_t)v; break;
		case F_TAG: free(req->tag); req->tag = NULL; r = proto_field_strdup(&fl, &req->tag); break;
		case F_TEE_DIR: free(req->tee_dir); req->tee_dir = NULL; r = proto_field_strdup(&fl, &req->tee_dir); break;
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

static void handle_exec(int ci, const struct proto_frame *f)
{
	struct exec_req req = { 0 };
	int r = parse_exec(f, &req);
	if (r == -ABOX_ENOUSER) {
		char m2[128];
		safe_snprintf(m2, sizeof(m2), "exec: unknown user '%s' (not in the sandbox's /etc/passwd)",
			      req.user ? req.user : "");
		send_error(ci, f->id, r, m2);
		exec_req_free(&req);
		return;
	}
	if (r == -ERANGE) {
		send_error(ci, f->id, r, "exec: the user's uid or gid in /etc/passwd is outside 0-65535");
		exec_req_free(&req);
		return;
	}
	if (r < 0) {
		send_error(ci, f->id, r, "exec: malformed request");
		exec_req_free(&req);
		return;
	}
	struct proc *p = NULL;
	for (unsigned i = 0; i < MAX_PROCS && !p; i++)
		if (procs[i].state == P_FREE)
			p = &procs[i];
	if (p && (unsigned)(p - procs) >= procs_used)
		procs_used = (unsigned)(p - procs) + 1;
	if (!p) {
		send_error(ci, f->id, EAGAIN, "exec: too many processes tracked by init");
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
			send_error(ci, f->id, r, m2);
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
		send_error(ci, f->id, r, m2);
		free(tag);
		if (tee_out >= 0)
			close(tee_out);
		if (tee_err >= 0)
			close(tee_err);
		if (oneshot)
			end_sandbox_after_flush(125);
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

/* The process a request is about: by F_PID or F_TAG (live ones first, then
 * the history, newest first), or when the host does not know the pid yet
 * (it sent the request before reading the start event), by the id of the
 * exec or attach request on the same connection. */
static struct proc *proc_of_frame(int ci, const struct proto_frame *f, uint64_t *sig,
				  const uint8_t **data, size_t *len)
{
	size_t off = 0;
	struct proto_field fl;
	uint64_t pid = 0;
	const uint8_t *tag = NULL;
	size_t taglen = 0;
	while (proto_field_next(f, &off, &fl) > 0) {
		if (fl.tag == F_PID)
			(void)proto_field_u64(&fl, &pid);
		else if (fl.tag == F_SIGNAL && sig)
			(void)proto_field_u64(&fl, sig);
		else if (fl.tag == F_TAG) {
			tag = fl.val;
			taglen = fl.len;
		} else if (fl.tag == F_DATA && data) {
			*data = fl.val;
			*len = fl.len;
		}
	}
	struct proc *best = NULL;
	for (unsigned i = 0; i < procs_used; i++) {
		struct proc *p = &procs[i];
		if (p->state == P_FREE)
			continue;
		bool match;
		if (pid > 0)
			match = (uint64_t)p->pid == pid;
		else if (tag)
			match = p->tag && strlen(p->tag) == taglen && memcmp(p->tag, tag, taglen) == 0;
		else
			match = (p->owner == ci && p->owner_req == f->id) ||
				p->att_req[ci] == f->id;
		if (!match)
			continue;
		bool live = p->state != P_EXITED;
		bool best_live = best && best->state != P_EXITED;
		if (!best || (live && !best_live) || (live == best_live && !live && p->exit_seq > best->exit_seq))
			best = p;
	}
	return best;
}

static void ack_stdin(struct proc *p, size_t n)
{
	if (n == 0)
		return;
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_STDIN_ACK, p->owner_req);
	proto_put_u64(&m, F_PID, (uint64_t)p->pid);
	proto_put_u64(&m, F_COUNT, n);
	client_queue(p->owner, &m);
}

static void flush_stdin(struct proc *p)
{
	size_t done = 0;
	while (p->in >= 0 && p->inlen > 0) {
		ssize_t w = write(p->in, p->inbuf, p->inlen);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		if (w < 0) {
			/* the command closed its stdin: drop what is pending */
			done += p->inlen;
			p->inlen = 0;
			close_fd(&p->in);
			break;
		}
		memmove(p->inbuf, p->inbuf + w, p->inlen - (size_t)w);
		p->inlen -= (size_t)w;
		done += (size_t)w;
	}
	if (p->in >= 0 && p->inlen == 0 && p->close_in)
		close_fd(&p->in);
	ack_stdin(p, done);
}

static void replay(int ci, uint32_t id, const struct proc *p, const struct ring *r, uint16_t type)
{
	if (r->dropped) {
		/* the marker: this many bytes came before what is kept */
		struct proto_msg m;
		proto_msg_init(&m, type, id);
		proto_put_u64(&m, F_PID, (uint64_t)p->pid);
		proto_put_u64(&m, F_DROPPED, r->dropped);
		proto_put_bytes(&m, F_DATA, "", 0);
		client_queue(ci, &m);
	}
	for (size_t off = 0; off < r->len;) {
		size_t at = (r->start + off) % r->cap;
		size_t k = r->cap - at < r->len - off ? r->cap - at : r->len - off;
		if (k > CHUNK)
			k = CHUNK;
		struct proto_msg m;
		proto_msg_init(&m, type, id);
		proto_put_u64(&m, F_PID, (uint64_t)p->pid);
		proto_put_bytes(&m, F_DATA, r->buf + at, k);
		client_queue(ci, &m);
		off += k;
	}
}

/* Attaches a client to a running process (or one in the history): start,
 * what its streams kept, then live events (or the end right away). */
static void handle_attach(int ci, const struct proto_frame *f)
{
	struct proc *p = proc_of_frame(ci, f, NULL, NULL, NULL);
	if (!p) {
		send_error(ci, f->id, ESRCH, "attach: no such process");
		return;
	}
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_START, f->id);
	proto_put_u64(&m, F_PID, (uint64_t)p->pid);
	client_queue(ci, &m);
	replay(ci, f->id, p, &p->rout, p->pty ? MSG_EV_PTY : MSG_EV_STDOUT);
	replay(ci, f->id, p, &p->rerr, MSG_EV_STDERR);
	if (p->state == P_EXITED) {
		proto_msg_init(&m, MSG_EV_END, f->id);
		put_end(&m, p);
		client_queue(ci, &m);
		return;
	}
	p->att_req[ci] = f->id;
}

static void handle_list(int ci, const struct proto_frame *f)
{
	for (unsigned i = 0; i < procs_used; i++) {
		const struct proc *p = &procs[i];
		if (p->state == P_FREE)
			continue;
		struct proto_msg m;
		proto_msg_init(&m, MSG_EV_PROC, f->id);
		proto_put_u64(&m, F_PID, (uint64_t)p->pid);
		if (p->tag)
			proto_put_str(&m, F_TAG, p->tag);
		if (p->cmd)
			proto_put_str(&m, F_ARG, p->cmd);
		proto_put_u64(&m, F_FLAGS, p->state == P_EXITED ? 0 : 1);
		if (p->state == P_EXITED) {
			proto_put_i64(&m, F_EXIT_CODE, p->exit_code);
			proto_put_u64(&m, F_SIGNAL, (uint64_t)p->exit_signal);
		}
		client_queue(ci, &m);
	}
	struct proto_msg ok;
	proto_msg_init(&ok, MSG_EV_OK, f->id);
	client_queue(ci, &ok);
}

static void client_drop(unsigned ci);

/* Lets go of every fd that leads out of the sandbox, so a checkpointer can
 * dump the tree: the clients (after the answer went out), the listening
 * socket, the writable layer's fd. A restored init must not die with its
 * restorer either: the parent-death signal goes. */
static void handle_checkpoint(int ci, const struct proto_frame *f)
{
	size_t off = 0;
	struct proto_field fl;
	char *tok = NULL;
	while (proto_field_next(f, &off, &fl) > 0)
		if (fl.tag == F_NAME && !tok && proto_field_strdup(&fl, &tok) < 0)
			tok = NULL;
	if (!tok || !*tok || strlen(tok) >= sizeof(ckpt_token) || strspn(tok, "abcdefghijklmnopqrstuvwxyz0123456789") != strlen(tok)) {
		free(tok);
		send_error(ci, f->id, EINVAL, "checkpoint: bad token");
		return;
	}
	/* an asker that is gone already (killed right after it sent this)
	 * cannot dump, nor re-arm us: letting go now would leave a sandbox
	 * nobody can reach, since its keeper, which saw us still listening,
	 * has left. The request is dropped; everything stays as it was. */
	struct pollfd hp = { .fd = clients[ci].fd, .events = POLLRDHUP };
	if (poll(&hp, 1, 0) > 0 && (hp.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
		free(tok);
		return;
	}
	safe_snprintf(ckpt_token, sizeof(ckpt_token), "%s", tok);
	free(tok);
	prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
	creator_bound = false;
	/* everything but the asker first; the asker's connection closes
	 * last, after the answer: its end of file tells the host that
	 * nothing is left (it dumps as soon as it sees it) */
	close(listen_fd);
	listen_fd = -1;
	close(INIT_LAYER_FD);
	/* a cgroup file is not the checkpointer's to dump (and names the
	 * old sandbox's cgroup): the re-arm brings the new one */
	child_cgroup_drop();
	checkpointing = true;
	clocks_run(false);
	for (unsigned i = nclients; i-- > 0;)
		if ((int)i != ci)
			client_drop(i);
	unsigned me = 0; /* the asker is the only one left */
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_OK, f->id);
	client_queue((int)me, &m);
	/* the answer is small: out now, blocking briefly if need be */
	int fl0 = fcntl(clients[me].fd, F_GETFL);
	fcntl(clients[me].fd, F_SETFL, fl0 & ~O_NONBLOCK);
	(void)proto_flush(clients[me].fd, &clients[me].out);
	client_drop(me);
}

/* SIGUSR2 while checkpointing: fetch the new listening socket and layer
 * fd from the host (see INIT_REARM_NAME). Anything odd leaves us waiting
 * for the next try. */
static void rearm(void)
{
	if (!checkpointing)
		return;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t nl = (size_t)safe_snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "%s%s", INIT_REARM_NAME, ckpt_token);
	struct timeval tv = { .tv_sec = 2 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(s, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + nl)) < 0) {
		close(s);
		return;
	}
	char byte;
	int got[3] = { -1, -1, -1 }, fds[3] = { -1, -1, -1 };
	size_t nfd = 0;
	ssize_t n = fd_recv(s, &byte, 1, got, 3, &nfd, 0);
	close(s);
	if (n != 1 || nfd < 2) {
		for (size_t i = 0; i < nfd; i++)
			close(got[i]);
		return;
	}
	/* the kernel gave the lowest free numbers, which may be 3, 4 and 5
	 * themselves: move them all out of the way before placing them */
	for (size_t i = 0; i < nfd; i++) {
		fds[i] = fcntl(got[i], F_DUPFD_CLOEXEC, 10);
		close(got[i]);
	}
	/* the commands' cgroup, when the host sent one */
	if (fds[2] >= 0) {
		if (dup3(fds[2], INIT_CMDS_FD, O_CLOEXEC) >= 0)
			child_cgroup_probe();
		close(fds[2]);
	}
	struct stat a, b;
	bool ok = fds[0] >= 0 && fds[1] >= 0 && fstat(fds[0], &a) == 0 && S_ISSOCK(a.st_mode) &&
		  fstat(fds[1], &b) == 0 && S_ISDIR(b.st_mode) && dup3(fds[0], INIT_LISTEN_FD, O_CLOEXEC) >= 0 &&
		  dup3(fds[1], INIT_LAYER_FD, O_CLOEXEC) >= 0;
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	if (!ok)
		return;
	listen_fd = INIT_LISTEN_FD;
	fcntl(listen_fd, F_SETFL, O_NONBLOCK);
	checkpointing = false;
	clocks_run(true);
}

static void handle_frame(int ci, const struct proto_frame *f)
{
	for (unsigned i = 0; i < f->nfds; i++)
		close(f->fds[i]); /* no request of this version passes fds in */
	switch (f->type) {
	case MSG_REQ_EXEC:
		handle_exec(ci, f);
		break;
	case MSG_REQ_STDIN: {
		const uint8_t *data = NULL;
		size_t len = 0;
		struct proc *p = proc_of_frame(ci, f, NULL, &data, &len);
		if (!p)
			break; /* stdin of a gone process: like a closed pipe */
		if (p->in < 0 || p->close_in) {
			ack_stdin(p, len); /* consumed: dropped */
			break;
		}
		if (p->inlen + len > STDIN_HARD_LIMIT) {
			clients[ci].doomed = true; /* ignores the window */
			return;
		}
		uint8_t *nb = realloc(p->inbuf, p->inlen + len);
		if (!nb)
			break;
		p->inbuf = nb;
		memcpy(p->inbuf + p->inlen, data, len);
		p->inlen += len;
		flush_stdin(p);
		break;
	}
	case MSG_REQ_STDIN_CLOSE: {
		struct proc *p = proc_of_frame(ci, f, NULL, NULL, NULL);
		if (p) {
			p->close_in = true;
			flush_stdin(p);
		}
		break;
	}
	case MSG_REQ_SIGNAL: {
		uint64_t sig = 0;
		struct proc *p = proc_of_frame(ci, f, &sig, NULL, NULL);
		if (!p || p->state == P_EXITED || sig == 0 || sig >= 65) {
			send_error(ci, f->id, p && p->state != P_EXITED ? EINVAL : ESRCH,
				   !p ? "signal: no such process" : p->state == P_EXITED ? "signal: the process has ended"
										: "signal: bad signal number");
			break;
		}
		/* the command is a session leader: its pid is its group id
		 * (until its setsid ran, only the pid itself exists) */
		if (kill(-p->pid, (int)sig) < 0 && errno == ESRCH)
			(void)kill(p->pid, (int)sig);
		break;
	}
	case MSG_REQ_DETACH: {
		/* the creator recorded us: from now on we outlive it */
		prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
		creator_bound = false;
		struct proto_msg m;
		proto_msg_init(&m, MSG_EV_OK, f->id);
		client_queue(ci, &m);
		break;
	}
	case MSG_REQ_SET_TIMEOUT: {
		size_t off = 0;
		struct proto_field fl;
		uint64_t ms = 0, flags = 0;
		bool have = false;
		while (proto_field_next(f, &off, &fl) > 0) {
			if (fl.tag == F_TIMEOUT_MS && proto_field_u64(&fl, &ms) == 0)
				have = true;
			else if (fl.tag == F_FLAGS)
				(void)proto_field_u64(&fl, &flags);
		}
		if (!have || ms > (uint64_t)INT32_MAX * 1000) {
			send_error(ci, f->id, EINVAL, "set-timeout: bad value");
			break;
		}
		deadline_ms = ms ? clock_boot_ms() + (int64_t)ms : 0;
		if (flags & (CLOCKS_STOP | CLOCKS_RUN))
			clocks_run(flags & CLOCKS_RUN);
		struct proto_msg m;
		proto_msg_init(&m, MSG_EV_OK, f->id);
		client_queue(ci, &m);
		break;
	}
	case MSG_REQ_ATTACH:
		handle_attach(ci, f);
		break;
	case MSG_REQ_RESIZE: {
		struct proc *p = proc_of_frame(ci, f, NULL, NULL, NULL);
		uint64_t rows = 0, cols = 0;
		size_t off = 0;
		struct proto_field fl;
		while (proto_field_next(f, &off, &fl) > 0) {
			if (fl.tag == F_ROWS)
				(void)proto_field_u64(&fl, &rows);
			else if (fl.tag == F_COLS)
				(void)proto_field_u64(&fl, &cols);
		}
		if (!p || !p->pty || p->out < 0 || !rows || !cols || rows > 1000 || cols > 1000) {
			send_error(ci, f->id, p && p->pty ? EINVAL : ENOTTY,
				   p && p->pty ? "resize: bad size" : "resize: not a process on a terminal");
			break;
		}
		/* the kernel sends SIGWINCH to the terminal's foreground group */
		struct winsize ws = { .ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols };
		(void)ioctl(p->out, TIOCSWINSZ, &ws);
		break;
	}
	case MSG_REQ_LIST:
		handle_list(ci, f);
		break;
	case MSG_REQ_FS_READ:
	case MSG_REQ_FS_WRITE:
	case MSG_REQ_FS_DATA:
	case MSG_REQ_FS_CLOSE:
	case MSG_REQ_FS_STAT:
	case MSG_REQ_FS_LIST:
	case MSG_REQ_FS_MKDIR:
	case MSG_REQ_FS_MOVE:
	case MSG_REQ_FS_REMOVE:
	case MSG_REQ_FS_WATCH:
		files_handle(ci, f);
		break;
	case MSG_REQ_FS_META_GET:
	case MSG_REQ_FS_META_SET:
		meta_handle(ci, f);
		break;
	case MSG_REQ_ACCOUNTS:
		users_accounts(ci, f);
		break;
	case MSG_REQ_FS_UNWATCH: {
		watch_stop(ci, f->id);
		struct proto_msg m;
		proto_msg_init(&m, MSG_EV_OK, f->id);
		client_queue(ci, &m);
		break;
	}
	case MSG_REQ_METRICS: {
		struct statfs sf;
		struct proto_msg m;
		if (fstatfs(INIT_LAYER_FD, &sf) < 0) {
			send_error(ci, f->id, errno, "metrics: statfs of the writable layer failed");
			break;
		}
		proto_msg_init(&m, MSG_EV_OK, f->id);
		proto_put_u64(&m, F_DISK_USED, (uint64_t)(sf.f_blocks - sf.f_bfree) * (uint64_t)sf.f_bsize);
		proto_put_u64(&m, F_DISK_TOTAL, (uint64_t)sf.f_blocks * (uint64_t)sf.f_bsize);
		client_queue(ci, &m);
		break;
	}
	case MSG_REQ_CHECKPOINT:
		handle_checkpoint(ci, f);
		break;
	case MSG_REQ_SHUTDOWN:
		shutdown_sandbox(0);
	default:
		send_error(ci, f->id, EOPNOTSUPP, "unknown request type");
		break;
	}
}

static void client_drop(unsigned ci)
{
	close(clients[ci].fd);
	proto_reader_free(&clients[ci].rd);
	proto_outq_free(&clients[ci].out);
	unsigned last = nclients - 1;
	files_client_gone((int)ci);
	watch_client_gone((int)ci);
	if (last != ci) {
		files_client_moved((int)last, (int)ci);
		watch_client_moved((int)last, (int)ci);
	}
	for (unsigned i = 0; i < procs_used; i++) {
		if (procs[i].state == P_FREE)
			continue;
		struct proc *p = &procs[i];
		if (p->owner == (int)ci)
			p->owner = -1;
		else if (p->owner == (int)last)
			p->owner = (int)ci;
		p->att_req[ci] = p->att_req[last];
		p->att_req[last] = 0;
	}
	clients[ci] = clients[last];
	nclients--;
	if (ephemeral)
		shutdown_sandbox(0);
}

static void client_add(int fd);

static void client_accept(void)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	client_add(fd);
}

static void client_add(int fd)
{
	if (nclients == MAX_CLIENTS) {
		close(fd);
		return;
	}
	struct client *c = &clients[nclients];
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	proto_reader_init(&c->rd, fd);
	nclients++;
	struct proto_msg m;
	proto_msg_init(&m, MSG_HELLO, 0);
	proto_put_u64(&m, F_VERSION, ABOX_PROTO_VERSION);
	proto_put_u64(&m, F_PID, (uint64_t)getpid());
	client_queue((int)nclients - 1, &m);
}

/* Returns false when the client was dropped. */
static bool client_read(unsigned ci)
{
	int k = proto_reader_fill(&clients[ci].rd);
	if (k == -EAGAIN)
		return true;
	if (k < 0 || clients[ci].rd.eof) {
		client_drop(ci);
		return false;
	}
	struct proto_frame f;
	while ((k = proto_reader_next(&clients[ci].rd, &f)) > 0) {
		handle_frame((int)ci, &f);
		if (clients[ci].doomed)
			k = -EPROTO;
		if (k < 0)
			break;
	}
	if (k < 0) { /* a peer that breaks the protocol is cut off */
		client_drop(ci);
		return false;
	}
	return true;
}

static bool output_blocked(const struct proc *p)
{
	for (unsigned ci = 0; ci < nclients; ci++)
		if (p->att_req[ci] && proto_outq_len(&clients[ci].out) > OUT_HIGH_WATER)
			return true;
	return false;
}

static bool queues_empty(void)
{
	for (unsigned i = 0; i < nclients; i++)
		if (proto_outq_len(&clients[i].out) > 0)
			return false;
	return true;
}

int main(int argc, char **argv)
{
	/* First thing: not dumpable (see the file comment). execve reset it. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* exec from a memfd names the process after the fd; ps and
	 * /proc/1/comm should say what it is */
	prctl(PR_SET_NAME, "abox-init", 0, 0, 0);
	/* the creator's supplementary groups (root's 0, say) would otherwise
	 * widen what a file operation done as a user may touch */
	syscall(SYS_setgroups, 0L, NULL);

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "ephemeral") == 0)
			ephemeral = true;
		else if (strcmp(argv[i], "spawn=fork") == 0)
			child_always_fork();
		else if (strncmp(argv[i], "timeout_ms=", 11) == 0)
			deadline_ms = clock_boot_ms() + strtoll(argv[i] + 11, NULL, 10);
		else if (strncmp(argv[i], "memory=", 7) == 0)
			memguard_set_limit(strtoull(argv[i] + 7, NULL, 10));
	}
	/* procs[] is not touched here: its fds are set when a slot is taken
	 * (an idle sandbox keeps those pages unallocated) */

	/* The creator's death ends the sandbox (the signal was set before
	 * exec) until a long-lived one is detached (MSG_REQ_DETACH). */

	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, INIT_REARM_SIGNAL);
	sigaddset(&mask, watchdog_signal());
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		return 125;
	fcntl(listen_fd, F_SETFD, FD_CLOEXEC);
	fcntl(INIT_LAYER_FD, F_SETFD, FD_CLOEXEC);
	child_cgroup_probe();
	fcntl(listen_fd, F_SETFL, O_NONBLOCK);
	/* An ephemeral sandbox's creator may hand over one end of a
	 * connected pair instead of a listening socket: it is the only
	 * client there will ever be. */
	int listening = 1;
	socklen_t ll = sizeof(listening);
	if (ephemeral && getsockopt(listen_fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) == 0 && !listening) {
		client_add(listen_fd);
		listen_fd = -1;
	}

	static struct pollfd pfd[2 + MAX_CLIENTS + 4 * MAX_PROCS + 16];
	for (;;) {
		/* a client that hung up may still have requests in flight (a
		 * signal, a resize, then close): stop writing to it, keep
		 * reading it until its end of file */
		for (unsigned i = nclients; i-- > 0;)
			if (proto_outq_len(&clients[i].out) && proto_flush(clients[i].fd, &clients[i].out) < 0) {
				clients[i].mute = true;
				proto_outq_free(&clients[i].out);
			}
		if (exiting && (queues_empty() || nclients == 0))
			shutdown_sandbox(exit_code);
		nfds_t n = 0;
		pfd[n++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = exiting ? -1 : listen_fd, .events = POLLIN };
		for (unsigned i = 0; i < nclients; i++) {
			/* clients are always read: stdin is bounded by its window,
			 * so signals never wait behind it */
			short ev = exiting ? 0 : POLLIN;
			if (proto_outq_len(&clients[i].out))
				ev |= POLLOUT;
			pfd[n++] = (struct pollfd){ .fd = clients[i].fd, .events = ev };
		}
		for (unsigned j = 0; j < procs_used; j++) {
			struct proc *p = &procs[j];
			if (p->state == P_FREE || p->state == P_EXITED)
				continue;
			bool hold = output_blocked(p);
			pfd[n++] = (struct pollfd){ .fd = p->ep, .events = POLLIN };
			pfd[n++] = (struct pollfd){ .fd = hold ? -1 : p->out, .events = POLLIN };
			pfd[n++] = (struct pollfd){ .fd = hold ? -1 : p->err, .events = POLLIN };
			pfd[n++] = (struct pollfd){ .fd = p->inlen ? p->in : -1, .events = POLLOUT };
		}
		nfds_t watch_at = n;
		n += watch_pollfds(&pfd[n]);
		int timeout = -1;
		if (deadline_ms) {
			int64_t left = deadline_ms - clock_boot_ms();
			if (left <= 0)
				shutdown_sandbox(124);
			timeout = left > INT32_MAX ? INT32_MAX : (int)left;
		}
		int64_t next_kill = kill_timed_out();
		if (next_kill >= 0 && (timeout < 0 || next_kill < timeout))
			timeout = (int)next_kill;
		int r = poll(pfd, n, timeout);
		if (r < 0 && errno != EINTR) {
			/* EINVAL: our fd limit was lowered below what we poll; take
			 * the hard limit back if we may, else end cleanly */
			struct rlimit rl;
			if (errno == EINVAL && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
				rl.rlim_cur = rl.rlim_max;
				if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
					continue;
			}
			shutdown_sandbox(125);
		}
		if (r <= 0)
			continue;

		/* Output first, then exits: a command's last bytes must precede
		 * its end event. */
		nfds_t at = 2 + nclients;
		for (unsigned j = 0; j < procs_used; j++) {
			struct proc *p = &procs[j];
			if (p->state == P_FREE || p->state == P_EXITED)
				continue;
			struct pollfd *q = &pfd[at];
			at += 4;
			if (q[0].revents && p->state == P_STARTING)
				proc_started(p);
			if (p->state == P_FREE || p->state == P_EXITED)
				continue;
			if (q[1].revents)
				drain(p, &p->out, p->pty ? MSG_EV_PTY : MSG_EV_STDOUT, CHUNK);
			if (q[2].revents)
				drain(p, &p->err, MSG_EV_STDERR, CHUNK);
			if (q[3].revents)
				flush_stdin(p);
		}
		watch_ready(&pfd[watch_at]);
		if (pfd[0].revents) {
			struct signalfd_siginfo si;
			bool want_rearm = false;
			while (read(sfd, &si, sizeof(si)) > 0)
				want_rearm |= si.ssi_signo == INIT_REARM_SIGNAL;
			reap();
			if (want_rearm)
				rearm();
		}
		for (unsigned i = nclients; i-- > 0;) {
			/* a request may have dropped clients (a checkpoint
			 * drops them all): their slots are gone */
			if (i >= nclients)
				continue;
			short rev = pfd[2 + i].revents;
			if (!rev)
				continue;
			if ((rev & POLLOUT) && proto_flush(clients[i].fd, &clients[i].out) < 0) {
				clients[i].mute = true;
				proto_outq_free(&clients[i].out);
			}
			if ((rev & (POLLIN | POLLHUP | POLLERR)) && !client_read(i))
				continue;
		}
		if (pfd[1].revents)
			client_accept();
	}
}
