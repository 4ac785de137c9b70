/* oci.c — abox-init in an OCI container (its "oci" argument): the
 * container's process, held from the create until the start as runc's
 * init waits on its fifo, then run with the stdin, stdout and stderr init
 * was given (the container engine's pipes or terminal); its end is init's,
 * with its status, so the engine that reaps init reads the container's
 * exit code. The signals an engine sends to the container's pid (init's)
 * go to the process, as they would reach runc's init.
 * Runs only inside the sandbox, as its PID 1. */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base.h"
#include "capraw.h"
#include "init.h"
#include "proto/messages.h"
#include "tables.h"

bool oci_mode;
static struct exec_req held;
static bool have_held, started;
static int held_tty = -1; /* the held process's terminal (EXEC_TTY), or -1 */
static int extra[INIT_OCI_MAX_FDS]; /* its preserved fds (MSG_REQ_OCI_FDS), for 3, 4, ... */
static unsigned nextra;
static pid_t main_pid;
/* the container's seccomp profile (linux.seccomp), for its execs as for
 * its process: runc's exec runs under the container's profile too */
static uint64_t *filter;
static unsigned short filter_len;

/* What `kill` may send a container, as runc's init would get it: the
 * kernel drops signals init neither handles nor blocks, so every one a
 * process can be sent is blocked (read from init's signalfd) and passed
 * on, but SIGKILL and SIGSTOP (they end or stop init itself), SIGCHLD
 * (init's own), the faults the kernel raises in a process for itself
 * (blocking them changes nothing), the C library's own real-time signals
 * (its threads' set*id calls wait on them) and init's watchdog timer.
 * SIGUSR2 is passed on unless a checkpoint waits for it (init's re-arm). */
static bool forwarded(int sig)
{
	static const int not_ours[] = { SIGKILL, SIGSTOP, SIGCHLD, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP };
	for (size_t i = 0; i < ELEMENTSOF(not_ours); i++)
		if (sig == not_ours[i])
			return false;
	return sig > 0 && sig < _NSIG && (sig < 32 || sig >= SIGRTMIN) && sig != watchdog_signal();
}

void oci_caps_park(void)
{
	struct init_caps data[2];
	const uint32_t admin = 1u << INIT_CAP_SYS_ADMIN;
	if (init_caps_get(data) < 0)
		_exit(125);
	/* never inheritable, so no exec of init's gives anything further
	 * (root's exec adds the inheritable set to its permitted set, setuid
	 * files included where no_new_privs is off); CAP_SYS_ADMIN outside
	 * the bounding set is kept for the children's profile alone, never
	 * effective in init */
	bool parked = (data[0].permitted & admin) && prctl(PR_CAPBSET_READ, INIT_CAP_SYS_ADMIN, 0, 0, 0) == 0;
	if (!data[0].inheritable && !data[1].inheritable && !(parked && (data[0].effective & admin)))
		return;
	if (parked)
		data[0].effective &= ~admin;
	data[0].inheritable = data[1].inheritable = 0;
	if (init_caps_set(data) < 0)
		_exit(125);
}

void oci_signals(sigset_t *mask)
{
	for (int sig = 1; sig < _NSIG; sig++)
		if (forwarded(sig))
			sigaddset(mask, sig);
}

/* Whether the process's program is there to run, as runc's init checks
 * before it waits: a create whose start would fail fails now, in runc's
 * words. */
static bool runnable(const struct exec_req *req, char *why, size_t n)
{
	const char *a0 = req->argv[0], *path = NULL;
	char buf[4200];
	if (strchr(a0, '/')) {
		if (a0[0] != '/' && req->cwd)
			safe_snprintf(buf, sizeof(buf), "%s/%s", req->cwd, a0);
		else
			safe_snprintf(buf, sizeof(buf), "%s", a0);
		if (access(buf, X_OK) == 0)
			return true;
		safe_snprintf(why, n, "exec: \"%s\": %s", a0,
			      errno == ENOENT   ? "no such file or directory"
			      : errno == EACCES ? "permission denied"
						: "cannot be run");
		return false;
	}
	for (size_t i = 0; req->env && req->env[i]; i++)
		if (!strncmp(req->env[i], "PATH=", 5))
			path = req->env[i] + 5;
	if (!path)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");
		safe_snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, path, a0);
		if (len && access(buf, X_OK) == 0)
			return true;
		path += len + (path[len] == ':');
	}
	safe_snprintf(why, n, "exec: \"%s\": executable file not found in $PATH", a0);
	return false;
}

