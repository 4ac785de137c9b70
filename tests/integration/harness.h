/* Integration-test harness: runs the real `abox` binary, captures its
 * output and exit status, and checks that nothing was left behind (mounts,
 * cgroups, runtime folders, processes). */
#ifndef ABOX_TEST_HARNESS_H
#define ABOX_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <abox/abox.h>

struct run_result {
	int status;     /* exit code, or 128+signal */
	char *out;      /* stdout, NUL-terminated */
	size_t out_len;
	char *err;      /* stderr */
	double seconds; /* wall time */
};

/* Seconds an abox command may run before the harness SIGKILLs it (a hung
 * command fails its test instead of the whole suite's timeout); 60 unless
 * a suite with long builds raises it. */
extern int run_timeout_s;

/* Runs `abox ARGS...` (NULL-terminated), feeding stdin_data (may be NULL:
 * /dev/null). Kills abox after run_timeout_s. */
void run_abox(struct run_result *r, const void *stdin_data, size_t stdin_len, const char *const *args);
/* Runs any program (argv[0] looked up in PATH), stdin /dev/null. */
void run_abox_argv(struct run_result *r, const char *const *argv);
#define ABOX(r, ...) run_abox((r), NULL, 0, (const char *const[]){ __VA_ARGS__, NULL })
void run_result_free(struct run_result *r);
/* Runs `abox ARGS...` and asserts it exits 0 (its stderr in the failure
 * message); the output is dropped. */
void run_abox_ok(const char *const *args);
#define ABOX_OK(...) run_abox_ok((const char *const[]){ __VA_ARGS__, NULL })
/* The same, returning its stdout (malloc'd). */
char *run_abox_out(const char *const *args);
#define ABOX_OUT(...) run_abox_out((const char *const[]){ __VA_ARGS__, NULL })
/* The same, its stdout cut at the first newline (an id, a name). */
char *run_abox_line(const char *const *args);
#define ABOX_LINE(...) run_abox_line((const char *const[]){ __VA_ARGS__, NULL })
/* Runs `abox ARGS...` whatever it does (a clean-up). */
void run_abox_any(const char *const *args);
#define ABOX_ANY(...) run_abox_any((const char *const[]){ __VA_ARGS__, NULL })

/* Exit statuses ABOX_EXPECT takes besides a number: any at all, any but 0. */
#define ANY_STATUS (-1)
#define NONZERO (-2)
/* Runs `abox ARGS...` with the string in on its stdin (NULL: none) and
 * asserts its exit status; that its stdout is out exactly (unless out is
 * NULL) and that its stderr holds err_has (unless NULL). A failure message
 * names the command. */
void run_abox_expect(const char *in, int status, const char *out, const char *err_has,
		     const char *const *args);
#define ABOX_EXPECT(status, out, err_has, ...)                                                               \
	run_abox_expect(NULL, (status), (out), (err_has), (const char *const[]){ __VA_ARGS__, NULL })

/* `abox create EXTRA...` (extra may be NULL): asserts it exits 0 and
 * prints an id and a newline; returns the id (malloc'd). */
char *create_sandbox(const char *const *extra);
#define CREATE(...) create_sandbox((const char *const[]){ __VA_ARGS__, NULL })
/* `abox kill ID`, which must exit 0, then free(id). */
void kill_and_free(char *id);
/* `abox exec --user root ID -- sh -c SCRIPT`: asserts it exits 0; returns
 * its stdout (malloc'd). */
char *root_sh(const char *id, const char *script);
/* The state `abox info --json` gives (malloc'd). */
char *sandbox_state(const char *id);
/* Whether `abox ps` lists the process tagged tag as running. */
bool proc_running(const char *id, const char *tag);
/* The number a test's counter keeps in /tmp/n of the sandbox (reading it
 * must work). */
long read_counter(const char *id);
/* Through the library: a context (default options) and a sandbox made
 * with so, both asserted. */
void api_create(abox_ctx **ctx, const abox_sandbox_opts *so, abox_sandbox **sb);
/* CLOCK_MONOTONIC in seconds. */
double now_s(void);

/* Starts abox in the background with stdout/stderr to pipes: returns its pid;
 * *out_fd / *err_fd are the read ends. */
pid_t start_abox(int *out_fd, int *err_fd, const char *const *args);
/* Reads everything left on fd into a malloc'd string and closes it. */
char *slurp(int fd);
int wait_exit(pid_t pid);

/* State snapshot: mountinfo mount points, cgroup folders whose names
 * contain "abox", entries of the runtime folder. */
char *leak_snapshot(void);
/* abox's state and runtime folders for this test: $ABOX_ROOT and
 * $ABOX_RUNTIME_DIR (meson sets private ones), else abox's defaults */
const char *state_root(void);
const char *runtime_root(void);
/* Criterion init/fini pair: snapshot before, compare after. */
void leak_check_begin(void);
void leak_check_end(void);

bool is_root(void);
const char *abox_bin(void);
char *read_whole(const char *path, size_t *len);

/* .init/.fini of a suite that makes real sandboxes: skips (with the
 * reason) when not root, and checks that the suite leaves nothing
 * behind (mounts, cgroups, records, runtime folders). */
void sandbox_suite_init(void);
void sandbox_suite_fini(void);
/* .init of a suite that needs a working checkpointer (CRIU through the
 * checkpoint hook): sandbox_suite_init, and a failure when `abox doctor`
 * does not say it works — unless doctor says this kernel cannot
 * checkpoint at all (CRIU installed and tried: its trial dump fails or
 * hangs), which checkpoint_unusable() then holds. */
void checkpoint_suite_init(void);
/* Why this host cannot checkpoint (doctor's line), or NULL. */
const char *checkpoint_unusable(void);
/* At the start of a case that needs a working checkpointer: skipped,
 * with doctor's reason, on a kernel that cannot checkpoint (a skip is
 * counted as one, never as a pass). */
#define CHECKPOINT_NEEDED()                                                                                  \
	do {                                                                                                 \
		if (checkpoint_unusable())                                                                   \
			cr_skip_test("this kernel cannot checkpoint: %s", checkpoint_unusable());            \
	} while (0)

#endif
