/* abox CLI — shared helpers of the verbs. The CLI is a thin user of
 * libabox: it parses options, calls the library, prints and picks the exit
 * code. */
#ifndef ABOX_CLI_H
#define ABOX_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <abox/abox.h>

/* Exit code for abox's own failures, like `docker run`. */
#define EXIT_ABOX 125

extern const char *cli_prog;

void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "abox: <err->msg>" and returns EXIT_ABOX. */
int cli_fail(const abox_error *err);

/* ABOX_DEBUG=1: library debug messages to stderr with timestamps. */
void cli_log_stderr(abox_log_level level, const char *msg, void *userdata);

/* How cli_run_process reports an end. */
struct cli_proc_opts {
	const char *memory_text; /* "512M" in "killed: out of memory (limit 512M)" */
	uint32_t timeout_s;
	bool truncated;          /* print the truncated result at the end instead of streaming */
	bool tty;                /* the process has a pty: raw local terminal, resizes follow ours */
	bool json;               /* with truncated: print the result as one JSON object */
	const char *argv0;       /* the command's name, for hints on a failed start */
};

/* --size ROWSxCOLS; the local terminal's size (or 24x80) when val is NULL. */
int cli_opt_size_rc(const char *verb, const char *val, abox_proc_opts *po);

/* --truncate N[:HEAD:TAIL] into the process options. */
int cli_opt_truncate(const char *verb, const char *val, abox_proc_opts *po);

/* Blocks the signals cli_run_process handles (so none interrupts a
 * create half-way) and installs their handlers; call before creating. */
int cli_signals_block(void);
/* Runs one process to its end; returns the exit status to use. */
int cli_run_process(abox_sandbox *sb, const abox_proc_opts *po, const struct cli_proc_opts *o);
/* Follows a started or attached process to its end (frees it). */
int cli_follow(abox_proc *p, bool with_stdin, const struct cli_proc_opts *o);

/* Option values; each prints "VERB: OPT 'VAL': expected ..." on error. */
int cli_opt_size(const char *verb, const char *opt, const char *val, uint64_t *out);
/* --layer disk|tmpfs: sets the ABOX_SANDBOX_LAYER_* flag in *flags. */
int cli_opt_layer(const char *verb, const char *val, uint32_t *flags);
int cli_opt_count(const char *verb, const char *opt, const char *val, uint64_t *out);
int cli_opt_cpus(const char *verb, const char *val, uint32_t *out);
int cli_opt_secs(const char *verb, const char *opt, const char *val, uint32_t *ms);
/* KEY=VALUE, appended to list (*n of them so far; room for one more). */
int cli_opt_kv(const char *verb, const char *opt, const char *val, const char **list, size_t *n);

/* What a process's first events said (cli_wait_started). */
struct cli_start {
	int pid;
	bool ended;
	int code;
	const char *error;
};

/* The event callback that fills a cli_start (errors go to stderr). */
void cli_on_start(const abox_event *ev, void *ud);
/* Dispatches until the process's start (or end) event. */
int cli_wait_started(abox_proc *p, struct cli_start *s, abox_error *err);

/* PID or TAG on the command line: digits are a pid. */
void cli_target(const char *arg, int *pid, const char **tag);

/* Opens a context, honouring ABOX_DEBUG. */
int cli_ctx(abox_ctx **ctx);

/* A context and the one sandbox of it a verb works on. */
struct cli_sandbox {
	abox_ctx *ctx;
	abox_sandbox *sb;
};

/* Opens a context (cli_ctx) and connects to sandbox id. Returns 0, or
 * EXIT_ABOX once it has said why; then nothing is left open. */
int cli_open(const char *id, struct cli_sandbox *s);
/* The same with a new sandbox made from ns, once cli_new_finish has put
 * its options together (their mistakes said as VERB's). */
struct cli_new_sandbox;
int cli_create(const char *verb, struct cli_new_sandbox *ns, struct cli_sandbox *s);
/* The command that starts at argv[i] (after a "--" there, if any) into
 * po->argv; none is a mistake said with the verb's usage. 0 or -1. */
int cli_command(const char *verb, const char *usage, int argc, char **argv, int i, abox_proc_opts *po);
/* Removes each of the n names with rm (abox_snapshot_remove, ...), going
 * on past a failure: 0, or EXIT_ABOX when any failed (each said). */
