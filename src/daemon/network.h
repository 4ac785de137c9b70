/* network — E2B's network settings of a sandbox (network.c says what is
 * checked, how, and where each setting goes). Runs in aboxd. */
#ifndef ABOX_DAEMON_NETWORK_H
#define ABOX_DAEMON_NETWORK_H

#include <json-c/json.h>
#include <stdbool.h>

#include <abox/abox.h>

struct e2b_net {
	abox_net_opts opts; /* points into allow and deny */
	char **allow, **deny;
	json_object *note; /* what GET shows: {network, allowInternetAccess} */
};

/* A create body's settings: 0, or -1 with E2B's status and text. */
int network_parse_create(json_object *body, struct e2b_net *out, unsigned *status, char *why, size_t n);
/* A PUT /network body over the stored settings (old_note: note text or
 * NULL): 0, or -1 with E2B's status and text. */
int network_parse_update(json_object *body, const char *old_note, struct e2b_net *out, unsigned *status,
			 char *why, size_t n);
void network_free(struct e2b_net *n);
/* GET's fields (network, allowInternetAccess) added to detail. */
void network_detail(const char *id, json_object *detail);
/* What the port proxy applies: whether traffic needs no token, and the
 * Host to send instead of the client's ("" for none). */
int network_ingress(const char *id, bool *public_traffic, char *mask, size_t n);

#endif
