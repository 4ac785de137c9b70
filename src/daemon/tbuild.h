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
 * (and tlist.h's GET /templates and /templates/{id}, ttags.h's tags)
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
/* PUT /templates/uploads/{token}, streamed to a file as it arrives (no
 * API key: the token is the credential). begin: true when rq is one
 * (rq->tupload set; an unknown token is answered at the body's end). */
bool tbuild_stream_begin(struct request *rq);
void tbuild_stream_chunk(struct request *rq, const char *data, size_t n);
enum MHD_Result tbuild_stream_end(struct request *rq);
void tbuild_stream_free(struct request *rq);

#endif
