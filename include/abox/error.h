/* abox — error reporting shared by every public call.
 *
 * Every fallible abox function returns an int: >= 0 on success, -errno on
 * failure, and fills the caller-owned abox_error (when not NULL) with the
 * same code and a message that names the step and the cause. The struct
 * lives on the caller's stack: nothing is allocated, so errors can be
 * reported even when memory is exhausted. */
#ifndef ABOX_ERROR_H
#define ABOX_ERROR_H

#include <errno.h>

#include <abox/version.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ABOX_ERROR_MSG_MAX 512

typedef struct abox_error {
	int code;                      /* positive errno value, 0 when unset */
	char msg[ABOX_ERROR_MSG_MAX];  /* "create: mount overlay: Invalid argument" */
} abox_error;

#define ABOX_ERROR_INIT { 0, { 0 } }

/* The code of "no such user in the sandbox" (a name not in the sandbox's
 * own /etc/passwd): a code no file or process operation returns, so a
 * caller can tell it from a missing file. */
#define ABOX_ENOUSER ENOKEY

/* Clears an error so it can be reused. Accepts NULL. */
ABOX_EXPORT void abox_error_clear(abox_error *err);

/* The text abox's messages use for an errno value ("No such file or
 * directory"): the same whatever C library a program is built on (those of
 * glibc), so that a message reads the same from the CLI, the daemon and
 * the library. Never NULL; static storage. */
ABOX_EXPORT const char *abox_strerror(int code);

#ifdef __cplusplus
}
#endif
#endif
