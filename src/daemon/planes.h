/* planes — the entry points of the code plane (code.c) and of the port
 * proxy (proxy.c), which router.c calls once it knows where a request
 * goes. The control and envd planes' route tables are router.c's own
 * (control.h, envd/envd.h). Runs in aboxd. */
#ifndef ABOX_DAEMON_PLANES_H
#define ABOX_DAEMON_PLANES_H

#include "daemon.h"

enum MHD_Result code_route(struct request *rq);
enum MHD_Result proxy_route(struct request *rq);

#endif
