/* seccomp/policy_fields.c — the values of a policy's fields, each read
 * strictly: typed getters whose errors name the source and the JSON
 * location; actions (with their errno), architectures and archMap,
 * argument comparisons, and Docker's includes/excludes (capabilities,
 * Go architecture names, minKernel); the name tables they are checked
 * against, and the filter flags accepted.
 * What it does not do: walk the document or a rule, or resolve syscall
 * names (policy_parse.c); read the bytes (policy_json.c).
 * Runs in the CLI/daemon, on untrusted input: every size and count is
 * limited. */
#include <linux/audit.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>

#include "seccomp/policy_internal.h"

/* ---- messages ---------------------------------------------------------- */

int policy_fail(struct policy_pctx *c, int code, const char *path, const char *fmt, ...)
{
	char msg[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (path && *path)
		abox_error_setx(c->err, code, "%s: %s: %s", c->source, path, msg);
	else
		abox_error_setx(c->err, code, "%s: %s", c->source, msg);
	return -code; /* always < 0: every caller passes a real errno */
}

/* JSON locations are short by construction (known field names, numbers);
 * a cut one is still a usable message. */
void policy_pathf(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, n, fmt, ap);
	va_end(ap);
}

static const char *type_name(json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null: return "null";
	case json_type_boolean: return "a boolean";
	case json_type_double: return "a non-integer number";
	case json_type_int: return "an integer";
	case json_type_object: return "an object";
	case json_type_array: return "an array";
	case json_type_string: return "a string";
	}
	return "an unknown value";
}

/* ---- typed getters ------------------------------------------------------ */

int policy_want(struct policy_pctx *c, json_object *v, json_type t, const char *path, const char *what)
{
	if (json_object_is_type(v, t))
		return 0;
	return policy_fail(c, EINVAL, path, "expected %s, got %s", what, type_name(v));
}

int policy_get_string(struct policy_pctx *c, json_object *v, const char *path, bool allow_empty,
		      const char **out)
{
	int r = policy_want(c, v, json_type_string, path, "a string");
	if (r < 0)
		return r;
	const char *s = json_object_get_string(v);
	size_t n = (size_t)json_object_get_string_len(v);
	/* "mount\u0000x" would compare equal to "mount" in C. */
	if (strlen(s) != n)
		return policy_fail(c, EINVAL, path, "string contains a NUL character");
	if (n == 0 && !allow_empty)
		return policy_fail(c, EINVAL, path, "empty string");
	*out = s;
	return 0;
}

int policy_get_uint(struct policy_pctx *c, json_object *v, const char *path, uint64_t max, uint64_t *out)
{
	int r = policy_want(c, v, json_type_int, path, "an integer");
	if (r < 0)
		return r;
	/* json-c keeps values above INT64_MAX as uint64; get_int64 clamps
	 * those to INT64_MAX, so only real negatives are < 0 here. */
	if (json_object_get_int64(v) < 0)
		return policy_fail(c, EINVAL, path, "negative number %lld",
				   (long long)json_object_get_int64(v));
	uint64_t u = json_object_get_uint64(v);
	if (u > max)
		return policy_fail(c, ERANGE, path, "%llu is above the maximum %llu",
				   (unsigned long long)u, (unsigned long long)max);
	*out = u;
	return 0;
}

int policy_get_array(struct policy_pctx *c, json_object *v, const char *path, size_t max, size_t *n)
{
	int r = policy_want(c, v, json_type_array, path, "an array");
	if (r < 0)
		return r;
	*n = json_object_array_length(v);
	if (*n > max)
		return policy_fail(c, E2BIG, path, "%zu entries, above the limit of %zu", *n, max);
	return 0;
}

/* ---- tables -------------------------------------------------------------- */

struct named {
	const char *name;
	uint32_t value;
};

static bool lookup(const struct named *t, size_t n, const char *name, uint32_t *out)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].name, name) == 0) {
			*out = t[i].value;
			return true;
		}
	return false;
}

enum { ACT_NOTIFY = 1 };

