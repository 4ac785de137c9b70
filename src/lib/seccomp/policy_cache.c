/* seccomp/policy_cache.c — policy_load: reads a policy file and keeps the
 * compiled program in a cache directory, so creating a sandbox does not
 * pay for a libseccomp compile (milliseconds) each time.
 *
 * An entry is one file named after a hash of everything the program
 * depends on; it stores those inputs in full (policy bytes, caps, kernel,
 * libseccomp and abox versions, architecture) and is used only when they
 * all compare equal, so a hash collision or a stale entry can only cause a
 * recompile, never a wrong program. A damaged or foreign entry is ignored
 * and replaced. The directory must be root-only: whoever can write to it
 * chooses the seccomp program of every sandbox.
 * What it does not do: parse or compile (policy_parse.c, policy.c).
 * Runs in the CLI/daemon. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "seccomp/policy_internal.h"
#include "seccomp_rev.h"

/* Bump whenever the compiler's output for the same inputs changes. */
#define CACHE_FORMAT 3
#define CACHE_MAGIC "ABOXBPF"

struct cache_header {
	char magic[8];
	uint32_t format;
	uint32_t arch;         /* seccomp_arch_native() */
	uint32_t scmp_version; /* major << 16 | minor << 8 | micro */
	uint32_t kernel;
	uint64_t caps;
	char abox_version[16];
	char compiler[16]; /* ABOX_SECCOMP_REV: this build's compiler */
	uint32_t policy_len;
	uint32_t insn_count;
	uint64_t checksum; /* hash64 of the policy, then of the program */
};

/* A 64-bit hash, 8 bytes per step (the tail byte by byte). The cache
 * folder is checked to be ours and closed to others, so this guards
 * against a damaged file, not a forged one. Byte-wise FNV-1a over the
 * ≈ 40 KB of policy and program took ≈ 50 µs of every create.
 * Not split-invariant: hash the same pieces on write and on read. */
static uint64_t hash64(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (; n >= 8; s += 8, n -= 8) {
		uint64_t w;
		memcpy(&w, s, sizeof(w));
		h = (h ^ w) * UINT64_C(0x9e3779b97f4a7c15);
		h ^= h >> 29;
	}
	for (; n; s++, n--) {
		h ^= *s;
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}
#define HASH_INIT UINT64_C(0xcbf29ce484222325)

static void fill_header(struct cache_header *h, const struct policy_env *env, size_t policy_len)
{
	const struct scmp_version *v = seccomp_version();
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, CACHE_MAGIC, sizeof(CACHE_MAGIC));
	h->format = CACHE_FORMAT;
	h->arch = seccomp_arch_native();
	h->scmp_version = v ? (v->major << 16 | v->minor << 8 | v->micro) : 0;
	h->kernel = env->kernel;
	h->caps = env->caps;
	snprintf(h->abox_version, sizeof(h->abox_version), "%s", ABOX_VERSION_STRING);
	memcpy(h->compiler, ABOX_SECCOMP_REV, sizeof(h->compiler));
	h->policy_len = (uint32_t)policy_len;
}

static void entry_name(const struct cache_header *h, const char *policy, size_t len, char *buf,
		       size_t n)
{
	/* Only the fields that describe the inputs (not insn_count or
	 * checksum, which describe the output). */
	uint64_t k = hash64(HASH_INIT, h, offsetof(struct cache_header, insn_count));
	k = hash64(k, policy, len);
	snprintf(buf, n, "%016llx.bpf", (unsigned long long)k);
}

/* Opens (creating when missing) the cache directory and checks it is ours
 * and not writable by anyone else: a writable cache is a way to hand every
 * sandbox a program that allows everything. */
static int open_cache_dir(const char *dir, abox_error *err)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return abox_error_set(err, errno, "cache directory '%s'", dir);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return abox_error_set(err, errno, "cache directory '%s'", dir);
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return abox_error_set(err, e, "cache directory '%s'", dir);
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		return abox_error_setx(
		    err, EPERM,
		    "cache directory '%s' is not owned by uid %u or is writable by others: refusing to trust programs from it",
		    dir, (unsigned)geteuid());
	}
	return fd;
}

/* Returns 0 and fills out when a valid entry for exactly these inputs
 * exists; any other outcome is a miss. */
