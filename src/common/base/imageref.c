/* base/imageref.c — image references as docker names them:
 *
 *   [REGISTRY/]PATH[:TAG][@sha256:HEX]
 *
 * The first component is a registry when it has a "." or ":" or is
 * "localhost"; otherwise the image is Docker Hub's, and a one-component
 * path is an official image under "library/". Everything is checked
 * against docker's grammar here, so that a reference can never put a
 * "..", a "?" or a space into a registry URL. */
#include <stdio.h>
#include <string.h>

#include "base/imageref.h"

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* One path component: [a-z0-9]+ ((. | _ | __ | -+) [a-z0-9]+)* */
static bool component_ok(const char *s, size_t n)
{
	if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (lower_alnum(c) || c == '-')
			continue;
		if (c == '.' && lower_alnum(s[i + 1]))
			continue;
		if (c == '_' && (lower_alnum(s[i + 1]) || (s[i + 1] == '_' && lower_alnum(s[i + 2])))) {
			if (s[i + 1] == '_')
				i++;
			continue;
		}
		return false;
	}
	return true;
}

static bool path_ok(const char *s)
{
	const char *p = s;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (!component_ok(p, n))
			return false;
		if (!slash)
			return true;
		p = slash + 1;
	}
}

/* host[:port], host a DNS name or an IPv4 address, or [IPv6][:port] */
static bool registry_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= 256)
		return false;
	const char *port = NULL;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close == s + 1)
			return false;
		for (const char *q = s + 1; q < close; q++)
			if (!strchr("0123456789abcdefABCDEF:.", *q))
				return false;
		if (close[1] == ':')
			port = close + 2;
		else if (close[1])
			return false;
	} else {
		const char *colon = strchr(s, ':');
		size_t hl = colon ? (size_t)(colon - s) : n;
		if (hl == 0 || s[0] == '-' || s[0] == '.' || s[hl - 1] == '-' || s[hl - 1] == '.')
			return false;
		for (size_t i = 0; i < hl; i++) {
			char c = s[i];
			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			      c == '-' || c == '.'))
				return false;
			if (c == '.' && s[i + 1] == '.')
				return false;
		}
		if (colon)
			port = colon + 1;
	}
	if (port) {
		size_t pl = strlen(port);
		if (pl == 0 || pl > 5 || strspn(port, "0123456789") != pl)
			return false;
	}
	return true;
}

static bool tag_ok(const char *t)
{
	size_t n = strlen(t);
	if (n == 0 || n > 128)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = t[i];
		bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			    c == '_';
		if (!word && (i == 0 || (c != '.' && c != '-')))
			return false;
	}
	return true;
}

static int fail(char *err, size_t errlen, const char *s, const char *why)
{
	snprintf(err, errlen, "image reference '%.300s': %s", s, why);
	return -1;
}

int ref_parse(const char *s, struct image_ref *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (!s)
		return fail(err, errlen, "", "empty");
	const char *in = s;
	if (strncmp(in, "docker://", 9) == 0)
		in += 9;
	size_t len = strlen(in);
	if (len == 0 || len > 600)
		return fail(err, errlen, s, len ? "too long" : "empty");
	char buf[640];
	memcpy(buf, in, len + 1);

	char *at = strchr(buf, '@');
	if (at) {
		*at = '\0';
		const char *d = at + 1;
		if (strncmp(d, "sha256:", 7) != 0)
			return fail(err, errlen, s, "only sha256 digests are supported");
		if (strlen(d) != 71 || strspn(d + 7, "0123456789abcdef") != 64)
			return fail(err, errlen, s, "the digest is not sha256: and 64 lowercase hex digits");
		memcpy(out->digest, d, 72);
	}
	/* the tag: after the last ':' that follows the last '/' */
	char *slash = strrchr(buf, '/');
	char *colon = strrchr(slash ? slash : buf, ':');
	if (colon) {
		*colon = '\0';
		if (!tag_ok(colon + 1))
			return fail(err, errlen, s,
				    "the tag must be 1-128 of A-Z a-z 0-9 _ . - (not starting with . or -)");
		snprintf(out->tag, sizeof(out->tag), "%s", colon + 1);
	}
	if (!buf[0])
		return fail(err, errlen, s, "no repository");

	char *path = buf;
	char *first = strchr(buf, '/');
	if (first) {
		*first = '\0';
		if (strchr(buf, '.') || strchr(buf, ':') || strcmp(buf, "localhost") == 0 || buf[0] == '[') {
			if (!registry_ok(buf))
				return fail(err, errlen, s,
					    "the registry is not a host name with an optional port");
			snprintf(out->registry, sizeof(out->registry), "%s", buf);
			path = first + 1;
		} else {
			*first = '/';
		}
	}
	if (!out->registry[0] || strcmp(out->registry, "docker.io") == 0 ||
	    strcmp(out->registry, "index.docker.io") == 0 ||
	    strcmp(out->registry, "registry-1.docker.io") == 0) {
		out->docker_hub = true;
		snprintf(out->registry, sizeof(out->registry), "registry-1.docker.io");
	}
	if (!path_ok(path))
		return fail(
			err, errlen, s,
			"the repository must be lowercase components of a-z 0-9 separated by . _ __ or -, "
			"joined by /");
	int w;
	if (out->docker_hub && !strchr(path, '/'))
		w = snprintf(out->repo, sizeof(out->repo), "library/%s", path);
	else
		w = snprintf(out->repo, sizeof(out->repo), "%s", path);
	if (w < 0 || (size_t)w >= sizeof(out->repo))
		return fail(err, errlen, s, "the repository is longer than 255 bytes");
	if (!out->tag[0] && !out->digest[0])
		snprintf(out->tag, sizeof(out->tag), "latest");
	return 0;
}

void ref_format(const struct image_ref *r, char *out, size_t n)
{
	const char *reg = r->docker_hub ? "docker.io" : r->registry;
	if (r->digest[0])
		snprintf(out, n, "%s/%s@%s", reg, r->repo, r->digest);
	else
		snprintf(out, n, "%s/%s:%s", reg, r->repo, r->tag);
}

void ref_template_name(const struct image_ref *r, char *out, size_t n)
{
	const char *base = strrchr(r->repo, '/');
	base = base ? base + 1 : r->repo;
	char tmp[400];
	if (r->tag[0] && strcmp(r->tag, "latest") != 0)
		snprintf(tmp, sizeof(tmp), "%s-%s", base, r->tag);
	else
		snprintf(tmp, sizeof(tmp), "%s", base);
	size_t k = 0;
	for (size_t i = 0; tmp[i] && k + 1 < n && k < 63; i++) {
		char c = tmp[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
		out[k++] = ok ? c : '-';
	}
	out[k] = '\0';
}

bool ref_loopback(const struct image_ref *r)
{
	const char *h = r->registry;
	size_t hl = strcspn(h, ":");
	if (h[0] == '[')
		return strncmp(h, "[::1]", 5) == 0;
	return (hl == 9 && strncmp(h, "localhost", 9) == 0) || strncmp(h, "127.", 4) == 0;
}
