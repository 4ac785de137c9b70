/* seccomp/policy_verify.c — runs a compiled program on synthetic system
 * calls and checks that it returns what the policy says.
 *
 * Why: libseccomp 2.5.4 can emit a wrong program without any error. Found
 * while writing this module: with x86_64 + x32 and a rule on a syscall
 * x86_64 does not have (socketcall), the x86_64 branch lost its load of the
 * syscall number, so every args rule (CLONE_NEW*, TIOCSTI, AF_ALG) compared
 * the architecture word instead and never matched. policy.c now works
 * around that case; this check makes sure no other case of that kind ships
 * a filter that silently allows what the policy denies.
 * What it checks, per architecture: every rule's syscalls with arguments
 * that satisfy the rule (all-zero arguments for a rule without args), a
 * syscall number no rule names (default action) and a foreign
 * architecture (kill). Cases where overlapping rules disagree are skipped:
 * the policy format does not define their outcome.
 * Runs in the CLI/daemon, after each compile (not on a cache hit). */
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <string.h>

#include "seccomp/policy_internal.h"

int policy_bpf_run(const struct policy_bpf *b, const struct seccomp_data *d, uint32_t *ret)
{
	uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = { 0 };
	for (size_t pc = 0; pc < b->len; pc++) {
		const struct sock_filter *f = &b->insns[pc];
		uint32_t k = f->k;
		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (k % 4 != 0 || k > sizeof(*d) - 4)
				return -EINVAL;
			memcpy(&A, (const char *)d + k, 4);
			break;
		case BPF_LD | BPF_IMM: A = k; break;
		case BPF_LDX | BPF_IMM: X = k; break;
		case BPF_LD | BPF_MEM:
		case BPF_LDX | BPF_MEM:
		case BPF_ST:
		case BPF_STX:
			if (k >= BPF_MEMWORDS)
				return -EINVAL;
			if (f->code == (BPF_LD | BPF_MEM))
				A = M[k];
			else if (f->code == (BPF_LDX | BPF_MEM))
				X = M[k];
			else
				M[k] = f->code == BPF_ST ? A : X;
			break;
		case BPF_ALU | BPF_AND | BPF_K: A &= k; break;
		case BPF_ALU | BPF_OR | BPF_K: A |= k; break;
		case BPF_ALU | BPF_ADD | BPF_K: A += k; break;
		case BPF_ALU | BPF_SUB | BPF_K: A -= k; break;
		case BPF_ALU | BPF_AND | BPF_X: A &= X; break;
		case BPF_MISC | BPF_TAX: X = A; break;
		case BPF_MISC | BPF_TXA: A = X; break;
		case BPF_JMP | BPF_JA: pc += k; break;
		case BPF_JMP | BPF_JEQ | BPF_K: pc += A == k ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGT | BPF_K: pc += A > k ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGE | BPF_K: pc += A >= k ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JSET | BPF_K: pc += (A & k) ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JEQ | BPF_X: pc += A == X ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGT | BPF_X: pc += A > X ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGE | BPF_X: pc += A >= X ? f->jt : f->jf; break;
		case BPF_RET | BPF_K: *ret = k; return 0;
		case BPF_RET | BPF_A: *ret = A; return 0;
		default: return -EINVAL;
		}
	}
	return -EINVAL; /* ran off the end */
}

static bool cmp_match(const struct scmp_arg_cmp *c, uint64_t v)
{
	switch (c->op) {
	case SCMP_CMP_NE: return v != c->datum_a;
	case SCMP_CMP_LT: return v < c->datum_a;
	case SCMP_CMP_LE: return v <= c->datum_a;
	case SCMP_CMP_EQ: return v == c->datum_a;
	case SCMP_CMP_GE: return v >= c->datum_a;
	case SCMP_CMP_GT: return v > c->datum_a;
	case SCMP_CMP_MASKED_EQ: return (v & c->datum_a) == c->datum_b;
	default: return false;
	}
}

/* An argument value that satisfies c, or false when there is none. */
static bool satisfy(const struct scmp_arg_cmp *c, __u64 *v)
{
	uint64_t a = c->datum_a;
	switch (c->op) {
	case SCMP_CMP_EQ:
	case SCMP_CMP_GE:
	case SCMP_CMP_LE: *v = a; return true;
	case SCMP_CMP_NE: *v = a + 1; return true;
	case SCMP_CMP_GT: *v = a + 1; return a != UINT64_MAX;
	case SCMP_CMP_LT: *v = a - 1; return a != 0;
	case SCMP_CMP_MASKED_EQ: *v = c->datum_b; return true;
	default: return false;
	}
}

