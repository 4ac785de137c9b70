/* abox-pull's pieces (src/pull): image references, registry auth
 * challenges and credentials, manifests, the blob store. Everything here
 * but registry.c is pure parsing of what a registry (or a user's config)
 * sends, so that the fuzz targets can reach it without a network. */
#ifndef ABOX_PULL_H
#define ABOX_PULL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/imageref.h"

#define PULL_MAX_MANIFEST (4u << 20) /* bytes of a manifest or index */
#define PULL_MAX_CONFIG (8u << 20) /* bytes of an image config */
#define PULL_MAX_TOKEN (1u << 20) /* bytes of a token server's answer */
#define PULL_MAX_LAYERS 512 /* as abox-unpack */

/* A WWW-Authenticate challenge: "Bearer realm=...,service=...,scope=..."
 * or "Basic realm=...". */
enum auth_scheme {
	AUTH_NONE,
	AUTH_BASIC,
	AUTH_BEARER
};
struct challenge {
	enum auth_scheme scheme;
	char realm[1024];
	char service[256];
	char scope[512];
};
/* 0, or -1 for a header that is not one challenge we understand. */
int challenge_parse(const char *hdr, struct challenge *c);

/* A token server's answer: {"token": ...} or {"access_token": ...}.
 * Returns the malloc'd token, or NULL. The token is checked to be a
 * header-safe string (no CR, LF or control bytes). */
char *token_parse(const char *body, size_t n);

/* Credentials for registry from a docker-style config file's text
 * ({"auths": {"HOST": {"auth": base64("user:pass")} | {"username",
 * "password"}}}); keys may carry a scheme and a path, and Docker Hub is
 * "https://index.docker.io/v1/". 1 with *user and *pass malloc'd; 0 when
 * the file has none for registry (helper says why, e.g. a credential
 * helper we do not run, in note); -1 when the text is not such a file. */
int creds_from_config(const char *text, size_t n, const struct image_ref *ref, char **user, char **pass,
		      char *note, size_t notelen);

/* A content descriptor of a manifest or index. */
struct descriptor {
	char digest[72];
	int64_t size;
	char media_type[128];
};

/* What a manifest body is. */
enum manifest_kind {
	MANIFEST_BAD,
	MANIFEST_IMAGE,
	MANIFEST_INDEX
};
/* Parses body (n bytes, media_type from the Content-Type; may be empty)
 * as an image manifest or an index. For an index, *pick gets the
 * descriptor of the manifest for os/arch[/variant] (the "unknown"
 * attestation entries never match); for a manifest, *config and layers
 * (at most PULL_MAX_LAYERS, *nlayers set). Every digest is checked to be
 * sha256:HEX, every size non-negative and at most max_blob. Returns the
 * kind, or MANIFEST_BAD with the reason in err. */
enum manifest_kind manifest_parse(const char *body, size_t n, const char *media_type, const char *os,
				  const char *arch, const char *variant, uint64_t max_blob,
				  struct descriptor *pick, struct descriptor *config,
				  struct descriptor *layers, size_t *nlayers, char *err, size_t errlen);

/* This machine's platform as OCI names it (arch "amd64", "arm64", ...;
 * variant "" or "v8"). */
void host_platform(const char **arch, const char **variant);

#endif
