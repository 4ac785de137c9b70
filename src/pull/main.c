/* abox-pull — the helper `abox template pull` runs:
 *
 *   abox-pull [--platform OS/ARCH[/VARIANT]] [--authfile FILE]
 *             [--creds-stdin] [--ca-file FILE] [--tls-verify=false]
 *             [--plain-http] [--skip-if NAME@DIGEST] REF STORE LAYOUT
 *
 * Resolves REF at its registry (the OCI distribution API; an index
 * resolved to this machine's platform), downloads the config and layers
 * into the blob store STORE (shared by pulls: what is there is not
 * downloaded again, a partial download is resumed), checks every blob's
 * size and digest, and writes LAYOUT (an empty folder on STORE's
 * filesystem) as an OCI image layout of hard links into STORE, which
 * abox-unpack then applies. --creds-stdin: a user name and a password on
 * two lines of stdin (never in argv, where ps shows them).
 *
 * --skip-if: when REF resolves to exactly that, stop there (exit 4: the
 * caller's template is up to date) and fetch nothing.
 *
 * Reports on stdout, one per line: "note TEXT", "resolved NAME@DIGEST",
 * "layers N BYTES", "config STATE DIGEST", "layer I N DONE TOTAL STATE DIGEST" (STATE:
 * pulling, cached, pulled, resumed), "done". Failure: one line on stderr naming
 * the cause, exit 1.
 *
 * A separate process because it parses what a registry sends: it runs
 * with no capabilities at all and no_new_privs, and a crash in it takes
 * nothing else down. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base.h"
#include "base/sha256.h"
#include "pull.h"
#include "registry.h"
#include "store.h"

#define ACCEPT_ALL                                                                                           \
	"application/vnd.oci.image.index.v1+json, "                                                          \
	"application/vnd.docker.distribution.manifest.list.v2+json, "                                        \
	"application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"

__attribute__((format(printf, 1, 2))) static int die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static int confine(void)
{
	for (int c = 0; c <= 63; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -1;
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };
	if (syscall(SYS_capset, &h, d) < 0)
		return -1;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

/* The docker-style config file to read credentials from: the one given,
 * else $REGISTRY_AUTH_FILE, $DOCKER_CONFIG/config.json,
 * ~/.docker/config.json, $XDG_RUNTIME_DIR/containers/auth.json. */
static const char *auth_file(const char *given, char *buf, size_t n)
{
	if (given)
		return given;
	const char *e;
	if ((e = getenv("REGISTRY_AUTH_FILE")) && *e && access(e, R_OK) == 0)
		return e;
	const char *tries[3][2] = { { getenv("DOCKER_CONFIG"), "config.json" },
				    { getenv("HOME"), ".docker/config.json" },
				    { getenv("XDG_RUNTIME_DIR"), "containers/auth.json" } };
	for (int i = 0; i < 3; i++) {
		if (!tries[i][0] || !*tries[i][0])
			continue;
		snprintf(buf, n, "%s/%s", tries[i][0], tries[i][1]);
		if (access(buf, R_OK) == 0)
			return buf;
	}
	return NULL;
}

struct body {
	char *buf;
	size_t len;
	struct registry *reg;
};

static bool body_sink(const void *data, size_t n, void *ud)
{
	struct body *b = ud;
	if (b->len + n > PULL_MAX_MANIFEST) {
		snprintf(b->reg->err, sizeof(b->reg->err), "the manifest is larger than 4 MiB: refused");
		return false;
	}
	char *nb = realloc(b->buf, b->len + n + 1);
	if (!nb)
		return false;
	memcpy(nb + b->len, data, n);
	b->buf = nb;
	b->len += n;
	b->buf[b->len] = '\0';
	return true;
}

/* GET manifests/REF into b; its sha256 into hex; checked against want
 * ("sha256:HEX") when given, else against the registry's own
 * Docker-Content-Digest when it sent one. */
static int get_manifest(struct registry *reg, const char *ref, const char *want, struct body *b, char hex[65],
			char *ctype, size_t cn)
{
	char path[200];
	snprintf(path, sizeof(path), "manifests/%s", ref);
	*b = (struct body){ .reg = reg };
	struct fetch f = { .path = path, .accept = ACCEPT_ALL, .sink = body_sink, .ud = b };
	if (registry_get(reg, &f) < 0)
		return -1;
	struct sha256 h;
	sha256_init(&h);
	sha256_update(&h, b->buf ? b->buf : "", b->len);
	sha256_hex(&h, hex);
	const char *check = want ? want : f.digest[0] ? f.digest : NULL;
	if (check && (strncmp(check, "sha256:", 7) != 0 || strcmp(check + 7, hex) != 0)) {
		snprintf(reg->err, sizeof(reg->err),
			 "manifest %.100s: the registry sent one whose digest is "
			 "sha256:%s (damaged or altered: refused)",
			 check, hex);
		return -1;
	}
	snprintf(ctype, cn, "%.*s", (int)strcspn(f.content_type, ";"), f.content_type);
	return 0;
}

