/* base — error helpers, cleanup attributes and small fd/string helpers used
 * by every libabox module, abox-init and the CLI.
 *
 * Runs anywhere: the CLI, the daemon, the sandbox child between clone and
 * exec (only the async-signal-safe helpers marked so), and abox-init. */
#ifndef ABOX_BASE_H
#define ABOX_BASE_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include <abox/common.h>
#include <abox/error.h>

#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _warn_unused_ __attribute__((warn_unused_result))

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

/* Closes fd when it is one: for the fds a function closes on its way out,
 * some of which may never have been opened (-1). */
static inline void close_if_open(int fd)
{
	if (fd >= 0)
		close(fd);
}

void strv_free(char **v);
static inline void strv_freep(char ***v)
{
	strv_free(*v);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* Hand ownership on: returns the value and leaves the variable empty so the
 * cleanup attribute does nothing. */
#define TAKE_PTR(p)                            \
	({                                     \
		__typeof__(p) _tp_ = (p);      \
		(p) = NULL;                    \
		_tp_;                          \
	})
#define TAKE_FD(fd)                            \
	({                                     \
		int _tf_ = (fd);               \
		(fd) = -EBADF;                 \
		_tf_;                          \
	})

/* Sets err (when not NULL) to code and a formatted message and returns
 * -code, so that "return abox_error_set(err, errno, ...)" is one step. A code
 * of 0 is turned into EIO: an error must always carry a real errno. The
 * message gets ": strerror(code)" appended. Async-signal-safe as long as the
 * format only uses %s, %d, %u, %ld, %lu, %x (it uses its own formatter). */
int abox_error_set(abox_error *err, int code, const char *fmt, ...) _printf_(3, 4);

/* Same, without the strerror suffix (for messages that already say it). */
int abox_error_setx(abox_error *err, int code, const char *fmt, ...) _printf_(3, 4);

/* Either of them with a va_list (with_errno: abox_error_set's suffix), for
 * helpers that take a message for the error they may report. */
int abox_error_vset(abox_error *err, int code, bool with_errno, const char *fmt, va_list ap);

/* Prefixes the existing message with "what: " (context on the way up).
 * Returns -err->code (or -EIO when err is NULL or unset). */
int abox_error_prefix(abox_error *err, const char *fmt, ...) _printf_(2, 3);

/* Minimal async-signal-safe vsnprintf: %s %d %i %u %ld %lu %lld %llu %x %lx
 * %zu %c %% and %.*s. Always NUL-terminates. Returns the length written. */
size_t safe_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
size_t safe_snprintf(char *buf, size_t size, const char *fmt, ...) _printf_(3, 4);

/* Async-signal-safe strerror replacement (names for common errnos). */
const char *errno_name(int code);

/* Write all / read all, retrying on EINTR and short counts. Return 0 or
 * -errno; read_full returns the number of bytes read (< n only at EOF). */
int write_full(int fd, const void *buf, size_t n);
ssize_t read_full(int fd, void *buf, size_t n);

/* Write a small string to a file with O_WRONLY|O_CLOEXEC (no O_CREAT):
 * used for cgroup and /proc knobs. dirfd may be AT_FDCWD. */
int write_file_at(int dirfd, const char *path, const char *s);

/* Read a whole small file (limit bytes at most) into a malloc'd,
 * NUL-terminated buffer. */
int read_file_at(int dirfd, const char *path, size_t limit, char **out, size_t *len);
/* Reads fd to its end into *buf (malloc'd, room for *cap bytes and a
 * NUL), growing it up to limit bytes (-EFBIG beyond). *len: what was read,
 * NUL-terminated. 0 or -errno. */
int read_all_fd(int fd, size_t limit, char **buf, size_t *cap, size_t *len);
/* One line of f without its line end (LF or CRLF), malloc'd; NULL at
 * the end of f. */
char *line_read(FILE *f);
/* Replaces path with len bytes of data, written to tmp (created with
 * mode) and renamed over it: a reader sees the old file or the new one,
 * never half of one. durable: fsync'd before the rename, so that this
 * holds across a power loss too. 0 or -errno; tmp is gone on failure. */
int write_file_replace(const char *path, const char *tmp, const void *data, size_t len, mode_t mode,
		       bool durable);

/* Parse sizes like "512M", "1G", "64k", "1048576" (binary multiples). */
int parse_size(const char *s, uint64_t *out);
/* Format a size as "512M"/"1G" when exact, else bytes. */
void format_size(uint64_t v, char *buf, size_t n);

/* n bytes from the kernel's random source (getrandom). 0 or -errno. */
int random_bytes(void *buf, size_t n);
/* Cryptographically random sandbox id: n chars of [a-z0-9], NUL-terminated
 * (buf must hold n+1). */
int random_id(char *buf, size_t n);

size_t strv_length(char *const *v);
/* A malloc'd copy of v; NULL when v is NULL or empty (or out of memory:
 * a copy may then end early). */
char **strv_copy(char *const *v);
/* Environment entries ("K=V"): base's, then over's, one per key (the
 * later wins); never NULL unless out of memory. */
char **strv_env_merge(char *const *base, const char *const *over);
/* Sets "K=V" entry kv in the NULL-terminated *env (a malloc'd strv, or
 * NULL), replacing an entry of the same K. 0, -EINVAL for no "K=", or
 * -ENOMEM. */
int strv_env_set(char ***env, const char *kv);

/* The part of s before the first character of stop (all of s when there
 * is none) into buf, NUL-terminated; false when it does not fit in n. */
bool str_head(const char *s, const char *stop, char *buf, size_t n);
/* Whether s is min to max characters long, every one of them in set:
 * ids, digests and the words of a recipe are checked by it. */
bool str_of(const char *s, const char *set, size_t min, size_t max);
/* Ids as random_id(…, 20) makes them: 20 characters of [a-z0-9]. */
bool id_ok(const char *id);
/* /proc/PID/NAME read whole (at most 64 KiB) into a malloc'd,
 * NUL-terminated *out, as read_file_at. 0 or -errno. */
int read_proc_file(pid_t pid, const char *name, char **out);
/* The entries of dir that are ids (id_ok), sorted, NULL-terminated. A
 * missing dir is an empty list; one that cannot be read is an error, never
 * "none" (callers decide from it whether something is unused). */
int list_ids(const char *dir, char ***out, abox_error *err);

/* Removes name below dfd recursively without following symlinks (depth
 * starts at 0; bounded). 0 or -errno; a missing entry is 0. */
int rm_rf_at(int dfd, const char *name, unsigned depth);
/* The same, but the first entry that cannot be removed ends it with its
 * error (a user's remove reports what it could not do, not a later
 * "directory not empty"). */
int rm_rf_strict_at(int dfd, const char *name);

/* flock(fd, op) that gives up after ms milliseconds (-ETIMEDOUT): a
 * holder stuck on something that never answers must not hang everyone
 * behind it. 0 or -errno. */
int flock_timeout(int fd, int op, int64_t ms);
/* $ABOX_LOCK_TIMEOUT_MS, else 30 s: the bound of every lock wait. */
int64_t lock_timeout_ms(void);

#endif
