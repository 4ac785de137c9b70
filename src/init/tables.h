/* tables — abox-init's own state, shared by its event loop (main.c), the
 * request table (requests.c), its clients (clients.c), its processes
 * (procs.c, output.c, stdin.c, exec.c) and checkpoints (checkpoint.c):
 * the client and process tables, the sandbox's deadline and the flags of
 * its end. Runs only inside the sandbox, as its PID 1. */
#ifndef ABOX_INIT_TABLES_H
#define ABOX_INIT_TABLES_H

#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

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
	int sudo_fd; /* started for sudo: the connection its end goes to, else 0 (fd 0 is never one) */
	bool oci_main; /* an OCI container's process (oci.c): its end is init's */
	bool bound; /* EXEC_BOUND: killed when its owner goes */
};

/* Ended processes stay listed (and attachable, with their output) up to
 * this many; the oldest goes first. */
#define HISTORY_MAX 32

extern struct client clients[MAX_CLIENTS];
extern unsigned nclients;
extern struct proc procs[MAX_PROCS];
/* One past the highest slot ever taken (procs.c says why). */
extern unsigned procs_used;
extern int listen_fd;
extern bool ephemeral;
extern bool exiting; /* leave once every queued event is out */
extern int exit_code;
extern int64_t init_deadline_ms; /* CLOCK_BOOTTIME, 0 = none */

static inline void proc_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

_Noreturn static inline void init_shutdown(int code)
{
	/* Exiting PID 1 makes the kernel SIGKILL every process left in the
	 * pid namespace: nothing can outlive the sandbox. */
	_exit(code);
}

/* clients.c */
/* init_queue, init_send_error and init_flush_blocking: init.h */
/* Drops client ci; fn (set once at start) first hears which slot went and
 * which one moves into it. */
void clients_on_drop(void (*fn)(unsigned gone, unsigned last));
void clients_drop(unsigned ci);
void clients_accept(void);
void clients_add(int fd);
bool clients_read(unsigned ci, void (*handle)(int ci, const struct proto_frame *f));
bool clients_queues_empty(void);
/* procs.c */
int64_t procs_kill_timed_out(void);
void procs_clocks_run(bool run);
void proc_started(struct proc *p);
void procs_reap(void);
/* The end event's fields for p. */
void proc_put_end(struct proto_msg *m, const struct proc *p);
struct proc *proc_of_frame(int ci, const struct proto_frame *f, uint64_t *sig, const uint8_t **data, size_t *len);
void procs_list(int ci, const struct proto_frame *f);
/* oci.c */
void oci_main_ended(const struct proc *p);
/* checkpoint.c: a checkpoint waits for its re-arm (INIT_REARM_SIGNAL) */
bool ckpt_waiting(void);
/* Client ci went away and client last takes its number. */
void procs_client_gone(unsigned ci, unsigned last);
void init_end_after_flush(int code);
/* output.c */
void proc_drain(struct proc *p, int *fd, uint16_t type, size_t budget);
void proc_drain_pending(struct proc *p);
/* Sends m to every client attached to p (each under its own request id)
 * and frees it. */
void proc_broadcast(struct proc *p, struct proto_msg *m);
void proc_ring_free(struct ring *r);
void procs_attach(int ci, const struct proto_frame *f);
bool proc_output_blocked(const struct proc *p);
/* stdin.c */
void proc_ack_stdin(struct proc *p, size_t n);
void proc_flush_stdin(struct proc *p);
void proc_req_stdin(int ci, const struct proto_frame *f);
void proc_req_stdin_close(int ci, const struct proto_frame *f);
/* exec.c */
void procs_exec(int ci, const struct proto_frame *f);
/* checkpoint.c */
void ckpt_handle(int ci, const struct proto_frame *f);
void ckpt_rearm(void);
/* requests.c */
void init_handle_frame(int ci, const struct proto_frame *f);

#endif
