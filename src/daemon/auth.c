/* auth.c — access tokens and signed URLs of the sandbox planes (see
 * auth.h), and the control plane's keys and owners (control.h). Runs in aboxd; needs nothing from the kernel but a random
 * source for the secret's first start.
 *
 * A token is HMAC-SHA256(secret, "envd:" id) in hex: knowing one
 * sandbox's token tells nothing of another's, and removing the secret file
 * (then restarting aboxd) changes every token at once. The secret never
 * leaves the state folder. A sandbox made secure before tokens were
 * derived keeps the random token its record carries, so its clients keep
 * working across the upgrade.
 *
 * Signed URLs are E2B's: "v1_" + base64(sha256("path:op:user:token" and
 * ":expiry" when there is one)), unpadded. This file checks them; it does
 * not serve /files (fs.c). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/accounts.h"
#include "base/base.h"
#include "base/base64.h"
#include "base/sha256.h"
#include "auth.h"

#define SECRET_LEN 32

static unsigned char secret[SECRET_LEN];

static int unhex(const char *s, unsigned char *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int v = 0;
		for (int k = 0; k < 2; k++) {
			char c = s[2 * i + k];
			int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
			if (d < 0)
				return -1;
			v = v << 4 | d;
		}
		out[i] = (unsigned char)v;
	}
	return 0;
}

static void tohex(const unsigned char *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static void sha256_raw(struct sha256 *h, unsigned char out[32])
{
	char hex[65];
	sha256_hex(h, hex);
	(void)unhex(hex, out, 32);
}

/* HMAC-SHA256 (RFC 2104) with the daemon's secret as key (64-byte block,
 * the key shorter than it). */
static void hmac_pass(unsigned char fill, const void *data, size_t len, unsigned char out[32])
{
	unsigned char pad[64];
	struct sha256 h;
	memset(pad, fill, sizeof(pad));
	for (size_t i = 0; i < SECRET_LEN; i++)
		pad[i] ^= secret[i];
	sha256_init(&h);
	sha256_update(&h, pad, sizeof(pad));
	sha256_update(&h, data, len);
	sha256_raw(&h, out);
}

static void hmac(const char *msg, unsigned char out[32])
{
	unsigned char inner[32];
	hmac_pass(0x36, msg, strlen(msg), inner);
	hmac_pass(0x5c, inner, sizeof(inner), out);
}

/* The secret, read only when the file is ours alone: a secret others could
 * read would let them mint every sandbox's token. */
static int read_secret(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	struct stat st;
	char buf[2 * SECRET_LEN + 2];
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		fprintf(stderr, "aboxd: '%s': %s\n", path, strerror(e));
		return -e;
	}
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077) || st.st_uid != geteuid()) {
		fprintf(stderr, "aboxd: '%s' must be a regular file of aboxd's user, mode 0600\n", path);
		return -EPERM;
	}
	if (n < 2 * SECRET_LEN || unhex(buf, secret, SECRET_LEN) < 0) {
		fprintf(stderr, "aboxd: '%s' is not a secret aboxd made (remove it to make a new one)\n", path);
		return -EINVAL;
	}
	return 0;
}

