/* libFuzzer: what abox-pull reads from a registry or a user's file
 * (src/pull): image references, WWW-Authenticate challenges, token
 * answers, docker config credentials, manifests and indexes. The first
 * byte picks the parser. Must never crash or read out of bounds; what
 * they accept must keep the promises pull.h makes (a repository of
 * lowercase components, sha256 digests, sizes within the limit). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pull.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void digest_ok(const char *d)
{
	if (strlen(d) != 71 || strncmp(d, "sha256:", 7) != 0 || strspn(d + 7, "0123456789abcdef") != 64)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	char *s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	size_t n = size - 1;
	struct image_ref ref;
	char err[512], name[64];
	switch (data[0] % 5) {
	case 0:
		if (ref_parse(s, &ref, err, sizeof(err)) == 0) {
			if (ref.repo[0] == '/' || strstr(ref.repo, "..") || strpbrk(ref.repo, "?#% \\"))
				abort();
			if (ref.digest[0])
				digest_ok(ref.digest);
			ref_template_name(&ref, name, sizeof(name));
			char out[700];
			ref_format(&ref, out, sizeof(out));
		}
		break;
	case 1: {
		struct challenge c;
		(void)challenge_parse(s, &c);
		break;
	}
	case 2: {
		char *t = token_parse(s, n);
		if (t && strpbrk(t, "\r\n "))
			abort();
		free(t);
		break;
	}
	case 3: {
		char *u = NULL, *p = NULL;
		(void)ref_parse("localhost:5000/x", &ref, err, sizeof(err));
		(void)creds_from_config(s, n, &ref, &u, &p, err, sizeof(err));
		free(u);
		free(p);
		break;
	}
	default: {
		static struct descriptor layers[PULL_MAX_LAYERS];
		struct descriptor pick, cfg;
		size_t nl = 0;
		enum manifest_kind k = manifest_parse(s, n, "", "linux", "amd64", "", 1u << 20, &pick, &cfg,
						      layers, &nl, err, sizeof(err));
		if (k == MANIFEST_INDEX)
			digest_ok(pick.digest);
		if (k == MANIFEST_IMAGE) {
			digest_ok(cfg.digest);
			if (nl > PULL_MAX_LAYERS)
				abort();
			for (size_t i = 0; i < nl; i++) {
				digest_ok(layers[i].digest);
				if (layers[i].size < 0 || layers[i].size > (1 << 20))
					abort();
			}
		}
		break;
	}
	}
	free(s);
	return 0;
}
