/* Unit tests of abox-pull's parsers (src/pull): image references, auth
 * challenges, token answers, docker config credentials and manifests —
 * everything a registry or a user's file can put in front of it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pull.h"

#define HEX "1ccf27dd1660119ad1a680ac9013fd5d607eef9ed05cbb08b50a3fcdf9c648d1"
#define HEX2 "11c89421c7eb2917e915a3403e560c343cda779640e62f9ffc42ac88ee4dab97"

static struct image_ref ok(const char *s)
{
	struct image_ref r;
	char err[512];
	int rc = ref_parse(s, &r, err, sizeof(err));
	cr_assert_eq(rc, 0, "%s: %s", s, err);
	return r;
}

static void refused(const char *s, const char *why)
{
	struct image_ref r;
	char err[512] = "";
	cr_assert_eq(ref_parse(s, &r, err, sizeof(err)), -1, "%s was accepted", s);
	cr_assert(strstr(err, why), "%s: '%s' does not say '%s'", s, err, why);
}

Test(pull_ref, docker_hub_names)
{
	struct image_ref r = ok("python:3.12");
	cr_assert_str_eq(r.registry, "registry-1.docker.io");
	cr_assert_str_eq(r.repo, "library/python");
	cr_assert_str_eq(r.tag, "3.12");
	cr_assert(r.docker_hub);
	r = ok("docker.io/library/python:3.12");
	cr_assert_str_eq(r.repo, "library/python");
	r = ok("grafana/grafana");
	cr_assert_str_eq(r.repo, "grafana/grafana");
	cr_assert_str_eq(r.tag, "latest");
	r = ok("docker://alpine");
	cr_assert_str_eq(r.repo, "library/alpine");
	char buf[600];
	ref_format(&r, buf, sizeof(buf));
	cr_assert_str_eq(buf, "docker.io/library/alpine:latest");
}

Test(pull_ref, registries_ports_and_digests)
{
	struct image_ref r = ok("localhost:5000/x:y");
	cr_assert_str_eq(r.registry, "localhost:5000");
	cr_assert_str_eq(r.repo, "x");
	cr_assert_str_eq(r.tag, "y");
	cr_assert(!r.docker_hub);
	cr_assert(ref_loopback(&r));
	r = ok("ghcr.io/o/r@sha256:" HEX);
	cr_assert_str_eq(r.registry, "ghcr.io");
	cr_assert_str_eq(r.repo, "o/r");
	cr_assert_str_eq(r.tag, "");
	cr_assert_str_eq(r.digest, "sha256:" HEX);
	cr_assert(!ref_loopback(&r));
	r = ok("127.0.0.1:5000/a/b_c__d-e.f:v1.0-rc@sha256:" HEX);
	cr_assert_str_eq(r.tag, "v1.0-rc");
	cr_assert(ref_loopback(&r));
	r = ok("[::1]:5000/a");
	cr_assert(ref_loopback(&r));
	char name[64];
	ref_template_name(&r, name, sizeof(name));
	cr_assert_str_eq(name, "a");
	r = ok("python:3.12-slim");
	ref_template_name(&r, name, sizeof(name));
	cr_assert_str_eq(name, "python-3-12-slim");
}

Test(pull_ref, what_could_reach_a_url_is_refused)
{
	refused("", "empty");
	refused("Python", "lowercase");
	refused("x/../y", "lowercase");
	refused("localhost:5000/a/../../v2", "lowercase");
	refused("a b", "lowercase");
	refused("x?y=1", "lowercase");
	refused("x#y", "lowercase");
	refused("reg.io/x:ta g", "tag");
	refused("reg.io/x:.bad", "tag");
	refused("reg.io/x@sha512:abcd", "sha256");
	refused("reg.io/x@sha256:ABC", "64 lowercase");
	refused("bad_host.io/x", "registry");
	refused("host.io:99999999/x", "registry");
	refused("host..io/x", "registry");
	refused("x//y", "lowercase");
	refused("x/", "lowercase");
	char longname[700];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	refused(longname, "too long");
}

Test(pull_auth, challenges)
{
	struct challenge c;
	cr_assert_eq(
		challenge_parse("Bearer realm=\"https://auth.example/token\",service=\"registry.example\","
				"scope=\"repository:library/python:pull\"",
				&c),
		0);
	cr_assert_eq(c.scheme, AUTH_BEARER);
	cr_assert_str_eq(c.realm, "https://auth.example/token");
	cr_assert_str_eq(c.service, "registry.example");
	cr_assert_str_eq(c.scope, "repository:library/python:pull");
	cr_assert_eq(challenge_parse("Basic realm=\"Registry Realm\"", &c), 0);
	cr_assert_eq(c.scheme, AUTH_BASIC);
	cr_assert_eq(challenge_parse("bearer realm=https://a/t, service=s", &c), 0);
	cr_assert_str_eq(c.service, "s");
	cr_assert_eq(challenge_parse("Bearer realm=\"a\\\"b\",service=x", &c), -1,
		     "a realm that is not a URL");
	cr_assert_eq(challenge_parse("Negotiate abc", &c), -1);
	cr_assert_eq(challenge_parse("Bearer realm=\"https://a/t", &c), -1, "an unterminated quote");
	cr_assert_eq(challenge_parse("Bearer realm=\"https://a/\r\nX: y\"", &c), -1, "a control byte");
	cr_assert_eq(challenge_parse(NULL, &c), -1);
}

Test(pull_auth, tokens)
{
	char *t = token_parse("{\"token\":\"abc.def\"}", 19);
	cr_assert_str_eq(t, "abc.def");
	free(t);
	t = token_parse("{\"access_token\":\"xyz\",\"expires_in\":300}", 39);
	cr_assert_str_eq(t, "xyz");
	free(t);
	const char *bad[] = { "{\"token\":\"a\\r\\nX-Evil: 1\"}", "{\"token\":\"\"}", "[]", "{\"token\":5}",
			      "nope" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_null(token_parse(bad[i], strlen(bad[i])), "%s", bad[i]);
}

Test(pull_auth, docker_config_credentials)
{
	struct image_ref hub = ok("python"), local = ok("localhost:5000/x");
	char *u, *p, note[256];
	/* "alice:s3cr:et" */
	const char *cfg = "{\"auths\":{\"https://index.docker.io/v1/\":{\"auth\":\"YWxpY2U6czNjcjpldA==\"},"
			  "\"localhost:5000\":{\"username\":\"bob\",\"password\":\"pw\"}}}";
	cr_assert_eq(creds_from_config(cfg, strlen(cfg), &hub, &u, &p, note, sizeof(note)), 1);
	cr_assert_str_eq(u, "alice");
	cr_assert_str_eq(p, "s3cr:et");
	free(u);
	free(p);
	cr_assert_eq(creds_from_config(cfg, strlen(cfg), &local, &u, &p, note, sizeof(note)), 1);
	cr_assert_str_eq(u, "bob");
	free(u);
	free(p);
	struct image_ref other = ok("ghcr.io/o/r");
	cr_assert_eq(creds_from_config(cfg, strlen(cfg), &other, &u, &p, note, sizeof(note)), 0);
	cr_assert_null(u);
	const char *helper = "{\"auths\":{},\"credHelpers\":{\"ghcr.io\":\"gh\"}}";
	cr_assert_eq(creds_from_config(helper, strlen(helper), &other, &u, &p, note, sizeof(note)), 0);
	cr_assert(strstr(note, "credential helper"));
	cr_assert_eq(creds_from_config("[1]", 3, &other, &u, &p, note, sizeof(note)), -1);
	const char *nocolon = "{\"auths\":{\"ghcr.io\":{\"auth\":\"bm9jb2xvbg==\"}}}";
	cr_assert_eq(creds_from_config(nocolon, strlen(nocolon), &other, &u, &p, note, sizeof(note)), 0);
}

