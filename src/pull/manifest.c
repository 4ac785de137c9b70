/* manifest.c — image manifests and indexes as a registry serves them
 * (OCI image spec and docker's schema 2). Only what a pull needs is
 * read, and it is checked before anything is fetched: digests are
 * sha256 (so that no name built from one can be a path), sizes are
 * bounded, layers are of a kind abox-unpack applies. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "base/json.h"
#include "pull.h"

#define MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"

void host_platform(const char **arch, const char **variant)
{
	*variant = "";
#if defined(__x86_64__)
	*arch = "amd64";
#elif defined(__aarch64__)
	*arch = "arm64";
	*variant = "v8";
#elif defined(__i386__)
	*arch = "386";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	*arch = "ppc64le";
#elif defined(__s390x__)
	*arch = "s390x";
#elif defined(__riscv) && __riscv_xlen == 64
	*arch = "riscv64";
#else
	*arch = "unknown";
#endif
}

__attribute__((format(printf, 3, 4))) static int bad(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return -1;
}

static bool digest_ok(const char *d)
{
	return d && strlen(d) == 71 && strncmp(d, "sha256:", 7) == 0 &&
	       strspn(d + 7, "0123456789abcdef") == 64;
}

/* A descriptor {"mediaType", "digest", "size"} checked and copied. */
static int descriptor(json_object *o, uint64_t max_blob, struct descriptor *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (!json_object_is_type(o, json_type_object))
		return bad(err, errlen, "manifest: a descriptor is not an object%s", "");
	const char *d = js_str(o, "digest");
	if (!digest_ok(d))
		return bad(err, errlen,
			   "manifest: digest '%.100s' is not sha256: and 64 lowercase hex digits",
			   d ? d : "(none)");
	json_object *s = js_get(o, "size", json_type_int);
	int64_t size = s ? json_object_get_int64(s) : -1;
	if (size < 0)
		return bad(err, errlen, "manifest: %s has no size (or a negative one)", d);
	if ((uint64_t)size > max_blob) {
		char msg[200];
		snprintf(msg, sizeof(msg), "manifest: %.80s is %lld bytes, more than the limit of %llu", d,
			 (long long)size, (unsigned long long)max_blob);
		return bad(err, errlen, "%s", msg);
	}
	memcpy(out->digest, d, 72);
	out->size = size;
	const char *mt = js_str(o, "mediaType");
	snprintf(out->media_type, sizeof(out->media_type), "%s", mt ? mt : "");
	return 0;
}