int auth_init(const char *state)
{
	if (!state || !*state)
		state = getenv("ABOX_ROOT");
	if (!state || !*state)
		state = "/var/lib/abox";
	char path[4096], tmp[4200];
	snprintf(path, sizeof(path), "%s/aboxd.secret", state);
	int r = read_secret(path);
	if (r != -ENOENT)
		return r < 0 ? -1 : 0;
	unsigned char raw[SECRET_LEN];
	if (random_bytes(raw, sizeof(raw)) < 0) {
		fprintf(stderr, "aboxd: no randomness for the token secret\n");
		return -1;
	}
	char hex[2 * SECRET_LEN + 1];
	tohex(raw, sizeof(raw), hex);
	mkdir(state, 0700);
	/* written aside and linked in: two daemons starting at once agree on
	 * one secret, and none ever reads a half-written one */
	snprintf(tmp, sizeof(tmp), "%s/.aboxd.secret.%d", state, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	bool ok = fd >= 0 && dprintf(fd, "%s\n", hex) > 0 && fsync(fd) == 0;
	if (fd >= 0)
		close(fd);
	if (!ok || (link(tmp, path) < 0 && errno != EEXIST)) {
		fprintf(stderr, "aboxd: store the token secret in '%s': %s\n", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	unlink(tmp);
	return read_secret(path) < 0 ? -1 : 0;
}

static void derived(const char *kind, const char *id, char out[AUTH_TOKEN_LEN + 1])
{
	char msg[64];
	unsigned char mac[32];
	snprintf(msg, sizeof(msg), "%s:%s", kind, id);
	hmac(msg, mac);
	tohex(mac, sizeof(mac), out);
}

void auth_envd_token(const abox_sandbox_info *in, char out[AUTH_TOKEN_LEN + 1])
{
	json_object *m = in->metadata_json ? json_tokener_parse(in->metadata_json) : NULL, *v;
	const char *kept = m && json_object_is_type(m, json_type_object) &&
					   json_object_object_get_ex(m, TOKEN_KEY, &v)
				   ? json_object_get_string(v)
				   : NULL;
	if (kept && *kept && strlen(kept) <= AUTH_TOKEN_LEN)
		snprintf(out, AUTH_TOKEN_LEN + 1, "%s", kept);
	else
		derived("envd", in->id, out);
	json_object_put(m);
}

void auth_traffic_token(const abox_sandbox_info *in, char out[AUTH_TOKEN_LEN + 1])
{
	derived("traffic", in->id, out);
}

/* Equal strings, in time that depends on want's length only: a timing
 * side channel must not hand out a token byte by byte. */
static bool same_secret(const char *want, const char *given)
{
	size_t lw = strlen(want), lg = given ? strlen(given) : 0;
	unsigned char d = (unsigned char)(lw != lg || !given || !lw);
	for (size_t i = 0; given && i < lw; i++)
		d |= (unsigned char)(want[i] ^ given[i % (lg ? lg : 1)]);
	return d == 0;
}

/* Whether rq is a signed /files URL made with token, not expired. It
 * grants that one operation (GET reads, POST writes) on that one path as
 * that one user, nothing else. */
static bool signature_ok(struct request *rq, const char *token)
{
	const char *sig = query(rq, "signature"), *exp = query(rq, "signature_expiration");
	bool get = !strcmp(rq->method, "GET"), post = !strcmp(rq->method, "POST");
	if (!sig || strcmp(rq->url, "/files") != 0 || (!get && !post))
		return false;
	if (exp) {
		char *end;
		long long e = strtoll(exp, &end, 10);
		if (!*exp || *end || e < (long long)time(NULL))
			return false;
	}
	const char *path = query(rq, "path"), *user = query(rq, "username");
	/* a user name has no ':' that could shift the fields of the signed
	 * text (acct_name_ok) */
	if (user && !acct_name_ok(user))
		return false;
	char *raw = NULL;
	if (asprintf(&raw, "%s:%s:%s:%s%s%s", path ? path : "", get ? "read" : "write", user ? user : "", token,
		     exp ? ":" : "", exp ? exp : "") < 0)
		return false;
	struct sha256 h;
	unsigned char bin[32];
	sha256_init(&h);
	sha256_update(&h, raw, strlen(raw));
	free(raw);
	sha256_raw(&h, bin);
	char *b64 = base64_encode(bin, sizeof(bin)), want[64];
	if (!b64)
		return false;
	size_t n = strlen(b64);
	while (n && b64[n - 1] == '=')
		b64[--n] = '\0';
	snprintf(want, sizeof(want), "v1_%s", b64);
	free(b64);
	return same_secret(want, sig);
}

bool auth_request_ok(struct request *rq, const abox_sandbox_info *in)
{
	char want[AUTH_TOKEN_LEN + 1];
	const char *given = header(rq, "X-Access-Token");
	auth_envd_token(in, want);
	if (given)
		return same_secret(want, given);
	if (rq->port == DAEMON_CODE_PORT) {
		/* @e2b/code-interpreter sends only the traffic token for
		 * /contexts; it guards the sandbox's ports as in E2B */
		char traffic[AUTH_TOKEN_LEN + 1];
		auth_traffic_token(in, traffic);
		return same_secret(traffic, header(rq, "E2B-Traffic-Access-Token"));
	}
	if (rq->port != DAEMON_ENVD_PORT || !signature_ok(rq, want))
		return false;
	/* a signed URL names its user; an Authorization header must not
	 * change who runs what was signed */
	const char *u = query(rq, "username");
	snprintf(rq->user, sizeof(rq->user), "%s", u ? u : "user");
	return true;
}

/* What any valid signature looks like, checked before every sandbox's
 * token is tried: junk from a client without credentials costs one look,
 * not one per sandbox. */
static bool signature_shaped(struct request *rq)
{
	const char *sig = query(rq, "signature"), *exp = query(rq, "signature_expiration");
	if (strncmp(sig, "v1_", 3) != 0 || strlen(sig) != 3 + 43 ||
	    strspn(sig + 3, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") != 43)
		return false;
	if (strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "POST") != 0)
		return false;
	char *end;
	return !exp || (*exp && strtoll(exp, &end, 10) >= (long long)time(NULL) && !*end);
}

bool auth_signed_route(struct request *rq)
{
	if (!query(rq, "signature") || strcmp(rq->url, "/files") != 0)
		return false;
	if (rq->port == DAEMON_ENVD_PORT)
		return true; /* found on the request's first call */
	rq->port = DAEMON_ENVD_PORT;
	rq->sandbox[0] = '\0';
	if (!signature_shaped(rq))
		return true; /* envd_open refuses it */
	abox_ctx *ctx = request_ctx();
	char **ids = NULL;
	if (!ctx || abox_sandbox_list(ctx, &ids, NULL) < 0) {
		abox_ctx_free(ctx);
		return true; /* no sandbox: envd_open refuses it */
	}
	/* every live sandbox's token is tried: the signature is the only thing
	 * that names the sandbox. Two matches (forks that inherited a kept
	 * token) route nowhere rather than to a guess. */
	unsigned found = 0;
	for (size_t i = 0; ids[i] && found < 2; i++) {
		abox_sandbox_info in = { .version = ABOX_SANDBOX_INFO_VERSION };
		if (abox_sandbox_info_get(ctx, ids[i], &in, NULL) < 0)
			continue;
		char token[AUTH_TOKEN_LEN + 1];
		auth_envd_token(&in, token);
		if (in.state != ABOX_STATE_DEAD && signature_ok(rq, token) && found++ == 0)
			snprintf(rq->sandbox, sizeof(rq->sandbox), "%s", in.id);
		abox_sandbox_info_clear(&in);
	}
	if (found != 1)
		rq->sandbox[0] = '\0';
	abox_strv_free(ids);
	abox_ctx_free(ctx);
	return true;
}

/* ---- keys and owners: a sandbox belongs to the key that made it ------- */

void owner_tag(const char *key, char out[17])
{
	struct sha256 h;
	char hex[65];
	sha256_init(&h);
	sha256_update(&h, key, strlen(key));
	sha256_hex(&h, hex);
	memcpy(out, hex, 16);
	out[16] = '\0';
}

/* Constant time in the key's length: a wrong key teaches nothing by timing. */
static bool same(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = (unsigned char)(la != lb);
	for (size_t i = 0; i < la; i++)
		d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
	return d == 0;
}

bool auth_key_known(const char *k)
{
	bool ok = false;
	for (size_t i = 0; k && daemon_cfg.keys && daemon_cfg.keys[i]; i++)
		ok |= same(k, daemon_cfg.keys[i]);
	return ok;
}

bool control_authorized(struct request *rq)
{
	const char *k = header(rq, "X-API-Key");
	if (!k)
		return false;
	bool ok = auth_key_known(k);
	if (ok) {
		rq->key = k;
		owner_tag(k, rq->owner);
	}
	return ok;
}

/* The record's metadata without abox's own entries; *token: the access
 * token when the sandbox is secure (malloc'd) */
json_object *control_public_metadata(const abox_sandbox_info *in, char **token, char *owner)
{
	json_object *all = in->metadata_json ? json_tokener_parse(in->metadata_json) : NULL;
	json_object *out = json_object_new_object();
	if (all && json_object_is_type(all, json_type_object)) {
		json_object_object_foreach(all, k, v) {
			if (strncmp(k, "_abox", 5) != 0) {
				json_object_object_add(out, k, json_object_get(v));
				continue;
			}
			if (token && strcmp(k, TOKEN_KEY) == 0)
				*token = strdup(json_object_get_string(v));
			if (owner && strcmp(k, DAEMON_OWNER_KEY) == 0)
				snprintf(owner, 17, "%s", json_object_get_string(v));
		}
	}
	json_object_put(all);
	return out;
}

int sandbox_visible(struct request *rq, abox_ctx *ctx, const char *id, abox_sandbox_info *info)
{
	*info = (abox_sandbox_info){ .version = ABOX_SANDBOX_INFO_VERSION };
	abox_error err = ABOX_ERROR_INIT;
	int r = abox_sandbox_info_get(ctx, id, info, &err);
	if (r < 0)
		return r;
	char owner[17] = "";
	json_object_put(control_public_metadata(info, NULL, owner));
	if (info->state == ABOX_STATE_DEAD || (rq->owner[0] && strcmp(owner, rq->owner) != 0)) {
		abox_sandbox_info_clear(info);
		return -ENOENT;
	}
	return 0;
}

bool auth_traffic_ok(const abox_sandbox_info *in, const char *given)
{
	char traffic[AUTH_TOKEN_LEN + 1];
	auth_traffic_token(in, traffic);
	return same_secret(traffic, given);
}