static enum manifest_kind parse(const char *body, const char *mt, struct descriptor *pick,
				struct descriptor *cfg, size_t *nl, char *err)
{
	static struct descriptor layers[PULL_MAX_LAYERS];
	return manifest_parse(body, strlen(body), mt, "linux", "amd64", "", 1u << 30, pick, cfg, layers, nl,
			      err, 512);
}

Test(pull_manifest, image_and_index)
{
	struct descriptor pick, cfg;
	size_t nl;
	char err[512];
	const char *m =
		"{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
		"\"config\":{\"mediaType\":\"application/"
		"vnd.oci.image.config.v1+json\",\"digest\":\"sha256:" HEX
		"\",\"size\":10},\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\","
		"\"digest\":\"sha256:" HEX2 "\",\"size\":146}]}";
	cr_assert_eq(parse(m, "", &pick, &cfg, &nl, err), MANIFEST_IMAGE, "%s", err);
	cr_assert_eq(nl, 1);
	cr_assert_eq(cfg.size, 10);
	const char *idx = "{\"schemaVersion\":2,\"manifests\":["
			  "{\"digest\":\"sha256:" HEX2 "\",\"size\":5,\"platform\":{\"os\":\"unknown\","
			  "\"architecture\":\"unknown\"}},"
			  "{\"digest\":\"sha256:" HEX2 "\",\"size\":6,\"platform\":{\"os\":\"linux\","
			  "\"architecture\":\"arm64\",\"variant\":\"v8\"}},"
			  "{\"digest\":\"sha256:" HEX "\",\"size\":7,\"platform\":{\"os\":\"linux\","
			  "\"architecture\":\"amd64\"}}]}";
	cr_assert_eq(parse(idx, "application/vnd.oci.image.index.v1+json", &pick, &cfg, &nl, err),
		     MANIFEST_INDEX, "%s", err);
	cr_assert_str_eq(pick.digest, "sha256:" HEX);
	cr_assert_eq(pick.size, 7);
	struct descriptor layers[4];
	cr_assert_eq(manifest_parse(idx, strlen(idx), "", "linux", "arm64", "v8", 1u << 30, &pick, &cfg,
				    layers, &nl, err, sizeof(err)),
		     MANIFEST_INDEX);
	cr_assert_eq(pick.size, 6);
	cr_assert_eq(manifest_parse(idx, strlen(idx), "", "linux", "s390x", "", 1u << 30, &pick, &cfg, layers,
				    &nl, err, sizeof(err)),
		     MANIFEST_BAD);
	cr_assert(strstr(err, "no manifest for linux/s390x"), "%s", err);
}