void oci_hold(int ci, const struct proto_frame *f, struct exec_req *req)
{
	char why[480];
	if (!oci_mode || have_held || started) {
		init_send_error(ci, f->id, EALREADY,
				oci_mode ? "exec: the container's process is set already"
					 : "exec: not an OCI container");
		exec_req_free(req);
		return;
	}
	if (!runnable(req, why, sizeof(why))) {
		init_send_error(ci, f->id, ENOENT, why);
		exec_req_free(req);
		return;
	}
	if ((req->flags & EXEC_TTY) &&
	    (f->nfds != 1 || (held_tty = fcntl(f->fds[0], F_DUPFD_CLOEXEC, 3)) < 0)) {
		init_send_error(ci, f->id, EINVAL, "exec: a terminal was announced and not passed");
		exec_req_free(req);
		return;
	}
	if (req->filter_len) {
		size_t n = req->filter_len * sizeof(*filter);
		if (!(filter = malloc(n))) {
			init_send_error(ci, f->id, ENOMEM, "exec: the container's seccomp profile");
			exec_req_free(req);
			return;
		}
		memcpy(filter, req->filter, n);
		filter_len = req->filter_len;
	}
	held = *req;
	memset(req, 0, sizeof(*req));
	held.flags &= ~EXEC_HELD;
	have_held = true;
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_OK, f->id);
	init_queue(ci, &m);
}

void oci_fds(int ci, const struct proto_frame *f)
{
	if (!oci_mode || have_held || started) {
		init_send_error(ci, f->id, EALREADY,
				"preserved fds: only before the container's process is set");
		return;
	}
	if (nextra + f->nfds > INIT_OCI_MAX_FDS) {
		init_send_error(ci, f->id, EMFILE, "preserved fds: more than abox passes to a container");
		return;
	}
	for (unsigned i = 0; i < f->nfds; i++) {
		/* a copy of our own: the frame's are closed after this */
		int fd = fcntl(f->fds[i], F_DUPFD_CLOEXEC, 3);
		if (fd < 0) {
			init_send_error(ci, f->id, errno, "preserved fds: keep one");
			return;
		}
		extra[nextra++] = fd;
	}
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_OK, f->id);
	init_queue(ci, &m);
}

/* Makes req's process with stdio as its stdin, stdout and stderr in slot
 * p, owned by client ci's request f (its start and end go there); takes
 * req. The pid, or -errno with nothing made. */
static pid_t spawn(int ci, const struct proto_frame *f, struct proc *p, struct exec_req *req,
		   const int stdio[3], bool oci_main)
{
	char cmd[256];
	size_t used = 0;
	cmd[0] = '\0';
	for (size_t i = 0; req->argv[i] && used + 2 < sizeof(cmd); i++)
		used += safe_snprintf(cmd + used, sizeof(cmd) - used, "%s%s", i ? " " : "", req->argv[i]);
	pid_t pid = 0;
	int ep = -1;
	bool stalled = false;
	int r = child_spawn_extra(req, stdio, oci_main ? extra : NULL, oci_main ? nextra : 0, &pid, &ep,
				  &stalled);
	bool bound = req->flags & EXEC_BOUND;
	exec_req_free(req);
	if (r < 0)
		return r;
	*p = (struct proc){ .state = P_STARTING,
			    .pid = pid,
			    .owner = ci,
			    .owner_req = f->id,
			    .cmd = strdup(cmd),
			    .in = -1,
			    .out = -1,
			    .err = -1,
			    .ep = ep,
			    .tee_out = -1,
			    .tee_err = -1,
			    .stalled = stalled,
			    .oci_main = oci_main,
			    .bound = bound };
	p->att_req[ci] = f->id;
	proc_started(p); /* usually not known yet: the poll loop watches ep */
	return pid;
}

