/* base/imageref — container image references as docker writes them
 * ("python:3.12", "ghcr.io/o/r@sha256:HEX", "localhost:5000/x:y"),
 * checked against docker's grammar. Shared by abox-pull, which builds
 * registry URLs from them, and the library, which names templates after
 * them. */
#ifndef ABOX_BASE_IMAGEREF_H
#define ABOX_BASE_IMAGEREF_H

#include <stdbool.h>
#include <stddef.h>

/* A parsed image reference: "python:3.12", "ghcr.io/o/r@sha256:HEX",
 * "localhost:5000/x:y". registry is the host (and port) the API is
 * reached at ("registry-1.docker.io" for Docker Hub); repo never starts
 * with "/" and has only lowercase path components. */
struct image_ref {
	char registry[256];
	char repo[256];
	char tag[129]; /* "" when only a digest is given */
	char digest[72]; /* "sha256:HEX", or "" */
	bool docker_hub;
};

/* 0, or -1 with the reason in err. Accepts a leading "docker://". */
int ref_parse(const char *s, struct image_ref *out, char *err, size_t errlen);
/* "registry/repo:tag" or "registry/repo@digest" (the more exact one). */
void ref_format(const struct image_ref *r, char *out, size_t n);
/* A template name made from the reference: the repository's last
 * component and the tag, in a-z 0-9 - _ ("python:3.12" -> "python-3-12"). */
void ref_template_name(const struct image_ref *r, char *out, size_t n);
/* True for a registry on this machine (localhost, 127.0.0.0/8, ::1),
 * which may speak plain HTTP as with docker. */
bool ref_loopback(const struct image_ref *r);

#endif
