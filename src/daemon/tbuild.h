/* tbuild — E2B's template build API (what the SDKs' Template SDK calls):
 *
 *   POST /v3/templates                          a build is asked for
 *   GET  /templates/{id}/files/{hash}           is a COPY step's upload here?
 *   PUT  /templates/uploads/{token}             the upload (no API key: the
 *                                               token, made for one owner
 *                                               and hash, is the credential)
 *   POST /v2/templates/{id}/builds/{build}      the steps: the build starts
 *   GET  /templates/{id}/builds/{build}/status  status and logs from an offset
 *
 * The steps become a Dockerfile and the uploads its context, built by
 * abox_template_build_dockerfile in a thread; the template is named
 * after the build's name, so Sandbox.create(name) finds it.
 * Runs in aboxd. */
#ifndef ABOX_DAEMON_TBUILD_H
#define ABOX_DAEMON_TBUILD_H

#include "daemon.h"

/* The routes above that need the API key (under control_authorized);
 * MHD_NO and *handled false when u is none of them. */
enum MHD_Result tbuild_route(struct request *rq, const char *m, const char *u, bool *handled);
/* PUT /templates/uploads/{token} (before the API key check). */
enum MHD_Result tbuild_upload(struct request *rq, const char *token);

#endif
