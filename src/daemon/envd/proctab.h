/* proctab — what each command was started with (cmd, args, cwd, envs),
 * per sandbox and pid, so that process.Process/List answers them as
 * envd does: init only keeps a shortened command line. Lost when aboxd
 * restarts (List then falls back to init's command line). */
#ifndef ABOX_DAEMON_PROCTAB_H
#define ABOX_DAEMON_PROCTAB_H

#include <json-c/json.h>
#include <stddef.h>

/* Remembers config (a ProcessConfig object: cmd, args, cwd, envs; copied)
 * for pid of sandbox sid, replacing what an earlier pid of that number had. */
void proctab_put(const char *sid, int pid, json_object *config);
/* A new ProcessConfig object for pid (yours), or NULL when none is known. */
json_object *proctab_get(const char *sid, int pid);
/* Forgets the sandbox's pids that are not among the n running ones. */
void proctab_prune(const char *sid, const int *running, size_t n);

#endif