static bool rule_matches(const struct policy_rule *r, const __u64 args[6])
{
	for (unsigned i = 0; i < r->n_args; i++)
		if (!cmp_match(&r->args[i], args[r->args[i].arg]))
			return false;
	return true;
}

/* What the policy says for syscall nr with these args: the args rules that
 * match win, else the rule without args, else the default. False when
 * matching rules disagree. */
static bool expected(const struct policy_doc *d, const struct policy_env *env, int nr,
		     const __u64 args[6], uint32_t *out)
{
	bool have_cond = false, have_plain = false;
	uint32_t cond = 0, plain = 0;
	for (size_t i = 0; i < d->n_rules; i++) {
		const struct policy_rule *r = &d->rules[i];
		if (!policy_rule_applies(r, env))
			continue;
		for (size_t j = 0; j < r->n_names; j++) {
			if (r->nrs[j] != nr)
				continue;
			if (r->n_args == 0) {
				have_plain = true;
				plain = r->action;
			} else if (rule_matches(r, args)) {
				if (have_cond && cond != r->action)
					return false;
				have_cond = true;
				cond = r->action;
			}
		}
	}
	*out = have_cond ? cond : have_plain ? plain : d->default_action;
	return true;
}

static bool is_32bit(uint32_t arch)
{
	return !(arch & __AUDIT_ARCH_64BIT) || arch == SCMP_ARCH_X32;
}

static int check_one(const struct policy_doc *d, const struct policy_env *env, uint32_t arch,
		     const struct policy_bpf *b, const struct policy_rule *r, size_t j,
		     abox_error *err)
{
	int nr = seccomp_syscall_resolve_name_arch(arch, r->names[j]);
	if (nr < 0)
		return 0; /* not a syscall of this architecture */
	struct seccomp_data sd = { .nr = nr,
				   .arch = arch == SCMP_ARCH_X32 ? AUDIT_ARCH_X86_64 : arch };
	for (unsigned i = 0; i < r->n_args; i++) {
		const struct scmp_arg_cmp *c = &r->args[i];
		if (!satisfy(c, &sd.args[c->arg]))
			return 0;
		/* 32-bit ABIs pass 32-bit arguments: a 64-bit value there
		 * has no single meaning to check against. */
		if (is_32bit(arch) && (c->datum_a > UINT32_MAX || c->datum_b > UINT32_MAX ||
				       sd.args[c->arg] > UINT32_MAX))
			return 0;
	}
	uint32_t want, got;
	if (!expected(d, env, r->nrs[j], sd.args, &want))
		return 0;
	if (policy_bpf_run(b, &sd, &got) < 0)
		return abox_error_setx(err, EPROTO, "%s: compiled program is not valid BPF",
				       d->source);
	if (got == want)
		return 0;
	return abox_error_setx(
	    err, EPROTO,
	    "%s: syscalls[%u]: libseccomp produced a wrong program: '%s' on architecture 0x%x returns 0x%x instead of 0x%x",
	    d->source, r->pos, r->names[j], arch, got, want);
}

int policy_verify(const struct policy_doc *d, const struct policy_env *env, const uint32_t *arches,
		  unsigned n_arches, const struct policy_bpf *b, abox_error *err)
{
	uint32_t got;
	for (unsigned a = 0; a < n_arches; a++) {
		uint32_t arch = arches[a];
		for (size_t i = 0; i < d->n_rules; i++) {
			const struct policy_rule *r = &d->rules[i];
			if (!policy_rule_applies(r, env))
				continue;
			for (size_t j = 0; j < r->n_names; j++) {
				int k = check_one(d, env, arch, b, r, j, err);
				if (k < 0)
					return k;
			}
		}
		/* A number far above every syscall table gets the default. */
		bool x32 = arch == SCMP_ARCH_X32;
		struct seccomp_data sd = { .nr = (int)(0x3ff0u | (x32 ? 0x40000000u : 0)),
					   .arch = x32 ? AUDIT_ARCH_X86_64 : arch };
		if (policy_bpf_run(b, &sd, &got) < 0 || got != d->default_action)
			return abox_error_setx(
			    err, EPROTO,
			    "%s: libseccomp produced a wrong program: an unknown syscall on architecture 0x%x does not get the default action",
			    d->source, arch);
	}
	struct seccomp_data foreign = { .nr = 0, .arch = 0 };
	if (policy_bpf_run(b, &foreign, &got) < 0 || got != SCMP_ACT_KILL_PROCESS)
		return abox_error_setx(
		    err, EPROTO,
		    "%s: libseccomp produced a wrong program: a foreign architecture is not killed",
		    d->source);
	return 0;
}
