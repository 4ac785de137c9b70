/* access_log — aboxd's JSON-lines access log (see access_log.c). Runs in
 * aboxd. */
#ifndef ABOX_DAEMON_ACCESS_LOG_H
#define ABOX_DAEMON_ACCESS_LOG_H

#include "daemon.h"

/* Opens the log: a file (appended to), "-" for stderr, NULL for none.
 * 0, or -1 with a message on stderr. */
int access_log_open(const char *path);
/* rq's line, named by its route (metrics_route), secs after it came. */
void access_log_write(const struct request *rq, const char *route, double secs);

#endif