Test(pull_manifest, hostile_manifests_are_refused_by_name)
{
	struct descriptor pick, cfg;
	size_t nl;
	char err[512];
	struct {
		const char *body, *why;
	} cases[] = {
		{ "not json", "not one JSON object" },
		{ "{\"schemaVersion\":1,\"fsLayers\":[]}", "schema 1" },
		{ "{\"schemaVersion\":2,\"config\":{\"digest\":\"sha256:" HEX
		  "\",\"size\":1},\"layers\":[{\"mediaType\":"
		  "\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"../../etc/passwd\",\"size\":1}]}",
		  "is not sha256" },
		{ "{\"schemaVersion\":2,\"config\":{\"digest\":\"sha256:" HEX
		  "\",\"size\":-1},\"layers\":[]}",
		  "negative" },
		{ "{\"schemaVersion\":2,\"config\":{\"digest\":\"sha256:" HEX
		  "\",\"size\":99999999999},\"layers\":[]}",
		  "more than the limit" },
		{ "{\"schemaVersion\":2,\"config\":{\"digest\":\"sha256:" HEX
		  "\",\"size\":1},\"layers\":[{\"mediaType\":"
		  "\"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip\",\"digest\":\"sha256:" HEX2
		  "\","
		  "\"size\":1,\"urls\":[\"https://x\"]}]}",
		  "foreign layer" },
		{ "{\"schemaVersion\":2,\"config\":{\"digest\":\"sha256:" HEX
		  "\",\"size\":1},\"layers\":[{\"mediaType\":"
		  "\"application/vnd.cncf.helm.chart.content.v1.tar+gzip\",\"digest\":\"sha256:" HEX2 "\","
		  "\"size\":1}]}",
		  "not a tar layer" },
		{ "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"application/"
		  "vnd.cncf.helm.config.v1+json\","
		  "\"digest\":\"sha256:" HEX "\",\"size\":1},\"layers\":[]}",
		  "an artifact" },
		{ "{\"mediaType\":\"text/html\"}", "not an image manifest" },
		{ "{\"schemaVersion\":2,\"layers\":[]}", "no config" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		cr_assert_eq(parse(cases[i].body, "", &pick, &cfg, &nl, err), MANIFEST_BAD, "%s",
			     cases[i].body);
		cr_assert(strstr(err, cases[i].why), "'%s': '%s' lacks '%s'", cases[i].body, err,
			  cases[i].why);
	}
	/* more layers than any image needs */
	size_t cap = 600 * 120 + 200;
	char *big = malloc(cap);
	int n = snprintf(big, cap,
			 "{\"schemaVersion\":2,\"config\":{\"digest\":\"sha256:" HEX "\",\"size\":1},"
			 "\"layers\":[");
	for (int i = 0; i < 600; i++)
		n += snprintf(big + n, cap - (size_t)n, "%s{\"digest\":\"sha256:" HEX2 "\",\"size\":1}",
			      i ? "," : "");
	snprintf(big + n, cap - (size_t)n, "]}");
	cr_assert_eq(parse(big, "", &pick, &cfg, &nl, err), MANIFEST_BAD);
	cr_assert(strstr(err, "more than 512 layers"), "%s", err);
	free(big);
}
