/* image.c — container images: the OCI image layout and `docker save`
 * archives, applied layer by layer into one folder.
 *
 * Blobs are found only by digest ("sha256:" and 64 hex digits, so a
 * manifest cannot name a path) or, in docker's older manifest.json, by a
 * relative path resolved beneath the image folder. Every blob named by a
 * digest is checked against it before its content is trusted; a layer is
 * checked during its first pass (the whiteouts), before any of its files
 * are written. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/json.h"
#include "base/base.h"
#include "base/sha256.h"
#include "unpack.h"
#include "base/openat2.h"

#if defined(__x86_64__)
#define HOST_ARCH "amd64"
#elif defined(__aarch64__)
#define HOST_ARCH "arm64"
#else
#define HOST_ARCH ""
#endif

/* Opens path below dir; symlinks inside the image folder are allowed
 * (docker save links shared layers) but cannot lead out of it. */
static int open_in(struct unpack *u, int dir, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	long fd = openat2_retry(dir, path, &how, sizeof(how));
	if (fd < 0)
		return unpack_fail(u, "image: open '%s': %s", path, strerror(errno));
	struct stat st;
	if (fstat((int)fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close((int)fd);
		return unpack_fail(u, "image: '%s' is not a file", path);
	}
	return (int)fd;
}

static bool hex64(const char *s)
{
	return str_of(s, "0123456789abcdef", 64, 64);
}

/* "sha256:HEX" -> the blob's path; NULL (and an error) for anything else. */
static const char *blob_path(struct unpack *u, const char *digest, char *buf, size_t n)
{
	if (!digest || strncmp(digest, "sha256:", 7) != 0 || !hex64(digest + 7)) {
		unpack_fail(u, "image: unsupported or malformed digest '%.100s'", digest ? digest : "(none)");
		return NULL;
	}
	snprintf(buf, n, "blobs/sha256/%s", digest + 7);
	return buf;
}

/* Reads a whole JSON file (bounded) and parses it; checks it against
 * want_hex when given. */
static json_object *read_json(struct unpack *u, int dir, const char *path, const char *want_hex)
{
	int fd = open_in(u, dir, path);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size > (off_t)UNPACK_MAX_JSON) {
		close(fd);
		unpack_fail(u, "image: '%s' is larger than %u bytes", path, UNPACK_MAX_JSON);
		return NULL;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	ssize_t got = buf ? read(fd, buf, (size_t)st.st_size) : -1;
	close(fd);
	if (got != st.st_size) {
		free(buf);
		unpack_fail(u, "image: read '%s' failed", path);
		return NULL;
	}
	buf[got] = '\0';
	if (want_hex) {
		struct sha256 h;
		char hex[65];
		sha256_init(&h);
		sha256_update(&h, buf, (size_t)got);
		sha256_hex(&h, hex);
		if (strcmp(hex, want_hex) != 0) {
			free(buf);
			unpack_fail(u, "image: '%s' does not match its digest (damaged or altered)", path);
			return NULL;
		}
	}
	json_tokener *tok = json_tokener_new_ex(64);
	json_object *o = tok ? json_tokener_parse_ex(tok, buf, (int)got) : NULL;
	if (tok && json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	free(buf);
	if (!o)
		unpack_fail(u, "image: '%s' is not valid JSON", path);
	return o;
}

/* The user, workdir, env and command (Entrypoint then Cmd) of the
 * image's config, kept for the template. */
static int take_config(struct unpack *u, json_object *cfg)
{
	json_object *c = js_get(cfg, "config", json_type_object);
	if (!c)
		return 0;
	json_object *out = json_object_new_object();
	const char *user = js_str(c, "User"), *wd = js_str(c, "WorkingDir");
	if (user && *user)
		json_object_object_add(out, "user", json_object_new_string(user));
	if (wd && *wd)
		json_object_object_add(out, "workdir", json_object_new_string(wd));
	json_object *env = js_get(c, "Env", json_type_array);
	if (env)
		json_object_object_add(out, "env", json_object_get(env));
	json_object *cmd = json_object_new_array();
	const char *parts[] = { "Entrypoint", "Cmd" };
	for (size_t p = 0; p < 2; p++) {
		json_object *a = js_get(c, parts[p], json_type_array);
		for (size_t i = 0; a && i < json_object_array_length(a); i++) {
			json_object *s = json_object_array_get_idx(a, i);
			if (json_object_is_type(s, json_type_string))
				json_object_array_add(cmd, json_object_get(s));
		}
	}
	if (json_object_array_length(cmd))
		json_object_object_add(out, "cmd", cmd);
	else
		json_object_put(cmd);
	free(u->config);
	u->config = strdup(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN));
	json_object_put(out);
	return u->config ? 0 : unpack_fail(u, "out of memory");
}

struct hashed {
	int fd;
	struct sha256 h;
	char buf[1 << 16];
};

static la_ssize_t hashed_read(struct archive *a, void *ud, const void **out)
{
	struct hashed *hs = ud;
	ssize_t n;
	do
		n = read(hs->fd, hs->buf, sizeof(hs->buf));
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		archive_set_error(a, errno, "read: %s", strerror(errno));
		return -1;
	}
	sha256_update(&hs->h, hs->buf, (size_t)n);
	*out = hs->buf;
	return n;
}

