/* auth — the credentials of the sandbox planes (envd 49983, code 49999).
 *
 * Every sandbox has an access token (envdAccessToken), derived from a
 * secret only aboxd reads, so sandboxes made before tokens existed have
 * one too and nothing needs storing per sandbox. Every envd and code-plane
 * request must carry it (X-Access-Token; the code plane also takes the
 * sandbox's traffic token, which @e2b/code-interpreter sends for
 * /contexts) or a signed /files URL made from it. */
#ifndef ABOX_DAEMON_AUTH_H
#define ABOX_DAEMON_AUTH_H

#include <stdbool.h>

#include "daemon.h"

#define AUTH_TOKEN_LEN 64 /* hex digits */

/* Loads <state>/aboxd.secret, making it (mode 0600) on first start;
 * state NULL: ABOX_ROOT or /var/lib/abox. 0, or -1 with a message on
 * stderr. */
/* Whether k is one of the configured API keys, compared in constant time
 * (a wrong key teaches nothing by timing). */
bool auth_key_known(const char *k);
int auth_init(const char *state);
/* The sandbox's envdAccessToken and trafficAccessToken (NUL-terminated). */
void auth_envd_token(const abox_sandbox_info *in, char out[AUTH_TOKEN_LEN + 1]);
void auth_traffic_token(const abox_sandbox_info *in, char out[AUTH_TOKEN_LEN + 1]);
/* Whether given (may be NULL) is its traffic token, compared in
 * constant time. */
bool auth_traffic_ok(const abox_sandbox_info *in, const char *given);
/* Whether rq carries a credential of sandbox in for its plane. A signed
 * URL also fixes rq->user to the user it was signed for. */
bool auth_request_ok(struct request *rq, const abox_sandbox_info *in);
/* A signed /files URL with no sandbox in it (the SDKs build them from
 * E2B_SANDBOX_URL): finds the one sandbox whose token made the signature
 * and routes rq to its envd (rq->sandbox, rq->port). */
bool auth_signed_route(struct request *rq);

/* Owner tag of an API key (16 hex digits of its sha256). */
void owner_tag(const char *key, char out[17]);
/* Whether the sandbox is visible to rq's key; fills info (clear it). */
int sandbox_visible(struct request *rq, abox_ctx *ctx, const char *id, abox_sandbox_info *info);
/* The control plane's owner checks, kept here beside the keys: whether
 * rq carries an accepted API key (its owner tag then in rq->owner), and
 * a sandbox's metadata as clients see it (reserved entries dropped; the
 * stored access token in *token, the owner tag in owner, when asked). */
bool control_authorized(struct request *rq);
json_object *control_public_metadata(const abox_sandbox_info *in, char **token, char *owner);
/* The record entry of a secure sandbox's access token (control_create.c). */
#define TOKEN_KEY "_aboxToken"

#endif