static int cache_read(int dfd, const char *name, const struct cache_header *want,
		      const char *policy, struct policy_bpf *out)
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
		return -EPERM;
	size_t max = sizeof(struct cache_header) + want->policy_len +
		     BPF_MAXINSNS * sizeof(struct sock_filter);
	if (st.st_size < (off_t)sizeof(struct cache_header) || (size_t)st.st_size > max)
		return -EBADMSG;

	size_t n = (size_t)st.st_size;
	_cleanup_free_ char *buf = malloc(n);
	if (!buf)
		return -ENOMEM;
	ssize_t got = read_full(fd, buf, n);
	if (got < 0)
		return (int)got;
	if ((size_t)got != n)
		return -EBADMSG;

	struct cache_header h;
	memcpy(&h, buf, sizeof(h));
	size_t body = n - sizeof(h);
	if (memcmp(&h, want, offsetof(struct cache_header, insn_count)) != 0 || h.insn_count == 0 ||
	    h.insn_count > BPF_MAXINSNS ||
	    body != h.policy_len + (size_t)h.insn_count * sizeof(struct sock_filter) ||
	    hash64(hash64(HASH_INIT, buf + sizeof(h), h.policy_len), buf + sizeof(h) + h.policy_len,
		   body - h.policy_len) != h.checksum ||
	    memcmp(buf + sizeof(h), policy, h.policy_len) != 0)
		return -EBADMSG;

	size_t bytes = (size_t)h.insn_count * sizeof(struct sock_filter);
	struct sock_filter *insns = malloc(bytes);
	if (!insns)
		return -ENOMEM;
	memcpy(insns, buf + sizeof(h) + h.policy_len, bytes);
	out->insns = insns;
	out->len = (unsigned short)h.insn_count;
	return 0;
}

/* Temp file + fsync + rename: a reader sees the old entry or the whole new
 * one, never half of it, even across a crash. */
static int cache_write(int dfd, const char *name, const struct cache_header *hdr,
		       const char *policy, const struct policy_bpf *b)
{
	char tmp[64], rnd[9];
	int r = random_id(rnd, 8);
	if (r < 0)
		return r;
	snprintf(tmp, sizeof(tmp), ".%s.%s.tmp", name, rnd);

	struct cache_header h = *hdr;
	size_t bytes = (size_t)b->len * sizeof(struct sock_filter);
	h.insn_count = b->len;
	h.checksum = hash64(hash64(HASH_INIT, policy, h.policy_len), b->insns, bytes);

	_cleanup_close_ int fd =
	    openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = write_full(fd, &h, sizeof(h));
	if (r >= 0)
		r = write_full(fd, policy, h.policy_len);
	if (r >= 0)
		r = write_full(fd, b->insns, bytes);
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (r >= 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dfd, tmp, 0);
	return r;
}

int policy_load(const char *path, const char *cache_dir, const struct policy_env *env_in,
		struct policy_bpf *out, abox_error *err)
{
	_cleanup_free_ char *policy = NULL;
	size_t len = 0;
	int r = read_file_at(AT_FDCWD, path, POLICY_MAX_BYTES, &policy, &len);
	if (r == -EFBIG)
		return abox_error_setx(err, EFBIG, "%s: larger than the limit of %u bytes", path,
				       POLICY_MAX_BYTES);
	if (r < 0)
		return abox_error_set(err, -r, "%s: read", path);

	struct policy_env env;
	policy_env_resolve(env_in, &env);
	if (!cache_dir)
		return policy_compile(policy, len, path, &env, out, err);

	_cleanup_close_ int dfd = open_cache_dir(cache_dir, err);
	if (dfd < 0)
		return dfd;
	struct cache_header h;
	char name[32];
	fill_header(&h, &env, len);
	entry_name(&h, policy, len, name, sizeof(name));
	if (cache_read(dfd, name, &h, policy, out) == 0)
		return 0;

	r = policy_compile(policy, len, path, &env, out, err);
	if (r < 0)
		return r;
	/* A cache that cannot be written (full disk, read-only) only costs
	 * speed: the program is returned all the same. */
	(void)cache_write(dfd, name, &h, policy, out);
	return 0;
}