/* One layer blob: first its whiteouts (checking the digest on the way,
 * reading to the end), then its entries. */
static int apply_layer(struct unpack *u, int dir, const char *path, const char *want_hex)
{
	for (int pass = 0; pass < 2; pass++) {
		struct hashed *hs = calloc(1, sizeof(*hs));
		if (!hs)
			return unpack_fail(u, "out of memory");
		hs->fd = open_in(u, dir, path);
		if (hs->fd < 0) {
			free(hs);
			return -1;
		}
		sha256_init(&hs->h);
		struct archive *a = unpack_reader_new();
		int r = -1;
		if (!a || archive_read_open(a, hs, NULL, hashed_read, NULL) != ARCHIVE_OK)
			unpack_fail(u, "image: layer '%s': %s", path, a ? archive_error_string(a) : "out of memory");
		else
			r = unpack_entries(u, a, true, pass == 0);
		if (r == 0 && pass == 0 && want_hex) {
			const void *p;
			while (hashed_read(a, hs, &p) > 0) /* the rest: padding, trailing bytes */
				;
			char hex[65];
			sha256_hex(&hs->h, hex);
			if (strcmp(hex, want_hex) != 0)
				r = unpack_fail(u, "image: layer '%s' does not match its digest (damaged or altered)",
						path);
		}
		if (r < 0 && !u->err[0])
			unpack_fail(u, "image: layer '%s' failed", path);
		if (a)
			archive_read_free(a);
		close(hs->fd);
		free(hs);
		if (r < 0)
			return r;
	}
	return 0;
}

static bool is_index(const char *mt)
{
	return mt && (strcmp(mt, "application/vnd.oci.image.index.v1+json") == 0 ||
		      strcmp(mt, "application/vnd.docker.distribution.manifest.list.v2+json") == 0);
}

static bool platform_ok(json_object *desc)
{
	json_object *p = js_get(desc, "platform", json_type_object);
	if (!p)
		return true;
	const char *os = js_str(p, "os"), *arch = js_str(p, "architecture");
	return (!os || strcmp(os, "linux") == 0) && (!arch || strcmp(arch, HOST_ARCH) == 0);
}

/* Finds the image manifest for this machine below an index (nested
 * indexes allowed, a few levels deep). Returns it parsed, or NULL. */
static json_object *pick_manifest(struct unpack *u, int dir, json_object *index, int depth)
{
	json_object *list = js_get(index, "manifests", json_type_array);
	if (!list || depth > 4) {
		unpack_fail(u, "image: the index lists no manifests");
		return NULL;
	}
	size_t n = json_object_array_length(list);
	for (size_t i = 0; i < n; i++) {
		json_object *d = json_object_array_get_idx(list, i);
		if (!json_object_is_type(d, json_type_object) || !platform_ok(d))
			continue;
		char path[128];
		const char *digest = js_str(d, "digest");
		if (!blob_path(u, digest, path, sizeof(path)))
			return NULL;
		json_object *m = read_json(u, dir, path, digest + 7);
		if (!m)
			return NULL;
		const char *mt = js_str(d, "mediaType");
		if (!mt)
			mt = js_str(m, "mediaType");
		if (is_index(mt) || js_get(m, "manifests", json_type_array)) {
			json_object *r = pick_manifest(u, dir, m, depth + 1);
			json_object_put(m);
			if (r || u->err[0])
				return r;
			continue;
		}
		if (js_get(m, "layers", json_type_array))
			return m;
		json_object_put(m);
	}
	unpack_fail(u, "image: no manifest for linux/%s in this image", HOST_ARCH);
	return NULL;
}

/* An image's layers in their order, one(u, dir, entry) applying an entry
 * of its list, the progress told after each; r: how the image's set-up
 * went (a failure there, or in a layer, stops it). */
static int apply_layers(struct unpack *u, int dir, json_object *layers, int r,
			int (*one)(struct unpack *u, int dir, json_object *entry))
{
	size_t n = layers ? json_object_array_length(layers) : 0;
	if (r == 0 && n > UNPACK_MAX_LAYERS)
		r = unpack_fail(u, "image: %zu layers (more than %d)", n, UNPACK_MAX_LAYERS);
	u->layers = (unsigned)n;
	for (size_t i = 0; r == 0 && i < n; i++) {
		u->layer = (unsigned)i + 1;
		r = one(u, dir, json_object_array_get_idx(layers, i));
		if (u->progress)
			u->progress(u);
	}
	return r;
}

/* An OCI layer: {"digest": "sha256:HEX"}, its blob checked against HEX. */
static int oci_layer(struct unpack *u, int dir, json_object *entry)
{
	char path[128];
	const char *digest = js_str(entry, "digest");
	return blob_path(u, digest, path, sizeof(path)) ? apply_layer(u, dir, path, digest + 7) : -1;
}

