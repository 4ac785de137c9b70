/* head — checks on a request's head that libmicrohttpd leaves to aboxd
 * (see head.c). */
#ifndef ABOX_DAEMON_HEAD_H
#define ABOX_DAEMON_HEAD_H

#include "daemon.h"

/* 0 when the head is fine, else the status to answer (400, 501) with the
 * cause in why. method and version are libmicrohttpd's pointers for this
 * request (the access handler's arguments). */
unsigned head_check(struct request *rq, const char *method, const char *version, char *why, size_t n);

#endif
