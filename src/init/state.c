/* init/state.c — what every part of init reads of its own life: the
 * listening socket, whether the sandbox is ephemeral, whether it is on its
 * way out and with what code, and its deadline. Kept apart from main.c,
 * which sets them, so the parts that read them (clients, procs,
 * requests, checkpoint) depend on this file and not on the main loop
 * that calls them (tables.h declares them).
 * Runs in abox-init. */
#include "tables.h"

int listen_fd = INIT_LISTEN_FD;
bool ephemeral;
bool exiting;
int exit_code;
int64_t init_deadline_ms;