static int apply_oci(struct unpack *u, int dir)
{
	json_object *index = read_json(u, dir, "index.json", NULL);
	if (!index)
		return -1;
	json_object *m = pick_manifest(u, dir, index, 0);
	json_object_put(index);
	if (!m)
		return -1;
	int r = 0;
	json_object *cfgd = js_get(m, "config", json_type_object);
	char path[128];
	if (cfgd) {
		const char *digest = js_str(cfgd, "digest");
		json_object *cfg = blob_path(u, digest, path, sizeof(path)) ? read_json(u, dir, path, digest + 7)
									    : NULL;
		r = cfg ? take_config(u, cfg) : -1;
		json_object_put(cfg);
	}
	r = apply_layers(u, dir, js_get(m, "layers", json_type_array), r, oci_layer);
	json_object_put(m);
	return r;
}

/* docker save's manifest.json: [{"Config": path, "Layers": [paths]}]. A
 * path of the form blobs/sha256/HEX is checked against HEX. */
static const char *path_digest(const char *path)
{
	return strncmp(path, "blobs/sha256/", 13) == 0 && hex64(path + 13) ? path + 13 : NULL;
}

/* A docker save layer: its path (checked as path_digest says). */
static int docker_layer(struct unpack *u, int dir, json_object *entry)
{
	const char *p = json_object_is_type(entry, json_type_string) ? json_object_get_string(entry) : NULL;
	return p ? apply_layer(u, dir, p, path_digest(p)) : unpack_fail(u, "image: a layer without a path");
}

static int apply_docker(struct unpack *u, int dir)
{
	json_object *list = read_json(u, dir, "manifest.json", NULL);
	if (!list)
		return -1;
	json_object *m = json_object_is_type(list, json_type_array) && json_object_array_length(list) > 0
				 ? json_object_array_get_idx(list, 0)
				 : NULL;
	json_object *layers = js_get(m, "Layers", json_type_array);
	int r = 0;
	if (!layers)
		r = unpack_fail(u, "image: manifest.json names no layers");
	const char *cfgp = js_str(m, "Config");
	if (r == 0 && cfgp) {
		json_object *cfg = read_json(u, dir, cfgp, path_digest(cfgp));
		r = cfg ? take_config(u, cfg) : -1;
		json_object_put(cfg);
	}
	r = apply_layers(u, dir, layers, r, docker_layer);
	json_object_put(list);
	return r;
}

static bool has_file(int dir, const char *name)
{
	struct stat st;
	return fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

int unpack_image_dir(struct unpack *u, int dir)
{
	/* recent docker writes both; the OCI side has digests to check */
	if (has_file(dir, "oci-layout") && has_file(dir, "index.json"))
		return apply_oci(u, dir);
	if (has_file(dir, "manifest.json"))
		return apply_docker(u, dir);
	return 1;
}

/* Is this archive an image? Looks at the top-level names only. */
static int is_image_archive(struct unpack *u, int fd)
{
	struct archive *a = unpack_reader(fd);
	if (!a)
		return unpack_fail(u, "not a readable archive");
	struct archive_entry *e;
	int r, found = 0;
	uint64_t n = 0;
	while (!found && (r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(e);
		if (++n > u->max_entries) {
			archive_read_free(a);
			return unpack_fail(u, "the archive has more than %llu entries (the limit)",
					   (unsigned long long)u->max_entries);
		}
		if (!name)
			continue;
		while (name[0] == '.' && name[1] == '/')
			name += 2;
		found = strcmp(name, "oci-layout") == 0 || strcmp(name, "manifest.json") == 0;
	}
	if (!found && r != ARCHIVE_EOF) {
		unpack_fail(u, "the archive is damaged or of an unknown kind: %s", archive_error_string(a));
		archive_read_free(a);
		return -1;
	}
	archive_read_free(a);
	return found;
}

int unpack_file(struct unpack *u, int fd, int scratch)
{
	int image = is_image_archive(u, fd);
	if (image < 0)
		return -1;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return unpack_fail(u, "the source cannot be read twice (not a regular file)");
	struct archive *a = unpack_reader(fd);
	if (!a)
		return unpack_fail(u, "not a readable archive");
	int r;
	if (!image) {
		r = unpack_entries(u, a, false, false);
		archive_read_free(a);
		return r;
	}
	/* an image archive: its blobs go to scratch first (random access by
	 * digest), written by the same careful writer */
	struct unpack outer;
	unpack_init(&outer, scratch);
	outer.max_bytes = u->max_bytes;
	outer.max_entries = u->max_entries;
	r = unpack_entries(&outer, a, false, false);
	archive_read_free(a);
	if (r < 0) {
		snprintf(u->err, sizeof(u->err), "image archive: %.1000s", outer.err);
		unpack_done(&outer);
		return -1;
	}
	unpack_done(&outer);
	r = unpack_image_dir(u, scratch);
	return r == 1 ? unpack_fail(u, "image archive without index.json or manifest.json") : r;
}
