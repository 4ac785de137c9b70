/* metrics — what aboxd counts for Prometheus (see metrics.c). Runs in
 * aboxd. */
#ifndef ABOX_DAEMON_METRICS_H
#define ABOX_DAEMON_METRICS_H

#include "daemon.h"

/* rq's route: "<plane> <method> <path>", sandbox ids as {id}
 * ("/v2/sandboxes/abc.../connect" -> "/v2/sandboxes/{id}/connect"). */
void metrics_route(const struct request *rq, char *out, size_t n);
/* Counts rq, answered secs after it came, under route. */
void metrics_count(const struct request *rq, const char *route, double secs);
/* The admin listener's handler (GET /metrics). */
enum MHD_Result metrics_admin(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_size, void **con_cls);

#endif
