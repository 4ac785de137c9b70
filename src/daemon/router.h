/* router — the libmicrohttpd callbacks of aboxd's API listeners (see
 * router.c), which main.c hands to MHD_start_daemon. Runs in aboxd. */
#ifndef ABOX_DAEMON_ROUTER_H
#define ABOX_DAEMON_ROUTER_H

#include "daemon.h"

/* MHD_OPTION_URI_LOG_CALLBACK: a request begins (its state is made). */
void *daemon_uri(void *cls, const char *uri, struct MHD_Connection *conn);
/* The access handler: the head, each piece of the body, the end. */
enum MHD_Result daemon_access(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_size, void **con_cls);
/* MHD_OPTION_NOTIFY_COMPLETED: the request is over (counted, logged,
 * freed). */
void daemon_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe);

#endif