void oci_start(int ci, const struct proto_frame *f)
{
	if (!have_held) {
		init_send_error(ci, f->id, started ? EALREADY : ENOENT,
				started ? "start: the container's process was started already"
					: "start: this sandbox has no container process");
		return;
	}
	struct proc *p = procs_slot();
	if (!p) {
		init_send_error(ci, f->id, EAGAIN, "start: too many processes tracked by init");
		return;
	}
	int stdio[3] = { 0, 1, 2 };
	if (held_tty >= 0)
		stdio[0] = stdio[1] = stdio[2] = held_tty;
	/* set before the spawn: a process that ends at once is then known
	 * as the container's when its end is read */
	have_held = false;
	started = true;
	pid_t pid = spawn(ci, f, p, &held, stdio, true);
	if (held_tty >= 0)
		close(held_tty);
	held_tty = -1;
	for (unsigned i = 0; i < nextra; i++)
		close(extra[i]);
	nextra = 0;
	if (pid < 0) {
		init_send_error(ci, f->id, pid, "start: could not make the container's process");
		init_end_after_flush(125);
		return;
	}
	if (p->state != P_EXITED)
		main_pid = pid;
}

bool oci_signal(int sig, int code, int sender)
{
	/* only what someone else sent (kill, sigqueue: a sender outside the
	 * container is pid 0 here): never a signal of init's own making (a
	 * write to a closed pipe is SI_USER from init itself), nor the re-arm
	 * a checkpoint waits for */
	if (!oci_mode || !forwarded(sig) || (code != SI_USER && code != SI_QUEUE) || sender == 1 ||
	    (sig == SIGUSR2 && ckpt_waiting()))
		return false;
	if (main_pid > 0) {
		kill(main_pid, sig);
		return true;
	}
	/* it ended: init is on its way out with the process's status, which
	 * a late signal must not replace */
	if (started)
		return true;
	/* not started: the container ends as runc's waiting init would, by
	 * the signal's default action (those that stop or are ignored by
	 * default do nothing) */
	static const int harmless[] = { SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU, SIGURG, SIGWINCH };
	for (size_t i = 0; i < ELEMENTSOF(harmless); i++)
		if (harmless[i] == sig)
			return true;
	init_shutdown(128 + sig);
}

/* procs.c: the container's process ended (or never ran). */
void oci_main_ended(const struct proc *p)
{
	main_pid = 0;
	init_end_after_flush(p->exit_code);
}

int oci_filter_into(struct exec_req *req)
{
	if (!filter_len || req->filter_len)
		return 0;
	if (!(req->filter = malloc(filter_len * sizeof(*filter))))
		return -ENOMEM;
	memcpy(req->filter, filter, filter_len * sizeof(*filter));
	req->filter_len = filter_len;
	return 0;
}

void oci_exec(int ci, const struct proto_frame *f, struct exec_req *req)
{
	char why[480];
	struct proc *p = NULL;
	unsigned want = (req->flags & EXEC_TTY) ? 1 : 3;
	if (f->nfds != want)
		safe_snprintf(why, sizeof(why), "exec: the request carries %u descriptors, not %u", f->nfds,
			      want);
	else if (!runnable(req, why, sizeof(why)))
		;
	else if (!(p = procs_slot()))
		safe_snprintf(why, sizeof(why), "exec: too many processes tracked by init");
	if (!p) {
		init_send_error(ci, f->id, ENOENT, why);
		exec_req_free(req);
		return;
	}
	if (oci_filter_into(req) < 0) {
		init_send_error(ci, f->id, ENOMEM, "exec: the container's seccomp profile");
		exec_req_free(req);
		return;
	}
	int stdio[3] = { f->fds[0], f->fds[want == 3 ? 1 : 0], f->fds[want == 3 ? 2 : 0] };
	pid_t pid = spawn(ci, f, p, req, stdio, false);
	if (pid < 0)
		init_send_error(ci, f->id, pid, "exec: could not make the process");
}
