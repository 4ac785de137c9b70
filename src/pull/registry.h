/* registry.h — the OCI distribution API over libcurl, as abox-pull uses
 * it: GET of manifests and blobs, with the registry's own auth dance
 * (a 401's challenge answered with a token or Basic credentials, once).
 * Runs only in abox-pull. */
#ifndef ABOX_PULL_REGISTRY_H
#define ABOX_PULL_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pull.h"

struct registry {
	const struct image_ref *ref;
	const char *user, *pass; /* NULL: anonymous */
	const char *ca_file; /* NULL: the system's */
	bool no_verify; /* --tls-verify=false */
	bool plain_http; /* --plain-http, or found so on a loopback registry */
	char *authz; /* the Authorization header's value once known */
	void *curl;
	char err[1024];
};

/* What a GET delivers: sink gets the body of a 2xx answer (return false
 * to stop the transfer: the sink says why in reg->err). */
struct fetch {
	const char *path; /* below /v2/<repo>/ ("manifests/latest") */
	const char *accept; /* NULL: none */
	uint64_t from; /* a Range start, 0: the whole body */
	bool (*sink)(const void *data, size_t n, void *ud);
	bool (*restart)(void *ud); /* a 200 to a Range request: the body starts over */
	void *ud;
	/* results */
	long status;
	char content_type[128];
	char digest[80]; /* Docker-Content-Digest */
	bool sink_stopped;
	int transient; /* the transfer broke off in a way a retry may mend */
};

int registry_init(struct registry *reg);
void registry_free(struct registry *reg);
/* 0 when a 2xx body went to the sink; -1 with reg->err naming the cause
 * (a registry's own error code and message when it sent one). */
int registry_get(struct registry *reg, struct fetch *f);

#endif
