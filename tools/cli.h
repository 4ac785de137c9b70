/* abox CLI — shared helpers of the verbs. The CLI is a thin user of
 * libabox: it parses options, calls the library, prints and picks the exit
 * code. */
#ifndef ABOX_CLI_H
#define ABOX_CLI_H

#include <stdbool.h>
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

int cmd_run(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_gc(int argc, char **argv);

#endif