static bool layer_type_ok(const char *mt)
{
	static const char *const ok[] = {
		"application/vnd.oci.image.layer.v1.tar",
		"application/vnd.oci.image.layer.v1.tar+gzip",
		"application/vnd.oci.image.layer.v1.tar+zstd",
		"application/vnd.docker.image.rootfs.diff.tar.gzip",
		"application/vnd.docker.image.rootfs.diff.tar",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (strcmp(mt, ok[i]) == 0)
			return true;
	return false;
}

/* The index's entry for os/arch[/variant]: an exact variant first, an
 * entry without a variant second. */
static int pick_platform(json_object *list, const char *os, const char *arch, const char *variant,
			 struct descriptor *pick, char *err, size_t errlen)
{
	int best = 0;
	size_t n = json_object_array_length(list);
	if (n > 4096)
		return bad(err, errlen, "index: more than 4096 manifests%s", "");
	for (size_t i = 0; i < n; i++) {
		json_object *d = json_object_array_get_idx(list, i);
		json_object *p = js_get(d, "platform", json_type_object);
		const char *pos = js_str(p, "os"), *parch = js_str(p, "architecture"),
			   *pv = js_str(p, "variant");
		if (!pos || !parch || strcmp(pos, os) != 0 || strcmp(parch, arch) != 0)
			continue;
		/* no variant asked for: any (linux/arm64 is arm64/v8) */
		int score = !pv || !*pv || !variant || !*variant ? 1 : strcmp(pv, variant) == 0 ? 2 : 0;
		if (score <= best)
			continue;
		struct descriptor tmp;
		if (descriptor(d, PULL_MAX_MANIFEST, &tmp, err, errlen) < 0)
			return -1;
		*pick = tmp;
		best = score;
	}
	if (!best) {
		char what[160];
		snprintf(what, sizeof(what), "%s/%s%s%s", os, arch, variant && *variant ? "/" : "",
			 variant ? variant : "");
		return bad(err, errlen, "index: the image has no manifest for %s", what);
	}
	return 0;
}

enum manifest_kind manifest_parse(const char *body, size_t n, const char *media_type, const char *os,
				  const char *arch, const char *variant, uint64_t max_blob,
				  struct descriptor *pick, struct descriptor *config,
				  struct descriptor *layers, size_t *nlayers, char *err, size_t errlen)
{
	if (nlayers)
		*nlayers = 0;
	if (!body || n == 0 || n > PULL_MAX_MANIFEST) {
		bad(err, errlen, "manifest: empty or larger than %s", "4 MiB");
		return MANIFEST_BAD;
	}
	if (memchr(body, '\0', n)) {
		bad(err, errlen, "manifest: not JSON (a NUL byte)%s", "");
		return MANIFEST_BAD;
	}
	char *text = strndup(body, n);
	json_object *o = text ? js_parse_object(text, 32) : NULL;
	free(text);
	if (!o) {
		bad(err, errlen, "manifest: not one JSON object%s", "");
		return MANIFEST_BAD;
	}
	enum manifest_kind kind = MANIFEST_BAD;
	const char *mt = js_str(o, "mediaType");
	if (!mt || !*mt)
		mt = media_type && *media_type ? media_type : "";
	json_object *schema = js_get(o, "schemaVersion", json_type_int);
	if (strncmp(mt, "application/vnd.docker.distribution.manifest.v1+", 47) == 0 ||
	    (schema && json_object_get_int(schema) == 1)) {
		bad(err, errlen,
		    "manifest: docker schema 1 (deprecated since 2017) is not supported; push the "
		    "image again with a current docker or skopeo%s",
		    "");
		goto out;
	}
	bool is_index = strcmp(mt, MT_OCI_INDEX) == 0 || strcmp(mt, MT_DOCKER_LIST) == 0;
	bool is_image = strcmp(mt, MT_OCI_MANIFEST) == 0 || strcmp(mt, MT_DOCKER_MANIFEST) == 0;
	if (!is_index && !is_image) {
		if (*mt && strcmp(mt, "application/json") != 0) {
			bad(err, errlen, "manifest: media type '%.100s' is not an image manifest or index",
			    mt);
			goto out;
		}
		is_index = js_get(o, "manifests", json_type_array) != NULL;
		is_image = !is_index && js_get(o, "layers", json_type_array) != NULL;
	}
	if (is_index) {
		json_object *list = js_get(o, "manifests", json_type_array);
		if (!list) {
			bad(err, errlen, "index: no manifests list%s", "");
			goto out;
		}
		if (pick && pick_platform(list, os, arch, variant, pick, err, errlen) == 0)
			kind = MANIFEST_INDEX;
		goto out;
	}
	if (!is_image) {
		bad(err, errlen, "manifest: neither an image manifest nor an index%s", "");
		goto out;
	}
	json_object *cfg = js_get(o, "config", json_type_object);
	json_object *list = js_get(o, "layers", json_type_array);
	if (!cfg || !list) {
		bad(err, errlen, "manifest: no %s", cfg ? "layers" : "config");
		goto out;
	}
	if (descriptor(cfg, PULL_MAX_CONFIG, config, err, errlen) < 0)
		goto out;
	if (config->media_type[0] &&
	    strcmp(config->media_type, "application/vnd.oci.image.config.v1+json") != 0 &&
	    strcmp(config->media_type, "application/vnd.docker.container.image.v1+json") != 0) {
		bad(err, errlen, "manifest: config of type '%.100s': an artifact, not a container image",
		    config->media_type);
		goto out;
	}
	size_t ln = json_object_array_length(list);
	if (ln > PULL_MAX_LAYERS) {
		bad(err, errlen, "manifest: more than %s layers", "512");
		goto out;
	}
	for (size_t i = 0; i < ln; i++) {
		json_object *l = json_object_array_get_idx(list, i);
		if (descriptor(l, max_blob, &layers[i], err, errlen) < 0)
			goto out;
		const char *lt = layers[i].media_type;
		if (js_get(l, "urls", json_type_array) || strstr(lt, "nondistributable") ||
		    strstr(lt, "foreign")) {
			bad(err, errlen,
			    "manifest: layer %.80s is a foreign layer (fetched from other URLs), "
			    "which abox does not pull",
			    layers[i].digest);
			goto out;
		}
		if (!layer_type_ok(lt)) {
			bad(err, errlen, "manifest: layer type '%.100s' is not a tar layer abox can apply",
			    lt);
			goto out;
		}
	}
	if (nlayers)
		*nlayers = ln;
	kind = MANIFEST_IMAGE;
out:
	json_object_put(o);
	return kind;
}