int cli_remove_each(abox_ctx *ctx, char **names, int n,
		    int (*rm)(abox_ctx *ctx, const char *name, abox_error *err));
/* Frees the sandbox handle, then the context. Takes a zeroed, half-opened
 * or closed one, so it serves as _cleanup_(cli_close). */
void cli_close(struct cli_sandbox *s);
/* cli_close with the cheap part of gc (abox_gc_maybe) between the two, so
 * leftovers of earlier runs go on the way out. */
void cli_close_gc(struct cli_sandbox *s);

/* The options of a new sandbox that `abox run` and `abox create` share,
 * as entries of a getopt_long table; cli_sandbox_opt takes their values. */
/* clang-format off */
#define CLI_SANDBOX_LONGOPTS                                   \
	{ "template", required_argument, NULL, 't' },          \
	{ "env", required_argument, NULL, 'e' },               \
	{ "memory", required_argument, NULL, 'M' },            \
	{ "disk", required_argument, NULL, 'D' },              \
	{ "layer", required_argument, NULL, 'L' },             \
	{ "pids", required_argument, NULL, 'P' },              \
	{ "cpus", required_argument, NULL, 'C' },              \
	{ "timeout", required_argument, NULL, 'T' },           \
	{ "seccomp", required_argument, NULL, 'S' },           \
	{ "net", required_argument, NULL, 'N' },               \
	{ "allow-out", required_argument, NULL, 'O' },         \
	{ "deny-out", required_argument, NULL, 'X' },          \
	{ "userns", required_argument, NULL, 'Y' },            \
	{ "sudo", required_argument, NULL, 'Q' }
/* clang-format on */

/* What those options make: the sandbox's options, the -e K=V values and
 * the network's lists (each has room for one per argument: cli_new_init
 * makes them). */
struct cli_new_sandbox {
	abox_sandbox_opts so;
	const char **env;
	size_t nenv;
	abox_net_opts net;
	bool net_given;
	const char **allow, **deny;
	size_t nallow, ndeny;
};
/* Room for argc values of each list; -1 when out of memory. */
int cli_new_init(struct cli_new_sandbox *ns, int argc);
void cli_new_free(struct cli_new_sandbox *ns);
/* After the options: the network's mode and lists put together (lists
 * without --net mean filtered; filtered without --deny-out lets out only
 * what --allow-out names). -1 once it has said what is wrong. */
int cli_new_finish(const char *verb, struct cli_new_sandbox *ns);
/* The text of the network options, for usage texts. */
#define CLI_NET_USAGE                                                                                        \
	"      --net MODE        none (loopback only, the default), open (the internet, never\n"             \
	"                        private, link-local or host addresses) or filtered\n"                       \
	"      --allow-out X     filtered: an IP, CIDR or name (example.com, *.example.com) it may\n"        \
	"                        reach (repeatable; names need --deny-out 0.0.0.0/0)\n"                      \
	"      --deny-out X      filtered: an IP or CIDR it may not reach (repeatable; without it,\n"        \
	"                        everything --allow-out does not name is refused)\n"                         \
	"      --userns on|off   a user namespace of its own: its root and user are host ids no\n"           \
	"                        host account or other sandbox has (default: userns.json's)\n"               \
	"      --sudo on|off     sudo inside for every user, passwordless (default: on)\n"

/* Takes getopt_long's c and its value val into ns; the verb has looked at
 * its own options first. Returns 1 when c is one of CLI_SANDBOX_LONGOPTS,
 * 0 when it is not (an unknown option: getopt has said so), -1 once it has
 * said what is wrong with val. */
int cli_sandbox_opt(const char *verb, int c, const char *val, struct cli_new_sandbox *ns);

/* ms since the epoch as 2006-01-02T15:04:05Z (UTC) into buf. */
void cli_utc(int64_t ms, char *buf, size_t n);

struct json_object;
/* Prints o and a newline on stdout with json-c's flags, then drops o. */
void cli_print_json(struct json_object *o, int flags);

int cmd_run(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_kill(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_set_timeout(int argc, char **argv);
int cmd_network(int argc, char **argv);
int cmd_pause(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_snapshots(int argc, char **argv);
int cmd_fork(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_files(int argc, char **argv);
int cmd_cp(int argc, char **argv);
int cmd_shell(int argc, char **argv);
int cmd_resize(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_signal(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_gc(int argc, char **argv);

#endif
