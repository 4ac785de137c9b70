/* oci — `abox oci`, the OCI runtime command line (runc's contract, which
 * containerd's runc shim and go-runc speak): global options, the log
 * runc's callers read, and the verbs. Reached as `abox oci ...`, or as a
 * program named abox-oci or runc (a symlink to abox), so containerd's
 * BinaryName can point at it. */
#ifndef ABOX_CLI_OCI_H
#define ABOX_CLI_OCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

struct oci_globals {
	const char *root; /* --root: where containers' state lives */
	const char *log_path; /* --log (NULL: stderr) */
	bool log_json; /* --log-format json */
	bool debug, systemd_cgroup;
	const char *rootless; /* --rootless true|false|auto */
	/* the container's cgroupsPath as a cgroup path (its record's, or its
	 * bundle's at create): oci_ctx makes sandboxes' cgroups below it */
	char cgroup_parent[2048];
};

extern struct oci_globals oci_g;

/* An error, one line to the log (--log, or stderr): JSON {"level","msg",
 * "time"} with --log-format json, else text; when the log is a file, said
 * on stderr too (what runc does: its callers read either). Returns 1. */
int oci_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The log's fd (2 without --log). */
int oci_log_fd(void);
/* A warning, one line to the log only. */
void oci_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* the OCI runtime spec version abox reads and writes */
#define OCI_SPEC_VERSION "1.2.0"

/* "-x", "--x", "--x=v": the option's name into name; its inline value
 * (after '=') or NULL. false when arg is no option. */
bool oci_option(const char *arg, char *name, size_t n, const char **value);

/* The verbs (argv[0] is the verb). */
int oci_spec(int argc, char **argv);
int oci_create(int argc, char **argv);
int oci_start(int argc, char **argv);
int oci_run(int argc, char **argv);
int oci_state(int argc, char **argv);
int oci_list(int argc, char **argv);
int oci_kill(int argc, char **argv);
int oci_delete(int argc, char **argv);
int oci_pause(int argc, char **argv);
int oci_resume(int argc, char **argv);
int oci_ps(int argc, char **argv);
int oci_exec(int argc, char **argv);
int oci_events(int argc, char **argv);
int oci_features(int argc, char **argv);
int oci_update(int argc, char **argv);

/* A container's record, <root>/<id>/state.json (store.c): what the OCI
 * state tells besides what abox knows of its sandbox. */
struct oci_ctr {
	char id[1025];
	char sandbox[64]; /* the abox sandbox's id */
	char bundle[4096]; /* absolute */
	char rootfs[4096];
	char created[48]; /* RFC 3339, nanoseconds, UTC */
	char cgroup_path[2048]; /* the config's cgroupsPath as a cgroup path, or "" */
	char oci_version[32];
	bool started;
	char *annotations_json; /* an object, or NULL */
	/* the config's hooks as create read them (never read again from a
	 * bundle a container may have written to), or NULL */
	char *hooks_json;
};

struct abox_ctx;
/* A config's linux.cgroupsPath as a cgroup path into out ("" without
 * one): with --systemd-cgroup "slice:prefix:name" is the systemd unit's
 * path ("/a.slice/a-b.slice/prefix-name.scope"), as runc's systemd
 * driver names it. 0, or 1 with the error said. */
int oci_cgroup_path(const char *config_value, char *out, size_t n);
/* The library's context for --root: sandboxes' state and runtime folders
 * below it (names no container id can take). Prints the error. */
int oci_ctx(struct abox_ctx **out);
/* A container id as runc accepts it. */
bool oci_id_ok(const char *id);
/* Reads the record: 0, or 1 with the error said ("container does not
 * exist" when there is none: the shim looks for those words). */
int oci_ctr_load(const char *id, struct oci_ctr *c);
int oci_ctr_save(const struct oci_ctr *c);
/* The metadata key that names a container's id on its sandbox: a create
 * killed before it recorded the sandbox leaves it findable (delete). */
#define OCI_META_KEY "oci.container"
/* c's sandbox found by its metadata when the record has none yet. */
void oci_ctr_resolve(struct abox_ctx *ctx, struct oci_ctr *c);
void oci_ctr_free(struct oci_ctr *c);
/* created, running, paused or stopped; *pid the container's (its
 * init's) while it is not stopped, else 0. */
const char *oci_status(struct abox_ctx *ctx, const struct oci_ctr *c, int *pid);
/* A verb's start on container id: its record into c, then the context
 * (read after the record: it finds the container's cgroups from it).
 * 0, or 1 with the error said and nothing held; oci_close ends both. */
int oci_open(const char *id, struct oci_ctr *c, struct abox_ctx **ctx);
void oci_close(struct oci_ctr *c, struct abox_ctx *ctx);
/* The hooks (the config's "hooks" object as JSON text, or NULL) of one
 * kind ("prestart", "createRuntime", "poststart", "poststop") in order,
 * each with state (the OCI state JSON) on its stdin and its timeout, its
 * output kept for the error: 0, or 1 when one failed and fatal (then the
 * rest do not run; the error is said). Not fatal: warnings. */
int oci_hooks(const char *hooks_json, const char *kind, const char *state, bool fatal);
/* The createContainer hooks, in the namespaces of the container whose
 * init is init (bar its mount namespace: hooks.c says why); fatal. */
int oci_hooks_create_container(const char *hooks_json, const char *state, pid_t init);
/* Why a hook failed, into msg: how (its status) and the last of its
 * output (out, a file it wrote), on one line. */
void oci_hook_failed(FILE *out, const char *how, char *msg, size_t n);
struct abox_sandbox;
/* The hooks of kind that run inside the container (startContainer), each
 * as a process in sb with state on its stdin: 0, or 1 with the first
 * failure said. */
int oci_hooks_in(struct abox_sandbox *sb, const char *hooks_json, const char *kind, const char *state);
/* The OCI state of c, as `state` prints it (plain), malloc'd. */
char *oci_state_text(struct abox_ctx *ctx, const struct oci_ctr *c);
/* The same with this status and pid (a poststart hook's state says
 * running, as runc's, even when the process has already ended). */
char *oci_state_text_as(struct abox_ctx *ctx, const struct oci_ctr *c, const char *status, int pid);
/* Sends a terminal's master over the engine's console socket: 0, or 1
 * with the error said. */
int oci_console_send(const char *path, int master);
/* A pidfd of pid over --pidfd-socket (runc 1.2's): 0, or 1 with the
 * error said. */
int oci_pidfd_send(const char *path, pid_t pid);
/* /proc/PID/NAME's first size-1 bytes into buf, NUL-terminated (empty
 * when the process is gone); their count. */
size_t oci_proc_read(int pid, const char *name, char *buf, size_t size);
/* Whether pid is a process of sandbox's (in its cgroups: a container's
 * pid namespace may be a pod's, shared with other containers). */
bool oci_pid_of(int pid, const char *sandbox);
/* The pids of sandbox's processes (its init's among them), at most max. */
size_t oci_pids(const char *sandbox, int *out, size_t max);
/* Writes text to path through a new file renamed over it (readers never
 * see half of it): 0 or -errno. */
int oci_write_file(const char *path, const char *text);

/* `abox oci ARGS` (argv[0] is "oci", "abox-oci" or "runc"). */
int cmd_oci(int argc, char **argv);

#endif