static const struct named actions[] = {
	{ "SCMP_ACT_KILL", SCMP_ACT_KILL_THREAD },
	{ "SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD },
	{ "SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS },
	{ "SCMP_ACT_TRAP", SCMP_ACT_TRAP },
	{ "SCMP_ACT_ERRNO", SCMP_ACT_ERRNO(0) },
	{ "SCMP_ACT_TRACE", SCMP_ACT_TRACE(0) },
	{ "SCMP_ACT_ALLOW", SCMP_ACT_ALLOW },
	{ "SCMP_ACT_LOG", SCMP_ACT_LOG },
	{ "SCMP_ACT_NOTIFY", ACT_NOTIFY },
};

static const struct named ops[] = {
	{ "SCMP_CMP_NE", SCMP_CMP_NE },
	{ "SCMP_CMP_LT", SCMP_CMP_LT },
	{ "SCMP_CMP_LE", SCMP_CMP_LE },
	{ "SCMP_CMP_EQ", SCMP_CMP_EQ },
	{ "SCMP_CMP_GE", SCMP_CMP_GE },
	{ "SCMP_CMP_GT", SCMP_CMP_GT },
	{ "SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ },
};

static const struct named arches[] = {
	{ "SCMP_ARCH_X86", SCMP_ARCH_X86 },
	{ "SCMP_ARCH_X86_64", SCMP_ARCH_X86_64 },
	{ "SCMP_ARCH_X32", SCMP_ARCH_X32 },
	{ "SCMP_ARCH_ARM", SCMP_ARCH_ARM },
	{ "SCMP_ARCH_AARCH64", SCMP_ARCH_AARCH64 },
	{ "SCMP_ARCH_MIPS", SCMP_ARCH_MIPS },
	{ "SCMP_ARCH_MIPS64", SCMP_ARCH_MIPS64 },
	{ "SCMP_ARCH_MIPS64N32", SCMP_ARCH_MIPS64N32 },
	{ "SCMP_ARCH_MIPSEL", SCMP_ARCH_MIPSEL },
	{ "SCMP_ARCH_MIPSEL64", SCMP_ARCH_MIPSEL64 },
	{ "SCMP_ARCH_MIPSEL64N32", SCMP_ARCH_MIPSEL64N32 },
	{ "SCMP_ARCH_PPC", SCMP_ARCH_PPC },
	{ "SCMP_ARCH_PPC64", SCMP_ARCH_PPC64 },
	{ "SCMP_ARCH_PPC64LE", SCMP_ARCH_PPC64LE },
	{ "SCMP_ARCH_S390", SCMP_ARCH_S390 },
	{ "SCMP_ARCH_S390X", SCMP_ARCH_S390X },
	{ "SCMP_ARCH_PARISC", SCMP_ARCH_PARISC },
	{ "SCMP_ARCH_PARISC64", SCMP_ARCH_PARISC64 },
	{ "SCMP_ARCH_RISCV64", SCMP_ARCH_RISCV64 },
};

/* clang-format off */
#define CAP(x) { #x, x }
static const struct named caps[] = {
	CAP(CAP_CHOWN), CAP(CAP_DAC_OVERRIDE), CAP(CAP_DAC_READ_SEARCH), CAP(CAP_FOWNER),
	CAP(CAP_FSETID), CAP(CAP_KILL), CAP(CAP_SETGID), CAP(CAP_SETUID), CAP(CAP_SETPCAP),
	CAP(CAP_LINUX_IMMUTABLE), CAP(CAP_NET_BIND_SERVICE), CAP(CAP_NET_BROADCAST),
	CAP(CAP_NET_ADMIN), CAP(CAP_NET_RAW), CAP(CAP_IPC_LOCK), CAP(CAP_IPC_OWNER),
	CAP(CAP_SYS_MODULE), CAP(CAP_SYS_RAWIO), CAP(CAP_SYS_CHROOT), CAP(CAP_SYS_PTRACE),
	CAP(CAP_SYS_PACCT), CAP(CAP_SYS_ADMIN), CAP(CAP_SYS_BOOT), CAP(CAP_SYS_NICE),
	CAP(CAP_SYS_RESOURCE), CAP(CAP_SYS_TIME), CAP(CAP_SYS_TTY_CONFIG), CAP(CAP_MKNOD),
	CAP(CAP_LEASE), CAP(CAP_AUDIT_WRITE), CAP(CAP_AUDIT_CONTROL), CAP(CAP_SETFCAP),
	CAP(CAP_MAC_OVERRIDE), CAP(CAP_MAC_ADMIN), CAP(CAP_SYSLOG), CAP(CAP_WAKE_ALARM),
	CAP(CAP_BLOCK_SUSPEND), CAP(CAP_AUDIT_READ), CAP(CAP_PERFMON), CAP(CAP_BPF),
	CAP(CAP_CHECKPOINT_RESTORE),
};
#undef CAP
/* clang-format on */

/* Architecture names of Docker's includes/excludes "arches" (Go's GOARCH
 * spelling), and ours. */
/* clang-format off */
static const char *const docker_arches[] = {
	"386", "amd64", "arm", "arm64", "loong64", "mips", "mipsle", "mips64", "mips64le",
	"mips64n32", "mips64len32", "ppc", "ppc64", "ppc64le", "riscv64", "s390", "s390x",
	"x32", "x86",
};
/* clang-format on */
#if defined(__x86_64__) && defined(__ILP32__)
#define NATIVE_DOCKER_ARCH "x32"
#elif defined(__x86_64__)
#define NATIVE_DOCKER_ARCH "amd64"
#elif defined(__i386__)
#define NATIVE_DOCKER_ARCH "386"
#elif defined(__aarch64__)
#define NATIVE_DOCKER_ARCH "arm64"
#elif defined(__arm__)
#define NATIVE_DOCKER_ARCH "arm"
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NATIVE_DOCKER_ARCH "ppc64le"
#elif defined(__powerpc64__)
#define NATIVE_DOCKER_ARCH "ppc64"
#elif defined(__s390x__)
#define NATIVE_DOCKER_ARCH "s390x"
#elif defined(__riscv) && __riscv_xlen == 64
#define NATIVE_DOCKER_ARCH "riscv64"
#elif defined(__loongarch64)
#define NATIVE_DOCKER_ARCH "loong64"
#else
#define NATIVE_DOCKER_ARCH "unknown"
#endif

/* Filter flags are accepted and have no effect: abox installs the program
 * with flags 0 from a single-threaded child (TSYNC is moot), SPEC_ALLOW
 * would only weaken the Spectre mitigation, LOG only adds audit records,
 * WAIT_KILLABLE_RECV only concerns user notification. */
static const char *const known_flags[] = {
	"SECCOMP_FILTER_FLAG_TSYNC",
	"SECCOMP_FILTER_FLAG_LOG",
	"SECCOMP_FILTER_FLAG_SPEC_ALLOW",
	"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV",
};

static bool in_list(const char *const *l, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(l[i], s) == 0)
			return true;
	return false;
}

/* ---- field values -------------------------------------------------------- */

int policy_parse_action(struct policy_pctx *c, json_object *act, json_object *ret, const char *path,
			const char *act_field, const char *ret_field, uint32_t *out)
{
	char p[POLICY_PATH_LEN], shown[64];
	const char *name = NULL;
	uint32_t a = 0;

	policy_pathf(p, sizeof(p), "%s%s%s", path, *path ? "." : "", act_field);
	int r = policy_get_string(c, act, p, false, &name);
	if (r < 0)
		return r;
	if (!lookup(actions, ELEMENTSOF(actions), name, &a))
		return policy_fail(c, EINVAL, p, "unknown action '%s'",
				   policy_show(name, shown, sizeof(shown)));
	if (a == ACT_NOTIFY)
		return policy_fail(
		    c, ENOTSUP, p,
		    "SCMP_ACT_NOTIFY is not supported: abox has no seccomp user-notification agent");

	bool takes_data = a == SCMP_ACT_ERRNO(0) || a == SCMP_ACT_TRACE(0);
	uint64_t data = EPERM; /* the OCI default for both */
	if (ret) {
		policy_pathf(p, sizeof(p), "%s%s%s", path, *path ? "." : "", ret_field);
		if (!takes_data)
			return policy_fail(c, EINVAL, p,
					   "only meaningful with SCMP_ACT_ERRNO or SCMP_ACT_TRACE");
		/* The kernel caps SECCOMP_RET_ERRNO data at MAX_ERRNO (4095),
		 * so a larger value would not be the errno the policy says;
		 * libseccomp 2.5 refuses 4095 itself. */
		r = policy_get_uint(c, ret, p, a == SCMP_ACT_ERRNO(0) ? 4094 : 0xffff, &data);
		if (r < 0)
			return r;
	}
	*out = takes_data ? (a | (uint32_t)data) : a;
	return 0;
}

int policy_parse_arch(struct policy_pctx *c, json_object *v, const char *path, uint32_t *out)
{
	const char *name = NULL;
	char shown[64];
	int r = policy_get_string(c, v, path, false, &name);
	if (r < 0)
		return r;
	if (!lookup(arches, ELEMENTSOF(arches), name, out))
		return policy_fail(c, EINVAL, path, "unknown architecture '%s'",
				   policy_show(name, shown, sizeof(shown)));
	return 0;
}

int policy_add_arch(struct policy_pctx *c, struct policy_doc *d, uint32_t arch, const char *path)
{
	for (unsigned i = 0; i < d->n_arches; i++)
		if (d->arches[i] == arch)
			return 0;
	if (d->n_arches == POLICY_MAX_ARCHES)
		return policy_fail(c, E2BIG, path, "more than %u architectures", POLICY_MAX_ARCHES);
	/* libseccomp cannot put both byte orders in one filter (EDOM). */
	if ((arch ^ seccomp_arch_native()) & __AUDIT_ARCH_LE)
		return policy_fail(c, EINVAL, path,
				   "byte order differs from this machine's: cannot be filtered here");
	d->arches[d->n_arches++] = arch;
	return 0;
}

int policy_parse_arch_map(struct policy_pctx *c, json_object *v, struct policy_doc *d)
{
	size_t n;
	int r = policy_get_array(c, v, "archMap", POLICY_MAX_LIST, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		char p[POLICY_PATH_LEN], q[POLICY_PATH_LEN];
		json_object *e = json_object_array_get_idx(v, i), *main_v = NULL, *subs = NULL;
		policy_pathf(p, sizeof(p), "archMap[%zu]", i);
		if ((r = policy_want(c, e, json_type_object, p, "an object")) < 0)
			return r;
		json_object_object_foreach(e, key, val)
		{
			if (strcmp(key, "architecture") == 0)
				main_v = val;
			else if (strcmp(key, "subArchitectures") == 0)
				subs = json_object_is_type(val, json_type_null) ? NULL : val;
			else {
				char shown[64];
				return policy_fail(c, EINVAL, p, "unknown field '%s'",
						   policy_show(key, shown, sizeof(shown)));
			}
		}
		if (!main_v)
			return policy_fail(c, EINVAL, p, "missing field 'architecture'");
		uint32_t arch;
		policy_pathf(q, sizeof(q), "%s.architecture", p);
		if ((r = policy_parse_arch(c, main_v, q, &arch)) < 0)
			return r;
		size_t m = 0;
		policy_pathf(q, sizeof(q), "%s.subArchitectures", p);
		if (subs && (r = policy_get_array(c, subs, q, POLICY_MAX_LIST, &m)) < 0)
			return r;
		/* Docker's rule: use the entry of the architecture we run on. */
		bool native = arch == seccomp_arch_native();
		if (native && (r = policy_add_arch(c, d, arch, p)) < 0)
			return r;
		for (size_t j = 0; j < m; j++) {
			uint32_t sub;
			policy_pathf(q, sizeof(q), "%s.subArchitectures[%zu]", p, j);
			if ((r = policy_parse_arch(c, json_object_array_get_idx(subs, j), q, &sub)) < 0)
				return r;
			if (native && (r = policy_add_arch(c, d, sub, q)) < 0)
				return r;
		}
	}
	return 0;
}

static int parse_min_kernel(struct policy_pctx *c, json_object *v, const char *path, unsigned *out)
{
	const char *s = NULL;
	char shown[64];
	int r = policy_get_string(c, v, path, false, &s);
	if (r < 0)
		return r;
	unsigned major = 0, minor = 0;
	const char *p = s;
	int digits = 0;
	for (; *p >= '0' && *p <= '9' && digits < 4; p++, digits++)
		major = major * 10 + (unsigned)(*p - '0');
	bool ok = digits > 0 && *p == '.';
	if (ok) {
		p++;
		for (digits = 0; *p >= '0' && *p <= '9' && digits < 3; p++, digits++)
			minor = minor * 10 + (unsigned)(*p - '0');
		ok = digits > 0 && *p == '\0';
	}
	if (!ok)
		return policy_fail(c, EINVAL, path, "'%s' is not a kernel version of the form MAJOR.MINOR",
				   policy_show(s, shown, sizeof(shown)));
	*out = major * 1000 + minor;
	return 0;
}

int policy_parse_filter(struct policy_pctx *c, json_object *v, const char *path, struct policy_filter *f)
{
	char p[POLICY_PATH_LEN], shown[64];
	int r = policy_want(c, v, json_type_object, path, "an object");
	if (r < 0)
		return r;
	f->present = true;
	json_object_object_foreach(v, key, val)
	{
		size_t n = 0;
		policy_pathf(p, sizeof(p), "%s.%s", path, key);
		if (json_object_is_type(val, json_type_null))
			continue;
		if (strcmp(key, "caps") == 0) {
			if ((r = policy_get_array(c, val, p, POLICY_MAX_LIST, &n)) < 0)
				return r;
			f->has_caps = n > 0;
			for (size_t i = 0; i < n; i++) {
				const char *name = NULL;
				uint32_t cap = 0;
				policy_pathf(p, sizeof(p), "%s.caps[%zu]", path, i);
				if ((r = policy_get_string(c, json_object_array_get_idx(val, i), p, false,
							   &name)) < 0)
					return r;
				if (!lookup(caps, ELEMENTSOF(caps), name, &cap))
					return policy_fail(c, EINVAL, p, "unknown capability '%s'",
							   policy_show(name, shown, sizeof(shown)));
				f->caps |= UINT64_C(1) << cap;
			}
		} else if (strcmp(key, "arches") == 0) {
			if ((r = policy_get_array(c, val, p, POLICY_MAX_LIST, &n)) < 0)
				return r;
			f->has_arches = n > 0;
			for (size_t i = 0; i < n; i++) {
				const char *name = NULL;
				policy_pathf(p, sizeof(p), "%s.arches[%zu]", path, i);
				if ((r = policy_get_string(c, json_object_array_get_idx(val, i), p, false,
							   &name)) < 0)
					return r;
				if (!in_list(docker_arches, ELEMENTSOF(docker_arches), name))
					return policy_fail(
					    c, EINVAL, p,
					    "unknown architecture '%s' (Go names: amd64, arm64, ...)",
					    policy_show(name, shown, sizeof(shown)));
				if (strcmp(name, NATIVE_DOCKER_ARCH) == 0)
					f->arch_native = true;
			}
		} else if (strcmp(key, "minKernel") == 0) {
			if ((r = parse_min_kernel(c, val, p, &f->min_kernel)) < 0)
				return r;
		} else {
			return policy_fail(c, EINVAL, path, "unknown field '%s'",
					   policy_show(key, shown, sizeof(shown)));
		}
	}
	return 0;
}

int policy_parse_arg(struct policy_pctx *c, json_object *v, const char *path, struct scmp_arg_cmp *out)
{
	char p[POLICY_PATH_LEN], shown[64];
	json_object *index = NULL, *value = NULL, *value2 = NULL, *op = NULL;
	int r = policy_want(c, v, json_type_object, path, "an object");
	if (r < 0)
		return r;
	json_object_object_foreach(v, key, val)
	{
		if (strcmp(key, "index") == 0)
			index = val;
		else if (strcmp(key, "value") == 0)
			value = val;
		else if (strcmp(key, "valueTwo") == 0)
			value2 = val;
		else if (strcmp(key, "op") == 0)
			op = val;
		else
			return policy_fail(c, EINVAL, path, "unknown field '%s'",
					   policy_show(key, shown, sizeof(shown)));
	}
	if (!index || !value || !op)
		return policy_fail(c, EINVAL, path, "missing field '%s'",
				   !index   ? "index"
				   : !value ? "value"
					    : "op");

	uint64_t idx = 0, a = 0, b = 0;
	policy_pathf(p, sizeof(p), "%s.index", path);
	if ((r = policy_get_uint(c, index, p, POLICY_MAX_ARGS - 1, &idx)) < 0)
		return r;
	policy_pathf(p, sizeof(p), "%s.value", path);
	if ((r = policy_get_uint(c, value, p, UINT64_MAX, &a)) < 0)
		return r;
	policy_pathf(p, sizeof(p), "%s.valueTwo", path);
	if (value2 && (r = policy_get_uint(c, value2, p, UINT64_MAX, &b)) < 0)
		return r;
	const char *name = NULL;
	uint32_t o = 0;
	policy_pathf(p, sizeof(p), "%s.op", path);
	if ((r = policy_get_string(c, op, p, false, &name)) < 0)
		return r;
	if (!lookup(ops, ELEMENTSOF(ops), name, &o))
		return policy_fail(c, EINVAL, p, "unknown op '%s'",
				   policy_show(name, shown, sizeof(shown)));
	if (o == SCMP_CMP_MASKED_EQ && (b & ~a) != 0)
		/* Also catches value/valueTwo swapped: value is the mask. */
		return policy_fail(
		    c, EINVAL, path,
		    "valueTwo 0x%llx has bits outside the mask 0x%llx in value: the rule could never match",
		    (unsigned long long)b, (unsigned long long)a);
	if (o != SCMP_CMP_MASKED_EQ && b != 0)
		return policy_fail(c, EINVAL, p, "valueTwo is only used by SCMP_CMP_MASKED_EQ");
	*out = (struct scmp_arg_cmp){
		.arg = (unsigned)idx, .op = (enum scmp_compare)o, .datum_a = a, .datum_b = b
	};
	return 0;
}

bool policy_flag_known(const char *flag)
{
	return in_list(known_flags, ELEMENTSOF(known_flags), flag);
}