struct layer_progress {
	unsigned i, n;
	const char *digest;
};

static void on_progress(uint64_t done, uint64_t total, void *ud)
{
	struct layer_progress *p = ud;
	printf("layer %u %u %llu %llu pulling %s\n", p->i, p->n, (unsigned long long)done,
	       (unsigned long long)total, p->digest);
	fflush(stdout);
}

static int link_blob(struct store *s, int layout, const char *digest)
{
	char from[96], to[96];
	snprintf(from, sizeof(from), "sha256/%s", digest + 7);
	snprintf(to, sizeof(to), "blobs/sha256/%s", digest + 7);
	if (linkat(s->dir, from, layout, to, 0) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

static int write_file(int dir, const char *name, const char *data, size_t n)
{
	int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, data, n);
	int e = errno;
	close(fd);
	errno = e;
	return w == (ssize_t)n ? 0 : -1;
}

static int write_layout(struct store *s, int layout, const char *mhex, const struct body *m,
			const char *mtype, const struct descriptor *config, const struct descriptor *layers,
			size_t nl)
{
	char name[96], index[512];
	if ((mkdirat(layout, "blobs", 0700) < 0 && errno != EEXIST) ||
	    (mkdirat(layout, "blobs/sha256", 0700) < 0 && errno != EEXIST))
		return -1;
	snprintf(name, sizeof(name), "blobs/sha256/%s", mhex);
	if (write_file(layout, name, m->buf, m->len) < 0 || link_blob(s, layout, config->digest) < 0)
		return -1;
	for (size_t i = 0; i < nl; i++)
		if (link_blob(s, layout, layers[i].digest) < 0)
			return -1;
	snprintf(index, sizeof(index),
		 "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"%s\",\"digest\":\"sha256:%s\","
		 "\"size\":%zu}]}",
		 mtype, mhex, m->len);
	static const char layout_v[] = "{\"imageLayoutVersion\":\"1.0.0\"}";
	if (write_file(layout, "index.json", index, strlen(index)) < 0 ||
	    write_file(layout, "oci-layout", layout_v, sizeof(layout_v) - 1) < 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "platform", required_argument, NULL, 'p' },   { "authfile", required_argument, NULL, 'a' },
		{ "creds-stdin", no_argument, NULL, 'c' },      { "ca-file", required_argument, NULL, 'C' },
		{ "tls-verify", required_argument, NULL, 't' }, { "plain-http", no_argument, NULL, 'h' },
		{ "skip-if", required_argument, NULL, 's' },    { NULL, 0, NULL, 0 },
	};
	const char *platform = NULL, *authfile = NULL, *ca_file = NULL, *skip_if = NULL;
	bool creds_stdin = false, no_verify = false, plain = false;
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			platform = optarg;
			break;
		case 'a':
			authfile = optarg;
			break;
		case 'c':
			creds_stdin = true;
			break;
		case 'C':
			ca_file = optarg;
			break;
		case 't':
			if (strcmp(optarg, "false") != 0 && strcmp(optarg, "true") != 0)
				goto usage;
			no_verify = strcmp(optarg, "false") == 0;
			break;
		case 'h':
			plain = true;
			break;
		case 's':
			skip_if = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind != 3)
		goto usage;
	const char *refs = argv[optind], *store_path = argv[optind + 1], *layout_path = argv[optind + 2];

	char err[512];
	struct image_ref ref;
	if (ref_parse(refs, &ref, err, sizeof(err)) < 0)
		return die("%s", err);
	const char *arch, *variant, *os = "linux";
	host_platform(&arch, &variant);
	char pbuf[128];
	if (platform) {
		snprintf(pbuf, sizeof(pbuf), "%s", platform);
		char *a = strchr(pbuf, '/'), *v = a ? strchr(a + 1, '/') : NULL;
		if (!a || a == pbuf || !a[1])
			return die("platform '%s': give it as OS/ARCH[/VARIANT] (linux/amd64)", platform);
		*a = '\0';
		if (v)
			*v = '\0';
		os = pbuf;
		arch = a + 1;
		variant = v ? v + 1 : "";
	}

	struct registry reg = {
		.ref = &ref, .ca_file = ca_file, .no_verify = no_verify, .plain_http = plain
	};
	char *user = NULL, *pass = NULL;
	if (creds_stdin) {
		user = line_read(stdin);
		pass = line_read(stdin);
		if (!user || !*user)
			return die("--creds-stdin: no user name on the first line of stdin");
	} else {
		char buf[4096];
		const char *af = auth_file(authfile, buf, sizeof(buf));
		if (af) {
			size_t len = 0;
			char *text = NULL, note[256];
			int rr = read_file_at(AT_FDCWD, af, 4u << 20, &text, &len);
			if (rr < 0 && (authfile || rr != -ENOENT))
				return die("credentials file '%s': %s", af, strerror(-rr));
			int r = text ? creds_from_config(text, len, &ref, &user, &pass, note, sizeof(note))
				     : 0;
			free(text);
			if (r < 0)
				return die("credentials file '%s' is not a docker-style config (JSON with "
					   "\"auths\")",
					   af);
			if (r == 0 && note[0])
				printf("note %s: %s\n", ref.registry, note);
		}
	}
	reg.user = user;
	reg.pass = pass;

	struct store st;
	if (store_open(&st, store_path) < 0)
		return die("blob store '%s': %s", store_path, strerror(errno));
	int layout = open(layout_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (layout < 0)
		return die("layout folder '%s': %s", layout_path, strerror(errno));
	/* from here on, only what the network sends is handled: no
	 * capability is needed for the store (ours, root's) or the network */
	if (geteuid() == 0 && confine() < 0)
		return die("drop capabilities: %s", strerror(errno));
	if (registry_init(&reg) < 0)
		return die("%s", reg.err);

	struct body top, m;
	char top_hex[65], m_hex[65], ctype[128];
	if (get_manifest(&reg, ref.digest[0] ? ref.digest : ref.tag, ref.digest[0] ? ref.digest : NULL, &top,
			 top_hex, ctype, sizeof(ctype)) < 0)
		return die("%s", reg.err);
	static struct descriptor layers[PULL_MAX_LAYERS];
	struct descriptor pick, config;
	size_t nl = 0;
	const uint64_t max_blob = 64ull << 30;
	enum manifest_kind k = manifest_parse(top.buf, top.len, ctype, os, arch, variant, max_blob, &pick,
					      &config, layers, &nl, err, sizeof(err));
	char mtype[128];
	if (k == MANIFEST_BAD)
		return die("%s", err);
	if (k == MANIFEST_INDEX) {
		if (get_manifest(&reg, pick.digest, pick.digest, &m, m_hex, ctype, sizeof(ctype)) < 0)
			return die("%s", reg.err);
		struct descriptor unused;
		k = manifest_parse(m.buf, m.len, ctype, os, arch, variant, max_blob, &unused, &config, layers,
				   &nl, err, sizeof(err));
		if (k == MANIFEST_BAD)
			return die("%s", err);
		if (k != MANIFEST_IMAGE)
			return die("%s: an index inside an index is not supported", pick.digest);
		snprintf(mtype, sizeof(mtype), "%s", pick.media_type[0] ? pick.media_type : ctype);
	} else {
		m = top;
		memcpy(m_hex, top_hex, sizeof(m_hex));
		top.buf = NULL;
		snprintf(mtype, sizeof(mtype), "%s",
			 ctype[0] ? ctype : "application/vnd.oci.image.manifest.v1+json");
	}
	char name[600];
	struct image_ref resolved = ref;
	snprintf(resolved.digest, sizeof(resolved.digest), "sha256:%s", top_hex);
	ref_format(&resolved, name, sizeof(name));
	uint64_t total = 0;
	for (size_t i = 0; i < nl; i++)
		total += (uint64_t)layers[i].size;
	printf("resolved %s\n", name);
	if (skip_if && strcmp(skip_if, name) == 0) {
		fflush(stdout);
		return 4;
	}
	printf("layers %zu %llu\n", nl, (unsigned long long)total);
	fflush(stdout);

	struct fetch_report rep = { 0 };
	if (store_fetch(&st, &reg, &config, &rep) < 0)
		return die("image config: %s", reg.err);
	printf("config %s %s\n", rep.state == FETCH_CACHED ? "cached" : "pulled", config.digest);
	for (size_t i = 0; i < nl; i++) {
		struct layer_progress lp = { .i = (unsigned)i + 1,
					     .n = (unsigned)nl,
					     .digest = layers[i].digest };
		rep = (struct fetch_report){ .progress = on_progress, .ud = &lp };
		if (store_fetch(&st, &reg, &layers[i], &rep) < 0)
			return die("layer %s: %s", layers[i].digest, reg.err);
		printf("layer %u %zu %lld %lld %s %s\n", lp.i, nl, (long long)layers[i].size,
		       (long long)layers[i].size,
		       rep.state == FETCH_CACHED    ? "cached"
		       : rep.state == FETCH_RESUMED ? "resumed"
						    : "pulled",
		       layers[i].digest);
		fflush(stdout);
	}
	if (write_layout(&st, layout, m_hex, &m, mtype, &config, layers, nl) < 0)
		return die("layout folder '%s': %s", layout_path, strerror(errno));
	printf("done\n");
	free(top.buf);
	free(m.buf);
	free(user);
	free(pass);
	registry_free(&reg);
	return fflush(stdout) == 0 ? 0 : 1;
usage:
	fprintf(stderr, "usage: abox-pull [--platform OS/ARCH[/VARIANT]] [--authfile FILE] [--creds-stdin] "
			"[--ca-file FILE] [--tls-verify=false] [--plain-http] [--skip-if NAME@DIGEST] REF "
			"STORE LAYOUT\n");
	return 2;
}
