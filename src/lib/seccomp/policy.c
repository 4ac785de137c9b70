/* seccomp/policy.c — compiles a parsed policy (policy_parse.c) to one BPF
 * program with libseccomp, and installs it.
 *
 * What it does: builds the libseccomp filters, exports them through a
 * memfd (libseccomp 2.5 has no in-memory export), joins them into one
 * program, and installs it with seccomp(2). What it does not do: parse
 * (policy_parse.c), cache (policy_cache.c), set no_new_privs (spawn).
 * Runs in the CLI/daemon; policy_bpf_install runs in the sandbox child
 * between clone and exec. Needs seccomp filter mode (Linux 3.5+), and
 * SECCOMP_RET_KILL_PROCESS (4.14+) for the bad-architecture action.
 *
 * Why two filters: libseccomp silently drops the conditional rules of a
 * syscall that also has an unconditional rule (tested with 2.5.4: "allow
 * ioctl" + "EPERM ioctl if cmd == TIOCSTI" compiles to "allow ioctl"), and
 * it cannot express "allow, except these values". So every rule with args
 * goes into a first filter whose default is a private marker, every rule
 * without args into a second one, and each marker return in the first is
 * rewritten into a jump to the start of the second. The result, in policy
 * terms: for a given syscall, a matching rule with args wins over a rule
 * without args, which wins over the default action.
 * Each of the two is built per architecture and merged, and the result is
 * checked against the policy (policy_verify.c) before it is returned. */
#include <linux/seccomp.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "seccomp/policy_internal.h"

/* The default action of the args filter means "no rule matched, go on":
 * a SECCOMP_RET_TRACE value no rule of the policy uses (libseccomp refuses
 * ERRNO data above 4094, and every other action carries no data). */
static uint32_t pick_marker(const struct policy_doc *d)
{
	for (uint32_t data = 0xffff;; data--) {
		bool used = false;
		for (size_t i = 0; i < d->n_rules && !used; i++)
			used = d->rules[i].action == SCMP_ACT_TRACE(data);
		if (!used)
			return SCMP_ACT_TRACE(data); /* found: rules < 65536 */
	}
}

/* An unconditional (no args) rule of one syscall, for conflict checks and
 * to drop args rules that repeat it. */
struct plain {
	int nr;
	uint32_t action;
	unsigned pos;
	size_t name;
};

static int plain_cmp(const void *a, const void *b)
{
	const struct plain *x = a, *y = b;
	return (x->nr > y->nr) - (x->nr < y->nr);
}

static const struct plain *plain_find(const struct plain *v, size_t n, int nr)
{
	struct plain key = { .nr = nr };
	if (n == 0)
		return NULL;
	return bsearch(&key, v, n, sizeof(*v), plain_cmp);
}

static void ctx_releasep(scmp_filter_ctx *c)
{
	if (*c)
		seccomp_release(*c);
}

static int where_fail(abox_error *err, int code, const struct policy_doc *d,
		      const struct policy_rule *r, size_t i, const char *what)
{
	if (r->legacy_name)
		return abox_error_set(err, code, "%s: syscalls[%u].name: %s '%s'", d->source,
				      r->pos, what, r->names[i]);
	return abox_error_set(err, code, "%s: syscalls[%u].names[%zu]: %s '%s'", d->source, r->pos,
			      i, what, r->names[i]);
}

/* One filter for one architecture. */
static int new_filter(const struct policy_doc *d, uint32_t def, uint32_t arch, bool optimize,
		      scmp_filter_ctx *out, abox_error *err)
{
	_cleanup_(ctx_releasep) scmp_filter_ctx ctx = seccomp_init(def);
	if (!ctx)
		return abox_error_set(err, EINVAL, "%s: libseccomp refused the default action",
				      d->source);
	int r = seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
	/* A call from an architecture the policy does not list (e.g. int 0x80
	 * from a 64-bit process when only x86_64 is listed) would otherwise
	 * reach a syscall table the rules never mention. */
	if (r >= 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/* Binary search over syscall numbers instead of a linear chain: the
	 * default policy has ~400 syscalls per architecture. */
	if (r >= 0 && optimize)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (r < 0)
		return abox_error_set(err, -r, "%s: set libseccomp attribute", d->source);
	if (arch != seccomp_arch_native()) {
		r = seccomp_arch_add(ctx, arch);
		if (r >= 0)
			r = seccomp_arch_remove(ctx, SCMP_ARCH_NATIVE);
		if (r < 0)
			return abox_error_set(err, -r, "%s: architecture 0x%x", d->source, arch);
	}
	*out = TAKE_PTR(ctx);
	return 0;
}

/* seccomp_export_bpf only writes to an fd. */
static int export_bpf(scmp_filter_ctx ctx, const char *source, struct sock_filter **insns,
		      size_t *len, abox_error *err)
{
	_cleanup_close_ int fd = memfd_create("abox-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return abox_error_set(err, errno, "%s: memfd_create", source);
	int r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return abox_error_set(err, -r, "%s: export BPF", source);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return abox_error_set(err, errno, "%s: fstat memfd", source);
	size_t n = (size_t)st.st_size;
	if (n == 0 || n % sizeof(struct sock_filter) != 0)
		return abox_error_set(err, EPROTO, "%s: libseccomp exported %zu bytes", source, n);
	_cleanup_free_ struct sock_filter *buf = malloc(n);
	if (!buf)
		return abox_error_set(err, ENOMEM, "%s: export BPF", source);
	ssize_t got;
	do
		got = pread(fd, buf, n, 0);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return abox_error_set(err, errno, "%s: read exported BPF", source);
	if ((size_t)got != n)
		return abox_error_set(err, EIO, "%s: short read of exported BPF", source);
	*insns = TAKE_PTR(buf);
	*len = n / sizeof(struct sock_filter);
	return 0;
}

static int collect_plain(const struct policy_doc *d, const struct policy_env *env,
			 struct plain **out, size_t *n_out, abox_error *err)
{
	size_t n = 0;
	for (size_t i = 0; i < d->n_rules; i++)
		if (d->rules[i].n_args == 0)
			n += d->rules[i].n_names;
	_cleanup_free_ struct plain *v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return abox_error_set(err, ENOMEM, "%s: compile", d->source);
	n = 0;
	for (size_t i = 0; i < d->n_rules; i++) {
		const struct policy_rule *rule = &d->rules[i];
		if (rule->n_args != 0 || !policy_rule_applies(rule, env))
			continue;
		for (size_t j = 0; j < rule->n_names; j++)
			if (rule->nrs[j] != __NR_SCMP_ERROR)
				v[n++] =
				    (struct plain){ rule->nrs[j], rule->action, (unsigned)i, j };
	}
	qsort(v, n, sizeof(*v), plain_cmp);
	/* Two rules without args that disagree: libseccomp keeps the first
	 * silently, so the policy would not do what one of them says. */
	for (size_t p = 1; p < n; p++)
		if (v[p].nr == v[p - 1].nr && v[p].action != v[p - 1].action) {
			const struct plain *a = &v[p - 1], *b = &v[p];
			if (a->pos > b->pos || (a->pos == b->pos && a->name > b->name)) {
				const struct plain *t = a;
				a = b;
				b = t;
			}
			const struct policy_rule *ra = &d->rules[a->pos];
			return abox_error_setx(
			    err, EINVAL,
			    "%s: syscalls[%u]: '%s' also appears in syscalls[%u] with a different action and no args: keep one",
			    d->source, b->pos, ra->names[a->name], a->pos);
		}
	*out = TAKE_PTR(v);
	*n_out = n;
	return 0;
}

/* Whether a rule on `name` belongs in the filter of `arch`. A name that is
 * only a libseccomp pseudo-syscall there (socketcall on x86_64) is left
 * out: besides being useless, such a rule made libseccomp 2.5.4 drop the
 * syscall-number load of the x86_64/x32 branch (see policy_verify.c).
 * libseccomp numbers the calls 32-bit ABIs reach through the socketcall
 * (-101..-120) and ipc (-201..-224) multiplexers specially and rewrites
 * their rules for the multiplexer, so they stay where it exists. */
static bool on_arch(uint32_t arch, const char *name)
{
	int nr = seccomp_syscall_resolve_name_arch(arch, name);
	if (nr >= 0)
		return true;
	if (nr <= -101 && nr >= -199)
		return seccomp_syscall_resolve_name_arch(arch, "socketcall") >= 0;
	if (nr <= -201 && nr >= -299)
		return seccomp_syscall_resolve_name_arch(arch, "ipc") >= 0;
	return false;
}

/* Whether args rule `rule`'s j-th syscall goes into the args filter: not
 * when a rule without args already gives it the same action. */
static bool cond_needed(const struct policy_rule *rule, size_t j, const struct plain *plain,
			size_t n_plain)
{
	if (rule->nrs[j] == __NR_SCMP_ERROR)
		return false;
	const struct plain *u = plain_find(plain, n_plain, rule->nrs[j]);
	return !u || u->action != rule->action;
}

struct build {
	const struct policy_doc *d;
	const struct policy_env *env;
	const struct plain *plain;
	size_t n_plain;
};

static int add_plain(const struct build *bd, uint32_t arch, scmp_filter_ctx ctx, abox_error *err)
{
	const struct policy_doc *d = bd->d;
	for (size_t p = 0; p < bd->n_plain; p++) {
		const struct plain *e = &bd->plain[p];
		const struct policy_rule *rule = &d->rules[e->pos];
		if (p > 0 && e->nr == bd->plain[p - 1].nr)
			continue;
		/* libseccomp refuses a rule equal to the default (EACCES);
		 * it would change nothing. */
		if (e->action == d->default_action || !on_arch(arch, rule->names[e->name]))
			continue;
		int r = seccomp_rule_add(ctx, e->action, e->nr, 0);
		if (r < 0)
			return where_fail(err, -r, d, rule, e->name,
					  "libseccomp refused the rule for");
	}
	return 0;
}

static int add_cond(const struct build *bd, uint32_t arch, scmp_filter_ctx ctx, abox_error *err)
{
	const struct policy_doc *d = bd->d;
	for (size_t i = 0; i < d->n_rules; i++) {
		const struct policy_rule *rule = &d->rules[i];
		if (rule->n_args == 0 || !policy_rule_applies(rule, bd->env))
			continue;
		for (size_t j = 0; j < rule->n_names; j++) {
			if (!cond_needed(rule, j, bd->plain, bd->n_plain) ||
			    !on_arch(arch, rule->names[j]))
				continue;
			int r = seccomp_rule_add_array(ctx, rule->action, rule->nrs[j],
						       rule->n_args, rule->args);
			if (r < 0)
				return where_fail(err, -r, d, rule, j,
						  "libseccomp refused the rule for");
		}
	}
	return 0;
}

static bool any_cond(const struct build *bd)
{
	for (size_t i = 0; i < bd->d->n_rules; i++) {
		const struct policy_rule *rule = &bd->d->rules[i];
		if (rule->n_args == 0 || !policy_rule_applies(rule, bd->env))
			continue;
		for (size_t j = 0; j < rule->n_names; j++)
			if (cond_needed(rule, j, bd->plain, bd->n_plain))
				return true;
	}
	return false;
}

/* Builds one filter per architecture and merges them: each architecture's
 * rules then only name syscalls that exist there (see on_arch). */
static int build_filter(const struct build *bd, bool cond, uint32_t def, const uint32_t *arches,
			unsigned n_arches, scmp_filter_ctx *out, abox_error *err)
{
	_cleanup_(ctx_releasep) scmp_filter_ctx all = NULL;
	for (unsigned a = 0; a < n_arches; a++) {
		_cleanup_(ctx_releasep) scmp_filter_ctx one = NULL;
		int r = new_filter(bd->d, def, arches[a], !cond, &one, err);
		if (r < 0)
			return r;
		r = cond ? add_cond(bd, arches[a], one, err) : add_plain(bd, arches[a], one, err);
		if (r < 0)
			return r;
		if (!all) {
			all = TAKE_PTR(one);
			continue;
		}
		r = seccomp_merge(all, one);
		if (r < 0)
			return abox_error_set(err, -r, "%s: merge architecture 0x%x", bd->d->source,
					      arches[a]);
		one = NULL; /* merged into `all`, which now owns it */
	}
	*out = TAKE_PTR(all);
	return 0;
}

/* The no-args part of an x86_64-only policy as ranges (policy_ranges.c)
 * in place of libseccomp's program b, when the two agree; b stays
 * otherwise. */
static void try_ranges(const struct build *bd, struct sock_filter **b, size_t *nb)
{
	size_t n = 0;
	_cleanup_free_ int *nrs = calloc(bd->n_plain ? bd->n_plain : 1, sizeof(int));
	_cleanup_free_ uint32_t *acts = calloc(bd->n_plain ? bd->n_plain : 1, sizeof(uint32_t));
	if (!nrs || !acts)
		return;
	for (size_t p = 0; p < bd->n_plain; p++) {
		const struct plain *e = &bd->plain[p];
		/* the same syscalls add_plain gives libseccomp (collect_plain
		 * sorted them and refused disagreeing twins) */
		if (e->nr < 0 || (n > 0 && nrs[n - 1] == e->nr) ||
		    !on_arch(SCMP_ARCH_X86_64, bd->d->rules[e->pos].names[e->name]))
			continue;
		nrs[n] = e->nr;
		acts[n++] = e->action;
	}
	struct policy_bpf ours = { 0 };
	if (policy_ranges_build(bd->d->default_action, nrs, acts, n, &ours) < 0)
		return;
	struct policy_bpf theirs = { .insns = *b, .len = (unsigned short)*nb };
	if (ours.len < *nb && policy_ranges_agree(&ours, &theirs)) {
		free(*b);
		*b = ours.insns;
		*nb = ours.len;
		return;
	}
	policy_bpf_free(&ours);
}

static int compile_doc(const struct policy_doc *d, const struct policy_env *env_in,
		       struct policy_bpf *out, abox_error *err)
{
	struct policy_env env;
	policy_env_resolve(env_in, &env);

	/* The native architecture always, as libseccomp and runc do. */
	uint32_t arches[POLICY_MAX_ARCHES + 1];
	unsigned n_arches = 0;
	arches[n_arches++] = seccomp_arch_native();
	for (unsigned i = 0; i < d->n_arches; i++)
		if (d->arches[i] != arches[0])
			arches[n_arches++] = d->arches[i];

	_cleanup_free_ struct plain *plain = NULL;
	size_t n_plain = 0;
	int r = collect_plain(d, &env, &plain, &n_plain, err);
	if (r < 0)
		return r;
	struct build bd = { d, &env, plain, n_plain };

	_cleanup_(ctx_releasep) scmp_filter_ctx main = NULL, cond = NULL;
	uint32_t marker = pick_marker(d);
	if ((r = build_filter(&bd, false, d->default_action, arches, n_arches, &main, err)) < 0)
		return r;
	if (any_cond(&bd) &&
	    (r = build_filter(&bd, true, marker, arches, n_arches, &cond, err)) < 0)
		return r;

	_cleanup_free_ struct sock_filter *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	if (cond && (r = export_bpf(cond, d->source, &a, &na, err)) < 0)
		return r;
	if ((r = export_bpf(main, d->source, &b, &nb, err)) < 0)
		return r;
	if (n_arches == 1 && arches[0] == SCMP_ARCH_X86_64)
		try_ranges(&bd, &b, &nb);
	if (na + nb > BPF_MAXINSNS)
		return abox_error_setx(
		    err, E2BIG,
		    "%s: the compiled program has %zu instructions, above the kernel's limit of %u",
		    d->source, na + nb, (unsigned)BPF_MAXINSNS);

	struct policy_bpf prog = { .insns = malloc((na + nb) * sizeof(*prog.insns)),
				   .len = (unsigned short)(na + nb) };
	if (!prog.insns)
		return abox_error_set(err, ENOMEM, "%s: compile", d->source);
	for (size_t i = 0; i < na; i++) {
		prog.insns[i] = a[i];
		if (a[i].code == (BPF_RET | BPF_K) && a[i].k == marker)
			prog.insns[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA,
								     (uint32_t)(na - i - 1), 0, 0);
	}
	if (nb)
		memcpy(prog.insns + na, b, nb * sizeof(*prog.insns));
	if ((r = policy_verify(d, &env, arches, n_arches, &prog, err)) < 0) {
		policy_bpf_free(&prog);
		return r;
	}
	*out = prog;
	return 0;
}

int policy_compile(const char *json, size_t len, const char *source, const struct policy_env *env,
		   struct policy_bpf *out, abox_error *err)
{
	struct policy_doc d;
	int r = policy_parse(json, len, source, &d, err);
	if (r < 0)
		return r;
	r = compile_doc(&d, env, out, err);
	policy_doc_free(&d);
	return r;
}

int policy_check(const char *json, size_t len, const char *source, abox_error *err)
{
	struct policy_doc d;
	int r = policy_parse(json, len, source, &d, err);
	if (r < 0)
		return r;
	policy_doc_free(&d);
	return 0;
}

void policy_bpf_free(struct policy_bpf *b)
{
	if (!b)
		return;
	free(b->insns);
	b->insns = NULL;
	b->len = 0;
}

/* Between clone and exec: one raw system call, nothing else (no libseccomp,
 * no allocation), so it is async-signal-safe. */
int policy_bpf_install(const struct policy_bpf *b)
{
	if (!b || !b->insns || b->len == 0)
		return -EINVAL;
	struct sock_fprog prog = { .len = b->len, .filter = b->insns };
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return -errno;
	return 0;
}
